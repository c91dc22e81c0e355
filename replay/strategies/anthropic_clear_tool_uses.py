"""`anthropic-clear-tool-uses-100k-keep-3`: Anthropic's server-side context editing
(`clear_tool_uses_20250919`).

Rule: stateless, evaluated by the server on every request against the full history the client
sends. When the request's input tokens exceed `trigger` (or, with `trigger_tool_uses` > 0, when
the history holds more tool uses than that), tool results are cleared oldest first — all but
the `keep` newest, skipping tools listed in `exclude_tools` — and replaced by a placeholder.
When `clear_at_least` > 0 and the clearable results add up to fewer tokens than that, nothing
is cleared (a clearing must be worth the cache it breaks). With `clear_tool_inputs`, the
cleared calls' inputs are emptied too. Once the history stays above the trigger, the cleared
boundary slides with each new tool use, so the prefix is rewritten near the tail every turn.

Defaults: trigger = 100,000 input tokens, keep = 3, clear_at_least = 0 (off),
exclude_tools = (), clear_tool_inputs = false, trigger_tool_uses = 0. Cache class: churn-tail.
The placeholder wording is not documented; a short stand-in is used.

Source: platform.claude.com docs, build-with-claude/context-editing (beta
context-management-2025-06-27).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import StrategyContext, StrategySpec, register
from replay.strategies._common import item_tokens, replace_blocks, request_tokens
from replay.strategies._view import (
    AssistantItem,
    Item,
    RewriteEvent,
    ToolResultItem,
    View,
    replace_output,
)

PLACEHOLDER = "[tool result cleared]"


def anthropic_clear_tool_uses(
    trigger: int = 100000,
    keep: int = 3,
    clear_at_least: int = 0,
    exclude_tools: tuple = (),
    clear_tool_inputs: bool = False,
    trigger_tool_uses: int = 0,
) -> object:
    def clear_on_server(history: Sequence[Item], ctx: StrategyContext) -> View:
        results = [i for i in history if isinstance(i, ToolResultItem)]
        if trigger_tool_uses > 0:
            over = len(results) > trigger_tool_uses
        else:
            over = request_tokens(history, ctx) > trigger
        if not over:
            return View(items=list(history))
        clearable = [i for i in results if i.tool_name not in exclude_tools]
        clearable = clearable[: max(0, len(clearable) - keep)]
        clearable = [i for i in clearable if i.output != PLACEHOLDER]
        if not clearable:
            return View(items=list(history))
        if clear_at_least and sum(item_tokens(i, ctx) for i in clearable) < clear_at_least:
            return View(items=list(history))
        ids = {i.call_id for i in clearable}
        items: list[Item] = []
        for item in history:
            if isinstance(item, ToolResultItem) and item.call_id in ids:
                item = replace_output(item, PLACEHOLDER)
            elif clear_tool_inputs and isinstance(item, AssistantItem):
                blocks = tuple(
                    b
                    if b.type != "tool_call" or b.call_id not in ids
                    else type(b)("tool_call", call_id=b.call_id, name=b.name, arguments={})
                    for b in item.blocks
                )
                item = replace_blocks(item, blocks)
            items.append(item)
        return View(items=items, events=[RewriteEvent("clear", f"{len(ids)} tool results cleared")])

    return clear_on_server


register(
    StrategySpec(
        family="anthropic-clear-tool-uses",
        pattern=r"anthropic-clear-tool-uses-(?P<trigger>\d+k?)-keep-(?P<keep>\d+)",
        build=anthropic_clear_tool_uses,
        cache_class="churn-tail",
        rule="server-side, every request: input > trigger → clear all but the K newest tool "
        "results (clear_at_least / exclude_tools / clear_tool_inputs)",
        defaults={
            "trigger": 100000,
            "keep": 3,
            "clear_at_least": 0,
            "exclude_tools": (),
            "clear_tool_inputs": False,
            "trigger_tool_uses": 0,
        },
        canonical=("anthropic-clear-tool-uses-100k-keep-3",),
        source="Anthropic docs: context editing (clear_tool_uses_20250919)",
    )
)
