"""prune-recall-messages: take persisted recall out of Pi session files before the extension is uninstalled,
so it is never sent to a model provider again, and lose nothing else (S6).

How it stays safe:

* **Plan first, from a read-only pass.** Recall entries (``custom_message`` with ``customType``
  ``hindsight-recall``, or a ``message`` with role ``custom``/``hookMessage`` and that type; more types with
  ``--custom-type``) are found; the children of each are re-pointed to its nearest surviving ancestor;
  ``compaction.firstKeptEntryId`` moves to the next surviving entry on the compaction's path;
  ``branch_summary.fromId`` moves to the nearest surviving ancestor. A ``label`` whose target is removed is
  removed too (pi shows the last label for an entry: moved onto an ancestor, it would overwrite the user's own
  label there). In version 1 files
  (no ids: a linear list) entries are removed by position and each later compaction's ``firstKeptEntryIndex`` is
  renumbered. A recall entry that is the active leaf, where removing it would make pi resume on another branch,
  is neutralised instead: rewritten as a ``custom`` entry (kept in the tree, never sent to a model); so is a
  dropped label there.
* **Links.** A symlink is pruned at its target (the link stays a link). A file with other hard links is refused
  unless ``--force``: the rename changes this name only, the other names keep the old file.
* **Only the bytes that must change.** The new file is the old one with removed lines cut out and changed
  values replaced in place (a re-pointed ``parentId`` is swapped as a byte span when the line starts with pi's own
  key order, otherwise the line is re-serialized compactly with its key order and non-ASCII text). Blank,
  malformed and glued lines are copied as they are; a change that would need a glued line rewritten is not made.
* **Atomic, with a backup.** The new content goes to an unnamed temporary file in the same folder (``O_TMPFILE``,
  so a kill leaves nothing behind), is fsynced, given the original's permissions, owner and mtime (pi picks "the
  newest session" by mtime), and renamed over the original. The original bytes stay as a hard-linked backup,
  made 0600 once it is the inode's only name (a private copy with ``--backup-dir`` on another file system, or
  when other hard links could still change the inode). A file that changed during the run, or was modified
  within ``--min-age`` (a live session), is refused unless ``--force``.
* **Checked afterwards.** The new file is read back: its bytes hash to what was written, every ``parentId``
  resolves (or is null), no label points at a removed entry, and the active path equals the old one minus the
  removed entries. If not, the backup is
  put back.
"""

from __future__ import annotations

import errno
import json
import mmap
import os
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from hindsight_batch.errors import UsageError
from hindsight_batch.fsutil import PRIVATE_FILE, open_private, private_dir
from hindsight_batch.session.jsonl import BIG_LINE_BYTES, Malformed, RawLine, parse_line

DEFAULT_TYPES = ("hindsight-recall",)
BACKUP_MARK = ".hindsight-prune-"
_CHUNK = 1 << 20
# pi writes message entries as {"type":"message","id":…,"parentId":…,…}: when a line starts so, these are the
# top-level fields. _FAST reads a plain message line from that prefix alone (ids with no escapes); _SPAN finds the
# bytes of the parentId value of any line that starts in pi's key order, so a re-pointed parent is swapped in place.
_FAST = re.compile(rb'\{"type":"message","id":"([^"\\]*+)","parentId":(?:null|"([^"\\]*+)")[,}]')
_SPAN = re.compile(rb'\{"type":"[A-Za-z_]+","id":"(?:[^"\\]|\\.)*","parentId":(null|"(?:[^"\\]|\\.)*")[,}]')


class PruneRefused(Exception):
    """The file must not be rewritten now (changed during the run, too fresh, or the check failed)."""


class Entry(NamedTuple):
    """One object of the file (a tuple: a 500 MB session has a hundred thousand of them)."""

    seq: int
    lineno: int
    offset: int
    length: int
    terminated: bool
    glued: bool
    id: str | None
    parent: str | None
    type: str
    recall: bool
    first_kept: str | None = None
    first_kept_index: int | None = None
    target_id: str | None = None
    from_id: str | None = None


@dataclass
class Edit:
    offset: int
    length: int
    replacement: bytes


