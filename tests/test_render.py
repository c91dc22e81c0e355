"""Renderer: a view becomes ordered, token-counted blocks (tools, system, messages)."""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime

import gen
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.cache import profile_for
from replay.cache._base import collapsed_positions
from replay.log import ToolDef
from replay.render import BlockInfo, Renderer
from replay.render._request import KindIndex, chain_keys
from replay.strategies import AssistantItem, Block, SummaryItem, ToolResultItem, UserItem
from replay.tokens import TokenCounter, counter_for

TS = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TOOLS = [
    ToolDef(name="read_file", description="Read a file.", input_schema={"type": "object"}),
    ToolDef(name="run_tests", description="Run the tests."),
]
SYSTEM = "You are a coding agent."


def _render(renderer, items, *, system=SYSTEM, tools=TOOLS, model="gpt-5"):
    return renderer.render(
        items,
        system=system,
        tools=tools,
        index=0,
        request_id="r",
        thread="main",
        ts=TS,
        model=model,
        provider="openai",
    )


def _conversation():
    call = Block("tool_call", call_id="c1", name="read_file", arguments={"path": "src/api.js"})
    return [
        UserItem("Fix the failing test."),
        AssistantItem(
            (Block("thinking", text="Look first."), Block("text", text="Reading."), call)
        ),
        ToolResultItem("c1", "read_file", "export function handle() {}\n" * 40),
        UserItem("Also keep the style."),
    ]


def test_blocks_are_tools_then_system_then_messages_with_exact_counts():
    counter = TokenCounter("gpt-5")
    fam = counter.family
    r = Renderer(counter)
    req = _render(r, _conversation())
    assert req.kinds == [
        "tool",
        "tool",
        "system",
        "user",
        "thinking",
        "text",
        "tool_call",
        "tool_result",
        "user",
    ]
    assert req.item_index.tolist() == [-1, -1, -1, 0, 1, 1, 1, 2, 3]
    infos = [r.table.blocks[i] for i in req.block_ids.tolist()]
    for info, tokens in zip(infos, req.block_tokens.tolist(), strict=True):
        assert tokens == info.tokens == info.overhead + counter.count(info.text)
    # Tool definitions carry no message framing; every message pays it once; tool calls pay more.
    assert [i.overhead for i in infos] == [
        0,
        0,
        fam.message_overhead,
        fam.message_overhead,
        fam.message_overhead,
        0,
        fam.tool_call_overhead,
        fam.message_overhead,
        fam.message_overhead,
    ]
    assert infos[6].text == 'read_file({"path": "src/api.js"})'
    assert req.total == int(req.block_tokens.sum()) == int(req.cum_tokens[-1])
    assert req.tokens_before(0) == 0 and req.tokens_before(3) == int(req.cum_tokens[2])
    assert req.message_ends() == [2, 3, 6, 7, 8]  # the head (tools + system) counts as one


def test_rendering_again_reuses_blocks_and_tokenizes_nothing():
    counter = TokenCounter("gpt-5")
    r = Renderer(counter)
    items = _conversation()
    first = _render(r, items)
    calls, blocks = counter.encode_calls, len(r.table)
    again = _render(r, items + [AssistantItem((Block("text", text="Done."),))])
    assert len(r.table) == blocks + 1
    assert counter.encode_calls == calls + 1
    assert again.block_ids[: len(first.block_ids)].tolist() == first.block_ids.tolist()
    # Equal contents intern to the same block, even from different item objects.
    copy = [UserItem(items[0].text)]
    assert _render(r, copy).block_ids[3] == first.block_ids[3]


def test_redacted_thinking_blocks_count_their_own_size():
    """Regression: blocks known only by size (thinking whose text the log does not hold) were
    interned by text alone, so every later one took the first one's size."""
    r = Renderer(TokenCounter("gpt-5"))
    small = AssistantItem((Block("thinking", estimated_tokens=100), Block("text", text="a")))
    large = AssistantItem((Block("thinking", estimated_tokens=2000), Block("text", text="b")))
    req = _render(r, [UserItem("task"), small, UserItem("go on"), large], system="", tools=[])
    overhead = r.table.counter.family.message_overhead
    thinking = [int(t) for t, k in zip(req.block_tokens, req.kinds, strict=True) if k == "thinking"]
    assert thinking == [100 + overhead, 2000 + overhead]


def test_calibration_factor_scales_every_block():
    text = "const task = store.get(Number(id)); // the id arrives as a string\n" * 9
    exact = Renderer(TokenCounter("gpt-5"))
    scaled = Renderer(TokenCounter("claude-opus-4-7"))
    a = _render(exact, [UserItem(text)], system="", tools=[])
    b = _render(scaled, [UserItem(text)], system="", tools=[], model="claude-opus-4-7")
    raw = len(exact.table.counter.raw_tokens(text))
    fam = scaled.table.counter.family
    assert fam.factor != 1.0
    assert b.total == math.ceil(raw * fam.factor) + fam.message_overhead
    assert a.total == raw + exact.table.counter.family.message_overhead


def test_parallel_results_share_one_message():
    r = Renderer(counter_for("gpt-5"))
    calls = AssistantItem(
        tuple(
            Block("tool_call", call_id=f"c{i}", name="read_file", arguments={"path": f"f{i}"})
            for i in range(3)
        )
    )
    items = [UserItem("go"), calls] + [
        ToolResultItem(f"c{i}", "read_file", f"out {i}") for i in range(3)
    ]
    req = _render(r, items, system="", tools=[])
    starts = [r.table.blocks[i].starts_message for i in req.block_ids.tolist()]
    assert req.kinds == [
        "user",
        "tool_call",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "tool_result",
    ]
    assert starts == [True, True, False, False, True, False, False]
    assert req.positions.tolist() == [0, 1, 1, 1, 2, 2, 2]


def test_one_text_of_another_kind_or_message_start_is_another_block():
    """A block is its kind, whether it opens a message, and its text: the same words as a user
    message and as the assistant's text, or as a tool result opening its message and one sent
    after another, are different blocks (a prefix diff sees them differ; only the result that
    opens the message pays the framing)."""
    r = Renderer(counter_for("gpt-5"))
    user = _render(r, [UserItem("same words")], system="", tools=[])
    text = _render(r, [SummaryItem("same words", role="assistant")], system="", tools=[])
    assert (user.kinds, text.kinds) == (["user"], ["text"])
    assert user.block_ids[0] != text.block_ids[0]
    calls = AssistantItem(
        tuple(
            Block("tool_call", call_id=f"c{i}", name="read_file", arguments={"path": f"f{i}"})
            for i in range(2)
        )
    )
    items = [UserItem("go"), calls] + [
        ToolResultItem(f"c{i}", "read_file", "same") for i in range(2)
    ]
    req = _render(r, items, system="", tools=[])
    first, second = (r.table.blocks[i] for i in req.block_ids.tolist()[-2:])
    assert req.block_ids[-2] != req.block_ids[-1]
    assert (first.starts_message, second.starts_message) == (True, False)
    count = r.table.counter.count("same")
    assert (first.tokens, second.tokens) == (count + r.table.counter.family.message_overhead, count)


