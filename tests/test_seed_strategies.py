"""The seed study's and the articles' families (truncate, age-truncate, prune, tool-aging,
append-supersede, retrieval, compact-at, compact-rotating/chained, sliding) and the masking
ones (observation-mask, its SWE-agent polling form): what each one sends, at its boundaries,
on small hand-made histories. Expected values come from each module's docstring and
docs/strategies.md."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_strategy_library import History, build, ctx, outputs, read, view_of

from replay.strategies import AssistantItem, Block, SummaryItem, ToolResultItem, UserItem, View
from replay.strategies._prompts import LITERAL_OPENHANDS_MASKED


def test_age_truncate_caps_each_result_past_the_keep_newest_to_n_characters():
    """age-truncate-N-keep-K: the K newest results verbatim; an older one shows its first N
    characters and the marker saying how many were cut, one of exactly N characters stays
    whole, and only a result that changed is an `aging` event."""
    h = History().user()
    h.step(("bash", {}, "a" * 11)).step(("bash", {}, "b" * 10)).step(("bash", {}, "c" * 30))
    view = view_of(build("age-truncate-10-keep-1")(h.items, ctx()))
    assert outputs(view) == ["a" * 10 + "\n…[truncated 1 chars]", "b" * 10, "c" * 30]
    assert [(e.kind, e.detail) for e in view.events] == [("aging", "capped result of bash")]


def test_sliding_pin_first_pins_no_injected_message_while_the_task_is_in_the_window():
    """sliding-N-pin-first pins the first message the user wrote, not one the harness
    injected (Codex's permissions): with the task still in the window there is nothing to pin,
    and the injected text dropped before it stays dropped. With no real prompt in the history
    at all, the first injected one is pinned."""
    h = History()
    h.items.append(UserItem("<permissions> sandbox off", event_index=0, injected=True))
    h.user("fix the bug")
    h.step(("bash", {}, "a")).step(("bash", {}, "b"))
    view = view_of(build("sliding-5-pin-first")(h.items, ctx()))
    assert view.items == h.items[1:]
    assert [e.kind for e in view.events] == ["drop"]
    later = view_of(build("sliding-2-pin-first")(h.items, ctx()))
    assert later.items == [h.items[1], *h.items[-2:]]
    no_task = [h.items[0], *h.items[2:]]
    view = view_of(build("sliding-2-pin-first")(no_task, ctx()))
    assert view.items == [no_task[0], *no_task[-2:]]


def test_prune_stubs_the_old_results_in_one_batch_naming_tool_path_and_size():
    """prune-at-N-keep-K: past N characters every result but the K newest becomes a one-line
    stub (tool, path, size) in one batch, one `prune` event naming how many; a result no
    longer than its stub stays as it is (the stub would add characters, not save them)."""
    h = History().user()
    h.step(("read_file", {"path": "src/a.py"}, "a" * 1000))
    h.step(("bash", {}, "b" * 1000))
    h.step(("bash", {}, "s" * 31))  # "[pruned: bash result, 31 chars]" is no shorter: kept
    h.step(("bash", {}, "c" * 1000))
    view = view_of(build("prune-at-1000-keep-1")(h.items, ctx()))
    assert outputs(view) == [
        "[pruned: read_file result of src/a.py, 1000 chars]",
        "[pruned: bash result, 1000 chars]",
        "s" * 31,
        "c" * 1000,
    ]
    assert [(e.kind, e.detail) for e in view.events] == [("prune", "pruned 2 old results")]


def test_prune_is_frozen_until_the_pruned_view_passes_n_again():
    """After a batch the view is append-only until *it* (stubs counted, not the results they
    replaced) passes N again: a result that became old since stays verbatim until then."""
    from replay.strategies._common import chars

    h = History().user("u")
    h.step(("bash", {}, "a" * 1000)).step(("bash", {}, "b" * 300))
    prune = build("prune-at-1000-keep-1")
    first = view_of(prune(h.items, ctx()))
    assert [e.kind for e in first.events] == ["prune"]
    h.step(("bash", {}, "c" * 300))
    second = view_of(prune(h.items, ctx()))
    assert chars(second.items) <= 1000 < chars(h.items)
    assert outputs(second)[1:] == ["b" * 300, "c" * 300] and not second.events
    assert second.items[: len(first.items)] == first.items
    h.step(("bash", {}, "d" * 600))
    third = view_of(prune(h.items, ctx()))
    assert outputs(third)[1:] == [
        "[pruned: bash result, 300 chars]", "[pruned: bash result, 300 chars]", "d" * 600
    ]
    assert [e.detail for e in third.events] == ["pruned 2 old results"]


def test_tool_aging_cuts_each_kind_of_old_result_its_own_way():
    """tool-aging-keep-K, per tool: an old search / web / browser result is cut to
    `other_chars` (500) with the cut marker, a listing hard to `list_chars` (200), a read
    becomes the re-readable stub naming its path; shell output is kept. The aging events are
    in history order (the order of a request's events is part of the output)."""
    tools = [
        ("grep", {"pattern": "x"}, "g" * 600),
        ("web_fetch", {"url": "https://x.test"}, "w" * 600),
        ("browser", {"url": "https://x.test"}, "b" * 600),
        ("list_files", {"path": "."}, "l" * 600),
        ("read_file", {"path": "src/a.py"}, "r" * 600),
        ("bash", {"command": "make"}, "s" * 600),
    ]
    h = History().user()
    for _ in range(2):
        h.step(*tools)
    view = view_of(build("tool-aging-keep-1")(h.items, ctx()))
    cut = "\n…[truncated 100 chars]"
    assert outputs(view)[:6] == [
        "g" * 500 + cut,
        "w" * 500 + cut,
        "b" * 500 + cut,
        "l" * 200 + "\n…[listing cut]",
        "[src/a.py: content no longer shown (600 chars); read it again if needed]",
        "s" * 600,
    ]
    assert outputs(view)[6:] == [output for _, _, output in tools]
    assert [e.detail for e in view.events] == [
        f"aged a {tool} result" for tool in ("grep", "web_fetch", "browser", "list_files",
                                             "read_file")
    ]


def test_observation_mask_names_the_observations_it_masks_at_that_request():
    """observation-mask-keep-W: one `clear` event at a request that masks observations,
    naming how many it masks there (as prune and tool-aging name only what changed); none
    where the masks are those already sent, nor while every observation is within the
    window."""
    h = History().user()
    for n in range(3):
        h.step(read(f"f{n}", "x"))
    mask = build("observation-mask-keep-4")  # 7 events: only the first result is 4+ back
    assert [e.detail for e in view_of(mask(h.items, ctx())).events] == ["1 observation masked"]
    h.step(read("f3", "x"))  # 9 events: the first two results, one of them new
    second = view_of(mask(h.items, ctx()))
    assert [(e.kind, e.detail) for e in second.events] == [("clear", "1 observation masked")]
    h.user("go on")  # the boundary passes the third result's call, not the result
    again = view_of(mask(h.items, ctx()))
    assert again.items == [*second.items, h.items[-1]] and not again.events
    assert [getattr(i, "text", "") for i in again.items].count(LITERAL_OPENHANDS_MASKED) == 2
    assert not view_of(build("observation-mask-keep-9")(h.items[:-1], ctx())).events


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from([
        "observation-mask-keep-3", "observation-mask-keep-2-poll-1",
        "observation-mask-keep-2-poll-3", "openhands-browser-mask-1",
    ]),
    steps=st.lists(st.sampled_from(["read", "browse", "two", "user"]), min_size=1, max_size=14),
)
def test_masking_names_a_rewrite_exactly_where_the_view_changed(name: str, steps: list) -> None:
    """The masking families name a rewrite at a request exactly where its view is not the
    previous one with the new history appended: masks already sent are no new rewrite (a
    request after them only grows the view), as prune's and tool-aging's. The history starts
    without a task, so the SWE-agent form also shows results again once one arrives."""
    strategy, h = build(name), History()
    sent: list = []
    for n, kind in enumerate(steps):
        grown = len(h.items)
        if kind == "user":
            h.user(f"task {n}")
        else:
            page = ("browser_navigate", {"url": f"https://{n}.example"}, f"page {n} " * 9)
            calls = {"read": [read(f"f{n}", f"x{n}")], "browse": [page]}
            h.step(*calls.get(kind, [read(f"f{n}", f"y{n}"), page]))
        view = view_of(strategy(list(h.items), ctx()))
        assert bool(view.events) == (view.items != [*sent, *h.items[grown:]]), (n, view.events)
        sent = view.items


def test_swe_last_n_without_a_task_never_elides_the_first_observation():
    """observation-mask-keep-N-poll-P (SWE-agent): obs[1:last] are elided, obs[0] being the
    task. A thread with no real user message (a subagent's) has only results: the first
    result is obs[0] and stays; last = 8 - 5 = 3 elides results 1 and 2. Text the harness
    injected in the user's role is no task either."""
    h = History()
    for n in range(8):
        h.step(read(f"f{n}", "a\nb"))
    omitted = "Old environment output: (2 lines omitted)"
    injected = UserItem("<instructions>", event_index=-1, injected=True)
    for items in (h.items, [injected, *h.items]):
        view = view_of(build("observation-mask-keep-5-poll-1")(items, ctx()))
        assert outputs(view) == ["a\nb", omitted, omitted, *["a\nb"] * 5]
        assert [(e.kind, e.detail) for e in view.events] == [("clear", "2 outputs elided")]
    short = view_of(build("observation-mask-keep-5-poll-1")(h.items[:12], ctx()))  # 6 results
    assert outputs(short) == ["a\nb"] * 6 and not short.events  # nothing elided: no event


def test_swe_last_n_shows_again_what_the_window_no_longer_elides():
    """With polling 3 the window moves in steps: 9 results and no task elide results 1-3
    (last = 9 - 5 = 4). The task then arriving makes it obs[0]: 10 observations give
    last = 9 - 5 = 4 again, so obs[1:4] are results 0-2 and result 3 is shown whole again."""
    h = History()
    for n in range(9):
        h.step(read(f"f{n}", f"out {n}"))
    swe = build("observation-mask-keep-5-poll-3")
    omitted = "Old environment output: (1 lines omitted)"
    before = outputs(view_of(swe(h.items, ctx())))
    assert before[:5] == ["out 0", omitted, omitted, omitted, "out 4"]
    after = view_of(swe([*h.items, UserItem("now the task", event_index=99)], ctx()))
    assert outputs(after)[:5] == [omitted, omitted, omitted, "out 3", "out 4"]
    assert [e.detail for e in after.events] == ["1 output elided, 1 shown again"]


def test_append_supersede_compares_with_the_latest_version_only_and_skips_failed_reads():
    """A re-read equal to an *older* version is a new version (the file went back), not
    "unchanged"; a failed read is no version of the file and is kept as it is."""
    from dataclasses import replace

    h = History().user()
    h.step(read("f", "v1")).step(read("f", "v2")).step(read("f", "ENOENT")).step(read("f", "v1"))
    items = [replace(i, is_error=True) if isinstance(i, ToolResultItem) and i.output == "ENOENT"
             else i for i in h.items]
    view = view_of(build("append-supersede")(items, ctx()))
    assert outputs(view) == [
        "v1",
        "[f version 2; supersedes version 1 above]\nv2",
        "ENOENT",
        "[f version 3; supersedes version 2 above]\nv1",
    ]


def test_append_supersede_takes_versions_from_writes_only():
    """Only a write's `content` is a version the agent wrote: a search whose arguments name a
    path and a `content` pattern writes nothing, so the next read is the file's version 2."""
    h = History().user().step(read("f", "v1"))
    h.step(("grep", {"path": "f", "content": "v2"}, "no match")).step(read("f", "v2"))
    assert outputs(view_of(build("append-supersede")(h.items, ctx()))) == [
        "v1", "no match", "[f version 2; supersedes version 1 above]\nv2"
    ]


def _retrieval(history: History, top: int) -> list[str]:
    """The texts of the assistant messages retrieval-top-K sends."""
    view = view_of(build(f"retrieval-top-{top}")(history.items, ctx()))
    return [b.text for i in view.items if isinstance(i, AssistantItem) for b in i.blocks]


def test_retrieval_ranks_by_shared_words_over_the_root_of_the_step_s_words():
    """Relevance = words shared with the current step and the latest user message / sqrt(the
    step's words), words being 3+ letters: "omega" scores through the user message (1/1),
    beating "alpha delta" (1/sqrt 2); "alpha b c d" (1/1: b, c, d are no words) ties "omega"
    and the newer of equal steps wins; "alpha kappa lambda" (1/sqrt 3) comes after both."""
    h = History().user("look at omega")
    for text in ("alpha delta", "alpha kappa lambda", "alpha b c d", "omega", "alpha"):
        h.step(text=text)
    assert _retrieval(h, 1) == ["omega", "alpha"]
    assert _retrieval(h, 2) == ["alpha b c d", "omega", "alpha"]
    assert _retrieval(h, 3) == ["alpha delta", "alpha b c d", "omega", "alpha"]


def test_retrieval_keeps_every_user_message_and_what_precedes_the_first_step():
    """Every real user message is kept, so is what comes before the first assistant message
    (injected instructions); a history of at most K + 1 steps is sent whole, with no event."""
    h = History()
    h.items.append(UserItem("<instructions>", event_index=0, injected=True))
    h.user("look at omega")
    h.step(text="zeta one").step(text="zeta two")
    assert view_of(build("retrieval-top-1")(h.items, ctx())) == View(items=h.items)
    h.user("now alpha").step(text="zeta three").step(text="alpha")
    view = view_of(build("retrieval-top-1")(h.items, ctx()))
    assert view.items == [*h.items[:2], *h.items[4:]]  # zeta one, zeta two left out
    assert [(e.kind, e.detail) for e in view.events] == [("drop", "kept 1 relevant step")]


def test_retrieval_reads_the_first_20000_characters_of_an_item():
    """A word past an item's first 20,000 characters does not count: the step holding "alpha"
    only there ties the one without it (0), and the newer wins."""
    h = History().user("task")
    h.step(text="x" * 20000 + " alpha").step(text="zeta").step(text="kappa").step(text="alpha")
    assert _retrieval(h, 1) == ["kappa", "alpha"]


def _two_folds(name: str) -> tuple[View, View, History]:
    """A strategy folding at 1,500 characters, asked at two requests that each pass it."""
    h = History().user("u" * 100)
    h.step(("bash", {}, "x" * 1000), text="t").step(("bash", {}, "y" * 1000), text="t")
    strategy = build(name)
    first = view_of(strategy(h.items, ctx()))
    h.step(("bash", {}, "z" * 1000), text="t")
    return first, view_of(strategy(h.items, ctx())), h


def test_compact_at_fires_only_past_its_chars_and_re_summarizes_its_summary():
    """compact-at-N compacts a view of *more than* N characters; a later compaction is
    rotating: its summarizer is sent the old summary with the newer items, and the new summary
    stands for every history item before the current step."""
    from replay.strategies._common import chars

    h = History().user("u" * 100).step(("bash", {}, "x" * 1000), text="t")
    h.step(("bash", {}, "y" * 1000), text="t")
    size = chars(h.items)
    for n, compacts in ((size, False), (size - 1, True)):
        view = view_of(build(f"compact-at-{n}-structured")(h.items, ctx()))
        assert bool(view.summarizer_calls) == bool(view.events) == compacts, n
    first, second, h = _two_folds("compact-at-1500-structured")
    summary = first.items[0]
    assert isinstance(summary, SummaryItem) and first.items[1:] == h.items[3:5]
    assert summary.replaces == (0, 1, 2)
    call = second.summarizer_calls[0]
    assert call.input_items[0] is summary and call.input_items[1:] == tuple(h.items[3:5])
    assert second.items[1:] == h.items[5:] and second.items[0].replaces == (0, 1, 2, 3, 4)
    assert [e.detail for e in second.events] == ["3 items → summary"]


@pytest.mark.parametrize("name", ["compact-at-1500-structured", "compact-rotating-at-1500"])
def test_a_summary_names_each_event_it_replaces_once_and_no_unlogged_item(name):
    """A summary's `replaces` names the log events of the items it folds, each once, in order,
    as `summary_item` does: two items of one event (a Claude Code user record holding a tool
    result and the user's text) name it once, an item the log does not hold (event -1) none;
    a later fold names the old summary's events once more, not twice."""
    h = History().user("u" * 100).step(("bash", {}, "x" * 1000), text="t")
    h.items.append(UserItem("and also this", event_index=2))  # the result's event
    h.items.append(UserItem("<reminder>", event_index=-1, injected=True))
    h.step(("bash", {}, "y" * 1000), text="t")
    strategy = build(name)
    first = view_of(strategy(h.items, ctx()))
    assert first.items[1:] == h.items[5:]
    assert first.items[0].replaces == (0, 1, 2)
    h.step(("bash", {}, "z" * 1000), text="t")
    second = view_of(strategy(h.items, ctx()))
    assert second.items[1:] == h.items[7:]
    assert second.items[0].replaces == (0, 1, 2, 5, 6)


@pytest.mark.parametrize(
    "name", ["compact-at-1500-structured", "compact-rotating-at-1500", "compact-chained-at-1500"]
)
def test_compact_at_folds_nothing_when_only_the_current_step_follows_its_summary(name):
    """Everything before the current step is folded once; with no newer assistant message
    there is nothing older than the current step to fold, however long the view stays."""
    h = History().user("u" * 100)
    h.step(("bash", {}, "x" * 1000), text="t").step(("bash", {}, "y" * 1000), text="t")
    compact = build(name)
    first = view_of(compact(h.items, ctx()))
    h.user("v" * 2000)
    again = view_of(compact(h.items, ctx()))
    assert again.items == [*first.items, h.items[-1]]
    assert not again.summarizer_calls and not again.events


def test_rotating_keeps_one_summary_slot_and_chained_piles_frozen_summaries():
    """compact-rotating re-summarizes its one summary with the newer items; compact-chained
    summarizes only the items since, after the earlier summaries, which stay as they were.
    Both summarizer calls re-send the view up to the current step (they share its prefix).
    A summary's `replaces` names history events: the rotating one those its old summary
    replaced too (as compact-at's), not a -1 for the summary, which is no event."""
    for mode in ("rotating", "chained"):
        first, second, h = _two_folds(f"compact-{mode}-at-1500")
        old = first.items[0]
        assert isinstance(old, SummaryItem) and first.items[1:] == h.items[3:5]
        call = second.summarizer_calls[0]
        assert call.input_items == (old, *h.items[3:5]) and call.reuse_main_prefix
        heads = second.items[: len(second.items) - 2]
        assert second.items[-2:] == h.items[5:]
        if mode == "rotating":
            assert len(heads) == 1 and heads[0] is not old
            assert [e.detail for e in second.events] == ["rotating: 3 items → summary"]
            assert (old.replaces, heads[0].replaces) == ((0, 1, 2), (0, 1, 2, 3, 4))
        else:
            assert len(heads) == 2 and heads[0] is old
            assert [h.replaces for h in heads] == [(0, 1, 2), (3, 4)]
            assert [e.detail for e in second.events] == ["chained: 2 items → summary"]
        assert all(isinstance(i, SummaryItem) for i in heads)



def test_prune_given_another_history_starts_over():
    """An instance called on another history (not the one it saw, grown) starts over, as
    every strategy does: what it pruned in the first one is not pruned in the second."""
    a = History().user()
    a.step(("bash", {}, "a" * 1000)).step(("bash", {}, "b" * 1000))
    prune = build("prune-at-1500-keep-1")
    assert view_of(prune(a.items, ctx())).events
    b = History().user()
    b.step(("bash", {}, "c" * 600)).step(("bash", {}, "d" * 600))
    assert view_of(prune(b.items, ctx())) == view_of(build("prune-at-1500-keep-1")(b.items, ctx()))
    assert outputs(view_of(prune(b.items, ctx()))) == ["c" * 600, "d" * 600]


def test_tool_aging_keeps_a_failed_read_however_long_its_error():
    """A failed read is not the file's content ("read it again" is no help): kept as it is,
    even when its error is longer than the stub would be."""
    from dataclasses import replace

    error = "Error: permission denied reading src/a.py\n" + "  at open (fs.js:1)\n" * 10
    h = History().user()
    h.step(read("src/a.py", error)).step(read("src/b.py", "b" * 900))
    items = [replace(i, is_error=True) if isinstance(i, ToolResultItem) and i.output == error
             else i for i in h.items]
    view = view_of(build("tool-aging-keep-1")(items, ctx()))
    assert outputs(view) == [error, "b" * 900] and not view.events


def test_tool_aging_keeps_a_read_no_longer_than_its_stub():
    """A read whose stub is no shorter than it stays as it is: the 64-character stub of a
    64-character read would add nothing but a cache break."""
    h = History().user().step(read("f", "x" * 64)).step(read("g", "y" * 900))
    view = view_of(build("tool-aging-keep-1")(h.items, ctx()))
    assert outputs(view) == ["x" * 64, "y" * 900] and not view.events


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("prune-at-10-keep-0", "[pruned: read_file result of f, 100 chars]"),
        ("age-truncate-10-keep-0", "x" * 10 + "\n…[truncated 90 chars]"),
        ("tool-aging-keep-0", "[f: content no longer shown (100 chars); read it again if needed]"),
    ],
)
def test_keep_0_is_accepted_and_leaves_no_result_whole(name, shown):
    """`keep` is ≥ 0 where 0 means none (docs/strategies.md): keep-0 is a valid name, and
    then even the newest result is cut."""
    h = History().user().step(read("f", "x" * 100))
    assert outputs(view_of(build(name)(h.items, ctx()))) == [shown]


