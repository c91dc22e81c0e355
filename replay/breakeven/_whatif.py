"""What-if without a strategy: one edit at one request, everything else as recorded.

`--prune SELECTOR` at request AT clears the selected earlier context (tool results become the
placeholder opencode and Claude Code use); `--compact-at AT` replaces everything before the
current step with a summary (the logged one if the log has one, else the extractive stand-in,
with its summarizer call costed). Before AT and after it the conversation is sent as recorded
(append-only), so the difference is that single edit.

Selectors:
- `older-than:K` — tool results with at least K newer tool results after them;
- `tool:NAME` — every result of tool NAME;
- `messages:A-B` — history items A..B (0-based, inclusive); a tool call and its result are
  always removed together.
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
        if kind == "older-than" and not value.isdigit():
            raise ReplayError(f"bad --prune selector {text!r}: K must be a number")
        if kind == "messages" and not re.fullmatch(r"\d+-\d+", value):
            raise ReplayError(f"bad --prune selector {text!r}: expected messages:A-B")
        return cls(kind, value)


def _prune(history: Sequence[Item], selector: Selector) -> tuple[list[Item], str]:
    results = [n for n, i in enumerate(history) if isinstance(i, ToolResultItem)]
    if selector.kind == "older-than":
        k = int(selector.value)
        chosen = set(results[: max(0, len(results) - k)])
        return [
            replace_output(i, PLACEHOLDER) if n in chosen else i  # type: ignore[arg-type]
            for n, i in enumerate(history)
        ], f"cleared {len(chosen)} tool results older than {k}"
    if selector.kind == "tool":
        chosen = {n for n in results if history[n].tool_name == selector.value}  # type: ignore[union-attr]
        return [
            replace_output(i, PLACEHOLDER) if n in chosen else i  # type: ignore[arg-type]
            for n, i in enumerate(history)
        ], f"cleared {len(chosen)} results of {selector.value}"
    lo, hi = (int(x) for x in selector.value.split("-"))
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
    return kept, f"dropped {len(drop)} history items"


def whatif_strategy(at: int, prune: Selector | None, compact: bool) -> NamedStrategy:
    """A one-off strategy: recorded history, with one edit applied at request `at` and kept."""
    label = f"whatif-{'compact' if compact else 'prune'}-at-{at}"

    def build() -> object:
        frozen: list[Item] | None = None
        frozen_len = 0

        def edit_once(history: Sequence[Item], ctx: StrategyContext) -> View:
            nonlocal frozen, frozen_len
            if frozen is None and ctx.request_index >= at:
                if compact:
                    cut = max((n for n, i in enumerate(history) if isinstance(i, AssistantItem)),
                              default=0)
                    replaced = list(history[:cut])
                    if ctx.logged_summaries:
                        text, source = ctx.logged_summaries[-1].summary, "logged"
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
                frozen, detail = _prune(history, prune)
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
