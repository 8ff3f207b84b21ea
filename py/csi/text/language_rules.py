"""lingua's rule-based language filters for ``csi.text.language``: scripts, tokens, unique characters.

Scripts follow Rust regex's ``\\p{Script}`` (the Script property, not Script_Extensions), as lingua 2.x uses.
The script ranges below were generated from the Unicode Character Database (Script property) once.
The tables are lingua 2.1.1's, checked character by character against it; they differ from the pure-Python
lingua 1.4's in a few places (Ukrainian not among the "Щщ" languages, German not among the "Çç", "Óó",
"ÁáÍíÚú", "Éé" ones; an alphabet tie goes to the first alphabet).
"""

from __future__ import annotations

from bisect import bisect_right

# lingua's alphabets, in its enum order (the order rules test them in).
ALPHABETS = ("ARABIC", "ARMENIAN", "BENGALI", "CYRILLIC", "DEVANAGARI", "GEORGIAN", "GREEK", "GUJARATI", "GURMUKHI",
             "HAN", "HANGUL", "HEBREW", "HIRAGANA", "KATAKANA", "LATIN", "TAMIL", "TELUGU", "THAI")
BIT = {name: 1 << i for i, name in enumerate(ALPHABETS)}

_SCRIPT_RANGES = {
    "ARABIC": (
        "600-604 606-60b 60d-61a 61c-61e 620-63f 641-64a 656-66f 671-6dc 6de-6ff 750-77f 870-891 897-8e1 "
        "8e3-8ff fb50-fd3d fd40-fdcf fdf0-fdff fe70-fe74 fe76-fefc 10e60-10e7e 10ec2-10ec7 10ed0-10ed8 "
        "10efa-10eff 1ee00-1ee03 1ee05-1ee1f 1ee21-1ee22 1ee24 1ee27 1ee29-1ee32 1ee34-1ee37 1ee39 1ee3b "
        "1ee42 1ee47 1ee49 1ee4b 1ee4d-1ee4f 1ee51-1ee52 1ee54 1ee57 1ee59 1ee5b 1ee5d 1ee5f 1ee61-1ee62 "
        "1ee64 1ee67-1ee6a 1ee6c-1ee72 1ee74-1ee77 1ee79-1ee7c 1ee7e 1ee80-1ee89 1ee8b-1ee9b 1eea1-1eea3 "
        "1eea5-1eea9 1eeab-1eebb 1eef0-1eef1 "
    ),
    "ARMENIAN": (
        "531-556 559-58a 58d-58f fb13-fb17 "
    ),
    "BENGALI": (
        "980-983 985-98c 98f-990 993-9a8 9aa-9b0 9b2 9b6-9b9 9bc-9c4 9c7-9c8 9cb-9ce 9d7 9dc-9dd 9df-9e3 "
        "9e6-9fe "
    ),
    "CYRILLIC": (
        "400-484 487-52f 1c80-1c8a 1d2b 1d78 2de0-2dff a640-a69f fe2e-fe2f 1e030-1e06d 1e08f "
    ),
    "DEVANAGARI": (
        "900-950 955-963 966-97f a8e0-a8ff 11b00-11b09 "
    ),
    "GEORGIAN": (
        "10a0-10c5 10c7 10cd 10d0-10fa 10fc-10ff 1c90-1cba 1cbd-1cbf 2d00-2d25 2d27 2d2d "
    ),
    "GREEK": (
        "370-373 375-377 37a-37d 37f 384 386 388-38a 38c 38e-3a1 3a3-3e1 3f0-3ff 1d26-1d2a 1d5d-1d61 "
        "1d66-1d6a 1dbf 1f00-1f15 1f18-1f1d 1f20-1f45 1f48-1f4d 1f50-1f57 1f59 1f5b 1f5d 1f5f-1f7d 1f80-1fb4 "
        "1fb6-1fc4 1fc6-1fd3 1fd6-1fdb 1fdd-1fef 1ff2-1ff4 1ff6-1ffe 2126 ab65 10140-1018e 101a0 1d200-1d245 "
    ),
    "GUJARATI": (
        "a81-a83 a85-a8d a8f-a91 a93-aa8 aaa-ab0 ab2-ab3 ab5-ab9 abc-ac5 ac7-ac9 acb-acd ad0 ae0-ae3 ae6-af1 "
        "af9-aff "
    ),
    "GURMUKHI": (
        "a01-a03 a05-a0a a0f-a10 a13-a28 a2a-a30 a32-a33 a35-a36 a38-a39 a3c a3e-a42 a47-a48 a4b-a4d a51 "
        "a59-a5c a5e a66-a76 "
    ),
    "HAN": (
        "2e80-2e99 2e9b-2ef3 2f00-2fd5 3005 3007 3021-3029 3038-303b 3400-4dbf 4e00-9fff f900-fa6d fa70-fad9 "
        "16fe2-16fe3 16ff0-16ff6 20000-2a6df 2a700-2b81d 2b820-2cead 2ceb0-2ebe0 2ebf0-2ee5d 2f800-2fa1d "
        "30000-3134a 31350-33479 "
    ),
    "HANGUL": (
        "1100-11ff 302e-302f 3131-318e 3200-321e 3260-327e a960-a97c ac00-d7a3 d7b0-d7c6 d7cb-d7fb ffa0-ffbe "
        "ffc2-ffc7 ffca-ffcf ffd2-ffd7 ffda-ffdc "
    ),
    "HEBREW": (
        "591-5c7 5d0-5ea 5ef-5f4 fb1d-fb36 fb38-fb3c fb3e fb40-fb41 fb43-fb44 fb46-fb4f "
    ),
    "HIRAGANA": (
        "3041-3096 309d-309f 1b001-1b11f 1b132 1b150-1b152 1f200 "
    ),
    "KATAKANA": (
        "30a1-30fa 30fd-30ff 31f0-31ff 32d0-32fe 3300-3357 ff66-ff6f ff71-ff9d 1aff0-1aff3 1aff5-1affb "
        "1affd-1affe 1b000 1b120-1b122 1b155 1b164-1b167 "
    ),
    "LATIN": (
        "41-5a 61-7a aa ba c0-d6 d8-f6 f8-2b8 2e0-2e4 1d00-1d25 1d2c-1d5c 1d62-1d65 1d6b-1d77 1d79-1dbe "
        "1e00-1eff 2071 207f 2090-209c 212a-212b 2132 214e 2160-2188 2c60-2c7f a722-a787 a78b-a7dc a7f1-a7ff "
        "ab30-ab5a ab5c-ab64 ab66-ab69 fb00-fb06 ff21-ff3a ff41-ff5a 10780-10785 10787-107b0 107b2-107ba "
        "1df00-1df1e 1df25-1df2a "
    ),
    "TAMIL": (
        "b82-b83 b85-b8a b8e-b90 b92-b95 b99-b9a b9c b9e-b9f ba3-ba4 ba8-baa bae-bb9 bbe-bc2 bc6-bc8 bca-bcd "
        "bd0 bd7 be6-bfa 11fc0-11ff1 11fff "
    ),
    "TELUGU": (
        "c00-c0c c0e-c10 c12-c28 c2a-c39 c3c-c44 c46-c48 c4a-c4d c55-c56 c58-c5a c5c-c5d c60-c63 c66-c6f "
        "c77-c7f "
    ),
    "THAI": (
        "e01-e3a e40-e5b "
    ),
}


