"""Qwen (Alibaba Cloud Model Studio) caching, hand-computed.

Implicit mode (no markers): automatic, minimum 256 (international page; 1,024 on the Chinese
page: UNCERTAIN), exact prefix and 5 min idle assumed, hits at 20% of input, no write fee.
Explicit mode (the client sends `cache_control` markers; variant `explicit`): the Anthropic
algorithm with 4 markers, a 20-block lookback, minimum 1,024, 5 min TTL reset on hit, creation
at 125% and hits at 10%; an entry exists only after the response (the logged duration, else
5 s assumed).

genai-prices has no Qwen provider, so direct requests are priced with `--price`; the rates
below are a user's override (input $0.40, output $1.20, cache read $0.08, cache write $0.50 per
MTok). One `cache_read` rate serves both modes: explicit hits (10%) need their own override.
Through OpenRouter, genai-prices has qwen/qwen-plus: $0.26 input, $0.052 read, $0.325 write.
Split = (read, 1h write, 5m write, uncached).
"""

from __future__ import annotations

from decimal import Decimal

from replay.cache.testing import CacheLab
from replay.prices import Pricer, parse_price_override


def usd(micro: str) -> Decimal:
    return Decimal(micro) / 1_000_000


def lab_for(client: str, **kw) -> CacheLab:
    lab = CacheLab("qwen", "qwen-plus", client=client, **kw)
    lab.pricer = Pricer(dict([parse_price_override(
        "qwen-plus=input:0.40,output:1.20,cache_read:0.08,cache_write:0.50")]))
    return lab


def test_implicit_minimum_256():
    lab = lab_for("none")
    head = [lab.block("system", 200), lab.block("user", 100)]
    lab.send(head, at=0)
    # Shared 300 ≥ 256: cached 300, uncached 20. Cost 300 × 0.08 + 20 × 0.4 = $0.000032.
    r2 = lab.send([*head, lab.block("text", 10), lab.block("user", 10)], at=10)
    assert r2.split == (300, 0, 0, 20)
    assert r2.outcome.route == "qwen"
    assert r2.cost == usd("32")
    lab = lab_for("none")
    head = [lab.block("system", 200), lab.block("user", 55)]  # 255
    lab.send(head, at=0)
    assert lab.send([*head, lab.block("user", 10)], at=10).outcome.cache_read == 0


def test_explicit_markers_switch_to_the_explicit_mode():
    lab = lab_for("pi")
    system, u1 = lab.block("system", 1000), lab.block("user", 100)
    # Markers on the system prompt (1,000 < 1,024: dropped) and on user 1 (1,100): write 1,100.
    # Cost 1,100 × 0.5 = $0.00055.
    r1 = lab.send([system, u1], at=0, duration_s=30)
    assert r1.outcome.route == "qwen/explicit"
    assert r1.split == (0, 0, 1100, 0)
    assert r1.cost == usd("550")
    # 60 s later: read 1,100, write 20. Cost 1,100 × 0.08 + 20 × 0.5 = 88 + 10 = $0.000098.
    r2 = lab.send([system, u1, lab.block("text", 10), lab.block("user", 10)], at=60)
    assert r2.split == (1100, 0, 20, 0)
    assert r2.cost == usd("98")


def test_explicit_entry_exists_only_after_the_response():
    lab = lab_for("pi")
    system, u1 = lab.block("system", 1000), lab.block("user", 100)
    lab.send([system, u1], at=0, duration_s=30)  # response ends at t = 30 s
    early = lab.send([system, u1, lab.block("user", 10)], at=10, thread="agent-1")
    assert early.outcome.cache_read == 0
    assert early.outcome.miss_kind == "not-ready"
    late = lab.send([system, u1, lab.block("user", 10)], at=31, thread="agent-2")
    assert late.outcome.cache_read == 1100


def test_explicit_five_minute_ttl_and_no_one_hour():
    lab = lab_for("claude-code", agent_version="2.1.0")  # asks for 1h: Qwen has none
    system, u1 = lab.block("system", 1000), lab.block("user", 100)
    r1 = lab.send([system, u1], at=0)
    assert r1.split == (0, 0, 1100, 0)  # written as 5m
    assert lab.send([system, u1], at=299).outcome.cache_read == 1100
    r3 = lab.send([system, u1], at=299 + 301)
    assert r3.outcome.miss_kind == "ttl-expired"


def test_through_openrouter():
    lab = CacheLab("openrouter", "qwen/qwen-plus", client="none")
    head = [lab.block("system", 200), lab.block("user", 100)]
    lab.send(head, at=0)
    # Cost 300 × 0.052 + 20 × 0.26 = 15.6 + 5.2 = $0.0000208.
    r2 = lab.send([*head, lab.block("text", 10), lab.block("user", 10)], at=10)
    assert r2.outcome.route == "openrouter>qwen"
    assert r2.split == (300, 0, 0, 20)
    assert r2.cost == usd("20.8")


def test_explicit_lookback_is_20_blocks():
    lab = lab_for("pi")
    system, u1 = lab.block("system", 1000), lab.block("user", 100)
    lab.send([system, u1], at=0)  # entry at 1,100 (user 1, block 1)
    more = [lab.block("tool_result" if i % 2 else "text", 10) for i in range(24)]
    # The last user-role block is 24 blocks after user 1: out of the 20-block window (tool
    # results are not collapsed on Qwen), and the system marker (1,000) is under the minimum.
    r2 = lab.send([system, u1, *more], at=10)
    assert r2.outcome.cache_read == 0
    assert r2.outcome.miss_kind == "beyond-lookback"
