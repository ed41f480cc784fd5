import { expect } from "chai";
import pino from "pino";
import { identityRegistryAbi } from "../chain/abi/identityRegistry";
import { createFeedbackWriter, newFeedbackLogs, type FeedbackWriter } from "../chain/reputation-registry";
import { createErc8004FeedbackRepository, type Erc8004FeedbackRepository } from "../store/erc8004-feedback";
import { ACCOUNTS, startFeedbackSystem, type FeedbackSystem } from "../test-helpers/erc8004-feedback";
import { createFeedbackPlanner } from "./erc8004-planning";
import { createFeedbackSender, type SendOutcome } from "./erc8004-sender";

const silent = pino({ level: "silent" });
/** The account that holds the tokens of these tests' agents (it is not the publisher). */
const HOLDER = 5;

/** A crash of the process at one point of a send, as the sender sees it: the send throws there. */
class Crash extends Error {}

describe("ERC-8004 feedback sends, exactly once across crashes (PostgreSQL, the reference registries, in-process chain)", () => {
  let sys: FeedbackSystem;
  let outbox: Erc8004FeedbackRepository;
  let writer: FeedbackWriter;
  let nextToken = 2n;

  before(async () => {
    // The server gives no feedback itself: each test runs the sender it means, as a process that starts again would.
    sys = await startFeedbackSystem({ publisher: false });
    outbox = createErc8004FeedbackRepository(sys.testDb.db);
    writer = createFeedbackWriter({ privateKey: sys.keyOf(ACCOUNTS.publisher), rpcUrl: sys.rpc.url, registry: sys.target.registry });
  });
  after(() => sys.close());

  const senderWith = (w: FeedbackWriter) => createFeedbackSender({ outbox, writer: w, clock: sys.clock, logger: silent });
  /**
   * The writer of a process killed right after its first send's transaction was stored, or right after it was broadcast:
   * that send throws there, and nothing is sent after it (the process is gone).
   */
  const crashing = (at: "stored" | "broadcast"): FeedbackWriter => {
    let dead = false;
    return {
      ...writer,
      signer: {
        ...writer.signer,
        async send(call, record) {
          if (dead) throw new Crash("the process is gone");
          dead = true;
          if (at === "stored")
            return writer.signer.send(call, async (tx) => {
              await record(tx);
              throw new Crash("killed after the transaction was stored");
            });
          await writer.signer.send(call, record);
          throw new Crash("killed after the transaction was broadcast");
        },
      },
    };
  };
  const nonce = () => sys.chain.publicClient.getTransactionCount({ address: writer.signer.address, blockTag: "pending" });

  /** A new agent proving a new token of account 5, publishing on, its day anchored and its two feedbacks planned. */
  async function plannedAgent(): Promise<{ agentId: string; tokenId: bigint }> {
    const tokenId = nextToken++;
    const hash = await sys.chain.walletClients[HOLDER].writeContract({
      address: sys.identityRegistry,
      abi: identityRegistryAbi,
      functionName: "register",
      args: [`ipfs://${tokenId}`],
    });
    await sys.chain.publicClient.waitForTransactionReceipt({ hash });
    const { agentId } = (await sys.api("POST", "/v1/agents", sys.ownerToken, {})).json;
    await sys.proveIdentity(agentId, tokenId, HOLDER);
    expect((await sys.api("PUT", `/v1/agents/${agentId}/erc8004-publishing`, sys.ownerToken, { enabled: true })).status).to.equal(200);
    await sys.day({ checkins: false });
    const planner = createFeedbackPlanner({
      outbox,
      store: sys.server.service.store,
      clock: sys.clock,
      target: sys.target,
      client: writer.signer.address,
      publicUrl: () => "https://vrai.example",
    });
    await planner.planLatest();
    expect((await outbox.ofAgent(agentId, 10)).map((f) => f.state)).to.deep.equal(["planned", "planned"]);
    return { agentId, tokenId };
  }
  /** The NewFeedback logs of the token by the publisher, by feedback hash. */
  const given = async (tokenId: bigint) => {
    const logs = await newFeedbackLogs(sys.chain.publicClient, sys.target.registry, { agentId: tokenId, client: writer.signer.address });
    return logs.map((l) => l.feedbackHash);
  };
  const rows = (agentId: string) => outbox.ofAgent(agentId, 10);

  it("after a crash between storing a transaction and broadcasting it, sends that very transaction once the process is back", async () => {
    const { agentId, tokenId } = await plannedAgent();
    const start = await nonce();
    const crashed = await senderWith(crashing("stored")).sendDue();
    expect(crashed.map((o) => o.type)).to.deep.equal(["failed", "failed"]);
    const [stored] = (await rows(agentId)).filter((f) => f.giveTxHash !== null);
    expect(stored.state).to.equal("planned");
    expect(await nonce()).to.equal(start);
    expect(await given(tokenId)).to.deep.equal([]);

    sys.clock.set(sys.clock.now() + 5);
    const resumed = await senderWith(writer).sendDue();
    expect(resumed.map((o) => o.type)).to.deep.equal(["given", "given"]);
    const after = await rows(agentId);
    // The stored transaction itself was mined: rebroadcast as it was, not signed anew.
    expect(after.find((f) => f.id === stored.id)?.givenTxHash).to.equal(stored.giveTxHash);
    expect((await given(tokenId)).sort()).to.deep.equal(after.map((f) => f.fileHash).sort());
    expect(await nonce()).to.equal(start + 2);
  });

  it("after a crash between a send and its record, records the feedback the registry shows and sends nothing again", async () => {
    const { agentId, tokenId } = await plannedAgent();
    const start = await nonce();
    const crashed = await senderWith(crashing("broadcast")).sendDue();
    expect(crashed.map((o) => o.type)).to.deep.equal(["failed", "failed"]);
    const [sent] = await given(tokenId);
    expect(await given(tokenId)).to.have.length(1);
    expect((await rows(agentId)).map((f) => f.state)).to.deep.equal(["planned", "planned"]);

    sys.clock.set(sys.clock.now() + 5);
    const resumed = await senderWith(writer).sendDue();
    const recorded = (await rows(agentId)).find((f) => f.fileHash === sent);
    expect(resumed.map((o) => (o.type === "given" ? [o.id, o.sent] : [o.type]))).to.have.deep.members([
      [recorded?.id, false],
      [(await rows(agentId)).find((f) => f.fileHash !== sent)?.id, true],
    ]);
    expect(await nonce()).to.equal(start + 2);
    expect(await given(tokenId)).to.have.length(2);
    expect((await rows(agentId)).map((f) => f.state)).to.deep.equal(["given", "given"]);
    expect((await sys.summary("vraiScore", tokenId)).count).to.equal(1n);
  });

  it("sends anew, once, a stored transaction whose nonce another transaction of the publisher took", async () => {
    const { agentId, tokenId } = await plannedAgent();
    await senderWith(crashing("stored")).sendDue();
    const [stored] = (await rows(agentId)).filter((f) => f.giveTxHash !== null);
    // Another writer of the publisher's key (anchoring, say) takes the nonce the stored transaction was signed at.
    const hash = await sys.chain.walletClients[ACCOUNTS.publisher].sendTransaction({ to: sys.chain.accounts[0].address, value: 0n });
    await sys.chain.publicClient.waitForTransactionReceipt({ hash });
    sys.clock.set(sys.clock.now() + 5);
    const resumed = await senderWith(writer).sendDue();
    expect(resumed.map((o) => (o.type === "given" ? [o.type, o.sent] : [o.type]))).to.deep.equal([
      ["given", true],
      ["given", true],
    ]);
    const after = await rows(agentId);
    expect(after.find((f) => f.id === stored.id)?.givenTxHash).not.to.equal(stored.giveTxHash);
    expect((await given(tokenId)).sort()).to.deep.equal(after.map((f) => f.fileHash).sort());
  });

  it("leaves a send waiting for its receipt at once when the service stops (its transaction stored), and the next pass records it given, once", async () => {
    const { agentId, tokenId } = await plannedAgent();
    const start = await nonce();
    await sys.chain.publicClient.request({ method: "evm_setAutomine" as never, params: [false] as never });
    let waited: SendOutcome[] = [];
    try {
      // A receipt wait far longer than the test's own timeout: the stop must end it.
      const sender = createFeedbackSender({ outbox, writer, clock: sys.clock, logger: silent, receiptTimeoutMs: 3_600_000 });
      const stopping = new AbortController();
      const pass = sender.sendDue(stopping.signal);
      // The first send's transaction is stored, then broadcast: in the node's pool, not mined.
      const inPool = async () => {
        const stored = (await rows(agentId)).find((f) => f.giveTxHash !== null);
        return stored?.giveTxHash
          ? (await sys.chain.publicClient.getTransaction({ hash: stored.giveTxHash }).catch(() => null)) !== null
          : false;
      };
      while (!(await inPool())) await new Promise((resolve) => setImmediate(resolve));
      stopping.abort();
      waited = await pass;
      // The pass ends after the step that was waiting: the second feedback is not stepped.
      expect(waited.map((o) => o.type)).to.deep.equal(["waiting"]);
      expect(await given(tokenId)).to.deep.equal([]);
      await sys.chain.mine(1);
    } finally {
      await sys.chain.publicClient.request({ method: "evm_setAutomine" as never, params: [true] as never });
    }
    const [first] = waited;
    if (first.type !== "waiting") throw new Error("unreachable");
    sys.clock.set(first.retryAt);
    const resumed = await senderWith(writer).sendDue();
    expect(resumed.map((o) => (o.type === "given" ? [o.id, o.sent] : [o.type]))).to.have.deep.members([
      [first.id, false],
      [(await rows(agentId)).find((f) => f.id !== first.id)?.id, true],
    ]);
    expect((await rows(agentId)).find((f) => f.id === first.id)?.givenTxHash).to.equal(first.txHash);
    expect(await given(tokenId)).to.have.length(2);
    expect(await nonce()).to.equal(start + 2);
  });

  it("retries a failed send with backoff (5 s, then 10 s), then sends it", async () => {
    const { agentId, tokenId } = await plannedAgent();
    const unreachable = createFeedbackWriter({
      privateKey: sys.keyOf(ACCOUNTS.publisher),
      rpcUrl: "http://127.0.0.1:9",
      registry: sys.target.registry,
    });
    const t0 = sys.clock.now();
    const first = await senderWith(unreachable).sendDue();
    expect(first.map((o) => (o.type === "failed" ? o.retryAt - t0 : o.type))).to.deep.equal([5, 5]);
    expect(await senderWith(unreachable).sendDue()).to.deep.equal([]);
    sys.clock.set(t0 + 5);
    const second = await senderWith(unreachable).sendDue();
    expect(second.map((o) => (o.type === "failed" ? o.retryAt - t0 : o.type))).to.deep.equal([15, 15]);
    const failing = await rows(agentId);
    expect(failing.map((f) => [f.attempts, f.state])).to.deep.equal([
      [2, "planned"],
      [2, "planned"],
    ]);
    expect(failing[0].lastError).to.match(/HTTP request failed|fetch failed|ECONNREFUSED/);
    sys.clock.set(t0 + 15);
    expect((await senderWith(writer).sendDue()).map((o) => o.type)).to.deep.equal(["given", "given"]);
    expect(await given(tokenId)).to.have.length(2);
    expect((await rows(agentId)).map((f) => [f.attempts, f.lastError])).to.deep.equal([
      [0, null],
      [0, null],
    ]);
  });

  it("drops, unsent, a feedback planned for another publisher than the one now configured", async () => {
    const { agentId } = await plannedAgent();
    const other = createFeedbackWriter({ privateKey: sys.keyOf(3), rpcUrl: sys.rpc.url, registry: sys.target.registry });
    const outcomes = await senderWith(other).sendDue();
    expect(outcomes.map((o) => o.type)).to.deep.equal(["dropped", "dropped"]);
    expect((await rows(agentId)).every((f) => f.state === "dropped" && f.droppedReason?.includes(other.signer.address))).to.equal(true);
  });
});
