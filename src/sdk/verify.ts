/**
 * An outside verifier's check of one daily Vrai score (V9, A6), with nothing but the public API and a
 * chain RPC: fetch the inputs, recompute the score with the method engine, recompute their SHA-256,
 * check the Merkle proof, and read the root's anchor on the AnchorRegistry. `vrai verify` prints it.
 * Days anchored before leaves carried the score (version 1) are checked as they always were; a leaf of
 * version 2 must also carry the recomputed total, components and state.
 */
import { createPublicClient, getAddress, http, isAddress, type Address, type Hex } from "viem";
import { anchorRegistryAbi } from "../chain/abi/anchorRegistry";
import {
  componentLeafValue,
  isScoreLeafV2,
  processScoreProof,
  rootAnchoredLogs,
  SCORE_LEAF_V2_FIELDS,
  SCORE_LEAF_VERSIONS,
  scoreLeafFromJson,
  scoreLeafHash,
  scoreLeafToJson,
  scoreLeafV2,
  scoreLeafVersion,
  type AnyScoreLeafValues,
} from "../chain/score-tree";
import { shortMessageOf } from "../chain/short-message";
import { InvalidInputError } from "../errors";
import { canonicalJson, scoreFromInputs, sha256Hex, toRfc3339, validateScoreInputs } from "../method";
import type { ApiError, ApiJson } from "./api";

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";
/** Pages of score history read at most (100 daily scores each): more means a day must be named. */
const MAX_HISTORY_PAGES = 100;
/** `IAnchorRegistry.AnchorRole`: 0 anchorer, 1 verifier (METHOD A6); a root has at most one anchor of each. */
const ROLE_NAMES = ["an anchorer", "a verifier"] as const;
const ROLES = [0, 1] as const;

/**
 * The steps of a verification, in order: `lookup` finds the daily score to check (and, when there is none yet, says
 * when the first comes), then its inputs, the score recomputed from them, the digest, the Merkle proof and the anchor.
 */
export type VerifyStepName = "lookup" | "inputs" | "score" | "digest" | "merkle" | "anchor";

/** One check of a verification: `ok` with what held, or not with what failed. */
export type VerifyCheck = { step: VerifyStepName; ok: boolean; message: string };

export type VerifyScoreOptions = {
  /** The Vrai API, e.g. `http://127.0.0.1:8080` (no `/v1`). */
  api: string;
  agentId: string;
  /** The day (YYYY-MM-DD) of the daily score; default: the agent's latest daily score. */
  day?: string;
  /** JSON-RPC of the chain the root is anchored on. */
  rpcUrl: string;
  /** The address of the AnchorRegistry expected to hold the anchor; default: the one the API names. */
  contract?: string;
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch;
};

/** What an anchor on chain says of the score's root, once every check held. */
export type VerifiedAnchor = {
  contract: Address;
  chainId: number;
  txHash: Hex;
  blockNumber: number;
  /** Block time of the anchor, RFC 3339. */
  anchoredAt: string;
  role: "anchorer" | "verifier";
  submitter: Address;
  /** Scores under the root. */
  leafCount: number;
};

export type VerifyScoreResult = {
  /** True only when every check held. */
  verified: boolean;
  /** Every check made, in order; verification stops at a check that leaves nothing further to check. */
  checks: VerifyCheck[];
  /** The daily score checked, once found. */
  score?: { id: number; agentId: string; day: string; api: string; total?: number; sha256?: string; root?: Hex; leafVersion?: 1 | 2 };
  /** Set when `verified`. */
  anchor?: VerifiedAnchor;
};

/** A check after which nothing can be checked: verification stops. */
class StepFailed extends Error {}

/** One page of an agent's daily scores, oldest first. */
type DailyScores = ApiJson<"listDailyScores", 200>;

/** What the daily history says of the first daily score of the agent's latest claim (V9). */
type FirstDaily = Pick<DailyScores, "firstDailyAt" | "message">;

/** The `lookup` failure of an agent with no daily score (of `day`): when its first comes (issue #31). */
function noDailyScore(agentId: string, day: string | undefined, first: FirstDaily): string {
  const at = first.firstDailyAt;
  if (day !== undefined) {
    const before = `${day}T00:00:00Z` < at ? `: ${day} is before its first daily score, of ${at.slice(0, 10)} (computed at ${at})` : "";
    return `no daily score of agent ${agentId} on ${day}${before}`;
  }
  if (first.message !== undefined)
    return (
      `no daily score of agent ${agentId} yet: ` +
      `its first is computed at ${at} (the first 00:00 UTC after its claim) and anchored on chain after it; verify then`
    );
  return `no daily score of agent ${agentId}: its first was due at ${at} (the daily recompute at 00:00 UTC may still be running)`;
}

