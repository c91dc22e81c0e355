"""The five core strategy families, driven through the real engine.

Each property replays a session (random or fixed) with `replay_session` and checks what the
strategy sent (`RequestRecord.view`) and how its prompt relates to the previous one
(`RequestRecord.diff`).
"""

from __future__ import annotations

import re
from collections import defaultdict

import gen
import pytest
from conftest import CORE, RUN42
from hypothesis import given, settings
from hypothesis import strategies as st

from replay._errors import ReplayError
from replay.engine import ReplayConfig, replay_session
from replay.log import (
    AssistantMessage,
    Compaction,
    RequestMarker,
    ToolResult,
    UserMessage,
    read_log,
)
from replay.strategies import (
    AssistantItem,
    Block,
    SummaryItem,
    ToolResultItem,
    UserItem,
    canonical_names,
    parse_name,
    resolve,
)
from replay.strategies.recorded import LoggedCompaction, surviving

SMALL = [
    "baseline",
    "truncate-200",
    "age-truncate-200-keep-2",
    "compact-at-3000-structured",
    "compact-at-3000-freeform",
    "sliding-4",
    "sliding-4-pin-first",
]
_VISIBLE = (UserMessage, AssistantMessage, ToolResult)


def _replay(session, names):
    return replay_session(session, names, ReplayConfig(keep_views=True))


def _requests(records, name):
    """Request records of one strategy, grouped by thread, in order."""
    out = defaultdict(list)
    for r in records:
        if r.strategy == name and r.kind == "request":
            out[r.thread].append(r)
    assert out, f"no records for {name}"
    return out


def _histories(session):
    """request_id → event indexes of the model-visible events of its thread before it."""
    seen: dict[str, list[int]] = defaultdict(list)
    out = {}
    for n, e in enumerate(session.events):
        if isinstance(e, RequestMarker):
            out[e.request_id] = list(seen[e.thread])
        elif isinstance(e, _VISIBLE):
            seen[e.thread].append(n)
    return out


def _indexes(view):
    return [getattr(i, "event_index", None) for i in view]


def _check_pairs(view):
    calls: set[str] = set()
    answered: set[str] = set()
    for item in view:
        if isinstance(item, AssistantItem):
            calls |= {b.call_id for b in item.tool_calls}
        elif isinstance(item, ToolResultItem):
            assert item.call_id in calls, f"result {item.call_id} sent without its call"
            answered.add(item.call_id)
    assert calls <= answered, f"calls sent without their results: {calls - answered}"


def _consecutive(records):
    for thread_records in records.values():
        yield from zip(thread_records, thread_records[1:], strict=False)


# ---------------------------------------------------------------------------------------------
# Properties on random sessions


