"""Claude Code adapter: rules on small logs written here, then the real dev samples."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from test_adapters_common import (
    SAMPLES,
    claude_lines,
    jsonl,
    needs_samples,
    unpaired_before_request,
)

from replay import _api as replay_api
from replay import load, replay
from replay._errors import LogFormatError
from replay.adapters import claude_code
from replay.log import (
    AssistantMessage,
    Compaction,
    RequestMarker,
    ThinkingBlock,
    ThreadStart,
    ToolCallBlock,
    ToolResult,
    UserMessage,
)


def _write(tmp: Path, lines: list[dict[str, Any]], name: str = "s-1.jsonl") -> Path:
    path = tmp / name
    path.write_text(jsonl(lines), encoding="utf-8")
    return path


def _usage(inp: int, write: int, read: int, out: int, h1: int | None = None) -> dict[str, Any]:
    u: dict[str, Any] = {
        "input_tokens": inp,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "output_tokens": out,
    }
    if h1 is not None:
        u["cache_creation"] = {
            "ephemeral_5m_input_tokens": write - h1,
            "ephemeral_1h_input_tokens": h1,
        }
    return u


def _line(uuid: str, parent: str | None, ts: str, kind: str, **kw: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s-1",
        "timestamp": f"2026-01-02T10:00:{ts}Z",
        "isSidechain": False,
        **kw,
    }


def _assistant(
    uuid: str,
    parent: str | None,
    ts: str,
    msg: str,
    req: str,
    block: dict,
    usage: dict,
    model: str = "claude-sonnet-4-20250514",
    **kw: Any,
) -> dict:
    return _line(
        uuid,
        parent,
        ts,
        "assistant",
        requestId=req,
        message={
            "id": msg,
            "role": "assistant",
            "model": model,
            "content": [block],
            "usage": usage,
        },
        **kw,
    )


def _user(uuid: str, parent: str | None, ts: str, content: Any, **kw: Any) -> dict:
    return _line(uuid, parent, ts, "user", message={"role": "user", "content": content}, **kw)


def _boundary(parent: str | None, **kw: Any) -> dict[str, Any]:
    """A compact boundary record `cb` at 10:01:00 (an automatic one at 3,100 tokens unless
    `kw` says otherwise)."""
    return {
        "type": "system", "subtype": "compact_boundary", "uuid": "cb", "parentUuid": parent,
        "sessionId": "s-1", "timestamp": "2026-01-02T10:01:00Z",
        "compactMetadata": {"trigger": "auto", "preTokens": 3100}, **kw,
    }


def _second_answer() -> dict:
    """`req_2`'s response (`a3`, after the user line `u2`)."""
    return _assistant(
        "a3", "u2", "03.000", "msg_2", "req_2", {"type": "text", "text": "Done."},
        _usage(4, 20, 1100, 9),
    )


def test_one_request_per_request_and_message_id_with_the_largest_usage(tmp_path: Path) -> None:
    # Quirk: 1.0.x writes partial output_tokens on the first lines of a response.
    lines = [
        _user("u1", None, "00.000", "hi"),
        _assistant(
            "a1",
            "u1",
            "01.000",
            "msg_1",
            "req_1",
            {"type": "text", "text": "Let me look."},
            _usage(3, 100, 1000, 3),
        ),
        _assistant(
            "a2",
            "a1",
            "02.000",
            "msg_1",
            "req_1",
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": "x"}},
            _usage(3, 100, 1000, 172),
        ),
        _user(
            "u2",
            "a2",
            "02.500",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "body"}],
                }
            ],
        ),
        _second_answer(),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    requests = session.requests()
    assert [r.request_id for r in requests] == ["req_1", "req_2"]
    assert requests[0].usage.output_tokens == 172
    assert requests[0].usage.cache_write_5m_tokens == 100  # no TTL split: the default 5 minutes
    first = next(e for e in session.events if isinstance(e, AssistantMessage))
    assert [b.type for b in first.blocks] == ["text", "tool_call"]
    assert first.request_id == "req_1"
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert result.output == "body" and result.tool_name == "Read"
    # The request was sent when its context was complete, before the response was written.
    assert requests[1].ts == result.ts


def _two_line_response(first: Any, second: Any) -> list[dict[str, Any]]:
    """A 1.0.x response written on two lines (`msg_1`), with those usages, and a second one."""
    lines = [
        _user("u1", None, "00.000", "hi"),
        _assistant("a1", "u1", "01.000", "msg_1", "req_1", {"type": "text", "text": "Hm."}, first),
        _assistant("a2", "a1", "02.000", "msg_1", "req_1", {"type": "text", "text": "Ok."}, second),
        _user("u2", "a2", "02.500", "more"),
        _second_answer(),
    ]
    for line in lines:
        if line["type"] == "assistant" and line["message"]["usage"] is None:
            del line["message"]["usage"]
    return lines


@pytest.mark.parametrize("damage", ["garbled", "lost"])
def test_a_response_whose_usage_is_damaged_stays_a_request(tmp_path: Path, damage: str) -> None:
    # A billed response whose lines lost or garbled `usage`: it was skipped (garbled: the
    # response and its text were lost) or read as history (lost: as if free). It stays a
    # request without usage, and the damage is reported at its lines.
    bad = {**_usage(3, 100, 1000, 5), "input_tokens": "3"} if damage == "garbled" else None
    path = _write(tmp_path, _two_line_response(bad, bad))
    problem = (
        "expected `input_tokens` to be a number, got str in `usage`"
        if damage == "garbled"
        else "expected `usage` (an object) on an assistant message"
    )
    session = load(path)
    first, second = session.requests()
    assert first.request_id == "req_1" and first.usage is None
    assert second.usage is not None
    response = next(e for e in session.events if isinstance(e, AssistantMessage))
    assert [b.text for b in response.blocks] == ["Hm.", "Ok."]
    assert [str(e) for e in session.skipped] == [
        f"{path}:{n}: {problem}; the request was kept without usage" for n in (2, 3)
    ]
    with pytest.raises(LogFormatError) as err:
        load(path, strict=True)
    assert str(err.value) == f"{path}:2: {problem}"
    # One line of the response kept its usage: that one is read, the damage still reported.
    path = _write(tmp_path, _two_line_response(bad, _usage(3, 100, 1000, 172)))
    session = load(path)
    assert session.requests()[0].usage.output_tokens == 172
    assert [str(e) for e in session.skipped] == [f"{path}:2: {problem}; read from its other lines"]


def test_usage_buckets_split_by_ttl_and_stay_disjoint(tmp_path: Path) -> None:
    lines = claude_lines()
    session = load(_write(tmp_path, lines), strict=True)
    u = session.requests()[0].usage
    assert (
        u.input_tokens,
        u.cache_read_tokens,
        u.cache_write_5m_tokens,
        u.cache_write_1h_tokens,
        u.output_tokens,
    ) == (10, 0, 0, 3000, 60)
    assert u.prompt_tokens == 3010
    assert u.raw["cache_creation_input_tokens"] == 3000


def test_empty_thinking_is_sized_from_output_tokens(tmp_path: Path) -> None:
    session = load(_write(tmp_path, claude_lines()), strict=True)
    message = next(e for e in session.events if isinstance(e, AssistantMessage))
    thinking = message.blocks[0]
    assert isinstance(thinking, ThinkingBlock) and thinking.thinking == ""
    assert thinking.signature == "sig"
    assert 0 < thinking.estimated_tokens < 60  # output 60 minus the visible tool call
    assert thinking.estimated_from == "output_tokens - visible blocks"


def test_plan_the_cli_backfilled_into_exit_plan_mode_is_not_sent(tmp_path: Path) -> None:
    # Quirk (2.x): the logged ExitPlanMode input carries the plan file's text and path, added by
    # the CLI; the model wrote neither (38 output tokens). 1.0.x took the plan as input: kept.
    plan = "# Plan\n" + "step one, then step two. " * 200
    v2 = {"plan": plan, "planFilePath": "/home/me/.claude/plans/p.md"}
    lines = [
        _user("u1", None, "00.000", "plan it"),
        _assistant("a1", "u1", "01.000", "msg_1", "req_1",
                   {"type": "tool_use", "id": "t1", "name": "ExitPlanMode", "input": v2},
                   _usage(3, 100, 1000, 38)),
        _user("u2", "a1", "02.000",
              [{"type": "tool_result", "tool_use_id": "t1", "content": "approved"}]),
        _assistant("a2", "u2", "03.000", "msg_2", "req_2",
                   {"type": "tool_use", "id": "t2", "name": "ExitPlanMode",
                    "input": {"plan": "old-style plan"}},
                   _usage(3, 100, 1100, 9)),
        _user("u3", "a2", "04.000",
              [{"type": "tool_result", "tool_use_id": "t2", "content": "approved"}]),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    calls = [b for e in session.events if isinstance(e, AssistantMessage) for b in e.blocks]
    assert calls[0].arguments == {}
    assert calls[0].backfilled == v2
    assert calls[1].arguments == {"plan": "old-style plan"}


def test_progress_synthetic_and_api_error_lines_are_not_requests(tmp_path: Path) -> None:
    lines = claude_lines()
    lines.append(
        _line(
            "p9",
            "a3",
            "06.000",
            "progress",
            data={
                "type": "agent_progress",
                "message": {
                    "type": "assistant",
                    "message": {"usage": {"input_tokens": 5, "output_tokens": 5}},
                },
            },
        )
    )
    lines.append(
        _assistant(
            "s1",
            "p9",
            "07.000",
            "msg_syn",
            "req_syn",
            {"type": "text", "text": "No response requested."},
            _usage(0, 0, 0, 0),
            model="<synthetic>",
        )
    )
    lines.append(
        _assistant(
            "e1",
            "s1",
            "08.000",
            "msg_err",
            "req_err",
            {"type": "text", "text": "API Error: 529"},
            _usage(0, 0, 0, 0),
            isApiErrorMessage=True,
        )
    )
    session = load(_write(tmp_path, lines), strict=True)
    assert len(session.requests()) == 2
    texts = [
        b.text
        for e in session.events
        if isinstance(e, AssistantMessage)
        for b in e.blocks
        if b.type == "text"
    ]
    assert "No response requested." not in texts and "API Error: 529" not in texts
    assert session.header.ignored_records["progress/agent_progress"] == 1


def test_compaction_boundary_and_summary_become_one_compaction(tmp_path: Path) -> None:
    lines = claude_lines()
    lines += [
        _boundary(None, logicalParentUuid="a3",
                  compactMetadata={"trigger": "auto", "preTokens": 160000}),
        _user(
            "sum",
            "cb",
            "61.000",
            "This session is being continued… Summary: listed files.",
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        ),
        _user("u9", "sum", "62.000", "Next?"),
        _assistant(
            "a9",
            "u9",
            "63.000",
            "msg_C",
            "req_3",
            {"type": "text", "text": "Ok."},
            _usage(5, 100, 2000, 4, 100),
            model="claude-sonnet-4-6",
        ),
    ]
    lines[-3]["timestamp"] = "2026-01-02T10:01:01Z"
    lines[-2]["timestamp"] = "2026-01-02T10:01:02Z"
    lines[-1]["timestamp"] = "2026-01-02T10:01:03Z"
    session = load(_write(tmp_path, lines), strict=True)
    compactions = [e for e in session.events if isinstance(e, Compaction)]
    assert len(compactions) == 1
    c = compactions[0]
    assert c.summary.startswith("This session is being continued")
    assert (c.trigger, c.tokens_before) == ("auto", 160000)
    replaced = {e.id for e in session.events if e.id in c.replaces}
    before = [
        e
        for e in session.events[: session.events.index(c)]
        if isinstance(e, UserMessage | AssistantMessage | ToolResult)
    ]
    assert replaced == {e.id for e in before}
    assert not any(
        isinstance(e, UserMessage) and e.text.startswith("This session") for e in session.events
    )
    assert len(session.requests()) == 3


def test_preserved_segment_survives_compaction(tmp_path: Path) -> None:
    lines = claude_lines()
    lines += [
        _boundary(None, logicalParentUuid="a3", compactMetadata={
            "trigger": "manual",
            "preservedSegment": {"headUuid": "u2", "anchorUuid": "u2", "tailUuid": "a3"},
        }),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    c = next(e for e in session.events if isinstance(e, Compaction))
    kept = [
        e
        for e in session.events
        if e.id not in c.replaces and isinstance(e, UserMessage | AssistantMessage | ToolResult)
    ]
    assert [type(e).__name__ for e in kept] == ["ToolResult", "AssistantMessage"]
    assert c.summary_missing is True


def _sidechain_log() -> list[dict[str, Any]]:
    task = {
        "type": "tool_use",
        "id": "toolu_task",
        "name": "Task",
        "input": {"description": "d", "prompt": "Count the files."},
    }
    return [
        _user("u1", None, "00.000", "Delegate."),
        _assistant("a1", "u1", "01.000", "msg_1", "req_1", task, _usage(3, 500, 0, 20)),
        _user("s1", None, "01.100", "Count the files.", isSidechain=True),
        _assistant(
            "s2",
            "s1",
            "02.000",
            "msg_s",
            "req_s",
            {"type": "text", "text": "There are 2."},
            _usage(3, 400, 0, 5),
            isSidechain=True,
        ),
        _user(
            "u2",
            "a1",
            "03.000",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_task",
                    "content": [{"type": "text", "text": "There are 2."}],
                }
            ],
        ),
        _assistant(
            "a2",
            "u2",
            "04.000",
            "msg_2",
            "req_2",
            {"type": "text", "text": "2 files."},
            _usage(3, 30, 500, 4),
        ),
    ]


def test_inline_sidechain_is_its_own_thread_linked_to_the_task_call(tmp_path: Path) -> None:
    session = load(_write(tmp_path, _sidechain_log()), strict=True)
    start = next(e for e in session.events if isinstance(e, ThreadStart))
    assert start.parent_call_id == "toolu_task" and start.parent_thread == "main"
    side = [e for e in session.events if e.thread == start.thread_id]
    assert [type(e).__name__ for e in side] == ["UserMessage", "RequestMarker", "AssistantMessage"]
    assert session.events.index(start) < session.events.index(side[0])
    assert [r.thread for r in session.requests()] == ["main", start.thread_id, "main"]
    assert getattr(start, "hidden_prefix_tokens", None) is not None


def test_a_subagent_on_another_model_replays_with_its_bill(tmp_path: Path) -> None:
    """A sidechain on its own model opens its thread on that model; replaying `recorded`
    compares the log's bill, each request at its own model (it failed with an
    AttributeError: the bill note read a provider that thread starts do not have)."""
    lines = _sidechain_log()
    lines[3]["message"]["model"] = "claude-haiku-4-5"
    session = load(_write(tmp_path, lines), strict=True)
    start = next(e for e in session.events if isinstance(e, ThreadStart))
    assert start.model == "claude-haiku-4-5"
    notes = replay(session, ["recorded"]).notes
    assert any("the log's own usage costs" in n for n in notes), notes


def test_two_task_calls_with_one_prompt_start_two_sidechains_each_linked_to_its_call(
    tmp_path: Path,
) -> None:
    """Two Task calls with the same prompt: the first sidechain is the first call's, the
    second the second's (both were linked to the first call)."""
    lines = _sidechain_log()
    second = dict(lines[1]["message"]["content"][0], id="toolu_task2")
    lines.insert(2, _assistant("a1b", "a1", "01.050", "msg_1", "req_1", second,
                               _usage(3, 500, 0, 40)))
    lines.insert(4, _user("t1", None, "01.200", "Count the files.", isSidechain=True))
    lines.insert(5, _assistant("t2", "t1", "02.100", "msg_t", "req_t",
                               {"type": "text", "text": "Two."}, _usage(3, 400, 0, 5),
                               isSidechain=True))
    lines[-2]["message"]["content"].append(
        {"type": "tool_result", "tool_use_id": "toolu_task2", "content": "Two."}
    )
    session = load(_write(tmp_path, lines))
    starts = [e for e in session.events if isinstance(e, ThreadStart)]
    assert [s.parent_call_id for s in starts] == ["toolu_task", "toolu_task2"]


def _sidechain_with_a_tool_call(agent: str | None = None) -> list[dict[str, Any]]:
    """`_sidechain_log` whose subagent calls a tool before answering (two requests)."""
    lines = _sidechain_log()
    side: dict[str, Any] = {"isSidechain": True, **({"agentId": agent} if agent else {})}
    ls = {"type": "tool_use", "id": "toolu_ls", "name": "Bash", "input": {"command": "ls"}}
    result = [{"type": "tool_result", "tool_use_id": "toolu_ls", "content": "a\nb"}]
    answer = {"type": "text", "text": "There are 2."}
    lines[2:4] = [
        _user("s1", None, "01.100", "Count the files.", **side),
        _assistant("s2", "s1", "01.500", "msg_s", "req_s", ls, _usage(3, 400, 0, 5), **side),
        _user("s3", "s2", "01.700", result, **side),
        _assistant("s4", "s3", "02.000", "msg_s2", "req_s2", answer, _usage(3, 20, 400, 5), **side),
    ]
    return lines


