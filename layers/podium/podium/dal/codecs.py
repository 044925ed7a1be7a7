"""Items to records and back: how each record of ``podium.models`` is laid out in its item
(the attribute names are the schema's too: docs/data-model.md lists them)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from podium import numbers
from podium.dal import schema
from podium.dal.client import Item, deserializer, parse_timestamp, plain, serializer, timestamp
from podium.models import (
    DEFAULT_ANNOUNCE_TOP,
    Board,
    BoardPolicy,
    BoardSettings,
    EventPage,
    HeadItem,
    Limits,
    Notification,
    RankedEntry,
    Reshard,
    Rivals,
    ScoreState,
    Snapshot,
    decode_history,
    index_of_partition,
)

# -- boards and members -------------------------------------------------------------------


def board_item(board: Board) -> Item:
    s = board.settings
    item: Item = {
        **schema.board_key(board.board_id),
        "order": {"S": s.order},
        "operator": {"S": s.operator},
        "tieBreak": {"S": s.tie_break},
        "shards": {"N": str(s.shards)},
        "reset": {"S": s.reset},
        "retainPeriods": {"N": str(s.retain_periods)},
        "rollupTo": {"L": [{"S": target} for target in s.rollup_to]},
        "createdAt": {"S": timestamp(board.created_at)},
        "memberCount": {"N": "0"},
    }
    item["largestData"] = {"N": str(board.largest_data)}
    if board.title is not None:
        item["title"] = {"S": board.title}
    if s.reset != "never":  # every period from its first on is announced (podium.results)
        item[schema.ANNOUNCED_THROUGH] = {"S": schema.NOTHING_ANNOUNCED}
    item.update(policy_attributes(board.policy))
    return item


# The policy's attributes: the flags always, each limit only when it is set.
LIMIT_ATTRIBUTES = ("minValue", "maxValue", "maxSubmissionsPerMinute")


def policy_attributes(policy: BoardPolicy) -> Item:
    limits = policy.limits.to_json()
    item: Item = {
        "clientWrites": {"BOOL": policy.client_writes},
        "publicRead": {"BOOL": policy.public_read},
        "announceTop": {"N": str(policy.announce_top)},
    }
    item.update({name: serializer.serialize(limits[name]) for name in LIMIT_ATTRIBUTES if name in limits})
    return item


def policy_from_values(values: dict[str, Any]) -> BoardPolicy:
    per_minute = values.get("maxSubmissionsPerMinute")
    return BoardPolicy(
        client_writes=bool(values.get("clientWrites", False)),
        public_read=bool(values.get("publicRead", False)),
        limits=Limits(
            min_value=values.get("minValue"),
            max_value=values.get("maxValue"),
            max_submissions_per_minute=int(per_minute) if per_minute is not None else None,
        ),
        announce_top=int(values.get("announceTop", DEFAULT_ANNOUNCE_TOP)),
    )


def board_from_item(board_id: str, item: Item) -> Board:
    values = plain(item)
    settings = BoardSettings(
        order=values["order"],
        operator=values["operator"],
        tie_break=values["tieBreak"],
        shards=int(values["shards"]),
        reset=values.get("reset", "never"),
        retain_periods=int(values.get("retainPeriods", 12)),
        rollup_to=tuple(values.get("rollupTo", [])),
        index=values.get("rankIndex", "A"),  # "B" once a re-shard has switched to it
    )
    return Board(
        board_id=board_id,
        settings=settings,
        title=values.get("title"),
        created_at=parse_timestamp(values["createdAt"]),
        member_count=max(0, int(values.get("memberCount", 0))),
        dropped_events=int(values.get("droppedEvents", 0)),
        policy=policy_from_values(values),
        largest_data=int(values["largestData"]),
        reshard=reshard_from_values(values),
    )


def reshard_from_values(values: dict[str, Any]) -> Reshard | None:
    """The board's move to another shard count (``reshard*`` attributes), on or ended."""
    if "reshardFrom" not in values:
        return None
    ended = values.get("reshardEndedAt")
    return Reshard(
        from_shards=int(values["reshardFrom"]),
        to_shards=int(values["reshardTo"]),
        started_at=parse_timestamp(values["reshardStartedAt"]),
        copied=int(values.get("reshardCopied", 0)),
        ended_at=parse_timestamp(ended) if ended else None,
        from_index=values.get("reshardFromIndex", "A"),
        switched_at=parse_timestamp(switched) if (switched := values.get("reshardSwitchedAt")) else None,
    )


def score_attributes(
    state: ScoreState, partition: str, sort_key: str, expires: int | None, also: str | None = None
) -> Item:
    attributes: Item = {
        "s": serializer.serialize(state.score),
        "v": {"N": str(state.version)},
        "t": {"N": str(state.reached_at_us)},
    }
    if state.hidden:
        # No index keys: the ranking index (a sparse GSI) and every stream consumer that
        # follows them see the member leave, and see nothing of its later changes.
        attributes["hd"] = {"BOOL": True}
    else:
        # Its key in the index the board reads, and while a re-shard runs in the other too.
        for key in (partition, also):
            if key is not None:
                attributes[schema.INDEX_KEY[index_of_partition(key)]] = {"S": key}
        attributes["rsk"] = {"S": sort_key}
    if state.shown_at_us:
        attributes["ht"] = {"N": str(state.shown_at_us)}
    if state.created_us:
        attributes["ci"] = {"N": str(state.created_us)}
    if state.rolled_up_us:
        attributes["rt"] = {"N": str(state.rolled_up_us)}
    if state.version > 1:
        attributes["h"] = {"S": state.history_text()}
    if expires is not None:  # a period's ranking expires once it is past retainPeriods
        attributes["ttl"] = {"N": str(expires)}
    return attributes


