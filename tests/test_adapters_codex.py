"""Codex rollout adapter: rules on small rollouts written here, then the real dev samples."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_adapters_common import SAMPLES, codex_lines, jsonl, needs_samples, unpaired_before_request

from replay import LogFormatError, load
from replay.log import (
    AssistantMessage,
    Compaction,
    RequestMarker,
    ThinkingBlock,
    ToolCallBlock,
    ToolResult,
    UserMessage,
)
from replay.strategies._view import UserItem


def _write(tmp: Path, lines: list[dict[str, Any]]) -> Path:
    path = tmp / "rollout.jsonl"
    path.write_text(jsonl(lines), encoding="utf-8")
    return path


def _item(ts: str, payload: dict[str, Any], kind: str = "response_item") -> dict[str, Any]:
    return {"timestamp": f"2026-01-02T10:00:{ts}Z", "type": kind, "payload": payload}


def _tokens(ts: str, inp: int, cached: int, out: int, total_in: int) -> dict[str, Any]:
    last = {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "output_tokens": out,
        "reasoning_output_tokens": 0,
        "total_tokens": inp + out,
    }
    total = dict(last, input_tokens=total_in)
    return _item(
        ts,
        {"type": "token_count", "info": {"last_token_usage": last, "total_token_usage": total}},
        "event_msg",
    )


def test_requests_usage_and_dedupe(tmp_path: Path) -> None:
    session = load(_write(tmp_path, codex_lines()), strict=True)
    requests = session.requests()
    assert len(requests) == 2  # the repeated token_count is not a request
    u = requests[0].usage
    # Quirk: input_tokens INCLUDES cached_input_tokens.
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens, u.reasoning_tokens) == (
        176,
        1024,
        40,
        5,
    )
    assert u.cache_write_5m_tokens == u.cache_write_1h_tokens == 0
    assert all(r.model == "gpt-5.5" for r in requests)
    assert session.header.system == "You are a careful coding agent."
    assert session.header.provider == "openai" and session.header.token_count_events == 3
    assert "tools" in session.header.estimated and "system" not in session.header.estimated


def test_response_items_become_history(tmp_path: Path) -> None:
    session = load(_write(tmp_path, codex_lines()), strict=True)
    kinds = [type(e).__name__ for e in session.events]
    assert kinds == [
        "UserMessage",
        "UserMessage",
        "RequestMarker",
        "AssistantMessage",
        "ToolResult",
        "RequestMarker",
        "AssistantMessage",
    ]
    developer, user = [e for e in session.events if isinstance(e, UserMessage)]
    assert developer.injected and developer.role == "developer"
    assert not user.injected  # typed by the human (an event_msg user_message says so)
    message = next(e for e in session.events if isinstance(e, AssistantMessage))
    thinking, call = message.blocks
    assert isinstance(thinking, ThinkingBlock) and thinking.estimated_tokens == 5
    assert thinking.estimated_from == "reasoning_tokens"
    assert isinstance(call, ToolCallBlock) and call.arguments == {"cmd": "ls"}
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert (result.call_id, result.tool_name, result.output) == (
        "call_1",
        "exec_command",
        "a.txt\nb.txt",
    )


def test_logged_reasoning_text_is_taken_out_of_the_count_the_encrypted_item_gets(
    tmp_path: Path,
) -> None:
    # A response with two reasoning items, one whose raw `content` is logged: the rollout's
    # reasoning_output_tokens (30) is all the response's reasoning, so the encrypted item is
    # sized by what the logged text leaves of it, not by all 30 on top of that text.
    from replay.tokens import counter_for

    lines = codex_lines()
    said = "Run ls, then read both files."
    reasoning = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Listing."}],
                 "content": [{"type": "reasoning_text", "text": said}]}
    lines.insert(5, _item("00.900", reasoning))
    for line in lines[-4:-2]:  # the first request's token_count (and its repeat)
        for key in ("last_token_usage", "total_token_usage"):
            line["payload"]["info"][key]["reasoning_output_tokens"] = 30
    session = load(_write(tmp_path, lines), strict=True)
    message = next(e for e in session.events if isinstance(e, AssistantMessage))
    logged, hidden = (b for b in message.blocks if isinstance(b, ThinkingBlock))
    assert logged.thinking == said and logged.estimated_tokens is None
    rest = 30 - counter_for("gpt-5.5").count(said)  # the summary is not counted: not read back
    assert 0 < rest < 30
    assert (hidden.estimated_tokens, hidden.estimated_from) == (
        rest, "reasoning_tokens - thinking text"
    )


def test_base64_files_and_images_are_a_placeholder_labelled_estimated(tmp_path: Path) -> None:
    # A PDF attached as an `input_file` data URL was dumped as JSON text (tens of thousands of
    # tokens the model never read as text): a placeholder, like images, labelled estimated.
    pdf = "JVBERi0xLjQK" + "A" * 20_000
    lines = codex_lines()
    lines[7]["payload"]["output"] = [
        {"type": "input_text", "text": "read:"},
        {"type": "input_file", "file_data": "data:application/pdf;base64," + pdf},
    ]
    lines[3]["payload"]["content"].append(
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
    )
    session = load(_write(tmp_path, lines), strict=True)
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert result.output == f"read:\n[input_file application/pdf {len(pdf)} base64 chars]"
    assert result.estimated_text is True
    user = [e for e in session.events if isinstance(e, UserMessage)][1]
    assert user.text == "List the files.\n[input_image image/png 12 base64 chars]"
    assert user.estimated_text is True


def test_token_count_after_tool_outputs_belongs_to_the_response_before(tmp_path: Path) -> None:
    lines = codex_lines()[:5] + [
        _item("01.000", {"type": "function_call", "name": "a", "call_id": "c1", "arguments": "{}"}),
        _item("01.010", {"type": "function_call_output", "call_id": "c1", "output": "1"}),
        # a late call of the same response, after the first output (streamed tool execution)
        _item("01.020", {"type": "function_call", "name": "b", "call_id": "c2", "arguments": "{}"}),
        _item("01.030", {"type": "function_call_output", "call_id": "c2", "output": "2"}),
        _tokens("01.100", 900, 0, 20, 900),
        _message("02.000", "assistant", "ok"),
        _tokens("02.100", 950, 896, 5, 1850),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert len(session.requests()) == 2
    first = next(e for e in session.events if isinstance(e, AssistantMessage))
    assert [b.name for b in first.blocks] == ["a", "b"]


def test_a_call_id_reused_by_a_later_response_pairs_each_output_with_its_call(
    tmp_path: Path,
) -> None:
    """A provider that numbers calls per response (`call_0` each time): each output answers
    the call before it; none is dropped as a duplicate, none gets a placeholder."""
    call = {"type": "function_call", "name": "exec_command", "call_id": "call_0"}
    lines = codex_lines()[:5] + [
        _item("01.000", {**call, "arguments": '{"cmd": "ls"}'}),
        _item("01.010", {"type": "function_call_output", "call_id": "call_0", "output": "a.txt"}),
        _tokens("01.100", 900, 0, 20, 900),
        _item("02.000", {**call, "arguments": '{"cmd": "cat a.txt"}'}),
        _item("02.010", {"type": "function_call_output", "call_id": "call_0", "output": "alpha"}),
        _tokens("02.100", 950, 896, 5, 1850),
        _message("03.000", "assistant", "ok"),
        _tokens("03.100", 990, 896, 5, 2840),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    results = [(e.call_id, e.output) for e in session.events if isinstance(e, ToolResult)]
    assert results == [("call_0", "a.txt"), ("call_0#2", "alpha")]
    assert len(session.requests()) == 3


@pytest.mark.parametrize(
    ("first", "second", "logged", "answered", "paired_reports"),
    [
        ("call_0", "call_0", "call_0", "call_0#2", []),
        ("call_x", "call_y", "call_z", "call_y",
         ["9: expected a tool call 'call_z'; paired with 'call_y'"]),
        ("call_x", "call_y", "REDACTED", "call_y", []),
    ],
    ids=["reused-id", "unknown-id", "redacted-id"],
)
def test_an_output_answers_the_call_still_waiting_not_one_a_request_went_without(
    tmp_path: Path, first: str, second: str, logged: str, answered: str,
    paired_reports: list[str],
) -> None:
    # The first call is never answered: the request after it sent a placeholder for it, so it
    # no longer waits, and the output logged after the second call answers that one (not the
    # first, where it would be a second result, dropped). So whether the output names the id a
    # provider reuses every response (`call_0`, the second call `call_0#2`), or an id that is
    # unknown (or REDACTED) and is paired by order with the oldest call still waiting.
    call = {"type": "function_call", "name": "exec_command", "arguments": "{}"}
    lines = codex_lines()[:5] + [
        _item("01.000", {**call, "call_id": first}),
        _tokens("01.100", 900, 0, 20, 900),
        _item("02.000", {**call, "call_id": second}),
        _item("02.010", {"type": "function_call_output", "call_id": logged, "output": "alpha"}),
        _tokens("02.100", 950, 896, 5, 1850),
        _message("03.000", "assistant", "ok"),
        _tokens("03.100", 990, 896, 5, 2840),
    ]
    path = _write(tmp_path, lines)
    session = load(path)
    results = [(e.call_id, e.output, e.synthetic) for e in session.events
               if isinstance(e, ToolResult)]
    assert results == [(first, "", "missing tool result"), (answered, "alpha", None)]
    assert [str(e) for e in session.skipped] == [f"{path}:{report}" for report in [
        *paired_reports,
        f"6: expected a tool result for call '{first}' (exec_command) before request req-2; "
        "a placeholder error result was added",
    ]]


def test_changed_settings_and_lost_attempts_mark_the_next_request(tmp_path: Path) -> None:
    meta = dict(codex_lines()[0]["payload"])
    lines = codex_lines()[:5] + [
        _item("01.000", {"type": "function_call", "name": "a", "call_id": "c1", "arguments": "{}"}),
        _item("01.010", {"type": "function_call_output", "call_id": "c1", "output": "1"}),
        _tokens("01.100", 900, 0, 20, 900),
        # Same totals again: rate limits of an attempt the log lost (its retry follows).
        _tokens("01.200", 900, 0, 20, 900),
        _message("02.000", "assistant", "ok"),
        _tokens("02.100", 950, 896, 5, 1850),
        # The second turn re-writes session_meta: the git state changes (not in the prompt),
        # then a setting appears (it is).
        _item("03.000", dict(meta, git={"branch": "b"}), "session_meta"),
        _message("03.001", "user", "next"),
        _item("03.002", dict(meta, git={"branch": "b"}, memory_mode="enabled"), "session_meta"),
        _message("04.000", "assistant", "ok"),
        _tokens("04.100", 990, 0, 5, 2840),
    ]
    requests = load(_write(tmp_path, lines), strict=True).requests()
    assert [getattr(r, "unlogged_attempt", False) for r in requests] == [False, True, False]
    assert [getattr(r, "unlogged_change", None) for r in requests] == [
        None,
        None,
        "session_meta.memory_mode changed before this request",
    ]


def test_a_token_count_written_twice_with_its_timestamp_is_a_duplicate_record(
    tmp_path: Path,
) -> None:
    """The same line again (timestamp included) is one record, reported; it is not the
    rate-limit repeat of a lost attempt (which comes at another time), so the next request
    is not marked as one."""
    count = _tokens("01.100", 900, 0, 20, 900)
    lines = codex_lines()[:5] + [
        _item("01.000", {"type": "function_call", "name": "a", "call_id": "c1", "arguments": "{}"}),
        _item("01.010", {"type": "function_call_output", "call_id": "c1", "output": "1"}),
        count,
        count,
        _message("02.000", "assistant", "ok"),
        _tokens("02.100", 950, 896, 5, 1850),
    ]
    session = load(_write(tmp_path, lines))
    assert [str(e).split(": ", 1)[1] for e in session.skipped] == [
        "duplicate record: same token_count as line 8"
    ]
    assert not any(getattr(r, "unlogged_attempt", False) for r in session.requests())
    with pytest.raises(LogFormatError, match="duplicate record: same token_count as line 8"):
        load(_write(tmp_path, lines), strict=True)


@pytest.mark.parametrize("repeats_the_total", [False, True])
def test_zero_usage_after_compaction_is_not_a_request(
    tmp_path: Path, repeats_the_total: bool
) -> None:
    lines = codex_lines()
    previous_total = next(
        line["payload"]["info"]["total_token_usage"]
        for line in reversed(lines)
        if line["payload"].get("type") == "token_count"
    )
    human = [{"type": "input_text", "text": "List the files."}]
    lines += [
        _item(
            "03.000",
            {
                "message": "",
                "replacement_history": [
                    {"type": "message", "role": "user", "content": human},
                    {
                        "type": "message",
                        "role": "developer",
                        "content": [
                            {"type": "input_text", "text": "<permissions instructions>new"}
                        ],
                    },
                ],
            },
            "compacted",
        ),
        _tokens("03.100", 0, 0, 0, 2500),  # the context estimate, not a call
        _message("03.200", "user", "More?"),
        _message("04.000", "assistant", "No."),
        _tokens("04.100", 400, 128, 2, 2900),
    ]
    # Zero input and output: the post-compaction estimate, with a new total or (as in the a7
    # sample) the previous one again, which is not a lost attempt either.
    estimate = lines[-4]["payload"]["info"]
    if repeats_the_total:
        estimate["total_token_usage"] = dict(previous_total)
    else:
        estimate["total_token_usage"]["input_tokens"] = 2600
    session = load(_write(tmp_path, lines), strict=True)
    assert len(session.requests()) == 3
    assert not getattr(session.requests()[-1], "unlogged_attempt", False)
    c = next(e for e in session.events if isinstance(e, Compaction))
    assert c.message == ""  # the replacement history holds what stands for the summary
    assert _kept_before_compaction(session) == ["List the files."]  # repeated by the new history
    assert _compacted_history(session) == ["<permissions instructions>new"]
    assert c.summary_missing is True


def _last_view(session: Any) -> list[Any]:
    """The view `recorded` sent at the session's last request."""
    from replay.engine import ReplayConfig, replay_session

    records = replay_session(session, ["recorded"], ReplayConfig(keep_views=True))
    return [r for r in records if r.kind == "request"][-1].view


