"""`age-truncate-N-keep-K`: the K most recent tool results verbatim, older ones capped to N chars.

A result changes exactly once, when it ages out of the K most recent: a freeze-once rewrite that
breaks the cached prefix at that position (the seed study measured 11k cached tokens vs 18k for
the baseline) but keeps what the agent is reasoning about. Defaults N = 500, K = 3.

Source: the seed study (`age-truncate-500-keep-3`). Cache class: freeze-once.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import AT_LEAST_0, AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import AgingView
from replay.strategies._view import Item, RewriteEvent, ToolResultItem, View, truncate_chars


def age_truncate(chars: int = 500, keep: int = 3) -> object:
    view = AgingView(lambda item: isinstance(item, ToolResultItem))

    def cap_old_results(history: Sequence[Item], ctx: StrategyContext) -> View:
        newly, _ = view.sync(history, keep)
        events: list[RewriteEvent] = []
        for n in newly:
            item = history[n]
            capped = truncate_chars(item, chars)  # type: ignore[arg-type]
            if capped is not item:
                events.append(RewriteEvent("aging", f"capped result of {item.tool_name}"))  # type: ignore[union-attr]
            view.set(n, capped)
        return View(items=view.items(), events=events)

    return cap_old_results


register(
    StrategySpec(
        family="age-truncate",
        pattern=r"age-truncate-(?P<chars>\d+)-keep-(?P<keep>\d+)",
        build=age_truncate,
        cache_class="freeze-once",
        rule="keep the K most recent tool results verbatim; cap older ones to N characters",
        defaults={"chars": 500, "keep": 3},
        bounds={"chars": AT_LEAST_1, "keep": AT_LEAST_0},
        canonical=("age-truncate-500-keep-3",),
        source="seed study (age-truncate-500-keep-3)",
    )
)
