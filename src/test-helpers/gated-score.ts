/**
 * Daily Vrai scores a contract checks, on a local chain (issue #26): the API on PostgreSQL with a manual clock
 * and daily anchoring, an AnchorRegistry, the reference ERC-8004 identity registry and the example VraiGate.
 * Two agents of one owner, each with an ERC-8004 proof made through the API: `established` checks in on 15
 * days (token 0, owned by account 2, whose agent wallet is account 5), `provisional` is claimed on the last of
 * them (token 1, account 3). Every midnight the daily recompute runs and the day's root is anchored, the chain's
 * clock set to the service's, so a root of day D is anchored at D 00:00:30 as `vrai serve` anchors it. It ends on
 * `today` at 01:00, its root anchored half an hour after midnight, yesterday's a day earlier.
 */
import pino from "pino";
import { getAddress, toHex, type Address, type PublicClient } from "viem";
import { startApiServer, type ApiServer } from "../app/server";
import { identityRegistryAbi } from "../chain/abi/identityRegistry";
import { createAnchorWriter } from "../chain/anchor-writer";
import { dayName } from "../method";
import { createManualClock, type Clock } from "../service/clock";
import { startTestChain, type TestChain } from "./chain";
import { createTestPgDb, type TestDb } from "./db";
import { serveTestChainRpc, type ChainRpcServer } from "./hardhat-node";

/** What VraiGate asks (its constructor's arguments): a total of 250 (claim 100 + ERC-8004 50 + integrity 100), anchored within 12 hours. */
export const GATE_MIN_TOTAL = 250;
export const GATE_MAX_AGE_S = 12 * 3600;

const DAY_S = 86_400;
/** Days `established` checks in on, the first of them the day of its claim. */
const CHECKIN_DAYS = 15;

export type GatedAgent = {
  agentId: string;
  agentKey: string;
  tokenId: bigint /** Index in `chain.accounts` of the token's owner. */;
  holder: number;
};

export type GatedScore = {
  server: ApiServer;
  chain: TestChain;
  rpc: ChainRpcServer;
  clock: Clock & { set(t: number): void };
  anchorRegistry: Address;
  identityRegistry: Address;
  gate: Address;
  /** The Vrai owner of both agents: its token. */
  ownerToken: string;
  /** With the index in `chain.accounts` of its token's agent wallet (the registry's `setAgentWallet`). */
  established: GatedAgent & { agentWallet: number };
  provisional: GatedAgent;
  /** The last day scored and anchored (YYYY-MM-DD), and the one before it. */
  today: string;
  yesterday: string;
  close(): Promise<void>;
};

/** Sets the timestamp of the chain's next block (the next transaction's). */
async function setNextBlockTime(chain: TestChain, at: number): Promise<void> {
  await chain.publicClient.request({ method: "evm_setNextBlockTimestamp", params: [toHex(at)] } as never);
}

