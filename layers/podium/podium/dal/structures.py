"""The rank structures beside the index: the head item of each board and period, which the
stream keeps (``podium.head``), with its copies.

The head's copies (``schema.head_copy_key``: ``H#{boardId}#{copy}``, ``schema.HEAD_COPIES``
of them) spread the top reads of a hot board over partitions of their own; the board's
partition keeps the primary. Every write of the primary is conditional on the version it
read, which serialises the head's writers; once one has written the primary, it writes each
copy on the condition that the copy holds no head or an older version, so that a writer
slowed between the two can never put a copy back to an older head. A copy write that fails
(throttled, past botocore's retries) marks the primary (``schema.COPIES_OWED``) and raises
``HeadCopiesBehind``: the stream delivers the batch again, and its upkeep writes the copies
from the primary first (``heal_copies``).
"""

from __future__ import annotations

import logging
from typing import Any

from podium import fanout
from podium.dal import codecs, schema
from podium.dal.client import Tables
from podium.models import HeadItem

log = logging.getLogger(__name__)


class HeadCopiesBehind(RuntimeError):
    """The primary head was written, and at least one of its copies was not."""


class RankStructures:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    # -- the head -----------------------------------------------------------------------

    def get_head(self, board_id: str, period: str, *, consistent: bool = False) -> HeadItem | None:
        item = self.tables.get(schema.head_key(board_id, period), consistent=consistent)
        return codecs.head_from_item(item) if item else None

    def put_head(self, board_id: str, period: str, head: HeadItem, expires: int | None) -> bool:
        """Write the head if it is still the version read (``head.version``; 0: absent),
        then its copies; False when another writer got there first (no copy is written).
        ``HeadCopiesBehind`` when the primary was written and a copy was not."""
        item = codecs.head_item(board_id, period, head, expires)
        if head.version:
            written = self.tables.put(
                item, ConditionExpression="v = :v", ExpressionAttributeValues={":v": {"N": str(head.version)}}
            )
        else:
            written = self.tables.put_if_absent(item)
        if written:
            self._put_copies(board_id, period, item)
        return written

    def heal_copies(self, board_id: str, period: str, stored: HeadItem, expires: int | None) -> None:
        """Write the copies of the primary head as it was read (``stored``, which says its
        copies are owed), then take the mark off, unless the primary has moved on since
        (its next version's writer wrote the copies of that one)."""
        item = codecs.head_item(board_id, period, stored, expires, stored=True)
        self._put_copies(board_id, period, item)
        self.tables.update(
            schema.head_key(board_id, period),
            f"REMOVE {schema.COPIES_OWED}",
            ConditionExpression="v = :v",
            ExpressionAttributeValues={":v": {"N": str(stored.version)}},
        )

    def get_head_copy(self, board_id: str, period: str, copy: int) -> HeadItem | None:
        """One copy as it is (strongly consistent): the checker's and the tests' read."""
        item = self.tables.get(schema.head_copy_key(board_id, period, copy), consistent=True)
        return codecs.head_from_item(item) if item else None

    def get_head_copies(self, board_id: str, period: str) -> list[HeadItem | None]:
        """Every copy as it is, in copy order (the checker's read)."""
        return fanout.gather(
            lambda copy: self.get_head_copy(board_id, period, copy), range(schema.HEAD_COPIES)
        )

    def _put_copies(self, board_id: str, period: str, item: dict[str, Any]) -> None:
        """Each copy of the primary head ``item`` (with its ``ttl``), unless the copy holds
        this version or a newer one; marks the primary and raises when one was not written."""
        version = item["v"]

        def put(copy: int) -> Exception | None:
            try:
                self.tables.put(
                    {**item, **schema.head_copy_key(board_id, period, copy)},
                    ConditionExpression="attribute_not_exists(v) OR v < :v",
                    ExpressionAttributeValues={":v": version},
                )
            except Exception as error:  # throttled past botocore's retries, or unconfirmed
                return error
            return None

        errors = [error for error in fanout.gather(put, range(schema.HEAD_COPIES)) if error is not None]
        if not errors:
            return
        try:
            self.tables.update(
                schema.head_key(board_id, period),
                f"SET {schema.COPIES_OWED} = :t",
                ConditionExpression="v = :v",
                ExpressionAttributeValues={":v": version, ":t": {"BOOL": True}},
            )
        except Exception:
            # Then the copies catch up with the head's next write, and the checker finds them.
            log.exception("could not mark the head of %s (%s): its copies are owed", board_id, period)
        raise HeadCopiesBehind(
            f"{len(errors)} of the {schema.HEAD_COPIES} copies of the head of {board_id} ({period}) "
            f"were not written: {errors[0]!r}"
        ) from errors[0]
