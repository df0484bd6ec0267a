"""In-memory migration of version 1 and 2 entries to the version 3 shape (files are never rewritten).

pi gives v1 entries random ids when it migrates; we derive them from the line number instead (``L<line>``, and
``L<line>.<n>`` for the n-th extra object recovered from a glued line), so they are stable as the file grows and
the same on every run.
"""

from __future__ import annotations

from typing import Any


class Migrator:
    """Feeds entries of one file through the migration for its version, in file order."""

    def __init__(self, version: int) -> None:
        self.version = version
        self._previous_id: str | None = None
        # v1 compactions name the first kept entry by index in the parsed array, header at index 0.
        self._ids_by_index: list[str | None] = [None]
        self._glued_count: dict[int, int] = {}

    def migrate(self, obj: dict[str, Any], lineno: int) -> dict[str, Any]:
        if self.version < 2:
            obj = self._v1_to_v2(obj, lineno)
        if self.version < 3:
            message = obj.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                obj = {**obj, "message": {**message, "role": "custom"}}
        return obj

    def _v1_to_v2(self, obj: dict[str, Any], lineno: int) -> dict[str, Any]:
        n = self._glued_count.get(lineno, 0)
        self._glued_count[lineno] = n + 1
        entry_id = f"L{lineno}" if n == 0 else f"L{lineno}.{n}"
        migrated = {**obj, "id": entry_id, "parentId": self._previous_id}
        if obj.get("type") == "compaction" and "firstKeptEntryId" not in obj:
            index = obj.get("firstKeptEntryIndex")
            if isinstance(index, int) and 0 < index < len(self._ids_by_index):
                migrated["firstKeptEntryId"] = self._ids_by_index[index]
            elif isinstance(index, int) and index == len(self._ids_by_index):
                migrated["firstKeptEntryId"] = entry_id  # "keep from the compaction itself": nothing before it
        self._ids_by_index.append(entry_id)
        self._previous_id = entry_id
        return migrated
