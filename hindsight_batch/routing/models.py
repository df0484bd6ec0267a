"""The routing seam's data (ADR ``seeds/000_…``): what a strategy receives and the decision it returns.

``global`` is the legacy route and bank-role name for the User Bank. It stays in the data for compatibility;
whatever a person reads says "User Bank".
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from hindsight_batch.config.model import Settings, UserRetainMode

MemoryRoute = Literal["project", "global", "both", "skip"]
RoutingBankRole = Literal["project", "global"]
SignalCategory = Literal["project", "global", "skip"]
# Why a strategy skips a chunk: a short stable code (manifest ``skip_reason``, ledger, ``report``), set exactly when
# the route is ``skip``; the decision's ``reason`` says the same in words.
SkipReason = Literal["secret-policy", "credential-like", "transient-artifact", "command-output", "temporary"]
SKIP_REASONS: tuple[SkipReason, ...] = (
    "secret-policy", "credential-like", "transient-artifact", "command-output", "temporary",
)

# The high confidence band (routing/strategy.py lists the bands).
HIGH_CONFIDENCE = 0.8
# A write to the User Bank alone needs at least this confidence; below it the route becomes ``both``.
USER_BANK_MIN_CONFIDENCE = HIGH_CONFIDENCE


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class Missions(_Model):
    project: str = ""
    global_: str = Field("", alias="global")


class RoutingStrategyInput(_Model):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, arbitrary_types_allowed=True
    )

    content: str
    context: str | None = None
    config: Settings
    missions: Missions
    cwd: str | None = None
    project_bank_id: str | None = None
    user_bank_id: str | None = None
    session_file: str | None = None
    base_tags: list[str] = Field(default_factory=lambda: [])
    # Secrets the redaction pass already replaced in ``content``, by rule (an addition to the ADR's shape).
    redactions: dict[str, int] = Field(default_factory=lambda: {})


class RouteTarget(_Model):
    bank_role: RoutingBankRole
    bank_id: str
    tags: list[str]
    will_write: bool


class MemoryRouteDecision(_Model):
    route: MemoryRoute
    confidence: float
    signals: list[SignalCategory]
    matched_signals: list[str]
    reason: str
    mode: UserRetainMode
    writes: list[RoutingBankRole]
    targets: list[RouteTarget]
    safety_notes: list[str]
    project_mission: str
    global_mission: str
    strategy: str
    skip_reason: SkipReason | None = None


def bank_label(role: RoutingBankRole | MemoryRoute) -> str:
    """How a person reads a route or bank role."""
    return {"global": "User Bank", "project": "project bank", "both": "project bank + User Bank", "skip": "skip"}[
        role
    ]
