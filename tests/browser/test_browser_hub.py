"""Hub models, really: `org/name` loaded through transformers.js from a local mirror in the Hub's
URL layout, with byte progress, kept in the browser's Cache API, loaded again with the mirror
stopped, listed and deleted by the cache helpers, and cancelled mid-download.

The model, ``csi-test/tiny-qwen2`` (buildtools/models/tiny_qwen2.py), is not among the site's built-ins:
its own architecture (Qwen2), tokenizer and chat template. Its replies are checked against
PyTorch on the same files."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from buildtools.models.hub_mirror import Mirror
from tests.support.browser import EnginePage, tracked_context

pytestmark = pytest.mark.browser

REPO = "csi-test/tiny-qwen2"
MESSAGES = [{"role": "user", "content": "Tell me about csv files."}]
NEW_TOKENS = 16


@pytest.fixture(scope="module")
def repo_folder() -> Path:
    from buildtools.models.cache import build_hub_models

    return build_hub_models()[REPO]


@pytest.fixture(scope="module")
def torch_greedy(repo_folder: Path) -> tuple[list[int], list[int]]:
    """The prompt ids and greedy continuation (EOS excluded) by HF transformers on the repo's files."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(repo_folder)
    model = AutoModelForCausalLM.from_pretrained(repo_folder).eval()
    prompt = tok.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=True)
    prompt = list(prompt["input_ids"] if hasattr(prompt, "keys") else prompt)
    eos = model.generation_config.eos_token_id
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=NEW_TOKENS,
                             eos_token_id=eos, pad_token_id=eos[-1])
    new = out[0, len(prompt):].tolist()
    stops = [i for i, t in enumerate(new) if t in eos]
    return prompt, new[:stops[0]] if stops else new


@pytest.fixture()
def fresh_page(browser: Any, site_url: str) -> Iterator[EnginePage]:
    """A new browser context (an empty Cache API) with a same-origin page and the engine module."""
    context, requests = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(300_000)
    page.goto(site_url + "web/engine.js")
    page.evaluate("async () => { window.webllm = await import('/web/engine.js'); }")
    yield EnginePage(page, requests)
    context.close()


def start_mirror(folder: Path, throttle: float | None = None) -> Mirror:
    return Mirror({REPO: folder}, throttle=throttle).start()


LOAD = """window.reports = [];
          window.engine = await webllm.CreateMLCEngine(arg.repo, {hubMirror: arg.hub,
            initProgressCallback: (r) => window.reports.push(r)});
          engine = window.engine;"""
GREEDY = """const r = await engine.chat.completions.create({messages: arg.messages, temperature: 0,
              max_tokens: arg.n, return_token_ids: true});
            return {prompt: r.prompt_token_ids, ids: r.choices[0].token_ids, model: r.model};"""


def test_a_hub_model_loads_from_the_mirror_with_byte_progress_and_replies_as_torch(
        fresh_page, repo_folder, torch_greedy):
    mirror = start_mirror(repo_folder)
    try:
        arg = {"repo": REPO, "hub": mirror.url, "messages": MESSAGES, "n": NEW_TOKENS}
        out = fresh_page.ok(LOAD + GREEDY, arg)
        reports = fresh_page.page.evaluate("window.reports")
        cached = fresh_page.ok("""return {has: await webllm.hasModelInCache(arg), list: await webllm.listCachedModels(),
                                          other: await webllm.hasModelInCache('csi-test/absent')};""", REPO)
    finally:
        mirror.stop()
    assert (out["prompt"], out["ids"]) == torch_greedy and out["model"] == REPO
    weights = repo_folder / "onnx" / "model.onnx"
    onnx = [r for r in reports if r.get("file") == "onnx/model.onnx" and r["stage"] == "progress"]
    assert onnx and onnx[-1]["loaded"] == onnx[-1]["total"] == weights.stat().st_size
    assert [r["loaded"] for r in onnx] == sorted(r["loaded"] for r in onnx)
    [plan] = [r for r in reports if r["stage"] == "plan"]
    read = {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "onnx/model.onnx"}
    assert plan["files"] == {f: (repo_folder / f).stat().st_size for f in read}
    assert reports[-1]["progress"] == 1
    for r in onnx:  # the overall fraction counts every byte of the load from the start
        assert r["bytesTotal"] == plan["total"] and r["progress"] == pytest.approx(
            min(0.99, r["bytesLoaded"] / plan["total"]))
    assert all(isinstance(r["text"], str) and r["text"] for r in reports)
    served = {s.path for s in mirror.log if s.status == 200 and s.whole}
    assert f"/{REPO}/resolve/main/onnx/model.onnx" in served and f"/{REPO}/resolve/main/config.json" in served
    assert cached["has"] and not cached["other"]
    [entry] = [m for m in cached["list"] if m["model"] == REPO]
    assert {"config.json", "tokenizer.json", "tokenizer_config.json", "onnx/model.onnx"} <= set(entry["files"])
    assert entry["bytes"] >= weights.stat().st_size
    assert not fresh_page.foreign_requests()


