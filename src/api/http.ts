import type { NextFunction, Request, Response } from "express";
import { z } from "zod";
import { BaseError } from "../errors";

/** The one JSON error shape of the API. */
export type ErrorBody = { error: { code: string; message: string } };

/** Sends `{ error: { code, message } }` with `status`. */
export function sendError(res: Response, status: number, code: string, message: string): void {
  res.status(status);
  sendJson(res, { error: { code, message } } satisfies ErrorBody);
}

/**
 * `res.json(body)`, byte for byte, without Express's send pipeline: the same Content-Type,
 * Content-Length and ETag headers in the same order, and the same body. What that pipeline does
 * beyond this (304 to a conditional request, no body for HEAD, 204, 205 or 304, JSON settings,
 * headers already set) is left to `res.json`.
 */
export function sendJson(res: Response, body: unknown): void {
  if (!plainJsonReply(res) || res.hasHeader("etag")) {
    res.json(body);
    return;
  }
  sendPlainJson(res, JSON.stringify(body));
}

/**
 * Sends JSON that is already text, as `sendJson` sends a body. An ETag set beforehand is kept (no
 * hashing of the body); conditional and HEAD requests go through Express's `res.send`, which
 * answers 304 when the request's validator matches.
 */
export function sendJsonText(res: Response, json: string): void {
  if (!plainJsonReply(res)) {
    res.type("application/json; charset=utf-8").send(json);
    return;
  }
  sendPlainJson(res, json);
}

/** Whether a JSON reply needs nothing of Express's send pipeline (see `sendJson`). */
function plainJsonReply(res: Response): boolean {
  const { req, app } = res;
  return typeof app.get("etag fn") === "function" && req.method !== "HEAD" && req.headers["if-none-match"] === undefined && req.headers["if-modified-since"] === undefined &&
    res.statusCode !== 204 && res.statusCode !== 205 && res.statusCode !== 304 &&
    !res.hasHeader("content-type") && !res.hasHeader("transfer-encoding") &&
    app.get("json replacer") === undefined && app.get("json spaces") === undefined && !app.get("json escape");
}

function sendPlainJson(res: Response, json: string): void {
  // Encoded once: its length, its ETag and the bytes written all come from this buffer.
  const bytes = Buffer.from(json, "utf8");
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", String(bytes.length));
  if (!res.hasHeader("etag")) {
    const etag = (res.app.get("etag fn") as (body: Buffer) => string | undefined)(bytes);
    if (etag) res.setHeader("ETag", etag);
  }
  res.end(bytes);
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
 * `parseWith` for one part of a route's requests, prepared once. A plain object schema (unknown
 * keys stripped, no checks on the whole object) is parsed key by key: no copy of the request part
 * is walked, and the result and the first issue's message are those of the whole-object parse.
 * Any other schema is parsed whole.
 */
export function createPartParser(schema: z.ZodType, where: string): (value: unknown) => Record<string, unknown> {
  const def = (schema as z.ZodObject)._zod.def;
  if (def.type !== "object" || def.catchall !== undefined || (def.checks?.length ?? 0) > 0) {
    return (value) => parseWith(schema, value, where) as Record<string, unknown>;
  }
  const fields = Object.entries((schema as z.ZodObject).shape as Record<string, z.ZodType>).map(([key, field]) => ({ key, field, where: `${where}.${key}` }));
  return (value) => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return parseWith(schema, value, where) as Record<string, unknown>;
    const input = value as Record<string, unknown>;
    const parsed: Record<string, unknown> = {};
    for (const { key, field, where: at } of fields) {
      const result = field.safeParse(input[key]);
      if (!result.success) throw new RequestValidationError(describeZodError(at, result.error));
      // As the object parse does: an absent optional key stays absent; a default is filled in.
      if (result.data !== undefined || key in input) parsed[key] = result.data;
    }
    return parsed;
  };
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
