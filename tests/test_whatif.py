"""What-if without a strategy (issue 6): one prune or compaction at one request, the rest as
recorded. Selectors, the one-edit views, `replay._api.whatif` and `replay whatif`."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import gen
import pytest
from conftest import RUN42
from gen import Call, Turn, build_session
from test_adapters_common import SAMPLES

from replay._api import whatif
from replay._errors import ReplayError
from replay.breakeven import breakeven_session
from replay.breakeven._breakeven import breakeven_edit
from replay.breakeven._whatif import PLACEHOLDER, Selector, _prune, whatif_strategy
from replay.strategies import (
    AssistantItem,
    Block,
    SummaryItem,
    ToolResultItem,
    UserItem,
    resolve,
)

RUN42_REQUESTS = 14


# --- selectors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("older-than:3", "older-than", "3"),
        (" older-than:0 ", "older-than", "0"),
        ("tool:read_file", "tool", "read_file"),
        ("messages:2-5", "messages", "2-5"),
    ],
)
def test_selector_parse(text, kind, value) -> None:
    assert Selector.parse(text) == Selector(kind, value)


@pytest.mark.parametrize(
    "text",
    ["", "bogus", "older-than:", "older-than:x", "older-than:-", "older-than:+", "messages:3",
     "messages:a-b", "tool:"],
)
def test_bad_selector(text) -> None:
    with pytest.raises(ReplayError, match="bad --prune selector"):
        Selector.parse(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("older-than:-3", "K must be ≥ 0 (got -3)"),
        ("older-than:-1", "K must be ≥ 0 (got -1)"),
        ("older-than:1.5", "K must be a whole number ≥ 0"),
        ("messages:5-2", "empty range, A must be ≤ B (messages:2-5?)"),
    ],
)
def test_bad_selector_says_what_the_rule_is(text, message) -> None:
    with pytest.raises(ReplayError, match=re.escape(f"bad --prune selector {text!r}: {message}")):
        Selector.parse(text)


def _history():
    """user, a call to read a.py, its result, a call to run the tests and read b.py (parallel),
    both results, a last user message: 7 items."""
    return [
        UserItem("fix it", event_index=0),
        AssistantItem((Block("tool_call", call_id="c1", name="read_file",
                             arguments={"path": "a.py"}),), event_index=1),
        ToolResultItem("c1", "read_file", "A" * 50, event_index=2),
        AssistantItem((Block("tool_call", call_id="c2", name="run_tests", arguments={}),
                       Block("tool_call", call_id="c3", name="read_file",
                             arguments={"path": "b.py"})), event_index=3),
        ToolResultItem("c2", "run_tests", "FAIL " * 10, event_index=4),
        ToolResultItem("c3", "read_file", "B" * 50, event_index=5),
        UserItem("go on", event_index=6),
    ]


def _outputs(items):
    return [i.output if isinstance(i, ToolResultItem) else type(i).__name__ for i in items]


def test_prune_older_than() -> None:
    history = _history()
    kept, detail = _prune(history, Selector.parse("older-than:1"), 0)
    assert _outputs(kept) == ["UserItem", "AssistantItem", PLACEHOLDER, "AssistantItem",
                              PLACEHOLDER, "B" * 50, "UserItem"]
    assert detail == "cleared 2 tool results older than 1"
    assert all(a is b for a, b in zip(kept, history, strict=True)
               if not isinstance(a, ToolResultItem) or a.output != PLACEHOLDER)
    cleared = kept[2]
    assert cleared.event_index == 2 and cleared.original_chars == 50
    with pytest.raises(ReplayError, match=re.escape(
            "--prune older-than:3 matches nothing at request 0 (7 history items): only 3 tool "
            "results, none older than 3")):
        _prune(history, Selector.parse("older-than:3"), 0)  # nothing that old


@pytest.mark.parametrize(
    ("selector", "why"),
    [
        ("tool:nosuch", "no result of tool 'nosuch' (tools: read_file, run_tests)"),
        ("tool:read", "no result of tool 'read' (tools: read_file, run_tests)"),  # whole names
        ("messages:7-9", "items are numbered 0..6"),
        # more than there are results (a slice to -K would have cleared the first ones)
        ("older-than:5", "only 3 tool results, none older than 5"),
    ],
)
def test_a_selector_that_matches_nothing_is_an_error(selector, why) -> None:
    with pytest.raises(ReplayError, match=re.escape(f"matches nothing at request 5 (7 history "
                                                    f"items): {why}")):
        _prune(_history(), Selector.parse(selector), 5)


def test_counts_of_one_are_singular_in_what_the_edit_says() -> None:
    history = _history()[:3]  # the user's message, one call, its result
    with pytest.raises(ReplayError, match=re.escape(
            "matches nothing at request 2 (3 history items): only 1 tool result, none older "
            "than 1")):
        _prune(history, Selector.parse("older-than:1"), 2)
    with pytest.raises(ReplayError, match=re.escape(
            "--prune messages:1-1 matches nothing at request 0 (1 history item): items are "
            "numbered 0..0")):
        _prune(history[:1], Selector.parse("messages:1-1"), 0)
    assert _prune(history, Selector.parse("older-than:0"), 2)[1] == (
        "cleared 1 tool result older than 0")
    assert _prune(history, Selector.parse("tool:read_file"), 2)[1] == (
        "cleared 1 result of read_file")
    assert _prune(_history(), Selector.parse("messages:6-6"), 7)[1] == "dropped 1 history item"


def test_a_tool_that_matches_nothing_is_named_beside_the_tools_there_are_sorted() -> None:
    """The tools the history holds results of, in name order (not a set's, which changes from
    run to run), or `none` where it holds no tool result."""
    names = ["zsh", "read_file", "grep", "edit", "bash", "ls"]
    history: list = [UserItem("go", event_index=0)]
    for n, name in enumerate(names):
        history += [
            AssistantItem((Block("tool_call", call_id=f"c{n}", name=name, arguments={}),),
                          event_index=2 * n + 1),
            ToolResultItem(f"c{n}", name, "out", event_index=2 * n + 2),
        ]
    with pytest.raises(ReplayError, match=re.escape(
            "no result of tool 'cat' (tools: bash, edit, grep, ls, read_file, zsh)")):
        _prune(history, Selector.parse("tool:cat"), 1)
    with pytest.raises(ReplayError, match=re.escape("no result of tool 'cat' (tools: none)")):
        _prune(history[:1], Selector.parse("tool:cat"), 0)


def test_a_call_first_in_the_history_leaves_with_the_result_it_owns() -> None:
    """After a compaction the history can start with a model answer: item 0, the call, goes
    with the result `messages:` selects like a call anywhere else."""
    history = _history()[1:]  # the call of request 1's result is item 0
    kept, detail = _prune(history, Selector.parse("messages:1-1"), 0)
    assert [i.event_index for i in kept] == [3, 4, 5, 6]
    assert detail == "dropped 2 history items"


def test_a_result_first_in_the_history_names_its_tool_among_the_tools_there_are() -> None:
    """A result whose call was compacted away can be item 0: its tool is named too."""
    history = [ToolResultItem("c9", "grep", "x", event_index=9), *_history()]
    with pytest.raises(ReplayError, match=re.escape(
            "no result of tool 'cat' (tools: grep, read_file, run_tests)")):
        _prune(history, Selector.parse("tool:cat"), 1)


def test_prune_tool() -> None:
    kept, detail = _prune(_history(), Selector.parse("tool:read_file"), 0)
    assert _outputs(kept) == ["UserItem", "AssistantItem", PLACEHOLDER, "AssistantItem",
                              "FAIL " * 10, PLACEHOLDER, "UserItem"]
    assert detail == "cleared 2 results of read_file"


@pytest.mark.parametrize(
    ("selector", "left"),
    [
        ("messages:0-0", [1, 2, 3, 4, 5, 6]),
        ("messages:2-2", [0, 3, 4, 5, 6]),  # a result takes its call along
        ("messages:1-1", [0, 3, 4, 5, 6]),  # a call takes its result along
        ("messages:5-5", [0, 1, 2, 6]),  # one of two parallel results: the call and both go
        ("messages:6-40", [0, 1, 2, 3, 4, 5]),  # B is clamped to the history
    ],
)
def test_prune_messages_keeps_calls_and_results_together(selector, left) -> None:
    history = _history()
    kept, detail = _prune(history, Selector.parse(selector), 0)
    assert [i.event_index for i in kept] == left
    dropped = len(history) - len(left)
    assert detail == f"dropped {dropped} history item{'s' if dropped != 1 else ''}"


def test_prune_messages_drops_a_result_whose_call_is_gone_alone() -> None:
    """A result whose call the history no longer holds (the call compacted away) has no call
    to take along: it goes alone, and the item where no call is stays."""
    history = _history()
    history.insert(1, ToolResultItem("c0", "read_file", "X" * 50, event_index=9))
    kept, detail = _prune(history, Selector.parse("messages:1-1"), 0)
    assert [i.event_index for i in kept] == [0, 1, 2, 3, 4, 5, 6]
    assert detail == "dropped 1 history item"


# --- the one-edit strategy ------------------------------------------------------------------


def _session():
    turns = [
        Turn(f"Step {i}.", [Call("read_file", {"path": f"src/f{i}.js"}, gen.filler(800, i))])
        for i in range(5)
    ]
    turns.append(Turn("Done."))
    return build_session(turns, provider="anthropic")


def test_whatif_prune_edits_once_and_then_appends() -> None:
    edit = whatif_strategy(3, Selector.parse("older-than:1"), False)
    assert edit.name == "whatif-prune-at-3"
    rows, records = breakeven_session(_session(), ["baseline", edit])
    base = [r for r in records if r.strategy == "baseline"]
    mine = [r for r in records if r.strategy == edit.name]
    assert len(base) == len(mine) == 6
    for b, m in zip(base[:3], mine[:3], strict=True):  # as recorded before the edit
        assert _outputs(m.view) == _outputs(b.view) and not m.events
        assert m.cost_usd == b.cost_usd
    edited = mine[3]
    assert [e.kind for e in edited.events] == ["prune"]
    assert _outputs(edited.view).count(PLACEHOLDER) == 2 and edited.diff.is_break
    for prev, cur in zip(mine[3:], mine[4:], strict=False):  # frozen, then append-only
        assert not cur.events and not cur.diff.is_break
        assert _outputs(cur.view)[: len(prev.view)] == _outputs(prev.view)
        assert _outputs(cur.view).count(PLACEHOLDER) == 2
    assert [(r.strategy, r.request_index) for r in rows] == [(edit.name, 3)]


def test_an_item_is_named_by_its_event_from_one_view_to_the_next() -> None:
    """An edit names what it cleared or dropped by log event, event 0 (the task) included: two
    objects standing for the same event are the same item to it (a view may be rebuilt)."""
    from replay.breakeven._whatif import _key

    assert _key(UserItem("fix it", event_index=0)) == _key(UserItem("fix it", event_index=0))
    one, other = UserItem("x"), UserItem("x")
    assert _key(one) != _key(other)  # no event: the object itself


def test_whatif_compact_s_summary_names_the_events_it_replaced() -> None:
    """Compacting at request 3 replaces the task (event 0) and steps 0 and 1 (their answers
    and results, events 2-3 and 5-6; 1, 4 and 7 are request markers), not the current step (8-9).
    After the log's own compaction, the agent's summary is replaced with what it replaced."""
    edit = whatif_strategy(3, None, True)
    _, records = breakeven_session(_session(), [edit])
    summary = _requests_of(records, edit.name)[3].view[0]
    assert isinstance(summary, SummaryItem) and summary.replaces == (0, 2, 3, 5, 6)
    edit = whatif_strategy(8, None, True)
    _, records = breakeven_session(_compacted_session(), ["recorded", edit])
    ref, mine = _requests_of(records, "recorded")[8].view, _requests_of(records, edit.name)[8].view
    agents, rest = ref[0], ref[1:-2]  # the last two items are the current step
    assert isinstance(agents, SummaryItem) and agents.replaces
    expected = (*agents.replaces, *(i.event_index for i in rest))
    assert mine[0].replaces == expected


def test_whatif_compact_replaces_the_history_with_one_summary() -> None:
    edit = whatif_strategy(3, None, True)
    assert edit.name == "whatif-compact-at-3"
    rows, records = breakeven_session(_session(), [edit])
    mine = [r for r in records if r.kind == "request"]
    summarizers = [r for r in records if r.kind == "summarizer"]
    assert [r.request_index for r in summarizers] == [3]
    edited = mine[3]
    assert [e.kind for e in edited.events] == ["compaction"]
    assert type(edited.view[0]).__name__ == "SummaryItem"
    assert edited.view_items < mine[2].view_items
    assert not mine[4].diff.is_break and not mine[5].diff.is_break
    assert [r.event for r in rows] == ["compaction"]


def test_whatif_compact_s_summarizer_is_sent_what_the_summary_replaces() -> None:
    """The summarizer call is sent the items its summary replaces, then the instruction: not
    the current step, which the compacted request still sends as it is."""
    from replay.strategies._summary import STRUCTURED_INSTRUCTION

    edit = whatif_strategy(3, None, True)
    _, records = breakeven_session(_session(), [edit])
    summary = _requests_of(records, edit.name)[3].view[0]
    call = next(r for r in records if r.kind == "summarizer")
    *sent, instruction = call.view
    assert tuple(i.event_index for i in sent) == summary.replaces == (0, 2, 3, 5, 6)
    assert instruction.text == STRUCTURED_INSTRUCTION


def test_whatif_compact_s_summarizer_is_sent_what_compact_at_s_is() -> None:
    """As `compact-at`'s summarizer (docs/strategies.md: output_chars=1500, argument_chars=200),
    each tool output is cut to 1,500 characters and each call's arguments to 200, where the
    summary's stand-in is made from the whole items. It was sent the replaced items whole: a
    3,000-character output cost twice what the library's compactions charge for it."""
    long_path = "src/" + "d" * 300 + ".js"
    turns = [Turn(f"Step {i}.", [Call("read_file", {"path": long_path}, gen.filler(3000, i))])
             for i in range(4)] + [Turn("Done.")]
    edit = whatif_strategy(3, None, True)  # replaces steps 0 and 1
    _, records = breakeven_session(build_session(turns, provider="anthropic"), [edit])
    call = next(r for r in records if r.kind == "summarizer")
    *sent, _ = call.view
    results = [i for i in sent if isinstance(i, ToolResultItem)]
    assert [i.output for i in results] == [
        gen.filler(3000, i)[:1500] + "\n…[truncated 1500 chars]" for i in range(2)]
    assert all(i.original_chars == 3000 for i in results)
    calls = [b for i in sent if isinstance(i, AssistantItem) for b in i.tool_calls]
    assert len(calls) == 2
    assert all(len(b.rendered()) == len("read_file()") + 200 + len("…") for b in calls)


