import { expect } from "chai";
import { HtmlValidate } from "html-validate";
import { consolePost, signInWithToken, startConsoleServer, type ConsoleServer } from "../../test-helpers/console";

const validator = new HtmlValidate({ extends: ["html-validate:standard", "html-validate:document"] });

describe("every page of the console's sign-in, sessions and tokens is valid HTML (html-validate, issue #29)", () => {
  let cs: ConsoleServer;
  let full: { cookie: string; csrfToken: string };
  let read: { cookie: string; csrfToken: string };

  before(async () => {
    cs = await startConsoleServer();
    const { token } = await cs.createOwner();
    full = await signInWithToken(cs.url, token);
    const created = await fetch(`${cs.url}/v1/owner/read-tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "<b>look</b> & co" }),
    });
    read = await signInWithToken(cs.url, (await created.json()).token);
  });
  after(() => cs?.close());

  const get = (path: string, cookie?: string) => fetch(`${cs.url}${path}`, { headers: cookie ? { cookie } : {}, redirect: "manual" });
  for (const [name, answer] of [
    ["sign-in", () => get("/console/sign-in")],
    ["sign-in, signed out", () => get("/console/sign-in?signedOut=1")],
    ["sign-in with an error", () => consolePost(cs.url, "/console/sign-in", { fields: { token: "vo_x.y" } })],
    ["sessions", () => get("/console/sessions", full.cookie)],
    ["sessions, read-only", () => get("/console/sessions", read.cookie)],
    ["tokens", () => get("/console/tokens", full.cookie)],
    ["tokens, read-only", () => get("/console/tokens", read.cookie)],
    [
      "a new token shown",
      () => consolePost(cs.url, "/console/tokens", { cookie: full.cookie, fields: { csrf: full.csrfToken, name: "x" } }),
    ],
    ["not found", () => get("/console/nowhere", full.cookie)],
    ["a refusal, signed in", () => consolePost(cs.url, "/console/tokens", { cookie: full.cookie, fields: { csrf: "wrong" } })],
    ["a refusal, signed out", () => consolePost(cs.url, "/console/tokens", { fields: {} })],
  ] as const) {
    it(`${name} page`, async () => {
      const res = await answer();
      expect(res.headers.get("content-type")).to.match(/^text\/html/);
      const report = await validator.validateString(await res.text());
      const messages = report.results.flatMap((r) => r.messages.map((m) => `${m.ruleId} line ${m.line}: ${m.message}`));
      expect(messages).to.deep.equal([]);
    });
  }
});
