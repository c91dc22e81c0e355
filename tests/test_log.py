"""The native `replay-log` format: strict reading, lossless round trip, bad input, atomic writes."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import gen
import pytest
from conftest import RUN42
from hypothesis import given, settings

from replay import _atomic
from replay._errors import LogFormatError, ReplayError
from replay.log import (
    FORMAT_VERSION,
    AssistantMessage,
    RequestMarker,
    Session,
    SessionHeader,
    TextBlock,
    ToolCallBlock,
    ToolResult,
    UserMessage,
    dump_event,
    dumps_log,
    parse_event,
    read_log,
    write_log,
)

HEADER = '{"type":"session","format":"replay-log","version":1,"ts":"2026-03-02T09:00:00Z"}'
USER = '{"type":"user","ts":"2026-03-02T09:00:01Z","text":"hi"}'
REQUEST = '{"type":"request","ts":"2026-03-02T09:00:02Z","request_id":"r1"}'


def _write(tmp_path: Path, *lines: str, name: str = "log.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# Reading valid files


def test_run42_reads_strictly_with_every_event_kind_it_needs():
    session = read_log(RUN42, strict=True)
    assert session.skipped == []
    assert session.header.format == "replay-log"
    assert session.header.version == FORMAT_VERSION
    assert session.header.tools and session.header.system
    kinds = {type(e).__name__ for e in session.events}
    assert {"UserMessage", "AssistantMessage", "ToolResult", "RequestMarker"} <= kinds
    assert 13 <= len(session.requests()) <= 20
    # Every event carries a timestamp, and file order is time order in a recorded run.
    stamps = [session.header.ts] + [e.ts for e in session.events]
    assert stamps == sorted(stamps)


def test_run42_rewrites_to_identical_bytes(tmp_path):
    session = read_log(RUN42, strict=True)
    out = tmp_path / "copy.jsonl"
    write_log(session, out)
    assert out.read_bytes() == RUN42.read_bytes()


def test_events_read_alike_share_one_fields_set_until_one_is_assigned(tmp_path):
    lines = [
        '{"type":"user","ts":"2026-03-02T09:00:01Z","text":"a"}',
        '{"type":"user","ts":"2026-03-02T09:00:02Z","text":"b"}',
        '{"type":"assistant","ts":"2026-03-02T09:00:03Z","blocks":[{"type":"text","text":"x"}]}',
        '{"type":"assistant","ts":"2026-03-02T09:00:04Z","blocks":[{"type":"text","text":"y"}]}',
    ]
    first, second, answer, other = read_log(_write(tmp_path, HEADER, *lines)).events
    assert first.model_fields_set is second.model_fields_set  # one set for both
    assert answer.blocks[0].model_fields_set is other.blocks[0].model_fields_set
    written = dump_event(second), dump_event(other)
    first.injected = True
    answer.blocks[0].text = "z"
    answer.request_id = "r9"
    answer.note = "an unknown field"  # kept as an extra field of this event only
    assert "injected" in first.model_fields_set and "injected" not in second.model_fields_set
    assert "request_id" not in other.model_fields_set
    assert answer.model_extra == {"note": "an unknown field"} and other.model_extra == {}
    assert (dump_event(second), dump_event(other)) == written
    assert json.loads(dump_event(first))["injected"] is True


def test_tool_and_thread_names_are_read_once_per_distinct_value(tmp_path):
    result = '{"type":"tool_result","ts":"2026-03-02T09:00:0%dZ","call_id":"c%d","tool_name":"%s",'
    lines = [result % (n, n, name) + '"output":"x","thread":"sub"}' for n, name in
             enumerate(["read_file", "read_file", "grep"])]
    first, second, third = read_log(_write(tmp_path, HEADER, *lines)).events
    assert first.tool_name is second.tool_name and first.thread is third.thread
    assert (second.tool_name, third.tool_name) == ("read_file", "grep")


def test_ids_and_texts_that_recur_are_read_once_per_distinct_value(tmp_path):
    read = ('{"type":"assistant","ts":"2026-03-02T09:00:0%dZ","request_id":"r%d","blocks":['
            '{"type":"tool_call","id":"c%d","name":"read_file","arguments":{"path":"a.py"}}]}')
    result = ('{"type":"tool_result","ts":"2026-03-02T09:00:0%dZ","call_id":"c%d",'
              '"tool_name":"read_file","output":"%s"}')
    request = '{"type":"request","ts":"2026-03-02T09:00:0%dZ","request_id":"r%d"}'
    lines = [request % (1, 1), read % (2, 1, 1), result % (3, 1, "same text"),
             request % (4, 2), read % (5, 2, 2), result % (6, 2, "same text"),
             result % (7, 3, "other text")]
    ask, call, first, _, again, second, third = read_log(_write(tmp_path, HEADER, *lines)).events
    assert call.request_id is ask.request_id and first.call_id is call.blocks[0].id
    assert first.output is second.output and third.output == "other text"
    assert call.blocks[0].arguments["path"] is again.blocks[0].arguments["path"]
    assert first.id is None and call.blocks[0].id != again.blocks[0].id


def test_models_texts_and_nested_models_that_recur_are_read_once(tmp_path):
    """`_NAMES`: models, providers, tool names in calls, user texts and compaction summaries that
    recur are one string each; a request's usage shares its fields set as blocks do."""
    request = ('{"type":"request","ts":"2026-03-02T09:00:0%dZ","request_id":"r%d",'
               '"model":"claude-sonnet-4-5","provider":"anthropic","usage":{"input_tokens":%d}}')
    call = ('{"type":"assistant","ts":"2026-03-02T09:00:0%dZ","blocks":[{"type":"tool_call",'
            '"id":"c%d","name":"grep"}]}')
    again = '{"type":"user","ts":"2026-03-02T09:00:0%dZ","text":"again"}'
    compaction = '{"type":"compaction","ts":"2026-03-02T09:00:0%dZ","summary":"so far"}'
    lines = [again % 1, request % (2, 1, 3), call % (3, 1), again % 4, request % (5, 2, 4),
             call % (6, 2), compaction % 7, compaction % 8]
    path = _write(tmp_path, HEADER, *lines)
    user, first, one, user2, second, two, squash, squash2 = read_log(path).events
    assert first.model is second.model and first.provider is second.provider
    assert one.blocks[0].name is two.blocks[0].name and user.text is user2.text
    assert squash.summary is squash2.summary
    assert first.usage.model_fields_set is second.usage.model_fields_set
    assert (first.usage.input_tokens, second.usage.input_tokens) == (3, 4)


def test_a_time_without_an_offset_is_utc(tmp_path):
    """A log mixing `…Z` times with times that have no offset replays (they were compared:
    a traceback) and reads them as UTC."""
    import replay

    lines = RUN42.read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines[1:]]
    naive = [n for n, e in enumerate(events) if e["type"] == "request"][3]
    stamp = events[naive]["ts"]
    events[naive]["ts"] = stamp.removesuffix("Z").split("+")[0]
    path = tmp_path / "naive.jsonl"
    path.write_text("\n".join([lines[0], *map(json.dumps, events)]) + "\n", encoding="utf-8")
    session = read_log(path, strict=True)
    marker = session.events[naive]
    assert marker.ts == read_log(RUN42).events[naive].ts and marker.ts.utcoffset() is not None
    assert replay.replay(path, "baseline").summary["requests"][0] == 14


def test_minimal_log_and_blank_lines(tmp_path):
    path = _write(tmp_path, HEADER, "", "   ", USER, REQUEST)
    session = read_log(path, strict=True)
    assert [type(e) for e in session.events] == [UserMessage, RequestMarker]
    assert session.events[0].thread == "main"
    assert session.path == str(path)


