"""`truncate-N`: cap every tool result to N characters, on every turn.

The cap is a pure function of the result, so a result shows the same text on every request once
it is emitted: append-only for the cache, but lossy — the seed study's worst strategy (0/3 passes
at ~6x the baseline cost: the bug sat after character 500 of the file the agent read).
Default N = 500 (characters: the strategy's own rule is in characters).

Source: the seed study (`truncate-500`, the study's lossy control). Cache class: append-only.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import GrownView
from replay.strategies._view import Item, ToolResultItem, truncate_chars


def truncate(chars: int = 500) -> object:
    view = GrownView()  # a result's cap never changes: only new items are capped

    def cap_every_result(history: Sequence[Item], ctx: StrategyContext) -> list[Item]:
        for item in history[view.sync(history) :]:
            view.append(truncate_chars(item, chars) if isinstance(item, ToolResultItem) else item)
        return view.items()

    return cap_every_result


register(
    StrategySpec(
        family="truncate",
        pattern=r"truncate-(?P<chars>\d+)",
        build=truncate,
        cache_class="append-only",
        rule="cap every tool result to N characters on every request",
        defaults={"chars": 500},
        bounds={"chars": AT_LEAST_1},
        canonical=("truncate-500",),
        source="seed study (truncate-500)",
    )
)
