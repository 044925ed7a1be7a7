"""The DynamoDB client and what every repository does with it: pages of a query, batched
reads and writes, transactions whose failed conditions are told apart, throttling turned
into the API's 429, and a write that failed after an attempt that may have been applied
told apart from one that changed nothing."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from podium import fanout
from podium.config import Settings
from podium.dal import routing, schema, usage
from podium.errors import (
    AlreadyApplied,
    ItemMissing,
    Throttled,
    VersionConflict,
    WriteRejected,
    WriteUnconfirmed,
)
from podium.models import index_of_partition

__all__ = ["AlreadyApplied", "ItemMissing", "VersionConflict"]

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import QueryOutputTypeDef

THROTTLING_CODES = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "ThrottlingError",
}

serializer = TypeSerializer()
deserializer = TypeDeserializer()

Item = dict[str, Any]


def error_code(error: Exception) -> str:
    response = getattr(error, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def cancellation_codes(error: Exception) -> list[str]:
    """The per-action codes of a cancelled transaction, in the actions' order."""
    response = getattr(error, "response", None) or {}
    return [str(reason.get("Code", "None")) for reason in response.get("CancellationReasons", [])]


def conditional_failure(error: Exception) -> bool:
    return error_code(error) == "ConditionalCheckFailedException"


# The operations that change the table: an attempt of one that fails without a definite
# answer may still have been applied.
WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
UNCONFIRMED = (
    "the database did not confirm a write, and whether it was applied is not known: send the "
    "request again with its Idempotency-Key, or read before sending it again"
)


class _Attempts(threading.local):
    """Whether an attempt of this thread's current write failed without a definite answer."""

    uncertain = False


ATTEMPTS = _Attempts()


def note_attempt(operation: Any, response: Any = None, caught_exception: Any = None, **_: Any) -> None:
    """botocore's ``needs-retry`` hook, called after every attempt of a call: a write's
    attempt that got no answer (a connection lost after the request was sent, a time-out)
    or a 5xx may have been applied; a throttling error, a 4xx or a connection never made
    was not."""
    from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError

    if getattr(operation, "name", "") not in WRITE_OPERATIONS:
        return
    if caught_exception is not None:
        if not isinstance(caught_exception, EndpointConnectionError | ConnectTimeoutError):
            ATTEMPTS.uncertain = True
    elif response is not None and int(response[0].status_code) >= 500:
        ATTEMPTS.uncertain = True


@contextmanager
def translate_throttling() -> Iterator[None]:
    """botocore has already retried with backoff; what still throttles is the client's 429,
    which says that the request changed nothing. So a write that failed after an attempt
    that may have been applied (``note_attempt``) is WriteUnconfirmed instead (a 500 that
    says so), holding the error to raise once reading back shows it was not applied."""
    from botocore.exceptions import BotoCoreError, ClientError

    ATTEMPTS.uncertain = False
    try:
        yield
    except ClientError as error:
        codes = {error_code(error), *cancellation_codes(error)}
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
        refused: Exception = error
        if codes & THROTTLING_CODES:
            refused = Throttled("the database is throttling requests; retry after a short wait")
            refused.__cause__ = error
        if ATTEMPTS.uncertain and (codes & THROTTLING_CODES or status >= 500):
            raise WriteUnconfirmed(UNCONFIRMED, refused) from error
        if refused is not error:
            raise refused from error
        raise
    except BotoCoreError as error:
        if ATTEMPTS.uncertain:
            raise WriteUnconfirmed(UNCONFIRMED, error) from error
        raise


def timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def parse_timestamp(text: str) -> datetime:
    return datetime.fromisoformat(text)


def plain(item: Item) -> dict[str, Any]:
    return {name: deserializer.deserialize(value) for name, value in item.items()}


# A batch the database leaves partly unprocessed (throttling, a hot partition) is sent again
# with what is left, backing off, at most this many times (about 2.5 s in all); then the
# request answers 429 Throttled instead of waiting on for the Lambda's whole time-out.
UNPROCESSED_ROUNDS = 8


def until_processed(
    send: Callable[[dict[str, Any]], dict[str, Any]], request: dict[str, Any], what: str
) -> None:
    """Send a batch request, then what the database left unprocessed of it, until nothing
    is left; ``Throttled`` after ``UNPROCESSED_ROUNDS`` tries."""
    delay = 0.02
    for _ in range(UNPROCESSED_ROUNDS):
        request = send(request)
        if not request:
            return
        time.sleep(random.uniform(delay / 2, delay))  # jittered: clients throttled together spread out
        delay = min(delay * 2, 1.0)
    raise Throttled(
        f"the database left {what} of a batch unprocessed {UNPROCESSED_ROUNDS} times; "
        "retry after a short wait"
    )


