/**
 * The outbox of Vrai's ERC-8004 feedback (`erc8004_feedback`, migration 017), on PostgreSQL or PGlite: the feedback each
 * day plans, with its file; where each send stands (its transaction stored signed before it is broadcast, compare-and-set,
 * so two instances never both send one); its index once the registry shows it; and the revocations asked. SQL only: the
 * service decides what is planned and sent when (src/service/erc8004-planning.ts, src/service/erc8004-sender.ts).
 */
import type { Address, Hex } from "viem";
import type { Db, Queryable } from "./db";
import { askRevocation } from "./erc8004-publishing";
import { many, one } from "./queries";

/** Where a feedback stands: to give, on chain, revoked after it was given, or never given. */
export type FeedbackState = "planned" | "given" | "revoked" | "dropped";

/** A feedback as planned: what is given, to whom, by whom, and its file. */
export type PlannedFeedback = {
  id: string;
  agentId: string;
  proofId: string;
  chainId: number;
  identityRegistry: Address;
  tokenId: bigint;
  registry: Address;
  client: Address;
  tag1: string;
  tag2: string;
  value: number;
  valueDecimals: number;
  endpoint: string;
  uri: string;
  file: Uint8Array;
  fileHash: Hex;
  day: string;
  scoreId: number;
  plannedAt: number;
};

/** A feedback and where its sends stand. */
export type FeedbackRow = PlannedFeedback & {
  state: FeedbackState;
  giveTxHash: Hex | null;
  giveRawTx: Hex | null;
  searchFromBlock: bigint | null;
  feedbackIndex: bigint | null;
  givenBlock: bigint | null;
  givenTxHash: Hex | null;
  givenAt: number | null;
  revokeAskedAt: number | null;
  revokeReason: string | null;
  revokeTxHash: Hex | null;
  revokeRawTx: Hex | null;
  revokedAt: number | null;
  droppedReason: string | null;
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
};

/** A day whose root is mined and its anchor final (migration 020): what a feedback file says of its anchor. */
export type MinedDay = { day: string; root: Hex; txHash: Hex; chainId: number; contract: Address };

/** A publishing agent still to plan for a day: its active erc8004 proof and its daily score of that day, if any. */
export type PlanCandidate = { agentId: string; proof: { id: string; subject: string } | null; scoreId: number | null };

/** The outbox. */
export type Erc8004FeedbackRepository = {
  /** The latest day whose root is mined with its anchor final (a feedback names an anchor that stays); null before the first. */
  latestMinedDay(): Promise<MinedDay | null>;
  /** Up to `limit` agents with publishing on not yet planned for `day`, by id. */
  toPlan(day: string, limit: number): Promise<PlanCandidate[]>;
  /** The feedback of each tag standing now (planned or given, no revocation asked) of each of `agentIds`. */
  standing(agentIds: readonly string[]): Promise<FeedbackRow[]>;
  /**
   * In one transaction: stores `planned` (none of an agent, tag and day that has one already), asks `replaced` to be
   * revoked (newer values), and records `agentIds` as planned for `day`. Returns how many were stored.
   */
  plan(
    day: string,
    agentIds: readonly string[],
    planned: readonly PlannedFeedback[],
    replaced: readonly string[],
    at: number,
  ): Promise<number>;
  /**
   * Up to `limit` feedbacks with a send due at `now` (to give, or given and asked to be revoked), in the order they were planned;
   * none of an agent and tag while an older one of theirs still has a send to make (the old value is revoked first).
   */
  due(now: number, limit: number): Promise<FeedbackRow[]>;
  get(id: string): Promise<FeedbackRow | null>;
  /** The agent's feedback, newest day first (a day's in the order they were planned), `limit` at most. */
  ofAgent(agentId: string, limit: number): Promise<FeedbackRow[]>;
  /**
   * Records the giving transaction about to be broadcast (or clears it: `null`), if the feedback is still planned and its
   * transaction still `expected` (compare-and-set: two instances never both send). Returns whether it was recorded.
   */
  setGiveTx(id: string, expected: Hex | null, next: { txHash: Hex; rawTx: Hex; searchFromBlock: bigint } | null): Promise<boolean>;
  /** The feedback is on chain at `feedbackIndex` (its NewFeedback in block `blockNumber` of transaction `txHash`). */
  setGiven(id: string, given: { feedbackIndex: bigint; blockNumber: bigint; txHash: Hex; at: number }): Promise<void>;
  /** As `setGiveTx`, for the revoking transaction of a given feedback asked to be revoked. */
  setRevokeTx(id: string, expected: Hex | null, next: { txHash: Hex; rawTx: Hex } | null): Promise<boolean>;
  setRevoked(id: string, at: number): Promise<void>;
  /** The feedback will never be given (the registry refuses it), for `reason`. */
  drop(id: string, reason: string): Promise<void>;
  /** An attempt failed with `error`: the next is due at `nextAttemptAt`. */
  failed(id: string, nextAttemptAt: number, error: string): Promise<void>;
};

