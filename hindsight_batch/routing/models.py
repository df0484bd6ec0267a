"""The routing seam's data (ADR ``seeds/000_…``): what a strategy receives and the decision it returns.

The code names the User Bank :data:`USER_BANK`; whatever a person reads says "User Bank".
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Final, Literal

from hindsight_batch.config.model import Settings, UserRetainMode

# The route, bank role and signal category that mean the User Bank, as the manifest, the JSON output and the ledger
# spell it ("global", its first name: kept so that what was written stays readable). The literals below are it.
USER_BANK: Final = "global"
MemoryRoute = Literal["project", "global", "both", "skip"]
RoutingBankRole = Literal["project", "global"]
SignalCategory = Literal["project", "global", "skip"]
# Why a strategy skips a chunk: a short stable code (manifest ``skip_reason``, ledger, ``report``), set exactly when
# the route is ``skip``; the decision's ``reason`` says the same in words.
SkipReason = Literal["secret-policy", "credential-like", "transient-artifact", "command-output", "temporary",
                     "acknowledgement", "memory-echo", "personal-data"]
SKIP_REASONS: tuple[SkipReason, ...] = (
    "secret-policy", "credential-like", "transient-artifact", "command-output", "temporary", "acknowledgement",
    "memory-echo", "personal-data",
)

# The matched-signal label of text addressed to an AI or a memory system (the import summary counts these chunks).
PROMPT_INJECTION = "prompt injection"

# The high confidence band (routing/strategy.py lists the bands).
HIGH_CONFIDENCE = 0.8
# A write to the User Bank alone needs at least this confidence; below it the route becomes ``both``.
USER_BANK_MIN_CONFIDENCE = HIGH_CONFIDENCE

# The seam's data is made by the program itself (a strategy, planning), so it is not validated: plain frozen
# dataclasses, cheaper than pydantic models built and dumped per row (docs/design-notes.md). JSON keys are the
# ADR's camelCase names.


@dataclass(frozen=True, slots=True)
class Missions:
    project: str = ""
    user: str = ""  # the User Bank's

    @property
    def global_(self) -> str:
        """Deprecated: the old name of :attr:`user` (the User Bank's mission), kept read-only for strategies
        written before the rename."""
        return self.user


@dataclass(frozen=True, slots=True, kw_only=True)
class RoutingStrategyInput:
    content: str
    context: str | None = None
    config: Settings
    missions: Missions
    cwd: str | None = None
    project_bank_id: str | None = None
    user_bank_id: str | None = None
    session_file: str | None = None
    base_tags: list[str] = field(default_factory=list)
    # Secrets the redaction pass already replaced in ``content``, by rule (an addition to the ADR's shape).
    redactions: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteTarget:
    bank_role: RoutingBankRole
    bank_id: str
    tags: list[str]
    will_write: bool

    def as_json(self) -> dict[str, Any]:
        return {"bankRole": self.bank_role, "bankId": self.bank_id, "tags": list(self.tags),
                "willWrite": self.will_write}


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRouteDecision:
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

    def as_json(self) -> dict[str, Any]:
        """The decision as JSON values under the ADR's camelCase keys (:data:`DECISION_KEYS`)."""
        return {
            "route": self.route, "confidence": self.confidence, "signals": list(self.signals),
            "matchedSignals": list(self.matched_signals), "reason": self.reason, "mode": self.mode,
            "writes": list(self.writes), "targets": [target.as_json() for target in self.targets],
            "safetyNotes": list(self.safety_notes), "projectMission": self.project_mission,
            "globalMission": self.global_mission, "strategy": self.strategy, "skipReason": self.skip_reason,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MemoryRouteDecision:
        """A decision :meth:`as_json` wrote; ``skipReason`` may be missing (a row from before it existed)."""
        values = {name: data[key] for name, key in _DECISION_FIELDS if key in data}
        values["targets"] = [RouteTarget(bank_role=t["bankRole"], bank_id=t["bankId"], tags=list(t["tags"]),
                                         will_write=t["willWrite"]) for t in data["targets"]]
        return cls(**values)


def _json_key(name: str) -> str:
    """A field's JSON key: camelCase, without the trailing underscore of a name that is a keyword."""
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(part.capitalize() for part in rest)


_DECISION_FIELDS = tuple((f.name, _json_key(f.name)) for f in fields(MemoryRouteDecision))
DECISION_KEYS = frozenset(key for _, key in _DECISION_FIELDS)
"""The keys of :meth:`MemoryRouteDecision.as_json`."""


def bank_label(role: RoutingBankRole | MemoryRoute) -> str:
    """How a person reads a route or bank role."""
    return {USER_BANK: "User Bank", "project": "project bank", "both": "project bank + User Bank", "skip": "skip"}[
        role
    ]
