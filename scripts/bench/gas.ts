/**
 * Gas used by the on-chain operations, on the in-process Hardhat network (`npm run bench:gas`).
 * A benchmark, not a test: it prints a table and exits non-zero only on an error.
 * Digests, roots, trace roots and hashes are random 32-byte values, as in production (their calldata cost
 * depends on their zero bytes).
 *
 * The example gate (contracts/examples/VraiGate.sol) checks a daily score of a 1,000,000-leaf day: its proof has 20
 * sibling hashes (2^19 < 1,000,000 <= 2^20), random, with the root they lead to anchored as a day of version-2 scores,
 * and the identity read from the reference ERC-8004 registry behind its proxy (test/fixtures/erc8004/). Each gate row
 * is given twice: the transaction's gas (with the 21,000 of any transaction and its calldata, 16 gas a non-zero byte
 * and 4 a zero byte), and the execution alone, that minus both, which is what the gate's own check costs and what
 * its target is for.
 */
import hre from "hardhat";
import { deployReferenceIdentity } from "../../test/helpers/erc8004Reference";
import { signAgentWallet } from "../../test/helpers/agentWallet";
import { SCORE_DAY_V2_KIND, scoreOf, valuesOf, SCORE_V2_TYPES } from "../../test/helpers/vraiScores";

type Row = { operation: string; gasUsed: bigint; target: number | null };

// Targets from issue 2; anchor's from issue 14 (a verifier's attestation beside the first anchor, METHOD A6).
// Approved submitProof's from issue #25 (typed calls to the identity registry); the gate's from issue 26: its whole check
// of a 20-level proof, the AnchorRegistry and identity reads included.
const TARGET = {
  anchor: 50_000,
  anchorRoot: 50_000,
  submitProof: 40_000,
  submitProofApproved: 42_000,
  settle: 90_000,
  gateExecution: 30_000,
} as const;
/** Proof levels of a 1,000,000-leaf day. */
const PROOF_LEVELS = 20;
/** Gas of any transaction, before its calldata. */
const INTRINSIC_GAS = 21_000n;

/** The calldata gas of `data` (EIP-2028): 16 a non-zero byte, 4 a zero byte. */
function calldataGas(data: string): bigint {
  let gas = 0n;
  for (let i = 2; i < data.length; i += 2) gas += data.slice(i, i + 2) === "00" ? 4n : 16n;
  return gas;
}

