"""pi session adapter: rules on small sessions written here, then the real dev samples."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from test_adapters_common import SAMPLES, jsonl, needs_samples, pi_lines, unpaired_before_request

import replay
from replay import LogFormatError, load
from replay.adapters import pi
from replay.log import (
    AssistantMessage,
    Compaction,
    RequestMarker,
    ThreadStart,
    ToolCallBlock,
    ToolResult,
    UserMessage,
    write_log,
)


def _write(tmp: Path, lines: list[dict[str, Any]], name: str = "session.jsonl") -> Path:
    path = tmp / name
    path.write_text(jsonl(lines), encoding="utf-8")
    return path


def _chained(entries: list[dict[str, Any]]) -> None:
    """Give `entries` ids 1, 2, … each the parent of the next: one branch, in order."""
    parent = None
    for n, e in enumerate(entries, start=1):
        e["id"], e["parentId"] = f"{n:08x}", parent
        parent = e["id"]


def _entry(n: int, parent: int | None, kind: str = "message", **kw: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "id": f"{n:08x}",
        "parentId": None if parent is None else f"{parent:08x}",
        "timestamp": f"2026-01-02T10:01:{n:02d}.000Z",
        **kw,
    }


def _assistant(text: str, read: int, stop: str = "stop", usage: bool = True) -> dict[str, Any]:
    u = {"input": 2, "output": 5, "cacheRead": read, "cacheWrite": 10, "cost": {"total": 0.001}}
    if not usage:
        u = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0}}
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}] if text else [],
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": u,
        "stopReason": stop,
    }


@pytest.mark.parametrize(("version", "key"), [(1, "branchedFrom"), (3, "parentSession")])
@pytest.mark.parametrize("forked", [True, False])
def test_a_forked_session_marks_the_requests_it_copied(
    tmp_path: Path, version: int, key: str, forked: bool
) -> None:
    lines = pi_lines(version)
    # Written at 10:00:02, between the first response (10:00:01) and the second (10:00:03).
    lines[0]["timestamp"] = "2026-01-02T10:00:02.000Z"
    if forked:
        lines[0][key] = "/sessions/parent.jsonl"
    session = load(_write(tmp_path, lines), strict=True)
    # The copied response was billed in the parent session: replayed, but marked and counted.
    requests = session.requests()
    assert [getattr(r, "copied_from_parent", False) for r in requests] == [forked, False]
    assert getattr(session.header, "copied_requests", 0) == (1 if forked else 0)
    # A fork started when its header says; the events it copied are older.
    started = session.header.ts.isoformat()
    assert started == ("2026-01-02T10:00:02+00:00" if forked else "2026-01-02T10:00:00+00:00")
    notes = replay.replay(session, ["recorded"]).notes
    assert any("copied from the session it was forked from" in n for n in notes) is forked


def test_requests_usage_and_cost(tmp_path: Path) -> None:
    session = load(_write(tmp_path, pi_lines()), strict=True)
    requests = session.requests()
    assert len(requests) == 2
    u = requests[1].usage
    assert (u.input_tokens, u.cache_read_tokens, u.cache_write_5m_tokens, u.output_tokens) == (
        3,
        2500,
        40,
        6,
    )
    assert u.cache_write_1h_tokens == 0  # no TTL in a pi log: every write is assumed 5m
    assert u.cost_usd == "0.002"
    assert requests[0].provider == "anthropic" and requests[0].model == "claude-sonnet-4-5"
    # The request started at the message's own timestamp; the entry was written at its end.
    assert requests[0].duration_ms == 1000
    thinking = next(e for e in session.events if isinstance(e, AssistantMessage)).blocks[0]
    assert thinking.thinking == "Use ls."
    assert session.header.ignored_records == {"model_change": 1}


def test_a_redacted_result_answers_the_oldest_redacted_call_not_an_older_call_of_its_own_id(
    tmp_path: Path,
) -> None:
    # docs/adapters.md: a result is paired with the oldest unanswered call of its id: of the
    # redacted ones for a `REDACTED` id. Here the real-id call is older and still waits.
    # (The result's `toolName` is left out: the pairing alone names the tool.)
    header, *entries = pi_lines(3)
    call, result, answer = (json.loads(json.dumps(e)) for e in entries[2:5])
    hidden = {"type": "toolCall", "id": "REDACTED", "name": "read", "arguments": {"path": "a"}}
    call["message"]["content"].append(hidden)
    del result["message"]["toolName"]
    redacted = json.loads(json.dumps(result))
    redacted["message"]["toolCallId"] = "REDACTED"
    redacted["message"]["content"] = [{"type": "text", "text": "alpha"}]
    body = [*entries[:2], call, redacted, result, answer]
    _chained(body)
    session = load(_write(tmp_path, [header, *body]), strict=True)
    results = [(e.tool_name, e.output) for e in session.events if isinstance(e, ToolResult)]
    assert results == [("read", "alpha"), ("bash", "a.txt\nb.txt")]


def test_a_call_id_a_model_reuses_every_turn_pairs_each_result_with_its_call(
    tmp_path: Path,
) -> None:
    """Some models number their calls per response (`call_0` each turn): each result answers
    the latest call of that id, none is dropped as a duplicate, and no placeholder is made."""
    lines = pi_lines(3)
    header, *entries = lines
    call, result, answer = (json.loads(json.dumps(e)) for e in entries[2:5])
    call["message"]["content"][1]["id"] = "call_0"
    result["message"]["toolCallId"] = "call_0"
    turn2 = [json.loads(json.dumps(e)) for e in (call, result)]
    turn2[0]["message"]["content"][1]["arguments"] = {"command": "cat a.txt"}
    turn2[1]["message"]["content"] = [{"type": "text", "text": "alpha"}]
    body = [*entries[:2], call, result, *turn2, answer]
    _chained(body)
    session = load(_write(tmp_path, [header, *body]), strict=True)
    results = [e for e in session.events if isinstance(e, ToolResult)]
    calls = [b for e in session.events if isinstance(e, AssistantMessage)
             for b in e.blocks if isinstance(b, ToolCallBlock)]
    assert [c.id for c in calls] == ["call_0", "call_0#2"]
    assert [(r.call_id, r.output) for r in results] == [
        ("call_0", "a.txt\nb.txt"), ("call_0#2", "alpha")
    ]
    assert not session.skipped


@pytest.mark.parametrize(
    ("first", "second", "logged", "answered"),
    [("call_0", "call_0", "call_0", "call_0#2"), ("call_x", "call_y", "REDACTED", "call_y")],
    ids=["reused-id", "redacted-id"],
)
def test_a_result_answers_the_call_still_waiting_not_one_a_request_went_without(
    tmp_path: Path, first: str, second: str, logged: str, answered: str
) -> None:
    # The first call is never answered: the second request sent a placeholder for it, so the
    # result logged after the second call answers that one, whether it names the id a model
    # reuses (`call_0` twice) or is REDACTED (paired by order with the oldest call still
    # waiting).
    header, *entries = pi_lines(3)
    call, result, answer = (json.loads(json.dumps(e)) for e in entries[2:5])
    call["message"]["content"][1]["id"] = first
    again = json.loads(json.dumps(call))
    again["message"]["content"][1].update(id=second, name="read", arguments={"path": "a.txt"})
    again["timestamp"] = "2026-01-02T10:00:02.200Z"
    result["message"].update(toolCallId=logged, toolName="read",
                             content=[{"type": "text", "text": "alpha"}])
    body = [*entries[:2], call, again, result, answer]
    _chained(body)
    session = load(_write(tmp_path, [header, *body]))
    results = [(e.call_id, e.tool_name, e.output, e.synthetic) for e in session.events
               if isinstance(e, ToolResult)]
    assert results == [(first, "bash", "", "missing tool result"),
                       (answered, "read", "alpha", None)]
    assert len(session.skipped) == 1
    assert f"expected a tool result for call '{first}' (bash)" in str(session.skipped[0])
    assert unpaired_before_request(session) == []


def test_v1_files_are_migrated(tmp_path: Path) -> None:
    v1 = load(_write(tmp_path, pi_lines(version=1)), strict=True)
    assert v1.header.migrated_from_version == 1
    assert v1.header.source_format == "pi-session-v1"
    assert len(v1.requests()) == 2


@pytest.mark.parametrize("role", ["toolResult", "assistant"])
def test_v1_line_written_twice_is_dropped_and_reported(tmp_path: Path, role: str) -> None:
    """v1 entries have no ids to tell a repeated record by: an entry equal to an earlier one
    (timestamp to the millisecond included) is one. A repeated response was billed twice, even
    under --strict; a repeated result was caught only as a second result for its call."""
    lines = pi_lines(version=1)
    at = next(n for n, line in enumerate(lines) if f'"role": "{role}"' in json.dumps(line))
    path = _write(tmp_path, lines[: at + 1] + [lines[at]] + lines[at + 1 :])
    session = load(path)
    assert [e.line for e in session.skipped] == [at + 2]
    assert f"duplicate record: the same entry as line {at + 1} (a v1 file)" in str(
        session.skipped[0]
    )
    once = load(_write(tmp_path, lines, "once.jsonl"), strict=True)
    assert replay.replay(session, "baseline").summary.equals(
        replay.replay(once, "baseline").summary
    )
    with pytest.raises(LogFormatError, match="duplicate record"):
        load(path, strict=True)


def _v1_compaction(**fields: Any) -> dict[str, Any]:
    """A v1 compaction keeping from entry index 3 on. Entries follow the header (index 0):
    user 1, model_change 2, assistant 3 (the response with the tool call), tool result 4,
    assistant 5."""
    return {
        "type": "compaction",
        "timestamp": "2026-01-02T10:00:05.000Z",
        "summary": "Listed two files.",
        "firstKeptEntryIndex": 3,
        **fields,
    }


def test_v1_compaction_first_kept_entry_index(tmp_path: Path) -> None:
    lines = pi_lines(version=1)
    lines.append(_v1_compaction(tokensBefore=9000))
    lines.append(
        {
            "type": "message",
            "timestamp": "2026-01-02T10:00:06.000Z",
            "message": {"role": "user", "content": "thanks"},
        }
    )
    lines.append(
        {
            "type": "message",
            "timestamp": "2026-01-02T10:00:07.000Z",
            "message": _assistant("welcome", 100),
        }
    )
    session = load(_write(tmp_path, lines), strict=True)
    c = next(e for e in session.events if isinstance(e, Compaction))
    assert c.summary == "Listed two files." and c.tokens_before == 9000
    # What later requests saw: pi's compaction-summary message around it (user role).
    assert c.message == (
        "The conversation history before this point was compacted into the following summary:"
        "\n\n<summary>\nListed two files.\n</summary>"
    )
    assert c.message_role == "user"
    replaced = [e for e in session.events if e.id in c.replaces]
    kept = [
        e
        for e in session.events[: session.events.index(c)]
        if isinstance(e, UserMessage | AssistantMessage | ToolResult) and e.id not in c.replaces
    ]
    assert [type(e).__name__ for e in replaced] == ["UserMessage"]
    assert [type(e).__name__ for e in kept] == [
        "AssistantMessage",
        "ToolResult",
        "AssistantMessage",
    ]


@pytest.mark.parametrize("stop", ["aborted", "error"])
def test_aborted_zero_usage_responses_are_not_requests_nor_context(
    tmp_path: Path, stop: str
) -> None:
    lines = pi_lines()
    lines.append(_entry(6, 5, message={"role": "user", "content": "again"}))
    lines.append(_entry(7, 6, message=_assistant("", 0, stop=stop, usage=False)))
    lines.append(_entry(8, 7, message={"role": "user", "content": "again!"}))
    lines.append(_entry(9, 8, message=_assistant("ok", 2600)))
    session = load(_write(tmp_path, lines), strict=True)
    assert len(session.requests()) == 3
    assert session.header.ignored_records[f"assistant/{stop}-unbilled"] == 1


def test_a_zero_usage_answer_is_a_request_without_usage(tmp_path: Path) -> None:
    # A provider that reports no usage: pi-ai logs zeros on a response that did answer. That
    # call was made (it was dropped, as if free); not damage, so counted, not reported.
    lines = pi_lines()
    lines.append(_entry(6, 5, message={"role": "user", "content": "again"}))
    lines.append(_entry(7, 6, message=_assistant("sure", 0, usage=False)))
    session = load(_write(tmp_path, lines), strict=True)
    *_, last = session.requests()
    assert len(session.requests()) == 3 and last.usage is None
    answer = [e for e in session.events if isinstance(e, AssistantMessage)][-1]
    assert answer.request_id == last.request_id and answer.usage_missing
    assert session.header.ignored_records["assistant/zero-usage (a request without usage)"] == 1
    assert not session.skipped


def test_a_billed_aborted_response_is_a_request_but_not_context(tmp_path: Path) -> None:
    # pi never sends a failed or aborted response back (on the large-session sample, after a
    # billed 16-call error response the next prompt grew by 59 tokens): the request is kept
    # with its usage, the message is logged out of context and its calls need no result.
    lines = pi_lines()
    aborted = _assistant("", 2600, stop="aborted")
    aborted["content"] = [{"type": "toolCall", "id": "toolu_9", "name": "bash", "arguments": {}}]
    lines.append(_entry(6, 5, message={"role": "user", "content": "run it"}))
    lines.append(_entry(7, 6, message=aborted))
    lines.append(_entry(8, 7, message={"role": "user", "content": "never mind"}))
    lines.append(_entry(9, 8, message=_assistant("ok", 2600)))
    session = load(_write(tmp_path, lines), strict=True)  # expected: not reported
    assert unpaired_before_request(session) == []
    dropped = [e for e in session.events if isinstance(e, AssistantMessage) and not e.in_context]
    assert len(dropped) == 1 and dropped[0].blocks[0].id == "toolu_9"
    assert not any(getattr(e, "synthetic", None) for e in session.events)
    assert len(session.requests()) == 4


def test_a_branch_forked_at_an_entry_without_an_event_copies_up_to_it(tmp_path: Path) -> None:
    # The user switched model (entry 2, no event), asked, then went back to ask another
    # question: the branch's parent is the model_change. It copies the path up to there, not
    # the main path's next response, whose tool call it would then wait on (found by the
    # adapters' mutation pass: a strict read refused the log).
    header, first, model_change, *rest = pi_lines()
    other = _entry(6, 2, message={"role": "user", "content": "Other question."})
    answer = _entry(7, 6, message=_assistant("Other answer.", 2400))
    session = load(_write(tmp_path, [header, first, model_change, other, answer, *rest]),
                   strict=True)
    assert session.skipped == []
    start = next(e for e in session.events if isinstance(e, ThreadStart))
    branch = [e for e in session.events if e.thread == start.thread_id]
    assert [type(e).__name__ for e in branch if getattr(e, "copied_from", None)] == [
        "UserMessage"
    ]
    assert [e.text for e in branch if isinstance(e, UserMessage)] == [
        "List the files.",
        "Other question.",
    ]


def test_tree_branches_are_threads(tmp_path: Path) -> None:
    lines = pi_lines()
    # A branch from entry 4 (tool result) that the user left, then the main path.
    lines.append(_entry(6, 4, message={"role": "user", "content": "abandoned question"}))
    lines.append(_entry(7, 6, message=_assistant("abandoned answer", 2500)))
    lines.append(_entry(8, 5, message={"role": "user", "content": "main question"}))
    lines.append(
        _entry(9, 8, kind="branch_summary", fromId="00000007", summary="Tried another question.")
    )
    lines.append(_entry(10, 9, message=_assistant("main answer", 2600)))
    session = load(_write(tmp_path, lines), strict=True)
    start = next(e for e in session.events if isinstance(e, ThreadStart))
    branch = [e for e in session.events if e.thread == start.thread_id]
    assert [e.text for e in branch if isinstance(e, UserMessage)] == [
        "List the files.",
        "abandoned question",
    ]
    assert len([e for e in branch if getattr(e, "copied_from", None)]) == 3
    # It re-sent the main path's head: it has its hidden prefix (not one measured on its own).
    assert start.hidden_prefix_tokens == session.header.hidden_prefix_tokens is not None
    main_users = [
        e.text for e in session.events if e.thread == "main" and isinstance(e, UserMessage)
    ]
    assert main_users[-2] == "main question" and "Tried another question." in main_users[-1]
    assert len(session.requests()) == 4


def test_bash_execution_messages(tmp_path: Path) -> None:
    lines = pi_lines()
    lines.insert(
        2,
        _entry(
            20,
            1,
            message={"role": "bashExecution", "command": "ls", "output": "a.txt", "exitCode": 0},
        ),
    )
    lines.insert(
        3,
        _entry(
            21,
            20,
            message={
                "role": "bashExecution",
                "command": "env",
                "output": "SECRET",
                "exitCode": 0,
                "excludeFromContext": True,
            },
        ),
    )
    lines[4]["parentId"] = f"{21:08x}"
    session = load(_write(tmp_path, lines), strict=True)
    texts = [e.text for e in session.events if isinstance(e, UserMessage)]
    assert texts[1] == "Ran `ls`\n```\na.txt\n```"
    assert not any("SECRET" in t for t in texts)


def test_base64_blocks_are_a_placeholder_labelled_estimated(tmp_path: Path) -> None:
    # Any block carrying a base64 payload (pi-ai's `{data, mimeType}`) is a placeholder, not a
    # JSON dump of the payload, and the event holding it is labelled estimated.
    lines = pi_lines()
    lines[4]["message"]["content"] = [
        {"type": "text", "text": "shot:"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "document", "data": "JVBERi0x" * 1000, "mimeType": "application/pdf"},
    ]
    session = load(_write(tmp_path, lines), strict=True)
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert result.output == (
        "shot:\n[image image/png 12 base64 chars]\n[document application/pdf 8000 base64 chars]"
    )
    assert result.estimated_text is True


def _reply(read: int, write: int, stop: str = "stop", at: str | None = None) -> dict[str, Any]:
    """An assistant message with the given cache read/write (a tool call when `stop` is
    toolUse); `at` = its request start (`message.timestamp`, ms)."""
    m = _assistant("ok", read, stop=stop)
    m["usage"]["cacheWrite"] = write
    if stop == "toolUse":
        m["content"] = [{"type": "toolCall", "id": "toolu_r", "name": "bash", "arguments": {}}]
    if at is not None:
        m["timestamp"] = at
    return m


def _user(n: int, parent: int, text: str, ts: str | None = None) -> dict[str, Any]:
    e = _entry(n, parent, message={"role": "user", "content": [{"type": "text", "text": text}]})
    if ts:
        e["timestamp"] = ts
    return e


def _level(n: int, parent: int, level: str) -> dict[str, Any]:
    return _entry(n, parent, kind="thinking_level_change", thinkingLevel=level)


def test_thinking_level_is_a_request_parameter_read_at_the_turn_start(tmp_path: Path) -> None:
    v1 = load(_write(tmp_path, pi_lines(version=1)), strict=True)
    assert [r.thinking_level for r in v1.requests()] == ["off", "off"]
    lines = pi_lines()
    lines.append(_level(6, 5, "high"))
    lines.append(_user(7, 6, "think harder"))
    # Changed while the response streamed: pi built this turn's options already.
    lines.append(_level(8, 7, "low"))
    lines.append(_entry(9, 8, message=_reply(2540, 30, stop="toolUse")))
    lines.append(
        _entry(10, 9, message={"role": "toolResult", "toolCallId": "toolu_r", "content": "done"})
    )
    lines.append(_entry(11, 10, message=_reply(2570, 20)))
    lines.append(_user(12, 11, "again"))
    lines.append(_entry(13, 12, message=_reply(2590, 20)))
    session = load(_write(tmp_path, lines), strict=True)
    # v3 headers carry no level: unknown until the first change.
    assert [getattr(r, "thinking_level", None) for r in session.requests()] == [
        None,
        None,
        "high",
        "high",
        "low",
    ]
    assert session.header.ignored_records["thinking_level_change"] == 2


def _restart_lines(user_ts: str = "2026-01-02T10:01:06.000Z", **reply: Any) -> list[dict]:
    """pi_lines (2 requests caching ~2.5k tokens) + a typed message + a request that re-writes
    the whole prompt."""
    lines = pi_lines()
    lines.append(_user(6, 5, "next", ts=user_ts))
    lines.append(_entry(7, 6, message=_reply(0, 2600, **reply)))
    lines[-1]["timestamp"] = user_ts.replace(":06.000Z", ":09.000Z")
    return lines


def test_a_full_rewrite_after_the_user_acted_is_an_inferred_restart(tmp_path: Path) -> None:
    session = load(_write(tmp_path, _restart_lines()), strict=True)
    last = session.requests()[-1]
    assert last.system_changed.startswith("new pi process (inferred)")
    assert last.system_change_inferred is True
    assert session.header.inferred_restarts == 1
    assert not any(hasattr(r, "system_changed") for r in session.requests()[:-1])
    # Written back and read again unchanged (extra fields of the native format).
    out = tmp_path / "native.jsonl"
    write_log(session, out)
    again = load(out).requests()[-1]
    assert again.system_changed == last.system_changed
    assert again.system_change_inferred is True


@pytest.mark.parametrize(
    "case",
    ["after the cache lifetime", "read the cached prefix", "level changed", "compacted"],
)
def test_misses_the_log_explains_are_not_restarts(tmp_path: Path, case: str) -> None:
    if case == "after the cache lifetime":
        lines = _restart_lines(user_ts="2026-01-02T10:09:06.000Z")
    elif case == "read the cached prefix":
        lines = _restart_lines()
        lines[-1]["message"]["usage"]["cacheRead"] = 2540
    elif case == "level changed":
        lines = _restart_lines()
        lines.insert(-2, _level(20, 5, "medium"))
        lines[-2]["parentId"] = f"{20:08x}"
    else:
        lines = _restart_lines()
        lines.insert(
            -2,
            _entry(
                20,
                5,
                kind="compaction",
                summary="s",
                firstKeptEntryId=f"{5:08x}",
                tokensBefore=2600,
            ),
        )
        lines[-2]["parentId"] = f"{20:08x}"
    session = load(_write(tmp_path, lines), strict=True)
    assert not hasattr(session.requests()[-1], "system_changed")
    assert not hasattr(session.header, "inferred_restarts")


def test_a_mid_turn_rewrite_without_user_action_is_not_a_restart(tmp_path: Path) -> None:
    lines = pi_lines()
    lines.append(_user(6, 5, "go on"))
    lines.append(_entry(7, 6, message=_reply(2540, 30, stop="toolUse")))
    lines.append(
        _entry(8, 7, message={"role": "toolResult", "toolCallId": "toolu_r", "content": "done"})
    )
    lines.append(_entry(9, 8, message=_reply(0, 2700)))
    session = load(_write(tmp_path, lines), strict=True)
    assert not hasattr(session.requests()[-1], "system_changed")


def test_a_request_started_before_the_previous_one_is_another_process(tmp_path: Path) -> None:
    # Two pi processes appending to one file: the second request began before the first one
    # (no message typed in between in file order).
    lines = pi_lines()
    lines.append(_user(6, 5, "one"))
    lines.append(_entry(7, 6, message=_reply(2540, 30, at=1767348066000)))  # 10:01:06
    lines.append(_entry(8, 7, message=_reply(0, 2560, at=1767348065000)))  # 10:01:05
    session = load(_write(tmp_path, lines), strict=True)
    assert hasattr(session.requests()[-1], "system_changed")


def _late_rewrite(start_ms: int, read: int = 0) -> list[dict[str, Any]]:
    """pi_lines (its last request sent at 10:00:03), a typed message, and a request sent at
    `start_ms` that reads `read` tokens and re-writes the rest."""
    lines = pi_lines()
    lines.append(_user(6, 5, "next", ts="2026-01-02T10:05:01.000Z"))
    lines.append(_entry(7, 6, message=_reply(read, 2600, at=start_ms)))
    lines[-1]["timestamp"] = "2026-01-02T10:05:05.000Z"
    return lines


def test_a_rewrite_300_s_after_the_previous_request_is_past_the_cache_lifetime(
    tmp_path: Path,
) -> None:
    last_sent = 1767348003000  # the previous request's start (10:00:03)
    for delay_ms, restart in ((299_999, True), (300_000, False)):
        session = load(_write(tmp_path, _late_rewrite(last_sent + delay_ms)), strict=True)
        assert hasattr(session.requests()[-1], "system_changed") is restart, delay_ms


def test_a_rewrite_reading_exactly_the_hidden_head_is_a_restart(tmp_path: Path) -> None:
    at = 1767348003000 + 60_000
    hidden = load(_write(tmp_path, _late_rewrite(at)), strict=True).header.hidden_prefix_tokens
    assert hidden > 0
    for read, restart in ((hidden, True), (hidden + 1, False)):
        session = load(_write(tmp_path, _late_rewrite(at, read)), strict=True)
        assert hasattr(session.requests()[-1], "system_changed") is restart, read


def test_injected_context_is_no_user_action_that_restarts_pi(tmp_path: Path) -> None:
    lines = _restart_lines()
    typed = lines[-2]
    lines[-2] = _entry(6, 5, kind="custom_message", customType="note", display=True,
                       content="extension context")
    lines[-2]["timestamp"] = typed["timestamp"]
    session = load(_write(tmp_path, lines), strict=True)
    assert [e.injected for e in session.events if isinstance(e, UserMessage)][-1] is True
    assert not hasattr(session.requests()[-1], "system_changed")


def test_a_response_timed_after_its_entry_starts_at_the_event_before_it(
    tmp_path: Path,
) -> None:
    """A `message.timestamp` later than the entry written at the response's end (clock skew):
    the request start falls back to the event before it, never after its own answer."""
    lines = pi_lines()
    lines[5]["message"]["timestamp"] = 1767348009000  # 10:00:09, the entry says 10:00:04
    session = load(_write(tmp_path, lines), strict=True)
    last = session.requests()[-1]
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert last.ts == result.ts  # 10:00:02.500
    assert last.duration_ms == 1500


def test_a_summary_a_later_compaction_replaced_is_not_in_the_residual(tmp_path: Path) -> None:
    from replay.adapters._common import prompt_residuals

    def simulated(first_summary: str) -> list[int]:
        lines = pi_lines()
        lines += [
            _entry(6, 5, kind="compaction", summary=first_summary, tokensBefore=2600),
            _user(7, 6, "go on"),
            _entry(8, 7, message=_reply(100, 300)),
            _entry(9, 8, kind="compaction", summary="Second summary.", tokensBefore=900),
            _user(10, 9, "and then?"),
            _entry(11, 10, message=_reply(100, 200)),
        ]
        session = load(_write(tmp_path, lines), strict=True)
        return [r.simulated for r in prompt_residuals(session)]

    short, long = simulated("First summary."), simulated("First summary. " * 400)
    assert long[2] > short[2]  # the request after the first compaction read its summary
    assert long[3] == short[3]  # the one after the second read only the second's


# --------------------------------------------------------------------------------------------------
# Bad input


def _damaged_header(path: Path, how: str) -> Path:
    """`path` with its `session` header line damaged as `how` says."""
    header, rest = path.read_text(encoding="utf-8").split("\n", 1)
    h = json.loads(header)
    if how == "cut":  # a truncated line
        header = header[:25]
    elif how == "no type":
        header = json.dumps({k: v for k, v in h.items() if k != "type"})
    else:  # fields lost or garbled
        header = json.dumps({k: v for k, v in h.items() if k != "cwd"} | {"timestamp": "then"})
    path.write_text(header + "\n" + rest, encoding="utf-8")
    return path


@pytest.mark.parametrize("header", ["v3", "no version", "cut"])
def test_an_entry_written_twice_is_billed_once(tmp_path: Path, header: str) -> None:
    """The copy carries its original's id: a duplicate record, also when the header lost its
    `version` (ids show v2+ all the same) or is unreadable."""
    lines = pi_lines()
    if header == "no version":
        del lines[0]["version"]
    twice = lines[:4] + [lines[3]] + lines[4:]  # the first response (line 4), written twice
    path = _write(tmp_path, twice)
    if header == "cut":
        _damaged_header(path, "cut")
    session = load(path)
    assert len(session.requests()) == 2
    assert [str(e) for e in session.skipped if e.line == 5] == [
        f"{path}:5: duplicate record: id 00000003 already on line 4"
    ]
    once = load(_write(tmp_path, lines, "once.jsonl"), strict=True)
    assert replay.replay(session, "baseline").summary.equals(
        replay.replay(once, "baseline").summary
    )
    first = "1: expected a JSON object" if header == "cut" else "5: duplicate record"
    with pytest.raises(LogFormatError, match=f"session.jsonl:{first}"):
        load(path, strict=True)


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        ("lost", "expected `usage` (an object) on an assistant message"),
        ("garbled", "expected `input` to be a number, got str in `usage`"),
    ],
    ids=["lost", "garbled"],
)
def test_a_response_without_usage_is_still_a_request(
    tmp_path: Path, damage: str, problem: str
) -> None:
    """pi-ai logs usage on every response (zero when nothing was billed): a line without it is
    damaged, but the request was sent. Kept without usage (its output counted from the logged
    response), not dropped with its cost (a garbled usage skipped the whole line)."""
    lines = pi_lines()
    if damage == "lost":
        del lines[3]["message"]["usage"]
    else:
        lines[3]["message"]["usage"]["input"] = "3"
    path = _write(tmp_path, lines)
    session = load(path)
    requests = session.requests()
    assert [(r.request_id, r.usage is None) for r in requests] == [
        ("00000003", True),
        ("00000005", False),
    ]
    response = next(e for e in session.events if isinstance(e, AssistantMessage))
    assert response.request_id == "00000003" and not hasattr(response, "usage_missing")
    assert [str(e) for e in session.skipped] == [
        f"{path}:4: {problem}; kept as a request without usage"
    ]
    assert replay.replay(session, "baseline").summary["requests"].to_list() == [2]
    with pytest.raises(LogFormatError) as err:
        load(path, strict=True)
    assert str(err.value) == f"{path}:4: {problem}"


def test_a_response_without_usage_keeps_its_branch_and_a_failed_one_is_unbilled(
    tmp_path: Path,
) -> None:
    lines = pi_lines()
    # An abandoned branch whose only response lost its usage: still a billed request.
    lines.append(_entry(6, 4, message={"role": "user", "content": "abandoned question"}))
    lost = _assistant("abandoned answer", 2500)
    del lost["usage"]
    lines.append(_entry(7, 6, message=lost))
    # An aborted response without usage: pi logs zero usage when nothing was billed, so
    # nothing says it was; read as never billed.
    aborted = _assistant("", 0, stop="aborted")
    del aborted["usage"]
    lines.append(_entry(8, 5, message={"role": "user", "content": "main question"}))
    lines.append(_entry(9, 8, message=aborted))
    session = load(_write(tmp_path, lines))
    branch = next(e for e in session.events if isinstance(e, ThreadStart)).thread_id
    assert [(r.thread, r.usage is None) for r in session.requests()] == [
        ("main", False),
        ("main", False),
        (branch, True),
    ]
    assert session.header.ignored_records["assistant/aborted-unbilled"] == 1
    assert sorted((e.line, e.expected.rsplit("; ", 1)[1]) for e in session.skipped) == [
        (8, "kept as a request without usage"),
        (10, "read as never billed"),
    ]


def _abandoned_branch(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """`pi_lines()` with a branch left at entry 4 whose question got `answer`, then the main
    path going on from entry 5 with a question and a billed answer."""
    lines = pi_lines()
    lines.append(_entry(6, 4, message={"role": "user", "content": "abandoned question"}))
    lines.append(_entry(7, 6, message=answer))
    lines.append(_entry(8, 5, message={"role": "user", "content": "main question"}))
    lines.append(_entry(9, 8, message=_assistant("main answer", 2600)))
    return lines


_USAGES: dict[str, Any] = {
    "billed": _assistant("x", 2500)["usage"],
    "zero": _assistant("x", 0, usage=False)["usage"],
    "empty": {},
    "string": "12 tokens",
    "garbled field": {**_assistant("x", 2500)["usage"], "cacheRead": "lots"},
}


@pytest.mark.parametrize("usage", [*_USAGES, "missing"])
@pytest.mark.parametrize("stop", ["stop", "toolUse", "aborted", "error"])
@pytest.mark.parametrize("text", ["", "an answer"])
def test_the_branch_pre_pass_and_the_reader_agree_on_what_is_a_request(
    tmp_path: Path, usage: str, stop: str, text: str
) -> None:
    # `pi._is_request` decides, before reading an abandoned branch, whether it holds a request;
    # `_Thread._assistant` decides it again while reading. A branch the first drops that holds a
    # request is lost; one it keeps that holds none is a thread with nothing replayed.
    answer = _assistant(text, 2500, stop=stop)
    if usage == "missing":
        del answer["usage"]
    else:
        answer["usage"] = _USAGES[usage]
    lines = _abandoned_branch(answer)
    session = load(_write(tmp_path, lines))
    branches = {e.thread_id for e in session.events if isinstance(e, ThreadStart)}
    own = {r.thread for r in session.requests() if r.thread != "main"}
    expected = pi._is_request(lines[-3])
    assert (bool(branches), own == branches and bool(own)) == (expected, expected)


@pytest.mark.parametrize("version", [1, 3])
@pytest.mark.parametrize("how", ["cut", "no type", "fields"])
def test_a_damaged_header_is_reported_and_the_rest_read(
    tmp_path: Path, version: int, how: str
) -> None:
    path = _damaged_header(_write(tmp_path, pi_lines(version)), how)
    assert replay.adapters.detect(path) == "pi"
    session = load(path)
    assert [e.line for e in session.skipped] == [1]
    reason = {
        "cut": "expected a JSON object",
        "no type": "unknown pi entry type None",
        "fields": "expected the pi `session` header to have `timestamp` (an ISO-8601 time), "
        "`cwd` (a string); read without them",
    }[how]
    assert reason in str(session.skipped[0])
    assert len(session.requests()) == 2
    h = session.header
    # What the header no longer says: the start time is the first entry's, no cwd; the version
    # is the entries' (v1 has no ids, v2 was the first with them).
    assert (h.ts.isoformat(), h.cwd) == ("2026-01-02T10:00:00+00:00", None)
    lost = how != "fields"
    assert h.session_id == ("session" if lost else "pi-1")
    assert h.source_format == f"pi-session-v{version if version == 1 or not lost else 2}"
    with pytest.raises(LogFormatError, match=r"session\.jsonl:1: "):
        load(path, strict=True)


def test_a_lost_v1_header_still_holds_index_0(tmp_path: Path) -> None:
    """v1's `firstKeptEntryIndex` counts the header (index 0), also when its line is unreadable."""
    lines = pi_lines(version=1)
    lines.append(_v1_compaction())

    def kept(session: Any) -> list[str]:
        c = next(e for e in session.events if isinstance(e, Compaction))
        return [
            type(e).__name__
            for e in session.events[: session.events.index(c)]
            if isinstance(e, UserMessage | AssistantMessage | ToolResult) and e.id not in c.replaces
        ]

    whole = load(_write(tmp_path, lines, "whole.jsonl"), strict=True)
    cut = load(_damaged_header(_write(tmp_path, lines), "cut"))
    assert kept(cut) == kept(whole) == ["AssistantMessage", "ToolResult", "AssistantMessage"]


