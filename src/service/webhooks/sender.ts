/**
 * One try of a delivery (issue #28): the event's JSON signed as Standard Webhooks says (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature`: `v1,` and the HMAC-SHA256 of `id.timestamp.body`, by the
 * `standardwebhooks` package), POSTed through the outbound guard of proof checks (public addresses only,
 * every resolved address checked inside the connection, no redirect followed), with a connect and a
 * total timeout. It never throws: every outcome is an attempt for the delivery log.
 */
import { Webhook } from "standardwebhooks";
import { createOutboundFetch, type ResolveAddresses } from "../proofs/outbound";
import { readBounded } from "../proofs/http";
import { forbiddenWebhookAddress } from "./url";

/** What the delivery log keeps of a try. */
export type TryOutcome = {
  /** The answer's status; null when there was none (a timeout, a connection refused or failed, an address refused). */
  status: number | null;
  latencyMs: number;
  error: string | null;
  /** At most `RESPONSE_BYTES` of the answer's body. */
  response: string;
};

/** A delivery to send: the event's id (the `webhook-id` of every try), its body, and the secrets to sign with (one, or two while a rotation overlaps). */
export type Send = (request: { url: string; id: string; body: string; secrets: readonly string[] }) => Promise<TryOutcome>;

/** Bytes of an answer's body the log keeps. */
export const RESPONSE_BYTES = 1024;

/**
 * The sender of deliveries.
 * @param deps.timeoutMs a whole try, connect to last byte of the answer
 * @param deps.allowLoopback `vrai dev`: loopback receivers too
 * @param deps.now the machine's clock in ms, for `webhook-timestamp`: receivers compare it with theirs (whatever the service's clock says)
 */
export function createSender(deps: { resolve: ResolveAddresses; timeoutMs: number; allowLoopback: boolean; now?: () => number }): Send {
  const fetchOut = createOutboundFetch({
    resolve: deps.resolve,
    connectTimeoutMs: Math.min(deps.timeoutMs, 5_000),
    allowLoopback: deps.allowLoopback,
    refuse: forbiddenWebhookAddress,
  });
  const now = deps.now ?? Date.now;
  return async ({ url, id, body, secrets }) => {
    const timestamp = new Date(now());
    // Standard Webhooks: several signatures, space-separated; a receiver accepts the one its secret makes.
    const signature = secrets.map((secret) => new Webhook(secret).sign(id, timestamp, body)).join(" ");
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const timeout = AbortSignal.timeout(deps.timeoutMs);
    try {
      const answer = await fetchOut(url, {
        method: "POST",
        body,
        headers: {
          "content-type": "application/json",
          "user-agent": "Vrai-Webhooks/1",
          "webhook-id": id,
          "webhook-timestamp": String(Math.floor(timestamp.getTime() / 1000)),
          "webhook-signature": signature,
        },
        redirect: "manual",
        signal: timeout,
      });
      const { text } = await readBounded(answer, RESPONSE_BYTES);
      return { status: answer.status, latencyMs: elapsed(), error: null, response: text };
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause;
      const why = timeout.aborted
        ? `timed out after ${deps.timeoutMs} ms`
        : error instanceof Error && error.message !== "fetch failed"
          ? error.message
          : cause instanceof Error
            ? cause.message
            : String(error);
      return { status: null, latencyMs: elapsed(), error: why, response: "" };
    }
  };
}
