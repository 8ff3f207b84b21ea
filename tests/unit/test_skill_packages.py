"""The packages skills import, as the build ships them (buildtools/deps/skill_packages.py): what
dist/wheels/packages/ holds is what csi.core.packages.SERVED names, the repacked and pure wheels
hold what they should, the service worker keeps them once fetched, and CPython gets the same versions."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from buildtools.deps import deps
from buildtools.deps.skill_packages import RECIPES, download, from_sdist, repack, served
from buildtools.site.assemble import _offline_role
from csi.core.packages import SERVED
from tests.support.paths import DIST

PACKAGES = DIST / "wheels" / "packages"


def files_of(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def test_the_build_reads_the_same_table_the_import_check_reads() -> None:
    assert served() == SERVED
    assert {spec for specs in SERVED.values() for spec in specs} == set(RECIPES)


def test_the_site_serves_every_served_package_with_its_dependencies_and_nothing_else() -> None:
    index = json.loads((PACKAGES / "index.json").read_text())
    assert set(index) == set(SERVED)
    for name, specs in SERVED.items():
        files = index[name]
        assert len(files) == len(specs)
        for file, spec in zip(files, specs, strict=True):
            dist, version = spec.split("==")
            assert file.startswith(f"{dist.replace('-', '_')}-{version}-") and file.endswith("-py3-none-any.whl")
    assert index["jinja2"][1] == index["markupsafe"][0]
    assert sorted(p.name for p in PACKAGES.glob("*.whl")) == sorted({f for fs in index.values() for f in fs})


def test_pypi_wheels_are_served_as_pypi_ships_them() -> None:
    for spec in ("jinja2==3.1.6", "fastjsonschema==2.22.3"):
        source = download(spec, RECIPES[spec])
        assert (PACKAGES / source.name).read_bytes() == source.read_bytes()


def test_pharia_skill_is_its_pypi_wheel_without_wasi_wheels(tmp_path: Path) -> None:
    spec = "pharia-skill==0.20.0"
    original = files_of(download(spec, RECIPES[spec]))
    served_files = files_of(PACKAGES / "pharia_skill-0.20.0-py3-none-any.whl")
    record = "pharia_skill-0.20.0.dist-info/RECORD"
    dropped = {n for n in original if n.startswith("wasi_wheels/")}
    assert dropped and sum(len(original[n]) for n in dropped) > 1_000_000
    assert set(served_files) == set(original) - dropped
    for name in set(served_files) - {record}:
        assert served_files[name] == original[name], name
    lines = set(original[record].decode().splitlines())
    assert set(served_files[record].decode().splitlines()) == {x for x in lines if not x.startswith("wasi_wheels/")}
    again = repack(download(spec, RECIPES[spec]), tmp_path / "again.whl", ("wasi_wheels/",))
    assert again.read_bytes() == (PACKAGES / "pharia_skill-0.20.0-py3-none-any.whl").read_bytes()  # deterministic


@pytest.mark.parametrize(("spec", "wheel", "package", "absent"), [
    ("markupsafe==3.0.3", "markupsafe-3.0.3-py3-none-any.whl", "markupsafe", "markupsafe/_speedups"),
    ("pyyaml==6.0.3", "pyyaml-6.0.3-py3-none-any.whl", "yaml", "_yaml"),
])
def test_pure_wheels_hold_the_package_and_no_c_extension(tmp_path: Path, spec: str, wheel: str, package: str,
                                                        absent: str) -> None:
    files = files_of(PACKAGES / wheel)
    name, version = spec.split("==")
    dist_info = f"{name}-{version}.dist-info"
    assert {n.split("/")[0] for n in files} == {package, dist_info}
    assert not [n for n in files if n.startswith(absent) or n.endswith((".c", ".so", ".pyx", ".pyd"))]
    assert f"{package}/__init__.py" in files and f"{dist_info}/RECORD" in files
    assert files[f"{dist_info}/METADATA"].startswith(b"Metadata-Version: ")
    assert b"\nVersion: " + version.encode() + b"\n" in files[f"{dist_info}/METADATA"]
    assert any(n.startswith(f"{dist_info}/licenses/") for n in files)
    with zipfile.ZipFile(PACKAGES / wheel) as zf:
        assert zf.testzip() is None
    again = from_sdist(download(spec, RECIPES[spec]), tmp_path / wheel, name, version, RECIPES[spec])
    assert again.read_bytes() == (PACKAGES / wheel).read_bytes()  # deterministic


def test_the_service_worker_keeps_the_wheels_once_fetched_and_the_index_with_the_site() -> None:
    manifest = json.loads((DIST / "site-manifest.json").read_text())
    wheels = {f"wheels/packages/{p.name}" for p in PACKAGES.glob("*.whl")}
    assert wheels and wheels <= set(manifest["lazy"]) and not wheels & set(manifest["files"])
    assert "wheels/packages/index.json" in manifest["files"]
    assert _offline_role("wheels/packages/jinja2-3.1.6-py3-none-any.whl") == "lazy"
    assert _offline_role("wheels/pydantic-2.14.3-py3-none-any.whl") == "files"  # the boot's wheels: at install


def test_cpython_gets_the_versions_the_worker_gets() -> None:
    pins = {**deps.PYTHON_PINS, **deps.PYTHON_NO_DEPS}
    for spec in {s for specs in SERVED.values() for s in specs}:
        name, version = spec.split("==")
        assert pins[name] == version, spec
    assert "pharia-skill" in deps.PYTHON_NO_DEPS  # its pins (pydantic 2.11.7, its build CLI) are not installed
