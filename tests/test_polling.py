"""The poll-with-backoff helper behind the uploader's and flush's waits and the client's retry delays."""

from __future__ import annotations

import random

import httpx

from hindsight_batch.base.polling import Backoff, poll
from hindsight_batch.sinks.hindsight import HindsightClient


class FakeTime:
    """A clock that only moves when slept on."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_delays_grow_by_the_factor_up_to_the_cap() -> None:
    assert [Backoff(0.5, 1.5, 5.0).delay(n) for n in range(8)] == [0.5, 0.75, 1.125, 1.6875, 2.53125, 3.796875,
                                                                   5.0, 5.0]


def test_poll_stops_as_soon_as_done_and_sleeps_only_between_tries() -> None:
    fake = FakeTime()
    answers = iter([False, False, True])
    assert poll(lambda: next(answers), Backoff(1.0, 2.0, 3.0), deadline=None, clock=fake.clock, sleep=fake.sleep)
    assert fake.sleeps == [1.0, 2.0]


def test_poll_gives_up_at_the_deadline_and_never_tries_after_it() -> None:
    fake = FakeTime()
    tries: list[float] = []

    def never() -> bool:
        tries.append(fake.now)
        return False

    assert not poll(never, Backoff(1.0, 2.0, 4.0), deadline=fake.now + 10, clock=fake.clock, sleep=fake.sleep)
    assert fake.sleeps == [1.0, 2.0, 4.0, 4.0] and tries == [100.0, 101.0, 103.0, 107.0]
    fake.sleeps.clear()
    assert not poll(never, Backoff(1.0, 2.0, 4.0), deadline=fake.now, clock=fake.clock, sleep=fake.sleep)
    assert fake.sleeps == [] and len(tries) == 4  # a deadline already past: nothing tried


def test_the_clients_retry_delays_are_jittered_below_the_capped_backoff() -> None:
    seen: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(1)
        return httpx.Response(500 if len(seen) < 8 else 200, json={"operation_id": "op"})

    sleeps: list[float] = []
    rng = random.Random(7)
    client = HindsightClient("http://127.0.0.1:9", transport=httpx.MockTransport(handler), max_attempts=8,
                             sleep=sleeps.append, rng=random.Random(7))
    client.retain("b", [{"content": "x"}], "op")
    ceilings = [min(20.0, 0.5 * 2**n) for n in range(7)]
    assert sleeps == [rng.uniform(0, ceiling) for ceiling in ceilings]
