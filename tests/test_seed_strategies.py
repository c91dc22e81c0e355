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
