/**
 * The `vrai` package: the agent SDK and the method engine (the rules of ../shared/spec/METHOD.md
 * as a pure library). `require("vrai")` runs this file through tsx (package.json `main`).
 */
export * from "./sdk";
export * from "./method";
export { BaseError, InvalidInputError } from "./errors";
