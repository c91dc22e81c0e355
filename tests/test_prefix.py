"""Prefix diff: the fast block-then-token diff equals a naive token-by-token reference."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import gen
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.cache._store import CachedPrompt
from replay.cache.automatic import PrefixMatcher, shared_with
from replay.log import ToolDef
from replay.prefix import (
    PrefixDiff,
    common_block_tokens,
    materialize_tokens,
    naive_first_mismatch,
    prefix_diff,
    remembered_block_pairs,
)
from replay.render import Renderer
from replay.render._request import KindIndex
from replay.strategies import AssistantItem, Block, SummaryItem, ToolResultItem, UserItem
from replay.tokens import counter_for

TS = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TOOLS = [ToolDef(name="read_file", description="Read a file.", input_schema={"type": "object"})]


def _renderer(model: str = "gpt-5") -> Renderer:
    return Renderer(counter_for(model))


def _render(renderer, items, *, system="You are a coding agent.", model="gpt-5", tools=TOOLS):
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


def _naive(renderer, prev, cur) -> int:
    table = renderer.table
    return naive_first_mismatch(materialize_tokens(prev, table), materialize_tokens(cur, table))


@settings(max_examples=200, deadline=None)
@given(gen.edited_pair())
def test_fast_prefix_diff_equals_naive_reference(pair):
    prev_items, cur_items, system, new_system = pair
    r = _renderer()
    prev = _render(r, prev_items, system=system)
    cur = _render(r, cur_items, system=new_system)
    diff = prefix_diff(prev, cur, r.table)
    naive = _naive(r, prev, cur)
    assert diff.first_mismatch_token == naive
    # The reference has one element per token: the renderer's counts are the real sizes.
    assert len(materialize_tokens(prev, r.table)) == prev.total
    assert len(materialize_tokens(cur, r.table)) == cur.total
    if not diff.is_break:
        assert naive == prev.total  # no break: the old prompt is a prefix of the new one
    if naive < prev.total:
        assert diff.is_break
    if diff.first_mismatch_block is not None:
        b = diff.first_mismatch_block
        assert cur.tokens_before(b) <= diff.first_mismatch_token <= cur.tokens_before(b + 1)


@settings(max_examples=100, deadline=None)
@given(gen.histories(), st.lists(gen.histories(max_items=3), max_size=3))
def test_append_only_extension_mismatches_at_previous_total(items, more):
    r = _renderer()
    prev = _render(r, items)
    cur = _render(r, items + sum(more, []))
    diff = prefix_diff(prev, cur, r.table)
    assert diff.first_mismatch_token == prev.total
    assert not diff.is_break
    assert diff.where == "tail"
    # Nothing differs: no block and no message (not the last message of the longer prompt).
    assert (diff.first_mismatch_block, diff.message_index) == (None, None)
    assert _naive(r, prev, cur) == prev.total


@settings(max_examples=100, deadline=None)
@given(gen.edited_pair())
def test_prefix_keys_equal_iff_block_prefixes_equal(pair):
    prev_items, cur_items, system, new_system = pair
    r = _renderer()
    prev = _render(r, prev_items, system=system)
    cur = _render(r, cur_items, system=new_system)
    fresh = _render(r, cur_items, system=new_system)  # no reuse from a previous request
    assert cur.prefix_keys == fresh.prefix_keys
    assert len(cur.prefix_keys) == len(cur.block_ids)
    for i in range(min(len(prev.block_ids), len(cur.block_ids))):
        same_prefix = bool(np.array_equal(prev.block_ids[: i + 1], cur.block_ids[: i + 1]))
        assert (prev.prefix_keys[i] == cur.prefix_keys[i]) == same_prefix


def test_prefix_keys_differ_across_models():
    r = _renderer()
    items = [UserItem("same text")]
    a = _render(r, items, model="gpt-5")
    b = _render(r, items, model="gpt-4o")
    assert a.prefix_keys[-1] != b.prefix_keys[-1]


def test_first_request_and_where_labels():
    r = _renderer()
    items = [UserItem("task"), AssistantItem((Block("text", text="ok"),)), UserItem("more")]
    first = _render(r, items)
    assert prefix_diff(None, first, r.table) == PrefixDiff(0, None, None, "first", False)

    edited = [items[0], AssistantItem((Block("text", text="okay"),)), items[2]]
    cur = _render(r, edited)
    diff = prefix_diff(first, cur, r.table)
    assert (diff.where, diff.message_index, diff.is_break) == ("message 1", 1, True)

    sys_changed = _render(r, items, system="Another system prompt.")
    diff = prefix_diff(first, sys_changed, r.table)
    assert (diff.where, diff.message_index) == ("system", None)  # no message of the history

    other_tools = [ToolDef(name="write_file")]
    tools_changed = _render(r, items, tools=other_tools)
    diff = prefix_diff(first, tools_changed, r.table)
    assert diff.where == "tools" and diff.first_mismatch_block == 0
    assert diff.message_index is None and diff.is_break  # a rewrite at block 0 breaks too
    assert diff.first_mismatch_token == _naive(r, first, tools_changed) < first.total

    shorter = _render(r, items[:2])
    diff = prefix_diff(first, shorter, r.table)
    assert diff.is_break and diff.where == "tail"
    assert diff.first_mismatch_token == shorter.total


def test_message_index_of_a_rewritten_first_message_and_of_a_shortened_prompt():
    """A rewrite in message 0 is reported in message 0 (a view item, not "no message"); a
    prompt cut short, the old one's prefix, names the last message it kept."""
    r = _renderer()
    items = [UserItem("task"), AssistantItem((Block("text", text="ok"),)), UserItem("more")]
    first = _render(r, items)
    edited = _render(r, [UserItem("another task"), *items[1:]])
    diff = prefix_diff(first, edited, r.table)
    assert (diff.where, diff.message_index, diff.is_break) == ("message 0", 0, True)
    shorter = _render(r, items[:2])
    diff = prefix_diff(first, shorter, r.table)
    assert (diff.where, diff.message_index, diff.is_break) == ("tail", 1, True)
    # Cut back to message 0: it names view item 0, a message (not "no message").
    diff = prefix_diff(first, _render(r, items[:1]), r.table)
    assert (diff.where, diff.message_index, diff.is_break) == ("tail", 0, True)
    # Cut back to the head (tools + system): it kept no message, so it names none (it named
    # view item -1, the head's, in `first_mismatch_message`).
    head = _render(r, [])
    diff = prefix_diff(first, head, r.table)
    assert (diff.where, diff.message_index, diff.is_break) == ("tail", None, True)


