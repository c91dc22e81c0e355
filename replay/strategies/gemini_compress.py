"""`gemini-compress-50pct-keep-30pct`: Gemini CLI's chat compression.

Rule: before each request, when the previous prompt's tokens reach `threshold` of the model's
limit, tool outputs beyond the newest `tool_budget` tokens of the whole history keep only their
last lines; that history is split at the first real user message (not a tool response) at or
after (1 − `preserve`) of its characters, counted as Gemini CLI counts them (the JSON of each
message) — failing that, the last such message before it; with no split point nothing happens.
The head's messages, as they are, go to a fresh request (compression system prompt + "Generate
a new <state_snapshot>…") and to a second, verification request (the same, then the snapshot as
the model's answer and "Critically evaluate…"); the history becomes [user(snapshot),
model("Got it. Thanks for the additional context!")] + the tail. If the result is larger than
before, it is discarded and compression is not tried again (one of the same size is kept).

Defaults: threshold = 50 %, preserve = 30 %, tool_budget = 50,000, preview_lines = 30.
Cache class: freeze-once. The preview's wording is this project's.

Source: google-gemini/gemini-cli packages/core/src/context/chatCompressionService.ts,
client.ts (called before each turn).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import (
    AT_LEAST_0,
    AT_LEAST_1,
    PERCENT,
    Bounds,
    StrategyContext,
    StrategySpec,
    register,
)
from replay.strategies._common import (
    Frozen,
    SummarySource,
    is_real_user,
    item_tokens,
    items_tokens,
    valid_start,
)
from replay.strategies._prompts import (
    GEMINI_INSTRUCTION,
    GEMINI_VERIFY_INSTRUCTION,
    LITERAL_GEMINI_ACK,
)
from replay.strategies._view import (
    AssistantItem,
    Block,
    Item,
    RewriteEvent,
    SummarizerCall,
    SummaryItem,
    ToolResultItem,
    UserItem,
    View,
    replace_output,
)


def json_chars(item: Item) -> int:
    """Length of `JSON.stringify` of the item as the Gemini `Content` Gemini CLI measures to
    split (role, parts, `functionCall` arguments, `functionResponse` output): escapes count
    (a newline is two characters), so output-heavy items weigh more than their text alone.
    JavaScript counts UTF-16 units: a character beyond the BMP counts two."""
    if isinstance(item, AssistantItem):
        parts: list[dict] = []
        for b in item.blocks:
            if b.type == "tool_call":
                parts.append({"functionCall": {"name": b.name, "args": b.arguments}})
            elif b.type == "text":
                parts.append({"text": b.text})
            elif b.type == "thinking":
                parts.append({"text": b.text, "thought": True})
        content: dict = {"role": "model", "parts": parts}
    elif isinstance(item, ToolResultItem):
        response = {"id": item.call_id, "name": item.tool_name, "response": {"output": item.output}}
        content = {"role": "user", "parts": [{"functionResponse": response}]}
    else:
        content = {"role": "user", "parts": [{"text": item.text}]}
    text = json.dumps(content, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def split_point(items: Sequence[Item], keep_fraction: float) -> int:
    """Index of the first real user message at or after (1 − `keep_fraction`) of the items'
    JSON characters (failing that, the last one before it; 0: none)."""
    sizes = [json_chars(item) for item in items]
    target = sum(sizes) * (1 - keep_fraction)
    seen, last = 0, 0
    for n, item in enumerate(items):
        if n > 0 and is_real_user(item) and valid_start(items, n):
            if seen >= target:
                return n
            last = n
        seen += sizes[n]
    return last


def budget_tail(items: Sequence[Item], ctx: StrategyContext, budget: int, lines: int) -> list[Item]:
    out: list[Item] = []
    used = 0
    for item in reversed(items):
        if isinstance(item, ToolResultItem):
            used += item_tokens(item, ctx)
            if used > budget:
                rows = item.output.splitlines()
                if len(rows) > lines:
                    item = replace_output(
                        item,
                        f"[output shortened: last {lines} of {len(rows)} lines; full output saved "
                        f"to a file]\n" + "\n".join(rows[-lines:]),
                    )
        out.append(item)
    return out[::-1]


def gemini_compress(
    threshold: int = 50, preserve: int = 30, tool_budget: int = 50000, preview_lines: int = 30
) -> object:
    state = Frozen()
    summaries = SummarySource()
    failed = False

    def compress(history: Sequence[Item], ctx: StrategyContext) -> View:
        nonlocal failed
        view = state.view(history)
        usage = ctx.previous_usage
        last_prompt = usage.prompt_tokens if usage is not None else items_tokens(view, ctx)
        if failed or last_prompt * 100 < ctx.context_window * threshold:  # exact: no rounding
            return View(items=view)
        # Gemini CLI shortens old tool outputs over the whole history first, then splits what
        # that leaves: the split point and both halves come from the shortened history.
        budgeted = budget_tail(view, ctx, tool_budget, preview_lines)
        split = split_point(budgeted, preserve / 100)
        if split <= 0:
            return View(items=view)
        head, tail = budgeted[:split], budgeted[split:]
        text, source = summaries.text(ctx, head)
        snapshot = f"<state_snapshot>\n{text}\n</state_snapshot>"
        # Both requests send the head's messages themselves (no transcript), on their own
        # system prompt; the verification re-sends the snapshot as the model's own answer.
        answer = AssistantItem(blocks=(Block("text", text=snapshot),))
        calls = [
            SummarizerCall(tuple(head), GEMINI_INSTRUCTION, snapshot, reuse_main_prefix=False),
            SummarizerCall(
                (*head, UserItem(GEMINI_INSTRUCTION), answer),
                GEMINI_VERIFY_INSTRUCTION,
                snapshot,
                reuse_main_prefix=False,
            ),
        ]
        new = [
            SummaryItem(snapshot, source=source),  # type: ignore[arg-type]
            AssistantItem(blocks=(Block("text", text=LITERAL_GEMINI_ACK),)),
            *tail,
        ]
        if items_tokens(new, ctx) > items_tokens(view, ctx):  # only a larger result fails
            failed = True
            return View(items=view, summarizer_calls=calls)
        state.reset(new, history)
        return View(
            items=state.view(history),
            summarizer_calls=calls,
            events=[RewriteEvent("compaction", f"{counted(split, 'item')} → state snapshot")],
        )

    return compress


register(
    StrategySpec(
        family="gemini-compress",
        pattern=r"gemini-compress-(?P<threshold>\d+)pct-keep-(?P<preserve>\d+)pct",
        build=gemini_compress,
        cache_class="freeze-once",
        rule="last prompt >= 50% of the limit → <state_snapshot> of the oldest 70% (split at a "
        "user message), keep the last 30%",
        defaults={"threshold": 50, "preserve": 30, "tool_budget": 50000, "preview_lines": 30},
        bounds={
            "threshold": PERCENT,
            "preserve": Bounds(low=0, high=100, low_open=True, high_open=True),
            "tool_budget": AT_LEAST_0,
            "preview_lines": AT_LEAST_1,
        },
        canonical=("gemini-compress-50pct-keep-30pct",),
        source="google-gemini/gemini-cli chatCompressionService.ts",
    )
)
