// Putting token ids in the order that decides every choice: key descending, then lower id.

/** A range larger than this is put in order by a finer histogram of its own before sorting. */
const REFINE_ABOVE = 256;

/**
 * Sort idx[lo, hi) by key descending, then by lower id.
 * @param {Float32Array|Float64Array} key @param {Int32Array} idx @param {number} lo @param {number} hi
 */
export function sortByKey(key, idx, lo, hi) {
  idx.subarray(lo, hi).sort((a, b) => key[b] - key[a] || a - b);
}

/**
 * As {@link sortByKey}, for ranges of any size: a large range is first spread over a histogram of
 * its own key range (a stable counting sort), then each sub-bucket is put in order the same way.
 * @param {Float32Array|Float64Array} key @param {Int32Array} idx @param {number} lo @param {number} hi
 * @param {Int32Array} tmp room for at least `hi - lo` ids
 */
export function orderBy(key, idx, lo, hi, tmp) {
  const m = hi - lo;
  if (m <= REFINE_ABOVE) return sortByKey(key, idx, lo, hi);
  let top = -Infinity;
  let bottom = Infinity;
  for (let j = lo; j < hi; j++) {
    const x = key[idx[j]];
    if (x > top) top = x;
    if (x < bottom) bottom = x;
  }
  if (top === bottom) {
    idx.subarray(lo, hi).sort(); // all tied: by id
    return;
  }
  if (!Number.isFinite(top - bottom)) return sortByKey(key, idx, lo, hi);
  const subs = Math.min(1024, m);
  const scale = (subs - 1) / (top - bottom);
  const start = new Int32Array(subs + 1);
  for (let j = lo; j < hi; j++) start[(((top - key[idx[j]]) * scale) | 0) + 1]++;
  for (let b = 1; b <= subs; b++) start[b] += start[b - 1];
  for (let j = lo; j < hi; j++) {
    const id = idx[j];
    tmp[start[((top - key[id]) * scale) | 0]++] = id;
  }
  idx.set(tmp.subarray(0, m), lo);
  // start[b] is now where sub-bucket b ends
  for (let b = 0, from = lo; b < subs; b++) {
    const to = lo + start[b];
    if (to - from > 1) orderBy(key, idx, from, to, tmp);
    from = to;
  }
}
