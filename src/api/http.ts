import type { IncomingMessage, ServerResponse } from "node:http";
import etag from "etag";
import type { NextFunction, Request, Response } from "express";
import fresh from "fresh";
import { z } from "zod";
import { BaseError } from "../errors";
import type { Reply } from "./routes";

/** The one JSON error shape of the API. */
export type ErrorBody = { error: { code: string; message: string } };

const JSON_TYPE = "application/json; charset=utf-8";

/**
 * Writes a reply with node's own response API, as Express's `res.json` and `res.send` write it:
 * the same headers in the same order (the reply's, then Content-Type, Content-Length and a weak
 * ETag of the body unless the reply set one), 304 without a body to a conditional GET or HEAD whose
 * validator matches (`fresh`, as `req.fresh`), no body for HEAD. Nothing of Express is needed, so the
 * route table's requests never enter it; the tests hold the bytes equal to Express's.
 */
export function writeReply(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
  res.statusCode = reply.status;
  if (reply.headers) for (const name in reply.headers) res.setHeader(name, reply.headers[name]);
  let text: string;
  let type = JSON_TYPE;
  if (reply.raw) {
    text = reply.raw.text;
    type = /;\s*charset=/i.test(reply.raw.contentType) ? reply.raw.contentType : `${reply.raw.contentType}; charset=utf-8`;
  } else if (reply.json !== undefined) {
    text = reply.json;
  } else if (reply.body !== undefined) {
    text = JSON.stringify(reply.body);
  } else {
    res.end();
    return;
  }
  // Encoded once: its length, its ETag and the bytes written all come from this buffer.
  const bytes = Buffer.from(text, "utf8");
  res.setHeader("Content-Type", type);
  res.setHeader("Content-Length", String(bytes.length));
  if (!res.hasHeader("ETag")) res.setHeader("ETag", etag(bytes, { weak: true }));
  if (isFresh(req, res)) {
    res.statusCode = 304;
    res.removeHeader("Content-Type");
    res.removeHeader("Content-Length");
    res.end();
  } else {
    res.end(req.method === "HEAD" ? undefined : bytes);
  }
}

/** Express's `req.fresh`: a GET or HEAD answered 2xx or 304 whose conditional headers match the response's validators. */
function isFresh(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method !== "GET" && req.method !== "HEAD") return false;
  if (req.headers["if-none-match"] === undefined && req.headers["if-modified-since"] === undefined) return false;
  const status = res.statusCode;
  if ((status < 200 || status >= 300) && status !== 304) return false;
  return fresh(req.headers, { etag: res.getHeader("ETag") as string | undefined, "last-modified": res.getHeader("Last-Modified") as string | undefined });
}

/** Sends `{ error: { code, message } }` with `status`. */
export function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  writeReply(res.req, res, { status, body: { error: { code, message } } satisfies ErrorBody });
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
 * The status and error code of any error: known errors keep theirs; body-parser errors (malformed
 * JSON, too large) are 4xx; anything else is a 500 whose detail is only logged.
 */
function errorReply(error: unknown, log: (error: unknown) => void): { status: number; code: string; message: string } {
  if (error instanceof BaseError) {
    if (error.status >= 500) log(error);
    return { status: error.status, code: error.code, message: error.message };
  }
  const e = error as { type?: string; status?: number; message?: string };
  if (e.type === "entity.parse.failed") return { status: 400, code: "malformed_json", message: "the request body is not valid JSON" };
  if (e.type === "entity.too.large") return { status: 413, code: "body_too_large", message: "the request body is too large" };
  if (typeof e.status === "number" && e.status >= 400 && e.status < 500) return { status: e.status, code: "bad_request", message: e.message ?? "bad request" };
  log(error);
  return { status: 500, code: "internal_error", message: "an internal error occurred" };
}

/** Answers any error with the JSON error shape (`errorReply`), unless an answer has started. */
export function sendErrorOf(res: ServerResponse, error: unknown, log: (error: unknown) => void): void {
  if (res.headersSent) return;
  const { status, code, message } = errorReply(error, log);
  sendError(res, status, code, message);
}

/** Express's error middleware: every error in the JSON error shape (`errorReply`). */
export function errorHandler(log: (error: unknown) => void) {
  return (error: unknown, _req: Request, res: Response, _next: NextFunction): void => sendErrorOf(res, error, log);
}
