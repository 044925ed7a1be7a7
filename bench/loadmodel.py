"""The load's model of every member's score, built from the writes the load sent and what
the service answered, and the check of the scores the service ends with against it.

A write is *acknowledged* when it was answered 2xx: it must be applied exactly once. It is
*refused* when it was answered 4xx: it must change nothing (API.md: "a request that fails
changes nothing"). It is *unknown* when no answer came back (a dropped connection, the load
stopped mid-request) or the answer was a 5xx: the model allows it to be applied once or not
at all, and counts how many such writes there were.

Writes that carry an identity are one write however often they are sent: the attempts of
a score submission with one ``Idempotency-Key`` (on one member's score route), and the sends
of an event with one ``eventId`` (on one board). Such a write is acknowledged if any of its
attempts was; every acknowledged attempt of a key must have the same answer (a replay gets
the first answer again).

What is checked, per member:

- ``increment``: the final score is the initial score plus every acknowledged write's value
  (submissions and events), plus the values of some subset of the unknown ones. Every
  acknowledged answer is ``score == previousScore + value``, and no two distinct
  acknowledged submissions saw the same ``previousScore`` (values are positive, so two
  writes that started from the same score mean one of them was lost).
- ``best``: the final score is the best of the initial score and every acknowledged value,
  or an unknown value better than that; every answer is ``score == best(previous, value)``.
- ``set``: every value is distinct, so the answers' ``previousScore`` links order the
  writes: the final score is the last write's value; each acknowledged write was
  overwritten by exactly one later write (no two writes saw the same previous score, and no
  acknowledged write but the last is left without a successor unless an unknown write
  could be it).

A score below the model's is a *lost* write; above it (``increment``), a *doubled* one.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

# How many unknown writes of one member the model tries every subset of; past that it only
# checks that the difference lies between the smallest and the largest possible sum.
SUBSETS_UP_TO = 16


def decimal_json(text: str) -> Any:
    return json.loads(text, parse_float=Decimal, parse_int=Decimal)


def outcome(status: int | None) -> str:
    """``acked``, ``refused`` or ``unknown`` for a write answered ``status`` (None: no answer)."""
    if status is not None and 200 <= status < 300:
        return "acked"
    if status is not None and 400 <= status < 500:
        return "refused"
    return "unknown"


@dataclass(frozen=True)
class BoardSpec:
    """A board of the load: its operator and order, and its members' scores before the load."""

    board_id: str
    operator: str  # increment | best | set
    order: str = "desc"
    initial: Mapping[str, Decimal] = field(default_factory=dict)
    # False when a time-windowed board's period changed during the load: the answers then
    # come from two rankings, and two of them may start from the same score.
    one_period: bool = True

    def better(self, a: Decimal, b: Decimal) -> Decimal:
        """The better of two scores under the board's order."""
        return max(a, b) if self.order == "desc" else min(a, b)


@dataclass
class Write:
    """One write as the model counts it: a submission (all the attempts of one key) or an
    event (all the sends of one eventId)."""

    board: str
    member: str
    value: Decimal
    kind: str  # submission | event
    outcome: str = "refused"  # acked | refused | unknown
    answers: list[str] = field(default_factory=list)  # the acknowledged attempts' bodies
    key: str | None = None

    def attempt(self, status: int | None, answer: str | None) -> None:
        result = outcome(status)
        if result == "acked":
            self.outcome = "acked"
            if answer is not None:
                self.answers.append(answer)
        elif result == "unknown" and self.outcome == "refused":
            self.outcome = "unknown"


@dataclass
class Finding:
    board: str
    member: str
    kind: str  # lost | doubled | answer | replay
    detail: str


@dataclass
class ModelCheck:
    members: int = 0
    acked: int = 0  # acknowledged writes (a key's attempts or an eventId's sends count once)
    acked_events: int = 0  # of which events
    refused: int = 0
    unknown: int = 0
    unknown_applied: int = 0  # members whose score shows unknown writes that were applied
    replays: int = 0  # acknowledged attempts of a key after its first one
    findings: list[Finding] = field(default_factory=list)

    @property
    def lost(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "lost"]

    @property
    def doubled(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "doubled"]

    @property
    def ok(self) -> bool:
        return not self.findings


