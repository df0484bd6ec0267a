"""Seconds per pipeline stage, in a module of its own: the importer keeps them without loading the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class StageTimes:
    """Seconds spent per stage; the benchmark reports them."""

    project: float = 0.0
    redact: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)

    def add(self, other: StageTimes) -> None:
        self.project += other.project
        self.redact += other.redact
        for stage, seconds in other.extra.items():
            self.extra[stage] = self.extra.get(stage, 0.0) + seconds
