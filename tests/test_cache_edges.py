"""Edges of the cache simulators and prices that no other test pinned: minimums met exactly, the
TTL and lifetime boundaries, refreshes on read, lookback counts, lane state per thread, the
slots and TTLs of breakpoints. Each of these tests failed on a deliberate one-line bug (a `<`
for a `<=`, a refresh removed) that the rest of the suite let through (mutation audit, stop 46)."""
from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace

import numpy as np
import pytest

from replay.cache import Breakpoint
from replay.cache._base import duration_text, edit_cause, entry_state, expired_text
from replay.cache._store import CachedPrompt, CacheStore, Entry
from replay.cache.openai import eligible_ends
from replay.cache.testing import CacheLab
from replay.prefix import PrefixDiff
from replay.prices import Buckets, Pricer
from replay.prices._prices import parse_price_override
from replay.render import BlockInfo

SONNET = "claude-sonnet-4-5"
TERRA = "gpt-5.6-terra"


def base(lab):
    return [lab.block("tool", 500), lab.block("system", 1500), lab.block("user", 200)]


# ---------------------------------------------------------------- anthropic.py

def test_marker_on_empty_text_moves_to_previous_block():
    lab = CacheLab("anthropic", SONNET)
    head = base(lab)
    empty = len(lab.table.blocks)
    lab.table.blocks.append(BlockInfo("text", "", True, 4, 4))  # only message overhead
    lab._starts[empty] = True
    r = lab.send([*head, empty], at=0, breakpoints=[Breakpoint(3)])
    assert r.split == (0, 0, 2200, 4)


def test_two_markers_on_one_block_keep_the_1h_ttl():
    lab = CacheLab("anthropic", SONNET)
    r = lab.send(base(lab), at=0, breakpoints=[Breakpoint(2, "5m"), Breakpoint(2, "1h")])
    assert r.split == (0, 2200, 0, 0)


def test_automatic_breakpoint_needs_a_free_slot():
    lab = CacheLab("anthropic", SONNET)
    ids = [*base(lab), lab.block("text", 100), lab.block("user", 300)]
    bps = [Breakpoint(i) for i in range(4)] + [Breakpoint(4, automatic=True)]
    r = lab.send(ids, at=0, breakpoints=bps)
    assert r.split == (0, 0, 2300, 300)


def test_only_marker_below_minimum_is_below_minimum():
    lab = CacheLab("anthropic", SONNET)
    head = base(lab)
    lab.send(head, at=0, breakpoints=[Breakpoint(0)])  # 500-token tools marker only
    r = lab.send([*head, lab.block("text", 100), lab.block("user", 100)], at=10,
                 breakpoints=[Breakpoint(0)])
    assert r.split == (0, 0, 0, 2400)
    assert r.outcome.miss_kind == "below-minimum"


def _empty(lab: CacheLab, kind: str) -> int:
    """A block holding only its 4 tokens of framing (`tokens == overheads`)."""
    block_id = len(lab.table.blocks)
    lab.table.blocks.append(BlockInfo(kind, "", True, 4, 4))
    lab._starts[block_id] = True
    return block_id


def test_a_marker_on_an_empty_tool_result_stays_on_it():
    """Only thinking blocks and empty *text* blocks cannot carry `cache_control`
    (docs/cache-rules.md): a tool_result with no content keeps its marker. 2,200 + tool call 100
    + empty result 4: write 2,304, nothing uncached."""
    lab = CacheLab("anthropic", SONNET)
    ids = [*base(lab), lab.block("tool_call", 100), _empty(lab, "tool_result")]
    r = lab.send(ids, at=0, breakpoints=[Breakpoint(4)])
    assert r.split == (0, 0, 2304, 0)


def test_a_marker_with_no_cacheable_block_before_it_leaves_the_later_ones():
    """A marker on an empty text block that opens the prompt has no block to move back to: it is
    dropped, and the marker after it still writes 4 + 1,500 = 1,504."""
    lab = CacheLab("anthropic", SONNET)
    ids = [_empty(lab, "text"), lab.block("user", 1500)]
    r = lab.send(ids, at=0, breakpoints=[Breakpoint(0), Breakpoint(1)])
    assert r.split == (0, 0, 1504, 0)