def _threaded_session():
    """Requests in file order: 0-1 main, 2-4 a subagent's thread (spawned by request 1's call),
    5-7 main again."""
    sub = [
        Turn(f"Sub {i}.", [Call("read_file", {"path": f"lib/s{i}.js"}, gen.filler(800, 10 + i))])
        for i in range(2)
    ] + [Turn("Sub done.")]
    turns = [
        Turn("Step 0.", [Call("read_file", {"path": "src/f0.js"}, gen.filler(800, 0))]),
        Turn("Step 1.", [Call("task", {"prompt": "look around"}, "found it", subagent=sub)]),
        Turn("Step 2.", [Call("read_file", {"path": "src/f2.js"}, gen.filler(800, 2))]),
        Turn("Step 3.", [Call("read_file", {"path": "src/f3.js"}, gen.filler(800, 3))]),
        Turn("Done."),
    ]
    return build_session(turns, provider="anthropic")


@pytest.mark.parametrize(
    ("at", "compact", "thread"),
    [(4, False, "sub-call-002"), (3, True, "sub-call-002"), (6, False, "main"), (1, True, "main")],
)
def test_whatif_edits_one_request_of_one_thread(at, compact, thread) -> None:
    """`at` numbers the requests of the whole log (file order, every thread): the edit is made
    at that request only, in its thread. Each thread's strategy used to edit at the thread's
    first request >= `at`: two edits (a subagent before `at` and main after it), and an error
    where a later thread's first request had nothing to compact."""
    session = _threaded_session()
    edit = whatif_strategy(at, None if compact else Selector.parse("older-than:0"), compact)
    rows, records = breakeven_session(session, ["baseline", edit])
    base = [r for r in records if r.strategy == "baseline" and r.kind == "request"]
    mine = [r for r in records if r.strategy == edit.name and r.kind == "request"]
    assert [r.thread for r in mine].count("sub-call-002") == 3 and len(mine) == 8
    assert [(r.request_index, r.thread) for r in mine if r.events] == [(at, thread)]
    assert [(r.request_index, r.thread) for r in rows] == [(at, thread)]
    for b, m in zip(base, mine, strict=True):  # every other thread is sent as recorded
        if m.thread != thread:
            assert _outputs(m.view) == _outputs(b.view) and m.cost_usd == b.cost_usd
    summarizers = [r.request_index for r in records if r.kind == "summarizer"]
    assert summarizers == ([at] if compact else [])


