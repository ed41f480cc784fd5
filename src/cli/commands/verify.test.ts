import { expect } from "chai";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Address, Hex } from "viem";
import type { ApiServer } from "../../app/server";
import { anchorRegistryAbi } from "../../chain/abi/anchorRegistry";
import {
  buildScoreTree,
  isScoreLeafV2,
  proofElements,
  SCORE_DAY_V2_KIND,
  scoreLeafFromJson,
  scoreLeafHash,
  type ScoreLeafV2Values,
} from "../../chain/score-tree";
import { startAnchoredScore, type AnchoredScore } from "../../test-helpers/anchored-score";
import type { TestChain } from "../../test-helpers/chain";
import type { ChainRpcServer } from "../../test-helpers/hardhat-node";
import { memoryIo } from "../io";
import { runCli } from "../main";

const DAY = "2026-11-03";

/** What the tampering proxy may change in an API answer before the verifier sees it. */
type Answer = { status: number; headers: Record<string, string>; body: Buffer };
type Tamper = (path: string, answer: Answer) => Answer;

/** A local HTTP proxy in front of the real API that serves its answers, altered by `tamper`. */
async function startTamperingProxy(upstream: string): Promise<{ url: string; tamper: Tamper | null; close(): Promise<void> }> {
  const proxy = { url: "", tamper: null as Tamper | null, close: async () => {} };
  const server = http.createServer(async (req, res) => {
    const response = await fetch(upstream + req.url);
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      if (name !== "content-length" && name !== "transfer-encoding" && name !== "connection" && name !== "keep-alive")
        headers[name] = value;
    });
    let answer: Answer = { status: response.status, headers, body: Buffer.from(await response.arrayBuffer()) };
    if (proxy.tamper) answer = proxy.tamper(req.url!.split("?")[0], answer);
    res.writeHead(answer.status, { ...answer.headers, "content-length": String(answer.body.length) });
    res.end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return proxy;
}

/** A tree of the served leaf (version 2, as days are from now on) and a made-up agent's leaf whose digest is 32 bytes of `byte`. */
function treeWithMadeUpLeaf(leafValues: unknown[], byte: string) {
  const served = scoreLeafFromJson(leafValues);
  if (!isScoreLeafV2(served)) throw new Error("expected a leaf of version 2");
  const madeUp: ScoreLeafV2Values = [...served];
  madeUp[0] = "agt_made_up";
  madeUp[3] = `0x${byte.repeat(32)}`;
  const values = [served, madeUp];
  return { tree: buildScoreTree(values), leaf: scoreLeafHash(served) };
}

/** Rewrites the JSON body of answers to `path` (a regex). */
const editJson =
  (path: RegExp, edit: (body: any) => void): Tamper =>
  (p, answer) => {
    if (!path.test(p)) return answer;
    const body = JSON.parse(answer.body.toString("utf8"));
    edit(body);
    return { ...answer, body: Buffer.from(JSON.stringify(body)) };
  };

