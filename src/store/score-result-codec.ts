/**
 * A Vrai score's result (ScoreResult, src/method/score/compute.ts) in about 150 bytes, for the API
 * server's latest-score cache (src/store/score-cache.ts), which must give back the result's JSON text
 * exactly as it was given.
 *
 * Most of a result's 3 kB of text is its shape (keys, the 30 window days' dates, which follow from
 * `at`) and values the cache keeps anyway (agent, `at`, total, digest). What is left is a few small
 * numbers a day. `encodeResult` keeps those, and only when the text rendered back from them is the
 * given text byte for byte; anything else (another shape, a result of a future method) gets `null`, and
 * the cache deflates the text instead. Decoding writes the text directly: no zlib stream per read (each
 * one's native handle held its objects through two young-generation collections of the API server) and
 * a few microseconds.
 * Pure: no I/O.
 */
import { BANDS, DAY_S, PENALTY_CODES, PROOF_KINDS, toRfc3339, windowDays, type ScoreResult } from "../method";

/** What the cache knows of the score apart from its result: the result must agree with it. */
export type ResultKey = { agentId: string; at: number; sha256: string; total: number };

const VERSION = 1;
const STATES = ["provisional", "established"] as const;

/** Unsigned LEB128 and length-prefixed strings into a growing byte array. */
class Writer {
  private bytes: number[] = [];
  u8(n: number) {
    this.bytes.push(n);
  }
  uint(n: number) {
    while (n >= 0x80) {
      this.bytes.push((n % 0x80) | 0x80);
      n = Math.floor(n / 0x80);
    }
    this.bytes.push(n);
  }
  /** Zigzag: small negative numbers stay small. */
  int(n: number) {
    this.uint(n < 0 ? -2 * n - 1 : 2 * n);
  }
  str(s: string) {
    const b = Buffer.from(s, "utf8");
    this.uint(b.length);
    for (const x of b) this.bytes.push(x);
  }
  done(): Buffer {
    return Buffer.from(this.bytes);
  }
}

class Reader {
  private at = 0;
  constructor(private readonly buf: Uint8Array) {}
  u8(): number {
    return this.buf[this.at++];
  }
  uint(): number {
    let n = 0;
    for (let scale = 1; ; scale *= 0x80) {
      const b = this.buf[this.at++];
      n += (b & 0x7f) * scale;
      if (b < 0x80) return n;
    }
  }
  int(): number {
    const z = this.uint();
    return z % 2 === 1 ? -(z + 1) / 2 : z / 2;
  }
  str(): string {
    const length = this.uint();
    this.at += length;
    return Buffer.from(this.buf.buffer, this.buf.byteOffset + this.at - length, length).toString("utf8");
  }
}

const isSafe = (...values: number[]) => values.every((v) => Number.isSafeInteger(v));

let windowOf: { at: number; days: readonly string[] } | null = null;
/** The window days of `at` (V1), remembered for the last `at` asked (a day's scores share it). */
function windowAt(at: number): readonly string[] {
  if (windowOf === null || windowOf.at !== at) windowOf = { at, days: windowDays(at) };
  return windowOf.days;
}

/**
 * The bytes of `result`, or null when they would not render back to exactly `text` (then the caller
 * keeps the text otherwise): `text` is the result's JSON text as stored, `key` what the cache keeps of its score.
 */
