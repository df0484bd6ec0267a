"""The seams' protocols (hindsight_batch/interfaces.py) and what implements them.

mypy checks the assignments below (this file is in its ``files``): a class or module that no longer fits its
protocol fails the type check. The test checks the same at run time, so a plain ``pytest`` catches it too: each
protocol member exists on each implementation and takes the arguments the protocol's callers pass.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest

from hindsight_batch.interfaces import (
    DocumentSink,
    EntryVisitor,
    LedgerSink,
    ManifestSink,
    QueueSource,
    RunLedger,
    SessionSource,
)
from hindsight_batch.ledger import Ledger
from hindsight_batch.queue import store
from hindsight_batch.retention.records import RecordMaker
from hindsight_batch.routing.strategy import DryRunOnly, ProjectGlobalDefault, RoutingStrategy
from hindsight_batch.session import discovery
from hindsight_batch.session.reader import EntryCallback
from hindsight_batch.sinks.manifest import ManifestWriter
from hindsight_batch.sinks.upload import Uploader

# What implements which protocol: checked by mypy.
sessions: SessionSource = discovery
queues: QueueSource = store
visitors: list[type[EntryVisitor]] = [RecordMaker, EntryCallback]
manifest_sink: type[ManifestSink] = ManifestWriter
ledger_sink: type[LedgerSink] = Ledger
run_ledger: type[RunLedger] = Ledger
document_sink: type[DocumentSink] = Uploader
strategies: list[type[RoutingStrategy]] = [ProjectGlobalDefault, DryRunOnly]

PAIRS: list[tuple[Any, object]] = [
    (SessionSource, discovery), (QueueSource, store),
    *((EntryVisitor, v) for v in visitors), (ManifestSink, ManifestWriter), (LedgerSink, Ledger), (RunLedger, Ledger),
    (DocumentSink, Uploader), *((RoutingStrategy, s) for s in strategies),
]


def _members(protocol: Any) -> list[str]:
    return [name for name in vars(protocol) if not name.startswith("_") or name == "__call__"] + [
        name for name in getattr(protocol, "__annotations__", {}) if name not in vars(protocol)]


def _has(implementation: object, name: str) -> bool:
    """A member, or (of a class whose source is at hand) an attribute its methods set on the instance."""
    if hasattr(implementation, name):
        return True
    try:
        source = inspect.getsource(implementation) if inspect.isclass(implementation) else ""
        return re.search(rf"self\.{name}\s*[:=]", source) is not None  # set, or declared and set
    except (OSError, TypeError):  # no source (compiled, or made at run time)
        return False


@pytest.mark.parametrize(("protocol", "implementation"), PAIRS,
                         ids=[f"{p.__name__}-{getattr(i, '__name__', i)}" for p, i in PAIRS])
def test_each_implementation_has_every_member_of_its_protocol_and_takes_its_arguments(
        protocol: Any, implementation: object) -> None:
    members = _members(protocol)
    assert members, protocol
    for name in members:
        assert _has(implementation, name), f"{implementation} lacks {protocol.__name__}.{name}"
        wanted = vars(protocol).get(name)
        if not inspect.isfunction(wanted):
            continue  # an attribute or a property: being there is what the protocol asks
        params = list(inspect.signature(wanted).parameters.values())[1:]  # without self
        positional: list[object] = [object() for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        keywords = {p.name: object() for p in params if p.kind is p.KEYWORD_ONLY}
        given = inspect.signature(getattr(implementation, name))
        if next(iter(given.parameters), None) == "self":
            positional.insert(0, object())  # a method read off the class (pure or compiled): it takes self too
        given.bind(*positional, **keywords)  # raises TypeError when they do not fit