def test_a_prompt_that_drops_a_trailing_empty_block_breaks_the_old_one():
    """An empty block is still a block of the request (a delimiter, as the reference has it):
    dropping it rewrites the old prompt though no token count changes, and adding it back
    extends the shorter one."""
    r = _renderer()
    user = UserItem("q")
    longer = _render(r, [user, AssistantItem((Block("text", text="abc"), Block("text", text="")))])
    shorter = _render(r, [user, AssistantItem((Block("text", text="abc"),))])
    assert longer.total == shorter.total
    diff = prefix_diff(longer, shorter, r.table)
    assert (diff.first_mismatch_token, diff.where, diff.is_break) == (shorter.total, "tail", True)
    assert diff.message_index == 1
    back = prefix_diff(shorter, longer, r.table)
    assert (back.first_mismatch_token, back.is_break, back.message_index) == (
        shorter.total, False, None
    )


def test_mismatch_inside_a_block_counts_shared_tokens():
    r = _renderer()
    counter = r.table.counter
    head = "line one of the file\nline two of the file\n"
    prev = _render(r, [UserItem("read it"), ToolResultItem("c", "read_file", head + "old tail")])
    cur = _render(r, [UserItem("read it"), ToolResultItem("c", "read_file", head + "new tail")])
    diff = prefix_diff(prev, cur, r.table)
    block = diff.first_mismatch_block
    overhead = r.table.blocks[int(cur.block_ids[block])].overhead
    shared_in_block = len(counter.raw_tokens(head))
    assert diff.first_mismatch_token == cur.tokens_before(block) + overhead + shared_in_block
    assert diff.first_mismatch_token == _naive(r, prev, cur)


def test_packed_blocks_diff_and_materialize_as_before():
    r = _renderer()
    head = "".join(f"line {n} of a long transcript \ud800\n" for n in range(400))
    prev_items = [UserItem("summarize"), UserItem(head + "old tail")]
    cur_items = [UserItem("summarize"), UserItem(head + "new tail")]
    prev = _render(r, prev_items)
    since = len(r.table)
    cur = _render(r, cur_items)
    expected = prefix_diff(prev, cur, r.table), _naive(r, prev, cur)
    texts = [b.text for b in r.table.blocks]
    r.pack_items(cur_items, since)  # as `_Run._summarizer` does with its call's items
    packed = [i for i, b in enumerate(r.table.blocks) if b.text is None]
    assert packed == [int(cur.block_ids[-1])]  # the long block only this view added
    r.pack_items(prev_items, 0)
    assert [i for i, b in enumerate(r.table.blocks) if b.text is None] == sorted(
        {int(prev.block_ids[-1]), *packed}
    )
    assert [r.table.text_of(i) for i in range(len(r.table))] == texts  # surrogates included
    assert (prefix_diff(prev, cur, r.table), _naive(r, prev, cur)) == expected


