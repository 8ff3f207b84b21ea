"""The docs (README.md and docs/*.md) read as data: fenced code blocks with the line they start on,
headings as GitHub makes their anchors, and relative links. The docs tests share this reader."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import ROOT

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def doc_files() -> list[Path]:
    """README.md and every page under docs/, README first."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@dataclass(frozen=True)
class Block:
    """One fenced code block: its file (relative to the checkout), the line of its first code line
    (1-based, as an editor shows it), its language, the words after the language, and its code."""

    file: str
    line: int
    lang: str
    flags: tuple[str, ...]
    code: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _lines_outside_code(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line that is not inside a fenced block."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m["fence"]
                continue
            out.append((number, line))
        elif m and m["fence"][0] == fence[0] and len(m["fence"]) >= len(fence) and not m["info"].strip():
            fence = None
    return out


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file, in order. An indented fence (in a list item) has
    its indentation taken off its lines."""
    found: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = len(m["indent"]), m["fence"]
        words = m["info"].split()
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            close = FENCE.match(lines[j])
            if close and close["fence"][0] == fence[0] and len(close["fence"]) >= len(fence) \
                    and not close["info"].strip():
                break
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        found.append(Block(rel(path), i + 2, words[0] if words else "", tuple(words[1:]), "\n".join(body) + "\n"))
        i = j + 1
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: lowercase, code and emphasis marks and punctuation
    dropped (letters, digits, ``_``, ``-`` and spaces kept), spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file (repeats get ``-1``, ``-2``, ... as on GitHub)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, line in _lines_outside_code(path.read_text()):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m[2])
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every Markdown link outside code (code blocks and code spans)."""
    out: list[tuple[int, str]] = []
    for number, line in _lines_outside_code(path.read_text()):
        prose = CODE_SPAN.sub("", line)
        out.extend((number, m[1]) for m in LINK.finditer(prose))
    return out


def code_spans(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every inline code span outside code blocks."""
    out: list[tuple[int, str]] = []
    for number, line in _lines_outside_code(path.read_text()):
        out.extend((number, m[2].strip()) for m in CODE_SPAN.finditer(line))
    return out