@settings(max_examples=40, deadline=None)
@given(gen.replay_sessions())
def test_core_strategies_on_random_sessions(session):
    records = _replay(session, SMALL + ["truncate-500", "age-truncate-500-keep-3"])
    histories = _histories(session)
    outputs = {n: e.output for n, e in enumerate(session.events) if isinstance(e, ToolResult)}

    # Every strategy: a non-empty view, tool calls paired with their results.
    for r in records:
        assert r.view and r.view_items == len(r.view)
        _check_pairs(r.view)

    # baseline: the whole history, and append-only: never a break, mismatch at the old total.
    base = _requests(records, "baseline")
    for thread_records in base.values():
        assert thread_records[0].diff.where == "first"
        for r in thread_records:
            assert _indexes(r.view) == histories[r.request_id]
    for prev, cur in _consecutive(base):
        assert not cur.diff.is_break
        assert cur.diff.first_mismatch_token == prev.request.total
        assert cur.request.total >= prev.request.total

    # truncate-N: each result capped the same way on every request, so no position is rewritten.
    for name, limit in (("truncate-200", 200), ("truncate-500", 500)):
        trunc = _requests(records, name)
        for prev, cur in _consecutive(trunc):
            assert not cur.diff.is_break
            assert cur.diff.first_mismatch_token == prev.request.total
        for thread_records in trunc.values():
            for r in thread_records:
                for item in r.view:
                    if isinstance(item, ToolResultItem):
                        full = outputs[item.event_index]
                        if len(full) <= limit:
                            assert item.output == full
                        else:  # nothing past the limit is shown, and the marker says how much
                            cut = len(full) - limit
                            assert item.output == f"{full[:limit]}\n…[truncated {cut} chars]"

    # age-truncate-N-keep-K: each result's text changes at most once, from full to capped.
    for name, limit, keep in (
        ("age-truncate-200-keep-2", 200, 2),
        ("age-truncate-500-keep-3", 500, 3),
    ):
        aged = _requests(records, name)
        for thread_records in aged.values():
            shown: dict[int, list[str]] = defaultdict(list)
            for r in thread_records:
                results = [i for i in r.view if isinstance(i, ToolResultItem)]
                for n, item in enumerate(results):
                    shown[item.event_index].append(item.output)
                    if n >= len(results) - keep:
                        assert item.output == outputs[item.event_index]  # K most recent: verbatim
                    else:
                        assert len(item.output) <= limit + 40
            for event_index, texts in shown.items():
                changes = sum(a != b for a, b in zip(texts, texts[1:], strict=False))
                assert changes <= 1, f"result {event_index} rewritten {changes} times"
        breaks = sum(r.diff.is_break for rs in aged.values() for r in rs)
        assert breaks <= len(outputs)

    # sliding-N: a break exactly when the window start moves (the dropped set grows).
    for name in ("sliding-4", "sliding-4-pin-first"):
        slide = _requests(records, name)
        pinned = name.endswith("pin-first")
        for thread_records in slide.values():
            dropped_before: set[int] = set()
            for n, r in enumerate(thread_records):
                history = histories[r.request_id]
                view = set(_indexes(r.view))
                assert view <= set(history)
                dropped = set(history) - view
                if not pinned:
                    assert _indexes(r.view) == history[len(history) - len(r.view) :]  # a suffix
                if n:
                    assert r.diff.is_break == (dropped != dropped_before)
                # beyond the window, widened over <= 3 results and a steering message
                if len(history) > 4 + 3 + 1 + pinned:
                    assert dropped
                dropped_before = dropped

    # compact-at-N: frozen between compactions; each compaction is one costed summarizer call.
    for name in ("compact-at-3000-structured", "compact-at-3000-freeform"):
        compacting = _requests(records, name)
        summarizer = [r for r in records if r.strategy == name and r.kind == "summarizer"]
        compactions = [
            r
            for r in records
            if r.strategy == name
            and r.kind == "request"
            and any(e.kind == "compaction" for e in r.events)
        ]
        for thread_records in compacting.values():
            for n, r in enumerate(thread_records):
                compacted = r in compactions
                if compacted:
                    assert isinstance(r.view[0], SummaryItem)
                if n:
                    assert r.diff.is_break == compacted
                    if not compacted:
                        assert r.diff.first_mismatch_token == thread_records[n - 1].request.total
        assert len(summarizer) == len(compactions)
        for s, c in zip(summarizer, compactions, strict=True):
            assert s.request_index == c.request_index
            assert records.index(s) < records.index(c)
            assert s.thread == f"{c.thread}/summarizer"
            assert s.output_tokens > 0


@settings(max_examples=15, deadline=None)
@given(gen.replay_sessions(max_turns=6))
def test_every_canonical_strategy_sends_valid_views(session):
    for r in _replay(session, "all"):
        assert r.view, f"{r.strategy} sent an empty view"
        _check_pairs(r.view)


# ---------------------------------------------------------------------------------------------
# Fixed sessions


def _linear(n_turns: int, output_chars: int = 300):
    turns = [
        gen.Turn(
            f"step {i}", [gen.Call("read_file", {"path": f"f{i}"}, gen.filler(output_chars, i))]
        )
        for i in range(n_turns - 1)
    ] + [gen.Turn("done")]
    return gen.build_session(turns)


def test_sliding_breaks_on_every_request_once_history_exceeds_the_window():
    session = _linear(20)
    records = _replay(session, ["sliding-10", "baseline"])
    histories = _histories(session)
    slide = _requests(records, "sliding-10")["main"]
    for r in slide[1:]:
        beyond = len(histories[r.request_id]) > 10
        assert r.diff.is_break == beyond
        assert len(r.view) <= 11
    assert sum(r.diff.is_break for r in slide) >= 10
    assert not any(r.diff.is_break for r in _requests(records, "baseline")["main"])


def test_a_window_never_starts_between_a_call_and_its_results():
    """A user's steering message sent while the tools ran sits between the call and its
    results: a window starting there would send the results without their call."""
    turns = [
        gen.Turn(f"batch {i}", [gen.Call("read_file", {"path": f"f{i}"}, f"out {i}")],
                 steer=f"steer {i}")
        for i in range(6)
    ] + [gen.Turn("done")]
    records = _replay(gen.build_session(turns), ["sliding-2", "sliding-3", "sliding-2-pin-first"])
    for r in records:
        _check_pairs(r.view)


