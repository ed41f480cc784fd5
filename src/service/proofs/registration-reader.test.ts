import { expect } from "chai";
import type { Address, PublicClient } from "viem";
import { startTestChain, type DeployedContract, type TestChain } from "../../test-helpers/chain";
import { startHttpServer, type TestHttpServer } from "../../test-helpers/http-server";
import type { Erc8004Identity } from "./erc8004-identity";
import { MAX_REGISTRATION_FILE_BYTES, REGISTRATION_V1_TYPE } from "./registration-file";
import type { RegistrationReading } from "./registration-reader";
import { NOW, recordingSleep } from "./test-support";
import type { ProofVerifierDeps } from "./types";
import { createProofVerifier } from "./verifiers";

/** Where the tests' registration files are published: `https://files.example.com/<path>`, served by the test server on 127.0.0.1. */
const FILES = "https://files.example.com/";
const FILE = { type: REGISTRATION_V1_TYPE, name: "Research Agent", description: "Finds papers.", services: [] };

describe("reading ERC-8004 registration files (issue #27), from the reference identity registry", () => {
  let chain: TestChain;
  let registry: DeployedContract;
  let web: TestHttpServer;
  /** Every name the reader resolved; each resolves to a private address, so nothing but the test server is ever connected to. */
  const resolved: string[] = [];

  before(async () => {
    chain = await startTestChain();
    registry = await chain.deployReferenceIdentity();
    web = await startHttpServer();
  });
  after(async () => {
    await web.close();
    await chain.close();
  });

  const sleep = recordingSleep();
  const reader = (overrides: Partial<ProofVerifierDeps> = {}) =>
    createProofVerifier({
      now: () => NOW,
      publicClientFor: (id) => (id === chain.chain.id ? (chain.publicClient as PublicClient) : undefined),
      resolveAddresses: async (hostname) => {
        resolved.push(hostname);
        return [{ address: "10.0.0.5", family: 4 }];
      },
      registrationFileUrl: (uri) => uri.replace(FILES, `${web.url}/`),
      allowLoopbackLiteralsForTests: true,
      sleep,
      retry: { tries: 3, baseDelayMs: 5 },
      httpTimeoutMs: 300,
      ...overrides,
    }).readRegistrationFile;

  /** A new token of the reference registry whose agentURI is `uri` ("" for `register()` without one). */
  async function identityWith(uri: string): Promise<Erc8004Identity> {
    const [owner] = chain.walletClients;
    const hash = await owner.writeContract({
      address: registry.address,
      abi: registry.abi,
      functionName: "register",
      args: uri === "" ? [] : [uri],
    });
    const receipt = await chain.publicClient.waitForTransactionReceipt({ hash });
    // Registered(agentId indexed, ...): the token id is its first indexed topic.
    const registered = receipt.logs.find((log) => log.topics.length === 3 && log.address.toLowerCase() === registry.address.toLowerCase());
    if (!registered?.topics[1]) throw new Error("no Registered event");
    return { chainId: chain.chain.id, registry: registry.address.toLowerCase() as Address, agentId: BigInt(registered.topics[1]) };
  }

  /** Publishes `body` at `FILES + path` and reads the registration file of a token whose agentURI is that. */
  async function readPublished(path: string, body: unknown, overrides: Partial<ProofVerifierDeps> = {}): Promise<RegistrationReading> {
    web.route("GET", `/${path}`, { body });
    return reader(overrides)(await identityWith(`${FILES}${path}`));
  }

  it("reads an https:// file through the outbound guard and keeps all its fields", async () => {
    const file = { ...FILE, image: "https://files.example.com/logo.png", custom: [1, 2] };
    expect(await readPublished("agent.json", file)).to.deep.equal({ status: "read", uri: `${FILES}agent.json`, file, reason: null });
    expect(web.requestsTo("/agent.json")).to.have.length(1);
  });

  it("decodes a data:application/json;base64 agentURI here, connecting to nothing", async () => {
    const uri = `data:application/json;base64,${Buffer.from(JSON.stringify(FILE)).toString("base64")}`;
    const connections = web.connectionCount();
    resolved.length = 0;
    expect(await reader()(await identityWith(uri))).to.deep.equal({ status: "read", uri, file: FILE, reason: null });
    expect([web.connectionCount(), resolved]).to.deep.equal([connections, []]);
    const plain = await reader()(await identityWith(`data:application/json,${encodeURIComponent(JSON.stringify(FILE))}`));
    expect(plain).to.include({ status: "refused" });
    expect(plain.reason).to.include("not data:application/json;base64,");
  });

  it("reads ipfs:// only through the configured gateway: without one, only the URI is kept", async () => {
    const cid = "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi";
    web.route("GET", `/ipfs/${cid}/agent.json`, { body: FILE });
    const identity = await identityWith(`ipfs://${cid}/agent.json`);
    const connections = web.connectionCount();
    expect(await reader()(identity)).to.deep.equal({
      status: "unread",
      uri: `ipfs://${cid}/agent.json`,
      file: null,
      reason: "ipfs:// agentURIs are read through an IPFS gateway, and none is configured (ERC8004_IPFS_GATEWAY)",
    });
    expect(web.connectionCount()).to.equal(connections);
    const gateway = { settings: { ERC8004_IPFS_GATEWAY: `${web.url}/ipfs/` } };
    expect(await reader(gateway)(identity)).to.deep.include({ status: "read", file: FILE });
    for (const path of ["../../admin", "%2e%2E/admin", "a/./b"]) {
      const escaping = await reader(gateway)(await identityWith(`ipfs://${cid}/${path}`));
      expect(escaping).to.include({ status: "refused", reason: `the agentURI ipfs://${cid}/${path} is not an ipfs://<cid>/<path> URI` });
    }
  });

  it("refuses a file too big, without reading past the limit", async () => {
    const big = JSON.stringify({ ...FILE, description: "x".repeat(MAX_REGISTRATION_FILE_BYTES) });
    expect(await readPublished("big.json", big)).to.deep.equal({
      status: "refused",
      uri: `${FILES}big.json`,
      file: null,
      reason: `${web.url}/big.json is larger than ${MAX_REGISTRATION_FILE_BYTES} bytes`,
    });
  });

  it("refuses a file that does not answer in time, after the three tries of a proof source", async () => {
    web.route("GET", "/slow.json", { hang: true });
    const reading = await reader()(await identityWith(`${FILES}slow.json`));
    expect(reading).to.include({ status: "refused", reason: `GET ${web.url}/slow.json timed out after 300 ms (gave up after 3 attempts)` });
    expect(web.requestsTo("/slow.json")).to.have.length(3);
    // Read at a proof's submission, within the time a submission has.
    const submitted = await reader({ submissionTimeoutMs: 100 })(await identityWith(`${FILES}slow.json`), { submission: true });
    expect(submitted.status).to.equal("refused");
    expect(submitted.reason).to.include("not read within the time a proof's submission has (PROOF_SUBMISSION_TIMEOUT_MS)");
  });

  it("refuses a file that is not JSON, of another type, or of the wrong shape, with the reason", async () => {
    const notJson = await readPublished("page.html", "<html>an agent</html>");
    expect(notJson).to.include({ status: "refused" });
    expect(notJson.reason).to.match(new RegExp(`^${FILES.replace(/\./g, "\\.")}page\\.html is not JSON \\(`));
    expect(await readPublished("card.json", { ...FILE, type: "https://example.org/agent-card" })).to.include({
      status: "refused",
      reason: `${FILES}card.json is not a registration-v1 file: its type is "https://example.org/agent-card", not "${REGISTRATION_V1_TYPE}"`,
    });
    expect(await readPublished("typed.json", { ...FILE, services: "MCP" })).to.include({
      status: "refused",
      reason: `${FILES}typed.json is not a valid registration-v1 file: services: Invalid input: expected array, received string`,
    });
  });

  it("refuses a file at an address that is not public, and a redirect to one, connecting to nothing there", async () => {
    resolved.length = 0;
    const inside = await reader()(await identityWith("https://inside.example.com/agent.json"));
    expect(inside).to.include({ status: "refused", uri: "https://inside.example.com/agent.json" });
    expect(inside.reason).to.include("inside.example.com is not reachable").and.include("not public").and.not.include("10.0.0.5");
    expect(resolved).to.deep.equal(["inside.example.com"]);

    web.route("GET", "/moved.json", { status: 302, headers: { location: "https://inside.example.com/agent.json" } });
    const moved = await reader()(await identityWith(`${FILES}moved.json`));
    expect(moved).to.include({ status: "refused" });
    expect(moved.reason).to.include("inside.example.com is not reachable");
  });

  it("follows up to three redirects, and refuses a fourth", async () => {
    for (const [from, to] of [
      ["/r1", "/r2"],
      ["/r2", "/r3"],
      ["/r3", "/agent.json"],
      ["/r0", "/r1"],
    ]) {
      web.route("GET", from, { status: 301, headers: { location: `${web.url}${to}` } });
    }
    web.route("GET", "/agent.json", { body: FILE });
    expect(await reader()(await identityWith(`${FILES}r1`))).to.deep.include({ status: "read", file: FILE });
    expect(await reader()(await identityWith(`${FILES}r0`))).to.include({
      status: "refused",
      reason: `GET ${web.url}/r0 redirected more than 3 times`,
    });
  });

  it("says why nothing was read: no agentURI, a scheme it does not read, a 404, a token that does not exist", async () => {
    expect(await reader()(await identityWith(""))).to.deep.equal({
      status: "unread",
      uri: null,
      file: null,
      reason: "the identity has no agentURI (its tokenURI is empty)",
    });
    expect(await reader()(await identityWith("http://files.example.com/agent.json"))).to.include({
      status: "refused",
      reason:
        "the agentURI http://files.example.com/agent.json is not read: only https://, data:application/json;base64, and ipfs:// agentURIs are",
    });
    expect(await reader()(await identityWith(`${FILES}missing.json`))).to.include({
      status: "refused",
      reason: `GET ${web.url}/missing.json answered 404`,
    });
    const unknown = { chainId: chain.chain.id, registry: registry.address.toLowerCase() as Address, agentId: 10_000n };
    const reading = await reader()(unknown);
    expect(reading).to.include({ status: "refused", uri: null });
    expect(reading.reason).to.equal(
      `tokenURI of ERC-8004 identity ${chain.chain.id}:${unknown.registry}:10000 reverted or is not implemented: it has no agentURI to read`,
    );
  });
});