/** Starts the system and scores and anchors 15 days (about 10 s). */
export async function startGatedScore(): Promise<GatedScore> {
  const [testDb, chain]: [TestDb, TestChain] = await Promise.all([createTestPgDb(), startTestChain()]);
  const rpc = await serveTestChainRpc();
  const mined = async (hash: `0x${string}`) => void (await chain.publicClient.waitForTransactionReceipt({ hash }));
  const anchorRegistry = await chain.deployAnchorRegistry(1);
  const identityRegistry = getAddress((await chain.deployReferenceIdentity()).address);
  for (const holder of [2, 3]) {
    await mined(
      await chain.walletClients[holder].writeContract({
        address: identityRegistry,
        abi: identityRegistryAbi,
        functionName: "register",
        args: [`ipfs://agent-${holder}`],
      }),
    );
  }
  // Token 0's agent wallet: account 5 signs that it accepts (EIP-712, the registry's domain), its owner sets it.
  const agentWallet = { tokenId: 0n, owner: 2, wallet: 5 };
  const deadline = (await chain.publicClient.getBlock()).timestamp + 60n;
  const walletSignature = await chain.accounts[agentWallet.wallet].signTypedData({
    domain: { name: "ERC8004IdentityRegistry", version: "1", chainId: chain.chain.id, verifyingContract: identityRegistry },
    types: {
      AgentWalletSet: [
        { name: "agentId", type: "uint256" },
        { name: "newWallet", type: "address" },
        { name: "owner", type: "address" },
        { name: "deadline", type: "uint256" },
      ],
    },
    primaryType: "AgentWalletSet",
    message: {
      agentId: agentWallet.tokenId,
      newWallet: chain.accounts[agentWallet.wallet].address,
      owner: chain.accounts[agentWallet.owner].address,
      deadline,
    },
  });
  await mined(
    await chain.walletClients[agentWallet.owner].writeContract({
      address: identityRegistry,
      abi: identityRegistryAbi,
      functionName: "setAgentWallet",
      args: [agentWallet.tokenId, chain.accounts[agentWallet.wallet].address, deadline, walletSignature],
    }),
  );
  const gate = getAddress(
    (await chain.deployContract("VraiGate", [anchorRegistry, identityRegistry, GATE_MIN_TOTAL, GATE_MAX_AGE_S])).address,
  );

  // The service's clock starts on the chain's next day, so the chain can follow it (a block time never goes back).
  const latest = Number((await chain.publicClient.getBlock()).timestamp);
  const firstDay = Math.floor(latest / DAY_S) + 1;
  const clock = createManualClock(firstDay * DAY_S + 10 * 3600);
  const server = await startApiServer({
    db: testDb.db,
    operatorToken: "op-token-gated-score-00000000",
    clock,
    logger: pino({ level: "silent" }),
    anchorWriter: createAnchorWriter({
      privateKey: chain.keys[1],
      rpcUrl: rpc.url,
      registry: anchorRegistry,
    }),
    // The chain's own client: the in-process Hardhat network's, typed for its chain.
    proofSources: { publicClientFor: (chainId) => (chainId === chain.chain.id ? (chain.publicClient as PublicClient) : undefined) },
  });
  const post = async (path: string, token: string | undefined, body: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(server.url + path, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
      body: JSON.stringify(body),
    });
    const json = (await response.json()) as Record<string, any>;
    if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  };
  const owner = await post("/v1/owners", undefined, {});

  /** Claims an agent and proves, through the API, that it holds ERC-8004 identity `tokenId`, signed by its holder. */
  const claimWithIdentity = async (tokenId: bigint, holder: number): Promise<GatedAgent> => {
    const { agentId, agentKey } = await post("/v1/agents", owner.token, {});
    const subject = `${chain.chain.id}:${identityRegistry.toLowerCase()}:${tokenId}`;
    const challenge = await post("/v1/proofs/challenges", owner.token, { kind: "erc8004", subject, agentId });
    const { domain, types, primaryType, message } = challenge.typedData;
    const signature = await chain.accounts[holder].signTypedData({
      domain,
      types,
      primaryType,
      message: { ...message, expiresAt: BigInt(message.expiresAt) },
    });
    await post("/v1/proofs", owner.token, {
      challengeId: challenge.id,
      evidence: { chainId: chain.chain.id, registry: identityRegistry, agentId: tokenId.toString(), signature, signatureType: "eip712" },
    });
    return { agentId, agentKey, tokenId, holder };
  };
  const established = { ...(await claimWithIdentity(agentWallet.tokenId, agentWallet.owner)), agentWallet: agentWallet.wallet };
  let provisional: GatedAgent | undefined;
  let key = 0;
  for (let d = 0; d < CHECKIN_DAYS; d++) {
    const day = firstDay + d;
    if (d === CHECKIN_DAYS - 1) {
      clock.set(day * DAY_S + 10 * 3600 - 60);
      provisional = await claimWithIdentity(1n, 3);
    }
    for (const agent of d === CHECKIN_DAYS - 1 ? [established, provisional!] : [established]) {
      for (const hour of [10, 11]) {
        clock.set(day * DAY_S + hour * 3600 + (agent === established ? 0 : 30));
        await post(`/v1/agents/${agent.agentId}/checkins`, agent.agentKey, {}, { "idempotency-key": `k${++key}` });
      }
    }
    // The next midnight: that day's recompute, then its root anchored, in a block of the service's time.
    clock.set((day + 1) * DAY_S + 30);
    await setNextBlockTime(chain, clock.now());
    await server.scheduler.catchUpDaily();
  }
  const today = firstDay + CHECKIN_DAYS;
  clock.set(today * DAY_S + 3600);
  await setNextBlockTime(chain, clock.now());
  await chain.mine(1);
  return {
    server,
    chain,
    rpc,
    clock,
    anchorRegistry,
    identityRegistry,
    gate,
    ownerToken: owner.token,
    established,
    provisional: provisional!,
    today: dayName(today),
    yesterday: dayName(today - 1),
    async close() {
      await server.close();
      await rpc.close();
      await Promise.all([testDb.drop(), chain.close()]);
    },
  };
}
