import { expect } from "chai";
import { InvalidInputError } from "../errors";
import { parseFlags } from "./flags";

const USAGE = "recompute [--verify] [--day YYYY-MM-DD]";
const OPTIONS = { day: { type: "string" }, verify: { type: "boolean" } } as const;

/** The message of the usage error `parseFlags` throws for `args`. */
function usageError(args: string[]): string {
  try {
    parseFlags(args, OPTIONS, USAGE);
  } catch (error) {
    expect(error).to.be.instanceOf(InvalidInputError).with.property("code", "usage");
    if (error instanceof InvalidInputError) return error.message;
  }
  return expect.fail(`expected a usage error for ${args.join(" ")}`);
}

describe("parseFlags", () => {
  it("reads valued and bare options and positionals, `-` among them", () => {
    expect(parseFlags(["a1", "--day", "2026-11-02", "--verify", "-"], OPTIONS, USAGE)).to.deep.equal({
      values: { day: "2026-11-02", verify: true },
      positionals: ["a1", "-"],
    });
    expect(parseFlags(["--day=2026-11-02"], OPTIONS, USAGE).values).to.deep.equal({ day: "2026-11-02" });
  });

  it("refuses an unknown option with the usage, long or short", () => {
    expect(usageError(["--frobnicate", "x"])).to.equal(`unknown argument --frobnicate (usage: vrai ${USAGE})`);
    expect(usageError(["-x"])).to.equal(`unknown argument -x (usage: vrai ${USAGE})`);
  });

  it("refuses an option without its value, and a value given to a bare option", () => {
    expect(usageError(["--day"])).to.equal("--day needs a value");
    expect(usageError(["--day", "--verify"])).to.equal("--day needs a value");
    expect(usageError(["--verify=yes"])).to.equal(`--verify takes no value (usage: vrai ${USAGE})`);
  });
});
