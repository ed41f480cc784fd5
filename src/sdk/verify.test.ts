import { expect } from "chai";
import { startAnchoredScore, type AnchoredScore } from "../test-helpers/anchored-score";
import { verifyScore, type VerifyScoreOptions } from "./verify";

describe("SDK verifyScore (real PostgreSQL, real local chain over JSON-RPC)", () => {
  let fixture: AnchoredScore;
  before(async () => {
    fixture = await startAnchoredScore();
  });
  after(() => fixture?.close());

  it("returns every step's check in order, all held, and the anchor it read on chain (A6)", async () => {
    const result = await verifyScore({ api: fixture.server.url, agentId: fixture.agent, day: fixture.day, rpcUrl: fixture.rpc.url });
    expect(result.verified, JSON.stringify(result.checks)).to.equal(true);
    expect(result.checks.map((c) => [c.step, c.ok])).to.deep.equal([
      ["inputs", true],
      ["score", true],
      ["digest", true],
      ["merkle", true],
      ["anchor", true],
    ]);
    expect(result.score).to.include({ agentId: fixture.agent, day: fixture.day, api: fixture.server.url, leafVersion: 2 });
    expect(result.score!.sha256).to.match(/^[0-9a-f]{64}$/);
    expect(result.anchor).to.include({
      contract: fixture.registry,
      chainId: 31337,
      role: "anchorer",
      submitter: fixture.chain.accounts[1].address,
      leafCount: 3,
    });
    const receipt = await fixture.chain.publicClient.getTransactionReceipt({ hash: result.anchor!.txHash });
    expect(Number(receipt.blockNumber)).to.equal(result.anchor!.blockNumber);
  });

  it("finds the agent's latest daily score without a day", async () => {
    const result = await verifyScore({ api: `${fixture.server.url}/`, agentId: fixture.agent, rpcUrl: fixture.rpc.url });
    expect(result.verified).to.equal(true);
    expect(result.score?.day).to.equal(fixture.day);
  });

  it("reports a lookup that finds no daily score as a failed check, not an exception", async () => {
    const result = await verifyScore({ api: fixture.server.url, agentId: fixture.agent, day: "2026-11-20", rpcUrl: fixture.rpc.url });
    expect(result).to.deep.equal({
      verified: false,
      checks: [{ step: "lookup", ok: false, message: `no daily score of agent ${fixture.agent} on 2026-11-20` }],
    });
  });

  it("says, where no daily score exists yet, when the first comes (issue #31): a day before the claim's first, an agent claimed today", async () => {
    const before = await verifyScore({ api: fixture.server.url, agentId: fixture.agent, day: "2026-11-01", rpcUrl: fixture.rpc.url });
    expect(before.checks).to.deep.equal([
      {
        step: "lookup",
        ok: false,
        message:
          `no daily score of agent ${fixture.agent} on 2026-11-01: ` +
          "2026-11-01 is before its first daily score, of 2026-11-03 (computed at 2026-11-03T00:00:00Z)",
      },
    ]);
    // The fixture's clock is at 2026-11-03 10:01: an agent claimed now gets its first daily score at the next 00:00 UTC.
    const owner = (await (
      await fetch(`${fixture.server.url}/v1/owners`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    ).json()) as { token: string };
    const claimed = (await (
      await fetch(`${fixture.server.url}/v1/agents`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${owner.token}` },
        body: "{}",
      })
    ).json()) as { agentId: string };
    const fresh = await verifyScore({ api: fixture.server.url, agentId: claimed.agentId, rpcUrl: fixture.rpc.url });
    expect(fresh).to.deep.equal({
      verified: false,
      checks: [
        {
          step: "lookup",
          ok: false,
          message:
            `no daily score of agent ${claimed.agentId} yet: its first is computed at 2026-11-04T00:00:00Z ` +
            "(the first 00:00 UTC after its claim) and anchored on chain after it; verify then",
        },
      ],
    });
  });

  it("reports a chain it cannot reach by viem's shortMessage, on one line", async () => {
    const rpcUrl = "http://127.0.0.1:1";
    const result = await verifyScore({ api: fixture.server.url, agentId: fixture.agent, day: fixture.day, rpcUrl });
    expect(result.verified).to.equal(false);
    expect(result.checks[result.checks.length - 1]).to.deep.equal({
      step: "anchor",
      ok: false,
      message: `chain RPC unreachable at ${rpcUrl}: HTTP request failed.`,
    });
  });

  it("refuses options that are not an agent id, day, URL or address before fetching anything", async () => {
    const fetched: string[] = [];
    const base: VerifyScoreOptions = {
      api: fixture.server.url,
      agentId: fixture.agent,
      rpcUrl: fixture.rpc.url,
      fetch: async (url) => {
        fetched.push(String(url));
        return fetch(url);
      },
    };
    const bad: Array<[Partial<VerifyScoreOptions>, RegExp]> = [
      [{ agentId: "agt 1" }, /^not an agent id: "agt 1"$/],
      [{ day: "3 Nov" }, /^day: expected YYYY-MM-DD, got 3 Nov$/],
      [{ api: "ftp://x" }, /^api: expected an http\(s\) URL/],
      [{ rpcUrl: "nope" }, /^rpcUrl: expected an http\(s\) URL/],
      [{ contract: "0x12" }, /^not an address: 0x12$/],
    ];
    for (const [change, message] of bad) {
      const error = await verifyScore({ ...base, ...change }).then(
        () => null,
        (e: Error & { code?: string }) => e,
      );
      expect(error?.message, JSON.stringify(change)).to.match(message);
      expect(error?.code).to.equal("invalid_verify_options");
    }
    expect(fetched).to.deep.equal([]);
  });
});

describe("SDK verifyScore of a day anchored before leaves carried the score (version 1, kind vrai-score-day)", () => {
  let fixture: AnchoredScore;
  before(async () => {
    fixture = await startAnchoredScore({ leafVersion: 1 });
  });
  after(() => fixture?.close());

  it("verifies it as it always did: the leaf [agent, day, method, sha256], the proof and the root's anchor of that kind", async () => {
    const proof = (await (await fetch(`${fixture.server.url}/v1/agents/${fixture.agent}/score/proof`)).json()) as {
      leafVersion: number;
      kindName: string;
      leafValues: unknown[];
    };
    expect(proof).to.deep.include({ leafVersion: 1, kindName: "vrai-score-day" });
    expect(proof.leafValues).to.have.length(4);
    const result = await verifyScore({ api: fixture.server.url, agentId: fixture.agent, day: fixture.day, rpcUrl: fixture.rpc.url });
    expect(result.checks.map((c) => [c.step, c.ok])).to.deep.equal([
      ["inputs", true],
      ["score", true],
      ["digest", true],
      ["merkle", true],
      ["anchor", true],
    ]);
    expect(result.score).to.include({ leafVersion: 1 });
    expect(result.verified).to.equal(true);
  });
});
