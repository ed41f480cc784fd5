/**
 * The compact form in which the SQL store keeps a score's inputs document (V9, migration 010).
 *
 * A document is a header (claim, proofs, penalties, `other_checkin_days`) and up to 30 window-day
 * lines (docs/inputs.md). Most of its bytes are day lines the agent's `agent_days` rows already hold:
 * `checkins`, `on_time`, `credit_s` and `digest` belong to the day a check-in arrived (V5, V10), so
 * once a day has ended and every check-in that arrived in it is committed they never change again.
 * Only `coverage_s` can still grow later (the interval of the next on-time or excused check-in
 * reaches back into the day, V10), so each day's coverage is kept in the score as it was at `at`.
 *
 * So a stored score keeps: the header, each listed day's position in the window and coverage, and
 * the whole line only of days that ended less than `SETTLED_AFTER_S` before `at` (the last window
 * day of a daily score, whose check-ins may have been committed a moment after midnight). The other
 * lines are read back from `agent_days` (same agent, same claim) when the document is rebuilt, and
 * the rebuilt document's SHA-256 must be the stored one: a fact that changed under a stored score
 * is detected, never served as if it were the score's (`vrai recompute --verify` reports it).
 * About 150 bytes for a month of hourly check-ins, where the canonical text is about 5 KB.
 * Pure: no database here (the SQL is the store's).
 */
import { BaseError } from "../errors";
import {
  DAY_S,
  dayNumber,
  dayStart,
  parseRfc3339,
  PENALTY_CODES,
  PROOF_KINDS,
  toRfc3339,
  WINDOW_DAYS,
  windowDays,
  type InputDay,
  type InputPenalty,
  type MethodVersion,
  type ScoreInputs,
} from "../method";

/** A day line kept in `agent_days`: what a rebuilt document takes from it. */
export type SettledDay = { checkins: number; onTime: number; creditS: number; digest: string };

/** A day line is read back from `agent_days` only when its day ended at least this long before `at`. */
export const SETTLED_AFTER_S = DAY_S;

const VERSION = 1;
const FULL_LINE = 1;

/** Whether `day`'s line of a document scored at `at` is taken from `agent_days` (settled) rather than kept whole. */
export function isSettledDay(day: string, at: number): boolean {
  return dayStart(day) + DAY_S + SETTLED_AFTER_S <= at;
}

/** Bytes an unsigned LEB128 number takes at most (a safe integer). */
const MAX_UINT_BYTES = 8;

/** An unsigned LEB128 writer into a buffer sized for the worst case up front. */
class Writer {
  private readonly buf: Buffer;
  private at = 0;
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }
  u8(n: number) {
    this.buf[this.at++] = n;
  }
  uint(n: number) {
    if (!Number.isSafeInteger(n) || n < 0) throw new BaseError("score_facts_unencodable", `cannot store ${n} compactly`);
    while (n >= 0x80) {
      this.buf[this.at++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.buf[this.at++] = n;
  }
  hex(s: string) {
    this.at += this.buf.write(s, this.at, "hex");
  }
  utf8(s: string) {
    this.at += this.buf.write(s, this.at, "utf8");
  }
  done(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.at));
  }
}

let windowCache: { dayNumber: number; days: readonly string[]; position: ReadonlyMap<string, number> } | null = null;

/** V1 window of `at` with each day's position, memoised on the day of `at` (a daily recompute scores everyone at one instant). */
function windowOf(at: number): { days: readonly string[]; position: ReadonlyMap<string, number> } {
  const d = dayNumber(at);
  if (windowCache === null || windowCache.dayNumber !== d) {
    const days = windowDays(at);
    windowCache = { dayNumber: d, days, position: new Map(days.map((day, i) => [day, i])) };
  }
  return windowCache;
}

/** Whether the window day at `position` (0 = the oldest) of a document scored at `at` is settled (`isSettledDay`). */
const settledAt = (position: number, at: number) => (dayNumber(at) - WINDOW_DAYS + position + 1) * DAY_S + SETTLED_AFTER_S <= at;

