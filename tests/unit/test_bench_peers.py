"""The `peers` bench section's wiring: a section of `build.py bench`, the wllama files its page
imports installed where it links them from, and its figures and ratios made from the visits."""

from __future__ import annotations

from typing import Any

import pytest

from buildtools.bench.peers import SCRIPT, SIDES, WLLAMA, summarize
from buildtools.bench.run import SECTIONS


def test_peers_is_a_section_and_the_wllama_files_it_serves_are_installed():
    assert "peers" in SECTIONS
    assert "/peers/wllama.js" in SCRIPT and "/peers/wllama.wasm" in SCRIPT
    assert (WLLAMA / "index.js").is_file() and (WLLAMA / "wasm" / "wllama.wasm").is_file()


def _visit(scale: float, wllama: bool, work: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"ready_s": 2 * scale, "first_token_s": 3 * scale, "peak_browser_rss_mb": 1000 * scale,
                           "info": {"threads": 1} if wllama else {}}
    if work:
        run = {"tokens": 64, "prompt_tokens": 40, "first_token_s": 0.1, "decode_tokens_per_s": 10 / scale}
        if wllama:
            run["own_decode_tokens_per_s"] = 11 / scale
        out["decode"] = [run, run | {"decode_tokens_per_s": 1.0}, run]
        out["prefill"] = {"tokens": 1, "prompt_tokens": 517, "first_token_s": 5 * scale}
    return out


def test_the_figures_are_medians_and_the_ratios_csi_webs_over_wllamas():
    scales = {"csi_web": 1.0, "csi_web_gguf": 1.0, "wllama_1_thread": 2.0, "wllama_all_threads": 4.0}
    visits = {name: [{"first": _visit(s, name.startswith("wllama"), False),
                      "cached": _visit(s, name.startswith("wllama"), True)} for _ in range(2)]
              for name, s in scales.items()}
    assert set(visits) == set(SIDES)
    out = summarize(visits, 2)
    ours, theirs = out["sides"]["csi_web"], out["sides"]["wllama_1_thread"]
    assert ours["decode_tokens_per_s"] == 10 and ours["prefill_first_token_s"] == 5
    assert ours["load_cached_s"] == 2 and ours["peak_browser_rss_mb"] == 1000
    assert "own_timings_decode_tokens_per_s" not in ours and theirs["own_timings_decode_tokens_per_s"] == 5.5
    ratios = out["ratios_csi_web_figure_over_wllama_figure"]
    assert set(ratios) == {f"{a}_to_{b}" for a in ("csi_web", "csi_web_gguf")
                           for b in ("wllama_1_thread", "wllama_all_threads")}
    assert ratios["csi_web_to_wllama_all_threads"]["decode_tokens_per_s"] == pytest.approx(4)
    assert ratios["csi_web_to_wllama_1_thread"]["prefill_first_token_s"] == pytest.approx(0.5)
