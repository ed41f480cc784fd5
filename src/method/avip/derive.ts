import type { ProofRecord } from "./record";

/** A4 flags, in the order of the A4 table. */
export const FLAGS = ["LOW_SUCCESS_RATE", "HAS_VIOLATIONS", "LOW_RISK_ONLY", "RECENT_FAILURES", "NO_VERIFIED_PROOFS"] as const;
export type Flag = (typeof FLAGS)[number];

/** A5: interpretation of a score. */
export type Interpretation = "Untrusted" | "Low trust" | "Moderate trust" | "High trust" | "Very high trust";

/** F1: one executor's SDK Derived Score; numbers rounded half-up to 2 decimals (A3). */
export type DerivedResult = {
  scoreType: "sdk-derived";
  score: number;
  raw: number;
  multiplier: number;
  cap: number;
  total: number;
  verifiedCount: number;
  components: { base: number; volume: number; riskBonus: number; consistency: number };
  flags: Flag[];
  interpretation: Interpretation;
};

/** The whole-number counts of A3–A4 over one executor's selected, ordered, deduplicated records. */
export type RecordCounts = {
  total: number;
  successes: number;
  /** Successes with riskLevel high or critical (A3 risk_bonus). */
  highRiskSuccesses: number;
  /** Records with policyViolations > 0 (A3 violation_rate). */
  withViolations: number;
  /** Verified on-chain records (A6: self-reported ones never are). */
  verified: number;
  /** Every record is `low` (A4 LOW_RISK_ONLY). */
  allLow: boolean;
  /** Failures among the last `min(10, total)` records in order (A4 RECENT_FAILURES). */
  recentFailures: number;
  recent: number;
};

/** A4: RECENT_FAILURES looks at the last 10 records. */
export const RECENT_RECORDS = 10;
/** A4: LOW_RISK_ONLY applies only above 50 records. */
export const LOW_RISK_ONLY_MIN_TOTAL = 50;
/** A3 volume: experience counts up to 100 records. */
export const VOLUME_FULL_TOTAL = 100;

/** A3 (AVIP-TRU-CS): cold-start caps by total. */
export function capFor(total: number): number {
  return total < 5 ? 55 : total < 10 ? 65 : total < 20 ? 75 : 100;
}

/** A3 (AVIP-TRU-CS): verification multiplier as a fraction `[numerator, denominator]` of 100. */
export function multiplierFor(total: number, verified: number): 70 | 85 | 100 {
  const underHalf = 2 * verified < total;
  if (total >= 10 && underHalf) return 70;
  if (total >= 3 && underHalf) return 85;
  return 100;
}

/** A5, applied to the reported (rounded) score so the label matches the number shown. */
export function interpretationOf(score: number): Interpretation {
  if (score <= 20) return "Untrusted";
  if (score <= 40) return "Low trust";
  if (score <= 60) return "Moderate trust";
  if (score <= 80) return "High trust";
  return "Very high trust";
}

/** Rounds the non-negative fraction `num/den` half-up to hundredths and returns it as a number (A3). */
function round2(num: bigint, den: bigint): number {
  return Number((200n * num + den) / (2n * den)) / 100;
}

/**
 * A3–A5 from the counts, in exact rational arithmetic: every quantity is a bigint numerator over
 * the common denominator `100 * total`; only the reported figures are rounded.
 */
export function scoreCounts(c: RecordCounts): DerivedResult {
  const cap = capFor(c.total);
  if (c.total === 0) {
    // A2.4: no records gives score 0, every component 0, no flags.
    return {
      scoreType: "sdk-derived",
      score: 0,
      raw: 0,
      multiplier: 1,
      cap,
      total: 0,
      verifiedCount: 0,
      components: { base: 0, volume: 0, riskBonus: 0, consistency: 0 },
      flags: [],
      interpretation: interpretationOf(0),
    };
  }
  const n = BigInt(c.total);
  const den = 100n * n;
  const base = 6000n * BigInt(c.successes);
  const volume = 15n * BigInt(Math.min(c.total, VOLUME_FULL_TOTAL)) * n;
  const riskBonus = 1500n * BigInt(c.highRiskSuccesses);
  const consistency = 1000n * (n - BigInt(c.withViolations));
  const raw = base + volume + riskBonus + consistency;
  const m = multiplierFor(c.total, c.verified);
  // score = clamp(min(raw * m/100, cap), 0, 100), over the denominator den * 100. Every term of raw is at
  // least 0 and cap is at most 100, so the clamp is the cap alone.
  let scoreNum = raw * BigInt(m);
  const scoreDen = den * 100n;
  const capNum = BigInt(cap) * scoreDen;
  if (scoreNum > capNum) scoreNum = capNum;
  const score = round2(scoreNum, scoreDen);
  const flags: Flag[] = [];
  if (2 * c.successes < c.total) flags.push("LOW_SUCCESS_RATE");
  if (c.withViolations > 0) flags.push("HAS_VIOLATIONS");
  if (c.allLow && c.total > LOW_RISK_ONLY_MIN_TOTAL) flags.push("LOW_RISK_ONLY");
  if (2 * c.recentFailures > c.recent) flags.push("RECENT_FAILURES");
  if (c.verified === 0) flags.push("NO_VERIFIED_PROOFS");
  return {
    scoreType: "sdk-derived",
    score,
    raw: round2(raw, den),
    multiplier: m / 100,
    cap,
    total: c.total,
    verifiedCount: c.verified,
    components: {
      base: round2(base, den),
      volume: round2(volume, den),
      riskBonus: round2(riskBonus, den),
      consistency: round2(consistency, den),
    },
    flags,
    interpretation: interpretationOf(score),
  };
}

