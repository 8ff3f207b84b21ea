"""Generate ``py/csi/text/tables/unicode_breaks.py`` and ``unicode_dict.py`` for ``csi.text.segmentation``.

``csi.text.chunking`` must split text exactly like the Rust ``text-splitter`` crate (PyPI ``semantic-text-splitter``
0.33.1), which segments graphemes, words and sentences with ICU4X's ``icu_segmenter`` 2.4 (``WordSegmenter::
new_dictionary``). That segmenter is a table-driven state machine built from UAX #29-style rule files plus
Unicode character properties, and it splits Chinese, Japanese, Thai, Lao, Khmer and Burmese words with ICU's
dictionaries. This script rebuilds the same state tables and property maps, and packs the dictionaries:

* character properties (Unicode 17.0.0, the version of ICU4X 2.4's baked data): queried from the PyPI
  ``regex`` module at the pinned version below (it carries the UCD tables of its Unicode version);
* the rules: ``GRAPHEME``, ``WORD`` and ``SENTENCE`` below, a transcription of ICU4X's
  ``provider/source/data/segmenter/{grapheme,word,sentence}.toml`` (the versions that reproduce the crate's
  output) into Python data; ``_build_table`` applies them the way ICU4X's datagen does;
* the dictionaries: ``brkitr/*.dict`` from ICU's common data inside Debian's ``libicu72`` package
  (``libicudata.so.72``; byte-identical to the dictionaries of ICU 78, which ICU4X 2.4's data comes from).

Run ``python3 -m buildtools.codegen.unicode_tables`` (needs ``pip install regex==2026.5.9`` and
``apt-get install libicu72``); ``tests/unit/test_chunking.py`` checks that the committed modules match.
"""

from __future__ import annotations

import base64
import glob
import importlib.metadata
import re
import struct
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BREAKS_OUT = ROOT / "py" / "csi" / "text" / "tables" / "unicode_breaks.py"
DICTS_OUT = ROOT / "py" / "csi" / "text" / "tables" / "unicode_dict.py"

REGEX_VERSION = "2026.5.9"  # its UCD is Unicode 17.0.0
UNICODE_VERSION = "17.0.0"
ICU_DATA = "/usr/lib/*/libicudata.so.72*"

# Break-state encoding in the generated tables (ICU4X's BreakState): >= 0 is Index(i) (a combined state,
# decided by look-ahead); INTERMEDIATE + i is Intermediate(i).
BREAK, KEEP, NOMATCH, INTERMEDIATE = -1, -2, -3, 256


@dataclass(frozen=True)
class RuleSpec:
    """One ICU4X segmenter rule file: simple properties, marker-only properties, combined states, rules."""

    kind: str
    simple: str  # property names, each a class of code points (in rule-file order)
    markers: str  # ``as_simple_property`` names: simple indices without code points
    states: tuple[tuple[str, str], ...]  # (name, "Left+Right ..."); a trailing "!" marks an intermediate state
    rules: tuple[tuple[str, str, bool | None], ...]  # (lefts, rights, break?) ; None = no match


