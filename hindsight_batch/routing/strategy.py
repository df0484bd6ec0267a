"""Routing strategies: the protocol, the two shipped strategies, and lookup by name.

``project-global-default`` classifies a chunk as project / User Bank (``global``) / both / skip. Confidence bands:

* >= 0.80  high: the only band in which a User Bank-only route is allowed (``USER_BANK_MIN_CONFIDENCE``);
* 0.60 – 0.80  medium: project routes, ``both`` for ambiguous content, or skip on a clear transient signal;
* <  0.60  low: no clear signal; a transcript chunk then stays with its project (0.5).

Safety, in order of precedence: a secret that redaction replaced under policy ``skip``, or credential-like text
that no rule caught, skips the chunk; redacted content is never routed to the User Bank; transient artifacts,
screenshots and command or test output skip a chunk unless durable content outweighs them; an ambiguous mix goes
to ``both`` (or stays project-only when project work dominates), never to the User Bank alone. Identity words
inside project work ("the user's name field") are not identity statements: those need "my name is <Name>",
"call me <Name>", "my pronouns are" and the like.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol

from hindsight_batch.routing.models import (
    USER_BANK_MIN_CONFIDENCE,
    MemoryRoute,
    MemoryRouteDecision,
    RouteTarget,
    RoutingBankRole,
    RoutingStrategyInput,
    SignalCategory,
    SkipReason,
)
from hindsight_batch.routing.signals import SignalMatches, extract_text, find_signals, mission_hits, mission_terms


class RoutingStrategy(Protocol):
    """Decides where a chunk goes (ADR ``seeds/000_…``); chosen by ``routing.strategy`` in the settings."""

    name: str
    """The strategy's name in the settings and in every decision it makes."""

    def route(self, data: RoutingStrategyInput) -> MemoryRouteDecision:
        """The decision for one chunk of (already redacted) content: route, targets, reason and, when the route is
        ``skip``, a stable ``skip_reason``."""
        ...


_ROLES: dict[MemoryRoute, list[RoutingBankRole]] = {
    "project": ["project"], "global": ["project", "global"], "both": ["project", "global"], "skip": [],
}
_CATEGORIES: tuple[SignalCategory, ...] = ("skip", "global", "project")  # a decision's signals, in this order


class Classification(NamedTuple):
    """What the heuristic found in a chunk, before the mode and the banks decide where it goes."""

    route: MemoryRoute
    confidence: float
    reason: str
    found: SignalMatches
    matched: list[str]  # matched-signal labels
    notes: list[str]  # safety notes
    skip_reason: SkipReason | None = None  # set exactly when ``route`` is ``skip``


def _skip(
    confidence: float, reason: str, found: SignalMatches, matched: list[str], notes: list[str], why: SkipReason
) -> Classification:
    return Classification("skip", confidence, reason, found, matched, notes, why)


def _classify(data: RoutingStrategyInput) -> Classification:
    text = extract_text(data.content)
    if data.context:
        text = f"{text}\n{data.context}"
    found = find_signals(text)
    order = ("skip", "global", "project")
    matched: list[str] = [label for (_cat, label) in sorted(found.labels, key=lambda k: order.index(k[0]))]
    notes: list[str] = []
    g, p = found.score("global"), found.score("project")
    lower: str | None = None
    for category, mission in (("project", data.missions.project), ("global", data.missions.global_)):
        terms = mission_terms(mission)
        if not terms:
            continue
        lower = text.lower() if lower is None else lower
        hits = mission_hits(lower, terms)
        if hits:
            matched.append(f"{category} mission:{'/'.join(hits[:3])}")
            if category == "project":
                p += 1
            else:
                g += 1
    if data.redactions:
        listed = ", ".join(f"{rule}×{n}" for rule, n in sorted(data.redactions.items()))
        notes.append(f"secrets redacted before routing ({listed}); never sent to the User Bank")
        if data.config.redaction.policy == "skip":
            notes.append("redaction.policy=skip: a chunk with a secret is not retained")
            return _skip(0.95, "secret found and redaction.policy=skip", found, matched, notes, "secret-policy")
    if found.has("skip", "secret-like content"):
        notes.append("credential-like content that no redaction rule caught: skipped, not retained")
        return _skip(0.9, "credential-like content", found, matched, notes, "credential-like")
    durable = g + p
    transient = [label for label in ("transient artifact path", "screenshot artifact") if found.has("skip", label)]
    if transient and durable < 3:
        notes.append("transient artifact: not retained")
        reason = f"transient artifact ({', '.join(sorted(transient))})"
        return _skip(0.85, reason, found, matched, notes, "transient-artifact")
    mostly_output = found.text_lines >= 3 and (
        found.output_ratio >= 0.8 or (found.output_ratio >= 0.6 and durable < 3)
    )
    if mostly_output:
        matched.append("command/test output")
        notes.append("temporary command or test output: not retained")
        return _skip(0.85, "temporary command or test output", found, matched, notes, "command-output")
    if found.has("skip", "temporary detail") and durable < 2:
        notes.append("marked temporary: not retained")
        return _skip(0.8, "temporary detail", found, matched, notes, "temporary")
    if transient or found.has("skip", "temporary detail"):
        notes.append("mentions transient artifacts or temporary details; durable content kept")
    global_labels = found.label_set("global")
    if g == 0 and p == 0:
        reason = "no strong signal; a transcript stays with its project"
        return Classification("project", 0.5, reason, found, matched, notes)
    if p == 0:
        confidence = round(min(0.95, 0.7 + 0.1 * g), 2)
        route: MemoryRoute = "global" if confidence >= USER_BANK_MIN_CONFIDENCE else "both"
        reason = "durable User Bank content (" + ", ".join(sorted(global_labels)) + ")"
        return Classification(route, confidence, reason, found, matched, notes)
    if g == 0:
        return Classification("project", min(0.95, 0.65 + 0.1 * p), "project work", found, matched, notes)
    if found.has("project", "project reference") and global_labels <= {"preference", "communication style"}:
        return Classification("project", 0.75, "a user preference scoped to this project", found, matched, notes)
    if p >= 2 * g + 2:
        reason = "mostly project work; User Bank signals are incidental"
        return Classification("project", 0.7, reason, found, matched, notes)
    notes.append("ambiguous between project and User Bank: both, with conservative tags")
    return Classification("both", 0.6, "ambiguous project/User Bank content", found, matched, notes)


