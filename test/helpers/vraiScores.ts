import { ethers } from "hardhat";
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";

/** The StandardMerkleTree leaf types of a version-2 daily score (contracts/VraiScores.sol, `Score`). */
export const SCORE_V2_TYPES = [
  "string",
  "uint32",
  "bytes32",
  "bytes32",
  "uint16",
  "int16",
  "int16",
  "int16",
  "uint8",
  "uint256",
  "address",
  "uint256",
];

export const SCORE_DAY_V1_KIND = ethers.encodeBytes32String("vrai-score-day");
export const SCORE_DAY_V2_KIND = ethers.encodeBytes32String("vrai-score-day-v2");
export const PROVISIONAL = 0;
export const ESTABLISHED = 1;
export const NOT_ACTIVE = -1;
export const DAY_S = 86_400;

/** `VraiScores.Score` as ethers takes a struct. */
export type Score = {
  agent: string;
  day: number;
  method: string;
  inputsSha256: string;
  total: number;
  identity: number;
  reliability: number;
  integrity: number;
  state: number;
  erc8004ChainId: bigint;
  erc8004Registry: string;
  erc8004TokenId: bigint;
};

/** A score with the given fields over an established 330 (180 + 50 + 100) of method 0.2, bound to no ERC-8004 identity. */
export function scoreOf(fields: Partial<Score> & Pick<Score, "agent" | "day">): Score {
  return {
    method: ethers.encodeBytes32String("0.2"),
    inputsSha256: ethers.sha256(ethers.toUtf8Bytes(`inputs of ${fields.agent} on ${fields.day}`)),
    total: 330,
    identity: 180,
    reliability: 50,
    integrity: 100,
    state: ESTABLISHED,
    erc8004ChainId: 0n,
    erc8004Registry: ethers.ZeroAddress,
    erc8004TokenId: 0n,
    ...fields,
  };
}

/** The leaf values of `score`, in `abi.encode` order. */
export const valuesOf = (s: Score) => [
  s.agent,
  s.day,
  s.method,
  s.inputsSha256,
  s.total,
  s.identity,
  s.reliability,
  s.integrity,
  s.state,
  s.erc8004ChainId,
  s.erc8004Registry,
  s.erc8004TokenId,
];

/** The tree the service builds of these scores (`StandardMerkleTree.of` with SCORE_V2_TYPES), with each score's proof. */
export function treeOf(scores: Score[]) {
  const tree = StandardMerkleTree.of(scores.map(valuesOf), SCORE_V2_TYPES);
  return { tree, root: tree.root, proofOf: (i: number) => tree.getProof(i), leafOf: (i: number) => tree.leafHash(valuesOf(scores[i])) };
}