def test_whatif_at_the_first_request_of_a_thread_has_nothing_to_compact() -> None:
    with pytest.raises(ReplayError, match=r"--compact-at 2: nothing to compact at request 2 "
                       r"\(no model answer before it in its thread\)"):
        breakeven_session(_threaded_session(), [whatif_strategy(2, None, True)])


CLAUDE_VIEWER = (SAMPLES / "claude_code" /
                 "d-kimuson__claude-code-viewer__mock-global-claude-dir_projects_sample-project_"
                 "5c0375b4.jsonl")


@pytest.mark.skipif(not CLAUDE_VIEWER.is_file(), reason=f"real sample not found: {CLAUDE_VIEWER}")
@pytest.mark.parametrize(
    ("at", "prune"),
    [
        (10, "tool:Bash"),  # "saves $0.021567" beside a row of net -$0.000832
        (0, "messages:0-0"),  # a thread's first request: no row ("no rewrite") before
        (17, "tool:Read"),  # clears only what request 17 adds: no prefix break, no row before
    ],
)
def test_whatif_row_on_a_log_with_subagents_is_the_whole_difference(at, prune) -> None:
    result = whatif(CLAUDE_VIEWER, at=at, prune=prune)
    costs = dict(zip(result["summary"]["strategy"], result["summary"]["cost_usd"], strict=True))
    row = result["breakeven"].row(0, named=True)
    assert row["simulated_net_usd"] == costs["recorded"] - costs[f"whatif-prune-at-{at}"]
    if at == 0:
        assert row["surviving_tokens"] == 0  # nothing of its thread was cached before it


@pytest.mark.skipif(not CLAUDE_VIEWER.is_file(), reason=f"real sample not found: {CLAUDE_VIEWER}")
@pytest.mark.parametrize(("at", "thread"), [(1, "main"), (6, "main"), (8, "sidechain-83e2917c")])
def test_whatif_on_a_log_with_subagents_edits_once(at, thread) -> None:
    """Claude Code viewer sample 5c0375b4: requests 3-5 and 7-13 are two Task subagents'
    threads. `--compact-at 1..7` was refused there (a subagent's first request had nothing to
    compact) and `--compact-at 8` compacted both the subagent at 8 and main at 14."""
    result = whatif(CLAUDE_VIEWER, at=at, compact=True)
    rows = result["breakeven"]
    assert list(zip(rows["request_index"], rows["thread"], strict=True)) == [(at, thread)]