/**
 * The leaf a daily score of `day` must have, from what the verifier recomputed: version 1 binds the agent, day,
 * method and digest; version 2 also the recomputed total, components and state, and the ERC-8004 identity the
 * served leaf names, which the inputs cannot say (they list proof kinds): it must be there exactly when they
 * count an erc8004 proof.
 */
function expectedLeaf(
  served: AnyScoreLeafValues,
  agentId: string,
  day: string,
  digest: string,
  recomputed: ReturnType<typeof scoreFromInputs>["result"],
): {
  values: AnyScoreLeafValues;
  problem: string | null;
} {
  if (!isScoreLeafV2(served)) return { values: [agentId, day, recomputed.method, `0x${digest}`], problem: null };
  const [chainId, registry, tokenId] = [served[9], served[10], served[11]];
  const bound = chainId !== 0n || registry !== ZERO_ADDRESS || tokenId !== 0n;
  const counted = recomputed.components.identity.proofs.includes("erc8004");
  const { identity, reliability, integrity } = recomputed.components;
  const values = scoreLeafV2({
    agentId,
    day,
    method: recomputed.method,
    sha256: digest,
    total: recomputed.total,
    identity: componentLeafValue(identity),
    reliability: componentLeafValue(reliability),
    integrity: componentLeafValue(integrity),
    established: recomputed.state === "established",
    // No chain is 0: a leaf naming one with a registry or token differs from this expected leaf, and is reported.
    erc8004Subject: chainId === 0n ? null : `${chainId}:${registry}:${tokenId}`,
  });
  const problem =
    bound === counted
      ? null
      : counted
        ? "the inputs count an erc8004 proof, the leaf names no ERC-8004 identity"
        : `the leaf names ERC-8004 identity ${chainId}:${registry}:${tokenId}, the inputs count no erc8004 proof`;
  return { values, problem };
}

/** The options, checked before anything is fetched. */
function checkedOptions(options: VerifyScoreOptions): VerifyScoreOptions & { contract?: Address } {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(options.agentId))
    throw new InvalidInputError("invalid_verify_options", `not an agent id: ${JSON.stringify(options.agentId)}`);
  if (options.day !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(options.day))
    throw new InvalidInputError("invalid_verify_options", `day: expected YYYY-MM-DD, got ${options.day}`);
  for (const [name, url] of [
    ["api", options.api],
    ["rpcUrl", options.rpcUrl],
  ] as const) {
    if (!/^https?:\/\/[^\s]+$/.test(url))
      throw new InvalidInputError("invalid_verify_options", `${name}: expected an http(s) URL, got ${url}`);
  }
  if (options.contract !== undefined && !isAddress(options.contract))
    throw new InvalidInputError("invalid_verify_options", `not an address: ${options.contract}`);
  return {
    ...options,
    api: options.api.replace(/\/+$/, ""),
    contract: options.contract === undefined ? undefined : getAddress(options.contract),
  };
}

/**
 * Verifies one daily Vrai score as an outside verifier would: the inputs as served, the score recomputed
 * from them by the method engine (V9), their SHA-256 against every place the service publishes it, the
 * Merkle proof from the score's own leaf, and the root's batch anchor on the AnchorRegistry (A6).
 * Never throws for what it finds: each check is in `checks`, `verified` only when all held.
 * @throws InvalidInputError `invalid_verify_options` for an agent id, day, URL or address that is not one
 * @example
 * const result = await verifyScore({ api, agentId, rpcUrl }); // e.g. "http://127.0.0.1:8080", "agt_…", "http://127.0.0.1:8545"
 * for (const check of result.checks) console.log(`${check.ok ? "✔" : "✘"} ${check.step}: ${check.message}`);
 * if (!result.verified) throw new Error("not verified");
 */
