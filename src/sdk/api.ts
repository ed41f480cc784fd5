/**
 * The API's JSON as the SDK reads it: the bodies its OpenAPI document declares (`./api-types.ts`, generated from the
 * route declarations by `npm run gen:api-types`), named by operation and status.
 */
import type { components, operations } from "./api-types";

/** The JSON body of operation `O`'s answer with status `S`, e.g. `ApiJson<"checkIn", 201>`. */
export type ApiJson<O extends keyof operations, S extends keyof operations[O]["responses"]> = operations[O]["responses"][S] extends {
  content: { "application/json": infer Body };
}
  ? Body
  : never;

/** The API's one error shape, `{ error: { code, message } }`. */
export type ApiError = components["schemas"]["Error"];
