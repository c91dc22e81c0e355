"""`anthropic-compact-150k`: Anthropic's server-side compaction (`compact_20260112`).

Rule: when a request's input exceeds `trigger`, the server first summarizes the conversation
(an extra sampling iteration, billed in `usage.iterations`, reading the same cached prefix),
answers from the summary, and returns a compaction block in its response, which the client
appends as part of the assistant's message; later requests still carry the full history but the
API ignores everything before the latest compaction block, so what the model reads is the block
(an assistant turn) plus what follows it.

Defaults: trigger = 150,000 input tokens (the API's minimum is 50,000; not enforced here so
smaller thresholds can be simulated). Cache class: freeze-once.

Source: Anthropic docs, compaction (beta compact-2026-01-12).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import (
    Frozen,
    SummarySource,
    forked_call,
    summary_item,
)
from replay.strategies._prompts import SERVER_COMPACTION_INSTRUCTION
from replay.strategies._view import Item, RewriteEvent, View


def anthropic_compact(trigger: int = 150000) -> object:
    state = Frozen()
    summaries = SummarySource()

    def compact_on_server(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = state.view(history)
        if state.request_tokens(history, ctx) <= trigger:
            return View(items=view)
        text, source = summaries.text(ctx, view)
        # The block is part of the server's response: the client appends it as the assistant's.
        block = summary_item(
            text, view, "server" if source != "logged" else source, role="assistant"
        )
        state.reset([block], history)
        return View(
            items=state.view(history),
            summarizer_calls=[forked_call(view, SERVER_COMPACTION_INSTRUCTION, text)],
            events=[RewriteEvent("compaction", f"{len(view)} items → compaction block")],
        )

    return compact_on_server


register(
    StrategySpec(
        family="anthropic-compact",
        api="anthropic",
        pattern=r"anthropic-compact-(?P<trigger>\d+k?)",
        build=anthropic_compact,
        cache_class="freeze-once",
        rule="server-side: input > trigger → summarize into a compaction block; later requests "
        "ignore everything before it",
        defaults={"trigger": 150000},
        bounds={"trigger": AT_LEAST_1},
        canonical=("anthropic-compact-150k",),
        source="Anthropic docs: compaction (compact_20260112)",
    )
)
