"""`append-supersede`: the cost article's "append" — supersede, never rewrite.

Rule: history is never edited. When a file is read again, the new read is appended as a
versioned entry: if its content equals the latest version already in context (an earlier read
or the content the agent itself wrote, once the write succeeded), only a short note is
appended ("unchanged since version N above"); otherwise the full new content is appended under
a header saying which version it supersedes. A read of a range of lines is not a version: it
is kept as it is. Each result is shaped once, when it enters history, so every emitted
position stays as it was.

Defaults: none. Cache class: append-only.

Source: the cost article (seed, Chinese follow-up): supersede an old file read by appending a
newer, versioned read instead of rewriting history. The note wording is this project's.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import StrategyContext, StrategySpec, register
from replay.strategies._common import (
    ReplacedResults,
    path_of,
    reads_part_of_file,
    result_kind,
    tool_kind,
)
from replay.strategies._view import AssistantItem, Item, ToolResultItem, replace_output


def append_supersede() -> object:
    shaped: dict[int, ToolResultItem] = {}
    versions: dict[str, list[str]] = {}  # path → contents, version 1 first
    writes: dict[str, tuple[str, str]] = {}  # call id → (path, content) of a write in flight
    done = 0  # history items already shaped
    view = ReplacedResults(shaped, lambda result: shaped[result.event_index])

    def supersede(history: Sequence[Item], ctx: StrategyContext) -> list[Item]:
        nonlocal done

        def shape(event_index: int, item: ToolResultItem) -> None:
            shaped[event_index] = item
            view.update(history, (event_index,))

        view.sync(history)
        for item in history[done:]:
            if isinstance(item, AssistantItem):
                for b in item.tool_calls:
                    path = path_of(b.arguments)
                    content = b.arguments.get("content") if isinstance(b.arguments, dict) else None
                    writes_file = tool_kind(b.name, b.arguments) == "write"
                    if path and writes_file and isinstance(content, str):
                        writes[b.call_id or ""] = (path, content)
            elif isinstance(item, ToolResultItem) and item.call_id in writes:
                path, content = writes.pop(item.call_id)
                if not item.is_error:  # a write that failed wrote no version
                    versions.setdefault(path, []).append(content)
            elif isinstance(item, ToolResultItem) and result_kind(item) == "read":
                path = path_of(item.arguments)
                if not path or item.is_error or reads_part_of_file(item.arguments):
                    continue  # a range of lines is not a version of the file: kept as it is
                seen = versions.setdefault(path, [])
                if seen and seen[-1] == item.output:
                    note = f"[{path}: unchanged since version {len(seen)} above]"
                    shape(item.event_index, replace_output(item, note))
                elif seen:
                    seen.append(item.output)
                    header = (
                        f"[{path} version {len(seen)}; supersedes version {len(seen) - 1} above]\n"
                    )
                    shape(item.event_index, replace_output(item, header + item.output))
                else:
                    seen.append(item.output)
        done = len(history)
        return view.items()

    return supersede


register(
    StrategySpec(
        family="append-supersede",
        pattern=r"append-supersede",
        build=append_supersede,
        cache_class="append-only",
        rule="never rewrite: a re-read file is appended as a new version (or a short 'unchanged "
        "since version N' note) that supersedes the old read",
        canonical=("append-supersede",),
        source="cost article (append with supersession)",
    )
)
