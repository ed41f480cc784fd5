/**
 * What the service needs from storage. Two implementations: SQL (PostgreSQL and PGlite,
 * `src/store/sql-store.ts`) and memory (`src/store/memory-store.ts`, used by `vrai replay`).
 * The service code above this line is the same for both (METHOD F2: replay runs the service's code).
 */
import type { CountedCheckin, DayAggregate, DayDelta, OutageWindow, PenaltyCode, ProofKind, ScoreInputs, ScoreResult } from "../method";

export type { PenaltyCode, ProofKind };

export type OwnerRow = { id: string; tokenHash: string; createdAt: number };

export type AgentRow = {
  id: string;
  name: string | null;
  ownerId: string;
  claimId: number;
  claimedAt: number;
  keyHash: string;
  /**
   * V3.4: previous counted check-in since the latest claim, with the digest of its day after it
   * (the link the next check-in of that day chains from, docs/inputs.md "Day digest").
   */
  last: { arrival: number; nextHeartbeatS: number; dayDigest: string } | null;
  /** The deadline (V3.5) of the lapse an agent.late was sent for, until the next counted check-in (agent.back) or claim. */
  lateDeadline: number | null;
  /** When its owner unclaimed it (issue #29): no owner holds it, it has no key and no score until a new claim (V2); null while claimed. */
  releasedAt: number | null;
  createdAt: number;
};

export type StoredCheckin = CountedCheckin & { agentId: string; claimId: number; idempotencyKey: string };

/** A declared window (V4) with who declared it and who set its end (V7's "who": an operator's name, `admin` for OPERATOR_TOKEN). */
export type OutageRow = OutageWindow & { reason: string; declaredBy: string; closedBy: string | null };

export type PenaltyRow = {
  id: string;
  agentId: string;
  code: PenaltyCode;
  points: number;
  days: number;
  addedAt: number;
  reason: string;
  revokedAt: number | null;
  revokeReason: string | null;
  /** V7: the operator who added it, and who revoked it (an operator's name, `admin` for OPERATOR_TOKEN). */
  addedBy: string;
  revokedBy: string | null;
};

export type ChallengeRow = {
  id: string;
  kind: ProofKind;
  ownerId: string;
  agentId: string | null;
  subject: string;
  nonce: string;
  token: string;
  message: string;
  issuedAt: number;
  expiresAt: number;
  usedAt: number | null;
};

export type ProofRow = {
  id: string;
  kind: ProofKind;
  ownerId: string;
  /** Null for owner-level proofs (github, wallet: V6 "belongs to the owner"). */
  agentId: string | null;
  subject: string;
  binding: string | null;
  evidence: unknown;
  verifiedAt: number;
  lastCheckedAt: number;
  consecutiveFailures: number;
  removedAt: number | null;
  removedReason: string | null;
};

export type ScoreRow = {
  id: number;
  agentId: string;
  method: string;
  at: number;
  trigger: "daily" | "change";
  day: string | null;
  inputs: string;
  sha256: string;
  result: ScoreResult;
  total: number;
};

/**
 * A score to store. With the claim it was computed in and its inputs document as an object (the
 * scoring service gives both), the SQL store keeps the compact form of the inputs and derives the
 * rest when read (src/store/score-facts.ts, migration 010); without them it keeps the text as given.
 */
export type NewScore = Omit<ScoreRow, "id"> & { claimId?: number; document?: ScoreInputs };

/**
 * Scores for one `insertScores`, each kept in its store's stored form from the moment it is added: a page of the daily
 * recompute waiting for its insert holds a few hundred bytes a score, not its inputs document and text (issue #30:
 * what such pages kept alive through young-generation collections cost a third of node's time). A batch is data only:
 * made with `scoreBatch()` of the store that inserts it, outside a transaction or in one.
 */
export type ScoreBatch = {
  add(score: NewScore): void;
  /** How many scores were added. */
  readonly size: number;
};

/**
 * A stored score without its inputs document, its result as JSON text: what `GET /v1/agents/:id/score`
 * answers with (the text goes into the response as it is). `packed` is the result's compact form
 * (`packResult`), which the text is rendered from; null only for an old score kept as text whose text
 * is not exactly that rendering.
 */
