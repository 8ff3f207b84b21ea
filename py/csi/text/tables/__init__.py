"""Generated tables (buildtools/codegen/unicode_tables.py), kept apart from hand-written code."""
