/** The console part of the memory store (`ConsoleTx`, issue #29): what `src/store/console.ts` keeps in SQL, in maps. */
import type { ConsoleSessionRow, ConsoleTx, OwnerRow, ReadTokenRow } from "../service/ports";

/** The console's rows in memory, over the memory store's `owners` (a rotated token replaces an owner's row). */
export function createMemoryConsole(owners: Map<string, OwnerRow>): ConsoleTx {
  const sessions = new Map<string, ConsoleSessionRow>();
  const nonces = new Map<string, { nonce: string; issuedAt: number; expiresAt: number; usedAt: number | null }>();
  const readTokens = new Map<string, ReadTokenRow>();
  const logins = new Map<string, string>();
  const ofOwner = (ownerId: string) => [...sessions.values()].filter((s) => s.ownerId === ownerId && s.revokedAt === null);

  return {
    insertConsoleSession: async (s) => void sessions.set(s.id, { ...s }),
    getConsoleSession: async (secretHash) => {
      const found = [...sessions.values()].find((s) => s.secretHash === secretHash);
      return found === undefined ? null : { ...found };
    },
    async touchConsoleSession(id, at) {
      const s = sessions.get(id);
      if (s && s.lastSeenAt < at) s.lastSeenAt = at;
    },
    async revokeConsoleSessions(ownerId, at, which) {
      const revoked = ofOwner(ownerId).filter(
        (s) =>
          (which.only === undefined || s.id === which.only) &&
          (which.except === undefined || s.id !== which.except) &&
          (which.login === undefined || s.login === which.login),
      );
      for (const s of revoked) s.revokedAt = at;
      return revoked.length;
    },
    listConsoleSessions: async (ownerId, at) =>
      ofOwner(ownerId)
        .filter((s) => s.expiresAt > at)
        .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
        .map((s) => ({ ...s })),
    async deleteExpiredConsoleRows(before, limit) {
      const expiredSessions = [...sessions.values()].filter((s) => s.expiresAt <= before).slice(0, limit);
      for (const s of expiredSessions) sessions.delete(s.id);
      const expiredNonces = [...nonces.values()].filter((n) => n.expiresAt <= before).slice(0, limit);
      for (const n of expiredNonces) nonces.delete(n.nonce);
      return expiredSessions.length + expiredNonces.length;
    },

    insertSiweNonce: async (n) => void nonces.set(n.nonce, { ...n, usedAt: null }),
    async useSiweNonce(nonce, at) {
      const n = nonces.get(nonce);
      if (!n || n.usedAt !== null || n.expiresAt <= at) return false;
      n.usedAt = at;
      return true;
    },

    insertReadToken: async (t) => void readTokens.set(t.id, { ...t }),
    getReadToken: async (id) => {
      const t = readTokens.get(id);
      return t === undefined ? null : { ...t };
    },
    listReadTokens: async (ownerId) =>
      [...readTokens.values()]
        .filter((t) => t.ownerId === ownerId)
        .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
        .map((t) => ({ ...t })),
    async revokeReadToken(ownerId, id, at) {
      const t = readTokens.get(id);
      if (!t || t.ownerId !== ownerId || t.revokedAt !== null) return false;
      t.revokedAt = at;
      return true;
    },

    async setOwnerTokenHash(ownerId, tokenHash) {
      const owner = owners.get(ownerId);
      if (owner) owners.set(ownerId, { ...owner, tokenHash });
    },

    getLoginOwner: async (address) => logins.get(address) ?? null,
    async insertLogin(l) {
      if (logins.has(l.address)) return false;
      logins.set(l.address, l.ownerId);
      return true;
    },
  };
}
