import { expect } from "chai";
import { rejectionMessage } from "../../test-helpers/rejection";
import { executorId } from "./executor-id";

const REGISTRY = "0x00000000000000000000000000000000000000aa";

/** The message `executorId` rejects its arguments with (code invalid_executor_id), or null when it builds a DID. */
const rejection = (chainId: number | bigint, identityRegistry: string, agentId: number | bigint | string) =>
  rejectionMessage(() => executorId(chainId, identityRegistry, agentId), "invalid_executor_id");

describe("executor ids (A1 executor; docs/executor-id.md): one DID per ERC-8004 identity", () => {
  it("writes chain id and agent id in decimal from a number, a bigint or a decimal string, the largest safe numbers included", () => {
    expect(executorId(Number.MAX_SAFE_INTEGER, REGISTRY, Number.MAX_SAFE_INTEGER)).to.equal(
      `did:erc8004:9007199254740991:${REGISTRY}:9007199254740991`,
    );
    expect(executorId(1, REGISTRY, 0)).to.equal(`did:erc8004:1:${REGISTRY}:0`);
    expect(executorId(1, REGISTRY, 0n)).to.equal(`did:erc8004:1:${REGISTRY}:0`);
    expect(executorId(1, REGISTRY, "0")).to.equal(`did:erc8004:1:${REGISTRY}:0`);
    // An ERC-721 token id is a uint256: as a string or a bigint it may exceed 2^53.
    expect(executorId(10n ** 20n, REGISTRY, "123456789012345678901234567890")).to.equal(
      `did:erc8004:100000000000000000000:${REGISTRY}:123456789012345678901234567890`,
    );
    expect(executorId(1, REGISTRY, 2n ** 70n)).to.equal(`did:erc8004:1:${REGISTRY}:${2n ** 70n}`);
  });

  it("rejects a chain id that is not a positive whole number, naming it", () => {
    for (const chainId of [0, -1, 0n, -5n, 1.5, Number.NaN, 2 ** 53, Number.POSITIVE_INFINITY]) {
      expect(rejection(chainId, REGISTRY, 1), String(chainId)).to.equal(`chainId: expected a positive integer, got ${chainId}`);
    }
  });

  it("takes the identity registry only as 0x and exactly 40 hex digits, in any case, and writes it lowercase", () => {
    expect(executorId(1, "0xABCDEF0123456789abcdef0123456789ABCDEF01", 1)).to.equal(
      "did:erc8004:1:0xabcdef0123456789abcdef0123456789abcdef01:1",
    );
    for (const address of [
      `0x${"a".repeat(39)}`,
      `0x${"a".repeat(41)}`,
      `x${REGISTRY}`,
      `${REGISTRY}0`,
      `${REGISTRY} `,
      `0X${"a".repeat(40)}`,
      `0x${"g".repeat(40)}`,
      "a".repeat(42),
      "",
    ]) {
      expect(rejection(1, address, 1), address).to.equal(`identityRegistry: expected a 0x address, got ${JSON.stringify(address)}`);
    }
  });

  it("takes an agent id as a whole number >= 0 or its one decimal form, and rejects anything else", () => {
    expect(executorId(1, REGISTRY, "1090")).to.equal(`did:erc8004:1:${REGISTRY}:1090`);
    for (const agentId of ["-1", "", "007", "01", " 7", "7 ", "7x", "x7", "1e3", "0x10", "1.5", "+1", -1, -1n, 1.5, 2 ** 53, Number.NaN]) {
      expect(rejection(1, REGISTRY, agentId), String(agentId)).to.equal(`agentId: expected a whole number >= 0, got ${String(agentId)}`);
    }
  });
});