@pytest.mark.parametrize(
    "name", ["compact-at-1500-structured", "compact-rotating-at-1500", "compact-chained-at-1500"]
)
def test_a_compacting_instance_given_another_history_starts_over(name):
    """Given another history (not the one it saw, grown), an instance sends what a new one
    sends: not the summary of the history it folded before."""
    first, _, _ = _two_folds(name)
    assert isinstance(first.items[0], SummaryItem)
    strategy = build(name)
    a = History().user("u" * 100)
    a.step(("bash", {}, "x" * 1000), text="t").step(("bash", {}, "y" * 1000), text="t")
    assert view_of(strategy(a.items, ctx())).summarizer_calls
    b = History().user("short").step(("bash", {}, "ok"), text="t")
    assert view_of(strategy(b.items, ctx())) == View(items=b.items)


def test_append_supersede_given_another_history_starts_over():
    """Given another history, an instance sends what a new one sends: not the versions, notes
    or shaped results of the history it saw before."""
    a = History().user().step(read("f", "v1")).step(read("f", "v2"))
    supersede = build("append-supersede")
    assert outputs(view_of(supersede(a.items, ctx())))[1].startswith("[f version 2")
    b = History().user().step(read("f", "v2")).step(read("g", "w"))
    assert outputs(view_of(supersede(b.items, ctx()))) == ["v2", "w"]


