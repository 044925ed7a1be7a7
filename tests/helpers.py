"""Small helpers the test layers share."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeVar

import requests

T = TypeVar("T")

# The write-sharding lab's example: views per image. Its top 3 is 006, 004, 005.
IMAGE_VIEWS = {
    "img-001.jpg": 27,
    "img-002.jpg": 23,
    "img-003.jpg": 16,
    "img-004.jpg": 83,
    "img-005.jpg": 52,
    "img-006.jpg": 94,
}


def unique_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def decimal_json(response: requests.Response) -> Any:
    """A response body with every number read as an exact Decimal."""
    return json.loads(response.text, parse_float=Decimal, parse_int=Decimal)


def eventually(check: Callable[[], T], timeout: float = 15.0, interval: float = 0.2) -> T:
    """Retry ``check`` until it stops raising AssertionError (for stream-driven state)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(interval)


def assert_equal(actual: object, expected: object) -> None:
    """An assertion as a call, for ``eventually(lambda: assert_equal(read(), expected))``."""
    assert actual == expected


def stream_records(client: Any, endpoint: str, table: str) -> list[dict[str, Any]]:
    """Every record on the table's stream, as the Lambda event source mapping delivers them."""
    import boto3

    from devstack.streams import lambda_record

    streams = boto3.client("dynamodbstreams", endpoint_url=endpoint)
    arn = client.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            response = streams.get_records(ShardIterator=iterator, Limit=1000)
            records.extend(lambda_record(dict(r), arn) for r in response["Records"])
            if not response["Records"]:
                break
            iterator = response.get("NextShardIterator")
    return records
