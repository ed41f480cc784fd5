/**
 * Vrai's ERC-8004 feedback on a local chain (issue #27): the reference identity and reputation registries behind their
 * proxies and an AnchorRegistry on the in-process Hardhat chain (served over HTTP too), the API on PostgreSQL with a
 * manual clock, daily anchoring, and a publisher account. Accounts: 0 deploys (and owns the proxies), 1 anchors, 2 and 3
 * hold identity tokens 0 and 1, 4 is the publisher (it holds no token). Each `day()` checks the agent in, then runs the
 * next midnight's recompute and anchors its root in a block of the service's time, as `vrai serve` does.
 */
import pino from "pino";
import { getAddress, toHex, type Address, type PublicClient } from "viem";
import { startApiServer, type ApiServer } from "../app/server";
import { identityRegistryAbi } from "../chain/abi/identityRegistry";
import { reputationRegistryAbi } from "../chain/abi/reputationRegistry";
import { createAnchorWriter } from "../chain/anchor-writer";
import { createFeedbackWriter, type FeedbackWriter } from "../chain/reputation-registry";
import { createAccountLocks } from "../chain/signer";
import { createManualClock, type Clock } from "../service/clock";
import type { FeedbackTarget } from "../service/erc8004-publishing";
import { apiClient, type ApiClient } from "./api-client";
import { startTestChain, type TestChain } from "./chain";
import { createTestPgDb, type TestDb } from "./db";
import { serveTestChainRpc, type ChainRpcServer } from "./hardhat-node";

const DAY_S = 86_400;
/** The account index of each role. */
export const ACCOUNTS = { anchorer: 1, holder: 2, otherHolder: 3, publisher: 4 } as const;
export const OPERATOR_TOKEN = "op-token-erc8004-feedback-000";

/** The registries on the chain, and where feedback goes. */
export type FeedbackChain = {
  chain: TestChain;
  rpc: ChainRpcServer;
  anchorRegistry: Address;
  identityRegistry: Address;
  target: FeedbackTarget;
  /** The private key of account `i`. */
  keyOf(i: number): `0x${string}`;
};

/** Deploys the registries and registers tokens 0 (account 2) and 1 (account 3). */
export async function deployFeedbackChain(chain: TestChain): Promise<FeedbackChain> {
  const rpc = await serveTestChainRpc();
  const mined = async (hash: `0x${string}`) => void (await chain.publicClient.waitForTransactionReceipt({ hash }));
  const anchorRegistry = await chain.deployAnchorRegistry(ACCOUNTS.anchorer);
  const identityRegistry = getAddress((await chain.deployReferenceIdentity()).address);
  const reputationRegistry = getAddress((await chain.deployReferenceReputation(identityRegistry)).address);
  for (const holder of [ACCOUNTS.holder, ACCOUNTS.otherHolder]) {
    await mined(
      await chain.walletClients[holder].writeContract({
        address: identityRegistry,
        abi: identityRegistryAbi,
        functionName: "register",
        args: [`ipfs://agent-${holder}`],
      }),
    );
  }
  return {
    chain,
    rpc,
    anchorRegistry,
    identityRegistry,
    target: { chainId: chain.chain.id, registry: reputationRegistry, identityRegistry },
    keyOf: (i) => chain.keys[i],
  };
}

export type FeedbackSystem = FeedbackChain & {
  testDb: TestDb;
  server: ApiServer;
  clock: Clock & { set(t: number): void };
  api: ApiClient["call"];
  publisher: Address;
  /** The owner of the agent, and the agent, with an erc8004 proof of token 0 made through the API. */
  ownerToken: string;
  agent: { agentId: string; agentKey: string; proofId: string };
  /** Claims a new agent of the owner and proves token `tokenId` of `holder` for it through the API; its proof id. */
  proveIdentity(agentId: string, tokenId: bigint, holder: number, registry?: Address): Promise<string>;
  /** Checks `agent` in three times from 10:00 (`checkins` false: not at all), then runs the next midnight; the day's name. */
  day(options?: { checkins?: boolean }): Promise<string>;
  /** `getSummary(tokenId, [publisher], tag1, "")` of the reputation registry. */
  summary(tag1: string, tokenId?: bigint): Promise<{ count: bigint; value: bigint; decimals: number }>;
  close(): Promise<void>;
};

/**
 * Starts the chain and the API and claims an agent proving token 0. With `publisher: false` the server gives no
 * feedback itself (another process does, with the publisher's key).
 */