def test_tool_aging_given_another_history_names_its_aging_again():
    """Given another history, an instance reports what a new one reports: the result that
    ages there is an `aging` event, though a result of the same event index aged in the
    history it saw before."""
    a = History().user().step(read("f", "a" * 900)).step(read("g", "b" * 900))
    aging = build("tool-aging-keep-1")
    assert len(view_of(aging(a.items, ctx())).events) == 1
    b = History().user().step(read("h", "c" * 900)).step(read("i", "d" * 900))
    assert view_of(aging(b.items, ctx())) == view_of(build("tool-aging-keep-1")(b.items, ctx()))


def test_age_truncate_given_another_history_names_its_aging_again():
    """Given another history, an instance reports the results capped there as aging events,
    as a new one does, though results of the same event indexes were capped before."""
    a = History().user().step(("bash", {}, "a" * 900)).step(("bash", {}, "b" * 900))
    capping = build("age-truncate-500-keep-1")
    assert len(view_of(capping(a.items, ctx())).events) == 1
    b = History().user().step(("bash", {}, "c" * 900)).step(("bash", {}, "d" * 900))
    fresh = view_of(build("age-truncate-500-keep-1")(b.items, ctx()))
    assert view_of(capping(b.items, ctx())) == fresh and len(fresh.events) == 1


