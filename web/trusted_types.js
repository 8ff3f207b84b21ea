// @ts-check
// csi-web's one Trusted Types policy, `csi-web`: on a page whose Content-Security-Policy says
// `require-trusted-types-for 'script'; trusted-types csi-web` (the playground's does), every string
// that becomes a script URL or markup goes through here, and nowhere else.
//   - Script URLs (the engine's worker, the site's service worker) only of this page's origin:
//     workers must be same-origin anyway, and anything else is refused with a TypeError.
//   - HTML only for a sanitizer, while it runs (withSanitizerPolicy): DOMPurify parses the untrusted
//     string into an inert document with the policy's TrustedHTML and hands back nodes; the policy
//     makes no markup at any other time, and markup never leaves as TrustedHTML for a live sink.
// The policy is created the first time it is needed, so a page without Trusted Types, or one that
// never loads a worker, never sees it. Where the browser has no Trusted Types, or the page's policy
// does not allow `csi-web` (a violation the browser reports), strings are used as they are.

const NAME = "csi-web";

/**
 * A Trusted Types policy, as the browser makes it (TypeScript's DOM types have none yet); this one
 * has no `createScript` rule, so that throws.
 * @typedef {{readonly name: string, createHTML(s: string): any, createScript(s: string): any,
 *            createScriptURL(s: string): any}} Policy
 */

/** @type {Policy|null|undefined} undefined until first asked; null: none can be had */
let policy;
/** How many sanitizer runs are under way (the only time the policy makes HTML). */
let sanitizing = 0;

/** @param {string} text */
function scriptURL(text) {
  const base = globalThis.document?.baseURI ?? globalThis.location?.href;
  const url = new URL(text, base);
  if (url.origin !== globalThis.location?.origin) {
    throw new TypeError(`${NAME} trusts scripts of this origin only, not ${url.href}`);
  }
  return url.href;
}

/** @param {string} html */
function html(html) {
  if (sanitizing === 0) throw new TypeError(`${NAME} makes HTML only for a sanitizer (withSanitizerPolicy)`);
  return html;
}

/** The policy, created once; null where there is none. @returns {Policy|null} */
function csiPolicy() {
  if (policy === undefined) {
    /** @type {any} */
    const factory = /** @type {any} */ (globalThis).trustedTypes;
    policy = null;
    if (typeof factory?.createPolicy === "function") {
      try {
        policy = factory.createPolicy(NAME, { createScriptURL: scriptURL, createHTML: html });
      } catch (/** @type {any} */ err) {
        console.warn(`Trusted Types policy ${NAME} could not be created (${err?.message ?? err}); using plain strings`);
      }
    }
  }
  return policy ?? null;
}

/**
 * A script URL of this page's origin (relative to the page), as what a Worker or a service worker
 * registration takes under Trusted Types: the `csi-web` policy's TrustedScriptURL, or the absolute
 * URL as text where there is no policy. Throws a TypeError for a URL of another origin.
 * @param {string|URL} url
 * @returns {string} (a TrustedScriptURL where there is a policy; sinks take both)
 */
export function trustedScriptURL(url) {
  const p = csiPolicy();
  return p ? p.createScriptURL(String(url)) : scriptURL(String(url));
}

/**
 * Run a sanitizer that parses untrusted HTML into an inert document and returns nodes (DOMPurify
 * with `TRUSTED_TYPES_POLICY: policy` and `RETURN_DOM_FRAGMENT`): `run` gets the `csi-web` policy
 * (or undefined where there is none), which makes HTML only until `run` returns. What `run` returns
 * must not be TrustedHTML: sanitized markup reaches the page as nodes, never through a live sink.
 * @template T
 * @param {(policy: Policy|undefined) => T} run
 * @returns {T}
 */
export function withSanitizerPolicy(run) {
  const p = csiPolicy() ?? undefined;
  sanitizing++;
  let out;
  try {
    out = run(p);
  } finally {
    sanitizing--;
  }
  if (/** @type {any} */ (globalThis).trustedTypes?.isHTML?.(out)) {
    throw new TypeError(`${NAME}: a sanitizer run must return nodes, not TrustedHTML`);
  }
  return out;
}
