"""Private files and folders: what this tool writes holds transcripts, fingerprints and ids, so it is readable by
its owner only, whatever the umask (a folder ``0700``, a file ``0600``).

Modes are set explicitly (``fchmod``/``chmod``) after creating, because ``umask`` only ever removes bits and a
file that already existed keeps its old mode through ``O_TRUNC``. A folder that already existed is left as it is
(``--state .`` must not lock the user out of their own folder); the files inside are private anyway.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) if needed; a folder created here is ``0700``."""
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:
            return path  # made meanwhile by someone else: theirs to keep
        os.chmod(path, PRIVATE_DIR)
    return path


def open_private_fd(path: Path, flags: int) -> int:
    """``os.open`` that creates (or keeps) ``path`` with mode ``0600``."""
    fd = os.open(path, flags | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)
    except BaseException:
        os.close(fd)
        raise
    return fd


_FLAGS = {"w": os.O_WRONLY | os.O_TRUNC, "a": os.O_WRONLY | os.O_APPEND, "x": os.O_WRONLY | os.O_EXCL}


def open_private(path: Path, mode: str = "w", **kwargs: Any) -> IO[Any]:
    """``open(path, mode)`` for writing ("w", "a" or "x", text or with "b"), the file ``0600``."""
    kind = mode.replace("b", "")
    if kind not in _FLAGS:
        raise ValueError(f"open_private: mode {mode!r} is not a write mode")
    return os.fdopen(open_private_fd(path, _FLAGS[kind]), mode, **kwargs)


@contextlib.contextmanager
def private_umask() -> Iterator[None]:
    """While it lasts, files that a library creates on its own (DuckDB's write-ahead log, which it deletes and
    re-creates at every checkpoint) get no group or other bits."""
    old = os.umask(0o077)
    os.umask(old | 0o077)
    try:
        yield
    finally:
        os.umask(old)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """While it lasts, SIGINT and SIGTERM wait (they are delivered as it ends): between making a temporary file
    and renaming it into place, an interrupt would leave the temporary file behind. Only in the main thread, where
    Python runs its signal handlers; elsewhere it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    deferred = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, deferred)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
