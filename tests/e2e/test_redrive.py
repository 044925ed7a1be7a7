"""The redrive end to end: a poison record fails every retry and lands in the failure queue
as metadata only; its cause is fixed; ``python -m devstack redrive`` (``make redrive``)
reads the record back from the stream and replays it through the consumer, and its effect
is applied exactly once, however often it is replayed.

The tests run a stack of their own: the redrive empties the whole failure queue, which
the shared stack's other tests read. Its DynamoDB Local is its own too (``own_dynamodb``):
on the worker's shared one, full of the session's tables and streams, the poison record's
retries and the replays took four times as long (106 s in a full run, 27 s alone).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests

from devstack import template as template_module
from devstack.messaging import SNS_ENDPOINT, SQS_ENDPOINT
from podium import numbers
from podium.dal import Database
from tests.conftest import StackLauncher
from tests.helpers import assert_equal, decimal_json, eventually, unique_id
from tests.integration.test_rank_structures import assert_tree_counts_the_index
from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30


@pytest.fixture(scope="module")
def redrive_stack(launch_stack: StackLauncher, own_dynamodb: str) -> Iterator[LocalStack]:
    with launch_stack(name="redrive", dynamodb=own_dynamodb) as local:
        yield local


def _put(url: str, body: Any) -> Any:
    response = requests.put(url, data=numbers.dumps(body), timeout=TIMEOUT)
    assert response.status_code in (200, 201), response.text
    return decimal_json(response)


def _get(url: str) -> Any:
    response = requests.get(url, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return decimal_json(response)


def redrive(stack: LocalStack, dynamodb_endpoint: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m devstack redrive`` against the stack, as an operator runs it."""
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_endpoint,
        SNS_ENDPOINT: stack.sns_endpoint,
        SQS_ENDPOINT: stack.sqs_endpoint,
        "PYTHONPATH": f"{ROOT / 'layers' / 'podium'}{os.pathsep}{ROOT}",
    }
    return subprocess.run(
        [sys.executable, "-m", "devstack", "redrive", "--table-prefix", stack.table_prefix, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def peek(stack: LocalStack) -> list[dict[str, Any]]:
    """The bodies of the messages on the failure queue, left there."""
    response = stack.sqs().receive_message(
        QueueUrl=stack.queue_url(), MaxNumberOfMessages=10, VisibilityTimeout=0, WaitTimeSeconds=1
    )
    return [json.loads(m["Body"]) for m in response.get("Messages", [])]


def test_a_poison_record_fixed_and_redriven_is_applied_exactly_once(
    redrive_stack: LocalStack, own_dynamodb: str
) -> None:
    dynamodb_endpoint = own_dynamodb  # the stack's
    url = redrive_stack.url
    # Given an increment rollup target whose member would leave the score bounds (1e30)
    suffix = unique_id("redrive")
    target, source = f"all-{suffix}", f"src-{suffix}"
    _put(f"{url}/boards/{target}", {"operator": "increment"})
    _put(f"{url}/boards/{source}", {"rollupTo": [target]})
    _put(f"{url}/boards/{target}/members/huge", {"score": Decimal("9e29")})
    assert redrive_stack.queued() == 0

    # When a source member's score would push it past the bound, and another member follows
    _put(f"{url}/boards/{source}/members/huge", {"score": Decimal("2e29")})
    _put(f"{url}/boards/{source}/members/fine", {"score": 7})

    # Then the poison record fails every retry and its batch details reach the queue
    def failure_queued() -> None:
        assert redrive_stack.queued() >= 1

    eventually(failure_queued, timeout=90)
    # And the records after it go on: the other members reach the target (a record written
    # now is read after every delivery of the poison record's batch)
    _put(f"{url}/boards/{source}/members/marker", {"score": 3})
    eventually(lambda: _assert_score(url, target, "marker", Decimal(3)), timeout=90)
    _assert_score(url, target, "fine", Decimal(7))
    assert _get(f"{url}/boards/{target}/members/huge")["score"] == Decimal("9e29")
    messages = peek(redrive_stack)
    # (the local stack delivers every batch twice, so the record failed twice)
    assert len(messages) == redrive_stack.queued() >= 1
    assert len({_batch(m) for m in messages}) == 1, messages
    message = messages[0]
    info = message["DDBStreamBatchInfo"]
    assert {"shardId", "startSequenceNumber", "endSequenceNumber", "batchSize", "streamArn"} <= set(info)
    assert info["batchSize"] == 1
    assert message["requestContext"]["functionArn"].endswith(":function:AggregatorFunction")
    assert message["requestContext"]["condition"] == "RetryAttemptsExhausted"
    # And, beside them, a message whose records are past the stream's 24 hours
    redrive_stack.sqs().send_message(
        QueueUrl=redrive_stack.queue_url(), MessageBody=json.dumps(_gone(message))
    )

    # When the redrive runs before the cause is fixed
    first = redrive(redrive_stack, dynamodb_endpoint)

    # Then the consumer fails again, the records past retention are reported with what to
    # do, and every message stays
    assert first.returncode == 1, first.stdout + first.stderr
    assert _lines(first, "kept") == len(messages), first.stdout
    assert "the consumer failed" in first.stdout
    assert _lines(first, "gone") == 1, first.stdout
    assert "make verify" in first.stdout
    assert redrive_stack.queued() == len(messages) + 1
    assert _get(f"{url}/boards/{target}/members/huge")["score"] == Decimal("9e29")

    # When the cause is fixed (the target's score brought down), one more copy of the
    # message is queued (as a redrive that crashed before deleting it would leave), and the
    # redrive runs again, told to discard the records that are gone (their boards checked)
    _put(f"{url}/boards/{target}/members/huge", {"score": 1})
    redrive_stack.sqs().send_message(QueueUrl=redrive_stack.queue_url(), MessageBody=json.dumps(message))
    second = redrive(redrive_stack, dynamodb_endpoint, "--discard-gone")

    # Then every copy is replayed and deleted, the rollup is applied exactly once, and the
    # queue is empty
    assert second.returncode == 0, second.stdout + second.stderr
    assert _lines(second, "replayed") == len(messages) + 1, second.stdout
    assert _lines(second, "discarded") == 1, second.stdout
    assert "1 record(s)" in second.stdout
    assert source in second.stdout  # the boards the records touched, to check if one wishes
    assert redrive_stack.queued() == 0
    expected = Decimal("200000000000000000000000000001")  # 1 + 2e29, exactly
    assert _get(f"{url}/boards/{target}/members/huge")["score"] == expected
    eventually(lambda: _assert_member_count(url, target, 3))
    eventually(lambda: _assert_member_count(url, source, 3))
    top = _get(f"{url}/boards/{target}/top?limit=10&consistent=true")
    assert [(e["memberId"], e["score"]) for e in top["entries"]] == [
        ("huge", expected),
        ("fine", Decimal(7)),
        ("marker", Decimal(3)),
    ]
    # and the source's count tree, which every attempt and the replays (applied as
    # replays, each checked against its member's score item) reached, counts each once
    client = boto3.client("dynamodb", endpoint_url=dynamodb_endpoint)
    store = Database.connect(template_module.read(redrive_stack.table_prefix).settings(), client=client)
    eventually(lambda: assert_equal(len(assert_tree_counts_the_index(store, source)), 3))


def _lines(result: subprocess.CompletedProcess[str], status: str) -> int:
    """The report's lines of one status (the function's own logs are on stderr)."""
    return sum(1 for line in result.stdout.splitlines() if line.startswith(f"{status} "))


def _batch(message: dict[str, Any]) -> tuple[str, str, str]:
    info = message["DDBStreamBatchInfo"]
    return info["shardId"], info["startSequenceNumber"], info["endSequenceNumber"]


def _gone(message: dict[str, Any]) -> dict[str, Any]:
    """The same failure on a shard the stream no longer has, as after 24 hours."""
    info = {**message["DDBStreamBatchInfo"], "shardId": "shardId-00000001700000000000-00000000"}
    return {**message, "DDBStreamBatchInfo": info}


def _assert_score(url: str, board: str, member: str, expected: Decimal) -> None:
    response = requests.get(f"{url}/boards/{board}/members/{member}", timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    assert decimal_json(response)["score"] == expected


def _assert_member_count(url: str, board: str, expected: int) -> None:
    assert _get(f"{url}/boards/{board}")["memberCount"] == expected