# --------------------------------------------------------------------------------------------------
# Real samples

PI = SAMPLES / "pi"
SAMPLE_TABLE = [
    # name, assistant messages (formats.md table), requests (usage > 0), totals
    # (input, cacheRead, cacheWrite, output), pi's own cost
    (
        "badlogic__pi-mono__packages_coding-agent_test_fixtures_before-compaction.jsonl",
        484,
        471,
        (3689, 54693675, 1685320, 187895),
        "42.5959075",
        2,
    ),
    (
        "badlogic__pi-mono__packages_coding-agent_test_fixtures_large-session.jsonl",
        453,
        439,
        (1049, 43229469, 4296232, 83156),
        "30.3301977",
        0,
    ),
]


@needs_samples
@pytest.mark.parametrize(
    ("name", "messages", "count", "totals", "cost", "compactions"), SAMPLE_TABLE
)
def test_real_sample(
    name: str, messages: int, count: int, totals: tuple, cost: str, compactions: int
) -> None:
    path = PI / name
    session = load(path, strict=True)
    assert session.header.agent == "pi" and session.header.migrated_from_version == 1
    unbilled = sum(
        v for k, v in session.header.ignored_records.items() if k.startswith("assistant/")
    )
    requests = session.requests()
    assert len(requests) == count and len(requests) + unbilled == messages
    got = (
        sum(r.usage.input_tokens for r in requests),
        sum(r.usage.cache_read_tokens for r in requests),
        sum(r.usage.cache_write_5m_tokens for r in requests),
        sum(r.usage.output_tokens for r in requests),
    )
    assert got == totals
    total_cost = sum(Decimal(r.usage.cost_usd) for r in requests)
    assert abs(total_cost - Decimal(cost)) < Decimal("0.000001")
    assert sum(isinstance(e, Compaction) for e in session.events) == compactions
    assert unpaired_before_request(session) == []
    assert session.header.hidden_prefix_tokens > 500


