/**
 * A real Hardhat JSON-RPC node in a child process (`hardhat node`), for code that talks to a chain over HTTP like
 * the indexer; and a driver that deploys Vrai's contracts to it and sends transactions in JSON-RPC batches.
 * One node per test file: it takes a few seconds to start.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { encodeFunctionData, keccak256, toHex, type Abi, type Address, type Hex } from "viem";
import { anchorRegistryAbi } from "../chain/abi/anchorRegistry";
import { identityRegistryAbi } from "../chain/abi/identityRegistry";
import { registryAbi } from "../chain/abi/registry";
import { deployReferenceIdentity } from "./erc8004-reference";

const ROOT = path.join(__dirname, "..", "..");

export type HardhatNode = { url: string; close(): Promise<void> };

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `hardhat node` on a free port from the repository root and waits until it serves JSON-RPC.
 * @example const node = await startHardhatNode(); after(() => node.close());
 */
export async function startHardhatNode(): Promise<HardhatNode> {
  const port = await freePort();
  const env = { ...process.env };
  delete env.HARDHAT_NETWORK;
  const child = spawn(
    process.execPath,
    [require.resolve("hardhat/internal/cli/cli.js"), "node", "--hostname", "127.0.0.1", "--port", String(port)],
    {
      cwd: ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`hardhat node did not start in 60 s:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("Started HTTP and WebSocket JSON-RPC server")) {
        clearTimeout(timer);
        child.stdout.off("data", onData);
        // Keep draining its output (one line per request) so the pipe never fills.
        child.stdout.resume();
        resolve();
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`hardhat node exited with ${code}:\n${output}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGKILL");
      }),
  };
}

type JsonRpcCall = { method: string; params: unknown[] };

/** Sends JSON-RPC calls to `url` as one batch; throws on the first error. */
export async function rpcBatch<T = unknown>(url: string, calls: readonly JsonRpcCall[]): Promise<T[]> {
  if (calls.length === 0) return [];
  const body = calls.map((c, id) => ({ jsonrpc: "2.0", id, method: c.method, params: c.params }));
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const answers = (await response.json()) as Array<{ id: number; result?: T; error?: { code: number; message: string } }>;
  const byId = new Map(answers.map((a) => [a.id, a]));
  return calls.map((c, id) => {
    const a = byId.get(id);
    if (!a || a.error) throw new Error(`${c.method}: ${a?.error?.message ?? "no answer"}`);
    return a.result as T;
  });
}

/** One JSON-RPC call. */
export async function rpc<T = unknown>(url: string, method: string, params: unknown[] = []): Promise<T> {
  return (await rpcBatch<T>(url, [{ method, params }]))[0];
}

type NodeContract = { address: Address; blockNumber: number; txHash: Hex; reused: false };

/** The content of a deployment file (scripts/deploy.ts `Deployment`, the fields the indexer reads). */
export type NodeDeployment = {
  network: string;
  chainId: number;
  contracts: Record<"AnchorRegistry" | "Registry", NodeContract> & {
    /** AgentIdentity deployed with the others, or the reference registry reused, as scripts/deploy.ts records it. */
    IdentityRegistry: NodeContract | { address: Address; blockNumber: number; txHash: null; reused: true };
  };
};

/**
 * Which ERC-8004 identity registry the Registry is deployed over: Vrai's AgentIdentity, the reference one deployed
 * behind its proxy, or an identity registry already on the chain (reused, with the block it was deployed in).
 */
export type NodeIdentityRegistry = "AgentIdentity" | "reference" | { reuse: Address; blockNumber: number };

export type Tx = { from: Address; to: Address; data: Hex };
export type RiskLevelIndex = 0 | 1 | 2 | 3;

