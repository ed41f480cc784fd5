import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Command } from "../io";
import { command as serve } from "./serve";

/**
 * `vrai dev` (`npm start`): the service on the embedded PGlite store in `./data` with no
 * configuration. The operator token is generated on first start and kept in `./data/operator-token`
 * (mode 0600) so a restart keeps it. Any variable of `vrai serve` still applies.
 */
export const command: Command = {
  name: "dev",
  summary: "dev             run the service locally on PGlite in ./data, no configuration needed",
  async run(args, io) {
    const dataDir = process.env.DATA_DIR ?? "./data";
    fs.mkdirSync(dataDir, { recursive: true });
    const tokenFile = path.join(dataDir, "operator-token");
    if (!process.env.OPERATOR_TOKEN) {
      if (!fs.existsSync(tokenFile)) fs.writeFileSync(tokenFile, `vop_${crypto.randomBytes(32).toString("base64url")}\n`, { mode: 0o600 });
      process.env.OPERATOR_TOKEN = fs.readFileSync(tokenFile, "utf8").trim();
      io.stdout(`operator token: in ${tokenFile}\n`);
    }
    process.env.DATA_DIR = dataDir;
    return serve.run(args, io);
  },
};
