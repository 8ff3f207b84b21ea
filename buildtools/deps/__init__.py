"""What the build takes from others, pinned, and what it makes of it: the pins and installers
(``deps``: PyPI, npm, Debian; with the checkout's paths and ``log``/``run``), wheels written with
deterministic bytes (``wheel``), the packages skills import (``skill_packages``), lingua's language
data (``lang_data``), llama.cpp's server (``llama_server``) and Pharia Kernel's SDK (``kernel_sdk``),
the last two in virtualenvs of their own."""
