"""DeepSeek disk caching, hand-computed.

Legacy rule (2024-08-02 to 2026-04): 64-token storage units — the longest common prefix with a
cached prompt, rounded down to 64, nothing under 64. V4 (from 2026-04, UNCERTAIN day): a hit is
the full match of a persisted prefix unit: the end of each request's input, the end of its
output (seen in the thread's next prompt), a common prefix found across requests (usable from a
later request, ≥ 5 s later) and units every 64 tokens inside long inputs (interval
undocumented). No write fee; units assumed to live 2 h. `cache_control` markers are ignored.

Rates (genai-prices, deepseek-v4-flash, 2026): $0.15 miss / $0.003 hit per MTok.
Split = (read, 1h write, 5m write, uncached).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from replay.cache.testing import CacheLab

V4 = "deepseek-v4-flash"


def usd(micro: str) -> Decimal:
    return Decimal(micro) / 1_000_000


def test_v4_units_at_the_end_of_input_and_of_output():
    lab = CacheLab("deepseek", V4)
    system, u1 = lab.block("system", 1000), lab.block("user", 100)
    # r1: cold. Cost 1,100 × 0.15 = $0.000165.
    r1 = lab.send([system, u1], at=0)
    assert r1.split == (0, 0, 0, 1100)
    assert r1.outcome.mechanism == "prefix-units"
    assert r1.cost == usd("165")
    # r2: the assistant's 200-token answer then a new user message. The output unit ends after
    # the answer (1,300): hit 1,300 exactly, miss 100.
    # Cost 1,300 × 0.003 + 100 × 0.15 = 3.9 + 15 = $0.0000189.
    r2 = lab.send([system, u1, lab.block("text", 200), lab.block("user", 100)], at=10)
    assert r2.split == (1300, 0, 0, 100)
    assert r2.cost == usd("18.9")


def test_legacy_64_token_units_before_v4():
    lab = CacheLab("deepseek", V4, t0=datetime(2026, 3, 2, 12, tzinfo=UTC))
    system, u1 = lab.block("system", 1000), lab.block("user", 100)
    lab.send([system, u1], at=0)
    # Shared 1,100 (the previous prompt; its answer is not a unit under the legacy rule):
    # 64 × ⌊1100 / 64⌋ = 1,088 hit, 312 miss.
    r2 = lab.send([system, u1, lab.block("text", 200), lab.block("user", 100)], at=10)
    assert r2.outcome.mechanism == "automatic-prefix"
    assert r2.split == (1088, 0, 0, 312)


def test_v4_common_prefix_unit_serves_later_requests():
    lab = CacheLab("deepseek", V4)
    system = lab.block("system", 1000)
    lab.send([system, lab.block("user", 100)], at=0)
    # r2 shares 1,000 with r1's unit but does not contain it: only the 64-token interval units
    # inside it match: 960 hit, 140 miss. Cost 960 × 0.003 + 140 × 0.15 = $0.00002388.
    r2 = lab.send([system, lab.block("user", 100)], at=10)
    assert r2.split == (960, 0, 0, 140)
    assert r2.cost == usd("23.88")
    # 2 s later the common-prefix unit (1,000) is still being built: 960 again.
    assert lab.send([system, lab.block("user", 100)], at=12).split == (960, 0, 0, 140)
    # 10 s later it serves: hit 1,000, miss 100. Cost 3 + 15 = $0.000018.
    r4 = lab.send([system, lab.block("user", 100)], at=20)
    assert r4.split == (1000, 0, 0, 100)
    assert r4.cost == usd("18")


def test_units_under_64_tokens_are_not_cached():
    lab = CacheLab("deepseek", V4)
    short = [lab.block("system", 50), lab.block("user", 13)]  # 63
    lab.send(short, at=0)
    assert lab.send(short, at=10).split == (0, 0, 0, 63)
    lab = CacheLab("deepseek", V4)
    exact = [lab.block("system", 50), lab.block("user", 14)]  # 64
    lab.send(exact, at=0)
    assert lab.send(exact, at=10).split == (64, 0, 0, 0)


def test_idle_gap_under_and_over_the_assumed_two_hours():
    def second(gap: float):
        lab = CacheLab("deepseek", V4)
        head = [lab.block("system", 1000), lab.block("user", 100)]
        lab.send(head, at=0)
        return lab.send(head, at=gap)

    assert second(7199).split == (1100, 0, 0, 0)
    over = second(7201)
    assert over.split == (0, 0, 0, 1100)
    assert over.outcome.miss_cause == "TTL expired (idle 2h00m01s > TTL 2h00m)"


def test_an_expired_unit_still_names_the_miss_after_another_request():
    """The unit expired at 2 h; a request of another thread in between (its own prompt, 7,201 s)
    does not make the resend's miss a mystery: it is still the TTL's (until 2026-12-06 every
    request dropped expired units, and the resend read 0 with no cause)."""
    lab = CacheLab("deepseek", V4)
    head = [lab.block("system", 1000), lab.block("user", 100)]
    lab.send(head, at=0)
    lab.send([lab.block("system", 500)], at=7201, thread="b")
    again = lab.send(head, at=7300)
    assert again.split == (0, 0, 0, 1100)
    assert again.outcome.miss_cause == "TTL expired (idle 2h01m40s > TTL 2h00m)"


def test_cache_control_markers_are_ignored():
    lab = CacheLab("deepseek", V4, client="claude-code", agent_version="2.1.0")
    head = [lab.block("system", 1000), lab.block("user", 100)]
    lab.send(head, at=0)
    r2 = lab.send(head, at=10)
    assert r2.split == (1100, 0, 0, 0)  # no write buckets, whatever the markers ask


def test_parallel_request_and_model_switch():
    lab = CacheLab("deepseek", V4)
    head = [lab.block("system", 1000), lab.block("user", 100)]
    lab.send(head, at=0)
    # Another thread 2 s later: the unit is still being built (5 s assumed). Nothing hit.
    early = lab.send(head, at=2, thread="agent-1")
    assert early.split == (0, 0, 0, 1100)
    assert early.outcome.miss_kind == "not-ready"
    assert lab.send(head, at=6, thread="agent-2").split == (1100, 0, 0, 0)
    # deepseek-v4-pro has its own cache ($0.66 miss): 1,100 × 0.66 = $0.000726.
    switched = lab.send(head, at=10, model="deepseek-v4-pro")
    assert switched.split == (0, 0, 0, 1100)
    assert switched.outcome.miss_kind == "model-switch"
    assert switched.cost == usd("726")


def test_the_common_prefix_unit_is_the_longest_prefix_shared():
    lab = CacheLab("deepseek", V4)
    system, x = lab.block("system", 1000), lab.block("user", 100)
    lab.send([system, x, lab.block("user", 100)], at=0)  # A: 1,200
    lab.send([system, lab.block("user", 100)], at=10)  # B: shares 1,000 with A
    # r3 shares 1,100 with A and 1,000 with B, containing neither: its common-prefix unit is
    # at the longest, 1,100 (usable from a later request, once built: 5 s).
    lab.send([system, x, lab.block("user", 100)], at=20)
    r4 = lab.send([system, x, lab.block("user", 100)], at=30)
    assert r4.split == (1100, 0, 0, 100)


def test_tokens_lost_only_to_the_64_token_units_are_no_miss():
    # Last message edited: the 1,000 shared tokens hit only the units every 64 tokens inside
    # them, 960. The previous prompt (1,020) ends within one unit interval of that read, so
    # nothing more is a miss (as OpenAI's tokens lost to its 128-token rounding).
    lab = CacheLab("deepseek", V4)
    system = lab.block("system", 1000)
    lab.send([system, lab.block("user", 20)], at=0)
    r2 = lab.send([system, lab.block("user", 20)], at=10)
    assert r2.split == (960, 0, 0, 60)
    assert r2.outcome.miss_kind is None


def test_another_scope_s_expired_unit_is_no_miss_cause():
    # Two sessions (two cache scopes) over one store. A unit of the other scope names the miss
    # while it lives; past its 2 h it could not have been read anywhere: a plain cold start.
    def first_of_other_session(gap: float):
        lab = CacheLab("deepseek", V4)
        other = CacheLab("deepseek", V4, session_id="other")
        other.store, other.table = lab.store, lab.table
        head = [lab.block("system", 1000), lab.block("user", 100)]
        lab.send(head, at=0)
        return other.send(head, at=gap)

    assert first_of_other_session(10).outcome.miss_kind == "other-scope"
    late = first_of_other_session(7201)
    assert late.split == (0, 0, 0, 1100)
    assert late.outcome.miss_kind == "cold-start"


def test_the_longest_unit_out_of_reach_names_the_miss():
    # Thread a's unit (1,200) is still being built (5 s) when thread c asks 2 s later; another
    # session's unit (1,100) is live but in its own scope. Both are out of reach: the longer
    # one, not ready, is the cause.
    lab = CacheLab("deepseek", V4)
    other = CacheLab("deepseek", V4, session_id="other")
    other.store, other.table = lab.store, lab.table
    system, u1 = lab.block("system", 1000), lab.block("user", 100)
    other.send([system, u1], at=0)
    u2 = lab.block("user", 100)
    lab.send([system, u1, u2], at=0, thread="a")
    r = lab.send([system, u1, u2, lab.block("user", 100)], at=2, thread="c")
    assert r.split == (0, 0, 0, 1300)
    assert r.outcome.miss_kind == "not-ready"


def test_a_unit_out_of_reach_is_credited_only_its_64_token_units():
    # Thread a's unit (1,200) is not ready yet for thread c, which shares 1,050 tokens with it:
    # what it could have hit there is the units every 64 tokens inside them, 1,024. c hits the
    # live 980-token unit instead; 1,024 is within one interval (63) of that: no miss.
    lab = CacheLab("deepseek", V4)
    system, head = lab.block("system", 980), lab.block("user", 70)
    lab.send([system], at=0, thread="y")
    lab.send([system, head, lab.block("user", 150)], at=10, thread="a")
    r = lab.send([system, head, lab.block("user", 100)], at=12, thread="c")
    assert r.split == (980, 0, 0, 170)
    assert r.outcome.miss_kind is None
