"""The manifest: JSONL, one row per chunk and target bank (a skipped chunk has one row with no bank).

A row never holds transcript text unless the run asked for ``--include-content``; then ``content`` is exactly the
item content that would be (or was) uploaded. The file is 0600 (``fsutil``): with content it is the transcript.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from hindsight_batch.errors import UsageError
from hindsight_batch.fsutil import PRIVATE_FILE, signals_deferred

if TYPE_CHECKING:
    from hindsight_batch.routing.models import MemoryRouteDecision


@dataclass(frozen=True, slots=True)
class ManifestRow:
    """One manifest row. A plain class: planning made every value itself, so there is nothing to validate (a
    pydantic model here was built and dumped per chunk, a tenth of the planning time on many small files)."""

    run_id: str
    source_file: str
    session_id: str
    leaf: str
    segment: str
    chunk_index: int
    first_entry_id: str
    last_entry_id: str
    turns: int
    document_id: str | None
    bank_role: str | None
    bank_id: str | None
    decision: MemoryRouteDecision
    tags: list[str]
    observation_scopes: list[list[str]] | str | None
    content_sha256: str
    item_sha256: str | None
    bytes: int
    messages_kept: int
    messages_dropped: dict[str, int]
    blocks_removed: dict[str, int]
    redactions: dict[str, int]
    fingerprints: list[str]
    status: str
    content: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The row as JSON values, in field order; ``content`` only when there is some."""
        data: dict[str, Any] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            if name == "decision":
                value = self.decision.model_dump(mode="json", by_alias=True)
            elif isinstance(value, list):
                value = [list(v) if isinstance(v, list | tuple) else v for v in value]
            elif isinstance(value, dict):
                value = dict(value)
            data[name] = value
        if self.content is None:
            del data["content"]
        return data


_FIELDS = tuple(ManifestRow.__dataclass_fields__)


class ManifestWriter:
    """Writes rows as they come, to a temporary file beside the manifest (``.<name>.<random>.partial``), renamed
    over ``path`` only when the run completes: a manifest at ``path`` is always a complete one. An interrupted or
    failed run removes its temporary file; only a killed one (SIGKILL) leaves it, visibly partial by its name.
    A symlink stays a link (its target is replaced); a pipe or device (``/dev/stdout``) is written straight to."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.rows = 0
        self._file: IO[str] | None = None
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
                self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())
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
        self._file = os.fdopen(fd, "w", encoding="utf-8")

    def write(self, row: ManifestRow) -> None:
        self.write_json(row.as_json())

    def write_json(self, data: dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.rows += 1

    def write_line(self, line: str) -> None:
        """A row already serialized (one line, no newline)."""
        if self._file is not None:
            self._file.write(line + "\n")
        self.rows += 1

    def close(self, complete: bool = True) -> None:
        """Finish: rename the rows into place when the run ``complete``d, otherwise remove them."""
        file, temp, target = self._file, self._temp, self._target
        self._file = self._temp = None
        if file is None:
            return
        if temp is None or target is None:  # written straight through
            file.close()
            return
        try:
            if complete:
                file.flush()
                os.fsync(file.fileno())
            file.close()
            if complete:
                os.replace(temp, target)
        finally:
            if not complete or temp.exists():
                temp.unlink(missing_ok=True)
