import fs from "node:fs";
import path from "node:path";
import { InvalidInputError } from "../../errors";
import { parseFlags } from "../flags";
import type { CliIo, Command } from "../io";

const USAGE = "dev-clock [advance --days N] [--api URL] [--data-dir DIR]";
const DEFAULT_API = "http://127.0.0.1:8080";

type ClockState = { now: string; offsetDays: number; nextDailyAt: string };
type DevDay = {
  day: string;
  scores: number;
  anchor: { status: "mined"; txHash: string; blockNumber: number } | { status: "pending" | "off" } | null;
};

/** `1 day` / `3 days`. */
const days = (n: number) => `${n} day${n === 1 ? "" : "s"}`;

/** The line of one day a move passed: its daily scores and where their root's anchor stands. */
function dayLine(d: DevDay): string {
  if (d.anchor === null) return `${d.day}: no daily score (no agent was claimed by 00:00 UTC)`;
  const scores = `${d.scores} daily score${d.scores === 1 ? "" : "s"}`;
  switch (d.anchor.status) {
    case "mined":
      return `${d.day}: ${scores}, root anchored on chain in block ${d.anchor.blockNumber} (tx ${d.anchor.txHash})`;
    case "pending":
      return `${d.day}: ${scores}, root not anchored yet (retried in the background; see the vrai dev log)`;
    case "off":
      return `${d.day}: ${scores}, anchoring off (ANCHOR_* variables given by hand without a key)`;
  }
}

/** The operator token `vrai dev` uses: OPERATOR_TOKEN, or the one it keeps in its data directory. */
function operatorToken(dataDir: string): string {
  if (process.env.OPERATOR_TOKEN) return process.env.OPERATOR_TOKEN;
  const file = path.join(dataDir, "operator-token");
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch (error) {
    throw new InvalidInputError(
      "usage",
      `no operator token: ${file} cannot be read (${(error as NodeJS.ErrnoException).code}); ` +
        "run this where vrai dev runs, or give --data-dir or OPERATOR_TOKEN",
      { cause: error },
    );
  }
}

/** A request to the dev service; what keeps it from answering is bad input (exit 2): no `vrai dev` there. */
async function request(
  api: string,
  method: "GET" | "POST",
  route: string,
  init: { token?: string; body?: unknown } = {},
): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(api + route, {
      method,
      headers: {
        ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
        ...(init.body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
  } catch (error) {
    throw new InvalidInputError(
      "dev_unreachable",
      `cannot reach ${api}: is vrai dev running? (${(error as Error).message}; --api URL to name another)`,
      { cause: error },
    );
  }
  const body = (await res.json().catch(() => null)) as { error?: { code: string; message: string } } | null;
  if (res.status === 404 && route.startsWith("/v1/dev/")) {
    throw new InvalidInputError("no_dev_clock", `${api} has no development clock: it is vrai dev's alone, never vrai serve's`);
  }
  if (!res.ok)
    throw new InvalidInputError(
      body?.error?.code ?? "dev_clock_refused",
      `${method} ${route} answered ${res.status}: ${body?.error?.message ?? "no message"}`,
    );
  return body;
}

/**
 * `vrai dev-clock`: where the development clock of a running `vrai dev` stands; `vrai dev-clock advance --days N`
 * moves it N whole days forward, the local chain's time with it, and waits while each day's daily recompute and
 * anchoring run (issue #31), then prints one line per day. The operator token is `vrai dev`'s own
 * (`DATA_DIR/operator-token`, or OPERATOR_TOKEN).
 */
export const command: Command = {
  name: "dev-clock",
  usage: USAGE,
  summary:
    "show, or move whole days forward, the clock of a running vrai dev (and its chain's time): each day's daily recompute and anchoring run",
  help: [
    "Without advance: prints the service's time, how far ahead of this machine it is, and the next daily recompute.",
    "advance --days N (1-60): moves the clock and the local chain's time N days forward, one day at a time, each day's",
    "daily recompute (00:00 UTC) and anchoring run as they would have, then prints each day's scores and anchor.",
    "The clock is vrai dev's only (vrai serve has none) and is kept in DATA_DIR/dev-clock.json: a restart keeps it.",
    `--api: the service (VRAI_API_URL, else ${DEFAULT_API}); --data-dir: where vrai dev keeps its operator token (DATA_DIR, else ./data).`,
  ].join("\n"),
  async run(args, io) {
    const { values, positionals } = parseFlags(
      args,
      { days: { type: "string" }, api: { type: "string" }, "data-dir": { type: "string" } },
      USAGE,
    );
    const [action, ...extra] = positionals;
    if (extra.length > 0 || (action !== undefined && action !== "advance")) {
      throw new InvalidInputError("usage", `unknown argument ${extra[0] ?? action} (usage: vrai ${USAGE})`);
    }
    const api = (values.api ?? process.env.VRAI_API_URL ?? DEFAULT_API).replace(/\/+$/, "");
    if (!/^https?:\/\/\S+$/.test(api)) throw new InvalidInputError("usage", `--api: expected an http(s) URL, got ${api}`);
    if (action === undefined) {
      if (values.days !== undefined) throw new InvalidInputError("usage", `--days goes with advance (usage: vrai ${USAGE})`);
      printState(io, (await request(api, "GET", "/v1/dev/clock")) as ClockState);
      return 0;
    }
    if (values.days === undefined || !/^[1-9]\d*$/.test(values.days))
      throw new InvalidInputError("usage", `advance needs --days N, a whole number of days 1-60, got ${values.days ?? "nothing"}`);
    const token = operatorToken(values["data-dir"] ?? (process.env.DATA_DIR || "./data"));
    const moved = (await request(api, "POST", "/v1/dev/clock/advance", { token, body: { days: Number(values.days) } })) as ClockState & {
      days: DevDay[];
    };
    io.stdout(`development clock moved ${days(Number(values.days))} forward (the chain's time with it)\n`);
    for (const d of moved.days) io.stdout(`${dayLine(d)}\n`);
    printState(io, moved);
    return 0;
  },
};

function printState(io: CliIo, state: ClockState): void {
  io.stdout(
    `now ${state.now} on the service's clock, ` +
      `${state.offsetDays === 0 ? "the machine's" : `${days(state.offsetDays)} ahead of the machine's`}; ` +
      `next daily recompute at ${state.nextDailyAt}\n`,
  );
}
