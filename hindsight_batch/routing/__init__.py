"""The shared routing seam: typed input and decision, strategies by name, one operation."""

from hindsight_batch.routing.models import MemoryRouteDecision, RoutingStrategyInput
from hindsight_batch.routing.operation import route_content, route_text, strategy_for
from hindsight_batch.routing.strategy import RoutingStrategy

__all__ = [
    "MemoryRouteDecision",
    "RoutingStrategy",
    "RoutingStrategyInput",
    "route_content",
    "route_text",
    "strategy_for",
]
