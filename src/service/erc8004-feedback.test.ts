import { expect } from "chai";
import { HtmlValidate } from "html-validate";
import { getAddress, keccak256 } from "viem";
import { identityRegistryAbi } from "../chain/abi/identityRegistry";
import { reputationRegistryAbi } from "../chain/abi/reputationRegistry";
import { parseFeedbackFile, uptimeHundredths } from "../chain/feedback-file";
import { newFeedbackLogs } from "../chain/reputation-registry";
import { ACCOUNTS, startFeedbackSystem, type FeedbackSystem } from "../test-helpers/erc8004-feedback";

describe("Vrai's ERC-8004 feedback (PostgreSQL, the reference registries on the in-process Hardhat chain)", () => {
  let sys: FeedbackSystem;
  before(async () => {
    sys = await startFeedbackSystem();
  });
  after(() => sys.close());

  const publishing = (agentId: string) => sys.api("GET", `/v1/agents/${agentId}/erc8004-publishing`);
  const turn = (agentId: string, enabled: boolean, token = sys.ownerToken) =>
    sys.api("PUT", `/v1/agents/${agentId}/erc8004-publishing`, token, { enabled });
  const givenLogs = (tokenId = 0n) =>
    newFeedbackLogs(sys.chain.publicClient, sys.target.registry, { agentId: tokenId, client: sys.publisher });
  const allFeedback = async (tag1: string, tokenId = 0n) => {
    const [, indexes, values, , , , revoked] = await sys.chain.publicClient.readContract({
      address: sys.target.registry,
      abi: reputationRegistryAbi,
      functionName: "readAllFeedback",
      args: [tokenId, [sys.publisher], tag1, "", true],
    });
    return indexes.map((index, i) => ({ index, value: values[i], revoked: revoked[i] }));
  };
  /** The agent's latest daily score, as the API serves it. */
  const latestDaily = async (agentId: string) => {
    const { scores } = (await sys.api("GET", `/v1/agents/${agentId}/scores`)).json;
    const score = scores.at(-1);
    return { ...score, result: (await sys.api("GET", `/v1/scores/${score.id}`)).json.result };
  };
  /** A new agent of the owner proving token `tokenId` of `holder`. */
  const agentWithToken = async (tokenId: bigint, holder: number) => {
    const { agentId } = (await sys.api("POST", "/v1/agents", sys.ownerToken, {})).json;
    return { agentId: agentId as string, proofId: await sys.proveIdentity(agentId, tokenId, holder) };
  };
  const mined = async (hash: `0x${string}`) => void (await sys.chain.publicClient.waitForTransactionReceipt({ hash }));

  it("refuses publishing without an active ERC-8004 proof of the served registry, or for another's agent, changing nothing", async () => {
    const { agentId } = (await sys.api("POST", "/v1/agents", sys.ownerToken, {})).json;
    const noProof = await turn(agentId, true);
    expect(noProof.status).to.equal(409);
    expect(noProof.json.error.code).to.equal("erc8004_proof_required");
    expect(noProof.json.error.message).to.include("POST /v1/proofs/challenges");
    expect((await publishing(agentId)).json).to.include({ enabled: false, changedAt: null });

    // An identity of another identity registry than the one the reputation registry keeps feedback about.
    const other = getAddress((await sys.chain.deployReferenceIdentity()).address);
    await mined(
      await sys.chain.walletClients[ACCOUNTS.otherHolder].writeContract({
        address: other,
        abi: identityRegistryAbi,
        functionName: "register",
        args: ["x"],
      }),
    );
    await sys.proveIdentity(agentId, 0n, ACCOUNTS.otherHolder, other);
    const elsewhere = await turn(agentId, true);
    expect(elsewhere.status).to.equal(409);
    expect(elsewhere.json.error.code).to.equal("erc8004_registry_not_served");
    expect(elsewhere.json.error.message).to.include(sys.target.identityRegistry);

    const stranger = (await sys.api("POST", "/v1/owners", undefined, {})).json;
    expect((await turn(sys.agent.agentId, true, stranger.token)).json.error.code).to.equal("agent_owned_by_another_owner");
    expect((await turn("agt_nosuchagent0000", true)).status).to.equal(404);
    const badBody = await sys.api("PUT", `/v1/agents/${sys.agent.agentId}/erc8004-publishing`, sys.ownerToken, { enabled: "yes" });
    expect(badBody.status).to.equal(400);
    expect(badBody.json.error.message).to.include("enabled");
    expect((await publishing(sys.agent.agentId)).json).to.include({ enabled: false, changedAt: null });
    expect((await publishing(agentId)).json).to.include({ enabled: false, changedAt: null });
  });

  it("gives the daily score as vraiScore and Reliability's coverage as uptime once its day is anchored; getSummary has them", async () => {
    const on = await turn(sys.agent.agentId, true);
    expect(on.status).to.equal(200);
    expect(on.json).to.deep.include({
      enabled: true,
      reason: null,
      registry: { chainId: sys.chain.chain.id, reputationRegistry: sys.target.registry, identityRegistry: sys.target.identityRegistry },
    });
    const day = await sys.day();
    await sys.server.erc8004Feedback!.runOnce();
    const score = await latestDaily(sys.agent.agentId);
    expect(score.day).to.equal(day);
    const creditS = score.result.components.reliability.creditS;
    expect(creditS).to.equal(7200);
    expect(await sys.summary("vraiScore")).to.deep.equal({ count: 1n, value: BigInt(score.total), decimals: 0 });
    expect(await sys.summary("uptime")).to.deep.equal({ count: 1n, value: BigInt(uptimeHundredths(creditS)), decimals: 2 });
    expect(uptimeHundredths(creditS)).to.equal(27);

    // What was given, as its NewFeedback says it, and the file behind it, served byte for byte.
    const logs = await givenLogs();
    expect(logs.map((l) => [l.tag1, l.tag2])).to.have.deep.members([
      ["vraiScore", "0.2"],
      ["uptime", "30d"],
    ]);
    expect(logs.map((l) => l.feedbackIndex)).to.deep.equal([1n, 2n]);
    const proof = (await sys.api("GET", `/v1/scores/${score.id}/proof`)).json;
    for (const log of logs) {
      expect(log.endpoint).to.equal(`${sys.server.url}/agents/${sys.agent.agentId}`);
      expect(log.feedbackURI.startsWith(`${sys.server.url}/v1/erc8004/feedback/fbk_`)).to.equal(true);
      const res = await fetch(log.feedbackURI);
      expect(res.status).to.equal(200);
      expect(res.headers.get("cache-control")).to.equal("public, max-age=31536000, immutable");
      const bytes = new Uint8Array(await res.arrayBuffer());
      expect(keccak256(bytes)).to.equal(log.feedbackHash);
      const file = parseFeedbackFile(bytes);
      expect(file).to.deep.include({
        agentRegistry: `eip155:${sys.chain.chain.id}:${sys.target.identityRegistry}`,
        agentId: 0,
        clientAddress: `eip155:${sys.chain.chain.id}:${sys.publisher}`,
        value: Number(log.value),
        valueDecimals: log.valueDecimals,
        tag1: log.tag1,
        tag2: log.tag2,
        scoreType: "vrai",
        method: "0.2",
        vraiAgentId: sys.agent.agentId,
        scoreId: score.id,
        day,
        inputsSha256: score.sha256,
        dayRoot: proof.root,
      });
      expect(file.anchor).to.deep.equal({ chainId: proof.anchor.chainId, registry: proof.anchor.contract, txHash: proof.anchor.txHash });
      expect(file.creditS).to.equal(log.tag1 === "uptime" ? creditS : undefined);
    }
    const status = (await publishing(sys.agent.agentId)).json;
    expect(status.feedback.map((f: any) => [f.tag1, f.state, f.feedbackIndex, f.day])).to.have.deep.members(
      logs.map((l) => [l.tag1, "given", Number(l.feedbackIndex), day]),
    );
    const page = await (await fetch(`${sys.server.url}/agents/${sys.agent.agentId}`)).text();
    expect(page).to.include("Vrai gives this agent's score as feedback in the ERC-8004 Reputation Registry");
    for (const log of logs) expect(page).to.include(`<a href="${log.feedbackURI}">its file</a>`);
    const validity = await new HtmlValidate({ extends: ["html-validate:standard", "html-validate:document"] }).validateString(page);
    expect(validity.results.flatMap((r) => r.messages.map((m) => `${m.ruleId}: ${m.message}`))).to.deep.equal([]);
    const agent = (await sys.api("GET", `/v1/agents/${sys.agent.agentId}`)).json;
    expect(agent).to.deep.include({ agentId: sys.agent.agentId, name: "published" });
    expect(agent.erc8004Publishing).to.deep.equal(status);
  });

  it("replaces a value that changed the next day, revoking the previous feedback, once a day", async () => {
    await sys.day();
    await sys.server.erc8004Feedback!.runOnce();
    const score = await latestDaily(sys.agent.agentId);
    expect(score.result.components.reliability.creditS).to.equal(14_400);
    expect(await sys.summary("vraiScore")).to.deep.equal({ count: 1n, value: BigInt(score.total), decimals: 0 });
    expect(await sys.summary("uptime")).to.deep.equal({ count: 1n, value: BigInt(uptimeHundredths(14_400)), decimals: 2 });
    expect((await allFeedback("uptime")).map((f) => [f.value, f.revoked])).to.deep.equal([
      [27n, true],
      [55n, false],
    ]);
    // The uptime feedback was revoked before its replacement was given: the registry never held two of Vrai's.
    const logs = await givenLogs();
    expect(logs).to.have.length(4);
    const again = await sys.server.erc8004Feedback!.runOnce();
    expect(again).to.deep.include({ planned: 0, outcomes: [] });
    expect(await givenLogs()).to.have.length(4);
  });

  it("gives nothing for a day whose values did not change", async () => {
    const before = await sys.chain.publicClient.getTransactionCount({ address: sys.publisher });
    await sys.day({ checkins: false });
    const pass = await sys.server.erc8004Feedback!.runOnce();
    expect(pass.outcomes).to.deep.equal([]);
    expect(await sys.chain.publicClient.getTransactionCount({ address: sys.publisher })).to.equal(before);
    expect((await sys.summary("vraiScore")).count).to.equal(1n);
  });

  it("revokes Vrai's feedback when the owner turns publishing off", async () => {
    const off = await turn(sys.agent.agentId, false);
    expect(off.json).to.include({ enabled: false, reason: null });
    await sys.server.erc8004Feedback!.runOnce();
    expect((await sys.summary("vraiScore")).count).to.equal(0n);
    expect((await sys.summary("uptime")).count).to.equal(0n);
    const latest = (await publishing(sys.agent.agentId)).json.feedback.slice(0, 2);
    expect(latest.map((f: any) => [f.state, f.revokeReason])).to.deep.equal([
      ["revoked", "publishing turned off by the owner"],
      ["revoked", "publishing turned off by the owner"],
    ]);
  });

  it("turns publishing off and revokes the feedback when the agent's ERC-8004 proof is removed", async () => {
    expect((await turn(sys.agent.agentId, true)).json.enabled).to.equal(true);
    await sys.day();
    await sys.server.erc8004Feedback!.runOnce();
    expect((await sys.summary("vraiScore")).count).to.equal(1n);
    expect((await sys.api("DELETE", `/v1/proofs/${sys.agent.proofId}`, sys.ownerToken)).status).to.equal(200);
    const status = (await publishing(sys.agent.agentId)).json;
    expect(status).to.include({ enabled: false, reason: "its ERC-8004 proof was removed (removed by its owner)" });
    const page = await (await fetch(`${sys.server.url}/agents/${sys.agent.agentId}`)).text();
    expect(page).to.include("any more: its ERC-8004 proof was removed (removed by its owner).");
    await sys.server.erc8004Feedback!.runOnce();
    expect((await sys.summary("vraiScore")).count).to.equal(0n);
    expect((await sys.summary("uptime")).count).to.equal(0n);
    // Turning it on again needs a proof again.
    expect((await turn(sys.agent.agentId, true)).json.error.code).to.equal("erc8004_proof_required");
  });

  it("revokes the feedback when the identity token moves to another owner", async () => {
    const moved = await agentWithToken(1n, ACCOUNTS.otherHolder);
    expect((await turn(moved.agentId, true)).json.enabled).to.equal(true);
    await sys.day({ checkins: false });
    await sys.server.erc8004Feedback!.runOnce();
    expect((await sys.summary("vraiScore", 1n)).count).to.equal(1n);
    const [from, to] = [sys.chain.accounts[ACCOUNTS.otherHolder].address, sys.chain.accounts[5].address];
    await mined(
      await sys.chain.walletClients[ACCOUNTS.otherHolder].writeContract({
        address: sys.identityRegistry,
        abi: identityRegistryAbi,
        functionName: "transferFrom",
        args: [from, to, 1n],
      }),
    );
    // What the indexer does when it sees the Transfer (V6: re-checked at once).
    expect(await sys.server.proofs.recheckErc8004(sys.chain.chain.id, sys.identityRegistry, 1n)).to.equal(1);
    expect((await publishing(moved.agentId)).json.reason).to.equal(
      "its ERC-8004 proof was removed (the identity token moved to another wallet)",
    );
    await sys.server.erc8004Feedback!.runOnce();
    expect((await sys.summary("vraiScore", 1n)).count).to.equal(0n);
    expect((await sys.summary("uptime", 1n)).count).to.equal(0n);
  });

  it("drops a feedback the registry refuses, with its reason (the publisher holds the token)", async () => {
    const { publicClient } = sys.chain;
    await mined(
      await sys.chain.walletClients[ACCOUNTS.publisher].writeContract({
        address: sys.identityRegistry,
        abi: identityRegistryAbi,
        functionName: "register",
        args: ["ipfs://publisher"],
      }),
    );
    const own = await agentWithToken(2n, ACCOUNTS.publisher);
    await turn(own.agentId, true);
    const nonce = await publicClient.getTransactionCount({ address: sys.publisher });
    await sys.day({ checkins: false });
    await sys.server.erc8004Feedback!.runOnce();
    const feedback = (await publishing(own.agentId)).json.feedback;
    expect(feedback.map((f: any) => [f.state, f.droppedReason])).to.deep.equal([
      ["dropped", "the reputation registry refuses it: Self-feedback not allowed"],
      ["dropped", "the reputation registry refuses it: Self-feedback not allowed"],
    ]);
    expect(await publicClient.getTransactionCount({ address: sys.publisher })).to.equal(nonce);
    expect((await sys.summary("vraiScore", 2n)).count).to.equal(0n);
  });

  it("serves no file of a feedback that does not exist: 404 feedback_not_found, and 400 for an id that is not one", async () => {
    const missing = await sys.api("GET", "/v1/erc8004/feedback/fbk_nosuchfeedback");
    expect(missing.status).to.equal(404);
    expect(missing.json.error.code).to.equal("feedback_not_found");
    expect((await sys.api("GET", "/v1/erc8004/feedback/not%20an%20id")).status).to.equal(400);
  });
});
