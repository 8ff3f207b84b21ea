// The Bridge's insides role: a chat model's graph and the tensors insides_session.js reads during a prompt.

/** @typedef {import("./model_store.js").ModelStore} ModelStore */

export class InsidesRole {
  /** @param {ModelStore} store */
  constructor(store) {
    this.store = store;
  }

  /** Chat model `id` and its insides session. @param {string} id */
  #chat(id) {
    const m = this.store.chat(id);
    if (!m.insides) throw new Error(`${id} has no insides session`);
    return { m, insides: m.insides };
  }

  /**
   * The decoder's ONNX graph (nodes, inputs, outputs, initializer shapes) and its config, as JSON,
   * for Python to name the tensors insides reads.
   * @param {string} id
   */
  async insidesGraph(id) {
    const { m, insides } = this.#chat(id);
    return JSON.stringify({ graph: await insides.graph(), config: m.config });
  }

  /**
   * Run a prompt through the insides session (made on first use) and shape the vectors.
   * @param {string} id @param {Int32Array|number[]} ids @param {string} planJson
   */
  async insides(id, ids, planJson) {
    const r = await this.#chat(id).insides.run(ids, JSON.parse(planJson));
    return { ...r, top: JSON.stringify(r.top) };
  }
}
