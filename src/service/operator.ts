import { PENALTY_CODES, PENALTY_DAYS, PENALTY_POINTS, toRfc3339, validateOutageClose, validateOutageDeclaration } from "../method";
import { InvalidInputError } from "../errors";
import type { Clock } from "./clock";
import { ConflictError, NotFoundError } from "./errors";
import { newEvent } from "./events/record";
import type { OutageRow, PenaltyCode, PenaltyRow, Store, StoreTx } from "./ports";
import { generateId } from "./secrets";

const BUSY_SETTING = "busy";

/**
 * The actor of an operator action no named operator took: every row written before operators had
 * names (migration 007), and callers acting for no one in particular (`vrai replay`'s timeline).
 */
export const UNNAMED_OPERATOR = "operator";

/** What operators do (V4.4, V7): penalties, declared outages and the busy switch, each logged with who did it. */
export type Operator = {
  addPenalty(
    input: { id?: string; agentId: string; code: string; points: number; days: number; reason: string },
    actor?: string,
  ): Promise<PenaltyRow>;
  revokePenalty(id: string, reason: string, actor?: string): Promise<PenaltyRow>;
  declareOutage(input: { id?: string; start: number; end: number | null; reason: string }, actor?: string): Promise<OutageRow>;
  closeOutage(id: string, end: number, actor?: string): Promise<OutageRow>;
  setBusy(on: boolean, reason: string, actor?: string): Promise<void>;
  isBusySwitchOn(): Promise<boolean>;
};

/**
 * What only an operator does: penalties (V7), declared outages (V4) and the busy switch (V3.3).
 * Every change is written to the audit log with who, when and why, in the same transaction; `actor`
 * is the operator's name (`operators.authenticate`), kept on the penalty or window too.
 * @param deps.onPenaltyChanged recomputes the agent's score at once (V9), inside the transaction
 */
