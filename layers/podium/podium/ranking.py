"""Pure ranking logic: merging shard pages, reading the top of a sharded index in as few
items as it takes, assigning ranks, choosing an around-window.

Nothing here talks to DynamoDB; ``podium.service`` feeds it what the index returned.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import TYPE_CHECKING

from podium.keys import RankOrder, member_of_key, shard_of
from podium.models import IndexEntry, RankedEntry
from podium.values import frozen

if TYPE_CHECKING:
    from podium.head import Hint


def merge_shards(pages: Iterable[Sequence[str]], limit: int) -> list[str]:
    """The first ``limit`` sort keys of the union of sorted shard pages.

    Sort keys are unique and their order is the listing order, so this is exact as
    long as every shard page holds all of that shard's keys that could be in the result.
    """
    merged: list[str] = []
    for key in heapq.merge(*pages):
        if len(merged) == limit:
            break
        merged.append(key)
    return merged


def decode(order: RankOrder, sort_keys: Iterable[str]) -> list[IndexEntry]:
    entries = []
    for key in sort_keys:
        score, member_id = order.parse(key)
        entries.append(IndexEntry(sort_key=key, member_id=member_id, score=score))
    return entries


def assign_ranks(
    entries: Sequence[IndexEntry],
    *,
    earliest: bool,
    first_position: int,
    previous: tuple[Decimal, int] | None,
) -> list[RankedEntry]:
    """Ranks for consecutive listing entries.

    ``first_position`` is the 1-based listing position of ``entries[0]``; ``previous`` is
    the (score, rank) of the entry just before it, when there is one. With shared ranks
    ("1224") an entry whose score equals the one before takes its rank; otherwise the
    rank is the position (every member before it is strictly better).
    """
    ranked: list[RankedEntry] = []
    for offset, entry in enumerate(entries):
        position = first_position + offset
        if not earliest and previous is not None and previous[0] == entry.score:
            rank = previous[1]
        else:
            rank = position
        ranked.append(RankedEntry(rank=rank, member_id=entry.member_id, score=entry.score))
        previous = (entry.score, rank)
    return ranked


def around_window(before: Sequence[str], after: Sequence[str], radius: int) -> tuple[int, int]:
    """How many entries to take from ``before`` (nearest last) and ``after`` (nearest
    first) so that the window holds ``2·radius+1`` entries, shifting at the board's ends."""
    take_before = min(len(before), radius)
    take_after = min(len(after), radius)
    if take_before < radius:
        take_after = min(len(after), 2 * radius - take_before)
    if take_after < radius:
        take_before = min(len(before), 2 * radius - take_after)
    return take_before, take_after


# -- the top of a sharded index ---------------------------------------------------------

# How often the first round of a top read should be enough on its own.
ONE_ROUND_CONFIDENCE = 0.95
# The same with a hint: every shard's query stops at the hint's key anyway, so longer pages
# cost nothing unless the hint is wrong, and a right hint then settles almost every read.
HINTED_CONFIDENCE = 0.99999
# Above this many steps the page size keeps the union bound's cap (see first_page_size).
EXACT_CHECK_BUDGET = 250_000


def binomial_tail(trials: int, p: float, cap: int) -> float:
    """P(Binomial(trials, p) > cap)."""
    if cap >= trials:
        return 0.0
    if p >= 1.0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    log_n = math.lgamma(trials + 1)
    tail = 0.0
    for j in range(cap + 1, trials + 1):
        term = math.exp(
            log_n - math.lgamma(j + 1) - math.lgamma(trials - j + 1) + j * log_p + (trials - j) * log_q
        )
        tail += term
        if j > trials * p and term < tail * 1e-17:
            break  # past the mode the terms only shrink
    return min(tail, 1.0)


