import { createPublicClient, getAddress, http, isAddress, type Address, type Hex, type PublicClient } from "viem";
import { anchorRegistryAbi } from "../../chain/abi/anchorRegistry";
import { DeploymentFileError, readDeployment } from "../../chain/deployment";
import { InvalidInputError } from "../../errors";
import { canonicalJson, scoreFromInputs, sha256Hex, toRfc3339, validateScoreInputs } from "../../method";
import { processScoreProof, rootAnchoredLogs, SCORE_DAY_KIND, scoreLeafHash, type ScoreLeafValues } from "../../chain/score-tree";
import { parseFlags } from "../flags";
import type { Command } from "../io";

const USAGE = "verify <agent> [--day YYYY-MM-DD] [--api URL] [--rpc URL] [--contract ADDRESS | --deployment FILE]";
const DEFAULT_API = "http://127.0.0.1:8080";
const DEFAULT_RPC = "http://127.0.0.1:8545";
const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";
/** Pages of score history read at most (100 daily scores each): more means a day must be named. */
const MAX_HISTORY_PAGES = 100;
/** `IAnchorRegistry.AnchorRole`: 0 anchorer, 1 verifier (METHOD A6); a root has at most one anchor of each. */
const ROLE_NAMES = ["an anchorer", "a verifier"] as const;
const ROLES = [0, 1] as const;

type Options = { agent: string; day?: string; api: string; rpc: string; contract?: Address };

/** Reads `vrai verify`'s arguments; anything else is bad input (exit 2). */
function parseOptions(args: readonly string[]): Options {
  const { values: flags, positionals } = parseFlags(
    args,
    { day: { type: "string" }, api: { type: "string" }, rpc: { type: "string" }, contract: { type: "string" }, deployment: { type: "string" } },
    USAGE,
  );
  if (positionals.length !== 1) throw new InvalidInputError("usage", `expected one agent id, got ${positionals.length} (usage: vrai ${USAGE})`);
  const [agent] = positionals;
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(agent)) throw new InvalidInputError("usage", `not an agent id: ${JSON.stringify(agent)}`);
  if (flags.day !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(flags.day)) throw new InvalidInputError("usage", `--day: expected YYYY-MM-DD, got ${flags.day}`);
  for (const name of ["api", "rpc"] as const) {
    const url = flags[name];
    if (url !== undefined && !/^https?:\/\/[^\s]+$/.test(url)) throw new InvalidInputError("usage", `--${name}: expected an http(s) URL, got ${url}`);
  }
  if (flags.contract !== undefined && flags.deployment !== undefined) throw new InvalidInputError("usage", "give --contract or --deployment, not both");
  let contract = flags.contract;
  if (contract !== undefined && !isAddress(contract)) throw new InvalidInputError("usage", `not an address: ${contract}`);
  if (flags.deployment !== undefined) {
    try {
      contract = readDeployment(flags.deployment).contracts.AnchorRegistry.address;
    } catch (error) {
      if (error instanceof DeploymentFileError) throw new InvalidInputError("usage", `--deployment: ${error.message}`, { cause: error });
      throw error;
    }
  }
  return {
    agent, day: flags.day, api: (flags.api ?? process.env.VRAI_API_URL ?? DEFAULT_API).replace(/\/+$/, ""), rpc: flags.rpc ?? process.env.RPC_URL ?? DEFAULT_RPC,
    contract: contract === undefined ? undefined : getAddress(contract),
  };
}

/** A step that cannot go on: its `✘` line is printed and verification stops. */
class StepFailed extends Error {}

type ScoreJson = { id: number; agentId: string; method: string; day: string | null; trigger: string; sha256: string; total: number; result: Record<string, unknown> };
type ProofJson = {
  scoreId: number; leaf: Hex; leafValues: ScoreLeafValues; proof: Hex[]; root: Hex; day: string;
  anchor: { txHash: Hex; blockNumber: number; chainId: number; contract: Address } | null;
};

/**
 * `vrai verify`: checks one daily Vrai score as an outside verifier would, with nothing but the public API
 * and a chain RPC: fetch the inputs, recompute the score with the method engine (V9), recompute their
 * SHA-256, check the Merkle proof, and read the root's anchor on the AnchorRegistry. One line per step
 * (`✔` or `✘` naming what failed); exit 0 only when every step holds, 1 otherwise, 2 on bad arguments.
 */
