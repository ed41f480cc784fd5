/**
 * An HTTP listener with bounded connections (issue #15, finding 3): short header and request
 * timeouts, bounded keep-alive, a cap on connections in total and per client address. The API and
 * the separate metrics listener both start through here.
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { RequestListener } from "node:http";

/** The limits of a listener. */
export type ServerLimits = {
  /** A client must have sent a request's headers within this (slow-header clients are cut off). */
  headersTimeoutMs: number;
  /** A client must have sent a whole request within this. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** A keep-alive connection is closed after this many requests. */
  maxRequestsPerSocket: number;
  /** Connections open at once; more are closed as they arrive (kept under the process's descriptor limit). */
  maxConnections: number;
  /** Connections open at once from one address (the socket's, not X-Forwarded-For: a proxy in front needs a cap to match). */
  maxConnectionsPerAddress: number;
};

/** Node's own defaults are 60 s for headers and 300 s per request, and no cap on connections. */
export const DEFAULT_SERVER_LIMITS: Readonly<ServerLimits> = Object.freeze({
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxRequestsPerSocket: 1_000,
  maxConnections: 800,
  maxConnectionsPerAddress: 64,
});

/** Timeouts are checked this often at most (Node's default, 30 s, would let a slow client stay that much longer). */
const MAX_CHECK_INTERVAL_MS = 1_000;

export type Listener = {
  /** `http://host:port`. */
  url: string;
  server: http.Server;
  /** Stops taking connections, closes idle ones and resolves once every open request is answered. */
  close(): Promise<void>;
};

/** A handler that gives requests and responses prototypes of its own, as an Express app does (`app.request`, `app.response`). */
export type PrototypedHandler = RequestListener & { request: http.IncomingMessage; response: http.ServerResponse };

/**
 * Request and response constructors whose instances are made with `handler`'s prototypes, so that its
 * own `Object.setPrototypeOf` on each request (Express's `app.handle` does it) finds them in place and
 * changes nothing. Changing the prototype of every request and response made V8 keep them, and what
 * they reach, through two young-generation collections: about 3 MB promoted per scavenge at 2,000
 * requests/s, each scavenge 9 ms instead of 1.5 ms (an Express app answering a constant body), and
 * the API's GET latency tail was those pauses. Node takes the constructors as `createServer` options.
 * They call Node's (plain functions in Node 20) on the new object: `Reflect.construct` with another
 * `new.target` cost the same promotions again (16 MB allocated and 0.9 MB promoted per scavenge,
 * against 6.6 MB and 4 kB). Null where Node's are classes, which cannot be called so.
 */
function messageClasses(handler: PrototypedHandler): Pick<http.ServerOptions, "IncomingMessage" | "ServerResponse"> | null {
  const isClass = (f: unknown) => /^class\b/.test(Function.prototype.toString.call(f));
  if (isClass(http.IncomingMessage) || isClass(http.ServerResponse)) return null;
  const IncomingMessage = http.IncomingMessage as unknown as (this: http.IncomingMessage, socket: Socket) => void;
  const ServerResponse = http.ServerResponse as unknown as (this: http.ServerResponse, req: http.IncomingMessage, options?: object) => void;
  function Request(this: http.IncomingMessage, socket: Socket): void {
    IncomingMessage.call(this, socket);
  }
  Request.prototype = handler.request;
  function Response(this: http.ServerResponse, req: http.IncomingMessage, options?: object): void {
    ServerResponse.call(this, req, options);
  }
  Response.prototype = handler.response;
  return { IncomingMessage: Request as unknown as typeof http.IncomingMessage, ServerResponse: Response as unknown as typeof http.ServerResponse };
}

const isPrototyped = (handler: RequestListener): handler is PrototypedHandler =>
  (handler as Partial<PrototypedHandler>).request instanceof http.IncomingMessage && (handler as Partial<PrototypedHandler>).response instanceof http.ServerResponse;

/** Serves `handler` on `host:port` (0: any free port) within `limits`; an Express app's requests are made with its prototypes (`messageClasses`). */
export async function listen(handler: RequestListener, options: { host: string; port: number; limits: ServerLimits }): Promise<Listener> {
  const { limits } = options;
  const server = http.createServer({
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(MAX_CHECK_INTERVAL_MS, limits.headersTimeoutMs),
    ...(isPrototyped(handler) ? messageClasses(handler) : null),
  }, handler);
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
  server.maxConnections = limits.maxConnections;
  capConnectionsPerAddress(server, limits.maxConnectionsPerAddress);
  server.on("clientError", answerClientError);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? (address satisfies AddressInfo).port : 0;
  return {
    url: `http://${options.host.includes(":") ? `[${options.host}]` : options.host}:${port}`,
    server,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    }),
  };
}

/** What Node's HTTP parser refuses before the app sees a request, as the API's error shape. */
const CLIENT_ERRORS: Readonly<Record<string, { status: number; code: string; message: string }>> = {
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: "request_timeout", message: "the request was not received in time" },
  HPE_HEADER_OVERFLOW: { status: 431, code: "headers_too_large", message: "the request's headers are too large" },
};
const MALFORMED = { status: 400, code: "malformed_request", message: "the request is not valid HTTP/1.1 (a header with NUL or a control character, or a malformed request line)" };

/**
 * Answers a request Node's parser refused (a header value with NUL, a malformed line, headers too
 * large or too slow) with the JSON error shape instead of Node's bare status line, then closes.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable) return void socket.destroy();
  const { status, code, message } = CLIENT_ERRORS[error.code ?? ""] ?? MALFORMED;
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** Closes a connection that would be more than `cap` open from its address. */
function capConnectionsPerAddress(server: http.Server, cap: number): void {
  const open = new Map<string, number>();
  server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress ?? "";
    const count = open.get(address) ?? 0;
    if (count >= cap) {
      socket.destroy();
      return;
    }
    open.set(address, count + 1);
    socket.once("close", () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
