"""The pure parts of the head and the score buckets, against plain sorted lists."""

from __future__ import annotations

import random
from bisect import bisect_left
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from podium import buckets, head
from podium.dal.codecs import pack_keys, unpack_keys
from podium.keys import member_of_key
from podium.models import Bucket, BucketStep
from tests.helpers import small_head


@contextmanager
def small_buckets(split_at: int) -> Iterator[None]:
    saved = buckets.SPLIT_AT
    buckets.SPLIT_AT = split_at
    try:
        yield
    finally:
        buckets.SPLIT_AT = saved


class Simulation:
    """Writers, an index that shows each write up to INDEX_LAG late, a stream that brings
    each member's records in order but members' records in any order, late, and some twice,
    and a consumer that keeps the buckets with ``buckets.steps``, splitting them in two steps
    at whatever moment its records call for. In microseconds; one record applied at a time."""

    def __init__(self, draw: random.Random) -> None:
        self.draw = draw
        self.now = 10_000_000
        self.current: dict[str, str] = {}  # member -> key, as written
        self.writes: dict[str, list[tuple[str | None, int]]] = {}  # member -> (key, visible from)
        self.pending: dict[str, list[tuple[str, buckets.Change]]] = {}  # the stream, per member
        self.delivered: list[tuple[str, buckets.Change]] = []
        self.written_at: dict[str, int] = {}  # member -> when its current key was written
        self.events = 0
        # the consumer's items
        self.layout = [Bucket(buckets.BELOW_EVERY_KEY, 0, 1)]
        self.moved: dict[str, dict[str, int]] = {}
        self.parts: dict[str, dict[str, int]] = {}
        self.snapshots: dict[tuple[str, int], frozenset[str]] = {}
        self.marks: set[str] = set()
        self.finished = 0

    def tick(self, most: int) -> None:
        self.now += self.draw.randrange(most)

    def write(self, member: str, score: int | None) -> None:
        key = None if score is None else f"{score:03d}#{member}"
        old = self.current.get(member)
        if key == old:
            return
        # each writer's clock is off by up to half the skew: a member's stamps may go back
        stamp = self.now + self.draw.randrange(-buckets.SKEW_US // 2, buckets.SKEW_US // 2)
        previous = self.written_at.get(member) if old is not None else None
        written = max(stamp if key is not None else 0, previous or 0)
        if key is None:
            del self.current[member]
        else:
            self.current[member] = key
            self.written_at[member] = stamp
        visible = self.now + self.draw.randrange(buckets.INDEX_LAG_US)
        self.writes.setdefault(member, []).append((key, visible))
        self.events += 1
        change = buckets.Change(buckets.member_hash(member), old, key, written)
        self.pending.setdefault(member, []).append((f"e{self.events}", change))

    def index(self) -> list[str]:
        """The index as a scan now sees it: each member's latest write that it shows."""
        shown = []
        for history in self.writes.values():
            seen = [key for key, visible in history if visible <= self.now]
            if seen and seen[-1] is not None:
                shown.append(seen[-1])
        return sorted(shown)

    def deliver_one(self) -> bool:
        waiting = [m for m, records in self.pending.items() if records]
        if not waiting:
            return False
        if self.delivered and self.draw.random() < 0.1:
            self.apply(*self.draw.choice(self.delivered))  # a record delivered again
        member = self.draw.choice(waiting)
        event_id, change = self.pending[member].pop(0)
        self.apply(event_id, change)
        self.delivered.append((event_id, change))
        return True

    def apply(self, event_id: str, change: buckets.Change) -> None:
        if event_id in self.marks:
            return

        world = self

        class Knows:
            """As the consumer knows: first guessing that no moved entry exists (the
            record's transaction is conditional on the guess), then reading them."""

            def __init__(self, optimistic: bool) -> None:
                self.optimistic = optimistic

            def scanned(self, bucket: Bucket) -> bool:
                return change.member in world.snapshots[(bucket.lo, bucket.snapshot_epoch)]

            def moved(self, bucket: Bucket) -> int | None:
                return None if self.optimistic else world.moved.get(bucket.lo, {}).get(change.member)

        def holds(step: BucketStep) -> bool:
            entry = self.moved.get(step.bucket.lo, {}).get(change.member)
            return step.moved is None or not step.moved_checked or entry == step.moved_was

        self.marks.add(event_id)
        decided = buckets.steps(self.layout, change, Knows(optimistic=True))
        if not all(holds(step) for step in decided):  # the transaction fails: read, and again
            decided = buckets.steps(self.layout, change, Knows(optimistic=False))
        for step in decided:
            index = self.layout.index(step.bucket)
            self.layout[index] = replace(step.bucket, count=step.bucket.count + step.delta)
            if step.moved is not None:
                assert holds(step)
                self.moved.setdefault(step.bucket.lo, {})[change.member] = step.moved
            if step.part is not None:
                self.parts[step.bucket.lo][change.member] = step.part
        self.upkeep()

    def upkeep(self) -> None:
        """Start the splits that counts call for, finish those that have settled."""
        acted = True
        while acted:
            acted = False
            for index, bucket in enumerate(self.layout):
                if not bucket.splitting and bucket.count > buckets.SPLIT_AT:
                    acted = self.start(index)
                elif bucket.splitting and self.now >= bucket.split_since_us + buckets.SETTLE_US:
                    self.finish(index)
                    acted = True
                if acted:
                    break

    def _range(self, index: int) -> tuple[Bucket, str | None, list[str]]:
        bucket, high = self.layout[index], buckets.upper_bound(self.layout, index)
        return bucket, high, [k for k in self.index() if k >= bucket.lo and (high is None or k < high)]

    def start(self, index: int) -> bool:
        bucket, _, keys = self._range(index)
        cuts = buckets.choose_cuts(keys)
        if not cuts:
            return False
        self.layout[index] = replace(bucket, epoch=bucket.epoch + 1, cuts=cuts, split_since_us=self.now)
        self.parts[bucket.lo] = {}
        return True

    def finish(self, index: int) -> None:
        bucket, high, keys = self._range(index)
        scanned = {buckets.member_hash(member_of_key(k)): buckets.part(bucket, k, high) for k in keys}
        pieces = len(bucket.cuts) + 1
        counts, moved = buckets.split_counts(scanned, self.parts.pop(bucket.lo), pieces)
        starts = (bucket.lo, *bucket.cuts)
        epochs = [bucket.epoch + 1] + [1] * (pieces - 1)
        self.layout[index : index + 1] = [
            Bucket(lo, count, epoch, self.now, epoch)
            for lo, count, epoch in zip(starts, counts, epochs, strict=True)
        ]
        for piece, (lo, epoch) in enumerate(zip(starts, epochs, strict=True), start=1):
            self.moved[lo] = moved[piece - 1]
            self.snapshots[(lo, epoch)] = frozenset(m for m, p in scanned.items() if p == piece)
        self.finished += 1

    def drain_and_settle(self, most_step_us: int) -> None:
        """Deliver the rest of the stream, let every split settle and finish, checking the
        counts after each."""
        while self.deliver_one():
            self.tick(most_step_us + 1)
        self.assert_exact()
        self.now += buckets.SETTLE_US
        self.upkeep()
        self.assert_exact()

    def assert_exact(self) -> None:
        """Every bucket counts exactly the members whose current key lies in it."""
        keys = sorted(self.current.values())
        for index, bucket in enumerate(self.layout):
            high = buckets.upper_bound(self.layout, index)
            inside = sum(1 for k in keys if k >= bucket.lo and (high is None or k < high))
            assert bucket.count == inside, (bucket, inside)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.integers(6, 40), st.sampled_from([0, 100_000, 600_000]))
