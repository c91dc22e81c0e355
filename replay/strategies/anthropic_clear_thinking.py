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

from replay.strategies._base import StrategyContext, StrategySpec, register
from replay.strategies._common import replace_blocks
from replay.strategies._view import AssistantItem, Item, RewriteEvent, View


def anthropic_clear_thinking(keep: int | str = 1) -> object:
    def clear_old_thinking(history: Sequence[Item], ctx: StrategyContext) -> View:
        if keep == "all":
            return View(items=list(history))
        with_thinking = [
            n
            for n, i in enumerate(history)
            if isinstance(i, AssistantItem) and any(b.type == "thinking" for b in i.blocks)
        ]
        old = set(with_thinking[: max(0, len(with_thinking) - int(keep))])
        if not old:
            return View(items=list(history))
        items: list[Item] = []
        for n, item in enumerate(history):
            if n in old:
                blocks = tuple(b for b in item.blocks if b.type != "thinking")  # type: ignore[union-attr]
                item = (
                    replace_blocks(item, blocks)
                    if blocks
                    else replace_blocks(  # type: ignore[arg-type]
                        item,
                        (type(item.blocks[0])("text", text=""),),  # type: ignore[union-attr]
                    )
                )
            items.append(item)
        return View(
            items=items, events=[RewriteEvent("clear", f"thinking of {len(old)} turns dropped")]
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
        canonical=("anthropic-clear-thinking-keep-1",),
        source="Anthropic docs: context editing (clear_thinking_20251015)",
    )
)
