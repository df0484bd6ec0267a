"""The one routing operation every command uses (``import``, catch-up, ``route``): no routing logic elsewhere."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hindsight_batch.base import jsoncodec
from hindsight_batch.config.model import Settings
from hindsight_batch.errors import ConfigError
from hindsight_batch.redaction.redactor import Findings, Redactor, markers
from hindsight_batch.retention.memory_filter import excise_memory, starts_with_memory
from hindsight_batch.routing.models import MemoryRouteDecision, Missions, RoutingStrategyInput
from hindsight_batch.routing.strategy import STRATEGIES, RoutingStrategy


def strategy_for(settings: Settings, source: str = "config") -> RoutingStrategy:
    name = settings.routing.strategy
    factory = STRATEGIES.get(name)
    if factory is None:
        known = ", ".join(sorted(STRATEGIES))
        raise ConfigError(source, "routing.strategy", f"unknown strategy {name!r} (known: {known})")
    return factory()


def route_content(
    settings: Settings,
    content: str,
    *,
    context: str | None = None,
    cwd: str | None = None,
    project_bank_id: str | None = None,
    session_file: str | None = None,
    base_tags: list[str] | None = None,
    redactions: Mapping[str, int] | None = None,
    strategy: RoutingStrategy | None = None,
) -> MemoryRouteDecision:
    data = RoutingStrategyInput(
        content=content,
        context=context,
        config=settings,
        missions=Missions(settings.banks.project.mission, settings.banks.user.mission),
        cwd=cwd,
        project_bank_id=project_bank_id or settings.banks.project.bank_id,
        user_bank_id=settings.banks.user.bank_id,
        session_file=session_file,
        base_tags=list(base_tags or []),
        redactions=dict(redactions or {}),
    )
    return (strategy or strategy_for(settings)).route(data)


def route_text(
    settings: Settings,
    text: str,
    *,
    role: str = "user",
    redactor: Redactor | None = None,
    **kwargs: Any,
) -> tuple[MemoryRouteDecision, str]:
    """Route ``text`` as ``import`` would route a chunk holding it, and return the decision and the redacted text.

    A chunk (lines of projected JSON records) is routed as it is. Other text is one message of ``role`` (the
    user's, unless told): S1 as the projection applies it (text that starts with injected memory is dropped
    whole, and the strategy says so; memory spliced into it is cut out), then redaction (S3)."""
    if not _is_chunk(text):
        if not starts_with_memory(text):
            text = excise_memory(text)[0]
        if role != "user":
            text = jsoncodec.dumps({"message": {"role": role, "content": [{"type": "text", "text": text}]}}).decode()
    findings = Findings()
    redactor = redactor or Redactor(private_hosts=tuple(settings.redaction.private_hosts))
    earlier = markers(text)  # a chunk's content from a manifest: redacted by the import, routed as it was
    redacted = redactor.redact_text(text, findings)
    counts = dict(findings.counts)
    for rule, n in earlier.items():
        counts[rule] = counts.get(rule, 0) + n
    return route_content(settings, redacted, redactions=counts, **kwargs), redacted


def _is_chunk(text: str) -> bool:
    """Every line that is not blank is a JSON object: projected records."""
    lines = [line for line in text.split("\n") if line.strip()]
    return bool(lines) and all(line.lstrip().startswith("{") and line.rstrip().endswith("}") for line in lines)
