/**
 * Checks that an answer is what its route declares: a declared status (the route's own or one the
 * HTTP layer answers for every route, `answeredResponses`), and a body its schema accepts with no
 * field it does not declare. The test suite turns it on for every server it starts; production and
 * benches leave it off, as it parses every reply again.
 */
import { isDeepStrictEqual } from "node:util";
import { BaseError } from "../errors";
import { answeredResponses } from "./openapi";
import { describeZodError, type Reply, type Route } from "./route";

/** An answer its route does not declare: a 500 in the server, since the declaration or the handler is wrong. */
export class ReplyMismatchError extends BaseError {
  constructor(message: string, cause?: unknown) {
    super("reply_mismatch", message, { status: 500, cause });
  }
}

/** The name a process warning of a mismatch has, so the test suite can collect them. */
export const REPLY_MISMATCH_WARNING = "ReplyMismatch";

/** The path of the first field of `sent` that `kept` (what the schema kept of it) lacks, or null. */
function undeclaredField(sent: unknown, kept: unknown, path: string): string | null {
  if (Array.isArray(sent) && Array.isArray(kept)) {
    for (let i = 0; i < sent.length; i++) {
      const found = undeclaredField(sent[i], kept[i], `${path}.${i}`);
      if (found) return found;
    }
    return null;
  }
  if (typeof sent !== "object" || sent === null || typeof kept !== "object" || kept === null) return null;
  for (const [key, value] of Object.entries(sent)) {
    if (!(key in kept)) return `${path}.${key}`;
    const found = undeclaredField(value, Object.getOwnPropertyDescriptor(kept, key)?.value, `${path}.${key}`);
    if (found) return found;
  }
  return null;
}

/** What is wrong with `reply` as an answer of `route`, or null when it is declared. */
function replyProblem(route: Route, reply: Reply): string | null {
  const declared = answeredResponses(route)[reply.status];
  if (!declared) return `status ${reply.status} is not declared`;
  if (declared.contentType) return "text" in reply ? null : `declares ${declared.contentType} text, the handler sent JSON`;
  if (!declared.schema)
    return "text" in reply || ("body" in reply && reply.body !== undefined) ? "declares no body, the handler sent one" : null;
  if ("text" in reply) return "declares a JSON body, the handler sent text";
  if (!("json" in reply) && reply.body === undefined) return "declares a JSON body, the handler sent none";
  // What the client reads: the JSON as sent (undefined fields left out).
  const sent: unknown = JSON.parse("json" in reply ? reply.json.text : JSON.stringify(reply.body));
  const parsed = declared.schema.safeParse(sent);
  if (!parsed.success) return describeZodError("body", parsed.error);
  if (isDeepStrictEqual(parsed.data, sent)) return null;
  const field = undeclaredField(sent, parsed.data, "body");
  return field ? `${field}: not declared` : "the body differs from what its schema makes of it";
}

/** Fails loudly: a process warning (printed, and collected by the test suite) and the error the server answers with. */
function mismatch(route: Route, what: string, cause?: unknown): ReplyMismatchError {
  const message = `${route.method.toUpperCase()} ${route.path}: ${what}`;
  process.emitWarning(message, REPLY_MISMATCH_WARNING);
  return new ReplyMismatchError(`the answer does not match the declaration: ${message}`, cause);
}

/** Throws a `ReplyMismatchError` unless `reply` is a declared answer of `route`. */
export function checkReply(route: Route, reply: Reply): void {
  const problem = replyProblem(route, reply);
  if (problem) throw mismatch(route, problem);
}

/**
 * Throws a `ReplyMismatchError` when an agent route answers a success without its handler having
 * said the key held (`keyVerified`): the agent would not have been charged for it.
 */
export function checkKeyVerified(route: Route, reply: Reply, verified: boolean): void {
  if (route.auth === "agent" && reply.status < 300 && !verified)
    throw mismatch(route, `answered ${reply.status} without calling keyVerified()`);
}

/**
 * The error `route` answers for `error` when checked: the error itself when its status is declared
 * (or it is an internal error or a mismatch already, a 500 anyway), else a `ReplyMismatchError` naming the status.
 */
export function checkedError(route: Route, error: unknown): unknown {
  if (!(error instanceof BaseError) || error instanceof ReplyMismatchError || answeredResponses(route)[error.status]) return error;
  return mismatch(route, `status ${error.status} (${error.code}) is not declared`, error);
}