def test_buckets_kept_from_a_late_stream_and_a_lagging_index_count_exactly(
    seed: int, members: int, most_step_us: int
) -> None:
    # Given buckets of a few members that split while records and index views trail writes
    draw = random.Random(seed)
    with small_buckets(5):
        world = Simulation(draw)

        # When members arrive, move, leave and come back, while the stream is applied late,
        # a part at a time and with repeats, and splits start and finish in between
        for _ in range(12 * members):
            member = f"m{draw.randrange(members):02d}"
            score = None if member in world.current and draw.random() < 0.08 else draw.randrange(60)
            world.write(member, score)
            world.tick(most_step_us + 1)
            for _ in range(draw.randrange(3)):
                world.deliver_one()
                world.tick(most_step_us // 4 + 1)
            if not any(world.pending.values()):
                # Then whenever the stream has caught up, every count is exact
                world.assert_exact()

        # and once the rest of the stream arrives and every split settles and finishes
        world.drain_and_settle(most_step_us)
        # and after more changes on the new buckets, read late too
        for member in sorted(world.current)[: members // 2]:
            world.write(member, draw.randrange(60))
            world.tick(most_step_us + 1)
        world.drain_and_settle(most_step_us)
        assert world.finished or members < 12  # the story did split buckets


def test_cuts_and_rebuilds_partition_the_keys() -> None:
    keys = [f"k{i:03d}" for i in range(11)]
    assert buckets.cut(keys, 4) == [("", 4), ("k004", 4), ("k008", 3)]
    assert buckets.cut([], 4) == [("", 0)]
    # a bucket just past its limit is cut in two at its median; a far bigger one into parts
    # of about REBUILD_SIZE, at most MAX_PIECES of them
    assert buckets.choose_cuts(keys) == ("k005",)
    assert buckets.choose_cuts(["a"]) == ()
    many = [f"k{i:05d}" for i in range(10 * buckets.REBUILD_SIZE)]
    cuts = buckets.choose_cuts(many)
    assert len(cuts) == 9
    assert list(cuts) == sorted(set(cuts))
    assert len(buckets.choose_cuts([f"k{i:06d}" for i in range(100 * buckets.REBUILD_SIZE)])) == 15


@given(
    st.lists(
        st.tuples(st.integers(0, 90), st.one_of(st.none(), st.integers(0, 400))),
        max_size=200,
    ),
    st.integers(0, 80),
)
def test_the_head_and_its_ladder_after_any_changes_count_the_sorted_board(
    changes: list[tuple[int, int | None]], initial: int
) -> None:
    # Given a board (member -> key) and a head read from its index, in small sizes (8 keys,
    # a ladder sample every 4 positions down to 40) so that boards of dozens have both
    def key(member: int, score: int) -> str:
        return f"{score:04d}#m{member:02d}"

    board = {m: key(m, m * 7 % 50) for m in range(initial)}
    with small_head():
        current = head.from_index(sorted(board.values())[: head.LADDER_REACH + 1], member_of_key)

        # When members arrive, move and leave one at a time, each change applied once, the
        # head read again from the index whenever it asks
        for member, score in changes:
            new = key(member, score) if score is not None else None
            old = board.pop(member, None)
            if new is not None:
                board[member] = new
            current = head.apply_change(current, f"m{member:02d}", old, new, member_of_key)
            if current.needs_refill:
                current = head.from_index(sorted(board.values())[: head.LADDER_REACH + 1], member_of_key)

            # Then the head is the board's best keys, and each ladder sample counts exactly
            # the keys below it (the board's size too, when it ends within reach)
            ordered = sorted(board.values())
            assert current.keys == ordered[: len(current.keys)]
            if current.complete:
                assert len(current.keys) == len(ordered)
            ladder = current.ladder
            assert (ladder is None) == current.complete
            if ladder is not None:
                assert list(ladder.keys) == sorted(ladder.keys)
                assert list(ladder.below) == [bisect_left(ordered, k) for k in ladder.keys]
                assert ladder.total in (None, len(ordered))
                # and a ladder still in use is fine enough to steer a read
                assert not ladder.is_worn(len(current.keys))

        # and the head answers a page only when it can
        ordered = sorted(board.values())
        for limit in (1, 5, 10):
            page = current.page(limit)
            if page is not None:
                assert page == (ordered[:limit], len(ordered) > limit)
        assert unpack_keys(pack_keys(current.keys)) == current.keys