def test_the_second_load_needs_no_network_and_deleting_the_cache_undoes_that(fresh_page, repo_folder, torch_greedy):
    mirror = start_mirror(repo_folder)
    hub = mirror.url
    arg = {"repo": REPO, "hub": hub, "messages": MESSAGES, "n": NEW_TOKENS}
    try:
        fresh_page.ok(LOAD + "await engine.unload(); engine.terminate();", arg)
    finally:
        mirror.stop()
    before = len(fresh_page.requests)
    again = fresh_page.ok(LOAD + GREEDY, arg)  # a new worker; the mirror is gone
    assert (again["prompt"], again["ids"]) == torch_greedy
    assert not [u for u in fresh_page.requests[before:] if u.startswith(hub)]  # all from the cache
    gone = fresh_page.call(
        """engine.terminate();
           await webllm.deleteModelAllInfoInCache(arg.repo);
           if (await webllm.hasModelInCache(arg.repo)) return 'still cached';
           const listed = (await webllm.listCachedModels()).map((m) => m.model);
           if (listed.includes(arg.repo)) return 'still listed';
           """ + LOAD, arg)
    assert not gone["ok"] and gone["error"]["name"] == "ModelLoadError" and gone["error"]["param"] == "model"


def test_unload_or_reload_during_a_download_cancels_it(fresh_page, repo_folder):
    size = (repo_folder / "onnx" / "model.onnx").stat().st_size
    mirror = start_mirror(repo_folder, throttle=size / 12)  # the weights take ~12 s
    try:
        out = fresh_page.ok(
            """window.engine = new webllm.WebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}),
                                                          {hubMirror: arg.hub});
               engine = window.engine;
               const weights = () => new Promise((resolve) => engine.setInitProgressCallback(
                 (r) => { if (r.file === 'onnx/model.onnx' && r.loaded > 0) resolve(r.loaded); }));
               const outcome = (p) => p.then(() => 'loaded', (e) => `${e.name}: ${e.message}`);
               // unload() during the download
               let started = weights();
               const first = outcome(engine.reload(arg.repo));
               const loadedThen = await started;
               const t0 = performance.now();
               await engine.unload();
               const unloaded = await first;
               const unloadMs = performance.now() - t0;
               // reload() of another model during the download
               started = weights();
               const second = outcome(engine.reload(arg.repo));
               await started;
               const replaced = await engine.reload('tiny-chat');
               const r = await engine.chat.completions.create({messages: arg.messages, max_tokens: 4});
               return {loadedThen, unloaded, unloadMs, second: await second,
                       models: replaced.models.map((m) => m.model_id), reply: r.choices[0].message.content,
                       cached: await webllm.hasModelInCache(arg.repo)};""",
            {"repo": REPO, "hub": mirror.url, "messages": MESSAGES}, timeout=240_000)
        time.sleep(1.0)  # let the server notice the closed connections
    finally:
        mirror.stop()
    assert out["unloaded"].startswith("ModelLoadError") and out["second"].startswith("ModelLoadError")
    assert out["unloadMs"] < 5_000
    assert out["models"] == ["tiny-chat"] and isinstance(out["reply"], str)
    weights = [s for s in mirror.log if s.path.endswith("/onnx/model.onnx") and s.status == 200]
    assert len(weights) == 2 and not any(s.whole for s in weights)  # both downloads stopped half-way
    assert all(s.sent < size for s in weights)
    assert not out["cached"]


def test_a_file_missing_from_a_failed_load_is_fetched_again_later(fresh_page, repo_folder, tmp_path):
    partial = tmp_path / "partial"
    partial.mkdir()
    for f in repo_folder.iterdir():  # everything but the weights
        if f.is_file():
            (partial / f.name).symlink_to(f)
    mirror = Mirror({REPO: partial}).start()  # a mirror still filling up
    arg = {"repo": REPO, "hub": mirror.url, "messages": MESSAGES, "n": NEW_TOKENS}
    try:
        first = fresh_page.call(LOAD, arg)
        mirror.repos[REPO] = repo_folder  # now it has the weights
        second = fresh_page.ok(LOAD + GREEDY, arg)  # a new worker
    finally:
        mirror.stop()
    assert first["error"]["name"] == "ModelLoadError"
    assert second["ids"] and [s.status for s in mirror.log if s.path.endswith("/onnx/model.onnx")][-1] == 200


def test_a_bad_hub_mirror_is_refused_naming_it(fresh_page):
    out = fresh_page.call(
        "window.engine = await webllm.CreateMLCEngine(arg, {hubMirror: 'ftp://example.com/'});", REPO)
    assert out["error"]["name"] == "InvalidInputError" and out["error"]["param"] == "hub"