@dataclass
class PrunePlan:
    path: Path
    size: int
    mtime_ns: int
    version: int
    types: tuple[str, ...]
    removed: list[str] = field(default_factory=list)
    dropped_labels: list[str] = field(default_factory=list)
    removed_seqs: set[int] = field(default_factory=set)
    kept: set[int] = field(default_factory=set)  # recall entries deliberately left (a glued line needs them)
    neutralised: list[str] = field(default_factory=list)
    relinked: list[dict[str, str | None]] = field(default_factory=list)
    refs_fixed: list[dict[str, str | int | None]] = field(default_factory=list)
    left_alone: list[str] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    expected_path: list[str] = field(default_factory=list)
    dangling_before: set[str] = field(default_factory=set)  # entries whose parent was already missing
    entries: list[Entry] = field(default_factory=list, repr=False)
    problem: str | None = None

    @property
    def changes(self) -> bool:
        return bool(self.edits)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": str(self.path), "version": self.version, "remove": self.removed, "drop_labels": self.dropped_labels,
            "neutralise": self.neutralised,
            "relink": self.relinked, "fix_references": self.refs_fixed, "left_alone": self.left_alone,
            "problem": self.problem,
        }


def _is_recall(obj: dict[str, Any], types: tuple[str, ...]) -> bool:
    if obj.get("type") == "custom_message":
        return obj.get("customType") in types
    message = obj.get("message")
    return (
        obj.get("type") == "message"
        and isinstance(message, dict)
        and message.get("role") in ("custom", "hookMessage")
        and message.get("customType") in types
    )


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _marker_positions(view: mmap.mmap, markers: tuple[bytes, ...]) -> list[int]:
    """Every offset where a marker occurs: a C-speed search over the whole file, not a test per line."""
    found: list[int] = []
    for marker in markers:
        pos = view.find(marker)
        while pos != -1:
            found.append(pos)
            pos = view.find(marker, pos + 1)
    return sorted(found)


def index_file(path: Path, types: tuple[str, ...]) -> tuple[int, list[Entry], str | None]:
    """Read ``path`` once: its version and an :class:`Entry` per object after the header.

    Lines that start in pi's own key order and hold no recall marker (nearly all of them) are indexed from that
    prefix alone; every other line is parsed in full."""
    if path.stat().st_size == 0:
        return 0, [], "empty file"
    entries: list[Entry] = []
    version = 0
    with path.open("rb") as stream, mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as view:
        markers = _marker_positions(view, tuple(t.encode() for t in types))
        next_marker = 0
        size = len(view)
        offset = 0
        lineno = 0
        match = _FAST.match
        find = view.find
        while offset < size:  # one line per turn, never copied unless it must be parsed
            end = find(b"\n", offset)
            terminated = end != -1
            if not terminated:
                end = size
            lineno += 1
            length = end - offset
            if length == 0:
                offset = end + 1
                continue
            while next_marker < len(markers) and markers[next_marker] < offset:
                next_marker += 1
            has_marker = next_marker < len(markers) and markers[next_marker] < end
            fast = match(view, offset, end) if version and not has_marker else None
            if fast is not None:
                raw_id, raw_parent = fast.group(1, 2)
                entries.append(Entry(
                    len(entries), lineno, offset, length, terminated, False, raw_id.decode(),
                    None if raw_parent is None else raw_parent.decode(), "message", False,
                ))
                offset = end + 1
                continue
            if view[offset] in b" \t\r" and not view[offset:end].strip():
                offset = end + 1
                continue
            data = view[offset : offset + length] if length <= BIG_LINE_BYTES else None
            line = RawLine(lineno, offset, length, data, 0, length, terminated)
            objects = [o for o in parse_line(stream, line) if not isinstance(o, Malformed)]
            for obj in (o.obj for o in objects):
                if not version:
                    if obj.get("type") != "session" or not isinstance(obj.get("id"), str):
                        return 0, [], "not a Pi session (no header on its first object)"
                    raw_version = obj.get("version", 1)
                    version = raw_version if isinstance(raw_version, int) else 0
                    if version not in (1, 2, 3):
                        return version, [], f"unsupported session version {raw_version!r}"
                    continue
                if obj.get("type") == "session":
                    continue
                entries.append(_entry(obj, line, len(entries), len(objects) > 1, types))
            offset = end + 1
    if not version:
        return 0, [], "no readable session header"
    return version, entries, None


