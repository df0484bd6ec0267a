"""Routing strategies: the protocol, the two shipped strategies, and lookup by name (docs/routing.md).

``project-global-default`` classifies a chunk as project / User Bank (``global``) / both / skip. Who wrote each part
decides what it may become (:mod:`.provenance`): only the user's own words can make a User Bank candidate, and its
confidence is 0.60 plus 0.10 per kind of evidence (:func:`_user_bank_evidence`); the User Bank alone needs 0.80
(``USER_BANK_MIN_CONFIDENCE``), so one phrase (0.70) goes to ``both`` at most.

In order of precedence: injected memory (S1), a secret under policy ``skip``, credential-like text and other
people's personal data skip the chunk; prompt injection keeps it in the project bank, flagged; transient artifacts,
acknowledgements, recalled memory quoted back, command output without a decision and temporary notes skip it, each
with its ``skip_reason``; a one-off instruction stays in the project bank; an ambiguous mix goes to ``both`` (or
stays project-only when project work dominates or the preference is scoped to the project), never to the User Bank
alone; redacted content never goes to the User Bank.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol

from hindsight_batch.routing.hazards import (
    acknowledgement,
    memory_echo,
    prompt_injection,
    third_party_personal_data,
)
from hindsight_batch.routing.models import (
    PROMPT_INJECTION,
    USER_BANK,
    USER_BANK_MIN_CONFIDENCE,
    MemoryRoute,
    MemoryRouteDecision,
    RouteTarget,
    RoutingBankRole,
    RoutingStrategyInput,
    SignalCategory,
    SkipReason,
)
from hindsight_batch.routing.provenance import authored, told_and_asked
from hindsight_batch.routing.signals import (
    SignalMatches,
    find_signals,
    instruction,
    mission_hits,
    mission_terms,
    sample,
)


class RoutingStrategy(Protocol):
    """Decides where a chunk goes (ADR ``seeds/000_…``); chosen by ``routing.strategy`` in the settings."""

    name: str
    """The strategy's name in the settings and in every decision it makes."""

    def route(self, data: RoutingStrategyInput) -> MemoryRouteDecision:
        """The decision for one chunk of (already redacted) content: route, targets, reason and, when the route is
        ``skip``, a stable ``skip_reason``."""
        ...


