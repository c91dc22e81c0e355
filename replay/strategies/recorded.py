"""`recorded`: what the agent actually sent — the log's own history with its own compactions.

Every compaction the log recorded replaces the events it names (`replaces`) with the message
that stood in for them (the logged summary as the harness sent it: as it is, in pi's wrapper,
as the assistant's for opencode; nothing more when the log holds that message as an event of
its own, as Codex's replacement history does) from the request after it on; a tool result the
harness cleared (`cleared_at`: opencode's pruning) shows `[Old tool result content cleared]`
in the requests sent from then on; everything else is sent as logged. This is the reference
that `fidelity` compares with the provider's bill and that recommendations are measured against.
For a log without compactions or cleared results it equals `baseline`.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from replay._words import counted
from replay.strategies._base import StrategyContext, StrategySpec, register
from replay.strategies._common import Seen
from replay.strategies._prompts import LITERAL_CLEARED
from replay.strategies._view import (
    Item,
    RewriteEvent,
    SummaryItem,
    ToolResultItem,
    View,
    replace_output,
)


@dataclass(frozen=True)
class LoggedCompaction:
    """A compaction from the log, with the history positions it replaced resolved."""

    summary: str
    """The summary text the agent's model wrote."""
    replaced: frozenset[int]
    """Event indexes of the replaced events (all earlier events of the thread when the log
    does not list them)."""
    event_index: int
    """Where the compaction happened in the log."""
    message: str = ""
    """The message later requests saw in place of the replaced events ("": none of its own)."""
    role: Literal["user", "assistant"] = "user"
    """Role of that message."""

    @cached_property
    def start(self) -> int:
        """The lowest event index it replaced (its own when it names none): where its summary
        sits."""
        return min(self.replaced, default=self.event_index)


def shown_cleared(items: Sequence[Item], cleared: Container[int]) -> list[Item]:
    """`items` with the tool results at these event indexes shown as the harness sent them once
    it had cleared them (`ToolResult.cleared_at`)."""
    return [
        replace_output(i, LITERAL_CLEARED)
        if isinstance(i, ToolResultItem) and i.event_index in cleared
        else i
        for i in items
    ]


def surviving(compactions: Sequence[LoggedCompaction]) -> list[LoggedCompaction]:
    """The compactions whose summary is still sent: a later compaction that replaced the place
    where an earlier summary sat has summarised that summary too. One pass from the last, with
    the lowest position any later compaction replaced from (a pair-by-pair check was quadratic
    in the compactions, each time one was added)."""
    kept: list[LoggedCompaction] = []
    lowest_later = None  # the lowest start of the compactions after the one looked at
    for c in sorted(compactions, key=lambda c: c.event_index, reverse=True):
        if lowest_later is None or lowest_later > c.event_index:
            kept.append(c)
        lowest_later = c.start if lowest_later is None else min(lowest_later, c.start)
    kept.reverse()
    return kept


def recorded() -> object:
    summaries: dict[int, SummaryItem] = {}
    announced: set[int] = set()

    def self_summary(event_index: int, compactions: Sequence[LoggedCompaction]) -> SummaryItem:
        item = summaries.get(event_index)
        if item is None:
            c = next(c for c in compactions if c.event_index == event_index)
            item = SummaryItem(
                text=c.message, replaces=tuple(sorted(c.replaced)), source="logged", role=c.role
            )
            summaries[event_index] = item
        return item

    # The view is built by one walk over the history; while the logged compactions stay the
    # same, the walk goes on from where the previous request left it.
    walked: list[LoggedCompaction] = []  # the compactions the walk is for
    replaced: set[int] = set()
    seen = Seen()
    body: list[Item] = []  # the view of the walked items
    pending: list[tuple[int, int]] = []  # (anchor, event index) of summaries not placed yet

    def restart(compactions: list[LoggedCompaction]) -> None:
        nonlocal seen
        if walked == compactions[: len(walked)]:  # the usual case: new compactions came after
            added = compactions[len(walked) :]
        else:
            replaced.clear()
            added = compactions
        walked[:] = compactions
        for c in added:
            replaced.update(c.replaced)
        pending[:] = sorted((c.start, c.event_index) for c in surviving(compactions) if c.message)
        body.clear()
        seen = Seen()

    cleared_before: set[int] = set()  # the cleared results already announced

    def as_logged(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = compacted(history, ctx)
        cleared = ctx.logged_clears
        if cleared:
            view.items = shown_cleared(view.items, cleared)
            fresh = cleared - cleared_before
            if fresh:
                cleared_before.update(fresh)
                view.events.append(
                    RewriteEvent(
                        "prune", f"logged prune: cleared {counted(len(fresh), 'tool result')}"
                    )
                )
        return view

    def compacted(history: Sequence[Item], ctx: StrategyContext) -> View:
        compactions = [c for c in ctx.logged_summaries if isinstance(c, LoggedCompaction)]
        if not compactions:
            return View(items=list(history))
        start = seen.sync(history)
        if compactions != walked or start == 0:
            restart(compactions)
            start = seen.sync(history)
        for h in history[start:]:
            index = getattr(h, "event_index", -1)
            while pending and index >= pending[0][0]:
                body.append(self_summary(pending.pop(0)[1], compactions))
            if index not in replaced:
                body.append(h)
        view = [*body, *(self_summary(event_index, compactions) for _, event_index in pending)]
        fresh = [c for c in compactions if c.event_index not in announced]
        announced.update(c.event_index for c in fresh)
        events = [RewriteEvent("compaction", "logged compaction") for _ in fresh]
        return View(items=view, events=events)

    return as_logged


register(
    StrategySpec(
        family="recorded",
        pattern=r"recorded",
        build=recorded,
        cache_class="freeze-once",
        rule="the log's own history, with the compactions and clears the agent really made",
        canonical=("recorded",),
        source="the log itself",
    )
)