export function createOperator(deps: {
  store: Store;
  clock: Clock;
  onPenaltyChanged?: (tx: StoreTx, agentId: string, at: number) => Promise<void>;
  /** Told after the busy switch changed, so this instance applies it at once. */
  onBusyChanged?: (on: boolean) => void;
}): Operator {
  const { store, clock } = deps;

  /** Adds a penalty to an agent (V7); rejected when its code, points or days are out of range. */
  async function addPenalty(
    input: { id?: string; agentId: string; code: string; points: number; days: number; reason: string },
    actor = UNNAMED_OPERATOR,
  ): Promise<PenaltyRow> {
    if (!(PENALTY_CODES as readonly string[]).includes(input.code)) {
      throw new InvalidInputError("penalty_code_invalid", `penalty code must be one of ${PENALTY_CODES.join(", ")}`);
    }
    if (!Number.isInteger(input.points) || input.points < PENALTY_POINTS.min || input.points > PENALTY_POINTS.max) {
      throw new InvalidInputError("penalty_points_invalid", `penalty points must be a whole number from 10 to 50, got ${input.points}`);
    }
    if (!Number.isInteger(input.days) || input.days < PENALTY_DAYS.min || input.days > PENALTY_DAYS.max) {
      throw new InvalidInputError("penalty_days_invalid", `penalty days must be a whole number from 30 to 180, got ${input.days}`);
    }
    return store.transaction(async (tx) => {
      const agent = await tx.getAgent(input.agentId, { lock: true });
      if (!agent) throw new NotFoundError("agent_not_found", `agent ${input.agentId} does not exist`);
      const id = input.id ?? generateId("pen");
      if (await tx.getPenalty(id)) throw new ConflictError("penalty_exists", `penalty ${id} already exists`);
      const at = clock.now();
      const penalty: PenaltyRow = {
        id,
        agentId: input.agentId,
        code: input.code as PenaltyCode,
        points: input.points,
        days: input.days,
        addedAt: at,
        reason: input.reason,
        revokedAt: null,
        revokeReason: null,
        addedBy: actor,
        revokedBy: null,
      };
      await tx.insertPenalty(penalty);
      await tx.audit({ at, actor, action: "penalty.add", subject: input.agentId, details: penalty });
      await tx.recordEvents([
        newEvent("penalty.added", agent.ownerId, at, {
          penaltyId: id,
          agentId: input.agentId,
          code: penalty.code,
          points: penalty.points,
          days: penalty.days,
          reason: penalty.reason,
          addedBy: actor,
        }),
      ]);
      await deps.onPenaltyChanged?.(tx, input.agentId, at);
      return penalty;
    });
  }

  /** Revokes a penalty from now on (V7); its past effect on stored scores stays. */
  async function revokePenalty(id: string, reason: string, actor = UNNAMED_OPERATOR): Promise<PenaltyRow> {
    return store.transaction(async (tx) => {
      const penalty = await tx.getPenalty(id);
      if (!penalty) throw new NotFoundError("penalty_not_found", `penalty ${id} does not exist`);
      const agent = await tx.getAgent(penalty.agentId, { lock: true });
      if (penalty.revokedAt !== null) throw new ConflictError("penalty_already_revoked", `penalty ${id} was already revoked`);
      const at = clock.now();
      await tx.revokePenalty(id, at, reason, actor);
      await tx.audit({ at, actor, action: "penalty.revoke", subject: penalty.agentId, details: { id, reason } });
      if (agent)
        await tx.recordEvents([
          newEvent("penalty.revoked", agent.ownerId, at, { penaltyId: id, agentId: penalty.agentId, reason, revokedBy: actor }),
        ]);
      await deps.onPenaltyChanged?.(tx, penalty.agentId, at);
      return { ...penalty, revokedAt: at, revokeReason: reason, revokedBy: actor };
    });
  }

  /** Declares an outage window now (V4.1); a rejected declaration changes nothing. */
  async function declareOutage(
    input: { id?: string; start: number; end: number | null; reason: string },
    actor = UNNAMED_OPERATOR,
  ): Promise<OutageRow> {
    const declaredAt = clock.now();
    validateOutageDeclaration({ start: input.start, end: input.end, declaredAt });
    const outage: OutageRow = {
      id: input.id ?? generateId("out"),
      start: input.start,
      end: input.end,
      declaredAt,
      closedAt: null,
      reason: input.reason,
      declaredBy: actor,
      closedBy: null,
    };
    return store.transaction(async (tx) => {
      if (await tx.getOutage(outage.id)) throw new ConflictError("outage_exists", `outage ${outage.id} already exists`);
      await tx.insertOutage(outage);
      await tx.audit({ at: declaredAt, actor, action: "outage.declare", subject: outage.id, details: outage });
      await tx.recordEvents([
        newEvent("outage.declared", null, declaredAt, {
          outageId: outage.id,
          start: toRfc3339(outage.start),
          end: outage.end === null ? null : toRfc3339(outage.end),
          declaredAt: toRfc3339(declaredAt),
          reason: outage.reason,
        }),
      ]);
      return outage;
    });
  }

  /** Closes an open window by setting its end (V4.1). */
  async function closeOutage(id: string, end: number, actor = UNNAMED_OPERATOR): Promise<OutageRow> {
    return store.transaction(async (tx) => {
      const outage = await tx.getOutage(id);
      if (!outage) throw new NotFoundError("outage_not_found", `outage ${id} does not exist`);
      const at = clock.now();
      validateOutageClose(outage, end);
      await tx.closeOutage(id, end, at, actor);
      await tx.audit({ at, actor, action: "outage.close", subject: id, details: { end } });
      await tx.recordEvents([
        newEvent("outage.closed", null, at, { outageId: id, start: toRfc3339(outage.start), end: toRfc3339(end), closedAt: toRfc3339(at) }),
      ]);
      return { ...outage, end, closedAt: at, closedBy: actor };
    });
  }

  /** Turns the operator's busy switch on or off (V3.3). */
  async function setBusy(on: boolean, reason: string, actor = UNNAMED_OPERATOR): Promise<void> {
    await store.transaction(async (tx) => {
      await tx.setSetting(BUSY_SETTING, on);
      await tx.audit({ at: clock.now(), actor, action: on ? "busy.on" : "busy.off", subject: "service", details: { reason } });
    });
    deps.onBusyChanged?.(on);
  }

  /** The operator's busy switch as stored. */
  async function isBusySwitchOn(): Promise<boolean> {
    return (await store.read.getSetting<boolean>(BUSY_SETTING)) === true;
  }

  return { addPenalty, revokePenalty, declareOutage, closeOutage, setBusy, isBusySwitchOn };
}
