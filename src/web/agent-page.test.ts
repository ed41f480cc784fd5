import { expect } from "chai";
import { HtmlValidate } from "html-validate";
import { windowDays, type ScoreResult, type WindowDay } from "../method";
import { renderAgentNotFoundPage, renderAgentPage, type AgentPageView } from "./agent-page";
import { HISTORY_DAYS, historyDays, renderHistoryChart } from "./history-chart";
import { html, htmlToString } from "./html";

const AT = Date.UTC(2026, 10, 30, 10, 0, 0) / 1000; // 2026-11-30T10:00:00Z
const SHA = "3f".repeat(32);
const HOSTILE = "<script>alert(1)</script>";
const CLAIMED_AT = Date.UTC(2026, 10, 3, 12, 0, 0) / 1000; // 2026-11-03T12:00:00Z

/** The 90 days up to 2026-11-30: no score before 2026-11-01, then 200 a day rising by one. */
function historyOf() {
  const last = Date.UTC(2026, 10, 30) / 1000;
  return historyDays(
    Array.from({ length: HISTORY_DAYS }, (_, i) => {
      const day = new Date((last - (HISTORY_DAYS - 1 - i) * 86400) * 1000).toISOString().slice(0, 10);
      return { day, total: day < "2026-11-01" ? null : 200 + Number(day.slice(8)) };
    }),
    CLAIMED_AT,
  );
}

/** A window whose first `beforeClaim` days lie before the claim and the rest have hourly check-ins. */
function windowOf(beforeClaim: number): WindowDay[] {
  return windowDays(AT).map((day, i) =>
    i < beforeClaim
      ? { day, checkins: 0, on_time: 0, coverage_s: 0, before_claim: true }
      : { day, checkins: 24, on_time: i === beforeClaim ? 23 : 24, coverage_s: i === beforeClaim ? 82_800 : 86_400, before_claim: false },
  );
}

function resultOf(overrides: Partial<ScoreResult> = {}): ScoreResult {
  return {
    scoreType: "vrai",
    method: "0.2",
    agent: "ag_1",
    at: "2026-11-30T10:00:00Z",
    total: 227,
    band: "200-399",
    state: "provisional",
    components: {
      identity: { value: 130, proofs: ["github"] },
      reliability: { value: 17, creditS: 298_800 },
      integrity: {
        value: 80,
        penalties: [{ id: "pen_1", code: "rate_abuse", points: 20, addedAt: "2026-11-29T12:00:00Z", expiresAt: "2026-12-29T12:00:00Z" }],
        shield: { active: false },
      },
    },
    window: windowOf(26),
    sha256: SHA,
    ...overrides,
  };
}

function viewOf(overrides: Partial<AgentPageView> = {}): AgentPageView {
  return {
    agent: { id: "ag_1", name: "Weather bot", claimedAt: "2026-11-03T12:00:00Z" },
    today: { day: "2026-11-30", now: "2026-11-30T10:00:00Z", checkins: 10, onTime: 9, firstDailyAt: null },
    score: { id: 42, result: resultOf(), links: { inputs: "/v1/scores/42/inputs", self: "/v1/scores/42" } },
    outages: [
      {
        start: "2026-11-28T03:00:00Z",
        end: "2026-11-28T05:00:00Z",
        declared_at: "2026-11-28T03:10:00Z",
        reason: "daily allowance used up",
      },
      { start: "2026-11-30T08:00:00Z", end: null, declared_at: "2026-11-30T08:05:00Z", reason: "host maintenance" },
    ],
    panels: [],
    history: historyOf(),
    origin: "https://vrai.example",
    ...overrides,
  };
}

/** The text of the page with tags removed, for checks on what a reader sees. */
function textOf(page: string): string {
  return page
    .replace(/<style>[\s\S]*?<\/style>/g, "")
    .replace(/<[^>]+>/g, " ")
    .replace(/\s+/g, " ");
}

