import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import express from "express";
import { z } from "zod";
import { createPartParser, parseWith, sendJson } from "./http";

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

describe("sendJson", () => {
  const body = { id: 7, name: "é\u2028agent", result: { window: Array.from({ length: 30 }, (_, i) => ({ day: i, credit: i * 1.5 })) } };
  let server: http.Server;
  let url: string;

  before(async () => {
    const app = express();
    app.get("/express", (_req, res) => void res.status(201).set("Retry-After", "3").json(body));
    app.get("/lean", (_req, res) => {
      res.status(201).set("Retry-After", "3");
      sendJson(res, body);
    });
    server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("answers with the bytes res.json answers with: status, headers in order, ETag and body", async () => {
    const expected = await rawExchange(`${url}/express`);
    expect(expected).to.contain("ETag: W/");
    expect(await rawExchange(`${url}/lean`)).to.equal(expected);
  });

  it("answers conditional and HEAD requests as res.json does", async () => {
    const etag = /ETag: (.*)/.exec(await rawExchange(`${url}/express`))![1];
    const conditions: Record<string, string>[] = [{ "if-none-match": etag }, { "if-none-match": "W/\"other\"" }, { "if-modified-since": new Date().toUTCString() }];
    for (const headers of conditions) {
      const expected = await rawExchange(`${url}/express`, headers);
      expect(await rawExchange(`${url}/lean`, headers)).to.equal(expected);
    }
    expect(await rawExchange(`${url}/express`, { "if-none-match": etag })).to.match(/^304/);
    expect(await rawExchange(`${url}/lean`, {}, "HEAD")).to.equal(await rawExchange(`${url}/express`, {}, "HEAD"));
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