export type ScoreSummary = Omit<ScoreRow, "inputs" | "result"> & { resultJson: string; packed: Uint8Array | null };

/**
 * Whether a claimed agent exists and its latest score without the inputs, read in one go (the API's hottest read). An
 * unclaimed agent (issue #29) is answered as none, with no score: whether it exists is the agent's row's to say.
 */
export type LatestScores = {
  latestScoreSummary(agentId: string): Promise<{ agentExists: boolean; score: ScoreSummary | null }>;
};

export type AuditEntry = { at: number; actor: string; action: string; subject: string; details: unknown };

/** A keyset page of a list: `limit` rows at most, strictly after the position `after` (none: from the start). */
export type PageRequest<P> = { after?: P; limit: number };

/** An owner whose agents are to be recomputed (an owner-level proof changed, V6), as a drain took it. */
export type OwnerRecomputeJob = { ownerId: string; generation: number; attempts: number };

/** A score's values an owner is told of when they change (V8), as kept with the agent's latest score. */
export type ScoreHead = { scoreId: number; total: number; band: string; state: "provisional" | "established" };

/**
 * An agent whose latest score became one just stored, of an owner who keeps events (one with a webhook
 * endpoint): the new latest and the one it replaced (null for the first), what `score.changed` tells.
 */
export type LatestScoreMove = {
  agentId: string;
  ownerId: string;
  at: number;
  trigger: "daily" | "change";
  current: ScoreHead;
  previous: ScoreHead | null;
};

/**
 * An event to record (src/service/events): its type, the owner it concerns (null: every owner), its time
 * and its data as JSON text of its type's schema.
 */
export type NewEvent = { type: string; ownerId: string | null; at: number; data: string };

/** Events, written in the transaction of the change that causes them (issue #28: the outbox). */
export type EventsTx = {
  /**
   * Records events for the owners who keep events (those with a webhook endpoint; an event of every owner
   * is recorded once for each of them), each with a delivery due at its time for every enabled endpoint
   * of its owner that asked for its type. Nothing is recorded for an owner with no endpoint.
   */
  recordEvents(events: readonly NewEvent[]): Promise<void>;
};

/** Owners, agents and their claims (V2). */
export type AccountsTx = {
  insertOwner(owner: OwnerRow): Promise<void>;
  /** Reads an owner; `lock` serialises every writer that locks that owner (its per-owner limits) until the transaction ends. */
  getOwner(id: string, options?: { lock?: boolean }): Promise<OwnerRow | null>;

  /** Reads an agent; `lock` serialises every writer of that agent until the transaction ends. */
  getAgent(id: string, options?: { lock?: boolean }): Promise<AgentRow | null>;
  insertAgent(agent: AgentRow): Promise<void>;
  /**
   * Starts a new claim (V2): new claim id, key, owner; forgets the previous counted check-in; an unclaimed agent is claimed
   * again (`releasedAt` cleared). Returns the claim id.
   */
  startClaim(
    agentId: string,
    claim: { ownerId: string; keyHash: string; claimedAt: number; kind: "claim" | "reclaim" | "transfer" },
  ): Promise<number>;
  /** Replaces the agent's key hash, nothing else: the claim, its check-ins and its proofs stay (a key rotation is not a claim). */
  setAgentKey(agentId: string, keyHash: string): Promise<void>;
  /**
   * Unclaims the agent at `at` (issue #29): `releasedAt` set, its key hash cleared (no key is its key any more) and its
   * late mark dropped; its claim's rows (check-ins, days, scores) stay. The latest-score reads answer it as no agent of
   * theirs from the commit on (a cache of them is told, as of a score written).
   */
  releaseAgent(agentId: string, at: number): Promise<void>;
  /**
   * A keyset page of every claimed agent's id (unclaimed ones left out), in id order (the daily recompute's agents, V9,
   * read a page at a time so that no list of every agent is ever held in memory).
   */
  listClaimedAgentIds(page: PageRequest<string>): Promise<string[]>;
  /** The ids of the owner's claimed agents in id order: every one, or a page after an id. */
  listAgentsOfOwner(ownerId: string, page?: PageRequest<string>): Promise<string[]>;
  /** How many claimed agents the owner has (an unclaimed one is no longer its: MAX_AGENTS_PER_OWNER). */
  countAgentsOfOwner(ownerId: string): Promise<number>;
};