class Model:
    """What every member's score must be, from the load's record of its writes."""

    def __init__(self, boards: Iterable[BoardSpec]) -> None:
        self.boards = {board.board_id: board for board in boards}
        self._keyed: dict[tuple[str, str, str], Write] = {}
        self._events: dict[tuple[str, str], Write] = {}
        self._plain: list[Write] = []

    # ---- building the model ----

    def submission(
        self, board: str, member: str, value: Decimal, key: str | None, status: int | None, answer: str | None
    ) -> None:
        if key is None:
            write = Write(board, member, value, "submission")
            self._plain.append(write)
        else:
            write = self._keyed.setdefault(
                (board, member, key), Write(board, member, value, "submission", key=key)
            )
            if write.value != value:
                raise ValueError(f"key {key} was sent with two values ({write.value}, {value})")
        write.attempt(status, answer)

    def events(self, board: str, events: list[dict[str, Any]], status: int | None) -> None:
        """One batch of events; a batch is accepted or refused whole. Within a batch and
        across batches an eventId counts once."""
        for event in events:
            value = Decimal(str(event["value"]))
            event_id = event.get("eventId")
            if event_id is None:
                write = Write(board, event["memberId"], value, "event")
                self._plain.append(write)
            else:
                write = self._events.setdefault(
                    (board, event_id), Write(board, event["memberId"], value, "event", key=event_id)
                )
                if (write.member, write.value) != (event["memberId"], value):
                    raise ValueError(f"eventId {event_id} was sent for two events")
            write.attempt(status, None)

    def read_records(self, path: Path) -> None:
        """The load's record (bench/locustfile.py): a ``sent`` line before each write goes
        out, a line with its status (and answer) when it comes back. A write sent but never
        answered (the load stopped it) is unknown."""
        sent: dict[int, dict[str, Any]] = {}
        answered: dict[int, dict[str, Any]] = {}
        with path.open() as lines:
            for line in lines:
                record = json.loads(line)
                if "status" in record:
                    answered[record["id"]] = record
                else:
                    sent[record["id"]] = record
        for number, request in sent.items():
            reply = answered.get(number, {})
            status, answer = reply.get("status"), reply.get("answer")
            if request["op"] == "submit":
                value = Decimal(request["value"])
                self.submission(
                    request["board"], request["member"], value, request.get("key"), status, answer
                )
            else:
                self.events(request["board"], decimal_json(request["body"])["events"], status)

    # ---- checking ----

    def writes(self) -> list[Write]:
        return [*self._keyed.values(), *self._events.values(), *self._plain]

    def check(self, final: Mapping[tuple[str, str], Decimal | None]) -> ModelCheck:
        """Compare the scores the service ends with (board, member -> score) with the model."""
        result = ModelCheck()
        per_member: dict[tuple[str, str], list[Write]] = defaultdict(list)
        for write in self.writes():
            per_member[(write.board, write.member)].append(write)
            if write.outcome == "acked":
                result.acked += 1
                result.acked_events += int(write.kind == "event")
                result.replays += max(0, len(write.answers) - 1)
            elif write.outcome == "unknown":
                result.unknown += 1
            else:
                result.refused += 1
        for write in self._keyed.values():
            answers = {
                json.dumps(decimal_json(answer), sort_keys=True, default=str) for answer in write.answers
            }
            if len(answers) > 1:
                result.findings.append(
                    Finding(
                        write.board,
                        write.member,
                        "replay",
                        f"key {write.key} was answered differently: {sorted(answers)}",
                    )
                )
        for board in self.boards.values():
            for member, initial in board.initial.items():
                result.members += 1
                score = final.get((board.board_id, member))
                writes = per_member.get((board.board_id, member), [])
                check = {"increment": _check_increment, "best": _check_best, "set": _check_set}[
                    board.operator
                ]
                findings, applied_unknown = check(board, member, initial, score, writes)
                result.findings.extend(findings)
                result.unknown_applied += int(applied_unknown)
        return result


def _answer(write: Write) -> dict[str, Any] | None:
    return decimal_json(write.answers[0]) if write.answers else None


def _split(writes: list[Write]) -> tuple[list[Write], list[Write]]:
    acked = [w for w in writes if w.outcome == "acked"]
    unknown = [w for w in writes if w.outcome == "unknown"]
    return acked, unknown


def _subset_sums(values: list[Decimal]) -> set[Decimal] | tuple[Decimal, Decimal]:
    """Every sum of a subset of ``values`` (or its bounds, for many values)."""
    if len(values) > SUBSETS_UP_TO:
        return (sum((v for v in values if v < 0), Decimal(0)), sum((v for v in values if v > 0), Decimal(0)))
    sums = {Decimal(0)}
    for value in values:
        sums |= {s + value for s in sums}
    return sums


