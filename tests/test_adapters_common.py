"""Adapters, all formats: detection by content, `load`, `replay convert`, and bad input.

The small logs below are written for these tests (never copied from real sessions): one valid
session per format with a user prompt, a tool call and its result, and two requests. The other
adapter tests and the fuzz test build on them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import RUN42
from hypothesis import given, settings
from hypothesis import strategies as st

import replay
from replay import load
from replay._errors import LogFormatError, ReplayError
from replay.adapters import FORMATS, detect, read_any, reader_for
from replay.log import (
    AssistantMessage,
    RequestMarker,
    Session,
    ToolCallBlock,
    ToolResult,
    UserMessage,
    dumps_log,
    read_log,
    write_log,
)

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT.parent / "shared" / "samples"
needs_samples = pytest.mark.skipif(
    not SAMPLES.is_dir(),
    reason=f"real agent logs not found at {SAMPLES} (the shared dev samples are not checked in)",
)


# --------------------------------------------------------------------------------------------------
# Small valid logs, one per format


def claude_lines() -> list[dict[str, Any]]:
    base = {"sessionId": "s-1", "version": "2.1.90", "cwd": "/w", "isSidechain": False}

    def line(uuid: str, parent: str | None, ts: str, **kw: Any) -> dict[str, Any]:
        return {**base, "uuid": uuid, "parentUuid": parent, "timestamp": ts, **kw}

    usage1 = {
        "input_tokens": 10,
        "cache_creation_input_tokens": 3000,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 3000},
        "output_tokens": 60,
    }
    usage2 = {
        "input_tokens": 2,
        "cache_creation_input_tokens": 40,
        "cache_read_input_tokens": 3000,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 40},
        "output_tokens": 8,
    }
    a1 = {"id": "msg_A", "role": "assistant", "model": "claude-sonnet-4-6", "usage": usage1}
    a2 = {"id": "msg_B", "role": "assistant", "model": "claude-sonnet-4-6", "usage": usage2}
    return [
        {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}},
        line(
            "u1",
            None,
            "2026-01-02T10:00:00.000Z",
            type="user",
            message={"role": "user", "content": "List the files, please."},
        ),
        line(
            "a1",
            "u1",
            "2026-01-02T10:00:02.000Z",
            type="assistant",
            requestId="req_1",
            message={**a1, "content": [{"type": "thinking", "thinking": "", "signature": "sig"}]},
        ),
        line(
            "a2",
            "a1",
            "2026-01-02T10:00:03.000Z",
            type="assistant",
            requestId="req_1",
            message={
                **a1,
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Bash",
                        "input": {"command": "ls"},
                    }
                ],
            },
        ),
        line(
            "p1", "a2", "2026-01-02T10:00:03.100Z", type="progress", data={"type": "hook_progress"}
        ),
        line(
            "u2",
            "a2",
            "2026-01-02T10:00:03.200Z",
            type="user",
            message={
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt\nb.txt"}
                ],
            },
        ),
        line(
            "a3",
            "u2",
            "2026-01-02T10:00:05.000Z",
            type="assistant",
            requestId="req_2",
            message={**a2, "content": [{"type": "text", "text": "Two files: a.txt, b.txt."}]},
        ),
    ]


def codex_lines() -> list[dict[str, Any]]:
    def line(ts: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": ts, "type": kind, "payload": payload}

    def tokens(inp: int, cached: int, out: int, total_in: int, total_out: int) -> dict[str, Any]:
        last = {
            "input_tokens": inp,
            "cached_input_tokens": cached,
            "output_tokens": out,
            "reasoning_output_tokens": 5,
            "total_tokens": inp + out,
        }
        total = {
            "input_tokens": total_in,
            "cached_input_tokens": cached,
            "output_tokens": total_out,
            "reasoning_output_tokens": 5,
            "total_tokens": total_in + total_out,
        }
        return {
            "type": "token_count",
            "info": {"last_token_usage": last, "total_token_usage": total},
        }

    meta = {
        "id": "rollout-1",
        "cwd": "/w",
        "cli_version": "0.140.0",
        "model_provider": "openai",
        "base_instructions": {"text": "You are a careful coding agent."},
    }
    return [
        line("2026-01-02T10:00:00.000Z", "session_meta", meta),
        line("2026-01-02T10:00:00.001Z", "turn_context", {"model": "gpt-5.5", "cwd": "/w"}),
        line(
            "2026-01-02T10:00:00.002Z",
            "response_item",
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "<permissions instructions>none"}],
            },
        ),
        line(
            "2026-01-02T10:00:00.003Z",
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "List the files."}],
            },
        ),
        line(
            "2026-01-02T10:00:00.004Z",
            "event_msg",
            {"type": "user_message", "message": "List the files."},
        ),
        line(
            "2026-01-02T10:00:01.000Z",
            "response_item",
            {"type": "reasoning", "summary": [], "encrypted_content": None},
        ),
        line(
            "2026-01-02T10:00:01.100Z",
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "call_id": "call_1",
                "arguments": '{"cmd": "ls"}',
            },
        ),
        line(
            "2026-01-02T10:00:01.200Z",
            "response_item",
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt\nb.txt"},
        ),
        line("2026-01-02T10:00:01.300Z", "event_msg", tokens(1200, 1024, 40, 1200, 40)),
        line("2026-01-02T10:00:01.400Z", "event_msg", tokens(1200, 1024, 40, 1200, 40)),
        line(
            "2026-01-02T10:00:02.000Z",
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Two files."}],
            },
        ),
        line("2026-01-02T10:00:02.100Z", "event_msg", tokens(1300, 1024, 10, 2500, 50)),
    ]


def pi_lines(version: int = 3) -> list[dict[str, Any]]:
    def usage(inp: int, out: int, read: int, write: int, cost: float) -> dict[str, Any]:
        return {
            "input": inp,
            "output": out,
            "cacheRead": read,
            "cacheWrite": write,
            "totalTokens": inp + out + read + write,
            "cost": {"total": cost},
        }

    entries: list[dict[str, Any]] = [
        {
            "type": "message",
            "timestamp": "2026-01-02T10:00:00.000Z",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": "List the files."}],
                "timestamp": 1767348000000,
            },
        },
        {
            "type": "model_change",
            "timestamp": "2026-01-02T10:00:00.500Z",
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
        },
        {
            "type": "message",
            "timestamp": "2026-01-02T10:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Use ls."},
                    {
                        "type": "toolCall",
                        "id": "toolu_1",
                        "name": "bash",
                        "arguments": {"command": "ls"},
                    },
                ],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage(5, 30, 0, 2500, 0.01),
                "stopReason": "toolUse",
                "timestamp": 1767348001000,
            },
        },
        {
            "type": "message",
            "timestamp": "2026-01-02T10:00:02.500Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "toolu_1",
                "toolName": "bash",
                "content": [{"type": "text", "text": "a.txt\nb.txt"}],
                "isError": False,
                "timestamp": 1767348002500,
            },
        },
        {
            "type": "message",
            "timestamp": "2026-01-02T10:00:04.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "Two files."}],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage(3, 6, 2500, 40, 0.002),
                "stopReason": "stop",
                "timestamp": 1767348003000,
            },
        },
    ]
    if version >= 2:
        parent = None
        for n, e in enumerate(entries, start=1):
            e["id"] = f"{n:08x}"
            e["parentId"] = parent
            parent = e["id"]
        header = {
            "type": "session",
            "version": version,
            "id": "pi-1",
            "timestamp": "2026-01-02T09:59:59.000Z",
            "cwd": "/w",
        }
    else:
        header = {
            "type": "session",
            "id": "pi-1",
            "timestamp": "2026-01-02T09:59:59.000Z",
            "cwd": "/w",
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
            "thinkingLevel": "off",
        }
    return [header, *entries]


def opencode_doc() -> dict[str, Any]:
    sid = "ses_test1"

    def part(kind: str, n: int, **kw: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"prt_{n}", "sessionID": sid, **kw}

    tokens1 = {
        "total": 2030,
        "input": 2000,
        "output": 30,
        "reasoning": 10,
        "cache": {"read": 0, "write": 0},
    }
    tokens2 = {
        "total": 2115,
        "input": 100,
        "output": 15,
        "reasoning": 0,
        "cache": {"read": 2000, "write": 0},
    }
    return {
        "info": {
            "id": sid,
            "version": "1.2.26",
            "directory": "/w",
            "title": "test",
            "time": {"created": 1767348000000, "updated": 1767348010000},
        },
        "messages": [
            {
                "info": {
                    "role": "user",
                    "id": "msg_u1",
                    "sessionID": sid,
                    "time": {"created": 1767348000000},
                },
                "parts": [part("text", 1, text="List the files.")],
            },
            {
                "info": {
                    "role": "assistant",
                    "id": "msg_a1",
                    "sessionID": sid,
                    "modelID": "gpt-5.3-codex",
                    "providerID": "opencode",
                    "time": {"created": 1767348000100, "completed": 1767348002000},
                    "tokens": tokens1,
                    "cost": 0.004,
                },
                "parts": [
                    part("step-start", 2),
                    part("reasoning", 3, text="**Listing files**"),
                    part(
                        "tool",
                        4,
                        callID="call_1",
                        tool="bash",
                        state={
                            "status": "completed",
                            "input": {"command": "ls"},
                            "output": "a.txt\nb.txt",
                            "time": {"start": 1767348001000, "end": 1767348001500},
                        },
                    ),
                    part("step-finish", 5, tokens=tokens1, cost=0.004),
                ],
            },
            {
                "info": {
                    "role": "assistant",
                    "id": "msg_a2",
                    "sessionID": sid,
                    "modelID": "gpt-5.3-codex",
                    "providerID": "opencode",
                    "time": {"created": 1767348002100, "completed": 1767348003000},
                    "tokens": tokens2,
                    "cost": 0.001,
                },
                "parts": [
                    part("step-start", 6),
                    part("text", 7, text="Two files."),
                    part("step-finish", 8, tokens=tokens2, cost=0.001),
                ],
            },
        ],
    }


def opencode_subtask(parent: dict[str, Any], sid: str = "ses_child") -> dict[str, Any]:
    """An export of a subtask session of `parent` (its `parentID` names it), ids made distinct."""
    child = json.loads(json.dumps(parent).replace(parent["info"]["id"], sid))
    child["info"]["parentID"] = parent["info"]["id"]
    for message in child["messages"]:
        message["info"]["id"] += "_c"
        for part in message["parts"]:
            part["id"] += "_c"
            if "callID" in part:
                part["callID"] += "_c"
    return child


def jsonl(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(x) + "\n" for x in lines)


VALID: dict[str, Callable[[], str]] = {
    "claude-code": lambda: jsonl(claude_lines()),
    "codex": lambda: jsonl(codex_lines()),
    "pi": lambda: jsonl(pi_lines()),
    "opencode": lambda: json.dumps(opencode_doc(), indent=2),
}
"""One valid small log per foreign format, as text."""

SUFFIX = {"claude-code": ".jsonl", "codex": ".jsonl", "pi": ".jsonl", "opencode": ".json"}


def write(tmp: Path, fmt: str, text: str | bytes, name: str = "log") -> Path:
    path = tmp / f"{name}{SUFFIX.get(fmt, '.jsonl')}"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def unpaired_before_request(session: Session) -> list[str]:
    """Tool calls without a result although a later request of their thread followed them
    (responses the harness never sent back, `in_context=False`, need none)."""
    out: list[str] = []
    pending: dict[str, str] = {}
    for e in session.events:
        if isinstance(e, AssistantMessage) and e.in_context:
            for b in e.blocks:
                if isinstance(b, ToolCallBlock) and not getattr(b, "server_side", False):
                    pending[b.id] = e.thread
        elif isinstance(e, ToolResult):
            pending.pop(e.call_id, None)
        elif isinstance(e, RequestMarker):
            out += [c for c, t in pending.items() if t == e.thread]
    return out


# --------------------------------------------------------------------------------------------------
# Valid logs


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_valid_small_log_reads_cleanly(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path, fmt, VALID[fmt]())
    assert detect(path) == fmt
    session = load(path, strict=True)
    assert session.skipped == []
    assert len(session.requests()) == 2
    assert all(r.usage is not None and r.usage.prompt_tokens > 0 for r in session.requests())
    assert unpaired_before_request(session) == []
    assert session.header.agent in ("claude-code", "codex", "pi", "opencode")
    assert getattr(session.header, "hidden_prefix_tokens", None) is not None


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_equal_names_ids_and_texts_are_one_string(tmp_path: Path, fmt: str) -> None:
    session = load(write(tmp_path, fmt, VALID[fmt]()))
    fields = ("thread", "tool_name", "name", "model", "request_id", "call_id", "output", "text")
    seen: dict[str, set[int]] = {}
    models = [*session.events]
    models += [b for e in session.events if isinstance(e, AssistantMessage) for b in e.blocks]
    for model in models:
        for name in fields:
            value = model.__dict__.get(name)
            if isinstance(value, str):
                seen.setdefault(value, set()).add(id(value))
    assert any(len(ids) == 1 and value for value, ids in seen.items())
    assert {value: len(ids) for value, ids in seen.items() if len(ids) > 1} == {}


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_converted_log_round_trips_byte_for_byte(tmp_path: Path, fmt: str) -> None:
    session = load(write(tmp_path, fmt, VALID[fmt]()))
    out = tmp_path / "native.jsonl"
    write_log(session, out)
    again = read_log(out, strict=True)
    assert dumps_log(again.header, again.events) == dumps_log(session.header, session.events)
    assert detect(out) == "replay-log"


def test_detection_ignores_file_names(tmp_path: Path) -> None:
    for fmt, make in VALID.items():
        # Misleading names: a Codex rollout called .json, an export called .jsonl, etc.
        path = tmp_path / f"claude-{fmt}.txt"
        path.write_text(make(), encoding="utf-8")
        assert detect(path) == fmt


@pytest.mark.parametrize("kind", ["pr-link", "worktree-state", "tag", "content-replacement"])
def test_a_log_opening_with_metadata_its_reader_takes_is_detected(tmp_path: Path, kind) -> None:
    """Detection counts every record type the reader takes: a Claude Code log whose sampled
    head is metadata of a type added for the reader (a resumed session's tags, links) is still
    Claude Code, not "matches none"."""
    from replay.adapters.detect import _SAMPLE_LINES

    head = [json.dumps({"type": kind, "sessionId": "s1"}) for _ in range(_SAMPLE_LINES)]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join([*head, VALID["claude-code"]()]), encoding="utf-8")
    assert detect(path) == "claude-code"


@pytest.mark.parametrize(
    "packer, said",
    [
        ("gzip", "a gzip-compressed file: expected a coding-agent log; decompress it first "
         "(`zcat {path} | replay -`)"),
        ("bz2", "a bzip2-compressed file: expected a coding-agent log; decompress it first "
         "(`bzcat {path} | replay -`)"),
        ("lzma", "a xz-compressed file: expected a coding-agent log; decompress it first "
         "(`xzcat {path} | replay -`)"),
    ],
)
def test_a_compressed_log_is_named_as_such(tmp_path: Path, packer: str, said: str) -> None:
    import importlib

    path = tmp_path / "run.jsonl.packed"
    path.write_bytes(importlib.import_module(packer).compress(Path(RUN42).read_bytes()))
    with pytest.raises(LogFormatError) as err:
        detect(path)
    assert str(err.value) == f"{path}: " + said.format(path=path)


def test_a_zipped_log_is_named_as_such(tmp_path: Path) -> None:
    import zipfile

    path = tmp_path / "run.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.write(RUN42, "run42.jsonl")
    with pytest.raises(LogFormatError) as err:
        detect(path)
    assert str(err.value) == (
        f"{path}: a zip-compressed file: expected a coding-agent log; decompress it first"
    )


def test_a_first_line_longer_than_the_detection_sample_is_detected(tmp_path: Path) -> None:
    """A 5 MB first line (a pasted image) passes the 4 MiB sample detection reads: it reads on
    to the line's end, as the readers take lines up to 64 MiB."""
    from replay.adapters.detect import SAMPLE_BYTES

    lines = VALID["claude-code"]().split("\n")
    first = json.loads(lines[0])
    first["snapshot"] = {"blob": "x" * (SAMPLE_BYTES + 1_000_000)}
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join([json.dumps(first), *lines[1:]]), encoding="utf-8")
    assert detect(path) == "claude-code"


