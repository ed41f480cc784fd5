import { expect } from "chai";
import { readdirSync, readFileSync } from "node:fs";
import type { LookupAddress, LookupOptions } from "node:dns";
import { join } from "node:path";
import { PROJECT_ROOT } from "../../project-root";
import { startHttpServer, type TestHttpServer } from "../../test-helpers/http-server";
import { addressRange, checkedLookup, createOutboundFetch, isPublicAddress, type ResolveAddresses, type ResolvedAddress } from "./outbound";
import { expectProofError } from "./test-support";

const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });
const family = (address: string) => (address.includes(":") ? v6(address) : v4(address));

/** Every class the filter refuses, with examples (issue #15, finding 2). None of these is ever connected to: they only go through the pure check. */
const REFUSED: Record<string, string[]> = {
  loopback: ["127.0.0.1", "127.255.255.254", "::1", "::ffff:127.0.0.1", "64:ff9b::7f00:1"],
  "private (RFC 1918)": [
    "10.0.0.1",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "::ffff:10.0.0.1",
    "::ffff:192.168.0.1",
    "64:ff9b::a00:1",
  ],
  "link-local": ["169.254.169.254", "fe80::1", "fe80::1%eth0", "::ffff:169.254.169.254"],
  "CGNAT (100.64/10)": ["100.64.0.1", "100.127.255.255"],
  multicast: ["224.0.0.1", "239.255.255.250", "ff02::1"],
  unspecified: ["0.0.0.0", "0.1.2.3", "::"],
  broadcast: ["255.255.255.255"],
  "reserved (240/4, 192.0.0/24, 6to4, Teredo, IPv4-compatible, discard, site-local)": [
    "240.0.0.1",
    "192.0.0.8",
    "2002:7f00:1::1",
    "2001::1",
    "::7f00:1",
    "100::1",
    "fec0::1",
  ],
  "documentation and benchmarking": ["192.0.2.1", "198.51.100.7", "203.0.113.9", "198.18.0.1", "2001:db8::1"],
  "unique local (fc00::/7)": ["fc00::1", "fd12:3456::1"],
  "IPv4-translated (::ffff:0:0:0/96)": ["::ffff:0:7f00:1"],
};
/** Public addresses: only ever classified, never connected to. */
const PUBLIC = [
  "8.8.8.8",
  "1.1.1.1",
  "93.184.216.34",
  "2606:4700:4700::1111",
  "2a00:1450:4001:82a::200e",
  "::ffff:8.8.8.8",
  "64:ff9b::808:808",
];

