import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import express from "express";
import { z } from "zod";
import { createPartParser, parseWith, writeReply } from "./http";
import type { Reply } from "./routes";

/** The raw status line, headers (without Date) and body of one request. */
function rawExchange(url: string, headers: Record<string, string> = {}, method = "GET"): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      let body = "";
      res.on("data", (chunk) => (body += chunk));
      res.on("end", () => {
        const lines = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) if (res.rawHeaders[i] !== "Date") lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
        resolve(`${res.statusCode}\n${lines.join("\n")}\n\n${body}`);
      });
    });
    req.on("error", reject);
    req.end();
  });
}

describe("writeReply", () => {
  const body = { id: 7, name: "é\u2028agent", result: { window: Array.from({ length: 30 }, (_, i) => ({ day: i, credit: i * 1.5 })) } };
  const text = JSON.stringify(body);
  // Each case: what Express's response API does, and the same reply written by writeReply on a plain node server.
  const cases: Record<string, { express: (res: express.Response) => void; reply: Reply }> = {
    body: { express: (res) => void res.status(201).set("Retry-After", "3").json(body), reply: { status: 201, headers: { "Retry-After": "3" }, body } },
    json: {
      express: (res) => void res.status(200).set({ ETag: 'W/"score-1-7"' }).type("application/json; charset=utf-8").send(text),
      reply: { status: 200, headers: { ETag: 'W/"score-1-7"' }, json: text },
    },
    raw: {
      express: (res) => void res.status(200).set({ "X-Vrai-Sha256": "ab" }).type("application/json").send(text),
      reply: { status: 200, headers: { "X-Vrai-Sha256": "ab" }, raw: { contentType: "application/json", text } },
    },
    error: { express: (res) => void res.status(404).json({ error: { code: "not_found", message: "no such route" } }), reply: { status: 404, body: { error: { code: "not_found", message: "no such route" } } } },
    empty: { express: (res) => void res.status(204).end(), reply: { status: 204 } },
  };
  let expressServer: http.Server;
  let plainServer: http.Server;
  let expressUrl: string;
  let plainUrl: string;
  const listen = async (server: http.Server) => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  before(async () => {
    const app = express().disable("x-powered-by");
    for (const [name, c] of Object.entries(cases)) app.all(`/${name}`, (_req, res) => c.express(res));
    expressServer = http.createServer(app);
    plainServer = http.createServer((req, res) => writeReply(req, res, cases[req.url!.slice(1)].reply));
    expressUrl = await listen(expressServer);
    plainUrl = await listen(plainServer);
  });
  after(async () => {
    await new Promise<void>((resolve) => expressServer.close(() => resolve()));
    await new Promise<void>((resolve) => plainServer.close(() => resolve()));
  });

  it("answers with the bytes Express answers with: status, headers in order, ETag and body", async () => {
    for (const name of Object.keys(cases)) {
      const expected = await rawExchange(`${expressUrl}/${name}`);
      if (name !== "empty") expect(expected, name).to.contain("ETag: W/");
      expect(await rawExchange(`${plainUrl}/${name}`), name).to.equal(expected);
    }
  });

  it("answers conditional and HEAD requests as Express does", async () => {
    for (const name of Object.keys(cases)) {
      const etag = /ETag: (.*)/.exec(await rawExchange(`${expressUrl}/${name}`))?.[1] ?? 'W/"none"';
      const conditions: Record<string, string>[] = [{ "if-none-match": etag }, { "if-none-match": "W/\"other\"" }, { "if-modified-since": new Date().toUTCString() }, { "if-none-match": etag, "cache-control": "no-cache" }];
      for (const headers of conditions) {
        expect(await rawExchange(`${plainUrl}/${name}`, headers), `${name} ${JSON.stringify(headers)}`).to.equal(await rawExchange(`${expressUrl}/${name}`, headers));
      }
      expect(await rawExchange(`${plainUrl}/${name}`, {}, "HEAD"), `${name} HEAD`).to.equal(await rawExchange(`${expressUrl}/${name}`, {}, "HEAD"));
    }
    expect(await rawExchange(`${plainUrl}/body`, { "if-none-match": /ETag: (.*)/.exec(await rawExchange(`${plainUrl}/body`))![1] })).to.match(/^304/);
    expect(await rawExchange(`${plainUrl}/error`, { "if-none-match": /ETag: (.*)/.exec(await rawExchange(`${plainUrl}/error`))![1] })).to.match(/^404/);
  });
});

describe("createPartParser", () => {
  const schemas = {
    plain: z.object({ id: z.string().regex(/^[a-z]+$/, "expected letters"), n: z.coerce.number().int().optional(), d: z.string().default("x") }),
    strict: z.object({ id: z.string() }).strict(),
    refined: z.object({ a: z.number(), b: z.number() }).refine((v) => v.a < v.b, "a must be below b"),
  };
  const inputs: unknown[] = [
    { id: "abc" }, { id: "abc", n: "3", extra: 1 }, { id: "abc", n: undefined }, { id: "ABC" }, {}, { id: "abc", n: "x" },
    { a: 2, b: 1 }, { a: 1, b: 2 }, [], "text", null, 42,
  ];

  it("gives the whole-object parse's result, or its first issue as the same 400 message", () => {
    const outcome = (parse: () => unknown) => {
      try {
        return { ok: parse() };
      } catch (error) {
        return { error: (error as Error).message, status: (error as { status?: number }).status };
      }
    };
    for (const [name, schema] of Object.entries(schemas)) {
      const parse = createPartParser(schema, "path");
      for (const input of inputs) {
        const expected = outcome(() => parseWith(schema, input, "path"));
        expect(outcome(() => parse(input)), `${name} ${JSON.stringify(input)}`).to.deep.equal(expected);
      }
    }
  });

  it("keeps an absent optional key absent and fills in a default, as the object parse does", () => {
    const parsed = createPartParser(schemas.plain, "query")({ id: "abc" });
    expect(parsed).to.deep.equal({ id: "abc", d: "x" });
    expect(Object.keys(parsed)).to.deep.equal(["id", "d"]);
  });
});
