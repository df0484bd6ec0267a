"""Group kept records into turns and turns into chunks (fixed windows), the unit that is routed and uploaded.

A turn starts at each user message and runs to the next. Chunks are filled greedily from the start of a branch:
at most ``turns_per_chunk`` turns and ``max_chunk_bytes`` bytes; a single turn larger than that is split at record
boundaries. Greedy-from-the-start means that appending to a session can only change its last chunk and add new
ones: earlier windows, and so their document ids and content hashes, stay the same as a session grows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from hindsight_batch.retention.records import EntryOutcome
from hindsight_batch.session.model import EntryNode


@dataclass(slots=True)
class Chunk:
    window: int  # 0-based position in its branch segment; part of the document id
    nodes: list[EntryNode] = field(default_factory=list)  # entries with a kept record, in order
    turns: int = 0
    size: int = 0  # bytes of the joined content

    @property
    def first_entry_id(self) -> str:
        return self.nodes[0].id

    @property
    def last_entry_id(self) -> str:
        return self.nodes[-1].id


def _outcome(node: EntryNode) -> EntryOutcome:
    assert isinstance(node.payload, EntryOutcome)
    return node.payload


def turns_of(nodes: Iterable[EntryNode]) -> Iterator[list[EntryNode]]:
    """Kept records split into turns; records before the first user message form a turn of their own."""
    turn: list[EntryNode] = []
    for node in nodes:
        outcome = node.payload
        if not isinstance(outcome, EntryOutcome) or outcome.handle is None:
            continue
        if outcome.role == "user" and turn:
            yield turn
            turn = []
        turn.append(node)
    if turn:
        yield turn


def joined_size(nodes: list[EntryNode]) -> int:
    return sum(_outcome(n).size for n in nodes) + max(len(nodes) - 1, 0)  # records joined by "\n"


def chunk_nodes(nodes: Iterable[EntryNode], turns_per_chunk: int, max_chunk_bytes: int) -> list[Chunk]:
    chunks: list[Chunk] = []
    current = Chunk(0)

    def close() -> None:
        nonlocal current
        if current.nodes:
            chunks.append(current)
            current = Chunk(len(chunks))

    for turn in turns_of(nodes):
        turn_size = joined_size(turn)
        if current.nodes and (
            current.turns >= turns_per_chunk or current.size + 1 + turn_size > max_chunk_bytes
        ):
            close()
        if turn_size <= max_chunk_bytes:
            current.size += turn_size + (1 if current.nodes else 0)
            current.nodes.extend(turn)
            current.turns += 1
            continue
        # An oversized turn: its own chunks, split between records.
        close()
        for node in turn:
            size = _outcome(node).size
            if current.nodes and current.size + 1 + size > max_chunk_bytes:
                close()
            current.size += size + (1 if current.nodes else 0)
            current.nodes.append(node)
            current.turns = 1
        close()
    close()
    return chunks
