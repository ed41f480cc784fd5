/**
 * The Vrai agent SDK: check-ins and heartbeat (V3), proof records on chain (A1), the SDK Derived
 * Score (part A), the Platform Network Score read (part N), and daily scores' proofs for contracts.
 */
export * from "./agent";
export * from "./chain";
export * from "./derive";
export * from "./score-proof";
export * from "./verify";
export * from "./webhook";
// Its errors, for `instanceof`: every one a BaseError with a stable `code`; bad input an InvalidInputError
// (`verifyScore`'s options, a proof record), a deployment file that is not one a DeploymentFileError.
export { BaseError, InvalidInputError } from "../errors";
export { DeploymentFileError } from "../chain/deployment";