def test_a_native_header_without_its_format_is_still_read_as_native(tmp_path: Path) -> None:
    """A lenient read takes a replay-log header that lost `format` (and --strict refuses it);
    it used to be detected as a pi header, and `convert` wrote a pi log with no events."""
    lines = [
        {"type": "session", "version": 1, "ts": "2026-01-01T00:00:00Z",
         "provider": "anthropic", "model": "claude-sonnet-4-5"},
        {"type": "user", "ts": "2026-01-01T00:00:01Z", "text": "go"},
        {"type": "request", "ts": "2026-01-01T00:00:02Z", "request_id": "r1"},
        {"type": "assistant", "ts": "2026-01-01T00:00:03Z", "request_id": "r1",
         "blocks": [{"type": "text", "text": "done"}]},
    ]
    path = tmp_path / "nofmt.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert detect(path) == "replay-log"
    session = load(path)
    assert session.header.agent != "pi" and len(session.requests()) == 1
    with pytest.raises(LogFormatError, match="format: replay-log"):
        load(path, strict=True)
    # pi's own headers (id, timestamp, cwd; version from v2) are still pi's
    pi = {"type": "session", "id": "x", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w"}
    for header in (pi, {**pi, "version": 3}, {"type": "session", "version": 2}):
        path.write_text(json.dumps(header) + "\n", encoding="utf-8")
        assert detect(path) == "pi", header


def test_load_reads_native_logs_unchanged(tmp_path: Path) -> None:
    session = load(write(tmp_path, "codex", VALID["codex"]()))
    out = tmp_path / "n.jsonl"
    write_log(session, out)
    assert load(out).header.agent == "codex"
    assert reader_for("replay-log")(out).header.agent == "codex"
    assert set(FORMATS) == {"replay-log", "claude-code", "codex", "pi", "opencode"}


# --------------------------------------------------------------------------------------------------
# Bad input, every adapter


def _damage_last_line(text: str) -> str:
    return text.rstrip("\n")[:-7]


def _insert_garbage(text: str) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[:2] + ['{"type": "user", "broken\n'] + lines[2:])


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "pi"])
def test_truncated_last_line_is_skipped_or_refused(tmp_path: Path, fmt: str) -> None:
    text = _damage_last_line(VALID[fmt]())
    path = write(tmp_path, fmt, text)
    last = len(text.splitlines())
    session = load(path)
    assert len(session.skipped) == 1
    assert f":{last}:" in str(session.skipped[0])
    with pytest.raises(LogFormatError, match=rf":{last}: expected a JSON object"):
        load(path, strict=True)


def test_truncated_opencode_export_keeps_whole_messages(tmp_path: Path) -> None:
    text = VALID["opencode"]()
    cut = text[: text.index('"Two files."')]
    path = write(tmp_path, "opencode", cut)
    session = load(path)
    assert session.skipped and ":" in str(session.skipped[0])
    assert len(session.requests()) == 1
    with pytest.raises(LogFormatError, match=r"\.json:\d+: expected a complete"):
        load(path, strict=True)


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "pi"])
def test_invalid_json_line(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path, fmt, _insert_garbage(VALID[fmt]()))
    session = load(path)
    assert [e.line for e in session.skipped] == [3]
    assert len(session.requests()) == 2
    with pytest.raises(LogFormatError, match=r":3: expected a JSON object"):
        load(path, strict=True)


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "pi"])
def test_a_line_of_other_whitespace_than_json_s_is_malformed_not_blank(
    tmp_path: Path, fmt: str
) -> None:
    # As in a replay-log (docs/log-format.md): a line of spaces, tabs and carriage returns is
    # blank and skipped; one of a form feed, \x1c or a no-break space is a malformed line.
    lines = VALID[fmt]().splitlines(keepends=True)
    for odd in ("\x0b", "\x0c", "\x1c", "\xa0", "\u2028"):
        text = "".join([*lines[:2], " \t\r\n", f"{odd}\n", *lines[2:]])
        path = write(tmp_path, fmt, text)
        session = load(path)
        assert [e.line for e in session.skipped] == [4], repr(odd)
        assert len(session.requests()) == 2
        with pytest.raises(LogFormatError, match=r":4: expected a JSON object"):
            load(path, strict=True)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"type": "user", "n": ' + "7" * 5000 + "}", "Exceeds the limit (4300 digits)"),
        ("[" * 100_000, "nested too deeply"),
        ('{"type": "user", "n": NaN}', "NaN is not a JSON value"),
    ],
    ids=["integer-too-long", "nested-too-deeply", "nan"],
)
@pytest.mark.parametrize("fmt", ["claude-code", "codex", "pi"])
def test_a_line_json_cannot_hold_in_python_is_one_bad_line(
    tmp_path: Path, fmt: str, line: str, why: str
) -> None:
    """Valid JSON Python will not read (an integer of 5,000 digits, 100,000 nested lists), and
    Python's NaN, which is not JSON: that line is skipped and counted, not the whole file
    refused."""
    lines = VALID[fmt]().splitlines(keepends=True)
    path = write(tmp_path, fmt, "".join(lines[:2] + [line + "\n"] + lines[2:]))
    session = load(path)
    assert [e.line for e in session.skipped] == [3]
    assert len(session.requests()) == 2
    with pytest.raises(LogFormatError, match=rf":3: expected a JSON object \({re.escape(why)}"):
        load(path, strict=True)


def test_a_request_with_no_message_before_it_is_dropped_and_reported(tmp_path: Path) -> None:
    """A capture gap took a thread's first prompt (here the main thread's; on a real log a
    sidechain's): its response still names a request, for which no prompt can be rebuilt."""
    lines = claude_lines()
    del lines[1]  # the user's first message
    path = write(tmp_path, "claude-code", jsonl(lines))
    session = load(path)
    assert [str(e) for e in session.skipped] == [
        f"{path}:2: expected a message of thread 'main' before request req_1 (the log holds "
        "none: a capture gap?); the request was dropped"
    ]
    assert [r.request_id for r in session.requests()] == ["req_2"]
    assert replay.replay(session, "baseline").summary["requests"].to_list() == [1]
    with pytest.raises(LogFormatError, match=r":2: expected a message of thread 'main'"):
        load(path, strict=True)


@pytest.mark.parametrize(
    ("fmt", "record"),
    [
        ("claude-code", {"type": "hologram", "uuid": "zz", "sessionId": "s-1"}),
        ("codex", {"timestamp": "2026-01-02T10:00:00.005Z", "type": "hologram", "payload": {}}),
        ("pi", {"type": "hologram", "timestamp": "2026-01-02T10:00:00.005Z"}),
    ],
)
def test_unknown_record_type(tmp_path: Path, fmt: str, record: dict[str, Any]) -> None:
    lines = VALID[fmt]().splitlines(keepends=True)
    text = "".join(lines[:2] + [json.dumps(record) + "\n"] + lines[2:])
    path = write(tmp_path, fmt, text)
    session = load(path)
    assert len(session.skipped) == 1 and "unknown" in str(session.skipped[0])
    assert len(session.requests()) == 2
    with pytest.raises(LogFormatError, match=r":3: unknown"):
        load(path, strict=True)


def _type_to_list(fmt: str) -> str:
    """A valid log whose every record (every opencode part) has its `type` in a list."""
    if fmt == "opencode":
        doc = opencode_doc()
        for message in doc["messages"]:
            for part in message["parts"]:
                part["type"] = [part["type"]]
        return json.dumps(doc)
    lines = [json.loads(line) for line in VALID[fmt]().splitlines()]
    for obj in lines[1:]:
        for record in (obj, obj.get("payload")):
            if isinstance(record, dict) and "type" in record:
                record["type"] = [record["type"]]
    return jsonl(lines)


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_a_type_that_is_no_string_is_a_malformed_record(tmp_path: Path, fmt: str) -> None:
    """Not an unknown record type (which some formats skip quietly): a malformed one, named."""
    path = write(tmp_path, fmt, _type_to_list(fmt))
    expected = r":\d+: expected (`type` to be a string, got list|a `type` string \(Claude Code)"
    with pytest.raises(LogFormatError, match=expected):
        load(path, strict=True)


