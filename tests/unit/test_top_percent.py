"""topPercent, the share of the board at or above a member's rank."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from podium.reads import top_percent


@pytest.mark.parametrize(
    ("rank", "total", "expected"),
    [
        (1, 1539, "0.07"),
        (211, 1539, "13.72"),
        (1539, 1539, "100"),
        (4, 6, "66.67"),
        (1, 1, "100"),
        (3, 2, "100"),
    ],
)
def test_top_percent_is_rounded_up_to_two_decimals(rank: int, total: int, expected: str) -> None:
    # Given a rank of a board's total (which may lag, so a rank can pass it)
    # When the share of the board at or above it is computed
    # Then it is 100 * rank / total rounded up to hundredths, 100 at the last place
    assert top_percent(rank, total) == Decimal(expected)


def test_top_percent_is_the_least_hundredth_at_or_above_the_exact_share() -> None:
    # Given ranks of boards of every size up to 2,000 (and totals that lag below the rank)
    for total in range(1, 2001, 7):
        for rank in (1, 2, total // 3 + 1, total // 2 + 1, total - 1, total, total + 5):
            if rank < 1:
                continue
            # When topPercent is computed
            share = top_percent(rank, total)
            # Then, in exact fractions, it is at or above 100 * rank / total (a rank past a
            # lagging total counts as the last), and a hundredth less would be below it
            exact = Fraction(100 * rank, max(total, rank))
            assert Fraction(share) >= exact
            assert Fraction(share) - Fraction(1, 100) < exact
            assert share == share.quantize(Decimal("0.01"))
            assert share <= 100
