/**
 * The method rules (../shared/spec/METHOD.md parts V, A, N) as a pure library shared by the
 * service, the indexer, the SDK and outside verifiers: no I/O, no clock, no randomness.
 */
export * from "./time";
export * from "./canonical";
export * from "./outage";
export * from "./checkin";
export * from "./days";
export * from "./score";
export * from "./avip";
export * from "./verdict";
export * from "./play";
