"""``podium scores``: the members whose score lies in a band, with their ranks, through
the API (``GET /boards/{boardId}/scores``, page after page)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Annotated

import typer
from rich.table import Table

from podium_cli.connection import ApiOption, TokenOption, admin_client
from podium_cli.output import console, number, print_json
from podium_client import Entry

MAX_PAGE = 1000  # the API's largest page


def parse_bound(text: str | None, option: str) -> Decimal | None:
    """A band's end as typed (``82.3``, ``-5``, ``1e3``), exactly: never through a float."""
    if text is None:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise typer.BadParameter(f"not a number: {text!r}", param_hint=option) from None
    if not value.is_finite():
        raise typer.BadParameter("must be a finite number", param_hint=option)
    return value


def band_table(board: str, entries: list[Entry], total: int | None) -> Table:
    caption = f"of {total:,} members on the board" if total is not None else None
    table = Table("rank", "member", "score", title=f"board {board}", caption=caption)
    table.columns[0].justify = table.columns[2].justify = "right"
    table.columns[1].no_wrap = True  # an id cut in two cannot be copied
    for entry in entries:
        table.add_row(f"{entry.rank:,}", entry.member_id, number(entry.score))
    return table


def scores_command(
    board: Annotated[str, typer.Argument(help="The board's id")],
    least: Annotated[
        str | None, typer.Option("--min", help="The lowest score of the band (inclusive)", show_default=False)
    ] = None,
    most: Annotated[
        str | None,
        typer.Option("--max", help="The highest score of the band (inclusive)", show_default=False),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many entries to print at most")] = 10,
    period: Annotated[
        str | None, typer.Option("--period", help="previous, or a period id, on a time-windowed board")
    ] = None,
    api: ApiOption = None,
    token: TokenOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON (the API's entries) instead of a table")
    ] = False,
) -> None:
    """The members whose score lies between --min and --max (each optional and inclusive),
    better first, each with its board-wide rank (GET /boards/{boardId}/scores).

    Example: podium scores images --min 50 --max 90
    """
    low, high = parse_bound(least, "--min"), parse_bound(most, "--max")
    if low is not None and high is not None and low > high:
        raise typer.BadParameter(f"--min {least} is above --max {most}", param_hint="--min")
    entries: list[Entry] = []
    total = None
    with admin_client(api, token) as client:
        cursor = None
        while len(entries) < limit:
            size = min(limit - len(entries), MAX_PAGE)
            page = client.scores(board, min=low, max=high, limit=size, cursor=cursor, period=period)
            entries.extend(page.entries)
            total, cursor = page.total, page.next_cursor
            if cursor is None:
                break
    if as_json:
        print_json([{"rank": e.rank, "memberId": e.member_id, "score": e.score} for e in entries])
    else:
        console.print(band_table(board, entries, total))