@needs_samples
def test_real_compactions_keep_from_the_first_kept_entry() -> None:
    session = load(PI / SAMPLE_TABLE[0][0])
    first, second = [e for e in session.events if isinstance(e, Compaction)]
    assert (first.tokens_before, second.tokens_before) == (175004, 185014)
    # The first kept entry (file index 293) is the user message "i reviwed what we have…".
    kept = next(
        e
        for e in session.events[: session.events.index(first)]
        if isinstance(e, UserMessage | AssistantMessage | ToolResult) and e.id not in first.replaces
    )
    assert isinstance(kept, UserMessage) and kept.text.startswith("i reviwed what we have")
    assert first.id in second.replaces  # the second summary supersedes the first
    after = next(
        r for r in session.requests() if session.events.index(r) > session.events.index(first)
    )
    assert after.usage.cache_read_tokens == 0  # a new prompt: nothing cached


@needs_samples
@pytest.mark.parametrize(
    ("name", "restarts", "level_changes", "said"),
    [
        (
            SAMPLE_TABLE[0][0],
            8,
            [("off", "high")],
            ["npx tsx packages/coding-agent/src/cli.ts", "i'm now in the new implementation"],
        ),
        (SAMPLE_TABLE[1][0], 31, [("off", "low"), ("low", "off")], ["got a crash"]),
    ],
)
def test_real_restarts_and_thinking_changes(
    name: str, restarts: int, level_changes: list, said: list[str]
) -> None:
    session = load(PI / name)
    requests = session.requests()
    assert session.header.inferred_restarts == restarts
    changes = [
        (a.thinking_level, b.thinking_level)
        for a, b in zip(requests, requests[1:], strict=False)
        if a.thinking_level != b.thinking_level
    ]
    assert changes == level_changes
    # Each change of level was a full re-write: the provider's own verdict, not inferred.
    for a, b in zip(requests, requests[1:], strict=False):
        if a.thinking_level != b.thinking_level:
            assert b.usage.cache_read_tokens == 0 and not hasattr(b, "system_changed")
    # Where the user says pi was restarted (or crashed), the next request is marked.
    for text in said:
        typed = next(
            i for i, e in enumerate(session.events) if isinstance(e, UserMessage) and text in e.text
        )
        following = next(e for e in session.events[typed:] if isinstance(e, RequestMarker))
        assert hasattr(following, "system_changed"), text