def test_sliding_window_never_starts_on_an_orphan_result():
    turns = [
        gen.Turn(
            f"batch {i}",
            [gen.Call("read_file", {"path": f"f{i}{j}"}, f"out {i}{j}") for j in range(4)],
        )
        for i in range(6)
    ] + [gen.Turn("done")]
    records = _replay(gen.build_session(turns), ["sliding-3", "sliding-3-pin-first"])
    for r in records:
        first = next((i for i in r.view if not isinstance(i, UserItem) or i.event_index != 0), None)
        assert not isinstance(first, ToolResultItem)
        _check_pairs(r.view)


def test_sliding_pin_first_pins_the_task_not_injected_instructions():
    """Codex and Claude Code logs open with harness text in the user role (permissions,
    AGENTS.md): pin-first keeps the user's own first prompt."""
    session = gen.build_session(
        [gen.Turn(f"step {i}", [gen.Call("read_file", {"path": f"f{i}"}, f"out {i}")])
         for i in range(5)] + [gen.Turn("done")]
    )
    first = next(e for e in session.events if isinstance(e, UserMessage))
    at = session.events.index(first)
    session.events.insert(at, UserMessage(ts=first.ts, text="<permissions> sandbox off",
                                          injected=True))
    last = _replay(session, ["sliding-2-pin-first"])[-1]
    users = [i.text for i in last.view if isinstance(i, UserItem)]
    assert users[0] == first.text
    assert "<permissions> sandbox off" not in users


def test_sliding_pin_first_pins_the_first_prompt_not_a_later_one():
    session = gen.build_session(
        [gen.Turn(f"step {i}", [gen.Call("read_file", {"path": f"f{i}"}, f"out {i}")])
         for i in range(5)] + [gen.Turn("done")]
    )
    users = [e for e in session.events if isinstance(e, UserMessage)]
    later = UserMessage(ts=users[0].ts, text="also update the changelog")
    session.events.insert(session.events.index(users[0]) + 1, later)
    last = _replay(session, ["sliding-2-pin-first"])[-1]
    pinned = [i.text for i in last.view if isinstance(i, UserItem)]
    assert pinned[0] == users[0].text and later.text not in pinned


def test_age_truncate_on_run42_rewrites_each_result_once():
    session = read_log(RUN42, strict=True)
    records = _replay(session, ["age-truncate-500-keep-3"])
    thread = _requests(records, "age-truncate-500-keep-3")["main"]
    aging = [e for r in thread for e in r.events if e.kind == "aging"]
    breaks = [r for r in thread if r.diff.is_break]
    assert breaks and all(any(e.kind == "aging" for e in r.events) for r in breaks)
    long_results = [e for e in session.events if isinstance(e, ToolResult) and len(e.output) > 500]
    assert len(aging) <= len(long_results)


def test_compaction_reuses_a_logged_summary():
    session = _linear(14, output_chars=900)
    logged = "LOGGED SUMMARY: the agent read f0..f5 and found nothing yet."
    at = next(
        n
        for n, e in enumerate(session.events)
        if isinstance(e, RequestMarker) and e.request_id == "req-006"
    )
    session.events.insert(at, Compaction(ts=session.events[at].ts, summary=logged, replaces=[]))
    records = _replay(session, ["compact-at-3000-structured"])
    compacted = [
        r for r in records if r.kind == "request" and any(e.kind == "compaction" for e in r.events)
    ]
    sources = [(r.request_id, r.view[0].source) for r in compacted]
    logged_at = [rid for rid, source in sources if source == "logged"]
    assert len(logged_at) == 1 and logged_at[0] >= "req-006", sources
    first_logged = next(r for r in compacted if r.view[0].source == "logged")
    assert logged in first_logged.view[0].text
    later = [source for rid, source in sources if rid > logged_at[0]]
    assert later and set(later) == {"extractive"}  # one logged summary is used once
    calls = [r for r in records if r.kind == "summarizer"]
    assert len(calls) == len(compacted)  # costed even when the summary is reused


