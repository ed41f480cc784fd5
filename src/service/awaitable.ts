/**
 * A value, or a promise of it: what a store answers when it may answer at once (memory) or later
 * (SQL). Code that checks `instanceof Promise` before awaiting runs synchronously on a store that
 * answers at once, so `vrai replay` plays a check-in without creating a promise.
 */
export type Awaitable<T> = T | Promise<T>;