export function encodeResult(result: ScoreResult, text: string, key: ResultKey): Buffer | null {
  try {
    const { identity, reliability, integrity } = result.components;
    const days = windowAt(key.at);
    if (result.agent !== key.agentId || result.at !== toRfc3339(key.at) || result.sha256 !== key.sha256 || result.total !== key.total) return null;
    if (result.window.length !== days.length || result.window.some((d, i) => d.day !== days[i])) return null;
    if (!isSafe(identity.value, reliability.value, reliability.creditS, integrity.value)) return null;
    const w = new Writer();
    w.u8(VERSION);
    w.str(result.method);
    w.u8(BANDS.indexOf(result.band));
    w.u8(STATES.indexOf(result.state));
    w.int(identity.value);
    w.uint(identity.proofs.length);
    for (const kind of identity.proofs) w.u8(PROOF_KINDS.indexOf(kind));
    w.int(reliability.value);
    w.int(reliability.creditS);
    w.int(integrity.value);
    w.uint(integrity.penalties.length);
    for (const p of integrity.penalties) {
      if (!isSafe(p.points)) return null;
      w.str(p.id);
      w.u8(PENALTY_CODES.indexOf(p.code));
      w.int(p.points);
      w.str(p.addedAt);
      w.str(p.expiresAt);
    }
    let beforeClaim = 0;
    for (let i = 0; i < result.window.length; i++) {
      const d = result.window[i];
      if (!isSafe(d.checkins, d.on_time, d.coverage_s) || d.checkins < 0 || d.on_time < 0 || d.coverage_s < 0) return null;
      // Most days: every check-in on time, the whole day covered (a byte each, then).
      w.uint(d.checkins);
      w.int(d.checkins - d.on_time);
      w.int(DAY_S - d.coverage_s);
      beforeClaim |= d.before_claim ? 1 << i % 8 : 0;
      if (i % 8 === 7 || i === result.window.length - 1) {
        w.u8(beforeClaim);
        beforeClaim = 0;
      }
    }
    const bytes = w.done();
    return decodeResult(bytes, key) === text ? bytes : null;
  } catch {
    // A value of another type or out of every table: not a shape this codec keeps.
    return null;
  }
}

/** The JSON text of the result `encodeResult` made `bytes` of, with its score's `key`. */
export function decodeResult(bytes: Uint8Array, key: ResultKey): string {
  const r = new Reader(bytes);
  if (r.u8() !== VERSION) throw new Error("score result bytes of an unknown version");
  const method = r.str();
  const band = BANDS[r.u8()];
  const state = STATES[r.u8()];
  const identityValue = r.int();
  const proofs: string[] = [];
  for (let n = r.uint(); n > 0; n--) proofs.push(JSON.stringify(PROOF_KINDS[r.u8()]));
  const reliabilityValue = r.int();
  const creditS = r.int();
  const integrityValue = r.int();
  const penalties: string[] = [];
  for (let n = r.uint(); n > 0; n--) {
    const id = r.str();
    const code = PENALTY_CODES[r.u8()];
    const points = r.int();
    const addedAt = r.str();
    const expiresAt = r.str();
    penalties.push(`{"id":${JSON.stringify(id)},"code":${JSON.stringify(code)},"points":${points},"addedAt":${JSON.stringify(addedAt)},"expiresAt":${JSON.stringify(expiresAt)}}`);
  }
  const days = windowAt(key.at);
  const lines: string[] = new Array(days.length);
  const values: number[] = new Array(3 * days.length);
  for (let i = 0; i < days.length; i++) {
    values[3 * i] = r.uint();
    values[3 * i + 1] = values[3 * i] - r.int();
    values[3 * i + 2] = DAY_S - r.int();
    if (i % 8 === 7 || i === days.length - 1) {
      const bits = r.u8();
      for (let k = i - (i % 8); k <= i; k++) {
        lines[k] = `{"day":"${days[k]}","checkins":${values[3 * k]},"on_time":${values[3 * k + 1]},"coverage_s":${values[3 * k + 2]},"before_claim":${(bits >> k % 8) & 1 ? "true" : "false"}}`;
      }
    }
  }
  return (
    `{"scoreType":"vrai","method":${JSON.stringify(method)},"agent":${JSON.stringify(key.agentId)},"at":"${toRfc3339(key.at)}","total":${key.total},` +
    `"band":"${band}","state":"${state}","components":{"identity":{"value":${identityValue},"proofs":[${proofs.join(",")}]},` +
    `"reliability":{"value":${reliabilityValue},"creditS":${creditS}},"integrity":{"value":${integrityValue},"penalties":[${penalties.join(",")}],` +
    `"shield":{"active":false}}},"window":[${lines.join(",")}],"sha256":${JSON.stringify(key.sha256)}}`
  );
}
