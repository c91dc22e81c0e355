"""Token counts fitted per text: a family's counter with some texts counted as the bill showed.

The family `factor` is an average over many texts; one text can tokenize well below it (a
JavaScript file billed at 1.55 tokens per tiktoken token where the family averages 1.725), and a
log can hold text the harness did not send. The engine's fit of unlogged context
(`replay/engine/_unlogged.py`) then sees a request billed short of its replay, and sizes the texts
first sent at that request down to what was billed. Those counts are kept per text and shared by
every strategy of the replay, so an over-counted text carries its own correction and leaves the
prompt with its item when a strategy drops it; a text derived from it (a truncated output, a
summary) is another text, counted with the family factor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replay.tokens._counter import TokenCounter


class FittedCounter:
    """A shared `TokenCounter` seen through per-text counts (`counts`: text → provider-scale
    tokens); every other text, and everything else a counter does, is the shared counter's.

    `counts` is keyed by the text itself: the log's own strings, so the mapping copies nothing
    and a lookup hashes each string once (Python keeps a string's hash). The mapping may grow
    while it is in use (the fit adds to it request by request)."""

    __slots__ = ("base", "counts")

    def __init__(self, base: TokenCounter, counts: Mapping[str, int]) -> None:
        self.base = base
        """The family's shared counter (its memo, ids and family)."""
        self.counts = counts
        """Text → its fitted provider-scale count (overrides the family factor)."""

    def count(self, text: str) -> int:
        """The fitted count of `text`, else the shared counter's (tiktoken × factor)."""
        hit = self.counts.get(text)
        return self.base.count(text) if hit is None else hit

    def __getattr__(self, name: str) -> Any:
        # Everything but `count` is the shared counter's: family, factor, token ids (prefix
        # diffs compare ids, not counts), the memo's release/forget.
        return getattr(self.base, name)


def fitted_counter(
    base: TokenCounter, counts: Mapping[str, int] | None
) -> TokenCounter | FittedCounter:
    """`base` seen through `counts` (the base itself when there are none: no cost per count)."""
    return FittedCounter(base, counts) if counts is not None else base


__all__ = ["FittedCounter", "fitted_counter"]
