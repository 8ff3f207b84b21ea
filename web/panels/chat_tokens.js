// The token view: each token of a reply shaded by its probability, its likeliest alternatives in
// its tooltip. Tokens are set as text.

import { el } from "./dom.js";

/** @param {import("../conversations/tree.js").TokenLogprob[]} logprobs */
export function renderTokens(logprobs) {
  const box = el("div", "tokens");
  box.setAttribute("aria-label", "Tokens and their probabilities");
  for (const t of logprobs) {
    const p = Math.exp(t.logprob);
    const span = el("span", "tok", t.token);
    span.style.setProperty("--p", p.toFixed(3));
    span.title = [`${JSON.stringify(t.token)} ${(p * 100).toFixed(1)}%`,
      ...t.top_logprobs.map((a) => `  ${JSON.stringify(a.token)} ${(Math.exp(a.logprob) * 100).toFixed(1)}%`)].join("\n");
    box.append(span);
  }
  return box;
}
