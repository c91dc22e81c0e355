"""`opencode-prune-40k-20k`: opencode's pruning of old tool output.

Rule: after each prompt loop (so here: when the next user prompt arrives), walk the history
from the newest message back, skipping the last two user turns; stop at a previous summary.
Every tool result met (except protected tools and failed calls, which opencode keeps as errors
with no output) adds its estimated size (chars/4) to a running total; once the total passes
`protect` (40,000), each further result is a candidate; the walk stops at the first result
already pruned. If the candidates add up to more than `minimum` (20,000), all of them are marked
pruned for good and shown as `[Old tool result content cleared]`.

Defaults: protect = 40,000, minimum = 20,000, protected = (skill,). Cache class: freeze-once
(one rewrite per prune). opencode v1.x runs it by default; the 2026 head makes it opt-in.

Source: sst/opencode (= anomalyco/opencode) packages/opencode/src/session/compaction.ts
(PRUNE_PROTECT, PRUNE_MINIMUM, prune), message-v2.ts (placeholder).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_0, StrategyContext, StrategySpec, register
from replay.strategies._common import ReplacedResults, est, is_real_user
from replay.strategies._prompts import LITERAL_CLEARED
from replay.strategies._view import (
    Item,
    RewriteEvent,
    SummaryItem,
    ToolResultItem,
    View,
    replace_output,
)


def prune_candidates(
    items: Sequence[Item], pruned: set[int], protect: int, protected: Sequence[str]
) -> list[ToolResultItem]:
    """opencode's walk: results beyond the newest `protect` tokens, outside the last 2 turns."""
    turns, total, out = 0, 0, []
    for item in reversed(items):
        if is_real_user(item):
            turns += 1
        if turns < 2:
            continue
        if isinstance(item, SummaryItem):
            break
        # opencode walks `completed` tool parts: an `error` part has no output to clear.
        if isinstance(item, ToolResultItem) and not item.is_error:
            if item.tool_name in protected:
                continue
            if item.event_index in pruned:
                break
            total += est(item.output)
            if total > protect:
                out.append(item)
    return out


def opencode_prune(
    protect: int = 40000, minimum: int = 20000, protected: tuple = ("skill",)
) -> object:
    pruned: set[int] = set()
    view = ReplacedResults(pruned, lambda i: replace_output(i, LITERAL_CLEARED))

    def prune_after_loop(history: Sequence[Item], ctx: StrategyContext) -> View:
        view.sync(history)
        events = []
        if history and is_real_user(history[-1]):
            # the loop that just ended is everything before the new prompt
            end = len(history)
            while end > 0 and is_real_user(history[end - 1]):
                end -= 1
            found = prune_candidates(history[:end], pruned, protect, protected)
            if found and sum(est(i.output) for i in found) > minimum:
                pruned.update(i.event_index for i in found)
                view.update(history, {i.event_index for i in found})
                events.append(RewriteEvent(
                    "prune", f"cleared {counted(len(found), 'old tool result')}"
                ))
        return View(items=view.items(), events=events)

    return prune_after_loop


register(
    StrategySpec(
        family="opencode-prune",
        pattern=r"opencode-prune-(?P<protect>\d+k?)-(?P<minimum>\d+k?)",
        build=opencode_prune,
        cache_class="freeze-once",
        rule="after each prompt loop: outside the last 2 turns, keep the newest 40k tokens of tool "
        "output; clear older results if more than 20k tokens are clearable",
        defaults={"protect": 40000, "minimum": 20000, "protected": ("skill",)},
        bounds={"protect": AT_LEAST_0, "minimum": AT_LEAST_0},
        canonical=("opencode-prune-40k-20k",),
        source="sst/opencode session/compaction.ts, message-v2.ts",
    )
)