type FeedbackRecord = {
  id: string;
  agent_id: string;
  proof_id: string;
  chain_id: number;
  identity_registry: Address;
  token_id: string;
  registry: Address;
  client: Address;
  tag1: string;
  tag2: string;
  value: number | string;
  value_decimals: number;
  endpoint: string;
  uri: string;
  file: Uint8Array;
  file_hash: Hex;
  day: string;
  score_id: number | string;
  planned_at: number | string;
  state: FeedbackState;
  give_tx_hash: Hex | null;
  give_raw_tx: Hex | null;
  search_from_block: number | string | null;
  feedback_index: number | string | null;
  given_block: number | string | null;
  given_tx_hash: Hex | null;
  given_at: number | string | null;
  revoke_asked_at: number | string | null;
  revoke_reason: string | null;
  revoke_tx_hash: Hex | null;
  revoke_raw_tx: Hex | null;
  revoked_at: number | string | null;
  dropped_reason: string | null;
  attempts: number;
  next_attempt_at: number | string;
  last_error: string | null;
};

// Drivers may hand bigint columns back as strings: converted here, once. Block numbers and indexes as bigint, as viem has them.
const big = (value: number | string | null): bigint | null => (value === null ? null : BigInt(value));
const num = (value: number | string | null): number | null => (value === null ? null : Number(value));

const feedbackFrom = (r: FeedbackRecord): FeedbackRow => ({
  id: r.id,
  agentId: r.agent_id,
  proofId: r.proof_id,
  chainId: Number(r.chain_id),
  identityRegistry: r.identity_registry,
  tokenId: BigInt(r.token_id),
  registry: r.registry,
  client: r.client,
  tag1: r.tag1,
  tag2: r.tag2,
  value: Number(r.value),
  valueDecimals: Number(r.value_decimals),
  endpoint: r.endpoint,
  uri: r.uri,
  file: r.file,
  fileHash: r.file_hash,
  day: r.day,
  scoreId: Number(r.score_id),
  plannedAt: Number(r.planned_at),
  state: r.state,
  giveTxHash: r.give_tx_hash,
  giveRawTx: r.give_raw_tx,
  searchFromBlock: big(r.search_from_block),
  feedbackIndex: big(r.feedback_index),
  givenBlock: big(r.given_block),
  givenTxHash: r.given_tx_hash,
  givenAt: num(r.given_at),
  revokeAskedAt: num(r.revoke_asked_at),
  revokeReason: r.revoke_reason,
  revokeTxHash: r.revoke_tx_hash,
  revokeRawTx: r.revoke_raw_tx,
  revokedAt: num(r.revoked_at),
  droppedReason: r.dropped_reason,
  attempts: Number(r.attempts),
  nextAttemptAt: Number(r.next_attempt_at),
  lastError: r.last_error,
});

/** A feedback with a send to make: to give, or given and asked to be revoked. */
const HAS_SEND = (f: string) => `(${f}.state = 'planned' OR (${f}.state = 'given' AND ${f}.revoke_asked_at IS NOT NULL))`;

const INSERT_COLUMNS = `id, agent_id, proof_id, chain_id, identity_registry, token_id, registry, client, tag1, tag2, value, value_decimals,
  endpoint, uri, file, file_hash, day, score_id, planned_at, state, next_attempt_at`;

async function insertPlanned(q: Queryable, f: PlannedFeedback): Promise<number> {
  const { rowCount } = await q.query(
    `INSERT INTO erc8004_feedback (${INSERT_COLUMNS})
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, 'planned', $19)
     ON CONFLICT (agent_id, tag1, day) DO NOTHING`,
    [
      f.id,
      f.agentId,
      f.proofId,
      f.chainId,
      f.identityRegistry,
      f.tokenId.toString(),
      f.registry,
      f.client,
      f.tag1,
      f.tag2,
      f.value,
      f.valueDecimals,
      f.endpoint,
      f.uri,
      f.file,
      f.fileHash,
      f.day,
      f.scoreId,
      f.plannedAt,
    ],
  );
  return rowCount;
}

/**
 * The outbox over `db` (PostgreSQL or PGlite).
 * @example const outbox = createErc8004FeedbackRepository(db); await outbox.due(now, 100);
 */
