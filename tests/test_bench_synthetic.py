"""The synthetic session against the figures docs/performance.md ("The synthetic session") gives
for it: seed 0's re-read shares, repeated output, log sizes, and the rare events of its mix."""

from __future__ import annotations

import pytest

from replay.bench import repeated_output_bytes, synthetic_session
from replay.log import (
    AssistantMessage,
    Compaction,
    RequestMarker,
    ToolCallBlock,
    ToolResult,
    UserMessage,
    dumps_log,
)


@pytest.fixture(scope="module")
def thousand():
    return synthetic_session(1000, 0)


@pytest.fixture(scope="module")
def long_run():
    return synthetic_session(3000, 0)


def _log_bytes(session) -> int:
    return len(dumps_log(session.header, session.events).encode())


def _output_bytes(session) -> int:
    return sum(len(e.output.encode()) for e in session.events if isinstance(e, ToolResult))


def _reads(session) -> list[tuple[str, ToolResult]]:
    calls = {b.id: b for e in session.events if isinstance(e, AssistantMessage)
             for b in e.blocks if isinstance(b, ToolCallBlock)}
    return [(calls[e.call_id].arguments["path"], e) for e in session.events
            if isinstance(e, ToolResult) and e.tool_name == "read_file"]


def _read_again_share(session) -> float:
    seen: set[str] = set()
    again = 0
    reads = _reads(session)
    for path, _ in reads:
        again += path in seen
        seen.add(path)
    return again / len(reads)


def test_the_share_of_reads_of_a_file_already_read_grows_as_documented(thousand):
    """Seed 0: 48% at 100 requests, 86% at 1,000."""
    assert 0.45 <= _read_again_share(synthetic_session(100, 0)) <= 0.51
    assert 0.83 <= _read_again_share(thousand) <= 0.89


def test_a_thousand_requests_make_the_documented_log(thousand):
    """4.84 MB; 8.5% of the output characters repeat an earlier output (0.05× the log);
    read_file outputs have a median of ~2.3k characters."""
    size = _log_bytes(thousand)
    assert 4.7e6 <= size <= 5.0e6
    repeated = repeated_output_bytes(thousand)
    assert 0.08 <= repeated / _output_bytes(thousand) <= 0.09
    assert 0.045 <= repeated / size <= 0.06
    reads = sorted(len(e.output) for _, e in _reads(thousand))
    assert 2_000 <= reads[len(reads) // 2] <= 2_600


def test_the_issue_s_setting_makes_the_documented_log():
    """2,000 requests with compactions at 150k: "The issue's-setting log is 9.49 MB now"."""
    compacted = synthetic_session(2000, 0, max_context_tokens=150_000)
    assert any(isinstance(e, Compaction) for e in compacted.events)
    assert 9.3e6 <= _log_bytes(compacted) <= 9.65e6


def test_idle_gaps_of_5_5_to_40_minutes_before_1_5_percent_of_requests(long_run):
    gaps = []
    last = None  # the last tool result before a request: the agent's turn ended there
    for e in long_run.events:
        if isinstance(e, ToolResult):
            last = e
        elif isinstance(e, RequestMarker) and last is not None:
            gaps.append((e.ts - last.ts).total_seconds())
            last = None
    idle = [g for g in gaps if g > 300]
    assert 0.01 <= len(idle) / len(gaps) <= 0.022
    assert all(330 <= g <= 2400 + 60 for g in idle)


def test_rare_big_outputs_are_as_rare_as_documented(long_run):
    """grep: 2% of calls return hundreds of matches; run_tests: 3% verbose failure dumps
    (20-40k), shown only by a run that fails."""
    results = [e for e in long_run.events if isinstance(e, ToolResult)]
    greps = [r.output for r in results if r.tool_name == "grep"]
    broad = [o for o in greps if o.count("\n") + 1 >= 150]
    assert 0.01 <= len(broad) / len(greps) <= 0.035
    runs = [r for r in results if r.tool_name == "run_tests"]
    dumps = [r for r in runs if len(r.output) > 20_000]
    assert 0.005 <= len(dumps) / len(runs) <= 0.05
    assert all(r.is_error for r in dumps)


def test_a_failing_test_run_is_an_error_result_and_only_it(long_run):
    results = [e for e in long_run.events if isinstance(e, ToolResult)]
    runs = [r for r in results if r.tool_name == "run_tests"]
    assert any(r.is_error for r in runs) and not all(r.is_error for r in runs)
    for r in runs:
        assert r.is_error == (" failed, " in r.output.splitlines()[-1])
    assert not any(r.is_error for r in results if r.tool_name != "run_tests")


def test_follow_ups_arrive_after_the_tool_results_of_the_previous_request(long_run):
    """A follow-up is the user's message between a request's results and the next request."""
    events = long_run.events
    for n, e in enumerate(events[1:], 1):
        if isinstance(e, UserMessage):
            assert isinstance(events[n - 1], ToolResult)
            assert isinstance(events[n + 1], RequestMarker | Compaction)


def test_a_range_can_be_any_window_of_the_file_up_to_its_last_line(long_run):
    """A re-read range of `limit` lines starts at any line from 1 to the last window's first
    line (1-based `offset`), so ranges ending on the file's last line occur."""
    calls = {b.id: b for e in long_run.events if isinstance(e, AssistantMessage)
             for b in e.blocks if isinstance(b, ToolCallBlock)}
    whole: dict[str, int] = {}  # lines of the version last read whole or written
    at_end = windows = 0
    for e in long_run.events:
        if isinstance(e, AssistantMessage):
            for b in e.blocks:
                if isinstance(b, ToolCallBlock) and b.name == "write_file":
                    whole[b.arguments["path"]] = len(b.arguments["content"].splitlines())
        elif isinstance(e, ToolResult) and e.tool_name == "read_file":
            args = calls[e.call_id].arguments
            if "offset" not in args:
                whole[args["path"]] = len(e.output.splitlines())
            elif args["limit"] < whole[args["path"]]:
                windows += 1
                assert 1 <= args["offset"] <= whole[args["path"]] - args["limit"] + 1
                at_end += args["offset"] == whole[args["path"]] - args["limit"] + 1
    assert windows > 500 and at_end > 0


def test_parallel_results_arrive_after_the_slowest_call(long_run):
    """Lookups run together; their results arrive when the slowest is done: a `grep` takes
    0.05-0.8 s, a `read_file` 0.01-0.1 s, a test run 2-35 s."""
    events = long_run.events
    waits: dict[tuple[str, ...], list[float]] = {}
    for n, e in enumerate(events):
        if isinstance(e, AssistantMessage):
            names = tuple(sorted(b.name for b in e.blocks if isinstance(b, ToolCallBlock)))
            waits.setdefault(names, []).append((events[n + 1].ts - e.ts).total_seconds())
    assert all(w <= 0.1 for w in waits[("read_file",)])
    assert all(2 <= w <= 35 for w in waits[("run_tests",)])
    with_grep = [w for names, ws in waits.items() if len(names) > 1 and "grep" in names
                 for w in ws]
    assert len(with_grep) > 100 and sum(with_grep) / len(with_grep) > 0.3
