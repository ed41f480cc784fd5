// A TypeScript program using @vrai/sdk as installed from npm: the pack test type-checks it (strict, nodenext).
import { createVraiAgent, deriveScore, verifyScore, VraiAgentError, type CheckInResult, type VerifyScoreResult } from "@vrai/sdk";

export async function checkInOnce(api: string, agentId: string, agentKey: string): Promise<CheckInResult> {
  const agent = createVraiAgent({ baseUrl: api, agentId, agentKey, retry: { maxAttempts: 3 } });
  try {
    return await agent.checkIn();
  } catch (error) {
    if (error instanceof VraiAgentError && !error.retryable) throw new Error(`refused for good: ${error.code}`);
    throw error;
  }
}

export async function verified(api: string, agentId: string, rpcUrl: string): Promise<boolean> {
  const result: VerifyScoreResult = await verifyScore({ api, agentId, rpcUrl });
  return result.verified && result.checks.every((check) => check.ok);
}

export const derivedTotal = (did: string): number =>
  deriveScore([
    {
      txHash: "0x01",
      executor: did,
      success: true,
      riskLevel: "low",
      policyViolations: 0,
      verified: true,
      traceRoot: "0xab",
      source: "self-reported",
    },
  ])[did].total;

// The declarations are real types, not `any`: each line below must be a type error.
// @ts-expect-error baseUrl is a string
createVraiAgent({ baseUrl: 8080, agentId: "agt_1", agentKey: "va_x" });
// @ts-expect-error a check's step is one of the named steps
export const step: VerifyScoreResult["checks"][number]["step"] = "everything";
