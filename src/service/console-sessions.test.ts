import { expect } from "chai";
import { hashMessage, type Address, type PublicClient } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createSiweMessage, parseSiweMessage } from "viem/siwe";
import { BaseError } from "../errors";
import { createMemoryStore } from "../store/memory-store";
import { startTestChain, type TestChain } from "../test-helpers/chain";
import { EVERY_STORE } from "../test-helpers/stores";
import { createAccounts, type Accounts } from "./accounts";
import { createManualClock } from "./clock";
import { createConsoleSessions, SIWE_NONCE_TTL_S, type ConsoleSessions } from "./console-sessions";
import { createOwnerTokens, type OwnerTokens } from "./owner-tokens";
import type { Store } from "./ports";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const ORIGIN = "https://vrai.example";
const TIMEOUTS = { idleS: 1800, absoluteS: 8 * 3600 };

/** The error code `promise` rejects with. */
async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof BaseError) return error.code;
    throw error;
  }
  throw new Error("expected a refusal");
}

for (const setup of EVERY_STORE) {
  describe(`console sessions and owner tokens (issue #29) on ${setup.name}`, () => {
    let store: Store;
    let close: () => Promise<void>;
    let accounts: Accounts;
    let tokens: OwnerTokens;
    let sessions: ConsoleSessions;
    const clock = createManualClock(T0);

    before(async () => {
      ({ store, close } = await setup.open());
      accounts = createAccounts({ store, clock });
      tokens = createOwnerTokens({ store, clock, accounts });
      sessions = createConsoleSessions({ store, clock, accounts, tokens, timeouts: TIMEOUTS, siwe: { origin: () => ORIGIN, chainId: 1 } });
    });
    after(() => close());
    beforeEach(() => clock.set(T0));

    /** A message of the service's, signed by `account`. */
    const signedMessage = async (account = privateKeyToAccount(generatePrivateKey())) => {
      const { message } = await sessions.siweMessage(account.address);
      return { account, message, signature: await account.signMessage({ message }) };
    };

    it("signs in with the owner token: a full session, found again by its secret, with a CSRF token of its own", async () => {
      const { ownerId, token } = await accounts.createOwner();
      const { secret, session } = await sessions.signInWithToken(token, { userAgent: "test" });
      expect(secret).to.match(/^vs_[A-Za-z0-9_-]{43}$/);
      expect(session).to.include({ ownerId, scope: "full", login: "owner-token" });
      const resumed = await sessions.resume(secret);
      expect(resumed?.id).to.equal(session.id);
      expect(resumed?.csrfToken).to.equal(session.csrfToken);
      expect(sessions.csrfMatches(session, session.csrfToken)).to.equal(true);
      const other = await sessions.signInWithToken(token, {});
      expect(sessions.csrfMatches(session, other.session.csrfToken)).to.equal(false);
      expect(await codeOf(sessions.signInWithToken(`${token}x`, {}))).to.equal("invalid_owner_token");
    });

    it("keeps only the hash of a session's secret", async () => {
      const { token } = await accounts.createOwner();
      const { secret, session } = await sessions.signInWithToken(token, {});
      const rows = await store.read.listConsoleSessions(session.ownerId, clock.now());
      expect(rows).to.have.length(1);
      expect(JSON.stringify(rows)).not.to.contain(secret.slice(3));
      expect(await sessions.resume(`${secret.slice(0, -1)}A`)).to.equal(null);
    });

    it("never adopts a secret the browser had: each sign-in makes a new one, and ends the session it replaces", async () => {
      const { token } = await accounts.createOwner();
      const first = await sessions.signInWithToken(token, {});
      const second = await sessions.signInWithToken(token, { previousSecret: first.secret });
      expect(second.secret).not.to.equal(first.secret);
      expect(await sessions.resume(first.secret)).to.equal(null);
      expect(await sessions.resume(second.secret)).not.to.equal(null);
      // A made-up secret is no session, and signing in over it makes a new one all the same.
      const planted = `vs_${"A".repeat(43)}`;
      expect(await sessions.resume(planted)).to.equal(null);
      const third = await sessions.signInWithToken(token, { previousSecret: planted });
      expect(third.secret).not.to.equal(planted);
    });

    it("ends a session unused for the idle timeout, and any session at the absolute timeout however used", async () => {
      const { token } = await accounts.createOwner();
      const idle = await sessions.signInWithToken(token, {});
      clock.set(T0 + TIMEOUTS.idleS - 1);
      expect(await sessions.resume(idle.secret)).not.to.equal(null);
      clock.set(T0 + TIMEOUTS.idleS - 1 + TIMEOUTS.idleS);
      expect(await sessions.resume(idle.secret), "used at idle - 1 s, then idle again").to.equal(null);

      clock.set(T0);
      const busy = await sessions.signInWithToken(token, {});
      for (let t = T0 + 600; t < T0 + TIMEOUTS.absoluteS; t += 600) {
        clock.set(t);
        expect(await sessions.resume(busy.secret), `at +${t - T0} s`).not.to.equal(null);
      }
      clock.set(T0 + TIMEOUTS.absoluteS);
      expect(await sessions.resume(busy.secret)).to.equal(null);
    });

    it("lists the owner's live sessions, signs one out, and signs out everywhere", async () => {
      const { ownerId, token } = await accounts.createOwner();
      const a = await sessions.signInWithToken(token, { userAgent: "A" });
      const b = await sessions.signInWithToken(token, { userAgent: "B" });
      const c = await sessions.signInWithToken(token, { userAgent: "C" });
      expect((await sessions.list(ownerId)).map((s) => s.userAgent)).to.have.members(["A", "B", "C"]);
      await sessions.revoke(ownerId, a.session.id);
      expect(await sessions.resume(a.secret)).to.equal(null);
      expect(await codeOf(sessions.revoke(ownerId, a.session.id))).to.equal("session_not_found");
      const stranger = await accounts.createOwner();
      expect(await codeOf(sessions.revoke(stranger.ownerId, b.session.id)), "another owner's session").to.equal("session_not_found");
      expect(await sessions.signOutEverywhere(ownerId)).to.equal(2);
      expect(await sessions.resume(b.secret)).to.equal(null);
      expect(await sessions.resume(c.secret)).to.equal(null);
      expect(await sessions.list(ownerId)).to.deep.equal([]);
    });

    it("read-only tokens: shown once, a read session, listed without the token, and revoked with their sessions", async () => {
      const { ownerId } = await accounts.createOwner();
      const created = await tokens.createReadToken(ownerId, "dashboard");
      expect(created.token).to.match(/^vor_tok_[0-9a-f]{16}\./);
      expect(await tokens.authenticate(created.token)).to.deep.equal({ ownerId, scope: "read", login: `read-token:${created.id}` });
      const { secret, session } = await sessions.signInWithToken(created.token, {});
      expect(session.scope).to.equal("read");
      const listed = await tokens.listReadTokens(ownerId);
      expect(listed).to.deep.equal([{ id: created.id, name: "dashboard", createdAt: T0, revokedAt: null }]);
      clock.set(T0 + 60);
      await tokens.revokeReadToken(ownerId, created.id);
      expect(await codeOf(tokens.authenticate(created.token))).to.equal("invalid_owner_token");
      expect(await sessions.resume(secret), "the session it signed in").to.equal(null);
      expect((await tokens.listReadTokens(ownerId))[0].revokedAt).to.equal(T0 + 60);
      expect(await codeOf(tokens.revokeReadToken(ownerId, created.id))).to.equal("read_token_not_found");
    });

    it("rotates the owner token: the new one works, the old one stops at once, and so do the sessions it signed in but the one kept", async () => {
      const { ownerId, token } = await accounts.createOwner();
      const kept = await sessions.signInWithToken(token, {});
      const other = await sessions.signInWithToken(token, {});
      const { token: rotated } = await tokens.rotateOwnerToken(ownerId, { keepSession: kept.session.id });
      expect(await sessions.resume(kept.secret)).not.to.equal(null);
      expect(await sessions.resume(other.secret)).to.equal(null);
      expect(rotated).not.to.equal(token);
      expect(await codeOf(accounts.authenticateOwner(token))).to.equal("invalid_owner_token");
      expect(await accounts.authenticateOwner(rotated)).to.equal(ownerId);
    });

    describe("Sign-In with Ethereum", () => {
      it("gives a message for this origin and chain, with a nonce, issued now and expiring with the nonce", async () => {
        const account = privateKeyToAccount(generatePrivateKey());
        const { message, nonce, expiresAt } = await sessions.siweMessage(account.address.toLowerCase());
        const fields = parseSiweMessage(message);
        expect(fields).to.include({
          domain: "vrai.example",
          uri: `${ORIGIN}/console`,
          chainId: 1,
          nonce,
          version: "1",
          address: account.address,
        });
        expect(fields.issuedAt?.getTime()).to.equal(T0 * 1000);
        expect(fields.expirationTime?.getTime()).to.equal((T0 + SIWE_NONCE_TTL_S) * 1000);
        expect(expiresAt).to.equal(T0 + SIWE_NONCE_TTL_S);
        expect(await codeOf(sessions.siweMessage("0x1234"))).to.equal("siwe_address_invalid");
      });

      it("deletes expired nonces and sessions as new nonces are asked for, so that asking for many stores no more", async () => {
        const { token } = await accounts.createOwner();
        await store.read.deleteExpiredConsoleRows(T0 + 10 * 86_400, 10_000);
        for (let i = 0; i < 3; i++) await signedMessage();
        await sessions.signInWithToken(token, {});
        clock.set(T0 + TIMEOUTS.absoluteS);
        await signedMessage();
        // What the nonce request left: its own nonce only, not yet expired.
        expect(await store.read.deleteExpiredConsoleRows(T0 + TIMEOUTS.absoluteS, 10_000)).to.equal(0);
        expect(await store.read.deleteExpiredConsoleRows(T0 + TIMEOUTS.absoluteS + SIWE_NONCE_TTL_S, 10_000)).to.equal(1);
      });

      it("a first sign-in makes a new owner, and the address signs in as that owner again", async () => {
        const first = await signedMessage();
        const signedIn = await sessions.signInWithSiwe(first, {});
        expect(signedIn.created).to.equal(true);
        expect(signedIn.session).to.include({ scope: "full", login: `siwe:${first.account.address.toLowerCase()}` });
        expect(await store.read.getOwner(signedIn.session.ownerId)).not.to.equal(null);
        const again = await sessions.signInWithSiwe(await signedMessage(first.account), {});
        expect(again.created).to.equal(false);
        expect(again.session.ownerId).to.equal(signedIn.session.ownerId);
      });

      it("an address an owner proved as its wallet (V6) signs in as that owner", async () => {
        const { ownerId } = await accounts.createOwner();
        const account = privateKeyToAccount(generatePrivateKey());
        const address = account.address.toLowerCase();
        await store.transaction((tx) =>
          tx.insertProof({
            id: `prf_${address.slice(2, 18)}`,
            kind: "wallet",
            ownerId,
            agentId: null,
            subject: address,
            binding: `wallet:${address}`,
            evidence: {},
            verifiedAt: T0,
            lastCheckedAt: T0,
            consecutiveFailures: 0,
            removedAt: null,
            removedReason: null,
          }),
        );
        const signedIn = await sessions.signInWithSiwe(await signedMessage(account), {});
        expect(signedIn).to.include({ created: false });
        expect(signedIn.session.ownerId).to.equal(ownerId);
      });

      it("refuses a replayed message: its nonce was used", async () => {
        const signed = await signedMessage();
        await sessions.signInWithSiwe(signed, {});
        expect(await codeOf(sessions.signInWithSiwe(signed, {}))).to.equal("siwe_nonce_invalid");
      });

      it("of two sign-ins with one signed message at once, one signs in and the other is refused", async () => {
        const signed = await signedMessage();
        const results = await Promise.allSettled([sessions.signInWithSiwe(signed, {}), sessions.signInWithSiwe(signed, {})]);
        expect(results.filter((r) => r.status === "fulfilled")).to.have.length(1);
        const refused = results.find((r) => r.status === "rejected");
        expect(refused?.status === "rejected" && refused.reason instanceof BaseError && refused.reason.code).to.equal("siwe_nonce_invalid");
      });

      it("refuses a nonce the service never issued, and one that expired unused", async () => {
        const account = privateKeyToAccount(generatePrivateKey());
        const { message } = await sessions.siweMessage(account.address);
        const fields = parseSiweMessage(message);
        const madeUp = createSiweMessage({
          ...fields,
          address: account.address,
          domain: "vrai.example",
          uri: `${ORIGIN}/console`,
          chainId: 1,
          nonce: "abcdefgh1234",
          version: "1",
        });
        expect(
          await codeOf(sessions.signInWithSiwe({ message: madeUp, signature: await account.signMessage({ message: madeUp }) }, {})),
        ).to.equal("siwe_nonce_invalid");
        // Expired: its message expires with it.
        const late = await signedMessage();
        clock.set(T0 + SIWE_NONCE_TTL_S);
        expect(await codeOf(sessions.signInWithSiwe(late, {}))).to.equal("siwe_expired");
      });

      it("refuses a message for another domain, another origin, or another chain, and a signature by another address", async () => {
        const account = privateKeyToAccount(generatePrivateKey());
        const { message } = await sessions.siweMessage(account.address);
        const fields = parseSiweMessage(message);
        const base = {
          ...fields,
          address: account.address,
          domain: "vrai.example",
          uri: `${ORIGIN}/console`,
          chainId: 1,
          nonce: fields.nonce!,
          version: "1" as const,
        };
        const refusal = async (changed: Partial<typeof base>) => {
          const text = createSiweMessage({ ...base, ...changed });
          return codeOf(sessions.signInWithSiwe({ message: text, signature: await account.signMessage({ message: text }) }, {}));
        };
        expect(await refusal({ domain: "evil.example" })).to.equal("siwe_domain_mismatch");
        expect(await refusal({ uri: "https://evil.example/console" })).to.equal("siwe_uri_mismatch");
        expect(await refusal({ chainId: 10 })).to.equal("siwe_chain_mismatch");
        expect(await refusal({ issuedAt: new Date((T0 - SIWE_NONCE_TTL_S) * 1000) })).to.equal("siwe_expired");
        expect(await refusal({ issuedAt: new Date((T0 + 3600) * 1000) }), "issued in the future").to.equal("siwe_expired");
        expect(await refusal({ notBefore: new Date((T0 + 60) * 1000) }), "not valid yet").to.equal("siwe_expired");
        const other = privateKeyToAccount(generatePrivateKey());
        expect(await codeOf(sessions.signInWithSiwe({ message, signature: await other.signMessage({ message }) }, {}))).to.equal(
          "siwe_signature_invalid",
        );
        expect(await codeOf(sessions.signInWithSiwe({ message: "hello", signature: "0x00" }, {}))).to.equal("siwe_message_malformed");
        // None of these used the nonce: the message as issued still signs in.
        expect((await sessions.signInWithSiwe({ message, signature: await account.signMessage({ message }) }, {})).created).to.equal(true);
      });
    });
  });
}