def test_a_read_logged_out_of_time_order_does_not_shorten_an_entry_s_life():
    """Requests are simulated in file order, which need not be time order. Entry E (tools +
    system + user 1 = 2,200, written at 0) is read through the lookback at 250 s, then by a
    request dated 100 s simulated after it: its last use stays 250 s, so at 520 s it is idle
    270 s < 300 s, live (refresh on read, "from the start of the request")."""
    lab = CacheLab("anthropic", SONNET)
    head = base(lab)
    lab.send(head, at=0, breakpoints=[Breakpoint(2)])
    a1 = lab.send([*head, lab.block("user", 100), lab.block("user", 100)], at=250,
                  thread="agent-1", breakpoints=[Breakpoint(4)])
    assert a1.split == (2200, 0, 200, 0)
    a2 = lab.send([*head, lab.block("user", 100)], at=100, thread="agent-2",
                  breakpoints=[Breakpoint(3)])
    assert a2.split == (2200, 0, 100, 0)
    r = lab.send([*head, lab.block("user", 100)], at=520, breakpoints=[Breakpoint(3)])
    assert r.split == (2200, 0, 100, 0)


def test_a_rewrite_logged_out_of_time_order_does_not_shorten_an_entry_s_life():
    """As above with a marker on E in every request: the re-write dated 100 s, simulated after
    the one dated 250 s, leaves E's last use at 250 s (`CacheStore.put`). Live at 520 s."""
    lab = CacheLab("anthropic", SONNET)
    head = base(lab)
    lab.send(head, at=0, breakpoints=[Breakpoint(2)])
    for at, thread in ((250, "agent-1"), (100, "agent-2")):
        lab.send([*head, lab.block("user", 100)], at=at, thread=thread,
                 breakpoints=[Breakpoint(2), Breakpoint(3)])
    r = lab.send([*head, lab.block("user", 100)], at=520, breakpoints=[Breakpoint(3)])
    assert r.split == (2200, 0, 100, 0)


# ---------------------------------------------------------------- _store.py

def test_a_5m_rewrite_does_not_shorten_a_1h_entry():
    lab = CacheLab("anthropic", SONNET)
    head = base(lab)
    lab.send(head, at=0, breakpoints=[Breakpoint(2, "1h")])
    r2 = lab.send([*head, lab.block("user", 100)], at=600,
                  breakpoints=[Breakpoint(2), Breakpoint(3)])
    assert r2.outcome.cache_read == 2200
    r3 = lab.send([*head, lab.block("user", 100)], at=1200, breakpoints=[Breakpoint(3)])
    assert r3.outcome.cache_read == 2200  # 1h entry, idle 10 min


def test_a_read_does_not_delay_readiness_for_other_threads():
    lab = CacheLab("anthropic", SONNET)
    head = base(lab)
    lab.send(head, at=0)  # entries at 2,000 (system) and 2,200
    lab.send([*head[:2], lab.block("user", 300)], at=100, thread="agent-1")  # re-puts system
    r = lab.send([*head[:2], lab.block("user", 300)], at=100.5, thread="agent-2")
    assert r.outcome.cache_read == 2000


def test_own_prompt_readable_before_ready_after_seconds():
    lab = CacheLab("openai", "gpt-4o", client="none")
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 100)], at=0)
    r = lab.send([system, lab.block("user", 100)], at=0.5)  # same thread
    assert r.outcome.cache_read == 1920


def test_store_snapshot_does_not_share_entries():
    store = CacheStore()
    t = datetime(2026, 1, 1, tzinfo=UTC)
    store.put("s", "m", 1, Entry(100, 300.0, t, t))
    snap = copy.deepcopy(store)
    snap.get("s", "m", 1).ttl = 3600.0
    assert store.get("s", "m", 1).ttl == 300.0


def test_hard_cap_boundary_is_inclusive():
    lab = CacheLab("openai", "gpt-4o", client="none")
    prompt = [lab.block("system", 2000), lab.block("user", 100)]
    for at in range(0, 3600, 500):
        lab.send(prompt, at=at)
    assert lab.send(prompt, at=3600).outcome.cache_read == 2048  # age 1h == cap: still live


T = datetime(2026, 1, 1, tzinfo=UTC)


def _at(seconds: float) -> datetime:
    return T + timedelta(seconds=seconds)


def test_an_entry_with_no_reader_named_is_ready_by_time_only():
    entry = Entry(100, 300.0, T, _at(1))  # no writer named either
    assert not entry.ready(_at(0.5)) and entry.ready(_at(1))


