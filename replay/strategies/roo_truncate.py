"""`roo-truncate-keep-first-half`: Roo Code's sliding-window truncation.

Rule: before a request, with prev = the previous request's total tokens plus the token count
of the new items since the last response, when prev > 90 % of the window − max_tokens, the
first message is kept and the oldest half of the rest (an even number of API messages) is
deleted from the stored conversation for good — no notice. Tool results whose call was deleted
go too.

Defaults: max_tokens = 8,192 (ANTHROPIC_DEFAULT_MAX_TOKENS), fraction = 0.5. Cache class:
freeze-once.

Source: RooCodeInc/Roo-Code src/core/sliding-window/index.ts (`truncateConversation`,
`truncateConversationIfNeeded`).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_0, Bounds, StrategyContext, StrategySpec, register
from replay.strategies._common import (
    MessageGroups,
    PairedView,
    reported_tokens,
    since_last_assistant,
)
from replay.strategies._view import Item, RewriteEvent, View


def roo_allowed(window: int, max_tokens: int) -> int:
    return int(window * 0.9) - max_tokens


def roo_deleted(messages: int, fraction: float = 0.5) -> int:
    """How many API messages after the first `truncateConversation` deletes: the fraction of
    the rest, rounded down to an even count (so user and assistant turns stay paired)."""
    k = int((messages - 1) * fraction)
    return k - k % 2


def roo_truncate(max_tokens: int = 8192, fraction: float = 0.5) -> object:
    removed: set[int] = set()  # API-message indexes (of the full history) deleted
    groups = MessageGroups()
    live = PairedView(lambda n, item: None if groups.group_of[n] in removed else item)

    def truncate_half(history: Sequence[Item], ctx: StrategyContext) -> View:
        groups.sync(history)
        live.sync(history)
        view = live.items()
        # Roo counts the new message's tokens (`countTokens`), not a chars/4 estimate.
        prev = reported_tokens(ctx, view, pending=since_last_assistant(history), estimate=False)
        if prev <= roo_allowed(ctx.context_window, max_tokens):
            return View(items=view)
        kept = [g for g in range(len(groups.groups)) if g not in removed]
        k = roo_deleted(len(kept), fraction)
        if k <= 0:
            return View(items=view)
        removed.update(kept[1 : k + 1])
        # Only the positions of the groups just removed keep something else now.
        live.update(history, [pos for g in kept[1 : k + 1] for pos in groups.groups[g]])
        view = live.items()
        return View(items=view, events=[RewriteEvent(
            "drop", f"deleted {counted(k, 'oldest API message')}"
        )])

    return truncate_half


register(
    StrategySpec(
        family="roo-truncate",
        pattern=r"roo-truncate-keep-first-half",
        build=roo_truncate,
        cache_class="freeze-once",
        rule="prev tokens > 90% of window - max_tokens → keep message 0, delete the oldest half of "
        "the rest (even count), for good",
        defaults={"max_tokens": 8192, "fraction": 0.5},
        bounds={"max_tokens": AT_LEAST_0, "fraction": Bounds(low=0, high=1, low_open=True)},
        canonical=("roo-truncate-keep-first-half",),
        source="RooCodeInc/Roo-Code src/core/sliding-window/index.ts",
    )
)
