"""The page client's load progress (web/client/load_progress.js), run in node: WebLLM's `progress`
is loaded over total bytes of the planned models' files, at most 0.99 until the last model is ready,
and never goes backwards. The expected numbers are worked out by hand from those rules."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.support.paths import ROOT

MB = 1_000_000


def reports(last_model: str, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The report after each event, the load having run 0.5 s more at each one."""
    script = """
      const [, url, last, events] = process.argv;
      import(url).then(({ LoadProgress }) => {
        const progress = new LoadProgress(last);
        const out = JSON.parse(events).map((e, i) => progress.next(e, (i + 1) / 2));
        process.stdout.write(JSON.stringify(out));
      });"""
    module = (ROOT / "web" / "client" / "load_progress.js").as_uri()
    out = subprocess.run(["node", "--input-type=module", "-e", script, module, last_model, json.dumps(events)],
                         capture_output=True, text=True, check=True, timeout=60)
    result: list[dict[str, Any]] = json.loads(out.stdout)
    return result


def event(stage: str, model: str | None, file: str | None = None, loaded: int = 0, total: int = 0,
          **extra: Any) -> dict[str, Any]:
    return {"stage": stage, "file": file, "loaded": loaded, "total": total, "model": model, **extra}


# Two models: "chat" (4 MB planned, then a file its plan did not name) and "embed" (3 MB, one of its
# files starting before its plan came). Each row: the event, then progress, bytesLoaded, bytesTotal.
LOAD: list[tuple[dict[str, Any], float, int, int]] = [
    (event("pyodide", None, total=1), 0, 0, 0),  # nothing planned: no bytes, no progress
    (event("plan", "chat", files={"model.onnx": 3 * MB, "tokenizer.json": 1 * MB}, total=4 * MB), 0, 0, 4 * MB),
    (event("progress", "chat", "model.onnx", 3 * MB // 2, 3 * MB), 0.375, 3 * MB // 2, 4 * MB),  # 1.5 / 4
    # embed's file before embed's plan: not counted yet
    (event("progress", "embed", "e.onnx", MB // 2, 2 * MB), 0.375, 3 * MB // 2, 4 * MB),
    # embed's plan keeps e.onnx's 0.5 MB: 2 / 7 = 0.29 would go backwards, so 0.375 stays
    (event("plan", "embed", files={"e.onnx": 2 * MB, "vocab.txt": 1 * MB}, total=3 * MB), 0.375, 2 * MB, 7 * MB),
    (event("progress", "chat", "model.onnx", 3 * MB, 3 * MB), 0.5, 7 * MB // 2, 7 * MB),  # 3.5 / 7
    (event("progress", "chat", "extra.bin", 1 * MB, 1 * MB), 0.5625, 9 * MB // 2, 8 * MB),  # unplanned: 4.5 / 8
    (event("ready", "chat"), 0.5625, 9 * MB // 2, 8 * MB),  # not the last model: not done
    (event("progress", "embed", "e.onnx", 2 * MB, 2 * MB), 0.75, 6 * MB, 8 * MB),  # 6 / 8
    (event("progress", "embed", "vocab.txt", 1 * MB, 1 * MB), 0.875, 7 * MB, 8 * MB),  # 7 / 8
    (event("progress", "chat", "tokenizer.json", 1 * MB, 1 * MB), 0.99, 8 * MB, 8 * MB),  # 8 / 8, held at 0.99
    (event("ready", "embed"), 1, 8 * MB, 8 * MB),  # the last model is ready
]


def test_progress_counts_planned_files_never_goes_back_and_reaches_one_at_the_last_ready() -> None:
    got = reports("embed", [e for e, *_ in LOAD])
    assert [(r["progress"], r["bytesLoaded"], r["bytesTotal"]) for r in got] == [tuple(row[1:]) for row in LOAD]


def test_a_report_carries_its_event_the_time_and_a_text() -> None:
    got = reports("embed", [e for e, *_ in LOAD])
    assert [r["timeElapsed"] for r in got[:3]] == [0.5, 1.0, 1.5]
    assert {k: got[2][k] for k in ("stage", "file", "loaded", "total", "model")} == LOAD[2][0]
    assert got[1]["files"] == {"model.onnx": 3 * MB, "tokenizer.json": 1 * MB}
    assert [r["text"] for r in got[:3]] == ["pyodide", "plan (chat): 0.0 of 4.0 MB",
                                            "progress model.onnx (chat): 1.5 of 4.0 MB"]
    assert got[7]["text"] == "ready (chat): 4.5 of 8.0 MB"


def test_a_ready_model_that_is_not_the_last_leaves_the_load_below_one() -> None:
    got = reports("b", [event("plan", "a", files={"w": 2 * MB}, total=2 * MB),
                        event("progress", "a", "w", 2 * MB, 2 * MB), event("ready", "a")])
    assert [r["progress"] for r in got] == [0, 0.99, 0.99]