def _parse_ranges(text: str) -> tuple[list[int], list[int]]:
    starts: list[int] = []
    ends: list[int] = []
    for item in text.split():
        lo, _, hi = item.partition("-")
        starts.append(int(lo, 16))
        ends.append(int(hi or lo, 16))
    return starts, ends


_RANGES = {BIT[name]: _parse_ranges("".join(parts)) for name, parts in _SCRIPT_RANGES.items()}
_MASKS: dict[str, int] = {}


def char_mask(ch: str) -> int:
    """Bit set of the alphabets (scripts) ``ch`` belongs to; memoized."""
    mask = _MASKS.get(ch)
    if mask is None:
        cp = ord(ch)
        mask = 0
        for bit, (starts, ends) in _RANGES.items():
            i = bisect_right(starts, cp) - 1
            if i >= 0 and cp <= ends[i]:
                mask |= bit
        if len(_MASKS) < 100_000:
            _MASKS[ch] = mask
    return mask


def word_mask(word: str) -> int:
    """Alphabets every character of ``word`` belongs to."""
    mask = -1
    for ch in word:
        mask &= char_mask(ch)
    return mask if word else 0


# lingua's tokenizer, an alternation tried in this order at each position: runs of one script, or a single
# character (Han, Hiragana, Katakana), else a run of letters (\p{L}, which str.isalpha() is).
_TOKEN_RULES = tuple((BIT[name], run) for name, run in (
    ("BENGALI", True), ("DEVANAGARI", True), ("GUJARATI", True), ("GURMUKHI", True), ("HAN", False),
    ("HANGUL", True), ("HIRAGANA", False), ("KATAKANA", False), ("TAMIL", True), ("TELUGU", True), ("THAI", True)))
_TOKEN_BITS = 0
for _bit, _ in _TOKEN_RULES:
    _TOKEN_BITS |= _bit


