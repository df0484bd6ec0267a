"""Reading Pi session files: discovery, tolerant JSONL, migration, the entry tree."""