def test_a_branch_holding_only_an_unbilled_failure_is_not_replayed(tmp_path: Path) -> None:
    lines = pi_lines()
    lines.append(_entry(6, 4, message={"role": "user", "content": "abandoned question"}))
    aborted = _assistant("", 0, stop="aborted")
    del aborted["usage"]  # read as never billed
    lines.append(_entry(7, 6, message=aborted))
    lines.append(_entry(8, 5, message={"role": "user", "content": "main question"}))
    lines.append(_entry(9, 8, message=_assistant("main answer", 2600)))
    session = load(_write(tmp_path, lines))
    assert {e.thread for e in session.events} == {"main"}
    assert len(session.requests()) == 3


def test_a_branch_starts_with_the_thinking_level_in_force_at_its_fork(tmp_path: Path) -> None:
    lines = pi_lines()
    lines.append(_level(6, 5, "high"))
    lines.append(_user(7, 6, "abandoned question"))
    lines.append(_entry(8, 7, message=_reply(2540, 30)))
    lines.append(_user(9, 6, "main question"))
    lines.append(_entry(10, 9, message=_reply(2540, 30)))
    session = load(_write(tmp_path, lines), strict=True)
    levels = sorted(
        (r.thread, r.request_id, getattr(r, "thinking_level", None)) for r in session.requests()
    )
    assert [(thread, level) for thread, _, level in levels] == [
        ("branch-1", "high"),
        ("main", None),
        ("main", None),
        ("main", "high"),
    ]


