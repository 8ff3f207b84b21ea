// @ts-check

/** An error from the engine: `name` says what went wrong, `param` names the field to blame. */
export class EngineError extends Error {
  /** @param {{name: string, message: string, param?: string|null}} e */
  constructor(e) {
    super(e.message);
    this.name = e.name;
    this.param = e.param ?? null;
  }
}
