import { parseRfc3339, PROOF_KINDS, IDENTITY_PROOFS, PENALTY_CODES, type ProofKind } from "../../method";
import { asArray, asInteger, asObject, asOneOf, asString, describe, onlyKeys, shapeError } from "../../method/shape";
import { BaseError, InvalidInputError } from "../../errors";
import { createVraiService, type VraiService } from "../../service";
import { createManualClock } from "../../service/clock";
import { NotFoundError } from "../../service/errors";
import type { AgentRow } from "../../service/ports";
import { createMemoryStore } from "../../store/memory-store";
import { readJsonInput, type Command } from "../io";

const CODE = "invalid_replay";

/** One F2 event, validated. */
export type ReplayEvent =
  | { at: number; type: "claim"; agent: string; owner: string }
  | { at: number; type: "checkin"; agent: string; key: string }
  | { at: number; type: "busy"; on: boolean }
  | { at: number; type: "outage"; id: string; start: number; end: number | null }
  | { at: number; type: "outage_end"; id: string; end: number }
  | { at: number; type: "proof"; id: string; owner: string; agent: string | null; kind: ProofKind }
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
export function parseReplayInput(json: unknown): { method: "0.1" | "0.2"; events: ReplayEvent[] } {
  const root = asObject(CODE, json, "input");
  onlyKeys(CODE, root, "input", ["method", "events"]);
  const method = root.method === undefined ? "0.2" : asOneOf(CODE, root.method, "input.method", ["0.1", "0.2"] as const);
  const raw = asArray(CODE, root.events, "input.events");
  const events: ReplayEvent[] = [];
  let last = -Infinity;
  raw.forEach((value, i) => {
    const path = `events[${i}]`;
    const e = asObject(CODE, value, path);
    const type = asOneOf(CODE, e.type, `${path}.type`, EVENT_TYPES);
    onlyKeys(CODE, e, path, ["at", "type", ...EVENT_KEYS[type]]);
    const at = asTime(e.at, `${path}.at`);
    if (at < last) throw new InvalidInputError(CODE, `${path}.at: events out of time order (${at} is before the previous event's ${last})`);
    last = at;
    const str = (k: string) => asString(CODE, e[k], `${path}.${k}`);
    switch (type) {
      case "claim": events.push({ at, type, agent: str("agent"), owner: str("owner") }); break;
      case "checkin": events.push({ at, type, agent: str("agent"), key: str("key") }); break;
      case "busy":
        if (typeof e.on !== "boolean") throw shapeError(CODE, `${path}.on`, "true or false", `, got ${describe(e.on)}`);
        events.push({ at, type, on: e.on });
        break;
      case "outage":
        events.push({ at, type, id: str("id"), start: asTime(e.start, `${path}.start`), end: e.end === null || e.end === undefined ? null : asTime(e.end, `${path}.end`) });
        break;
      case "outage_end": events.push({ at, type, id: str("id"), end: asTime(e.end, `${path}.end`) }); break;
      case "proof": {
        const kind = asOneOf(CODE, e.kind, `${path}.kind`, PROOF_KINDS);
        const agent = e.agent === undefined ? null : str("agent");
        if (IDENTITY_PROOFS[kind].belongsTo === "agent" && agent === null) throw shapeError(CODE, `${path}.agent`, `an agent for a ${kind} proof`);
        events.push({ at, type, id: str("id"), owner: str("owner"), agent: IDENTITY_PROOFS[kind].belongsTo === "owner" ? null : agent, kind });
        break;
      }
      case "proof_removed": events.push({ at, type, id: str("id") }); break;
      case "penalty":
        events.push({
          at, type, id: str("id"), agent: str("agent"), code: asOneOf(CODE, e.code, `${path}.code`, PENALTY_CODES),
          points: asInteger(CODE, e.points, `${path}.points`), days: asInteger(CODE, e.days, `${path}.days`),
        });
        break;
      case "penalty_revoked": events.push({ at, type, id: str("id") }); break;
      case "score": events.push({ at, type, agent: str("agent") }); break;
    }
  });
  return { method, events };
}

