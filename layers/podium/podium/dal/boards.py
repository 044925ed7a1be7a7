"""Boards: the board item, its catalog entry, its member counts, and the one read that
gathers what a ranking read needs first."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from podium.dal import codecs, schema
from podium.dal.client import Tables
from podium.errors import WriteRejected
from podium.models import EMPTY_DATA_BYTES, Board, BoardPolicy, HeadItem, View

# A transaction holds at most 100 actions: the records' marks and the count.
COUNTS_PER_TRANSACTION = 99

NOTED_BOARDS = 10_000  # boards whose data size one instance remembers (``DataSizes``)


class Boards:
    def __init__(self, tables: Tables, head_copy: int | None = None) -> None:
        self.tables = tables
        # The copy of each head this process reads (podium.dal.structures): one picked at
        # random, so that the instances' reads spread over the copies' partitions.
        self.head_copy = random.randrange(schema.HEAD_COPIES) if head_copy is None else head_copy

    def get_board(self, board_id: str, *, consistent: bool = False) -> Board | None:
        item = self.tables.get(schema.board_key(board_id), consistent=consistent)
        return codecs.board_from_item(board_id, item) if item else None

    def create_board(self, board: Board, first_period: str) -> bool:
        """Create the board, its catalog entry and an empty leader record (the first
        leader is not announced); False when the board exists already."""
        no_leader_yet = {**schema.leader_key(board.board_id, first_period), "lv": {"N": "0"}}
        return self.tables.create_together(
            [codecs.board_item(board)], also=[schema.catalog_key(board.board_id), no_leader_yet]
        )

    def period_count(self, board_id: str, period: str) -> int:
        item = self.tables.get(schema.period_count_key(board_id, period))
        return max(0, int(item["memberCount"]["N"])) if item else 0

    def update_board(self, board_id: str, title: str | None, policy: BoardPolicy) -> None:
        """Write the settings that may change (the title when given, the whole policy)."""
        attributes = codecs.policy_attributes(policy)
        if title is not None:
            attributes["title"] = {"S": title}
        names = {f"#a{i}": name for i, name in enumerate(attributes)}
        values = {f":v{i}": value for i, value in enumerate(attributes.values())}
        expression = "SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(attributes)))
        gone = [name for name in codecs.LIMIT_ATTRIBUTES if name not in attributes]
        if gone:
            names.update({f"#r{i}": name for i, name in enumerate(gone)})
            expression += " REMOVE " + ", ".join(f"#r{i}" for i in range(len(gone)))
        self.tables.update(
            schema.board_key(board_id),
            expression,
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def list_boards(self, limit: int, after: str | None) -> tuple[list[Board], str | None]:
        """A page of boards in id order, and the id to continue after (None at the end)."""
        ids, last = self.list_board_ids(limit, after)
        items = self.tables.batch_get([schema.board_key(board_id) for board_id in ids], consistent=False)
        boards = []
        for board_id in ids:
            key = schema.board_key(board_id)
            item = items.get((key["pk"]["S"], key["sk"]["S"]))
            if item is not None:
                boards.append(codecs.board_from_item(board_id, item))
        return boards, last

    def list_board_ids(self, limit: int, after: str | None) -> tuple[list[str], str | None]:
        """A page of board ids from the catalog, in id order, and the id to continue
        after (None at the end)."""
        request: dict[str, Any] = {
            "TableName": self.tables.table_for(schema.CATALOG),
            "KeyConditionExpression": "pk = :c",
            "ExpressionAttributeValues": {":c": {"S": schema.CATALOG}},
            "Limit": limit,
        }
        if after is not None:
            request["ExclusiveStartKey"] = schema.catalog_key(after)
        response = next(self.tables.query_pages(request))
        ids = [item["sk"]["S"] for item in response.get("Items", [])]
        more = "LastEvaluatedKey" in response and bool(ids)
        return ids, (ids[-1] if more else None)

    def apply_member_count(
        self, event_id: str, board_id: str, delta: int, period: str | None = None, expires: int | None = None
    ) -> bool:
        """Add ``delta`` to the board's memberCount (or, with ``period``, to that period's
        count of a time-windowed board) once per stream record; False when this record was
        applied before (a redelivery), or when the board is gone."""
        counter = self._counter(board_id, delta, period, expires)
        codes = self.tables.transact([self.tables.mark_put(schema.count_mark(event_id)), {"Update": counter}])
        if codes is None:
            return True
        if "ConditionalCheckFailed" in codes:
            return False  # applied before, or the board is gone: nothing to count
        raise WriteRejected("the member count was not applied", codes)

    def apply_member_counts(
        self,
        board_id: str,
        changes: Sequence[tuple[str, int]],
        period: str | None = None,
        expires: int | None = None,
    ) -> None:
        """``apply_member_count`` for many stream records, ``(eventID, delta)``: their marks
        and the sum of their deltas in one transaction per ``COUNTS_PER_TRANSACTION``
        records, not one each. A record applied before (its mark exists: a redelivery)
        cancels the transaction; its reasons name the marks found, and the rest is tried
        again without them, once, then one record at a time."""
        for start in range(0, len(changes), COUNTS_PER_TRANSACTION):
            left = list(changes[start : start + COUNTS_PER_TRANSACTION])
            for _ in range(2):
                codes = self._count_together(board_id, left, period, expires)
                if codes is None or codes[-1] == "ConditionalCheckFailed":
                    left = []  # applied; or the board is gone, with nothing to count
                    break
                applied = {n for n, code in enumerate(codes[:-1]) if code == "ConditionalCheckFailed"}
                if not applied:
                    raise WriteRejected("the member counts were not applied", codes)
                left = [change for n, change in enumerate(left) if n not in applied]
                if not left:
                    break
            for event_id, delta in left:
                self.apply_member_count(event_id, board_id, delta, period, expires)

    def _count_together(
        self, board_id: str, changes: list[tuple[str, int]], period: str | None, expires: int | None
    ) -> list[str] | None:
        """One transaction: the records' marks, then their deltas' sum added to the count;
        None when it committed, else the cancellation codes (the count's last)."""
        marks = [self.tables.mark_put(schema.count_mark(event_id)) for event_id, _ in changes]
        counter = self._counter(board_id, sum(delta for _, delta in changes), period, expires)
        return self.tables.transact([*marks, {"Update": counter}])

    @staticmethod
    def _counter(board_id: str, delta: int, period: str | None, expires: int | None) -> dict[str, Any]:
        """The update that adds ``delta`` to the board's memberCount, or to the period's."""
        if period is None:
            return {
                "Key": schema.board_key(board_id),
                "UpdateExpression": "ADD memberCount :d",
                "ConditionExpression": "attribute_exists(pk)",
                "ExpressionAttributeValues": {":d": {"N": str(delta)}},
            }
        return {
            "Key": schema.period_count_key(board_id, period),
            "UpdateExpression": "ADD memberCount :d SET #ttl = :ttl",
            "ExpressionAttributeNames": {"#ttl": "ttl"},
            "ExpressionAttributeValues": {":d": {"N": str(delta)}, ":ttl": {"N": str(expires or 0)}},
        }

    def view(
        self,
        board_id: str,
        period: str,
        *,
        with_count: bool,
        member_id: str | None = None,
        head: bool = False,
    ) -> View:
        """What a ranking read needs before it touches the index, in one BatchGetItem: the
        board, the period's count (time-windowed boards), the member's score and the
        board's head (this process's copy of it: ``head``). Consistent when it reads a
        member's score."""
        keys = [schema.board_key(board_id)]
        if with_count:
            keys.append(schema.period_count_key(board_id, period))
        if member_id is not None:
            keys.append(schema.score_key(board_id, member_id, period))
        copy_key = schema.head_copy_key(board_id, period, self.head_copy) if head else None
        if copy_key is not None:
            keys.append(copy_key)
        items = self.tables.batch_get(keys, consistent=member_id is not None)

        def found(key: dict[str, Any]) -> dict[str, Any] | None:
            return items.get((key["pk"]["S"], key["sk"]["S"]))

        board_item = found(schema.board_key(board_id))
        count_item = found(schema.period_count_key(board_id, period))
        score_item = found(schema.score_key(board_id, member_id, period)) if member_id else None
        return View(
            board=codecs.board_from_item(board_id, board_item) if board_item else None,
            period_count=max(0, int(count_item["memberCount"]["N"])) if count_item else 0,
            score=codecs.score_from_item(score_item) if score_item else None,
            head=self._or_primary(board_id, period, found(copy_key)) if copy_key and board_item else None,
        )

    def head(self, board_id: str, period: str) -> HeadItem | None:
        """The board's head, from this process's copy of it (``view``'s, read alone)."""
        item = self.tables.get(schema.head_copy_key(board_id, period, self.head_copy))
        return self._or_primary(board_id, period, item)

    def _or_primary(self, board_id: str, period: str, copy_item: dict[str, Any] | None) -> HeadItem | None:
        """The head in the copy read, or when the copy holds none the primary's, read as reads
        read it before there were copies (a board whose head has not been written
        since, or a new board: then there is none, and the read goes to the index). A
        copy is never older than the primary was when it was last written with its
        copies, so the head read is as fresh as the primary's would have been: each head
        write puts the primary, then every copy (``podium.dal.structures``)."""
        if copy_item is None:
            copy_item = self.tables.get(schema.head_key(board_id, period))
        return codecs.head_from_item(copy_item) if copy_item else None

    # -- members deleted from the board -----------------------------------------------------

    def remember_deleted(self, board_id: str, member_id: str, gone_us: int) -> None:
        """Keep when the member was last deleted from the board, so that a rollup does not
        bring it back (``stream.rollups``): one small item a member deleted, in the state
        table."""
        self.tables.update(
            schema.deleted_key(board_id, member_id),
            "SET #a = :at",
            ExpressionAttributeNames={"#a": "at"},
            ExpressionAttributeValues={":at": {"N": str(gone_us)}},
        )

    def deleted_at(self, board_id: str, member_id: str) -> int | None:
        item = self.tables.get(schema.deleted_key(board_id, member_id), consistent=True)
        return int(item["at"]["N"]) if item else None


class DataSizes:
    """The board's ``largestData``: the size of the largest member data it has held, which
    readers size their reads of profiles by. Raised before bigger data is written, never
    lowered. A board is written only when data is bigger than this instance has made sure
    the board records, so a board's usual sizes cost one write per instance at most."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self._noted: dict[str, int] = {}

    def note(self, board_id: str, text: str) -> None:
        """Before data ``text`` (serialised) is written to a member of the board."""
        size = len(text.encode("utf-8"))
        if size <= self._noted.get(board_id, EMPTY_DATA_BYTES):
            return
        self.tables.update(
            schema.board_key(board_id),
            "SET largestData = :s",
            ConditionExpression="largestData < :s",
            ExpressionAttributeValues={":s": {"N": str(size)}},
        )
        if len(self._noted) >= NOTED_BOARDS:
            self._noted.clear()
        self._noted[board_id] = size
