"""What DynamoDB Local returns as ``ConsumedCapacity``, one request of each kind the
service sends, on scratch items of a board of their own (``probe``)."""

from __future__ import annotations

import random
import string
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from podium import head
from podium.dal import Database
from podium.dal.schema import head_key, profile_key, score_key, submissions_key
from podium.keys import RankOrder, member_of_key

BOARD = "probe"
PARTITION = "probe#all#0"


def _score_item(member: str, score: int) -> dict[str, Any]:
    return {
        **score_key(BOARD, member, "all"),
        "s": {"N": str(score)},
        "v": {"N": "1"},
        "t": {"N": "0"},
        "rpk": {"S": PARTITION},
        "rsk": {"S": f"{10**8 - score:09d}#{member}"},
    }


def _summary(consumed: Any) -> dict[str, Any]:
    entries = consumed if isinstance(consumed, list) else [consumed] if consumed else []
    total = sum(float(e.get("CapacityUnits", 0)) for e in entries)
    table = [e["Table"]["CapacityUnits"] for e in entries if "Table" in e]
    indexes = [
        units["CapacityUnits"] for e in entries for units in (e.get("GlobalSecondaryIndexes") or {}).values()
    ]
    return {
        "returned": bool(entries),
        "total": total,
        "table": sum(table) if table else None,
        "index": sum(indexes) if indexes else None,
    }


def item_bytes(item: dict[str, Any]) -> int:
    """An item's size as DynamoDB counts it: names and values (numbers as their digits)."""
    size = 0
    for name, value in item.items():
        kind, raw = next(iter(value.items()))
        size += len(name.encode()) + (1 if kind == "BOOL" else len(raw if kind == "B" else str(raw).encode()))
    return size


HEAD_ID_KINDS: dict[str, Callable[[random.Random, int], str]] = {
    "14-character ids (`player-0000123`)": lambda draw, i: f"player-{i:07d}",
    "36-character UUIDs": lambda draw, i: str(uuid.UUID(int=draw.getrandbits(128))),
    "64 random characters": lambda draw, i: "".join(draw.choices(string.ascii_letters + string.digits, k=64)),
}


def head_items(store: Database, note: Callable[..., None]) -> None:
    """A full head and ladder (a board of 2,000 members) written with ``Database.put_head`` and
    read back eventually consistent, for member ids of several lengths."""
    order = RankOrder(descending=True, earliest=False)
    for number, (what, make_id) in enumerate(HEAD_ID_KINDS.items()):
        draw = random.Random(3)
        keys = sorted(
            order.sort_key(Decimal(draw.randrange(10**7)), make_id(draw, i), 0) for i in range(2000)
        )
        board = f"probe-head-{number}"
        store.structures.put_head(
            board, "all", head.to_item(head.from_index(keys[: head.LADDER_REACH + 1], member_of_key)), None
        )
        response = store.tables.client.get_item(TableName=store.tables.table, Key=head_key(board, "all"))
        size = item_bytes(response["Item"])
        note("GetItem", f"head item with its ladder, {what}: {size / 1024:.1f} KB", response)


