import { expect } from "chai";
import { parseServeConfig } from "./config";

const OPERATOR_TOKEN = "operator-config-test-0123456789";

describe("serve configuration", () => {
  it("fills in the defaults, an empty variable counting as unset", () => {
    const config = parseServeConfig({ OPERATOR_TOKEN, RPC_URL: "", SCORE_CACHE_MB: "" });
    expect(config).to.include({ DATA_DIR: "./data", PORT: 8080, RATE_LIMIT_PER_MINUTE: 600, SCORE_CACHE_MB: 512 });
    expect(config.RPC_URL).to.equal(undefined);
  });

  it("takes a score cache size from 0 (off) to 2048 MB, and names the variable otherwise", () => {
    expect(parseServeConfig({ OPERATOR_TOKEN, SCORE_CACHE_MB: "0" }).SCORE_CACHE_MB).to.equal(0);
    expect(parseServeConfig({ OPERATOR_TOKEN, SCORE_CACHE_MB: "2048" }).SCORE_CACHE_MB).to.equal(2048);
    for (const bad of ["2049", "-1", "1.5", "lots"]) {
      expect(() => parseServeConfig({ OPERATOR_TOKEN, SCORE_CACHE_MB: bad })).to.throw(/^invalid configuration: SCORE_CACHE_MB: /);
    }
  });

  it("bounds each HTTP request of a proof check (3 s by default, 100 ms to 30 s) and a submission's check (6 s) (issue #15)", () => {
    expect(parseServeConfig({ OPERATOR_TOKEN })).to.include({ PROOF_HTTP_TIMEOUT_MS: 3_000, PROOF_SUBMISSION_TIMEOUT_MS: 6_000 });
    expect(parseServeConfig({ OPERATOR_TOKEN, PROOF_SUBMISSION_TIMEOUT_MS: "60000" }).PROOF_SUBMISSION_TIMEOUT_MS).to.equal(60_000);
    expect(() => parseServeConfig({ OPERATOR_TOKEN, PROOF_SUBMISSION_TIMEOUT_MS: "60001" })).to.throw(/^invalid configuration: PROOF_SUBMISSION_TIMEOUT_MS: /);
    expect(parseServeConfig({ OPERATOR_TOKEN, PROOF_HTTP_TIMEOUT_MS: "1500" }).PROOF_HTTP_TIMEOUT_MS).to.equal(1_500);
    for (const bad of ["0", "99", "30001", "soon"]) {
      expect(() => parseServeConfig({ OPERATOR_TOKEN, PROOF_HTTP_TIMEOUT_MS: bad })).to.throw(/^invalid configuration: PROOF_HTTP_TIMEOUT_MS: /);
    }
  });

  it("names every bad variable in one line", () => {
    expect(() => parseServeConfig({ OPERATOR_TOKEN: "short", PORT: "70000" })).to.throw(/^invalid configuration: (?=.*OPERATOR_TOKEN: )(?=.*PORT: )[^\n]*$/);
  });
});
