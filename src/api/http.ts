import type { NextFunction, Request, Response } from "express";
import { z } from "zod";
import { BaseError } from "../errors";

/** The one JSON error shape of the API. */
export type ErrorBody = { error: { code: string; message: string } };

/** Sends `{ error: { code, message } }` with `status`. */
export function sendError(res: Response, status: number, code: string, message: string): void {
  res.status(status).json({ error: { code, message } } satisfies ErrorBody);
}

/** A zod failure as one readable line naming the field, e.g. `body.points: expected a number`. */
export function describeZodError(where: string, error: z.ZodError): string {
  const issue = error.issues[0];
  const field = [where, ...issue.path.map(String)].join(".");
  return `${field}: ${issue.message}`;
}

/** Validation failure of a request part: 400 `invalid_request`. */
export class RequestValidationError extends BaseError {
  constructor(message: string) {
    super("invalid_request", message, { status: 400 });
  }
}

/** Parses `value` with `schema`, or throws a 400 naming the field. */
export function parseWith<T extends z.ZodType>(schema: T, value: unknown, where: string): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new RequestValidationError(describeZodError(where, parsed.error));
  return parsed.data;
}

/**
 * Maps every error to the JSON error shape. Known errors keep their status and code; body-parser
 * errors (malformed JSON, too large) are 4xx; anything else is a 500 whose detail is only logged.
 */
export function errorHandler(log: (error: unknown) => void) {
  return (error: unknown, _req: Request, res: Response, _next: NextFunction): void => {
    if (res.headersSent) return;
    if (error instanceof BaseError) {
      if (error.status >= 500) log(error);
      sendError(res, error.status, error.code, error.message);
      return;
    }
    const e = error as { type?: string; status?: number; message?: string };
    if (e.type === "entity.parse.failed") return sendError(res, 400, "malformed_json", "the request body is not valid JSON");
    if (e.type === "entity.too.large") return sendError(res, 413, "body_too_large", "the request body is too large");
    if (typeof e.status === "number" && e.status >= 400 && e.status < 500) {
      return sendError(res, e.status, "bad_request", e.message ?? "bad request");
    }
    log(error);
    sendError(res, 500, "internal_error", "an internal error occurred");
  };
}
