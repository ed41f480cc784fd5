/**
 * An HTTP listener whose connections cannot be hoarded (issues #15 and #33): a new connection must
 * send its first byte within seconds, headers and requests have short timeouts, keep-alive is
 * bounded, connections are capped per client (an IPv4 address, an IPv6 /64) and in total, and at
 * the total cap a connection waiting for its client (idle, still sending its headers or its body, or
 * not reading its answer) makes room for a new one. The API and the separate
 * metrics listener both start through here.
 */
import http from "node:http";
import net, { type AddressInfo, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { RequestListener } from "node:http";
import { addressKey } from "../api/express";
import { BaseError } from "../errors";

/** The limits of a listener. */
export type ServerLimits = {
  /** A new connection must have sent its first byte within this, or it is closed. */
  firstByteTimeoutMs: number;
  /** A client must have sent a request's headers within this (slow-header clients are cut off). */
  headersTimeoutMs: number;
  /** A client must have sent a whole request within this. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** A keep-alive connection is closed after this many requests. */
  maxRequestsPerSocket: number;
  /**
   * Connections open at once (kept under the process's descriptor limit). At the cap, a new one
   * closes the connection waiting the longest for its client (one that has sent no whole request yet:
   * nothing, part of its headers or part of its body; or is between two requests), else one whose
   * client does not read its answer; when every connection has a request that has arrived and is being
   * answered, the new one is closed instead.
   */
  maxConnections: number;
  /**
   * Connections open at once from one client: an IPv4 address, or an IPv6 /64 (the socket's address,
   * not X-Forwarded-For: a proxy in front needs a cap to match). More are closed as they arrive.
   */
  maxConnectionsPerAddress: number;
};

/** Node's own defaults are 60 s for headers and 300 s per request, and no cap on connections. */
export const DEFAULT_SERVER_LIMITS: Readonly<ServerLimits> = Object.freeze({
  firstByteTimeoutMs: 3_000,
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
  /** Connections open now, and how many of them are waiting for their client: sending a request, idle between two, or not reading an answer. */
  connections(): ConnectionCounts;
  /** Stops taking connections, closes idle ones and resolves once every open request is answered. */
  close(): Promise<void>;
};

/** A handler that gives requests and responses prototypes of its own, as an Express app does (`app.request`, `app.response`). */
export type PrototypedHandler = RequestListener & { request: http.IncomingMessage; response: http.ServerResponse };

/** `newMessageClasses` of `handler`, made once for each pair of prototypes (`classesOf`). */
function messageClasses(handler: PrototypedHandler): MessageClasses | null {
  const made = classesOf.get(handler.request);
  if (made !== undefined && made.response === handler.response) return made.classes;
  const classes = newMessageClasses(handler);
  if (classes !== null) classesOf.set(handler.request, { response: handler.response, classes });
  return classes;
}

type MessageClasses = Pick<http.ServerOptions, "IncomingMessage" | "ServerResponse">;

/**
 * The constructors made for each pair of prototypes: V8 gives the objects of each constructor shapes ("maps") of their
 * own, so two listeners of one app's prototypes (the API's and its warm-up's, src/app/warm-up.ts) share them, and the
 * code the warm-up optimised for its requests' shapes is the code the API's requests run (issue #30).
 */
const classesOf = new WeakMap<http.IncomingMessage, { response: http.ServerResponse; classes: MessageClasses }>();

/**
 * Request and response constructors whose instances are made with `handler`'s prototypes, so that its
 * own `Object.setPrototypeOf` on each request (Express's `app.handle` does it) finds them in place and
 * changes nothing. Changing the prototype of every request and response makes V8 keep them, and what
 * they reach, through two young-generation collections, whose longer pauses are the tail of the
 * API's GET latency. Node takes the constructors as `createServer` options. They call Node's (plain
 * functions in Node 20) on the new object: `Reflect.construct` with another `new.target` costs the
 * same promotions again. Null where Node's are classes, which cannot be called so.
 */
function newMessageClasses(handler: PrototypedHandler): MessageClasses | null {
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
  return {
    IncomingMessage: Request as unknown as typeof http.IncomingMessage,
    ServerResponse: Response as unknown as typeof http.ServerResponse,
  };
}

const isPrototyped = (handler: RequestListener): handler is PrototypedHandler =>
  (handler as Partial<PrototypedHandler>).request instanceof http.IncomingMessage &&
  (handler as Partial<PrototypedHandler>).response instanceof http.ServerResponse;

/** Why a listener could not start: its address is taken, not allowed, or not this machine's (`cause` has the system's error). */
export class ListenError extends BaseError {
  /** Which of the process's listeners it was (`listen`'s `which`): the API's, or the metrics'. */
  which = "api";
  constructor(
    readonly host: string,
    readonly port: number,
    readonly reason: "in_use" | "denied" | "not_here" | "other",
    cause: unknown,
  ) {
    const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
    const what = {
      in_use: "the port is in use",
      denied: "not allowed (a port under 1024 needs privileges)",
      not_here: "not an address of this machine",
      other: String((cause as Error).message),
    }[reason];
    super("listen_failed", `cannot listen on ${where}: ${what}`, { cause });
  }
}

const LISTEN_REASONS: Readonly<Record<string, ListenError["reason"]>> = {
  EADDRINUSE: "in_use",
  EACCES: "denied",
  EADDRNOTAVAIL: "not_here",
  ENOTFOUND: "not_here",
};

/** Binds `server` to `host:port`; a `ListenError` when it cannot. */
async function bind(server: net.Server, host: string, port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  }).catch((error: NodeJS.ErrnoException) => {
    throw new ListenError(host, port, LISTEN_REASONS[error.code ?? ""] ?? "other", error);
  });
}

