"""The ledger's ``manifest`` table: one column per manifest-row field, and the way back to the row.

A row goes in as the manifest file has it (its JSON values, without ``content`` unless kept) and comes back the
same, so that an unchanged source's rows can be written again from the ledger. The routing decision has columns
for what ``report`` groups by (route, confidence, reason, skip_reason, strategy, mode) and is also kept whole as
JSON text (``decision``), which is what comes back. The ``annotations`` column (JSON text) holds what no column
gives back exactly: the row's keys that are not fields (the importer's ``bank_why``, ``live_retained``), and a
timestamp whose text is not the canonical ``YYYY-MM-DDTHH:MM:SS.fffZ`` (then its column holds the parsed time when
there is one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from hindsight_batch.base import jsoncodec
from hindsight_batch.base.timestamps import naive_utc

if TYPE_CHECKING:
    from hindsight_batch.plan.rows import ManifestRowJson

# (name, DuckDB type) in table order: the manifest row contract, then ``annotations``.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "VARCHAR"), ("source_file", "VARCHAR"), ("session_id", "VARCHAR"), ("leaf", "VARCHAR"),
    ("segment", "VARCHAR"), ("chunk_index", "INTEGER"), ("first_entry_id", "VARCHAR"), ("last_entry_id", "VARCHAR"),
    ("turns", "INTEGER"), ("document_id", "VARCHAR"), ("bank_role", "VARCHAR"), ("bank_id", "VARCHAR"),
    ("project", "VARCHAR"), ("started_at", "TIMESTAMP"), ("ended_at", "TIMESTAMP"),
    ("route", "VARCHAR"), ("confidence", "DOUBLE"), ("reason", "VARCHAR"), ("skip_reason", "VARCHAR"),
    ("strategy", "VARCHAR"), ("mode", "VARCHAR"), ("decision", "VARCHAR"),
    ("tags", "VARCHAR[]"), ("observation_scopes", "VARCHAR"), ("content_sha256", "VARCHAR"),
    ("item_sha256", "VARCHAR"), ("bytes", "BIGINT"), ("messages_kept", "INTEGER"),
    ("messages_dropped", "MAP(VARCHAR, INTEGER)"), ("blocks_removed", "MAP(VARCHAR, INTEGER)"),
    ("redactions", "MAP(VARCHAR, INTEGER)"), ("fingerprints", "VARCHAR[]"), ("status", "VARCHAR"),
    ("content", "VARCHAR"), ("annotations", "VARCHAR"),
)
NAMES = tuple(name for name, _ in COLUMNS)
DDL = "CREATE TABLE manifest ({})".format(", ".join(f"{name} {kind}" for name, kind in COLUMNS))

# The row's fields in the order a row has them; the decision's columns come from ``decision``.
_ROW_FIELDS = ("run_id", "source_file", "session_id", "leaf", "segment", "chunk_index", "first_entry_id",
               "last_entry_id", "turns", "document_id", "bank_role", "bank_id", "project", "started_at", "ended_at",
               "decision", "skip_reason", "tags", "observation_scopes", "content_sha256", "item_sha256", "bytes",
               "messages_kept", "messages_dropped", "blocks_removed", "redactions", "fingerprints", "status", "content")
_DECISION_COLUMNS = ("route", "confidence", "reason", "skip_reason", "strategy", "mode")
_JSON_TEXT = ("decision", "observation_scopes")
_TIMES = ("started_at", "ended_at")
# A row may lack these keys (content unless kept; a row migrated from a version-1 ledger has no project, times or
# skip_reason): absent ones are stored as NULL; ``content`` comes back only when not NULL.
_OPTIONAL = ("content", "project", "started_at", "ended_at", "skip_reason")
_ABSENT_WHEN_NULL = ("content",)


def _time_text(value: datetime) -> str:
    return value.isoformat(timespec="milliseconds") + "Z"


def _decision_value(decision: Mapping[str, Any], name: str) -> Any:
    """A decision field as the manifest writes it (camelCase, ``skipReason``), or by its Python name."""
    head, *rest = name.split("_")
    camel = head + "".join(part.title() for part in rest)
    return decision[camel] if camel in decision else decision.get(name)


# How :func:`to_record` fills each column, in table order (worked out once, not per row and column).
_PLAIN, _OPTIONAL_PLAIN, _FROM_DECISION, _SKIP_REASON, _JSON_VALUE, _TIME = range(6)


def _column_kind(name: str) -> int:
    if name == "skip_reason":
        return _SKIP_REASON
    if name in _DECISION_COLUMNS:
        return _FROM_DECISION
    if name in _JSON_TEXT:
        return _JSON_VALUE
    if name in _TIMES:
        return _TIME
    return _OPTIONAL_PLAIN if name in _OPTIONAL else _PLAIN


_FILLED = tuple((name, _column_kind(name)) for name in NAMES if name != "annotations")
_ROW_FIELD_SET = frozenset(_ROW_FIELDS)


def to_record(row: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest row (its JSON values) as column name -> JSON value, for DuckDB's ``read_json``."""
    decision = row["decision"]
    record: dict[str, Any] = {}
    annotations = {key: value for key, value in row.items() if key not in _ROW_FIELD_SET}
    for name, kind in _FILLED:
        if kind == _PLAIN:
            record[name] = row[name]
        elif kind == _OPTIONAL_PLAIN:
            record[name] = row.get(name)
        elif kind == _FROM_DECISION:  # one word: the same name in camelCase
            record[name] = decision[name] if name in decision else decision.get(name)
        elif kind == _SKIP_REASON:  # the row's own key (the decision object leaves it out)
            record[name] = row[name] if name in row else _decision_value(decision, name)
        elif kind == _JSON_VALUE:
            value = row.get(name) if name in _OPTIONAL else row[name]
            record[name] = None if value is None else jsoncodec.dumps(value).decode()
        else:
            value = row.get(name)
            parsed = naive_utc(value)
            record[name] = None if parsed is None else parsed.isoformat(sep=" ")
            if value is not None and (parsed is None or _time_text(parsed) != value):
                annotations[name] = value  # given back as written
    record["annotations"] = jsoncodec.dumps(annotations).decode() if annotations else None
    return record


