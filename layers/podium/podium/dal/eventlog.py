"""The insert-only event log of hot counters (``podium.events``): events spread over
``EVENT_BUCKETS`` partitions per member, client event-id claims, and the marks of folds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from podium import fanout
from podium.dal import codecs, schema
from podium.dal.client import Tables, conditional_failure, serializer, translate_throttling
from podium.models import LoggedEvent


class EventLog:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    def log_events(self, events: Sequence[LoggedEvent], expires: int) -> None:
        """Insert the events, all or none, in one transaction (inserts only: no read)."""
        items: list[Any] = []
        for event in events:
            bucket = schema.event_bucket(event.key)
            item: dict[str, Any] = {
                **codecs.event_key(event),
                "p": {"S": event.period},
                schema.LOG_INDEX_PK: {"S": schema.log_index_pk(event.board_id, event.period, bucket)},
                "v": serializer.serialize(event.value),
                "i": {"S": event.insertion},
                "ttl": {"N": str(expires)},
            }
            if event.event_id is not None:
                item["e"] = {"S": event.event_id}
            items.append({"Put": {"Item": item}})
        codes = self.tables.transact(items)
        if codes is not None:
            raise RuntimeError(f"the events were not logged: {codes}")

    def claim_event_id(self, board_id: str, event_id: str, insertion: str, expires: int) -> bool:
        """The first insert of an eventId on a board claims it for 24 hours; False for a
        later insert that reuses it (a redelivery of the same insert claims it again)."""
        claim = {**schema.claim_key(board_id, event_id), "i": {"S": insertion}, "ttl": {"N": str(expires)}}
        return self.tables.put(
            claim,
            ConditionExpression="attribute_not_exists(pk) OR i = :i",
            ExpressionAttributeValues={":i": {"S": insertion}},
        )

    def claim_for_fold(self, event: LoggedEvent, fold: str) -> tuple[str, str]:
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
                with translate_throttling():
                    response = self.tables.client.update_item(
                        TableName=self.tables.table_for(codecs.event_key(event)["pk"]["S"]),
                        Key=codecs.event_key(event),
                        UpdateExpression="SET fold = :f",
                        ConditionExpression=condition,
                        ExpressionAttributeValues=values,
                        ReturnValues="ALL_NEW",
                        ReturnValuesOnConditionCheckFailure="ALL_OLD",
                    )
                return "mine", str(response["Attributes"]["i"]["S"])
            except ClientError as error:
                if not conditional_failure(error):
                    raise
                old = getattr(error, "response", {}).get("Item") or {}
                if not old:
                    return "gone", ""
                previous = old.get("fold", {}).get("S")
                if previous and self.committed_folds(event.board_id, event.member_id, {previous}):
                    return "folded", ""
                expected = previous
        return "gone", ""

    def claim_many_for_fold(
        self, board_id: str, events: Sequence[LoggedEvent], fold: str, expires: int
    ) -> bool:
        """The common case in one round trip per 50 events: each event (as its stream record
        shows it) marked for ``fold`` and its id claimed, in one transaction; False when
        any condition fails, and then nothing was written (the caller goes one by one)."""
        actions: list[Any] = []
        for event in events:
            actions.append(
                {
                    "Update": {
                        "Key": codecs.event_key(event),
                        "UpdateExpression": "SET fold = :f",
                        "ConditionExpression": "i = :i AND (attribute_not_exists(fold) OR fold = :f)",
                        "ExpressionAttributeValues": {":f": {"S": fold}, ":i": {"S": event.insertion}},
                    }
                }
            )
            if event.event_id is not None:
                claim = {**schema.claim_key(board_id, event.event_id), "i": {"S": event.insertion}}
                actions.append(
                    {
                        "Put": {
                            "Item": {**claim, "ttl": {"N": str(expires)}},
                            "ConditionExpression": "attribute_not_exists(pk) OR i = :i",
                            "ExpressionAttributeValues": {":i": {"S": event.insertion}},
                        }
                    }
                )
        return self.tables.transact(actions) is None

    def logged_now(self, events: Sequence[LoggedEvent]) -> dict[str, LoggedEvent]:
        """The events as the log holds them now (key -> event), read consistently in
        batches: a redelivered record whose event was folded and deleted is absent."""
        if not events:
            return {}
        board_id, member_id = events[0].board_id, events[0].member_id
        items = self.tables.batch_get([codecs.event_key(e) for e in events], consistent=True)
        return {key[1]: codecs.event_from_item(board_id, member_id, item) for key, item in items.items()}

    def committed_folds(self, board_id: str, member_id: str, folds: set[str]) -> set[str]:
        """Which of the member's folds committed (their mark was written with the score)."""
        marks = {fold: schema.fold_mark(board_id, member_id, fold) for fold in folds}
        items = self.tables.batch_get([schema.mark_key(mark) for mark in marks.values()], consistent=True)
        return {fold for fold, mark in marks.items() if (mark, schema.APPLIED) in items}

    def id_claims(self, board_id: str, event_ids: set[str]) -> dict[str, str]:
        items = self.tables.batch_get([schema.claim_key(board_id, e) for e in event_ids], consistent=True)
        claims = {}
        for event_id in event_ids:
            key = schema.claim_key(board_id, event_id)
            item = items.get((key["pk"]["S"], key["sk"]["S"]))
            if item:
                claims[event_id] = item["i"]["S"]
        return claims

    def period_has_events(self, board_id: str, period: str) -> bool:
        """Whether any event of the board's ``period`` is still in the log (not folded and
        deleted yet): one query of one key of ``LogIndex`` per bucket, all at once, each
        asking for a single key. The index is eventually consistent: an event inserted a
        moment ago may be missing yet (``podium.results`` waits for a grace period first)."""

        def bucket(index: int) -> bool:
            request: dict[str, Any] = {
                "IndexName": schema.LOG_INDEX,
                "KeyConditionExpression": "#lp = :p",
                "ExpressionAttributeNames": {"#lp": schema.LOG_INDEX_PK},
                "ExpressionAttributeValues": {":p": {"S": schema.log_index_pk(board_id, period, index)}},
                "Limit": 1,
            }
            return bool(next(self.tables.query_pages(request)).get("Items"))

        return any(fanout.gather(bucket, list(range(schema.EVENT_BUCKETS))))

    def delete_events(self, events: Sequence[LoggedEvent]) -> None:
        self.tables.batch_write([{"DeleteRequest": {"Key": codecs.event_key(e)}} for e in events])

    def count_dropped(self, board_id: str, member_id: str, fold: str, count: int) -> None:
        """Add ``count`` to the board's droppedEvents, once per fold."""
        dropped = {
            "Key": schema.board_key(board_id),
            "UpdateExpression": "ADD droppedEvents :n",
            "ExpressionAttributeValues": {":n": {"N": str(count)}},
        }
        mark = self.tables.mark_put(schema.fold_mark(board_id, member_id, fold))
        codes = self.tables.transact([mark, {"Update": dropped}])
        if codes is not None and "ConditionalCheckFailed" not in codes:
            raise RuntimeError(f"the dropped events were not counted: {codes}")

    def pending_events(
        self, board_id: str, member_id: str, most: int | None = None
    ) -> tuple[list[LoggedEvent], list[int], bool]:
        """The member's logged events not yet deleted by a fold: one consistent query per
        bucket, concurrently; the items read are the pending events themselves. With
        ``most``, each bucket is read for at most that many (and one more, to tell whether
        it holds more). Also the bytes each query read (``codecs.item_bytes``: what it is
        billed for), and whether every bucket was read to its end."""

        def bucket(index: int) -> tuple[list[LoggedEvent], int, bool]:
            request: dict[str, Any] = {
                "KeyConditionExpression": "pk = :p",
                "ExpressionAttributeValues": {":p": {"S": schema.event_pk(board_id, member_id, index)}},
                "ConsistentRead": True,
            }
            if most is not None:
                request["Limit"] = most + 1
            items: list[dict[str, Any]] = []
            for response in self.tables.query_pages(request):
                items.extend(response.get("Items", []))
                if most is not None:
                    if len(items) > most:
                        break
                    request["Limit"] = most + 1 - len(items)
            whole = most is None or len(items) <= most
            events = [codecs.event_from_item(board_id, member_id, item) for item in items[:most]]
            return events, sum(codecs.item_bytes(item) for item in items), whole

        read = fanout.gather(bucket, list(range(schema.EVENT_BUCKETS)))
        events = [event for found, _, _ in read for event in found]
        return events, [size for _, size, _ in read], all(whole for _, _, whole in read)
