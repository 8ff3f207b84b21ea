// One loaded embedding model: transformers.js's feature-extraction pipeline, mean-pooled.

import { Tensor, mean_pooling } from "../../vendor/transformers/transformers.js";

/** The per-token states of an encoder's output, under whichever name the model gives them. @param {any} out */
function tokenStates(out) {
  return out.last_hidden_state ?? out.logits ?? out.token_embeddings;
}

/** @typedef {{data: Float32Array, dims: number[], tokens: number}} Embeddings rows of `dims[1]` floats */

export class EmbeddingModel {
  /** @param {string} id @param {any} extractor transformers.js's feature-extraction pipeline */
  constructor(id, extractor) {
    this.id = id;
    this.extractor = extractor;
  }

  /**
   * Mean-pooled, normalized embeddings, as the feature-extraction pipeline computes them, from one
   * tokenization (it also gives the token count).
   * @param {string[]} texts
   * @returns {Promise<Embeddings>}
   */
  async embed(texts) {
    const inputs = this.extractor.tokenizer(texts, { padding: true, truncation: true });
    let tokens = 0;
    for (const m of inputs.attention_mask.data) tokens += Number(m);
    const out = await this.extractor.model(inputs);
    const pooled = mean_pooling(tokenStates(out), inputs.attention_mask).normalize(2, -1);
    return { data: pooled.data, dims: pooled.dims, tokens };
  }

  /**
   * Embed token ids as they are (no special tokens added): padded into one batch, mean-pooled
   * over each row's own tokens, normalized, as `embed` does for text.
   * @param {number[][]} rows
   * @returns {Promise<Embeddings>}
   */
  async embedIds(rows) {
    const width = Math.max(...rows.map((r) => r.length));
    const ids = new BigInt64Array(rows.length * width);
    const mask = new BigInt64Array(rows.length * width);
    rows.forEach((r, i) => r.forEach((t, j) => {
      ids[i * width + j] = BigInt(t);
      mask[i * width + j] = 1n;
    }));
    const attention_mask = new Tensor("int64", mask, [rows.length, width]);
    const out = await this.extractor.model({ input_ids: new Tensor("int64", ids, [rows.length, width]), attention_mask });
    const pooled = mean_pooling(tokenStates(out), attention_mask).normalize(2, -1);
    return { data: pooled.data, dims: pooled.dims, tokens: rows.reduce((n, r) => n + r.length, 0) };
  }
}