# --- the API --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pruned():
    return whatif(RUN42, at=8, prune="older-than:3")


def test_api_prune(pruned) -> None:
    assert pruned["edit"] == "whatif-prune-at-8"
    assert pruned["reference"] == "recorded"
    summary = pruned["summary"]
    assert summary["strategy"].to_list() == ["recorded", "whatif-prune-at-8"]
    assert summary["requests"].to_list() == [RUN42_REQUESTS, RUN42_REQUESTS]
    costs = dict(zip(summary["strategy"], summary["cost_usd"], strict=True))
    assert costs["recorded"] > 0 and costs["whatif-prune-at-8"] != costs["recorded"]
    be = pruned["breakeven"].to_dicts()
    assert len(be) == 1
    row = be[0]
    assert (row["strategy"], row["request_index"], row["event"]) == ("whatif-prune-at-8", 8,
                                                                     "prune")
    assert row["removed_tokens"] > 0 and row["surviving_tokens"] > 0
    # Same run before the edit, and no payback before the log ends: the simulation's net is
    # the whole difference.
    assert row["breakeven_simulated"] is None
    assert row["horizon"] == RUN42_REQUESTS - 8
    assert row["simulated_net_usd"] == costs["recorded"] - costs["whatif-prune-at-8"] < 0


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_prune_that_pays_back_is_followed_to_the_end_of_the_log(provider) -> None:
    """The net of a rewrite is its saving over the whole horizon, also after it paid back:
    for one edit in place, the horizon is the rest of the log and the net is the run's whole
    difference (it was cut at the payback: "net $0.0007 (3)" beside "saves $0.0036")."""
    turns = [
        Turn(f"step {i}", [Call("read_file", {"path": f"f{i}.py"}, gen.filler(9000, i))])
        for i in range(11)
    ] + [Turn("done")]
    session = build_session(turns, provider=provider)
    result = whatif(session, at=6, prune="older-than:2")
    costs = dict(zip(result["summary"]["strategy"], result["summary"]["cost_usd"], strict=True))
    row = result["breakeven"].row(0, named=True)
    assert row["breakeven_simulated"] is not None and row["breakeven_simulated"] < 5
    assert row["horizon"] == len(turns) - 6
    assert row["simulated_net_usd"] == costs["recorded"] - costs["whatif-prune-at-6"] > 0


@pytest.mark.parametrize(
    ("at", "prune"),
    [
        (8, "older-than:0"),  # the result request 8 adds is cleared too
        (3, "older-than:0"),
        (5, "tool:read_file"),
    ],
)
def test_the_edit_s_row_is_the_whole_difference_with_the_run_it_edits(at, prune) -> None:
    """The counterfactual of the edit is the recorded run itself: its net is the headline's
    difference, also when the edit touches what request AT adds (the row used to keep that
    cleared in its "without the edit" run: net -$0.000568 beside "costs $0.000409"), and the
    row exists where the edit broke no earlier prefix ("no rewrite" was captioned)."""
    result = whatif(RUN42, at=at, prune=prune)
    costs = dict(zip(result["summary"]["strategy"], result["summary"]["cost_usd"], strict=True))
    row = result["breakeven"].row(0, named=True)
    assert row["request_index"] == at
    assert row["horizon"] == RUN42_REQUESTS - at  # to the end of the log
    assert row["simulated_net_usd"] == costs["recorded"] - costs[f"whatif-prune-at-{at}"]


def test_api_compact() -> None:
    result = whatif(RUN42, at=9, compact=True)
    assert result["edit"] == "whatif-compact-at-9"
    costs = dict(zip(result["summary"]["strategy"], result["summary"]["cost_usd"], strict=True))
    row = result["breakeven"].row(0, named=True)
    assert (row["request_index"], row["event"]) == (9, "compaction")
    # Sent cut, as compact-at's summarizer is: like compact-at's on this log (0 at each of its
    # compactions), it parts from the cached prompts before their breakpoints.
    assert row["summarizer_cost_usd"] > 0 and row["summarizer_cache_read"] == 0
    assert "summary cost" in row["disagreement"]
    assert row["breakeven_simulated"] is None  # the summary is never paid back on this log
    assert row["simulated_net_usd"] == costs["recorded"] - costs["whatif-compact-at-9"] < 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"at": 8}, "give exactly one of"),
        ({"at": 8, "prune": "older-than:3", "compact": True}, "give exactly one of"),
        ({"at": 8, "prune": "older-than"}, "bad --prune selector"),
        ({"at": RUN42_REQUESTS, "prune": "older-than:3"}, r"--at 14 is outside .*\(0\.\.13\)"),
        ({"at": -1, "prune": "older-than:3"}, "--at -1 is outside"),
        ({"at": 99, "compact": True}, "--compact-at 99 is outside"),
    ],
)
def test_api_errors(kwargs, message) -> None:
    with pytest.raises(ReplayError, match=message):
        whatif(RUN42, **kwargs)


# --- the command ----------------------------------------------------------------------------


def _doc(result) -> dict:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout, parse_float=Decimal)


def test_cli_prune_json(invoke, pruned) -> None:
    doc = _doc(invoke("whatif", RUN42, "--at", "8", "--prune", "older-than:3", "--format",
                      "json"))
    assert set(doc) == {"log", "edit", "reference", "cost_usd", "reference_cost_usd",
                        "delta_usd", "notes", "summary", "breakeven"}
    assert (doc["edit"], doc["reference"]) == ("whatif-prune-at-8", "recorded")
    assert doc["delta_usd"] == doc["cost_usd"] - doc["reference_cost_usd"]
    costs = {r["strategy"]: r["cost_usd"] for r in doc["summary"]}
    assert costs == {"recorded": doc["reference_cost_usd"], "whatif-prune-at-8": doc["cost_usd"]}
    api_costs = dict(zip(pruned["summary"]["strategy"], pruned["summary"]["cost_usd"],
                         strict=True))
    assert costs == api_costs  # the command prints what the API computes
    [row] = doc["breakeven"]
    assert row["request_index"] == 8 and row["event"] == "prune"
    assert {"first_edit_token", "removed_tokens", "surviving_tokens", "rewrite_cost_usd",
            "saving_per_request_usd", "breakeven_closed_form", "breakeven_simulated"} <= set(row)


