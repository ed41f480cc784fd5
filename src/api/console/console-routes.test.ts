import crypto from "node:crypto";
import { expect } from "chai";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createSiweMessage, parseSiweMessage } from "viem/siwe";
import {
  consolePost,
  sessionCookieOf,
  signInWithSiwe,
  signInWithToken,
  siweMessageFor,
  siwePost,
  startConsoleServer,
  type ConsoleServer,
} from "../../test-helpers/console";
import { DEFAULT_CONSOLE_TIMEOUTS } from "../../service/console-sessions";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

describe("the console's sign-in, sessions and tokens over HTTP (issue #29)", function () {
  this.timeout(60_000);
  let cs: ConsoleServer;
  before(async () => {
    cs = await startConsoleServer({ start: T0 });
  });
  after(() => cs?.close());
  beforeEach(() => cs.clock.set(T0));

  const get = (path: string, cookie?: string) => fetch(`${cs.url}${path}`, { headers: cookie ? { cookie } : {}, redirect: "manual" });
  const api = (method: string, path: string, token: string, body?: unknown) =>
    fetch(`${cs.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it("sends a browser without a session to the sign-in page, and back where it was going once signed in", async () => {
    const res = await get("/console/tokens");
    expect(res.status).to.equal(303);
    expect(res.headers.get("location")).to.equal("/console/sign-in?next=%2Fconsole%2Ftokens");
    const { token } = await cs.createOwner();
    const signedIn = await consolePost(cs.url, "/console/sign-in", { fields: { token, next: "/console/tokens" } });
    expect(signedIn.status).to.equal(303);
    expect(signedIn.headers.get("location")).to.equal("/console/tokens");
    // A next that leaves the console is not followed.
    const away = await consolePost(cs.url, "/console/sign-in", { fields: { token, next: "https://evil.example/" } });
    expect(away.headers.get("location")).to.equal("/console/agents");
    const protocolRelative = await consolePost(cs.url, "/console/sign-in", { fields: { token, next: "//evil.example/console" } });
    expect(protocolRelative.headers.get("location")).to.equal("/console/agents");
  });

  it("sets the session cookie HttpOnly, SameSite=Lax, for the whole site and the absolute timeout, without Secure over http", async () => {
    const { token } = await cs.createOwner();
    const res = await consolePost(cs.url, "/console/sign-in", { fields: { token } });
    const [cookie] = res.headers.getSetCookie();
    expect(cookie).to.match(/^vrai_session=vs_[A-Za-z0-9_-]{43}; /);
    expect(cookie).to.contain("HttpOnly").and.to.contain("SameSite=Lax").and.to.contain("Path=/");
    expect(cookie).not.to.contain("Secure");
    expect(cookie).to.contain(`Max-Age=${DEFAULT_CONSOLE_TIMEOUTS.absoluteS}`);
  });

  it("answers a wrong token with the sign-in page and a sentence, not JSON", async () => {
    const res = await consolePost(cs.url, "/console/sign-in", { fields: { token: "vo_own_nobody.t_wrong" } });
    expect(res.status).to.equal(401);
    expect(res.headers.get("content-type")).to.match(/^text\/html/);
    const page = await res.text();
    expect(page).to.contain("That is not a valid owner token").and.not.to.contain('{"error"');
    expect(sessionCookieOf(res)).to.equal(undefined);
    const empty = await consolePost(cs.url, "/console/sign-in", { fields: { token: "  " } });
    expect(empty.status).to.equal(400);
  });

  it("sends every console page no-store, framed by nobody, under a policy that runs no inline script", async () => {
    const { token } = await cs.createOwner();
    const { cookie } = await signInWithToken(cs.url, token);
    for (const path of ["/console/sign-in", "/console/sessions", "/console/tokens", "/console/nowhere"]) {
      const res = await get(path, cookie);
      expect(res.headers.get("cache-control"), path).to.equal("no-store");
      expect(res.headers.get("x-frame-options"), path).to.equal("DENY");
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp, path).to.contain("frame-ancestors 'none'").and.to.contain("script-src 'self'");
      expect(csp, path).not.to.match(/script-src[^;]*unsafe-inline/);
      const page = await res.text();
      expect(page, path).not.to.match(/<script(?![^>]*\bsrc=)/);
    }
    expect((await get("/console/nowhere", cookie)).status).to.equal(404);
  });

  it("serves the script under its content hash, cached for a year", async () => {
    const page = await (await get("/console/sign-in")).text();
    const [, src, integrity] =
      /<script src="(\/console\/assets\/console-[0-9a-f]{16}\.js)" integrity="(sha384-[^"]+)" defer><\/script>/.exec(page) ?? [];
    expect(src).to.be.a("string");
    const res = await get(src!);
    expect(res.status).to.equal(200);
    expect(res.headers.get("content-type")).to.match(/^application\/javascript/);
    expect(res.headers.get("cache-control")).to.equal("public, max-age=31536000, immutable");
    const body = Buffer.from(await res.arrayBuffer());
    expect(body.toString()).to.contain("personal_sign");
    expect(integrity).to.equal(`sha384-${crypto.createHash("sha384").update(body).digest("base64")}`);
    expect((await get("/console/assets/console-0000000000000000.js")).status).to.equal(404);
  });

  describe("session fixation", () => {
    it("never adopts a cookie the browser came with: signing in over one makes a new session, and ends a real one", async () => {
      const { token } = await cs.createOwner();
      const planted = `vrai_session=vs_${"A".repeat(43)}`;
      const res = await consolePost(cs.url, "/console/sign-in", { cookie: planted, fields: { token } });
      const cookie = sessionCookieOf(res);
      expect(cookie)
        .to.match(/^vrai_session=vs_/)
        .and.not.to.equal(planted);
      expect((await get("/console/sessions", planted)).status, "the planted cookie").to.equal(303);

      const again = await consolePost(cs.url, "/console/sign-in", { cookie: cookie!, fields: { token } });
      const renewed = sessionCookieOf(again);
      expect(renewed).not.to.equal(cookie);
      expect((await get("/console/sessions", cookie!)).status, "the session signed in over").to.equal(303);
      expect((await get("/console/sessions", renewed!)).status).to.equal(200);
    });
  });

  describe("cross-site requests", () => {
    let cookie: string;
    let csrfToken: string;
    beforeEach(async () => {
      const { token } = await cs.createOwner();
      ({ cookie, csrfToken } = await signInWithToken(cs.url, token));
    });
    const stillSignedIn = async () => (await get("/console/sessions", cookie)).status === 200;

    it("refuses a form from another origin, with a page that says what to do", async () => {
      const res = await consolePost(cs.url, "/console/sign-out", { cookie, fields: { csrf: csrfToken }, origin: "https://evil.example" });
      expect(res.status).to.equal(403);
      expect(res.headers.get("content-type")).to.match(/^text\/html/);
      expect(await res.text())
        .to.contain("it came from https://evil.example")
        .and.to.contain(`${cs.url}/console`);
      expect(await stillSignedIn()).to.equal(true);
    });

    it("refuses a form without an Origin, and one with Origin: null", async () => {
      for (const origin of [null, "null"]) {
        const res = await consolePost(cs.url, "/console/sign-out", { cookie, fields: { csrf: csrfToken }, origin });
        expect(res.status, String(origin)).to.equal(403);
      }
      expect(await stillSignedIn()).to.equal(true);
    });

    it("refuses a form without the session's CSRF token, or with another session's", async () => {
      const { token } = await cs.createOwner();
      const other = await signInWithToken(cs.url, token);
      const wrong: Array<Record<string, string>> = [{}, { csrf: "" }, { csrf: "0".repeat(64) }, { csrf: other.csrfToken }];
      for (const fields of wrong) {
        const res = await consolePost(cs.url, "/console/sign-out", { cookie, fields });
        expect(res.status, JSON.stringify(fields)).to.equal(403);
        expect(await res.text()).to.contain("security token");
      }
      expect(await stillSignedIn()).to.equal(true);
      const signedOut = await consolePost(cs.url, "/console/sign-out", { cookie, fields: { csrf: csrfToken } });
      expect(signedOut.status).to.equal(303);
      expect(signedOut.headers.get("location")).to.equal("/console/sign-in?signedOut=1");
      expect(await stillSignedIn()).to.equal(false);
    });

    it("refuses signing in from another origin (no login CSRF), by token and by wallet", async () => {
      const { token } = await cs.createOwner();
      const res = await consolePost(cs.url, "/console/sign-in", { fields: { token }, origin: "https://evil.example" });
      expect(res.status).to.equal(403);
      expect(sessionCookieOf(res)).to.equal(undefined);
      const account = privateKeyToAccount(generatePrivateKey());
      const nonce = await siwePost(cs.url, "/console/siwe/nonce", { address: account.address }, "https://evil.example");
      expect(nonce.status).to.equal(403);
      expect((await nonce.json()).error.code).to.equal("cross_origin_refused");
    });

    it("refuses a form posted after the session ended, with a page that says to sign in again", async () => {
      await consolePost(cs.url, "/console/sign-out", { cookie, fields: { csrf: csrfToken } });
      const res = await consolePost(cs.url, "/console/tokens", { cookie, fields: { csrf: csrfToken, name: "late" } });
      expect(res.status).to.equal(401);
      expect(await res.text()).to.contain("Sign in again");
    });
  });

  describe("timeouts", () => {
    it("signs a browser out after the idle timeout, and after the absolute timeout however busy", async () => {
      const { token } = await cs.createOwner();
      const idle = await signInWithToken(cs.url, token);
      cs.clock.set(T0 + DEFAULT_CONSOLE_TIMEOUTS.idleS);
      expect((await get("/console/sessions", idle.cookie)).status).to.equal(303);

      cs.clock.set(T0);
      const busy = await signInWithToken(cs.url, token);
      for (let t = T0; t < T0 + DEFAULT_CONSOLE_TIMEOUTS.absoluteS; t += DEFAULT_CONSOLE_TIMEOUTS.idleS / 2) {
        cs.clock.set(t);
        expect((await get("/console/sessions", busy.cookie)).status, `+${t - T0} s`).to.equal(200);
      }
      cs.clock.set(T0 + DEFAULT_CONSOLE_TIMEOUTS.absoluteS);
      expect((await get("/console/sessions", busy.cookie)).status).to.equal(303);
    });
  });

  describe("sessions page", () => {
    /** The ids of the sessions a page lists, this browser's first. */
    const sessionIds = (page: string) => {
      const rows = page.split("<tr").slice(1);
      const id = (row: string) => /\/console\/sessions\/(ses_[0-9a-f]{16})\/revoke/.exec(row)?.[1];
      const current = rows.filter((row) => row.startsWith(' aria-current="true"')).map(id);
      const others = rows.filter((row) => !row.startsWith(' aria-current="true"')).map(id);
      return { current, others: others.filter((x) => x !== undefined) };
    };

    it("lists the owner's sessions with this browser's marked, and signs out everywhere", async () => {
      const { token } = await cs.createOwner();
      const a = await signInWithToken(cs.url, token);
      const b = await signInWithToken(cs.url, token);
      const { current, others } = sessionIds(await (await get("/console/sessions", a.cookie)).text());
      expect(current).to.have.length(1);
      expect(others).to.have.length(1);
      const everywhere = await consolePost(cs.url, "/console/sessions/sign-out-everywhere", {
        cookie: a.cookie,
        fields: { csrf: a.csrfToken },
      });
      expect(everywhere.status).to.equal(303);
      expect(everywhere.headers.get("location")).to.equal("/console/sign-in?signedOut=1");
      for (const s of [a, b]) expect((await get("/console/sessions", s.cookie)).status).to.equal(303);
    });

    it("signs out another session of the owner's by its id, and only that one", async () => {
      const { token } = await cs.createOwner();
      const a = await signInWithToken(cs.url, token);
      const b = await signInWithToken(cs.url, token);
      const { others } = sessionIds(await (await get("/console/sessions", a.cookie)).text());
      const res = await consolePost(cs.url, `/console/sessions/${others[0]}/revoke`, { cookie: a.cookie, fields: { csrf: a.csrfToken } });
      expect(res.status).to.equal(200);
      expect(await res.text()).to.contain("That session is signed out.");
      expect((await get("/console/sessions", b.cookie)).status).to.equal(303);
      expect((await get("/console/sessions", a.cookie)).status).to.equal(200);
      const again = await consolePost(cs.url, `/console/sessions/${others[0]}/revoke`, { cookie: a.cookie, fields: { csrf: a.csrfToken } });
      expect(again.status).to.equal(404);
      expect(await again.text()).to.contain("it has ended already");
    });
  });

  describe("tokens", () => {
    it("creates a read-only token in the console, shown once, and revokes it", async () => {
      const { token } = await cs.createOwner();
      const { cookie, csrfToken } = await signInWithToken(cs.url, token);
      const res = await consolePost(cs.url, "/console/tokens", { cookie, fields: { csrf: csrfToken, name: "dashboard" } });
      expect(res.status).to.equal(201);
      const page = await res.text();
      const readToken = /<code class="secret" id="shown-token">(vor_[^<]+)<\/code>/.exec(page)?.[1];
      expect(readToken).to.match(/^vor_tok_/);
      expect(await (await get("/console/tokens", cookie)).text()).not.to.contain(readToken);
      expect((await api("GET", "/v1/owners/me", readToken!)).status).to.equal(200);
      const id = /^vor_(tok_[0-9a-f]{16})\./.exec(readToken!)![1];
      const revoked = await consolePost(cs.url, `/console/tokens/${id}/revoke`, { cookie, fields: { csrf: csrfToken } });
      expect(revoked.status).to.equal(200);
      expect(await revoked.text()).to.contain("The token is revoked");
      expect((await api("GET", "/v1/owners/me", readToken!)).status).to.equal(401);
      const unnamed = await consolePost(cs.url, "/console/tokens", { cookie, fields: { csrf: csrfToken, name: "" } });
      expect(unnamed.status).to.equal(400);
      expect(await unnamed.text()).to.contain("Give the token a name");
    });

    it("rotates the owner token in the console: shown once, the old one stops at once, and so do the other sessions it signed in", async () => {
      const { token } = await cs.createOwner();
      const { cookie, csrfToken } = await signInWithToken(cs.url, token);
      const elsewhere = await signInWithToken(cs.url, token);
      const res = await consolePost(cs.url, "/console/tokens/owner/rotate", { cookie, fields: { csrf: csrfToken } });
      expect(res.status).to.equal(200);
      const rotated = /<code class="secret" id="shown-token">(vo_[^<]+)<\/code>/.exec(await res.text())?.[1];
      expect((await api("GET", "/v1/owners/me", token)).status).to.equal(401);
      expect((await api("GET", "/v1/owners/me", rotated!)).status).to.equal(200);
      expect((await get("/console/tokens", cookie)).status, "the session that rotated it").to.equal(200);
      expect((await get("/console/tokens", elsewhere.cookie)).status, "another session of the old token").to.equal(303);
    });

    it("through the API: a read-only token reads every owner route and changes nothing (403 read_only_token)", async () => {
      const { token } = await cs.createOwner();
      const created = await api("POST", "/v1/owner/read-tokens", token, { name: "monitor" });
      expect(created.status).to.equal(201);
      const { token: readToken, id } = await created.json();
      expect((await api("GET", "/v1/owners/me", readToken)).status).to.equal(200);
      const listed = await (await api("GET", "/v1/owner/read-tokens", readToken)).json();
      expect(listed.tokens).to.deep.equal([{ id, name: "monitor", createdAt: "2026-11-02T10:00:00Z", revokedAt: null }]);
      for (const [method, path, body] of [
        ["POST", "/v1/agents", { name: "x" }],
        ["POST", "/v1/owner/read-tokens", { name: "another" }],
        ["POST", `/v1/owner/read-tokens/${id}/revoke`, {}],
        ["POST", "/v1/owner/token/rotate", {}],
      ] as const) {
        const res = await api(method, path, readToken, body);
        expect(res.status, path).to.equal(403);
        expect((await res.json()).error.code, path).to.equal("read_only_token");
      }
      expect((await api("GET", "/v1/owners/me", token)).status, "the owner token still works").to.equal(200);
      const revoked = await api("POST", `/v1/owner/read-tokens/${id}/revoke`, token, {});
      expect(revoked.status).to.equal(200);
      expect((await revoked.json()).revokedAt).to.equal("2026-11-02T10:00:00Z");
      expect((await api("GET", "/v1/owners/me", readToken)).status).to.equal(401);
    });

    it("through the API: rotates the owner token, the old one refused at once", async () => {
      const { ownerId, token } = await cs.createOwner();
      const res = await api("POST", "/v1/owner/token/rotate", token, {});
      expect(res.status).to.equal(200);
      const rotated = await res.json();
      expect(rotated.ownerId).to.equal(ownerId);
      expect((await api("GET", "/v1/owners/me", token)).status).to.equal(401);
      expect((await api("GET", "/v1/owners/me", rotated.token)).status).to.equal(200);
    });

    it("a read-only session can look and change nothing: every form refused with a page, signing out allowed", async () => {
      const { token } = await cs.createOwner();
      const { token: readToken } = await (await api("POST", "/v1/owner/read-tokens", token, { name: "look" })).json();
      const { cookie, csrfToken } = await signInWithToken(cs.url, readToken);
      const page = await (await get("/console/tokens", cookie)).text();
      expect(page).to.contain("(read-only)").and.not.to.contain('action="/console/tokens/owner/rotate"');
      for (const path of ["/console/tokens", "/console/tokens/owner/rotate", "/console/sessions/sign-out-everywhere"]) {
        const res = await consolePost(cs.url, path, { cookie, fields: { csrf: csrfToken, name: "x" } });
        expect(res.status, path).to.equal(403);
        expect(await res.text(), path).to.contain("read-only token");
      }
      expect((await api("GET", "/v1/owners/me", token)).status, "the owner token was not rotated").to.equal(200);
      expect((await consolePost(cs.url, "/console/sign-out", { cookie, fields: { csrf: csrfToken } })).status).to.equal(303);
    });
  });

  describe("Sign-In with Ethereum", () => {
    it("signs in a new address as a new owner, and the same address again as that owner", async () => {
      const account = privateKeyToAccount(generatePrivateKey());
      const first = await signInWithSiwe(cs.url, account);
      expect(first.created).to.equal(true);
      const again = await signInWithSiwe(cs.url, account);
      expect(again.created).to.equal(false);
      const owner = (s: { cookie: string }) =>
        get("/console/sessions", s.cookie)
          .then((r) => r.text())
          .then((t) => /class="who">(own_[0-9a-f]{16})/.exec(t)?.[1]);
      expect(await owner(again))
        .to.equal(await owner(first))
        .and.to.match(/^own_/);
    });

    it("refuses a replayed message, a message for another domain or chain, and an expired one, as JSON naming why", async () => {
      const account = privateKeyToAccount(generatePrivateKey());
      const message = await siweMessageFor(cs.url, account.address);
      const signature = await account.signMessage({ message });
      expect((await siwePost(cs.url, "/console/siwe", { message, signature })).status).to.equal(200);
      const replay = await siwePost(cs.url, "/console/siwe", { message, signature });
      expect(replay.status).to.equal(401);
      expect((await replay.json()).error.code).to.equal("siwe_nonce_invalid");

      const fresh = parseSiweMessage(await siweMessageFor(cs.url, account.address));
      const signedAs = async (changed: Record<string, unknown>) => {
        const text = createSiweMessage({
          address: account.address,
          domain: fresh.domain!,
          uri: fresh.uri!,
          chainId: fresh.chainId!,
          nonce: fresh.nonce!,
          version: "1",
          issuedAt: fresh.issuedAt,
          expirationTime: fresh.expirationTime,
          scheme: fresh.scheme,
          ...changed,
        });
        const res = await siwePost(cs.url, "/console/siwe", { message: text, signature: await account.signMessage({ message: text }) });
        return { status: res.status, code: (await res.json()).error?.code };
      };
      expect(await signedAs({ domain: "evil.example" })).to.deep.equal({ status: 401, code: "siwe_domain_mismatch" });
      expect(await signedAs({ chainId: 5 })).to.deep.equal({ status: 401, code: "siwe_chain_mismatch" });
      cs.clock.set(T0 + 3600);
      expect(await signedAs({})).to.deep.equal({ status: 401, code: "siwe_expired" });
    });

    it("refuses a body without a message or a signature", async () => {
      const res = await siwePost(cs.url, "/console/siwe", { message: "x" });
      expect(res.status).to.equal(400);
      expect((await res.json()).error.code).to.equal("invalid_request");
      const malformed = await fetch(`${cs.url}/console/siwe`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: cs.url },
        body: "{",
      });
      expect(malformed.status).to.equal(400);
      expect((await malformed.json()).error.code).to.equal("malformed_json");
    });
  });
});

describe("the console behind https (PUBLIC_URL), issue #29", function () {
  this.timeout(60_000);
  const PUBLIC = "https://console.vrai.example";
  let cs: ConsoleServer;
  before(async () => {
    cs = await startConsoleServer({ start: T0, console: { publicUrl: `${PUBLIC}/` } });
  });
  after(() => cs?.close());

  it("makes the session cookie Secure with the __Host- prefix, and takes forms from the public origin only", async () => {
    const { token } = await cs.createOwner();
    const res = await consolePost(cs.url, "/console/sign-in", { fields: { token }, origin: PUBLIC });
    expect(res.status).to.equal(303);
    const [cookie] = res.headers.getSetCookie();
    expect(cookie).to.match(/^__Host-vrai_session=vs_[A-Za-z0-9_-]{43}; /);
    expect(cookie).to.contain("Secure").and.to.contain("HttpOnly").and.to.contain("SameSite=Lax").and.to.contain("Path=/");
    expect(cookie).not.to.contain("Domain=");
    // The listener's own origin is not the console's.
    const direct = await consolePost(cs.url, "/console/sign-in", { fields: { token } });
    expect(direct.status).to.equal(403);
    expect(await direct.text()).to.contain("PUBLIC_URL");
  });

  it("writes Sign-In with Ethereum messages for the public origin", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const res = await siwePost(cs.url, "/console/siwe/nonce", { address: account.address }, PUBLIC);
    const fields = parseSiweMessage((await res.json()).message);
    expect(fields).to.include({ domain: "console.vrai.example", uri: `${PUBLIC}/console` });
    expect(fields.scheme).to.equal(undefined);
  });
});
