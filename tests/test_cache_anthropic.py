"""Anthropic prompt caching (direct API), hand-computed.

Every scenario is a small log of requests built with exact token counts (`CacheLab`: each block
has exactly the tokens given, distinct blocks share no token). Unless said otherwise: model
claude-sonnet-4-5 on 2026-10-20 (genai-prices: input $3, cache read $0.30, 5m write $3.75,
1h write $6 per MTok), client profile `default` (markers on the last system block and on the
last message, 5m TTL), minimum cacheable prefix 1024, lookback 20 positions.

Split = (read, 1h write, 5m write, uncached).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from replay.cache import Breakpoint
from replay.cache.testing import CacheLab

D = Decimal
MODEL = "claude-sonnet-4-5"


def usd(micro_dollars: str) -> Decimal:
    """`usd("2160")` = 2160 millionths of a dollar (token counts × $/MTok)."""
    return D(micro_dollars) / 1_000_000


def base(lab: CacheLab):
    """tools 500 + system 1500 + first user message 200 = 2,200 tokens."""
    return [lab.block("tool", 500), lab.block("system", 1500), lab.block("user", 200)]


# -- the basic write then read --------------------------------------------------------------------


def test_cold_write_then_append_read():
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    # r1: breakpoints at the system end (2,000) and the last block (2,200); nothing cached yet.
    # A = 0, B = 0, C = 2,200 → 5m write 2,200. Cost 2,200 × 3.75 = $0.00825.
    r1 = lab.send(head, at=0)
    assert r1.split == (0, 0, 2200, 0)
    assert r1.outcome.miss_kind == "cold-start"
    assert r1.cost == usd("8250")
    # r2 (+1 min): + assistant 100 + user 300 = 2,600. The last breakpoint walks back 3 positions
    # to the 2,200 entry: read 2,200, write 400. Cost 2,200 × 0.3 + 400 × 3.75 = $0.00216.
    r2 = lab.send([*head, lab.block("text", 100), lab.block("user", 300)], at=60)
    assert r2.split == (2200, 0, 400, 0)
    assert r2.outcome.miss_cause is None
    assert r2.cost == usd("2160")


def test_max_breakpoints_zero_caches_nothing_one_keeps_the_latest():
    """`max_breakpoints` (a rule file's): the latest N markers are kept; 0 keeps none."""
    splits = []
    for n in (0, 1, 4):
        lab = CacheLab("anthropic", MODEL, overrides={"anthropic.max_breakpoints": n})
        head = base(lab)
        lab.send(head, at=0)
        grown = [*head, lab.block("text", 100), lab.block("user", 300)]
        splits.append(lab.send(grown, at=60).split)
    # 0: nothing written, nothing read. 1: the last marker only: 2,200 read back, 400 written.
    assert splits == [(0, 0, 0, 2600), (2200, 0, 400, 0), (2200, 0, 400, 0)]


def test_five_markers_keep_the_latest_four():
    """At most 4 breakpoints a request (`max_breakpoints` 4, pricing/cache/anthropic.json): with
    five markers the simulator keeps the latest four (the API would refuse the request), so the
    earliest one writes no entry."""
    lab = CacheLab("anthropic", MODEL)
    ids = [*base(lab), lab.block("text", 100), lab.block("user", 300), lab.block("text", 100)]
    # Markers on blocks 1..5 (2,000 / 2,200 / 2,300 / 2,600 / 2,700 tokens): blocks 2..5 write.
    r1 = lab.send(ids, at=0, breakpoints=[Breakpoint(i) for i in range(1, 6)])
    assert r1.split == (0, 0, 2700, 0)
    # r2, same prompt, one marker on the system block: its window (blocks 1 and 0) holds no
    # entry, since r1 dropped that marker. Write 2,000, the 700 after it uncached.
    r2 = lab.send(ids, at=10, breakpoints=[Breakpoint(1)])
    assert r2.split == (0, 0, 2000, 700)


# -- lookback -------------------------------------------------------------------------------------


def _appended(lab: CacheLab, n: int) -> list[int]:
    """n blocks of 10 tokens, alternating assistant text and user messages (one position each)."""
    return [lab.block("text" if i % 2 == 0 else "user", 10) for i in range(n)]


def test_breakpoint_beyond_the_lookback_window():
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    lab.send(head, at=0)  # entries at 2,000 (system) and 2,200 (user 1, block 2)
    # r2: 25 more blocks; the last breakpoint is block 27, its 20 positions are blocks 27..8:
    # the 2,200 entry (block 2) is out of reach. The system breakpoint (block 1) walks its own
    # window and reads 2,000. C = 2,450 → write 450.
    # Cost 2,000 × 0.3 + 450 × 3.75 = 600 + 1,687.5 = $0.0022875.
    r2 = lab.send([*head, *_appended(lab, 25)], at=30)
    assert r2.split == (2000, 0, 450, 0)
    assert r2.outcome.miss_kind == "beyond-lookback"
    assert "20 positions" in r2.outcome.miss_cause
    assert r2.cost == usd("2287.5")


def test_a_threads_first_request_names_an_entry_beyond_its_lookback():
    """A live entry no breakpoint reaches is the cause before "first request" (`explain`'s
    order): a subagent's first request, with main's 2,200 entry 25 positions back, is a
    `beyond-lookback` miss, not a cold start. It reads main's system entry (2,000), writes 450.
    Cost 2,000 × 0.3 + 450 × 3.75 = $0.0022875."""
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    lab.send(head, at=0)  # main: entries at 2,000 and 2,200
    r = lab.send([*head, *_appended(lab, 25)], at=10, thread="agent-1")
    assert r.split == (2000, 0, 450, 0)
    assert r.outcome.miss_kind == "beyond-lookback"
    assert r.cost == usd("2287.5")


def test_breakpoint_just_within_the_lookback_window():
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    lab.send(head, at=0)
    # 19 more blocks: the last breakpoint is block 21; positions 21..2 (20 of them, itself
    # included) reach the 2,200 entry. Read 2,200, write 190.
    # Cost 2,200 × 0.3 + 190 × 3.75 = 660 + 712.5 = $0.0013725.
    r2 = lab.send([*head, *_appended(lab, 19)], at=30)
    assert r2.split == (2200, 0, 190, 0)
    assert r2.outcome.miss_cause is None
    assert r2.cost == usd("1372.5")


def test_tool_runs_count_as_one_position_from_september_2026():
    # claude-sonnet-4-6 (min 1024; $3 / $0.30 / $3.75). r2 appends one assistant turn of 30
    # parallel tool calls (10 tokens each) and one user turn of their 30 results.
    def run(day: datetime):
        lab = CacheLab("anthropic", "claude-sonnet-4-6", t0=day)
        head = base(lab)
        calls = [lab.block("tool_call", 10, joins=i > 0) for i in range(30)]
        results = [lab.block("tool_result", 10, joins=i > 0) for i in range(30)]
        lab.send(head, at=0)
        return lab.send([*head, *calls, *results], at=30)

    # 2026-10-20: each run is one position; from the last result, the walk goes results-run →
    # calls-run → user 1 and reads 2,200. Write 600. Cost 660 + 600 × 3.75 = $0.00291.
    after = run(datetime(2026, 10, 20, 12, tzinfo=UTC))
    assert after.split == (2200, 0, 600, 0)
    assert after.cost == usd("2910")
    # 2026-08-20 (before the Sept-2026 rule): 60 positions; the last breakpoint cannot reach
    # user 1, the system breakpoint reads 2,000. Write 800. Cost 600 + 3,000 = $0.0036.
    before = run(datetime(2026, 8, 20, 12, tzinfo=UTC))
    assert before.split == (2000, 0, 800, 0)
    assert before.outcome.miss_kind == "beyond-lookback"
    assert before.cost == usd("3600")


BEFORE_SEPTEMBER = datetime(2026, 8, 20, 12, tzinfo=UTC)


def test_lookback_edge_before_september_2026():
    """An entry exactly 20 positions back (the breakpoint counted as one) is read; one position
    further it is not. Before the Sept-2026 text every block is a position (`lookback_positions`
    20, `collapse_tool_runs` false since 2024-08-14, pricing/cache/anthropic.json)."""

    def run(n: int):
        lab = CacheLab("anthropic", MODEL, t0=BEFORE_SEPTEMBER)
        head = base(lab)
        lab.send(head, at=0)  # entries at 2,000 (system, block 1) and 2,200 (user 1, block 2)
        return lab.send([*head, *_appended(lab, n)], at=30)

    # 19 blocks: the last breakpoint is block 21; blocks 21..2 are its 20 positions, the last
    # of them holds the 2,200 entry. Read 2,200, write 190.
    edge = run(19)
    assert edge.split == (2200, 0, 190, 0)
    assert edge.outcome.miss_cause is None
    # 20 blocks: block 22 walks 22..3; block 2 is the 21st position. The system breakpoint
    # reads 2,000; C = 2,400 → write 400.
    beyond = run(20)
    assert beyond.split == (2000, 0, 400, 0)
    assert beyond.outcome.miss_kind == "beyond-lookback"
    assert beyond.outcome.miss_cause == "beyond lookback (20 positions)"


def _tool_rounds(lab: CacheLab, n: int, lead: bool = False) -> list[int]:
    """n rounds of 3 parallel tool calls and their 3 results, 10 tokens each (two positions a
    round with tool runs collapsed); with `lead`, the first assistant message opens with a
    10-token text (one more position)."""
    out = [lab.block("text", 10)] if lead else []
    for i in range(n):
        joins = lead and i == 0
        out += [lab.block("tool_call", 10, joins=joins or j > 0) for j in range(3)]
        out += [lab.block("tool_result", 10, joins=j > 0) for j in range(3)]
    return out


def test_lookback_edge_with_tool_runs_collapsed():
    """From September 2026 a run of tool_use (or tool_result) blocks is one position: an entry
    exactly 20 positions back (the breakpoint counted as one) is read, one position further it
    is not (`lookback_positions` 20, `collapse_tool_runs` true since 2026-09-01,
    pricing/cache/anthropic.json)."""

    def run(rounds: int, lead: bool):
        lab = CacheLab("anthropic", "claude-sonnet-4-6")
        head = base(lab)
        lab.send(head, at=0)  # entries at 2,000 (system) and 2,200 (user 1, position 2)
        return lab.send([*head, *_tool_rounds(lab, rounds, lead)], at=30)

    # Edge: 55 blocks after user 1 but 19 positions; the last result is position 21 and its 20
    # positions (21..2) end at user 1. Read 2,200, write 550 (claude-sonnet-4-6, min 1,024).
    edge = run(9, lead=True)  # text + 9 × (calls, results): 19 positions
    assert edge.split == (2200, 0, 550, 0)
    assert edge.outcome.miss_cause is None
    # Beyond: 20 positions after user 1; the last result is position 22, user 1 is the 21st
    # back. The system breakpoint reads 2,000; C = 2,800 → write 800.
    beyond = run(10, lead=False)  # 10 × (calls, results): 20 positions
    assert beyond.split == (2000, 0, 800, 0)
    assert beyond.outcome.miss_kind == "beyond-lookback"
    assert beyond.outcome.miss_cause == "beyond lookback (20 positions, tool runs collapsed)"


# -- minimum length -------------------------------------------------------------------------------


def test_prefix_just_below_the_minimum_is_not_cached():
    lab = CacheLab("anthropic", MODEL)
    prompt = [lab.block("system", 1000), lab.block("user", 23)]  # 1,023 < 1,024
    # Both breakpoints (1,000 and 1,023) are below the minimum: nothing is written.
    # Cost 1,023 × 3 = $0.003069, both times.
    r1 = lab.send(prompt, at=0)
    r2 = lab.send(prompt, at=10)
    assert r1.split == r2.split == (0, 0, 0, 1023)
    assert r2.outcome.miss_kind == "below-minimum"
    assert "1,023 < 1,024" in r2.outcome.miss_cause
    assert r1.cost == r2.cost == usd("3069")


def test_prefix_just_at_the_minimum_is_cached():
    lab = CacheLab("anthropic", MODEL)
    prompt = [lab.block("system", 1000), lab.block("user", 24)]  # 1,024
    # r1: the system breakpoint (1,000) is dropped, the last one (1,024) writes.
    # Cost 1,024 × 3.75 = $0.00384. r2: reads it. Cost 1,024 × 0.3 = $0.0003072.
    r1 = lab.send(prompt, at=0)
    r2 = lab.send(prompt, at=10)
    assert r1.split == (0, 0, 1024, 0)
    assert r2.split == (1024, 0, 0, 0)
    assert (r1.cost, r2.cost) == (usd("3840"), usd("307.2"))


def test_live_entry_behind_markers_all_below_the_minimum_is_named():
    """A request whose every marker is below the minimum reads nothing, but a live entry of its
    prefix exists: the miss is `beyond-lookback` ("a live entry exists but no breakpoint's
    lookback reaches it", docs/cache-rules.md), not `below-minimum` (the prompt itself is long
    enough)."""
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    lab.send(head, at=0)  # entries at 2,000 (system) and 2,200 (user 1)
    # r2, same prompt, one marker on the tools (500 < 1,024): dropped, nothing read or written.
    r2 = lab.send(head, at=10, breakpoints=[Breakpoint(0)])
    assert r2.split == (0, 0, 0, 2200)
    assert r2.outcome.miss_kind == "beyond-lookback"
    assert r2.outcome.miss_cause == "no breakpoint reaches it (all below the minimum)"


def test_a_marker_below_the_minimum_writes_no_entry():
    """A breakpoint shorter than the minimum is dropped (caching.md, simulation rule 2): it
    writes no entry that a later lookback could find."""
    lab = CacheLab("anthropic", MODEL)
    tools, system, u1 = base(lab)
    # r1: markers on the tools (500 < 1,024: dropped) and user 1 (2,200: written).
    r1 = lab.send([tools, system, u1], at=0, breakpoints=[Breakpoint(0), Breakpoint(2)])
    assert r1.split == (0, 0, 2200, 0)
    # r2 changes the system prompt: the last marker walks back over blocks 2, 1 and 0; none
    # holds an entry of this prefix (the tools one was never written). Write 2,200.
    r2 = lab.send([tools, lab.block("system", 1500), u1], at=10)
    assert r2.split == (0, 0, 2200, 0)
    assert r2.outcome.miss_kind == "system-changed"


def test_a_1h_marker_below_the_minimum_bills_no_1h_write():
    """B = the last 1h breakpoint after A (caching.md, mixed-TTL billing) among those kept: a
    1h marker below the minimum is dropped first. All 2,200 are a 5m write: $0.00825."""
    lab = CacheLab("anthropic", MODEL)
    r = lab.send(base(lab), at=0, breakpoints=[Breakpoint(0, "1h"), Breakpoint(2, "5m")])
    assert r.split == (0, 0, 2200, 0)
    assert r.cost == usd("8250")


# -- TTL ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gap", [299, 300])
def test_idle_gap_just_under_or_at_the_5m_ttl(gap):
    """An entry is live while `t − last_use ≤ ttl` (caching.md, simulation rules): exactly 5
    minutes later it is still read."""
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    lab.send(head, at=0)
    # 299 s later: the entries written at t=0 (from the request start) are live. $0.00216.
    r2 = lab.send([*head, lab.block("text", 100), lab.block("user", 300)], at=gap)
    assert r2.split == (2200, 0, 400, 0)
    assert r2.cost == usd("2160")


def test_idle_gap_just_over_the_5m_ttl():
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    lab.send(head, at=0)
    # 301 s later: both entries expired; the whole 2,600 is written again.
    # Cost 2,600 × 3.75 = $0.00975.
    r2 = lab.send([*head, lab.block("text", 100), lab.block("user", 300)], at=301)
    assert r2.split == (0, 0, 2600, 0)
    assert r2.outcome.miss_kind == "ttl-expired"
    assert r2.outcome.miss_cause == "TTL expired (idle 5m01s > TTL 5m)"
    assert r2.cost == usd("9750")


def test_a_read_refreshes_the_ttl_from_the_request_start():
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    lab.send(head, at=0)
    lab.send(head, at=200)  # reads 2,200 and refreshes the entry's lifetime to t=200
    r3 = lab.send(head, at=499)  # 499 s after the write, 299 s after the read: live
    assert r3.split == (2200, 0, 0, 0)


def test_an_entry_read_through_the_lookback_is_refreshed():
    """The entry a request reads is refreshed from that request's start even where the request
    puts no breakpoint on it (so nothing writes it again): "a read refreshes the TTL at no
    cost" (`refresh_on_read`, pricing/cache/anthropic.json; docs/cache-rules.md)."""
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    lab.send(head, at=0)  # entries at 2,000 (system) and 2,200 (user 1), both from t=0
    # r2 at t=200: breakpoints on the system block and on user 2 (block 4). The last one walks
    # back to user 1 and reads the 2,200 entry, which has no breakpoint in r2: only the read
    # refreshes it (to t=200). Read 2,200, write 400.
    r2 = lab.send([*head, lab.block("text", 100), lab.block("user", 300)], at=200)
    assert r2.split == (2200, 0, 400, 0)
    # r3 at t=499 edits the reply after user 1 (a rewind): the 2,200 entry is 499 s past its
    # write but 299 s past its read, so live. Read 2,200, write 100.
    # (Unrefreshed it would have expired: only the system entry, 2,000, would be read.)
    r3 = lab.send([*head, lab.block("text", 50), lab.block("user", 50)], at=499)
    assert r3.split == (2200, 0, 100, 0)
    assert r3.outcome.miss_kind == "prefix-edited"


def test_an_entry_written_again_after_it_expired_is_read():
    """A write over an expired entry replaces it with a fresh one (`CacheStore.put`)."""
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    lab.send(head, at=0)
    # r2 at 301 s: both entries expired; 2,200 written again from t=301.
    assert lab.send(head, at=301).split == (0, 0, 2200, 0)
    # r3 at 320 s: reads the new 2,200 entry (idle 19 s). 2,200 × 0.3 = $0.00066.
    r3 = lab.send(head, at=320)
    assert r3.split == (2200, 0, 0, 0)
    assert r3.cost == usd("660")


def test_a_breakpoint_on_a_live_entry_refreshes_it():
    """Every breakpoint writes or refreshes its entry from the request's start (step 4 of the
    module docstring of replay/cache/anthropic.py), also one the request did not read."""
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    lab.send(head, at=0)  # entries at 2,000 (system) and 2,200 (user 1)
    # r2 at 200 s reads 2,200 (last breakpoint) and re-writes the system entry (its marker):
    # both refreshed to t=200.
    r2 = lab.send([*head, lab.block("text", 100), lab.block("user", 300)], at=200)
    assert r2.split == (2200, 0, 400, 0)
    # r3 at 450 s replaces user 1: only the system entry matches, idle 250 s since r2: live.
    # Read 2,000, write 200. (Unrefreshed it would be 450 s idle: expired.)
    r3 = lab.send([*head[:2], lab.block("user", 200)], at=450)
    assert r3.split == (2000, 0, 200, 0)
    assert r3.outcome.miss_kind == "prefix-edited"


def test_one_hour_entry_read_after_40_minutes():
    # Claude Code 2.1.x asks for 1h on the main thread.
    lab = CacheLab("anthropic", MODEL, client="claude-code", agent_version="2.1.3")
    head = base(lab)
    # r1: both breakpoints 1h: A = 0, B = C = 2,200 → 1h write 2,200. 2,200 × 6 = $0.0132.
    r1 = lab.send(head, at=0)
    assert r1.split == (0, 2200, 0, 0)
    assert r1.cost == usd("13200")
    # r2 after 40 minutes: the 1h entry is live. Read 2,200, 1h write 400.
    # Cost 2,200 × 0.3 + 400 × 6 = 660 + 2,400 = $0.00306.
    r2 = lab.send([*head, lab.block("text", 100), lab.block("user", 300)], at=40 * 60)
    assert r2.split == (2200, 400, 0, 0)
    assert r2.cost == usd("3060")


def test_five_minute_entry_read_after_40_minutes_misses():
    # Claude Code before 2.1: 5m everywhere. Everything is written again (5m): $0.00975.
    lab = CacheLab("anthropic", MODEL, client="claude-code", agent_version="2.0.9")
    head = base(lab)
    lab.send(head, at=0)
    r2 = lab.send([*head, lab.block("text", 100), lab.block("user", 300)], at=40 * 60)
    assert r2.split == (0, 0, 2600, 0)
    assert r2.outcome.miss_cause == "TTL expired (idle 40m > TTL 5m)"
    assert r2.cost == usd("9750")


def test_mixed_1h_and_5m_breakpoints():
    lab = CacheLab("anthropic", MODEL)
    tools, system, u1 = base(lab)
    a1, u2 = lab.block("text", 100), lab.block("user", 300)
    # r1: 1h marker on the system block (2,000), 5m marker on the last block (2,600).
    # A = 0; B = the last 1h breakpoint after A = 2,000; C = 2,600.
    # read 0, 1h write 2,000, 5m write 600. Cost 2,000 × 6 + 600 × 3.75 = $0.01425.
    r1 = lab.send(
        [tools, system, u1, a1, u2], at=0, breakpoints=[Breakpoint(1, "1h"), Breakpoint(4, "5m")]
    )
    assert r1.split == (0, 2000, 600, 0)
    assert r1.cost == usd("14250")
    # r2 ten minutes later (+100 tokens): the 5m entry (2,600) expired, the 1h one (2,000) is
    # live. A = 2,000; no 1h breakpoint after A → B = A; C = 2,700 → 5m write 700.
    # Cost 2,000 × 0.3 + 700 × 3.75 = 600 + 2,625 = $0.003225.
    r2 = lab.send(
        [tools, system, u1, a1, u2, lab.block("text", 50), lab.block("user", 50)],
        at=600,
        breakpoints=[Breakpoint(1, "1h"), Breakpoint(6, "5m")],
    )
    assert r2.split == (2000, 0, 700, 0)
    assert r2.outcome.miss_kind == "ttl-expired"
    assert r2.cost == usd("3225")


def test_a_1h_marker_on_the_same_block_as_a_5m_one_wins_in_either_order():
    """Two markers on one block write one entry, with the longer TTL whichever comes first
    (the store keeps the longer TTL on a re-write, `CacheStore.put`). 2,200 × $6 = $0.0132."""
    lab = CacheLab("anthropic", MODEL)
    r = lab.send(base(lab), at=0, breakpoints=[Breakpoint(2, "1h"), Breakpoint(2, "5m")])
    assert r.split == (0, 2200, 0, 0)
    assert r.cost == usd("13200")


def test_automatic_1h_breakpoint_is_5m_where_the_1h_ttl_does_not_exist():
    """Without the 1-hour TTL (`ttl_1h_available` false, here by override) a 1h breakpoint is
    written as 5m (`AnthropicSimulator.ttl_choice`), the top-level automatic one included: billed
    at the 5m rate, and gone after 5 minutes."""
    lab = CacheLab("anthropic", MODEL, overrides={"anthropic.ttl_1h_available": False})
    head = base(lab)
    auto = [Breakpoint(2, "1h", automatic=True)]
    # r1: the automatic breakpoint lands on user 1 (2,200): 5m write. 2,200 × 3.75 = $0.00825.
    r1 = lab.send(head, at=0, breakpoints=auto)
    assert r1.split == (0, 0, 2200, 0)
    assert r1.cost == usd("8250")
    # r2 after 10 minutes: the 5m entry expired; written again.
    r2 = lab.send(head, at=600, breakpoints=auto)
    assert r2.split == (0, 0, 2200, 0)
    assert r2.outcome.miss_kind == "ttl-expired"


def test_expired_entry_far_back_in_a_long_prompt_is_named():
    """The miss cause names an expired entry even more than 32 blocks before the prompt's end,
    where the walk only visits blocks at whose length some entry was written (`LengthIndex`):
    each entry is indexed by its own prefix length, not the writing request's total."""
    lab = CacheLab("anthropic", MODEL)
    tools, system, u1 = base(lab)
    lab.send([tools, system, u1], at=0)  # entries at 2,000 (system) and 2,200 (user 1)
    # r2 400 s later: user 1 replaced (200 tokens) and 40 blocks appended (2,600 in all). Both
    # entries expired; the longest prefix still held is the system one, 41 blocks from the end.
    # An expired entry comes before the edit (explain's order): ttl-expired, idle 400 s.
    r2 = lab.send([tools, system, lab.block("user", 200), *_appended(lab, 40)], at=400)
    assert r2.split == (0, 0, 2600, 0)
    assert r2.outcome.miss_kind == "ttl-expired"
    assert r2.outcome.miss_cause == "TTL expired (idle 6m40s > TTL 5m)"


# -- parallel requests ----------------------------------------------------------------------------


def test_parallel_requests_in_two_threads():
    lab = CacheLab("anthropic", MODEL)
    tools, system, u1 = base(lab)
    lab.send([tools, system, u1], at=0)  # main: entries ready at t=1 s (response start)
    # A subagent starts 0.5 s later with the same tools and system: the system entry exists but
    # its writer's response has not begun. Read 0; write 2,300. Cost 2,300 × 3.75 = $0.008625.
    s1 = lab.send([tools, system, lab.block("user", 300)], at=0.5, thread="agent-1")
    assert s1.split == (0, 0, 2300, 0)
    assert s1.outcome.miss_kind == "not-ready"
    assert s1.outcome.miss_cause == "written by a parallel request not yet ready"
    assert s1.cost == usd("8625")
    # A second subagent 2 s after the start reads the system prefix: read 2,000, write 300.
    # Cost 2,000 × 0.3 + 300 × 3.75 = $0.001725.
    s2 = lab.send([tools, system, lab.block("user", 300)], at=2, thread="agent-2")
    assert s2.split == (2000, 0, 300, 0)
    assert s2.cost == usd("1725")


def test_an_entry_ready_past_the_calendar_is_never_ready_for_other_threads():
    """Readiness past year 9999 cannot be represented: such an entry is never ready
    (`CacheSimulator.ready_at`), not ready at once."""
    lab = CacheLab("anthropic", MODEL, t0=datetime(9999, 12, 31, 23, 59, 58, tzinfo=UTC))
    head = base(lab)
    lab.send(head, at=1.5)  # ready at start + 1 s: past 9999-12-31 23:59:59.999999
    r = lab.send(head, at=1.8, thread="agent-1")
    assert r.split == (0, 0, 2200, 0)
    assert r.outcome.miss_kind == "not-ready"


def test_a_thread_always_reads_its_own_previous_entries():
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    lab.send(head, at=0)
    # The main thread's next request 0.8 s later (before the nominal readiness at 1 s): its own
    # requests are sequential, so the entry is there. Read 2,200, write 200.
    r2 = lab.send([*head, lab.block("text", 100), lab.block("user", 100)], at=0.8)
    assert r2.split == (2200, 0, 200, 0)


def test_a_summarizer_call_counts_in_the_thread_that_made_it():
    """A strategy's summarizer call (thread `main/...`) runs in its thread's lane
    (`SimRequest.lane`): the thread's next request reads what it wrote at once, before the
    1 s readiness; another thread does not."""
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    assert lab.send(head, at=0, thread="main/summary").split == (0, 0, 2200, 0)
    # main 0.5 s later: read 2,200, write 200.
    r = lab.send([*head, lab.block("text", 100), lab.block("user", 100)], at=0.5)
    assert r.split == (2200, 0, 200, 0)
    # agent-1 at 0.6 s: the summarizer's response has not begun for it. Write 2,400.
    other = lab.send([*head, lab.block("text", 100), lab.block("user", 100)], at=0.6,
                     thread="agent-1")
    assert other.split == (0, 0, 2400, 0)
    assert other.outcome.miss_kind == "not-ready"


def test_another_workspace_s_entry_is_named_by_its_whole_scope():
    """Anthropic isolates caches per workspace (`isolation`, pricing/cache/anthropic.json):
    the same prompt in another session's scope reads nothing, and the miss names the scope the
    entry lives in, route and session (`scope_label`: no cache key to shorten it to)."""
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    lab.send(head, at=0)
    lab.session_id = "other"
    r = lab.send(head, at=10, thread="agent-1")
    assert r.split == (0, 0, 2200, 0)
    assert r.outcome.miss_kind == "other-scope"
    assert r.outcome.miss_cause == "different cache scope (anthropic|anthropic:session)"


# -- model switch, edits --------------------------------------------------------------------------


def test_model_switch_and_back():
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    a1, u2 = lab.block("text", 100), lab.block("user", 300)
    lab.send(head, at=0)
    # r2 on claude-opus-4-1 ($15 input, $18.75 5m write): the cache is per model. Write 2,600.
    # Cost 2,600 × 18.75 = $0.04875.
    r2 = lab.send([*head, a1, u2], at=30, model="claude-opus-4-1")
    assert r2.split == (0, 0, 2600, 0)
    assert r2.outcome.miss_kind == "model-switch"
    assert r2.outcome.miss_cause == "model switch (claude-sonnet-4-5 → claude-opus-4-1)"
    assert r2.cost == usd("48750")
    # r3 back on sonnet: reads sonnet's 2,200 entry from r1 (still live), writes 500.
    # Cost 2,200 × 0.3 + 500 × 3.75 = $0.002535. It read less than r2's 2,600: model switch.
    r3 = lab.send([*head, a1, u2, lab.block("text", 50), lab.block("user", 50)], at=60)
    assert r3.split == (2200, 0, 500, 0)
    assert r3.outcome.miss_kind == "model-switch"
    assert r3.cost == usd("2535")


def test_back_from_a_model_switch_reading_all_of_the_previous_prompt_is_no_miss():
    """A model switch is the cause only when the request read less than the prompt it shares
    with the previous request (`edit_cause`); here it reads all of it."""
    lab = CacheLab("anthropic", MODEL)
    prompt = [*base(lab), lab.block("text", 100), lab.block("user", 300)]
    lab.send(prompt, at=0)  # sonnet entries at 2,000 and 2,600
    assert lab.send(prompt, at=10, model="claude-opus-4-1").split == (0, 0, 2600, 0)
    # Back on sonnet, appending 100: reads sonnet's 2,600, all of opus' prompt. Write 100.
    r3 = lab.send([*prompt, lab.block("text", 50), lab.block("user", 50)], at=20)
    assert r3.split == (2600, 0, 100, 0)
    assert r3.outcome.miss_kind is None


def test_prefix_edited_by_the_strategy():
    lab = CacheLab("anthropic", MODEL)
    tools, system, u1 = base(lab)
    a1, u2 = lab.block("text", 100), lab.block("user", 300)
    lab.send([tools, system, u1, a1, u2], at=0)  # entries at 2,000 and 2,600
    # The strategy replaced message 0 (user 1) with a 50-token stub: only the system entry
    # matches. Read 2,000, write 450. Cost 600 + 450 × 3.75 = $0.0022875.
    r2 = lab.send([tools, system, lab.block("user", 50), a1, u2], at=30)
    assert r2.split == (2000, 0, 450, 0)
    assert r2.outcome.miss_kind == "prefix-edited"
    assert r2.outcome.miss_cause == "prefix edited at message 0"
    assert r2.cost == usd("2287.5")


def test_a_shortened_prompt_names_its_last_message():
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    lab.send([*head, lab.block("text", 100), lab.block("user", 300)], at=0)  # 2,000 and 2,600
    # r2 drops the last two messages: it ends at message 0 (user 1, 2,200), where r1 wrote no
    # entry. Read 2,000 (system), write 200.
    r2 = lab.send(head, at=10)
    assert r2.split == (2000, 0, 200, 0)
    assert r2.outcome.miss_kind == "prefix-edited"
    assert r2.outcome.miss_cause == "prompt shortened at message 0"


def test_an_edit_also_names_a_live_entry_beyond_the_lookback():
    """The strategy's edit is the cause, and the longer live prefix nothing reached is named
    after it (`explain`)."""
    lab = CacheLab("anthropic", MODEL)
    head, tail = base(lab), _appended(lab, 25)
    # r1 (2,450): markers on the system (2,000), block 5 (2,230) and the last block (2,450).
    lab.send([*head, *tail], at=0, breakpoints=[Breakpoint(1), Breakpoint(5), Breakpoint(27)])
    # r2 replaces the last message (message 25) and appends 10 blocks (2,550). Its last marker
    # (block 37) reaches back to block 18: the live 2,230 entry is out of reach; the system
    # marker reads 2,000. Write 550.
    r2 = lab.send([*head, *tail[:-1], lab.block("user", 10), *_appended(lab, 10)], at=10)
    assert r2.split == (2000, 0, 550, 0)
    assert r2.outcome.miss_kind == "prefix-edited"
    assert r2.outcome.miss_cause == (
        "prefix edited at message 25; beyond lookback (20 positions, tool runs collapsed)"
    )


def test_tool_and_system_changes_are_named():
    lab = CacheLab("anthropic", MODEL)
    tools, system, u1 = base(lab)
    lab.send([tools, system, u1], at=0)
    r2 = lab.send([lab.block("tool", 500), system, u1], at=10)
    assert r2.split == (0, 0, 2200, 0)
    assert (r2.outcome.miss_kind, r2.outcome.miss_cause) == (
        "tools-changed",
        "tool definitions changed",
    )
    lab2 = CacheLab("anthropic", MODEL)
    tools, system, u1 = base(lab2)
    lab2.send([tools, system, u1], at=0)
    # No marker sits on the tools, so nothing before the system prompt is cached: read 0.
    r3 = lab2.send([tools, lab2.block("system", 1500), u1], at=20)
    assert r3.split == (0, 0, 2200, 0)
    assert r3.outcome.miss_kind == "system-changed"


# -- automatic breakpoint, no breakpoint ----------------------------------------------------------


def test_top_level_automatic_breakpoint():
    lab = CacheLab("anthropic", MODEL, client="automatic")
    system, u1 = lab.block("system", 1500), lab.block("user", 200)
    # The automatic breakpoint goes on the last cacheable block; a trailing thinking block is
    # not one, so it walks back to user 1 (1,700). Write 1,700, uncached 100.
    # Cost 1,700 × 3.75 + 100 × 3 = 6,375 + 300 = $0.006675.
    r1 = lab.send([system, u1, lab.block("thinking", 100)], at=0)
    assert r1.split == (0, 0, 1700, 100)
    assert r1.cost == usd("6675")
    r2 = lab.send([system, u1, lab.block("text", 100), lab.block("user", 100)], at=5)
    assert r2.split == (1700, 0, 200, 0)


def test_top_level_automatic_breakpoint_with_a_1h_ttl():
    """The top-level `cache_control` carries its TTL like any marker (caching.md: "ttl?"):
    1h, it writes a 1h entry. 2,200 × $6 = $0.0132; read back 40 minutes later."""
    lab = CacheLab("anthropic", MODEL)
    head = base(lab)
    auto = [Breakpoint(2, "1h", automatic=True)]
    r1 = lab.send(head, at=0, breakpoints=auto)
    assert r1.split == (0, 2200, 0, 0)
    assert r1.cost == usd("13200")
    assert lab.send(head, at=40 * 60, breakpoints=auto).split == (2200, 0, 0, 0)


def test_automatic_breakpoint_did_not_exist_before_february_2026():
    lab = CacheLab("anthropic", MODEL, client="automatic", t0=datetime(2026, 1, 15, tzinfo=UTC))
    prompt = base(lab)
    lab.send(prompt, at=0)
    r2 = lab.send(prompt, at=5)
    assert r2.split == (0, 0, 0, 2200)
    assert r2.outcome.miss_kind == "no-breakpoint"


def test_no_cache_control_caches_nothing():
    lab = CacheLab("anthropic", MODEL, client="none")
    prompt = base(lab)
    lab.send(prompt, at=0)
    r2 = lab.send(prompt, at=5)
    assert r2.split == (0, 0, 0, 2200)
    assert r2.outcome.miss_kind == "no-breakpoint"


# -- thinking stripping and per-model rules -------------------------------------------------------


def test_haiku_strips_earlier_thinking_at_a_new_user_turn():
    # claude-haiku-4-5: min 4,096; $1 input, $0.10 read, $1.25 5m write.
    lab = CacheLab("anthropic", "claude-haiku-4-5")
    system, u1 = lab.block("system", 4000), lab.block("user", 200)
    think = lab.block("thinking", 300)
    call, result = lab.block("tool_call", 50, joins=True), lab.block("tool_result", 50)
    lab.send([system, u1], at=0)  # writes 4,200 (the system breakpoint is under 4,096)
    # Tool loop: thinking after the last user turn is kept. Read 4,200, write 400.
    r2 = lab.send([system, u1, think, call, result], at=10)
    assert r2.split == (4200, 0, 400, 0)
    # New user turn: the earlier thinking block (300) is stripped, so the prompt is 4,500 and
    # differs from the 4,600 entry after user 1. Read 4,200, write 300; 300 dropped.
    # Cost 4,200 × 0.1 + 300 × 1.25 = 420 + 375 = $0.000795.
    r3 = lab.send([system, u1, think, call, result, lab.block("text", 100),
                   lab.block("user", 100)], at=20)
    assert r3.split == (4200, 0, 300, 0)
    assert r3.outcome.dropped_tokens == 300
    assert r3.outcome.prompt == r3.request.total - 300
    assert r3.outcome.miss_kind == "thinking-stripped"
    assert r3.cost == usd("795")


def test_stripping_thinking_never_sent_before_is_not_a_miss():
    """Thinking stripped at a new user turn is named only when the request read less than the
    lane's previous prompt: here the stripped block was never sent, and the read covers all of
    the previous prompt (4,200), so there is no miss. Haiku 4.5: $0.10 read, $1.25 5m write."""
    lab = CacheLab("anthropic", "claude-haiku-4-5")
    system, u1 = lab.block("system", 4000), lab.block("user", 200)
    lab.send([system, u1], at=0)  # writes 4,200
    think = lab.block("thinking", 300)
    call, result = lab.block("tool_call", 50, joins=True), lab.block("tool_result", 50)
    # The thinking block (300) before the new user turn is dropped: 4,500 billed. Read 4,200,
    # write 300. Cost 4,200 × 0.1 + 300 × 1.25 = 420 + 375 = $0.000795.
    r2 = lab.send([system, u1, think, call, result, lab.block("text", 100),
                   lab.block("user", 100)], at=10)
    assert r2.split == (4200, 0, 300, 0)
    assert r2.outcome.dropped_tokens == 300
    assert r2.outcome.miss_kind is None
    assert r2.cost == usd("795")


def test_thinking_stripped_once_is_not_named_again():
    """The strip is named on the request where more thinking is dropped than on the lane's
    previous one; the next request drops the same block and is not a `thinking-stripped`
    miss, even when it reads less than its predecessor."""
    lab = CacheLab("anthropic", "claude-haiku-4-5")
    system, u1 = lab.block("system", 4000), lab.block("user", 200)
    think = lab.block("thinking", 300)
    call, result = lab.block("tool_call", 50, joins=True), lab.block("tool_result", 50)
    a2, u2 = lab.block("text", 100), lab.block("user", 100)
    lab.send([system, u1], at=0)  # writes 4,200
    lab.send([system, u1, think, call, result], at=10)  # reads 4,200, writes 4,600
    # r3, a new user turn, strips the thinking (4,500 billed); its one marker is on user 1
    # (4,200), which it reads: less than r2's 4,600 because of the strip.
    r3 = lab.send([system, u1, think, call, result, a2, u2], at=20, breakpoints=[Breakpoint(1)])
    assert r3.split == (4200, 0, 0, 300)
    assert r3.outcome.miss_kind == "thinking-stripped"
    # r4 appends 200: the same block is dropped (300). The last marker walks back to user 1
    # (r3 wrote nothing after it): read 4,200, write 500, less than r3's 4,500, but the cause
    # is r3's missing marker, not a new strip.
    r4 = lab.send([system, u1, think, call, result, a2, u2, lab.block("text", 100),
                   lab.block("user", 100)], at=30)
    assert r4.split == (4200, 0, 500, 0)
    assert r4.outcome.dropped_tokens == 300
    assert r4.outcome.miss_kind is None


def test_sonnet_4_6_keeps_thinking():
    lab = CacheLab("anthropic", "claude-sonnet-4-6")
    system, u1 = lab.block("system", 4000), lab.block("user", 200)
    think = lab.block("thinking", 300)
    call, result = lab.block("tool_call", 50, joins=True), lab.block("tool_result", 50)
    lab.send([system, u1], at=0)
    lab.send([system, u1, think, call, result], at=10)
    r3 = lab.send([system, u1, think, call, result, lab.block("text", 100),
                   lab.block("user", 100)], at=20)
    assert r3.split == (4600, 0, 200, 0)
    assert r3.outcome.dropped_tokens == 0


def test_opus_4_5_minimum_is_4096():
    lab = CacheLab("anthropic", "claude-opus-4-5")
    prompt = [lab.block("system", 4000), lab.block("user", 95)]  # 4,095
    lab.send(prompt, at=0)
    assert lab.send(prompt, at=5).split == (0, 0, 0, 4095)
    lab2 = CacheLab("anthropic", "claude-opus-4-5")
    prompt = [lab2.block("system", 4000), lab2.block("user", 96)]  # 4,096
    lab2.send(prompt, at=0)
    # Opus 4.5: $0.50 read per MTok: 4,096 × 0.5 = $0.002048.
    r2 = lab2.send(prompt, at=5)
    assert r2.split == (4096, 0, 0, 0)
    assert r2.cost == usd("2048")


def test_opus_5_5_reads_at_5_percent():
    # Opus 5.5: min 512; genai-prices $4 input, $0.20 read (0.05×), $5 5m write.
    lab = CacheLab("anthropic", "claude-opus-5-5")
    prompt = [lab.block("system", 500), lab.block("user", 12)]  # 512
    lab.send(prompt, at=0)
    r2 = lab.send(prompt, at=5)
    assert r2.split == (512, 0, 0, 0)
    assert r2.cost == usd("102.4")  # 512 × 0.2


def test_long_context_tier_applies_to_every_bucket():
    # Sonnet 4.5 above 200,000 total input: every token at the tier rate ($6 / $0.60 / $7.50).
    lab = CacheLab("anthropic", MODEL)
    head = [lab.block("system", 150_000), lab.block("user", 1_000)]
    lab.send(head, at=0)
    # r2: read 151,000, write 60,000 (total 211,000 > 200,000).
    # Cost 151,000 × 0.6 + 60,000 × 7.5 = 90,600 + 450,000 = $0.5406.
    r2 = lab.send([*head, lab.block("text", 1_000), lab.block("user", 59_000)], at=10)
    assert r2.split == (151_000, 0, 60_000, 0)
    assert r2.cost == usd("540600")
