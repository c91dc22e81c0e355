"""`openhands-window-on-overflow`: OpenHands' conversation-window condenser (the default).

Rule: nothing happens until a request would not fit the model's window (OpenHands sees a
ContextWindowExceeded error and asks for a condensation). Then the essential events stay —
the first user message (and the system prompt, always sent) — plus the newest half of the
other events; leading observations whose call was dropped are dropped too, and halved again
until the request fits (each refused call raises the overflow again). The forgotten events
stay forgotten; the view grows append-only until the next overflow.

Defaults: none. Events are OpenHands' (`_openhands.py`): each tool call and each result one.
Cache class: freeze-once.

Source: All-Hands-AI/OpenHands openhands/memory/condenser/impl/conversation_window_condenser.py
(controller: CondensationRequest on ContextWindowExceeded).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import StrategyContext, StrategySpec, register
from replay.strategies._common import (
    Forgetting,
    HeadTokens,
    PairedView,
    is_real_user,
    nonempty,
    request_tokens,
)
from replay.strategies._openhands import events_in, tail_length
from replay.strategies._view import Item, RewriteEvent, View


def openhands_window() -> object:
    memory = Forgetting()
    forgotten = memory.forgotten  # history positions forgotten for good
    live = PairedView(lambda n, item: None if n in forgotten else item)
    head = HeadTokens()

    def sent(history: Sequence[Item], ctx: StrategyContext) -> tuple[list[Item], int]:
        """The view of what is remembered, and the tokens of the request sending it."""
        items = live.items()
        view = nonempty(items, history)
        return view, (live.tokens(ctx) + head(ctx) if items else request_tokens(view, ctx))

    def halve_on_overflow(history: Sequence[Item], ctx: StrategyContext) -> View:
        live.sync(history)
        view, size = sent(history, ctx)
        if size <= ctx.context_window:
            return View(items=view)
        # Each refused call raises the overflow again and OpenHands condenses again: halved
        # until the request fits, or nothing is left to drop.
        halvings = 0
        while size > ctx.context_window:
            positions = memory.remembered(len(history))
            first_user = next((n for n in positions if is_real_user(history[n])), None)
            others = [n for n in positions if n != first_user]
            rest = [history[n] for n in others]
            keep = set(others[len(others) - tail_length(rest, max(1, events_in(rest) // 2)) :])
            newly = [n for n in others if n not in keep]
            if not newly:
                break
            memory.forget(newly)
            live.update(history, newly)
            halvings += 1
            view, size = sent(history, ctx)
        if not halvings:  # nothing left to drop: sent as it is (`over_window` says it)
            return View(items=view)
        times = "" if halvings == 1 else f" {halvings} times"
        return View(items=view, events=[RewriteEvent("drop", f"window halved{times} on overflow")])

    return halve_on_overflow


register(
    StrategySpec(
        family="openhands-window-on-overflow",
        pattern=r"openhands-window-on-overflow",
        build=openhands_window,
        cache_class="freeze-once",
        rule="on context-window overflow: keep the first user message + the newest half of the "
        "other events",
        canonical=("openhands-window-on-overflow",),
        source="All-Hands-AI/OpenHands conversation_window_condenser.py",
    )
)