/** Vrai's contracts on a node, and transactions against them. Account 0 is admin, anchorer and platform; account 1 is verifier. */
export type NodeDriver = {
  url: string;
  accounts: Address[];
  deployment: NodeDeployment;
  /** Where the deployment file was written. */
  file: string;
  /** Sends transactions (one batch) and, with automine on, waits for nothing else: each is mined as it arrives. `gas` per transaction, 200,000 by default. */
  send(txs: readonly Tx[], options?: { gas?: number }): Promise<Hex[]>;
  /** Mints identity tokens to `owner` (in the deployment's identity registry unless `registry` says another) and returns their agent ids. */
  register(owner: Address, count?: number, registry?: Address): Promise<bigint[]>;
  proofTx(
    from: Address,
    agentId: bigint,
    record: { success: boolean; riskLevel: RiskLevelIndex; policyViolations: number; traceRoot: Hex },
  ): Tx;
  settleTx(orderId: Hex, executorId: bigint, requesterId: bigint, verdict: 0 | 1 | 2 | 3): Tx;
  anchorTx(from: Address, digest: Hex): Tx;
  transferTx(from: Address, to: Address, agentId: bigint, registry?: Address): Tx;
  /** Deploys another reference ERC-8004 identity registry behind its proxy; returns its address and deployment block. */
  deployReferenceIdentity(): Promise<{ address: Address; blockNumber: number }>;
  /** Deploys a compiled contract without constructor arguments (by source path, e.g. `test/ProofBatcher`); returns its address. */
  deploy(name: string): Promise<Address>;
  /** A call of `functionName` on `to` from `from`, as a transaction. */
  callTx(to: Address, abi: Abi, functionName: string, args: unknown[], from?: Address): Tx;
  /** Turns automine on or off (off: transactions wait in the pool until `mine`). */
  setAutomine(on: boolean): Promise<void>;
  mine(blocks?: number): Promise<void>;
  blockNumber(): Promise<number>;
  snapshot(): Promise<Hex>;
  revert(id: Hex): Promise<void>;
};

/** A compiled artifact by source path under contracts/, e.g. `Registry` or `test/ProofBatcher`. */
function artifact(source: string): { abi: Abi; bytecode: Hex } {
  const file = path.join(ROOT, "artifacts", "contracts", `${source}.sol`, `${path.basename(source)}.json`);
  return JSON.parse(fs.readFileSync(file, "utf8")) as { abi: Abi; bytecode: Hex };
}

const TRANSFER_TOPIC = keccak256(toHex("Transfer(address,address,uint256)"));

/** A trace root for tests: keccak of a label. */
export const traceRoot = (label: string): Hex => keccak256(toHex(label));

/**
 * Deploys AgentIdentity (or, with `identity: "reference"`, the reference ERC-8004 registry behind its proxy, recorded
 * as reused), AnchorRegistry and Registry to the node with its unlocked accounts, grants roles, and writes
 * `<dir>/<network>.json`.
 */
