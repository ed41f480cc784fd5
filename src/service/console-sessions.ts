/**
 * The owners' console's sessions (issue #29): signing in with an owner token (full or read-only) or with
 * Sign-In with Ethereum (EIP-4361, through viem's `viem/siwe`), and what a session is until it ends.
 *
 * A session is a 256-bit random secret in a cookie, stored as its SHA-256 with its owner, scope and
 * expiry, so that it can be listed and revoked; it ends at its absolute timeout, after its idle timeout,
 * or when revoked. Each sign-in makes a new secret (a secret the browser held before is never kept:
 * no session fixation). Its CSRF token is derived from the secret, so it changes with it and is stored nowhere.
 */
import { getAddress, verifyMessage, type Address, type Hex, type PublicClient } from "viem";
import { createSiweMessage, generateSiweNonce, parseSiweMessage, validateSiweMessage } from "viem/siwe";
import { BaseError, InvalidInputError } from "../errors";
import type { Accounts } from "./accounts";
import type { Clock } from "./clock";
import { NotFoundError, UnauthorizedError } from "./errors";
import type { OwnerTokens } from "./owner-tokens";
import type { ConsoleSessionRow, OwnerScope, Store } from "./ports";
// The table, not the wallet's module: loading a kind's module first would start the kinds' import cycle in the middle.
import { PROOF_KIND_MODULES } from "./proofs/kinds";
import { generateId, generateSecret, hashMatches, hashSecret } from "./secrets";

/** How long sessions last (CONSOLE_SESSION_IDLE_S, CONSOLE_SESSION_MAX_S). */
export type ConsoleTimeouts = {
  /** A session not used for this long ends. */
  idleS: number;
  /** A session ends this long after its sign-in, used or not. */
  absoluteS: number;
};

/** One hour idle, twelve hours in all: a working day's sign-in, not a week's. */
export const DEFAULT_CONSOLE_TIMEOUTS: ConsoleTimeouts = { idleS: 3600, absoluteS: 12 * 3600 };

/** A SIWE nonce is good for this long after it is issued; a message must be signed and sent within it. */
export const SIWE_NONCE_TTL_S = 600;
/** How far ahead of the service's clock a message's issued-at may be (the browser's clock may run fast). */
const SIWE_CLOCK_SKEW_S = 60;
/** A session's last use is written at most this often: the idle timeout is kept to within it, without a write per page. */
const TOUCH_EVERY_S = 60;
/** Expired sessions and nonces deleted at most at each sign-in, so that the tables stay the size of what is live. */
const CLEANUP_ROWS = 100;

/** Where Sign-In with Ethereum messages are for: what the service writes into them and checks in them. */
export type SiweTarget = {
  /** The public URL's origin, e.g. `https://vrai.example` (PUBLIC_URL, else the listener's URL). */
  origin(): string;
  /** The chain a message must name (the chain at RPC_URL; 1 when there is none). */
  chainId: number;
  /** That chain, to check a contract account's signature (ERC-1271, ERC-6492); without one only EOAs sign in. */
  client?: PublicClient;
};

/** A live session, as the console's pages use it. */
export type ConsoleSession = {
  id: string;
  ownerId: string;
  scope: OwnerScope;
  login: string;
  /** What every state-changing form of this session sends back (`csrf`). */
  csrfToken: string;
  createdAt: number;
  lastSeenAt: number;
  /** When it ends unless it is used again (the idle timeout) or at the latest (the absolute one). */
  endsAt: number;
  /** When it ends however used (the absolute timeout): how long its cookie is kept. */
  expiresAt: number;
};

/** A sign-in: the new cookie secret and its session. */
export type SignedIn = { secret: string; session: ConsoleSession };

/** A session as the owner sees it listed. */
export type SessionView = Omit<ConsoleSession, "csrfToken" | "ownerId" | "expiresAt"> & { userAgent: string | null };

/** What the browser sent with a sign-in: the session it had (ended by the sign-in), and its user agent (to tell sessions apart). */
export type SignInContext = { previousSecret?: string; userAgent?: string };