/** What counted check-ins left for the scores (V5, V10): the day aggregates, and the check-ins of one instant. */
export type CheckinFactsTx = {
  /** Every day aggregate of the claim up to and including `lastDay`, oldest first. */
  listDays(agentId: string, claimId: number, lastDay: string): Promise<DayAggregate[]>;
  /** Whether a counted check-in of the claim arrived exactly at `at` (the one instant of day D inside `at = D 00:00:00`). */
  countCheckinsAt(agentId: string, claimId: number, at: number): Promise<number>;
};

/** What operators record (V4.4, V7): declared windows, penalties, the audit log and the service's settings (the busy switch). */
export type OperationsTx = {
  listOutages(): Promise<OutageRow[]>;
  getOutage(id: string): Promise<OutageRow | null>;
  insertOutage(outage: OutageRow): Promise<void>;
  /** Sets an open window's end, remembering when it became known (`closedAt`, V4.3) and who set it. */
  closeOutage(id: string, end: number, closedAt: number, closedBy: string): Promise<void>;

  insertPenalty(penalty: PenaltyRow): Promise<void>;
  getPenalty(id: string): Promise<PenaltyRow | null>;
  revokePenalty(id: string, revokedAt: number, reason: string, revokedBy: string): Promise<void>;
  /** The agent's penalties by `addedAt` then id: all, or a page. */
  listPenalties(agentId: string, page?: PageRequest<{ addedAt: number; id: string }>): Promise<PenaltyRow[]>;

  audit(entry: AuditEntry): Promise<void>;
  listAudit(options: { afterId: number; limit: number }): Promise<Array<AuditEntry & { id: number }>>;

  getSetting<T>(key: string): Promise<T | null>;
  setSetting(key: string, value: unknown): Promise<void>;
};

/** Identity proofs (V6): their challenges and the proofs verified. */
export type ProofsTx = {
  insertChallenge(challenge: ChallengeRow): Promise<void>;
  /** Marks the challenge used; false when it was already used (single use). */
  useChallenge(id: string, at: number): Promise<boolean>;
  getChallenge(id: string): Promise<ChallengeRow | null>;
  /** The owner's challenges neither used nor expired at `at`. */
  countOpenChallenges(ownerId: string, at: number): Promise<number>;
  /** Deletes up to `limit` challenges expired at `at` (of one owner when `ownerId` is given), oldest first; returns how many. */
  deleteExpiredChallenges(at: number, options: { ownerId?: string; limit: number }): Promise<number>;
  /**
   * Records a proof; false, recording nothing, when an active proof already holds its binding
   * (one that another transaction committed first included: V6 binds a subject once).
   */
  insertProof(proof: ProofRow): Promise<boolean>;
  getProof(id: string): Promise<ProofRow | null>;
  /** The active proof holding `binding`, if any. */
  findActiveBinding(binding: string): Promise<ProofRow | null>;
  /** Proofs that count for an agent at `at`: its own and its owner's owner-level ones (V6), by `verifiedAt` then id: all, or a page. */
  proofsForAgentAt(
    agentId: string,
    ownerId: string,
    at: number,
    page?: PageRequest<{ verifiedAt: number; id: string }>,
  ): Promise<ProofRow[]>;
  /** The owner-level proofs (V6: naming no agent) of the owner that count at `at`, by `verifiedAt` then id. */
  ownerLevelProofsAt(ownerId: string, at: number): Promise<ProofRow[]>;
  listActiveProofs(): Promise<ProofRow[]>;
  updateProofCheck(id: string, check: { lastCheckedAt: number; consecutiveFailures: number }): Promise<void>;
  removeProof(id: string, at: number, reason: string): Promise<void>;
};