def test_a_request_start_after_its_entry_was_written_is_not_trusted(tmp_path: Path) -> None:
    # `message.timestamp` is when the request started; one later than the entry (written at
    # the end of the response) is wrong: the request starts after the event before it.
    lines = pi_lines()
    lines.append(_user(6, 5, "next"))
    lines.append(_entry(7, 6, message=_reply(2540, 30, at=1767348069000)))  # 10:01:09
    session = load(_write(tmp_path, lines), strict=True)
    last = session.requests()[-1]
    assert last.ts.isoformat() == "2026-01-02T10:01:06+00:00"
    assert last.duration_ms == 1000


def test_a_thinking_level_change_without_a_level_keeps_the_one_in_force(tmp_path: Path) -> None:
    lines = pi_lines()
    lines.append(_level(6, 5, "high"))
    lines.append(_entry(7, 6, kind="thinking_level_change"))  # no `thinkingLevel`
    lines.append(_user(8, 7, "next"))
    lines.append(_entry(9, 8, message=_reply(2540, 30)))
    session = load(_write(tmp_path, lines), strict=True)
    assert getattr(session.requests()[-1], "thinking_level", None) == "high"


def test_a_rewrite_that_reads_exactly_the_hidden_head_is_a_restart(tmp_path: Path) -> None:
    # "Reads nothing beyond the hidden head" includes reading all of it (the tools and the
    # system prompt up to its start time, cached by the previous process).
    lines = _restart_lines()
    hidden = load(_write(tmp_path, lines), strict=True).header.hidden_prefix_tokens
    assert 0 < hidden < 2500
    lines[-1]["message"]["usage"]["cacheRead"] = hidden
    session = load(_write(tmp_path, lines, "exact.jsonl"), strict=True)
    assert session.header.hidden_prefix_tokens == hidden
    assert session.requests()[-1].system_changed.startswith("new pi process (inferred)")
    lines[-1]["message"]["usage"]["cacheRead"] = hidden + 1
    beyond = load(_write(tmp_path, lines, "beyond.jsonl"), strict=True)
    assert not hasattr(beyond.requests()[-1], "system_changed")


def test_a_v1_compaction_keeps_the_entry_it_names_first(tmp_path: Path) -> None:
    # `firstKeptEntryIndex` 4 is the tool result: kept, with what follows; only the entries
    # before it are replaced by the summary.
    lines = pi_lines(version=1)
    lines.append(_v1_compaction(firstKeptEntryIndex=4))
    session = load(_write(tmp_path, lines), strict=True)
    c = next(e for e in session.events if isinstance(e, Compaction))
    kept = [
        type(e).__name__
        for e in session.events[: session.events.index(c)]
        if isinstance(e, UserMessage | AssistantMessage | ToolResult) and e.id not in c.replaces
    ]
    assert kept == ["ToolResult", "AssistantMessage"]


def test_injected_text_since_the_last_request_is_no_sign_of_a_restart(tmp_path: Path) -> None:
    # Only a message the user typed (or a `!cmd`) shows that a new process may have started;
    # text an extension injects (`custom_message`) is written by the running one.
    lines = _restart_lines()
    typed = lines[-2]
    lines[-2] = _entry(6, 5, kind="custom_message", customType="note", content="injected",
                       display=False)
    lines[-2]["timestamp"] = typed["timestamp"]
    session = load(_write(tmp_path, lines), strict=True)
    assert not hasattr(session.requests()[-1], "system_changed")


def test_results_naming_an_id_two_waiting_calls_share_answer_them_in_call_order(
    tmp_path: Path,
) -> None:
    # Two calls of one response logged under the same id: the first result answers the first.
    lines = pi_lines(3)
    header, *entries = lines
    call, result, answer = (json.loads(json.dumps(e)) for e in entries[2:5])
    first = call["message"]["content"][1]
    first["id"] = "call_0"
    second = dict(first, name="read", arguments={"path": "a.txt"})
    call["message"]["content"].append(second)
    result["message"]["toolCallId"] = "call_0"
    result2 = json.loads(json.dumps(result))
    result2["message"].update(toolName="read", content=[{"type": "text", "text": "alpha"}])
    body = [*entries[:2], call, result, result2, answer]
    _chained(body)
    session = load(_write(tmp_path, [header, *body]), strict=True)
    calls = [(b.id, b.name) for e in session.events if isinstance(e, AssistantMessage)
             for b in e.blocks if isinstance(b, ToolCallBlock)]
    results = [(e.call_id, e.output) for e in session.events if isinstance(e, ToolResult)]
    assert calls == [("call_0", "bash"), ("call_0#2", "read")]
    assert results == [("call_0", "a.txt\nb.txt"), ("call_0#2", "alpha")]


