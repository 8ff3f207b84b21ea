// The playground's "Model insides" panel: RemoteLLM's GenerationalGuts for a prompt, drawn with
// Apache ECharts (served by the site, loaded the first time the panel is used). Three heatmaps,
// tokens x dimensions (token embedding, positional embedding, final hidden state), and the next
// token candidates as bars. Token text reaches the charts' tooltips as text (drawn on the canvas).

import { find } from "./dom.js";

/** @typedef {import("csi-web").WebWorkerEngine} WebWorkerEngine */

const ECHARTS = "../../vendor/echarts/echarts.esm.min.mjs";
const ROW_PX = 14;

/** @type {Promise<any>|null} */
let echartsModule = null;
function loadECharts() {
  echartsModule ??= import(new URL(ECHARTS, import.meta.url).href);
  return echartsModule;
}

/**
 * A chart's box, which ECharts clears with `innerHTML = ""` (on init and dispose): a string the
 * page's Trusted Types refuse, so on this element clearing is `replaceChildren()` and any other
 * markup a TypeError. (Tooltips are drawn on the canvas, as text: ECharts' HTML ones are markup.)
 * @param {HTMLElement} el
 */
function clearedByNodes(el) {
  const inner = /** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(Element.prototype, "innerHTML"));
  Object.defineProperty(el, "innerHTML", {
    configurable: true,
    get() { return inner.get?.call(this); },
    /** @param {unknown} markup */
    set(markup) {
      if (markup !== "") throw new TypeError("a chart's box takes no markup");
      this.replaceChildren();
    },
  });
  return el;
}

