"""The shared pieces of the cache simulators that look up block positions without walking the
prompt (thinking stripping, the lookback window, the entry walk) equal the plain walks they
replace, on random prompts and stores."""

from __future__ import annotations

import zlib
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import replay.cache._base as cache_base
from replay.cache._base import (
    BEYOND_LOOKBACK,
    OTHER_SCOPE,
    Lost,
    PromptView,
    SimRequest,
    collapsed_positions,
    entry_state,
    prompt_view,
    scope_label,
    walk_entries,
)
from replay.cache._store import CacheStore, Entry
from replay.cache.anthropic import lookback_blocks
from replay.cache.testing import CacheLab
from replay.prefix import PrefixDiff
from replay.render import Renderer
from replay.render._request import KIND_CODES, KIND_NAMES, SIZED_ONLY, chain_keys
from replay.strategies import AssistantItem, Block, ToolResultItem, UserItem
from replay.tokens import counter_for

TS = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


# -- thinking stripping ---------------------------------------------------------------------------


def _stripped_reference(req) -> tuple:
    """The stripped prompt computed by walking every block (what `prompt_view` did before)."""
    kinds = list(req.kinds)
    last_user = next(
        (i for i in range(len(kinds) - 1, -1, -1) if kinds[i] in ("user", "summary")), -1
    )
    drop = [i for i in range(last_user) if kinds[i] == "thinking"] if last_user > 0 else []
    if not drop:
        return None
    kept = [i for i in range(len(kinds)) if i not in drop]
    ids = req.block_ids[kept].tolist()
    keys = list(req.prefix_keys[: drop[0]])
    key = keys[-1] if keys else zlib.crc32(req.model.encode())
    for block_id in ids[drop[0] :]:
        key = hash((key, block_id))
        keys.append(key)
    new_kinds = [kinds[i] for i in kept]
    cum = np.cumsum(req.block_tokens[kept]).tolist()
    dropped = int(req.block_tokens[drop].sum())
    return ids, cum, new_kinds, collapsed_positions(new_kinds).tolist(), keys, kept, dropped


def _thinking_turn(n: int, thinking: bool) -> list:
    blocks = (Block("thinking", text=f"think {n}"),) if thinking else ()
    return [AssistantItem((*blocks, Block("text", text=f"answer {n}")))]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.integers(0, 5)), min_size=1,
                max_size=12))
