"""Top-k while scores change: how often a read steered by a head that lags the writes
still takes one round of shard queries, how many keys it reads, and how far the head
trails the writes.

On tables of its own (the template's, on the bench's DynamoDB Local), one board per shard
count is loaded with ``members`` score items (BatchWriteItem), its head and ladder are
read from the index, and then the table's stream is switched on, so that only the changes
made from then on flow through it. For ``seconds``:

* writers set scores (the board's operator is ``set``) at about ``writes_per_s``: a third
  to a random member and a random score (mostly deep in the board), a third to a random
  member and a score in the top (arrivals), a third to a member in the top and a score
  below it (departures);
* a stream consumer reads the stream once a second (the aggregator's
  ``MaximumBatchingWindowInSeconds``) and hands each batch to ``Aggregator.keep_heads``,
  the aggregator's own code for the head and its ladder;
* a reader reads the top 10, 100 and 1,000 exactly (``consistent=true``) and pages 2 to 5
  of 100 after a cursor, each steered by the head's hint, and records the keys each read
  and its rounds of shard queries (``ReadService.top_read``);
* a probe sets one member to a new best score every few seconds and times how long the
  head (``top?limit=1``, not consistent) takes to show it to a reader that keeps what it
  reads for the template's ``ReadCacheSeconds``, as a deployed function instance does.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from bench import load
from bench.measure import percentile, top_budget
from devstack import template
from devstack.streams import StreamTail
from podium.config import Settings
from podium.dal import Database
from podium.models import BoardSettings
from podium.reads import ReadService, TopRead
from podium.stream.aggregate import Aggregator
from podium.validation import BoardRequest
from podium.wiring import Services

WINDOW_S = 1.0  # the aggregator's MaximumBatchingWindowInSeconds (template.yaml)
WRITER_THREADS = 4
TOP_BAND = 1_000  # arrivals land in, and departures leave, the best this many
READS = (
    ("top 10", 10, False),
    ("top 100", 100, False),
    ("top 1,000", 1000, False),
    ("pages 2-5 of 100", 100, True),
)
PROBE_EVERY_S = 3.0
PROBE_GIVE_UP_S = 10.0


@dataclass
class ChurnPlan:
    members: int = 20_000
    seconds: float = 60.0
    writes_per_s: float = 40.0
    shards: tuple[int, ...] = (10, 50)


@dataclass
class Observed:
    items: dict[str, list[int]] = field(default_factory=dict)  # keys read, the board and head items included
    rounds: dict[str, list[int]] = field(default_factory=dict)
    lags: list[float] = field(default_factory=list)
    writes: int = 0
    batches: int = 0
    records: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def from_first_failure(batch: list[dict[str, Any]], failed: set[str]) -> list[dict[str, Any]]:
    """What Lambda delivers again after a batch reported ``failed`` (ReportBatchItemFailures):
    the batch from its first failed record on, the records after it included, so that a
    member's records are applied again in their order (retrying the failed records alone
    could apply an older record of a member after a newer one: its head entry moved back)."""
    first = next((i for i, record in enumerate(batch) if record["eventID"] in failed), None)
    return [] if first is None else batch[first:]


def _keep_heads(tail: StreamTail, aggregator: Aggregator, stop: threading.Event, seen: Observed) -> None:
    retry: list[dict[str, Any]] = []
    while not stop.wait(WINDOW_S):
        batch = retry + tail.read()
        if not batch:
            continue
        failed = aggregator.keep_heads(batch)
        retry = from_first_failure(batch, failed)
        seen.batches += 1
        seen.records += len(batch)


class Board:
    """The members' current scores, as the writers set them."""

    def __init__(self, scores: list[int]) -> None:
        self.lock = threading.Lock()
        self.scores = dict(enumerate(scores))
        self.threshold = sorted(scores, reverse=True)[min(TOP_BAND, len(scores)) - 1]
        self.top = {i for i, s in self.scores.items() if s >= self.threshold}
        self.writing: set[int] = set()

    def done(self, member: int) -> None:
        """The write of ``member`` that ``pick`` chose has been made."""
        with self.lock:
            self.writing.discard(member)

    def pick(self, draw: random.Random) -> tuple[int, int]:
        """A member and its new score: random, an arrival in the top, or a departure. A member
        another writer is writing is not picked until ``done``: two writes of one member
        racing each other could land in the other order than the model took them."""
        with self.lock:
            member = None
            while member is None or member in self.writing:
                kind = draw.randrange(3)
                if kind == 2 and self.top:
                    member = draw.choice(tuple(self.top))
                    score = draw.randrange(0, self.threshold)
                else:
                    member = draw.randrange(len(self.scores))
                    low = self.threshold if kind == 1 else 0
                    score = draw.randrange(low, load.TOP_SCORE + 1)
            self.writing.add(member)
            return member, score

    def written(self, member: int, score: int) -> None:
        """The write that ``pick`` chose went through: the model takes it (a write that
        failed never reaches the model, which would then hold a score the board has not)."""
        with self.lock:
            self.scores[member] = score
            if score >= self.threshold:
                self.top.add(member)
            else:
                self.top.discard(member)


