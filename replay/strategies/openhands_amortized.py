"""`openhands-amortized-100`: OpenHands' amortized-forgetting condenser.

Rule: when the view holds more than `max_size` events, it is cut to the first `keep_first`
events plus the newest `max_size / 2 − keep_first`; the forgotten range is recorded for good,
so the view then grows append-only until it passes `max_size` again (a call and its result are
forgotten together).

Defaults: max_size = 100, keep_first = 1 (the class default is 0). Events are OpenHands'
(`_openhands.py`): the system prompt is the first (all `keep_first` = 1 keeps), each tool call
and each result one. Cache class: freeze-once.

Source: All-Hands-AI/OpenHands openhands/memory/condenser/impl/amortized_forgetting_condenser.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import AT_LEAST_0, Bounds, StrategyContext, StrategySpec, register
from replay.strategies._common import Forgetting, PairedView, nonempty
from replay.strategies._openhands import head_length, tail_length, view_events
from replay.strategies._view import Item, RewriteEvent, View


def openhands_amortized(max_size: int = 100, keep_first: int = 1) -> object:
    memory = Forgetting()
    forgotten = memory.forgotten  # history positions forgotten for good
    live = PairedView(lambda n, item: None if n in forgotten else item)

    def forget_in_batches(history: Sequence[Item], ctx: StrategyContext) -> View:
        live.sync(history)
        view = nonempty(live.items(), history)
        if view_events(view) <= max_size:
            return View(items=view)
        positions = memory.remembered(len(history))
        remembered = [history[n] for n in positions]
        head = head_length(remembered, keep_first)
        tail = tail_length(remembered, max(1, max_size // 2 - keep_first), after=head)
        newly = positions[head : len(positions) - tail]
        if not newly:  # the head and the tail met: nothing to forget, nothing rewritten
            return View(items=view)
        memory.forget(newly)
        live.update(history, newly)
        view = nonempty(live.items(), history)
        return View(items=view, events=[RewriteEvent("drop", "amortized forgetting")])

    return forget_in_batches


register(
    StrategySpec(
        family="openhands-amortized",
        pattern=r"openhands-amortized-(?P<max_size>\d+)(?:-keep-first-(?P<keep_first>\d+))?",
        build=openhands_amortized,
        cache_class="freeze-once",
        rule="view > max events → keep the first k + newest max/2 - k, forget the rest for good",
        defaults={"max_size": 100, "keep_first": 1},
        bounds={"max_size": Bounds(low=2), "keep_first": AT_LEAST_0},
        canonical=("openhands-amortized-100",),
        source="All-Hands-AI/OpenHands amortized_forgetting_condenser.py",
    )
)