def test_cli_prune_table(invoke) -> None:
    doc = _doc(invoke("whatif", RUN42, "--at", "8", "--prune", "older-than:3", "--format",
                      "json"))
    result = invoke("whatif", RUN42, "--at", "8", "--prune", "older-than:3", "-q")
    assert result.exit_code == 0, result.stderr
    delta = doc["delta_usd"]
    verdict = "saves" if delta < 0 else "costs"
    last = result.stdout.strip().splitlines()[-1]
    assert last == f"The edit {verdict} ${abs(delta):.6f} vs recorded over this log."
    assert "whatif-prune-at-8" in result.stdout and "break-even of the edit" in result.stdout


def test_cli_table_written_to_output_file(invoke, tmp_path) -> None:
    # `-o` with the table format used to print to the terminal and write nothing.
    args = ("whatif", RUN42, "--at", "8", "--prune", "older-than:3", "-q")
    printed = invoke(*args)
    out = tmp_path / "whatif.txt"
    written = invoke(*args, "-o", str(out))
    assert written.exit_code == 0, written.stderr
    assert written.stdout == ""
    assert out.read_text() == printed.stdout


def test_cli_compact_json(invoke) -> None:
    doc = _doc(invoke("whatif", RUN42, "--compact-at", "9", "--format", "json"))
    assert doc["edit"] == "whatif-compact-at-9"
    [row] = doc["breakeven"]
    assert row["event"] == "compaction" and row["summarizer_cost_usd"] > 0
    assert doc["delta_usd"] == doc["cost_usd"] - doc["reference_cost_usd"] > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--at", "8", "--prune", "bogus"], "error: bad --prune selector 'bogus'"),
        (["--at", "8", "--prune", ""], "error: bad --prune selector ''"),  # was a traceback
        (["--at", "8", "--prune", "older-than:x"], "error: bad --prune selector"),
        (["--at", "8", "--prune", "messages:3"], "error: bad --prune selector"),
        (["--at", "14", "--prune", "older-than:3"],
         "error: --at 14 is outside the log's requests (0..13)"),
        (["--at", "-1", "--prune", "older-than:3"], "error: --at -1 is outside"),
        (["--compact-at", "14"], "error: --compact-at 14 is outside the log's requests"),
        (["--compact-at", "0"], "error: --compact-at 0: nothing to compact at request 0"),
        (["--at", "8", "--prune", "messages:0-99999"],
         "error: --prune messages:0-99999 removes every one of the"),
        (["--at", "8", "--prune", "tool:nosuch"],
         "error: --prune tool:nosuch matches nothing at request 8"),
        (["--at", "8", "--prune", "messages:5-2"], "error: bad --prune selector 'messages:5-2'"),
        (["--at", "8", "--prune", "older-than:-3"], "error: bad --prune selector 'older-than:-3'"),
    ],
)
def test_cli_errors_are_one_line(invoke, args, message) -> None:
    result = invoke("whatif", RUN42, *args, "--format", "json")
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--at", "3"], "give either --at REQUEST --prune SELECTOR or --compact-at REQUEST"),
        (["--prune", "older-than:3"], "--prune needs --at REQUEST"),
        (["--at", "3", "--compact-at", "3", "--prune", "tool:x"], "give either"),
        (["--compact-at", "9", "--at", "3"], "--compact-at names its own request"),  # not ignored
    ],
)
def test_cli_needs_exactly_one_edit(invoke, args, says) -> None:
    result = invoke("whatif", RUN42, *args)
    assert result.exit_code == 2
    assert says in result.stderr and "Traceback" not in result.stderr


def test_cli_ttl_provider_and_model(invoke) -> None:
    base = ["whatif", RUN42, "--at", "8", "--prune", "older-than:3", "--format", "json"]
    default = _doc(invoke(*base))
    other = _doc(invoke(*base, "--provider", "openai", "--model", "gpt-5"))
    claude = _doc(invoke(*base, "--provider", "anthropic", "--model", "claude-sonnet-4-5"))
    claude_1h = _doc(invoke(*base, "--provider", "anthropic", "--model", "claude-sonnet-4-5",
                            "--ttl", "1h"))
    assert default["reference_cost_usd"] != other["reference_cost_usd"]
    assert other["reference_cost_usd"] != claude["reference_cost_usd"]
    # Same writes, dearer at the 1h rate (2× input instead of 1.25×).
    assert claude_1h["reference_cost_usd"] > claude["reference_cost_usd"]
    written = {r["strategy"]: r["cache_write_tokens"] for r in claude["summary"]}
    assert written == {r["strategy"]: r["cache_write_tokens"] for r in claude_1h["summary"]}
    assert all(n > 0 for n in written.values())
    for doc in (default, other, claude, claude_1h):
        assert doc["delta_usd"] == doc["cost_usd"] - doc["reference_cost_usd"]
    api = whatif(RUN42, at=8, prune="older-than:3", provider="openai", model="gpt-5")
    assert dict(zip(api["summary"]["strategy"], api["summary"]["cost_usd"], strict=True)) == {
        r["strategy"]: r["cost_usd"] for r in other["summary"]
    }
    bad = invoke(*base, "--ttl", "2h")
    assert bad.exit_code == 2


def _compacted_session():
    """Ten read steps (requests 0-9) whose log compacted everything before request 4 (the
    summary sent as the user's, as Claude Code does), and request 1's result cleared by the
    harness from request 2 on (opencode's pruning)."""
    from replay.log import Compaction, RequestMarker, ToolResult

    turns = [
        Turn(f"Step {i}.", [Call("read_file", {"path": f"src/f{i}.js"}, gen.filler(3000, i))])
        for i in range(9)
    ] + [Turn("Done.")]
    session = build_session(turns, provider="anthropic")
    markers = {e.request_id: n for n, e in enumerate(session.events)
               if isinstance(e, RequestMarker)}
    results = [n for n, e in enumerate(session.events) if isinstance(e, ToolResult)]
    cleared = session.events[results[1]]
    session.events[results[1]] = cleared.model_copy(
        update={"cleared_at": session.events[markers["req-003"]].ts})
    at = markers["req-005"]
    replaced = [e.id for e in session.events[:at] if not isinstance(e, RequestMarker)]
    session.events.insert(at, Compaction(ts=session.events[at].ts,
                                         summary="THE AGENT'S SUMMARY", replaces=replaced))
    return session


def _requests_of(records, name):
    return [r for r in records if r.strategy == name and r.kind == "request"]


