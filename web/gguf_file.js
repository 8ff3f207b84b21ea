// A GGUF file a person picked, as a model id the engine opens.

/**
 * The model id of a GGUF file a person picked (a `File`, e.g. from `<input type="file">`): the engine
 * opens it as it is, in this page's worker, with no build step. A URL or a site path ending in
 * `.gguf` is a model id already. The id holds for this page's life.
 * @param {File} file @returns {string}
 */
export function ggufFileModelId(file) {
  const name = /\.gguf$/i.test(file.name) ? file.name : `${file.name}.gguf`;
  return `${URL.createObjectURL(file)}#${encodeURIComponent(name)}`;
}
