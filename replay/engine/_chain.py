"""One block table for the sessions of a shared-cache chain (`replay batch`), each session
counting with its own counter.

Cache entries are keyed by chained block ids, so sessions that read each other's prefixes need
one id space: equal blocks, equal ids. But each session renders with the counts fitted on its
own bill (`UnloggedContext.counts`, seen through a `FittedCounter`), exactly as when it is
replayed alone: a text one session's fit sized down is, for that session, a block of another
size. Such a text is therefore interned under its fitted count too (the same text at another
count is another block, whose prefix another session cannot read: its length differs), and
every other text under its content alone, counted by the family's shared counter (the same for
every session).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from replay.render._request import BlockInfos, BlockTable, _BlockIds


class ChainTable(BlockTable):
    """A session's view of its chain's block table: the chain's blocks and ids, the session's
    counter. `ChainTable(counter)` starts a chain's table; `table.view(counter)` gives another
    session (or strategy run) its view of it."""

    def __init__(self, counter: Any) -> None:
        super().__init__(counter)
        self._fitted_ids: dict[int, _BlockIds] = {}
        """Fitted count → block ids, for the texts some session's fit sized (`intern`)."""

    def view(self, counter: Any) -> ChainTable:
        """The same blocks and ids, counted with `counter` where a text is new."""
        other = ChainTable.__new__(ChainTable)
        # The contents, not copies (columns, ids, packed texts and their zlib dictionary: all
        # grow in place); only the counter is the view's own.
        other.__dict__.update(self.__dict__)
        other.counter = counter
        other.blocks = BlockInfos(other)
        return other

    def intern(
        self, kind: str, text: str, starts_message: bool, fixed_tokens: int | None = None
    ) -> int:
        counts = getattr(self.counter, "counts", None)  # a FittedCounter's own counts
        fitted = counts.get(text) if counts and fixed_tokens is None else None
        if fitted is None:
            return super().intern(kind, text, starts_message, fixed_tokens)
        # Interned (and counted, by the session's counter: `fitted`) among the blocks of that
        # count only. The list of blocks is shared, so the id is new across the chain.
        ids, fitted_ids = self._ids, self._fitted_ids.get(fitted)
        if fitted_ids is None:
            fitted_ids = self._fitted_ids[fitted] = _BlockIds()
        self._ids = fitted_ids
        try:
            return super().intern(kind, text, starts_message)
        finally:
            self._ids = ids

    def _id_maps(self) -> Iterable[_BlockIds]:
        return (self._ids, *self._fitted_ids.values())


__all__ = ["ChainTable"]
