// Small DOM helpers the playground's panels share.

/**
 * The element `selector` finds under `root`; it must be a `type` (the page is broken otherwise).
 * @template {Element} T
 * @param {ParentNode} root @param {string} selector @param {{new (): T, prototype: T}} type
 * @returns {T}
 */
export function find(root, selector, type) {
  const node = root.querySelector(selector);
  if (!(node instanceof type)) throw new Error(`the playground has no ${type.name} ${selector}`);
  return node;
}

/**
 * A new element, with a class and text if given (text is only ever set as text, never parsed).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag @param {string} [className] @param {string} [text]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, className = "", text = "") {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text) node.textContent = text;
  return node;
}

/** "1 chunk", "2 chunks". @param {number} n @param {string} one @param {string} [many] */
export function counted(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}
