"""Retain queues: the two layouts, the lock protocol, and the flush that drains them.

In: the live extensions' retain queue files. Out: their jobs, redacted, sent to the server; the queues emptied of
what was sent.
"""
