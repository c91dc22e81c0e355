"""`opencode-tool-trunc-2000l-50kb`: opencode's tool-level output caps (lossy storage).

Rule: when a tool result enters history, output over `lines` lines or `kb` KB is cut to its
first lines within both caps, followed by `...{k} lines truncated...` (or bytes) and a hint
that the full output was saved to a file and can be searched or paged through. File reads
also cut every line longer than 2,000 characters (`... (line truncated to 2000 chars)`);
searches keep their first 100 matches. Because the cap is applied once, at storage, the model
sees the same text on every request: a lossy store, not a lossy view.

Defaults: lines = 2,000, kb = 50 (51,200 bytes), line_chars = 2,000, grep_matches = 100.
Cache class: append-only. The hint text after "Full output saved to: {path}" is our wording
(the sources quoted stop at "Use Grep…"); the path is a stand-in built from the call id.

Source: sst/opencode packages/opencode/src/tool/truncation.ts (`Truncate.output`), read.ts,
grep.ts.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import GrownView, ItemMemo, result_kind
from replay.strategies._view import Item, ToolResultItem, replace_output

HINT = (
    "The tool call succeeded but the output was truncated. Full output saved to: {path}\n"
    "Use Grep to search the full content or Read with offset/limit to view specific sections."
)


def cap_output(
    item: ToolResultItem, lines: int, max_bytes: int, line_chars: int, grep_matches: int
) -> str:
    text = item.output
    kind = result_kind(item)
    if kind == "read":
        text = "\n".join(
            ln
            if len(ln) <= line_chars
            else ln[:line_chars] + f"... (line truncated to {line_chars} chars)"
            for ln in text.split("\n")
        )
    if kind == "search":
        rows = text.split("\n")
        if len(rows) > grep_matches:
            text = (
                "\n".join(rows[:grep_matches])
                + "\n\n(Results truncated. Consider a more specific path or pattern.)"
            )
    rows = text.split("\n")
    if len(rows) <= lines and len(text.encode("utf-8")) <= max_bytes:
        return text
    kept, size = [], 0
    for row in rows[:lines]:
        row_bytes = len(row.encode("utf-8")) + 1
        if size + row_bytes > max_bytes:
            break
        kept.append(row)
        size += row_bytes
    if len(rows) > lines and len(kept) == lines:
        removed = f"{len(rows) - len(kept)} lines"
    else:
        removed = f"{len(text.encode('utf-8')) - size} bytes"
    path = f"~/.local/share/opencode/tool-output/{item.call_id}.txt"
    return "\n".join(kept) + f"\n\n...{removed} truncated...\n\n" + HINT.format(path=path)


def opencode_tool_trunc(
    lines: int = 2000, kb: int = 50, line_chars: int = 2000, grep_matches: int = 100
) -> object:
    memo = ItemMemo()
    view = GrownView()  # a result is capped once, when it is recorded

    def cap(item: ToolResultItem) -> ToolResultItem:
        return replace_output(item, cap_output(item, lines, kb * 1024, line_chars, grep_matches))

    def store_capped(history: Sequence[Item], ctx: StrategyContext) -> list[Item]:
        for item in history[view.sync(history) :]:
            view.append(memo.get(item, cap) if isinstance(item, ToolResultItem) else item)
        return view.items()

    return store_capped


register(
    StrategySpec(
        family="opencode-tool-trunc",
        pattern=r"opencode-tool-trunc-(?P<lines>\d+)l-(?P<kb>\d+)kb",
        build=opencode_tool_trunc,
        cache_class="append-only",
        rule="when a result is stored: over 2000 lines or 50 KB → keep the head, save the rest to "
        "a file, add a pagination hint (reads: lines cut at 2000 chars; grep: 100 matches)",
        defaults={"lines": 2000, "kb": 50, "line_chars": 2000, "grep_matches": 100},
        bounds={
            "lines": AT_LEAST_1,
            "kb": AT_LEAST_1,
            "line_chars": AT_LEAST_1,
            "grep_matches": AT_LEAST_1,
        },
        canonical=("opencode-tool-trunc-2000l-50kb",),
        source="sst/opencode tool/truncation.ts, read.ts, grep.ts",
    )
)
