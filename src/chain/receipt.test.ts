import { expect } from "chai";
import { createPublicClient, http, type Hex } from "viem";
import { startTestChain, type TestChain } from "../test-helpers/chain";
import { receiptWithin } from "./receipt";

describe("receiptWithin: a transaction's receipt, waited for until a timeout or a stop (in-process Hardhat chain)", () => {
  let chain: TestChain;
  /** The chain's client, counting the receipts asked for. */
  let asked = 0;
  let client: Pick<TestChain["publicClient"], "getTransactionReceipt">;

  before(async () => {
    chain = await startTestChain();
    client = {
      getTransactionReceipt: (args) => {
        asked++;
        return chain.publicClient.getTransactionReceipt(args);
      },
    };
  });
  after(() => chain.close());

  /** Sends a transfer of account 1 while blocks are mined only on demand: in the pool, not mined. */
  async function pending(): Promise<Hex> {
    await chain.publicClient.request({ method: "evm_setAutomine" as never, params: [false] as never });
    return chain.walletClients[1].sendTransaction({ to: chain.accounts[2].address, value: 1n });
  }
  afterEach(() => chain.publicClient.request({ method: "evm_setAutomine" as never, params: [true] as never }));

  it("answers a mined transaction's receipt at the first ask", async () => {
    const hash = await chain.walletClients[1].sendTransaction({ to: chain.accounts[2].address, value: 1n });
    asked = 0;
    const receipt = await receiptWithin(client, hash, { timeoutMs: 60_000, pollMs: 10 });
    expect(receipt).to.include({ transactionHash: hash, status: "success" });
    expect(asked).to.equal(1);
  });

  it("waits while the transaction is in the pool and answers its receipt once a block holds it", async () => {
    const hash = await pending();
    asked = 0;
    const waiting = receiptWithin(client, hash, { timeoutMs: 60_000, pollMs: 10 });
    while (asked < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    await chain.mine(1);
    expect(await waiting).to.include({ transactionHash: hash, status: "success" });
  });

  it("answers null once the timeout passes with the transaction still unmined", async () => {
    const hash = await pending();
    asked = 0;
    expect(await receiptWithin(client, hash, { timeoutMs: 500, pollMs: 20 })).to.equal(null);
    // At once, then again after each polling interval.
    expect(asked).to.be.at.least(2);
    expect((await chain.publicClient.getTransaction({ hash })).blockNumber).to.equal(null);
    await chain.mine(1);
  });

  it("answers null as soon as its signal aborts, and asks nothing more after it returned (nothing left polling)", async () => {
    const hash = await pending();
    const stopping = new AbortController();
    asked = 0;
    const waiting = receiptWithin(client, hash, { timeoutMs: 3_600_000, pollMs: 10, signal: stopping.signal });
    while (asked < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    stopping.abort();
    expect(await waiting).to.equal(null);
    const after = asked;
    // Ten polling intervals: a wait still running would have asked again by now.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(asked).to.equal(after);
    // An already aborted signal asks nothing.
    expect(await receiptWithin(client, hash, { timeoutMs: 60_000, signal: stopping.signal })).to.equal(null);
    expect(asked).to.equal(after);
    await chain.mine(1);
  });

  it("throws what is not a missing receipt: a node that cannot be reached", async () => {
    // A loopback port nothing listens on (1): the connection is refused at once.
    const unreachable = createPublicClient({ transport: http("http://127.0.0.1:1", { retryCount: 0 }) });
    const failure = await receiptWithin(unreachable, `0x${"ab".repeat(32)}`, { timeoutMs: 60_000, pollMs: 10 }).then(
      () => null,
      (error: Error) => error,
    );
    expect(failure?.name).to.equal("HttpRequestError");
  });
});