_ROLES: dict[MemoryRoute, list[RoutingBankRole]] = {
    "project": ["project"], USER_BANK: ["project", USER_BANK], "both": ["project", USER_BANK], "skip": [],
}
_CATEGORIES: tuple[SignalCategory, ...] = ("skip", USER_BANK, "project")  # a decision's signals, in this order
# The signal categories (signals.py) behind each of a decision's: a statement about the user, a cross-project
# scope or a habit made durable are all User Bank signals; a prompt injection is a safety (skip) signal.
_SIGNAL_PARTS: dict[SignalCategory, tuple[str, ...]] = {
    "skip": ("skip", "safety"), USER_BANK: (USER_BANK, "scope", "habit", "directive"), "project": ("project",),
}


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
    parts = authored(data.content)
    if parts.memory_block:
        s1 = ["injected Hindsight memory (S1): import drops it, nothing of it is retained"]
        return _skip(0.95, "recalled memory block (S1)", SignalMatches(), ["memory block"], s1, "memory-echo")
    # User Bank statements count only in the user's own words; the agent's words and what the agent read or ran
    # count for project and skip signals. The context string (the session's) is the tool's own: project only.
    # A question or a request for what memory holds is not a statement about the user: project signals only.
    told, asked = told_and_asked(parts.user)
    user = find_signals(told) if told.strip() else SignalMatches()
    if told.strip() and instruction(told):
        user.labels[("directive", "instruction")] += 1
    prose = user.merged(find_signals(asked), drop=_USER_ONLY) if asked.strip() else user
    prose = prose.merged(find_signals(parts.agent), drop=_USER_ONLY) if parts.agent.strip() else prose
    rest = "\n".join(part for part in (parts.read, parts.output, data.context or "") if part)
    found = prose.merged(find_signals(rest), drop=_USER_ONLY) if rest.strip() else prose
    user_lower = sample(parts.user).lower()  # what the hazards read: as much as the signals do
    other_lower = sample(parts.others).lower()
    injection = prompt_injection(user_lower, other_lower)
    if injection:
        found.labels[("safety", PROMPT_INJECTION)] += 1
    order = ("skip", "safety", USER_BANK, "habit", "directive", "scope", "durable", "request", "one-off", "project")
    matched: list[str] = [label for (cat, label) in sorted(found.labels, key=lambda k: _order(k[0], order))]
    notes: list[str] = []
    p = found.score("project")
    mission_global = 0
    for category, mission in (("project", data.missions.project), (USER_BANK, data.missions.user)):
        terms = mission_terms(mission)
        if not terms:
            continue
        # The User Bank mission's words count in the user's own words only, like every User Bank signal.
        hits = mission_hits(user_lower if category == USER_BANK else f"{user_lower}\n{other_lower}", terms)
        if hits:
            matched.append(f"{category} mission:{'/'.join(hits[:3])}")
            if category == "project":
                p += 1
            else:
                mission_global = 1
    if data.redactions:
        listed = ", ".join(f"{rule}×{n}" for rule, n in sorted(data.redactions.items()))
        notes.append(f"secrets redacted before routing ({listed}); never sent to the User Bank")
        if data.config.redaction.policy == "skip":
            notes.append("redaction.policy=skip: a chunk with a secret is not retained")
            return _skip(0.95, "secret found and redaction.policy=skip", found, matched, notes, "secret-policy")
    if found.has("skip", "secret-like content"):
        notes.append("credential-like content that no redaction rule caught: skipped, not retained")
        return _skip(0.9, "credential-like content", found, matched, notes, "credential-like")
    personal = third_party_personal_data(user_lower) or third_party_personal_data(other_lower)
    if personal:
        matched.append(f"third-party {personal}")
        notes.append(f"another person's personal data ({personal}): not retained")
        return _skip(0.9, f"third-party personal data ({personal})", found, matched, notes, "personal-data")
    if injection:
        # What the agent read stays with its project (flagged), never in the User Bank, whatever else it holds.
        notes.append("prompt injection: text addressed to an AI or a memory system; never the User Bank")
        return Classification("project", 0.7, "prompt injection kept out of the User Bank", found, matched, notes)
    evidence = _user_bank_evidence(user, mission_global)
    decision = evidence.candidate or _holds_decision(prose)
    if data.redactions and not decision:
        notes.append("a secret and nothing else worth keeping: not retained")
        return _skip(0.85, "a secret and no decision or fact", found, matched, notes, "credential-like")
    transient = [label for label in ("transient artifact path", "screenshot artifact") if found.has("skip", label)]
    if transient and not evidence.candidate and p < 3:
        notes.append("transient artifact: not retained")
        reason = f"transient artifact ({', '.join(sorted(transient))})"
        return _skip(0.85, reason, found, matched, notes, "transient-artifact")
    if not parts.read.strip() and not parts.output.strip() and acknowledgement(parts.user, parts.agent):
        notes.append("an acknowledgement: nothing to remember")
        return _skip(0.85, "acknowledgement only", found, matched, notes, "acknowledgement")
    if memory_echo(user_lower) or memory_echo(other_lower):
        matched.append("memory echo")
        decision = _holds_decision(prose)  # a preference in quoted memory is the memory's, not a new one
        if not decision:
            notes.append("earlier memory quoted back: not retained again (S1)")
            return _skip(0.85, "recalled memory quoted back", found, matched, notes, "memory-echo")
        notes.append("holds earlier memory quoted back: never the User Bank")
        evidence = evidence._replace(candidate=False)
    if not decision and (parts.output.strip() or (found.output_lines and found.output_ratio >= 0.5)):
        matched.append("command/test output")
        notes.append("command or test output without a decision: not retained")
        return _skip(0.85, "command or test output without a decision", found, matched, notes, "command-output")
    if found.has("skip", "temporary detail") and not evidence.candidate and p < 2:
        notes.append("marked temporary: not retained")
        return _skip(0.8, "temporary detail", found, matched, notes, "temporary")
    if transient or found.has("skip", "temporary detail"):
        notes.append("mentions transient artifacts or temporary details; durable content kept")
    if evidence.candidate and user.has("one-off", "one-off instruction"):
        notes.append("a one-off instruction, not a durable preference: project bank only")
        return Classification("project", 0.7, "a one-off instruction stays with its project", found, matched, notes)
    if not evidence.candidate:
        if p == 0:
            reason = "no strong signal; a transcript stays with its project"
            return Classification("project", 0.5, reason, found, matched, notes)
        return Classification("project", min(0.95, 0.65 + 0.1 * p), "project work", found, matched, notes)
    statements = _statements(user)
    scoped = user.has("scope", "cross-project scope")
    what = ", ".join(sorted(statements | ({"cross-project scope"} if scoped else set())))
    confidence = evidence.confidence
    if _project_weight(found) + (p - found.score("project")) == 0:  # no project signal beyond words of code work
        route: MemoryRoute = USER_BANK if confidence >= USER_BANK_MIN_CONFIDENCE else "both"
        if route == "both":
            notes.append(f"User Bank candidate below the {USER_BANK_MIN_CONFIDENCE:.2f} threshold: both, with "
                         "conservative tags")
        return Classification(route, confidence, f"durable User Bank content ({what})", found, matched, notes)
    if found.has("project", "project reference") and statements <= _PERSONAL and not scoped:
        return Classification("project", 0.75, "a user preference scoped to this project", found, matched, notes)
    g = user.score(USER_BANK) + scoped
    if p >= 2 * g + 2:
        reason = "mostly project work; User Bank signals are incidental"
        return Classification("project", 0.7, reason, found, matched, notes)
    notes.append("ambiguous between project and User Bank: both, with conservative tags")
    return Classification("both", 0.6, "ambiguous project/User Bank content", found, matched, notes)


