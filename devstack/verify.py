"""``python -m devstack verify BOARD``: the consistency checker of one board
(``podium.consistency``), against the tables of the running ``make run``
(``.devstack/running.json``), or of ``--table-prefix`` on the DynamoDB at
``AWS_ENDPOINT_URL_DYNAMODB``, or the table ``--table`` names, or, with ``--aws
--stack-name NAME``, a deployed stack's table (its output LeaderboardTableName), with
the environment's AWS credentials.

Exit status: 0 when the board is consistent (or everything found was repaired and a
re-check is clean), 1 when differences remain, 2 on a usage error (no stack, no such
board, a period the board does not have)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from devstack import template as template_module
from devstack.stack import RUNNING, use_local_credentials
from podium.config import Settings

TABLE_OUTPUT = "LeaderboardTableName"  # the deployed stack's output naming its streamed table
STATE_TABLE_OUTPUT = "StateTableName"  # ... and its table without a stream

if TYPE_CHECKING:
    from podium.consistency import ConsistencyReport

USAGE_ERROR = 2


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser(
        "verify",
        help="check a board's index, head, count tree and counts against its items (and repair them)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("board", help="the board's id")
    parser.add_argument("--period", help="current (the default), previous, or a period id like 2026-W47")
    parser.add_argument("--repair", action="store_true", help="put right what differs, then check again")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_table_arguments(parser)
    parser.add_argument(
        "--wait",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long the re-check after a repair waits for the stream to carry it (default 30)",
    )


def add_table_arguments(parser: argparse.ArgumentParser) -> None:
    """Which table: the local stack's (the default), or a deployed one's."""
    parser.add_argument(
        "--table-prefix",
        default=argparse.SUPPRESS,
        help="the prefix of the tables on AWS_ENDPOINT_URL_DYNAMODB (as `python -m devstack --table-prefix`)",
    )
    parser.add_argument(
        "--table", help="the streamed table's name as deployed (then nothing local is assumed)"
    )
    parser.add_argument("--state-table", help="with --table: the state table's name as deployed")
    parser.add_argument(
        "--aws", action="store_true", help="against a deployed stack, with your AWS credentials and region"
    )
    parser.add_argument(
        "--stack-name", help="the deployed stack (with --aws): its LeaderboardTableName and StateTableName"
    )


def table_settings(args: argparse.Namespace) -> Settings | str:
    """The settings naming the board's table, or why there are none."""
    if args.table:
        return Settings(table_name=args.table, state_table_name=args.state_table or "")
    if args.aws:
        from podium.dal.streams import stack_output

        if not args.stack_name:
            return "--aws needs --stack-name (or --table)"
        try:
            return Settings(
                table_name=stack_output(args.stack_name, TABLE_OUTPUT),
                state_table_name=stack_output(args.stack_name, STATE_TABLE_OUTPUT),
            )
        except Exception as error:  # no such stack, no credentials: a usage error
            return f"the stack {args.stack_name}: {error}"
    use_local_credentials()  # DynamoDB Local takes any: never send real ones to it
    prefix = getattr(args, "table_prefix", "")
    if not os.environ.get("AWS_ENDPOINT_URL_DYNAMODB"):
        if not RUNNING.exists():
            return "no local stack is running: start `make run`, or set AWS_ENDPOINT_URL_DYNAMODB"
        running = json.loads(RUNNING.read_text())
        os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = running["dynamodb"]
        prefix = running["tablePrefix"]
    spec = template_module.read(prefix)
    return spec.settings()


def verify(args: argparse.Namespace) -> int:
    from podium.dal import Database
    from podium.errors import NotFound, ValidationError
    from podium.wiring import Services

    settings = table_settings(args)
    if isinstance(settings, str):
        print(settings, file=sys.stderr)
        return USAGE_ERROR
    checker = Services(Database.connect(settings)).checker
    checker.stream_wait_s = args.wait
    try:
        report = checker.check(args.board, period=args.period, repair=args.repair)
    except (NotFound, ValidationError) as error:
        print(error.message, file=sys.stderr)
        return USAGE_ERROR
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(describe(report))
    return 0 if report.ok else 1


def describe(report: ConsistencyReport) -> str:
    from podium.consistency import QUIET_BOARD

    counts = report.counts
    lines = [
        f"board {report.board_id}, period {report.period}: {_many(counts.get('members', 0), 'member')} "
        f"({counts.get('hidden', 0)} hidden), {_many(counts.get('scores', 0), 'score item')}, "
        f"{_many(counts.get('indexEntries', 0), 'index entry', 'index entries')}, "
        f"a head of {_many(counts.get('headKeys', 0), 'key')}, "
        f"a count tree of {_many(counts.get('treeNodes', 0), 'node')}",
        f"({QUIET_BOARD})",
    ]
    if report.repaired:
        lines.append(f"repaired {len(report.repaired)}:")
        lines += [f"  {d.kind}: {d.detail}" for d in report.repaired]
    lines += [f"note: {note}" for note in report.notes]
    if report.ok:
        lines.append("consistent" + (" after the repair" if report.repaired else ""))
    else:
        lines.append(f"{_many(len(report.differences), 'difference')}:")
        lines += [f"  {d.kind}: {d.detail}" for d in report.differences]
    return "\n".join(lines)


def _many(count: int, one: str, more: str | None = None) -> str:
    return f"{count} {one if count == 1 else more or one + 's'}"
