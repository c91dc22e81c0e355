"""Evidence loss: text the recorded agent went on to use that a strategy's view hid.

Offline replay holds the recorded trajectory fixed, so it cannot know what the model would have
done with less context. What it can check, at each request, is whether the response the agent
actually gave *used* text that the strategy's view did not show in full while the log had it:

- `hidden-edit-target`: a write or edit whose old text (for a whole-file write: the lines around
  the change, against the file's last known content) was not visible in the view;
- `hidden-quote`: a tool call whose arguments quote a path, identifier or error string that
  appears in the history but not in the view;
- `stubbed-read`: the file being changed was shown only as a stub or cut-down read, so a real
  agent would have had to read it again first (a re-read cost the replay does not include).

A flag means "the agent acted on something this view hid", not "the run would have failed".
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from replay.strategies._common import item_text, path_of
from replay.strategies._view import (
    AssistantItem,
    Block,
    Item,
    ToolResultItem,
)

_WRITE_TOOL = re.compile(r"write|edit|patch|replace|create|str_replace", re.IGNORECASE)
_READ_TOOL = re.compile(r"read|view|cat|open", re.IGNORECASE)
_CONTENT_KEYS = ("content", "file_text", "text", "contents")
_OLD_KEYS = ("old_string", "old_str", "oldText", "old_text", "search")
# Quotable pieces of arguments: paths, dotted/snake/camel identifiers, and quoted strings.
_QUOTABLE = re.compile(r"[\w./-]*[A-Za-z_][\w./-]{5,}")
_MAX_EXCERPT = 300


@dataclass(frozen=True)
class BlindAction:
    """One action of the recorded agent that relied on text the view hid."""

    request_index: int
    """Request whose response took the action."""
    request_id: str
    tool: str
    """Tool called."""
    kind: str
    """`hidden-edit-target`, `hidden-quote` or `stubbed-read`."""
    path: str | None
    """File concerned, when the call names one."""
    excerpt: str
    """The hidden text the action relied on (shortened)."""


def _first(arguments: object, keys: Sequence[str]) -> str | None:
    if isinstance(arguments, dict):
        for key in keys:
            value = arguments.get(key)
            if isinstance(value, str):
                return value
    return None


def _short(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_EXCERPT else text[: _MAX_EXCERPT - 1] + "…"


class _Texts:
    """Visible and full texts of one request, built only when a check needs them."""

    def __init__(self, history: Sequence[Item], view: Sequence[Item]) -> None:
        self.history = history
        self.view = view
        self._visible: str | None = None
        self._full: str | None = None

    @property
    def visible(self) -> str:
        if self._visible is None:
            self._visible = "\n".join(item_text(i) for i in self.view)
        return self._visible

    @property
    def full(self) -> str:
        if self._full is None:
            self._full = "\n".join(item_text(i) for i in self.history)
        return self._full

    def hidden(self, text: str) -> bool:
        """True when `text` is in the history but not in the view."""
        return bool(text) and text not in self.visible and text in self.full


def _last_known_content(
    history: Sequence[Item], path: str
) -> tuple[str | None, ToolResultItem | None]:
    """The file's last full content in the history (a read result, or a write's content)."""
    calls: dict[str, Block] = {}
    content: str | None = None
    source: ToolResultItem | None = None
    for item in history:
        if isinstance(item, AssistantItem):
            for b in item.tool_calls:
                if b.call_id:
                    calls[b.call_id] = b
                if _WRITE_TOOL.search(b.name or "") and path_of(b.arguments) == path:
                    written = _first(b.arguments, _CONTENT_KEYS)
                    if written is not None:
                        content, source = written, None
        elif isinstance(item, ToolResultItem) and not item.is_error:
            call = calls.get(item.call_id)
            if call is None or path_of(call.arguments) != path:
                continue
            if _READ_TOOL.search(call.name or "") and not _WRITE_TOOL.search(call.name or ""):
                content, source = item.output, item
    return content, source


def _change_context(old: str, new: str) -> list[str]:
    """Old lines a whole-file write changed, with one line of context on each side."""
    a, b = old.splitlines(), new.splitlines()
    lines: list[str] = []
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        lo, hi = max(0, i1 - 1), min(len(a), max(i2, i1) + 1)
        lines.extend(a[lo:hi])
    return [ln.strip() for ln in dict.fromkeys(lines) if ln.strip()]


class EvidenceChecker:
    """Checks each request's recorded response against the view a strategy built for it."""

    def check(
        self,
        history: Sequence[Item],
        view: Sequence[Item],
        response: AssistantItem | None,
        request_index: int,
        request_id: str,
    ) -> list[BlindAction]:
        if response is None or not response.tool_calls:
            return []
        if len(view) == len(history) and all(a is b for a, b in zip(view, history, strict=True)):
            return []  # the view is the history: nothing can be hidden
        texts = _Texts(history, view)
        found: list[BlindAction] = []
        for call in response.tool_calls:
            name = call.name or ""
            if _WRITE_TOOL.search(name):
                found.extend(self._write(call, history, view, texts, request_index, request_id))
            else:
                found.extend(self._quotes(call, texts, request_index, request_id))
        return found

    def _write(self, call, history, view, texts, request_index, request_id) -> list[BlindAction]:
        path = path_of(call.arguments)
        old_text = _first(call.arguments, _OLD_KEYS)
        needed: list[str] = []
        if old_text is not None:
            needed = [ln.strip() for ln in old_text.splitlines() if ln.strip()]
        elif path is not None:
            new = _first(call.arguments, _CONTENT_KEYS)
            old, _ = _last_known_content(history, path)
            if new is not None and old is not None:
                needed = _change_context(old, new)
        hidden = [ln for ln in needed if texts.hidden(ln)]
        if not hidden:
            return []
        actions = [
            BlindAction(request_index, request_id, call.name or "", "hidden-edit-target", path,
                        _short("\n".join(hidden)))
        ]
        if path is not None:
            _, read = _last_known_content(history, path)
            shown = next(
                (i for i in view if isinstance(i, ToolResultItem) and read is not None
                 and i.event_index == read.event_index),
                None,
            )
            if shown is not None and shown.original_chars is not None:
                actions.append(
                    BlindAction(request_index, request_id, call.name or "", "stubbed-read", path,
                                _short(shown.output))
                )
        return actions

    def _quotes(self, call, texts, request_index, request_id) -> list[BlindAction]:
        values: list[str] = []

        def walk(value: object) -> None:
            if isinstance(value, str):
                values.append(value)
            elif isinstance(value, dict):
                for v in value.values():
                    walk(v)
            elif isinstance(value, list):
                for v in value:
                    walk(v)

        walk(call.arguments)
        hidden = []
        for value in values:
            for piece in dict.fromkeys(_QUOTABLE.findall(value)):
                if texts.hidden(piece) and piece not in hidden:
                    hidden.append(piece)
        if not hidden:
            return []
        return [
            BlindAction(request_index, request_id, call.name or "", "hidden-quote",
                        path_of(call.arguments), _short(", ".join(hidden)))
        ]
