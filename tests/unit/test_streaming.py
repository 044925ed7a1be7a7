"""The stream consumers' batch shape: failures reported per record, by sequence number."""

from __future__ import annotations

from typing import Any

import pytest

from podium.errors import Contended, WriteRejected
from podium.stream.entrypoint import BatchFailed, stream_entrypoint
from podium.stream.records import REPLAY


class Context:
    function_name = "TestFunction"
    memory_limit_in_mb = 128
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:TestFunction"
    aws_request_id = "request-1"


def _record(number: int) -> dict[str, Any]:
    return {"eventID": f"e{number}", "dynamodb": {"SequenceNumber": f"{number:05d}"}}


def test_the_records_that_raise_are_reported_and_the_others_applied() -> None:
    # Given a consumer that fails on e2, and batch work that failed on e4
    applied: list[str] = []

    def apply(record: dict[str, Any]) -> None:
        if record["eventID"] == "e2":
            raise ValueError("poison")
        applied.append(record["eventID"])

    handler = stream_entrypoint(apply, metric="Test", prepare=lambda records: {"e4"})

    # When a batch of five arrives
    answer = handler({"Records": [_record(n) for n in range(1, 6)]}, Context())

    # Then the others were applied and the two failures reported by sequence number
    assert applied == ["e1", "e3", "e5"]
    assert answer == {"batchItemFailures": [{"itemIdentifier": "00002"}, {"itemIdentifier": "00004"}]}


def test_a_contended_or_rejected_record_is_a_failed_record_the_stream_delivers_again() -> None:
    # Given a consumer whose optimistic attempts run out on e1 and whose write is rejected
    # on e3
    def apply(record: dict[str, Any]) -> None:
        if record["eventID"] == "e1":
            raise Contended("the head of b is contended: retrying the batch")
        if record["eventID"] == "e3":
            raise WriteRejected("the leader was not recorded", ["None"])

    handler = stream_entrypoint(apply, metric="Test")

    # When a batch of three arrives
    answer = handler({"Records": [_record(n) for n in range(1, 4)]}, Context())

    # Then both are reported as failed records, not as the batch's failure
    assert answer == {"batchItemFailures": [{"itemIdentifier": "00001"}, {"itemIdentifier": "00003"}]}


def test_a_batch_whose_every_record_fails_raises_so_lambda_retries_it() -> None:
    def apply(record: dict[str, Any]) -> None:
        raise ValueError("down")

    handler = stream_entrypoint(apply, metric="Test")
    with pytest.raises(BatchFailed):
        handler({"Records": [_record(1), _record(2)]}, Context())
    assert handler({"Records": []}, Context()) == {"batchItemFailures": []}


def test_the_records_of_a_redrive_replay_go_to_the_consumers_replay() -> None:
    # Given a consumer that tells replayed records apart (the aggregator)
    seen: list[tuple[str, str]] = []
    handler = stream_entrypoint(
        lambda record: seen.append(("stream", record["eventID"])),
        metric="Test",
        replay=lambda record: seen.append(("replay", record["eventID"])),
    )

    # When the stream delivers a batch, and the redrive an event it built (REPLAY)
    handler({"Records": [_record(1)]}, Context())
    handler({"Records": [_record(2)], REPLAY: True}, Context())

    # Then each went where it belongs; and a consumer that does not tell them apart gets both
    assert seen == [("stream", "e1"), ("replay", "e2")]
    plain: list[str] = []
    stream_entrypoint(lambda record: plain.append(record["eventID"]), metric="Test")(
        {"Records": [_record(3)], REPLAY: True}, Context()
    )
    assert plain == ["e3"]


def test_the_batch_work_of_a_redrive_replay_is_its_own_when_given() -> None:
    # Given a consumer whose batch work differs for the redrive's events (the aggregator)
    prepared: list[tuple[str, list[str]]] = []

    def prepare(kind: str) -> Any:
        def work(records: list[dict[str, Any]]) -> set[str]:
            prepared.append((kind, [r["eventID"] for r in records]))
            return set()

        return work

    handler = stream_entrypoint(
        lambda record: None,
        metric="Test",
        prepare=prepare("stream"),
        replay=lambda record: None,
        prepare_replay=prepare("replay"),
    )

    # When the stream delivers a batch, and the redrive an event it built
    handler({"Records": [_record(1)]}, Context())
    handler({"Records": [_record(2)], REPLAY: True}, Context())

    # Then each batch went to its own batch work
    assert prepared == [("stream", ["e1"]), ("replay", ["e2"])]
