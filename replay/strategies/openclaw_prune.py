"""`openclaw-prune-cache-ttl-5m`: OpenClaw's cache-TTL-aware session pruning.

Rule: pruning only runs for Claude models (the mode is stated on the session's last Anthropic
call: it is made for Anthropic's cache), and only when the last model call is `ttl` or more ago
(the provider's cache has expired, so rewriting costs nothing extra); while the cache is warm,
nothing changes. Then, with W = window x 4 characters and the prunable results those between the
first user message and the third-newest assistant message: below 30 % of W nothing happens;
results over 4,000 characters are soft-trimmed to their first and last 1,500 characters (with a
size note); if the context is still at 50 % of W or more and the prunable results hold at least
50,000 characters, they are hard-cleared oldest first (`[Old tool result content cleared]`)
until it drops under 50 %. Trims and clears are kept for the rest of the session.

Defaults: ttl = 5 minutes, keep_assistants = 3, soft_ratio = 0.3, hard_ratio = 0.5,
soft_chars = 4,000, head = tail = 1,500, min_prunable = 50,000. Cache class: freeze-once (only
on a cold cache). The size note's wording is seen only in ports of the pruner (UNVERIFIED).

Source: openclaw/openclaw docs/concepts/session-pruning.md (mode cache-ttl; default off);
pruner logic per public ports.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_0, FRACTION, StrategyContext, StrategySpec, register
from replay.strategies._common import GrownView, is_real_user
from replay.strategies._prompts import LITERAL_CLEARED, LITERAL_OPENCLAW_TRIM_NOTE
from replay.strategies._view import (
    AssistantItem,
    Item,
    RewriteEvent,
    ToolResultItem,
    View,
    item_chars,
    replace_output,
)


def _anthropic(model: str) -> bool:
    """A Claude model, through the Claude API or another route (OpenRouter `anthropic/…`,
    Bedrock `anthropic.…`, Vertex): the calls OpenClaw's cache-TTL pruning is active for."""
    return "claude" in model.lower()


def openclaw_prune(
    ttl: int = 5,
    keep_assistants: int = 3,
    soft_ratio: float = 0.3,
    hard_ratio: float = 0.5,
    soft_chars: int = 4000,
    head: int = 1500,
    tail: int = 1500,
    min_prunable: int = 50000,
) -> object:
    shown: dict[int, str] = {}  # event index → what the result shows now
    # What the rule reads, kept up to date as the history grows instead of recomputed:
    view = GrownView()  # every item as it shows now
    total = 0  # characters of the view
    results: list[int] = []  # positions of the tool results
    by_event: dict[int, list[int]] = {}  # event index → positions of the results carrying it
    assistants: list[int] = []  # positions of the assistant items
    first_user: int | None = None  # position of the first real user message

    def render(item: Item) -> Item:
        if isinstance(item, ToolResultItem) and item.event_index in shown:
            return replace_output(item, shown[item.event_index])
        return item

    def rerender(history: Sequence[Item], event_indexes: Iterable[int]) -> None:
        nonlocal total
        for event_index in event_indexes:
            for n in by_event[event_index]:
                item = render(history[n])
                total += item_chars(item) - item_chars(view.shown[n])  # type: ignore[arg-type]
                view.set(n, item)

    def grow(history: Sequence[Item]) -> None:
        nonlocal total, first_user
        start = view.sync(history)
        if start == 0:
            results.clear()
            by_event.clear()
            assistants.clear()
            total, first_user = 0, None
        for n in range(start, len(history)):
            item = history[n]
            if isinstance(item, ToolResultItem):
                results.append(n)
                by_event.setdefault(item.event_index, []).append(n)
            elif isinstance(item, AssistantItem):
                assistants.append(n)
            elif first_user is None and is_real_user(item):
                first_user = n
            item = render(item)
            view.append(item)
            total += item_chars(item)

    def prune_when_cold(history: Sequence[Item], ctx: StrategyContext) -> View:
        grow(history)
        warm = ctx.previous_ts is not None and (ctx.ts - ctx.previous_ts).total_seconds() < ttl * 60
        if warm or not _anthropic(ctx.model):
            return View(items=view.items())
        width = ctx.context_window * 4
        if total < soft_ratio * width:
            return View(items=view.items())
        first = first_user if first_user is not None else 0
        if len(assistants) < keep_assistants:
            return View(items=view.items())
        # No assistant message protected: every result after the first user message may go
        # (`assistants[-0]` would be the first one, protecting everything).
        cutoff = assistants[-keep_assistants] if keep_assistants else len(history)
        prunable = results[bisect_right(results, first) : bisect_left(results, cutoff)]
        changed = 0
        trimmed: list[int] = []
        for n in prunable:
            item = history[n]
            # A result trimmed or cleared already stays so: trimming its trim again (a
            # `soft_chars` below the trim's size) rewrote it at every cold request.
            if item.event_index in shown:  # type: ignore[union-attr]
                continue
            out = item.output  # type: ignore[union-attr]
            if len(out) > soft_chars and out != LITERAL_CLEARED:
                note = LITERAL_OPENCLAW_TRIM_NOTE.format(head=head, tail=tail, total=len(out))
                # `out[len(out) - tail:]`: `out[-0:]` is all of it (tail=0 kept the whole)
                shown[item.event_index] = (  # type: ignore[union-attr]
                    out[:head] + "\n...\n" + out[len(out) - tail :] + note
                )
                trimmed.append(item.event_index)  # type: ignore[union-attr]
                changed += 1
        rerender(history, dict.fromkeys(trimmed))
        if (
            total >= hard_ratio * width
            and sum(item_chars(view.shown[n]) for n in prunable) >= min_prunable  # type: ignore[misc]
        ):
            for n in prunable:
                if total < hard_ratio * width:
                    break
                if view.shown[n].output != LITERAL_CLEARED:  # type: ignore[union-attr]
                    shown[history[n].event_index] = LITERAL_CLEARED  # type: ignore[union-attr]
                    changed += 1
                    rerender(history, (history[n].event_index,))  # type: ignore[union-attr]
        events = (
            [RewriteEvent("prune", f"{counted(changed, 'result')} trimmed or cleared (cold cache)")]
            if changed
            else []
        )
        return View(items=view.items(), events=events)

    return prune_when_cold


register(
    StrategySpec(
        family="openclaw-prune-cache-ttl",
        pattern=r"openclaw-prune-cache-ttl-(?P<ttl>\d+)m",
        build=openclaw_prune,
        cache_class="freeze-once",
        rule="Claude models only, when the cache is cold (last call ttl or more ago): soft-trim "
        "big old tool results, hard-clear oldest while the context is >= 50% of the window",
        defaults={
            "ttl": 5,
            "keep_assistants": 3,
            "soft_ratio": 0.3,
            "hard_ratio": 0.5,
            "soft_chars": 4000,
            "head": 1500,
            "tail": 1500,
            "min_prunable": 50000,
        },
        bounds={
            "ttl": AT_LEAST_0,
            "keep_assistants": AT_LEAST_0,
            "soft_ratio": FRACTION,
            "hard_ratio": FRACTION,
            "soft_chars": AT_LEAST_0,
            "head": AT_LEAST_0,
            "tail": AT_LEAST_0,
            "min_prunable": AT_LEAST_0,
        },
        canonical=("openclaw-prune-cache-ttl-5m",),
        source="openclaw/openclaw docs/concepts/session-pruning.md",
    )
)