WORD = RuleSpec(
    kind="word",
    simple="CR LF Newline Extend ZWJ Regional_Indicator Format Katakana Hebrew_Letter ALetter Single_Quote "
    "Double_Quote MidNumLet MidLetter MidNum Numeric ExtendNumLet WSegSpace Extended_Pictographic "
    "ALetter_Extended_Pictographic SA",
    markers="ALetter_ZWJ Hebrew_Letter_ZWJ Numeric_ZWJ",
    states=(
        ("ALetter", "ALetter+Extend ALetter_Extended_Pictographic+Extend ALetter+Format "
                    "ALetter_Extended_Pictographic+Format ALetter_ZWJ+Extend ALetter_ZWJ+Format"),
        ("ALetter_ZWJ", "ALetter+ZWJ ALetter_Extended_Pictographic+ZWJ ALetter_ZWJ+ZWJ"),
        *(
            pair
            for name in ("Numeric", "ExtendNumLet", "Single_Quote", "Double_Quote", "MidLetter", "MidNum",
                         "MidNumLet")
            for pair in (
                (name, f"{name}+Extend {name}_ZWJ+Extend {name}+Format {name}_ZWJ+Format"),
                (f"{name}_ZWJ", f"{name}+ZWJ {name}_ZWJ+ZWJ"),
            )
        ),
        ("WSegSpace_XX", "WSegSpace+Extend WSegSpace_XX+Extend WSegSpace_ZWJ+Extend WSegSpace+Format "
                         "WSegSpace_XX+Format WSegSpace_ZWJ+Format"),
        ("WSegSpace_ZWJ", "WSegSpace+ZWJ WSegSpace_XX+ZWJ WSegSpace_ZWJ+ZWJ"),
        *(
            pair
            for name in ("Unknown", "Katakana", "Regional_Indicator", "Hebrew_Letter")
            for pair in (
                (name, f"{name}+Extend {name}_ZWJ+Extend {name}+Format {name}_ZWJ+Format"),
                (f"{name}_ZWJ", f"{name}+ZWJ {name}_ZWJ+ZWJ"),
            )
        ),
        ("Extended_Pictographic", "Extended_Pictographic+Extend"),
        ("ALetter", "ALetter_Extended_Pictographic+Extend"),
        ("Extended_Pictographic", "Extended_Pictographic+Format"),
        ("ALetter", "ALetter_Extended_Pictographic+Format"),
        ("Extended_Pictographic_ZWJ", "Extended_Pictographic+ZWJ Extended_Pictographic_ZWJ+ZWJ"),
        ("ALetter_ZWJ", "ALetter_Extended_Pictographic+ZWJ"),
        ("Extended_Pictographic", "Extended_Pictographic_ZWJ+Extend Extended_Pictographic_ZWJ+Format"),
        ("Format", "Format+Extend Format_ZWJ+Extend Format+Format Format_ZWJ+Format"),
        ("Format_ZWJ", "Format+ZWJ Format_ZWJ+ZWJ"),
        ("Extend", "Extend+Extend Extend_ZWJ+Extend Extend+Format Extend_ZWJ+Format"),
        ("Extend_ZWJ", "Extend+ZWJ Extend_ZWJ+ZWJ"),
        ("ZWJ_Extend", "ZWJ+Extend ZWJ_Extend+Extend"),
        ("ZWJ_Format", "ZWJ+Format ZWJ_Format+Format"),
        ("ZWJ_Extend", "ZWJ_Format+Extend"),
        ("ZWJ_Format", "ZWJ_Extend+Format"),
        ("ZWJ", "ZWJ+ZWJ ZWJ_Extend+ZWJ ZWJ_Format+ZWJ"),
        *((name, f"{name}+Extend {name}+Format {name}+ZWJ")
          for name in ("ALetter_MidLetter", "ALetter_Single_Quote", "ALetter_MidNumLet", "Hebrew_Letter_MidLetter",
                       "Hebrew_Letter_MidNumLet")),
        ("Hebrew_Letter_Single_Quote", "Hebrew_Letter_Single_Quote+Extend Hebrew_Letter_Single_Quote_ZWJ+Extend "
                                       "Hebrew_Letter_Single_Quote+Format Hebrew_Letter_Single_Quote_ZWJ+Format"),
        ("Hebrew_Letter_Single_Quote_ZWJ", "Hebrew_Letter_Single_Quote+ZWJ Hebrew_Letter_Single_Quote_ZWJ+ZWJ"),
        *((name, f"{name}+Extend {name}+Format {name}+ZWJ")
          for name in ("Hebrew_Letter_Double_Quote", "Numeric_Single_Quote", "Numeric_MidNum", "Numeric_MidNumLet")),
        ("ALetter_MidLetter", "ALetter+MidLetter ALetter_Extended_Pictographic+MidLetter ALetter_ZWJ+MidLetter"),
        ("ALetter_MidNumLet", "ALetter+MidNumLet ALetter_Extended_Pictographic+MidNumLet ALetter_ZWJ+MidNumLet"),
        ("ALetter_Single_Quote", "ALetter+Single_Quote ALetter_Extended_Pictographic+Single_Quote "
                                 "ALetter_ZWJ+Single_Quote"),
        ("Hebrew_Letter_MidLetter", "Hebrew_Letter+MidLetter Hebrew_Letter_ZWJ+MidLetter"),
        ("Hebrew_Letter_MidNumLet", "Hebrew_Letter+MidNumLet Hebrew_Letter_ZWJ+MidNumLet"),
        ("Hebrew_Letter_Single_Quote", "Hebrew_Letter+Single_Quote Hebrew_Letter_ZWJ+Single_Quote"),
        ("Hebrew_Letter_Double_Quote", "Hebrew_Letter+Double_Quote Hebrew_Letter_ZWJ+Double_Quote"),
        ("Numeric_MidNum", "Numeric+MidNum Numeric_ZWJ+MidNum"),
        ("Numeric_MidNumLet", "Numeric+MidNumLet Numeric_ZWJ+MidNumLet"),
        ("Numeric_Single_Quote", "Numeric+Single_Quote Numeric_ZWJ+Single_Quote"),
        ("RI_RI", "Regional_Indicator+Regional_Indicator Regional_Indicator_ZWJ+Regional_Indicator RI_RI+Extend "
                  "RI_RI_ZWJ+Extend RI_RI+Format RI_RI_ZWJ+Format"),
        ("RI_RI_ZWJ", "RI_RI+ZWJ RI_RI_ZWJ+ZWJ"),
    ),
    rules=(
        ("sot", "Any", True),  # WB1
        ("ALetter ALetter_Extended_Pictographic Katakana Hebrew_Letter Numeric MidNumLet ExtendNumLet MidNumLet "
         "MidLetter ZWJ Extend Format Regional_Indicator Extended_Pictographic Single_Quote Double_Quote ALetter_ZWJ "
         "Double_Quote_ZWJ Extend_ZWJ Extended_Pictographic_ZWJ ExtendNumLet_ZWJ Format_ZWJ Hebrew_Letter_ZWJ "
         "Katakana_ZWJ MidLetter_ZWJ MidNum_ZWJ MidNumLet_ZWJ Numeric_ZWJ Single_Quote_ZWJ Extended_Pictographic_ZWJ "
         "Regional_Indicator_ZWJ Unknown_ZWJ WSegSpace_ZWJ WSegSpace_XX Hebrew_Letter_Single_Quote "
         "Hebrew_Letter_Single_Quote_ZWJ RI_RI_ZWJ", "eot", True),  # WB2
        ("CR", "LF", False),  # WB3
        ("ZWJ ALetter_ZWJ Double_Quote_ZWJ Extend_ZWJ ExtendNumLet_ZWJ Extended_Pictographic_ZWJ Format_ZWJ "
         "Hebrew_Letter_ZWJ Hebrew_Letter_Single_Quote_ZWJ Katakana_ZWJ MidLetter_ZWJ MidNum_ZWJ MidNumLet_ZWJ "
         "Numeric_ZWJ Regional_Indicator_ZWJ Single_Quote_ZWJ Regional_Indicator_ZWJ RI_RI_ZWJ Unknown_ZWJ "
         "WSegSpace_ZWJ", "Extended_Pictographic ALetter_Extended_Pictographic", False),  # WB3c
        ("WSegSpace", "WSegSpace", False),  # WB3d
        ("ALetter ALetter_Extended_Pictographic Hebrew_Letter ALetter_ZWJ Hebrew_Letter_ZWJ",
         "ALetter ALetter_Extended_Pictographic Hebrew_Letter", False),  # WB5
        ("ALetter_MidLetter ALetter_MidNumLet ALetter_Single_Quote Hebrew_Letter_MidLetter Hebrew_Letter_MidNumLet "
         "Hebrew_Letter_Single_Quote Hebrew_Letter_Single_Quote_ZWJ",
         "ALetter ALetter_Extended_Pictographic Hebrew_Letter", False),  # WB6/7
        ("Hebrew_Letter_Double_Quote", "Hebrew_Letter", False),  # WB7b/c
        ("Numeric Numeric_ZWJ", "Numeric", False),  # WB8
        ("ALetter ALetter_Extended_Pictographic Hebrew_Letter ALetter_ZWJ Hebrew_Letter_ZWJ", "Numeric",
         False),  # WB9
        ("Numeric Numeric_ZWJ", "ALetter ALetter_Extended_Pictographic Hebrew_Letter", False),  # WB10
        ("Numeric_MidNum Numeric_MidNumLet Numeric_Single_Quote", "Numeric", False),  # WB11
        ("Katakana Katakana_ZWJ", "Katakana", False),  # WB13
        ("ALetter ALetter_Extended_Pictographic Hebrew_Letter Numeric Katakana ExtendNumLet ALetter_ZWJ "
         "ExtendNumLet_ZWJ Hebrew_Letter_ZWJ Numeric_ZWJ", "ExtendNumLet", False),  # WB13a
        ("ExtendNumLet ExtendNumLet_ZWJ", "ALetter ALetter_Extended_Pictographic Hebrew_Letter Numeric Katakana",
         False),  # WB13b
        ("Any", "Any", True),  # WB999
        ("ALetter_ZWJ Double_Quote_ZWJ Extend_ZWJ Extended_Pictographic_ZWJ ExtendNumLet_ZWJ Format_ZWJ "
         "Hebrew_Letter_ZWJ Katakana_ZWJ MidLetter_ZWJ MidNum_ZWJ MidNumLet_ZWJ Numeric_ZWJ Regional_Indicator_ZWJ "
         "Single_Quote_ZWJ Unknown_ZWJ WSegSpace_ZWJ WSegSpace_XX Hebrew_Letter_Single_Quote "
         "Hebrew_Letter_Single_Quote_ZWJ RI_RI_ZWJ", "Any", True),
        ("ALetter_ZWJ", "WSegSpace", True),
    ),
)

