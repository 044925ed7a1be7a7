"""Rivals and the inbox: whom a member follows (with since when, so that a change is
judged by who followed whom at its moment), and the notifications it was sent."""

from __future__ import annotations

import re

from podium import cursors, retry
from podium.boards import BoardService, to_microseconds
from podium.errors import ItemMissing, NotFound, VersionConflict
from podium.models import ENDED_FOLLOW_KEEP_US, Notification, Rivals
from podium.models import INBOX_KEEP_SECONDS as INBOX_KEEP_SECONDS  # the page's horizon, named here too
from podium.ports import MemberStore, Publisher, SocialStore

INBOX_POSITION = re.compile(r"\d{17}#[0-9a-f]{1,64}")


class SocialService:
    def __init__(self, boards: BoardService, members: MemberStore, social: SocialStore) -> None:
        self.boards = boards
        self.members = members
        self.social = social

    def _require_member(self, board_id: str, member_id: str) -> int:
        """When the member was created (µs); NotFound when there is none."""
        self.boards.settings(board_id)
        joined = self.members.joined_us(board_id, member_id)
        if joined is None:
            raise NotFound(f"member {member_id} does not exist on board {board_id}")
        return joined

    def put_rivals(self, board_id: str, member_id: str, rivals: list[str]) -> list[str]:
        """Replace the member's rivals, remembering since when it follows each (and, for a
        while, whom it stopped following and when)."""
        self._require_member(board_id, member_id)
        for _ in retry.attempts():
            previous = self.social.get_rivals(board_id, member_id) or Rivals()
            replaced = previous.replaced(rivals, to_microseconds(self.boards.clock()))
            try:
                keep_s = ENDED_FOLLOW_KEEP_US // 1_000_000
                self.social.put_rivals(board_id, member_id, replaced, previous, keep_s)
            except ItemMissing as error:  # deleted while the list was being replaced
                raise NotFound(f"member {member_id} does not exist on board {board_id}") from error
            except VersionConflict:
                continue  # replaced by another request meanwhile: replace what it wrote
            return rivals
        raise retry.contended(f"the rivals list of {member_id}")

    def get_rivals(self, board_id: str, member_id: str) -> list[str]:
        self._require_member(board_id, member_id)
        found = self.social.get_rivals(board_id, member_id)
        return list(found.ids) if found else []

    def notifications(
        self, board_id: str, member_id: str, limit: int, cursor: str | None
    ) -> tuple[list[Notification], str | None]:
        """A page of the member's inbox, newest first, and the cursor to the next. Only what
        was sent to the member as it is now: a member deleted and added again starts with an
        empty inbox, even before the notifier has cleared the old one."""
        joined = self._require_member(board_id, member_id)
        scope = f"{board_id}#{member_id}#inbox"
        before = cursors.decode(cursor, scope, INBOX_POSITION) if cursor is not None else None
        now_s = int(self.boards.clock().timestamp())
        since = max(joined, (now_s - INBOX_KEEP_SECONDS) * 1_000_000)
        found, last = self.social.list_notifications(board_id, member_id, limit, before, now_s, since)
        return found, (cursors.encode(scope, last) if last is not None else None)


def deliver(social: SocialStore, publisher: Publisher, notification: Notification) -> bool:
    """The outbox of every notification: into the inbox first (once: its id is
    deterministic, and the put is conditional), then to the topic unless the inbox item says
    it was published. A crash between the publish and its mark publishes it again on the
    next attempt (SNS delivery is at least once; the message's ``id`` tells the copies
    apart); a crash before the publish loses nothing. True when the inbox item is new."""
    stored = social.put_notification(notification, INBOX_KEEP_SECONDS)
    if stored or not social.notification_published(notification):
        publisher.publish(notification)
        social.mark_published(notification)
    return stored