def record_line(row: Mapping[str, Any]) -> bytes:
    """A manifest row (its JSON values) as one line of the JSON-lines file the ledger loads (no newline)."""
    return jsoncodec.dumps(to_record(row))


_SELECTED = tuple(name for name in NAMES if name not in _DECISION_COLUMNS or name == "skip_reason")
# Selected as JSON text (maps and lists) or as the manifest's text (times): DuckDB writes them faster than it
# builds Python dicts, lists and datetimes, and a time needs no conversion after.
_AS_JSON = ("tags", "messages_dropped", "blocks_removed", "redactions", "fingerprints")
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%gZ"  # _time_text's


def _selected(alias: str, name: str) -> str:
    if name in _AS_JSON:
        return f"CAST({alias}{name} AS JSON)"
    if name in _TIMES:
        return f"strftime({alias}{name}, '{_TIME_FORMAT}')"
    return alias + name


def select_list(alias: str = "") -> str:
    """The columns :func:`from_columns` reads, for a SELECT (``alias``: the table's, such as ``m.``)."""
    return ", ".join(_selected(alias, name) for name in _SELECTED)


# How :func:`from_columns` gives back each row field: (its place among the selected columns, whether it is parsed
# from JSON text, whether it is left out when NULL), worked out once rather than per row and field.
_READ_BACK = tuple((_SELECTED.index(name), name in _JSON_TEXT or name in _AS_JSON, name in _ABSENT_WHEN_NULL)
                   for name in _ROW_FIELDS)
_ANNOTATIONS_AT = _SELECTED.index("annotations")


def from_columns(values: Sequence[Any]) -> ManifestRowJson:
    """The manifest row a result row of :func:`select_list`'s columns holds, as the manifest file had it."""
    row: dict[str, Any] = {}
    for name, (place, as_json, absent_when_null) in zip(_ROW_FIELDS, _READ_BACK, strict=True):
        value = values[place]
        if value is None:
            if absent_when_null:
                continue
        elif as_json:
            value = jsoncodec.loads(value)
        row[name] = value
    annotations = values[_ANNOTATIONS_AT]
    if annotations is not None:
        row.update(jsoncodec.loads(annotations))  # a field it names (a timestamp) keeps its place
    return cast("ManifestRowJson", row)  # built by name from the table's columns, which are the row's fields