_GB_ALL = "Control CR LF L V T LV LVT Prepend Regional_Indicator Extended_Pictographic"
GRAPHEME = RuleSpec(
    kind="grapheme",
    simple="CR LF Control Extend ZWJ Regional_Indicator Prepend SpacingMark L V T LV LVT Extended_Pictographic "
    "InCBLinker InCBConsonant InCBExtend",
    markers="",
    states=(
        ("Extended_Pictographic_Extend", "Extended_Pictographic+Extend Extended_Pictographic+InCBLinker "
                                         "Extended_Pictographic+InCBExtend Extended_Pictographic_Extend+Extend "
                                         "Extended_Pictographic_Extend+InCBLinker "
                                         "Extended_Pictographic_Extend+InCBExtend"),
        ("Extended_Pictographic_Extend_ZWJ", "Extended_Pictographic+ZWJ Extended_Pictographic_Extend+ZWJ"),
        ("RI_RI", "Regional_Indicator+Regional_Indicator"),
        ("InCBConsonant_InCBExtend", "InCBConsonant+InCBExtend InCBConsonant+ZWJ"),
        ("InCBConsonant_InCBLinker", "InCBConsonant+InCBLinker"),
        ("InCBConsonant_InCBExtend", "InCBConsonant_InCBExtend+InCBExtend InCBConsonant_InCBExtend+ZWJ"),
        ("InCBConsonant_InCBLinker", "InCBConsonant_InCBExtend+InCBLinker InCBConsonant_InCBLinker+InCBLinker"),
        ("InCBConsonant_InCBLinker_InCBExtend", "InCBConsonant_InCBLinker+InCBExtend InCBConsonant_InCBLinker+ZWJ "
                                                "InCBConsonant_InCBLinker_InCBExtend+InCBExtend "
                                                "InCBConsonant_InCBLinker_InCBExtend+ZWJ "
                                                "InCBConsonant_InCBLinker_InCBExtend+InCBLinker"),
    ),
    rules=(
        ("sot", "Any", True),  # GB1
        ("L V T LV LVT Unknown RI_RI Extended_Pictographic_Extend Extended_Pictographic_Extend_ZWJ "
         "InCBConsonant_InCBExtend InCBConsonant_InCBLinker InCBConsonant_InCBLinker_InCBExtend", "eot", True),  # GB2
        ("CR", "LF", False),  # GB3
        ("Control CR LF", "Control CR Extend L LV LVT V T", True),  # GB4/5
        ("Control LF", "LF", True),  # GB5
        ("L", "L V LV LVT", False),  # GB6
        ("LV V", "V T", False),  # GB7
        ("LVT T", "T", False),  # GB8
        ("L V T LV LVT Regional_Indicator Unknown Extend SpacingMark Extended_Pictographic ZWJ "
         "Extended_Pictographic_Extend_ZWJ RI_RI InCBExtend InCBLinker", "Extend ZWJ InCBExtend InCBLinker",
         False),  # GB9
        ("InCBConsonant InCBConsonant_InCBExtend InCBConsonant_InCBLinker InCBConsonant_InCBLinker_InCBExtend",
         "Extend", False),  # GB9
        ("L V T LV LVT Extend Prepend Unknown SpacingMark Extended_Pictographic ZWJ Regional_Indicator RI_RI "
         "Extended_Pictographic_Extend_ZWJ Extended_Pictographic_Extend InCBConsonant InCBConsonant_InCBExtend "
         "InCBConsonant_InCBLinker InCBConsonant_InCBLinker_InCBExtend InCBLinker InCBExtend", "SpacingMark",
         False),  # GB9a
        ("Prepend", "Extend Unknown Regional_Indicator Prepend L V T LV LVT Extended_Pictographic ZWJ InCBConsonant "
         "InCBLinker InCBExtend", False),  # GB9b
        ("InCBConsonant_InCBLinker InCBConsonant_InCBLinker_InCBExtend", "InCBConsonant", False),  # GB9c
        ("Extended_Pictographic_Extend_ZWJ", "Extended_Pictographic", False),  # GB11
        ("RI_RI", "Regional_Indicator", True),  # GB12/13
        ("RI_RI", "Unknown", True),  # GB12/13
        ("Any RI_RI", "Any", True),  # GB999
        ("Extended_Pictographic_Extend Extended_Pictographic_Extend_ZWJ InCBConsonant_InCBExtend",
         f"{_GB_ALL} InCBConsonant Unknown", True),
        ("InCBConsonant_InCBLinker InCBConsonant_InCBLinker_InCBExtend", f"{_GB_ALL} Unknown", True),
    ),
)

