"""Re-sharding a board live, over HTTP on a local stack of its own (its schedules, the
re-shard worker's among them, run every 2 seconds): a 5,000-member board moved from 3 to 17
shards while 16 clients write and read it through the API, every read checked against a
model of the writes (``tests.reshard_model``) and the consistency checker run at the end;
a shrink; and what the route refuses.

The big board has 5,000 members, not the 20,000 it had: the claim is that a board moves live
under 16 clients with every read exact, which takes a move long enough that the clients'
reads and writes overlap it (the test counts them: ``MOVE_OVERLAP``), not a size. At
20,000 the test took 5 to 6 minutes alone, most of it the move, the clean-up and the final
listing and check of 20,000 members; ``make bench-reshard`` measures a move at any size."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

import boto3
import pytest
import requests

from bench.load import batch_write, profile_item
from devstack import template as template_module
from devstack.stack import create_tables
from podium import keys
from podium.config import Settings
from podium.dal import Database
from podium.dal.codecs import score_attributes
from podium.dal.schema import board_key, score_key
from podium.models import BoardSettings, ScoreState
from podium.periods import ALL_TIME
from podium.validation import board_request
from podium.wiring import Services
from podium_client import Conflict, Entry, PodiumClient
from tests.helpers import eventually, unique_id, verify_board
from tests.messaging import LocalStack
from tests.reshard_model import BoardModel, Key, Snapshot, check_listing, check_rank, key_of, untouched_keys

pytestmark = pytest.mark.e2e

WRITERS = 8
READERS = 8  # 16 clients at once
TIMEOUT = 60.0
# Each client waits this long (uniformly drawn) between two requests, as a game's clients
# do: flat out, 16 clients kept DynamoDB Local saturated (about 17 requests a second, each
# waiting a second), which slowed the move and every test running beside this one.
THINK_SECONDS = (0.3, 0.9)


BIG = "reshard-5k"  # the 5,000-member board, loaded before its stack starts
BIG_MEMBERS = 5_000
# At least this many reads, and as many acknowledged writes, begin and end while the board
# moves (between the re-shard's request and the switch): a move too short for the clients'
# traffic to overlap it would prove nothing about reads and writes during one.
MOVE_OVERLAP = 50


@pytest.fixture(scope="module")
def big_board() -> dict[str, Decimal]:
    """The 5,000 members of the big board and their scores."""
    draw = random.Random(14)
    return {f"m{n:05d}": Decimal(draw.randrange(0, 10**7)).scaleb(-2) for n in range(BIG_MEMBERS)}


@pytest.fixture(scope="module")
def reshard_stack(
    launch_stack: Callable[..., Any], own_dynamodb: str, big_board: dict[str, Decimal]
) -> Iterator[LocalStack]:
    """A stack of its own (its schedules, the re-shard worker's among them, run every 2
    seconds) on tables loaded before it starts with the big board, as a bulk import does
    (``load_big_board``), so that its stream consumers have no 10,000 records to chew."""
    prefix = f"e2e{uuid.uuid4().hex[:8]}-"
    load_big_board(own_dynamodb, prefix, big_board)
    with launch_stack(
        "--schedule-seconds", "2", "--table-prefix", prefix, name="reshard", dynamodb=own_dynamodb
    ) as local:
        yield replace(local, table_prefix=prefix)


@pytest.fixture(scope="module")
def stack_url(reshard_stack: LocalStack) -> str:
    return reshard_stack.url


def table_settings(stack: LocalStack) -> Settings:
    return template_module.read(stack.table_prefix).settings()


def load_big_board(endpoint: str, prefix: str, scores: dict[str, Decimal]) -> None:
    """A bulk import of a 3-shard board: the tables made, their stream turned off, the
    board created and its members' profile and score items written as the service writes
    them, its ``memberCount`` set and its head and count tree built from the index
    (``Maintenance.rebuild_rank_structures``); then the stream turned on again (a new, empty one, which the
    stack's consumers read from when it starts)."""
    client = boto3.client("dynamodb", endpoint_url=endpoint)
    spec = template_module.read(prefix)
    create_tables(client, spec)
    table = spec.table_names["LeaderboardTable"]
    stream(client, table, enabled=False)
    services = Services(Database.connect(spec.settings(), client=client))
    services.boards.put_board(BIG, board_request({"operator": "set", "shards": 3}))
    settings = BoardSettings(operator="set", shards=3)
    items: list[dict[str, Any]] = []
    for member, score in scores.items():
        state = ScoreState(score, 1, 1_700_000_000_000_000)
        where = keys.placement(BIG, settings, member, state, ALL_TIME)
        attributes = score_attributes(state, where.partition, where.sort_key, where.expires)
        items += [profile_item(BIG, member), {**score_key(BIG, member, ALL_TIME), **attributes}]
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(
            pool.map(
                lambda start: batch_write(client, table, items[start : start + 25]), range(0, len(items), 25)
            )
        )
    client.update_item(
        TableName=spec.settings().state_table,
        Key=board_key(BIG),
        UpdateExpression="SET memberCount = :n",
        ExpressionAttributeValues={":n": {"N": str(len(scores))}},
    )
    services.maintenance.rebuild_rank_structures(BIG)
    stream(client, table, enabled=True)


def stream(client: Any, table: str, *, enabled: bool) -> None:
    specification: dict[str, Any] = {"StreamEnabled": enabled}
    if enabled:
        specification["StreamViewType"] = "NEW_AND_OLD_IMAGES"
    client.update_table(TableName=table, StreamSpecification=specification)


def settled_count(podium: PodiumClient, board: str, count: int, timeout: float = 900.0) -> None:
    def counted() -> None:
        assert podium.get_board(board).member_count == count

    eventually(counted, timeout=timeout, interval=1.0)


@dataclass
class Observation:
    """One read: what was asked, the model's clock before and after, and the answer."""

    kind: str
    start: int
    end: int
    answer: Any
    after: Key | None = None
    complete: bool = False
    asked: Any = None
    phase: str = ""


class Traffic:
    """Writers and readers at once, until stopped; every write and read recorded."""

    def __init__(
        self, url: str, board: str, model: BoardModel, owned: list[list[str]], cursors: list[Any]
    ) -> None:
        self.url, self.board, self.model, self.owned = url, board, model, owned
        self.cursors = cursors  # (cursor, the key it continues after)
        self.observations: list[Observation] = []
        self.stop = threading.Event()
        self.phase = "before"
        self.errors: list[BaseException] = []
        self.members = sorted(model.initial)

    def run(self) -> ThreadPoolExecutor:
        pool = ThreadPoolExecutor(max_workers=WRITERS + READERS)
        for number in range(WRITERS):
            pool.submit(self._guard, self._write, number)
        for number in range(READERS):
            pool.submit(self._guard, self._read, number)
        return pool

    def _guard(self, loop: Callable[[int], None], number: int) -> None:
        try:
            loop(number)
        except BaseException as error:  # reported by the test, not lost in a thread
            self.errors.append(error)
            raise

    def _write(self, number: int) -> None:
        draw = random.Random(number)
        with PodiumClient(self.url, timeout=TIMEOUT) as client:
            while not self.stop.is_set():
                member = draw.choice(self.owned[number])
                value = Decimal(draw.randrange(0, 10**7)).scaleb(-2)
                write = self.model.begin(member, value)
                if member in self.model.initial or len(self.model.writes[member]) > 1:
                    answer = client.submit_score(self.board, member, value)
                    assert answer.score == value
                else:
                    client.put_member(self.board, member, score=value)  # a new member
                self.model.acknowledge(write)
                self.stop.wait(draw.uniform(*THINK_SECONDS))

    def _read(self, number: int) -> None:
        draw = random.Random(100 + number)
        with PodiumClient(self.url, timeout=TIMEOUT) as client:
            while not self.stop.wait(draw.uniform(*THINK_SECONDS)):
                choice = draw.random()
                start = self.model.now()
                if choice < 0.35:
                    self._top(client, draw, start)
                    continue
                member = draw.choice(self.members)
                if choice < 0.6:
                    answer: Any = client.rank(self.board, member, consistent=True)
                    self._record("rank", start, answer, asked=member)
                elif choice < 0.8:
                    self._record("around", start, client.around(self.board, member, radius=5), asked=member)
                else:
                    asked = draw.sample(self.members, 10)
                    self._record("ranks", start, client.ranks(self.board, asked), asked=asked)

    def _top(self, client: PodiumClient, draw: random.Random, start: int) -> None:
        limit = draw.choice([10, 50, 100])
        cursor, after = draw.choice(self.cursors) if self.cursors and draw.random() < 0.6 else (None, None)
        page = client.top(self.board, limit=limit, cursor=cursor, consistent=True)
        self._record("top", start, page.entries, after=after, complete=page.next_cursor is None, asked=limit)
        if page.next_cursor is not None and page.entries and draw.random() < 0.2:
            last = page.entries[-1]
            self.cursors.append((page.next_cursor, key_of(last.member_id, last.score)))

    def _record(self, kind: str, start: int, answer: Any, **rest: Any) -> None:
        observation = Observation(kind, start, self.model.now(), answer, phase=self.phase, **rest)
        self.observations.append(observation)


def check(model: BoardModel, observation: Observation, untouched: list[Key]) -> None:
    snapshot = Snapshot(model, observation.start, observation.end, untouched)
    where = f"{observation.phase} {observation.kind} {observation.asked}"
    answer = observation.answer
    if observation.kind == "top":
        check_listing(snapshot, answer, observation.after, observation.complete, where)
        ranks = [entry.rank for entry in answer]
        assert ranks == sorted(ranks), f"{where}: ranks out of order"
    elif observation.kind == "rank":
        assert answer.score in snapshot.allowed(answer.member_id), f"{where}: score {answer.score}"
        check_rank(snapshot, answer.score, answer.rank, where)
    elif observation.kind == "around":
        check_listing(snapshot, answer.entries, None, False, where, window=True)
        assert observation.asked in {e.member_id for e in answer.entries}, f"{where}: the member is missing"
    else:
        shown: tuple[Entry, ...] = answer
        assert {e.member_id for e in shown} == set(observation.asked), f"{where}: members"
        for entry in shown:
            assert entry.score in snapshot.allowed(entry.member_id), f"{where}: {entry}"


def whole_listing(podium: PodiumClient, board: str) -> list[tuple[str, Decimal]]:
    return [(e.member_id, e.score) for e in podium.iter_top(board, page_size=1000, consistent=True)]


def expected_listing(scores: dict[str, Decimal]) -> list[tuple[str, Decimal]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def wait_for_the_move(
    podium: PodiumClient, stack: LocalStack, board: str, to_shards: int, stalled: float = 180.0
) -> list[int]:
    """Poll the board until its move is over; the progress (``copied``) it showed. Fails,
    with the errors the stack logged, when the move shows no progress for ``stalled`` s."""
    progress: list[int] = []
    moved = time.monotonic()
    while True:
        shown = podium.get_board(board)
        if shown.reshard is None:
            assert shown.shards == to_shards
            return progress
        assert shown.reshard.to_shards == to_shards
        if not progress or shown.reshard.copied != progress[-1]:
            moved = time.monotonic()
        progress.append(shown.reshard.copied)
        if time.monotonic() - moved > stalled:
            raise AssertionError(
                f"the re-shard of {board} made no progress in {stalled} s (copied {progress[-1]});"
                f" the stack logged:\n{stack.errors_logged()}"
            )
        time.sleep(1.0)


def test_a_5000_member_board_moves_from_3_to_17_shards_under_16_clients_with_every_read_exact(
    reshard_stack: LocalStack, own_dynamodb: str, podium: PodiumClient, big_board: dict[str, Decimal]
) -> None:
    # Given a 5,000-member "set" board on 3 shards, loaded in bulk
    board, initial = BIG, big_board
    assert podium.get_board(board).member_count == len(initial)
    draw = random.Random(14)
    model = BoardModel(initial)
    assert whole_listing(podium, board) == expected_listing(initial)
    # 8 writers, each owning 150 members (some new), and 8 readers; cursors handed out before
    touched = draw.sample(sorted(initial), 1_100) + [f"new{n:03d}" for n in range(100)]
    owned = [touched[n::WRITERS] for n in range(WRITERS)]
    cursors: list[Any] = []
    for page_number, page in enumerate(_pages(podium, board, 1000)):
        if page.next_cursor is not None and page_number % 2 == 0:
            last = page.entries[-1]
            cursors.append((page.next_cursor, key_of(last.member_id, last.score)))
    traffic = Traffic(reshard_stack.url, board, model, owned, cursors)
    pool = traffic.run()
    try:
        time.sleep(5)

        # When it is re-sharded to 17 while they run
        traffic.phase = "during"
        move_began = model.now()
        started = podium.reshard(board, 17)
        assert started.shards == 3
        assert started.reshard is not None
        assert (started.reshard.to_shards, started.reshard.copied) == (17, 0)
        with pytest.raises(Conflict):
            podium.reshard(board, 9)  # a second one while it runs
        progress = wait_for_the_move(podium, reshard_stack, board, 17)
        move_ended = model.now()
        traffic.phase = "after"
        # past the switch's wait (8 s on the local stack) into the clean-up, reads and writes on
        time.sleep(15)
    finally:
        traffic.stop.set()
        pool.shutdown(wait=True)
    assert not traffic.errors, traffic.errors[:3]
    wait_for_the_clean_up(reshard_stack, own_dynamodb, board, 3)

    # Then every read, before, during and after, was one the model allows
    phases = {o.phase for o in traffic.observations}
    assert phases == {"before", "during", "after"}
    # (and the move was long enough that the clients' traffic really ran through it)
    assert_traffic_overlapped(model, traffic, move_began, move_ended)
    untouched = untouched_keys(model, model.writes)
    for observation in traffic.observations:
        check(model, observation, untouched)
    # And the move showed its progress, and ended on 17 shards with no write lost or doubled
    assert progress == sorted(progress)
    assert progress[-1] > 0
    final = model.final()
    settled_count(podium, board, len(final), timeout=600)
    assert whole_listing(podium, board) == expected_listing(final)
    shown = podium.get_board(board)
    assert (shown.shards, shown.reshard) == (17, None)
    with pytest.raises(Conflict):
        podium.reshard(board, 17)  # to the count it has
    # And the consistency checker finds every item where 17 shards place it
    settings = table_settings(reshard_stack)
    eventually(lambda: _clean(verify_board(settings, board, endpoint=own_dynamodb)), timeout=120)


def assert_traffic_overlapped(model: BoardModel, traffic: Traffic, began: int, ended: int) -> None:
    """At least ``MOVE_OVERLAP`` reads and as many acknowledged writes began after the
    re-shard was asked for and ended before the board showed it over."""
    reads = sum(1 for o in traffic.observations if began < o.start and o.end < ended)
    writes = sum(
        1
        for history in model.writes.values()
        for write in history
        if began < write.started and write.acknowledged is not None and write.acknowledged < ended
    )
    assert min(reads, writes) >= MOVE_OVERLAP, f"only {reads} reads and {writes} writes ran within the move"


def wait_for_the_clean_up(stack: LocalStack, endpoint: str, board: str, old_shards: int) -> None:
    """Wait until the move has ended: the board item says so, and the index the board read
    before (RankIndex: every board starts there) holds none of its entries."""
    client = boto3.client("dynamodb", endpoint_url=endpoint)
    table = table_settings(stack).table

    def ended() -> None:
        item = client.get_item(
            TableName=table_settings(stack).state_table, Key=board_key(board), ConsistentRead=True
        )["Item"]
        assert "reshardEndedAt" in item
        for shard in range(old_shards):
            counted = client.query(
                TableName=table,
                IndexName="RankIndex",
                KeyConditionExpression="rpk = :p",
                ExpressionAttributeValues={":p": {"S": keys.rank_partition_key(board, ALL_TIME, shard)}},
                Select="COUNT",
            )
            assert counted["Count"] == 0

    eventually(ended, timeout=300, interval=1.0)


def _clean(report: Any) -> Any:
    assert report.ok, report.to_json()
    return report


def _pages(podium: PodiumClient, board: str, size: int) -> Iterator[Any]:
    cursor = None
    while True:
        page = podium.top(board, limit=size, cursor=cursor, consistent=True)
        yield page
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def test_a_board_shrinks_from_5_to_2_shards_under_writers_and_readers(
    podium: PodiumClient, reshard_stack: LocalStack, own_dynamodb: str
) -> None:
    # Given a 400-member board on 5 shards, put through the API
    board = unique_id("shrink")
    podium.create_board(board, operator="set", shards=5)
    draw = random.Random(5)
    initial = {f"s{n:03d}": Decimal(draw.randrange(0, 10**5)).scaleb(-1) for n in range(400)}
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda m: podium.put_member(board, m, score=initial[m]), initial))
    model = BoardModel(initial)
    touched = draw.sample(sorted(initial), 80) + [f"fresh{n}" for n in range(16)]
    first = podium.top(board, limit=50, consistent=True)
    last = first.entries[-1]
    assert first.next_cursor is not None
    traffic = Traffic(podium.base_url, board, model, [touched[n::WRITERS] for n in range(WRITERS)], [])
    traffic.cursors.append((first.next_cursor, key_of(last.member_id, last.score)))
    pool = traffic.run()
    try:
        time.sleep(3)
        # When it is re-sharded to 2 while they run
        traffic.phase = "during"
        assert podium.reshard(board, 2).reshard is not None
        wait_for_the_move(podium, reshard_stack, board, 2)
        traffic.phase = "after"
        with pytest.raises(Conflict, match="previous re-shard"):
            podium.reshard(board, 3)  # while the old index is being emptied
        wait_for_the_clean_up(reshard_stack, own_dynamodb, board, 5)
    finally:
        traffic.stop.set()
        pool.shutdown(wait=True)
    assert not traffic.errors, traffic.errors[:3]

    # Then every read was one the model allows, and the board is the model on 2 shards
    untouched = untouched_keys(model, model.writes)
    for observation in traffic.observations:
        check(model, observation, untouched)
    assert whole_listing(podium, board) == expected_listing(model.final())
    assert podium.get_board(board).shards == 2


def test_what_a_reshard_refuses(podium: PodiumClient, stack_url: str) -> None:
    board = unique_id("refused")
    podium.create_board(board, shards=4)
    url = f"{stack_url}/boards/{board}/reshard"
    for body, field in (({}, "shards"), ({"shards": 0}, "1 to 100"), ({"shards": 101}, "1 to 100")):
        response = requests.post(url, json=body, timeout=TIMEOUT)
        assert response.status_code == 400, response.text
        assert field in response.json()["message"]
    assert requests.post(url, json={"shards": 4}, timeout=TIMEOUT).status_code == 409  # its count
    missing = f"{stack_url}/boards/{unique_id('none')}/reshard"
    assert requests.post(missing, json={"shards": 4}, timeout=TIMEOUT).status_code == 404
    assert podium.get_board(board).reshard is None
