/**
 * Webhooks from Vrai, as a receiver checks them (issue #28): the Standard Webhooks signature checked by
 * the `standardwebhooks` package, the one the service signs with.
 */
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import { BaseError } from "../errors";
import type { ApiJson } from "./api";

/** An event from Vrai: the body of a webhook, and an item of `GET /v1/events` (the same JSON), told apart by `type`. */
export type VraiEvent = ApiJson<"listEvents", 200>["events"][number];

/** A webhook that does not hold: a signature of another secret, a body changed on the way, a timestamp over 5 minutes away, a header missing. */
export class WebhookSignatureError extends BaseError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("webhook_signature_invalid", message, { status: 401, cause: options.cause });
  }
}

/** Headers as a receiver has them: Node's `req.headers`, a Fetch `Headers`, or a plain object. */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

const SIGNED_HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;

/** The three headers Standard Webhooks signs with, by their lowercase names. */
function signedHeaders(headers: WebhookHeaders): Record<string, string> {
  const picked: Record<string, string> = {};
  const lower =
    headers instanceof Headers
      ? (name: string) => headers.get(name) ?? undefined
      : (name: string) => {
          const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
          const value = key === undefined ? undefined : headers[key];
          return Array.isArray(value) ? value.join(" ") : (value as string | undefined);
        };
  for (const name of SIGNED_HEADERS) {
    const value = lower(name);
    if (value !== undefined) picked[name] = value;
  }
  return picked;
}

/**
 * Checks a webhook from Vrai and returns its event: the body exactly as it arrived (the raw bytes, before any
 * JSON parsing), its headers, and the endpoint's signing secret (`whsec_...`, shown when the endpoint was made or
 * its secret rotated; during a rotation's 24 hours either secret holds). Throws `WebhookSignatureError` when it
 * does not hold: answer such a request 401 and act on nothing in it. Deliveries come at least once and in no set
 * order: the event's `id` (its `webhook-id`) is the same on every try, and `timestamp` says when it happened.
 * @example
 * // What a receiver gets from Vrai: the raw body and its three headers. Here one made by hand, signed as Vrai signs.
 * const { createHmac } = await import("node:crypto");
 * const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
 * const body = JSON.stringify({ id: "evt_1", type: "ping", timestamp: "2026-11-02T10:00:00Z", data: { webhookId: "whk_1", message: "hi" } });
 * const timestamp = String(Math.floor(Date.now() / 1000));
 * const mac = createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64")).update(`evt_1.${timestamp}.${body}`).digest("base64");
 * const headers = { "webhook-id": "evt_1", "webhook-timestamp": timestamp, "webhook-signature": `v1,${mac}` };
 * const event = verifyWebhook(body, headers, secret);
 * if (event.type === "ping") console.log(`ping for ${event.data.webhookId}`);
 */
export function verifyWebhook(body: string | Uint8Array, headers: WebhookHeaders, secret: string): VraiEvent {
  const text = typeof body === "string" ? body : Buffer.from(body).toString("utf8");
  let event: unknown;
  try {
    event = new Webhook(secret).verify(text, signedHeaders(headers));
  } catch (error) {
    if (error instanceof WebhookVerificationError)
      throw new WebhookSignatureError(`not a webhook from Vrai: ${error.message}`, { cause: error });
    throw error;
  }
  return event as VraiEvent;
}