def test_compact_at_cuts_what_its_summarizer_is_sent_past_each_limit_only():
    """The summarizer is sent tool outputs cut to 1,500 characters and tool-call arguments to
    200 (plus "…"): an output of exactly 1,500 and arguments of exactly 200 go whole, one
    character more is cut; a cut output still says how long the whole one was."""
    from replay.strategies.compaction import summarizer_input

    h = History().user()
    h.step(("bash", {"p": "x" * 191}, "o" * 1500))  # `{"p": "x…"}`: 200 characters
    h.step(("bash", {"p": "y" * 192}, "p" * 1501))
    sent = summarizer_input(h.items, 1500, 200)
    assert sent[:3] == tuple(h.items[:3])
    assert sent[3].tool_calls[0].arguments == {"input": '{"p": "' + "y" * 192 + '"' + "…"}
    assert sent[4].output == "p" * 1500 + "\n…[truncated 1 chars]"
    assert sent[4].original_chars == 1501
    assert summarizer_input(h.items, 0, 0) == tuple(h.items)


def test_compact_at_asks_and_writes_the_summary_in_its_style():
    """compact-at-N-structured asks for the five-section summary and its stand-in has those
    sections; -freeform asks with the free-form prompt and writes free-form text."""
    from replay.strategies._summary import (
        FREEFORM_INSTRUCTION,
        STRUCTURED_INSTRUCTION,
        freeform_summary,
        structured_summary,
    )

    h = History().user("u" * 100)
    h.step(("bash", {}, "x" * 1000), text="t").step(("bash", {}, "y" * 1000), text="t")
    for style, instruction, body in (("structured", STRUCTURED_INSTRUCTION, structured_summary),
                                     ("freeform", FREEFORM_INSTRUCTION, freeform_summary)):
        (call,) = view_of(build(f"compact-at-1500-{style}")(h.items, ctx())).summarizer_calls
        assert call.instruction == instruction and call.summary == body(h.items[:3])
    assert STRUCTURED_INSTRUCTION != FREEFORM_INSTRUCTION
    assert structured_summary(h.items[:3]) != freeform_summary(h.items[:3])


