#!/usr/bin/env -S node --max-semi-space-size=64
// The `vrai` command (METHOD part F): TypeScript runs directly through tsx, no build step.
// Node gets a 64 MiB semi-space (the young generation's halves; 16 MiB by default): `vrai replay`
// makes about a kilobyte of short-lived objects per check-in (METHOD F2), and scavenges 4 times
// less often with it (60 -> 15 scavenges replaying 720,000 check-ins, `npm run bench:method`,
// which runs under this line's flags). The flag applies when the file runs as a command (npm's
// bin link, or ./bin/vrai.js), not under `node bin/vrai.js`.
require("tsx/cjs");
require("../src/cli/main.ts").main();
