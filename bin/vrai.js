#!/usr/bin/env node
// The `vrai` command (METHOD part F): TypeScript runs directly through tsx, no build step.
require("tsx/cjs");
require("../src/cli/main.ts").main();
