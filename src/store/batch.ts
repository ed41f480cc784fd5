/**
 * Requests for one kind of statement gathered into batches: what is asked for while the event loop
 * handles one round of I/O is sent together once that round is over (setImmediate), as one
 * statement. With `maxInFlight` batches already on their way, further requests wait and leave with
 * the next batch when one comes back: under load each round trip carries more requests, and when
 * the server is quiet a request leaves alone, one loop turn after it was made.
 */
export type Batcher<I, O> = (item: I) => Promise<O>;

export type BatchOptions<I, O> = {
  /** The most items in one batch. */
  maxBatch: number;
  /** Batches on their way at once (default: no bound). */
  maxInFlight?: number;
  /**
   * Answers a batch: one answer per item, in the items' order (an answer may be a promise of its
   * own, which fails its item alone); a throw rejects every item of the batch.
   */
  run(items: readonly I[]): Promise<ReadonlyArray<O | PromiseLike<O>>>;
};

export function createBatcher<I, O>(options: BatchOptions<I, O>): Batcher<I, O> {
  const maxInFlight = options.maxInFlight ?? Infinity;
  let queue: Array<{ item: I; resolve(answer: O | PromiseLike<O>): void; reject(error: unknown): void }> = [];
  let inFlight = 0;
  let scheduled = false;

  function send(): void {
    scheduled = false;
    while (queue.length > 0 && inFlight < maxInFlight) {
      const batch = queue.length <= options.maxBatch ? queue : queue.slice(0, options.maxBatch);
      queue = batch === queue ? [] : queue.slice(options.maxBatch);
      inFlight++;
      options
        .run(batch.map((waiter) => waiter.item))
        .then(
          (answers) => {
            for (const [i, waiter] of batch.entries()) waiter.resolve(answers[i]);
          },
          (error: unknown) => {
            for (const waiter of batch) waiter.reject(error);
          },
        )
        .finally(() => {
          inFlight--;
          // What waited for this batch to come back leaves now: it has waited a round trip already.
          if (!scheduled) send();
        });
    }
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (!scheduled && inFlight < maxInFlight) {
        scheduled = true;
        setImmediate(send);
      }
    });
}
