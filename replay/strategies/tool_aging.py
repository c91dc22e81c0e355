"""`tool-aging-keep-3`: per-tool aging in the style of Claude Code's compactable-tools list.

Rule: for each tool separately, the results of its `keep` most recent calls stay verbatim.
Older results change once, when they age out: a file read becomes a one-line stub naming the
path (the agent can read it again; a failed read, or one shorter than its stub, stays as it
is), a directory listing is cut hard to `list_chars`
characters, a search / web / browser result (or one of a tool of no known kind) is cut to
`other_chars`; writes, edits, test runs and shell commands are kept verbatim (what was changed
and what the tests said must survive).

Defaults: keep = 3, list_chars = 200, other_chars = 500. Cache class: freeze-once (each result
changes once, at the request where it ages out; that request carries an `aging` event).

Source: the seed articles (per-tool aging à la Claude Code's compactable-tools list; the
per-tool windows and stub texts are this project's, the list itself is from public analyses of
Claude Code, UNVERIFIED).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from replay.strategies._base import AT_LEAST_0, AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import GrownView, path_of, result_kind
from replay.strategies._view import (
    Item,
    RewriteEvent,
    ToolResultItem,
    View,
    replace_output,
    truncate_chars,
)


def aged(item: ToolResultItem, list_chars: int, other_chars: int) -> ToolResultItem:
    kind = result_kind(item)
    if kind == "read":
        if item.is_error:  # an error is not the file's content, and "read it again" is no help
            return item
        path = path_of(item.arguments) or "the file"
        stub = (
            f"[{path}: content no longer shown ({len(item.output)} chars); read it again if "
            "needed]"
        )
        return replace_output(item, stub) if len(stub) < len(item.output) else item
    if kind == "list":
        return truncate_chars(item, list_chars, "\n…[listing cut]")
    if kind in ("search", "web", "browser", "other"):
        return truncate_chars(item, other_chars)
    return item  # write, test, shell: kept


def tool_aging(keep: int = 3, list_chars: int = 200, other_chars: int = 500) -> object:
    view = GrownView()
    by_tool: dict[str, list[int]] = defaultdict(list)  # tool → positions of its results
    aged_count: dict[str, int] = defaultdict(int)  # tool → how many of them are aged (oldest)

    def age_per_tool(history: Sequence[Item], ctx: StrategyContext) -> View:
        grown: set[str] = set()
        for n in range(view.sync(history), len(history)):
            item = history[n]
            if isinstance(item, ToolResultItem):
                by_tool[item.tool_name].append(n)
                grown.add(item.tool_name)
            view.append(item)
        newly_old: list[int] = []
        for tool in grown:
            positions = by_tool[tool]
            old = min(len(positions), max(0, len(positions) - keep))
            newly_old.extend(positions[aged_count[tool] : old])
            aged_count[tool] = max(aged_count[tool], old)
        events: list[RewriteEvent] = []
        for n in sorted(newly_old):  # in history order, as the events are reported
            item = history[n]
            new = aged(item, list_chars, other_chars)  # type: ignore[arg-type]
            if new is not item:
                events.append(RewriteEvent("aging", f"aged a {item.tool_name} result"))  # type: ignore[union-attr]
            view.set(n, new)
        return View(items=view.items(), events=events)

    return age_per_tool


register(
    StrategySpec(
        family="tool-aging",
        pattern=r"tool-aging-keep-(?P<keep>\d+)",
        build=tool_aging,
        cache_class="freeze-once",
        rule="per tool, the K most recent results verbatim; older reads → re-readable stub with "
        "the path, listings cut hard, writes / tests / shell kept",
        defaults={"keep": 3, "list_chars": 200, "other_chars": 500},
        bounds={"keep": AT_LEAST_0, "list_chars": AT_LEAST_1, "other_chars": AT_LEAST_1},
        canonical=("tool-aging-keep-3",),
        source="seed articles (Claude Code compactable-tools list, public analyses, UNVERIFIED)",
    )
)
