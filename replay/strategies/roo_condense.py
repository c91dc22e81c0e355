"""`roo-condense-keep-first-last-3`: Roo Code's intelligent context condensing.

Rule: with auto-condense on, when the previous request's tokens plus the token count of the new
items since (as roo-truncate's prev) reach `pct` % of the window (or exceed the truncation limit
90 % of the window − max_tokens), a fresh request (Roo's own summary system prompt, the
messages since the last summary but the last `keep`, and "Summarize the conversation so far…")
writes a summary; the conversation sent becomes [first message, summary (assistant)] + the last
`keep` API messages. When the first kept message holds tool results, Roo re-attaches their
tool_use blocks to the summary message; here they follow it as an assistant item of those calls
alone (the text of the message that made them is summarized, not kept). When there is nothing
to fold (no message between the first one and the last `keep`), condensing fails, and over the
truncation limit Roo falls back to roo-truncate's deletion of the oldest half.

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
    repair_pairs,
    replace_blocks,
    reported_tokens,
    since_last_assistant,
    summary_item,
    valid_start,
)
from replay.strategies._prompts import ROO_INSTRUCTION
from replay.strategies._view import (
    AssistantItem,
    Item,
    RewriteEvent,
    SummarizerCall,
    SummaryItem,
    UserItem,
    View,
)
from replay.strategies.roo_truncate import roo_allowed, roo_deleted


def roo_condense(keep: int = 3, pct: int = 100, max_tokens: int = 8192) -> object:
    state = Frozen()
    summaries = SummarySource()

    def condense(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = state.view(history)
        # As roo-truncate: the new message is counted, not estimated.
        prev = reported_tokens(ctx, view, pending=since_last_assistant(history), estimate=False)
        over = prev > roo_allowed(ctx.context_window, max_tokens)
        if not (over or prev * 100 >= pct * ctx.context_window):
            return View(items=view)
        groups = message_groups(view)
        first_end = 1  # the first message: the leading user items
        while first_end < len(view) and isinstance(view[first_end], UserItem):
            first_end += 1
        if len(groups) <= keep + 1 or groups[-keep][0] <= first_end:
            # Nothing to fold: Roo's condensing fails, and over the limit it truncates instead.
            return truncate(view, groups, history) if over else View(items=view)
        cut = groups[-keep][0]
        calling = cut
        while calling > 0 and not valid_start(view, calling):
            calling -= 1  # the message that made the calls of kept results
        last_summary = max((n for n, i in enumerate(view) if isinstance(i, SummaryItem)), default=0)
        # Roo summarizes the messages since the last summary but the `keep` last ones, which
        # stay as they are (`messages.slice(0, -N_MESSAGES_TO_KEEP)`), and re-attaches to the
        # summary the tool_use blocks of the kept results: the calls alone, not their message.
        since = view[last_summary:cut]
        folded = view[first_end:cut]
        calls = [
            replace_blocks(i, i.tool_calls)
            for i in view[calling:cut]
            if isinstance(i, AssistantItem) and i.tool_calls
        ]
        text, source = summaries.text(ctx, folded)
        call = SummarizerCall(tuple(since), ROO_INSTRUCTION, text, reuse_main_prefix=False)
        head = [*view[:first_end], summary_item(text, folded, source, role="assistant"), *calls]
        state.reset([*head, *view[cut:]], history)
        return View(
            items=state.view(history),
            summarizer_calls=[call],
            events=[RewriteEvent("compaction", f"condensed to first + summary + last {keep}")],
        )

    def truncate(view: list[Item], groups: list[list[int]], history: Sequence[Item]) -> View:
        deleted = roo_deleted(len(groups))
        if deleted <= 0:
            return View(items=view)
        gone = {n for group in groups[1 : deleted + 1] for n in group}
        kept = repair_pairs([i for n, i in enumerate(view) if n not in gone], history)
        state.reset(kept, history)
        detail = f"nothing to condense: deleted {deleted} oldest API messages"
        return View(items=state.view(history), events=[RewriteEvent("drop", detail)])

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
