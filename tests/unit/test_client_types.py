"""tsc holds embedders to the page client's types: `chat.completions.create` answers a stream of
chunks for `stream: true` and a whole completion otherwise, so using one as the other fails to
type-check; and every page method resolves to a declared type (tests/types/page_probe.js), never `any`."""

from __future__ import annotations

import json
import re
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


PAGE_PROBE = ROOT / "tests" / "types" / "page_probe.js"
LIST_METHODS = """
const m = await import(process.argv[1]);
const engine = new m.WebWorkerEngine(new (class Worker { addEventListener() {} postMessage() {} terminate() {} })());
const names = [];
// the API namespaces are plain objects; the engine's state (its worker, client, ...) are not
const plain = (v) => v !== null && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype;
const walk = (o, path) => {
  for (const [k, v] of Object.entries(o)) {
    if (typeof v === "function") names.push(path + k);
    else if (plain(v)) walk(v, path + k + ".");
  }
};
walk(engine, "");
for (const k of Object.getOwnPropertyNames(m.WebWorkerEngine.prototype)) if (k !== "constructor") names.push(k);
for (const [k, v] of Object.entries(m)) {
  if (typeof v === "function" && k !== "WebWorkerEngine") names.push("export " + k);
}
process.stdout.write(JSON.stringify(names));
"""


def page_methods() -> list[str]:
    """Every method of an engine (its namespaces' too) and every function web/engine.js exports."""
    out = subprocess.run(["node", "--input-type=module", "-e", LIST_METHODS, (ROOT / "web" / "engine.js").as_uri()],
                         capture_output=True, text=True, check=True, timeout=60)
    return json.loads(out.stdout)


def test_the_page_probe_calls_every_page_method() -> None:
    probe = PAGE_PROBE.read_text()
    methods = page_methods()
    assert "skills.run" in methods and "export CreateMLCEngine" in methods and "memoryStats" in methods
    missing = [m for m in methods if not (
        re.search(rf"\b(?:new )?{m.removeprefix('export ')}\(", probe) if m.startswith("export ")
        else re.search(rf"\.{re.escape(m)}\b", probe))]
    assert not missing


def test_every_page_method_resolves_to_a_declared_type() -> None:
    """tests/types/page_probe.js uses each page method's result once as its declared type and once
    wrongly (`@ts-expect-error`): a method whose result is `any` leaves its misuse unreported, and
    an unused `@ts-expect-error` is an error."""
    tsc = ROOT / "node_modules" / ".bin" / "tsc"
    out = subprocess.run([str(tsc), "-p", str(PAGE_PROBE.parent / "jsconfig.json")], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
