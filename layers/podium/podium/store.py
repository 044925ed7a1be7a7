"""The one data-access module: every DynamoDB call of the service goes through here.

Item layout of the single table (``pk``/``sk`` strings; ``#`` never occurs in ids):

====================================  ===================  =================================
pk                                    sk                   what
====================================  ===================  =================================
``B#{boardId}``                       ``BOARD``            settings, title, memberCount
``CATALOG``                           ``{boardId}``        one per board, to list boards
``M#{boardId}#{memberId}``            ``MEMBER``           data (JSON text), timestamps
``M#{boardId}#{memberId}``            ``SCORE#{period}``   score, version, reachedAt, rpk/rsk
``STREAM#{eventId}``                  ``APPLIED``          a stream record already applied
====================================  ===================  =================================

Only ``SCORE#`` items carry ``rpk``/``rsk``, so the keys-only ``RankIndex`` holds
nothing but rankings. The score item stays small whatever the size of ``data``: a
score update writes 1 WCU to the table and (when the sort key moves) 2 to the index.
Later parts of the API add items under their own prefixes (see docs/data-model.md).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from podium import head as head_codec
from podium import numbers, periods
from podium.buckets import BELOW_EVERY_KEY, Bucket, Step, just_above, just_below
from podium.config import Settings
from podium.errors import Throttled
from podium.head import Head
from podium.keys import ALL_TIME, SEPARATOR, member_of_key, mirror, rank_partition_key, shard_of, unmirror
from podium.models import (
    ENDED_FOLLOW_KEEP_US,
    Board,
    BoardSettings,
    LoggedEvent,
    Notification,
    RankedEntry,
    Rivals,
    ScoreState,
    Snapshot,
    decode_history,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import QueryOutputTypeDef

    from podium.ranking import PageRequest

T = TypeVar("T")
R = TypeVar("R")

THROTTLING_CODES = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "ThrottlingError",
}
STREAM_MARK_TTL_SECONDS = 2 * 24 * 3600  # longer than a stream's 24-hour retention

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


class VersionConflict(Exception):
    """Another write changed the item between our read and our conditional write."""


class ItemMissing(Exception):
    """The item a conditional write expected is not there (deleted meanwhile)."""


class AlreadyApplied(Exception):
    """The mark of this stream record's effect exists: it was applied before."""


def mark_item(key: str) -> dict[str, Any]:
    """An item whose existence says "this effect was applied"; it expires after the
    stream's 24-hour retention, when no redelivery can come any more."""
    expires = int(time.time()) + STREAM_MARK_TTL_SECONDS
    return {"pk": {"S": key}, "sk": {"S": "APPLIED"}, "ttl": {"N": str(expires)}}


@dataclass(frozen=True)
class LeaderState:
    """The board's leader as the notifier last saw it, and notifications still to deliver."""

    member_id: str | None
    sort_key: str | None
    score: Decimal | None
    version: int
    pending: list[Notification]


def board_key(board_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"B#{board_id}"}, "sk": {"S": "BOARD"}}


def period_count_key(board_id: str, period: str) -> dict[str, Any]:
    return {"pk": {"S": f"B#{board_id}"}, "sk": {"S": f"COUNT#{period}"}}


def member_pk(board_id: str, member_id: str) -> str:
    return f"M#{board_id}{SEPARATOR}{member_id}"


def profile_key(board_id: str, member_id: str) -> dict[str, Any]:
    return {"pk": {"S": member_pk(board_id, member_id)}, "sk": {"S": "MEMBER"}}


def score_key(board_id: str, member_id: str, period: str) -> dict[str, Any]:
    return {"pk": {"S": member_pk(board_id, member_id)}, "sk": {"S": f"SCORE#{period}"}}


