"""`codex-tool-trunc-10k`: Codex CLI's head+tail ("middle") truncation of tool output.

Rule: when a tool result is recorded into history, a result larger than 1.2 x the policy is
cut to its first and last halves of that budget with a marker in the middle:
`…{n} chars truncated…` under a byte policy, `…{n} tokens truncated…` under a token policy.
Shell-like output that was cut is prefixed with `Total output lines: {L}` and a blank line.
The cut happens once, at record time, so every request shows the same text (lossy storage).

Defaults: limit = 10,000; unit = `auto` (tokens for `*-codex` models, bytes otherwise; bytes
cut at character boundaries, tokens estimated as bytes/4 as Codex does). Cache class:
append-only.

Source: openai/codex context_manager/history.rs `process_item`,
utils/output-truncation/src/lib.rs, utils/string truncate.rs, model_info.rs (truncation policy).
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import AT_LEAST_1, Bounds, StrategyContext, StrategySpec, register
from replay.strategies._common import GrownView, ItemMemo, tool_kind
from replay.strategies._view import Item, ToolResultItem, replace_output


def middle_truncate(text: str, budget: int, unit: str) -> str:
    """Codex's head+tail cut of `text` to `budget` bytes (or estimated tokens)."""
    data = text.encode("utf-8")
    size = len(data) if unit == "bytes" else (len(data) + 3) // 4
    if size <= budget:
        return text
    keep_bytes = budget if unit == "bytes" else budget * 4
    head = data[: keep_bytes // 2].decode("utf-8", "ignore")
    tail = data[len(data) - keep_bytes // 2 :].decode("utf-8", "ignore")
    if unit == "bytes":
        marker = f"…{len(text) - len(head) - len(tail)} chars truncated…"
    else:
        marker = f"…{size - budget} tokens truncated…"
    return head + marker + tail


def codex_tool_trunc(limit: int = 10000, unit: str = "auto") -> object:
    memo = ItemMemo()  # an item is cut once, under the policy of the request that first saw it
    view = GrownView()

    def cap_on_record(history: Sequence[Item], ctx: StrategyContext) -> list[Item]:
        mode = unit if unit != "auto" else ("tokens" if "codex" in ctx.model else "bytes")
        budget = limit * 12 // 10

        def cap(item: ToolResultItem) -> ToolResultItem:
            cut = middle_truncate(item.output, budget, mode)
            if cut != item.output and tool_kind(item.tool_name) in ("shell", "test"):
                cut = f"Total output lines: {len(item.output.splitlines())}\n\n{cut}"
            return replace_output(item, cut)

        for item in history[view.sync(history) :]:
            view.append(memo.get(item, cap) if isinstance(item, ToolResultItem) else item)
        return view.items()

    return cap_on_record


register(
    StrategySpec(
        family="codex-tool-trunc",
        pattern=r"codex-tool-trunc-(?P<limit>\d+k?)(?:-(?P<unit>bytes|tokens))?",
        build=codex_tool_trunc,
        cache_class="append-only",
        rule="at record time, middle-truncate each tool output over 1.2 x the policy to head + "
        "tail halves with a `…N chars truncated…` marker",
        defaults={"limit": 10000, "unit": "auto"},
        bounds={"limit": AT_LEAST_1, "unit": Bounds(words=("auto", "bytes", "tokens"))},
        canonical=("codex-tool-trunc-10k",),
        source="openai/codex context_manager/history.rs, utils/output-truncation",
    )
)