def _blocks_typed_as_lists(value: Any) -> int:
    """Put the `type` of every content block inside `value` in a list; how many."""
    count = 0
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "content" and isinstance(inner, list):
                for block in inner:
                    if isinstance(block, dict) and isinstance(block.get("type"), str):
                        block["type"] = [block["type"]]
                        count += 1
            count += _blocks_typed_as_lists(inner)
    elif isinstance(value, list):
        count += sum(_blocks_typed_as_lists(v) for v in value)
    return count


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "pi"])
def test_a_content_block_whose_type_is_no_string_is_malformed(tmp_path: Path, fmt: str) -> None:
    """Its record is malformed, named at its own line (the block was read as text: its type's
    repr written into the log, and a lost tool call blamed on the result's line)."""
    lines = [json.loads(line) for line in VALID[fmt]().splitlines()]
    changed = [n for n, obj in enumerate(lines, 1) if _blocks_typed_as_lists(obj)]
    assert changed
    path = write(tmp_path, fmt, jsonl(lines))
    with pytest.raises(LogFormatError, match=rf":{changed[0]}: .*`type` to be a string, got list"):
        load(path, strict=True)


def test_unknown_opencode_role(tmp_path: Path) -> None:
    doc = opencode_doc()
    doc["messages"].insert(
        1, {"info": {"role": "oracle", "id": "m9", "time": {"created": 1767348000050}}, "parts": []}
    )
    path = write(tmp_path, "opencode", json.dumps(doc, indent=2))
    session = load(path)
    assert len(session.skipped) == 1 and "unknown opencode message role" in str(session.skipped[0])
    with pytest.raises(LogFormatError, match="unknown opencode message role"):
        load(path, strict=True)


def _drop_result(fmt: str) -> str:
    if fmt == "opencode":
        doc = opencode_doc()
        doc["messages"][1]["parts"][2]["state"]["status"] = "running"
        return json.dumps(doc, indent=2)
    if fmt == "claude-code":  # the chain re-linked around it: no missing line, no result
        records = claude_lines()
        dropped = next(r for r in records if "tool_result" in json.dumps(r))
        for r in records:
            if r.get("parentUuid") == dropped["uuid"]:
                r["parentUuid"] = dropped["parentUuid"]
        return jsonl([r for r in records if r is not dropped])
    lines = VALID[fmt]().splitlines(keepends=True)
    marker = {"codex": "function_call_output", "pi": "toolResult"}
    return "".join(x for x in lines if marker[fmt] not in x)


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_missing_tool_result_is_repaired_and_reported(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path, fmt, _drop_result(fmt))
    session = load(path)
    assert len(session.skipped) == 1
    assert "expected a tool result" in str(session.skipped[0])
    placeholders = [e for e in session.events if getattr(e, "synthetic", None)]
    assert len(placeholders) == 1 and placeholders[0].is_error
    assert unpaired_before_request(session) == []
    with pytest.raises(LogFormatError, match="expected a tool result"):
        load(path, strict=True)


def _late_result(fmt: str) -> str:
    """A call answered only after the next request went out (its result logged after that
    request's response), then a third request."""
    if fmt == "claude-code":
        records = claude_lines()
        a1, call, result, a3 = records[2], records[3], records[5], records[6]
        call["parentUuid"] = "u1"
        base = {k: a1[k] for k in ("sessionId", "version", "cwd", "isSidechain")}
        go_on = {**base, "type": "user", "uuid": "u3", "parentUuid": "a2",
                 "timestamp": "2026-01-02T10:00:03.100Z",
                 "message": {"role": "user", "content": "Go on."}}
        a3["parentUuid"] = "u3"
        result.update(parentUuid="a3", timestamp="2026-01-02T10:00:05.500Z")
        thanks = {**go_on, "uuid": "u4", "parentUuid": "u2", "timestamp": "2026-01-02T10:00:06Z",
                  "message": {"role": "user", "content": "Thanks."}}
        last = {**a3, "uuid": "a4", "parentUuid": "u4", "requestId": "req_3",
                "timestamp": "2026-01-02T10:00:08.000Z",
                "message": {**a3["message"], "id": "msg_C"}}
        return jsonl([records[0], records[1], call, go_on, a3, result, thanks, last])
    if fmt == "codex":
        lines = codex_lines()
        user, typed, result, tokens = lines[3], lines[4], lines[7], lines[8]
        answer, last_tokens = lines[10], lines[11]

        def said(text: str, ts: str) -> list[dict[str, Any]]:
            prompt = json.loads(json.dumps(user))
            prompt["payload"]["content"][0]["text"] = text
            event = {**typed, "payload": {"type": "user_message", "message": text}}
            return [{**prompt, "timestamp": ts}, {**event, "timestamp": ts}]

        third = json.loads(json.dumps(last_tokens))
        for key in ("last_token_usage", "total_token_usage"):
            third["payload"]["info"][key]["output_tokens"] += 7
        third["timestamp"] = "2026-01-02T10:00:04.000Z"
        result["timestamp"] = "2026-01-02T10:00:02.500Z"
        return jsonl([*lines[:7], tokens, *said("Go on.", "2026-01-02T10:00:01.500Z"), answer,
                      last_tokens, result, *said("Thanks.", "2026-01-02T10:00:03.000Z"),
                      {**answer, "timestamp": "2026-01-02T10:00:03.900Z"}, third])
    assert fmt == "pi"
    header, user, model, call, result, answer = pi_lines(version=1)
    go_on = json.loads(json.dumps(user))
    go_on["message"]["content"][0]["text"] = "Go on."
    go_on["timestamp"] = "2026-01-02T10:00:03.000Z"
    result["timestamp"] = "2026-01-02T10:00:04.500Z"
    thanks = {**go_on, "timestamp": "2026-01-02T10:00:05.000Z",
              "message": {**go_on["message"], "content": [{"type": "text", "text": "Thanks."}]}}
    last = {**answer, "timestamp": "2026-01-02T10:00:06.000Z"}
    return jsonl([header, user, model, call, go_on, answer, result, thanks, last])


# (Not opencode: one part holds a call and its result, which cannot come after a request.)
@pytest.mark.parametrize("fmt", ["claude-code", "codex", "pi"])
def test_a_result_logged_after_the_request_that_went_without_it_is_dropped(
    tmp_path: Path, fmt: str
) -> None:
    # The request sent before the result came held a placeholder in its place; a provider takes
    # one result per call, so the late result is a second one: dropped and reported, and every
    # later prompt keeps the placeholder the earlier one cached.
    path = write(tmp_path, fmt, _late_result(fmt))
    session = load(path)
    requests = session.requests()
    assert len(requests) == 3
    results = [e for e in session.events if isinstance(e, ToolResult)]
    assert [(r.output, r.is_error, r.synthetic) for r in results] == [
        ("", True, "missing tool result")
    ]
    assert session.events.index(results[0]) == session.events.index(requests[1]) - 1
    second = requests[1].request_id
    call = results[0].call_id
    assert [str(e).split(": ", 1)[1] for e in session.skipped] == [
        f"expected a tool result for call {call!r} (" + results[0].tool_name
        + f") before request {second}; a placeholder error result was added",
        f"expected one tool result per call: call id {call!r} was already answered by a "
        f"placeholder before request {second}; this one was dropped",
    ]
    assert unpaired_before_request(session) == []
    with pytest.raises(LogFormatError, match="expected a tool result"):
        load(path, strict=True)


def _redact(fmt: str) -> str:
    text = VALID[fmt]()
    for call_id in ("toolu_1", "call_1"):
        text = text.replace(call_id, "REDACTED")
    return text


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_redacted_ids_are_paired_by_order(tmp_path: Path, fmt: str) -> None:
    session = load(write(tmp_path, fmt, _redact(fmt)), strict=True)
    calls = [
        b
        for e in session.events
        if isinstance(e, AssistantMessage)
        for b in e.blocks
        if isinstance(b, ToolCallBlock)
    ]
    results = [e for e in session.events if isinstance(e, ToolResult)]
    assert len(calls) == 1 and len(results) == 1
    assert calls[0].id != "REDACTED" and results[0].call_id == calls[0].id


def _duplicate(fmt: str) -> tuple[str, str]:
    if fmt == "opencode":
        doc = opencode_doc()
        doc["messages"].insert(2, json.loads(json.dumps(doc["messages"][1])))
        return json.dumps(doc, indent=2), "duplicate record"
    lines = VALID[fmt]().splitlines(keepends=True)
    index = {"claude-code": 5, "codex": 6, "pi": 3}[fmt]
    return "".join(lines[: index + 1] + [lines[index]] + lines[index + 1 :]), "duplicate record"


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_duplicate_records_are_dropped_and_counted(tmp_path: Path, fmt: str) -> None:
    text, message = _duplicate(fmt)
    path = write(tmp_path, fmt, text)
    session = load(path)
    assert len(session.requests()) == 2
    assert len(session.skipped) == 1 and message in str(session.skipped[0])
    with pytest.raises(LogFormatError, match=message):
        load(path, strict=True)


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_empty_file(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path, fmt, "\n  \n")
    with pytest.raises(LogFormatError, match="empty file"):
        load(path)
    with pytest.raises(LogFormatError, match="empty file"):
        reader_for(fmt)(path)


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_a_file_of_other_whitespace_than_json_s_is_not_empty(tmp_path: Path, fmt: str) -> None:
    # A form feed is not blank (JSON's whitespace is space, tab, CR and LF): detection and
    # each reader refuse such a file for what it holds, not as an empty one.
    path = write(tmp_path, fmt, "\x0c\n")
    for read in (load, reader_for(fmt)):
        with pytest.raises(LogFormatError) as err:
            read(path)
        assert "empty" not in str(err.value) and "expected" in str(err.value), str(err.value)


