"""A hot board's reads: an instance keeps the board, its count and its count tree's root
for READ_CACHE_SECONDS (podium.recent) and its head HEAD_KEEP_SECONDS (a quarter second),
so DynamoDB sees those items about once a second (the head four times) per warm instance,
not once per request; the head is read from the instance's copy of it, off the board's
partition; a member's score is read every time, and once the second is up every answer is
exact again."""

from __future__ import annotations

import random
from decimal import Decimal

import boto3
import pytest
from botocore.config import Config

from bench.measure import KeyReads
from podium import indexreads, recent
from podium.config import Settings
from podium.dal import Database, schema
from podium.dal.boards import Boards
from podium.errors import NotFound
from podium.periods import ALL_TIME
from podium.reads import ReadService
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import TableStream, TickingClock, expected_listing, unique_id

pytestmark = pytest.mark.integration


class FrozenClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> FrozenClock:
    clock = FrozenClock()
    monkeypatch.setattr(recent, "monotonic", clock)
    # ranks from the count tree, as on a board past 2,048 members
    monkeypatch.setattr(indexreads, "COUNT_INDEX_UP_TO", 0)
    return clock


def instance(endpoint: str, settings: Settings, keep_seconds: float) -> tuple[ReadService, KeyReads]:
    """A function instance's reads, on a client of its own whose every read is counted."""
    client = boto3.client("dynamodb", endpoint_url=endpoint, config=Config(max_pool_connections=32))
    reads = KeyReads()
    reads.attach(client)
    db = Database.connect(settings, client=client)
    boards = Services(db, clock=TickingClock()).boards
    return ReadService(boards, db.boards, db.members, db.index, db.tree, keep_seconds=keep_seconds), reads


def hot_copy(reads: ReadService) -> int:
    """The copy of the head the instance reads."""
    assert isinstance(reads.board_store, Boards)
    return reads.board_store.head_copy


def model_rank(scores: dict[str, Decimal], member: str) -> int:
    return 1 + sum(1 for s in scores.values() if s > scores[member])


def apply_stream(service: Services, stream: TableStream, board: str, seen: int) -> int:
    """Every record of ``board`` after the first ``seen``, as the aggregator's batches take
    them (heads, counts, tree); answers how many there are now."""
    records = [r for r in stream.records() if r["dynamodb"]["Keys"]["pk"]["S"].startswith(f"M#{board}#")]
    failed = service.aggregator.keep_batch(records[seen:])
    assert not failed
    return len(records)


