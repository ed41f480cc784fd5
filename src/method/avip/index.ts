export * from "./record";
export * from "./derive";
export * from "./executor-id";