async function main(): Promise<void> {
  const { ethers } = hre;
  const [admin, service, verifier, platform, owner, wallet, operator, requesterOwner, approved] = await ethers.getSigners();
  const random = () => ethers.hexlify(ethers.randomBytes(32));
  const kind = ethers.encodeBytes32String("vrai.score-inputs");

  const identity = await ethers.deployContract("AgentIdentity");
  const anchors = await ethers.deployContract("AnchorRegistry", [admin.address]);
  const registry = await ethers.deployContract("Registry", [admin.address, await identity.getAddress()]);
  await anchors.grantRole(await anchors.ANCHORER_ROLE(), service.address);
  await anchors.grantRole(await anchors.VERIFIER_ROLE(), verifier.address);
  await registry.grantRole(await registry.PLATFORM_ROLE(), platform.address);

  await identity.connect(owner)["register(string)"]("ipfs://executor");
  await identity.connect(requesterOwner)["register(string)"]("ipfs://requester");
  const [executorId, requesterId] = [0n, 1n];
  await identity.connect(owner).setApprovalForAll(operator.address, true);
  const deadline = BigInt((await ethers.provider.getBlock("latest"))!.timestamp) + 120n;
  const signature = await wallet.signTypedData(
    {
      name: "ERC8004IdentityRegistry",
      version: "1",
      chainId: (await ethers.provider.getNetwork()).chainId,
      verifyingContract: await identity.getAddress(),
    },
    {
      AgentWalletSet: [
        { name: "agentId", type: "uint256" },
        { name: "newWallet", type: "address" },
        { name: "owner", type: "address" },
        { name: "deadline", type: "uint256" },
      ],
    },
    { agentId: executorId, newWallet: wallet.address, owner: owner.address, deadline },
  );
  await identity.connect(owner).setAgentWallet(executorId, wallet.address, deadline, signature);

  const rows: Row[] = [];
  const measure = async (
    operation: string,
    target: number | null,
    send: () => Promise<{ wait(): Promise<{ gasUsed: bigint } | null> }>,
  ) => {
    const receipt = await (await send()).wait();
    rows.push({ operation, gasUsed: receipt!.gasUsed, target });
  };
  /**
   * The transaction's gas and its execution alone (without the intrinsic 21,000 and the calldata's gas). From Prague on
   * (EIP-7623) a transaction pays at least 21,000 + 10 gas a calldata token (a zero byte 1, another 4); the execution is
   * derived only while the transaction pays more than that floor.
   */
  const measureExecution = async (
    operation: string,
    target: number,
    send: () => Promise<{ data: string; wait(): Promise<{ gasUsed: bigint } | null> }>,
  ) => {
    const tx = await send();
    const { gasUsed } = (await tx.wait())!;
    const calldata = calldataGas(tx.data);
    const floor = INTRINSIC_GAS + (10n * calldata) / 4n;
    if (gasUsed <= floor)
      throw new Error(`${operation}: ${gasUsed} gas is the calldata floor ${floor}: its execution cannot be told apart`);
    rows.push({
      operation: `${operation}: transaction (21,000 + ${calldata.toLocaleString("en-US")} calldata + execution)`,
      gasUsed,
      target: null,
    });
    rows.push({ operation: `${operation}: execution`, gasUsed: gasUsed - INTRINSIC_GAS - calldata, target });
  };

  const raced = random();
  await measure("anchor (anchorer role), digest not anchored yet", TARGET.anchor, () => anchors.connect(service).anchor(raced, kind));
  await measure("anchor (verifier role), digest anchored by an anchorer", TARGET.anchor, () =>
    anchors.connect(verifier).anchor(raced, kind),
  );
  const attested = random();
  await measure("anchor (verifier role), digest not anchored yet", TARGET.anchor, () => anchors.connect(verifier).anchor(attested, kind));
  await measure("anchor (anchorer role), digest attested by a verifier", TARGET.anchor, () =>
    anchors.connect(service).anchor(attested, kind),
  );
  await measure("anchorRoot, leafCount 1", TARGET.anchorRoot, () => anchors.connect(service).anchorRoot(random(), 1n, kind));
  await measure("anchorRoot, leafCount 1,000,000", TARGET.anchorRoot, () =>
    anchors.connect(service).anchorRoot(random(), 1_000_000n, kind),
  );
  await measure("submitProof by owner", TARGET.submitProof, () => registry.connect(owner).submitProof(executorId, true, 2, 0, random()));
  await measure("submitProof by agent wallet", TARGET.submitProof, () =>
    registry.connect(wallet).submitProof(executorId, false, 3, 2, random()),
  );
  await measure("submitProof by operator (approved for all)", TARGET.submitProof, () =>
    registry.connect(operator).submitProof(executorId, true, 0, 0, random()),
  );
  await identity.connect(owner).approve(approved.address, executorId);
  await measure("submitProof by approved account (worst case)", TARGET.submitProofApproved, () =>
    registry.connect(approved).submitProof(executorId, true, 1, 0, random()),
  );
  const settle = (verdict: number, withIntent: boolean) => () =>
    registry
      .connect(platform)
      .settle(random(), executorId, requesterId, withIntent ? random() : ethers.ZeroHash, verdict, withIntent ? random() : ethers.ZeroHash);
  await measure("settle FULFILLED, first for both agents", TARGET.settle, settle(1, true));
  await measure("settle FULFILLED, later, same agents", TARGET.settle, settle(1, true));
  await measure("settle VIOLATED, later, same agents", TARGET.settle, settle(3, true));
  await measure("settle legacy (no Intent), later, same agents", TARGET.settle, settle(0, false));
  await identity.connect(owner)["register()"]();
  await identity.connect(requesterOwner)["register()"]();
  await measure("settle legacy (no Intent), first for both agents", TARGET.settle, () =>
    registry.connect(platform).settle(random(), 2n, 3n, ethers.ZeroHash, 0, ethers.ZeroHash),
  );

  // The example gate: a 20-level proof of a version-2 leaf bound to token 0 of the reference ERC-8004 registry.
  const referenceIdentity = await deployReferenceIdentity();
  await referenceIdentity.connect(owner)["register(string)"]("ipfs://gated");
  const walletDeadline = BigInt((await ethers.provider.getBlock("latest"))!.timestamp) + 120n;
  await referenceIdentity.connect(owner).setAgentWallet(
    0n,
    wallet.address,
    walletDeadline,
    await signAgentWallet(referenceIdentity, wallet, {
      agentId: 0n,
      newWallet: wallet.address,
      owner: owner.address,
      deadline: walletDeadline,
    }),
  );
  const gate = await ethers.deployContract("VraiGate", [await anchors.getAddress(), await referenceIdentity.getAddress(), 300, 48 * 3600]);
  const day = Math.floor((await ethers.provider.getBlock("latest"))!.timestamp / 86_400) + 1;
  const score = scoreOf({
    agent: "agt_3f9c0d1e2b4a5968",
    day,
    erc8004ChainId: (await ethers.provider.getNetwork()).chainId,
    erc8004Registry: await referenceIdentity.getAddress(),
    erc8004TokenId: 0n,
  });
  const coder = ethers.AbiCoder.defaultAbiCoder();
  const proof = Array.from({ length: PROOF_LEVELS }, random);
  // OpenZeppelin's processProof: each level hashes the pair in byte order.
  const root = proof.reduce(
    (node, sibling) => ethers.keccak256(ethers.concat(BigInt(node) < BigInt(sibling) ? [node, sibling] : [sibling, node])),
    ethers.keccak256(ethers.keccak256(coder.encode(SCORE_V2_TYPES, valuesOf(score)))),
  );
  await hre.network.provider.send("evm_setNextBlockTimestamp", [day * 86_400 + 60]);
  await anchors.connect(service).anchorRoot(root, 1_000_000n, SCORE_DAY_V2_KIND);
  await measureExecution(`VraiGate.enter, ${PROOF_LEVELS}-level proof, by the identity's owner`, TARGET.gateExecution, () =>
    gate.connect(owner).enter(score, proof, root),
  );
  await measureExecution(`VraiGate.enter, ${PROOF_LEVELS}-level proof, by its agent wallet`, TARGET.gateExecution, () =>
    gate.connect(wallet).enter(score, proof, root),
  );

  const table = rows.map(({ operation, gasUsed, target }) => ({
    operation,
    "gas used": Number(gasUsed).toLocaleString("en-US"),
    target: target === null ? "-" : target.toLocaleString("en-US"),
    "within target": target === null ? "-" : gasUsed <= BigInt(target) ? "yes" : "no",
  }));
  const widths = Object.keys(table[0]).map((key) =>
    Math.max(key.length, ...table.map((row) => String(row[key as keyof typeof row]).length)),
  );
  const line = (cells: string[]) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join(" | ");
  console.log(`Gas on the Hardhat network (hardfork ${hre.config.networks.hardhat.hardfork})\n`);
  console.log(line(Object.keys(table[0])));
  console.log(widths.map((width) => "-".repeat(width)).join("-|-"));
  for (const row of table) console.log(line(Object.values(row)));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