@pytest.mark.parametrize("reader_fmt", sorted(VALID))
@pytest.mark.parametrize("data_fmt", sorted(VALID))
def test_wrong_format_for_a_reader(tmp_path: Path, reader_fmt: str, data_fmt: str) -> None:
    if reader_fmt == data_fmt:
        return
    path = write(tmp_path, data_fmt, VALID[data_fmt]())
    with pytest.raises(LogFormatError) as err:
        reader_for(reader_fmt)(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_a_native_log_read_as_an_agent_s_format_is_an_error(fmt: str) -> None:
    """`convert --from FMT` on a file of another format: an error, not an empty log."""
    with pytest.raises(LogFormatError) as err:
        read_any(RUN42, fmt=fmt)
    assert str(RUN42) in str(err.value)


def test_unrecognised_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text('{"cli_version": "1", "token_usage": {}}\nname,count\n', encoding="utf-8")
    with pytest.raises(LogFormatError, match=r"notes\.jsonl:1: expected a coding-agent log"):
        load(path)
    with pytest.raises(LogFormatError, match="no such file"):
        load(tmp_path / "missing.jsonl")


def test_a_folder_of_unreadable_transcripts_says_they_could_not_be_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    write(folder, "claude-code", VALID["claude-code"]())
    real_open = open

    def refuse(file, *args, **kwargs):  # what a transcript of mode 000 gives a normal user
        if str(file).startswith(str(folder)):
            raise PermissionError(13, "Permission denied")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", refuse)
    with pytest.raises(LogFormatError, match=r"1 file\(s\) could not be read, first: .*cannot "
                       r"read the file \(Permission denied\)"):
        detect(folder)


def test_invalid_utf8_line(tmp_path: Path) -> None:
    data = VALID["claude-code"]().encode()
    lines = data.splitlines(keepends=True)
    path = write(tmp_path, "claude-code", b"".join(lines[:3] + [b"\xff\xfe{}\n"] + lines[3:]))
    session = load(path)
    assert [e.line for e in session.skipped] == [4] and "UTF-8" in str(session.skipped[0])


# --------------------------------------------------------------------------------------------------
# CLI


def _cli():
    from replay.cli._main import cli, load_commands

    load_commands()
    return cli


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_convert_command_writes_native_log(tmp_path: Path, fmt: str) -> None:
    src = write(tmp_path, fmt, VALID[fmt]())
    out = tmp_path / "out" / "native.jsonl"
    missing = CliRunner().invoke(_cli(), ["convert", str(src), "-o", str(out)])
    assert missing.exit_code == 2 and "does not exist" in missing.output  # no folder made
    assert not out.parent.exists()
    out.parent.mkdir()
    result = CliRunner().invoke(_cli(), ["convert", str(src), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 requests" in result.output
    converted = read_log(out, strict=True)
    original = read_any(src)
    hidden = original.header.hidden_prefix_tokens
    assert result.output.endswith(f"; estimated hidden prefix {hidden:,} tokens\n")
    assert dumps_log(converted.header, converted.events) == dumps_log(
        original.header, original.events
    )
    assert not list(out.parent.glob(".*.tmp"))


def test_convert_command_errors_are_one_line(tmp_path: Path) -> None:
    bad = write(tmp_path, "codex", _damage_last_line(VALID["codex"]()))
    out = tmp_path / "o.jsonl"
    runner = CliRunner()
    result = runner.invoke(_cli(), ["convert", str(bad), "-o", str(out), "--strict"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert f"{bad}:{len(VALID['codex']().splitlines())}:" in result.output
    assert not out.exists()
    lenient = runner.invoke(_cli(), ["convert", str(bad), "-o", str(out)])
    assert lenient.exit_code == 0 and "1 line skipped" in lenient.output
    wrong = runner.invoke(_cli(), ["convert", str(bad), "-o", str(out), "--from", "pi"])
    assert wrong.exit_code == 2 and "error:" in wrong.output and "Traceback" not in wrong.output


def test_convert_help_has_an_example() -> None:
    result = CliRunner().invoke(_cli(), ["convert", "--help"])
    assert result.exit_code == 0
    assert "Example:" in result.output and "replay convert" in result.output


def test_errors_are_replay_errors() -> None:
    assert issubclass(LogFormatError, ReplayError)


# --------------------------------------------------------------------------------------------------
# Every real sample: replays through `baseline`, and its conversion replays identically


def _sample_files() -> list[Path]:
    if not SAMPLES.is_dir():
        return []
    files = sorted(SAMPLES.glob("*/*.jsonl")) + sorted(SAMPLES.glob("opencode/*_full.json"))
    return [f for f in files if "metadata" not in f.name]


@needs_samples
@pytest.mark.parametrize("path", _sample_files(), ids=lambda p: p.name[:48])
def test_sample_replays_and_its_conversion_replays_the_same(tmp_path: Path, path: Path) -> None:
    from polars.testing import assert_frame_equal

    from replay import replay

    original = load(path, strict=True)
    out = tmp_path / "converted.jsonl"
    write_log(original, out)
    converted = load(out, strict=True)
    assert dumps_log(converted.header, converted.events) == dumps_log(
        original.header, original.events
    )
    # `recorded` reads what only the log holds (its compactions, cleared results, the client's
    # breakpoints), the others rewrite, summarize and drop: each result and note is the same.
    strategies = "recorded,baseline,truncate-500,compact-at-12000-structured,sliding-10"
    a = replay(original, strategies)
    b = replay(out, strategies)
    assert a.summary.height == 5 and a.summary["requests"][0] == len(original.requests())
    assert_frame_equal(a.summary, b.summary)
    assert_frame_equal(a.turns, b.turns)
    assert a.notes == b.notes


@needs_samples
def test_every_sample_is_detected_by_content() -> None:
    expected = {"claude_code": "claude-code", "codex": "codex", "pi": "pi", "opencode": "opencode"}
    files = _sample_files()
    assert len(files) == 10
    for f in files:
        assert detect(f) == expected[f.parent.name]


# --------------------------------------------------------------------------------------------------
# Estimates: the hidden prefix and the per-request residual


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_hidden_prefix_closes_the_first_request(tmp_path: Path, fmt: str) -> None:
    from replay.adapters._common import prompt_residuals, rendered_prompt_tokens
    from replay.render import Renderer
    from replay.strategies._view import UserItem
    from replay.tokens import counter_for

    session = load(write(tmp_path, fmt, VALID[fmt]()))
    header = session.header
    first = session.requests()[0]
    before = session.events[: session.events.index(first)]
    visible = rendered_prompt_tokens(before, first, header, header.system)
    assert header.hidden_prefix_tokens == first.usage.prompt_tokens - visible
    assert header.hidden_prefix_from == first.request_id
    assert "hidden_prefix" in header.estimated
    residuals = prompt_residuals(session)
    assert [r.request_id for r in residuals] == [r.request_id for r in session.requests()]
    assert residuals[0].residual == 0
    # The renderer's hook turns the estimate into one block of exactly that many tokens.
    renderer = Renderer(counter_for(header.model))
    kw = dict(
        system="s",
        tools=[],
        index=0,
        request_id="r",
        thread="main",
        ts=first.ts,
        model=header.model,
        provider=header.provider,
    )
    plain = renderer.render([UserItem("x")], **kw)
    hidden = renderer.render([UserItem("x")], hidden_tokens=header.hidden_prefix_tokens, **kw)
    assert hidden.total - plain.total == header.hidden_prefix_tokens


BOM = "\ufeff".encode()


@pytest.mark.parametrize("fmt", [*sorted(VALID), "replay-log"])
def test_leading_utf8_bom_is_accepted_by_every_reader(tmp_path: Path, fmt: str) -> None:
    # Editors on Windows save UTF-8 with a byte order mark; it is not part of the first record.
    if fmt == "replay-log":
        plain = tmp_path / "plain.jsonl"
        write_log(load(write(tmp_path, "codex", VALID["codex"]())), plain)
        text = plain.read_text(encoding="utf-8")
    else:
        text = VALID[fmt]()
        plain = write(tmp_path, fmt, text, name="plain")
    path = write(tmp_path, fmt, BOM + text.encode("utf-8"), name="bom")
    assert detect(path) == fmt
    for strict in (True, False):
        for read in (load, reader_for(fmt)):
            session = read(path, strict=strict)
            assert session.skipped == []
            assert dumps_log(session.header, session.events) == dumps_log(
                load(plain).header, load(plain).events
            )


@pytest.mark.parametrize("fmt", sorted(f for f in VALID if f != "opencode"))
def test_crlf_lines_and_a_last_line_without_newline_read_alike(tmp_path: Path, fmt: str) -> None:
    """JSONL readers read the file line by line: Windows line ends and a last line without its
    newline give the same session as the plain file."""
    text = VALID[fmt]()
    plain = write(tmp_path, fmt, text, name="plain")
    crlf = write(tmp_path, fmt, text.rstrip("\n").replace("\n", "\r\n").encode("utf-8"),
                 name="crlf")
    for strict in (True, False):
        session = reader_for(fmt)(crlf, strict=strict)
        assert session.skipped == []
        assert dumps_log(session.header, session.events) == dumps_log(
            load(plain).header, load(plain).events
        )


def test_a_first_pass_parses_only_the_lines_holding_its_needles(tmp_path: Path) -> None:
    """The Codex reader's first pass (who typed what, which model) parses only lines that can
    tell, keeps none, and leaves bad lines to the full pass, which reports them."""
    from replay.adapters._common import json_lines_holding

    path = tmp_path / "log.jsonl"
    path.write_bytes(BOM + b'{"type": "turn_context", "model": "m"}\n'
                     b'{"type": "other"}\n{"type": "turn_context", broken\n[1, "turn_context"]\n')
    assert list(json_lines_holding(path, (b'"turn_context"',))) == [
        {"type": "turn_context", "model": "m"}
    ]


@pytest.mark.parametrize(
    ("first", "second"),
    [("claude-code", "opencode"), ("opencode", "codex"), ("claude-code", "replay-log"),
     ("claude-code", "pi")],
)
def test_a_folder_of_logs_of_several_formats_is_refused(tmp_path: Path, first: str,
                                                        second: str) -> None:
    """A folder is read as one session: a log of another format in it would be dropped unread."""
    write(tmp_path, first, VALID[first](), name="a")
    other = RUN42.read_text(encoding="utf-8") if second == "replay-log" else VALID[second]()
    write(tmp_path, second, other, name="b")
    for strict in (False, True):
        with pytest.raises(LogFormatError) as err:
            load(tmp_path, strict=strict)
        message = str(err.value)
        assert message.startswith(f"{tmp_path}: expected the logs of one session, in one format;")
        assert "holds logs of 2 formats" in message and f"replay batch {tmp_path}" in message
        for fmt, name in ((first, "a"), (second, "b")):
            assert f"{fmt}: {name}{SUFFIX.get(fmt, '.jsonl')}" in message
        # the format the folder is read as comes first, the others after it by name
        assert message.index(f"({first}: ") < message.index(f"; {second}: ")
    run = CliRunner().invoke(_cli(), ["run", str(tmp_path), "-s", "baseline"])
    assert run.exit_code == 2 and run.stderr.startswith("error: ") and "2 formats" in run.stderr


def test_a_folder_of_one_file_logs_is_refused_naming_them_and_batch(tmp_path: Path) -> None:
    """Codex rollouts, pi sessions and replay-logs are one session per file: a folder of them
    is several sessions, which `replay batch` replays; the message names them by format."""
    write(tmp_path, "codex", VALID["codex"](), name="a")
    write(tmp_path, "pi", VALID["pi"](), name="b")
    write(tmp_path, "codex", VALID["codex"](), name="c")
    (tmp_path / "notes.json").write_text("{}")  # not a log: not named
    with pytest.raises(LogFormatError) as err:
        load(tmp_path)
    assert str(err.value) == (
        f"{tmp_path}: expected a file, or a directory of Claude Code transcripts or opencode "
        f"exports; this directory holds logs read one file at a time (codex: a.jsonl, c.jsonl; "
        f"pi: b.jsonl): give one file, or replay each with `replay batch {tmp_path}`")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LogFormatError) as err:
        load(empty)
    assert str(err.value) == (f"{empty}: expected a file, or a directory of Claude Code "
                              "transcripts or opencode exports")


@given(
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.one_of(st.none(), st.integers(0, 2 * 10**6)),
)
def test_anthropic_write_buckets_add_up_to_the_logged_write(inp, read, created, h1) -> None:
    # However the TTL split reads (absent, short, or over the total), the prompt is
    # input + cache read + cache creation, in disjoint non-negative buckets.
    from replay.adapters._common import anthropic_usage

    u = {"input_tokens": inp, "cache_read_input_tokens": read,
         "cache_creation_input_tokens": created, "output_tokens": 1}
    if h1 is not None:
        u["cache_creation"] = {"ephemeral_1h_input_tokens": h1}
    usage = anthropic_usage(u)
    assert usage.cache_write_5m_tokens >= 0 and usage.cache_write_1h_tokens >= 0
    assert usage.cache_write_5m_tokens + usage.cache_write_1h_tokens == created
    assert usage.prompt_tokens == inp + read + created
    assert usage.cache_write_1h_tokens == min(h1 or 0, created)


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        # An aggregator is priced as the model's maker when the model says who that is …
        ("openrouter", "claude-sonnet-4-5", "anthropic"),
        ("openrouter", "gpt-5", "openai"),
        # … and stays itself otherwise.
        ("openrouter", "anthropic/claude-sonnet-4.5", "openrouter"),
        ("claude", "anything", "anthropic"),
        (None, "deepseek-chat", "deepseek"),
        (None, None, "anthropic"),
        ("openrouter", "mistral-large", "openrouter"),  # no maker known: the aggregator
        ("opencode", "o4-mini", "openai"),
        ("opencode", "o3", "openai"),
        ("github-copilot", "gemini-2.5-pro", "google"),
        ("openai", "claude-sonnet-4-5", "openai"),  # a named provider is kept
        ("fireworks", "llama-4-scout", "fireworks"),  # unknown to replay: kept as named
        ("xai", "grok-4", "x-ai"),  # genai-prices' id
        ("azure-openai", "gpt-5", "azure"),
        ("opencode", "deepseek-reasoner", "deepseek"),
    ],
)
def test_provider_for_maps_aggregators_to_the_model_s_maker(provider, model, expected) -> None:
    from replay.adapters._common import provider_for

    assert provider_for(provider, model) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("[1, 2]", {"_raw": [1, 2]}),  # JSON, not an object: kept whole
        ('"ls"', {"_raw": "ls"}),
        ("not json", {"_raw": "not json"}),
        (None, {}),
        (7, {"_raw": 7}),
    ],
)
def test_tool_arguments_that_are_no_object_are_kept_under_raw(raw, expected) -> None:
    from replay.adapters._common import parse_arguments

    assert parse_arguments(raw) == expected