def test_a_non_item_is_rejected():
    r = Renderer(counter_for("gpt-5"))
    with pytest.raises(TypeError, match="not a view item"):
        _render(r, [UserItem("ok"), "a bare string"])


def test_default_anthropic_breakpoints_are_on_system_and_last_message():
    r = Renderer(counter_for("claude-sonnet-4-5"))
    req = _render(r, _conversation(), model="claude-sonnet-4-5")
    marks = [b.block for b in profile_for("claude-code").breakpoints(req, "main")]
    assert marks == [req.kinds.index("system"), len(req.kinds) - 1]


@settings(max_examples=60, deadline=None)
@given(gen.histories())
def test_block_tokens_add_up_on_random_histories(items):
    r = Renderer(counter_for("gpt-5"))
    req = _render(r, items)
    assert len(req.block_ids) == len(req.kinds) == len(req.item_index) == len(req.positions)
    assert req.total == int(req.block_tokens.sum())
    assert all(t >= 0 for t in req.block_tokens.tolist())
    assert set(req.item_index.tolist()) - {-1} == set(range(len(items)))
    assert req.kinds[:3] == ["tool", "tool", "system"]
    summaries = [(n, it) for n, it in enumerate(items) if isinstance(it, SummaryItem)]
    for n, summary in summaries:
        kind = "summary" if summary.role == "user" else "text"
        assert [req.kinds[b] for b in range(len(req.kinds)) if req.item_index[b] == n] == [kind]


# -- block columns shared by a thread's requests ----------------------------------------------


def _fresh(renderer, items, *, system, tools, thread, model):
    """`items` rendered from scratch: a new renderer (no layout shared) on the same block table
    (so equal contents have the same ids)."""
    fresh = Renderer(renderer.table.counter)
    fresh.table = renderer.table
    return fresh.render(
        items, system=system, tools=tools, index=0, request_id="r", thread=thread, ts=TS,
        model=model, provider="openai",
    )


def _assert_same_blocks(got, want):
    for name in ("block_ids", "block_tokens", "cum_tokens", "item_index", "positions"):
        assert getattr(got, name).tolist() == getattr(want, name).tolist(), name
    assert list(got.kinds) == list(want.kinds)
    assert list(got.prefix_keys) == list(want.prefix_keys)
    assert got.kinds == want.kinds and got.prefix_keys == want.prefix_keys
    mine, theirs = got.kind_index, KindIndex.of(list(want.kinds))
    assert mine.codes.tolist() == theirs.codes.tolist()
    for name in ("head_end", "last_turn", "last_user_role", "last_non_thinking", "first_thinking"):
        assert getattr(mine, name) == getattr(theirs, name), name