def score_from_item(item: Item) -> ScoreState:
    score = deserializer.deserialize(item["s"])
    assert isinstance(score, Decimal)
    version = int(item["v"]["N"])
    # An item written before scores kept their history knows none of its older scores.
    history, complete = decode_history(item["h"]["S"]) if "h" in item else ((), version == 1)
    hidden = bool(item.get("hd", {}).get("BOOL", False))
    shown_at = int(item["ht"]["N"]) if "ht" in item else 0
    created = int(item["ci"]["N"]) if "ci" in item else 0
    rolled_up = int(item["rt"]["N"]) if "rt" in item else 0
    return ScoreState(
        score, version, int(item["t"]["N"]), history, complete, hidden, shown_at, created, rolled_up
    )


def profile_from_item(item: Item) -> dict[str, Any]:
    return {
        "data": numbers.loads(item["data"]["S"]) if "data" in item else {},
        "createdAt": parse_timestamp(item["createdAt"]["S"]),
        "updatedAt": parse_timestamp(item["updatedAt"]["S"]),
        "hidden": bool(item.get("hidden", {}).get("BOOL", False)),
    }


def rivals_item(board_id: str, member_id: str, rivals: Rivals) -> Item:
    return {
        **schema.rivals_key(board_id, member_id),
        "ids": {"L": [{"S": r} for r in rivals.ids]},
        "since": {"M": {r: {"N": str(t)} for r, t in rivals.since.items()}},
        "ended": {"M": {r: {"L": [{"N": str(a)}, {"N": str(b)}]} for r, (a, b) in rivals.ended.items()}},
        "v": {"N": str(rivals.version)},
    }


def rivals_from_item(item: Item) -> Rivals:
    since = {r: int(v["N"]) for r, v in item.get("since", {}).get("M", {}).items()}
    ended = {
        r: (int(v["L"][0]["N"]), int(v["L"][1]["N"])) for r, v in item.get("ended", {}).get("M", {}).items()
    }
    version = int(item["v"]["N"]) if "v" in item else 0
    return Rivals(tuple(v["S"] for v in item["ids"]["L"]), since, ended, version)


# -- the head ---------------------------------------------------------------------------


def pack_keys(keys: Sequence[str]) -> bytes:
    """Keys packed for the item: sort keys share long prefixes, so they compress well and
    the head with its ladder stays within the 8 KB that one eventually consistent RCU
    reads for member ids of a few dozen characters (docs/performance.md)."""
    return zlib.compress("\n".join(keys).encode("utf-8"), 6)


def unpack_keys(blob: bytes) -> list[str]:
    text = zlib.decompress(blob).decode("utf-8")
    return text.split("\n") if text else []


def head_item(
    board_id: str, period: str, head: HeadItem, expires: int | None, *, stored: bool = False
) -> Item:
    """The head item that replaces version ``head.version`` (its version one more), or with
    ``stored`` the item of ``head`` as it was read (its version as it is)."""
    item: Item = {
        **schema.head_key(board_id, period),
        "k": {"B": pack_keys(head.keys)},
        "c": {"BOOL": head.complete},
        "v": {"N": str(head.version if stored else head.version + 1)},
    }
    if head.ladder is not None:
        keys, below, total, changes = head.ladder
        # The ladder packed like the keys: a line per sample, its count then its key.
        item["l"] = {"B": pack_keys([f"{count} {key}" for key, count in zip(keys, below, strict=True)])}
        item["ln"] = {"N": str(changes)}
        if total is not None:
            item["lt"] = {"N": str(total)}
    if expires is not None:
        item["ttl"] = {"N": str(expires)}
    return item


def head_from_item(item: Item) -> HeadItem:
    ladder = None
    if "l" in item:
        samples = [line.split(" ", 1) for line in unpack_keys(bytes(item["l"]["B"]))]
        ladder = (
            tuple(key for _, key in samples),
            tuple(int(count) for count, _ in samples),
            int(item["lt"]["N"]) if "lt" in item else None,
            int(item["ln"]["N"]),
        )
    return HeadItem(
        unpack_keys(bytes(item["k"]["B"])),
        bool(item["c"]["BOOL"]),
        int(item["v"]["N"]),
        ladder,
        copies_owed=schema.COPIES_OWED in item,
    )


# -- notifications, events, snapshots ---------------------------------------------------------


def inbox_key(notification: Notification) -> Item:
    return schema.key(
        schema.inbox_pk(notification.board_id, notification.member_id),
        schema.inbox_sk(notification.created_us, notification.notification_id),
    )


