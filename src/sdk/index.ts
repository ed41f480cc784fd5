/**
 * The Vrai agent SDK: check-ins and heartbeat (V3), proof records on chain (A1), the SDK Derived
 * Score (part A), the Platform Network Score read (part N), and daily scores' proofs for contracts.
 */
export * from "./agent";
export * from "./chain";
export * from "./derive";
export * from "./score-proof";
export * from "./verify";
