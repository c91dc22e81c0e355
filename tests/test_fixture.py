"""The seed fixture (`logs/fixtures/tasklist`), its recorder and the shipped `logs/run42.jsonl`."""

from __future__ import annotations

import difflib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from replay._errors import ReplayError
from replay.fixture import _recorder, record_fixture
from replay.log import AssistantMessage, RequestMarker, ToolCallBlock, ToolResult, read_log

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "logs" / "fixtures" / "tasklist"
RUN42 = ROOT / "logs" / "run42.jsonl"
BUGGY = "this.store.markComplete(request.payload.id)"
FIXED = "this.store.markComplete(Number(request.payload.id))"
ROUND_TRIP_TEST = "complete round-trips through JSON"

needs_node = pytest.mark.skipif(
    shutil.which("node") is None, reason="node is not on PATH (the fixture's tests need Node 20)"
)


def _calls(session):
    return [
        block
        for event in session.events
        if isinstance(event, AssistantMessage)
        for block in event.blocks
        if isinstance(block, ToolCallBlock)
    ]


def _results(session):
    return [e for e in session.events if isinstance(e, ToolResult)]


def _test_runs(session):
    return [json.loads(r.output) for r in _results(session) if r.tool_name == "run_tests"]


def test_bug_sits_after_char_500_of_api_js():
    source = (FIXTURE / "src" / "api.js").read_text(encoding="utf-8")
    assert source.count(BUGGY) == 1
    assert source.index(BUGGY) > 500
    assert FIXED not in source


def test_fixture_is_plain_javascript_of_realistic_size():
    sizes = {p.relative_to(FIXTURE).as_posix(): p.stat().st_size for p in FIXTURE.rglob("*.js")}
    assert set(sizes) == {
        "src/api.js",
        "src/storage.js",
        "src/serializer.js",
        "test/tasklist.test.js",
    }
    assert 1500 <= sizes["src/api.js"] <= 2500
    assert 1000 <= sizes["src/storage.js"] <= 1500
    assert json.loads((FIXTURE / "package.json").read_text())["type"] == "module"


