import crypto from "node:crypto";
import canonicalize from "canonicalize";
import { InvalidInputError } from "../errors";

/**
 * A lone surrogate in the output: JSON.stringify (ES2019) writes one as a `\udXXX` escape (a pair stays as
 * its character), so an escape of a surrogate whose backslash is not itself escaped can only be one.
 * `canonicalize` 2.x leaves them in; RFC 8785 (3.2.2.2, I-JSON) makes them an error.
 */
const LONE_SURROGATE = /(?:^|[^\\])(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/;

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
  if (out.includes("\\ud") && LONE_SURROGATE.test(out))
    throw new InvalidInputError("not_canonicalizable", "cannot canonicalise: a string holds a lone surrogate");
  return out;
}

/**
 * SHA-256 of a string (as UTF-8) or bytes, lowercase hex (V9).
 * @example sha256Hex("") // "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
 */
export function sha256Hex(data: string | Uint8Array): string {
  // crypto.hash (Node >= 20.12; package.json engines: >= 20.19) hashes small inputs in one call, without
  // createHash's object per digest (the day digest is on the check-in path).
  return crypto.hash("sha256", data, "hex");
}
