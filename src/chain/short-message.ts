/** One line saying what went wrong, for messages and logs that are one line each. */
import { BaseError } from "viem";

/**
 * What `error` says in one line: a viem error's `shortMessage` (its `message` goes on with its details, docs link and
 * viem's version), its lines joined (a revert's reason is its second); any other error's first line.
 * @example shortMessageOf(new HttpRequestError({ url })) // "HTTP request failed."
 */
export function shortMessageOf(error: unknown): string {
  if (error instanceof BaseError) return error.shortMessage.split("\n").join(" ");
  return (error instanceof Error ? error.message : String(error)).split("\n")[0];
}
