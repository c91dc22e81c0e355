"""What-if without a strategy: one edit at one request, everything else as recorded.

`--prune SELECTOR` at request AT clears the selected earlier context (tool results become the
placeholder opencode and Claude Code use); `--compact-at AT` replaces everything before the
current step with a summary (the logged one if the log has one, else the extractive stand-in,
with its summarizer call costed). Before AT and after it the conversation is sent as recorded
(append-only), so the difference is that single edit. AT numbers the log's requests in file
order over every thread (as `request_index` in the results); the edit is made in the thread
that sends request AT, and the other threads (subagents, or main around them) are untouched.

Selectors:
- `older-than:K` — tool results with at least K newer tool results after them (K ≥ 0);
- `tool:NAME` — every result of tool NAME;
- `messages:A-B` — history items A..B (0-based, inclusive, A ≤ B); a tool call and its result
  are always removed together.

A selector that selects nothing at request AT is an error (naming what the history holds), not
an edit that costs $0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from replay._errors import ReplayError
from replay.strategies._base import NamedStrategy, StrategyContext, StrategySpec
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

PLACEHOLDER = "[Old tool result content cleared]"


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
        f"({len(history)} history items): {why}"
    )


def _prune(history: Sequence[Item], selector: Selector, at: int) -> tuple[list[Item], str]:
    """The history with the selected context removed; an error if the selector selects nothing
    (an edit that changes nothing would report a saving of $0 as if it had been measured)."""
    results = [n for n, i in enumerate(history) if isinstance(i, ToolResultItem)]
    if selector.kind == "older-than":
        k = int(selector.value)
        chosen = set(results[: max(0, len(results) - k)])
        if not chosen:
            raise _nothing_matched(
                selector, at, history, f"only {len(results)} tool results, none older than {k}"
            )
        return [
            replace_output(i, PLACEHOLDER) if n in chosen else i  # type: ignore[arg-type]
            for n, i in enumerate(history)
        ], f"cleared {len(chosen)} tool results older than {k}"
    if selector.kind == "tool":
        chosen = {n for n in results if history[n].tool_name == selector.value}  # type: ignore[union-attr]
        if not chosen:
            tools = sorted({history[n].tool_name for n in results})  # type: ignore[union-attr]
            raise _nothing_matched(
                selector, at, history,
                f"no result of tool {selector.value!r} (tools: {', '.join(tools) or 'none'})",
            )
        return [
            replace_output(i, PLACEHOLDER) if n in chosen else i  # type: ignore[arg-type]
            for n, i in enumerate(history)
        ], f"cleared {len(chosen)} results of {selector.value}"
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
    return kept, f"dropped {len(drop)} history items"


def whatif_strategy(at: int, prune: Selector | None, compact: bool) -> NamedStrategy:
    """A one-off strategy: recorded history, with one edit applied at request `at` (file order,
    all threads) in that request's thread and kept; the other threads are sent as recorded."""
    label = f"whatif-{'compact' if compact else 'prune'}-at-{at}"

    def build() -> object:
        frozen: list[Item] | None = None
        frozen_len = 0

        def edit_once(history: Sequence[Item], ctx: StrategyContext) -> View:
            nonlocal frozen, frozen_len
            # `at` numbers the log's requests over all threads and every thread has its own
            # instance: only the thread that sends request `at` edits (`>=` edited each one).
            if frozen is None and ctx.request_index == at:
                if compact:
                    cut = max((n for n, i in enumerate(history) if isinstance(i, AssistantItem)),
                              default=0)
                    replaced = list(history[:cut])
                    if not replaced:  # a summary of nothing would be costed as if measured
                        raise ReplayError(
                            f"--compact-at {at}: nothing to compact at request "
                            f"{ctx.request_index} (no model answer before it in its thread); "
                            "try a later one"
                        )
                    # The log's summary only where the agent compacted at this point (after
                    # the last answer before `at`), not an older one standing in for more.
                    last = ctx.logged_summaries[-1] if ctx.logged_summaries else None
                    if last is not None and last.event_index > getattr(
                        history[cut], "event_index", -1
                    ):
                        text, source = last.summary, "logged"
                    else:
                        text, source = structured_summary(replaced), "extractive"
                    summary = SummaryItem(summary_message(text), source=source,
                                          replaces=tuple(getattr(i, "event_index", -1)
                                                         for i in replaced))
                    frozen = [summary, *history[cut:]]
                    frozen_len = len(history)
                    call = SummarizerCall(tuple(replaced), STRUCTURED_INSTRUCTION, text)
                    return View(list(frozen), [call], [RewriteEvent("compaction", "what-if")])
                assert prune is not None
                frozen, detail = _prune(history, prune, ctx.request_index)
                frozen_len = len(history)
                return View(list(frozen), [], [RewriteEvent("prune", detail)])
            if frozen is None:
                return View(list(history))
            return View(list(frozen) + list(history[frozen_len:]))

        return edit_once

    spec = StrategySpec(
        family="whatif",
        pattern=re.escape(label),
        build=build,
        cache_class="freeze-once",
        rule="one edit at one request, recorded history otherwise",
    )
    return NamedStrategy(name=label, spec=spec, params={})