ODD_WHITESPACE = ["\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "\u3000"]
"""Characters `str.strip` takes for whitespace that JSON does not (its own: space, tab, CR, LF)."""


@pytest.mark.parametrize("odd", ODD_WHITESPACE)
def test_a_line_of_other_whitespace_than_json_s_is_malformed_not_blank(tmp_path, odd):
    # docs/log-format.md: a blank line (spaces, tabs, carriage returns) is skipped; a line of
    # other characters, a form feed or a no-break space among them, is a malformed line.
    path = _write(tmp_path, HEADER, " \t\r", USER, f" {odd} ", REQUEST)
    session = read_log(path)
    assert [type(e) for e in session.events] == [UserMessage, RequestMarker]
    assert [str(e).split(" (")[0] for e in session.skipped] == [
        f"{path}:4: expected a JSON object"
    ]
    with pytest.raises(LogFormatError, match=rf"{path.name}:4: expected a JSON object"):
        read_log(path, strict=True)


def test_tool_result_output_is_kept_whole(tmp_path):
    big = "x" * 300_000 + "\nEND"
    result = json.dumps(
        {
            "type": "tool_result",
            "ts": "2026-03-02T09:00:03Z",
            "call_id": "c",
            "tool_name": "t",
            "output": big,
        }
    )
    session = read_log(_write(tmp_path, HEADER, USER, result), strict=True)
    assert session.events[1].output == big


# ---------------------------------------------------------------------------------------------
# Lossless round trip (property)


def _as_written(line: dict, header: bool = False) -> dict:
    """A generated line as the writer normalises it: the header's `format` and `version` always
    written, the timestamps (`ts`, a tool result's `cleared_at`) as the instant and UTC offset
    they name (any ISO-8601 form)."""
    line = dict(line)
    if header:
        line = {"format": "replay-log", "version": FORMAT_VERSION} | line
    for key in ("ts", "cleared_at"):
        ts = line.get(key)
        if ts is not None:
            ts = ts if isinstance(ts, datetime) else datetime.fromisoformat(ts)
            line[key] = (ts, ts.utcoffset())
    return line


@settings(max_examples=100, deadline=None)
@given(gen.log_dicts())
def test_round_trip_is_lossless_with_unknown_fields(log):
    """Lines generated with any fields of the event models (and unknown ones at every level)
    are written back as given, after reading them and after reading the written file."""
    header_line, lines = log
    header = parse_event(header_line, "<gen>", 1)
    events = [parse_event(d, "<gen>", n + 2) for n, d in enumerate(lines)]
    text = dumps_log(header, events)
    written = [json.loads(line) for line in text.removesuffix("\n").split("\n")]
    assert [_as_written(w, i == 0) for i, w in enumerate(written)] == [
        _as_written(header_line, True),
        *map(_as_written, lines),
    ]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.jsonl"
        path.write_text(text, encoding="utf-8")
        back = read_log(path, strict=True)
        assert back.skipped == []
        assert back.header.model_dump() == header.model_dump()
        assert [e.model_dump() for e in back.events] == [e.model_dump() for e in events]
        # Unknown fields survive at every level.
        assert back.header.model_extra == header.model_extra
        for a, b in zip(back.events, events, strict=True):
            assert a.model_extra == b.model_extra
            if isinstance(a, AssistantMessage):
                assert [x.model_extra for x in a.blocks] == [x.model_extra for x in b.blocks]
        # A second write gives the same bytes.
        again = Path(folder) / "again.jsonl"
        write_log(back, again)
        assert again.read_text(encoding="utf-8") == text


def test_unknown_fields_are_kept_at_event_and_block_level(tmp_path):
    lines = [
        HEADER[:-1] + ',"x_harness":{"flags":[1,2]},"tools":[{"name":"t","x_cache":"ephemeral"}]}',
        '{"type":"assistant","ts":"2026-03-02T09:00:01Z","x_latency":12,"blocks":'
        '[{"type":"text","text":"a","x_cite":[1]},{"type":"tool_call","id":"c","name":"t",'
        '"arguments":{"p":1},"x_parallel":true}]}',
        '{"type":"request","ts":"2026-03-02T09:00:02Z","request_id":"r",'
        '"usage":{"input_tokens":3,"x_service_tier":"priority"}}',
    ]
    path = _write(tmp_path, *lines)
    session = read_log(path, strict=True)
    assert session.header.model_extra == {"x_harness": {"flags": [1, 2]}}
    assert session.header.tools[0].model_extra == {"x_cache": "ephemeral"}
    assistant = session.events[0]
    assert assistant.model_extra == {"x_latency": 12}
    assert assistant.blocks[0].model_extra == {"x_cite": [1]}
    assert assistant.blocks[1].model_extra == {"x_parallel": True}
    assert session.events[1].usage.model_extra == {"x_service_tier": "priority"}
    out = tmp_path / "out.jsonl"
    write_log(session, out)
    assert [json.loads(x) for x in out.read_text().splitlines()] == [json.loads(x) for x in lines]


def test_unset_defaults_are_not_written_but_discriminators_are():
    event = UserMessage(ts="2026-03-02T09:00:01Z", text="hi")
    line = json.loads(dump_event(event))
    assert line == {"type": "user", "ts": "2026-03-02T09:00:01Z", "text": "hi"}
    header = json.loads(dump_event(SessionHeader(ts="2026-03-02T09:00:00Z")))
    assert list(header)[:3] == ["type", "format", "version"]


# ---------------------------------------------------------------------------------------------
# Bad input


def _error(path: Path, strict: bool = True) -> LogFormatError:
    with pytest.raises(LogFormatError) as info:
        read_log(path, strict=strict)
    message = str(info.value)
    assert "\n" not in message
    return info.value


def test_empty_file(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    err = _error(path, strict=False)
    assert str(path) in str(err) and "empty log" in str(err)
    assert err.line is None  # the whole file's error, at no line
    assert str(err) == f"{path}: empty log: expected a `session` header line"
    blank = _write(tmp_path, "", "  ", name="blank.jsonl")
    assert "empty log" in str(_error(blank, strict=False))


def test_missing_header(tmp_path):
    path = _write(tmp_path, USER, REQUEST)
    err = _error(path, strict=False)  # a bad header stops even a lenient read
    assert str(err).startswith(f"{path}:1: ")
    assert "`session` header" in str(err)


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ('{"type":"user","ts":"2026-03-02T09:00:01Z","text":"hi"', "expected a JSON object"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('"a string"', "expected a JSON object, got str"),
        ("12", "expected a JSON object, got int"),
        ('{"type":"telemetry","ts":"2026-03-02T09:00:01Z"}', "expected `type` to be one of"),
        ('{"ts":"2026-03-02T09:00:01Z","text":"no type"}', "expected `type` to be one of"),
        ('{"type":"user","ts":"2026-03-02T09:00:01Z","text":5}', "invalid `user` event"),
        ('{"type":"user","text":"no ts"}', "field required at `user.ts`"),
        (  # the summary is sent as the user's message or the assistant's
            '{"type":"compaction","ts":"2026-03-02T09:00:01Z","summary":"s",'
            '"message_role":"system"}',
            "invalid `compaction` event: input should be 'user' or 'assistant' at "
            "`compaction.message_role`",
        ),
        # the first of its errors (`ts` comes before `text`), not the last
        ('{"type":"user","text":5}', "invalid `user` event: field required at `user.ts`"),
        (
            '{"type":"tool_result","ts":"2026-03-02T09:00:01Z","call_id":"c","tool_name":"t",'
            '"output":"o","is_error":"maybe"}',
            "is_error`",
        ),
        (
            '{"type":"assistant","ts":"2026-03-02T09:00:01Z","blocks":[{"type":"image"}]}',
            "invalid `assistant` event",
        ),
        (
            '{"type":"request","ts":"2026-03-02T09:00:01Z","request_id":"r","usage":{"input_tokens":'
            '"many"}}',
            "usage.input_tokens",
        ),
        (HEADER, "expected one `session` header, got a second"),
        (
            '{"type":"request","ts":"2026-03-02T09:00:02Z","request_id":"r","usage":{"input_tokens":'
            '-5}}',
            "greater than or equal to 0 at `request.usage.input_tokens`",
        ),
        (  # past any request's size, and past the 64-bit sums of the result tables
            '{"type":"request","ts":"2026-03-02T09:00:02Z","request_id":"r","usage":{"input_tokens":'
            + "1" + "0" * 30 + "}}",
            "less than or equal to 1000000000000 at `request.usage.input_tokens`",
        ),
        (  # each bucket in range, their sum (the prompt) past it: it broke the replay
            '{"type":"request","ts":"2026-03-02T09:00:02Z","request_id":"r","usage":{"input_tokens":'
            '600000000000,"cache_read_tokens":600000000000}}',
            "invalid `request` event: expected the prompt's buckets (input, cache read, cache "
            "writes) to add up to at most 1,000,000,000,000 tokens, not 1,200,000,000,000 at "
            "`request.usage`",
        ),
        (  # a negative thinking size took tokens off the prompt, a huge one crashed the replay
            '{"type":"assistant","ts":"2026-03-02T09:00:01Z","blocks":[{"type":"thinking",'
            '"estimated_tokens":-1000}]}',
            "greater than or equal to 0 at `assistant.blocks.0.thinking.estimated_tokens`",
        ),
        (
            '{"type":"assistant","ts":"2026-03-02T09:00:01Z","blocks":[{"type":"thinking",'
            '"estimated_tokens":2000000000000}]}',
            "less than or equal to 1000000000000 at `assistant.blocks.0.thinking.estimated_tokens`",
        ),
        (
            '{"type":"thread","ts":"2026-03-02T09:00:01Z","thread_id":"s",'
            '"hidden_prefix_tokens":-3}',
            "greater than or equal to 0 at `thread.hidden_prefix_tokens`",
        ),
        ('{"type":"user","ts":"2026-03-02T09:00:01Z","n":' + "9" * 5000 + "}",
         "expected a JSON object (Exceeds the limit (4300 digits)"),
        ("[" * 100_000, "expected a JSON object (nested too deeply)"),
        (  # Python reads NaN as a float, and it was written back as null
            '{"type":"user","ts":"2026-03-02T09:00:01Z","text":"hi","n":NaN}',
            "expected a JSON object (NaN is not a JSON value)",
        ),
        ('{"type":"user","ts":"2026-03-02T09:00:01Z","text":"hi","n":-Infinity}',
         "expected a JSON object (-Infinity is not a JSON value)"),
    ],
    ids=lambda v: v[:40] if isinstance(v, str) else v,
)
def test_bad_line_strict_names_file_line_and_expectation(tmp_path, bad, expected):
    path = _write(tmp_path, HEADER, USER, bad, REQUEST)
    err = _error(path, strict=True)
    assert err.path == str(path) and err.line == 3
    assert str(err).startswith(f"{path}:3: ")
    assert expected in str(err)


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        # 54 characters: the comma is missing after the last one
        ('{"type":"user","ts":"2026-03-02T09:00:01Z","text":"hi"',
         "expected a JSON object (Expecting ',' delimiter at column 55)"),
        # cut short inside the string that opens at column 51, then the next line: the
        # newline is no "Invalid control character at"
        ('{"type":"user","ts":"2026-03-02T09:00:01Z","text":"hi',
         "expected a JSON object (Unterminated string starting at column 51)"),
        ('{"type":"user","ts":"2026-03-02T09:00:01Z","n":' + "9" * 5000 + "}",
         "expected a JSON object (Exceeds the limit (4300 digits) for integer string conversion)"),
    ],
    ids=["unclosed", "cut-inside-a-string", "long-integer"],
)
def test_a_line_that_is_no_json_says_why_at_the_file_s_line_only(tmp_path, bad, expected):
    """`FILE:LINE: what was expected` (docs/log-format.md): the column in that line, not the
    decoder's `line 1 column 52`, which is no line of the file, nor the advice after the first
    clause of Python's message, which is for programmers (`first_clause`)."""
    path = _write(tmp_path, HEADER, USER, bad, REQUEST)
    assert str(_error(path)) == f"{path}:3: {expected}"