def test_a_live_entry_is_ready_and_not_expired():
    entry = Entry(100, 300.0, T, _at(1), writer="main")
    assert entry.live(_at(300)) and entry.live(_at(0.5), "main")
    assert not entry.live(_at(0.5), "sub")  # not ready for another thread
    assert not entry.live(_at(301))  # expired, though ready


def test_an_entry_kept_warm_still_expires_at_its_hard_cap():
    """`max_lifetime`: seconds since `created`, whatever the last use."""
    entry = Entry(100, 300.0, _at(3500), T, created=T, max_lifetime=3600.0)
    assert not entry.expired(_at(3600)) and entry.expired(_at(3601))


def test_created_is_the_first_write_and_kept_by_a_refresh():
    store = CacheStore()
    first = store.put("s", "m", 1, Entry(100, 300.0, T, _at(1)))
    assert first.created == T
    store.put("s", "m", 1, Entry(100, 300.0, _at(200), _at(201)))
    assert (first.created, first.last_use) == (T, _at(200))


def _anchored() -> tuple[CachedPrompt, CachedPrompt]:
    """A prompt of blocks 1..5 (10 tokens each) held as its first 2 blocks taken from a newer
    prompt of blocks 1, 2, 9."""
    newer = CachedPrompt(np.array([1, 2, 9]), np.array([10, 20, 30]), T, T, 300.0)
    older = CachedPrompt(np.array([1, 2, 3, 4, 5]), np.array([10, 20, 30, 40, 50]), T, T, 300.0)
    older.rebase(newer, 2)
    return older, newer


def test_an_anchored_prompt_slices_blocks_start_to_stop():
    older, _ = _anchored()
    assert (older.head, older.size, older.total) == (2, 5, 50)
    assert older.ids(0, 1).tolist() == [1]
    assert older.ids(1, 4).tolist() == [2, 3, 4]
    assert older.cums(0, 2).tolist() == [10, 20]
    assert older.ids().tolist() == [1, 2, 3, 4, 5]


def test_a_store_snapshot_shares_no_prompt_and_keeps_what_extra_names():
    """`CacheStore.__deepcopy__`: prompts and their arrays are copied (an anchor once, the
    snapshot's own copy), and `extra` names the same copies as `prompts`."""
    older, newer = _anchored()
    store = CacheStore()
    store.prompts[("s", "m")] = [older, newer]
    store.extra[("last", "s")] = newer
    snap = copy.deepcopy(store)
    s_older, s_newer = snap.prompts[("s", "m")]
    assert s_newer is not newer and s_older.anchor is s_newer
    assert snap.extra[("last", "s")] is s_newer
    assert not np.shares_memory(s_newer.block_ids, newer.block_ids)
    assert not np.shares_memory(s_older.cum_tokens, older.cum_tokens)
    assert s_older.ids().tolist() == [1, 2, 3, 4, 5]


def test_an_expired_prompt_is_remembered_four_ttls_and_at_least_a_day():
    """`CachedPrompt.remembered`: kept to name a later miss for four TTLs since its last use, at
    least a day (86,400 s), boundaries included."""
    short = CachedPrompt(np.array([1]), np.array([100]), T, T, 300.0)  # 4 × 300 s < a day
    assert short.remembered(_at(86400)) and not short.remembered(_at(86401))
    long = CachedPrompt(np.array([1]), np.array([100]), T, T, 30000.0)  # 120,000 s > a day
    assert long.remembered(_at(120000)) and not long.remembered(_at(120001))


# ---------------------------------------------------------------- _base.py

def test_durations_are_rounded_to_the_second():
    assert [duration_text(x) for x in (59.4, 59.6, 60, 61, 3600, 3661)] == [
        "59s", "1m", "1m", "1m01s", "1h00m", "1h01m01s"
    ]


def test_an_entry_past_both_its_ttl_and_its_cap_is_named_by_its_idle_gap():
    """The cap is named only when the entry was still within its TTL."""
    entry = Entry(100, 600.0, T, T, created=T, max_lifetime=3600.0)
    assert expired_text(entry, _at(4000)) == "TTL expired (idle 1h06m40s > TTL 10m)"
    entry.last_use = _at(3500)
    assert expired_text(entry, _at(4000)) == "TTL expired (age 1h06m40s > max lifetime 1h00m)"


