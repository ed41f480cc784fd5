import { expect } from "chai";
import {
  agentRegistryOf,
  endpointDomainMatch,
  parseRegistrationFile,
  REGISTRATION_V1_TYPE,
  shownFields,
  type RegistrationFile,
} from "./registration-file";

const REGISTRY = "0x8004a169fb4a3325136eb29fa0ceb6d2e539a432";
const IDENTITY = { chainId: 8453, registry: REGISTRY, agentId: 42n } as const;
const OTHER = { chainId: 8453, registry: REGISTRY, agentId: 43n } as const;

/** A file as the standard's example shows it, with a field of its own. */
const EXAMPLE = {
  type: REGISTRATION_V1_TYPE,
  name: "Research Agent",
  description: "Finds and summarises papers.",
  image: "https://agent.example.org/logo.png",
  services: [
    { name: "web", endpoint: "https://agent.example.org/" },
    { name: "A2A", endpoint: "https://agent.example.org/.well-known/agent-card.json", version: "0.3.0", skills: ["search"] },
  ],
  x402Support: false,
  active: true,
  registrations: [{ agentId: 42, agentRegistry: `eip155:8453:${REGISTRY}` }],
  supportedTrust: ["reputation"],
  custom: { tier: "gold" },
};

describe("ERC-8004 registration files (issue #27)", () => {
  describe("parseRegistrationFile: registration-v1, checked by its schema", () => {
    it("keeps every field of a valid file, the ones the standard does not name included", () => {
      const parsed = parseRegistrationFile(JSON.stringify(EXAMPLE));
      expect(parsed).to.deep.equal({ ok: true, file: EXAMPLE });
    });

    it("needs only the type and a name", () => {
      expect(parseRegistrationFile(JSON.stringify({ type: REGISTRATION_V1_TYPE, name: "a" }))).to.deep.equal({
        ok: true,
        file: { type: REGISTRATION_V1_TYPE, name: "a" },
      });
    });

    it("refuses text that is not JSON, and JSON that is not an object, saying so", () => {
      const notJson = parseRegistrationFile("<html>not json</html>");
      expect(notJson.ok).to.equal(false);
      expect(!notJson.ok && notJson.reason).to.match(/^is not JSON \(/);
      expect(parseRegistrationFile("[1, 2]")).to.deep.equal({ ok: false, reason: "is not a JSON object" });
    });

    it("refuses a file of another type, or of none, naming the type it has and the one it needs", () => {
      expect(parseRegistrationFile(JSON.stringify({ ...EXAMPLE, type: "https://example.org/agent-card" }))).to.deep.equal({
        ok: false,
        reason: `is not a registration-v1 file: its type is "https://example.org/agent-card", not "${REGISTRATION_V1_TYPE}"`,
      });
      const { type: _type, ...untyped } = EXAMPLE;
      expect(parseRegistrationFile(JSON.stringify(untyped))).to.deep.equal({
        ok: false,
        reason: `is not a registration-v1 file: its type is missing, not "${REGISTRATION_V1_TYPE}"`,
      });
    });

    it("refuses fields of the wrong type, naming each with its path", () => {
      const parsed = parseRegistrationFile(
        JSON.stringify({
          ...EXAMPLE,
          name: 7,
          active: "yes",
          services: [{ name: "MCP", endpoint: 443 }],
          registrations: [{ agentId: -1 }],
        }),
      );
      expect(parsed.ok).to.equal(false);
      const reason = !parsed.ok ? parsed.reason : "";
      expect(reason).to.match(/^is not a valid registration-v1 file: /);
      for (const field of ["name: ", "services.0.endpoint: ", "active: ", "registrations.0.agentRegistry: ", "registrations.0.agentId: "]) {
        expect(reason).to.include(field);
      }
    });
  });

  describe("endpointDomainMatch: the registrations of https://<domain>/.well-known/agent-registration.json", () => {
    const file = (registrations: unknown) => JSON.stringify({ registrations });

    it("finds the identity an entry names, the registry in any case and the id a number or a decimal string", () => {
      const upper = `eip155:8453:${REGISTRY.toUpperCase().replace("0X", "0x")}`;
      expect(endpointDomainMatch(file([{ agentRegistry: upper, agentId: 42 }]), [IDENTITY])).to.deep.equal({
        ok: true,
        identity: IDENTITY,
      });
      expect(endpointDomainMatch(file([{ agentRegistry: agentRegistryOf(OTHER), agentId: "43" }]), [IDENTITY, OTHER])).to.deep.equal({
        ok: true,
        identity: OTHER,
      });
      // The whole registration file is an endpoint-domain file too.
      expect(endpointDomainMatch(JSON.stringify(EXAMPLE), [IDENTITY])).to.deep.equal({ ok: true, identity: IDENTITY });
    });

    it("says which entry it looked for when none names the identity: another token, registry or chain", () => {
      const near = [
        { agentRegistry: agentRegistryOf(IDENTITY), agentId: 41 },
        { agentRegistry: `eip155:1:${REGISTRY}`, agentId: 42 },
        { agentRegistry: "eip155:8453:0x0000000000000000000000000000000000000001", agentId: 42 },
      ];
      expect(endpointDomainMatch(file(near), [IDENTITY])).to.deep.equal({
        ok: false,
        reason: "missing",
        message: `lists no registrations entry of agentRegistry eip155:8453:${REGISTRY} with agentId 42`,
      });
    });

    it("refuses a file without a registrations list of the standard's shape, or not JSON", () => {
      for (const text of [JSON.stringify({ vrai: ["token"] }), file([{ agentRegistry: 5, agentId: 42 }]), "registrations"]) {
        const match = endpointDomainMatch(text, [IDENTITY]);
        expect(match.ok, text).to.equal(false);
        expect(!match.ok && match.reason, text).to.equal("invalid");
      }
    });
  });

  describe("shownFields: what pages and the API show", () => {
    const file = (image: string | undefined): RegistrationFile => ({ type: REGISTRATION_V1_TYPE, name: "a", image });

    it("shows the name, description and services, and an image only when it is an https URL", () => {
      const parsed = parseRegistrationFile(JSON.stringify(EXAMPLE));
      expect(shownFields(parsed.ok ? parsed.file : null)).to.deep.equal({
        name: "Research Agent",
        description: "Finds and summarises papers.",
        image: "https://agent.example.org/logo.png",
        imageNotHttps: false,
        services: [
          { name: "web", endpoint: "https://agent.example.org/", version: null },
          { name: "A2A", endpoint: "https://agent.example.org/.well-known/agent-card.json", version: "0.3.0" },
        ],
      });
      for (const image of ["http://agent.example.org/logo.png", "data:image/svg+xml;base64,PHN2Zy8+", "javascript:alert(1)", "logo.png"]) {
        expect(shownFields(file(image)), image).to.include({ image: null, imageNotHttps: true });
      }
      expect(shownFields(file(undefined))).to.include({ image: null, imageNotHttps: false });
    });

    it("shows nothing of a file that was not read", () => {
      expect(shownFields(null)).to.deep.equal({ name: null, description: null, image: null, imageNotHttps: false, services: [] });
    });
  });
});
