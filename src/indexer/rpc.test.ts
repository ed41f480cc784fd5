import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { RpcRangeError, RpcTransportError } from "./errors";
import { createChainRpc } from "./rpc";

type JsonRpcCall = { id: number; method: string };
type Answer = { status: number } | { result: unknown } | { error: { code: number; message: string } };

/** A JSON-RPC endpoint whose `answer` decides each call's reply: an HTTP status, a result or a JSON-RPC error. */
async function startNode(answer: (call: JsonRpcCall, index: number) => Answer) {
  const calls: JsonRpcCall[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(Buffer.from(chunk));
    const body: JsonRpcCall | JsonRpcCall[] = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    const batch = Array.isArray(body) ? body : [body];
    const replies = batch.map((call) => {
      calls.push(call);
      return { call, reply: answer(call, calls.length - 1) };
    });
    const failed = replies.find(({ reply }) => "status" in reply);
    if (failed && "status" in failed.reply) {
      res.writeHead(failed.reply.status).end("unavailable");
      return;
    }
    const out = replies.map(({ call, reply }) => ({ jsonrpc: "2.0", id: call.id, ...reply }));
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(Array.isArray(body) ? out : out[0]));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("createChainRpc retries", () => {
  const retry = { tries: 4, baseMs: 10, maxMs: 25 };
  const recordingSleep = () => {
    const waits: number[] = [];
    return { waits, sleep: async (ms: number) => void waits.push(ms) };
  };

  it("retries a transport failure with a doubling, capped backoff, then returns the answer", async () => {
    const node = await startNode((_call, index) => (index < 3 ? { status: 503 } : { result: "0x10" }));
    try {
      const { waits, sleep } = recordingSleep();
      expect(await createChainRpc({ url: node.url, retry, sleep }).blockNumber()).to.equal(16);
      expect(node.calls).to.have.length(4);
      expect(waits).to.deep.equal([10, 20, 25]);
    } finally {
      await node.close();
    }
  });

  it("throws the transport error after the last try", async () => {
    const node = await startNode(() => ({ status: 502 }));
    try {
      const { waits, sleep } = recordingSleep();
      const error = await createChainRpc({ url: node.url, retry, sleep })
        .chainId()
        .catch((e: unknown) => e);
      expect(error)
        .to.be.instanceOf(RpcTransportError)
        .with.property("message")
        .that.matches(/^eth_chainId: /);
      expect(node.calls).to.have.length(4);
      expect(waits).to.deep.equal([10, 20, 25]);
    } finally {
      await node.close();
    }
  });

  it("throws a log query too large for the node at once, as a range error, without retrying", async () => {
    const node = await startNode(() => ({ error: { code: -32005, message: "query returned more than 10000 results" } }));
    try {
      const { waits, sleep } = recordingSleep();
      const error = await createChainRpc({ url: node.url, retry, sleep })
        .getLogs({ fromBlock: 0, toBlock: 99, addresses: [], topic0s: [] })
        .catch((e: unknown) => e);
      expect(error)
        .to.be.instanceOf(RpcRangeError)
        .with.property("message")
        .that.matches(/^eth_getLogs 0-99: /);
      expect(node.calls).to.have.length(1);
      expect(waits).to.deep.equal([]);
    } finally {
      await node.close();
    }
  });
});
