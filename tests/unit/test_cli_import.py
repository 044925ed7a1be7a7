"""`podium import`'s engine and checkpoint (podium_cli.importer, podium_cli.checkpoint)
against an API played by a dict: the board ends as the file says (a member's later line
wins), bad lines are skipped or stop the import, and an interrupted import resumes from
its checkpoint, sending again at most the records that were in flight."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from podium_cli import checkpoint as checkpoint_module
from podium_cli.checkpoint import Checkpoint, ImportKey, Progress, read
from podium_cli.importer import Importer, LineRefused
from podium_cli.readers import BadLine, Record, Row

BOARD = "imported"
API = "http://127.0.0.1:3000"


class DictApi:
    """The board as a dict of member -> (score, data). ``lose_answers_after``: from that
    call on, a write is applied but its answer is lost (the caller sees an error), as when
    the connection drops or the importer is killed after the API wrote."""

    def __init__(self, board: dict[str, tuple[Decimal, Any]], lose_answers_after: int | None = None) -> None:
        self.board = board
        self.lose_answers_after = lose_answers_after
        self.sent: list[int] = []  # the lines sent, in the order they were
        self.refused = {"too-big"}
        self._lock = threading.Lock()

    def put_member(self, board_id: str, member_id: str, score: Decimal, data: dict[str, Any] | None) -> None:
        assert board_id == BOARD
        if member_id in self.refused:
            raise LineRefused("data is over 64 KiB once serialised")
        with self._lock:
            self.sent.append(self._line_of(member_id, score))
            self.board[member_id] = (score, data)
            lost = self.lose_answers_after is not None and len(self.sent) > self.lose_answers_after
        if lost:
            raise ConnectionError("the connection dropped before the answer")

    @staticmethod
    def _line_of(member_id: str, score: Decimal) -> int:
        return int(score)  # the rows below carry their line number as their score


def rows(count: int, members: int) -> list[Record]:
    """``count`` lines over ``members`` members, each line's score its line number, so that
    a member named on several lines must end with its last line's score."""
    chosen = random.Random(7)
    return [
        Row(line, f"m{chosen.randrange(members)}", Decimal(line), {"line": line}) for line in range(count)
    ]


def model(records: list[Record]) -> dict[str, tuple[Decimal, Any]]:
    """What the board must hold: each member's last row."""
    board: dict[str, tuple[Decimal, Any]] = {}
    for record in records:
        if isinstance(record, Row) and record.member_id not in DictApi({}).refused:
            board[record.member_id] = (record.score, record.data)
    return board


@pytest.fixture
def journal(tmp_path: Path) -> tuple[Path, ImportKey]:
    source = tmp_path / "members.csv"
    source.write_text("memberId,score\n")
    return tmp_path / "members.csv.imported.podium-import", ImportKey.of(source, BOARD, API)


def test_the_board_ends_as_the_file_says_whatever_the_threads(journal):
    # Given 3,000 lines over 400 members (most named on several lines)
    path, key = journal
    records = rows(3_000, 400)
    board: dict[str, tuple[Decimal, Any]] = {}

    # When 8 threads import them
    result = Importer(DictApi(board), BOARD, Checkpoint.open(path, key), workers=8).run(records)

    # Then each member holds its last line's score and data, every line was sent once
    assert result.complete
    assert (result.records, result.sent, result.bad_lines) == (3_000, 3_000, [])
    assert board == model(records)


def test_bad_lines_are_skipped_and_reported_with_their_line(journal):
    # Given bad lines from the reader, and a line the API refuses
    path, key = journal
    records: list[Record] = [
        Row(2, "a", Decimal(1), None),
        BadLine(3, "score 'x' is not a number"),
        Row(4, "too-big", Decimal(2), {"blob": "..."}),
        Row(5, "b", Decimal(3), None),
    ]
    board: dict[str, tuple[Decimal, Any]] = {}

    # When
    result = Importer(DictApi(board), BOARD, Checkpoint.open(path, key), workers=2).run(records)

    # Then the good lines are on the board, the others reported by line, in line order
    assert result.complete
    assert board == {"a": (Decimal(1), None), "b": (Decimal(3), None)}
    assert result.bad_lines == [
        BadLine(3, "score 'x' is not a number"),
        BadLine(4, "data is over 64 KiB once serialised"),
    ]


def test_strict_stops_at_the_first_bad_line(journal):
    path, key = journal
    records: list[Record] = [Row(n, f"m{n}", Decimal(n), None) for n in range(2, 50)]
    records.insert(10, BadLine(99, "memberId 'a b' is not an id"))
    board: dict[str, tuple[Decimal, Any]] = {}

    result = Importer(DictApi(board), BOARD, Checkpoint.open(path, key), workers=1, strict=True).run(records)

    assert not result.complete
    assert result.failure is not None
    assert result.failure.startswith("line 99:")
    assert len(board) < 48  # what was read before the bad line, at most


