"""What an import is asked to do (``import``'s switches, as the importer takes them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from hindsight_batch.importing.from_run import Reviewed
    from hindsight_batch.importing.live import LiveCheck

__all__ = ["PipelineOptions"]


@dataclass(frozen=True)
class PipelineOptions:
    """The importer's options: filters, the sinks asked for, catch-up's rules, workers."""

    manifest: Path | None = None
    include_content: bool = False
    since: datetime | None = None
    cwd_filter: str | None = None
    project_filter: str | None = None
    progress: bool = False
    apply: bool = False
    wait: bool = False
    wait_timeout: float = 600.0
    catch_up: bool = False
    max_seconds: float | None = None
    jobs: int | Literal["auto"] = 1  # session files planned at once, in worker processes when more than one
    live: LiveCheck | None = None  # the live-retained check (hindsight_batch/importing/live.py); None: not asked
    reviewed: Reviewed | None = None  # --apply --from-run: send exactly what this dry run planned (from_run.py)
    # What the user told the live extension (hindsight_batch/extension/switches.py): None means on for catch-up
    # (automatic retain), off for an import (a deliberate operation: seed 001's mode matrix allows import in every
    # mode), which still reports every session a switch covers.
    respect_switches: bool | None = None

    @property
    def switches_respected(self) -> bool:
        return self.catch_up if self.respect_switches is None else self.respect_switches
