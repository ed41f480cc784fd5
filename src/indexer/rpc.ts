/**
 * The indexer's view of a chain through any EVM JSON-RPC endpoint (viem's HTTP transport, requests made in the
 * same tick sent as one JSON-RPC batch). Errors come out classified: a log query too large for the node is an
 * `RpcRangeError` (the caller halves its range), anything else the node or the network did is an
 * `RpcTransportError`, retried here with backoff before it is thrown.
 */
import { createPublicClient, http, type Address, type Hex, type PublicClient } from "viem";
import type { Logger } from "pino";
import { registryAbi } from "../chain/abi/registry";
import { shortMessageOf } from "../chain/short-message";
import { retry, type Sleep } from "../retry";
import { RpcRangeError, RpcTransportError } from "./errors";

/** A log as `eth_getLogs` returns it (hex quantities). */
export type RawLog = {
  address: Hex;
  topics: Hex[];
  data: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  transactionHash: Hex;
  logIndex: Hex;
  removed?: boolean;
};

/** The parts of a block header the indexer keeps. */
export type BlockHeader = { number: number; hash: Hex; parentHash: Hex; timestamp: number };

export type ChainRpc = {
  chainId(): Promise<number>;
  blockNumber(): Promise<number>;
  /** Logs of `addresses` with one of `topic0s` in `[fromBlock, toBlock]`. @throws RpcRangeError when the node refuses the size */
  getLogs(query: { fromBlock: number; toBlock: number; addresses: readonly Address[]; topic0s: readonly Hex[] }): Promise<RawLog[]>;
  /** Headers of blocks by number, one batch; null for a block the chain does not have (it got shorter). */
  getHeaders(numbers: readonly number[]): Promise<Map<number, BlockHeader | null>>;
  /** `Registry.networkScoreOf` of each agent at `blockNumber`, in tenths. */
  networkScores(registry: Address, agentIds: readonly bigint[], blockNumber: number): Promise<Map<bigint, number>>;
};

/** How transport failures are retried: `tries` attempts, the wait doubling from `baseMs` up to `maxMs`. */
export type RetryPolicy = { tries: number; baseMs: number; maxMs: number };

export const DEFAULT_RPC_RETRY: RetryPolicy = { tries: 5, baseMs: 250, maxMs: 8_000 };

// Messages nodes and providers use when a log query is too large (geth, Erigon, Alchemy, Infura, QuickNode, ...).
const RANGE_MESSAGE = new RegExp(
  [
    String.raw`more than \d+ results`,
    "too many (results|logs|blocks)",
    "block range",
    "range (is )?too (large|wide|big)",
    "exceed(s|ed)? .*(range|limit|results)",
    "limit exceeded",
    "response (size|is too big)",
    "query timeout",
  ].join("|"),
  "i",
);
// EIP-1474 "limit exceeded".
const LIMIT_EXCEEDED_CODE = -32005;

/** Classifies an error of a JSON-RPC call (viem wraps the node's error; its cause chain keeps code and message). */
export function classifyRpcError(error: unknown, what: string): RpcRangeError | RpcTransportError {
  const messages: string[] = [];
  let code: number | undefined;
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const details = (e as { details?: unknown }).details;
    messages.push(e.message, typeof details === "string" ? details : "");
    const c = (e as { code?: unknown }).code;
    if (typeof c === "number" && code === undefined) code = c;
  }
  const text = messages.join(" | ");
  const short = shortMessageOf(error);
  if (code === LIMIT_EXCEEDED_CODE || RANGE_MESSAGE.test(text)) return new RpcRangeError(`${what}: ${short}`, { cause: error });
  return new RpcTransportError(`${what}: ${short}`, { cause: error });
}

/**
 * Connects to `url`.
 * @param deps.sleep waits between retries (tests pass a fast one)
 * @example const rpc = createChainRpc({ url: "http://127.0.0.1:8545" }); await rpc.blockNumber();
 */
export function createChainRpc(deps: { url: string; logger?: Logger; retry?: RetryPolicy; sleep?: Sleep; timeoutMs?: number }): ChainRpc {
  const client: PublicClient = createPublicClient({
    transport: http(deps.url, { batch: { batchSize: 500, wait: 0 }, retryCount: 0, timeout: deps.timeoutMs ?? 60_000 }),
  });
  const policy = deps.retry ?? DEFAULT_RPC_RETRY;

  /** Runs `call`, retrying transport failures; a range error is thrown at once for the caller to shrink. */
  function withRetry<T>(what: string, call: () => Promise<T>): Promise<T> {
    return retry(
      async () => {
        try {
          return await call();
        } catch (error) {
          throw classifyRpcError(error, what);
        }
      },
      {
        attempts: policy.tries,
        baseDelayMs: policy.baseMs,
        maxDelayMs: policy.maxMs,
        retryable: (error) => !(error instanceof RpcRangeError),
        onRetry: ({ error, attempt, delayMs }) =>
          deps.logger?.warn(
            { what, attempt, waitMs: delayMs, err: error instanceof Error ? error.message : error },
            "rpc call failed, retrying",
          ),
        sleep: deps.sleep,
      },
    );
  }

  const hex = (n: number) => `0x${n.toString(16)}` as Hex;
  const request = <T>(method: string, params: unknown[]) => client.request({ method, params } as never) as Promise<T>;

  return {
    chainId: () => withRetry("eth_chainId", async () => Number(await request<Hex>("eth_chainId", []))),
    blockNumber: () => withRetry("eth_blockNumber", async () => Number(await request<Hex>("eth_blockNumber", []))),
    getLogs: (q) =>
      withRetry(`eth_getLogs ${q.fromBlock}-${q.toBlock}`, () =>
        request<RawLog[]>("eth_getLogs", [
          { fromBlock: hex(q.fromBlock), toBlock: hex(q.toBlock), address: q.addresses, topics: [q.topic0s] },
        ]),
      ),
    getHeaders: (numbers) =>
      withRetry(`eth_getBlockByNumber x${numbers.length}`, async () => {
        const blocks = await Promise.all(
          numbers.map((n) =>
            request<{ number: Hex; hash: Hex; parentHash: Hex; timestamp: Hex } | null>("eth_getBlockByNumber", [hex(n), false]),
          ),
        );
        const out = new Map<number, BlockHeader | null>();
        numbers.forEach((n, i) => {
          const b = blocks[i];
          out.set(
            n,
            b === null ? null : { number: Number(b.number), hash: b.hash, parentHash: b.parentHash, timestamp: Number(b.timestamp) },
          );
        });
        return out;
      }),
    networkScores: (registry, agentIds, blockNumber) =>
      withRetry(`networkScoreOf x${agentIds.length}`, async () => {
        const results = await Promise.all(
          agentIds.map((agentId) =>
            client.readContract({
              address: registry,
              abi: registryAbi,
              functionName: "networkScoreOf",
              args: [agentId],
              blockNumber: BigInt(blockNumber),
            }),
          ),
        );
        return new Map(agentIds.map((id, i) => [id, Number(results[i][0])]));
      }),
  };
}
