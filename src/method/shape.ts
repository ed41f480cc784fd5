import { InvalidInputError } from "../errors";

/**
 * Small shape checks shared by the validators of this library: each failure is an
 * InvalidInputError whose message starts with the JSON path of the offending field,
 * e.g. `records[3].riskLevel: expected low|medium|high|critical`.
 */
export function shapeError(code: string, path: string, expected: string, suffix = ""): InvalidInputError {
  return new InvalidInputError(code, `${path}: expected ${expected}${suffix}`);
}

/** Human form of what was found, for messages ("got a string"). */
export function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return value.length > 40 ? "a string" : JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return typeof value === "object" ? "an object" : typeof value;
}

/** A plain JSON object, or throws naming `path`. */
export function asObject(code: string, value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw shapeError(code, path, "an object", `, got ${describe(value)}`);
  return value as Record<string, unknown>;
}

/** Rejects fields outside `allowed` (a stored document must not carry anything the rules ignore). */
export function onlyKeys(code: string, obj: Record<string, unknown>, path: string, allowed: readonly string[]): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) throw new InvalidInputError(code, `${path}.${key}: unknown field`);
  }
}

/** A JSON array, or throws naming `path`. */
export function asArray(code: string, value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw shapeError(code, path, "an array", `, got ${describe(value)}`);
  return value;
}

/** A string (non-empty unless `allowEmpty`), or throws naming `path`. */
export function asString(code: string, value: unknown, path: string, allowEmpty = false): string {
  if (typeof value !== "string" || (!allowEmpty && value.length === 0))
    throw shapeError(code, path, allowEmpty ? "a string" : "a non-empty string", `, got ${describe(value)}`);
  return value;
}

/** A whole number in `[min, max]`, or throws naming `path`. */
export function asInteger(code: string, value: unknown, path: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `in ${min}..${max}`;
    throw shapeError(code, path, `a whole number ${range}`, `, got ${describe(value)}`);
  }
  return value;
}

/** A JSON number (any value: range rules belong to whoever uses it), or throws naming `path`. */
export function asNumber(code: string, value: unknown, path: string): number {
  if (typeof value !== "number") throw shapeError(code, path, "a number", `, got ${describe(value)}`);
  return value;
}

/** One of `choices`, or throws naming `path` and listing them. */
export function asOneOf<T extends string>(code: string, value: unknown, path: string, choices: readonly T[]): T {
  if (!(choices as readonly unknown[]).includes(value)) throw shapeError(code, path, choices.join("|"), `, got ${describe(value)}`);
  return value as T;
}