def test_a_session_starts_no_later_than_its_first_event(tmp_path: Path) -> None:
    lines = pi_lines()
    lines[0]["timestamp"] = "2026-01-02T11:00:00.000Z"  # after every entry (a damaged clock)
    session = load(_write(tmp_path, lines), strict=True)
    assert session.header.ts == session.events[0].ts
    assert session.header.ts.isoformat() == "2026-01-02T10:00:00+00:00"


def test_label_session_info_and_custom_entries_are_not_context(tmp_path: Path) -> None:
    # docs/adapters.md, pi: `model_change`, `thinking_level_change`, `label`, `custom`,
    # `session_info` are not context (found by a mutation pass: three had no test).
    lines = pi_lines() + [
        _entry(6, 5, kind="label", targetId="00000003", label="not sent: a label"),
        _entry(7, 6, kind="session_info", name="not sent: a name"),
        _entry(8, 7, kind="custom", customType="ext", data={"note": "not sent: data"}),
        _user(9, 8, "and then?"),
        _entry(10, 9, message=_reply(100, 200)),
    ]
    session = load(_write(tmp_path, lines), strict=True)  # nothing to report
    counts = session.header.ignored_records
    assert [counts.get(k) for k in ("label", "session_info", "custom")] == [1, 1, 1]
    assert len(session.requests()) == 3
    assert not any("not sent" in getattr(e, "text", "") for e in session.events)


def test_a_branch_summary_is_injected_user_text(tmp_path: Path) -> None:
    lines = pi_lines() + [
        _entry(6, 5, kind="branch_summary", fromId="00000003", summary="Tried another way."),
        _user(7, 6, "go on"),
        _entry(8, 7, message=_reply(100, 300)),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    users = [e for e in session.events if isinstance(e, UserMessage)]
    assert [("Tried another way." in e.text, e.injected) for e in users] == [
        (False, False), (True, True), (False, False)
    ]


def test_a_call_a_compaction_cut_from_its_result_gets_pi_s_own_placeholder(tmp_path: Path) -> None:
    # docs/adapters.md, pi: a tool call left without a result by a compaction gets the error
    # result pi itself sends (transformMessages), unreported: not a damaged log.
    header, first, model_change, call, _result, _answer = pi_lines()
    lines = [
        header, first, model_change, call,
        _entry(6, 3, kind="compaction", summary="Summary.", firstKeptEntryId="00000003",
               tokensBefore=2600),
        _user(7, 6, "go on"),
        _entry(8, 7, message=_reply(100, 300)),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    placeholders = [e for e in session.events if getattr(e, "synthetic", None)]
    assert [(e.call_id, e.is_error) for e in placeholders] == [("toolu_1", True)]
    assert unpaired_before_request(session) == []


def test_a_result_of_an_unknown_call_answers_the_oldest_waiting_one_or_is_skipped(
    tmp_path: Path,
) -> None:
    # docs/adapters.md, Bad input: pi pairs a tool result whose call id is unknown with the
    # oldest call still waiting for its result, and skips its line when none is (found by a
    # mutation pass: no pi test had either).
    lines = pi_lines()
    lines[4]["message"]["toolCallId"] = "toolu_unknown"
    path = _write(tmp_path, lines)
    session = load(path)
    (result,) = [e for e in session.events if isinstance(e, ToolResult)]
    assert result.call_id == "toolu_1" and result.output == "a.txt\nb.txt"
    assert [(e.line, "tool call 'toolu_unknown'" in str(e)) for e in session.skipped] == [
        (5, True)
    ]
    with pytest.raises(LogFormatError, match=r"session\.jsonl:5: expected a tool call 'toolu_u"):
        load(path, strict=True)
    # A second result when no call waits: its line is skipped.
    lines = pi_lines()
    second = dict(lines[4], id="00000009", parentId="00000004",
                  timestamp="2026-01-02T10:00:02.600Z")
    second["message"] = dict(second["message"], toolCallId="toolu_other")
    lines.insert(5, second)
    lines[6]["parentId"] = "00000009"
    session = load(_write(tmp_path, lines))
    assert len([e for e in session.events if isinstance(e, ToolResult)]) == 1
    assert [e.line for e in session.skipped] == [6]
    assert "expected a tool call before the result for 'toolu_other'" in str(session.skipped[0])


def test_an_image_in_a_prompt_is_a_placeholder_labelled_estimated(tmp_path: Path) -> None:
    # docs/adapters.md, Not mapped: any pi block with `data` + `mimeType` is a placeholder and
    # the user message holding one `estimated_text` (found by a mutation pass: only tool
    # results had a test).
    lines = pi_lines()
    lines[1]["message"]["content"].append(
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    )
    session = load(_write(tmp_path, lines), strict=True)
    prompt = next(e for e in session.events if isinstance(e, UserMessage))
    assert prompt.text == "List the files.\n[image image/png 12 base64 chars]"
    assert prompt.estimated_text is True


def test_a_negative_total_token_count_garbles_the_usage(tmp_path: Path) -> None:
    # A token count below zero is malformed input, even one the reader does not use
    # (`totalTokens`): it passed --strict silently.
    lines = pi_lines()
    lines[5]["message"]["usage"]["totalTokens"] = -1
    path = _write(tmp_path, lines)
    session = load(path)
    assert [r.usage is None for r in session.requests()] == [False, True]
    assert [e.line for e in session.skipped] == [6]
    with pytest.raises(LogFormatError,
                       match=r"session\.jsonl:6: expected `totalTokens` to be >= 0, got -1"):
        load(path, strict=True)


@pytest.mark.parametrize(
    ("cost", "expected"),
    [
        (-0.5, "expected `cost.total` to be a number >= 0, got -0.5 in `usage`"),
        ("abc", "expected `cost.total` to be a number, got 'abc' in `usage`"),
    ],
)
def test_a_garbled_cost_is_reported_and_the_counts_kept(
    tmp_path: Path, cost: Any, expected: str
) -> None:
    # A wrong-typed or negative `cost.total` passed --strict silently (a negative one was
    # even kept as pi's cost); the token counts beside it are still the request's usage.
    lines = pi_lines()
    lines[5]["message"]["usage"]["cost"]["total"] = cost
    path = _write(tmp_path, lines)
    session = load(path)
    second = session.requests()[1].usage
    assert (second.input_tokens, second.cache_read_tokens, second.cost_usd) == (3, 2500, None)
    assert [str(e).split(".jsonl:", 1)[1] for e in session.skipped] == [
        f"6: {expected}; pi's cost is not kept"
    ]
    with pytest.raises(LogFormatError, match=r"session\.jsonl:6: expected `cost\.total`"):
        load(path, strict=True)



def test_an_image_without_its_data_is_a_placeholder_labelled_estimated(tmp_path: Path) -> None:
    # An image block that lost its base64 payload: its pixels are in the log nowhere, so the
    # text standing for it is labelled estimated (calibrate must not size text by it).
    lines = pi_lines()
    lines[1]["message"]["content"].append({"type": "image", "mimeType": "image/png"})
    session = load(_write(tmp_path, lines), strict=True)
    prompt = next(e for e in session.events if isinstance(e, UserMessage))
    assert prompt.text == "List the files.\n[image image/png 0 base64 chars]"
    assert prompt.estimated_text is True


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({"output": "", "exitCode": 0}, "Ran `make`\n(no output)"),
        ({"output": "x", "exitCode": 2}, "Ran `make`\n```\nx\n```\n\nCommand exited with code 2"),
        ({"output": "x", "exitCode": None, "cancelled": True},
         "Ran `make`\n```\nx\n```\n\n(command cancelled)"),
        ({"output": "x", "exitCode": 0, "truncated": True, "fullOutputPath": "/tmp/o.txt"},
         "Ran `make`\n```\nx\n```\n\n[Output truncated. Full output: /tmp/o.txt]"),
        ({"output": "x", "exitCode": 0, "fullOutputPath": "/tmp/o.txt"}, "Ran `make`\n```\nx\n```"),
    ],
    ids=["no-output", "exit-code", "cancelled", "truncated", "not-truncated"],
)
def test_a_bash_execution_reads_as_pi_renders_it(
    tmp_path: Path, fields: dict[str, Any], text: str
) -> None:
    # pi's bashExecutionToText (docs/adapters.md, pi: the text pi sends for a `!cmd`).
    lines = pi_lines()
    lines.insert(2, _entry(20, 1, message={"role": "bashExecution", "command": "make", **fields}))
    lines[3]["parentId"] = f"{20:08x}"
    session = load(_write(tmp_path, lines), strict=True)
    assert [e.text for e in session.events if isinstance(e, UserMessage)][1] == text


