"""The harness strategy families' rules at their edges (OpenHands, Goose, Gemini CLI, OpenClaw,
Cline, Roo, Aider, the server-side ones): thresholds, counts and defaults on small hand-made
histories, each expected value worked out by hand from the rule the family's docstring states
(a hand mutation pass: each test fails on a mutant the rest of the suite let through)."""

from __future__ import annotations

from test_strategy_library import History, build, ctx, view_of

from replay.strategies import SummaryItem


def test_openhands_recent_sends_the_newest_item_when_the_head_takes_every_allowed_event():
    """keep_first 2 (the system prompt and the task) with max_events 1: the tail still holds
    the newest event, never nothing. Task, a read, its result, a new prompt: 1 + 4 = 5 events;
    the view is the task and the new prompt, the read's call and result (2 events) forgotten."""
    h = History().user("task").step(("read_file", {"path": "a.py"}, "x")).user("latest")
    view = view_of(build("openhands-recent-keep-first-2-max-1")(h.items, ctx()))
    assert view.items == [h.items[0], h.items[3]]
    assert [e.detail for e in view.events] == ["2 events forgotten"]


def test_openhands_llm_summary_with_nothing_between_head_and_tail_changes_nothing():
    """keep_first 5 holds the system prompt, the task, the read's call and result and the
    second prompt; the tail is the newest event (5 // 2 - 5 - 1 < 1: at least one), the third
    prompt. Six events pass max_size 5, but no event lies between the two: no summary, no
    summarizer call, no rewrite."""
    h = History().user("task").step(("read_file", {"path": "a.py"}, "x")).user("u2").user("u3")
    view = view_of(
        build("openhands-llm-summary-120-keep-4", max_size=5, keep_first=5)(h.items, ctx())
    )
    assert view.items == h.items
    assert not view.events and not view.summarizer_calls


def test_openhands_llm_summary_reports_a_compaction_not_a_drop():
    """The summary replaces the middle: a compaction (what break-even reads as a summary), not a
    drop. Task and four exchanges with keep_first 1: 9 + 1 events pass max_size 5; the newest
    5 // 2 - 1 - 1 = 0 (at least 1) event stays, the eight before it are summarized."""
    h = History().user("task")
    for n in range(4):
        h.step(text=f"a{n}").user(f"u{n}")
    view = view_of(
        build("openhands-llm-summary-120-keep-4", max_size=5, keep_first=1)(h.items, ctx())
    )
    assert view.items[1:] == [h.items[-1]]
    assert [(e.kind, e.detail) for e in view.events] == [("compaction", "8 events → summary")]


def _read(path: str) -> tuple:
    return ("read_file", {"path": path}, "body")


def test_openhands_llm_attention_skips_a_step_past_the_budget_and_takes_a_lower_ranked_one():
    """Task, a read (2 events), three reads (6 events), a new prompt: 1 + 11 events pass
    max_size 10, a budget of 10 // 2 - 1 = 4 events. Ranked: the new prompt, the task, the
    three reads (newer), the one read. The three reads (6) would pass the budget and are
    skipped; the one read (2) still fits after them: 4 events kept."""
    h = (
        History()
        .user("task")
        .step(_read("a.py"))
        .step(_read("b.py"), _read("c.py"), _read("d.py"))
        .user("u2")
    )
    view = view_of(build("openhands-llm-attention-100", max_size=10)(h.items, ctx()))
    assert view.items == [*h.items[:3], h.items[-1]]
    assert [e.detail for e in view.events] == ["kept 4 ranked events"]


def test_openhands_llm_attention_ranks_an_old_user_message_above_a_newer_write():
    """Task, a write, two reads, a new prompt: 1 + 9 events pass max_size 8, a budget of
    8 // 2 - 1 = 3 events. User messages rank first (the new prompt, then the task, though it
    is older than the write); the write (2 events) no longer fits after them."""
    h = (
        History()
        .user("task")
        .step(("write_file", {"path": "a.py", "content": "x"}, "ok"))
        .step(_read("b.py"))
        .step(_read("c.py"))
        .user("u2")
    )
    view = view_of(build("openhands-llm-attention-100", max_size=8)(h.items, ctx()))
    assert view.items == [h.items[0], h.items[-1]]
    assert [e.detail for e in view.events] == ["kept 2 ranked events"]


