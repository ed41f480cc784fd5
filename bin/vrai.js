#!/usr/bin/env node
// The `vrai` command (METHOD part F). It runs the compiled bundle of src/cli/main.ts (bin/bundle.js:
// built on first use and whenever a source changes), or, with VRAI_BUNDLE=0 or where dist/ cannot be
// written, the TypeScript sources through tsx. tsx is registered either way: Hardhat's TypeScript
// config (`vrai dev`) is loaded at run time.
// A command with node flags of its own (bin/node-flags.js: `vrai replay`'s larger young generation)
// runs in a node started again with them, its exit code and signals passed through.
"use strict";

const { spawn } = require("node:child_process");
const { nodeFlagsFor } = require("./node-flags");

const flags = nodeFlagsFor(process.argv[2]);
if (!flags.every((flag) => process.execArgv.includes(flag))) {
  const child = spawn(process.execPath, [...process.execArgv, ...flags, __filename, ...process.argv.slice(2)], { stdio: "inherit" });
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => {
    if (signal === null) process.exit(code ?? 1);
    // Ended by a signal: so does this process.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  });
  return;
}

require("tsx/cjs");

function entry() {
  if (process.env.VRAI_BUNDLE === "0") return "../src/cli/main.ts";
  try {
    const bundle = require("./bundle").ensureBundle("src/cli/main.ts");
    // Stack traces name the TypeScript sources (the bundle's map is beside it).
    process.setSourceMapsEnabled(true);
    return bundle;
  } catch (error) {
    if (["EACCES", "EPERM", "EROFS"].includes(error && error.code)) return "../src/cli/main.ts";
    throw error;
  }
}

require(entry()).main();
