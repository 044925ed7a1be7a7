"""The item schema of the table: every key, prefix and mark name is spelled here and only
here (the template's stream filters are checked against it by a test). To add an item
kind, add its key here and its reads and writes to one repository.

Ids never contain ``#`` (both id patterns of the API exclude it), so ``#`` separates the
parts of a key with no escaping.
"""

from __future__ import annotations

import hashlib
import time
import zlib
from typing import Any

SEPARATOR = "#"

# Partition key prefixes.
BOARD = "B#"  # a board's own items: the board, its period counts, head, leader
MEMBER = "M#"  # a member's items: profile, scores (one per period), rivals list
FOLLOWERS = "F#"  # follower edges of a rival
INBOX = "N#"  # a member's notifications
EVENTS = "P#"  # a member's pages of logged events, over EVENT_BUCKETS partitions
EVENT_ID_CLAIM = "EID#"  # + board # member # eventId: the request that claimed the id
FANOUT = "J#"  # a job over a member's followers, a chunk at a time: J#{boardId}#{memberId} / job id
SNAPSHOTS = "S#"
TREE = "T#"  # a board's count tree in one period: T#{boardId}#{period} (podium.counttree)
HEAD_COPY = "H#"  # a copy of a board's head: H#{boardId}#{copy} / HEAD#{period}
CATALOG = "CATALOG"
# On a time-windowed board's item: the last period whose results were announced; a new
# board starts with NOTHING_ANNOUNCED (it sorts before every period id).
ANNOUNCED_THROUGH = "announcedThrough"
NOTHING_ANNOUNCED = "-"

RESHARDS = "RESHARDS"  # one item per board whose re-shard is on: RESHARDS / boardId

# The partition keys of the streamed table (``Settings.table_name``): what its stream must
# carry to the consumers (the template's filters take these only) and the items written
# with them in one transaction. Every other item is derived or kept beside them, in the
# state table, which has no stream.
STREAMED = (MEMBER, EVENTS, FANOUT)

# The attribute that keys a score item in each ranking index (podium.models.RANK_INDEXES); both
# indexes share the sort key ``rsk``.
INDEX_KEY = {"A": "rpk", "B": "rpkB"}

# Sort keys and their prefixes.
BOARD_ITEM = "BOARD"
PROFILE = "MEMBER"
SCORE = "SCORE#"  # + period
RIVALS = "RIVALS"
SUBMISSIONS = "RATE#"  # + clock minute (UTC): a member's score submissions in that minute
SUBMISSION_KEY = "KEY#"  # + sha256 of an Idempotency-Key: the answer of the submission it sent
PERIOD_COUNT = "COUNT#"  # + period
HEAD = "HEAD#"  # + period
LEADER = "LEADER#"  # + period
DELETED = "GONE#"  # + memberId: when the member was last deleted from the board (rollups)
RESULT = "RESULT#"  # + period: its announcement; + period # run # part: its announced list
TREE_ROOT = "R"  # the count tree's root; its other nodes are {level:02d}#{lo}
TREE_CHILD = "k"  # + a child's lo: its key in an inner node's map (a map key cannot be empty)
# The partition keys a tree's nodes (other than the root) are spread over:
# T#{boardId}#{period}#{n}, n = crc32(sk) % TREE_SPREAD.
# 10,000 ranks/s on 1,000,000 members read 20,000 RCU/s below the root, 5,000 of it from
# the root's 5 children: 64 keys hold the rest at about 234 RCU/s each, so a key holding
# two of the root's children takes 2,234 RCU/s, under 80 % of 3,000 (planner/capacity.py).
TREE_SPREAD = 64
APPLIED = "APPLIED"  # the sort key of every mark
EVENT_ID_ITEM = "EID"

# Marks: one item per effect of a stream record, so that a redelivery applies it once.
COUNT_MARK = "STREAM#"  # + eventId: a member count
ROLLUP_MARK = "ROLLUP#"  # + target # eventId
LEADER_MARK = "LEADCHECK#"  # + eventId: the notifier judged the record for the leader
MARK_TTL_SECONDS = 2 * 24 * 3600  # longer than a stream's 24-hour retention

# A member being deleted: its profile carries ``gone`` (when the delete began, µs) until the
# delete has removed its other items and then the profile. Every write that could create a
# score item or a rivals list for the member checks LIVE_PROFILE in its transaction, so none
# lands after the delete has listed what to remove (no ranked member without a profile).
TOMBSTONE = "gone"
LIVE_PROFILE = f"attribute_exists(pk) AND attribute_not_exists({TOMBSTONE})"

