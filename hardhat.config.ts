import path from "node:path";
import { subtask } from "hardhat/config";
import { TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD } from "hardhat/builtin-tasks/task-names";
import type { HardhatUserConfig } from "hardhat/config";
// What every user of this config needs: `hre.ethers` (scripts/deploy.ts, which `vrai dev` runs too) and typechain's
// compile hook (typechain-types, whoever compiles first). Not the whole toolbox: its chai matchers replace chai's
// assertions in any process that loads Hardhat (the unit tests' chain, `vrai dev`), and they look for bignumber.js on
// every comparison, a failed module resolution each time. The contract tests load them (test/helpers/expect.ts).
import "@nomicfoundation/hardhat-ethers";
import "@typechain/hardhat";
import { LOCAL_ACCOUNT_BALANCE_WEI, LOCAL_ACCOUNT_KEYS } from "./src/chain/local-accounts";

/** The pinned compiler. The `solc` npm package must be installed at exactly this version. */
const SOLC_VERSION = "0.8.28";

// No compiler downloads are possible: compile with the solc-js build shipped by the `solc` package.
subtask(TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD, async (args: { solcVersion: string }, _hre, runSuper) => {
  if (args.solcVersion !== SOLC_VERSION) return runSuper(args);
  const solcPackage = require("solc/package.json") as { version: string };
  if (solcPackage.version !== SOLC_VERSION) {
    throw new Error(`solc npm package is ${solcPackage.version}, hardhat.config.ts pins ${SOLC_VERSION}: run npm ci`);
  }
  const compilerPath = path.join(path.dirname(require.resolve("solc/package.json")), "soljson.js");
  const longVersion = (require("solc") as { version(): string }).version();
  return { compilerPath, isSolcJs: true, version: SOLC_VERSION, longVersion };
});

const config: HardhatUserConfig = {
  solidity: {
    version: SOLC_VERSION,
    settings: { optimizer: { enabled: true, runs: 10_000 }, evmVersion: "cancun" },
  },
  networks: {
    // Hardhat's default accounts, as keys: from its mnemonic, each chain start would derive them again.
    hardhat: { accounts: LOCAL_ACCOUNT_KEYS.map((privateKey) => ({ privateKey, balance: LOCAL_ACCOUNT_BALANCE_WEI })) },
    localhost: { url: process.env.RPC_URL ?? "http://127.0.0.1:8545" },
  },
  typechain: { outDir: "typechain-types", target: "ethers-v6" },
  mocha: { timeout: 60_000 },
};

export default config;
