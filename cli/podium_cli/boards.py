"""``podium boards``: list, show, create and configure boards, through the API."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Annotated, Any

import typer

from podium_cli.connection import ApiOption, TokenOption, admin_client
from podium_cli.output import board_json, board_table, boards_table, console, print_json
from podium_client import Limits, codec

app = typer.Typer(
    help="List, show, create and configure boards (through the API, as an admin).",
    epilog="Example: podium boards create images --shards 3, then podium boards show images",
    no_args_is_help=True,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON (the API's shape) instead of a table")]
LIMIT_FIELDS = {"minValue", "maxValue", "maxSubmissionsPerMinute"}


def parse_limits(text: str) -> Limits:
    """``--limits '{"maxValue": 1000, "maxSubmissionsPerMinute": 30}'``; ``{}`` removes them."""
    try:
        given = codec.loads(text)
    except ValueError as error:
        raise typer.BadParameter(f"not JSON: {error}", param_hint="--limits") from None
    if not isinstance(given, dict) or set(given) - LIMIT_FIELDS:
        raise typer.BadParameter(f"a JSON object of {', '.join(sorted(LIMIT_FIELDS))}", param_hint="--limits")
    bound = {name: Decimal(value) if isinstance(value, int) else value for name, value in given.items()}
    per_minute = given.get("maxSubmissionsPerMinute")
    return Limits(bound.get("minValue"), bound.get("maxValue"), per_minute)


LimitsOption = Annotated[
    str | None,
    typer.Option(
        "--limits",
        help='The score bounds and rate, as JSON: \'{"minValue": 0, "maxValue": 1000, '
        "\"maxSubmissionsPerMinute\": 30}'; '{}' removes them",
        show_default=False,
    ),
]
TitleOption = Annotated[str | None, typer.Option("--title", help="Free text, up to 200 characters")]
PublicReadOption = Annotated[
    bool | None,
    typer.Option(
        "--public-read/--no-public-read",
        help="Whether callers without a token may read it",
        show_default=False,
    ),
]
ClientWritesOption = Annotated[
    bool | None,
    typer.Option(
        "--client-writes/--no-client-writes",
        help="Whether players may add themselves and submit their own scores",
        show_default=False,
    ),
]
AnnounceTopOption = Annotated[
    int | None,
    typer.Option("--announce-top", help="Members told of their result when a period ends (0..10000)"),
]


@app.command("list")
def list_boards(api: ApiOption = None, token: TokenOption = None, as_json: JsonFlag = False) -> None:
    """Every board, a row each (GET /boards, page after page).

    Example: podium boards list
    """
    with admin_client(api, token) as client:
        boards = list(client.iter_boards(page_size=100))
    if as_json:
        print_json([board_json(board) for board in boards])
    else:
        console.print(boards_table(boards))


@app.command("show")
def show(
    board: Annotated[str, typer.Argument(help="The board's id")],
    api: ApiOption = None,
    token: TokenOption = None,
    as_json: JsonFlag = False,
) -> None:
    """One board's settings and member count (GET /boards/{boardId}).

    Example: podium boards show images
    """
    with admin_client(api, token) as client:
        found = client.get_board(board)
    if as_json:
        print_json(board_json(found))
    else:
        console.print(board_table(found))


@app.command("create")
def create(
    board: Annotated[str, typer.Argument(help="The new board's id")],
    order: Annotated[str | None, typer.Option(help="desc (higher is better, the default) or asc")] = None,
    operator: Annotated[str | None, typer.Option(help="increment (the default), best or set")] = None,
    tie_break: Annotated[
        str | None, typer.Option("--tie-break", help="shared (the default) or earliest")
    ] = None,
    shards: Annotated[int | None, typer.Option(help="Write shards of its index, 1..100 (default 10)")] = None,
    reset: Annotated[str | None, typer.Option(help="never (the default), daily, weekly or monthly")] = None,
    retain_periods: Annotated[
        int | None, typer.Option("--retain-periods", help="Past periods kept readable, 1..1000 (default 12)")
    ] = None,
    rollup_to: Annotated[
        list[str] | None, typer.Option("--rollup-to", help="A board its changes roll up to (repeat for more)")
    ] = None,
    title: TitleOption = None,
    public_read: PublicReadOption = None,
    client_writes: ClientWritesOption = None,
    limits: LimitsOption = None,
    announce_top: AnnounceTopOption = None,
    api: ApiOption = None,
    token: TokenOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a board, or confirm one with the same fixed settings (PUT /boards/{boardId}).

    The fixed settings (order, operator, tie break, shards, reset, retained periods,
    rollups) are those of docs/api.md; one left out is the API's default. A board that
    exists with other fixed settings is refused (409).

    Example: podium boards create images --shards 3 --title "Most viewed images" --public-read
    """
    settings: dict[str, Any] = {
        "order": order,
        "operator": operator,
        "tie_break": tie_break,
        "shards": shards,
        "reset": reset,
        "retain_periods": retain_periods,
        "rollup_to": rollup_to or None,
        "client_writes": client_writes,
        "public_read": public_read,
        "limits": parse_limits(limits) if limits is not None else None,
        "announce_top": announce_top,
        "title": title,
    }
    with admin_client(api, token) as client:
        made = client.create_board(board, **settings)
    if as_json:
        print_json(board_json(made))
        return
    console.print(f"board {board} {'created' if made.created else 'exists with these settings'}")
    console.print(board_table(made))


