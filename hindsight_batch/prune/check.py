"""Checking a rewritten file against its plan: every byte as planned, every parentId resolving, no recall and no
label on a removed entry left, and the active path the old one minus the removed entries."""

from __future__ import annotations

import mmap
from pathlib import Path

from hindsight_batch.base.fsutil import open_regular_file
from hindsight_batch.prune.index import Entry, entry_of, path_to
from hindsight_batch.prune.plan import PrunePlan, read_line_as_pi
from hindsight_batch.prune.write import CHUNK, regions
from hindsight_batch.session.jsonl import RawLine


def check_file(path: Path, plan: PrunePlan, original: Path, entries: list[Entry]) -> str | None:
    """The checks after writing; returns what is wrong, or None.

    Every byte of the new file is read back and compared with the original (the unchanged runs) or with the
    planned replacement, so no other line changed. Each line holding a replacement is parsed again from the new
    file; with the entries of the unchanged lines (equal bytes, equal entries) that gives the new tree, in which
    every parentId must resolve (or be null) and the active path must be the old one minus the removed entries."""
    changed: dict[int, int] = {}  # original offset of a changed line -> its offset in the new file
    with open_regular_file(path) as new, open_regular_file(original) as old, \
            mmap.mmap(new.fileno(), 0, access=mmap.ACCESS_READ) as new_view, \
            mmap.mmap(old.fileno(), 0, access=mmap.ACCESS_READ) as old_view:
        position = 0
        for offset, length, replacement in regions(plan):
            for start in range(0, length, CHUNK):
                size = min(CHUNK, length - start)
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
                line = new_view[start : end if end != -1 else len(new_view)]
                try:
                    obj = read_line_as_pi(line)
                except ValueError:
                    return f"the changed line at offset {start} is not JSON"
                if not isinstance(obj, dict):
                    return f"the changed line at offset {start} is not a JSON object"
                entry = entry_of(obj, RawLine(entry.lineno, start, entry.length, None, 0, entry.length,
                                            entry.terminated), entry.seq, False, plan.types)
            survivors.append(entry)
    visible = [e for e in survivors if not e.glued]  # what pi loads: it drops a glued line whole
    by_id = {e.id: e for e in visible if e.id is not None}
    if any(e.recall for e in visible if e.seq not in plan.kept):
        return "a recall entry is still there"
    old_ids = {e.id for e in entries if not e.glued}
    if any(e.type == "label" and e.target_id in old_ids and e.target_id not in by_id for e in visible):
        return "a label still points at a removed entry"
    dangling = {e.id or "" for e in visible if e.parent is not None and e.parent not in by_id}
    if dangling - plan.dangling_before:
        return f"parentId does not resolve for {sorted(dangling - plan.dangling_before)[:5]}"
    new_path = [e.id or "" for e in path_to(visible[-1], by_id)] if visible else []
    if new_path != plan.expected_path:
        return "the active path is not the old one minus the removed entries"
    return None
