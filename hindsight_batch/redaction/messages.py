"""Error text a person or the ledger reads: one line, cut short, with every secret the project's redactor finds
replaced (an exception may quote the data it choked on). Kept beside the redactor, not in ``errors``: the
exceptions are the base every stage imports; this needs the redaction stage."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from hindsight_batch.errors import HindsightBatchError, without_surrogates

if TYPE_CHECKING:  # the rules are compiled when a message is first redacted, not when this module loads
    from hindsight_batch.redaction.redactor import Redactor

_MAX_REASON = 300


class FailureReason(Exception):
    """An exception already reduced to its one-line reason: how a worker process (``import --jobs``) sends one
    that would not survive pickling."""


def failure_reason(exc: BaseException) -> str:
    """One line saying what went wrong, for summaries, the ledger and the terminal: never a traceback."""
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror  # "Permission denied": the file is named beside the reason
    elif isinstance(exc, HindsightBatchError | FailureReason):
        text = str(exc)
    else:
        message = str(exc)
        text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return redact_message(text)


def redact_message(text: str) -> str:
    """``text`` on one line, cut short, lone surrogates replaced, and every secret the project's redactor finds
    replaced by its marker: an exception may quote the data it choked on."""
    from hindsight_batch.redaction.redactor import Findings

    one_line = " ".join(text.split())
    if len(one_line) > _MAX_REASON:
        one_line = one_line[:_MAX_REASON] + "…"
    return _redactor().redact_text(without_surrogates(one_line)[0], Findings())


@functools.cache
def _redactor() -> Redactor:
    from hindsight_batch.redaction.redactor import Redactor

    return Redactor()
