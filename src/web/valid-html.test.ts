import { expect } from "chai";
import { HtmlValidate } from "html-validate";
import { startSiteServer, type SiteServer } from "../test-helpers/site";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const validator = new HtmlValidate({ extends: ["html-validate:standard", "html-validate:document"] });

describe("every page of the site is valid HTML (html-validate, its standard and document rules)", () => {
  let site: SiteServer;
  let agentId: string;
  let unclaimedId: string;

  before(async () => {
    site = await startSiteServer(T0);
    agentId = await site.claimAgent("<script>alert(1)</script> & co");
    await site.claimAgent("second agent");
    unclaimedId = await site.claimAgent("let go");
    const { ownerId } = await site.server.reads.agent(unclaimedId);
    await site.server.service.accounts.unclaim(ownerId, unclaimedId);
  });
  after(() => site.close());

  for (const [name, path] of [
    ["home", () => "/"],
    ["method", () => "/method"],
    ["directory", () => "/agents"],
    ["directory search", () => "/agents?q=second"],
    ["agent", () => `/agents/${agentId}`],
    ["unknown agent", () => "/agents/agt_nobody"],
    ["unclaimed agent", () => `/agents/${unclaimedId}`],
    ["invalid agent id", () => "/agents/%3Cb%3E"],
  ] as const) {
    it(`${name} page`, async () => {
      const res = await fetch(site.server.url + path());
      expect(res.headers.get("content-type")).to.match(/^text\/html/);
      const report = await validator.validateString(await res.text());
      const messages = report.results.flatMap((r) => r.messages.map((m) => `${m.ruleId} line ${m.line}: ${m.message}`));
      expect(messages).to.deep.equal([]);
    });
  }
});
