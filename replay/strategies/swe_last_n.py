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

from replay.strategies._base import StrategyContext, StrategySpec, register
from replay.strategies._common import is_real_user
from replay.strategies._prompts import LITERAL_SWE_OMITTED
from replay.strategies._view import Item, RewriteEvent, ToolResultItem, View, replace_output


def swe_last_n(n: int = 5, polling: int = 1) -> object:
    def elide_old_outputs(history: Sequence[Item], ctx: StrategyContext) -> View:
        task = next((k for k, i in enumerate(history) if is_real_user(i)), None)
        obs = ([task] if task is not None else []) + [
            k for k, i in enumerate(history) if isinstance(i, ToolResultItem)
        ]
        last = max(0, (len(obs) // max(1, polling)) * max(1, polling) - n)
        elide = set(obs[1:last])
        items: list[Item] = []
        for k, item in enumerate(history):
            if k in elide and isinstance(item, ToolResultItem):
                lines = len(item.output.splitlines())
                item = replace_output(item, LITERAL_SWE_OMITTED.format(lines=lines))
            items.append(item)
        events = [RewriteEvent("clear", f"{len(elide)} outputs elided")] if elide else []
        return View(items=items, events=events)

    return elide_old_outputs


register(
    StrategySpec(
        family="observation-mask-poll",
        pattern=r"observation-mask-keep-(?P<n>\d+)-poll-(?P<polling>\d+)",
        build=swe_last_n,
        cache_class="churn",
        rule="all but the last N observations → 'Old environment output: (L lines omitted)', the "
        "window advanced every P steps (SWE-agent)",
        defaults={"n": 5, "polling": 1},
        canonical=("observation-mask-keep-5-poll-1",),
        source="SWE-agent/SWE-agent sweagent/agent/history_processors.py LastNObservations",
    )
)
