"""The one atomic-write routine (``fsutil.replace_file``) behind the queue's rewrites and prune: a file that is
replaced keeps its mode and owner, a new or private one is 0600, the folder is fsynced after the rename, and a
failure leaves the old file and no temporary one, with or without unnamed temporary files."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hindsight_batch import prune
from hindsight_batch.base import fsutil
from hindsight_batch.queue.store import append_lines, rewrite_queue
from tests.conftest import SessionBuilder

NOBODY = 65534


def folder_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The inodes of the folders fsynced from now on (``os.fsync`` wrapped: fsutil is plain Python)."""
    seen: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            seen.append(info.st_ino)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


@pytest.fixture(params=["unnamed", "named"])
def temp_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways the new version is made: an O_TMPFILE file, or a named one where the file system has none."""
    if request.param == "named":
        monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    return str(request.param)


def queue_file(tmp_path: Path, mode: int) -> Path:
    queue = tmp_path / "queues" / "s.auto.jsonl"
    queue.parent.mkdir()
    queue.write_bytes(b'{"a":1}\n{"b":2}\n')
    os.chmod(queue, mode)
    return queue


def test_a_rewritten_queue_keeps_its_mode_and_the_folder_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, temp_kind: str
) -> None:
    queue = queue_file(tmp_path, 0o640)
    fsyncs = folder_fsyncs(monkeypatch)
    rewrite_queue(queue, [b'{"b":2}'])
    assert queue.read_bytes() == b'{"b":2}\n'
    assert stat.S_IMODE(queue.stat().st_mode) == 0o640
    assert queue.parent.stat().st_ino in fsyncs
    assert sorted(p.name for p in queue.parent.iterdir()) == ["s.auto.jsonl"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_a_rewritten_queue_keeps_its_owner(tmp_path: Path, temp_kind: str) -> None:
    queue = queue_file(tmp_path, 0o644)
    os.chown(queue, NOBODY, NOBODY)
    rewrite_queue(queue, [b'{"a":1}'])
    info = queue.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (NOBODY, NOBODY, 0o644)


def test_side_files_are_private_whether_new_or_not(tmp_path: Path, temp_kind: str) -> None:
    dead = tmp_path / "q.dead.jsonl"
    old = os.umask(0)
    try:
        append_lines(dead, [{"id": "a"}])
        assert stat.S_IMODE(dead.stat().st_mode) == 0o600  # new: 0600 whatever the umask
        os.chmod(dead, 0o644)
        append_lines(dead, [{"id": "b"}])
    finally:
        os.umask(old)
    assert stat.S_IMODE(dead.stat().st_mode) == 0o600
    assert [json.loads(line)["id"] for line in dead.read_text().splitlines()] == ["a", "b"]


@pytest.mark.parametrize("where", ["write", "before_rename"])
def test_a_failure_leaves_the_old_file_and_no_temporary_one(tmp_path: Path, temp_kind: str, where: str) -> None:
    (tmp_path / "d").mkdir()
    target = tmp_path / "d" / "f"
    target.write_bytes(b"old")

    def fail(_fd: int | None = None) -> None:
        raise OSError("disk full")

    write: Callable[[int], None] = fail if where == "write" else (lambda fd: fsutil.write_all(fd, b"new"))
    with pytest.raises(OSError, match="disk full"):
        fsutil.replace_file(target, write, before_rename=fail if where == "before_rename" else None)
    assert target.read_bytes() == b"old"
    assert [p.name for p in target.parent.iterdir()] == ["f"]


def test_times_and_a_given_mode_are_applied(tmp_path: Path, temp_kind: str) -> None:
    target = tmp_path / "new"
    like = tmp_path / "like"
    like.write_bytes(b"")
    os.chmod(like, 0o604)
    fsutil.replace_file(target, lambda fd: fsutil.write_all(fd, b"x"), like=like.stat(), times_ns=(1, 2_000_000_000))
    info = target.stat()
    assert (target.read_bytes(), stat.S_IMODE(info.st_mode), info.st_mtime_ns) == (b"x", 0o604, 2_000_000_000)


def recalled_session(path: Path) -> Path:
    """A session at ``path`` whose one recall entry (text ``PRUNE-ME``) prune removes."""
    b = SessionBuilder()
    u = b.user("question")
    b.raw(json.dumps({"type": "custom_message", "customType": "hindsight-recall", "id": "r1", "parentId": u,
                      "timestamp": "2026-05-01T10:00:00.000Z", "content": "PRUNE-ME", "display": False}))
    b.leaf = "r1"
    b.assistant("answer")
    return b.write(path)


def test_a_pruned_session_keeps_its_owner_and_its_folder_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, temp_kind: str
) -> None:
    path = recalled_session(tmp_path / "sessions" / "s.jsonl")
    os.chmod(path, 0o640)
    if os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)
    before = path.stat()
    fsyncs = folder_fsyncs(monkeypatch)
    result = prune.prune_file(path, confirm=True, force=True)
    assert result.status == "pruned" and b"PRUNE-ME" not in path.read_bytes()
    after = path.stat()
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (before.st_uid, before.st_gid, 0o640)
    assert path.parent.stat().st_ino in fsyncs


def file_fsyncs_before_rename(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int]]:
    """("fsync", inode, size) for each regular file fsynced and ("rename", inode, size) for each file renamed into
    place, in order (``os.fsync`` and ``os.replace`` wrapped)."""
    events: list[tuple[str, int, int]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode):
            events.append(("fsync", info.st_ino, info.st_size))
        real_fsync(fd)

    def replace(src: Any, dst: Any, **kwargs: Any) -> None:
        info = os.stat(src, dir_fd=kwargs.get("src_dir_fd"))
        events.append(("rename", info.st_ino, info.st_size))
        real_replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return events


def assert_flushed_before_rename(events: list[tuple[str, int, int]], path: Path) -> None:
    """The file now at ``path`` reached the disk whole before it was renamed there: a power cut after the rename
    cannot leave ``path`` empty or cut short (the rename itself is durable by the folder's fsync)."""
    final = path.stat()
    rename = events.index(("rename", final.st_ino, final.st_size))
    assert ("fsync", final.st_ino, final.st_size) in events[:rename], events


def test_a_rewritten_queue_is_on_disk_before_it_is_renamed_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, temp_kind: str
) -> None:
    queue = queue_file(tmp_path, 0o640)
    events = file_fsyncs_before_rename(monkeypatch)
    rewrite_queue(queue, [b'{"b":2}'])
    assert queue.read_bytes() == b'{"b":2}\n'
    assert_flushed_before_rename(events, queue)


def test_a_pruned_session_is_on_disk_before_it_is_renamed_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, temp_kind: str
) -> None:
    path = recalled_session(tmp_path / "sessions" / "s.jsonl")
    events = file_fsyncs_before_rename(monkeypatch)
    assert prune.prune_file(path, confirm=True, force=True).status == "pruned"
    assert b"PRUNE-ME" not in path.read_bytes()
    assert_flushed_before_rename(events, path)
