"""Start-up: the worker begins loading the page's first model while Python boots (worker.js
`preloadFrom`), and Python's load takes that work over. A load Python refuses leaves no model
behind; a WebGPU load in a worker whose ONNX runtime started on WASM is refused with a typed error
that says what to do, and the engine serves on."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS
from tests.support.prompts import PROMPTS
from tests.support.reference import hf_greedy_ids

pytestmark = pytest.mark.browser

RAW = """
async ([first, then]) => {
  const w = new Worker('/worker/worker.js', {type: 'module'});
  const replies = [];
  const answer = (id) => new Promise((resolve) => {
    const on = ({data}) => {
      const m = JSON.parse(data);
      replies.push([m.id, m.type, m.progress?.stage ?? null]);
      if (m.id === id && (m.type === 'result' || m.type === 'error')) {
        w.removeEventListener('message', on);
        resolve(m);
      }
    };
    w.addEventListener('message', on);
  });
  const firstAnswer = answer(first.id);
  w.postMessage(JSON.stringify(first));  // the worker's first message: Python is not there yet
  const r1 = await firstAnswer;
  const out = [r1];
  for (const msg of then) {
    const a = answer(msg.id);
    w.postMessage(JSON.stringify(msg));
    out.push(await a);
  }
  w.terminate();
  return {out, replies};
}
"""


@pytest.fixture(scope="module")
def page(playwright: Any, site_url: str) -> Any:
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--enable-unsafe-webgpu"])
    p = browser.new_page()
    p.set_default_timeout(300_000)
    p.goto(site_url + "web/engine.js")
    yield p
    browser.close()


def _load(id_: str, models: list[str], device: str = "wasm", hub: Any = None) -> dict[str, Any]:
    return {"id": id_, "type": "load", "request": {"model_ids": models, "device": device, "hub": hub}}


def test_a_load_python_refuses_leaves_no_preloaded_model_behind(page: Any) -> None:
    stats = [{"id": f"m{i}", "type": "memory_stats"} for i in range(3)]
    r = page.evaluate(RAW, [_load("l1", ["tiny-chat"], hub="ftp://not-a-mirror"), stats])
    refused, *memory = r["out"]
    assert refused["type"] == "error" and refused["error"]["param"] == "hub", refused
    # the worker began loading tiny-chat before Python read the request, and dropped it at the refusal
    assert [m["result"]["preloads"] for m in memory] == [0, 0, 0], memory
    assert all(m["result"]["models"] == 0 for m in memory), memory


def test_the_first_load_is_taken_over_with_its_progress_and_the_model_answers_as_torch(page: Any) -> None:
    tokens = 8
    chat = {"id": "c1", "type": "chat", "request": {"messages": PROMPTS[0], "temperature": 0,
                                                    "max_tokens": tokens, "return_token_ids": True}}
    r = page.evaluate(RAW, [_load("l2", ["tiny-chat"]), [chat, {"id": "m2", "type": "memory_stats"}]])
    loaded, reply, memory = r["out"]
    assert loaded["type"] == "result", loaded
    stages = [s for i, t, s in r["replies"] if i == "l2" and t == "progress"]
    # the model's own stages, in order, after the boot's: the plan first, ready last
    model_stages = stages[stages.index("python-ready") + 1:]
    assert model_stages[0] in ("initiate", "plan") and "plan" in model_stages and model_stages[-1] == "ready"
    assert reply["result"]["choices"][0]["token_ids"] == hf_greedy_ids(PROMPTS[0], tokens)
    assert memory["result"]["models"] == 1 and memory["result"]["preloads"] == 0  # the preload, taken over


def test_webgpu_after_a_wasm_start_is_refused_clearly_and_the_engine_serves_on(page: Any) -> None:
    chat = {"id": "c3", "type": "chat", "request": {"messages": PROMPTS[0], "temperature": 0, "max_tokens": 4}}
    r = page.evaluate(RAW, [_load("l3", ["tiny-chat"]), [_load("l4", ["tiny-chat"], "webgpu"),
                                                         _load("l5", ["tiny-chat"]), chat]])
    first, gpu, again, reply = r["out"]
    assert first["type"] == "result" and again["type"] == "result", (first, again)
    assert gpu["type"] == "error" and gpu["error"]["name"] == "ModelLoadError", gpu
    assert "WASM" in gpu["error"]["message"] and "new engine" in gpu["error"]["message"], gpu
    assert reply["type"] == "result" and reply["result"]["choices"][0]["message"]["content"], reply
