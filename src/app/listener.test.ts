import { spawnSync } from "node:child_process";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { expect } from "chai";
import express from "express";
import { eventually } from "../test-helpers/eventually";
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

/**
 * The listener's counts once they equal `expected`, or as they are after `waitMs`: a connection open on the client's
 * side is accepted by the server a moment later, longer on a loaded machine.
 */
async function connectionsOnceAt(listener: Listener, expected: Partial<ReturnType<Listener["connections"]>>, waitMs = 10_000) {
  const matches = (now: ReturnType<Listener["connections"]>) =>
    Object.entries(expected).every(([k, v]) => now[k as keyof typeof now] === v);
  for (const until = Date.now() + waitMs; !matches(listener.connections()) && Date.now() < until; )
    await new Promise((r) => setTimeout(r, 20));
  return listener.connections();
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

  it(
    "answers a request Node's parser refuses (NUL in a header, a malformed line) with the JSON error shape, " +
      "and runs no handler (issue #15, finding 4)",
    async () => {
      let handled = 0;
      listener = await listen(
        (_req, res) => {
          handled++;
          res.end("ok");
        },
        { host: "127.0.0.1", port: 0, limits: DEFAULT_SERVER_LIMITS },
      );
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
    },
  );

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

  it(
    "closes a new connection that sends nothing within the first-byte time, " +
      "one that has started its request is left to the headers' timeout (issue #33)",
    async () => {
      await start({ firstByteTimeoutMs: 200, headersTimeoutMs: 5_000, requestTimeoutMs: 6_000 });
      const silent = await connect(listener);
      const started = await connect(listener);
      started.write("GET / HTTP/1.1\r\n");
      const opened = Date.now();
      expect(await untilClosed(silent, 3_000)).to.equal("");
      // Closed by the first-byte time (200 ms), long before the headers' (5 s), with room for a loaded machine.
      expect(Date.now() - opened).to.be.within(100, 4_000);
      // The one that spoke is still open, and finishes its request.
      const answer = untilClosed(started, 3_000);
      started.end("Host: x\r\nConnection: close\r\n\r\n");
      expect(await answer).to.match(/^HTTP\/1\.1 200 /);
    },
  );

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

  it(
    "at the cap in total, closes a connection whose request's body is still arriving for a new client, " +
      "the one waiting the longest first; closes the new one only when every request has arrived (issue #33)",
    async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      // As Express's body parser does: the body is read, then the request is handled (here, held).
      listener = await listen(
        (req, res) => {
          req.resume();
          req.on("end", () => void held.then(() => res.end("ok")));
        },
        { host: "127.0.0.1", port: 0, limits: { ...DEFAULT_SERVER_LIMITS, maxConnections: 2 } },
      );
      const post = (length: number, body: string) => `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\n${body}`;
      // Two requests whose bodies trickle: both wait for their clients, the first since longer.
      const slowFirst = await connect(listener, "127.0.0.3");
      slowFirst.write(post(1_000, "{"));
      await connectionsOnceAt(listener, { open: 1, waiting: 1 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const slowSecond = await connect(listener, "127.0.0.4");
      slowSecond.write(post(1_000, "{"));
      await connectionsOnceAt(listener, { open: 2, waiting: 2 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Another byte of the first changes nothing: what counts is how long it has waited for its request.
      slowFirst.write(" ");
      const firstClosed = untilClosed(slowFirst, 3_000);
      const secondClosed = untilClosed(slowSecond, 1_500);
      const newcomer = await connect(listener, "127.0.0.5");
      expect(await firstClosed).to.equal("");
      expect(await secondClosed).to.equal(null);
      // The second's body arrives whole: it is being handled now, as is the newcomer's request.
      slowSecond.write(`${" ".repeat(999)}`);
      newcomer.write(post(2, "{}"));
      expect(await connectionsOnceAt(listener, { open: 2, waiting: 0 })).to.deep.equal({ open: 2, waiting: 0 });
      expect(await statusLine(listener, "127.0.0.6")).to.equal(null);
      release();
      for (const socket of [slowSecond, newcomer]) socket.destroy();
    },
  );

  it("at the cap in total, closes a connection whose client does not read its answer for a new client (issue #33)", async () => {
    const large = Buffer.alloc(8 * 2 ** 20, "x");
    let answering = 0;
    const answer = (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.url !== "/large") return void res.end("ok");
      answering++;
      res.end(large);
    };
    listener = await listen(answer, {
      host: "127.0.0.1",
      port: 0,
      limits: { ...DEFAULT_SERVER_LIMITS, maxConnections: 2 },
    });
    // Two clients ask for an answer larger than the kernel's buffers hold and read none of it.
    const readers = [await connect(listener, "127.0.0.3"), await connect(listener, "127.0.0.4")];
    for (const socket of readers) {
      socket.pause();
      socket.write("GET /large HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    // Both answers written (more than the kernel takes at once): until then a connection waits for its request instead.
    await eventually(() => answering === 2, "both large answers to be written", 10_000);
    expect(listener.connections()).to.deep.equal({ open: 2, waiting: 2 });
    expect(await statusLine(listener, "127.0.0.5")).to.equal("HTTP/1.1 200 OK");
    // The first of them made room (a paused socket learns of it once it reads): it gets part of its answer, the other all of it.
    const received = readers.map(
      (socket) =>
        new Promise<{ bytes: number; closed: boolean }>((resolve) => {
          let bytes = 0;
          socket.on("data", (chunk: Buffer) => {
            bytes += chunk.length;
            if (bytes > large.length) resolve({ bytes: large.length, closed: false });
          });
          socket.once("close", () => resolve({ bytes: Math.min(bytes, large.length), closed: true }));
          socket.resume();
        }),
    );
    const [first, second] = await Promise.all(received);
    expect(first.closed).to.equal(true);
    expect(first.bytes).to.be.below(large.length);
    expect(second).to.deep.equal({ bytes: large.length, closed: false });
    readers[1].destroy();
  });

  it(
    "lets new clients in past 832 POSTs whose bodies trickle in, 64 from each of 13 addresses, with the default caps; " +
      "the server holds 800 (issue #33)",
    async () => {
      listener = await listen(
        (req, res) => {
          req.resume();
          req.on("end", () => res.end("ok"));
        },
        { host: "127.0.0.1", port: 0, limits: DEFAULT_SERVER_LIMITS },
      );
      const hoarded: net.Socket[] = [];
      for (let a = 0; a < 13; a++) {
        hoarded.push(
          ...(await Promise.all(
            Array.from({ length: 64 }, async () => {
              const socket = await connect(listener, `127.0.${10 + a}.1`);
              socket.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{");
              return socket;
            }),
          )),
        );
      }
      const trickle = setInterval(() => {
        for (const socket of hoarded) if (!socket.destroyed) socket.write(" ");
      }, 200);
      try {
        expect(await connectionsOnceAt(listener, { open: 800, waiting: 800 })).to.deep.equal({ open: 800, waiting: 800 });
        for (let i = 0; i < 5; i++) expect(await statusLine(listener, `127.0.99.${i + 1}`)).to.equal("HTTP/1.1 200 OK");
        expect(listener.connections().open).to.be.at.most(800);
      } finally {
        clearInterval(trickle);
        for (const socket of hoarded) socket.destroy();
      }
    },
  );

  it(
    "lets new clients in past hoarders of every kind at once, from 20 addresses: " +
      "no byte, one byte, part of the headers, a body that trickles (issue #33)",
    async () => {
      listener = await listen(
        (req, res) => {
          req.resume();
          req.on("end", () => res.end("ok"));
        },
        { host: "127.0.0.1", port: 0, limits: DEFAULT_SERVER_LIMITS },
      );
      const kinds = ["", "P", "POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n{"];
      const hoarded: net.Socket[] = [];
      for (let a = 0; a < 20; a++) {
        hoarded.push(
          ...(await Promise.all(
            Array.from({ length: 45 }, async (_, i) => {
              const socket = await connect(listener, `127.0.${10 + a}.2`);
              const first = kinds[(a + i) % kinds.length];
              if (first) socket.write(first);
              return socket;
            }),
          )),
        );
      }
      try {
        expect((await connectionsOnceAt(listener, { open: 800 })).open).to.equal(800);
        for (let i = 0; i < 5; i++) expect(await statusLine(listener, `127.0.99.${i + 1}`)).to.equal("HTTP/1.1 200 OK");
      } finally {
        for (const socket of hoarded) socket.destroy();
      }
    },
  );

  it("lets a new client in past 900 idle connections held from 20 addresses, 45 each, with the default caps (issue #33, finding 3)", async () => {
    // The default caps, and no first-byte deadline within the test: only the caps close a connection here. (With the
    // default 3 s, the count below depended on how long the hoard took to open: hogH counted 101 closed within 2 s.)
    await start({ firstByteTimeoutMs: 120_000 });
    const hoarded: net.Socket[] = [];
    for (let a = 0; a < 20; a++)
      hoarded.push(...(await Promise.all(Array.from({ length: 45 }, () => connect(listener, `127.0.${10 + a}.1`)))));
    // Each hoarded connection read from now on, as a client would: one the server closed ends.
    const closed = new Set<number>();
    for (const [i, socket] of hoarded.entries()) {
      socket.resume();
      socket.once("close", () => closed.add(i));
    }
    for (let i = 0; i < 5; i++) expect(await statusLine(listener, `127.0.99.${i + 1}`)).to.equal("HTTP/1.1 200 OK");
    // The hoard made room: the 100 over the cap of 800 were closed as they came, each for one of the longest idle, and
    // the first newcomer closed one more (the next ones may find the room the one before left when it closed).
    for (const until = Date.now() + 10_000; closed.size < 101 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 20));
    expect(closed.size).to.be.within(101, 105);
    // The longest idle are the first opened: the first two addresses' 90 all closed, none past the third's 45.
    const indices = [...closed].sort((x, y) => x - y);
    expect(indices.slice(0, 90)).to.deep.equal(Array.from({ length: 90 }, (_, i) => i));
    expect(indices.at(-1)).to.be.below(135);
    for (const socket of hoarded) socket.destroy();
  });

  it("counts an IPv6 client by its /64 and an IPv4-mapped one as its IPv4 address", async () => {
    listener = await listen((_req, res) => res.end("ok"), {
      host: "::",
      port: 0,
      limits: { ...DEFAULT_SERVER_LIMITS, maxConnectionsPerAddress: 1 },
    });
    const { port } = new URL(listener.url.replace("[::]", "127.0.0.1"));
    const open = (host: string, localAddress: string) =>
      new Promise<net.Socket>((resolve) => {
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

describe("the HTTP listener and one IPv6 /64 (issue #33)", () => {
  /**
   * Loopback has one IPv6 address (::1), so this runs in a network namespace of its own (`unshare -rn`:
   * nothing reaches the host's network) whose loopback interface is given documentation addresses
   * (RFC 3849), two of one /64 and one of another. The child serves and connects from them, and prints
   * what each connection got.
   */
  it("counts two addresses of one /64 as one client, and an address of another /64 as another", async () => {
    const script = `
      const net = require("node:net");
      const { listen, DEFAULT_SERVER_LIMITS } = require(${JSON.stringify(path.join(__dirname, "listener.ts"))});
      (async () => {
        const listener = await listen((_req, res) => res.end("ok"), { host: "::", port: 0, limits: { ...DEFAULT_SERVER_LIMITS, maxConnectionsPerAddress: 1 } });
        const port = listener.server.address().port;
        const get = (localAddress) => new Promise((resolve) => {
          const socket = net.connect({ host: "2001:db8:0:1::1", port, localAddress });
          let text = "";
          socket.on("error", () => undefined);
          socket.on("data", (chunk) => (text += chunk));
          socket.once("close", () => resolve(text.split("\\r\\n", 1)[0]));
          socket.once("connect", () => socket.write("GET / HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n"));
        });
        const held = net.connect({ host: "2001:db8:0:1::1", port, localAddress: "2001:db8:0:1::1" });
        await new Promise((resolve) => held.once("connect", resolve));
        await new Promise((resolve) => setTimeout(resolve, 50));
        const answers = { sameSlash64: await get("2001:db8:0:1::2"), otherSlash64: await get("2001:db8:0:2::1") };
        held.destroy();
        while (listener.connections().open > 0) await new Promise((resolve) => setTimeout(resolve, 10));
        answers.afterTheFirstLeft = await get("2001:db8:0:1::2");
        console.log(JSON.stringify(answers));
        listener.server.closeAllConnections();
        await listener.close();
      })();
    `;
    const setup = [
      "ip link set lo up",
      ...["2001:db8:0:1::1", "2001:db8:0:1::2", "2001:db8:0:2::1"].map((address) => `ip -6 addr add ${address}/64 dev lo nodad`),
    ].join(" && ");
    const child = spawnSync("unshare", ["-rn", "sh", "-c", `${setup} && exec "$0" --require tsx/cjs -e "$1"`, process.execPath, script], {
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(child.status, child.stderr).to.equal(0);
    expect(JSON.parse(child.stdout)).to.deep.equal({
      sameSlash64: "",
      otherSlash64: "HTTP/1.1 200 OK",
      afterTheFirstLeft: "HTTP/1.1 200 OK",
    });
  });
});

describe("the HTTP listener and an Express app", () => {
  it(
    "makes each request and response with the app's own prototypes, so Express's Object.setPrototypeOf finds them in place; " +
      "Express works as before",
    async () => {
      const app = express();
      app.get(
        "/things/:id",
        (req, res) => void res.status(201).set("X-Id", req.params.id).json({ id: req.params.id, query: req.query.q, ip: req.ip }),
      );
      const arrived: Array<[boolean, boolean]> = [];
      // What Node hands the app, before Express touches it.
      const observed = Object.assign(
        (req: http.IncomingMessage, res: http.ServerResponse) => {
          arrived.push([Object.getPrototypeOf(req) === app.request, Object.getPrototypeOf(res) === app.response]);
          app(req, res);
        },
        { request: app.request, response: app.response },
      );
      const listener = await listen(observed, { host: "127.0.0.1", port: 0, limits: DEFAULT_SERVER_LIMITS });
      try {
        const answer = await fetch(`${listener.url}/things/abc?q=1`);
        expect([answer.status, answer.headers.get("x-id"), await answer.json()]).to.deep.equal([
          201,
          "abc",
          { id: "abc", query: "1", ip: "127.0.0.1" },
        ]);
        expect((await fetch(`${listener.url}/nothing`)).status).to.equal(404);
        expect(arrived).to.deep.equal([
          [true, true],
          [true, true],
        ]);
        // A plain handler gets Node's own.
        const plain = await listen((req, res) => res.end(String(Object.getPrototypeOf(req) === http.IncomingMessage.prototype)), {
          host: "127.0.0.1",
          port: 0,
          limits: DEFAULT_SERVER_LIMITS,
        });
        try {
          expect(await (await fetch(plain.url)).text()).to.equal("true");
        } finally {
          await plain.close();
        }
      } finally {
        await listener.close();
      }
    },
  );
});