def test_openai_usage_without_a_reasoning_count_leaves_it_unknown() -> None:
    from replay.adapters._common import openai_usage

    usage = openai_usage({"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 3})
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (6, 4, 3)
    assert usage.reasoning_tokens is None  # not logged: unknown, not zero
    logged = openai_usage({"input_tokens": 10, "output_tokens": 3, "reasoning_output_tokens": 0})
    assert logged.reasoning_tokens == 0


def test_a_usage_is_empty_only_with_neither_prompt_nor_output() -> None:
    from replay.adapters._common import usage_is_empty
    from replay.log import Usage

    assert usage_is_empty(None) and usage_is_empty(Usage())
    assert not usage_is_empty(Usage(output_tokens=5))
    assert not usage_is_empty(Usage(cache_read_tokens=5))


def test_a_cut_export_holding_only_its_info_is_still_an_opencode_export(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text('{\n  "info": {\n    "id": "ses_1",\n', encoding="utf-8")
    assert detect(path) == "opencode"


# --------------------------------------------------------------------------------------------------
# Usage mapping and the small rules every adapter shares (pinned by a mutation pass)


def test_anthropic_usage_leaves_what_the_ttl_split_does_not_cover_in_the_5m_bucket() -> None:
    from replay.adapters._common import anthropic_usage

    def buckets(created: int, split: dict[str, int] | None) -> tuple[int, int, int]:
        raw: dict[str, Any] = {"input_tokens": 4, "cache_read_input_tokens": 900,
                               "cache_creation_input_tokens": created, "output_tokens": 7}
        if split is not None:
            raw["cache_creation"] = split
        u = anthropic_usage(raw)
        assert u.prompt_tokens == 4 + 900 + created  # whatever the split says
        return u.cache_write_5m_tokens, u.cache_write_1h_tokens, u.output_tokens

    assert buckets(100, None) == (100, 0, 7)  # older logs: the total, billed at the 5m rate
    assert buckets(100, {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 70}) == (
        30, 70, 7
    )
    # The 5m figure alone: the 1h one is the rest of the write (caching.md: their sum).
    assert buckets(100, {"ephemeral_5m_input_tokens": 30}) == (30, 70, 7)
    # A 1h figure above the total is capped at it: no bucket goes negative.
    assert buckets(100, {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 150}) == (
        0, 100, 7
    )


def test_anthropic_price_context_names_only_priced_variants() -> None:
    from replay.adapters._common import anthropic_price_context, anthropic_usage

    def context(**raw: Any) -> dict[str, str] | None:
        return anthropic_price_context(anthropic_usage({"input_tokens": 1, **raw}))

    for geo in ("", "not_available", "global"):  # the default routing is no variant
        assert context(inference_geo=geo, service_tier="standard") is None
    assert context(inference_geo="us") == {"inference_geo": "us"}
    assert context(speed="fast", inference_geo="global") == {"speed": "fast"}
    assert context(speed="standard") is None


def test_openai_usage_takes_a_fully_cached_prompt_and_refuses_more_cached_than_sent() -> None:
    from replay.adapters._common import Bad, openai_usage

    u = openai_usage({"input_tokens": 1280, "cached_input_tokens": 1280, "output_tokens": 9,
                      "reasoning_output_tokens": 4})
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens, u.reasoning_tokens) == (
        0, 1280, 9, 4
    )
    with pytest.raises(Bad, match="cached_input_tokens 1281 > input_tokens 1280"):
        openai_usage({"input_tokens": 1280, "cached_input_tokens": 1281})


def test_opencode_usage_reads_reasoning_as_part_of_the_output_up_to_all_of_it() -> None:
    from replay.adapters._common import opencode_usage

    def out(output: int, reasoning: int) -> tuple[int, int | None]:
        u = opencode_usage({"input": 1, "output": output, "reasoning": reasoning}, None)
        return u.output_tokens, u.reasoning_tokens

    assert out(50, 20) == (50, 20)
    assert out(50, 50) == (50, 50)  # all of the output was reasoning: still counted once
    assert out(50, 60) == (110, 60)  # more reasoning than output: the output left it out


def test_a_redacted_or_repeated_request_id_gets_a_unique_generated_one(tmp_path: Path) -> None:
    from replay.adapters._common import Issues, SessionBuilder

    builder = SessionBuilder(tmp_path / "log.jsonl", Issues(tmp_path / "log.jsonl", False))
    ids = [builder.request_id(w) for w in ("req_1", "REDACTED", "req_1", None, "REDACTED")]
    assert ids == ["req_1", "req-2", "req_1#2", "req-4", "req-5"]
    assert "REDACTED" not in "".join(ids)


def test_a_result_naming_a_reused_call_id_answers_the_oldest_call_still_waiting() -> None:
    from replay.adapters._common import WaitingCalls

    waiting = WaitingCalls()
    for cid in ("call_0", "call_0#2", "call_0#3"):
        waiting.add("call_0", cid)
    waiting.drop("call_0#2")  # answered by a result paired another way
    assert [waiting.take("call_0") for _ in range(3)] == ["call_0", "call_0#3", None]
    assert waiting.take(None) is None


_PAIRING_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("call"), st.sampled_from(["call_0", "REDACTED", "call_1"])),
        st.tuples(st.just("result"), st.integers(0, 3)),
        st.tuples(st.just("request"), st.none()),
    ),
    max_size=12,
)


@settings(max_examples=300)
@given(_PAIRING_OPS)
def test_repaired_threads_answer_every_call_once_before_each_request(ops) -> None:
    # `repair_tool_results` on any order of calls (ids reused or REDACTED, made unique as the
    # adapters make them), results and requests: every call a request follows has a result
    # before it and no call has two. A result is kept when its call still waits (a call a
    # request passed got a placeholder and waits no more: a result paired with it answers the
    # oldest waiting call of the same logged id, else it is a second result), and every
    # placeholder and every dropped result is reported.
    from replay.adapters._common import Issues, SessionBuilder

    builder = SessionBuilder("x.jsonl", Issues("x.jsonl", strict=False))
    start = datetime(2026, 1, 2, 10, tzinfo=UTC)
    calls: list[ToolCallBlock] = []
    waiting: list[ToolCallBlock] = []
    placeheld: set[str] = set()
    expected: dict[str, str] = {}  # output of a result kept → the call it answers
    results = 0
    for n, (kind, arg) in enumerate(ops):
        ts = start + timedelta(seconds=n)
        if kind == "call":
            block = ToolCallBlock(id=builder.call_id(arg, str(n)), name="t", arguments={})
            if block.id != arg:
                block.source_id = arg
            calls.append(block)
            waiting.append(block)
            builder.add(AssistantMessage(ts=ts, blocks=[block]))
        elif kind == "result" and calls:
            paired = call = calls[arg % len(calls)]
            results += 1
            if call.id in placeheld:
                logged = getattr(call, "source_id", None) or call.id
                call = next((c for c in waiting
                             if (getattr(c, "source_id", None) or c.id) == logged), call)
            if call in waiting:
                waiting.remove(call)
                expected[f"r{n}"] = call.id
            builder.add(ToolResult(ts=ts, call_id=paired.id, tool_name="t", output=f"r{n}"))
        elif kind == "request":
            builder.add(RequestMarker(ts=ts, request_id=builder.request_id(None)))
            placeheld.update(c.id for c in waiting)
            waiting.clear()
    builder.repair_tool_results()
    events = builder.threads["main"].events if "main" in builder.threads else []
    seen: list[str] = []
    for event in events:
        if isinstance(event, ToolResult):
            assert event.call_id not in seen
            seen.append(event.call_id)
        elif isinstance(event, RequestMarker):
            made = {b.id for e in events[: events.index(event)] if isinstance(e, AssistantMessage)
                    for b in e.blocks}
            assert made <= set(seen)
    kept = {e.output: e.call_id for e in events if isinstance(e, ToolResult) and not e.synthetic}
    assert kept == expected
    placeholders = [e.call_id for e in events if isinstance(e, ToolResult) and e.synthetic]
    assert sorted(placeholders) == sorted(placeheld)
    assert len(builder.issues.items) == len(placeholders) + results - len(kept)


def test_thinking_without_text_is_sized_from_reasoning_tokens_split_evenly() -> None:
    from replay.adapters._common import estimate_thinking
    from replay.log import TextBlock, ThinkingBlock, Usage

    def sizes(usage: Usage, n: int) -> list[tuple[int | None, str | None]]:
        blocks = [ThinkingBlock(thinking="", signature=f"s{i}") for i in range(n)]
        message = AssistantMessage(
            ts="2026-01-02T10:00:00Z", blocks=[*blocks, TextBlock(text="ok")]
        )
        estimate_thinking(message, usage, "gpt-5")
        return [(b.estimated_tokens, b.estimated_from) for b in blocks]

    # Reported reasoning is the size, even where the output would give another figure.
    assert sizes(Usage(input_tokens=1, output_tokens=900, reasoning_tokens=10), 3) == [
        (4, "reasoning_tokens"), (3, "reasoning_tokens"), (3, "reasoning_tokens")
    ]
    assert sizes(Usage(input_tokens=1, output_tokens=900, reasoning_tokens=11), 3) == [
        (4, "reasoning_tokens"), (4, "reasoning_tokens"), (3, "reasoning_tokens")
    ]
    # Without it: the output less the visible blocks, never below zero.
    (size, source), = sizes(Usage(input_tokens=1, output_tokens=1), 1)
    assert (size, source) == (0, "output_tokens - visible blocks")


def test_tool_arguments_that_are_no_json_object_are_wrapped() -> None:
    from replay.adapters._common import parse_arguments

    assert parse_arguments('{"path": "a"}') == {"path": "a"}
    assert parse_arguments("[1, 2]") == {"_raw": [1, 2]}
    assert parse_arguments(["x"]) == {"_raw": ["x"]}
    assert parse_arguments("ls -la") == {"_raw": "ls -la"}
    assert parse_arguments(None) == {}


def test_a_binary_placeholder_names_the_payload_s_type_and_size() -> None:
    from replay.adapters._common import binary_placeholder

    data = "QUJD" * 10
    anthropic = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": data}}
    assert binary_placeholder(anthropic) == "[image image/png 40 base64 chars]"
    assert binary_placeholder({"type": "image", "data": data, "mimeType": "image/jpeg"}) == (
        "[image image/jpeg 40 base64 chars]"
    )
    url = {"type": "input_image", "image_url": f"data:image/webp;base64,{data}"}
    assert binary_placeholder(url) == "[input_image image/webp 40 base64 chars]"
    assert binary_placeholder({"type": "text", "text": data}) is None