def test_a_hot_board_is_read_once_a_second_per_instance_and_exact_after_it(
    service: Services,
    dynamodb_endpoint: str,
    local_tables: Settings,
    table_stream: TableStream,
    frozen: FrozenClock,
) -> None:
    # Given a board of 300 members on 3 shards, its head, count and tree kept by the stream
    # (counted as a board of millions is: from its tree)
    hot, reads = instance(dynamodb_endpoint, local_tables, keep_seconds=1)
    board = unique_id("hot")
    service.boards.put_board(board, board_request({"shards": Decimal(3)}))
    rng = random.Random(15)
    scores = {f"p{i:03d}": Decimal(rng.randrange(0, 5_000)) for i in range(300)}
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score}))
    seen = apply_stream(service, table_stream, board, 0)
    reads.clear()

    # When one instance serves 40 top-10 reads and 40 ranks within one second
    members = rng.sample(sorted(scores), 40)
    for member in members:
        page = hot.top(board, 10, None, with_data=False)
        assert [(e.rank, e.member_id, e.score) for e in page.entries] == expected_listing(scores)[:10]
        answer = hot.rank(board, member)
        assert answer["rank"] == model_rank(scores, member)
        assert answer["total"] == 300

    # Then DynamoDB read the board item twice (its layout, kept 5 s; then what the tops and
    # the ranks read first, with the head), the head once, from the instance's copy (not
    # the primary on the board's partition), and the tree's root once, but every member's
    # score
    board_pk = f"{schema.BOARD}{board}"
    copy_pk = schema.head_copy_key(board, ALL_TIME, hot_copy(hot))["pk"]["S"]
    assert reads.of(board_pk, schema.BOARD_ITEM) == 2
    assert reads.of(copy_pk, f"{schema.HEAD}{ALL_TIME}") == 1
    assert reads.of(board_pk, f"{schema.HEAD}{ALL_TIME}") == 0
    assert reads.of(schema.tree_pk(board, ALL_TIME), schema.TREE_ROOT) == 1
    for member in members:
        assert reads.of(schema.member_pk(board, member), schema.score_sk(ALL_TIME)) == 1
    assert reads.queries == {}  # no shard was queried: the head and the tree answered

    # When a quarter second has passed: the tops read the head again, alone (the head may lag
    # writes by 2 s, the stream takes about one); the board and the root are still kept
    frozen.now += recent.HEAD_KEEP_SECONDS
    reads.clear()
    hot.top(board, 10, None, with_data=False)
    hot.rank(board, members[0])
    assert reads.of(copy_pk, f"{schema.HEAD}{ALL_TIME}") == 1
    assert reads.of(board_pk, schema.BOARD_ITEM) == 0
    assert reads.of(schema.tree_pk(board, ALL_TIME), schema.TREE_ROOT) == 0
    reads.clear()

    # When scores change (a new leader among them) and the stream has taken them
    for member in rng.sample(sorted(scores), 30):
        scores[member] = Decimal(rng.randrange(0, 10_000))
        service.members.put_member(board, member, member_request({"score": scores[member]}))
    apply_stream(service, table_stream, board, seen)

    # Then within what it keeps, the instance may answer from it: the top page it read
    # before the changes
    before = hot.top(board, 10, None, with_data=False)
    assert reads.of(copy_pk, f"{schema.HEAD}{ALL_TIME}") == 0
    assert before.entries == page.entries

    # And once the second is up, every answer is exact again, read afresh
    frozen.now += 1
    reads.clear()
    after = hot.top(board, 10, None, with_data=False)
    assert [(e.rank, e.member_id, e.score) for e in after.entries] == expected_listing(scores)[:10]
    for member in members:
        answer = hot.rank(board, member)
        assert answer["rank"] == model_rank(scores, member), member
    assert reads.of(copy_pk, f"{schema.HEAD}{ALL_TIME}") == 1
    assert reads.of(schema.tree_pk(board, ALL_TIME), schema.TREE_ROOT) == 1


def test_nothing_is_kept_with_no_read_cache(
    service: Services, dynamodb_endpoint: str, local_tables: Settings
) -> None:
    # Given READ_CACHE_SECONDS = 0 (the service's default outside the template)
    cold, reads = instance(dynamodb_endpoint, local_tables, keep_seconds=0)
    board = unique_id("cold")
    service.boards.put_board(board, board_request({}))
    service.members.put_member(board, "ana", member_request({"score": Decimal(5)}))
    reads.clear()
    # When three reads are made
    for _ in range(3):
        cold.top(board, 10, None, with_data=False)
    # Then each read the board item (besides the layout, kept 5 s)
    assert reads.of(f"{schema.BOARD}{board}", schema.BOARD_ITEM) == 1 + 3


def test_a_board_that_does_not_exist_is_not_kept(
    service: Services, dynamodb_endpoint: str, local_tables: Settings
) -> None:
    # Given an instance that looked for a board before it was made
    hot, _ = instance(dynamodb_endpoint, local_tables, keep_seconds=1)
    board = unique_id("late")
    with pytest.raises(NotFound):
        hot.top(board, 10, None, with_data=False)
    # When it is made, then the same instance sees it at once
    service.boards.put_board(board, board_request({}))
    assert hot.top(board, 10, None, with_data=False).entries == []