def _write(
    service: Services,
    board_id: str,
    board: Board,
    rate: float,
    stop: threading.Event,
    seen: Observed,
) -> None:
    draw = random.Random(threading.get_ident())
    interval = WRITER_THREADS / rate
    next_at = time.monotonic()
    while not stop.is_set():
        member, score = board.pick(draw)
        try:
            _submit(service, board_id, member, score)
            board.written(member, score)
        finally:
            board.done(member)
        with seen.lock:
            seen.writes += 1
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))


WRITE_ATTEMPTS = 10  # a set score is the same write again: tried until DynamoDB Local takes it


def _submit(service: Services, board_id: str, member: int, score: int) -> None:
    """Set the member's score, again after an error (DynamoDB Local refuses writes it cannot
    lock in time under load): the model takes the score only once it is written."""
    for attempt in range(WRITE_ATTEMPTS):
        try:
            service.members.submit_score(board_id, load.member_id(member), Decimal(score))
            return
        except Exception:
            if attempt == WRITE_ATTEMPTS - 1:
                raise
            time.sleep(0.1 * (attempt + 1))


def _read(service: Services, board_id: str, stop: threading.Event, seen: Observed) -> None:
    while not stop.is_set():
        for name, limit, after_cursor in READS:
            read = service.reads.top_read(board_id, limit, None, False, consistent=True)
            if not after_cursor:
                _note(seen, name, read)
                continue
            for _ in range(4):
                if read.page.next_cursor is None:
                    break
                read = service.reads.top_read(board_id, limit, read.page.next_cursor, False, consistent=True)
                _note(seen, name, read)


def _note(seen: Observed, name: str, read: TopRead) -> None:
    stats = read.stats
    assert stats is not None
    seen.items.setdefault(name, []).append(stats.items + 2)  # + the board and the head item
    seen.rounds.setdefault(name, []).append(stats.rounds)


def template_read_cache_seconds() -> float:
    """``ReadCacheSeconds``' default in template.yaml: what a deployed instance keeps."""
    parameters = template.load()["Parameters"]
    return float(parameters["ReadCacheSeconds"]["Default"])


def _probe(service: Services, board_id: str, members: int, stop: threading.Event, seen: Observed) -> None:
    """Set a member to a new best score; time how long until the head serves it first, to
    a reader that keeps the head as a function instance does."""
    db = service.db
    reader = ReadService(
        service.boards, db.boards, db.members, db.index, db.tree, keep_seconds=template_read_cache_seconds()
    )
    best = 2 * load.TOP_SCORE
    draw = random.Random(7)
    while not stop.wait(PROBE_EVERY_S):
        best += 1
        member = load.member_id(draw.randrange(members))
        service.members.submit_score(board_id, member, Decimal(best))
        written = time.monotonic()
        while time.monotonic() - written < PROBE_GIVE_UP_S:
            page = reader.top(board_id, 1, None, False)
            if page.entries and page.entries[0].member_id == member and page.entries[0].score == best:
                seen.lags.append(time.monotonic() - written)
                break
            if stop.is_set():  # the run ended, and the stream consumer with it: no lag to time
                break
            time.sleep(0.02)
        else:
            seen.lags.append(time.monotonic() - written)  # never seen: counted as the give-up time


