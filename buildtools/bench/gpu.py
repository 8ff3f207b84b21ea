"""``python3 build.py bench --device webgpu``: Chromium launched so that it can use a hardware GPU
(on Linux through Vulkan), the WebGPU adapter it then offers, and whether that adapter is real
hardware. On a software adapter (SwiftShader, llvmpipe, a fallback adapter) or none, the bench
stops with a message naming the adapter and the flags; on hardware it decodes on WebGPU
(tiny-chat and the real model, against transformers.js) and runs the memory section there."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .memory import Plan

# What lets headless Chromium on Linux reach a GPU: WebGPU on (Linux ships it behind a flag),
# Dawn and ANGLE on Vulkan, no window surface to present to, no blocklisted drivers; developer
# features add the adapter's type, backend and driver to `adapter.info`.
GPU_FLAGS = ["--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-angle=vulkan", "--disable-vulkan-surface",
             "--ignore-gpu-blocklist", "--enable-webgpu-developer-features"]

PROBE_SCRIPT = """
async () => {
  if (!navigator.gpu) return {adapter: null, why: 'navigator.gpu is missing'};
  // as onnxruntime-web asks for one in the worker (no options): what the models will run on
  // a GPU process still starting on a loaded machine can answer null at first: ask a few times
  let adapter = null;
  for (let i = 0; i < 5 && !adapter; i++) {
    if (i) await new Promise((r) => setTimeout(r, 500));
    adapter = await navigator.gpu.requestAdapter();
  }
  if (!adapter) return {adapter: null, why: 'navigator.gpu.requestAdapter() returned null (5 tries, 2 s)'};
  const info = adapter.info ?? {};
  const out = {};
  for (const k of ['vendor', 'architecture', 'device', 'description', 'type', 'backend', 'driver']) {
    if (typeof info[k] === 'string') out[k] = info[k];
  }
  out.is_fallback_adapter = info.isFallbackAdapter ?? adapter.isFallbackAdapter ?? null;
  out.features = [...adapter.features].sort();
  out.max_buffer_size = adapter.limits.maxBufferSize;
  return {adapter: out, why: null};
}
"""

# Software rasterizers that can stand behind a WebGPU adapter (Chromium's, Mesa's, Windows')
SOFTWARE = ("swiftshader", "llvmpipe", "lavapipe", "softpipe", "microsoft basic render")


@dataclass(frozen=True)
class Adapter:
    """The adapter a page got (``info``: its ``adapter.info`` fields, ``None``: no adapter) and
    why it counts as software, if it does."""

    info: dict[str, Any] | None
    software_because: str | None

    @property
    def hardware(self) -> bool:
        return self.software_because is None

    def describe(self) -> str:
        if self.info is None:
            return "no WebGPU adapter"
        i = self.info
        name = " ".join(str(i.get(k) or "") for k in ("vendor", "architecture")).strip() or "an unnamed adapter"
        more = [f"{k} {i[k]}" for k in ("description", "type", "backend", "driver") if i.get(k)]
        if i.get("is_fallback_adapter"):
            more.append("fallback adapter")
        return name + (f" ({', '.join(more)})" if more else "")


def classify(info: dict[str, Any] | None, why_none: str | None = None) -> Adapter:
    """Whether an adapter (the probe's ``adapter`` dict, ``None`` for no adapter) is software."""
    if info is None:
        return Adapter(None, why_none or "the browser offered no WebGPU adapter")
    if info.get("is_fallback_adapter"):
        return Adapter(info, "it is a fallback adapter (isFallbackAdapter)")
    if str(info.get("type", "")).upper() == "CPU":
        return Adapter(info, "its type is CPU")
    text = " ".join(str(info.get(k) or "") for k in ("vendor", "architecture", "device", "description",
                                                     "driver")).lower()
    for name in SOFTWARE:
        if name in text:
            return Adapter(info, f"it is {name} (a software rasterizer)")
    return Adapter(info, None)


def probe(page: Any) -> Adapter:
    """The adapter a page of the launched browser gets."""
    raw = page.evaluate(PROBE_SCRIPT)
    return classify(raw["adapter"], raw["why"])


def refusal(adapter: Adapter, flags: list[str]) -> str:
    """What `bench --device webgpu` says when the adapter is not hardware."""
    return (f"bench --device webgpu: Chromium offered {adapter.describe()}, which is not a hardware GPU: "
            f"{adapter.software_because}. Flags used: {' '.join(flags)}. On a machine with a GPU, check its "
            "Vulkan driver (vulkaninfo) and chrome://gpu; `--device wasm` (the default) measures without one.")


WEBGPU_SECTIONS = ("decode", "memory")
# (model, tokens generated, rounds): the table, on the GPU
WEBGPU_SHAPES = [("tiny-chat", 128, 5), ("smollm2-135m-instruct", 64, 3)]
WEBGPU_MEMORY_PLAN = Plan(generations=100, every=10, cycles=10, switches=4)


def run_webgpu_bench(dist: Path, args: list[str], chromium: str, only: list[str] | None = None) -> int:
    """The bench on a hardware WebGPU adapter, or exit status 1 (with the reason on stderr) without one."""
    from playwright.sync_api import sync_playwright

    from ..site.serve import serve_in_thread
    from .decode import decode_bench
    from .memory import memory_run

    unknown = sorted(set(only or []) - set(WEBGPU_SECTIONS))
    if unknown:
        print(f"bench --device webgpu runs the sections {list(WEBGPU_SECTIONS)}, not {unknown}", file=sys.stderr)
        return 2
    wanted = set(only or WEBGPU_SECTIONS)
    flags = [*args, *GPU_FLAGS, "--enable-blink-features=ForceEagerMeasureMemory"]  # the last: memory.py's
    server, url = serve_in_thread(dist)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=flags)
            try:
                page = browser.new_page()
                page.goto(url + "web/engine.js")
                adapter = probe(page)
                page.close()
                print(f"[bench] WebGPU adapter: {adapter.describe()}", file=sys.stderr, flush=True)
                if not adapter.hardware:
                    print(refusal(adapter, flags), file=sys.stderr)
                    return 1
                result: dict[str, Any] = {"device": "webgpu", "adapter": adapter.info, "flags": flags}

                def page_of() -> Any:
                    pg = browser.new_page()
                    pg.set_default_timeout(1_800_000)
                    pg.goto(url + "web/engine.js")
                    return pg

                if "decode" in wanted:
                    result["decode_webgpu"] = []
                    for model, tokens, rounds in WEBGPU_SHAPES:
                        print(f"[bench] decoding on {model} (WebGPU)", file=sys.stderr, flush=True)
                        pg = page_of()
                        result["decode_webgpu"].append(decode_bench(pg, model, "webgpu", None, tokens, rounds,
                                                                    prefill_repeats=65 if "smollm2" in model else 0))
                        pg.close()
                if "memory" in wanted:
                    print("[bench] memory on WebGPU", file=sys.stderr, flush=True)
                    pg = page_of()
                    result["memory_webgpu"] = memory_run(pg, "webgpu", WEBGPU_MEMORY_PLAN)
                    pg.close()
                print(json.dumps(result, indent=2))
                return 0
            finally:
                browser.close()
    finally:
        server.shutdown()