@pytest.mark.parametrize("version", [0, -1, "3", 2.0])
def test_a_header_version_that_is_no_positive_integer_is_reported(
    tmp_path: Path, version: Any
) -> None:
    # pi numbers its session format from 1 (formats.md §3: CURRENT_SESSION_VERSION = 3):
    # another value is a damaged header, reported at line 1 and read as the entries show.
    lines = pi_lines()
    lines[0]["version"] = version
    session = load(_write(tmp_path, lines))
    assert [e.line for e in session.skipped] == [1]
    assert "`version` (a positive integer)" in str(session.skipped[0])
    assert session.header.source_format == "pi-session-v2"  # the entries carry ids


def test_a_v1_file_with_a_version_0_header_is_read_as_v1(tmp_path: Path) -> None:
    # Without ids the entries are v1's; a header version of 0 (no pi version) says nothing.
    lines = pi_lines(version=1)
    lines[0]["version"] = 0
    session = load(_write(tmp_path, lines))
    assert session.header.source_format == "pi-session-v1"
    assert session.header.migrated_from_version == 1


def test_a_header_label_of_the_wrong_type_is_reported(tmp_path: Path) -> None:
    # A damaged header field (docs/adapters.md, pi): `parentSession` is a path, not a number.
    lines = pi_lines()
    lines[0]["parentSession"] = 123
    session = load(_write(tmp_path, lines))
    assert [e.line for e in session.skipped] == [1]
    assert "`parentSession` (a string)" in str(session.skipped[0])
    assert not hasattr(session.header, "parentSession")


def test_a_header_after_the_first_entry_is_reported(tmp_path: Path) -> None:
    # pi writes its `session` header on line 1 (formats.md §3): one further down is damage.
    lines = pi_lines()
    lines[0], lines[1] = lines[1], lines[0]
    session = load(_write(tmp_path, lines))
    assert [(e.line, "header on the first line" in str(e)) for e in session.skipped] == [
        (2, True)
    ]
    assert session.header.session_id == "pi-1"



def test_an_entry_that_lost_its_id_in_a_v2_file_is_reported(tmp_path: Path) -> None:
    # Entries with ids are v2+ (docs/adapters.md, pi): one that lost its id is a damaged
    # entry, reported and skipped; it does not turn the file into a v1 file to migrate.
    lines = pi_lines()
    del lines[2]["id"]  # the model_change
    lines[3]["parentId"] = "00000001"
    session = load(_write(tmp_path, lines))
    assert [(e.line, "expected an entry `id`" in str(e)) for e in session.skipped] == [(3, True)]
    assert session.header.source_format == "pi-session-v3"
    assert [r.request_id for r in session.requests()] == ["00000003", "00000005"]


def test_a_parent_id_of_the_wrong_type_is_reported(tmp_path: Path) -> None:
    # `parentId` is an entry id or null (formats.md §3): another type is a damaged entry.
    lines = pi_lines()
    lines[2]["parentId"] = 1  # the model_change
    lines[3]["parentId"] = "00000001"
    session = load(_write(tmp_path, lines))
    assert [(e.line, "`parentId`" in str(e)) for e in session.skipped] == [(3, True)]
    assert len(session.requests()) == 2


def test_a_session_starts_at_its_header_s_time(tmp_path: Path) -> None:
    # The header's `timestamp` is when pi created the session (formats.md §3), before its
    # first entry: the session starts then.
    session = load(_write(tmp_path, pi_lines()), strict=True)
    assert session.header.ts.isoformat() == "2026-01-02T09:59:59+00:00"


def test_the_session_model_is_its_requests_model(tmp_path: Path) -> None:
    # A v2+ header names no model (formats.md §3: only v1 has `modelId`): the session's model
    # is the one its responses name, not a default.
    lines = pi_lines()
    for line in lines:
        message = line.get("message", {})
        if message.get("role") == "assistant":
            message["model"] = "claude-opus-4-5"
    session = load(_write(tmp_path, lines), strict=True)
    assert session.header.model == "claude-opus-4-5"


@pytest.mark.parametrize("case", ["model switched", "provider switched", "openai"])
def test_a_rewrite_a_route_change_or_an_automatic_cache_explains_is_no_restart(
    tmp_path: Path, case: str
) -> None:
    # A model or provider switch starts a new cache (formats.md §6 (e)); and only Anthropic's
    # explicit breakpoints make a full rewrite inside the cache lifetime certain: OpenAI's
    # automatic prefix cache may miss on its own (docs/adapters.md, pi: restarts).
    lines = _restart_lines()
    if case == "model switched":
        lines[-1]["message"]["model"] = "claude-opus-4-5"
    elif case == "provider switched":  # the same model, from Vertex to Anthropic's API
        for line in lines[:-1]:
            if line.get("message", {}).get("role") == "assistant":
                line["message"]["provider"] = "google-vertex"
    else:
        for line in lines:
            message = line.get("message", {})
            if message.get("role") == "assistant":
                message.update(provider="openai", model="gpt-5.1-codex")
    session = load(_write(tmp_path, lines), strict=True)
    assert not hasattr(session.requests()[-1], "system_changed")
    assert not hasattr(session.header, "inferred_restarts")


def test_a_rewrite_after_a_request_that_cached_nothing_is_no_restart(tmp_path: Path) -> None:
    # The previous request neither read nor wrote the cache: there was no cached prefix to
    # lose, so a full write next is no sign of a new pi process.
    lines = _restart_lines()
    lines[5]["message"]["usage"].update(cacheRead=0, cacheWrite=0, input=2600)
    session = load(_write(tmp_path, lines), strict=True)
    assert not hasattr(session.requests()[-1], "system_changed")


def test_a_request_that_wrote_nothing_to_the_cache_is_no_restart(tmp_path: Path) -> None:
    # A restart re-writes the prompt (docs/adapters.md, pi): a request that read and wrote
    # nothing (sent uncached) shows no new prompt head.
    lines = _restart_lines()
    lines[-1]["message"]["usage"].update(cacheRead=0, cacheWrite=0, input=2600)
    session = load(_write(tmp_path, lines), strict=True)
    assert not hasattr(session.requests()[-1], "system_changed")


def test_the_shared_history_a_branch_copies_holds_no_request(tmp_path: Path) -> None:
    # A branch starts with copies of the shared history, without request markers
    # (docs/adapters.md, Threads): its copied responses name no request either.
    lines = pi_lines()
    lines.append(_entry(6, 4, message={"role": "user", "content": "abandoned question"}))
    lines.append(_entry(7, 6, message=_assistant("abandoned answer", 2500)))
    lines.append(_entry(8, 5, message={"role": "user", "content": "main question"}))
    lines.append(_entry(9, 8, message=_assistant("main answer", 2600)))
    session = load(_write(tmp_path, lines), strict=True)
    copies = [e for e in session.events if getattr(e, "copied_from", None)]
    assert any(isinstance(e, AssistantMessage) for e in copies)
    assert all(e.request_id is None for e in copies if isinstance(e, AssistantMessage))


def test_a_result_written_twice_does_not_answer_another_call(tmp_path: Path) -> None:
    # A second result for an answered call (a record written twice, new id) is dropped as a
    # duplicate (docs/adapters.md, Bad input); it must not answer the next waiting call.
    lines = pi_lines(3)
    header, *entries = lines
    call, result, answer = (json.loads(json.dumps(e)) for e in entries[2:5])
    second = {"type": "toolCall", "id": "toolu_2", "name": "read", "arguments": {}}
    call["message"]["content"].append(second)
    again = json.loads(json.dumps(result))
    again["message"]["content"] = [{"type": "text", "text": "written again"}]
    result2 = json.loads(json.dumps(result))
    result2["message"].update(toolCallId="toolu_2", content=[{"type": "text", "text": "alpha"}])
    body = [*entries[:2], call, result, again, result2, answer]
    _chained(body)
    session = load(_write(tmp_path, [header, *body]))
    results = [(e.call_id, e.output) for e in session.events if isinstance(e, ToolResult)]
    assert results == [("toolu_1", "a.txt\nb.txt"), ("toolu_2", "alpha")]


def test_a_branch_forked_after_a_compaction_copies_it_replacing_its_own_copies(
    tmp_path: Path,
) -> None:
    # A branch's copy of the shared history is its own (docs/adapters.md, Threads): the copied
    # compaction replaces the branch's copies, not the main thread's events.
    lines = pi_lines()
    lines.append(
        _entry(6, 5, kind="compaction", summary="s", firstKeptEntryId=f"{5:08x}",
               tokensBefore=2600)
    )
    lines.append(_entry(7, 6, message={"role": "user", "content": "abandoned question"}))
    lines.append(_entry(8, 7, message=_assistant("abandoned answer", 2500)))
    lines.append(_entry(9, 6, message={"role": "user", "content": "main question"}))
    lines.append(_entry(10, 9, message=_assistant("main answer", 2600)))
    session = load(_write(tmp_path, lines), strict=True)
    branch = next(e for e in session.events if isinstance(e, ThreadStart)).thread_id
    own = {e.id for e in session.events if e.thread == branch}
    copy = next(e for e in session.events if isinstance(e, Compaction) and e.thread == branch)
    assert copy.replaces and set(copy.replaces) <= own