SENTENCE = RuleSpec(
    kind="sentence",
    simple="CR LF Extend Sep Format Sp Lower Upper OLetter Numeric ATerm SContinue STerm Close",
    markers="",
    states=(
        *((name, f"{name}+Extend {name}+Format")
          for name in ("Lower", "Upper", "OLetter", "ATerm", "STerm", "ATerm_Close", "ATerm_Close_Sp", "STerm_Close",
                       "STerm_Close_Sp", "Upper_ATerm", "Lower_ATerm", "ATerm_Close_Sp_SB8")),
        ("Upper_ATerm", "Upper+ATerm"),  # SB7
        ("Lower_ATerm", "Lower+ATerm"),
        ("ATerm_Close", "ATerm+Close ATerm_Close+Close Upper_ATerm+Close Lower_ATerm+Close"),  # SB8
        ("ATerm_Close_Sp", "ATerm+Sp Upper_ATerm+Sp Lower_ATerm+Sp ATerm_Close+Sp ATerm_Close_Sp+Sp"),
        ("ATerm_Close_Sp_ParaSep", "ATerm_Close+Sep"),
        ("ATerm_Close_Sp_CR", "ATerm_Close+CR"),
        ("ATerm_Close_Sp_ParaSep", "ATerm_Close+LF ATerm_Close_Sp+Sep"),
        ("ATerm_Close_Sp_CR", "ATerm_Close_Sp+CR"),
        ("ATerm_Close_Sp_ParaSep", "ATerm_Close_Sp+LF Lower_ATerm+Sep"),
        ("ATerm_Close_Sp_CR", "Lower_ATerm+CR"),
        ("ATerm_Close_Sp_ParaSep", "Lower_ATerm+LF Upper_ATerm+Sep"),
        ("ATerm_Close_Sp_CR", "Upper_ATerm+CR"),
        ("ATerm_Close_Sp_ParaSep", "Upper_ATerm+LF"),
        ("STerm_Close", "STerm+Close STerm_Close+Close"),  # SB8a/9
        ("STerm_Close_Sp", "STerm+Sp STerm_Close+Sp STerm_Close_Sp+Sp"),
        ("STerm_Close_Sp_ParaSep", "STerm_Close+Sep"),  # SB9/10
        ("STerm_Close_Sp_CR", "STerm_Close+CR"),
        ("STerm_Close_Sp_ParaSep", "STerm_Close+LF STerm_Close_Sp+Sep"),
        ("STerm_Close_Sp_CR", "STerm_Close_Sp+CR"),
        ("STerm_Close_Sp_ParaSep", "STerm_Close_Sp+LF"),
        ("ATerm_Close_Sp_SB8", "ATerm+Unknown! Upper_ATerm+Unknown! Lower_ATerm+Unknown! ATerm_Close+Numeric! "
                               "ATerm_Close+Unknown! ATerm_Close_Sp+Close! ATerm_Close_Sp+Numeric! "
                               "ATerm_Close_Sp+Unknown! ATerm_Close_Sp_SB8+Close ATerm_Close_Sp_SB8+Format "
                               "ATerm_Close_Sp_SB8+Numeric ATerm_Close_Sp_SB8+Sp ATerm_Close_Sp_SB8+Unknown "
                               "ATerm_Close_Sp_SB8+SContinue"),
    ),
    rules=(
        ("sot", "Any", True),  # SB1
        ("Sep Lower Upper OLetter Numeric Extend Format ATerm_Close ATerm_Close_Sp ATerm_Close_Sp_ParaSep "
         "ATerm_Close_Sp_CR STerm_Close STerm_Close_Sp STerm_Close_Sp_ParaSep STerm_Close_Sp_CR Lower_ATerm "
         "Upper_ATerm", "eot", True),  # SB2
        ("CR ATerm_Close_Sp_CR STerm_Close_Sp_CR", "LF", False),  # SB3
        ("Sep CR LF", "ATerm Numeric Sep Lower Upper OLetter Sp Unknown STerm Close SContinue Format Extend CR",
         True),  # SB4
        ("Sep LF ATerm_Close ATerm_Close_Sp", "LF", True),
        ("ATerm_Close_Sp_ParaSep ATerm_Close_Sp_CR STerm_Close_Sp_ParaSep STerm_Close_Sp_CR",
         "ATerm Numeric Lower Upper OLetter Sp Unknown STerm Close SContinue Format Extend", True),
        ("ATerm Upper_ATerm Lower_ATerm", "Numeric", False),  # SB6
        ("Upper_ATerm Lower_ATerm", "Upper", False),  # SB7
        ("ATerm ATerm_Close ATerm_Close_Sp", "Lower", False),  # SB8
        ("Lower_ATerm Upper_ATerm", "Lower", False),
        ("ATerm_Close_Sp_SB8", "Lower", False),
        ("ATerm ATerm_Close ATerm_Close_Sp STerm STerm_Close STerm_Close_Sp Lower_ATerm Upper_ATerm",
         "SContinue ATerm STerm", False),  # SB8a
        ("ATerm_Close_Sp_ParaSep ATerm_Close_Sp_CR STerm_Close_Sp_ParaSep STerm_Close_Sp_CR",
         "ATerm Lower OLetter Upper Numeric STerm CR LF Sep", True),  # SB11
        ("ATerm_Close_Sp STerm_Close_Sp", "Numeric Upper Lower Close Unknown OLetter", True),
        ("ATerm_Close STerm STerm_Close", "Numeric Upper Lower OLetter Unknown", True),
        ("ATerm Upper_ATerm Lower_ATerm STerm", "Unknown Upper Lower OLetter ATerm STerm", True),
        ("Any", "Any", False),  # SB998
    ),
)
SPECS = (GRAPHEME, WORD, SENTENCE)


