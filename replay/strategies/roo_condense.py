"""`roo-condense-keep-first-last-3`: Roo Code's intelligent context condensing.

Rule: with auto-condense on, when the previous request's tokens plus the token count of the new
items since (as roo-truncate's prev) reach `pct` % of the window (or exceed the truncation limit
90 % of the window − max_tokens), a fresh request (Roo's own summary system prompt, the
messages since the last summary but the last `keep`, and "Summarize the conversation so far…")
writes a summary; the conversation sent becomes [first message, summary (assistant)] + the last
`keep` API messages (the tool calls of kept results are kept with them).

Defaults: keep = 3 (N_MESSAGES_TO_KEEP), pct = 100 (the threshold is user-set, 5–100 %; its
default is not verified), max_tokens = 8,192. Cache class: freeze-once.

Source: RooCodeInc/Roo-Code src/core/condense/index.ts (`summarizeConversation`),
sliding-window/index.ts.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import (
    AT_LEAST_0,
    AT_LEAST_1,
    PERCENT,
    StrategyContext,
    StrategySpec,
    register,
)
from replay.strategies._common import (
    Frozen,
    SummarySource,
    message_groups,
    reported_tokens,
    since_last_assistant,
    summary_item,
    valid_start,
)
from replay.strategies._prompts import ROO_INSTRUCTION
from replay.strategies._view import (
    Item,
    RewriteEvent,
    SummarizerCall,
    SummaryItem,
    UserItem,
    View,
)
from replay.strategies.roo_truncate import roo_allowed


def roo_condense(keep: int = 3, pct: int = 100, max_tokens: int = 8192) -> object:
    state = Frozen()
    summaries = SummarySource()

    def condense(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = state.view(history)
        # As roo-truncate: the new message is counted, not estimated.
        prev = reported_tokens(ctx, view, pending=since_last_assistant(history), estimate=False)
        due = prev * 100 >= pct * ctx.context_window or prev > roo_allowed(
            ctx.context_window, max_tokens
        )
        if not due:
            return View(items=view)
        groups = message_groups(view)
        if len(groups) <= keep + 1:
            return View(items=view)
        start = groups[-keep][0]
        while start > 0 and not valid_start(view, start):
            start -= 1  # keep the call of a kept result with it
        first_end = 1  # the first message: the leading user items
        while first_end < len(view) and isinstance(view[first_end], UserItem):
            first_end += 1
        if start <= first_end:
            return View(items=view)
        last_summary = max((n for n, i in enumerate(view) if isinstance(i, SummaryItem)), default=0)
        # Roo summarizes the messages since the last summary but the `keep` last ones, which
        # stay as they are (`messages.slice(0, -N_MESSAGES_TO_KEEP)`).
        since = view[last_summary:start]
        folded = view[first_end:start]
        text, source = summaries.text(ctx, folded)
        call = SummarizerCall(tuple(since), ROO_INSTRUCTION, text, reuse_main_prefix=False)
        head = [*view[:first_end], summary_item(text, folded, source, role="assistant")]
        state.reset([*head, *view[start:]], history)
        return View(
            items=state.view(history),
            summarizer_calls=[call],
            events=[RewriteEvent("compaction", f"condensed to first + summary + last {keep}")],
        )

    return condense


register(
    StrategySpec(
        family="roo-condense",
        pattern=r"roo-condense-keep-first-last-(?P<keep>\d+)(?:-at-(?P<pct>\d+)pct)?",
        build=roo_condense,
        cache_class="freeze-once",
        rule="context % >= threshold (or over the truncation limit) → [first message, summary, "
        "last 3 messages]",
        defaults={"keep": 3, "pct": 100, "max_tokens": 8192},
        bounds={"keep": AT_LEAST_1, "pct": PERCENT, "max_tokens": AT_LEAST_0},
        canonical=("roo-condense-keep-first-last-3",),
        source="RooCodeInc/Roo-Code src/core/condense/index.ts",
    )
)