@pytest.mark.parametrize(
    ("fields", "shown"),
    [
        ({}, ("user", "LOGGED SUMMARY")),  # the summary is the message (Claude Code, native)
        ({"message": "<s>LOGGED SUMMARY</s>"}, ("user", "<s>LOGGED SUMMARY</s>")),  # pi
        ({"message_role": "assistant"}, ("assistant", "LOGGED SUMMARY")),  # opencode
        ({"message": ""}, None),  # Codex: the new history holds it as events of their own
    ],
)
def test_recorded_shows_the_logged_summary_as_the_harness_sent_it(fields, shown):
    session = _linear(8, output_chars=300)
    at = next(
        n
        for n, e in enumerate(session.events)
        if isinstance(e, RequestMarker) and e.request_id == "req-004"
    )
    replaced = [e.id for e in session.events[:at] if not isinstance(e, RequestMarker)]
    replaced_at = {n for n, e in enumerate(session.events[:at]) if e.id in replaced}
    compaction = Compaction(
        ts=session.events[at].ts, summary="LOGGED SUMMARY", replaces=replaced, **fields
    )
    # What the new history adds after it (Codex's replacement history: the kept user messages).
    session.events[at:at] = [compaction, UserMessage(ts=compaction.ts, text="go on")]
    records = [r for r in _replay(session, ["recorded"]) if r.request_id == "req-004"]
    summaries = [(i.role, i.text) for i in records[0].view if isinstance(i, SummaryItem)]
    assert summaries == ([shown] if shown else [])
    # Nothing the compaction replaced is sent again (the events before it keep their indexes).
    sent_at = {i.event_index for i in records[0].view if hasattr(i, "event_index")}
    assert sent_at and not sent_at & replaced_at


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 60), st.sets(st.integers(0, 60), max_size=8)),
        max_size=8,
        unique_by=lambda c: c[0],
    )
)
def test_recorded_sends_the_summaries_no_later_compaction_replaced(drawn):
    """`surviving` (one pass) keeps the summaries the pair-by-pair definition keeps: those whose
    place no later compaction replaced."""
    compactions = [
        LoggedCompaction(summary="s", replaced=frozenset(r for r in replaced if r < at),
                         event_index=at)
        for at, replaced in sorted(drawn)
    ]

    def start(c: LoggedCompaction) -> int:
        return min(c.replaced, default=c.event_index)

    expected = [
        c for c in compactions
        if not any(
            later.event_index > c.event_index and start(later) <= c.event_index
            for later in compactions
        )
    ]
    assert surviving(compactions) == expected
    assert surviving(list(reversed(compactions))) == expected


def test_structured_summary_has_the_five_sections():
    session = _linear(10, output_chars=2000)
    records = _replay(session, ["compact-at-3000-structured"])
    summary = next(
        r.view[0] for r in records if r.kind == "request" and isinstance(r.view[0], SummaryItem)
    )
    sections = [
        "## Task Overview",
        "## Current State",
        "## Important Discoveries",
        "## Next Steps",
        "## Context to Preserve",
    ]
    positions = [summary.text.index(s) for s in sections]
    assert positions == sorted(positions)
    assert "Fix the failing test." in summary.text
    assert "read: f0" in summary.text


_ERROR_TEXT_PARTS = [
    "a", " ", "error", "FAIL", "not ok", "NoT oK", "✖", "ExPeCtEd", "exception", "asser", "t",
    "\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029",
    "K", "\u212a", "ſ", "İ",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_ERROR_TEXT_PARTS), max_size=40).map("".join), st.integers(0, 14))
def test_error_lines_are_the_matching_lines_of_splitlines(text, room):
    """The summaries' error lines, found from the pattern's matches, are the first `room`
    lines of `splitlines` the pattern matches (every line break `splitlines` knows, ASCII
    texts and others)."""
    from replay.strategies._summary import _ERROR_LINE, _error_lines

    expected = [line for line in text.splitlines() if _ERROR_LINE.search(line)][:room]
    assert _error_lines(text, room) == expected


def _step(call_id: str, name: str, arguments: object, output: str) -> list:
    """A tool call and its result, as a summarized part of the history holds them."""
    call = Block("tool_call", call_id=call_id, name=name, arguments=arguments)
    return [AssistantItem(blocks=(call,)), ToolResultItem(call_id, name, output,
                                                          arguments=arguments)]


def _sections(summary: str) -> dict[str, str]:
    """The structured summary's sections by heading, without the closing tag."""
    parts = re.split(r"^## (.+)\n", summary.removesuffix("\n</summary>"), flags=re.MULTILINE)
    return dict(zip(parts[1::2], (p.rstrip("\n") for p in parts[2::2]), strict=True))


