/**
 * How webhook signing secrets are kept (issue #28): the service signs every delivery with the secret
 * itself, so a hash would not do. Each is sealed with AES-256-GCM under a key that is not in the
 * database (WEBHOOK_SECRETS_KEY, or one derived from OPERATOR_TOKEN with HKDF-SHA256 when it is unset),
 * so a copy of the database alone (a backup, a dump) holds no secret that signs. A sealed secret names
 * the key it was sealed under by a short digest of it, so a key that changed is said as such, never
 * taken for a wrong secret.
 */
import crypto from "node:crypto";
import { BaseError } from "../../errors";

/** Seals and opens webhook secrets. */
export type SecretBox = {
  /** `v1.<key id>.<iv>.<ciphertext and tag>`, base64url parts. */
  seal(secret: string): string;
  /** The secret `seal` sealed; throws `webhook_secret_unreadable` when it was sealed under another key. */
  open(sealed: string): string;
};

/** A sealed secret of another key (WEBHOOK_SECRETS_KEY or OPERATOR_TOKEN changed): the endpoint needs a new secret. */
export class SecretUnreadableError extends BaseError {
  constructor(message: string) {
    super("webhook_secret_unreadable", message, { status: 500 });
  }
}

/** The 32-byte key of `WEBHOOK_SECRETS_KEY` (64 hex digits or base64 of 32 bytes), or one derived from `fallback` (OPERATOR_TOKEN). */
export function secretsKey(configured: string | undefined, fallback: string): Buffer {
  if (configured !== undefined) {
    const key = /^[0-9a-fA-F]{64}$/.test(configured) ? Buffer.from(configured, "hex") : Buffer.from(configured, "base64");
    if (key.length !== 32) throw new Error("WEBHOOK_SECRETS_KEY: expected 32 bytes, as 64 hex digits or base64");
    return key;
  }
  return Buffer.from(crypto.hkdfSync("sha256", fallback, "vrai", "webhook signing secrets", 32));
}

/** A box sealing with `key` (32 bytes). */
export function createSecretBox(key: Buffer): SecretBox {
  const keyId = crypto.createHash("sha256").update(key).digest("base64url").slice(0, 8);
  return {
    seal(secret) {
      const iv = crypto.randomBytes(12);
      const cipher = crypto.createCipheriv("aes-256-gcm", key, iv);
      const sealed = Buffer.concat([cipher.update(secret, "utf8"), cipher.final(), cipher.getAuthTag()]);
      return ["v1", keyId, iv.toString("base64url"), sealed.toString("base64url")].join(".");
    },
    open(sealed) {
      const [version, id, iv, data] = sealed.split(".");
      if (version !== "v1" || id !== keyId) {
        throw new SecretUnreadableError(
          "this endpoint's signing secret was sealed under another key (WEBHOOK_SECRETS_KEY or OPERATOR_TOKEN changed): rotate its secret",
        );
      }
      const bytes = Buffer.from(data, "base64url");
      const decipher = crypto.createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
      decipher.setAuthTag(bytes.subarray(bytes.length - 16));
      return Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - 16)), decipher.final()]).toString("utf8");
    },
  };
}

/** A new signing secret, as Standard Webhooks spells them: `whsec_` and the base64 of 24 random bytes. */
export const generateSigningSecret = (): string => `whsec_${crypto.randomBytes(24).toString("base64")}`;
