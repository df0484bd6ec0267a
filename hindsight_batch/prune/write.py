"""Writing a planned prune: the original's bytes with the edits applied, a backup of the original, and the atomic
replacement (:func:`hindsight_batch.base.fsutil.replace_file`) guarded against a file that changed meanwhile."""

from __future__ import annotations

import contextlib
import errno
import glob
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from hindsight_batch.base.fsutil import (
    PRIVATE_FILE,
    fsync_dir,
    open_private,
    open_regular_file,
    private_dir,
    replace_file,
    write_all,
)
from hindsight_batch.errors import UsageError
from hindsight_batch.prune.plan import Edit, PrunePlan

BACKUP_MARK = ".hindsight-prune-"
CHUNK = 1 << 20


class PruneRefused(UsageError):
    """The file must not be rewritten now (changed during the run, too fresh, or the check failed). A file's refusal
    is its result (``prune_file``); only ``--restore`` ends with it, exit 2."""


def regions(plan: PrunePlan) -> Iterator[tuple[int, int, bytes]]:
    """(source offset, length, replacement after it): the unchanged runs of the original, in order."""
    position = 0
    for edit in [*plan.edits, Edit(plan.size, 0, b"")]:
        yield position, edit.offset - position, edit.replacement
        position = edit.offset + edit.length


def write_new(plan: PrunePlan, out: int) -> None:
    """The original with the edits applied. Unchanged runs are copied inside the kernel (``copy_file_range``),
    falling back to reads and writes where that is not possible."""
    with open_regular_file(plan.path) as source:
        if os.fstat(source.fileno()).st_size < plan.size:
            raise PruneRefused("the file got shorter while it was being rewritten")
        written = 0
        for offset, length, replacement in regions(plan):
            written += copy_range(source.fileno(), out, offset, length, written)
            write_all(out, replacement)
            written += len(replacement)


def copy_range(source: int, out: int, offset: int, length: int, out_offset: int) -> int:
    """Copy ``length`` bytes at ``offset`` of ``source`` to ``out_offset`` of ``out`` (left positioned after them);
    a source that ends before is refused."""
    done = 0
    try:
        while done < length:
            count = os.copy_file_range(source, out, length - done, offset + done, out_offset + done)
            if count == 0:
                raise PruneRefused("the file got shorter while it was being rewritten")
            done += count
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF):
            raise
        while done < length:  # a file system without in-kernel copies
            chunk = os.pread(source, min(CHUNK, length - done), offset + done)
            if not chunk:
                raise PruneRefused("the file got shorter while it was being rewritten") from None
            os.pwrite(out, chunk, out_offset + done)
            done += len(chunk)
    os.lseek(out, out_offset + length, os.SEEK_SET)
    return length


def temp_name(path: Path) -> Path:
    """Where a new version is named before its rename (where the file system cannot keep it unnamed): a name
    :func:`clean_stray_temps` recognises, with the writer's pid."""
    return path.with_name(f".{path.name}{BACKUP_MARK}{os.getpid()}.tmp")


def clean_stray_temps(folder: Path) -> None:
    """Remove temporary names a killed run left (their writer's pid is gone)."""
    for candidate in folder.glob(f".*{BACKUP_MARK}*.tmp"):
        pid = candidate.name.rsplit("-", 1)[-1].removesuffix(".tmp")
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            candidate.unlink(missing_ok=True)


def own_backup_links(path: Path, backup_dir: Path | None) -> list[Path]:
    """Backups of ``path`` that are ``path`` itself: a run killed after linking its backup and before the rename
    left the original in place with the backup as a second name. They are not other hard links (the rename would
    leave no one else the old file), and nothing is lost removing them."""
    here = path.stat()
    if here.st_nlink == 1:
        return []
    found = []
    for folder in dict.fromkeys((path.parent, backup_dir or path.parent)):
        for candidate in folder.glob(f"{glob.escape(path.name)}{BACKUP_MARK}*.bak"):
            with contextlib.suppress(OSError):
                there = candidate.stat(follow_symlinks=False)
                if (there.st_dev, there.st_ino) == (here.st_dev, here.st_ino):
                    found.append(candidate)
    return found


def same_file(path: Path, size: int, mtime_ns: int) -> bool:
    """Whether ``path`` still has the size and mtime it had when planned (pi appends: both would move)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return False
    return (stat.st_size, stat.st_mtime_ns) == (size, mtime_ns)


def backup_path(path: Path, backup_dir: Path | None) -> Path:
    """``<file>.hindsight-prune-<UTC time>.bak``, beside ``path`` or in ``backup_dir``."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return (backup_dir or path.parent) / f"{path.name}{BACKUP_MARK}{stamp}.bak"


def install_with_backup(path: Path, plan: PrunePlan, stat: os.stat_result, backup: Path, copy: bool) -> None:
    """Replace ``path`` with the planned new version, keeping its mode, owner and mtime (pi picks "the newest
    session" by mtime), the original bytes kept as ``backup``; refused if the file changed since it was planned."""

    def unchanged() -> None:
        if not same_file(path, plan.size, plan.mtime_ns):
            raise PruneRefused("the file changed while it was being rewritten (a live session?)")

    def produce(fd: int) -> None:
        write_new(plan, fd)
        unchanged()
        make_backup(path, backup, copy)

    try:
        replace_file(path, produce, like=stat, times_ns=(stat.st_atime_ns, stat.st_mtime_ns),
                     before_rename=unchanged, temp=temp_name(path))
    except BaseException:
        if backup.exists() and same_file(path, plan.size, plan.mtime_ns):
            backup.unlink()  # the original is still in place: no backup needed
        raise


def make_backup(path: Path, backup: Path, copy: bool) -> None:
    """The original bytes under the backup name: the original inode itself (a hard link, no copy) when this is
    its only name, so that after the rename the backup is its only name; otherwise (other hard links, which pi
    could still append to, or another file system) a private copy."""
    if backup.exists():
        raise PruneRefused(f"backup {backup} already exists")
    private_dir(backup.parent)
    if not copy:
        try:
            os.link(path, backup)
            fsync_dir(backup.parent)
            return
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                raise
    with open_regular_file(path) as source, open_private(backup, "xb") as out:
        stat = os.fstat(source.fileno())
        copy_range(source.fileno(), out.fileno(), 0, stat.st_size, 0)
        os.utime(out.fileno(), ns=(stat.st_atime_ns, stat.st_mtime_ns))
        os.fsync(out.fileno())
    fsync_dir(backup.parent)


def make_private(backup: Path) -> None:
    """A linked backup is 0600 once the rename left it the inode's only name (before that, the mode belonged to
    the live session file too). Not for someone else's file, nor for an inode another name still shares."""
    stat = backup.stat()
    if stat.st_nlink == 1 and stat.st_uid == os.geteuid():
        os.chmod(backup, PRIVATE_FILE)

