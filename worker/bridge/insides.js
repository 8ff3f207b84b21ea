// The Bridge's insides role: a chat model's graph and the tensors guts.js reads during a prompt.

/** @typedef {import("./model_store.js").ModelStore} ModelStore */

export class InsidesRole {
  /** @param {ModelStore} store */
  constructor(store) {
    this.store = store;
  }

  /** Chat model `id` and its guts session. @param {string} id */
  #chat(id) {
    const m = this.store.chat(id);
    if (!m.guts) throw new Error(`${id} has no guts session`);
    return { m, guts: m.guts };
  }

  /**
   * The decoder's ONNX graph (nodes, inputs, outputs, initializer shapes) and its config, as JSON,
   * for Python to name the tensors guts reads.
   * @param {string} id
   */
  async gutsGraph(id) {
    const { m, guts } = this.#chat(id);
    return JSON.stringify({ graph: await guts.graph(), config: m.config });
  }

  /**
   * Run a prompt through the guts session (made on first use) and shape the vectors.
   * @param {string} id @param {Int32Array|number[]} ids @param {string} planJson
   */
  async guts(id, ids, planJson) {
    const r = await this.#chat(id).guts.run(ids, JSON.parse(planJson));
    return { ...r, top: JSON.stringify(r.top) };
  }
}
