"""The worker's GGUF header reader (worker/gguf_reader.js), run in node on files gguf-py's GGUFWriter
writes and on the built-in SmolLM2 GGUF: every metadata value and type, every tensor's name, dims,
type, offset and size, the version, alignment and data offset are what gguf-py's GGUFReader reads
from the same file. Hostile files (the valid one truncated or with bytes patched at positions
gguf-py's reader finds) each give a GGUFError naming the problem. One node process reads them all."""

from __future__ import annotations

import json
import math
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
from gguf.quants import quantize

from tests.support.paths import ROOT

SCRIPT = ROOT / "tests" / "support" / "gguf_read.mjs"
Q = GGMLQuantizationType
K_QUANTS = [Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K, Q.Q8_K]
TEXT = "héllo — 日本語 🦙"


def decode(obj: dict[str, Any]) -> Any:
    if set(obj) == {"$int"}:
        return int(obj["$int"])
    if set(obj) == {"$float"}:
        return float(obj["$float"].replace("Infinity", "inf"))
    return obj


def read_with_node(paths: list[Path]) -> list[dict[str, Any]]:
    out = subprocess.run(["node", str(SCRIPT), *map(str, paths)], capture_output=True, text=True, timeout=60,
                         check=True)
    result: list[dict[str, Any]] = json.loads(out.stdout, object_hook=decode)
    return result


def write_gguf(path: Path, *, alignment: int | None = None, extra: dict[str, Any] | None = None) -> None:
    """A GGUF with metadata of every type and tensors of several types (F32, F16, BF16, I8, I32, F64,
    Q8_0 and Q4_0 quantized by gguf-py, K-quants as raw blocks of the right size), 1-D to 4-D."""
    rng = np.random.default_rng(0)
    w = GGUFWriter(str(path), "llama")
    if alignment:
        w.add_custom_alignment(alignment)
    w.add_name(TEXT)
    for name, vtype, value in [("u8", "UINT8", 200), ("i8", "INT8", -100), ("u16", "UINT16", 60000),
                               ("i16", "INT16", -30000), ("u32", "UINT32", 4_000_000_000), ("i32", "INT32", -2**31),
                               ("f32", "FLOAT32", 0.1), ("f32nan", "FLOAT32", math.nan),
                               ("f32inf", "FLOAT32", -math.inf), ("bool", "BOOL", True), ("u64", "UINT64", 7),
                               ("u64big", "UINT64", 2**63 + 5),
                               ("i64", "INT64", -2**62), ("i64small", "INT64", -12), ("f64", "FLOAT64", 1 / 3),
                               ("string", "STRING", TEXT), ("empty", "STRING", "")]:
        w.add_key_value(f"test.{name}", value, GGUFValueType[vtype])
    w.add_array("test.int32s", [1, -2, 3, 2**31 - 1])
    w.add_array("test.floats", [0.5, -1e-7, 3.25])
    w.add_array("test.strings", ["a", TEXT, "", "z"])
    w.add_array("test.bools", [True, False, True])
    w.add_key_value("test.u64s", [1, 2**64 - 1], GGUFValueType.ARRAY, sub_type=GGUFValueType.UINT64)
    w.add_key_value("test.u8s", list(range(256)), GGUFValueType.ARRAY, sub_type=GGUFValueType.UINT8)
    w.add_array("test.nested", [[1, 2], [3, 4, 5]])
    w.add_array("test.nested_strings", [["a", "b"], [TEXT]])
    w.add_array("test.deep", [[[1.5]], [[2.5, 3.5]]])
    for key, value in (extra or {}).items():
        w.add_array(key, value) if isinstance(value, list) else w.add_string(key, value)
    w.add_tensor("dup.tensor.a", rng.standard_normal((4, 8)).astype(np.float32))
    w.add_tensor("dup.tensor.b", rng.standard_normal(16).astype(np.float16))
    w.add_tensor("bf16", rng.integers(0, 256, (3, 2 * 8), dtype=np.uint8), raw_dtype=Q.BF16)
    w.add_tensor("i8", rng.integers(-128, 128, (2, 3, 4), dtype=np.int8))
    w.add_tensor("i32", rng.integers(-9, 9, (2, 2, 2, 5), dtype=np.int32))
    w.add_tensor("f64", rng.standard_normal(3))
    for qtype in (Q.Q8_0, Q.Q4_0):
        values = rng.standard_normal((5, 64)).astype(np.float32)
        w.add_tensor(f"q.{qtype.name}", quantize(values, qtype), raw_dtype=qtype)
    for qtype in K_QUANTS:
        block, size = GGML_QUANT_SIZES[qtype]
        w.add_tensor(f"k.{qtype.name}", rng.integers(0, 256, (3, 2 * size), dtype=np.uint8), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def type_name(types: list[GGUFValueType]) -> str:
    return f"array<{type_name(types[1:])}>" if types[0] == GGUFValueType.ARRAY else types[0].name.lower()


def flat(value: Any) -> list[Any]:
    return [x for v in value for x in flat(v)] if isinstance(value, list) else [value]


def same(mine: Any, ref: Any) -> bool:
    """Equal values of equal kinds; a float may come as an int from JSON (JS has one number type)."""
    if isinstance(mine, list) or isinstance(ref, list):
        return (isinstance(mine, list) and isinstance(ref, list) and len(mine) == len(ref)
                and all(map(same, mine, ref)))
    if isinstance(ref, float):
        return type(mine) in (int, float) and (float(mine) == ref or math.isnan(ref) and math.isnan(mine))
    return type(mine) is type(ref) and mine == ref


def assert_reads_as_gguf_py(path: Path, got: dict[str, Any]) -> None:
    assert "header" in got, got
    header = got["header"]
    r = GGUFReader(path)
    fields = {k: f for k, f in r.fields.items() if not k.startswith("GGUF.")}
    assert header["version"] == int(r.fields["GGUF.version"].parts[0][0])
    assert list(header["metadata"]) == list(fields)
    for key, field in fields.items():
        assert header["metadataTypes"][key] == type_name(field.types), key
        mine = header["metadata"][key]
        want = field.contents()
        # gguf-py gives nested arrays flat
        assert same(flat(mine), flat(want)), key
    assert header["alignment"] == r.alignment
    assert header["dataOffset"] == r.data_offset
    assert header["architecture"] == fields["general.architecture"].contents()
    assert header["fileSize"] == path.stat().st_size
    assert [t["name"] for t in header["tensors"]] == [t.name for t in r.tensors]
    for t, ref in zip(header["tensors"], r.tensors, strict=True):
        assert t["dims"] == [int(d) for d in ref.shape], t["name"]
        assert (t["type"], t["typeName"]) == (int(ref.tensor_type), ref.tensor_type.name), t["name"]
        assert (t["offset"], t["size"]) == (ref.data_offset, ref.n_bytes), t["name"]
    assert got["types"] == dict(Counter(t.tensor_type.name for t in r.tensors))


def offset_of(r: GGUFReader, part: np.ndarray) -> int:
    return int(part.ctypes.data - r.data.ctypes.data)


def patch(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new):]