export async function verifyScore(given: VerifyScoreOptions): Promise<VerifyScoreResult> {
  const options = checkedOptions(given);
  const doFetch = options.fetch ?? fetch;
  const result: VerifyScoreResult = { verified: false, checks: [] };
  let step: VerifyStepName = "lookup";
  const ok = (message: string) => void result.checks.push({ step, ok: true, message });
  const fail = (message: string) => void result.checks.push({ step, ok: false, message });
  /** Records a failed check after which nothing can be checked; `throw` the result. */
  const stop = (message: string): StepFailed => {
    fail(message);
    return new StepFailed(message);
  };

  const get = async (path: string): Promise<Response> => {
    let response: Response;
    try {
      response = await doFetch(options.api + path);
    } catch (error) {
      throw stop(`API unreachable: GET ${options.api}${path}: ${(error as Error).message}`);
    }
    if (!response.ok) {
      const body: ApiError | null = await response.json().catch(() => null);
      throw stop(`GET ${path} answered ${response.status}${body?.error ? ` ${body.error.code}: ${body.error.message}` : ""}`);
    }
    return response;
  };
  // The body as the API's document declares it for the operation the caller names in its type.
  const getJson = async (path: string) => (await get(path)).json();

  try {
    // The daily score of the day (default: the agent's latest daily score).
    const range: Record<string, string> = options.day ? { from: options.day, to: options.day } : {};
    const listed: DailyScores["scores"] = [];
    const pageOf = async (cursor?: string): Promise<DailyScores> => {
      const query = new URLSearchParams({ ...range, ...(cursor === undefined ? {} : { cursor }) }).toString();
      return getJson(`/v1/agents/${options.agentId}/scores${query ? `?${query}` : ""}`);
    };
    // The history comes a page at a time, oldest first: every page up to the last (a bounded number of them).
    const first = await pageOf();
    listed.push(...first.scores);
    for (let cursor = first.nextCursor, pages = 1; cursor !== null; pages++) {
      if (pages === MAX_HISTORY_PAGES)
        throw stop(`the score history of agent ${options.agentId} has more than ${MAX_HISTORY_PAGES} pages: name a day`);
      const page = await pageOf(cursor);
      listed.push(...page.scores);
      cursor = page.nextCursor;
    }
    const daily = listed.filter((s) => s.trigger === "daily" && (options.day === undefined || s.day === options.day));
    const found = daily[daily.length - 1];
    if (!found || found.day === null) throw stop(noDailyScore(options.agentId, options.day, first));
    const day = found.day;
    const score: NonNullable<VerifyScoreResult["score"]> = { id: found.id, agentId: options.agentId, day, api: options.api };
    result.score = score;

    // 1. Inputs: the exact bytes, as served.
    step = "inputs";
    const inputsResponse = await get(`/v1/scores/${found.id}/inputs`);
    const bytes = new Uint8Array(await inputsResponse.arrayBuffer());
    const headerDigest = inputsResponse.headers.get("x-vrai-sha256");
    ok(`inputs fetched (${bytes.length} bytes)`);

    // 2. The score, recomputed from the inputs alone with the method engine.
    step = "score";
    const stored: ApiJson<"getScore", 200> = await getJson(`/v1/scores/${found.id}`);
    let text: string;
    let recomputed: ReturnType<typeof scoreFromInputs>;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      recomputed = scoreFromInputs(validateScoreInputs(JSON.parse(text)));
    } catch (error) {
      step = "inputs";
      throw stop(`inputs: not a valid inputs document: ${(error as Error).message}`);
    }
    const { sha256: storedDigest, ...storedResult } = stored.result;
    const { sha256: _recomputedDigest, ...recomputedResult } = recomputed.result;
    const storedRest: Record<string, unknown> = storedResult;
    const recomputedRest: Record<string, unknown> = recomputedResult;
    const total = recomputed.result.total;
    score.total = total;
    if (recomputed.canonical !== text) {
      step = "inputs";
      fail("inputs: not in canonical form (RFC 8785): the served bytes are not the document's canonical bytes");
    } else if (recomputed.result.agent !== options.agentId || recomputed.result.at !== toRfc3339(Date.parse(`${day}T00:00:00Z`) / 1000)) {
      step = "inputs";
      fail(
        `inputs: they are agent ${recomputed.result.agent}'s at ${recomputed.result.at}, not ${options.agentId}'s daily inputs of ${day}`,
      );
    } else if (canonicalJson(recomputedRest) !== canonicalJson(storedRest)) {
      const differing = Object.keys({ ...storedRest, ...recomputedRest }).filter(
        (k) => canonicalJson(storedRest[k] ?? null) !== canonicalJson(recomputedRest[k] ?? null),
      );
      fail(`score recomputed: total ${total}, the stored result has total ${stored.total}; they differ in ${differing.join(", ")}`);
    } else ok(`score recomputed: total ${total} equals the stored result (method ${recomputed.result.method})`);

    // 3. The digest: SHA-256 of the bytes, against every place the service publishes it.
    step = "digest";
    const digest = sha256Hex(bytes);
    score.sha256 = digest;
    const proof: ApiJson<"getScoreProof", 200> = await getJson(`/v1/scores/${found.id}/proof`);
    score.root = proof.root;
    const published: Array<[string, string | null | undefined]> = [
      ["the X-Vrai-Sha256 header", headerDigest],
      ["the stored score's sha256", stored.sha256],
      ["the stored result's sha256", storedDigest],
      ["the Merkle leaf's sha256", typeof proof.leafValues?.[3] === "string" ? proof.leafValues[3].replace(/^0x/, "") : undefined],
    ];
    const differing = published.filter(([, value]) => value !== digest);
    if (differing.length === 0) ok(`digest sha256 ${digest} matches the X-Vrai-Sha256 header, the stored score and its Merkle leaf`);
    else if (differing.length === published.length && new Set(published.map(([, v]) => v)).size === 1) {
      fail(`inputs altered: the served inputs hash to ${digest}, the published digest is ${published[0][1]}`);
    } else for (const [where, value] of differing) fail(`digest: ${where} is ${value ?? "missing"}, the inputs hash to ${digest}`);

    // 4. The Merkle proof: from the leaf of this score's own values to the root.
    step = "merkle";
    let served: AnyScoreLeafValues;
    try {
      served = scoreLeafFromJson(proof.leafValues ?? []);
    } catch (error) {
      throw stop(`Merkle leaf: the proof's leaf values are not a leaf: ${(error as Error).message}`);
    }
    const leafVersion = scoreLeafVersion(served);
    score.leafVersion = leafVersion;
    const expected = expectedLeaf(served, options.agentId, day, digest, recomputed.result);
    const leaf = scoreLeafHash(expected.values);
    const servedJson = scoreLeafToJson(served);
    const expectedJson = scoreLeafToJson(expected.values);
    if (canonicalJson(servedJson) !== canonicalJson(expectedJson)) {
      const names: readonly string[] = leafVersion === 2 ? SCORE_LEAF_V2_FIELDS : ["agent", "day", "method", "inputsSha256"];
      const differing = names.flatMap((name, i) =>
        canonicalJson(servedJson[i]) === canonicalJson(expectedJson[i])
          ? []
          : [`${name} ${servedJson[i]} (this score's: ${expectedJson[i]})`],
      );
      fail(`Merkle leaf: the proof's leaf (version ${leafVersion}) is not this score's: ${differing.join(", ")}`);
    } else if (expected.problem) fail(`Merkle leaf: ${expected.problem}`);
    else if (proof.leaf !== leaf) fail(`Merkle leaf: the served leaf ${proof.leaf} is not the hash of its values (${leaf})`);
    let reached: Hex;
    try {
      reached = processScoreProof(leaf, proof.proof);
    } catch (error) {
      throw stop(`Merkle proof: malformed: ${(error as Error).message}`);
    }
    const proofLeadsToRoot = reached === proof.root;
    if (proofLeadsToRoot)
      ok(`Merkle proof leads to root ${proof.root} (${proof.proof.length} element${proof.proof.length === 1 ? "" : "s"})`);

    // 5. The root on chain: anchored as a batch root, by the transaction the API names.
    step = "anchor";
    // The API serves a proof once its day's root is mined (proof_not_ready before), with the anchoring transaction.
    const contract = options.contract ?? proof.anchor.contract;
    if (options.contract && getAddress(proof.anchor.contract) !== options.contract) {
      fail(`anchor contract: the API names ${proof.anchor.contract}, the expected AnchorRegistry is ${options.contract}`);
    }
    const client = createPublicClient({ transport: http(options.rpcUrl, { retryCount: 0 }) });
    const anchorsOf = (root: Hex) =>
      Promise.all(
        ROLES.map((role) =>
          client.readContract({ address: contract, abi: anchorRegistryAbi, functionName: "anchorOf", args: [root, role] }),
        ),
      );
    let chainId: number;
    try {
      chainId = await client.getChainId();
    } catch (error) {
      throw stop(`chain RPC unreachable at ${options.rpcUrl}: ${shortMessageOf(error)}`);
    }
    if ((await client.getCode({ address: contract })) === undefined)
      throw stop(`no contract at ${contract} on chain ${chainId} (${options.rpcUrl})`);
    if (!proofLeadsToRoot) {
      // Which was altered: an intact proof leads to the day's real root, anchored on chain.
      step = "merkle";
      if ((await anchorsOf(reached)).some((a) => a.isRoot))
        fail(`root altered: the proof leads to ${reached}, anchored on chain, but the API gives root ${proof.root}`);
      else fail(`Merkle proof altered: it leads to ${reached}, not to the root ${proof.root}`);
      step = "anchor";
    }
    if (proof.anchor.chainId !== chainId) fail(`anchor chain: the API says chain ${proof.anchor.chainId}, the RPC serves chain ${chainId}`);
    const anchors = await anchorsOf(proof.root);
    if (anchors.every((a) => a.submitter === ZERO_ADDRESS))
      throw stop(`root ${proof.root} is not anchored on chain (AnchorRegistry ${contract}, chain ${chainId})`);
    if (!anchors.some((a) => a.isRoot)) throw stop(`root ${proof.root} is anchored as a single digest, not as a batch root`);
    if (
      proofLeadsToRoot &&
      !(await client.readContract({
        address: contract,
        abi: anchorRegistryAbi,
        functionName: "verify",
        args: [proof.root, leaf, proof.proof],
      }))
    ) {
      fail(`AnchorRegistry.verify(root, leaf, proof) returned false`);
    }
    const receipt = await client.getTransactionReceipt({ hash: proof.anchor.txHash }).catch(() => null);
    const event = receipt ? rootAnchoredLogs(contract, receipt.logs).find((e) => e.root === proof.root) : undefined;
    if (receipt?.status !== "success" || !event) {
      throw stop(`anchoring transaction ${proof.anchor.txHash} is not a mined RootAnchored(${proof.root}) of ${contract}`);
    }
    if (Number(receipt.blockNumber) !== proof.anchor.blockNumber)
      fail(`anchor block: the API says ${proof.anchor.blockNumber}, the transaction is in block ${receipt.blockNumber}`);
    const { kind, kindName } = SCORE_LEAF_VERSIONS[leafVersion];
    if (event.kind !== kind) fail(`anchor kind: ${event.kind} is not bytes32("${kindName}"), the kind of leaves of version ${leafVersion}`);
    // What a contract reads (VraiScores.verify): the kind kept in the anchor's own slot.
    else if (
      leafVersion === 2 &&
      (await client.readContract({
        address: contract,
        abi: anchorRegistryAbi,
        functionName: "rootAnchoredAt",
        args: [proof.root, kind],
      })) === 0
    ) {
      fail(
        `anchor kind: AnchorRegistry.rootAnchoredAt(root, bytes32("${kindName}")) is 0: no contract accepts this root as a day of version-2 scores`,
      );
    }
    // The transaction's event names which of the root's anchors it wrote.
    const anchor = anchors[event.role];
    if (!anchor?.isRoot)
      throw stop(
        `anchoring transaction ${proof.anchor.txHash} emitted RootAnchored for role ${event.role}, but the root has no batch anchor of that role`,
      );
    if (result.checks.every((c) => c.ok)) {
      result.anchor = {
        contract: getAddress(contract),
        chainId,
        txHash: proof.anchor.txHash,
        blockNumber: Number(receipt.blockNumber),
        anchoredAt: toRfc3339(Number(anchor.anchoredAt)),
        role: event.role === 0 ? "anchorer" : "verifier",
        submitter: anchor.submitter,
        leafCount: Number(event.leafCount),
      };
      ok(
        `root anchored on chain at block ${receipt.blockNumber} (${result.anchor.anchoredAt}) by ${ROLE_NAMES[event.role]} ${anchor.submitter}, ` +
          `${event.leafCount} scores, tx ${proof.anchor.txHash}`,
      );
    }
  } catch (error) {
    if (!(error instanceof StepFailed)) fail(`unexpected failure: ${shortMessageOf(error)}`);
  }
  result.verified = result.checks.every((c) => c.ok);
  return result;
}
