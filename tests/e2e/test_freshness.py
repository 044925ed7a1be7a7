"""How fresh ranks are, as the contract states it: every rank (``rank``, ``around``,
``ranks``, ``top``) reflects every write acknowledged more than 2 seconds before it was
asked, on a board written through the local stack.

A stack of this module's own (its streams delivered once, as Lambda delivers them; a
DynamoDB Local of its own) takes bursts of writes offered at 200 a second by 16 clients,
new members and changes of members already there (``bench.fresh``, which ``make
bench-fresh`` runs on 20,000 members). Two seconds after the last write of each burst was
acknowledged, rank at six depths, around the middle member, ranks of 100 members and the
top 100 are compared with a plain sorted list of what was acknowledged. It runs alone
(``make test`` runs the tests marked ``alone`` after the others): how fast the stack keeps
up depends on the machine's two cores, not on the test beside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from bench.fresh import Burst, FreshPlan, run_bursts

if TYPE_CHECKING:
    from tests.conftest import StackLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.alone]

# past COUNT_INDEX_UP_TO (2,048), so that ranks are counted from the count tree the stream keeps
PLAN = FreshPlan(members=3_000, rate=200.0, burst_s=2.0, clients=16)


@pytest.fixture(scope="module")
def fresh_stack(launch_stack: StackLauncher, own_dynamodb: str) -> Iterator[str]:
    with launch_stack(name="fresh-stack", dynamodb=own_dynamodb, deliver_twice=False) as local:
        yield local.url


def test_every_rank_reflects_the_writes_acknowledged_2_s_before(fresh_stack: str) -> None:
    # Given a board written in bursts offered at 200 writes a second
    seen: list[Burst] = []

    def say(burst: Burst) -> None:
        state = burst.wrong or "exact"
        print(f"{burst.members:,} members: {burst.writes} writes at {burst.rate:.0f}/s, {state}")
        seen.append(burst)

    # When each burst's last acknowledged write is 2 s old, and the board is read
    bursts = run_bursts(fresh_stack, "fresh", PLAN, report=say)

    # Then every answer of every burst was exact: ranks, around, ranks of 100, the top 100
    assert sum(b.writes for b in bursts) >= PLAN.members
    assert bursts[-1].members == PLAN.members
    assert [b.wrong for b in bursts if b.wrong] == []
    assert sum(b.answers for b in bursts) == 9 * len(bursts)
