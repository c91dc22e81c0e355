"""`openhands-recent-keep-first-1-max-100`: OpenHands' recent-events condenser.

Rule: every request sends the first `keep_first` events and the last `max_events − keep_first`
events; everything in between is dropped (a call and its result leave together). The kept
window slides every request, so everything after the head is rewritten every time: the worst
case for the cache.

Defaults: keep_first = 1, max_events = 100 (the condenser class defaults to 10). One history
item counts as one event. Cache class: churn.

Source: All-Hands-AI/OpenHands openhands/memory/condenser/impl/recent_events_condenser.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import AT_LEAST_0, AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import AnsweredIds, nonempty, repair_pairs
from replay.strategies._view import Item, RewriteEvent, View


def openhands_recent(keep_first: int = 1, max_events: int = 100) -> object:
    answered = AnsweredIds()

    def recent_events(history: Sequence[Item], ctx: StrategyContext) -> View:
        if len(history) <= max_events:
            return View(items=list(history))
        tail = max(1, max_events - keep_first)
        window = [*history[:keep_first], *history[-tail:]]
        items = repair_pairs(window, history, answered.sync(history))
        return View(
            items=nonempty(items, history),
            events=[RewriteEvent("drop", f"{len(history) - max_events} events forgotten")],
        )

    return recent_events


register(
    StrategySpec(
        family="openhands-recent",
        pattern=r"openhands-recent-keep-first-(?P<keep_first>\d+)-max-(?P<max_events>\d+)",
        build=openhands_recent,
        cache_class="churn",
        rule="keep the first k events and the last (max - k); the window slides every request",
        defaults={"keep_first": 1, "max_events": 100},
        bounds={"keep_first": AT_LEAST_0, "max_events": AT_LEAST_1},
        canonical=("openhands-recent-keep-first-1-max-100",),
        source="All-Hands-AI/OpenHands recent_events_condenser.py",
    )
)
