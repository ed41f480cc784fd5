/**
 * A daily Vrai score's proof shaped for a contract: the arguments `VraiScores.verify` checks and the example
 * gate (`VraiGate.enter` and `check`, contracts/examples/VraiGate.sol) takes, from the public API.
 */
import { getAddress, type Address, type Hex } from "viem";
import { vraiGateAbi } from "../chain/abi/vraiGate";
import {
  isScoreLeafV2,
  processScoreProof,
  scoreLeafFromJson,
  scoreLeafHash,
  scoreLeafV2Fields,
  type ScoreLeafV2Fields,
} from "../chain/score-tree";
import { BaseError, InvalidInputError } from "../errors";
import { parseRfc3339 } from "../method";
import type { ApiError, ApiJson } from "./api";

export { vraiGateAbi };

export type GetScoreProofOptions = {
  /** The Vrai API, e.g. `http://127.0.0.1:8080` (no `/v1`). */
  api: string;
  /** The agent whose latest anchored daily score is wanted; or give `scoreId`. */
  agentId?: string;
  /** One daily score, by id. */
  scoreId?: number;
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch;
};

/** `[score, proof, root]`: the arguments of `VraiGate.enter` and `VraiGate.check`, as viem takes them (the score a struct by field name). */
export type ScoreProofArgs = readonly [score: ScoreLeafV2Fields, proof: readonly Hex[], root: Hex];

/** A daily score's proof against its anchored day, ready for a contract. */
export type ContractScoreProof = {
  scoreId: number;
  agentId: string;
  /** YYYY-MM-DD. */
  day: string;
  /** The leaf's values, `VraiScores.Score` by field name: uint256 values as bigint. */
  score: ScoreLeafV2Fields;
  leaf: Hex;
  proof: Hex[];
  root: Hex;
  /** Where the root is anchored; `anchoredAt` in Unix seconds, the time a contract compares (null for days anchored before it was recorded). */
  anchor: { contract: Address; chainId: number; txHash: Hex; blockNumber: number; anchoredAt: number | null };
  /** For viem's `writeContract` and `readContract` against the gate: `args: proof.args`. */
  args: ScoreProofArgs;
};

/**
 * Fetches the proof of an agent's latest anchored daily score (or of daily score `scoreId`) and shapes it for a
 * contract: `args` goes as it is to viem's `writeContract`/`readContract` against the example gate, and its first
 * element to any function taking a `VraiScores.Score`. The proof is checked to lead from the leaf to the root first.
 * @throws InvalidInputError `invalid_score_proof_options` for an API URL, agent id or score id that is not one
 * @throws BaseError with the API's code (`proof_not_ready`: the day's root is not anchored yet; `agent_not_found`, ...),
 * `score_proof_version_1` for a day anchored before leaves carried the score (no contract can read it), `score_proof_invalid`
 * when the proof does not lead to its root
 * @example
 * const { args, score } = await getScoreProof({ api, agentId });
 * // `gate`: a VraiGate (contracts/examples/VraiGate.sol); `wallet` owns the agent's ERC-8004 identity or is its agent wallet.
 * const anchoredAt = await publicClient.readContract({ address: gate, abi: vraiGateAbi, functionName: "check", args, account: wallet.account });
 * const hash = await wallet.writeContract({ address: gate, abi: vraiGateAbi, functionName: "enter", args });
 * await publicClient.waitForTransactionReceipt({ hash });
 * console.log(`entered with a score of ${score.total}, anchored at ${anchoredAt}`);
 */
export async function getScoreProof(options: GetScoreProofOptions): Promise<ContractScoreProof> {
  const api = options.api.replace(/\/+$/, "");
  if (!/^https?:\/\/[^\s]+$/.test(api))
    throw new InvalidInputError("invalid_score_proof_options", `api: expected an http(s) URL, got ${options.api}`);
  const { agentId, scoreId } = options;
  if ((agentId === undefined) === (scoreId === undefined))
    throw new InvalidInputError("invalid_score_proof_options", "give agentId or scoreId, not both");
  if (agentId !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(agentId))
    throw new InvalidInputError("invalid_score_proof_options", `not an agent id: ${JSON.stringify(agentId)}`);
  if (scoreId !== undefined && !(Number.isSafeInteger(scoreId) && scoreId > 0))
    throw new InvalidInputError("invalid_score_proof_options", `not a score id: ${scoreId}`);
  const path = agentId !== undefined ? `/v1/agents/${agentId}/score/proof` : `/v1/scores/${scoreId}/proof`;
  const response = await (options.fetch ?? fetch)(api + path);
  const body: ApiJson<"getScoreProof" | "getLatestScoreProof", 200> | ApiError | null = await response.json().catch(() => null);
  if (!response.ok || body === null || "error" in body) {
    const served = body !== null && "error" in body ? body.error : undefined;
    throw new BaseError(
      served?.code ?? "score_proof_unavailable",
      `GET ${path} answered ${response.status}: ${served?.message ?? "no JSON body"}`,
      { status: response.status },
    );
  }
  const values = scoreLeafFromJson(body.leafValues);
  if (!isScoreLeafV2(values)) {
    throw new BaseError(
      "score_proof_version_1",
      `score ${body.scoreId} of ${body.day} is a leaf of version 1 (days anchored before leaves carried the score): VraiScores takes version 2`,
    );
  }
  const leaf = scoreLeafHash(values);
  if (leaf !== body.leaf || processScoreProof(leaf, body.proof) !== body.root) {
    throw new BaseError(
      "score_proof_invalid",
      `the proof of score ${body.scoreId} does not lead from its leaf ${leaf} to the root ${body.root}`,
    );
  }
  const score = scoreLeafV2Fields(values);
  const anchor = {
    ...body.anchor,
    contract: getAddress(body.anchor.contract),
    anchoredAt: body.anchor.anchoredAt === null ? null : parseRfc3339(body.anchor.anchoredAt),
  };
  return {
    scoreId: body.scoreId,
    agentId: body.agentId,
    day: body.day,
    score,
    leaf,
    proof: body.proof,
    root: body.root,
    anchor,
    args: [score, body.proof, body.root],
  };
}
