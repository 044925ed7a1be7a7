"""``podium import BOARD FILE``: members and scores from a CSV or JSON Lines file, each
record an admin's ``PUT /boards/{boardId}/members/{memberId}`` through the typed client,
resumable after an interruption from the checkpoint next to the file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import typer

import podium_client
from podium_cli.checkpoint import Checkpoint, ImportKey, default_path
from podium_cli.connection import ApiOption, TokenOption, admin_client, api_url
from podium_cli.importer import Importer, ImportResult, LineRefused
from podium_cli.output import console, errors, print_line
from podium_cli.progress import progress_bar
from podium_cli.readers import FORMATS, FileError, format_of, read_records

BAD_LINES_SHOWN = 20
INTERRUPTED = 130  # the shell's status for a command stopped by Ctrl-C


@dataclass
class ClientWriter:
    """The importer's writes, as the typed client sends them (with its retries of 429s,
    5xx and dropped connections: a PUT is idempotent)."""

    client: podium_client.PodiumClient

    def put_member(self, board_id: str, member_id: str, score: Decimal, data: dict[str, Any] | None) -> None:
        try:
            self.client.put_member(board_id, member_id, score=score, data=data)
        except (podium_client.ValidationError, podium_client.PayloadTooLarge) as refused:
            raise LineRefused(refused.message) from refused


def import_command(
    board: Annotated[str, typer.Argument(help="The board to import into (it must exist)")],
    file: Annotated[
        Path, typer.Argument(help="A .csv or .jsonl file", exists=True, dir_okay=False, readable=True)
    ],
    file_format: Annotated[
        str | None,
        typer.Option("--format", help=f"{' or '.join(FORMATS)} [default: from the file's extension]"),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            min=1, max=100, help="Requests in flight at once (the client keeps up to 100 connections)"
        ),
    ] = 16,
    rate: Annotated[
        float | None, typer.Option(min=0.1, help="At most this many members a second [default: no limit]")
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Stop at the first bad line instead of skipping it")
    ] = False,
    checkpoint_path: Annotated[
        Path | None,
        typer.Option("--checkpoint", help="The checkpoint file [default: FILE.BOARD.podium-import]"),
    ] = None,
    restart: Annotated[
        bool, typer.Option("--restart", help="Ignore an earlier run's checkpoint: send every line")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON")] = False,
    api: ApiOption = None,
    token: TokenOption = None,
) -> None:
    """Import members and scores from a CSV or JSON Lines file (PUT .../members/{memberId}
    through the API, --workers at a time), resumably.

    CSV: a header with memberId and score, optionally data (a JSON object); other columns
    become fields of the data (text), and rank is ignored. JSON Lines: {"memberId": ...,
    "score": ..., "data": {...}} a line. A bad line is reported with its line number and
    skipped (--strict: the import stops there). Every line done is written down in a
    checkpoint as it is answered; run the same command again after an interruption (Ctrl-C,
    a kill, a lost connection) and it sends only what was not done. docs/cli.md says more.

    Example: podium import images members.csv --workers 16
    """
    try:
        chosen_format = format_of(file, file_format)
        total = sum(1 for _ in read_records(file, chosen_format))
    except FileError as error:
        raise typer.BadParameter(str(error), param_hint="FILE") from None
    url = api_url(api)
    key = ImportKey.of(file, board, url)
    with admin_client(url, token) as client:
        client.get_board(board)  # no board, no token: said before anything is sent
        checkpoint = Checkpoint.open(checkpoint_path or default_path(file, board), key, restart=restart)
        if checkpoint.resumed:
            errors.print(f"resuming: {checkpoint.resumed:,} of {total:,} lines were done by an earlier run")
        with progress_bar() as bar:
            task = bar.add_task(f"import into {board}", total=total, completed=checkpoint.resumed)
            importer = Importer(
                ClientWriter(client),
                board,
                checkpoint,
                workers=workers,
                rate=rate,
                strict=strict,
                on_record=lambda: bar.advance(task),
            )
            result = importer.run(read_records(file, chosen_format))
    if result.complete:
        checkpoint.remove()
    else:
        checkpoint.close()
    report(result, checkpoint, as_json)


def report(result: ImportResult, checkpoint: Checkpoint, as_json: bool) -> None:
    """The summary, then the exit status: 0 when every line was imported, 1 when lines were
    skipped or the import failed, 130 when it was interrupted."""
    if as_json:  # counts and seconds, no score: the standard encoder is right
        print_line(json.dumps(summary_json(result, checkpoint)))
    else:
        print_summary(result, checkpoint)
    if result.interrupted:
        raise typer.Exit(INTERRUPTED)
    if result.failure is not None or result.bad_lines:
        raise typer.Exit(1)


def summary_json(result: ImportResult, checkpoint: Checkpoint) -> dict[str, Any]:
    return {
        "records": result.records,
        "sent": result.sent,
        "doneEarlier": result.skipped_done,
        "badLines": [{"line": bad.line, "reason": bad.reason} for bad in result.bad_lines],
        "seconds": round(result.seconds, 3),
        "membersPerSecond": round(result.rate, 1),
        "complete": result.complete,
        "interrupted": result.interrupted,
        "failure": result.failure,
        "checkpoint": None if result.complete else str(checkpoint.path),
    }


def print_summary(result: ImportResult, checkpoint: Checkpoint) -> None:
    for bad in result.bad_lines[:BAD_LINES_SHOWN]:
        errors.print(f"line {bad.line}: {bad.reason}", markup=False, soft_wrap=True)
    if len(result.bad_lines) > BAD_LINES_SHOWN:
        errors.print(f"... and {len(result.bad_lines) - BAD_LINES_SHOWN:,} more bad lines")
    earlier = f"; {result.skipped_done:,} done by an earlier run" if result.skipped_done else ""
    skipped = f"; {len(result.bad_lines):,} bad lines skipped" if result.bad_lines else ""
    console.print(
        f"imported {result.sent:,} members in {result.seconds:,.1f} s: "
        f"{result.rate:,.0f} members/s{earlier}{skipped}"
    )
    if not result.complete:
        why = "interrupted" if result.interrupted else f"stopped: {result.failure}"
        errors.print(f"{why}\nrun the same command again to resume from {checkpoint.path}", markup=False)
