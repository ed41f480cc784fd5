import { CURRENT_METHOD, METHOD_VERSIONS, parseRfc3339, toRfc3339, type MethodVersion } from "../../method";
import { asArray, asInteger, asNumber, asObject, asOneOf, asString, describe, onlyKeys, shapeError } from "../../method/shape";
import { BaseError, InvalidInputError } from "../../errors";
import { createVraiService, type VraiService } from "../../service";
import type { CheckinOutcome } from "../../service/checkins";
import { createManualClock } from "../../service/clock";
import { NotFoundError } from "../../service/errors";
import type { AgentRow } from "../../service/ports";
import { createMemoryStore } from "../../store/memory-store";
import { writeDecimal } from "../../method/decimal";
import { readJsonInput, type Command } from "../io";

const CODE = "invalid_replay";
/** Who acted, in the audit log of what a timeline does (penalties, outages, transfers, proof removals): the timeline, not an operator (V7). */
const REPLAY_ACTOR = "replay";

/**
 * One F2 event, validated as a document: types and fields. What the service would refuse (a
 * penalty code, points or days outside V7, a proof kind outside V6, a proof naming an agent or not
 * against V6, an unknown or reused id) is left to the service, whose rejection is the event's line.
 */
export type ReplayEvent =
  | { at: number; type: "claim"; agent: string; owner: string }
  | { at: number; type: "checkin"; agent: string; key: string }
  | { at: number; type: "busy"; on: boolean }
  | { at: number; type: "outage"; id: string; start: number; end: number | null }
  | { at: number; type: "outage_end"; id: string; end: number }
  | { at: number; type: "proof"; id: string; owner: string; agent: string | null; kind: string }
  | { at: number; type: "proof_removed"; id: string }
  | { at: number; type: "penalty"; id: string; agent: string; code: string; points: number; days: number }
  | { at: number; type: "penalty_revoked"; id: string }
  | { at: number; type: "score"; agent: string };

const EVENT_KEYS: Record<ReplayEvent["type"], readonly string[]> = {
  claim: ["agent", "owner"],
  checkin: ["agent", "key"],
  busy: ["on"],
  outage: ["id", "start", "end"],
  outage_end: ["id", "end"],
  proof: ["id", "owner", "agent", "kind"],
  proof_removed: ["id"],
  penalty: ["id", "agent", "code", "points", "days"],
  penalty_revoked: ["id"],
  score: ["agent"],
};
const EVENT_TYPES = Object.keys(EVENT_KEYS) as Array<ReplayEvent["type"]>;

/** A time in replay input: RFC 3339 UTC (V1), or whole Unix seconds. */
function asTime(value: unknown, path: string): number {
  if (typeof value === "number") return asInteger(CODE, value, path);
  if (typeof value === "string") {
    try {
      return parseRfc3339(value);
    } catch {
      throw shapeError(CODE, path, "a time (YYYY-MM-DDTHH:MM:SSZ or Unix seconds)", `, got ${describe(value)}`);
    }
  }
  throw shapeError(CODE, path, "a time (YYYY-MM-DDTHH:MM:SSZ or Unix seconds)", `, got ${describe(value)}`);
}

/**
 * Validates a whole F2 input before anything runs: every event's type and fields, and time order.
 * @throws InvalidInputError naming the event and field, e.g. `events[3].at: events out of time order`
 */
export function parseReplayInput(json: unknown): { method: MethodVersion; events: ReplayEvent[] } {
  const root = asObject(CODE, json, "input");
  onlyKeys(CODE, root, "input", ["method", "events"]);
  const method = root.method === undefined ? CURRENT_METHOD : asOneOf(CODE, root.method, "input.method", METHOD_VERSIONS);
  const raw = asArray(CODE, root.events, "input.events");
  const events: ReplayEvent[] = [];
  let last = -Infinity;
  for (let i = 0; i < raw.length; i++) {
    const value = raw[i];
    // Check-ins are nearly every event of a timeline. One in Unix seconds, in order, with non-empty
    // strings and nothing else is taken as it is, the parsed object itself: a copy of each would be
    // hundreds of thousands of objects living through the whole replay, which the young generation
    // copies twice. Any other event, or a check-in that is not, goes through parseEvent, which
    // validates every field and names what is wrong. The events are the same either way.
    const event: ReplayEvent = isPlainCheckin(value) && value.at >= last ? value : parseEvent(value, i, last);
    events.push(event);
    last = event.at;
  }
  return { method, events };
}