def test_packed_small_blocks_share_a_dictionary_and_unpack_exactly():
    from replay.render._request import PACK_DICT_BYTES, PACK_MIN_CHARS

    r = _renderer()
    words = [f"identifier_{k}_{k * k % 97}" for k in range(300)]  # a shared vocabulary
    texts = [
        " ".join(words[(n * 37 + k * 11) % 300] for k in range(60)) + f" é \ud800 {n}"
        for n in range(60)
    ]
    ids = [r.table.intern("user", t, True) for t in texts]
    assert all(len(t) >= PACK_MIN_CHARS for t in texts)
    sizes = []
    for i in ids:
        assert r.table.pack(i) is not None
        sizes.append(len(r.table._packed[i]))
    assert len(r.table._dictionary) == PACK_DICT_BYTES  # filled by the first ones, then kept
    assert [r.table.text_of(i) for i in ids] == texts
    # The later blocks, packed with the earlier ones' vocabulary, pack smaller than the first.
    assert max(sizes[-10:]) < sizes[0]


def test_views_of_a_chain_table_share_blocks_and_packed_texts():
    # Batch replays sessions of one chain through views of one table: what one view interns
    # or packs, with the zlib dictionary it grows, the others read.
    from replay.engine._chain import ChainTable

    counter = _renderer().table.counter
    chain = ChainTable(counter)
    one, two = chain.view(counter), chain.view(counter)
    texts = [" ".join(f"word_{n}_{k}" for k in range(200)) for n in range(3)]
    ids = [one.intern("user", t, True) for t in texts]
    assert [two.intern("user", t, True) for t in texts] == ids
    assert one.pack(ids[0]) == texts[0]
    assert two.pack(ids[1]) == texts[1]  # packed with the dictionary the other view began
    assert two.blocks[ids[0]].text is None and one.blocks[ids[1]].text is None
    assert [v.text_of(i) for v in (one, two, chain) for i in ids] == texts * 3
    assert one.blocks[ids[2]] == chain.blocks[ids[2]]
    assert [b.tokens for b in two.blocks] == [
        counter.count(t) + b.overhead for t, b in zip(texts, two.blocks, strict=True)
    ]


def test_a_packed_block_keeps_its_id_and_lets_its_text_go():
    # Block ids are keyed by text; a packed block by digest, so that no key holds its text.
    import gc
    import weakref

    from replay.engine._chain import ChainTable
    from replay.render._request import PACK_MIN_CHARS

    class Text(str):  # a str that can be watched (same hash and equality as its value)
        pass

    r = _renderer()
    counter = r.table.counter
    chain = ChainTable(counter)
    for table in (r.table, chain.view(counter)):
        content = "x" * PACK_MIN_CHARS + f" {id(table)}"
        text = Text(content)
        sized = table.intern("thinking", "", False, 7)
        block = table.intern("user", text, True)
        other_kind = table.intern("assistant", content, True)
        watch = weakref.ref(text)
        assert table.pack(block) == content
        counter.release(content)  # (what `Renderer.pack_items` does)
        del text
        gc.collect()
        assert watch() is None  # not kept alive by the table's keys
        assert table.intern("user", content, True) == block
        assert table.intern("assistant", content, True) == other_kind
        assert table.intern("user", content, False) not in (block, other_kind)
        assert table.intern("thinking", "", False, 7) == sized
        assert table.intern("thinking", "", False, 8) != sized
        assert table.text_of(block) == content


def test_a_chain_table_interns_a_fitted_text_apart_for_each_count():
    """engine/_chain.py: a text some session's fit sized is interned under its fitted count.
    Sessions that fitted it to one count share its block; one that fitted another count, or
    none, gets another block (its length differs); a block of fixed size ignores the fit; and
    after a fitted text, every other text is interned in the chain's shared ids again."""
    from replay.engine._chain import ChainTable
    from replay.tokens._overrides import FittedCounter

    counter = _renderer().table.counter
    chain = ChainTable(counter)
    text = " ".join(f"word_{k}" for k in range(50))
    plain = chain.view(counter)
    fit_7, also_7 = (chain.view(FittedCounter(counter, {text: 7})) for _ in range(2))
    fit_9 = chain.view(FittedCounter(counter, {text: 9}))
    unfitted, seven, nine = (t.intern("user", text, True) for t in (plain, fit_7, fit_9))
    assert also_7.intern("user", text, True) == seven
    assert len({unfitted, seven, nine}) == 3
    overhead = chain.blocks[seven].overhead
    assert [chain.blocks[b].tokens - overhead for b in (seven, nine)] == [7, 9]
    assert chain.blocks[unfitted].tokens - overhead == counter.count(text)
    assert fit_7.intern("user", "another text", True) == plain.intern("user", "another text", True)
    assert fit_9.intern("thinking", text, False, 5) == plain.intern("thinking", text, False, 5)
    # Sized by the fit, but a text the log holds: not a block known only by its size (which
    # the next fit would leave out, and which is no user turn).
    assert not any(chain.blocks[b].sized_only for b in (seven, nine))
    assert chain.blocks[seven].text == text


