import { expect } from "chai";
import fc from "fast-check";
import { FLAGS, countRecords, deriveScores, capFor, interpretationOf, multiplierFor, scoreCounts, type Flag } from "./derive";
import { validateRecord, validateRecords, type ProofRecord } from "./record";
import { executorId } from "./executor-id";

const EX = "did:erc8004:8453:0x00000000000000000000000000000000000000aa:1";
let seq = 0;

function rec(over: Partial<ProofRecord> = {}): ProofRecord {
  seq++;
  return {
    txHash: `0x${seq.toString(16).padStart(64, "0")}`,
    executor: EX,
    success: true,
    riskLevel: "medium",
    policyViolations: 0,
    verified: true,
    traceRoot: `0x${"ab".repeat(32)}`,
    source: "onchain",
    blockNumber: seq,
    logIndex: 0,
    ...over,
  };
}

function many(n: number, over: (i: number) => Partial<ProofRecord> = () => ({})): ProofRecord[] {
  return Array.from({ length: n }, (_, i) => rec(over(i)));
}

function derive(records: ProofRecord[]) {
  return deriveScores(records)[EX];
}

describe("AVIP-TRU SDK Derived Score (A1–A5)", () => {
  it("computes a hand-checked case in exact fractions, rounding only the reported figures (A3)", () => {
    // 7 records: 5 successes (2 high/critical), 1 with violations, 2 verified.
    const records = many(7, (i) => ({
      success: i < 5,
      riskLevel: i === 0 ? "high" : i === 1 ? "critical" : "low",
      policyViolations: i === 6 ? 2 : 0,
      verified: i < 2,
    }));
    expect(derive(records)).to.deep.equal({
      scoreType: "sdk-derived",
      score: 48.25, // (300/7 + 1.05 + 30/7 + 60/7) * 0.85 = 48.2496...
      raw: 56.76,
      multiplier: 0.85,
      cap: 65,
      total: 7,
      verifiedCount: 2,
      components: { base: 42.86, volume: 1.05, riskBonus: 4.29, consistency: 8.57 },
      flags: ["HAS_VIOLATIONS"],
      interpretation: "Moderate trust",
    });
  });

  it("gives total 0 score 0, every component 0 and no flags (A2.4)", () => {
    const zero = { successes: 0, highRiskSuccesses: 0, withViolations: 0, verified: 0, allLow: true, recentFailures: 0, recent: 0 };
    expect(scoreCounts({ total: 0, ...zero })).to.deep.equal({
      scoreType: "sdk-derived",
      score: 0,
      raw: 0,
      multiplier: 1,
      cap: 55,
      total: 0,
      verifiedCount: 0,
      components: { base: 0, volume: 0, riskBonus: 0, consistency: 0 },
      flags: [],
      interpretation: "Untrusted",
    });
    expect(deriveScores([])).to.deep.equal({});
  });

  // raw = 85 + 0.15 * total for all-successful high-risk records without violations.
  // At 19, raw * 0.7 = 61.495 exactly, reported 61.5; binary floating point would give 61.49.
  const table: Array<[number, number, number, number]> = [
    [2, 1, 55, 55],
    [3, 0.85, 55, 55],
    [4, 0.85, 55, 55],
    [5, 0.85, 65, 65],
    [9, 0.85, 65, 65],
    [10, 0.7, 75, 60.55],
    [19, 0.7, 75, 61.5],
    [20, 0.7, 100, 61.6],
  ];
  for (const [total, multiplier, cap, score] of table) {
    it(`applies multiplier ${multiplier} and cap ${cap} at total ${total} with nothing verified (A3, AVIP-TRU-CS)`, () => {
      const r = derive(many(total, () => ({ verified: false, riskLevel: "high" })));
      expect(r).to.include({ multiplier, cap, total, score });
      expect(capFor(total)).to.equal(cap);
    });
  }

  it("applies no multiplier when exactly half the records are verified (A3: ratio < 1/2)", () => {
    expect(multiplierFor(10, 5)).to.equal(100);
    expect(multiplierFor(10, 4)).to.equal(70);
    expect(multiplierFor(4, 2)).to.equal(100);
    expect(multiplierFor(3, 1)).to.equal(85);
  });

  it("caps a perfect short history at 75 below 20 records (A3)", () => {
    expect(derive(many(19, () => ({ riskLevel: "critical" })))).to.include({ score: 75, raw: 87.85, multiplier: 1 });
  });

  describe("flags (A4), on and off at their thresholds", () => {
    const flagsOf = (records: ProofRecord[]) => derive(records).flags;
    const cases: Array<[Flag, ProofRecord[], ProofRecord[]]> = [
      ["LOW_SUCCESS_RATE", many(4, (i) => ({ success: i < 1 })).concat(many(0)), many(4, (i) => ({ success: i < 2 }))],
      ["HAS_VIOLATIONS", many(3, (i) => ({ policyViolations: i === 2 ? 1 : 0 })), many(3)],
      ["LOW_RISK_ONLY", many(51, () => ({ riskLevel: "low" })), many(50, () => ({ riskLevel: "low" }))],
      ["RECENT_FAILURES", many(20, (i) => ({ success: i < 14 })), many(20, (i) => ({ success: i < 15 }))],
      ["NO_VERIFIED_PROOFS", many(3, () => ({ verified: false })), many(3, (i) => ({ verified: i === 0 }))],
    ];
    for (const [flag, on, off] of cases) {
      it(`raises ${flag} at its threshold and not just before`, () => {
        expect(flagsOf(on)).to.include(flag);
        expect(flagsOf(off)).not.to.include(flag);
      });
    }

    it("keeps LOW_RISK_ONLY off above 50 records when one is not low", () => {
      expect(flagsOf(many(51, (i) => ({ riskLevel: i === 7 ? "medium" : "low" })))).not.to.include("LOW_RISK_ONLY");
    });

    it("looks only at the last min(10, total) records in order for RECENT_FAILURES", () => {
      expect(flagsOf(many(4, (i) => ({ success: i === 0 })))).to.include("RECENT_FAILURES"); // 3 of 4 failed
      expect(flagsOf(many(4, (i) => ({ success: i < 2 })))).not.to.include("RECENT_FAILURES"); // 2 of 4
      expect(flagsOf(many(30, (i) => ({ success: i >= 10 })))).not.to.include("RECENT_FAILURES"); // old failures
    });

    it("lists flags in the order of the A4 table", () => {
      const r = derive(many(60, () => ({ success: false, riskLevel: "low", verified: false, policyViolations: 1 })));
      expect(r.flags).to.deep.equal(["LOW_SUCCESS_RATE", "HAS_VIOLATIONS", "LOW_RISK_ONLY", "RECENT_FAILURES", "NO_VERIFIED_PROOFS"]);
      expect(r.interpretation).to.equal("Untrusted");
    });
  });

  describe("selection, order and dedup (A2)", () => {
    it("ignores self-reported records once an on-chain record exists", () => {
      const r = derive([rec({ source: "self-reported", success: false }), rec({ success: true })]);
      expect(r).to.include({ total: 1, verifiedCount: 1 });
      expect(r.flags).to.deep.equal([]);
    });

    it("never counts a self-reported record as verified (A6)", () => {
      const r = derive(many(3, () => ({ source: "self-reported", verified: true, blockNumber: undefined, logIndex: undefined })));
      expect(r).to.include({ verifiedCount: 0, multiplier: 0.85 });
      expect(r.flags).to.include("NO_VERIFIED_PROOFS");
    });

    it("dedups by txHash case-insensitively, keeping the first in (blockNumber, logIndex) order", () => {
      const later = rec({ txHash: "0xABC", blockNumber: 10, logIndex: 1, success: true });
      const earlier = rec({ txHash: "0xabc", blockNumber: 10, logIndex: 0, success: false });
      const r = derive([later, earlier]);
      expect(r.total).to.equal(1);
      expect(r.flags).to.include("LOW_SUCCESS_RATE");
    });

    it("keeps self-reported records in the order given", () => {
      const records = [
        rec({ source: "self-reported", txHash: "t", success: true }),
        rec({ source: "self-reported", txHash: "T", success: false }),
      ];
      expect(derive(records).flags).not.to.include("LOW_SUCCESS_RATE");
    });
  });

  describe("record validation (A1)", () => {
    it("names the record, its txHash and the field", () => {
      const bad = { ...rec(), riskLevel: "extreme", txHash: "0xfeed" };
      expect(() => validateRecords({ records: [rec(), rec(), rec(), bad] })).to.throw(
        'records[3].riskLevel: expected low|medium|high|critical, got "extreme" (txHash 0xfeed)',
      );
    });

    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      [
        "a missing blockNumber on an on-chain record",
        { blockNumber: undefined },
        /records\[0\]\.blockNumber: expected a whole number >= 0 \(on-chain record\), got nothing/,
      ],
      [
        "a fractional policyViolations",
        { policyViolations: 1.5 },
        /records\[0\]\.policyViolations: expected a whole number >= 0, got 1\.5/,
      ],
      ["a string success", { success: "true" }, /records\[0\]\.success: expected true\|false, got "true"/],
      ["an unknown source", { source: "oracle" }, /records\[0\]\.source: expected onchain\|self-reported/],
      ["an executor that is not a DID", { executor: "agent-1" }, /records\[0\]\.executor: expected a DID string/],
    ];
    for (const [what, over, message] of cases) {
      it(`rejects ${what}`, () => {
        expect(() => validateRecord({ ...rec(), ...over }, 0))
          .to.throw(message)
          .with.property("code", "invalid_record");
      });
    }

    it("rejects an input without a records array", () => {
      expect(() => validateRecords([])).to.throw(/^records: expected/);
    });
  });

  describe("executor ids", () => {
    it("builds did:erc8004:<chainId>:<registry lowercase>:<agentId>", () => {
      expect(executorId(8453, "0xAbC0000000000000000000000000000000000001", 42n)).to.equal(
        "did:erc8004:8453:0xabc0000000000000000000000000000000000001:42",
      );
      expect(executorId(1n, "0x0000000000000000000000000000000000000001", "7")).to.equal(
        "did:erc8004:1:0x0000000000000000000000000000000000000001:7",
      );
    });

    it("rejects a bad chain id, address or agent id", () => {
      expect(() => executorId(0, "0x0000000000000000000000000000000000000001", 1)).to.throw(/chainId/);
      expect(() => executorId(1, "0x01", 1)).to.throw(/identityRegistry/);
      expect(() => executorId(1, "0x0000000000000000000000000000000000000001", "-1")).to.throw(/agentId/);
    });
  });

  describe("properties", () => {
    const recordArb = fc
      .record({
        tx: fc.integer({ min: 0, max: 40 }),
        upper: fc.boolean(),
        executor: fc.constantFrom("did:x:a", "did:x:b", "did:x:c"),
        success: fc.boolean(),
        riskLevel: fc.constantFrom("low", "medium", "high", "critical"),
        policyViolations: fc.nat(3),
        verified: fc.boolean(),
        onchain: fc.boolean(),
        blockNumber: fc.nat(20),
        logIndex: fc.nat(3),
      })
      .map(
        (r): ProofRecord => ({
          txHash: r.upper ? `0xAB${r.tx}` : `0xab${r.tx}`,
          executor: r.executor,
          success: r.success,
          riskLevel: r.riskLevel as ProofRecord["riskLevel"],
          policyViolations: r.policyViolations,
          verified: r.verified,
          traceRoot: "0x01",
          source: r.onchain ? "onchain" : "self-reported",
          ...(r.onchain ? { blockNumber: r.blockNumber, logIndex: r.logIndex } : {}),
        }),
      );

    it("keeps every derived score within [0, cap] (A3)", () => {
      fc.assert(
        fc.property(fc.array(recordArb, { maxLength: 80 }), (records) => {
          for (const r of Object.values(deriveScores(records))) {
            expect(r.score).to.be.within(0, r.cap);
            expect(r.score).to.be.at.most(100);
          }
        }),
        { numRuns: 300 },
      );
    });

    it("is idempotent under dedup: repeating every record (any case) changes nothing (A2.3)", () => {
      fc.assert(
        fc.property(fc.array(recordArb, { maxLength: 60 }), (records) => {
          const repeated = records.concat(records.map((r) => ({ ...r, txHash: r.txHash.toUpperCase() })));
          expect(deriveScores(repeated)).to.deep.equal(deriveScores(records));
        }),
        { numRuns: 300 },
      );
    });
  });
});

