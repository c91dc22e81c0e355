"""`codex-compact-at-90pct`: Codex CLI's local compaction (non-OpenAI providers).

Rule: before a request, when the context the harness believes it has — the previous response's
reported total tokens plus an estimate (chars/4) of the items added since, a new prompt not
counted — reaches the limit
`min(configured limit, pct% of the window)`, one summarizer call is made with the whole history
plus the compaction prompt. The history is then replaced by the most recent real user messages
(newest first while they fit in 20,000 estimated tokens; the one that does not fit is
middle-truncated to the remaining budget) followed by one user message: the fixed summary
prefix, a newline, and the summary. When the request starts a new prompt, Codex compacts before
it records the prompt: the prompt is neither summarized nor counted among the kept user
messages, and follows the summary (mid-turn, everything is compacted and the summary comes
last). The compacted history keeps none of the initial context (the injected messages that
open the thread: permissions, AGENTS.md instructions, environment context); Codex re-injects
it — mid-turn just before the last user message, before a new prompt at that turn, after the
summary (~17k tokens on the Codex a7 sample, which a compaction dropped until 2026-12-07).
If the compaction request itself would overflow the window, the oldest item (with its
call/result partner) is dropped from it and it is retried ("trim from the beginning to preserve
cache").

Defaults: pct = 90 of the window Codex's model info gives (gpt-5.x: 272,000 x 0.9 = 244,800;
gpt-oss: 96,000, not the model's 131,072), limit = 0 (no configured limit),
keep_user_tokens = 20,000. Cache class: freeze-once (one rewrite + one summarizer call per
compaction, append-only between).

Replay notes: the summarizer call re-sends the main instructions and history with `tools=[]`:
without the tool definitions that open the main prompt it reads nothing of the main thread's
cache (a part of the unlogged head, e.g. tool schemas a Codex rollout does not log, is still
sent with it). The summary is the log's when the run recorded one, else the extractive
stand-in.

Source: openai/codex compact.rs (`run_compact_task_inner`, `build_compacted_history_with_limit`),
codex.rs (`run_task` pre-turn and post-sample checks), openai_models.rs
(`auto_compact_token_limit`),
history.rs (token estimate), templates/compact/summary_prefix.md (prefix text).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import AT_LEAST_0, PERCENT, StrategyContext, StrategySpec, register
from replay.strategies._common import (
    Frozen,
    SummarySource,
    est,
    forked_call,
    framed_tokens,
    head_tokens,
    is_real_user,
    repair_pairs,
    reported_tokens,
    since_last_assistant,
    summary_item,
    trigger_at_user_turn,
)
from replay.strategies._prompts import (
    CODEX_INSTRUCTION,
    LITERAL_CODEX_NO_SUMMARY,
    LITERAL_CODEX_SUMMARY_PREFIX,
)
from replay.strategies._view import Item, RewriteEvent, UserItem, View


def truncate_middle_tokens(text: str, budget: int) -> str:
    """Keep the head and tail of `text` within `budget` estimated tokens, with Codex's marker."""
    if est(text) <= budget:
        return text
    keep_chars = max(0, budget * 4)
    head, tail = text[: keep_chars // 2], text[len(text) - keep_chars // 2 :] if keep_chars else ""
    removed = est(text) - budget
    return f"{head}…{removed} tokens truncated…{tail}"


KEEP_USER_TOKENS = 20_000
"""Codex's budget of estimated tokens for the user messages a compaction keeps."""


def newest_within(texts: Sequence[str], budget: int) -> list[tuple[int, str]]:
    """The user messages a Codex compaction keeps (`build_compacted_history_with_limit`): of
    `texts` (oldest first), the newest while they fit in `budget` estimated tokens, the one
    that does not fit middle-truncated to what is left; (index, text), oldest first."""
    kept: list[tuple[int, str]] = []
    for n in range(len(texts) - 1, -1, -1):
        if budget <= 0:
            break
        size = est(texts[n])
        if size > budget:
            kept.append((n, truncate_middle_tokens(texts[n], budget)))
            break
        kept.append((n, texts[n]))
        budget -= size
    return kept[::-1]


def drop_oldest_until_fits(items: list[Item], ctx: StrategyContext, extra: str) -> list[Item]:
    """Codex's retry loop: drop the oldest item (and its pair) while the request overflows.
    The request is the summarizer call: `items`, then `extra` (the compaction prompt), sent
    without tools; its size is counted as the provider bills it (a chars/4 estimate without
    the framing and the hidden prefix let calls over the window through)."""
    items = list(items)
    head = head_tokens(ctx, tools=False) + ctx.count_tokens(extra) + ctx.message_overhead
    while len(items) > 1 and framed_tokens(items, ctx) + head > ctx.context_window:
        items = repair_pairs(items[1:], items)
    return items


CODEX_WINDOWS = (("gpt-oss", 96_000),)
"""Windows Codex's own model info gives below the model's (gpt-oss: 96,000 of its 131,072,
research strategies.md: model_info.rs); its limits count against these."""


def codex_window(ctx: StrategyContext) -> int:
    """The context window Codex believes the model has: its model info's, where that is
    smaller than the one replay gives strategies (`--context-window` may lower it further)."""
    model = ctx.model.lower()
    own = next((tokens for name, tokens in CODEX_WINDOWS if name in model), None)
    return ctx.context_window if own is None else min(own, ctx.context_window)


def codex_limit(ctx: StrategyContext, pct: int, limit: int) -> int:
    window_limit = codex_window(ctx) * pct // 100
    return min(limit, window_limit) if limit > 0 else window_limit


def codex_tokens(ctx: StrategyContext, view: Sequence[Item], history: Sequence[Item]) -> int:
    """What Codex compares with its limit: the last response's total tokens plus an estimate
    of the items after it, without a new prompt (the pre-turn check runs before the prompt is
    recorded)."""
    pending = since_last_assistant(history)
    if trigger_at_user_turn(history):
        pending = pending[:-1]
    return reported_tokens(ctx, view, pending=pending)


def initial_context(history: Sequence[Item]) -> list[Item]:
    """The injected messages that open the thread, before its first real user message (Codex's
    permissions, AGENTS.md instructions, environment context): what Codex re-injects after a
    compaction, which keeps none of them."""
    opening: list[Item] = []
    for item in history:
        if not (isinstance(item, UserItem) and item.injected):
            break
        opening.append(item)
    return opening


def compacted_head(
    users: Sequence[Item], summary: Item, initial: Sequence[Item], mid_turn: bool
) -> list[Item]:
    """The history a Codex compaction leaves: the kept user messages and the summary (or the
    remote compaction item), with the initial context re-injected — mid-turn just before the
    last user message, so the summary stays last; before a new prompt, after the summary, as
    the next turn re-sends it (the prompt follows)."""
    if mid_turn and users:
        return [*users[:-1], *initial, users[-1], summary]
    return [*users, summary, *initial]


def compacted_until(history: Sequence[Item], state: Frozen) -> int:
    """How much of `history` a compaction covers. At a new prompt Codex compacts before it
    records the prompt (`run_task`'s pre-turn check), so the prompt stays out of the summary
    and of the kept user messages, and follows the summary; mid-turn it covers everything."""
    if trigger_at_user_turn(history) and state.covered < len(history):
        return len(history) - 1
    return len(history)


def codex_compact(
    pct: int = 90, limit: int = 0, keep_user_tokens: int = KEEP_USER_TOKENS
) -> object:
    state = Frozen()
    summaries = SummarySource()

    def compact_at_limit(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = state.view(history)
        if codex_tokens(ctx, view, history) < codex_limit(ctx, pct, limit):
            return View(items=view)
        upto = compacted_until(history, state)
        compacted = view[: len(view) - (len(history) - upto)]
        request = drop_oldest_until_fits(compacted, ctx, CODEX_INSTRUCTION)
        text, source = summaries.text(ctx, request)
        text = text.strip() or LITERAL_CODEX_NO_SUMMARY
        users: list[UserItem] = [i for i in compacted if is_real_user(i)]  # type: ignore[misc]
        kept = [
            users[n] if text is users[n].text else UserItem(text, users[n].event_index)
            for n, text in newest_within([u.text for u in users], keep_user_tokens)
        ]
        summary = summary_item(LITERAL_CODEX_SUMMARY_PREFIX + "\n" + text, compacted, source)
        head = compacted_head(kept, summary, initial_context(history), upto == len(history))
        state.reset(head, history[:upto])
        return View(
            items=state.view(history),
            summarizer_calls=[forked_call(request, CODEX_INSTRUCTION, text, with_tools=False)],
            events=[
                RewriteEvent(
                    "compaction", f"{len(compacted)} items → {len(kept)} user msgs + summary"
                )
            ],
        )

    return compact_at_limit


register(
    StrategySpec(
        family="codex-compact",
        pattern=r"codex-compact-at-(?P<pct>\d+)pct",
        build=codex_compact,
        cache_class="freeze-once",
        rule="reported usage >= min(cfg, 90% of window) → summarize the whole history; keep recent "
        "user messages (<= 20k tokens) + summary",
        defaults={"pct": 90, "limit": 0, "keep_user_tokens": KEEP_USER_TOKENS},
        bounds={"pct": PERCENT, "limit": AT_LEAST_0, "keep_user_tokens": AT_LEAST_0},
        canonical=("codex-compact-at-90pct",),
        source="openai/codex compact.rs, codex.rs, openai_models.rs",
    )
)
