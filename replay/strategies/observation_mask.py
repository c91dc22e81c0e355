"""`observation-mask-keep-100`: OpenHands' observation-masking condenser.

Rule: on every request, every observation (tool result) more than `window` events from the end
of the view is replaced by a user-role `<MASKED>` message. The masked observation loses its
tool-call id, so OpenHands drops the matching tool call from the assistant message too (call
and result leave together). The masking boundary moves with every new event, so each request
rewrites the history about `window` events back.

Defaults: window = 100 (OpenHands' config default; the condenser class defaults to 5).
Cache class: churn. One history item counts as one event.

Source: All-Hands-AI/OpenHands openhands/memory/condenser/impl/observation_masking_condenser.py,
conversation_memory.py (`_filter_unmatched_tool_calls`).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import StrategyContext, StrategySpec, register
from replay.strategies._common import strip_calls
from replay.strategies._prompts import LITERAL_OPENHANDS_MASKED
from replay.strategies._view import (
    AssistantItem,
    Item,
    RewriteEvent,
    ToolResultItem,
    UserItem,
    View,
)


def observation_mask(window: int = 100) -> object:
    masks: dict[int, UserItem] = {}

    def mask_old_observations(history: Sequence[Item], ctx: StrategyContext) -> View:
        boundary = len(history) - window
        hidden = {i.call_id for i in history[: max(0, boundary)] if isinstance(i, ToolResultItem)}
        items: list[Item] = []
        for item in history:
            if isinstance(item, ToolResultItem) and item.call_id in hidden:
                mask = masks.get(item.event_index)
                if mask is None:
                    mask = masks[item.event_index] = UserItem(
                        LITERAL_OPENHANDS_MASKED, item.event_index, True
                    )
                items.append(mask)
            elif isinstance(item, AssistantItem):
                stripped = strip_calls(
                    item, {b.call_id for b in item.tool_calls if b.call_id in hidden}
                )  # type: ignore[misc]
                if stripped is not None:
                    items.append(stripped)
            else:
                items.append(item)
        events = [RewriteEvent("clear", f"{len(hidden)} observations masked")] if hidden else []
        return View(items=items, events=events)

    return mask_old_observations


register(
    StrategySpec(
        family="observation-mask",
        pattern=r"observation-mask-keep-(?P<window>\d+)",
        build=observation_mask,
        cache_class="churn",
        rule="observations older than the last W events → '<MASKED>' (their tool calls dropped "
        "with them); the boundary moves every turn",
        defaults={"window": 100},
        canonical=("observation-mask-keep-100",),
        source="All-Hands-AI/OpenHands observation_masking_condenser.py",
    )
)
