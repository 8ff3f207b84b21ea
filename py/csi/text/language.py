"""``select_language``: Pharia Kernel's language selection, lingua 2.x's detector in pure Python.

Pharia Kernel answers with ``LanguageDetectorBuilder::from_languages(candidates)
.with_minimum_relative_distance(0.5).build().detect_language_of(text)``; this module gives the same answers
from lingua's own n-gram models (see ``buildtools/deps/lang_data.py`` for the file format, one file per language,
fetched and decoded only for the candidates asked for).

The algorithm, as lingua runs it:

1. Split the lowercased text into words (runs of letters; Han, Hiragana and Katakana one character each).
2. One candidate: it is the answer if a word holds one of its unique or most common n-grams, or the rules of
   step 3 pick it; otherwise there is no answer (the n-gram models are not consulted).
3. Rules: a script only one candidate uses, or characters only one language uses, decide outright; else the
   dominant alphabet and characters shared by few languages narrow the candidates.
4. n-grams: orders 1-5 for texts under 120 letters, only trigrams beyond. Each distinct n-gram scores its
   log-probability, backing off to its prefixes when unseen; sums over orders are averaged by the number of
   known unigrams, exponentiated and normalized into confidences (all underflowing: the best trigram sum wins).
5. The best candidate is the answer when its confidence leads the runner-up's by at least 0.5.
"""

from __future__ import annotations

import struct
import zlib
from array import array
from collections.abc import Iterable
from itertools import accumulate, chain, repeat
from math import exp, log
from operator import add, truediv
from pathlib import Path
from sys import byteorder, float_info

from ..errors import InvalidInputError, ModelLoadError
from .language_rules import SINGLE_UNIQUE_SCRIPT_LANGUAGES, detect_with_rules, filter_with_rules, split_words

LANGUAGES: tuple[str, ...] = (
    "afr", "ara", "aze", "bel", "ben", "bos", "bul", "cat", "ces", "cym", "dan", "deu", "ell", "eng", "epo", "est",
    "eus", "fas", "fin", "fra", "gle", "guj", "heb", "hin", "hrv", "hun", "hye", "ind", "isl", "ita", "jpn", "kat",
    "kaz", "kor", "lat", "lav", "lit", "lug", "mar", "mkd", "mon", "mri", "msa", "nld", "nno", "nob", "pan", "pol",
    "por", "ron", "rus", "slk", "slv", "sna", "som", "sot", "spa", "srp", "sqi", "swa", "swe", "tam", "tel", "tgl",
    "tha", "tsn", "tso", "tur", "ukr", "urd", "vie", "xho", "yor", "zho", "zul",
)
"""The ISO 639-3 codes of the 75 languages ``select_language`` knows."""

FILE_SUFFIX = ".bin"
"""A language's data file is ``<code>.bin`` (dist/lang/ in the site)."""

MINIMUM_RELATIVE_DISTANCE = 0.5
_LONG_TEXT = 120  # from this many letters on, lingua scores trigrams only
_FLAT_ORDERS = 3  # orders kept as one dict entry per n-gram; the higher ones are grouped by prefix
_MAGIC = b"CSIL"
_VERSION = 1
_PROBS, _UNIQUE, _COMMON = 1, 2, 3
_KNOWN = frozenset(LANGUAGES)


def validate_languages(languages: list[str]) -> list[str]:
    """The candidate codes, deduplicated in first-seen order; an unknown code is an ``InvalidInputError``."""
    seen: dict[str, None] = {}
    for i, code in enumerate(languages):
        if not isinstance(code, str) or code not in _KNOWN:
            raise InvalidInputError(f"unsupported language {code!r}: expected one of the ISO 639-3 codes "
                                    f"{', '.join(LANGUAGES)}", param=f"languages[{i}]")
        seen.setdefault(code, None)
    return list(seen)


def _array(code: str, raw: bytes, offset: int, count: int) -> tuple[array, int]:
    arr = array(code)
    end = offset + count * arr.itemsize
    arr.frombytes(raw[offset:end])
    if byteorder != "little":
        arr.byteswap()
    return arr, end


