// Runs worker/gguf_dequant.js on the cases of a job file (tests/unit/test_gguf_dequant.py): job
// {blob, out, cases: [{type, rows, cols, srcStart, srcLen, rowOrder, transpose, outOffset, outLen}],
// errors: [{type, rows, cols, srcLen, outLen, rowOrder}], sizes: [[type, rows, cols]]}. A case's src
// is blob[srcStart, +srcLen) (any byte offset); its output, `outLen` floats filled with a sentinel
// bit pattern before the call, is appended to the file `out`. Prints {errors, sizes}: per error
// call its message (null if it did not throw), per size tensorBytes' answer or message.
// Usage: node tests/support/gguf_dequant.mjs JOB.json

import { readFileSync, writeFileSync } from "node:fs";
import { dequantize, tensorBytes } from "../../worker/gguf_dequant.js";

const SENTINEL = 0x7fbadbad;

const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
const blob = new Uint8Array(readFileSync(job.blob));
const total = job.cases.reduce((/** @type {number} */ n, /** @type {{outLen: number}} */ c) => n + c.outLen, 0);
const result = new Float32Array(total);
new Int32Array(result.buffer).fill(SENTINEL);
let at = 0;
for (const c of job.cases) {
  const src = blob.subarray(c.srcStart, c.srcStart + c.srcLen);
  const out = result.subarray(at, at + c.outLen);
  dequantize(c.type, src, c.rows, c.cols, out, c.outOffset, { rowOrder: c.rowOrder, transpose: c.transpose });
  at += c.outLen;
}
writeFileSync(job.out, new Uint8Array(result.buffer));
const errors = job.errors.map((/** @type {any} */ e) => {
  try {
    dequantize(e.type, new Uint8Array(e.srcLen + 1).subarray(1), e.rows, e.cols, new Float32Array(e.outLen), 0,
      { rowOrder: e.rowOrder });
    return null;
  } catch (err) {
    return String(/** @type {Error} */ (err).message);
  }
});
const sizes = job.sizes.map((/** @type {[number, number, number]} */ [type, rows, cols]) => {
  try {
    return tensorBytes(type, rows, cols);
  } catch (err) {
    return String(/** @type {Error} */ (err).message);
  }
});
process.stdout.write(JSON.stringify({ errors, sizes }));
