"""The pipeline's seams, as small protocols: what each stage asks of the one before or after it.

The pipeline's stages and their order are declared once, in ``scripts/module_graph.py``'s ``STAGES`` (the
README's developer notes describe the folders): a session file goes from a :class:`SessionSource` through the
reader (an :class:`EntryVisitor`), retention, redaction, chunking, a :class:`RoutingStrategy` and planning, to the
sinks: :class:`ManifestSink`, :class:`LedgerSink` (what an import writes; :class:`RunLedger`, what it also asks)
and, with ``--apply``, :class:`DocumentSink`; ``flush`` starts from a :class:`QueueSource`.

This module imports the stages' types only to name them (no stage depends on it at run time);
tests/test_interfaces.py checks the concrete classes and modules against these protocols (mypy reads it too).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hindsight_batch.ledger import DocumentRow, ReviewedSource, SourceState
    from hindsight_batch.plan.rows import ManifestRowJson, SourceRecord
    from hindsight_batch.queue.store import QueueContents
    from hindsight_batch.routing.strategy import RoutingStrategy
    from hindsight_batch.session.model import EntryNode
    from hindsight_batch.sinks.upload import UploadStats

__all__ = ["DocumentSink", "EntryVisitor", "LedgerSink", "ManifestSink", "QueueSource", "RoutingStrategy",
           "RunLedger", "SessionSource"]


def __getattr__(name: str) -> Any:
    """``RoutingStrategy`` is routing's own protocol, named here with the others but loaded only when asked for."""
    if name == "RoutingStrategy":
        from hindsight_batch.routing.strategy import RoutingStrategy

        return RoutingStrategy
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class SessionSource(Protocol):
    """Where an import's session files come from (``session/discovery.py``)."""

    def find_session_files(self, paths: Iterable[Path], env: Mapping[str, str] | None = None, *,
                           resolve: bool = False) -> list[Path]:
        """The session files named by ``paths`` (files or folders), or under the default root when there are none;
        sorted, without duplicates; with ``resolve``, each named by its resolved path."""
        ...


class QueueSource(Protocol):
    """Where ``flush`` finds the extensions' retain queues (``queue/store.py``)."""

    def queue_files(self, roots: list[Path]) -> Iterator[Path]:
        """The queue files under ``roots``."""
        ...

    def read_queue(self, path: Path) -> QueueContents:
        """A queue's jobs, and the lines that are not jobs (kept, never sent)."""
        ...


class EntryVisitor(Protocol):
    """What the reader hands each entry to (``session/reader.py``; the import's is ``retention.records.RecordMaker``).
    Its return value is kept on the entry's index row; the entry itself is dropped."""

    def __call__(self, entry: dict[str, Any], node: EntryNode) -> object:
        """One entry, already migrated to the v3 shape, with its index row (ids, parent, line number)."""
        ...

    def unparsed_tool_result(self, tool_name: str, call_id: str) -> object:
        """The outcome of a tool-result line known only by its tool name and call id when its content cannot
        matter (the line is then not parsed into objects), or None when it must be read."""
        ...

    def finish(self) -> None:
        """Called once the file is read: work kept for a batch is done now."""
        ...


class ManifestSink(Protocol):
    """Where an import's manifest rows go, a session's at a time (``sinks/manifest.ManifestWriter``)."""

    def write_lines(self, lines: Sequence[bytes]) -> None:
        """These rows, each already encoded as one JSON line (``sinks/manifest.encode_line``)."""
        ...

    def close(self, complete: bool = True) -> None:
        """The run ended: keep the rows when it ``complete``d, else drop them."""
        ...


class LedgerSink(Protocol):
    """What an import writes to the ledger, in batches (``importing/ledger_batch.py``; the ``Ledger``)."""

    def add_manifest_records(self, lines: Sequence[bytes]) -> None:
        """Manifest rows, each already encoded for the ledger (``ledger/manifest_table.record_line``)."""
        ...

    def record_sources(self, rows: Sequence[SourceRecord]) -> None:
        """Sources just read, after their rows: a source is marked read only once its rows are in."""
        ...

    def record_run_sources(self, run_id: str, rows: Sequence[ReviewedSource]) -> None:
        """What the dry run ``run_id`` saw of each source it planned or reused (``--from-run`` checks it)."""
        ...

    def record_headers(self, rows: Sequence[tuple[str, str]]) -> None:
        """(path, header) of reused sources the ledger recorded without a header."""
        ...


class RunLedger(LedgerSink, Protocol):
    """The ledger as an import uses it (``importing/importer.py``, ``importing/selection.py``; the ``Ledger``): what
    it writes (:class:`LedgerSink`), the run's record, and what earlier runs left (sources, sent documents, rows)."""

    path: Path
    """The ledger's file, named in the summary."""

    def fingerprint_key(self) -> bytes:
        """The key of the HMAC fingerprints of redacted secrets (one per ledger)."""
        ...

    def start_run(self, run_id: str, command: str, mode: str) -> None:
        """The run begins (status ``running`` until :meth:`finish_run`)."""
        ...

    def finish_run(self, run_id: str, status: str, summary: Mapping[str, Any]) -> None:
        """The run ended with ``status``; its ``import --json`` summary."""
        ...

    def record_failed_files(self, run_id: str, failed: Sequence[Mapping[str, Any]]) -> None:
        """The files the run could not read or plan (file, line where known, reason)."""
        ...

    def sources(self) -> dict[str, SourceState]:
        """Every source an earlier run read: path -> size, modification time, settings hash, run, hash, header."""
        ...

    def source_sessions(self) -> dict[str, str]:
        """path -> session id of every source seen (a second file of a session is a duplicate)."""
        ...

    def document_hashes(self) -> dict[tuple[str, str], tuple[str, str]]:
        """(bank, document) -> (item hash, status) of every document an applied run sent."""
        ...

    def expect_reuse(self, paths: Sequence[str]) -> None:
        """The sources the run may reuse, in the order it will ask for their rows (read in one pass)."""
        ...

    def latest_rows(self, source_file: str, run_id: str) -> list[ManifestRowJson]:
        """The manifest rows ``run_id`` wrote for ``source_file``, in the order written (an unchanged source's)."""
        ...


class DocumentSink(Protocol):
    """Where retain items go with ``--apply``: the Hindsight server, through the ledger (``sinks/upload.Uploader``)."""

    changed: Callable[[], None] | None
    """Told when items are sent, confirmed or failed (the progress bar); None: nobody is told."""

    @property
    def stats(self) -> UploadStats:
        """Requests made, documents by status, errors."""
        ...

    def add(self, row: DocumentRow, payload: dict[str, object], size: int) -> None:
        """One retain item (``payload``, about ``size`` bytes) for ``row``'s bank and document; sent in batches."""
        ...

    def finish(self) -> None:
        """Send what is left and wait for the requests in flight."""
        ...

    def wait_for_operations(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for the server's asynchronous operations; how many are still open."""
        ...
