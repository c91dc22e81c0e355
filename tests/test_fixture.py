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
    assert len({r.request_id for r in requests}) == len(requests)
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
    shutil.copytree(_recorder.default_fixture(), package.parent / "logs" / "fixtures" / "tasklist")
    assert _recorder.default_fixture() == package / "_fixture_data" / "tasklist"  # still first
    monkeypatch.setattr(_recorder, "_PACKAGE", tmp_path / "elsewhere" / "replay")
    with pytest.raises(ReplayError, match="pass --fixture DIR"):
        _recorder.default_fixture()


# --- the recorder's guards and tools -----------------------------------------------------------


def _fixture_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "fx"
    shutil.copytree(FIXTURE, copy)
    return copy


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("no api.js", "expected the tasklist fixture (no src/api.js found)"),
        ("bug fixed", "src/api.js: expected the planted bug"),
    ],
)
def test_a_folder_that_is_not_the_buggy_fixture_is_refused_before_any_run(
    tmp_path, monkeypatch, change, message
):
    monkeypatch.setattr(_recorder.shutil, "which", lambda name: "/usr/bin/node")
    fixture = _fixture_copy(tmp_path)
    api = fixture / "src" / "api.js"
    if change == "no api.js":
        api.unlink()
    else:
        api.write_text(api.read_text(encoding="utf-8").replace(BUGGY, FIXED), encoding="utf-8")
    with pytest.raises(ReplayError, match=re.escape(message)):
        record_fixture(tmp_path / "run.jsonl", fixture)
    assert not (tmp_path / "run.jsonl").exists()


@needs_node
def test_a_fixture_whose_tests_do_not_fail_first_or_pass_last_is_no_recording(tmp_path):
    """The log must show the tests failing before the fix and passing after it
    (`record_fixture`'s docstring): anything else is an error, and no log is written."""
    passing = _fixture_copy(tmp_path / "a")
    (passing / "test" / "tasklist.test.js").write_text(
        "import { test } from 'node:test';\ntest('fine', () => {});\n", encoding="utf-8"
    )
    with pytest.raises(ReplayError, match="expected the first test run to fail"):
        record_fixture(tmp_path / "a.jsonl", passing)

    still_failing = _fixture_copy(tmp_path / "b")
    (still_failing / "test" / "other.test.js").write_text(
        "import { test } from 'node:test';\ntest('never', () => { throw new Error('no'); });\n",
        encoding="utf-8",
    )
    with pytest.raises(ReplayError, match=r"expected the last test run to pass after the fix, "
                                          r"but it failed \(exit code 1\)"):
        record_fixture(tmp_path / "b.jsonl", still_failing)
    assert not (tmp_path / "a.jsonl").exists() and not (tmp_path / "b.jsonl").exists()


@needs_node
def test_a_fixture_with_the_bug_twice_is_refused_before_the_fix(tmp_path):
    fixture = _fixture_copy(tmp_path)
    api = fixture / "src" / "api.js"
    source = api.read_text(encoding="utf-8")
    api.write_text(source + f"\n// {_recorder.BUGGY_LINE}\n", encoding="utf-8")
    with pytest.raises(ReplayError, match="expected exactly one"):
        record_fixture(tmp_path / "run.jsonl", fixture)


def test_the_workspace_tools_stay_in_the_project_and_answer_as_documented(tmp_path):
    root = tmp_path / "project"
    for name in ("b.js", "a/c.js", "node_modules/dep/x.js", ".git/HEAD"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x", encoding="utf-8")
    tools = _recorder._Workspace(root.resolve(), "node")
    # every file, recursively, sorted, one per line; node_modules skipped (its description)
    assert tools.list_files() == "a/c.js\nb.js"
    assert tools.list_files("a") == "a/c.js"
    assert tools.write_file("new/d.js", "é") == "Wrote 2 bytes to new/d.js"  # bytes, not chars
    assert tools.read_file("new/d.js") == "é"
    for escape in ("../outside.js", "/etc/passwd", "a/../../x"):
        with pytest.raises(_recorder._ToolError, match="path escapes the project root"):
            tools.read_file(escape)
    with pytest.raises(_recorder._ToolError, match="no such file: a"):
        tools.read_file("a")
    with pytest.raises(_recorder._ToolError, match="no such directory: b.js"):
        tools.list_files("b.js")


@needs_node
def test_run_tests_gives_the_text_report_even_under_a_node_test_run(tmp_path, monkeypatch):
    """The log holds what the tool returned: NODE_TEST_CONTEXT inherited (a recording started
    from a node test run) switches node's runner to its binary protocol, no readable report."""
    monkeypatch.setenv("NODE_TEST_CONTEXT", "child-v8")
    tools = _recorder._Workspace(_fixture_copy(tmp_path).resolve(), shutil.which("node"))
    run = json.loads(tools.run_tests())
    assert run["exit_code"] != 0
    assert "\x1b[" not in run["stdout"]
    assert re.search(rf"^not ok \d+ - {ROUND_TRIP_TEST}$", run["stdout"], flags=re.MULTILINE)


def test_a_tool_that_fails_gives_the_model_an_error_result(tmp_path):
    rec = _recorder._Recorder(_recorder._Workspace(tmp_path.resolve(), "node"), "m")
    output, is_error = rec.step("Reading it.", "read_file", {"path": "missing.js"})
    assert (output, is_error) == ("Error: no such file: missing.js", True)
    result = rec.events[-1]
    assert isinstance(result, ToolResult) and result.is_error
    assert (result.output, result.call_id, result.tool_name) == (output, "call-001", "read_file")


def test_a_step_the_script_needs_that_fails_stops_the_recording():
    with pytest.raises(ReplayError, match=re.escape(
        "the fixture recording broke: reading src/api.js failed: Error: no such file: src/api.js"
    )):
        _recorder._check_ok("Error: no such file: src/api.js", True, "reading src/api.js")
    assert _recorder._check_ok("content", False, "reading src/api.js") == "content"
