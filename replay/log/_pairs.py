"""The ordering rules of a log's lines (docs/log-format.md), checked while reading.

A `tool_result` answers an earlier, still unanswered `tool_call` of its thread, and every call
the model saw back (`in_context`) is answered before the thread's next `request`: a provider
refuses a prompt that breaks either rule, so a log that does was damaged (a lost or edited line).
Server-side calls (`server_side`: run at the provider, no result expected) are exempt. A
`request` follows a message of its thread (`sent_message`); event ids and request ids are
unique, and an assistant's `request_id` names an earlier request; a `compaction` replaces
earlier events; an event's thread is `main` or one a `thread` event opened, and a `thread`
event opens a thread other than `main`, once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replay._errors import LogFormatError
from replay.log._events import (
    MAIN_THREAD,
    AssistantMessage,
    Compaction,
    RequestMarker,
    ThreadStart,
    ToolCallBlock,
    ToolResult,
    UserMessage,
)


def sent_message(event: Any) -> bool:
    """An event a prompt of its thread is built from: a user message, a tool result, or an
    assistant message in context (a request before any has no prompt)."""
    return isinstance(event, UserMessage | ToolResult) or (
        isinstance(event, AssistantMessage) and event.in_context
    )


@dataclass
class _Thread:
    calls: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Every call id seen in the thread → (tool name, line of its `assistant` event)."""
    pending: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Calls still waiting for their result, in call order."""
    answered: dict[str, int] = field(default_factory=dict)
    """Call id → line of its result."""
    spoken: bool = False
    """A message the thread could send has been seen (a request before one has no prompt)."""


class ToolPairs:
    """Follows calls and results line by line. `see(event, line)` returns the problems the
    event shows (each a `LogFormatError` at a line) and the placeholder results to insert
    before it: an empty error result for each call left unanswered at a request, as the
    adapters insert (the harness must have sent something)."""

    def __init__(self, path: str | Path, strict: bool = False) -> None:
        self.path = path
        self.strict = strict
        self.threads: dict[str, _Thread] = {}
        self.ids: dict[str, int] = {}
        """Event id → the line that has it (ids are unique in a file)."""
        self.request_ids: dict[str, int] = {}
        """Request id → the line of the request that has it (unique in a file too)."""
        self.opened: set[str] = {MAIN_THREAD}
        """Threads a `thread` event opened (and those already reported as not opened)."""
        self.started: dict[str, int] = {}
        """Thread id → the line of the `thread` event that opened it."""
        self.unopened: dict[str, int] = {}
        """Thread id → its first line, for a thread no `thread` event had opened there."""

    def rejected(self, event: Any, line: int) -> LogFormatError | None:
        """Why the line of `event` is skipped (a strict read stops there), if it is: an id an
        earlier line has (a line written twice), a `thread` event for a thread already open
        (`_reopened`), or a request of a thread with no message before it (a lost first line:
        no prompt can be rebuilt for it)."""
        event_id = getattr(event, "id", None)
        if event_id is not None and event_id in self.ids:
            return LogFormatError(
                self.path,
                line,
                f"expected a unique event id: {event_id!r} is the id of line "
                f"{self.ids[event_id]} (a line written twice?)",
            )
        if isinstance(event, ThreadStart):
            return self._reopened(event, line)
        if not isinstance(event, RequestMarker):
            return None
        state = self.threads.get(event.thread)
        if state is not None and state.spoken:
            return None
        return LogFormatError(
            self.path,
            line,
            f"expected a message of thread {event.thread!r} before request {event.request_id}",
        )

    def see(self, event: Any, line: int) -> tuple[list[LogFormatError], list[ToolResult]]:
        """The problems of a line that is kept (`rejected` said None) and the placeholder
        results to insert before it."""
        problems = self._unopened(event, line)
        if isinstance(event, ThreadStart):
            self.opened.add(event.thread_id)
            self.started[event.thread_id] = line
        if isinstance(event, RequestMarker):
            problems += self._request_id(event, line)
        if isinstance(event, AssistantMessage):
            problems += self._answered_request(event, line)
        found, placeholders = self._calls(event, line)
        event_id = getattr(event, "id", None)
        if event_id is not None:  # after `_calls`: a compaction's own id is no earlier event
            self.ids[event_id] = line
        return problems + found, placeholders

    def _calls(self, event: Any, line: int) -> tuple[list[LogFormatError], list[ToolResult]]:
        """Calls, their results and the events a compaction replaced (`see`)."""
        state = self.threads.setdefault(event.thread, _Thread())
        if sent_message(event):
            state.spoken = True
        if isinstance(event, Compaction):
            return self._unknown_replaced(event, line), []
        if isinstance(event, AssistantMessage):
            for block in event.blocks:
                if isinstance(block, ToolCallBlock) and not block.server_side:
                    state.calls[block.id] = (block.name, line)
                    if event.in_context:
                        state.pending[block.id] = (block.name, line)
            return [], []
        if isinstance(event, ToolResult):
            return self._result(state, event, line), []
        if isinstance(event, RequestMarker) and state.pending:
            return self._unanswered(state, event, line)
        return [], []

    def _kept(self, line: int, expected: str, then: str) -> LogFormatError:
        """A problem of a line that is kept: a lenient read says what it did about it (`then`);
        a strict read stops there, and says only what was expected."""
        return LogFormatError(self.path, line, expected if self.strict else f"{expected}; {then}")

    def _reopened(self, event: ThreadStart, line: int) -> LogFormatError | None:
        """A `thread` event for `main` (the header opens it), for a thread an earlier one
        opened, or for a thread whose lines began before it: it would change a running
        thread's system prompt or model (no adapter writes one). The thread keeps its first
        definition (for a thread that began unopened, the session's, as its first line said)."""
        if event.thread_id == MAIN_THREAD:
            expected = (
                f"expected a `thread` event to open a subagent thread, not {MAIN_THREAD!r} "
                "(the session header opens it)"
            )
        elif event.thread_id in self.started:
            expected = (
                f"expected one `thread` event per thread: thread {event.thread_id!r} was "
                f"opened on line {self.started[event.thread_id]}"
            )
        elif event.thread_id in self.unopened:
            expected = (
                f"expected a `thread` event before its thread's first line: thread "
                f"{event.thread_id!r} began on line {self.unopened[event.thread_id]}, "
                "replayed with the session's system prompt"
            )
        else:
            return None
        return LogFormatError(self.path, line, expected)

    def _unopened(self, event: Any, line: int) -> list[LogFormatError]:
        """The first line of a thread no `thread` event opened (reported once per thread). The
        engine replays it all the same, as a thread of its own with the session's system
        prompt; a lost `thread` line may have named another one."""
        if event.thread in self.opened:
            return []
        self.opened.add(event.thread)
        self.unopened[event.thread] = line
        return [
            self._kept(
                line,
                f"expected a `thread` event opening thread {event.thread!r} before its first line",
                "replayed as a thread of its own, with the session's system prompt",
            )
        ]

    def _request_id(self, event: RequestMarker, line: int) -> list[LogFormatError]:
        """A request id an earlier request has: both are replayed (a lenient read), but the
        results cannot tell them apart by id."""
        first = self.request_ids.setdefault(event.request_id, line)
        if first == line:
            return []
        return [
            self._kept(
                line,
                f"expected a unique request_id: {event.request_id!r} is the request_id of line "
                f"{first}",
                "both are replayed",
            )
        ]

    def _answered_request(self, event: AssistantMessage, line: int) -> list[LogFormatError]:
        """A response whose `request_id` names no earlier request (an edited or lost line):
        it answers its thread's last request, as one without a `request_id` does. Left
        unpaired, its output would be priced at zero tokens."""
        if event.request_id is None or event.request_id in self.request_ids:
            return []
        return [
            self._kept(
                line,
                f"expected the assistant's request_id to name an earlier request: "
                f"{event.request_id!r} names none",
                "it answers its thread's last request",
            )
        ]

    def _unknown_replaced(self, event: Compaction, line: int) -> list[LogFormatError]:
        """A compaction whose `replaces` names no earlier event (a lost or edited line): those
        names are ignored; the line is kept and counted."""
        unknown = [name for name in event.replaces if name not in self.ids]
        if not unknown:
            return []
        return [
            self._kept(
                line,
                f"expected `replaces` to name earlier events: {len(unknown)} of its ids name "
                f"none (first: {unknown[0]!r})",
                "they are ignored",
            )
        ]

    def _result(self, state: _Thread, event: ToolResult, line: int) -> list[LogFormatError]:
        call = event.call_id
        if state.pending.pop(call, None) is not None or (
            call in state.calls and call not in state.answered
        ):
            state.answered[call] = line
            return []
        if call in state.answered:
            expected = (
                f"expected one tool_result per call: call id {call!r} was already answered on "
                f"line {state.answered[call]}"
            )
        else:
            expected = (
                f"expected a tool_result to answer a tool call: call id {call!r} matches no "
                f"earlier tool_call of thread {event.thread!r}"
            )
        return [LogFormatError(self.path, line, expected)]

    def _unanswered(
        self, state: _Thread, event: RequestMarker, line: int
    ) -> tuple[list[LogFormatError], list[ToolResult]]:
        errors, placeholders = [], []
        for call, (name, call_line) in state.pending.items():
            errors.append(
                self._kept(
                    line,
                    f"expected a tool_result for call {call!r} ({name}, line {call_line}) "
                    f"before request {event.request_id}",
                    "a placeholder error result was added",  # (a strict read adds nothing)
                )
            )
            placeholder = ToolResult(
                ts=event.ts,
                thread=event.thread,
                call_id=call,
                tool_name=name,
                output="",
                is_error=True,
            )
            placeholder.synthetic = "missing tool result"
            placeholders.append(placeholder)
            state.answered[call] = line
        state.pending.clear()
        return errors, placeholders
