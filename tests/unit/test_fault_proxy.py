"""devstack/faults.py on its own: the faults it answers are the ones botocore understands as
DynamoDB's (so the service's own retry and error handling is what the fault tests run),
and its rates are checked and can be set over HTTP. No DynamoDB is needed: none of these
faults reaches the upstream."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from devstack.faults import CONTROL_PATH, FaultProxy, FaultRates


@pytest.fixture
def proxy() -> Iterator[FaultProxy]:
    with FaultProxy("http://127.0.0.1:9", seed=1) as running:  # an upstream never reached
        yield running


def client(proxy: FaultProxy) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "dynamodb",
        endpoint_url=proxy.endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )


@pytest.mark.parametrize(
    ("operation", "kind", "code"),
    [
        ("GetItem", "throttle", "ProvisionedThroughputExceededException"),
        ("TransactWriteItems", "throttle", "ThrottlingException"),
        ("GetItem", "error", "InternalServerError"),
    ],
)
def test_a_fault_answers_as_dynamodb_does(proxy: FaultProxy, operation: str, kind: str, code: str) -> None:
    from botocore.exceptions import ClientError

    # Given the next request of an operation scripted to fail
    proxy.script(operation, kind)

    # When botocore sends it
    key = {"pk": {"S": "a"}, "sk": {"S": "b"}}
    calls = {
        "GetItem": lambda: client(proxy).get_item(TableName="board", Key=key),
        "TransactWriteItems": lambda: client(proxy).transact_write_items(
            TransactItems=[{"Put": {"TableName": "board", "Item": key}}]
        ),
    }
    with pytest.raises(ClientError) as raised:
        calls[operation]()

    # Then it reads DynamoDB's error, and the proxy counted the fault
    assert raised.value.response["Error"]["Code"] == code
    assert proxy.injected(kind, operation) == 1


def test_a_dropped_connection_is_no_answer(proxy: FaultProxy) -> None:
    from botocore.exceptions import ConnectionClosedError

    # Given the next PutItem scripted to be dropped
    proxy.script("PutItem", "drop_before")

    # Then botocore gets no answer at all
    with pytest.raises(ConnectionClosedError):
        client(proxy).put_item(TableName="board", Item={"pk": {"S": "a"}, "sk": {"S": "b"}})


@pytest.mark.parametrize(
    ("rates", "named"),
    [
        ({"throttle": 1.5}, "throttle"),
        ({"throttle": 0.6, "error": 0.6}, "more than 1"),
        ({"delay": -1}, "delay"),
        ({"throttles": 0.1}, "throttles"),
    ],
    ids=["over-1", "sum-over-1", "negative-delay", "unknown-field"],
)
def test_rates_out_of_range_are_refused(rates: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        FaultRates.from_json(rates)


def test_rates_are_set_and_read_over_http(proxy: FaultProxy) -> None:
    # When another process sets rates for one operation
    answer = requests.put(
        f"{proxy.endpoint}{CONTROL_PATH}", json={"throttle": 0.5, "operations": ["PutItem"]}, timeout=10
    )

    # Then the proxy uses them, and says so
    assert answer.status_code == 200, answer.text
    assert proxy.rates == FaultRates(throttle=0.5, operations=frozenset({"PutItem"}))
    report = requests.get(f"{proxy.endpoint}{CONTROL_PATH}", timeout=10).json()
    assert report["rates"]["throttle"] == 0.5
    assert report["rates"]["operations"] == ["PutItem"]
    # And rates it cannot take are a 400 that names the field
    refused = requests.put(f"{proxy.endpoint}{CONTROL_PATH}", json={"throttle": 2}, timeout=10)
    assert refused.status_code == 400
    assert "throttle" in refused.json()["message"]
