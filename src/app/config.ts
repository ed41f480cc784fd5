/**
 * The configuration of every entry point, from environment variables: one set of variables, each
 * declared once with its check and default, parsed once at start (STYLE.md). A missing or invalid
 * value stops the process with one line naming each bad variable; an empty variable means unset.
 * Every variable and its default is listed in `.env.example`.
 */
import ipaddr from "ipaddr.js";
import type { Address, Hex } from "viem";
import { z } from "zod";
import { DEFAULT_RATE_LIMITS } from "../api/rate-limit";
import { InvalidInputError } from "../errors";
import { DEFAULT_RPC_TIMEOUT_MS } from "../chain/signer";
import { DEFAULT_ANCHOR_CONFIRMATIONS, DEFAULT_ANCHOR_RETRY_MAX_MS } from "../service/anchoring";
import { DEFAULT_CHECKIN_RETENTION_DAYS } from "../service/checkin-retention";
import { DEFAULT_CONSOLE_TIMEOUTS } from "../service/console-sessions";
import { REMEMBERED_AGENTS } from "../store/checkin-writes";
import { PROOF_KIND_SETTINGS } from "../service/proofs/kinds";
import { DEFAULT_SERVER_LIMITS } from "./listener";
import { WARM_UP_REQUESTS } from "./warm-up";
import { DEFAULT_WEBHOOK_LIMITS } from "../service/webhooks/webhooks";
import { DEFAULT_WEBHOOK_POLL_INTERVAL_MS, DEFAULT_WEBHOOK_TIMEOUT_MS } from "../service/webhooks/worker";