def test_sliding_sends_exactly_the_last_n_messages():
    """sliding-N sends the last N messages (when the window starts on no orphan result), and
    its drop event says how many oldest items it left out."""
    h = History().user()
    for n in range(4):
        h.step(text=f"answer {n}")
    view = view_of(build("sliding-2")(h.items, ctx()))
    assert view.items == h.items[3:]
    assert [(e.kind, e.detail) for e in view.events] == [("drop", "dropped 3 oldest items")]
    assert view_of(build("sliding-5")(h.items, ctx())) == View(items=h.items)


def test_tool_aging_cuts_a_tool_of_no_known_kind_to_other_chars():
    """A result of a tool of no known kind (an MCP tool) is cut to `other_chars` once old."""
    h = History().user()
    h.step(("mcp_jira_issue", {"id": "X-1"}, "j" * 600)).step(("mcp_jira_issue", {}, "k"))
    view = view_of(build("tool-aging-keep-1")(h.items, ctx()))
    assert outputs(view) == ["j" * 500 + "\n…[truncated 100 chars]", "k"]


def test_sliding_widens_to_the_first_item_when_only_it_holds_the_call():
    """A thread with no user message (a subagent's): [call, result, answer] with sliding-2
    would start at the result, whose call is item 0; the window widens to item 0, so the whole
    history is sent and nothing is dropped."""
    h = History().step(("bash", {}, "a")).step(text="done")
    view = view_of(build("sliding-2")(h.items, ctx()))
    assert view == View(items=h.items)