def _previous_seen_twice(board: BoardSpec, member: str, acked: list[Write]) -> list[Finding]:
    """Two distinct acknowledged submissions that saw the same previous score."""
    seen: dict[Decimal | None, Write] = {}
    findings = []
    for write in acked:
        answer = _answer(write)
        if write.kind != "submission" or answer is None:
            continue
        previous = answer.get("previousScore")
        if previous in seen:
            findings.append(
                Finding(
                    board.board_id,
                    member,
                    "lost",
                    f"two acknowledged submissions ({seen[previous].value}, {write.value}) both "
                    f"started from {previous}",
                )
            )
        seen[previous] = write
    return findings


def _check_increment(
    board: BoardSpec, member: str, initial: Decimal, score: Decimal | None, writes: list[Write]
) -> tuple[list[Finding], bool]:
    acked, unknown = _split(writes)
    findings = []
    for write in acked:
        answer = _answer(write)
        if answer is not None and answer["score"] != (answer["previousScore"] or 0) + write.value:
            findings.append(
                Finding(board.board_id, member, "answer", f"+{write.value} answered {write.answers[0]}")
            )
    if board.one_period:
        findings += _previous_seen_twice(board, member, acked)
    expected = initial + sum((w.value for w in acked), Decimal(0))
    actual = score if score is not None else Decimal(0)
    difference = actual - expected
    if difference == 0:
        return findings, False
    possible = _subset_sums([w.value for w in unknown])
    if isinstance(possible, set):
        explained = difference in possible
    else:
        explained = possible[0] <= difference <= possible[1]
    if explained:
        return findings, True
    kind = "doubled" if difference > 0 else "lost"
    findings.append(
        Finding(
            board.board_id,
            member,
            kind,
            f"score {actual}, model {expected} ({len(acked)} acknowledged writes, {len(unknown)} unknown)",
        )
    )
    return findings, False


def _check_best(
    board: BoardSpec, member: str, initial: Decimal, score: Decimal | None, writes: list[Write]
) -> tuple[list[Finding], bool]:
    acked, unknown = _split(writes)
    findings = []
    for write in acked:
        answer = _answer(write)
        if answer is None:
            continue
        previous = answer["previousScore"]
        wanted = write.value if previous is None else board.better(previous, write.value)
        if answer["score"] != wanted:
            findings.append(
                Finding(
                    board.board_id, member, "answer", f"best of {write.value} answered {write.answers[0]}"
                )
            )
    expected = initial
    for write in acked:
        expected = board.better(expected, write.value)
    if score == expected:
        return findings, False
    if score is not None and any(
        w.value == score and board.better(score, expected) == score for w in unknown
    ):
        return findings, True
    findings.append(
        Finding(board.board_id, member, "lost", f"score {score}, model {expected} (the best acknowledged)")
    )
    return findings, False


def _check_set(
    board: BoardSpec, member: str, initial: Decimal, score: Decimal | None, writes: list[Write]
) -> tuple[list[Finding], bool]:
    acked, unknown = _split(writes)
    findings = []
    values = [w.value for w in (*acked, *unknown)]
    if len(set(values)) != len(values) or initial in values:
        raise ValueError(f"{board.board_id}/{member}: the load sent a set value twice")
    successors: dict[Decimal | None, int] = defaultdict(int)
    for write in acked:
        answer = _answer(write)
        if answer is None:
            continue
        if answer["score"] != write.value:
            findings.append(
                Finding(board.board_id, member, "answer", f"set {write.value} answered {write.answers[0]}")
            )
        successors[answer["previousScore"]] += 1
        if answer["previousScore"] not in {initial, *values}:
            findings.append(
                Finding(
                    board.board_id,
                    member,
                    "answer",
                    f"set {write.value} saw a previous score {answer['previousScore']} no write set",
                )
            )
    for previous, count in successors.items():
        if count > 1:
            findings.append(
                Finding(
                    board.board_id, member, "lost", f"{count} acknowledged writes all replaced {previous}"
                )
            )
    if not acked and not unknown:
        if score != initial:
            findings.append(
                Finding(board.board_id, member, "lost", f"score {score}, never written: {initial}")
            )
        return findings, False
    if score not in values and not (not acked and score == initial):
        findings.append(
            Finding(board.board_id, member, "lost", f"score {score} is no value this member was set to")
        )
        return findings, False
    if score is not None and successors.get(score):
        findings.append(
            Finding(
                board.board_id, member, "lost", f"score {score} was replaced by a later acknowledged write"
            )
        )
    if not unknown:
        for write in acked:
            if write.value != score and not successors.get(write.value):
                findings.append(
                    Finding(
                        board.board_id,
                        member,
                        "lost",
                        f"set {write.value} was acknowledged, is not the score, and no write replaced it",
                    )
                )
    applied_unknown = any(w.value == score for w in unknown) or any(successors.get(w.value) for w in unknown)
    return findings, applied_unknown