const postgresUrl = z.string().regex(/^postgres(ql)?:\/\//, "expected a postgres:// or postgresql:// URL");
/** A count with its default, from 1 (or `min`) up. */
const count = (fallback: number, min = 1) => z.coerce.number().int().min(min).default(fallback);
/** Express's `trust proxy` names and any address or CIDR block. */
const proxyTrust = z.string().refine(
  (value) =>
    value === "none" ||
    value.split(",").every((entry) => {
      const item = entry.trim();
      return ["loopback", "linklocal", "uniquelocal"].includes(item) || ipaddr.isValid(item) || ipaddr.isValidCIDR(item);
    }),
  "expected none, or a comma-separated list of loopback, linklocal, uniquelocal, addresses and CIDR blocks",
);
const logLevel = z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info");
/** A private key: 0x and 64 hex digits. */
const privateKey = z.custom<Hex>(
  (value) => typeof value === "string" && /^0x[0-9a-fA-F]{64}$/.test(value),
  "expected 0x and 64 hex digits",
);
/** A 20-byte address. */
const address = z.custom<Address>((value) => typeof value === "string" && /^0x[0-9a-fA-F]{40}$/.test(value), "expected an address");
/** Blocks the indexer stays behind the head. */
const confirmations = (fallback: number) => z.coerce.number().int().min(0).max(1000).default(fallback);
/** How often the indexer asks for new blocks, and its largest `eth_getLogs` range. */
const indexerPolling = {
  POLL_INTERVAL_MS: z.coerce.number().int().min(10).default(1_000),
  INDEXER_MAX_RANGE: z.coerce.number().int().min(1).default(10_000),
};

/** `vrai serve` (and `vrai dev`, which sets some of these itself). */
export const serveConfigSchema = z
  .object({
    DATABASE_URL: postgresUrl.optional(),
    DATA_DIR: z.string().min(1).default("./data"),
    HOST: z.string().min(1).default("127.0.0.1"),
    PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    OPERATOR_TOKEN: z.string().min(24, "must be at least 24 characters (it guards penalties and outages)"),
    LOG_LEVEL: logLevel,
    /** Whole HTTP request of a proof check (connect, headers, body), per try (V6: 3 tries); issue #15 bounds it. */
    PROOF_HTTP_TIMEOUT_MS: z.coerce.number().int().min(100).max(30_000).default(3_000),
    /** All the tries of a submitted proof's check together; past it the submission answers 503 (re-checks have no such bound). */
    PROOF_SUBMISSION_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(6_000),
    /** JSON-RPC of the chain where proofs read the chain (V6: identity tokens, contract wallets); unset: those proofs are refused. */
    RPC_URL: z.url().optional(),
    /** deployments/<network>.json of the chain at RPC_URL: with it, the chain indexer runs beside the API. */
    DEPLOYMENT: z.string().min(1).optional(),
    CONFIRMATIONS: confirmations(2),
    ...indexerPolling,
    SCHEDULE_INTERVAL_MS: z.coerce.number().int().min(1000).default(60_000),
    /** Whole UTC days of check-ins kept before today (migration 012): older ones are dropped, and V3.1 forgets their keys. */
    CHECKIN_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(DEFAULT_CHECKIN_RETENTION_DAYS),
    /** Where a day's check-ins are written (`checkins-YYYY-MM-DD.ndjson.gz`) before it is dropped; unset: dropped unarchived. */
    CHECKIN_ARCHIVE_DIR: z.string().min(1).optional(),
    /** Each proof kind's own variables (its module's `settings`, src/service/proofs/kinds), e.g. GITHUB_API_BASE_URL. */
    ...PROOF_KIND_SETTINGS,
    OVERLOAD_MAX_IN_FLIGHT: z.coerce.number().int().min(1).default(256),
    OVERLOAD_MAX_LOOP_DELAY_MS: z.coerce.number().int().min(1).default(200),
    RATE_LIMIT_PER_MINUTE: count(DEFAULT_RATE_LIMITS.perMinute),
    RATE_LIMIT_OWNERS_PER_HOUR: count(DEFAULT_RATE_LIMITS.ownersPerHour),
    RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: count(DEFAULT_RATE_LIMITS.authFailuresPerMinute),
    /** Redis shared by every instance for the rate limits; unset: each instance limits in its own memory. */
    RATE_LIMIT_REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, "expected a redis:// or rediss:// URL")
      .optional(),
    RATE_LIMIT_REDIS_PREFIX: z.string().min(1).default("vrai:rl"),
    /** Which proxies' X-Forwarded-For names the client address the limits key on. */
    TRUST_PROXY: proxyTrust.default("loopback"),
    /** A new connection's first byte must arrive within this (issue #33: silent connections cannot be hoarded). */
    FIRST_BYTE_TIMEOUT_MS: count(DEFAULT_SERVER_LIMITS.firstByteTimeoutMs),
    HEADERS_TIMEOUT_MS: count(DEFAULT_SERVER_LIMITS.headersTimeoutMs),
    REQUEST_TIMEOUT_MS: count(DEFAULT_SERVER_LIMITS.requestTimeoutMs),
    KEEP_ALIVE_TIMEOUT_MS: count(DEFAULT_SERVER_LIMITS.keepAliveTimeoutMs),
    MAX_REQUESTS_PER_SOCKET: count(DEFAULT_SERVER_LIMITS.maxRequestsPerSocket),
    MAX_CONNECTIONS: count(DEFAULT_SERVER_LIMITS.maxConnections),
    MAX_CONNECTIONS_PER_ADDRESS: count(DEFAULT_SERVER_LIMITS.maxConnectionsPerAddress),
    /** The bearer token /metrics asks for (stored as its hash); unset: no /metrics on the API's listener. */
    METRICS_TOKEN: z.string().min(24, "must be at least 24 characters").optional(),
    /** A listener of its own for /metrics, on METRICS_HOST. */
    METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
    METRICS_HOST: z.string().min(1).default("127.0.0.1"),
    /**
     * Memory for the latest score of each agent, served by `GET /v1/agents/:id/score` without a query
     * (its summary and compact result); 0 turns the cache off. Entries and their index live outside
     * node's heap; the cache never takes more than this.
     */
    SCORE_CACHE_MB: z.coerce.number().int().min(0).max(2048).default(512),
    /**
     * Agents a server remembers for check-ins (src/store/checkin-writes.ts): the check-in of one remembered costs one round
     * trip to the database instead of two; each takes about 500 bytes of heap. 0: none.
     */
    CHECKIN_REMEMBERED_AGENTS: z.coerce.number().int().min(0).max(10_000_000).default(REMEMBERED_AGENTS),
    /**
     * Reads a started server sends itself before `GET /v1/ready` answers 200, so that V8 has optimised its request path
     * before traffic comes (issue #30: src/app/warm-up.ts); 0: none, ready once the cache is filled.
     */
    WARM_UP_REQUESTS: z.coerce.number().int().min(0).max(100_000).default(WARM_UP_REQUESTS),
    /** What one owner may keep (issue #15): proof challenges neither used nor expired, and agents claimed. */
    MAX_OPEN_CHALLENGES_PER_OWNER: z.coerce.number().int().min(1).max(10_000).default(20),
    MAX_AGENTS_PER_OWNER: z.coerce.number().int().min(1).max(10_000_000).default(1000),
    /** Webhooks (issue #28): endpoints per owner, characters of a URL, a try's timeout, an idle worker's poll. */
    MAX_WEBHOOKS_PER_OWNER: z.coerce.number().int().min(1).max(10_000).default(DEFAULT_WEBHOOK_LIMITS.endpoints),
    MAX_WEBHOOK_URL_LENGTH: z.coerce.number().int().min(20).max(8192).default(DEFAULT_WEBHOOK_LIMITS.urlLength),
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(DEFAULT_WEBHOOK_TIMEOUT_MS),
    WEBHOOK_POLL_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(DEFAULT_WEBHOOK_POLL_INTERVAL_MS),
    /** Seals the endpoints' signing secrets (32 bytes, hex or base64); unset: a key derived from OPERATOR_TOKEN. */
    WEBHOOK_SECRETS_KEY: z
      .string()
      .refine(
        (v) => /^[0-9a-fA-F]{64}$/.test(v) || (/^[A-Za-z0-9+/]{43}=$/.test(v) && Buffer.from(v, "base64").length === 32),
        "expected 32 bytes as 64 hex digits or base64",
      )
      .optional(),
    /** http:// receivers on this machine (vrai dev sets it). */
    WEBHOOK_ALLOW_LOOPBACK: z
      .enum(["true", "false"])
      .default("false")
      .transform((v) => v === "true"),
    /** Key of the account that anchors each day's score root (it needs AnchorRegistry's anchorer role); unset: anchoring is off. */
    ANCHOR_PRIVATE_KEY: privateKey.optional(),
    /** JSON-RPC of the anchoring chain; RPC_URL when unset. */
    ANCHOR_RPC_URL: z.url().optional(),
    /** The AnchorRegistry address, or a deployments/<network>.json file naming it. */
    ANCHOR_REGISTRY: address.optional(),
    ANCHOR_DEPLOYMENT: z.string().min(1).optional(),
    /** Blocks on a day's anchor, its own included, before it is final; until then a reorganisation that drops it has it sent again. */
    ANCHOR_CONFIRMATIONS: z.coerce.number().int().min(1).max(1000).default(DEFAULT_ANCHOR_CONFIRMATIONS),
    /** One JSON-RPC request of the anchoring (retried 3 times, then the attempt fails and is tried again later). */
    ANCHOR_RPC_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(DEFAULT_RPC_TIMEOUT_MS),
    /** The longest wait between two anchoring attempts while the chain fails or a transaction waits (doubling from 5 s). */
    ANCHOR_RETRY_MAX_MS: z.coerce.number().int().min(100).max(3_600_000).default(DEFAULT_ANCHOR_RETRY_MAX_MS),
    /** The service's public base URL (https://vrai.example): what ERC-8004 feedback names (its file's URI, the agent's page). */
    PUBLIC_URL: z.url().optional(),
    /** The ERC-8004 reputation registry Vrai gives feedback to, or a deployments/<network>.json naming it; unset: none is given. */
    REPUTATION_REGISTRY: address.optional(),
    REPUTATION_DEPLOYMENT: z.string().min(1).optional(),
    /** JSON-RPC of the reputation registry's chain; RPC_URL when unset. */
    REPUTATION_RPC_URL: z.url().optional(),
    /** Key of the account that gives the feedback (it must not own or operate the agents' tokens); unset: this instance sends none. */
    REPUTATION_PRIVATE_KEY: privateKey.optional(),
    /** The owners' console (issue #29): a session not used for this long ends, and every session this long after its sign-in. */
    CONSOLE_SESSION_IDLE_S: z.coerce
      .number()
      .int()
      .min(60)
      .max(30 * 86_400)
      .default(DEFAULT_CONSOLE_TIMEOUTS.idleS),
    CONSOLE_SESSION_MAX_S: z.coerce
      .number()
      .int()
      .min(60)
      .max(90 * 86_400)
      .default(DEFAULT_CONSOLE_TIMEOUTS.absoluteS),
  })
  .superRefine((config, ctx) => {
    // Node refuses a request timeout shorter than the headers' (a request's headers are part of it).
    if (config.HEADERS_TIMEOUT_MS > config.REQUEST_TIMEOUT_MS)
      ctx.addIssue({ code: "custom", path: ["HEADERS_TIMEOUT_MS"], message: "must not be longer than REQUEST_TIMEOUT_MS" });
    if (config.DEPLOYMENT !== undefined && config.RPC_URL === undefined)
      ctx.addIssue({ code: "custom", path: ["RPC_URL"], message: "required with DEPLOYMENT (the chain the indexer follows)" });
    checkReputation(config, ctx);
    if (config.CONSOLE_SESSION_IDLE_S > config.CONSOLE_SESSION_MAX_S)
      ctx.addIssue({ code: "custom", path: ["CONSOLE_SESSION_IDLE_S"], message: "must not be longer than CONSOLE_SESSION_MAX_S" });
    if (config.ANCHOR_PRIVATE_KEY === undefined) return;
    if (config.ANCHOR_RPC_URL === undefined && config.RPC_URL === undefined)
      ctx.addIssue({ code: "custom", path: ["ANCHOR_RPC_URL"], message: "anchoring needs ANCHOR_RPC_URL or RPC_URL" });
    if ((config.ANCHOR_REGISTRY === undefined) === (config.ANCHOR_DEPLOYMENT === undefined)) {
      ctx.addIssue({
        code: "custom",
        path: ["ANCHOR_REGISTRY"],
        message: "anchoring needs exactly one of ANCHOR_REGISTRY and ANCHOR_DEPLOYMENT",
      });
    }
  });