def notification_attributes(n: Notification) -> Item:
    item: Item = {
        "id": {"S": n.notification_id},
        "type": {"S": n.type},
        "s": serializer.serialize(n.score),
    }
    if n.by_member_id is not None:
        item["by"] = {"S": n.by_member_id}
    if n.by_score is not None:
        item["bs"] = serializer.serialize(n.by_score)
    if n.period is not None:
        item["pd"] = {"S": n.period}
    if n.rank is not None:
        item["rk"] = {"N": str(n.rank)}
    return item


def notification_from_item(item: Item) -> Notification:
    board_id, member_id = schema.parse_inbox_pk(item["pk"]["S"])
    return Notification(
        notification_id=item["id"]["S"],
        type=item["type"]["S"],
        board_id=board_id,
        member_id=member_id,
        by_member_id=item["by"]["S"] if "by" in item else None,
        score=deserializer.deserialize(item["s"]),
        by_score=deserializer.deserialize(item["bs"]) if "bs" in item else None,
        created_us=schema.created_us_of_inbox_sk(item["sk"]["S"]),
        period=item["pd"]["S"] if "pd" in item else None,
        rank=int(item["rk"]["N"]) if "rk" in item else None,
    )


def notification_to_json(n: Notification) -> dict[str, Any]:
    return {**n.to_json(), "createdUs": n.created_us}


def notification_from_json(raw: dict[str, Any]) -> Notification:
    return Notification(
        notification_id=raw["id"],
        type=raw["type"],
        board_id=raw["boardId"],
        member_id=raw["memberId"],
        by_member_id=raw.get("byMemberId"),
        score=raw["score"],
        by_score=raw.get("byScore"),
        created_us=int(raw["createdUs"]),
        period=raw.get("period"),
        rank=int(raw["rank"]) if raw.get("rank") is not None else None,
    )


def page_key(page: EventPage) -> Item:
    return schema.page_key(page.board_id, page.member_id, page.request, page.claimed)


def page_item(page: EventPage, expires: int) -> Item:
    """A page as the log holds it: a page being claimed with its events (``e``: a JSON list
    of [eventId or null, value]), a claimed one with their sum (``s``) and number (``c``);
    both with their period and their entry in the index of the events not folded yet."""
    key = page_key(page)
    bucket = schema.event_bucket(page.request)
    item: Item = {
        **key,
        "p": {"S": page.period},
        schema.LOG_INDEX_PK: {"S": schema.log_index_pk(page.board_id, page.period, bucket)},
        "ttl": {"N": str(expires)},
    }
    if page.claimed:
        item["s"] = serializer.serialize(page.total)
        item["c"] = {"N": str(page.count)}
    else:
        item["e"] = {"S": numbers.dumps([[event_id, value] for event_id, value in page.events])}
    return item


def page_from_item(board_id: str, member_id: str, item: Item) -> EventPage:
    sk = item["sk"]["S"]
    claimed = sk.startswith(schema.PAGE_CLAIMED)
    request = sk[len(schema.PAGE_CLAIMED if claimed else schema.PAGE_CLAIMING) :]
    if claimed:
        total = deserializer.deserialize(item["s"])
        return EventPage(board_id, member_id, item["p"]["S"], request, True, total, int(item["c"]["N"]))
    events = tuple((event_id, value) for event_id, value in numbers.loads(item["e"]["S"]))
    total = sum((value for _, value in events), Decimal(0))
    return EventPage(board_id, member_id, item["p"]["S"], request, False, total, len(events), events)


def page_from_image(pk: str, image: Item) -> EventPage:
    """A page as its stream record's image shows it."""
    board_id, member_id = schema.parse_event_pk(pk)
    return page_from_item(board_id, member_id, image)


def snapshot_from_item(board_id: str, item: Item) -> Snapshot:
    entries = [
        RankedEntry(rank=int(entry["rank"]), member_id=entry["memberId"], score=entry["score"])
        for entry in numbers.loads(item["entries"]["S"])
    ]
    return Snapshot(
        board_id=board_id,
        snapshot_id=item["id"]["S"],
        taken_at=parse_timestamp(item["sk"]["S"]),
        member_count=int(item["memberCount"]["N"]),
        entries=entries,
    )


def item_bytes(item: Item) -> int:
    """An item's size as DynamoDB bills it, near enough: its names and values (a number's
    digits, a binary's bytes, a list's or map's members)."""

    def value_bytes(value: dict[str, Any]) -> int:
        kind, raw = next(iter(value.items()))
        if kind in ("S", "N"):
            return len(str(raw).encode("utf-8"))
        if kind == "B":
            return len(raw)
        if kind in ("BOOL", "NULL"):
            return 1
        if kind == "L":
            return 3 + sum(1 + value_bytes(member) for member in raw)
        if kind == "M":
            return 3 + sum(1 + len(name.encode("utf-8")) + value_bytes(v) for name, v in raw.items())
        return sum(len(str(member).encode("utf-8")) for member in raw)  # the sets

    return sum(len(name.encode("utf-8")) + value_bytes(value) for name, value in item.items())
