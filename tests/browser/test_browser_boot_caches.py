"""What a boot keeps for the next ones: Python's memory as it has just started (worker/pyodide_boot.js)
and the bytecode of the wheels' modules (worker/pyc_cache.js). The first engine of a browser profile
boots as usual and keeps both; the next one restores them and answers as the first did. An entry that
is not whole, or not what it says, is never used (the boot goes as usual, and keeps a good one); a
pyc is used only for its own source, and an entry with pycs of other sources is replaced; the
entries' names change with the Pyodide version, the wheels and where they are served."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS
from tests.support.prompts import PROMPTS
from tests.support.reference import hf_greedy_ids

pytestmark = pytest.mark.browser

TOKENS = 6
CACHE = "csi-pyodide-snapshot"
PYC = "csi-pyc"

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
      return [keys.map((k) => k.url), n, r.headers.get('x-csi-snapshot-length') ?? r.headers.get('x-csi-pyc-length')];
    }
    await new Promise((ok) => setTimeout(ok, 100));
  }
  return null;
}
"""

# replace the entry's body: "half" keeps its first half under the whole length, "garbage" is as
# long as the snapshot but not one
SPOIL = """
async ([name, how, header]) => {
  const cache = await caches.open(name);
  const [key] = await cache.keys();
  const bytes = new Uint8Array(await (await cache.match(key)).arrayBuffer());
  const body = how === 'half' ? bytes.slice(0, bytes.length >> 1) : new Uint8Array(bytes.length).fill(7);
  await cache.put(key, new Response(body, {headers: {[header]: String(bytes.length)}}));
}
"""

# each kept pyc moved to the next file's path (its source hash is another source's): a whole archive
# of pycs none of which is its file's own
ROTATE = """
async (name) => {
  const cache = await caches.open(name);
  const [key] = await cache.keys();
  const bytes = new Uint8Array(await (await cache.match(key)).arrayBuffer());
  const n = new DataView(bytes.buffer).getUint32(0, true);
  const head = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + n)));
  let at = 4 + n;
  const bodies = head.map(([, size]) => bytes.subarray(at, (at += size)));
  const moved = bodies.map((_, i) => bodies[(i + 1) % bodies.length]);
  const newHead = new TextEncoder().encode(JSON.stringify(head.map(([path], i) => [path, moved[i].length])));
  const out = new Uint8Array(4 + newHead.length + moved.reduce((a, b) => a + b.length, 0));
  new DataView(out.buffer).setUint32(0, newHead.length, true);
  out.set(newHead, 4);
  let to = 4 + newHead.length;
  for (const b of moved) { out.set(b, to); to += b.length; }
  await cache.put(key, new Response(out, {headers: {'x-csi-pyc-length': String(out.length)}}));
  return head.length;
}
"""

KEYS = """
async () => {
  const { snapshotKey } = await import('/worker/pyodide_boot.js');
  const { pycKey } = await import('/worker/pyc_cache.js');
  const site = new URL('/', location.href);
  const other = new URL('/other/', location.href);
  const wheels = ['a-1-py3-none-any.whl', 'b-2-py3-none-any.whl'];
  return {
    snapshot: await snapshotKey(new URL('vendor/pyodide/', site).href),
    snapshotMoved: await snapshotKey(new URL('vendor/pyodide/', other).href),
    pyc: await pycKey(site, wheels),
    pycOther: await pycKey(site, ['a-1-py3-none-any.whl', 'b-3-py3-none-any.whl']),
    pycFewer: await pycKey(site, wheels.slice(0, 1)),
    pycMoved: await pycKey(other, wheels),
  };
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
    assert first["boot"]["pyodide_snapshot"] == "made" and first["boot"]["bytecode"] == "made", first
    assert first["ids"] == want, first
    for name in (CACHE, PYC):
        entry = page.evaluate(ENTRY, name)
        assert entry is not None and len(entry[0]) == 1 and str(entry[1]) == entry[2], (name, entry)
    second = page.evaluate(ENGINE, [PROMPTS[0], TOKENS])
    assert second["boot"]["pyodide_snapshot"] == "used" and second["boot"]["bytecode"] == "used", second
    assert second["ids"] == want, second


@pytest.mark.parametrize("how", ["half", "garbage"])
@pytest.mark.parametrize("name", [CACHE, PYC])
def test_an_entry_that_is_not_whole_is_never_used(page: Any, how: str, name: str) -> None:
    want = hf_greedy_ids(PROMPTS[0], TOKENS)
    field, header = ("pyodide_snapshot", "x-csi-snapshot-length") if name == CACHE else ("bytecode", "x-csi-pyc-length")
    assert page.evaluate(ENGINE, [PROMPTS[0], TOKENS])["boot"][field] == "made"
    good = page.evaluate(ENTRY, name)
    page.evaluate(SPOIL, [name, how, header])
    again = page.evaluate(ENGINE, [PROMPTS[0], TOKENS])
    assert again["boot"][field] == "made" and again["ids"] == want, again
    # the spoiled entry replaced by a good one, which the next engine uses
    page.wait_for_function("""async ([name, n]) => {
      const c = await caches.open(name); const [k] = await c.keys();
      return !!k && (await (await c.match(k)).arrayBuffer()).byteLength === n; }""", arg=[name, good[1]])
    last = page.evaluate(ENGINE, [PROMPTS[0], TOKENS])
    assert last["boot"][field] == "used" and last["ids"] == want, last


def test_a_pyc_is_used_only_for_its_own_source_and_a_stale_entry_is_replaced(page: Any) -> None:
    want = hf_greedy_ids(PROMPTS[0], TOKENS)
    assert page.evaluate(ENGINE, [PROMPTS[0], TOKENS])["boot"]["bytecode"] == "made"
    page.evaluate(ENTRY, PYC)
    assert page.evaluate(ROTATE, PYC) > 50  # the wheels' modules the boot imports
    again = page.evaluate(ENGINE, [PROMPTS[0], TOKENS])
    assert again["boot"]["bytecode"] == "used" and again["ids"] == want, again
    # that boot found pycs that are not their sources' and dropped the entry: the next one keeps anew
    fresh = page.evaluate(ENGINE, [PROMPTS[0], TOKENS])
    assert fresh["boot"]["bytecode"] == "made" and fresh["ids"] == want, fresh
    page.evaluate(ENTRY, PYC)
    last = page.evaluate(ENGINE, [PROMPTS[0], TOKENS])
    assert last["boot"]["bytecode"] == "used" and last["ids"] == want, last


def test_the_entries_are_named_by_pyodide_the_wheels_and_where_they_are_served(page: Any) -> None:
    k = page.evaluate(KEYS)
    assert k["snapshot"].startswith(page.url.split("/web/")[0] + "/vendor/pyodide/snapshot-"), k
    assert k["pyc"].startswith(page.url.split("/web/")[0] + "/wheels/pyc-"), k
    assert len({k["snapshot"], k["snapshotMoved"]}) == 2, k
    assert len({k["pyc"], k["pycOther"], k["pycFewer"], k["pycMoved"]}) == 4, k