export type ServeConfig = z.infer<typeof serveConfigSchema>;

/** The reputation registry's variables together: one registry, a chain to reach it, and a public URL to name files under. */
function checkReputation(
  config: Pick<
    ServeConfig,
    "REPUTATION_REGISTRY" | "REPUTATION_DEPLOYMENT" | "REPUTATION_RPC_URL" | "REPUTATION_PRIVATE_KEY" | "RPC_URL" | "PUBLIC_URL"
  >,
  ctx: z.core.$RefinementCtx,
): void {
  const given = [config.REPUTATION_REGISTRY, config.REPUTATION_DEPLOYMENT].filter((value) => value !== undefined).length;
  if (given === 2)
    ctx.addIssue({
      code: "custom",
      path: ["REPUTATION_REGISTRY"],
      message: "give one of REPUTATION_REGISTRY and REPUTATION_DEPLOYMENT, not both",
    });
  if (given === 0 && config.REPUTATION_PRIVATE_KEY !== undefined)
    ctx.addIssue({
      code: "custom",
      path: ["REPUTATION_REGISTRY"],
      message: "REPUTATION_PRIVATE_KEY needs REPUTATION_REGISTRY or REPUTATION_DEPLOYMENT",
    });
  if (given > 0 && config.REPUTATION_RPC_URL === undefined && config.RPC_URL === undefined)
    ctx.addIssue({ code: "custom", path: ["REPUTATION_RPC_URL"], message: "the reputation registry needs REPUTATION_RPC_URL or RPC_URL" });
  if (config.REPUTATION_PRIVATE_KEY !== undefined && config.PUBLIC_URL === undefined)
    ctx.addIssue({
      code: "custom",
      path: ["PUBLIC_URL"],
      message: "required with REPUTATION_PRIVATE_KEY (feedback names its file's URL under it)",
    });
}

