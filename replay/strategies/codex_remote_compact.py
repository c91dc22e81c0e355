"""`codex-remote-compact-at-90pct`: Codex CLI's compaction on the OpenAI provider.

Rule: same trigger as `codex-compact-at-90pct` (reported usage plus the estimate of new items
reaching min(configured limit, pct% of the window)). The history is posted to the Responses
compaction endpoint, which returns the real user messages plus one opaque (encrypted)
compaction item; the next requests send exactly that, then append. At a new prompt the history
is compacted before the prompt is recorded, so the prompt follows the compaction item (as in
`codex-compact-at-90pct`). The initial context (the injected messages that open the thread) is
re-injected as in `codex-compact-at-90pct`: mid-turn before the last user message. Before
posting, while the history overflows the window and its last
item is Codex-generated (a tool output or a harness message: not the model's nor the user's),
that item is popped with its call/result partner.

Defaults: pct = 90, limit = 0 (none configured). Cache class: freeze-once.

Replay notes: the compaction call is costed as a request sharing the main prefix (same
conversation, `prompt_cache_key` = conversation id). The encrypted item's size is unknown; it
is sized like a summary (the log's if recorded, else the extractive stand-in).

Source: openai/codex compact_remote.rs; core/src/client.rs (prompt_cache_key).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import AT_LEAST_0, PERCENT, StrategyContext, StrategySpec, register
from replay.strategies._common import (
    Frozen,
    SummarySource,
    est,
    forked_call,
    is_real_user,
    items_est,
    repair_pairs,
    summary_item,
)
from replay.strategies._prompts import SERVER_COMPACTION_INSTRUCTION
from replay.strategies._view import Item, RewriteEvent, ToolResultItem, UserItem, View
from replay.strategies.codex_compact import (
    codex_limit,
    codex_tokens,
    codex_window,
    compacted_head,
    compacted_until,
    initial_context,
)


def codex_generated(item: Item) -> bool:
    """An item Codex itself wrote into the history (a tool output, a harness message), which
    it may trim before posting; the model's messages and the user's are not."""
    return isinstance(item, ToolResultItem) or (isinstance(item, UserItem) and item.injected)


def codex_remote_compact(pct: int = 90, limit: int = 0) -> object:
    state = Frozen()
    summaries = SummarySource()

    def compact_on_server(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = state.view(history)
        if codex_tokens(ctx, view, history) < codex_limit(ctx, pct, limit):
            return View(items=view)
        upto = compacted_until(history, state)
        compacted = view[: len(view) - (len(history) - upto)]
        request = list(compacted)
        while (
            len(request) > 1
            and items_est(request) + est(ctx.system) > codex_window(ctx)
            and codex_generated(request[-1])
        ):
            request = repair_pairs(request[:-1], request)
        text, source = summaries.text(ctx, request)
        users = [i for i in request if is_real_user(i)]
        item = summary_item(text, compacted, "server" if source != "logged" else source)
        head = compacted_head(users, item, initial_context(history), upto == len(history))
        state.reset(head, history[:upto])
        return View(
            items=state.view(history),
            summarizer_calls=[forked_call(request, SERVER_COMPACTION_INSTRUCTION, text)],
            events=[
                RewriteEvent(
                    "compaction", f"{len(compacted)} items → {len(users)} user msgs + item"
                )
            ],
        )

    return compact_on_server


register(
    StrategySpec(
        family="codex-remote-compact",
        api="openai",
        pattern=r"codex-remote-compact-at-(?P<pct>\d+)pct",
        build=codex_remote_compact,
        cache_class="freeze-once",
        rule="same trigger as codex-compact; /responses/compact → real user messages + one opaque "
        "compaction item",
        defaults={"pct": 90, "limit": 0},
        bounds={"pct": PERCENT, "limit": AT_LEAST_0},
        canonical=("codex-remote-compact-at-90pct",),
        source="openai/codex compact_remote.rs",
    )
)
