// The loaded models by id, which every role of the Bridge reads (loading.js alone adds and removes).

import { ChatModel } from "../chat_model.js";
import { EmbeddingModel } from "./embedding_model.js";

export class ModelStore {
  constructor() {
    /** @type {Map<string, ChatModel|EmbeddingModel>} */
    this.models = new Map();
  }

  /** The loaded chat model `id`, else throws. @param {string} id */
  chat(id) {
    const m = this.models.get(id);
    if (!(m instanceof ChatModel)) throw new Error(`${id} is not a loaded chat model`);
    return m;
  }

  /** The loaded embedding model `id`, else throws. @param {string} id */
  embedding(id) {
    const m = this.models.get(id);
    if (!(m instanceof EmbeddingModel)) throw new Error(`${id} is not a loaded embedding model`);
    return m;
  }
}
