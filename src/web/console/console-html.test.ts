/**
 * The console's pages of agents, proofs and webhooks as rendered (issue #29): valid HTML for a full and a read-only
 * session, no form that writes for a read-only one, every proof kind's challenge page from the table of kinds, and
 * text a person typed shown as text.
 */
import { expect } from "chai";
import { HtmlValidate } from "html-validate";
import { OFFERED_PROOF_KINDS, proofKindModule } from "../../service/proofs/kinds";
import { createChallenge } from "../../service/proofs/challenge";
import { NO_PROOF_CONTEXT } from "../../service/proofs/types";
import type { AgentOverview } from "../../service/owner-agents";
import type { WebhookEndpointRow } from "../../store/webhooks";
import { renderAgentKeyPage, renderAgentPage, renderAgentsPage } from "./agents-page";
import type { ConsoleViewer } from "./common";
import { offeredKindViews, renderChallengePage, renderProofsPage } from "./proofs-page";
import { renderWebhookPage, renderWebhooksPage } from "./webhooks-page";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const validator = new HtmlValidate({ extends: ["html-validate:standard", "html-validate:document"] });
const full: ConsoleViewer = { ownerId: "own_1", scope: "full", csrfToken: "c".repeat(64) };
const read: ConsoleViewer = { ...full, scope: "read" };

const overview: AgentOverview = {
  agent: {
    id: "agt_1",
    name: "<script>alert(1)</script>",
    ownerId: "own_1",
    claimId: 1,
    claimedAt: T0,
    keyHash: "",
    last: { arrival: T0 + 60, nextHeartbeatS: 3600, dayDigest: "" },
    lateDeadline: null,
    releasedAt: null,
    createdAt: T0,
  },
  score: { id: 1, at: T0, total: 270, band: "200-399", state: "provisional" },
  nextDeadline: T0 + 60 + 4200,
  proofs: [
    {
      proof: {
        id: "prf_1",
        kind: "domain",
        ownerId: "own_1",
        agentId: "agt_1",
        subject: "agent.example.org",
        binding: "domain:agent.example.org",
        evidence: {},
        verifiedAt: T0,
        lastCheckedAt: T0,
        consecutiveFailures: 0,
        removedAt: null,
        removedReason: null,
      },
      nextRecheckAt: T0 + 7 * 86400,
    },
  ],
  publishing: { enabled: false, changedAt: null, reason: null, target: null, feedback: [] },
};
const webhooks = { endpoints: 1, enabled: 1, failing: 0 };
const endpoint: WebhookEndpointRow = {
  id: "whk_1",
  ownerId: "own_1",
  url: "https://hooks.example.org/<b>",
  description: "<i>alerts</i>",
  events: ["agent.late"],
  secret: "sealed",
  previousSecret: null,
  previousSecretUntil: null,
  createdAt: T0,
  updatedAt: T0,
  failingSince: null,
  disabledAt: null,
  disabledReason: null,
};
const kinds = offeredKindViews();

/** Every page, as `viewer` sees it. */
function pages(viewer: ConsoleViewer): Array<[string, string]> {
  const challenges = OFFERED_PROOF_KINDS.map((kind): [string, string] => {
    const module = proofKindModule(kind);
    const agentId = kinds.find((k) => k.kind === kind)?.belongsTo === "agent" ? "agt_1" : null;
    const c = createChallenge({ kind, subject: module.subjectExample, ownerId: "own_1", agentId, now: T0, ttlS: 3600 });
    return [`challenge ${kind}`, renderChallengePage(200, { viewer, challenge: { ...c, usedAt: null, context: NO_PROOF_CONTEXT } }).text];
  });
  return [
    ["agents", renderAgentsPage(200, { viewer, agents: [overview], nextCursor: "abc", later: true, webhooks }).text],
    [
      "agents, none",
      renderAgentsPage(200, { viewer, agents: [], nextCursor: null, later: false, webhooks, notice: { kind: "error", text: "x" } }).text,
    ],
    ["agent", renderAgentPage(200, { viewer, overview, webhooks, kinds, notice: { kind: "done", text: "done" } }).text],
    [
      "key",
      renderAgentKeyPage(201, {
        viewer,
        agentId: "agt_1",
        name: "a",
        agentKey: "va_agt_1.k_x",
        origin: "http://127.0.0.1:8080",
        rotated: false,
      }).text,
    ],
    ["proofs", renderProofsPage(200, { viewer, proofs: overview.proofs, kinds }).text],
    ...challenges,
    ["webhooks", renderWebhooksPage(200, { viewer, endpoints: [endpoint], nextCursor: null, later: false }).text],
    ["webhook", renderWebhookPage(201, { viewer, endpoint, attempts: [], nextCursor: null, later: false, secret: "whsec_x" }).text],
  ];
}

describe("the console's agents, proofs and webhooks pages as rendered (issue #29)", () => {
  for (const [who, viewer] of [
    ["a full session", full],
    ["a read-only session", read],
  ] as const) {
    it(`are valid HTML for ${who}, and show what was typed as text`, async () => {
      for (const [name, text] of pages(viewer)) {
        const report = await validator.validateString(text);
        const messages = report.results.flatMap((r) => r.messages.map((m) => `${m.ruleId} line ${m.line}: ${m.message}`));
        expect(messages, name).to.deep.equal([]);
        expect(text, name).not.to.contain("<script>alert").and.not.to.contain("<b>").and.not.to.contain("<i>alerts");
      }
    });
  }

  it("shows a read-only session no form that changes anything, and a full one a form with the session's token", () => {
    for (const [name, text] of pages(read)) {
      const actions = [...text.matchAll(/<form method="post" action="([^"]+)"/g)].map((m) => m[1]).filter((a) => a !== "/console/sign-out");
      expect(actions, name).to.deep.equal([]);
    }
    const agent = pages(full).find(([name]) => name === "agent")?.[1] ?? "";
    expect(agent).to.contain('action="/console/agents/agt_1/rotate-key"').and.contain(`name="csrf" value="${full.csrfToken}"`);
  });

  it("derives the proof forms from the table of kinds: owner-level on the proofs page, agent-level on the agent's", () => {
    const formsOf = (text: string) => [...text.matchAll(/data-proof-kind="(\w+)"/g)].map((m) => m[1]);
    const byWho = (who: "owner" | "agent") => kinds.filter((k) => k.belongsTo === who).map((k) => k.kind);
    const all = pages(full);
    expect(formsOf(all.find(([n]) => n === "proofs")?.[1] ?? "")).to.deep.equal(byWho("owner"));
    expect(formsOf(all.find(([n]) => n === "agent")?.[1] ?? "")).to.deep.equal(byWho("agent"));
    // A signed kind's form is signed by the wallet when its signature is left empty; a published kind's names where.
    const wallet = all.find(([n]) => n === "challenge wallet")?.[1] ?? "";
    expect(wallet).to.match(/<form [^>]*data-wallet-sign data-message="Vrai identity proof\nI control the wallet 0x/);
    expect(wallet).to.match(/<input type="text" id="evidence-signature" name="signature" value=""\s+autocomplete/);
    const domain = all.find(([n]) => n === "challenge domain")?.[1] ?? "";
    expect(domain).to.contain('data-publication="dns-txt"').and.contain("<code>_vrai.agent.example.org</code>");
    expect(domain).to.contain('<input type="hidden" name="domain" value="agent.example.org">');
  });
});
