// Just enough of the ONNX protobuf format to list a model's graph (nodes, inputs, outputs,
// initializer shapes) and to expose more of its tensors as graph outputs, on the model's bytes.
// Weights are skipped over by length, never decoded. Subgraphs (If/Loop bodies) are not listed.

// Field numbers from onnx.proto.
const MODEL_GRAPH = 7;
const GRAPH = { node: 1, initializer: 5, input: 11, output: 12 };
const NODE = { input: 1, output: 2, opType: 4 };
const TENSOR = { dims: 1, name: 8 };
const VALUE_INFO_NAME = 1;

const utf8 = new TextDecoder();

/**
 * @param {Uint8Array} buf @param {number} pos
 * @returns {[number, number]} the value (exact below 2^53) and the position after it
 */
export function varint(buf, pos) {
  let value = 0;
  let scale = 1;
  for (;;) {
    if (pos >= buf.length) throw new Error("truncated ONNX file");
    const b = buf[pos++];
    value += (b & 0x7f) * scale;
    if (b < 0x80) return [value, pos];
    scale *= 128;
  }
}

/**
 * The fields of one message: number, wire type, where its value starts and ends, and the value
 * of a varint field.
 * @param {Uint8Array} buf @param {number} start @param {number} end
 * @returns {Generator<{field: number, wire: number, tagStart: number, start: number, end: number, value: number}>}
 */
export function* fields(buf, start, end) {
  let pos = start;
  while (pos < end) {
    const tagStart = pos;
    const [tag, afterTag] = varint(buf, pos);
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    let value = 0;
    let valueStart = afterTag;
    if (wire === 0) {
      [value, pos] = varint(buf, afterTag);
    } else if (wire === 1) {
      pos = afterTag + 8;
    } else if (wire === 5) {
      pos = afterTag + 4;
    } else if (wire === 2) {
      const [length, after] = varint(buf, afterTag);
      valueStart = after;
      pos = after + length;
    } else {
      throw new Error(`unsupported protobuf wire type ${wire} in the ONNX file`);
    }
    if (pos > end) throw new Error("truncated ONNX file");
    yield { field, wire, tagStart, start: valueStart, end: pos, value };
  }
}

/** @param {Uint8Array} buf @returns {{start: number, end: number, tagStart: number}} */
export function graphField(buf) {
  for (const f of fields(buf, 0, buf.length)) {
    if (f.field === MODEL_GRAPH && f.wire === 2) return f;
  }
  throw new Error("the ONNX file has no graph");
}

/** @param {Uint8Array} buf @param {number} start @param {number} end */
function nameOf(buf, start, end) {
  for (const f of fields(buf, start, end)) {
    if (f.field === VALUE_INFO_NAME && f.wire === 2) return utf8.decode(buf.subarray(f.start, f.end));
  }
  return "";
}

/**
 * @typedef {{inputs: string[], outputs: string[], nodes: Array<[string, string[], string[]]>,
 *   initializers: Record<string, number[]>}} GraphSummary
 */

/**
 * The main graph of an ONNX model: its inputs and outputs, its nodes as [op_type, inputs,
 * outputs], and the shape of each initializer.
 * @param {Uint8Array} buf the model file
 * @returns {GraphSummary}
 */
export function graphSummary(buf) {
  const g = graphField(buf);
  /** @type {GraphSummary} */
  const out = { inputs: [], outputs: [], nodes: [], initializers: {} };
  for (const f of fields(buf, g.start, g.end)) {
    if (f.wire !== 2) continue;
    if (f.field === GRAPH.node) {
      let op = "";
      /** @type {string[]} */
      const ins = [];
      /** @type {string[]} */
      const outs = [];
      for (const n of fields(buf, f.start, f.end)) {
        if (n.wire !== 2) continue;
        const text = () => utf8.decode(buf.subarray(n.start, n.end));
        if (n.field === NODE.input) ins.push(text());
        else if (n.field === NODE.output) outs.push(text());
        else if (n.field === NODE.opType) op = text();
      }
      out.nodes.push([op, ins, outs]);
    } else if (f.field === GRAPH.initializer) {
      let name = "";
      /** @type {number[]} */
      const dims = [];
      for (const t of fields(buf, f.start, f.end)) {
        if (t.field === TENSOR.name && t.wire === 2) name = utf8.decode(buf.subarray(t.start, t.end));
        else if (t.field === TENSOR.dims && t.wire === 0) dims.push(t.value);
        else if (t.field === TENSOR.dims && t.wire === 2) {
          for (let p = t.start; p < t.end;) {
            const [d, next] = varint(buf, p);
            dims.push(d);
            p = next;
          }
        }
      }
      out.initializers[name] = dims;
    } else if (f.field === GRAPH.input) {
      out.inputs.push(nameOf(buf, f.start, f.end));
    } else if (f.field === GRAPH.output) {
      out.outputs.push(nameOf(buf, f.start, f.end));
    }
  }
  return out;
}

/** @param {number} n @returns {number[]} */
export function encodeVarint(n) {
  const bytes = [];
  while (n >= 128) {
    bytes.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  bytes.push(n);
  return bytes;
}

/** @param {number} field @param {Uint8Array} payload */
export function lengthDelimited(field, payload) {
  const head = [...encodeVarint(field * 8 + 2), ...encodeVarint(payload.length)];
  const out = new Uint8Array(head.length + payload.length);
  out.set(head);
  out.set(payload, head.length);
  return out;
}

/**
 * A copy of the model whose graph also outputs the tensors `names` (their types are left for
 * onnxruntime to infer).
 * @param {Uint8Array} buf the model file @param {string[]} names
 * @returns {Uint8Array}
 */
export function withOutputs(buf, names) {
  const g = graphField(buf);
  const utf8e = new TextEncoder();
  const extra = names.map((n) => lengthDelimited(GRAPH.output, lengthDelimited(VALUE_INFO_NAME, utf8e.encode(n))));
  const added = extra.reduce((a, e) => a + e.length, 0);
  const head = [...encodeVarint(MODEL_GRAPH * 8 + 2), ...encodeVarint(g.end - g.start + added)];
  const out = new Uint8Array(g.tagStart + head.length + (g.end - g.start) + added + (buf.length - g.end));
  let pos = 0;
  out.set(buf.subarray(0, g.tagStart), pos);
  pos += g.tagStart;
  out.set(head, pos);
  pos += head.length;
  out.set(buf.subarray(g.start, g.end), pos);
  pos += g.end - g.start;
  for (const e of extra) {
    out.set(e, pos);
    pos += e.length;
  }
  out.set(buf.subarray(g.end), pos);
  return out;
}
