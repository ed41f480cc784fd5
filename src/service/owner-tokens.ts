/**
 * Owner credentials (issue #29): the full owner token (Accounts) and read-only owner tokens, which may
 * read everything their owner may and change nothing, as Healthchecks.io separates its API keys.
 */
import type { Accounts } from "./accounts";
import type { Clock } from "./clock";
import { ConflictError, NotFoundError, UnauthorizedError } from "./errors";
import type { OwnerScope, ReadTokenRow, Store } from "./ports";
import { generateId, generateSecret, hashSecret, secretMatches } from "./secrets";

/** An owner credential once checked: whose, what it may do, and how the console names the sign-in it makes. */
export type OwnerCredential = { ownerId: string; scope: OwnerScope; login: string };

/** A read-only token as the owner sees it listed: never the token itself. */
export type ReadTokenView = { id: string; name: string; createdAt: number; revokedAt: number | null };

/** Read-only tokens an owner may have at once, revoked ones aside: each is a row, and each a way in. */
export const MAX_READ_TOKENS = 20;

/** What the console names a sign-in with the full owner token. */
export const OWNER_TOKEN_LOGIN = "owner-token";
/** What the console names a sign-in with a read-only token. */
export const readTokenLogin = (tokenId: string): string => `read-token:${tokenId}`;

export type OwnerTokens = {
  /** Checks an owner token (`vo_…`, full) or a read-only token (`vor_…`); 401 `invalid_owner_token` when it is neither. */
  authenticate(token: string): Promise<OwnerCredential>;
  /** A new read-only token, returned this once (only its hash is kept). @throws ConflictError `limit_reached` past MAX_READ_TOKENS */
  createReadToken(ownerId: string, name: string): Promise<ReadTokenView & { token: string }>;
  /** The owner's read-only tokens, revoked ones too, oldest first. */
  listReadTokens(ownerId: string): Promise<ReadTokenView[]>;
  /**
   * Revokes one of the owner's read-only tokens: it stops at once, and so do the console sessions signed in with it.
   * @throws NotFoundError `read_token_not_found` when the owner has no such token not revoked yet
   */
  revokeReadToken(ownerId: string, tokenId: string): Promise<ReadTokenView>;
  /**
   * A new full owner token, returned this once; the old one stops at once, and so do the console sessions signed in
   * with an owner token (but `keepSession`, the console session that asked for it).
   */
  rotateOwnerToken(ownerId: string, options?: { keepSession?: string }): Promise<{ token: string }>;
};

const READ_TOKEN = /^vor_([A-Za-z0-9_-]{1,64})\./;

const viewOf = (row: ReadTokenRow): ReadTokenView => ({ id: row.id, name: row.name, createdAt: row.createdAt, revokedAt: row.revokedAt });

/** Owner credentials over the store; the full token's rules stay in `accounts`. */
export function createOwnerTokens(deps: { store: Store; clock: Clock; accounts: Accounts }): OwnerTokens {
  const { store, clock, accounts } = deps;

  async function authenticate(token: string): Promise<OwnerCredential> {
    const match = READ_TOKEN.exec(token);
    if (match === null) return { ownerId: await accounts.authenticateOwner(token), scope: "full", login: OWNER_TOKEN_LOGIN };
    const row = await store.read.getReadToken(match[1]);
    if (!row || row.revokedAt !== null || !secretMatches(token, row.tokenHash))
      throw new UnauthorizedError("invalid_owner_token", "the owner token is not valid");
    return { ownerId: row.ownerId, scope: "read", login: readTokenLogin(row.id) };
  }

  async function createReadToken(ownerId: string, name: string): Promise<ReadTokenView & { token: string }> {
    const id = generateId("tok");
    const token = `vor_${id}.${generateSecret("r")}`;
    const row: ReadTokenRow = { id, ownerId, name, tokenHash: hashSecret(token), createdAt: clock.now(), revokedAt: null };
    await store.transaction(async (tx) => {
      // Locked: two creations at the limit are counted one after the other.
      if (!(await tx.getOwner(ownerId, { lock: true }))) throw new NotFoundError("owner_not_found", `owner ${ownerId} does not exist`);
      const active = (await tx.listReadTokens(ownerId)).filter((t) => t.revokedAt === null).length;
      if (active >= MAX_READ_TOKENS)
        throw new ConflictError(
          "limit_reached",
          `limit reached: an owner may have at most ${MAX_READ_TOKENS} read-only tokens; revoke one first`,
        );
      await tx.insertReadToken(row);
    });
    return { ...viewOf(row), token };
  }

  async function revokeReadToken(ownerId: string, tokenId: string): Promise<ReadTokenView> {
    return store.transaction(async (tx) => {
      const at = clock.now();
      const row = await tx.getReadToken(tokenId);
      if (!row || row.ownerId !== ownerId || !(await tx.revokeReadToken(ownerId, tokenId, at)))
        throw new NotFoundError("read_token_not_found", `you have no read-only token ${tokenId} that is not revoked already`);
      await tx.revokeConsoleSessions(ownerId, at, { login: readTokenLogin(tokenId) });
      return viewOf({ ...row, revokedAt: at });
    });
  }

  return {
    authenticate,
    createReadToken,
    listReadTokens: async (ownerId) => (await store.read.listReadTokens(ownerId)).map(viewOf),
    revokeReadToken,
    async rotateOwnerToken(ownerId, options = {}) {
      const token = await accounts.rotateOwnerToken(ownerId);
      // Whoever signed in with the old token (a leaked one is why it is rotated) is signed out with it.
      const which = { login: OWNER_TOKEN_LOGIN, ...(options.keepSession === undefined ? {} : { except: options.keepSession }) };
      await store.read.revokeConsoleSessions(ownerId, clock.now(), which);
      return { token };
    },
  };
}
