"""``make bench-reshard N=20000``: what a re-shard's backfill costs and how fast it goes.

    python -m bench.reshardrun [--members 20000] [--from-shards 3] [--to-shards 17]

It starts a DynamoDB Local of its own (in memory) with the template's tables, loads a board
of ``--members`` members on ``--from-shards`` shards in bulk (the items the service writes,
``bench.load``), starts a move to ``--to-shards`` (``podium.resharding``, past its switch
on a clock of its own), and runs the worker in this process until the move ends, measuring
every DynamoDB request it makes (``podium.dal.usage``: DynamoDB Local's consumed capacity,
the index's writes included). It prints the members moved, the seconds it took, members a
second, WCU and RCU per member moved, and the time a million members would take at that
rate; then checks that every score item sits on its shard under the new count. The stream
consumers do not run here: what each move costs them is in docs/streams.md's figures for a
record that changes no score.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import boto3

from bench.load import batch_write, profile_item
from bench.loadrun import machine, say
from devstack import template as template_module
from devstack.dynamodb_local import DynamoDBLocal
from devstack.stack import create_tables
from podium import keys
from podium.boards import BoardService
from podium.config import Settings
from podium.dal import Database, schema, usage
from podium.dal.codecs import score_attributes
from podium.layouts import Timing
from podium.models import BoardSettings, ScoreState
from podium.periods import ALL_TIME
from podium.resharding import ReshardService
from podium.validation import board_request

BOARD = "resharded"
START = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


class MovableClock:
    """The bench's clock: the move is started at START and run after its switch."""

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=20_000)
    parser.add_argument("--from-shards", type=int, default=3)
    parser.add_argument("--to-shards", type=int, default=17)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    server = DynamoDBLocal.start()
    try:
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
        client = boto3.client("dynamodb", endpoint_url=server.endpoint, region_name="us-east-1")
        spec = template_module.read(f"rsh{uuid.uuid4().hex[:6]}-")
        create_tables(client, spec)
        store = Database.connect(Settings(table_name=spec.table_names["LeaderboardTable"]), client=client)
        clock = MovableClock()
        boards = BoardService(store.boards, clock, Timing())
        boards.put_board(BOARD, board_request({"shards": args.from_shards, "operator": "set"}))
        say(f"loading {args.members:,} members on {args.from_shards} shards")
        scores = load(store, client, args.members, args.from_shards, args.seed)
        worker = ReshardService(boards, store.reshards, store.index)
        worker.start(BOARD, args.to_shards)
        clock.moment += boards.timing.begin
        say(f"moving to {args.to_shards} shards")
        began = time.monotonic()
        moved = 0
        with usage.measuring() as used:
            while True:
                report = worker.run_reshards(timedelta(minutes=10))
                moved += report.moved
                if report.ended:
                    break
        seconds = time.monotonic() - began
        wrong = [
            member
            for member in scores
            if (store.tables.get(schema.score_key(BOARD, member, ALL_TIME)) or {}).get("rpk", {}).get("S")
            != keys.rank_partition_key(BOARD, ALL_TIME, keys.shard_of(member, args.to_shards))
        ]
    finally:
        server.stop()
    rate = moved / seconds if seconds else 0.0
    print(f"machine: {machine(os.getloadavg())}")
    print(f"board: {args.members:,} members, {args.from_shards} -> {args.to_shards} shards")
    print(f"moved: {moved:,} members in {seconds:,.1f} s ({rate:,.0f} members/s, one worker)")
    if moved:
        print(f"per member moved: {used.write_units / moved:.2f} WCU, {used.read_units / moved:.3f} RCU")
        print(f"a million members at this rate: {1_000_000 / rate / 60:,.1f} min")
    print(f"members not on their new shard: {len(wrong)}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