@needs_node
def test_pristine_fixture_fails_exactly_the_round_trip_test(tmp_path):
    copy = tmp_path / "tasklist"
    shutil.copytree(FIXTURE, copy)
    done = subprocess.run(
        ["node", "--test", "test/"], cwd=copy, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    failed = re.findall(r"^not ok \d+ - (.+)$", done.stdout, flags=re.MULTILINE)
    passed = re.findall(r"^ok \d+ - (.+)$", done.stdout, flags=re.MULTILINE)
    assert failed == [ROUND_TRIP_TEST]
    assert len(passed) >= 4


def test_recorder_needs_node(tmp_path, monkeypatch):
    monkeypatch.setattr(_recorder.shutil, "which", lambda name: None)
    with pytest.raises(ReplayError, match="node is needed to record the fixture"):
        record_fixture(tmp_path / "run.jsonl")
    assert not (tmp_path / "run.jsonl").exists()


def test_the_log_is_never_written_into_the_fixture_it_reads(tmp_path, monkeypatch):
    """`-o fx/src/api.js` used to replace the fixture's source with the log."""
    monkeypatch.setattr(_recorder.shutil, "which", lambda name: "/usr/bin/node")
    fixture = tmp_path / "fx"
    shutil.copytree(_recorder.default_fixture(), fixture)
    before = (fixture / "src" / "api.js").read_bytes()
    with pytest.raises(ReplayError, match="is in the fixture folder being read"):
        record_fixture(fixture / "src" / "api.js", fixture)
    assert (fixture / "src" / "api.js").read_bytes() == before


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH (the fixture's tests need Node 20)")
    path = tmp_path_factory.mktemp("rec") / "run.jsonl"
    returned = record_fixture(path)
    return returned, read_log(path, strict=True)


def test_recorded_log_is_valid_and_well_formed(recorded):
    returned, session = recorded
    assert session.header.agent == "replay-recorder"
    assert (session.header.provider, session.header.model) == ("google", "gemini-2.5-flash")
    assert [t.name for t in session.header.tools] == [
        "read_file",
        "write_file",
        "list_files",
        "run_tests",
    ]
    assert len(session.events) == len(returned.events)
    ids = [session.header.id] + [e.id for e in session.events]
    assert None not in ids and len(set(ids)) == len(ids)
    requests = [e for e in session.events if isinstance(e, RequestMarker)]
    assert 13 <= len(requests) <= 20
    assert all(r.usage is None and r.model == "gemini-2.5-flash" for r in requests)
    # Every request is followed by the assistant message answering it.
    for i, event in enumerate(session.events):
        if isinstance(event, RequestMarker):
            answer = session.events[i + 1]
            assert isinstance(answer, AssistantMessage)
            assert answer.request_id == event.request_id
    last = session.events[-1]
    assert isinstance(last, AssistantMessage)
    assert all(not isinstance(b, ToolCallBlock) for b in last.blocks)


def test_recorded_tests_fail_first_and_pass_last(recorded):
    _, session = recorded
    runs = _test_runs(session)
    assert len(runs) >= 2
    assert runs[0]["exit_code"] != 0
    assert ROUND_TRIP_TEST in runs[0]["stdout"]
    assert runs[-1]["exit_code"] == 0


def test_every_tool_call_has_exactly_one_result(recorded):
    _, session = recorded
    calls = _calls(session)
    results = _results(session)
    assert [c.id for c in calls] == [r.call_id for r in results]
    assert len({c.id for c in calls}) == len(calls)
    assert all(c.name == r.tool_name for c, r in zip(calls, results, strict=True))
    assert not any(r.is_error for r in results)


def test_recorded_timestamps_are_ordered(recorded):
    _, session = recorded
    stamps = [session.header.ts] + [e.ts for e in session.events]
    assert stamps == sorted(stamps)


def test_shipped_run42_reads_strictly_and_fixes_the_bug():
    session = read_log(RUN42, strict=True)
    assert not session.skipped
    assert 13 <= len(session.requests()) <= 20
    calls = _calls(session)
    results = {r.call_id: r for r in _results(session)}
    assert sorted(results) == sorted(c.id for c in calls)

    writes = [c for c in calls if c.name == "write_file"]
    assert len(writes) == 1
    write = writes[0]
    assert write.arguments["path"] == "src/api.js"
    content = write.arguments["content"]
    assert FIXED in content and BUGGY not in content

    # The write edits what the agent last read, and the line it changes was after char 500.
    position = calls.index(write)
    previous = calls[position - 1]
    assert previous.name == "read_file" and previous.arguments == {"path": "src/api.js"}
    before = results[previous.id].output
    assert before == (FIXTURE / "src" / "api.js").read_text(encoding="utf-8")
    assert before.index(BUGGY) > 500
    diff = list(difflib.ndiff(before.splitlines(), content.splitlines()))
    removed = [line[2:].strip() for line in diff if line.startswith("- ")]
    added = [line[2:].strip() for line in diff if line.startswith("+ ")]
    assert removed == [f"const completed = {BUGGY};"]
    assert f"const completed = {FIXED};" in added
    assert all(a.startswith("//") for a in added if FIXED not in a)

    # Enough tool output before the fix that a compaction at 12,000 chars fires mid-run.
    chars_before_write = sum(len(results[c.id].output) for c in calls[:position])
    assert chars_before_write > 12_000

    runs = _test_runs(session)
    assert runs[0]["exit_code"] != 0 and runs[-1]["exit_code"] == 0


def test_the_default_fixture_is_found_in_a_checkout_and_in_an_installed_package(
    tmp_path, monkeypatch
):
    assert (_recorder.default_fixture() / "src" / "api.js").is_file()
    # an installed package has no checkout around it, only its own copy (pyproject's
    # force-include): the recorder looks there first
    package = tmp_path / "site-packages" / "replay"
    shutil.copytree(_recorder.default_fixture(), package / "_fixture_data" / "tasklist")
    monkeypatch.setattr(_recorder, "_PACKAGE", package)
    assert _recorder.default_fixture() == package / "_fixture_data" / "tasklist"
    monkeypatch.setattr(_recorder, "_PACKAGE", tmp_path / "elsewhere" / "replay")
    with pytest.raises(ReplayError, match="pass --fixture DIR"):
        _recorder.default_fixture()
