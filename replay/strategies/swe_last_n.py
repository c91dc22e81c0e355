"""`observation-mask-keep-5-poll-1`: SWE-agent's LastNObservations history processor.

Rule: the observations are the task (first user message) followed by every tool result. On
each request, with `last = max(0, floor(len(obs) / polling) x polling − n)`, the observations
`obs[1:last]` show only "Old environment output: ({lines} lines omitted)"; the task is never
elided and the tool call stays. With polling P > 1 the window advances only every P
observations, so the prefix is rewritten once per P steps instead of every step.

Defaults: n = 5, polling = 1. Cache class: churn.

Source: SWE-agent/SWE-agent sweagent/agent/history_processors.py (`LastNObservations`).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import GrownView, is_real_user
from replay.strategies._prompts import LITERAL_SWE_OMITTED
from replay.strategies._view import Item, RewriteEvent, ToolResultItem, View, replace_output


def elided(item: ToolResultItem) -> ToolResultItem:
    return replace_output(item, LITERAL_SWE_OMITTED.format(lines=len(item.output.splitlines())))


def swe_last_n(n: int = 5, polling: int = 1) -> object:
    view = GrownView()
    results: list[int] = []  # positions of the tool results
    task: int | None = None  # position of the first real user message
    shown = (0, 0)  # results[lo:hi] are elided now

    def elide_old_outputs(history: Sequence[Item], ctx: StrategyContext) -> View:
        nonlocal task, shown
        start = view.sync(history)
        if start == 0:
            results.clear()
            task, shown = None, (0, 0)
        for k in range(start, len(history)):
            item = history[k]
            if isinstance(item, ToolResultItem):
                results.append(k)
            elif task is None and is_real_user(item):
                task = k
            view.append(item)
        # obs = [task] + results; obs[1:last] are elided, as a range of `results`
        obs = len(results) + (task is not None)
        last = max(0, (obs // max(1, polling)) * max(1, polling) - n)
        lo = 0 if task is not None else 1
        hi = max(lo, last - 1 if task is not None else last)
        old_lo, old_hi = shown
        restored = (*range(old_lo, min(old_hi, lo)), *range(max(old_lo, hi), old_hi))
        for j in restored:
            view.set(results[j], history[results[j]])  # no longer elided
        newly = (*range(lo, min(hi, old_lo)), *range(max(lo, old_hi), hi))
        for j in newly:
            view.set(results[j], elided(history[results[j]]))  # type: ignore[arg-type]
        shown = (lo, hi)
        return View(items=view.items(), events=_rewrites(len(newly), len(restored)))

    return elide_old_outputs


def _rewrites(elided_now: int, restored: int) -> list[RewriteEvent]:
    """Named where the view changed, as prune and tool-aging do: the window standing still
    (polling P > 1) rewrites nothing."""
    if not (elided_now or restored):
        return []
    shown_again = f", {restored} shown again" if restored else ""
    return [RewriteEvent("clear", f"{counted(elided_now, 'output')} elided{shown_again}")]


register(
    StrategySpec(
        family="observation-mask-poll",
        pattern=r"observation-mask-keep-(?P<n>\d+)-poll-(?P<polling>\d+)",
        build=swe_last_n,
        cache_class="churn",
        rule="all but the last N observations → 'Old environment output: (L lines omitted)', the "
        "window advanced every P steps (SWE-agent)",
        defaults={"n": 5, "polling": 1},
        bounds={"n": AT_LEAST_1, "polling": AT_LEAST_1},
        canonical=("observation-mask-keep-5-poll-1",),
        source="SWE-agent/SWE-agent sweagent/agent/history_processors.py LastNObservations",
    )
)
