"""`openclaw-prune-cache-ttl-5m`: OpenClaw's cache-TTL-aware session pruning.

Rule: pruning only runs when the last model call is older than `ttl` (the provider's cache has
expired, so rewriting costs nothing extra); while the cache is warm, nothing changes. Then,
with W = window x 4 characters and the prunable results those between the first user message
and the third-newest assistant message: below 30 % of W nothing happens; results over 4,000
characters are soft-trimmed to their first and last 1,500 characters (with a size note); if the
context is still at 50 % of W or more and the prunable results hold at least 50,000
characters, they are hard-cleared oldest first (`[Old tool result content cleared]`) until it
drops under 50 %. Trims and clears are kept for the rest of the session.

Defaults: ttl = 5 minutes, keep_assistants = 3, soft_ratio = 0.3, hard_ratio = 0.5,
soft_chars = 4,000, head = tail = 1,500, min_prunable = 50,000. Cache class: freeze-once (only
on a cold cache). The size note's wording is seen only in ports of the pruner (UNVERIFIED).

Source: openclaw/openclaw docs/concepts/session-pruning.md (mode cache-ttl; default off);
pruner logic per public ports.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import StrategyContext, StrategySpec, register
from replay.strategies._common import chars, is_real_user
from replay.strategies._prompts import LITERAL_CLEARED, LITERAL_OPENCLAW_TRIM_NOTE
from replay.strategies._view import (
    AssistantItem,
    Item,
    RewriteEvent,
    ToolResultItem,
    View,
    replace_output,
)


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

    def render(history: Sequence[Item]) -> list[Item]:
        return [
            replace_output(i, shown[i.event_index])
            if isinstance(i, ToolResultItem) and i.event_index in shown
            else i
            for i in history
        ]

    def prune_when_cold(history: Sequence[Item], ctx: StrategyContext) -> View:
        items = render(history)
        warm = ctx.previous_ts is not None and (ctx.ts - ctx.previous_ts).total_seconds() < ttl * 60
        width = ctx.context_window * 4
        if warm or chars(items) < soft_ratio * width:
            return View(items=items)
        first_user = next((n for n, i in enumerate(history) if is_real_user(i)), 0)
        assistants = [n for n, i in enumerate(history) if isinstance(i, AssistantItem)]
        if len(assistants) < keep_assistants:
            return View(items=items)
        cutoff = assistants[-keep_assistants]
        prunable = [
            n for n in range(first_user + 1, cutoff) if isinstance(history[n], ToolResultItem)
        ]
        changed = 0
        for n in prunable:
            item = items[n]
            if len(item.output) > soft_chars and item.output != LITERAL_CLEARED:  # type: ignore[union-attr]
                out = item.output  # type: ignore[union-attr]
                note = LITERAL_OPENCLAW_TRIM_NOTE.format(head=head, tail=tail, total=len(out))
                shown[history[n].event_index] = out[:head] + "\n...\n" + out[-tail:] + note  # type: ignore[union-attr]
                changed += 1
        items = render(history)
        if chars(items) >= hard_ratio * width and chars(items[n] for n in prunable) >= min_prunable:
            for n in prunable:
                if chars(items) < hard_ratio * width:
                    break
                if items[n].output != LITERAL_CLEARED:  # type: ignore[union-attr]
                    shown[history[n].event_index] = LITERAL_CLEARED  # type: ignore[union-attr]
                    changed += 1
                    items = render(history)
        events = (
            [RewriteEvent("prune", f"{changed} results trimmed or cleared (cold cache)")]
            if changed
            else []
        )
        return View(items=items, events=events)

    return prune_when_cold


register(
    StrategySpec(
        family="openclaw-prune-cache-ttl",
        pattern=r"openclaw-prune-cache-ttl-(?P<ttl>\d+)m",
        build=openclaw_prune,
        cache_class="freeze-once",
        rule="only when the cache is cold (last call > ttl ago): soft-trim big old tool results, "
        "hard-clear oldest while the context is >= 50% of the window",
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
        canonical=("openclaw-prune-cache-ttl-5m",),
        source="openclaw/openclaw docs/concepts/session-pruning.md",
    )
)
