"""Score ranges and topPercent in the benchmark (docs/benchmarks.md, "Score ranges").

On each board the run has grown (``bench.run``), at each size and shard count:

- ``GET .../scores``: a band at three depths of the listing (starting at the member 1 %
  down, at the median, and ending at the last member), its first page of 10 and of 100,
  each band wide enough to fill the page (it ends at the score of the member two pages
  further down, or at the bottom of the board). Recorded beside it, for the same page
  size, a rank at the band's first member and a first page of ``top``: a band's page is
  one count (what the rank reads) beside one gather of the page (what a page of top reads).
- ``rank``'s ``topPercent``: the rank read at each depth of ``bench.run.DEPTHS`` again,
  its ``topPercent`` checked against ``100 * rank / total`` rounded up in exact fractions.
  It is arithmetic on the rank and the total that the same read returns, so its cost is
  the rank's: the rows show both, measured apart.

Every answer is checked against a plain sorted list of the board (the population's
scores, the writes' changes, and the members ``measure_writes`` added at 0).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from decimal import Decimal
from fractions import Fraction
from functools import partial
from typing import TYPE_CHECKING

from bench import load
from podium.bands import Band

if TYPE_CHECKING:
    from bench.run import Context

BAND_DEPTHS = (("1%", 0.01), ("50%", 0.50), ("bottom", 1.0))
BAND_LIMITS = (10, 100)

Listed = tuple[int, str, Decimal]  # rank, member, score


def sorted_board(ctx: Context, size: int, shards: int) -> list[Listed]:
    """The board as a plain sorted list: higher first, ties by member id sharing the rank
    of 1 + the members strictly better."""
    overrides = ctx.overrides.get(shards) or {}
    scores = {load.member_id(i): overrides.get(i, ctx.population.scores[i]) for i in range(size)}
    scores |= {f"joiner-{n:06d}": 0 for n in range(ctx.joined.get(shards, 0))}
    ordered = sorted(scores, key=lambda member: (-scores[member], member))
    worse_first = sorted(scores.values())
    return [
        (len(worse_first) - bisect_right(worse_first, scores[m]) + 1, m, Decimal(scores[m])) for m in ordered
    ]


def bands(listing: list[Listed], limit: int) -> list[tuple[str, int, Band]]:
    """The bands measured: (depth, position of its first member, band)."""
    found = []
    for depth, fraction in BAND_DEPTHS:
        if fraction >= 1.0:  # the last page of the board: the band ends at the bottom
            start = max(1, len(listing) - limit + 1)
            found.append((depth, start, Band(None, listing[start - 1][2])))
            continue
        start = max(1, min(len(listing), math.ceil(fraction * len(listing))))
        end = min(len(listing), start + 2 * limit)
        found.append((depth, start, Band(listing[end - 1][2], listing[start - 1][2])))
    return found


def top_percent(rank: int, total: int) -> Fraction:
    """``100 * rank / total`` rounded up to hundredths, in exact fractions."""
    share = Fraction(100 * rank, max(total, rank))
    return Fraction(math.ceil(share * 100), 100)


def measure_scores(ctx: Context, size: int, shards: int) -> None:
    """The rows ``scores`` and ``topPercent`` for one board (see the module's docstring)."""
    from bench.run import depth_members, measure, record

    board_id = ctx.boards[shards]
    listing = sorted_board(ctx, size, shards)
    reads = ctx.service.reads
    for limit in BAND_LIMITS:
        top, _ = measure(ctx, partial(reads.top, board_id, limit, None, False, consistent=True))
        for depth, position, band in bands(listing, limit):
            summary, page = measure(ctx, partial(ctx.service.bands.scores, board_id, band, limit, None))
            first = page.entries[0].member_id if page.entries else listing[position - 1][1]
            rank, _ = measure(ctx, partial(reads.rank, board_id, first))
            record(
                ctx, size, shards, "scores", "service", depth=depth, position=position, k=limit,
                rankRcu=rank["rcu"], rankRequests=rank["requests"],
                topRcu=top["rcu"], topRequests=top["requests"],
                **summary,
            )  # fmt: skip
            inside = [e for e in listing if _within(band, e[2])]
            shown = [(e.rank, e.member_id, e.score) for e in page.entries]
            ctx.checks.append(
                {
                    "check": f"scores at {depth}, limit {limit}: service == sorted list",
                    "size": size,
                    "shards": shards,
                    "ok": shown == inside[:limit] and (page.next_cursor is not None) == (len(inside) > limit),
                }
            )
    total = len(listing)
    for depth, position, member in depth_members(ctx, size, shards):
        summary, answer = measure(ctx, partial(reads.rank, board_id, member))
        expected = top_percent(int(answer["rank"]), total)
        share = Decimal(answer["topPercent"])
        record(
            ctx, size, shards, "topPercent", "service", depth=depth, position=position,
            topPercent=str(share), **summary,
        )  # fmt: skip
        ctx.checks.append(
            {
                "check": f"topPercent at {depth}: == 100 x rank / total rounded up",
                "size": size,
                "shards": shards,
                "ok": Fraction(share) == expected,
            }
        )


def _within(band: Band, score: Decimal) -> bool:
    return (band.least is None or score >= band.least) and (band.most is None or score <= band.most)
