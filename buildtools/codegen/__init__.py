"""Generators of committed files, each run by hand when its source changes (a test fails until
then): ``wire_types`` (worker/wire_types.d.ts from the routes' request models) and
``unicode_tables`` (py/csi/text/tables/ from ICU4X's and ICU's data)."""