def test_an_entry_expired_before_it_was_ready_is_named_expired():
    """`entry_state` checks the lifetime first (`explain`: expired, then not ready): an entry
    whose writer's response began only after its TTL (readiness at the response end, a long
    response) is `ttl-expired` for another thread."""
    entry = Entry(100, 300.0, T, _at(1000), writer="main")
    assert entry_state(entry, _at(400), "sub") == (
        "ttl-expired", "TTL expired (idle 6m40s > TTL 5m)"
    )
    assert entry_state(entry, _at(200), "sub") == (
        "not-ready", "written by a parallel request not yet ready"
    )


def test_a_model_switch_sharing_no_token_is_named_even_when_nothing_is_read():
    """The engine gives a switch across tokenizer families a diff sharing 0 tokens; a request
    that then reads 0 still read less than the previous prompt: `model-switch`."""
    sim = SimpleNamespace(
        previous=SimpleNamespace(model="claude-sonnet-4-5"),
        request=SimpleNamespace(model="gpt-5"),
        diff=PrefixDiff(0, 0, None, "model switch", True),
    )
    assert edit_cause(sim, 0) == ("model-switch", "model switch (claude-sonnet-4-5 → gpt-5)")


def test_prompt_of_exactly_the_minimum_is_not_below_it():
    lab = CacheLab("anthropic", SONNET)
    system = lab.block("system", 1000)
    lab.send([system], at=0)
    r = lab.send([system, lab.block("user", 24)], at=10)
    assert r.split == (0, 0, 1024, 0)
    assert r.outcome.miss_kind is None


def test_prefix_lost_only_to_rounding_is_not_a_miss():
    lab = CacheLab("openai", "gpt-4o", client="none")
    x, u1 = lab.block("system", 1024), lab.block("user", 127)
    lab.send([x, u1, lab.block("user", 500)], at=0, thread="a")
    lab.send([x, lab.block("user", 300)], at=4000, thread="b")  # a's prompt has expired
    r = lab.send([x, u1, lab.block("user", 50)], at=4002, thread="c")
    assert r.outcome.cache_read == 1024
    assert r.outcome.miss_kind is None  # the expired 1,151 would have cached 1,024 too


def test_rules_follow_the_request_s_day_and_model_within_one_simulator():
    """`CacheSimulator.rule` keeps the rules of the last model and day asked: a request of
    another day or model must see its own. The top-level automatic marker exists from
    2026-02-19 (pricing/cache/anthropic.json); Opus 4.5's minimum is 4,096, Sonnet 4.5's 1,024."""
    lab = CacheLab("anthropic", SONNET, client="automatic",
                   t0=datetime(2026, 2, 18, 12, tzinfo=UTC))
    system, u1 = lab.block("system", 1500), lab.block("user", 200)
    assert lab.send([system, u1], at=0).split == (0, 0, 0, 1700)  # 02-18: no automatic marker
    assert lab.send([system, u1], at=86400).split == (0, 0, 1700, 0)  # 02-19: written
    # Same day, another model: 1,700 < 4,096 is not cached; back to Sonnet: read.
    assert lab.send([system, u1], at=86410, model="claude-opus-4-5").split == (0, 0, 0, 1700)
    assert lab.send([system, u1], at=86420).split == (1700, 0, 0, 0)


@pytest.mark.parametrize("lane", ["", "s0|opencode-prune-40k-20k[protected=mcp/fs]|"])
def test_lane_state_is_per_thread(lane: str):
    # In a batch chain a thread is named after its lane and strategy (`_Run.lane`), whose name
    # may hold a slash: every thread of that strategy was cut to one lane there.
    lab = CacheLab("anthropic", "claude-haiku-4-5")
    system, u1 = lab.block("system", 4000), lab.block("user", 200)
    think = lab.block("thinking", 300)
    call, result = lab.block("tool_call", 50, joins=True), lab.block("tool_result", 50)
    main = lane + "main"
    lab.send([system, u1], at=0, thread=main)
    lab.send([system, u1, think, call, result], at=10, thread=main)
    lab.send([lab.block("user", 100)], at=15, thread=lane + "agent-1")
    r3 = lab.send([system, u1, think, call, result, lab.block("text", 100),
                   lab.block("user", 100)], at=20, thread=main)
    assert r3.outcome.miss_kind == "thinking-stripped"


