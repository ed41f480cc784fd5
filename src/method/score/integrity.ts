import { DAY_S } from "../time";

/** V7: the penalty codes. */
export const PENALTY_CODES = ["rate_abuse", "rule_violation", "impersonation"] as const;
export type PenaltyCode = (typeof PENALTY_CODES)[number];

/** V7: Integrity starts at 100; Shield (the 50 points above) is not active in 0.2. */
export const INTEGRITY_BASE = 100;
/** V7: whole points a penalty subtracts. */
export const PENALTY_POINTS = { min: 10, max: 50 } as const;
/** V7: whole days a penalty lasts. */
export const PENALTY_DAYS = { min: 30, max: 180 } as const;

/** A penalty as the rules see it (Unix seconds). */
export type Penalty = { id: string; code: PenaltyCode; points: number; days: number; addedAt: number; revokedAt: number | null };

/** V7: first instant the penalty is no longer active, `added_at + days * 86400`. */
export function penaltyExpiry(p: { addedAt: number; days: number }): number {
  return p.addedAt + p.days * DAY_S;
}

/**
 * V7: active at `t` when `added_at <= t < added_at + days * 86400` and not revoked by then.
 * @example isPenaltyActive({ addedAt: 0, days: 30, revokedAt: null }, 30 * 86400) // false
 */
export function isPenaltyActive(p: { addedAt: number; days: number; revokedAt: number | null }, t: number): boolean {
  return p.addedAt <= t && t < penaltyExpiry(p) && (p.revokedAt === null || t < p.revokedAt);
}

/** V7: `100 - sum of active points`, down to 0 (never above 100 while Shield is not active). */
export function integrityValue(activePoints: readonly number[]): number {
  let value = INTEGRITY_BASE;
  for (const points of activePoints) value -= points;
  return Math.max(0, value);
}