def test_openhands_window_keeps_the_newest_event_when_it_is_the_only_other_one():
    """The task and a new prompt too large for the window: the other events are one, and
    half of one is still that one (max(1, …)); nothing can be dropped, so the request goes as
    it is, without a rewrite (dropping the new prompt would send the task alone)."""
    h = History().user("task").user("z " * 2000)
    view = view_of(build("openhands-window-on-overflow")(h.items, ctx(window=700)))
    assert view.items == h.items
    assert view.events == []


def test_goose_compaction_counts_the_items_it_summarizes_not_the_whole_history():
    """A second compaction summarizes what the agent sees: the first one's three messages
    (summary, continuation, last prompt) and the two new ones, not the six of the log."""
    h = History().user("first task").step(text="looking").step(text="done").user("second task")
    strategy = build("goose-compact-80pct")
    first = view_of(strategy(h.items, ctx(window=40_000, usage=32_001)))
    assert [e.detail for e in first.events] == ["4 items → summary"]
    h.step(text="done again").user("third task")
    second = view_of(strategy(h.items, ctx(window=40_000, usage=32_001)))
    assert [e.detail for e in second.events] == ["5 items → summary"]


def test_goose_compaction_re_sends_the_last_real_prompt_not_injected_context():
    """The text re-sent after the summary is the user's last prompt: context the harness
    injected after it (a reminder, workspace state) is summarized with the rest."""
    from replay.strategies import UserItem

    h = History().user("first task").step(text="done").user("second task")
    h.items.append(UserItem("<reminder>tests must pass</reminder>", injected=True, event_index=3))
    view = view_of(build("goose-compact-80pct")(h.items, ctx(window=40_000, usage=32_001)))
    assert view.items[-1].text == "second task"


def test_goose_tool_pairs_report_nothing_while_the_calls_are_within_the_cutoff():
    """Cutoff 2: three steps of one read each, the last one the current step (not counted):
    two visible calls, not over the cutoff; nothing summarized, no summarizer call, no
    rewrite. A fourth step puts three before it: one pair summarized, one rewrite."""
    h = History().user("task").step(_read("a.py")).step(_read("b.py")).step(_read("c.py"))
    strategy = build("goose-tool-pair-summarize", cutoff=2)
    view = view_of(strategy(h.items, ctx()))
    assert view.items == h.items
    assert view.events == [] and view.summarizer_calls == []
    h.step(_read("d.py"))
    view = view_of(strategy(h.items, ctx()))
    assert [e.detail for e in view.events] == ["1 tool pair summarized"]
    assert len(view.summarizer_calls) == 1


def test_gemini_compress_never_splits_between_a_call_and_its_result():
    """A user message sent while a call waits for its result is past 70 % of the characters,
    but splitting there would leave the result without its call: the split goes to the next
    user message after it, and the snapshot replaces everything before that."""
    from replay.strategies import UserItem

    h = History().user("task " * 800).step(_read("a.py"))
    h.items.insert(2, UserItem("steer", event_index=9))
    h.step(text="done").user("next")
    view = view_of(
        build("gemini-compress-50pct-keep-30pct")(h.items, ctx(window=10_000, usage=6_000))
    )
    assert isinstance(view.items[0], SummaryItem)
    assert view.items[2:] == [h.items[-1]]


def test_roo_condense_is_over_the_truncation_limit_only_above_it():
    """Below its percent threshold (100 %), roo-condense still condenses over roo-truncate's
    limit, prev > 0.9 · 100,000 − 8,192 = 81,808 (prev = usage + the new result's 1 token):
    at 81,808 exactly nothing happens, at 81,809 it condenses."""
    h = History().user()
    for n in range(7):
        h.step(("read_file", {"path": f"f{n}"}, "x"), text=f"s{n}")

    def run(usage: int):
        return view_of(build("roo-condense-keep-first-last-3")(h.items, ctx(100_000, usage)))

    at_limit = run(81_807)
    assert at_limit.items == h.items and not at_limit.events
    assert [e.kind for e in run(81_808).events] == ["compaction"]