# ---------------------------------------------------------------- openai.py (GPT-5.6+)

def test_only_the_last_tool_output_of_a_group_is_a_message_end():
    kinds = ["tool", "system", "user", "tool_call", "tool_call", "tool_result", "tool_result"]
    assert eligible_ends(kinds) == (1, [1, 2, 6])


def test_twentieth_earlier_message_end_is_looked_up():
    lab = CacheLab("openai", TERRA, client="codex")
    system, u1 = lab.block("system", 2000), lab.block("user", 100)
    lab.send([system, u1], at=0)
    more = [lab.block("user", 10) for _ in range(20)]
    # earlier ends: head, u1, 19 new ones = 21 → the latest 20 still include u1
    assert lab.send([system, u1, *more], at=10).outcome.cache_read == 2100


def test_boundary_of_exactly_1024_is_written_and_read():
    lab = CacheLab("openai", TERRA, client="codex")
    system, u1 = lab.block("system", 1000), lab.block("user", 24)
    assert lab.send([system, u1], at=0).split == (0, 0, 1024, 0)
    r2 = lab.send([system, u1, lab.block("text", 10), lab.block("user", 10)], at=10)
    assert r2.split == (1024, 0, 20, 0)


def test_latest_explicit_markers_are_written():
    lab = CacheLab("openai", TERRA, client="none")
    system = lab.block("system", 2000)
    us = [lab.block("user", 10) for _ in range(5)]
    lab.send([system, *us], at=0, breakpoints=[Breakpoint(i) for i in range(1, 6)])
    r2 = lab.send([system, *us[:4], lab.block("user", 10)], at=10, breakpoints=[])
    assert r2.outcome.cache_read == 2040  # the entry at u4 (one of the latest 3 explicit)


def test_developer_block_is_always_looked_up():
    lab = CacheLab("openai", TERRA, client="none")
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 10)], at=0, breakpoints=[Breakpoint(0)])
    more = [lab.block("user", 10) for _ in range(25)]
    assert lab.send([system, *more], at=10, breakpoints=[]).outcome.cache_read == 2000


def test_a_read_refreshes_the_entry():
    lab = CacheLab("openai", TERRA, client="codex")
    system, u1 = lab.block("system", 2000), lab.block("user", 100)
    lab.send([system, u1], at=0)
    assert lab.send([system, u1, lab.block("user", 10)], at=1200).outcome.cache_read == 2100
    assert lab.send([system, u1, lab.block("user", 20)], at=2400).outcome.cache_read == 2100


def test_no_explicit_boundary_on_an_assistant_block():
    lab = CacheLab("openai", TERRA, client="none")
    ids = [lab.block("system", 2000), lab.block("user", 100), lab.block("text", 50)]
    assert lab.send(ids, at=0, breakpoints=[Breakpoint(2)]).split == (0, 0, 2100, 50)


def test_first_two_explicit_markers_are_looked_up():
    lab = CacheLab("openai", TERRA, client="none")
    system, u1, u2 = lab.block("system", 2000), lab.block("user", 10), lab.block("user", 10)
    lab.send([system, u1, u2], at=0, breakpoints=[Breakpoint(1), Breakpoint(2)])
    ms = [lab.block("user", 10) for _ in range(60)]
    bps = [Breakpoint(i) for i in range(1, 63)]
    assert lab.send([system, u1, u2, *ms], at=10, breakpoints=bps).outcome.cache_read == 2020


def test_latest_fifty_explicit_markers_are_looked_up():
    lab = CacheLab("openai", TERRA, client="none")
    system = lab.block("system", 2000)
    ms = [lab.block("user", 10) for _ in range(60)]
    lab.send([system, *ms[:11]], at=0, breakpoints=[])  # implicit entry at m11 (2,110)
    bps = [Breakpoint(i) for i in range(1, 61)]  # 60 markers: latest 50 = m11..m60
    assert lab.send([system, *ms], at=10, breakpoints=bps).outcome.cache_read == 2110


# ---------------------------------------------------------------- automatic.py

def test_1h_write_only_where_the_1h_ttl_exists():
    lab = CacheLab("moonshotai", "kimi-k3", overrides={"moonshotai.ttl_1h_available": False})
    r = lab.send([lab.block("system", 3000), lab.block("user", 100)], at=0,
                 breakpoints=[Breakpoint(1, "1h")])
    assert r.outcome.cache_write_1h == 0 and r.outcome.cache_write_5m > 0