def split_words(text: str) -> list[str]:
    """The lowercased text's words, as lingua splits them (punctuation, digits, spaces and symbols dropped)."""
    text = text.lower()
    words = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        mask = char_mask(ch) & _TOKEN_BITS
        j = i + 1
        if mask:
            for bit, run in _TOKEN_RULES:
                if mask & bit:
                    if run:
                        while j < n and char_mask(text[j]) & bit:
                            j += 1
                    break
        elif ch.isalpha():
            while j < n and text[j].isalpha():
                j += 1
        else:
            i = j
            continue
        words.append(text[i:j])
        i = j
    return words


LANGUAGE_ALPHABETS: dict[str, int] = {
    "ara": BIT["ARABIC"], "fas": BIT["ARABIC"], "urd": BIT["ARABIC"], "hye": BIT["ARMENIAN"], "ben": BIT["BENGALI"],
    "bel": BIT["CYRILLIC"], "bul": BIT["CYRILLIC"], "kaz": BIT["CYRILLIC"], "mkd": BIT["CYRILLIC"],
    "mon": BIT["CYRILLIC"], "rus": BIT["CYRILLIC"], "srp": BIT["CYRILLIC"], "ukr": BIT["CYRILLIC"],
    "hin": BIT["DEVANAGARI"], "mar": BIT["DEVANAGARI"], "kat": BIT["GEORGIAN"], "ell": BIT["GREEK"],
    "guj": BIT["GUJARATI"], "pan": BIT["GURMUKHI"], "zho": BIT["HAN"], "kor": BIT["HANGUL"], "heb": BIT["HEBREW"],
    "jpn": BIT["HAN"] | BIT["HIRAGANA"] | BIT["KATAKANA"], "tam": BIT["TAMIL"], "tel": BIT["TELUGU"],
    "tha": BIT["THAI"],
}
"""Each language's alphabets; the languages not listed are written in Latin only."""

# Alphabets only one of the 75 languages uses.
SINGLE_LANGUAGE_ALPHABETS: dict[int, str] = {
    BIT[name]: code for name, code in (
        ("ARMENIAN", "hye"), ("BENGALI", "ben"), ("GEORGIAN", "kat"), ("GREEK", "ell"), ("GUJARATI", "guj"),
        ("GURMUKHI", "pan"), ("HANGUL", "kor"), ("HEBREW", "heb"), ("HIRAGANA", "jpn"), ("KATAKANA", "jpn"),
        ("TAMIL", "tam"), ("TELUGU", "tel"), ("THAI", "tha"))
}
# Languages whose only alphabet is one of those.
SINGLE_UNIQUE_SCRIPT_LANGUAGES = frozenset({"ben", "ell", "guj", "heb", "hye", "kat", "kor", "pan", "tam", "tel",
                                            "tha"})

UNIQUE_CHARACTERS: dict[str, str] = {
    "aze": "Əə", "cat": "Ïï", "ces": "ĚěŘřŮů", "deu": "ß", "epo": "ĈĉĜĝĤĥĴĵŜŝŬŭ", "hun": "ŐőŰű",
    "kaz": "ӘәҒғҚқҢңҰұ", "lav": "ĢģĶķĻļŅņ", "lit": "ĖėĮįŲų", "mar": "ळ", "mkd": "ЃѓЅѕЌќЏџ", "pol": "ŁłŃńŚśŹź",
    "ron": "Țţ", "slk": "ĹĺĽľŔŕ", "spa": "¿¡", "srp": "ЂђЋћ", "ukr": "ҐґЄєЇї", "yor": "Ṣṣ",
    "vie": "ẰằẦầẲẳẨẩẴẵẪẫẮắẤấẠạẶặẬậỀềẺẻỂểẼẽỄễẾếỆệỈỉĨĩỊịƠơỒồỜờỎỏỔổỞởỖỗỠỡỐốỚớỘộỢợƯưỪừỦủỬửŨũỮữỨứỤụỰựỲỳỶỷỸỹỴỵ",
}
"""Characters that (among the 75) only this language uses."""

