import { expect } from "chai";
import { encodeFunctionData } from "viem";
import { reputationRegistryAbi } from "../chain/abi/reputationRegistry";
import { newFeedbackLogs } from "../chain/reputation-registry";
import { ACCOUNTS, startFeedbackSystem, type FeedbackSystem } from "../test-helpers/erc8004-feedback";
import { verifyScore, type VerifyScoreOptions } from "./verify";
import { runVerifyCli } from "./verify-cli";

describe("SDK verifyScore from the ERC-8004 Reputation Registry (PostgreSQL, the reference registries, in-process chain)", () => {
  let sys: FeedbackSystem;
  let start: NonNullable<VerifyScoreOptions["erc8004"]>;

  before(async () => {
    sys = await startFeedbackSystem();
    await sys.api("PUT", `/v1/agents/${sys.agent.agentId}/erc8004-publishing`, sys.ownerToken, { enabled: true });
    await sys.day();
    await sys.server.erc8004Feedback!.runOnce();
    start = { identityRegistry: sys.identityRegistry, tokenId: 0n, reputationRegistry: sys.target.registry, publisher: sys.publisher };
  });
  after(() => sys.close());

  const latestDaily = async () => (await sys.api("GET", `/v1/agents/${sys.agent.agentId}/scores`)).json.scores.at(-1);

  it("reads Vrai's latest feedback and its file, then verifies the score it names, whose recomputed total is the value given", async () => {
    const result = await verifyScore({ rpcUrl: sys.rpc.url, erc8004: start });
    expect(result.verified, JSON.stringify(result.checks, null, 1)).to.equal(true);
    expect(result.checks.map((c) => c.step)).to.deep.equal(["feedback", "inputs", "score", "digest", "merkle", "anchor", "feedback"]);
    const daily = await latestDaily();
    // The API was found where the feedback's file is served.
    expect(result.score).to.include({ agentId: sys.agent.agentId, day: daily.day, id: daily.id, total: daily.total, api: sys.server.url });
    expect(result.feedback).to.deep.include({
      reputationRegistry: sys.target.registry,
      chainId: sys.chain.chain.id,
      feedbackIndex: 1n,
      value: BigInt(daily.total),
    });
    expect(result.checks[0].message).to.include(
      `vraiScore ${daily.total} (method 0.2), agent ${sys.agent.agentId}'s daily score of ${daily.day}`,
    );
  });

  it("follows the feedback that stands: the next day's, once the previous one is revoked", async () => {
    await sys.day();
    await sys.server.erc8004Feedback!.runOnce();
    const result = await verifyScore({ rpcUrl: sys.rpc.url, api: sys.server.url, erc8004: { ...start, tokenId: "0", chainId: 31337 } });
    expect(result.verified, JSON.stringify(result.checks)).to.equal(true);
    expect(result.score?.day).to.equal((await latestDaily()).day);
    // chai compares numbers and dates only: a bigint is compared here.
    const index = result.feedback?.feedbackIndex;
    expect(typeof index === "bigint" && index > 2n, `feedbackIndex ${index}`).to.equal(true);
  });

  it("fails a file that is not the one whose hash was given on chain, naming both hashes", async () => {
    const altered: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (!String(input).includes("/v1/erc8004/feedback/")) return response;
      const text = (await response.text()).replace(/"value":(\d+)/, '"value":999');
      return new Response(text, { status: 200 });
    };
    const result = await verifyScore({ rpcUrl: sys.rpc.url, erc8004: start, fetch: altered });
    expect(result.verified).to.equal(false);
    expect(result.checks).to.have.length(1);
    expect(result.checks[0].step).to.equal("feedback");
    expect(result.checks[0].message).to.match(
      /^feedback file altered: .* hashes to 0x[0-9a-f]{64}, the feedbackHash given on chain is 0x[0-9a-f]{64}$/,
    );
  });

  it("reads only the named publisher's feedback: another account's copy of Vrai's file is not Vrai's score", async () => {
    // Another account gives feedback of 999 pointing at Vrai's own file (its real hash).
    const [vrai] = (await newFeedbackLogs(sys.chain.publicClient, sys.target.registry, { agentId: 0n, client: sys.publisher })).slice(-2);
    const copier = sys.chain.walletClients[0];
    const hash = await copier.sendTransaction({
      to: sys.target.registry,
      data: encodeFunctionData({
        abi: reputationRegistryAbi,
        functionName: "giveFeedback",
        args: [0n, 999n, 0, "vraiScore", "0.2", vrai.endpoint, vrai.feedbackURI, vrai.feedbackHash],
      }),
    });
    await sys.chain.publicClient.waitForTransactionReceipt({ hash });
    const copied = await verifyScore({ rpcUrl: sys.rpc.url, erc8004: { ...start, publisher: copier.account.address } });
    expect(copied.verified).to.equal(false);
    expect(copied.checks.map((c) => c.step)).to.deep.equal(["feedback"]);
    expect(copied.checks[0].message).to.include(
      `clientAddress eip155:31337:${sys.publisher} (on chain: eip155:31337:${copier.account.address})`,
    );
    expect(copied.checks[0].message).to.include("value");
    // Vrai's own stands as it was.
    expect((await verifyScore({ rpcUrl: sys.rpc.url, erc8004: start })).verified).to.equal(true);
  });

  it("says when no feedback of Vrai's stands about the token, or the registry keeps feedback about another identity registry", async () => {
    const none = await verifyScore({ rpcUrl: sys.rpc.url, erc8004: { ...start, tokenId: 1n } });
    expect(none.checks).to.deep.equal([
      {
        step: "feedback",
        ok: false,
        message: `no vraiScore feedback by ${sys.publisher} about token 1 of ${sys.identityRegistry} stands (none given, or all revoked)`,
      },
    ]);
    const other = sys.chain.accounts[ACCOUNTS.otherHolder].address;
    const elsewhere = await verifyScore({ rpcUrl: sys.rpc.url, erc8004: { ...start, identityRegistry: other } });
    expect(elsewhere.checks[0].message).to.equal(
      `reputation registry ${sys.target.registry} keeps feedback about the agents of ${sys.identityRegistry}, not of ${other}`,
    );
    const chain = await verifyScore({ rpcUrl: sys.rpc.url, erc8004: { ...start, chainId: 8453 } });
    expect(chain.checks[0].message).to.equal(`the identity is on chain 8453, the RPC ${sys.rpc.url} serves chain 31337`);
    const both = await verifyScore({ rpcUrl: sys.rpc.url, agentId: sys.agent.agentId, api: sys.server.url, erc8004: start }).catch(
      (e: Error) => e,
    );
    expect(both).to.be.instanceOf(Error);
    expect((both as Error).message).to.include("one of them");
  });

  it("vrai verify --erc8004 prints the feedback's checks, then the score's, and exits 0", async () => {
    let out = "";
    const args = ["--erc8004", `31337:${sys.identityRegistry}:0`, "--reputation", sys.target.registry, "--publisher", sys.publisher];
    const code = await runVerifyCli([...args, "--rpc", sys.rpc.url], {
      env: {},
      stdout: (text) => {
        out += text;
      },
      name: "vrai verify",
    });
    expect(code, out).to.equal(0);
    const lines = out.trimEnd().split("\n");
    expect(lines[0]).to.equal(
      `verifying Vrai's ERC-8004 feedback about token 0 of ${sys.identityRegistry} (${sys.target.registry}, by ${sys.publisher})`,
    );
    expect(lines[1]).to.match(/^verifying the daily Vrai score \d+ of agent /);
    expect(lines[2]).to.match(/^✔ feedback \d+ by /);
    expect(lines.at(-2)).to.match(/^✔ the value given, \d+, is the score recomputed from its inputs/);
    expect(lines.at(-1)).to.equal("verified");
    for (const [args, message] of [
      [["--erc8004", "31337:0x12:0", "--publisher", sys.publisher], "--erc8004: expected <chainId>:<identity registry>:<token id>"],
      [["--erc8004", `31337:${sys.identityRegistry}:0`, "--publisher", sys.publisher], "--erc8004 needs --reputation"],
      [["--erc8004", `31337:${sys.identityRegistry}:0`, "--reputation", sys.target.registry], "--erc8004 needs --publisher"],
      [["agt_x", "--publisher", sys.publisher], "--publisher and --reputation go with --erc8004"],
    ] as const) {
      await runVerifyCli([...args], { env: {}, stdout: () => undefined, name: "vrai verify" }).then(
        () => expect.fail(`${args.join(" ")} was taken`),
        (error: Error) => expect(error.message).to.include(message),
      );
    }
  });
});