def test_an_unknown_type_is_told_the_known_ones_in_alphabetical_order(tmp_path):
    path = _write(tmp_path, HEADER, '{"type":"telemetry","ts":"2026-03-02T09:00:01Z"}')
    assert str(_error(path)) == (
        f"{path}:2: expected `type` to be one of assistant, compaction, request, session, "
        "thread, tool_result, user, got 'telemetry'"
    )


@pytest.mark.parametrize("first", ["[1, 2]", '"session"', "null"])
def test_a_first_line_that_is_no_object_is_no_header_even_leniently(tmp_path, first):
    path = _write(tmp_path, first, HEADER, USER, REQUEST)
    err = _error(path, strict=False)
    assert str(err) == f"{path}:1: expected a `session` header line of a replay-log file"


def test_only_a_leading_byte_order_mark_is_dropped(tmp_path):
    """docs/log-format.md: a leading byte order mark is accepted and dropped; one at the start
    of a later line is no part of the file's start, and that line is no JSON."""
    bom = "\ufeff".encode()
    path = tmp_path / "bom.jsonl"
    path.write_bytes(bom + f"{HEADER}\n{USER}\n{REQUEST}\n".encode())
    session = read_log(path, strict=True)
    assert session.header.version == FORMAT_VERSION
    assert [type(e) for e in session.events] == [UserMessage, RequestMarker]
    path.write_bytes(f"{HEADER}\n".encode() + bom + f"{USER}\n{REQUEST}\n".encode())
    assert str(_error(path)).startswith(f"{path}:2: expected a JSON object (")
    assert [e.line for e in read_log(path).skipped] == [2]


def test_a_validation_error_without_a_field_names_no_place():
    """`describe_invalid` says where the first error is (`at `field``) only when it has a
    place: an error of the whole value has none."""
    from pydantic import TypeAdapter, ValidationError

    from replay.log._io import describe_invalid

    with pytest.raises(ValidationError) as info:
        TypeAdapter(int).validate_python("many")
    said = describe_invalid(info.value)
    assert said.startswith("input should be a valid integer") and " at `" not in said


def test_loads_json_reads_utf8_bytes_as_json_loads_does():
    from replay.log._io import loads_json

    text = '{"a": "caf\u00e9", "b": [1, 2.5, null]}'
    assert loads_json(text.encode("utf-8")) == json.loads(text.encode("utf-8"))
    assert loads_json(text) == {"a": "caf\u00e9", "b": [1, 2.5, None]}
    with pytest.raises(ValueError, match="NaN is not a JSON value"):
        loads_json(b'{"a": NaN}')


def test_a_request_before_any_message_of_its_thread_is_a_bad_line(tmp_path):
    """No prompt can be rebuilt for it (its thread's first message was lost)."""
    path = _write(tmp_path, HEADER, REQUEST.replace("r1", "r0"), USER, REQUEST)
    session = read_log(path, check_pairs=True)
    assert [(e.line, e.expected) for e in session.skipped] == [
        (2, "expected a message of thread 'main' before request r0")
    ]
    assert [r.request_id for r in session.requests()] == ["r1"]
    with pytest.raises(LogFormatError, match=r":2: expected a message of thread 'main'"):
        read_log(path, strict=True, check_pairs=True)
    assert len(read_log(path).requests()) == 2  # read as written: the lossless round trip


def test_a_response_the_harness_never_sent_back_is_no_message_to_build_a_prompt_from(tmp_path):
    """An assistant message with `in_context: false` (billed, never sent back) is not what a
    request's prompt is built from: a request after only that has no message before it."""
    aborted = (
        '{"type":"assistant","ts":"2026-03-02T09:00:01Z","in_context":false,'
        '"blocks":[{"type":"text","text":"cut short"}]}'
    )
    path = _write(tmp_path, HEADER, aborted, REQUEST.replace("r1", "r0"), USER, REQUEST)
    session = read_log(path, check_pairs=True)
    assert [(e.line, e.expected) for e in session.skipped] == [
        (3, "expected a message of thread 'main' before request r0")
    ]


@pytest.mark.parametrize(
    ("in_context", "server_side"), [(False, False), (True, True)], ids=["aborted", "server-side"]
)
def test_calls_that_expect_no_result_are_not_due_at_the_next_request(
    tmp_path, in_context, server_side
):
    """Only calls the model saw back and the client runs must be answered before the thread's
    next request: a call of a response never sent back (`in_context: false`), or one the
    provider ran (`server_side: true`), has no result, and gets no placeholder."""
    call = dict(type="tool_call", id="c1", name="web_search", arguments={})
    blocks = [call | {"server_side": server_side}, {"type": "text", "text": "found"}]
    assistant = dict(type="assistant", ts="2026-03-02T09:00:03Z", request_id="r1")
    assistant |= {"in_context": in_context, "blocks": blocks}
    again = '{"type":"user","ts":"2026-03-02T09:00:04Z","text":"more"}'
    second = '{"type":"request","ts":"2026-03-02T09:00:05Z","request_id":"r2"}'
    path = _write(tmp_path, HEADER, USER, REQUEST, json.dumps(assistant), again, second)
    session = read_log(path, check_pairs=True)
    assert session.skipped == []
    assert not any(isinstance(e, ToolResult) for e in session.events)
    assert read_log(path, strict=True, check_pairs=True).skipped == []


def test_a_line_written_twice_is_a_bad_line(tmp_path):
    """Event ids are unique in a file: the second line with one is skipped and counted (a
    strict read stops there), not replayed as one more request."""
    user = USER.replace('"type":"user",', '"type":"user","id":"e2",')
    request = REQUEST.replace('"type":"request",', '"type":"request","id":"e3",')
    path = _write(tmp_path, HEADER, user, request, user, request)
    session = read_log(path, check_pairs=True)
    assert [(e.line, e.expected) for e in session.skipped] == [
        (4, "expected a unique event id: 'e2' is the id of line 2 (a line written twice?)"),
        (5, "expected a unique event id: 'e3' is the id of line 3 (a line written twice?)"),
    ]
    assert len(session.requests()) == 1
    with pytest.raises(LogFormatError, match=r":4: expected a unique event id"):
        read_log(path, strict=True, check_pairs=True)


def test_the_header_s_id_is_one_of_the_file_s_ids(tmp_path):
    """A line with the header's id was accepted, even by a strict read."""
    header = HEADER.replace('"type":"session",', '"type":"session","id":"x",')
    user = USER.replace('"type":"user",', '"type":"user","id":"x",')
    path = _write(tmp_path, header, USER, REQUEST, user)
    with pytest.raises(LogFormatError, match=r":4: expected a unique event id: 'x' is the id "
                       r"of line 1"):
        read_log(path, strict=True, check_pairs=True)