describe("renderAgentPage", () => {
  it("shows the agent, the total, the band as a range, the state, the method, the score type and when it was computed", () => {
    const page = renderAgentPage(viewOf());
    expect(page).to.match(/^<!doctype html>/);
    expect(page).to.contain("<title>Weather bot: Vrai Score 227 — Vrai</title>");
    expect(page).to.contain("<h1>Weather bot</h1>");
    expect(page).to.contain('<code id="agent-id">ag_1</code>');
    expect(page).to.contain('<p class="total" id="total">227</p>');
    const text = textOf(page);
    expect(text).to.contain("200–399 : the range of 200 points the total falls in");
    expect(text).to.contain("it is not a grade");
    expect(text).to.contain("Provisional . The agent has not yet checked in on 14 different UTC days since its latest claim.");
    expect(page).to.contain('<dd id="method">0.2</dd>');
    expect(page).to.contain("<code>vrai</code>");
    expect(page).to.contain('<time datetime="2026-11-30T10:00:00Z">2026-11-30 10:00:00 UTC</time>');
  });

  it("says what established means once the state is established", () => {
    const text = textOf(
      renderAgentPage(viewOf({ score: { id: 42, result: resultOf({ state: "established" }), links: { inputs: "/i", self: "/s" } } })),
    );
    expect(text).to.contain(
      "Established . The agent has checked in on 14 different UTC days since its latest claim, and stays established until its next claim.",
    );
  });

  it("shows each component with its value and maximum, the proofs that count and the active penalties", () => {
    const text = textOf(renderAgentPage(viewOf()));
    expect(text).to.contain("Identity 0–250 130 of 250");
    expect(text).to.contain("Claim: 100");
    expect(text).to.contain("GitHub proof: 30");
    expect(text).to.contain("Reliability 0–150 17 of 150");
    // As a person says it (issue #31): hours of on-time coverage, of 720.
    expect(text).to.contain("On-time coverage in the window: 83 hours of the 720 hours (30 days) that earn full Reliability.");
    expect(text).to.contain("Integrity 0–100 80 of 100");
    expect(text).to.contain("rate_abuse −20, added 2026-11-29 12:00:00 UTC , active until 2026-12-29 12:00:00 UTC");
  });

  it("shows Shield as not active, with no value (V7)", () => {
    const page = renderAgentPage(viewOf());
    const shield = /<div class="component inactive" data-component="shield">([\s\S]*?)<\/div>/.exec(page)?.[1] ?? "";
    expect(shield).to.contain("Not active");
    expect(shield).not.to.match(/\d+\s*of\s*\d+/);
    expect(shield).not.to.contain("component-value");
  });

  it("draws the 30 window days as SVG bars and marks the days before the claim (V10)", () => {
    const page = renderAgentPage(viewOf());
    const days = [...page.matchAll(/<g class="day( before-claim)?" data-day="([\d-]+)" data-before-claim="(true|false)"/g)];
    expect(days).to.have.length(30);
    expect(days.map((m) => m[2])).to.deep.equal(windowDays(AT));
    expect(days.filter((m) => m[3] === "true")).to.have.length(26);
    for (const m of days) expect(m[1] === " before-claim").to.equal(m[3] === "true");
    expect(page.match(/<rect class="bar"/g)).to.have.length(30);
    expect(page).to.contain("Before the latest claim: shown, not counted");
    expect(page).to.match(/<svg class="window-chart" role="img" aria-labelledby="window-chart-title window-chart-desc"/);
    expect(page).to.contain('<title id="window-chart-title">');
  });

  it("draws a bar's height as the share of 86,400 s covered and a day before the claim with no bar", () => {
    const page = renderAgentPage(viewOf());
    const bar = (day: string) => new RegExp(`data-day="${day}"[^>]*>[\\s\\S]*?<rect class="bar"[^>]* height="([\\d.]+)"`).exec(page)?.[1];
    expect(bar("2026-10-31")).to.equal("0");
    expect(bar("2026-11-26")).to.equal("115");
    expect(bar("2026-11-27")).to.equal("120");
  });

  it("publishes no count of missed check-ins anywhere (V10)", () => {
    for (const page of [
      renderAgentPage(viewOf()),
      renderAgentPage(viewOf({ score: null })),
      renderAgentNotFoundPage({ reason: "unknown", id: "x" }),
    ]) {
      expect(page.toLowerCase()).not.to.contain("missed");
      expect(page.toLowerCase()).not.to.contain("missing");
      expect(page).not.to.match(/of 24\b/);
    }
  });

  it("lists the declared outages with start, end or open, and declared_at (V4.4)", () => {
    const text = textOf(renderAgentPage(viewOf()));
    expect(text).to.contain("2026-11-28 03:00:00 UTC 2026-11-28 05:00:00 UTC 2026-11-28 03:10:00 UTC daily allowance used up");
    expect(text).to.contain("2026-11-30 08:00:00 UTC open 2026-11-30 08:05:00 UTC host maintenance");
  });

  it("links the score's inputs and JSON and shows the SHA-256 digest in full", () => {
    const page = renderAgentPage(viewOf());
    expect(page).to.contain('<a id="inputs-link" href="/v1/scores/42/inputs">');
    expect(page).to.contain('<a id="score-link" href="/v1/scores/42">');
    expect(page).to.contain(`<code class="digest" id="sha256">${SHA}</code>`);
  });

  it("escapes every value it puts into the page", () => {
    const result = resultOf({ agent: HOSTILE });
    result.components.integrity.penalties[0].code = HOSTILE as never;
    const page = renderAgentPage(
      viewOf({
        agent: { id: `ag_1"><script>alert(2)</script>`, name: HOSTILE, claimedAt: "2026-11-03T12:00:00Z" },
        score: { id: 42, result, links: { inputs: `/x" onclick="alert(3)`, self: "/v1/scores/42" } },
        outages: [{ start: "2026-11-28T03:00:00Z", end: null, declared_at: "2026-11-28T03:10:00Z", reason: HOSTILE }],
      }),
    );
    expect(page).not.to.contain("<script");
    expect(page).not.to.contain('" onclick="');
    expect(page).to.contain("<title>&lt;script&gt;alert(1)&lt;/script&gt;: Vrai Score 227 — Vrai</title>");
    expect(page).to.contain("<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>");
    expect(page).to.contain("&lt;script&gt;alert(2)&lt;/script&gt;");
    expect(page).to.contain('href="/x&quot; onclick=&quot;alert(3)"');
  });

  it("shows today's check-ins so far, and none of the first daily score once one exists (issue #31)", () => {
    const text = textOf(renderAgentPage(viewOf()));
    expect(text).to.contain(
      "Today 10 check-ins counted today (2026-11-30, UTC), 9 on time. The day's check-ins count in the daily score computed at the next 00:00 UTC.",
    );
    expect(text).to.not.contain("first daily score");
    const none = textOf(
      renderAgentPage(viewOf({ today: { day: "2026-11-30", now: "2026-11-30T10:00:00Z", checkins: 0, onTime: 0, firstDailyAt: null } })),
    );
    expect(none).to.contain("No check-in counted yet today (2026-11-30, UTC).");
  });

  it("says when the first daily score of the claim comes while it has not, with or without a score yet (issue #31)", () => {
    const today = { day: "2026-11-03", now: "2026-11-03T12:30:00Z", checkins: 1, onTime: 0, firstDailyAt: "2026-11-04T00:00:00Z" };
    for (const score of [null, viewOf().score]) {
      const text = textOf(renderAgentPage(viewOf({ score, today })));
      expect(text).to.contain(
        "The first daily score of this claim is computed at 2026-11-04 00:00:00 UTC , in 11 h 30 min, then every day at 00:00 UTC, each anchored on chain.",
      );
      expect(text).to.contain("1 check-in counted today (2026-11-03, UTC), 0 on time.");
    }
    const due = textOf(renderAgentPage(viewOf({ today: { ...today, now: "2026-11-04T00:00:20Z" } })));
    expect(due).to.contain("computed at 2026-11-04 00:00:00 UTC (due: the daily recompute runs at 00:00 UTC and may still be running)");
  });

  it("says in words when every day of the 30-day window is before the claim, not only by hatching (issue #31)", () => {
    const fresh = resultOf({ window: windowOf(30) });
    const text = textOf(renderAgentPage(viewOf({ score: { id: 1, result: fresh, links: { inputs: "/i", self: "/s" } } })));
    expect(text).to.contain(
      "Every one of these 30 days ended before the agent's latest claim ( 2026-11-03 12:00:00 UTC ), so none of them counts yet",
    );
    expect(textOf(renderAgentPage(viewOf()))).to.not.contain("Every one of these 30 days ended before");
  });

  it("uses the agent id when the agent has no name", () => {
    const page = renderAgentPage(viewOf({ agent: { id: "ag_7", name: null, claimedAt: "2026-11-03T12:00:00Z" } }));
    expect(page).to.contain("<h1>ag_7</h1>");
  });

  it("says so when the agent has no score yet", () => {
    const page = renderAgentPage(viewOf({ score: null }));
    expect(page).to.contain("<title>Weather bot: no score yet — Vrai</title>");
    expect(page).to.contain("No score yet");
    expect(page).not.to.contain('id="total"');
  });

  it("shows other score types only in their own labelled panels, after the Vrai score", () => {
    const plain = renderAgentPage(viewOf());
    expect(plain).not.to.contain("Other scores");
    const page = renderAgentPage(
      viewOf({
        panels: [
          {
            scoreType: "sdk-derived",
            heading: "AVIP-TRU Execution Score",
            scale: "0 to 100",
            body: html`<p class="panel-total">${"88<"}</p>`,
          },
        ],
      }),
    );
    expect(page).to.contain('<section class="panel" data-score-type="sdk-derived" aria-labelledby="panel-sdk-derived">');
    expect(page).to.contain('<h3 id="panel-sdk-derived">AVIP-TRU Execution Score</h3>');
    expect(page).to.contain('<p class="panel-total">88&lt;</p>');
    expect(page.indexOf("Other scores")).to.be.greaterThan(page.indexOf('id="sha256"'));
    expect(page).to.contain('<p class="total" id="total">227</p>');
  });

  it("is a pure function of its view", () => {
    expect(renderAgentPage(viewOf())).to.equal(renderAgentPage(viewOf()));
  });
});