/** A check-in event `{ at, type, agent, key }` with `at` whole Unix seconds >= 0 and non-empty strings, and no other field. */
function isPlainCheckin(value: unknown): value is { at: number; type: "checkin"; agent: string; key: string } {
  if (typeof value !== "object" || value === null) return false;
  const e = value as Record<string, unknown>;
  if (e.type !== "checkin" || typeof e.at !== "number" || !Number.isSafeInteger(e.at) || e.at < 0) return false;
  if (typeof e.agent !== "string" || e.agent.length === 0 || typeof e.key !== "string" || e.key.length === 0) return false;
  // The four fields above are there; any other makes a fifth (counted without allocating Object.keys).
  let fields = 0;
  for (const _ in e) fields++;
  return fields === 4;
}

/**
 * One event of `events[i]`, validated field by field.
 * @param last the time of the event before it
 */
function parseEvent(value: unknown, i: number, last: number): ReplayEvent {
  const path = `events[${i}]`;
  const e = asObject(CODE, value, path);
  const type = asOneOf(CODE, e.type, `${path}.type`, EVENT_TYPES);
  onlyKeys(CODE, e, path, ["at", "type", ...EVENT_KEYS[type]]);
  const at = asTime(e.at, `${path}.at`);
  if (at < last)
    throw new InvalidInputError(
      CODE,
      `${path}.at: events out of time order (${toRfc3339(at)} is before the previous event's ${toRfc3339(last)})`,
    );
  const str = (k: string) => asString(CODE, e[k], `${path}.${k}`);
  switch (type) {
    case "claim":
      return { at, type, agent: str("agent"), owner: str("owner") };
    case "checkin":
      return { at, type, agent: str("agent"), key: str("key") };
    case "busy":
      if (typeof e.on !== "boolean") throw shapeError(CODE, `${path}.on`, "true or false", `, got ${describe(e.on)}`);
      return { at, type, on: e.on };
    case "outage":
      return {
        at,
        type,
        id: str("id"),
        start: asTime(e.start, `${path}.start`),
        end: e.end === null || e.end === undefined ? null : asTime(e.end, `${path}.end`),
      };
    case "outage_end":
      return { at, type, id: str("id"), end: asTime(e.end, `${path}.end`) };
    case "proof":
      return { at, type, id: str("id"), owner: str("owner"), agent: e.agent === undefined ? null : str("agent"), kind: str("kind") };
    case "proof_removed":
      return { at, type, id: str("id") };
    case "penalty":
      return {
        at,
        type,
        id: str("id"),
        agent: str("agent"),
        code: str("code"),
        points: asNumber(CODE, e.points, `${path}.points`),
        days: asNumber(CODE, e.days, `${path}.days`),
      };
    case "penalty_revoked":
      return { at, type, id: str("id") };
    case "score":
      return { at, type, agent: str("agent") };
  }
}

/** `replay` hands its output over in chunks of whole lines of at least this many bytes (64 KiB): a write per line would cost more than playing it. */
const CHUNK_BYTES = 1 << 16;
/** Room past CHUNK_BYTES for the line that crosses it: a check-in line is under 200 bytes. */
const LINE_ROOM = 512;

const ascii = (text: string): Uint8Array => Buffer.from(text, "latin1");
const OPEN = ascii('{"i":');
const REFUSED = ascii(',"result":"refused","retry_after_s":');
const CLOSE = ascii("}\n");