def _entry(obj: dict[str, Any], line: RawLine, seq: int, glued: bool, types: tuple[str, ...]) -> Entry:
    def text(key: str) -> str | None:
        value = obj.get(key)
        return value if isinstance(value, str) else None

    index = obj.get("firstKeptEntryIndex")
    return Entry(
        seq, line.lineno, line.offset, line.length, line.terminated, glued, text("id"), text("parentId"),
        str(obj.get("type")), _is_recall(obj, types), text("firstKeptEntryId"),
        index if isinstance(index, int) else None, text("targetId"), text("fromId"),
    )


def _path_to(leaf: Entry, by_id: dict[str, Entry]) -> list[Entry]:
    """Root-to-leaf over parentId; a missing parent ends it, and a cycle is cut where an entry would repeat."""
    path: list[Entry] = []
    get = by_id.get
    node: Entry | None = leaf
    while node is not None and len(path) <= len(by_id):
        path.append(node)
        node = get(node.parent) if node.parent is not None else None
    if node is not None:  # longer than the file: a cycle; walk again with a guard
        path, seen = [], set()
        node = leaf
        while node is not None and node.seq not in seen:
            seen.add(node.seq)
            path.append(node)
            node = get(node.parent) if node.parent is not None else None
    path.reverse()
    return path


def plan_prune(path: Path, types: Iterable[str] = DEFAULT_TYPES) -> PrunePlan:
    types = tuple(dict.fromkeys(types))
    stat = path.stat()
    version, entries, problem = index_file(path, types)
    plan = PrunePlan(path, stat.st_size, stat.st_mtime_ns, version, types, entries=entries, problem=problem)
    if problem or not entries:
        return plan
    if version == 1:
        _plan_v1(plan, entries)
    else:
        _plan_tree(plan, entries)
    plan.edits.sort(key=lambda e: e.offset)
    return plan


def _removal(entry: Entry) -> Edit:
    return Edit(entry.offset, entry.length + (1 if entry.terminated else 0), b"")


def _plan_v1(plan: PrunePlan, entries: list[Entry]) -> None:
    """Version 1: a linear list; entries go by position and compaction indices (header = 0) are renumbered."""
    removed = {e.seq for e in entries if e.recall and not e.glued}
    plan.left_alone += [f"line {e.lineno}: recall inside a glued line (pi ignores that line)" for e in entries
                        if e.recall and e.glued]
    if not removed:
        return
    survivors = [e.seq for e in entries if e.seq not in removed]
    for entry in entries:
        if entry.seq in removed:
            plan.removed.append(f"line {entry.lineno}")
            plan.edits.append(_removal(entry))
            continue
        if entry.type != "compaction" or entry.first_kept_index is None:
            continue
        target = entry.first_kept_index - 1  # seq of the first kept entry
        while target in removed:
            target += 1
        new_index = 1 + sum(1 for seq in survivors if seq < target)
        if new_index != entry.first_kept_index:
            if entry.glued:
                plan.left_alone.append(f"line {entry.lineno}: compaction inside a glued line not renumbered")
                continue
            plan.edits.append(_rewrite(plan.path, entry, {"firstKeptEntryIndex": new_index}))
            plan.refs_fixed.append({"line": entry.lineno, "firstKeptEntryIndex": new_index,
                                    "was": entry.first_kept_index})
    plan.removed_seqs = removed
    plan.expected_path = [f"L{e.lineno}" for e in entries if e.seq not in removed]


