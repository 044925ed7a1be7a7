"""``make bench-reshard N=20000``: what a re-shard's copy and clean-up cost and how fast they go.

    python -m bench.reshardrun [--members 20000] [--from-shards 3] [--to-shards 17]

It starts a DynamoDB Local of its own (in memory) with the template's tables, loads a board
of ``--members`` members on ``--from-shards`` shards in bulk (the items the service writes,
``bench.load``), starts a move to ``--to-shards`` (``podium.resharding``), and runs the
worker in this process through the copy (every item keyed in the second index, the check,
the switch) and then the clean-up (the first index's key removed from every item), on a
clock of its own moved past each phase's wait, measuring every DynamoDB request of each
(``podium.dal.usage``: DynamoDB Local's consumed capacity, the indexes' writes included). It
prints, for each and for both, the seconds, members a second, WCU and RCU per member moved,
and the time a million members would take at that rate; then checks that every score item
is keyed in the second index on its shard under the new count, and in the first no more.
The stream consumers do not run here: what each update costs them is in docs/streams.md's
figures for a record that changes no score.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import boto3

from bench.load import batch_write, profile_item
from bench.loadrun import machine, say
from devstack import template as template_module
from devstack.dynamodb_local import DynamoDBLocal
from devstack.stack import create_tables
from podium import keys
from podium.boards import BoardService
from podium.dal import Database, schema, usage
from podium.dal.codecs import score_attributes
from podium.layouts import Timing
from podium.models import BoardSettings, ScoreState
from podium.periods import ALL_TIME
from podium.resharding import ReshardService, RunReport
from podium.validation import board_request

BOARD = "resharded"
PHASES = {"copy": "copy (to the switch)", "cleanUp": "clean-up", "both": "both"}  # as measure() keys them
START = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


class MovableClock:
    """The bench's clock: the move is started at START, and moved past each phase's wait."""

    def __init__(self) -> None:
        self.moment = START

    def __call__(self) -> datetime:
        return self.moment


def load(store: Database, client: object, members: int, shards: int, seed: int) -> dict[str, Decimal]:
    draw = random.Random(seed)
    settings = BoardSettings(operator="set", shards=shards)
    scores = {f"member-{n:07d}": Decimal(draw.randrange(10**9)).scaleb(-3) for n in range(members)}
    items = []
    for member, score in scores.items():
        state = ScoreState(score, 1, 1_700_000_000_000_000)
        where = keys.placement(BOARD, settings, member, state, ALL_TIME)
        attributes = score_attributes(state, where.partition, where.sort_key, where.expires)
        items += [profile_item(BOARD, member), {**schema.score_key(BOARD, member, ALL_TIME), **attributes}]
    for start in range(0, len(items), 25):
        batch_write(client, store.tables.table, items[start : start + 25])
    return scores


@dataclass(frozen=True)
class Measured:
    seconds: float
    write_units: float
    read_units: float

    def __add__(self, other: Measured) -> Measured:
        return Measured(
            self.seconds + other.seconds,
            self.write_units + other.write_units,
            self.read_units + other.read_units,
        )


def run_phase(worker: ReshardService, done: Callable[[RunReport], bool]) -> Measured:
    """Run the worker until ``done``: what it took."""
    began = time.monotonic()
    with usage.measuring() as used:
        while not done(worker.run_reshards(timedelta(minutes=10))):
            pass
    return Measured(time.monotonic() - began, used.write_units, used.read_units)


def score_items(store: Database, scores: dict[str, Decimal]) -> Iterator[tuple[str, dict[str, Any]]]:
    for member in scores:
        yield member, store.tables.get(schema.score_key(BOARD, member, ALL_TIME)) or {}


def index_keys(item: dict[str, Any]) -> tuple[str | None, str | None]:
    return item.get("rpk", {}).get("S"), item.get("rpkB", {}).get("S")


def measure(members: int, from_shards: int, to_shards: int, seed: int = 1) -> dict[str, Any]:
    """Load a board, move it, check it, on a DynamoDB Local of its own: the figures of the
    copy, the clean-up and both (``make bench`` keeps them as its re-sharding row)."""
    server = DynamoDBLocal.start()
    try:
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
        client = boto3.client("dynamodb", endpoint_url=server.endpoint, region_name="us-east-1")
        spec = template_module.read(f"rsh{uuid.uuid4().hex[:6]}-")
        create_tables(client, spec)
        store = Database.connect(spec.settings(), client=client)
        clock = MovableClock()
        boards = BoardService(store.boards, clock, Timing())
        boards.put_board(BOARD, board_request({"shards": from_shards, "operator": "set"}))
        say(f"loading {members:,} members on {from_shards} shards")
        scores = load(store, client, members, from_shards, seed)
        worker = ReshardService(boards, store.reshards, store.index)
        worker.start(BOARD, to_shards)
        say(f"moving to {to_shards} shards")
        clock.moment += boards.timing.wait
        copy = run_phase(worker, lambda report: store.boards.get_board(BOARD).settings.index == "B")  # type: ignore[union-attr]
        clock.moment += boards.timing.wait + boards.timing.margin
        clean = run_phase(worker, lambda report: report.ended > 0)
        want = {m: keys.member_partition(BOARD, ALL_TIME, m, "B", to_shards) for m in scores}
        wrong = [
            member for member, item in score_items(store, scores) if index_keys(item) != (None, want[member])
        ]
    finally:
        server.stop()
    phases = {"copy": copy, "cleanUp": clean, "both": copy + clean}
    return {
        "members": members,
        "fromShards": from_shards,
        "toShards": to_shards,
        "machine": machine(os.getloadavg()),
        "misplaced": len(wrong),
        "phases": {name: figures(members, measured) for name, measured in phases.items()},
    }


def figures(members: int, measured: Measured) -> dict[str, float]:
    rate = members / measured.seconds if measured.seconds else 0.0
    return {
        "seconds": measured.seconds,
        "membersPerSecond": rate,
        "wcuPerMember": measured.write_units / members,
        "rcuPerMember": measured.read_units / members,
        "minutesPerMillion": 1_000_000 / rate / 60 if rate else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=20_000)
    parser.add_argument("--from-shards", type=int, default=3)
    parser.add_argument("--to-shards", type=int, default=17)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    result = measure(args.members, args.from_shards, args.to_shards, args.seed)
    print(f"machine: {result['machine']}")
    print(f"board: {args.members:,} members, {args.from_shards} -> {args.to_shards} shards")
    for key, name in PHASES.items():
        shown = result["phases"][key]
        print(
            f"{name}: {args.members:,} members in {shown['seconds']:,.1f} s"
            f" ({shown['membersPerSecond']:,.0f} members/s, one worker);"
            f" per member {shown['wcuPerMember']:.2f} WCU, {shown['rcuPerMember']:.3f} RCU;"
            f" a million members: {shown['minutesPerMillion']:,.1f} min"
        )
    print(f"members not keyed in the new index only, on their new shard: {result['misplaced']}")
    return 1 if result["misplaced"] else 0


if __name__ == "__main__":
    sys.exit(main())
