"""docs/benchmarks.md says which of its sections a later `python -m bench --<part>-only`
measured again, so no figure passes for one of the run the page is dated by."""

from __future__ import annotations

from bench import report


def test_a_page_of_one_run_names_no_later_measurement():
    # Given the results of a full run, as `make bench` writes them
    # When / Then the page adds nothing to its date
    assert report._measured_again({"ranAt": "2026-11-28T19:27:29+00:00"}) == []


def test_sections_measured_again_are_named_with_their_command_and_time():
    # Given results into which the churn and the hot board were measured again
    results = {
        "ranAt": "2026-11-28T19:27:29+00:00",
        "measuredAgain": {"hot": "2026-11-28T22:10:00+00:00", "churn": "2026-11-28T22:01:00+00:00"},
    }
    # When the page's opening is written
    lines = report._measured_again(results)
    # Then it names both, in order, with the command that measured each and when
    assert lines == [
        "",
        "Measured again since, alone on the machine, into the same results: "
        "churn (`python -m bench --churn-only`, 2026-11-28T22:01:00+00:00), "
        "hot (`python -m bench --hot-only`, 2026-11-28T22:10:00+00:00).",
    ]


def test_what_was_measured_apart_is_kept_when_the_page_is_written_again(tmp_path, monkeypatch):
    # Given a page whose end holds figures of commands run apart from `make bench`
    apart = f"{report.APART}\n\n## The count tree's writes\n\n`make bench-treewrites`: 3.5 WCU a far move\n"
    (tmp_path / "benchmarks.md").write_text("# Benchmarks\n\nold tables\n\n" + apart)
    monkeypatch.setattr(report, "plot", lambda results, images: [])
    monkeypatch.setattr(report, "document", lambda results, images, image_dir: "# Benchmarks\n\nnew tables\n")

    # When a run writes the page again
    page = report.write({}, tmp_path)

    # Then the run's tables replace the old, and the part measured apart stays, once
    text = page.read_text()
    assert "new tables" in text
    assert "old tables" not in text
    assert text.endswith(apart)
    assert text.count(report.APART) == 1