# A member's pages of events spread over 16 partition keys by their request's id: a page
# holds up to 100 events, so a key takes some 100 times fewer writes than an event each
# would (docs/event-log.md), and a fresh read queries 16 keys.
EVENT_BUCKETS = 16
# A page's sort key: PAGE_CLAIMING + request id while its events' ids are being claimed (it
# holds the events), PAGE_CLAIMED + request id once they are (it holds their sum and count).
PAGE_CLAIMING = "n:"
PAGE_CLAIMED = "r:"
# The sparse index of the events not folded yet: every page carries LOG_INDEX_PK,
# ``{boardId}#{period}#{bucket}``, until the fold deletes it, so that whether a board's period
# has events waiting is EVENT_BUCKETS queries of one key each (podium.results).
LOG_INDEX = "LogIndex"
LOG_INDEX_PK = "lp"

Key = dict[str, Any]


def streamed(pk: str) -> bool:
    """Whether the item of partition key ``pk`` lies in the streamed table."""
    return pk.startswith(STREAMED)


def key(pk: str, sk: str) -> Key:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def board_key(board_id: str) -> Key:
    return key(f"{BOARD}{board_id}", BOARD_ITEM)


def catalog_key(board_id: str) -> Key:
    return key(CATALOG, board_id)


def reshard_key(board_id: str) -> Key:
    return key(RESHARDS, board_id)


def period_count_key(board_id: str, period: str) -> Key:
    return key(f"{BOARD}{board_id}", f"{PERIOD_COUNT}{period}")


def member_pk(board_id: str, member_id: str) -> str:
    return f"{MEMBER}{board_id}{SEPARATOR}{member_id}"


def parse_member_pk(pk: str) -> tuple[str, str]:
    """``M#{boardId}#{memberId}`` -> (boardId, memberId)."""
    board_id, member_id = pk[len(MEMBER) :].split(SEPARATOR, 1)
    return board_id, member_id


def profile_key(board_id: str, member_id: str) -> Key:
    return key(member_pk(board_id, member_id), PROFILE)


def score_sk(period: str) -> str:
    return f"{SCORE}{period}"


def score_key(board_id: str, member_id: str, period: str) -> Key:
    return key(member_pk(board_id, member_id), score_sk(period))


def period_of_score_sk(sk: str) -> str:
    return sk[len(SCORE) :]


def submissions_key(board_id: str, member_id: str, minute: str) -> Key:
    return key(member_pk(board_id, member_id), f"{SUBMISSIONS}{minute}")


def submission_key(board_id: str, member_id: str, idempotency_key: str) -> Key:
    """The record of a score submission sent with ``idempotency_key`` (a digest: a key may
    be 255 characters of any kind)."""
    digest = hashlib.sha256(idempotency_key.encode("utf-8")).hexdigest()
    return key(member_pk(board_id, member_id), f"{SUBMISSION_KEY}{digest}")


def rivals_key(board_id: str, member_id: str) -> Key:
    return key(member_pk(board_id, member_id), RIVALS)


def followers_pk(board_id: str, rival: str) -> str:
    return f"{FOLLOWERS}{board_id}{SEPARATOR}{rival}"


def edge_key(board_id: str, rival: str, follower: str) -> Key:
    return key(followers_pk(board_id, rival), follower)


def fanout_pk(board_id: str, member_id: str) -> str:
    return f"{FANOUT}{board_id}{SEPARATOR}{member_id}"


def parse_fanout_pk(pk: str) -> tuple[str, str]:
    """``J#{boardId}#{memberId}`` -> (boardId, memberId)."""
    board_id, member_id = pk[len(FANOUT) :].split(SEPARATOR, 1)
    return board_id, member_id


# A job's kind is read off its sort key (its id): an overtaken fan-out's is the eventId of
# the score change it tells (as every job's was before there were kinds), a forgetting's
# FORGET_JOB + the eventId of the profile's removal, so that one query finds a member's
# pending forgettings without reading its fan-outs.
JOB_OVERTAKEN = "overtaken"
JOB_FORGET = "forget"
FORGET_JOB = "forget#"


def job_id(kind: str, event_id: str) -> str:
    return f"{FORGET_JOB}{event_id}" if kind == JOB_FORGET else event_id


def parse_job_id(job: str) -> tuple[str, str]:
    """A job's sort key -> (kind, the eventId of the stream record that began it)."""
    if job.startswith(FORGET_JOB):
        return JOB_FORGET, job[len(FORGET_JOB) :]
    return JOB_OVERTAKEN, job


