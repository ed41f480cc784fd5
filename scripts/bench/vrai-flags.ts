import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT } from "../../src/project-root";

/**
 * The node flags on the `vrai` command's shebang line (`#!/usr/bin/env -S node <flags>`): what `vrai serve`
 * and `vrai replay` run under, so the benches that measure them run under it too.
 */
export function vraiNodeFlags(): string[] {
  const shebang = readFileSync(join(PROJECT_ROOT, "bin/vrai.js"), "utf8").split("\n", 1)[0];
  const flags = /^#!\/usr\/bin\/env -S node(.*)$/.exec(shebang);
  return flags === null ? [] : flags[1].split(" ").filter(Boolean);
}
