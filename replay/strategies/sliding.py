"""`sliding-N`: send only the last N messages (`sliding-N-pin-first` also keeps the first user
message: the first one the user wrote, not one the harness injected). The window start moves
every turn, so every request rewrites its prefix: the cache-hostile extreme. The window never
starts on a tool result whose call it dropped.

Defaults: N = 10. Source: the seed articles (the cache-hostile sliding window). Cache class:
churn.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice

from replay._words import counted
from replay.strategies._base import AT_LEAST_1, Bounds, StrategyContext, StrategySpec, register
from replay.strategies._common import is_real_user, valid_start
from replay.strategies._view import Item, RewriteEvent, UserItem, View


def sliding(messages: int = 10, modifier: str | None = None) -> object:
    pin_first = modifier == "pin-first"

    def last_messages(history: Sequence[Item], ctx: StrategyContext) -> View:
        start = max(0, len(history) - messages)
        while start > 0 and not valid_start(history, start):
            start -= 1  # widen to the call: a result without its call is an invalid request
        window = list(history[start:])
        events = [RewriteEvent(
            "drop", f"dropped {counted(start, 'oldest item')}"
        )] if start > 0 else []
        if pin_first and start > 0:
            # The task, not the instructions a harness injected as the first user message
            # (Codex's permissions, AGENTS.md): those only when no real prompt is there, in the
            # dropped items nor in the window (a task still in the window needs no pin).
            dropped = list(islice(history, start))
            first = next(filter(is_real_user, dropped), None)
            if first is None and not any(map(is_real_user, window)):
                first = next((i for i in dropped if isinstance(i, UserItem)), None)
            if first is not None:
                window.insert(0, first)
        return View(items=window, events=events)

    return last_messages


register(
    StrategySpec(
        family="sliding",
        pattern=r"sliding-(?P<messages>\d+)(?:-(?P<modifier>pin-first))?",
        build=sliding,
        cache_class="churn",
        rule="send only the last N messages (optionally pinning the first user message)",
        defaults={"messages": 10},
        bounds={"messages": AT_LEAST_1, "modifier": Bounds(words=("pin-first",))},
        canonical=("sliding-10", "sliding-10-pin-first"),
        source="seed articles (sliding window, the cache-hostile baseline)",
    )
)
