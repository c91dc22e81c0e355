"""`opencode-compact-tail-prepend` / `opencode-compact-tail-suffix`: opencode's 2026 compaction.

Rule: when the reported tokens reach the usable context (`window - max output - reserved`,
reserved = the configured value, else min(20,000, max output); on a window no larger than
max output + reserved, `window - reserved`: opencode subtracts the model's own maximum output,
which such a small model keeps below its window), the recent tail is kept
verbatim and the head is summarized. Tail budget B = clamp(25% of usable, 2,000, 15,000)
estimated tokens: whole user turns are taken newest first while they fit; the first turn that
does not fit contributes its longest suffix that fits (never starting at a tool result). The
history becomes [compaction marker (user), summary (assistant)] + tail + the synthetic
"Continue if you have next steps, …" user message.

- `prepend` (default): the summarizer is a fresh request — "Here is the conversation so far:"
  and the head serialized inside `<conversation>` as `[User]: …`/`[Tool result]: …`/`[Tool
  error]: …` lines (each tool result cut to 2,000 chars + `[truncated]`), the previous summary
  if any, and the summary template: it shares no prefix with the main thread.
- `suffix`: the summarizer re-sends the main request (same prefix, so it reads the cache) plus
  a prompt naming the first retained item.

Defaults: output_max = 32,000, reserved = 0 (= min(20,000, output_max); a set value is used
as it is, as opencode's `cfg.reserved or …`), tail = 0 (= the clamp above). Cache class:
freeze-once. The compaction marker's text, "What did we do so far?", is recalled from opencode's
message-v2.ts, not taken from the sources used: UNVERIFIED.

Source: sst/opencode packages/opencode/src/session/overflow.ts (`usable`), session/compaction.ts
(`select`, `splitTurn`), packages/core/src/session/compaction.ts and compaction-suffix.ts.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import (
    AT_LEAST_0,
    AT_LEAST_1,
    Bounds,
    StrategyContext,
    StrategySpec,
    register,
)
from replay.strategies._common import (
    Frozen,
    SummarySource,
    forked_call,
    fresh_call,
    is_real_user,
    item_est,
    item_text,
    reported_tokens,
    summary_item,
    valid_start,
)
from replay.strategies._prompts import (
    LITERAL_OPENCODE_COMPACTION_MARKER,
    LITERAL_OPENCODE_CONTINUE,
    OPENCODE_SUFFIX_INSTRUCTION,
    OPENCODE_TAIL_INSTRUCTION,
)
from replay.strategies._view import Item, RewriteEvent, SummaryItem, UserItem, View


def tail_start(items: Sequence[Item], budget: int) -> int:
    """Index where the kept tail starts: whole turns newest first within `budget`, then the
    longest valid suffix of the first turn that does not fit."""
    starts = [n for n, i in enumerate(items) if is_real_user(i)]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    bounds = list(zip(starts, [*starts[1:], len(items)], strict=True))
    start, used = len(items), 0
    for lo, hi in reversed(bounds):
        size = sum(item_est(i) for i in items[lo:hi])
        if used + size <= budget:
            start, used = lo, used + size
            continue
        for n in range(lo + 1, hi):
            if valid_start(items, n) and used + sum(item_est(i) for i in items[n:hi]) <= budget:
                start = n
                break
        break
    return start


def opencode_compact_tail(
    mode: str = "prepend", output_max: int = 32000, reserved: int = 0, tail: int = 0
) -> object:
    state = Frozen()
    summaries = SummarySource()

    def summarize_head(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = state.view(history)
        reserve = reserved or min(20000, output_max)  # only the default is capped
        usable = ctx.context_window - output_max - reserve
        if usable <= 0:
            usable = ctx.context_window - reserve
        if reported_tokens(ctx, view) < usable:
            return View(items=view)
        # After a compaction the view opens with [marker, summary].
        prior = view[1] if len(view) > 1 and isinstance(view[1], SummaryItem) else None
        body = view[2:] if prior else view
        budget = tail or min(15000, max(2000, usable // 4))
        cut = tail_start(body, budget)
        head, kept = body[:cut], body[cut:]
        if not head:
            return View(items=view)
        text, source = summaries.text(ctx, ([prior] if prior else []) + head)
        if mode == "suffix" and kept:
            first = item_text(kept[0])[:400]
            call = forked_call(
                view,
                f"{OPENCODE_SUFFIX_INSTRUCTION}\n<first-retained-item>{first}</first-retained-item>",
                text,
            )
        else:
            prompt = OPENCODE_TAIL_INSTRUCTION
            if prior:
                prompt = f"<prior-summary>\n{prior.text}\n</prior-summary>\n{prompt}"
            call = fresh_call(head, prompt, text, style="opencode")
        state.reset(
            [
                UserItem(LITERAL_OPENCODE_COMPACTION_MARKER, injected=True),
                summary_item(text, head, source, role="assistant"),
                *kept,
                UserItem(LITERAL_OPENCODE_CONTINUE, injected=True),
            ],
            history,
        )
        return View(
            items=state.view(history),
            summarizer_calls=[call],
            events=[RewriteEvent(
                "compaction", f"{counted(len(head), 'item')} → summary, {len(kept)} kept"
            )],
        )

    return summarize_head


register(
    StrategySpec(
        family="opencode-compact-tail",
        pattern=r"opencode-compact-tail-(?P<mode>prepend|suffix)",
        build=opencode_compact_tail,
        cache_class="freeze-once",
        rule="reported tokens >= usable → summarize the head, keep recent turns (<= clamp(25% of "
        "usable, 2k, 15k) tokens) verbatim; prepend = fresh summarizer, suffix = cache-sharing",
        defaults={"mode": "prepend", "output_max": 32000, "reserved": 0, "tail": 0},
        bounds={
            "mode": Bounds(words=("prepend", "suffix")),
            "output_max": AT_LEAST_1,
            "reserved": AT_LEAST_0,
            "tail": AT_LEAST_0,
        },
        canonical=("opencode-compact-tail-prepend", "opencode-compact-tail-suffix"),
        source="sst/opencode session/overflow.ts, session/compaction.ts, core compaction-suffix.ts",
    )
)