/** The rows an agent's score facts are made of (V5–V8), as the one-by-one reads give them. */
export type AgentFactRows = {
  agent: AgentRow;
  /**
   * `listDays(agent, claim, day of at)`: the claim's day aggregates up to the day of `at`, oldest first. The SQL store's
   * `dailyFactRows` makes them from their text at each read, so that a page of rows holds a string an agent rather than
   * an object a day until each agent is scored: read it once.
   */
  readonly days: DayAggregate[];
  /**
   * Days of the claim before the window (V1) with counted check-ins that `days` leaves out (ScoreFacts): the SQL store
   * reads the day aggregates from the window's first day and counts the earlier ones, so that a page's rows do not
   * grow with the agents' history (issue #30). Absent: `days` holds them all.
   */
  earlierCheckinDays?: number;
  /** `countCheckinsAt(agent, claim, at)`: counted check-ins of the claim arriving exactly at `at`. */
  atMidnight: number;
  /** `proofsForAgentAt(agent, owner, at)`, in its order: only their kinds count (V6). */
  proofs: Array<Pick<ProofRow, "kind">>;
  /** `listPenalties(agent)`, in its order. */
  penalties: PenaltyRow[];
};

/** Vrai scores (V9) and the owners whose agents are waiting to be scored again (V6). */
export type ScoresTx = {
  /** Stores a score; `moved` when it became its agent's latest and the agent's owner keeps events. */
  insertScore(score: NewScore): Promise<{ id: number; moved: LatestScoreMove | null }>;
  /**
   * The daily recompute's reads of many agents at once: the fact rows at `at` of those of `agentIds` that
   * exist, are claimed (not unclaimed) and were claimed by `at`, in the order of `agentIds` (what the one-by-one reads give each).
   */
  dailyFactRows(agentIds: readonly string[], day: string, at: number): Promise<AgentFactRows[]>;
  /**
   * Inserts scores in the order given (so their ids follow that order), except daily scores of an
   * agent and day that already has one (a rerun, or another instance first): returns how many were inserted,
   * and the agents of owners who keep events whose latest score is now one of them.
   */
  insertScores(batch: ScoreBatch): Promise<{ stored: number; moved: LatestScoreMove[] }>;
  /** An empty batch for `insertScores` of this store. */
  scoreBatch(): ScoreBatch;
  latestScore(agentId: string): Promise<ScoreRow | null>;
  getScore(id: number): Promise<ScoreRow | null>;
  /** The agent's daily scores from `fromDay` to `toDay` (inclusive) by day: all, or a page after a day. */
  listDailyScores(agentId: string, fromDay: string, toDay: string, page?: PageRequest<string>): Promise<ScoreRow[]>;
  hasDailyScore(agentId: string, day: string): Promise<boolean>;
  /** Every stored score, in id order, `limit` at a time after `afterId`. */
  scoresAfter(afterId: number, limit: number): Promise<ScoreRow[]>;

  /**
   * Asks for every agent of the owner to be recomputed (an owner-level proof changed at `at`, V6):
   * stored with the change, so it is done even if the process stops first.
   */
  requestOwnerRecompute(ownerId: string, at: number): Promise<void>;
  /** Takes up to `limit` requests due at `now`, each leased until `leaseUntil` (a drain that stops midway leaves it due then). */
  takeOwnerRecomputes(now: number, leaseUntil: number, limit: number): Promise<OwnerRecomputeJob[]>;
  /**
   * Ends a request after its recompute; when another change came meanwhile (a newer generation: each
   * change gets one never used before), it is due again at `now`.
   */
  finishOwnerRecompute(job: OwnerRecomputeJob, now: number): Promise<void>;
  /** A failed recompute: the request stays, due again at `dueAt`. */
  failOwnerRecompute(job: OwnerRecomputeJob, dueAt: number, error: string): Promise<void>;
};

/** An agent's switch of Vrai's feedback to an ERC-8004 Reputation Registry (issue #27). */
export type Erc8004PublishingRow = {
  agentId: string;
  enabled: boolean;
  changedAt: number;
  /** Why Vrai turned it off (its erc8004 proof removed); null when the owner set it. */
  reason: string | null;
};

