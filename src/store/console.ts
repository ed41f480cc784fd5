/** The owners' console in SQL (issue #29, migration 020): sessions, SIWE nonces, read-only tokens, sign-in addresses (`ConsoleTx`). */
import type { ConsoleSessionRow, ConsoleTx, OwnerScope, ReadTokenRow } from "../service/ports";
import type { Queryable } from "./db";
import { many, one } from "./queries";

type SessionRecord = {
  id: string;
  secret_hash: string;
  owner_id: string;
  scope: OwnerScope;
  login: string;
  user_agent: string | null;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
  revoked_at: number | null;
};

const sessionFrom = (r: SessionRecord): ConsoleSessionRow => ({
  id: r.id,
  secretHash: r.secret_hash,
  ownerId: r.owner_id,
  scope: r.scope,
  login: r.login,
  userAgent: r.user_agent,
  createdAt: r.created_at,
  lastSeenAt: r.last_seen_at,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
});

type ReadTokenRecord = { id: string; owner_id: string; name: string; token_hash: string; created_at: number; revoked_at: number | null };

const readTokenFrom = (r: ReadTokenRecord): ReadTokenRow => ({
  id: r.id,
  ownerId: r.owner_id,
  name: r.name,
  tokenHash: r.token_hash,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
});

/** The console part of the store, its statements run by `q`. */
export function consoleIn(q: Queryable): ConsoleTx {
  return {
    async insertConsoleSession(s) {
      await q.query(
        `INSERT INTO console_sessions (id, secret_hash, owner_id, scope, login, user_agent, created_at, last_seen_at, expires_at, revoked_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [s.id, s.secretHash, s.ownerId, s.scope, s.login, s.userAgent, s.createdAt, s.lastSeenAt, s.expiresAt, s.revokedAt],
      );
    },
    getConsoleSession: (secretHash) => one(q, "SELECT * FROM console_sessions WHERE secret_hash = $1", [secretHash], sessionFrom),
    async touchConsoleSession(id, at) {
      await q.query("UPDATE console_sessions SET last_seen_at = $2 WHERE id = $1 AND last_seen_at < $2", [id, at]);
    },
    async revokeConsoleSessions(ownerId, at, which) {
      const { rowCount } = await q.query(
        `UPDATE console_sessions SET revoked_at = $2
         WHERE owner_id = $1 AND revoked_at IS NULL
           AND ($3::text IS NULL OR id = $3) AND ($4::text IS NULL OR id <> $4) AND ($5::text IS NULL OR login = $5)`,
        [ownerId, at, which.only ?? null, which.except ?? null, which.login ?? null],
      );
      return rowCount;
    },
    listConsoleSessions: (ownerId, at) =>
      many(
        q,
        `SELECT * FROM console_sessions WHERE owner_id = $1 AND revoked_at IS NULL AND expires_at > $2
         ORDER BY created_at DESC, id DESC`,
        [ownerId, at],
        sessionFrom,
      ),
    async deleteExpiredConsoleRows(before, limit) {
      const sessions = await q.query(
        "DELETE FROM console_sessions WHERE id IN (SELECT id FROM console_sessions WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)",
        [before, limit],
      );
      const nonces = await q.query(
        "DELETE FROM console_siwe_nonces WHERE nonce IN (SELECT nonce FROM console_siwe_nonces WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)",
        [before, limit],
      );
      return sessions.rowCount + nonces.rowCount;
    },

    async insertSiweNonce(n) {
      await q.query("INSERT INTO console_siwe_nonces (nonce, issued_at, expires_at, used_at) VALUES ($1, $2, $3, NULL)", [
        n.nonce,
        n.issuedAt,
        n.expiresAt,
      ]);
    },
    async useSiweNonce(nonce, at) {
      // One statement: of two requests with one nonce, one updates the row and the other finds it used.
      const { rowCount } = await q.query(
        "UPDATE console_siwe_nonces SET used_at = $2 WHERE nonce = $1 AND used_at IS NULL AND expires_at > $2",
        [nonce, at],
      );
      return rowCount === 1;
    },

    async insertReadToken(t) {
      await q.query(
        "INSERT INTO owner_read_tokens (id, owner_id, name, token_hash, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6)",
        [t.id, t.ownerId, t.name, t.tokenHash, t.createdAt, t.revokedAt],
      );
    },
    getReadToken: (id) => one(q, "SELECT * FROM owner_read_tokens WHERE id = $1", [id], readTokenFrom),
    listReadTokens: (ownerId) =>
      many(q, "SELECT * FROM owner_read_tokens WHERE owner_id = $1 ORDER BY created_at, id", [ownerId], readTokenFrom),
    async revokeReadToken(ownerId, id, at) {
      const { rowCount } = await q.query(
        "UPDATE owner_read_tokens SET revoked_at = $3 WHERE owner_id = $1 AND id = $2 AND revoked_at IS NULL",
        [ownerId, id, at],
      );
      return rowCount === 1;
    },

    async setOwnerTokenHash(ownerId, tokenHash) {
      await q.query("UPDATE owners SET token_hash = $2 WHERE id = $1", [ownerId, tokenHash]);
    },

    getLoginOwner: (address) =>
      one(q, "SELECT owner_id FROM owner_logins WHERE address = $1", [address], (r: { owner_id: string }) => r.owner_id),
    async insertLogin(l) {
      const { rowCount } = await q.query(
        "INSERT INTO owner_logins (address, owner_id, created_at) VALUES ($1, $2, $3) ON CONFLICT (address) DO NOTHING",
        [l.address, l.ownerId, l.createdAt],
      );
      return rowCount === 1;
    },
  };
}
