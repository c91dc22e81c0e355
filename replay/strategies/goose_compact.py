"""`goose-compact-80pct`: Goose's automatic compaction.

Rule: before a request, when the session's total tokens (last prompt + output) exceed `pct` % of
the window, everything the agent sees is summarized by a fresh request (the messages, tool
results whole, serialized as `[role]: …` into the compaction prompt); the conversation becomes
[user(summary), assistant(continuation text)] + the last user message's text re-sent. The old
messages stay visible in the UI only.

Defaults: pct = 80 (GOOSE_AUTO_COMPACT_THRESHOLD = 0.8). Cache class: freeze-once. Not
simulated: Goose's retries of an overflowing summarizer request without 10/20/50/100 % of the
tool responses.

Source: block/goose crates/goose/src/context_mgmt/mod.rs, prompts/compaction.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import PERCENT, StrategyContext, StrategySpec, register
from replay.strategies._common import (
    Frozen,
    SummarySource,
    fresh_call,
    is_real_user,
    reported_tokens,
    summary_item,
)
from replay.strategies._prompts import GOOSE_INSTRUCTION, LITERAL_GOOSE_CONTINUATION
from replay.strategies._view import AssistantItem, Block, Item, RewriteEvent, UserItem, View


def goose_compact(pct: int = 80) -> object:
    state = Frozen()
    summaries = SummarySource()

    def compact_everything(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = state.view(history)
        if reported_tokens(ctx, view) * 100 <= pct * ctx.context_window:
            return View(items=view)
        text, source = summaries.text(ctx, view)
        last_user = next((i for i in reversed(history) if is_real_user(i)), None)
        head: list[Item] = [
            summary_item(text, view, source),
            AssistantItem(blocks=(Block("text", text=LITERAL_GOOSE_CONTINUATION),)),
        ]
        if last_user is not None:
            head.append(UserItem(last_user.text, injected=True))  # type: ignore[union-attr]
        state.reset(head, history)
        return View(
            items=state.view(history),
            # Goose serializes every message whole (on overflow it drops tool responses instead).
            summarizer_calls=[
                fresh_call(view, GOOSE_INSTRUCTION, text, style="goose", result_chars=None)
            ],
            events=[RewriteEvent("compaction", f"{counted(len(view), 'item')} → summary")],
        )

    return compact_everything


register(
    StrategySpec(
        family="goose-compact",
        pattern=r"goose-compact-(?P<pct>\d+)pct",
        build=goose_compact,
        cache_class="freeze-once",
        rule="usage / window > 80% → summarize everything; [summary, continuation, last user text]",
        defaults={"pct": 80},
        bounds={"pct": PERCENT},
        canonical=("goose-compact-80pct",),
        source="block/goose crates/goose/src/context_mgmt/mod.rs",
    )
)