def test_stripped_view_equals_the_walk_over_every_block(turns):
    """A thread whose turns have thinking blocks, new user turns and cuts: the stripped view
    (reusing the keys of the thread's previous stripped view) is the one a walk computes."""
    r = Renderer(counter_for("claude-sonnet-4-5"))
    view: list = [UserItem("task")]
    for n, (thinking, user, cut) in enumerate(turns):
        if cut == 0 and len(view) > 2:
            view = view[: len(view) // 2]
        view = view + _thinking_turn(n, thinking) + ([UserItem(f"user {n}")] if user else [])
        req = r.render(view, system="system", tools=[], index=n, request_id=f"r{n}",
                       thread="main", ts=TS, model="claude-sonnet-4-5", provider="anthropic")
        got = prompt_view(req, True)
        want = _stripped_reference(req)
        if want is None:
            assert got.kept is None and got.dropped_tokens == 0
            assert got.keys == req.prefix_keys and got.total == req.total
            continue
        ids, cum, kinds, positions, keys, kept, dropped = want
        assert got.ids.tolist() == ids and got.cum.tolist() == cum
        assert list(got.kinds) == kinds and got.positions.tolist() == positions
        assert list(got.keys) == keys and got.kept.tolist() == kept
        assert got.dropped_tokens == dropped



def test_a_view_rewritten_in_the_middle_chains_its_stripped_keys_from_the_change(monkeypatch):
    """A view that diverges from the thread's last one gets new block columns; the keys of its
    stripped view are still those of the previous stripped view up to the change: only the
    blocks after it are chained again, not all those after the first thinking block."""
    chained: list[int] = []

    def counting(model, key, ids):
        chained.append(len(ids))
        return chain_keys(model, key, ids)

    monkeypatch.setattr(cache_base, "chain_keys", counting)
    r = Renderer(counter_for("claude-sonnet-4-5"))
    view: list = [UserItem("task")]
    for n in range(20):
        view += _thinking_turn(n, True)
    view.append(UserItem("next"))

    def stripped(items):
        req = r.render(items, system="system", tools=[], index=0, request_id="r",
                       thread="main", ts=TS, model="claude-sonnet-4-5", provider="anthropic")
        chained.clear()
        got = prompt_view(req, True)
        ids, _, _, _, keys, _, _ = _stripped_reference(req)
        assert got.ids.tolist() == ids and list(got.keys) == keys
        return sum(chained), len(req.block_ids)

    stripped(view)
    rewritten = list(view)
    rewritten[18] = _thinking_turn(99, True)[0]  # 3 turns and the user turn from the end
    again, size = stripped(rewritten)
    assert 0 < again <= 8 < size // 4


def _turn(n: int, thinking: bool, calls: int) -> list:
    """An assistant turn with thinking, text or a run of tool calls, and the run's results."""
    blocks = [Block("thinking", text=f"think {n}")] if thinking else []
    blocks += [Block("tool_call", call_id=f"c{n}.{i}", name="read", arguments={"i": i})
               for i in range(calls)] or [Block("text", text=f"answer {n}")]
    return [AssistantItem(tuple(blocks))] + [
        ToolResultItem(f"c{n}.{i}", "read", f"out {n}.{i}") for i in range(calls)
    ]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.booleans(), st.integers(0, 5)),
                min_size=1, max_size=14))
def test_a_stripped_view_built_from_the_threads_last_one_equals_a_fresh_one(turns):
    """The stripped view's keys and lookback positions reused from the thread's previous one
    (up to where the kept blocks differ, runs of tool blocks across that point included) are
    those of a view built from the request alone; its kinds read like the list of names."""
    r = Renderer(counter_for("claude-sonnet-4-5"))
    view: list = [UserItem("task")]
    for n, (thinking, calls, user, cut) in enumerate(turns):
        if cut == 0 and len(view) > 2:
            view = view[: len(view) // 2]
        elif cut == 1 and len(view) > 3:
            view = [*view[:2], UserItem(f"rewritten {n}"), *view[3:]]
        view = view + _turn(n, thinking, calls) + ([UserItem(f"user {n}")] if user else [])
        req = r.render(view, system="system", tools=[], index=n, request_id=f"r{n}",
                       thread="main", ts=TS, model="claude-sonnet-4-5", provider="anthropic")
        got = prompt_view(req, True)
        alone = replace(req)  # no lineage: nothing to reuse
        fresh = prompt_view(alone, True)
        assert alone._lineage is None and got.ids.tolist() == fresh.ids.tolist()
        assert list(got.keys) == list(fresh.keys) and got.keys == fresh.keys
        assert got.positions.tolist() == fresh.positions.tolist()
        assert got.positions.tolist() == collapsed_positions(list(got.kinds)).tolist()
        names = [req.kinds[i] for i in (range(len(req.kinds)) if got.kept is None else got.kept)]
        assert got.block_kinds == names and list(got.block_kinds) == names == got.kinds
        assert [got.block_kinds[i] for i in range(-len(names), len(names))] == names * 2
        assert got.block_kinds[1:-1] == names[1:-1] and len(got.block_kinds) == len(names)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(KIND_NAMES), st.booleans()), min_size=1, max_size=400)
       | st.lists(st.tuples(st.sampled_from(("user", "text")), st.integers(0, 9).map(bool)),
                  min_size=100, max_size=400))
