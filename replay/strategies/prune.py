"""`prune-at-12000-keep-3`: the cost article's "prune" — delete chosen old results in one batch.

Rule: when the characters the model would see pass `chars`, every tool result older than the
`keep` newest is replaced by a one-line stub (tool, path, size), in one batch (a result no
longer than its stub stays as it is: the stub would add characters); then the view is frozen
(append-only) until it passes `chars` again. Its price depends on where the first edit
sits: the oldest pruned result, from which the whole suffix is re-billed uncached once.

Defaults: chars = 12,000 (the seed study's compaction threshold, in characters), keep = 3.
Cache class: freeze-once (one `prune` event per batch).

Source: the cost article (prune); thresholds are this project's (the article gives none).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_0, AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import GrownView, path_of
from replay.strategies._view import (
    Item,
    RewriteEvent,
    ToolResultItem,
    View,
    item_chars,
    replace_output,
)


def stub(item: ToolResultItem) -> str:
    path = path_of(item.arguments)
    where = f" of {path}" if path else ""
    return f"[pruned: {item.tool_name} result{where}, {len(item.output)} chars]"


def prune(chars: int = 12000, keep: int = 3) -> object:
    pruned: set[int] = set()
    view = GrownView()
    results: list[int] = []  # positions of the tool results
    by_event: dict[int, list[int]] = {}  # event index → positions of the results that carry it
    examined = 0  # results[:examined] were candidates once: pruned, or never prunable
    total = 0  # characters of the view

    def shown(item: Item) -> Item:
        if isinstance(item, ToolResultItem) and item.event_index in pruned:
            return replace_output(item, stub(item))
        return item

    def prune_in_batches(history: Sequence[Item], ctx: StrategyContext) -> View:
        nonlocal examined, total
        for n in range(view.sync(history), len(history)):
            item = history[n]
            if isinstance(item, ToolResultItem):
                results.append(n)
                by_event.setdefault(item.event_index, []).append(n)
            item = shown(item)
            view.append(item)
            total += item_chars(item)
        events = []
        if total > chars:
            # A result once examined stays unprunable (its stub is not shorter, or its event is
            # pruned already), so only results that became old since are candidates.
            old = min(len(results), max(0, len(results) - keep))
            new = [
                i
                for i in (history[n] for n in results[examined:old])
                if i.event_index not in pruned and len(stub(i)) < len(i.output)  # type: ignore[union-attr]
            ]
            examined = max(examined, old)
            if new:
                pruned.update(i.event_index for i in new)  # type: ignore[union-attr]
                for event_index in {i.event_index for i in new}:  # type: ignore[union-attr]
                    for n in by_event[event_index]:
                        item = shown(history[n])
                        total += item_chars(item) - item_chars(view.shown[n])  # type: ignore[arg-type]
                        view.set(n, item)
                events.append(RewriteEvent("prune", f"pruned {counted(len(new), 'old result')}"))
        return View(items=view.items(), events=events)

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
        bounds={"chars": AT_LEAST_1, "keep": AT_LEAST_0},
        canonical=("prune-at-12000-keep-3",),
        source="cost article (prune); thresholds are this project's",
    )
)
