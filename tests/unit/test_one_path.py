"""One generation path, read from the code: no module outside the runners asks where a model runs,
and the pieces the server path used to repeat exist once (a finish map, a usage counter, a stream
collector, a per-choice request loop)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support.paths import ROOT

PACKAGE = ROOT / "py" / "csi"


def sources() -> dict[str, str]:
    return {str(p.relative_to(PACKAGE)): p.read_text() for p in sorted(PACKAGE.rglob("*.py"))}


def where(pattern: str) -> list[str]:
    return [name for name, text in sources().items() if re.search(pattern, text)]


def test_only_the_placement_decides_where_a_model_runs() -> None:
    # ModelInfo.remote (the server's URL, sent to the page) is read by the server runner alone, to
    # check that its server is still the one configured
    assert where(r"\.remote\b(?!_)") == ["servers/runner.py"]
    assert where(r"\.policy ==") == ["servers/placement.py"]
    assert where(r"ServerRunner\(") == ["servers/placement.py"]
    # (that the core imports no server code is test_layout's ALLOWED table)


def test_one_finish_map_one_usage_counter_one_collector_one_choice_loop() -> None:
    finish_maps = []
    for name, text in sources().items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Dict) and {"stop", "length"} <= {
                    k.value for k in node.keys if isinstance(k, ast.Constant)}:
                finish_maps.append(name)
    assert finish_maps == ["servers/events.py"]
    assert where(r"def usage\(stats") == ["faces/openai/serving.py"]
    assert where(r"async def collect\(") == ["core/generation.py"]
    assert where(r"seed \+ ") == ["servers/runner.py"]
    assert where(r"for index in range\(n\)|for index, body in enumerate") == ["core/local_runner.py",
                                                                             "servers/events.py"]


def test_the_engine_stays_small_and_keeps_no_scheduling_state() -> None:
    engine = (PACKAGE / "core" / "engine.py").read_text()
    assert len(engine.splitlines()) <= 250
    assert not re.search(r"\.(_locks|_wakers|_holders|_aborted|_interrupt_epoch)\b", engine)
    assert Path(PACKAGE / "core" / "scheduler.py").exists()