function byChainPosition(a: ProofRecord, b: ProofRecord): number {
  return (a.blockNumber as number) - (b.blockNumber as number) || (a.logIndex as number) - (b.logIndex as number);
}

/** A2.2 for on-chain records: sorted by (blockNumber, logIndex), stable; records in chain order skip the sort. */
function inChainOrder(records: ProofRecord[]): ProofRecord[] {
  for (let i = 1; i < records.length; i++) {
    if (byChainPosition(records[i - 1], records[i]) > 0) return records.slice().sort(byChainPosition);
  }
  return records;
}

/**
 * A2 and the counts of A3–A4 for one executor: selection (on-chain over self-reported), order,
 * dedup by txHash compared case-insensitively (first in order wins). One pass, no copies.
 * @param records the executor's records in the order given
 * @param onchainCount how many of them are on-chain
 */
export function countRecords(records: ProofRecord[], onchainCount: number): RecordCounts {
  let selected = records;
  if (onchainCount > 0 && onchainCount < records.length) selected = records.filter((r) => r.source === "onchain");
  if (onchainCount > 0) selected = inChainOrder(selected);
  const seen = selected.length > 1 ? new Set<string>() : null;
  // A4 RECENT_FAILURES: success of the last RECENT_RECORDS kept records, as a ring.
  const recentRing: boolean[] = [];
  let total = 0,
    successes = 0,
    highRiskSuccesses = 0,
    withViolations = 0,
    verified = 0,
    allLow = true;
  for (let i = 0; i < selected.length; i++) {
    const r = selected[i];
    if (seen !== null) {
      const key = r.txHash.toLowerCase();
      if (seen.has(key)) continue;
      seen.add(key);
    }
    recentRing[total % RECENT_RECORDS] = r.success;
    total++;
    if (r.success) {
      successes++;
      if (r.riskLevel === "high" || r.riskLevel === "critical") highRiskSuccesses++;
    }
    if (r.riskLevel !== "low") allLow = false;
    if (r.policyViolations > 0) withViolations++;
    if (r.verified && r.source === "onchain") verified++;
  }
  let recentFailures = 0;
  for (const success of recentRing) if (!success) recentFailures++;
  return { total, successes, highRiskSuccesses, withViolations, verified, allLow, recentFailures, recent: recentRing.length };
}

/**
 * F1: the SDK Derived Score of every executor in a set of validated A1 records (A2–A5).
 * Linear in the records; the exact arithmetic runs once per executor.
 * @example deriveScores(validateRecords(json))["did:erc8004:1:0x…:7"].score
 */
export function deriveScores(records: readonly ProofRecord[]): Record<string, DerivedResult> {
  const groups = new Map<string, { records: ProofRecord[]; onchain: number }>();
  let lastExecutor = "";
  let last: { records: ProofRecord[]; onchain: number } | undefined;
  for (let i = 0; i < records.length; i++) {
    const r = records[i];
    let g = r.executor === lastExecutor ? last : groups.get(r.executor);
    if (g === undefined) {
      g = { records: [], onchain: 0 };
      groups.set(r.executor, g);
    }
    lastExecutor = r.executor;
    last = g;
    g.records.push(r);
    if (r.source === "onchain") g.onchain++;
  }
  const out: Record<string, DerivedResult> = {};
  for (const [executor, g] of groups) out[executor] = scoreCounts(countRecords(g.records, g.onchain));
  return out;
}