def loaded_board(
    client: Any, settings: Settings, board_id: str, shards: int, members: int, seed: int
) -> tuple[load.Population, str]:
    """A ``set`` board of ``members`` loaded in bulk, its head and count tree built, then the
    table's stream switched on (only what changes from now on flows through it): the
    population loaded and the stream's ARN."""
    from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]

    store = Database.connect(settings, client=client)
    service = Services(store)
    service.boards.put_board(
        board_id, BoardRequest(settings=BoardSettings(shards=shards, operator="set"), title=None)
    )
    population = load.Population(seed=seed)
    population.grow(members)
    with tqdm(total=members, unit="item", unit_scale=True, desc=f"load {board_id}") as bar:
        load.grow_board(
            client, store, board_id, service.boards.settings(board_id), population, 0, members, bar,
            profiles=False,
        )  # fmt: skip
    load.set_member_count(client, store, board_id, members)
    service.maintenance.rebuild_rank_structures(board_id)
    arn = client.update_table(
        TableName=settings.table_name,
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )["TableDescription"]["LatestStreamArn"]
    return population, str(arn)


def run_board(client: Any, streams: Any, settings: Settings, shards: int, plan: ChurnPlan) -> dict[str, Any]:
    store = Database.connect(settings, client=client)
    board_id = f"churn-{shards}-shards"
    population, arn = loaded_board(client, settings, board_id, shards, plan.members, seed=shards)
    seen = Observed()
    stop = threading.Event()
    aggregator = Aggregator(store, Services(store).boards.settings, lambda: datetime.now(UTC))
    board = Board(population.scores)
    threads = [
        threading.Thread(target=_keep_heads, args=(StreamTail(streams, arn), aggregator, stop, seen)),
        threading.Thread(target=_read, args=(Services(store), board_id, stop, seen)),
        threading.Thread(target=_probe, args=(Services(store), board_id, plan.members, stop, seen)),
        *(
            threading.Thread(
                target=_write,
                args=(Services(store), board_id, board, plan.writes_per_s, stop, seen),
            )
            for _ in range(WRITER_THREADS)
        ),
    ]
    print(f"churning {board_id} for {plan.seconds:.0f} s ...", flush=True)
    started = time.monotonic()
    for thread in threads:
        thread.start()
    time.sleep(plan.seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    client.update_table(TableName=settings.table_name, StreamSpecification={"StreamEnabled": False})
    reads = []
    for name, limit, _ in READS:
        items = seen.items.get(name, [])
        rounds = seen.rounds.get(name, [])
        if not items:
            continue
        reads.append(
            {
                "read": name,
                "k": limit,
                "reads": len(items),
                "oneRoundShare": sum(1 for r in rounds if r == 1) / len(rounds),
                "mostRounds": max(rounds),
                "itemsP50": percentile([float(i) for i in items], 0.5),
                "itemsP95": percentile([float(i) for i in items], 0.95),
                "itemsMax": max(items),
                "budget": top_budget(limit, shards),
            }
        )
    return {
        "shards": shards,
        "members": plan.members,
        "seconds": elapsed,
        "writes": seen.writes,
        "writesPerSecond": seen.writes / elapsed,
        "batches": seen.batches,
        "records": seen.records,
        "reads": reads,
        "lagsS": seen.lags,
    }


def run(client: Any, streams: Any, settings: Settings, plan: ChurnPlan) -> list[dict[str, Any]]:
    return [run_board(client, streams, settings, shards, plan) for shards in plan.shards]