@pytest.mark.parametrize(
    "name", ["compact-at-1500-structured", "compact-rotating-at-1500", "compact-chained-at-1500"]
)
def test_a_compaction_counts_its_summary_toward_n(name):
    """The view a compaction measures is what the model sees, the summary included: after a
    fold, a tail of exactly N characters does not pass N by itself, but with the summary in
    front of it the view does, and folds again."""
    from replay.strategies._common import chars

    h = History().user("u" * 100)
    h.step(("bash", {}, "x" * 1000), text="t").step(("bash", {}, "y" * 1000), text="t")
    compact = build(name)
    first = view_of(compact(h.items, ctx()))
    assert first.events and chars(first.items[1:]) == 1009  # `t`, `bash({})`, 1,000 y
    h.step(("bash", {}, "z" * 482), text="t")  # the tail: 1009 + 9 + 482 = 1500 characters
    assert chars(h.items[3:]) == 1500
    second = view_of(compact(h.items, ctx()))
    assert [e.kind for e in second.events] == ["compaction"]
    assert second.items[-2:] == h.items[5:]


def test_rotating_measures_its_new_summary_not_the_one_it_replaced():
    """After a rotating compaction the view holds the new summary only, and that is the one
    measured: the second summary (longer: it folds the first and the items after it) with the
    steps since passes 1,500 characters, so the view folds again, where the same steps behind
    the first summary would not."""
    from replay.strategies._common import chars

    h = History().user("u" * 100)
    h.step(("bash", {}, "x" * 1000), text="t").step(("bash", {}, "y" * 1000), text="t")
    rotating = build("compact-rotating-at-1500")
    first = view_of(rotating(h.items, ctx()))
    h.step(("bash", {}, "z" * 1000), text="t")
    second = view_of(rotating(h.items, ctx()))
    h.step(("bash", {}, "ok"), text="t")
    tail = h.items[5:]
    assert chars([first.items[0], *tail]) <= 1500 < chars([second.items[0], *tail])
    third = view_of(rotating(h.items, ctx()))
    assert [e.kind for e in third.events] == ["compaction"]


