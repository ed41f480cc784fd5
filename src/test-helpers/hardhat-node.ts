/**
 * The in-process Hardhat chain of `startTestChain` served over HTTP JSON-RPC, as `hardhat node` serves it, for
 * code that takes an RPC URL (`vrai verify --rpc`, the anchoring writer from configuration). Starting it costs
 * a listen, not a child process; the chain is the same one `startTestChain()` drives through viem.
 */
import type { AddressInfo } from "node:net";
import net from "node:net";
import type { HardhatRuntimeEnvironment } from "hardhat/types";

export type ChainRpcServer = { url: string; close(): Promise<void> };

type JsonRpcServerClass = new (config: {
  hostname: string;
  port: number;
  provider: HardhatRuntimeEnvironment["network"]["provider"];
}) => {
  listen(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
};

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Serves the in-process Hardhat network's provider at `http://127.0.0.1:<free port>` (call `startTestChain()` first).
 * @example const chain = await startTestChain(); const rpc = await serveTestChainRpc(); after(() => rpc.close());
 */
export async function serveTestChainRpc(): Promise<ChainRpcServer> {
  const hre = require("hardhat") as HardhatRuntimeEnvironment;
  const { JsonRpcServer } = require("hardhat/internal/hardhat-network/jsonrpc/server") as { JsonRpcServer: JsonRpcServerClass };
  const server = new JsonRpcServer({ hostname: "127.0.0.1", port: await freePort(), provider: hre.network.provider });
  const { port } = await server.listen();
  return { url: `http://127.0.0.1:${port}`, close: () => server.close() };
}
