// Node flags of each `vrai` command that needs its own (bin/vrai.js starts node again with them), also
// read by the benches that measure those commands (`bench:method`, `bench:service`).
//
// `vrai replay` gets a 64 MiB semi-space (the young generation's halves; 16 MiB by default): it makes
// about a kilobyte of short-lived objects per check-in (METHOD F2) and scavenges 4 times less often
// with it (60 -> 15 scavenges replaying 720,000 check-ins; `npm run bench:method`: 298,000 check-ins/s
// against 265,000 without). `vrai serve` keeps node's default: what a request leaves alive is a few
// kilobytes, and a scavenge's pause grows with the semi-space however little survives (GET of a score at
// 2,000/s over a million agents, `npm run bench:service`: scavenges of 17 ms, p99 11.4 ms with 64 MiB;
// of 2.8 ms, p99 5.8 ms with the default).
"use strict";

const FLAGS = { replay: ["--max-semi-space-size=64"] };

/** The node flags `vrai <command>` runs under (none beyond node's defaults for most). */
function nodeFlagsFor(command) {
  return FLAGS[command] ?? [];
}

module.exports = { nodeFlagsFor };