def probe(store: Database) -> list[dict[str, Any]]:
    """Send each request once through ``store.tables.client`` (which asks for INDEXES)."""
    client: Any = store.tables.client  # plain dicts in, plain dicts out
    table = store.tables.table
    found: list[dict[str, Any]] = []

    def note(operation: str, what: str, response: dict[str, Any], **extra: Any) -> None:
        found.append(
            {"operation": operation, "what": what, **_summary(response.get("ConsumedCapacity")), **extra}
        )

    note(
        "PutItem",
        "score item (under 1 KB, with index keys)",
        client.put_item(TableName=table, Item=_score_item("a", 5)),
    )
    big = {**profile_key(BOARD, "a"), "data": {"S": "x" * 60 * 1024}}
    note("PutItem", "profile item with 60 KB of data", client.put_item(TableName=table, Item=big))
    key = score_key(BOARD, "a", "all")
    note("GetItem", "score item, eventually consistent", client.get_item(TableName=table, Key=key))
    note(
        "GetItem",
        "score item, ConsistentRead",
        client.get_item(TableName=table, Key=key, ConsistentRead=True),
    )
    note(
        "GetItem",
        "60 KB profile item, ConsistentRead",
        client.get_item(TableName=table, Key=profile_key(BOARD, "a"), ConsistentRead=True),
    )
    missing = score_key(BOARD, "nobody", "all")
    note(
        "GetItem",
        "a key that does not exist, ConsistentRead",
        client.get_item(TableName=table, Key=missing, ConsistentRead=True),
    )
    note(
        "BatchGetItem",
        "two keys that do not exist, ConsistentRead",
        client.batch_get_item(
            RequestItems={table: {"Keys": [missing, profile_key(BOARD, "nobody")], "ConsistentRead": True}}
        ),
    )
    note(
        "BatchGetItem",
        "the score item and the 60 KB profile, ConsistentRead",
        client.batch_get_item(
            RequestItems={table: {"Keys": [key, profile_key(BOARD, "a")], "ConsistentRead": True}}
        ),
    )
    items = [_score_item(f"m{i:04d}", i) for i in range(1, 1001)]
    for start in range(0, len(items), 25):
        response = client.batch_write_item(
            RequestItems={table: [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]}
        )
    note("BatchWriteItem", "25 score items (the last batch of 1,000)", response)
    query = {
        "TableName": table,
        "IndexName": store.tables.rank_index,
        "KeyConditionExpression": "rpk = :p",
        "ExpressionAttributeValues": {":p": {"S": PARTITION}},
    }
    response = client.query(**query, Limit=100)
    note("Query", "RankIndex (KEYS_ONLY), Limit 100", response, scanned=response.get("ScannedCount"))
    response = client.query(**query, Select="COUNT")
    note(
        "Query", "RankIndex, Select=COUNT over 1,001 entries", response, scanned=response.get("ScannedCount")
    )
    response = client.query(**query, Select="COUNT", Limit=1)
    note("Query", "RankIndex, Select=COUNT, Limit 1", response, scanned=response.get("ScannedCount"))
    empty = {**query, "ExpressionAttributeValues": {":p": {"S": f"{PARTITION}-none"}}}
    response = client.query(**empty, Limit=10)
    note("Query", "RankIndex, a range that holds nothing", response, scanned=response.get("ScannedCount"))
    transaction = [
        {
            "Put": {
                "TableName": table,
                "Item": {**profile_key(BOARD, "b"), "data": {"S": "{}"}},
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        },
        {
            "Put": {
                "TableName": table,
                "Item": _score_item("b", 7),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        },
    ]
    note(
        "TransactWriteItems",
        "new member: profile + score item",
        client.transact_write_items(TransactItems=transaction),
    )
    moved = client.update_item(
        TableName=table,
        Key=key,
        UpdateExpression="SET rsk = :k, s = :s",
        ExpressionAttributeValues={":k": {"S": "000000001#a"}, ":s": {"N": "99999999"}},
    )
    note("UpdateItem", "score item whose index key moves", moved)
    same = client.update_item(
        TableName=table, Key=key, UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": {"N": "2"}}
    )
    note("UpdateItem", "score item, index key unchanged", same)
    note("DeleteItem", "score item", client.delete_item(TableName=table, Key=key))
    # What maxSubmissionsPerMinute adds to a submission: the member's counter of the minute
    # (the request of podium.dal.members count_submission).
    counted = client.update_item(
        TableName=table,
        Key=submissions_key(BOARD, "a", "2026-11-24T20:00"),
        UpdateExpression="ADD submissions :one SET #ttl = :ttl",
        ConditionExpression="attribute_not_exists(submissions) OR submissions < :limit",
        ExpressionAttributeNames={"#ttl": "ttl"},
        ExpressionAttributeValues={":one": {"N": "1"}, ":limit": {"N": "30"}, ":ttl": {"N": "0"}},
    )
    note("UpdateItem", "a member's submissions this minute (maxSubmissionsPerMinute)", counted)
    head_items(store, note)
    return found
