"""``podium redrive`` and ``podium verify``: the operator's commands
that act on the table and the failure queue directly, because no route of the API does
what they do. Each runs the same code as ``python -m devstack redrive|verify``
(devstack/redrive.py, verify.py), against the running ``make run`` by
default, or a deployed stack with ``--aws --stack-name NAME`` and your AWS credentials."""

from __future__ import annotations

import argparse
from typing import Annotated

import typer

TablePrefixOption = Annotated[
    str,
    typer.Option(
        "--table-prefix",
        help="The tables' prefix on AWS_ENDPOINT_URL_DYNAMODB (as `python -m devstack --table-prefix`)",
    ),
]
AwsFlag = Annotated[
    bool, typer.Option("--aws", help="A deployed stack, with your AWS credentials and region")
]
StackNameOption = Annotated[str | None, typer.Option("--stack-name", help="The deployed stack (with --aws)")]
TableOption = Annotated[
    str | None, typer.Option("--table", help="The table's name as deployed (then nothing local is assumed)")
]


def _exit(status: int) -> None:
    if status:
        raise typer.Exit(status)


def redrive_command(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Read and report, replay nothing")] = False,
    discard_gone: Annotated[
        bool,
        typer.Option(
            "--discard-gone",
            help="Delete the messages whose records are past the stream's retention "
            "(check their boards first)",
        ),
    ] = False,
    aws: AwsFlag = False,
    stack_name: Annotated[
        str | None,
        typer.Option("--stack-name", help="The deployed stack (with --aws): its StreamFailureQueueUrl"),
    ] = None,
    queue_url: Annotated[
        str | None,
        typer.Option("--queue-url", help="The failure queue's URL (with --aws), instead of --stack-name"),
    ] = None,
    table_prefix: TablePrefixOption = "",
) -> None:
    """Replay the stream records that failed every retry (the StreamFailureQueue) through
    the consumer that failed them. Uses the queue, the table's stream and the consumers
    directly (SQS, DynamoDB Streams, Lambda), not the API. docs/operations.md.

    Example: podium redrive --dry-run
    """
    from devstack import redrive

    _exit(
        redrive.main(
            argparse.Namespace(
                dry_run=dry_run,
                discard_gone=discard_gone,
                aws=aws,
                stack_name=stack_name,
                queue_url=queue_url,
                table_prefix=table_prefix,
            )
        )
    )


def verify_command(
    board: Annotated[str, typer.Argument(help="The board's id")],
    period: Annotated[
        str | None, typer.Option(help="current (the default), previous, or a period id like 2026-W47")
    ] = None,
    repair: Annotated[
        bool, typer.Option("--repair", help="Put right what differs, then check again")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON")] = False,
    wait: Annotated[
        float, typer.Option(help="Seconds the re-check after a repair waits for the stream to carry it")
    ] = 30.0,
    aws: AwsFlag = False,
    stack_name: StackNameOption = None,
    table: TableOption = None,
    table_prefix: TablePrefixOption = "",
) -> None:
    """Check a board's ranking index, head, count tree and counts against its items (and
    repair them with --repair). Reads the table directly (DynamoDB), not the API. Exit
    status 0 consistent, 1 differences remain, 2 no such board or stack.

    Example: podium verify images --repair
    """
    from devstack import verify

    _exit(
        verify.verify(
            argparse.Namespace(
                board=board,
                period=period,
                repair=repair,
                json=as_json,
                wait=wait,
                aws=aws,
                stack_name=stack_name,
                table=table,
                table_prefix=table_prefix,
            )
        )
    )
