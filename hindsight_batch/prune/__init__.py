"""prune-recall-messages: take persisted recall out of Pi session files before the extension is uninstalled,
so it is never sent to a model provider again, and lose nothing else (S6).

In: Pi session files (a preview unless confirmed). Out: each file rewritten without its recall messages, the
original kept as a backup beside it, and a :class:`PruneResult` per file (what was removed and re-pointed, or why
the file was refused).

The parts, in the order a run uses them: :mod:`~hindsight_batch.prune.index` (one read-only pass: what the file
holds, which entries are recall), :mod:`~hindsight_batch.prune.plan` (what goes, what is re-pointed: the preview),
:mod:`~hindsight_batch.prune.write` (the new file and the backup), :mod:`~hindsight_batch.prune.check` (the new
file read back against the plan) and :mod:`~hindsight_batch.prune.undo` (a backup put back). This module holds
the entry points, :func:`prune_file` and :func:`restore`.

How it stays safe, in short (docs/prune.md has every rule): the plan comes from one read-only pass; only the bytes
that must change change (children re-pointed, labels on removed entries dropped, a recall leaf neutralised rather
than removed); the new file replaces the old atomically, with the original kept as a backup, and a file that is
live (``--min-age``), changing or hard-linked elsewhere is refused unless ``--force``; the new file is read back and
the backup put back if it is not what was planned.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hindsight_batch.errors import UsageError
from hindsight_batch.prune.check import check_file
from hindsight_batch.prune.index import DEFAULT_TYPES
from hindsight_batch.prune.plan import PrunePlan, plan_prune
from hindsight_batch.prune.undo import restore
from hindsight_batch.prune.write import (
    PruneRefused,
    backup_path,
    clean_stray_temps,
    install_with_backup,
    make_private,
    own_backup_links,
)
from hindsight_batch.session.names import source_name

__all__ = [
    "DEFAULT_TYPES", "PrunePlan", "PruneRefused", "PruneResult", "iter_results", "parse_duration", "plan_prune",
    "prune_file", "restore",
]


@dataclass
class PruneResult:
    """What :func:`prune_file` did with one file (``plan`` is the plan's JSON form: what goes, what moves)."""

    file: str
    status: str  # "clean", "preview", "pruned", "refused", "failed", "not-a-session"
    plan: dict[str, Any]
    backup: str | None = None
    reason: str | None = None
    target: str | None = None  # the real file, when ``file`` is a symlink

    def to_dict(self) -> dict[str, Any]:
        plan = {k: v for k, v in self.plan.items() if k != "file"}
        return {"file": self.file, "target": self.target, "status": self.status, "backup": self.backup,
                "reason": self.reason, **plan}


def prune_file(
    path: Path,
    *,
    confirm: bool,
    types: Iterable[str] = DEFAULT_TYPES,
    backup_dir: Path | None = None,
    min_age: float = 1800.0,
    force: bool = False,
    now: float | None = None,
) -> PruneResult:
    """Prune the recall messages (``types``: ``customType`` values) from the Pi session file ``path``.

    Without ``confirm`` only the plan is made (status ``preview``; nothing is written). With it, the file is
    rewritten atomically with a backup beside it (or in ``backup_dir``) and checked afterwards (``pruned``; the
    original is put back if the check fails: ``failed``). A file modified within ``min_age`` seconds (a live
    session?) or with other hard links is ``refused`` unless ``force``. Other statuses: ``clean`` (nothing to
    remove), ``not-a-session``. ``now`` replaces the clock (tests)."""
    # A symlinked session is pruned at its target (what the user means), and the link stays a link: the new
    # file, its temporary name and the backup all live beside the real file.
    real = Path(os.path.realpath(path))
    link = str(real) if path.is_symlink() else None

    def outcome(status: str, plan: dict[str, Any], backup: str | None = None,
                reason: str | None = None) -> PruneResult:  # names as the import writes them (UTF-8 text)
        return PruneResult(source_name(path), status, plan, backup and source_name(backup), reason,
                           link and source_name(link))

    clean_stray_temps(real.parent)
    own_backups = own_backup_links(real, backup_dir)
    first = real.stat()
    plan = plan_prune(real, types)
    if plan.problem:
        return outcome("not-a-session", plan.to_dict(), reason=plan.problem)
    if not plan.changes:
        return outcome("clean", plan.to_dict())
    # Another hard link: the rename gives this name the new file, and every other name keeps the old one, recall
    # included (and could still be appended to by pi). Refused unless --force, so it is never done unknowingly.
    others = first.st_nlink - 1 - len(own_backups)
    links = (f"{others} other hard link(s) to this file keep the original bytes, recall included: "
             "pruning replaces this name only") if others > 0 else None
    if not confirm:
        return outcome("preview", plan.to_dict(), reason=links)
    if links and not force:
        return outcome("refused", plan.to_dict(),
                       reason=f"{links} (prune each name, or remove the other links; --force rewrites this "
                              "name alone)")
    age = (now if now is not None else time.time()) - first.st_mtime
    if age < min_age and not force:
        return outcome("refused", plan.to_dict(),
                       reason=f"modified {age:.0f} s ago, within --min-age {min_age:.0f} s: it may be a live "
                              "session (use --force if it is not)")
    if (plan.size, plan.mtime_ns) != (first.st_size, first.st_mtime_ns):
        return outcome("refused", plan.to_dict(), reason="the file changed while it was read")
    for stale in own_backups:  # a killed run's backup: the file itself, which the new backup names again
        stale.unlink(missing_ok=True)
    backup = backup_path(real, backup_dir)
    try:
        install_with_backup(real, plan, first, backup, copy=others > 0)
    except PruneRefused as exc:
        return outcome("refused", plan.to_dict(), reason=str(exc))
    try:
        problem_after = check_file(real, plan, backup, plan.entries)
    except Exception as exc:  # the new file is in place: whatever went wrong, the original goes back
        problem_after = f"{type(exc).__name__} while reading it back, a bug in hindsight-batch"
    if problem_after:
        restore(backup, real, force=True, min_age=0)
        return outcome("failed", plan.to_dict(), str(backup),
                       reason=f"check after writing failed ({problem_after}); the original was put back")
    make_private(backup)
    return outcome("pruned", plan.to_dict(), str(backup), reason=links)


def iter_results(paths: Iterable[Path], **options: Any) -> Iterator[PruneResult]:
    """:func:`prune_file` for each path (``options`` are its keywords); a file that cannot be read is ``failed``."""
    for path in paths:
        try:
            yield prune_file(path, **options)
        except OSError as exc:
            yield PruneResult(source_name(path), "failed", {}, reason=f"{exc.strerror or exc}")
        except Exception as exc:  # a bug met in one file: named, and every other file is still pruned
            from hindsight_batch.redaction.messages import failure_reason

            yield PruneResult(source_name(path), "failed", {},
                              reason=f"{failure_reason(exc)} (a bug in hindsight-batch; the file was not changed)")


def parse_duration(value: str) -> float:
    """``--min-age``'s value in seconds: a number with an optional unit (s, m, h, d)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", value)
    if not match:
        raise UsageError(f"--min-age: not a duration: {value!r} (e.g. 30m, 2h, 90s, 0)")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