def test_the_extractive_summary_lists_files_read_and_modified_by_their_tools():
    """Claude Code names its tools `Read`, `Edit`, `Write`: its edited files were listed as
    read (the tool name was matched case-sensitively against `write`, `edit`, `patch`)."""
    from replay.strategies._summary import freeform_summary, structured_summary

    items = [
        UserItem(text="Fix the parser."),
        *_step("c1", "Read", {"file_path": "src/a.py"}, "code"),
        *_step("c2", "Edit", {"file_path": "src/b.py"}, "ok"),
        *_step("c3", "Write", {"file_path": "src/c.py"}, "ok"),
        *_step("c4", "apply_patch", {"path": "src/d.py"}, "ok"),
        *_step("c5", "read", {"path": "", "file_path": "src/e.py"}, "code"),  # an empty path
        *_step("c6", "view", {"target_file": "src/f.py"}, "code"),
        *_step("c7", "Read", {"file_path": "src/a.py"}, "code"),  # listed once
        # OpenHands' editor views files as well as it edits them; Claude Code's NotebookEdit.
        *_step("c8", "str_replace_editor", {"command": "view", "path": "src/g.py"}, "code"),
        *_step("c9", "str_replace_editor", {"command": "create", "path": "src/h.py"}, "ok"),
        *_step("c10", "NotebookEdit", {"notebook_path": "nb/i.ipynb"}, "ok"),
    ]
    read = ["src/a.py", "src/e.py", "src/f.py", "src/g.py"]
    modified = ["src/b.py", "src/c.py", "src/d.py", "src/h.py", "nb/i.ipynb"]
    assert _sections(structured_summary(items))["Current State"].splitlines() == [
        *[f"- read: {p}" for p in read], *[f"- modified: {p}" for p in modified]
    ]
    assert freeform_summary(items).splitlines()[1:] == [
        f"Files read: {', '.join(read)}.", f"Files modified: {', '.join(modified)}."
    ]


@pytest.mark.parametrize(
    "arguments",
    [
        {"input": "{patch}"},  # Codex's freeform apply_patch
        {"command": ["apply_patch", "{patch}"]},  # Codex's older shell, as argv
        {"cmd": "apply_patch <<'EOF'\n{patch}\nEOF"},  # through exec_command
    ],
)
def test_the_extractive_summary_lists_the_files_a_codex_patch_changes(arguments):
    """Codex's `apply_patch` has no path argument: the files are the patch's own headers
    (`*** Add File:`, `*** Update File:`, `*** Delete File:`, `*** Move to:`), all modified."""
    from replay.strategies._summary import structured_summary

    patch = "\n".join([
        "*** Begin Patch",
        "*** Update File: src/a.py",
        "@@ def f():",
        "-    return 1",
        "+    return 2",
        "*** Update File: src/old.py",
        "*** Move to: src/new.py",
        "*** Add File: docs/notes.md",
        "+*** Update File: not/a/header.py",  # a line the patch adds, not a header
        "*** Delete File: tmp/scratch.txt  ",
        "*** End Patch",
    ])
    name = "shell" if "command" in arguments else "apply_patch"
    filled = {key: value.replace("{patch}", patch) if isinstance(value, str)
              else [part.replace("{patch}", patch) for part in value]
              for key, value in arguments.items()}
    items = [UserItem(text="Fix the parser."), *_step("p1", name, filled, "Success.")]
    modified = ["src/a.py", "src/old.py", "src/new.py", "docs/notes.md", "tmp/scratch.txt"]
    assert _sections(structured_summary(items))["Current State"].splitlines() == [
        f"- modified: {p}" for p in modified
    ]


