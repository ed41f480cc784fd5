/**
 * The owner's console (issue #29): server-rendered pages under /console and the forms they post, declared like the
 * API's routes. Each form calls the service the JSON API calls for the same change (claims, keys, proofs, publishing,
 * webhooks), so no rule is written twice; what a page shows is rendered by src/web/console. A refusal is said in the
 * page, in words, over the form that was sent (never a JSON error), and a read-only session changes nothing.
 */
import { z } from "zod";
import { BaseError } from "../errors";
import type { Accounts } from "../service/accounts";
import type { Erc8004Publishing } from "../service/erc8004-publishing";
import { ForbiddenError } from "../service/errors";
import type { Identity } from "../service/identity";
import type { ProofChecks } from "../service/proof-checks";
import { OFFERED_PROOF_KINDS, proofKindModule } from "../service/proofs/kinds";
import { SUBSCRIBABLE_EVENT_TYPES } from "../service/events/kinds";
import type { Webhooks } from "../service/webhooks/webhooks";
import { describeZodError, idSchema, parseWith, RequestValidationError, type PartOf } from "./route";
import { textProblem } from "./well-formed";

/** What the console's pages know of the signed-in session (the sign-in layer gives it to each request). */
export type ConsoleViewer = { ownerId: string; scope: "full" | "read"; csrfToken: string };

/** A message at the top of a page: a refusal in words a person acts on, or what was just done. */
export type Notice = { kind: "error" | "done"; text: string };

/** The statuses a console page is answered with. */
export type ConsoleStatus = 200 | 201 | 400 | 403 | 404 | 409 | 422 | 503;

/** A rendered console page: its status and its HTML (the console's layer sets its headers). */
export type RenderedPage = { status: ConsoleStatus; text: string };

/** A change done, answered with the page that shows it (POST, then GET). */
export type SeeOther = { status: 303; location: string };

/** A form's fields as the browser sends them: text, or a list for a repeated name; what they mean is the change's schema. */
export type FormBody = Readonly<Record<string, string | string[]>>;

/** A page or form of the console: its method, its path (under /console) and what it answers a signed-in viewer. */
export type ConsoleRoute = {
  readonly method: "get" | "post";
  readonly path: string;
  readonly summary: string;
  respond(viewer: ConsoleViewer, request: { params: unknown; query: unknown; body: unknown }): Promise<RenderedPage | SeeOther>;
};

/** How a page is shown: its status (default 200) and its message. */
export type Shown = { status?: ConsoleStatus; notice?: Notice };

/** What renders the console's pages (src/web/console), reading what they show from the services. */
export type ManagePages = {
  /**
   * The owner's agents, a page at a time, and the form that creates one; `unclaimed` names an agent the owner just
   * unclaimed, said at the top when it is so.
   */
  agents(viewer: ConsoleViewer, query: { cursor?: string; unclaimed?: string }, shown?: Shown): Promise<RenderedPage>;
  /** One of the owner's agents: its facts, its key's rotation, its proofs and publishing, and the way to unclaim it. */
  agent(viewer: ConsoleViewer, agentId: string, shown?: Shown): Promise<RenderedPage>;
  /** What unclaiming one of the owner's agents does, and the form that does it, with its box to tick (issue #29). */
  unclaim(viewer: ConsoleViewer, agentId: string, shown?: Shown): Promise<RenderedPage>;
  /** An agent's key just made, shown once, with the command and the SDK snippet that check in with it. */
  agentKey(viewer: ConsoleViewer, key: { agentId: string; agentKey: string; rotated: boolean }, status: 200 | 201): Promise<RenderedPage>;
  /** The owner's own proofs and the forms that start a challenge of each owner-level kind. */
  proofs(viewer: ConsoleViewer, shown?: Shown): Promise<RenderedPage>;
  /** A challenge: its instructions and the form that answers it (`values`: the fields sent, after a refusal). */
  challenge(
    viewer: ConsoleViewer,
    challengeId: string,
    shown?: Shown & { values?: Readonly<Record<string, string>> },
  ): Promise<RenderedPage>;
  /** The owner's webhook endpoints and the form that adds one (`values`: what was sent, after a refusal). */
  webhooks(
    viewer: ConsoleViewer,
    query: { cursor?: string },
    shown?: Shown & { values?: { url?: string; description?: string; events?: readonly string[] } },
  ): Promise<RenderedPage>;
  /** One endpoint and a page of its delivery log (`secret`: a signing secret just made, shown once). */
  webhook(viewer: ConsoleViewer, id: string, query: { cursor?: string }, shown?: Shown & { secret?: string }): Promise<RenderedPage>;
  /** A page that only says what went wrong (the page asked for cannot be shown). */
  failure(viewer: ConsoleViewer, status: ConsoleStatus, message: string): RenderedPage;
};