# ---------------------------------------------------------------------------------------------------------
# Character properties


def _check_regex():  # -> module
    try:
        import regex  # noqa: PLC0415 - a build-time dependency only
    except ImportError as exc:
        raise SystemExit(f"needs the PyPI package regex=={REGEX_VERSION} (pip install regex=={REGEX_VERSION})") from exc
    have = importlib.metadata.version("regex")
    if have != REGEX_VERSION:
        raise SystemExit(f"needs regex=={REGEX_VERSION} (Unicode {UNICODE_VERSION}), found {have}")
    return regex


_ALL_CODE_POINTS = "".join(map(chr, range(0x110000)))


def _code_points(regex, prop: str) -> list[tuple[int, int]]:
    """Half-open code point ranges with the property ``prop`` (regex ``\\p{...}`` syntax)."""
    return [m.span() for m in regex.finditer(rf"\p{{{prop}}}+", _ALL_CODE_POINTS)]


def _property_map(spec: RuleSpec, names: list[str], regex) -> bytearray:
    """Code point -> property index, assigned in rule-file order (later tables win), as ICU4X's datagen does."""
    out = bytearray(0x110000)

    def setr(ranges, value, keep=lambda c: True):
        for a, b in ranges:
            for c in range(a, b):
                if keep(c):
                    out[c] = value

    def member(prop: str) -> bytearray:
        m = bytearray(0x110000)
        for a, b in _code_points(regex, prop):
            m[a:b] = b"\1" * (b - a)
        return m

    markers = set(spec.markers.split())
    if spec.kind == "word":
        ext_pict = member("Extended_Pictographic")
        aletter = member("Word_Break=ALetter")
        han = member("Script=Han")
        complex_context = member("Line_Break=Complex_Context")
    if spec.kind == "grapheme":
        ext_pict = member("Extended_Pictographic")
    for name in spec.simple.split() + spec.markers.split():
        value = names.index(name)
        if name in markers:
            continue
        if spec.kind == "word":
            if name == "Extended_Pictographic":
                setr(_code_points(regex, "Extended_Pictographic"), value, lambda c: not aletter[c])
            elif name == "ALetter_Extended_Pictographic":
                setr(_code_points(regex, "Word_Break=ALetter"), value, lambda c: ext_pict[c])
            elif name == "SA":
                setr(_code_points(regex, "Script=Han"), value)
                setr(_code_points(regex, "Script=Hiragana"), value)
                setr(_code_points(regex, "Line_Break=Complex_Context"), value, lambda c: c != 0x19DA)
            elif name == "Extend":
                setr(_code_points(regex, "Word_Break=Extend"), value,
                     lambda c: not han[c] and not complex_context[c])
            elif name == "ALetter":
                setr(_code_points(regex, "Word_Break=ALetter"), value, lambda c: not ext_pict[c])
            else:
                setr(_code_points(regex, f"Word_Break={name}"), value)
        elif spec.kind == "grapheme":
            if name == "Extended_Pictographic":
                setr(_code_points(regex, "Extended_Pictographic"), value)
            elif name.startswith("InCB"):
                setr(_code_points(regex, f"Indic_Conjunct_Break={name[4:]}"), value, lambda c: c != 0x200D)
            else:
                setr(_code_points(regex, f"Grapheme_Cluster_Break={name}"), value)
        else:
            setr(_code_points(regex, f"Sentence_Break={name}"), value)
    return out


