"""Sinks: where a plan's results go, the manifest file and the Hindsight server.

In: manifest rows and items (``plan``). Out: JSONL manifest lines, documents sent and their upload state in the
ledger (``ledger``).
"""
