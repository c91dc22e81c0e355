"""Every log reader, fed mangled versions of valid logs, either parses or fails with a clear
`LogFormatError` / `ReplayError` — never another exception (no traceback for a bad file).

Mutations: cut at any byte, splice two pieces, flip a byte, delete a field, retype a field. And
every token count of every usage record, retyped one at a time, never loses a request.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_adapters_claude_code import _sidechain_log
from test_adapters_common import SUFFIX, VALID, claude_lines, codex_lines, jsonl, pi_lines

from replay import load
from replay._errors import ReplayError
from replay.adapters import reader_for
from replay.log import Session, dumps_log, read_log, write_log


def _native() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "codex.jsonl"
        src.write_text(VALID["codex"](), encoding="utf-8")
        out = Path(tmp) / "native.jsonl"
        write_log(load(src), out)
        return out.read_text(encoding="utf-8")


def _rich_claude() -> str:
    lines = claude_lines()
    lines += [
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "cb",
            "parentUuid": None,
            "logicalParentUuid": "a3",
            "sessionId": "s-1",
            "timestamp": "2026-01-02T10:01:00Z",
            "compactMetadata": {
                "trigger": "auto",
                "preTokens": 9,
                "preservedSegment": {"headUuid": "u2", "tailUuid": "a3"},
            },
        },
        {
            "type": "user",
            "uuid": "sum",
            "parentUuid": "cb",
            "sessionId": "s-1",
            "timestamp": "2026-01-02T10:01:01Z",
            "isCompactSummary": True,
            "message": {"role": "user", "content": "Summary."},
        },
        {
            "type": "attachment",
            "uuid": "at",
            "parentUuid": "sum",
            "sessionId": "s-1",
            "timestamp": "2026-01-02T10:01:02Z",
            "attachment": {"type": "queued_command", "prompt": "more", "commandMode": "prompt"},
        },
    ]
    side = _sidechain_log()
    for line in side:
        line["timestamp"] = line["timestamp"].replace("10:00:", "10:02:")
        line["uuid"] = "x" + line["uuid"]
        if line["parentUuid"]:
            line["parentUuid"] = "x" + line["parentUuid"]
    side[0]["parentUuid"] = "at"
    return jsonl(lines + side)


def _rich_codex() -> str:
    lines = codex_lines()
    lines.append(
        {
            "timestamp": "2026-01-02T10:00:03.000Z",
            "type": "compacted",
            "payload": {
                "message": "",
                "replacement_history": [
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "List the files."}],
                    }
                ],
            },
        }
    )
    lines.append(
        {
            "timestamp": "2026-01-02T10:00:04.000Z",
            "type": "response_item",
            "payload": {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "call_id": "c9",
                "input": "*** x",
            },
        }
    )
    lines.append(
        {
            "timestamp": "2026-01-02T10:00:04.100Z",
            "type": "response_item",
            "payload": {
                "type": "custom_tool_call_output",
                "call_id": "c9",
                "output": {"content": "ok"},
            },
        }
    )
    return jsonl(lines)


def _rich_pi() -> str:
    lines = pi_lines()
    lines.append(
        {
            "type": "compaction",
            "id": "00000006",
            "parentId": "00000005",
            "timestamp": "2026-01-02T10:00:05.000Z",
            "summary": "S.",
            "firstKeptEntryId": "00000003",
            "tokensBefore": 9,
        }
    )
    lines.append(
        {
            "type": "message",
            "id": "00000007",
            "parentId": "00000004",
            "timestamp": "2026-01-02T10:00:06.000Z",
            "message": {"role": "user", "content": "branch"},
        }
    )
    lines.append(
        {
            "type": "message",
            "id": "00000008",
            "parentId": "00000007",
            "timestamp": "2026-01-02T10:00:07.000Z",
            "message": {
                "role": "assistant",
                "content": [],
                "model": "claude-sonnet-4-5",
                "provider": "anthropic",
                "stopReason": "stop",
                "usage": {"input": 1, "output": 1, "cacheRead": 5, "cacheWrite": 0},
            },
        }
    )
    lines.append(
        {
            "type": "branch_summary",
            "id": "00000009",
            "parentId": "00000006",
            "timestamp": "2026-01-02T10:00:08.000Z",
            "fromId": "00000008",
            "summary": "B.",
        }
    )
    return jsonl(lines)


SOURCES = {
    **{k: v() for k, v in VALID.items()},
    "replay-log": _native(),
    "claude-code/rich": _rich_claude(),
    "codex/rich": _rich_codex(),
    "pi/rich": _rich_pi(),
}
FORMATS = sorted(SOURCES)

OTHER_VALUES = [
    None,
    0,
    -1,
    1.5,
    10**30,
    True,
    "",
    "REDACTED",
    "x" * 3,
    [],
    [1],
    {},
    {"a": 1},
    "2026-13-45T99:99:99Z",
    float("1e308"),
]


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out: list[tuple] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((*prefix, k))
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append((*prefix, i))
            out += _paths(v, (*prefix, i))
    return out


def _edit(doc: Any, path: tuple, delete: bool, value: Any) -> None:
    target = doc
    for key in path[:-1]:
        target = target[key]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value


@st.composite
def mangled(draw: st.DrawFn, fmt: str) -> bytes:
    data = SOURCES[fmt].encode("utf-8")
    kind = draw(st.sampled_from(["cut", "splice", "flip", "delete", "retype"]))
    if kind == "cut":
        return data[: draw(st.integers(0, len(data)))]
    if kind == "splice":
        i = draw(st.integers(0, len(data)))
        j = draw(st.integers(0, len(data)))
        return data[:i] + data[j:]
    if kind == "flip":
        i = draw(st.integers(0, len(data) - 1))
        x = draw(st.integers(1, 255))
        return data[:i] + bytes([data[i] ^ x]) + data[i + 1 :]
    delete = kind == "delete"
    value = None if delete else draw(st.sampled_from(OTHER_VALUES))
    if fmt == "opencode":
        doc = json.loads(data)
        paths = _paths(doc)
        _edit(doc, draw(st.sampled_from(paths)), delete, value)
        return json.dumps(doc, indent=2).encode()
    lines = data.decode().splitlines()
    n = draw(st.integers(0, len(lines) - 1))
    obj = json.loads(lines[n])
    paths = _paths(obj)
    if paths:
        _edit(obj, draw(st.sampled_from(paths)), delete, value)
    lines[n] = json.dumps(obj)
    return ("\n".join(lines) + "\n").encode()


def _read(source: str, data: bytes) -> None:
    fmt = source.split("/")[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"log{SUFFIX.get(fmt, '.jsonl')}"
        path.write_bytes(data)
        for strict in (False, True):
            for reader in (reader_for(fmt), load):
                try:
                    session = reader(path, strict=strict)
                except ReplayError:
                    continue
                assert isinstance(session, Session)
                for err in session.skipped:
                    assert str(path) in str(err)
                # Whatever was read can be written and read back.
                out = Path(tmp) / "out.jsonl"
                write_log(session, out)
                again = read_log(out, strict=True)
                assert dumps_log(again.header, again.events) == dumps_log(
                    session.header, session.events
                )


# One test per source, named for it: `-k codex` fuzzes the Codex reader alone.
@pytest.mark.parametrize("source", FORMATS)
@settings(max_examples=60)
@given(data=st.data())
def test_every_reader_parses_or_fails_cleanly(source: str, data: st.DataObject) -> None:
    _read(source, data.draw(mangled(source)))


@settings(max_examples=40)
@given(st.sampled_from(FORMATS), st.sampled_from(FORMATS))
def test_every_reader_on_every_other_format(reader_source: str, data_source: str) -> None:
    reader_fmt, data_fmt = reader_source.split("/")[0], data_source.split("/")[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"log{SUFFIX.get(data_fmt, '.jsonl')}"
        path.write_text(SOURCES[data_source], encoding="utf-8")
        try:
            session = reader_for(reader_fmt)(path)
        except ReplayError:
            return  # the clear error
    if reader_fmt == data_fmt:
        assert session.requests()
    else:  # another format's lines are never read as requests: skipped, and counted
        assert not session.requests(), f"{reader_fmt} read requests from a {data_fmt} log"
        assert session.skipped, f"{reader_fmt} read a {data_fmt} log without a skipped line"


def test_rich_sources_are_valid() -> None:
    for source in ("claude-code/rich", "codex/rich", "pi/rich"):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "log.jsonl"
            path.write_text(SOURCES[source], encoding="utf-8")
            session = load(path, strict=True)
            assert session.requests()


_USAGE_KEYS = {"usage", "last_token_usage", "tokens", "cache"}


def _usage_counts(doc: Any) -> list[tuple]:
    """Paths to the token counts of every usage record (Claude `usage`, Codex
    `last_token_usage`, pi `usage`, opencode `tokens` and its `cache`)."""
    return [
        path
        for path in _paths(doc)
        if len(path) > 1 and path[-2] in _USAGE_KEYS and isinstance(_at(doc, path), int)
    ]


def _at(doc: Any, path: tuple) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_a_garbled_usage_count_never_loses_a_request(fmt: str, tmp_path: Path) -> None:
    # A billed response whose usage is damaged is still a request (kept without usage, or its
    # usage derived), reported: skipping its line dropped the request and its cost.
    text = SOURCES[fmt]
    lines = [json.loads(text)] if fmt == "opencode" else [json.loads(t) for t in text.splitlines()]
    path = tmp_path / f"log{SUFFIX[fmt]}"
    path.write_text(text, encoding="utf-8")
    expected = len(load(path, strict=True).requests())
    garbled = 0
    for n, line in enumerate(lines):
        for count in _usage_counts(line):
            doc = json.loads(json.dumps(lines))
            _edit(doc[n], count, delete=False, value="1")
            body = json.dumps(doc[0], indent=2) if fmt == "opencode" else jsonl(doc)
            path.write_text(body, encoding="utf-8")
            session = load(path)
            assert len(session.requests()) == expected, (n, count)
            garbled += bool(session.skipped)  # reported (totals no reader uses need not be)
    assert garbled >= 4