def _runs(values: bytearray) -> list[int]:
    """[start0, value0, start1, value1, ...]: the value from each start up to the next start."""
    out: list[int] = []
    for m in re.finditer(rb"(.)\1*", bytes(values), re.S):
        out += [m.start(), values[m.start()]]
    return out


# ---------------------------------------------------------------------------------------------------------
# Break-state tables (ICU4X's datagen, ``generate_rule_break_data``)


def _names(spec: RuleSpec) -> tuple[list[str], int]:
    names = ["Unknown", *spec.simple.split(), *spec.markers.split()]
    simple_count = len(names)
    for name, _ in spec.states:
        if name not in names:
            names.append(name)
    return [*names, "sot", "eot"], simple_count


def _build_table(spec: RuleSpec) -> dict[str, object]:
    names, simple_count = _names(spec)
    n = len(names)
    idx = {name: i for i, name in enumerate(names)}
    table: list[int | None] = [None] * (n * n)

    def put(left: int, right: int, state: int) -> None:
        if table[left * n + right] is None or table[left * n + right] == NOMATCH:
            table[left * n + right] = state

    for lefts, rights, brk in spec.rules:
        state = NOMATCH if brk is None else BREAK if brk else KEEP
        for left in lefts.split():
            if left == "Any":
                for right in rights.split():
                    if right == "Any":
                        table[:] = [state if s is None else s for s in table]
                    else:
                        for i in range(simple_count):
                            put(i, idx[right], state)
                continue
            li = idx[left]
            for right in rights.split():
                if right == "Any":
                    for i in range(n):
                        put(li, i, state)
                    continue
                ri = idx[right]
                if right != "eot" and table[li * n + ri] == NOMATCH:
                    table[li * n + ri] = None
                put(li, ri, state)
                if li >= simple_count:  # a combined state that does not continue does not match
                    for i in range(n):
                        put(li, i, NOMATCH)
    for name, pairs in spec.states:
        for pair in pairs.split():
            interm = pair.endswith("!")
            left, right = pair.rstrip("!").split("+")
            table[idx[left] * n + idx[right]] = (INTERMEDIATE if interm else 0) + idx[name]
    assert all(s is not None for s in table), spec.kind
    assert all(table[idx["sot"] * n + i] == BREAK for i in range(n)), "sot must always break"
    return {
        "names": names,
        "count": n,
        "last_cp": simple_count - 1,
        "sot": idx["sot"],
        "eot": idx["eot"],
        "complex": idx.get("SA", 127),
        "table": table,
    }