def parse_member_pk(pk: str) -> tuple[str, str]:
    """``M#{boardId}#{memberId}`` -> (boardId, memberId)."""
    board_id, member_id = pk[2:].split(SEPARATOR, 1)
    return board_id, member_id


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _parse_timestamp(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _error_code(error: Exception) -> str:
    response = getattr(error, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def _cancellation_codes(error: Exception) -> list[str]:
    response = getattr(error, "response", None) or {}
    return [str(reason.get("Code", "None")) for reason in response.get("CancellationReasons", [])]


@contextmanager
def _translate_throttling() -> Iterator[None]:
    """botocore has already retried with backoff; what still throttles is the client's 429."""
    from botocore.exceptions import ClientError

    try:
        yield
    except ClientError as error:
        codes = {_error_code(error), *_cancellation_codes(error)}
        if codes & THROTTLING_CODES:
            raise Throttled("the database is throttling requests; retry after a short wait") from error
        raise


class Store:
    def __init__(self, settings: Settings, client: DynamoDBClient | None = None) -> None:
        self.settings = settings
        self._client = client

    # -- plumbing ---------------------------------------------------------------------

    @cached_property
    def client(self) -> DynamoDBClient:
        if self._client is not None:
            return self._client
        import boto3
        from botocore.config import Config

        config = Config(
            retries={"mode": "standard", "max_attempts": 6},
            max_pool_connections=self.settings.shard_query_concurrency + 8,
        )
        return boto3.client("dynamodb", config=config)

    @cached_property
    def _pool(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(max_workers=self.settings.shard_query_concurrency)

    def gather(self, function: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """Run ``function`` over ``items`` concurrently (the scatter of scatter-gather)."""
        if len(items) <= 1:
            return [function(item) for item in items]
        return list(self._pool.map(function, items))

    @property
    def table(self) -> str:
        return self.settings.table_name

    # -- boards -----------------------------------------------------------------------

    def get_board(self, board_id: str, *, consistent: bool = False) -> Board | None:
        with _translate_throttling():
            response = self.client.get_item(
                TableName=self.table, Key=board_key(board_id), ConsistentRead=consistent
            )
        item = response.get("Item")
        return _board_from_item(board_id, item) if item else None

    def create_board(self, board: Board) -> bool:
        """Create the board and its catalog entry; False when it already exists."""
        s = board.settings
        item: dict[str, Any] = {
            **board_key(board.board_id),
            "order": {"S": s.order},
            "operator": {"S": s.operator},
            "tieBreak": {"S": s.tie_break},
            "shards": {"N": str(s.shards)},
            "reset": {"S": s.reset},
            "retainPeriods": {"N": str(s.retain_periods)},
            "rollupTo": {"L": [{"S": target} for target in s.rollup_to]},
            "createdAt": {"S": _timestamp(board.created_at)},
            "memberCount": {"N": "0"},
        }
        if board.title is not None:
            item["title"] = {"S": board.title}
        catalog_entry = {"pk": {"S": "CATALOG"}, "sk": {"S": board.board_id}}
        # The notifier's leader record starts empty: the first leader is not announced.
        no_leader_yet = {**_leader_key(board.board_id, ALL_TIME), "lv": {"N": "0"}}
        return self._create_together([item], also=[catalog_entry, no_leader_yet])

    def period_count(self, board_id: str, period: str) -> int:
        with _translate_throttling():
            response = self.client.get_item(TableName=self.table, Key=period_count_key(board_id, period))
        item = response.get("Item")
        return max(0, int(item["memberCount"]["N"])) if item else 0

    def set_board_title(self, board_id: str, title: str) -> None:
        with _translate_throttling():
            self.client.update_item(
                TableName=self.table,
                Key=board_key(board_id),
                UpdateExpression="SET title = :t",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues={":t": {"S": title}},
            )

    def list_boards(self, limit: int, after: str | None) -> tuple[list[Board], str | None]:
        """A page of boards in id order, and the id to continue after (None at the end)."""
        ids, last = self.list_board_ids(limit, after)
        items = self._batch_get([board_key(board_id) for board_id in ids], consistent=False)
        boards = []
        for board_id in ids:
            item = items.get((f"B#{board_id}", "BOARD"))
            if item is not None:
                boards.append(_board_from_item(board_id, item))
        return boards, last

    # -- members ----------------------------------------------------------------------

    def get_score(self, board_id: str, member_id: str, period: str) -> ScoreState | None:
        with _translate_throttling():
            response = self.client.get_item(
                TableName=self.table,
                Key=score_key(board_id, member_id, period),
                ConsistentRead=True,
                ProjectionExpression="s, v, t, h",
            )
        item = response.get("Item")
        return _score_from_item(item) if item else None

    def get_member(
        self, board_id: str, member_id: str, period: str
    ) -> tuple[dict[str, Any] | None, ScoreState | None]:
        """The member's profile item (data and timestamps) and its score, read consistently."""
        keys = [profile_key(board_id, member_id), score_key(board_id, member_id, period)]
        items = self._batch_get(keys, consistent=True)
        pk = member_pk(board_id, member_id)
        profile = items.get((pk, "MEMBER"))
        score = items.get((pk, f"SCORE#{period}"))
        return (
            _profile_from_item(profile) if profile else None,
            _score_from_item(score) if score else None,
        )

    def get_scores(self, board_id: str, member_ids: Sequence[str], period: str) -> dict[str, ScoreState]:
        keys = [score_key(board_id, member_id, period) for member_id in member_ids]
        items = self._batch_get(keys, consistent=True)
        scores = {}
        for member_id in member_ids:
            item = items.get((member_pk(board_id, member_id), f"SCORE#{period}"))
            if item is not None:
                scores[member_id] = _score_from_item(item)
        return scores

    def get_data(self, board_id: str, member_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        keys = [profile_key(board_id, member_id) for member_id in member_ids]
        items = self._batch_get(keys, consistent=False)
        data = {}
        for member_id in member_ids:
            item = items.get((member_pk(board_id, member_id), "MEMBER"))
            data[member_id] = _profile_from_item(item)["data"] if item else {}
        return data

    def create_member(
        self,
        board_id: str,
        settings: BoardSettings,
        member_id: str,
        data: dict[str, Any],
        state: ScoreState | None,
        period: str,
        now: datetime,
        mark: str | None = None,
    ) -> bool:
        """Create the profile and (unless ``state`` is None) score items together, with
        ``mark``, the mark of the stream record that causes it; False, writing nothing,
        when any of them exists."""
        profile = {
            **profile_key(board_id, member_id),
            "data": {"S": numbers.dumps(data)},
            "createdAt": {"S": _timestamp(now)},
            "updatedAt": {"S": _timestamp(now)},
        }
        items = [profile]
        if state is not None:
            items.append(
                {
                    **score_key(board_id, member_id, period),
                    **self._score_attributes(board_id, settings, member_id, state, period),
                }
            )
        return self._create_together(items + ([mark_item(mark)] if mark else []))

    def update_member(
        self,
        board_id: str,
        settings: BoardSettings,
        member_id: str,
        data: dict[str, Any] | None,
        score: tuple[int | None, ScoreState] | None,
        period: str,
        now: datetime,
    ) -> None:
        """Replace the data (when given) and the score (when given, as ``(expected version,
        new state)``) of an existing member, atomically."""
        from botocore.exceptions import ClientError

        names = "updatedAt = :u" + (", #d = :d" if data is not None else "")
        values: dict[str, Any] = {":u": {"S": _timestamp(now)}}
        if data is not None:
            values[":d"] = {"S": numbers.dumps(data)}
        profile_update: Any = {
            "TableName": self.table,
            "Key": profile_key(board_id, member_id),
            "UpdateExpression": f"SET {names}",
            "ConditionExpression": "attribute_exists(pk)",
            "ExpressionAttributeValues": values,
        }
        if data is not None:
            profile_update["ExpressionAttributeNames"] = {"#d": "data"}
        if score is None:
            try:
                with _translate_throttling():
                    self.client.update_item(**profile_update)
            except ClientError as error:
                if _error_code(error) == "ConditionalCheckFailedException":
                    raise ItemMissing(member_id) from error
                raise
            return
        expected, state = score
        try:
            with _translate_throttling():
                self.client.transact_write_items(
                    TransactItems=[
                        {"Update": profile_update},
                        {"Put": self._score_put(board_id, settings, member_id, state, period, expected)},  # type: ignore[typeddict-item]
                    ]
                )
        except ClientError as error:
            codes = _cancellation_codes(error)
            if codes and codes[0] == "ConditionalCheckFailed":
                raise ItemMissing(member_id) from error
            if "ConditionalCheckFailed" in codes:
                raise VersionConflict(member_id) from error
            raise

    def write_score(
        self,
        board_id: str,
        settings: BoardSettings,
        member_id: str,
        expected_version: int | None,
        state: ScoreState,
        period: str,
        mark: str | None = None,
    ) -> None:
        """Replace the score item if it still has ``expected_version`` (optimistic
        locking), or (None) write the member's first score in ``period`` if the member
        exists (else ItemMissing).

        With ``mark``, the mark of the stream record that causes the change is written in
        the same transaction, so the change is applied once (else AlreadyApplied)."""
        from botocore.exceptions import ClientError

        put: Any = self._score_put(board_id, settings, member_id, state, period, expected_version)
        actions: list[tuple[str, Any]] = []
        if mark is not None:
            actions.append(
                (
                    "mark",
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": mark_item(mark),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                )
            )
        if expected_version is None:
            actions.append(
                (
                    "member",
                    {
                        "ConditionCheck": {
                            "TableName": self.table,
                            "Key": profile_key(board_id, member_id),
                            "ConditionExpression": "attribute_exists(pk)",
                        }
                    },
                )
            )
        actions.append(("score", {"Put": put}))
        try:
            with _translate_throttling():
                if len(actions) == 1:
                    self.client.put_item(**put)
                else:
                    self.client.transact_write_items(TransactItems=[action for _, action in actions])
        except ClientError as error:
            codes = _cancellation_codes(error)
            failed = {
                name
                for (name, _), code in zip(actions, codes, strict=False)
                if code == "ConditionalCheckFailed"
            }
            if _error_code(error) == "ConditionalCheckFailedException":
                failed = {"score"}
            if "mark" in failed:
                raise AlreadyApplied(str(mark)) from error
            if "member" in failed:
                raise ItemMissing(member_id) from error
            if "score" in failed:
                raise VersionConflict(member_id) from error
            raise

    def delete_member(self, board_id: str, member_id: str) -> None:
        """Delete every item of the member (its scores in every period, its rivals list),
        the profile last: a delete that fails half-way is finished by its retry."""
        pk = member_pk(board_id, member_id)
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": pk}},
            "ProjectionExpression": "sk",
            "ConsistentRead": True,
        }
        keys = [item["sk"]["S"] for item in self._query_items(request)]
        self._batch_write(
            [{"DeleteRequest": {"Key": {"pk": {"S": pk}, "sk": {"S": k}}}} for k in keys if k != "MEMBER"]
        )
        with _translate_throttling():
            self.client.delete_item(TableName=self.table, Key=profile_key(board_id, member_id))

    def _score_attributes(
        self, board_id: str, settings: BoardSettings, member_id: str, state: ScoreState, period: str
    ) -> dict[str, Any]:
        order = settings.rank_order
        attributes = {
            "s": _serializer.serialize(state.score),
            "v": {"N": str(state.version)},
            "t": {"N": str(state.reached_at_us)},
            **({"h": {"S": state.history_text()}} if state.version > 1 else {}),
            "rpk": {"S": rank_partition_key(board_id, period, shard_of(member_id, settings.shards))},
            "rsk": {"S": order.sort_key(state.score, member_id, state.reached_at_us)},
        }
        if period != ALL_TIME:  # a period's ranking expires once it is past retainPeriods
            attributes["ttl"] = {
                "N": str(periods.expires_at(settings.reset, period, settings.retain_periods))
            }
        return attributes

    def _score_put(
        self,
        board_id: str,
        settings: BoardSettings,
        member_id: str,
        state: ScoreState,
        period: str,
        expected_version: int | None,
    ) -> dict[str, Any]:
        """The put of a score item: over version ``expected_version``, or (None) as the
        member's first score in ``period``."""
        put: dict[str, Any] = {
            "TableName": self.table,
            "Item": {
                **score_key(board_id, member_id, period),
                **self._score_attributes(board_id, settings, member_id, state, period),
            },
            "ConditionExpression": "attribute_not_exists(pk)",
        }
        if expected_version is not None:
            put["ConditionExpression"] = "v = :expected"
            put["ExpressionAttributeValues"] = {":expected": {"N": str(expected_version)}}
        return put

    # -- the ranking index ------------------------------------------------------------

    def index_keys(
        self,
        partition: str,
        *,
        after: str | None = None,
        below: str | None = None,
        limit: int,
        reverse: bool = False,
    ) -> list[str]:
        """Up to ``limit`` sort keys of one shard in reading order, strictly past ``after``
        and short of ``below`` (None: no bound): best first, or with ``reverse`` worst first
        (``after`` is then the upper bound, ``below`` the lower). Follows
        ``LastEvaluatedKey`` past the 1 MB page limit. Fewer than ``limit`` keys means the
        shard has no more in the range."""
        lo, hi = (below, after) if reverse else (after, below)
        condition = "rpk = :p"
        values: dict[str, Any] = {":p": {"S": partition}}
        if lo is not None and hi is not None:
            # A key condition holds one range and BETWEEN includes both ends: bounds just
            # inside the open range read neither end itself.
            condition += " AND rsk BETWEEN :lo AND :hi"
            values[":lo"] = {"S": just_above(lo)}
            values[":hi"] = {"S": just_below(hi)}
        elif lo is not None:
            condition += " AND rsk > :lo"
            values[":lo"] = {"S": lo}
        elif hi is not None:
            condition += " AND rsk < :hi"
            values[":hi"] = {"S": hi}
        request: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": self.settings.rank_index_name,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ProjectionExpression": "rsk",
            "ScanIndexForward": not reverse,
        }
        keys: list[str] = []
        while len(keys) < limit:
            request["Limit"] = limit - len(keys)
            with _translate_throttling():
                response = self.client.query(**request)
            keys.extend(item["rsk"]["S"] for item in response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                break
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return keys

    def page_reader(
        self, partitions: Sequence[str], *, reverse: bool = False
    ) -> Callable[[Sequence[PageRequest]], list[list[str]]]:
        """Reads one round of ``ranking.gather_top``'s page requests, in parallel. With
        ``reverse`` the listing is read from the bottom up, in mirrored keys
        (``ranking.mirror``), so that ``gather_top`` gathers the nearest keys above one."""

        def read(requests: Sequence[PageRequest]) -> list[list[str]]:
            def page(r: PageRequest) -> list[str]:
                if not reverse:
                    return self.index_keys(partitions[r.shard], after=r.after, below=r.below, limit=r.limit)
                keys = self.index_keys(
                    partitions[r.shard],
                    after=unmirror(r.after) if r.after is not None else None,
                    below=unmirror(r.below) if r.below is not None else None,
                    limit=r.limit,
                    reverse=True,
                )
                return [mirror(key) for key in keys]

            return self.gather(page, requests)

        return read

    def count_index(
        self, partition: str, *, below: str | None = None, between: tuple[str, str] | None = None
    ) -> int:
        """COUNT the entries of one shard below a bound, or between two bounds (inclusive),
        following ``LastEvaluatedKey`` past the 1 MB page limit."""
        condition = "rpk = :p"
        values: dict[str, Any] = {":p": {"S": partition}}
        if below is not None:
            condition += " AND rsk < :b"
            values[":b"] = {"S": below}
        elif between is not None:
            condition += " AND rsk BETWEEN :lo AND :hi"
            values[":lo"] = {"S": between[0]}
            values[":hi"] = {"S": between[1]}
        request: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": self.settings.rank_index_name,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "Select": "COUNT",
        }
        return sum(int(response.get("Count", 0)) for response in self._query_pages(request))

    def keys_in_range(self, partition: str, lo: str, hi: str | None) -> list[str]:
        """Every sort key of one shard in ``[lo, hi]`` (``lo`` empty: from the first key;
        ``hi`` None: to the last), best first."""
        request = self._range_request(partition, lo, hi)
        request["ProjectionExpression"] = "rsk"
        return [item["rsk"]["S"] for item in self._query_items(request)]

    def count_range(self, partition: str, lo: str, hi: str | None) -> int:
        """COUNT one shard's entries in ``[lo, hi]`` (bounds as in ``keys_in_range``)."""
        request = self._range_request(partition, lo, hi)
        request["Select"] = "COUNT"
        return sum(int(response.get("Count", 0)) for response in self._query_pages(request))

    def _range_request(self, partition: str, lo: str, hi: str | None) -> dict[str, Any]:
        condition = "rpk = :p"
        values: dict[str, Any] = {":p": {"S": partition}}
        if lo and hi is not None:
            condition += " AND rsk BETWEEN :lo AND :hi"
            values[":lo"] = {"S": lo}
            values[":hi"] = {"S": hi}
        elif lo:
            condition += " AND rsk >= :lo"
            values[":lo"] = {"S": lo}
        elif hi is not None:
            condition += " AND rsk <= :hi"
            values[":hi"] = {"S": hi}
        return {
            "TableName": self.table,
            "IndexName": self.settings.rank_index_name,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
        }

    # -- the head and the score buckets (podium.head, podium.buckets) -----------------

    def view(
        self,
        board_id: str,
        period: str,
        *,
        member_id: str | None = None,
        head: bool = False,
    ) -> View:
        """What a ranking read needs before it touches the index, in one BatchGetItem:
        the board, the period's count (time-windowed boards), the member's score and the
        board's head."""
        keys = [board_key(board_id)]
        if period != ALL_TIME:
            keys.append(period_count_key(board_id, period))
        if member_id is not None:
            keys.append(score_key(board_id, member_id, period))
        if head:
            keys.append(head_key(board_id, period))
        items = self._batch_get(keys, consistent=member_id is not None)
        board_item = items.get((f"B#{board_id}", "BOARD"))
        count_item = items.get((f"B#{board_id}", f"COUNT#{period}"))
        score_item = items.get((member_pk(board_id, member_id), f"SCORE#{period}")) if member_id else None
        head_item = items.get((f"B#{board_id}", f"HEAD#{period}"))
        return View(
            board=_board_from_item(board_id, board_item) if board_item else None,
            period_count=max(0, int(count_item["memberCount"]["N"])) if count_item else 0,
            score=_score_from_item(score_item) if score_item else None,
            head=_head_from_item(head_item) if head_item else None,
        )

    def get_head(self, board_id: str, period: str, *, consistent: bool = False) -> Head | None:
        with _translate_throttling():
            response = self.client.get_item(
                TableName=self.table, Key=head_key(board_id, period), ConsistentRead=consistent
            )
        item = response.get("Item")
        return _head_from_item(item) if item else None

    def put_head(self, board_id: str, period: str, head: Head, expires: int | None) -> bool:
        """Write the head if it is still the version read (``head.version``; 0: absent);
        False when another writer got there first."""
        from botocore.exceptions import ClientError

        item: dict[str, Any] = {
            **head_key(board_id, period),
            "k": {"B": head_codec.encode(head.keys)},
            "c": {"BOOL": head.complete},
            "v": {"N": str(head.version + 1)},
        }
        if head.ladder is not None:
            item["l"] = {"B": head_codec.encode_ladder(head.ladder)}
            item["ln"] = {"N": str(head.ladder.changes)}
            if head.ladder.total is not None:
                item["lt"] = {"N": str(head.ladder.total)}
        if expires is not None:
            item["ttl"] = {"N": str(expires)}
        condition: dict[str, Any] = (
            {"ConditionExpression": "v = :v", "ExpressionAttributeValues": {":v": {"N": str(head.version)}}}
            if head.version
            else {"ConditionExpression": "attribute_not_exists(pk)"}
        )
        try:
            with _translate_throttling():
                self.client.put_item(TableName=self.table, Item=item, **condition)
        except ClientError as error:
            if _error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def list_buckets(
        self, board_id: str, period: str, *, upto: str | None = None, consistent: bool = False
    ) -> list[Bucket]:
        """The board's buckets in key order, from the first up to the one holding ``upto``
        (None: all of them)."""
        prefix = f"BKT#{period}#"
        values: dict[str, Any] = {":pk": {"S": f"B#{board_id}"}, ":lo": {"S": prefix}}
        if upto is None:
            condition = "pk = :pk AND begins_with(sk, :lo)"
        else:
            condition = "pk = :pk AND sk BETWEEN :lo AND :hi"
            values[":hi"] = {"S": prefix + upto}
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ConsistentRead": consistent,
        }
        buckets: list[Bucket] = []
        while True:
            with _translate_throttling():
                response = self.client.query(**request)
            buckets.extend(_bucket_from_item(item, len(prefix)) for item in response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return buckets
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def create_first_bucket(self, board_id: str, period: str, expires: int | None) -> None:
        """The bucket below every key, counted by the stream from empty (a no-op when it
        exists)."""
        from botocore.exceptions import ClientError

        item = _bucket_item(board_id, period, Bucket(BELOW_EVERY_KEY, 0, 1), expires)
        try:
            with _translate_throttling():
                self.client.put_item(
                    TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)"
                )
        except ClientError as error:
            if _error_code(error) != "ConditionalCheckFailedException":
                raise

    def bucket_state(self, board_id: str, period: str, lo: str) -> BucketState:
        """What a bucket records per member (its moved map, and its parts while it splits),
        read consistently."""
        with _translate_throttling():
            response = self.client.get_item(
                TableName=self.table, Key=_bucket_state_key(board_id, period, lo), ConsistentRead=True
            )
        item = response.get("Item")
        if item is None:
            return BucketState({}, {}, 0)
        return BucketState(
            moved={m: int(v["N"]) for m, v in item.get("mv", {}).get("M", {}).items()},
            parts={m: int(v["N"]) for m, v in item.get("pm", {}).get("M", {}).items()},
            version=int(item["sv"]["N"]),
        )

    def bucket_snapshot(self, board_id: str, period: str, lo: str, epoch: int) -> frozenset[str]:
        """The member hashes that a bucket's last scan showed in it."""
        with _translate_throttling():
            response = self.client.get_item(
                TableName=self.table,
                Key=_bucket_snapshot_key(board_id, period, lo, epoch),
                ConsistentRead=True,
            )
        item = response.get("Item")
        if item is None:
            raise RuntimeError(f"the snapshot of bucket {lo!r} ({epoch}) of {board_id} is missing")
        return _unpack_hashes(bytes(item["m"]["B"]))

    def apply_bucket_steps(
        self, mark: str, board_id: str, period: str, member: str, steps: Sequence[Step]
    ) -> bool:
        """Apply one stream record's steps to the buckets, once (``mark``): False when the
        record was applied before; BucketMoved when a bucket's epoch, or the member's entry
        in a moved map, is not what the steps were decided on (read them again)."""
        from botocore.exceptions import ClientError

        actions: list[Any] = [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": mark_item(mark),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
        ]
        for step in steps:
            key = _bucket_key(board_id, period, step.bucket.lo)
            epoch = {":e": {"N": str(step.bucket.epoch)}}
            if step.delta:
                actions.append(
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": key,
                            "UpdateExpression": "ADD n :d",
                            "ConditionExpression": "e = :e",
                            "ExpressionAttributeValues": {**epoch, ":d": {"N": str(step.delta)}},
                        }
                    }
                )
            else:
                actions.append(
                    {
                        "ConditionCheck": {
                            "TableName": self.table,
                            "Key": key,
                            "ConditionExpression": "e = :e",
                            "ExpressionAttributeValues": epoch,
                        }
                    }
                )
            if step.moved is None and step.part is None:
                continue
            sets, conditions = [], []
            values: dict[str, Any] = {":one": {"N": "1"}}
            if step.moved is not None:
                sets.append("mv.#m = :mv")
                values[":mv"] = {"N": str(step.moved)}
                if not step.moved_checked:
                    conditions.append("attribute_exists(mv)")
                elif step.moved_was is None:
                    conditions.append("attribute_not_exists(mv.#m)")
                else:
                    conditions.append("mv.#m = :was")
                    values[":was"] = {"N": str(step.moved_was)}
            if step.part is not None:
                sets.append("pm.#m = :pm")
                values[":pm"] = {"N": str(step.part)}
                conditions.append("attribute_exists(pm)")
            update: dict[str, Any] = {
                "TableName": self.table,
                "Key": _bucket_state_key(board_id, period, step.bucket.lo),
                "UpdateExpression": f"SET {', '.join(sets)} ADD sv :one",
                "ConditionExpression": " AND ".join(conditions),
                "ExpressionAttributeNames": {"#m": member},
                "ExpressionAttributeValues": values,
            }
            actions.append({"Update": update})
        try:
            with _translate_throttling():
                self.client.transact_write_items(TransactItems=actions)
        except ClientError as error:
            codes = _cancellation_codes(error)
            if codes and codes[0] == "ConditionalCheckFailed":
                return False
            if "ConditionalCheckFailed" in codes:
                raise BucketMoved(board_id, period) from error
            raise
        return True

    def start_split(
        self,
        board_id: str,
        period: str,
        bucket: Bucket,
        cuts: Sequence[str],
        now_us: int,
        expires: int | None,
    ) -> bool:
        """Mark ``bucket`` as splitting at ``cuts`` since ``now_us`` (a new epoch, and empty
        parts), if it is unchanged since read; False otherwise."""
        from botocore.exceptions import ClientError

        actions: list[Any] = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": _bucket_key(board_id, period, bucket.lo),
                    "UpdateExpression": "SET ps = :ps, pt = :pt, e = :next",
                    "ConditionExpression": "e = :e AND attribute_not_exists(ps)",
                    "ExpressionAttributeValues": {
                        ":ps": {"L": [{"S": cut} for cut in cuts]},
                        ":pt": {"N": str(now_us)},
                        ":e": {"N": str(bucket.epoch)},
                        ":next": {"N": str(bucket.epoch + 1)},
                    },
                }
            },
            {
                "Update": {
                    "TableName": self.table,
                    "Key": _bucket_state_key(board_id, period, bucket.lo),
                    "UpdateExpression": "SET pm = :empty, #ttl = :ttl ADD sv :one",
                    "ExpressionAttributeNames": {"#ttl": "ttl"},
                    "ExpressionAttributeValues": {
                        ":empty": {"M": {}},
                        ":one": {"N": "1"},
                        ":ttl": {"N": str(expires or 0)},
                    },
                }
            },
        ]
        try:
            with _translate_throttling():
                self.client.transact_write_items(TransactItems=actions)
        except ClientError as error:
            if "ConditionalCheckFailed" in _cancellation_codes(error):
                return False
            raise
        return True

    def finish_split(self, board_id: str, period: str, split: FinishedSplit, expires: int | None) -> bool:
        """Write the parts of a split (and the members its scan showed in each) in place of
        the splitting bucket, if neither the bucket nor what it records changed since read;
        False otherwise."""
        from botocore.exceptions import ClientError

        for piece, members in zip(split.pieces, split.scanned, strict=True):
            snapshot = {
                **_bucket_snapshot_key(board_id, period, piece.lo, piece.snapshot_epoch),
                "m": {"B": _pack_hashes(members)},
            }
            if expires is not None:
                snapshot["ttl"] = {"N": str(expires)}
            with _translate_throttling():
                self.client.put_item(TableName=self.table, Item=snapshot)
        actions: list[Any] = []
        for index, (piece, moved) in enumerate(zip(split.pieces, split.moved, strict=True)):
            first = index == 0
            bucket: dict[str, Any] = {
                "TableName": self.table,
                "Item": _bucket_item(board_id, period, piece, expires),
                "ConditionExpression": "e = :e" if first else "attribute_not_exists(pk)",
            }
            state: dict[str, Any] = {
                "TableName": self.table,
                "Item": {
                    **_bucket_state_key(board_id, period, piece.lo),
                    "mv": {"M": {m: {"N": str(v)} for m, v in moved.items()}},
                    "sv": {"N": "1"},
                    **({"ttl": {"N": str(expires)}} if expires is not None else {}),
                },
            }
            if first:
                bucket["ExpressionAttributeValues"] = {":e": {"N": str(split.old.epoch)}}
                state["ConditionExpression"] = "sv = :sv"
                state["ExpressionAttributeValues"] = {":sv": {"N": str(split.state_version)}}
            actions += [{"Put": bucket}, {"Put": state}]
        try:
            with _translate_throttling():
                self.client.transact_write_items(TransactItems=actions)
        except ClientError as error:
            if "ConditionalCheckFailed" in _cancellation_codes(error):
                return False
            raise
        return True

    def replace_buckets(
        self, board_id: str, period: str, buckets: Sequence[Bucket], expires: int | None
    ) -> None:
        """Rebuild: drop the period's buckets and write ``buckets`` (maintenance, not for a
        board whose stream is busy)."""
        existing = self.list_buckets(board_id, period, consistent=True)
        wanted = {b.lo for b in buckets}
        deletes = [
            {"DeleteRequest": {"Key": _bucket_key(board_id, period, b.lo)}}
            for b in existing
            if b.lo not in wanted
        ]
        puts = [{"PutRequest": {"Item": _bucket_item(board_id, period, b, expires)}} for b in buckets]
        self._batch_write(deletes + puts)

    # -- the change stream ------------------------------------------------------------

    def apply_member_count(
        self, event_id: str, board_id: str, delta: int, period: str = ALL_TIME, expires: int | None = None
    ) -> bool:
        """Add ``delta`` to the board's memberCount (or, for a period of a time-windowed
        board, to that period's count) once per stream record; False when this record was
        applied before (a redelivery)."""
        from botocore.exceptions import ClientError

        if period == ALL_TIME:
            counter: dict[str, Any] = {
                "Key": board_key(board_id),
                "UpdateExpression": "ADD memberCount :d",
                "ConditionExpression": "attribute_exists(pk)",
                "ExpressionAttributeValues": {":d": {"N": str(delta)}},
            }
        else:
            counter = {
                "Key": period_count_key(board_id, period),
                "UpdateExpression": "ADD memberCount :d SET #ttl = :ttl",
                "ExpressionAttributeNames": {"#ttl": "ttl"},
                "ExpressionAttributeValues": {":d": {"N": str(delta)}, ":ttl": {"N": str(expires or 0)}},
            }

        actions: list[Any] = [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": mark_item(f"STREAM#{event_id}"),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {"Update": {"TableName": self.table, **counter}},
        ]
        try:
            with _translate_throttling():
                self.client.transact_write_items(TransactItems=actions)
        except ClientError as error:
            codes = _cancellation_codes(error)
            if codes and codes[0] == "ConditionalCheckFailed":
                return False
            if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                return False  # the board is gone: nothing to count
            raise
        return True

    # -- rollups ----------------------------------------------------------------------

    def rollup_state(
        self, board_id: str, member_id: str, period: str, mark: str
    ) -> tuple[bool, ScoreState | None]:
        """Whether ``mark`` exists, and the member's score on the target board."""
        key = score_key(board_id, member_id, period)
        items = self._batch_get([key, {"pk": {"S": mark}, "sk": {"S": "APPLIED"}}], consistent=True)
        score = items.get((key["pk"]["S"], key["sk"]["S"]))
        return (mark, "APPLIED") in items, (_score_from_item(score) if score else None)

    # -- rivals and the inbox ---------------------------------------------------------

    def get_rivals(self, board_id: str, member_id: str) -> Rivals | None:
        with _translate_throttling():
            response = self.client.get_item(
                TableName=self.table, Key=_rivals_key(board_id, member_id), ConsistentRead=True
            )
        item = response.get("Item")
        return _rivals_from_item(item) if item else None

    def put_rivals(self, board_id: str, member_id: str, rivals: Rivals, previous: Rivals) -> None:
        """Replace the member's rivals. Follower edges (``F#{board}#{rival}`` / follower)
        let one query find who follows a member; new edges are written before the list, and
        the edges of rivals dropped expire after the list (they stay while a late change
        may still be judged by the follow that ended: ``Rivals.ended``). Readers trust an
        edge only as far as the list agrees, so a request that fails half-way changes
        nothing anyone can see."""
        added = [r for r in rivals.ids if r not in previous.ids]
        removed = [r for r in previous.ids if r not in rivals.ids]
        self._batch_write(
            [{"PutRequest": {"Item": _edge_key(board_id, rival, member_id)}} for rival in added]
        )
        item: dict[str, Any] = {
            **_rivals_key(board_id, member_id),
            "ids": {"L": [{"S": r} for r in rivals.ids]},
            "since": {"M": {r: {"N": str(t)} for r, t in rivals.since.items()}},
            "ended": {"M": {r: {"L": [{"N": str(a)}, {"N": str(b)}]} for r, (a, b) in rivals.ended.items()}},
        }
        with _translate_throttling():
            self.client.put_item(TableName=self.table, Item=item)
        expires = str(int(time.time()) + ENDED_FOLLOW_KEEP_US // 1_000_000)
        self._batch_write(
            [
                {"PutRequest": {"Item": {**_edge_key(board_id, rival, member_id), "ttl": {"N": expires}}}}
                for rival in removed
            ]
        )

    def followers(self, board_id: str, member_id: str) -> list[str]:
        """The members whose rivals list names ``member_id``, or did lately (one query,
        paginated)."""
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": f"F#{board_id}{SEPARATOR}{member_id}"}},
            "ProjectionExpression": "sk",
        }
        return [item["sk"]["S"] for item in self._query_items(request)]

    def follower_states(
        self, board_id: str, followers: Sequence[str], period: str
    ) -> dict[str, tuple[ScoreState | None, Rivals]]:
        """Each follower's score and rivals list, in one batched read."""
        keys = []
        for follower in followers:
            keys.append(score_key(board_id, follower, period))
            keys.append(_rivals_key(board_id, follower))
        items = self._batch_get(keys, consistent=True)
        states = {}
        for follower in followers:
            pk = member_pk(board_id, follower)
            score = items.get((pk, f"SCORE#{period}"))
            rivals = items.get((pk, "RIVALS"))
            states[follower] = (
                _score_from_item(score) if score else None,
                _rivals_from_item(rivals) if rivals else Rivals(),
            )
        return states

    def put_notification(self, notification: Notification, ttl_seconds: int) -> bool:
        """Store the notification in the recipient's inbox; False when it is there already."""
        from botocore.exceptions import ClientError

        item = {
            **_inbox_key(notification),
            **_notification_attributes(notification),
            "published": {"BOOL": False},
            "ttl": {"N": str(notification.created_us // 1_000_000 + ttl_seconds)},
        }
        try:
            with _translate_throttling():
                self.client.put_item(
                    TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)"
                )
        except ClientError as error:
            if _error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def notification_published(self, notification: Notification) -> bool:
        with _translate_throttling():
            response = self.client.get_item(
                TableName=self.table, Key=_inbox_key(notification), ConsistentRead=True
            )
        item = response.get("Item")
        return bool(item and item.get("published", {}).get("BOOL"))

    def mark_published(self, notification: Notification) -> None:
        with _translate_throttling():
            self.client.update_item(
                TableName=self.table,
                Key=_inbox_key(notification),
                UpdateExpression="SET published = :t",
                ExpressionAttributeValues={":t": {"BOOL": True}},
            )

    def list_notifications(
        self, board_id: str, member_id: str, limit: int, before: str | None, now_s: int
    ) -> tuple[list[Notification], str | None]:
        """Newest first; items past their TTL that DynamoDB has not yet removed are skipped."""
        items, next_key = self._newest_first_page(f"N#{board_id}{SEPARATOR}{member_id}", limit, before, now_s)
        return [_notification_from_item(item) for item in items], next_key

    # -- the leader -------------------------------------------------------------------

    def get_leader(self, board_id: str, period: str) -> LeaderState | None:
        with _translate_throttling():
            response = self.client.get_item(
                TableName=self.table, Key=_leader_key(board_id, period), ConsistentRead=True
            )
        item = response.get("Item")
        if not item:
            return None
        pending = (
            [_notification_from_json(n) for n in numbers.loads(item["pending"]["S"])]
            if "pending" in item
            else []
        )
        return LeaderState(
            member_id=item["leader"]["S"] if "leader" in item else None,
            sort_key=item["rsk"]["S"] if "rsk" in item else None,
            score=_deserializer.deserialize(item["s"]) if "s" in item else None,
            version=int(item["lv"]["N"]),
            pending=pending,
        )

    def swap_leader(
        self,
        board_id: str,
        period: str,
        expected_version: int | None,
        leader: tuple[str, str, Decimal] | None,
        pending: list[Notification],
    ) -> bool:
        """Record a new leader with the notifications it causes, if nobody else changed
        the record since version ``expected_version`` (None: no record yet)."""
        from botocore.exceptions import ClientError

        item: dict[str, Any] = {
            **_leader_key(board_id, period),
            "lv": {"N": str((expected_version or 0) + 1)},
        }
        if leader is not None:
            item["leader"] = {"S": leader[0]}
            item["rsk"] = {"S": leader[1]}
            item["s"] = _serializer.serialize(leader[2])
        if pending:
            item["pending"] = {"S": numbers.dumps([_notification_to_json(n) for n in pending])}
        request: dict[str, Any] = {"TableName": self.table, "Item": item}
        if expected_version is None:
            request["ConditionExpression"] = "attribute_not_exists(pk)"
        else:
            request["ConditionExpression"] = "lv = :v"
            request["ExpressionAttributeValues"] = {":v": {"N": str(expected_version)}}
        try:
            with _translate_throttling():
                self.client.put_item(**request)
        except ClientError as error:
            if _error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def clear_leader_pending(self, board_id: str, period: str, version: int) -> None:
        from botocore.exceptions import ClientError

        try:
            with _translate_throttling():
                self.client.update_item(
                    TableName=self.table,
                    Key=_leader_key(board_id, period),
                    UpdateExpression="REMOVE pending",
                    ConditionExpression="lv = :v",
                    ExpressionAttributeValues={":v": {"N": str(version)}},
                )
        except ClientError as error:
            if _error_code(error) != "ConditionalCheckFailedException":
                raise  # a newer leader record replaced ours: its own pending list stands

    # -- the event log ----------------------------------------------------------------

    def log_events(self, events: Sequence[LoggedEvent], expires: int) -> None:
        """Insert the events, all or none, in one transaction (inserts only: no read)."""
        items: list[Any] = []
        for event in events:
            item: dict[str, Any] = {
                **event_key(event),
                "p": {"S": event.period},
                "v": _serializer.serialize(event.value),
                "i": {"S": event.insertion},
                "ttl": {"N": str(expires)},
            }
            if event.event_id is not None:
                item["e"] = {"S": event.event_id}
            items.append({"Put": {"TableName": self.table, "Item": item}})
        with _translate_throttling():
            self.client.transact_write_items(TransactItems=items)

    def claim_event_id(self, board_id: str, event_id: str, insertion: str, expires: int) -> bool:
        """The first insert of an eventId on a board claims it for 24 hours; False for a
        later insert that reuses it (a redelivery of the same insert claims it again)."""
        from botocore.exceptions import ClientError

        try:
            with _translate_throttling():
                self.client.put_item(
                    TableName=self.table,
                    Item={
                        **_claim_key(board_id, event_id),
                        "i": {"S": insertion},
                        "ttl": {"N": str(expires)},
                    },
                    ConditionExpression="attribute_not_exists(pk) OR i = :i",
                    ExpressionAttributeValues={":i": {"S": insertion}},
                )
        except ClientError as error:
            if _error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def claim_for_fold(self, event: LoggedEvent, fold: str, member_pk_: str) -> tuple[str, str]:
        """Mark the logged event as being folded by ``fold``: ("mine", the insertion it
        now holds - a re-send before the fold replaces the item), or ("folded", …) when an
        earlier fold committed it, or ("gone", …). A fold that never committed is taken
        over: a stream shard is processed by one invocation at a time, so its owner ended."""
        from botocore.exceptions import ClientError

        expected: str | None = None
        for _ in range(3):
            condition = "attribute_exists(pk) AND " + (
                "fold = :old" if expected else "(attribute_not_exists(fold) OR fold = :f)"
            )
            values: dict[str, Any] = {":f": {"S": fold}}
            if expected:
                values[":old"] = {"S": expected}
            try:
                with _translate_throttling():
                    response = self.client.update_item(
                        TableName=self.table,
                        Key=event_key(event),
                        UpdateExpression="SET fold = :f",
                        ConditionExpression=condition,
                        ExpressionAttributeValues=values,
                        ReturnValues="ALL_NEW",
                        ReturnValuesOnConditionCheckFailure="ALL_OLD",
                    )
                return "mine", str(response["Attributes"]["i"]["S"])
            except ClientError as error:
                if _error_code(error) != "ConditionalCheckFailedException":
                    raise
                old = getattr(error, "response", {}).get("Item") or {}
                if not old:
                    return "gone", ""
                previous = old.get("fold", {}).get("S")
                if previous and self.fold_committed(member_pk_, previous):
                    return "folded", ""
                expected = previous
        return "gone", ""

    def claim_many_for_fold(
        self, board_id: str, events: Sequence[LoggedEvent], fold: str, expires: int
    ) -> bool:
        """The common case in one round trip per 50 events: each event (as its stream record
        shows it) marked for ``fold`` and its id claimed, in one transaction; False when
        any condition fails, and then nothing was written (the caller goes one by one)."""
        from botocore.exceptions import ClientError

        actions: list[Any] = []
        for event in events:
            actions.append(
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": event_key(event),
                        "UpdateExpression": "SET fold = :f",
                        "ConditionExpression": "i = :i AND (attribute_not_exists(fold) OR fold = :f)",
                        "ExpressionAttributeValues": {":f": {"S": fold}, ":i": {"S": event.insertion}},
                    }
                }
            )
            if event.event_id is not None:
                actions.append(
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": {
                                **_claim_key(board_id, event.event_id),
                                "i": {"S": event.insertion},
                                "ttl": {"N": str(expires)},
                            },
                            "ConditionExpression": "attribute_not_exists(pk) OR i = :i",
                            "ExpressionAttributeValues": {":i": {"S": event.insertion}},
                        }
                    }
                )
        try:
            with _translate_throttling():
                self.client.transact_write_items(TransactItems=actions)
        except ClientError as error:
            if _error_code(error) == "TransactionCanceledException":
                return False
            raise
        return True

    def logged_now(self, events: Sequence[LoggedEvent]) -> dict[str, LoggedEvent]:
        """The events as the log holds them now (key -> event), read consistently in
        batches: a redelivered record whose event was folded and deleted is absent."""
        if not events:
            return {}
        board_id, member_id = events[0].board_id, events[0].member_id
        items = self._batch_get([event_key(e) for e in events], consistent=True)
        return {key[1]: _event_from_item(board_id, member_id, item) for key, item in items.items()}

    def fold_committed(self, member_pk_: str, fold: str) -> bool:
        with _translate_throttling():
            response = self.client.get_item(
                TableName=self.table, Key=_fold_mark_key(member_pk_, fold), ConsistentRead=True
            )
        return "Item" in response

    def committed_folds(self, member_pk_: str, folds: set[str]) -> set[str]:
        items = self._batch_get([_fold_mark_key(member_pk_, f) for f in folds], consistent=True)
        return {f for f in folds if (f"FOLD#{member_pk_}#{f}", "APPLIED") in items}

    def id_claims(self, board_id: str, event_ids: set[str]) -> dict[str, str]:
        items = self._batch_get([_claim_key(board_id, e) for e in event_ids], consistent=True)
        claims = {}
        for event_id in event_ids:
            key = _claim_key(board_id, event_id)
            item = items.get((key["pk"]["S"], key["sk"]["S"]))
            if item:
                claims[event_id] = item["i"]["S"]
        return claims

    def delete_events(self, events: Sequence[LoggedEvent]) -> None:
        self._batch_write([{"DeleteRequest": {"Key": event_key(e)}} for e in events])

    def count_dropped(self, board_id: str, member_pk_: str, fold: str, count: int) -> None:
        """Add ``count`` to the board's droppedEvents, once per fold."""
        from botocore.exceptions import ClientError

        actions: list[Any] = [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": mark_item(f"FOLD#{member_pk_}#{fold}"),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {
                "Update": {
                    "TableName": self.table,
                    "Key": board_key(board_id),
                    "UpdateExpression": "ADD droppedEvents :n",
                    "ExpressionAttributeValues": {":n": {"N": str(count)}},
                }
            },
        ]
        try:
            with _translate_throttling():
                self.client.transact_write_items(TransactItems=actions)
        except ClientError as error:
            if "ConditionalCheckFailed" not in _cancellation_codes(error):
                raise

    def pending_events(self, board_id: str, member_id: str) -> list[LoggedEvent]:
        """The member's logged events not yet deleted by a fold: one consistent query per
        bucket, concurrently; the items read are the pending events themselves."""

        def bucket(index: int) -> list[LoggedEvent]:
            request: dict[str, Any] = {
                "TableName": self.table,
                "KeyConditionExpression": "pk = :p",
                "ExpressionAttributeValues": {":p": {"S": _event_pk(board_id, member_id, index)}},
                "ConsistentRead": True,
            }
            return [_event_from_item(board_id, member_id, item) for item in self._query_items(request)]

        return [event for events in self.gather(bucket, list(range(EVENT_BUCKETS))) for event in events]

    # -- snapshots ----------------------------------------------------------------------
    # The scheduled job's record of every board: S#{boardId} / {takenAt, ISO with µs, UTC},
    # so a query with ScanIndexForward=False lists a board's snapshots newest first.

    def list_board_ids(self, limit: int, after: str | None) -> tuple[list[str], str | None]:
        """A page of board ids from the catalog, in id order, and the id to continue
        after (None at the end)."""
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :c",
            "ExpressionAttributeValues": {":c": {"S": "CATALOG"}},
            "Limit": limit,
        }
        if after is not None:
            request["ExclusiveStartKey"] = {"pk": {"S": "CATALOG"}, "sk": {"S": after}}
        with _translate_throttling():
            response = self.client.query(**request)
        ids = [item["sk"]["S"] for item in response.get("Items", [])]
        more = "LastEvaluatedKey" in response and bool(ids)
        return ids, (ids[-1] if more else None)

    def put_snapshot(self, snapshot: Snapshot, expires_at: int) -> bool:
        """Record the snapshot; False, writing nothing, when the snapshot of that board and
        time is there already (a retried run keeps the first one)."""
        from botocore.exceptions import ClientError

        item = {
            **snapshot_key(snapshot.board_id, snapshot.taken_at),
            "id": {"S": snapshot.snapshot_id},
            "memberCount": {"N": str(snapshot.member_count)},
            "entries": {"S": numbers.dumps([entry.to_json() for entry in snapshot.entries])},
            "ttl": {"N": str(expires_at)},
        }
        try:
            with _translate_throttling():
                self.client.put_item(
                    TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)"
                )
        except ClientError as error:
            if _error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def list_snapshots(
        self, board_id: str, limit: int, before_sort_key: str | None, now_s: int | None = None
    ) -> tuple[list[Snapshot], str | None]:
        """A page of the board's snapshots, newest first, taken before ``before_sort_key``
        (None: from the newest), and the sort key to continue before (None at the end).
        Snapshots past their TTL that DynamoDB has not yet removed are skipped."""
        now = int(time.time()) if now_s is None else now_s
        items, next_key = self._newest_first_page(f"S#{board_id}", limit, before_sort_key, now)
        return [_snapshot_from_item(board_id, item) for item in items], next_key

    # -- helpers ----------------------------------------------------------------------

    def _create_together(
        self, new_items: list[dict[str, Any]], also: list[dict[str, Any]] | None = None
    ) -> bool:
        """Put ``new_items`` (each only if absent) and ``also`` in one transaction;
        False, writing nothing, when any of ``new_items`` exists already."""
        from botocore.exceptions import ClientError

        puts: list[Any] = [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": item,
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
            for item in new_items
        ]
        puts += [{"Put": {"TableName": self.table, "Item": item}} for item in also or []]
        try:
            with _translate_throttling():
                self.client.transact_write_items(TransactItems=puts)
        except ClientError as error:
            if "ConditionalCheckFailed" in _cancellation_codes(error):
                return False
            raise
        return True

    def _query_pages(self, request: dict[str, Any]) -> Iterator[QueryOutputTypeDef]:
        """Each response of a query, following ``LastEvaluatedKey`` past the 1 MB page
        limit. ``request`` is updated in place with the key to start from, so a caller
        that reads a limited number of items may change its ``Limit`` between pages."""
        while True:
            with _translate_throttling():
                response = self.client.query(**request)
            yield response
            if "LastEvaluatedKey" not in response:
                return
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def _newest_first_page(
        self, pk: str, limit: int, before: str | None, now_s: int
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Up to ``limit`` items of partition ``pk``, highest sort key first, below
        ``before`` (None: from the highest), and the sort key to continue below (None at
        the end). Items whose ``ttl`` is past ``now_s`` but that DynamoDB has not yet
        removed are skipped. The filter applies after ``Limit``, so pages are read until
        one item more than ``limit`` is found (there is a next page) or the partition ends."""
        condition = "pk = :p"
        values: dict[str, Any] = {":p": {"S": pk}, ":now": {"N": str(now_s)}}
        if before is not None:
            condition += " AND sk < :b"
            values[":b"] = {"S": before}
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": condition,
            "FilterExpression": "#ttl > :now",
            "ExpressionAttributeNames": {"#ttl": "ttl"},
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
            "Limit": limit + 1,
        }
        found: list[dict[str, Any]] = []
        for response in self._query_pages(request):
            found.extend(response.get("Items", []))
            if len(found) > limit:
                break
            request["Limit"] = limit + 1 - len(found)
        page = found[:limit]
        return page, (page[-1]["sk"]["S"] if len(found) > limit and page else None)

    def _query_items(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every item a query finds, over all its pages."""
        for response in self._query_pages(request):
            yield from response.get("Items", [])

    def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        for start in range(0, len(requests), 25):
            pending: Any = {self.table: requests[start : start + 25]}
            delay = 0.01
            while pending:
                with _translate_throttling():
                    pending = self.client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
                if pending:
                    time.sleep(delay)
                    delay = min(delay * 2, 1.0)

    def _batch_get(
        self, keys: list[dict[str, Any]], *, consistent: bool
    ) -> dict[tuple[str, str], dict[str, Any]]:
        found: dict[tuple[str, str], dict[str, Any]] = {}
        unique = list({(k["pk"]["S"], k["sk"]["S"]): k for k in keys}.values())
        chunks = [unique[i : i + 100] for i in range(0, len(unique), 100)]

        def fetch(chunk: list[dict[str, Any]]) -> list[dict[str, Any]]:
            items: list[dict[str, Any]] = []
            request: dict[str, Any] = {self.table: {"Keys": chunk, "ConsistentRead": consistent}}
            delay = 0.01
            while request:
                with _translate_throttling():
                    response = self.client.batch_get_item(RequestItems=request)
                items.extend(response.get("Responses", {}).get(self.table, []))
                request = response.get("UnprocessedKeys") or {}
                if request:
                    time.sleep(delay)
                    delay = min(delay * 2, 1.0)
            return items

        for items in self.gather(fetch, chunks):
            for item in items:
                found[(item["pk"]["S"], item["sk"]["S"])] = item
        return found


@dataclass(frozen=True)
class View:
    board: Board | None
    period_count: int
    score: ScoreState | None
    head: Head | None


@dataclass(frozen=True)
class BucketState:
    """What a bucket records per member hash: ``moved`` (its membership as the count has
    it, for records its last scan may already show) and ``parts`` (while it splits)."""

    moved: dict[str, int]
    parts: dict[str, int]
    version: int


@dataclass(frozen=True)
class FinishedSplit:
    """A split's outcome (``podium.buckets.split_counts``): the buckets in place of ``old``
    (the first keeps its ``lo``), what each records, and the members the scan showed in
    each."""

    old: Bucket
    state_version: int
    pieces: list[Bucket]
    moved: list[dict[str, int]]
    scanned: list[frozenset[str]]


class BucketMoved(Exception):
    """A bucket was split, or what it records changed, since it was read: read again."""


def head_key(board_id: str, period: str) -> dict[str, Any]:
    return {"pk": {"S": f"B#{board_id}"}, "sk": {"S": f"HEAD#{period}"}}


def _head_from_item(item: dict[str, Any]) -> Head:
    keys = head_codec.decode(bytes(item["k"]["B"]))
    ladder = None
    if "l" in item:
        total = int(item["lt"]["N"]) if "lt" in item else None
        ladder = head_codec.decode_ladder(bytes(item["l"]["B"]), total, int(item["ln"]["N"]))
    members = {member_of_key(k): k for k in keys}
    return Head(keys, bool(item["c"]["BOOL"]), int(item["v"]["N"]), members, ladder)


def _bucket_key(board_id: str, period: str, lo: str) -> dict[str, Any]:
    return {"pk": {"S": f"B#{board_id}"}, "sk": {"S": f"BKT#{period}#{lo}"}}


def _bucket_item(board_id: str, period: str, bucket: Bucket, expires: int | None) -> dict[str, Any]:
    item: dict[str, Any] = {
        **_bucket_key(board_id, period, bucket.lo),
        "n": {"N": str(bucket.count)},
        "e": {"N": str(bucket.epoch)},
    }
    if bucket.snapshot_end_us:
        item["se"] = {"N": str(bucket.snapshot_end_us)}
        item["sx"] = {"N": str(bucket.snapshot_epoch)}
    if bucket.cuts:
        item["ps"] = {"L": [{"S": cut} for cut in bucket.cuts]}
        item["pt"] = {"N": str(bucket.split_since_us)}
    if expires is not None:
        item["ttl"] = {"N": str(expires)}
    return item


def _bucket_from_item(item: dict[str, Any], prefix_length: int) -> Bucket:
    return Bucket(
        lo=item["sk"]["S"][prefix_length:],
        count=int(item["n"]["N"]),
        epoch=int(item["e"]["N"]),
        snapshot_end_us=int(item["se"]["N"]) if "se" in item else 0,
        snapshot_epoch=int(item["sx"]["N"]) if "sx" in item else 0,
        cuts=tuple(cut["S"] for cut in item["ps"]["L"]) if "ps" in item else (),
        split_since_us=int(item["pt"]["N"]) if "pt" in item else 0,
    )


def _bucket_state_key(board_id: str, period: str, lo: str) -> dict[str, Any]:
    return {"pk": {"S": f"B#{board_id}"}, "sk": {"S": f"BST#{period}#{lo}"}}


def _bucket_snapshot_key(board_id: str, period: str, lo: str, epoch: int) -> dict[str, Any]:
    return {"pk": {"S": f"B#{board_id}"}, "sk": {"S": f"BSN#{period}#{epoch}#{lo}"}}


def _pack_hashes(members: frozenset[str]) -> bytes:
    """Member hashes (``buckets.member_hash``: 8 bytes in base64) as sorted raw bytes."""
    return b"".join(sorted(base64.b64decode(m + "=") for m in members))


def _unpack_hashes(packed: bytes) -> frozenset[str]:
    return frozenset(
        base64.b64encode(packed[i : i + 8]).decode("ascii").rstrip("=") for i in range(0, len(packed), 8)
    )


def _rivals_key(board_id: str, member_id: str) -> dict[str, Any]:
    return {"pk": {"S": member_pk(board_id, member_id)}, "sk": {"S": "RIVALS"}}


def _rivals_from_item(item: dict[str, Any]) -> Rivals:
    since = {r: int(v["N"]) for r, v in item.get("since", {}).get("M", {}).items()}
    ended = {
        r: (int(v["L"][0]["N"]), int(v["L"][1]["N"])) for r, v in item.get("ended", {}).get("M", {}).items()
    }
    return Rivals(tuple(v["S"] for v in item["ids"]["L"]), since, ended)


def _edge_key(board_id: str, rival: str, follower: str) -> dict[str, Any]:
    return {"pk": {"S": f"F#{board_id}{SEPARATOR}{rival}"}, "sk": {"S": follower}}


def _leader_key(board_id: str, period: str) -> dict[str, Any]:
    return {"pk": {"S": f"B#{board_id}"}, "sk": {"S": f"LEADER#{period}"}}


def inbox_sort_key(notification: Notification) -> str:
    return f"{notification.created_us:017d}{SEPARATOR}{notification.notification_id}"


def _inbox_key(notification: Notification) -> dict[str, Any]:
    pk = f"N#{notification.board_id}{SEPARATOR}{notification.member_id}"
    return {"pk": {"S": pk}, "sk": {"S": inbox_sort_key(notification)}}


def _notification_to_json(n: Notification) -> dict[str, Any]:
    return {**n.to_json(), "createdUs": n.created_us}


def _notification_from_json(raw: dict[str, Any]) -> Notification:
    return Notification(
        notification_id=raw["id"],
        type=raw["type"],
        board_id=raw["boardId"],
        member_id=raw["memberId"],
        by_member_id=raw["byMemberId"],
        score=raw["score"],
        by_score=raw["byScore"],
        created_us=int(raw["createdUs"]),
    )


def _notification_attributes(n: Notification) -> dict[str, Any]:
    return {
        "id": {"S": n.notification_id},
        "type": {"S": n.type},
        "by": {"S": n.by_member_id},
        "s": _serializer.serialize(n.score),
        "bs": _serializer.serialize(n.by_score),
    }


def _notification_from_item(item: dict[str, Any]) -> Notification:
    board_id, member_id = item["pk"]["S"][2:].split(SEPARATOR, 1)
    return Notification(
        notification_id=item["id"]["S"],
        type=item["type"]["S"],
        board_id=board_id,
        member_id=member_id,
        by_member_id=item["by"]["S"],
        score=_deserializer.deserialize(item["s"]),
        by_score=_deserializer.deserialize(item["bs"]),
        created_us=int(item["sk"]["S"].split(SEPARATOR, 1)[0]),
    )


EVENT_BUCKETS = 64  # a hot member's events spread over 64 partition keys (docs/capacity.md)


def _event_pk(board_id: str, member_id: str, bucket: int) -> str:
    return f"P#{board_id}{SEPARATOR}{member_id}{SEPARATOR}{bucket}"


def event_key(event: LoggedEvent) -> dict[str, Any]:
    bucket = shard_of(event.key, EVENT_BUCKETS)
    return {"pk": {"S": _event_pk(event.board_id, event.member_id, bucket)}, "sk": {"S": event.key}}


def parse_event_pk(pk: str) -> tuple[str, str]:
    """``P#{boardId}#{memberId}#{bucket}`` -> (boardId, memberId)."""
    board_id, rest = pk[2:].split(SEPARATOR, 1)
    return board_id, rest.rsplit(SEPARATOR, 1)[0]


def _event_from_item(board_id: str, member_id: str, item: dict[str, Any]) -> LoggedEvent:
    return LoggedEvent(
        board_id=board_id,
        member_id=member_id,
        period=item["p"]["S"],
        key=item["sk"]["S"],
        value=_deserializer.deserialize(item["v"]),
        insertion=item["i"]["S"],
        event_id=item["e"]["S"] if "e" in item else None,
        fold=item["fold"]["S"] if "fold" in item else None,
    )


def event_from_image(pk: str, image: dict[str, Any]) -> LoggedEvent:
    board_id, member_id = parse_event_pk(pk)
    return _event_from_item(board_id, member_id, image)


def _claim_key(board_id: str, event_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"EID#{board_id}{SEPARATOR}{event_id}"}, "sk": {"S": "EID"}}


