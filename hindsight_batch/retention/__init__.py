"""Retention: which messages and blocks of a session are kept, before anything is redacted or sent.

In: a session's entries (``session``). Out: records of the kept text, with what was dropped and why, and the
timings of each step.
"""
