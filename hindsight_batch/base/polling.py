"""Waiting with exponential backoff: the delays between tries, and a poll loop bounded by a deadline.

The uploader's wait for accepted operations, flush's wait for a document's earlier request and the client's
retries all back off the same way: each delay ``factor`` times the last, from ``first``, never above ``cap``.
Sleep and clock are passed in, so tests wait for nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Delays growing by ``factor`` from ``first``, capped at ``cap`` (seconds)."""

    first: float
    factor: float
    cap: float

    def delay(self, attempt: int) -> float:
        """The delay after try number ``attempt`` (0 for the first)."""
        return min(self.cap, self.first * self.factor**attempt)


def poll(
    done: Callable[[], bool],
    backoff: Backoff,
    *,
    deadline: float | None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Call ``done()`` until it returns True, sleeping the backoff's delays in between; return True then, or False
    once ``clock()`` has reached ``deadline`` (checked before each call: a deadline already past calls nothing).
    Without a deadline it waits as long as ``done()`` says so."""
    attempt = 0
    while deadline is None or clock() < deadline:
        if done():
            return True
        sleep(backoff.delay(attempt))
        attempt += 1
    return False
