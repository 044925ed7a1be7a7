"""The worst case of every route, next to the bound of 500 RCU a request (issue 12).

Builds, on DynamoDB Local, what makes each route read the most, then sends each route's
worst request through the service with every DynamoDB request recorded (``bench.measure``:
``ReturnConsumedCapacity``, a read that finds nothing counted at DynamoDB's minimum, the
keys of a BatchGetItem that find nothing too):

- two boards of ``members`` members with the same scores, on 1 shard and on 100 (the most
  the API allows), bulk-loaded with their score items, their head and count tree rebuilt
  from the index as ``make bench`` does; on each: ``rank`` (also ``consistent=true``) of
  the last member, ``around`` with radius 50 at the top, the middle and the end, ``POST
  /ranks`` with 100 ids spread evenly over the listing (each in a leaf of its own: the most
  nodes 100 ids can read) and 100 drawn at random, an exact top 1,000, a page of 1,000
  after a cursor near the end, and ``GET .../scores?limit=1000`` of a band of 1,000 from
  the middle and from the end;
- a board of 100 shards whose best 100 members hold 64 KiB of ``data`` each and whose next
  1,000 hold a few bytes: ``top?limit=1000&withData=true`` from the top and after the
  first 100, and ``ranks`` of 100 of them;
- members with events logged and not folded yet (``fresh=true`` reads their pages, one per
  request, or refuses past the bound: requests of one event each, the most pages), an inbox
  of expired and live notifications, a board with expired and live snapshots of 100
  entries of 200-character ids, ``boards`` boards in the catalog, and a member followed by
  ``followers`` members (the request's part of its delete).

Every ranked answer is checked against a plain sorted list of the loaded scores.

``python -m bench.worst [--small]`` runs it alone on a DynamoDB Local of its own (``--small``:
20,000 members, for a busy machine) and writes ``bench-data/worst/worst.json`` and
``worst.md``; ``make bench`` runs it inside the full run (``Plan.worst_plan``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from bisect import bisect_right
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

from bench import load
from bench.measure import Recorder, Sample
from podium import cursors
from podium.bands import Band
from podium.dal import Database, schema
from podium.errors import Conflict
from podium.models import BoardSettings, Notification, Page, RankedEntry, Snapshot
from podium.periods import ALL_TIME
from podium.validation import BoardRequest, EventRequest, MemberRequest
from podium.wiring import Services

BOUND_RCU = 500.0  # the goal: no request reads more
ROOT = Path(__file__).resolve().parent.parent
LONG_ID = "x" * 190  # with a prefix: 200-character member ids, the most the API allows
DATA_BYTES = 64 * 1024 - 64  # serialised, just under the API's 64 KiB


@dataclass
class WorstPlan:
    members: int = 1_000_000
    shards: tuple[int, ...] = (1, 100)
    big_data: int = 100  # members with 64 KiB of data, best first
    small_data: int = 1_000  # members with a few bytes of data, after them
    pending_events: int = 6_000  # events for one member, one a request (a page each): refused
    fresh_plain: int = 2_500  # events without ids for another, 100 a request: answered
    fresh_with_ids: int = 10_000  # events with ids for a third, 100 a request: answered
    expired_notifications: int = 10_000
    live_notifications: int = 300
    expired_snapshots: int = 1_000
    live_snapshots: int = 300
    boards: int = 120
    followers: int = 10_000
    draws: int = 3  # lists of 100 random ids per board
    runs: int = 2  # measured runs of each case (after one to warm up); the worst is kept

    @classmethod
    def small(cls) -> WorstPlan:
        return cls(
            members=20_000,
            fresh_plain=1_500,
            fresh_with_ids=2_000,
            expired_notifications=2_000,
            live_notifications=250,
            expired_snapshots=200,
            live_snapshots=150,
            boards=105,
            followers=2_000,
            draws=2,
        )


class Model:
    """The loaded scores as a plain sorted list."""

    def __init__(self, scores: list[int]) -> None:
        self.scores = scores
        self.listing = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        self.ascending = sorted(scores)

    def rank(self, index: int) -> int:
        return 1 + len(self.ascending) - bisect_right(self.ascending, self.scores[index])

    def entries(self, indexes: list[int]) -> list[tuple[int, str]]:
        return [(self.rank(i), load.member_id(i)) for i in indexes]


def ranked(entries: list[RankedEntry]) -> list[tuple[int, str]]:
    return [(e.rank, e.member_id) for e in entries]


def same_ranked(expected: list[tuple[int, str]], answer: list[RankedEntry]) -> bool:
    return ranked(answer) == expected


def same_entries(expected: list[tuple[int, str]], page: Page) -> bool:
    return ranked(page.entries) == expected


class Bench:
    def __init__(self, client: Any, loader: Any, settings: Any, plan: WorstPlan) -> None:
        self.plan = plan
        self.recorder = Recorder()
        self.recorder.attach(client)
        self.service = Services(Database.connect(settings, client=client))
        self.store = Database.connect(settings, client=loader)
        self.setup = Services(self.store)
        self.loader = loader
        self.rows: list[dict[str, Any]] = []

    def case(
        self,
        route: str,
        case: str,
        read: Callable[[], Any],
        check: Callable[[Any], bool] | None = None,
        *,
        where: tuple[int, int] | None = None,
        runs: int | None = None,
        warm: bool = True,
    ) -> Any:
        """Measure ``read`` (once unrecorded to warm the caches, then ``runs`` times) and
        keep the worst run; ``check`` judges the answer."""
        if warm:
            read()
        worst: Sample | None = None
        answer = None
        for _ in range(runs or self.plan.runs):
            with self.recorder.window() as window:
                answer = read()
            sample = Sample.of(window)
            if worst is None or sample.rcu > worst.rcu:
                worst = sample
        assert worst is not None
        row = {
            "route": route,
            "case": case,
            "members": where[0] if where else None,
            "shards": where[1] if where else None,
            "rcu": worst.rcu,
            "wcu": worst.wcu,
            "itemsRead": worst.items_read,
            "requests": worst.requests,
            "rounds": worst.rounds,
            "ms": worst.seconds * 1000,
            "exact": None if check is None else bool(check(answer)),
        }
        self.rows.append(row)
        verdict = "" if row["exact"] is None else (" exact" if row["exact"] else " WRONG")
        print(
            f"  {route:34} {case[:52]:52} {worst.rcu:9,.1f} RCU {worst.requests:6} requests{verdict}",
            flush=True,
        )
        return answer


# -- the ranked boards ------------------------------------------------------------------


def load_ranked(bench: Bench, population: load.Population, shards: int) -> str:
    from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]

    board = f"worst-{shards}-shards"
    bench.setup.boards.put_board(board, BoardRequest(settings=BoardSettings(shards=shards), title=None))
    settings = bench.setup.boards.settings(board)
    members = bench.plan.members
    with tqdm(total=members, unit="item", unit_scale=True, desc=f"load {board}") as bar:
        load.grow_board(
            bench.loader, bench.store, board, settings, population, 0, members, bar, profiles=False
        )
    load.set_member_count(bench.loader, bench.store, board, members)
    bench.setup.maintenance.rebuild_rank_structures(board)
    return board


def sort_key(bench: Bench, board: str, index: int, score: int) -> str:
    settings = bench.setup.boards.settings(board)
    item = load.score_item(bench.store, board, settings, load.member_id(index), score)
    return str(item["rsk"]["S"])


def measure_ranked(bench: Bench, board: str, shards: int, model: Model) -> None:
    reads = bench.service.reads
    size = len(model.scores)
    where = (size, shards)
    last = model.listing[-1]
    for consistent in (False, True):
        bench.case(
            "GET rank",
            f"the last member{', consistent=true' if consistent else ''}",
            partial(reads.rank, board, load.member_id(last), consistent=consistent),
            lambda answer: bool(answer["rank"] == model.rank(last)),
            where=where,
        )
    for name, position in (("the first", 0), ("the middle", size // 2), ("the last", size - 1)):
        index = model.listing[position]
        start = min(max(0, position - 50), size - min(101, size))
        expected = model.entries(model.listing[start : start + 101])
        bench.case(
            "GET around?radius=50",
            f"{name} member",
            partial(reads.around, board, load.member_id(index), 50),
            partial(same_entries, expected),
            where=where,
        )
    spread = [model.listing[(2 * k + 1) * size // 200] for k in range(100)]
    draw = random.Random(shards)
    lists = [("100 ids spread over the listing", spread)]
    lists += [
        (f"100 ids at random ({n + 1})", draw.sample(range(size), 100)) for n in range(bench.plan.draws)
    ]
    for name, chosen in lists:
        ids = [load.member_id(i) for i in chosen]
        expected = model.entries(sorted(chosen, key=lambda i: (-model.scores[i], i)))
        bench.case(
            "POST ranks",
            name,
            partial(reads.ranks, board, ids),
            partial(same_ranked, expected),
            where=where,
        )
    top = model.entries(model.listing[:1000])
    bench.case(
        "GET top",
        "limit=1000, consistent=true",
        lambda: reads.top(board, 1000, None, False, consistent=True),
        lambda page: ranked(page.entries) == top,
        where=where,
    )
    for name, start in (("the middle", size // 2), ("the last 1,000", max(0, size - 1000))):
        chosen = model.listing[start : start + 1000]
        high, low = model.scores[chosen[0]], model.scores[chosen[-1]]
        inside = [i for i in model.listing if low <= model.scores[i] <= high]
        bench.case(
            "GET scores",
            f"limit=1000, a band of scores from {name} member(s)",
            partial(bench.service.bands.scores, board, Band(Decimal(low), Decimal(high)), 1000, None),
            partial(same_entries, model.entries(inside[:1000])),
            where=where,
        )
    position = max(0, size - 1001)
    after = model.listing[position]
    cursor = cursors.encode(f"{board}#{ALL_TIME}", sort_key(bench, board, after, model.scores[after]))
    page_expected = model.entries(model.listing[position + 1 : position + 1001])
    for consistent in (False, True):
        bench.case(
            "GET top",
            f"limit=1000 after a cursor at #{position + 1:,}{', consistent=true' if consistent else ''}",
            partial(reads.top, board, 1000, cursor, False, consistent=consistent),
            partial(same_entries, page_expected),
            where=where,
        )


# -- data, events, inboxes, snapshots, the catalog, followers ---------------------------


def measure_data(bench: Bench) -> None:
    plan = bench.plan
    board = "worst-data"
    bench.setup.boards.put_board(board, BoardRequest(settings=BoardSettings(shards=100), title=None))
    count = plan.big_data + plan.small_data
    for index in range(count):
        data = {"blob": "x" * DATA_BYTES} if index < plan.big_data else {"n": index}
        request = MemberRequest(data=data, score=Decimal(count - index))
        bench.setup.members.put_member(board, f"d-{index:05d}", request)
    load.set_member_count(bench.loader, bench.store, board, count)
    bench.setup.maintenance.rebuild_rank_structures(board)
    reads = bench.service.reads
    ids = [f"d-{index:05d}" for index in range(count)]
    where = (count, 100)

    def in_order(page: Any, start: int) -> bool:
        got = [(e.rank, e.member_id, e.data is not None) for e in page.entries]
        return bool(got) and got == [(start + n + 1, ids[start + n], True) for n in range(len(got))]

    first = bench.case(
        "GET top?withData=true",
        f"limit=1000, the best {plan.big_data} with 64 KiB of data each",
        lambda: reads.top(board, 1000, None, True),
        lambda page: in_order(page, 0),
        where=where,
    )
    print(f"    (that page held {len(first.entries)} entries)")
    cursor = reads.top(board, plan.big_data, None, False, consistent=True).next_cursor
    small = bench.case(
        "GET top?withData=true",
        f"limit=1000 after the first {plan.big_data}: {plan.small_data:,} small profiles",
        lambda: reads.top(board, 1000, cursor, True),
        lambda page: in_order(page, plan.big_data),
        where=where,
    )
    print(f"    (that page held {len(small.entries)} entries)")
    chosen = ids[:: max(1, count // 100)][:100]
    bench.case(
        "POST ranks",
        f"100 ids on a board of {count:,}",
        lambda: bench.service.reads.ranks(board, chosen),
        lambda answer: [(e.rank, e.member_id) for e in answer] == [(ids.index(m) + 1, m) for m in chosen],
        where=where,
    )
    bench.case(
        "GET member",
        "64 KiB of data",
        lambda: bench.service.members.get_member(board, ids[0]),
        lambda member: member.data == {"blob": "x" * DATA_BYTES},
    )


def refused(read: Callable[[], Any]) -> Any:
    """The answer of ``read``, or the Conflict it raised (a refusal: 409)."""
    try:
        return read()
    except Conflict as conflict:
        return conflict


def measure_events(bench: Bench) -> None:
    plan = bench.plan
    board = "worst-events"
    bench.setup.boards.put_board(board, BoardRequest(settings=BoardSettings(shards=10), title=None))
    cases = (  # member, events, with ids, events a request
        ("hot-" + LONG_ID, plan.fresh_with_ids, True, 100),
        ("hot-plain", plan.fresh_plain, False, 100),
        ("hot-many-" + LONG_ID, plan.pending_events, False, 1),
    )
    for member, count, with_ids, per_request in cases:
        bench.setup.members.put_member(board, member, MemberRequest(data={}, score=Decimal(0)))
        batches = [
            [
                EventRequest(member, Decimal(1), f"event-{n:06d}-{LONG_ID[:100]}" if with_ids else None)
                for n in range(start, min(start + per_request, count))
            ]
            for start in range(0, count, per_request)
        ]
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(partial(bench.setup.members.log_events, board), batches))
    for member, count, with_ids, per_request in cases:
        kind = ("with ids" if with_ids else "without ids") + f", {per_request} a request"
        answered = per_request > 1
        outcome = "answered" if answered else "refused: 409, read again once folded"
        bench.case(
            "GET member?fresh=true",
            f"{count:,} events {kind} not folded yet ({outcome})",
            partial(refused, partial(bench.service.members.fresh_member, board, member)),
            partial(fresh_as_expected, count if answered else None),
        )
    events = [EventRequest(cases[0][0], Decimal(1), f"more-{n}-{time.time_ns()}") for n in range(100)]
    bench.case(
        "POST events",
        "100 events with ids",
        lambda: bench.service.members.log_events(board, events),
        lambda accepted: accepted == 100,
        runs=1,
        warm=False,
    )


def fresh_as_expected(count: int | None, answer: Any) -> bool:
    """An answer with ``count`` pending events (and as many points), or a refusal (None)."""
    if count is None:
        return isinstance(answer, Conflict)
    return not isinstance(answer, Conflict) and answer[1] == count and answer[0].score == count


def measure_inbox(bench: Bench) -> None:
    plan = bench.plan
    board = "worst-inbox"
    now = datetime.now(UTC)
    # The member joined 60 days ago (the inbox shows nothing from before it joined).
    past = Services(bench.store, clock=lambda: now - timedelta(days=60))
    past.boards.put_board(board, BoardRequest(settings=BoardSettings(shards=10), title=None))
    member = "reader-" + LONG_ID
    past.members.put_member(board, member, MemberRequest(data={}, score=Decimal(0)))
    day_us = 86_400_000_000
    now_us = int(now.timestamp() * 1_000_000)
    created = [now_us - 59 * day_us + n * (28 * day_us // plan.expired_notifications)
               for n in range(plan.expired_notifications)]  # fmt: skip
    created += [now_us - day_us + n * 1000 for n in range(plan.live_notifications)]
    for n, moment in enumerate(created):
        note = Notification(
            f"{n:032x}", "overtaken", board, member, "rival-" + LONG_ID, Decimal(n), Decimal(n + 1), moment
        )
        bench.store.social.put_notification(note, 30 * 86_400)
    pages = walk_pages(lambda c: bench.service.social.notifications(board, member, 100, c))
    worst_page = pages[-1]  # the last page reads past the live ones
    bench.case(
        "GET notifications?limit=100",
        f"the last page, past {plan.expired_notifications:,} expired not yet removed",
        lambda: bench.service.social.notifications(board, member, 100, worst_page),
        lambda answer: len(answer[0]) == plan.live_notifications % 100 or len(answer[0]) == 100,
    )
    bench.case(
        "GET notifications?limit=100",
        "the first page",
        lambda: bench.service.social.notifications(board, member, 100, None),
        lambda answer: len(answer[0]) == min(100, plan.live_notifications),
    )


def walk_pages(read: Callable[[str | None], tuple[Any, str | None]]) -> list[str | None]:
    """The cursor of every page of a listing (None for the first)."""
    found: list[str | None] = [None]
    while True:
        _, cursor = read(found[-1])
        if cursor is None:
            return found
        found.append(cursor)


def measure_snapshots(bench: Bench) -> None:
    from podium import snapshots

    plan = bench.plan
    board = "worst-snapshots"
    bench.setup.boards.put_board(board, BoardRequest(settings=BoardSettings(shards=10), title=None))
    entries = [RankedEntry(n + 1, f"{n:09d}-{LONG_ID}", Decimal("9" * 37 + "." + "9")) for n in range(100)]
    now = datetime.now(UTC).replace(microsecond=0)
    minutes = [-(200 * 24 * 60) + n for n in range(plan.expired_snapshots)]
    minutes += [-(plan.live_snapshots - n) * 5 for n in range(plan.live_snapshots)]
    retention = 90 * 86_400
    for minute in minutes:
        taken = now + timedelta(minutes=minute)
        snapshot = Snapshot(board, snapshots.snapshot_id(board, taken), taken, 10**6, entries)
        bench.store.snapshots.put_snapshot(snapshot, int(taken.timestamp()) + retention)
    pages = walk_pages(lambda c: snapshots.list_snapshots(bench.service, board, 100, c))
    for name, cursor in (("the first page", pages[0]), ("the last page", pages[-1])):
        bench.case(
            "GET snapshots?limit=100",
            f"{name}: 100 entries of 200-character ids each, {plan.expired_snapshots:,} expired",
            partial(snapshots.list_snapshots, bench.service, board, 100, cursor),
            lambda answer: all(len(s.entries) == 100 for s in answer[0]),
        )


def measure_catalog_and_follows(bench: Bench) -> None:
    plan = bench.plan
    for n in range(plan.boards):
        bench.setup.boards.put_board(
            f"worst-catalog-{n:04d}", BoardRequest(settings=BoardSettings(), title="t" * 200)
        )
    bench.case(
        "GET boards?limit=100",
        f"{plan.boards:,} boards in the catalog",
        lambda: bench.service.boards.list_boards(100, None),
        lambda answer: len(answer.boards) == 100,
    )
    board = "worst-follows"
    bench.setup.boards.put_board(board, BoardRequest(settings=BoardSettings(shards=100), title=None))
    star = "star-" + LONG_ID
    bench.setup.members.put_member(
        board, star, MemberRequest(data={"blob": "x" * DATA_BYTES}, score=Decimal(5))
    )
    rivals = [f"rival-{n:03d}-{LONG_ID}" for n in range(100)]
    others = [f"other-{n:03d}-{LONG_ID}" for n in range(100)]
    bench.setup.social.put_rivals(board, star, rivals)
    edges = [
        {"PutRequest": {"Item": schema.edge_key(board, star, f"fan-{n:06d}-{LONG_ID}")}}
        for n in range(plan.followers)
    ]
    bench.store.tables.batch_write(edges)
    turn = [0]

    def replace_rivals() -> list[str]:
        turn[0] += 1
        return bench.service.social.put_rivals(board, star, others if turn[0] % 2 else rivals)

    bench.case("PUT rivals", "100 rivals replacing 100 others", replace_rivals, lambda ids: len(ids) == 100)
    bench.case(
        "POST score",
        f"a member with 64 KiB of data, followed by {plan.followers:,}",
        lambda: bench.service.members.submit_score(board, star, Decimal(1)),
    )
    bench.case(
        "DELETE member",
        f"followed by {plan.followers:,}, following 100, 64 KiB of data",
        lambda: bench.service.members.delete_member(board, star),
        runs=1,
        warm=False,
    )


# -- the run --------------------------------------------------------------------------------


def run(client: Any, loader: Any, settings: Any, plan: WorstPlan) -> dict[str, Any]:
    """Build and measure every case on the tables ``settings`` names; the results."""
    started = time.perf_counter()
    bench = Bench(client, loader, settings, plan)
    population = load.Population(seed=17)
    population.grow(plan.members)
    model = Model(population.scores[: plan.members])
    for shards in plan.shards:
        board = load_ranked(bench, population, shards)
        print(f"measuring {board} ({plan.members:,} members) ...", flush=True)
        measure_ranked(bench, board, shards, model)
    print("measuring data, events, inboxes, snapshots, the catalog and follows ...", flush=True)
    measure_data(bench)
    measure_events(bench)
    measure_inbox(bench)
    measure_snapshots(bench)
    measure_catalog_and_follows(bench)
    return {
        "plan": {**asdict(plan), "shards": list(plan.shards)},
        "boundRcu": BOUND_RCU,
        "seconds": time.perf_counter() - started,
        "rows": bench.rows,
    }


def main() -> None:
    from bench import report
    from bench.run import measure_worst

    parser = argparse.ArgumentParser(prog="python -m bench.worst", description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="20,000 members, smaller inboxes: minutes")
    parser.add_argument("--members", type=int, help="members of the two ranked boards")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-data" / "worst")
    args = parser.parse_args()
    plan = WorstPlan.small() if args.small else WorstPlan()
    if args.members:
        plan.members = args.members
    args.out.mkdir(parents=True, exist_ok=True)
    results = measure_worst(plan, args.out)
    assert results is not None
    results["ranAt"] = datetime.now(UTC).isoformat(timespec="seconds")
    (args.out / "worst.json").write_text(json.dumps(results, indent=1))
    lines = ["Each route's costliest case:", "", *report.worst_table(results), ""]
    lines += ["Every case:", "", *report.worst_cases(results)]
    (args.out / "worst.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {args.out / 'worst.json'} and worst.md in {results['seconds']:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
