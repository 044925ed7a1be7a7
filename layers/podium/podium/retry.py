"""Optimistic writes retried under contention: each attempt reads, decides and writes on
the condition that nothing changed since; a conflict waits a little (jittered, growing up
to a cap) and tries again, for as long as the time budget lasts (``CONTENTION_BUDGET_SECONDS``),
not for a number of attempts: under N concurrent writers to one item each round lets one
through, so a writer's wait grows with N, and a budget in time lets tens of writers on one
member all land where a count ran out. A caller whose attempts run out answers 429
``Throttled`` (``contended``: a ``Contended``)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

from podium.config import CONTENTION_BUDGET_SECONDS
from podium.errors import Contended

FIRST_BACKOFF_SECONDS = 0.002
# Short enough that a writer that keeps losing keeps trying often (a long wait lets the
# newcomers, whose waits are short, win every round), long enough to spread 32 writers out.
MAX_BACKOFF_SECONDS = 0.05
RETRY_AFTER_SECONDS = 1

# The clock and the sleep the attempts use, module attributes so that a test can replace them.
monotonic = time.monotonic
sleep = time.sleep


def attempts(budget_seconds: float = CONTENTION_BUDGET_SECONDS) -> Iterator[int]:
    """The attempt numbers, with a jittered backoff before each one after the first, while
    the time since the first, with the wait, stays within ``budget_seconds``."""
    started = monotonic()
    attempt = 0
    while True:
        yield attempt
        wait = backoff(attempt)
        if monotonic() - started + wait > budget_seconds:
            return
        sleep(wait)
        attempt += 1


def backoff(attempt: int) -> float:
    """Full jitter: uniform up to a cap that doubles with each attempt, up to the maximum."""
    return random.uniform(0, min(MAX_BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2 ** min(attempt, 16)))


def contended(what: str) -> Contended:
    """What a request answers when its attempts ran out: 429, to be sent again shortly."""
    return Contended(
        f"{what} is being changed by more writers at once than it can take within "
        f"{CONTENTION_BUDGET_SECONDS:g} s; retry in {RETRY_AFTER_SECONDS} s",
        retry_after=RETRY_AFTER_SECONDS,
    )
