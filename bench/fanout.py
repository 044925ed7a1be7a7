"""``python -m bench.fanout [--followers N] [--chunks 100,500,1000]``: what one notifier
invocation costs when a popular member's score change is told a chunk of followers at a
time (docs/streams.md, "Popular members: the fan-out in chunks").

On DynamoDB Local (started here on a free port, or ``AWS_ENDPOINT_URL_DYNAMODB``), a member
followed by N members goes from below all of them to above all of them: every follower is
overtaken, the worst case, so every follower costs a notification. The fan-out item is then
continued one invocation at a time, as its stream records would make the notifier do
(``Notifier.begin`` then ``continue_fanout``), and each invocation's DynamoDB requests,
capacity units and time are recorded. SNS is not called: a publish per notification is
counted, not timed. Times are this machine's, against DynamoDB Local: they bound nothing
in AWS, but show how the time grows with the chunk.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

from bench.measure import Recorder, Sample, metered_database
from devstack.stack import use_local_credentials
from podium import keys
from podium.dal import Database, codecs, schema
from podium.models import BoardSettings, Notification, Rivals, ScoreState
from podium.stream.notify import Notifier
from podium.stream.records import FanoutJob

BOARD = "fanout"
RIVAL = "star"
SETTINGS = BoardSettings(shards=10)


class CountingPublisher:
    """Stands in for SNS: counts the publishes."""

    def __init__(self) -> None:
        self.count = 0

    def publish(self, notification: Notification) -> None:
        self.count += 1


def seed(db: Database, followers: int) -> None:
    """Followers with scores 1,000 to 1,000 + N, each following the rival (score items,
    rivals lists and follower edges, as the service writes them)."""
    items: list[dict[str, Any]] = []
    for i in range(followers):
        member = f"fan-{i:06d}"
        state = ScoreState.first(Decimal(1000 + i), 1_000_000)
        place = keys.placement(BOARD, SETTINGS, member, state, "all")
        items.append(
            {
                **schema.score_key(BOARD, member, "all"),
                **codecs.score_attributes(state, place.partition, place.sort_key, None),
            }
        )
        items.append(codecs.rivals_item(BOARD, member, Rivals(ids=(RIVAL,), since={RIVAL: 0}, version=1)))
        items.append(schema.edge_key(BOARD, RIVAL, member))
    requests = [{"PutRequest": {"Item": item}} for item in items]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(db.tables.batch_write, [requests[i : i + 25] for i in range(0, len(requests), 25)]))


def measure(db: Database, recorder: Recorder, chunk: int) -> dict[str, Any]:
    """One change of the rival told to every follower, ``chunk`` per invocation."""
    publisher = CountingPublisher()
    notifier = Notifier(db.social, db.members, db.index, publisher, lambda _: SETTINGS, chunk)
    job = FanoutJob(uuid.uuid4().hex, BOARD, RIVAL, "all", Decimal(0), Decimal(10**9), 2_000_000)
    samples = []
    notifier.begin()
    with recorder.window() as window:
        notifier.start_fanout(job, SETTINGS)
    samples.append(Sample.of(window))
    while True:
        pending = [p for p in db.social.pending_fanouts(BOARD, RIVAL) if p[0] == job.event_id]
        if not pending:
            break
        notifier.begin()
        with recorder.window() as window:
            notifier.continue_job(FanoutJob.stored(BOARD, RIVAL, *pending[0]))
        samples.append(Sample.of(window))
    full = samples[:-1] if len(samples) > 1 else samples  # the last one may be short
    return {
        "chunk": chunk,
        "invocations": len(samples),
        "notifications": publisher.count,
        "requests": statistics.median(s.requests for s in full),
        "rcu": statistics.median(s.rcu for s in full),
        "wcu": statistics.median(s.wcu for s in full),
        "seconds": statistics.median(s.seconds for s in full),
        "max_seconds": max(s.seconds for s in samples),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fanout", description=__doc__)
    parser.add_argument("--followers", type=int, default=2000)
    parser.add_argument("--chunks", default="100,500,1000", help="chunk sizes to measure, comma-separated")
    args = parser.parse_args()
    use_local_credentials()

    with metered_database(f"fanout{uuid.uuid4().hex[:6]}-") as (db, recorder):
        started = time.perf_counter()
        seed(db, args.followers)
        print(f"seeded {args.followers:,} followers in {time.perf_counter() - started:.0f} s\n")
        print(
            "| chunk | invocations | requests | RCU | WCU | seconds (median) | seconds (max) | per follower |"
        )
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for chunk in (int(c) for c in args.chunks.split(",")):
            row = measure(db, recorder, chunk)
            assert row["notifications"] == args.followers, row
            print(
                f"| {chunk:,} | {row['invocations']} | {row['requests']:.0f} | {row['rcu']:.1f} | "
                f"{row['wcu']:.0f} | {row['seconds']:.2f} | {row['max_seconds']:.2f} | "
                f"{row['seconds'] / chunk * 1000:.1f} ms |"
            )


if __name__ == "__main__":
    main()
