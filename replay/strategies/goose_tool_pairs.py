"""`goose-tool-pair-summarize`: Goose's background summarization of old tool-call pairs.

Rule: before each request, when the number of visible tool calls (excluding the current step's)
exceeds `cutoff`, the oldest min(excess, batch) call/result pairs are hidden and each is
replaced, at its place, by one agent-only user message starting `[Historical tool call
summary]`, written by one small model call per pair. Every such batch rewrites history from
the oldest newly summarized pair on: on a long tool loop that is nearly every request, in the
middle of the history.

Defaults: cutoff = auto = clamp(window x 0.8 / 10,000, 10, 500), batch = auto =
max(cutoff / 5, 3). Cache class: churn. "Current step" is read as the latest assistant
message's calls; the summaries are deterministic one-liners (tool, arguments, output size and
first line) standing in for the model's.

Source: block/goose crates/goose/src/context_mgmt/mod.rs (tool-pair summarization; placement
by timestamp UNVERIFIED).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import StrategyContext, StrategySpec, register
from replay.strategies._common import fresh_call, strip_calls
from replay.strategies._prompts import GOOSE_PAIR_INSTRUCTION, LITERAL_GOOSE_PAIR_PREFIX
from replay.strategies._summary import describe_arguments
from replay.strategies._view import (
    AssistantItem,
    Item,
    RewriteEvent,
    SummarizerCall,
    ToolResultItem,
    UserItem,
    View,
)


def pair_summary(result: ToolResultItem) -> str:
    first = next((ln.strip() for ln in result.output.splitlines() if ln.strip()), "(empty)")
    status = "failed" if result.is_error else "returned"
    return (
        f"{LITERAL_GOOSE_PAIR_PREFIX} Called {result.tool_name} with "
        f"{describe_arguments(result.arguments)}; it {status} {len(result.output.splitlines())} "
        f"lines ({len(result.output)} chars), starting: {first[:200]}"
    )


def goose_tool_pairs(cutoff: int | str = "auto", batch: int | str = "auto") -> object:
    summarized: dict[str, UserItem] = {}

    def summarize_old_pairs(history: Sequence[Item], ctx: StrategyContext) -> View:
        limit = (
            min(500, max(10, int(ctx.context_window * 0.8 / 10000)))
            if cutoff == "auto"
            else int(cutoff)
        )
        size = max(limit // 5, 3) if batch == "auto" else int(batch)
        last = max((n for n, i in enumerate(history) if isinstance(i, AssistantItem)), default=-1)
        answered = {i.call_id: i for i in history[:last] if isinstance(i, ToolResultItem)}
        visible = [cid for cid in answered if cid not in summarized]
        excess = len(visible) - limit
        calls: list[SummarizerCall] = []
        if excess > 0:
            for cid in visible[: min(excess, size)]:
                result = answered[cid]
                text = pair_summary(result)
                summarized[cid] = UserItem(text, injected=True)
                calls.append(fresh_call([result], GOOSE_PAIR_INSTRUCTION, text))
        items: list[Item] = []
        for item in history:
            if isinstance(item, AssistantItem):
                stripped = strip_calls(
                    item, {b.call_id for b in item.tool_calls if b.call_id in summarized}
                )  # type: ignore[misc]
                if stripped is not None:
                    items.append(stripped)
            elif isinstance(item, ToolResultItem) and item.call_id in summarized:
                items.append(summarized[item.call_id])
            else:
                items.append(item)
        events = (
            [RewriteEvent("compaction", f"{len(calls)} tool pairs summarized")] if calls else []
        )
        return View(items=items, summarizer_calls=calls, events=events)

    return summarize_old_pairs


register(
    StrategySpec(
        family="goose-tool-pair-summarize",
        pattern=r"goose-tool-pair-summarize(?:-(?P<cutoff>\d+))?",
        build=goose_tool_pairs,
        cache_class="churn",
        rule="visible tool calls > cutoff (window x 0.8 / 10k in [10, 500]) → the oldest pairs "
        "become one '[Historical tool call summary]' message each",
        defaults={"cutoff": "auto", "batch": "auto"},
        canonical=("goose-tool-pair-summarize",),
        source="block/goose crates/goose/src/context_mgmt/mod.rs",
    )
)
