"""Members: the profile item (``data``) and one score item per period, whose ``rpk``/``rsk``
attributes put the member in the ranking index."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from podium import fanout, numbers
from podium.dal import codecs, idempotency, schema
from podium.dal.boards import DataSizes
from podium.dal.client import (
    UNCONFIRMED,
    AlreadyApplied,
    Item,
    ItemMissing,
    Tables,
    VersionConflict,
    parse_timestamp,
    timestamp,
)
from podium.errors import Contended, HiddenChanged, WriteRejected, WriteUnconfirmed
from podium.idempotency import RecordedSubmission, SubmissionKey
from podium.models import Placement, ScoreChange, ScoreState

# The profile's ``hidden`` attribute exists only while the member is hidden (true).
HIDDEN_NAME = {"#hd": "hidden"}
TRUE = {"BOOL": True}


def _hidden_is(hidden: bool) -> str:
    """A condition on the profile: the member exists, no delete has begun (``LIVE_PROFILE``:
    the tombstone), and it is hidden (or not), as the write assumes."""
    return f"{schema.LIVE_PROFILE} AND " + ("#hd = :hidden" if hidden else "attribute_not_exists(#hd)")


def _live(profile: Item | None) -> Item | None:
    """A profile being deleted (it carries the tombstone) is no member any more."""
    return profile if profile is not None and schema.TOMBSTONE not in profile else None


class Members:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self._data_sizes = DataSizes(tables)

    def get_score(self, board_id: str, member_id: str, period: str) -> ScoreState | None:
        # Every attribute a write of the state puts back (``ci``, when the item was made, and
        # ``rt``, a rollup target's, too: a write without them loses them).
        key = schema.score_key(board_id, member_id, period)
        item = self.tables.get(key, consistent=True, projection="s, v, t, h, hd, ht, ci, rt")
        return codecs.score_from_item(item) if item else None

    def get_member(
        self, board_id: str, member_id: str, period: str
    ) -> tuple[dict[str, Any] | None, ScoreState | None]:
        """The member's profile (data and timestamps) and its score, read consistently."""
        profile_key = schema.profile_key(board_id, member_id)
        score_key = schema.score_key(board_id, member_id, period)
        items = self.tables.batch_get([profile_key, score_key], consistent=True)
        pk = schema.member_pk(board_id, member_id)
        profile = _live(items.get((pk, schema.PROFILE)))
        score = items.get((pk, schema.score_sk(period))) if profile is not None else None
        return (
            codecs.profile_from_item(profile) if profile else None,
            codecs.score_from_item(score) if score else None,
        )

    def hidden(self, board_id: str, member_id: str) -> bool | None:
        """Whether the member is hidden, read consistently; None when it does not exist."""
        item = _live(
            self.tables.get(
                schema.profile_key(board_id, member_id),
                consistent=True,
                projection="pk, #hd, #g",
                names={**HIDDEN_NAME, "#g": schema.TOMBSTONE},
            )
        )
        return None if item is None else "hidden" in item

    def scores_between(self, board_id: str, member_id: str, first: str, last: str) -> dict[str, ScoreState]:
        """The member's score items of the periods ``first`` to ``last`` (their ids sort in
        time order), read consistently in one query: a hide touches at most these."""
        pk = schema.member_pk(board_id, member_id)
        request: dict[str, Any] = {
            "KeyConditionExpression": "pk = :p AND sk BETWEEN :lo AND :hi",
            "ExpressionAttributeValues": {
                ":p": {"S": pk},
                ":lo": {"S": schema.score_sk(first)},
                ":hi": {"S": schema.score_sk(last)},
            },
            "ConsistentRead": True,
        }
        return {
            schema.period_of_score_sk(item["sk"]["S"]): codecs.score_from_item(item)
            for item in self.tables.query_items(request)
        }

    def exists(self, board_id: str, member_id: str) -> bool:
        return self.joined_us(board_id, member_id) is not None

    def joined_us(self, board_id: str, member_id: str) -> int | None:
        """When the member (as it is now: a member deleted and added again starts afresh)
        was created, in µs; None when there is no such member."""
        names = {"#g": schema.TOMBSTONE}
        item = _live(
            self.tables.get(
                schema.profile_key(board_id, member_id),
                consistent=True,
                projection="createdAt, #g",
                names=names,
            )
        )
        if item is None:
            return None
        return int(parse_timestamp(item["createdAt"]["S"]).timestamp() * 1_000_000)

    def get_scores(self, board_id: str, member_ids: Sequence[str], period: str) -> dict[str, ScoreState]:
        keys = [schema.score_key(board_id, member_id, period) for member_id in member_ids]
        items = self.tables.batch_get(keys, consistent=True)
        scores = {}
        for member_id in member_ids:
            item = items.get((schema.member_pk(board_id, member_id), schema.score_sk(period)))
            if item is not None:
                scores[member_id] = codecs.score_from_item(item)
        return scores

    def versions(
        self, board_id: str, member_ids: Sequence[str], period: str, *, consistent: bool
    ) -> dict[str, tuple[str | None, tuple[int, int]]]:
        """Each found score item's sort key (None: hidden, not ranked) and version ``(ci, v)``:
        what the count tree holds of a member (a build; a replayed record's ``newest``)."""
        keys = [schema.score_key(board_id, member_id, period) for member_id in member_ids]
        found = {}
        for (pk, _), item in self.tables.batch_get(keys, consistent=consistent).items():
            version = (int(item["ci"]["N"]) if "ci" in item else 0, int(item["v"]["N"]))
            found[schema.parse_member_pk(pk)[1]] = (item["rsk"]["S"] if "rsk" in item else None, version)
        return found

    def get_data(self, board_id: str, member_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        keys = [schema.profile_key(board_id, member_id) for member_id in member_ids]
        items = self.tables.batch_get(keys, consistent=False)
        data = {}
        for member_id in member_ids:
            item = _live(items.get((schema.member_pk(board_id, member_id), schema.PROFILE)))
            data[member_id] = codecs.profile_from_item(item)["data"] if item else {}
        return data

    def create_member(
        self,
        board_id: str,
        member_id: str,
        data: dict[str, Any],
        score: tuple[ScoreState, Placement] | None,
        period: str,
        now: datetime,
        mark: str | None = None,
        hidden: bool = False,
    ) -> bool:
        """Create the profile and (unless ``score`` is None) score items together, with
        ``mark``, the mark of the stream record that causes it; False, writing nothing,
        when any of them exists."""
        text = numbers.dumps(data)
        self._data_sizes.note(board_id, text)
        profile = {
            **schema.profile_key(board_id, member_id),
            "data": {"S": text},
            "createdAt": {"S": timestamp(now)},
            "updatedAt": {"S": timestamp(now)},
        }
        if hidden:
            profile["hidden"] = TRUE
        items = [profile]
        if score is not None:
            items.append(self._score_item(board_id, member_id, period, *score))
        if mark:
            items.append(schema.mark_item(mark))
        return self.tables.create_together(items)

    def update_member(
        self,
        board_id: str,
        member_id: str,
        data: dict[str, Any] | None,
        score: tuple[int | None, ScoreState, Placement] | None,
        period: str,
        now: datetime,
        hidden_was: bool = False,
        hidden: bool | None = None,
    ) -> None:
        """Replace the data (when given), the score (when given, as ``(expected version,
        new state, its placement)``) and whether the member is hidden (when not None) of an
        existing member, atomically, on the condition that it is hidden as ``hidden_was``
        says (the score given was placed by it; else ItemMissing, and the caller reads
        again)."""
        names = "updatedAt = :u" + (", #d = :d" if data is not None else "")
        values: dict[str, Any] = {":u": {"S": timestamp(now)}}
        if data is not None:
            values[":d"] = {"S": numbers.dumps(data)}
            self._data_sizes.note(board_id, values[":d"]["S"])
        if hidden:
            names += ", #hd = :hidden"
        if hidden_was or hidden:
            values[":hidden"] = TRUE
        expression = f"SET {names}" + (" REMOVE #hd" if hidden is False else "")
        profile_update: dict[str, Any] = {
            "Key": schema.profile_key(board_id, member_id),
            "UpdateExpression": expression,
            "ConditionExpression": _hidden_is(hidden_was),
            "ExpressionAttributeValues": values,
            "ExpressionAttributeNames": {**HIDDEN_NAME, **({"#d": "data"} if data is not None else {})},
        }
        if score is None:
            key, expression = profile_update.pop("Key"), profile_update.pop("UpdateExpression")
            if not self.tables.update(key, expression, **profile_update):
                raise ItemMissing(member_id)
            return
        expected, state, placement = score
        put = self._score_put(board_id, member_id, period, state, placement, expected)
        codes = self.tables.transact([{"Update": profile_update}, {"Put": put}])
        if codes is None:
            return
        if codes[0] == "ConditionalCheckFailed":
            raise ItemMissing(member_id)
        if "ConditionalCheckFailed" in codes:
            raise VersionConflict(member_id)
        raise WriteRejected(f"the update of member {member_id} was rejected", codes)

    def write_score(
        self,
        board_id: str,
        member_id: str,
        expected_version: int | None,
        state: ScoreState,
        placement: Placement,
        period: str,
        mark: str | None = None,
        answer: tuple[SubmissionKey, ScoreChange] | None = None,
        also: Sequence[tuple[str, Any]] = (),
    ) -> None:
        """Replace the score item if it still has ``expected_version`` (optimistic
        locking), or (None) write the member's first score in ``period`` if the member
        exists (else ItemMissing) and is hidden as ``state`` is (else HiddenChanged: a
        member's first score in a period learns from its profile whether it is hidden).

        With ``mark``, the stream record's mark is written in the same transaction, so the
        change is applied once (else AlreadyApplied); with ``answer``, the submission's
        Idempotency-Key record (AlreadyApplied: applied before); with ``also``, those named
        actions (the fold's removal of its pages of events: AlreadyApplied when one fails).

        Applied once also when the database's answer is lost: a transaction sent again by
        botocore carries the same ClientRequestToken, so DynamoDB does not apply it twice;
        the single put carries a token of its own (``w``), by which a put whose condition
        fails is told apart from one that an earlier attempt of it already wrote. When
        every attempt fails, reading back says whether one was applied (``_settle``)."""
        token = secrets.token_hex(6)
        put = self._score_put(board_id, member_id, period, state, placement, expected_version, token)
        actions: list[tuple[str, Any]] = []
        if mark is not None:
            actions.append(("mark", self.tables.mark_put(mark)))
        if expected_version is None:
            check: dict[str, Any] = {
                "Key": schema.profile_key(board_id, member_id),
                "ConditionExpression": _hidden_is(state.hidden),
                "ExpressionAttributeNames": HIDDEN_NAME,
            }
            if state.hidden:
                check["ExpressionAttributeValues"] = {":hidden": TRUE}
            actions.append(("member", {"ConditionCheck": check}))
        if answer is not None:
            actions.append(("answer", {"Put": idempotency.record_put(board_id, member_id, *answer)}))
        actions += [*also, ("score", {"Put": put})]
        try:
            if len(actions) == 1:
                return self._put_score(put, expected_version, token)
            codes = self.tables.transact([action for _, action in actions])
        except WriteUnconfirmed as unconfirmed:
            if mark is not None or also:
                raise  # the stream delivers the record again, and its mark (or its pages) tell
            return self._settle(board_id, member_id, period, expected_version, token, answer, unconfirmed)
        if codes is None:
            return
        failed = {
            name for (name, _), code in zip(actions, codes, strict=False) if code == "ConditionalCheckFailed"
        }
        if failed - {"answer", "member", "score"}:  # the mark, or one of ``also``
            raise AlreadyApplied(str(mark or sorted(failed)))
        if "answer" in failed:
            raise AlreadyApplied(f"Idempotency-Key of {member_id}")
        if "member" in failed:
            hidden = self.hidden(board_id, member_id)
            if hidden is None:
                raise ItemMissing(member_id)
            raise HiddenChanged(member_id, hidden)
        if "score" in failed or "TransactionConflict" in codes:
            raise VersionConflict(member_id)
        raise WriteRejected(f"the score of {member_id} was not written", codes)

    def _put_score(self, put: dict[str, Any], expected_version: int | None, token: str) -> None:
        """The score item's put over ``expected_version``, alone (1 WCU). A condition that
        fails only after botocore sent the put again may have failed on this put's own
        earlier attempt: the item carries its token then, and it was applied."""
        conditions = {k: v for k, v in put.items() if k not in ("Item", "TableName")}
        found = self.tables.put_or_current(put["Item"], **conditions)
        if found is None:
            return
        current, resent = found
        if current.get("w", {}).get("S") == token:
            return  # applied by an earlier attempt whose answer was lost
        if resent and int(current.get("v", {}).get("N", "0")) > (expected_version or 0) + 1:
            # Later writes replaced whatever took our version: ours may have been it.
            raise WriteUnconfirmed(UNCONFIRMED)
        raise VersionConflict(str(put["Item"]["pk"]["S"]))

    def _settle(
        self,
        board_id: str,
        member_id: str,
        period: str,
        expected_version: int | None,
        token: str,
        answer: tuple[SubmissionKey, ScoreChange] | None,
        unconfirmed: WriteUnconfirmed,
    ) -> None:
        """A score write that failed after an attempt that may have been applied: returns
        when it was; raises what the request should answer when it was not (``refused``:
        429, or a 500 that changed nothing); AlreadyApplied when the key's record exists
        (its answer is the one to give); ``unconfirmed`` when reading back cannot tell."""
        refused = unconfirmed.refused or unconfirmed
        found, item = None, None
        try:
            if answer is not None:
                found = self.recorded_submission(board_id, member_id, answer[0])
            else:
                item = self.tables.get(
                    schema.score_key(board_id, member_id, period), consistent=True, projection="v, w"
                )
        except Exception:
            raise unconfirmed from unconfirmed.__cause__  # reading back failed too
        if answer is not None:
            if found is not None:  # applied (by this request, or a duplicate of it)
                raise AlreadyApplied(f"Idempotency-Key of {member_id}") from unconfirmed
            raise refused  # the record is written with the score: neither was
        if item is not None and item.get("w", {}).get("S") == token:
            return
        if item is not None and int(item["v"]["N"]) > (expected_version or 0) + 1:
            raise unconfirmed
        raise refused  # not applied: the version it would take is free, or another's

    def recorded_submission(
        self, board_id: str, member_id: str, key: SubmissionKey
    ) -> RecordedSubmission | None:
        """The record of a submission sent with ``key``, read consistently; None if none."""
        item = self.tables.get(idempotency.record_key(board_id, member_id, key), consistent=True)
        return idempotency.recorded(item, member_id)

    def record_submission(
        self, board_id: str, member_id: str, key: SubmissionKey, change: ScoreChange
    ) -> bool:
        """Record the answer of a submission that changed no score (it writes nothing
        else); False when the key has a record already."""
        put = idempotency.record_put(board_id, member_id, key, change)
        return self.tables.put(put.pop("Item"), **put)

    def fence(self, board_id: str, member_id: str, now_us: int) -> int | None:
        """The first step of a delete: mark the profile with the tombstone (``gone``, when the
        delete began; a retried or concurrent delete keeps the first one, and gets it back).
        From then on the member reads as missing and no write can create a score item or a
        rivals list for it (they check ``LIVE_PROFILE``), so what the delete lists next is
        all it must remove. None when there is no profile."""
        names = {"#g": schema.TOMBSTONE}
        found = self.tables.update_returning(
            schema.profile_key(board_id, member_id),
            "SET #g = if_not_exists(#g, :now)",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues={":now": {"N": str(now_us)}},
        )
        return int(found[schema.TOMBSTONE]["N"]) if found is not None else None

    def delete_member(self, board_id: str, member_id: str, gone_us: int) -> None:
        """Delete every item of the member whose profile carries the tombstone ``gone_us``
        (its scores in every period, its rivals list), the profile last: a delete that fails
        half-way is finished by its retry. Called after ``fence``: a score item written
        meanwhile either exists now (and is deleted) or fails its condition (its version, or
        ``LIVE_PROFILE`` for a first score).

        A second delete of the same member (a retried request beside the first) may run
        late, after the first has finished and the member was added again: so each listing
        reads the profile too, and stops when it no longer carries this tombstone; each
        score item is deleted on the condition that it is as listed (its ``t``), and the
        profile on the condition that it carries this tombstone. A score changed since it
        was listed (a submission that landed first) is listed again."""
        pk = schema.member_pk(board_id, member_id)
        for _ in range(16):
            # One consistent query: the profile, then its scores and rivals read after it
            # (MEMBER < RIVALS < SCORE#); Idempotency-Key records (KEY#) sort before it.
            request: dict[str, Any] = {
                "KeyConditionExpression": "pk = :p",
                "ExpressionAttributeValues": {":p": {"S": pk}},
                "ExpressionAttributeNames": {"#g": schema.TOMBSTONE},
                "ProjectionExpression": "sk, t, #g",
                "ConsistentRead": True,
            }
            found = list(self.tables.query_items(request))
            profile = next((item for item in found if item["sk"]["S"] == schema.PROFILE), None)
            if profile is None or not self._carries(profile, gone_us):
                return  # another delete finished this member (and it may be back)
            rest = [item for item in found if item is not profile]

            def remove(item: Item) -> bool:
                key = schema.key(pk, item["sk"]["S"])
                if "t" not in item:  # the rivals list
                    self.tables.delete(key)
                    return True
                return self.tables.delete_if(key, "t = :t", ExpressionAttributeValues={":t": item["t"]})

            if all(fanout.gather(remove, rest)):
                break
        else:
            raise Contended(f"the scores of {member_id} kept changing while it was deleted")
        self.tables.delete_if(
            schema.profile_key(board_id, member_id),
            "#g = :g",
            ExpressionAttributeNames={"#g": schema.TOMBSTONE},
            ExpressionAttributeValues={":g": {"N": str(gone_us)}},
        )

    @staticmethod
    def _carries(profile: Item, gone_us: int) -> bool:
        return bool(profile.get(schema.TOMBSTONE, {}).get("N") == str(gone_us))

    def count_submission(
        self, board_id: str, member_id: str, minute: str, limit: int, expires: int, count: int
    ) -> bool:
        """Count ``count`` submissions in ``minute``, or none (False) past ``limit``: 1 WCU."""
        return self.tables.update(
            schema.submissions_key(board_id, member_id, minute),
            "ADD submissions :count SET #ttl = :ttl",
            ConditionExpression="attribute_not_exists(submissions) OR submissions <= :room",
            ExpressionAttributeNames={"#ttl": "ttl"},
            ExpressionAttributeValues={
                ":count": {"N": str(count)},
                ":room": {"N": str(limit - count)},
                ":ttl": {"N": str(expires)},
            },
        )

    def uncount_submission(self, board_id: str, member_id: str, minute: str, count: int) -> None:
        """Give back counted submissions then refused: a refused submission changes nothing."""
        self.tables.update(
            schema.submissions_key(board_id, member_id, minute),
            "ADD submissions :minus",
            ConditionExpression="attribute_exists(submissions)",
            ExpressionAttributeValues={":minus": {"N": str(-count)}},
        )

    def rollup_state(
        self, board_id: str, member_id: str, period: str, mark: str
    ) -> tuple[bool, ScoreState | None]:
        """Whether ``mark`` exists, and the member's score on the target board."""
        key = schema.score_key(board_id, member_id, period)
        items = self.tables.batch_get([key, schema.mark_key(mark)], consistent=True)
        score = items.get((key["pk"]["S"], key["sk"]["S"]))
        return (mark, schema.APPLIED) in items, (codecs.score_from_item(score) if score else None)

    def _score_item(
        self, board_id: str, member_id: str, period: str, state: ScoreState, placement: Placement
    ) -> Item:
        attributes = codecs.score_attributes(
            state, placement.partition, placement.sort_key, placement.expires, placement.also
        )
        return {**schema.score_key(board_id, member_id, period), **attributes}

    def _score_put(
        self,
        board_id: str,
        member_id: str,
        period: str,
        state: ScoreState,
        placement: Placement,
        expected_version: int | None,
        token: str | None = None,
    ) -> dict[str, Any]:
        """The put of a score item: over version ``expected_version``, or (None) as the
        member's first score in ``period``; ``w``: the token of the write."""
        item = self._score_item(board_id, member_id, period, state, placement)
        if token is not None:
            item["w"] = {"S": token}
        put: dict[str, Any] = {
            "Item": item,
            "ConditionExpression": "attribute_not_exists(pk)",
        }
        if expected_version is not None:
            put["ConditionExpression"] = "v = :expected"
            put["ExpressionAttributeValues"] = {":expected": {"N": str(expected_version)}}
        return put
