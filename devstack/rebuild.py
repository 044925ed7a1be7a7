"""``python -m devstack rebuild BOARD`` (``make rebuild BOARD=...``): build a board's count
trees from its ranking index, in every period a read can ask for, and mark the board as
counted from them (``Maintenance.build_count_trees``): the upgrade step for the boards
made before count trees (docs/operations.md, "Upgrading a deployed stack"). ``--unbuilt``
builds every board whose trees were never built.

Against the tables of the running ``make run`` (or of ``--table-prefix`` on the DynamoDB
at ``AWS_ENDPOINT_URL_DYNAMODB``), the tables ``--table`` and ``--state-table`` name, or,
with ``--aws --stack-name NAME``, the tables of a deployed stack (its outputs
LeaderboardTableName and StateTableName),
with the environment's AWS credentials and region. It needs dynamodb:Query,
dynamodb:BatchGetItem, dynamodb:BatchWriteItem, dynamodb:GetItem, dynamodb:PutItem and
dynamodb:UpdateItem on the tables and the index, and cloudformation:DescribeStacks.

A build expects a quiet board: a stream record applied to a tree while it is replaced is
lost. Check the board after (``make verify``), and build again if it names the tree.

Exit status: 0 when every board asked for was built, 2 on a usage error (no stack, no
such board)."""

from __future__ import annotations

import argparse
import sys

from devstack import verify

USAGE_ERROR = 2


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser(
        "rebuild",
        help="build a board's count trees from its index, and count its ranks from them",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("board", nargs="?", help="the board's id")
    parser.add_argument(
        "--unbuilt", action="store_true", help="every board whose trees were never built (made before them)"
    )
    verify.add_table_arguments(parser)


def rebuild(args: argparse.Namespace) -> int:
    from podium.dal import Database
    from podium.errors import NotFound
    from podium.wiring import Services

    if bool(args.board) == bool(args.unbuilt):
        print("name a board, or ask for --unbuilt (not both)", file=sys.stderr)
        return USAGE_ERROR
    settings = verify.table_settings(args)
    if isinstance(settings, str):
        print(settings, file=sys.stderr)
        return USAGE_ERROR
    maintenance = Services(Database.connect(settings)).maintenance
    boards = [args.board] if args.board else maintenance.unbuilt_boards()
    if not boards:
        print("every board's count trees are built")
    for board_id in boards:
        try:
            built = maintenance.build_count_trees(board_id)
        except NotFound as error:
            print(error.message, file=sys.stderr)
            return USAGE_ERROR
        periods = ", ".join(
            f"{period} ({nodes} node{'' if nodes == 1 else 's'})" for period, nodes in built.items()
        )
        print(f"board {board_id}: count trees built: {periods}; its ranks are counted from them", flush=True)
    return 0
