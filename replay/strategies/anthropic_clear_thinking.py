"""`anthropic-clear-thinking-keep-1`: Anthropic's server-side clearing of thinking blocks
(`clear_thinking_20251015`).

Rule: stateless, on every request: the thinking blocks of all assistant turns but the `keep`
most recent ones that have thinking are dropped (`keep-all` keeps every one). Each new turn with
thinking pushes the previous one out, so the prefix is rewritten near the tail.

Defaults: keep = 1 (the documented default; some models keep all, UNVERIFIED). Cache class:
churn-tail.

Source: platform.claude.com docs, build-with-claude/context-editing.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import Bounds, StrategyContext, StrategySpec, register
from replay.strategies._common import AgingView, replace_blocks
from replay.strategies._view import AssistantItem, Item, RewriteEvent, View


def without_thinking(item: AssistantItem) -> AssistantItem:
    blocks = tuple(b for b in item.blocks if b.type != "thinking")
    if blocks:
        return replace_blocks(item, blocks)
    return replace_blocks(item, (type(item.blocks[0])("text", text=""),))


def anthropic_clear_thinking(keep: int | str = 1) -> object:
    view = AgingView(
        lambda item: isinstance(item, AssistantItem)
        and any(b.type == "thinking" for b in item.blocks)
    )

    def clear_old_thinking(history: Sequence[Item], ctx: StrategyContext) -> View:
        if keep == "all":
            return View(items=list(history))
        newly, old = view.sync(history, int(keep))
        if not old:
            return View(items=list(history))
        for n in newly:
            view.set(n, without_thinking(history[n]))  # type: ignore[arg-type]
        return View(
            items=view.items(), events=[RewriteEvent("clear", f"thinking of {old} turns dropped")]
        )

    return clear_old_thinking


register(
    StrategySpec(
        family="anthropic-clear-thinking",
        pattern=r"anthropic-clear-thinking-keep-(?P<keep>\d+|all)",
        build=anthropic_clear_thinking,
        cache_class="churn-tail",
        rule="server-side, every request: drop the thinking blocks of all but the K most recent "
        "assistant turns with thinking",
        defaults={"keep": 1},
        bounds={"keep": Bounds(low=0, words=("all",))},
        canonical=("anthropic-clear-thinking-keep-1",),
        source="Anthropic docs: context editing (clear_thinking_20251015)",
    )
)