/** The services the console's forms call: the JSON API's. */
export type ConsoleServices = {
  accounts: Pick<Accounts, "claimNewAgent" | "rotateAgentKey" | "unclaim">;
  proofs: Pick<ProofChecks, "issueChallenge" | "submitProof" | "challenge">;
  identity: Pick<Identity, "removeProof">;
  publishing: Pick<Erc8004Publishing, "set">;
  webhooks: Webhooks;
};

const CONSOLE_STATUSES: readonly ConsoleStatus[] = [200, 201, 400, 403, 404, 409, 422, 503];

/** The status a refusal is shown with: the service's own when a page may have it, else 400 (a 401 is the session's: 403). */
function statusOf(error: BaseError): ConsoleStatus {
  if (error.status === 401) return 403;
  return CONSOLE_STATUSES.find((s) => s === error.status) ?? 400;
}

/**
 * What a person is told of a refusal: the service's message, which names what is wrong, except where it names an API
 * call to make instead of the console's button.
 */
const CONSOLE_WORDS: Readonly<Record<string, (error: BaseError) => string>> = {
  webhook_disabled: () => "this endpoint is disabled: enable it again first (the Enable again button below).",
  limit_reached: (error) => `${error.message.replace(/ \([A-Z]+ \/v1\/[^)]*\)/g, "")}.`,
  proof_challenge_used: () => "this challenge was already answered: start another one.",
  proof_source_unreachable: (error) => `${error.message}. Nothing was recorded: try again in a moment.`,
  agent_unclaimed: () => "this agent is unclaimed: it is no one's now, and any owner may claim it again (with a new key).",
};

/** A refusal as a page shows it. */
export function refusal(error: BaseError): Notice {
  const words = CONSOLE_WORDS[error.code]?.(error) ?? `${error.message}.`;
  return { kind: "error", text: words.replace(/\.\.$/, ".") };
}

/** 403 for a form sent by a read-only session: it sees everything and changes nothing. */
class ReadOnlySessionError extends ForbiddenError {
  constructor() {
    super("read_only_session", "this session is read-only: sign in with the owner token or a wallet to change anything");
  }
}

/** Parses a form's fields with the schema the change takes, or throws a 400 naming the field (shown in the page). */
function formFields<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new BaseError("invalid_form", describeZodError("form", parsed.error), { status: 400 });
  return parsed.data;
}

/**
 * Runs a change and shows its page; a refusal of the service (a `BaseError` a person can act on) shows `again`, the
 * page the form was on, with the refusal's words and status. Anything else is the server's fault, and goes on up.
 */
async function shown<R>(run: () => Promise<R>, again: (shown: Shown) => Promise<RenderedPage>): Promise<R | RenderedPage> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof BaseError) || (error.status >= 500 && error.status !== 503)) throw error;
    return again({ status: statusOf(error), notice: refusal(error) });
  }
}

/** A page read: a refusal (no such agent, not yours) becomes a page saying so. */
async function read(pages: ManagePages, viewer: ConsoleViewer, run: () => Promise<RenderedPage>): Promise<RenderedPage> {
  return shown(run, async (s) => pages.failure(viewer, s.status ?? 400, s.notice?.text ?? "this page cannot be shown"));
}

/** A change: refused for a read-only session before anything is done. */
async function change<R extends RenderedPage | SeeOther>(
  viewer: ConsoleViewer,
  run: () => Promise<R>,
  again: (s: Shown) => Promise<RenderedPage>,
): Promise<R | RenderedPage> {
  return shown(async () => {
    if (viewer.scope !== "full") throw new ReadOnlySessionError();
    return run();
  }, again);
}

const cursorQuery = z.object({ cursor: z.string().max(300).optional() });
/** The agents list's query: a page's cursor, and the agent just unclaimed (the form's redirect names it). */
const agentsQuery = cursorQuery.extend({ unclaimed: idSchema.optional() });
const idParams = z.object({ id: idSchema });
/** An endpoint's id, and a delivery's for a redelivery. */
const actionParams = z.object({ id: idSchema, deliveryId: idSchema.optional() });
const formBody = z.record(z.string(), z.union([z.string(), z.array(z.string())]));
const agentName = z.string().trim().min(1, "give the agent a name").max(100);
const booleanField = z.enum(["true", "false"]).transform((v) => v === "true");