def _fold_mark_key(member_pk_: str, fold: str) -> dict[str, Any]:
    return {"pk": {"S": f"FOLD#{member_pk_}#{fold}"}, "sk": {"S": "APPLIED"}}


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    return {name: _deserializer.deserialize(value) for name, value in item.items()}


def _board_from_item(board_id: str, item: dict[str, Any]) -> Board:
    plain = _plain(item)
    settings = BoardSettings(
        order=plain["order"],
        operator=plain["operator"],
        tie_break=plain["tieBreak"],
        shards=int(plain["shards"]),
        reset=plain.get("reset", "never"),
        retain_periods=int(plain.get("retainPeriods", 12)),
        rollup_to=tuple(plain.get("rollupTo", [])),
    )
    return Board(
        board_id=board_id,
        settings=settings,
        title=plain.get("title"),
        created_at=_parse_timestamp(plain["createdAt"]),
        member_count=max(0, int(plain.get("memberCount", 0))),
        dropped_events=int(plain.get("droppedEvents", 0)),
    )


def _score_from_item(item: dict[str, Any]) -> ScoreState:
    score = _deserializer.deserialize(item["s"])
    assert isinstance(score, Decimal)
    version = int(item["v"]["N"])
    # An item written before scores kept their history knows none of its older scores.
    history, complete = decode_history(item["h"]["S"]) if "h" in item else ((), version == 1)
    return ScoreState(score, version, int(item["t"]["N"]), history, complete)