def test_redacted_result_ids_answer_the_oldest_waiting_calls_unreported(tmp_path: Path) -> None:
    # Entire redacts ids to REDACTED (formats.md): such a result answers the oldest call still
    # waiting, and is no damage to report (docs/adapters.md, Bad input).
    lines = pi_lines(3)
    header, *entries = lines
    call, result, answer = (json.loads(json.dumps(e)) for e in entries[2:5])
    call["message"]["content"].append(
        {"type": "toolCall", "id": "toolu_2", "name": "read", "arguments": {}}
    )
    result["message"]["toolCallId"] = "REDACTED"
    result2 = json.loads(json.dumps(result))
    result2["message"]["content"] = [{"type": "text", "text": "alpha"}]
    body = [*entries[:2], call, result, result2, answer]
    _chained(body)
    session = load(_write(tmp_path, [header, *body]), strict=True)
    results = [(e.call_id, e.output) for e in session.events if isinstance(e, ToolResult)]
    assert results == [("toolu_1", "a.txt\nb.txt"), ("toolu_2", "alpha")]


def test_a_tool_result_keeps_its_logged_tool_name_and_error_flag(tmp_path: Path) -> None:
    # toolResult{toolCallId, toolName, content, isError} (formats.md §3): the result's own
    # name (its call lost it here) and its failure are what pi logged.
    lines = pi_lines()
    del lines[3]["message"]["content"][1]["name"]
    lines[4]["message"]["isError"] = True
    session = load(_write(tmp_path, lines), strict=True)
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert (result.tool_name, result.is_error) == ("bash", True)


def test_an_empty_usage_object_is_a_lost_usage_and_reported(tmp_path: Path) -> None:
    # pi-ai logs every count on every response (formats.md §3): `usage: {}` lost them, which
    # is damage (reported), not a provider that reported zeros (counted, unreported).
    lines = pi_lines()
    lines[3]["message"]["usage"] = {}
    session = load(_write(tmp_path, lines))
    assert session.requests()[0].usage is None
    assert [e.line for e in session.skipped] == [4]
    assert "expected `usage`" in str(session.skipped[0])


def test_an_empty_zero_usage_answer_is_history_not_a_request(tmp_path: Path) -> None:
    # Zero usage and no content: nothing was answered nor billed; no request (a zero-usage
    # response that did answer is one, without usage).
    lines = pi_lines()
    lines.append(_entry(6, 5, message={"role": "user", "content": "again"}))
    lines.append(_entry(7, 6, message=_assistant("", 0, usage=False)))
    session = load(_write(tmp_path, lines), strict=True)
    assert len(session.requests()) == 2


def test_a_response_without_a_start_time_starts_no_later_than_it_ends(tmp_path: Path) -> None:
    # Without `message.timestamp` a request starts when the event before it ended; with that
    # event written later than the response (a skewed clock), at the response's own time.
    lines = pi_lines()
    del lines[5]["message"]["timestamp"]
    lines[5]["timestamp"] = "2026-01-02T10:00:02.000Z"  # before the tool result (02.500)
    session = load(_write(tmp_path, lines), strict=True)
    last = session.requests()[-1]
    answer = [e for e in session.events if isinstance(e, AssistantMessage)][-1]
    assert last.ts <= answer.ts and last.duration_ms == 0


@pytest.mark.parametrize("case", ["no start time", "started at the fork"])
def test_only_a_response_started_before_the_fork_is_a_copy(tmp_path: Path, case: str) -> None:
    # A fork's copied response is one whose `message.timestamp` is older than the header
    # (docs/adapters.md, pi: forked sessions); one without that time, or started at the
    # fork's own time, is the fork's.
    lines = pi_lines()
    lines[0]["parentSession"] = "/sessions/parent.jsonl"
    if case == "no start time":
        lines[0]["timestamp"] = "2026-01-02T10:00:02.800Z"  # after the tool result (02.500)
        del lines[5]["message"]["timestamp"]
    else:
        lines[0]["timestamp"] = "2026-01-02T10:00:03.000Z"  # the second response's start
    requests = load(_write(tmp_path, lines), strict=True).requests()
    assert [getattr(r, "copied_from_parent", False) for r in requests] == [True, False]


def test_thinking_logged_without_its_text_is_sized_from_the_output(tmp_path: Path) -> None:
    # Thinking whose text is not in the log (redacted: a signature only) costs tokens all the
    # same; its size is the response's output minus its visible blocks (formats.md §6).
    lines = pi_lines()
    lines[3]["message"]["content"][0] = {
        "type": "thinking", "thinking": "", "thinkingSignature": "c2ln"
    }
    session = load(_write(tmp_path, lines), strict=True)
    response = next(e for e in session.events if isinstance(e, AssistantMessage))
    thinking = response.blocks[0]
    assert thinking.estimated_from == "output_tokens - visible blocks"
    assert 0 < thinking.estimated_tokens < 30  # 30 output tokens, a tool call among them


def test_a_compaction_keeping_from_an_unknown_entry_says_so(tmp_path: Path) -> None:
    # `firstKeptEntryId` naming no entry of the path (a lost line): the compaction replaces
    # the whole path before it, and is marked, as that is a guess.
    lines = pi_lines()
    lines.append(
        _entry(6, 5, kind="compaction", summary="s", firstKeptEntryId="deadbeef",
               tokensBefore=2600)
    )
    session = load(_write(tmp_path, lines), strict=True)
    c = next(e for e in session.events if isinstance(e, Compaction))
    assert c.first_kept_missing is True
    before = [e for e in session.events[: session.events.index(c)]
              if isinstance(e, UserMessage | AssistantMessage | ToolResult)]
    assert c.replaces == [e.id for e in before]


@pytest.mark.parametrize("usage", ["zero", "garbled"])
def test_an_abandoned_branch_whose_answer_has_no_usable_usage_is_still_replayed(
    tmp_path: Path, usage: str
) -> None:
    # On the main path, a response that answered with zero usage (a provider reporting none)
    # or with a garbled usage is a request without usage (docs/adapters.md, pi). The same
    # response in an abandoned branch is one too: its branch is replayed, not left out.
    answer = _assistant("abandoned answer", 0, usage=usage == "garbled")
    if usage == "garbled":
        garbled = {"input": "2", "output": "5", "cacheRead": None, "cacheWrite": "9"}
        answer["usage"] = dict(answer["usage"], **garbled)
    session = load(_write(tmp_path, _abandoned_branch(answer)))
    branch = next(e for e in session.events if isinstance(e, ThreadStart)).thread_id
    assert [(r.thread, r.usage is None) for r in session.requests()] == [
        ("main", False),
        ("main", False),
        (branch, True),
        ("main", False),
    ]


def test_an_abandoned_branch_whose_only_answer_is_empty_and_unbilled_is_not_replayed(
    tmp_path: Path,
) -> None:
    # A zero-usage response that answered nothing is no request (docs/adapters.md, pi): a
    # branch holding only that is not replayed.
    lines = _abandoned_branch(_assistant("", 0, usage=False))
    session = load(_write(tmp_path, lines), strict=True)
    assert {e.thread for e in session.events} == {"main"}


@pytest.mark.parametrize("usage", ["garbled", 5, [1]])
def test_a_usage_of_the_wrong_type_keeps_the_response_as_a_request(
    tmp_path: Path, usage: Any
) -> None:
    # A garbled usage is reported and the response kept as a request without usage
    # (docs/adapters.md, pi): a wrong-typed one too. The line used to be skipped whole, the
    # request and its tool call with it (and the call's result then had no call).
    lines = pi_lines()
    lines[3]["message"]["usage"] = usage
    path = _write(tmp_path, lines)
    session = load(path)
    assert [(r.request_id, r.usage is None) for r in session.requests()] == [
        ("00000003", True),
        ("00000005", False),
    ]
    assert [str(e) for e in session.skipped] == [
        f"{path}:4: expected `usage` (an object) on an assistant message; "
        "kept as a request without usage"
    ]
    assert unpaired_before_request(session) == []


def test_summary_messages_are_sent_wrapped_as_pi_sends_them(tmp_path: Path) -> None:
    # strategies.md (pi messages.ts:11-24): pi sends a compaction summary and a branch summary as
    # a user message wrapped in its prefix and `<summary>` tags. A message entry of role
    # `compactionSummary` / `branchSummary` (an AgentMessage with `summary`, no `content`) was
    # read as its bare summary: the prompt it stood for was short by the wrapper.
    lines = pi_lines()
    summaries = [
        _entry(20, 1, message={"role": "compactionSummary", "summary": "Listed files.",
                               "tokensBefore": 9000, "timestamp": 1767348001000}),
        _entry(21, 20, message={"role": "branchSummary", "summary": "Tried grep.",
                                "fromId": "0000000a", "timestamp": 1767348001500}),
    ]
    lines[2:2] = summaries
    lines[4]["parentId"] = f"{21:08x}"
    session = load(_write(tmp_path, lines), strict=True)
    texts = [e.text for e in session.events if isinstance(e, UserMessage)]
    assert texts[1:3] == [
        "The conversation history before this point was compacted into the following summary:"
        "\n\n<summary>\nListed files.\n</summary>",
        "The following is a summary of a branch that this conversation came back from:\n\n"
        "<summary>\nTried grep.</summary>",  # (no newline before the tag, as strategies.md has it)
    ]
