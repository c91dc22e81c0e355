"""`codex-compact-drop-oldest`: Codex compaction reached only when the window is full.

Rule: Codex's emergency path. No early threshold: compaction runs when the context reaches the
whole window (pct = 100), which is exactly when the compaction request itself overflows; Codex
then drops the oldest history item (with its call/result partner) and retries until the
request fits, so the summary only covers what survived. After that the history is the recent
user messages plus the summary, as in `codex-compact-at-90pct`. (A normal turn that overflows
just errors in Codex; only the compaction request is trimmed.)

Defaults: pct = 100, keep_user_tokens = 20,000. Cache class: freeze-once.

Source: openai/codex compact.rs `run_compact_task_inner` (ContextWindowExceeded → remove the
first item, "Trim from the beginning to preserve cache"); codex.rs `set_total_tokens_full`.
"""

from __future__ import annotations

from replay.strategies._base import AT_LEAST_0, PERCENT, StrategySpec, register
from replay.strategies.codex_compact import KEEP_USER_TOKENS, codex_compact


def codex_drop_oldest(
    pct: int = 100, limit: int = 0, keep_user_tokens: int = KEEP_USER_TOKENS
) -> object:
    return codex_compact(pct=pct, limit=limit, keep_user_tokens=keep_user_tokens)


register(
    StrategySpec(
        family="codex-compact-drop-oldest",
        pattern=r"codex-compact-drop-oldest(?:-at-(?P<pct>\d+)pct)?",
        build=codex_drop_oldest,
        cache_class="freeze-once",
        rule="compact only when the window is full; the compaction request drops its oldest items "
        "(+pairs) until it fits",
        defaults={"pct": 100, "limit": 0, "keep_user_tokens": KEEP_USER_TOKENS},
        bounds={"pct": PERCENT, "limit": AT_LEAST_0, "keep_user_tokens": AT_LEAST_0},
        canonical=("codex-compact-drop-oldest",),
        source="openai/codex compact.rs run_compact_task_inner",
    )
)
