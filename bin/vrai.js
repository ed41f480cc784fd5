#!/usr/bin/env node
// The `vrai` command (METHOD part F): dist/vrai.cjs, src/cli/main.ts compiled into one file by
// `npm run build` (which `npm install`, `npm start` and `npm test` run), or the TypeScript sources
// through tsx with VRAI_BUNDLE=0 or before a first build. The compiled file runs without tsx, whose
// hook would see every module loaded; `vrai dev` registers it to load Hardhat's TypeScript config.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const bundle = path.join(__dirname, "..", "dist", "vrai.cjs");
const compiled = process.env.VRAI_BUNDLE !== "0" && fs.existsSync(bundle);
if (!compiled) require("tsx/cjs");
const cli = require(compiled ? bundle : "../src/cli/main.ts");
// Stack traces name the TypeScript sources of the bundle's frames, through its map beside it, read at the first one
// (src/app/stack-traces.ts); not Node's source maps, which would read every dependency's map at each start. (A bundle
// built before this file was changed has no such export: it runs all the same.)
if (compiled && typeof cli.mapStackTracesOf === "function") cli.mapStackTracesOf(bundle);
cli.main();
