"""`retrieval-top-5`: send the K past steps most relevant to the current one (never shipped).

Rule: every request keeps every real user message, the current step (last assistant message and
its results) and the `top` earlier steps (an assistant message with its tool results) that
share the most words with the current step and the latest user message, in their original
order; every other step is left out. Relevance is a deterministic lexical score (shared words /
sqrt(step words)) standing in for an embedding search. The selection changes with every
request, so the prefix is rewritten almost every turn: the cache-hostile design the articles
mention and no harness ships.

Defaults: top = 5. Cache class: churn.

Source: the seed articles (retrieval of top-k relevant turns, cache-hostile, never shipped).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from replay.strategies._base import StrategyContext, StrategySpec, register
from replay.strategies._common import is_real_user, item_text
from replay.strategies._view import AssistantItem, Item, RewriteEvent, View

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def words(items: Sequence[Item]) -> set[str]:
    return {w.lower() for i in items for w in _WORD.findall(item_text(i)[:20000])}


def retrieval(top: int = 5) -> object:
    def most_relevant(history: Sequence[Item], ctx: StrategyContext) -> View:
        steps: list[list[int]] = []
        for n, item in enumerate(history):
            if isinstance(item, AssistantItem):
                steps.append([n])
            elif not is_real_user(item) and steps:
                steps[-1].append(n)
        if len(steps) <= top + 1:
            return View(items=list(history))
        current = steps[-1]
        last_user = max((n for n, i in enumerate(history) if is_real_user(i)), default=-1)
        query = words(
            [history[n] for n in current] + ([history[last_user]] if last_user >= 0 else [])
        )

        def score(step: list[int]) -> float:
            w = words([history[n] for n in step])
            return len(w & query) / math.sqrt(len(w) or 1)

        ranked = sorted(range(len(steps) - 1), key=lambda s: (-score(steps[s]), -s))[:top]
        keep = {n for s in ranked for n in steps[s]} | set(current)
        keep |= {n for n, i in enumerate(history) if is_real_user(i) or n < (steps[0][0])}
        items = [i for n, i in enumerate(history) if n in keep]
        return View(
            items=items, events=[RewriteEvent("drop", f"kept {len(ranked)} relevant steps")]
        )

    return most_relevant


register(
    StrategySpec(
        family="retrieval",
        pattern=r"retrieval-top-(?P<top>\d+)",
        build=retrieval,
        cache_class="churn",
        rule="keep user messages, the current step and the K most relevant earlier steps "
        "(lexical stand-in for embeddings); re-selected every request",
        defaults={"top": 5},
        canonical=("retrieval-top-5",),
        source="seed articles (retrieval of top-k turns; cache-hostile, never shipped)",
    )
)
