// A reply token by token (OpenAI's `choice.logprobs.content`): each token tinted by the probability
// the model gave it, and on hover or keyboard focus the likeliest alternatives at that step. Tokens
// are text only; the arrow keys move between them.

/**
 * @typedef {{token: string, logprob: number, bytes?: number[]|null}} TopLogprob
 * @typedef {TopLogprob & {top_logprobs?: TopLogprob[]}} TokenLogprob
 */

/** The probability bands, likeliest first: each token gets the first whose floor it reaches. */
export const BANDS = [0.9, 0.6, 0.3, 0.1, 0];

/** "87.5 %", "< 0.1 %". @param {number} logprob */
export function percent(logprob) {
  const p = Math.exp(logprob) * 100;
  return p < 0.1 ? "< 0.1 %" : `${p >= 10 ? p.toFixed(1) : p.toFixed(2)} %`;
}

/** A token as shown: whitespace made visible where it would vanish. @param {string} token */
function shown(token) {
  return token.replace(/\n/g, "↵\n").replace(/\t/g, "→\t");
}

let tooltips = 0;

/**
 * Render the tokens into `target` (its children are replaced).
 * @param {HTMLElement} target @param {TokenLogprob[]} content
 */
export function renderTokenView(target, content) {
  const tooltip = document.createElement("div");
  tooltip.className = "tv-tooltip";
  tooltip.id = `tv-tooltip-${++tooltips}`;
  tooltip.setAttribute("role", "tooltip");
  tooltip.hidden = true;
  const tokens = content.map((t, i) => {
    const span = document.createElement("span");
    const p = Math.exp(t.logprob);
    span.className = `tv-token tv-band-${BANDS.findIndex((floor) => p >= floor)}`;
    span.textContent = shown(t.token);
    span.tabIndex = i === 0 ? 0 : -1;
    span.dataset.index = String(i);
    span.setAttribute("aria-label", `${JSON.stringify(t.token)}, ${percent(t.logprob)}`);
    return span;
  });

  /** @param {number} i */
  function explain(i) {
    const t = content[i];
    const list = document.createElement("ol");
    const top = t.top_logprobs?.length ? t.top_logprobs : [t];
    for (const alt of top) {
      const li = document.createElement("li");
      if (alt.token === t.token) li.className = "tv-chosen";
      const token = document.createElement("code");
      token.textContent = JSON.stringify(alt.token);
      li.append(token, ` ${percent(alt.logprob)}`);
      list.append(li);
    }
    const head = document.createElement("p");
    head.textContent = `chosen ${JSON.stringify(t.token)}: ${percent(t.logprob)}`;
    tooltip.replaceChildren(head, list);
    tooltip.hidden = false;
    const span = tokens[i];
    for (const other of tokens) other.removeAttribute("aria-describedby");
    span.setAttribute("aria-describedby", tooltip.id);
    tooltip.style.left = `${span.offsetLeft}px`;
    tooltip.style.top = `${span.offsetTop + span.offsetHeight + 4}px`;
  }
  const hide = () => { tooltip.hidden = true; };

  const line = document.createElement("div");
  line.className = "tv-tokens";
  line.setAttribute("role", "group");
  line.setAttribute("aria-label", "Reply tokens by probability (arrow keys move, each shows its alternatives)");
  line.append(...tokens);
  line.addEventListener("mouseover", (e) => {
    const i = Number(/** @type {HTMLElement} */ (e.target).dataset?.index ?? NaN);
    if (!Number.isNaN(i)) explain(i);
  });
  line.addEventListener("mouseleave", hide);
  line.addEventListener("focusin", (e) => explain(Number(/** @type {HTMLElement} */ (e.target).dataset.index)));
  line.addEventListener("focusout", hide);
  line.addEventListener("keydown", (e) => {
    const at = Number(/** @type {HTMLElement} */ (e.target).dataset.index);
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tokens.length - 1 }[e.key];
    if (to === undefined || to < 0 || to >= tokens.length) return;
    e.preventDefault();
    tokens[at].tabIndex = -1;
    tokens[to].tabIndex = 0;
    tokens[to].focus();
  });
  target.replaceChildren(line, tooltip);
  target.classList.add("token-view");
}
