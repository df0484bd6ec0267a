"""Utilities every stage uses and that use no stage: files written safely, JSON, masking secrets for print,
backoff, word scanning, timestamps.

In: bytes, paths, strings. Out: the same, checked or converted; nothing here knows what a session is.
"""
