"""Timestamps as pi writes them (ISO-8601, often with a ``Z``), read once for every stage: planning's chunk times
and the server's ``timestamp``, the ledger's UTC columns."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_timestamp(value: str | None) -> datetime | None:
    """An ISO timestamp as an aware time (UTC when it names no zone), or None when there is none or it is not one."""
    if not value:
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def valid_timestamp(value: str | None) -> str | None:
    """An ISO timestamp the server accepts, or None (the server then uses the time of the retain)."""
    stamp = parse_timestamp(value)
    return value if stamp is not None and stamp.year >= 1971 else None


def utc_timestamp(value: str | None) -> str | None:
    """A :func:`valid_timestamp` as ISO-8601 UTC (``2026-05-01T10:00:00.000Z``), or None."""
    stamp = parse_timestamp(valid_timestamp(value))
    if stamp is None:
        return None
    try:
        stamp = stamp.astimezone(UTC)
    except OverflowError:  # year 9999 with a negative offset
        return None
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def naive_utc(value: object) -> datetime | None:
    """A timestamp as naive UTC (DuckDB's ``TIMESTAMP``), or None when it is none or cannot be one."""
    stamp = parse_timestamp(value) if isinstance(value, str) else None
    if stamp is None:
        return None
    try:
        return stamp.astimezone(UTC).replace(tzinfo=None)
    except OverflowError:  # year 9999 with a negative offset
        return None
