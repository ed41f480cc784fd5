/**
 * For the agent side's tests (the SDK's check-ins, `vrai-heartbeat`): a loopback proxy in front of the API
 * that records each request's Idempotency-Key and misbehaves on the first requests as told, a new claimed
 * agent, and a sleep that moves the service's clock instead of waiting.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Clock } from "../service/clock";

/** An owner and an agent claimed through the API: the agent's id and its key. */
export async function claimAgent(api: string): Promise<{ agentId: string; agentKey: string }> {
  const owner = (await (
    await fetch(`${api}/v1/owners`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
  ).json()) as { token: string };
  const res = await fetch(`${api}/v1/agents`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${owner.token}` },
    body: "{}",
  });
  return (await res.json()) as { agentId: string; agentKey: string };
}

/** A `Sleep` that records what it was asked and moves `clock` (whole seconds, rounded up) instead of waiting. */
export function simulatedSleep(clock: Clock & { set(t: number): void }): {
  waits: number[];
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
} {
  const waits: number[] = [];
  const sleep = async (ms: number, signal?: AbortSignal) => {
    if (signal?.aborted) throw signal.reason;
    waits.push(ms);
    // Let the test act (e.g. stop()) before the wait is over, as it could during a real wait.
    await new Promise((resolve) => setImmediate(resolve));
    if (signal?.aborted) throw signal.reason;
    clock.set(clock.now() + Math.ceil(ms / 1000));
  };
  return { waits, sleep };
}

/** `drop`: forwards the request, then closes the client's connection instead of answering; `503`: answers 503 without forwarding. */
export type ProxyFault = "drop" | "503";

export type CheckinProxy = { url: string; keys: string[]; close(): Promise<void> };

/** Starts the proxy on 127.0.0.1; the i-th request meets `faults[i]`, requests past the list are forwarded as they are. */
export async function startCheckinProxy(upstream: string, faults: readonly ProxyFault[] = []): Promise<CheckinProxy> {
  const keys: string[] = [];
  const server = http.createServer(async (req, res) => {
    const fault = faults[keys.length];
    keys.push(String(req.headers["idempotency-key"]));
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (fault === "503") {
      res.writeHead(503, { "content-type": "text/html" }).end("<h1>503 Service Unavailable</h1>");
      return;
    }
    const headers: Record<string, string> = {};
    for (const name of ["authorization", "idempotency-key", "content-type"])
      if (req.headers[name]) headers[name] = String(req.headers[name]);
    const answer = await fetch(upstream + req.url, {
      method: req.method,
      headers,
      body: req.method === "GET" ? undefined : Buffer.concat(chunks),
    });
    const body = await answer.text();
    if (fault === "drop") {
      req.socket.destroy();
      return;
    }
    const out: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      out[name] = value;
    });
    delete out["content-length"];
    delete out["transfer-encoding"];
    res.writeHead(answer.status, out).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    keys,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