def fanout_key(board_id: str, member_id: str, job: str) -> Key:
    """The job ``job`` (its id: ``job_id``) over the followers of ``member_id``."""
    return key(fanout_pk(board_id, member_id), job)


def deleted_key(board_id: str, member_id: str) -> Key:
    return key(f"{BOARD}{board_id}", f"{DELETED}{member_id}")


def leader_key(board_id: str, period: str) -> Key:
    return key(f"{BOARD}{board_id}", f"{LEADER}{period}")


def head_key(board_id: str, period: str) -> Key:
    return key(f"{BOARD}{board_id}", f"{HEAD}{period}")


# The head's copies, each under a partition key of its own, which the top reads read instead
# of the primary head on B#{boardId} (podium.dal.structures, docs/data-model.md). The issue's
# hot board (100,000 top-100 reads/s on 1,200 warm instances, each reading the head twice a
# second) reads 2,000 RCU/s of the head: over 4 copies 500 each, 17 % of what a partition
# serves, and 33 % should DynamoDB place two copies on one partition. Each head write costs
# 1 + HEAD_COPIES item writes. The planner's figure (planner.capacity.HEAD_COPIES) is this.
HEAD_COPIES = 4
# On the primary head: a write of its copies failed after this version was written (the
# stream delivers the batch again, and its upkeep writes the copies before anything else).
COPIES_OWED = "co"


def head_copy_key(board_id: str, period: str, copy: int) -> Key:
    return key(f"{HEAD_COPY}{board_id}{SEPARATOR}{copy}", f"{HEAD}{period}")


def tree_pk(board_id: str, period: str) -> str:
    """The partition key of a count tree's root."""
    return f"{TREE}{board_id}{SEPARATOR}{period}"


def tree_part_pk(board_id: str, period: str, part: int) -> str:
    """One of the partition keys a tree's nodes other than the root lie under."""
    return f"{tree_pk(board_id, period)}{SEPARATOR}{part}"


def tree_pks(board_id: str, period: str) -> list[str]:
    """Every partition key a tree has items under: the root's first."""
    return [tree_pk(board_id, period)] + [tree_part_pk(board_id, period, n) for n in range(TREE_SPREAD)]


def tree_key(board_id: str, period: str, level: int | None, lo: str) -> Key:
    """A count tree node's key: the root's (``level`` None), whose level changes, is fixed;
    every other node's names its level and lower end, neither of which ever changes, and
    lies under one of ``TREE_SPREAD`` partition keys, picked by a stable hash of that sort
    key."""
    if level is None:
        return key(tree_pk(board_id, period), TREE_ROOT)
    sk = f"{level:02d}{SEPARATOR}{lo}"
    return key(tree_part_pk(board_id, period, zlib.crc32(sk.encode()) % TREE_SPREAD), sk)


def inbox_pk(board_id: str, member_id: str) -> str:
    return f"{INBOX}{board_id}{SEPARATOR}{member_id}"


def parse_inbox_pk(pk: str) -> tuple[str, str]:
    board_id, member_id = pk[len(INBOX) :].split(SEPARATOR, 1)
    return board_id, member_id


def inbox_sk(created_us: int, notification_id: str) -> str:
    """Newest last in byte order: the time, 17 digits of microseconds, then the id."""
    return f"{created_us:017d}{SEPARATOR}{notification_id}"


def inbox_bound(created_us: int) -> str:
    """The inbox sort keys of notifications created at ``created_us`` or later are ``>=``
    this; those created before are ``<`` it."""
    return f"{created_us:017d}"


def created_us_of_inbox_sk(sk: str) -> int:
    return int(sk.split(SEPARATOR, 1)[0])


