/** The Merkle proofs of daily scores and the on-chain anchors of their roots. */
import { z } from "zod";
import type { Anchoring } from "../service/anchoring";
import { defineRoute, errorSchema, type Route } from "./route";

const bytes32 = z.string().regex(/^0x[0-9a-f]{64}$/);
const proofResponse = z.object({
  scoreId: z.number(),
  leaf: bytes32,
  leafValues: z.tuple([z.string(), z.string(), z.string(), bytes32]).describe("[agent, day, method, inputs sha256] of types [string, string, string, bytes32]"),
  proof: z.array(bytes32),
  root: bytes32,
  day: z.string(),
  anchor: z
    .object({ txHash: bytes32, blockNumber: z.number(), chainId: z.number(), contract: z.string() })
    .nullable()
    .describe("null until the root's anchoring transaction is mined"),
});

/** The route of a daily score's Merkle proof. */
export function anchorRoutes(anchoring: Pick<Anchoring, "proofOf">): Route[] {
  return [
    defineRoute({
      method: "get", path: "/v1/scores/:id/proof", operationId: "getScoreProof", tag: "scores", auth: "none",
      summary:
        "The Merkle proof of a daily score: its leaf (StandardMerkleTree leaf hash of [agent, day, method, inputs sha256]), the proof, " +
        "the day's root and the AnchorRegistry transaction that anchored it (null until mined).",
      params: z.object({ id: z.coerce.number().int().positive() }),
      responses: {
        200: { description: "ok", schema: proofResponse },
        404: { description: "score_not_found, score_not_daily (only daily scores are anchored) or proof_not_ready (the day's tree is not built yet)", schema: errorSchema },
      },
    }).handle(async ({ params }) => ({ status: 200, body: await anchoring.proofOf(params.id) })),
  ];
}
