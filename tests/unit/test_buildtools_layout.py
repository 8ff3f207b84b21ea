"""buildtools/ is a workshop with rooms: one sub-package per job, and beside them only what build.py
needs before anything is installed. A cached model's stamp does not depend on the room its sources
sit in."""

from __future__ import annotations

from buildtools.models.cache import roomless
from tests.support.paths import ROOT

BUILDTOOLS = ROOT / "buildtools"
ROOMS = {"bench", "codegen", "deps", "models", "site", "soak"}
# build.py imports own_venv before anything is installed: it stays at the top, standard library only
LOOSE = {"__init__.py", "own_venv.py"}


def test_buildtools_holds_its_rooms_and_no_loose_module() -> None:
    loose = {p.name for p in BUILDTOOLS.iterdir() if p.is_file()}
    assert loose == LOOSE, f"put {sorted(loose - LOOSE)} in a room: {sorted(ROOMS)}"
    folders = {p.name for p in BUILDTOOLS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == ROOMS
    for room in ROOMS:  # a room is a package, and so is any folder of modules inside it
        assert not [p for p in (BUILDTOOLS / room).rglob("*.py")
                    if "__pycache__" not in p.parts and not (p.parent / "__init__.py").is_file()], room


def test_every_room_says_what_it_holds() -> None:
    for room in ROOMS:
        assert (BUILDTOOLS / room / "__init__.py").read_text().startswith('"""'), room


def test_a_models_digest_reads_its_sources_without_their_room() -> None:
    assert roomless(b"from ..deps.deps import ensure_pypi_file\n") == b"from .deps import ensure_pypi_file\n"
    assert roomless(b"    from ..models import x\n") == b"    from .models import x\n"
    assert roomless(b"Usage: ``python -m buildtools.models.tiny_chat OUT_DIR``") == \
        b"Usage: ``python -m buildtools.tiny_chat OUT_DIR``"
    assert roomless(b"see buildtools/models/gguf_import.py") == b"see buildtools/gguf_import.py"
    unchanged = b"from .atomic_dir import replacing\nfrom . import tiny_chat_tools\nimport buildtools.modelsx\n"
    assert roomless(unchanged) == unchanged
