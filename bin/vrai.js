#!/usr/bin/env -S node --max-semi-space-size=64
// The `vrai` command (METHOD part F). It runs the compiled bundle of src/cli/main.ts (bin/bundle.js:
// built on first use and whenever a source changes), or, with VRAI_BUNDLE=0 or where dist/ cannot be
// written, the TypeScript sources through tsx. tsx is registered either way: Hardhat's TypeScript
// config (`vrai dev`) is loaded at run time.
// Node gets a 64 MiB semi-space (the young generation's halves; 16 MiB by default): `vrai replay`
// makes about a kilobyte of short-lived objects per check-in (METHOD F2), and scavenges 4 times
// less often with it (60 -> 15 scavenges replaying 720,000 check-ins, `npm run bench:method`,
// which runs under this line's flags). The flag applies when the file runs as a command (npm's
// bin link, or ./bin/vrai.js), not under `node bin/vrai.js`.
"use strict";
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
