"""Who may re-shard a board, on the stack that checks tokens (the re-sharding tests of
tests/e2e/test_resharding.py run on a stack of their own, with checks off)."""

from __future__ import annotations

import pytest
import requests

from tests.helpers import unique_id
from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e

TIMEOUT = 60.0


def test_only_an_admin_may_reshard(auth_stack: LocalStack) -> None:
    def token(role: str) -> str:
        body = {"role": role, "memberId": "p1"} if role == "player" else {"role": role}
        answer = requests.post(f"{auth_stack.url}/_local/token", json=body, timeout=TIMEOUT)
        return str(answer.json()["token"])

    board = unique_id("guarded")
    admin = {"Authorization": f"Bearer {token('admin')}"}
    assert requests.put(f"{auth_stack.url}/boards/{board}", json={}, headers=admin, timeout=TIMEOUT).ok
    url = f"{auth_stack.url}/boards/{board}/reshard"
    assert requests.post(url, json={"shards": 3}, timeout=TIMEOUT).status_code == 401
    player = {"Authorization": f"Bearer {token('player')}"}
    assert requests.post(url, json={"shards": 3}, headers=player, timeout=TIMEOUT).status_code == 403
    assert requests.post(url, json={"shards": 3}, headers=admin, timeout=TIMEOUT).status_code == 202
