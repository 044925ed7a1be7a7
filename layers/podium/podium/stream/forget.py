"""Forgetting a deleted member, on the REMOVE of its profile: its place in the rivals lists
of the members who followed it (and their follower edges), and its inbox. Both have no
bound (a popular member, a long inbox), so the DELETE request leaves them to the stream,
and the notifier does them a chunk at a time, as a job (``FanoutJob`` of kind ``FORGET``)
like the fan-out of a popular member's change (docs/streams.md, "A deleted member
forgotten in chunks"). The notifier does it because it reads the same shard in order, so
the job exists before any change of a member added again under the same id is read.

Everything is bounded by the removal's moment (the profile's tombstone, the same on every
delivery): a follow begun since, or a notification created since, belongs to the member
added again and stays. So a chunk done twice (a redelivered record, a retried one), or one
done after the member came back, changes nothing the first time did not.
"""

from __future__ import annotations

import logging

from podium import fanout
from podium.ports import SocialStore
from podium.stream.records import FanoutJob

log = logging.getLogger(__name__)


def forget_followers(social: SocialStore, job: FanoutJob, limit: int) -> tuple[str | None, bool, int]:
    """Take the deleted member out of the lists of up to ``limit`` of its followers after
    the job's cursor (at once, on the shared pool), then delete the edges of those it was
    taken from: the last follower read, whether more may follow, and how many were read.

    The lists first, then their edges: a failure half-way leaves edges that the chunk done
    again finds. An edge of a follow begun since the delete stays; the cursor goes past it."""
    board_id, member_id = job.board_id, job.member_id
    followers, more = social.followers_page(board_id, member_id, limit, job.cursor)
    others = [f for f in followers if f != member_id]

    def unfollow(follower: str) -> bool:
        return social.forget_rival(board_id, follower, member_id, job.changed_us)

    stale = [f for f, done in zip(others, fanout.gather(unfollow, others), strict=True) if done]
    social.delete_followers(board_id, member_id, stale)
    if followers:
        log.info("forgot %s on %s in %d followers' lists", member_id, board_id, len(stale))
    return (followers[-1] if followers else job.cursor), more, len(followers)


def clear_inbox(social: SocialStore, job: FanoutJob, limit: int) -> tuple[int, bool]:
    """Delete up to ``limit`` of the deleted member's notifications, those created up to its
    delete: how many, and whether more may be left."""
    cleared, more = social.clear_inbox(job.board_id, job.member_id, job.changed_us, limit)
    if cleared:
        log.info("cleared %d notifications of %s on %s", cleared, job.member_id, job.board_id)
    return cleared, more