class Reader {
  private at = 0;
  constructor(private readonly buf: Uint8Array) {}
  private need(n: number) {
    if (this.at + n > this.buf.length) throw new BaseError("score_facts_corrupt", "stored score facts end early");
  }
  u8(): number {
    this.need(1);
    return this.buf[this.at++];
  }
  uint(): number {
    let n = 0;
    for (let scale = 1; ; scale *= 0x80) {
      const b = this.u8();
      n += (b & 0x7f) * scale;
      if (b < 0x80) return n;
      if (scale > 2 ** 49) throw new BaseError("score_facts_corrupt", "stored score facts hold an oversized number");
    }
  }
  raw(n: number): Uint8Array {
    this.need(n);
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
  end() {
    if (this.at !== this.buf.length) throw new BaseError("score_facts_corrupt", "stored score facts have trailing bytes");
  }
}

// The header keeps the proof kinds as one byte of flags, a bit per kind at its index in PROOF_KINDS:
// a ninth kind needs a new VERSION with a wider field, not a bit that the byte would drop.
if (PROOF_KINDS.length > 8)
  throw new Error(`score facts keep 8 proof kinds, the method knows ${PROOF_KINDS.length}: widen the header's field`);

/**
 * The compact form of `inputs` (scored at `at`): everything but the settled day lines' figures.
 * @example encodeScoreFacts(inputs, at).length // about 150 bytes for 30 days of hourly check-ins
 */
export function encodeScoreFacts(inputs: ScoreInputs, at: number): Buffer {
  let size = 2 + 3 * MAX_UINT_BYTES + inputs.days.length * (2 + 4 * MAX_UINT_BYTES + 32);
  for (const p of inputs.penalties) size += 1 + 5 * MAX_UINT_BYTES + Buffer.byteLength(p.id, "utf8");
  const w = new Writer(size);
  w.u8(VERSION);
  w.uint(parseRfc3339(inputs.claimed_at));
  let proofs = 0;
  for (const kind of inputs.proofs) proofs |= 1 << PROOF_KINDS.indexOf(kind);
  w.u8(proofs);
  w.uint(inputs.other_checkin_days);
  w.uint(inputs.penalties.length);
  for (const p of inputs.penalties) {
    w.uint(Buffer.byteLength(p.id, "utf8"));
    w.utf8(p.id);
    w.u8(PENALTY_CODES.indexOf(p.code));
    w.uint(p.points);
    w.uint(p.days);
    w.uint(parseRfc3339(p.added_at));
  }
  const { position: positionOf } = windowOf(at);
  w.uint(inputs.days.length);
  for (const d of inputs.days) {
    const position = positionOf.get(d.day);
    if (position === undefined) throw new BaseError("score_facts_unencodable", `day ${d.day} is not in the window of ${toRfc3339(at)}`);
    const full = !settledAt(position, at);
    w.u8(position);
    w.u8(full ? FULL_LINE : 0);
    w.uint(d.coverage_s);
    if (full) {
      w.uint(d.checkins);
      w.uint(d.on_time);
      w.uint(d.credit_s);
      if (d.checkins > 0) w.hex(d.digest);
    }
  }
  return w.done();
}

/** The window days whose lines a stored form takes from `agent_days`, to read them before `decodeScoreFacts`. */
export function settledDaysOf(facts: Uint8Array, at: number): string[] {
  const r = new Reader(facts);
  readHeader(r);
  const window = windowOf(at).days;
  const out: string[] = [];
  for (let n = r.uint(); n > 0; n--) {
    const { day, full } = readDayHead(r, window);
    if (full) skipLine(r);
    else out.push(day);
  }
  return out;
}

function readHeader(r: Reader): { claimedAt: number; proofs: number; otherDays: number; penalties: InputPenalty[] } {
  const version = r.u8();
  if (version !== VERSION) throw new BaseError("score_facts_corrupt", `stored score facts have unknown version ${version}`);
  const claimedAt = r.uint();
  const proofs = r.u8();
  const otherDays = r.uint();
  const penalties: InputPenalty[] = [];
  for (let n = r.uint(); n > 0; n--) {
    const id = Buffer.from(r.raw(r.uint())).toString("utf8");
    const code = PENALTY_CODES[r.u8()];
    if (code === undefined) throw new BaseError("score_facts_corrupt", "stored score facts hold an unknown penalty code");
    const points = r.uint();
    const days = r.uint();
    penalties.push({ id, code, points, days, added_at: toRfc3339(r.uint()) });
  }
  return { claimedAt, proofs, otherDays, penalties };
}

function readDayHead(r: Reader, window: readonly string[]): { day: string; full: boolean; coverage: number } {
  const day = window[r.u8()];
  if (day === undefined) throw new BaseError("score_facts_corrupt", "stored score facts name a day outside the window");
  const full = (r.u8() & FULL_LINE) !== 0;
  return { day, full, coverage: r.uint() };
}

function readLine(r: Reader): SettledDay {
  const checkins = r.uint();
  const onTime = r.uint();
  const creditS = r.uint();
  const digest = checkins > 0 ? Buffer.from(r.raw(32)).toString("hex") : "";
  return { checkins, onTime, creditS, digest };
}

const skipLine = (r: Reader) => void readLine(r);

/**
 * The inputs document a stored form was made from, with the settled lines taken from `settled`
 * (the agent's `agent_days` rows of that claim, by day). The caller checks the SHA-256.
 * @throws BaseError `score_facts_corrupt`, or `score_facts_missing_day` when a settled day has no row
 */
export function decodeScoreFacts(
  facts: Uint8Array,
  score: { agent: string; method: MethodVersion; at: number },
  settled: ReadonlyMap<string, SettledDay>,
): ScoreInputs {
  const r = new Reader(facts);
  const header = readHeader(r);
  const window = windowOf(score.at).days;
  const days: InputDay[] = [];
  for (let n = r.uint(); n > 0; n--) {
    const { day, full, coverage } = readDayHead(r, window);
    const line = full ? readLine(r) : settled.get(day);
    if (!line)
      throw new BaseError(
        "score_facts_missing_day",
        `the day aggregate of ${day} that agent ${score.agent}'s score of ${toRfc3339(score.at)} refers to is missing`,
      );
    days.push({ day, checkins: line.checkins, on_time: line.onTime, credit_s: line.creditS, coverage_s: coverage, digest: line.digest });
  }
  r.end();
  return {
    scoreType: "vrai",
    method: score.method,
    agent: score.agent,
    at: toRfc3339(score.at),
    claimed_at: toRfc3339(header.claimedAt),
    proofs: PROOF_KINDS.filter((_, i) => (header.proofs & (1 << i)) !== 0),
    penalties: header.penalties,
    days,
    other_checkin_days: header.otherDays,
  };
}
