"""Hot counters under load through a local stack of their own (its own DynamoDB Local; its
stream's batches delivered once, as Lambda delivers them: a redelivered or regrouped batch
is the property test's of tests/integration/test_event_log.py; the module runs alone, as
``make test`` runs the tests marked ``alone``, since what it times depends on the machine's
two cores): 10,000 events posted by 8 clients are folded within 5 s of
the last one accepted, each distinct event exactly once, and fresh reads made meanwhile
answer (never 409) with the score as of their moment, against a model of what was sent and
accepted (the API contract, "Ranking rules" and "Hot counters")."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

import pytest

from podium_client import Event, PodiumClient
from tests.helpers import unique_id
from tests.messaging import LocalStack

if TYPE_CHECKING:
    from tests.conftest import StackLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.alone]

EVENTS = 10_000
CLIENTS = 8
MEMBERS = [f"img-{n}.jpg" for n in range(4)]
PER_REQUEST = 100
RESENT = 0.05  # the share of requests sent again, ids and all: counted once
FOLD_SECONDS = 5.0


@pytest.fixture(scope="module")
def local(launch_stack: StackLauncher, own_dynamodb: str) -> Iterator[LocalStack]:
    with launch_stack(name="event-fold", dynamodb=own_dynamodb, deliver_twice=False) as stack:
        yield stack


@dataclass
class Model:
    """What was sent and what was accepted, as (member, eventId) pairs each counting one."""

    sent: dict[str, set[str]] = field(default_factory=lambda: {m: set() for m in MEMBERS})
    accepted: dict[str, set[str]] = field(default_factory=lambda: {m: set() for m in MEMBERS})
    last_accepted: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def sending(self, events: list[Event]) -> None:
        with self.lock:
            for event in events:
                assert event.event_id is not None
                self.sent[event.member_id].add(event.event_id)

    def answered(self, events: list[Event]) -> None:
        with self.lock:
            for event in events:
                assert event.event_id is not None
                self.accepted[event.member_id].add(event.event_id)
            self.last_accepted = time.monotonic()

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        with self.lock:
            return (
                {m: len(ids) for m, ids in self.accepted.items()},
                {m: len(ids) for m, ids in self.sent.items()},
            )


def _requests(seed: int) -> list[list[Event]]:
    """10,000 events of value 1 over the members, 100 a request; an event's id is shared by
    the same position on every member (the same id on another member's event is another
    event); some requests are sent twice."""
    draw = random.Random(seed)
    events = [Event(MEMBERS[n % len(MEMBERS)], 1, f"v-{n // len(MEMBERS)}") for n in range(EVENTS)]
    draw.shuffle(events)
    requests = [events[i : i + PER_REQUEST] for i in range(0, EVENTS, PER_REQUEST)]
    requests += draw.sample(requests, int(len(requests) * RESENT))
    draw.shuffle(requests)
    return requests


def test_10000_events_from_8_clients_fold_within_5_s_and_fresh_reads_answer_meanwhile(
    local: LocalStack,
) -> None:
    # Given an increment board with a few members, and 10,000 events for them
    board = unique_id("hot")
    with PodiumClient(local.url, timeout=60.0) as admin:
        admin.create_board(board)
        for member in MEMBERS:
            admin.put_member(board, member)
    requests = _requests(seed=25)
    model = Model()
    reads: list[tuple[str, int, int, Decimal, int]] = []  # member, least, most, score, pending
    posting = threading.Event()

    def post(clients: list[PodiumClient], index: int, events: list[Event]) -> None:
        model.sending(events)
        assert clients[index % CLIENTS].log_events(board, events) == len(events)
        model.answered(events)

    failures: list[BaseException] = []

    def read_fresh(client: PodiumClient) -> None:
        draw = random.Random(7)
        try:
            while posting.is_set():
                member = draw.choice(MEMBERS)
                least = model.counts()[0][member]
                read = client.get_member(board, member, fresh=True)  # a 409 raises
                most = model.counts()[1][member]
                reads.append((member, least, most, read.score or Decimal(0), read.pending_events or 0))
        except BaseException as error:  # the test fails on it, once the clients are done
            failures.append(error)

    # When 8 clients post them, 100 a request, while another reads the members fresh
    clients = [PodiumClient(local.url, timeout=60.0) for _ in range(CLIENTS + 1)]
    try:
        posting.set()
        began = time.monotonic()
        reader = threading.Thread(target=read_fresh, args=(clients[CLIENTS],))
        reader.start()
        try:
            with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
                list(pool.map(lambda item: post(clients, *item), enumerate(requests)))
        finally:
            posting.clear()
            reader.join()
        last = model.last_accepted

        # Then every member's folded score is exact within 5 s of the last accepted post
        expected = {member: len(ids) for member, ids in model.accepted.items()}
        assert sum(expected.values()) == EVENTS
        while True:
            asked = time.monotonic()
            scores = {m: clients[0].get_member(board, m).score for m in MEMBERS}
            if scores == expected:
                break
            assert asked - last <= FOLD_SECONDS, (scores, expected)
            time.sleep(0.1)
        folded_after = asked - last  # the scores were exact when asked (or later)
        assert folded_after <= FOLD_SECONDS
        for member in MEMBERS:
            fresh = clients[0].get_member(board, member, fresh=True)
            assert (fresh.score, fresh.pending_events) == (Decimal(expected[member]), 0)
    finally:
        for client in clients:
            client.close()

    # And every fresh read made meanwhile answered (200) with the score as of its moment: at
    # least every event accepted before it began, at most every event sent before it ended
    assert not failures, failures
    assert reads, "the reader read while the clients posted"
    for member, least, most, score, pending in reads:
        assert least <= score <= most, (member, least, most, score)
        assert 0 <= pending <= score
    print(
        f"{len(requests)} posts in {last - began:.1f} s; every score exact {folded_after:.2f} s after the "
        f"last accepted one; {len(reads)} fresh reads meanwhile"
    )
