import http from "node:http";
import v8 from "node:v8";
import { expect } from "chai";
import express from "express";
import { DEFAULT_SERVER_LIMITS, listen, type PrototypedHandler } from "./listener";
import { warmUp, withPrototypesOf } from "./warm-up";

/** A handler answering the directory with two agents' score links, and 200 to anything else; what it was asked, by path and connection. */
function recording() {
  const paths: string[] = [];
  const sockets = new Set<unknown>();
  const handler: http.RequestListener = (req, res) => {
    paths.push(req.url ?? "");
    sockets.add(req.socket);
    const body =
      req.url === "/v1/agents?limit=100"
        ? { agents: [{ links: { score: "/v1/agents/agt_a/score" } }, { links: { score: "/v1/agents/agt_b/score" } }, { links: {} }] }
        : {};
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(body));
  };
  return { handler, paths, sockets };
}

describe("the warm-up a started server sends itself (issue #30)", () => {
  it("reads the directory once, then the scores it links to and the method in turn, on connections it renews", async () => {
    const { handler, paths, sockets } = recording();
    const run = await warmUp(handler, { limits: DEFAULT_SERVER_LIMITS, requests: 201 });
    expect(run).to.include({ requests: 201, ok: 201, agents: 2 });
    expect(paths).to.have.length(201);
    expect(paths.filter((p) => p === "/v1/agents?limit=100")).to.have.length(1);
    const counts = new Map<string, number>();
    for (const p of paths.slice(1)) counts.set(p, (counts.get(p) ?? 0) + 1);
    expect([...counts.keys()].sort()).to.deep.equal(["/v1/agents/agt_a/score", "/v1/agents/agt_b/score", "/v1/method"]);
    for (const n of counts.values()) expect(n).to.be.within(66, 67);
    // Each connection ends after 25 requests: 200 requests take at least 8 of them.
    expect(sockets.size).to.be.at.least(8);
  });

  it("reads the scores of the agents it is given, not the directory's, when it is given some", async () => {
    const { handler, paths } = recording();
    const run = await warmUp(handler, { limits: DEFAULT_SERVER_LIMITS, requests: 31, agentIds: ["agt_x", "agt y"] });
    expect(run).to.include({ requests: 31, ok: 31, agents: 2 });
    expect(paths[0]).to.equal("/v1/agents?limit=100");
    const counts = new Map<string, number>();
    for (const p of paths.slice(1)) counts.set(p, (counts.get(p) ?? 0) + 1);
    expect(Object.fromEntries(counts)).to.deep.equal({ "/v1/method": 10, "/v1/agents/agt_x/score": 10, "/v1/agents/agt%20y/score": 10 });
  });

  it("reads only the method when the directory has no scores, and stops once its signal aborts", async () => {
    const { handler, paths } = recording();
    const none: http.RequestListener = (req, res) =>
      req.url?.startsWith("/v1/agents") ? res.writeHead(503).end("{}") : (handler(req, res) as undefined);
    const stop = new AbortController();
    let seen = 0;
    const counting: http.RequestListener = (req, res) => {
      if (++seen === 50) stop.abort();
      none(req, res);
    };
    const run = await warmUp(counting, { limits: DEFAULT_SERVER_LIMITS, requests: 10_000, signal: stop.signal });
    expect(new Set(paths)).to.deep.equal(new Set(["/v1/method"]));
    // The directory's 503 is not ok; the eight connections each finish the request they had sent.
    expect(run.requests).to.be.within(50, 58);
    expect(run.ok).to.equal(run.requests - 1);
  });
});

describe("the warm-up app's requests and responses (issue #30)", () => {
  /**
   * Whether V8 gives two objects one shape ("map"): code optimised for one's runs the other's without a deoptimisation.
   * Each is first moved off a deprecated map (`%TryMigrateInstance`, as V8 does on the object's next use): a field of
   * this process's responses that held a small integer and then another kind of value (a `null`, a fraction, as the
   * test files before this one in a mocha worker may leave) generalises the field, deprecating the map the object made
   * earlier still has. That once failed this test under load (three workers on two cores); it is no change of shape.
   */
  function sameShape(a: object, b: object): boolean {
    v8.setFlagsFromString("--allow-natives-syntax");
    return new Function("a", "b", "%TryMigrateInstance(a); %TryMigrateInstance(b); return %HaveSameMap(a, b)")(a, b) as boolean;
  }

  /**
   * The request and response `app` is handed for the third of three GETs over one connection, served as the API serves,
   * taken in its handler with the answer held back until `release()`. The objects are compared at that point of their
   * life: after the answer, Node adds fields in an order that the timing of a socket's events decides (under a CPU hog on
   * the other core, two finished responses of one app once had two shapes).
   */
  async function heldBy(app: express.Express): Promise<{ req: http.IncomingMessage; res: http.ServerResponse; release(): Promise<void> }> {
    let held: [http.IncomingMessage, express.Response] | undefined;
    let handed = () => {};
    const third = new Promise<void>((resolve) => (handed = resolve));
    app.get("/v1/things/:id", (req, res) => {
      if (req.params.id !== "c") return void res.json({ id: req.params.id });
      held = [req, res];
      handed();
    });
    const listener = await listen(app, { host: "127.0.0.1", port: 0, limits: DEFAULT_SERVER_LIMITS });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (id: string) =>
      new Promise<void>((resolve, reject) =>
        http.get(`${listener.url}/v1/things/${id}`, { agent }, (res) => res.resume().on("end", resolve)).on("error", reject),
      );
    const close = async () => {
      agent.destroy();
      await listener.close();
    };
    try {
      await get("a");
      await get("b");
    } catch (error) {
      await close();
      throw error;
    }
    const answered = get("c");
    await third;
    const [req, res] = held as [http.IncomingMessage, express.Response];
    return {
      req,
      res,
      async release() {
        res.json({ id: "c" });
        await answered;
        await close();
      },
    };
  }

  it("have the shapes of the API app's, so that what the warm-up optimised is what the API's requests run", async () => {
    const api = express();
    const apiHeld = await heldBy(api);
    const warmHeld = await heldBy(withPrototypesOf(api as PrototypedHandler, express()));
    // An app of its own prototypes, as the warm-up's was: another shape, on which the API's first requests deoptimised.
    const ownHeld = await heldBy(express());
    try {
      expect([Object.getPrototypeOf(warmHeld.req) === api.request, Object.getPrototypeOf(warmHeld.res) === api.response]).to.deep.equal([
        true,
        true,
      ]);
      expect([sameShape(warmHeld.req, apiHeld.req), sameShape(warmHeld.res, apiHeld.res)]).to.deep.equal([true, true]);
      expect([sameShape(ownHeld.req, apiHeld.req), sameShape(ownHeld.res, apiHeld.res)]).to.deep.equal([false, false]);
    } finally {
      await Promise.all([apiHeld, warmHeld, ownHeld].map((h) => h.release()));
    }
  });
});
