// The chat playground: load a model with a progress bar, stream replies, stop them, show speed.
// Model output is only ever inserted as text (textContent), never parsed as HTML.

import { CreateWebWorkerEngine } from "./engine.js";

const $ = (id) => /** @type {any} */ (document.getElementById(id));
const ui = {
  loadForm: $("load-form"), modelId: $("model-id"), device: $("device"), load: $("load"),
  loading: $("loading"), progress: $("progress"), progressText: $("progress-text"),
  messages: $("messages"), chatForm: $("chat-form"), prompt: $("prompt"), send: $("send"),
  stop: $("stop"), clear: $("clear"), status: $("status"), stats: $("stats"),
};

/** @type {import("./engine.js").WebWorkerEngine|null} */
let engine = null;
/** @type {{role: string, content: string}[]} */
let history = [];
let generating = false;

function setBusy(busy) {
  generating = busy;
  ui.send.disabled = busy || !engine;
  ui.prompt.disabled = !engine;
  ui.stop.disabled = !busy;
  ui.load.disabled = busy;
}

/** @param {string} role @param {string} text */
function addMessage(role, text) {
  const div = document.createElement("div");
  div.className = `message ${role}`;
  const body = document.createElement("span");
  body.className = "body";
  body.textContent = text;
  div.append(body);
  ui.messages.append(div);
  ui.messages.scrollTop = ui.messages.scrollHeight;
  return div;
}

async function load(modelId, device) {
  ui.loading.hidden = false;
  ui.progress.value = 0;
  ui.status.textContent = `Loading ${modelId}…`;
  setBusy(true);
  const onProgress = (r) => {
    ui.progress.value = r.progress;
    ui.progressText.textContent = r.text;
  };
  try {
    if (!engine) {
      const worker = new Worker(new URL("../worker/worker.js", import.meta.url), { type: "module" });
      engine = await CreateWebWorkerEngine(worker, modelId, { initProgressCallback: onProgress, device });
    } else {
      engine.config.initProgressCallback = onProgress;
      engine.config.device = device;
      await engine.reload(modelId);
    }
    ui.status.textContent = `${modelId} is ready (${device}).`;
    document.body.dataset.ready = "true";
  } catch (err) {
    ui.status.textContent = `Could not load ${modelId}: ${err.message}`;
  } finally {
    ui.loading.hidden = true;
    setBusy(false);
  }
}

async function send(text) {
  history.push({ role: "user", content: text });
  addMessage("user", text);
  const div = addMessage("assistant", "");
  const body = div.querySelector(".body");
  setBusy(true);
  ui.stats.textContent = "";
  let reply = "";
  try {
    const stream = await engine.chat.completions.create({
      messages: history,
      stream: true,
      stream_options: { include_usage: true },
      ...settings,
    });
    let finish = null;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        reply += choice.delta.content ?? "";
        body.textContent = reply;
        finish = choice.finish_reason ?? finish;
      }
      if (chunk.usage) {
        const x = chunk.usage.extra;
        const meta = document.createElement("span");
        meta.className = "meta";
        meta.textContent =
          `${chunk.usage.completion_tokens} tokens · ${x.decode_tokens_per_s.toFixed(1)} tokens/s · ` +
          `first token ${(x.time_to_first_token_s * 1000).toFixed(0)} ms · ${finish}`;
        div.append(meta);
        ui.stats.textContent = `${x.decode_tokens_per_s.toFixed(1)} tokens/s`;
      }
      ui.messages.scrollTop = ui.messages.scrollHeight;
    }
    history.push({ role: "assistant", content: reply });
    div.dataset.finish = finish ?? "";
  } catch (err) {
    div.classList.add("error");
    body.textContent = `${err.name}: ${err.message}`;
    history.pop();
  } finally {
    div.dataset.done = "true";
    setBusy(false);
    ui.prompt.focus();
  }
}

ui.loadForm.addEventListener("submit", (e) => {
  e.preventDefault();
  load(ui.modelId.value.trim(), ui.device.value);
});
ui.chatForm.addEventListener("submit", (e) => {
  e.preventDefault();
  const text = ui.prompt.value.trim();
  if (!text || generating || !engine) return;
  ui.prompt.value = "";
  send(text);
});
ui.prompt.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    ui.chatForm.requestSubmit();
  }
});
ui.stop.addEventListener("click", () => engine?.interruptGenerate());
ui.clear.addEventListener("click", () => {
  history = [];
  ui.messages.replaceChildren();
  engine?.resetChat();
});

const params = new URLSearchParams(location.search);
// Generation settings can be set in the URL: ?temperature=0&max_tokens=512&ignore_eos=1
const settings = {
  temperature: Number(params.get("temperature") ?? 0.7),
  top_p: Number(params.get("top_p") ?? 0.95),
  max_tokens: Number(params.get("max_tokens") ?? 256),
  ...(params.get("ignore_eos") === "1" ? { ignore_eos: true } : {}),
};
ui.modelId.value = params.get("model") ?? "tiny-chat";
ui.device.value = params.get("device") ?? "wasm";
load(ui.modelId.value, ui.device.value);