/** Replay trusts its timeline: the agent only has to exist. */
function knownAgent(agentId: string) {
  return (agent: AgentRow | null): asserts agent is AgentRow => {
    if (!agent) throw new NotFoundError("agent_not_found", `agent ${agentId} is not claimed`);
  };
}

/**
 * F2: plays a timeline through the service's own code (claims, check-ins, outages, proofs,
 * penalties, scores) on the memory store and a simulated clock; yields one output line per event.
 */
export async function* replay(input: { method: "0.1" | "0.2"; events: readonly ReplayEvent[] }): AsyncGenerator<Record<string, unknown>> {
  const clock = createManualClock(input.events[0]?.at ?? 0);
  let busy = false;
  const service: VraiService = createVraiService({ store: createMemoryStore(), clock, busy: () => busy, method: input.method });
  const owners = new Set<string>();
  const ensureOwner = async (ownerId: string) => {
    if (owners.has(ownerId)) return;
    await service.accounts.createOwner({ ownerId });
    owners.add(ownerId);
  };

  for (let i = 0; i < input.events.length; i++) {
    const e = input.events[i];
    clock.set(e.at);
    try {
      yield { i, ...(await play(service, e)) };
    } catch (error) {
      if (!(error instanceof BaseError) || error.status >= 500) throw error;
      yield { i, result: "rejected", error: error.message };
    }
  }

  async function play(s: VraiService, e: ReplayEvent): Promise<Record<string, unknown>> {
    switch (e.type) {
      case "claim": {
        await ensureOwner(e.owner);
        const agent = await s.store.read.getAgent(e.agent);
        if (!agent) await s.accounts.claimNewAgent(e.owner, { agentId: e.agent });
        else if (agent.ownerId === e.owner) await s.accounts.reclaim(e.owner, e.agent);
        else await s.accounts.transfer(e.agent, e.owner, "replay: claimed by another owner");
        return { result: "ok" };
      }
      case "checkin": {
        const outcome = await s.checkins.checkIn(e.agent, e.key, knownAgent(e.agent));
        if (outcome.type === "refused") return { result: "refused", retry_after_s: outcome.retryAfterS };
        const c = outcome.type === "duplicate" ? outcome.original : outcome;
        return { result: outcome.type, next_heartbeat_s: c.nextHeartbeatS, on_time: c.onTime, excused: c.excused, credit: c.credit };
      }
      case "busy":
        busy = e.on;
        return { result: "ok" };
      case "outage":
        try {
          await s.operator.declareOutage({ id: e.id, start: e.start, end: e.end, reason: "replay" });
          return { result: "declared" };
        } catch (error) {
          if (error instanceof BaseError && error.status < 500) return { result: "rejected", error: error.message };
          throw error;
        }
      case "outage_end":
        await s.operator.closeOutage(e.id, e.end);
        return { result: "ok" };
      case "proof":
        await ensureOwner(e.owner);
        await s.identity.recordProof({ id: e.id, kind: e.kind, ownerId: e.owner, agentId: e.agent, subject: e.id, binding: null, evidence: { replay: true } });
        return { result: "ok" };
      case "proof_removed":
        await s.identity.removeProof(e.id, "replay", { actor: "replay" });
        return { result: "ok" };
      case "penalty":
        await s.operator.addPenalty({ id: e.id, agentId: e.agent, code: e.code, points: e.points, days: e.days, reason: "replay" });
        return { result: "ok" };
      case "penalty_revoked":
        await s.operator.revokePenalty(e.id, "replay");
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
  summary: "replay [file]   play a timeline of claims, check-ins, outages, proofs, penalties and scores through the service's rules (F2)",
  async run(args, io) {
    const input = parseReplayInput(await readJsonInput(args, io));
    let buffer = "";
    for await (const line of replay(input)) {
      buffer += `${JSON.stringify(line)}\n`;
      if (buffer.length > 1 << 16) {
        io.stdout(buffer);
        buffer = "";
      }
    }
    io.stdout(buffer);
    return 0;
  },
};