def test_a_packed_fitted_block_keeps_its_id_and_lets_its_text_go():
    """A block interned under a fitted count is re-keyed by digest when packed, as any other
    (`_id_maps`): no key holds its text."""
    import gc
    import weakref

    from replay.engine._chain import ChainTable
    from replay.render._request import PACK_MIN_CHARS
    from replay.tokens._overrides import FittedCounter

    class Text(str):  # a str that can be watched (same hash and equality as its value)
        pass

    counter = _renderer().table.counter
    content = "y" * PACK_MIN_CHARS + " fitted"
    fitted = ChainTable(counter).view(FittedCounter(counter, {content: 11}))
    text = Text("y" * PACK_MIN_CHARS + " fitted")
    block = fitted.intern("user", text, True)
    watch = weakref.ref(text)
    assert fitted.pack(block) == content
    counter.release(content)
    del text
    gc.collect()
    assert watch() is None
    assert fitted.intern("user", content, True) == block
    assert fitted.text_of(block) == content


def test_summary_items_and_merged_results_render_as_expected():
    r = _renderer()
    call = AssistantItem(
        (
            Block("tool_call", call_id="a", name="read_file", arguments={"path": "x"}),
            Block("tool_call", call_id="b", name="read_file", arguments={"path": "y"}),
        )
    )
    items = [
        SummaryItem("summary of earlier work"),
        call,
        ToolResultItem("a", "read_file", "x" * 50),
        ToolResultItem("b", "read_file", ""),
    ]
    req = _render(r, items)
    assert req.kinds == [
        "tool",
        "system",
        "summary",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
    ]
    infos = [r.table.blocks[i] for i in req.block_ids.tolist()]
    # Parallel results share one user message: only the first one pays the message framing.
    assert infos[5].starts_message and not infos[6].starts_message
    assert infos[6].tokens == 0
    # Runs of tool_call (tool_result) blocks share one lookback position.
    assert req.positions.tolist() == [0, 1, 2, 3, 3, 4, 4]
    assert req.item_index.tolist() == [-1, -1, 0, 1, 1, 2, 3]
    assert req.total == int(req.block_tokens.sum())


def test_a_summary_sent_as_the_assistant_s_is_that_turn_s_text():
    r = _renderer()
    first = UserItem("fix the parser")
    as_user = _render(r, [first, SummaryItem("what was done")])
    as_assistant = _render(r, [first, SummaryItem("what was done", role="assistant")])
    assert as_user.kinds[-2:] == ["user", "summary"]
    assert as_assistant.kinds[-2:] == ["user", "text"]
    # Same text, same size; but the last user turn (where a client's breakpoint and OpenAI's
    # cache check end) is the first message, not the summary.
    assert as_user.total == as_assistant.total
    assert KindIndex.of(as_user.kinds).last_turn == len(as_user.kinds) - 1
    assert KindIndex.of(as_assistant.kinds).last_turn == len(as_assistant.kinds) - 2


def _edits():
    """One step of a request stream: append items, keep the first k, replace item k (by a
    new one), send the same items again, or go back to the items of an earlier request."""
    return st.one_of(
        st.tuples(st.just("back"), st.integers(0, 8), st.just([])),
        st.tuples(st.just("append"), st.just(0), gen.histories(max_items=3)),
        st.tuples(st.just("cut"), st.integers(0, 12), st.just([])),
        st.tuples(st.just("edit"), st.integers(0, 12), gen.histories(max_items=1)),
        st.tuples(st.just("same"), st.just(0), st.just([])),
    )


