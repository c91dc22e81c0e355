"""`opencode-compact-v1`: opencode 1.x compaction (history restarts at the summary).

Rule: after each step, when the last response's input + cache reads + output (cache writes
are not counted) exceed the usable context `window - min(model max output, 32,000)`, the
compaction agent (its own system prompt, no tools) is sent the conversation plus a summary
prompt; the history then restarts at that summary (an assistant message), followed by the
synthetic user message "Continue if you have next steps, …" that opencode adds after an
automatic compaction.

Defaults: output_max = 32,000 (OUTPUT_TOKEN_MAX; the model's own output limit is not in the log).
Cache class: freeze-once.

Source: sst/opencode session/compaction.ts (`isOverflow`, prompt), message-v2.ts
(`filterCompacted`).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import Frozen, SummarySource, reported_tokens, summary_item
from replay.strategies._prompts import LITERAL_OPENCODE_CONTINUE, OPENCODE_V1_INSTRUCTION
from replay.strategies._view import Item, RewriteEvent, SummarizerCall, UserItem, View


def opencode_compact_v1(output_max: int = 32000) -> object:
    state = Frozen()
    summaries = SummarySource()

    def restart_at_summary(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = state.view(history)
        usable = ctx.context_window - min(output_max, 32000)
        # opencode's `isOverflow` adds input + cache.read + output: cache writes are left out,
        # so a turn that wrote most of its prompt to the cache does not trigger.
        if reported_tokens(ctx, view, cache_writes=False) <= usable:
            return View(items=view)
        text, source = summaries.text(ctx, view)
        call = SummarizerCall(tuple(view), OPENCODE_V1_INSTRUCTION, text, reuse_main_prefix=False)
        state.reset(
            [
                summary_item(text, view, source, role="assistant"),
                UserItem(LITERAL_OPENCODE_CONTINUE, injected=True),
            ],
            history,
        )
        return View(
            items=state.view(history),
            summarizer_calls=[call],
            events=[RewriteEvent("compaction", f"{counted(len(view), 'item')} → summary")],
        )

    return restart_at_summary


register(
    StrategySpec(
        family="opencode-compact-v1",
        pattern=r"opencode-compact-v1",
        build=opencode_compact_v1,
        cache_class="freeze-once",
        rule="reported tokens > window - min(max output, 32k) → summary by the compaction agent; "
        "history restarts at the summary + 'Continue…'",
        defaults={"output_max": 32000},
        bounds={"output_max": AT_LEAST_1},
        canonical=("opencode-compact-v1",),
        source="sst/opencode session/compaction.ts isOverflow, message-v2.ts filterCompacted",
    )
)
