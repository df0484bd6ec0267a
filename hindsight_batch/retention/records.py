"""Per-entry retention: S1 filter and projection, then the compact JSON line, handed to redaction (S3) in batches.

:class:`RecordMaker` is the reader's visitor during an import: it turns each entry into a small
:class:`EntryOutcome` kept on the entry's index row; kept records are redacted and stored in batches, and an
outcome's ``handle`` is set once its batch is done (at the latest when the reader calls ``finish``). Record bytes go
to a :class:`RecordStore`, which keeps them in memory up to a budget and spills the rest to a temporary file, so a
session of any size stays within bounded RAM.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from hindsight_batch.base import jsoncodec
from hindsight_batch.config.model import Settings
from hindsight_batch.redaction.redactor import Findings, Redactor
from hindsight_batch.retention.projection import Projector
from hindsight_batch.retention.stagetimes import StageTimes
from hindsight_batch.session.model import EntryNode


class RecordStore:
    """Append-only byte store: in memory up to ``memory_budget`` bytes, then in an anonymous temporary file.

    Records in memory are packed into one buffer (one small object per record would cost more than the record)."""

    def __init__(self, memory_budget: int = 64 << 20) -> None:
        self._budget = memory_budget
        self._memory = bytearray()
        self._ends: list[int] = []  # record i is _memory[_ends[i-1]:_ends[i]]
        self._file: IO[bytes] | None = None

    def put(self, data: bytes) -> int:
        """Return a handle: ``>= 0`` for memory, ``< 0`` for an offset into the spill file."""
        if len(self._memory) + len(data) <= self._budget:
            self._memory += data
            self._ends.append(len(self._memory))
            return len(self._ends) - 1
        if self._file is None:
            self._file = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the store; close() ends it
        self._file.seek(0, 2)
        offset = self._file.tell()
        self._file.write(len(data).to_bytes(8, "little") + data)
        return -1 - offset

    def join(self, handles: list[int]) -> bytes:
        """The records with these handles, joined by newlines (records in memory are not copied first)."""
        memory = memoryview(self._memory)
        parts: list[bytes | memoryview] = []
        for handle in handles:
            if handle >= 0:
                parts.append(memory[self._ends[handle - 1] if handle else 0 : self._ends[handle]])
                continue
            assert self._file is not None
            self._file.seek(-1 - handle)
            size = int.from_bytes(self._file.read(8), "little")
            parts.append(self._file.read(size))
        return b"\n".join(parts)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._memory = bytearray()
        self._ends.clear()


@dataclass(slots=True)
class EntryOutcome:
    """What one entry contributes. ``handle`` is set when a record was kept."""

    role: str | None
    dropped: str | None
    removed: dict[str, int]
    handle: int | None = None
    size: int = 0
    findings: Findings | None = None


BATCH_BYTES = 256 << 10
_NOTHING_REMOVED: dict[str, int] = {}  # shared, never written: an outcome's ``removed`` is only read


class RecordMaker:
    """The reader visitor for one session file: projects each entry, then redacts and stores kept records in
    batches (:meth:`finish` completes the last one)."""

    def __init__(self, settings: Settings, redactor: Redactor, store: RecordStore, times: StageTimes,
                 progress: Callable[[int], None] | None = None) -> None:
        self.progress = progress  # the reader reports the bytes read to it (read_session)
        self._projector = Projector(settings)
        self._redactor = redactor
        self._store = store
        self._times = times
        self._pending: list[tuple[EntryOutcome, dict[str, Any], bytes]] = []
        self._pending_bytes = 0
        self._dropped_results: dict[str, EntryOutcome] = {}  # by reason: shared, as nothing changes a dropped one

    def unparsed_tool_result(self, tool_name: str, call_id: str) -> EntryOutcome | None:
        """The outcome of a tool-result entry known only by its name and call id, when its content cannot
        matter; None when the entry must be parsed."""
        reason = self._projector.tool_result_gate(tool_name, call_id)
        if reason is None:
            return None
        outcome = self._dropped_results.get(reason)
        if outcome is None:
            outcome = self._dropped_results[reason] = EntryOutcome("toolResult", reason, {})
        return outcome

    def __call__(self, entry: dict[str, Any], node: EntryNode) -> EntryOutcome | None:
        t0 = time.perf_counter()
        projection = self._projector.project(entry)
        t1 = time.perf_counter()
        self._times.project += t1 - t0
        if not projection.is_message:
            return None
        # Kept per entry until the file is planned: no dict of its own when nothing was removed (most entries).
        outcome = EntryOutcome(projection.role, projection.dropped, projection.removed or _NOTHING_REMOVED)
        if projection.record is not None:
            data = jsoncodec.dumps(projection.record)
            self._pending.append((outcome, projection.record, data))
            self._pending_bytes += len(data)
            if self._pending_bytes >= BATCH_BYTES:
                self.finish()
        return outcome

    def finish(self) -> None:
        """Hand the records waiting for their batch to the redaction stage (:meth:`Redactor.redact_records`), then
        store them. The reader calls this at the end of the file."""
        if not self._pending:
            return
        t0 = time.perf_counter()
        redacted = self._redactor.redact_records([(record, data) for _outcome, record, data in self._pending])
        for (outcome, _record, _data), (data, findings) in zip(self._pending, redacted, strict=True):
            outcome.handle = self._store.put(data)
            outcome.size = len(data)
            outcome.findings = findings
        self._pending.clear()
        self._pending_bytes = 0
        self._times.redact += time.perf_counter() - t0
