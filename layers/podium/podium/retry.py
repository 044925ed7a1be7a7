"""Optimistic writes retried under contention: each attempt reads, decides and writes on
the condition that nothing changed since; a conflict waits a little (jittered, growing) and
tries again."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

MAX_ATTEMPTS = 64


def attempts(count: int = MAX_ATTEMPTS) -> Iterator[int]:
    """The attempt numbers, with a jittered backoff before each one after the first (under
    N concurrent writers to one item each round lets one through)."""
    for attempt in range(count):
        if attempt:
            backoff(attempt - 1)
        yield attempt


def backoff(attempt: int) -> None:
    time.sleep(random.uniform(0, min(0.05, 0.002 * 2**attempt)))