def _sidechains(session: Any) -> dict[str, list[str]]:
    """Sidechain thread → its events' types (its `ThreadStart` is an event of the parent)."""
    starts = [e.thread_id for e in session.events if isinstance(e, ThreadStart)]
    return {t: [type(e).__name__ for e in session.events if e.thread == t] for t in starts}


@pytest.mark.parametrize("agent", [None, "a7f3"])
@pytest.mark.parametrize("gap", ["missing", "unreadable"])
def test_a_line_missing_inside_a_sidechain_neither_splits_it_nor_drops_a_request(
    tmp_path: Path, agent: str | None, gap: str
) -> None:
    # The tool result s3 is lost: s4's parentUuid names a line that is not in the file. Grouped
    # by its own root, s4 started a second sidechain and its billed request was dropped.
    lines = _sidechain_with_a_tool_call(agent)
    full = load(_write(tmp_path, lines, "full.jsonl"), strict=True)
    text = jsonl(lines).splitlines(keepends=True)
    text[4] = '{"type": "user", "uuid": "s3", "parent\n' if gap == "unreadable" else ""
    path = tmp_path / "gap.jsonl"
    path.write_text("".join(text), encoding="utf-8")
    session = load(path)
    assert [(r.request_id, r.thread) for r in session.requests()] == [
        (r.request_id, r.thread) for r in full.requests()
    ]
    (thread,) = _sidechains(session)  # one sidechain, linked to its Task call as before
    assert thread == ("agent-a7f3" if agent else "sidechain-s1")
    start = next(e for e in session.events if isinstance(e, ThreadStart))
    assert start.parent_call_id == "toolu_task"
    # s4's prompt is the sidechain's history (s3's result lost: a placeholder stands in).
    assert _sidechains(session)[thread] == [
        "UserMessage", "RequestMarker", "AssistantMessage", "ToolResult", "RequestMarker",
        "AssistantMessage",
    ]
    n = 5 if gap == "missing" else 6  # s4's line
    expected = (
        f"{path}:{n}: expected the line parentUuid 's3' names: not in the file (a missing line)"
    )
    assert f"{expected}; attached to its sidechain after line 4" in map(str, session.skipped)
    with pytest.raises(LogFormatError) as err:
        load(path, strict=True)
    if gap == "missing":
        assert str(err.value) == expected


def test_a_tool_result_after_a_gap_joins_the_sidechain_of_its_call(tmp_path: Path) -> None:
    # Another sidechain's line comes between the call and its result, whose parent (a second
    # streamed block of the call's response, say) is lost: the call, not the line before,
    # tells which sidechain the result continues.
    lines = _sidechain_with_a_tool_call()
    lines[4]["parentUuid"] = "s2b"
    other = {"isSidechain": True}
    answer = {"type": "text", "text": "Done."}
    lines[4:4] = [_user("t1", None, "01.600", "Something else.", **other)]
    lines[7:7] = [
        _assistant("t2", "t1", "02.100", "msg_t", "req_t", answer, _usage(3, 300, 0, 2), **other)
    ]
    path = _write(tmp_path, lines)
    session = load(path)
    assert _sidechains(session) == {
        "sidechain-s1": [
            "UserMessage", "RequestMarker", "AssistantMessage", "ToolResult", "RequestMarker",
            "AssistantMessage",
        ],
        "sidechain-t1": ["UserMessage", "RequestMarker", "AssistantMessage"],
    }
    assert [str(e) for e in session.skipped] == [
        f"{path}:6: expected the line parentUuid 's2b' names: not in the file (a missing line); "
        "attached to its sidechain after line 4"
    ]


def test_a_sidechain_whose_first_line_is_missing_is_not_merged_into_the_previous_one(
    tmp_path: Path,
) -> None:
    # Two Task calls, one sidechain each; the second sidechain's prompt (its root) is lost.
    first = _sidechain_with_a_tool_call()
    second = json.loads(
        json.dumps(first)
        .replace("10:00:", "10:01:")
        .replace('"toolu_', '"x-toolu_')
        .replace('"msg_', '"x-msg_')
        .replace('"req_', '"x-req_')
    )
    for line in second:
        line["uuid"] = "x-" + line["uuid"]
        line["parentUuid"] = line["parentUuid"] and "x-" + line["parentUuid"]
    second[0]["parentUuid"] = "a2"
    del second[2]  # x-s1
    path = _write(tmp_path, first + second)
    session = load(path)
    side = _sidechains(session)
    assert list(side) == ["sidechain-s1", "sidechain-x-s2"]
    assert side["sidechain-s1"] == _sidechains(load(_write(tmp_path, first, "one.jsonl")))[
        "sidechain-s1"
    ]
    # The first request after the gap has no prompt left: dropped, as before; the next is kept.
    assert [r.request_id for r in session.requests() if r.thread == "sidechain-x-s2"] == [
        "x-req_s2"
    ]
    gap = (
        f"{path}:11: expected the line parentUuid 'x-s1' names: not in the file (a missing "
        "line); a sidechain whose first lines are missing starts there"
    )
    assert str(session.skipped[0]) == gap


def _delegating_session() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A transcript whose Agent call ran subagent `abc`, and that subagent's lines."""
    main = [
        _user("u1", None, "00.000", "Delegate."),
        _assistant(
            "a1",
            "u1",
            "01.000",
            "msg_1",
            "req_1",
            {"type": "tool_use", "id": "toolu_ag", "name": "Agent", "input": {"prompt": "Count."}},
            _usage(3, 500, 0, 20),
        ),
        _user(
            "u2",
            "a1",
            "03.000",
            [{"type": "tool_result", "tool_use_id": "toolu_ag", "content": "2"}],
            toolUseResult={"agentId": "abc"},
        ),
        _assistant(
            "a2",
            "u2",
            "04.000",
            "msg_2",
            "req_2",
            {"type": "text", "text": "2."},
            _usage(3, 30, 500, 4),
        ),
    ]
    sub = [
        _user("x1", None, "01.500", "Count.", isSidechain=True, agentId="abc"),
        _assistant(
            "x2",
            "x1",
            "02.000",
            "msg_x",
            "req_x",
            {"type": "text", "text": "2"},
            _usage(3, 400, 0, 5),
            isSidechain=True,
            agentId="abc",
        ),
    ]
    return main, sub


def test_subagent_files_beside_the_transcript_are_threads(tmp_path: Path) -> None:
    main, sub = _delegating_session()
    path = _write(tmp_path, main)
    (tmp_path / "s-1" / "subagents").mkdir(parents=True)
    _write(tmp_path / "s-1" / "subagents", sub, "agent-abc.jsonl")
    # The file (subagents found beside it), the project directory, or the session's folder.
    for source in (path, tmp_path, tmp_path / "s-1"):
        session = load(source, strict=True)
        start = next(e for e in session.events if isinstance(e, ThreadStart))
        assert (start.thread_id, start.parent_call_id) == ("agent-abc", "toolu_ag")
        assert len(session.requests()) == 3
    # Its first line lost, the subagent's request is dropped: reported at its own file.
    agent = _write(tmp_path / "s-1" / "subagents", sub[1:], "agent-abc.jsonl")
    (problem,) = load(path).skipped
    assert str(problem).startswith(f"{agent}:1: expected a message of thread 'agent-abc'")


def test_a_subagents_folder_that_cannot_be_listed_is_an_error(tmp_path: Path, monkeypatch) -> None:
    # `Path.glob` skips a folder it may not list: the session would be read without its
    # subagents, and their requests left out without a word.
    import os

    main, sub = _delegating_session()
    path = _write(tmp_path, main)
    folder = tmp_path / "s-1" / "subagents"
    folder.mkdir(parents=True)
    _write(folder, sub, "agent-abc.jsonl")
    real = os.scandir

    def scandir(target: object = ".") -> object:
        if Path(os.fsdecode(target)) == folder:
            raise PermissionError(13, "Permission denied", os.fsdecode(target))
        return real(target)

    monkeypatch.setattr(os, "scandir", scandir)
    for source in (path, tmp_path, tmp_path / "s-1"):
        with pytest.raises(LogFormatError, match="cannot read the folder") as caught:
            load(source)
        assert caught.value.path == str(folder)


def _resumed_turn() -> list[dict[str, Any]]:
    """The turn a resumed session adds after the lines it copied (`claude_lines`)."""
    return [
        _user("u7", "a3", "09.000", "And hidden files?"),
        _assistant(
            "a7",
            "u7",
            "10.000",
            "msg_R",
            "req_9",
            {"type": "text", "text": "None."},
            _usage(3, 20, 3040, 3),
        ),
    ]


def test_resumed_session_files_are_deduplicated(tmp_path: Path) -> None:
    first = claude_lines()
    # The resumed file starts with a copy of the first one (same uuids and message ids).
    second = claude_lines() + _resumed_turn()
    for line in second:
        if "sessionId" in line:
            line["sessionId"] = "s-2"
    _write(tmp_path, first, "s-1.jsonl")
    _write(tmp_path, second, "s-2.jsonl")
    session = load(tmp_path, strict=True)
    assert [r.request_id for r in session.requests()] == ["req_1", "req_2", "req_9"]


def test_a_problem_in_a_resumed_file_names_that_file_and_line(tmp_path: Path) -> None:
    # s-2.jsonl copies s-1.jsonl, then holds a result for no call and a call left unanswered
    # before the next request: each reported at its own file and line, not at s-1.jsonl's.
    second = claude_lines() + [
        _user("u7", "a3", "09.000", [{"type": "tool_result", "tool_use_id": "toolu_x"}]),
        _assistant(
            "a7", "u7", "10.000", "msg_R", "req_9",
            {"type": "tool_use", "id": "toolu_9", "name": "Bash", "input": {}},
            _usage(3, 20, 3040, 3),
        ),
        _user("u8", "a7", "11.000", "Go on."),
        _assistant(
            "a8", "u8", "12.000", "msg_S", "req_10",
            {"type": "text", "text": "Done."}, _usage(3, 20, 3060, 3),
        ),
    ]
    _write(tmp_path, claude_lines(), "s-1.jsonl")
    resumed = _write(tmp_path, second, "s-2.jsonl")
    orphan, unanswered = len(claude_lines()) + 1, len(claude_lines()) + 2
    skipped = [str(e) for e in load(tmp_path).skipped]
    assert len(skipped) == 2
    assert skipped[0].startswith(f"{resumed}:{orphan}: expected a tool call for result")
    assert skipped[1].startswith(f"{resumed}:{unanswered}: expected a tool result for call")
    with pytest.raises(LogFormatError, match=f"^{resumed}:{orphan}: "):
        load(tmp_path, strict=True)


def test_a_line_missing_from_the_main_chain_is_reported(tmp_path: Path) -> None:
    # A capture gap: the line after it names a parent no line holds. It still hangs off the
    # line before it (nothing is lost), and the gap is reported, not attached silently.
    lines = claude_lines() + _resumed_turn()
    lines += [
        _user("u8", "gone", "11.000", "Go on."),
        _assistant(
            "a8", "u8", "12.000", "msg_S", "req_10",
            {"type": "text", "text": "Done."}, _usage(3, 20, 3060, 3),
        ),
    ]
    path = _write(tmp_path, lines)
    session = load(path)
    assert [r.request_id for r in session.requests()] == ["req_1", "req_2", "req_9", "req_10"]
    gap = len(lines) - 1
    assert [str(e) for e in session.skipped] == [
        f"{path}:{gap}: expected the line parentUuid 'gone' names: not in the file "
        "(a missing line); attached after the line before it"
    ]
    with pytest.raises(LogFormatError, match=f":{gap}: expected the line parentUuid 'gone'"):
        load(path, strict=True)
    # A resumed transcript given alone starts with a parent in the previous file: no gap.
    resumed = _write(tmp_path, _resumed_turn(), "s-2.jsonl")
    assert [r.request_id for r in load(resumed, strict=True).requests()] == ["req_9"]
    # Nor when sidechain lines come first: the exemption is the main chain's first line in the
    # file, not the file's first line.
    side = _user("s1", None, "08.500", "Count the files.", isSidechain=True)
    resumed = _write(tmp_path, [side, *_resumed_turn()], "s-3.jsonl")
    assert [r.request_id for r in load(resumed, strict=True).requests()] == ["req_9"]


def _resumed_under_new_uuids(
    tmp_path: Path, more: list[dict[str, Any]], retimed: bool = False
) -> Path:
    """`claude_lines()` in s-1.jsonl, then s-2.jsonl: a copy of it under new uuids (and
    session id; `retimed`: and new timestamps) followed by `more`."""
    second = claude_lines()
    for line in second:
        if retimed and "timestamp" in line:
            line["timestamp"] = line["timestamp"].replace("T10:00", "T10:05")
    for line in second + more:
        for key in ("uuid", "parentUuid", "logicalParentUuid"):
            if line.get(key) and not line[key].startswith("new-"):
                line[key] = f"new-{line[key]}"
        if "sessionId" in line:
            line["sessionId"] = "s-2"
    _write(tmp_path, claude_lines(), "s-1.jsonl")
    _write(tmp_path, second + more, "s-2.jsonl")
    return tmp_path


@pytest.mark.parametrize("retimed", [False, True])
def test_resumed_copies_under_new_uuids_are_deduplicated(tmp_path: Path, retimed: bool) -> None:
    # A resume or fork that writes the copied lines under new uuids: the responses were
    # dropped (same requestId + message.id) but the user lines and tool results were kept, so
    # the prompt and the tool result were in the context twice (and a strict read failed on
    # the copied result's call).
    more = _resumed_turn()
    session = load(_resumed_under_new_uuids(tmp_path, more, retimed), strict=True)
    assert [r.request_id for r in session.requests()] == ["req_1", "req_2", "req_9"]
    texts = [e.text for e in session.events if isinstance(e, UserMessage)]
    assert texts == ["List the files, please.", "And hidden files?"]
    assert len([e for e in session.events if isinstance(e, ToolResult)]) == 1
    assert not any(e.thread != "main" for e in session.events)


def test_transcripts_are_read_oldest_first_whatever_their_names(tmp_path: Path) -> None:
    # The resumed file sorts first by name: read first, its retimed copies would stand for
    # the lines they copy (and the original's root prompt would not be matched as a copy).
    folder = _resumed_under_new_uuids(tmp_path, _resumed_turn(), retimed=True)
    (folder / "s-1.jsonl").rename(folder / "z-started-first.jsonl")
    session = load(folder, strict=True)
    assert [r.request_id for r in session.requests()] == ["req_1", "req_2", "req_9"]
    texts = [e.text for e in session.events if isinstance(e, UserMessage)]
    assert texts == ["List the files, please.", "And hidden files?"]
    first = session.requests()[0]
    assert first.ts.strftime("%H:%M") == "10:00"  # the original's time, not the copy's
    assert session.path == str(folder)


def test_a_preserved_segment_naming_copies_names_their_originals(tmp_path: Path) -> None:
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "cb",
        "parentUuid": None,
        "logicalParentUuid": "a3",
        "timestamp": "2026-01-02T10:01:00Z",
        "compactMetadata": {
            "trigger": "manual",
            "preservedSegment": {"headUuid": "new-u2", "tailUuid": "new-a3"},
            "preservedMessages": {"uuids": ["new-u1"]},
        },
    }
    session = load(_resumed_under_new_uuids(tmp_path, [boundary]), strict=True)
    c = next(e for e in session.events if isinstance(e, Compaction))
    kept = [
        e
        for e in session.events
        if e.id not in c.replaces and isinstance(e, UserMessage | AssistantMessage | ToolResult)
    ]
    assert [type(e).__name__ for e in kept] == ["UserMessage", "ToolResult", "AssistantMessage"]


