"""Members: the profile item (``data``) and one score item per period, whose ``rpk``/``rsk``
attributes put the member in the ranking index."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from podium import numbers
from podium.dal import codecs, schema
from podium.dal.client import AlreadyApplied, Item, ItemMissing, Tables, VersionConflict, timestamp
from podium.errors import HiddenChanged
from podium.models import Placement, ScoreState

PROFILE_FIELDS = "data, createdAt, updatedAt"
# The profile's ``hidden`` attribute exists only while the member is hidden (true).
HIDDEN_NAME = {"#hd": "hidden"}
TRUE = {"BOOL": True}


def _hidden_is(hidden: bool) -> str:
    """A condition on the profile: the member is hidden (or not), as the write assumes."""
    return "attribute_exists(pk) AND " + ("#hd = :hidden" if hidden else "attribute_not_exists(#hd)")


class Members:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    def get_score(self, board_id: str, member_id: str, period: str) -> ScoreState | None:
        item = self.tables.get(
            schema.score_key(board_id, member_id, period), consistent=True, projection="s, v, t, h, hd, ht"
        )
        return codecs.score_from_item(item) if item else None

    def get_member(
        self, board_id: str, member_id: str, period: str
    ) -> tuple[dict[str, Any] | None, ScoreState | None]:
        """The member's profile (data and timestamps) and its score, read consistently."""
        profile_key = schema.profile_key(board_id, member_id)
        score_key = schema.score_key(board_id, member_id, period)
        items = self.tables.batch_get([profile_key, score_key], consistent=True)
        pk = schema.member_pk(board_id, member_id)
        profile = items.get((pk, schema.PROFILE))
        score = items.get((pk, schema.score_sk(period)))
        return (
            codecs.profile_from_item(profile) if profile else None,
            codecs.score_from_item(score) if score else None,
        )

    def hidden(self, board_id: str, member_id: str) -> bool | None:
        """Whether the member is hidden, read consistently; None when it does not exist."""
        item = self.tables.get(
            schema.profile_key(board_id, member_id),
            consistent=True,
            projection="pk, #hd",
            names=HIDDEN_NAME,
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
        return (
            self.tables.get(schema.profile_key(board_id, member_id), consistent=True, projection="pk")
            is not None
        )

    def get_scores(self, board_id: str, member_ids: Sequence[str], period: str) -> dict[str, ScoreState]:
        keys = [schema.score_key(board_id, member_id, period) for member_id in member_ids]
        items = self.tables.batch_get(keys, consistent=True)
        scores = {}
        for member_id in member_ids:
            item = items.get((schema.member_pk(board_id, member_id), schema.score_sk(period)))
            if item is not None:
                scores[member_id] = codecs.score_from_item(item)
        return scores

    def get_data(self, board_id: str, member_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        keys = [schema.profile_key(board_id, member_id) for member_id in member_ids]
        items = self.tables.batch_get(keys, consistent=False)
        data = {}
        for member_id in member_ids:
            item = items.get((schema.member_pk(board_id, member_id), schema.PROFILE))
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
        profile = {
            **schema.profile_key(board_id, member_id),
            "data": {"S": numbers.dumps(data)},
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
        raise RuntimeError(f"the member was not updated: {codes}")

    def write_score(
        self,
        board_id: str,
        member_id: str,
        expected_version: int | None,
        state: ScoreState,
        placement: Placement,
        period: str,
        mark: str | None = None,
    ) -> None:
        """Replace the score item if it still has ``expected_version`` (optimistic
        locking), or (None) write the member's first score in ``period`` if the member
        exists (else ItemMissing) and is hidden as ``state`` is (else HiddenChanged: a
        member's first score in a period learns from its profile whether it is hidden).

        With ``mark``, the mark of the stream record that causes the change is written in
        the same transaction, so the change is applied once (else AlreadyApplied)."""
        put = self._score_put(board_id, member_id, period, state, placement, expected_version)
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
        if not actions:
            conditions = {k: v for k, v in put.items() if k not in ("Item", "TableName")}
            if not self.tables.put(put["Item"], **conditions):
                raise VersionConflict(member_id)
            return
        actions.append(("score", {"Put": put}))
        codes = self.tables.transact([action for _, action in actions])
        if codes is None:
            return
        failed = {
            name for (name, _), code in zip(actions, codes, strict=False) if code == "ConditionalCheckFailed"
        }
        if "mark" in failed:
            raise AlreadyApplied(str(mark))
        if "member" in failed:
            hidden = self.hidden(board_id, member_id)
            if hidden is None:
                raise ItemMissing(member_id)
            raise HiddenChanged(member_id, hidden)
        if "score" in failed:
            raise VersionConflict(member_id)
        raise RuntimeError(f"the score was not written: {codes}")

    def delete_member(self, board_id: str, member_id: str) -> None:
        """Delete every item of the member (its scores in every period, its rivals list),
        the profile last: a delete that fails half-way is finished by its retry."""
        pk = schema.member_pk(board_id, member_id)
        request: dict[str, Any] = {
            "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": pk}},
            "ProjectionExpression": "sk",
            "ConsistentRead": True,
        }
        keys = [item["sk"]["S"] for item in self.tables.query_items(request)]
        self.tables.batch_write(
            [{"DeleteRequest": {"Key": schema.key(pk, k)}} for k in keys if k != schema.PROFILE]
        )
        self.tables.delete(schema.profile_key(board_id, member_id))

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
            state, placement.partition, placement.sort_key, placement.expires
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
    ) -> dict[str, Any]:
        """The put of a score item: over version ``expected_version``, or (None) as the
        member's first score in ``period``."""
        put: dict[str, Any] = {
            "Item": self._score_item(board_id, member_id, period, state, placement),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
        if expected_version is not None:
            put["ConditionExpression"] = "v = :expected"
            put["ExpressionAttributeValues"] = {":expected": {"N": str(expected_version)}}
        return put
