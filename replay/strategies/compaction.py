"""`compact-at-N-structured` / `compact-at-N-freeform`: summarize once the view passes N chars.

When the characters the model would see pass N (default 12,000, as in the seed study), one
summarizer call replaces everything before the current step (the latest assistant message and
the results of its calls stay verbatim) with a summary, and the view is frozen: later requests
append after it until it passes N again (then the summary slot is re-summarized: rotating).
The summary is the one the log recorded when there is one; otherwise a deterministic extractive
stand-in (`_summary.py`) — either way the summarizer call is costed as its own request. The
summarizer is sent what the seed study sent it: each tool output cut to 1,500 characters and
each tool call's arguments to 200 (`output_chars`, `argument_chars`; 0 sends them whole); the
stand-in is made from the whole items.

Source: the seed study (`compact-at-12000-structured`; the five-section template is
Claude Code's, as paraphrased by the articles). Cache class: freeze-once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from replay._words import counted
from replay.strategies._base import (
    AT_LEAST_0,
    AT_LEAST_1,
    Bounds,
    StrategyContext,
    StrategySpec,
    register,
)
from replay.strategies._common import CharSums, last_assistant, summary_item
from replay.strategies._summary import (
    FREEFORM_INSTRUCTION,
    STRUCTURED_INSTRUCTION,
    freeform_summary,
    structured_summary,
    summary_message,
)
from replay.strategies._view import (
    AssistantItem,
    Block,
    Item,
    RewriteEvent,
    SummarizerCall,
    SummaryItem,
    ToolResultItem,
    View,
    cut_output,
    item_chars,
)

OUTPUT_CHARS = 1500
"""Characters of each tool output the seed study's summarizer was sent (`output_chars`)."""
ARGUMENT_CHARS = 200
"""Characters of each tool call's arguments it was sent (`argument_chars`)."""


def summarizer_input(items: Sequence[Item], output_chars: int, argument_chars: int
                     ) -> tuple[Item, ...]:
    """`items` as the seed study's summarizer call was sent them: tool outputs cut to
    `output_chars`, tool-call arguments to `argument_chars` (0: whole)."""
    return tuple(_cut(i, output_chars, argument_chars) for i in items)


def _cut(item: Item, output_chars: int, argument_chars: int) -> Item:
    # New items, not the memoized variants (`truncate_chars`, `replace_blocks`): remembered on
    # the history's items, every call's cut transcript stayed alive with the history.
    if isinstance(item, ToolResultItem):
        cut = cut_output(item.output, output_chars) if output_chars else None
        if cut is None:
            return item
        return replace(item, output=cut, original_chars=item.full_chars)
    if not argument_chars or not isinstance(item, AssistantItem) or not item.tool_calls:
        return item
    blocks = tuple(_cut_arguments(b, argument_chars) for b in item.blocks)
    if all(a is b for a, b in zip(blocks, item.blocks, strict=True)):
        return item
    return AssistantItem(blocks=blocks, event_index=item.event_index)


def _cut_arguments(block: Block, limit: int) -> Block:
    if block.type != "tool_call":
        return block
    shown = block.rendered()
    args = shown[len(block.name or "") + 1 : -1]  # `name(args)`
    if len(args) <= limit:
        return block
    cut = {"input": args[:limit] + "…"}
    return Block("tool_call", call_id=block.call_id, name=block.name, arguments=cut,
                 arguments_format="raw")


def compact_at(chars: int = 12000, style: str = "structured", output_chars: int = OUTPUT_CHARS,
               argument_chars: int = ARGUMENT_CHARS) -> object:
    structured = style == "structured"
    summary: SummaryItem | None = None
    covered = 0  # history items the summary stands for
    used_logged = 0
    sizes = CharSums()  # characters of the history, as prefix sums

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
            input_items=summarizer_input(replaced, output_chars, argument_chars),
            instruction=STRUCTURED_INSTRUCTION if structured else FREEFORM_INSTRUCTION,
            summary=text,
        )
        # It replaces the log events of the items it folds, each once (the old summary's too).
        summary = summary_item(summary_message(text), replaced, source)
        covered = cut
        return View(
            items=[summary, *history[cut:]],
            summarizer_calls=[call],
            events=[RewriteEvent("compaction", f"{counted(len(replaced), 'item')} → summary")],
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
        defaults={"chars": 12000, "style": "structured", "output_chars": OUTPUT_CHARS,
                  "argument_chars": ARGUMENT_CHARS},
        bounds={"chars": AT_LEAST_1, "style": Bounds(words=("structured", "freeform")),
                "output_chars": AT_LEAST_0, "argument_chars": AT_LEAST_0},
        canonical=("compact-at-12000-structured", "compact-at-12000-freeform"),
        source="seed study (compact-at-12000-structured; Claude Code's summary template, "
        "paraphrased)",
    )
)
