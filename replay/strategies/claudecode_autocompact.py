"""`claudecode-autocompact-13k`: Claude Code's automatic compaction (UNVERIFIED).

From public analyses of the proprietary client, not from source or official docs.

Rule: before a model call, when the tokens of the last response (prompt + output) reach
`window - min(max output, 20,000) - buffer` (200k window → 167,000), a forked summarizer call
re-sends the same system prompt, tools and history plus a 9-section summary prompt (so it reads
the main cache). The conversation is replaced by one user message — "This session is being
continued from a previous conversation that ran out of context. …" + the summary — followed by
the most recently read or edited files re-attached (at most `files` files, each at most 5,000
tokens, 50,000 in total; a bigger file is re-attached as its path only). Later compactions
re-summarize that message (rotating).

Defaults: buffer = 13,000, max_output = 32,000, files = 5, file_tokens = 5,000,
files_total = 50,000. Cache class: freeze-once.

Source: public analyses (UNVERIFIED) of services/compact/autoCompact.ts and compact.ts;
Piebald-AI/claude-code-system-prompts (summary prompt structure); code.claude.com docs
"What survives compaction".
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_0, AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import (
    Frozen,
    SummarySource,
    forked_call,
    path_of,
    reported_tokens,
    result_kind,
    summary_item,
)
from replay.strategies._prompts import CLAUDE_CODE_INSTRUCTION, LITERAL_CLAUDE_CONTINUATION
from replay.strategies._view import (
    Item,
    RewriteEvent,
    ToolResultItem,
    UserItem,
    View,
)

# Edit calls' argument names: Claude Code and Gemini CLI (`old_string`), opencode (`oldString`),
# pi (`oldText`); MultiEdit sends a list of them under `edits`.
_EDIT_KEYS = (("old_string", "new_string", "replace_all"), ("oldString", "newString", "replaceAll"),
              ("oldText", "newText", "replaceAll"))


def _edited(content: str, arguments: dict) -> str | None:
    """`content` after an edit call's replacements (each old string once, or every time with
    `replace_all`), or None when the call is not an edit or an old string is not in it (the
    file held more than the reads showed)."""
    edits = arguments.get("edits") if isinstance(arguments.get("edits"), list) else [arguments]
    changed = False
    for edit in edits:
        if not isinstance(edit, dict):
            return None
        keys = next((k for k in _EDIT_KEYS
                     if isinstance(edit.get(k[0]), str) and isinstance(edit.get(k[1]), str)), None)
        if keys is None:
            return None
        old, new = edit[keys[0]], edit[keys[1]]
        if not old or old not in content:
            return None
        content = content.replace(old, new, -1 if edit.get(keys[2]) else 1)
        changed = True
    return content if changed else None


def recent_files(items: Sequence[Item]) -> list[tuple[str, str]]:
    """(path, latest content) of files read, written or edited, most recent first (a failed
    call changes nothing). An edit applies to the content the history holds; where it cannot
    (no earlier read of the file, or a part of it only), the file is still among the most
    recently edited, with the content last seen: Claude Code re-attaches the file as it is on
    disk, which the log does not hold."""
    latest: dict[str, str] = {}
    for item in items:
        if not isinstance(item, ToolResultItem) or item.is_error:
            continue
        kind, path, args = result_kind(item), path_of(item.arguments), item.arguments
        if not path:
            continue
        if kind == "read":
            content: str | None = item.output
        elif kind == "write" and isinstance(args, dict):
            content = args.get("content") if isinstance(args.get("content"), str) else None
            if content is None and path in latest:
                edited = _edited(latest[path], args)
                content = latest[path] if edited is None else edited
        else:
            continue
        if content is not None:
            latest.pop(path, None)
            latest[path] = content
    return list(reversed(latest.items()))


def restored_files(
    items: Sequence[Item], ctx: StrategyContext, files: int, each: int, total: int
) -> list[Item]:
    out: list[Item] = []
    used = 0
    for path, content in recent_files(items)[:files]:
        size = ctx.count_tokens(content)
        if size <= each and used + size <= total:
            args = json.dumps({"file_path": path})
            text = f"Called the Read tool with the following input: {args}\n"
            text += f"Result of calling the Read tool:\n{content}"
            used += size
        else:
            text = (
                f"The file {path} was read before compaction (too large to re-attach; read it "
                "again if needed)."
            )
        out.append(UserItem(text, injected=True))
    return out


def claudecode_autocompact(
    buffer: int = 13000,
    max_output: int = 32000,
    files: int = 5,
    file_tokens: int = 5000,
    files_total: int = 50000,
) -> object:
    state = Frozen()
    summaries = SummarySource()

    def compact_near_full(history: Sequence[Item], ctx: StrategyContext) -> View:
        view = state.view(history)
        threshold = ctx.context_window - min(max_output, 20000) - buffer
        if reported_tokens(ctx, view) < threshold:
            return View(items=view)
        text, source = summaries.text(ctx, view)
        message = (
            f"{LITERAL_CLAUDE_CONTINUATION}\n\n{text}\n\nIf you need specific details from before "
            "compaction, read the full transcript at ~/.claude/projects/session.jsonl"
        )
        head = [
            summary_item(message, view, source),
            *restored_files(view, ctx, files, file_tokens, files_total),
        ]
        state.reset(head, history)
        return View(
            items=state.view(history),
            summarizer_calls=[forked_call(view, CLAUDE_CODE_INSTRUCTION, text)],
            events=[
                RewriteEvent(
                    "compaction",
                    f"{counted(len(view), 'item')} → summary + {counted(len(head) - 1, 'file')}",
                )
            ],
        )

    return compact_near_full


register(
    StrategySpec(
        family="claudecode-autocompact",
        pattern=r"claudecode-autocompact-(?P<buffer>\d+k?)",
        build=claudecode_autocompact,
        cache_class="freeze-once",
        rule="usage >= window - min(max output, 20k) - 13k → forked 9-section summary replaces the "
        "history; <= 5 recent files re-attached (UNVERIFIED)",
        defaults={
            "buffer": 13000,
            "max_output": 32000,
            "files": 5,
            "file_tokens": 5000,
            "files_total": 50000,
        },
        bounds={
            "buffer": AT_LEAST_0,
            "max_output": AT_LEAST_1,
            "files": AT_LEAST_0,
            "file_tokens": AT_LEAST_0,
            "files_total": AT_LEAST_0,
        },
        canonical=("claudecode-autocompact-13k",),
        source="Claude Code, public analyses (UNVERIFIED): services/compact/autoCompact.ts",
    )
)