def test_whatif_edits_the_recorded_run_and_a_later_logged_compaction_ends_the_edit() -> None:
    """The edit is made to what the agent sent (`recorded`), not to the raw history: before the
    log's compaction at request 4 the prune shows, from there on both runs send the same. It
    used to prune the raw history and never compact, so the what-if was the whole history's
    cost (on entire-bmad, a 210k peak against recorded's 165k, and the headline's sign wrong)."""
    edit = whatif_strategy(3, Selector.parse("older-than:1"), False)
    rows, records = breakeven_session(_compacted_session(), ["recorded", edit])
    ref, mine = _requests_of(records, "recorded"), _requests_of(records, edit.name)
    # The logged compaction is a rewrite of both runs; the what-if's own is the prune at 3.
    assert [(r.strategy, r.request_index, r.event) for r in rows] == [
        ("recorded", 4, "compaction"), (edit.name, 3, "prune"), (edit.name, 4, "compaction")]
    # Request 1's result was cleared by the harness at 2: not cleared again (1 of 2 older).
    assert [e.detail for e in mine[3].events] == ["cleared 1 tool result older than 1"]
    for r, m in zip(ref, mine, strict=True):
        if r.request_index != 3:
            assert _outputs(m.view) == _outputs(r.view) and m.cost_usd == r.cost_usd
        else:
            assert _outputs(m.view).count(PLACEHOLDER) == 2
    assert any(isinstance(i, SummaryItem) and "THE AGENT'S SUMMARY" in i.text
               for i in mine[4].view)


def test_whatif_after_a_logged_compaction_edits_the_compacted_run() -> None:
    """Item 0 of request 6 is the agent's summary: the what-if drops it there and after."""
    edit = whatif_strategy(6, Selector.parse("messages:0-0"), False)
    _, records = breakeven_session(_compacted_session(), ["recorded", edit])
    ref, mine = _requests_of(records, "recorded"), _requests_of(records, edit.name)
    assert isinstance(ref[6].view[0], SummaryItem)
    assert [type(i) for i in mine[6].view] == [type(i) for i in ref[6].view[1:]]
    for r, m in zip(ref[6:], mine[6:], strict=True):  # the summary stays dropped
        assert m.outcome.prompt < r.outcome.prompt
        assert not any(isinstance(i, SummaryItem) for i in m.view)
    assert max(m.outcome.prompt for m in mine) <= max(r.outcome.prompt for r in ref)


def test_whatif_keeps_the_recorded_run_s_own_rewrite_at_the_request_it_edits() -> None:
    """At request 2 the harness cleared request 1's result (a logged prune of `recorded`): the
    edited request reports both that rewrite and the edit made there."""
    edit = whatif_strategy(2, Selector.parse("older-than:0"), False)
    _, records = breakeven_session(_compacted_session(), ["recorded", edit])
    ref, mine = _requests_of(records, "recorded"), _requests_of(records, edit.name)
    logged = ("prune", "logged prune: cleared 1 tool result")
    assert [(e.kind, e.detail) for e in ref[2].events] == [logged]
    assert [(e.kind, e.detail) for e in mine[2].events] == [
        logged, ("prune", "cleared 1 tool result older than 0")]


def _cleared_session(held: bool = True):
    """Five results, requests 0-5: grep's first the log holds as the placeholder (as Claude
    Code's microcompact leaves it; `held=False`: the harness cleared it too), its second the
    harness cleared from request 2 on (`cleared_at`, opencode's pruning); read_file's three,
    the middle one held as the placeholder by the log."""
    from replay.log import RequestMarker, ToolResult

    outputs = [("grep", PLACEHOLDER if held else gen.filler(900, 0)),
               ("grep", gen.filler(900, 1)), ("read_file", gen.filler(900, 2)),
               ("read_file", PLACEHOLDER), ("read_file", gen.filler(900, 4))]
    turns = [Turn(f"Step {n}.", [Call(tool, {"path": f"f{n}"}, out)])
             for n, (tool, out) in enumerate(outputs)] + [Turn("Done.")]
    session = build_session(turns, provider="anthropic")
    at = next(e.ts for e in session.events
              if isinstance(e, RequestMarker) and e.request_id == "req-003")
    results = [n for n, e in enumerate(session.events) if isinstance(e, ToolResult)]
    for n in results[:2] if not held else results[1:2]:
        session.events[n] = session.events[n].model_copy(update={"cleared_at": at})
    return session


@pytest.mark.parametrize(
    ("selector", "detail"),
    [
        # r2 and r4: not r3, which the log holds cleared (it counted 3), nor r1, the harness's
        ("tool:read_file", "cleared 2 results of read_file"),
        ("older-than:0", "cleared 2 tool results older than 0"),  # it counted 4
        ("older-than:1", "cleared 1 tool result older than 1"),  # r2 (it counted 3)
    ],
)
def test_whatif_counts_only_the_results_its_edit_changed(selector, detail) -> None:
    """"Cleared N" counts the results the edit changed: a result already the placeholder at
    request AT, cleared by the harness or held so by the log, is neither cleared again nor
    counted, nor counted among the newer results `older-than:K` keeps."""
    edit = whatif_strategy(5, Selector.parse(selector), False)
    _, records = breakeven_session(_cleared_session(), ["recorded", edit])
    ref, mine = _requests_of(records, "recorded")[5], _requests_of(records, edit.name)[5]
    assert [e.detail for e in mine.events if not e.detail.startswith("logged")] == [detail]
    changed = sum(a != b for a, b in zip(_outputs(ref.view), _outputs(mine.view), strict=True))
    assert changed == int(detail.split()[1])


@pytest.mark.parametrize(
    ("held", "at", "items", "why"),
    [
        # one held as the placeholder by the log, one cleared by the harness from request 2
        (True, 5, 11, "2 results of tool 'grep', all already cleared in the log"),
        (True, 1, 3, "1 result of tool 'grep', all already cleared in the log"),
        (False, 5, 11, "2 results of tool 'grep', all already cleared in the log"),  # harness's
    ],
)
def test_a_tool_whose_results_were_all_cleared_says_so(held, at, items, why) -> None:
    """`tool:grep` where every grep result is already cleared is an error saying so: it cleared
    the placeholder again and called that an edit (where the log held it), or said "no result of
    tool 'grep'" and listed the tools without it (where the harness had cleared them all)."""
    with pytest.raises(ReplayError, match=re.escape(
            f"--prune tool:grep matches nothing at request {at} ({items} history items): {why}")):
        breakeven_session(_cleared_session(held),
                          [whatif_strategy(at, Selector.parse("tool:grep"), False)])