class _Language:
    """One language's data: compressed sections, decoded on first use.

    Orders 1-3 become one flat dict. Orders 4 and 5, the bulk, stay grouped by prefix (``groups`` maps the
    (n-1)-gram to its continuations' last characters, the index of their numerators and the denominator),
    which decodes about three times faster and takes less memory than a dict entry per n-gram.
    """

    def __init__(self, code: str, data: bytes) -> None:
        if data[:4] != _MAGIC or len(data) < 6 or data[4] != _VERSION:
            raise ModelLoadError(f"language data for {code!r} is not in the expected format", param="languages")
        count = data[5]
        offset = 6 + 6 * count
        self.sections: dict[tuple[int, int], bytes] = {}
        for i in range(count):
            kind, order, length = struct.unpack_from("<BBI", data, 6 + 6 * i)
            self.sections[kind, order] = data[offset:offset + length]
            offset += length
        if offset != len(data):
            raise ModelLoadError(f"language data for {code!r} is truncated", param="languages")
        self.max_order = max((order for kind, order in self.sections if kind == _PROBS), default=0)
        self.order = 0  # probability orders decoded so far (1..order)
        self.probs: dict[str, float] = {}  # n-gram of orders 1-3 -> probability (its log is taken when used)
        self.groups: dict[str, tuple[str, int, int, array]] = {}  # orders 4-5: prefix -> lasts, start, den, nums
        self._keys = [""]  # sorted n-grams of the last decoded order: the next order's prefixes
        self._sets: dict[tuple[int, int], frozenset[str]] = {}

    def ensure_order(self, order: int) -> None:
        """Decode the probability sections up to ``order`` (each needs the one below)."""
        while self.order < min(order, self.max_order):
            n = self.order + 1
            raw = zlib.decompress(self.sections.pop((_PROBS, n)))
            total, groups, codes = struct.unpack_from("<II4s", raw)
            offset = 12
            deltas, offset = _array(chr(codes[0]), raw, offset, groups)
            sizes, offset = _array(chr(codes[1]), raw, offset, groups)
            dens, offset = _array(chr(codes[2]), raw, offset, groups)
            nums, offset = _array(chr(codes[3]), raw, offset, total)
            last_chars = raw[offset:].decode("utf-8")
            prefixes = list(map(self._keys.__getitem__, accumulate(deltas)))
            keys: Iterable[str] = map(add, chain.from_iterable(map(repeat, prefixes, sizes)), last_chars)
            if n < self.max_order:
                self._keys = list(keys)  # the next order's prefixes
                keys = self._keys
            else:
                self._keys = [""]
            if n <= _FLAT_ORDERS:
                values = map(truediv, nums, chain.from_iterable(map(repeat, dens, sizes)))
                self.probs.update(zip(keys, values, strict=True))
            else:
                starts = list(accumulate(sizes, initial=0))
                lasts = map(last_chars.__getitem__, map(slice, starts, starts[1:]))
                self.groups.update(zip(prefixes, zip(lasts, starts, dens, repeat(nums)), strict=False))
            self.order = n

    def ngram_set(self, kind: int, order: int) -> frozenset[str]:
        """The unique (kind 2) or most common (kind 3) n-grams of one order."""
        found = self._sets.get((kind, order))
        if found is None:
            blob = self.sections.get((kind, order))
            if blob is None:
                found = frozenset()
            else:
                raw = zlib.decompress(blob)
                (count,) = struct.unpack_from("<I", raw)
                text = raw[4:].decode("utf-8")
                found = frozenset(text[i:i + order] for i in range(0, count * order, order))
            self._sets[kind, order] = found
        return found


def _ngram_chains(words: list[str], order: int) -> list[tuple[tuple[tuple[str, str], ...], tuple[str, ...]]]:
    """Each distinct n-gram of the words with its prefixes, longest first (lingua's back-off order): those
    longer than 3 as (prefix, last character) for the grouped orders, then the others."""
    grams = {word[i:i + order] for word in words for i in range(len(word) - order + 1)}
    return [(tuple((gram[:k - 1], gram[k - 1]) for k in range(order, _FLAT_ORDERS, -1)),
             tuple(gram[:k] for k in range(min(order, _FLAT_ORDERS), 0, -1))) for gram in grams]


def _log_probability_sum(model: _Language, chains: list[tuple[tuple[tuple[str, str], ...], tuple[str, ...]]]) -> float:
    """Sum of each chain's first known n-gram's log-probability (chains with none add nothing)."""
    get = model.probs.get
    get_group = model.groups.get
    total = 0.0
    for grouped, flat in chains:
        for prefix, last in grouped:
            group = get_group(prefix)
            if group is not None:
                i = group[0].find(last)
                if i >= 0:
                    total += log(group[3][group[1] + i] / group[2])
                    break
        else:
            for gram in flat:
                value = get(gram)
                if value is not None:
                    total += log(value)
                    break
    return total


