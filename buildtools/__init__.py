"""What build.py runs, one room (sub-package) per job: ``site`` (dist/, the browser wheel, the npm
package, the static servers), ``models`` (the model folders, built once), ``deps`` (the pins, the
installers and what is made of others' packages), ``bench``, ``soak`` and ``codegen`` (the
generators of committed files). Beside them only ``own_venv``, which build.py imports before
anything is installed (tests/unit/test_buildtools_layout.py keeps it so)."""