export async function deployToNode(
  url: string,
  dir: string,
  network = "localhost",
  options: { identity?: NodeIdentityRegistry } = {},
): Promise<NodeDriver> {
  const accounts = await rpc<Address[]>(url, "eth_accounts");
  // The node prints every call and transaction otherwise, which costs more than running them.
  await rpc(url, "hardhat_setLoggingEnabled", [false]);
  const [admin, verifier] = accounts;
  const GAS = "0xf42400"; // 16,000,000: deployments (under the node's transaction gas cap)
  const receipt = async (hash: Hex) =>
    rpc<{ contractAddress: Address; blockNumber: Hex; status: Hex }>(url, "eth_getTransactionReceipt", [hash]);
  const deploy = async (name: string, args: Hex) => {
    const { bytecode } = artifact(name);
    const hash = await rpc<Hex>(url, "eth_sendTransaction", [{ from: admin, data: (bytecode + args.slice(2)) as Hex, gas: GAS }]);
    const r = await receipt(hash);
    if (r.status !== "0x1") throw new Error(`deploying ${name} failed`);
    return { address: r.contractAddress, blockNumber: Number(r.blockNumber), txHash: hash, reused: false as const };
  };
  const word = (a: Address) => `0x${a.slice(2).toLowerCase().padStart(64, "0")}` as Hex;
  const deployCode = async (data: Hex) => {
    const r = await receipt(await rpc<Hex>(url, "eth_sendTransaction", [{ from: admin, data, gas: GAS }]));
    if (r.status !== "0x1") throw new Error("deploying the reference identity registry failed");
    return { address: r.contractAddress, blockNumber: Number(r.blockNumber) };
  };
  const sendCall = async (to: Address, data: Hex) => {
    const r = await receipt(await rpc<Hex>(url, "eth_sendTransaction", [{ from: admin, to, data, gas: GAS }]));
    if (r.status !== "0x1") throw new Error(`call to ${to} reverted`);
  };
  const deployReference = () => deployReferenceIdentity({ deploy: deployCode, send: sendCall });
  const reused = (registry: { address: Address; blockNumber: number }) => ({ ...registry, txHash: null, reused: true as const });
  const identity: NodeDeployment["contracts"]["IdentityRegistry"] =
    options.identity === undefined || options.identity === "AgentIdentity"
      ? await deploy("AgentIdentity", "0x")
      : reused(
          options.identity === "reference"
            ? await deployReference()
            : { address: options.identity.reuse, blockNumber: options.identity.blockNumber },
        );
  const anchors = await deploy("AnchorRegistry", word(admin));
  const registry = await deploy("Registry", `0x${word(admin).slice(2)}${word(identity.address).slice(2)}` as Hex);
  const role = (name: string) => keccak256(toHex(name));
  const call = (to: Address, abi: Abi, functionName: string, args: unknown[], from: Address = admin): Tx => ({
    from,
    to,
    data: encodeFunctionData({ abi, functionName, args } as never),
  });
  const chainId = Number(await rpc<Hex>(url, "eth_chainId"));

  const send = async (txs: readonly Tx[], options: { gas?: number } = {}) =>
    rpcBatch<Hex>(
      url,
      txs.map((t) => ({ method: "eth_sendTransaction", params: [{ ...t, gas: toHex(options.gas ?? 200_000) }] })),
    );
  await send([
    call(anchors.address, anchorRegistryAbi as Abi, "grantRole", [role("ANCHORER_ROLE"), admin]),
    call(anchors.address, anchorRegistryAbi as Abi, "grantRole", [role("VERIFIER_ROLE"), verifier]),
    call(registry.address, registryAbi as Abi, "grantRole", [role("PLATFORM_ROLE"), admin]),
  ]);
  const deployment: NodeDeployment = {
    network,
    chainId,
    contracts: { IdentityRegistry: identity, AnchorRegistry: anchors, Registry: registry },
  };
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${network}.json`);
  fs.writeFileSync(file, `${JSON.stringify(deployment, null, 2)}\n`);

  return {
    url,
    accounts,
    deployment,
    file,
    send,
    deploy: async (name) => (await deploy(name, "0x")).address,
    callTx: call,
    deployReferenceIdentity: deployReference,
    async register(owner, count = 1, registryAddress = identity.address) {
      const hashes = await send(
        Array.from({ length: count }, () => call(registryAddress, identityRegistryAbi as Abi, "register", [], owner)),
      );
      const ids: bigint[] = [];
      for (const hash of hashes) {
        const r = await rpc<{ logs: Array<{ topics: Hex[] }>; status: Hex }>(url, "eth_getTransactionReceipt", [hash]);
        if (r.status !== "0x1") throw new Error("register failed");
        const mint = r.logs.find((log) => log.topics[0] === TRANSFER_TOPIC && log.topics.length === 4);
        if (!mint) throw new Error("register emitted no Transfer");
        ids.push(BigInt(mint.topics[3]));
      }
      return ids;
    },
    proofTx: (from, agentId, r) =>
      call(registry.address, registryAbi as Abi, "submitProof", [agentId, r.success, r.riskLevel, r.policyViolations, r.traceRoot], from),
    settleTx: (orderId, executorId, requesterId, verdict) => {
      const legacy = verdict === 0;
      const zero = `0x${"0".repeat(64)}` as Hex;
      return call(registry.address, registryAbi as Abi, "settle", [
        orderId,
        executorId,
        requesterId,
        legacy ? zero : keccak256(orderId),
        verdict,
        legacy ? zero : keccak256(keccak256(orderId)),
      ]);
    },
    anchorTx: (from, digest) => call(anchors.address, anchorRegistryAbi as Abi, "anchor", [digest, toHex("test", { size: 32 })], from),
    transferTx: (from, to, agentId, registryAddress = identity.address) =>
      call(registryAddress, identityRegistryAbi as Abi, "transferFrom", [from, to, agentId], from),
    async setAutomine(on) {
      await rpc(url, "evm_setAutomine", [on]);
    },
    async mine(blocks = 1) {
      await rpc(url, "hardhat_mine", [`0x${blocks.toString(16)}`]);
    },
    blockNumber: async () => Number(await rpc<Hex>(url, "eth_blockNumber")),
    snapshot: () => rpc<Hex>(url, "evm_snapshot"),
    async revert(id) {
      if ((await rpc<boolean>(url, "evm_revert", [id])) !== true) throw new Error(`evm_revert(${id}) failed`);
    },
  };
}