_SHARED_CHARACTERS = (
    ("Ãã", "por vie"), ("ĄąĘę", "lit pol"), ("Żż", "pol ron"), ("Îî", "fra ron"), ("Ññ", "eus spa"),
    ("ŇňŤť", "ces slk"), ("Ăă", "ron vie"), ("İıĞğ", "aze tur"), ("ЈјЉљЊњ", "mkd srp"), ("ẸẹỌọ", "vie yor"),
    ("ÐðÞþ", "isl tur"), ("Ûû", "fra hun"), ("Ōō", "mri yor"), ("ӨөҮү", "kaz mon"), ("ĀāĒēĪī", "lav mri yor"),
    ("Şş", "aze ron tur"), ("Ďď", "ces ron slk"), ("Ćć", "bos hrv pol"), ("Đđ", "bos hrv vie"),
    ("Іі", "bel kaz ukr"), ("Ìì", "ita vie yor"), ("Øø", "dan nno nob"), ("Ūū", "lav lit mri yor"),
    ("Ëë", "afr fra nld sqi"), ("ÈèÙù", "fra ita vie yor"), ("Êê", "afr fra por vie"), ("Õõ", "est hun por vie"),
    ("Ôô", "fra por slk vie"), ("ЁёЫыЭэ", "bel kaz mon rus"), ("Щщ", "bul kaz mon rus"), ("Ъъ", "bul kaz mon rus"),
    ("Òò", "cat ita vie yor"), ("Ææ", "dan isl nno nob"), ("Åå", "dan nno nob swe"), ("Ââ", "fra por ron tur vie"),
    ("Ýý", "ces isl slk tur vie"), ("Ää", "deu est fin slk swe"), ("Àà", "cat fra ita por vie"),
    ("Üü", "aze cat deu est hun spa tur"), ("ČčŠšŽž", "bos ces hrv lav lit slk slv"),
    ("Çç", "aze cat eus fra por sqi tur"), ("Öö", "aze deu est fin hun isl swe tur"),
    ("Óó", "cat gle hun isl pol por slk spa vie yor"), ("ÁáÍíÚú", "cat ces gle hun isl por slk spa vie yor"),
    ("Éé", "cat ces fra gle hun isl ita por slk spa vie yor"),
)
CHARS_TO_LANGUAGES = tuple((chars, frozenset(codes.split())) for chars, codes in _SHARED_CHARACTERS)
"""Characters shared by a few languages: a word holding one votes for them."""

_HAN, _JAPANESE = BIT["HAN"], BIT["HIRAGANA"] | BIT["KATAKANA"] | BIT["HAN"]
_UNIQUE_SCRIPTS = BIT["LATIN"] | BIT["CYRILLIC"] | BIT["DEVANAGARI"]


def alphabets_of(code: str) -> int:
    return LANGUAGE_ALPHABETS.get(code, BIT["LATIN"])


def detect_with_rules(words: list[str], languages: frozenset[str]) -> str | None:
    """The language the words' scripts or unique characters decide on, if they do."""
    single = [(bit, code) for bit, code in SINGLE_LANGUAGE_ALPHABETS.items() if code in languages]
    with_unique = [(code, chars) for code, chars in UNIQUE_CHARACTERS.items() if code in languages]
    totals: dict[str | None, int] = {}
    for word in words:
        counts: dict[str, int] = {}
        for ch in word:
            mask = char_mask(ch)
            for bit, code in single:
                if mask & bit:
                    counts[code] = counts.get(code, 0) + 1
                    break
            else:
                if mask & _HAN:
                    counts["zho"] = counts.get("zho", 0) + 1
                elif mask & _JAPANESE:
                    counts["jpn"] = counts.get("jpn", 0) + 1
                elif mask & _UNIQUE_SCRIPTS:
                    for code, chars in with_unique:
                        if ch in chars:
                            counts[code] = counts.get(code, 0) + 1
        found: str | None = None
        if len(counts) == 1:
            (only,) = counts
            found = only if only in languages else None
        elif "zho" in counts and "jpn" in counts:
            found = "jpn"
        elif counts:
            (first, first_count), (_, second_count) = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
            if first_count > second_count and first in languages:
                found = first
        totals[found] = totals.get(found, 0) + 1
    if totals.get(None, 0) < len(words) * 0.5:
        totals.pop(None, None)
    if not totals:
        return None
    if len(totals) == 1:
        return next(iter(totals))
    (top, top_count), (second, second_count) = sorted(totals.items(), key=lambda kv: -kv[1])[:2]
    if {top, second} == {"zho", "jpn"}:
        return "jpn"
    return None if top_count == second_count else top


def filter_with_rules(words: list[str], languages: frozenset[str]) -> frozenset[str]:
    """The candidates left once the dominant alphabet and the characters shared by few languages are known."""
    detected: dict[int, int] = {}
    for word in words:
        mask = word_mask(word)
        if mask:
            bit = mask & -mask  # the first alphabet in lingua's order
            detected[bit] = detected.get(bit, 0) + len(word)
    if not detected:
        return languages
    if len(detected) > 1 and len(set(detected.values())) == 1:
        return languages
    alphabet = max(sorted(detected), key=detected.__getitem__)  # a tie goes to the first in lingua's order
    filtered = frozenset(code for code in languages if alphabets_of(code) & alphabet)
    counts: dict[str, int] = {}
    for chars, codes in CHARS_TO_LANGUAGES:
        relevant = codes & filtered
        if not relevant:
            continue
        for word in words:
            for ch in chars:
                if ch in word:
                    for code in relevant:
                        counts[code] = counts.get(code, 0) + 1
    half = len(words) * 0.5
    subset = frozenset(code for code, count in counts.items() if count >= half)
    return subset or filtered
