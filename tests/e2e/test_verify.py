"""`python -m devstack verify` (what `make verify` runs) against the running local stack,
whose stream consumers carry a repair to the head, the count tree and the counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests

from devstack import template as template_module
from podium import numbers
from podium.consistency import ConsistencyReport
from tests.helpers import assert_equal, eventually, unique_id, verify_board
from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30


def _call(method: str, url: str, body: Any = None) -> None:
    data = numbers.dumps(body) if body is not None else None
    response = requests.request(method, url, data=data, timeout=TIMEOUT)
    assert response.status_code in (200, 201, 204), response.text


def test_verify_names_what_differs_on_the_running_stack_and_repairs_it(
    stack: LocalStack, dynamodb_endpoint: str
) -> None:
    # Given a board built over HTTP: 10 members, some scores changed, one member hidden
    board = unique_id("verified")
    base = f"{stack.url}/boards/{board}"
    _call("PUT", base, {"shards": 3})
    scores = {f"v{i}": Decimal(i * 11 % 7) for i in range(10)}
    for member, score in scores.items():
        _call("PUT", f"{base}/members/{member}", {"score": score})
    _call("POST", f"{base}/members/v3/score", {"value": 40})
    _call("PUT", f"{base}/members/v5", {"hidden": True})

    settings = template_module.read(stack.table_prefix).settings()

    def verify(*args: str) -> tuple[int, str]:
        done = subprocess.run(
            [sys.executable, "-m", "devstack", "verify", board, "--table-prefix", stack.table_prefix, *args],
            cwd=ROOT,
            env={
                **os.environ,
                "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_endpoint,
                "PYTHONPATH": f"{ROOT / 'layers' / 'podium'}{os.pathsep}{ROOT}",
            },
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode in (0, 1), done.stderr
        return done.returncode, done.stdout

    def check() -> ConsistencyReport:
        return verify_board(settings, board, endpoint=dynamodb_endpoint)

    # When the stack's stream consumers have caught up, the board is consistent
    eventually(lambda: assert_equal(check().differences, []))

    # When a member's index entry is dropped (the stream carries that to the head; not to
    # the count tree, which takes each version of an item once, and the write kept v3's)
    # and memberCount is one off
    client = boto3.client("dynamodb", endpoint_url=dynamodb_endpoint)
    client.update_item(
        TableName=settings.table,
        Key={"pk": {"S": f"M#{board}#v3"}, "sk": {"S": "SCORE#all"}},
        UpdateExpression="REMOVE rpk, rsk",
    )
    client.update_item(
        TableName=settings.state_table,
        Key={"pk": {"S": f"B#{board}"}, "sk": {"S": "BOARD"}},
        UpdateExpression="ADD memberCount :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    found = [("index_missing", "v3"), ("member_count", None), ("tree", "v3")]
    eventually(lambda: assert_equal(named(check().to_json()), found))

    # Then `verify` names them, and exits 1
    status, out = verify("--json")
    report = json.loads(out)
    assert (status, named(report)) == (1, found)
    assert report["counts"]["members"] == 10

    # When it repairs them (the re-check waits for the stack's stream to carry the repair)
    status, out = verify("--repair", "--json")

    # Then both were repaired, and the next check finds the board consistent
    report = json.loads(out)
    assert status == 0, report
    assert sorted(d["kind"] for d in report["repaired"]) == ["index_missing", "member_count", "tree"]
    status, out = verify()
    assert status == 0
    assert out.splitlines()[-1] == "consistent"
    assert "a count tree of 1 node" in out
    top = requests.get(f"{base}/top?limit=3", timeout=TIMEOUT).json()
    assert [e["memberId"] for e in top["entries"]] == ["v3", "v1", "v8"]
    assert requests.get(base, timeout=TIMEOUT).json()["memberCount"] == 9

    # When the count tree's root is lost
    client.delete_item(TableName=settings.state_table, Key={"pk": {"S": f"T#{board}#all"}, "sk": {"S": "R"}})

    # Then `verify` names the tree, and its repair builds it again from the score items
    status, out = verify("--json")
    assert (status, named(json.loads(out))) == (1, [("tree", None)])
    status, out = verify("--repair", "--json")
    assert status == 0, out
    assert verify()[0] == 0
    assert requests.get(f"{base}/members/v1/rank", timeout=TIMEOUT).json()["rank"] == 2


def named(report: dict[str, Any]) -> list[tuple[str, str | None]]:
    return sorted((d["kind"], d.get("memberId")) for d in report["differences"])
