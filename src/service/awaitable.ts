/** A value, or a promise of it: what a store answers when it may answer at once (memory) or later (SQL). */
export type Awaitable<T> = T | Promise<T>;

/**
 * `next(value)`: at once when `value` is not a promise, else when it resolves. Code written with it
 * runs synchronously on a store that answers at once, so `vrai replay` plays a check-in without
 * creating a promise, and unchanged on one that answers with promises.
 * @example then(2, (n) => n + 1) // 3
 * @example await then(Promise.resolve(2), (n) => n + 1) // 3
 */
export function then<T, U>(value: Awaitable<T>, next: (value: T) => Awaitable<U>): Awaitable<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}