def test_an_event_of_a_thread_nothing_opened_is_a_bad_line(tmp_path):
    """`thread` is `main` or a thread a `thread` event opened: a strict read stops at the
    thread's first line; a lenient one keeps its lines, counted once, and replays it as a
    thread of its own (with the session's system prompt, as the engine does)."""
    ghost = [
        '{"type":"user","ts":"2026-03-02T09:00:03Z","text":"look","thread":"ghost"}',
        '{"type":"request","ts":"2026-03-02T09:00:04Z","request_id":"r2","thread":"ghost"}',
    ]
    path = _write(tmp_path, HEADER, USER, REQUEST, *ghost)
    with pytest.raises(LogFormatError) as err:
        read_log(path, strict=True, check_pairs=True)
    assert str(err.value) == (
        f"{path}:4: expected a `thread` event opening thread 'ghost' before its first line"
    )
    session = read_log(path, check_pairs=True)
    assert [(e.line, e.expected) for e in session.skipped] == [
        (4, "expected a `thread` event opening thread 'ghost' before its first line; "
            "replayed as a thread of its own, with the session's system prompt")
    ]
    assert [e.thread for e in session.requests()] == ["main", "ghost"]
    opened = '{"type":"thread","ts":"2026-03-02T09:00:03Z","thread_id":"ghost"}'
    path = _write(tmp_path, HEADER, USER, REQUEST, opened, *ghost, name="opened.jsonl")
    assert read_log(path, strict=True, check_pairs=True).skipped == []
    parent = opened.replace('"thread_id":"ghost"', '"thread_id":"sub","thread":"ghost"')
    path = _write(tmp_path, HEADER, USER, REQUEST, parent, name="parent.jsonl")
    with pytest.raises(LogFormatError, match=r":4: expected a `thread` event opening thread "
                                             r"'ghost'"):  # a thread's parent is a thread too
        read_log(path, strict=True, check_pairs=True)
    # Opened too late: the thread began with the session's system prompt, as line 4 says, and
    # keeps it (a `thread` event now would change a running thread's prompt).
    late = opened.replace("09:00:03Z", "09:00:05Z").replace('"ghost"}', '"ghost","system":"x"}')
    path = _write(tmp_path, HEADER, USER, REQUEST, ghost[0], late, ghost[1], name="late.jsonl")
    session = read_log(path, check_pairs=True)
    assert [(e.line, e.expected) for e in session.skipped] == [
        (4, "expected a `thread` event opening thread 'ghost' before its first line; "
            "replayed as a thread of its own, with the session's system prompt"),
        (5, "expected a `thread` event before its thread's first line: thread 'ghost' began "
            "on line 4, replayed with the session's system prompt"),
    ]
    assert [e.type for e in session.events if e.type == "thread"] == []
    assert [e.thread for e in session.requests()] == ["main", "ghost"]


@pytest.mark.parametrize(
    ("thread", "expected"),
    [
        ('{"type":"thread","ts":"2026-03-02T09:00:05Z","thread_id":"sub","system":"again"}',
         "expected one `thread` event per thread: thread 'sub' was opened on line 4"),
        ('{"type":"thread","ts":"2026-03-02T09:00:05Z","thread_id":"main","system":"other"}',
         "expected a `thread` event to open a subagent thread, not 'main' (the session "
         "header opens it)"),
    ],
    ids=["opened-twice", "opens-main"],
)
def test_a_thread_event_for_a_thread_already_open_is_a_bad_line(tmp_path, thread, expected):
    """A `thread` event opens one subagent thread, once (no adapter writes another): a second
    one, or one for `main`, would change a running thread's system prompt or model. A strict
    read stops there; a lenient one skips the line, counted, and the thread keeps its first
    definition."""
    opened = '{"type":"thread","ts":"2026-03-02T09:00:03Z","thread_id":"sub","system":"sub"}'
    sub = [
        '{"type":"user","ts":"2026-03-02T09:00:04Z","text":"look","thread":"sub"}',
        '{"type":"request","ts":"2026-03-02T09:00:06Z","request_id":"r2","thread":"sub"}',
    ]
    path = _write(tmp_path, HEADER, USER, REQUEST, opened, sub[0], thread, sub[1])
    with pytest.raises(LogFormatError) as err:
        read_log(path, strict=True, check_pairs=True)
    assert str(err.value) == f"{path}:6: {expected}"
    session = read_log(path, check_pairs=True)
    assert [(e.line, e.expected) for e in session.skipped] == [(6, expected)]
    starts = [e for e in session.events if e.type == "thread"]
    assert [(e.thread_id, e.system) for e in starts] == [("sub", "sub")]
    assert len(read_log(path, strict=True).events) == 6  # read as written


def test_a_request_id_an_earlier_request_has_is_a_bad_line(tmp_path):
    """Request ids are unique in a file (the adapters suffix repeated ones): a strict read
    stops at the second; a lenient one replays both, counted."""
    again = REQUEST.replace("09:00:02Z", "09:00:04Z")
    path = _write(tmp_path, HEADER, USER, REQUEST, USER.replace('"hi"', '"more"'), again)
    with pytest.raises(LogFormatError) as err:
        read_log(path, strict=True, check_pairs=True)
    assert str(err.value) == (
        f"{path}:5: expected a unique request_id: 'r1' is the request_id of line 3"
    )
    session = read_log(path, check_pairs=True)
    assert [(e.line, e.expected) for e in session.skipped] == [
        (5, "expected a unique request_id: 'r1' is the request_id of line 3; both are replayed")
    ]
    assert len(session.requests()) == 2
    assert len(read_log(path, strict=True).requests()) == 2  # read as written


def test_a_response_naming_no_request_is_a_bad_line_that_answers_the_last_one(tmp_path):
    """An assistant's `request_id` names an earlier request: one that names none (an edited
    id) is counted, and the response answers its thread's last request, as one without a
    `request_id` would; left unpaired, its output was priced at zero tokens, silently."""
    import replay

    lines = _run42_lines()
    original = replay.replay(_write(tmp_path, *lines, name="a.jsonl"), "baseline")
    at = next(n for n, ln in enumerate(lines) if ln.endswith('"request_id":"req-014"}'))
    lines[at] = lines[at].replace('"req-014"', '"req-14"')
    path = _write(tmp_path, *lines, name="b.jsonl")
    expected = "expected the assistant's request_id to name an earlier request: 'req-14' names none"
    with pytest.raises(LogFormatError) as err:
        read_log(path, strict=True, check_pairs=True)
    assert str(err.value) == f"{path}:{at + 1}: {expected}"
    session = read_log(path, check_pairs=True)
    assert [(e.line, e.expected) for e in session.skipped] == [
        (at + 1, f"{expected}; it answers its thread's last request")
    ]
    edited = replay.replay(path, "baseline")
    assert edited.summary["output_tokens"].to_list() == (
        original.summary["output_tokens"].to_list()
    )
    assert edited.summary["cost_usd"].to_list() == original.summary["cost_usd"].to_list()


def test_a_repeated_request_id_still_gets_its_missing_tool_results(tmp_path):
    from replay import load

    lines = _run42_lines()
    lines = lines[:4] + [lines[5].replace('"req-002"', '"req-001"')] + lines[6:]
    session = load(_write(tmp_path, *lines))
    assert [(e.line, e.expected.split(";")[0]) for e in session.skipped] == [
        (5, "expected a unique request_id: 'req-001' is the request_id of line 3"),
        (5, "expected a tool_result for call 'call-001' (list_files, line 4) before request "
            "req-001"),
        (6, "expected the assistant's request_id to name an earlier request: 'req-002' names "
            "none"),  # its request was the one edited
    ]
    assert getattr(session.events[3], "synthetic", None) == "missing tool result"


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([HEADER, USER, REQUEST,
          '{"type":"user","ts":"2026-03-02T09:00:03Z","text":"x","thread":"ghost"}',
          '{"type":"request","ts":"2026-03-02T09:00:04Z","request_id":"r2","thread":"ghost"}'],
         ":4: expected a `thread` event opening thread 'ghost'"),
        ([HEADER, USER, REQUEST, USER, REQUEST], ":5: expected a unique request_id: 'r1'"),
        ([HEADER, USER, REQUEST,
          '{"type":"thread","ts":"2026-03-02T09:00:03Z","thread_id":"main","system":"x"}'],
         ":4: expected a `thread` event to open a subagent thread, not 'main'"),
    ],
    ids=["unopened-thread", "duplicate-request-id", "thread-opening-main"],
)
def test_cli_strict_refuses_and_lenient_notes_thread_and_request_id_rules(
    tmp_path, invoke, lines, expected
):
    path = _write(tmp_path, *lines)
    result = invoke("run", path, "-s", "baseline", "--strict")
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: {path}{expected}")
    assert len(result.stderr.splitlines()) == 1
    result = invoke("run", path, "-s", "baseline")
    assert result.exit_code == 0, result.stderr
    assert "1 malformed line(s) skipped or repaired" in result.stderr
    assert expected.split(": ", 1)[1] in result.stderr


