"""`compact-at-N-structured` / `compact-at-N-freeform`: summarize once the view passes N chars.

When the characters the model would see pass N (default 12,000, as in the seed study), one
summarizer call replaces everything before the current step (the latest assistant message and
the results of its calls stay verbatim) with a summary, and the view is frozen: later requests
append after it until it passes N again (then the summary slot is re-summarized: rotating).
The summary is the one the log recorded when there is one; otherwise a deterministic extractive
stand-in (`_summary.py`) — either way the summarizer call is costed as its own request.

Source: the seed study (`compact-at-12000-structured`; the five-section template is
Claude Code's, as paraphrased by the articles). Cache class: freeze-once.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import AT_LEAST_1, Bounds, StrategyContext, StrategySpec, register
from replay.strategies._common import CharSums, Seen, last_assistant
from replay.strategies._summary import (
    FREEFORM_INSTRUCTION,
    STRUCTURED_INSTRUCTION,
    freeform_summary,
    structured_summary,
    summary_message,
)
from replay.strategies._view import (
    Item,
    RewriteEvent,
    SummarizerCall,
    SummaryItem,
    View,
    item_chars,
)


def compact_at(chars: int = 12000, style: str = "structured") -> object:
    structured = style == "structured"
    summary: SummaryItem | None = None
    covered = 0  # history items the summary stands for
    used_logged = 0
    sizes = CharSums()  # characters of the history, as prefix sums
    seen = Seen()
    event_indexes: list[int] = []  # of every history item (what a summary replaces)

    def compact_when_long(history: Sequence[Item], ctx: StrategyContext) -> View:
        nonlocal summary, covered, used_logged
        view: list[Item] = ([summary] if summary else []) + list(history[covered:])
        size = (item_chars(summary) if summary else 0) + sizes.since(history, covered)
        if size <= chars:
            return View(items=view)
        cut = last_assistant(history)
        if cut <= covered:
            return View(items=view)  # nothing older than the current step to fold
        replaced = ([summary] if summary else []) + list(history[covered:cut])
        if len(ctx.logged_summaries) > used_logged:
            text, source = ctx.logged_summaries[-1].summary, "logged"
            used_logged = len(ctx.logged_summaries)
        else:
            text = structured_summary(replaced) if structured else freeform_summary(replaced)
            source = "extractive"
        call = SummarizerCall(
            input_items=tuple(replaced),
            instruction=STRUCTURED_INSTRUCTION if structured else FREEFORM_INSTRUCTION,
            summary=text,
        )
        start = seen.sync(history)
        if start == 0:
            event_indexes.clear()
        event_indexes.extend(getattr(i, "event_index", -1) for i in history[start:])
        indexes = tuple(event_indexes[:cut])
        summary = SummaryItem(text=summary_message(text), replaces=indexes, source=source)
        covered = cut
        return View(
            items=[summary, *history[cut:]],
            summarizer_calls=[call],
            events=[RewriteEvent("compaction", f"{len(replaced)} items → summary")],
        )

    return compact_when_long


register(
    StrategySpec(
        family="compact-at",
        pattern=r"compact-at-(?P<chars>\d+)-(?P<style>structured|freeform)",
        build=compact_at,
        cache_class="freeze-once",
        rule="when the view passes N characters, one summarizer call replaces all but the "
        "current step with a summary (five-section structured, or free-form)",
        defaults={"chars": 12000, "style": "structured"},
        bounds={"chars": AT_LEAST_1, "style": Bounds(words=("structured", "freeform"))},
        canonical=("compact-at-12000-structured", "compact-at-12000-freeform"),
        source="seed study (compact-at-12000-structured; Claude Code's summary template, "
        "paraphrased)",
    )
)
