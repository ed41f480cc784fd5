import crypto from "node:crypto";
import { InvalidInputError } from "../errors";

// `canonicalize` is ESM-only; Node >= 20.19 loads it through require(esm). A typed `require`
// keeps `tsc` (module node16, CommonJS) from rejecting the static import.
const canonicalize: (value: unknown) => string | undefined = require("canonicalize").default;

/**
 * RFC 8785 (JCS) serialisation of a JSON value (V9).
 * @throws InvalidInputError `not_canonicalizable` for values JSON cannot hold (NaN, lone surrogates, undefined).
 * @example canonicalJson({ b: 1, a: [true, null] }) // '{"a":[true,null],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  let out: string | undefined;
  try {
    out = canonicalize(value);
  } catch (cause) {
    throw new InvalidInputError("not_canonicalizable", `cannot canonicalise: ${(cause as Error).message}`, { cause });
  }
  if (out === undefined) throw new InvalidInputError("not_canonicalizable", "cannot canonicalise a value with no JSON form");
  return out;
}

/**
 * SHA-256 of a string (as UTF-8) or bytes, lowercase hex (V9).
 * @example sha256Hex("") // "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
 */
export function sha256Hex(data: string | Uint8Array): string {
  return oneShotHash !== undefined ? oneShotHash("sha256", data, "hex") : crypto.createHash("sha256").update(data).digest("hex");
}

// Node >= 20.12 hashes small inputs in one call, several times faster than createHash (the day
// digest is on the check-in path).
const oneShotHash = (crypto as unknown as { hash?: (algorithm: string, data: string | Uint8Array, encoding: "hex") => string }).hash;
