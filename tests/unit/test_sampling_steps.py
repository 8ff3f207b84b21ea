"""Sampling is written twice, once per side of the FFI (worker/sampling/ for the browser,
csi.backends.cpython for CPython): both name the same steps, in the same order."""

from __future__ import annotations

import json
import re
import subprocess

from csi.backends.cpython.sampling import SAMPLING_STEPS, STEPS
from tests.support.paths import ROOT


def js_steps() -> list[str]:
    script = "import(process.argv[1]).then((m) => process.stdout.write(JSON.stringify(m.SAMPLING_STEPS)))"
    out = subprocess.run(["node", "--input-type=module", "-e", script, str(ROOT / "worker" / "sampling" / "steps.js")],
                         capture_output=True, text=True, check=True, timeout=60)
    return json.loads(out.stdout)


def test_both_languages_run_the_same_sampling_steps_in_the_same_order() -> None:
    snake = [re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower() for name in js_steps()]
    assert snake == list(SAMPLING_STEPS) == list(STEPS)
    assert SAMPLING_STEPS[0] == "mask_grammar" and SAMPLING_STEPS[-1] == "logprobs"
