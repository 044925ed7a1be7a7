"""Replacing a rivals list is atomic (issue 12, "nothing lost"): a replacement is written
only over the version it read, so two at once cannot leave a list whose follower edges the
other one expired, and the notifier's removal of a deleted rival cannot be undone by a
replacement that read the list before it. On DynamoDB Local."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from podium.dal import Database, schema
from podium.errors import VersionConflict
from podium.models import ENDED_FOLLOW_KEEP_US, Rivals
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import unique_id

pytestmark = pytest.mark.integration

KEEP_S = ENDED_FOLLOW_KEEP_US // 1_000_000


def edge(store: Database, board: str, rival: str, follower: str) -> dict[str, Any] | None:
    return store.tables.get(schema.edge_key(board, rival, follower), consistent=True)


@pytest.fixture
def board(service: Services) -> str:
    board_id = unique_id("rivals")
    service.boards.put_board(board_id, board_request({"shards": Decimal(2)}))
    service.members.put_member(board_id, "m", member_request({"score": Decimal(1)}))
    return board_id


def test_a_replacement_over_a_list_changed_since_it_was_read_is_refused(
    service: Services, store: Database, board: str
) -> None:
    # Given m follows x
    service.social.put_rivals(board, "m", ["x"])
    stale = store.social.get_rivals(board, "m")
    assert stale is not None

    # When one request replaces the list by [x, y] while another, which read [x], drops x
    service.social.put_rivals(board, "m", ["x", "y"])
    dropped = stale.replaced([], 1)
    with pytest.raises(VersionConflict):
        store.social.put_rivals(board, "m", dropped, stale, KEEP_S)

    # Then the list is the first one's, and the edge of x still stands, with no expiry
    assert service.social.get_rivals(board, "m") == ["x", "y"]
    kept = edge(store, board, "x", "m")
    assert kept is not None
    assert "ttl" not in kept


def test_the_service_replaces_what_the_other_request_wrote(
    service: Services, store: Database, board: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given m follows x, and a replacement that will lose a race once
    service.social.put_rivals(board, "m", ["x"])
    real = store.social.put_rivals
    raced = {"done": False}

    def racing(board_id: str, member_id: str, rivals: Rivals, previous: Rivals, ttl: int) -> None:
        if not raced["done"]:
            raced["done"] = True
            service.social.put_rivals(board_id, member_id, ["x", "z"])  # lands first
        real(board_id, member_id, rivals, previous, ttl)

    monkeypatch.setattr(store.social, "put_rivals", racing)

    # When m replaces its list by [y]
    assert service.social.put_rivals(board, "m", ["y"]) == ["y"]
    monkeypatch.undo()

    # Then the list is [y], x and z are remembered as ended follows, y's edge stands
    assert service.social.get_rivals(board, "m") == ["y"]
    final = store.social.get_rivals(board, "m")
    assert final is not None
    assert set(final.ended) == {"x", "z"}
    assert edge(store, board, "y", "m") is not None


def test_a_replacement_read_before_the_notifier_took_a_rival_out_is_refused(
    service: Services, store: Database, board: str
) -> None:
    # Given m follows gone and x, and a replacement that read that list
    service.social.put_rivals(board, "m", ["gone", "x"])
    stale = store.social.get_rivals(board, "m")
    assert stale is not None

    # When the notifier takes the deleted member out of m's list
    assert store.social.forget_rival(board, "m", "gone", before_us=2**62)

    # Then the stale replacement (which would write gone back) is refused
    with pytest.raises(VersionConflict):
        store.social.put_rivals(board, "m", stale.replaced(["gone", "x", "y"], 1), stale, KEEP_S)
    assert service.social.get_rivals(board, "m") == ["x"]