@app.command("configure")
def configure(
    board: Annotated[str, typer.Argument(help="The board's id")],
    title: TitleOption = None,
    public_read: PublicReadOption = None,
    client_writes: ClientWritesOption = None,
    limits: LimitsOption = None,
    announce_top: AnnounceTopOption = None,
    api: ApiOption = None,
    token: TokenOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Change the settings of a board that are not fixed: title, public read, client
    writes, limits, announce top (GET the board, then PUT it with its fixed settings).

    Example: podium boards configure images --no-public-read --limits '{"maxValue": 1000}'
    """
    changes: dict[str, Any] = {
        "client_writes": client_writes,
        "public_read": public_read,
        "limits": parse_limits(limits) if limits is not None else None,
        "announce_top": announce_top,
        "title": title,
    }
    if all(value is None for value in changes.values()):
        raise typer.BadParameter("name at least one setting to change (see --help)")
    with admin_client(api, token) as client:
        changed = client.update_board(board, **changes)
    if as_json:
        print_json(board_json(changed))
    else:
        console.print(board_table(changed))


POLL_SECONDS = 2.0


@app.command("reshard")
def reshard(
    board: Annotated[str, typer.Argument(help="The board's id")],
    shards: Annotated[int, typer.Option(help="The new number of write shards, 1..100")],
    wait: Annotated[bool, typer.Option("--wait", help="Show the move's progress until it is over")] = False,
    api: ApiOption = None,
    token: TokenOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Move a board to another shard count, live (POST /boards/{boardId}/reshard): reads
    stay exact and writes are accepted meanwhile. With --wait, print the members copied to
    the new layout so far every 2 seconds until reads use it (the board has its new count;
    the old layout is emptied in the background after).

    Example: podium boards reshard images --shards 20 --wait
    """
    with admin_client(api, token) as client:
        started = client.reshard(board, shards)
        if as_json and not wait:
            print_json(board_json(started))
            return
        console.print(f"board {board}: moving from {started.shards} to {shards} shards")
        if not wait:
            return
        while True:
            shown = client.get_board(board)
            if shown.reshard is None:
                break
            console.print(f"  {shown.reshard.copied:,} members copied")
            time.sleep(POLL_SECONDS)
    if as_json:
        print_json(board_json(shown))
    else:
        console.print(f"board {board} has {shown.shards} shards")