export async function startFeedbackSystem(options: { publisher?: boolean; receiptTimeoutMs?: number } = {}): Promise<FeedbackSystem> {
  const [testDb, chain]: [TestDb, TestChain] = await Promise.all([createTestPgDb(), startTestChain()]);
  const deployed = await deployFeedbackChain(chain);
  const locks = createAccountLocks();
  const writer: FeedbackWriter = createFeedbackWriter(
    { privateKey: deployed.keyOf(ACCOUNTS.publisher), rpcUrl: deployed.rpc.url, registry: deployed.target.registry },
    locks,
  );
  // The service's clock starts on the chain's next day, so the chain can follow it (a block time never goes back).
  const latest = Number((await chain.publicClient.getBlock()).timestamp);
  const clock = createManualClock((Math.floor(latest / DAY_S) + 1) * DAY_S + 10 * 3600);
  const server = await startApiServer({
    db: testDb.db,
    operatorToken: OPERATOR_TOKEN,
    clock,
    logger: pino({ level: "silent" }),
    anchorWriter: createAnchorWriter(
      { privateKey: deployed.keyOf(ACCOUNTS.anchorer), rpcUrl: deployed.rpc.url, registry: deployed.anchorRegistry },
      locks,
    ),
    // Files and pages named under the server's own URL, so that a verifier fetches them.
    erc8004: { target: deployed.target, writer: options.publisher === false ? undefined : writer },
    proofSources: { publicClientFor: (chainId) => (chainId === chain.chain.id ? (chain.publicClient as PublicClient) : undefined) },
  });
  const { call } = apiClient(() => server.url);
  const owner = (await call("POST", "/v1/owners", undefined, {})).json;

  async function proveIdentity(agentId: string, tokenId: bigint, holder: number, registry = deployed.identityRegistry): Promise<string> {
    const subject = `${chain.chain.id}:${registry.toLowerCase()}:${tokenId}`;
    const challenge = (await call("POST", "/v1/proofs/challenges", owner.token, { kind: "erc8004", subject, agentId })).json;
    const { domain, types, primaryType, message } = challenge.typedData;
    const signature = await chain.accounts[holder].signTypedData({
      domain,
      types,
      primaryType,
      message: { ...message, expiresAt: BigInt(message.expiresAt) },
    });
    const proof = await call("POST", "/v1/proofs", owner.token, {
      challengeId: challenge.id,
      evidence: { chainId: chain.chain.id, registry, agentId: tokenId.toString(), signature, signatureType: "eip712" },
    });
    if (proof.status !== 201) throw new Error(`POST /v1/proofs: ${proof.status} ${JSON.stringify(proof.json)}`);
    return proof.json.id;
  }

  const claimed = (await call("POST", "/v1/agents", owner.token, { name: "published" })).json;
  const agent = {
    agentId: claimed.agentId,
    agentKey: claimed.agentKey,
    proofId: await proveIdentity(claimed.agentId, 0n, ACCOUNTS.holder),
  };
  let key = 0;

  return {
    ...deployed,
    testDb,
    server,
    clock,
    api: call,
    publisher: writer.signer.address,
    ownerToken: owner.token,
    agent,
    proveIdentity,
    async day({ checkins = true } = {}) {
      const today = Math.floor(clock.now() / DAY_S);
      if (checkins) {
        for (const hour of [10, 11, 12]) {
          clock.set(today * DAY_S + hour * 3600);
          const res = await fetch(`${server.url}/v1/agents/${agent.agentId}/checkins`, {
            method: "POST",
            headers: { authorization: `Bearer ${agent.agentKey}`, "idempotency-key": `k${++key}` },
          });
          if (res.status !== 201) throw new Error(`check-in: ${res.status} ${await res.text()}`);
        }
      }
      // The next midnight: that day's recompute, then its root anchored, in a block of the service's time.
      clock.set((today + 1) * DAY_S + 30);
      await chain.publicClient.request({ method: "evm_setNextBlockTimestamp", params: [toHex(clock.now())] } as never);
      await server.scheduler.catchUpDaily();
      return new Date((today + 1) * DAY_S * 1000).toISOString().slice(0, 10);
    },
    async summary(tag1, tokenId = 0n) {
      const [count, value, decimals] = await chain.publicClient.readContract({
        address: deployed.target.registry,
        abi: reputationRegistryAbi,
        functionName: "getSummary",
        args: [tokenId, [writer.signer.address], tag1, ""],
      });
      return { count, value, decimals };
    },
    async close() {
      await server.close();
      await deployed.rpc.close();
      await Promise.all([testDb.drop(), chain.close()]);
    },
  };
}
