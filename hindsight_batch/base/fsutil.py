"""Private files and folders: what this tool writes holds transcripts, fingerprints and ids, so it is readable by
its owner only, whatever the umask (a folder ``0700``, a file ``0600``).

Modes are set explicitly (``fchmod``/``chmod``) after creating, because ``umask`` only ever removes bits and a
file that already existed keeps its old mode through ``O_TRUNC``. A folder that already existed is left as it is
(``--state .`` must not lock the user out of their own folder); the files inside are private anyway.

A file replaced as a whole (a queue, a pruned session, a lock's owner file) goes through :func:`replace_file`, the
one atomic-write routine: temporary file in the same folder, fsync, rename, fsync of the folder.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import signal
import stat
import threading
from collections.abc import Callable, Iterator
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
    Python runs its signal handlers; elsewhere it does nothing.

    The handlers are swapped for one that notes the signal, rather than the signals blocked: a blocked mask is the
    main thread's own, and the kernel hands a signal sent to the process to any thread that does not block it (a
    progress bar's monitor, a library's I/O thread), whose arrival Python then handles in the main thread at once.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous: dict[int, Any] = {}
    for deferred in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(deferred) is not None:  # None: installed outside Python, which could not be put back
            previous[deferred] = signal.signal(deferred, lambda number, _frame: held.append(number))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(held):  # each once, in the order they came, to the handlers put back
            signal.raise_signal(number)


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def open_regular(path: Path) -> int:
    """Open ``path`` read-only, refusing whatever is not a regular file (an ``OSError`` naming what it is). A FIFO
    put where a session or queue file was would block a plain open for ever, with the run's lock held, and a
    device would be read for ever; opened non-blocking, neither waits, and neither is read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "an unknown kind of file")
            raise OSError(errno.EINVAL, f"not a regular file ({kind})", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular_file(path: Path) -> io.BufferedReader:
    """:func:`open_regular` as a buffered binary file object."""
    return open(open_regular(path), "rb")


def read_regular(path: Path) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`open_regular`)."""
    with open_regular_file(path) as handle:
        return handle.read()


def write_all(fd: int, data: bytes | memoryview) -> None:
    """``os.write`` until every byte of ``data`` is written (a write may take only part of it)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new name in ``folder`` durable (the folder's entries are data of their own)."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _open_temp(path: Path, temp: Path) -> tuple[int, bool]:
    """A file to write ``path``'s new version into, in its folder: unnamed (``O_TMPFILE``: a kill leaves nothing
    behind) where the file system can, else created as ``temp``. Returns the descriptor and whether it is named."""
    with contextlib.suppress(AttributeError, OSError):
        return os.open(path.parent, os.O_TMPFILE | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE), False
    return os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE), True


def replace_file(
    path: Path,
    write: Callable[[int], None],
    *,
    private: bool = False,
    like: os.stat_result | None = None,
    times_ns: tuple[int, int] | None = None,
    before_rename: Callable[[], None] | None = None,
    temp: Path | None = None,
) -> None:
    """Replace ``path`` atomically with what ``write(fd)`` writes: a kill leaves the old file or the new one.

    The new content goes to a temporary file in the same folder (unnamed where the file system allows, so a kill
    leaves nothing behind; else ``temp``, by default ``.<name>.<pid>-<random>.tmp``), is fsynced, renamed over
    ``path``, and the folder is fsynced (the rename itself must survive a power cut). Mode and owner: ``0600``
    when ``private`` or when ``path`` is new; otherwise those of ``like``, by default of ``path`` as it is (a
    file someone else owns keeps its owner when we may give it back, i.e. as root). ``times_ns`` sets
    (atime, mtime). ``before_rename()`` runs last and may raise to refuse. SIGINT/SIGTERM wait while the
    temporary file is made and while it is renamed into place, so an interrupt never leaves it behind."""
    if like is None and not private:
        with contextlib.suppress(FileNotFoundError):
            like = path.stat()
    temp = temp or path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    fd = -1
    named = False
    try:
        with signals_deferred():  # fd and named are set before an interrupt can land: the cleanup below sees them
            fd, named = _open_temp(path, temp)
        write(fd)
        os.fsync(fd)
        if like is not None and not private:
            if (like.st_uid, like.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(PermissionError):  # only root may give a file away
                    os.fchown(fd, like.st_uid, like.st_gid)
            os.fchmod(fd, stat.S_IMODE(like.st_mode))  # after fchown, which clears set-id bits
        else:
            os.fchmod(fd, PRIVATE_FILE)
        if times_ns is not None:
            os.utime(fd, ns=times_ns)
        with signals_deferred():
            if not named:
                # linkat(…, AT_SYMLINK_FOLLOW) names the unnamed file; a folder fd makes Python call linkat.
                folder_fd = os.open(path.parent, os.O_RDONLY)
                try:
                    os.link(f"/proc/self/fd/{fd}", temp.name, dst_dir_fd=folder_fd, follow_symlinks=True)
                finally:
                    os.close(folder_fd)
                named = True
            if before_rename is not None:
                before_rename()
            os.replace(temp, path)
            named = False
            fsync_dir(path.parent)
    except BaseException:
        if named:
            temp.unlink(missing_ok=True)
        raise
    finally:
        if fd >= 0:
            os.close(fd)
