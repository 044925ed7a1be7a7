"""Stream records as the consumers see them: a change of a member's score, a member
joining or leaving a board (or a period of one), a logged event. Records arrive as the
Lambda event source mapping delivers them (attribute values in DynamoDB's JSON); only what
the consumers need is decoded, by the item schema (``podium.dal.schema``)."""

from __future__ import annotations

import hashlib
from decimal import Decimal
from typing import Any

from podium import numbers
from podium.dal import schema
from podium.periods import ALL_TIME
from podium.values import frozen

Record = dict[str, Any]


@frozen
class ScoreRecord:
    """A change of one member's score item (``SCORE#{period}``)."""

    event_id: str
    event_name: str
    board_id: str
    member_id: str
    period: str
    old: Decimal | None
    new: Decimal | None
    new_sort_key: str | None
    old_sort_key: str | None
    # When the change happened, the same on every delivery of the record: the score's
    # reachedAt for a write, the stream's timestamp for a removal.
    changed_us: int
    # The latest reachedAt the record carries, exactly: of the new score, else of the one
    # removed (a `set` rollup target orders the changes it takes by it).
    written_us: int = 0
    # The member is hidden after the change: its item has no index keys, and its change
    # is seen by no ranking and told to no one.
    hidden: bool = False
    # Where the change stands among its member's changes, also across a delete and a new
    # start: (when the item was made, its version after the change); a removal comes one
    # version after the item it removes. Records of one item compare in the order written.
    version: tuple[int, int] = (0, 0)

    @property
    def changed(self) -> bool:
        return self.old != self.new


@frozen
class CountChange:
    """A member joining (+1) or leaving (-1) a board, or a period of a time-windowed board."""

    board_id: str
    delta: int
    period: str = ALL_TIME


def keys_of(record: Record) -> tuple[str, str]:
    keys = record.get("dynamodb", {}).get("Keys", {})
    return str(keys.get("pk", {}).get("S", "")), str(keys.get("sk", {}).get("S", ""))


def _number(image: Record | None, name: str) -> Decimal | None:
    if not image or name not in image:
        return None
    return Decimal(image[name]["N"])


def score_record(record: Record) -> ScoreRecord | None:
    pk, sk = keys_of(record)
    if not (pk.startswith(schema.MEMBER) and sk.startswith(schema.SCORE)):
        return None
    board_id, member_id = schema.parse_member_pk(pk)
    stream = record["dynamodb"]
    new_image = stream.get("NewImage")
    old_image = stream.get("OldImage")
    reached = _number(new_image, "t")
    approximate = Decimal(str(stream.get("ApproximateCreationDateTime", 0)))
    hidden = bool(new_image and "hd" in new_image)
    if old_image and new_image and hidden != ("hd" in old_image):
        # A hide or an unhide keeps the score and its reachedAt, maybe weeks old: what it
        # causes (a new leader) happened when it was written.
        reached = _number(new_image, "ht")
    return ScoreRecord(
        event_id=str(record["eventID"]),
        event_name=str(record["eventName"]),
        board_id=board_id,
        member_id=member_id,
        period=schema.period_of_score_sk(sk),
        old=_number(old_image, "s"),
        new=_number(new_image, "s"),
        new_sort_key=new_image["rsk"]["S"] if new_image and "rsk" in new_image else None,
        old_sort_key=old_image["rsk"]["S"] if old_image and "rsk" in old_image else None,
        changed_us=int(reached) if reached is not None else int(approximate * 1_000_000),
        written_us=int(max(_number(new_image, "t") or 0, _number(old_image, "t") or 0)),
        hidden=hidden,
        version=_version(new_image, old_image),
    )


def index_keys_only(record: Record) -> bool:
    """Does the record change nothing but the item's ranking index keys (a re-shard keying
    it in the other index, or out of the old one)? Its ranking, version and count are as
    they were: the head, the counts and the count tree have nothing to do."""
    stream = record.get("dynamodb", {})
    old, new = stream.get("OldImage"), stream.get("NewImage")
    if record.get("eventName") != "MODIFY" or old is None or new is None:
        return False
    index_keys = set(schema.INDEX_KEY.values())
    return {k: v for k, v in old.items() if k not in index_keys} == {
        k: v for k, v in new.items() if k not in index_keys
    }


def _version(new_image: Record | None, old_image: Record | None) -> tuple[int, int]:
    image, after = (new_image, 0) if new_image else (old_image, 1)
    created, version = _number(image, "ci"), _number(image, "v")
    return int(created or 0), int(version or 0) + after


def _shown(image: Record | None, flag: str) -> int:
    """1 when the item exists and is not hidden (its ``flag`` attribute is absent), else 0."""
    return 0 if image is None or flag in image else 1


def count_change(record: Record) -> CountChange | None:
    """A member joins a board with the INSERT of its profile item and leaves with its
    REMOVE; it joins a period of a time-windowed board with its first score there. A hidden
    member is counted nowhere: its hide (the profile's ``hidden``, the score item's ``hd``)
    is a departure, its unhide an arrival, and what it does while hidden moves nothing."""
    pk, sk = keys_of(record)
    event_name = record.get("eventName")
    if not pk.startswith(schema.MEMBER) or event_name not in ("INSERT", "MODIFY", "REMOVE"):
        return None
    stream = record.get("dynamodb", {})
    old = stream.get("OldImage", {}) if event_name != "INSERT" else None
    new = stream.get("NewImage", {}) if event_name != "REMOVE" else None
    board_id, _ = schema.parse_member_pk(pk)
    if sk == schema.PROFILE:
        delta, period = _shown(new, "hidden") - _shown(old, "hidden"), ALL_TIME
    elif sk.startswith(schema.SCORE) and sk != schema.score_sk(ALL_TIME):
        delta, period = _shown(new, "hd") - _shown(old, "hd"), schema.period_of_score_sk(sk)
    else:
        return None
    return CountChange(board_id, delta, period) if delta else None