/**
 * The output of a replay as UTF-8 bytes, in chunks of whole lines handed to `write` as they fill.
 * Check-in lines (nearly every line of a timeline) are written byte by byte, numbers included:
 * joined as strings, then encoded for stdout, they were the largest share of replay's garbage.
 * Their bytes are those of `JSON.stringify({ i, result, ... })` with the keys in F2's order (pinned
 * by the tests); the values are integers, booleans and null, which print the same both ways.
 * Each chunk is a new buffer, never written again: `write` may keep it (stdout queues it).
 */
class Output {
  private chunk = Buffer.allocUnsafe(CHUNK_BYTES + LINE_ROOM);
  private used = 0;
  /**
   * The bytes of a counted or duplicate line between its index and its credit, by type, flags and
   * `next_heartbeat_s` (one of V3.3's two values): a handful serve a whole timeline.
   */
  private readonly middles = new Map<number, Uint8Array>();

  constructor(private readonly write: (chunk: Uint8Array) => void) {}

  /** The line of check-in event `i`. */
  checkin(i: number, outcome: CheckinOutcome): void {
    if (outcome.type === "refused") {
      this.line(i, REFUSED, outcome.retryAfterS);
      return;
    }
    const c = outcome.type === "duplicate" ? outcome.original : outcome;
    // next_heartbeat_s is whole seconds, so the key tells every combination apart.
    const key =
      c.nextHeartbeatS * 16 + (outcome.type === "duplicate" ? 8 : 0) + (c.excused ? 4 : 0) + (c.onTime === null ? 2 : c.onTime ? 1 : 0);
    let middle = this.middles.get(key);
    if (middle === undefined) {
      middle = ascii(
        `,"result":"${outcome.type}","next_heartbeat_s":${c.nextHeartbeatS},"on_time":${c.onTime},"excused":${c.excused},"credit":`,
      );
      this.middles.set(key, middle);
    }
    this.line(i, middle, c.credit);
  }

  /** Any other event's line: its index, then its fields. */
  object(i: number, fields: Record<string, unknown>): void {
    this.text(`${JSON.stringify({ i, ...fields })}\n`);
  }

  /** Hands over what is left. */
  end(): void {
    if (this.used > 0) this.flush();
  }

  /** `{"i":<i><middle><n>}` and a newline. */
  private line(i: number, middle: Uint8Array, n: number): void {
    const chunk = this.chunk;
    let at = this.used;
    chunk.set(OPEN, at);
    at = writeDecimal(chunk, at + OPEN.length, i);
    if (at >= 0) {
      chunk.set(middle, at);
      at = writeDecimal(chunk, at + middle.length, n);
    }
    // A number that is not a safe integer (never in practice): the line as text.
    if (at < 0) {
      this.text(`{"i":${i}${Buffer.from(middle).toString("latin1")}${n}}\n`);
      return;
    }
    chunk.set(CLOSE, at);
    this.used = at + CLOSE.length;
    if (this.used >= CHUNK_BYTES) this.flush();
  }

  private text(line: string): void {
    const bytes = Buffer.byteLength(line);
    if (this.used + bytes > this.chunk.length) {
      if (this.used > 0) this.flush();
      // A line longer than a chunk (an error message, say) goes on its own.
      if (bytes > this.chunk.length) {
        this.write(Buffer.from(line));
        return;
      }
    }
    this.used += this.chunk.write(line, this.used);
    if (this.used >= CHUNK_BYTES) this.flush();
  }

  private flush(): void {
    this.write(this.chunk.subarray(0, this.used));
    this.chunk = Buffer.allocUnsafe(CHUNK_BYTES + LINE_ROOM);
    this.used = 0;
  }
}

/**
 * F2: plays a timeline through the service's own code (claims, check-ins, outages, proofs,
 * penalties, scores) on the memory store and a simulated clock, one output line per event.
 * @param write receives the output in order, as UTF-8 in chunks of whole lines (each ending in a newline); it may keep each chunk
 */
