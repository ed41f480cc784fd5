/**
 * Bounded HTTP reads for proof sources: every request has a timeout and every body a size cap,
 * and transport failures become `ProofSourceUnreachableError`, which `unreachableRetry` retries.
 */
import { InvalidInputError } from "../../errors";
import { retry, type Sleep } from "../../retry";
import { ProofSourceUnreachableError, type RetryPolicy, unreachableRetry } from "./errors";

/** What the verifiers ask of a request (GETs only), and webhook deliveries (a POST with a body). */
export type FetchInit = {
  method: "GET" | "POST";
  body?: string;
  headers?: Record<string, string>;
  redirect: "follow" | "manual" | "error";
  signal: AbortSignal;
};

/** A response body's reader, as DOM and `node:stream/web` streams both give it. */
type BodyReader = {
  read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }>;
  cancel(): Promise<void>;
};

/** What the verifiers read of a response. */
export type FetchResponse = {
  status: number;
  headers: { get(name: string): string | null };
  body: { getReader(): BodyReader } | null;
};

/** The subset of `fetch` the verifiers use; `createOutboundFetch` (outbound.ts) is the one they get. */
export type Fetch = (input: string, init: FetchInit) => Promise<FetchResponse>;

export type BoundedResponse = {
  status: number;
  headers: FetchResponse["headers"];
  /** The body decoded as UTF-8, cut at `maxBytes`. */
  text: string;
  /** True when the body was longer than `maxBytes` (then `text` holds its first `maxBytes` bytes). */
  cut: boolean;
};

/**
 * GETs `url` with a timeout covering the whole exchange (connect, headers and body), reads at most
 * `maxBytes` of its body (never buffering more), and maps network errors and timeouts to
 * `ProofSourceUnreachableError`. A refusal of the fetch itself (`proof_forbidden_address`) is final
 * and passes through. HTTP statuses are left to the caller.
 */
export async function boundedGet(
  fetchImpl: Fetch,
  url: string,
  options: {
    timeoutMs: number;
    maxBytes: number;
    headers?: Record<string, string>;
    redirect?: "follow" | "manual" | "error";
    /** Ends the request early too (a submission's deadline). */
    signal?: AbortSignal;
  },
): Promise<BoundedResponse> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
  try {
    const response = await fetchImpl(url, { method: "GET", headers: options.headers, redirect: options.redirect ?? "follow", signal });
    const { text, cut } = await readBounded(response, options.maxBytes);
    return { status: response.status, headers: response.headers, text, cut };
  } catch (error) {
    if (error instanceof InvalidInputError) throw error;
    const what = timeout.aborted
      ? `timed out after ${options.timeoutMs} ms`
      : signal.aborted
        ? "stopped: the submission ran out of time"
        : `failed: ${error instanceof Error ? error.message : String(error)}`;
    throw new ProofSourceUnreachableError(`GET ${url} ${what}`, { cause: error });
  }
}

/** The body of `response` decoded as UTF-8, at most `maxBytes` of it read (never buffering more). */
export async function readBounded(response: FetchResponse, maxBytes: number): Promise<{ text: string; cut: boolean }> {
  if (!response.body) return { text: "", cut: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let cut = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const room = maxBytes - size;
    chunks.push(value.byteLength > room ? value.subarray(0, room) : value);
    size += Math.min(value.byteLength, room);
    if (value.byteLength > room) {
      cut = true;
      await reader.cancel();
      break;
    }
  }
  return { text: Buffer.concat(chunks).toString("utf8"), cut };
}

/** 5xx and 429 mean "try again later": the source is unreachable for now, not proving anything. */
export function isTransientStatus(status: number): boolean {
  return status >= 500 || status === 429;
}

/**
 * A GET of a JSON file of a proof source, redirects not followed (the caller decides), retried as V6 says while the
 * source is unreachable: a transport failure, a timeout, a 5xx or a 429. Any other status is the caller's to judge.
 * @param deadline a submission's: ends the tries and the waits between them
 */
export function retriedGet(
  deps: { fetch: Fetch; httpTimeoutMs: number; retry: RetryPolicy; sleep: Sleep },
  url: string,
  options: { maxBytes: number; userAgent: string; deadline?: AbortSignal },
): Promise<BoundedResponse> {
  return retry(
    async () => {
      const answer = await boundedGet(deps.fetch, url, {
        timeoutMs: deps.httpTimeoutMs,
        maxBytes: options.maxBytes,
        headers: { accept: "application/json", "user-agent": options.userAgent },
        redirect: "manual",
        signal: options.deadline,
      });
      if (isTransientStatus(answer.status)) throw new ProofSourceUnreachableError(`GET ${url} answered ${answer.status}`);
      return answer;
    },
    unreachableRetry(deps, options.deadline),
  );
}