export const command: Command = {
  name: "verify",
  summary: `${USAGE}   check a daily score: inputs, recomputed result, digest, Merkle proof, on-chain anchor`,
  async run(args, io) {
    const options = parseOptions(args);
    let failures = 0;
    const ok = (line: string) => io.stdout(`✔ ${line}\n`);
    const fail = (line: string) => {
      failures++;
      io.stdout(`✘ ${line}\n`);
    };
    /** Prints a failed step after which nothing can be checked; `throw` the result. */
    const stop = (line: string): StepFailed => {
      fail(line);
      return new StepFailed(line);
    };

    const get = async (path: string): Promise<Response> => {
      let response: Response;
      try {
        response = await fetch(options.api + path);
      } catch (error) {
        throw stop(`API unreachable: GET ${options.api}${path}: ${(error as Error).message}`);
      }
      if (!response.ok) {
        const body = (await response.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
        throw stop(`GET ${path} answered ${response.status}${body?.error ? ` ${body.error.code}: ${body.error.message}` : ""}`);
      }
      return response;
    };
    const getJson = async <T>(path: string): Promise<T> => (await get(path)).json() as Promise<T>;

    try {
      // The daily score of the day (default: the agent's latest daily score).
      const range: Record<string, string> = options.day ? { from: options.day, to: options.day } : {};
      const listed: ScoreJson[] = [];
      // The history comes a page at a time, oldest first: every page up to the last (a bounded number of them).
      for (let cursor: string | null | undefined, pages = 0; cursor !== null; pages++) {
        if (pages === MAX_HISTORY_PAGES) throw stop(`the score history of agent ${options.agent} has more than ${MAX_HISTORY_PAGES} pages: name a day (--day)`);
        const query = new URLSearchParams({ ...range, ...(cursor === undefined ? {} : { cursor }) }).toString();
        const page = await getJson<{ scores: ScoreJson[]; nextCursor: string | null }>(`/v1/agents/${options.agent}/scores${query ? `?${query}` : ""}`);
        listed.push(...page.scores);
        cursor = page.nextCursor;
      }
      const daily = listed.filter((s) => s.trigger === "daily" && (options.day === undefined || s.day === options.day));
      const found = daily[daily.length - 1];
      if (!found || found.day === null) throw stop(`no daily score of agent ${options.agent}${options.day ? ` on ${options.day}` : ""}`);
      const day = found.day;
      io.stdout(`verifying the daily Vrai score ${found.id} of agent ${options.agent} on ${day} (${options.api})\n`);

      // 1. Inputs: the exact bytes, as served.
      const inputsResponse = await get(`/v1/scores/${found.id}/inputs`);
      const bytes = new Uint8Array(await inputsResponse.arrayBuffer());
      const headerDigest = inputsResponse.headers.get("x-vrai-sha256");
      ok(`inputs fetched (${bytes.length} bytes)`);

      // 2. The score, recomputed from the inputs alone with the method engine.
      const stored = await getJson<ScoreJson>(`/v1/scores/${found.id}`);
      let text: string;
      let recomputed: ReturnType<typeof scoreFromInputs>;
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
        recomputed = scoreFromInputs(validateScoreInputs(JSON.parse(text)));
      } catch (error) {
        throw stop(`inputs: not a valid inputs document: ${(error as Error).message}`);
      }
      const { sha256: _storedDigest, ...storedRest } = stored.result;
      const { sha256: _recomputedDigest, ...recomputedRest } = recomputed.result as unknown as Record<string, unknown>;
      const total = (recomputed.result as { total: number }).total;
      if (recomputed.canonical !== text) fail("inputs: not in canonical form (RFC 8785): the served bytes are not the document's canonical bytes");
      else if (recomputed.result.agent !== options.agent || recomputed.result.at !== toRfc3339(Date.parse(`${day}T00:00:00Z`) / 1000)) {
        fail(`inputs: they are agent ${recomputed.result.agent}'s at ${recomputed.result.at}, not ${options.agent}'s daily inputs of ${day}`);
      } else if (canonicalJson(recomputedRest) !== canonicalJson(storedRest)) {
        const differing = Object.keys({ ...storedRest, ...recomputedRest }).filter((k) => canonicalJson(storedRest[k] ?? null) !== canonicalJson(recomputedRest[k] ?? null));
        fail(`score recomputed: total ${total}, the stored result has total ${stored.total}; they differ in ${differing.join(", ")}`);
      } else ok(`score recomputed: total ${total} equals the stored result (method ${recomputed.result.method})`);

      // 3. The digest: SHA-256 of the bytes, against every place the service publishes it.
      const digest = sha256Hex(bytes);
      const proof = await getJson<ProofJson>(`/v1/scores/${found.id}/proof`);
      const published: Array<[string, string | null | undefined]> = [
        ["the X-Vrai-Sha256 header", headerDigest],
        ["the stored score's sha256", stored.sha256],
        ["the stored result's sha256", _storedDigest as string | undefined],
        ["the Merkle leaf's sha256", proof.leafValues?.[3]?.replace(/^0x/, "")],
      ];
      const differing = published.filter(([, value]) => value !== digest);
      if (differing.length === 0) ok(`digest sha256 ${digest} matches the X-Vrai-Sha256 header, the stored score and its Merkle leaf`);
      else if (differing.length === published.length && new Set(published.map(([, v]) => v)).size === 1) {
        fail(`inputs altered: the served inputs hash to ${digest}, the published digest is ${published[0][1]}`);
      } else for (const [where, value] of differing) fail(`digest: ${where} is ${value ?? "missing"}, the inputs hash to ${digest}`);

      // 4. The Merkle proof: from the leaf of this score's own values to the root.
      const expectedValues: ScoreLeafValues = [options.agent, day, recomputed.result.method, `0x${digest}`];
      const leaf = scoreLeafHash(expectedValues);
      if (canonicalJson(proof.leafValues) !== canonicalJson(expectedValues)) {
        fail(`Merkle leaf: the proof's leaf values ${JSON.stringify(proof.leafValues)} are not this score's ${JSON.stringify(expectedValues)}`);
      } else if (proof.leaf !== leaf) fail(`Merkle leaf: the served leaf ${proof.leaf} is not the hash of its values (${leaf})`);
      let reached: Hex;
      try {
        reached = processScoreProof(leaf, proof.proof);
      } catch (error) {
        throw stop(`Merkle proof: malformed: ${(error as Error).message}`);
      }
      const proofLeadsToRoot = reached === proof.root;
      if (proofLeadsToRoot) ok(`Merkle proof leads to root ${proof.root} (${proof.proof.length} element${proof.proof.length === 1 ? "" : "s"})`);

      // 5. The root on chain: anchored as a batch root, by the transaction the API names.
      const contract = options.contract ?? proof.anchor?.contract;
      if (proof.anchor && options.contract && getAddress(proof.anchor.contract) !== options.contract) {
        fail(`anchor contract: the API names ${proof.anchor.contract}, the expected AnchorRegistry is ${options.contract}`);
      }
      if (!contract) throw stop(`root ${proof.root} is not anchored yet: the API reports no anchoring transaction (give --contract or --deployment to look on chain)`);
      const client = createPublicClient({ transport: http(options.rpc, { retryCount: 0 }) }) as PublicClient;
      const anchorsOf = (root: Hex) =>
        Promise.all(ROLES.map((role) => client.readContract({ address: contract, abi: anchorRegistryAbi, functionName: "anchorOf", args: [root, role] })));
      let chainId: number;
      try {
        chainId = await client.getChainId();
      } catch (error) {
        throw stop(`chain RPC unreachable at ${options.rpc}: ${(error as Error).message.split("\n")[0]}`);
      }
      if ((await client.getCode({ address: contract })) === undefined) throw stop(`no contract at ${contract} on chain ${chainId} (${options.rpc})`);
      if (!proofLeadsToRoot) {
        // Which was altered: an intact proof leads to the day's real root, anchored on chain.
        if ((await anchorsOf(reached)).some((a) => a.isRoot)) fail(`root altered: the proof leads to ${reached}, anchored on chain, but the API gives root ${proof.root}`);
        else fail(`Merkle proof altered: it leads to ${reached}, not to the root ${proof.root}`);
      }
      if (proof.anchor && proof.anchor.chainId !== chainId) fail(`anchor chain: the API says chain ${proof.anchor.chainId}, the RPC serves chain ${chainId}`);
      const anchors = await anchorsOf(proof.root);
      if (anchors.every((a) => a.submitter === ZERO_ADDRESS)) throw stop(`root ${proof.root} is not anchored on chain (AnchorRegistry ${contract}, chain ${chainId})`);
      if (!anchors.some((a) => a.isRoot)) throw stop(`root ${proof.root} is anchored as a single digest, not as a batch root`);
      if (proofLeadsToRoot && !(await client.readContract({ address: contract, abi: anchorRegistryAbi, functionName: "verify", args: [proof.root, leaf, proof.proof] }))) {
        fail(`AnchorRegistry.verify(root, leaf, proof) returned false`);
      }
      if (!proof.anchor) throw stop(`root ${proof.root} is anchored on chain but the API reports no anchoring transaction`);
      const receipt = await client.getTransactionReceipt({ hash: proof.anchor.txHash }).catch(() => null);
      const event = receipt ? rootAnchoredLogs(contract, receipt.logs).find((e) => e.root === proof.root) : undefined;
      if (!receipt || receipt.status !== "success" || !event) {
        throw stop(`anchoring transaction ${proof.anchor.txHash} is not a mined RootAnchored(${proof.root}) of ${contract}`);
      }
      if (Number(receipt.blockNumber) !== proof.anchor.blockNumber) fail(`anchor block: the API says ${proof.anchor.blockNumber}, the transaction is in block ${receipt.blockNumber}`);
      if (event.kind !== SCORE_DAY_KIND) fail(`anchor kind: ${event.kind} is not bytes32("vrai-score-day")`);
      // The transaction's event names which of the root's anchors it wrote.
      const anchor = anchors[event.role];
      if (!anchor?.isRoot) throw stop(`anchoring transaction ${proof.anchor.txHash} emitted RootAnchored for role ${event.role}, but the root has no batch anchor of that role`);
      if (failures === 0) {
        const when = toRfc3339(Number(anchor.anchoredAt));
        ok(
          `root anchored on chain at block ${receipt.blockNumber} (${when}) by ${ROLE_NAMES[event.role]} ${anchor.submitter}, ` +
            `${event.leafCount} scores, tx ${proof.anchor.txHash}`,
        );
      }
    } catch (error) {
      if (!(error instanceof StepFailed)) fail(`unexpected failure: ${(error as Error).message.split("\n")[0]}`);
    }
    io.stdout(failures === 0 ? "verified\n" : `not verified: ${failures} check${failures === 1 ? "" : "s"} failed\n`);
    return failures === 0 ? 0 : 1;
  },
};