describe("Sign-In with Ethereum by a contract account (ERC-1271) through the chain (issue #29)", () => {
  // Fixed test keys (never funded anywhere).
  const alice = privateKeyToAccount("0x1111111111111111111111111111111111111111111111111111111111111111");
  const mallory = privateKeyToAccount("0x2222222222222222222222222222222222222222222222222222222222222222");
  let chain: TestChain;
  let wallet: Address;
  const clock = createManualClock(T0);
  const store = createMemoryStore();
  const accounts = createAccounts({ store, clock });
  const tokens = createOwnerTokens({ store, clock, accounts });
  const sessionsOn = (client: PublicClient | undefined) =>
    createConsoleSessions({ store, clock, accounts, tokens, siwe: { origin: () => ORIGIN, chainId: chain.chain.id, client } });

  before(async () => {
    chain = await startTestChain();
    ({ address: wallet } = await chain.deployContract("MockERC1271Wallet", [alice.address]));
  });
  after(() => chain?.close());

  /** The service's message for the contract wallet, signed by `signer` as the wallet's isValidSignature expects. */
  const signedBy = async (sessions: ConsoleSessions, signer: typeof alice) => {
    const { message } = await sessions.siweMessage(wallet);
    return { message, signature: await signer.sign({ hash: hashMessage(message) }) };
  };

  it("signs in when the wallet's isValidSignature approves its owner's signature", async () => {
    const sessions = sessionsOn(chain.publicClient as PublicClient);
    const signedIn = await sessions.signInWithSiwe(await signedBy(sessions, alice), {});
    expect(signedIn.session.login).to.equal(`siwe:${wallet.toLowerCase()}`);
  });

  it("refuses a signature the wallet refuses, and any contract account's signature without a chain", async () => {
    const sessions = sessionsOn(chain.publicClient as PublicClient);
    expect(await codeOf(sessions.signInWithSiwe(await signedBy(sessions, mallory), {}))).to.equal("siwe_signature_invalid");
    const offline = sessionsOn(undefined);
    expect(await codeOf(offline.signInWithSiwe(await signedBy(offline, alice), {}))).to.equal("siwe_signature_invalid");
  });
});
