"""``python -m bench.periodresults [--members N] [--announce-top K] [--shards S]``: what
announcing a period's final results costs per member announced (docs/periods.md,
docs/capacity.md "Period results").

On DynamoDB Local (started here on a free port, or ``AWS_ENDPOINT_URL_DYNAMODB``), a weekly
board of N members with scores in week 2026-W48 (score items and the period's count, written
as the service writes them), its clock then moved past the end of the week and the job's
grace. The job (``podium.results.PeriodResults``) runs once, announcing the week to its top
K (default: all N), then twice more: a run with nothing due, and the same run again. Every
DynamoDB request is recorded with the capacity DynamoDB Local reports, reads at AWS's
minimum of 0.5 RCU (``bench.measure``); SNS is not called: the publishes are counted. Times
are this machine's against DynamoDB Local: they bound nothing in AWS.
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from bench.measure import Sample, metered_database
from devstack.stack import use_local_credentials
from podium import keys, results
from podium.dal import Database, codecs, schema
from podium.models import Notification, ScoreState
from podium.validation import board_request
from podium.wiring import Services

WEEK = "2026-W48"
IN_THE_WEEK = datetime(2026, 11, 25, 12, tzinfo=UTC)
AFTER_THE_END = datetime(2026, 11, 30, tzinfo=UTC) + results.GRACE + timedelta(seconds=1)


class CountingPublisher:
    """Stands in for SNS: counts the publishes."""

    def __init__(self) -> None:
        self.notifications = 0
        self.messages = 0

    def publish(self, notification: Notification) -> None:
        self.notifications += 1

    def publish_message(self, body: Mapping[str, Any], attributes: Mapping[str, str]) -> None:
        self.messages += 1


def seed(service: Services, board: str, members: int) -> None:
    """N members with distinct scores in the week: score items (with their index keys) and
    the period's member count, as the service and its stream would leave them."""
    settings = service.boards.settings(board)
    expires = 2_000_000_000
    items: list[dict[str, Any]] = []
    for i in range(members):
        member = f"player-{i:06d}"
        state = ScoreState.first(Decimal(members - i) / 4, 1_000_000 + i)
        place = keys.placement(board, settings, member, state, WEEK)
        items.append(
            {
                **schema.score_key(board, member, WEEK),
                **codecs.score_attributes(state, place.partition, place.sort_key, expires),
            }
        )
    items.append({**schema.period_count_key(board, WEEK), "memberCount": {"N": str(members)}})
    requests = [{"PutRequest": {"Item": item}} for item in items]
    db = service.db
    assert isinstance(db, Database)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(db.tables.batch_write, [requests[i : i + 25] for i in range(0, len(requests), 25)]))


def row(name: str, sample: Sample, told: int, publishes: int) -> str:
    per = max(told, 1)
    return (
        f"| {name} | {told:,} | {sample.requests:,} | {sample.rcu:,.1f} | {sample.wcu:,.1f} | "
        f"{sample.index_units:,.1f} | {publishes:,} | {sample.requests / per:.2f} | {sample.rcu / per:.2f} | "
        f"{sample.wcu / per:.2f} | {sample.seconds:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.periodresults", description=__doc__)
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--announce-top", type=int, default=None, help="default: every member")
    parser.add_argument("--shards", type=int, default=10)
    args = parser.parse_args()
    announce_top = args.members if args.announce_top is None else args.announce_top
    use_local_credentials()

    with metered_database(f"periods{uuid.uuid4().hex[:6]}-") as (db, recorder):
        clock = {"now": IN_THE_WEEK}
        service = Services(db, clock=lambda: clock["now"])
        board = "weekly-cup"
        body = {
            "reset": "weekly",
            "shards": Decimal(args.shards),
            "announceTop": Decimal(min(announce_top, 10_000)),
        }
        service.boards.put_board(board, board_request(body))
        seed(service, board, args.members)
        clock["now"] = AFTER_THE_END

        publisher = CountingPublisher()
        job = results.PeriodResults(service, publisher)
        lines = []
        for name in ("announce the week", "a run with nothing due", "the same run again"):
            before = publisher.notifications + publisher.messages
            with recorder.window() as window:
                report = job.announce_due(clock["now"])
            lines.append(
                row(
                    name,
                    Sample.of(window),
                    report.told,
                    publisher.notifications + publisher.messages - before,
                )
            )
        assert publisher.notifications == min(announce_top, args.members), publisher.notifications
        assert publisher.messages == 1

    print(
        f"A weekly board of {args.members:,} members, {args.shards} shards, announceTop {announce_top:,}:\n"
    )
    print(
        "| run | members told | requests | RCU | WCU | of which on indexes | SNS publishes "
        "| requests per member | RCU per member | WCU per member | seconds |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