def u32(v: int) -> bytes:
    return v.to_bytes(4, "little")


def u64(v: int) -> bytes:
    return v.to_bytes(8, "little")


def hostile_files(base: Path) -> dict[str, tuple[bytes, str]]:
    """name -> (the file, a pattern its GGUFError must match); positions found by gguf-py's reader."""
    data = base.read_bytes()
    r = GGUFReader(base)
    kv = {k: f for k, f in r.fields.items()}
    ti = {t.name: t.field.parts for t in r.tensors}  # name_len, name, n_dims, dims, type, offset
    at = lambda part: offset_of(r, part)  # noqa: E731
    end = max(t.data_offset + t.n_bytes for t in r.tensors)
    data_size = len(data) - r.data_offset
    second = r.tensors[1]
    cases: dict[str, tuple[bytes, str]] = {}
    for cut in np.linspace(0, end - 1, 20).astype(int):
        cases[f"truncated at {cut}"] = (data[:cut], r"truncated|past its end|bytes left")
    cases.update({
        "bad magic": (patch(data, 0, b"GGML"), "not a GGUF file"),
        "big-endian": (patch(data, kv["GGUF.version"].offset, (3).to_bytes(4, "big")), "big-endian"),
        "version 1": (patch(data, kv["GGUF.version"].offset, u32(1)), "v1"),
        "version 4": (patch(data, kv["GGUF.version"].offset, u32(4)), "version 4"),
        "tensor count 2^40": (patch(data, kv["GGUF.tensor_count"].offset, u64(2**40)), "1099511627776 tensors"),
        "key count 2^62": (patch(data, kv["GGUF.kv_count"].offset, u64(2**62)), f"{2**62} metadata keys"),
        "key length 2^40": (patch(data, kv["test.u8"].offset, u64(2**40)), r"metadata key #\d+.*1099511627776 bytes"),
        "key not UTF-8": (patch(data, at(kv["test.u8"].parts[1]), b"\xff"), "not valid UTF-8"),
        "duplicate key": (patch(data, at(kv["test.u16"].parts[1]), b"test.u32"), '"test.u32": the key appears twice'),
        "string length 2^40": (patch(data, at(kv["test.string"].parts[3]), u64(2**40)),
                               '"test.string".*1099511627776 bytes of string'),
        "array length 2^40": (patch(data, at(kv["test.strings"].parts[4]), u64(2**40)),
                              '"test.strings".*1099511627776 array items'),
        "array length + 1000": (patch(data, at(kv["test.int32s"].parts[4]), u64(4 + 1000)), "."),
        "unknown value type": (patch(data, at(kv["test.u8"].parts[2]), u32(13)), '"test.u8": unknown value type 13'),
        "unknown array item type": (patch(data, at(kv["test.int32s"].parts[3]), u32(99)),
                                    '"test.int32s": unknown array item type 99'),
        "n_dims 5": (patch(data, at(ti["i8"][2]), u32(5)), '"i8": 5 dims, more than GGML_MAX_DIMS'),
        "dim 2^40": (patch(data, at(ti["q.Q8_0"][3]) + 8, u64(2**40)), '"q.Q8_0": .*past its end'),
        "dims overflowing 2^53": (patch(data, at(ti["dup.tensor.a"][3]), u64(2**30) + u64(2**30)),
                                  '"dup.tensor.a": dims 1073741824 x 1073741824: too many values'),
        "unknown ggml type": (patch(data, at(ti["f64"][4]), u32(99)), '"f64": unknown ggml type 99'),
        "retired ggml type": (patch(data, at(ti["f64"][4]), u32(4)), '"f64": unknown ggml type 4'),
        "row not whole blocks": (patch(data, at(ti["q.Q4_0"][3]), u64(48)),
                                 '"q.Q4_0": rows of 48 values, not whole Q4_0'),
        "misaligned offset": (patch(data, at(ti[second.name][5]), u64(second.data_offset - r.data_offset + 1)),
                              f'"{second.name}": offset .* not a multiple of the alignment 32'),
        "offset past the data": (patch(data, at(ti["i32"][5]), u64(data_size // 32 * 32)), '"i32": .*past its end'),
        "offset 2^63": (patch(data, at(ti["i32"][5]), u64(2**63)), '"i32": .*past its end'),
        "overlapping tensors": (patch(data, at(ti["k.Q3_K"][5]), u64(r.tensors[-1].data_offset - r.data_offset)),
                                '"k.Q(3|8)_K" at offset .* overlaps tensor "k.Q(3|8)_K"'),
        "duplicate tensor name": (patch(data, at(ti["dup.tensor.b"][1]), b"dup.tensor.a"),
                                  '"dup.tensor.a": the name appears twice'),
    })
    return cases


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every file the tests read, by name: the GGUFWriter-made ones, their hostile variants, SmolLM2's."""
    from buildtools.deps.llama_server import _model  # the built-in model's GGUF, extracted from its wheel

    tmp = tmp_path_factory.mktemp("gguf")
    out = {"written": tmp / "written.gguf", "aligned 64": tmp / "aligned.gguf", "smollm2": _model()}
    write_gguf(out["written"])
    write_gguf(out["aligned 64"], alignment=64)
    v2 = tmp / "v2.gguf"
    v2.write_bytes(patch(out["written"].read_bytes(), 4, u32(2)))
    out["version 2"] = v2
    odd = {"bad alignment": (tmp / "odd_align.gguf", {}, 48), "long name": (tmp / "long_name.gguf", {}, None),
           "deep arrays": (tmp / "deep.gguf", {"test.deeper": [[[[[[[[[1]]]]]]]]]}, None)}
    for name, (path, extra, _) in odd.items():
        write_gguf(path, alignment=64 if name == "bad alignment" else None, extra=extra)
        out[name] = path
    r = GGUFReader(out["bad alignment"])
    align = r.fields["general.alignment"]
    bad = patch(out["bad alignment"].read_bytes(), offset_of(r, align.parts[-1]), u32(48))
    out["bad alignment"].write_bytes(bad)
    del r
    w = GGUFWriter(str(out["long name"]), "llama")
    w.add_tensor("x" * 64, np.zeros(4, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    for name, (data, _) in hostile_files(out["written"]).items():
        path = tmp / f"hostile_{len(out)}.gguf"
        path.write_bytes(data)
        out[name] = path
    for name, data in scrambled(out["written"]).items():
        path = tmp / f"scrambled_{len(out)}.gguf"
        path.write_bytes(data)
        out[name] = path
    return out


def scrambled(base: Path, n: int = 100) -> dict[str, bytes]:
    """The file with 1 to 8 header bytes at random places set to random values (or 0xff)."""
    data = base.read_bytes()
    header = GGUFReader(base).data_offset
    rng = np.random.default_rng(1)
    out = {}
    for i in range(n):
        at, width = int(rng.integers(0, header)), int(rng.integers(1, 9))
        new = bytes([255] * width) if i % 4 == 0 else rng.integers(0, 256, width, dtype=np.uint8).tobytes()
        out[f"scrambled {i}: {width} bytes at {at}"] = patch(data, at, new)[:len(data)]
    return out


@pytest.fixture(scope="module")
def read(files: dict[str, Path]) -> dict[str, dict[str, Any]]:
    return dict(zip(files, read_with_node(list(files.values())), strict=True))


@pytest.mark.parametrize("name", ["written", "aligned 64", "version 2", "smollm2"])
def test_the_reader_reads_what_gguf_py_reads(name: str, files: dict[str, Path], read: dict[str, Any]) -> None:
    assert_reads_as_gguf_py(files[name], read[name])


def test_values_keep_their_types_and_64_bit_integers_are_bigints_only_past_2_53(read: dict[str, Any]) -> None:
    header = read["written"]["header"]
    meta, types = header["metadata"], header["metadataTypes"]
    assert meta["test.u64big"] == 2**63 + 5 and meta["test.u64"] == 7 and meta["test.i64"] == -2**62
    out = subprocess.run(["node", str(SCRIPT), str(ROOT / "nothing.gguf")], capture_output=True, text=True, timeout=60)
    assert json.loads(out.stdout)[0]["error"]["name"] == "Error"  # no file: an fs error, not a GGUFError
    assert meta["test.nested"] == [[1, 2], [3, 4, 5]] and types["test.nested"] == "array<array<int32>>"
    assert meta["test.nested_strings"] == [["a", "b"], [TEXT]] and meta["test.deep"] == [[[1.5]], [[2.5, 3.5]]]
    assert types["test.deep"] == "array<array<array<float32>>>" and types["test.u64s"] == "array<uint64>"
    assert meta["test.string"] == TEXT and meta["general.name"] == TEXT and meta["test.empty"] == ""
    assert header["architecture"] == "llama" and header["alignment"] == 32
    assert read["aligned 64"]["header"]["alignment"] == 64 and read["aligned 64"]["header"]["dataOffset"] % 64 == 0


def test_the_raw_json_has_bigints_only_past_2_53(files: dict[str, Path]) -> None:
    out = subprocess.run(["node", str(SCRIPT), str(files["written"])], capture_output=True, text=True, timeout=60)
    meta = json.loads(out.stdout)[0]["header"]["metadata"]
    assert meta["test.u64"] == 7 and meta["test.i64small"] == -12
    assert meta["test.u64big"] == {"$int": str(2**63 + 5)} and meta["test.i64"] == {"$int": str(-2**62)}


def test_the_header_is_read_without_the_tensor_data(files: dict[str, Path], read: dict[str, Any]) -> None:
    got = read["smollm2"]
    assert got["header"]["dataOffset"] < got["bytesRead"] <= got["header"]["dataOffset"] + 2**20
    assert got["header"]["fileSize"] > 20 * got["bytesRead"]
    assert got["types"] == {"Q8_0": 1, "F32": 61, "Q4_1": 210}


def test_the_type_table_is_gguf_py_s() -> None:
    script = """import(process.argv[1]).then(({ GGML_TYPES }) =>
        process.stdout.write(JSON.stringify([...GGML_TYPES.values()])));"""
    out = subprocess.run(["node", "--input-type=module", "-e", script, (ROOT / "worker" / "gguf_types.js").as_uri()],
                         capture_output=True, text=True, check=True, timeout=60)
    mine = {t["id"]: (t["name"], t["block"], t["bytes"]) for t in json.loads(out.stdout)}
    assert mine == {int(t): (t.name, *sizes) for t, sizes in GGML_QUANT_SIZES.items()}


HOSTILE = {
    "bad alignment": "general.alignment is 48",
    "long name": r"tensor #0 .*64 bytes of string .* more than the limit of 63",
    "deep arrays": r'"test.deeper": arrays nested deeper than 8',
}


def test_hostile_files_give_a_gguf_error_naming_the_problem(files: dict[str, Path], read: dict[str, Any]) -> None:
    import re

    expected = {**{name: pattern for name, (_, pattern) in hostile_files(files["written"]).items()}, **HOSTILE}
    assert sum(name.startswith("truncated") for name in expected) == 20
    wrong = {}
    for name, pattern in expected.items():
        error = read[name].get("error")
        if not (error and error["name"] == "GGUFError" and error["isGGUFError"]
                and re.search(pattern, error["message"])):
            wrong[name] = read[name].get("error") or "read without an error"
    assert not wrong, json.dumps(wrong, indent=1)


SOURCES = """
const [, url, hex, path] = process.argv;
const { readGGUFHeader, blobSource, bytesSource } = await import(url);
const { readFile } = await import("node:fs/promises");
const prefix = Uint8Array.from(hex.match(/../g), (h) => parseInt(h, 16));
/** a 1 TB file of zeros after `prefix`, read only where asked */
const huge = { size: 2 ** 40, read: async (offset, length) => {
  const out = new Uint8Array(length);
  out.set(prefix.subarray(offset, offset + length));
  return out;
} };
const file = new Uint8Array(await readFile(path));
const short = { size: file.length, read: async (offset, length) => file.subarray(offset, offset + length - 1) };
const outcome = (p) => p.then((h) => JSON.stringify([h.metadata, h.tensors], (k, v) =>
  v instanceof Map ? Object.fromEntries(v) : ArrayBuffer.isView(v) ? Array.from(v, String) : typeof v === "bigint"
    ? String(v) : v), (e) => `${e.name}: ${e.message}`);
const results = [await outcome(readGGUFHeader(huge)), await outcome(readGGUFHeader(short)),
  await outcome(readGGUFHeader(bytesSource(file))), await outcome(readGGUFHeader(blobSource(new Blob([file])))),
  await outcome(readGGUFHeader({ size: 2 ** 60, read: huge.read }))];
process.stdout.write(JSON.stringify(results));
"""


def test_limits_short_reads_and_the_blob_and_bytes_sources(files: dict[str, Path]) -> None:
    """A 1 TB file (made up, read where asked) whose one key is an array of 2^25 strings passes the
    bytes-left checks and stops at the limit on items; a source reading a byte short, an unsafe file
    size: GGUFErrors; a Blob and bytes in memory read as the file does."""
    prefix = b"GGUF" + u32(3) + u64(0) + u64(1) + u64(1) + b"k" + u32(9) + u32(8) + u64(2**25)
    module = (ROOT / "worker" / "gguf_reader.js").as_uri()
    out = subprocess.run(["node", "--input-type=module", "-e", SOURCES, module, prefix.hex(), str(files["written"])],
                         capture_output=True, text=True, check=True, timeout=60)
    huge, short, from_bytes, from_blob, unsafe = json.loads(out.stdout)
    assert huge == 'GGUFError: metadata key "k": more than 16777216 strings, bools and arrays in metadata arrays'
    assert short.startswith("GGUFError: the header: reading ") and short.endswith(" bytes")
    assert unsafe == "GGUFError: a file size of 1152921504606847000 bytes"  # 2**60 as JS writes it
    assert from_bytes == from_blob and json.loads(from_bytes)[0]["test.string"] == TEXT


def test_scrambled_headers_read_or_give_a_gguf_error(read: dict[str, Any]) -> None:
    """(never another error: no RangeError, no TypeError)"""
    scrambled = {name: got for name, got in read.items() if name.startswith("scrambled")}
    assert len(scrambled) == 100
    assert not {name: got["error"] for name, got in scrambled.items()
                if "header" not in got and not (got["error"]["name"] == "GGUFError" and got["error"]["isGGUFError"])}
    assert sum("error" in got for got in scrambled.values()) > 50