/** Vrai's ERC-8004 feedback as the owner and the agent's proofs decide it (issue #27). */
export type Erc8004PublishingTx = {
  /** The agent's switch; null when never set (off). */
  getErc8004Publishing(agentId: string): Promise<Erc8004PublishingRow | null>;
  /** Sets the switch; turned on, the agent's feedback is planned again from the latest anchored day. */
  setErc8004Publishing(row: Erc8004PublishingRow): Promise<void>;
  /**
   * Asks for every feedback of the agent still standing or on its way to be revoked, for `reason` (one not sent yet is
   * dropped instead); returns how many.
   */
  withdrawErc8004Feedback(agentId: string, at: number, reason: string): Promise<number>;
};

/** Who a console session or an owner credential is (issue #29): `full` may change what the owner has, `read` may only look. */
export type OwnerScope = "full" | "read";

/** A signed-in console session; the cookie's secret is kept only as `secretHash`. */
export type ConsoleSessionRow = {
  /** Public handle (`ses_…`), to list and revoke it. */
  id: string;
  secretHash: string;
  ownerId: string;
  scope: OwnerScope;
  /** How it signed in: `siwe:<address>`, `owner-token` or `read-token:<token id>`. */
  login: string;
  userAgent: string | null;
  createdAt: number;
  lastSeenAt: number;
  /** The absolute timeout. */
  expiresAt: number;
  revokedAt: number | null;
};

/** A read-only owner token (issue #29); only its hash is kept. */
export type ReadTokenRow = { id: string; ownerId: string; name: string; tokenHash: string; createdAt: number; revokedAt: number | null };

/** The owners' console (issue #29): sessions, Sign-In with Ethereum nonces, read-only tokens and sign-in addresses. */
export type ConsoleTx = {
  insertConsoleSession(session: ConsoleSessionRow): Promise<void>;
  /** The session whose cookie secret hashes to `secretHash`, revoked or not; null when there is none. */
  getConsoleSession(secretHash: string): Promise<ConsoleSessionRow | null>;
  touchConsoleSession(id: string, at: number): Promise<void>;
  /**
   * Revokes at `at` the owner's sessions not revoked yet: all of them, only `only`, all but `except`, or those
   * signed in as `login`; returns how many.
   */
  revokeConsoleSessions(ownerId: string, at: number, which: { only?: string; except?: string; login?: string }): Promise<number>;
  /** The owner's sessions neither revoked nor past `expiresAt` at `at`, newest first. */
  listConsoleSessions(ownerId: string, at: number): Promise<ConsoleSessionRow[]>;
  /** Deletes up to `limit` sessions and nonces whose absolute expiry is at or before `before`; returns how many. */
  deleteExpiredConsoleRows(before: number, limit: number): Promise<number>;

  insertSiweNonce(nonce: { nonce: string; issuedAt: number; expiresAt: number }): Promise<void>;
  /** Marks the nonce used at `at`; false when there is no such nonce, or it was used, or it expired (one use, EIP-4361). */
  useSiweNonce(nonce: string, at: number): Promise<boolean>;

  insertReadToken(token: ReadTokenRow): Promise<void>;
  getReadToken(id: string): Promise<ReadTokenRow | null>;
  /** The owner's read-only tokens, revoked ones too, oldest first. */
  listReadTokens(ownerId: string): Promise<ReadTokenRow[]>;
  /** Revokes the owner's token at `at`; false when the owner has no such token not revoked yet. */
  revokeReadToken(ownerId: string, id: string, at: number): Promise<boolean>;

  /** Replaces the owner's full token (its hash): the old one stops at once. */
  setOwnerTokenHash(ownerId: string, tokenHash: string): Promise<void>;

  /** The owner an address (lowercase) signs in as, by its first sign-in; null when it never signed in. */
  getLoginOwner(address: string): Promise<string | null>;
  /** Records the owner of an address's first sign-in; false, changing nothing, when the address has one. */
  insertLogin(login: { address: string; ownerId: string; createdAt: number }): Promise<boolean>;
};