def test_a_json_line_with_messages_but_no_info_is_no_opencode_export(tmp_path: Path) -> None:
    # An API request dump on one line: `messages`, no `info`.
    request = {"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(LogFormatError, match="the content matches none of them"):
        detect(write(tmp_path, "opencode", json.dumps(request), name="request"))
    with pytest.raises(LogFormatError, match="the content matches none of them"):
        detect(write(tmp_path, "opencode", json.dumps({"info": {"id": "x"}}), name="info"))
    info = {"info": {"id": "ses_1"}, "messages": []}
    assert detect(write(tmp_path, "opencode", json.dumps(info), name="export")) == "opencode"


def test_records_detection_does_not_know_do_not_stop_the_vote(tmp_path: Path) -> None:
    # A Claude Code transcript opening with metadata records of types the detector does not
    # score (newer CLI versions add them): the lines after them still decide.
    lines = [{"type": "pr-link", "url": "https://x.test/1"},
             {"type": "worktree-state", "state": {}},
             {"type": "tag", "tag": "t"}] + claude_lines()
    assert detect(write(tmp_path, "claude-code", jsonl(lines))) == "claude-code"


def test_a_subagent_file_belongs_to_the_folder_of_its_transcript(tmp_path: Path) -> None:
    from replay.adapters._groups import session_folder

    project = tmp_path / "project"
    agent = project / "s-1" / "subagents" / "agent-a.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_text("{}\n", encoding="utf-8")
    # Without its transcript the session folder `s-1/` stands alone …
    assert session_folder("claude-code", agent) == str(project / "s-1")
    # … with it, the project folder holding `s-1.jsonl` is where the session's files lie.
    (project / "s-1.jsonl").write_text("{}\n", encoding="utf-8")
    assert session_folder("claude-code", agent) == str(project)
    assert session_folder("opencode", agent) == str(agent.parent)
    assert session_folder("claude-code", project / "s-1.jsonl") == str(project)


def test_a_first_prompt_smaller_than_its_visible_part_leaves_no_negative_hidden_prefix(
    tmp_path: Path,
) -> None:
    from replay.adapters._common import prompt_residuals

    lines = claude_lines()
    for x in lines:
        if x.get("type") == "assistant" and x["message"]["id"] == "msg_A":
            x["message"]["usage"] = {"input_tokens": 1, "output_tokens": 60}
    session = load(write(tmp_path, "claude-code", jsonl(lines)), strict=True)
    assert session.requests()[0].usage.prompt_tokens == 1
    assert session.header.hidden_prefix_tokens == 0  # the tokenizer over-counts: not negative
    assert prompt_residuals(session)[0].residual < 0


def _logged_usage(fmt: str) -> dict[str, Any]:
    """The usage object the first request of `VALID[fmt]` logs."""
    if fmt == "claude-code":
        return claude_lines()[2]["message"]["usage"]
    if fmt == "codex":
        return codex_lines()[8]["payload"]["info"]["last_token_usage"]
    if fmt == "pi":
        return next(e["message"]["usage"] for e in pi_lines() if "usage" in e.get("message", {}))
    return opencode_doc()["messages"][1]["parts"][-1]["tokens"]


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_events_trace_back_to_the_log(tmp_path: Path, fmt: str) -> None:
    # docs/adapters.md, Traceability: `line` (the source line), `source_id` (the log's own id
    # when it was replaced), `usage.raw` (the provider usage exactly as logged), and the
    # header's `source_format` (found by a mutation pass: `source_id` had no test).
    path = write(tmp_path, fmt, _redact(fmt))
    session = load(path, strict=True)
    (call,) = [
        b for e in session.events if isinstance(e, AssistantMessage) for b in e.blocks
        if isinstance(b, ToolCallBlock)
    ]
    assert call.id != "REDACTED" and call.source_id == "REDACTED"
    assert session.requests()[0].usage.raw == _logged_usage(fmt)
    assert fmt.split("-")[0] in session.header.source_format
    if fmt == "opencode":
        return  # one JSON document: its lines are not records
    records = path.read_text(encoding="utf-8").splitlines()
    logged = [e for e in session.events if isinstance(e, UserMessage | ToolResult)]
    assert logged
    for e in logged:
        text = e.text if isinstance(e, UserMessage) else e.output
        assert json.dumps(text)[1:-1] in records[e.line - 1]


_NOT_LOGGED = {
    "claude-code": {"system", "tools"},
    "codex": {"tools"},  # base_instructions is the system prompt; built-in tool schemas absent
    "pi": {"system", "tools"},
    "opencode": {"system", "tools"},
}
"""What each format does not log (formats.md §6), labelled estimated on the header."""


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_the_header_labels_what_the_log_does_not_hold_and_ids_follow_the_file(
    tmp_path: Path, fmt: str
) -> None:
    # docs/adapters.md: the unlogged system prompt / tool schemas and the hidden prefix are
    # `estimated`; event ids are renumbered `e1…` in file order, the header `e1` (found by a
    # mutation pass: pi's and opencode's labels and the numbering had no test).
    session = load(write(tmp_path, fmt, VALID[fmt]()), strict=True)
    header = session.header
    assert set(header.estimated) == _NOT_LOGGED[fmt] | {"hidden_prefix"}
    assert header.id == "e1"
    assert [e.id for e in session.events] == [f"e{n}" for n in range(2, len(session.events) + 2)]


def test_opencode_cache_writes_are_5_minute_writes() -> None:
    from replay.adapters._common import opencode_usage

    u = opencode_usage({"input": 1, "output": 2, "cache": {"read": 3, "write": 4}}, 0.5)
    assert (u.input_tokens, u.cache_read_tokens, u.cache_write_5m_tokens,
            u.cache_write_1h_tokens, u.output_tokens, u.cost_usd) == (1, 3, 4, 0, 2, "0.5")


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "pi"])
def test_a_line_longer_than_the_limit_is_one_bad_line(
    tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A guard against reading a binary file as JSONL: a line over MAX_LINE_BYTES is refused
    # without being parsed (found untested by a mutation pass). The limit is lowered here.
    import replay.adapters._common as common

    lines = VALID[fmt]().splitlines(keepends=True)
    monkeypatch.setattr(common, "MAX_LINE_BYTES", max(len(x) for x in lines) + 1)
    text = "".join(lines[:2] + ['{"pad": "' + "x" * (common.MAX_LINE_BYTES + 10) + '"}\n']
                   + lines[2:])
    path = write(tmp_path, fmt, text)
    session = load(path)
    assert [str(e).split(": ", 1)[1] for e in session.skipped] == [
        f"line longer than {common.MAX_LINE_BYTES} bytes"
    ]
    assert session.skipped[0].line == 3
    with pytest.raises(LogFormatError, match=r":3: line longer than"):
        load(path, strict=True)


# --------------------------------------------------------------------------------------------------
# Shared reading machinery (found by a hand mutation pass over adapters/_common.py)


def test_a_fatal_error_counts_the_lines_skipped_before_it_in_words() -> None:
    # `Issues.fatal` names the lines a lenient read skipped before: one is "1 line", more
    # "N lines", and the first skipped is the one named.
    from replay.adapters._common import Issues

    issues = Issues("log.jsonl", strict=False)
    issues.add(3, "expected X")
    with pytest.raises(LogFormatError) as one:
        issues.fatal(None, "found none")
    assert str(one.value) == (
        "log.jsonl: found none (1 line skipped before, the first: log.jsonl:3: expected X)"
    )
    issues.add(5, "expected Y")
    with pytest.raises(LogFormatError) as two:
        issues.fatal(None, "found none")
    assert str(two.value) == (
        "log.jsonl: found none (2 lines skipped before, the first: log.jsonl:3: expected X)"
    )


def test_a_line_of_exactly_the_limit_is_read_and_one_byte_more_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MAX_LINE_BYTES: "a single line longer than this is refused".
    import replay.adapters._common as common

    line = '{"pad": "xxxx"}'
    monkeypatch.setattr(common, "MAX_LINE_BYTES", len(line))
    path = tmp_path / "log.jsonl"
    path.write_text(f"{line}\n{line[:-1]}x}}\n", encoding="utf-8")
    issues = common.Issues(path, strict=False)
    read = list(common.iter_json_lines(path, issues))
    assert [n for n, _ in read] == [1]
    assert [str(e) for e in issues.items] == [f"{path}:2: line longer than {len(line)} bytes"]


def test_bad_utf8_names_the_byte_it_fails_at(tmp_path: Path) -> None:
    from replay.adapters._common import Issues, iter_json_lines

    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "\xff"}\n')
    issues = Issues(path, strict=False)
    assert [n for n, _ in iter_json_lines(path, issues)] == [1]
    assert [str(e) for e in issues.items] == [
        f"{path}:2: expected UTF-8 text (invalid start byte at byte 7)"
    ]


def test_only_the_file_s_leading_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    # docs/adapters.md: a *leading* BOM is dropped; one further in (files concatenated) is
    # not JSON, and that line is reported.
    from replay.adapters._common import Issues, iter_json_lines

    path = tmp_path / "log.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\n\xef\xbb\xbf{"b": 2}\n')
    issues = Issues(path, strict=False)
    assert list(iter_json_lines(path, issues)) == [(1, {"a": 1})]
    assert [e.line for e in issues.items] == [2]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (7, 7), (7.0, 7), (0, 0), (None, 0),
        (True, "expected `n` to be a number, got bool"),
        (1.5, "expected `n` to be a whole number, got 1.5"),
        (float("inf"), "expected `n` to be a whole number, got inf"),
        (-1, "expected `n` to be >= 0, got -1"),
        ("7", "expected `n` to be a number, got str"),
    ],
)
def test_a_token_count_is_a_whole_number_at_least_zero(value: Any, expected: Any) -> None:
    # `get_int`: "a non-negative integer (floats with an integral value are accepted)"; a
    # JSON `true` is no count of 1, and 1.5 tokens is no count rounded down.
    from replay.adapters._common import Bad, get_int

    if isinstance(expected, int):
        assert get_int({"n": value}, "n") == expected
    else:
        with pytest.raises(Bad) as bad:
            get_int({"n": value}, "n")
        assert str(bad.value) == expected


def test_a_required_field_that_is_missing_is_a_bad_record_naming_it() -> None:
    from replay.adapters._common import Bad, get_dict, get_list, get_str

    for get, what in ((get_str, "a string"), (get_dict, "an object"), (get_list, "a list")):
        with pytest.raises(Bad) as bad:
            get({"other": 1}, "role", required=True)
        assert str(bad.value) == f"expected `role` ({what})"
    assert (get_str({}, "role"), get_dict({}, "role"), get_list({}, "role")) == (None, {}, [])
    # A lone surrogate (a valid JSON escape, no UTF-8) is replaced, so writing it cannot fail.
    assert get_str(json.loads('{"role": "a\\ud800b"}'), "role") == "a\ufffdb"


def test_a_lone_surrogate_becomes_the_replacement_character_not_a_question_mark() -> None:
    # `clean`'s docstring: U+FFFD. `encode("utf-8", "replace")` wrote "?", a character a log's
    # text may well hold, so the loss did not show.
    from replay.adapters._common import clean, clean_json, parse_arguments

    assert clean("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    assert clean_json({"k\ud800": ["v\udc00", 1]}) == {"k\ufffd": ["v\ufffd", 1]}
    assert parse_arguments('{"path": "x\\ud800"}') == {"path": "x\ufffd"}
    assert parse_arguments("ls \ud800") == {"_raw": "ls \ufffd"}  # no JSON: kept, cleaned


def test_a_number_json_cannot_write_is_cleaned_to_null() -> None:
    # A log read by Python's parser may hold NaN or Infinity (kept in `usage.raw`, tool
    # arguments): the native log is strict JSON, so they are written as null.
    from replay.adapters._common import clean_json, dumps

    assert clean_json([float("nan"), float("inf"), float("-inf"), 1.5]) == [None, None, None, 1.5]
    assert dumps({"b": float("nan"), "a": 1}) == '{"a": 1, "b": null}'


def test_a_binary_placeholder_is_made_only_for_a_base64_payload_of_a_known_shape() -> None:
    # `binary_placeholder`: Anthropic `source.type: "base64"`, pi-ai `data` + `mimeType`,
    # OpenAI data URLs under `image_url` or `file_data` (a URL's scheme is case-blind).
    from replay.adapters._common import binary_placeholder

    linked = {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}
    assert binary_placeholder(linked) is None  # no payload in the log: nothing stands in
    assert binary_placeholder({"type": "input_file", "file_data": "data:application/pdf;"
                               "base64,QUJD"}) == "[input_file application/pdf 4 base64 chars]"
    assert binary_placeholder({"type": "input_image", "image_url": "DATA:image/png;BASE64,QQ=="}
                              ) == "[input_image image/png 4 base64 chars]"
    assert binary_placeholder({"type": "", "data": "QQ==", "mimeType": "image/gif"}) == (
        "[block image/gif 4 base64 chars]"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-03-01T10:00:00Z", datetime(2026, 3, 1, 10, tzinfo=UTC)),
        ("2026-03-01T10:00:00", datetime(2026, 3, 1, 10, tzinfo=UTC)),  # no zone: UTC
        ("2026-03-01T12:00:00+02:00", datetime(2026, 3, 1, 10, tzinfo=UTC)),
        (1772359200000, datetime(2026, 3, 1, 10, tzinfo=UTC)),  # epoch milliseconds
        ("2199-12-31T23:59:59Z", datetime(2199, 12, 31, 23, 59, 59, tzinfo=UTC)),
        ("2200-01-02T00:00:00Z", "expected `ts` between 1990 and 2200, got '2200-01-02T00:00:00Z'"),
        (1772359200, "expected `ts` between 1990 and 2200, got 1772359200"),  # seconds: 1970
        ("x" * 60, f"expected `ts` to be an ISO-8601 time, got {'x' * 40!r}"),
        (True, "expected `ts` (an ISO-8601 time or epoch milliseconds)"),
    ],
)
def test_a_time_is_iso_8601_or_epoch_milliseconds_between_1990_and_2200(
    value: Any, expected: Any
) -> None:
    from replay.adapters._common import Bad, parse_ts

    if isinstance(expected, datetime):
        assert parse_ts(value, "ts") == expected
    else:
        with pytest.raises(Bad) as bad:
            parse_ts(value, "ts")
        assert str(bad.value) == expected


