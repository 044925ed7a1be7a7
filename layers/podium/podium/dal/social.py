"""Who follows whom and what they are told: rivals lists with their follower edges, the
inbox, and each board's last known leader."""

from __future__ import annotations

import time
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from podium import numbers
from podium.dal import codecs, schema
from podium.dal.client import (
    AlreadyApplied,
    ItemMissing,
    Tables,
    VersionConflict,
    deserializer,
    serializer,
)
from podium.errors import Contended, WriteRejected
from podium.models import LeaderState, Notification, Rivals, ScoreState


class Social:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    # -- rivals and follower edges ----------------------------------------------------

    def get_rivals(self, board_id: str, member_id: str) -> Rivals | None:
        item = self.tables.get(schema.rivals_key(board_id, member_id), consistent=True)
        return codecs.rivals_from_item(item) if item else None

    def put_rivals(
        self, board_id: str, member_id: str, rivals: Rivals, previous: Rivals, ended_ttl_s: int
    ) -> None:
        """Replace the member's rivals. Follower edges (``F#{board}#{rival}`` / follower)
        let one query find who follows a member; new edges are written before the list, and
        the edges of rivals dropped expire ``ended_ttl_s`` after the list (they stay while a
        late change may still be judged by the follow that ended: ``Rivals.ended``).
        Readers trust an edge only as far as the list agrees, so a request that fails
        half-way changes nothing anyone can see.

        The list is written only while the member exists and is not being deleted (one
        transaction with a check of its profile), so a list written as the member is deleted
        cannot outlive it; then the edges just added are taken back and ItemMissing raised.
        And only over the version ``previous`` was read at (VersionConflict otherwise, and
        the caller reads it again): two replacements at once cannot leave a list whose edges
        the other one expired. The edges a loser added stay (readers ignore an edge its
        list does not name, and the winner may need the same one)."""
        added = [r for r in rivals.ids if r not in previous.ids]
        removed = [r for r in previous.ids if r not in rivals.ids]
        self.tables.batch_write(
            [{"PutRequest": {"Item": schema.edge_key(board_id, rival, member_id)}} for rival in added]
        )
        check = {"Key": schema.profile_key(board_id, member_id), "ConditionExpression": schema.LIVE_PROFILE}
        put: dict[str, Any] = {"Item": codecs.rivals_item(board_id, member_id, rivals)}
        if previous.version:
            put["ConditionExpression"] = "v = :read"
            put["ExpressionAttributeValues"] = {":read": {"N": str(previous.version)}}
        else:  # no list yet, or one written before lists had versions
            put["ConditionExpression"] = "attribute_not_exists(v)"
        codes = self.tables.transact([{"ConditionCheck": check}, {"Put": put}])
        if codes is not None:
            if codes[0] == "ConditionalCheckFailed":
                self._delete_edges(board_id, member_id, [r for r in added if r not in previous.ended])
                raise ItemMissing(member_id)
            if codes[1] == "ConditionalCheckFailed":
                raise VersionConflict(member_id)
            raise WriteRejected("the rivals list was not written", codes)
        expires = {"N": str(int(time.time()) + ended_ttl_s)}
        self.tables.batch_write(
            [
                {"PutRequest": {"Item": {**schema.edge_key(board_id, rival, member_id), "ttl": expires}}}
                for rival in removed
            ]
        )

    def _delete_edges(self, board_id: str, follower: str, rivals: Sequence[str]) -> None:
        self.tables.batch_write(
            [{"DeleteRequest": {"Key": schema.edge_key(board_id, rival, follower)}} for rival in rivals]
        )

    def drop_follows(self, board_id: str, follower: str, rivals: Rivals) -> None:
        """Delete the follower edges of ``follower``'s list: its rivals, and those it
        stopped following lately (their edges wait out a TTL)."""
        self._delete_edges(board_id, follower, sorted({*rivals.ids, *rivals.ended}))

    def delete_followers(self, board_id: str, rival: str, followers: Sequence[str]) -> None:
        """Delete the edges that say ``followers`` follow ``rival``."""
        self.tables.batch_write(
            [{"DeleteRequest": {"Key": schema.edge_key(board_id, rival, f)}} for f in followers]
        )

    def forget_rival(self, board_id: str, follower: str, rival: str, before_us: int) -> bool:
        """Take ``rival`` out of ``follower``'s list if the follow began before ``before_us``
        (a follow of the member that was deleted then). True when the follower does not
        follow ``rival`` since ``before_us`` or later, so that its edge is stale; False when
        it follows the member added again since (its edge stays). One conditional update on
        the list's position of ``rival``: a list changed meanwhile is read again; done again
        (a redelivered record) it finds nothing to take out."""
        key = schema.rivals_key(board_id, follower)
        for _ in range(8):
            item = self.tables.get(key, consistent=True)
            rivals = codecs.rivals_from_item(item) if item else None
            if rivals is None or rival not in rivals.ids:
                return True
            since = rivals.since.get(rival)
            if since is not None and since >= before_us:
                return False
            position = rivals.ids.index(rival)
            # A new version, so that a replacement that read the list before fails and reads
            # it again (it would otherwise write the id back).
            if self.tables.update(
                key,
                f"REMOVE ids[{position}], since.#r ADD v :one",
                ConditionExpression=f"ids[{position}] = :r",
                ExpressionAttributeNames={"#r": rival},
                ExpressionAttributeValues={":r": {"S": rival}, ":one": {"N": "1"}},
            ):
                return True
        raise Contended(f"the rivals list of {follower} kept changing while {rival} was taken out")

    def followers(self, board_id: str, member_id: str) -> list[str]:
        """The members whose rivals list names ``member_id``, or did lately (one query,
        paginated)."""
        request: dict[str, Any] = {
            "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": schema.followers_pk(board_id, member_id)}},
            "ProjectionExpression": "sk",
        }
        return [item["sk"]["S"] for item in self.tables.query_items(request)]

    def followers_page(
        self, board_id: str, member_id: str, limit: int, after: str | None
    ) -> tuple[list[str], bool]:
        """Up to ``limit`` of the members that follow ``member_id`` (or did lately), in id
        order after ``after`` (None: from the first), and whether more may follow: one query
        of ``limit`` keys."""
        request: dict[str, Any] = {
            "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": schema.followers_pk(board_id, member_id)}},
            "ProjectionExpression": "sk",
            "Limit": limit,
        }
        if after is not None:
            request["ExclusiveStartKey"] = schema.edge_key(board_id, member_id, after)
        response = next(self.tables.query_pages(request))
        return [item["sk"]["S"] for item in response.get("Items", [])], "LastEvaluatedKey" in response

    def follower_states(
        self, board_id: str, followers: Sequence[str], period: str
    ) -> dict[str, tuple[ScoreState | None, Rivals]]:
        """Each follower's score and rivals list, in one batched read."""
        keys = []
        for follower in followers:
            keys.append(schema.score_key(board_id, follower, period))
            keys.append(schema.rivals_key(board_id, follower))
        items = self.tables.batch_get(keys, consistent=True)
        states = {}
        for follower in followers:
            pk = schema.member_pk(board_id, follower)
            score = items.get((pk, schema.score_sk(period)))
            rivals = items.get((pk, schema.RIVALS))
            states[follower] = (
                codecs.score_from_item(score) if score else None,
                codecs.rivals_from_item(rivals) if rivals else Rivals(),
            )
        return states

    # -- jobs over a member's followers, a chunk at a time ------------------------------------

    def start_fanout(self, board_id: str, member_id: str, job: str, body: str, cursor: str | None) -> bool:
        """Write the pending job ``job`` (its id, ``schema.job_id``: of the stream record that
        began it) over the followers of ``member_id``, what it works from (``body``) and how
        far it went (``cursor``: the last follower done, None: none yet); False when it exists
        already (the record was delivered before). Its stream record is the next chunk's turn."""
        item: dict[str, Any] = {
            **schema.fanout_key(board_id, member_id, job),
            schema.FANOUT_CHANGE: {"S": body},
            schema.FANOUT_STEP: {"N": "0"},
            schema.FANOUT_PENDING: {"BOOL": True},
        }
        if cursor is not None:
            item[schema.FANOUT_CURSOR] = {"S": cursor}
        return self.tables.put_if_absent(item)

    def advance_fanout(
        self, board_id: str, member_id: str, job: str, step: int, cursor: str | None, done: bool
    ) -> bool:
        """Move a pending job read at ``step`` on to ``cursor`` (its stream record is the
        next chunk's turn), or end it (``done``: it then expires after the stream's retention,
        so that a redelivered record that began it still finds it). False when it is no
        longer at ``step``: another delivery of the same chunk moved it already."""
        names = {"#n": schema.FANOUT_STEP, "#p": schema.FANOUT_PENDING, "#c": schema.FANOUT_CURSOR}
        values: dict[str, Any] = {
            ":step": {"N": str(step)},
            ":next": {"N": str(step + 1)},
            ":t": {"BOOL": True},
        }
        if done:
            expression = "SET #n = :next, #p = :f, #ttl = :ttl REMOVE #c"
            names["#ttl"] = "ttl"
            values[":f"] = {"BOOL": False}
            values[":ttl"] = {"N": str(int(time.time()) + schema.MARK_TTL_SECONDS)}
        elif cursor is None:
            expression = "SET #n = :next REMOVE #c"
        else:
            expression = "SET #n = :next, #c = :c"
            values[":c"] = {"S": cursor}
        return self.tables.update(
            schema.fanout_key(board_id, member_id, job),
            expression,
            ConditionExpression="#n = :step AND #p = :t",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def pending_fanouts(
        self, board_id: str, member_id: str, forgets_only: bool = False
    ) -> list[tuple[str, str, str | None, int]]:
        """The jobs over the member's followers still pending, as (job id, body, cursor,
        step). With ``forgets_only``, only its forgettings: a range of sort keys, so that the
        query reads none of its fan-outs (a popular member's finished ones stay two days)."""
        condition, values = "pk = :p", {":p": {"S": schema.fanout_pk(board_id, member_id)}}
        if forgets_only:
            condition += " AND begins_with(sk, :f)"
            values[":f"] = {"S": schema.FORGET_JOB}
        request: dict[str, Any] = {
            "KeyConditionExpression": condition,
            "FilterExpression": "#p = :t",
            "ExpressionAttributeNames": {"#p": schema.FANOUT_PENDING},
            "ExpressionAttributeValues": {**values, ":t": {"BOOL": True}},
            "ConsistentRead": True,
        }
        return [
            (
                item["sk"]["S"],
                item[schema.FANOUT_CHANGE]["S"],
                item[schema.FANOUT_CURSOR]["S"] if schema.FANOUT_CURSOR in item else None,
                int(item[schema.FANOUT_STEP]["N"]),
            )
            for item in self.tables.query_items(request)
        ]

    # -- the inbox ----------------------------------------------------------------------

    def put_notification(self, notification: Notification, ttl_seconds: int) -> bool:
        """Store the notification in the recipient's inbox; False when it is there already."""
        item = {
            **codecs.inbox_key(notification),
            **codecs.notification_attributes(notification),
            "published": {"BOOL": False},
            "ttl": {"N": str(notification.created_us // 1_000_000 + ttl_seconds)},
        }
        return self.tables.put_if_absent(item)

    def notification_published(self, notification: Notification) -> bool:
        item = self.tables.get(codecs.inbox_key(notification), consistent=True)
        return bool(item and item.get("published", {}).get("BOOL"))

    def mark_published(self, notification: Notification) -> None:
        self.tables.update(
            codecs.inbox_key(notification),
            "SET published = :t",
            ExpressionAttributeValues={":t": {"BOOL": True}},
        )

    def list_notifications(
        self,
        board_id: str,
        member_id: str,
        limit: int,
        before: str | None,
        now_s: int,
        since_us: int = 0,
    ) -> tuple[list[Notification], str | None]:
        """Newest first, below the inbox sort key ``before`` and created at ``since_us`` or
        later, and the sort key to continue below; items past their TTL that DynamoDB has not
        yet removed are skipped."""
        since = schema.inbox_bound(since_us) if since_us > 0 else None
        items, next_key = self.tables.newest_first_page(
            schema.inbox_pk(board_id, member_id), limit, before, now_s, since=since
        )
        return [codecs.notification_from_item(item) for item in items], next_key

    def clear_inbox(self, board_id: str, member_id: str, upto_us: int, limit: int) -> tuple[int, bool]:
        """Delete up to ``limit`` of the member's notifications created at ``upto_us`` or
        before (the oldest first: one query of ``limit`` keys); how many, and whether more
        may be left. Deleted, they are not found again: no cursor is needed."""
        pk = schema.inbox_pk(board_id, member_id)
        request: dict[str, Any] = {
            "KeyConditionExpression": "pk = :p AND sk < :b",
            "ExpressionAttributeValues": {":p": {"S": pk}, ":b": {"S": schema.inbox_bound(upto_us + 1)}},
            "ProjectionExpression": "sk",
            "Limit": limit,
        }
        response = next(self.tables.query_pages(request))
        keys = [item["sk"]["S"] for item in response.get("Items", [])]
        self.tables.batch_write([{"DeleteRequest": {"Key": schema.key(pk, k)}} for k in keys])
        return len(keys), "LastEvaluatedKey" in response

    # -- the leader -----------------------------------------------------------------------

    def get_leader(self, board_id: str, period: str) -> LeaderState | None:
        item = self.tables.get(schema.leader_key(board_id, period), consistent=True)
        if not item:
            return None
        pending = (
            [codecs.notification_from_json(n) for n in numbers.loads(item["pending"]["S"])]
            if "pending" in item
            else []
        )
        return LeaderState(
            member_id=item["leader"]["S"] if "leader" in item else None,
            sort_key=item["rsk"]["S"] if "rsk" in item else None,
            score=deserializer.deserialize(item["s"]) if "s" in item else None,
            version=int(item["lv"]["N"]),
            pending=pending,
        )

    def swap_leader(
        self,
        board_id: str,
        period: str,
        expected_version: int | None,
        leader: tuple[str, str, Decimal] | None,
        pending: list[Notification],
        event_id: str,
    ) -> bool:
        """Record a new leader with the notifications it causes, as stream record
        ``event_id``'s judgment, if nobody else changed the record since version
        ``expected_version`` (None: no record yet); False when somebody did. The leader
        item and the record's mark are written in one transaction, so a record's judgment
        takes effect once: AlreadyApplied when the record was judged before."""
        item: dict[str, Any] = {
            **schema.leader_key(board_id, period),
            "lv": {"N": str((expected_version or 0) + 1)},
        }
        if leader is not None:
            item["leader"] = {"S": leader[0]}
            item["rsk"] = {"S": leader[1]}
            item["s"] = serializer.serialize(leader[2])
        if pending:
            item["pending"] = {"S": numbers.dumps([codecs.notification_to_json(n) for n in pending])}
        put: dict[str, Any] = {"Item": item}
        if expected_version is None:
            put["ConditionExpression"] = "attribute_not_exists(pk)"
        else:
            put["ConditionExpression"] = "lv = :v"
            put["ExpressionAttributeValues"] = {":v": {"N": str(expected_version)}}
        codes = self.tables.transact([self.tables.mark_put(schema.leader_mark(event_id)), {"Put": put}])
        if codes is None:
            return True
        if codes[0] == "ConditionalCheckFailed":
            raise AlreadyApplied(event_id)
        if codes[1] == "ConditionalCheckFailed":
            return False
        raise WriteRejected("the leader was not recorded", codes)

    def mark_leaders_judged(self, event_ids: list[str]) -> None:
        """Remember that the stream records ``event_ids`` were judged for the leader and
        changed nothing (a judgment that changes the leader writes its mark itself), 25 a
        request."""
        self.tables.batch_write(
            [{"PutRequest": {"Item": schema.mark_item(schema.leader_mark(e))}} for e in event_ids]
        )

    def clear_leader_pending(self, board_id: str, period: str, version: int) -> None:
        # If a newer leader record replaced ours (the condition fails), its own pending
        # list stands.
        self.tables.update(
            schema.leader_key(board_id, period),
            "REMOVE pending",
            ConditionExpression="lv = :v",
            ExpressionAttributeValues={":v": {"N": str(version)}},
        )