/**
 * One transaction's view of the store: what it stores, feature by feature (each a port of its own, which
 * a module that needs only one of them may take alone).
 */
export type StoreTx = AccountsTx & CheckinFactsTx & OperationsTx & ProofsTx & ScoresTx & EventsTx & Erc8004PublishingTx & ConsoleTx;

/** What deciding one check-in needs about its agent (V3–V4), read together in one go. */
export type CheckinState = {
  agent: AgentRow | null;
  /** The agent's counted check-in with the request's idempotency key (V3.1), if any (always null when `cached`). */
  duplicate: StoredCheckin | null;
  /**
   * Windows that may excuse the next check-in: at least every window that is open, ends at or
   * after the deadline following `agent.last` (V3.5), or had its end set after `agent.last`. The
   * rules ignore windows declared, or ended, after the arrival (V4.3), so extra windows are harmless.
   */
  windows: readonly OutageWindow[];
  /** The revision of the declared windows `windows` are of; `commitCheckin` writes only at that revision. */
  windowsRevision: number;
  /**
   * True when the agent is as this process last read or wrote it, not read now: its duplicate was not looked up.
   * Only a counted check-in may be decided on it (the write checks the duplicate and everything else the decision
   * used); any other answer, a refusal or a failed authentication, is given on a state read with `fresh`.
   */
  cached: boolean;
};

/**
 * Where `commitCheckin` expects the agent to be: as `checkinState` saw it (`lateDeadline` absent: not late), with the
 * key the request was authenticated by and the windows' revision it was decided with.
 */
export type CheckinExpectation = {
  claimId: number;
  lastArrival: number | null;
  lateDeadline?: number | null;
  keyHash: string;
  windowsRevision: number;
};

/** Atomic work on the features `Tx` of the store (a module that needs only some of them takes only those). */
export type Transactions<Tx = StoreTx> = {
  /** Runs `fn` atomically; nothing it wrote is visible to others before it resolves. */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** Reads outside an explicit transaction. */
  read: Tx;
};

/** The check-in path (V3): one read that decides a check-in, one conditional write that records it. */
export type CheckinWrites = {
  /**
   * V3: the agent, the duplicate of `idempotencyKey` and the declared windows, read together (no lock is taken), or,
   * unless `fresh`, the agent as this process holds it (`cached`).
   */
  checkinState(agentId: string, idempotencyKey: string, fresh?: boolean): Promise<CheckinState>;
  /**
   * Stores a counted check-in atomically if the agent is still as expected (same claim, same
   * previous counted check-in, same key, same windows' revision) and holds no check-in with its
   * idempotency key (V3.1): the check-in, the agent's new previous one (with `dayDigest`, the
   * arrival day's new digest) and the day deltas. The agent's row is locked for the write, so two
   * writers of one agent go one after the other and the second finds the agent changed.
   * Answers after the commit. With `back` (the agent had an agent.late), the agent's late mark is cleared and
   * the event recorded in the same write (EventsTx).
   * @returns false, writing nothing, when the agent changed since `checkinState` (decide again)
   */
  commitCheckin(expected: CheckinExpectation, checkin: StoredCheckin, deltas: readonly DayDelta[], back?: NewEvent): Promise<boolean>;
  /**
   * Whether `duplicate` (as `checkinState` read it) is durable: on PostgreSQL, one transaction that finds it
   * and takes a transaction id, so its commit waits for the synchronous standbys of the server that has it.
   * A check-in committed on a primary that crashed before its standby had it is visible to that primary once
   * it restarts, and lost when it is demoted: the check-in path answers a duplicate with its original (V3.1)
   * only when this is true, so what it acknowledges is kept. False when the server that took the commit
   * does not have it (the state was read from another, a primary replaced since): decide again.
   */
  confirmDurable(duplicate: StoredCheckin): Promise<boolean>;
};

/** The whole store: every feature, and the check-in path. */
export type Store = Transactions<StoreTx> & CheckinWrites;
