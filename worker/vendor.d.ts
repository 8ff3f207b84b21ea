// The runtimes the build copies into dist/vendor/ (they are not in the source tree): their exports
// are typed `any` here, so tsc checks our code against them without reading node_modules.

declare module "*/vendor/transformers/transformers.js" {
  export const env: any;
  export const AutoConfig: any;
  export const AutoModelForCausalLM: any;
  export const AutoTokenizer: any;
  export const ModelRegistry: any;
  export const Tensor: any;
  export const mean_pooling: any;
  export const pipeline: any;
}

declare module "*/vendor/pyodide/pyodide.mjs" {
  export const loadPyodide: any;
  export const version: string;
}

// web-xgrammar's UMD bundle: imported for its side effect (it defines globalThis.xgrammar).
declare module "*/vendor/xgrammar/index.js" {}
