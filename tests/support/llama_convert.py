"""llama.cpp's own Hugging Face -> GGUF converter (``convert_hf_to_gguf.py``), as the tests run it.

It ships in the sdist of the llama-cpp-python the tests already build (``buildtools/deps/llama_server``,
same version): the sdist is fetched once with pip (sha256 pinned) and the converter, its
``conversion`` package and its own ``gguf-py`` are extracted under ``.cache/llama-convert/``. It runs
in a subprocess of this venv's Python, with two stand-ins that touch only the tokenizer, not the
weights or the model's metadata:

- tiny-chat's byte-level BPE tokenizer is not in the converter's table of known pre-tokenizers
  (it identifies them by hashing their output), so the converter is told it is ``gpt-2`` (llama.cpp's
  name for GPT-2's), which it is (GPT-2's regex split, byte-level);
- ``sentencepiece`` is not installed here; a stand-in module makes the converter's optional
  sentencepiece attempt fail as it does when ``tokenizer.model`` is absent, so it falls back to BPE.

Converted files are cached by a digest of the converter's version, the options and the model
folder's bytes.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from buildtools.deps.llama_server import VERSION
from tests.support.paths import ROOT

SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"  # llama_cpp_python-0.3.36.tar.gz
HOME = (ROOT / ".cache").resolve() / "llama-convert"
# general.name: llama.cpp special-cases some names (a "phi3" one looks up Phi-3's own special tokens)
MODEL_NAME = "csi-tiny"
MEMBERS = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/")

RUNNER = """
import runpy, sys
sys.path.insert(0, sys.argv[1])
import conversion.base as base
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "gpt-2"  # tiny-chat's split is GPT-2's
sys.argv = [sys.argv[1] + "/convert_hf_to_gguf.py", *sys.argv[2:]]  # run as "python -c RUNNER folder args"
runpy.run_path(sys.argv[0], run_name="__main__")
"""
SENTENCEPIECE_STAND_IN = """
class SentencePieceProcessor:
    def __init__(self, *args, **kwargs):
        raise FileNotFoundError("sentencepiece is not installed (stand-in)")
"""


def converter() -> Path:
    """The folder holding ``convert_hf_to_gguf.py`` (extracted once from the pinned sdist)."""
    folder = HOME / VERSION
    if (folder / ".complete").is_file():
        return folder
    HOME.mkdir(parents=True, exist_ok=True)
    with open(HOME / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / ".complete").is_file():
            return folder
        sdist = HOME / f"llama_cpp_python-{VERSION}.tar.gz"
        if not sdist.is_file():
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                            f"llama-cpp-python=={VERSION}", "-d", str(HOME)], check=True, capture_output=True,
                           timeout=600)
        digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
        if digest != SDIST_SHA256:
            sdist.unlink()
            raise RuntimeError(f"{sdist.name}: sha256 {digest}, expected {SDIST_SHA256} (removed)")
        shutil.rmtree(folder, ignore_errors=True)
        prefix = f"llama_cpp_python-{VERSION}/vendor/llama.cpp/"
        with tarfile.open(sdist) as tar, tempfile.TemporaryDirectory(dir=HOME) as tmp:
            wanted = [m for m in tar.getmembers() if m.name.startswith(prefix)
                      and m.name[len(prefix):].startswith(MEMBERS) and (m.isfile() or m.isdir())]
            tar.extractall(tmp, members=wanted, filter="data")
            shutil.move(Path(tmp) / prefix, folder)
        (folder / ".complete").write_text(SDIST_SHA256 + "\n")
    return folder


def convert(model_dir: Path, outtype: str = "f32") -> Path:
    """``model_dir`` (a Hugging Face model folder) as llama.cpp's converter writes it (``--outtype``),
    from the cache when these very inputs were converted before."""
    digest = hashlib.sha256(f"{VERSION}\n{outtype}\n{MODEL_NAME}\n{RUNNER}\n{SENTENCEPIECE_STAND_IN}\n".encode())
    for path in sorted(p for p in model_dir.iterdir() if p.is_file()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    out = HOME / "gguf" / f"{model_dir.name}-{outtype}-{digest.hexdigest()[:16]}.gguf"
    if out.is_file():
        return out
    folder = converter()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        (Path(tmp) / "sentencepiece").mkdir()
        (Path(tmp) / "sentencepiece" / "__init__.py").write_text(SENTENCEPIECE_STAND_IN)
        env = {"PYTHONPATH": f"{folder / 'gguf-py'}:{tmp}", "PATH": "/usr/bin:/bin", "HOME": tmp,
               "HF_HUB_OFFLINE": "1"}
        part = Path(tmp) / "out.gguf"
        done = subprocess.run([sys.executable, "-c", RUNNER, str(folder), str(model_dir), "--outtype", outtype,
                               "--model-name", MODEL_NAME, "--outfile", str(part)], capture_output=True, text=True,
                              env=env, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"convert_hf_to_gguf.py failed:\n{done.stderr[-3000:]}")
        part.replace(out)
    return out
