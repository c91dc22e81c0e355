"""`goose-tool-pair-summarize`: Goose's background summarization of old tool-call pairs.

Rule: before each request, when the number of visible tool calls (excluding the current step's)
exceeds `cutoff`, the oldest min(excess, batch) call/result pairs are hidden and each is
replaced, at its place, by one agent-only user message starting `[Historical tool call
summary]`, written by one small model call per pair (sent the call and its result). Every such
batch rewrites history from the oldest newly summarized pair on: on a long tool loop that is
nearly every request, in the middle of the history.

Defaults: cutoff = auto = clamp(window x 0.8 / 10,000, 10, 500), batch = auto =
max(cutoff / 5, 3). Cache class: churn. The research's "current-turn calls" are read as the
latest assistant message's calls: Goose calls each pass of its agent loop (one model response
and its tool calls) a turn, as its max-turns limit counts them without user input; read as
"since the last user message", a long tool loop after one prompt would never summarize a pair.
The summaries are deterministic one-liners (tool, arguments, output size and first line)
standing in for the model's.

Source: block/goose crates/goose/src/context_mgmt/mod.rs (tool-pair summarization; placement
by timestamp UNVERIFIED).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import Bounds, StrategyContext, StrategySpec, register
from replay.strategies._common import GrownView, fresh_call, replace_blocks, strip_calls
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
    # What the rule reads, kept as the history grows:
    view = GrownView()
    answered: dict[str, ToolResultItem] = {}  # call id → its (last) result before the last step
    order: list[str] = []  # the keys of `answered`, in order
    oldest = 0  # order[:oldest] are all summarized
    hidden = 0  # keys of `answered` that are summarized
    scanned = 0  # history[:scanned] was added to `answered`
    last = -1  # position of the last assistant item (-1: none, then all but the last item count)
    by_call: dict[str, list[int]] = {}  # call id → where its call and results are (till summarized)

    def shown(item: Item) -> Item | None:
        if isinstance(item, AssistantItem):
            drop = {b.call_id for b in item.tool_calls if b.call_id in summarized}
            return strip_calls(item, drop)  # type: ignore[arg-type]
        if isinstance(item, ToolResultItem) and item.call_id in summarized:
            return summarized[item.call_id]
        return item

    def grow(history: Sequence[Item]) -> None:
        nonlocal oldest, hidden, scanned, last
        start = view.sync(history)
        if start == 0:
            answered.clear()
            order.clear()
            by_call.clear()
            oldest = hidden = scanned = 0
            last = -1
        for n in range(start, len(history)):
            item = history[n]
            if isinstance(item, AssistantItem):
                last = n
                for b in item.tool_calls:
                    by_call.setdefault(b.call_id, []).append(n)  # type: ignore[arg-type]
            elif isinstance(item, ToolResultItem):
                by_call.setdefault(item.call_id, []).append(n)
            view.append(shown(item))
        end = last if last >= 0 else len(history) - 1  # (only grows)
        for item in history[scanned : max(scanned, end)]:
            if isinstance(item, ToolResultItem):
                if item.call_id not in answered:
                    order.append(item.call_id)
                    hidden += item.call_id in summarized
                answered[item.call_id] = item
        scanned = max(scanned, end)

    def pair(cid: str, history: Sequence[Item]) -> list[Item]:
        """What Goose sends the summarizer of one pair: the call (without the rest of its
        message) and its result."""
        for n in by_call.get(cid, ()):
            item = history[n]
            if isinstance(item, AssistantItem):
                call = next(b for b in item.tool_calls if b.call_id == cid)
                return [replace_blocks(item, (call,)), answered[cid]]
        return [answered[cid]]

    def summarize_old_pairs(history: Sequence[Item], ctx: StrategyContext) -> View:
        nonlocal oldest, hidden
        limit = (
            min(500, max(10, int(ctx.context_window * 0.8 / 10000)))
            if cutoff == "auto"
            else int(cutoff)
        )
        size = max(limit // 5, 3) if batch == "auto" else int(batch)
        grow(history)
        excess = len(order) - hidden - limit
        calls: list[SummarizerCall] = []
        if excess > 0:
            chosen: list[str] = []
            n = oldest
            while len(chosen) < min(excess, size):  # the oldest visible pairs
                if order[n] not in summarized:
                    chosen.append(order[n])
                n += 1
            for cid in chosen:
                result = answered[cid]
                text = pair_summary(result)
                summarized[cid] = UserItem(text, injected=True)
                calls.append(
                    fresh_call(pair(cid, history), GOOSE_PAIR_INSTRUCTION, text, result_chars=None)
                )
            hidden += len(chosen)
            while oldest < len(order) and order[oldest] in summarized:
                oldest += 1
            # A summarized pair's positions are not needed again (its items are shown as
            # summarized when they come back): dropped, not kept until the strategy ends.
            for n in {n for cid in chosen for n in by_call.pop(cid, ())}:
                view.set(n, shown(history[n]))
        events = (
            [RewriteEvent(
                "compaction", f"{counted(len(calls), 'tool pair')} summarized"
            )] if calls else []
        )
        return View(items=view.items(), summarizer_calls=calls, events=events)

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
        bounds={"cutoff": Bounds(low=0, words=("auto",), whole=True),
                "batch": Bounds(low=1, words=("auto",), whole=True)},
        canonical=("goose-tool-pair-summarize",),
        source="block/goose crates/goose/src/context_mgmt/mod.rs",
    )
)
