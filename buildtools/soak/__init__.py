"""``python3 build.py soak`` (``run``): long mixed traffic against one engine, memory and pending
calls sampled, then traffic with interrupts (``interrupts``, which the suite also runs briefly)."""
