import { expect } from "chai";
import { BaseError as ViemBaseError, ContractFunctionRevertedError, stringToHex } from "viem";
import { identityRegistryAbi } from "../chain/abi/identityRegistry";
import { GATE_MAX_AGE_S, GATE_MIN_TOTAL, startGatedScore, type GatedScore } from "../test-helpers/gated-score";
import { getScoreProof, vraiGateAbi, type ScoreProofArgs } from "./score-proof";
import { verifyScore } from "./verify";

/** The custom error a call reverted with, by name and arguments; fails the test when it did not revert. */
async function revertOf(call: Promise<unknown>): Promise<{ errorName: string; args: readonly unknown[] }> {
  try {
    await call;
  } catch (error) {
    const reverted = error instanceof ViemBaseError ? error.walk((e) => e instanceof ContractFunctionRevertedError) : null;
    if (reverted instanceof ContractFunctionRevertedError && reverted.data)
      return { errorName: reverted.data.errorName, args: reverted.data.args ?? [] };
    throw error;
  }
  return expect.fail("the call did not revert");
}

describe("a contract gating on a Vrai score: the API's proof through the example gate on the local chain", function () {
  this.timeout(120_000);
  let fixture: GatedScore;
  before(async function () {
    this.timeout(180_000);
    fixture = await startGatedScore();
  });
  after(async () => {
    await fixture?.close();
  });

  /** `enter` simulated from `account` (an index of the chain's accounts), then sent: its receipt, or the revert. */
  const enter = async (account: number, args: ScoreProofArgs) => {
    const wallet = fixture.chain.walletClients[account];
    const { request } = await fixture.chain.publicClient.simulateContract({
      address: fixture.gate,
      abi: vraiGateAbi,
      functionName: "enter",
      args,
      account: wallet.account,
    });
    return fixture.chain.publicClient.waitForTransactionReceipt({ hash: await wallet.writeContract(request) });
  };

  it("serves the established agent's latest anchored score as a version-2 leaf carrying its total, components, state and ERC-8004 identity", async () => {
    const { established, identityRegistry, today, server } = fixture;
    const proof = await getScoreProof({ api: server.url, agentId: established.agentId });
    const stored = (await (await fetch(`${server.url}/v1/agents/${established.agentId}/scores?from=${today}&to=${today}`)).json()) as {
      scores: Array<{ id: number; total: number; result: any }>;
    };
    const [daily] = stored.scores;
    expect(proof.scoreId).to.equal(daily.id);
    expect(proof.day).to.equal(today);
    expect(proof.score).to.deep.equal({
      agent: established.agentId,
      day: Date.parse(`${today}T00:00:00Z`) / 86_400_000,
      method: stringToHex("0.2", { size: 32 }),
      inputsSha256: `0x${daily.result.sha256}`,
      total: daily.total,
      identity: 150,
      reliability: daily.result.components.reliability.value,
      integrity: 100,
      state: 1,
      erc8004ChainId: 31337n,
      erc8004Registry: identityRegistry,
      erc8004TokenId: 0n,
    });
    expect(daily.total).to.be.at.least(GATE_MIN_TOTAL);
    expect(proof.args).to.deep.equal([proof.score, proof.proof, proof.root]);
    expect(proof.anchor.contract).to.equal(fixture.anchorRegistry);
    expect(proof.anchor.anchoredAt).to.equal(Date.parse(`${today}T00:00:30Z`) / 1000);
  });

  it(
    "lets the established agent's wallet through the gate with the API's proof: " +
      "readContract(check) answers the anchor time, writeContract(enter) passes",
    async () => {
      const { established, gate, chain, server } = fixture;
      const proof = await getScoreProof({ api: server.url, agentId: established.agentId });
      const wallet = chain.walletClients[established.holder];
      const anchoredAt = await chain.publicClient.readContract({
        address: gate,
        abi: vraiGateAbi,
        functionName: "check",
        args: proof.args,
        account: wallet.account,
      });
      expect(anchoredAt).to.equal(proof.anchor.anchoredAt);
      const receipt = await enter(established.holder, proof.args);
      expect(receipt.status).to.equal("success");
      const [entered] = await chain.publicClient.getContractEvents({
        address: gate,
        abi: vraiGateAbi,
        eventName: "Entered",
        blockHash: receipt.blockHash,
      });
      expect(entered.args).to.deep.equal({ account: wallet.account.address, erc8004TokenId: 0n });
    },
  );

  it("lets the token's agent wallet through the gate too, with the same proof", async () => {
    const { established, gate, chain, identityRegistry, server } = fixture;
    const agentWallet = chain.accounts[established.agentWallet].address;
    const onChain = await chain.publicClient.readContract({
      address: identityRegistry,
      abi: identityRegistryAbi,
      functionName: "getAgentWallet",
      args: [established.tokenId],
    });
    expect(onChain).to.equal(agentWallet);
    expect(agentWallet).to.not.equal(chain.accounts[established.holder].address);
    const proof = await getScoreProof({ api: server.url, agentId: established.agentId });
    const receipt = await enter(established.agentWallet, proof.args);
    expect(receipt.status).to.equal("success");
    const [entered] = await chain.publicClient.getContractEvents({
      address: gate,
      abi: vraiGateAbi,
      eventName: "Entered",
      blockHash: receipt.blockHash,
    });
    expect(entered.args).to.deep.equal({ account: agentWallet, erc8004TokenId: 0n });
  });

  it("refuses the provisional agent, even called by its own identity's holder", async () => {
    const { provisional, server } = fixture;
    const proof = await getScoreProof({ api: server.url, agentId: provisional.agentId });
    expect(proof.score).to.include({ state: 0, erc8004TokenId: 1n });
    expect(proof.score.total).to.be.at.least(GATE_MIN_TOTAL);
    expect(await revertOf(enter(provisional.holder, proof.args))).to.deep.equal({
      errorName: "VraiGateScoreNotEstablished",
      args: [provisional.agentId],
    });
  });

  it("refuses another wallet calling with the established agent's proof", async () => {
    const { established, chain, server } = fixture;
    const proof = await getScoreProof({ api: server.url, agentId: established.agentId });
    expect(await revertOf(enter(4, proof.args))).to.deep.equal({
      errorName: "VraiGateNotIdentityHolder",
      args: [chain.accounts[4].address, 0n],
    });
    // The provisional agent's holder holds token 1, not the established agent's token 0.
    expect(await revertOf(enter(fixture.provisional.holder, proof.args))).to.deep.equal({
      errorName: "VraiGateNotIdentityHolder",
      args: [chain.accounts[3].address, 0n],
    });
  });

  it("refuses yesterday's score under yesterday's root as stale", async () => {
    const { established, yesterday, server } = fixture;
    const listed = (await (
      await fetch(`${server.url}/v1/agents/${established.agentId}/scores?from=${yesterday}&to=${yesterday}`)
    ).json()) as { scores: Array<{ id: number }> };
    const proof = await getScoreProof({ api: server.url, scoreId: listed.scores[0].id });
    expect(proof.day).to.equal(yesterday);
    expect(proof.score.state, "established yesterday too").to.equal(1);
    expect(await revertOf(enter(established.holder, proof.args))).to.deep.equal({
      errorName: "VraiGateStaleScore",
      args: [proof.anchor.anchoredAt, GATE_MAX_AGE_S],
    });
  });

  it("refuses a leaf whose total was raised, as not under the root", async () => {
    const { established, server } = fixture;
    const proof = await getScoreProof({ api: server.url, agentId: established.agentId });
    const raised: ScoreProofArgs = [{ ...proof.score, total: 500 }, proof.proof, proof.root];
    expect((await revertOf(enter(established.holder, raised))).errorName).to.equal("VraiScoresInvalidProof");
  });

  it("verifies the version-2 score as an outside verifier: the leaf's total, components, state and identity are the recomputed score's", async () => {
    const { established, today, server, rpc } = fixture;
    const result = await verifyScore({ api: server.url, agentId: established.agentId, day: today, rpcUrl: rpc.url });
    expect(result.checks.map((c) => [c.step, c.ok])).to.deep.equal([
      ["inputs", true],
      ["score", true],
      ["digest", true],
      ["merkle", true],
      ["anchor", true],
    ]);
    expect(result.score).to.include({ leafVersion: 2 });
    expect(result.verified).to.equal(true);
  });

  it("refuses options that are not an agent id, a score id or an API URL, and passes on the API's 404 with its code", async () => {
    const api = fixture.server.url;
    for (const options of [
      { api, agentId: "not an id" },
      { api, scoreId: 0 },
      { api: "ftp://x", agentId: "agt_1" },
      { api },
      { api, agentId: "agt_1", scoreId: 1 },
    ]) {
      await getScoreProof(options).then(
        () => expect.fail(`accepted ${JSON.stringify(options)}`),
        (error: { code: string }) => expect(error.code, JSON.stringify(options)).to.equal("invalid_score_proof_options"),
      );
    }
    await getScoreProof({ api, agentId: "agt_nobody" }).then(
      () => expect.fail("found agt_nobody"),
      (error: { code: string; status: number }) => expect([error.code, error.status]).to.deep.equal(["agent_not_found", 404]),
    );
  });
});
