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
  SCHEDULE_INTERVAL_MS: z.coerce.number().int().min(1000).default(60_000),
  OVERLOAD_MAX_IN_FLIGHT: z.coerce.number().int().min(1).default(256),
  OVERLOAD_MAX_LOOP_DELAY_MS: z.coerce.number().int().min(1).default(200),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(600),
});

export type ServeConfig = z.infer<typeof serveConfigSchema>;

/** Parses `env`; throws one line naming each bad variable. */
export function parseServeConfig(env: Record<string, string | undefined>): ServeConfig {
  // An empty variable (`RPC_URL=` as in .env.example) means unset.
  const given = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ""));
  const parsed = serveConfigSchema.safeParse(given);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  throw new Error(`invalid configuration: ${problems.join("; ")}`);
}
