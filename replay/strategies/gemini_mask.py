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

from collections.abc import Sequence

from replay.strategies._base import StrategyContext, StrategySpec, register
from replay.strategies._common import item_tokens
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

    def mask_old_outputs(history: Sequence[Item], ctx: StrategyContext) -> View:
        last = max(
            (n for n, i in enumerate(history) if isinstance(i, AssistantItem)), default=len(history)
        )
        used, prunable = 0, []
        for item in reversed(history[:last]):
            if not isinstance(item, ToolResultItem) or item.event_index in done:
                continue
            size = item_tokens(item, ctx)
            if used < protect:
                used += size
                continue
            if item.tool_name not in EXEMPT and len(masked(item, preview)) < len(item.output):
                prunable.append((item, size))
        events = []
        if prunable and sum(s for _, s in prunable) >= minimum:
            done.update(i.event_index for i, _ in prunable)
            events.append(RewriteEvent("prune", f"masked {len(prunable)} tool outputs"))
        items = [
            replace_output(i, masked(i, preview))
            if isinstance(i, ToolResultItem) and i.event_index in done
            else i
            for i in history
        ]
        return View(items=items, events=events)

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
        canonical=("gemini-mask-tool-out-50k-30k",),
        source="google-gemini/gemini-cli toolOutputMaskingService.ts",
    )
)
