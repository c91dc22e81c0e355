"""`claudecode-microcompact-time-60m-keep-5`: Claude Code's time-based microcompact (UNVERIFIED).

From public analyses of the proprietary client, not from source or official docs.

Rule: when at least `gap` minutes passed since the last assistant message (so the provider's
cache has expired anyway and the next request re-writes it whatever is sent), every result of
a compactable tool (Claude Code's Read, Bash, PowerShell, Grep, Glob, WebSearch, WebFetch,
Edit and Write; for other harnesses' tools, those that read, run, search, list, fetch or write)
except the `keep` newest is
replaced by `[Old tool result content cleared]`, for good. Between such gaps nothing changes.

Defaults: gap = 60 minutes, keep = 5 (at least 1). Cache class: freeze-once (rewrites only when
the cache is already cold). The time since the last assistant message is measured from its
`ts` in the log, or from the previous request's start where that is later (its answer is not
logged).

Source: public analyses (UNVERIFIED) of microCompact.ts `maybeTimeBasedMicrocompact`.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_0, AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import ReplacedResults, tool_kind
from replay.strategies._prompts import LITERAL_CLEARED
from replay.strategies._view import Item, RewriteEvent, ToolResultItem, View, replace_output

COMPACTABLE = frozenset({"read", "shell", "test", "search", "list", "web", "write"})
"""Kinds of tools whose results are cleared, for a log of another harness (`tool_kind`)."""

CLAUDE_CODE_COMPACTABLE = frozenset(
    {"Read", "Bash", "PowerShell", "Grep", "Glob", "WebSearch", "WebFetch", "Edit", "Write"}
)
"""The tools Claude Code clears, by name (the list of the analyses)."""

CLAUDE_CODE_TOOLS = CLAUDE_CODE_COMPACTABLE | frozenset(
    {"MultiEdit", "NotebookEdit", "NotebookRead", "BashOutput", "KillShell", "TodoWrite", "Task",
     "LS", "ExitPlanMode", "SlashCommand", "Skill"}
)
"""Claude Code's own tool names: for these the list decides, not the kind (TodoWrite is a
write by its name, and not cleared)."""


def compactable(tool_name: str | None) -> bool:
    if tool_name in CLAUDE_CODE_TOOLS:
        return tool_name in CLAUDE_CODE_COMPACTABLE
    return tool_kind(tool_name) in COMPACTABLE


def claudecode_microcompact(gap: int = 60, keep: int = 5) -> object:
    cleared: set[int] = set()
    view = ReplacedResults(cleared, lambda i: replace_output(i, LITERAL_CLEARED))

    def clear_when_cold(history: Sequence[Item], ctx: StrategyContext) -> View:
        view.sync(history)
        events = []
        since = max((t for t in (ctx.last_answer_ts, ctx.previous_ts) if t), default=None)
        if since is not None and (ctx.ts - since).total_seconds() >= gap * 60:
            results = [
                i
                for i in history
                if isinstance(i, ToolResultItem) and compactable(i.tool_name)
            ]
            old = results[: -max(1, keep)]
            new = [i for i in old if i.event_index not in cleared and i.output != LITERAL_CLEARED]
            if new:
                cleared.update(i.event_index for i in new)
                view.update(history, {i.event_index for i in new})
                events.append(
                    RewriteEvent(
                        "clear", f"cleared {counted(len(new), 'result')} after a {gap} min gap"
                    )
                )
        return View(items=view.items(), events=events)

    return clear_when_cold


register(
    StrategySpec(
        family="claudecode-microcompact-time",
        pattern=r"claudecode-microcompact-time-(?P<gap>\d+)m-keep-(?P<keep>\d+)",
        build=claudecode_microcompact,
        cache_class="freeze-once",
        rule=">= 60 min since the last response (cache cold) → clear all but the 5 newest "
        "compactable tool results (UNVERIFIED)",
        defaults={"gap": 60, "keep": 5},
        bounds={"gap": AT_LEAST_0, "keep": AT_LEAST_1},
        canonical=("claudecode-microcompact-time-60m-keep-5",),
        source="Claude Code, public analyses (UNVERIFIED): microCompact.ts",
    )
)
