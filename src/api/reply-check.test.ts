import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import pino from "pino";
import { z } from "zod";
import { ConflictError, NotFoundError } from "../service/errors";
import { createLoadMonitor } from "../service/load";
import { mismatchesDuring } from "../test-helpers/check-replies";
import { createHttpApp } from "./express";
import { createApiMetrics } from "./metrics";
import { createRateLimits, DEFAULT_RATE_LIMITS } from "./rate-limit";
import { checkedError, checkReply, ReplyMismatchError } from "./reply-check";
import { defineRoute, errorResponse, JsonText, type Reply, type Route } from "./route";

const thing = z.object({ id: z.string(), tags: z.array(z.object({ name: z.string() })), note: z.string().nullable() });

/** A route that answers whatever the test hands it, declared with a 200 of `thing` and a 404. */
function routeAnswering(answer: () => Reply): Route {
  return defineRoute({
    method: "get",
    path: "/v1/things/:id",
    operationId: "getThing",
    tag: "things",
    auth: "none",
    summary: "One thing.",
    params: z.object({ id: z.string() }),
    responses: { 200: { description: "ok", schema: thing }, 404: errorResponse("no such thing") },
  }).handle(async () => answer() as never);
}

describe("the reply check", () => {
  // Each test takes out of the suite's list the mismatches it causes on purpose (mismatchesDuring), and asserts them.
  const route = routeAnswering(() => ({ status: 200, body: {} }));
  const failure = (reply: Reply) => {
    try {
      checkReply(route, reply);
      return null;
    } catch (error) {
      expect(error).to.be.instanceOf(ReplyMismatchError);
      return error instanceof Error ? error.message : String(error);
    }
  };

  it("accepts a declared status with a body its schema takes, as a value or as JSON text", async () => {
    const caused = await mismatchesDuring(() => {
      expect(failure({ status: 200, body: { id: "a", tags: [{ name: "x" }], note: null } })).to.equal(null);
      expect(failure({ status: 200, json: new JsonText('{"id":"a","tags":[],"note":"n"}') })).to.equal(null);
      expect(failure({ status: 404, body: { error: { code: "thing_not_found", message: "no thing a" } } })).to.equal(null);
      // Shared answers of every route: 429 rate limited; 304 of a GET, without a body.
      expect(failure({ status: 429, body: { error: { code: "rate_limited", message: "later" } } })).to.equal(null);
      expect(failure({ status: 304 })).to.equal(null);
    });
    expect(caused).to.deep.equal([]);
  });

  it("refuses an undeclared status, a body the schema refuses, and a field it does not declare, naming it", async () => {
    const caused = await mismatchesDuring(() => {
      expect(failure({ status: 201, body: { id: "a", tags: [], note: null } })).to.contain(
        "GET /v1/things/:id: status 201 is not declared",
      );
      expect(failure({ status: 200, body: { id: 7, tags: [], note: null } })).to.match(/body\.id: /);
      expect(failure({ status: 200, body: { id: "a", tags: [{ name: "x", colour: "red" }], note: null } })).to.contain(
        "body.tags.0.colour: not declared",
      );
      expect(failure({ status: 200, json: new JsonText('{"id":"a","tags":[],"note":null,"secret":1}') })).to.contain(
        "body.secret: not declared",
      );
      expect(failure({ status: 200, text: "plain" })).to.contain("declares a JSON body, the handler sent text");
      expect(failure({ status: 200 })).to.contain("declares a JSON body, the handler sent none");
      expect(failure({ status: 404, body: { message: "no" } })).to.match(/body\.error: /);
    });
    expect(caused).to.have.length(7);
  });

  it("lets a declared error through and turns an undeclared one into a reply_mismatch", async () => {
    const notFound = new NotFoundError("thing_not_found", "no thing");
    expect(await mismatchesDuring(() => expect(checkedError(route, notFound)).to.equal(notFound))).to.deep.equal([]);
    const conflict = new ConflictError("thing_busy", "busy");
    let checked: unknown;
    expect(await mismatchesDuring(() => (checked = checkedError(route, conflict)))).to.deep.equal([
      "GET /v1/things/:id: status 409 (thing_busy) is not declared",
    ]);
    expect(checked).to.be.instanceOf(ReplyMismatchError);
    expect(checked).to.have.property("message").that.contains("status 409 (thing_busy) is not declared");
    expect(checked).to.have.property("cause", conflict);
  });

  it("in a checked HTTP app, answers a mismatch with a 500 naming it and reports it to the test suite", async () => {
    let answer: Reply = { status: 200, body: { id: "a", tags: [], note: null, extra: true } };
    const app = createHttpApp({
      routes: [routeAnswering(() => answer)],
      checkReplies: true,
      authenticateOwner: async () => ({ ownerId: "", scope: "full" }),
      authenticateOperator: async () => "",
      authenticateAgent: async () => undefined,
      limits: createRateLimits(DEFAULT_RATE_LIMITS),
      load: createLoadMonitor({ maxInFlight: 100, maxLoopDelayMs: 10_000 }),
      metrics: createApiMetrics({ busy: () => false }),
      logger: pino({ level: "silent" }),
    });
    const server = http.createServer(app).listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/things/a`;
    try {
      let bad: Response | undefined;
      expect(await mismatchesDuring(async () => (bad = await fetch(url)))).to.deep.equal(["GET /v1/things/:id: body.extra: not declared"]);
      expect(bad?.status).to.equal(500);
      expect(await bad?.json()).to.deep.equal({
        error: {
          code: "reply_mismatch",
          message: "the answer does not match the declaration: GET /v1/things/:id: body.extra: not declared",
        },
      });
      answer = { status: 200, body: { id: "a", tags: [], note: null } };
      let good: Response | undefined;
      expect(await mismatchesDuring(async () => (good = await fetch(url)))).to.deep.equal([]);
      expect(good?.status).to.equal(200);
      expect(await good?.json()).to.deep.equal({ id: "a", tags: [], note: null });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
