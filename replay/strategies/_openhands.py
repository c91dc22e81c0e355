"""What OpenHands' condensers count: events, not messages.

OpenHands keeps a stream of events. Its conversation starts with the system prompt as an event
(SystemMessageAction: event 0, which a `keep_first` of 1 keeps); each tool call the model makes
is an action event of its own (an answer with three parallel calls is three events; its text
becomes the first one's thought) and each result an observation event; a user message, an
answer without calls and a condensation summary are one event each. The recall events
OpenHands adds after user messages (workspace context, microagent knowledge) are not in the
log and not counted.

Replay cuts whole history items and whole steps: an answer whose events straddle a cut is kept
whole, with its results, so a cut can keep a few more events than it allows (OpenHands cuts
between the events of one answer). An answer's actions are counted before its results (OpenHands
interleaves each call with its result), which moves where a window's boundary falls inside one
answer by less than its number of calls.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from replay.strategies._common import valid_start
from replay.strategies._view import AssistantItem, Item

SYSTEM_EVENTS = 1
"""The system prompt's event, first in every OpenHands view (always sent by replay)."""


def events_of(item: Item) -> int:
    """The events OpenHands makes of one history item."""
    if isinstance(item, AssistantItem):
        return max(1, len(item.tool_calls))
    return 1


def events_in(items: Sequence[Item]) -> int:
    """The events of `items`."""
    return sum(events_of(i) for i in items)


def view_events(items: Sequence[Item]) -> int:
    """The events of a view of `items`, the system prompt's included."""
    return SYSTEM_EVENTS + events_in(items)


def head_length(items: Sequence[Item], keep_first: int) -> int:
    """How many of the first `items` hold the view's first `keep_first` events (the system
    prompt is the first): an item that starts inside them is kept whole."""
    n, events = 0, SYSTEM_EVENTS
    while n < len(items) and events < keep_first:
        events += events_of(items[n])
        n += 1
    return n


def tail_length(items: Sequence[Item], events: int, after: int = 0) -> int:
    """How many of the last `items` (none of the first `after`) hold the newest `events`
    events, at least one item: a step the cut falls in (an answer with its results) is kept
    whole. (A bound, not a slice: a history is not copied at every request.)"""
    start, total = len(items), 0
    while start > after and total < events:
        start -= 1
        total += events_of(items[start])
    while start > after and not valid_start(items, start):
        start -= 1
    return len(items) - start


class EventIndex:
    """The events before each position of a history, kept as the history grows: the event
    count of a long history, and of its suffixes, without a walk over it at every request."""

    def __init__(self) -> None:
        self.before: list[int] = [0]
        """`before[n]`: the events of `history[:n]` (the system prompt's not included)."""
        self._last: Item | None = None
        """The last item counted: a history that does not hold it there is another one."""

    def sync(self, history: Sequence[Item]) -> None:
        known = len(self.before) - 1
        if known > len(history) or (known and history[known - 1] is not self._last):
            self.before, known = [0], 0  # another history
        for item in history[known:]:
            self.before.append(self.before[-1] + events_of(item))
        if history:
            self._last = history[-1]

    def total(self) -> int:
        """The events of the whole history, the system prompt's included."""
        return SYSTEM_EVENTS + self.before[-1]

    def older_than(self, window: int) -> int:
        """How many of the first items have more than `window` events from them to the end
        (OpenHands' `i < len(view) - window`, for each item's first event)."""
        items = len(self.before) - 1
        return bisect_left(self.before, self.before[-1] - window, hi=items)