def test_a_compaction_replacing_events_the_log_lacks_is_reported(tmp_path):
    compaction = (
        '{"type":"compaction","ts":"2026-03-02T09:00:03Z","summary":"s","replaces":["e2","e9"]}'
    )
    user = USER.replace('"type":"user",', '"type":"user","id":"e2",')
    path = _write(tmp_path, HEADER, user, REQUEST, compaction)
    session = read_log(path, check_pairs=True)
    assert [(e.line, e.expected) for e in session.skipped] == [
        (4, "expected `replaces` to name earlier events: 1 of its ids name none (first: 'e9'); "
            "they are ignored")
    ]
    assert len(session.events) == 3  # the line is kept (counted, not skipped)
    assert session.requests() == [session.events[1]]  # a compaction is no request
    with pytest.raises(LogFormatError, match=r":4: expected `replaces` to name earlier events"):
        read_log(path, strict=True, check_pairs=True)


def test_lenient_mode_skips_and_counts(tmp_path):
    path = _write(
        tmp_path,
        HEADER,
        USER,
        "{not json",
        '{"type":"telemetry","ts":"2026-03-02T09:00:01Z"}',
        '{"type":"user","ts":"2026-03-02T09:00:01Z","text":5}',
        REQUEST,
    )
    session = read_log(path)  # lenient is the default
    assert [type(e) for e in session.events] == [UserMessage, RequestMarker]
    assert [e.line for e in session.skipped] == [3, 4, 5]
    assert all(isinstance(e, LogFormatError) for e in session.skipped)
    with pytest.raises(LogFormatError, match=r":3: "):
        read_log(path, strict=True)


def test_newer_version_is_refused(tmp_path):
    path = _write(tmp_path, HEADER.replace('"version":1', '"version":2'), USER)
    err = _error(path, strict=False)
    assert ":1: " in str(err) and "version" in str(err)
    assert str(err) == f"{path}:1: expected replay-log version <= 1, got 2 (upgrade replay)"


@pytest.mark.parametrize("version", [0, -3])
def test_a_version_below_1_is_refused(tmp_path, version):
    """No such version: the header is wrong, in lenient reads too (as a newer one is)."""
    path = _write(tmp_path, HEADER.replace('"version":1', f'"version":{version}'), USER)
    err = _error(path, strict=False)
    assert str(err) == f"{path}:1: expected replay-log version >= 1, got {version}"


def test_wrong_format_name_is_refused(tmp_path):
    path = _write(tmp_path, HEADER.replace("replay-log", "other-log"), USER)
    assert "format" in str(_error(path))


_CLEARED = ('{"type":"tool_result","ts":"2026-03-02T09:00:02Z","call_id":"c","tool_name":"t",'
            '"output":"o","cleared_at":%s}')


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ((HEADER.replace('"version":1', '"version":"1"'), USER),
         ":1: invalid `session` event: input should be a valid integer at `session.version`"),
        ((HEADER.replace('"format":"replay-log",', ""), USER),
         ":1: expected `format: replay-log` in the session header"),
        ((HEADER, USER, REQUEST.replace("}", ',"usage":{"input_tokens":"12"}}')),
         ":3: invalid `request` event: input should be a valid integer at "
         "`request.usage.input_tokens`"),
        # docs/log-format.md: a date or Unix seconds for `ts` is read leniently only
        # (said in pydantic's words: "invalid datetime separator, expected `T`, `t`, `_`…")
        ((HEADER, USER.replace('"2026-03-02T09:00:01Z"', '"2026-03-03"')),
         ":2: expected `ts` as an ISO-8601 date-time (like 2026-03-02T09:00:01Z), got "
         "'2026-03-03'"),
        ((HEADER, USER.replace('"2026-03-02T09:00:01Z"', "1772442001")),
         ":2: expected `ts` as an ISO-8601 date-time (like 2026-03-02T09:00:01Z), got "
         "1772442001"),
        ((HEADER, USER.replace('"2026-03-02T09:00:01Z"', '"1772442001"')),
         ":2: expected `ts` as an ISO-8601 date-time, got '1772442001'"),
        # Unix seconds in a string in any form a lenient read takes
        *(((HEADER, USER.replace('"2026-03-02T09:00:01Z"', f'"{seconds}"')),
           f":2: expected `ts` as an ISO-8601 date-time, got '{seconds}'")
          for seconds in ("1772442001.5", "1772442001.", "1.772442001e9", "+1772442001", "-1")),
        ((HEADER, USER, _CLEARED % '"2026-03-03"'),
         ":3: expected `cleared_at` as an ISO-8601 date-time (like 2026-03-02T09:00:01Z), got "
         "'2026-03-03'"),
        # `_NUMBER`: Unix seconds in a string are a time to a lenient read only, `cleared_at` too
        ((HEADER, USER, _CLEARED % '"1772442001"'),
         ":3: expected `cleared_at` as an ISO-8601 date-time, got '1772442001'"),
    ],
)
def test_strict_converts_no_value_of_another_json_type(tmp_path, lines, expected):
    """A lenient read takes `"1"` for 1 (and says nothing); `--strict` refuses it, as it
    refuses any line not written as the format says."""
    path = _write(tmp_path, *lines)
    assert expected in str(_error(path))
    assert not read_log(path).skipped


def test_a_time_without_an_offset_is_utc_whatever_the_machine_s_zone(tmp_path, monkeypatch):
    """docs/log-format.md: a time without an offset is read as UTC (`_aware`), not as the
    machine's local time; `cleared_at` as `ts`: it is compared with the requests' times."""
    import time

    naive = USER.replace("09:00:01Z", "09:00:01")
    path = _write(tmp_path, HEADER, naive, _CLEARED % '"2026-03-02T09:00:05"')
    monkeypatch.setenv("TZ", "EST+5")  # five hours west of UTC
    time.tzset()
    try:
        user, result = read_log(path, strict=True).events
    finally:
        monkeypatch.undo()
        time.tzset()
    assert user.ts == datetime(2026, 3, 2, 9, 0, 1, tzinfo=UTC)
    assert result.cleared_at == datetime(2026, 3, 2, 9, 0, 5, tzinfo=UTC)


def test_an_unknown_field_named_like_a_time_is_kept_as_written_even_strictly(tmp_path):
    """docs/log-format.md: fields an event does not know are kept and written back unchanged;
    only a tool result has a `cleared_at`."""
    user = USER[:-1] + ',"cleared_at":"1772442001"}'
    session = read_log(_write(tmp_path, HEADER, user), strict=True)
    assert session.events[0].model_extra == {"cleared_at": "1772442001"}
    assert json.loads(dump_event(session.events[0])) == json.loads(user)


def test_fields_a_line_leaves_out_read_as_documented():
    """docs/log-format.md and the models' docstrings: a user message is the human's unless
    `injected`, a response was sent back unless `in_context: false`, a call runs at the client
    unless `server_side`, a result is no failure unless `is_error`, a thinking block without
    text is `''`, a compaction without `replaces` replaced everything before it (as an empty
    list does) and its summary is sent in a `user` message by default; what a log does not
    hold (a request's usage, a compaction's size before) is None, not a made-up value."""
    ts = {"ts": "2026-03-02T09:00:01Z"}
    user = parse_event(ts | {"type": "user", "text": "hi"}, "f", 2)
    answer = parse_event(
        ts | {"type": "assistant",
              "blocks": [{"type": "thinking", "signature": "s"},
                         {"type": "tool_call", "id": "c", "name": "t"}]},
        "f", 3,
    )
    result = parse_event(
        ts | {"type": "tool_result", "call_id": "c", "tool_name": "t", "output": "o"}, "f", 4
    )
    compaction = parse_event(ts | {"type": "compaction", "summary": "s"}, "f", 5)
    request = parse_event(ts | {"type": "request", "request_id": "r"}, "f", 6)
    assert (request.usage, request.model, request.provider) == (None, None, None)  # unknown
    assert user.injected is False and user.thread == "main"
    assert answer.in_context is True and answer.request_id is None
    assert (answer.blocks[0].thinking, answer.blocks[0].estimated_tokens) == ("", None)
    assert answer.blocks[1].server_side is False and answer.blocks[1].arguments == {}
    assert result.is_error is False and result.synthetic is None and result.cleared_at is None
    assert compaction.replaces == [] and compaction.message_role == "user"
    assert (compaction.message, compaction.tokens_before, compaction.trigger) == (None,) * 3


def test_a_type_that_is_no_string_names_its_line(tmp_path):
    path = _write(tmp_path, HEADER, USER.replace('"user"', '["user"]'))
    assert ":2: expected `type` to be one of " in str(_error(path))


