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
    expect(listener.server.maxConnections).to.equal(800);
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

  it("closes connections beyond the cap in total, whatever their address", async () => {
    await start({ maxConnections: 2 });
    const held = [await connect(listener), await connect(listener, "127.0.0.3")];
    expect(await statusLine(listener, "127.0.0.4")).to.equal(null);
    for (const socket of held) socket.destroy();
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
