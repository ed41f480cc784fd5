import { PassThrough } from "node:stream";
import { expect } from "chai";
import { createLogger, logFormat } from "./log-format";

/** What `format`'s logger writes for one info line with a field. */
function written(format: "pretty" | "json"): string {
  const out = new PassThrough();
  let text = "";
  out.on("data", (chunk) => (text += chunk));
  createLogger("info", format, out).info({ route: "/v1/agents" }, "listening");
  return text;
}

describe("log format of vrai dev and vrai serve", () => {
  it("is readable lines for vrai dev at a terminal, JSON for vrai dev through a pipe, and JSON for vrai serve even at a terminal", () => {
    expect(logFormat("dev", true)).to.equal("pretty");
    expect(logFormat("dev", false)).to.equal("json");
    expect(logFormat("serve", true)).to.equal("json");
    expect(logFormat("serve", false)).to.equal("json");
  });

  it("writes a pretty line as words (level, message, fields) and a JSON line as one object", () => {
    const pretty = written("pretty");
    expect(pretty).to.match(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: listening\n\s+route: "\/v1\/agents"\n$/);
    expect(() => JSON.parse(pretty)).to.throw();
    const json = JSON.parse(written("json")) as Record<string, unknown>;
    expect(json).to.include({ level: 30, msg: "listening", route: "/v1/agents" });
  });
});
