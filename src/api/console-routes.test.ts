/**
 * The console's pages of agents, proofs and webhooks over HTTP (issue #29), signed in through the console's real
 * sign-in: every answer is a page (refusals in words, never JSON), every change goes through the service the JSON API
 * calls (a key made in the console checks in through the API), lists are keyset-paged, and a read-only session
 * changes nothing.
 */
import { expect } from "chai";
import { HtmlValidate } from "html-validate";
import { privateKeyToAccount } from "viem/accounts";
import { apiClient } from "../test-helpers/api-client";
import { consolePost, signInWithToken, startConsoleServer, type ConsoleServer, type SignedInClient } from "../test-helpers/console";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const validator = new HtmlValidate({ extends: ["html-validate:standard", "html-validate:document"] });

describe("the console's agents, proofs and webhooks pages over HTTP (issue #29)", function () {
  this.timeout(60_000);
  let cs: ConsoleServer;
  let owner: { ownerId: string; token: string };
  let session: SignedInClient;
  const { call } = apiClient(() => cs.url);

  before(async () => {
    cs = await startConsoleServer({ start: T0 });
    owner = await cs.createOwner();
    session = await signInWithToken(cs.url, owner.token);
  });
  after(() => cs?.close());

  const get = async (path: string, cookie = session.cookie) => {
    const res = await fetch(`${cs.url}${path}`, { headers: { cookie }, redirect: "manual" });
    return {
      status: res.status,
      type: res.headers.get("content-type") ?? "",
      html: await res.text(),
      location: res.headers.get("location"),
    };
  };
  const post = async (path: string, fields: Record<string, string> = {}, client = session) => {
    const res = await consolePost(cs.url, path, { cookie: client.cookie, fields: { csrf: client.csrfToken, ...fields } });
    return {
      status: res.status,
      type: res.headers.get("content-type") ?? "",
      html: await res.text(),
      location: res.headers.get("location"),
    };
  };
  /** The text of the page's first element matching a `data-field` or an id, tags stripped. */
  const field = (html: string, pattern: RegExp) =>
    pattern
      .exec(html)?.[1]
      ?.replace(/<[^>]+>/g, "")
      .trim();
  const valid = async (html: string) => {
    const report = await validator.validateString(html);
    return report.results.flatMap((r) => r.messages.map((m) => `${m.ruleId} line ${m.line}: ${m.message}`));
  };

  it("creates an agent: its key is shown once with the heartbeat command, and it checks in through the API", async () => {
    const created = await post("/console/agents", { name: "Console <agent>" });
    expect(created.status).to.equal(201);
    expect(created.type).to.match(/^text\/html/);
    const key = field(created.html, /<pre class="copyable" id="agent-key"[^>]*>([^<]+)<\/pre>/) ?? "";
    const agentId = /^va_([\w-]+)\./.exec(key)?.[1] ?? "";
    expect(agentId).to.match(/^agt_/);
    expect(created.html).to.contain(`--agent ${agentId} --key-file vrai-agent.key`).and.contain("Console &lt;agent&gt;");
    expect(await valid(created.html)).to.deep.equal([]);
    const res = await fetch(`${cs.url}/v1/agents/${agentId}/checkins`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "idempotency-key": "console-1" },
    });
    expect(res.status).to.equal(201);
    // 3600 s, or 7200 while the service is busy (V3.3: a loaded test machine may make it so).
    const { next_heartbeat_s: next } = await res.json();
    const page = await get(`/console/agents/${agentId}`);
    expect(page.status).to.equal(200);
    expect(field(page.html, /data-field="last-checkin">(.*?)<\/dd>/)).to.equal("2026-11-02 10:00:00 UTC");
    // V3.5: the previous counted check-in's arrival + next_heartbeat_s + 600.
    const deadline = new Date((T0 + next + 600) * 1000).toISOString().replace("T", " ").replace(".000Z", " UTC");
    expect(field(page.html, /data-field="deadline">(.*?)<\/dd>/)).to.equal(deadline);
    expect(field(page.html, /data-field="total">(.*?)<\/dd>/)).to.equal("200");
    expect(await valid(page.html)).to.deep.equal([]);
  });

  it("says what is wrong in the page, never as JSON: an empty name, another owner's agent, an unknown one", async () => {
    const empty = await post("/console/agents", { name: "  " });
    expect(empty.status).to.equal(400);
    expect(empty.type).to.match(/^text\/html/);
    expect(empty.html).to.contain("give the agent a name").and.contain('role="alert"');
    const { agent } = await apiClient(() => cs.url).ownerWithAgent();
    const foreign = await get(`/console/agents/${agent.agentId}`);
    expect(foreign.status).to.equal(403);
    expect(foreign.type).to.match(/^text\/html/);
    expect(foreign.html).to.contain("belongs to another owner");
    const rotate = await post(`/console/agents/${agent.agentId}/rotate-key`);
    expect(rotate.status).to.equal(403);
    expect(rotate.html).to.contain("belongs to another owner");
    const unknown = await get("/console/agents/agt_nobody");
    expect(unknown.status).to.equal(404);
    expect(unknown.html).not.to.match(/^\s*\{/);
  });

  it("rotates a key in the console: the old key is refused at once", async () => {
    const claim = (await call("POST", "/v1/agents", owner.token, { name: "rotated" })).json;
    const rotated = await post(`/console/agents/${claim.agentId}/rotate-key`);
    expect(rotated.status).to.equal(200);
    const key = field(rotated.html, /<pre class="copyable" id="agent-key"[^>]*>([^<]+)<\/pre>/) ?? "";
    expect(key)
      .to.match(new RegExp(`^va_${claim.agentId}\\.`))
      .and.not.equal(claim.agentKey);
    const checkIn = (k: string, idem: string) =>
      fetch(`${cs.url}/v1/agents/${claim.agentId}/checkins`, {
        method: "POST",
        headers: { authorization: `Bearer ${k}`, "idempotency-key": idem },
      });
    expect((await checkIn(claim.agentKey, "old")).status).to.equal(401);
    expect((await checkIn(key, "new")).status).to.equal(201);
  });

  it("unclaims an agent: a page says what it does, its box must be ticked, then the agents page says it is done (issue #29)", async () => {
    const claim = (await call("POST", "/v1/agents", owner.token, { name: "let go" })).json;
    const id = claim.agentId;
    expect((await get(`/console/agents/${id}`)).html).to.contain(`href="/console/agents/${id}/unclaim"`);
    const asked = await get(`/console/agents/${id}/unclaim`);
    expect(asked.status).to.equal(200);
    expect(asked.html)
      .to.contain('<input type="checkbox" id="unclaim-confirm" name="confirm" value="yes" required>')
      .and.contain("I understand the key stops working and the domain and ERC-8004 proofs are removed");
    expect(await valid(asked.html)).to.deep.equal([]);

    // Not ticked (no browser stops it here), and from a read-only session: refused in the page, nothing done.
    const unticked = await post(`/console/agents/${id}/unclaim`);
    expect(unticked.status).to.equal(400);
    expect(unticked.type).to.match(/^text\/html/);
    expect(unticked.html).to.contain("tick the box").and.contain('role="alert"');
    expect(await valid(unticked.html)).to.deep.equal([]);
    const { token } = await cs.server.service.ownerTokens.createReadToken(owner.ownerId, "unclaim reader");
    const reader = await signInWithToken(cs.url, token);
    const readOnly = await post(`/console/agents/${id}/unclaim`, { confirm: "yes" }, reader);
    expect(readOnly.status).to.equal(403);
    expect(readOnly.type).to.match(/^text\/html/);
    expect((await call("GET", `/v1/agents/${id}/score`)).status).to.equal(200);

    const done = await post(`/console/agents/${id}/unclaim`, { confirm: "yes" });
    expect(done.status).to.equal(303);
    expect(done.location).to.equal(`/console/agents?unclaimed=${id}`);
    const list = await get(done.location ?? "");
    expect(list.status).to.equal(200);
    expect(field(list.html, /role="status"[^>]*>(.*?)<\/div>/s)).to.contain(`Agent ${id} is unclaimed: its key no longer works`);
    expect(list.html).to.not.contain(`data-agent="${id}"`);
    expect(await valid(list.html)).to.deep.equal([]);
    const checkIn = await fetch(`${cs.url}/v1/agents/${id}/checkins`, {
      method: "POST",
      headers: { authorization: `Bearer ${claim.agentKey}`, "idempotency-key": "after" },
    });
    expect(checkIn.status).to.equal(401);
    // Its pages now say why they cannot be shown; a second post too.
    for (const answer of [await get(`/console/agents/${id}`), await post(`/console/agents/${id}/unclaim`, { confirm: "yes" })]) {
      expect(answer.status).to.equal(404);
      expect(answer.type).to.match(/^text\/html/);
      expect(answer.html).to.contain("this agent is unclaimed");
    }
    // The notice is said only of an agent the viewer unclaimed: not of a claimed one, nor of another owner's.
    const { owner: foreignOwner, agent: foreign } = await apiClient(() => cs.url).ownerWithAgent();
    expect((await call("POST", `/v1/agents/${foreign.agentId}/unclaim`, foreignOwner.token, {})).status).to.equal(200);
    for (const other of [foreign.agentId, (await call("POST", "/v1/agents", owner.token, {})).json.agentId]) {
      expect((await get(`/console/agents?unclaimed=${other}`)).html).to.not.contain("is unclaimed");
    }
  });

  it("pages the agents by keyset: 20 a page, the next page after the last shown, none twice", async () => {
    const other = await cs.createOwner();
    for (let i = 0; i < 23; i++) await call("POST", "/v1/agents", other.token, { name: `agent ${i}` });
    const client = await signInWithToken(cs.url, other.token);
    const ids = (html: string) => [...html.matchAll(/data-agent="([\w-]+)"/g)].map((m) => m[1]);
    const first = await get("/console/agents", client.cookie);
    expect(ids(first.html)).to.have.length(20);
    const next = /<a rel="next" href="([^"]+)"/.exec(first.html)?.[1]?.replace(/&amp;/g, "&") ?? "";
    expect(next).to.match(/^\/console\/agents\?cursor=/);
    const second = await get(next, client.cookie);
    expect(ids(second.html)).to.have.length(3);
    expect(ids(second.html).filter((id) => ids(first.html).includes(id))).to.deep.equal([]);
    expect(second.html).not.to.contain('rel="next"');
    const bad = await get("/console/agents?cursor=bm90LWEtY3Vyc29y", client.cookie);
    expect(bad.status).to.equal(400);
    expect(bad.html).to.contain("not a cursor of this list");
  });

  it("starts a proof of each offered kind with its instructions, and says why evidence is refused", async () => {
    const proofs = await get("/console/proofs");
    expect(proofs.status).to.equal(200);
    expect([...proofs.html.matchAll(/data-proof-kind="(\w+)"/g)].map((m) => m[1])).to.deep.equal(["github", "wallet"]);
    expect(await valid(proofs.html)).to.deep.equal([]);
    const bad = await post("/console/proofs/challenges", { kind: "github", subject: "not a login!" });
    expect(bad.status).to.equal(400);
    expect(bad.html).to.contain('role="alert"');
    const account = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
    const started = await post("/console/proofs/challenges", { kind: "wallet", subject: account.address });
    expect(started.status).to.equal(303);
    const challengePath = started.location ?? "";
    expect(challengePath).to.match(/^\/console\/proofs\/challenges\/[\w-]+$/);
    const challenge = await get(challengePath);
    expect(challenge.html).to.contain("data-wallet-sign").and.contain(`name="address" value="${account.address.toLowerCase()}"`);
    expect(await valid(challenge.html)).to.deep.equal([]);
    const challengeId = challengePath.split("/").at(-1) ?? "";
    const refused = await post("/console/proofs", {
      challengeId,
      address: account.address,
      signature: `0x${"11".repeat(65)}`,
      signatureType: "eip191",
    });
    expect(refused.status).to.equal(422);
    expect(refused.html)
      .to.contain("is not a valid eip191 signature")
      .and.contain(`0x${"11".repeat(65)}`);
    const message =
      /data-message="([^"]+)"/
        .exec(challenge.html)?.[1]
        ?.replace(/&#39;/g, "'")
        .replace(/&quot;/g, '"')
        .replace(/&amp;/g, "&") ?? "";
    const signature = await account.signMessage({ message });
    const added = await post("/console/proofs", { challengeId, address: account.address, signature, signatureType: "eip191" });
    expect(added.status).to.equal(200);
    expect(added.html).to.contain(`Proof verified: Wallet ${account.address.toLowerCase()}`);
    const again = await post("/console/proofs", { challengeId, address: account.address, signature, signatureType: "eip191" });
    expect(again.status).to.equal(409);
    expect(again.html).to.contain("already answered");
  });

  it("adds a webhook endpoint (secret once), refuses a bad URL in words, and deletes it", async () => {
    const bad = await post("/console/webhooks", { url: "ftp://example.org/hook", events: "agent.late" });
    expect(bad.status).to.equal(400);
    expect(bad.html).to.contain("ftp:").and.contain('value="ftp://example.org/hook"');
    // An address, not a name: nothing is resolved, and nothing is sent to it (it asks for agent.late only, and is deleted).
    const created = await post("/console/webhooks", { url: "https://1.1.1.1/vrai", events: "agent.late", description: "pager" });
    expect(created.status).to.equal(201);
    expect(created.html).to.match(/id="webhook-secret"[^>]*>whsec_/);
    const id = /\/console\/webhooks\/(whk_[\w-]+)\/delete/.exec(created.html)?.[1] ?? "";
    expect(await valid(created.html)).to.deep.equal([]);
    const shown = await get(`/console/webhooks/${id}`);
    expect(shown.html).not.to.contain("whsec_");
    const deleted = await post(`/console/webhooks/${id}/delete`);
    expect(deleted.status).to.equal(200);
    expect(deleted.html).to.contain("Deleted: https://1.1.1.1/vrai");
  });

  it("a read-only session sees the pages with no form that writes, and its writes are refused", async () => {
    const { token } = await cs.server.service.ownerTokens.createReadToken(owner.ownerId, "reader");
    const reader = await signInWithToken(cs.url, token);
    const agents = await get("/console/agents", reader.cookie);
    expect(agents.status).to.equal(200);
    expect([...agents.html.matchAll(/<form method="post" action="([^"]+)"/g)].map((m) => m[1])).to.deep.equal(["/console/sign-out"]);
    expect(agents.html).to.contain("read-only");
    const refused = await post("/console/agents", { name: "nope" }, reader);
    expect(refused.status).to.equal(403);
    expect(refused.type).to.match(/^text\/html/);
  });
});
