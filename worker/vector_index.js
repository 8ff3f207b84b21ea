// One search index in memory: every chunk's unit embedding in one contiguous Float32Array, spans
// and texts beside it, BM25 postings for hybrid indexes, and the scoring kernel. The semantics are
// those of csi/index/store.py (score_rows), which documents them.

/**
 * @typedef {{items: number[], starts: number[], ends: number[], texts: string[], terms: string[]}} ChunkSet
 * @typedef {{name: string, ordinal: number, item: number, start: number, end: number, content: string, score: number}} Hit
 */

const GROW = 1.5;

export class VectorIndex {
  // rows reserved, and the arrays of every row: made by alloc()
  capacity = 0;
  vectors = new Float32Array(0);
  rowDoc = new Int32Array(0);
  rowItem = new Int32Array(0);
  rowStart = new Int32Array(0);
  rowEnd = new Int32Array(0);
  rowLength = new Int32Array(0);
  alive = new Uint8Array(0);

  /** @param {number} dims @param {boolean} hybrid @param {number} capacity rows to reserve */
  constructor(dims, hybrid, capacity = 1024) {
    this.dims = dims;
    this.hybrid = hybrid;
    this.rows = 0;
    this.live = 0;
    this.generation = 0; // set by the store: changes with every write
    this.liveLength = 0; // sum of live rows' term counts
    this.alloc(Math.max(16, capacity));
    /** @type {string[]} */
    this.texts = [];
    /** @type {(string|null)[]} document name per ordinal (null once deleted) */
    this.names = [];
    /** @type {(string|null)[]} metadata JSON per ordinal */
    this.metadata = [];
    /** @type {Map<string, {ordinal: number, first: number, count: number}>} */
    this.docs = new Map();
    /** @type {Map<string, {rows: number[], tfs: number[]}>} term -> postings (dead rows skipped when scoring) */
    this.postings = new Map();
  }

  /** @param {number} capacity rows */
  alloc(capacity) {
    const old = this.capacity ? this : null;
    this.capacity = capacity;
    /**
     * @template {Float32Array|Int32Array|Uint8Array} A
     * @param {{new (length: number): A}} Type @param {A|undefined} arr @param {number} [width]
     * @returns {A}
     */
    const copy = (Type, arr, width = 1) => {
      const out = new Type(capacity * width);
      if (old) out.set(/** @type {A} */ (arr).subarray(0, this.rows * width));
      return out;
    };
    this.vectors = copy(Float32Array, old?.vectors, this.dims);
    this.rowDoc = copy(Int32Array, old?.rowDoc);
    this.rowItem = copy(Int32Array, old?.rowItem);
    this.rowStart = copy(Int32Array, old?.rowStart);
    this.rowEnd = copy(Int32Array, old?.rowEnd);
    this.rowLength = copy(Int32Array, old?.rowLength);
    this.alive = copy(Uint8Array, old?.alive);
  }

  /**
   * Add (or replace) a document's chunks.
   * @param {string} name @param {string} metadataJson @param {ChunkSet} cs @param {Float32Array} vectors
   */
  put(name, metadataJson, cs, vectors) {
    this.remove(name);
    const n = cs.texts.length;
    if (vectors.length !== n * this.dims) throw new Error(`expected ${n * this.dims} floats, got ${vectors.length}`);
    if (this.rows + n > this.capacity) this.alloc(Math.ceil(Math.max(this.rows + n, this.capacity * GROW)));
    const ordinal = this.names.length;
    this.names.push(name);
    this.metadata.push(metadataJson);
    this.docs.set(name, { ordinal, first: this.rows, count: n });
    this.vectors.set(vectors, this.rows * this.dims);
    for (let i = 0; i < n; i++) {
      const r = this.rows + i;
      this.rowDoc[r] = ordinal;
      this.rowItem[r] = cs.items[i];
      this.rowStart[r] = cs.starts[i];
      this.rowEnd[r] = cs.ends[i];
      this.alive[r] = 1;
      this.texts[r] = cs.texts[i];
      if (this.hybrid) {
        const tf = new Map();
        let length = 0;
        for (const t of cs.terms[i].split(" ")) {
          if (!t) continue;
          tf.set(t, (tf.get(t) ?? 0) + 1);
          length++;
        }
        this.rowLength[r] = length;
        this.liveLength += length;
        for (const [t, count] of tf) {
          let p = this.postings.get(t);
          if (!p) this.postings.set(t, (p = { rows: [], tfs: [] }));
          p.rows.push(r);
          p.tfs.push(count);
        }
      }
    }
    this.rows += n;
    this.live += n;
  }

  /** @param {string} name @returns {boolean} whether the document was there */
  remove(name) {
    const doc = this.docs.get(name);
    if (!doc) return false;
    for (let r = doc.first; r < doc.first + doc.count; r++) {
      this.alive[r] = 0;
      this.liveLength -= this.rowLength[r];
      this.texts[r] = "";
    }
    this.live -= doc.count;
    this.names[doc.ordinal] = null;
    this.metadata[doc.ordinal] = null;
    this.docs.delete(name);
    return true;
  }

