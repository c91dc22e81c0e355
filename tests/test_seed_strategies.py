"""The seed study's and the articles' families (truncate, age-truncate, prune, tool-aging,
append-supersede, retrieval, compact-at, compact-rotating/chained, sliding) and the masking
ones (observation-mask, its SWE-agent polling form): what each one sends, at its boundaries,
on small hand-made histories. Expected values come from each module's docstring and
docs/strategies.md."""

from __future__ import annotations

from test_strategy_library import History, build, ctx, outputs, view_of

from replay.strategies import UserItem


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