@pytest.mark.parametrize("workers", [1, 4, 16])
def test_an_import_cut_short_resumes_sending_again_only_what_was_in_flight(journal, workers):
    # Given an import whose connection drops after 700 writes: the writes in flight then
    # were applied, but their answers never came
    path, key = journal
    records = rows(2_000, 2_000)
    board: dict[str, tuple[Decimal, Any]] = {}
    first = DictApi(board, lose_answers_after=700)
    cut = Importer(first, BOARD, Checkpoint.open(path, key), workers=workers).run(records)
    assert not cut.complete
    assert "dropped" in str(cut.failure)
    cut_checkpoint = read(path, key)
    assert cut_checkpoint is not None
    assert cut_checkpoint.count() >= 700 - workers

    # When the same import runs again, from the checkpoint on disk
    second = DictApi(board)
    checkpoint = Checkpoint.open(path, key)
    resumed = Importer(second, BOARD, checkpoint, workers=workers).run(records)

    # Then the board is the file; the second run skipped what the checkpoint says is done,
    # and sent again at most one record a thread (those in flight when the first stopped)
    assert resumed.complete
    assert board == model(records)
    assert checkpoint.resumed == cut_checkpoint.count()
    assert resumed.skipped_done == checkpoint.resumed
    sent_again = set(first.sent) & set(second.sent)
    assert len(sent_again) <= workers
    assert set(first.sent) | set(second.sent) == set(range(2_000))


def test_ctrl_c_stops_the_import_and_the_next_run_finishes_it(journal):
    # Given a reader interrupted by Ctrl-C after 500 records
    path, key = journal
    records = rows(1_200, 300)

    def interrupted() -> Iterator[Record]:
        for number, record in enumerate(records):
            if number == 500:
                raise KeyboardInterrupt
            yield record

    board: dict[str, tuple[Decimal, Any]] = {}
    first = DictApi(board)
    result = Importer(first, BOARD, Checkpoint.open(path, key), workers=4).run(interrupted())
    assert result.interrupted
    assert not result.complete
    assert 0 < len(first.sent) <= 500

    # When it runs again
    second = DictApi(board)
    resumed = Importer(second, BOARD, Checkpoint.open(path, key), workers=4).run(records)

    # Then every line was sent exactly once over the two runs
    assert resumed.complete
    assert board == model(records)
    assert sorted(first.sent + second.sent) == list(range(1_200))


def test_the_journal_survives_a_torn_last_write_and_compaction(journal, monkeypatch):
    # Given a journal compacted every 5 lines, with records done out of order
    path, key = journal
    monkeypatch.setattr(checkpoint_module, "COMPACT_EVERY", 5)
    checkpoint = Checkpoint.open(path, key)
    done = [*range(0, 21), 25, 31, 22]
    for record in done:
        checkpoint.done(record)
    checkpoint.rejected(21, line=23, reason="bad")

    # When a kill tears the last write
    with path.open("a") as text:
        text.write('{"done": 4')

    # Then the journal reads back as what was done
    progress = read(path, key)
    assert progress is not None
    assert (progress.done_below, progress.done) == (23, {25, 31})
    assert progress.rejected == {21: (23, "bad")}


def test_a_checkpoint_of_another_file_board_or_api_is_not_resumed(journal, tmp_path):
    path, key = journal
    checkpoint = Checkpoint.open(path, key)
    checkpoint.done(0)
    checkpoint.close()
    other_file = tmp_path / "other.csv"
    other_file.write_text("memberId,score\na,1\n")

    assert Checkpoint.open(path, key).resumed == 1
    assert Checkpoint.open(path, ImportKey(key.size, key.sha256, "another-board", API)).resumed == 0
    assert Checkpoint.open(path, ImportKey(key.size, key.sha256, BOARD, "http://elsewhere")).resumed == 0
    assert Checkpoint.open(path, ImportKey.of(other_file, BOARD, API)).resumed == 0
    assert Checkpoint.open(path, key, restart=True).resumed == 0


def test_progress_keeps_a_watermark_and_only_the_records_done_past_it():
    progress = Progress()
    for record in [2, 0, 3, 1, 7]:
        progress.mark(record)
    assert (progress.done_below, progress.done, progress.count()) == (4, {7}, 5)
    assert [progress.is_done(record) for record in (3, 5, 7)] == [True, False, True]
