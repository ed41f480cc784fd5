/**
 * A route declared once: method, path, who may call it, zod schemas for its parameters, query,
 * headers and body, and a schema for each response. From that one declaration come the request's
 * validation (`src/api/express.ts`), the handler's argument and return types (inferred here), and
 * the OpenAPI document (`src/api/openapi.ts`).
 */
import { z } from "zod";
import { BaseError } from "../errors";
import { ID_PATTERN } from "../service/secrets";
import { textProblem } from "./well-formed";

/** Who may call a route. */
export type Auth = "none" | "owner" | "agent" | "operator";

/**
 * Whether browsers on other origins may read a route's answers: `public` sends CORS headers to any
 * origin (no credentials; GET, HEAD and OPTIONS, preflight answered), so a dApp can read scores;
 * `none` sends none. Unless declared, a `GET` that takes no credential is public and every other
 * route is not: owner, agent and operator routes never are. The API's routes only: pages send none.
 */
export type Cors = "public" | "none";

export type Method = "get" | "post" | "put" | "patch" | "delete";

/**
 * One response of a route: JSON matching `schema`, text of `contentType` (HTML pages, badges), or
 * nothing (neither). `example` is shown in the OpenAPI document (typed by `ExamplesOf`).
 */
export type ResponseSpec = { description: string; schema?: z.ZodType; contentType?: string; example?: unknown };

export type Responses = Record<number, ResponseSpec>;

/**
 * JSON text already known to be a `T`, written into the response as it is: a stored score's result
 * is kept as the database's JSON text, so serving it needs no parse and no second stringify.
 */
export class JsonText<T> {
  declare readonly value: T;
  constructor(readonly text: string) {}
}

/** Extra response headers; an undefined value is not sent (union members of one handler's replies name each other's headers so). */
type ReplyHeaders = Readonly<Record<string, string | undefined>>;

/** What a handler may answer with `status` `S` declared as `R`. */
type ReplyFor<S extends number, R> = R extends { schema: infer Z extends z.ZodType }
  ? { status: S; headers?: ReplyHeaders; body: z.input<Z> } | { status: S; headers?: ReplyHeaders; json: JsonText<z.input<Z>> }
  : R extends { contentType: string }
    ? { status: S; headers?: ReplyHeaders; text: string }
    : { status: S; headers?: ReplyHeaders; body?: unknown };

/** The replies a route's responses allow: one member per declared status. */
export type ReplyOf<RS extends Responses> = { [S in keyof RS & number]: ReplyFor<S, RS[S]> }[keyof RS & number];

/** Any route's reply, as the HTTP layer writes it. */
export type Reply =
  | { status: number; headers?: ReplyHeaders; body?: unknown }
  | { status: number; headers?: ReplyHeaders; json: JsonText<unknown> }
  | { status: number; headers?: ReplyHeaders; text: string };

/** A request part's value as its schema outputs it, `undefined` when the route declares none. */
export type PartOf<S> = S extends z.ZodType ? z.output<S> : undefined;

/** What authentication adds to a handler's context: an operator's handler is told which operator calls (V7 "who"). */
export type AuthOf<A extends Auth> = A extends "owner"
  ? { ownerId: string; credential: string }
  : A extends "agent"
    ? {
        credential: string;
        /**
         * Says the agent's key has been checked and holds: from then on the request is charged to the
         * agent's budget, not to its client address (429 `rate_limited` when the agent's is spent).
         * An agent route's handler calls it before it acts; until then nothing a stranger sends costs the agent.
         */
        keyVerified: () => Promise<void>;
      }
    : A extends "operator"
      ? { operatorName: string }
      : Record<never, never>;

export type RouteContext<A extends Auth, P, Q, H, B> = {
  params: PartOf<P>;
  query: PartOf<Q>;
  headers: PartOf<H>;
  body: PartOf<B>;
} & AuthOf<A>;

/** Each response's `example` as what its handler may send: the input of the response's schema. */
export type ExamplesOf<RS extends Responses> = {
  [S in keyof RS]: RS[S] extends { schema: infer Z extends z.ZodType } ? { example?: z.input<Z> } : { example?: never };
};

/** A route as declared; `defineRoute` infers every type parameter from it. */
export type RouteDeclaration<A extends Auth, P, Q, H, B, RS extends Responses> = {
  method: Method;
  /** Express path, e.g. `/v1/agents/:id/checkins`. */
  path: string;
  /** The operation's name in the OpenAPI document and in clients generated from it, e.g. `checkIn`: unique, camelCase. */
  operationId: string;
  summary: string;
  tag: string;
  auth: A;
  /** Default: `public` for a `GET` with auth `none`, else `none` (see `Cors`). */
  cors?: Cors;
  params?: P;
  query?: Q;
  headers?: H;
  body?: B;
  /** A request body as a client sends it, for the OpenAPI document. */
  bodyExample?: B extends z.ZodType ? z.input<B> : never;
  responses: RS & ExamplesOf<RS>;
};

/** What serves a declared route's requests. */
export type Handler<A extends Auth, P, Q, H, B, RS extends Responses> = (context: RouteContext<A, P, Q, H, B>) => Promise<ReplyOf<RS>>;

