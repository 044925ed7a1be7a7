"""The checkpoint of a resumable import: which records of the file are done.

An import numbers the file's records 0, 1, 2, ... in file order (bad lines included) and
writes down each one that is done, sent and answered, or rejected, the moment it is. The
checkpoint is a journal, one JSON object a line: a first line naming what it is about (the
file's size and SHA-256, the board, the API), a line of the state when it was last
compacted, then one line appended for each record done since. An append is a single
``write`` to a file opened for appending, so a ``kill -9`` loses at most the records whose
answer had not been written down yet: those still in flight. A torn last line is ignored.

A checkpoint of another file (the same name, other bytes), board or API is not this
import's: the import starts afresh and writes its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

VERSION = 1
SUFFIX = ".podium-import"
COMPACT_EVERY = 10_000  # appended lines between two rewrites of the journal


@dataclass(frozen=True)
class ImportKey:
    """What a checkpoint is about: one file's bytes, imported into one board of one API."""

    size: int
    sha256: str
    board: str
    api: str

    @classmethod
    def of(cls, path: Path, board: str, api: str) -> ImportKey:
        digest = hashlib.sha256()
        size = 0
        with path.open("rb") as data:
            while chunk := data.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
        return cls(size, digest.hexdigest(), board, api)


def default_path(file: Path, board: str) -> Path:
    """Next to the file, one for each board it is imported into."""
    return file.with_name(f"{file.name}.{board}{SUFFIX}")


@dataclass
class Progress:
    """The records done: every one below ``done_below``, and those in ``done`` past it.
    ``rejected`` holds the bad lines among them (record -> (line, reason))."""

    done_below: int = 0
    done: set[int] = field(default_factory=set)
    rejected: dict[int, tuple[int, str]] = field(default_factory=dict)

    def is_done(self, record: int) -> bool:
        return record < self.done_below or record in self.done

    def count(self) -> int:
        return self.done_below + len(self.done)

    def mark(self, record: int) -> None:
        if self.is_done(record):
            return
        self.done.add(record)
        # The set holds only the records done out of order: the in-flight window.
        while self.done_below in self.done:
            self.done.remove(self.done_below)
            self.done_below += 1

    def to_json(self) -> dict[str, Any]:
        return {
            "doneBelow": self.done_below,
            "done": sorted(self.done),
            "rejected": [[record, line, reason] for record, (line, reason) in sorted(self.rejected.items())],
        }

    @classmethod
    def from_json(cls, state: dict[str, Any]) -> Progress:
        progress = cls(int(state["doneBelow"]), {int(r) for r in state["done"]})
        progress.rejected = {int(r): (int(line), str(reason)) for r, line, reason in state["rejected"]}
        return progress

    def apply(self, entry: dict[str, Any]) -> None:
        """One appended line of the journal."""
        if "rejected" in entry:
            self.rejected[int(entry["rejected"])] = (int(entry["line"]), str(entry["reason"]))
            self.mark(int(entry["rejected"]))
        else:
            self.mark(int(entry["done"]))


def read(path: Path, key: ImportKey | None = None) -> Progress | None:
    """The progress a checkpoint records, or None when there is none for ``key`` (no file,
    another file's, a journal this version cannot read)."""
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return None
    try:
        header = json.loads(lines[0])
        if header.get("podiumImport") != VERSION or (key is not None and header.get("key") != asdict(key)):
            return None
        progress = Progress.from_json(json.loads(lines[1]))
    except (IndexError, ValueError, KeyError, TypeError):
        return None
    for number, line in enumerate(lines[2:], start=2):
        try:
            progress.apply(json.loads(line))
        except (ValueError, KeyError, TypeError):
            if number == len(lines) - 1:
                break  # the last write, torn by a kill
            return None  # not a journal this import wrote: start afresh (every write is idempotent)
    return progress


class Checkpoint:
    """The journal of one import, written as it goes; safe to use from many threads."""

    def __init__(self, path: Path, key: ImportKey, progress: Progress) -> None:
        self.path = path
        self.key = key
        self.progress = progress
        self.resumed = progress.count()  # the records done when it was opened
        self._lock = threading.Lock()
        self._appended = 0
        self._fd = -1
        self._compact()

    @classmethod
    def open(cls, path: Path, key: ImportKey, *, restart: bool = False) -> Checkpoint:
        """The import's checkpoint, resumed from the file at ``path`` when that is about the
        same file, board and API (and ``restart`` is not asked for)."""
        found = None if restart else read(path, key)
        return cls(path, key, found or Progress())

    def is_done(self, record: int) -> bool:
        with self._lock:
            return self.progress.is_done(record)

    def done(self, record: int) -> None:
        self._append({"done": record})

    def rejected(self, record: int, line: int, reason: str) -> None:
        self._append({"rejected": record, "line": line, "reason": reason})

    def _append(self, entry: dict[str, Any]) -> None:
        with self._lock:
            os.write(self._fd, (json.dumps(entry) + "\n").encode())
            self.progress.apply(entry)
            self._appended += 1
            if self._appended >= COMPACT_EVERY:
                self._compact()

    def close(self) -> None:
        """Compact the journal and close it; the import can resume from it."""
        with self._lock:
            self._compact()
            os.close(self._fd)
            self._fd = -1

    def remove(self) -> None:
        """The import is complete: nothing to resume."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            self.path.unlink(missing_ok=True)

    def _compact(self) -> None:
        """Rewrite the journal as its header and state, in place at once (a kill leaves the
        old journal or the new one, never half of one)."""
        header = {"podiumImport": VERSION, "key": asdict(self.key)}
        text = json.dumps(header) + "\n" + json.dumps(self.progress.to_json()) + "\n"
        staging = self.path.with_name(self.path.name + ".tmp")
        staging.write_text(text)
        os.replace(staging, self.path)
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self._appended = 0