def test_rewound_branch_is_replayed_as_its_own_thread(tmp_path: Path) -> None:
    lines = claude_lines()
    # The user rewound to the first prompt's answer and asked something else.
    lines += [
        _user("b1", "u2", "20.000", "Actually, count them."),
        _assistant(
            "b2",
            "b1",
            "21.000",
            "msg_X",
            "req_x",
            {"type": "text", "text": "Two."},
            _usage(3, 20, 3000, 2),
        ),
    ]
    # The main path continues from the original answer and ends last in the file.
    lines += [
        _user("m1", "a3", "30.000", "Thanks."),
        _assistant(
            "m2",
            "m1",
            "31.000",
            "msg_Y",
            "req_y",
            {"type": "text", "text": "Welcome."},
            _usage(3, 20, 3050, 2),
        ),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    start = next(e for e in session.events if isinstance(e, ThreadStart))
    assert start.thread_id == "main/branch-1"
    branch = [e for e in session.events if e.thread == start.thread_id]
    copies = [e for e in branch if getattr(e, "copied_from", None)]
    assert [type(e).__name__ for e in copies] == ["UserMessage", "AssistantMessage", "ToolResult"]
    assert all(
        getattr(e, "request_id", None) is None for e in copies if isinstance(e, AssistantMessage)
    )
    assert sorted(r.request_id for r in session.requests()) == ["req_1", "req_2", "req_x", "req_y"]
    assert [r.thread for r in session.requests() if r.request_id == "req_x"] == ["main/branch-1"]


def test_an_abandoned_branch_that_only_got_an_api_error_is_no_thread(tmp_path: Path) -> None:
    """A prompt answered only by a locally written error (`<synthetic>`), then rewound and
    edited: nothing was billed on that branch, so it is not replayed."""
    lines = claude_lines()
    lines += [
        _user("b1", "u2", "20.000", "Actually, count them."),
        _assistant("b2", "b1", "21.000", "msg_syn", "req_syn",
                   {"type": "text", "text": "API Error: 529"}, _usage(0, 0, 0, 0),
                   model="<synthetic>"),
        _user("m1", "a3", "30.000", "Thanks."),
        _assistant("m2", "m1", "31.000", "msg_Y", "req_y", {"type": "text", "text": "Welcome."},
                   _usage(3, 20, 3050, 2)),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert {e.thread for e in session.events} == {"main"}
    assert not any(isinstance(e, ThreadStart) for e in session.events)
    assert sorted(r.request_id for r in session.requests()) == ["req_1", "req_2", "req_y"]
    texts = [e.text for e in session.events if isinstance(e, UserMessage)]
    assert "Actually, count them." not in texts


def test_a_server_tool_call_waits_for_no_tool_result(tmp_path: Path) -> None:
    """`server_tool_use` (web search) runs at Anthropic: its result is a block of the same
    response, no `tool_result` line follows, and nothing is repaired before the next request."""
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
              "input": {"query": "replay"}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
             "content": [{"type": "web_search_result", "url": "https://x.test", "title": "X"}]}
    lines = [
        _user("u1", None, "00.000", "Search for replay."),
        _assistant("a1", "u1", "01.000", "msg_1", "req_1", search, _usage(3, 100, 1000, 20)),
        _assistant("a2", "a1", "02.000", "msg_1", "req_1", found, _usage(3, 100, 1000, 20)),
        _assistant("a3", "a2", "03.000", "msg_1", "req_1", {"type": "text", "text": "Found X."},
                   _usage(3, 100, 1000, 20)),
        _user("u2", "a3", "04.000", "Thanks."),
        _assistant("a4", "u2", "05.000", "msg_2", "req_2", {"type": "text", "text": "Welcome."},
                   _usage(4, 20, 1100, 3)),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert session.skipped == []
    assert not any(isinstance(e, ToolResult) for e in session.events)
    (call,) = [b for e in session.events if isinstance(e, AssistantMessage) for b in e.blocks
               if isinstance(b, ToolCallBlock)]
    assert (call.name, call.server_side) == ("web_search", True)
    assert unpaired_before_request(session) == []
    assert [r.request_id for r in session.requests()] == ["req_1", "req_2"]


def _rewound_after_unlogged_context(usages: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """A read whose answer the user rewound: `req_x` (the abandoned branch) and `req_y` (the
    path kept) both answer a new prompt after `req_2`'s answer."""
    words = " ".join(f"w{n % 97}" for n in range(6000))
    read = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/w/a"}}
    return [
        _user("u1", None, "01.000", "Read /w/a and tell me which word is most common."),
        _assistant("a1", "u1", "02.000", "msg_1", "req_1", read, usages["req_1"]),
        _user("r1", "a1", "03.000",
              [{"type": "tool_result", "tool_use_id": "toolu_1", "content": words}]),
        _assistant("a2", "r1", "04.000", "msg_2", "req_2",
                   {"type": "text", "text": "They are about equally common."}, usages["req_2"]),
        _user("b1", "a2", "05.000", "Give me the top three then."),
        _assistant("b2", "b1", "06.000", "msg_x", "req_x",
                   {"type": "text", "text": "w1, w2, w3."}, usages["req_x"]),
        _user("m1", "a2", "07.000", "Which one is the least common?"),
        _assistant("m2", "m1", "08.000", "msg_y", "req_y",
                   {"type": "text", "text": "w96."}, usages["req_y"]),
    ]


def test_a_rewound_branch_reads_what_its_parent_cached_unlogged_context_included(
    tmp_path: Path,
) -> None:
    """The branch re-sends its parent's history up to the fork, the context the log does not
    hold included (here 40 tokens injected at `req_2`): it has the parent's hidden prefix and
    its unlogged messages, and reads the parent's cache (it was simulated as a cold write of
    the whole history: the branch measured its own hidden prefix, unlogged context included,
    and lacked the parent's estimated message)."""
    from replay.adapters._common import prompt_residuals
    from replay.fidelity import fidelity_rows

    blank = {r: _usage(3, 100, 0, 5) for r in ("req_1", "req_2", "req_x", "req_y")}
    blank["req_1"] = _usage(3, 6000, 0, 20)
    sizes = {r.request_id: r.simulated for r in
             prompt_residuals(load(_write(tmp_path, _rewound_after_unlogged_context(blank))))}
    prompt_2 = sizes["req_2"] + 40
    usages = {
        "req_1": blank["req_1"],
        "req_2": _usage(3, prompt_2 - 6003, 6000, 10),
        # Both later prompts hold the 40 tokens of req_2 and 25 injected with their own prompt.
        "req_x": _usage(3, sizes["req_x"] + 65 - (prompt_2 - 3) - 3, prompt_2 - 3, 8),
        "req_y": _usage(3, sizes["req_y"] + 65 - (prompt_2 - 3) - 3, prompt_2 - 3, 4),
    }
    session = load(_write(tmp_path, _rewound_after_unlogged_context(usages)), strict=True)
    start = next(e for e in session.events if isinstance(e, ThreadStart))
    assert start.hidden_prefix_tokens == session.header.hidden_prefix_tokens
    rows = {r.request_id: r for r in fidelity_rows(session)}
    assert rows["req_x"].thread == start.thread_id
    for request in ("req_x", "req_y"):
        row = rows[request]
        assert abs(row.simulated_cache_read - row.recorded_cache_read) <= 128, row
        assert row.simulated_cost_usd == pytest.approx(row.recorded_cost_usd, rel=Decimal("0.01"))


def _attached(*attachments: dict[str, Any]) -> list[dict[str, Any]]:
    """`claude_lines()` with one attachment record for each of `attachments` after the first
    prompt (`u1`): `at1`, `at2`, … each the parent of the next, and of the line after them."""
    lines = claude_lines()
    parent = "u1"
    for n, attachment in enumerate(attachments, start=1):
        lines.insert(1 + n, {
            "type": "attachment", "uuid": f"at{n}", "parentUuid": parent, "sessionId": "s-1",
            "timestamp": f"2026-01-02T10:00:00.{4 + n}00Z", "attachment": attachment,
        })
        parent = f"at{n}"
    lines[2 + len(attachments)]["parentUuid"] = parent
    return lines


def test_attachments_become_injected_text(tmp_path: Path) -> None:
    lines = _attached(
        {"type": "queued_command", "prompt": "also count them", "commandMode": "prompt"},
        {"type": "task_reminder", "content": [], "itemCount": 0},
    )
    session = load(_write(tmp_path, lines), strict=True)
    users = [e for e in session.events if isinstance(e, UserMessage)]
    assert [u.text for u in users] == ["List the files, please.", "also count them"]
    assert users[1].estimated_text is True and users[1].injected is False


def test_a_todo_attachment_is_injected_as_its_list_and_an_empty_one_is_ignored(
    tmp_path: Path,
) -> None:
    todos = [{"content": "Count the files", "status": "in_progress"}]
    lines = _attached(*({"type": "todo", "content": content, "itemCount": len(content)}
                        for content in (todos, [])))
    session = load(_write(tmp_path, lines), strict=True)
    (todo,) = [e for e in session.events if isinstance(e, UserMessage) and e.injected]
    assert json.loads(todo.text) == todos
    assert todo.estimated_text is True and todo.attachment == "todo"
    assert session.header.ignored_records["attachment/todo"] == 1


@pytest.mark.parametrize(
    ("attachment", "expected"),
    [
        ({"type": "agent_listing_delta", "addedLines": "Explore"}, "`addedLines` to be a list"),
        ({"type": "deferred_tools_delta", "addedNames": "WebFetch"}, "`addedNames` to be a list"),
        ({"type": "file", "content": {"file": "a.py"}}, "`file` to be an object"),
    ],
)
def test_an_attachment_with_a_wrong_typed_field_is_reported_at_its_line(
    tmp_path: Path, attachment: dict[str, Any], expected: str
) -> None:
    # docs/adapters.md (Bad input): a record with a wrong-typed field is one LogFormatError
    # naming file:line and what was expected. A string listing was rendered one character a
    # line; a string `content.file` failed on an AttributeError.
    path = _write(tmp_path, _attached(attachment))
    session = load(path)
    assert [str(e) for e in session.skipped] == [f"{path}:3: expected {expected}, got str"]
    assert [e.text for e in session.events if isinstance(e, UserMessage)] == [
        "List the files, please."
    ]
    with pytest.raises(LogFormatError, match=re.escape(f"s-1.jsonl:3: expected {expected}")):
        load(path, strict=True)


def test_tool_result_list_content_with_images(tmp_path: Path) -> None:
    lines = claude_lines()
    lines[5]["message"]["content"][0]["content"] = [
        {"type": "text", "text": "shot:"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
    ]
    lines[5]["message"]["content"][0]["is_error"] = True
    session = load(_write(tmp_path, lines), strict=True)
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert result.output.startswith("shot:\n[image image/png 4 base64 chars]")
    assert result.is_error and result.estimated_text is True


def test_two_calls_sharing_a_message_id_under_two_request_ids_are_two_requests(
    tmp_path: Path,
) -> None:
    # formats.md §1: one API call = the lines sharing `requestId` + `message.id`. Grouped by
    # the message id alone, the second call's usage was lost and its text merged into the first.
    lines = [
        _user("u1", None, "00.000", "hello"),
        _assistant(
            "a1", "u1", "02.000", "msg_X", "req_1", {"type": "text", "text": "first answer"},
            _usage(3, 5000, 0, 40),
        ),
        _user("u2", "a1", "03.000", "again"),
        _assistant(
            "a2", "u2", "05.000", "msg_X", "req_2", {"type": "text", "text": "second answer"},
            _usage(3, 60, 5000, 10),
        ),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert [(r.request_id, r.usage.cache_read_tokens) for r in session.requests()] == [
        ("req_1", 0),
        ("req_2", 5000),
    ]
    kinds = [
        (type(e).__name__, e.text if isinstance(e, UserMessage) else None)
        for e in session.events
        if not isinstance(e, RequestMarker)
    ]
    assert kinds == [
        ("UserMessage", "hello"),
        ("AssistantMessage", None),
        ("UserMessage", "again"),
        ("AssistantMessage", None),
    ]
    answers = [e for e in session.events if isinstance(e, AssistantMessage)]
    assert [[b.text for b in a.blocks] for a in answers] == [["first answer"], ["second answer"]]


def test_a_sidechain_replay_of_a_parent_response_is_context_not_a_request(
    tmp_path: Path,
) -> None:
    # ccusage #913 (formats.md §1): a sidechain may repeat a parent's response, its message id
    # and usage, under another requestId. Keyed by (requestId, message.id), the copy was a
    # second request billing the parent's cache reads again.
    lines = _sidechain_log()
    think = {"type": "thinking", "thinking": "", "signature": "sig1"}
    text = {"type": "text", "text": "Delegating."}
    usage = _usage(3, 500, 0, 200)
    lines[1:1] = [
        _assistant("a0", "u1", "00.800", "msg_1", "req_1", think, usage),
        _assistant("a0b", "a0", "00.900", "msg_1", "req_1", text, usage),
    ]
    lines[3]["parentUuid"] = "a0b"
    lines[5:5] = [
        _assistant("c1", "s1", "01.200", "msg_1", "req_copy", think, usage, isSidechain=True),
        _assistant("c2", "c1", "01.300", "msg_1", "req_copy", text, usage, isSidechain=True),
    ]
    lines[7]["parentUuid"] = "c2"
    session = load(_write(tmp_path, lines), strict=True)
    assert [r.request_id for r in session.requests()] == ["req_1", "req_s", "req_2"]
    start = next(e for e in session.events if isinstance(e, ThreadStart))
    side = [e for e in session.events if e.thread == start.thread_id]
    kinds = ["UserMessage", "AssistantMessage", "RequestMarker", "AssistantMessage"]
    assert [type(e).__name__ for e in side] == kinds
    replayed, original = side[1], next(e for e in session.events if isinstance(e, AssistantMessage))
    assert replayed.request_id is None and replayed.blocks[1].text == "Delegating."
    assert getattr(replayed, "copied_from", None) == original.id
    # No usage of its own: the thinking is sized as in the response it copies.
    sized = original.blocks[0].estimated_tokens
    assert sized and replayed.blocks[0].estimated_tokens == sized


def test_a_repeated_message_id_with_a_block_of_its_own_is_a_request(tmp_path: Path) -> None:
    # The evidence that keeps a repeated message id a request: a block the first response
    # with that id does not hold.
    lines = _sidechain_log()
    other = {"type": "text", "text": "Something else."}
    repeat = _assistant(
        "c1", "s1", "01.200", "msg_1", "req_other", other, _usage(3, 400, 0, 9), isSidechain=True
    )
    lines.insert(3, repeat)
    lines[4]["parentUuid"] = "c1"
    session = load(_write(tmp_path, lines), strict=True)
    assert [r.request_id for r in session.requests()] == ["req_1", "req_other", "req_s", "req_2"]


def test_system_records_other_than_compact_boundary_are_counted_as_ignored(
    tmp_path: Path,
) -> None:
    # formats.md §1: system subtypes are not sent to the model; they were dropped without a
    # trace. Counted like progress lines; the chain still runs through them.
    lines = claude_lines()
    system = {**lines[4], "type": "system", "uuid": "sy1", "parentUuid": "a2"}
    del system["data"]
    lines[4] = {**system, "subtype": "microcompact_boundary"}
    lines[5]["parentUuid"] = "sy1"
    lines.append({**system, "uuid": "sy2", "parentUuid": "a3", "subtype": "turn_duration"})
    lines.append({**system, "uuid": "sy3", "parentUuid": "sy2", "subtype": "turn_duration"})
    session = load(_write(tmp_path, lines), strict=True)
    assert session.header.ignored_records == {
        "file-history-snapshot": 1,
        "system/microcompact_boundary": 1,
        "system/turn_duration": 2,
    }
    assert len(session.requests()) == 2
    assert [type(e).__name__ for e in session.events][-1] == "AssistantMessage"


def test_a_microcompact_is_noted_with_the_prompt_drop_not_guessed(
    tmp_path: Path, invoke: Any
) -> None:
    # A `microcompact_boundary` clears old tool results; no dev sample has one, and nothing
    # documented in the record names them, so they are not guessed: the request after it is
    # marked and the output says so, with how far the prompt fell from the request before.
    lines = claude_lines()
    boundary = {
        **lines[5],
        "type": "system",
        "subtype": "microcompact_boundary",
        "uuid": "mc",
        "parentUuid": "u2",
        "content": "Context microcompacted",
    }
    del boundary["message"]
    lines.insert(6, boundary)
    lines[7]["parentUuid"] = "mc"
    # 3010 + 60 tokens in and out of the first request; 2 + 40 + 1000 read by the second.
    lines[7]["message"]["usage"] = {**lines[7]["message"]["usage"], "cache_read_input_tokens": 1000}
    session = load(_write(tmp_path, lines), strict=True)
    assert session.header.ignored_records["system/microcompact_boundary"] == 1
    marked = [getattr(r, "after_microcompact", False) for r in session.requests()]
    assert marked == [False, True]
    expected = (
        "Microcompact at request #1 (req_2): Claude Code cleared ~2,028 tokens of tool results "
        "the log does not identify"
    )
    notes = replay(session, ["recorded"]).notes
    assert any(n.startswith(expected) for n in notes), notes
    result = invoke("fidelity", session.path, "--format", "json")
    assert result.exit_code == 0, result.output
    assert any(n.startswith(expected) for n in json.loads(result.stdout)["notes"])


def test_a_microcompact_before_a_thread_s_first_request_is_noted_without_a_size(
    tmp_path: Path,
) -> None:
    lines = claude_lines()
    boundary = {**lines[1], "type": "system", "subtype": "microcompact_boundary", "uuid": "mc"}
    del boundary["message"]
    lines.insert(2, {**boundary, "parentUuid": "u1"})
    lines[3]["parentUuid"] = "mc"
    session = load(_write(tmp_path, lines), strict=True)
    assert replay_api.microcompact_notes(session) == [
        "Microcompact at request #0 (req_1): Claude Code cleared tool results the log does not "
        "identify (of a size the prompts do not show); the replay still sends them, so its "
        "prompts from there on are larger than the logged ones."
    ]


def test_fast_mode_and_inference_geo_are_priced_and_kept_in_the_converted_log(
    tmp_path: Path,
) -> None:
    # docs/cache-rules.md: the logs carry `usage.speed` (priced: the fast variant's rates) and
    # `usage.inference_geo` (priced: "us" is x1.1 on Claude 4.6+).
    from replay.log import read_log, write_log

    lines = claude_lines()
    for line in lines[2:4]:
        line["message"]["usage"] = {
            **line["message"]["usage"], "speed": "fast", "inference_geo": "us"
        }
    out = tmp_path / "native.jsonl"
    write_log(load(_write(tmp_path, lines), strict=True), out)
    first = read_log(out, strict=True).requests()[0]
    assert (first.usage.raw["speed"], first.usage.raw["inference_geo"]) == ("fast", "us")
    assert first.price_context == {"speed": "fast", "inference_geo": "us"}
    # Every strategy's request for a fast US-only call is priced at the fast rates x 1.1.
    session = load(_write(tmp_path, lines), strict=True)
    for marker in session.requests():
        marker.model = "claude-opus-4-8"  # a model genai-prices has fast prices for
    both = replay(session, ["recorded"]).records
    for marker in session.requests():
        marker.price_context = {"speed": "fast"}
    fast = replay(session, ["recorded"]).records
    for marker in session.requests():
        marker.price_context = None
    standard = replay(session, ["recorded"]).records
    assert both[0].price_context == {"speed": "fast", "inference_geo": "us"}
    assert fast[0].cost_usd > standard[0].cost_usd
    assert both[0].cost_usd == fast[0].cost_usd * Decimal("1.1")


@pytest.mark.parametrize("geo", ["", "not_available", "global"])
def test_an_inference_geo_that_is_not_a_region_is_the_standard_price(
    tmp_path: Path, geo: str
) -> None:
    """Claude Code logs `inference_geo: ""` or `"not_available"`; `"global"` is the default
    routing: none of them is a price variant."""
    lines = claude_lines()
    for line in lines[2:4]:
        line["message"]["usage"] = {**line["message"]["usage"], "inference_geo": geo}
    session = load(_write(tmp_path, lines), strict=True)
    assert session.requests()[0].usage.raw["inference_geo"] == geo
    assert session.requests()[0].price_context is None


def test_base64_documents_are_a_placeholder_labelled_estimated(tmp_path: Path) -> None:
    # Quirk: a Read of a PDF logs the file as a base64 `document` block; counted as text it came
    # to 32k tokens for a 30 KB file. Like an image, it becomes a placeholder, labelled estimated.
    pdf = "JVBERi0xLjQK" + "A" * 40_000
    doc = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf"}}
    doc["source"]["data"] = pdf
    lines = claude_lines()
    lines[5]["message"]["content"][0]["content"] = [{"type": "text", "text": "read:"}, doc]
    lines[1]["message"]["content"] = [{"type": "text", "text": "See this:"}, doc]
    session = load(_write(tmp_path, lines), strict=True)
    result = next(e for e in session.events if isinstance(e, ToolResult))
    placeholder = f"[document application/pdf {len(pdf)} base64 chars]"
    assert result.output == "read:\n" + placeholder
    assert result.estimated_text is True
    user = next(e for e in session.events if isinstance(e, UserMessage))
    assert user.text == "See this:\n" + placeholder and user.estimated_text is True


def test_wrong_typed_fields_are_reported_not_raised(tmp_path: Path) -> None:
    lines = claude_lines()
    lines[2]["message"]["content"] = "not a list"
    lines[3]["timestamp"] = 12
    path = _write(tmp_path, lines)
    session = load(path)
    # Line 6 is the result of the call on the skipped line 4: reported as unpaired.
    assert sorted(e.line for e in session.skipped) == [3, 4, 6]
    with pytest.raises(LogFormatError, match=r":3: "):
        claude_code.read(path, strict=True)


# --------------------------------------------------------------------------------------------------
# Real samples (formats.md §5)

CLAUDE = SAMPLES / "claude_code"


def _sample(prefix: str) -> Path:
    found = sorted(CLAUDE.glob(f"{prefix}*full.jsonl")) + sorted(CLAUDE.glob(f"{prefix}*.jsonl"))
    assert found, f"sample {prefix}* missing"
    return found[0]


def _metadata(path: Path) -> dict[str, Any] | None:
    meta = path.with_name(path.name.replace("_full.jsonl", "_metadata.json"))
    return json.loads(meta.read_text()) if meta.exists() and meta != path else None


SAMPLE_TABLE = [
    # prefix, requests (requestId+message.id incl. sidechains), usage totals (in, write, read, out)
    (
        "d-kimuson__claude-code-viewer__mock-global-claude-dir_projects_sample-project_fe5e1c67",
        170,
        (818, 137976, 3647854, 51933),
        5,
        0,
    ),
    (
        "d-kimuson__claude-code-viewer__mock-global-claude-dir_projects_sample-project_5c0375b4",
        20,
        (129, 47747, 324259, 3629),
        2,
        0,
    ),
    ("ShamsiievDmytro__entire-bmad", 115, (3978, 240201, 10340941, 68134), 0, 1),
    (
        "blackgirlbytes__entire-token-costs-benchmark-tests",
        51,
        (7435, 155664, 5432829, 66348),
        0,
        0,
    ),
    ("blackgirlbytes__planetfall-seed-signalkit", 47, (5879, 99604, 3846087, 45373), 0, 0),
]


@needs_samples
@pytest.mark.parametrize(("prefix", "count", "totals", "threads", "compactions"), SAMPLE_TABLE)
def test_real_sample(
    prefix: str, count: int, totals: tuple, threads: int, compactions: int
) -> None:
    path = _sample(prefix)
    session = load(path, strict=True)
    assert session.header.agent == "claude-code"
    requests = session.requests()
    assert len(requests) == count
    got = (
        sum(r.usage.input_tokens for r in requests),
        sum(r.usage.cache_write_5m_tokens + r.usage.cache_write_1h_tokens for r in requests),
        sum(r.usage.cache_read_tokens for r in requests),
        sum(r.usage.output_tokens for r in requests),
    )
    assert got == totals
    meta = _metadata(path)
    if meta and meta["token_usage"]["api_call_count"]:
        t = meta["token_usage"]
        assert len(requests) == t["api_call_count"]
        assert got == (
            t["input_tokens"],
            t["cache_creation_tokens"],
            t["cache_read_tokens"],
            t["output_tokens"],
        )
    starts = [e for e in session.events if isinstance(e, ThreadStart)]
    assert len(starts) == threads
    assert all(s.parent_call_id for s in starts)  # every sidechain found its Task call
    assert sum(isinstance(e, Compaction) for e in session.events) == compactions
    assert unpaired_before_request(session) == []
    calls = {
        b.id
        for e in session.events
        if isinstance(e, AssistantMessage)
        for b in e.blocks
        if isinstance(b, ToolCallBlock)
    }
    results = {e.call_id for e in session.events if isinstance(e, ToolResult)}
    assert results <= calls
    assert session.header.hidden_prefix_tokens > 1000
    assert {"system", "tools", "hidden_prefix"} <= set(session.header.estimated)
    assert all(isinstance(r, RequestMarker) and r.usage.raw for r in requests)


@needs_samples
def test_real_compaction_drops_the_read_to_the_stable_prefix() -> None:
    session = load(_sample("ShamsiievDmytro__entire-bmad"))
    c = next(e for e in session.events if isinstance(e, Compaction))
    assert c.tokens_before == 167753 and c.trigger == "auto"
    assert c.summary.startswith("This session is being continued")
    after = [r for r in session.requests() if session.events.index(r) > session.events.index(c)]
    assert after[0].usage.cache_read_tokens < 20000  # system + tools only (formats.md: ~14.9k)
    replaced = set(c.replaces)
    assert all(
        e.id in replaced
        for e in session.events[: session.events.index(c)]
        if isinstance(e, UserMessage | AssistantMessage | ToolResult)
    )


@needs_samples
def test_real_thinking_blocks_are_estimated() -> None:
    session = load(_sample("blackgirlbytes__entire-token-costs-benchmark-tests"))
    thinking = [
        b
        for e in session.events
        if isinstance(e, AssistantMessage)
        for b in e.blocks
        if isinstance(b, ThinkingBlock)
    ]
    assert len(thinking) == 39
    assert all(b.thinking == "" and b.estimated_tokens is not None for b in thinking)
    assert sum(b.estimated_tokens for b in thinking) > 1000


def test_redacted_uuids_and_message_ids(tmp_path: Path) -> None:
    lines = claude_lines()
    for line in lines[1:]:
        line["uuid"] = "REDACTED"
        line["parentUuid"] = None if line["parentUuid"] is None else "REDACTED"
        if line["type"] == "assistant":
            line["message"]["id"] = "REDACTED"
            line["requestId"] = "REDACTED"
    session = load(_write(tmp_path, lines), strict=True)
    requests = session.requests()
    assert len(requests) == 2
    first = next(e for e in session.events if isinstance(e, AssistantMessage))
    assert [b.type for b in first.blocks] == ["thinking", "tool_call"]  # one response, 2 lines
    assert len({r.request_id for r in requests}) == 2


def test_a_redacted_response_goes_on_past_the_tool_results_run_while_it_streamed(
    tmp_path: Path,
) -> None:
    """Ids redacted, a response whose second tool call hangs off the first one's result (the
    tool ran while the response streamed) is one request billed once; the request after the
    results, billed another prompt, is the next one (the first was counted twice)."""
    def tool(n: int) -> dict[str, Any]:
        return {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": "ls"}}

    def result(uuid: str, parent: str, ts: str, n: int) -> dict[str, Any]:
        return _user(uuid, parent, ts, [{"type": "tool_result", "tool_use_id": f"toolu_{n}",
                                         "content": f"file{n}.py"}])

    first, second = _usage(3, 600, 1400, 40), _usage(3, 70, 2000, 9)
    lines = [
        _user("u1", None, "01.000", "List the files twice."),
        _assistant("a1", "u1", "02.000", "REDACTED", "REDACTED", tool(1), first),
        _line("p1", "a1", "02.500", "progress", data={"type": "bash_progress"}),
        result("r1", "a1", "03.000", 1),
        _assistant("a2", "r1", "04.000", "REDACTED", "REDACTED", tool(2), first),
        result("r2", "a2", "05.000", 2),
        _assistant("a3", "r2", "06.000", "REDACTED", "REDACTED",
                   {"type": "text", "text": "Done."}, second),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert len(session.requests()) == 2
    answer = next(e for e in session.events if isinstance(e, AssistantMessage))
    assert [b.type for b in answer.blocks] == ["tool_call", "tool_call"]


def test_a_redacted_result_answers_the_call_still_waiting_not_one_a_request_passed(
    tmp_path: Path,
) -> None:
    # Redacted tool_use ids, the first call never answered: the second request sent a
    # placeholder for it, so the result after the second call answers that call (paired by
    # order with the oldest call still waiting), and is not dropped as the first one's.
    def tool(name: str) -> dict[str, Any]:
        return {"type": "tool_use", "id": "REDACTED", "name": name, "input": {"path": "a"}}

    lines = [
        _user("u1", None, "01.000", "Read a."),
        _assistant("a1", "u1", "02.000", "msg_1", "req_1", tool("Bash"), _usage(3, 600, 0, 9)),
        _assistant("a2", "a1", "04.000", "msg_2", "req_2", tool("Read"), _usage(3, 30, 600, 9)),
        _user("r2", "a2", "05.000", [{"type": "tool_result", "tool_use_id": "REDACTED",
                                      "content": "alpha"}]),
        _assistant("a3", "r2", "06.000", "msg_3", "req_3", {"type": "text", "text": "Done."},
                   _usage(3, 20, 630, 2)),
    ]
    session = load(_write(tmp_path, lines))
    calls = [b for e in session.events if isinstance(e, AssistantMessage)
             for b in e.blocks if isinstance(b, ToolCallBlock)]
    results = [(e.call_id, e.tool_name, e.output, e.synthetic) for e in session.events
               if isinstance(e, ToolResult)]
    assert results == [(calls[0].id, "Bash", "", "missing tool result"),
                       (calls[1].id, "Read", "alpha", None)]
    assert len(session.skipped) == 1 and "a placeholder error result" in str(session.skipped[0])
    assert unpaired_before_request(session) == []


def test_a_redacted_result_skips_a_call_a_request_went_without(tmp_path: Path) -> None:
    # Paired by order, a REDACTED result answers the oldest call still waiting: not `toolu_x`,
    # which the second request went without (its placeholder answers it), but `toolu_y`.
    def tool(cid: str, name: str) -> dict[str, Any]:
        return {"type": "tool_use", "id": cid, "name": name, "input": {"path": "a"}}

    lines = [
        _user("u1", None, "01.000", "Read a."),
        _assistant("a1", "u1", "02.000", "msg_1", "req_1", tool("toolu_x", "Bash"),
                   _usage(3, 600, 0, 9)),
        _assistant("a2", "a1", "04.000", "msg_2", "req_2", tool("toolu_y", "Read"),
                   _usage(3, 30, 600, 9)),
        _user("r2", "a2", "05.000", [{"type": "tool_result", "tool_use_id": "REDACTED",
                                      "content": "alpha"}]),
        _assistant("a3", "r2", "06.000", "msg_3", "req_3", {"type": "text", "text": "Done."},
                   _usage(3, 20, 630, 2)),
    ]
    session = load(_write(tmp_path, lines))
    results = [(e.call_id, e.output, e.synthetic) for e in session.events
               if isinstance(e, ToolResult)]
    assert results == [("toolu_x", "", "missing tool result"), ("toolu_y", "alpha", None)]
    assert len(session.skipped) == 1 and "'toolu_x' (Bash)" in str(session.skipped[0])


# --------------------------------------------------------------------------------------------------
# A directory: one session (with its resumed and subagent files), never several


def _other_session(session_id: str, tag: str) -> list[dict[str, Any]]:
    """`claude_lines()` as another, unrelated session: its own ids everywhere."""
    text = json.dumps(claude_lines())
    for old in ('"u1"', '"u2"', '"a1"', '"a2"', '"a3"', '"p1"', "msg_A", "msg_B", "req_1",
                "req_2", "toolu_1"):
        text = text.replace(old, old.replace(old.strip('"'), f"{old.strip(chr(34))}{tag}"))
    text = text.replace('"s-1"', json.dumps(session_id))
    return json.loads(text)


def test_directory_of_unrelated_sessions_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, claude_lines(), "s-1.jsonl")
    _write(tmp_path, _other_session("s-2", "x"), "s-2.jsonl")
    _write(tmp_path, _other_session("s-3", "y"), "s-3.jsonl")
    for strict in (False, True):
        with pytest.raises(LogFormatError) as err:
            load(tmp_path, strict=strict)
        message = str(err.value)
        assert message.startswith(f"{tmp_path}: expected one Claude Code session")
        assert "holds 3 unrelated sessions: s-1.jsonl, s-2.jsonl, s-3.jsonl" in message
        assert f"replay batch {tmp_path}" in message and "give one transcript file" in message
    # Each file alone is fine.
    assert len(load(tmp_path / "s-2.jsonl", strict=True).requests()) == 2


def test_cli_refuses_a_directory_of_sessions_with_exit_2(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from replay.cli._main import cli, load_commands

    load_commands()
    project = tmp_path / "project"
    project.mkdir()
    _write(project, claude_lines(), "s-1.jsonl")
    _write(project, _other_session("s-2", "x"), "s-2.jsonl")
    for command in (["run", str(project), "-s", "baseline"],
                    ["convert", str(project), "-o", str(tmp_path / "out.jsonl")]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"error: {project}: expected one Claude Code session")
        assert "2 unrelated sessions" in result.stderr


def test_continuation_file_linked_by_parent_uuid_is_one_session(tmp_path: Path) -> None:
    # A later file (another sessionId, nothing copied) whose first record continues the chain.
    later = _other_session("s-2", "z")
    later[1]["parentUuid"] = "a3"
    later[1]["timestamp"] = later[1]["timestamp"].replace("10:00:00", "10:05:00")
    _write(tmp_path, claude_lines(), "s-1.jsonl")
    _write(tmp_path, later, "s-2.jsonl")
    session = load(tmp_path, strict=True)
    assert [r.request_id for r in session.requests()] == ["req_1", "req_2", "req_1z", "req_2z"]


def test_top_level_agent_file_linked_by_agent_id_is_one_session(tmp_path: Path) -> None:
    # 2.0.x layout: `<project>/agent-<id>.jsonl` beside the transcript, tied to it by
    # `toolUseResult.agentId` only (its records carry another sessionId here).
    main = claude_lines()
    main[5]["toolUseResult"] = {"agentId": "abc"}
    sub = _other_session("s-9", "q")
    for line in sub:
        line["isSidechain"], line["agentId"] = True, "abc"
    _write(tmp_path, main, "s-1.jsonl")
    _write(tmp_path, sub, "agent-abc.jsonl")
    session = load(tmp_path, strict=True)
    assert {r.thread for r in session.requests()} == {"main", "agent-abc"}


def test_a_transcript_file_reads_the_top_level_agent_files_of_its_session(
    tmp_path: Path,
) -> None:
    # 2.0.x layout: `<project>/agent-<id>.jsonl` beside the transcript. Given the transcript,
    # its session's agent files are read as a directory read ties them (the same sessionId, or
    # a `toolUseResult.agentId` naming the agent); another session's agent file is not.
    main = claude_lines()
    main[5]["toolUseResult"] = {"agentId": "abc"}
    by_call = _other_session("s-9", "q")  # another sessionId: tied by the agentId only
    for line in by_call:
        line["isSidechain"], line["agentId"] = True, "abc"
    by_session = _other_session("s-1", "w")  # the transcript's sessionId (e.g. a warmup agent)
    for line in by_session:
        line["isSidechain"], line["agentId"] = True, "def"
    stranger = _other_session("s-7", "k")
    for line in stranger:
        line["isSidechain"], line["agentId"] = True, "zzz"
    _write(tmp_path, main, "s-1.jsonl")
    _write(tmp_path, by_call, "agent-abc.jsonl")
    _write(tmp_path, by_session, "agent-def.jsonl")
    _write(tmp_path, stranger, "agent-zzz.jsonl")
    session = load(tmp_path / "s-1.jsonl", strict=True)
    threads = {r.thread for r in session.requests()}
    assert threads == {"main", "agent-abc", "agent-def"}
    starts = {e.thread_id: e for e in session.events if isinstance(e, ThreadStart)}
    assert starts["agent-abc"].parent_call_id == "toolu_1"
    # The directory read (without the stranger, which it would refuse) agrees.
    (tmp_path / "agent-zzz.jsonl").unlink()
    as_dir = load(tmp_path, strict=True)
    assert sorted((r.thread, r.request_id) for r in as_dir.requests()) == sorted(
        (r.thread, r.request_id) for r in session.requests()
    )


@needs_samples
def test_sample_directory_holds_five_sessions() -> None:
    with pytest.raises(LogFormatError, match="holds 5 unrelated sessions"):
        load(SAMPLES / "claude_code")


@pytest.mark.parametrize(
    "block",
    [
        {"type": "text", "text": "Done: two files."},
        {"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {"command": "ls"}},
    ],
)
def test_a_response_line_written_twice_under_a_new_uuid_is_read_once(tmp_path, block) -> None:
    """The same streamed line again (same message.id and requestId, same content, a new uuid)
    is one record: its block is not sent twice (a tool call twice got a made-up second call
    and a placeholder result), and the duplicate is reported."""
    usage = _usage(3, 500, 0, 20)
    lines = [
        _user("u1", None, "00.000", "List the files."),
        _assistant("a1", "u1", "01.000", "msg_1", "req_1", block, usage),
        _assistant("a1b", "a1", "01.100", "msg_1", "req_1", block, usage),
    ]
    if block["type"] == "tool_use":
        result = [{"type": "tool_result", "tool_use_id": "toolu_b", "content": "a b"}]
        lines.append(_user("r1", "a1b", "02.000", result))
    session = load(_write(tmp_path, lines))
    answers = [e for e in session.events if isinstance(e, AssistantMessage)]
    assert [len(a.blocks) for a in answers] == [1]
    assert [str(s) for s in session.skipped if "duplicate record" in str(s)] == [
        f"{tmp_path / 's-1.jsonl'}:3: duplicate record: the content of line 2 of the same "
        "response (message.id msg_1); read once"
    ]
    with pytest.raises(LogFormatError, match="duplicate record"):
        load(_write(tmp_path, lines), strict=True)


def test_lines_of_a_response_without_content_are_no_duplicates_of_each_other(tmp_path) -> None:
    """Two lines of one response that hold no block repeat no content: nothing is reported."""
    usage = _usage(3, 500, 0, 20)
    text = {"type": "text", "text": "Done."}
    lines = [
        _user("u1", None, "00.000", "List the files."),
        _assistant("a1", "u1", "01.000", "msg_1", "req_1", text, usage),
        _assistant("a1b", "a1", "01.100", "msg_1", "req_1", text, usage),
        _assistant("a1c", "a1b", "01.200", "msg_1", "req_1", text, usage),
    ]
    for line in lines[2:]:
        line["message"]["content"] = []
    session = load(_write(tmp_path, lines))
    assert [len(e.blocks) for e in session.events if isinstance(e, AssistantMessage)] == [1]
    assert not [s for s in session.skipped if "duplicate record" in str(s)]


def test_a_repeated_response_with_one_line_of_its_own_is_a_request(tmp_path: Path) -> None:
    # `_replayed`: a response is a copy only when every line of it repeats the first response
    # with that message id; one line with a block that response lacks makes it another call.
    lines = _sidechain_log()
    copied = lines[1]["message"]["content"][0]
    other = {"type": "text", "text": "Something else."}
    usage = _usage(3, 400, 0, 9)
    lines[3:3] = [
        _assistant("c1", "s1", "01.200", "msg_1", "req_other", copied, usage, isSidechain=True),
        _assistant("c2", "c1", "01.300", "msg_1", "req_other", other, usage, isSidechain=True),
    ]
    lines[5]["parentUuid"] = "c2"
    session = load(_write(tmp_path, lines))
    assert [r.request_id for r in session.requests()] == ["req_1", "req_other", "req_s", "req_2"]
    other_answer = next(
        e for e in session.events
        if isinstance(e, AssistantMessage) and e.request_id == "req_other"
    )
    assert getattr(other_answer, "copied_from", None) is None


def _parallel_calls(first_id: str, second_id: str, results: list[str]) -> list[dict[str, Any]]:
    """One response with two tool calls (Read then Bash, logged ids `first_id`, `second_id`),
    answered by one user line of results naming `results` in that order."""
    read = {"type": "tool_use", "id": first_id, "name": "Read", "input": {"p": "a"}}
    bash = {"type": "tool_use", "id": second_id, "name": "Bash", "input": {"c": "ls"}}
    usage = _usage(3, 100, 0, 30)
    return [
        _user("u1", None, "00.000", "go"),
        _assistant("a1", "u1", "01.000", "msg_1", "req_1", read, usage),
        _assistant("a2", "a1", "01.500", "msg_1", "req_1", bash, usage),
        _user(
            "u2",
            "a2",
            "02.000",
            [
                {"type": "tool_result", "tool_use_id": source, "content": f"out-{n}"}
                for n, source in enumerate(results, start=1)
            ],
        ),
        _second_answer(),
    ]


@pytest.mark.parametrize(
    ("ids", "results"),
    [
        # Quirk (repeated ids): both calls logged as `toolu_1`; a result answers the oldest.
        (("toolu_1", "toolu_1"), ["toolu_1", "toolu_1"]),
        # Quirk (Entire redaction): results paired by order with the unanswered calls.
        (("REDACTED", "REDACTED"), ["REDACTED", "REDACTED"]),
    ],
)
def test_results_naming_no_single_call_answer_the_oldest_unanswered_one(
    tmp_path: Path, ids: tuple[str, str], results: list[str]
) -> None:
    session = load(_write(tmp_path, _parallel_calls(*ids, results)))
    calls = [
        b.id
        for e in session.events
        if isinstance(e, AssistantMessage)
        for b in e.blocks
        if isinstance(b, ToolCallBlock)
    ]
    answers = [
        (e.call_id, e.tool_name, e.output) for e in session.events if isinstance(e, ToolResult)
    ]
    assert answers == [(calls[0], "Read", "out-1"), (calls[1], "Bash", "out-2")]


@pytest.mark.parametrize(
    ("pre", "expected"),
    [(160000, 160000), (0, 0), (10**12, 10**12), (True, None), ("160000", None), (-5, None),
     (10**12 + 1, None)],
)
def test_a_compaction_s_pre_tokens_is_kept_only_when_it_is_a_count(
    tmp_path: Path, pre: Any, expected: int | None
) -> None:
    lines = claude_lines()
    lines.append(_boundary(None, logicalParentUuid="a3",
                           compactMetadata={"trigger": "manual", "preTokens": pre}))
    session = load(_write(tmp_path, lines))
    (compaction,) = [e for e in session.events if isinstance(e, Compaction)]
    assert compaction.trigger == "manual"
    assert compaction.tokens_before == expected


def test_a_queued_task_notification_is_injected_text_not_a_typed_prompt(tmp_path: Path) -> None:
    # Only a queued command of mode `prompt` is text the user typed; `task-notification` (a
    # background task finishing: the 2.1.x samples) is written by the CLI.
    lines = _attached({
        "type": "queued_command",
        "prompt": "<task-notification>done</task-notification>",
        "commandMode": "task-notification",
    })
    session = load(_write(tmp_path, lines), strict=True)
    (note,) = [e for e in session.events if getattr(e, "attachment", None) == "queued_command"]
    assert note.text == "<task-notification>done</task-notification>"
    assert note.injected is True and note.estimated_text is True


def test_an_agent_call_starts_the_sidechain_with_its_prompt(tmp_path: Path) -> None:
    # Claude Code 2.x renamed the Task tool `Agent`: without an agentId to tie them, the
    # sidechain is still linked to the call whose prompt it starts with.
    lines = _sidechain_log()
    lines[1]["message"]["content"][0]["name"] = "Agent"
    session = load(_write(tmp_path, lines), strict=True)
    start = next(e for e in session.events if isinstance(e, ThreadStart))
    assert start.parent_call_id == "toolu_task"


def test_a_folder_reads_its_transcripts_oldest_first_whatever_their_names(tmp_path: Path) -> None:
    # Quirk (resume / --continue): the later file continues the chain. Read first because
    # its name sorts first, its turn hung off a line not read yet: a branch, not the end of
    # the conversation.
    _write(tmp_path, claude_lines(), "s-b.jsonl")
    _write(tmp_path, _resumed_turn(), "s-a.jsonl")
    session = load(tmp_path, strict=True)
    assert [(r.request_id, r.thread) for r in session.requests()] == [
        ("req_1", "main"),
        ("req_2", "main"),
        ("req_9", "main"),
    ]
    assert not any(isinstance(e, ThreadStart) for e in session.events)


def test_a_meta_line_beside_the_active_path_stays_in_its_context(tmp_path: Path) -> None:
    # A user line `isMeta` (text the CLI injects) off the leaf's ancestors is an artifact of
    # how the log was written, like a tool result: on the active path, not a branch of its own
    # (a branch without a request is not replayed: its text would be lost).
    lines = claude_lines() + [
        _user("m1", "a3", "05.000", "Caveat: injected by the CLI.", isMeta=True),
        *_resumed_turn(),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    meta = [e for e in session.events if isinstance(e, UserMessage) and e.injected]
    assert [(e.text, e.thread) for e in meta] == [("Caveat: injected by the CLI.", "main")]
    assert [r.request_id for r in session.requests()] == ["req_1", "req_2", "req_9"]


def test_a_rewound_branch_holding_only_an_api_error_is_not_replayed(tmp_path: Path) -> None:
    # A branch's requests were billed; one whose only answer is an API error line billed
    # nothing: no thread of its own.
    lines = claude_lines() + [
        _user("b1", "a3", "05.000", "Try this."),
        _assistant(
            "b2", "b1", "06.000", "msg_err", "req_err", {"type": "text", "text": "API Error"},
            _usage(0, 0, 0, 0), isApiErrorMessage=True,
        ),
        *_resumed_turn(),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert {e.thread for e in session.events} == {"main"}
    assert [r.request_id for r in session.requests()] == ["req_1", "req_2", "req_9"]


def test_redacted_session_ids_tie_no_files_together(tmp_path: Path) -> None:
    # Quirk (Entire redaction): `sessionId: "REDACTED"` in two unrelated transcripts is no
    # evidence that they are one session.
    _write(tmp_path, _other_session("REDACTED", "x"), "s-2.jsonl")
    _write(tmp_path, _other_session("REDACTED", "y"), "s-3.jsonl")
    with pytest.raises(LogFormatError, match="holds 2 unrelated sessions"):
        load(tmp_path)


def test_a_summary_without_a_boundary_is_a_compaction(tmp_path: Path) -> None:
    # Quirk (older versions): the compaction summary message without a compact_boundary.
    lines = claude_lines() + [
        _user("sum", "a3", "05.000", "Summary: listed files.", isCompactSummary=True),
        *_resumed_turn(),
    ]
    lines[-2]["parentUuid"] = "sum"
    session = load(_write(tmp_path, lines), strict=True)
    (compaction,) = [e for e in session.events if isinstance(e, Compaction)]
    assert compaction.summary == "Summary: listed files."
    assert not getattr(compaction, "summary_missing", False)
    before = [
        e.id
        for e in session.events[: session.events.index(compaction)]
        if isinstance(e, UserMessage | AssistantMessage | ToolResult)
    ]
    assert compaction.replaces == before



def test_a_sidechain_starting_with_its_task_call_comes_after_that_call(tmp_path: Path) -> None:
    # Threads are merged by time; at equal times the thread read first (the main one) goes
    # first, so the sub-agent does not start before the call that started it.
    lines = _sidechain_log()
    lines[2]["timestamp"] = lines[1]["timestamp"]  # the sidechain's prompt, same millisecond
    session = load(_write(tmp_path, lines), strict=True)
    call = next(e for e in session.events if isinstance(e, AssistantMessage))
    start = next(e for e in session.events if isinstance(e, ThreadStart))
    assert call.ts == start.ts
    assert session.events.index(call) < session.events.index(start)


def test_a_microcompact_is_sized_only_where_the_prompt_fell() -> None:
    """The cleared results are sized by how far the prompt fell below the previous request's
    prompt + output; a prompt that did not fall gives no size (it is not "~0 tokens")."""
    from datetime import UTC, datetime

    from replay.log import RequestMarker, Usage

    ts = datetime(2026, 11, 1, tzinfo=UTC)
    before = RequestMarker(ts=ts, request_id="a",
                           usage=Usage(input_tokens=1_000, output_tokens=50))
    after = RequestMarker(ts=ts, request_id="b", usage=Usage(input_tokens=1_050))
    assert replay_api._prompt_fall(before, after) == (
        "tool results the log does not identify (of a size the prompts do not show)"
    )
    after.usage.input_tokens = 1_049
    assert replay_api._prompt_fall(before, after).startswith(
        "~1 tokens of tool results the log does not identify"
    )


@pytest.mark.parametrize(
    ("split", "reported", "buckets"),
    [
        # The two TTL counts add up to more than the write they split: the 1h one is capped.
        ({"ephemeral_5m_input_tokens": 30, "ephemeral_1h_input_tokens": 40}, True, (0, 40)),
        ({"ephemeral_1h_input_tokens": 50}, True, (0, 40)),
        # Both logged, adding up to less: the logged 5m count is contradicted too.
        ({"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 30}, True, (10, 30)),
        # One count alone: the other is the rest of the write, consistent.
        ({"ephemeral_1h_input_tokens": 30}, False, (10, 30)),
        ({"ephemeral_5m_input_tokens": 15}, False, (15, 25)),  # (read as all 5m: (40, 0))
        ({"ephemeral_5m_input_tokens": 50}, True, (40, 0)),
        ({"ephemeral_5m_input_tokens": 15, "ephemeral_1h_input_tokens": 25}, False, (15, 25)),
    ],
)
def test_a_cache_write_split_that_does_not_add_up_is_reported(
    tmp_path: Path, split: dict[str, int], reported: bool, buckets: tuple[int, int]
) -> None:
    # It was capped silently: `--strict` passed a usage that contradicts itself.
    lines = claude_lines()
    lines[6]["message"] = dict(lines[6]["message"])
    lines[6]["message"]["usage"] = dict(lines[6]["message"]["usage"], cache_creation=split)
    path = _write(tmp_path, lines)
    session = load(path)
    usage = session.requests()[1].usage
    assert (usage.cache_write_5m_tokens, usage.cache_write_1h_tokens) == buckets
    assert usage.prompt_tokens == 2 + 40 + 3000  # the total write is kept
    assert [e.line for e in session.skipped] == ([7] if reported else [])
    if reported:
        with pytest.raises(
            LogFormatError, match=r"s-1\.jsonl:7: expected the write split .* to add up to "
            r"`cache_creation_input_tokens` 40$",
        ):
            load(path, strict=True)
        assert f"read as {buckets[1]} 1h + {buckets[0]} 5m" in str(session.skipped[0])
    else:
        load(path, strict=True)


def test_a_compaction_iteration_billed_apart_from_the_usage_is_noted_as_not_priced(
    tmp_path: Path, invoke: Any
) -> None:
    # caching.md A4: server-side compaction runs an extra sampling iteration, listed in
    # `usage.iterations` and billed, which the top-level usage excludes. It was carried in
    # `usage.raw` without a word: the bill looked complete.
    lines = claude_lines()
    usage = dict(lines[6]["message"]["usage"])
    message_only = [{"type": "message", **{k: usage[k] for k in (
        "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens"
    )}}]
    # The samples' shape (the response alone, equal to the top-level usage): nothing to say.
    lines[6]["message"] = {**lines[6]["message"], "usage": {**usage, "iterations": message_only}}
    quiet = load(_write(tmp_path, lines), strict=True)
    assert replay_api.iteration_notes(quiet) == []
    compaction = {"type": "compaction", "input_tokens": 1200, "cache_read_input_tokens": 150000,
                  "cache_creation_input_tokens": 300, "output_tokens": 3500}
    lines[6]["message"]["usage"]["iterations"] = [compaction, *message_only]
    session = load(_write(tmp_path, lines), strict=True)
    # The request's own usage stays the top-level one (the response's prompt).
    assert session.requests()[1].usage.prompt_tokens == 2 + 40 + 3000
    expected = (
        "1 request(s) list iterations besides the response in `usage.iterations` (compaction; "
        "first: request #1 (req_2)): 151,500 prompt and 3,500 output tokens the provider billed "
        "apart from the requests' usage. They are not priced: neither the log's own bill nor any "
        "strategy's cost includes them."
    )
    assert replay_api.iteration_notes(session) == [expected]
    assert expected in replay(session, ["recorded"]).notes
    result = invoke("fidelity", session.path, "--format", "json")
    assert result.exit_code == 0, result.output
    assert expected in json.loads(result.stdout)["notes"]


def test_a_request_starts_when_its_context_ended_and_lasts_to_its_last_line(
    tmp_path: Path,
) -> None:
    # docs/adapters.md, Requests: `ts` = the end of the last context event, `duration_ms` to
    # the end of the response (found by a mutation pass: duration_ms had no test here).
    session = load(_write(tmp_path, claude_lines()), strict=True)
    timing = [(r.ts.strftime("%S.%f"), r.duration_ms) for r in session.requests()]
    # req_1: after the prompt (00.000), lines to 03.000; req_2: after the tool result (03.200),
    # its line at 05.000.
    assert timing == [("00.000000", 3000), ("03.200000", 1800)]


def _compacted(n: int, after: str, at: int) -> list[dict[str, Any]]:
    """A compact boundary after line `after`, its summary, a prompt and an answer (`req_c<n>`)
    at 10:01:<at>…<at + 3>."""
    times = [f"2026-01-02T10:01:{at + k:02d}Z" for k in range(4)]
    boundary = _boundary(None, uuid=f"cb{n}", logicalParentUuid=after, timestamp=times[0],
                         compactMetadata={"trigger": "auto", "preTokens": 3000})
    summary = _user(f"ks{n}", f"cb{n}", "00.000", f"Summary {n}.", isCompactSummary=True)
    prompt = _user(f"kp{n}", f"ks{n}", "00.000", f"Next {n}?")
    answer = _assistant(
        f"kr{n}", f"kp{n}", "00.000", f"msg_c{n}", f"req_c{n}", {"type": "text", "text": "Ok."},
        _usage(5, 100, 2000, 4, 100), model="claude-sonnet-4-6",
    )
    return [dict(line, timestamp=t) for line, t in zip(
        (boundary, summary, prompt, answer), times, strict=True
    )]


def test_a_later_compaction_replaces_the_earlier_summary_too(tmp_path: Path) -> None:
    # docs/adapters.md, Compactions: `replaces` lists every earlier event of the thread the
    # summary replaced, previous compactions included (found by a mutation pass).
    lines = claude_lines() + _compacted(1, "a3", 0) + _compacted(2, "kr1", 10)
    session = load(_write(tmp_path, lines), strict=True)
    first, second = [e for e in session.events if isinstance(e, Compaction)]
    before = session.events[: session.events.index(second)]
    context = UserMessage | AssistantMessage | ToolResult | Compaction
    assert set(second.replaces) == {e.id for e in before if isinstance(e, context)}
    assert first.id in second.replaces


@pytest.mark.parametrize(
    ("iterations", "problem"),
    [
        ("all", r"expected `iterations` to be a list, got str in `usage`"),
        ([{"input_tokens": 5}], r"expected `iterations\[0\]` to be an object with a `type`"),
        ([{"type": "compaction", "output_tokens": -3}],
         r"expected `output_tokens` to be >= 0, got -3 in `iterations\[0\]` in `usage`"),
    ],
)
def test_garbled_usage_iterations_are_reported_and_not_read(
    tmp_path: Path, iterations: Any, problem: str
) -> None:
    # Read for a note (iterations billed apart): garbled, they are reported like any garbled
    # field, and the request keeps its usage.
    lines = claude_lines()
    lines[6]["message"] = {**lines[6]["message"],
                           "usage": {**lines[6]["message"]["usage"], "iterations": iterations}}
    path = _write(tmp_path, lines)
    session = load(path)
    assert session.requests()[1].usage.prompt_tokens == 2 + 40 + 3000
    assert [e.line for e in session.skipped] == [7]
    assert "the iterations are not read" in str(session.skipped[0])
    assert replay_api.iteration_notes(session) == []
    with pytest.raises(LogFormatError, match=r"s-1\.jsonl:7: " + problem):
        load(path, strict=True)


def test_a_summary_line_naming_another_file_s_leaf_ties_no_files(tmp_path: Path) -> None:
    # docs/adapters.md: a `summary` line's `leafUuid` is no tie (Claude Code writes other
    # sessions' titles into a file): two sessions stay two.
    _write(tmp_path, claude_lines(), "s-1.jsonl")
    title = {"type": "summary", "summary": "Listing files", "leafUuid": "a3"}
    _write(tmp_path, [title, *_other_session("s-2", "x")], "s-2.jsonl")
    with pytest.raises(LogFormatError, match="holds 2 unrelated sessions"):
        load(tmp_path)
    assert load(tmp_path / "s-2.jsonl", strict=True).header.ignored_records["summary"] == 1


@pytest.mark.parametrize("same_time", [False, True])
def test_a_later_file_starting_with_the_same_prompt_is_a_copy_only_at_the_same_time(
    tmp_path: Path, same_time: bool
) -> None:
    # docs/adapters.md, resumed sessions: a root line is no copy by its place (two files of a
    # session may start with the same prompt), only by its `timestamp`: the later prompt stays
    # its own line unless written at the same time (found by a mutation pass: no test told a
    # copied root from a repeated one).
    def session_file(tag: str, at: str) -> list[dict[str, Any]]:
        prompt = _user(f"u{tag}", None, at, "Hello.")
        answer = _assistant(f"a{tag}", f"u{tag}", at.replace("00.", "01."), f"msg_{tag}",
                            f"req_{tag}", {"type": "text", "text": f"Hi {tag}."},
                            _usage(3, 20, 3000, 3))
        return [prompt, answer]

    _write(tmp_path, session_file("x", "00.000"), "s-1.jsonl")
    snapshot = {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}
    later = [snapshot, *session_file("y", "00.000")]
    if not same_time:
        for line in later[1:]:
            line["timestamp"] = line["timestamp"].replace("T10:00", "T10:07")
    _write(tmp_path, later, "s-2.jsonl")
    session = load(tmp_path, strict=True)
    main = [e for e in session.events if e.thread == "main" and isinstance(e, UserMessage)]
    # s-1's line 1 (its copy dropped, the answer hanging off it) or s-2's own line 2.
    assert [(e.text, e.line) for e in main] == [("Hello.", 1 if same_time else 2)]
    copied = any(getattr(e, "copied_from", None) for e in session.events)
    assert copied is same_time  # s-1's answer, then a branch off the shared prompt
    assert sorted(r.request_id for r in session.requests()) == ["req_x", "req_y"]


def test_a_copied_response_is_told_by_its_message_anywhere(tmp_path: Path) -> None:
    # docs/adapters.md, resumed sessions: a response line of a later file is a copy when an
    # earlier file holds the same record, `message.id` included, anywhere: here under new
    # uuids, times and requestIds. Kept, the copies made the original a rewound branch and
    # put the history twice in the main thread (found by a mutation pass).
    folder = _resumed_under_new_uuids(tmp_path, _resumed_turn(), retimed=True)
    later = folder / "s-2.jsonl"
    lines = [json.loads(x) for x in later.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if line.get("requestId") in ("req_1", "req_2"):
            line["requestId"] += "-copy"
    later.write_text(jsonl(lines), encoding="utf-8")
    session = load(folder, strict=True)
    assert {e.thread for e in session.events} == {"main"}
    assert [r.request_id for r in session.requests()] == ["req_1", "req_2", "req_9"]
    assert not any(getattr(e, "copied_from", None) for e in session.events)
    answers = [e for e in session.events if isinstance(e, AssistantMessage)]
    assert len(answers) == 3
def test_a_line_cut_inside_a_string_says_where_the_string_opened(tmp_path: Path) -> None:
    """Python's message reads `Unterminated string starting at` with the place after a colon,
    left out (no line of the file): the column of that line goes in its place."""
    lines = jsonl(claude_lines()).splitlines()
    cut = '{"type":"user","message":{"role":"user","content":"hel'
    path = tmp_path / "s-1.jsonl"
    path.write_text("\n".join([lines[0], cut, *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(LogFormatError) as err:
        load(path, strict=True)
    # the string "hel opens at the 51st character
    assert str(err.value) == (
        f"{path}:2: expected a JSON object (invalid or truncated JSON: Unterminated string "
        "starting at column 51)"
    )


# --------------------------------------------------------------------------------------------------
# Redacted ids: which line goes on a response


def _bash_call(n: int) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": "ls"}}


def _bash_result(uuid: str, parent: str, ts: str, n: int, *extra: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"file{n}.py"}
    return _user(uuid, parent, ts, [block, *extra])


@pytest.mark.parametrize("between", ["text beside the result", "no content"])
def test_a_redacted_response_does_not_go_on_past_a_line_that_is_not_only_tool_results(
    tmp_path: Path, between: str
) -> None:
    # docs/adapters.md: a redacted response goes on past the *tool results* and progress lines
    # it hangs off; a user line with text of its own (or none) is not one: what follows it is a
    # new request, even when billed the same prompt.
    same = _usage(3, 600, 1400, 40)
    middle = (
        _bash_result("r1", "a1", "03.000", 1, {"type": "text", "text": "and README?"})
        if between == "text beside the result"
        else _user("r1", "a1", "03.000", [])
    )
    lines = [
        _user("u1", None, "01.000", "List the files."),
        _assistant("a1", "u1", "02.000", "REDACTED", "REDACTED", _bash_call(1), same),
        middle,
        _assistant("a2", "r1", "04.000", "REDACTED", "REDACTED",
                   {"type": "text", "text": "Done."}, same),
    ]
    session = load(_write(tmp_path, lines))
    assert len(session.requests()) == 2


def test_a_redacted_response_past_tool_results_needs_the_same_cache_read(tmp_path: Path) -> None:
    # docs/adapters.md: the lines of one response carry the same prompt usage (input, cache
    # write AND cache read): after a tool result, a line whose cache read differs is the next
    # request, not the next block of the previous one.
    first = _usage(3, 600, 1400, 40)
    second = _usage(3, 600, 2000, 40)  # only the cache read differs
    lines = [
        _user("u1", None, "01.000", "List the files."),
        _assistant("a1", "u1", "02.000", "REDACTED", "REDACTED", _bash_call(1), first),
        _bash_result("r1", "a1", "03.000", 1),
        _assistant("a2", "r1", "04.000", "REDACTED", "REDACTED",
                   {"type": "text", "text": "Done."}, second),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert len(session.requests()) == 2


def test_a_redacted_result_answers_the_oldest_redacted_call_not_an_older_call_of_its_own_id(
    tmp_path: Path,
) -> None:
    # docs/adapters.md: a result is paired with the oldest unanswered call of its id: of the
    # redacted ones for a `REDACTED` id (a redactor rewrites both ends of one id alike). Here
    # the real-id call is older and still waits when the redacted result comes.
    usage = _usage(3, 600, 1400, 40)
    read = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a"}}
    bash = {"type": "tool_use", "id": "REDACTED", "name": "Bash", "input": {"command": "ls"}}
    lines = [
        _user("u1", None, "01.000", "Look."),
        _assistant("a1", "u1", "02.000", "msg_A", "req_1", read, usage),
        _assistant("a2", "a1", "02.100", "msg_A", "req_1", bash, usage),
        _user("r1", "a2", "03.000",
              [{"type": "tool_result", "tool_use_id": "REDACTED", "content": "bash-out"}]),
        _user("r2", "r1", "03.100",
              [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "read-out"}]),
        _assistant("a3", "r2", "04.000", "msg_B", "req_2", {"type": "text", "text": "Ok."},
                   _usage(3, 50, 2000, 5)),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    results = [(e.tool_name, e.output) for e in session.events if isinstance(e, ToolResult)]
    assert results == [("Bash", "bash-out"), ("Read", "read-out")]


def test_a_redacted_response_goes_on_past_a_progress_line_it_hangs_off(tmp_path: Path) -> None:
    # docs/adapters.md: the next streamed block of a redacted response may hang off a progress
    # line written while it streamed (a hook ran): same prompt usage, one request.
    same = _usage(3, 600, 1400, 40)
    lines = [
        _user("u1", None, "01.000", "List the files."),
        _assistant("a1", "u1", "02.000", "REDACTED", "REDACTED",
                   {"type": "text", "text": "Listing."}, same),
        _line("p1", "a1", "02.500", "progress", data={"type": "hook_progress"}),
        _assistant("a2", "p1", "03.000", "REDACTED", "REDACTED", _bash_call(1), same),
        _bash_result("r1", "a2", "04.000", 1),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert len(session.requests()) == 1
    answer = next(e for e in session.events if isinstance(e, AssistantMessage))
    assert [b.type for b in answer.blocks] == ["text", "tool_call"]


# --------------------------------------------------------------------------------------------------
# Which files a read takes, and what ties them into one session


def _agent_file(agent: str, session_id: str) -> list[dict[str, Any]]:
    """`claude_lines()` as the sidechain of agent `agent` (uuids and response ids of its own)."""
    sub = claude_lines()[1:]
    for n, line in enumerate(sub):
        line["uuid"], line["isSidechain"], line["agentId"] = f"{agent}{n}", True, agent
        line["parentUuid"] = f"{agent}{n - 1}" if n else None
        line["sessionId"] = session_id
        if line["type"] == "assistant":
            line["requestId"] += agent
            line["message"]["id"] += agent
    return sub


def test_folder_files_come_once_each_in_the_documented_reading_order(tmp_path: Path) -> None:
    # `_order`: transcripts, then `agent-*` files beside them, in `subagents/`, then in each
    # transcript's `<sessionId>/subagents/` (whatever the names); an `agent-*` file is no
    # transcript too (it would be read and hashed twice).
    _write(tmp_path, claude_lines(), "s-1.jsonl")
    (tmp_path / "subagents").mkdir()
    (tmp_path / "s-1" / "subagents").mkdir(parents=True)
    names = ["agent-c.jsonl", "subagents/agent-b.jsonl", "s-1/subagents/agent-a.jsonl"]
    for name in names:
        _write(tmp_path, _agent_file("x", "s-1"), name)
    assert claude_code.folder_files(tmp_path) == [tmp_path / "s-1.jsonl"] + [
        tmp_path / n for n in names
    ]


def test_a_folder_with_transcripts_ignores_a_same_named_file_beside_it(tmp_path: Path) -> None:
    # `<dir>.jsonl` beside a folder stands in for its transcript only when the folder holds
    # none (a `<sessionId>/` folder of 2.1.x subagents given alone).
    folder = tmp_path / "proj"
    folder.mkdir()
    _write(folder, claude_lines(), "s-1.jsonl")
    _write(tmp_path, _other_session("s-2", "o"), "proj.jsonl")
    session = load(folder, strict=True)
    assert [r.request_id for r in session.requests()] == ["req_1", "req_2"]


def test_a_beside_agent_file_is_tied_by_the_agent_id_its_records_carry(tmp_path: Path) -> None:
    # `_agent_file_ids`: an agent file's id is its records' `agentId`, the file name's only
    # without one.
    main = claude_lines()
    main[5]["toolUseResult"] = {"agentId": "abc"}
    _write(tmp_path, main, "s-1.jsonl")
    _write(tmp_path, _agent_file("abc", "s-9"), "agent-renamed.jsonl")  # tied by agentId only
    session = load(tmp_path / "s-1.jsonl", strict=True)
    assert {r.thread for r in session.requests()} == {"main", "agent-renamed"}


def test_a_transcript_file_reads_the_beside_agent_files_of_its_subagents_too(
    tmp_path: Path,
) -> None:
    # `read_agents_beside`: an agent file named by another agent file's `toolUseResult.agentId`
    # (a subagent's own subagent) is of the session too. Every file has its own sessionId.
    main = claude_lines()
    main[5]["toolUseResult"] = {"agentId": "abc"}
    caller = _agent_file("abc", "s-8")
    caller[4]["toolUseResult"] = {"agentId": "def"}
    _write(tmp_path, main, "s-1.jsonl")
    _write(tmp_path, caller, "agent-abc.jsonl")
    _write(tmp_path, _agent_file("def", "s-9"), "agent-def.jsonl")
    session = load(tmp_path / "s-1.jsonl", strict=True)
    assert {r.thread for r in session.requests()} == {"main", "agent-abc", "agent-def"}


def test_a_subagent_file_given_alone_reads_no_sibling_agent_file(tmp_path: Path) -> None:
    # The 2.0.x `<project>/agent-*.jsonl` files beside a *transcript* are read with it; beside
    # an agent file given alone, the other agents of its session are no part of it.
    _write(tmp_path, _agent_file("aaa", "s-1"), "agent-aaa.jsonl")
    _write(tmp_path, _agent_file("bbb", "s-1"), "agent-bbb.jsonl")
    session = load(tmp_path / "agent-aaa.jsonl", strict=True)
    assert [r.request_id for r in session.requests()] == ["req_1aaa", "req_2aaa"]


def test_a_2_1_subagent_file_given_alone_keeps_the_5m_ttl_of_a_subagent(tmp_path: Path) -> None:
    # docs/adapters.md: read alone, its requests are thread `main`; its header takes nothing
    # from its lines, so Claude Code 2.1's main-thread 1h TTL is not applied to a subagent.
    from replay.cache._clients import profile_for

    lines = _agent_file("aaa", "s-1")
    for line in lines:
        line.update(version="2.1.5", cwd="/repo")
    _write(tmp_path, lines, "agent-aaa.jsonl")
    session = load(tmp_path / "agent-aaa.jsonl", strict=True)
    header = session.header
    assert (header.agent_version, header.cwd, header.session_id) == (None, None, "agent-aaa")
    assert {r.thread for r in session.requests()} == {"main"}
    assert profile_for(header.agent, None, header.agent_version).ttl("main") == "5m"
    main = claude_lines()
    for line in main:
        line.update(version="2.1.5")
    _write(tmp_path, main, "s-1.jsonl")
    with_main = load(tmp_path / "s-1.jsonl", strict=True).header
    assert profile_for(with_main.agent, None, with_main.agent_version).ttl("main") == "1h"


def test_an_agent_file_read_before_the_file_calling_it_is_of_the_session(tmp_path: Path) -> None:
    # A subagent's own subagent (`toolUseResult.agentId` in the subagent's file) is tied to it
    # whatever the reading order: here `agent-aaa` is read before `agent-zzz`, which calls it.
    # Each file has its own sessionId: only agent ids tie them.
    main = claude_lines()
    main[5]["toolUseResult"] = {"agentId": "zzz"}
    caller = _agent_file("zzz", "s-8")
    caller[4]["toolUseResult"] = {"agentId": "aaa"}
    _write(tmp_path, main, "s-1.jsonl")
    _write(tmp_path, caller, "agent-zzz.jsonl")
    _write(tmp_path, _agent_file("aaa", "s-9"), "agent-aaa.jsonl")
    session = load(tmp_path, strict=True)
    assert {r.thread for r in session.requests()} == {"main", "agent-zzz", "agent-aaa"}


def test_a_subagents_folder_of_a_transcript_is_of_its_session_by_the_layout(
    tmp_path: Path,
) -> None:
    # docs/adapters.md: files are tied by the layout too (`<sessionId>/subagents/` beside
    # `<sessionId>.jsonl`), even when their records name nothing of the transcript.
    _write(tmp_path, claude_lines(), "s-1.jsonl")
    (tmp_path / "s-1" / "subagents").mkdir(parents=True)
    _write(tmp_path / "s-1" / "subagents", _agent_file("x", "s-9"), "agent-x.jsonl")
    session = load(tmp_path, strict=True)
    assert {r.thread for r in session.requests()} == {"main", "agent-x"}


def test_a_continuation_tied_by_its_boundary_s_logical_parent_is_one_session(
    tmp_path: Path,
) -> None:
    # docs/adapters.md: a `logicalParentUuid` naming a record of another file ties the files (a
    # compacted session continued in a new file, under another sessionId).
    later = [
        _boundary(None, logicalParentUuid="a3", sessionId="s-2",
                  timestamp="2026-01-02T10:05:00Z"),
        _user("u9", "cb", "01.000", "Next?", sessionId="s-2"),
        _assistant("a9", "u9", "02.000", "msg_C", "req_3", {"type": "text", "text": "Ok."},
                   _usage(5, 100, 2000, 4), sessionId="s-2"),
    ]
    for line in later[1:]:
        line["timestamp"] = line["timestamp"].replace("10:00:", "10:05:")
    _write(tmp_path, claude_lines(), "s-1.jsonl")
    _write(tmp_path, later, "s-2.jsonl")
    session = load(tmp_path, strict=True)
    assert [r.request_id for r in session.requests()] == ["req_1", "req_2", "req_3"]


def test_redacted_uuids_on_the_same_line_of_two_files_are_two_records(tmp_path: Path) -> None:
    # A redacted uuid gets an id of its own, unique across the files of a folder: the line of
    # the later file is no copy of the redacted line at the same place in the earlier one.
    first = claude_lines() + [_user("REDACTED", "a3", "10.000", "One more.")]
    padding = claude_lines()[:1] * (len(first) - 1)  # the same line number in both files
    later = [*padding, _user("REDACTED", "REDACTED", "20.000", "And?")]
    later[-1]["timestamp"] = "2026-01-02T10:05:00Z"
    _write(tmp_path, first, "s-1.jsonl")
    _write(tmp_path, later, "s-2.jsonl")
    session = load(tmp_path, strict=True)
    texts = [e.text for e in session.events if isinstance(e, UserMessage)]
    assert texts == ["List the files, please.", "One more.", "And?"]


# --------------------------------------------------------------------------------------------------
# Copies of earlier lines (`_drop_copies`): what is one and what is not


def _later_file(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`lines` written five minutes later (a resumed file)."""
    for line in lines:
        line["timestamp"] = line["timestamp"].replace("10:00:", "10:05:")
    return lines


def test_a_later_line_differing_from_an_earlier_one_only_by_is_meta_is_no_copy(
    tmp_path: Path,
) -> None:
    # `_digest` compares what a copy keeps, `isMeta` included: injected text under the same
    # parent as a typed prompt of the same words is another record, not a resumed copy.
    first = [*claude_lines(), _user("u3", "a3", "10.000", "go on")]
    later = _later_file([
        _user("x1", "a3", "20.000", "go on", isMeta=True),
        _assistant("x2", "x1", "21.000", "msg_X", "req_X", {"type": "text", "text": "Ok."},
                   _usage(2, 10, 3040, 3)),
    ])
    _write(tmp_path, first, "s-1.jsonl")
    _write(tmp_path, later, "s-2.jsonl")
    session = load(tmp_path, strict=True)
    injected = [e.text for e in session.events if isinstance(e, UserMessage) and e.injected]
    assert injected == ["go on"]


def test_a_prompt_sent_again_after_a_rewind_is_no_copy_of_its_own_file(tmp_path: Path) -> None:
    # `_drop_copies` looks for copies in EARLIER files only: a prompt rewound and sent again in
    # the same words (a sibling under the same parent, in the same file) is another record; the
    # active path holds the one sent again, the abandoned branch the first.
    first = [
        *claude_lines(),
        _user("b1", "a3", "20.000", "Count them."),
        _assistant("b2", "b1", "21.000", "msg_X", "req_x", {"type": "text", "text": "Two."},
                   _usage(3, 20, 3000, 2)),
        _user("m1", "a3", "30.000", "Count them."),
        _assistant("m2", "m1", "31.000", "msg_Y", "req_y", {"type": "text", "text": "2."},
                   _usage(3, 20, 3050, 2)),
    ]
    # A later file continuing the session: the folder's files are then looked at for copies.
    later = _later_file([
        _user("n1", "m2", "40.000", "Thanks."),
        _assistant("n2", "n1", "41.000", "msg_Z", "req_z", {"type": "text", "text": "Ok."},
                   _usage(3, 20, 3100, 2)),
    ])
    _write(tmp_path, first, "s-1.jsonl")
    _write(tmp_path, later, "s-2.jsonl")
    session = load(tmp_path, strict=True)
    assert [r.thread for r in session.requests() if r.request_id == "req_x"] == ["main/branch-1"]
    again = [e for e in session.events if isinstance(e, UserMessage) and e.thread == "main"][1]
    assert again.text == "Count them."
    assert again.ts.strftime("%M:%S") == "00:30" and not getattr(again, "copied_from", None)


# --------------------------------------------------------------------------------------------------
# Compaction records


def test_a_compact_boundary_that_keeps_its_parent_uuid_hangs_off_it(tmp_path: Path) -> None:
    # `logicalParentUuid` stands in for a boundary's `parentUuid` only where that one is cut
    # (null, formats.md §1): a boundary that kept it continues the chain through it, and the
    # history before it is no abandoned branch.
    lines = [
        *claude_lines(),
        _boundary("a3"),
        _user("u9", "cb", "62.000", "Next?"),
        _assistant("a9", "u9", "63.000", "msg_C", "req_3", {"type": "text", "text": "Ok."},
                   _usage(5, 100, 2000, 4)),
    ]
    lines[-2]["timestamp"] = "2026-01-02T10:01:02Z"
    lines[-1]["timestamp"] = "2026-01-02T10:01:03Z"
    session = load(_write(tmp_path, lines), strict=True)
    assert [(r.thread, r.request_id) for r in session.requests()] == [
        ("main", "req_1"), ("main", "req_2"), ("main", "req_3")
    ]


def test_a_compaction_summary_in_blocks_is_its_text(tmp_path: Path) -> None:
    # formats.md §1: `message.content` is a string or blocks, the summary message's included.
    summary = _user("sum", "cb", "00.000", [{"type": "text", "text": "Summary: listed files."}],
                    isCompactSummary=True)
    summary["timestamp"] = "2026-01-02T10:01:01Z"
    lines = [*claude_lines(), _boundary(None, logicalParentUuid="a3"), summary]
    session = load(_write(tmp_path, lines), strict=True)
    compaction = next(e for e in session.events if isinstance(e, Compaction))
    assert compaction.summary == "Summary: listed files."


# --------------------------------------------------------------------------------------------------
# Content: placeholders and attachments


def test_an_image_from_an_url_is_a_placeholder_labelled_estimated(tmp_path: Path) -> None:
    # An image without base64 data (an URL source): its pixels are not in the log either, so
    # its text is a placeholder, labelled estimated like a base64 one.
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/y.png"}}
    lines = claude_lines()
    lines[5]["message"]["content"][0]["content"] = [{"type": "text", "text": "see"}, image]
    session = load(_write(tmp_path, lines), strict=True)
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert result.output == "see\n[image  0 base64 chars]"
    assert result.estimated_text is True


def test_an_attachment_rendering_only_whitespace_is_ignored(tmp_path: Path) -> None:
    # docs/adapters.md: attachments with nothing to render (empty ones) are counted in
    # `ignored_records`, not sent as an empty reminder.
    lines = claude_lines()
    lines.append(_line("t1", "a3", "09.000", "attachment",
                       attachment={"type": "skill_listing", "content": " \n "}))
    session = load(_write(tmp_path, lines), strict=True)
    assert session.header.ignored_records.get("attachment/skill_listing") == 1
    assert not any(getattr(e, "attachment", None) for e in session.events)


def test_a_plain_text_document_keeps_its_text(tmp_path: Path) -> None:
    # Only base64 payloads are placeholders (`binary_placeholder`): a `document` whose source is
    # plain text (Anthropic `source.type: "text"`) is text the model reads.
    document = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "hello world"},
    }
    lines = claude_lines()
    lines[5]["message"]["content"][0]["content"] = [document]
    session = load(_write(tmp_path, lines), strict=True)
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert "hello world" in result.output


# --------------------------------------------------------------------------------------------------
# Subagent threads: their start event


def test_a_subagent_on_the_session_s_model_names_no_model_of_its_own(tmp_path: Path) -> None:
    # docs/log-format.md: a `thread` event's `model` is set only where it differs from the
    # header's.
    session = load(_write(tmp_path, _sidechain_log()), strict=True)
    start = next(e for e in session.events if isinstance(e, ThreadStart))
    assert session.header.model == "claude-sonnet-4-20250514"
    assert start.model is None


def test_a_task_result_naming_no_agent_leaves_the_call_to_its_sidechain(tmp_path: Path) -> None:
    # A `toolUseResult` without an `agentId` (a 1.0.x Task result, any other tool's) names no
    # subagent: the inline sidechain is still linked to its Task call by its prompt.
    lines = _sidechain_log()
    lines[4]["toolUseResult"] = {"totalDurationMs": 1200, "totalTokens": 405}
    session = load(_write(tmp_path, lines), strict=True)
    start = next(e for e in session.events if isinstance(e, ThreadStart))
    assert start.parent_call_id == "toolu_task"


# --------------------------------------------------------------------------------------------------
# Traceability


@pytest.mark.parametrize("logged", ["kept", "REDACTED", "missing"])
def test_a_response_s_source_id_is_the_message_id_of_the_log(tmp_path: Path, logged: str) -> None:
    # docs/adapters.md, Traceability: `source_id` is the log's own id. A redacted or missing
    # `message.id` is told apart by a fallback (the requestId, or the streamed line before it):
    # that fallback is the adapter's, not the log's, so it is no `source_id`.
    lines = claude_lines()
    for line in lines:
        if line.get("type") == "assistant" and logged != "kept":
            if logged == "REDACTED":
                line["message"]["id"] = "REDACTED"
            else:
                del line["message"]["id"]
    session = load(_write(tmp_path, lines), strict=True)
    answers = [e for e in session.events if isinstance(e, AssistantMessage)]
    expected = {"kept": ["msg_A", "msg_B"], "REDACTED": ["REDACTED"] * 2, "missing": [None] * 2}
    assert [getattr(e, "source_id", None) for e in answers] == expected[logged]
    assert [r.request_id for r in session.requests()] == ["req_1", "req_2"]


# --------------------------------------------------------------------------------------------------
# More rules found untested by a mutation pass


def test_a_compact_file_reference_attachment_is_injected_text(tmp_path: Path) -> None:
    # formats.md §1: `compact_file_reference` is one of the attachments the CLI renders into
    # model-visible text (only its data is logged: the text is estimated).
    lines = claude_lines()
    lines.append(_line("t1", "a3", "09.000", "attachment",
                       attachment={"type": "compact_file_reference", "filename": "/w/a.txt"}))
    session = load(_write(tmp_path, lines), strict=True)
    (event,) = [e for e in session.events if getattr(e, "attachment", None)]
    assert "/w/a.txt" in event.text and event.injected and event.estimated_text


def test_a_redacted_response_goes_on_past_many_progress_lines(tmp_path: Path) -> None:
    # The tool results and progress lines of a tool run while a redacted response streamed may
    # be many (a hook and a bash progress line each): its next block still goes on it.
    same = _usage(3, 600, 1400, 40)
    progress = [_line(f"p{n}", "a1", f"02.{n}00", "progress", data={"type": "bash_progress"})
                for n in range(1, 9)]
    lines = [
        _user("u1", None, "01.000", "List the files."),
        _assistant("a1", "u1", "02.000", "REDACTED", "REDACTED", _bash_call(1), same),
        *progress,
        _bash_result("r1", "a1", "03.000", 1),
        _assistant("a2", "r1", "04.000", "REDACTED", "REDACTED", _bash_call(2), same),
        _bash_result("r2", "a2", "05.000", 2),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert len(session.requests()) == 1


def test_a_stray_jsonl_file_of_no_known_format_is_no_transcript(tmp_path: Path) -> None:
    # A folder's `*.jsonl` files are transcripts only when they are Claude Code logs.
    _write(tmp_path, claude_lines(), "s-1.jsonl")
    (tmp_path / "notes.jsonl").write_text('{"note": "not a log"}\n', encoding="utf-8")
    assert claude_code.folder_files(tmp_path) == [tmp_path / "s-1.jsonl"]


def test_a_redacted_line_straight_under_its_parent_billed_another_prompt_is_a_request(
    tmp_path: Path,
) -> None:
    # formats.md: every line of one response repeats its usage. Ids redacted, a line straight
    # under an assistant line with another prompt usage is a new request (a continuation after
    # `pause_turn`, server tools), not the next block of the first: its usage was lost.
    first, second = _usage(3, 600, 1400, 40), _usage(3, 90, 2000, 9)
    lines = [
        _user("u1", None, "01.000", "Search the web."),
        _assistant("a1", "u1", "02.000", "REDACTED", "REDACTED",
                   {"type": "text", "text": "Searching."}, first),
        _assistant("a2", "a1", "04.000", "REDACTED", "REDACTED",
                   {"type": "text", "text": "Found it."}, second),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert [r.usage.prompt_tokens for r in session.requests()] == [2003, 2093]
    # The same usage on both lines: one response in two lines, one request.
    lines[2] = _assistant("a2", "a1", "04.000", "REDACTED", "REDACTED",
                          {"type": "text", "text": "Found it."}, first)
    assert [r.usage.prompt_tokens for r in load(_write(tmp_path, lines)).requests()] == [2003]
    # A line without usage straight under its parent is still its next block.
    del lines[2]["message"]["usage"]
    assert [r.usage.prompt_tokens for r in load(_write(tmp_path, lines)).requests()] == [2003]


def _backwards(first_ts: str, second_ts: str) -> list[dict[str, Any]]:
    """A prompt at 10:00:05 answered by a response (`req_1`) whose two lines are stamped
    `first_ts` and `second_ts`: earlier than its prompt (a skewed clock)."""
    return [
        _user("u1", None, "05.000", "hi"),
        _assistant("a1", "u1", first_ts, "msg_1", "req_1", {"type": "text", "text": "Hm."},
                   _usage(3, 100, 1000, 5)),
        _assistant("a2", "a1", second_ts, "msg_1", "req_1", {"type": "text", "text": "Ok."},
                   _usage(3, 100, 1000, 5)),
    ]


def test_a_request_starts_no_later_than_its_response_s_first_line(tmp_path: Path) -> None:
    # docs/adapters.md, Requests: `ts` is when the request could be sent; a context line stamped
    # after the response began (a skewed clock) does not put the request after its response
    # (found by a mutation pass: the request took the later time).
    session = load(_write(tmp_path, _backwards("03.000", "04.000")), strict=True)
    [request] = session.requests()
    assert (request.ts.strftime("%S.%f"), request.duration_ms) == ("03.000000", 1000)


def test_a_response_whose_lines_run_backwards_in_time_lasts_zero_ms(tmp_path: Path) -> None:
    # Found by a mutation pass: the duration went negative (the last line before the first).
    session = load(_write(tmp_path, _backwards("03.000", "02.000")), strict=True)
    [request] = session.requests()
    assert (request.ts.strftime("%S.%f"), request.duration_ms) == ("03.000000", 0)


def test_a_response_billed_nothing_is_context_not_a_request(tmp_path: Path) -> None:
    # A response whose usage is all zeros (not `<synthetic>`, no `isApiErrorMessage`) was
    # billed nothing: it stays in the context, flagged `usage_missing`, and is no request with
    # a zero-token prompt (found by a mutation pass: it became a request).
    lines = [
        _user("u1", None, "00.000", "hi"),
        _assistant("a1", "u1", "01.000", "msg_0", "req_0", {"type": "text", "text": "Cut."},
                   _usage(0, 0, 0, 0)),
        _user("u2", "a1", "02.000", "more"),
        _second_answer(),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert [r.request_id for r in session.requests()] == ["req_2"]
    cut = next(e for e in session.events if isinstance(e, AssistantMessage))
    assert [b.text for b in cut.blocks] == ["Cut."] and cut.usage_missing


def test_a_response_message_is_stamped_with_its_last_line(tmp_path: Path) -> None:
    # The response ends with its last streamed line: the message's `ts` is that line's (found
    # by a mutation pass: it took the first line's time, so a cache entry's age was counted
    # from when the response started).
    lines = _two_line_response(_usage(3, 100, 1000, 3), _usage(3, 100, 1000, 9))
    session = load(_write(tmp_path, lines), strict=True)
    first = next(e for e in session.events if isinstance(e, AssistantMessage))
    assert first.ts.strftime("%S.%f") == "02.000000"


def test_a_file_repeating_one_uuid_of_another_is_of_its_session(tmp_path: Path) -> None:
    # docs/adapters.md: a record uuid found in both files ties them, though nothing else does
    # (another sessionId, no parent across the files, no response read twice; found by a
    # mutation pass: the directory was refused as two sessions).
    _write(tmp_path, claude_lines(), "s-1.jsonl")
    copied = next(line for line in claude_lines() if line.get("uuid") == "a3")
    later = [
        {**copied, "sessionId": "s-2"},
        _user("v1", None, "20.000", "Anything else?", sessionId="s-2"),
        _assistant("v2", "v1", "21.000", "msg_9", "req_9", {"type": "text", "text": "No."},
                   _usage(3, 20, 3040, 3), sessionId="s-2"),
    ]
    _write(tmp_path, later, "s-2.jsonl")
    session = load(tmp_path, strict=True)
    assert [r.request_id for r in session.requests()] == ["req_1", "req_2", "req_9"]



def test_a_later_file_s_line_of_a_response_read_before_is_dropped_for_its_original(
    tmp_path: Path,
) -> None:
    # docs/adapters.md, resumed sessions: a response already read from an earlier file is not
    # read again, though a later file holds a line of it the earlier one has not; what hangs
    # off that line hangs off the response's line read first (found by a mutation pass: the
    # line was kept, or dropped leaving the next prompt to hang off a rewound branch).
    first = [
        _user("u1", None, "01.000", "Hi."),
        _assistant("a1", "u1", "02.000", "msg_1", "req_1", {"type": "text", "text": "A"},
                   _usage(3, 600, 0, 9)),
        _user("x1", "a1", "03.000", "Other question."),
        _assistant("x2", "x1", "04.000", "msg_x", "req_x", {"type": "text", "text": "X"},
                   _usage(3, 20, 600, 9)),
    ]
    later = [
        _assistant("a1b", "a1", "05.000", "msg_1", "req_1", {"type": "text", "text": "B"},
                   _usage(3, 600, 0, 9)),
        _user("u2", "a1b", "06.000", "Go on."),
        _assistant("a2", "u2", "07.000", "msg_2", "req_2", {"type": "text", "text": "C"},
                   _usage(3, 20, 600, 9)),
    ]
    _write(tmp_path, first, "s-1.jsonl")
    _write(tmp_path, later, "s-2.jsonl")
    session = load(tmp_path, strict=True)
    main = [e for e in session.events if e.thread == "main" and isinstance(e, AssistantMessage)]
    assert [[b.text for b in e.blocks] for e in main] == [["A"], ["C"]]
    # The question x1 asked after the first answer is a branch the user left.
    assert [r.thread for r in session.requests() if r.request_id == "req_x"] == ["main/branch-1"]


def _redacted_tool_turn(second_usage: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Ids redacted: a tool call (`a1`), its result, then a text line (`a2`) hanging off the
    result with `second_usage` (None: the line has no `usage`)."""
    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    lines = [
        _user("u1", None, "01.000", "List the files."),
        _assistant("a1", "u1", "02.000", "REDACTED", "REDACTED", call, _usage(3, 600, 1400, 40)),
        _user("r1", "a1", "03.000", [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "a.py"}]),
        _assistant("a2", "r1", "04.000", "REDACTED", "REDACTED",
                   {"type": "text", "text": "One file."}, second_usage),
    ]
    if second_usage is None:
        del lines[-1]["message"]["usage"]
    return lines


def test_a_redacted_line_without_usage_past_a_tool_result_is_a_request_of_its_own(
    tmp_path: Path,
) -> None:
    # docs/adapters.md: only straight under its parent is a line without usage its next block;
    # past the tool results it is another request (found by a mutation pass: it was merged
    # into the tool call's response).
    session = load(_write(tmp_path, _redacted_tool_turn(None)))
    first, second = session.requests()
    assert second.usage is None
    call, answer = (e for e in session.events if isinstance(e, AssistantMessage))
    assert [b.type for b in call.blocks] == ["tool_call"]
    assert [b.type for b in answer.blocks] == ["text"]


def test_a_redacted_line_under_a_line_whose_id_was_kept_is_another_response(
    tmp_path: Path,
) -> None:
    # A redactor rewrites an id alike on every line: a redacted message.id under a line whose
    # message.id was kept (its requestId redacted) is another response, though billed the same
    # prompt (found by a mutation pass: it was read as the kept line's next block).
    usage = _usage(3, 600, 1400, 40)
    lines = [
        _user("u1", None, "01.000", "Hi."),
        _assistant("a1", "u1", "02.000", "msg_1", "REDACTED", {"type": "text", "text": "A"},
                   usage),
        _assistant("a2", "a1", "03.000", "REDACTED", "REDACTED", {"type": "text", "text": "B"},
                   usage),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert len(session.requests()) == 2
    texts = [[b.text for b in e.blocks] for e in session.events if isinstance(e, AssistantMessage)]
    assert texts == [["A"], ["B"]]


def test_a_gap_after_another_agent_s_line_joins_its_own_agent(tmp_path: Path) -> None:
    # Two subagents interleave their lines; a line of the first lost its parent right after a
    # line of the second: it continues the latest line of its own agent, and the report says
    # so (docs/adapters.md; found by a mutation pass: reported as the first line left of a
    # sidechain whose first lines are missing).
    lines = _sidechain_with_a_tool_call("a7f3")
    lines[5]["parentUuid"] = "gone"  # s4, after its tool result s3 (line 5)
    other = _user("o1", None, "01.800", "Something else.", isSidechain=True, agentId="b9")
    lines.insert(5, other)
    path = _write(tmp_path, lines)
    session = load(path)
    assert set(_sidechains(session)) == {"agent-a7f3", "agent-b9"}
    assert [r.request_id for r in session.requests() if r.thread == "agent-a7f3"] == [
        "req_s", "req_s2"
    ]
    assert [str(e) for e in session.skipped] == [
        f"{path}:7: expected the line parentUuid 'gone' names: not in the file (a missing "
        "line); attached to its sidechain after line 5"
    ]


def test_a_response_line_after_a_gap_joins_the_sidechain_of_its_response(
    tmp_path: Path,
) -> None:
    # Inline sidechains without agentId: the second streamed line of a sidechain's response
    # lost its parent and comes right after another sidechain's line; its response, not the
    # line before it, tells which sidechain it continues (found by a mutation pass).
    side = {"isSidechain": True}
    lines = _sidechain_log()
    lines[4:4] = [
        _user("t1", None, "02.100", "Something else.", **side),
        _assistant("s2b", "gone", "02.200", "msg_s", "req_s",
                   {"type": "text", "text": "Really 2."}, _usage(3, 400, 0, 5), **side),
    ]
    session = load(_write(tmp_path, lines))
    assert _sidechains(session) == {
        "sidechain-s1": ["UserMessage", "RequestMarker", "AssistantMessage"],
        "sidechain-t1": ["UserMessage"],
    }
    answer = next(e for e in session.events if isinstance(e, AssistantMessage)
                  and e.thread == "sidechain-s1")
    assert [b.text for b in answer.blocks] == ["There are 2.", "Really 2."]


def test_a_parent_in_another_thread_of_the_file_is_no_missing_line(tmp_path: Path) -> None:
    # A main-chain line whose parentUuid names an inline sidechain's line: that line is in the
    # file, so nothing is reported (found by a mutation pass: a strict read refused it as a
    # missing line).
    lines = _sidechain_log()
    lines[4]["parentUuid"] = "s2"  # the Task's result u2
    session = load(_write(tmp_path, lines), strict=True)
    assert [r.request_id for r in session.requests() if r.thread == "main"] == ["req_1", "req_2"]


def test_a_gap_after_a_file_s_first_unreadable_line_is_not_reported_whatever_follows(
    tmp_path: Path,
) -> None:
    # A line whose parent is missing after the file's first unreadable line may name that line
    # (reported already): not reported again, though another unreadable line comes later (found
    # by a mutation pass: the last unreadable line, not the first, silenced the gaps).
    text = jsonl(claude_lines()).splitlines(keepends=True)
    text[0] = "{\n"  # line 1 unreadable
    text[5] = text[5].replace('"parentUuid": "a2"', '"parentUuid": "gone"')  # u2, line 6
    path = tmp_path / "gap.jsonl"
    path.write_text("".join(text) + "{\n", encoding="utf-8")  # line 8 unreadable
    reasons = [str(e) for e in load(path).skipped]
    assert [r.split(": ")[0] for r in reasons] == [f"{path}:1", f"{path}:8"]


def test_a_subagent_on_two_models_names_neither(tmp_path: Path) -> None:
    # A thread names its model where it differs from the header's (docs/log-format.md): a
    # subagent whose requests went to two models names none (found by a mutation pass: one of
    # the two was picked, in set order).
    lines = _sidechain_with_a_tool_call()
    lines[3]["message"]["model"] = "claude-haiku-4-5"
    lines[5]["message"]["model"] = "claude-opus-4-1"
    session = load(_write(tmp_path, lines), strict=True)
    start = next(e for e in session.events if isinstance(e, ThreadStart))
    assert start.model is None
    assert {r.model for r in session.requests() if r.thread == start.thread_id} == {
        "claude-haiku-4-5", "claude-opus-4-1"
    }


def test_a_synthetic_line_written_last_is_not_the_leaf(tmp_path: Path) -> None:
    # The active path ends at the last real line: a locally written error hanging off an
    # earlier line, written last, makes no branch of the answers after that line (found by a
    # mutation pass: taken as the leaf, it left req_2 on an abandoned branch).
    lines = claude_lines() + [
        _assistant("e1", "a2", "09.000", "msg_syn", "req_syn",
                   {"type": "text", "text": "API Error: 529"}, _usage(0, 0, 0, 0),
                   model="<synthetic>"),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert not any(isinstance(e, ThreadStart) for e in session.events)
    assert [r.thread for r in session.requests()] == ["main", "main"]


def test_a_branch_copies_the_history_up_to_its_fork_and_no_further(tmp_path: Path) -> None:
    # The user rewound to the answer a3 and asked again, while the main path goes on with
    # "Thanks.": the branch's copies end at a3 (found by a mutation pass: one event more).
    lines = claude_lines() + [
        _user("b1", "a3", "20.000", "Actually, count them."),
        _assistant("b2", "b1", "21.000", "msg_X", "req_x", {"type": "text", "text": "Two."},
                   _usage(3, 20, 3000, 2)),
        _user("m1", "a3", "30.000", "Thanks."),
        _assistant("m2", "m1", "31.000", "msg_Y", "req_y", {"type": "text", "text": "Ok."},
                   _usage(3, 20, 3050, 2)),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    copied = [e.copied_from for e in session.events
              if e.thread == "main/branch-1" and getattr(e, "copied_from", None)]
    context = UserMessage | AssistantMessage | ToolResult
    main = [e for e in session.events if e.thread == "main" and isinstance(e, context)]
    assert copied == [e.id for e in main[:4]]
    assert isinstance(main[4], UserMessage) and main[4].text == "Thanks."


def test_a_compaction_copied_into_a_branch_replaces_the_branch_s_copies(tmp_path: Path) -> None:
    # A branch forking after a compaction: its copy of the compaction names the copies of
    # the events it replaced, not the main thread's (found by a mutation pass).
    lines = claude_lines() + _compacted(1, "a3", 0)
    at = "2026-01-02T10:02:{:02d}Z"
    lines += [
        _user("b1", "kr1", "00.000", "Actually, count them.", timestamp=at.format(0)),
        _assistant("b2", "b1", "00.000", "msg_X", "req_x", {"type": "text", "text": "Two."},
                   _usage(3, 20, 3000, 2), timestamp=at.format(1)),
        _user("m1", "kr1", "00.000", "Thanks.", timestamp=at.format(2)),
        _assistant("m2", "m1", "00.000", "msg_Y", "req_y", {"type": "text", "text": "Ok."},
                   _usage(3, 20, 3050, 2), timestamp=at.format(3)),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    branch = [e for e in session.events if e.thread == "main/branch-1"]
    compaction = next(e for e in branch if isinstance(e, Compaction))
    ids = {e.id for e in branch}
    assert compaction.replaces and set(compaction.replaces) <= ids


def test_a_server_tool_result_block_is_kept_as_text(tmp_path: Path) -> None:
    # docs: server tool results (web_search_tool_result…) and future block types are kept as
    # text so their tokens count (found by a mutation pass: such a block could be dropped).
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
             "content": [{"type": "web_search_result", "url": "https://example.org/a"}]}
    lines = [
        _user("u1", None, "01.000", "Search."),
        _assistant("a1", "u1", "02.000", "msg_1", "req_1", found, _usage(3, 600, 0, 9)),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    answer = next(e for e in session.events if isinstance(e, AssistantMessage))
    (block,) = answer.blocks
    assert block.type == "text" and block.source_type == "web_search_tool_result"
    assert json.loads(block.text) == found
