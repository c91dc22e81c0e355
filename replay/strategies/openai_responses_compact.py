"""`openai-responses-compact-90pct`: OpenAI Responses API server-side compaction.

Rule: with `context_management.compact_threshold` set, when a request's rendered tokens cross
the threshold a compaction pass runs on the server and emits one opaque (encrypted)
`compaction` item; the client drops the items before it, so later requests send that item plus
what follows.

Defaults: threshold = 90pct (of the window; the API has no default — the user sets it — and 90%
mirrors Codex's limit). Accepts an absolute value too (`openai-responses-compact-200k`).
Cache class: freeze-once. The encrypted item's size is not documented: it is sized like a
summary (the log's if recorded, else the extractive stand-in).

Source: developers.openai.com, API docs, guides/compaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import Bounds, StrategyContext, StrategySpec, register
from replay.strategies._common import (
    Frozen,
    SummarySource,
    forked_call,
    summary_item,
)
from replay.strategies._prompts import SERVER_COMPACTION_INSTRUCTION
from replay.strategies._view import Item, RewriteEvent, View


def threshold_tokens(threshold: int | str, window: int) -> int:
    """`threshold` in tokens: `<N>pct` of the window, else the number itself (a `200k` of the
    name or of `--set` is 200000 by now: the parameter's bounds read it)."""
    text = str(threshold)
    if text.endswith("pct"):
        return window * int(text[:-3]) // 100
    return int(text)


def openai_responses_compact(threshold: int | str = "90pct") -> object:
    state = Frozen()
    summaries = SummarySource()

    def compact_on_server(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = state.view(history)
        if state.request_tokens(history, ctx) < threshold_tokens(threshold, ctx.context_window):
            return View(items=view)
        text, source = summaries.text(ctx, view)
        state.reset([summary_item(text, view, "server" if source != "logged" else source)], history)
        return View(
            items=state.view(history),
            summarizer_calls=[forked_call(view, SERVER_COMPACTION_INSTRUCTION, text)],
            events=[RewriteEvent("compaction", f"{len(view)} items → compaction item")],
        )

    return compact_on_server


register(
    StrategySpec(
        family="openai-responses-compact",
        api="openai",
        pattern=r"openai-responses-compact-(?P<threshold>\d+pct|\d+k?)",
        build=openai_responses_compact,
        cache_class="freeze-once",
        rule="server-side: rendered tokens >= compact_threshold → opaque compaction item; items "
        "before it dropped",
        defaults={"threshold": "90pct"},
        bounds={"threshold": Bounds(low=1, pct=True, whole=True)},
        canonical=("openai-responses-compact-90pct",),
        source="OpenAI docs: guides/compaction (Responses context_management)",
    )
)