def _plan_tree(plan: PrunePlan, entries: list[Entry]) -> None:
    by_id = {e.id: e for e in entries if e.id is not None}
    old_path = _path_to(entries[-1], by_id)
    plan.dangling_before = {e.id or "" for e in entries if e.parent is not None and e.parent not in by_id}
    recall = {e.seq for e in entries if e.recall and e.id is not None and by_id.get(e.id) is e and not e.glued}
    for e in entries:
        if e.recall and e.glued:
            plan.left_alone.append(f"line {e.lineno}: recall inside a glued line (pi ignores that line)")
    labels = [e for e in entries if e.type == "label" and e.target_id is not None]
    keep: set[int] = set()  # entries that must stay: a line that would have to change cannot be rewritten
    neutralise: set[int] = set()
    leaf = entries[-1]
    while True:  # each turn keeps or neutralises one more entry, so this ends
        removed = recall - keep - neutralise
        stuck = _drop_labels([e for e in labels if e.seq not in neutralise], by_id, removed, keep)
        if stuck is not None:
            keep.add(stuck.seq)
            plan.left_alone.append(f"line {stuck.lineno}: kept, a label that cannot be removed refers to it")
            continue
        changes = _tree_changes(entries, by_id, removed, neutralise)
        blocked = {seq for seq in changes if entries[seq].glued}
        if blocked:  # a removal whose consequences would need a glued line rewritten is not made
            parents = {p.seq for p in (by_id.get(entries[seq].parent or "") for seq in blocked)
                       if p is not None and p.seq in removed} or set(removed)
            keep |= parents
            plan.left_alone += [f"line {entries[seq].lineno}: kept, a glued line refers to it" for seq in parents]
            continue
        # The active leaf: if it is removed and pi would then resume elsewhere, neutralise it instead.
        if leaf.seq in removed:
            survivors = [e for e in entries if e.seq not in removed]
            if survivors and survivors[-1].id != _surviving_ancestor(leaf, by_id, removed):
                neutralise.add(leaf.seq)
                continue
        break
    plan.kept = {seq for seq in keep if entries[seq].recall}
    plan.removed_seqs = set(removed)
    changes = _tree_changes(entries, by_id, removed, neutralise)
    for entry in entries:
        if entry.seq in removed:
            (plan.removed if entry.recall else plan.dropped_labels).append(entry.id or f"line {entry.lineno}")
            plan.edits.append(_removal(entry))
        elif entry.seq in changes:
            values = changes[entry.seq]
            span = _parent_span(plan.path, entry) if set(values) == {"parentId"} and not entry.glued else None
            if span is not None:
                start, end = span
                new = values["parentId"]
                plan.edits.append(Edit(start, end - start, b"null" if new is None else _json_bytes(new)))
            else:
                plan.edits.append(_rewrite(plan.path, entry, values))
            if "parentId" in values:
                plan.relinked.append({"id": entry.id, "from": entry.parent, "to": values["parentId"]})
            for key in ("firstKeptEntryId", "targetId", "fromId"):
                if key in values:
                    plan.refs_fixed.append({"id": entry.id, "field": key, "to": values[key]})
            if entry.seq in neutralise:
                plan.neutralised.append(entry.id or "")
    plan.expected_path = [e.id or "" for e in old_path if e.seq not in removed]


def _parent_span(path: Path, entry: Entry) -> tuple[int, int] | None:
    """Where the parentId value's bytes are, if the line starts in pi's key order."""
    with path.open("rb") as stream:
        stream.seek(entry.offset)
        head = stream.read(min(entry.length, 4096))
    found = _SPAN.match(head)
    return None if found is None else (entry.offset + found.start(1), entry.offset + found.end(1))


def _surviving_ancestor(entry: Entry, by_id: dict[str, Entry], removed: set[int]) -> str | None:
    parent = entry.parent
    seen: set[str] = set()
    while parent is not None and parent in by_id and by_id[parent].seq in removed and parent not in seen:
        seen.add(parent)
        parent = by_id[parent].parent
    return parent


def _drop_labels(labels: list[Entry], by_id: dict[str, Entry], removed: set[int], keep: set[int]) -> Entry | None:
    """Add to ``removed`` every label whose target is removed (pi's last label for an entry wins, so moving one
    onto another entry would overwrite that entry's own label). Returns a target that must stay instead, when
    such a label cannot be removed (inside a glued line, sharing its id, or itself kept)."""
    grew = True
    while grew:  # a label on a dropped label goes too
        grew = False
        for label in labels:
            target = by_id.get(label.target_id or "")
            if label.seq in removed or target is None or target.seq not in removed:
                continue
            if label.glued or label.seq in keep or by_id.get(label.id or "") is not label:
                return target
            removed.add(label.seq)
            grew = True
    return None