/** The evidence of the evidence form: its fields as the challenge's instructions name them. */
function evidenceOf(fields: FormBody, template: Readonly<Record<string, string | number>>): unknown {
  const evidence: Record<string, string | number> = {};
  for (const [name, example] of Object.entries(template)) {
    const value = fields[name];
    const text = typeof value === "string" ? value.trim() : "";
    // A number in the instructions (a chain id) is sent as a number; the kind's schema checks every field.
    evidence[name] = typeof example === "number" && /^\d{1,15}$/.test(text) ? Number(text) : text;
  }
  return evidence;
}

/** The text fields of a form, for showing them again after a refusal. */
const textFields = (fields: FormBody): Record<string, string> =>
  Object.fromEntries(Object.entries(fields).filter((e): e is [string, string] => typeof e[1] === "string"));

/**
 * Declares a console route: its path parameters and query are checked by their schemas (a 400 naming the field, which
 * the console's layer shows as a page), a POST's body is the form's fields, and the handler is given the viewer.
 */
function consoleRoute<P extends z.ZodObject | undefined = undefined, Q extends z.ZodObject | undefined = undefined>(
  declaration: { method: "get" | "post"; path: string; summary: string; params?: P; query?: Q },
  handler: (viewer: ConsoleViewer, request: { params: PartOf<P>; query: PartOf<Q>; body: FormBody }) => Promise<RenderedPage | SeeOther>,
): ConsoleRoute;
function consoleRoute(
  declaration: { method: "get" | "post"; path: string; summary: string; params?: z.ZodObject; query?: z.ZodObject },
  handler: (viewer: ConsoleViewer, request: { params: unknown; query: unknown; body: FormBody }) => Promise<RenderedPage | SeeOther>,
): ConsoleRoute {
  // As the API's parts: every string storable text (well-formed.ts) before its schema reads it.
  const checked = <T>(schema: z.ZodType<T>, value: unknown, where: string): T => {
    const problem = textProblem(value, where);
    if (problem !== null) throw new RequestValidationError(problem);
    return parseWith(schema, value, where);
  };
  const part = (schema: z.ZodObject | undefined, value: unknown, where: string) =>
    schema === undefined ? undefined : checked(schema, value ?? {}, where);
  return {
    method: declaration.method,
    path: declaration.path,
    summary: declaration.summary,
    respond: (viewer, request) =>
      handler(viewer, {
        params: part(declaration.params, request.params, "path"),
        query: part(declaration.query, request.query, "query"),
        body: declaration.method === "post" ? checked(formBody, request.body ?? {}, "form") : {},
      }),
  };
}

