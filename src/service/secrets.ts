import crypto from "node:crypto";

/**
 * Secrets (owner tokens, agent keys, the operator token) are 256-bit random values: they are
 * stored only as their SHA-256 (no slow KDF needed at that entropy) and compared in constant time.
 */
export function generateSecret(prefix: string): string {
  return `${prefix}_${crypto.randomBytes(32).toString("base64url")}`;
}

/** The stored form of a secret: lowercase hex SHA-256. */
export function hashSecret(secret: string): string {
  return crypto.createHash("sha256").update(secret, "utf8").digest("hex");
}

/** Whether `secret` hashes to `storedHash`, compared in constant time. */
export function secretMatches(secret: string, storedHash: string): boolean {
  return hashMatches(hashSecret(secret), storedHash);
}

/** Whether a secret's hash (`hashSecret`) is `storedHash`, compared in constant time. */
export function hashMatches(hash: string, storedHash: string): boolean {
  const given = Buffer.from(hash, "hex");
  const stored = Buffer.from(storedHash, "hex");
  return given.length === stored.length && crypto.timingSafeEqual(given, stored);
}

/** What every server id (owner, agent, proof, outage, penalty) matches: 1 to 64 letters, digits, `_` or `-`. */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** A short random id with a readable prefix, e.g. `agt_3f9c0d1e2b4a5968`. */
export function generateId(prefix: string): string {
  return `${prefix}_${crypto.randomBytes(8).toString("hex")}`;
}
