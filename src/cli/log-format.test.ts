import { PassThrough } from "node:stream";
import { expect } from "chai";
import { createLogger, logFormat, readableMessage } from "./log-format";

/** What `format`'s logger writes for an info line with fields, then an error. */
function written(format: "pretty" | "json"): string {
  const out = new PassThrough();
  let text = "";
  out.on("data", (chunk) => (text += chunk));
  const logger = createLogger("info", format, out);
  logger.info({ route: "/v1/agents", pass: { created: ["2026-11-03", "2026-11-04"], dropped: [] }, stored: 2 }, "listening");
  logger.error({ err: new Error("connect ECONNREFUSED\n    at somewhere") }, "anchoring failed; retrying");
  return text;
}

describe("log format of vrai dev and vrai serve", () => {
  it("is readable lines for vrai dev, at a terminal and through a pipe alike (issue #31), and JSON for vrai serve even at a terminal", () => {
    expect(logFormat("dev", true)).to.equal("pretty");
    expect(logFormat("dev", false)).to.equal("pretty");
    expect(logFormat("serve", true)).to.equal("json");
    expect(logFormat("serve", false)).to.equal("json");
  });

  it("writes each entry as one line of words (level, message, then its fields), never JSON, and a JSON line as one object", () => {
    const lines = written("pretty").split("\n");
    expect(lines).to.deep.equal([
      `${lines[0].slice(0, 15)}INFO: listening (route /v1/agents, pass created 2026-11-03, 2026-11-04, dropped none, stored 2)`,
      `${lines[1].slice(0, 15)}ERROR: anchoring failed; retrying (err connect ECONNREFUSED at somewhere)`,
      "",
    ]);
    for (const line of lines.slice(0, 2)) {
      expect(line).to.match(/^\[\d\d:\d\d:\d\d\.\d{3}\] /);
      expect(line).to.not.match(/[{}"]/);
    }
    const json = written("json")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(json[0]).to.include({ level: 30, msg: "listening", route: "/v1/agents" });
    expect(json[1]).to.include({ level: 50 });
  });

  it("says a field's value in words: text, numbers, lists (none when empty), errors by their message, objects by their fields", () => {
    expect(readableMessage({ msg: "score cache filled", level: 30, time: 1, pid: 2, hostname: "h", agents: 0, enabled: true })).to.equal(
      "score cache filled (agents 0, enabled true)",
    );
    expect(readableMessage({ msg: "plain" })).to.equal("plain");
    expect(
      readableMessage({ msg: "m", err: { type: "Error", message: "a\nb", stack: "Error: a" }, list: [], nested: { a: 1, b: [2, 3] } }),
    ).to.equal("m (err a b, list none, nested a 1, b 2, 3)");
  });
});
