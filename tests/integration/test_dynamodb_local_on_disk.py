"""DynamoDB Local on disk (``-dbPath``) across a SIGKILL and a restart on the same port:
what the crash test and the local stream poller rely on (docs/operations.md, "After a
crash")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest

from devstack import template as template_module
from devstack.dynamodb_local import DynamoDBLocal
from devstack.stack import create_tables

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _sequences(streams: Any, iterator: str) -> list[str]:
    records = streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]
    return [r["dynamodb"]["SequenceNumber"] for r in records]


def test_tables_items_and_streams_outlive_a_kill(on_disk_dynamodb: DynamoDBLocal) -> None:
    # Given the template's tables on DynamoDB Local on disk, items written one by one, and
    # a shard iterator at the start of the table's stream
    spec = template_module.read("disk-")
    client = boto3.client("dynamodb", endpoint_url=on_disk_dynamodb.endpoint)
    streams = boto3.client("dynamodbstreams", endpoint_url=on_disk_dynamodb.endpoint)
    arn = create_tables(client, spec)["LeaderboardTable"]
    table = spec.table_names["LeaderboardTable"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    start = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    for n in range(3):
        client.put_item(TableName=table, Item={"pk": {"S": f"k{n}"}, "sk": {"S": "x"}})
    client.update_item(
        TableName=table,
        Key={"pk": {"S": "k0"}, "sk": {"S": "x"}},
        UpdateExpression="SET n = :n",
        ExpressionAttributeValues={":n": {"N": "1"}},
    )
    before = _sequences(streams, start["ShardIterator"])
    assert len(before) == 4

    # When it is killed at once (SIGKILL) and started again on the same port and files
    port = on_disk_dynamodb.port
    on_disk_dynamodb.kill()
    on_disk_dynamodb.restart()
    assert on_disk_dynamodb.port == port

    # Then every item is there, the last update included
    items = client.scan(TableName=table, ConsistentRead=True)["Items"]
    assert sorted(i["pk"]["S"] for i in items) == ["k0", "k1", "k2"]
    assert next(i for i in items if i["pk"]["S"] == "k0")["n"] == {"N": "1"}
    # And the stream is the same stream, shard and records; the iterator taken before works
    assert client.describe_table(TableName=table)["Table"]["LatestStreamArn"] == arn
    shards = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    assert [s["ShardId"] for s in shards] == [shard]
    assert _sequences(streams, start["ShardIterator"]) == before
    # And a new write's record follows the old ones
    client.put_item(TableName=table, Item={"pk": {"S": "k3"}, "sk": {"S": "x"}})
    after = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard, ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=before[-1]
    )
    (new,) = _sequences(streams, after["ShardIterator"])
    assert int(new) > int(before[-1])