def max_load_probability(balls: int, shards: int, cap: int) -> float:
    """Exactly P(no shard gets more than ``cap``) when ``balls`` are placed on ``shards``
    independently and uniformly: the multinomial's maximum, by a small dynamic programme.

    ``fits[r]`` is the probability that ``r`` balls spread over the last ``g`` shards put at
    most ``cap`` on each; adding a shard in front, it takes Binomial(r, 1/(g+1)) of them.
    Only the ``r`` that can still lead to ``balls`` in all are kept (the others shards
    hold at most ``cap`` each), so the cost is about shards · cap · min(balls, shards · cap).
    """
    if balls <= cap:
        return 1.0
    if shards * cap < balls:
        return 0.0
    fits = [1.0 if r <= cap else 0.0 for r in range(balls + 1)]
    for group in range(2, shards + 1):
        p = 1.0 / group
        ratio = p / (1.0 - p)
        low = max(0, balls - (shards - group) * cap)
        high = min(balls, group * cap)
        wider = [0.0] * (balls + 1)
        for r in range(low, high + 1):
            pmf = (1.0 - p) ** r  # P(the new shard takes 0 of r)
            total = pmf * fits[r] if r <= (group - 1) * cap else 0.0
            for j in range(1, min(cap, r) + 1):
                pmf *= (r - j + 1) / j * ratio
                if r - j <= (group - 1) * cap:
                    total += pmf * fits[r - j]
            wider[r] = total
        fits = wider
    return fits[balls]