def test_retrieval_divides_by_the_square_root_of_the_step_s_words():
    """Two of four words shared (2 / sqrt 4 = 1) beat one of two (1 / sqrt 2 ≈ 0.71), though
    both share half their words: the older step is kept over the newer one."""
    h = History().user("task")
    h.step(text="alpha beta gamma delta").step(text="alpha zeta").step(text="alpha beta")
    assert _retrieval(h, 1) == ["alpha beta gamma delta", "alpha beta"]


def test_retrieval_counts_words_of_three_or_more_characters_only():
    """A word has 3+ characters, so "go" is none: the step "go zeta" shares nothing with the
    current "go home" (the newer step with nothing shared wins the tie)."""
    h = History().user("task")
    h.step(text="go zeta").step(text="kappa").step(text="go home")
    assert _retrieval(h, 1) == ["kappa", "go home"]


def test_retrieval_reads_a_word_that_ends_at_character_20000():
    """The first 20,000 characters are read: a word ending at the 20,000th counts."""
    h = History().user("task")
    h.step(text="x" * 19994 + " alpha").step(text="zeta").step(text="kappa").step(text="alpha")
    assert _retrieval(h, 1) == ["x" * 19994 + " alpha", "alpha"]


def test_retrieval_takes_injected_text_as_part_of_its_step_not_as_a_user_message():
    """Text the harness injected in the user's role after a step (a reminder) is no user
    message: it belongs to the step before it, kept or left out with it, and its words are
    that step's, not the query's."""
    h = History().user("task").step(text="zeta")
    reminder = UserItem("<reminder> alpha", event_index=len(h.items), injected=True)
    h.items.append(reminder)
    h.step(text="kappa").step(text="alpha")
    view = view_of(build("retrieval-top-1")(h.items, ctx()))
    assert view.items == [*h.items[:3], h.items[-1]]


