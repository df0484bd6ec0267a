"""Planning a prune: which entries go, which references move, and the byte edits that do it (nothing written)."""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hindsight_batch.base.fsutil import open_regular_file
from hindsight_batch.prune.index import DEFAULT_TYPES, Entry, index_file, path_to

# _SPAN finds the bytes of the parentId value of a line that starts in pi's key order ({"type":…,"id":…,
# "parentId":…}), so a re-pointed parent is swapped in place.
_SPAN = re.compile(rb'\{"type":"[A-Za-z_]+","id":"(?:[^"\\]|\\.)*","parentId":(null|"(?:[^"\\]|\\.)*")[,}]')


@dataclass
class Edit:
    """``length`` bytes at ``offset`` of the original become ``replacement`` (empty: a line removed)."""

    offset: int
    length: int
    replacement: bytes


@dataclass
class PrunePlan:
    """What a prune of one file does: its report fields, its byte edits, and what the check afterwards expects."""

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


def plan_prune(path: Path, types: Iterable[str] = DEFAULT_TYPES) -> PrunePlan:
    """What pruning ``path`` of the recall ``types`` would do (the preview), from one read-only pass."""
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
    for e in entries:
        if e.recall and e.glued:
            plan.left_alone.append(f"line {e.lineno}: recall inside a glued line (pi ignores that line)")
    # pi drops a glued line whole: the tree is the other lines', and a glued line is neither changed nor counted
    # (an object in it may keep pointing at a removed entry, where pi never reads it).
    visible = [e for e in entries if not e.glued]
    if not visible:
        return
    by_id = {e.id: e for e in visible if e.id is not None}
    leaf = visible[-1]  # where pi resumes
    old_path = path_to(leaf, by_id)
    plan.dangling_before = {e.id or "" for e in visible if e.parent is not None and e.parent not in by_id}
    # Every recall line goes, also one whose id a later line reuses (pi resolves the id to the later one, so
    # no path reaches it; its text would stay in the file).
    recall = {e.seq for e in visible if e.recall and e.id is not None}
    labels = [e for e in visible if e.type == "label" and e.target_id is not None]
    keep: set[int] = set()  # entries that must stay: a label that cannot be removed refers to them
    neutralise: set[int] = set()
    while True:  # each turn keeps or neutralises one more entry, so this ends
        removed = recall - keep - neutralise
        stuck = _drop_labels([e for e in labels if e.seq not in neutralise], by_id, removed, keep)
        if stuck is not None:
            keep.add(stuck.seq)
            plan.left_alone.append(f"line {stuck.lineno}: kept, a label that cannot be removed refers to it")
            continue
        # The active leaf: if it is removed and pi would then resume elsewhere, neutralise it instead.
        if leaf.seq in removed:
            survivors = [e for e in visible if e.seq not in removed]
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
    with open_regular_file(path) as stream:
        stream.seek(entry.offset)
        head = stream.read(min(entry.length, 4096))
    found = _SPAN.match(head)
    return None if found is None else (entry.offset + found.start(1), entry.offset + found.end(1))


def _surviving_ancestor(entry: Entry, by_id: dict[str, Entry], removed: set[int]) -> str | None:
    """The nearest ancestor that stays. None where there is none: the chain reaches a root, a parent no entry has,
    or a cycle of removed entries; pi's path ended there anyway, and null is how a root says so (an id that does
    not resolve would leave a dangling parent)."""
    parent = entry.parent
    seen: set[str] = set()
    while parent is not None and parent not in seen:
        node = by_id.get(parent)
        if node is None:
            return None
        if node.seq not in removed:
            return parent
        seen.add(parent)
        parent = node.parent
    return None


def _drop_labels(labels: list[Entry], by_id: dict[str, Entry], removed: set[int], keep: set[int]) -> Entry | None:
    """Add to ``removed`` every label whose target is removed (pi's last label for an entry wins, so moving one
    onto another entry would overwrite that entry's own label). Returns a target that must stay instead, when
    such a label cannot be removed (sharing its id, or itself kept)."""
    grew = True
    while grew:  # a label on a dropped label goes too
        grew = False
        for label in labels:
            target = by_id.get(label.target_id or "")
            if label.seq in removed or target is None or target.seq not in removed:
                continue
            if label.seq in keep or by_id.get(label.id or "") is not label:
                return target
            removed.add(label.seq)
            grew = True
    return None


def _tree_changes(entries: list[Entry], by_id: dict[str, Entry], removed: set[int],
                  neutralise: set[int]) -> dict[int, dict[str, Any]]:
    # The ids that no longer resolve (an id a removed line shares with a surviving later one still does).
    removed_ids = {e.id for e in (entries[seq] for seq in removed) if by_id.get(e.id or "") is e}
    changes: dict[int, dict[str, Any]] = {}
    for entry in entries:
        if entry.seq in removed or entry.glued:  # a glued line is never changed: pi drops it whole
            continue
        values: dict[str, Any] = {}
        if entry.parent in removed_ids:
            ancestor = _surviving_ancestor(entry, by_id, removed)
            values["parentId"] = None if ancestor == entry.id else ancestor  # never a self-loop
        if entry.type == "compaction" and entry.first_kept in removed_ids:
            path = path_to(entry, by_id)
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


@contextlib.contextmanager
def nesting_room() -> Iterator[None]:
    """Room for the standard library to read and write back a line as deeply nested as an entry can be: orjson
    reads up to 1,024 levels, past the default recursion limit of 1,000 (such a line is still one pi reads)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4000))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def read_line_as_pi(data: bytes) -> Any:
    """One line's JSON as pi reads it (invalid UTF-8 as U+FFFD), however deeply an entry nests."""
    with nesting_room():
        return json.loads(data.decode("utf-8", "replace"))


def _rewrite(path: Path, entry: Entry, values: dict[str, Any]) -> Edit:
    """Re-serialize one line with ``values`` applied, keeping key order and non-ASCII text."""
    with open_regular_file(path) as stream:
        stream.seek(entry.offset)
        obj = read_line_as_pi(stream.read(entry.length))
    if values.pop("__neutralise__", False):
        kind = "label" if obj.get("type") == "label" else "recall"
        obj = {"type": "custom", "customType": f"hindsight-{kind}-pruned", "data": {},
               "id": obj.get("id"), "parentId": obj.get("parentId"), "timestamp": obj.get("timestamp")}
    for key, value in values.items():
        if value is None and key != "parentId":
            obj.pop(key, None)  # absent, not null: pi omits optional keys (parentId stays, null for a root)
        else:
            obj[key] = value
    with nesting_room():
        return Edit(entry.offset, entry.length, _json_bytes(obj))

