/**
 * A real local HTTP server for tests (node:http on 127.0.0.1, a free port): routes answer with
 * canned or computed responses, unmatched paths answer 404, and every request is recorded (its body
 * read whole first) so a test can count retries and check what was sent.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

export type RecordedRequest = { method: string; path: string; headers: IncomingHttpHeaders; body: string };

export type TestHttpResponse = {
  /** Default 200. */
  status?: number;
  headers?: Record<string, string>;
  /** A string or Buffer is sent as is; anything else as JSON. */
  body?: unknown;
  /** Never answer (the client's timeout fires). */
  hang?: boolean;
  /** Answer after this many ms. */
  delay?: number;
};

/** A route answers with a fixed response or computes one per request (e.g. to fail the first tries). */
export type TestHttpRoute = TestHttpResponse | ((request: RecordedRequest) => TestHttpResponse);

export type TestHttpServer = {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  port: number;
  /** Sets (or replaces) the route of `method path` (path without query string). */
  route(method: string, path: string, route: TestHttpRoute): void;
  /** Every request received, oldest first. */
  requests: RecordedRequest[];
  /** Requests to `path` (any method). */
  requestsTo(path: string): RecordedRequest[];
  /** TCP connections accepted so far (whatever came over them: HTTP, a TLS hello, nothing). */
  connectionCount(): number;
  close(): Promise<void>;
};

/**
 * Starts a test HTTP server.
 * @example
 * const server = await startHttpServer();
 * server.route('GET', '/gists/abc', { body: { id: 'abc', public: true } });
 * after(() => server.close());
 */
export async function startHttpServer(): Promise<TestHttpServer> {
  const routes = new Map<string, TestHttpRoute>();
  const requests: RecordedRequest[] = [];

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const sent = Buffer.concat(chunks).toString("utf8");
    const request: RecordedRequest = {
      method: req.method ?? "GET",
      path: (req.url ?? "/").split("?")[0],
      headers: req.headers,
      body: sent,
    };
    requests.push(request);
    const route = routes.get(`${request.method} ${request.path}`);
    const response = typeof route === "function" ? route(request) : (route ?? { status: 404, body: { message: "Not Found" } });
    if (response.hang) return;
    if (response.delay !== undefined) await new Promise((resolve) => setTimeout(resolve, response.delay));
    const body = response.body;
    const isRaw = typeof body === "string" || Buffer.isBuffer(body);
    const payload = body === undefined ? "" : isRaw ? body : JSON.stringify(body);
    res.writeHead(response.status ?? 200, {
      "content-type": isRaw ? "text/plain; charset=utf-8" : "application/json; charset=utf-8",
      ...response.headers,
    });
    res.end(payload);
  });

  let connections = 0;
  server.on("connection", () => void connections++);

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    route: (method, path, route) => void routes.set(`${method.toUpperCase()} ${path}`, route),
    requests,
    requestsTo: (path) => requests.filter((r) => r.path === path),
    connectionCount: () => connections,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
