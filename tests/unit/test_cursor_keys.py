"""The cursor key: read from Secrets Manager at run time (CURSOR_SECRET_ARN), kept by the
instance, two keys accepted while one replaces the other, and each cursor naming its key.

The secret holds ``{"currentId": ..., "current": ..., "previousId": ..., "previous": ...}``
(docs/operations.md, "Rotating the cursor key")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from podium import cursorkeys, cursors, wiring
from podium.errors import ValidationError

SCOPE = "images#all"
KEY_A = {"currentId": "a", "current": "key A, long enough to sign with"}
KEY_B_AFTER_A = {
    "currentId": "b",
    "current": "key B, the one that replaces A",
    "previousId": "a",
    "previous": KEY_A["current"],
}
KEY_B_ALONE = {"currentId": "b", "current": KEY_B_AFTER_A["current"]}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    """A moto secret named by CURSOR_SECRET_ARN, and the client to change it with."""
    with mock_aws():
        client = boto3.client("secretsmanager", region_name="us-east-1")
        arn = client.create_secret(Name="podium-cursor-key", SecretString=json.dumps(KEY_A))["ARN"]
        monkeypatch.delenv("CURSOR_KEY", raising=False)
        monkeypatch.setenv("CURSOR_SECRET_ARN", arn)
        wiring.reset()
        yield client, arn
        wiring.reset()


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every GetSecretValue the layer makes."""
    from podium.dal import secrets

    made: list[str] = []
    read = secrets.read_secret

    def counted(secret_id: str) -> str:
        made.append(secret_id)
        return read(secret_id)

    monkeypatch.setattr(secrets, "read_secret", counted)
    return made


def _put(client: Any, arn: str, value: dict[str, str]) -> None:
    client.put_secret_value(SecretId=arn, SecretString=json.dumps(value))


def test_the_key_is_fetched_once_per_instance(secret: tuple[Any, str], calls: list[str]) -> None:
    # Given an instance that has made no cursor yet
    _, arn = secret
    assert calls == []

    # When it makes and reads many cursors
    for position in range(20):
        made = cursors.encode(SCOPE, f"{position:04d}#m")
        assert cursors.decode(made, SCOPE) == f"{position:04d}#m"

    # Then it asked Secrets Manager once, for the stack's secret
    assert calls == [arn]


def test_a_cursor_names_its_key_and_is_read_during_a_rotation_then_refused_once_its_key_is_dropped(
    secret: tuple[Any, str], calls: list[str]
) -> None:
    # Given a cursor made with key A
    client, arn = secret
    clock = Clock()
    cursorkeys.use_clock(clock)
    made_with_a = cursors.encode(SCOPE, "2501#img")
    assert made_with_a.split(".")[1] == "a"

    # When B becomes current and A previous, and the instance reads the secret again
    _put(client, arn, KEY_B_AFTER_A)
    clock.now += cursorkeys.REFRESH_SECONDS
    # Then new cursors are made with B, and both A's and B's are read
    made_with_b = cursors.encode(SCOPE, "2500#img")
    assert made_with_b.split(".")[1] == "b"
    assert cursors.decode(made_with_a, SCOPE) == "2501#img"
    assert cursors.decode(made_with_b, SCOPE) == "2500#img"

    # When A is dropped, once the instance has read the secret again
    _put(client, arn, KEY_B_ALONE)
    clock.now += cursorkeys.REFRESH_SECONDS
    # Then A's cursor is 400 naming the cursor, and B's is still read
    with pytest.raises(ValidationError, match=r"^cursor is not valid.*key"):
        cursors.decode(made_with_a, SCOPE)
    assert cursors.decode(made_with_b, SCOPE) == "2500#img"
    assert len(calls) == 3