def _tree_changes(entries: list[Entry], by_id: dict[str, Entry], removed: set[int],
                  neutralise: set[int]) -> dict[int, dict[str, Any]]:
    removed_ids = {entries[seq].id for seq in removed}
    changes: dict[int, dict[str, Any]] = {}
    for entry in entries:
        if entry.seq in removed:
            continue
        values: dict[str, Any] = {}
        if entry.parent in removed_ids:
            ancestor = _surviving_ancestor(entry, by_id, removed)
            values["parentId"] = None if ancestor == entry.id else ancestor  # never a self-loop
        if entry.type == "compaction" and entry.first_kept in removed_ids:
            path = _path_to(entry, by_id)
            ids = [e.id for e in path]
            start = ids.index(entry.first_kept) if entry.first_kept in ids else len(path) - 1
            values["firstKeptEntryId"] = next(
                (e.id for e in path[start:] if e.seq not in removed), entry.id
            )
        if entry.type == "branch_summary" and entry.from_id is not None and entry.from_id in removed_ids:
            values["fromId"] = _surviving_ancestor(by_id[entry.from_id], by_id, removed) or "root"
        if entry.seq in neutralise:
            values["__neutralise__"] = True
        if values:
            changes[entry.seq] = values
    return changes


def _json_bytes(value: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: keep it as the \\u escape JSON allows
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("utf-8")


def _rewrite(path: Path, entry: Entry, values: dict[str, Any]) -> Edit:
    """Re-serialize one line with ``values`` applied, keeping key order and non-ASCII text."""
    with path.open("rb") as stream:
        stream.seek(entry.offset)
        obj = json.loads(_decode(stream.read(entry.length)))
    if values.pop("__neutralise__", False):
        kind = "label" if obj.get("type") == "label" else "recall"
        obj = {"type": "custom", "customType": f"hindsight-{kind}-pruned", "data": {},
               "id": obj.get("id"), "parentId": obj.get("parentId"), "timestamp": obj.get("timestamp")}
    for key, value in values.items():
        if value is None and key != "parentId":
            obj.pop(key, None)  # absent, not null: pi omits optional keys (parentId stays, null for a root)
        else:
            obj[key] = value
    return Edit(entry.offset, entry.length, _json_bytes(obj))


# -- writing -----------------------------------------------------------------------------------------------------

def _regions(plan: PrunePlan) -> Iterator[tuple[int, int, bytes]]:
    """(source offset, length, replacement after it): the unchanged runs of the original, in order."""
    position = 0
    for edit in [*plan.edits, Edit(plan.size, 0, b"")]:
        yield position, edit.offset - position, edit.replacement
        position = edit.offset + edit.length


def _write_new(plan: PrunePlan, out: int) -> None:
    """The original with the edits applied. Unchanged runs are copied inside the kernel (``copy_file_range``),
    falling back to writes from a memory map where that is not possible."""
    with plan.path.open("rb") as source:
        if os.fstat(source.fileno()).st_size < plan.size:
            raise PruneRefused("the file got shorter while it was being rewritten")
        written = 0
        for offset, length, replacement in _regions(plan):
            written += _copy(source.fileno(), out, offset, length, written)
            _write_all(out, replacement)
            written += len(replacement)


def _copy(source: int, out: int, offset: int, length: int, out_offset: int) -> int:
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
            chunk = os.pread(source, min(_CHUNK, length - done), offset + done)
            if not chunk:
                raise PruneRefused("the file got shorter while it was being rewritten") from None
            os.pwrite(out, chunk, out_offset + done)
            done += len(chunk)
    os.lseek(out, out_offset + length, os.SEEK_SET)
    return length


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _temp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}{BACKUP_MARK}{os.getpid()}.tmp")


def clean_stray_temps(folder: Path) -> list[Path]:
    """Remove temporary names a killed run left (their writer's pid is gone)."""
    removed = []
    for candidate in folder.glob(f".*{BACKUP_MARK}*.tmp"):
        pid = candidate.name.rsplit("-", 1)[-1].removesuffix(".tmp")
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            candidate.unlink(missing_ok=True)
            removed.append(candidate)
    return removed


def _open_temp(folder: Path) -> tuple[int, bool]:
    """An unnamed file in ``folder`` if the file system can (nothing to clean up after a kill)."""
    try:
        return os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o600), True
    except (AttributeError, OSError):
        return -1, False


def _same_file(path: Path, size: int, mtime_ns: int) -> bool:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return False
    return (stat.st_size, stat.st_mtime_ns) == (size, mtime_ns)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def backup_path(path: Path, backup_dir: Path | None) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return (backup_dir or path.parent) / f"{path.name}{BACKUP_MARK}{stamp}.bak"


