/**
 * Writes `n` in decimal, as a template literal prints it, into `target` at `at`, for a safe integer
 * (-0 prints as "0"); returns the end. Returns -1, writing nothing, when `n` is not a safe integer or
 * does not fit: the caller then prints it as a string. Used where a string per number would be most
 * of the garbage: the day digest's preimage (days.ts) and `vrai replay`'s output lines.
 */
export function writeDecimal(target: Uint8Array, at: number, n: number): number {
  if (!Number.isSafeInteger(n)) return -1;
  let rest = Math.abs(n);
  let digits = 1;
  while (digits < 16 && rest >= POWERS_OF_TEN[digits]) digits++;
  // -0 is not below 0.
  const sign = n < 0 ? 1 : 0;
  if (at + sign + digits > target.length) return -1;
  if (sign === 1) target[at++] = 0x2d;
  // One division a digit: an arrival is above 2^31, where `rest % 10` is a call to fmod, not an instruction.
  for (let k = at + digits - 1; k >= at; k--) {
    const tens = Math.floor(rest / 10);
    target[k] = 0x30 + (rest - tens * 10);
    rest = tens;
  }
  return at + digits;
}

/** 10^0 … 10^15: a safe integer has at most 16 digits. */
const POWERS_OF_TEN = Array.from({ length: 16 }, (_, d) => 10 ** d);
