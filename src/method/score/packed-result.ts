/**
 * A score's result (`ScoreResult`, V5–V10) in its compact form: what a stored score keeps of its
 * result, in the table and in the API server's latest-score cache alike, about 150 bytes for a
 * result of 3 kB of text, and `renderResult`, the one function that renders it as the API serves it.
 *
 * Most of a result's text is its shape (keys, the 30 window days' dates, which follow from `at`) and
 * values its score keeps anyway (agent, `at`, total, digest: the `ResultKey`). What is left is a few
 * small numbers a day. Rendering writes the text directly, byte for byte what `JSON.stringify` makes of
 * the result the engine computed (the property test of packed-result.test.ts holds it to that): no
 * object is built and no zlib stream opened per read.
 * Pure: no I/O.
 */
import { BaseError } from "../../errors";
import { DAY_S, toRfc3339, windowDays } from "../time";
import { BANDS, type ScoreResult } from "./compute";
import { PROOF_KINDS } from "./methods";
import { PENALTY_CODES } from "./integrity";

/** What a score keeps of its result apart from the compact form: its agent, instant (unix seconds), digest and total. */
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
  done(): Uint8Array {
    return Uint8Array.from(this.bytes);
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
  skip(bytes: number): void {
    this.at += bytes;
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

/** The `ResultKey` of a result: what its score keeps of it. */
export const resultKeyOf = (result: ScoreResult, at: number): ResultKey => ({
  agentId: result.agent,
  at,
  sha256: result.sha256,
  total: result.total,
});

/**
 * The compact form of a result the method engine computed (`at` its instant in unix seconds), or null
 * for a result of another shape (none the engine makes), which has no compact form.
 * @example renderResult(packResult(result, at)!, resultKeyOf(result, at)) === JSON.stringify(result) // true
 */
export function packResult(result: ScoreResult, at: number): Uint8Array | null {
  return tryPack(result, at);
}

/**
 * The compact form of a result as some text had it (a score stored as text before the compact form),
 * or null when its rendering would not be that text byte for byte.
 */
export function packResultText(text: string, at: number): Uint8Array | null {
  let result: ScoreResult;
  try {
    result = JSON.parse(text) as ScoreResult;
  } catch {
    return null;
  }
  const packed = tryPack(result, at);
  return packed !== null && renderResult(packed, resultKeyOf(result, at)) === text ? packed : null;
}

function tryPack(result: ScoreResult, at: number): Uint8Array | null {
  try {
    const { identity, reliability, integrity } = result.components;
    const days = windowAt(at);
    if (result.at !== toRfc3339(at)) return null;
    if (result.window.length !== days.length || result.window.some((d, i) => d.day !== days[i])) return null;
    if (!isSafe(identity.value, reliability.value, reliability.creditS, integrity.value)) return null;
    const w = new Writer();
    w.u8(VERSION);
    w.str(result.method);
    w.u8(known(BANDS.indexOf(result.band)));
    w.u8(known(STATES.indexOf(result.state)));
    w.int(identity.value);
    w.uint(identity.proofs.length);
    for (const kind of identity.proofs) w.u8(known(PROOF_KINDS.indexOf(kind)));
    w.int(reliability.value);
    w.int(reliability.creditS);
    w.int(integrity.value);
    w.uint(integrity.penalties.length);
    for (const p of integrity.penalties) {
      if (!isSafe(p.points)) return null;
      w.str(p.id);
      w.u8(known(PENALTY_CODES.indexOf(p.code)));
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
      beforeClaim |= d.before_claim ? 1 << (i % 8) : 0;
      if (i % 8 === 7 || i === result.window.length - 1) {
        w.u8(beforeClaim);
        beforeClaim = 0;
      }
    }
    return w.done();
  } catch {
    // A value of another type or out of every table: not a shape of the engine's.
    return null;
  }
}

/** An index into one of the tables (bands, states, kinds, codes); -1 (not in it) throws, for `tryPack` to refuse the result. */
function known(index: number): number {
  if (index < 0) throw new RangeError("not in the table");
  return index;
}

/** How many shapes `resultShape` tells apart. */
export const RESULT_SHAPES = 4;

/**
 * Which of `renderResult`'s branches the result `packed` holds runs, as a number below RESULT_SHAPES: 1 when it names
 * proofs, plus 2 when it lists penalties. A started server renders results of every shape its cache holds before it
 * reports ready (`ScoreCache.sample`), so that the rendering V8 has optimised is not thrown away at the first agent with a
 * penalty under traffic (issue #30). Reads only the head of the compact form.
 * @example resultShape(packResult(result, at)!) // 3 for a result with a github proof and a penalty
 */
export function resultShape(packed: Uint8Array): number {
  const r = new Reader(packed);
  if (r.u8() !== VERSION) throw new BaseError("result_unknown_form", "a compact score result of an unknown version");
  r.skip(r.uint()); // method
  r.skip(2); // band, state
  r.uint(); // identity
  const proofs = r.uint();
  r.skip(proofs); // their kinds
  r.uint(); // reliability
  r.uint(); // credit
  r.uint(); // integrity
  return (proofs > 0 ? 1 : 0) + (r.uint() > 0 ? 2 : 0);
}

/**
 * The JSON text of the result `packed` holds, with its score's `key`: exactly what `JSON.stringify`
 * makes of the result the engine computed.
 */
export function renderResult(packed: Uint8Array, key: ResultKey): string {
  const r = new Reader(packed);
  if (r.u8() !== VERSION) throw new BaseError("result_unknown_form", "a compact score result of an unknown version");
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
    penalties.push(
      `{"id":${JSON.stringify(id)},"code":${JSON.stringify(code)},"points":${points},` +
        `"addedAt":${JSON.stringify(addedAt)},"expiresAt":${JSON.stringify(expiresAt)}}`,
    );
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
        lines[k] =
          `{"day":"${days[k]}","checkins":${values[3 * k]},"on_time":${values[3 * k + 1]},"coverage_s":${values[3 * k + 2]},` +
          `"before_claim":${(bits >> (k % 8)) & 1 ? "true" : "false"}}`;
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