def _block_lcp(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


@settings(max_examples=150, deadline=None)
@given(gen.histories(max_items=8), st.lists(_edits(), min_size=1, max_size=8), st.data())
def test_prefix_matcher_equals_shared_with_over_a_request_stream(items, edits, data):
    """The matcher's memos (block prefixes carried from one request to the next, token counts
    of block pairs) give what comparing each prompt with each request from scratch gives,
    whatever prompts are asked about, in whatever order, and skipped or asked twice."""
    r = _renderer()
    matcher = PrefixMatcher()
    held: list[CachedPrompt] = []
    requests, seen = [_render(r, items)], [items]
    for op, at, more in edits:
        if op == "back":
            items = seen[at % len(seen)]
        elif op == "append":
            items = items + more
        elif op == "cut":
            items = items[:at]
        elif op == "edit" and more and at < len(items):
            items = items[:at] + more + items[at + 1 :]
        requests.append(_render(r, items or [UserItem("start over")]))
        seen.append(items)
    whole: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # id(prompt) → its blocks, as written
    for req in requests:
        if held:
            asked = data.draw(st.lists(st.sampled_from(held), max_size=2 * len(held)))
            for p in asked:
                ids, cum = whole[id(p)]
                assert matcher.blocks(p, req.block_ids) == _block_lcp(ids, req.block_ids)
                reference = CachedPrompt(ids, cum, last_use=TS, ready_at=TS, ttl=300)
                assert matcher.shared(p, req, r.table) == shared_with(reference, req, r.table)
                assert shared_with(p, req, r.table) == shared_with(reference, req, r.table)
        latest = CachedPrompt(req.block_ids, req.cum_tokens, last_use=TS, ready_at=TS, ttl=300)
        held.append(latest)
        whole[id(latest)] = (req.block_ids, req.cum_tokens)
        # As the simulator does once a thread's prompt is written: the others held as where
        # they part from it (in any order: a prompt's anchor may be rebased before it).
        if data.draw(st.booleans()):
            for p in data.draw(st.permutations(held[:-1])):
                p.rebase(latest, matcher.blocks(p, req.block_ids))
        for p in held:
            ids, cum = whole[id(p)]
            assert p.size == len(ids) and p.total == (int(cum[-1]) if len(cum) else 0)
            assert p.ids().tolist() == ids.tolist() and p.cums().tolist() == cum.tolist()
            assert [p.block_at(i) for i in range(p.size)] == ids.tolist()
            if p.anchor is not None:  # what it shares with its anchor is no longer held twice
                assert p.anchor.ids(0, p.head).tolist() == ids[: p.head].tolist()
                assert not np.shares_memory(p.block_ids, ids)


def test_a_block_without_framing_never_shares_tokens_with_a_framed_one():
    """A result merged into the message before it (no framing) replaced by a user turn (which
    opens a message: framing first): the prompts part where the block starts, whatever text
    the two hold."""
    r = _renderer()
    text = "line one of the file\nline two of the file\n"
    call = AssistantItem(tuple(
        Block("tool_call", call_id=c, name="read_file", arguments={"path": c}) for c in "ab"
    ))
    start = [UserItem("read both"), call, ToolResultItem("a", "read_file", "first")]
    prev = _render(r, [*start, ToolResultItem("b", "read_file", text + "old")])
    cur = _render(r, [*start, UserItem(text + "new")])
    diff = prefix_diff(prev, cur, r.table)
    block = diff.first_mismatch_block
    assert r.table.blocks[int(prev.block_ids[block])].overhead == 0
    assert r.table.blocks[int(cur.block_ids[block])].overhead > 0
    assert diff.first_mismatch_token == cur.tokens_before(block) == _naive(r, prev, cur)


def test_blocks_of_two_kinds_without_framing_share_their_common_text():
    """Two blocks inside one assistant message (no framing either) of other kinds, text then
    thinking: nothing marks the kind, so the tokens their texts share are shared."""
    r = _renderer()
    text = "first I will look at the parser and its tests\n"
    opening = Block("text", text="Looking.")
    prev = _render(r, [UserItem("go"), AssistantItem((opening, Block("text", text=text + "a")))])
    cur = _render(r, [UserItem("go"),
                      AssistantItem((opening, Block("thinking", text=text + "b")))])
    diff = prefix_diff(prev, cur, r.table)
    block = diff.first_mismatch_block
    assert diff.first_mismatch_token == _naive(r, prev, cur)
    shared = len(r.table.counter.raw_tokens(text))
    assert diff.first_mismatch_token == cur.tokens_before(block) + shared > cur.tokens_before(block)


def test_tokens_shared_inside_a_block_are_on_the_provider_s_scale():
    """On a family with a calibration factor the first mismatch inside a block is the raw
    tokens the texts share, scaled as block sizes are (framing as it is)."""
    r = _renderer("claude-opus-4-7")
    counter = r.table.counter
    assert counter.factor != 1.0
    head = "const task = store.get(Number(id)); // the id arrives as a string\n" * 6
    model = "claude-opus-4-7"
    prev = _render(r, [UserItem("read it"), ToolResultItem("c", "read_file", head + "old tail")],
                   model=model)
    cur = _render(r, [UserItem("read it"), ToolResultItem("c", "read_file", head + "new tail")],
                  model=model)
    diff = prefix_diff(prev, cur, r.table)
    block = diff.first_mismatch_block
    overhead = r.table.blocks[int(cur.block_ids[block])].overhead
    raw = counter.shared_tokens(head + "old tail", head + "new tail")
    assert raw >= len(counter.raw_tokens(head))
    assert diff.first_mismatch_token == (
        cur.tokens_before(block) + overhead + counter.scale_position(raw)
    )
    assert counter.scale_position(raw) != raw


def test_contents_pack_from_the_minimum_length_on():
    from replay.render._request import PACK_MIN_CHARS

    r = _renderer()
    at_min = r.table.intern("user", "a" * PACK_MIN_CHARS, True)
    below = r.table.intern("user", "b" * (PACK_MIN_CHARS - 1), True)
    assert r.table.pack(below) is None and r.table.blocks[below].text is not None
    assert r.table.pack(at_min) == "a" * PACK_MIN_CHARS
    assert r.table.blocks[at_min].text is None and r.table.text_of(at_min) == "a" * PACK_MIN_CHARS
    assert r.table.pack(at_min) is None  # packed already


def test_prompts_that_are_not_views_of_the_renderer_s_columns_are_diffed_block_by_block():
    """Requests with no lineage (copies made with `dataclasses.replace`, as tools and tests do)
    are not known to extend one another: a rewritten message is still a break."""
    r = _renderer()
    items = [UserItem("task"), AssistantItem((Block("text", text="ok"),)), UserItem("more")]
    first = replace(_render(r, items))
    edited = replace(_render(r, [items[0], AssistantItem((Block("text", text="okay"),)),
                                 items[2]]))
    assert first._lineage is None and edited._lineage is None
    diff = prefix_diff(first, edited, r.table)
    assert (diff.where, diff.message_index, diff.is_break) == ("message 1", 1, True)
    assert diff.first_mismatch_token == _naive(r, first, edited) < first.total


def test_the_first_difference_is_named_after_the_new_prompt_s_message():
    """The block where the prompts part is labelled with the item of the NEW prompt it belongs
    to: here the old prompt had a second text block in message 1 where the new one starts
    message 2."""
    r = _renderer()
    prev = _render(r, [UserItem("task"), AssistantItem((Block("text", text="ok"),
                                                        Block("text", text="and more"))),
                       UserItem("next")])
    cur = _render(r, [UserItem("task"), AssistantItem((Block("text", text="ok"),)),
                      UserItem("and more, next")])
    diff = prefix_diff(prev, cur, r.table)
    block = diff.first_mismatch_block
    assert (int(prev.item_index[block]), int(cur.item_index[block])) == (1, 2)
    assert (diff.where, diff.message_index) == ("message 2", 2)


def test_the_block_pair_memo_answers_each_pair_with_its_own_shared_tokens():
    """Within `remembered_block_pairs` each pair of blocks keeps its own answer: two pairs whose
    ids add up to the same number share nothing."""
    r = _renderer()
    table = r.table
    texts = ("alpha beta gamma", "alpha beta delta", "alpha zeta", "alpha beta gamma delta")
    a, b, c, d = (table.intern("user", text, True) for text in texts)
    assert a + d == b + c
    plain = common_block_tokens(table, a, d), common_block_tokens(table, b, c)
    overhead = table.blocks[a].overhead
    # "alpha beta gamma" | "alpha beta gamma delta"; "alpha beta delta" | "alpha zeta"
    assert plain == (overhead + len(table.counter.raw_tokens("alpha beta gamma")),
                     overhead + len(table.counter.raw_tokens("alpha")))
    with remembered_block_pairs():
        assert (common_block_tokens(table, a, d), common_block_tokens(table, b, c)) == plain
        assert (common_block_tokens(table, b, c), common_block_tokens(table, a, d)) == plain[::-1]


def test_the_reference_never_matches_across_block_boundaries_that_differ():
    """`materialize_tokens`: the first element of each block is tagged with every block before
    it, so the naive reference parts where the fast diff does: "hello" + " world" in two blocks
    against "hello world" in one (same tokens), and a text block against a thinking block of
    the same text inside one message (no framing) followed by the same block."""
    r = _renderer()
    split = _render(r, [UserItem("go"), AssistantItem((Block("text", text="hello"),
                                                       Block("text", text=" world"))),
                        UserItem("next")])
    joined = _render(r, [UserItem("go"), AssistantItem((Block("text", text="hello world"),)),
                         UserItem("next")])
    assert r.table.counter.raw_tokens("hello world")[:1] == r.table.counter.raw_tokens("hello")
    diff = prefix_diff(split, joined, r.table)
    assert diff.first_mismatch_token == _naive(r, split, joined)
    block = diff.first_mismatch_block
    overhead = r.table.blocks[int(joined.block_ids[block])].overhead
    assert diff.first_mismatch_token == joined.tokens_before(block) + overhead + 1

    opening = Block("text", text="Looking.")
    said = _render(r, [UserItem("go"), AssistantItem((opening, Block("text", text="same words"),
                                                      Block("text", text="after that"))),
                       UserItem("next")])
    thought = _render(r, [UserItem("go"),
                          AssistantItem((opening, Block("thinking", text="same words"),
                                         Block("text", text="after that"))),
                          UserItem("next")])
    diff = prefix_diff(said, thought, r.table)
    assert diff.first_mismatch_token == _naive(r, said, thought)
    assert diff.first_mismatch_token == thought.tokens_before(diff.first_mismatch_block + 1)


def test_an_empty_prompt_materializes_to_no_tokens():
    r = _renderer()
    empty = _render(r, [], system="", tools=[])
    some = _render(r, [UserItem("task")])
    assert len(empty.block_ids) == 0
    assert materialize_tokens(empty, r.table).shape == (0,)
    assert naive_first_mismatch(materialize_tokens(empty, r.table),
                                materialize_tokens(some, r.table)) == 0
    assert prefix_diff(empty, some, r.table).first_mismatch_token == 0


def test_a_prompt_cut_to_nothing_shares_nothing_and_names_no_message():
    r = _renderer()
    some = _render(r, [UserItem("task")])
    empty = _render(r, [], system="", tools=[])
    assert prefix_diff(some, empty, r.table) == PrefixDiff(0, None, None, "tail", True)


def test_blocks_known_only_by_their_size_part_right_after_their_framing():
    """Redacted thinking (logged by its size only) of 50 and of 60 tokens: no text to share, so
    the prompts part right after the block's framing, in the naive reference too (its opaque
    ids name the block's content)."""
    r = _renderer()

    def sized(tokens):
        return _render(r, [UserItem("go"),
                           AssistantItem((Block("thinking", estimated_tokens=tokens),
                                          Block("text", text="done"))),
                           UserItem("next")])

    small, large = sized(50), sized(60)
    diff = prefix_diff(small, large, r.table)
    block = diff.first_mismatch_block
    overhead = r.table.blocks[int(large.block_ids[block])].overhead
    assert overhead > 0
    assert diff.first_mismatch_token == large.tokens_before(block) + overhead
    assert _naive(r, small, large) == diff.first_mismatch_token


def test_prefix_matcher_remembers_each_pair_of_differing_blocks_apart():
    """The tokens two differing blocks share are memoized per pair: a held prompt compared with
    two requests that part from it at different blocks gets each one's own count."""
    r = _renderer()
    held = _render(r, [UserItem("alpha beta gamma delta epsilon zeta eta theta")])
    near = _render(r, [UserItem("alpha beta gamma delta epsilon other words here")])
    far = _render(r, [UserItem("alpha completely different text follows here")])
    p = CachedPrompt(held.block_ids, held.cum_tokens, last_use=TS, ready_at=TS, ttl=300)
    matcher = PrefixMatcher()
    got = [matcher.shared(p, req, r.table) for req in (near, far, near)]
    assert got == [shared_with(p, req, r.table) for req in (near, far, near)]
    assert got[0] > got[1]


def test_prefix_matcher_shares_no_more_than_a_partial_unit_holds():
    """A partial unit (DeepSeek's common-prefix unit, `length`) holds only its first `length`
    tokens: a request repeating the whole prompt shares those, not the prompt's."""
    r = _renderer()
    req = _render(r, [UserItem("alpha beta gamma delta epsilon zeta eta theta")])
    length = int(req.cum_tokens[-1]) - 3
    p = CachedPrompt(req.block_ids, req.cum_tokens, last_use=TS, ready_at=TS, ttl=300,
                     length=length)
    assert PrefixMatcher().shared(p, req, r.table) == length


def test_the_first_difference_is_labelled_with_the_new_prompt_s_block_kind():
    """`where` names the kind of the NEW prompt's block: a prompt that dropped its system prompt
    parts at message 0, one that dropped its tool definitions at its system prompt."""
    r = _renderer()
    items = [UserItem("task"), AssistantItem((Block("text", text="ok"),))]
    full = _render(r, items)
    diff = prefix_diff(full, _render(r, items, system=""), r.table)
    assert (diff.first_mismatch_block, diff.where, diff.message_index) == (1, "message 0", 0)
    diff = prefix_diff(full, _render(r, items, tools=[]), r.table)
    assert (diff.first_mismatch_block, diff.where, diff.message_index) == (0, "system", None)


def test_the_block_pair_memo_keeps_pairs_sharing_a_block_and_tables_apart():
    """Within `remembered_block_pairs`, pairs with the same second block, and the same pair of
    ids in two tables, each keep their own answer."""
    table, other = _renderer().table, _renderer().table
    a, b, c = (table.intern("user", t, True)
               for t in ("alpha beta gamma", "alpha zeta", "alpha beta delta"))
    x, _, z = (other.intern("user", t, True) for t in ("one two three", "-", "four"))
    assert (x, z) == (a, c)
    pairs = ((table, a, c), (table, b, c), (other, x, z))
    plain = [common_block_tokens(*pair) for pair in pairs]
    assert len(set(plain)) == 3
    with remembered_block_pairs():
        assert [common_block_tokens(*pair) for pair in pairs] == plain


def test_a_tool_call_opening_a_message_and_one_continuing_a_message_part_at_their_framing():
    """The same call, opening its message in one prompt and following a text block of the same
    message in the other: other framing (the message's), so both the fast diff and the naive
    reference part at the block's first token."""
    r = _renderer()
    call = Block("tool_call", call_id="c1", name="read_file", arguments={"path": "a.js"})
    text = Block("text", text="Reading.")
    split = _render(r, [UserItem("go"), AssistantItem((text,)), AssistantItem((call,))])
    joined = _render(r, [UserItem("go"), AssistantItem((text, call))])
    diff = prefix_diff(split, joined, r.table)
    block = diff.first_mismatch_block
    assert block == len(joined.block_ids) - 1 and joined.kinds[block] == "tool_call"
    assert diff.first_mismatch_token == joined.tokens_before(block) == _naive(r, split, joined)


def test_packing_a_fitted_block_leaves_the_same_text_s_unfitted_block_as_it_was():
    """A chain table holds a text under its content and under a fitted count (two blocks):
    packing the fitted one re-keys that one only, so each view interns the text to its own
    block afterwards."""
    from replay.engine._chain import ChainTable
    from replay.render._request import PACK_MIN_CHARS
    from replay.tokens._overrides import FittedCounter

    counter = _renderer().table.counter
    chain = ChainTable(counter)
    text = "z" * PACK_MIN_CHARS + " both"
    plain, fitted = chain.view(counter), chain.view(FittedCounter(counter, {text: 11}))
    unfitted, sized = plain.intern("user", text, True), fitted.intern("user", text, True)
    assert unfitted != sized
    assert fitted.pack(sized) == text
    assert plain.intern("user", text, True) == unfitted
    assert fitted.intern("user", text, True) == sized


def test_a_block_known_to_be_of_size_zero_is_not_the_same_text_counted():
    """render/_request.py `_block_prefix`: a block known only by its size keys on that size,
    0 included. A user message a strategy sized at 0 tokens (`UserItem.estimated_tokens=0`,
    which plugins may set) and the same text without a size are two blocks: the first counts
    0 tokens, the second its text, whichever is interned first (and once packed too)."""
    from replay.render._request import PACK_MIN_CHARS

    counter = _renderer().table.counter
    for text in ("hello there", "h" * PACK_MIN_CHARS + " long"):
        for sized_first in (True, False):
            table = _renderer().table
            first, second = (0, None) if sized_first else (None, 0)
            ids = {first: table.intern("user", text, True, first)}
            ids[second] = table.intern("user", text, True, second)
            zero, counted = ids[0], ids[None]
            assert zero != counted
            overhead = table.blocks[zero].overhead
            assert table.blocks[zero].tokens == overhead
            assert table.blocks[zero].sized_only and not table.blocks[counted].sized_only
            assert table.blocks[counted].tokens == counter.count(text) + overhead
            if len(text) >= PACK_MIN_CHARS:
                table.pack(zero)
                table.pack(counted)
            assert table.intern("user", text, True, 0) == zero
            assert table.intern("user", text, True) == counted