def test_older_than_past_the_results_left_says_how_many_were_cleared() -> None:
    with pytest.raises(ReplayError, match=re.escape(
            "only 2 tool results not already cleared (3 more were), none older than 2")):
        breakeven_session(_cleared_session(),
                          [whatif_strategy(5, Selector.parse("older-than:2"), False)])


def test_whatif_compact_where_the_agent_compacted_is_an_error() -> None:
    with pytest.raises(ReplayError, match=r"--compact-at 4: the agent compacted right before "
                       r"request 4 \(the recorded run sends its own summary there\)"):
        breakeven_session(_compacted_session(), [whatif_strategy(4, None, True)])


def test_whatif_compact_summarises_the_agent_s_summary_too() -> None:
    """After the log's compaction, what the what-if compacts starts with the agent's summary."""
    edit = whatif_strategy(8, None, True)
    _, records = breakeven_session(_compacted_session(), ["recorded", edit])
    ref, mine = _requests_of(records, "recorded"), _requests_of(records, edit.name)
    call = next(r for r in records if r.kind == "summarizer")
    assert call.request_index == 8
    edited = mine[8].view
    assert isinstance(edited[0], SummaryItem) and edited[0].source == "extractive"
    assert _outputs(edited[1:]) == _outputs(ref[8].view[-2:])
    assert _outputs(mine[9].view)[:3] == _outputs(edited)


def test_the_edit_s_row_runs_to_the_end_of_its_thread_past_a_later_logged_compaction() -> None:
    """The edit's counterfactual is the run it edits, to the end of the thread: a later
    compaction of the log's, a structural rewrite of both runs, does not end the comparison
    there (a strategy's own compaction does end its rewrites' comparisons). From request 3 on:
    7 requests, and the net is the whole difference between the two runs."""
    edit = whatif_strategy(3, Selector.parse("older-than:1"), False)
    rows, records = breakeven_edit(_compacted_session(), resolve("recorded")[0], edit, 3)
    [row] = rows
    ref, mine = _requests_of(records, "recorded"), _requests_of(records, edit.name)
    assert len(ref) == len(mine) == 10 and mine[4].events  # the log's compaction at 4
    assert row.horizon == 10 - 3
    assert "a later rewrite ended the comparison" not in row.disagreement
    assert row.simulated_net_usd == sum(r.cost_usd for r in ref) - sum(r.cost_usd for r in mine)


def test_an_edit_the_log_s_compaction_undoes_says_so_instead_of_the_log_ending() -> None:
    """The prune at 3 clears request 2's result; the log's compaction at request 4 replaces
    every event before it, the pruned results included: from 4 on both runs send the same view,
    the edit can save nothing more. Its row said "log ended before payback" (6 requests before
    the log ended) where the comparison had nothing left to compare after request 4."""
    edit = whatif_strategy(3, Selector.parse("older-than:1"), False)
    [row], _ = breakeven_edit(_compacted_session(), resolve("recorded")[0], edit, 3)
    assert row.breakeven_simulated is None
    assert "both runs send the same view from request 4 on (the log's compaction there " \
        "replaced what the edit touched)" in row.disagreement
    assert "log ended before payback" not in row.disagreement


def test_an_edit_at_a_thread_s_first_request_starts_where_it_parts_from_the_recorded_one(
    tmp_path,
) -> None:
    """Request 0 sends the task and a long note; the what-if drops the note (the last item):
    the edited prompt is the recorded one cut before the note, so the first token that changed
    is the edited prompt's own length, not 0 (no previous request to part from). (At 0, on
    entire-bmad the row said the 6,499 tokens read from an earlier session's cache, the head,
    lay "past the edit".)"""
    from replay.log import read_log

    t0 = gen.BASE_TS.isoformat()
    lines = [
        {"type": "session", "format": "replay-log", "version": 1, "ts": t0, "session_id": "s",
         "agent": "test", "provider": "anthropic", "model": "claude-sonnet-4-5",
         "system": "You are a coding agent. " + gen.filler(3000, 1)},
        {"type": "user", "ts": t0, "text": "Fix the bug."},
        {"type": "user", "ts": t0, "text": "Note: " + gen.filler(2000, 2)},
        {"type": "request", "ts": t0, "request_id": "r0"},
        {"type": "assistant", "ts": t0, "request_id": "r0", "blocks": [
            {"type": "text", "text": "On it."}]},
        {"type": "user", "ts": t0, "text": "Thanks."},
        {"type": "request", "ts": t0, "request_id": "r1"},
        {"type": "assistant", "ts": t0, "request_id": "r1", "blocks": [
            {"type": "text", "text": "Done."}]},
    ]
    path = tmp_path / "first.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    edit = whatif_strategy(0, Selector.parse("messages:1-1"), False)
    [row], records = breakeven_edit(read_log(path), resolve("recorded")[0], edit, 0)
    ref, mine = _requests_of(records, "recorded"), _requests_of(records, edit.name)
    assert 0 < mine[0].request.total < ref[0].request.total
    assert row.first_edit_token == mine[0].request.total


def test_an_edit_that_has_not_paid_back_when_the_log_ends_says_so() -> None:
    """Without a later compaction of the log's, the two runs never send the same view again
    (the edit is made at every later request): an edit that has not paid back when the log
    ends says the log ended, not that both runs sent the same view."""
    turns = [Turn(f"step {i}", [Call("read_file", {"path": f"f{i}.py"}, gen.filler(3_000, i))])
             for i in range(5)] + [Turn("done")]
    session = build_session(turns, provider="anthropic")
    at = 4  # one request after it: the re-billed suffix is not paid back by then
    edit = whatif_strategy(at, Selector.parse("older-than:3"), False)
    [row], _ = breakeven_edit(session, resolve("recorded")[0], edit, at)
    assert row.horizon == 2 and row.breakeven_simulated is None
    assert "log ended before payback" in row.disagreement
    assert "same view" not in row.disagreement


def _late_compaction_session(keep_from: int, at: int = 8):
    """Ten read steps (requests 0-9); right before request `at` the log compacts every event
    before request `keep_from` (its first kept item: that request's answer)."""
    from replay.log import Compaction, RequestMarker

    turns = [
        Turn(f"Step {i}.", [Call("read_file", {"path": f"src/f{i}.js"}, gen.filler(3000, i))])
        for i in range(9)
    ] + [Turn("Done.")]
    session = build_session(turns, provider="anthropic")
    markers = [n for n, e in enumerate(session.events) if isinstance(e, RequestMarker)]
    replaced = [e.id for e in session.events[: markers[keep_from]]]
    session.events.insert(markers[at], Compaction(ts=session.events[markers[at]].ts,
                                                  summary="THE LOG'S SUMMARY", replaces=replaced))
    return session