class ProjectGlobalDefault:
    """The heuristic strategy."""

    name = "project-global-default"
    writes_anything = True

    def route(self, data: RoutingStrategyInput) -> MemoryRouteDecision:
        verdict = _classify(data)
        route, reason = verdict.route, verdict.reason
        if data.redactions and route in ("global", "both"):
            route, reason = "project", reason + "; redacted content stays in the project bank"
        confidence = round(verdict.confidence, 2)
        return _decide(self, data, verdict._replace(route=route, confidence=confidence, reason=reason))


class DryRunOnly(ProjectGlobalDefault):
    """Explains what the default strategy would do and writes nothing, in any mode."""

    name = "dry-run-only"
    writes_anything = False


def _decide(
    strategy: ProjectGlobalDefault,
    data: RoutingStrategyInput,
    verdict: Classification,
) -> MemoryRouteDecision:
    route, confidence, reason, found, matched, notes = verdict[:6]
    settings = data.config
    mode = settings.user_retain.mode
    banks = {"project": settings.banks.project, "global": settings.banks.user}
    ids: dict[RoutingBankRole, str | None] = {"project": data.project_bank_id, "global": data.user_bank_id}
    user_bank_ok = banks["global"].enabled and bool(ids["global"])
    writes: list[RoutingBankRole] = []
    targets: list[RouteTarget] = []
    for role in _ROLES[route]:
        will = strategy.writes_anything
        if role == "global":
            if mode != "router":
                will = False
                notes.append("explicit-only mode: User Bank suggested, not written (project bank only)")
            elif not user_bank_ok:
                will = False
                notes.append("User Bank disabled or without a bank id: User Bank target dropped")
            elif route == "both":
                notes.append("User Bank candidate: keep only durable cross-project facts")
        elif not banks["project"].enabled:
            will = False
            notes.append("project bank disabled: project target dropped")
        elif route == "global" and mode == "router":
            if user_bank_ok:
                will = False  # a confident User Bank route goes to the User Bank alone
            else:
                notes.append("User Bank disabled or without a bank id: kept in the project bank instead")
        tags = sorted({*data.base_tags, f"route:{route}"})
        targets.append(RouteTarget(bank_role=role, bank_id=ids[role] or "", tags=tags, will_write=will))
        if will:
            writes.append(role)
    if not strategy.writes_anything:
        notes.append("dry-run-only strategy: nothing is written")
    if route == "skip":
        notes.append("skip candidate: transient or unsafe content is not retained")
    signals = [c for c in _CATEGORIES if found.score(c) > 0]
    reason = f"{mode} mode: {reason}"  # reason_without_mode() takes the prefix off again
    return MemoryRouteDecision(
        route=route,
        confidence=confidence,
        signals=signals,
        matched_signals=list(dict.fromkeys(matched)),
        reason=reason,
        mode=mode,
        writes=writes,
        targets=targets,
        safety_notes=list(dict.fromkeys(notes)),
        project_mission=data.missions.project,
        global_mission=data.missions.global_,
        strategy=strategy.name,
        skip_reason=verdict.skip_reason,
    )


def reason_without_mode(reason: str) -> str:
    """A decision's reason without its ``<mode> mode: `` prefix (summaries group skips by it)."""
    return reason.split(" mode: ", 1)[-1]


# Keyed by an instance's name: a compiled (mypyc) class keeps ``name`` on its instances only.
STRATEGIES: dict[str, Callable[[], ProjectGlobalDefault]] = {
    factory().name: factory for factory in (ProjectGlobalDefault, DryRunOnly)
}