export async function replay(
  input: { method: MethodVersion; events: readonly ReplayEvent[] },
  write: (chunk: Uint8Array) => void,
): Promise<void> {
  const clock = createManualClock(input.events[0]?.at ?? 0);
  let busy = false;
  const service: VraiService = createVraiService({ store: createMemoryStore(), clock, busy: () => busy, method: input.method });
  const owners = new Set<string>();
  const ensureOwner = async (ownerId: string) => {
    if (owners.has(ownerId)) return;
    await service.accounts.createOwner({ ownerId });
    owners.add(ownerId);
  };
  // Replay trusts its timeline: the agent only has to exist. One check for every check-in, so it
  // names the agent of the event being played rather than closing over each event's.
  let checkingIn = "";
  const knownAgent = (agent: AgentRow | null): asserts agent is AgentRow => {
    if (!agent) throw new NotFoundError("agent_not_found", `agent ${checkingIn} is not claimed`);
  };

  const events = input.events;
  const output = new Output(write);
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    clock.set(e.at);
    try {
      if (e.type === "checkin") {
        checkingIn = e.agent;
        output.checkin(i, await service.checkins.checkIn(e.agent, e.key, knownAgent));
      } else if (e.type === "busy") {
        busy = e.on;
        output.object(i, { result: "ok" });
      } else {
        output.object(i, await play(service, e));
      }
    } catch (error) {
      if (!(error instanceof BaseError) || error.status >= 500) throw error;
      output.object(i, { result: "rejected", error: error.message });
    }
  }
  output.end();

  async function play(s: VraiService, e: Exclude<ReplayEvent, { type: "checkin" | "busy" }>): Promise<Record<string, unknown>> {
    switch (e.type) {
      case "claim": {
        await ensureOwner(e.owner);
        const agent = await s.store.read.getAgent(e.agent);
        if (!agent) await s.accounts.claimNewAgent(e.owner, { agentId: e.agent });
        else if (agent.ownerId === e.owner) await s.accounts.reclaim(e.owner, e.agent);
        else await s.accounts.transfer(e.agent, e.owner, "replay: claimed by another owner", REPLAY_ACTOR);
        return { result: "ok" };
      }
      case "outage":
        try {
          await s.operator.declareOutage({ id: e.id, start: e.start, end: e.end, reason: "replay" }, REPLAY_ACTOR);
          return { result: "declared" };
        } catch (error) {
          if (error instanceof BaseError && error.status < 500) return { result: "rejected", error: error.message };
          throw error;
        }
      case "outage_end":
        await s.operator.closeOutage(e.id, e.end, REPLAY_ACTOR);
        return { result: "ok" };
      case "proof":
        await ensureOwner(e.owner);
        await s.identity.recordProof(
          { id: e.id, kind: e.kind, ownerId: e.owner, agentId: e.agent, subject: e.id, binding: null, evidence: { replay: true } },
          { agentField: "agent" },
        );
        // The service recomputes an owner's agents in the background; the timeline does it before its next event.
        await s.ownerRecomputes.drain();
        return { result: "ok" };
      case "proof_removed":
        await s.identity.removeProof(e.id, "replay", { actor: REPLAY_ACTOR });
        await s.ownerRecomputes.drain();
        return { result: "ok" };
      case "penalty":
        await s.operator.addPenalty(
          { id: e.id, agentId: e.agent, code: e.code, points: e.points, days: e.days, reason: "replay" },
          REPLAY_ACTOR,
        );
        return { result: "ok" };
      case "penalty_revoked":
        await s.operator.revokePenalty(e.id, "replay", REPLAY_ACTOR);
        return { result: "ok" };
      case "score": {
        const row = await s.scoring.scoreNow(e.agent);
        return row.result as Record<string, unknown>;
      }
    }
  }
}

/** F2 `vrai replay [file]`. */
export const command: Command = {
  name: "replay",
  usage: "replay [file]",
  summary: "play a timeline of claims, check-ins, outages, proofs, penalties and scores through the service's rules (F2)",
  async run(args, io) {
    await replay(parseReplayInput(await readJsonInput(args, io)), (chunk) => io.stdout(chunk));
    return 0;
  },
};