def event_bucket(request: str) -> int:
    """Which of the member's EVENT_BUCKETS partitions a page goes to: a hash of its request."""
    digest = hashlib.blake2b(request.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % EVENT_BUCKETS


def log_index_pk(board_id: str, period: str, bucket: int) -> str:
    return f"{board_id}{SEPARATOR}{period}{SEPARATOR}{bucket}"


def result_key(board_id: str, period: str) -> Key:
    return key(f"{BOARD}{board_id}", f"{RESULT}{period}")


def result_part_key(board_id: str, period: str, run: str, part: int) -> Key:
    return key(f"{BOARD}{board_id}", f"{RESULT}{period}{SEPARATOR}{run}{SEPARATOR}{part:05d}")


def event_pk(board_id: str, member_id: str, bucket: int) -> str:
    return f"{EVENTS}{board_id}{SEPARATOR}{member_id}{SEPARATOR}{bucket}"


def parse_event_pk(pk: str) -> tuple[str, str]:
    """``P#{boardId}#{memberId}#{bucket}`` -> (boardId, memberId)."""
    board_id, rest = pk[len(EVENTS) :].split(SEPARATOR, 1)
    return board_id, rest.rsplit(SEPARATOR, 1)[0]


def board_of_pk(pk: str) -> str | None:
    """The board a board's, a member's, a logged event's, a fan-out's or a count tree's item
    belongs to (None for the other items: follower edges, inboxes, marks, the catalog)."""
    if pk.startswith(BOARD):
        return pk[len(BOARD) :]
    if pk.startswith(TREE):
        return pk[len(TREE) :].split(SEPARATOR, 1)[0]
    if pk.startswith(MEMBER):
        return parse_member_pk(pk)[0]
    if pk.startswith(EVENTS):
        return parse_event_pk(pk)[0]
    if pk.startswith(FANOUT):
        return parse_fanout_pk(pk)[0]
    return None


def claim_key(board_id: str, member_id: str, event_id: str) -> Key:
    """An eventId's claim: ids are per member of a board (the same id on another member's
    event is another event)."""
    return key(f"{EVENT_ID_CLAIM}{board_id}{SEPARATOR}{member_id}{SEPARATOR}{event_id}", EVENT_ID_ITEM)


def page_key(board_id: str, member_id: str, request: str, claimed: bool) -> Key:
    prefix = PAGE_CLAIMED if claimed else PAGE_CLAIMING
    return key(event_pk(board_id, member_id, event_bucket(request)), f"{prefix}{request}")


def snapshots_pk(board_id: str) -> str:
    return f"{SNAPSHOTS}{board_id}"


def count_mark(event_id: str) -> str:
    return f"{COUNT_MARK}{event_id}"


def rollup_mark(target_id: str, event_id: str) -> str:
    return f"{ROLLUP_MARK}{target_id}{SEPARATOR}{event_id}"


def leader_mark(event_id: str) -> str:
    return f"{LEADER_MARK}{event_id}"


def mark_key(mark: str) -> Key:
    return key(mark, APPLIED)


def mark_item(mark: str) -> dict[str, Any]:
    """An item whose existence says "this effect was applied"; it expires after the
    stream's 24-hour retention, when no redelivery can come any more."""
    expires = int(time.time()) + MARK_TTL_SECONDS
    return {**mark_key(mark), "ttl": {"N": str(expires)}}


# What each stream consumer is fed, as Lambda filter patterns (template.yaml's
# FilterCriteria are these; a test checks): the aggregator takes member profiles coming and
# going, or being hidden or shown (a change of a profile that is or was hidden: not every
# change of a member's data), logged events, and every change of a score; the notifier every
# change of a score, member profiles going (it forgets a deleted member's social data, in
# stream order before any later change of a member added again under the same id), and its
# own jobs while they are pending (each write of one is the next chunk's record).
_SCORES = {"dynamodb": {"Keys": {"sk": {"S": [{"prefix": SCORE}]}}}}
_HIDDEN = {"hidden": {"BOOL": [True]}}
AGGREGATOR_FILTERS = [
    {"eventName": ["INSERT", "REMOVE"], "dynamodb": {"Keys": {"sk": {"S": [PROFILE]}}}},
    {"eventName": ["MODIFY"], "dynamodb": {"Keys": {"sk": {"S": [PROFILE]}}, "NewImage": _HIDDEN}},
    {"eventName": ["MODIFY"], "dynamodb": {"Keys": {"sk": {"S": [PROFILE]}}, "OldImage": _HIDDEN}},
    {"eventName": ["INSERT"], "dynamodb": {"Keys": {"pk": {"S": [{"prefix": EVENTS}]}}}},
    _SCORES,
]
# A job item's attributes (read by the dal, and by stream.records from its stream image).
FANOUT_PENDING = "pending"  # true until its last chunk
FANOUT_CHANGE = "job"  # what the job works from, as the notifier wrote it (JSON)
FANOUT_CURSOR = "c"  # the last follower told; absent: none yet
FANOUT_STEP = "n"  # one more at every write of the item
NOTIFIER_FILTERS = [
    {"eventName": ["REMOVE"], "dynamodb": {"Keys": {"sk": {"S": [PROFILE]}}}},
    _SCORES,
    {
        "dynamodb": {
            "Keys": {"pk": {"S": [{"prefix": FANOUT}]}},
            "NewImage": {FANOUT_PENDING: {"BOOL": [True]}},
        }
    },
]
