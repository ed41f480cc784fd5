import { expect } from "chai";
import pino from "pino";
import { createTestPgliteDb } from "../test-helpers/db";
import { createRouteTable, type RouteSpec } from "./routes";
import { startApiServer } from "./server";

const route = (method: RouteSpec["method"], path: string): RouteSpec => ({
  method, path, summary: path, tag: "test", auth: "none", responses: {}, handler: async () => ({ status: 204 }),
});

describe("the route table", () => {
  const score = route("get", "/v1/agents/:id/score");
  const checkins = route("post", "/v1/agents/:id/checkins");
  const scoreById = route("get", "/v1/scores/:id");
  const latest = route("get", "/v1/scores/latest");
  const table = createRouteTable([score, checkins, scoreById, latest]);

  it("finds a route by its exact method and path, with the parameters and without the query", () => {
    expect(table.match("GET", "/v1/agents/agt_1/score?x=1")).to.deep.equal({ route: score, params: { id: "agt_1" } });
    expect(table.match("POST", "/v1/agents/agt_1/checkins")).to.deep.equal({ route: checkins, params: { id: "agt_1" } });
    expect(table.match("POST", "/v1/agents/agt_1/score")).to.equal(null);
    expect(table.match("GET", "/v1/agents/agt_1")).to.equal(null);
  });

  it("compares literal segments case-insensitively and lets the first declared route win, as Express does", () => {
    expect(table.match("GET", "/V1/Agents/AGT_1/SCORE")).to.deep.equal({ route: score, params: { id: "AGT_1" } });
    expect(table.match("GET", "/v1/scores/latest")).to.deep.equal({ route: scoreById, params: { id: "latest" } });
  });

  it("leaves HEAD, OPTIONS, trailing slashes, escapes, empty segments and absolute URLs to Express", () => {
    for (const [method, url] of [
      ["HEAD", "/v1/agents/agt_1/score"], ["OPTIONS", "/v1/agents/agt_1/score"], ["GET", "/v1/agents/agt_1/score/"],
      ["GET", "/v1/agents/agt%5F1/score"], ["GET", "/v1/agents//score"], ["GET", "http://localhost/v1/agents/agt_1/score"],
      ["GET", "/v1/agents/agt 1/score"], ["GET", "/v1/agents/agt_1/score#x"],
    ]) {
      expect(table.match(method, url), `${method} ${url}`).to.equal(null);
    }
  });

  it("refuses a route path with syntax beyond literal and :name segments", () => {
    expect(() => createRouteTable([route("get", "/v1/files/*path")])).to.throw(/only literal and :name segments/);
    expect(() => createRouteTable([route("get", "/v1/agents/:id{.json}")])).to.throw(/only literal and :name segments/);
  });
});

describe("the app's routes", () => {
  it("may not shadow /metrics or /v1/openapi.json, which Express registers ahead of them", async () => {
    const testDb = await createTestPgliteDb();
    try {
      for (const path of ["/:page", "/v1/:document"]) {
        const started = startApiServer({ db: testDb.db, operatorToken: "operator-token-shadow-test", logger: pino({ level: "silent" }), extraRoutes: () => [route("get", path)] });
        const error = await started.then(() => null, (e: Error) => e);
        expect(error?.message, path).to.match(/would shadow/);
      }
    } finally {
      await testDb.drop();
    }
  });
});
