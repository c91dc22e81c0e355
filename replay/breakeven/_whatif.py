"""What-if without a strategy: one edit at one request, everything else as recorded.

The run edited is `recorded`'s: the history as the agent sent it, with its own compactions and
cleared results. `--prune SELECTOR` at request AT clears the selected context of that request
(tool results become the placeholder opencode and Claude Code use); `--compact-at AT` replaces
everything before the current step with an extractive summary, its summarizer call costed (sent
what `compact-at`'s is: each tool output cut to 1,500 characters, each call's arguments to 200;
the stand-in is made from the whole items).
From AT on, every request of that thread is `recorded`'s with the same edit made again, so the
difference is that single edit. A later compaction of the log's is made in the edited run as
the harness would make it on the edited context: it keeps its first kept item (the one after
its summary) and what follows, and replaces what comes before. That item's place in the edited
context is the item itself where the edit kept it; where the edit dropped it, the what-if's
summary that stands for it (`--compact-at`), or the next item the edit kept. If the edited
context holds something before that place, the log's summary replaces it all, the what-if's
summary included (where the log's compaction replaced everything the edit touched, both runs
send the same from there on); if it holds nothing (the log's compaction replaced only part of
what the edit had dropped), there was nothing to compact: the edited run goes on sending the
what-if's summary, not the log's. (A compaction that replaced nothing either run sent changes
nothing: its summary is sent where `recorded` sends it, beside the what-if's.)

AT numbers the log's requests in file order over every thread (as `request_index` in the
results); the edit is made in the thread that sends request AT, and the other threads
(subagents, or main around them) are untouched.

Selectors:
- `older-than:K` — tool results with at least K newer tool results after them (K ≥ 0);
- `tool:NAME` — every result of tool NAME;
- `messages:A-B` — items A..B of the history as request AT sends it (0-based, inclusive,
  A ≤ B); a tool call and its result are always removed together.

Results request AT already sends cleared (the harness cleared them by then, or the log holds
the placeholder itself, as Claude Code's microcompact leaves it) are neither selected again nor
counted: `older-than:K` counts the others, "cleared N" the results the edit changed, and a
`tool:NAME` whose results are all cleared says so.

A selector that selects nothing at request AT is an error (naming what the history holds), not
an edit that costs $0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from replay._errors import ReplayError
from replay._words import counted
from replay.strategies._base import NamedStrategy, StrategyContext, StrategySpec
from replay.strategies._common import summary_item
from replay.strategies._prompts import LITERAL_CLEARED
from replay.strategies._summary import STRUCTURED_INSTRUCTION, structured_summary, summary_message
from replay.strategies._view import (
    AssistantItem,
    Item,
    RewriteEvent,
    SummarizerCall,
    SummaryItem,
    ToolResultItem,
    View,
    replace_output,
)
from replay.strategies.compaction import ARGUMENT_CHARS, OUTPUT_CHARS, summarizer_input
from replay.strategies.recorded import recorded

PLACEHOLDER = LITERAL_CLEARED
"""What a cleared tool result shows (as `recorded` shows the harness's clears)."""


@dataclass(frozen=True)
class Selector:
    kind: str
    value: str

    @classmethod
    def parse(cls, text: str) -> Selector:
        m = re.fullmatch(r"(older-than|tool|messages):(.+)", text.strip())
        if not m:
            raise ReplayError(
                f"bad --prune selector {text!r}; expected older-than:K, tool:NAME or messages:A-B"
            )
        kind, value = m.groups()
        if kind == "older-than":
            if not re.fullmatch(r"[-+]?\d+", value):
                raise ReplayError(f"bad --prune selector {text!r}: K must be a whole number ≥ 0")
            if int(value) < 0:
                raise ReplayError(f"bad --prune selector {text!r}: K must be ≥ 0 (got {value})")
        if kind == "messages":
            ends = re.fullmatch(r"(\d+)-(\d+)", value)
            if not ends:
                raise ReplayError(
                    f"bad --prune selector {text!r}: expected messages:A-B, two item indexes "
                    "(0-based, A ≤ B)"
                )
            if int(ends.group(1)) > int(ends.group(2)):
                raise ReplayError(
                    f"bad --prune selector {text!r}: empty range, A must be ≤ B "
                    f"(messages:{ends.group(2)}-{ends.group(1)}?)"
                )
        return cls(kind, value)


def _nothing_matched(selector: Selector, at: int, history: Sequence[Item], why: str) -> ReplayError:
    return ReplayError(
        f"--prune {selector.kind}:{selector.value} matches nothing at request {at} "
        f"({counted(len(history), 'history item')}): {why}"
    )


def _prune(history: Sequence[Item], selector: Selector, at: int,
           cleared: frozenset[int] = frozenset()) -> tuple[list[Item], str]:
    """The history with the selected context removed; an error if the selector selects nothing
    (an edit that changes nothing would report a saving of $0 as if it had been measured).
    `cleared`: positions of the tool results the request already sends cleared, which
    `older-than` and `tool` neither select nor count."""
    results = [n for n, i in enumerate(history)
               if isinstance(i, ToolResultItem) and n not in cleared]
    if selector.kind == "older-than":
        k = int(selector.value)
        chosen = set(results[: max(0, len(results) - k)])
        if not chosen:
            more = f" not already cleared ({len(cleared)} more were)" if cleared else ""
            raise _nothing_matched(
                selector, at, history,
                f"only {counted(len(results), 'tool result')}{more}, none older than {k}",
            )
        return (_shown_cleared(history, chosen),
                f"cleared {counted(len(chosen), 'tool result')} older than {k}")
    if selector.kind == "tool":
        chosen = {n for n in results if history[n].tool_name == selector.value}  # type: ignore[union-attr]
        if not chosen:
            why = _no_result_of(history, selector.value, results, cleared)
            raise _nothing_matched(selector, at, history, why)
        return (_shown_cleared(history, chosen),
                f"cleared {counted(len(chosen), 'result')} of {selector.value}")
    lo, hi = (int(x) for x in selector.value.split("-"))
    if lo >= len(history):
        raise _nothing_matched(
            selector, at, history, f"items are numbered 0..{len(history) - 1}"
        )
    owner: dict[str, int] = {}
    results_of: dict[str, list[int]] = {}
    for n, item in enumerate(history):
        if isinstance(item, AssistantItem):
            for b in item.tool_calls:
                owner[b.call_id or ""] = n
        elif isinstance(item, ToolResultItem):
            results_of.setdefault(item.call_id, []).append(n)
    drop = set(range(lo, min(hi, len(history) - 1) + 1))
    pending = list(drop)
    while pending:  # a call and its results always leave together
        item = history[pending.pop()]
        if isinstance(item, AssistantItem):
            related = [m for b in item.tool_calls for m in results_of.get(b.call_id or "", [])]
        elif isinstance(item, ToolResultItem):
            related = [owner[item.call_id]] if item.call_id in owner else []
        else:
            related = []
        for m in related:
            if m not in drop:
                drop.add(m)
                pending.append(m)
    kept = [i for n, i in enumerate(history) if n not in drop]
    if not kept:  # a prompt of nothing: no request could be sent
        raise ReplayError(
            f"--prune {selector.kind}:{selector.value} removes every one of the "
            f"{len(history)} history items at request {at}: nothing would be sent"
        )
    return kept, f"dropped {counted(len(drop), 'history item')}"


def _shown_cleared(history: Sequence[Item], chosen: set[int]) -> list[Item]:
    return [
        replace_output(i, PLACEHOLDER) if n in chosen else i  # type: ignore[arg-type]
        for n, i in enumerate(history)
    ]


def _no_result_of(history: Sequence[Item], tool: str, results: list[int],
                  cleared: frozenset[int]) -> str:
    """Why `tool:TOOL` selects nothing: its results are all cleared already, or there are none
    (then the tools there are results of, by name)."""
    gone = sum(1 for n in cleared if history[n].tool_name == tool)  # type: ignore[union-attr]
    if gone:
        return f"{counted(gone, 'result')} of tool {tool!r}, all already cleared in the log"
    tools = sorted({history[n].tool_name for n in results})  # type: ignore[union-attr]
    return f"no result of tool {tool!r} (tools: {', '.join(tools) or 'none'})"


def _key(item: Item) -> tuple[object, ...]:
    """What names an item from one request's view to the next: its event index, or for a
    logged summary (no event of its own) what it replaced; identity for the rest."""
    if isinstance(item, SummaryItem):
        return ("summary", item.replaces, item.text)
    index = getattr(item, "event_index", -1)
    return ("event", index) if index >= 0 else ("object", id(item))


@dataclass
class _Edit:
    """The edit made at AT, applied again to every later view of `recorded`: the items it
    touched are named by `_key`, so a later logged compaction that replaced them ends it (see
    `_follow` for one that replaced only part of what it dropped)."""

    cleared: frozenset[tuple[object, ...]] = frozenset()
    """Tool results shown as the placeholder."""
    dropped: frozenset[tuple[object, ...]] = frozenset()
    """Items left out (a summary stands where the first of them was, if there is one)."""
    summary: SummaryItem | None = None
    """What the compaction put in place of `dropped` (None once a logged compaction replaced
    it)."""
    last: Sequence[Item] = ()
    """`recorded`'s view at the thread's previous request: what a logged compaction since then
    replaced is what has left it."""

    def apply(self, items: Sequence[Item], compacted: bool = False) -> list[Item]:
        """`items` (`recorded`'s view) as the edited run sends them; `compacted`: the log
        compacted since the previous request."""
        if compacted:
            self._follow(items)
        self.last = items
        out: list[Item] = []
        placed = self.summary is None
        for item in items:
            key = _key(item)
            if key in self.dropped:
                if not placed:
                    out.append(self.summary)  # type: ignore[arg-type]
                    placed = True
                continue
            if key in self.cleared:  # the same placeholder object at every request
                item = replace_output(item, PLACEHOLDER)  # type: ignore[arg-type]
            out.append(item)
        return out

    def _follow(self, items: Sequence[Item]) -> None:
        """A logged compaction in the edited run. It keeps its first kept item (the one after
        its summary in `items`) and what follows, and replaces what the context holds before
        it. In the edited context that item's place is itself where the edit kept it; where
        the edit dropped it, the edit's summary that stands for it (`--compact-at`: the first
        item), or the next item kept. If the edited context holds nothing before that place
        (the compaction replaced only what the edit had dropped), it had nothing to compact:
        its summary is not sent, the edit's stays. Otherwise its summary replaces all that,
        the edit's summary included."""
        keys = [_key(i) for i in items]
        before = {_key(i) for i in self.last}
        gone = before.difference(keys)
        if not gone:  # it replaced nothing either run sent
            return
        fresh = [n for n, i in enumerate(items)
                 if isinstance(i, SummaryItem) and keys[n] not in before]
        first_kept = [keys[n + 1] if n + 1 < len(keys) else None for n in fresh]
        if gone - self.dropped or (
            self.summary is not None and any(k not in self.dropped for k in first_kept)
        ):
            self.summary = None
        else:
            self.dropped |= {keys[n] for n in fresh}


def _prune_edit(view: Sequence[Item], selector: Selector, at: int) -> tuple[_Edit, str]:
    """The prune of `view` as an edit by key; the results `view` already shows as the
    placeholder (the harness cleared them: `recorded` shows its logged clears so, and a log may
    hold the placeholder itself) are not cleared again, nor counted as cleared."""
    if selector.kind == "messages":  # numbered as the request shows them
        kept, detail = _prune(view, selector, at)
        dropped = {_key(i) for i in view} - {_key(i) for i in kept}
        return _Edit(dropped=frozenset(dropped)), detail
    already = frozenset(
        n for n, i in enumerate(view) if isinstance(i, ToolResultItem) and i.output == PLACEHOLDER
    )
    pruned, detail = _prune(view, selector, at, already)
    cleared = {
        _key(before) for before, after in zip(view, pruned, strict=True) if before is not after
    }
    return _Edit(cleared=frozenset(cleared)), detail


def whatif_strategy(at: int, prune: Selector | None, compact: bool) -> NamedStrategy:
    """A one-off strategy: the `recorded` run, with one edit made at request `at` (file order,
    all threads) in that request's thread and kept; the other threads are sent as recorded."""
    label = f"whatif-{'compact' if compact else 'prune'}-at-{at}"

    def build() -> object:
        as_recorded = recorded()
        edit: _Edit | None = None

        def edit_once(history: Sequence[Item], ctx: StrategyContext) -> View:
            nonlocal edit
            view = as_recorded(history, ctx)
            assert isinstance(view, View)
            # `at` numbers the log's requests over all threads and every thread has its own
            # instance: only the thread that sends request `at` edits.
            if edit is None and ctx.request_index == at:
                edit, calls, event = _edit_at(view, ctx)
                return View(edit.apply(view.items), calls, [*view.events, event])
            if edit is not None:
                compacted = any(e.kind == "compaction" for e in view.events)
                view.items = edit.apply(view.items, compacted)
            return view

        return edit_once

    def _edit_at(view: View, ctx: StrategyContext
                 ) -> tuple[_Edit, list[SummarizerCall], RewriteEvent]:
        items = view.items
        if not compact:
            assert prune is not None
            edit, detail = _prune_edit(items, prune, ctx.request_index)
            return edit, [], RewriteEvent("prune", detail)
        if any(e.kind == "compaction" for e in view.events):
            raise ReplayError(
                f"--compact-at {at}: the agent compacted right before request {at} (the "
                "recorded run sends its own summary there), so there is nothing to compare; "
                "`replay breakeven LOG -s recorded` gives what that compaction saved, or try "
                "another request"
            )
        cut = max((n for n, i in enumerate(items) if isinstance(i, AssistantItem)), default=0)
        replaced = list(items[:cut])
        if not replaced:  # a summary of nothing would be costed as if measured
            raise ReplayError(
                f"--compact-at {at}: nothing to compact at request {ctx.request_index} "
                "(no model answer before it in its thread); try a later one"
            )
        text = structured_summary(replaced)
        summary = summary_item(summary_message(text), replaced)
        edit = _Edit(dropped=frozenset(_key(i) for i in replaced), summary=summary)
        # Sent what `compact-at`'s summarizer is sent (the stand-in is made from the whole items).
        sent = summarizer_input(replaced, OUTPUT_CHARS, ARGUMENT_CHARS)
        call = SummarizerCall(sent, STRUCTURED_INSTRUCTION, text)
        return edit, [call], RewriteEvent("compaction", "what-if")

    spec = StrategySpec(
        family="whatif",
        pattern=re.escape(label),
        build=build,
        cache_class="freeze-once",
        rule="one edit at one request, the recorded run otherwise",
    )
    return NamedStrategy(name=label, spec=spec, params={})
