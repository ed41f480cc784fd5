/**
 * Where `vrai dev` keeps its development clock (issue #31): the offset from the machine's clock, in
 * `DATA_DIR/dev-clock.json`, so that a restart finds the clock (and the chain's time, which follows it) where it was moved.
 */
import fs from "node:fs";
import path from "node:path";
import { InvalidInputError } from "../errors";
import { DAY_S } from "../method";
import { createOffsetClock, systemClock } from "../service/clock";
import { DATA_DIR_FILES } from "../store/data-dir";
import type { DevClockOptions } from "./server";

/** The file's name in the data directory. */
export const DEV_CLOCK_FILE = DATA_DIR_FILES.devClock;

/**
 * The development clock of the data directory `dataDir`: the machine's clock plus the offset kept there (none yet: 0),
 * and how a move is kept (written whole, 0600, then renamed over the file).
 * @throws InvalidInputError `invalid_dev_clock` for a file that does not hold whole days of offset
 * @example const { clock, persist } = openDevClock("./data");
 */
export function openDevClock(dataDir: string): Pick<DevClockOptions, "clock" | "persist"> {
  const file = path.join(dataDir, DEV_CLOCK_FILE);
  let offsetS = 0;
  if (fs.existsSync(file)) {
    let kept: unknown;
    try {
      kept = JSON.parse(fs.readFileSync(file, "utf8"));
    } catch (error) {
      throw new InvalidInputError(
        "invalid_dev_clock",
        `${file}: not JSON (${(error as Error).message}): delete it to start the development clock again from the machine's`,
        { cause: error },
      );
    }
    const given = (kept as { offsetS?: unknown } | null)?.offsetS;
    if (typeof given !== "number" || !Number.isSafeInteger(given) || given < 0 || given % DAY_S !== 0) {
      throw new InvalidInputError(
        "invalid_dev_clock",
        `${file}: offsetS must be whole days in seconds, got ${JSON.stringify(given)}: delete it to start the development clock again from the machine's`,
      );
    }
    offsetS = given;
  }
  return {
    clock: createOffsetClock(systemClock, offsetS),
    persist(offset) {
      const temporary = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(temporary, `${JSON.stringify({ offsetS: offset, offsetDays: offset / DAY_S })}\n`, { mode: 0o600 });
      fs.renameSync(temporary, file);
    },
  };
}