  /** Chunks per live document. @returns {Record<string, number>} */
  counts() {
    return Object.fromEntries([...this.docs].map(([name, d]) => [name, d.count]));
  }

  /**
   * The `k` best chunks, best first (ties in storage order).
   * @param {Float32Array} q unit query vector
   * @param {{k: number, minScore: number|null, terms: string[]|null, semanticWeight: number,
   *          k1: number, b: number, allowed: Uint8Array|null}} o
   * @returns {Hit[]}
   */
  search(q, o) {
    const { dims, rows, alive, rowDoc, vectors } = this;
    const allowed = o.allowed;
    if (allowed && allowed.length !== this.names.length) throw new Error("the allowed mask does not fit the catalog");
    const cos = new Float64Array(rows);
    const eligible = new Uint8Array(rows);
    for (let r = 0; r < rows; r++) {
      if (!alive[r] || (allowed && !allowed[rowDoc[r]])) continue;
      eligible[r] = 1;
      let base = r * dims;
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      let j = 0;
      for (; j + 3 < dims; j += 4, base += 4) {
        s0 += vectors[base] * q[j];
        s1 += vectors[base + 1] * q[j + 1];
        s2 += vectors[base + 2] * q[j + 2];
        s3 += vectors[base + 3] * q[j + 3];
      }
      for (; j < dims; j++, base++) s0 += vectors[base] * q[j];
      cos[r] = s0 + s1 + s2 + s3;
    }
    const minScore = o.minScore;
    const top = new TopK(o.k);
    if (o.terms === null) {
      for (let r = 0; r < rows; r++) {
        if (eligible[r] && (minScore === null || cos[r] >= minScore)) top.offer(cos[r], r);
      }
    } else {
      const bm25 = this.bm25(o.terms, eligible, o.k1, o.b);
      let best = 0;
      for (let r = 0; r < rows; r++) if (eligible[r] && bm25[r] > best) best = bm25[r];
      const w = o.semanticWeight;
      for (let r = 0; r < rows; r++) {
        if (!eligible[r]) continue;
        const passing = minScore === null || cos[r] >= minScore;
        const lex = best > 0 ? bm25[r] / best : 0;
        if (passing || lex > 0) top.offer(w * (passing ? cos[r] : 0) + (1 - w) * lex, r);
      }
    }
    return top.sorted().map(([score, r]) => ({
      name: /** @type {string} */ (this.names[rowDoc[r]]),
      ordinal: rowDoc[r],
      item: this.rowItem[r],
      start: this.rowStart[r],
      end: this.rowEnd[r],
      content: this.texts[r],
      score,
    }));
  }

  /**
   * BM25 of every eligible row; idf and the average length over all live rows.
   * @param {string[]} terms @param {Uint8Array} eligible @param {number} k1 @param {number} b
   */
  bm25(terms, eligible, k1, b) {
    const scores = new Float64Array(this.rows);
    const n = this.live;
    if (!n) return scores;
    const avgdl = this.liveLength / n;
    for (const t of new Set(terms)) {
      const p = this.postings.get(t);
      if (!p) continue;
      let df = 0;
      for (const r of p.rows) df += this.alive[r];
      if (!df) continue;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      for (let i = 0; i < p.rows.length; i++) {
        const r = p.rows[i];
        if (!eligible[r]) continue;
        const tf = p.tfs[i];
        scores[r] += (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * this.rowLength[r]) / avgdl));
      }
    }
    return scores;
  }
}

/** The k largest (score, row) pairs; on equal scores the lower row wins. */
class TopK {
  /** @param {number} k */
  constructor(k) {
    this.k = k;
    /** @type {[number, number][]} a min-heap by (score, -row) */
    this.heap = [];
  }

  /** a worse than b? @param {[number, number]} a @param {[number, number]} b */
  static worse(a, b) {
    return a[0] < b[0] || (a[0] === b[0] && a[1] > b[1]);
  }

  /** @param {number} score @param {number} row */
  offer(score, row) {
    const h = this.heap;
    if (h.length < this.k) {
      h.push([score, row]);
      let i = h.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!TopK.worse(h[i], h[p])) break;
        [h[i], h[p]] = [h[p], h[i]];
        i = p;
      }
    } else if (this.k > 0 && TopK.worse(h[0], [score, row])) {
      h[0] = [score, row];
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < h.length && TopK.worse(h[l], h[m])) m = l;
        if (r < h.length && TopK.worse(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
  }

  sorted() {
    return [...this.heap].sort((a, b) => (TopK.worse(a, b) ? 1 : TopK.worse(b, a) ? -1 : 0));
  }
}
