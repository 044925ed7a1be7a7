"""The progress bar of a long command: done of total, the rate a second, the time left.
It draws on stderr, so that what a command prints on stdout stays clean (``podium export``
to stdout, ``TOKEN=$(...)``); on a terminal only."""

from __future__ import annotations

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from podium_cli.output import errors


class RateColumn(ProgressColumn):
    """``1,234 members/s``: the rate over the last seconds (rich's own estimate)."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.0f} {self.unit}/s", style="progress.data.speed")


def progress_bar(unit: str = "members") -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(unit),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=errors,
        transient=False,
    )
