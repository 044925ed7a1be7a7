"""Forgetting a deleted member, on the REMOVE of its profile: its place in the rivals lists
of the members who followed it (and their follower edges), and its inbox. Both have no
bound (a popular member, a long inbox), so the DELETE request leaves them to the stream;
the notifier does it because it reads the same shard in order, so a member added again
under the same id cannot have its first change judged against a follow of the member that
was deleted.

Everything is bounded by the removal's moment (the profile's tombstone, the same on every
delivery): a follow begun since, or a notification created since, belongs to the member
added again and stays. So a redelivered record, or one read after the member came back,
changes nothing the first delivery did not.
"""

from __future__ import annotations

import logging

from podium import fanout
from podium.ports import SocialStore
from podium.stream.records import MemberRemoval

log = logging.getLogger(__name__)


def forget(social: SocialStore, removal: MemberRemoval) -> None:
    board_id, member_id, deleted_us = removal.board_id, removal.member_id, removal.deleted_us
    followers = [f for f in social.followers(board_id, member_id) if f != member_id]

    def unfollow(follower: str) -> bool:
        return social.forget_rival(board_id, follower, member_id, deleted_us)

    # The lists first, then their edges: a failure half-way leaves edges to find again on
    # the record's retry.
    stale = [f for f, done in zip(followers, fanout.gather(unfollow, followers), strict=True) if done]
    social.delete_followers(board_id, member_id, stale)
    cleared = social.clear_inbox(board_id, member_id, deleted_us)
    log.info(
        "forgot %s on %s: %d followers' lists, %d notifications", member_id, board_id, len(stale), cleared
    )