def test_an_instance_that_meets_a_newer_key_reads_the_secret_again_at_most_once_a_minute(
    secret: tuple[Any, str], calls: list[str]
) -> None:
    # Given an instance that read the secret when it held A alone, and another that made a
    # cursor with B after the rotation
    client, arn = secret
    clock = Clock()
    cursorkeys.use_clock(clock)
    cursors.encode(SCOPE, "1#m")
    _put(client, arn, KEY_B_AFTER_A)
    ring_b = cursorkeys.parse(json.dumps(KEY_B_AFTER_A))
    made_with_b = cursors.sign_with(ring_b.current, SCOPE, "2500#img")
    clock.now += cursorkeys.UNKNOWN_KEY_FLOOR_SECONDS

    # When the first instance reads that cursor before its own refresh is due
    # Then it reads the secret again and accepts the cursor
    assert cursors.decode(made_with_b, SCOPE) == "2500#img"
    assert len(calls) == 2

    # And cursors naming keys nobody has cost no more than one read a minute
    for n in range(10):
        forged = made_with_b.replace(".b.", f".z{n}.")
        with pytest.raises(ValidationError, match="cursor is not valid"):
            cursors.decode(forged, SCOPE)
    assert len(calls) == 2
    clock.now += cursorkeys.UNKNOWN_KEY_FLOOR_SECONDS
    with pytest.raises(ValidationError, match="cursor is not valid"):
        cursors.decode(made_with_b.replace(".b.", ".zz."), SCOPE)
    assert len(calls) == 3


@pytest.mark.parametrize(
    "edit",
    [
        lambda c: c.rpartition(".")[0] + ".",  # the signature emptied
        lambda c: c.rpartition(".")[0],  # the signature dropped
        lambda c: c.split(".")[0] + "..",  # the key id and the signature emptied
    ],
    ids=["empty", "dropped", "no-key-id"],
)
def test_a_cursor_without_a_signature_is_refused_explicitly(edit: Any) -> None:
    # Given a cursor the service made, its signature then taken away
    cursor = edit(cursors.encode(SCOPE, "2501#img"))

    # When it is read; Then it is 400 naming the cursor and what is missing
    with pytest.raises(ValidationError, match=r"^cursor is not valid.*(signature|key)"):
        cursors.decode(cursor, SCOPE)


def test_an_empty_signature_never_reaches_the_comparison(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a comparison that would let equal empty strings through (compare_digest(b"", b""))
    import hmac

    compared: list[tuple[bytes, bytes]] = []
    original = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return original(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    payload = cursors.encode(SCOPE, "2501#img").split(".")[0]

    # When a cursor with an empty signature is read; Then it is refused before any comparison
    with pytest.raises(ValidationError, match="signature"):
        cursors.decode(f"{payload}.a.", SCOPE)
    assert compared == []


def test_the_secret_may_be_a_bare_key_the_stack_made_before_key_ids() -> None:
    ring = cursorkeys.parse("a48characterkeythatcloudformationgenerated0000000")
    assert ring.current.key_id == "0"
    assert ring.previous is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{}",
        '{"currentId": "a"}',
        '{"currentId": "a", "current": ""}',
        '{"currentId": "a b", "current": "k"}',
        '{"currentId": "a", "current": "k", "previous": "j"}',
        '{"currentId": "a", "current": "k", "previousId": "a", "previous": "j"}',
    ],
)
def test_a_secret_that_is_not_a_key_ring_is_an_error_that_says_what_it_needs(text: str) -> None:
    with pytest.raises(cursorkeys.BadCursorSecret, match="cursor secret"):
        cursorkeys.parse(text)


def test_the_local_stack_passes_its_key_in_the_environment_and_no_secret_is_read(
    monkeypatch: pytest.MonkeyPatch, calls: list[str]
) -> None:
    # Given the local stack's environment: CURSOR_KEY set, no secret
    monkeypatch.setenv("CURSOR_KEY", "the local stack's own key")
    monkeypatch.setenv("CURSOR_SECRET_ARN", "")
    wiring.reset()
    try:
        # When a cursor is made and read; Then no secret is read
        made = cursors.encode(SCOPE, "1#m")
        assert cursors.decode(made, SCOPE) == "1#m"
        assert calls == []
    finally:
        monkeypatch.delenv("CURSOR_KEY")
        wiring.reset()
