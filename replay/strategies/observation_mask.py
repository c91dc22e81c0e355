"""`observation-mask-keep-100`: OpenHands' observation-masking condenser.

Rule: on every request, every observation (tool result) more than `window` events from the end
of the view is replaced by a user-role `<MASKED>` message. The masked observation loses its
tool-call id, so OpenHands drops the matching tool call from the assistant message too (call
and result leave together). The masking boundary moves with every new event, so each request
rewrites the history about `window` events back.

Defaults: window = 100 (OpenHands' config default; the condenser class defaults to 5).
Cache class: churn. Events are OpenHands' (`_openhands.py`): each tool call and each result
one.

Source: All-Hands-AI/OpenHands openhands/memory/condenser/impl/observation_masking_condenser.py,
conversation_memory.py (`_filter_unmatched_tool_calls`).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import GrownView, strip_calls
from replay.strategies._openhands import EventIndex
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
    view = GrownView()
    hidden: set[str] = set()  # call ids of the results before the boundary
    boundary = 0  # history[:boundary] was scanned for hidden results
    results: dict[str, list[int]] = {}  # call id → positions of its results
    callers: dict[str, list[int]] = {}  # call id → positions of the assistant items calling it
    by_event = EventIndex()

    def mask(item: ToolResultItem) -> UserItem:
        masked = masks.get(item.event_index)
        if masked is None:
            masked = masks[item.event_index] = UserItem(
                LITERAL_OPENHANDS_MASKED, item.event_index, True
            )
        return masked

    def shown(item: Item) -> Item | None:
        if isinstance(item, ToolResultItem) and item.call_id in hidden:
            return mask(item)
        if isinstance(item, AssistantItem):
            return strip_calls(item, {b.call_id for b in item.tool_calls if b.call_id in hidden})  # type: ignore[misc]
        return item

    def mask_old_observations(history: Sequence[Item], ctx: StrategyContext) -> View:
        nonlocal boundary
        for n in range(view.sync(history), len(history)):
            item = history[n]
            if isinstance(item, ToolResultItem):
                results.setdefault(item.call_id, []).append(n)
            elif isinstance(item, AssistantItem):
                for b in item.tool_calls:
                    callers.setdefault(b.call_id, []).append(n)  # type: ignore[arg-type]
            view.append(shown(item))
        # The boundary only moves forward: results passing it hide their call id everywhere.
        by_event.sync(history)
        end = max(boundary, by_event.older_than(window))
        newly = {
            i.call_id
            for i in history[boundary:end]
            if isinstance(i, ToolResultItem) and i.call_id not in hidden
        }
        boundary = end
        hidden.update(newly)
        changed = {n for cid in newly for n in (*results.get(cid, ()), *callers.get(cid, ()))}
        for n in changed:
            view.set(n, shown(history[n]))
        # Named where the view changed, as prune and tool-aging do: the masks already sent
        # rewrite nothing again.
        events = [RewriteEvent(
            "clear", f"{counted(len(newly), 'observation')} masked"
        )] if newly else []
        return View(items=view.items(), events=events)

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
        bounds={"window": AT_LEAST_1},
        canonical=("observation-mask-keep-100",),
        source="All-Hands-AI/OpenHands observation_masking_condenser.py",
    )
)