def test_the_extractive_summary_keeps_the_latest_of_each_fact():
    """The task is the first user message the user wrote; the constraints, reasoning, test
    output and earlier summary are the latest ones; error lines the first twelve, once each."""
    from replay.strategies._summary import freeform_summary, structured_summary

    items = [
        UserItem(text="(a reminder the harness added)", injected=True),
        UserItem(text="Fix the parser."),
        SummaryItem(text="old summary"),
        SummaryItem(text="new summary"),
        *[UserItem(text=f"constraint {n}") for n in range(7)],
        *[AssistantItem(blocks=(Block("text", f"thought {n}"),)) for n in range(5)],
        AssistantItem(blocks=(Block("text", " \n "),)),  # blank: no reasoning
        UserItem(text="Fix the parser."),  # the task again: not a constraint
        *_step("e1", "bash", {}, "error A\nerror A\nfine\nerror B"),
        *_step("e2", "bash", {}, "\n".join(f"error {n}" for n in range(15))),
        *_step("t1", "run_tests", {}, "old line"),
        *_step("t2", "run_tests", {}, "\n".join(f"line {n}" for n in range(15)) + "\n\n"),
    ]
    errors = ["error A", "error B", *[f"error {n}" for n in range(9)]]
    tests = [f"line {n}" for n in range(3, 15)]
    sections = _sections(structured_summary(items))
    assert sections["Task Overview"] == "Fix the parser."
    assert sections["Current State"] == "- last test run:\n```\n" + "\n".join(tests) + "\n```"
    assert sections["Important Discoveries"].splitlines() == [
        f"- {line}" for line in ["new summary", *errors]
    ]
    assert sections["Next Steps"] == "thought 4"
    assert sections["Context to Preserve"].splitlines() == [
        f"- constraint {n}" for n in range(2, 7)
    ]
    assert freeform_summary(items).splitlines() == [
        "The user asked: Fix the parser.",
        "Earlier summary: new summary",
        "Errors seen: " + " | ".join(errors[:6]),
        "Last test output: " + " / ".join(tests[-4:]),
        "Latest reasoning: thought 2 thought 3 thought 4",
    ]

@pytest.mark.parametrize(
    ("tool", "arguments", "is_test"),
    [
        ("Bash", {"command": "cd app && python -m pytest -q tests/"}, True),  # Claude Code
        ("bash", {"command": "npm run test -- --watch=false"}, True),  # pi
        ("exec_command", {"cmd": "go test ./..."}, True),  # Codex
        ("shell", {"command": ["bash", "-lc", "cargo test"]}, True),  # Codex, older
        ("Bash", {"command": "git log --oneline -5"}, False),
        ("Bash", {"command": "cat tests/test_parser.py"}, False),  # reads a test file
        ("run_tests", {}, True),  # a harness's own test tool
    ],
)
def test_the_extractive_summary_finds_a_test_run_by_its_command(tool, arguments, is_test):
    """Real harnesses run tests through their shell tool (Claude Code's Bash, Codex's
    exec_command): a test run is found by its command too, not only by a tool named for it,
    so the summary keeps the state of the test suite on real logs."""
    from replay.strategies._summary import structured_summary

    items = [UserItem(text="Fix the parser."), *_step("t1", tool, arguments, "1 failed, 9 passed")]
    state = _sections(structured_summary(items))["Current State"]
    assert ("last test run" in state) is is_test


def test_the_extractive_summary_cuts_each_fact_to_its_length():
    from replay.strategies._summary import _first_sentences, structured_summary

    assert _first_sentences(" a \n b ", 3) == "a b"  # whitespace runs as one space
    assert _first_sentences("a" * 10, 10) == "a" * 10
    assert _first_sentences("a" * 11, 10) == "a" * 9 + "…"  # the limit, the ellipsis included
    items = [
        UserItem(text="t" * 700),
        SummaryItem(text="s" * 2000),
        AssistantItem(blocks=(Block("text", "r" * 400),)),
        *_step("c1", "bash", {}, "error " + "e" * 300),
    ]
    sections = _sections(structured_summary(items))
    assert sections["Task Overview"] == "t" * 599 + "…"
    assert sections["Important Discoveries"].splitlines() == [
        "- " + "s" * 1499 + "…", "- error " + "e" * 193 + "…"
    ]
    assert sections["Next Steps"] == "r" * 299 + "…"


def test_the_summaries_of_nothing_say_so():
    from replay.strategies._summary import freeform_summary, structured_summary, summary_message

    assert freeform_summary([]) == "(nothing to summarize)"
    assert _sections(structured_summary([])) == {
        "Task Overview": "(no user request in the summarized part)",
        "Current State": "- no files touched yet",
        "Important Discoveries": "- nothing notable yet",
        "Next Steps": "Continue the task.",
        "Context to Preserve": "- no extra constraints stated",
    }
    assert summary_message("S").endswith(" Summary of everything before this point:\n\nS")

