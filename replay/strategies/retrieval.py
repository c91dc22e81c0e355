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
from array import array
from collections.abc import Sequence

import numpy as np

from replay._words import counted
from replay.strategies._base import AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import Seen, is_real_user, item_text
from replay.strategies._view import AssistantItem, Item, RewriteEvent, View

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def item_words(item: Item) -> set[str]:
    """The lower-cased words of an item (of its first 20,000 characters)."""
    return {w.lower() for w in _WORD.findall(item_text(item)[:20000])}


def words(items: Sequence[Item]) -> set[str]:
    return set().union(*(item_words(i) for i in items))


class _Steps:
    """The history cut into steps (an assistant message and the items after it that are not
    real user messages), with each step's word set and an inverted index word → steps, kept as
    the history grows: every item's words are extracted once, and a request's scores are one
    count over the index instead of a word set per step."""

    def __init__(self) -> None:
        self.seen = Seen()
        self.clear()

    def clear(self) -> None:
        self.steps: list[list[int]] = []  # positions of each step's items
        # Only the current step's words and the latest user message's are ever read again:
        # earlier steps live on in `roots` and `postings` (a word set per step was 1-2× the
        # log's size in memory).
        self.words: set[str] = set()  # words of the current (last) step
        self.roots = array("d")  # sqrt(words) of each step (the last one: its current value)
        self.postings: dict[str, array] = {}  # word → the steps that have it, ascending
        self.users: list[int] = []  # positions of the real user messages
        self.user_words: set[str] = set()  # words of the latest real user message

    def grow(self, history: Sequence[Item]) -> None:
        start = self.seen.sync(history)
        if start == 0:
            self.clear()
        for n in range(start, len(history)):
            self._add(n, history[n])

    def _add(self, n: int, item: Item) -> None:
        if isinstance(item, AssistantItem):
            self.steps.append([n])
            self.words = set()
            self.roots.append(1.0)
        elif is_real_user(item):
            self.users.append(n)
            self.user_words = item_words(item)
            return
        elif not self.steps:
            return
        else:
            self.steps[-1].append(n)
        step, known = len(self.steps) - 1, self.words
        for word in item_words(item) - known:
            posting = self.postings.get(word)
            if posting is None:
                posting = self.postings[word] = array("i")  # C ints: half of "q"
            posting.append(step)
            known.add(word)
        self.roots[-1] = math.sqrt(len(known) or 1)

    def overlap(self, query: set[str]) -> np.ndarray:
        """Per step, how many of the `query` words it has."""
        postings = self.postings
        found = b"".join([p for w in query if (p := postings.get(w)) is not None])
        return np.bincount(np.frombuffer(found, dtype=np.intc), minlength=len(self.steps))


def _best(scores: np.ndarray, top: int) -> list[int]:
    """Indexes of the `top` highest scores, highest first, the higher index first among equal
    scores. Only the scores at or above the `top`-th highest are sorted (the rest cannot be
    among them): a request costs O(steps), not a sort of every step."""
    if len(scores) > top:
        kth = np.partition(scores, len(scores) - top)[len(scores) - top]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(len(scores))
    order = np.lexsort((-candidates, -scores[candidates]))
    return candidates[order[:top]].tolist()


def retrieval(top: int = 5) -> object:
    index = _Steps()

    def most_relevant(history: Sequence[Item], ctx: StrategyContext) -> View:
        index.grow(history)
        steps = index.steps
        if len(steps) <= top + 1:
            return View(items=list(history))
        current = steps[-1]
        query = set(index.words)
        if index.users:
            query |= index.user_words
        # score = shared words / sqrt(step words); the best `top` earlier steps, newest first
        # among equal scores
        scores = index.overlap(query)[:-1] / np.frombuffer(index.roots)[:-1]
        ranked = _best(scores, top)
        keep = {n for s in ranked for n in steps[s]} | set(current) | set(index.users)
        keep.update(range(steps[0][0]))
        items = [history[n] for n in sorted(keep)]
        return View(
            items=items, events=[RewriteEvent(
                "drop", f"kept {counted(len(ranked), 'relevant step')}"
            )]
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
        bounds={"top": AT_LEAST_1},
        canonical=("retrieval-top-5",),
        source="seed articles (retrieval of top-k turns; cache-hostile, never shipped)",
    )
)
