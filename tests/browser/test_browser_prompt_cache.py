"""Prompt caches kept beyond the page (worker/prompt_cache.js, OPFS): after a reload, or in another
tab, a prompt that begins as an earlier one did starts from that one's kept KV cache (its tokens
counted as cached) and the reply is the one the page gave without it; an entry of another model
file, or whose payload was cut short, is never used; the budget evicts the least recently used."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    LOCAL_PREFIXES,
    EnginePage,
    boot_engine,
    open_engine_page,
    tracked_context,
)

pytestmark = pytest.mark.browser
MODEL = "tiny-chat"
SYSTEM = ("You are the help desk of a small library. Opening hours are nine to five on weekdays, ten to two "
          "on Saturdays; closed on Sundays. Books are lent for three weeks and may be renewed twice. ")
MESSAGES = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "When can I come on Saturday?"}]


@pytest.fixture()
def page(browser: Any, site_url: str) -> Iterator[EnginePage]:
    ep = open_engine_page(browser, site_url, [MODEL], "wasm")
    ep.ok("await engine.cache.clear(); return await engine.cache.configure({min_tokens: 8, budget_bytes: 2 ** 29});")
    yield ep
    ep.page.context.close()


def ask(ep: EnginePage, messages: list[dict[str, str]]) -> dict[str, Any]:
    return ep.ok("return await engine.chat.completions.create(arg);",
                 {"messages": messages, "max_tokens": 24, "temperature": 0, "return_token_ids": True,
                  "ignore_eos": True}, timeout=300_000)


def reload(ep: EnginePage, site_url: str) -> None:
    """A new visit: the page and its worker made anew (the in-memory cache gone), settings as before."""
    boot_engine(ep.page, site_url, [MODEL])
    ep.ok("return await engine.cache.configure({min_tokens: 8, budget_bytes: 2 ** 29});")


def entries(ep: EnginePage) -> list[dict[str, Any]]:
    """The kept caches (the list waits for the writes under way)."""
    return ep.ok("return await engine.cache.list();")


def test_after_a_reload_the_kept_cache_serves_the_prompt_and_the_reply_is_the_same(page: EnginePage,
                                                                                 site_url: str) -> None:
    first = ask(page, MESSAGES)
    assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    kept = entries(page)
    held = first["usage"]["prompt_tokens"] + first["usage"]["completion_tokens"] - 1  # the last token never ran
    assert [(e["model"], e["tokens"]) for e in kept] == [(MODEL, held)]
    assert kept[0]["bytes"] > 0

    reload(page, site_url)
    again = ask(page, MESSAGES)
    restored = again["usage"]["extra"]["prompt_cache_tokens"]
    assert restored == first["usage"]["prompt_tokens"] - 1  # all of the prompt but its last token
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] == restored
    assert again["choices"][0]["token_ids"] == first["choices"][0]["token_ids"]

    # the conversation goes on after another reload: its whole first turn comes from the kept cache
    follow = [*MESSAGES, {"role": "assistant", "content": first["choices"][0]["message"]["content"]},
              {"role": "user", "content": "And on Sunday?"}]
    reload(page, site_url)
    turn = ask(page, follow)
    assert turn["usage"]["extra"]["prompt_cache_tokens"] > restored
    reload(page, site_url)
    page.ok("await engine.cache.configure({enabled: false});")
    plain = ask(page, follow)
    assert "prompt_cache_tokens" not in plain["usage"]["extra"]
    assert plain["choices"][0]["token_ids"] == turn["choices"][0]["token_ids"]


CUT_PAYLOAD = """async () => {
  const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('csi-prompt-cache');
  for await (const [name, handle] of dir.entries()) {
    if (!name.endsWith('.kv')) continue;
    const out = await handle.createWritable({keepExistingData: true});
    await out.truncate((await handle.getFile()).size - 4096);
    await out.close();
  }
}"""


def test_a_payload_cut_short_is_never_used_and_goes(page: EnginePage, site_url: str) -> None:
    first = ask(page, MESSAGES)
    assert len(entries(page)) == 1
    page.page.evaluate(CUT_PAYLOAD)
    reload(page, site_url)
    again = ask(page, MESSAGES)
    assert "prompt_cache_tokens" not in again["usage"]["extra"]
    assert again["choices"][0]["token_ids"] == first["choices"][0]["token_ids"]
    # the request kept its own cache anew in place of the broken one
    assert [e["tokens"] for e in entries(page)] == [sum(first["usage"][k] for k in ("prompt_tokens",
                                                                                    "completion_tokens")) - 1]


def test_an_entry_of_another_model_file_is_never_used(page: EnginePage, site_url: str) -> None:
    """The site rebuilt with another tiny-chat (models.json gives its files another hash): the caches
    the old one kept are not read."""
    first = ask(page, MESSAGES)
    [old] = entries(page)  # written (a reload during the write leaves a half-written entry, never used)

    def rebuilt(route: Any) -> None:
        listing = route.fetch().json()
        for m in listing["models"]:
            if m["id"] == MODEL:
                m["sha256"] = "0" * 64
        route.fulfill(json=listing)

    page.page.context.route("**/models/models.json", rebuilt)
    reload(page, site_url)
    again = ask(page, MESSAGES)
    assert "prompt_cache_tokens" not in again["usage"]["extra"]
    assert again["choices"][0]["token_ids"] == first["choices"][0]["token_ids"]
    kept = {e["id"]: e for e in entries(page)}
    assert len(kept) == 2 and kept[old["id"]]["last_used"] == old["last_used"]  # filed apart; the old one unread


def test_the_budget_keeps_the_most_recently_used(page: EnginePage) -> None:
    ask(page, MESSAGES)
    [one] = entries(page)
    page.ok("await engine.cache.configure(arg);", {"budget_bytes": int(one["bytes"] * 1.5)})
    other = [{"role": "system", "content": "You answer in one word. " * 8}, {"role": "user", "content": "Hello?"}]
    ask(page, other)
    kept = entries(page)
    assert len(kept) == 1 and kept[0]["id"] != one["id"]
    assert page.ok("return await engine.cache.delete([arg]);", kept[0]["id"]) == {"deleted": 1}
    assert entries(page) == []


def test_another_tab_starts_from_the_cache_this_one_kept(page: EnginePage, site_url: str) -> None:
    first = ask(page, MESSAGES)
    assert len(entries(page)) == 1
    other = EnginePage(page.page.context.new_page(), page.requests)
    other.page.set_default_timeout(300_000)
    boot_engine(other.page, site_url, [MODEL])
    again = ask(other, MESSAGES)
    assert again["usage"]["extra"]["prompt_cache_tokens"] == first["usage"]["prompt_tokens"] - 1
    assert again["choices"][0]["token_ids"] == first["choices"][0]["token_ids"]
    assert page.foreign_requests() == []


@pytest.mark.webgpu
def test_on_webgpu_the_cache_read_back_from_the_gpu_serves_the_next_visit(playwright: Any, site_url: str) -> None:
    gpu = playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--enable-unsafe-webgpu"])
    ep = open_engine_page(gpu, site_url, [MODEL], "webgpu")
    try:
        ep.ok("await engine.cache.clear(); await engine.cache.configure({min_tokens: 8});")
        first = ask(ep, MESSAGES)
        assert [e["tokens"] for e in entries(ep)] == [first["usage"]["total_tokens"] - 1]
        boot_engine(ep.page, site_url, [MODEL], "webgpu")
        again = ask(ep, MESSAGES)
        assert again["usage"]["extra"]["prompt_cache_tokens"] == first["usage"]["prompt_tokens"] - 1
        assert again["choices"][0]["token_ids"] == first["choices"][0]["token_ids"]
    finally:
        gpu.close()


KEPT = """async () => {
  const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('csi-prompt-cache', {create: true});
  for await (const name of dir.keys()) if (name.endsWith('.json')) return true;
  return false;
}"""


def test_a_playground_conversation_goes_on_after_a_reload_from_its_kept_cache(browser: Any, site_url: str) -> None:
    """A person chats with the real model, reloads the page, and asks again in the same conversation:
    the reply's line says its prompt came from the cache kept before the reload."""
    context, requests = tracked_context(browser)
    page = context.new_page()
    page.set_default_timeout(300_000)
    try:
        url = site_url + "index.html?model=smollm2-135m-instruct&max_tokens=48&temperature=0"
        page.goto(url)
        page.wait_for_selector("body[data-ready='true']")
        page.fill("#prompt", "Give me three tips for keeping a small garden healthy in summer.")
        page.click("#send")
        first = page.wait_for_selector(".message.assistant[data-done='true']")
        assert "kept from an earlier visit" not in first.query_selector(".meta").inner_text()
        page.wait_for_function(KEPT)  # written in the background: a reload sooner would leave nothing kept
        page.reload()
        page.wait_for_selector("body[data-ready='true']")
        page.wait_for_selector(".message.assistant[data-done='true']")  # the conversation, from storage
        page.fill("#prompt", "And in winter?")
        page.click("#send")
        page.wait_for_selector(".message.assistant[data-done='true'] >> nth=1")
        meta = page.locator(".message.assistant[data-done='true']").nth(1).locator(".meta").inner_text()
        cached = int(re.search(r"\((\d+) cached, kept from an earlier visit\)", meta).group(1))  # type: ignore[union-attr]
        assert cached > 40, meta
        assert [u for u in requests if not u.startswith(LOCAL_PREFIXES)] == []
    finally:
        context.close()


PROMPT_API = """async ([system, question]) => {
  const { LanguageModel } = await import('/web/prompt_api.js');
  LanguageModel.configure({engine: window.engine, model: 'tiny-chat', maxTokens: 24});
  const session = await LanguageModel.create({samplingMode: 'most-predictable',
                                              initialPrompts: [{role: 'system', content: system}]});
  return await session.prompt(question);
}"""


def test_a_prompt_api_session_made_anew_after_a_reload_reads_the_kept_cache(page: EnginePage, site_url: str) -> None:
    """Chrome's Prompt API keeps no session across page loads; a page that makes the same session
    again (its initial prompts) finds the cache the last visit kept, and gets the same answer."""
    question = "When can I come on Saturday?"
    first = page.page.evaluate(PROMPT_API, [SYSTEM, question])
    before = {e["id"]: e["last_used"] for e in entries(page)}
    assert before
    reload(page, site_url)
    again = page.page.evaluate(PROMPT_API, [SYSTEM, question])
    assert again == first
    # a cache the last visit kept was read for this session (reading one marks it used)
    assert any(e["id"] in before and e["last_used"] > before[e["id"]] for e in entries(page))