class LanguageModels:
    """The language data loaded so far, and detection over it."""

    def __init__(self) -> None:
        self._languages: dict[str, _Language] = {}

    def missing(self, languages: list[str]) -> list[str]:
        """The (validated, deduplicated) codes whose data is not loaded yet."""
        return [code for code in validate_languages(languages) if code not in self._languages]

    def add(self, code: str, data: bytes) -> None:
        """Take one language's data file (its bytes); decoding happens lazily, on first use."""
        validate_languages([code])
        self._languages[code] = _Language(code, bytes(data))

    def select_language(self, text: str, languages: list[str]) -> str | None:
        """The language of ``text`` among ``languages``, or None when it cannot be told reliably."""
        candidates = validate_languages(languages)
        absent = [code for code in candidates if code not in self._languages]
        if absent:
            raise ModelLoadError(f"language data not loaded: {', '.join(absent)}", param="languages")
        if not candidates:
            return None
        words = split_words(text)
        if not words:
            return None
        chosen = frozenset(candidates)
        if len(candidates) == 1:
            return self._select_single(words, candidates[0])
        by_rules = detect_with_rules(words, chosen)
        if by_rules is not None:
            # the rules may name a language outside the candidates (Chinese, Japanese): then nothing wins
            return by_rules if by_rules in chosen else None
        filtered = filter_with_rules(words, chosen)
        if len(filtered) == 1:
            return next(iter(filtered))
        confidences = self._confidences(words, filtered)
        if not confidences:
            return None
        ranked = sorted(confidences.items(), key=lambda kv: -kv[1])
        best, best_value = ranked[0]
        second_value = ranked[1][1] if len(ranked) > 1 else 0.0
        if abs(best_value - second_value) < float_info.epsilon:
            return None
        return best if best_value - second_value >= MINIMUM_RELATIVE_DISTANCE else None

    def _select_single(self, words: list[str], code: str) -> str | None:
        """lingua's one-language detector: unique or most common n-grams, then the rules, else nothing."""
        model = self._languages[code]
        for order in range(5, 0, -1):
            if order == 1 and code not in SINGLE_UNIQUE_SCRIPT_LANGUAGES and code not in ("hin", "mar", "jpn"):
                continue
            kinds = (_UNIQUE,) if order == 2 else (_UNIQUE, _COMMON)
            grams = {word[i:i + order] for word in words for i in range(len(word) - order + 1)}
            for kind in kinds:
                if not grams.isdisjoint(model.ngram_set(kind, order)):
                    return code
        return code if detect_with_rules(words, frozenset((code,))) == code else None

    def _confidences(self, words: list[str], filtered: frozenset[str]) -> dict[str, float]:
        """Normalized confidence per candidate left after the rules (only those with a positive one)."""
        letters = sum(map(len, words))
        orders = [3] if letters >= _LONG_TEXT else [n for n in range(1, 6) if n <= letters]
        top = max(orders)
        models = {code: self._languages[code] for code in filtered}
        for model in models.values():
            model.ensure_order(top)
        sums: dict[str, float] = {}
        first_order: dict[str, float] = {}
        unigram_counts: dict[str, int] = {}
        for order in orders:
            chains = _ngram_chains(words, order)
            for code, model in models.items():
                total = _log_probability_sum(model, chains)
                if total < 0:
                    sums[code] = sums.get(code, 0.0) + total
                    if order == orders[0]:
                        first_order[code] = total
                if order == 1:
                    found = sum(1 for _, (gram,) in chains if gram in model.probs)
                    if found:
                        unigram_counts[code] = found
        exps = {}
        for code, total in sums.items():
            if code in unigram_counts:
                total /= unigram_counts[code]
            if total != 0:
                exps[code] = exp(total)
        if not exps:
            return {}
        denominator = sum(exps.values())
        if denominator == 0:
            # every exponent underflowed (long texts): lingua gives the best first-order sum all the confidence
            return {max(first_order, key=first_order.__getitem__): 1.0} if first_order else {}
        return {code: value / denominator for code, value in exps.items() if value > 0}


def load_from_dir(models: LanguageModels, directory: Path, languages: list[str]) -> None:
    """Add the candidates' data files missing from ``models``, read from ``directory`` (CPython side)."""
    for code in models.missing(languages):
        models.add(code, (Path(directory) / f"{code}{FILE_SUFFIX}").read_bytes())