def _summaries(view):
    return [i.source for i in view if isinstance(i, SummaryItem)]


def test_a_logged_compaction_of_part_of_what_compact_at_dropped_sends_one_summary() -> None:
    """`--compact-at 5` replaces the task and steps 0-3 (it keeps step 4, the current one);
    at request 8 the log compacts the task and steps 0-1 and keeps from step 2's answer on,
    which the what-if had dropped: its place in the edited context is the what-if's summary,
    the first item, so the edited context held nothing for that compaction to replace. The
    edited run sent both summaries (the log's, then the what-if's); it sends the what-if's
    alone, append-only through the log's compaction."""
    edit = whatif_strategy(5, None, True)
    _, records = breakeven_session(_late_compaction_session(keep_from=2), ["recorded", edit])
    ref, mine = _requests_of(records, "recorded"), _requests_of(records, edit.name)
    assert [_summaries(r.view) for r in ref[7:]] == [[], ["logged"], ["logged"]]
    assert [_summaries(m.view) for m in mine[5:]] == [["extractive"]] * 5
    for prev, cur in zip(mine[7:], mine[8:], strict=False):
        assert cur.view[: len(prev.view)] == prev.view and not cur.diff.is_break
    assert mine[8].outcome.prompt < ref[8].outcome.prompt


@pytest.mark.parametrize("keep_from", [4, 6])
def test_a_logged_compaction_that_keeps_from_what_compact_at_kept_ends_the_edit(
    keep_from,
) -> None:
    """Kept from step 4's answer (the what-if's first kept item: the log replaced exactly what
    the what-if dropped) or from step 6's: the what-if's summary sits before that item and is
    replaced with the rest, so from request 8 both runs send the log's summary and the same
    view."""
    edit = whatif_strategy(5, None, True)
    _, records = breakeven_session(_late_compaction_session(keep_from), ["recorded", edit])
    ref, mine = _requests_of(records, "recorded"), _requests_of(records, edit.name)
    assert _summaries(mine[7].view) == ["extractive"]
    for r, m in zip(ref[8:], mine[8:], strict=True):
        assert _summaries(m.view) == ["logged"]
        assert _outputs(m.view) == _outputs(r.view) and m.cost_usd == r.cost_usd
        assert m.view[0].text == r.view[0].text
        assert [i.event_index for i in m.view[1:]] == [i.event_index for i in r.view[1:]]


@pytest.mark.parametrize(
    ("selector", "keep_from", "sent"),
    [
        ("messages:0-4", 1, False),  # replaced the task and step 0, both dropped; kept step 1's
        ("messages:0-4", 2, False),  # replaced just what was dropped: nothing before step 2's
        ("messages:1-4", 1, True),  # the edited run still held the task it replaced
    ],
)
def test_a_logged_compaction_of_only_what_messages_dropped_is_not_sent(
    selector, keep_from, sent,
) -> None:
    """The same rule for a `messages:A-B` edit (no summary of its own): where the edited
    context held nothing before the log's first kept item's place, the log's summary is not
    sent; where it held something the log's compaction replaced, it is."""
    edit = whatif_strategy(5, Selector.parse(selector), False)
    _, records = breakeven_session(_late_compaction_session(keep_from), ["recorded", edit])
    mine = _requests_of(records, edit.name)
    assert [_summaries(m.view) for m in mine[8:]] == [["logged"] if sent else []] * 2
    if not sent:
        assert mine[8].view[: len(mine[7].view)] == mine[7].view


def test_a_logged_compaction_that_sends_its_summary_as_a_message_of_its_own_ends_the_edit(
) -> None:
    """Codex's way: the compaction keeps the task (a user message, which the what-if dropped)
    and replaces the rest, its summary a message of its own after it. It replaced what the
    edited run still held (steps 4-7): the what-if's summary goes with it. The edited run sent
    the what-if's summary and the log's; it sends the log's, without the task the what-if
    dropped."""
    from replay.log import Compaction, RequestMarker, UserMessage

    session = _late_compaction_session(keep_from=0, at=8)
    n = next(n for n, e in enumerate(session.events) if isinstance(e, Compaction))
    task = session.events[0].id
    replaced = [e.id for e in session.events[:n]
                if e.id != task and not isinstance(e, RequestMarker)]
    ts = session.events[n].ts
    session.events[n : n + 1] = [
        Compaction(ts=ts, summary="THE LOG'S SUMMARY", replaces=replaced, message=""),
        UserMessage(ts=ts, text="THE LOG'S SUMMARY"),
    ]
    edit = whatif_strategy(5, None, True)
    _, records = breakeven_session(session, ["recorded", edit])
    ref, mine = _requests_of(records, "recorded"), _requests_of(records, edit.name)
    assert _outputs(ref[8].view)[:2] == ["UserItem", "UserItem"]  # the task, the summary
    for r, m in zip(ref[8:], mine[8:], strict=True):
        assert not _summaries(m.view)
        assert [i.event_index for i in m.view] == [i.event_index for i in r.view[1:]]


def test_a_logged_compaction_that_replaced_nothing_sent_leaves_the_edit_as_it_is() -> None:
    """A compaction that names only a request marker replaced nothing either run sent:
    recorded sends its summary between items it kept, and the edited run sends it there too,
    beside the what-if's summary, which stays (nothing the edited context held was replaced).
    The one case where both summaries are sent; taken as the prefix rule would take it (its
    first kept item one the what-if kept), it ended the edit."""
    from replay.log import Compaction, RequestMarker

    session = _late_compaction_session(keep_from=0, at=8)
    n = next(n for n, e in enumerate(session.events) if isinstance(e, Compaction))
    marker = [e.id for e in session.events if isinstance(e, RequestMarker)][6]
    session.events[n] = session.events[n].model_copy(update={"replaces": [marker]})
    edit = whatif_strategy(5, None, True)
    _, records = breakeven_session(session, ["recorded", edit])
    ref, mine = _requests_of(records, "recorded"), _requests_of(records, edit.name)
    assert _summaries(ref[8].view) == ["logged"] and ref[8].view[0].kind != "summary"
    for m in mine[8:]:
        assert _summaries(m.view) == ["extractive", "logged"]
    first = mine[5].view[1].event_index  # the first item the what-if kept: step 4's answer
    k = next(n for n, i in enumerate(ref[8].view) if getattr(i, "event_index", -1) == first)
    assert _outputs(mine[8].view) == ["SummaryItem", *_outputs(ref[8].view[k:])]
