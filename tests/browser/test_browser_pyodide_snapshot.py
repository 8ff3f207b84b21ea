"""Python from a memory snapshot (worker/pyodide_boot.js): the first engine of a browser profile boots
Python as usual and keeps a snapshot; the next one restores it and answers as the first did. An
entry that is not whole, or not a snapshot, is never restored (Python boots as usual, and keeps a
good one); the entry's name changes with any of Pyodide's files and with where they are served."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS
from tests.support.prompts import PROMPTS
from tests.support.reference import hf_greedy_ids

pytestmark = pytest.mark.browser

TOKENS = 6
CACHE = "csi-pyodide-snapshot"

ENGINE = """
async ([messages, tokens]) => {
  const { CreateWebWorkerEngine } = await import('/web/engine.js');
  const engine = await CreateWebWorkerEngine(new Worker('/worker/worker.js', {type: 'module'}), 'tiny-chat',
                                             {device: 'wasm'});
  const r = await engine.chat.completions.create({messages, max_tokens: tokens, temperature: 0,
                                                  return_token_ids: true});
  const boot = await engine.send('boot_timings');
  engine.terminate();
  return {boot, ids: r.choices[0].token_ids};
}
"""

# the snapshot's entry once it is kept (the worker stores it without waiting): [url, length, header]
ENTRY = """
async (name) => {
  const cache = await caches.open(name);
  for (let i = 0; i < 600; i++) {
    const keys = await cache.keys();
    if (keys.length) {
      const r = await cache.match(keys[0]);
      const n = (await r.arrayBuffer()).byteLength;
      return [keys.map((k) => k.url), n, r.headers.get('x-csi-snapshot-length')];
    }
    await new Promise((ok) => setTimeout(ok, 100));
  }
  return null;
}
"""

# replace the entry's body: "half" keeps its first half under the whole length, "garbage" is as
# long as the snapshot but not one
SPOIL = """
async ([name, how]) => {
  const cache = await caches.open(name);
  const [key] = await cache.keys();
  const bytes = new Uint8Array(await (await cache.match(key)).arrayBuffer());
  const body = how === 'half' ? bytes.slice(0, bytes.length >> 1) : new Uint8Array(bytes.length).fill(7);
  await cache.put(key, new Response(body, {headers: {'x-csi-snapshot-length': String(bytes.length)}}));
}
"""

KEYS = """
async () => {
  const { snapshotKey } = await import('/worker/pyodide_boot.js');
  const site = new URL('/', location.href);
  const index = new URL('vendor/pyodide/', site).href;
  const names = ['pyodide.asm.mjs', 'pyodide.asm.wasm', 'pyodide.mjs', 'python_stdlib.zip', 'pyodide-lock.json'];
  const files = Object.fromEntries(names.map((n) => ['vendor/pyodide/' + n, 'a'.repeat(64)]));
  const base = await snapshotKey(index, site, files);
  const without = {...files, 'vendor/pyodide/python_stdlib.zip': undefined};
  const out = {base, missing: await snapshotKey(index, site, without), changed: []};
  for (const n of names) {
    out.changed.push(await snapshotKey(index, site, {...files, ['vendor/pyodide/' + n]: 'b'.repeat(64)}));
  }
  out.moved = await snapshotKey(new URL('other/vendor/pyodide/', site).href, new URL('other/', site),
                                Object.fromEntries(names.map((n) => ['vendor/pyodide/' + n, 'a'.repeat(64)])));
  return out;
}
"""


@pytest.fixture()
def page(playwright: Any, site_url: str) -> Any:
    """A page in a profile of its own (its Cache Storage starts empty)."""
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    p = browser.new_page()
    p.set_default_timeout(300_000)
    p.goto(site_url + "web/engine.js")
    yield p
    browser.close()


def test_the_second_engine_restores_the_snapshot_and_answers_as_the_first(page: Any) -> None:
    want = hf_greedy_ids(PROMPTS[0], TOKENS)
    first = page.evaluate(ENGINE, [PROMPTS[0], TOKENS])
    assert first["boot"]["pyodide_snapshot"] == "made" and first["ids"] == want, first
    entry = page.evaluate(ENTRY, CACHE)
    assert entry is not None and len(entry[0]) == 1 and str(entry[1]) == entry[2], entry
    second = page.evaluate(ENGINE, [PROMPTS[0], TOKENS])
    assert second["boot"]["pyodide_snapshot"] == "used" and second["ids"] == want, second


@pytest.mark.parametrize("how", ["half", "garbage"])
def test_an_entry_that_is_not_a_whole_snapshot_is_never_restored(page: Any, how: str) -> None:
    want = hf_greedy_ids(PROMPTS[0], TOKENS)
    assert page.evaluate(ENGINE, [PROMPTS[0], TOKENS])["boot"]["pyodide_snapshot"] == "made"
    good = page.evaluate(ENTRY, CACHE)
    page.evaluate(SPOIL, [CACHE, how])
    again = page.evaluate(ENGINE, [PROMPTS[0], TOKENS])
    assert again["boot"]["pyodide_snapshot"] == "made" and again["ids"] == want, again
    # the spoiled entry replaced by a good one, which the next engine restores
    page.wait_for_function("""async ([name, n]) => {
      const c = await caches.open(name); const [k] = await c.keys();
      return !!k && (await (await c.match(k)).arrayBuffer()).byteLength === n; }""", arg=[CACHE, good[1]])
    last = page.evaluate(ENGINE, [PROMPTS[0], TOKENS])
    assert last["boot"]["pyodide_snapshot"] == "used" and last["ids"] == want, last


def test_the_entry_is_named_by_every_pyodide_file_and_where_it_is_served(page: Any) -> None:
    k = page.evaluate(KEYS)
    assert k["base"] and k["base"].startswith(page.url.split("/web/")[0] + "/vendor/pyodide/"), k
    assert k["missing"] is None, k
    assert len({k["base"], *k["changed"], k["moved"]}) == 2 + len(k["changed"]), k
