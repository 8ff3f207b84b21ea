// @ts-check
// The async iterable a streaming call resolves to: the worker pushes chunks (no round trip per
// chunk); they wait here until the caller's loop asks for them.

/**
 * Chunks pushed by the worker, read with `for await`. Leaving the loop early calls `onAbandon`.
 * @template T
 */
export class ChunkStream {
  /** @param {() => void} onAbandon */
  constructor(onAbandon) {
    /** @type {T[]} */
    this.items = [];
    /** @type {((r: IteratorResult<T>) => void)|null} */
    this.wake = null;
    /** @type {(err: Error) => void} */
    this.rejectNext = () => {};
    this.done = false;
    /** @type {Error|null} */
    this.error = null;
    this.onAbandon = onAbandon;
  }

  /** @param {T} chunk */
  push(chunk) {
    this.items.push(chunk);
    this.flush();
  }

  /** No more chunks: the loop ends, or throws `error`. @param {Error|null} [error] */
  end(error = null) {
    this.done = true;
    this.error = error;
    this.flush();
  }

  flush() {
    if (!this.wake) return;
    const wake = this.wake;
    if (this.items.length) {
      this.wake = null;
      wake({ value: /** @type {T} */ (this.items.shift()), done: false });
    } else if (this.done) {
      this.wake = null;
      if (this.error) this.rejectNext(this.error);
      else wake({ value: undefined, done: true });
    }
  }

  /** @returns {AsyncIterator<T>} */
  [Symbol.asyncIterator]() {
    return {
      next: () =>
        new Promise((resolve, reject) => {
          this.wake = resolve;
          this.rejectNext = reject;
          this.flush();
        }),
      return: async () => {
        if (!this.done) this.onAbandon();
        this.done = true;
        this.items = [];
        return { value: undefined, done: true };
      },
    };
  }
}
