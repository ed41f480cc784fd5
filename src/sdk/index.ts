/**
 * The Vrai agent SDK: check-ins and heartbeat (V3), proof records on chain (A1), the SDK Derived
 * Score (part A) and the Platform Network Score read (part N).
 */
export * from "./agent";
export * from "./chain";
export * from "./derive";
export * from "./verify";
