"""The shared routing seam: typed input and decision, strategies by name, one operation.

In: a chunk's redacted text with its context, the session's settings and banks' missions
(:class:`RoutingStrategyInput`, ``models``). Out: a :class:`MemoryRouteDecision`: the route (project, User Bank,
both or skip), the banks written and their tags, the signals and a ``skip_reason``. ``strategy`` holds the
protocol and the shipped strategies, ``operation`` the one call every command makes, ``signals``, ``provenance``
and ``hazards`` what a decision weighs.

The names load on first use (PEP 562): a run that only reads rows back (``routing.models``, for an unchanged
source's reused manifest rows) does not load the strategies, their signals and the redactor.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hindsight_batch.routing.models import MemoryRouteDecision, RoutingStrategyInput
    from hindsight_batch.routing.operation import route_content, route_text, strategy_for
    from hindsight_batch.routing.strategy import RoutingStrategy

_WHERE = {
    "MemoryRouteDecision": "models",
    "RoutingStrategyInput": "models",
    "route_content": "operation",
    "route_text": "operation",
    "strategy_for": "operation",
    "RoutingStrategy": "strategy",
}

__all__ = [
    "MemoryRouteDecision",
    "RoutingStrategy",
    "RoutingStrategyInput",
    "route_content",
    "route_text",
    "strategy_for",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
