"""Replies as Markdown (app/render/markdown.js) and tokens by probability (app/render/token_view.js),
in the real page: GitHub-flavored Markdown as its spec shows it, hostile input that runs and loads
nothing, streaming that never rebuilds finished blocks."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import LOCAL_PREFIXES, WATCH_VIOLATIONS, load_axe, violations
from tests.support.paths import ROOT

pytestmark = pytest.mark.browser

RENDER = """async ([markdown]) => {
  const { renderMarkdown } = await import('/app/render/markdown.js');
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
        self.context.add_init_script(WATCH_VIOLATIONS)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("dialog", self._dismiss)
        self.page.goto(site_url + "index.html?model=tiny-chat")
        self.page.wait_for_selector("body[data-ready='true']", timeout=180_000)

    def _dismiss(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def render(self, markdown: str) -> Any:
        box = self.page.evaluate(RENDER, [markdown])
        return self.page.locator(f"#{box}")


@pytest.fixture
def md(browser: Any, site_url: str) -> Iterator[Page]:
    p = Page(browser, site_url)
    yield p
    p.context.close()


GFM = """# Shopping *list*

Some *em*, **strong**, ~~struck~~ and `code <b>` text.

| Fruit | Count | Note |
|:------|------:|:----:|
| apple | 3 | ~~old~~ |
| pear | 10 | **ripe** |

- [x] bought bread
- [ ] buy milk

1. first
   - nested a
   - nested b
     1. deep
2. second

See https://example.com/path?q=1 or www.example.org, and write to someone@example.com.

> a quote with **bold**

```python
def add(a, b):
    return a + b  # sum
```
"""

# one normal form for both DOMs: tags with the attributes that matter, trimmed text, task boxes as
# [x]/[ ], a code block as its exact text (our block wrappers and Copy buttons are unwrapped)
NORMALIZE = """(root) => {
  const norm = (node) => {
    const out = [];
    for (const c of node.childNodes) {
      if (c.nodeType === 3) { const t = c.textContent.replace(/\\s+/g, ' ').trim(); if (t) out.push(t); continue; }
      if (c.nodeType !== 1) continue;
      const tag = c.tagName.toLowerCase();
      if (c.classList.contains('md-copy')) continue;
      if (c.classList.contains('md-block')) { out.push(...norm(c)); continue; }
      if (tag === 'input') { out.push(c.hasAttribute('checked') ? '[x]' : '[ ]'); continue; }
      if (c.classList.contains('md-task')) { out.push(c.textContent === '☑' ? '[x]' : '[ ]'); continue; }
      if (tag === 'code' && c.parentElement.tagName === 'PRE') {
        out.push(['code', c.textContent.replace(/\\n$/, '')]);  // cmark keeps the block's last newline
        continue;
      }
      const attrs = {};
      for (const a of ['href', 'align', 'start']) if (c.hasAttribute(a)) attrs[a] = c.getAttribute(a);
      out.push([tag, attrs, norm(c)]);
    }
    return out;
  };
  return norm(root);
}"""


def test_gfm_renders_as_githubs_own_cmark_gfm_does(md: Page) -> None:
    import cmarkgfm  # type: ignore[import-untyped]  # GitHub's cmark-gfm: the reference
    from cmarkgfm.cmark import Options  # type: ignore[import-untyped]

    reference = cmarkgfm.github_flavored_markdown_to_html(GFM, options=Options.CMARK_OPT_UNSAFE)
    box = md.render(GFM)
    ours = box.evaluate(f"(b) => ({NORMALIZE})(b)")
    # (parsed in a blank page: the playground's Trusted Types let no string become markup)
    ref = md.context.new_page().evaluate(
        f"(html) => ({NORMALIZE})(new DOMParser().parseFromString(html, 'text/html').body)", reference)
    assert ours == ref
    assert box.locator(".hljs-keyword").all_inner_texts() == ["def", "return"]


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
    "<script>alert('script')</script>",
    "<img src=x onerror=alert('img')>",
    "<img src=\"http://127.0.0.1:9/raw.png\" alt=\"raw img\">",
    "![md image](http://127.0.0.1:9/a.png)",
    "![js image](javascript:alert('jsimg'))",
    "[a](javascript:alert('a'))",
    "[b](JaVaScRiPt:alert('b'))",
    "[c](&#106;avascript:alert('c'))",
    "[d](&#x6A;&#x61;vascript:alert('d'))",
    "[e](vbscript:msgbox('e'))",
    "[f](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[g](<javascript:alert('g')>)",
    "<javascript:alert('autolink')>",
    "<a href=\"javascript:alert('h')\">h</a>",
    "<a href=\"jav&#x09;ascript:alert('i')\">i</a>",
    "<a href=\" &#14;  javascript:alert('i2')\">i2</a>",
    "<a href=\"DATA:text/html,<script>alert('j')</script>\">j</a>",
    "<a href=\"//127.0.0.1:9/evil\">k</a>",
    "[l](//127.0.0.1:9/evil)",
    "<a href=\"/relative/page\">rel</a>",
    "<a href=\"https://ok.example/\" onclick=\"alert('click')\" target=\"_self\">ok</a>",
    "[title](https://example.com \"t\\\" onmouseover=\\\"alert('t')\")",
    "<iframe src=\"http://127.0.0.1:9/frame\"></iframe>",
    "<iframe srcdoc=\"<script>alert('srcdoc')</script>\"></iframe>",
    "<svg onload=alert('svg')><circle r=5></circle></svg>",
    "<svg><script>alert('svgscript')</script></svg>",
    "<math><mi xlink:href=\"javascript:alert('math')\">m</mi></math>",
    "<style>@import url(http://127.0.0.1:9/import.css); body{background:url(http://127.0.0.1:9/b.png)}</style>",
    "<p style=\"background:url(http://127.0.0.1:9/bg.png)\">styled</p>",
    "<div style=\"background-image: url('http://127.0.0.1:9/bg2.png')\">styled div</div>",
    "<form action=\"http://127.0.0.1:9/f\"><input name=q>"
    "<button formaction=\"javascript:alert('fa')\">go</button></form>",
    "<meta http-equiv=\"refresh\" content=\"0;url=http://127.0.0.1:9/meta\">",
    "<base href=\"http://127.0.0.1:9/\">",
    "<link rel=stylesheet href=\"http://127.0.0.1:9/l.css\">",
    "<object data=\"http://127.0.0.1:9/o.swf\"></object>",
    "<embed src=\"http://127.0.0.1:9/e.swf\">",
    "<video poster=\"http://127.0.0.1:9/poster.png\"><source src=\"http://127.0.0.1:9/v.mp4\"></video>",
    "<audio src=\"http://127.0.0.1:9/a.mp3\" autoplay></audio>",
    "<img srcset=\"http://127.0.0.1:9/s.png 2x\" alt=srcset>",
    "<picture><source srcset=\"http://127.0.0.1:9/p2.png\"><img alt=pic></picture>",
    "<table background=\"http://127.0.0.1:9/tb.png\"><tr><td>t</td></tr></table>",
    "<details open ontoggle=alert('toggle')><summary>s</summary>d</details>",
    "<input autofocus onfocus=alert('focus')>",
    "<x onclick=alert('x')>custom</x>",
    "<p id=\"engine\" name=\"body\">clobber</p>",
    # DOMPurify's classic mXSS vectors
    "<svg></p><style><a id=\"</style><img src=1 onerror=alert('mx1')>\">",
    "<math><mtext><table><mglyph><style><!--</style><img title=\"--&gt;&lt;/mglyph&gt;&lt;img&Tab;src=1&Tab;"
    "onerror=alert('mx2')&gt;\">",
    "<form><math><mtext></form><form><mglyph><style></math><img src onerror=alert('mx3')>",
    "<noscript><p title=\"</noscript><img src=x onerror=alert('mx4')>\">",
    "<math><mi><mglyph><svg><mtext><textarea><path id=\"</textarea><img onerror=alert('mx5') src=1>\">",
    "<template><script>alert('tpl')</script><img src=x onerror=alert('tpl2')></template>",
    "<!--><img src=x onerror=alert('comment')>-->",
    "<textarea><img src=x onerror=alert('ta')></textarea>",
    "<a href=\"https://a.example/\"><svg><a href=\"javascript:alert('nested')\">n</a></svg></a>",
    # raw HTML inside code spans and fences, and inside table cells
    "`<script>alert('span')</script>` and `<img src=http://127.0.0.1:9/span.png>`",
    "```html\n<script>alert('fence')</script>\n<img src=http://127.0.0.1:9/fence.png onerror=alert(1)>\n```",
    "| a | b |\n|---|---|\n"
    "| <img src=http://127.0.0.1:9/cell.png onerror=alert('cell')> | <script>alert('cell2')</script> |\n"
    "| <a href=\"javascript:alert('cell3')\">x</a> | <iframe src=http://127.0.0.1:9/cf></iframe> |",
    "<a href=\"mailto:someone@example.com\">mail</a> <a href=\"#section\">frag</a> <https://fine.example/>",
]

CHECK = """(roots) => {
  const bad = [];
  const forbidden = 'script,iframe,img,style,object,embed,svg,math,form,base,meta,link,video,audio,source,'
    + 'picture,input,textarea,template,noscript,select,frame,frameset,applet';
  for (const root of roots) {
    for (const e of root.querySelectorAll('*')) {
      for (const a of e.attributes) {
        if (/^on/i.test(a.name)) bad.push(`on* ${a.name} on ${e.tagName}`);
        if (['style', 'src', 'srcset', 'srcdoc', 'poster', 'action', 'formaction', 'background', 'id',
             'name', 'xlink:href', 'data'].includes(a.name.toLowerCase())) bad.push(`attr ${a.name} on ${e.tagName}`);
      }
    }
    for (const e of root.querySelectorAll(forbidden)) bad.push(`element ${e.tagName}`);
    for (const b of root.querySelectorAll('button')) if (!b.classList.contains('md-copy')) bad.push('a foreign button');
    for (const a of root.querySelectorAll('[href]')) {
      const href = a.getAttribute('href');
      if (a.tagName !== 'A' || !/^(https?:|mailto:|#)/i.test(href)) bad.push(`href ${href}`);
      if (!(a.rel || '').split(' ').includes('noopener')) bad.push(`rel of ${href}`);
      if (/^https?:/.test(href) && a.target !== '_blank') bad.push(`target of ${href}`);
    }
  }
  return bad;
}"""


def test_hostile_markdown_runs_nothing_and_loads_nothing(md: Page) -> None:
    md.render("the modules are loaded")
    before = len(md.requests)
    boxes = [md.render(text) for text in HOSTILE]
    together = md.render("\n\n".join(HOSTILE))
    md.page.wait_for_timeout(1000)  # anything lazily loaded has been asked for by now
    assert md.dialogs == []
    assert md.requests[before:] == [], "rendering made requests"
    for box, text in zip([*boxes, together], [*HOSTILE, "all together"], strict=True):
        assert box.evaluate(f"(b) => ({CHECK})([b])") == [], text
    # what was hostile markup is still there to read, as text; Markdown links stay links
    assert "<script>alert('script')</script>" in boxes[0].inner_text()
    assert "[image: md image (http://127.0.0.1:9/a.png)]" in boxes[3].inner_text()
    assert boxes[21].locator("a").get_attribute("href") == "https://example.com"
    assert [u for u in md.requests if not u.startswith(LOCAL_PREFIXES)] == []
    # and the page's Content-Security-Policy and Trusted Types had nothing to block: the renderer
    # made its markup through csi-web's one policy, and no hostile script got as far as the browser
    assert violations(md.page) == []
    assert md.errors == []


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
        const { renderMarkdown } = await import('/app/render/markdown.js');
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
    md.page.wait_for_function(
        f"() => document.querySelector('#{box.get_attribute('id')} .md-copy').textContent === 'Copied'")


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
        const { renderTokenView } = await import('/app/render/token_view.js');
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
            const { renderTokenView } = await import('/app/render/token_view.js');
            const box = document.createElement('div');
            document.querySelector('#messages').append(box);
            renderTokenView(box, content);
        }""", LOGPROBS)
        load_axe(p.page)
        violations = p.page.evaluate("""async () => (await axe.run(document.querySelector('#messages'),
            {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa', 'best-practice']}}))
            .violations.filter((v) => ['serious', 'critical'].includes(v.impact))
            .map((v) => [v.id, v.nodes.slice(0, 3).map((n) => n.target.join(' '))])""")
        assert violations == []
        p.page.locator("#messages").screenshot(path=str(ROOT / "test-results" / f"markdown-{scheme}.png"))
    finally:
        p.context.close()
