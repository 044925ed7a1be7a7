"""``make bench-treewrites``: what the stream consumer writes for one score change on a
board much larger than a batch, where a batch's changes rarely share a node of the count
tree (what the planner's model of the tree's writes must reproduce: ``planner.capacity``'s
``MEASURED_OLD_FAR_WCU`` and ``MEASURED_OLD_NEAR_WCU`` for the layout it measured).

    python -m bench.treewrites [--members 1000000] [--changes 1000] [--batches 1,100,1000]

It starts a DynamoDB Local of its own (in memory, ``bench.run.own_dynamodb``; its log in
``bench-data/treewrites/``) with the template's tables, loads a
``set`` board of ``--members`` in bulk and builds its head and count tree
(``bench.churn.loaded_board``), then switches the table's stream on. For each batch size,
and for two kinds of change, it sets ``--changes`` scores through the service's own write
path (``MemberService.submit_score``), reads the records from the stream, and hands them
to the aggregator (``Aggregator.keep_batch``, the whole batch's work: heads, counts, count
tree) in batches of that size, measuring every DynamoDB request it makes (DynamoDB Local's
consumed capacity, ``bench.measure``). The kinds:

- **far**: a random member to a random score (a new best far from the old, or any change
  on a board whose scores spread): the member changes leaves, two leaf writes and a report
  up each side;
- **near**: a random member one point up (the smallest increment): the member stays in its
  leaf, one leaf write.

It prints the aggregator's WCU per record for each, and checks the tree against a sorted
list at the end: ``podium.consistency``'s check of the board (what ``podium check`` runs).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench.churn import loaded_board
from bench.load import member_id
from bench.loadrun import machine, say
from bench.measure import Recorder, Sample, create_tables
from bench.run import local_client, own_dynamodb
from devstack import template
from devstack.streamtail import StreamTail
from podium.dal import Database
from podium.inspection import Kind
from podium.stream.aggregate import Aggregator
from podium.stream.filters import wanted as handed
from podium.wiring import Services

BOARD = "tree-writes"
KINDS = ("far", "near")
LOG = Path(__file__).resolve().parent.parent / "bench-data" / "treewrites" / "dynamodb-local.log"


def changes(draw: random.Random, scores: list[int], kind: str, count: int) -> dict[int, int]:
    """``count`` members (distinct) and their new scores."""
    chosen = draw.sample(range(len(scores)), count)
    if kind == "near":
        return {member: scores[member] + 1 for member in chosen}
    top = max(scores)
    return {member: draw.randrange(0, top + 1) for member in chosen}


def measure(members: int, count: int, batches: list[int], shards: int = 10, seed: int = 1) -> dict[str, Any]:
    with own_dynamodb(LOG) as server:
        client = local_client(server.endpoint)
        streams = local_client(server.endpoint, "dynamodbstreams")
        settings = create_tables(client, f"trw{uuid.uuid4().hex[:6]}-")  # the stream on once loaded
        say(f"loading {members:,} members on {shards} shards, building the head and count tree")
        population, arn = loaded_board(client, settings, BOARD, shards, members, seed)
        scores = list(population.scores[:members])
        store = Database.connect(settings, client=client)
        writer = Services(store)
        recorder = Recorder()
        consuming = Database.connect(settings, client=recorder.attach(local_client(server.endpoint)))
        aggregator = Aggregator(consuming, Services(consuming).boards.settings, lambda: datetime.now(UTC))
        tail = StreamTail(streams, arn)
        tail.read()
        # what the event source mapping hands the aggregator (not the tree's own writes)
        patterns = next(
            c.filters for c in template.read("").stream_consumers() if c.function == "AggregatorFunction"
        )
        draw = random.Random(seed)
        runs = []
        for batch in batches:
            for kind in KINDS:
                wanted = changes(draw, scores, kind, count)
                for member, score in wanted.items():
                    writer.members.submit_score(BOARD, member_id(member), Decimal(score))
                    scores[member] = score
                records = [record for record in tail.read() if handed(patterns, record)]
                if len(records) != count:
                    raise RuntimeError(f"{len(records)} records for {count} score changes")
                wcu = 0.0
                for start in range(0, len(records), batch):
                    chunk = records[start : start + batch]
                    with recorder.window() as window:
                        failed = aggregator.keep_batch(chunk)
                    if failed:
                        raise RuntimeError(f"the aggregator failed {len(failed)} records")
                    wcu += Sample.of(window).wcu
                runs.append(
                    {
                        "batch": batch,
                        "kind": kind,
                        "records": len(records),
                        "wcuPerRecord": wcu / len(records),
                    }
                )
                say(
                    f"batches of {batch}, {kind} moves: {wcu / len(records):.2f} WCU a record "
                    f"({len(records)} records)"
                )
        say("checking the board (podium.consistency: index, head, counts, count tree)")
        report = writer.checker.check(BOARD)
        # the bulk load writes score items alone, no profiles: every member is an orphan here,
        # and the board's memberCount (of profiles) is the load's
        wrong = [d for d in report.differences if d.kind not in (Kind.ORPHAN_SCORE, Kind.MEMBER_COUNT)]
    return {
        "members": members,
        "changes": count,
        "machine": machine(os.getloadavg()),
        "runs": runs,
        "consistent": not wrong,
        "differences": [str(d) for d in wrong[:5]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--members", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=1_000)
    parser.add_argument("--batches", default="1,100,1000", help="records per aggregator invocation")
    args = parser.parse_args()
    result = measure(args.members, args.changes, [int(b) for b in args.batches.split(",")])
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
