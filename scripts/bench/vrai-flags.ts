import { join } from "node:path";
import { PROJECT_ROOT } from "../../src/project-root";

/**
 * The node flags `vrai <command>` runs under (bin/node-flags.js, which bin/vrai.js starts node with), so
 * the benches that measure `vrai replay` and `vrai serve` run under them too.
 */
export function vraiNodeFlags(command: string): string[] {
  const { nodeFlagsFor } = require(join(PROJECT_ROOT, "bin/node-flags.js")) as { nodeFlagsFor(command: string): string[] };
  return nodeFlagsFor(command);
}
