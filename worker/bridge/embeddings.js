// The Bridge's embeddings role: vectors of texts or of token ids from a loaded embedding model.

/** @typedef {import("./model_store.js").ModelStore} ModelStore */
/** @typedef {import("./embedding_model.js").Embeddings} Embeddings */

export class EmbeddingsRole {
  /** @param {ModelStore} store */
  constructor(store) {
    this.store = store;
  }

  /** @param {string} id @param {string} textsJson @returns {Promise<Embeddings>} */
  async embed(id, textsJson) {
    return this.store.embedding(id).embed(JSON.parse(textsJson));
  }

  /** @param {string} id @param {string} idsJson token id lists @returns {Promise<Embeddings>} */
  async embedIds(id, idsJson) {
    return this.store.embedding(id).embedIds(JSON.parse(idsJson));
  }
}
