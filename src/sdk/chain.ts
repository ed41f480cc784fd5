/**
 * The SDK's chain side: agents submit proof records to the `Registry` (A1 on-chain records) and dApps
 * read its Platform Network Score (part N), through viem.
 */
import {
  decodeEventLog,
  getAddress,
  type Account,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
} from "viem";
import { registryAbi } from "../chain/abi/registry";
import { addressSchema, DeploymentFileError, type DeploymentJson } from "../chain/deployment";
import { InvalidInputError } from "../errors";
import { RISK_LEVELS, type RiskLevel } from "../method";

export { registryAbi };
export { readDeployment } from "../chain/deployment";

/** A proof record as the agent submits it (`IRegistry.submitProof`). */
export type ProofSubmission = {
  /** The `Registry` contract. */
  registry: Address;
  /** The agent's ERC-8004 identity token id. */
  agentId: bigint;
  success: boolean;
  riskLevel: RiskLevel;
  policyViolations: number;
  /** Root of the execution trace (bytes32); verified once anchored by a verifier (A6). */
  traceRoot: Hex;
};

/** Where a submitted proof landed: what an A1 `onchain` record needs besides the submission itself. */
export type SubmittedProof = { txHash: Hex; blockNumber: number; logIndex: number };

/** The Platform Network Score of one agent (part N), as `Registry.networkScoreOf` returns it. */
export type NetworkScore = {
  scoreType: "platform-network";
  /** Tenths, 0-1000. */
  score: number;
  /** `score / 10`, 0.0-100.0. */
  value: number;
  settlements: number;
  /** Block timestamp (Unix seconds) of the last settlement; 0 when never settled. */
  lastSettledAt: number;
};

/** Any viem wallet client with an account to sign with. */
export type SigningWalletClient = WalletClient<Transport, Chain | undefined, Account>;

/**
 * Submits a proof record to the `Registry` and waits for it to be mined. The sender must control the
 * agent (owner, approved account, operator or agent wallet); the Registry's revert is thrown otherwise.
 * @returns the transaction hash, block and log index of the `ProofSubmitted` event
 * @example
 * const proof = await submitProof({ wallet, publicClient }, {
 *   registry: registryAddressOf(readDeployment("deployments/localhost.json")),
 *   agentId: tokenId, success: true, riskLevel: "high", policyViolations: 0, traceRoot: keccak256(stringToHex("the task's trace")),
 * });
 * console.log(`proof in block ${proof.blockNumber}, tx ${proof.txHash}`);
 */
export async function submitProof(
  clients: { wallet: SigningWalletClient; publicClient: PublicClient<Transport, Chain | undefined> },
  proof: ProofSubmission,
): Promise<SubmittedProof> {
  const risk = RISK_LEVELS.indexOf(proof.riskLevel);
  if (risk < 0)
    throw new InvalidInputError("invalid_proof", `riskLevel: expected ${RISK_LEVELS.join("|")}, got ${JSON.stringify(proof.riskLevel)}`);
  if (!Number.isInteger(proof.policyViolations) || proof.policyViolations < 0 || proof.policyViolations > 0xffffffff) {
    throw new InvalidInputError("invalid_proof", `policyViolations: expected a whole number 0-4294967295, got ${proof.policyViolations}`);
  }
  const { request } = await clients.publicClient.simulateContract({
    account: clients.wallet.account,
    address: proof.registry,
    abi: registryAbi,
    functionName: "submitProof",
    args: [proof.agentId, proof.success, risk, proof.policyViolations, proof.traceRoot],
  });
  const txHash = await clients.wallet.writeContract(request);
  const receipt = await clients.publicClient.waitForTransactionReceipt({ hash: txHash });
  for (const log of receipt.logs) {
    if (getAddress(log.address) !== getAddress(proof.registry)) continue;
    const event = decodeEventLog({ abi: registryAbi, data: log.data, topics: log.topics, strict: false });
    if (event.eventName === "ProofSubmitted") return { txHash, blockNumber: Number(receipt.blockNumber), logIndex: log.logIndex };
  }
  throw new InvalidInputError("proof_not_recorded", `transaction ${txHash} emitted no ProofSubmitted event (status ${receipt.status})`);
}

/**
 * Reads an agent's Platform Network Score from the `Registry` (part N): tenths and value.
 * @example
 * const registry = registryAddressOf(readDeployment("deployments/localhost.json"));
 * const { score, value, settlements } = await readNetworkScore(publicClient, registry, tokenId); // e.g. 45 tenths, 4.5, 2
 */
export async function readNetworkScore(
  publicClient: PublicClient<Transport, Chain | undefined>,
  registry: Address,
  agentId: bigint,
): Promise<NetworkScore> {
  const [score, settlements, lastSettledAt] = await publicClient.readContract({
    address: registry,
    abi: registryAbi,
    functionName: "networkScoreOf",
    args: [agentId],
  });
  return {
    scoreType: "platform-network",
    score,
    value: score / 10,
    settlements: Number(settlements),
    lastSettledAt: Number(lastSettledAt),
  };
}

/** A deployment file (`deployments/<network>.json`, written by scripts/deploy.ts or `vrai dev`), as `readDeployment` returns it or as written. */
export type DeploymentFile = DeploymentJson;

/**
 * The `Registry` address of a deployment, checksummed.
 * @param source names the deployment in the error
 * @throws InvalidInputError `invalid_deployment` when the deployment has no valid Registry address
 * @example registryAddressOf(readDeployment("deployments/localhost.json")) // "0x5FbDB2315678afecb367f032d93F642f64180aa3"
 */
export function registryAddressOf(deployment: DeploymentFile, source = "deployment"): Address {
  // Also for an object that did not come through readDeployment (plain JavaScript callers).
  const address = addressSchema.safeParse(deployment?.contracts?.Registry?.address);
  if (!address.success) throw new DeploymentFileError(`${source}: contracts.Registry.address is not an address`);
  return address.data;
}
