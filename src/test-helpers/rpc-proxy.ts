/**
 * A JSON-RPC proxy on loopback between a `vrai serve` child and the test chain, to fail the chain as a test says
 * (issue #30): it forwards (`pass`), refuses connections (`refuse`: nothing listens on its port), answers 500
 * (`error500`), never answers (`hang`: a request is held until the proxy closes), or holds requests and forwards them
 * once the mode changes (`hold`: the chain paused while a test changes it). `afterForward` sees each forwarded call and its
 * answer, and may drop the answer (the client's connection closed) after, say, killing the client.
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

export type RpcProxyMode = "pass" | "refuse" | "error500" | "hang" | "hold";

/** One JSON-RPC call of a request (a batch has several). */
export type RpcCall = { method: string; params?: unknown[] };

export type RpcProxy = {
  url: string;
  /** Requests received in each mode so far (none in `refuse`: they never connect). */
  readonly received: Readonly<Record<RpcProxyMode, number>>;
  /** Switches the mode: `refuse` stops listening and closes every connection; leaving `hold` forwards what it held. */
  setMode(mode: RpcProxyMode): Promise<void>;
  /** Called once the chain answered forwarded calls: `"drop"` closes the client's connection instead of answering. */
  afterForward?: (calls: RpcCall[]) => Promise<"drop" | undefined>;
  close(): Promise<void>;
};

/**
 * Starts a proxy to `upstream` on a free loopback port, in mode `pass`.
 * @example const proxy = await startRpcProxy(rpc.url); await proxy.setMode("refuse");
 */
export async function startRpcProxy(upstream: string): Promise<RpcProxy> {
  let mode: RpcProxyMode = "pass";
  const received: Record<RpcProxyMode, number> = { pass: 0, refuse: 0, error500: 0, hang: 0, hold: 0 };
  const sockets = new Set<Socket>();
  let held: Array<() => void> = [];

  const forward = async (body: string, res: http.ServerResponse) => {
    const answer = await fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body });
    const text = await answer.text();
    const calls: RpcCall[] = [JSON.parse(body)].flat();
    if ((await proxy.afterForward?.(calls)) === "drop") {
      res.socket?.destroy();
      return;
    }
    res.writeHead(answer.status, { "content-type": "application/json" }).end(text);
  };

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    received[mode]++;
    if (mode === "error500") {
      res.writeHead(500, { "content-type": "text/plain" }).end("upstream unavailable");
      return;
    }
    if (mode === "hang") return;
    if (mode === "hold") await new Promise<void>((resolve) => held.push(resolve));
    await forward(body, res).catch(() => res.socket?.destroy());
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const stopListening = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  await listen(0);
  const port = (server.address() as AddressInfo).port;

  const proxy: RpcProxy = {
    url: `http://127.0.0.1:${port}`,
    received,
    async setMode(next) {
      const was = mode;
      mode = next;
      if (next === "refuse" && was !== "refuse") await stopListening();
      if (was === "refuse" && next !== "refuse") await listen(port);
      if (was === "hold" && next !== "hold") {
        for (const release of held) release();
        held = [];
      }
    },
    async close() {
      for (const release of held) release();
      held = [];
      if (mode !== "refuse") await stopListening();
    },
  };
  return proxy;
}
