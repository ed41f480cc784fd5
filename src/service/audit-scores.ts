import { canonicalJson, scoreFromInputs, validateScoreInputs } from "../method";
import type { Store } from "./ports";

export type ScoreMismatch = { id: number; agentId: string; problem: string };

/**
 * V9: recomputes every stored score from its stored inputs alone and compares byte for byte:
 * the inputs must be canonical, their SHA-256 the stored digest, the result the stored result (for
 * rows that keep one; compact rows derive it, migration 010) and its total the stored total.
 */
export async function verifyStoredScores(
  store: Store,
  onProgress?: (checked: number) => void,
): Promise<{ checked: number; mismatches: ScoreMismatch[] }> {
  const mismatches: ScoreMismatch[] = [];
  let checked = 0;
  for (let afterId = 0; ; ) {
    const batch = await store.read.scoresAfter(afterId, 1000);
    if (batch.length === 0) break;
    for (const row of batch) {
      afterId = row.id;
      checked++;
      const fail = (problem: string) => mismatches.push({ id: row.id, agentId: row.agentId, problem });
      let recomputed: ReturnType<typeof scoreFromInputs>;
      try {
        recomputed = scoreFromInputs(validateScoreInputs(JSON.parse(row.inputs)));
      } catch (error) {
        fail(`stored inputs do not parse: ${(error as Error).message}`);
        continue;
      }
      if (recomputed.canonical !== row.inputs) fail("stored inputs are not in canonical form (RFC 8785)");
      else if (recomputed.sha256 !== row.sha256) fail(`digest differs: stored ${row.sha256}, recomputed ${recomputed.sha256}`);
      else if (row.total !== recomputed.result.total) fail(`total differs: stored ${row.total}, recomputed ${recomputed.result.total}`);
      else if (canonicalJson(recomputed.result) !== canonicalJson(row.result))
        fail(`result differs: the stored result is not the one its inputs give (total ${recomputed.result.total})`);
      else if (row.method !== recomputed.result.method)
        fail(`method differs: stored ${row.method}, inputs say ${recomputed.result.method}`);
    }
    onProgress?.(checked);
  }
  return { checked, mismatches };
}
