"""Linearize a session's entry tree the way pi does, and split it into branches without sharing a prefix twice.

pi's rule (``reference/pi-session-format.md`` §2): the active leaf is the last entry in file order; walk
``parentId`` to the root over *all* entry types; a missing parent ends the path. pi has no cycle guard; we do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hindsight_batch.session.model import EntryNode


def _by_id(entries: Sequence[EntryNode]) -> dict[str, EntryNode]:
    return {node.id: node for node in entries}  # a later duplicate id wins, as in pi


def path_to(leaf: EntryNode, by_id: dict[str, EntryNode]) -> list[EntryNode]:
    """Root-to-``leaf`` path. Stops at a missing parent or when an entry would repeat (a cycle)."""
    path: list[EntryNode] = []
    node: EntryNode | None = leaf
    longest = len(by_id)  # a longer walk has repeated an entry: only then is it walked again with a guard
    while node is not None and len(path) <= longest:
        path.append(node)
        node = by_id.get(node.parent_id) if node.parent_id is not None else None
    if node is not None:
        path, seen, node = [], set(), leaf
        while node is not None and node.seq not in seen:
            seen.add(node.seq)
            path.append(node)
            node = by_id.get(node.parent_id) if node.parent_id is not None else None
    path.reverse()
    return path


def active_path(entries: Sequence[EntryNode]) -> list[EntryNode]:
    if not entries:
        return []
    return path_to(entries[-1], _by_id(entries))


@dataclass(frozen=True, slots=True)
class ContextView:
    """What the model saw at the leaf: the last compaction (if any) and the entries it kept plus those after it."""

    compaction: EntryNode | None
    entries: list[EntryNode]


def context_view(path: Sequence[EntryNode]) -> ContextView:
    """Honour the last compaction on ``path`` exactly as pi builds its context."""
    last = max((i for i, node in enumerate(path) if node.type == "compaction"), default=None)
    if last is None:
        return ContextView(None, list(path))
    compaction = path[last]
    kept_from = next(
        (i for i in range(last) if path[i].id == compaction.first_kept_id),
        last,  # the first kept entry is not on the path before the compaction: nothing is kept
    )
    return ContextView(compaction, list(path[kept_from:last]) + list(path[last + 1 :]))


@dataclass(frozen=True, slots=True)
class BranchSegment:
    """The part of one leaf's path not already covered by an earlier segment.

    ``key`` is ``main`` for the active branch and ``fork-<first entry id>`` for the others: the first entry of a
    side branch does not change when that branch grows, so neither does the key.
    """

    key: str
    leaf: EntryNode
    entries: list[EntryNode]


def branch_segments(entries: Sequence[EntryNode], all_branches: bool) -> list[BranchSegment]:
    if not entries:
        return []
    by_id = _by_id(entries)
    main = path_to(entries[-1], by_id)
    segments = [BranchSegment("main", entries[-1], main)]
    if not all_branches:
        return segments
    has_child = {node.parent_id for node in entries if node.parent_id is not None}
    covered = {node.seq for node in main}
    for node in entries:
        if node.id in has_child or node.seq in covered or by_id.get(node.id) is not node:
            continue
        rest = [n for n in path_to(node, by_id) if n.seq not in covered]
        if not rest:
            continue
        covered.update(n.seq for n in rest)
        segments.append(BranchSegment(f"fork-{rest[0].id}", node, rest))
    return segments