/**
 * Throws the `ListenError` `listen` would throw for `host:port` now, binding it for a moment: for a
 * command that has slower work to do first (`vrai dev` starts a chain) and should fail before it.
 */
export async function checkCanListen(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = net.createServer();
  await bind(probe, host, port);
  await new Promise((resolve) => probe.close(resolve));
}

/**
 * Serves `handler` on `host:port` (0: any free port) within `limits`; an Express app's requests are
 * made with its prototypes (`messageClasses`). A `ListenError` when the address cannot be bound.
 */
export async function listen(
  handler: RequestListener,
  options: { host: string; port: number; limits: ServerLimits; which?: "api" | "metrics" },
): Promise<Listener> {
  const { limits } = options;
  const server = http.createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(MAX_CHECK_INTERVAL_MS, limits.headersTimeoutMs),
      ...(isPrototyped(handler) ? messageClasses(handler) : null),
    },
    handler,
  );
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
  const connections = guardConnections(server, limits);
  server.on("clientError", answerClientError);
  await bind(server, options.host, options.port).catch((error: unknown) => {
    if (error instanceof ListenError) error.which = options.which ?? "api";
    throw error;
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? (address satisfies AddressInfo).port : 0;
  return {
    url: `http://${options.host.includes(":") ? `[${options.host}]` : options.host}:${port}`,
    server,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
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
const MALFORMED = {
  status: 400,
  code: "malformed_request",
  message: "the request is not valid HTTP/1.1 (a header with NUL or a control character, or a malformed request line)",
};

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

/**
 * What the listener knows of an open connection: how many of its requests are in progress and, while
 * one's body is still arriving, that request.
 */
type Connection = { client: string; requests: number; firstByte: NodeJS.Timeout; receiving: http.IncomingMessage | null };

/** Open connections, and how many of them are waiting for their client (see `guardConnections`). */
export type ConnectionCounts = { open: number; waiting: number };

/** Whether a request has a body still to come after its headers (HTTP/1.1: a length above 0, or a chunked body). */
const hasBody = (req: http.IncomingMessage): boolean =>
  req.headers["transfer-encoding"] !== undefined || (req.headers["content-length"] !== undefined && req.headers["content-length"] !== "0");

/**
 * Admits connections within `limits` (see `ServerLimits`): per-client and total caps, a first-byte
 * deadline, and at the total cap a connection waiting for its client closed for the new one. A
 * connection waits for its client from the moment it opens, or its last answer leaves, until a
 * request of it has arrived whole: while it sends nothing, a byte, part of its headers or part of
 * its body; and while its client does not take the answer it is sent (the kernel's buffers full: a
 * client that does not read). Of the first kind, the one waiting the longest goes first, in the
 * order each began to wait, not by its last byte: a client trickling bytes could otherwise make its
 * connections look busier than a new client's. Only a connection whose request has arrived whole and
 * is being answered holds its place: its client keeps it only by sending whole requests, which the
 * rate limits count. Node's own `maxConnections` is not used: it refuses the new connection, where a
 * waiting one should go.
 * @returns the counts of open and waiting connections, now
 */
function guardConnections(server: http.Server, limits: ServerLimits): () => ConnectionCounts {
  const open = new Map<Socket, Connection>();
  const perClient = new Map<string, number>();
  // Insertion order is the order they began to wait: the first is the one waiting the longest.
  const waiting = new Set<Socket>();

  const release = (socket: Socket) => {
    const connection = open.get(socket);
    if (connection === undefined) return;
    open.delete(socket);
    waiting.delete(socket);
    clearTimeout(connection.firstByte);
    const left = (perClient.get(connection.client) ?? 1) - 1;
    if (left === 0) perClient.delete(connection.client);
    else perClient.set(connection.client, left);
  };

  // A request whose body has all arrived (Node's parser sets `complete`, read or not) is being answered
  // from then on: its connection stops waiting. Checked here rather than on each request's "end", which
  // fires only once the handler has read the body.
  const arrived = (socket: Socket): boolean => {
    const connection = open.get(socket);
    if (connection?.receiving?.complete !== true) return false;
    connection.receiving = null;
    waiting.delete(socket);
    return true;
  };
  // Bytes of an answer the kernel has not taken: its client is not reading (a fast one empties the buffers as they fill).
  const notReading = (socket: Socket): boolean => socket.writableLength > 0;

  /** The connection to close for a new one: the one waiting the longest for its client to send, else one whose client does not read. */
  const toClose = (): Socket | undefined => {
    for (const socket of waiting) if (!arrived(socket)) return socket;
    for (const socket of open.keys()) if (notReading(socket)) return socket;
    return undefined;
  };

  server.on("connection", (socket: Socket) => {
    const client = addressKey(socket.remoteAddress ?? "");
    const fromClient = perClient.get(client) ?? 0;
    if (fromClient >= limits.maxConnectionsPerAddress) return void socket.destroy();
    if (open.size >= limits.maxConnections) {
      const closing = toClose();
      if (closing === undefined) return void socket.destroy();
      release(closing);
      closing.destroy();
    }
    const firstByte = setTimeout(() => {
      if (socket.bytesRead === 0) socket.destroy();
    }, limits.firstByteTimeoutMs);
    firstByte.unref();
    open.set(socket, { client, requests: 0, firstByte, receiving: null });
    perClient.set(client, fromClient + 1);
    waiting.add(socket);
    socket.once("close", () => release(socket));
  });

  server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    const connection = open.get(socket);
    if (connection === undefined) return;
    connection.requests++;
    waiting.delete(socket);
    if (hasBody(req)) {
      // Its body is still to come: waiting for the client again, from now.
      connection.receiving = req;
      waiting.add(socket);
    }
    res.once("close", () => {
      connection.requests--;
      if (connection.requests > 0 || !open.has(socket) || socket.destroyed) return;
      // Answered: waiting for the client's next request (or the rest of a body the handler did not read),
      // the newest of the waiting unless it was waiting already.
      connection.receiving = null;
      waiting.add(socket);
    });
  });
  return () => {
    for (const socket of waiting) arrived(socket);
    let reading = 0;
    for (const socket of open.keys()) if (!waiting.has(socket) && notReading(socket)) reading++;
    return { open: open.size, waiting: waiting.size + reading };
  };
}