# Statements that a project can scope ("in this repo I prefer tabs"): not an identity, not a cross-project habit.
_PERSONAL = frozenset({"preference", "communication style", "first-person habit"})


def _project_weight(found: SignalMatches) -> float:
    """The project score without "code work" (test, fix, function…): words that a preference about how to write
    code holds too ("tests before refactors")."""
    if not found.has("project", "code work"):
        return found.score("project")
    without = SignalMatches(+found.labels)
    del without.labels[("project", "code work")]
    return without.score("project")


def _order(category: str, order: tuple[str, ...]) -> int:
    return order.index(category) if category in order else len(order)


# Signals that count only in the user's own words (:func:`_classify` drops them from everything else).
_USER_ONLY = frozenset({USER_BANK, "scope", "durable", "habit", "directive", "one-off", "request"})
# Project signals that are a decision or a fact by themselves (a chunk of command output holding one is kept).
_DECISIONS = ("implementation decision", "architecture", "delivery state", "project reference")


def _holds_decision(prose: SignalMatches) -> bool:
    """Whether the user's and the agent's words hold a project decision or fact: one of :data:`_DECISIONS`, two
    kinds of project signal, or one said three times ("I refactored the config, which fixes the bug")."""
    return any(prose.has("project", label) for label in _DECISIONS) or prose.score("project") >= 1.5


