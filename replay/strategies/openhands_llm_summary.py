"""`openhands-llm-summary-120-keep-4`: OpenHands' LLM-summarizing condenser.

Rule: when the view holds more than `max_size` events, the first `keep_first` events and the
newest `max_size / 2 − keep_first − 1` stay; the events in between are summarized by a fresh
request (OpenHands' state-summary prompt, the previous summary, and each forgotten event as
`<EVENT id=…>` cut to 10,000 characters), and the summary is inserted as a user message at
offset `keep_first`. The view then grows append-only until the next condensation.

Defaults: max_size = 120, keep_first = 4 (the app's and SDK's default pipeline; the config
defaults are 100 / 1). Events are OpenHands' (`_openhands.py`): the system prompt is the
first, each tool call and each result one, the summary one. Cache class: freeze-once.

Source: All-Hands-AI/OpenHands openhands/memory/condenser/impl/llm_summarizing_condenser.py,
server/session/session.py; software-agent-sdk llm_summarizing_condenser.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_0, Bounds, StrategyContext, StrategySpec, register
from replay.strategies._common import (
    AnsweredIds,
    Frozen,
    SummarySource,
    item_text,
    repair_pairs,
    summary_item,
)
from replay.strategies._openhands import events_in, head_length, tail_length, view_events
from replay.strategies._prompts import LITERAL_OPENHANDS_NO_SUMMARY, OPENHANDS_SUMMARY_INSTRUCTION
from replay.strategies._view import Item, RewriteEvent, SummarizerCall, SummaryItem, UserItem, View


def events_prompt(items: Sequence[Item]) -> str:
    previous = next((i.text for i in items if isinstance(i, SummaryItem)), "")
    parts = [f"<PREVIOUS SUMMARY>\n{previous}\n</PREVIOUS SUMMARY>"]
    for item in items:
        if not isinstance(item, SummaryItem):
            parts.append(
                f"<EVENT id={getattr(item, 'event_index', -1)}>\n"
                f"{item_text(item)[:10000]}\n</EVENT>"
            )
    return "\n\n".join(parts)


def openhands_llm_summary(max_size: int = 120, keep_first: int = 4) -> object:
    state = Frozen()
    answered = AnsweredIds()
    summaries = SummarySource()

    def summarize_middle(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = state.view(history)
        if view_events(view) <= max_size:
            return View(items=view)
        head_n = head_length(view, keep_first)
        tail_n = tail_length(view, max(1, max_size // 2 - keep_first - 1), after=head_n)
        head, middle = view[:head_n], view[head_n : len(view) - tail_n]
        tail = view[len(view) - tail_n :]
        if not middle:
            return View(items=view)
        text, source = summaries.text(ctx, middle)
        text = text or LITERAL_OPENHANDS_NO_SUMMARY
        call = SummarizerCall(
            (UserItem(events_prompt(middle), injected=True),),
            OPENHANDS_SUMMARY_INSTRUCTION,
            text,
            reuse_main_prefix=False,
        )
        new = repair_pairs(
            [*head, summary_item(text, middle, source), *tail], history, answered.sync(history)
        )
        state.reset(new, history)
        return View(
            items=state.view(history),
            summarizer_calls=[call],
            events=[RewriteEvent("compaction", f"{counted(events_in(middle), 'event')} → summary")],
        )

    return summarize_middle


register(
    StrategySpec(
        family="openhands-llm-summary",
        pattern=r"openhands-llm-summary-(?P<max_size>\d+)-keep-(?P<keep_first>\d+)",
        build=openhands_llm_summary,
        cache_class="freeze-once",
        rule="view > max events → summarize the middle, keep the first k + newest max/2 - k - 1; "
        "summary inserted at offset k",
        defaults={"max_size": 120, "keep_first": 4},
        bounds={"max_size": Bounds(low=2), "keep_first": AT_LEAST_0},
        canonical=("openhands-llm-summary-120-keep-4",),
        source="All-Hands-AI/OpenHands llm_summarizing_condenser.py, session.py",
    )
)
