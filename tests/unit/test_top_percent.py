"""topPercent, the share of the board at or above a member's rank."""

from __future__ import annotations

from decimal import Decimal

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