def test_directory_and_missing_file(tmp_path):
    assert "directory" in str(_error(tmp_path))
    missing = tmp_path / "nope.jsonl"
    err = _error(missing)
    assert str(missing) in str(err) and "no such file" in str(err)
    assert (err.line, str(err)) == (None, f"{missing}: no such file")
    assert str(_error(tmp_path)) == f"{tmp_path}: expected a log file, got a directory"
    assert isinstance(err, ReplayError)


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(
        (HEADER + "\n" + USER + "\n").encode()
        + '{"type":"user","ts":"2026-03-02T09:00:01Z","text":"caf\xe9"}\n'.encode("latin-1")
        + (REQUEST + "\n").encode()
    )
    err = _error(path)
    assert str(err).startswith(f"{path}:3: ")
    assert "UTF-8" in str(err)
    assert str(err) == f"{path}:3: expected UTF-8 text (invalid continuation byte)"
    lenient = read_log(path)
    assert [e.line for e in lenient.skipped] == [3]
    assert [type(e) for e in lenient.events] == [UserMessage, RequestMarker]  # read on


# ---------------------------------------------------------------------------------------------
# Writing: atomic and deterministic


def _session() -> Session:
    return gen.build_session(
        [gen.Turn("reading", [gen.Call("read_file", {"path": "a"}, "content")]), gen.Turn("done")]
    )