# ---------------------------------------------------------------------------------------------------------
# Dictionaries (ICU common data: a table of contents of named items; each .dict is a header + trie)


def _icu_common_data() -> tuple[str, bytes]:
    paths = sorted(glob.glob(ICU_DATA))
    if not paths:
        raise SystemExit(f"needs ICU's data library {ICU_DATA} (apt-get install libicu72)")
    return paths[0], Path(paths[0]).read_bytes()


def _dictionaries() -> tuple[str, dict[str, tuple[str, int, bytes]]]:
    path, blob = _icu_common_data()
    # The common data starts with a header: u16 size, magic 0xda 0x27, then UDataInfo with format "CmnD".
    start = next(m.start() - 12 for m in re.finditer(b"CmnD", blob) if blob[m.start() - 10:m.start() - 8] == b"\xda'")
    header_size = struct.unpack_from("<H", blob, start)[0]
    toc = start + header_size
    (count,) = struct.unpack_from("<I", blob, toc)
    entries = []
    for k in range(count):
        name_off, data_off = struct.unpack_from("<II", blob, toc + 4 + 8 * k)
        name = blob[toc + name_off:blob.index(b"\0", toc + name_off)].decode()
        entries.append((name, toc + data_off))
    out = {}
    package = entries[0][0].split("/")[0]
    for (name, off), (_, nxt) in zip(entries, entries[1:], strict=False):
        m = re.fullmatch(r"[^/]+/brkitr/(\w+)dict\.dict", name)
        if not m:
            continue
        item = blob[off:nxt]
        body = item[struct.unpack_from("<H", item, 0)[0]:]
        trie_offset, _, _, total, trie_type, transform = struct.unpack_from("<6i", body, 0)
        trie = body[trie_offset:total]
        if trie_type & 7 == 1:  # UCharsTrie (cjdict)
            out[m.group(1)] = ("u", 0, trie)
        else:  # BytesTrie with an offset transform (thai, lao, khmer, burmese)
            assert transform & 0x7F000000 == 0x01000000, name
            out[m.group(1)] = ("b", transform & 0x1FFFFF, trie)
    return f"{package} ({path})", out


