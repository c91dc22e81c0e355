"""`pi-compact-16k-20k`: pi-coding-agent's compaction.

Rule: checked between prompts (when a new user prompt arrives), never in the middle of an
agent run — except on a context overflow, where pi compacts and retries. It compacts when the
last response's total tokens (input + output + cache reads + cache writes) exceed
`window - reserve`. The cut: walking back from the newest entry (since the last compaction)
and adding estimated sizes until they reach `keep`, the cut is the first valid cut point at
or after that entry — a user or assistant message, never a tool result. Everything before it
is summarized by a fresh request (pi's summarizer system prompt, the span serialized as
`[User]: …` lines inside `<conversation>`, the previous summary if any); when the cut falls
inside a turn, the turn's prefix is summarized by a second call and appended after `---`. The
summary gets the lists of files read and modified, and is injected as a user message
("The conversation history before this point was compacted…") followed by the kept entries.
A summary from the log is pi's stored text, final already: nothing is appended to it but the
file lists, and those only when it has none (pi logs before the lists were added); a split
turn's second call is still costed.

Defaults: reserve = 16,384 (so `16k` in the name means 16 x 1,024), keep = 20,000.
Cache class: freeze-once.

Source: badlogic/pi-mono packages/coding-agent/src/core/compaction/compaction.ts,
session-manager.ts (`buildSessionContext`), agent-session.ts, messages.ts (summary wrapper).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import AT_LEAST_0, StrategyContext, StrategySpec, register
from replay.strategies._common import (
    Frozen,
    SummarySource,
    fresh_call,
    is_real_user,
    item_est,
    path_of,
    reported_tokens,
    result_kind,
    summary_item,
    trigger_at_user_turn,
    valid_start,
)
from replay.strategies._prompts import LITERAL_PI_SUMMARY, PI_INSTRUCTION
from replay.strategies._summary import structured_summary
from replay.strategies._view import (
    Item,
    RewriteEvent,
    SummaryItem,
    ToolResultItem,
    UserItem,
    View,
)


def pi_cut(items: Sequence[Item], keep: int) -> int:
    """Index of the first kept entry: walk back to `keep` estimated tokens, then forward to the
    first valid cut point (never a tool result). 0 = nothing to summarize."""
    acc = 0
    for n in range(len(items) - 1, -1, -1):
        acc += item_est(items[n])
        if acc >= keep:
            for m in range(n, len(items)):
                if valid_start(items, m):
                    return m
            return 0
    return 0


def opens_turn(items: Sequence[Item], n: int) -> bool:
    """Does a cut at `items[n]` fall between turns? At a user prompt, or at context the log
    does not hold that came with it (user-role items up to the prompt): pi's entry is the
    prompt, whatever replay fitted in front of it; a cut there split no turn, and its
    previous turn was summarized again on its own."""
    for item in items[n:]:
        if is_real_user(item):
            return True
        if not isinstance(item, UserItem):
            return False
    return False


def file_lists(items: Sequence[Item]) -> str:
    read, modified = [], []
    for item in items:
        if isinstance(item, ToolResultItem):
            path = path_of(item.arguments)
            if path:
                (modified if result_kind(item) == "write" else read).append(path)
    read = [p for p in dict.fromkeys(read) if p not in modified]
    out = ""
    if read:
        out += "\n\n<read-files>\n" + "\n".join(read) + "\n</read-files>"
    if modified:
        out += "\n\n<modified-files>\n" + "\n".join(dict.fromkeys(modified)) + "\n</modified-files>"
    return out


_BEFORE_S, _AFTER_S = LITERAL_PI_SUMMARY.split("{summary}")


def unwrapped(summary: SummaryItem) -> str:
    """The summary S of an injected summary message (the text inside pi's wrapper)."""
    return summary.text.removeprefix(_BEFORE_S).removesuffix(_AFTER_S)


def has_file_lists(summary: str) -> bool:
    return "<read-files>" in summary or "<modified-files>" in summary


def pi_compact(reserve: int = 16384, keep: int = 20000) -> object:
    state = Frozen()
    summaries = SummarySource()

    def compact_between_prompts(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = state.view(history)
        overflow = state.request_tokens(history, ctx) > ctx.context_window
        due = trigger_at_user_turn(history) and (
            reported_tokens(ctx, view) > ctx.context_window - reserve
        )
        if not (overflow or due):
            return View(items=view)
        prior = view[0] if view and isinstance(view[0], SummaryItem) else None
        body = view[1:] if prior else view
        # Between prompts, pi cuts the entries that exist before the new prompt is added: the
        # prompt is no part of the kept tail.
        pending = 0
        if due:
            while pending < len(body) and is_real_user(body[len(body) - 1 - pending]):
                pending += 1
        cut = pi_cut(body[: len(body) - pending], keep)
        if cut <= 0:
            return View(items=view)
        turn_start = max((n for n in range(cut + 1) if is_real_user(body[n])), default=0)
        split = not opens_turn(body, cut) and turn_start < cut
        history_part = body[:turn_start] if split else body[:cut]
        calls = []
        prompt = PI_INSTRUCTION
        if prior:  # pi passes the stored S, not the message that wraps it
            prompt = f"<previous-summary>\n{unwrapped(prior)}\n</previous-summary>\n\n{prompt}"
        text, source = summaries.text(ctx, ([prior] if prior else []) + list(history_part))
        if history_part or prior:
            calls.append(fresh_call(history_part, prompt, text, style="pi"))
        if split:
            # The log's summary is used once, above: the prefix call's output is a stand-in.
            prefix_text = structured_summary(body[turn_start:cut])
            calls.append(fresh_call(body[turn_start:cut], PI_INSTRUCTION, prefix_text, style="pi"))
            if source != "logged":  # a logged summary is the final text: merged already
                text = f"{text}\n\n---\n\n**Turn Context (split turn):**\n\n{prefix_text}"
        # pi stores S with its file lists: a pi log's summary holds them already.
        if source != "logged" or not has_file_lists(text):
            text += file_lists(body[:cut])
        summary = summary_item(LITERAL_PI_SUMMARY.format(summary=text), body[:cut], source)
        state.reset([summary, *body[cut:]], history)
        return View(
            items=state.view(history),
            summarizer_calls=calls,
            events=[
                RewriteEvent(
                    "compaction", f"{cut} entries → summary" + (" (split turn)" if split else "")
                )
            ],
        )

    return compact_between_prompts


register(
    StrategySpec(
        family="pi-compact",
        pattern=r"pi-compact-(?P<reserve>\d+k?)-(?P<keep>\d+k?)",
        build=pi_compact,
        cache_class="freeze-once",
        rule="between prompts (or on overflow): usage > window - 16,384 → summarize all before a "
        "cut keeping >= 20,000 recent tokens; never cut at a tool result",
        defaults={"reserve": 16384, "keep": 20000},
        bounds={"reserve": AT_LEAST_0, "keep": AT_LEAST_0},
        canonical=("pi-compact-16k-20k",),
        source="badlogic/pi-mono coding-agent/src/core/compaction/compaction.ts",
        kilo={"reserve": 1024},
    )
)
