"""The cyclic garbage collector paused while an import reads its files (collected between files instead)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collections_between_files() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while files are read, collecting between files instead.

    Reading allocates millions of short-lived containers, freed by reference counting; the collector, woken every
    700 of them, would re-scan the entry index of a large session for cycles it does not hold. The few cycles a
    file may leave are collected after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