export function createErc8004FeedbackRepository(db: Db): Erc8004FeedbackRepository {
  return {
    latestMinedDay: () =>
      one(
        db,
        "SELECT day, root, tx_hash, chain_id, contract FROM score_anchors WHERE status = 'mined' AND final_at IS NOT NULL ORDER BY day DESC LIMIT 1",
        [],
        (r: { day: string; root: Hex; tx_hash: Hex; chain_id: number; contract: Address }) => ({
          day: r.day,
          root: r.root,
          txHash: r.tx_hash,
          chainId: Number(r.chain_id),
          contract: r.contract,
        }),
      ),

    toPlan: (day, limit) =>
      many(
        db,
        `SELECT p.agent_id,
           (SELECT pr.id FROM proofs pr WHERE pr.agent_id = p.agent_id AND pr.kind = 'erc8004' AND pr.removed_at IS NULL
            ORDER BY pr.verified_at DESC, pr.id DESC LIMIT 1) AS proof_id,
           (SELECT pr.subject FROM proofs pr WHERE pr.agent_id = p.agent_id AND pr.kind = 'erc8004' AND pr.removed_at IS NULL
            ORDER BY pr.verified_at DESC, pr.id DESC LIMIT 1) AS subject,
           (SELECT s.id FROM scores s WHERE s.agent_id = p.agent_id AND s.trigger = 'daily' AND s.day = $1) AS score_id
         FROM erc8004_publishing p
         WHERE p.enabled AND (p.planned_day IS NULL OR p.planned_day < $1)
         ORDER BY p.planned_day NULLS FIRST, p.agent_id LIMIT $2`,
        [day, limit],
        (r: { agent_id: string; proof_id: string | null; subject: string | null; score_id: number | string | null }) => ({
          agentId: r.agent_id,
          proof: r.proof_id === null || r.subject === null ? null : { id: r.proof_id, subject: r.subject },
          scoreId: num(r.score_id),
        }),
      ),

    standing: (agentIds) =>
      many(
        db,
        `SELECT DISTINCT ON (agent_id, tag1) * FROM erc8004_feedback
         WHERE agent_id = ANY($1::text[]) AND state IN ('planned', 'given') AND revoke_asked_at IS NULL
         ORDER BY agent_id, tag1, day DESC`,
        [agentIds],
        feedbackFrom,
      ),

    plan: (day, agentIds, planned, replaced, at) =>
      db.transaction(async (tx) => {
        let stored = 0;
        for (const f of planned) stored += await insertPlanned(tx, f);
        if (replaced.length > 0)
          await askRevocation(tx, "f.id = ANY($3::text[]) AND f.day < $4", at, "replaced by a newer value", [replaced, day]);
        await tx.query("UPDATE erc8004_publishing SET planned_day = $2 WHERE agent_id = ANY($1::text[]) AND enabled", [agentIds, day]);
        return stored;
      }),

    due: (now, limit) =>
      many(
        db,
        `SELECT * FROM erc8004_feedback f
         WHERE ${HAS_SEND("f")} AND f.next_attempt_at <= $1
           AND NOT EXISTS (SELECT 1 FROM erc8004_feedback o
             WHERE o.agent_id = f.agent_id AND o.tag1 = f.tag1 AND o.day < f.day AND ${HAS_SEND("o")})
         ORDER BY f.day, f.seq LIMIT $2`,
        [now, limit],
        feedbackFrom,
      ),

    get: (id) => one(db, "SELECT * FROM erc8004_feedback WHERE id = $1", [id], feedbackFrom),

    ofAgent: (agentId, limit) =>
      many(db, "SELECT * FROM erc8004_feedback WHERE agent_id = $1 ORDER BY day DESC, seq LIMIT $2", [agentId, limit], feedbackFrom),

    async setGiveTx(id, expected, next) {
      const { rowCount } = await db.query(
        `UPDATE erc8004_feedback SET give_tx_hash = $3, give_raw_tx = $4, search_from_block = COALESCE(search_from_block, $5)
         WHERE id = $1 AND state = 'planned' AND give_tx_hash IS NOT DISTINCT FROM $2`,
        [id, expected, next?.txHash ?? null, next?.rawTx ?? null, next?.searchFromBlock.toString() ?? null],
      );
      return rowCount === 1;
    },

    async setGiven(id, given) {
      await db.query(
        `UPDATE erc8004_feedback SET state = 'given', feedback_index = $2, given_block = $3, given_tx_hash = $4, given_at = $5,
           give_raw_tx = NULL, attempts = 0, last_error = NULL, next_attempt_at = $5
         WHERE id = $1 AND state = 'planned'`,
        [id, given.feedbackIndex.toString(), given.blockNumber.toString(), given.txHash, given.at],
      );
    },

    async setRevokeTx(id, expected, next) {
      const { rowCount } = await db.query(
        `UPDATE erc8004_feedback SET revoke_tx_hash = $3, revoke_raw_tx = $4
         WHERE id = $1 AND state = 'given' AND revoke_asked_at IS NOT NULL AND revoke_tx_hash IS NOT DISTINCT FROM $2`,
        [id, expected, next?.txHash ?? null, next?.rawTx ?? null],
      );
      return rowCount === 1;
    },

    async setRevoked(id, at) {
      await db.query(
        `UPDATE erc8004_feedback SET state = 'revoked', revoked_at = $2, revoke_raw_tx = NULL, attempts = 0, last_error = NULL
         WHERE id = $1 AND state = 'given'`,
        [id, at],
      );
    },

    async drop(id, reason) {
      await db.query(
        "UPDATE erc8004_feedback SET state = 'dropped', dropped_reason = $2, give_raw_tx = NULL WHERE id = $1 AND state = 'planned'",
        [id, reason],
      );
    },

    async failed(id, nextAttemptAt, error) {
      await db.query("UPDATE erc8004_feedback SET attempts = attempts + 1, next_attempt_at = $2, last_error = $3 WHERE id = $1", [
        id,
        nextAttemptAt,
        error,
      ]);
    },
  };
}
