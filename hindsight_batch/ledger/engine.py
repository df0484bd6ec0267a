"""DuckDB's engine, which is all the ledger uses (connections, ``execute``, its exception classes).

The ``duckdb`` package is its compiled engine, ``_duckdb``, plus a Python layer the ledger never calls
(relations, expressions, version metadata through ``importlib.metadata``): the engine alone starts much faster
(figures: docs/performance.md, "Fixed cost of a run"). The classes and functions are the same objects either
way (``duckdb`` re-exports them from ``_duckdb``), so results, errors and files do not change; a ``duckdb``
release whose engine is not a module of its own is imported whole.
"""

try:
    import _duckdb as duckdb
except ImportError:  # pragma: no cover - older duckdb: the engine lives inside the package
    import duckdb  # type: ignore[no-redef]

__all__ = ["duckdb"]
