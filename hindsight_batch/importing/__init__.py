"""The import: runs the plan stage over many files (in worker processes when it pays) and hands the results to
the sinks.

In: the session files, the settings and the ledger's memory of earlier runs (reuse, duplicates, ``--from-run``,
the live extensions' catch-up). Out: manifest rows and ledger records written, items sent, an ``ImportResult``.
"""