describe("AVIP-TRU SDK Derived Score: boundaries (A2, A5) and executor ids", () => {
  it("interprets each score by the A5 thresholds, a threshold itself in the lower band", () => {
    const bands = [0, 20, 20.01, 40, 40.01, 60, 60.01, 80, 80.01, 100].map((score) => interpretationOf(score));
    expect(bands).to.deep.equal([
      "Untrusted",
      "Untrusted",
      "Low trust",
      "Low trust",
      "Moderate trust",
      "Moderate trust",
      "High trust",
      "High trust",
      "Very high trust",
      "Very high trust",
    ]);
  });

  it("keeps self-reported records in the order given even when they carry a block, and leaves the input as it was (A2.2)", () => {
    const later = rec({ source: "self-reported", blockNumber: 9, logIndex: 0, success: false, txHash: "0xsame" });
    const earlier = rec({ source: "self-reported", blockNumber: 1, logIndex: 0, success: true, txHash: "0xSAME" });
    // The first in the order given wins the dedup (A2.3): the failure.
    expect(deriveScores([later, earlier])[EX]).to.deep.include({
      total: 1,
      flags: ["LOW_SUCCESS_RATE", "RECENT_FAILURES", "NO_VERIFIED_PROOFS"],
    });
    const onchain = [rec({ blockNumber: 9, success: false, txHash: "0xsame" }), rec({ blockNumber: 1, success: true, txHash: "0xSAME" })];
    const given = [...onchain];
    // On chain, (blockNumber, logIndex) decides: the success at block 1 comes first.
    expect(deriveScores(onchain)[EX].components.base).to.equal(60);
    expect(onchain).to.deep.equal(given);
  });

  it("scores each executor of interleaved records on its own records only (F1)", () => {
    const other = "did:erc8004:8453:0x00000000000000000000000000000000000000aa:2";
    const out = deriveScores([rec({ success: true }), rec({ executor: other, success: false }), rec({ success: true })]);
    expect([out[EX].total, out[EX].components.base, out[other].total, out[other].components.base]).to.deep.equal([2, 60, 1, 0]);
  });

  it("rejects a chain id, registry or agent id it cannot name, with invalid_executor_id, and accepts agent 0", () => {
    const registry = "0x0000000000000000000000000000000000000001";
    expect(executorId(1, registry, 0)).to.equal(`did:erc8004:1:${registry}:0`);
    expect(executorId(1, registry, "0")).to.equal(`did:erc8004:1:${registry}:0`);
    for (const [chainId, reg, agentId] of [
      [1.5, registry, 1],
      [-1, registry, 1],
      [1, "0x01", 1],
      [1, registry, 1.5],
      [1, registry, -1n],
      [1, registry, "x"],
      [1, registry, "01"],
    ] as const) {
      expect(() => executorId(chainId, reg, agentId), `${chainId} ${reg} ${agentId}`)
        .to.throw()
        .with.property("code", "invalid_executor_id");
    }
  });
});

describe("the A4 flags table", () => {
  it("lists the flags in the order of the A4 table", () => {
    expect([...FLAGS]).to.deep.equal(["LOW_SUCCESS_RATE", "HAS_VIOLATIONS", "LOW_RISK_ONLY", "RECENT_FAILURES", "NO_VERIFIED_PROOFS"]);
  });
});

describe("counting one executor's records (A2, A4)", () => {
  it("leaves the records it is given as they were, out of chain order too (A2.2)", () => {
    const records = [rec({ blockNumber: 9 }), rec({ blockNumber: 2 }), rec({ blockNumber: 5, success: false })];
    const given = [...records];
    expect(countRecords(records, 3)).to.include({ total: 3, successes: 2, recentFailures: 1, recent: 3 });
    expect(records).to.deep.equal(given);
  });

  it("counts nothing, and no recent record, for an executor with no record (A2.4, A4)", () => {
    expect(countRecords([], 0)).to.deep.equal({
      total: 0,
      successes: 0,
      highRiskSuccesses: 0,
      withViolations: 0,
      verified: 0,
      allLow: true,
      recentFailures: 0,
      recent: 0,
    });
  });
});
