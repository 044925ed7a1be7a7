"""The files `podium import` reads (podium_cli.readers): every record of a CSV or JSON
Lines file as a member to send or a bad line with its line number, numbers exact."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from podium_cli.readers import BadLine, FileError, Row, format_of, read_records


def records(tmp_path: Path, name: str, text: str, encoding: str = "utf-8") -> list[Row | BadLine]:
    path = tmp_path / name
    path.write_text(text, encoding=encoding)
    return list(read_records(path, format_of(path, None)))


def test_csv_rows_with_a_data_column_and_other_columns_as_data_fields(tmp_path):
    # Given a CSV with the required columns, a data column, an extra column and a rank
    text = (
        "rank,memberId,score,data,team\n"
        '1,alice,82.30,"{""level"": 3, ""ratio"": 0.1}",red\n'
        "2,bob,-7,,\n"
        "3,carol,1E+3,,blue\n"
    )

    # When
    found = records(tmp_path, "members.csv", text)

    # Then scores and data numbers are exact Decimals, the team column is a text field of the
    # data, an empty cell leaves its field out, rank is ignored, and data is left alone
    # (None) where the row gives none
    assert found == [
        Row(2, "alice", Decimal("82.30"), {"level": 3, "ratio": Decimal("0.1"), "team": "red"}),
        Row(3, "bob", Decimal(-7), None),
        Row(4, "carol", Decimal("1E+3"), {"team": "blue"}),
    ]
    assert isinstance(found[0], Row)
    assert str(found[0].score) == "82.30"  # sent as written: the API compares by value


def test_csv_bad_lines_are_named_by_their_line_and_the_rest_are_read(tmp_path):
    # Given every kind of bad row between good ones, a quoted cell over two lines, and a
    # blank line
    text = (
        "memberId,score,data\n"  # 1
        "ok1,1,\n"  # 2
        "two words,1,\n"  # 3: not an id
        "ok2,NaN,\n"  # 4: not a number
        "ok3,1_000,\n"  # 5: Decimal would read it; JSON has no such number
        "ok4,1e30,\n"  # 6: out of the API's bounds
        'ok5,1,"[1, 2]"\n'  # 7: data not an object
        "ok6,1,{nope\n"  # 8: data not JSON
        "ok7,1\n"  # 9: a cell short
        "\n"  # 10: blank, skipped
        'ok8,2,"{""note"":\n'  # 11: a cell over two lines
        '""two lines""}"\n'  # 12
        "ok9,0.5,\n"  # 13
    )

    # When
    found = records(tmp_path, "members.csv", text)

    # Then
    assert [(r.line, type(r).__name__) for r in found] == [
        (2, "Row"),
        (3, "BadLine"),
        (4, "BadLine"),
        (5, "BadLine"),
        (6, "BadLine"),
        (7, "BadLine"),
        (8, "BadLine"),
        (9, "BadLine"),
        (11, "Row"),
        (13, "Row"),
    ]
    reasons = {r.line: r.reason for r in found if isinstance(r, BadLine)}
    assert "is not an id" in reasons[3]
    assert "not a number" in reasons[4]
    assert "not a number" in reasons[5]
    assert "1e30" in reasons[6]
    assert "JSON object" in reasons[7]
    assert "not JSON" in reasons[8]
    assert "2 cells where the header has 3" in reasons[9]
    assert found[8] == Row(11, "ok8", Decimal(2), {"note": "two lines"})


def test_a_field_both_in_data_and_a_column_is_a_bad_line(tmp_path):
    found = records(tmp_path, "m.csv", 'memberId,score,data,team\na,1,"{""team"": ""x""}",y\n')
    assert found == [BadLine(2, "the field 'team' is both a column and in data")]


@pytest.mark.parametrize(
    ("header", "why"),
    [
        ("memberId,points\n", "no score column"),
        ("id,score\n", "no memberId column"),
        ("memberId,score,score\n", "'score' twice"),
    ],
)
def test_a_csv_without_the_columns_cannot_be_read(tmp_path, header, why):
    path = tmp_path / "m.csv"
    path.write_text(header + "a,1\n")
    with pytest.raises(FileError, match=why):
        list(read_records(path, "csv"))


def test_a_bom_and_crlf_line_ends_are_read_as_a_spreadsheet_writes_them(tmp_path):
    found = records(tmp_path, "m.csv", "memberId,score\r\na,1\r\nb,2\r\n", encoding="utf-8-sig")
    assert found == [Row(2, "a", Decimal(1), None), Row(3, "b", Decimal(2), None)]


def test_jsonl_records_and_bad_lines(tmp_path):
    # Given
    text = "\n".join(
        [
            '{"memberId": "a", "score": 0.1, "data": {"x": 0.2}}',  # 1
            '{"memberId": "b", "score": 12345678901234567890123456789.012345678}',  # 2: 38 digits
            '{"memberId": "c", "score": "5"}',  # 3: a string
            '{"memberId": "d", "score": true}',  # 4: a boolean
            '{"memberId": "e"}',  # 5: no score
            '{"memberId": "f", "score": 1, "extra": 2}',  # 6: unknown field
            '{"memberId": "g", "score": 1, "data": [1]}',  # 7: data not an object
            "not json",  # 8
            "",  # 9: blank, skipped
            "[1, 2]",  # 10: not an object
            '{"rank": 1, "memberId": "h", "score": NaN}',  # 11: not a JSON number
            '{"rank": 7, "memberId": "i", "score": 3}',  # 12: rank ignored (what export writes)
        ]
    )

    # When
    found = records(tmp_path, "members.jsonl", text)

    # Then
    rows = [r for r in found if isinstance(r, Row)]
    bad = {r.line: r.reason for r in found if isinstance(r, BadLine)}
    assert rows == [
        Row(1, "a", Decimal("0.1"), {"x": Decimal("0.2")}),
        Row(2, "b", Decimal("12345678901234567890123456789.012345678"), None),
        Row(12, "i", Decimal(3), None),
    ]
    assert sorted(bad) == [3, 4, 5, 6, 7, 8, 10, 11]
    assert "JSON number" in bad[3]
    assert "JSON number" in bad[4]
    assert "required" in bad[5]
    assert "unknown field 'extra'" in bad[6]
    assert "not a JSON object" in bad[10]


def test_the_format_comes_from_the_extension_unless_given(tmp_path):
    assert format_of(Path("a.csv"), None) == "csv"
    assert format_of(Path("a.JSONL"), None) == "jsonl"
    assert format_of(Path("a.ndjson"), None) == "jsonl"
    assert format_of(Path("a.txt"), "csv") == "csv"
    with pytest.raises(FileError, match="--format"):
        format_of(Path("a.txt"), None)
    with pytest.raises(FileError, match="unknown format"):
        format_of(Path("a.csv"), "xml")
