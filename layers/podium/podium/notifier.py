"""The notifier: fed by the table's change stream, it tells members what happened.

* ``overtaken``: a rival's score went from not better than a follower's score to
  strictly better. One query finds the followers of the member that changed (follower
  edges), and one batched read gets their scores and rivals lists.
* ``newLeader``: the first entry of the listing changed from one member to another. The
  board's last known leader is kept in one item; only a change that can move the lead
  (a member now better than the stored leader, or the leader itself changing) costs the
  bounded check: one ``Limit=1`` query per shard.

Each notification's id derives from the stream record that caused it, so a record
delivered twice yields each notification once in the inbox. A leader change is recorded
together with the notifications it causes (compare-and-set on the leader item), then
delivered, so that neither a crash nor a concurrent consumer loses or doubles one.
Delivery stores the notification in the inbox first and publishes to SNS only if it is
not yet marked published: a publish is retried, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from podium.changes import ScoreRecord, derived_id, score_record
from podium.keys import rank_partition_key
from podium.models import BoardSettings, Notification
from podium.ranking import merge_shards
from podium.store import Store

INBOX_TTL_SECONDS = 30 * 24 * 3600
MAX_ATTEMPTS = 16

SettingsOf = Callable[[str], BoardSettings]


class Publisher(Protocol):
    def publish(self, notification: Notification) -> None: ...


class Notifier:
    def __init__(self, store: Store, publisher: Publisher, settings_of: SettingsOf) -> None:
        self.store = store
        self.publisher = publisher
        self.settings_of = settings_of

    def apply(self, raw: dict[str, Any]) -> None:
        record = score_record(raw)
        if record is None:
            return
        settings = self.settings_of(record.board_id)
        if record.new is not None and record.changed:
            for notification in self.overtaken(record, settings):
                self.deliver(notification)
        self.check_leader(record, settings)

    # -- overtaken --------------------------------------------------------------------

    def overtaken(self, record: ScoreRecord, settings: BoardSettings) -> list[Notification]:
        assert record.new is not None
        followers = self.store.followers(record.board_id, record.member_id)
        followers = [f for f in followers if f != record.member_id]
        if not followers:
            return []
        found = []
        states = self.store.follower_states(record.board_id, followers, record.period)
        for follower, (state, rivals) in states.items():
            if state is None or record.member_id not in rivals:
                continue  # gone, or a stale edge of a rivals list since replaced
            was_better = record.old is not None and settings.is_better(record.old, state.score)
            if not was_better and settings.is_better(record.new, state.score):
                found.append(
                    Notification(
                        notification_id=derived_id(record.event_id, "overtaken", follower),
                        type="overtaken",
                        board_id=record.board_id,
                        member_id=follower,
                        by_member_id=record.member_id,
                        score=state.score,
                        by_score=record.new,
                        created_us=record.changed_us,
                    )
                )
        return found

    # -- newLeader --------------------------------------------------------------------

    def check_leader(self, record: ScoreRecord, settings: BoardSettings) -> None:
        for _ in range(MAX_ATTEMPTS):
            known = self.store.get_leader(record.board_id, record.period)
            if known is not None and known.pending:
                self._deliver_pending(record, known.pending, known.version)
                continue
            could_move = (
                known is None
                or known.member_id is None
                or known.member_id == record.member_id
                or (record.new_sort_key or "~") < (known.sort_key or "")
            )
            if not could_move:
                return
            leader = self._current_leader(record.board_id, record.period, settings)
            previous = known.member_id if known else None
            if known is not None and leader == (
                (known.member_id, known.sort_key, known.score) if known.member_id else None
            ):
                return
            pending = []
            if leader is not None and previous is not None and leader[0] != previous:
                pending = self._leader_notifications(record, leader, previous, known.score if known else None)
            if self.store.swap_leader(
                record.board_id, record.period, known.version if known else None, leader, pending
            ):
                if pending:
                    self._deliver_pending(record, pending, (known.version if known else 0) + 1)
                return
        raise RuntimeError(f"the leader of {record.board_id} kept changing under the notifier")

    def _current_leader(
        self, board_id: str, period: str, settings: BoardSettings
    ) -> tuple[str, str, Any] | None:
        partitions = [rank_partition_key(board_id, period, shard) for shard in range(settings.shards)]
        heads = self.store.gather(lambda p: self.store.index_keys(p, limit=1), partitions)
        top = merge_shards(heads, 1)
        if not top:
            return None
        score, member_id = settings.rank_order.parse(top[0])
        return member_id, top[0], score

    def _leader_notifications(
        self, record: ScoreRecord, leader: tuple[str, str, Any], previous: str, previous_score: Any
    ) -> list[Notification]:
        new_id, _, new_score = leader
        still_there = self.store.get_score(record.board_id, previous, record.period)
        by_score = still_there.score if still_there else previous_score
        notifications = [
            Notification(
                notification_id=derived_id(record.event_id, "newLeader", new_id),
                type="newLeader",
                board_id=record.board_id,
                member_id=new_id,
                by_member_id=previous,
                score=new_score,
                by_score=by_score,
                created_us=record.changed_us,
            )
        ]
        if still_there is not None:  # a deleted leader is told nothing
            notifications.append(
                Notification(
                    notification_id=derived_id(record.event_id, "newLeader", previous),
                    type="newLeader",
                    board_id=record.board_id,
                    member_id=previous,
                    by_member_id=new_id,
                    score=still_there.score,
                    by_score=new_score,
                    created_us=record.changed_us,
                )
            )
        return notifications

    def _deliver_pending(self, record: ScoreRecord, pending: list[Notification], version: int) -> None:
        for notification in pending:
            self.deliver(notification)
        self.store.clear_leader_pending(record.board_id, record.period, version)

    # -- delivery ---------------------------------------------------------------------

    def deliver(self, notification: Notification) -> None:
        stored = self.store.put_notification(notification, INBOX_TTL_SECONDS)
        if stored or not self.store.notification_published(notification):
            self.publisher.publish(notification)
            self.store.mark_published(notification)


class SnsPublisher:
    """Publishes a notification to the stack's SNS topic, with message attributes ``type``,
    ``boardId`` and ``memberId`` for subscription filters."""

    def __init__(self, topic_arn: str, client: Any = None) -> None:
        if not topic_arn:
            raise RuntimeError("NOTIFICATION_TOPIC_ARN is not set: notifications would be lost")
        self.topic_arn = topic_arn
        self._client = client

    def publish(self, notification: Notification) -> None:
        from podium import numbers

        if self._client is None:
            import boto3

            self._client = boto3.client("sns")
        self._client.publish(
            TopicArn=self.topic_arn,
            Message=numbers.dumps(notification.to_json()),
            MessageAttributes={
                "type": {"DataType": "String", "StringValue": notification.type},
                "boardId": {"DataType": "String", "StringValue": notification.board_id},
                "memberId": {"DataType": "String", "StringValue": notification.member_id},
            },
        )
