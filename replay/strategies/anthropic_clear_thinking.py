"""`anthropic-clear-thinking-keep-1`: Anthropic's server-side clearing of thinking blocks
(`clear_thinking_20251015`).

Rule: on every request, the thinking blocks of all assistant turns but the `keep` most recent
ones that have thinking are dropped (`keep-all` keeps every one). A turn is what answers one
real user message: every assistant message of its tool loop (the API needs the thinking of the
loop in progress, and counts turns the way it strips thinking at a new user message). Each new
turn with thinking pushes the previous one out, so the prefix is rewritten near the tail, once
per user turn (until 2026-12-05 every assistant message counted as a turn: the thinking of the
step before was dropped at every step of a tool loop, 55 prefix breaks on the entire-bmad
sample where its 28 user turns with thinking make 28).

Defaults: keep = 1 (the documented default; some models keep all, UNVERIFIED). Cache class:
freeze-once (a rewrite at each new user turn with thinking, append-only within a turn; the
research lists it as churn-tail, counting each assistant message as a turn).

Source: platform.claude.com docs, build-with-claude/context-editing.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import Bounds, StrategyContext, StrategySpec, register
from replay.strategies._common import GrownView, is_real_user, replace_blocks
from replay.strategies._view import AssistantItem, Item, RewriteEvent, View


def without_thinking(item: AssistantItem) -> AssistantItem:
    blocks = tuple(b for b in item.blocks if b.type != "thinking")
    if blocks:
        return replace_blocks(item, blocks)
    return replace_blocks(item, (type(item.blocks[0])("text", text=""),))


def anthropic_clear_thinking(keep: int | str = 1) -> object:
    view = GrownView()
    turns: list[list[int]] = []  # per user turn, positions of its assistant items with thinking
    cleared: list[int] = []  # per user turn, how many of those have lost their thinking

    def clear_old_thinking(history: Sequence[Item], ctx: StrategyContext) -> View:
        if keep == "all":
            return View(items=list(history))
        start = view.sync(history)
        if start == 0:
            turns.clear()
            cleared.clear()
        for n in range(start, len(history)):
            item = history[n]
            view.append(item)
            if is_real_user(item) or not turns:
                turns.append([])
                cleared.append(0)
            if isinstance(item, AssistantItem) and any(b.type == "thinking" for b in item.blocks):
                turns[-1].append(n)
        with_thinking = [t for t, turn in enumerate(turns) if turn]
        newly = 0  # turns that lose thinking now (keep = 0: the turn in progress, step by step)
        for t in with_thinking[: max(0, len(with_thinking) - int(keep))]:
            if cleared[t] < len(turns[t]):
                for n in turns[t][cleared[t]:]:
                    view.set(n, without_thinking(history[n]))  # type: ignore[arg-type]
                cleared[t] = len(turns[t])
                newly += 1
        if not newly:
            return View(items=view.items())
        event = RewriteEvent("clear", f"thinking of {counted(newly, 'turn')} dropped")
        return View(items=view.items(), events=[event])

    return clear_old_thinking


register(
    StrategySpec(
        family="anthropic-clear-thinking",
        api="anthropic",
        pattern=r"anthropic-clear-thinking-keep-(?P<keep>\d+|all)",
        build=anthropic_clear_thinking,
        cache_class="freeze-once",
        rule="server-side, every request: drop the thinking blocks of all but the K most recent "
        "assistant turns with thinking (a turn: the answer to one user message, tool loop "
        "included)",
        defaults={"keep": 1},
        bounds={"keep": Bounds(low=0, words=("all",))},
        canonical=("anthropic-clear-thinking-keep-1",),
        source="Anthropic docs: context editing (clear_thinking_20251015)",
    )
)