export type ConsoleSessions = {
  /** Signs in with an owner token: full for `vo_…`, read-only for `vor_…`. @throws UnauthorizedError `invalid_owner_token` */
  signInWithToken(token: string, context: SignInContext): Promise<SignedIn>;
  /**
   * The EIP-4361 message `address` is asked to sign: for this origin and chain, with a new one-use nonce,
   * issued now and expiring with the nonce. @throws InvalidInputError `siwe_address_invalid`
   */
  siweMessage(address: string): Promise<{ message: string; nonce: string; expiresAt: number }>;
  /**
   * Signs in with a signed EIP-4361 message: its domain, URI, chain, issued-at, expiry and nonce (issued here,
   * used once) are checked, then its signature (an EOA's, or a contract account's on `chainId`). The address signs
   * in as the owner that proved it as a wallet (V6), else as the owner it first signed in as, else as a new owner.
   * @throws InvalidInputError `siwe_message_malformed`; UnauthorizedError `siwe_*` naming what does not hold
   */
  signInWithSiwe(input: { message: string; signature: string }, context: SignInContext): Promise<SignedIn & { created: boolean }>;
  /** The live session of a cookie secret; null when it is unknown, revoked or timed out. */
  resume(secret: string): Promise<ConsoleSession | null>;
  /** Ends the session of a cookie secret, if it is live. */
  signOut(secret: string): Promise<void>;
  /** Ends every session of the owner but `except` (a session id); returns how many. */
  signOutEverywhere(ownerId: string, except?: string): Promise<number>;
  /** Ends one of the owner's sessions. @throws NotFoundError `session_not_found` */
  revoke(ownerId: string, sessionId: string): Promise<void>;
  /** The owner's live sessions, newest first. */
  list(ownerId: string): Promise<SessionView[]>;
  /** Whether `token` is the CSRF token of `session`, compared in constant time. */
  csrfMatches(session: ConsoleSession, token: string): boolean;
};

/** A cookie secret: `vs_` and 43 base64url characters (256 bits). */
const SECRET = /^vs_[A-Za-z0-9_-]{43}$/;

/** A session's CSRF token: derived from its secret, so it is secret too, and ends with it. */
const csrfTokenOf = (secret: string): string => hashSecret(`vrai-console-csrf:${secret}`);

/** The message a person reads in the wallet, above the fields. */
const SIWE_STATEMENT = "Sign in to the Vrai console.";

const isHexSignature = (value: string): value is Hex => /^0x(?:[0-9a-fA-F]{2})+$/.test(value);

const siweRefused = (code: string, message: string) => new UnauthorizedError(code, message);

/**
 * The console's sessions over the store.
 * @param deps.tokens owner tokens, full and read-only (their rules are theirs)
 * @param deps.accounts creates the owner of an address's first sign-in
 */