def _statements(user: SignalMatches) -> set[str]:
    """The kinds of statement about the user in the user's words. A plain first-person habit ("I use UTC
    timestamps") is one only with a durable marker or a cross-project scope, an instruction ("explain a diff first")
    only with a cross-project scope: alone either is as likely about the project as about the user."""
    found = user.label_set(USER_BANK)
    scoped = user.has("scope", "cross-project scope")
    if user.has("habit", "first-person habit") and (scoped or user.has("durable", "durable marker")):
        found.add("first-person habit")
    if user.has("directive", "instruction") and scoped:
        found.add("instruction")
    return found


# A cross-project scope with no statement is User Bank evidence only beside one of these ("going forward, across
# every repo, run the linter first"); alone it is as likely a question about the projects ("does any repo …?").
_SCOPE_NEEDS_ONE_OF = (("durable", "durable marker"), ("directive", "instruction"), ("request", "memory request"),
                       ("habit", "first-person habit"))


class UserBankEvidence(NamedTuple):
    """How sure a chunk's own words make it that it belongs in the User Bank (README, "Routing confidence")."""

    candidate: bool
    confidence: float


def _user_bank_evidence(user: SignalMatches, mission: int) -> UserBankEvidence:
    """A User Bank candidate needs, in the user's own words, a statement about the user (a preference, an
    identity, a habit, a communication style) or a cross-project scope ("in every repo", "all my projects") with
    an instruction, a durable marker or a request to remember it.
    Its confidence is 0.6 plus 0.1 for each kind of evidence: the statement or scope; a second one (a second
    statement, a statement with a scope, or an identity, which does not change per project); a durable marker
    ("always", "from now on"); the user asking for it to be remembered; the User Bank mission's words. One phrase
    is 0.70; the User Bank alone needs 0.80 (:data:`USER_BANK_MIN_CONFIDENCE`)."""
    statements = _statements(user)
    scoped = user.has("scope", "cross-project scope")
    if not statements and not (scoped and any(user.has(*key) for key in _SCOPE_NEEDS_ONE_OF)):
        return UserBankEvidence(False, 0.5)
    matches = sum(n for (category, _), n in user.labels.items() if category == USER_BANK) + (
        "first-person habit" in statements)
    kinds = 1
    kinds += matches >= 2 or "identity" in statements or (bool(statements) and scoped)
    kinds += user.has("durable", "durable marker")
    kinds += user.has("request", "memory request")
    kinds += mission
    return UserBankEvidence(True, round(min(0.95, 0.6 + 0.1 * kinds), 2))


class ProjectGlobalDefault:
    """The heuristic strategy."""

    name = "project-global-default"
    writes_anything = True

    def route(self, data: RoutingStrategyInput) -> MemoryRouteDecision:
        verdict = _classify(data)
        route, reason = verdict.route, verdict.reason
        if data.redactions and route in (USER_BANK, "both"):
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
    banks = {"project": settings.banks.project, USER_BANK: settings.banks.user}
    ids: dict[RoutingBankRole, str | None] = {"project": data.project_bank_id, USER_BANK: data.user_bank_id}
    user_bank_ok = banks[USER_BANK].enabled and bool(ids[USER_BANK])
    writes: list[RoutingBankRole] = []
    targets: list[RouteTarget] = []
    for role in _ROLES[route]:
        will = strategy.writes_anything
        if role == USER_BANK:
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
        elif route == USER_BANK and mode == "router":
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
    signals = [c for c in _CATEGORIES if any(found.score(part) > 0 for part in _SIGNAL_PARTS[c])]
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
        global_mission=data.missions.user,
        strategy=strategy.name,
        skip_reason=verdict.skip_reason,
    )


def reason_without_mode(reason: str) -> str:
    """A decision's reason without its ``<mode> mode: `` prefix (summaries group skips by it)."""
    return reason.split(" mode: ", 1)[-1]


# Keyed by an instance's name: a compiled (mypyc) class keeps ``name`` on its instances only.
STRATEGIES: dict[str, Callable[[], RoutingStrategy]] = {
    factory().name: factory for factory in (ProjectGlobalDefault, DryRunOnly)
}
