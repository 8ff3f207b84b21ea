"""Replies as Markdown (web/render/markdown.js) and tokens by probability (web/render/token_view.js),
in the real page: GitHub-flavored Markdown as its spec shows it, hostile input that runs and loads
nothing, streaming that never rebuilds finished blocks."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import LOCAL_PREFIXES
from tests.support.paths import ROOT

pytestmark = pytest.mark.browser

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
RENDER = """async ([markdown]) => {
  const { renderMarkdown } = await import('/web/render/markdown.js');
  const box = document.createElement('div');
  box.id = 'md-' + Math.random().toString(36).slice(2);
  document.querySelector('#messages').append(box);
  renderMarkdown(box, markdown);
  return box.id;
}"""


class Page:
    def __init__(self, browser: Any, site_url: str, scheme: str = "light") -> None:
        self.context = browser.new_context(color_scheme=scheme, permissions=["clipboard-read", "clipboard-write"])
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.context.on("request", lambda r: self.requests.append(r.url))
        self.page = self.context.new_page()
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.goto(site_url + "index.html?model=tiny-chat")
        self.page.wait_for_selector("body[data-ready='true']", timeout=180_000)

    def render(self, markdown: str) -> Any:
        box = self.page.evaluate(RENDER, [markdown])
        return self.page.locator(f"#{box}")


@pytest.fixture
def md(browser: Any, site_url: str) -> Iterator[Page]:
    p = Page(browser, site_url)
    yield p
    p.context.close()


def test_github_flavored_markdown_renders_as_its_spec_shows(md: Page) -> None:
    # expected structures from the GFM spec's own examples (tables 198, task lists 279, strikethrough
    # 491, extended autolinks 621, fenced code 119), written by hand
    box = md.render("| foo | bar |\n| --- | :-: |\n| baz | bim |")
    assert box.locator("table thead th").all_inner_texts() == ["foo", "bar"]
    assert box.locator("table tbody td").all_inner_texts() == ["baz", "bim"]
    assert box.locator("th").nth(1).get_attribute("align") == "center"

    box = md.render("- [ ] foo\n- [x] bar")
    assert box.locator("ul > li").count() == 2
    assert box.locator(".md-task").all_inner_texts() == ["☐", "☑"]
    assert box.locator("input").count() == 0

    box = md.render("~~Hi~~ Hello, world!")
    assert box.locator("del").inner_text() == "Hi"

    box = md.render("Visit www.commonmark.org/help for more information, or https://example.com.")
    hrefs = box.locator("a").evaluate_all("(as) => as.map((a) => [a.getAttribute('href'), a.rel, a.target])")
    assert [h[0] for h in hrefs] == ["http://www.commonmark.org/help", "https://example.com"]
    assert all(h[1] == "noopener noreferrer nofollow" and h[2] == "_blank" for h in hrefs)

    box = md.render("```python\ndef f(x):\n    return x  # one\n```")
    code = box.locator("pre code.language-python")
    assert code.text_content() == "def f(x):\n    return x  # one"
    assert box.locator(".hljs-keyword").all_inner_texts() == ["def", "return"]
    assert box.locator(".hljs-comment").inner_text() == "# one"
    assert box.locator("pre button.md-copy").count() == 1

    box = md.render("1. one\n   - nested\n2. two\n\n> # Foo\n> bar")
    assert box.locator("ol > li").count() == 2
    assert box.locator("ol > li > ul > li").inner_text() == "nested"
    assert box.locator("blockquote h1").inner_text() == "Foo"


HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=http://127.0.0.1:9/raw.png onerror=alert(2)>",
    "![pixel](http://127.0.0.1:9/md.png)",
    '![pixel][ref]\n\n[ref]: http://127.0.0.1:9/ref.png "t"',
    "[click](javascript:alert(3))",
    "[click](JaVaScRiPt:alert(4))",
    "[click](&#106;avascript:alert(5))",
    "[click](vbscript:msgbox(6))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCg3KTwvc2NyaXB0Pg==)",
    "[proto](//127.0.0.1:9/evil)",
    "<a href='javascript:alert(8)'>x</a>",
    "<iframe src=http://127.0.0.1:9/frame></iframe>",
    "<svg onload=alert(9)><circle r=1></svg>",
    "<style>@import 'http://127.0.0.1:9/style.css'; body{background:url(http://127.0.0.1:9/bg.png)}</style>",
    "<div style=\"background:url('http://127.0.0.1:9/div.png')\">styled</div>",
    "<form action=http://127.0.0.1:9/f><button>go</button></form>",
    "<meta http-equiv=refresh content='0;url=http://127.0.0.1:9/meta'>",
    "<base href=http://127.0.0.1:9/>",
    "<link rel=stylesheet href=http://127.0.0.1:9/link.css>",
    "<object data=http://127.0.0.1:9/obj></object><embed src=http://127.0.0.1:9/emb>",
    "<video poster=http://127.0.0.1:9/poster.png><source src=http://127.0.0.1:9/v.mp4></video>",
    "<img srcset='http://127.0.0.1:9/set.png 2x'>",
    "<noscript><p title=\"</noscript><img src=x onerror=alert(10)>\">",  # DOMPurify's mXSS classics
    "<svg><p><style><img src=x onerror=alert(11)></style></p></svg>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(12)>",
    "`<img src=x onerror=alert(13)>` and\n\n```html\n<script>alert(14)</script>\n```",
    "| a | b |\n|---|---|\n| <img src=http://127.0.0.1:9/cell.png onerror=alert(15)> | <script>alert(16)</script> |",
    "<details open ontoggle=alert(17)><summary>x</summary></details>",
    "<a href=\"https://example.com\" onclick=\"alert(18)\">raw link</a>",
    "[fine link](https://example.com '\" onclick=\"alert(19)')",
]


def test_hostile_markdown_runs_nothing_and_loads_nothing(md: Page) -> None:
    md.render("the modules are loaded")
    before = len(md.requests)
    boxes = [md.render(text) for text in HOSTILE]
    md.page.wait_for_timeout(1000)  # anything lazily loaded has been asked for by now
    assert md.dialogs == []
    assert md.requests[before:] == [], "rendering made requests"
    for box, text in zip(boxes, HOSTILE, strict=True):
        found = box.evaluate("""(b) => ({
            tags: [...b.querySelectorAll('script,iframe,img,style,object,embed,svg,math,form,base,meta,link,video,'
                                         + 'audio,source,input,details,noscript')].map((e) => e.tagName),
            handlers: [...b.querySelectorAll('*')].flatMap((e) => [...e.attributes].map((a) => a.name))
                        .filter((n) => n.startsWith('on') || n === 'style' || n === 'srcset'),
            hrefs: [...b.querySelectorAll('[href]')].map((a) => a.getAttribute('href')),
            src: [...b.querySelectorAll('[src],[data],[action],[poster]')].length,
        })""")
        assert found["tags"] == [] and found["handlers"] == [] and found["src"] == 0, text
        assert all(h.startswith(("http://", "https://", "mailto:", "#")) for h in found["hrefs"]), text
        assert not any(h.startswith("//") for h in found["hrefs"]), text
    # what was hostile markup is still there to read, as text
    assert "<script>alert(1)</script>" in boxes[0].inner_text()
    assert "[image: pixel (http://127.0.0.1:9/md.png)]" in boxes[2].inner_text()
    assert "raw link</a>" in boxes[-2].inner_text()  # raw HTML is text, a Markdown link is a link
    assert boxes[-1].locator("a").get_attribute("href") == "https://example.com"
    assert [u for u in md.requests if not u.startswith(LOCAL_PREFIXES)] == []


STREAMED = """# A reply

