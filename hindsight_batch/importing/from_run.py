"""``import --apply --from-run RUN``: send exactly what the dry run RUN planned, or refuse a session by name.

The dry run records, per source it planned or reused, its size, mtime, SHA-256 and settings hash (ledger table
``run_sources``). Before sending, each source is checked against that record: a file that changed (any of the
three: a touched file with the same bytes is refused too), vanished, or whose settings changed is refused, never
silently re-planned; an unchanged one is planned again (the pipeline is deterministic) and sent only when its items
-- (document id, item hash, bank) -- are exactly the reviewed ones.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hindsight_batch.base.fsutil import open_regular
from hindsight_batch.errors import UsageError
from hindsight_batch.session.names import source_name, source_path

if TYPE_CHECKING:
    from hindsight_batch.importing.accounting import FromRunCounts, RefusedSession
    from hindsight_batch.ledger import Ledger, ReviewedItem, ReviewedSource

_READ = 1 << 20
MAX_LISTED = 50
RE_PLAN = "run the dry run again and review it"


def file_sha256(path: Path) -> str:
    """The SHA-256 of ``path``'s bytes, read into one buffer of the file's size (up to a mebibyte at a time): a
    new mebibyte per read, as ``read()`` allocates, cost more than the hashing of a small file."""
    digest = hashlib.sha256()
    with os.fdopen(open_regular(path), "rb", buffering=0) as handle:
        buffer = bytearray(min(_READ, os.fstat(handle.fileno()).st_size + 1))  # + 1: the end is seen in one read
        view = memoryview(buffer)
        while size := handle.readinto(buffer):
            digest.update(view[:size])
    return digest.hexdigest()


@dataclass
class Reviewed:
    """The dry run being applied, and what happened to each of its sources."""

    run_id: str
    sources: dict[str, ReviewedSource]
    items: dict[str, set[ReviewedItem]]
    ignored_paths: int = 0  # given on the command line, not sources of the run
    refused: dict[str, str] = field(default_factory=dict)  # path -> why
    accepted: set[str] = field(default_factory=set)
    items_as_reviewed: int = 0
    items_sent: int = 0  # handed to the uploader (the others the server already holds, unchanged)
    configuration_changed: bool = False

    def changed(self, path: Path) -> str | None:
        """Why ``path`` is no longer what the dry run saw (size, mtime or content), or None."""
        seen = self.sources[source_name(path)]
        try:
            stat = path.stat()
        except FileNotFoundError:
            return f"the file is gone since the review; {RE_PLAN}"
        if (stat.st_size, stat.st_mtime_ns) != (seen.size, seen.mtime_ns):
            what = "size and mtime" if stat.st_size != seen.size else "mtime"
            return f"the file changed since the review ({what}); {RE_PLAN}"
        if file_sha256(path) != seen.sha256:
            return f"the file's content changed since the review (SHA-256); {RE_PLAN}"
        return None

    def refuse(self, path: Path | str, why: str) -> None:
        self.refused.setdefault(source_name(path), why)

    def finish(self, files: list[Path]) -> None:
        """A source of the run that was neither sent as reviewed nor refused yet (skipped, failed, filtered out)
        is refused: nothing else of the review was sent for it."""
        for path in files:
            if source_name(path) not in self.accepted:
                self.refuse(path, "not planned again as reviewed (see the summary: skipped or failed); " + RE_PLAN)

    def to_dict(self) -> FromRunCounts:
        refused: list[RefusedSession] = [{"file": path, "reason": why} for path, why in sorted(self.refused.items())]
        return {
            "run": self.run_id,
            "sessions_sent": len(self.accepted),
            "items_as_reviewed": self.items_as_reviewed,
            "items_sent": self.items_sent,
            "items_already_on_server": self.items_as_reviewed - self.items_sent,
            "refused": refused[:MAX_LISTED],
            "refused_total": len(refused),
            "ignored_paths": self.ignored_paths,
            "configuration_changed": self.configuration_changed,
        }


def load_reviewed(ledger: Ledger, run_id: str) -> Reviewed:
    """The dry run ``run_id`` as the ledger recorded it; a usage error (exit 2) naming it when there is no such
    run, it was not a dry-run import, or it recorded no sources (a ledger from before they were recorded)."""
    kind = ledger.run_kind(run_id)
    if kind is None:
        raise UsageError(f"--from-run {run_id}: no such run in the ledger {ledger.path} (see `hindsight-batch report`)")
    command, mode, status = kind
    if (command, mode) != ("import", "dry-run"):
        raise UsageError(f"--from-run {run_id}: that run is an {command} ({mode}), not a dry-run import")
    if status not in ("ok", "partial"):
        raise UsageError(f"--from-run {run_id}: that dry run did not finish (status {status}); {RE_PLAN}")
    sources = ledger.reviewed_sources(run_id)
    if not sources:
        raise UsageError(f"--from-run {run_id}: the ledger recorded no sources for that dry run (it planned nothing, "
                         f"or an older hindsight-batch made it, before dry runs recorded what they read); {RE_PLAN}")
    return Reviewed(run_id, sources, ledger.reviewed_items(run_id))


def select_files(reviewed: Reviewed, given: list[Path], roots: list[Path]) -> list[Path]:
    """The run's sources among ``given`` (the session files found under ``roots``, the paths on the command line;
    all of the run's sources when there are none), in path order; the others are counted in ``ignored_paths``. A
    source of the run under ``roots`` that is gone is kept, to be refused by name."""
    if not roots:
        return [Path(source_path(name)) for name in sorted(reviewed.sources)]
    names = {source_name(path) for path in given}
    kept = names & reviewed.sources.keys()
    reviewed.ignored_paths = len(names) - len(kept)
    kept |= {name for name in reviewed.sources if not os.path.lexists(source_path(name))
             and any(Path(source_path(name)).is_relative_to(root) for root in roots)}
    return [Path(source_path(name)) for name in sorted(kept)]
