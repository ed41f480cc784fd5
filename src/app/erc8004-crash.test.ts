/**
 * Vrai's ERC-8004 feedback across a real crash (issue #27): `vrai serve` gives the feedback of an anchored day from the
 * publisher's key and is SIGKILLed in the middle of a send, by a JSON-RPC proxy between it and the chain that sees the
 * giveFeedback transaction go by: once right after the chain took it (between send and record), once before (between
 * the transaction stored and its broadcast). Started again, it leaves exactly one feedback of each.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { encodeFunctionData, parseTransaction, slice, type Hex } from "viem";
import { reputationRegistryAbi } from "../chain/abi/reputationRegistry";
import { newFeedbackLogs } from "../chain/reputation-registry";
import { createErc8004FeedbackRepository } from "../store/erc8004-feedback";
import { ACCOUNTS, OPERATOR_TOKEN, startFeedbackSystem, type FeedbackSystem } from "../test-helpers/erc8004-feedback";
import { spawnServe, type ServeChild } from "../test-helpers/serve";

/** The 4-byte selector of giveFeedback. */
const GIVE_FEEDBACK = slice(
  encodeFunctionData({
    abi: reputationRegistryAbi,
    functionName: "giveFeedback",
    args: [0n, 0n, 0, "", "", "", "", `0x${"00".repeat(32)}`],
  }),
  0,
  4,
);

/** When the proxy kills the child: after the chain took the first giveFeedback, or before it reaches the chain. */
type KillAt = "after-send" | "before-send" | "never";

