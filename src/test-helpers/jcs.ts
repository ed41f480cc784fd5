import { readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";

/** `../shared/vectors/jcs`, the official RFC 8785 vectors, beside the clone (as in CI). */
export const JCS_VECTORS_DIR = path.resolve(__dirname, "../../..", "shared/vectors/jcs");

/** Every vector: its name, the input text and the expected canonical bytes. */
export function jcsVectors(): Array<{ name: string; input: string; output: Buffer }> {
  return readdirSync(path.join(JCS_VECTORS_DIR, "input"))
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((name) => ({
      name,
      input: readFileSync(path.join(JCS_VECTORS_DIR, "input", name), "utf8"),
      output: readFileSync(path.join(JCS_VECTORS_DIR, "output", name)),
    }));
}
