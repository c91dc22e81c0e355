"""`openhands-recent-keep-first-1-max-100`: OpenHands' recent-events condenser.

Rule: every request sends the first `keep_first` events and the last `max_events − keep_first`
events; everything in between is dropped (a call and its result leave together). The kept
window slides every request, so everything after the head is rewritten every time: the worst
case for the cache.

Defaults: keep_first = 1, max_events = 100 (the condenser class defaults to 10). Events are
OpenHands' (`_openhands.py`): the system prompt is the first (all `keep_first` = 1 keeps), each
tool call and each result one. Cache class: churn.

Source: All-Hands-AI/OpenHands openhands/memory/condenser/impl/recent_events_condenser.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_0, AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import AnsweredIds, nonempty, repair_pairs
from replay.strategies._openhands import EventIndex, head_length, tail_length, view_events
from replay.strategies._view import Item, RewriteEvent, View


def openhands_recent(keep_first: int = 1, max_events: int = 100) -> object:
    answered = AnsweredIds()
    by_event = EventIndex()

    def recent_events(history: Sequence[Item], ctx: StrategyContext) -> View:
        by_event.sync(history)
        total = by_event.total()
        if total <= max_events:
            return View(items=list(history))
        head = head_length(history, keep_first)
        tail = tail_length(history, max(1, max_events - keep_first), after=head)
        window = [*history[:head], *history[len(history) - tail :]]
        items = nonempty(repair_pairs(window, history, answered.sync(history)), history)
        forgotten = total - view_events(items)
        if not forgotten:  # the head and the tail met: nothing dropped, nothing rewritten
            return View(items=items)
        return View(items=items, events=[RewriteEvent(
            "drop", f"{counted(forgotten, 'event')} forgotten"
        )])

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