/** A request's parts as the HTTP layer read them, authentication done. */
export type RequestParts = {
  params: unknown;
  query: unknown;
  headers: unknown;
  body: unknown;
  ownerId: string;
  operatorName: string;
  credential: string;
  keyVerified: () => Promise<void>;
};

/** A declared route with its types erased, for the HTTP layer and the OpenAPI document. */
export type Route = {
  readonly method: Method;
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly tag: string;
  readonly auth: Auth;
  readonly cors: Cors;
  readonly params?: z.ZodObject;
  readonly query?: z.ZodObject;
  readonly headers?: z.ZodObject;
  readonly body?: z.ZodType;
  readonly bodyExample?: unknown;
  readonly responses: Responses;
  /** Validates the parts (a 400 naming the first bad field) and runs the handler. */
  respond(parts: RequestParts): Promise<Reply>;
};

/** A zod failure as one readable line naming the field, e.g. `body.points: expected a number`. */
export function describeZodError(where: string, error: z.ZodError): string {
  const issue = error.issues[0];
  const field = [where, ...issue.path.map(String)].join(".");
  return `${field}: ${issue.message}`;
}

/** Validation failure of a request part: 400 `invalid_request`. */
export class RequestValidationError extends BaseError {
  constructor(message: string) {
    super("invalid_request", message, { status: 400 });
  }
}

/** Parses `value` with `schema`, or throws a 400 naming the field. */
export function parseWith<T extends z.ZodType>(schema: T, value: unknown, where: string): z.output<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new RequestValidationError(describeZodError(where, parsed.error));
  return parsed.data;
}

/**
 * Parses a declared part, after checking every string in it is storable text (`well-formed.ts`):
 * here, once, so that no route can forget it.
 */
function parsePart<S>(schema: S | undefined, value: unknown, where: string): PartOf<S>;
function parsePart(schema: z.ZodType | undefined, value: unknown, where: string): unknown {
  if (schema === undefined) return undefined;
  const problem = textProblem(value, where);
  if (problem !== null) throw new RequestValidationError(problem);
  return parseWith(schema, value, where);
}

/** The headers a route declares, the only ones it reads (and so the only ones checked). */
function declaredHeaders(schema: z.ZodObject | undefined): (headers: unknown) => unknown {
  if (schema === undefined) return () => undefined;
  const names = Object.keys(schema.shape);
  return (headers) => {
    const picked: Record<string, unknown> = {};
    if (typeof headers !== "object" || headers === null) return picked;
    for (const name of names) if (Reflect.has(headers, name)) picked[name] = Reflect.get(headers, name);
    return picked;
  };
}

function authContext<A extends Auth>(auth: A, parts: RequestParts): AuthOf<A>;
function authContext(auth: Auth, { ownerId, operatorName, credential, keyVerified }: RequestParts): object {
  if (auth === "owner") return { ownerId, credential };
  if (auth === "agent") return { credential, keyVerified };
  if (auth === "operator") return { operatorName };
  return {};
}

/**
 * Declares a route: its schemas give the handler's context and reply types, its validation and its
 * part of the OpenAPI document. The handler is given in a second step, so that its replies are
 * checked against the declaration once every type of it is known (status literals included).
 * @example
 * defineRoute({
 *   method: "get", path: "/v1/agents/:id/score", operationId: "getLatestScore", tag: "scores", auth: "none", summary: "The latest score.",
 *   params: z.object({ id: idSchema }),
 *   responses: { 200: { description: "ok", schema: scoreResponse } },
 * }).handle(async ({ params }) => ({ status: 200, body: await scoreOf(params.id) }));
 */
export function defineRoute<
  const A extends Auth,
  P extends z.ZodObject | undefined = undefined,
  Q extends z.ZodObject | undefined = undefined,
  H extends z.ZodObject | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
  const RS extends Responses = Responses,
>(declaration: RouteDeclaration<A, P, Q, H, B, RS>): { handle(handler: Handler<A, P, Q, H, B, RS>): Route } {
  const headersOf = declaredHeaders(declaration.headers);
  return {
    handle: (handler) => ({
      ...declaration,
      // A credential-taking route is never readable cross-origin, whatever it declares.
      cors: declaration.auth === "none" ? (declaration.cors ?? (declaration.method === "get" ? "public" : "none")) : "none",
      respond: async (parts) =>
        handler({
          params: parsePart<P>(declaration.params, parts.params, "path"),
          query: parsePart<Q>(declaration.query, parts.query, "query"),
          headers: parsePart<H>(declaration.headers, headersOf(parts.headers), "header"),
          // A route that reads a body and was sent none validates it as `{}`.
          body: parsePart<B>(declaration.body, parts.body ?? {}, "body"),
          ...authContext<A>(declaration.auth, parts),
        }),
    }),
  };
}

/** The JSON error shape, for the OpenAPI document. */
export const errorSchema = z.object({ error: z.object({ code: z.string(), message: z.string() }) });

/** A documented error response. */
export const errorResponse = (description: string) => ({ description, schema: errorSchema });

/** An agent id, owner id or other server id in a path. */
export const idSchema = z.string().regex(ID_PATTERN, "expected 1 to 64 letters, digits, _ or -");
