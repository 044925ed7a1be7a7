"""When and how long to wait before sending a request again.

Exponential backoff with *full jitter* (a delay drawn uniformly from zero to the capped
exponential): many clients throttled at once spread their retries out instead of coming
back together. A ``Retry-After`` the service sent wins over the drawn delay, since the
service knows when it will take the request (a rate limit's minute, say).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class RetryPolicy:
    """How the client retries. ``max_attempts`` counts the first try (1: never retry).
    The n-th retry waits ``random() * min(max_delay, base_delay * 2**n)`` seconds, or the
    answer's ``Retry-After`` when it has one; a ``Retry-After`` longer than
    ``max_retry_after`` is not waited for: the error is raised, with its ``retry_after``.
    ``sleep``, ``random`` and ``now`` are there for tests to replace."""

    max_attempts: int = 5
    base_delay: float = 0.1
    max_delay: float = 5.0
    max_retry_after: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    random: Callable[[], float] = field(default=random.random, compare=False)
    now: Callable[[], datetime] = field(default=_now, compare=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts counts the first try: at least 1")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("delays cannot be negative")

    def backoff(self, retry: int) -> float:
        """The drawn delay before retry number ``retry`` (0 for the first retry)."""
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** min(retry, 64))
        return self.random() * ceiling

    def delay(self, retry: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry number ``retry``; None when the service asked for a
        longer wait than this policy takes."""
        if retry_after is None:
            return self.backoff(retry)
        if retry_after > self.max_retry_after:
            return None
        return retry_after

    def retry_after(self, header: str | None) -> float | None:
        """A ``Retry-After`` header in seconds: whole seconds, or an HTTP date (a date in
        the past means now); None when absent or unreadable."""
        if header is None:
            return None
        text = header.strip()
        if text.isdigit():
            return float(text)
        try:
            moment = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if moment.tzinfo is None:  # RFC 9110 dates are GMT; the parser leaves "-0000" naive
            moment = moment.replace(tzinfo=UTC)
        return max(0.0, (moment - self.now()).total_seconds())


NO_RETRIES = RetryPolicy(max_attempts=1)
