"""`prune-at-12000-keep-3`: the cost article's "prune" — delete chosen old results in one batch.

Rule: when the characters the model would see pass `chars`, every tool result older than the
`keep` newest is replaced by a one-line stub (tool, path, size), in one batch; then the view is
frozen (append-only) until it passes `chars` again. Its price depends on where the first edit
sits: the oldest pruned result, from which the whole suffix is re-billed uncached once.

Defaults: chars = 12,000 (the seed study's compaction threshold, in characters), keep = 3.
Cache class: freeze-once (one `prune` event per batch).

Source: the cost article (prune); thresholds are this project's (the article gives none).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import StrategyContext, StrategySpec, register
from replay.strategies._common import chars as count_chars
from replay.strategies._common import path_of
from replay.strategies._view import Item, RewriteEvent, ToolResultItem, View, replace_output


def stub(item: ToolResultItem) -> str:
    path = path_of(item.arguments)
    where = f" of {path}" if path else ""
    return f"[pruned: {item.tool_name} result{where}, {len(item.output)} chars]"


def prune(chars: int = 12000, keep: int = 3) -> object:
    pruned: set[int] = set()

    def prune_in_batches(history: Sequence[Item], ctx: StrategyContext) -> View:
        def render() -> list[Item]:
            return [
                replace_output(i, stub(i))
                if isinstance(i, ToolResultItem) and i.event_index in pruned
                else i
                for i in history
            ]

        items = render()
        events = []
        if count_chars(items) > chars:
            results = [i for i in history if isinstance(i, ToolResultItem)]
            old = results[: max(0, len(results) - keep)]
            new = [i for i in old if i.event_index not in pruned and len(stub(i)) < len(i.output)]
            if new:
                pruned.update(i.event_index for i in new)
                items = render()
                events.append(RewriteEvent("prune", f"pruned {len(new)} old results"))
        return View(items=items, events=events)

    return prune_in_batches


register(
    StrategySpec(
        family="prune",
        pattern=r"prune-at-(?P<chars>\d+k?)-keep-(?P<keep>\d+)",
        build=prune,
        cache_class="freeze-once",
        rule="when the view passes N chars, stub every tool result but the K newest in one batch; "
        "frozen until it passes N again",
        defaults={"chars": 12000, "keep": 3},
        canonical=("prune-at-12000-keep-3",),
        source="cost article (prune); thresholds are this project's",
    )
)
