"""A batch that DynamoDB leaves partly unprocessed is sent again with what is left, a
bounded number of times, then answered 429 Throttled (issue 12: no unbounded retry)."""

from __future__ import annotations

from typing import Any

import pytest

from podium.config import Settings
from podium.dal.client import UNPROCESSED_ROUNDS, Tables
from podium.errors import Throttled

KEY = {"pk": {"S": "B#b"}, "sk": {"S": "BOARD"}}


class StubbornClient:
    """A DynamoDB client that leaves a batch unprocessed ``times`` times, then takes it."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.calls = 0

    def batch_write_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        return {"UnprocessedItems": RequestItems} if self.calls <= self.times else {}

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.times:
            return {"Responses": {}, "UnprocessedKeys": RequestItems}
        return {"Responses": {"t": [KEY]}}


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("podium.dal.client.time.sleep", lambda seconds: None)


def tables(stub: StubbornClient) -> Tables:
    return Tables(Settings(table_name="t"), client=stub)  # type: ignore[arg-type]


def test_what_is_left_is_sent_again_until_it_is_taken() -> None:
    # Given a database that leaves a batch unprocessed a few times
    stub = StubbornClient(times=UNPROCESSED_ROUNDS - 1)
    # When a batch write and a batch read are sent, then they go through
    tables(stub).batch_write([{"PutRequest": {"Item": KEY}}])
    assert stub.calls == UNPROCESSED_ROUNDS
    stub = StubbornClient(times=UNPROCESSED_ROUNDS - 1)
    assert tables(stub).batch_get([KEY], consistent=False) == {("B#b", "BOARD"): KEY}


@pytest.mark.parametrize("operation", ["write", "read"])
def test_a_batch_left_unprocessed_every_time_is_throttled_after_a_bound(operation: str) -> None:
    # Given a database that never takes the batch
    stub = StubbornClient(times=10**6)

    def send() -> None:
        if operation == "write":
            tables(stub).batch_write([{"PutRequest": {"Item": KEY}}])
        else:
            tables(stub).batch_get([KEY], consistent=True)

    # When it is sent, then it is given up after the bound with 429 Throttled
    with pytest.raises(Throttled) as refused:
        send()
    assert refused.value.status == 429
    assert stub.calls == UNPROCESSED_ROUNDS


class HeldClient:
    """A DynamoDB client whose item is held by another's transaction ``times`` times."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.calls = 0

    def update_item(self, **request: Any) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        self.calls += 1
        if self.calls <= self.times:
            error = {"Error": {"Code": "TransactionConflictException", "Message": "Transaction is ongoing"}}
            raise ClientError(error, "UpdateItem")  # type: ignore[arg-type]
        return {"Attributes": KEY}


def test_an_update_of_an_item_held_by_a_transaction_is_sent_again_a_few_times() -> None:
    # Given an item held by a transaction twice, then free
    held = HeldClient(times=2)
    # When an update answering the item is sent, then it goes through on the third try
    assert Tables(Settings(table_name="t"), client=held).update_answering(KEY, "SET a = :a") == (True, KEY)  # type: ignore[arg-type]
    assert held.calls == 3
    # and one held every time fails after a bound, with the database's error
    from botocore.exceptions import ClientError

    forever = HeldClient(times=10**6)
    with pytest.raises(ClientError):
        Tables(Settings(table_name="t"), client=forever).update_answering(KEY, "SET a = :a")  # type: ignore[arg-type]