def test_tool_arguments_are_described_as_sorted_json_of_at_most_200_characters():
    from replay.strategies._summary import describe_arguments

    assert describe_arguments({"b": 1, "a": "é"}) == '{"a": "é", "b": 1}'
    assert describe_arguments({"a": "x" * 300}) == '{"a": "' + "x" * 193


# ---------------------------------------------------------------------------------------------
# Registry


def test_names_parse_into_parameters():
    assert parse_name("truncate-300").params["chars"] == 300
    p = parse_name("age-truncate-200-keep-5").params
    assert (p["chars"], p["keep"]) == (200, 5)
    p = parse_name("compact-at-8000-freeform").params
    assert (p["chars"], p["style"]) == (8000, "freeform")
    assert parse_name("sliding-7").params["messages"] == 7
    assert parse_name("sliding-7-pin-first").params["modifier"] == "pin-first"


def test_all_is_the_canonical_set_and_duplicates_are_dropped():
    names = [s.name for s in resolve("all")]
    assert names == canonical_names()
    assert set(CORE) <= set(names)
    assert [s.name for s in resolve("baseline,truncate-500,baseline")] == [
        "baseline",
        "truncate-500",
    ]
    # Two names of one strategy run once, under the first name given (they ran twice).
    aliases = "truncate-1k,truncate-1000,truncate-1000[chars=1k],anthropic-compact-150000"
    assert [s.name for s in resolve(f"{aliases},all")][:2] == ["truncate-1k",
                                                               "anthropic-compact-150000"]
    assert len(resolve(f"{aliases},all")) == len(canonical_names()) + 1  # truncate-1k is new
    assert [s.name for s in resolve("truncate-1k,truncate-2k")] == ["truncate-1k", "truncate-2k"]


def test_unknown_strategy_lists_the_known_names():
    with pytest.raises(ReplayError) as info:
        resolve("truncate-lots")
    message = str(info.value)
    assert "truncate-lots" in message
    for name in CORE:
        assert name in message


def test_an_output_of_exactly_the_limit_is_left_whole():
    """`truncate-N` cuts outputs longer than N characters: one of N is sent as it is (no
    "…[truncated 0 chars]" marker); one of N + 1 is cut too, though the marker makes it longer
    (the cap hides what is past N), and the marker says by how much."""
    from replay.strategies._view import truncate_chars

    exact = ToolResultItem("c1", "read_file", "x" * 500, event_index=2)
    assert truncate_chars(exact, 500) is exact
    longer = ToolResultItem("c2", "read_file", "x" * 500 + "y", event_index=4)
    assert truncate_chars(longer, 500).output == "x" * 500 + "\n…[truncated 1 chars]"
    cut = ToolResultItem("c4", "read_file", "x" * 530, event_index=8)
    assert truncate_chars(cut, 500).output == "x" * 500 + "\n…[truncated 30 chars]"


@pytest.mark.parametrize(("caps", "outputs", "arguments"),
                         [("", (1500, 1540), (201, 201)), ("[output_chars=0,argument_chars=0]",
                                                           (5000, 5000), (6029, 6029))])
def test_compact_at_sends_its_summarizer_what_the_seed_study_sent(caps, outputs,
                                                                 arguments) -> None:
    """The seed study's summarizer input was pre-truncated: tool output to 1,500 characters
    (plus the cut's marker), tool-call arguments to 200 (plus "…"). The call was costed on the
    whole transcript."""
    from replay.strategies import AssistantItem, ToolResultItem, resolve

    turns = [
        gen.Turn(f"step {i}", [gen.Call("write_file", {"path": f"f{i}", "content": "y" * 6000},
                                        "x" * 5000)])
        for i in range(4)
    ] + [gen.Turn("done")]
    (named,) = resolve(f"compact-at-12000-structured{caps}")
    records = replay_session(gen.build_session(turns), [named], ReplayConfig(keep_views=True))
    call = next(r for r in records if r.kind == "summarizer")
    sent = [len(i.output) for i in call.view if isinstance(i, ToolResultItem)]
    args = [len(b.rendered()) - len("write_file()") for i in call.view
            if isinstance(i, AssistantItem) for b in i.tool_calls]
    assert sent and outputs[0] <= min(sent) <= max(sent) <= outputs[1]
    assert args and arguments[0] <= min(args) <= max(args) <= arguments[1]
    summary = next(i for r in records if r.kind == "request" for i in r.view
                   if isinstance(i, SummaryItem))
    assert "f0" in summary.text  # the stand-in is made from the whole items