/** The indexer on its own (`vrai indexer`): it needs PostgreSQL, the chain and what to follow there. */
export const indexerConfigSchema = z.object({
  DATABASE_URL: postgresUrl,
  RPC_URL: z.url(),
  DEPLOYMENT: z.string().min(1),
  /** 0 by default: the indexer alone is most often pointed at a local chain. */
  CONFIRMATIONS: confirmations(0),
  ...indexerPolling,
  LOG_LEVEL: logLevel,
});

export type IndexerConfig = z.infer<typeof indexerConfigSchema>;

/** Parses `env` with `schema`; throws one line naming each bad variable (CLI exit 2). */
function parseEnv<S extends z.ZodType>(schema: S, env: Readonly<Record<string, string | undefined>>): z.output<S> {
  // An empty variable (`RPC_URL=` as in .env.example) means unset.
  const given = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ""));
  const parsed = schema.safeParse(given);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  throw new InvalidInputError("invalid_configuration", `invalid configuration: ${problems.join("; ")}`);
}

/** The configuration of `vrai serve` from `env`. */
export const parseServeConfig = (env: Readonly<Record<string, string | undefined>>): ServeConfig => parseEnv(serveConfigSchema, env);

/** The configuration of the indexer alone from `env`. */
export const parseIndexerConfig = (env: Readonly<Record<string, string | undefined>>): IndexerConfig => parseEnv(indexerConfigSchema, env);

/**
 * `VRAI_CHECK_REPLIES=1`: every server started checks each answer against its route's declaration
 * (src/api/reply-check.ts). The test suite sets it (src/test-helpers/check-replies.ts); unset in
 * production and in benches, where it would cost CPU on every reply.
 */
export const checkRepliesOf = (env: Readonly<Record<string, string | undefined>>): boolean => env.VRAI_CHECK_REPLIES === "1";