describe("outbound requests of proofs go to public addresses only (issue #15, finding 2)", () => {
  describe("address classification (ipaddr.js ranges)", () => {
    for (const [range, addresses] of Object.entries(REFUSED)) {
      it(`refuses ${range}: ${addresses.map((a) => a || "''").join(", ")}`, () => {
        for (const address of addresses) expect(isPublicAddress(address), address).to.equal(false);
      });
    }

    it("refuses what is not an address at all", () => {
      for (const text of ["localhost", "proof.example.com", "", "1.2.3", "8.8.8.8.", "0x8.8.8.8", "[2606:4700:4700::1111]"])
        expect(isPublicAddress(text), text).to.equal(false);
    });

    it(`accepts public unicast addresses, mapped and NAT64 ones too: ${PUBLIC.join(", ")}`, () => {
      for (const address of PUBLIC) expect(isPublicAddress(address), address).to.equal(true);
    });

    it("classifies IPv4-mapped and NAT64 addresses as the IPv4 address they carry", () => {
      expect(addressRange("::ffff:10.1.2.3")).to.equal("private");
      expect(addressRange("64:ff9b::a9fe:a9fe")).to.equal("linkLocal");
      expect(addressRange("64:ff9b::6440:1")).to.equal("carrierGradeNat");
    });
  });

  describe("the connection lookup (no socket: the lookup is called directly)", () => {
    /** Calls `lookup` as net.connect does and reports what it answered. */
    function lookupOnce(
      resolve: ResolveAddresses,
      options: LookupOptions,
    ): Promise<{ error: unknown; addresses?: LookupAddress[]; address?: string; family?: number }> {
      return new Promise((done) =>
        checkedLookup(resolve)("proof.example.com", options, (error, address, family) =>
          done(error ? { error } : Array.isArray(address) ? { error: null, addresses: address } : { error: null, address, family }),
        ),
      );
    }
    const resolvingTo =
      (...addresses: string[]): ResolveAddresses =>
      async () =>
        addresses.map(family);

    for (const [range, addresses] of Object.entries(REFUSED)) {
      it(`refuses a name resolving to ${range} before any socket exists`, async () => {
        for (const address of addresses) {
          const answer = await lookupOnce(resolvingTo(address), { all: true });
          expect(answer.addresses, address).to.equal(undefined);
          await expectProofError(Promise.reject(answer.error), "proof_forbidden_address", 422);
        }
      });
    }

    it("refuses a name when any one of its addresses is not public, whatever the order", async () => {
      for (const order of [
        ["8.8.8.8", "10.0.0.1"],
        ["10.0.0.1", "8.8.8.8"],
        ["2606:4700:4700::1111", "::1"],
        ["8.8.8.8", "fd00::1"],
      ]) {
        const answer = await lookupOnce(resolvingTo(...order), { all: true });
        await expectProofError(Promise.reject(answer.error), "proof_forbidden_address", 422);
      }
    });

    it("hands the socket exactly the public addresses it checked, all of them or the first of the family asked for", async () => {
      const resolve = resolvingTo("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946");
      expect((await lookupOnce(resolve, { all: true })).addresses).to.deep.equal([
        v4("93.184.216.34"),
        v6("2606:2800:220:1:248:1893:25c8:1946"),
      ]);
      expect(await lookupOnce(resolve, { family: 6 })).to.deep.include({
        error: null,
        address: "2606:2800:220:1:248:1893:25c8:1946",
        family: 6,
      });
      expect(await lookupOnce(resolve, {})).to.deep.include({ error: null, address: "93.184.216.34", family: 4 });
    });

    it("resolves once per connection and checks that very answer (a rebinding name is refused when it turns to loopback)", async () => {
      const answers = [["93.184.216.34"], ["127.0.0.1"]];
      let calls = 0;
      const rebinding: ResolveAddresses = async () => answers[calls++].map(family);
      expect((await lookupOnce(rebinding, { all: true })).addresses).to.deep.equal([v4("93.184.216.34")]);
      const second = await lookupOnce(rebinding, { all: true });
      await expectProofError(Promise.reject(second.error), "proof_forbidden_address", 422);
      expect(calls).to.equal(2);
    });

    it("passes a resolver failure on as it is (a transient failure, not a refusal)", async () => {
      const failing: ResolveAddresses = async () => {
        throw Object.assign(new Error("getaddrinfo EAI_AGAIN proof.example.com"), { code: "EAI_AGAIN" });
      };
      const answer = await lookupOnce(failing, { all: true });
      expect((answer.error as NodeJS.ErrnoException).code).to.equal("EAI_AGAIN");
    });
  });

  describe("the fetch of the verifiers, against a real server on 127.0.0.1 that counts connections", () => {
    let server: TestHttpServer;
    before(async () => {
      server = await startHttpServer();
      server.route("GET", "/ok", { body: { ok: true } });
    });
    after(() => server.close());

    /** Resolves every name to 127.0.0.1, where the counting server listens: a failed check would connect to it. */
    const toLoopback: ResolveAddresses = async () => [v4("127.0.0.1")];
    const get = (fetchPublic: ReturnType<typeof createOutboundFetch>, url: string, redirect: "follow" | "manual" = "manual") =>
      fetchPublic(url, { method: "GET", redirect, signal: AbortSignal.timeout(5_000) });
    const strict = () => createOutboundFetch({ resolve: toLoopback, connectTimeoutMs: 2_000 });
    const forTests = () => createOutboundFetch({ resolve: toLoopback, connectTimeoutMs: 2_000, allowLoopbackLiteralsForTests: true });

    it("connects to a loopback literal only with the test option (the server counts that connection)", async () => {
      const before = server.connectionCount();
      expect((await get(forTests(), `${server.url}/ok`)).status).to.equal(200);
      expect(server.connectionCount()).to.equal(before + 1);
    });

    for (const [what, host] of [
      ["a public-looking name resolving to 127.0.0.1, over http", "http://proof.example.com"],
      ["a public-looking name resolving to 127.0.0.1, over https", "https://proof.example.com"],
      ["a name with a trailing dot", "http://proof.example.com."],
      ["localhost", "http://localhost"],
    ] as const) {
      it(`refuses ${what} and connects to nothing, even with the test option`, async () => {
        const before = server.connectionCount();
        for (const fetchPublic of [strict(), forTests()]) {
          await expectProofError(get(fetchPublic, `${host}:${server.port}/ok`), "proof_forbidden_address", 422);
        }
        expect(server.connectionCount()).to.equal(before);
      });
    }

    for (const literal of [
      "127.0.0.1",
      "127.0.0.0x1",
      "0x7f.0.0.1",
      "0177.0.0.1",
      "127.1",
      "2130706433",
      "[::ffff:127.0.0.1]",
      "[::ffff:7f00:1]",
      "[::1]",
    ]) {
      it(`refuses the IP literal ${literal} without the test option and connects to nothing`, async () => {
        const before = server.connectionCount();
        await expectProofError(get(strict(), `http://${literal}:${server.port}/ok`), "proof_forbidden_address", 422);
        expect(server.connectionCount()).to.equal(before);
      });
    }

    it("checks every redirect hop: a redirect to a name resolving to 127.0.0.1 is refused and never connected to", async () => {
      server.route("GET", "/hop", { status: 302, headers: { location: `http://proof.example.com:${server.port}/ok` } });
      const before = server.connectionCount();
      const requestsBefore = server.requestsTo("/ok").length;
      await expectProofError(get(forTests(), `${server.url}/hop`, "follow"), "proof_forbidden_address", 422);
      expect(server.connectionCount()).to.equal(before + 1);
      expect(server.requestsTo("/hop")).to.have.length.greaterThan(0);
      expect(server.requestsTo("/ok")).to.have.length(requestsBefore);
    });
  });

  it("is never relaxed by the production wiring: no module of src/app sets allowLoopbackLiteralsForTests", () => {
    const dir = join(PROJECT_ROOT, "src", "app");
    const modules = readdirSync(dir).filter((name) => name.endsWith(".ts") && !name.endsWith(".test.ts"));
    expect(modules).to.include("server.ts");
    for (const name of modules) expect(readFileSync(join(dir, name), "utf8"), name).not.to.include("allowLoopbackLiteralsForTests");
  });
});
