#!/usr/bin/env python3
"""csi-web's one command.

  python3 build.py              set up everything and build dist/
  python3 build.py serve [--port N]   ... then serve it at http://127.0.0.1:8000/
  python3 build.py test [pytest args] ... then build the tests' llama.cpp server (once) and run the suite
                                       (or only the test files named among the args)
  python3 build.py bench [--only sampling,decode,...]  ... then run the benchmarks and print JSON
  python3 build.py bench --device webgpu  ... the same on a hardware GPU (fails clearly without one)
  python3 build.py fuzz [messages|page|servers]  ... then run the fuzzers (or those parts) with 10x the suite's budget
  python3 build.py soak [--minutes N]  ... then N minutes (30) of mixed traffic, and index faults
  python3 build.py import-gguf FILE.gguf [--id NAME]  ... then make a model the site serves from a GGUF
  python3 build.py pack         ... then write the npm package csi-web-<version>.tgz (the library)
  python3 build.py copy-models DIR [--only id,...]  ... then copy the built models into an app's models/ folder

Any Python 3.11+ runs it: it makes .venv/ in the checkout with that interpreter and runs itself
there, so pip installs nothing outside the checkout (Debian's externally managed python3 included).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "py"))  # csi.gguf: the page's GGUF code, which import-gguf shares

from buildtools import own_venv  # noqa: E402  (standard library only)

if __name__ == "__main__":
    own_venv.enter(Path(__file__).resolve(), sys.argv[1:])  # returns inside .venv/, made when needed

from buildtools.deps import deps  # noqa: E402


def setup(browser: bool) -> Path:
    deps.ensure_python()
    deps.ensure_npm()
    if browser:
        deps.ensure_chromium()
    from buildtools.site.assemble import build_site

    return build_site()


def import_gguf(rest: list[str], model_id: str | None) -> int:
    """``import-gguf FILE.gguf [--id NAME]``: a model folder under imported/, then dist/ with it."""
    import re

    if len(rest) != 1 or not rest[0].endswith(".gguf"):
        print("usage: python3 build.py import-gguf FILE.gguf [--id NAME]", file=sys.stderr)
        return 2
    source = Path(rest[0]).resolve()
    if not source.is_file():
        print(f"no such file: {source}", file=sys.stderr)
        return 2
    model_id = model_id or re.sub(r"[^a-z0-9._-]+", "-", source.stem.lower()).strip("-.")
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", model_id):
        print(f"--id {model_id!r}: use lowercase letters, digits, '.', '_' and '-'", file=sys.stderr)
        return 2
    deps.ensure_python()
    from buildtools.models.cache import BUILTIN_IDS
    from buildtools.models.gguf_import import GGUFImportError
    from buildtools.models.gguf_import import import_gguf as convert
    from buildtools.site.assemble import IMPORTED

    if model_id in BUILTIN_IDS:
        print(f"{model_id!r} is a built-in model's id: choose another with --id", file=sys.stderr)
        return 2
    try:
        convert(source, IMPORTED / model_id)
    except GGUFImportError as exc:
        print(f"cannot import {source.name}: {exc}", file=sys.stderr)
        return 2
    setup(browser=False)
    print(f"served at /models/{model_id}/ by `python3 build.py serve`; load it as {model_id!r}")
    return 0


FUZZ_PARTS = {
    "messages": ["tests/unit/test_fuzz_messages.py", "tests/cpython/test_fuzz_real.py"],
    "page": ["tests/browser/test_browser_boundary.py"],
    "servers": ["tests/cpython/test_fuzz_servers.py", "tests/cpython/test_hostile_servers.py"],
}
"""``build.py fuzz [part ...]``: the fuzzers by what they bend (all parts when none is named)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", default="build",
                        choices=["build", "serve", "test", "bench", "fuzz", "soak", "import-gguf", "pack",
                                 "copy-models"])
    parser.add_argument("--minutes", type=float, default=30.0, help="soak: how long the traffic runs")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--only", help="bench: a comma-separated list of sections (default: all); "
                        "copy-models: a comma-separated list of model ids (default: all)")
    parser.add_argument("--device", choices=["wasm", "webgpu"], default="wasm",
                        help="bench: wasm (default), or webgpu on a hardware adapter (Chromium's Vulkan flags)")
    parser.add_argument("--id", dest="model_id", help="import-gguf: the model's id (default: from the file name)")
    args, rest = parser.parse_known_args()

    if args.command == "build":
        setup(browser=False)
        return 0
    if args.command == "serve":
        from buildtools.site.serve import make_server

        dist = setup(browser=False)
        server = make_server(dist, args.port, verbose=True)
        print(f"csi-web is served at http://127.0.0.1:{server.server_address[1]}/  (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        return 0
    if args.command == "test":
        setup(browser=True)
        from buildtools.deps.llama_server import ensure_server

        ensure_server()  # the remote-model tests' llama.cpp server (compiled once: ~5 min on 2 cores)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "py"), str(ROOT)])}
        # test files or folders named on the command line replace the whole suite
        named = any(not arg.startswith("-") and (ROOT / arg.split("::")[0]).exists() for arg in rest)
        # the whole suite names its slowest tests, so CI's log says where its time goes
        suite = [] if named else ["tests", "--durations=25"]
        return subprocess.call([sys.executable, "-m", "pytest", *suite, *rest], cwd=ROOT, env=env)
    if args.command == "fuzz":  # the suite's fuzzers with a budget 10x larger (CSI_FUZZ_EXAMPLES overrides)
        setup(browser=True)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "py"), str(ROOT)]),
               "CSI_FUZZ_EXAMPLES": os.environ.get("CSI_FUZZ_EXAMPLES", "20000"),
               "CSI_PAGE_FUZZ_CALLS": os.environ.get("CSI_PAGE_FUZZ_CALLS", "3000"),
               "CSI_SERVER_FUZZ_REQUESTS": os.environ.get("CSI_SERVER_FUZZ_REQUESTS", "1000")}
        named = [a for a in rest if a in FUZZ_PARTS] or list(FUZZ_PARTS)
        files = [f for part in named for f in FUZZ_PARTS[part]]
        return subprocess.call([sys.executable, "-m", "pytest", "-p", "no:warnings", "-q", *files,
                                *(a for a in rest if a not in FUZZ_PARTS)], cwd=ROOT, env=env)
    if args.command == "soak":
        dist = setup(browser=True)
        from buildtools.soak.run import run_soak

        return run_soak(dist, args.minutes)
    if args.command == "pack":
        from buildtools.site.pack import pack

        print(pack(setup(browser=False)))
        return 0
    if args.command == "copy-models":
        if len(rest) != 1:
            print("usage: python3 build.py copy-models DIR [--only id,...]", file=sys.stderr)
            return 2
        from buildtools.site.pack import copy_models

        setup(browser=False)
        ids = copy_models(Path(rest[0]).resolve(), args.only.split(",") if args.only else None)
        print(f"copied {', '.join(ids)} into {Path(rest[0]).resolve()}")
        return 0
    if args.command == "import-gguf":
        return import_gguf(rest, args.model_id)
    if args.command == "bench":
        dist = setup(browser=True)
        from buildtools.bench.run import run_bench

        return run_bench(dist, args.only.split(",") if args.only else None, args.device)
    return 2


if __name__ == "__main__":
    sys.exit(main())
