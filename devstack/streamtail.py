"""Reading a table's stream from a test or a benchmark, as the event source mapping hands
it over (``devstack.streams.StreamPoller`` is the stand-in for Lambda itself)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from podium.dal.streams import lambda_record


class StreamTail:
    """A table stream's records from where the last ``read`` stopped, shard by shard, as
    the event source mapping hands them over; a shard seen for the first time is read from
    its start, or from after the sequence number ``after`` gives it. ``positions`` holds the
    last sequence number read on each shard: a tail made ``after`` them reads on from there
    without reading again what came before (tests/helpers.py ``stream_tail_from_now``)."""

    def __init__(self, streams: Any, stream_arn: str, after: Mapping[str, str] | None = None) -> None:
        self.streams = streams
        self.arn = stream_arn
        self._iterators: dict[str, str | None] = {}
        self.positions: dict[str, str] = dict(after or {})

    @classmethod
    def of_table(
        cls, client: Any, endpoint: str, table: str, after: Mapping[str, str] | None = None
    ) -> StreamTail:
        import boto3

        arn = client.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        return cls(boto3.client("dynamodbstreams", endpoint_url=endpoint), arn, after)

    def read(self) -> list[dict[str, Any]]:
        for shard in self.streams.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"]:
            if shard["ShardId"] not in self._iterators:
                self._iterators[shard["ShardId"]] = self._first_iterator(shard["ShardId"])
        records: list[dict[str, Any]] = []
        for shard_id, iterator in list(self._iterators.items()):
            while iterator:
                response = self.streams.get_records(ShardIterator=iterator, Limit=1000)
                fresh = [lambda_record(dict(record), self.arn) for record in response["Records"]]
                if fresh:
                    self.positions[shard_id] = fresh[-1]["dynamodb"]["SequenceNumber"]
                records.extend(fresh)
                iterator = response.get("NextShardIterator")
                if not fresh:
                    break
            self._iterators[shard_id] = iterator
        return records

    def _first_iterator(self, shard_id: str) -> str:
        request: dict[str, Any] = {"StreamArn": self.arn, "ShardId": shard_id}
        if shard_id in self.positions:
            request.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=self.positions[shard_id])
        else:
            request["ShardIteratorType"] = "TRIM_HORIZON"
        return str(self.streams.get_shard_iterator(**request)["ShardIterator"])
