"""The notifier's newLeader judgments on DynamoDB Local, fed the table's real stream records
late, out of order across members (as from different shards), after a crash, and delivered
again after later records of their batch moved the leader: each record is judged once, so
every inbox holds what one delivery gives (docs/streams.md, "newLeader: each record judged
once")."""

from __future__ import annotations

import time
from collections import Counter
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from podium.config import Settings
from podium.dal import Database
from podium.errors import NotFound
from podium.models import Notification
from podium.stream.notify import Notifier
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import stream_tail_from_now, unique_id
from tests.integration.test_notifier import RecordingPublisher

pytestmark = pytest.mark.integration

Record = dict[str, Any]
Told = tuple[str, str | None, Decimal, Decimal | None]  # type, by whom, the recipient's score, the other's


class Crash(Exception):
    """A fault injected by a test."""


class Tail:
    """The stream records of some boards written since it was made, each board's in
    stream order (the shared stream holds the whole session)."""

    def __init__(self, client: Any, endpoint: str, table: str) -> None:
        self.tail = stream_tail_from_now(client, endpoint, table)  # what came before is others'

    def read(self, *boards: str) -> dict[str, list[Record]]:
        records = self.tail.read()
        return {
            board: [r for r in records if r["dynamodb"]["Keys"]["pk"]["S"].startswith(f"M#{board}#")]
            for board in boards
        }


@pytest.fixture
def tail(local_tables: Settings, dynamodb_client: Any, dynamodb_endpoint: str) -> Tail:
    return Tail(dynamodb_client, dynamodb_endpoint, local_tables.table_name)


def _board(service: Services) -> str:
    board = unique_id("leader")
    service.boards.put_board(board, board_request({"shards": Decimal(3)}))
    return board


def _put(service: Services, board: str, member: str, score: int) -> None:
    service.members.put_member(board, member, member_request({"score": Decimal(score)}))


class Failed(Exception):
    """An invocation reported records it could not judge (the stream retries them)."""


def _deliver(notifier: Notifier, records: list[Record]) -> None:
    """One invocation of the notifier on ``records``, as its handler makes it: the batch's
    leader judgments together, then what each record tells."""
    notifier.begin()
    failed = notifier.check_leaders(records)
    if failed:
        raise Failed(f"{len(failed)} record(s) not judged")
    for record in records:
        notifier.tell(record)


def _of(records: list[Record], member: str) -> list[Record]:
    return [r for r in records if r["dynamodb"]["Keys"]["pk"]["S"].endswith(f"#{member}")]


def _inbox(store: Database, board: str, member: str) -> list[Notification]:
    """Everything in the member's inbox, newest first, read from the table (so that a
    deleted member's is seen too)."""
    found, _ = store.social.list_notifications(board, member, 100, None, int(time.time()))
    return found


def _told(store: Database, board: str, member: str) -> list[Told]:
    return [(n.type, n.by_member_id, n.score, n.by_score) for n in _inbox(store, board, member)]


def _told_to(store: Database, board: str, members: list[str]) -> dict[str, list[Told]]:
    return {m: _told(store, board, m) for m in members}