def test_a_time_without_a_zone_is_utc_whatever_the_machine_s_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time

    from replay.adapters._common import parse_ts

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        assert parse_ts("2026-03-01T10:00:00") == datetime(2026, 3, 1, 10, tzinfo=UTC)
    finally:
        monkeypatch.undo()
        time.tzset()


def test_thinking_without_text_takes_the_output_less_every_visible_block() -> None:
    # `estimate_thinking`: without reasoning_tokens the size is output_tokens − the tokens of
    # the visible blocks (text, tool calls as rendered, thinking that has its text); blocks
    # with text are not estimated. A reported 0 is a size, not "unknown".
    from replay.adapters._common import estimate_thinking
    from replay.log import TextBlock, ThinkingBlock, Usage
    from replay.strategies._view import tool_call_block
    from replay.tokens import counter_for

    model = "claude-sonnet-4-5"
    said = ThinkingBlock(thinking="First I read the file, then I patch it.", signature="a")
    hidden = ThinkingBlock(thinking="", signature="b")
    call = ToolCallBlock(id="c1", name="Read", arguments={"path": "src/main.py"})
    text = TextBlock(text="I will read the file now.")
    message = AssistantMessage(ts="2026-01-02T10:00:00Z", blocks=[said, hidden, text, call])
    estimate_thinking(message, Usage(input_tokens=1, output_tokens=500), model)
    count = counter_for(model).count
    visible = count(said.thinking) + count(text.text) + count(tool_call_block(call).rendered())
    assert (hidden.estimated_tokens, hidden.estimated_from) == (
        500 - visible, "output_tokens - visible blocks"
    )
    assert said.estimated_tokens is None
    hidden.estimated_tokens = None
    estimate_thinking(message, Usage(input_tokens=1, output_tokens=500, reasoning_tokens=0), model)
    assert (hidden.estimated_tokens, hidden.estimated_from) == (
        0, "reasoning_tokens - thinking text"
    )