describe("renderAgentNotFoundPage", () => {
  it("says that no agent has the id, escaped", () => {
    const page = renderAgentNotFoundPage({ reason: "unknown", id: HOSTILE });
    expect(page).to.contain("<title>Agent not found — Vrai</title>");
    expect(page).to.contain("Vrai has no agent with the id <code>&lt;script&gt;alert(1)&lt;/script&gt;</code>.");
  });

  it("says why an invalid id cannot name an agent, and shortens a very long one", () => {
    const page = renderAgentNotFoundPage({ reason: "invalid", id: "x".repeat(5000) });
    expect(page).to.contain("is not a valid agent id");
    expect(page).to.contain(`${"x".repeat(80)}…`);
    expect(page).not.to.contain("x".repeat(81));
  });

  it("says that the agent was unclaimed by its owner (issue #29), escaped", () => {
    const page = renderAgentNotFoundPage({ reason: "unclaimed", id: HOSTILE });
    expect(page).to.contain("<title>Agent unclaimed — Vrai</title>").and.contain("<h1>Agent unclaimed</h1>");
    expect(page).to.contain("The agent <code>&lt;script&gt;alert(1)&lt;/script&gt;</code> was unclaimed by its owner");
  });

  it("charts the 90 days of daily totals as inline SVG, the days before the latest claim marked", () => {
    const days = historyOf();
    expect(days).to.have.length(90);
    expect(days[0].day).to.equal("2026-09-02");
    // 2026-11-02 ended before the claim of 2026-11-03 12:00; 2026-11-03 did not.
    expect(
      days
        .filter((d) => d.beforeClaim)
        .map((d) => d.day)
        .slice(-2),
    ).to.deep.equal(["2026-11-01", "2026-11-02"]);
    expect(days.filter((d) => d.beforeClaim)).to.have.length(62);
    const page = renderAgentPage(viewOf());
    expect(page).to.contain('<svg class="history-chart" viewBox="0 0 720 220" role="img" aria-labelledby="history-title" data-days="90">');
    expect(page.match(/<rect class="before-claim"/g)).to.have.length(62);
    expect(page.match(/<circle class="point"/g)).to.have.length(30);
    expect(page).to.contain("<title>2026-11-02: 202 (before the latest claim)</title>");
    expect(page).to.contain("<title>2026-11-30: 230</title>");
    expect(page).to.contain("<td>2026-09-02 (before the latest claim)</td><td>no daily score</td>");
    expect(page).not.to.contain("<script");
  });

  it("breaks the line on a day without a score", () => {
    const chart = renderHistoryChart([
      { day: "2026-11-01", total: 200, beforeClaim: false },
      { day: "2026-11-02", total: 210, beforeClaim: false },
      { day: "2026-11-03", total: null, beforeClaim: false },
      { day: "2026-11-04", total: 220, beforeClaim: false },
      { day: "2026-11-05", total: 230, beforeClaim: false },
    ]);
    expect(htmlToString(chart).match(/<polyline/g)).to.have.length(2);
  });

  describe("what the agent says of itself, from its ERC-8004 registration file (issue #27)", () => {
    const declared = {
      identity: "8453:0x8004a169fb4a3325136eb29fa0ceb6d2e539a432:42",
      uri: "https://agent.example.org/registration.json",
      readAt: "2026-11-30T09:00:00Z",
      status: "read" as const,
      reason: null,
      name: "Research Agent",
      description: "Finds papers.",
      image: "https://agent.example.org/logo.png",
      imageNotHttps: false,
      services: [{ name: "A2A", endpoint: "https://agent.example.org/.well-known/agent-card.json", version: "0.3.0" }],
    };
    const sectionOf = (page: string) => /<section id="self-declared"[\s\S]*?<\/section>/.exec(page)?.[0] ?? "";

    it("shows it in a section of its own, marked self-declared, after every score, with the image's https URL as text and no image loaded", () => {
      const page = renderAgentPage(viewOf({ selfDeclared: declared }));
      const section = sectionOf(page);
      expect(textOf(section)).to.include("Self-declared").and.include("checks none of it").and.include("no part of the Vrai Score");
      expect(section).to.contain('<dd id="registered-name">Research Agent</dd>');
      expect(section).to.contain('<dd id="registered-description">Finds papers.</dd>');
      expect(section).to.contain("<li><strong>A2A</strong> 0.3.0: <code>https://agent.example.org/.well-known/agent-card.json</code></li>");
      expect(textOf(section)).to.include("https://agent.example.org/logo.png (not shown: this page loads no image from other sites)");
      expect(section).not.to.contain("<img");
      // Never mixed with what Vrai verified: after the score, its window, its proof links and the other scores.
      expect(page.indexOf('id="self-declared"')).to.be.greaterThan(page.indexOf('id="badge-heading"'));
      expect(renderAgentPage(viewOf())).not.to.contain('id="self-declared"');
    });

    it("names no image that is not https, and says why nothing is shown of a file refused or not read", () => {
      const http = sectionOf(renderAgentPage(viewOf({ selfDeclared: { ...declared, image: null, imageNotHttps: true } })));
      expect(textOf(http)).to.include("declared, not over https: not shown");
      const refused = sectionOf(
        renderAgentPage(
          viewOf({
            selfDeclared: {
              ...declared,
              status: "refused",
              reason: "it is larger than 65536 bytes",
              name: null,
              description: null,
              services: [],
            },
          }),
        ),
      );
      expect(refused)
        .to.contain('data-status="refused"')
        .and.contain('<span id="registration-reason">it is larger than 65536 bytes</span>');
      expect(refused).not.to.contain("registered-name");
      const ipfs = sectionOf(
        renderAgentPage(viewOf({ selfDeclared: { ...declared, status: "unread", uri: "ipfs://bafy/agent.json", reason: "no gateway" } })),
      );
      expect(textOf(ipfs)).to.include("ipfs://bafy/agent.json was not read");
    });

    it("is valid HTML, read or refused (html-validate, as every page of the site)", async () => {
      const validator = new HtmlValidate({ extends: ["html-validate:standard", "html-validate:document"] });
      for (const selfDeclared of [declared, { ...declared, status: "refused" as const, reason: "not JSON", services: [] }]) {
        const report = await validator.validateString(renderAgentPage(viewOf({ selfDeclared })));
        expect(report.results.flatMap((r) => r.messages.map((m) => `${m.ruleId}: ${m.message}`))).to.deep.equal([]);
      }
    });

    it("escapes everything the agent wrote, and cuts a very long agentURI", () => {
      const page = renderAgentPage(
        viewOf({
          selfDeclared: {
            ...declared,
            identity: HOSTILE,
            uri: `data:application/json;base64,${"A".repeat(5000)}`,
            name: HOSTILE,
            description: `"><img src=x onerror=alert(1)>`,
            image: `https://x.example/"><script>alert(4)</script>`,
            services: [{ name: HOSTILE, endpoint: "javascript:alert(5)", version: HOSTILE }],
          },
        }),
      );
      expect(page).not.to.contain("<script").and.not.to.contain("<img src=x");
      expect(sectionOf(page)).to.contain('<dd id="registered-name">&lt;script&gt;alert(1)&lt;/script&gt;</dd>');
      expect(sectionOf(page)).not.to.contain('href="javascript');
      expect(/<code id="registration-uri">([^<]*)<\/code>/.exec(page)?.[1]).to.have.length(201);
    });
  });

  it("gives a copyable badge snippet in Markdown and HTML with absolute links", () => {
    const page = renderAgentPage(viewOf({ agent: { id: "ag_1", name: HOSTILE, claimedAt: "2026-11-03T12:00:00Z" } }));
    expect(page).to.contain(
      '<code id="badge-markdown">[![Vrai Score](https://vrai.example/agents/ag_1/badge.svg)](https://vrai.example/agents/ag_1)</code>',
    );
    expect(page).to.contain(
      '<code id="badge-html">&lt;a href="https://vrai.example/agents/ag_1"&gt;' +
        '&lt;img src="https://vrai.example/agents/ag_1/badge.svg" alt="Vrai Score"&gt;&lt;/a&gt;</code>',
    );
    expect(page).to.contain('<img src="/agents/ag_1/badge.svg" alt="Vrai badge of this agent" height="20">');
    expect(page).not.to.contain(HOSTILE);
  });
});