def test_the_last_turn_skips_the_user_blocks_known_only_by_their_size(blocks):
    """The last user turn a stripped view keeps thinking after is the last user or summary
    block that is not fitted context (known only by its size), however far back it is."""
    codes = np.array([KIND_CODES[k] for k, _ in blocks], dtype=np.int8)
    ids = np.arange(len(blocks))[::-1].copy()  # ids are not block indexes
    flags = bytearray(len(blocks))
    for i, (_, sized) in enumerate(blocks):
        flags[ids[i]] = SIZED_ONLY if sized else 0
    turns = [i for i, (k, _) in enumerate(blocks) if k in ("user", "summary")]
    last = turns[-1] if turns else -1
    want = next((i for i in reversed(turns) if not blocks[i][1]), -1)
    req = SimpleNamespace(block_ids=ids, kind_index=SimpleNamespace(codes=codes))
    assert cache_base._last_turn(req, last, SimpleNamespace(flags=flags)) == want


def test_the_last_turn_is_found_at_every_distance_back():
    """One user turn sent among 400 fitted ones: it is found wherever it is (the search looks
    back in growing windows)."""
    codes = np.full(400, KIND_CODES["user"], dtype=np.int8)
    req = SimpleNamespace(block_ids=np.arange(400), kind_index=SimpleNamespace(codes=codes))
    for sent in range(400):
        flags = bytearray([SIZED_ONLY]) * 400
        flags[sent] = 0
        assert cache_base._last_turn(req, 399, SimpleNamespace(flags=flags)) == sent


# -- the lookback window --------------------------------------------------------------------------


def _lookback_reference(positions: list[int], block: int, lookback: int, collapse: bool):
    members: dict[int, list[int]] = {}
    for b, p in enumerate(positions):
        members.setdefault(p, []).append(b)
    top = positions[block] if collapse else block
    walked = []
    for p in range(top, max(-1, top - lookback), -1):
        for b in reversed(members[p] if collapse else [p]):
            if b <= block:
                walked.append(b)
    return walked


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(KIND_NAMES), min_size=1, max_size=60), st.data())
def test_lookback_blocks_equal_the_walk_over_positions(kinds, data):
    positions = collapsed_positions(kinds)
    view = PromptView(np.zeros(len(kinds)), np.zeros(len(kinds)), kinds, positions, [])
    block = data.draw(st.integers(0, len(kinds) - 1))
    lookback = data.draw(st.integers(1, 25))
    for collapse in (False, True):
        want = _lookback_reference(positions.tolist(), block, lookback, collapse)
        assert list(lookback_blocks(view, block, lookback, collapse)) == want


# -- the entry walk -------------------------------------------------------------------------------


def _walk_reference(store, sim, view, read, upto=None, unreached="beyond lookback"):
    model, t, lane = sim.request.model, sim.request.ts, sim.lane
    if not store.has_model(model) or not len(view):
        return None
    others = store.other_scopes(sim.scope, model)
    top = len(view) - 1 if upto is None else min(upto, len(view) - 1)
    for i in range(top, -1, -1):
        tokens = int(view.cum[i])
        if tokens <= read:
            return None
        key = view.keys[i]
        entry = store.get(sim.scope, model, key)
        if entry is not None:
            state = entry_state(entry, t, lane)
            if state is None:
                return Lost(tokens, BEYOND_LOOKBACK, unreached)
            return Lost(tokens, *state)
        for other in others:
            entry = store.get(other, model, key)
            if entry is not None and not entry.expired(t):
                return Lost(tokens, OTHER_SCOPE, f"different cache scope ({scope_label(other)})")
    return None


_sizes = st.integers(0, 400)


