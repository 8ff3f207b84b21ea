// The endpoint panel: whether this tab serves the site's /v1/ (web/v1_host.js), a live check
// (`GET /v1/models` from this page, through the service worker), and client snippets with Copy
// buttons. Whatever the endpoint answers is shown as text only.

import { v1Status } from "csi-web/v1";
import { el } from "./dom.js";
import { snippets } from "./endpoint_snippets.js";

/**
 * A `<dt>`/`<dd>` pair. @param {HTMLElement} list @param {string} term @param {string} id
 * @returns {HTMLElement} the `<dd>`
 */
function row(list, term, id) {
  const dd = el("dd");
  dd.id = id;
  list.append(el("dt", "", term), dd);
  return dd;
}

/**
 * Mount the panel on its root (`#panel-endpoint`), building its elements.
 * @param {HTMLElement} root
 */
export function mountEndpoint(root) {
  const facts = el("dl", "endpoint-facts");
  const hosting = row(facts, "This tab serves /v1/", "endpoint-hosting");
  const worker = row(facts, "Service worker", "endpoint-worker");
  const models = row(facts, "Models", "endpoint-models");
  const url = row(facts, "Base URL", "endpoint-url");
  const check = Object.assign(el("button", "", "Check /v1/models"), { id: "endpoint-check", type: "button" });
  const result = el("pre", "endpoint-result");
  result.id = "endpoint-result";
  result.setAttribute("aria-live", "polite");
  const list = el("div", "endpoint-snippets");
  list.id = "endpoint-snippets";
  root.replaceChildren(el("h2", "", "Endpoint"),
    el("p", "hint", "While a model is loaded here, every page of this site can use it over OpenAI's HTTP API at /v1/."),
    facts, check, result, el("h3", "", "Clients"), list);

  let model = "";

  function showStatus() {
    const s = v1Status();
    hosting.textContent = s.hosting ? "yes" : s.error ? `no: ${s.error}` : "no";
    worker.textContent = s.serviceWorker ? "active, controls this page" : "not controlling this page (reload it)";
    models.textContent = s.models.length ? s.models.join(", ") : "none";
    url.textContent = `${location.origin}/v1`;
    root.dataset.hosting = String(s.hosting);
  }

  function showSnippets() {
    list.replaceChildren(...snippets(location.origin, model || "MODEL").map((s) => {
      const box = el("section", "snippet");
      box.dataset.snippet = s.id;
      const code = el("pre", "", s.code);
      code.tabIndex = 0;
      code.setAttribute("role", "region");
      code.setAttribute("aria-label", `${s.title} snippet`);
      const copy = Object.assign(el("button", "copy", "Copy"), { type: "button" });
      copy.setAttribute("aria-label", `Copy the ${s.title} snippet`);
      const done = el("span", "copied");
      done.setAttribute("aria-live", "polite");
      copy.addEventListener("click", async () => {
        try {
          await navigator.clipboard.writeText(s.code);
          done.textContent = "Copied.";
        } catch (/** @type {any} */ err) {
          done.textContent = `Could not copy: ${err?.message ?? err}`;
        }
      });
      const head = el("div", "snippet-head");
      head.append(el("h4", "", s.title), copy, done);
      box.append(head, el("p", "hint", s.note), code);
      return box;
    }));
  }

  check.addEventListener("click", async () => {
    showStatus();
    check.disabled = true;
    result.textContent = "Asking /v1/models…";
    result.classList.remove("error");
    try {
      const response = await fetch("/v1/models");
      const text = await response.text();
      let shown = text;
      try {
        const body = JSON.parse(text);
        const ids = Array.isArray(body?.data) ? body.data.map((/** @type {any} */ m) => String(m?.id)) : null;
        shown = ids ? `${response.status}: ${ids.join(", ") || "no models"}` : `${response.status}: ${text}`;
        result.dataset.models = ids ? ids.join(",") : "";
      } catch {
        shown = `${response.status}: ${text.slice(0, 500)}`;
      }
      result.dataset.status = String(response.status);
      result.classList.toggle("error", !response.ok);
      result.textContent = shown;
    } catch (/** @type {any} */ err) {
      result.classList.add("error");
      result.dataset.status = "failed";
      result.textContent = `The request failed: ${err?.message ?? err}`;
    } finally {
      check.disabled = false;
    }
  });

  showStatus();
  showSnippets();
  return {
    /** A model load ended: the chat model the snippets ask ("" when none). @param {string} m */
    setModel(m) {
      model = m;
      showStatus();
      showSnippets();
    },
    /** Show the status again (e.g. when the panel is shown). */
    refresh: showStatus,
  };
}