_steps = st.lists(
    st.tuples(
        st.sampled_from(["main", "sub"]),
        st.sampled_from(["extend", "extend", "cut", "edit", "same", "fork"]),
        st.integers(0, 12),
        st.sampled_from(["gpt-5", "gpt-5", "gpt-5-mini"]),
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=80, deadline=None)
@given(gen.histories(max_items=12), _steps, st.booleans())
def test_shared_block_columns_never_change_an_earlier_request(pool, steps, head):
    """Consecutive requests of a thread share block columns (appending in place, copying on
    divergence, another thread starting from the same head or forked from the other's last
    view, a model switch re-chaining the keys): every request keeps exactly the arrays a fresh
    render gives it, after every later render, and its `KindIndex` is the one computed from
    its kinds."""
    system, tools = (SYSTEM, TOOLS) if head else ("", [])
    r = Renderer(counter_for("gpt-5"))
    views: dict[str, list] = {"main": [], "sub": []}
    done = []
    for thread, op, n, model in steps:
        view = list(views[thread])
        if op == "extend" or not view:
            view += pool[len(view) : len(view) + 1 + n % 3] or [UserItem(f"more {n}")]
        elif op == "fork":  # the other thread's last view (part of it), then more
            other = views["sub" if thread == "main" else "main"]
            view = other[: max(1, len(other) - n % 3)] + [UserItem(f"forked {n}")]
        elif op == "edit":
            at = n % len(view)
            old = view[at]
            view[at] = (
                ToolResultItem(old.call_id, old.tool_name, old.output + " (edited)")
                if isinstance(old, ToolResultItem)
                else UserItem(f"edited {n}")
            )
        elif op == "cut":
            view = view[: max(1, n % len(view))]
        views[thread] = view
        req = r.render(
            view, system=system, tools=tools, index=0, request_id="r", thread=thread, ts=TS,
            model=model, provider="openai", fork="sub" if thread == "main" else "main",
        )
        done.append((req, view, thread, model))
    for req, view, thread, model in done:
        want = _fresh(r, view, system=system, tools=tools, thread=thread, model=model)
        _assert_same_blocks(req, want)


def test_an_append_only_thread_shares_one_buffer_and_a_divergence_copies():
    r = Renderer(counter_for("gpt-5"))
    items = _conversation()
    first = _render(r, items[:2])
    second = _render(r, items)
    # The second request extended the first in place: its arrays are views of the same buffer.
    assert np.shares_memory(first.block_ids, second.block_ids)
    edited = [*items[:1], UserItem("a different second message")]
    third = _render(r, edited)
    assert not np.shares_memory(third.block_ids, second.block_ids)
    # The first two are untouched by the copy-on-divergence.
    _assert_same_blocks(first, _fresh(r, items[:2], system=SYSTEM, tools=TOOLS,
                                      thread="main", model="gpt-5"))
    _assert_same_blocks(second, _fresh(r, items, system=SYSTEM, tools=TOOLS,
                                       thread="main", model="gpt-5"))


def test_released_requests_keep_their_totals_and_later_ones_their_arrays():
    r = Renderer(counter_for("gpt-5"))
    items = _conversation()
    first = _render(r, items[:2])
    total = first.total
    first.release_blocks()
    second = _render(r, items)
    assert first.total == total and first.block_ids is None
    _assert_same_blocks(second, _fresh(r, items, system=SYSTEM, tools=TOOLS,
                                       thread="main", model="gpt-5"))


def test_a_forgotten_thread_renders_its_next_view_in_full_with_the_same_blocks():
    r = Renderer(counter_for("gpt-5"))
    items = _conversation()
    first = _render(r, items[:2])
    r.forget_thread("other")  # another thread's: the layout stays
    assert np.shares_memory(first.block_ids, _render(r, items).block_ids)
    r.forget_thread("main")
    again = _render(r, items)
    assert not np.shares_memory(first.block_ids, again.block_ids)  # not extended in place
    _assert_same_blocks(again, _fresh(r, items, system=SYSTEM, tools=TOOLS,
                                      thread="main", model="gpt-5"))


def test_a_forked_view_copies_the_blocks_it_shares_and_walks_only_the_rest():
    r = Renderer(counter_for("gpt-5"))
    items = _conversation()
    main = _render(r, items)
    call = [*items, UserItem("Summarize the conversation.")]
    forked = r.render(
        call, system=SYSTEM, tools=TOOLS, index=0, request_id="s", thread="main/summarizer",
        ts=TS, model="gpt-5", provider="openai", fork="main",
    )
    assert r.walked_from == len(items)  # only the instruction was walked
    assert not np.shares_memory(forked.block_ids, main.block_ids)  # copied, not extended
    _assert_same_blocks(forked, _fresh(r, call, system=SYSTEM, tools=TOOLS,
                                       thread="main/summarizer", model="gpt-5"))
    # The main thread's next view still extends its own buffer in place.
    more = [*items, UserItem("Go on.")]
    assert np.shares_memory(_render(r, more).block_ids, main.block_ids)
    # Another head (no system prompt) does not fork from the main thread's view.
    r.render(
        call, system="", tools=TOOLS, index=0, request_id="s", thread="other", ts=TS,
        model="gpt-5", provider="openai", fork="main",
    )
    assert r.walked_from == 0


def test_kind_index_follows_a_cut_and_an_extension():
    r = Renderer(counter_for("gpt-5"))
    items = _conversation()  # user, assistant (thinking, text, call), result, user
    full = _render(r, items)
    assert (full.kind_index.first_thinking, full.kind_index.last_turn) == (4, 8)
    cut = _render(r, items[:1])  # the thinking block and the last user turn are gone
    assert (cut.kind_index.first_thinking, cut.kind_index.last_turn) == (-1, 3)
    assert (cut.kind_index.head_end, cut.kind_index.last_user_role) == (2, 3)
    again = _render(r, items[:3])
    index = again.kind_index
    assert (index.first_thinking, index.last_turn, index.last_user_role) == (4, 3, 7)
    assert index.last_non_thinking == 7


def test_block_infos_read_and_write_the_tables_columns():
    # `table.blocks` reads the columns as BlockInfos; writes and appends go to the columns.
    r = Renderer(counter_for("gpt-4o"))
    t = r.table
    user = t.intern("user", "hello there", True)
    call = t.intern("tool_call", 'read_file({"path":"a.py"})', False)
    thinking = t.intern("thinking", "", True, 40)
    assert len(t.blocks) == len(t) == 3
    framing = t.counter.family.message_overhead
    assert t.blocks[user] == BlockInfo(
        "user", "hello there", True, t.counter.count("hello there") + framing, framing, False
    )
    assert t.blocks[call].overhead == t.counter.family.tool_call_overhead
    assert t.blocks[call].starts_message is False and t.blocks[thinking].sized_only is True
    assert t.blocks[thinking].tokens == 40 + framing
    t.blocks[user] = dataclasses.replace(t.blocks[user], tokens=5, sized_only=True)
    written = t.blocks[user]
    assert (t.tokens[user], written.sized_only, written.text) == (5, True, "hello there")
    extra = BlockInfo("summary", "s", True, 9, 3)
    t.blocks.append(extra)
    assert list(t.blocks)[-1] == extra and len(t) == 4


def _assert_columns_from_scratch(req, table, model):
    """`req`'s columns against what they are defined as, computed from its block ids and
    kinds alone (whichever path the renderer took: a walk, a copy of an earlier view's)."""
    ids = req.block_ids.tolist()
    assert req.block_tokens.tolist() == [table.tokens[i] for i in ids]
    assert req.cum_tokens.tolist() == np.cumsum(req.block_tokens).tolist()
    assert req.positions.tolist() == collapsed_positions(list(req.kinds)).tolist()
    assert list(req.prefix_keys) == chain_keys(model, None, ids)


_edits = st.lists(
    st.tuples(
        st.sampled_from(
            ["replace", "replace", "drop", "insert", "new", "append", "same", "cut", "head"]
        ),
        st.integers(0, 40),
        st.integers(1, 10),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(gen.histories(max_items=16), _edits)
def test_views_changed_in_the_middle_render_as_from_scratch(pool, edits):
    """A thread's views rewritten anywhere (items replaced, dropped or inserted in the middle,
    the same item twice, appended, cut, sent after another system prompt), rendered one after
    the other through one renderer, have the columns of a fresh render of each view: the items
    after a change that the previous view also held are not walked again, and what depends on
    the items and head before them (a tool result merged into the message of the one before,
    lookback positions, cumulative tokens, prefix keys, kind markers) follows the change."""
    r = Renderer(counter_for("gpt-5"))
    view, system = list(pool[:8]), SYSTEM
    done = []
    for op, at, count in edits:
        view, at = list(view), at % (len(view) + 1)
        if op == "replace" and view:
            for n in range(at % len(view), min(len(view), at % len(view) + count)):
                old = view[n]
                view[n] = (
                    ToolResultItem(old.call_id, old.tool_name, old.output[: len(old.output) // 2])
                    if isinstance(old, ToolResultItem)
                    else pool[(n + at) % len(pool)]  # (maybe an item the view holds already)
                )
        elif op == "drop" and len(view) > 1:
            del view[at % len(view) : at % len(view) + count]
        elif op == "insert":
            view[at:at] = [pool[(at + k) % len(pool)] for k in range(count)]
        elif op == "new":  # (items no view held: many of them map the previous view)
            view[at:at] = [UserItem(f"new {at} {k}") for k in range(count)]
        elif op == "append":
            view += pool[at % len(pool) :][:count] or [UserItem(f"more {at}")]
        elif op == "cut" and len(view) > 1:
            view = view[: max(1, at % len(view))]
        elif op == "head":
            system = f"{SYSTEM} ({at})"
        req = _render(r, view, system=system)
        done.append((req, view, system))
    for req, view, system in done:
        _assert_same_blocks(req, _fresh(r, view, system=system, tools=TOOLS, thread="main",
                                        model="gpt-5"))
        _assert_columns_from_scratch(req, r.table, "gpt-5")


def test_a_view_rewritten_in_the_middle_walks_only_the_rewritten_item():
    r = Renderer(counter_for("gpt-5"))
    items: list = [UserItem("Go.")]
    for n in range(8):  # two parallel calls, two results (one user message), per turn
        calls = tuple(
            Block("tool_call", call_id=f"c{n}{k}", name="read_file", arguments={"n": n})
            for k in "ab"
        )
        items += [AssistantItem(calls)] + [
            ToolResultItem(f"c{n}{k}", "read_file", f"out {n}{k} " * 50) for k in "ab"
        ]
    _render(r, items)
    masked = list(items)
    # The first result of the second turn: the second one's block still continues its run
    # (one lookback position), merged into the same message.
    masked[5] = ToolResultItem("c1a", "read_file", "[masked]")
    masked.append(UserItem("Next."))
    req = _render(r, masked)
    assert r.walked == 2 and r.walked_from == 5  # the masked result and the new user turn
    _assert_same_blocks(req, _fresh(r, masked, system=SYSTEM, tools=TOOLS, thread="main",
                                    model="gpt-5"))
    # After another head (a new system prompt) the items are copied, none walked.
    req = _render(r, masked, system=f"{SYSTEM} (restarted)")
    assert r.walked == 0 and r.walked_from == 0
    _assert_same_blocks(req, _fresh(r, masked, system=f"{SYSTEM} (restarted)", tools=TOOLS,
                                    thread="main", model="gpt-5"))


def test_a_list_prefix_reads_from_the_end_and_equals_only_its_own_length():
    from replay.render._request import ListPrefix

    items = ["tool", "system", "user", "text"]
    prefix = ListPrefix(items, 3)
    assert prefix[-1] == "user" and prefix[-3] == "tool"
    with pytest.raises(IndexError):
        prefix[-4]
    with pytest.raises(IndexError):
        prefix[3]  # held by the list, not by the prefix
    assert prefix == items[:3] and prefix == tuple(items[:3])
    assert prefix != items  # the longer list it is a view of is another sequence
    assert prefix != items[:2]


def _kept_then_copied(first: list, second: list, *, system=SYSTEM, tools=TOOLS):
    """Render `first` then `second` in one thread; `second` as from scratch."""
    r = Renderer(counter_for("gpt-5"))
    r.render(first, system=system, tools=tools, index=0, request_id="a", thread="main", ts=TS,
             model="gpt-5", provider="openai")
    req = r.render(second, system=system, tools=tools, index=1, request_id="b", thread="main",
                   ts=TS, model="gpt-5", provider="openai")
    _assert_same_blocks(req, _fresh(r, second, system=system, tools=tools, thread="main",
                                    model="gpt-5"))
    return r, req


def _turns(n: int) -> list:
    return [UserItem(f"turn {k}") if k % 2 == 0 else AssistantItem((Block("text", text=f"ok {k}"),))
            for k in range(n)]


def test_a_copied_run_followed_by_the_old_view_s_first_thinking_block_holds_none():
    """The old view's first thinking block is right after the run of items the new view copies:
    it is not one of the copied blocks (the new view has no thinking block at all)."""
    items = _turns(5)
    thinking = AssistantItem((Block("thinking", text="hmm"), Block("text", text="done")))
    old = [*items, thinking]
    new = [UserItem("another first turn"), *items[1:], UserItem("no thinking here")]
    r, req = _kept_then_copied(old, new)
    assert r.walked == 2  # the run in between was copied
    assert req.kind_index.first_thinking == -1


def test_a_copied_run_from_the_start_of_a_headless_view_keeps_its_marks():
    """With no tools and no system prompt a view's first item is block 0: a run copied from
    there still carries its last user turn (block 0 is a block like any other)."""
    items = [UserItem("only turn"), *[AssistantItem((Block("text", text=f"step {k}"),))
                                      for k in range(4)]]
    new = [AssistantItem((Block("text", text="said first"),)), *items]
    r, req = _kept_then_copied(items, new, system="", tools=[])
    assert r.walked == 1
    assert req.kind_index.last_turn == 1
    assert req.kind_index.last_user_role == 1


def test_a_run_copied_from_the_middle_finds_its_marks_before_the_old_view_s_last():
    """The old view's last user turn lies after the copied run: the new view's is searched
    for inside the run (the last user turn it copies), not taken from the blocks before it."""
    items = _turns(7)  # user, assistant, ..., user (6)
    new = [UserItem("rewritten first turn"), *items[1:5],
           AssistantItem((Block("text", text="new end"),))]
    r, req = _kept_then_copied(items, new)
    assert r.walked == 2
    assert req.kinds[req.kind_index.last_turn] == "user"
    assert int(req.item_index[req.kind_index.last_turn]) == 4


def test_many_blocks_walked_at_once_keep_the_first_thinking_block_of_those_kept():
    """An extension of more blocks than the Python loop takes is derived with numpy: the first
    thinking block stays the one the kept blocks hold, not the first of the new ones."""
    def thought(k):
        return AssistantItem((Block("thinking", text=f"think {k}"), Block("text", text=f"do {k}")))

    first = [UserItem("go"), thought(0)]
    more = [item for k in range(1, 20) for item in (UserItem(f"next {k}"), thought(k))]
    r, req = _kept_then_copied(first, [*first, *more])
    assert r.walked == len(more) and r.walked_from == len(first)
    assert req.kind_index.first_thinking == req.kinds.index("thinking")


def test_a_view_that_starts_with_a_tool_result_copies_none_of_its_merged_blocks():
    """A sliding window that begins with the second of two results: in the old view its block
    was merged into the message of the result before it, here it opens the view's first
    message (and the new view ends with a result, which is not before its first item)."""
    call = AssistantItem(tuple(
        Block("tool_call", call_id=f"c{k}", name="read_file", arguments={"n": k})
        for k in range(6)
    ))
    results = [ToolResultItem(f"c{k}", "read_file", f"output {k}") for k in range(6)]
    old = [UserItem("read them"), call, *results[:5]]
    new = [*results[1:5], results[5]]
    r, req = _kept_then_copied(old, new)
    first = r.table.blocks[int(req.block_ids[len(TOOLS) + 1])]
    assert first.kind == "tool_result" and first.starts_message


def test_a_new_head_version_with_an_unlogged_part_changes_that_part_not_the_system_prompt():
    """A restarted harness re-sends its head as other content of the same size: the unlogged
    part's when there is one (the logged system prompt stays as it was, and cached)."""
    from replay.prefix import prefix_diff

    r = Renderer(counter_for("gpt-5"))
    items = _conversation()

    def head(version):
        return r.render(items, system=SYSTEM, tools=TOOLS, index=version, request_id="r",
                        thread="main", ts=TS, model="gpt-5", provider="openai",
                        hidden_tokens=3000, head_version=version)

    before, after = head(0), head(1)
    system = list(before.kinds).index("system")
    assert before.block_ids[system] == after.block_ids[system]
    assert r.table.text_of(int(after.block_ids[system])) == SYSTEM
    diff = prefix_diff(before, after, r.table)
    assert diff.first_mismatch_block == system + 1  # the unlogged part
    assert diff.where == "system" and after.total == before.total


def test_prefix_keys_chained_after_a_longer_previous_request_are_the_request_s_own():
    """`Renderer._prefix_keys` (the cache tests' request builder) reuses the keys of the
    blocks a request shares with the previous one: no more than it has when it is shorter."""
    from replay.render import Renderer as R

    r = Renderer(counter_for("gpt-5"))
    items = _conversation()
    long = _render(r, items)
    short = _fresh(r, items[:2], system=SYSTEM, tools=TOOLS, thread="main", model="gpt-5")
    assert R._prefix_keys(short, long) == list(short.prefix_keys)
    assert R._prefix_keys(long, short) == list(long.prefix_keys)
    assert R._prefix_keys(long, None) == list(long.prefix_keys)
    other = _fresh(r, items, system=SYSTEM, tools=TOOLS, thread="main", model="gpt-5-mini")
    assert R._prefix_keys(other, long) == chain_keys("gpt-5-mini", None, long.block_ids.tolist())


def test_prefix_keys_chained_after_a_request_that_parts_in_the_middle_are_the_request_s_own():
    """`Renderer._prefix_keys` reuses the previous request's keys only before the first block
    that differs: the key of that block is chained again."""
    from replay.render import Renderer as R

    r = Renderer(counter_for("gpt-5"))
    items = _conversation()
    before = _render(r, items)
    edited = [*items[:2], ToolResultItem("c1", "read_file", "short"), items[3]]
    after = _fresh(r, edited, system=SYSTEM, tools=TOOLS, thread="other", model="gpt-5")
    from replay.render import first_difference

    first = first_difference(before.block_ids, after.block_ids)
    assert first is not None and 0 < first < len(after.block_ids) - 1
    assert R._prefix_keys(after, before) == list(after.prefix_keys)


def test_first_difference_is_the_first_differing_index_or_none_for_a_prefix():
    from replay.render import first_difference

    ids = np.array([4, 7, 9, 1], dtype=np.int64)
    assert first_difference(ids, np.array([4, 8, 9, 2], dtype=np.int64)) == 1  # not 3
    assert first_difference(ids, ids[:2]) is None and first_difference(ids[:2], ids) is None
    empty = np.array([], dtype=np.int64)
    assert first_difference(empty, ids) is None and first_difference(ids, empty) is None
    assert first_difference(ids, ids.copy()) is None


def test_a_long_first_view_and_a_long_extension_grow_the_columns_keeping_their_blocks():
    """A view of more blocks than twice the columns' capacity, rendered in one go, then a
    thread extended in place far past it: the buffers grow and the blocks written before
    stay (an earlier request keeps its own)."""
    r = Renderer(counter_for("gpt-5"))
    long = [UserItem(f"message {k}") for k in range(150)]
    req = _render(r, long)
    assert len(req.block_ids) == len(TOOLS) + 1 + 150
    _assert_same_blocks(req, _fresh(r, long, system=SYSTEM, tools=TOOLS, thread="other",
                                    model="gpt-5"))
    r = Renderer(counter_for("gpt-5"))
    short = [UserItem("go"), AssistantItem((Block("text", text="ok"),))]
    first = _render(r, short)
    longer = _render(r, [*short, *long])
    for req, view in ((first, short), (longer, [*short, *long])):
        _assert_same_blocks(req, _fresh(r, view, system=SYSTEM, tools=TOOLS, thread="other",
                                        model="gpt-5"))


def test_a_run_copied_after_new_items_takes_no_mark_from_before_the_run_in_the_old_view():
    """The copied run holds no user turn; the old view's is before the run (and its last one
    after it): the new view's last user turn is the new first turn, not a block the old one's
    position maps to."""
    steps = [AssistantItem((Block("text", text=f"step {k}"),)) for k in range(5)]
    old = [UserItem("first turn"), *steps, UserItem("last turn")]
    new = [UserItem("another first turn"), AssistantItem((Block("text", text="extra"),)),
           *steps, AssistantItem((Block("text", text="end"),))]
    r, req = _kept_then_copied(old, new)
    assert r.walked == 3  # the run of steps was copied
    assert req.kind_index.last_turn == req.kind_index.last_user_role == len(TOOLS) + 1


def test_many_blocks_appended_without_a_user_turn_keep_the_marks_of_those_kept():
    """More blocks than the Python loop takes, none a user turn: the last user turn (and
    user-role block) is still the one the kept blocks hold."""
    first = [UserItem("go")]
    more = [AssistantItem((Block("text", text=f"step {k}"),)) for k in range(40)]
    r, req = _kept_then_copied(first, [*first, *more])
    assert r.walked == len(more)
    index = req.kind_index
    assert index.last_turn == index.last_user_role == len(TOOLS) + 1
    assert index.last_non_thinking == len(req.kinds) - 1


def test_a_run_copied_from_block_0_of_a_headless_view_keeps_its_first_thinking_block():
    """No tools, no system prompt: the old view's first block is its first thinking block; a
    run copied from there after a new first item still holds it."""
    thought = AssistantItem((Block("thinking", text="plan"), Block("text", text="start")))
    items = [thought, *[UserItem(f"turn {k}") for k in range(4)]]
    new = [UserItem("said first"), *items]
    r, req = _kept_then_copied(items, new, system="", tools=[])
    assert r.walked == 1
    assert req.kind_index.first_thinking == 1


def test_a_run_copied_up_to_the_old_view_s_last_turn_ends_before_it():
    """The old view's last user turn is the block right after the copied run: the new view's
    is the last one inside the run, not the block that follows the run here."""
    items = _turns(7)  # user, assistant, ..., user (6)
    new = [UserItem("rewritten first turn"), *items[1:6],
           AssistantItem((Block("text", text="new end"),))]
    r, req = _kept_then_copied(items, new)
    assert r.walked == 2
    assert int(req.item_index[req.kind_index.last_turn]) == 4
    assert int(req.item_index[req.kind_index.last_user_role]) == 4


def test_a_copied_run_s_first_thinking_block_is_its_first_not_its_last():
    """The old view's first thinking block is before the run copied; the run holds two: the
    new view's first thinking block is the first of those."""
    def thought(k):
        return AssistantItem((Block("thinking", text=f"think {k}"), Block("text", text=f"do {k}")))

    old = [thought(0), UserItem("u1"), thought(2), UserItem("u3"), thought(4), UserItem("u5")]
    new = [UserItem("new first"), *old[1:]]
    r, req = _kept_then_copied(old, new)
    assert r.walked == 1
    assert int(req.item_index[req.kind_index.first_thinking]) == 2
    assert req.kinds[req.kind_index.first_thinking] == "thinking"


def test_many_blocks_appended_after_none_find_their_first_thinking_block_in_place():
    """More blocks than the Python loop takes, the first thinking block among them (none in
    the blocks kept): its position counts the blocks before it."""
    first = [UserItem("go")]
    more = [AssistantItem((Block("text", text=f"step {k}"),)) for k in range(36)]
    more.append(AssistantItem((Block("thinking", text="now think"), Block("text", text="done"))))
    r, req = _kept_then_copied(first, [*first, *more])
    assert r.walked == len(more)
    assert req.kind_index.first_thinking == len(TOOLS) + 1 + 1 + 36


def test_the_hidden_prefix_is_one_block_of_exactly_its_size_per_part_after_the_system_prompt():
    """docs/adapters.md: `hidden_tokens=N` adds one fixed-size `system` block of exactly N
    tokens right after the system prompt (one block per part for a tuple of sizes); a part of
    0 is no block (a harness that logs its whole prompt leaves it out)."""
    from replay.render._render import HIDDEN_PREFIX_TEXT

    r = Renderer(counter_for("gpt-5"))
    items = [UserItem("go")]

    def head(hidden):
        return r.render(items, system=SYSTEM, tools=TOOLS, index=0, request_id="r",
                        thread="main", ts=TS, model="gpt-5", provider="openai",
                        hidden_tokens=hidden)

    plain = _render(r, items)
    one = head(3000)
    assert list(one.kinds) == ["tool", "tool", "system", "system", "user"]
    assert one.block_tokens.tolist()[3] == 3000
    assert one.block_tokens.tolist()[:3] == plain.block_tokens.tolist()[:3]
    assert r.table.text_of(int(one.block_ids[3])) == HIDDEN_PREFIX_TEXT
    assert one.total == plain.total + 3000
    parts = head((1000, 0, 2000))
    assert list(parts.kinds) == ["tool", "tool", "system", "system", "system", "user"]
    assert parts.block_tokens.tolist()[3:5] == [1000, 2000]
    assert parts.kind_index.head_end == 4 and one.kind_index.head_end == 3
    assert head(0).block_ids.tolist() == plain.block_ids.tolist()


def test_a_new_head_version_without_an_unlogged_part_resends_the_system_prompt_same_size():
    """A restarted harness re-sends its head as other content of the same size: with no
    unlogged part, the logged system prompt's (version 0 is the prompt as logged)."""
    from replay.prefix import prefix_diff

    r = Renderer(counter_for("gpt-5"))
    items = _conversation()

    def head(version):
        return r.render(items, system=SYSTEM, tools=TOOLS, index=version, request_id="r",
                        thread="main", ts=TS, model="gpt-5", provider="openai",
                        head_version=version)

    before, after = head(0), head(1)
    assert r.table.text_of(int(before.block_ids[2])) == SYSTEM
    assert before.block_ids[2] != after.block_ids[2]
    assert before.block_tokens.tolist() == after.block_tokens.tolist()
    assert prefix_diff(before, after, r.table).first_mismatch_block == 2


def test_the_request_carries_its_recorded_output_and_whether_it_was_estimated():
    r = Renderer(counter_for("gpt-5"))
    req = r.render([UserItem("go")], system=SYSTEM, tools=TOOLS, index=3, request_id="r3",
                   thread="sub", ts=TS, model="gpt-5", provider="openai", output_tokens=250,
                   estimated_output=False)
    assert (req.index, req.request_id, req.thread, req.ts) == (3, "r3", "sub", TS)
    assert (req.model, req.provider) == ("gpt-5", "openai")
    assert (req.output_tokens, req.estimated_output) == (250, False)
    default = _render(r, [UserItem("go")])
    assert (default.output_tokens, default.estimated_output) == (0, True)


def test_a_user_message_known_only_by_its_size_counts_that_size():
    """`UserItem.estimated_tokens`: a message known only by its size (context the log does
    not hold) bills that size (plus its message framing), whatever its placeholder text."""
    r = Renderer(counter_for("gpt-5"))
    req = _render(r, [UserItem("[injected context]", estimated_tokens=1234)], system="",
                  tools=[])
    info = r.table.blocks[int(req.block_ids[0])]
    overhead = r.table.counter.family.message_overhead
    assert (info.tokens, info.overhead, info.sized_only) == (1234 + overhead, overhead, True)
    assert req.total == 1234 + overhead


def test_an_empty_assistant_turn_still_frames_a_message():
    r = Renderer(counter_for("gpt-5"))
    req = _render(r, [UserItem("go"), AssistantItem(()), UserItem("again")], system="",
                  tools=[])
    assert list(req.kinds) == ["user", "text", "user"]
    assert req.item_index.tolist() == [0, 1, 2]
    info = r.table.blocks[int(req.block_ids[1])]
    overhead = r.table.counter.family.message_overhead
    assert (info.text, info.starts_message, info.tokens) == ("", True, overhead)


def test_a_view_list_changed_by_the_caller_after_rendering_renders_as_changed():
    """Without `hand_over` the renderer keeps a copy of the view: a caller that changes its list
    in place and renders it again gets the changed view's blocks."""
    r = Renderer(counter_for("gpt-5"))
    view = _conversation()
    _render(r, view)
    view[3] = UserItem("A different last message.")
    req = _render(r, view)
    _assert_same_blocks(req, _fresh(r, view, system=SYSTEM, tools=TOOLS, thread="main",
                                    model="gpt-5"))
    assert r.table.text_of(int(req.block_ids[-1])) == "A different last message."


def test_items_rendered_by_two_renderers_take_each_renderer_s_own_blocks():
    """An item keeps the first renderer's blocks on itself; another renderer (another block
    table, other ids) renders it with its own table's ids, then and later."""
    items = _conversation()
    first = Renderer(counter_for("gpt-5"))
    _render(first, items)
    second = Renderer(counter_for("gpt-5"))
    _render(second, [UserItem("something else first")], system="other", tools=[])
    for _ in range(2):
        req = _render(second, items)
        texts = [second.table.text_of(int(i)) for i in req.block_ids[3:]]
        assert texts[0] == "Fix the failing test." and texts[-1] == "Also keep the style."
        second.forget_thread("main")
    again = _render(first, items)
    assert [first.table.text_of(int(i)) for i in again.block_ids[3:]] == texts


def test_packing_items_compresses_the_blocks_they_added_from_since_on():
    """`pack_items(items, since, start)`: the long contents of the blocks `items[start:]`
    added to the table (ids from `since` on) are packed and read back the same; older blocks,
    short ones and those of the items before `start` are not."""
    from replay.render._request import PACK_MIN_CHARS

    r = Renderer(counter_for("gpt-5"))
    old = "an old transcript line\n" * 40
    base = [UserItem("summarize"), UserItem(old)]
    _render(r, base)
    since = len(r.table)
    long = ["new transcript line {k}\n" * 40 for k in range(2)]
    items = [*base, UserItem(long[0]), ToolResultItem("c", "read_file", long[1]), UserItem("ok")]
    req = _render(r, items)
    assert all(len(t) >= PACK_MIN_CHARS for t in (old, *long))
    new_ids = [int(i) for i in req.block_ids[-3:]]
    assert new_ids[0] == since
    r.pack_items(items, since, start=3)  # the first new item rendered before: not packed
    assert [r.table.texts[i] is None for i in new_ids] == [False, True, False]
    r.pack_items(items, since)
    assert [r.table.texts[i] is None for i in new_ids] == [True, True, False]
    assert r.table.texts[int(req.block_ids[-4])] == old  # added before `since`
    assert [r.table.text_of(i) for i in new_ids[:2]] == long


def test_a_tool_definition_block_is_its_three_fields_defaults_included():
    """docs/log-format.md: a tool is `{name, description, input_schema}` as the request's
    `tools` list sends it; one logged without a schema still sends an empty one."""
    import json

    r = Renderer(counter_for("gpt-5"))
    req = _render(r, [UserItem("go")])
    sent = [json.loads(r.table.text_of(int(i))) for i in req.block_ids[:2]]
    assert sent == [
        {"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}},
        {"name": "run_tests", "description": "Run the tests.", "input_schema": {}},
    ]


def test_a_thread_sent_with_other_tool_definitions_renders_them():
    r = Renderer(counter_for("gpt-5"))
    items = _conversation()
    _render(r, items)
    fewer = [TOOLS[1]]
    req = _render(r, items, tools=fewer)
    assert list(req.kinds[:2]) == ["tool", "system"]
    _assert_same_blocks(req, _fresh(r, items, system=SYSTEM, tools=fewer, thread="main",
                                    model="gpt-5"))
    again = _render(r, items)
    assert list(again.kinds[:3]) == ["tool", "tool", "system"]


def test_a_thread_extends_its_own_view_when_the_fork_shares_no_more_of_it():
    """`fork`: another thread's last view is used only when it shares more of the new view than
    the thread's own; as much, and the thread extends its own buffer in place."""
    r = Renderer(counter_for("gpt-5"))
    items = _conversation()

    def send(thread, view, fork=None):
        return r.render(view, system=SYSTEM, tools=TOOLS, index=0, request_id="r",
                        thread=thread, ts=TS, model="gpt-5", provider="openai", fork=fork)

    send("main", items)
    sub = send("sub", items, fork="main")
    send("main", [*items, UserItem("main goes on")])
    more = send("sub", [*items, UserItem("sub goes on")], fork="main")
    assert np.shares_memory(more.block_ids, sub.block_ids)


def test_packing_items_lets_the_token_memo_drop_their_texts():
    """`pack_items` releases the packed texts from the token memo too: nothing keeps a
    packed transcript alive once the renderer forgets the view."""
    import gc
    import weakref

    class Text(str):  # a str that can be watched (same hash and equality as its value)
        pass

    r = Renderer(counter_for("gpt-5"))
    text = Text("a long summarizer transcript line\n" * 40)
    watch = weakref.ref(text)
    since = len(r.table)
    items = [UserItem("summarize"), UserItem(text)]
    _render(r, items)
    r.pack_items(items, since)
    r.forget_thread("main")
    del text, items
    gc.collect()
    assert watch() is None


def test_a_summary_sent_as_the_user_s_is_the_last_user_turn():
    """`KindIndex`: the last user turn is the last user or summary block, and a summary is a
    user-role block; one sent as the assistant's text is neither."""
    r = Renderer(counter_for("gpt-5"))
    steps = [UserItem("go"), AssistantItem((Block("text", text="done"),))]
    req = _render(r, [*steps, SummaryItem("what happened", role="user")], system="", tools=[])
    assert list(req.kinds) == ["user", "text", "summary"]
    assert (req.kind_index.last_turn, req.kind_index.last_user_role) == (2, 2)
    assert (KindIndex.of(req.kinds).last_turn, KindIndex.of(req.kinds).last_user_role) == (2, 2)
    req = _render(r, [*steps, SummaryItem("what I did", role="assistant")], system="", tools=[])
    assert (req.kind_index.last_turn, req.kind_index.last_user_role) == (0, 0)


def test_a_view_rendered_with_new_tool_definition_objects_renders_those():
    """Tool definitions are told apart by object: ones freed after a request do not lend their
    identity (and blocks) to new ones."""
    r = Renderer(counter_for("gpt-5"))
    for k in range(30):
        req = _render(r, [UserItem("go")], tools=[ToolDef(name=f"tool_{k}", description=f"{k}")])
        assert r.table.text_of(int(req.block_ids[0])).count(f'"tool_{k}"') == 1


def test_a_list_prefix_slices_pickles_and_compares_as_its_own_elements():
    """A `ListPrefix` is a view of the first n elements: its slices stop there, it pickles
    as a plain list of them, and two prefixes of one list compare by their own lengths."""
    import pickle

    from replay.render._request import ListPrefix

    items = ["tool", "system", "user", "text"]
    prefix = ListPrefix(items, 3)
    assert prefix[1:] == ["system", "user"] and prefix[:] == items[:3]
    back = pickle.loads(pickle.dumps(prefix))
    assert type(back) is list and back == items[:3]
    assert prefix == ListPrefix(items, 3) and prefix != ListPrefix(items, 4)


def test_array_views_compare_by_their_elements_and_read_them_as_python_values():
    from replay.render._request import IntsView, KindNames

    ints = IntsView(np.array([5, 6, 7], dtype=np.int64))
    assert ints == IntsView(np.array([5, 6, 7], dtype=np.int64))
    assert ints != IntsView(np.array([5, 6, 8], dtype=np.int64))
    assert ints == [5, 6, 7] and ints != [5, 6] and ints != [5, 6, 7, 8]
    assert type(ints[0]) is int and ints[1:] == [6, 7]
    kinds = KindNames(np.array([0, 1, 2, 7], dtype=np.int8))
    assert kinds[0] == "tool" and kinds[-1] == "tool_result"
    assert kinds == ["tool", "system", "user", "tool_result"] and kinds != ["tool", "system"]


def test_kind_index_of_kinds_built_elsewhere():
    """`KindIndex.of`, field by field as documented: the head's last block, the last user or
    summary block, the last user-role block (tool results included), the last block that is
    not thinking, the first thinking block; -1 for none."""
    kinds = ["tool", "system", "user", "thinking", "text", "tool_call", "tool_call",
             "tool_result", "tool_result", "thinking"]
    index = KindIndex.of(kinds)
    assert index.codes.tolist() == [0, 1, 2, 5, 4, 6, 6, 7, 7, 5]
    assert (index.head_end, index.last_turn, index.last_user_role) == (1, 2, 8)
    assert (index.last_non_thinking, index.first_thinking) == (8, 3)
    none = KindIndex.of(["text", "tool_call"])
    assert (none.head_end, none.last_turn, none.last_user_role, none.first_thinking) == (
        -1, -1, -1, -1
    )
    assert none.last_non_thinking == 1
    assert KindIndex.of(["tool", "system"]).head_end == 1
    assert KindIndex.of(["thinking", "user"]).first_thinking == 0
    assert KindIndex.of(["user", "text"]).first_thinking == -1  # no thinking block at all


def test_a_request_s_total_message_ends_and_tokens_before_on_small_views():
    r = Renderer(counter_for("gpt-5"))
    empty = _render(r, [], system="", tools=[])
    assert empty.total == 0 and len(empty.block_ids) == 0 and empty.message_ends() == []
    one = _render(r, [UserItem("only")], system="", tools=[])
    assert one.message_ends() == [0] and one.tokens_before(0) == 0
    two = _render(r, [UserItem("a"), AssistantItem((Block("text", text="b"),
                                                     Block("text", text="c")))],
                  system="", tools=[])
    assert two.message_ends() == [0, 2]
    assert two.tokens_before(2) == int(two.block_tokens[0] + two.block_tokens[1])


def test_a_block_of_the_minimum_packed_length_packs_and_keeps_its_id():
    """`PACK_MIN_CHARS`: shorter contents are not packed; one that long is, and interning it
    again (as it was or known only by its size) finds the same block by its digest."""
    import gc
    import weakref

    from replay.render._request import PACK_MIN_CHARS

    class Text(str):  # a str that can be watched (same hash and equality as its value)
        pass

    r = Renderer(counter_for("gpt-5"))
    t = r.table
    content = "y" * PACK_MIN_CHARS
    assert t.pack(t.intern("user", "z" * (PACK_MIN_CHARS - 1), True)) is None
    block = t.intern("user", content, True)
    assert t.pack(block) == content and t.texts[block] is None
    assert t.intern("user", content, True) == block and t.text_of(block) == content
    text = Text("w" * PACK_MIN_CHARS)
    watch = weakref.ref(text)
    sized = t.intern("user", text, True, 300)
    assert t.pack(sized) == text
    del text
    gc.collect()
    assert watch() is None  # not kept alive by the table's keys
    assert t.intern("user", "w" * PACK_MIN_CHARS, True, 300) == sized
    assert t.intern("user", "w" * PACK_MIN_CHARS, True, 301) != sized


def test_prefix_keys_are_equal_only_for_equal_prefixes_of_one_model():
    """`prefix_keys[i]`: the chained hash of blocks 0..i, and of the model the keys are chained
    for: a prompt that differs at its first block differs at every key after it, and the same
    prompt for another model shares no key."""
    r = Renderer(counter_for("gpt-5"))
    tail = [AssistantItem((Block("text", text="same reply"),)), UserItem("same next turn")]
    one = _fresh(r, [UserItem("first"), *tail], system="", tools=[], thread="a", model="gpt-5")
    two = _fresh(r, [UserItem("second"), *tail], system="", tools=[], thread="b", model="gpt-5")
    assert one.block_ids.tolist()[1:] == two.block_ids.tolist()[1:]
    assert all(a != b for a, b in zip(one.prefix_keys, two.prefix_keys, strict=True))
    same = _fresh(r, [UserItem("first"), *tail[:1]], system="", tools=[], thread="c",
                  model="gpt-5")
    assert list(same.prefix_keys) == list(one.prefix_keys)[:2]
    mini = _fresh(r, [UserItem("first"), *tail], system="", tools=[], thread="a",
                  model="gpt-5-mini")
    assert mini.block_ids.tolist() == one.block_ids.tolist()
    assert not set(mini.prefix_keys) & set(one.prefix_keys)


def test_a_tool_call_that_opens_its_message_pays_the_framing_and_the_call_syntax():
    """A message pays its framing once and a tool call pays its syntax on top: a call that
    opens the assistant's message pays both."""
    r = Renderer(counter_for("gpt-5"))
    call = Block("tool_call", call_id="c1", name="run_tests", arguments={})
    req = _render(r, [UserItem("go"), AssistantItem((call,))], system="", tools=[])
    info = r.table.blocks[int(req.block_ids[1])]
    fam = r.table.counter.family
    assert info.kind == "tool_call" and info.starts_message
    assert info.overhead == fam.message_overhead + fam.tool_call_overhead
    assert info.tokens == info.overhead + r.table.counter.count(info.text)