export function createConsoleSessions(deps: {
  store: Store;
  clock: Clock;
  accounts: Accounts;
  tokens: OwnerTokens;
  siwe: SiweTarget;
  timeouts?: ConsoleTimeouts;
}): ConsoleSessions {
  const { store, clock, siwe } = deps;
  const timeouts = deps.timeouts ?? DEFAULT_CONSOLE_TIMEOUTS;

  const endsAt = (row: ConsoleSessionRow) => Math.min(row.expiresAt, row.lastSeenAt + timeouts.idleS);
  const live = (row: ConsoleSessionRow, at: number) => row.revokedAt === null && endsAt(row) > at;
  const sessionOf = (row: ConsoleSessionRow, secret: string): ConsoleSession => ({
    id: row.id,
    ownerId: row.ownerId,
    scope: row.scope,
    login: row.login,
    csrfToken: csrfTokenOf(secret),
    createdAt: row.createdAt,
    lastSeenAt: row.lastSeenAt,
    endsAt: endsAt(row),
    expiresAt: row.expiresAt,
  });

  /** The stored session of a cookie secret, live or not; null for anything that is not one. */
  async function rowOf(secret: string | undefined): Promise<ConsoleSessionRow | null> {
    if (secret === undefined || !SECRET.test(secret)) return null;
    return store.read.getConsoleSession(hashSecret(secret));
  }

  /** A new session: a new secret, whatever the browser had (its session, if any, ends here). */
  async function signIn(credential: { ownerId: string; scope: OwnerScope; login: string }, context: SignInContext): Promise<SignedIn> {
    const previous = await rowOf(context.previousSecret);
    const secret = generateSecret("vs");
    const at = clock.now();
    const row: ConsoleSessionRow = {
      id: generateId("ses"),
      secretHash: hashSecret(secret),
      ownerId: credential.ownerId,
      scope: credential.scope,
      login: credential.login,
      userAgent: context.userAgent?.slice(0, 200) ?? null,
      createdAt: at,
      lastSeenAt: at,
      expiresAt: at + timeouts.absoluteS,
      revokedAt: null,
    };
    await store.transaction(async (tx) => {
      if (previous) await tx.revokeConsoleSessions(previous.ownerId, at, { only: previous.id });
      await tx.deleteExpiredConsoleRows(at, CLEANUP_ROWS);
      await tx.insertConsoleSession(row);
    });
    return { secret, session: sessionOf(row, secret) };
  }

  async function siweMessage(address: string): Promise<{ message: string; nonce: string; expiresAt: number }> {
    if (!/^0x[0-9a-fA-F]{40}$/.test(address))
      throw new InvalidInputError("siwe_address_invalid", "the address is not a 20-byte hex address");
    const at = clock.now();
    const nonce = generateSiweNonce();
    const expiresAt = at + SIWE_NONCE_TTL_S;
    // Anyone may ask for a nonce: each request also deletes some expired ones, so what it stores stays bounded by the rate limit.
    await store.transaction(async (tx) => {
      await tx.deleteExpiredConsoleRows(at, CLEANUP_ROWS);
      await tx.insertSiweNonce({ nonce, issuedAt: at, expiresAt });
    });
    const origin = new URL(siwe.origin());
    const message = createSiweMessage({
      address: getAddress(address.toLowerCase()),
      domain: origin.host,
      uri: `${origin.origin}/console`,
      chainId: siwe.chainId,
      nonce,
      version: "1",
      statement: SIWE_STATEMENT,
      issuedAt: new Date(at * 1000),
      expirationTime: new Date(expiresAt * 1000),
      ...(origin.protocol === "https:" ? {} : { scheme: origin.protocol.slice(0, -1) }),
    });
    return { message, nonce, expiresAt };
  }

  /** Every field of a signed message that must hold, each refused in words that say which. */
  function checkSiweFields(message: string, at: number): { address: Address; nonce: string } {
    const fields = parseSiweMessage(message);
    const { address, nonce, chainId, uri, issuedAt } = fields;
    if (!address || !nonce || chainId === undefined || !uri || !fields.domain || fields.version !== "1" || !issuedAt)
      throw new InvalidInputError("siwe_message_malformed", "the message is not a Sign-In with Ethereum (EIP-4361) message");
    const origin = new URL(siwe.origin());
    if (fields.domain !== origin.host || (fields.scheme !== undefined && `${fields.scheme}:` !== origin.protocol))
      throw siweRefused(
        "siwe_domain_mismatch",
        `the message is for ${fields.domain}, not for ${origin.host}: sign in from ${origin.origin}`,
      );
    if (!URL.canParse(uri) || new URL(uri).origin !== origin.origin)
      throw siweRefused("siwe_uri_mismatch", `the message's URI ${uri} is not under ${origin.origin}`);
    if (chainId !== siwe.chainId)
      throw siweRefused("siwe_chain_mismatch", `the message is for chain ${chainId}; this service signs in on chain ${siwe.chainId}`);
    const issued = issuedAt.getTime() / 1000;
    if (!(issued <= at + SIWE_CLOCK_SKEW_S && issued > at - SIWE_NONCE_TTL_S))
      throw siweRefused(
        "siwe_expired",
        "the message was issued more than 10 minutes ago, or later than now: ask for a new one and sign it",
      );
    // viem's check of what is left: the expiry and not-before against our clock, the nonce's and address's form, the version.
    if (!validateSiweMessage({ message: fields, domain: origin.host, time: new Date(at * 1000) }))
      throw siweRefused("siwe_expired", "the message has expired or is not valid yet: ask for a new one and sign it");
    return { address, nonce };
  }

  /** Whether `address` signed `message`: an EOA offline, a contract account on the chain (viem's verifySiweMessage). */
  async function signedBy(address: Address, message: string, signature: Hex, at: number): Promise<boolean> {
    if (siwe.client === undefined) return verifyMessage({ address, message, signature }).catch(() => false);
    try {
      return await siwe.client.verifySiweMessage({ message, signature, time: new Date(at * 1000) });
    } catch (error) {
      throw new BaseError("siwe_chain_unreachable", "the chain could not be reached to check a contract account's signature: try again", {
        status: 503,
        cause: error,
        retryable: true,
      });
    }
  }

  /** The owner an address signs in as: its wallet proof's (V6), else its first sign-in's, else a new owner's. */
  async function ownerOfAddress(signer: Address): Promise<{ ownerId: string; created: boolean }> {
    const binding = PROOF_KIND_MODULES.wallet.binding({ kind: "wallet", subject: signer, address: signer });
    const proven = await store.read.findActiveBinding(binding);
    if (proven) return { ownerId: proven.ownerId, created: false };
    const address = signer.toLowerCase();
    const known = await store.read.getLoginOwner(address);
    if (known !== null) return { ownerId: known, created: false };
    const { ownerId } = await deps.accounts.createOwner();
    // Two first sign-ins of one address at once: the first recorded wins, the other's new owner stays empty.
    if (await store.read.insertLogin({ address, ownerId, createdAt: clock.now() })) return { ownerId, created: true };
    return { ownerId: (await store.read.getLoginOwner(address)) ?? ownerId, created: false };
  }

  async function signInWithSiwe(input: { message: string; signature: string }, context: SignInContext) {
    const at = clock.now();
    const { address, nonce } = checkSiweFields(input.message, at);
    const { signature } = input;
    if (!isHexSignature(signature)) throw new InvalidInputError("siwe_signature_malformed", "the signature is not 0x-prefixed hex");
    if (!(await signedBy(address, input.message, signature, at)))
      throw siweRefused("siwe_signature_invalid", `the signature is not ${address}'s signature of this message`);
    // Last, so that only a message that holds uses its nonce; one statement, so that of two uses one wins.
    if (!(await store.read.useSiweNonce(nonce, at)))
      throw siweRefused("siwe_nonce_invalid", "the message's nonce was not issued here, was used already or has expired: sign in again");
    const { ownerId, created } = await ownerOfAddress(address);
    return { ...(await signIn({ ownerId, scope: "full", login: `siwe:${address.toLowerCase()}` }, context)), created };
  }

  async function resume(secret: string): Promise<ConsoleSession | null> {
    const row = await rowOf(secret);
    const at = clock.now();
    if (!row || !live(row, at)) return null;
    if (at - row.lastSeenAt >= TOUCH_EVERY_S) {
      await store.read.touchConsoleSession(row.id, at);
      row.lastSeenAt = at;
    }
    return sessionOf(row, secret);
  }

  return {
    async signInWithToken(token, context) {
      return signIn(await deps.tokens.authenticate(token), context);
    },
    siweMessage,
    signInWithSiwe,
    resume,
    async signOut(secret) {
      const row = await rowOf(secret);
      if (row) await store.read.revokeConsoleSessions(row.ownerId, clock.now(), { only: row.id });
    },
    signOutEverywhere: (ownerId, except) => store.read.revokeConsoleSessions(ownerId, clock.now(), except === undefined ? {} : { except }),
    async revoke(ownerId, sessionId) {
      if ((await store.read.revokeConsoleSessions(ownerId, clock.now(), { only: sessionId })) === 0)
        throw new NotFoundError("session_not_found", "you have no such session signed in: it has ended already");
    },
    async list(ownerId) {
      const at = clock.now();
      return (await store.read.listConsoleSessions(ownerId, at))
        .filter((row) => live(row, at))
        .map((row) => ({
          id: row.id,
          scope: row.scope,
          login: row.login,
          userAgent: row.userAgent,
          createdAt: row.createdAt,
          lastSeenAt: row.lastSeenAt,
          endsAt: endsAt(row),
        }));
    },
    csrfMatches: (session, token) => /^[0-9a-f]{64}$/.test(token) && hashMatches(token, session.csrfToken),
  };
}