def _message(ts: str, role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return _item(ts, {"type": "message", "role": role, "content": [{"type": kind, "text": text}]})


def _history(*texts: str) -> list[dict[str, Any]]:
    """A replacement history of user messages."""
    return [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]}
        for t in texts
    ]


def _kept_before_compaction(session: Any) -> list[str]:
    """The texts of the user messages before the session's first compaction that it did not
    replace (they stay in place)."""
    c = next(e for e in session.events if isinstance(e, Compaction))
    return [
        e.text
        for e in session.events[: session.events.index(c)]
        if isinstance(e, UserMessage) and e.id not in c.replaces
    ]


def _compacted_history(session: Any) -> list[str]:
    """The texts of the messages a compaction's new history brought (after it)."""
    return [e.text for e in session.events if getattr(e, "compacted_history", False)]


@pytest.mark.parametrize(
    "new_history",
    [
        # Remote compaction mid-turn (a7, Codex 0.142): the initial context goes right before
        # the last user message, so that the summary stays last.
        ["List the files.", "<permissions instructions>new", "Now count them."],
        # build_compacted_history (local compaction): initial context, user messages, summary.
        ["<permissions instructions>new", "List the files.", "Now count them.", "SUMMARY"],
    ],
    ids=["mid-turn", "initial-context-first"],
)
def test_compacted_history_is_sent_in_its_own_order(tmp_path: Path, new_history: list[str]) -> None:

    def role(text: str) -> str:
        return "developer" if text.startswith("<permissions") else "user"

    lines = codex_lines() + [
        _message("03.000", "user", "Now count them."),
        _item("03.001", {"type": "user_message", "message": "Now count them."}, "event_msg"),
        _message("03.500", "assistant", "Counting."),
        _tokens("03.600", 1400, 1024, 5, 3900),
        _item(
            "04.000",
            {
                "message": "",
                "replacement_history": [
                    {
                        "type": "message",
                        "role": role(t),
                        "content": [{"type": "input_text", "text": t}],
                    }
                    for t in new_history
                ],
            },
            "compacted",
        ),
        _tokens("04.100", 0, 0, 0, 3900),  # the context estimate
        _message("05.000", "assistant", "Two."),
        _tokens("05.100", 600, 0, 2, 4500),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    sent = [getattr(i, "text", None) for i in _last_view(session)]
    # What Codex sent after compacting: the new history in its order (the messages of the log's
    # own, as the fit of unlogged context may add estimated ones).
    assert [t for t in sent if t in new_history] == new_history
    kept = _kept_before_compaction(session)
    # Leading repeats stay in place; the rest follows the compaction, repeats included.
    assert kept == (["List the files."] if new_history[0] == "List the files." else [])
    assert _compacted_history(session) == new_history[len(kept) :]


def test_an_older_compacted_without_replacement_history_rebuilds_it(tmp_path: Path) -> None:
    # Older Codex logged only the summary (`message`); the history it sent next was rebuilt by
    # build_compacted_history: the initial context, the newest real user messages within 20k
    # estimated tokens (the one that does not fit middle-truncated), then the summary. It used
    # to be the summary alone: the re-sent context and user messages were missing.

    long_prompt = "x" * 90_000  # 22,500 estimated tokens: more than the whole budget
    lines = codex_lines() + [
        _message("03.000", "user", long_prompt),
        _item("03.001", {"type": "user_message", "message": long_prompt}, "event_msg"),
        _message("03.500", "assistant", "Done."),
        _tokens("03.600", 1400, 1024, 5, 3900),
        _message("03.700", "user", "Now count them."),
        _item("03.701", {"type": "user_message", "message": "Now count them."}, "event_msg"),
        _item("04.000", {"message": "SUMMARY"}, "compacted"),
        _tokens("04.100", 0, 0, 0, 3900),  # the context estimate
        _message("05.000", "assistant", "Two."),
        _tokens("05.100", 600, 0, 2, 4500),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    sent = [i.text for i in _last_view(session) if isinstance(i, UserItem)]
    budget_left = 20_000 - 4  # "Now count them." is 15 characters: 4 estimated tokens
    truncated = f"{'x' * (budget_left * 2)}…{22_500 - budget_left} tokens truncated…"
    truncated += "x" * (budget_left * 2)
    # "List the files." is not kept: the two newer prompts spent the whole budget.
    assert sent == ["<permissions instructions>none", truncated, "Now count them.", "SUMMARY"]
    c = next(e for e in session.events if isinstance(e, Compaction))
    assert c.history_rebuilt is True and c.message == "" and c.summary == "SUMMARY"
    # The opening context stayed in place: the rebuilt history starts with it.
    assert _kept_before_compaction(session) == ["<permissions instructions>none"]


def _counts(ts: str, last: tuple[int, ...] | None, total: tuple[int, ...] | None) -> dict[str, Any]:
    """A token_count with `last` / running `total` as (input incl. cached, cached, output,
    reasoning); `info` is null when both are None."""

    def usage(n: tuple[int, ...]) -> dict[str, int]:
        keys = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")
        return dict(zip(keys, n, strict=True), total_tokens=n[0] + n[2])

    info: dict[str, Any] | None = None
    if last is not None or total is not None:
        info = {} if total is None else {"total_token_usage": usage(total)}
        if last is not None:
            info["last_token_usage"] = usage(last)
    return _item(ts, {"type": "token_count", "info": info, "rate_limits": {}}, "event_msg")


def _turn_with_lost_usage(
    lost: dict[str, Any], after: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Three responses: A (usage logged, running total 1000/0/20/5), B (its token_count is
    `lost`), C (`after`: the lines from its answer on)."""
    return codex_lines()[:5] + [
        _item("01.000", {"type": "function_call", "name": "a", "call_id": "c1", "arguments": "{}"}),
        _item("01.010", {"type": "function_call_output", "call_id": "c1", "output": "1"}),
        _counts("01.100", (1000, 0, 20, 5), (1000, 0, 20, 5)),
        _item("02.000", {"type": "reasoning", "summary": [], "encrypted_content": None}),
        _item("02.010", {"type": "function_call", "name": "b", "call_id": "c2", "arguments": "{}"}),
        _item("02.020", {"type": "function_call_output", "call_id": "c2", "output": "2"}),
        lost,
        _message("03.000", "assistant", "done"),
        *after,
    ]


# B's usage (1100 input, 896 of it cached, 30 output, 12 of it reasoning) is what the running
# total grows by besides C's own (1200 input, 1024 cached, 10 output).
_B = (1100, 896, 30, 12)
_C = (1200, 1024, 10, 0)
_TOTAL_ABC = (3300, 1920, 60, 17)


def _garbled(count: dict[str, Any]) -> dict[str, Any]:
    count["payload"]["info"]["last_token_usage"]["input_tokens"] = "1100"
    return count


_NO_LAST = r"expected `info\.last_token_usage`"


@pytest.mark.parametrize(
    ("lost", "problem"),
    [
        (_counts("02.100", None, None), _NO_LAST),  # info null
        (_counts("02.100", None, (1000, 0, 20, 5)), _NO_LAST),  # info without last_token_usage
        # A garbled count (the line was skipped, and B with it): its own total shows B's usage.
        (
            _garbled(_counts("02.100", _B, (2100, 896, 50, 17))),
            r"expected `input_tokens` to be a number, got str in `info\.last_token_usage`",
        ),
    ],
    ids=["info-null", "no-last-usage", "garbled-last-usage"],
)
def test_token_count_without_usage_keeps_the_request_and_derives_it(
    tmp_path: Path, lost: dict[str, Any], problem: str
) -> None:
    # Quirk: the model answered B but its token_count holds no usage. Dropping B removed a
    # billed request; the running total shows its usage exactly.
    lines = _turn_with_lost_usage(lost, [_counts("03.100", _C, _TOTAL_ABC)])
    path = _write(tmp_path, lines)
    session = load(path)
    requests = session.requests()
    assert len(requests) == 3
    b = requests[1].usage
    inp, cached, out, reasoning = _B
    assert (b.input_tokens, b.cache_read_tokens, b.output_tokens, b.reasoning_tokens) == (
        inp - cached,
        cached,
        out,
        reasoning,
    )
    assert b.derived_from == "total_token_usage"  # not logged: labelled
    assert requests[2].usage.input_tokens == 176 and not hasattr(requests[2].usage, "derived_from")
    message = next(
        e
        for e in session.events
        if getattr(e, "request_id", None) == "req-2" and isinstance(e, AssistantMessage)
    )
    assert message.blocks[0].estimated_tokens == reasoning  # sized from the derived usage
    # Reported at the token_count's line (a lenient read keeps going) …
    assert [(e.line, "derived from total_token_usage" in str(e)) for e in session.skipped] == [
        (12, True)
    ]
    # … and a strict read refuses the log there.
    with pytest.raises(LogFormatError, match=r"rollout\.jsonl:12: " + problem):
        load(path, strict=True)


def test_a_response_without_a_token_count_before_the_next_one_is_a_request(
    tmp_path: Path,
) -> None:
    # B's count is missing and the model went on to read B's tool output (C). B used to be
    # merged into C: one request, C's text before B's tool result. B is a request of its own,
    # its usage what the total grew by besides C's.
    lines = _turn_with_lost_usage(_counts("02.100", None, None), [])
    del lines[11]  # B's token_count: the capture lost it
    lines += [_counts("03.100", _C, _TOTAL_ABC)]
    path = _write(tmp_path, lines)
    session = load(path)
    a, b, c = session.requests()
    inp, cached, out, reasoning = _B
    assert (b.usage.input_tokens, b.usage.cache_read_tokens) == (inp - cached, cached)
    assert (b.usage.output_tokens, b.usage.derived_from) == (out, "total_token_usage")
    assert c.usage.input_tokens == _C[0] - _C[1]
    order = [
        (type(e).__name__, getattr(e, "request_id", None))
        for e in session.events
        if isinstance(e, AssistantMessage | ToolResult)
    ]
    assert order == [
        ("AssistantMessage", a.request_id),
        ("ToolResult", None),
        ("AssistantMessage", b.request_id),
        ("ToolResult", None),
        ("AssistantMessage", c.request_id),
    ]
    assert [e.line for e in session.skipped] == [9]  # where B's response starts
    assert "expected a token_count for request req-2 before the next response" in str(
        session.skipped[0]
    )
    with pytest.raises(LogFormatError, match=r"rollout\.jsonl:9: expected a token_count"):
        load(path, strict=True)


@pytest.mark.parametrize(
    ("after", "requests"),
    [
        ([], 2),  # no total after it (C's answer has no count: history, not a request)
        ([_counts("03.100", _C, (2200, 1024, 30, 5))], 3),  # the total grew by C alone
        # C's count lost too: the next total's difference is two requests'
        (
            [
                _counts("03.100", None, None),
                _message("04.000", "assistant", "D"),
                _counts("04.100", _C, (4400, 2944, 70, 17)),
            ],
            4,
        ),
        # A running total that shrank (here its cached count) shows no request's usage.
        ([_counts("03.100", _C, (3300, 1000, 60, 17))], 3),
        # Nor one that grew by more reasoning than output (reasoning is part of the output).
        ([_counts("03.100", _C, (3300, 1920, 60, 40))], 3),
        # What the total grew by besides C is no request's usage: output without input …
        ([_counts("03.100", _C, (2200, 1024, 40, 5))], 3),
        # … or less cached input than C's own count says (totals that disagree)
        ([_counts("03.100", _C, (2700, 924, 40, 5))], 3),
    ],
    ids=["no-later-total", "total-without-it", "two-lost", "total-shrank", "reasoning-over-output",
         "no-input-growth", "cached-shrank"],
)
def test_token_count_without_usage_not_derivable_keeps_the_request_without_usage(
    tmp_path: Path, after: list[dict[str, Any]], requests: int
) -> None:
    lines = _turn_with_lost_usage(_counts("02.100", None, None), after)
    session = load(_write(tmp_path, lines))
    assert len(session.requests()) == requests
    b = session.requests()[1]
    assert b.usage is None and b.usage_missing is True
    assert session.skipped[0].line == 12
    assert "without usage" in str(session.skipped[0])


def test_token_count_without_info_before_the_usage_is_a_rate_limit_update(
    tmp_path: Path,
) -> None:
    # Rate limits (info null) between B's items and B's own count: the total grew by that count
    # alone, so it is B's usage, and nothing was lost. Before any response: not a request either.
    lines = _turn_with_lost_usage(
        _counts("02.100", None, None), [_counts("03.100", _C, (2200, 1024, 30, 5))]
    )
    del lines[12]  # no answer C: the count after the null one is B's own
    lines.insert(5, _counts("00.500", None, None))
    session = load(_write(tmp_path, lines), strict=True)
    assert [r.usage.input_tokens for r in session.requests()] == [1000, 176]
    assert session.header.ignored_records["event_msg/token_count-without-info"] == 2
    # The same before the session's first total (nothing counted before it) …
    lines = codex_lines()
    lines.insert(8, _counts("01.250", None, None))
    session = load(_write(tmp_path, lines), strict=True)
    assert [r.usage.input_tokens for r in session.requests()] == [176, 276]
    # … and before a first total that counts what came before the file (a rollout whose start
    # is missing): the total cannot confirm it, no response since the null count does. It was
    # a request of its own without usage, and the usage a made-up request's.
    for line in lines:
        total = line["payload"].get("info") and line["payload"]["info"]["total_token_usage"]
        if total:
            total["input_tokens"] += 50_000
    session = load(_write(tmp_path, lines), strict=True)
    assert [r.usage.input_tokens for r in session.requests()] == [176, 276]


def test_a_garbled_running_total_keeps_the_usage_beside_it(tmp_path: Path) -> None:
    lines = codex_lines()
    count = next(line for line in lines if line["payload"].get("type") == "token_count")
    count["payload"]["info"]["total_token_usage"] = "garbled"
    path = _write(tmp_path, lines)
    session = load(path)
    assert [r.usage.input_tokens for r in session.requests()] == [176, 276]
    assert len(session.skipped) == 1 and "total_token_usage" in str(session.skipped[0])
    with pytest.raises(LogFormatError, match=r"expected `info\.total_token_usage` to be an obj"):
        load(path, strict=True)


def test_session_meta_is_deduplicated(tmp_path: Path) -> None:
    lines = codex_lines()
    lines.insert(6, dict(lines[0], timestamp="2026-01-02T10:00:01.050Z"))
    session = load(_write(tmp_path, lines), strict=True)
    assert session.header.session_id == "rollout-1"
    assert session.header.ignored_records["session_meta/repeat"] == 1


def test_response_without_usage_is_history_not_a_request(tmp_path: Path) -> None:
    lines = codex_lines()[:-1]  # the capture stopped before the last token_count
    session = load(_write(tmp_path, lines), strict=True)
    assert len(session.requests()) == 1
    last = [e for e in session.events if isinstance(e, AssistantMessage)][-1]
    assert last.request_id is None and last.usage_missing is True


def test_cached_greater_than_input_is_reported(tmp_path: Path) -> None:
    lines = codex_lines()
    lines[8]["payload"]["info"]["last_token_usage"]["cached_input_tokens"] = 5000
    session = load(_write(tmp_path, lines))
    assert any("cached_input_tokens 5000 > input_tokens" in str(e) for e in session.skipped)


def test_tool_calls_render_as_the_model_wrote_them(tmp_path: Path) -> None:
    from replay.strategies._view import tool_call_block

    patch = '*** Begin Patch\n*** Update File: a.py\n-print("x")\n+print("y")\n*** End Patch'
    lines = [
        *codex_lines()[:4],
        _item(
            "01",
            {
                "type": "function_call",
                "name": "exec_command",
                "call_id": "c1",
                "arguments": '{"cmd":"ls -la","workdir":"/w"}',
            },
        ),
        _item("02", {"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        _item(
            "03",
            {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c2", "input": patch},
        ),
        _item("04", {"type": "custom_tool_call_output", "call_id": "c2", "output": "done"}),
        _tokens("05", 1200, 0, 40, 1200),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    calls = [
        b
        for e in session.events
        if isinstance(e, AssistantMessage)
        for b in e.blocks
        if isinstance(b, ToolCallBlock)
    ]
    assert [c.arguments_format for c in calls] == ["compact", "raw"]
    # Quirk: the model reads back its own compact arguments string (keys in its order, no
    # spaces) and a freeform tool's raw input, not a sorted, spaced or JSON-escaped re-encoding.
    assert tool_call_block(calls[0]).rendered() == 'exec_command({"cmd":"ls -la","workdir":"/w"})'
    assert tool_call_block(calls[1]).rendered() == f"apply_patch({patch})"


def test_fidelity_reports_the_128_token_share_and_the_explained_cost(tmp_path: Path) -> None:
    from replay.fidelity import fidelity_rows, fidelity_summary

    lines = codex_lines()
    # 512 more tokens of hidden prefix on both requests, all of them cached (a step under the
    # 1,024-token minimum reads nothing: the log's own sizes have none above it).
    grown_total = {1200: 512, 2500: 1024}  # the running total after request 1, after request 2
    for line in lines:
        info = line["payload"].get("info")
        if info:
            last, total = info["last_token_usage"], info["total_token_usage"]
            total["input_tokens"] += grown_total[total["input_tokens"]]
            last["input_tokens"] += 512
            last["cached_input_tokens"] += 512
            total["cached_input_tokens"] += 512
    rows = fidelity_rows(load(_write(tmp_path, lines), strict=True))
    # Request 1 read 1,536 tokens nothing in this log wrote: a prefix cached before the log.
    assert not rows[0].read_within_128
    assert rows[0].unexplained.startswith("prefix cached before this log")
    # Request 2: 1,408 simulated (512 × ⌊(1,712 + 128) / 512⌋ − 128) vs 1,536 billed: 128 off.
    assert (rows[1].simulated_cache_read, rows[1].recorded_cache_read) == (1408, 1536)
    assert rows[1].read_within_128 and rows[1].unexplained is None
    summary = fidelity_summary(rows)
    assert summary["cache_read_within_128"] == 0.5
    assert summary["naive_rule_within_128"] == 1.0
    # The explained cost error leaves the unexplained first request out: request 2 alone.
    rec, sim = rows[1].recorded_cost_usd, rows[1].simulated_cost_usd
    assert summary["cost_error_explained"] == round(float((sim - rec) / rec), 4)
    assert summary["cost_error_explained"] != summary["cost_error"]


# --------------------------------------------------------------------------------------------------
# Real samples

CODEX = SAMPLES / "codex"
SAMPLE_TABLE = [
    # prefix, token_count events with info (formats.md table, dupes included), requests,
    # totals (uncached input, cached, output)
    (
        "blackgirlbytes__entire-token-costs-benchmark-tests",
        291,
        287,
        (1931956, 34484864, 116919),
        1,
    ),
    ("blackgirlbytes__planetfall-seed-signalkit", 39, 37, (179507, 2463104, 14829), 0),
]


@needs_samples
@pytest.mark.parametrize(("prefix", "events", "count", "totals", "compactions"), SAMPLE_TABLE)
def test_real_sample(prefix: str, events: int, count: int, totals: tuple, compactions: int) -> None:
    path = next(CODEX.glob(f"{prefix}*_full.jsonl"))
    session = load(path, strict=True)
    assert session.header.agent == "codex"
    assert session.header.token_count_events == events
    requests = session.requests()
    assert len(requests) == count
    got = (
        sum(r.usage.input_tokens for r in requests),
        sum(r.usage.cache_read_tokens for r in requests),
        sum(r.usage.output_tokens for r in requests),
    )
    assert got == totals
    meta = json.loads(
        path.with_name(path.name.replace("_full.jsonl", "_metadata.json")).read_text()
    )["token_usage"]
    assert got == (meta["input_tokens"], meta["cache_read_tokens"], meta["output_tokens"])
    assert meta["api_call_count"] == events  # Entire counts the repeated events too
    assert sum(isinstance(e, Compaction) for e in session.events) == compactions
    assert unpaired_before_request(session) == []
    assert all(r.model == "gpt-5.5" for r in requests)
    assert len(session.header.system) > 20000  # base_instructions
    assert session.header.tools  # dynamic_tools
    assert session.header.hidden_prefix_tokens > 500  # built-in tool schemas
    assert all(r.usage.cache_read_tokens % 128 == 0 for r in requests)
    assert all(isinstance(r, RequestMarker) for r in requests)


@needs_samples
@pytest.mark.parametrize(
    ("prefix", "within_128", "prompt_error"),
    [
        # Regression floors measured 2026-11-29 (fidelity on Codex, issue 4). What stays outside
        # 128 tokens is labelled: routing (the read is an older request's prefix), a retried
        # request, the cross-session Codex prefix, or a billed prompt of another size.
        ("blackgirlbytes__entire-token-costs-benchmark-tests", 0.74, 50),
        ("blackgirlbytes__planetfall-seed-signalkit", 0.78, 5),
    ],
)
def test_real_sample_fidelity(prefix: str, within_128: float, prompt_error: float) -> None:
    from replay.fidelity import fidelity_rows, fidelity_summary

    rows = fidelity_rows(load(next(CODEX.glob(f"{prefix}*_full.jsonl"))))
    summary = fidelity_summary(rows)
    assert summary["cache_read_within_128"] >= within_128
    assert summary["mean_abs_prompt_error_tokens"] <= prompt_error
    # Every read more than 128 tokens off has a cause: the simulator's or the log's limit.
    assert all(r.read_within_128 or r.miss_cause or r.unexplained for r in rows)
    # Each sample has one retry: a repeated token_count, then a read of the whole prompt.
    assert summary["unexplained"].get("retried request") == 1


def test_a_git_state_change_alone_marks_no_request(tmp_path: Path) -> None:
    # The git state of a re-written session_meta is not in the prompt: no unlogged change.
    meta = dict(codex_lines()[0]["payload"])
    lines = codex_lines()[:5] + [
        _message("01.000", "assistant", "ok"),
        _tokens("01.100", 900, 0, 20, 900),
        _item("03.000", dict(meta, git={"branch": "b"}), "session_meta"),
        _message("03.001", "user", "n"),
        _message("04.000", "assistant", "ok"),
        _tokens("04.100", 990, 896, 5, 1890),
    ]
    requests = load(_write(tmp_path, lines), strict=True).requests()
    assert [getattr(r, "unlogged_change", None) for r in requests] == [None, None]


@pytest.mark.parametrize("typed_events", [True, False])
def test_a_user_role_text_no_human_typed_is_injected(tmp_path: Path, typed_events: bool) -> None:
    # When the rollout logs what the human typed (`event_msg` user_message), any other
    # user-role text is the harness's; an older rollout without those events has only its
    # prefixes to tell.
    lines = codex_lines()
    lines.insert(3, _message("00.002", "user", "Context the harness adds."))
    if not typed_events:
        lines = [line for line in lines if line["payload"].get("type") != "user_message"]
    session = load(_write(tmp_path, lines), strict=True)
    users = {e.text: e.injected for e in session.events if isinstance(e, UserMessage)}
    assert users["Context the harness adds."] is typed_events
    assert users["List the files."] is False


def test_a_prompt_sent_with_an_image_is_typed_and_survives_an_older_compaction(
    tmp_path: Path,
) -> None:
    # The user_message event logs the typed text only; the message also holds the image block.
    # Read as injected, the prompt was left out of the history rebuilt after a `compacted`
    # that has only a summary (found by the adapters' mutation pass).
    image = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
    second = _message("03.000", "user", "Now count them.")
    second["payload"]["content"].append(image)
    lines = codex_lines() + [
        second,
        _item("03.001", {"type": "user_message", "message": "Now count them."}, "event_msg"),
        _message("03.500", "assistant", "Counting."),
        _tokens("03.600", 1400, 1024, 5, 3900),
        _item("04.000", {"message": "SUMMARY"}, "compacted"),
        _tokens("04.100", 0, 0, 0, 3900),
        _message("05.000", "assistant", "Two."),
        _tokens("05.100", 600, 0, 2, 4500),
    ]
    lines[3]["payload"]["content"].append(image)
    session = load(_write(tmp_path, lines), strict=True)
    prompts = [e for e in session.events if isinstance(e, UserMessage) and not e.injected]
    assert [e.text.split("\n")[0] for e in prompts] == ["List the files.", "Now count them."]
    compaction = next(e for e in session.events if isinstance(e, Compaction))
    assert prompts[1].id not in compaction.replaces
    # A harness text that only shares a line with a typed prompt is still the harness's.
    lines.insert(3, _message("00.002", "user", "Context the harness adds.\nNow count them."))
    session = load(_write(tmp_path, lines), strict=True)
    users = {e.text: e.injected for e in session.events if isinstance(e, UserMessage)}
    assert users["Context the harness adds.\nNow count them."] is True


def test_a_prompt_typed_twice_keeps_both_places_through_a_compaction(tmp_path: Path) -> None:
    # A replacement history repeating two equal prompts keeps both in place, each once.
    lines = codex_lines() + [
        _message("03.000", "user", "List the files."),
        _item("03.001", {"type": "user_message", "message": "List the files."}, "event_msg"),
        _message("03.500", "assistant", "Same as before."),
        _tokens("03.600", 1400, 1024, 5, 3900),
        _item(
            "04.000",
            {
                "message": "",
                "replacement_history": _history("List the files.", "List the files.", "SUMMARY"),
            },
            "compacted",
        ),
        _tokens("04.100", 0, 0, 0, 3900),
        _message("05.000", "assistant", "Two."),
        _tokens("05.100", 600, 0, 2, 4500),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert _kept_before_compaction(session) == ["List the files.", "List the files."]
    assert _compacted_history(session) == ["SUMMARY"]


def test_redacted_call_ids_pair_outputs_with_the_oldest_unanswered_call(tmp_path: Path) -> None:
    def call(ts: str, name: str) -> dict[str, Any]:
        return _item(
            ts, {"type": "function_call", "name": name, "call_id": "REDACTED", "arguments": "{}"}
        )

    def output(ts: str, text: str) -> dict[str, Any]:
        return _item(ts, {"type": "function_call_output", "call_id": "REDACTED", "output": text})

    lines = codex_lines()[:5] + [
        call("01.000", "first"),
        call("01.001", "second"),
        output("01.010", "out-1"),
        output("01.011", "out-2"),
        _tokens("01.100", 900, 0, 20, 900),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    results = [(e.tool_name, e.output) for e in session.events if isinstance(e, ToolResult)]
    assert results == [("first", "out-1"), ("second", "out-2")]


def test_a_redacted_output_answers_the_oldest_redacted_call_not_an_older_call_of_its_own_id(
    tmp_path: Path,
) -> None:
    # docs/adapters.md: a result is paired with the oldest unanswered call of its id: of the
    # redacted ones for a `REDACTED` id (a redactor rewrites both ends of one id alike). Here
    # the real-id call is older and still waits when the redacted output comes.
    def call(ts: str, name: str, cid: str) -> dict[str, Any]:
        return _item(
            ts, {"type": "function_call", "name": name, "call_id": cid, "arguments": "{}"}
        )

    def output(ts: str, text: str, cid: str) -> dict[str, Any]:
        return _item(ts, {"type": "function_call_output", "call_id": cid, "output": text})

    lines = codex_lines()[:5] + [
        call("01.000", "plain", "call_1"),
        call("01.001", "hidden", "REDACTED"),
        call("01.002", "hidden-too", "REDACTED"),
        output("01.010", "out-hidden", "REDACTED"),
        output("01.011", "out-plain", "call_1"),
        output("01.012", "out-hidden-too", "REDACTED"),
        _tokens("01.100", 900, 0, 20, 900),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    results = [(e.tool_name, e.output) for e in session.events if isinstance(e, ToolResult)]
    assert results == [("hidden", "out-hidden"), ("plain", "out-plain"),
                       ("hidden-too", "out-hidden-too")]


@pytest.mark.parametrize(
    ("output", "failed"),
    [
        ({"content": "ok"}, False),  # no `success`: not a failure
        ({"content": "ok", "success": True}, False),
        ({"content": "no such file", "success": False}, True),
    ],
)
def test_an_older_output_object_fails_only_when_success_is_false(
    tmp_path: Path, output: dict[str, Any], failed: bool
) -> None:
    lines = codex_lines()
    lines[7]["payload"]["output"] = output
    session = load(_write(tmp_path, lines), strict=True)
    result = next(e for e in session.events if isinstance(e, ToolResult))
    assert (result.output, result.is_error) == (output["content"], failed)


def test_an_unanswered_response_ends_at_the_next_prompt(tmp_path: Path) -> None:
    # A response without a token_count (the turn was aborted) ends when the user types again:
    # the next answer is a response of its own, after that prompt, not more of the aborted one.
    lines = codex_lines()[:5] + [
        _message("01.000", "assistant", "Starting"),
        _message("02.000", "user", "Stop, do this instead."),
        _message("03.000", "assistant", "Done."),
        _tokens("03.100", 900, 0, 20, 900),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    order = [
        (type(e).__name__, e.text if isinstance(e, UserMessage) else None)
        for e in session.events
        if isinstance(e, UserMessage | AssistantMessage)
    ]
    assert order[-3:] == [
        ("AssistantMessage", None),
        ("UserMessage", "Stop, do this instead."),
        ("AssistantMessage", None),
    ]
    aborted, answer = [e for e in session.events if isinstance(e, AssistantMessage)]
    assert aborted.request_id is None and aborted.usage_missing is True
    assert [b.text for b in answer.blocks] == ["Done."]
    assert [r.usage.input_tokens for r in session.requests()] == [900]


def test_a_response_item_written_twice_with_its_timestamp_is_a_duplicate_record(
    tmp_path: Path,
) -> None:
    lines = codex_lines()
    lines.insert(7, lines[6])  # the function_call line again
    session = load(_write(tmp_path, lines))
    assert [str(e).split(": ", 1)[1] for e in session.skipped] == [
        "duplicate record: same response_item as line 7"
    ]
    calls = [
        b for e in session.events if isinstance(e, AssistantMessage)
        for b in e.blocks if isinstance(b, ToolCallBlock)
    ]
    assert [c.id for c in calls] == ["call_1"]


def test_tool_namespaces_come_from_their_group_or_the_tool(tmp_path: Path) -> None:
    lines = codex_lines()
    lines[0]["payload"]["dynamic_tools"] = [
        {"name": "flat", "namespace": "mcp_a", "description": "d", "inputSchema": {}},
        {"type": "namespace", "name": "mcp_b", "tools": [{"name": "inner", "parameters": {}}]},
        {"name": "plain", "description": "p"},
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert [(t.name, getattr(t, "namespace", None)) for t in session.header.tools] == [
        ("flat", "mcp_a"),
        ("inner", "mcp_b"),
        ("plain", None),
    ]


def test_a_session_meta_of_another_rollout_changes_nothing(tmp_path: Path) -> None:
    lines = codex_lines()
    other = dict(lines[0]["payload"], id="rollout-0", cwd="/elsewhere", memory_mode="enabled")
    lines.insert(6, _item("00.900", other, "session_meta"))
    session = load(_write(tmp_path, lines), strict=True)
    assert session.header.cwd == "/w"
    assert session.header.ignored_records["session_meta/other-id"] == 1
    assert not any(getattr(r, "unlogged_change", None) for r in session.requests())


def test_usage_lost_before_the_file_s_first_total_is_not_derived_from_it(
    tmp_path: Path,
) -> None:
    # The first running total in a file counts what came before it too (a resumed rollout):
    # the response whose count lost its `last_token_usage` keeps no usage rather than all of it.
    lines = codex_lines()[:5] + [
        _item("01.000", {"type": "function_call", "name": "a", "call_id": "c1", "arguments": "{}"}),
        _item("01.010", {"type": "function_call_output", "call_id": "c1", "output": "1"}),
        _counts("01.100", None, (5000, 4000, 300, 20)),
        _message("02.000", "assistant", "done"),
        _counts("02.100", _C, (6200, 5024, 310, 20)),
    ]
    session = load(_write(tmp_path, lines))
    first, second = session.requests()
    assert first.usage is None and first.usage_missing is True
    assert second.usage.input_tokens == _C[0] - _C[1]


# --------------------------------------------------------------------------------------------------
# Rules pinned by a mutation pass


def test_user_text_nobody_typed_is_injected_once_typed_texts_are_known(tmp_path: Path) -> None:
    lines = codex_lines()
    lines.insert(4, _message("00.0035", "user", "Remember: answer briefly."))
    session = load(_write(tmp_path, lines), strict=True)
    users = {e.text: e.injected for e in session.events if isinstance(e, UserMessage)}
    # event_msg user_message says what the human typed: the other user text was injected.
    assert users == {"<permissions instructions>none": True, "List the files.": False,
                     "Remember: answer briefly.": True}
    # An older rollout without user_message events: only the known prefixes tell.
    lines = [x for x in lines if x["payload"].get("type") != "user_message"]
    session = load(_write(tmp_path, lines), strict=True)
    users = {e.text: e.injected for e in session.events if isinstance(e, UserMessage)}
    assert users == {"<permissions instructions>none": True, "List the files.": False,
                     "Remember: answer briefly.": False}


def test_a_session_meta_rewrite_that_changes_only_git_marks_nothing(tmp_path: Path) -> None:
    meta = dict(codex_lines()[0]["payload"])
    lines = codex_lines() + [
        _item("03.000", dict(meta, git={"branch": "b", "commit_hash": "abc"}), "session_meta"),
        _message("03.001", "user", "next"),
        _message("04.000", "assistant", "ok"),
        _tokens("04.100", 990, 0, 5, 3490),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert [getattr(r, "unlogged_change", None) for r in session.requests()] == [None] * 3
    assert session.header.ignored_records["session_meta/repeat"] == 1


def test_a_prompt_typed_twice_stays_twice_in_a_compacted_history(tmp_path: Path) -> None:
    def typed(ts: str, text: str) -> list[dict[str, Any]]:
        return [_message(ts, "user", text),
                _item(ts, {"type": "user_message", "message": text}, "event_msg")]

    history = ["List the files.", "Go on.", "List the files."]
    lines = codex_lines() + [
        *typed("03.000", "Go on."),
        _message("03.500", "assistant", "Went on."),
        _tokens("03.600", 1400, 1024, 5, 3900),
        *typed("03.700", "List the files."),
        _message("03.800", "assistant", "Still two."),
        _tokens("03.900", 1500, 1024, 5, 5400),
        _item("04.000", {"message": "", "replacement_history": _history(*history)}, "compacted"),
        _tokens("04.100", 0, 0, 0, 5400),  # the context estimate
        _message("05.000", "assistant", "Two."),
        _tokens("05.100", 600, 0, 2, 6000),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert _kept_before_compaction(session) == history  # each repeat in its own place, in order
    assert _compacted_history(session) == []
    sent = [i.text for i in _last_view(session) if isinstance(i, UserItem)]
    assert [t for t in sent if t in history] == history


def test_an_older_tool_output_without_success_is_no_failure(tmp_path: Path) -> None:
    lines = codex_lines()[:5] + [
        _item("01.000", {"type": "function_call", "name": "a", "call_id": "c1", "arguments": "{}"}),
        _item("01.001", {"type": "function_call", "name": "b", "call_id": "c2", "arguments": "{}"}),
        _item("01.010", {"type": "function_call_output", "call_id": "c1",
                         "output": {"content": "fine"}}),
        _item("01.020", {"type": "function_call_output", "call_id": "c2",
                         "output": {"content": "bad", "success": False}}),
        _tokens("01.100", 900, 0, 20, 900),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    results = [(e.tool_name, e.output, e.is_error) for e in session.events
               if isinstance(e, ToolResult)]
    assert results == [("a", "fine", False), ("b", "bad", True)]


def test_redacted_call_ids_pair_outputs_with_calls_in_order(tmp_path: Path) -> None:
    call = {"type": "function_call", "call_id": "REDACTED", "arguments": "{}"}
    lines = codex_lines()[:5] + [
        _item("01.000", {**call, "name": "a"}),
        _item("01.001", {**call, "name": "b"}),
        _item("01.010", {"type": "function_call_output", "call_id": "REDACTED", "output": "A"}),
        _item("01.020", {"type": "function_call_output", "call_id": "REDACTED", "output": "B"}),
        _tokens("01.100", 900, 0, 20, 900),
        _message("02.000", "assistant", "ok"),
        _tokens("02.100", 950, 896, 5, 1850),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    calls = {b.id: b.name for e in session.events if isinstance(e, AssistantMessage)
             for b in e.blocks if isinstance(b, ToolCallBlock)}
    results = [(calls[e.call_id], e.output) for e in session.events if isinstance(e, ToolResult)]
    assert results == [("a", "A"), ("b", "B")]
    assert unpaired_before_request(session) == []


def test_a_rebuilt_history_opens_with_the_context_injected_before_the_first_prompt(
    tmp_path: Path,
) -> None:
    # Context injected later (a new turn's environment) is no initial context: it is not
    # re-sent after an older compaction, nor is it a prompt.
    lines = codex_lines() + [
        _message("03.000", "user", "<environment_context>cwd=/w2</environment_context>"),
        _message("03.100", "user", "Now count them."),
        _item("03.101", {"type": "user_message", "message": "Now count them."}, "event_msg"),
        _message("03.500", "assistant", "Done."),
        _tokens("03.600", 1400, 1024, 5, 3900),
        _item("04.000", {"message": "SUMMARY"}, "compacted"),
        _tokens("04.100", 0, 0, 0, 3900),  # the context estimate
        _message("05.000", "assistant", "Two."),
        _tokens("05.100", 600, 0, 2, 4500),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    sent = [i.text for i in _last_view(session) if isinstance(i, UserItem)]
    assert sent == ["<permissions instructions>none", "List the files.", "Now count them.",
                    "SUMMARY"]


def test_without_base_instructions_the_system_prompt_is_labelled_estimated(
    tmp_path: Path,
) -> None:
    lines = codex_lines()
    del lines[0]["payload"]["base_instructions"]
    header = load(_write(tmp_path, lines), strict=True).header
    assert header.system == "" and header.estimated[:2] == ["system", "tools"]


def test_a_tool_output_written_again_later_is_dropped_and_reported(tmp_path: Path) -> None:
    output = {"type": "function_call_output", "call_id": "c1", "output": "1"}
    lines = codex_lines()[:5] + [
        _item("01.000", {"type": "function_call", "name": "a", "call_id": "c1", "arguments": "{}"}),
        _item("01.010", output),
        _item("01.020", output),  # the same output again, at another time
        _tokens("01.100", 900, 0, 20, 900),
        _message("02.000", "assistant", "ok"),
        _tokens("02.100", 950, 896, 5, 1850),
    ]
    path = _write(tmp_path, lines)
    session = load(path)
    assert [(e.call_id, e.output) for e in session.events if isinstance(e, ToolResult)] == [
        ("c1", "1")
    ]
    assert [str(e) for e in session.skipped] == [
        f"{path}:8: expected one tool result per call: call id 'c1' was already answered on "
        "line 7; this one was dropped"
    ]
    with pytest.raises(LogFormatError, match="already answered on line 7"):
        load(path, strict=True)


@pytest.mark.parametrize(
    ("part", "key", "kept"),
    [
        # A negative running total: the count beside it is used, the total is not.
        ("total_token_usage", "input_tokens", [176, 276]),
        ("total_token_usage", "total_tokens", [176, 276]),
        # A negative count of the request's own usage garbles it: kept without usage.
        ("last_token_usage", "total_tokens", [None, 276]),
        ("last_token_usage", "output_tokens", [None, 276]),
    ],
)
def test_a_negative_token_count_is_malformed(
    tmp_path: Path, part: str, key: str, kept: list[int | None]
) -> None:
    # A token count below zero is no count: it passed --strict silently inside
    # `total_token_usage` (and `last_token_usage.total_tokens`).
    lines = codex_lines()
    lines[8]["payload"]["info"][part][key] = -7
    path = _write(tmp_path, lines)
    session = load(path)
    assert [r.usage.input_tokens if r.usage else None for r in session.requests()] == kept
    assert [e.line for e in session.skipped] == [9]
    expected = rf"rollout\.jsonl:9: expected `{key}` to be >= 0, got -7 in `info\.{part}`"
    with pytest.raises(LogFormatError, match=expected):
        load(path, strict=True)


def test_a_negative_running_total_beside_no_usage_is_reported(
    tmp_path: Path,
) -> None:
    # B's token_count has no `last_token_usage`, and its running total is garbled (a negative
    # output): both are reported there; the next good total (C's) still shows B's usage.
    lost = _counts("02.100", None, (2100, 896, -50, 17))
    path = _write(tmp_path, _turn_with_lost_usage(lost, [_counts("03.100", _C, _TOTAL_ABC)]))
    session = load(path)
    a, b, c = session.requests()
    assert (b.usage.input_tokens, b.usage.output_tokens) == (_B[0] - _B[1], _B[2])
    assert [e.line for e in session.skipped] == [12, 12]
    assert "got -50 in `info.total_token_usage`; the total is not used" in str(session.skipped[0])
    with pytest.raises(
        LogFormatError,
        match=r"rollout\.jsonl:12: expected `output_tokens` to be >= 0, got -50 in `info\.total",
    ):
        load(path, strict=True)


def test_an_inter_agent_item_is_an_unknown_item_reported_not_dropped(tmp_path: Path) -> None:
    # formats.md §2: subagent rollouts (`forked_from_id`) hold `inter_agent_communication*`
    # items; their shape is not documented, so they are unknown items like any other.
    lines = codex_lines()
    lines[0]["payload"]["forked_from_id"] = "rollout-parent"
    item = {"type": "inter_agent_communication", "from": "parent", "text": "go"}
    lines.insert(5, _item("00.005", item))
    path = _write(tmp_path, lines)
    session = load(path)
    assert [str(e) for e in session.skipped] == [
        f"{path}:6: unknown Codex response_item type 'inter_agent_communication'"
    ]
    assert len(session.requests()) == 2
    assert session.header.forked_from_id == "rollout-parent"  # kept, the rollout read alone
    with pytest.raises(LogFormatError, match=r"rollout\.jsonl:6: unknown Codex response_item"):
        load(path, strict=True)


def test_a_replacement_history_item_that_is_no_message_is_reported(tmp_path: Path) -> None:
    # It was counted in `ignored_records` and dropped silently: a function call or an unknown
    # item of the new history is context the read leaves out. The opaque `compaction` item
    # (the remote summary) is not context by design: counted only.
    human = [{"type": "input_text", "text": "List the files."}]
    history = [
        {"type": "message", "role": "user", "content": human},
        {"type": "compaction", "encrypted_content": "opaque"},
        {"type": "inter_agent_communication_v2", "text": "hi"},
    ]
    lines = [*codex_lines(), _item("03.000", {"message": "", "replacement_history": history},
                                   "compacted")]
    path = _write(tmp_path, lines)
    session = load(path)
    assert [str(e) for e in session.skipped] == [
        f"{path}:13: expected replacement_history items to be messages, got "
        "'inter_agent_communication_v2'; left out of the history after the compaction"
    ]
    assert session.header.ignored_records["replacement_history/compaction"] == 1
    assert "replacement_history/inter_agent_communication_v2" not in (
        session.header.ignored_records
    )
    assert any(isinstance(e, Compaction) for e in session.events)
    with pytest.raises(LogFormatError, match=r"rollout\.jsonl:13: expected replacement_hist"):
        load(path, strict=True)


def test_a_web_search_call_waits_for_no_output_and_a_ghost_snapshot_is_not_sent(
    tmp_path: Path,
) -> None:
    # docs/adapters.md, Codex: `web_search_call` runs at OpenAI (no result expected);
    # `ghost_snapshot` is not sent (found by a mutation pass: neither rule had a test).
    lines = codex_lines()
    search = {"type": "web_search_call", "status": "completed",
              "action": {"type": "search", "query": "ls flags"}}
    lines.insert(7, _item("01.150", search))  # in the response, before its call's output
    lines.insert(3, _item("00.0025", {"type": "ghost_snapshot", "ghost_commit": {"id": "g1"}}))
    session = load(_write(tmp_path, lines), strict=True)  # nothing to report
    calls = [
        b for e in session.events if isinstance(e, AssistantMessage) for b in e.blocks
        if isinstance(b, ToolCallBlock)
    ]
    assert [(c.name, getattr(c, "server_side", False)) for c in calls] == [
        ("exec_command", False), ("web_search", True)
    ]
    assert calls[1].arguments == {"type": "search", "query": "ls flags"}
    results = [e.call_id for e in session.events if isinstance(e, ToolResult)]
    assert results == [calls[0].id]  # no placeholder result for the search
    assert session.header.ignored_records["response_item/ghost_snapshot"] == 1
    assert len(session.requests()) == 2


def test_without_typed_texts_codex_s_own_context_openings_mark_user_text_injected(
    tmp_path: Path,
) -> None:
    # A rollout without `event_msg` user_message events: a user-role text is the harness's
    # when it opens like the context Codex injects, and typed otherwise.
    lines = codex_lines()
    context = "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"
    lines.insert(3, _message("00.0025", "user", context))
    lines = [x for x in lines if x["payload"].get("type") != "user_message"]
    session = load(_write(tmp_path, lines), strict=True)
    users = {e.text: e.injected for e in session.events if isinstance(e, UserMessage)}
    assert users == {"<permissions instructions>none": True, context: True,
                     "List the files.": False}


def test_a_request_starts_when_the_context_before_it_ended(tmp_path: Path) -> None:
    # docs/adapters.md, Requests: a marker's `ts` is when the request could be sent, the end of
    # the last context event (found by a mutation pass: no Codex test looked at it).
    session = load(_write(tmp_path, codex_lines()), strict=True)
    # Request 1 after the prompt (00.003), request 2 after the tool output (01.200).
    assert [r.ts.strftime("%S.%f") for r in session.requests()] == ["00.003000", "01.200000"]


def test_a_later_compaction_replaces_the_earlier_one_too(tmp_path: Path) -> None:
    # docs/adapters.md, Compactions: previous compactions are in `replaces` when superseded.
    human = [{"type": "input_text", "text": "List the files."}]
    history = [{"type": "message", "role": "user", "content": human}]
    lines = [
        *codex_lines(),
        _item("03.000", {"message": "First.", "replacement_history": history}, "compacted"),
        _message("03.100", "user", "More?"),
        _message("04.000", "assistant", "No."),
        _tokens("04.100", 400, 128, 2, 2900),
        _item("05.000", {"message": "Second.", "replacement_history": history}, "compacted"),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    first, second = [e for e in session.events if isinstance(e, Compaction)]
    assert first.id in second.replaces


def test_cache_writes_under_a_name_replay_does_not_read_get_a_note(tmp_path: Path) -> None:
    """OpenAI bills GPT-5.6's cache writes at 1.25× input (caching.md, "Usage":
    `input_tokens_details.cache_write_tokens`); no Codex version the research saw logs them. A
    rollout that does keeps them in `input_tokens` as replay reads it, billed at 1×: said, with
    the name and the count, in `run` and `fidelity` alike."""
    import replay
    from replay.fidelity import fidelity

    lines = codex_lines()
    counts = [ln["payload"]["info"]["last_token_usage"] for ln in lines
              if ln["payload"].get("type") == "token_count"]
    counts[0]["input_tokens_details"] = {"cached_tokens": 0, "cache_write_tokens": 1200}
    counts[-1]["cache_write_tokens"] = 300
    path = _write(tmp_path, lines)
    expected = ("2 request(s) report cache writes under a name replay does not read: "
                "`cache_write_tokens` (300 tokens), `input_tokens_details.cache_write_tokens` "
                "(1,200 tokens).")
    assert any(n.startswith(expected) for n in replay.replay(path, "baseline").notes)
    assert any(n.startswith(expected) for n in fidelity(path).notes)
    # A rollout as Codex writes it today: no note.
    (tmp_path / "plain").mkdir()
    plain = _write(tmp_path / "plain", codex_lines())
    assert not [n for n in replay.replay(plain, "baseline").notes if "cache writes" in n]


def test_an_image_sent_by_url_is_a_placeholder_labelled_estimated(tmp_path: Path) -> None:
    # An `input_image` by URL (not a data URL): its token cost depends on pixels the log does
    # not hold, so the text standing for it must be labelled estimated (calibrate skips it).
    lines = codex_lines()
    lines[3]["payload"]["content"].append(
        {"type": "input_image", "image_url": "https://example.com/shot.png"}
    )
    session = load(_write(tmp_path, lines), strict=True)
    user = [e for e in session.events if isinstance(e, UserMessage)][1]
    assert user.text == "List the files.\n[image 28 chars]"
    assert user.estimated_text is True


def test_a_prompt_of_several_text_blocks_and_an_image_is_typed(tmp_path: Path) -> None:
    # The user_message event logs the typed text blocks joined, without the image block: the
    # message still matches it, so the prompt is the human's, not injected context.
    lines = codex_lines()
    lines[3]["payload"]["content"] = [
        {"type": "input_text", "text": "List the files."},
        {"type": "input_text", "text": "Then stop."},
        {"type": "input_image", "image_url": "https://example.com/shot.png"},
    ]
    lines[4]["payload"]["message"] = "List the files.\nThen stop."
    session = load(_write(tmp_path, lines), strict=True)
    user = [e for e in session.events if isinstance(e, UserMessage)][1]
    assert user.text.startswith("List the files.\nThen stop.\n[image")
    assert user.injected is False


def _meta_rewrites(metas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """codex_lines, then one turn (a prompt, an answer, its count) after each session_meta."""
    lines = codex_lines()
    total = 2500
    for n, meta in enumerate(metas, start=3):
        total += 995
        lines += [
            _item(f"{n:02d}.000", meta, "session_meta"),
            _message(f"{n:02d}.001", "user", f"turn {n}"),
            _message(f"{n:02d}.500", "assistant", "ok"),
            _tokens(f"{n:02d}.600", 990, 0, 5, total),
        ]
    return lines


def test_a_setting_is_a_change_once_not_at_every_later_rewrite(tmp_path: Path) -> None:
    # A rewrite is compared with the previous one: a setting that appeared at one turn and is
    # re-written unchanged at the next changed the prompt prefix once (formats.md §2: Codex
    # Desktop re-writes session_meta every turn).
    meta = dict(codex_lines()[0]["payload"])
    lines = _meta_rewrites([dict(meta, memory_mode="enabled")] * 2)
    requests = load(_write(tmp_path, lines), strict=True).requests()
    assert [getattr(r, "unlogged_change", None) for r in requests] == [
        None,
        None,
        "session_meta.memory_mode changed before this request",
        None,
    ]


def test_a_setting_that_disappears_is_a_change(tmp_path: Path) -> None:
    # A setting dropped from a rewrite changes the prompt prefix as much as one that appears.
    meta = dict(codex_lines()[0]["payload"])
    lines = _meta_rewrites([dict(meta, memory_mode="enabled"), meta])
    requests = load(_write(tmp_path, lines), strict=True).requests()
    assert [getattr(r, "unlogged_change", None) for r in requests][2:] == [
        "session_meta.memory_mode changed before this request"
    ] * 2


def test_a_rate_limit_repeat_does_not_settle_a_lost_usage(tmp_path: Path) -> None:
    # A rate-limit refresh re-sends the last total (formats.md §2): it is no new total, so B's
    # lost usage still comes from the next real one (settled against the repeat, B got none).
    repeat = _counts("03.050", (1000, 0, 20, 5), (1000, 0, 20, 5))
    lines = _turn_with_lost_usage(
        _counts("02.100", None, None), [repeat, _counts("03.100", _C, _TOTAL_ABC)]
    )
    b = load(_write(tmp_path, lines)).requests()[1].usage
    assert b is not None and b.derived_from == "total_token_usage"
    assert (b.input_tokens, b.cache_read_tokens, b.output_tokens) == (1100 - 896, 896, 30)


def test_usage_without_logged_output_is_a_request_sent_after_the_last_event(
    tmp_path: Path,
) -> None:
    # A token_count whose response items were not logged (an aborted response) is still a
    # request: sent when the context before it ended (docs/adapters.md, Requests), not when
    # its count was written.
    lines = codex_lines() + [
        _message("03.000", "user", "More?"),
        _tokens("09.000", 400, 128, 2, 2900),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    last = session.requests()[-1]
    assert last.usage.input_tokens == 400 - 128
    assert last.ts.isoformat().startswith("2026-01-02T10:00:03")


def test_a_count_after_a_lost_one_is_its_own_request_when_the_total_shows_more(
    tmp_path: Path,
) -> None:
    # B's count held no usage; the next count (no response logged between) is not B's: the
    # total grew by more than it (output without input: no request's usage). B stays a
    # request without usage, the count a request whose output items were not logged.
    lines = _turn_with_lost_usage(
        _counts("02.100", None, None), [_counts("03.100", _C, (2200, 1024, 40, 5))]
    )
    del lines[12]  # no answer C
    requests = load(_write(tmp_path, lines)).requests()
    assert [r.usage is None for r in requests] == [False, True, False]
    assert requests[2].usage.input_tokens == _C[0] - _C[1]


def test_a_response_left_at_a_new_prompt_is_not_settled_by_a_null_count(tmp_path: Path) -> None:
    # A response with no token_count before the next prompt is history, not a request
    # (formats.md §2: the turn was aborted); a null `info` after that prompt is a rate-limit
    # update, not that response's lost usage.
    lines = codex_lines()[:-1] + [
        _message("03.000", "user", "More?"),
        _counts("03.100", None, None),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    assert len(session.requests()) == 1
    assert session.header.ignored_records["event_msg/token_count-without-info"] == 1


def test_token_count_events_counts_every_count_with_info(tmp_path: Path) -> None:
    # formats.md §5 counts Codex requests as "token_count with info, incl. dupes": a count
    # whose info lacks `last_token_usage` is one of them; a null info is not.
    lines = _turn_with_lost_usage(
        _counts("02.100", None, (1000, 0, 20, 5)), [_counts("03.100", _C, _TOTAL_ABC)]
    )
    lines.insert(5, _counts("00.500", None, None))
    assert load(_write(tmp_path, lines)).header.token_count_events == 3


def test_a_line_skipped_after_a_lost_count_stops_the_derivation(tmp_path: Path) -> None:
    # The difference of the totals is B's alone only if no line was skipped in between (a
    # skipped line may have held another request's count): B is kept without usage.
    lines = _turn_with_lost_usage(_counts("02.100", None, None), [])
    text = jsonl(lines) + "{not json\n" + jsonl([_counts("03.100", _C, _TOTAL_ABC)])
    path = tmp_path / "rollout.jsonl"
    path.write_text(text, encoding="utf-8")
    b = load(path).requests()[1]
    assert b.usage is None and b.usage_missing is True


def test_a_compaction_estimate_between_a_lost_count_and_the_next_total_keeps_it_lost(
    tmp_path: Path,
) -> None:
    # The post-compaction estimate (zero input and output; formats.md §2: its total_tokens is
    # the estimated new context) moves no count of the total: B's usage still comes from the
    # next real total, and B stays a request.
    estimate = _counts("03.100", (0, 0, 0, 0), (1000, 0, 20, 5))
    estimate["payload"]["info"]["total_token_usage"]["total_tokens"] = 24653
    compacted = _item("03.050", {"message": "SUMMARY", "replacement_history": []}, "compacted")
    lines = _turn_with_lost_usage(_counts("02.100", None, None), [])
    del lines[12]  # B's answer: the compaction comes right after B's lost count
    lines += [
        compacted,
        estimate,
        _message("04.000", "user", "More?"),
        _message("05.000", "assistant", "done"),
        _counts("05.100", _C, _TOTAL_ABC),
    ]
    requests = load(_write(tmp_path, lines)).requests()
    assert len(requests) == 3
    b = requests[1].usage
    assert b is not None and b.derived_from == "total_token_usage"
    assert (b.input_tokens, b.cache_read_tokens, b.output_tokens) == (1100 - 896, 896, 30)


def test_a_request_is_not_sent_after_its_response_began(tmp_path: Path) -> None:
    # Timestamps out of order (a response item written with an earlier time than the event
    # before it): the request starts no later than its response.
    lines = codex_lines() + [
        _message("03.000", "user", "More?"),
        _message("02.500", "assistant", "No."),
        _tokens("03.600", 400, 128, 2, 2900),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    last = session.requests()[-1]
    answer = [e for e in session.events if isinstance(e, AssistantMessage)][-1]
    assert last.ts <= answer.ts


def test_a_response_ends_at_its_last_item_its_text_included(tmp_path: Path) -> None:
    # A response (reasoning, then its text a second later) ends when its last item was written:
    # the request's duration runs to there (docs/adapters.md, Requests).
    lines = codex_lines() + [
        _message("03.000", "user", "More?"),
        _item("04.000", {"type": "reasoning", "summary": [], "encrypted_content": None}),
        _message("05.000", "assistant", "No."),
        _tokens("05.100", 400, 128, 2, 2900),
    ]
    session = load(_write(tmp_path, lines), strict=True)
    answer = [e for e in session.events if isinstance(e, AssistantMessage)][-1]
    assert answer.ts.isoformat().startswith("2026-01-02T10:00:05")


def test_output_after_a_compaction_is_a_new_response_after_it(tmp_path: Path) -> None:
    # A response whose count the capture lost, then a compaction: the model's next call is a
    # request sent on the compacted history, after the Compaction, not part of the response
    # before it (which the compaction replaced).
    call = {"type": "function_call", "name": "b", "arguments": "{}"}
    lines = codex_lines() + [
        _message("03.000", "user", "More?"),
        _item("03.100", {**call, "call_id": "c2"}),
        _item("03.200", {"type": "function_call_output", "call_id": "c2", "output": "2"}),
        _item("04.000", {"message": "", "replacement_history": _history("More?")}, "compacted"),
        _item("05.000", {**call, "call_id": "c3"}),
        _item("05.100", {"type": "function_call_output", "call_id": "c3", "output": "3"}),
        _tokens("05.200", 600, 0, 2, 4500),
    ]
    session = load(_write(tmp_path, lines))
    c = next(e for e in session.events if isinstance(e, Compaction))
    holder = next(
        e for e in session.events if isinstance(e, AssistantMessage)
        and any(isinstance(b, ToolCallBlock) and b.id == "c3" for b in e.blocks)
    )
    assert session.events.index(holder) > session.events.index(c)
    assert holder.request_id is not None and holder.request_id == session.requests()[-1].request_id


def test_a_compaction_counts_every_item_of_its_replacement_history(tmp_path: Path) -> None:
    # `replacement_history_items` is the size of the logged new history, the messages it kept
    # in place (here the first prompt) included.
    lines = codex_lines() + [
        _item(
            "03.000",
            {"message": "", "replacement_history": _history("List the files.", "More?")},
            "compacted",
        ),
    ]
    c = next(e for e in load(_write(tmp_path, lines)).events if isinstance(e, Compaction))
    assert c.replacement_history_items == 2


def test_a_derived_usage_may_read_its_whole_prompt_from_the_cache(tmp_path: Path) -> None:
    # cached_input_tokens is part of input_tokens (formats.md §2), so it may equal it: a
    # share of the running total whose input is all cached is still one request's usage.
    total = (3224, 2048, 60, 17)  # A (1000, 0, 20, 5) + B (1024, 1024, 30, 12) + C
    lines = _turn_with_lost_usage(_counts("02.100", None, None), [_counts("03.100", _C, total)])
    b = load(_write(tmp_path, lines)).requests()[1].usage
    assert b is not None and b.derived_from == "total_token_usage"
    assert (b.input_tokens, b.cache_read_tokens, b.output_tokens) == (0, 1024, 30)


def test_a_typed_prompt_ending_in_a_newline_is_the_human_s(tmp_path: Path) -> None:
    # The user_message event and the message hold the same text, trailing newline included:
    # the prompt is the human's (docs/adapters.md, Codex), not injected context.
    lines = codex_lines()
    lines[3]["payload"]["content"][0]["text"] = "List the files.\n"
    lines[4]["payload"]["message"] = "List the files.\n"
    session = load(_write(tmp_path, lines), strict=True)
    assert [e.injected for e in session.events if isinstance(e, UserMessage)] == [True, False]


def test_a_model_switched_at_a_turn_is_the_model_of_the_requests_after_it(
    tmp_path: Path,
) -> None:
    # turn_context carries each user turn's model (formats.md §2): a switch prices and
    # tokenizes the later requests with the new model (formats.md §6 (e)).
    lines = codex_lines() + [
        _item("03.000", {"model": "gpt-5.4", "cwd": "/w"}, "turn_context"),
        _message("03.001", "user", "More?"),
        _message("04.000", "assistant", "No."),
        _tokens("04.100", 400, 128, 2, 2900),
    ]
    requests = load(_write(tmp_path, lines), strict=True).requests()
    assert [r.model for r in requests] == ["gpt-5.5", "gpt-5.5", "gpt-5.4"]


def test_counts_without_a_running_total_are_each_a_request_and_reported(tmp_path: Path) -> None:
    # Codex writes `total_token_usage` beside every `last_token_usage` (formats.md §2). Counts
    # that lost it are damaged, reported like a garbled total; each keeps its usage (they read
    # as repeats of one another, and every request after the first was dropped).
    lines = [line for n, line in enumerate(codex_lines()) if n != 9]  # no rate-limit repeat
    for line in lines:
        info = line["payload"].get("info")
        if info:
            del info["total_token_usage"]
    path = _write(tmp_path, lines)
    session = load(path)
    assert [r.usage.input_tokens for r in session.requests()] == [1200 - 1024, 1300 - 1024]
    assert [e.line for e in session.skipped] == [9, 11]
    assert all("total_token_usage" in str(e) for e in session.skipped)
    with pytest.raises(LogFormatError, match=r"rollout\.jsonl:9: expected `info\.total_token"):
        load(path, strict=True)



def test_a_running_total_one_token_short_shows_no_usage(tmp_path: Path) -> None:
    # A count that shrank, if only by one token, is no request's share (no count below 0).
    lines = _turn_with_lost_usage(
        _counts("02.100", None, None), [_counts("03.100", _C, (3300, 1023, 60, 17))]
    )
    b = load(_write(tmp_path, lines)).requests()[1]
    assert b.usage is None and b.usage_missing is True
