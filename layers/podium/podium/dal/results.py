"""A period's final results and their announcement (``podium.results``): the announcement
record ``B#{boardId}`` / ``RESULT#{period}`` (claimed once, with the final top 100,
memberCount and how far the announcing went), the list of members to tell in parts of its
run, and each board's last period announced (``announcedThrough`` on the board item)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from podium import numbers
from podium.dal import schema
from podium.dal.client import Tables, parse_timestamp
from podium.errors import WriteRejected
from podium.models import DEFAULT_ANNOUNCE_TOP, RankedEntry
from podium.values import frozen

ANNOUNCED_THROUGH = schema.ANNOUNCED_THROUGH


@frozen
class ResultsBoard:
    """What the job needs of a board to know which of its periods are due."""

    board_id: str
    reset: str
    retain_periods: int
    created_at: datetime
    announce_top: int
    # The last period whose announcing is done; NOTHING_ANNOUNCED: none yet, every period
    # from the board's first is due.
    announced_through: str


@frozen
class Announcement:
    """A period's results as claimed once: what every run after the claim announces."""

    board_id: str
    period: str
    run: str  # the run that claimed it: its parts hold the list of members to tell
    announced_us: int  # when it was claimed: the createdAt of its notifications
    member_count: int
    entries: list[RankedEntry]  # the final top 100
    listed: int  # members to tell (rank <= announceTop when claimed)
    parts: int
    closed: bool = False  # the periodClosed message was published
    told: int = 0  # the first ``told`` members of the list were told (the checkpoint)
    done: bool = False


def _entries_text(entries: Sequence[RankedEntry]) -> str:
    return numbers.dumps([[e.rank, e.member_id, e.score] for e in entries])


def _entries(text: str) -> list[RankedEntry]:
    return [RankedEntry(int(rank), member, score) for rank, member, score in numbers.loads(text)]


class Results:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    def windowed_boards(self, board_ids: Sequence[str]) -> list[ResultsBoard]:
        """The time-windowed boards among ``board_ids`` (one batched read of their items)."""
        items = self.tables.batch_get([schema.board_key(b) for b in board_ids], consistent=False)
        found = []
        for board_id in board_ids:
            key = schema.board_key(board_id)
            item = items.get((key["pk"]["S"], key["sk"]["S"]))
            if item is None or item.get("reset", {}).get("S", "never") == "never":
                continue
            found.append(
                ResultsBoard(
                    board_id=board_id,
                    reset=item["reset"]["S"],
                    retain_periods=int(item["retainPeriods"]["N"]),
                    created_at=parse_timestamp(item["createdAt"]["S"]),
                    announce_top=int(item.get("announceTop", {}).get("N", DEFAULT_ANNOUNCE_TOP)),
                    announced_through=item[ANNOUNCED_THROUGH]["S"],
                )
            )
        return found

    def get_announcement(self, board_id: str, period: str) -> Announcement | None:
        item = self.tables.get(schema.result_key(board_id, period), consistent=True)
        if item is None:
            return None
        return Announcement(
            board_id=board_id,
            period=period,
            run=item["run"]["S"],
            announced_us=int(item["at"]["N"]),
            member_count=int(item["memberCount"]["N"]),
            entries=_entries(item["entries"]["S"]),
            listed=int(item["listed"]["N"]),
            parts=int(item["parts"]["N"]),
            closed=bool(item.get("closed", {}).get("BOOL")),
            told=int(item["told"]["N"]),
            done=bool(item.get("done", {}).get("BOOL")),
        )

    def put_announced_parts(
        self, board_id: str, period: str, run: str, parts: Sequence[Sequence[RankedEntry]], expires: int
    ) -> None:
        """The list of members to tell, in parts named by the run that read it (so two runs
        at once never mix their lists: only the one that claims is used)."""
        self.tables.batch_write(
            [
                {
                    "PutRequest": {
                        "Item": {
                            **schema.result_part_key(board_id, period, run, number),
                            "e": {"S": _entries_text(part)},
                            "ttl": {"N": str(expires)},
                        }
                    }
                }
                for number, part in enumerate(parts)
            ]
        )

    def announced_part(self, board_id: str, period: str, run: str, number: int) -> list[RankedEntry]:
        item = self.tables.get(schema.result_part_key(board_id, period, run, number), consistent=True)
        if item is None:
            raise WriteRejected(f"part {number} of the results of {board_id} {period} is missing")
        return _entries(item["e"]["S"])

    def claim_announcement(self, announcement: Announcement, expires: int) -> bool:
        """Record the period's results, once: False when a run recorded them before."""
        a = announcement
        item: dict[str, Any] = {
            **schema.result_key(a.board_id, a.period),
            "run": {"S": a.run},
            "at": {"N": str(a.announced_us)},
            "memberCount": {"N": str(a.member_count)},
            "entries": {"S": _entries_text(a.entries)},
            "listed": {"N": str(a.listed)},
            "parts": {"N": str(a.parts)},
            "closed": {"BOOL": False},
            "told": {"N": "0"},
            "done": {"BOOL": False},
            "ttl": {"N": str(expires)},
        }
        return self.tables.put_if_absent(item)

    def mark_period_closed(self, board_id: str, period: str) -> None:
        self.tables.update(
            schema.result_key(board_id, period),
            "SET closed = :t",
            ExpressionAttributeValues={":t": {"BOOL": True}},
        )

    def advance_announcement(self, board_id: str, period: str, told: int, now_told: int) -> bool:
        """Move the checkpoint from ``told`` to ``now_told``; False when another run moved
        it meanwhile (it told the same members: their notifications are the same items)."""
        return self.tables.update(
            schema.result_key(board_id, period),
            "SET told = :n",
            ConditionExpression="told = :t",
            ExpressionAttributeValues={":t": {"N": str(told)}, ":n": {"N": str(now_told)}},
        )

    def finish_announcement(self, board_id: str, period: str) -> None:
        """The period is announced: its record says done, and the board's last period
        announced moves on to it (never back: periods of one kind sort as their ids)."""
        self.tables.update(
            schema.result_key(board_id, period),
            "SET done = :t",
            ExpressionAttributeValues={":t": {"BOOL": True}},
        )
        self.tables.update(
            schema.board_key(board_id),
            "SET #a = :p",
            ConditionExpression="attribute_exists(pk) AND (attribute_not_exists(#a) OR #a < :p)",
            ExpressionAttributeNames={"#a": ANNOUNCED_THROUGH},
            ExpressionAttributeValues={":p": {"S": period}},
        )
