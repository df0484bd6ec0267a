"""The manifest: JSONL, one row per chunk and target bank (a skipped chunk has one row with no bank).

A row never holds transcript text unless the run asked for ``--include-content``; then ``content`` is exactly the
item content that would be (or was) uploaded. The file is 0600 (``fsutil``): with content it is the transcript.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict

from hindsight_batch.fsutil import open_private
from hindsight_batch.routing.models import MemoryRouteDecision


class ManifestRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    source_file: str
    session_id: str
    leaf: str
    segment: str
    chunk_index: int
    first_entry_id: str
    last_entry_id: str
    turns: int
    document_id: str | None
    bank_role: str | None
    bank_id: str | None
    decision: MemoryRouteDecision
    tags: list[str]
    observation_scopes: list[list[str]] | str | None
    content_sha256: str
    item_sha256: str | None
    bytes: int
    messages_kept: int
    messages_dropped: dict[str, int]
    blocks_removed: dict[str, int]
    redactions: dict[str, int]
    fingerprints: list[str]
    status: str
    content: str | None = None

    def as_json(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude={"decision"})
        data["decision"] = self.decision.model_dump(mode="json", by_alias=True)
        if self.content is None:
            del data["content"]
        return data


class ManifestWriter:
    """Writes rows as they come; the file is complete (and flushed) when the run ends."""

    def __init__(self, path: Path | None) -> None:
        self._file: IO[str] | None = open_private(path, "w", encoding="utf-8") if path else None
        self.rows = 0

    def write(self, row: ManifestRow) -> None:
        self.write_json(row.as_json())

    def write_json(self, data: dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.rows += 1

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
