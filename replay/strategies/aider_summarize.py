"""`aider-summarize-auto`: Aider's chat-history summarization.

Rule: after each exchange (here: when the next user prompt arrives), if the finished messages
("done" history) exceed `max_tokens`, the largest tail under max_tokens / 2 is kept (its start
moved back so the head ends with an assistant message and the tail never starts at a tool
result) and the head is summarized by a fresh request to the weak model: the head's newest
messages within its window − 512 tokens, serialized as `# USER` / `# ASSISTANT` blocks. The
done history becomes the user message "I spoke to you previously about a number of things.\n"
+ summary, an assistant "Ok.", then the tail; this repeats (at most 3 levels) while it is still
too big; a split too close to the start summarizes everything (unclipped, as Aider does).

Defaults: max_tokens = auto = min(max(window / 16, 1,024), 8,192). Cache class: freeze-once
(Aider also rebuilds its file and repo-map chunks when they change; not simulated here).

The weak model is Aider's for the request's model (`pricing/aider_weak_models.json`, from
Aider's model settings: e.g. claude-sonnet-4-5 → claude-haiku-4-5, gpt-5 → gpt-5-nano); a
model Aider lists no weak model for is its own, as in Aider. The summarizer requests are priced
at the weak model's rates, and its window, when smaller, bounds what they are sent.

Source: Aider-AI/aider aider/history.py (`ChatSummary.summarize_real`), models.py
(max_chat_history_tokens), base_coder.py, prompts.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._data import load_json
from replay._words import counted
from replay.prices import context_window
from replay.strategies._base import Bounds, StrategyContext, StrategySpec, register
from replay.strategies._common import (
    Frozen,
    SummarySource,
    fresh_call,
    is_real_user,
    item_tokens,
    items_tokens,
    trigger_at_user_turn,
    valid_start,
)
from replay.strategies._prompts import AIDER_INSTRUCTION, LITERAL_AIDER_OK, LITERAL_AIDER_PREFIX
from replay.strategies._view import (
    AssistantItem,
    Block,
    Item,
    RewriteEvent,
    SummarizerCall,
    SummaryItem,
    View,
)


def weak_model(model: str) -> str:
    """Aider's weak model for `model` (matched without a provider prefix); `model` itself when
    Aider lists none."""
    table = load_json("aider_weak_models.json")["weak_models"]
    return table.get(model.rsplit("/", 1)[-1], model)


def clip_to_input(items: Sequence[Item], ctx: StrategyContext, model: str) -> list[Item]:
    """The newest `items` whose tokens add up to at most the summarizer `model`'s window − 512:
    Aider clips the head it summarizes to the summarizer's max input tokens − 512 (a message
    that would pass it ends the clip, even if older ones would fit). The window strategies are
    given (`--context-window`) bounds it too."""
    window = ctx.context_window
    if model != ctx.model:
        window = min(window, context_window(model))
    budget, total = window - 512, 0
    start = len(items)
    while start > 0:
        total += item_tokens(items[start - 1], ctx)
        if total > budget:
            break
        start -= 1
    return list(items[start:])


def aider_summarize(max_tokens: int | str = "auto") -> object:
    state = Frozen()
    summaries = SummarySource()

    def summarize(
        items: list[Item], ctx: StrategyContext, calls: list[SummarizerCall], clip: bool = False
    ) -> list[Item]:
        """Summary messages for `items`; `clip`: only the newest that fit the summarizer's input
        are sent (Aider clips the head it splits off, not the whole history it summarizes when
        no split is possible)."""
        weak = weak_model(ctx.model)
        if clip:
            items = clip_to_input(items, ctx, weak)
        text, source = summaries.text(ctx, items, structured=False)
        # Aider sends each message whole (only the head as a whole is clipped).
        calls.append(
            fresh_call(
                items,
                AIDER_INSTRUCTION,
                text,
                style="aider",
                result_chars=None,
                model=None if weak == ctx.model else weak,
            )
        )
        return [
            SummaryItem(LITERAL_AIDER_PREFIX + text, source=source),  # type: ignore[arg-type]
            AssistantItem(blocks=(Block("text", text=LITERAL_AIDER_OK),)),
        ]

    def shrink(
        done: list[Item], limit: int, ctx: StrategyContext, calls: list, depth: int
    ) -> list[Item]:
        if items_tokens(done, ctx) <= limit:
            return done
        split, acc = len(done), 0
        for n in range(len(done) - 1, -1, -1):
            acc += item_tokens(done[n], ctx)
            if acc >= limit // 2:
                break
            split = n
        while split > 0 and not (
            isinstance(done[split - 1], AssistantItem) and valid_start(done, split)
        ):
            split -= 1
        if split <= 4 or depth > 3:
            return summarize(done, ctx, calls)
        out = summarize(done[:split], ctx, calls, clip=True) + done[split:]
        return shrink(out, limit, ctx, calls, depth + 1)

    def summarize_done(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = state.view(history)
        if not trigger_at_user_turn(history):
            return View(items=view)
        limit = (
            min(max(ctx.context_window // 16, 1024), 8192)
            if max_tokens == "auto"
            else int(max_tokens)
        )
        current = max(n for n, i in enumerate(view) if is_real_user(i))
        done = view[:current]
        if items_tokens(done, ctx) <= limit:
            return View(items=view)
        calls: list[SummarizerCall] = []
        new_done = shrink(done, limit, ctx, calls, 0)
        state.reset(new_done, history[: len(history) - (len(view) - current)])
        return View(
            items=state.view(history),
            summarizer_calls=calls,
            events=[RewriteEvent(
                "compaction", f"done history summarized ({counted(len(calls), 'call')})"
            )],
        )

    return summarize_done


register(
    StrategySpec(
        family="aider-summarize",
        pattern=r"aider-summarize-(?P<max_tokens>auto|\d+k?)",
        build=aider_summarize,
        cache_class="freeze-once",
        rule="after each exchange: done history > max (window/16 in [1k, 8k]) → weak-model summary "
        "of the head, keep a tail < max/2",
        defaults={"max_tokens": "auto"},
        bounds={"max_tokens": Bounds(low=1, words=("auto",), whole=True)},
        canonical=("aider-summarize-auto",),
        source="Aider-AI/aider aider/history.py, models.py",
    )
)
