import http from "node:http";
import net from "node:net";
import { expect } from "chai";
import express from "express";
import { DEFAULT_SERVER_LIMITS, listen, type Listener, type ServerLimits } from "./listener";

/** A raw loopback connection from `localAddress`, once connected. */
async function connect(listener: Listener, localAddress = "127.0.0.1"): Promise<net.Socket> {
  const { port } = new URL(listener.url);
  const socket = net.connect({ host: "127.0.0.1", port: Number(port), localAddress });
  socket.on("error", () => undefined);
  await new Promise((resolve) => socket.once("connect", resolve));
  return socket;
}

/** Everything the server sends on `socket` until it closes it, or null if it is still open after `waitMs`. */
function untilClosed(socket: net.Socket, waitMs: number): Promise<string | null> {
  let received = "";
  socket.on("data", (chunk) => (received += chunk.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), waitMs);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(received);
    });
  });
}

/** One GET on a fresh connection from `localAddress`: the status line, or null if the connection was closed without an answer. */
async function statusLine(listener: Listener, localAddress = "127.0.0.1"): Promise<string | null> {
  const socket = await connect(listener, localAddress);
  const answer = untilClosed(socket, 5_000);
  socket.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const text = await answer;
  socket.destroy();
  return text ? text.split("\r\n", 1)[0] : null;
}

describe("the HTTP listener's bounds (finding 3)", () => {
  let listener: Listener;
  const start = async (limits: Partial<ServerLimits>) => {
    listener = await listen((_req, res) => res.end("ok"), { host: "127.0.0.1", port: 0, limits: { ...DEFAULT_SERVER_LIMITS, ...limits } });
  };
  afterEach(async () => {
    listener.server.closeAllConnections();
    await listener.close();
  });

  it("defaults to headers within 10 s, a request within 30 s and bounded keep-alive", async () => {
    await start({});
    expect(listener.server.headersTimeout).to.equal(10_000);
    expect(listener.server.requestTimeout).to.equal(30_000);
    expect(listener.server.keepAliveTimeout).to.equal(5_000);
    expect(listener.server.maxRequestsPerSocket).to.equal(1_000);
    expect(DEFAULT_SERVER_LIMITS).to.include({ firstByteTimeoutMs: 3_000, maxConnections: 800, maxConnectionsPerAddress: 64 });
  });

  it("answers a request Node's parser refuses (NUL in a header, a malformed line) with the JSON error shape, and runs no handler (issue #15, finding 4)", async () => {
    let handled = 0;
    listener = await listen((_req, res) => {
      handled++;
      res.end("ok");
    }, { host: "127.0.0.1", port: 0, limits: DEFAULT_SERVER_LIMITS });
    for (const request of ["GET / HTTP/1.1\r\nHost: x\r\nIdempotency-Key: a\u0000b\r\n\r\n", "GET / HTTP/1.1 junk\r\n\r\n"]) {
      const socket = await connect(listener);
      const answer = untilClosed(socket, 5_000);
      socket.write(request);
      const text = (await answer) ?? "";
      const [head, body] = text.split("\r\n\r\n");
      expect(head).to.match(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(head).to.include("Content-Type: application/json").and.include("X-Content-Type-Options: nosniff");
      expect(JSON.parse(body)).to.have.nested.property("error.code", "malformed_request");
    }
    expect(handled).to.equal(0);
  });

  it("cuts off a client that never finishes its headers, or sends nothing, once the headers' timeout has passed", async () => {
    await start({ headersTimeoutMs: 300, requestTimeoutMs: 600 });
    const slow = await connect(listener);
    const idle = await connect(listener);
    const closed = [untilClosed(slow, 5_000), untilClosed(idle, 5_000)];
    slow.write("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    // Node answers 408 to a request whose headers timed out, then closes the connection.
    for (const answer of await Promise.all(closed)) expect(answer).to.match(/^HTTP\/1\.1 408 /);
    expect(await statusLine(listener)).to.equal("HTTP/1.1 200 OK");
  });

  it("closes connections beyond the cap of one address while another address is still answered", async () => {
    await start({ maxConnectionsPerAddress: 2 });
    const held = [await connect(listener), await connect(listener)];
    expect(await statusLine(listener)).to.equal(null);
    expect(await statusLine(listener, "127.0.0.2")).to.equal("HTTP/1.1 200 OK");
    held[0].destroy();
    await new Promise((resolve) => held[0].once("close", resolve));
    // The server sees the close a moment later; one more try then fits under the cap.
    let answer: string | null = null;
    for (let i = 0; i < 20 && answer === null; i++) answer = await statusLine(listener);
    expect(answer).to.equal("HTTP/1.1 200 OK");
    held[1].destroy();
  });

  it("closes a new connection that sends nothing within the first-byte time, one that has started its request is left to the headers' timeout (issue #33)", async () => {
    await start({ firstByteTimeoutMs: 200, headersTimeoutMs: 5_000, requestTimeoutMs: 6_000 });
    const silent = await connect(listener);
    const started = await connect(listener);
    started.write("GET / HTTP/1.1\r\n");
    const opened = Date.now();
    expect(await untilClosed(silent, 3_000)).to.equal("");
    expect(Date.now() - opened).to.be.within(100, 2_000);
    // The one that spoke is still open, and finishes its request.
    const answer = untilClosed(started, 3_000);
    started.end("Host: x\r\nConnection: close\r\n\r\n");
    expect(await answer).to.match(/^HTTP\/1\.1 200 /);
  });

  it("at the cap in total, closes the connection idle the longest to answer a new client (issue #33)", async () => {
    await start({ maxConnections: 3 });
    const first = await connect(listener, "127.0.0.3");
    const firstClosed = untilClosed(first, 5_000);
    const second = await connect(listener, "127.0.0.4");
    const secondClosed = untilClosed(second, 1_500);
    // Its request makes the second busy, then answered and idle again (kept alive): now the newest idle.
    second.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    await new Promise((resolve) => second.once("data", resolve));
    const third = await connect(listener, "127.0.0.5");
    expect(await statusLine(listener, "127.0.0.6")).to.equal("HTTP/1.1 200 OK");
    expect(await firstClosed).to.equal("");
    expect(await secondClosed).to.equal(null);
    for (const socket of [second, third]) socket.destroy();
  });

  it("at the cap in total with every connection in a request, closes the new one", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    listener = await listen((_req, res) => void held.then(() => res.end("ok")), { host: "127.0.0.1", port: 0, limits: { ...DEFAULT_SERVER_LIMITS, maxConnections: 2 } });
    const busy = [await connect(listener), await connect(listener, "127.0.0.3")];
    for (const socket of busy) socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await statusLine(listener, "127.0.0.4")).to.equal(null);
    release();
    for (const socket of busy) socket.destroy();
  });

  it("lets a new client in past 900 idle connections held from 20 addresses, 45 each, with the default caps (issue #33, finding 3)", async () => {
    await start({});
    const hoarded: net.Socket[] = [];
    for (let a = 0; a < 20; a++) hoarded.push(...(await Promise.all(Array.from({ length: 45 }, () => connect(listener, `127.0.${10 + a}.1`)))));
    const closed = hoarded.map((socket) => untilClosed(socket, 2_000));
    for (let i = 0; i < 5; i++) expect(await statusLine(listener, `127.0.99.${i + 1}`)).to.equal("HTTP/1.1 200 OK");
    // The hoard made room: the first ones it opened (the longest idle) were closed for the newcomers.
    expect((await Promise.all(closed)).filter((text) => text !== null).length).to.be.at.least(100 + 5);
    for (const socket of hoarded) socket.destroy();
  });

  it("counts an IPv6 client by its /64 and an IPv4-mapped one as its IPv4 address", async () => {
    listener = await listen((_req, res) => res.end("ok"), { host: "::", port: 0, limits: { ...DEFAULT_SERVER_LIMITS, maxConnectionsPerAddress: 1 } });
    const { port } = new URL(listener.url.replace("[::]", "127.0.0.1"));
    const open = (host: string, localAddress: string) => new Promise<net.Socket>((resolve) => {
      const socket = net.connect({ host, port: Number(port), localAddress });
      socket.on("error", () => undefined);
      socket.once("connect", () => resolve(socket));
    });
    const v6 = await open("::1", "::1");
    const v6Closed = untilClosed(await open("::1", "::1"), 2_000);
    expect(await v6Closed).to.equal("");
    // 127.0.0.7 arrives as ::ffff:127.0.0.7 on a dual-stack listener: still one client, its own.
    const v4 = await open("127.0.0.1", "127.0.0.7");
    const v4Closed = untilClosed(await open("127.0.0.1", "127.0.0.7"), 2_000);
    expect(await v4Closed).to.equal("");
    for (const socket of [v6, v4]) socket.destroy();
  });
});

