import net from "node:net";
import { expect } from "chai";
import pino from "pino";
import { startApiServer, type ApiServerOptions } from "../app/server";
import { toRfc3339 } from "../method";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";
import { eventually } from "../test-helpers/eventually";

const OPERATOR_TOKEN = "operator-metrics-test-0123456789";
const METRICS_TOKEN = "metrics-token-metrics-test-012345";

const get = async (url: string, token?: string) => {
  const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, text: await res.text(), cacheControl: res.headers.get("cache-control") };
};

describe("where /metrics is served (finding 8)", () => {
  let testDb: TestDb;
  before(async () => {
    testDb = await createTestPgliteDb();
  });
  after(async () => {
    await testDb.drop();
  });
  async function withServer(
    metrics: ApiServerOptions["metrics"],
    run: (urls: { url: string; metricsUrl: string | undefined }) => Promise<void>,
  ) {
    const server = await startApiServer({ db: testDb.db, operatorToken: OPERATOR_TOKEN, logger: pino({ level: "silent" }), metrics });
    try {
      await run(server);
    } finally {
      await server.close();
    }
  }

  it("says how far behind the anchoring is, as GET /v1/health does: the days whose root is not anchored and the oldest one's age (issue #30)", async () => {
    const builtAt = Math.floor(Date.now() / 1000) - 120;
    await withServer({ port: 0 }, async ({ url, metricsUrl }) => {
      await testDb.db.query(
        "INSERT INTO score_anchors (day, root, leaf_count, leaf_version, status, built_at) VALUES ('2026-11-02', $1, 1, 2, 'pending', $2)",
        [`0x${"ab".repeat(32)}`, builtAt],
      );
      try {
        const behind = (await get(`${metricsUrl}/metrics`)).text;
        expect(behind).to.match(/^vrai_anchor_unanchored_days 1$/m);
        expect(Number(/^vrai_anchor_oldest_unanchored_age_seconds (\S+)$/m.exec(behind)?.[1])).to.be.within(120, 180);
        expect(await (await fetch(`${url}/v1/health`)).json()).to.deep.equal({
          status: "behind",
          anchoring: {
            writing: false,
            unanchoredDays: 1,
            oldestUnanchoredDay: "2026-11-02",
            oldestBuiltAt: toRfc3339(builtAt),
            failingSince: null,
          },
        });
        await testDb.db.query("UPDATE score_anchors SET status = 'mined', final_at = $1 WHERE day = '2026-11-02'", [builtAt]);
        const caughtUp = (await get(`${metricsUrl}/metrics`)).text;
        expect(caughtUp)
          .to.match(/^vrai_anchor_unanchored_days 0$/m)
          .and.match(/^vrai_anchor_oldest_unanchored_age_seconds 0$/m);
        expect(((await (await fetch(`${url}/v1/health`)).json()) as { status: string }).status).to.equal("ok");
      } finally {
        await testDb.db.query("DELETE FROM score_anchors WHERE day = '2026-11-02'");
      }
    });
  });

  it("is not served on the API's listener by default", async () => {
    await withServer(undefined, async ({ url, metricsUrl }) => {
      expect(metricsUrl).to.equal(undefined);
      const answer = await get(`${url}/metrics`);
      expect(answer.status).to.equal(404);
      expect(answer.text).to.not.contain("vrai_http_requests_total");
    });
  });

  it("answers only the metrics token on the API's listener when one is set", async () => {
    await withServer({ token: METRICS_TOKEN }, async ({ url }) => {
      for (const token of [undefined, "not-the-metrics-token", OPERATOR_TOKEN]) {
        const refused = await get(`${url}/metrics`, token);
        expect(refused.status, String(token)).to.equal(401);
        expect(refused.text).to.not.contain("vrai_http_requests_total");
      }
      const served = await get(`${url}/metrics`, METRICS_TOKEN);
      expect(served.status).to.equal(200);
      expect(served.text).to.contain("vrai_http_requests_total");
      expect(served.cacheControl).to.equal("no-store");
    });
  });

  it("is served on a listener of its own with METRICS_PORT, and only there", async () => {
    await withServer({ port: 0 }, async ({ url, metricsUrl }) => {
      expect(metricsUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await get(`${url}/metrics`)).status).to.equal(404);
      const served = await get(`${metricsUrl}/metrics`);
      expect(served.status).to.equal(200);
      expect(served.text).to.contain("vrai_http_requests_total");
      expect((await get(`${metricsUrl}/v1/method`)).status).to.equal(404);
    });
    await withServer({ port: 0, token: METRICS_TOKEN }, async ({ url, metricsUrl }) => {
      expect((await get(`${url}/metrics`, METRICS_TOKEN)).status).to.equal(404);
      expect((await get(`${metricsUrl}/metrics`)).status).to.equal(401);
      expect((await get(`${metricsUrl}/metrics`, METRICS_TOKEN)).status).to.equal(200);
    });
  });

  it("counts the connections the API's listener holds, open and waiting for their client (issue #33)", async () => {
    await withServer({ port: 0 }, async ({ url, metricsUrl }) => {
      const { port } = new URL(url);
      const held = await Promise.all(
        Array.from(
          { length: 3 },
          () =>
            new Promise<net.Socket>((resolve) => {
              const socket = net.connect({ host: "127.0.0.1", port: Number(port) }, () => resolve(socket));
            }),
        ),
      );
      // One of them sends part of a body: still waiting for its client.
      held[0].write("POST /v1/owners HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{");
      try {
        const expected = ['vrai_http_connections{state="open"} 3', 'vrai_http_connections{state="waiting"} 3'];
        const figures = async () =>
          (await get(`${metricsUrl}/metrics`)).text.split("\n").filter((line) => line.startsWith("vrai_http_connections{"));
        await eventually(async () => (await figures()).join() === expected.join(), "the three connections to be counted");
        expect(await figures()).to.deep.equal(expected);
      } finally {
        for (const socket of held) socket.destroy();
      }
    });
  });
});
