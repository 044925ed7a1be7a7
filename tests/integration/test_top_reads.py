"""``top`` reads the sharded index in one round most of the time and two at most, steered
by the board's head when it has one, and its pages, walked by cursor to the end, are a
plain sorted list of the board."""

from __future__ import annotations

from decimal import Decimal

import pytest

from podium import head
from podium.indexreads import read_keys
from podium.keys import rank_partition_key, shard_of
from podium.periods import ALL_TIME
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import expected_listing, pages, unique_id, walk

pytestmark = pytest.mark.integration


def make_board(service: Services, shards: int, scores: dict[str, Decimal]) -> str:
    board = unique_id("top")
    service.boards.put_board(board, board_request({"shards": Decimal(shards)}))
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score}))
    return board


@pytest.mark.parametrize(
    ("shards", "limits"),
    [(1, (6, 20, 21)), (3, (1, 6, 20, 21)), (10, (6, 21)), (50, (6, 21))],
)
def test_pages_walked_to_the_end_are_the_sorted_board(
    service: Services, shards: int, limits: tuple[int, ...]
) -> None:
    # Given 20 members with tied scores, on 1 to 50 shards (50: most shards are empty)
    scores = {f"m{i:02d}": Decimal(i % 7) / 2 for i in range(20)}
    board = make_board(service, shards, scores)
    listing = expected_listing(scores)
    # (a page as long as the board, one longer, and pages that end mid-board)
    for limit in limits:
        # When every page is read, cursor after cursor
        entries, most_rounds = walk(service, board, limit)
        # Then they are the sorted board, with nextCursor null exactly at its end
        assert entries == listing, limit
        assert most_rounds <= 2


def test_a_top_held_by_one_shard_is_fetched_in_a_second_round(service: Services) -> None:
    # Given 10 shards, where the best 15 members all sit on shard 3
    on_shard_3 = [m for m in (f"t{i:03d}" for i in range(400)) if shard_of(m, 10) == 3][:15]
    scores = {member: Decimal(100 + i) for i, member in enumerate(on_shard_3)}
    scores.update({f"r{i:02d}": Decimal(i) for i in range(15)})
    board = make_board(service, 10, scores)
    listing = expected_listing(scores)
    # When the top 10 is read
    read = service.reads.top_read(board, 10, None, with_data=False, consistent=True)
    # Then a second round read shard 3 beyond its first page, and the answer is exact
    page = read.page
    assert [(e.rank, e.member_id, e.score) for e in page.entries] == listing[:10]
    assert page.next_cursor is not None
    assert read.stats is not None
    assert read.stats.rounds == 2
    # And the pages from the cursor on agree too
    entries, _ = walk(service, board, 4)
    assert entries == listing


def test_index_keys_between_two_keys_excludes_both(service: Services) -> None:
    # Given one shard with 12 members
    scores = {f"k{i:02d}": Decimal(i) for i in range(12)}
    board = make_board(service, 1, scores)
    partition = rank_partition_key(board, ALL_TIME, 0)
    index = service.db.index
    keys = read_keys(index, partition, None, None, 100)
    # When keys after one key and below another are read
    between = read_keys(index, partition, keys[2], keys[8], 10)
    # Then neither bound is returned, a short answer means the range is done
    assert between == keys[3:8]
    assert read_keys(index, partition, keys[2], keys[8], 2) == keys[3:5]
    assert read_keys(index, partition, keys[2], keys[8], 5) == keys[3:8]
    assert read_keys(index, partition, None, keys[4], 10) == keys[:4]
    # and read bottom-up, the same ranges come nearest first
    assert read_keys(index, partition, keys[8], keys[2], 10, reverse=True) == keys[3:8][::-1]
    assert read_keys(index, partition, keys[4], None, 10, reverse=True) == keys[:4][::-1]


def test_reads_steered_by_the_head_take_one_round_and_the_keys_they_need(
    service: Services, head_in_small_sizes: None
) -> None:
    # Given 120 members on 10 shards, whose head (8 keys) and ladder (every 4th position
    # down to 40) were read from the index
    scores = {f"h{i:03d}": Decimal(i * 7 % 97) / 2 for i in range(120)}
    board = make_board(service, 10, scores)
    service.maintenance.rebuild_rank_structures(board)
    listing = expected_listing(scores)
    limit = 5
    stored = service.db.structures.get_head(board, "all")
    assert stored is not None
    ladder = head.read(stored).ladder
    assert ladder is not None
    # (a cursor past the head is placed within a ladder step)
    reach = ladder.below[-1] - limit - head.margin(limit) - head.LADDER_STEP

    # When the listing is walked from the index (consistent=true), 5 at a time
    entries: list[tuple[int, str, Decimal]] = []
    for page, stats in pages(service, board, limit):
        # Then every page within the ladder's reach takes one round of shard queries, and
        # reads the page, the hint's margin and at most two ladder steps: not 10 pages
        if len(entries) <= reach:
            assert stats.rounds == 1, len(entries)
            assert stats.items <= limit + head.margin(limit) + 2 * head.LADDER_STEP, len(entries)
        entries.extend((e.rank, e.member_id, e.score) for e in page.entries)
    # And the pages are the sorted board
    assert entries == listing


def test_a_stale_head_steers_the_read_wrong_but_the_answer_stays_exact(
    service: Services, head_in_small_sizes: None
) -> None:
    # Given a board whose head and ladder were read from the index
    scores = {f"s{i:03d}": Decimal(i) for i in range(90)}
    board = make_board(service, 6, scores)
    service.maintenance.rebuild_rank_structures(board)

    # When the best members leave, others climb past them and newcomers arrive, and no
    # stream consumer tells the head
    for index in range(70, 90):
        service.members.delete_member(board, f"s{index:03d}")
        del scores[f"s{index:03d}"]
    for index in range(0, 60, 6):
        scores[f"s{index:03d}"] = Decimal(1000 + index)
        service.members.put_member(board, f"s{index:03d}", member_request({"score": Decimal(1000 + index)}))
    for index in range(15):
        scores[f"new{index:02d}"] = Decimal(30 + 3 * index)
        service.members.put_member(
            board, f"new{index:02d}", member_request({"score": scores[f"new{index:02d}"]})
        )

    # Then every page read from the index, with the stale head's hints, is exact, in two
    # rounds at most
    for limit in (1, 4, 11, 30):
        entries, most_rounds = walk(service, board, limit)
        assert entries == expected_listing(scores), limit
        assert most_rounds <= 2