/** The console's pages and forms: each form calls the service of the JSON API's route for the same change. */
export function consoleRoutes(services: ConsoleServices, pages: ManagePages): ConsoleRoute[] {
  const { accounts, proofs, identity, publishing } = services;
  const page = (path: string, summary: string): { method: "get"; path: string; summary: string } => ({ method: "get", path, summary });
  const form = (path: string, summary: string): { method: "post"; path: string; summary: string } => ({ method: "post", path, summary });
  const done = (text: string): Shown => ({ notice: { kind: "done", text } });

  return [
    consoleRoute(
      { ...page("/console/agents", "The owner's agents, a page at a time, and the form that creates one."), query: agentsQuery },
      (viewer, { query }) => read(pages, viewer, () => pages.agents(viewer, query)),
    ),
    consoleRoute(form("/console/agents", "Claim a new agent (V2): its key is shown once."), (viewer, { body }) =>
      change(
        viewer,
        async () => {
          const { name } = formFields(z.object({ name: agentName }), body);
          const claim = await accounts.claimNewAgent(viewer.ownerId, { name });
          return pages.agentKey(viewer, { agentId: claim.agentId, agentKey: claim.agentKey, rotated: false }, 201);
        },
        (s) => pages.agents(viewer, {}, s),
      ),
    ),
    consoleRoute({ ...page("/console/agents/:id", "One of the owner's agents."), params: idParams }, (viewer, { params }) =>
      read(pages, viewer, () => pages.agent(viewer, params.id)),
    ),
    consoleRoute(
      { ...form("/console/agents/:id/rotate-key", "A new key for the agent, shown once; the old key stops."), params: idParams },
      (viewer, { params }) =>
        change(
          viewer,
          async () => {
            const rotation = await accounts.rotateAgentKey(viewer.ownerId, params.id);
            return pages.agentKey(viewer, { agentId: params.id, agentKey: rotation.agentKey, rotated: true }, 200);
          },
          (s) => pages.agent(viewer, params.id, s),
        ),
    ),
    consoleRoute(
      { ...page("/console/agents/:id/unclaim", "What unclaiming the agent does, and the form that does it."), params: idParams },
      (viewer, { params }) => read(pages, viewer, () => pages.unclaim(viewer, params.id)),
    ),
    consoleRoute(
      {
        ...form(
          "/console/agents/:id/unclaim",
          "Unclaim the agent (issue #29): its key stops, its proofs of one agent go; then the agents.",
        ),
        params: idParams,
      },
      (viewer, { params, body }) =>
        change(
          viewer,
          async () => {
            formFields(z.object({ confirm: z.literal("yes", "tick the box to say you understand what unclaiming does") }), body);
            await accounts.unclaim(viewer.ownerId, params.id);
            return { status: 303, location: `/console/agents?unclaimed=${params.id}` } satisfies SeeOther;
          },
          // Once unclaimed (a second post), its page cannot be shown: a page says why.
          (s) => read(pages, viewer, () => pages.unclaim(viewer, params.id, s)),
        ),
    ),
    consoleRoute(
      { ...form("/console/agents/:id/publishing", "Turn the agent's ERC-8004 feedback on or off."), params: idParams },
      (viewer, { params, body }) =>
        change(
          viewer,
          async () => {
            const { enabled } = formFields(z.object({ enabled: booleanField }), body);
            const status = await publishing.set(viewer.ownerId, params.id, enabled);
            return pages.agent(
              viewer,
              params.id,
              done(status.enabled ? "ERC-8004 publishing is on." : "ERC-8004 publishing is off: its feedback is revoked."),
            );
          },
          (s) => pages.agent(viewer, params.id, s),
        ),
    ),
    consoleRoute(page("/console/proofs", "The owner's proofs and the forms that start one of each kind."), (viewer) =>
      read(pages, viewer, () => pages.proofs(viewer)),
    ),
    consoleRoute(
      form("/console/proofs/challenges", "Start a proof (V6): a challenge, then the page that says what to do with it."),
      (viewer, { body }) => {
        const agentId = typeof body.agentId === "string" ? body.agentId : undefined;
        return change(
          viewer,
          async () => {
            const input = formFields(
              z.object({
                kind: z.enum(OFFERED_PROOF_KINDS),
                subject: z.string().trim().min(1, "fill in what to prove").max(300),
                agentId: idSchema.optional(),
              }),
              body,
            );
            const challenge = await proofs.issueChallenge(viewer.ownerId, input);
            return { status: 303, location: `/console/proofs/challenges/${challenge.id}` } satisfies SeeOther;
          },
          (s) => (agentId === undefined ? pages.proofs(viewer, s) : pages.agent(viewer, agentId, s)),
        );
      },
    ),
    consoleRoute(
      { ...page("/console/proofs/challenges/:id", "A challenge: what to publish or sign, and its evidence form."), params: idParams },
      (viewer, { params }) => read(pages, viewer, () => pages.challenge(viewer, params.id)),
    ),
    consoleRoute(
      form("/console/proofs", "Answer a challenge: the proof is verified against its source and recorded."),
      (viewer, { body }) => {
        const challengeId = typeof body.challengeId === "string" ? body.challengeId : "";
        return change(
          viewer,
          async () => {
            const challenge = await proofs.challenge(viewer.ownerId, challengeId);
            const template = proofKindModule(challenge.kind).instructions(challenge, challenge.context).evidence;
            const proof = await proofs.submitProof(viewer.ownerId, challengeId, evidenceOf(body, template));
            const counted =
              proof.agentId === null
                ? "It counts for every agent of the owner, whose scores are recomputed in a moment."
                : "The agent's score was recomputed.";
            const notice = done(`Proof verified: ${proofKindModule(proof.kind).title} ${proof.subject}. ${counted}`);
            return proof.agentId === null ? pages.proofs(viewer, notice) : pages.agent(viewer, proof.agentId, notice);
          },
          (s) => pages.challenge(viewer, challengeId, { ...s, values: textFields(body) }),
        );
      },
    ),
    consoleRoute(
      { ...form("/console/proofs/:id/remove", "Remove one of the owner's proofs; its scores are recomputed."), params: idParams },
      (viewer, { params, body }) => {
        const back = typeof body.back === "string" ? /^\/console\/agents\/([A-Za-z0-9_-]{1,64})$/.exec(body.back)?.[1] : undefined;
        const again = (s: Shown) => (back === undefined ? pages.proofs(viewer, s) : pages.agent(viewer, back, s));
        return change(
          viewer,
          async () => {
            const proof = await identity.removeProof(params.id, "removed by its owner", { ownerId: viewer.ownerId });
            return again(done(`Proof removed: ${proofKindModule(proof.kind).title} ${proof.subject}.`));
          },
          again,
        );
      },
    ),
    ...webhookRoutesOfConsole(services, pages),
  ];
}

