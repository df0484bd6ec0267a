"""Reading Pi session files: discovery, tolerant JSONL, migration, the entry tree.

In: paths (files or folders). Out: session files found, their header and entries (migrated to v3), each handed
to a visitor, and the tree of branches they form.
"""