# How often an update is sent again that found its item in another writer's transaction (a
# split of the count tree holds three small items for a few milliseconds).
TRANSACTION_CONFLICT_ROUNDS = 6


# How often botocore sends a request the database throttles or fails (standard mode: a
# jittered backoff of up to 1, 2, 4, 8 s between the attempts, 15 s at most in all). A
# request that is still throttled then answers 429 Throttled well inside API Gateway's and
# the functions' 29 s; six retries (up to 51 s of backoff) often ran past them, and the
# client got a time-out instead (docs/reliability.md, "Faults").
DYNAMODB_ATTEMPTS = 5


def watched(client: DynamoDBClient) -> DynamoDBClient:
    """``client``, telling ``note_attempt`` of every attempt it makes and ``usage`` of what
    each request consumed (a test's stand-in without botocore's events is left as it is)."""
    events = getattr(getattr(client, "meta", None), "events", None)
    if events is not None:
        events.register("needs-retry.dynamodb", note_attempt, unique_id="podium-note-attempt")
        usage.attach(client)
    return client


class Tables:
    """One table's client, with the plumbing every repository shares."""

    def __init__(self, settings: Settings, client: DynamoDBClient | None = None) -> None:
        self.settings = settings
        self._client = client

    @cached_property
    def client(self) -> DynamoDBClient:
        if self._client is not None:
            return watched(self._client)
        import boto3
        from botocore.config import Config

        config = Config(
            retries={"mode": "standard", "total_max_attempts": DYNAMODB_ATTEMPTS},
            max_pool_connections=self.settings.shard_query_concurrency + 8,
        )
        return watched(boto3.client("dynamodb", config=config))

    @property
    def table(self) -> str:
        """The streamed table: members' profiles and scores, the event log, the fan-out
        jobs, and the indexes over them."""
        return self.settings.table

    def table_for(self, pk: str) -> str:
        """The table that holds the items of partition key ``pk`` (``schema.streamed``)."""
        return routing.table_for(self.settings, pk)

    def _table_of(self, request: dict[str, Any]) -> str:
        return routing.table_for(self.settings, routing.partition_of(request))

    @property
    def rank_index(self) -> str:
        return self.settings.rank_index_name

    def index_for(self, partition: str) -> tuple[str, str]:
        """The ranking index a partition key belongs to, and its key attribute."""
        index = index_of_partition(partition)
        name = self.settings.rank_index_name if index == "A" else self.settings.rank_index_b_name
        return name, schema.INDEX_KEY[index]

    # -- single requests --------------------------------------------------------------

    def get(
        self,
        key: Item,
        *,
        consistent: bool = False,
        projection: str | None = None,
        names: dict[str, str] | None = None,
    ) -> Item | None:
        request: dict[str, Any] = {
            "TableName": self.table_for(key["pk"]["S"]),
            "Key": key,
            "ConsistentRead": consistent,
        }
        if projection is not None:
            request["ProjectionExpression"] = projection
        if names:
            request["ExpressionAttributeNames"] = names
        with translate_throttling():
            response = self.client.get_item(**request)
        return response.get("Item")

    def _conditional(self, operation: Callable[..., Any], **request: Any) -> Any | None:
        """Send a conditional request: its response, or None when its condition fails."""
        from botocore.exceptions import ClientError

        try:
            with translate_throttling():
                table = request.pop("TableName", None) or self._table_of(request)
                return operation(TableName=table, **request)
        except ClientError as error:
            if conditional_failure(error):
                return None
            raise

    def put(self, item: Item, **conditions: Any) -> bool:
        """Put ``item`` (with a ``ConditionExpression`` and its values, if given); False when
        the condition fails."""
        return self._conditional(self.client.put_item, Item=item, **conditions) is not None

    def put_or_current(self, item: Item, **conditions: Any) -> tuple[Item, bool] | None:
        """Put ``item`` on its condition: None when it was written; else the item as the
        failed condition found it ({} for none) and whether botocore had sent the put more
        than once: then an earlier attempt may have written it, its answer lost."""
        from botocore.exceptions import ClientError

        try:
            with translate_throttling():
                self.client.put_item(
                    TableName=self.table_for(item["pk"]["S"]),
                    Item=item,
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                    **conditions,
                )
        except ClientError as error:
            if not conditional_failure(error):
                raise
            response: dict[str, Any] = getattr(error, "response", None) or {}
            resent = int(response.get("ResponseMetadata", {}).get("RetryAttempts", 0)) > 0
            return dict(response.get("Item") or {}), resent
        return None

    def put_if_absent(self, item: Item) -> bool:
        return self.put(item, ConditionExpression="attribute_not_exists(pk)")

    def delete(self, key: Item) -> None:
        with translate_throttling():
            self.client.delete_item(TableName=self.table_for(key["pk"]["S"]), Key=key)

    def update(self, key: Item, expression: str, **rest: Any) -> bool:
        """An UpdateItem; False when its condition fails."""
        request = {"Key": key, "UpdateExpression": expression, **rest}
        return self._conditional(self.client.update_item, **request) is not None

    def update_returning(self, key: Item, expression: str, **rest: Any) -> Item | None:
        """An UpdateItem answering the attributes it set (``UPDATED_NEW``); None when its
        condition fails."""
        request = {"Key": key, "UpdateExpression": expression, "ReturnValues": "UPDATED_NEW", **rest}
        response = self._conditional(self.client.update_item, **request)
        return None if response is None else dict(response.get("Attributes", {}))

    def update_answering(
        self, key: Item, expression: str, *, returning: str = "ALL_NEW", **rest: Any
    ) -> tuple[bool, Item | None]:
        """A conditional UpdateItem that answers with the item either way: (True, the item as
        ``returning`` says: ALL_NEW after the update, ALL_OLD before it), or, when its
        condition fails, (False, the item as the condition found it; None: no item). An
        item held by another's transaction is written again after a short wait (botocore
        does not retry that: the update was not applied)."""
        from botocore.exceptions import ClientError

        request = {
            "TableName": self.table_for(key["pk"]["S"]),
            "Key": key,
            "UpdateExpression": expression,
            "ReturnValues": returning,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            **rest,
        }
        delay = 0.01
        for attempt in range(TRANSACTION_CONFLICT_ROUNDS):
            try:
                with translate_throttling():
                    response = self.client.update_item(**request)
                return True, dict(response.get("Attributes") or {})
            except ClientError as error:
                if conditional_failure(error):
                    found = (getattr(error, "response", None) or {}).get("Item")
                    return False, dict(found) if found else None
                if (
                    error_code(error) != "TransactionConflictException"
                    or attempt + 1 == TRANSACTION_CONFLICT_ROUNDS
                ):
                    raise
            time.sleep(random.uniform(delay / 2, delay))
            delay *= 2
        raise AssertionError("unreachable")

    def delete_if(self, key: Item, condition: str, **rest: Any) -> bool:
        """A conditional DeleteItem; False when its condition fails."""
        request = {"Key": key, "ConditionExpression": condition, **rest}
        return self._conditional(self.client.delete_item, **request) is not None

    def transact(self, actions: list[Any]) -> list[str] | None:
        """Run the actions (``{"Put": {...}}`` and so on, without ``TableName``) in one
        transaction: None when it committed, else the per-action cancellation codes."""
        from botocore.exceptions import ClientError

        for action in actions:
            request = next(iter(action.values()))
            request["TableName"] = self._table_of(request)
        try:
            with translate_throttling():
                self.client.transact_write_items(TransactItems=actions)
        except ClientError as error:
            codes = cancellation_codes(error)
            if error_code(error) == "TransactionCanceledException" and codes:
                return codes
            raise
        return None

    def create_together(self, new_items: list[Item], also: list[Item] | None = None) -> bool:
        """Put ``new_items`` (each only if absent) and ``also`` in one transaction; False,
        writing nothing, when any of ``new_items`` exists already."""
        actions: list[Any] = [
            {"Put": {"Item": item, "ConditionExpression": "attribute_not_exists(pk)"}} for item in new_items
        ]
        actions += [{"Put": {"Item": item}} for item in also or []]
        codes = self.transact(actions)
        if codes is not None and "ConditionalCheckFailed" not in codes:
            raise WriteRejected("the transaction was cancelled", codes)
        return codes is None

    def mark_put(self, mark: str) -> dict[str, Any]:
        """The action that records a stream record's effect, once: it fails when the
        mark exists (the effect was applied before)."""
        return {"Put": {"Item": schema.mark_item(mark), "ConditionExpression": "attribute_not_exists(pk)"}}

    # -- queries and batches ----------------------------------------------------------

    def query_pages(self, request: dict[str, Any]) -> Iterator[QueryOutputTypeDef]:
        """Each response of a query, following ``LastEvaluatedKey`` past the 1 MB page
        limit. ``request`` is updated in place with the key to start from, so a caller
        that reads a limited number of items may change its ``Limit`` between pages."""
        if "TableName" not in request:
            request["TableName"] = routing.table_of_query(self.settings, request)
        while True:
            with translate_throttling():
                response = self.client.query(**request)
            yield response
            if "LastEvaluatedKey" not in response:
                return
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def query_items(self, request: dict[str, Any]) -> Iterator[Item]:
        """Every item a query finds, over all its pages."""
        for response in self.query_pages(request):
            yield from response.get("Items", [])

    def count(self, request: dict[str, Any]) -> int:
        request["Select"] = "COUNT"
        return sum(int(response.get("Count", 0)) for response in self.query_pages(request))

    def newest_first_page(
        self, pk: str, limit: int, before: str | None, now_s: int, *, since: str | None = None
    ) -> tuple[list[Item], str | None]:
        """Up to ``limit`` items of partition ``pk``, highest sort key first, below
        ``before`` (None: from the highest) and not below ``since`` (None: to the lowest), and
        the sort key to continue below (None at the end). Items whose ``ttl`` is past
        ``now_s`` but that DynamoDB has not yet removed are skipped. The filter applies after
        ``Limit``, so pages are read until one item more than ``limit`` is found (there is a
        next page) or the partition ends."""
        condition = "pk = :p"
        values: dict[str, Any] = {":p": {"S": pk}, ":now": {"N": str(now_s)}}
        both = int(before is not None and since is not None)
        if both and str(before) <= str(since):
            return [], None  # a cursor from before ``since``: nothing lies between
        if both:
            # A key condition has one range: BETWEEN takes ``before`` too, and it is dropped
            # below (sort keys are unique, so only that item is).
            condition += " AND sk BETWEEN :s AND :b"
            values[":s"] = {"S": since}
            values[":b"] = {"S": before}
        elif before is not None:
            condition += " AND sk < :b"
            values[":b"] = {"S": before}
        elif since is not None:
            condition += " AND sk >= :s"
            values[":s"] = {"S": since}
        request: dict[str, Any] = {
            "KeyConditionExpression": condition,
            "FilterExpression": "#ttl > :now",
            "ExpressionAttributeNames": {"#ttl": "ttl"},
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
            "Limit": limit + 1 + both,
        }
        found: list[Item] = []
        for response in self.query_pages(request):
            found.extend(item for item in response.get("Items", []) if item["sk"]["S"] != before)
            if len(found) > limit:
                break
            request["Limit"] = limit + 1 - len(found) + both
        page = found[:limit]
        return page, (page[-1]["sk"]["S"] if len(found) > limit and page else None)

    def batch_write(self, requests: list[dict[str, Any]]) -> None:
        def send(pending: dict[str, Any]) -> dict[str, Any]:
            with translate_throttling():
                return self.client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}

        for start in range(0, len(requests), 25):
            chunk: dict[str, list[dict[str, Any]]] = {}
            for request in requests[start : start + 25]:
                action = request.get("PutRequest") or request["DeleteRequest"]
                chunk.setdefault(self._table_of(action), []).append(request)
            until_processed(send, chunk, "writes")

    def batch_get(self, keys: list[Item], *, consistent: bool) -> dict[tuple[str, str], Item]:
        """The items found among ``keys``, by (pk, sk); chunks of 100 read concurrently."""
        found: dict[tuple[str, str], Item] = {}
        unique = list({(k["pk"]["S"], k["sk"]["S"]): k for k in keys}.values())
        chunks = [unique[i : i + 100] for i in range(0, len(unique), 100)]

        def fetch(chunk: list[Item]) -> list[Item]:
            items: list[Item] = []

            def send(request: dict[str, Any]) -> dict[str, Any]:
                with translate_throttling():
                    response = self.client.batch_get_item(RequestItems=request)
                for found_items in response.get("Responses", {}).values():
                    items.extend(found_items)
                return response.get("UnprocessedKeys") or {}

            request: dict[str, Any] = {}
            for key in chunk:
                table = request.setdefault(
                    self.table_for(key["pk"]["S"]), {"Keys": [], "ConsistentRead": consistent}
                )
                table["Keys"].append(key)
            until_processed(send, request, "reads")
            return items

        for items in fanout.gather(fetch, chunks):
            for item in items:
                found[(item["pk"]["S"], item["sk"]["S"])] = item
        return found
