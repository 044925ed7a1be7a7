"""The files ``podium import`` reads: CSV and JSON Lines, one member a record.

A reader yields every record of the file in order, each either a :class:`Row` to send or a
:class:`BadLine` saying why it cannot be sent, with the line of the file it starts on. A
bad line is the import's to skip or to stop at; only a file that cannot be read as the
format at all (a CSV without ``memberId`` and ``score`` columns) raises :class:`FileError`.

CSV: a header line, then one member a row. ``memberId`` and ``score`` are required
columns; ``data`` (a JSON object) is optional; ``rank`` (what ``podium export`` writes) is
ignored; every other column becomes a field of the member's data, as text, and an empty
cell leaves its field out. JSON Lines: one object a line, ``{"memberId": ..., "score":
..., "data": {...}}``, ``data`` optional, ``rank`` ignored; blank lines are skipped.

Numbers are exact: a score and the numbers in ``data`` are read as ``Decimal``, never as a
binary float.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO

from podium.errors import ValidationError
from podium.numbers import check_score

FORMATS = ("csv", "jsonl")
EXTENSIONS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
# The API's memberId (docs/api.md, "Identifiers"): checked here so that a bad id is named
# with its line rather than sent.
MEMBER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@~-]{0,199}")
# A JSON number, which is what the API takes as a score: no "1_000", "NaN" or " 1e3 ".
NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
CSV_REQUIRED = ("memberId", "score")
CSV_IGNORED = ("rank",)
JSONL_FIELDS = ("memberId", "score", "data", "rank")  # rank: what `podium export` writes, ignored


@dataclass(frozen=True)
class Row:
    """One member to write: ``PUT .../members/{member_id}`` with its score and data
    (``None``: the member's data is left as it is)."""

    line: int
    member_id: str
    score: Decimal
    data: dict[str, Any] | None


@dataclass(frozen=True)
class BadLine:
    """A record that cannot be sent, and why."""

    line: int
    reason: str


Record = Row | BadLine


class FileError(ValueError):
    """The file cannot be read as its format at all."""


def format_of(path: Path, given: str | None) -> str:
    """The format ``--format`` names, else the one the file's extension says."""
    if given is not None:
        if given not in FORMATS:
            raise FileError(f"unknown format {given!r}: one of {', '.join(FORMATS)}")
        return given
    found = EXTENSIONS.get(path.suffix.lower())
    if found is None:
        raise FileError(
            f"cannot tell the format of {path.name} from its extension: give --format csv or jsonl"
        )
    return found


def read_records(path: Path, file_format: str) -> Iterator[Record]:
    """Every record of the file, in order (a BOM at its start is ignored)."""
    with path.open(encoding="utf-8-sig", newline="") as text:
        yield from (read_csv(text) if file_format == "csv" else read_jsonl(text))


def read_jsonl(text: TextIO) -> Iterator[Record]:
    for number, line in enumerate(text, start=1):
        if line.strip():
            yield _jsonl_record(number, line)


def _jsonl_record(number: int, line: str) -> Record:
    try:
        value = json.loads(line, parse_float=Decimal, parse_constant=_no_constant)
    except ValueError as error:
        return BadLine(number, f"not JSON: {error}")
    if not isinstance(value, dict):
        return BadLine(number, "not a JSON object")
    unknown = sorted(set(value) - set(JSONL_FIELDS))
    if unknown:
        return BadLine(number, f"unknown field {unknown[0]!r}: the fields are {', '.join(JSONL_FIELDS)}")
    if "memberId" not in value or "score" not in value:
        return BadLine(number, "memberId and score are required")
    score = value["score"]
    if isinstance(score, int) and not isinstance(score, bool):
        score = Decimal(score)
    data = value.get("data")
    if data is not None and not isinstance(data, dict):
        return BadLine(number, "data must be a JSON object")
    return _row(number, value["memberId"], score, data)


def read_csv(text: TextIO) -> Iterator[Record]:
    rows = csv.reader(text)
    header = next(rows, None)
    if header is None:
        return
    columns = _csv_columns(header)
    last_line = rows.line_num
    for cells in rows:
        first_line, last_line = last_line + 1, rows.line_num
        if not any(cell.strip() for cell in cells):
            continue
        yield _csv_record(first_line, columns, cells)


def _csv_columns(header: list[str]) -> list[str]:
    columns = [name.strip() for name in header]
    missing = [name for name in CSV_REQUIRED if name not in columns]
    if missing:
        raise FileError(
            f"the CSV header has no {' and no '.join(missing)} column: it needs memberId and score, "
            "and may have data (a JSON object) and other columns (fields of the data)"
        )
    repeated = sorted({name for name in columns if columns.count(name) > 1})
    if repeated:
        raise FileError(f"the CSV header names the column {repeated[0]!r} twice")
    return columns


def _csv_record(number: int, columns: list[str], cells: list[str]) -> Record:
    if len(cells) != len(columns):
        return BadLine(number, f"{len(cells)} cells where the header has {len(columns)} columns")
    named = dict(zip(columns, cells, strict=True))
    score_text = named["score"].strip()
    if not NUMBER.fullmatch(score_text):
        return BadLine(number, f"score {score_text!r} is not a number")
    data: dict[str, Any] | None = None
    if named.get("data", "").strip():
        try:
            data = json.loads(named["data"], parse_float=Decimal, parse_constant=_no_constant)
        except ValueError as error:
            return BadLine(number, f"data is not JSON: {error}")
        if not isinstance(data, dict):
            return BadLine(number, "data must be a JSON object")
    for column, cell in named.items():
        if column in (*CSV_REQUIRED, "data", *CSV_IGNORED) or cell == "":
            continue
        data = dict(data or {})
        if column in data:
            return BadLine(number, f"the field {column!r} is both a column and in data")
        data[column] = cell
    return _row(number, named["memberId"].strip(), Decimal(score_text), data)


def _row(number: int, member_id: Any, score: Any, data: dict[str, Any] | None) -> Record:
    if not isinstance(member_id, str) or not MEMBER_ID.fullmatch(member_id):
        return BadLine(number, f"memberId {member_id!r} is not an id (letters, digits and ._:@~-, up to 200)")
    try:
        check_score(score, "score")  # the API's bounds; the score is sent as it was written
    except ValidationError as error:
        return BadLine(number, error.message)
    return Row(number, member_id, score, data)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
