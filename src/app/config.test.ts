import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { PROJECT_ROOT } from "../project-root";
import { parseServeConfig, serveConfigSchema } from "./config";

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

  it("bounds the listener by default (headers in 10 s, a request in 30 s) and refuses headers allowed longer than the request", () => {
    expect(parseServeConfig({ OPERATOR_TOKEN })).to.include({
      HEADERS_TIMEOUT_MS: 10_000,
      REQUEST_TIMEOUT_MS: 30_000,
      MAX_CONNECTIONS: 800,
      MAX_CONNECTIONS_PER_ADDRESS: 64,
      RATE_LIMIT_OWNERS_PER_HOUR: 20,
      RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: 30,
      TRUST_PROXY: "loopback",
      METRICS_HOST: "127.0.0.1",
    });
    expect(parseServeConfig({ OPERATOR_TOKEN }).METRICS_TOKEN).to.equal(undefined);
    expect(() => parseServeConfig({ OPERATOR_TOKEN, HEADERS_TIMEOUT_MS: "40000" })).to.throw(
      /^invalid configuration: HEADERS_TIMEOUT_MS: must not be longer than REQUEST_TIMEOUT_MS$/,
    );
  });

  it("takes each proof kind's own variables from its module (GitHub's API, raw base and token), checked there", () => {
    expect(parseServeConfig({ OPERATOR_TOKEN })).to.include({
      GITHUB_API_BASE_URL: "https://api.github.com",
      GITHUB_RAW_BASE_URL: "https://gist.githubusercontent.com/",
    });
    expect(parseServeConfig({ OPERATOR_TOKEN, GITHUB_TOKEN: "ghp_x" }).GITHUB_TOKEN).to.equal("ghp_x");
    expect(() => parseServeConfig({ OPERATOR_TOKEN, GITHUB_API_BASE_URL: "not a url" })).to.throw(
      /^invalid configuration: GITHUB_API_BASE_URL: /,
    );
  });

  it("takes a Redis URL, proxies to trust and a metrics token, and names a bad one", () => {
    const config = parseServeConfig({
      OPERATOR_TOKEN,
      RATE_LIMIT_REDIS_URL: "redis://127.0.0.1:6379",
      TRUST_PROXY: "loopback, 10.0.0.0/8, ::1",
      METRICS_TOKEN: "m".repeat(24),
    });
    expect(config).to.include({ RATE_LIMIT_REDIS_URL: "redis://127.0.0.1:6379", RATE_LIMIT_REDIS_PREFIX: "vrai:rl" });
    expect(() => parseServeConfig({ OPERATOR_TOKEN, RATE_LIMIT_REDIS_URL: "http://127.0.0.1:6379" })).to.throw(/RATE_LIMIT_REDIS_URL: /);
    expect(() => parseServeConfig({ OPERATOR_TOKEN, TRUST_PROXY: "everyone" })).to.throw(/TRUST_PROXY: /);
    expect(() => parseServeConfig({ OPERATOR_TOKEN, METRICS_TOKEN: "short" })).to.throw(/METRICS_TOKEN: /);
  });

  it("reads ipfs:// registration files only through ERC8004_IPFS_GATEWAY, unset by default (issue #27)", () => {
    expect(parseServeConfig({ OPERATOR_TOKEN }).ERC8004_IPFS_GATEWAY).to.equal(undefined);
    expect(parseServeConfig({ OPERATOR_TOKEN, ERC8004_IPFS_GATEWAY: "https://ipfs.io/ipfs/" }).ERC8004_IPFS_GATEWAY).to.equal(
      "https://ipfs.io/ipfs/",
    );
    expect(() => parseServeConfig({ OPERATOR_TOKEN, ERC8004_IPFS_GATEWAY: "ipfs://gateway" })).to.throw(
      /^invalid configuration: ERC8004_IPFS_GATEWAY: /,
    );
  });

  it("lists every variable in .env.example", () => {
    const listed = new Set(
      fs
        .readFileSync(path.join(PROJECT_ROOT, ".env.example"), "utf8")
        .split("\n")
        .map((line) => /^([A-Z][A-Z0-9_]*)=/.exec(line)?.[1]),
    );
    for (const variable of Object.keys(serveConfigSchema.shape)) expect(listed.has(variable), variable).to.equal(true);
  });

  it("bounds each HTTP request of a proof check (3 s by default, 100 ms to 30 s) and a submission's check (6 s) (issue #15)", () => {
    expect(parseServeConfig({ OPERATOR_TOKEN })).to.include({ PROOF_HTTP_TIMEOUT_MS: 3_000, PROOF_SUBMISSION_TIMEOUT_MS: 6_000 });
    expect(parseServeConfig({ OPERATOR_TOKEN, PROOF_SUBMISSION_TIMEOUT_MS: "60000" }).PROOF_SUBMISSION_TIMEOUT_MS).to.equal(60_000);
    expect(() => parseServeConfig({ OPERATOR_TOKEN, PROOF_SUBMISSION_TIMEOUT_MS: "60001" })).to.throw(
      /^invalid configuration: PROOF_SUBMISSION_TIMEOUT_MS: /,
    );
    expect(parseServeConfig({ OPERATOR_TOKEN, PROOF_HTTP_TIMEOUT_MS: "1500" }).PROOF_HTTP_TIMEOUT_MS).to.equal(1_500);
    for (const bad of ["0", "99", "30001", "soon"]) {
      expect(() => parseServeConfig({ OPERATOR_TOKEN, PROOF_HTTP_TIMEOUT_MS: bad })).to.throw(
        /^invalid configuration: PROOF_HTTP_TIMEOUT_MS: /,
      );
    }
  });

  it("takes the anchoring's confirmations (2), RPC timeout (10 s) and longest retry wait (5 min), each bounded (issue #30)", () => {
    expect(parseServeConfig({ OPERATOR_TOKEN })).to.include({
      ANCHOR_CONFIRMATIONS: 2,
      ANCHOR_RPC_TIMEOUT_MS: 10_000,
      ANCHOR_RETRY_MAX_MS: 300_000,
    });
    expect(parseServeConfig({ OPERATOR_TOKEN, ANCHOR_CONFIRMATIONS: "12" }).ANCHOR_CONFIRMATIONS).to.equal(12);
    for (const [name, bad] of [
      ["ANCHOR_CONFIRMATIONS", "0"],
      ["ANCHOR_CONFIRMATIONS", "1.5"],
      ["ANCHOR_RPC_TIMEOUT_MS", "99"],
      ["ANCHOR_RETRY_MAX_MS", "soon"],
    ]) {
      expect(() => parseServeConfig({ OPERATOR_TOKEN, [name]: bad }), `${name}=${bad}`).to.throw(
        new RegExp(`^invalid configuration: ${name}: `),
      );
    }
  });

  it("takes the reputation registry's variables together: one registry, a chain, and with a key a public URL (issue #27)", () => {
    const registry = `0x${"8".repeat(40)}`;
    const key = `0x${"ab".repeat(32)}`;
    expect(parseServeConfig({ OPERATOR_TOKEN, REPUTATION_REGISTRY: registry, RPC_URL: "http://127.0.0.1:8545" })).to.include({
      REPUTATION_REGISTRY: registry,
    });
    const publisher = { OPERATOR_TOKEN, REPUTATION_DEPLOYMENT: "deployments/localhost.json", REPUTATION_RPC_URL: "http://127.0.0.1:8545" };
    expect(parseServeConfig({ ...publisher, REPUTATION_PRIVATE_KEY: key, PUBLIC_URL: "https://vrai.example" })).to.include({
      PUBLIC_URL: "https://vrai.example",
    });
    for (const [env, problem] of [
      [
        { REPUTATION_REGISTRY: registry, REPUTATION_DEPLOYMENT: "d.json", RPC_URL: "http://127.0.0.1:8545" },
        /REPUTATION_REGISTRY: give one of/,
      ],
      [{ REPUTATION_REGISTRY: registry }, /REPUTATION_RPC_URL: the reputation registry needs REPUTATION_RPC_URL or RPC_URL/],
      [{ ...publisher, REPUTATION_PRIVATE_KEY: key }, /PUBLIC_URL: required with REPUTATION_PRIVATE_KEY/],
      [{ REPUTATION_PRIVATE_KEY: "0x12", PUBLIC_URL: "https://vrai.example" }, /REPUTATION_PRIVATE_KEY: expected 0x and 64 hex digits/],
      [{ REPUTATION_REGISTRY: "0x12", RPC_URL: "http://127.0.0.1:8545" }, /REPUTATION_REGISTRY: expected an address/],
    ] as const) {
      expect(() => parseServeConfig({ OPERATOR_TOKEN, ...env })).to.throw(problem);
    }
  });

  it("names every bad variable in one line", () => {
    expect(() => parseServeConfig({ OPERATOR_TOKEN: "short", PORT: "70000" })).to.throw(
      /^invalid configuration: (?=.*OPERATOR_TOKEN: )(?=.*PORT: )[^\n]*$/,
    );
  });
});