@settings(max_examples=150, deadline=None)
@given(st.lists(_sizes, min_size=1, max_size=120) | st.lists(_sizes, min_size=40), st.data())
def test_entry_walk_equals_the_walk_over_every_block(sizes, data):
    """Long prompts (past the blocks checked one by one), blocks of zero tokens (equal
    lengths), entries in this and other scopes, live, expired and not ready, and entries of
    other prompts (lengths that match no key)."""
    lab = CacheLab("anthropic", "claude-sonnet-4-5")
    ids = [lab.block("user", n) for n in sizes]
    req = lab.request(ids, at=3600)
    view = prompt_view(req)
    store = CacheStore()
    t = req.ts
    # Half of the entries far back: past the last blocks, which the walk checks one by one.
    far = st.integers(0, max(0, len(ids) - 40))
    for block in data.draw(st.lists(st.integers(0, len(ids) - 1) | far, max_size=8)):
        scope = data.draw(st.sampled_from(["mine", "mine", "other"]))
        age = data.draw(st.sampled_from([10, 10, 1000]))  # 1000 s > the 5 min TTL
        ready = data.draw(st.sampled_from([-5, 30]))
        writer = data.draw(st.sampled_from(["main", "sub"]))
        entry = Entry(view.tokens(block), 300.0, t - timedelta(seconds=age),
                      t + timedelta(seconds=ready), writer=writer)
        store.put(scope, req.model, view.keys[block], entry)
    for tokens in data.draw(st.lists(st.integers(0, 50_000), max_size=4)):  # other prompts
        store.put("mine", req.model, 1_000_003 * tokens + 7,
                  Entry(tokens, 300.0, t, t, writer="main"))
    sim = SimRequest(req, [], "mine", PrefixDiff(0, None, None, "first", False), None, lab.table)
    read = data.draw(st.sampled_from([0, 0, int(view.cum[len(ids) // 2])]))
    upto = data.draw(st.sampled_from([None, None, len(ids) // 3]))
    got = walk_entries(store, sim, view, read, upto, unreached="x")
    assert got == _walk_reference(store, sim, view, read, upto, unreached="x")


def test_a_walk_finds_an_expired_entry_far_back():
    """Regression guard: past the last blocks the walk checks one by one, it still finds the
    longest entry (here expired, 100 blocks back) and reports why it could not be read."""
    lab = CacheLab("anthropic", "claude-sonnet-4-5")
    ids = [lab.block("user", 50) for _ in range(150)]
    req = lab.request(ids, at=7200)
    view = prompt_view(req)
    store = CacheStore()
    old = req.ts - timedelta(hours=1)
    store.put("mine", req.model, view.keys[49], Entry(view.tokens(49), 300.0, old, old, "main"))
    for tokens in (49, 2600, 10**6):  # entries of other prompts, with other lengths
        store.put("mine", req.model, tokens, Entry(tokens, 300.0, old, old, "main"))
    sim = SimRequest(req, [], "mine", PrefixDiff(0, None, None, "first", False), None, lab.table)
    lost = walk_entries(store, sim, view, 0)
    assert lost is not None and lost.tokens == 50 * 50 and lost.kind == "ttl-expired"
    assert walk_entries(store, sim, view, 50 * 50) is None


def test_a_rewrite_makes_an_entry_ready_for_the_threads_that_wrote_it_only():
    store, t = CacheStore(), datetime(2026, 1, 1, tzinfo=UTC)
    later = t + timedelta(seconds=10)
    first = store.put("s", "m", 7, Entry(100, 300.0, t, later, writer="main"))
    # A parallel thread writes the same prefix before the first write is readable: the same
    # entry, refreshed, readable at once by both writers, not by a third thread.
    again = store.put("s", "m", 7, Entry(100, 3600.0, t, later, writer="sub"))
    assert again is first and first.ttl == 3600.0
    soon = t + timedelta(seconds=1)
    assert first.ready(soon, "main") and first.ready(soon, "sub")
    assert not first.ready(soon, "other") and first.ready(later, "other")
    store.put("s", "m", 7, Entry(100, 300.0, soon, later, writer="sub"))
    assert first.rewriters == ("sub",)  # each thread once
    # Past its TTL, a write replaces the entry: its new writer alone.
    gone = t + timedelta(hours=2)
    fresh = store.put("s", "m", 7, Entry(100, 300.0, gone, gone + timedelta(seconds=1), "x"))
    assert fresh is not first and fresh.rewriters == ()
    assert not fresh.ready(gone, "sub") and fresh.ready(gone, "x")
