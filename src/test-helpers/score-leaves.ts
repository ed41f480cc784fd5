/** Random score leaves of either version, for the tests of the score tree and its build (src/chain/score-tree*.test.ts). */
import crypto from "node:crypto";
import { getAddress, type Hex } from "viem";
import {
  NOT_ACTIVE_COMPONENT,
  SCORE_LEAF_VERSIONS,
  scoreLeafVersion,
  type AnyScoreLeafValues,
  type ScoreLeafV2Values,
  type ScoreLeafValues,
} from "../chain/score-tree";

/** Version-1 leaves of random agents and digests. */
export const randomValues = (n: number): ScoreLeafValues[] =>
  Array.from({ length: n }, (_, i) => [
    `agt_${crypto.randomBytes(4).toString("hex")}${i}`,
    "2026-11-29",
    i % 3 === 0 ? "0.1" : "0.2",
    `0x${crypto.randomBytes(32).toString("hex")}`,
  ]);

export const random32 = (): Hex => `0x${crypto.randomBytes(32).toString("hex")}`;
/** Version-2 leaves over the types' whole ranges: not-active components, uint256 ids, long agent ids, unbound and bound identities. */
export const randomV2Values = (n: number): ScoreLeafV2Values[] =>
  Array.from(
    { length: n },
    (_, i): ScoreLeafV2Values => [
      i % 5 === 0 ? `agt_${"x".repeat(60)}` : `agt_${crypto.randomBytes(4).toString("hex")}${i}`,
      20_786 + (i % 3),
      `0x${Buffer.from(i % 3 === 0 ? "0.1" : "0.2")
        .toString("hex")
        .padEnd(64, "0")}`,
      random32(),
      i % 7 === 0 ? 65_535 : 100 + (i % 401),
      i % 4 === 0 ? NOT_ACTIVE_COMPONENT : 100 + (i % 151),
      i % 11 === 0 ? -32_768 : i % 151,
      i % 13 === 0 ? 32_767 : 100,
      i % 2,
      i % 3 === 0 ? 0n : BigInt(1 + i),
      i % 3 === 0 ? "0x0000000000000000000000000000000000000000" : getAddress(`0x${crypto.randomBytes(20).toString("hex")}`),
      i % 3 === 0 ? 0n : i % 6 === 1 ? 2n ** 256n - 1n : BigInt(i),
    ],
  );
export const typesOf = (values: readonly AnyScoreLeafValues[]): string[] => [...SCORE_LEAF_VERSIONS[scoreLeafVersion(values[0])].types];