@frozen
class MemberRemoval:
    """A member's profile deleted: the member is gone from the board."""

    event_id: str
    board_id: str
    member_id: str
    # When its delete began (the profile's tombstone), the same on every delivery; from the
    # stream's timestamp for a profile removed without one.
    deleted_us: int


def member_removal(record: Record) -> MemberRemoval | None:
    pk, sk = keys_of(record)
    if not (pk.startswith(schema.MEMBER) and sk == schema.PROFILE and record.get("eventName") == "REMOVE"):
        return None
    board_id, member_id = schema.parse_member_pk(pk)
    stream = record["dynamodb"]
    gone = _number(stream.get("OldImage"), schema.TOMBSTONE)
    approximate = Decimal(str(stream.get("ApproximateCreationDateTime", 0)))
    deleted = int(gone) if gone is not None else int(approximate * 1_000_000)
    return MemberRemoval(str(record["eventID"]), board_id, member_id, deleted)


OVERTAKEN = schema.JOB_OVERTAKEN
FORGET = schema.JOB_FORGET


@frozen
class FanoutJob:
    """Work over the followers of one member, done a chunk of followers at a time, of one
    of two kinds:

    * ``OVERTAKEN``: tell the followers a score change passed. The change as its stream
      record carried it (judged as of ``changed_us``, whenever a chunk runs).
    * ``FORGET``: take a deleted member out of its followers' lists, then clear its inbox,
      both up to the delete's moment (``changed_us``: the profile's tombstone).

    Either way: the last follower done (``cursor``, in id order; None: none yet) and how
    many times the job was written since it began (``step``: each write is conditional on
    it, so a redelivered chunk is told apart from the next one)."""

    event_id: str  # of the stream record that began the job
    board_id: str
    member_id: str
    period: str
    old: Decimal | None
    new: Decimal | None  # None only for FORGET
    changed_us: int
    cursor: str | None = None
    step: int = 0
    kind: str = OVERTAKEN

    @classmethod
    def of(cls, record: ScoreRecord) -> FanoutJob:
        assert record.new is not None
        fields = (record.board_id, record.member_id, record.period, record.old, record.new)
        return cls(record.event_id, *fields, record.changed_us)

    @classmethod
    def forgetting(cls, removal: MemberRemoval) -> FanoutJob:
        member = (removal.board_id, removal.member_id)
        return cls(removal.event_id, *member, ALL_TIME, None, None, removal.deleted_us, kind=FORGET)

    @property
    def job_id(self) -> str:
        """The job item's sort key, which also says its kind."""
        return schema.job_id(self.kind, self.event_id)

    def body(self) -> str:
        """What the job item keeps of its work (``FanoutJob.stored`` reads it back)."""
        if self.kind == FORGET:
            return numbers.dumps({"at": self.changed_us})
        return numbers.dumps({"period": self.period, "old": self.old, "new": self.new, "at": self.changed_us})

    @classmethod
    def stored(
        cls, board_id: str, member_id: str, job_id: str, body: str, cursor: str | None, step: int
    ) -> FanoutJob:
        kind, event_id = schema.parse_job_id(job_id)
        fields = numbers.loads(body)
        return cls(
            event_id,
            board_id,
            member_id,
            fields.get("period", ALL_TIME),
            fields.get("old"),
            fields.get("new"),
            int(fields["at"]),
            cursor,
            step,
            kind,
        )


def fanout_job(record: Record) -> FanoutJob | None:
    """A pending job, written (started, or moved on by a chunk) by the notifier itself: its
    record is the next chunk's turn."""
    pk, sk = keys_of(record)
    image = record.get("dynamodb", {}).get("NewImage")
    if not pk.startswith(schema.FANOUT) or not image or not image.get(schema.FANOUT_PENDING, {}).get("BOOL"):
        return None
    board_id, member_id = schema.parse_fanout_pk(pk)
    cursor = image[schema.FANOUT_CURSOR]["S"] if schema.FANOUT_CURSOR in image else None
    body, step = image[schema.FANOUT_CHANGE]["S"], int(image[schema.FANOUT_STEP]["N"])
    return FanoutJob.stored(board_id, member_id, sk, body, cursor, step)


# The key the redrive adds to the events it builds: their records are replayed, maybe after
# newer records of their items (a stream delivers one item's records in order).
REPLAY = "podiumReplay"


def is_replay(event: dict[str, Any]) -> bool:
    """Whether a consumer's event is the redrive's (``podium.redrive``), not the stream's."""
    return event.get(REPLAY) is True


def is_event_insert(record: Record) -> bool:
    pk, _ = keys_of(record)
    return pk.startswith(schema.EVENTS) and record.get("eventName") == "INSERT"


def derived_id(*parts: str) -> str:
    """A deterministic id for an effect of a stream record (the same on redelivery)."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:24]