describe("vrai verify (real PostgreSQL, real local chain over JSON-RPC)", () => {
  let fixture: AnchoredScore;
  let chain: TestChain;
  let rpc: ChainRpcServer;
  let server: ApiServer;
  let proxy: Awaited<ReturnType<typeof startTamperingProxy>>;
  let registry: Address;
  let agent: string;

  const verify = async (...extra: string[]) => {
    const io = memoryIo();
    const code = await runCli(["verify", agent, "--day", DAY, "--api", proxy.url, "--rpc", rpc.url, ...extra], io);
    return { code, out: io.out, err: io.err, failures: io.out.split("\n").filter((l) => l.startsWith("✘")) };
  };

  before(async () => {
    fixture = await startAnchoredScore();
    ({ chain, rpc, server, registry, agent } = fixture);
    proxy = await startTamperingProxy(server.url);
  });
  after(async () => {
    await proxy?.close();
    await fixture?.close();
  });
  beforeEach(() => {
    proxy.tamper = null;
  });

  it("passes every step on a real anchored score and exits 0", async () => {
    const { code, out } = await verify("--contract", registry);
    expect(code, out).to.equal(0);
    const lines = out.trim().split("\n");
    expect(lines.filter((l) => l.startsWith("✘"))).to.deep.equal([]);
    expect(
      lines.some((l) => /^✔ inputs fetched \(\d+ bytes\)$/.test(l)),
      out,
    ).to.equal(true);
    expect(
      lines.some((l) => /^✔ score recomputed: total \d+ equals the stored result/.test(l)),
      out,
    ).to.equal(true);
    expect(
      lines.some((l) => /^✔ digest sha256 [0-9a-f]{64} matches/.test(l)),
      out,
    ).to.equal(true);
    expect(
      lines.some((l) => /^✔ Merkle proof leads to root 0x[0-9a-f]{64}/.test(l)),
      out,
    ).to.equal(true);
    expect(
      lines.some((l) => /^✔ root anchored on chain at block \d+ .* by an anchorer 0x[0-9a-fA-F]{40}, 3 scores, tx 0x/.test(l)),
      out,
    ).to.equal(true);
    expect(lines[lines.length - 1]).to.equal("verified");
  });

  it("names altered inputs bytes and exits 1", async () => {
    proxy.tamper = (path, answer) => {
      if (!path.endsWith("/inputs")) return answer;
      const text = answer.body
        .toString("utf8")
        .replace(
          /"claimed_at":"(\d{4}-\d\d-\d\dT\d\d:\d\d:)(\d\d)Z"/,
          (_m, head: string, s: string) => `"claimed_at":"${head}${String((Number(s) + 1) % 60).padStart(2, "0")}Z"`,
        );
      return { ...answer, body: Buffer.from(text) };
    };
    const { code, failures, out } = await verify();
    expect(code, out).to.equal(1);
    expect(
      failures.some((l) => /^✘ inputs altered: the served inputs hash to [0-9a-f]{64}, the published digest is [0-9a-f]{64}$/.test(l)),
      out,
    ).to.equal(true);
  });

  it("names an altered X-Vrai-Sha256 header", async () => {
    proxy.tamper = (path, answer) =>
      path.endsWith("/inputs") ? { ...answer, headers: { ...answer.headers, "x-vrai-sha256": "0".repeat(64) } } : answer;
    const { code, failures, out } = await verify();
    expect(code).to.equal(1);
    expect(failures, out).to.deep.equal([
      `✘ digest: the X-Vrai-Sha256 header is ${"0".repeat(64)}, the inputs hash to ${out.match(/hash to ([0-9a-f]{64})/)![1]}`,
    ]);
  });

  it("names an altered digest of the stored score", async () => {
    proxy.tamper = editJson(/^\/v1\/scores\/\d+$/, (body) => {
      body.sha256 = "f".repeat(64);
    });
    const { code, failures, out } = await verify();
    expect(code).to.equal(1);
    expect(failures, out).to.have.length(1);
    expect(failures[0]).to.match(/^✘ digest: the stored score's sha256 is f{64}, the inputs hash to [0-9a-f]{64}$/);
  });

  it("names an altered stored result", async () => {
    proxy.tamper = editJson(/^\/v1\/scores\/\d+$/, (body) => {
      body.result.total += 50;
    });
    const { code, failures, out } = await verify();
    expect(code).to.equal(1);
    expect(failures, out).to.have.length(1);
    expect(failures[0]).to.match(/^✘ score recomputed: total (\d+), the stored result has total \d+; they differ in total$/);
  });

  it("names a leaf whose total, components or state are not the recomputed score's (version 2)", async () => {
    proxy.tamper = editJson(/\/proof$/, (body) => {
      body.leafValues[4] += 50;
      body.leafValues[8] = 1;
    });
    const { code, failures, out } = await verify();
    expect(code).to.equal(1);
    expect(failures[0], out).to.match(
      /^✘ Merkle leaf: the proof's leaf \(version 2\) is not this score's: total (\d+) \(this score's: \d+\), state 1 \(this score's: 0\)$/,
    );
  });

  it("names a leaf carrying an ERC-8004 identity the inputs do not count (version 2)", async () => {
    proxy.tamper = editJson(/\/proof$/, (body) => {
      body.leafValues.splice(9, 3, "31337", "0x8004A169FB4a3325136EB29fA0ceB6D2e539a432", "7");
    });
    const { code, failures, out } = await verify();
    expect(code).to.equal(1);
    expect(failures[0], out).to.equal(
      "✘ Merkle leaf: the leaf names ERC-8004 identity 31337:0x8004A169FB4a3325136EB29fA0ceB6D2e539a432:7, the inputs count no erc8004 proof",
    );
  });

  it("names an altered Merkle proof element", async () => {
    proxy.tamper = editJson(/\/proof$/, (body) => {
      body.proof[0] = `0x${"ab".repeat(32)}`;
    });
    const { code, failures, out } = await verify();
    expect(code).to.equal(1);
    expect(failures, out).to.have.length(1);
    expect(failures[0]).to.match(/^✘ Merkle proof altered: it leads to 0x[0-9a-f]{64}, not to the root 0x[0-9a-f]{64}$/);
  });

  it("names an altered root when the proof still leads to the anchored one", async () => {
    proxy.tamper = editJson(/\/proof$/, (body) => {
      body.root = `0x${"cd".repeat(32)}`;
    });
    const { code, failures, out } = await verify();
    expect(code).to.equal(1);
    expect(failures[0], out).to.match(
      /^✘ root altered: the proof leads to 0x[0-9a-f]{64}, anchored on chain, but the API gives root 0x(cd){32}$/,
    );
    expect(failures.at(-1)).to.equal(`✘ root 0x${"cd".repeat(32)} is not anchored on chain (AnchorRegistry ${registry}, chain 31337)`);
  });

  it("names a root that is not anchored when leaf, proof and root are consistent but made up", async () => {
    let fakeRoot = "";
    proxy.tamper = editJson(/\/proof$/, (body) => {
      const { tree, leaf } = treeWithMadeUpLeaf(body.leafValues, "12");
      body.proof = proofElements(tree.proof(0));
      body.root = fakeRoot = tree.root;
      body.leaf = leaf;
    });
    const { code, failures, out } = await verify();
    expect(code).to.equal(1);
    expect(out).to.contain(`✔ Merkle proof leads to root ${fakeRoot}`);
    expect(failures, out).to.deep.equal([`✘ root ${fakeRoot} is not anchored on chain (AnchorRegistry ${registry}, chain 31337)`]);
  });

  it("names an anchoring contract other than the one expected", async () => {
    const { code, failures, out } = await verify("--contract", "0x000000000000000000000000000000000000dEaD");
    expect(code).to.equal(1);
    expect(failures, out).to.deep.equal([
      `✘ anchor contract: the API names ${registry}, the expected AnchorRegistry is 0x000000000000000000000000000000000000dEaD`,
      `✘ no contract at 0x000000000000000000000000000000000000dEaD on chain 31337 (${rpc.url})`,
    ]);
  });

  /** Grants account 2 the verifier role and has it send the transaction `send` writes with its wallet; waits for the receipt. */
  async function verifierAnchors(send: (verifier: TestChain["walletClients"][number]) => Promise<Hex>) {
    const role = await chain.publicClient.readContract({ address: registry, abi: anchorRegistryAbi, functionName: "VERIFIER_ROLE" });
    await chain.publicClient.waitForTransactionReceipt({
      hash: await chain.walletClient.writeContract({
        address: registry,
        abi: anchorRegistryAbi,
        functionName: "grantRole",
        args: [role, chain.accounts[2].address],
      }),
    });
    const hash = await send(chain.walletClients[2]);
    expect((await chain.publicClient.waitForTransactionReceipt({ hash })).status).to.equal("success");
  }

  /** The proof the API serves for the agent's daily score of DAY. */
  async function servedProof(): Promise<{ root: Hex; leafValues: unknown[] }> {
    const { scores } = (await (await fetch(`${server.url}/v1/agents/${agent}/scores?from=${DAY}&to=${DAY}`)).json()) as {
      scores: Array<{ id: number; trigger: string }>;
    };
    const daily = scores.filter((s) => s.trigger === "daily").at(-1)!;
    return (await fetch(`${server.url}/v1/scores/${daily.id}/proof`)).json() as Promise<{ root: Hex; leafValues: unknown[] }>;
  }

  it("reads the service's anchor of the root when a verifier anchored the same root beside it (one anchor per role, A6)", async () => {
    const { root } = await servedProof();
    await verifierAnchors((verifier) =>
      verifier.writeContract({
        address: registry,
        abi: anchorRegistryAbi,
        functionName: "anchorRoot",
        args: [root, 2n, SCORE_DAY_V2_KIND],
      }),
    );
    const { code, out } = await verify("--contract", registry);
    expect(code, out).to.equal(0);
    expect(out).to.match(
      new RegExp(`^✔ root anchored on chain at block \\d+ .* by an anchorer ${chain.accounts[1].address}, 3 scores, tx 0x`, "m"),
    );
  });

  it("names a root anchored only as a single digest, even by a verifier", async () => {
    const { leafValues } = await servedProof();
    const { tree, leaf } = treeWithMadeUpLeaf(leafValues, "34");
    await verifierAnchors((verifier) =>
      verifier.writeContract({ address: registry, abi: anchorRegistryAbi, functionName: "anchor", args: [tree.root, SCORE_DAY_V2_KIND] }),
    );
    proxy.tamper = editJson(/\/proof$/, (body) => {
      body.proof = proofElements(tree.proof(0));
      body.root = tree.root;
      body.leaf = leaf;
    });
    const { code, failures, out } = await verify();
    expect(code).to.equal(1);
    expect(failures, out).to.deep.equal([`✘ root ${tree.root} is anchored as a single digest, not as a batch root`]);
  });

  it("refuses bad arguments with exit 2 and one line", async () => {
    for (const args of [
      ["verify"],
      ["verify", "agt_1", "--day", "3 Nov"],
      ["verify", "agt_1", "--frobnicate", "x"],
      ["verify", "agt_1", "--rpc", "nope"],
    ]) {
      const io = memoryIo();
      expect(await runCli(args, io), args.join(" ")).to.equal(2);
      expect(io.err.trim().split("\n"), args.join(" ")).to.have.length(1);
      expect(io.out).to.equal("");
    }
  });
});