def _install(path: Path, produce: Any, stat: os.stat_result, keep_mtime: bool, guard: Any = None,
             perms: os.stat_result | None = None) -> None:
    """Write a new version of ``path`` through ``produce(fd)`` and rename it into place atomically; ``guard()``
    runs just before the rename and may refuse. Mode and owner come from ``perms`` (default ``stat``)."""
    perms = perms or stat
    folder = path.parent
    fd, anonymous = _open_temp(folder)
    temp = _temp_name(path)
    if not anonymous:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        produce(fd)
        os.fsync(fd)
        os.fchmod(fd, perms.st_mode & 0o7777)
        if os.geteuid() == 0:
            os.fchown(fd, perms.st_uid, perms.st_gid)
        if keep_mtime:
            os.utime(fd, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        if anonymous:
            # linkat(…, AT_SYMLINK_FOLLOW) gives the unnamed file a name; a dir fd makes Python use linkat.
            folder_fd = os.open(folder, os.O_RDONLY)
            try:
                os.link(f"/proc/self/fd/{fd}", temp.name, dst_dir_fd=folder_fd, follow_symlinks=True)
            finally:
                os.close(folder_fd)
        if guard is not None:
            guard()
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)
    _fsync_dir(folder)


def check_file(path: Path, plan: PrunePlan, original: Path, entries: list[Entry]) -> str | None:
    """The checks after writing; returns what is wrong, or None.

    Every byte of the new file is read back and compared with the original (the unchanged runs) or with the
    planned replacement, so no other line changed. Each line holding a replacement is parsed again from the new
    file; with the entries of the unchanged lines (equal bytes, equal entries) that gives the new tree, in which
    every parentId must resolve (or be null) and the active path must be the old one minus the removed entries."""
    changed: dict[int, int] = {}  # original offset of a changed line -> its offset in the new file
    with path.open("rb") as new, original.open("rb") as old, \
            mmap.mmap(new.fileno(), 0, access=mmap.ACCESS_READ) as new_view, \
            mmap.mmap(old.fileno(), 0, access=mmap.ACCESS_READ) as old_view:
        position = 0
        for offset, length, replacement in _regions(plan):
            for start in range(0, length, _CHUNK):
                size = min(_CHUNK, length - start)
                here, there = position + start, offset + start
                if new_view[here : here + size] != old_view[there : there + size]:
                    return f"bytes at offset {here} differ from the original"
            position += length
            if new_view[position : position + len(replacement)] != replacement:
                return f"the change at offset {position} is not the planned one"
            if replacement:
                line_start = old_view.rfind(b"\n", 0, offset + length) + 1
                changed[line_start] = new_view.rfind(b"\n", 0, position) + 1
            position += len(replacement)
        if position != len(new_view):
            return "the new file has an unexpected length"
        if plan.version == 1:
            return None
        survivors: list[Entry] = []
        for entry in entries:
            if entry.seq in plan.removed_seqs:
                continue
            if entry.offset in changed:
                start = changed[entry.offset]
                end = new_view.find(b"\n", start)
                obj = json.loads(new_view[start : end if end != -1 else len(new_view)])
                entry = _entry(obj, RawLine(entry.lineno, start, entry.length, None, 0, entry.length,
                                            entry.terminated), entry.seq, False, plan.types)
            survivors.append(entry)
    by_id = {e.id: e for e in survivors if e.id is not None}
    if any(e.recall for e in survivors if not e.glued and e.seq not in plan.kept):
        return "a recall entry is still there"
    old_ids = {e.id for e in entries}
    if any(e.type == "label" and e.target_id in old_ids and e.target_id not in by_id for e in survivors):
        return "a label still points at a removed entry"
    dangling = {e.id or "" for e in survivors if e.parent is not None and e.parent not in by_id and not e.glued}
    if dangling - plan.dangling_before:
        return f"parentId does not resolve for {sorted(dangling - plan.dangling_before)[:5]}"
    new_path = [e.id or "" for e in _path_to(survivors[-1], by_id)] if survivors else []
    if new_path != plan.expected_path:
        return "the active path is not the old one minus the removed entries"
    return None


