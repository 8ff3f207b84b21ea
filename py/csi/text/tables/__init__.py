"""Generated tables (buildtools/unicode_tables.py), kept apart from hand-written code."""