/** A JSON-RPC proxy in front of `upstream` that SIGKILLs `victim()` at the first giveFeedback broadcast, as `killAt` says. */
async function startKillingProxy(upstream: string) {
  let killAt: KillAt = "never";
  let victim: ServeChild | undefined;
  let killed: (() => void) | undefined;
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    const calls: Array<{ method: string; params?: unknown[] }> = [JSON.parse(body)].flat();
    const giving = calls.some(
      (c) => c.method === "eth_sendRawTransaction" && parseTransaction(c.params?.[0] as Hex).data?.startsWith(GIVE_FEEDBACK) === true,
    );
    const kill = giving && killAt !== "never" && victim !== undefined ? victim : undefined;
    if (kill && killAt === "before-send") {
      killAt = "never";
      await kill.kill("SIGKILL");
      killed?.();
      res.destroy();
      return;
    }
    const answer = await fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body });
    const text = await answer.text();
    if (kill) {
      killAt = "never";
      await kill.kill("SIGKILL");
      killed?.();
      res.destroy();
      return;
    }
    res.writeHead(answer.status, { "content-type": "application/json" }).end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Arms the proxy against `child`; resolves once it has killed it. */
    arm(at: KillAt, child: ServeChild): Promise<void> {
      killAt = at;
      victim = child;
      return new Promise((resolve) => {
        killed = resolve;
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("ERC-8004 feedback, vrai serve SIGKILLed in the middle of a send (PostgreSQL, the reference registries)", function () {
  this.timeout(180_000);
  let sys: FeedbackSystem;
  let proxy: Awaited<ReturnType<typeof startKillingProxy>>;
  let env: Record<string, string>;

  before(async () => {
    // This process anchors the days (no publisher); the `vrai serve` children give the feedback.
    sys = await startFeedbackSystem({ publisher: false });
    proxy = await startKillingProxy(sys.rpc.url);
    env = {
      DATABASE_URL: sys.testDb.url!,
      PORT: "0",
      OPERATOR_TOKEN,
      LOG_LEVEL: "info",
      SCHEDULE_INTERVAL_MS: "1000",
      REPUTATION_REGISTRY: sys.target.registry,
      REPUTATION_RPC_URL: proxy.url,
      REPUTATION_PRIVATE_KEY: sys.keyOf(ACCOUNTS.publisher),
      PUBLIC_URL: "https://vrai.example",
    };
    expect((await sys.api("PUT", `/v1/agents/${sys.agent.agentId}/erc8004-publishing`, sys.ownerToken, { enabled: true })).status).to.equal(
      200,
    );
  });
  after(async () => {
    await proxy?.close();
    await sys?.close();
  });

  const outbox = () => createErc8004FeedbackRepository(sys.testDb.db);
  const logs = () => newFeedbackLogs(sys.chain.publicClient, sys.target.registry, { agentId: 0n, client: sys.publisher });
  const nonce = () => sys.chain.publicClient.getTransactionCount({ address: sys.publisher, blockTag: "pending" });

  /** Runs `vrai serve` until its feedback of `day` is given; resolves with it stopped. */
  async function serveUntilGiven(day: string): Promise<void> {
    const serve = spawnServe(env);
    try {
      await serve.ready;
      for (let i = 0; i < 600; i++) {
        const rows = (await outbox().ofAgent(sys.agent.agentId, 10)).filter((f) => f.day === day);
        if (rows.length === 2 && rows.every((f) => f.state === "given")) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`the feedback of ${day} was not given in 60 s:\n${serve.output()}`);
    } finally {
      await serve.kill("SIGTERM");
    }
  }

  it("killed between a send and its record: started again, it records that feedback and gives it no second time (two vrai serve starts: 5-11 s)", async () => {
    const day = await sys.day();
    const start = await nonce();
    const first = spawnServe(env);
    await proxy.arm("after-send", first);
    await first.exited;
    const [sent] = await logs();
    expect(await logs()).to.have.length(1);
    const stored = (await outbox().ofAgent(sys.agent.agentId, 10)).find((f) => f.fileHash === sent.feedbackHash);
    expect(stored).to.deep.include({ state: "planned", day });
    expect(stored?.giveTxHash).to.equal(sent.txHash);

    await serveUntilGiven(day);
    const given = await logs();
    expect(given.map((l) => l.feedbackHash)).to.have.members((await outbox().ofAgent(sys.agent.agentId, 10)).map((f) => f.fileHash));
    expect(given).to.have.length(2);
    expect(given[0]).to.deep.include({ txHash: sent.txHash, feedbackIndex: 1n });
    expect(await nonce()).to.equal(start + 2);
    const score = (await sys.api("GET", `/v1/agents/${sys.agent.agentId}/scores`)).json.scores.at(-1);
    expect(await sys.summary("vraiScore")).to.deep.equal({ count: 1n, value: BigInt(score.total), decimals: 0 });
  });

  it("killed between storing a transaction and broadcasting it: started again, it sends that transaction, once (two vrai serve starts: 5-15 s)", async () => {
    const day = await sys.day();
    const before = (await logs()).length;
    const first = spawnServe(env);
    await proxy.arm("before-send", first);
    await first.exited;
    const stored = (await outbox().ofAgent(sys.agent.agentId, 10)).find((f) => f.day === day && f.giveTxHash !== null);
    expect(stored?.state).to.equal("planned");
    expect(await logs()).to.have.length(before);

    await serveUntilGiven(day);
    const given = (await logs()).slice(before);
    expect(given).to.have.length(2);
    expect(given.map((l) => l.txHash)).to.include(stored?.giveTxHash);
    const rows = (await outbox().ofAgent(sys.agent.agentId, 10)).filter((f) => f.day === day);
    expect(given.map((l) => l.feedbackHash)).to.have.members(rows.map((f) => f.fileHash));
    // The day before's feedback was revoked first: Vrai's summary is the new day's alone.
    const score = (await sys.api("GET", `/v1/agents/${sys.agent.agentId}/scores`)).json.scores.at(-1);
    expect(score.day).to.equal(day);
    expect(await sys.summary("vraiScore")).to.deep.equal({ count: 1n, value: BigInt(score.total), decimals: 0 });
    expect((await sys.summary("uptime")).count).to.equal(1n);
  });
});
