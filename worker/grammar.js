// Grammar-constrained decoding for one chat model with web-xgrammar (the same xgrammar as the
// CPython backend's): the model's vocabulary as xgrammar sees it, a compiler, compiled grammars
// cached per grammar (LRU), and matchers that give each step's token bitmask.
// Python decides what is constrained (csi.core.grammar); this only compiles and matches.

/**
 * @typedef {{kind: "json_schema"|"ebnf"|"structural_tag", source: string, compiled_source?: string}} GrammarSpec
 * `compiled_source`: what to compile when it differs from `source` (a structural tag whose JSON
 * formats Python made compact); the cache key is `source`.
 */

const CACHE_SIZE = 64;

/** @type {Promise<any>|null} */
let loading = null;
/** @type {string[]|null} what xgrammar printed while a compile was running */
let printed = null;

/**
 * web-xgrammar, loaded on first use (1.1 MB: ordinary decoding never pays for it). Its compiler
 * reports errors only by printing them before it aborts the call, so what it prints while a
 * compile runs is kept to become the error's message.
 * @returns {Promise<any>}
 */
function xgrammar() {
  if (!loading) {
    const original = console.error;
    console.error = (...args) => {
      if (printed) printed.push(args.map(String).join(" "));
      else original.apply(console, args);
    };
    // a UMD bundle: imported for its side effect, it defines globalThis.xgrammar
    loading = import("../vendor/xgrammar/index.js").then(() => /** @type {any} */ (globalThis).xgrammar);
  }
  return loading;
}

/** The compiler's own words for a failure (not emscripten's "Aborted()"). @param {unknown} err */
function compilerMessage(err) {
  const said = (printed ?? []).filter((line) => !line.startsWith("Aborted("));
  return said.length ? said.join("\n") : String(/** @type {any} */ (err)?.message ?? err);
}

/**
 * A JSON Schema as compact EBNF (", " and ": ", no other whitespace), as the CPython backend.
 * @param {string} schema
 */
export async function jsonSchemaToEBNF(schema) {
  const xgr = await xgrammar();
  printed = [];
  try {
    const grammar = await xgr.Grammar.fromJSONSchema(schema, false, -1, [", ", ": "], true);
    const text = grammar.toString();
    grammar.dispose();
    return text;
  } catch (err) {
    throw new Error(compilerMessage(err));
  } finally {
    printed = null;
  }
}

export class Grammars {
  /**
   * @param {string[]} vocab every token string by id, as tokenizer.json writes it
   * @param {string} vocabType "byte_level" | "byte_fallback" | "raw"
   * @param {boolean} prependSpace @param {number} vocabSize the logits' size
   * @param {number[]} stopIds
   */
  constructor(vocab, vocabType, prependSpace, vocabSize, stopIds) {
    this.args = { vocab, vocabType, prependSpace, vocabSize, stopIds };
    /** @type {Promise<any>|null} */
    this.compiler = null;
    /** @type {Map<string, any>} */
    this.cache = new Map();
  }

  /** @returns {Promise<any>} */
  async getCompiler() {
    if (!this.compiler) {
      this.compiler = (async () => {
        const xgr = await xgrammar();
        const a = this.args;
        const info = await xgr.TokenizerInfo.createTokenizerInfo(a.vocab, a.vocabType, a.prependSpace, a.vocabSize, a.stopIds);
        return xgr.GrammarCompiler.createGrammarCompiler(info);
      })();
    }
    return this.compiler;
  }

  /**
   * Compile `spec` unless cached, and return it compiled; throws an Error whose message is the
   * compiler's.
   * @param {GrammarSpec} spec
   */
  async compile(spec) {
    const key = `${spec.kind}\u0000${spec.source}`;
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    const compiler = await this.getCompiler();
    printed = [];
    let compiled;
    try {
      if (spec.kind === "json_schema") {
        // compact: ", " and ": " and no other whitespace, as the CPython backend
        compiled = await compiler.compileJSONSchema(spec.source, false, -1, [", ", ": "], true);
      } else if (spec.kind === "ebnf") {
        compiled = await compiler.compileGrammar(spec.source);
      } else {
        compiled = await compiler.compileStructuralTag(spec.compiled_source ?? spec.source);
      }
    } catch (err) {
      throw new Error(compilerMessage(err));
    } finally {
      printed = null;
    }
    this.cache.set(key, compiled);
    if (this.cache.size > CACHE_SIZE) {
      const [oldest, value] = /** @type {[string, any]} */ (this.cache.entries().next().value);
      this.cache.delete(oldest);
      value.dispose();
    }
    return compiled;
  }

  /** Free the compiled grammars and the compiler (the model is being unloaded). */
  async dispose() {
    for (const compiled of this.cache.values()) compiled.dispose();
    this.cache.clear();
    if (this.compiler) (await this.compiler).dispose();
    this.compiler = null;
  }

  /**
   * A matcher at the start of `spec` (compiled before).
   * @param {GrammarSpec} spec
   */
  async matcher(spec) {
    const compiled = await this.compile(spec);
    const xgr = await xgrammar();
    return xgr.GrammarMatcher.createGrammarMatcher(compiled);
  }
}

/**
 * `logits` with every token `bitmask` rejects (and every id past it) at -Infinity.
 * @param {Float32Array} logits @param {Int32Array} bitmask
 */
export function applyBitmask(logits, bitmask) {
  const out = new Float32Array(logits.length).fill(-Infinity);
  const n = Math.min(logits.length, bitmask.length * 32);
  for (let w = 0; w * 32 < n; w++) {
    const word = bitmask[w];
    if (word === 0) continue;
    const base = w * 32;
    const end = Math.min(32, n - base);
    for (let b = 0; b < end; b++) {
      if ((word >>> b) & 1) out[base + b] = logits[base + b];
    }
  }
  return out;
}
