/** The API's one error shape, and how any error becomes it. */
import type { NextFunction, Request, Response } from "express";
import { BaseError } from "../errors";

/** The one JSON error shape of the API. */
export type ErrorBody = { error: { code: string; message: string } };

/** Sends `{ error: { code, message } }` with `status`. */
export function sendError(res: Response, status: number, code: string, message: string): void {
  res.status(status).json({ error: { code, message } } satisfies ErrorBody);
}

/** The fields a body-parser error carries (malformed JSON, too large). */
type ParserError = { type?: unknown; status?: unknown; message?: unknown };

const isParserError = (error: unknown): error is ParserError => typeof error === "object" && error !== null;

/**
 * The status and error code of any error: known errors keep theirs; body-parser errors (malformed
 * JSON, too large) are 4xx; anything else is a 500 whose detail is only logged.
 */
export function errorReply(error: unknown, log: (error: unknown) => void): { status: number; code: string; message: string } {
  if (error instanceof BaseError) {
    if (error.status >= 500) log(error);
    return { status: error.status, code: error.code, message: error.message };
  }
  if (isParserError(error)) {
    if (error.type === "entity.parse.failed") return { status: 400, code: "malformed_json", message: "the request body is not valid JSON" };
    if (error.type === "entity.too.large") return { status: 413, code: "body_too_large", message: "the request body is too large" };
    if (error.type === "charset.unsupported" || error.type === "encoding.unsupported") {
      return {
        status: 415,
        code: "unsupported_media_type",
        message: typeof error.message === "string" ? error.message : "unsupported charset or encoding",
      };
    }
    if (typeof error.status === "number" && error.status >= 400 && error.status < 500) {
      return { status: error.status, code: "bad_request", message: typeof error.message === "string" ? error.message : "bad request" };
    }
  }
  log(error);
  return { status: 500, code: "internal_error", message: "an internal error occurred" };
}

/** Express's error middleware: every error in the JSON error shape, unless an answer has started. */
export function errorHandler(log: (error: unknown) => void) {
  return (error: unknown, _req: Request, res: Response, _next: NextFunction): void => {
    if (res.headersSent) return;
    // When the client may try again: a rate limit (429), an unavailable database during a failover (503).
    if (error instanceof BaseError && error.retryAfterS !== undefined) res.set("Retry-After", String(error.retryAfterS));
    const { status, code, message } = errorReply(error, log);
    sendError(res, status, code, message);
  };
}
