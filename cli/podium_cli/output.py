"""What the commands print: rich tables for a person, compact JSON (``--json``) for a
program, exact numbers in both, and errors on stderr."""

from __future__ import annotations

import sys
from decimal import Decimal
from typing import Any

from rich.console import Console
from rich.table import Table

from podium_client import Board, Limits, codec

# Piped into grep or a file, a table keeps a line a row rather than wrapping at 80 columns.
PIPED_WIDTH = 200
console = Console(highlight=False, width=None if sys.stdout.isatty() else PIPED_WIDTH)
errors = Console(stderr=True, highlight=False)


def print_json(value: Any) -> None:
    """One line of JSON on stdout, Decimals digit for digit (never through a float)."""
    print_line(codec.dumps(value))


def print_line(text: str) -> None:
    """Text for a program to read (JSON, a token), as it is: no wrapping, no markup."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def number(value: Decimal | None) -> str:
    return "" if value is None else codec.number_text(value)


def board_json(board: Board) -> dict[str, Any]:
    """The board as the API writes it (docs/api.md, "Boards")."""
    body: dict[str, Any] = {
        "boardId": board.board_id,
        "order": board.order,
        "operator": board.operator,
        "tieBreak": board.tie_break,
        "shards": board.shards,
        "title": board.title,
        "memberCount": board.member_count,
        "clientWrites": board.client_writes,
        "publicRead": board.public_read,
        "limits": board.limits.to_json(),
        "createdAt": board.created_at.isoformat().replace("+00:00", "Z"),
    }
    if board.reset != "never":
        body.update(reset=board.reset, period=board.period, retainPeriods=board.retain_periods)
    if board.rollup_to:
        body["rollupTo"] = list(board.rollup_to)
    if board.announce_top is not None:
        body["announceTop"] = board.announce_top
    if board.reshard is not None:
        started = board.reshard.started_at.isoformat().replace("+00:00", "Z")
        body["reshard"] = {
            "toShards": board.reshard.to_shards,
            "startedAt": started,
            "copied": board.reshard.copied,
        }
    return body


def describe_limits(limits: Limits) -> str:
    parts = [
        f"{name} {value}"
        for name, value in (
            ("min", number(limits.min_value) if limits.min_value is not None else None),
            ("max", number(limits.max_value) if limits.max_value is not None else None),
            ("per minute", limits.max_submissions_per_minute),
        )
        if value is not None
    ]
    return ", ".join(parts) or "none"


def boards_table(boards: list[Board]) -> Table:
    table = Table(
        "board", "title", "order", "operator", "shards", "reset", "members", "public read", "client writes"
    )
    table.columns[0].no_wrap = True  # an id cut in two cannot be copied
    for board in boards:
        table.add_row(
            board.board_id,
            board.title or "",
            board.order,
            board.operator,
            str(board.shards),
            board.reset,
            f"{board.member_count:,}",
            _yes(board.public_read),
            _yes(board.client_writes),
        )
    return table


def board_table(board: Board) -> Table:
    """Every setting of one board, a row each."""
    table = Table("setting", "value", title=f"board {board.board_id}")
    rows: list[tuple[str, str]] = [
        ("title", board.title or ""),
        ("order", board.order),
        ("operator", board.operator),
        ("tieBreak", board.tie_break),
        ("shards", str(board.shards)),
    ]
    if board.reshard is not None:  # a move in progress, until reads switch to the new count
        moving = board.reshard
        started = moving.started_at.isoformat().replace("+00:00", "Z")
        rows.append(
            ("reshard", f"to {moving.to_shards} shards since {started}: {moving.copied:,} members copied")
        )
    rows += [
        ("reset", board.reset),
    ]
    if board.reset != "never":
        rows += [("period", board.period or ""), ("retainPeriods", str(board.retain_periods))]
    rows += [
        ("memberCount", f"{board.member_count:,}"),
        ("publicRead", _yes(board.public_read)),
        ("clientWrites", _yes(board.client_writes)),
        ("limits", describe_limits(board.limits)),
    ]
    if board.announce_top is not None:
        rows.append(("announceTop", str(board.announce_top)))
    if board.rollup_to:
        rows.append(("rollupTo", ", ".join(board.rollup_to)))
    rows.append(("createdAt", board.created_at.isoformat().replace("+00:00", "Z")))
    for name, value in rows:
        table.add_row(name, value)
    return table


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
