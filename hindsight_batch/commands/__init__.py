"""The commands that read what runs left: ``status``, ``report``, ``verify`` and ``forget``.

In: the ledger (and for verify and forget the server). Out: a typed report the CLI prints.
"""