/** The console's webhook pages and forms: the endpoints, one endpoint's log, and what its owner does to it. */
function webhookRoutesOfConsole(services: ConsoleServices, pages: ManagePages): ConsoleRoute[] {
  const { webhooks } = services;
  const done = (text: string): Shown => ({ notice: { kind: "done", text } });
  /** A form of one endpoint, whose page shows what it did, or why not. */
  const action = (
    path: string,
    summary: string,
    run: (viewer: ConsoleViewer, params: z.output<typeof actionParams>, body: FormBody) => Promise<RenderedPage>,
  ) =>
    consoleRoute({ method: "post", path, summary, params: actionParams }, (viewer, { params, body }) =>
      change(
        viewer,
        () => run(viewer, params, body),
        (s) => pages.webhook(viewer, params.id, {}, s),
      ),
    );
  return [
    consoleRoute(
      {
        method: "get",
        path: "/console/webhooks",
        summary: "The owner's webhook endpoints and the form that adds one.",
        query: cursorQuery,
      },
      (viewer, { query }) => read(pages, viewer, () => pages.webhooks(viewer, query)),
    ),
    consoleRoute(
      { method: "post", path: "/console/webhooks", summary: "Add a webhook endpoint: its signing secret is shown once." },
      (viewer, { body }) => {
        const events = typeof body.events === "string" ? [body.events] : (body.events ?? []);
        const values = { url: textFields(body).url, description: textFields(body).description, events };
        return change(
          viewer,
          async () => {
            const input = formFields(
              z.object({
                url: z.string().trim().min(1, "give the endpoint's URL").max(8192),
                description: z.string().trim().max(200).optional(),
                events: z.array(z.enum(SUBSCRIBABLE_EVENT_TYPES)).min(1, "choose at least one event"),
              }),
              { ...body, events },
            );
            const { endpoint, secret } = await webhooks.create(viewer.ownerId, { ...input, description: input.description || null });
            return pages.webhook(viewer, endpoint.id, {}, { secret, status: 201 });
          },
          (s) => pages.webhooks(viewer, {}, { ...s, values }),
        );
      },
    ),
    consoleRoute(
      {
        method: "get",
        path: "/console/webhooks/:id",
        summary: "One endpoint and its delivery log, a page at a time.",
        params: idParams,
        query: cursorQuery,
      },
      (viewer, { params, query }) => read(pages, viewer, () => pages.webhook(viewer, params.id, query)),
    ),
    action("/console/webhooks/:id/test", "Send the endpoint a ping.", async (viewer, { id }) => {
      await webhooks.test(viewer.ownerId, id);
      return pages.webhook(viewer, id, {}, done("A ping is on its way: its try shows in the log below within moments (reload)."));
    }),
    action("/console/webhooks/:id/enabled", "Enable or disable the endpoint.", async (viewer, { id }, body) => {
      const { enabled } = formFields(z.object({ enabled: booleanField }), body);
      await webhooks.update(viewer.ownerId, id, { enabled });
      return pages.webhook(viewer, id, {}, done(enabled ? "Enabled: its waiting deliveries go out." : "Disabled: nothing is sent to it."));
    }),
    action("/console/webhooks/:id/rotate-secret", "A new signing secret, shown once.", async (viewer, { id }) => {
      const { secret } = await webhooks.rotateSecret(viewer.ownerId, id);
      return pages.webhook(viewer, id, {}, { secret });
    }),
    action("/console/webhooks/:id/delete", "Delete the endpoint with its deliveries.", async (viewer, { id }) => {
      const endpoint = await webhooks.remove(viewer.ownerId, id);
      return pages.webhooks(viewer, {}, done(`Deleted: ${endpoint.url}.`));
    }),
    action(
      "/console/webhooks/:id/deliveries/:deliveryId/redeliver",
      "Send a delivery again, with the same event and webhook-id.",
      async (viewer, { id, deliveryId }) => {
        await webhooks.redeliver(viewer.ownerId, id, deliveryId ?? "");
        return pages.webhook(viewer, id, {}, done("Queued again: its new try shows in the log within moments (reload)."));
      },
    ),
  ];
}
