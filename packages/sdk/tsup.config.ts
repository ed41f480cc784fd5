// The build of @vrai/sdk from the sources in ../../src/sdk (and the method engine and chain code they import, the
// same code the service runs): the library as ESM and CommonJS with its declarations, and the vrai-heartbeat and vrai-verify bins.
// Packages in package.json `dependencies` stay imports (src/sdk/package.test.ts checks they are exactly what the
// built code imports); js-sha3, the score tree's keccak256, is bundled: 20 kB of CommonJS whose named exports an
// ESM import cannot see. (A day's tree built at scale, with its worker threads and WebAssembly keccak256, is
// src/chain/score-tree-build.ts, which the SDK does not import.)
import { defineConfig } from "tsup";

const common = { outDir: "dist", platform: "node", target: "node20", tsconfig: "tsconfig.json", noExternal: ["js-sha3"] } as const;

export default defineConfig([
  { ...common, entry: { index: "../../src/sdk/index.ts" }, format: ["esm", "cjs"], dts: true, clean: true },
  { ...common, entry: { heartbeat: "../../src/sdk/heartbeat-bin.ts", verify: "../../src/sdk/verify-bin.ts" }, format: ["esm"] },
]);
