"""Edges of reading and writing `replay-log` lines that the main log tests leave open: where a
validation error is placed, and what the reader keeps or refuses (docs/log-format.md)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated

import pytest
from pydantic import AfterValidator, BaseModel, ValidationError

from replay._errors import LogFormatError
from replay.log import dump_event, parse_event, read_log, write_log
from replay.log._io import describe_invalid


class _When(BaseModel):
    when: Annotated[datetime, AfterValidator(lambda moment: moment)] | int


def test_a_validated_member_of_a_union_is_placed_at_its_field_not_at_pydantic_s_validator():
    # pydantic puts `function-after[<lambda>(), datetime]` in the place of a union member
    # checked by a function: the message names the field alone.
    with pytest.raises(ValidationError) as caught:
        _When.model_validate({"when": [1]})
    assert describe_invalid(caught.value) == "input should be a valid datetime at `when`"


def test_text_beyond_ascii_is_written_as_utf_8_and_read_back_to_the_same_bytes(tmp_path):
    # The format is UTF-8 text (docs/log-format.md), written canonically: a line read and
    # written again is the same bytes, its accents and symbols as they were, not `\u00e9`.
    lines = [
        '{"type":"session","format":"replay-log","version":1,"ts":"2026-03-02T09:00:00Z"}',
        '{"type":"user","ts":"2026-03-02T09:00:01Z","text":"café ✓ 日本 🚀"}',
    ]
    source = tmp_path / "in.jsonl"
    source.write_bytes("".join(line + "\n" for line in lines).encode("utf-8"))
    target = tmp_path / "out.jsonl"
    write_log(read_log(source, strict=True), target)
    assert target.read_bytes() == source.read_bytes()
    assert dump_event(read_log(source).events[0]).endswith('"text":"café ✓ 日本 🚀"}')


def test_a_minimal_header_reads_with_the_format_s_defaults(tmp_path):
    # Defaults are part of the file format (a file that leaves a field out means them): a
    # header naming no harness says so (`unknown`, in titles and JSON), not an empty name.
    path = tmp_path / "min.jsonl"
    path.write_text('{"type":"session","format":"replay-log","ts":"2026-03-02T09:00:00Z"}\n')
    header = read_log(path, strict=True).header
    assert (header.agent, header.provider, header.model) == (
        "unknown", "anthropic", "claude-sonnet-4-5")
    assert (header.version, header.thread, header.system, header.tools) == (1, "main", "", [])


def test_a_thread_that_names_no_parent_was_spawned_by_main():
    opened = parse_event({"type": "thread", "ts": "2026-03-02T09:00:01Z", "thread_id": "t1"},
                         "f", 2)
    assert (opened.parent_thread, opened.parent_call_id, opened.system, opened.model) == (
        "main", None, None, None)


def test_the_agent_s_own_cost_stays_the_decimal_string_it_was(tmp_path):
    # docs/log-format.md: `cost_usd` keeps the agent's figure as a decimal string; read as a
    # number it would lose its digits (`0.10` → 0.1) and change type on the way back.
    line = ('{"type":"request","ts":"2026-03-02T09:00:02Z","request_id":"r1",'
            '"usage":{"input_tokens":5,"cost_usd":"0.10"}}')
    request = parse_event(json.loads(line), "f", 3, strict_text=line)
    assert request.usage.cost_usd == "0.10"
    assert dump_event(request) == line


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"type":"request","ts":"2026-03-02T09:00:02Z","request_id":"r1","duration_ms":-1}',
         "duration_ms"),
        ('{"type":"compaction","ts":"2026-03-02T09:00:02Z","summary":"s","tokens_before":-5}',
         "tokens_before"),
        ('{"type":"compaction","ts":"2026-03-02T09:00:02Z","summary":"s",'
         '"tokens_before":1000000000001}', "tokens_before"),
    ],
)
def test_a_negative_duration_or_an_impossible_size_before_compacting_is_a_malformed_line(
    tmp_path, line, field
):
    # A negative duration would make an entry ready before its request was sent (caches whose
    # entries are ready at the response's end); a size is a token count like usage's.
    path = tmp_path / "bad.jsonl"
    header = '{"type":"session","format":"replay-log","ts":"2026-03-02T09:00:00Z"}'
    path.write_text(f"{header}\n{line}\n")
    with pytest.raises(LogFormatError) as caught:
        read_log(path, strict=True)
    assert caught.value.line == 2
    assert f".{field}`" in str(caught.value)
    lenient = read_log(path)
    assert (lenient.events, [err.line for err in lenient.skipped]) == ([], [2])


def test_a_zero_duration_and_a_zero_size_before_compacting_are_read():
    request = parse_event({"type": "request", "ts": "2026-03-02T09:00:02Z", "request_id": "r1",
                           "duration_ms": 0}, "f", 2)
    compaction = parse_event({"type": "compaction", "ts": "2026-03-02T09:00:02Z",
                              "summary": "s", "tokens_before": 0}, "f", 3)
    assert (request.duration_ms, compaction.tokens_before) == (0, 0)