def test_retrieval_counts_a_word_once_per_step():
    """A word in both the assistant message and its result is one shared word: the step
    "alpha" + `bash` returning "alpha" (1 of 2 words) ties "alpha zeta", and the newer wins."""
    h = History().user("task")
    h.step(("bash", {}, "alpha"), text="alpha").step(text="alpha zeta").step(text="alpha")
    assert _retrieval(h, 1) == ["alpha zeta", "alpha"]


@pytest.mark.parametrize(
    ("name", "tool", "event"),
    [
        ("age-truncate-10-keep-0", "bash", "capped result of bash"),
        ("tool-aging-keep-0", "grep", "aged a grep result"),
    ],
)
def test_each_result_that_ages_is_an_aging_event_however_numbered(name, tool, event):
    """Each result that changes as it ages is one `aging` event, also in a history built
    without event indexes (every item at the default -1), where two results are no one event."""
    items = [UserItem("task")]
    for cid in ("a", "b"):
        call = Block("tool_call", call_id=cid, name=tool, arguments={})
        items += [AssistantItem(blocks=(call,)), ToolResultItem(cid, tool, "x" * 600)]
    view = view_of(build(name)(items, ctx()))
    assert [e.detail for e in view.events] == [event, event]


def test_append_supersede_takes_no_version_from_an_edit_without_the_content():
    """An edit names its file but not its whole content: it is no version, so the read after
    it is the file's first version, sent as it is."""
    h = History().user()
    h.step(("edit_file", {"path": "f", "old_string": "a", "new_string": "b"}, "ok"))
    h.step(read("f", "b"))
    assert outputs(view_of(build("append-supersede")(h.items, ctx()))) == ["ok", "b"]


def test_compact_at_cuts_only_the_tool_calls_arguments_for_its_summarizer():
    """Only a tool call's arguments are cut to `argument_chars`: the thinking and text blocks
    of the same message, however long, are sent as they are."""
    from replay.strategies.compaction import summarizer_input

    h = History().user()
    h.step(("bash", {"p": "y" * 300}, "ok"), text="t" * 500, thinking="k" * 500)
    (_, cut, _) = summarizer_input(h.items, 1500, 200)
    assert [b.type for b in cut.blocks] == ["thinking", "text", "tool_call"]
    assert cut.blocks[:2] == h.items[1].blocks[:2]
    assert cut.blocks[2].arguments == {"input": '{"p": "' + "y" * 193 + "…"}