def test_requested_ttl_is_the_last_breakpoints():
    lab = CacheLab("moonshotai", "kimi-k3")
    r = lab.send([lab.block("system", 3000), lab.block("user", 100)], at=0,
                 breakpoints=[Breakpoint(0, "1h"), Breakpoint(1, "5m")])
    assert r.outcome.cache_write_1h == 0 and r.outcome.cache_write_5m > 0


def test_a_marker_s_ttl_wins_over_the_client_profile_s():
    # requested_ttl: the last breakpoint's first; the `none` profile's own TTL is 5m.
    lab = CacheLab("moonshotai", "kimi-k3", client="none")
    r = lab.send([lab.block("system", 3000), lab.block("user", 100)], at=0,
                 breakpoints=[Breakpoint(1, "1h")])
    assert r.split == (0, 3100, 0, 0)


def test_a_read_refreshes_the_prompt_read():
    lab = CacheLab("openai", "gpt-4o", client="none")
    system, ua = lab.block("system", 2000), lab.block("user", 100)
    lab.send([system, ua], at=0, thread="a")
    lab.send([system, lab.block("user", 100)], at=400, thread="b")  # reads a's prompt
    r = lab.send([system, ua, lab.block("user", 10)], at=900, thread="c")
    assert r.outcome.cache_read == 2048


def test_expired_prompt_still_names_the_miss():
    lab = CacheLab("openai", "gpt-4o", client="none")
    p = [lab.block("system", 2000), lab.block("user", 100)]
    lab.send(p, at=0, thread="a")
    lab.send([lab.block("system", 1500)], at=700, thread="b")
    later = lab.send([*p, lab.block("user", 10)], at=710, thread="a")
    assert later.outcome.miss_kind == "ttl-expired"


def test_another_threads_longer_prompt_does_not_evict_mine():
    lab = CacheLab("openai", "gpt-4o", client="none")
    system, u1 = lab.block("system", 2000), lab.block("user", 100)
    lab.send([system, u1], at=0, thread="a")
    lab.send([system, u1, lab.block("user", 100)], at=10, thread="b")
    r = lab.send([system, u1, lab.block("user", 50)], at=10.5, thread="a")
    assert r.outcome.cache_read == 2048


def test_output_unit_ends_with_the_first_assistant_message():
    lab = CacheLab("deepseek", "deepseek-v4-flash")
    system, u1 = lab.block("system", 1000), lab.block("user", 100)
    lab.send([system, u1], at=0)
    r = lab.send([system, u1, lab.block("text", 200), lab.block("text", 50),
                  lab.block("user", 100)], at=10)
    assert r.outcome.cache_read == 1300


# ---------------------------------------------------------------- deepseek.py

def test_a_hit_refreshes_the_unit():
    lab = CacheLab("deepseek", "deepseek-v4-flash")
    system, u1 = lab.block("system", 900), lab.block("user", 100)
    lab.send([system, u1], at=0)
    assert lab.send([system, u1, lab.block("user", 100)], at=7000).outcome.cache_read == 1000
    assert lab.send([system, u1, lab.block("user", 100)], at=7300).outcome.cache_read == 1000


# ---------------------------------------------------------------- gemini.py

def test_explicit_cache_of_exactly_the_minimum_is_created():
    lab = CacheLab("google", "gemini-2.5-flash", client="gemini-explicit")
    r = lab.send([lab.block("system", 2048), lab.block("user", 10)], at=0)
    assert r.split == (2048, 0, 0, 10) and r.outcome.created_tokens == 2048


# ---------------------------------------------------------------- prices

def test_no_cache_rates_invented_for_a_model_genai_prices_never_caches():
    p = Pricer()
    price = p.price(Buckets(cache_write_1h=1_000_000), model="claude-2.1", provider="anthropic",
                    ts=datetime(2026, 1, 5, tzinfo=UTC))
    assert price.total_usd == Decimal(8)


def test_bucket_sum_keeps_5m_and_1h_apart():
    assert Buckets(cache_write_5m=3) + Buckets(cache_write_1h=4) == Buckets(0, 0, 3, 4, 0)


def test_zero_rates_are_allowed():
    _, rate = parse_price_override("local-model=input:0,output:0")
    assert rate.input == 0
