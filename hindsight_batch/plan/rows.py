"""The rows the pipeline hands its sinks: one typed manifest row per chunk and target bank (planning makes it; the
manifest writer, the ledger and the report read it) and the record of a source that was read.

Planning makes every value itself, so nothing is validated here (a pydantic model, built and dumped per chunk, was a
tenth of the planning time on many small files).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple, NotRequired, TypedDict, cast

if TYPE_CHECKING:  # routing is loaded when a row is made or read back, not by whoever only names a row
    from hindsight_batch.extension.switches import Switched
    from hindsight_batch.routing.models import MemoryRouteDecision

# What the live-retained check says about the session (hindsight_batch/importing/live.py ``LiveDecision.as_json``).
LiveNote = dict[str, str | list[str]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestRow:
    """One manifest row: a chunk and the bank it goes to (a skipped chunk has one row with no bank).

    ``started_at``/``ended_at``: ISO-8601 UTC of the chunk's first and last entry with a valid timestamp.
    ``bank_why``/``live_retained``: how the session's project bank was chosen and what the live check found
    (set by the importer for every row of the session). ``content`` only with ``--include-content``."""

    run_id: str
    source_file: str
    session_id: str
    leaf: str
    segment: str
    chunk_index: int
    first_entry_id: str
    last_entry_id: str
    turns: int
    document_id: str | None
    bank_role: str | None
    bank_id: str | None
    project: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    decision: MemoryRouteDecision
    tags: list[str]
    observation_scopes: list[list[str]] | str | None
    content_sha256: str
    item_sha256: str | None
    bytes: int
    messages_kept: int
    messages_dropped: dict[str, int]
    blocks_removed: dict[str, int]
    redactions: dict[str, int]
    fingerprints: list[str]
    status: str
    content: str | None = None
    bank_why: str | None = None
    live_retained: LiveNote | None = None

    @property
    def skip_reason(self) -> str | None:
        """Why the chunk is skipped (its decision's stable code), None when it is not."""
        return self.decision.skip_reason

    def as_json(self, **changes: Any) -> dict[str, Any]:
        """The row as the manifest file holds it: JSON values; ``content``, ``bank_why`` and ``live_retained``
        only when set. The decision's ``skip_reason`` is a key of the row (the decision object stays as before).
        ``changes``: fields given other values, as ``dataclasses.replace`` would give them (without the copy)."""
        data: dict[str, Any] = {}
        for name in _FIELDS:
            value = changes[name] if name in changes else getattr(self, name)
            if name == "decision":
                data[name] = decision = self.decision.as_json()
                data["skip_reason"] = decision.pop("skipReason")
                continue
            if value is None and name in _OPTIONAL_KEYS:
                continue
            if isinstance(value, list):
                value = [list(v) if isinstance(v, list | tuple) else v for v in value]
            elif isinstance(value, dict):
                value = dict(value)
            data[name] = value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ManifestRow:
        """A row :meth:`as_json` wrote (or an older version's row, without the newer keys) back as a row."""
        from hindsight_batch.routing.models import MemoryRouteDecision

        values = {name: data[name] for name in _FIELDS if name in data}
        decision = dict(data["decision"])
        decision.setdefault("skipReason", data.get("skip_reason"))
        values["decision"] = MemoryRouteDecision.from_json(decision)
        return cls(**values)


class ManifestRowJson(TypedDict):
    """A manifest row as the manifest file holds it and the ledger gives it back
    (:meth:`ManifestRow.as_json`): JSON values, kept as a dict so that a reused row is
    written out again exactly (the keys a row has beyond these, such as ``switch``, come back too)."""

    run_id: str
    source_file: str
    session_id: str
    leaf: str
    segment: str
    chunk_index: int
    first_entry_id: str
    last_entry_id: str
    turns: int
    document_id: str | None
    bank_role: str | None
    bank_id: str | None
    project: NotRequired[str | None]  # (not in rows from a version-1 ledger)
    started_at: NotRequired[str | None]
    ended_at: NotRequired[str | None]
    decision: dict[str, Any]  # MemoryRouteDecision.as_json, without skipReason
    skip_reason: NotRequired[str | None]
    tags: list[str]
    observation_scopes: list[list[str]] | str | None
    content_sha256: str
    item_sha256: str | None
    bytes: int
    messages_kept: int
    messages_dropped: dict[str, int]
    blocks_removed: dict[str, int]
    redactions: dict[str, int]
    fingerprints: list[str]
    status: str
    content: NotRequired[str]  # with --include-content
    bank_why: NotRequired[str]
    live_retained: NotRequired[dict[str, str | list[str]]]


_FIELDS = tuple(ManifestRow.__dataclass_fields__)
_OPTIONAL_KEYS = frozenset({"content", "bank_why", "live_retained"})


def current_form(data: ManifestRowJson) -> ManifestRowJson:
    """A row as the manifest file held it (:meth:`ManifestRow.as_json`), in this version's form: ``data`` itself
    when its decision has this version's keys, else (a row an older version wrote) through the typed row, which
    fills in what was added since. Not typed every time: the round trip is costly on a re-run over many files."""
    if data["decision"].keys() == _decision_keys():
        return data
    return cast("ManifestRowJson", ManifestRow.from_json(dict(data)).as_json())


@cache
def _decision_keys() -> frozenset[str]:
    """The keys of a decision as :meth:`ManifestRow.as_json` writes it (routing is loaded on first use)."""
    from hindsight_batch.routing.models import DECISION_KEYS

    return DECISION_KEYS - {"skipReason"}


class SourceRecord(NamedTuple):
    """A session file the run read, as the ledger records it (it is then not read again while unchanged)."""

    path: str
    size: int
    mtime_ns: int
    session_id: str
    settings_hash: str  # with the run's catch-up/live suffixes: a change forces a re-read
    run_id: str
    sha256: str | None = None  # of the bytes read (import --apply --from-run checks it)
    header: str | None = None  # the session header (session.model.header_text): a re-run need not open the file


def switched_row(run_id: str, source_file: str, session_id: str, switched: Switched) -> dict[str, Any]:
    """The one manifest row of a session a switch keeps out whole: its id and the reason, nothing of its text (no
    entry ids, no fingerprints), in the shape of every other row (status ``switched-off``, a ``skip`` decision
    with no bank) and with the switch under ``switch``."""
    from hindsight_batch.routing.models import MemoryRouteDecision

    decision = MemoryRouteDecision(
        route="skip", confidence=1.0, signals=[], matched_signals=[], reason=f"switched off: {switched.reason}",
        mode="explicit-only", writes=[], targets=[], safety_notes=[], project_mission="", global_mission="",
        strategy="switches",
    )
    row = ManifestRow(
        run_id=run_id, source_file=source_file, session_id=session_id, leaf="", segment="main", chunk_index=0,
        first_entry_id="", last_entry_id="", turns=0, document_id=None, bank_role=None, bank_id=None,
        decision=decision, tags=[], observation_scopes=None, content_sha256="", item_sha256=None, bytes=0,
        messages_kept=0, messages_dropped={}, blocks_removed={}, redactions={}, fingerprints=[],
        status="switched-off",
    )
    data = row.as_json()
    data["switch"] = switched.as_json()
    return data
