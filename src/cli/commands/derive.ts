import { deriveScores, validateRecords } from "../../method";
import { parseFlags } from "../flags";
import { readJsonInput, writeJson, type Command } from "../io";

const USAGE = "derive [file]";

/** F1 `vrai derive [file]`: SDK Derived Scores of the executors in `{ "records": [...] }` (A1–A5). */
export const command: Command = {
  name: "derive",
  usage: USAGE,
  summary: "SDK Derived Score of each executor from AVIP proof records (F1)",
  async run(args, io) {
    const records = validateRecords(await readJsonInput(parseFlags(args, {}, USAGE).positionals, io));
    writeJson(io, { executors: deriveScores(records) });
    return 0;
  },
};
