import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { InvalidInputError } from "../errors";
import { DeploymentFileError, parseDeployment, readDeployment, readFollowedDeployment, type DeploymentJson } from "./deployment";

const IDENTITY = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const ANCHORS = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";
const REGISTRY = "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0";
const DEPLOYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

/** A file as scripts/deploy.ts writes it, the identity registry reused. */
const written: DeploymentJson = {
  network: "localhost",
  chainId: 31337,
  deployedAt: "2026-11-02T10:00:00.000Z",
  deployer: DEPLOYER,
  contracts: {
    IdentityRegistry: { address: IDENTITY, blockNumber: null, txHash: null, reused: true },
    AnchorRegistry: { address: ANCHORS, blockNumber: 7, txHash: `0x${"ab".repeat(32)}`, reused: false, contractName: "AnchorRegistry" },
    Registry: { address: REGISTRY, blockNumber: 8, txHash: `0x${"cd".repeat(32)}`, reused: false, contractName: "Registry" },
  },
  roles: {
    AnchorRegistry: { DEFAULT_ADMIN_ROLE: [DEPLOYER], ANCHORER_ROLE: [DEPLOYER], VERIFIER_ROLE: [DEPLOYER] },
    Registry: { DEFAULT_ADMIN_ROLE: [DEPLOYER], PLATFORM_ROLE: [] },
  },
};

/** The message of the DeploymentFileError `fn` throws. */
function problem(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).to.be.instanceOf(DeploymentFileError).and.instanceOf(InvalidInputError).with.property("code", "invalid_deployment");
    if (error instanceof DeploymentFileError) return error.message;
  }
  return expect.fail("expected a DeploymentFileError");
}

describe("deployment files", () => {
  it("reads a file as scripts/deploy.ts writes it, unchanged", () => {
    expect(parseDeployment(written, "localhost.json")).to.deep.equal(written);
  });

  it("reads the contracts' addresses in their checksummed form", () => {
    const lower = {
      network: "localhost",
      chainId: 31337,
      contracts: {
        IdentityRegistry: { address: IDENTITY.toLowerCase() },
        AnchorRegistry: { address: ANCHORS.toLowerCase() },
        Registry: { address: REGISTRY.toLowerCase() },
      },
    };
    const { contracts } = parseDeployment(lower, "localhost.json");
    expect([contracts.IdentityRegistry.address, contracts.AnchorRegistry.address, contracts.Registry.address]).to.deep.equal([
      IDENTITY,
      ANCHORS,
      REGISTRY,
    ]);
  });

  it("names the file and every wrong field", () => {
    const broken = {
      network: "localhost",
      chainId: 0,
      contracts: { AnchorRegistry: "nope", Registry: { address: "0x12", blockNumber: -1 } },
    };
    expect(problem(() => parseDeployment(broken, "d.json"))).to.equal(
      "d.json: chainId is not a positive integer; contracts.IdentityRegistry.address is not an address; contracts.AnchorRegistry.address is not an address; " +
        "contracts.Registry.address is not an address; contracts.Registry.blockNumber is not a block number",
    );
    expect(problem(() => parseDeployment({ ...written, contracts: undefined }, "d.json"))).to.equal("d.json: contracts is not an object");
    expect(problem(() => parseDeployment([], "d.json"))).to.equal("d.json: is not a deployment (a JSON object)");
  });

  it("refuses a mixed-case address whose EIP-55 checksum is wrong", () => {
    const typo = { ...written, contracts: { ...written.contracts, Registry: { address: REGISTRY.replace("fE", "Fe") } } };
    expect(problem(() => parseDeployment(typo, "d.json"))).to.equal("d.json: contracts.Registry.address is not an address");
  });

  describe("on disk", () => {
    let dir: string;
    let file: string;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-deployment-"));
      file = path.join(dir, "localhost.json");
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    it("reads a file, naming it when it is missing or not JSON", () => {
      expect(problem(() => readDeployment(file))).to.match(new RegExp(`^${file}: ENOENT`));
      fs.writeFileSync(file, "{ not json");
      expect(problem(() => readDeployment(file))).to.match(new RegExp(`^${file}: .*JSON`));
      fs.writeFileSync(file, JSON.stringify(written));
      expect(readDeployment(file).contracts.Registry.address).to.equal(REGISTRY);
    });

    it("gives the indexer the registries and the earliest block of the contracts the deployment created", () => {
      fs.writeFileSync(file, JSON.stringify(written));
      expect(readFollowedDeployment(file)).to.deep.equal({
        chainId: 31337,
        contracts: { registry: REGISTRY, anchorRegistry: ANCHORS, identityRegistry: IDENTITY },
        startBlock: 7,
      });
    });

    it("starts the indexer at a reused identity registry's own deployment block, before the contracts the deployment created", () => {
      const reused = {
        ...written,
        contracts: { ...written.contracts, IdentityRegistry: { address: IDENTITY, blockNumber: 3, txHash: null, reused: true } },
      };
      fs.writeFileSync(file, JSON.stringify(reused));
      expect(readFollowedDeployment(file).startBlock).to.equal(3);
    });

    it("refuses the indexer a deployment without any deployment block", () => {
      fs.writeFileSync(
        file,
        JSON.stringify({
          network: "x",
          chainId: 1,
          contracts: { IdentityRegistry: { address: IDENTITY }, AnchorRegistry: { address: ANCHORS }, Registry: { address: REGISTRY } },
        }),
      );
      expect(problem(() => readFollowedDeployment(file))).to.equal(
        `${file}: contracts.Registry.blockNumber is missing: the indexer starts from the deployment block`,
      );
    });
  });
});