describe("the HTTP listener and an Express app", () => {
  it("makes each request and response with the app's own prototypes, so Express's Object.setPrototypeOf finds them in place; Express works as before", async () => {
    const app = express();
    app.get("/things/:id", (req, res) => void res.status(201).set("X-Id", req.params.id).json({ id: req.params.id, query: req.query.q, ip: req.ip }));
    const arrived: Array<[boolean, boolean]> = [];
    // What Node hands the app, before Express touches it.
    const observed = Object.assign((req: http.IncomingMessage, res: http.ServerResponse) => {
      arrived.push([Object.getPrototypeOf(req) === app.request, Object.getPrototypeOf(res) === app.response]);
      app(req, res);
    }, { request: app.request, response: app.response });
    const listener = await listen(observed, { host: "127.0.0.1", port: 0, limits: DEFAULT_SERVER_LIMITS });
    try {
      const answer = await fetch(`${listener.url}/things/abc?q=1`);
      expect([answer.status, answer.headers.get("x-id"), await answer.json()]).to.deep.equal([201, "abc", { id: "abc", query: "1", ip: "127.0.0.1" }]);
      expect((await fetch(`${listener.url}/nothing`)).status).to.equal(404);
      expect(arrived).to.deep.equal([[true, true], [true, true]]);
      // A plain handler gets Node's own.
      const plain = await listen((req, res) => res.end(String(Object.getPrototypeOf(req) === http.IncomingMessage.prototype)), { host: "127.0.0.1", port: 0, limits: DEFAULT_SERVER_LIMITS });
      try {
        expect(await (await fetch(plain.url)).text()).to.equal("true");
      } finally {
        await plain.close();
      }
    } finally {
      await listener.close();
    }
  });
});