@dataclass
class PruneResult:
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
    # A symlinked session is pruned at its target (what the user means), and the link stays a link: the new
    # file, its temporary name and the backup all live beside the real file.
    real = Path(os.path.realpath(path))
    link = str(real) if path.is_symlink() else None

    def outcome(status: str, plan: dict[str, Any], backup: str | None = None, reason: str | None = None) -> PruneResult:
        return PruneResult(str(path), status, plan, backup, reason, link)

    clean_stray_temps(real.parent)
    first = real.stat()
    plan = plan_prune(real, types)
    if plan.problem:
        return outcome("not-a-session", plan.to_dict(), reason=plan.problem)
    if not plan.changes:
        return outcome("clean", plan.to_dict())
    # Another hard link: the rename gives this name the new file, and every other name keeps the old one, recall
    # included (and could still be appended to by pi). Refused unless --force, so it is never done unknowingly.
    links = (f"{first.st_nlink - 1} other hard link(s) to this file keep the original bytes, recall included: "
             "pruning replaces this name only") if first.st_nlink > 1 else None
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
    backup = backup_path(real, backup_dir)
    try:
        _install_with_backup(real, plan, first, backup, copy=first.st_nlink > 1)
    except PruneRefused as exc:
        return outcome("refused", plan.to_dict(), reason=str(exc))
    problem_after = check_file(real, plan, backup, plan.entries)
    if problem_after:
        restore(backup, real, force=True, min_age=0)
        return outcome("failed", plan.to_dict(), str(backup),
                           reason=f"check after writing failed ({problem_after}); the original was put back")
    _make_private(backup)
    return outcome("pruned", plan.to_dict(), str(backup), reason=links)


def _install_with_backup(path: Path, plan: PrunePlan, stat: os.stat_result, backup: Path, copy: bool) -> None:
    def unchanged() -> None:
        if not _same_file(path, plan.size, plan.mtime_ns):
            raise PruneRefused("the file changed while it was being rewritten (a live session?)")

    def produce(fd: int) -> None:
        _write_new(plan, fd)
        unchanged()
        _make_backup(path, backup, copy)

    try:
        _install(path, produce, stat, keep_mtime=True, guard=unchanged)
    except BaseException:
        if backup.exists() and _same_file(path, plan.size, plan.mtime_ns):
            backup.unlink()  # the original is still in place: no backup needed
        raise


def _make_backup(path: Path, backup: Path, copy: bool) -> None:
    """The original bytes under the backup name: the original inode itself (a hard link, no copy) when this is
    its only name, so that after the rename the backup is its only name; otherwise (other hard links, which pi
    could still append to, or another file system) a private copy."""
    if backup.exists():
        raise PruneRefused(f"backup {backup} already exists")
    private_dir(backup.parent)
    if not copy:
        try:
            os.link(path, backup)
            _fsync_dir(backup.parent)
            return
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                raise
    with path.open("rb") as source, open_private(backup, "xb") as out:
        stat = os.fstat(source.fileno())
        _copy(source.fileno(), out.fileno(), 0, stat.st_size, 0)
        os.utime(out.fileno(), ns=(stat.st_atime_ns, stat.st_mtime_ns))
        os.fsync(out.fileno())
    _fsync_dir(backup.parent)


def _make_private(backup: Path) -> None:
    """A linked backup is 0600 once the rename left it the inode's only name (before that, the mode belonged to
    the live session file too). Not for someone else's file, nor for an inode another name still shares."""
    stat = backup.stat()
    if stat.st_nlink == 1 and stat.st_uid == os.geteuid():
        os.chmod(backup, PRIVATE_FILE)


def original_for(backup: Path) -> Path:
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
        with backup.open("rb") as source:
            _copy(source.fileno(), fd, 0, stat.st_size, 0)

    _install(target, produce, stat, keep_mtime=True, perms=target.stat() if target.exists() else None)
    return target


def iter_results(paths: Iterable[Path], **options: Any) -> Iterator[PruneResult]:
    for path in paths:
        try:
            yield prune_file(path, **options)
        except OSError as exc:
            yield PruneResult(str(path), "failed", {}, reason=f"{exc.strerror or exc}")


def parse_duration(value: str) -> float:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", value)
    if not match:
        raise UsageError(f"--min-age: not a duration: {value!r} (e.g. 30m, 2h, 90s, 0)")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
