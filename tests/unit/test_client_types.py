"""tsc holds embedders to the page client's types: `chat.completions.create` answers a stream of
chunks for `stream: true` and a whole completion otherwise, so using one as the other fails to
type-check."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.paths import ROOT

PROBE = """// @ts-check
import { WebWorkerEngine } from "%s";
/** @param {WebWorkerEngine} engine @param {boolean} flag */
export async function probe(engine, flag) {
  const whole = await engine.chat.completions.create({ messages: [], stream: false });
  /** @type {string|null} */
  const text = whole.choices[0].message.content;
  const plain = await engine.chat.completions.create({ messages: [] });
  plain.choices[0].message.role;
  const chunks = await engine.chat.completions.create({ messages: [], stream: true });
  for await (const c of chunks) c.choices[0].delta.content;
  // @ts-expect-error a stream of chunks has no choices
  chunks.choices;
  const either = await engine.chat.completions.create({ messages: [], stream: flag });
  // @ts-expect-error with a stream flag unknown until run time, the reply may be a stream
  either.choices;
  // @ts-expect-error a request has messages
  await engine.chat.completions.create({ stream: false });
  return text;
}
"""


def test_chat_completions_create_has_a_type_per_stream_flag(tmp_path: Path) -> None:
    (tmp_path / "probe.js").write_text(PROBE % (ROOT / "web" / "engine.js").as_posix())
    config = json.loads((ROOT / "web" / "jsconfig.json").read_text())
    config["compilerOptions"] |= {"noImplicitAny": True}
    config["include"] = ["probe.js"]
    (tmp_path / "jsconfig.json").write_text(json.dumps(config))
    tsc = ROOT / "node_modules" / ".bin" / "tsc"
    out = subprocess.run([str(tsc), "-p", str(tmp_path / "jsconfig.json")], capture_output=True, text=True,
                         timeout=600)
    # an unused @ts-expect-error is an error too: each line above must fail, the rest pass
    errors = [line for line in out.stdout.splitlines() if "probe.js" in line]
    assert out.returncode == 0 and not errors, out.stdout + out.stderr
