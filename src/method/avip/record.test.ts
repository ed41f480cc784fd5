import { expect } from "chai";
import { rejectionMessage } from "../../test-helpers/rejection";
import { validateRecord, validateRecords } from "./record";

const GOOD = {
  txHash: "0xab",
  executor: "did:erc8004:1:0x0000000000000000000000000000000000000001:7",
  success: true,
  riskLevel: "low",
  policyViolations: 0,
  verified: true,
  traceRoot: "0xr",
  source: "onchain",
  blockNumber: 1,
  logIndex: 0,
};
const SELF = { ...GOOD, source: "self-reported", blockNumber: undefined, logIndex: undefined };

/** The message a record is rejected with, or null when it is accepted. */
const rejection = (json: unknown) => rejectionMessage(() => validateRecord(json, 3), "invalid_record");

describe("A1 records: rejected with the record and the field named, never dropped (A1)", () => {
  for (const [what, json, message] of [
    ["null", null, "records[3]: expected an object, got null"],
    ["an array", [GOOD], "records[3]: expected an object, got an array"],
    ["a string", "0xab", 'records[3]: expected an object, got "0xab"'],
    ["no txHash", { ...GOOD, txHash: undefined }, "records[3].txHash: expected a non-empty string, got nothing"],
    ["an empty txHash", { ...GOOD, txHash: "" }, 'records[3].txHash: expected a non-empty string, got ""'],
    ["a numeric txHash", { ...GOOD, txHash: 5 }, "records[3].txHash: expected a non-empty string, got 5"],
    [
      "an executor that is no DID",
      { ...GOOD, executor: "agent-7" },
      'records[3].executor: expected a DID string (did:...), got "agent-7" (txHash 0xab)',
    ],
    ["a numeric executor", { ...GOOD, executor: 7 }, "records[3].executor: expected a DID string (did:...), got 7 (txHash 0xab)"],
    ["success as text", { ...GOOD, success: "yes" }, 'records[3].success: expected true|false, got "yes" (txHash 0xab)'],
    [
      "an unknown risk",
      { ...GOOD, riskLevel: "extreme" },
      'records[3].riskLevel: expected low|medium|high|critical, got "extreme" (txHash 0xab)',
    ],
    [
      "negative violations",
      { ...GOOD, policyViolations: -1 },
      "records[3].policyViolations: expected a whole number >= 0, got -1 (txHash 0xab)",
    ],
    [
      "fractional violations",
      { ...GOOD, policyViolations: 1.5 },
      "records[3].policyViolations: expected a whole number >= 0, got 1.5 (txHash 0xab)",
    ],
    [
      "violations as text",
      { ...GOOD, policyViolations: "1" },
      'records[3].policyViolations: expected a whole number >= 0, got "1" (txHash 0xab)',
    ],
    ["verified as a number", { ...GOOD, verified: 1 }, "records[3].verified: expected true|false, got 1 (txHash 0xab)"],
    ["an empty traceRoot", { ...GOOD, traceRoot: "" }, 'records[3].traceRoot: expected a non-empty string, got "" (txHash 0xab)'],
    ["a numeric traceRoot", { ...GOOD, traceRoot: 3 }, "records[3].traceRoot: expected a non-empty string, got 3 (txHash 0xab)"],
    [
      "an on-chain record without its block",
      { ...GOOD, blockNumber: undefined },
      "records[3].blockNumber: expected a whole number >= 0 (on-chain record), got nothing (txHash 0xab)",
    ],
    [
      "an on-chain record with a negative log index",
      { ...GOOD, logIndex: -1 },
      "records[3].logIndex: expected a whole number >= 0 (on-chain record), got -1 (txHash 0xab)",
    ],
    [
      "a self-reported record with a negative block",
      { ...SELF, blockNumber: -1 },
      "records[3].blockNumber: expected a whole number >= 0 or absent, got -1 (txHash 0xab)",
    ],
    [
      "a self-reported record with a log index as text",
      { ...SELF, logIndex: "x" },
      'records[3].logIndex: expected a whole number >= 0 or absent, got "x" (txHash 0xab)',
    ],
    ["an unknown source", { ...GOOD, source: "oracle" }, 'records[3].source: expected onchain|self-reported, got "oracle" (txHash 0xab)'],
  ] as const) {
    it(`rejects ${what}`, () => {
      expect(rejection(json)).to.equal(message);
    });
  }

  it("accepts every risk level, a self-reported record with or without (or null) block and log index, and extra fields", () => {
    for (const riskLevel of ["low", "medium", "high", "critical"]) expect(rejection({ ...GOOD, riskLevel }), riskLevel).to.equal(null);
    expect(rejection(SELF)).to.equal(null);
    expect(rejection({ ...SELF, blockNumber: null, logIndex: null })).to.equal(null);
    expect(rejection({ ...SELF, blockNumber: 0, logIndex: 2 })).to.equal(null);
    expect(rejection({ ...GOOD, note: "kept" })).to.equal(null);
  });

  it("names at most 80 characters of a long txHash", () => {
    const txHash = `0x${"a".repeat(100)}`;
    expect(rejection({ ...GOOD, txHash, success: 1 })).to.equal(
      `records[3].success: expected true|false, got 1 (txHash ${txHash.slice(0, 80)})`,
    );
  });

  it("checks the F1 document and each of its records, naming the first bad one", () => {
    for (const json of [null, [], "x", {}, { records: 5 }]) {
      expect(() => validateRecords(json))
        .to.throw(/^records: expected \{ "records": \[ \.\.\. \] \}, got /)
        .with.property("code", "invalid_record");
    }
    expect(validateRecords({ records: [GOOD, SELF] })).to.have.length(2);
    expect(validateRecords({ records: [] })).to.deep.equal([]);
    expect(() => validateRecords({ records: [GOOD, { ...GOOD, success: 0 }] })).to.throw(/^records\[1\]\.success: /);
  });
});

describe("the F1 document (F1, A1)", () => {
  it("is an object with a records array: nothing else is, an array carrying a records property included", () => {
    const array = Object.assign([], { records: [GOOD] });
    for (const json of [undefined, 5, true, array]) {
      expect(() => validateRecords(json), String(json))
        .to.throw(/^records: expected \{ "records": \[ \.\.\. \] \}, got /)
        .with.property("code", "invalid_record");
    }
  });
});
