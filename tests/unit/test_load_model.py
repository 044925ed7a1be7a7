"""The load's model (bench/loadmodel.py) finds a lost or doubled write, and allows exactly
what an unanswered one may have done. ``make load`` and tests/e2e/test_load_smoke.py
trust it with the answer "0 lost, 0 doubled", so here it is shown failing on purpose."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from bench.loadmodel import BoardSpec, Model
from bench.loadreport import LoadReport

D = Decimal


def _increment_model() -> Model:
    return Model([BoardSpec("inc", "increment", initial={"a": D(10), "b": D(0)})])


def _submission_answer(score: Decimal, previous: Decimal | None) -> str:
    previous_text = "null" if previous is None else str(previous)
    return f'{{"memberId": "a", "score": {score}, "previousScore": {previous_text}}}'


def _acked(model: Model, value: str, previous: str, key: str | None = None) -> None:
    """An increment of member "a" acknowledged as applied to ``previous``."""
    score = D(previous) + D(value)
    model.submission("inc", "a", D(value), key, 200, _submission_answer(score, D(previous)))


def test_acknowledged_increments_and_events_add_up() -> None:
    # Given two acknowledged submissions and a batch of events, one id sent twice
    model = _increment_model()
    _acked(model, "1.25", "10")
    _acked(model, "2", "11.25")
    model.events("inc", [{"memberId": "a", "value": 3, "eventId": "e1"}, {"memberId": "b", "value": 1}], 202)
    model.events("inc", [{"memberId": "a", "value": 3, "eventId": "e1"}], 202)

    # When the service ends with the sum, each event once
    check = model.check({("inc", "a"): D("16.25"), ("inc", "b"): D(1)})

    # Then nothing is lost or doubled
    assert check.ok, check.findings
    assert (check.members, check.acked) == (2, 4)


@pytest.mark.parametrize(("final", "kind"), [(D("13.25"), "lost"), (D("19.25"), "doubled")])
def test_a_lost_or_doubled_write_is_found(final: Decimal, kind: str) -> None:
    # Given acknowledged writes: 10 + 1.25 + 2 + 3 (event) = 16.25
    model = _increment_model()
    _acked(model, "1.25", "10")
    _acked(model, "2", "11.25")
    model.events("inc", [{"memberId": "a", "value": 3, "eventId": "e1"}], 202)

    # When the event is missing, or counted twice
    check = model.check({("inc", "a"): final, ("inc", "b"): D(0)})

    # Then the model says which
    assert [(f.member, f.kind) for f in check.findings] == [("a", kind)]


def test_a_key_counts_once_and_its_replays_must_answer_the_same() -> None:
    # Given one key acknowledged three times, and the same body replayed once more with
    # another answer
    model = _increment_model()
    for _ in range(3):
        _acked(model, "5", "10", key="k1")
    model.submission("inc", "a", D(5), "k1", 409, '{"code": "Conflict"}')

    # When the score shows the value once
    check = model.check({("inc", "a"): D(15), ("inc", "b"): D(0)})

    # Then it is one write, two replays, and nothing is wrong
    assert check.ok, check.findings
    assert (check.acked, check.replays) == (1, 2)

    # And a replay that answered differently is a finding
    model.submission("inc", "a", D(5), "k1", 200, _submission_answer(D(20), D(15)))
    assert [f.kind for f in model.check({("inc", "a"): D(15), ("inc", "b"): D(0)}).findings] == ["replay"]


def test_two_acknowledged_writes_from_the_same_previous_score_mean_one_was_lost() -> None:
    # Given two increments both answered as if applied to 10
    model = _increment_model()
    _acked(model, "1", "10")
    _acked(model, "2", "10")

    # When the score is what the answers imply for the last one
    check = model.check({("inc", "a"): D(13), ("inc", "b"): D(0)})

    # Then the model calls it a lost write
    assert [f.kind for f in check.findings] == ["lost"]


@pytest.mark.parametrize(("final", "applied"), [(D(10), False), (D(17), True)])
def test_an_unanswered_write_may_be_applied_or_not(final: Decimal, applied: bool) -> None:
    # Given a submission that got no answer (the load stopped it, or a 5xx)
    model = _increment_model()
    model.submission("inc", "a", D(7), None, None, None)
    model.submission("inc", "b", D(4), None, 503, '{"code": "InternalError"}')

    # When it was applied, or not
    check = model.check({("inc", "a"): final, ("inc", "b"): D(0)})

    # Then both are allowed, and counted
    assert check.ok, check.findings
    assert (check.unknown, check.unknown_applied) == (2, int(applied))
    # But not applied twice
    assert [f.kind for f in model.check({("inc", "a"): D(24), ("inc", "b"): D(0)}).findings] == ["doubled"]


def test_a_refused_write_must_change_nothing() -> None:
    # Given a submission answered 400 and a batch of events answered 400
    model = _increment_model()
    model.submission("inc", "a", D(7), None, 400, '{"code": "ValidationError"}')
    model.events("inc", [{"memberId": "b", "value": 2}], 400)

    # When both were applied anyway
    check = model.check({("inc", "a"): D(17), ("inc", "b"): D(2)})

    # Then both show as applied twice over what the model allows
    assert check.refused == 2
    assert sorted(f.kind for f in check.findings) == ["doubled", "doubled"]


def test_best_keeps_the_best_acknowledged_value_under_the_order() -> None:
    # Given lap times (lower is better) from 100: 80 then 90 acknowledged
    model = Model([BoardSpec("best", "best", "asc", initial={"a": D(100)})])
    model.submission("best", "a", D(80), None, 200, _submission_answer(D(80), D(100)))
    model.submission("best", "a", D(90), None, 200, _submission_answer(D(80), D(80)))

    # Then 80 is right, and 90 would mean the better time was lost
    assert model.check({("best", "a"): D(80)}).ok
    assert [f.kind for f in model.check({("best", "a"): D(90)}).findings] == ["lost"]


def test_set_orders_the_writes_by_their_previous_scores() -> None:
    # Given three set writes answered as a chain 0 -> 5 -> 7 -> 6
    def model() -> Model:
        built = Model([BoardSpec("set", "set", initial={"a": D(0)})])
        for value, previous in (("5", "0"), ("7", "5"), ("6", "7")):
            built.submission("set", "a", D(value), None, 200, _submission_answer(D(value), D(previous)))
        return built

    # Then the last one is the score
    assert model().check({("set", "a"): D(6)}).ok
    # And any other score means a write was lost (6 was acknowledged and nothing replaced it)
    assert "lost" in {f.kind for f in model().check({("set", "a"): D(7)}).findings}


def test_the_record_of_a_load_gives_the_same_model(tmp_path: Path) -> None:
    # Given a record as bench/locustfile.py writes it: a keyed submission answered, a batch
    # of events answered, and a submission sent but never answered
    lines = [
        {"id": 1, "op": "submit", "board": "inc", "member": "a", "value": "2.5", "key": "k"},
        {"id": 2, "op": "events", "board": "inc", "body": '{"events": [{"memberId": "b", "value": 0.1}]}'},
        {"id": 3, "op": "submit", "board": "inc", "member": "b", "value": "9", "key": None},
        {"id": 1, "status": 200, "answer": _submission_answer(D("12.5"), D(10))},
        {"id": 2, "status": 202, "answer": '{"accepted": 1}'},
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    # When the model reads it
    model = _increment_model()
    model.read_records(path)
    check = model.check({("inc", "a"): D("12.5"), ("inc", "b"): D("9.1")})

    # Then the exact decimals add up, and the unanswered write counts as applied
    assert check.ok, check.findings
    assert (check.acked, check.unknown, check.unknown_applied) == (2, 1, 1)


def _report(samples: dict[str, list[list[float]]]) -> LoadReport:
    return LoadReport(
        plan_command="make load",
        users=1,
        duration="1s",
        members=1,
        hot=1,
        boards={},
        board_settings={},
        requests={"started": 0, "stopped": 2, "samples": samples},
        model=_increment_model().check({("inc", "a"): D(10), ("inc", "b"): D(0)}),
        settle_seconds=0,
        listings=[],
        checker={},
    )


def test_the_report_fails_on_a_5xx_and_a_409_outside_a_keyed_retry() -> None:
    # Given requests: a keyed submission's 409 (expected), a 429 (documented)
    report = _report({"POST score (key)": [[200, 10], [409, 30]], "GET top": [[200, 5], [429, 7]]})
    # Then the run passes, with each route's percentiles
    assert report.ok, report.failures
    assert [(r.route, r.count, r.p50, r.p99) for r in report.routes] == [
        ("GET top", 2, 5, 7),
        ("POST score (key)", 2, 10, 30),
    ]
    # And a 500, or a 409 for a submission without a key, fails it
    assert not _report({"GET top": [[500, 5]]}).ok
    assert not _report({"POST score": [[409, 5]]}).ok
    assert not _report({"GET rank": [[0, 5]]}).ok  # no answer at all
