"""``podium export BOARD``: the whole listing (rank, memberId, score, data), paged
through ``GET /boards/{boardId}/top?withData=true`` by the typed client."""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, TextIO

import typer

from podium_cli.connection import ApiOption, TokenOption, admin_client
from podium_cli.output import errors
from podium_cli.progress import progress_bar
from podium_client import Entry, PodiumClient, codec

PAGE_SIZE = 1000  # the most `top` gives a page
CSV_HEADER = ("rank", "memberId", "score", "data")


def pages(client: PodiumClient, board: str, period: str | None) -> Iterator[tuple[int, list[Entry]]]:
    """The listing a page at a time, with the board's total as of each page."""
    cursor: str | None = None
    while True:
        page = client.top(board, limit=PAGE_SIZE, cursor=cursor, with_data=True, period=period)
        yield page.total, list(page.entries)
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def csv_line(entry: Entry) -> list[str]:
    return [str(entry.rank), entry.member_id, codec.number_text(entry.score), codec.dumps(entry.data or {})]


def jsonl_line(entry: Entry) -> str:
    return codec.dumps(
        {"rank": entry.rank, "memberId": entry.member_id, "score": entry.score, "data": entry.data or {}}
    )


@contextmanager
def destination(output: Path | None) -> Iterator[TextIO]:
    if output is None or str(output) == "-":
        yield sys.stdout
        return
    with output.open("w", encoding="utf-8", newline="") as text:
        yield text


def export_command(
    board: Annotated[str, typer.Argument(help="The board to export")],
    period: Annotated[
        str | None, typer.Option(help="current (the default), previous, or a period id like 2026-W47")
    ] = None,
    file_format: Annotated[str, typer.Option("--format", help="csv or jsonl")] = "csv",
    output: Annotated[Path | None, typer.Option("-o", "--output", help="The file [default: stdout]")] = None,
    api: ApiOption = None,
    token: TokenOption = None,
) -> None:
    """Export a board's whole listing: rank, memberId, score and data, best first (GET
    .../top?withData=true, page after page, through the API).

    The CSV has the columns rank, memberId, score, data (JSON); JSON Lines has one object
    a line. `podium import` reads both back (it ignores rank). A board written during the
    export is read as it is when each page is read.

    Example: podium export images --format jsonl -o images.jsonl
    """
    if file_format not in ("csv", "jsonl"):
        raise typer.BadParameter("csv or jsonl", param_hint="--format")
    written = 0
    with admin_client(api, token) as client, destination(output) as text, progress_bar() as bar:
        task = bar.add_task(f"export {board}", total=None)
        writer = csv.writer(text, lineterminator="\n")
        if file_format == "csv":
            writer.writerow(CSV_HEADER)
        for total, entries in pages(client, board, period):
            for entry in entries:
                if file_format == "csv":
                    writer.writerow(csv_line(entry))
                else:
                    text.write(jsonl_line(entry) + "\n")
            written += len(entries)
            bar.update(task, total=max(total, written), completed=written)
    errors.print(f"exported {written:,} members of {board}" + (f" to {output}" if output else ""))
