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

from replay._words import counted
from replay.strategies._base import AT_LEAST_0, StrategyContext, StrategySpec, register
from replay.strategies._common import GrownView, TokenSums, item_tokens, replace_blocks
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
    # Stateless rule, kept incrementally: the clearable results (all but the `keep` newest
    # non-excluded ones) only grow as the history grows, so `view` holds the history with the
    # current clearable results cleared, updated only where a result became clearable.
    tokens = TokenSums()
    view = GrownView()
    results = 0  # tool results in the history
    eligible: list[int] = []  # positions of the results of non-excluded tools
    examined = 0  # eligible[:examined] are past the `keep` newest
    clearable: list[int] = []  # positions of those whose output is not the placeholder yet
    ids: set[str] = set()  # their call ids: every result (and call) with one is cleared
    by_call: dict[str, list[int]] = {}  # call id → positions of its results and calls

    def cleared(item: Item) -> Item:
        if isinstance(item, ToolResultItem) and item.call_id in ids:
            return replace_output(item, PLACEHOLDER)
        if clear_tool_inputs and isinstance(item, AssistantItem):
            if not any(b.call_id in ids for b in item.tool_calls):
                return item
            blocks = tuple(
                b
                if b.type != "tool_call" or b.call_id not in ids
                else type(b)("tool_call", call_id=b.call_id, name=b.name, arguments={})
                for b in item.blocks
            )
            return replace_blocks(item, blocks)
        return item

    def grow(history: Sequence[Item]) -> None:
        nonlocal results, examined
        start = view.sync(history)
        if start == 0:
            results = examined = 0
            eligible.clear()
            clearable.clear()
            ids.clear()
            by_call.clear()
        for n in range(start, len(history)):
            item = history[n]
            if isinstance(item, ToolResultItem):
                results += 1
                if item.tool_name not in exclude_tools:
                    eligible.append(n)
                by_call.setdefault(item.call_id, []).append(n)
            elif clear_tool_inputs and isinstance(item, AssistantItem):
                for b in item.tool_calls:
                    by_call.setdefault(b.call_id, []).append(n)  # type: ignore[arg-type]
            view.append(cleared(item))
        old = min(len(eligible), max(0, len(eligible) - keep))
        newly: set[str] = set()
        for n in eligible[examined:old]:
            item = history[n]
            if item.output != PLACEHOLDER:  # type: ignore[union-attr]
                clearable.append(n)
                if item.call_id not in ids:  # type: ignore[union-attr]
                    newly.add(item.call_id)  # type: ignore[union-attr]
        examined = max(examined, old)
        ids.update(newly)
        for n in {n for cid in newly for n in by_call[cid]}:
            view.set(n, cleared(history[n]))

    def clear_on_server(history: Sequence[Item], ctx: StrategyContext) -> View:
        grow(history)
        if trigger_tool_uses > 0:
            over = results > trigger_tool_uses
        else:
            over = tokens.request(history, ctx) > trigger
        if not over or not clearable:
            return View(items=list(history))
        if clear_at_least and sum(item_tokens(history[n], ctx) for n in clearable) < clear_at_least:
            return View(items=list(history))
        return View(
            items=view.items(), events=[RewriteEvent(
                "clear", f"{counted(len(ids), 'tool result')} cleared"
            )]
        )

    return clear_on_server


register(
    StrategySpec(
        family="anthropic-clear-tool-uses",
        api="anthropic",
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
        bounds={
            "trigger": AT_LEAST_0,
            "keep": AT_LEAST_0,
            "clear_at_least": AT_LEAST_0,
            "trigger_tool_uses": AT_LEAST_0,
        },
        canonical=("anthropic-clear-tool-uses-100k-keep-3",),
        source="Anthropic docs: context editing (clear_tool_uses_20250919)",
    )
)
