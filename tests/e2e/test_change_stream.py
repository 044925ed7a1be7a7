"""The change stream end to end: rivals and notifications, rollups, poison records.

The local stack delivers every stream batch twice (``--deliver-twice``, as Lambda may
after a retry), so every count below would be off if any effect were applied twice.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from functools import partial
from typing import Any

import pytest
import requests

from podium import numbers
from tests.helpers import decimal_json, eventually, unique_id
from tests.messaging import QueueReader, TopicTap

pytestmark = pytest.mark.e2e

TIMEOUT = 30


def _put(url: str, body: Any) -> Any:
    response = requests.put(url, data=numbers.dumps(body), timeout=TIMEOUT)
    assert response.status_code in (200, 201), response.text
    return decimal_json(response)


def _score(url: str, value: Any) -> Any:
    response = requests.post(url, data=f'{{"value": {value}}}', timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return decimal_json(response)


def _inbox(stack_url: str, board: str, member: str) -> list[dict[str, Any]]:
    response = requests.get(f"{stack_url}/boards/{board}/members/{member}/notifications", timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return list(decimal_json(response)["notifications"])


def test_rivals_are_kept_in_order_once_each(stack_url: str) -> None:
    board = unique_id("rivals")
    _put(f"{stack_url}/boards/{board}", {})
    _put(f"{stack_url}/boards/{board}/members/ana", {})

    answer = _put(f"{stack_url}/boards/{board}/members/ana/rivals", {"memberIds": ["zoe", "bo", "zoe"]})
    assert answer == {"memberIds": ["zoe", "bo"]}
    got = decimal_json(requests.get(f"{stack_url}/boards/{board}/members/ana/rivals", timeout=TIMEOUT))
    assert got == {"memberIds": ["zoe", "bo"]}

    # A member that does not exist has no rivals list (404); 101 rivals are refused
    missing = requests.put(
        f"{stack_url}/boards/{board}/members/nobody/rivals", json={"memberIds": []}, timeout=TIMEOUT
    )
    assert missing.status_code == 404
    too_many = requests.put(
        f"{stack_url}/boards/{board}/members/ana/rivals",
        json={"memberIds": [f"m{i}" for i in range(101)]},
        timeout=TIMEOUT,
    )
    assert too_many.status_code == 400
    assert "memberIds" in too_many.json()["message"]


def test_a_rival_passing_a_member_is_told_once_in_the_inbox_and_on_sns(
    stack_url: str, notification_tap: TopicTap
) -> None:
    # Given ana (50) follows bo (40), on a board that zed leads
    board = unique_id("overtaken")
    _put(f"{stack_url}/boards/{board}", {"shards": 4})
    for member, score in (("zed", 1000), ("ana", 50), ("bo", 40)):
        _put(f"{stack_url}/boards/{board}/members/{member}", {"score": score})
    _put(f"{stack_url}/boards/{board}/members/ana/rivals", {"memberIds": ["bo"]})

    # When bo passes ana
    _score(f"{stack_url}/boards/{board}/members/bo/score", 15)

    # Then exactly one overtaken appears in ana's inbox within seconds
    def told() -> list[dict[str, Any]]:
        inbox = _inbox(stack_url, board, "ana")
        assert len(inbox) >= 1
        return inbox

    inbox = eventually(told)
    assert [(n["type"], n["byMemberId"], n["score"], n["byScore"]) for n in inbox] == [
        ("overtaken", "bo", Decimal(50), Decimal(55))
    ]
    assert inbox[0]["boardId"] == board
    assert inbox[0]["memberId"] == "ana"
    # And one SNS message was published, with its message attributes
    [message] = notification_tap.wait_for(lambda m: m.attributes.get("boardId") == board)
    assert message.attributes == {"type": "overtaken", "boardId": board, "memberId": "ana"}
    assert message.body["id"] == inbox[0]["id"]
    notification_tap.receive(wait_seconds=2)
    assert len([m for m in notification_tap.received if m.attributes.get("boardId") == board]) == 1
    assert len(_inbox(stack_url, board, "ana")) == 1


def test_a_new_leader_and_the_previous_one_are_both_told(stack_url: str, notification_tap: TopicTap) -> None:
    # Given ana leads bo (the first leader of an empty board is not announced)
    board = unique_id("leader")
    _put(f"{stack_url}/boards/{board}", {"shards": 3})
    _put(f"{stack_url}/boards/{board}/members/ana", {"score": 10})
    _put(f"{stack_url}/boards/{board}/members/bo", {"score": 5})

    # When bo takes the lead
    _score(f"{stack_url}/boards/{board}/members/bo/score", 10)

    # Then both are told, each with its own score and the other's
    messages = notification_tap.wait_for(lambda m: m.attributes.get("boardId") == board, count=2)
    assert sorted(m.attributes["memberId"] for m in messages) == ["ana", "bo"]
    assert {m.attributes["type"] for m in messages} == {"newLeader"}
    bo = eventually(lambda: _one(_inbox(stack_url, board, "bo")))
    ana = eventually(lambda: _one(_inbox(stack_url, board, "ana")))
    assert (bo["type"], bo["byMemberId"], bo["score"], bo["byScore"]) == ("newLeader", "ana", 15, 10)
    assert (ana["type"], ana["byMemberId"], ana["score"], ana["byScore"]) == ("newLeader", "bo", 10, 15)


def _one(inbox: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(inbox) == 1, inbox
    return inbox[0]


def test_the_inbox_pages_newest_first(stack_url: str) -> None:
    # Given ana follows three rivals who pass her one after another
    board = unique_id("inbox")
    _put(f"{stack_url}/boards/{board}", {})
    _put(f"{stack_url}/boards/{board}/members/zed", {"score": 100})
    _put(f"{stack_url}/boards/{board}/members/ana", {"score": 10})
    rivals = ["r1", "r2", "r3"]
    for rival in rivals:
        _put(f"{stack_url}/boards/{board}/members/{rival}", {"score": 0})
    _put(f"{stack_url}/boards/{board}/members/ana/rivals", {"memberIds": rivals})
    for rival in rivals:
        _score(f"{stack_url}/boards/{board}/members/{rival}/score", 20)
        eventually(partial(_assert_told_by, stack_url, board, rival))

    # When the inbox is read two at a time
    first = decimal_json(
        requests.get(f"{stack_url}/boards/{board}/members/ana/notifications?limit=2", timeout=TIMEOUT)
    )
    second = decimal_json(
        requests.get(
            f"{stack_url}/boards/{board}/members/ana/notifications",
            params={"limit": 2, "cursor": first["nextCursor"]},
            timeout=TIMEOUT,
        )
    )

    # Then the newest comes first, and the pages neither skip nor repeat
    by = [n["byMemberId"] for n in first["notifications"] + second["notifications"]]
    assert by == ["r3", "r2", "r1"]
    assert second["nextCursor"] is None


def _assert_told_by(stack_url: str, board: str, rival: str) -> None:
    assert rival in {n["byMemberId"] for n in _inbox(stack_url, board, "ana")}


def _level_boards(stack_url: str) -> tuple[str, str, str, str]:
    suffix = unique_id("lvl")
    total, best = f"all_level1-{suffix}", f"best_level1-{suffix}"
    _put(f"{stack_url}/boards/{total}", {"shards": 4})
    _put(f"{stack_url}/boards/{best}", {"operator": "best"})
    xbox, pc = f"xbox_level1-{suffix}", f"pc_level1-{suffix}"
    for source in (xbox, pc):
        _put(f"{stack_url}/boards/{source}", {"rollupTo": [total, best], "shards": 3})
    return xbox, pc, total, best


def test_rollups_stay_equal_to_the_sources_under_concurrent_writes(stack_url: str) -> None:
    # Given xbox_level1 and pc_level1 rolling up into all_level1 (sum) and best_level1 (best)
    xbox, pc, total, best = _level_boards(stack_url)
    players = [f"player-{i}" for i in range(6)]
    for source in (xbox, pc):
        for player in players:
            _put(f"{stack_url}/boards/{source}/members/{player}", {"data": {"platform": source[:4]}})

    # When 16 clients submit scores to both sources at once
    writes = [
        (source, player, Decimal(step) + Decimal("0.25"))
        for step in range(1, 6)
        for source in (xbox, pc)
        for player in players
    ]
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda w: _score(f"{stack_url}/boards/{w[0]}/members/{w[1]}/score", w[2]), writes))

    # Then each target equals what the sources say, computed directly from them
    def source_scores(board: str) -> dict[str, Decimal]:
        scores = {}
        for player in players:
            response = requests.get(f"{stack_url}/boards/{board}/members/{player}", timeout=TIMEOUT)
            assert response.status_code == 200, response.text
            scores[player] = decimal_json(response)["score"]
        return scores

    on_xbox, on_pc = source_scores(xbox), source_scores(pc)

    def targets_agree() -> None:
        assert source_scores(total) == {p: on_xbox[p] + on_pc[p] for p in players}
        assert source_scores(best) == {p: max(on_xbox[p], on_pc[p]) for p in players}

    eventually(targets_agree, timeout=90, interval=0.5)
    # And the targets' own rankings (the index at once, the head once the stream has
    # carried the rolled-up scores to it) and counts follow
    expected = sorted((on_xbox[p] + on_pc[p] for p in players), reverse=True)

    def ranking_follows(query: str) -> None:
        top = decimal_json(requests.get(f"{stack_url}/boards/{total}/top?{query}", timeout=TIMEOUT))
        assert [e["score"] for e in top["entries"]] == expected

    ranking_follows("limit=10&consistent=true")
    eventually(lambda: ranking_follows("limit=10"))
    eventually(lambda: _assert_member_count(stack_url, total, len(players)))


def _assert_member_count(stack_url: str, board: str, expected: int) -> None:
    assert requests.get(f"{stack_url}/boards/{board}", timeout=TIMEOUT).json()["memberCount"] == expected


def test_a_poison_record_lands_in_the_failure_queue_and_the_rest_go_on(
    stack_url: str, stream_failure_queue: QueueReader
) -> None:
    # Given a target member whose rolled-up score would leave the bounds
    suffix = unique_id("poison")
    target, source = f"all-{suffix}", f"src-{suffix}"
    _put(f"{stack_url}/boards/{target}", {})
    _put(f"{stack_url}/boards/{source}", {"rollupTo": [target]})
    _put(f"{stack_url}/boards/{target}/members/huge", {"score": Decimal("9e29")})
    stream_failure_queue.receive()
    failures_before = len(stream_failure_queue.received)

    # When the source member's score would push it past 1e30, and another member follows
    _put(f"{stack_url}/boards/{source}/members/huge", {"score": Decimal("2e29")})
    _put(f"{stack_url}/boards/{source}/members/fine", {"score": 7})

    # Then the poison record ends in the on-failure queue after its retries
    messages = stream_failure_queue.wait_for(lambda m: True, count=failures_before + 1, timeout=60)
    info = messages[-1].body["DDBStreamBatchInfo"]
    assert info["batchSize"] >= 1
    assert info["startSequenceNumber"] <= info["endSequenceNumber"]
    # And the records after it were processed: the other member reached the target
    eventually(
        lambda: _assert_score(stack_url, target, "fine", Decimal(7)),
        timeout=30,
    )
    _assert_score(stack_url, target, "huge", Decimal("9e29"))


def _assert_score(stack_url: str, board: str, member: str, expected: Decimal) -> None:
    response = requests.get(f"{stack_url}/boards/{board}/members/{member}", timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    assert decimal_json(response)["score"] == expected


def test_rollup_settings_are_checked_at_creation(stack_url: str) -> None:
    board = unique_id("bad-rollup")
    for body, words in (
        ({"rollupTo": ["no-such-board"]}, "does not exist"),
        ({"rollupTo": [board]}, "itself"),
        ({"rollupTo": [f"b{i}" for i in range(6)]}, "at most 5"),
    ):
        response = requests.put(f"{stack_url}/boards/{board}", json=body, timeout=TIMEOUT)
        assert response.status_code == 400
        assert words in response.json()["message"]
    assert requests.get(f"{stack_url}/boards/{board}", timeout=TIMEOUT).status_code == 404