@lru_cache(maxsize=4096)
def first_page_size(limit: int, shards: int, confidence: float = ONE_ROUND_CONFIDENCE) -> int:
    """How many keys to read from every shard in the first round of a top-``limit`` read,
    so that with probability ``confidence`` no second round is needed.

    A member's shard is a hash of its id, so the number of the best ``limit - 1`` keys that
    one shard holds is Binomial(limit - 1, 1/shards), and the shares are multinomial. The
    first round settles the answer unless a shard returns a full page that lies wholly in
    the best ``limit - 1`` received (see ``gather_top``): that shard's next key could still
    beat the ``limit``-th. So a page must be one longer than the largest share, and
    ``q = 1 + m`` with ``m`` the smallest cap such that P(max share <= m) >= confidence
    (the union bound shards·P(Binomial > m) <= 1 - confidence gives a cap that is never too
    small; the exact ``max_load_probability`` lowers it while it still holds, when that is
    cheap to compute: the bound overshoots by one at most, and rarely). A single shard
    needs ``limit + 1`` keys to tell whether more follow.
    """
    if shards == 1:
        return limit + 1
    balls = limit - 1
    cap = -(-balls // shards)
    while shards * binomial_tail(balls, 1.0 / shards, cap) > 1.0 - confidence:
        cap += 1
    # The union bound is sound but can overshoot by one; the exact check costs about
    # balls·shards·cap steps, so it runs when that is cheap (well under 0.1 s).
    while (
        cap > 0
        and balls * shards * cap <= EXACT_CHECK_BUDGET
        and max_load_probability(balls, shards, cap - 1) >= confidence
    ):
        cap -= 1
    return max(cap + 1, -(-(limit + 1) // shards))


@frozen
class PageRequest:
    """Read up to ``limit`` keys of one shard, best first, after ``after`` (exclusive) and
    below ``below`` (exclusive); None means no bound."""

    shard: int
    after: str | None
    below: str | None
    limit: int


@frozen
class TopStats:
    """What one top read cost: index items read and rounds of parallel queries."""

    items: int
    rounds: int
    queries: int


PageReader = Callable[[Sequence[PageRequest]], Sequence[Sequence[str]]]


def first_round(shards: int, after: str | None, limit: int, hint: Hint | None = None) -> list[PageRequest]:
    """The first round's page requests. Without a hint every shard is asked for
    ``first_page_size(limit, shards)`` keys (one round is enough 95% of the time). With
    one, every shard also stops at the hint's key, so the round reads about the keys the
    head expects (``limit`` and a margin) instead of ``shards`` pages; the pages can then
    be sized for 99.999%, and at least one longer than the head's keys on the shard, so a
    head that is right settles almost every read in this round. A single shard needs no
    hint: ``limit + 1`` keys settle it."""
    if hint is None or shards == 1 or (hint.below is not None and after is not None and hint.below <= after):
        page = first_page_size(limit, shards)
        return [PageRequest(shard, after, None, page) for shard in range(shards)]
    page = first_page_size(limit, shards, HINTED_CONFIDENCE)
    on_shard = Counter(shard_of(member_of_key(key), shards) for key in hint.expected)
    return [PageRequest(shard, after, hint.below, max(page, on_shard[shard] + 1)) for shard in range(shards)]


def gather_top(
    read: PageReader, shards: int, after: str | None, limit: int, hint: Hint | None = None
) -> tuple[list[str], TopStats]:
    """The best ``limit`` keys after ``after`` over all shards, exactly, followed by one
    more key when the listing goes on (a witness that it does: not necessarily the next
    key); and what the read cost.

    Round 1 is ``first_round``: every shard's first page, stopping at the hint's key when
    there is a hint. After each round, with R the keys received so far (sorted):

    * if ``|R| > limit``, ``need = limit`` and ``T = R[limit - 1]`` (the ``limit``-th best
      received); else ``need = limit + 1`` and ``T`` is None (only the existence of one
      more key is at stake beyond the best ``limit``);
    * a shard whose last read returned all it asked for is *full*; with ``last`` its last
      key received and ``c = #{x in R : x <= last}``, it is asked for up to ``need - c``
      keys after ``last`` (below ``T``), or closed when ``c >= need``;
    * a shard whose last read stopped short of a bound ``b`` is *cut* there: it is closed
      when ``T <= b``, else asked for up to ``need - #{x in R : x < b}`` keys after its
      last key (below ``T``);
    * a shard whose unbounded read came back short is exhausted, and closed.

    Exactness. Every shard's received keys are a prefix of its keys after ``after``, so
    an unreceived key ``x`` of shard ``i`` is worse than ``last_i``. At the end every shard
    is closed, for one of three reasons. (a) Exhausted: it has no unreceived key.
    (b) ``c_i >= need >= limit``: at least ``limit`` received keys are ``<= last_i < x``, so
    ``x`` is not among the best ``limit``. (c) Cut at ``b`` with ``T <= b``: ``x >= b >= T``,
    and ``x != T`` (T was received, from shard ``i`` itself after its cut, or from another
    shard, and keys are unique), so ``x`` is worse than the ``limit`` received keys up to
    ``T``; R only grows, so its ``limit``-th key only gets better and this stays true.
    Hence every key of the true best ``limit`` is in R, and the best ``limit`` of R are the
    answer. As for more: if ``|R| > limit`` more exist. Otherwise no shard closed by (b)
    or (c), which need ``c_i >= limit + 1 > |R|`` or a ``T``, so every shard is exhausted
    and nothing follows.

    The number of keys asked is the fewest sound: the ``j``-th unreceived key of a full
    shard has at least ``c_i + j - 1`` received keys before it, and that of a shard cut at
    ``b`` every received key below ``b``, so ``j`` larger than asked cannot matter. Two
    rounds at most: round 1's hint bound leaves every received key below it, so after
    round 1 either ``T`` is below every cut (those shards close) or ``T`` is None; round 2
    asks each open shard for everything that could still matter, and a read that returns
    all it asked for leaves ``c_i >= need`` while a short one is exhausted or cut at the
    round's ``T``, which only gets better; so every shard closes after round 2.
    """
    requests = first_round(shards, after, limit, hint)
    received: list[str] = []
    items = rounds = queries = 0
    while requests:
        pages = read(requests)
        rounds += 1
        queries += len(requests)
        full: list[tuple[int, str]] = []
        cut: list[tuple[int, str | None, str]] = []
        for request, keys in zip(requests, pages, strict=True):
            items += len(keys)
            received.extend(keys)
            last = keys[-1] if keys else request.after
            if len(keys) >= request.limit:
                assert last is not None
                full.append((request.shard, last))
            elif request.below is not None:
                cut.append((request.shard, last, request.below))
        received.sort()
        if len(received) > limit:
            need, below = limit, received[limit - 1]
        else:
            need, below = limit + 1, None
        requests = []
        for shard, last in full:
            room = need - bisect_right(received, last)
            if room > 0:
                requests.append(PageRequest(shard, last, below, room))
        for shard, cut_after, bound in cut:
            if below is not None and below <= bound:
                continue
            room = need - bisect_left(received, bound)
            if room > 0:
                requests.append(PageRequest(shard, cut_after, below, room))
    return received[: limit + 1], TopStats(items=items, rounds=rounds, queries=queries)