The first paragraph is finished early, and must not be rebuilt while the rest streams in.

| col | value |
|-----|-------|
| a   | 1     |

```python
for i in range(3):
    print(i)
```

- one
- two **bold** and `code`
"""


def test_streaming_rebuilds_only_what_changed_and_ends_as_a_one_shot_render(md: Page) -> None:
    out = md.page.evaluate("""async (text) => {
        const { renderMarkdown } = await import('/web/render/markdown.js');
        const box = document.createElement('div');
        document.querySelector('#messages').append(box);
        const frame = () => new Promise(requestAnimationFrame);
        let first = null, rebuilt = 0, sawPlain = false;
        for (let n = 1; n <= text.length; n += 5) {
          renderMarkdown(box, text.slice(0, n), { streaming: true });
          if (n % 15 === 1) await frame();
          const p = box.querySelector('p');
          if (p && text.slice(0, n).includes('streams in.\\n\\n|')) {
            if (first === null) first = p; else if (first !== p) rebuilt++;
          }
          // an open code fence is shown, not yet highlighted
          if (box.querySelector('pre code') && !box.querySelector('pre code .hljs-keyword')) sawPlain = true;
        }
        renderMarkdown(box, text);
        const once = document.createElement('div');
        renderMarkdown(once, text);
        return { same: box.innerHTML === once.innerHTML, kept: first !== null && box.querySelector('p') === first,
                 rebuilt, sawPlain, highlighted: box.querySelectorAll('.hljs-keyword').length };
    }""", STREAMED)
    assert out == {"same": True, "kept": True, "rebuilt": 0, "sawPlain": True, "highlighted": 2}


def test_the_copy_button_copies_the_code(md: Page) -> None:
    box = md.render("Run:\n\n```sh\npython3 build.py serve\n```")
    box.locator("button.md-copy").click()
    assert md.page.evaluate("navigator.clipboard.readText()") == "python3 build.py serve"
    md.page.wait_for_function(f"document.querySelector('#{box.get_attribute('id')} .md-copy').textContent === 'Copied'")


LOGPROBS = [
    {"token": "The", "logprob": math.log(0.99),
     "top_logprobs": [{"token": "The", "logprob": math.log(0.99)}, {"token": "A", "logprob": math.log(0.005)}]},
    {"token": " cat", "logprob": math.log(0.2),
     "top_logprobs": [{"token": " dog", "logprob": math.log(0.5)}, {"token": " cat", "logprob": math.log(0.2)},
                      {"token": " <img src=x onerror=alert(1)>", "logprob": math.log(0.1)}]},
    {"token": "\n", "logprob": math.log(0.7), "top_logprobs": [{"token": "\n", "logprob": math.log(0.7)}]},
]


def test_the_token_view_tints_by_probability_and_shows_the_alternatives(md: Page) -> None:
    md.page.evaluate("""async (content) => {
        const { renderTokenView } = await import('/web/render/token_view.js');
        const box = document.createElement('div');
        box.id = 'tv';
        document.querySelector('#messages').append(box);
        renderTokenView(box, content);
    }""", LOGPROBS)
    tokens = md.page.locator("#tv .tv-token")
    assert tokens.count() == 3
    assert md.page.locator("#tv .tv-tokens").text_content() == "The cat↵\n"
    colors = [tokens.nth(i).evaluate("(e) => getComputedStyle(e).backgroundColor") for i in range(2)]
    assert colors[0] != colors[1]
    tokens.nth(1).hover()
    tip = md.page.locator("#tv .tv-tooltip")
    assert tip.is_visible()
    assert tip.locator("li").all_inner_texts() == ['" dog" 50.0 %', '" cat" 20.0 %',
                                                  '" <img src=x onerror=alert(1)>" 10.0 %']
    assert tip.locator(".tv-chosen").inner_text() == '" cat" 20.0 %'
    assert md.page.locator("#tv img").count() == 0 and md.dialogs == []
    # the keyboard: focus the first token, move right, the tooltip follows
    tokens.nth(0).focus()
    assert tip.locator(".tv-chosen").inner_text() == '"The" 99.0 %'
    md.page.keyboard.press("ArrowRight")
    assert md.page.evaluate("document.activeElement.dataset.index") == "1"
    assert tip.locator("p").inner_text() == 'chosen " cat": 20.0 %'


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_rendered_replies_pass_axe_in_both_themes(browser: Any, site_url: str, scheme: str) -> None:
    p = Page(browser, site_url, scheme)
    try:
        p.render(STREAMED + "\n> quoted [link](https://example.com)\n\n- [x] done\n")
        p.page.evaluate("""async (content) => {
            const { renderTokenView } = await import('/web/render/token_view.js');
            const box = document.createElement('div');
            document.querySelector('#messages').append(box);
            renderTokenView(box, content);
        }""", LOGPROBS)
        p.page.add_script_tag(path=str(AXE))
        violations = p.page.evaluate("""async () => (await axe.run(document.querySelector('#messages'),
            {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa', 'best-practice']}}))
            .violations.filter((v) => ['serious', 'critical'].includes(v.impact))
            .map((v) => [v.id, v.nodes.slice(0, 3).map((n) => n.target.join(' '))])""")
        assert violations == []
        p.page.locator("#messages").screenshot(path=str(ROOT / "test-results" / f"markdown-{scheme}.png"))
    finally:
        p.context.close()
