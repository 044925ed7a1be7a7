"""Rollups on DynamoDB Local: the reference architecture's xbox/pc -> all example."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from podium.errors import NotFound, ValidationError
from podium.stream.aggregate import Aggregator
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import TableStream, TickingClock, unique_id

pytestmark = pytest.mark.integration


def _records(stream: TableStream, boards: list[str]) -> list[dict[str, Any]]:
    prefixes = tuple(f"M#{b}#" for b in boards)
    return [r for r in stream.records() if r["dynamodb"]["Keys"]["pk"]["S"].startswith(prefixes)]


def test_rollup_board_creation_is_checked(service: Services) -> None:
    target = unique_id("all")
    service.boards.put_board(target, board_request({}))
    with pytest.raises(ValidationError, match="does not exist"):
        service.boards.put_board(unique_id("src"), board_request({"rollupTo": ["no-such-board"]}))
    with pytest.raises(ValidationError, match="itself"):
        service.boards.put_board("self-loop", board_request({"rollupTo": ["self-loop"]}, own_id="self-loop"))
    with pytest.raises(ValidationError, match="at most 5"):
        service.boards.put_board("wide", board_request({"rollupTo": [target] * 6}, own_id="wide"))


def test_xbox_and_pc_roll_up_into_all_exactly_once(
    service: Services,
    table_stream: TableStream,
) -> None:
    # Given all_level1 (increment) and best_level1 (best), and two sources rolling up into both
    suffix = unique_id("l1")
    total, best = f"all_level1-{suffix}", f"best_level1-{suffix}"
    service.boards.put_board(total, board_request({}))
    service.boards.put_board(best, board_request({"operator": "best"}))
    xbox, pc = f"xbox_level1-{suffix}", f"pc_level1-{suffix}"
    for source in (xbox, pc):
        service.boards.put_board(source, board_request({"rollupTo": [total, best]}, own_id=source))

    # When players score on both platforms
    service.members.put_member(xbox, "brian", member_request({"score": Decimal(100), "data": {"tag": "B"}}))
    service.members.submit_score(xbox, "brian", Decimal("23.5"))
    service.members.put_member(pc, "brian", member_request({}))
    service.members.submit_score(pc, "brian", Decimal(40))
    service.members.put_member(pc, "damian", member_request({"score": Decimal(7)}))
    service.members.delete_member(pc, "damian")  # deleting a source member changes no target
    aggregator = Aggregator(service.db, service.boards.settings, service.clock)
    batch = _records(table_stream, [xbox, pc])
    for record in batch + batch:  # and the stream delivers everything twice
        aggregator.apply(record)

    # Then the increment target holds the sum, the best target the best, once each
    assert service.members.get_member(total, "brian").score == Decimal("163.5")
    assert service.members.get_member(best, "brian").score == Decimal("123.5")
    assert service.members.get_member(total, "brian").data == {"tag": "B"}  # created with the source's data
    assert service.members.get_member(total, "damian").score == 7
    # And the targets' rankings agree
    assert [(e.member_id, e.score) for e in service.reads.top(total, 10, None, False).entries] == [
        ("brian", Decimal("163.5")),
        ("damian", Decimal(7)),
    ]


# -- records read late: redeliveries, redrives ---------------------------------------------


def _changes(stream: TableStream, board: str, member: str) -> list[dict[str, Any]]:
    """The stream records of the member's score changes on ``board``, in stream order:
    the records a rollup takes."""
    return [
        r
        for r in _records(stream, [board])
        if r["dynamodb"]["Keys"]["pk"]["S"] == f"M#{board}#{member}"
        and r["dynamodb"]["Keys"]["sk"]["S"].startswith("SCORE#")
    ]


def _boards(service: Services, *operators: str) -> tuple[str, dict[str, str]]:
    """A ``set`` source board rolling up into one new target of each operator: (source,
    operator -> target)."""
    suffix = unique_id("late")
    targets = {operator: f"{operator}-{suffix}" for operator in operators}
    for operator, target in targets.items():
        service.boards.put_board(target, board_request({"operator": operator}))
    source = f"src-{suffix}"
    body = {"operator": "set", "rollupTo": list(targets.values())}
    service.boards.put_board(source, board_request(body, own_id=source))
    return source, targets


# The source member's changes 10 -> 5 -> 10, and the orders in which the stream hands their
# records to the rollup: late (a later record before an earlier one, as a redrive replays a
# record after newer ones were applied) and delivered again.
LATE_ORDERS = {
    "in order": [0, 1, 2],
    "the last change first": [2, 0, 1],
    "the first change last": [1, 2, 0],
    "backwards": [2, 1, 0],
    "in order, then delivered again": [0, 1, 2, 0, 1, 2],
    "in order, then the earlier ones again": [0, 1, 2, 1, 0],
    "late, then delivered again backwards": [2, 0, 1, 2, 1, 0],
}


@pytest.mark.parametrize("order", LATE_ORDERS.values(), ids=LATE_ORDERS.keys())
def test_a_set_target_ends_with_the_sources_latest_score_in_any_order(
    order: list[int],
    service: Services,
    table_stream: TableStream,
) -> None:
    # Given a set source rolling up into a set target, and a member whose score goes
    # 10 -> 5 -> 10 (the last change gives back a score the target may already hold)
    source, targets = _boards(service, "set")
    service.members.put_member(source, "ana", member_request({"score": Decimal(10)}))
    service.members.submit_score(source, "ana", Decimal(5))
    service.members.submit_score(source, "ana", Decimal(10))
    changes = _changes(table_stream, source, "ana")
    assert len(changes) == 3

    # When the stream hands the records over in this order
    aggregator = Aggregator(service.db, service.boards.settings, service.clock)
    for index in order:
        aggregator.apply(changes[index])

    # Then the target holds the source's score, which the change made last gave it
    assert service.members.get_member(targets["set"], "ana").score == (
        service.members.get_member(source, "ana").score
    )


def test_a_late_record_applies_once_to_increment_and_best_and_not_over_a_later_one_to_set(
    service: Services,
    table_stream: TableStream,
) -> None:
    # Given a set source rolling up into a target of each operator, and a member whose
    # score goes up and down
    source, targets = _boards(service, "set", "increment", "best")
    held = [Decimal(40), Decimal("12.5"), Decimal(70), Decimal(3)]
    service.members.put_member(source, "bo", member_request({"score": held[0]}))
    for score in held[1:]:
        service.members.submit_score(source, "bo", score)
    changes = _changes(table_stream, source, "bo")
    assert len(changes) == len(held)

    # When every record but the second is applied, the batch is delivered again, and the
    # second record comes last, twice (a redrive of it from two copies of its message)
    aggregator = Aggregator(service.db, service.boards.settings, service.clock)
    rest = [changes[0], *changes[2:]]
    for record in [*rest, *rest, changes[1], changes[1]]:
        aggregator.apply(record)

    # Then the increment target added every change once: it holds their sum from 0, the
    # source's score; the best target the best score held; the set target the last one
    def score_on(board: str) -> Decimal:
        found = service.members.get_member(board, "bo").score
        assert found is not None
        return found

    deltas = [new - old for old, new in zip([Decimal(0), *held], held, strict=False)]
    assert score_on(targets["increment"]) == sum(deltas, Decimal(0)) == score_on(source)
    assert score_on(targets["best"]) == max(held)
    assert score_on(targets["set"]) == held[-1] == score_on(source)


def test_a_set_target_fed_by_two_sources_holds_the_change_made_last(
    service: Services,
    table_stream: TableStream,
) -> None:
    # Given xbox and pc rolling up into one set target, and a player who levels up on
    # xbox, then on pc, then on xbox, then on pc
    suffix = unique_id("two")
    target, xbox, pc = f"all-{suffix}", f"xbox-{suffix}", f"pc-{suffix}"
    service.boards.put_board(target, board_request({"operator": "set"}))
    for source in (xbox, pc):
        service.boards.put_board(
            source, board_request({"operator": "set", "rollupTo": [target]}, own_id=source)
        )
    service.members.put_member(xbox, "cy", member_request({"score": Decimal(3)}))
    service.members.put_member(pc, "cy", member_request({"score": Decimal(9)}))
    service.members.submit_score(xbox, "cy", Decimal(4))
    service.members.submit_score(pc, "cy", Decimal(2))
    from_xbox = _changes(table_stream, xbox, "cy")
    from_pc = _changes(table_stream, pc, "cy")

    # When pc's records are applied first and xbox's come late, each twice
    aggregator = Aggregator(service.db, service.boards.settings, service.clock)
    for record in from_pc + from_xbox + from_pc + from_xbox:
        aggregator.apply(record)

    # Then the target holds the score of the source that changed last, by the sources' own
    # items (a model apart from the rollup: whose reachedAt is latest)
    states = {board: service.db.members.get_score(board, "cy", "all") for board in (xbox, pc)}
    latest = max((s for s in states.values() if s is not None), key=lambda s: s.reached_at_us)
    assert latest.score == Decimal(2)  # pc's, the last write above
    assert service.members.get_member(target, "cy").score == latest.score


def test_a_member_deleted_and_added_again_at_the_source_is_later_than_its_first_life(
    service: Services,
    table_stream: TableStream,
) -> None:
    # Given a member that scores twice at a set source, is deleted, and is added again
    # (its score item starts again at version 1; its times go on)
    source, targets = _boards(service, "set")
    service.members.put_member(source, "dee", member_request({"score": Decimal(10)}))
    service.members.submit_score(source, "dee", Decimal(30))
    service.members.delete_member(source, "dee")
    service.members.put_member(source, "dee", member_request({"score": Decimal(5)}))
    changes = _changes(table_stream, source, "dee")
    first_life, second_life = [c for c in changes if c["eventName"] != "REMOVE"][:2], changes[-1]
    assert second_life["eventName"] == "INSERT"
    assert second_life["dynamodb"]["NewImage"]["v"]["N"] == "1"

    # When the new life's record is applied first and the first life's come late
    aggregator = Aggregator(service.db, service.boards.settings, service.clock)
    for record in [second_life, *first_life, *changes]:
        aggregator.apply(record)

    # Then the target holds the score of the member as it is now
    assert service.members.get_member(targets["set"], "dee").score == Decimal(5)
    assert service.members.get_member(source, "dee").score == Decimal(5)


def test_a_set_target_remembers_what_it_took_across_its_own_writes(
    service: Services,
    table_stream: TableStream,
) -> None:
    # Given a set target that took a source member's second change, then was written
    # directly (a submission to the target board itself)
    source, targets = _boards(service, "set")
    target = targets["set"]
    service.members.put_member(source, "eve", member_request({"score": Decimal(1)}))
    service.members.submit_score(source, "eve", Decimal(2))
    changes = _changes(table_stream, source, "eve")
    aggregator = Aggregator(service.db, service.boards.settings, service.clock)
    aggregator.apply(changes[1])
    service.members.submit_score(target, "eve", Decimal(50))

    # When the source's first change comes late
    aggregator.apply(changes[0])

    # Then it is still older than what the target took: the target keeps its score
    assert service.members.get_member(target, "eve").score == Decimal(50)

    # And a later source change is taken
    service.members.submit_score(source, "eve", Decimal(7))
    for record in _changes(table_stream, source, "eve"):
        aggregator.apply(record)
    assert service.members.get_member(target, "eve").score == Decimal(7)


def test_a_source_writer_whose_clock_is_behind_still_rolls_its_later_change_up(
    service: Services,
    table_stream: TableStream,
) -> None:
    # Given a set source whose second write is made by a writer whose clock is a second
    # behind the first one's
    source, targets = _boards(service, "set")
    service.members.put_member(source, "fay", member_request({"score": Decimal(8)}))
    assert isinstance(service.clock, TickingClock)
    service.clock.moment -= timedelta(seconds=1)
    service.members.submit_score(source, "fay", Decimal(6))

    # When the records are applied in order
    aggregator = Aggregator(service.db, service.boards.settings, service.clock)
    for record in _changes(table_stream, source, "fay"):
        aggregator.apply(record)

    # Then the target took the later change: a score's time follows the one it replaced
    assert service.members.get_member(targets["set"], "fay").score == Decimal(6)


# -- the target's own policy ---------------------------------------------------------------


def _apply_all(service: Services, stream: TableStream, boards: list[str]) -> None:
    aggregator = Aggregator(service.db, service.boards.settings, service.clock)
    for record in _records(stream, boards):
        aggregator.apply(record)


def test_a_member_deleted_from_a_target_is_not_brought_back_by_its_sources(
    service: Services,
    table_stream: TableStream,
) -> None:
    # Given a member rolled up into a target, then deleted there (a cheater removed from
    # the global board)
    suffix = unique_id("gone")
    target, source = f"all-{suffix}", f"xbox-{suffix}"
    service.boards.put_board(target, board_request({}))
    service.boards.put_board(source, board_request({"rollupTo": [target]}, own_id=source))
    service.members.put_member(source, "cheat", member_request({"score": Decimal(10)}))
    _apply_all(service, table_stream, [source])
    assert service.members.get_member(target, "cheat").score == Decimal(10)
    service.members.delete_member(target, "cheat")

    # When it scores again on the source, and the stream delivers everything again
    service.members.submit_score(source, "cheat", Decimal(5))
    _apply_all(service, table_stream, [source])

    # Then the target does not have it back
    with pytest.raises(NotFound):
        service.members.get_member(target, "cheat")
    assert [e.member_id for e in service.reads.top(target, 10, None, False, consistent=True).entries] == []

    # And once an admin adds it to the target again, its later changes roll up again
    seen = {r["eventID"] for r in _records(table_stream, [source])}
    service.members.put_member(target, "cheat", member_request({}))
    service.members.submit_score(source, "cheat", Decimal(1))
    aggregator = Aggregator(service.db, service.boards.settings, service.clock)
    for record in _records(table_stream, [source]):
        if record["eventID"] not in seen:
            aggregator.apply(record)
    assert service.members.get_member(target, "cheat").score == Decimal(1)


def test_a_targets_value_limits_apply_to_what_is_rolled_up(
    service: Services,
    table_stream: TableStream,
) -> None:
    # Given a source without limits rolling up into an increment target that takes changes
    # of at most 50 and a best target that takes scores of at most 1,000
    suffix = unique_id("lim")
    total, best, source = f"all-{suffix}", f"best-{suffix}", f"src-{suffix}"
    service.boards.put_board(total, board_request({"limits": {"maxValue": Decimal(50)}}))
    service.boards.put_board(best, board_request({"operator": "best", "limits": {"maxValue": Decimal(1000)}}))
    service.boards.put_board(source, board_request({"rollupTo": [total, best]}, own_id=source))

    # When the source member gains 30, then 2,000 at once, then 5
    service.members.put_member(source, "ann", member_request({"score": Decimal(30)}))
    service.members.submit_score(source, "ann", Decimal(2000))
    service.members.submit_score(source, "ann", Decimal(5))
    _apply_all(service, table_stream, [source])

    # Then each target took only the changes its limits allow: the increment target the
    # gains of 30 and 5, the best target the score of 30 (2,030 and 2,035 are past 1,000)
    assert service.members.get_member(total, "ann").score == Decimal(35)
    assert service.members.get_member(best, "ann").score == Decimal(30)
    assert service.members.get_member(source, "ann").score == Decimal(2035)
