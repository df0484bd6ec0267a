"""Planning: from one session file to the items to send and their manifest rows.

In: a session file read (``session``), kept messages (``retention``), redacted (``redaction``) and routed
(``routing``), plus the banks resolved from the configuration. Out: a ``SessionPlan`` of chunks, items and
``ManifestRow`` s, which the sinks write and send.
"""
