export * from "./identity";
export * from "./integrity";
export * from "./methods";
export * from "./inputs";
export * from "./compute";
export * from "./canonical-inputs";
export * from "./packed-result";
