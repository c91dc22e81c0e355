"""opencode export adapter: rules on small exports written here, then the real dev sample."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_adapters_common import (
    SAMPLES,
    needs_samples,
    opencode_doc,
    opencode_subtask,
    unpaired_before_request,
)

from replay import load, read_log, write_log
from replay._errors import LogFormatError
from replay.engine import ReplayConfig, replay_session
from replay.log import (
    AssistantMessage,
    Compaction,
    ThinkingBlock,
    ThreadStart,
    ToolResult,
    UserMessage,
)
from replay.strategies._prompts import LITERAL_CLEARED


def _write(tmp: Path, doc: dict[str, Any], name: str = "export.json") -> Path:
    path = tmp / name
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def test_step_finish_is_one_request_with_disjoint_usage(tmp_path: Path) -> None:
    session = load(_write(tmp_path, opencode_doc()), strict=True)
    first, second = session.requests()
    # Quirks: input excludes cache reads; output includes reasoning (as OpenAI reports it).
    assert (first.usage.input_tokens, first.usage.cache_read_tokens) == (2000, 0)
    assert (first.usage.output_tokens, first.usage.reasoning_tokens) == (30, 10)
    assert (second.usage.input_tokens, second.usage.cache_read_tokens) == (100, 2000)
    assert first.usage.cost_usd == "0.004"
    # opencode zen is an aggregator: priced as the model's maker, the original id kept.
    assert first.provider == "openai" and first.source_provider == "opencode"
    message = next(e for e in session.events if isinstance(e, AssistantMessage))
    thinking, call = message.blocks
    assert isinstance(thinking, ThinkingBlock) and thinking.estimated_tokens == 10
    assert thinking.summary == "**Listing files**"
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert (result.call_id, result.output) == (call.id, "a.txt\nb.txt")


def test_reasoning_larger_than_output_means_output_left_it_out(tmp_path: Path) -> None:
    # Reasoning is part of the output: a count larger than the output can only come from an
    # output that leaves reasoning out, and the billed output is then their sum.
    doc = opencode_doc()
    for tokens in (doc["messages"][1]["info"]["tokens"], doc["messages"][1]["parts"][3]["tokens"]):
        tokens.update(output=8, reasoning=702)
    first, _ = load(_write(tmp_path, doc), strict=True).requests()
    assert (first.usage.output_tokens, first.usage.reasoning_tokens) == (710, 702)


def _anthropic_doc(thinking: dict[str, Any]) -> dict[str, Any]:
    """A Claude step that thinks, then calls a tool (the tool loop sends the thinking back)."""
    doc = opencode_doc()
    for message in doc["messages"][1:]:
        message["info"].update(modelID="claude-sonnet-4-5", providerID="anthropic")
    first = doc["messages"][1]["parts"]
    first[1] = {"type": "reasoning", "id": "prt_3", **thinking}
    for tokens in (doc["messages"][1]["info"]["tokens"], first[3]["tokens"]):
        tokens.update(output=400, reasoning=0)  # the AI SDK reports no reasoning for Anthropic
    return doc


THOUGHT = "The user wants the files. " * 40


def test_anthropic_thinking_is_sent_back_as_text(tmp_path: Path) -> None:
    signed = {"text": THOUGHT, "metadata": {"anthropic": {"signature": "sig=="}}}
    session = load(_write(tmp_path, _anthropic_doc(signed)), strict=True)
    first, _ = session.requests()
    assert first.provider == "anthropic"
    assert first.usage.output_tokens == 400 and first.usage.reasoning_tokens is None
    message = next(e for e in session.events if isinstance(e, AssistantMessage))
    thinking = message.blocks[0]
    # Claude's thinking text, not a summary: rendered as it is, with its signature.
    assert isinstance(thinking, ThinkingBlock) and thinking.thinking == THOUGHT
    assert thinking.signature == "sig==" and thinking.estimated_tokens is None
    assert not hasattr(thinking, "summary")


def test_anthropic_redacted_thinking_is_sized_from_the_output(tmp_path: Path) -> None:
    redacted = {"text": "", "metadata": {"anthropic": {"redactedData": "opaque"}}}
    session = load(_write(tmp_path, _anthropic_doc(redacted)), strict=True)
    message = next(e for e in session.events if isinstance(e, AssistantMessage))
    thinking, call = message.blocks
    assert thinking.thinking == "" and thinking.redacted and thinking.signature == "opaque"
    # reasoning 0 is "not reported": the size is what the visible blocks leave of the output.
    assert thinking.estimated_from == "output_tokens - visible blocks"
    assert 350 < thinking.estimated_tokens < 400


def test_pruned_tool_output_is_cleared_from_the_prune_on(tmp_path: Path) -> None:
    doc = opencode_doc()
    # opencode pruned the `ls` output after the first loop (2 s after its last response)...
    doc["messages"][1]["parts"][2]["state"]["time"]["compacted"] = 1767348005000
    # ...so the next loop's requests sent "[Old tool result content cleared]" instead.
    later = copy.deepcopy(doc["messages"])
    for n, message in enumerate(later):
        message["info"]["id"] += "_2"
        message["info"]["time"] = {
            "created": 1767348006000 + 1000 * n,
            "completed": 1767348006500 + 1000 * n,
        }
        for part in message["parts"]:
            part["id"] += "_2"
            if "callID" in part:
                part["callID"] += "_2"
    del later[1]["parts"][2]["state"]["time"]["compacted"]
    doc["messages"] += later
    session = load(_write(tmp_path, doc), strict=True)
    pruned = next(e for e in session.events if isinstance(e, ToolResult))
    assert pruned.output == "a.txt\nb.txt"  # the log keeps the output
    assert pruned.cleared_at.isoformat() == "2026-01-02T10:00:05+00:00"

    def shown(s: Any) -> dict[str, list[list[str]]]:
        records = replay_session(s, ["recorded", "baseline"], ReplayConfig(keep_views=True))
        return {
            name: [
                [i.output for i in r.view if getattr(i, "call_id", None) == pruned.call_id]
                for r in records
                if r.strategy == name and r.kind == "request"
            ]
            for name in ("recorded", "baseline")
        }

    views = shown(session)
    # The request before the prune sent the output; the two after it the placeholder.
    full = "a.txt\nb.txt"
    assert views["recorded"] == [[], [full], [LITERAL_CLEARED], [LITERAL_CLEARED]]
    assert views["baseline"] == [[], [full], [full], [full]]  # what-ifs start from it all
    # `replay convert` keeps it: the native log replays the same.
    out = tmp_path / "native.jsonl"
    write_log(session, out)
    back = read_log(out, strict=True)
    assert next(e for e in back.events if isinstance(e, ToolResult)).cleared_at == pruned.cleared_at
    assert shown(back) == views


def test_subtask_task_message_without_tokens_is_history(tmp_path: Path) -> None:
    doc = opencode_doc()
    sid = doc["info"]["id"]
    doc["messages"].append(
        {
            "info": {
                "role": "user",
                "id": "msg_u2",
                "sessionID": sid,
                "time": {"created": 1767348004000},
            },
            "parts": [
                {
                    "type": "subtask",
                    "prompt": "Review.",
                    "description": "review",
                    "agent": "build",
                    "id": "prt_20",
                }
            ],
        }
    )
    doc["messages"].append(
        {
            "info": {
                "role": "assistant",
                "id": "msg_a3",
                "sessionID": sid,
                "modelID": "gpt-5.3-codex",
                "providerID": "opencode",
                "time": {"created": 1767348004100, "completed": 1767348009000},
                "tokens": {
                    "input": 0,
                    "output": 0,
                    "reasoning": 0,
                    "cache": {"read": 0, "write": 0},
                },
                "cost": 0,
            },
            "parts": [
                {
                    "type": "tool",
                    "callID": "call_t",
                    "tool": "task",
                    "id": "prt_21",
                    "state": {
                        "status": "completed",
                        "input": {"prompt": "Review."},
                        "output": "LGTM",
                        "metadata": {"sessionId": "ses_child"},
                        "time": {"start": 1767348004200, "end": 1767348009000},
                    },
                }
            ],
        }
    )
    path = _write(tmp_path, doc)
    session = load(path, strict=True)
    assert len(session.requests()) == 2
    assert session.header.missing_subsessions == ["ses_child"]
    # With the child export beside it, the subtask session is a thread of the same session.
    child = {
        "info": {"id": "ses_child", "parentID": sid, "time": {"created": 1767348004300}},
        "messages": [
            {
                "info": {
                    "role": "user",
                    "id": "msg_c1",
                    "sessionID": "ses_child",
                    "time": {"created": 1767348004300},
                },
                "parts": [{"type": "text", "text": "Review.", "id": "prt_c1"}],
            },
            {
                "info": {
                    "role": "assistant",
                    "id": "msg_c2",
                    "sessionID": "ses_child",
                    "modelID": "gpt-5.3-codex",
                    "providerID": "opencode",
                    "time": {"created": 1767348004400, "completed": 1767348008000},
                },
                "parts": [
                    {"type": "step-start", "id": "prt_c2"},
                    {"type": "text", "text": "LGTM", "id": "prt_c3"},
                    {
                        "type": "step-finish",
                        "id": "prt_c4",
                        "cost": 0.001,
                        "tokens": {
                            "input": 900,
                            "output": 3,
                            "reasoning": 0,
                            "cache": {"read": 0, "write": 0},
                        },
                    },
                ],
            },
        ],
    }
    _write(tmp_path, child, "child.json")
    # Other JSON beside the exports (e.g. Entire's metadata.json) is not an export: ignored.
    (tmp_path / "metadata.json").write_text('{"token_usage": {}}', encoding="utf-8")
    both = load(tmp_path, strict=True)
    start = next(e for e in both.events if isinstance(e, ThreadStart))
    assert start.thread_id == "session-ses_child" and start.parent_call_id == "call_t"
    assert len(both.requests()) == 3
    assert not hasattr(both.header, "missing_subsessions")


def test_a_problem_in_a_subtask_export_names_that_export(tmp_path: Path) -> None:
    # A call the child session never answered before its next request: reported at the
    # child export's line, not at the folder or the parent export.
    doc = opencode_doc()
    tokens = {"input": 900, "output": 3, "reasoning": 0, "cache": {"read": 0, "write": 0}}
    call = {"callID": "call_c", "tool": "bash", "state": {"status": "running", "input": {}}}
    parts = [
        {"type": "step-start"},
        {"type": "tool", **call},
        {"type": "step-finish", "tokens": tokens},
        {"type": "step-start"},
        {"type": "text", "text": "ok"},
        {"type": "step-finish", "tokens": tokens},
    ]
    info = {"id": "ses_child", "parentID": doc["info"]["id"], "time": {"created": 1767348004300}}
    child = {
        "info": info,
        "messages": [
            {
                "info": {"role": "user", "id": "msg_c1", "time": {"created": 1767348004300}},
                "parts": [{"type": "text", "text": "Review."}],
            },
            {
                "info": {
                    "role": "assistant",
                    "id": "msg_c2",
                    "modelID": "gpt-5.3-codex",
                    "providerID": "opencode",
                    "time": {"created": 1767348004400},
                },
                "parts": [{**p, "id": f"prt_c{n}"} for n, p in enumerate(parts)],
            },
        ],
    }
    _write(tmp_path, doc)
    path = _write(tmp_path, child, "child.json")
    lines = path.read_text().splitlines()
    line = max(n for n, text in enumerate(lines, 1) if text.strip() == '"info": {')  # msg_c2
    (problem,) = load(tmp_path).skipped
    assert str(problem).startswith(f"{path}:{line}: expected a tool result for call 'call_c'")


def test_summary_message_is_a_compaction(tmp_path: Path) -> None:
    doc = opencode_doc()
    summary = copy.deepcopy(doc["messages"][2])
    summary["info"]["id"] = "msg_sum"
    summary["info"]["summary"] = True
    summary["info"]["time"] = {"created": 1767348005000, "completed": 1767348006000}
    summary["parts"][1]["text"] = "We listed two files."
    for n, p in enumerate(summary["parts"]):
        p["id"] = f"prt_s{n}"
    doc["messages"].append(summary)
    session = load(_write(tmp_path, doc), strict=True)
    c = next(e for e in session.events if isinstance(e, Compaction))
    assert c.summary == "We listed two files."
    assert c.message is None and c.message_role == "assistant"  # sent as it is, the assistant's
    assert len(c.replaces) == 4  # user, 2 responses, 1 tool result: every earlier context event
    assert len(session.requests()) == 3  # the summarising call was billed too
    assert [getattr(r, "compaction_call", False) for r in session.requests()] == [
        False,
        False,
        True,
    ]


_LOST = "expected `tokens` (an object: the request's usage)"
_PART = "step-finish part prt_8"


def _without_tokens(doc: dict[str, Any], lost: str) -> str:
    """The second response (msg_a2) with its usage lost; what the report names it by."""
    message = doc["messages"][2]
    finish = message["parts"][-1]
    if lost == "older export":  # no step parts: the message's own tokens were the request's
        message["parts"] = [p for p in message["parts"] if not p["type"].startswith("step-")]
        del message["info"]["tokens"]
        return f"{_LOST} on an assistant message without step parts"
    if lost == "absent":
        del finish["tokens"]
    elif lost == "retyped":
        finish["tokens"]["input"] = "100"
        return "expected `input` to be a number, got str in `tokens` on the message's " + _PART
    else:
        finish["tokens"] = None
    return (
        "expected `tokens` (an object: the request's usage) on the message's step-finish part prt_8"
    )


@pytest.mark.parametrize("lost", ["absent", "null", "retyped", "older export"])
def test_a_step_without_tokens_is_a_request_without_usage(tmp_path: Path, lost: str) -> None:
    # A damaged record: the step was billed, its usage lost or garbled. It stays a request (it
    # was silently dropped; a garbled count skipped the whole message), with no usage, and the
    # damage is reported at the message.
    doc = opencode_doc()
    where = _without_tokens(doc, lost)
    path = _write(tmp_path, doc)
    lines = path.read_text().splitlines()
    infos = [n for n, text in enumerate(lines, 1) if text.strip() == '"info": {']  # msg_a2: [3]
    expected = f"{path}:{infos[3]}: {where}"
    session = load(path)
    first, second = session.requests()
    assert first.usage is not None and second.usage is None
    answer = [e for e in session.events if isinstance(e, AssistantMessage)][-1]
    assert answer.request_id == second.request_id and answer.blocks[0].text == "Two files."
    assert [str(p) for p in session.skipped] == [f"{expected}; the request was kept without usage"]
    with pytest.raises(LogFormatError) as err:
        load(path, strict=True)
    assert str(err.value) == expected
    # The engine replays it, its output counted from the logged response.
    records = replay_session(session, ["baseline"], ReplayConfig())
    assert [r.request.estimated_output for r in records if r.kind == "request"] == [False, True]


def test_a_step_with_all_zero_tokens_that_answered_is_a_request_without_usage(
    tmp_path: Path,
) -> None:
    # A provider that reports no usage leaves zeros on a step that did answer: that call was
    # made (it was dropped, as if free). Not damage: counted in the header, strict reads it.
    doc = opencode_doc()
    finish = doc["messages"][2]["parts"][-1]
    assert finish["type"] == "step-finish"
    finish["tokens"] = {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
    session = load(_write(tmp_path, doc), strict=True)
    first, second = session.requests()
    assert first.usage is not None and second.usage is None
    answer = [e for e in session.events if isinstance(e, AssistantMessage)][-1]
    assert answer.request_id == second.request_id and answer.usage_missing
    assert not session.skipped
    assert session.header.ignored_records == {
        "step-finish/zero-tokens (a request without usage)": 1
    }
    # A zero-token step that answered nothing is no request.
    doc["messages"][2]["parts"] = [p for p in doc["messages"][2]["parts"] if p["type"] != "text"]
    assert len(load(_write(tmp_path, doc), strict=True).requests()) == 1


def test_tool_error_state(tmp_path: Path) -> None:
    doc = opencode_doc()
    state = doc["messages"][1]["parts"][2]["state"]
    state.update(status="error", error="boom")
    del state["output"]
    session = load(_write(tmp_path, doc), strict=True)
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert result.is_error and result.output == "boom"


# --------------------------------------------------------------------------------------------------
# Real sample

OPENCODE = SAMPLES / "opencode"


@needs_samples
def test_real_sample() -> None:
    path = next(OPENCODE.glob("*_full.json"))
    session = load(path, strict=True)
    assert session.header.agent == "opencode" and session.header.agent_version == "1.2.26"
    requests = session.requests()
    assert len(requests) == 63  # step-finish parts (formats.md table)
    meta = json.loads(next(OPENCODE.glob("*_metadata.json")).read_text())["token_usage"]
    assert sum(r.usage.input_tokens for r in requests) == meta["input_tokens"] == 139604
    assert sum(r.usage.cache_read_tokens for r in requests) == meta["cache_read_tokens"]
    # `tokens.output` holds the reasoning (Entire's output total is the same sum), and
    # opencode's `total` is input + output + cache: the provider's total, reasoning once.
    assert sum(r.usage.output_tokens for r in requests) == meta["output_tokens"] == 21517
    assert sum(r.usage.reasoning_tokens for r in requests) == 9381
    assert all(r.usage.reasoning_tokens <= r.usage.output_tokens for r in requests)
    assert all(
        r.usage.raw["total"] == r.usage.prompt_tokens + r.usage.output_tokens for r in requests
    )
    # Entire's api_call_count also counts the 4 zero-token `task` messages of /review subtasks.
    assert meta["api_call_count"] == 67
    assert len(session.header.missing_subsessions) == 4
    # opencode's own cost charges the reasoning again at the output rate (kept as logged).
    cost = sum(Decimal(r.usage.cost_usd) for r in requests)
    assert abs(cost - Decimal("1.2218486")) < Decimal("0.0000001")
    assert unpaired_before_request(session) == []
    assert {r.provider for r in requests} == {"openai"}
    assert session.header.hidden_prefix_tokens > 1000


@pytest.mark.parametrize("cut", [0.3, 0.6, 0.95])
def test_cut_export_keeps_the_complete_messages(tmp_path: Path, cut: float) -> None:
    text = json.dumps(opencode_doc(), indent=2)
    path = tmp_path / "cut.json"
    path.write_text(text[: int(len(text) * cut)], encoding="utf-8")
    session = load(path)
    assert len(session.skipped) >= 1
    assert session.skipped[0].line is not None


@pytest.mark.parametrize("bad", ["NaN", "7" * 5000])
def test_an_export_with_a_value_python_reads_but_json_has_not_keeps_its_other_messages(
    tmp_path: Path, bad: str
) -> None:
    """NaN (not JSON) or an integer of 5,000 digits in one message: that message is reported
    and the others are read (NaN was read as a float and written back as null; the integer
    was a traceback)."""
    text = json.dumps(opencode_doc(), indent=2)
    marker = '"modelID": '
    at = text.rindex(marker) + len(marker)
    end = text.index(",", at) if text.index(",", at) < text.index("\n", at) else text.index(
        "\n", at)
    path = tmp_path / "bad.json"
    path.write_text(text[:at] + bad + text[end:], encoding="utf-8")
    session = load(path)
    assert session.skipped and "expected a complete" in str(session.skipped[0])
    assert session.requests()
    with pytest.raises(LogFormatError):
        load(path, strict=True)


def test_directory_of_unrelated_exports_is_refused(tmp_path: Path) -> None:
    first = opencode_doc()
    other = json.loads(json.dumps(first).replace(first["info"]["id"], "ses_other"))
    _write(tmp_path, first, "a.json")
    _write(tmp_path, other, "b.json")
    with pytest.raises(LogFormatError) as err:
        load(tmp_path)
    assert "holds 2 unrelated sessions: a.json, b.json" in str(err.value)
    assert f"replay batch {tmp_path}" in str(err.value)
    # A subtask session's export (its `parentID` names the first) joins the first one.
    _write(tmp_path, opencode_subtask(first), "a-child.json")
    with pytest.raises(LogFormatError) as err:
        load(tmp_path)
    assert "2 unrelated sessions: a.json (+1 subtask), b.json" in str(err.value)
    (tmp_path / "b.json").unlink()
    assert len(load(tmp_path, strict=True).requests()) == 4


@given(st.text(alphabet="ab\n", max_size=200), st.lists(st.integers(0, 200), max_size=20))
def test_line_numbers_counted_on_equal_counting_from_the_start(text, positions) -> None:
    """The export reader counts lines on from the last position (in order, as it reads; from the
    start again when asked about an earlier one): the same numbers as counting each afresh."""
    from replay.adapters.opencode import _LineCounter

    line_of = _LineCounter(text)
    for pos in sorted(positions) + positions:
        pos = min(pos, len(text))
        assert line_of(pos) == text.count("\n", 0, pos) + 1


def _user_message(parts: list[dict[str, Any]]) -> dict[str, Any]:
    sid = opencode_doc()["info"]["id"]
    return {
        "info": {
            "role": "user",
            "id": "msg_u9",
            "sessionID": sid,
            "time": {"created": 1767348004000},
        },
        "parts": parts,
    }


@pytest.mark.parametrize(
    ("parts", "text", "injected"),
    [
        # A part the user turned off (`ignored`) is not sent.
        (
            [{"type": "text", "text": "sent"}, {"type": "text", "text": "off", "ignored": True}],
            "sent",
            False,
        ),
        # Text opencode adds itself (`synthetic`) is injected, unless the user typed some too.
        ([{"type": "text", "text": "added", "synthetic": True}], "added", True),
        (
            [
                {"type": "text", "text": "added", "synthetic": True},
                {"type": "text", "text": "typed"},
            ],
            "added\ntyped",
            False,
        ),
    ],
)
def test_user_parts_ignored_and_synthetic(
    tmp_path: Path, parts: list[dict[str, Any]], text: str, injected: bool
) -> None:
    doc = opencode_doc()
    doc["messages"].append(_user_message([dict(p, id=f"prt_9{n}") for n, p in enumerate(parts)]))
    session = load(_write(tmp_path, doc), strict=True)
    last = [e for e in session.events if type(e).__name__ == "UserMessage"][-1]
    assert (last.text, last.injected) == (text, injected)


def test_a_task_message_without_tokens_or_steps_is_history(tmp_path: Path) -> None:
    # Quirk: the `task` message opencode writes for a `/command` subtask, in an export without
    # step parts nor tokens: history, not a request whose usage was lost.
    doc = opencode_doc()
    task = copy.deepcopy(doc["messages"][2])
    task["info"].update(id="msg_task", time={"created": 1767348004100})
    del task["info"]["tokens"]
    task["parts"] = [
        {
            "type": "tool",
            "id": "prt_t1",
            "callID": "call_t",
            "tool": "task",
            "state": {
                "status": "completed",
                "input": {"prompt": "Review."},
                "output": "LGTM",
                "time": {"start": 1767348004200, "end": 1767348009000},
            },
        }
    ]
    doc["messages"].append(task)
    session = load(_write(tmp_path, doc), strict=True)
    assert len(session.requests()) == 2
    result = [e for e in session.events if isinstance(e, ToolResult)][-1]
    assert (result.tool_name, result.output) == ("task", "LGTM")


def test_a_later_step_is_sent_after_the_events_of_the_step_before(tmp_path: Path) -> None:
    # One assistant message holding two steps: the second request is sent once the first
    # step's tool result is in, not when the message was created.
    doc = opencode_doc()
    first, second = doc["messages"][1], doc["messages"][2]
    first["parts"] += [dict(p, id=f"{p['id']}b") for p in second["parts"]]
    first["info"]["time"]["completed"] = 1767348003000
    del doc["messages"][2]
    session = load(_write(tmp_path, doc), strict=True)
    one, two = session.requests()
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert one.ts.isoformat() == "2026-01-02T10:00:00.100000+00:00"
    assert two.ts == result.ts
    # The first step's answer came before its tool ran; the last one ends with the message.
    answers = [e for e in session.events if isinstance(e, AssistantMessage)]
    assert [a.ts.isoformat() for a in answers] == [
        "2026-01-02T10:00:00.100000+00:00",
        "2026-01-02T10:00:03+00:00",
    ]


def test_anthropic_thinking_metadata_marks_the_route_whatever_the_provider_id(
    tmp_path: Path,
) -> None:
    # A Claude model through an aggregator (provider id `openrouter`, model id with a prefix):
    # the reasoning part's `anthropic` metadata says it is Claude's thinking text.
    signed = {"text": THOUGHT, "metadata": {"anthropic": {"signature": "sig=="}}}
    doc = _anthropic_doc(signed)
    for message in doc["messages"][1:]:
        message["info"].update(modelID="anthropic/claude-sonnet-4.5", providerID="openrouter")
    session = load(_write(tmp_path, doc), strict=True)
    message = next(e for e in session.events if isinstance(e, AssistantMessage))
    thinking = message.blocks[0]
    assert thinking.thinking == THOUGHT and thinking.signature == "sig=="


def test_a_session_exported_twice_is_read_once(tmp_path: Path) -> None:
    # Quirk: a later export of the same session repeats the earlier one's messages.
    doc = opencode_doc()
    _write(tmp_path, doc, "early.json")
    later = copy.deepcopy(doc)
    later["messages"].append(_user_message([{"type": "text", "text": "more", "id": "prt_91"}]))
    _write(tmp_path, later, "later.json")
    session = load(tmp_path, strict=True)
    assert len(session.requests()) == 2
    texts = [e.text for e in session.events if type(e).__name__ == "UserMessage"]
    assert texts == ["List the files.", "more"]


# --------------------------------------------------------------------------------------------------
# Rules pinned by a mutation pass


def test_ignored_text_parts_are_not_sent_and_synthetic_ones_are_injected(tmp_path: Path) -> None:
    doc = opencode_doc()
    parts = doc["messages"][0]["parts"]
    parts.append({"type": "text", "id": "prt_1b", "text": "draft", "ignored": True})
    doc["messages"].insert(2, {
        "info": {"role": "user", "id": "msg_u2", "sessionID": "ses_test1",
                 "time": {"created": 1767348002050}},
        "parts": [{"type": "text", "id": "prt_1c", "text": "Called the Read tool",
                   "synthetic": True}],
    })
    session = load(_write(tmp_path, doc), strict=True)
    users = [(e.text, e.injected) for e in session.events if isinstance(e, UserMessage)]
    assert users == [("List the files.", False), ("Called the Read tool", True)]


def test_an_interrupted_step_without_tokens_is_history_not_a_request(tmp_path: Path) -> None:
    doc = opencode_doc()
    doc["messages"].append({
        "info": {"role": "assistant", "id": "msg_a3", "sessionID": "ses_test1",
                 "modelID": "gpt-5.3-codex", "providerID": "opencode",
                 "time": {"created": 1767348004000}},
        "parts": [{"type": "step-start", "id": "prt_9"},
                  {"type": "text", "id": "prt_10", "text": "Let me"}],
    })
    session = load(_write(tmp_path, doc), strict=True)
    assert session.skipped == [] and len(session.requests()) == 2
    last = [e for e in session.events if isinstance(e, AssistantMessage)][-1]
    assert last.blocks[0].text == "Let me"
    assert last.request_id is None and last.usage_missing is True


def test_anthropic_reasoning_metadata_is_thinking_on_any_route(tmp_path: Path) -> None:
    # Claude through an aggregator whose model id does not name the maker first: the part's
    # Anthropic metadata says it is the thinking sent back, not a summary.
    doc = opencode_doc()
    info, parts = doc["messages"][1]["info"], doc["messages"][1]["parts"]
    info.update(modelID="anthropic/claude-sonnet-4.5", providerID="openrouter")
    parts[1]["metadata"] = {"anthropic": {"signature": "sig=="}}
    session = load(_write(tmp_path, doc), strict=True)
    thinking = next(e for e in session.events if isinstance(e, AssistantMessage)).blocks[0]
    assert isinstance(thinking, ThinkingBlock)
    assert (thinking.thinking, thinking.signature) == ("**Listing files**", "sig==")
    assert not hasattr(thinking, "summary")


def test_a_later_step_is_sent_after_the_tool_results_of_the_step_before(tmp_path: Path) -> None:
    doc = opencode_doc()
    first, second = doc["messages"][1:3]
    first["parts"] += second["parts"]  # one message, two steps
    first["info"]["time"]["completed"] = second["info"]["time"]["completed"]
    del doc["messages"][2]
    session = load(_write(tmp_path, doc), strict=True)
    one, two = session.requests()
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert one.ts.timestamp() * 1000 == 1767348000100  # the message's creation
    assert two.ts == result.ts  # the first step's tool result (1767348001500)


def test_a_result_pruned_at_a_request_s_own_time_counts_as_cleared_in_its_residual(
    tmp_path: Path,
) -> None:
    from replay.adapters._common import prompt_residuals

    sent = 1767348007000  # the third request: the first of the second loop

    def simulated(compacted: int) -> list[int]:
        doc = opencode_doc()
        state = doc["messages"][1]["parts"][2]["state"]
        state["output"] = "a-file-name.txt\n" * 300
        later = copy.deepcopy(doc["messages"])
        state["time"]["compacted"] = compacted
        for n, message in enumerate(later):
            message["info"]["id"] += "_2"
            message["info"]["time"] = {"created": sent + 1000 * (n - 1),
                                       "completed": sent + 500 + 1000 * (n - 1)}
            for part in message["parts"]:
                part["id"] += "_2"
                if "callID" in part:
                    part["callID"] += "_2"
        doc["messages"] += later
        session = load(_write(tmp_path, doc), strict=True)
        assert session.requests()[2].ts.timestamp() * 1000 == sent
        return [r.simulated for r in prompt_residuals(session)]

    before, at, after = simulated(sent - 1000), simulated(sent), simulated(sent + 1000)
    assert at == before  # pruned when the request was sent: it read the placeholder
    assert after[2] > at[2]  # pruned later: it still read the whole output
    assert after[:2] == at[:2]


@pytest.mark.parametrize("message", [0, 1])
def test_an_unknown_part_type_is_reported_and_skipped(tmp_path: Path, message: int) -> None:
    # docs/adapters.md (Bad input): an unknown record type is one LogFormatError naming
    # file:line; lenient skips it and counts it, --strict refuses it. A part type a newer
    # opencode writes may be model context: it is not silently "not context".
    doc = opencode_doc()
    parts = doc["messages"][message]["parts"]
    parts.insert(1, {"type": "brand-new", "id": "prt_x", "text": "seen by the model?"})
    path = _write(tmp_path, doc)
    session = load(path)
    assert len(session.skipped) == 1
    assert "unknown opencode part type 'brand-new'" in str(session.skipped[0])
    assert len(session.requests()) == 2  # the message around the part is kept
    with pytest.raises(LogFormatError, match=r"export\.json:\d+: unknown opencode part type"):
        load(path, strict=True)


def test_an_export_cut_inside_its_first_message_names_the_cut(tmp_path: Path) -> None:
    # docs/adapters.md (Bad input): a file with nothing readable fails with one error naming
    # file:line and what was expected. The lenient read's verdict ("found none") must still
    # say why: the line where the document was cut.
    doc = opencode_doc()
    doc["messages"][0]["parts"][0]["text"] = "x" * 5000
    text = json.dumps(doc, indent=2)
    path = tmp_path / "cut.json"
    path.write_text(text[: text.index("x" * 100)], encoding="utf-8")
    cut_line = text[: text.index("x" * 100)].count("\n") + 1
    with pytest.raises(LogFormatError) as err:
        load(path)
    assert f"cut.json:{cut_line}: expected a complete opencode export JSON document" in str(
        err.value
    )
    # the string cut short opens with the last character of that line
    opened_at = len(text[: text.index("x" * 100)].rsplit("\n", 1)[1])
    assert f"(Unterminated string starting at column {opened_at})" in str(err.value)


@pytest.mark.parametrize(("status", "got"), [("weird", "'weird'"), (None, "none")])
def test_a_tool_part_with_an_unknown_or_missing_status_is_reported(
    tmp_path: Path, status: str | None, got: str
) -> None:
    # docs/adapters.md (Bad input): a wrong-typed or missing field is reported. opencode's
    # ToolState is pending | running | completed | error; any other was read as completed.
    doc = opencode_doc()
    tool = next(p for p in doc["messages"][1]["parts"] if p["type"] == "tool")
    if status is None:
        del tool["state"]["status"]
    else:
        tool["state"]["status"] = status
    path = _write(tmp_path, doc)
    session = load(path)
    assert len(session.skipped) == 1
    assert f"`state.status` to be one of pending, running, completed, error, got {got}" in str(
        session.skipped[0]
    )
    # Lenient: read as the finished call it most likely was (its output is kept).
    assert [r.output for r in session.events if isinstance(r, ToolResult)] == ["a.txt\nb.txt"]
    with pytest.raises(LogFormatError, match=r"export\.json:\d+: expected tool part"):
        load(path, strict=True)


def test_bookkeeping_parts_are_counted_not_context_nor_reported(tmp_path: Path) -> None:
    # docs/adapters.md, opencode: `patch`, `snapshot`, `agent`, `retry`, `subtask` and
    # `compaction` parts are bookkeeping (found by a mutation pass: four had no test).
    doc = opencode_doc()
    kinds = ("patch", "snapshot", "agent", "retry", "subtask", "compaction")
    extra = [{"type": k, "id": f"prt_x{n}", "sessionID": "ses_test1", "text": f"not sent {k}"}
             for n, k in enumerate(kinds)]
    doc["messages"][2]["parts"][1:1] = extra  # after the step-start of the second response
    doc["messages"][0]["parts"] += [dict(p, id=p["id"] + "u") for p in extra]
    session = load(_write(tmp_path, doc), strict=True)  # nothing to report
    counts = session.header.ignored_records
    assert {k: counts.get(f"part/{k}") for k in kinds} == dict.fromkeys(kinds, 1)
    assert {k: counts.get(f"user-part/{k}") for k in kinds} == dict.fromkeys(kinds, 1)
    assert len(session.requests()) == 2
    texts = [
        getattr(e, "text", "") + "".join(getattr(b, "text", "") for b in getattr(e, "blocks", []))
        for e in session.events
    ]
    assert not any("not sent" in t for t in texts)


def test_a_request_is_named_by_its_step_finish_part(tmp_path: Path) -> None:
    # docs/adapters.md, Requests: `request_id` is the agent's own id when the provider's is
    # not logged: opencode's step part (found by a mutation pass: no test looked at it).
    session = load(_write(tmp_path, opencode_doc()), strict=True)
    assert [r.request_id for r in session.requests()] == ["prt_5", "prt_8"]


def test_a_later_summary_replaces_the_earlier_compaction_too(tmp_path: Path) -> None:
    # docs/adapters.md, Compactions: previous compactions are in `replaces` when superseded.
    doc = opencode_doc()
    for n in (1, 2):
        summary = copy.deepcopy(doc["messages"][2])
        summary["info"]["id"] = f"msg_sum{n}"
        summary["info"]["summary"] = True
        summary["info"]["time"] = {"created": 1767348005000 + 2000 * n,
                                   "completed": 1767348006000 + 2000 * n}
        summary["parts"][1]["text"] = f"Summary {n}."
        for k, p in enumerate(summary["parts"]):
            p["id"] = f"prt_s{n}{k}"
        doc["messages"].append(summary)
    session = load(_write(tmp_path, doc), strict=True)
    first, second = [e for e in session.events if isinstance(e, Compaction)]
    assert first.id in second.replaces


def test_a_file_attached_to_a_prompt_is_a_placeholder_labelled_estimated(tmp_path: Path) -> None:
    # The export holds the file's path, not the content opencode sent: the prompt's text is
    # a placeholder, and `replay calibrate` sized the tokenizer by it (it was not labelled).
    doc = opencode_doc()
    doc["messages"][0]["parts"].append(
        {"type": "file", "id": "prt_f", "sessionID": "ses_test1", "mime": "text/plain",
         "filename": "notes.txt", "url": "file:///w/notes.txt"}
    )
    session = load(_write(tmp_path, doc), strict=True)
    prompt = next(e for e in session.events if isinstance(e, UserMessage))
    assert prompt.text == "List the files.\n[file notes.txt]"
    assert prompt.estimated_text is True
    # A prompt without one is what was sent.
    plain = next(e for e in load(_write(tmp_path, opencode_doc())).events
                 if isinstance(e, UserMessage))
    assert getattr(plain, "estimated_text", False) is False


def test_a_negative_total_token_count_garbles_the_usage(tmp_path: Path) -> None:
    # A token count below zero is malformed input, even one the reader does not use
    # (`tokens.total`): it passed --strict silently.
    doc = opencode_doc()
    doc["messages"][2]["parts"][-1]["tokens"]["total"] = -1
    path = _write(tmp_path, doc)
    session = load(path)
    assert [r.usage is None for r in session.requests()] == [False, True]
    assert len(session.skipped) == 1
    with pytest.raises(LogFormatError, match=r"expected `total` to be >= 0, got -1 in `tokens`"):
        load(path, strict=True)


def test_a_garbled_step_cost_is_reported_and_the_counts_kept(tmp_path: Path) -> None:
    # A negative step `cost` passed --strict silently and was kept as opencode's cost.
    doc = opencode_doc()
    doc["messages"][2]["parts"][-1]["cost"] = -0.001
    path = _write(tmp_path, doc)
    session = load(path)
    second = session.requests()[1].usage
    assert (second.input_tokens, second.cache_read_tokens, second.cost_usd) == (100, 2000, None)
    assert len(session.skipped) == 1
    assert str(session.skipped[0]).endswith(
        "expected `cost` to be a number >= 0, got -0.001 on the message's step-finish part "
        "prt_8; opencode's cost is not kept"
    )
    with pytest.raises(LogFormatError, match=r"expected `cost` to be a number >= 0"):
        load(path, strict=True)


def test_bad_utf8_is_reported_at_its_line(tmp_path: Path) -> None:
    # docs/adapters.md, Bad input: bad UTF-8 is reported naming file:line.
    text = json.dumps(opencode_doc(), indent=2).encode("utf-8")
    at = text.index(b"Two files.")
    path = tmp_path / "export.json"
    path.write_bytes(text[:at] + b"\xff" + text[at:])
    session = load(path)
    line = text.count(b"\n", 0, at) + 1
    assert [e.line for e in session.skipped] == [line]
    assert "UTF-8" in str(session.skipped[0])


def test_an_export_damaged_after_its_messages_keeps_them_all(tmp_path: Path) -> None:
    # Trailing garbage after a complete `messages` list: the document is reported once and
    # every message is read; the list's end is no damaged message.
    path = tmp_path / "export.json"
    path.write_text(json.dumps(opencode_doc(), indent=2) + "\n#garbage", encoding="utf-8")
    session = load(path)
    assert len(session.skipped) == 1
    assert "complete opencode export JSON document" in str(session.skipped[0])
    assert len(session.requests()) == 2


def test_a_subtask_export_read_alone_is_its_own_session(tmp_path: Path) -> None:
    # A child session's export names its parent (`info.parentID`, formats.md §4); without the
    # parent's export it is read as a session of its own, its messages the main thread.
    child = opencode_subtask(opencode_doc())
    session = load(_write(tmp_path, child), strict=True)
    assert session.header.session_id == "ses_child"
    assert len(session.requests()) == 2
    assert {e.thread for e in session.events} == {"main"}


def test_a_subtask_of_a_subtask_hangs_off_its_parent_session_s_thread(tmp_path: Path) -> None:
    # Without the `task` call that started it, a child session's thread is linked by its
    # `parentID` (formats.md §4): a grandchild hangs off the child's thread, not main.
    main = opencode_doc()
    child = opencode_subtask(main)
    grandchild = opencode_subtask(child, "ses_grand")
    for name, doc in (("a", main), ("b", child), ("c", grandchild)):
        _write(tmp_path, doc, f"{name}.json")
    session = load(tmp_path)
    starts = {e.thread_id: e.parent_thread for e in session.events if isinstance(e, ThreadStart)}
    assert starts == {"session-ses_child": "main", "session-ses_grand": "session-ses_child"}
    # An export holds no system prompt (formats.md §6): a subtask thread's is estimated too.
    assert all(e.estimated == ["system"] for e in session.events if isinstance(e, ThreadStart))


def test_a_message_written_twice_in_one_export_is_reported_and_read_once(
    tmp_path: Path,
) -> None:
    # docs/adapters.md, Bad input: a duplicate record is reported, read once.
    doc = opencode_doc()
    doc["messages"].append(copy.deepcopy(doc["messages"][2]))
    session = load(_write(tmp_path, doc))
    assert len(session.requests()) == 2
    assert ["duplicate record" in str(e) for e in session.skipped] == [True]


def test_a_prompt_that_is_only_an_attached_file_is_the_user_s(tmp_path: Path) -> None:
    # A file the user attached is the user's prompt, not injected context.
    doc = opencode_doc()
    doc["messages"][0]["parts"] = [
        {"type": "file", "id": "prt_f", "filename": "a.txt", "url": "file:///w/a.txt"}
    ]
    session = load(_write(tmp_path, doc), strict=True)
    prompt = next(e for e in session.events if isinstance(e, UserMessage))
    assert (prompt.text, prompt.injected) == ("[file a.txt]", False)


def test_a_step_finish_closes_its_step_without_a_step_start_after_it(tmp_path: Path) -> None:
    # One request per step-finish (formats.md §4): parts after a step-finish belong to the
    # next step even when no step-start opens it, and its own step-finish is a request.
    doc = opencode_doc()
    parts = doc["messages"][2]["parts"]
    finish = parts[-1]
    second = dict(copy.deepcopy(finish), id="prt_9")
    parts += [{"type": "text", "id": "prt_10", "text": "More."}, second]
    session = load(_write(tmp_path, doc), strict=True)
    assert [r.request_id for r in session.requests()][1:] == ["prt_8", "prt_9"]


def test_an_unfinished_step_does_not_bill_the_message_s_tokens_again(tmp_path: Path) -> None:
    # A step-start without its step-finish (an interrupted step), then a finished step: the
    # step-finish is the one request; the message's tokens (its steps' sum) are not a second.
    doc = opencode_doc()
    parts = doc["messages"][2]["parts"]
    parts[:0] = [{"type": "step-start", "id": "prt_s0"}, {"type": "text", "id": "prt_t0",
                                                          "text": "Let me"}]
    session = load(_write(tmp_path, doc), strict=True)
    assert [r.request_id for r in session.requests()] == ["prt_5", "prt_8"]


@pytest.mark.parametrize("tokens", [[], 0, ""])
def test_an_older_export_s_wrong_typed_tokens_are_a_request_reported(
    tmp_path: Path, tokens: Any
) -> None:
    # An older export's message (no step parts) whose `tokens` is of the wrong type is a
    # billed request without usage, reported (docs/adapters.md, opencode).
    doc = opencode_doc()
    message = doc["messages"][2]
    message["parts"] = [p for p in message["parts"] if not p["type"].startswith("step-")]
    message["info"]["tokens"] = tokens
    session = load(_write(tmp_path, doc))
    assert [r.usage is None for r in session.requests()] == [False, True]
    assert len(session.skipped) == 1


def test_a_response_keeps_its_message_s_finish_reason(tmp_path: Path) -> None:
    # info.finish (formats.md §4) is the response's stop reason.
    doc = opencode_doc()
    doc["messages"][2]["info"]["finish"] = "stop"
    session = load(_write(tmp_path, doc), strict=True)
    answer = [e for e in session.events if isinstance(e, AssistantMessage)][-1]
    assert answer.stop_reason == "stop"


def test_reasoning_on_an_anthropic_route_is_thinking_without_its_metadata(tmp_path: Path) -> None:
    # The route (a Claude model through Anthropic) makes the text the thinking opencode sends
    # back (docs/adapters.md, opencode), also when the part lost its `anthropic` metadata.
    session = load(_write(tmp_path, _anthropic_doc({"text": THOUGHT})), strict=True)
    message = next(e for e in session.events if isinstance(e, AssistantMessage))
    assert message.blocks[0].thinking == THOUGHT


def test_only_a_task_call_names_a_subtask_session(tmp_path: Path) -> None:
    # Subtask sessions start from the `task` tool (formats.md §4); another tool's metadata
    # naming a session is no missing subtask export.
    doc = opencode_doc()
    doc["messages"][1]["parts"][2]["state"]["metadata"] = {"sessionId": "ses_other"}
    session = load(_write(tmp_path, doc), strict=True)
    assert not hasattr(session.header, "missing_subsessions")


def test_a_tool_result_comes_when_its_tool_ended(tmp_path: Path) -> None:
    # state.time.end (formats.md §4: tool{state{status, input, output, time}}) is when the
    # result was there.
    session = load(_write(tmp_path, opencode_doc()), strict=True)
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert result.ts.isoformat() == "2026-01-02T10:00:01.500000+00:00"


def test_a_prompt_whose_text_parts_are_all_ignored_adds_no_message(tmp_path: Path) -> None:
    # Ignored text parts are not sent (docs/adapters.md, opencode): a prompt of only those
    # adds no (empty) user message.
    doc = opencode_doc()
    again = copy.deepcopy(doc["messages"][0])
    again["info"]["id"] = "msg_u2"
    again["parts"][0].update(id="prt_u2", ignored=True)
    doc["messages"].insert(1, again)
    session = load(_write(tmp_path, doc), strict=True)
    assert len([e for e in session.events if isinstance(e, UserMessage)]) == 1


def test_a_tool_output_that_is_no_string_is_kept_as_json(tmp_path: Path) -> None:
    # An output logged as an object is still what the tool returned: kept as its JSON text,
    # not dropped.
    doc = opencode_doc()
    doc["messages"][1]["parts"][2]["state"]["output"] = {"files": ["a.txt"]}
    session = load(_write(tmp_path, doc), strict=True)
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert json.loads(result.output) == {"files": ["a.txt"]}


def test_a_subtask_session_exported_twice_starts_one_thread(tmp_path: Path) -> None:
    # Two exports of one session are one thread (docs/adapters.md, opencode): a child exported
    # twice is started once.
    main = opencode_doc()
    child = opencode_subtask(main)
    for name, doc in (("a", main), ("b", child), ("c", child)):
        _write(tmp_path, doc, f"{name}.json")
    session = load(tmp_path)
    starts = [e.thread_id for e in session.events if isinstance(e, ThreadStart)]
    assert starts == ["session-ses_child"]



def test_a_subtask_export_cut_in_its_first_message_does_not_stop_the_session(
    tmp_path: Path,
) -> None:
    # A lenient read reports damage and reads on (docs/adapters.md, Bad input): a child
    # export cut inside its first message still names its session, and the parent is read.
    main = opencode_doc()
    _write(tmp_path, main, "a.json")
    text = json.dumps(opencode_subtask(main), indent=2)
    cut = text.index('"parts"')
    (tmp_path / "b.json").write_text(text[:cut], encoding="utf-8")
    session = load(tmp_path)
    assert len(session.requests()) == 2
    assert {Path(e.path).name for e in session.skipped} == {"b.json"}


def test_each_message_s_events_name_the_line_its_record_starts_on(tmp_path: Path) -> None:
    # The lines were found by searching the text for each `"info"` key: one inside a part (a
    # tool's metadata) was taken for the next message's, and every later message's events named
    # a line too early.
    doc = opencode_doc()
    tool = next(p for p in doc["messages"][1]["parts"] if p["type"] == "tool")
    tool["state"]["metadata"] = {"info": {"exit": 0}, "parts": ["a", "b"]}
    path = _write(tmp_path, doc)
    text = path.read_text(encoding="utf-8").splitlines()
    starts = [n for n, line in enumerate(text, 1) if line == '      "info": {']  # messages' own
    assert len(starts) == len(doc["messages"])
    # Every message gives events (its text, its request, its answer): each names its line.
    assert sorted({event.line for event in load(path, strict=True).events}) == starts


def test_a_message_without_its_time_takes_the_previous_one_and_is_reported(
    tmp_path: Path,
) -> None:
    # opencode writes `info.time.created` on every message: one without it is damaged. It took
    # the previous event's time silently (the request's TTL judged on a borrowed time).
    doc = opencode_doc()
    del doc["messages"][1]["info"]["time"]["created"]
    path = _write(tmp_path, doc)
    session = load(path)
    (problem,) = session.skipped
    assert str(problem).endswith(
        "expected `info.time.created`; the previous message's time was taken"
    )
    user = next(e for e in session.events if isinstance(e, UserMessage))
    assert session.requests()[0].ts == user.ts
    with pytest.raises(LogFormatError, match=r"expected `info\.time\.created`$"):
        load(path, strict=True)


def test_a_message_is_named_by_the_same_line_in_a_damaged_export(tmp_path: Path) -> None:
    # A well-formed export names a message by the line of its first key (`"info"`, where the
    # export starts its text); a damaged one, read message by message, named its `{` line, one
    # line earlier: the same message under two lines as the document's end was cut or not.
    doc = opencode_doc()
    del doc["messages"][1]["info"]["time"]["created"]
    text = json.dumps(doc, indent=2)
    whole, damaged = tmp_path / "whole.json", tmp_path / "damaged.json"
    whole.write_text(text, encoding="utf-8")
    damaged.write_text(text + "\n#garbage", encoding="utf-8")
    (problem,) = load(whole).skipped
    damage, again = load(damaged).skipped
    assert "complete opencode export JSON document" in str(damage)
    assert again.line == problem.line
    assert text.splitlines()[problem.line - 1].strip().startswith('"info"')
