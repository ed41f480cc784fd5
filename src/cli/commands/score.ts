import { scoreFromInputs, validateScoreInputs } from "../../method";
import { parseFlags } from "../flags";
import { readJsonInput, writeJson, type Command } from "../io";

const USAGE = "score [file]";

/** F3 `vrai score [file]`: recomputes a Vrai score from a stored inputs document (V9). */
export const command: Command = {
  name: "score",
  usage: USAGE,
  summary: "recompute a Vrai score, with its sha256, from a stored inputs document (F3)",
  async run(args, io) {
    const inputs = validateScoreInputs(await readJsonInput(parseFlags(args, {}, USAGE).positionals, io));
    writeJson(io, scoreFromInputs(inputs).result);
    return 0;
  },
};