def test_reported_reasoning_less_the_logged_thinking_sizes_the_blocks_without_text() -> None:
    # `estimate_thinking`: reasoning_tokens is the response's whole reasoning, so a thinking
    # block whose text is logged is counted by that text, and the blocks without text share
    # only what is left of the count (here 100 − the logged text), never below zero.
    from replay.adapters._common import estimate_thinking
    from replay.log import TextBlock, ThinkingBlock, Usage
    from replay.tokens import counter_for

    model = "gpt-5"
    said = ThinkingBlock(thinking="Check the test first, then the parser.")
    hidden = [ThinkingBlock(thinking="", signature=f"s{i}") for i in range(2)]
    message = AssistantMessage(
        ts="2026-01-02T10:00:00Z", blocks=[hidden[0], said, hidden[1], TextBlock(text="ok")]
    )
    logged = counter_for(model).count(said.thinking)
    assert 0 < logged < 100
    usage = Usage(input_tokens=1, output_tokens=900, reasoning_tokens=100)
    estimate_thinking(message, usage, model)
    rest = 100 - logged
    assert [(b.estimated_tokens, b.estimated_from) for b in hidden] == [
        ((rest + 1) // 2, "reasoning_tokens - thinking text"),
        (rest // 2, "reasoning_tokens - thinking text"),
    ]
    assert said.estimated_tokens is None
    # A count smaller than the logged text leaves nothing for the others (not a negative size).
    estimate_thinking(message, Usage(input_tokens=1, output_tokens=900, reasoning_tokens=1), model)
    assert [b.estimated_tokens for b in hidden] == [0, 0]


@given(
    st.lists(st.one_of(st.just(""), st.text(min_size=1, max_size=40)), min_size=1, max_size=6),
    st.integers(0, 5000),
)
def test_reasoning_estimates_never_go_negative_nor_past_the_larger_count(texts, reasoning) -> None:
    # With reasoning_tokens R reported and logged thinking text of T tokens, the blocks without
    # text add up to max(0, R − T), each within one token of the others: the response's
    # reasoning (T + their sizes) is max(R, T), so never more than R + T nor less than R.
    from replay.adapters._common import estimate_thinking
    from replay.log import ThinkingBlock, Usage
    from replay.tokens import counter_for

    model = "gpt-5"
    blocks = [ThinkingBlock(thinking=t, signature=f"s{i}") for i, t in enumerate(texts)]
    message = AssistantMessage(ts="2026-01-02T10:00:00Z", blocks=blocks)
    usage = Usage(input_tokens=1, output_tokens=reasoning, reasoning_tokens=reasoning)
    estimate_thinking(message, usage, model)
    logged = sum(counter_for(model).count(t) for t in texts if t)
    empty = [b.estimated_tokens for b in blocks if not b.thinking]
    assert all(b.estimated_tokens is None for b in blocks if b.thinking)
    if not empty:
        return
    assert all(size is not None and size >= 0 for size in empty)
    assert max(empty) - min(empty) <= 1
    assert sum(empty) == max(0, reasoning - logged)
    assert logged + sum(empty) == max(reasoning, logged) <= reasoning + logged


def test_a_native_header_outweighs_records_other_formats_share(tmp_path: Path) -> None:
    # A replay-log `compaction` record is also a pi entry type: a native log whose first
    # lines are mostly compactions is still native, its header says so.
    from replay.adapters.detect import detect_file

    header = {"type": "session", "format": "replay-log", "version": 1,
              "ts": "2026-03-01T10:00:00Z", "id": "e1"}
    compaction = {"type": "compaction", "ts": "2026-03-01T10:00:01Z", "summary": "s",
                  "replaces": []}
    path = tmp_path / "log.jsonl"
    path.write_text(jsonl([header] + [compaction] * 8), encoding="utf-8")
    assert detect_file(path) == "replay-log"


def test_cost_problem_refuses_a_bool_and_a_negative_cost() -> None:
    from replay.adapters._common import cost_problem, pi_usage

    assert cost_problem(True, "cost") == "expected `cost` to be a number, got bool"
    assert cost_problem("-0.5", "cost") == "expected `cost` to be a number >= 0, got '-0.5'"
    assert cost_problem("0.25", "cost") is None and cost_problem(0, "cost") is None
    assert pi_usage({"input": 1, "cost": {"total": True}}).cost_usd is None
    assert pi_usage({"input": 1, "cost": {"total": 0.25}}).cost_usd == "0.25"


def test_threads_are_merged_by_time_ties_in_thread_order_and_renumbered() -> None:
    # `SessionBuilder.merged`: threads merged by time, each thread's own order kept (also where
    # its times go backwards), a tie going to the thread met first; ids `e2…`, a compaction's
    # `replaces` renamed with them. The header takes the earliest time.
    from datetime import timedelta

    from replay.adapters._common import Issues, SessionBuilder, SessionHeader, ThreadStart
    from replay.log import Compaction

    t0 = datetime(2026, 3, 1, 10, tzinfo=UTC)

    def at(s: int) -> datetime:
        return t0 + timedelta(seconds=s)

    builder = SessionBuilder("x.jsonl", Issues("x.jsonl", strict=True))
    first = builder.add(UserMessage(ts=at(5), text="main 1"))
    builder.add(RequestMarker(ts=at(6), request_id="r1"))
    builder.add(ThreadStart(ts=at(6), thread="sub", thread_id="sub"))
    builder.add(UserMessage(ts=at(6), thread="sub", text="sub 1"))
    builder.add(UserMessage(ts=at(4), thread="sub", text="sub 2"))  # goes backwards
    builder.add(RequestMarker(ts=at(7), thread="sub", request_id="r2"))
    builder.add(Compaction(ts=at(8), summary="s", replaces=[first.id]))
    session = builder.session(SessionHeader(ts=at(9)))
    shown = [getattr(e, "text", None) or getattr(e, "request_id", None) or e.type
             for e in session.events]
    assert shown == ["main 1", "r1", "thread", "sub 1", "sub 2", "r2", "compaction"]
    assert [e.id for e in session.events] == [f"e{n}" for n in range(2, 9)]
    assert session.events[-1].replaces == ["e2"]
    assert session.header.ts == at(5) and session.header.id == "e1"


def test_a_folder_of_several_formats_names_three_files_of_each_then_counts(
    tmp_path: Path,
) -> None:
    for name in "abcd":
        write(tmp_path, "claude-code", VALID["claude-code"](), name=name)
    write(tmp_path, "codex", VALID["codex"](), name="z")
    with pytest.raises(LogFormatError) as err:
        detect(tmp_path)
    assert "(claude-code: a.jsonl, b.jsonl, c.jsonl, … (1 more); codex: z.jsonl)" in str(
        err.value
    )


def test_only_the_first_50_readable_lines_vote(tmp_path: Path) -> None:
    # docs/adapters.md: "up to 50 readable lines vote"; what follows does not change the verdict.
    pi_entry = {"type": "model_change", "id": "m", "timestamp": "2026-03-01T10:00:00Z"}
    codex = {"timestamp": "2026-03-01T10:00:00Z", "type": "event_msg", "payload": {}}
    # 5 pi lines (5 points each) then 45 Codex lines (10 each) vote; 200 pi lines after do not
    path = write(tmp_path, "codex", jsonl([pi_entry] * 5 + [codex] * 45 + [pi_entry] * 200))
    assert detect(path) == "codex"


def test_logs_of_one_session_id_without_requests_are_not_taken_for_copies(tmp_path: Path) -> None:
    # `_same_session_key`: a session is another's copy by its id *and* its requests' ids; with
    # no request to compare, two logs of one id are both read.
    from replay.adapters import read_each_once

    paths = []
    for n in (1, 2):
        header = {"type": "session", "format": "replay-log", "version": 1,
                  "ts": "2026-03-01T10:00:00Z", "id": "e1", "session_id": "same"}
        user = {"type": "user", "ts": "2026-03-01T10:00:01Z", "id": "e2", "text": f"prompt {n}"}
        paths.append(write(tmp_path, "replay-log", jsonl([header, user]), name=f"log{n}"))
    logs = read_each_once(paths)
    assert [p for p, _ in logs.sessions] == paths and logs.left_out == []
    # … and two of one id whose requests differ are two sessions (a resumed id, say)
    for n, path in enumerate(paths, start=1):
        request = {"type": "request", "ts": "2026-03-01T10:00:02Z", "id": "e3",
                   "request_id": f"r{n}"}
        path.write_text(path.read_text(encoding="utf-8") + jsonl([request]), encoding="utf-8")
    logs = read_each_once(paths)
    assert [p for p, _ in logs.sessions] == paths and logs.left_out == []


def test_a_fork_is_matched_to_its_parent_by_path_or_by_a_file_name_only_one_file_has() -> None:
    # `forks_with_parent`: pi names a session file by its start and id, so a parent named
    # like the fork itself is that session (a moved copy), not its parent; a parent's name
    # shared by two files given says nothing.
    from replay.adapters._once import forks_with_parent

    files = {"/logs/a/1_p.jsonl", "/logs/b/1_p.jsonl", "/logs/2_f.jsonl", "/logs/3_g.jsonl"}
    assert forks_with_parent([("/logs/2_f.jsonl", "/home/x/1_p.jsonl")], files) == set()
    assert forks_with_parent([("/logs/2_f.jsonl", "/logs/a/1_p.jsonl")], files) == {
        "/logs/2_f.jsonl"
    }
    assert forks_with_parent([("/logs/2_f.jsonl", "C:\\old\\3_g.jsonl")], files) == {
        "/logs/2_f.jsonl"
    }
    assert forks_with_parent([("/logs/3_g.jsonl", "/home/x/3_g.jsonl")], files) == set()
    assert forks_with_parent([("/logs/3_g.jsonl", "")], files) == set()


def test_the_parent_file_of_a_fork_is_its_parent_session_else_v1_s_branched_from() -> None:
    from types import SimpleNamespace

    from replay.adapters._once import parent_file

    assert parent_file(SimpleNamespace(branchedFrom="/x/1_p.jsonl")) == "/x/1_p.jsonl"
    assert parent_file(SimpleNamespace(parentSession="/a.jsonl", branchedFrom="/b.jsonl")) == (
        "/a.jsonl"
    )
    assert parent_file(SimpleNamespace(parentSession="", branchedFrom=None)) == ""


def _at(seconds: int) -> datetime:
    return datetime(2026, 3, 1, 10, tzinfo=UTC) + timedelta(seconds=seconds)


def test_an_abandoned_branch_takes_its_parent_s_hidden_prefix_unless_it_has_its_own_system(
) -> None:
    # `estimate_hidden_prefix` / `_inherits_prefix`: a branch of the main thread re-sends its
    # parent's history, so it has the parent's hidden prefix, measured where the parent's
    # was; a thread with its own system prompt is measured on its own first request. Only the
    # header's own estimate labels the header.
    from replay.adapters._common import (
        Issues,
        SessionBuilder,
        SessionHeader,
        ThreadStart,
        Usage,
        estimate_hidden_prefix,
    )

    def session(main_usage: Usage | None, branch: bool) -> Any:
        builder = SessionBuilder("x.jsonl", Issues("x.jsonl", strict=True))
        builder.add(UserMessage(ts=_at(0), text="Fix the failing test in parser.py."))
        builder.add(RequestMarker(ts=_at(1), request_id="r1", usage=main_usage))
        for name, system in (("b1", None), ("b2", "You are a code reviewer.")):
            start = ThreadStart(ts=_at(2), thread=name, thread_id=name, system=system)
            if branch:
                start.branch_of = "main"
            builder.add(start)
            builder.add(UserMessage(ts=_at(3), thread=name, text="Fix the failing test."))
            builder.add(RequestMarker(ts=_at(4), thread=name, request_id=f"{name}-r",
                                      usage=Usage(input_tokens=7000, output_tokens=9)))
        done = builder.session(SessionHeader(ts=_at(0)))
        estimate_hidden_prefix(done)
        return done, {e.thread_id: e for e in done.events if isinstance(e, ThreadStart)}

    done, starts = session(Usage(input_tokens=5000, output_tokens=9), branch=True)
    header = done.header
    assert 4900 < header.hidden_prefix_tokens < 5000 and header.hidden_prefix_from == "r1"
    assert (starts["b1"].hidden_prefix_tokens, starts["b1"].hidden_prefix_from) == (
        header.hidden_prefix_tokens, "r1"
    )
    assert starts["b2"].hidden_prefix_from == "b2-r"
    assert 6900 < starts["b2"].hidden_prefix_tokens < 7000
    assert header.estimated == ["hidden_prefix"]
    done, starts = session(None, branch=False)  # the main thread has no usage to measure on
    assert done.header.hidden_prefix_tokens is None and done.header.estimated == []
    assert starts["b1"].hidden_prefix_from == "b1-r"


def test_a_residual_renders_a_thread_s_own_system_and_not_what_a_compaction_replaced() -> None:
    # `prompt_residuals`: the simulated prompt is the logged context as the agent sent it: a
    # compaction's summary instead of the events it replaced, and a thread's own system
    # prompt where it has one.
    from replay.adapters._common import (
        Issues,
        SessionBuilder,
        SessionHeader,
        ThreadStart,
        Usage,
        prompt_residuals,
    )
    from replay.log import Compaction

    def simulated(replaced_text: str, system: str) -> list[int]:
        builder = SessionBuilder("x.jsonl", Issues("x.jsonl", strict=True))
        old = builder.add(UserMessage(ts=_at(0), text=replaced_text))
        builder.add(RequestMarker(ts=_at(1), request_id="r1",
                                  usage=Usage(input_tokens=9000, output_tokens=5)))
        builder.add(Compaction(ts=_at(2), summary="The user asked for a fix.",
                               replaces=[old.id]))
        builder.add(UserMessage(ts=_at(3), text="Now run the tests."))
        builder.add(RequestMarker(ts=_at(4), request_id="r2",
                                  usage=Usage(input_tokens=9000, output_tokens=5)))
        builder.add(ThreadStart(ts=_at(5), thread="sub", thread_id="sub", system=system))
        builder.add(UserMessage(ts=_at(6), thread="sub", text="Review parser.py."))
        builder.add(RequestMarker(ts=_at(7), thread="sub", request_id="r3",
                                  usage=Usage(input_tokens=9000, output_tokens=5)))
        session = builder.session(SessionHeader(ts=_at(0), system="You are an agent."))
        return [r.simulated for r in prompt_residuals(session)]

    short = simulated("Fix it.", "You review code.")
    long_replaced = simulated("Fix it. " * 200, "You review code.")
    long_system = simulated("Fix it.", "You review code. " * 200)
    assert long_replaced[0] > short[0] + 500  # r1 sent the text …
    assert long_replaced[1:] == short[1:]  # … r2 its summary instead
    assert long_system[2] > short[2] + 500 and long_system[:2] == short[:2]


def test_the_hidden_prefix_is_measured_with_results_cleared_by_then_shown_cleared() -> None:
    # `estimate_hidden_prefix` renders the history "the tool results the harness had cleared by
    # then shown cleared": one cleared at the request's own time is cleared.
    from replay.adapters._common import (
        Issues,
        SessionBuilder,
        SessionHeader,
        Usage,
        estimate_hidden_prefix,
    )

    def hidden(cleared_at: datetime) -> int:
        builder = SessionBuilder("x.jsonl", Issues("x.jsonl", strict=True))
        builder.add(UserMessage(ts=_at(0), text="Read the file."))
        builder.add(RequestMarker(ts=_at(1), request_id="r1"))  # no usage: not measured
        builder.add(AssistantMessage(ts=_at(2), blocks=[
            ToolCallBlock(id="c1", name="Read", arguments={"path": "a.py"})]))
        result = builder.add(ToolResult(ts=_at(3), call_id="c1", tool_name="Read",
                                        output="def f(x):\n    return x\n" * 200))
        result.cleared_at = cleared_at
        builder.add(RequestMarker(ts=_at(4), request_id="r2",
                                  usage=Usage(input_tokens=9000, output_tokens=5)))
        session = builder.session(SessionHeader(ts=_at(0)))
        estimate_hidden_prefix(session)
        assert session.header.hidden_prefix_from == "r2"
        return session.header.hidden_prefix_tokens

    assert hidden(_at(4)) > hidden(_at(5)) + 1000


def test_most_common_takes_the_value_met_most_the_first_met_on_a_tie() -> None:
    from replay.adapters._common import most_common

    assert most_common(["gpt-5", "claude-opus-4-1", None, "claude-opus-4-1", ""], "d") == (
        "claude-opus-4-1"
    )
    assert most_common(["b", "a", "a", "b"], "d") == "b"
    assert most_common([None, ""], "default") == "default"


def test_a_folder_of_unrelated_sessions_lists_five_then_counts_the_rest() -> None:
    from replay.adapters._common import several_sessions

    groups = [[Path(f"/p/s{n}.jsonl")] for n in range(7)]
    groups[0].append(Path("/p/agent-a.jsonl"))
    err = several_sessions(Path("/p"), groups, "one session", "subagent file", "one transcript")
    assert str(err) == (
        "/p: expected one session; this directory holds 7 unrelated sessions: s0.jsonl (+1 "
        "subagent file), s1.jsonl, s2.jsonl, s3.jsonl, s4.jsonl, … (2 more). Replay each one "
        "with `replay batch /p`, or give one transcript"
    )


def test_a_chain_with_one_record_that_is_no_artifact_is_a_branch() -> None:
    # `linearise`: a chain joins the active path only when every node of it is attached (a
    # streamed block, a parallel result); a real message in it starts a branch, the attached
    # records below it going with it.
    from replay.adapters._common import Branch, linearise

    parent = {"a": None, "b": "a", "c": "b", "x": "a", "y": "x"}
    path, branches = linearise(["a", "b", "c", "y", "x"], parent, lambda n, p: n == "y", "c")
    assert path == ["a", "b", "c"]
    assert branches == [Branch(fork="a", nodes=["y", "x"])]
    path, branches = linearise(["a", "b", "c", "y", "x"], parent, lambda n, p: n in "xy", "c")
    assert (path, branches) == (["a", "b", "c", "y", "x"], [])
    # an attached record at the top stays on the path, and the branch forks from it
    path, branches = linearise(["a", "b", "c", "y", "x"], parent, lambda n, p: n == "x", "c")
    assert (path, branches) == (["a", "b", "c", "x"], [Branch(fork="x", nodes=["y"])])


def test_the_session_folder_of_a_subagent_file_is_its_transcript_s(tmp_path: Path) -> None:
    from replay.adapters._groups import session_folder

    agent = tmp_path / "proj" / "s1" / "subagents" / "agent-a.jsonl"
    agent.parent.mkdir(parents=True)
    assert session_folder("claude-code", agent) == str(tmp_path / "proj" / "s1")
    (tmp_path / "proj" / "s1.jsonl").write_text("{}\n", encoding="utf-8")
    assert session_folder("claude-code", agent) == str(tmp_path / "proj")
    assert session_folder("opencode", agent) == str(agent.parent)  # Claude Code's layout only


def test_a_log_opening_with_session_titles_is_claude_code(tmp_path: Path) -> None:
    """A 1.0.x transcript can open with many `summary` records (titles, of other sessions
    too) holding only `summary` and `leafUuid`: they vote Claude Code (found by a mutation
    pass: a head of them matched no format)."""
    from replay.adapters.detect import _SAMPLE_LINES

    titles = [json.dumps({"type": "summary", "summary": f"Title {n}", "leafUuid": f"u-{n}"})
              for n in range(_SAMPLE_LINES)]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join([*titles, VALID["claude-code"]()]), encoding="utf-8")
    assert detect(path) == "claude-code"


def test_lines_of_codex_types_without_a_payload_are_no_codex_rollout(tmp_path: Path) -> None:
    """A Codex line is `{timestamp, type, payload}`: another tool's JSONL that uses such a type
    name without a `payload` object matches no format (found by a mutation pass: it was read
    as a Codex rollout)."""
    lines = [{"timestamp": "2026-01-01T00:00:00Z", "type": "event_msg", "payload": "started"},
             {"timestamp": "2026-01-01T00:00:01Z", "type": "response_item", "text": "hi"}]
    path = tmp_path / "other.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with pytest.raises(LogFormatError, match="the content matches none of them"):
        detect(path)


def test_a_native_header_without_its_format_outweighs_compactions_pi_also_counts(
    tmp_path: Path,
) -> None:
    """A replay-log's `compaction` events are also a pi entry type: the header that lost its
    `format` still tells the log native (found by a mutation pass: without its vote, two
    compactions made the log pi's)."""
    ts = "2026-01-01T00:00:0{}Z"
    lines = [
        {"type": "session", "version": 1, "ts": ts.format(0), "provider": "anthropic",
         "model": "claude-sonnet-4-5"},
        {"type": "user", "ts": ts.format(1), "text": "go"},
        {"type": "compaction", "ts": ts.format(2), "summary": "s1", "replaces": ["e2"]},
        {"type": "compaction", "ts": ts.format(3), "summary": "s2", "replaces": ["e3"]},
    ]
    path = tmp_path / "nofmt.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert detect(path) == "replay-log"


def test_a_one_line_export_cut_short_is_still_an_opencode_export(tmp_path: Path) -> None:
    """An export written on one line and cut (a capture that stopped) is no JSON object, but
    its head names `info` and `messages`: opencode's, for its reader to say where it was cut
    (found by a mutation pass: it matched no format)."""
    text = json.dumps(opencode_doc())
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) * 3 // 4], encoding="utf-8")
    assert detect(path) == "opencode"