def test_writes_are_byte_identical_for_the_same_input(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_log(_session(), a)
    write_log(_session(), b)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes().endswith(b"\n")
    back = read_log(a, strict=True)
    assert [type(e) for e in back.events] == [type(e) for e in _session().events]


def _only(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())



def test_written_files_get_the_umask_or_the_replaced_file_s_permissions(tmp_path):
    previous = os.umask(0o027)
    try:
        fresh = tmp_path / "fresh.jsonl"
        write_log(_session(), fresh)
        assert fresh.stat().st_mode & 0o777 == 0o640  # as open() would, not mkstemp's 0600
        kept = tmp_path / "kept.jsonl"
        kept.write_text("old\n")
        kept.chmod(0o604)
        write_log(_session(), kept)
        assert kept.stat().st_mode & 0o777 == 0o604
    finally:
        os.umask(previous)


def test_the_umask_is_read_without_being_changed_where_proc_is_not_there(monkeypatch):
    """Without /proc (macOS, a sandbox) the mask is read by setting it and putting it back."""
    def no_proc(*args, **kwargs):
        raise OSError("no /proc here")

    monkeypatch.setattr(_atomic, "open", no_proc, raising=False)
    previous = os.umask(0o027)
    try:
        assert _atomic._umask() == 0o027
        assert os.umask(0o027) == 0o027  # put back as it was
    finally:
        os.umask(previous)


def test_a_link_stays_a_link_and_a_pipe_is_written_through(tmp_path):
    import threading

    target, link = tmp_path / "target.jsonl", tmp_path / "link.jsonl"
    link.symlink_to(target.name)
    write_log(_session(), link)
    assert link.is_symlink() and read_log(target, strict=True).events

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    # A daemon: were the pipe replaced by a file, the reader would wait on it forever and hold
    # the test run open after this test failed.
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    _atomic.write_atomic(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert got == [b"through the pipe\n"]
    assert fifo.is_fifo()  # not replaced by a regular file


def test_a_lone_surrogate_is_written_as_its_json_escape(tmp_path):
    session = _session()
    session.events[0].text = "before \ud800 after"
    path = tmp_path / "s.jsonl"
    write_log(session, path)
    assert b"before \\ud800 after" in path.read_bytes()
    assert read_log(path, strict=True).events[0].text == "before \ud800 after"


def test_a_write_the_file_system_refuses_is_a_replay_error(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(_atomic.tempfile, "mkstemp", refuse)
    with pytest.raises(ReplayError, match=r"cannot write .*out\.json: Permission denied"):
        _atomic.write_atomic(tmp_path / "out.json", "{}")



def test_a_file_named_dash_that_cannot_be_written_is_named_dot_slash_dash(tmp_path, monkeypatch):
    """`Path("-")` is a file (what `-o ./-` gives): named `-`, it would read as standard output."""
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_atomic.tempfile, "mkstemp", refuse)
    with pytest.raises(ReplayError) as refused:
        _atomic.write_atomic(Path("-"), "{}")
    assert str(refused.value) == "cannot write ./-: Permission denied"

def test_a_file_its_owner_made_read_only_is_not_replaced(tmp_path, monkeypatch):
    """`open()` refuses to write it; a rename into the folder would not have (root may, as
    with `open()`: the check is the system's `access`)."""
    target = tmp_path / "out.json"
    target.write_text("kept\n")
    monkeypatch.setattr(_atomic.os, "access", lambda path, mode: Path(path) != target)
    with pytest.raises(ReplayError, match=r"cannot write .*out\.json: Permission denied"):
        _atomic.write_atomic(target, "{}")
    assert target.read_text() == "kept\n" and _only(tmp_path) == ["out.json"]


def test_bytes_text_and_pieces_are_written_as_given(tmp_path):
    """Bytes as they are; text, whole or in pieces, as UTF-8 with a lone surrogate written as
    its `\\uXXXX` escape (write_atomic's docstring)."""
    target = tmp_path / "out.bin"
    _atomic.write_atomic(target, b"\x00raw\xff")
    assert target.read_bytes() == b"\x00raw\xff"
    _atomic.write_atomic(target, "caf\u00e9 \ud800!")
    assert target.read_bytes() == "caf\u00e9 ".encode() + b"\\ud800!"
    _atomic.write_atomic(target, iter(["a\ud800", "\u00e9"]))
    assert target.read_bytes() == b"a\\ud800" + "\u00e9".encode()


def test_missing_parent_folders_are_created(tmp_path):
    """Library callers (`write_log`) rely on it; the command line refuses a missing folder
    before it gets here."""
    target = tmp_path / "a" / "b" / "out.json"
    _atomic.write_atomic(target, "{}")
    assert target.read_text() == "{}"


def test_the_temporary_file_is_hidden_beside_the_target_as_a_batch_cleans_it_up(
    tmp_path, monkeypatch
):
    """In the target's folder (a rename across file systems is no rename), hidden, and named
    `.NAME.<random>.tmp`: the pattern a batch removes its killed predecessor's half-written
    parts by (`_dataset.py`)."""
    import fnmatch

    renamed: list[str] = []
    real_replace = os.replace

    def replace(src, dst):
        renamed.append(os.fspath(src))
        real_replace(src, dst)

    monkeypatch.setattr(_atomic.os, "replace", replace)
    target = tmp_path / "part-0a1b.parquet"
    _atomic.write_atomic(target, b"PAR1")
    [tmp] = renamed
    assert Path(tmp).parent == tmp_path
    assert fnmatch.fnmatchcase(Path(tmp).name, ".part-*.parquet.*.tmp")
    assert _only(tmp_path) == ["part-0a1b.parquet"]


def test_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "out.jsonl"

    def boom(fd):
        raise OSError("disk full")

    monkeypatch.setattr(_atomic.os, "fsync", boom)
    with pytest.raises(ReplayError, match=r"cannot write .*out\.jsonl: disk full"):
        write_log(_session(), target)
    assert _only(tmp_path) == []


def test_failed_write_keeps_the_previous_file(tmp_path, monkeypatch):
    target = tmp_path / "out.jsonl"
    target.write_text("previous content\n")
    real_replace = os.replace

    def interrupted(src, dst):
        raise KeyboardInterrupt  # the user hit ^C between write and rename

    monkeypatch.setattr(_atomic.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_log(_session(), target)
    assert target.read_text() == "previous content\n"
    assert _only(tmp_path) == ["out.jsonl"]
    monkeypatch.setattr(_atomic.os, "replace", real_replace)
    write_log(_session(), target)
    assert read_log(target, strict=True).header.session_id == "gen"


def test_exception_while_serializing_writes_nothing(tmp_path):
    session = _session()

    class Exploding(list):
        def __iter__(self):
            yield from super().__iter__()
            raise RuntimeError("serializer crashed mid-way")

    session.events = Exploding(session.events)
    with pytest.raises(RuntimeError):
        write_log(session, tmp_path / "out.jsonl")
    assert _only(tmp_path) == []


def test_a_log_written_line_by_line_is_dumps_log_and_fails_whole(tmp_path):
    """`write_log` writes line by line (a large log is never held whole as text and bytes):
    the bytes of `dumps_log`, and a failure after some lines leaves no file behind."""
    session = _session()
    path = tmp_path / "s.jsonl"
    write_log(session, path)
    assert path.read_bytes() == dumps_log(session.header, session.events).encode("utf-8")

    def lines():
        yield "first line\n"
        raise RuntimeError("failed after a line")

    with pytest.raises(RuntimeError):
        _atomic.write_atomic(tmp_path / "out.jsonl", lines())
    assert _only(tmp_path) == ["s.jsonl"]


def test_written_log_round_trips_typed_events(tmp_path):
    session = _session()
    path = tmp_path / "s.jsonl"
    write_log(session, path)
    back = read_log(path, strict=True)
    calls = [b for e in back.events if isinstance(e, AssistantMessage) for b in e.blocks]
    assert any(isinstance(b, ToolCallBlock) for b in calls)
    assert any(isinstance(b, TextBlock) for b in calls)
    assert any(isinstance(e, ToolResult) for e in back.events)


# ---------------------------------------------------------------------------------------------
# Ordering rules on tool calls and results (what `load` and the CLI apply)


def _run42_lines() -> list[str]:
    return RUN42.read_text(encoding="utf-8").splitlines()


def test_missing_tool_result_is_refused_strict_and_repaired_lenient(tmp_path):
    from replay import load

    lines = _run42_lines()
    assert '"type":"tool_result"' in lines[4] and '"call_id":"call-001"' in lines[4]
    path = _write(tmp_path, *(lines[:4] + lines[5:]))  # line 5: the first tool result
    with pytest.raises(LogFormatError) as err:
        load(path, strict=True)
    # Reported where the result was due: the next request (now line 5), naming the call.
    assert str(err.value).startswith(f"{path}:5: ")
    assert str(err.value).endswith(
        "expected a tool_result for call 'call-001' (list_files, line 4) before request req-002"
    )
    session = load(path)
    assert len(session.skipped) == 1 and session.skipped[0].line == 5
    assert str(session.skipped[0]).endswith("; a placeholder error result was added")
    placeholder = session.events[3]
    assert isinstance(placeholder, ToolResult) and placeholder.call_id == "call-001"
    assert placeholder.is_error and placeholder.synthetic == "missing tool result"
    assert isinstance(session.events[4], RequestMarker)
    # The plain reader stays a lossless parser of what the file holds.
    assert read_log(path, strict=True).skipped == []


def test_tool_result_with_unknown_call_id_is_refused_strict_and_counted_lenient(tmp_path):
    from replay import load

    lines = _run42_lines()
    lines[4] = lines[4].replace('"call_id":"call-001"', '"call_id":"call-zzz"')
    path = _write(tmp_path, *lines)
    with pytest.raises(LogFormatError) as err:
        load(path, strict=True)
    assert str(err.value).startswith(f"{path}:5: ")
    assert "call id 'call-zzz'" in str(err.value) and "no earlier tool_call" in str(err.value)
    session = load(path)
    # The orphan is kept as logged; the call it should have answered gets a placeholder.
    assert [e.line for e in session.skipped] == [5, 6]
    assert any(isinstance(e, ToolResult) and e.call_id == "call-zzz" for e in session.events)


def test_second_result_for_one_call_is_reported(tmp_path):
    from replay import load

    lines = _run42_lines()
    again = lines[4].replace('"id":"e0005",', '"id":"e0005b",')  # another line, the same call
    path = _write(tmp_path, *(lines[:5] + [again] + lines[5:]))
    with pytest.raises(LogFormatError, match=r":6: .*already answered on line 5"):
        load(path, strict=True)


def test_cli_strict_refuses_and_lenient_notes_a_missing_tool_result(tmp_path):
    from click.testing import CliRunner

    from replay.cli._main import cli, load_commands

    load_commands()
    lines = _run42_lines()
    path = _write(tmp_path, *(lines[:4] + lines[5:]))
    result = CliRunner().invoke(cli, ["run", str(path), "-s", "baseline", "--strict"])
    assert result.exit_code == 2
    assert f"{path}:5: expected a tool_result for call 'call-001'" in result.stderr
    result = CliRunner().invoke(cli, ["run", str(path), "-s", "baseline"])
    assert result.exit_code == 0, result.output
    assert "1 malformed line(s)" in result.stderr and "call-001" in result.stderr


def test_run42_and_converted_logs_follow_the_ordering_rules():
    from replay import load

    assert load(RUN42, strict=True).skipped == []


def _assistant(ts: str, *calls: tuple[str, str], **fields) -> str:
    blocks = [{"type": "tool_call", "id": i, "name": name, "arguments": {}} for i, name in calls]
    return json.dumps({"type": "assistant", "ts": ts, "blocks": blocks, **fields})


def _result(ts: str, call_id: str, tool_name: str, **fields) -> str:
    return json.dumps({"type": "tool_result", "ts": ts, "call_id": call_id,
                       "tool_name": tool_name, "output": "x", **fields})


def test_a_call_never_sent_back_is_still_answered_once_by_a_result_that_is_a_message(tmp_path):
    """docs/log-format.md: a `tool_result` follows the `assistant` event holding its call and
    answers it once, the response sent back or not (`in_context: false`: the call is only not
    due at the next request); a `tool_result` is a message a request's prompt is built from."""
    aborted = _assistant("2026-03-02T09:00:01Z", ("c1", "read_file"), in_context=False)
    result = _result("2026-03-02T09:00:02Z", "c1", "read_file")
    request = '{"type":"request","ts":"2026-03-02T09:00:03Z","request_id":"r1"}'
    path = _write(tmp_path, HEADER, aborted, result, request, result)
    session = read_log(path, check_pairs=True)
    assert [(e.line, e.expected) for e in session.skipped] == [
        (5, "expected one tool_result per call: call id 'c1' was already answered on line 3")
    ]
    assert [r.request_id for r in session.requests()] == ["r1"]


def test_a_result_for_a_server_side_call_answers_no_call(tmp_path):
    """A `server_side` call ran at the provider: no `tool_result` follows it
    (docs/log-format.md), so one naming it matches no call (reported at its line)."""
    assistant = json.loads(_assistant("2026-03-02T09:00:03Z", ("ws1", "web_search")))
    assistant["blocks"][0]["server_side"] = True
    result = _result("2026-03-02T09:00:04Z", "ws1", "web_search")
    path = _write(tmp_path, HEADER, USER, REQUEST, json.dumps(assistant), result)
    session = read_log(path, check_pairs=True)
    assert [e.line for e in session.skipped] == [5]
    assert "call id 'ws1' matches no earlier tool_call of thread 'main'" in str(session.skipped[0])


def test_placeholders_answer_every_unanswered_call_in_call_order_in_its_thread(tmp_path):
    """Each call unanswered at its thread's next request is reported there and gets an empty
    error result (`synthetic: "missing tool result"`) inserted before the request, in call
    order, in the call's thread, at the request's time (docs/log-format.md); a result logged
    later answers a call already answered."""
    sub = {"thread": "sub"}
    lines = [
        HEADER,
        '{"type":"thread","ts":"2026-03-02T09:00:01Z","thread_id":"sub"}',
        '{"type":"user","ts":"2026-03-02T09:00:02Z","text":"look","thread":"sub"}',
        '{"type":"request","ts":"2026-03-02T09:00:03Z","request_id":"r1","thread":"sub"}',
        _assistant("2026-03-02T09:00:04Z", ("c2", "grep"), ("c1", "read_file"), **sub),
        '{"type":"request","ts":"2026-03-02T09:00:05Z","request_id":"r2","thread":"sub"}',
        _result("2026-03-02T09:00:06Z", "c1", "read_file", **sub),
    ]
    path = _write(tmp_path, *lines)
    session = read_log(path, check_pairs=True)
    added = "a placeholder error result was added"
    assert [(e.line, e.expected) for e in session.skipped] == [
        (6, f"expected a tool_result for call 'c2' (grep, line 5) before request r2; {added}"),
        (6, f"expected a tool_result for call 'c1' (read_file, line 5) before request r2; {added}"),
        (7, "expected one tool_result per call: call id 'c1' was already answered on line 6"),
    ]
    second = session.requests()[1]
    placeholders = session.events[4:6]
    assert session.events[6] is second
    assert [(p.call_id, p.tool_name, p.thread, p.output, p.is_error, p.synthetic, p.ts)
            for p in placeholders] == [
        (call, name, "sub", "", True, "missing tool result", second.ts)
        for call, name in [("c2", "grep"), ("c1", "read_file")]
    ]
    assert placeholders[0].model_fields_set is placeholders[1].model_fields_set  # read alike
    with pytest.raises(LogFormatError) as err:  # stops at the first, in call order
        read_log(path, strict=True, check_pairs=True)
    assert str(err.value) == (
        f"{path}:6: expected a tool_result for call 'c2' (grep, line 5) before request r2"
    )


def test_a_compaction_names_the_first_of_the_ids_it_replaces_that_name_nothing(tmp_path):
    compaction = (
        '{"type":"compaction","ts":"2026-03-02T09:00:03Z","summary":"s",'
        '"replaces":["e2","e8","e9"]}'
    )
    user = USER.replace('"type":"user",', '"type":"user","id":"e2",')
    session = read_log(_write(tmp_path, HEADER, user, REQUEST, compaction), check_pairs=True)
    assert [(e.line, e.expected) for e in session.skipped] == [
        (4, "expected `replaces` to name earlier events: 2 of its ids name none (first: 'e8'); "
            "they are ignored")
    ]


def test_a_compaction_naming_itself_names_no_earlier_event(tmp_path):
    """Its own id is no earlier event: reported and ignored like any other id naming none, and
    the replay replaces what it would without that id (not the events up to itself)."""
    from replay.engine import ReplayConfig, replay_session

    compaction = (
        '{"type":"compaction","id":"k1","ts":"2026-03-02T09:00:03Z","summary":"s",'
        '"replaces":["e2",%s]}'
    )
    user = USER.replace('"type":"user",', '"type":"user","id":"e2",')
    more = USER.replace("09:00:01", "09:00:04")
    request = REQUEST.replace("09:00:02", "09:00:05").replace('"r1"', '"r2"')
    naming_itself = _write(tmp_path, HEADER, user, REQUEST, compaction % '"k1"', more, request)
    session = read_log(naming_itself, check_pairs=True)
    assert [(e.line, e.expected) for e in session.skipped] == [
        (4, "expected `replaces` to name earlier events: 1 of its ids name none (first: 'k1'); "
            "they are ignored")
    ]
    plain = tmp_path / "plain.jsonl"
    plain.write_text(naming_itself.read_text().replace(',"k1"]', "]"), encoding="utf-8")

    def sent(path):
        records = replay_session(read_log(path), "recorded", ReplayConfig(keep_views=True))
        return [(r.request.total, [type(i).__name__ for i in r.view]) for r in records]

    assert sent(naming_itself) == sent(plain)
    assert sent(naming_itself) == sent(plain)


def test_the_replay_ignores_a_compactions_own_id_in_what_it_replaced():
    """Context the log does not hold goes with the replaced events around it (up to the last
    one named): a compaction naming itself does not take the unlogged context after the events
    it really replaced."""
    from types import SimpleNamespace

    from replay.engine._replay import _Run
    from replay.log import Compaction

    state = SimpleNamespace(estimated_indexes=lambda: [1, 3])  # fitted context at 1 and 3
    event = Compaction(ts="2026-03-02T09:00:05Z", summary="s", replaces=["e2", "k1"], id="k1")
    logged = _Run._logged_compaction(event, 4, state, {"e2": 2, "k1": 4})
    assert logged.replaced == frozenset({1, 2})


def test_each_thread_pairs_its_own_calls_and_needs_its_own_message(tmp_path):
    """docs/log-format.md: a `tool_result` answers a call of the same thread, and a `request`
    follows a message of its thread: another thread's call or message does not count."""
    sub = {"thread": "sub"}
    lines = [
        HEADER,
        USER,
        REQUEST,
        _assistant("2026-03-02T09:00:03Z", ("c1", "read_file"), request_id="r1"),
        '{"type":"thread","ts":"2026-03-02T09:00:04Z","thread_id":"sub"}',
        '{"type":"request","ts":"2026-03-02T09:00:05Z","request_id":"r2","thread":"sub"}',
        '{"type":"user","ts":"2026-03-02T09:00:06Z","text":"look","thread":"sub"}',
        _result("2026-03-02T09:00:07Z", "c1", "read_file", **sub),
        _result("2026-03-02T09:00:08Z", "c1", "read_file"),
        '{"type":"request","ts":"2026-03-02T09:00:09Z","request_id":"r3"}',
    ]
    session = read_log(_write(tmp_path, *lines), check_pairs=True)
    assert [(e.line, e.expected) for e in session.skipped] == [
        (6, "expected a message of thread 'sub' before request r2"),
        (8, "expected a tool_result to answer a tool call: call id 'c1' matches no earlier "
            "tool_call of thread 'sub'"),
    ]
    assert [r.request_id for r in session.requests()] == ["r1", "r3"]


def test_an_orphan_result_answers_nothing_even_when_repeated(tmp_path):
    """A result whose call id matches no call answers nothing: a second one naming that id is
    an orphan too, reported at its line, not a second answer."""
    orphan = _result("2026-03-02T09:00:03Z", "c9", "read_file")
    session = read_log(_write(tmp_path, HEADER, USER, orphan, orphan, REQUEST), check_pairs=True)
    unknown = ("expected a tool_result to answer a tool call: call id 'c9' matches no earlier "
               "tool_call of thread 'main'")
    assert [(e.line, e.expected) for e in session.skipped] == [(3, unknown), (4, unknown)]


# ---------------------------------------------------------------------------------------------
# Token counts (docs/log-format.md: every one an integer from 0 to 10¹², and so is the prompt)

_TOKEN_FIELDS = {
    **{
        f"request.usage.{name}": (
            {"type": "request", "request_id": "r"},
            lambda n, name=name: {"usage": {name: n}},
        )
        for name in ("input_tokens", "cache_read_tokens", "cache_write_5m_tokens",
                     "cache_write_1h_tokens", "output_tokens", "reasoning_tokens")
    },
    "assistant.blocks.0.thinking.estimated_tokens": (
        {"type": "assistant"},
        lambda n: {"blocks": [{"type": "thinking", "estimated_tokens": n}]},
    ),
    "session.hidden_prefix_tokens": ({"type": "session"}, lambda n: {"hidden_prefix_tokens": n}),
    "thread.hidden_prefix_tokens": (
        {"type": "thread", "thread_id": "s"},
        lambda n: {"hidden_prefix_tokens": n},
    ),
}


@pytest.mark.parametrize("where", sorted(_TOKEN_FIELDS))
def test_every_token_count_is_an_integer_from_0_to_10_to_the_12(where):
    base, field = _TOKEN_FIELDS[where]
    line = {"ts": "2026-03-02T09:00:01Z", **base}
    for n in (0, 10**12):
        parse_event(line | field(n), "log.jsonl", 2)
    for n, expected in [(-1, "greater than or equal to 0"),
                        (10**12 + 1, "less than or equal to 1000000000000")]:
        with pytest.raises(LogFormatError) as err:
            parse_event(line | field(n), "log.jsonl", 2)
        assert str(err.value).endswith(f"{expected} at `{where}`")


_BUCKETS = ("input_tokens", "cache_read_tokens", "cache_write_5m_tokens", "cache_write_1h_tokens")


@pytest.mark.parametrize("bucket", _BUCKETS)
def test_a_prompt_adds_up_to_at_most_10_to_the_12_tokens_output_apart(bucket):
    """prompt = input + cache read + both cache writes (docs/log-format.md), each bucket
    counted: at most 10¹² tokens, one more is a bad line; the output is not the prompt's."""
    request = {"type": "request", "ts": "2026-03-02T09:00:01Z", "request_id": "r"}
    full = dict.fromkeys(_BUCKETS, 250_000_000_000) | {"output_tokens": 10**12}
    assert parse_event(request | {"usage": full}, "log.jsonl", 2).usage.prompt_tokens == 10**12
    with pytest.raises(LogFormatError) as err:
        parse_event(request | {"usage": full | {bucket: 250_000_000_001}}, "log.jsonl", 2)
    assert str(err.value) == (
        "log.jsonl:2: invalid `request` event: expected the prompt's buckets (input, cache read, "
        "cache writes) to add up to at most 1,000,000,000,000 tokens, not 1,000,000,000,001 at "
        "`request.usage`"
    )


def test_each_request_runs_on_its_own_model_else_its_thread_s_else_the_header_s(tmp_path):
    """`Session.requests_ran`: the model a request ran on is its own, else its thread's (a
    subagent on another model), else the header's; its provider its own, else the header's."""
    head = json.loads(HEADER) | {"provider": "anthropic", "model": "claude-sonnet-4-5"}
    sub = '{"type":"thread","ts":"2026-03-02T09:00:03Z","thread_id":"sub",' \
        '"model":"claude-haiku-4-5"}'
    lines = [json.dumps(head), USER, REQUEST, sub]
    for n, extra in enumerate(({}, {"model": "claude-opus-4-5", "provider": "google"}), 2):
        lines.append(json.dumps({"type": "user", "ts": f"2026-03-02T09:00:0{2 * n}Z",
                                 "thread": "sub", "text": "go"}))
        lines.append(json.dumps({"type": "request", "ts": f"2026-03-02T09:00:0{2 * n + 1}Z",
                                 "thread": "sub", "request_id": f"r{n}"} | extra))
    session = read_log(_write(tmp_path, *lines), strict=True)
    assert [(m.request_id, p, model) for m, p, model in session.requests_ran()] == [
        ("r1", "anthropic", "claude-sonnet-4-5"),
        ("r2", "anthropic", "claude-haiku-4-5"),
        ("r3", "google", "claude-opus-4-5"),
    ]