def _profile_from_item(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "data": numbers.loads(item["data"]["S"]) if "data" in item else {},
        "createdAt": _parse_timestamp(item["createdAt"]["S"]),
        "updatedAt": _parse_timestamp(item["updatedAt"]["S"]),
    }


def snapshot_sort_key(taken_at: datetime) -> str:
    """The snapshot's sort key: its time, ISO 8601 with microseconds in UTC, whose byte
    order is time order."""
    return _timestamp(taken_at)


def snapshot_key(board_id: str, taken_at: datetime) -> dict[str, Any]:
    return {"pk": {"S": f"S#{board_id}"}, "sk": {"S": snapshot_sort_key(taken_at)}}


def _snapshot_from_item(board_id: str, item: dict[str, Any]) -> Snapshot:
    entries = [
        RankedEntry(rank=int(entry["rank"]), member_id=entry["memberId"], score=entry["score"])
        for entry in numbers.loads(item["entries"]["S"])
    ]
    return Snapshot(
        board_id=board_id,
        snapshot_id=item["id"]["S"],
        taken_at=_parse_timestamp(item["sk"]["S"]),
        member_count=int(item["memberCount"]["N"]),
        entries=entries,
    )


@cache
def default_store() -> Store:
    from podium.config import settings

    return Store(settings())
