"""`gemini-mask-tool-out-50k-30k`: Gemini CLI's tool-output masking.

Rule: before each request, walking from the newest tool output back (the current step's outputs
excluded), the first `protect` tokens of unmasked output are protected; the older unmasked
outputs (except skill / ask-user / plan tools) are prunable, and when they add up to at least
`minimum` tokens each one is masked, for good, as
`<tool_output_masked>` + its first and last 250 characters + "Output too large. Full output
available at: {path}". Outputs whose masked form would not be shorter are left alone.

Defaults: protect = 50,000, minimum = 30,000, preview = 250 characters each side. Cache class:
freeze-once (one batch per masking). The saved-file path is a stand-in built from the call id.

Source: google-gemini/gemini-cli toolOutputMaskingService.ts (called every turn from client.ts).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_0, AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import GrownView, item_tokens
from replay.strategies._prompts import LITERAL_GEMINI_MASK
from replay.strategies._view import (
    AssistantItem,
    Item,
    RewriteEvent,
    ToolResultItem,
    View,
    replace_output,
)

EXEMPT = ("skill", "ask_user", "plan", "enter_plan_mode", "exit_plan_mode", "activate_skill")


def masked(item: ToolResultItem, preview: int) -> str:
    out = item.output
    return LITERAL_GEMINI_MASK.format(
        head=out[:preview], tail=out[-preview:], path=f".gemini/tmp/tool-outputs/{item.call_id}.txt"
    )


def gemini_mask(protect: int = 50000, minimum: int = 30000, preview: int = 250) -> object:
    done: set[int] = set()
    # What the walk reads, kept as the history grows (recomputed when the counter changes):
    view = GrownView()  # every item as it shows now
    counter: object = None  # the token counter the sizes were counted with
    results: list[int] = []  # positions of the tool results
    size: dict[int, int] = {}  # position of a result → its tokens
    by_event: dict[int, list[int]] = {}  # event index → positions of the results carrying it
    pending: list[int] = []  # positions of the maskable results not masked yet, in order
    sums: list[int] = [0]  # sums[j]: tokens of pending[:j]
    first = 0  # pending[:first] are masked
    last_assistant = -1

    def render(item: Item) -> Item:
        if isinstance(item, ToolResultItem) and item.event_index in done:
            return replace_output(item, masked(item, preview))
        return item

    def grow(history: Sequence[Item], ctx: StrategyContext) -> None:
        nonlocal counter, first, last_assistant, sums
        start = view.sync(history)
        if start and ctx.count_tokens != counter:
            view.reset()
            start = view.sync(history)
        if start == 0:
            counter, first, last_assistant, sums = ctx.count_tokens, 0, -1, [0]
            for table in (results, size, by_event, pending):
                table.clear()
        for n in range(start, len(history)):
            item = history[n]
            if isinstance(item, ToolResultItem):
                results.append(n)
                by_event.setdefault(item.event_index, []).append(n)
                size[n] = item_tokens(item, ctx)
                if item.event_index in done:
                    item = render(item)
                elif item.tool_name not in EXEMPT and len(masked(item, preview)) < len(item.output):
                    pending.append(n)
                    sums.append(sums[-1] + size[n])
            elif isinstance(item, AssistantItem):
                last_assistant = n
            view.append(item)

    def mask_old_outputs(history: Sequence[Item], ctx: StrategyContext) -> View:
        nonlocal first
        grow(history, ctx)
        last = last_assistant if last_assistant >= 0 else len(history)
        # Walk back from the newest result before the current step: the first `protect` tokens
        # of unmasked output are protected, every older unmasked maskable result is prunable.
        used, k = 0, first
        for j in range(bisect_left(results, last) - 1, -1, -1):
            n = results[j]
            if history[n].event_index in done:  # type: ignore[union-attr]
                continue
            if used < protect:
                used += size[n]
                continue
            k = bisect_right(pending, n, first)
            break
        events = []
        if k > first and sums[k] - sums[first] >= minimum:
            batch = pending[first:k]
            first = k
            newly = {history[n].event_index for n in batch}  # type: ignore[union-attr]
            done.update(newly)
            events.append(RewriteEvent("prune", f"masked {counted(len(batch), 'tool output')}"))
            masked_now = set(batch)
            if any(m not in masked_now for e in newly for m in by_event[e]):
                # another result carries a masked event index: recount from scratch
                view.reset()
                grow(history, ctx)
            else:
                for n in batch:
                    view.set(n, render(history[n]))
        return View(items=view.items(), events=events)

    return mask_old_outputs


register(
    StrategySpec(
        family="gemini-mask-tool-out",
        pattern=r"gemini-mask-tool-out-(?P<protect>\d+k?)-(?P<minimum>\d+k?)",
        build=gemini_mask,
        cache_class="freeze-once",
        rule="protect the newest 50k tokens of tool output (+ the current step); if >= 30k more "
        "are prunable, mask each with a 250-char head/tail preview",
        defaults={"protect": 50000, "minimum": 30000, "preview": 250},
        bounds={"protect": AT_LEAST_0, "minimum": AT_LEAST_0, "preview": AT_LEAST_1},
        canonical=("gemini-mask-tool-out-50k-30k",),
        source="google-gemini/gemini-cli toolOutputMaskingService.ts",
    )
)
