import { z } from "zod";

/**
 * The configuration of `vrai serve`, from environment variables, parsed once at start (STYLE.md):
 * a missing or invalid value stops the process with a message naming the variable.
 * Every variable and its default is listed in `.env.example`.
 */
export const serveConfigSchema = z.object({
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, "expected a postgres:// or postgresql:// URL").optional(),
  DATA_DIR: z.string().min(1).default("./data"),
  HOST: z.string().min(1).default("127.0.0.1"),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  OPERATOR_TOKEN: z.string().min(24, "must be at least 24 characters (it guards penalties and outages)"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  GITHUB_API_BASE_URL: z.url().default("https://api.github.com"),
  /** JSON-RPC of the chain where ERC-8004 identities and ERC-1271 wallets are checked (V6); unset: those proofs are refused. */
  RPC_URL: z.url().optional(),
  /** deployments/<network>.json of the chain at RPC_URL: with it, the chain indexer runs beside the API. */
  DEPLOYMENT: z.string().min(1).optional(),
  /** Blocks the indexer stays behind the head (0 on a local chain). */
  CONFIRMATIONS: z.coerce.number().int().min(0).max(1000).default(2),
  SCHEDULE_INTERVAL_MS: z.coerce.number().int().min(1000).default(60_000),
  OVERLOAD_MAX_IN_FLIGHT: z.coerce.number().int().min(1).default(256),
  OVERLOAD_MAX_LOOP_DELAY_MS: z.coerce.number().int().min(1).default(200),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(600),
  /**
   * Memory for the latest score of each agent, served by `GET /v1/agents/:id/score` without a query
   * (about 3.5 kB per agent); 0 turns the cache off. It lives in node's heap (about 4 GiB by default), hence the bound.
   */
  SCORE_CACHE_MB: z.coerce.number().int().min(0).max(2048).default(512),
  /** Key of the account that anchors each day's score root (it needs AnchorRegistry's anchorer role); unset: anchoring is off. */
  ANCHOR_PRIVATE_KEY: z.string().regex(/^0x[0-9a-fA-F]{64}$/, "expected 0x and 64 hex digits").optional(),
  /** JSON-RPC of the anchoring chain; RPC_URL when unset. */
  ANCHOR_RPC_URL: z.url().optional(),
  /** The AnchorRegistry address, or a deployments/<network>.json file naming it. */
  ANCHOR_REGISTRY: z.string().regex(/^0x[0-9a-fA-F]{40}$/, "expected an address").optional(),
  ANCHOR_DEPLOYMENT: z.string().min(1).optional(),
}).superRefine((config, ctx) => {
  if (config.ANCHOR_PRIVATE_KEY === undefined) return;
  if (config.ANCHOR_RPC_URL === undefined && config.RPC_URL === undefined) ctx.addIssue({ code: "custom", path: ["ANCHOR_RPC_URL"], message: "anchoring needs ANCHOR_RPC_URL or RPC_URL" });
  if ((config.ANCHOR_REGISTRY === undefined) === (config.ANCHOR_DEPLOYMENT === undefined)) {
    ctx.addIssue({ code: "custom", path: ["ANCHOR_REGISTRY"], message: "anchoring needs exactly one of ANCHOR_REGISTRY and ANCHOR_DEPLOYMENT" });
  }
});

export type ServeConfig = z.infer<typeof serveConfigSchema>;

/** Parses `env`; throws one line naming each bad variable. */
export function parseServeConfig(env: Record<string, string | undefined>): ServeConfig {
  // An empty variable (`RPC_URL=` as in .env.example) means unset.
  const given = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ""));
  const parsed = serveConfigSchema.safeParse(given);
  if (parsed.success) {
    if (parsed.data.DEPLOYMENT && !parsed.data.RPC_URL) throw new Error("invalid configuration: RPC_URL: required with DEPLOYMENT (the chain the indexer follows)");
    return parsed.data;
  }
  const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  throw new Error(`invalid configuration: ${problems.join("; ")}`);
}
