"""The manifest: JSONL, one row per chunk and target bank (a skipped chunk has one row with no bank).

A row never holds transcript text unless the run asked for ``--include-content``; then ``content`` is exactly the
item content that would be (or was) uploaded. The file is 0600 (``fsutil``): with content it is the transcript.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from hindsight_batch.base import jsoncodec
from hindsight_batch.base.fsutil import PRIVATE_FILE, fsync_dir, signals_deferred
from hindsight_batch.errors import UsageError
from hindsight_batch.plan.rows import (
    ManifestRow,  # the row is the pipeline's (hindsight_batch.plan.rows); kept importable here
)

__all__ = ["ManifestRow", "ManifestWriter", "encode_line", "encode_lines"]


def encode_lines(rows: Sequence[Mapping[str, Any]]) -> list[bytes]:
    """Rows in their JSON form (:meth:`ManifestRow.as_json`) as manifest lines (no newline). Raises on text no UTF-8
    file can hold (a lone surrogate), before anything is written."""
    return [encode_line(data) for data in rows]


def encode_line(row: Mapping[str, Any]) -> bytes:
    """One row in its JSON form as a manifest line, by :func:`jsoncodec.dumps` (orjson, far faster than the standard
    library), strictly: a lone surrogate raises."""
    return jsoncodec.dumps(row, strict=True)


_BUFFER = 1 << 20


class ManifestWriter:
    """Writes rows as they come, to a temporary file beside the manifest (``.<name>.<random>.partial``), renamed
    over ``path`` only when the run completes: a manifest at ``path`` is always a complete one. An interrupted or
    failed run removes its temporary file; only a killed one (SIGKILL) leaves it, visibly partial by its name.
    A symlink stays a link (its target is replaced); a pipe or device (``/dev/stdout``) is written straight to.
    Not :func:`fsutil.replace_file`, which writes a file in one call: the manifest grows over the whole run, and
    its temporary file is named, so that an interrupted run's partial manifest can be seen and found."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.rows = 0
        self._file: IO[bytes] | None = None
        self._temp: Path | None = None
        self._target: Path | None = None
        if path is None:
            return
        try:
            kind = os.stat(path).st_mode  # follows a link: what the rows would really go to
        except FileNotFoundError:
            kind = None
        except OSError as exc:
            raise UsageError(f"--manifest {path}: {exc.strerror or type(exc).__name__}") from None
        if kind is not None and not stat.S_ISREG(kind):
            # A pipe, a device or /dev/stdout: written straight through (renaming over it would replace it).
            try:
                self._file = open(path, "wb")  # noqa: SIM115 (closed in close())
            except OSError as exc:
                raise UsageError(f"--manifest {path}: {exc.strerror or type(exc).__name__}") from None
            return
        # A symlink keeps being a link: the complete file is renamed over the file it points to.
        self._target = Path(os.path.realpath(path))
        with signals_deferred():  # an interrupt before self._temp is set would leave the file behind
            try:
                fd, name = tempfile.mkstemp(dir=self._target.parent, prefix=f".{self._target.name}.",
                                            suffix=".partial")
            except OSError as exc:
                problem = exc.strerror or type(exc).__name__
                raise UsageError(f"--manifest {path}: cannot write in {self._target.parent}: {problem}") from None
            self._temp = Path(name)
        os.fchmod(fd, PRIVATE_FILE)  # 0600 whatever the umask: it may hold transcripts (--include-content)
        # Written a session at a time: a re-run reusing thousands of small sessions made a write call for each.
        self._file = os.fdopen(fd, "wb", buffering=_BUFFER)

    def write_lines(self, lines: Sequence[bytes]) -> None:
        """A session's rows, already encoded (:func:`encode_line`)."""
        if self._file is not None and lines:
            try:
                self._file.write(b"\n".join(lines) + b"\n")
            except OSError as exc:
                raise self._unwritable(exc) from None
        self.rows += len(lines)

    def _unwritable(self, exc: OSError) -> UsageError:
        """A write the disk refused (full, over quota, gone): one line naming the manifest (exit 2)."""
        return UsageError(f"--manifest {self.path}: cannot write: {exc.strerror or type(exc).__name__}")

    def close(self, complete: bool = True) -> None:
        """Finish: rename the rows into place when the run ``complete``d, otherwise remove them."""
        file, temp, target = self._file, self._temp, self._target
        self._file = self._temp = None
        if file is None:
            return
        try:
            try:
                if complete:
                    file.flush()
                    if temp is not None:
                        os.fsync(file.fileno())
            finally:
                try:
                    file.close()  # (closes the descriptor even when flushing the buffer fails)
                except OSError:
                    if complete:
                        raise
                    # Rows the disk refused belong to a file about to be removed: nothing is lost.
            if complete and temp is not None and target is not None:
                with signals_deferred():
                    os.replace(temp, target)
                fsync_dir(target.parent)  # the rename itself must survive a crash, not only the bytes
        except OSError as exc:
            raise self._unwritable(exc) from None
        finally:
            if temp is not None and (not complete or temp.exists()):
                temp.unlink(missing_ok=True)