/** Text for a canvas tooltip, where `{style|words}` is rich-text markup: such a brace gets a zero-width space. @param {string} t */
const plain = (t) => t.replace(/\{(?=\w+\|)/g, "{\u200B");

/** A token as a one-line label: whitespace and control characters made visible. @param {string} t */
export function tokenLabel(t) {
  return JSON.stringify(t).slice(1, -1);
}

const FIELDS = [
  { key: "token_embedding", title: "Token embedding" },
  { key: "positional_embedding", title: "Positional embedding" },
  { key: "hidden_state", title: "Hidden state (after the final norm)" },
];

/**
 * Mount the panel on its root (`#insides`).
 * @param {ParentNode} root
 */
export function mountInsides(root) {
  const ui = {
    form: find(root, "#insides-form", HTMLFormElement),
    prompt: find(root, "#insides-prompt", HTMLInputElement),
    fft: find(root, "#insides-fft", HTMLInputElement),
    keep: find(root, "#insides-keep", HTMLInputElement),
    topK: find(root, "#insides-top-k", HTMLInputElement),
    show: find(root, "#insides-show", HTMLButtonElement),
    status: find(root, "#insides-status", HTMLElement),
    charts: find(root, "#insides-charts", HTMLElement),
  };
  /** @type {WebWorkerEngine|null} the engine, once a chat model is loaded */
  let engine = null;
  /** @type {Map<string, any>} ECharts instances by chart element id */
  const charts = new Map();

  const setStatus = (/** @type {string} */ text, error = false) => {
    ui.status.textContent = text;
    ui.status.classList.toggle("error", error);
  };

  /** @param {any} echarts @param {string} id */
  function chart(echarts, id) {
    const el = find(ui.charts, `#${id}`, HTMLElement);
    let c = charts.get(id);
    if (!c) {
      c = echarts.init(clearedByNodes(el), null, { renderer: "canvas" });
      charts.set(id, c);
    }
    return c;
  }

  /**
   * @param {any} echarts @param {string} id @param {string} title @param {string[]} labels one per token
   * @param {number[][]} rows tokens x values @param {string[]} tokens the tokens' text
   */
  function heatmap(echarts, id, title, labels, rows, tokens) {
    const el = find(ui.charts, `#${id}`, HTMLElement);
    el.style.height = `${Math.max(140, Math.min(rows.length * ROW_PX, 520) + 70)}px`;
    const c = chart(echarts, id);
    c.resize();
    const width = rows[0]?.length ?? 0;
    const data = [];
    let extent = 0;
    for (let y = 0; y < rows.length; y++) {
      for (let x = 0; x < width; x++) {
        const v = rows[y][x];
        data.push([x, y, v]);
        if (Math.abs(v) > extent) extent = Math.abs(v);
      }
    }
    c.setOption({
      animation: false,
      title: { text: title, textStyle: { fontSize: 13 } },
      grid: { left: 110, right: 70, top: 30, bottom: 30 },
      tooltip: {
        renderMode: "richText",
        formatter: (/** @type {any} */ p) =>
          `${plain(tokenLabel(tokens[p.value[1]]))} (position ${p.value[1]})\n` +
          `dimension ${p.value[0]}: ${p.value[2].toPrecision(5)}`,
      },
      xAxis: { type: "category", data: Array.from({ length: width }, (_, i) => String(i)), splitArea: { show: false } },
      yAxis: { type: "category", data: labels, inverse: true, axisLabel: { fontSize: 10 } },
      visualMap: {
        min: -extent || -1, max: extent || 1, calculable: true, orient: "vertical", right: 0, top: "center",
        itemHeight: 100, inRange: { color: ["#2563eb", "#f8fafc", "#dc2626"] }, precision: 3,
      },
      series: [{ type: "heatmap", data, emphasis: { itemStyle: { borderColor: "#000", borderWidth: 1 } } }],
    }, true);
  }

  /** @param {any} echarts @param {any[]} generations */
  function bars(echarts, generations) {
    const el = find(ui.charts, "#insides-next", HTMLElement);
    el.style.height = "220px";
    const c = chart(echarts, "insides-next");
    c.resize();
    c.setOption({
      title: { text: "Next token", textStyle: { fontSize: 13 } },
      grid: { left: 50, right: 20, top: 30, bottom: 50 },
      tooltip: {
        renderMode: "richText",
        formatter: (/** @type {any} */ p) => {
          const g = generations[p.dataIndex];
          return `${plain(tokenLabel(g.token))} (id ${g.id})\nprobability ${(g.probability * 100).toFixed(2)}%` +
            `\nlogit ${g.logit.toPrecision(5)}`;
        },
      },
      xAxis: { type: "category", data: generations.map((g) => tokenLabel(g.token)), axisLabel: { interval: 0, rotate: 30 } },
      yAxis: { type: "value" },
      series: [{ type: "bar", data: generations.map((g) => g.probability), itemStyle: { color: "#2563eb" } }],
    }, true);
  }

  async function show() {
    if (!engine) return;
    const keep = Number(ui.keep.value);
    const topK = Number(ui.topK.value);
    ui.show.disabled = true;
    setStatus("Running the model…");
    try {
      const started = performance.now();
      const [echarts, insides] = await Promise.all([
        loadECharts(),
        engine.remote.generationalGuts({
          prompt: ui.prompt.value, fft_embeddings: ui.fft.checked, embedding_trunkation: keep, top_k_logits: topK,
        }),
      ]);
      const ran = performance.now() - started;
      ui.charts.hidden = false;
      const tokens = insides.tokens.map((/** @type {any} */ t) => t.token);
      const labels = insides.tokens.map((/** @type {any} */ t, /** @type {number} */ i) => `${i} ${tokenLabel(t.token)}`.slice(0, 16));
      FIELDS.forEach(({ key, title }, i) =>
        heatmap(echarts, `insides-${i}`, title, labels, insides.tokens.map((/** @type {any} */ t) => t[key]), tokens));
      bars(echarts, insides.generations);
      const drawn = performance.now() - started - ran;
      setStatus(`${tokens.length} tokens; model ${ran.toFixed(0)} ms, charts ${drawn.toFixed(0)} ms.`);
      ui.charts.dataset.tokens = String(tokens.length);
    } catch (/** @type {any} */ err) {
      setStatus(`${err.name ?? "Error"}: ${err.message}`, true);
    } finally {
      ui.show.disabled = !engine;
    }
  }

  ui.form.addEventListener("submit", (e) => {
    e.preventDefault();
    show();
  });
  addEventListener("resize", () => charts.forEach((c) => c.resize()));

  return {
    /** A chat model is ready (or gone, with `null`). @param {WebWorkerEngine|null} e */
    setEngine(e) {
      engine = e;
      ui.show.disabled = !engine;
    },
  };
}