# ---------------------------------------------------------------------------------------------------------
# Output


def _items(items: list[str], indent: str = " " * 8) -> str:
    """Comma-separated ``items`` wrapped at ruff's line length."""
    lines, line = [], indent
    for item in items:
        item += ","
        if len(line) + len(item) + 1 > 118:
            lines.append(line.rstrip())
            line = indent
        line += item + " "
    lines.append(line.rstrip())
    return "\n".join(lines)


def render_breaks() -> str:
    regex = _check_regex()
    parts = [
        '"""Unicode segmentation tables for ``csi.text.segmentation``. '
        "GENERATED by buildtools/codegen/unicode_tables.py.\n\n"
        f"Character properties of Unicode {UNICODE_VERSION} (PyPI regex=={REGEX_VERSION}); break-state tables built\n"
        "from ICU4X 2.4's grapheme/word/sentence rules. Do not edit: regenerate.\n"
        '"""\n\n',
        f'UNICODE_VERSION = "{UNICODE_VERSION}"\n',
        f"BREAK, KEEP, NOMATCH, INTERMEDIATE = {BREAK}, {KEEP}, {NOMATCH}, {INTERMEDIATE}\n",
    ]
    for spec in SPECS:
        data = _build_table(spec)
        runs = _runs(_property_map(spec, data["names"], regex))
        parts.append(f"\n{spec.kind.upper()} = {{\n")
        parts.append(f'    "names": (\n{_items([repr(n) for n in data["names"]])}\n    ),\n')
        for key in ("count", "last_cp", "sot", "eot", "complex"):
            parts.append(f'    "{key}": {data[key]},\n')
        parts.append(f'    "runs": (\n{_items([str(v) for v in runs])}\n    ),\n')
        parts.append(f'    "table": (\n{_items([str(v) for v in data["table"]])}\n    ),\n')
        parts.append("}\n")
    return "".join(parts)


def render_dicts() -> str:
    source, dicts = _dictionaries()
    source = source.split(" ")[0]
    parts = [
        '"""ICU word dictionaries for ``csi.text.segmentation``. GENERATED by buildtools/codegen/unicode_tables.py.\n\n'
        f"The ``brkitr/*dict.dict`` tries of ICU's common data {source} (Debian libicu72), zlib-compressed and\n"
        "base64-encoded: (trie kind \"u\" = UCharsTrie / \"b\" = BytesTrie, code point offset of a BytesTrie, data).\n"
        "Do not edit: regenerate.\n"
        '"""\n\n'
        "DICTIONARIES = {\n"
    ]
    for name in sorted(dicts):
        kind, offset, trie = dicts[name]
        encoded = base64.b64encode(zlib.compress(trie, 9)).decode()
        lines = "\n".join(encoded[i:i + 116] for i in range(0, len(encoded), 116))
        parts.append(f'    "{name}": ("{kind}", {offset:#x}, """\n{lines}\n"""),\n')
    parts.append("}\n")
    return "".join(parts)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    for path, render in ((BREAKS_OUT, render_breaks), (DICTS_OUT, render_dicts)):
        text = render()
        if check:
            if not path.exists() or path.read_text() != text:
                print(f"{path} is out of date", file=sys.stderr)
                return 1
        else:
            path.write_text(text)
            print(f"wrote {path} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
