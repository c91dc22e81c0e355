"""Progress bars for commands that can take more than a second (rich, on standard error).

Every command draws its bars through these helpers, so they are shown only when standard error
is a terminal and `--quiet` was not given: a pipe, a file or CI gets no bar and no escape codes
(`replay bench` reports its phases as plain lines instead). Colours follow rich's detection
(off when not a terminal, and `NO_COLOR` is honoured).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console

from replay._printable import printable

Progress = Callable[[str, int, int], None]
"""`progress(strategy, done, total)`: the engine's hook (see `ReplayConfig.progress`)."""


def _terminal(quiet: bool, console: Console | None) -> Console | None:
    """The console to draw on (standard error unless given), or None when nothing should be
    drawn: `--quiet`, or not a terminal (a pipe, a file, CI)."""
    console = console or Console(stderr=True)
    return None if quiet or not console.is_terminal else console


@contextmanager
def progress_bar(label: str, quiet: bool = False, console: Console | None = None
                 ) -> Iterator[Progress | None]:
    """Yield a progress callback drawing a transient bar, or None when no bar should show."""
    console = _terminal(quiet, console)
    if console is None:
        yield None
        return
    from rich import progress as rp

    with rp.Progress(
        rp.SpinnerColumn(),
        # No markup: `sliding-10[messages=4]` is a strategy, not a style tag.
        rp.TextColumn("{task.description}", markup=False),
        rp.BarColumn(),
        rp.MofNCompleteColumn(),
        rp.TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        yield _Bar(bar, bar.add_task(label, total=None), label)


class _Bar:
    """`progress_bar`'s callback: the bar counts strategies; `detail` adds how far the current
    one is (its requests, break-even's counterfactual requests), until the next strategy
    starts."""

    def __init__(self, bar: Any, task: Any, label: str) -> None:
        self.bar, self.task, self.label = bar, task, label
        self.description = label

    def __call__(self, name: str, done: int, total: int) -> None:
        self.description = f"{self.label}: {printable(name)}" if name else self.label
        self.bar.update(self.task, total=total, completed=done, description=self.description)

    def detail(self, text: str) -> None:
        self.bar.update(self.task, description=f"{self.description} · {printable(text)}")


@contextmanager
def phase_bars(unit: str, quiet: bool = False, console: Console | None = None,
               units: dict[str, str] | None = None) -> Iterator[Progress | None]:
    """Yield `progress(phase, done, total)` drawing one bar per phase (added at the phase's first
    call, left on screen with its counts), or None when no bar should show: the same rule as
    `progress_bar` (`_terminal`). `unit` names what is counted, `units` what a phase counts
    instead (batch's `group` pass counts folders, not files)."""
    console = _terminal(quiet, console)
    if console is None:
        yield None
        return
    from rich import progress as rp

    with rp.Progress(
        rp.TextColumn("{task.description:<7}", markup=False),
        rp.BarColumn(),
        rp.MofNCompleteColumn(),
        rp.TextColumn("{task.fields[unit]}", markup=False),
        rp.TimeElapsedColumn(),
        rp.TimeRemainingColumn(),
        console=console,
    ) as bar:
        tasks: dict[str, int] = {}

        def update(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                counted = (units or {}).get(phase, unit)
                tasks[phase] = bar.add_task(phase, total=total, unit=counted)
            bar.update(tasks[phase], completed=done, total=total)

        yield update


@contextmanager
def status(message: str, quiet: bool = False, console: Console | None = None) -> Iterator[None]:
    """A spinner for one step whose length is unknown (e.g. rendering a chart)."""
    console = _terminal(quiet, console)
    if console is None:
        yield
        return
    with console.status(message):
        yield
