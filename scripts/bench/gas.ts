/**
 * Gas used by the on-chain operations, on the in-process Hardhat network (`npm run bench:gas`).
 * A benchmark, not a test: it prints a table and exits non-zero only on an error.
 * Digests, roots, trace roots and hashes are random 32-byte values, as in production (their calldata cost
 * depends on their zero bytes).
 */
import hre from "hardhat";

type Row = { operation: string; gasUsed: bigint; target: number | null };

// Targets from issue 2; anchor's from issue 14 (a verifier's attestation beside the first anchor, METHOD A6).
/** Issue #25: typed calls to the identity registry instead of hand-written staticcalls may take an approved account's submitProof to 42,000. */
const TARGET = { anchor: 50_000, anchorRoot: 50_000, submitProof: 40_000, submitProofApproved: 42_000, settle: 90_000 } as const;

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
    { name: "ERC8004IdentityRegistry", version: "1", chainId: (await ethers.provider.getNetwork()).chainId, verifyingContract: await identity.getAddress() },
    { AgentWalletSet: [{ name: "agentId", type: "uint256" }, { name: "newWallet", type: "address" }, { name: "owner", type: "address" }, { name: "deadline", type: "uint256" }] },
    { agentId: executorId, newWallet: wallet.address, owner: owner.address, deadline },
  );
  await identity.connect(owner).setAgentWallet(executorId, wallet.address, deadline, signature);

  const rows: Row[] = [];
  const measure = async (operation: string, target: number | null, send: () => Promise<{ wait(): Promise<{ gasUsed: bigint } | null> }>) => {
    const receipt = await (await send()).wait();
    rows.push({ operation, gasUsed: receipt!.gasUsed, target });
  };

  const raced = random();
  await measure("anchor (anchorer role), digest not anchored yet", TARGET.anchor, () => anchors.connect(service).anchor(raced, kind));
  await measure("anchor (verifier role), digest anchored by an anchorer", TARGET.anchor, () => anchors.connect(verifier).anchor(raced, kind));
  const attested = random();
  await measure("anchor (verifier role), digest not anchored yet", TARGET.anchor, () => anchors.connect(verifier).anchor(attested, kind));
  await measure("anchor (anchorer role), digest attested by a verifier", TARGET.anchor, () => anchors.connect(service).anchor(attested, kind));
  await measure("anchorRoot, leafCount 1", TARGET.anchorRoot, () => anchors.connect(service).anchorRoot(random(), 1n, kind));
  await measure("anchorRoot, leafCount 1,000,000", TARGET.anchorRoot, () =>
    anchors.connect(service).anchorRoot(random(), 1_000_000n, kind),
  );
  await measure("submitProof by owner", TARGET.submitProof, () =>
    registry.connect(owner).submitProof(executorId, true, 2, 0, random()),
  );
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
