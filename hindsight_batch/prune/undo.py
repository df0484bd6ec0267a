"""Undoing a prune: its backup put back in place of the session file (``--restore``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hindsight_batch.base.fsutil import open_regular_file, replace_file
from hindsight_batch.errors import UsageError
from hindsight_batch.prune.write import BACKUP_MARK, PruneRefused, copy_range, temp_name


def original_for(backup: Path) -> Path:
    """The session file a backup beside it was made of (its name without the backup's suffix)."""
    name = backup.name
    if BACKUP_MARK not in name or not name.endswith(".bak"):
        raise UsageError(f"{backup}: not a prune backup (expected <file>{BACKUP_MARK}<time>.bak); give --to PATH")
    return backup.with_name(name[: name.rindex(BACKUP_MARK)])


def restore(backup: Path, target: Path | None = None, *, force: bool = False, min_age: float = 1800.0,
            now: float | None = None) -> Path:
    """Put a backup's bytes and mtime back at ``target`` (through a symlink, at the link's target), atomically.
    The file keeps the permissions and owner it has (the pruned file was given the original's; the backup itself
    is private); a target that no longer exists gets the backup's."""
    if not backup.is_file():
        raise UsageError(f"no such backup: {backup}")
    if target is None:
        target = original_for(backup)
        if not target.exists():  # a --backup-dir backup: its session file is elsewhere, never beside it
            raise UsageError(f"{backup}: there is no {target.name} beside this backup to put it back in place of "
                             f"(a --backup-dir backup?); give --to PATH")
    target = Path(os.path.realpath(target))
    if target.exists() and not force:
        age = (now if now is not None else time.time()) - target.stat().st_mtime
        if age < min_age:
            raise PruneRefused(f"{target} was modified {age:.0f} s ago (within --min-age); use --force")
    stat = backup.stat()

    def produce(fd: int) -> None:
        with open_regular_file(backup) as source:
            copy_range(source.fileno(), fd, 0, stat.st_size, 0)

    like = target.stat() if target.exists() else stat
    replace_file(target, produce, like=like, times_ns=(stat.st_atime_ns, stat.st_mtime_ns), temp=temp_name(target))
    return target
