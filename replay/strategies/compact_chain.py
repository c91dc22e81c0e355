"""`compact-rotating-at-12000` vs `compact-chained-at-12000`: where successive summaries go.

Rule: when the characters the model would see pass `chars`, everything before the current step
(the latest assistant message and its results stay verbatim) is folded into a summary by one
summarizer call, then the view is frozen until it passes `chars` again.

- `rotating` (Claude Code's way): one summary slot; the next compaction re-summarizes the old
  summary together with the newer items, so every compaction rewrites from the very start.
- `chained`: summaries are appended; a compaction summarizes only the items since the last
  summary, and earlier summaries stay frozen, so the rewrite starts after them (cheaper per
  compaction, but the summaries pile up).

Defaults: chars = 12,000 (the seed study's threshold). Cache class: freeze-once. Summaries:
logged when the run recorded one, else the extractive stand-in (five sections).

Source: the seed articles (rotating compaction as in Claude Code vs chained, frozen summaries).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_1, Bounds, StrategyContext, StrategySpec, register
from replay.strategies._common import (
    Frozen,
    SummarySource,
    forked_call,
    last_assistant,
    summary_item,
)
from replay.strategies._summary import STRUCTURED_INSTRUCTION, summary_message
from replay.strategies._view import Item, RewriteEvent, SummaryItem, View


def compact_chain(mode: str = "rotating", chars: int = 12000) -> object:
    state = Frozen()
    summaries = SummarySource()

    def fold(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = state.view(history)
        if state.chars(history) <= chars:
            return View(items=view)
        cut = last_assistant(history)
        if cut <= state.covered:
            return View(items=view)
        old = [i for i in state.head if isinstance(i, SummaryItem)]
        new = list(history[state.covered : cut])
        replaced = old + new if mode == "rotating" else new
        text, source = summaries.text(ctx, replaced)
        summary = summary_item(summary_message(text), replaced, source)
        head = [summary] if mode == "rotating" else [*old, summary]
        call = forked_call(view[: len(state.head) + len(new)], STRUCTURED_INSTRUCTION, text)
        state.head, state.covered = head, cut
        return View(
            items=state.view(history),
            summarizer_calls=[call],
            events=[RewriteEvent(
                "compaction", f"{mode}: {counted(len(replaced), 'item')} → summary"
            )],
        )

    return fold


register(
    StrategySpec(
        family="compact-chain",
        pattern=r"compact-(?P<mode>rotating|chained)-at-(?P<chars>\d+k?)",
        build=compact_chain,
        cache_class="freeze-once",
        rule="past N chars, fold all but the current step into a summary; rotating re-summarizes "
        "one slot, chained appends frozen summaries",
        defaults={"mode": "rotating", "chars": 12000},
        bounds={"mode": Bounds(words=("rotating", "chained")), "chars": AT_LEAST_1},
        canonical=("compact-rotating-at-12000", "compact-chained-at-12000"),
        source="seed articles (rotating vs chained compaction)",
    )
)