def test_a_batch_that_moved_the_leader_delivered_again_tells_nobody_again(
    service: Services, store: Database, tail: Tail
) -> None:
    # Given one batch: cheat's first score (the board's first leader, not announced), the
    # others' scores and follows, then cheat hidden (out of the rankings: ana leads)
    board = _board(service)
    for member, score in (("cheat", 500), ("ana", 100), ("bo", 90), ("cy", 80)):
        _put(service, board, member, score)
    service.social.put_rivals(board, "ana", ["cheat"])
    service.social.put_rivals(board, "bo", ["cheat", "cy"])
    service.members.put_member(board, "cheat", member_request({"hidden": True}))
    batch = tail.read(board)[board]
    publisher = RecordingPublisher()
    notifier = service.notifier(publisher)
    members = ["cheat", "ana", "bo", "cy"]

    # When the batch is delivered
    _deliver(notifier, batch)
    once = {m: _inbox(store, board, m) for m in members}

    # Then ana, who leads once cheat is hidden, is told; hidden cheat is told nothing
    assert _told_to(store, board, members) == {
        "cheat": [],
        "ana": [("newLeader", "cheat", Decimal(100), Decimal(500))],
        "bo": [],
        "cy": [],
    }

    # When the whole batch is delivered again (a lost checkpoint), and its second half once
    # more (a retry from a record that failed)
    _deliver(notifier, batch)
    _deliver(notifier, batch[len(batch) // 2 :])

    # Then every inbox holds what the one delivery gave, the same notifications, and each
    # was published once
    assert {m: _inbox(store, board, m) for m in members} == once
    assert [(n.type, n.member_id) for n in publisher.published] == [("newLeader", "ana")]
    # and the leader item still names ana
    leader = store.social.get_leader(board, "all")
    assert leader is not None
    assert (leader.member_id, leader.pending) == ("ana", [])


def test_a_late_record_is_judged_after_a_later_change_moved_the_leader(
    service: Services, store: Database, tail: Tail
) -> None:
    # Given ana leads bo, and the notifier has read it
    board = _board(service)
    _put(service, board, "ana", 100)
    _put(service, board, "bo", 10)
    notifier = service.notifier(RecordingPublisher())
    _deliver(notifier, tail.read(board)[board])

    # When cy takes the lead (300), then ana rises (150) but stays behind cy, and the
    # notifier reads ana's record first (another shard's, read earlier), cy's late
    _put(service, board, "cy", 300)
    _put(service, board, "ana", 150)
    batch = tail.read(board)[board]
    late, early = _of(batch, "cy"), _of(batch, "ana")
    _deliver(notifier, early)
    _deliver(notifier, late)

    # Then cy's lead is told, as it was written: to cy, and to ana with her score then
    expected = {
        "ana": [("newLeader", "cy", Decimal(100), Decimal(300))],
        "bo": [],
        "cy": [("newLeader", "ana", Decimal(300), Decimal(100))],
    }
    assert _told_to(store, board, ["ana", "bo", "cy"]) == expected

    # And both records delivered again, in either order, tell nothing more
    _deliver(notifier, late + early)
    _deliver(notifier, early + late)
    assert _told_to(store, board, ["ana", "bo", "cy"]) == expected


def test_a_lead_taken_and_lost_before_the_notifier_reads_it_is_still_told(
    service: Services, store: Database, tail: Tail
) -> None:
    # Given ana leads bo, and the notifier has read it
    board = _board(service)
    _put(service, board, "ana", 100)
    _put(service, board, "bo", 10)
    notifier = service.notifier(RecordingPublisher())
    _deliver(notifier, tail.read(board)[board])

    # When bo takes the lead (150) and loses it again (50) before the notifier reads either
    _put(service, board, "bo", 150)
    _put(service, board, "bo", 50)
    batch = tail.read(board)[board]
    _deliver(notifier, batch)

    # Then both changes of the lead are told, newest first in each inbox
    expected = {
        "ana": [
            ("newLeader", "bo", Decimal(100), Decimal(50)),
            ("newLeader", "bo", Decimal(100), Decimal(150)),
        ],
        "bo": [
            ("newLeader", "ana", Decimal(50), Decimal(100)),
            ("newLeader", "ana", Decimal(150), Decimal(100)),
        ],
    }
    assert _told_to(store, board, ["ana", "bo"]) == expected

    # And the batch delivered again, whole or from its second record, tells nothing more
    _deliver(notifier, batch)
    _deliver(notifier, batch[1:])
    assert _told_to(store, board, ["ana", "bo"]) == expected


class CrashingSocial:
    """The real social store, failing the first inbox put of a notification (after the
    leader item that holds it was written)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.crashed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def put_notification(self, notification: Notification, ttl_seconds: int) -> bool:
        if not self.crashed:
            self.crashed = True
            raise Crash(f"the notifier crashed before telling {notification.member_id}")
        return bool(self.real.put_notification(notification, ttl_seconds))


def test_a_crash_between_the_leader_change_and_its_delivery_loses_nothing(
    service: Services, store: Database, tail: Tail
) -> None:
    # Given ana leads bo, and the notifier has read it
    board = _board(service)
    _put(service, board, "ana", 100)
    _put(service, board, "bo", 10)
    publisher = RecordingPublisher()
    notifier = service.notifier(publisher)
    _deliver(notifier, tail.read(board)[board])

    # When bo takes the lead and then cy passes bo, and the notifier crashes right after it
    # recorded bo's lead, before telling anyone
    _put(service, board, "bo", 150)
    _put(service, board, "cy", 200)
    batch = tail.read(board)[board]
    crashing = Notifier(
        CrashingSocial(store.social), store.members, store.index, publisher, service.boards.settings
    )
    with pytest.raises(Failed):  # it logs the crash and fails the batch's records
        _deliver(crashing, batch)
    leader = store.social.get_leader(board, "all")
    assert leader is not None
    assert (leader.member_id, len(leader.pending)) == ("bo", 2)

    # When the stream retries the batch (twice: its first retry's checkpoint is lost too)
    _deliver(notifier, batch)
    _deliver(notifier, batch)

    # Then both changes of the lead were told, each notification once, and published once
    assert _told_to(store, board, ["ana", "bo", "cy"]) == {
        "ana": [("newLeader", "bo", Decimal(100), Decimal(150))],
        "bo": [
            ("newLeader", "cy", Decimal(150), Decimal(200)),
            ("newLeader", "ana", Decimal(150), Decimal(100)),
        ],
        "cy": [("newLeader", "bo", Decimal(200), Decimal(150))],
    }
    published = Counter((n.type, n.member_id, n.by_member_id) for n in publisher.published)
    assert published == Counter(
        [
            ("newLeader", "bo", "ana"),
            ("newLeader", "ana", "bo"),
            ("newLeader", "cy", "bo"),
            ("newLeader", "bo", "cy"),
        ]
    )


# -- a property: any redelivery gives what one delivery gives ------------------------------

MEMBERS = ["ana", "bo", "cy"]
SCORES = [Decimal(v) for v in ("10", "50.0", "90", "150", "200")]
operation = st.tuples(
    st.sampled_from(MEMBERS),
    st.sampled_from(["score", "score", "score", "hide", "show", "delete"]),
    st.sampled_from(SCORES),
)


def _apply(service: Services, board: str, member: str, kind: str, score: Decimal) -> None:
    try:
        if kind == "score":
            service.members.put_member(board, member, member_request({"score": score}))
        elif kind == "delete":
            service.members.delete_member(board, member)
        else:  # hide or show (a member not there yet is added, hidden or not)
            service.members.put_member(board, member, member_request({"hidden": kind == "hide"}))
    except NotFound:
        pass  # deleted already: the same on both boards


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    batches=st.lists(st.lists(operation, min_size=1, max_size=5), min_size=1, max_size=4),
    data=st.data(),
)
def test_any_suffix_of_a_batch_delivered_again_gives_what_one_delivery_gives(
    service: Services,
    store: Database,
    tail: Tail,
    batches: list[list[tuple[str, str, Decimal]]],
    data: st.DataObject,
) -> None:
    # Given two boards, each with ana leading bo, that take the same writes in the same
    # batches: the first's batches are delivered once, the second's each followed by a
    # random suffix of it and of the batch before (read late, after the writes since; maybe none)
    once, again = _board(service), _board(service)
    for board in (once, again):
        _put(service, board, "ana", 100)
        _put(service, board, "bo", 50)
    first = tail.read(once, again)
    publishers = {once: RecordingPublisher(), again: RecordingPublisher()}
    notifiers = {board: service.notifier(publishers[board]) for board in (once, again)}
    for board in (once, again):
        _deliver(notifiers[board], first[board])
    previous: list[Record] = []

    # When the writes are made and their records delivered
    for batch in batches:
        for member, kind, score in batch:
            for board in (once, again):
                _apply(service, board, member, kind, score)
        records = tail.read(once, again)
        _deliver(notifiers[once], records[once])
        _deliver(notifiers[again], records[again])
        suffix = data.draw(st.integers(0, len(records[again])), label="suffix")
        _deliver(notifiers[again], records[again][suffix:])
        late = data.draw(st.integers(0, len(previous)), label="the batch before, from")
        _deliver(notifiers[again], previous[late:])
        previous = records[again]

    # Then both boards told every member the same, and published the same, once each. (An
    # inbox lists by the change's time, then by id: a write that leaves a member's score as
    # it was keeps the time its score was reached, so two notifications of one inbox may
    # share a time, and then their ids, which differ between the boards, order them.)
    def inboxes(board: str) -> dict[str, list[Told]]:
        return {member: sorted(told, key=repr) for member, told in _told_to(store, board, MEMBERS).items()}

    assert inboxes(again) == inboxes(once)
    sent = {
        board: Counter((n.type, n.member_id, n.by_member_id, n.score, n.by_score) for n in p.published)
        for board, p in publishers.items()
    }
    assert sent[again] == sent[once]
    # and both boards' leader items name the same leader
    leaders = [store.social.get_leader(board, "all") for board in (once, again)]
    assert len({leader.member_id if leader else None for leader in leaders}) == 1
