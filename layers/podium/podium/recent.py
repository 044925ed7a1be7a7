"""What an instance keeps of what it has read, and for how long: the one cache policy of
the service (docs/capacity.md, "Hot boards").

A warm Lambda instance serves request after request; what a hot board's reads have in
common (its board item, its period's count, its head, the root of its count tree) need not
be read from DynamoDB for each of them. Each is kept for a bounded time, so that DynamoDB
sees about one read of each a second per warm instance, not one per request:

- a board's layout (its settings and re-shard) for ``LAYOUT_CACHE_SECONDS`` (5 s): every
  phase of a re-shard waits that long for every instance to see the one before;
- what a ranking read reads before the index (the board, the count) and the count tree's
  root for ``READ_CACHE_SECONDS`` (1 s in the template; 0 keeps nothing): within the API's
  contract, where ``total`` may lag writes by a few seconds and "exact once writes stop"
  holds again a second after they stop;
- the head, read with the board and count or alone while they are kept, for at most
  ``HEAD_KEEP_SECONDS`` (0.25 s): the head may lag writes by 2 s, and the stream takes a
  second or a little more to write it (``make bench`` measured 1.02 to 1.1 s typically), so
  a head kept a whole second was seen up to 2.2 s after a write, and one kept half a second
  up to 2.10 s in the slowest of 30 probes (``make bench``, 2026-11-28). It is read from the process's
  copy of the head (``podium.dal.structures``), written just after the primary and never
  older than it by more than those writes, so the 2 s hold for the copy as for the primary.

A member's own score is never kept: a rank is counted from the score as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from time import monotonic
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

KEPT_AT_MOST = 256  # keys an instance keeps; past it, it starts again empty
HEAD_KEEP_SECONDS = 0.25  # the head's 2 s, less the stream's second or more and a margin


class Recent(Generic[K, V]):
    """Values kept for at most ``seconds`` after they were read (0: none kept)."""

    def __init__(
        self, seconds: float, *, limit: int = KEPT_AT_MOST, clock: Callable[[], float] | None = None
    ) -> None:
        self.seconds = seconds
        self.limit = limit
        self._clock = clock
        self._kept: dict[K, tuple[float, V]] = {}

    def clock(self) -> float:
        return self._clock() if self._clock is not None else monotonic()

    def get(self, key: K) -> V | None:
        kept = self._kept.get(key)
        if kept is None or self.clock() - kept[0] >= self.seconds:
            return None
        return kept[1]

    def keep(self, key: K, value: V) -> V:
        """Keep ``value``, read just now, and answer it."""
        if self.seconds > 0:
            if key not in self._kept and len(self._kept) >= self.limit:
                self._kept.clear()
            self._kept[key] = (self.clock(), value)
        return value
