"""Claude on AWS Bedrock (variant `bedrock` of pricing/cache/anthropic.json), hand-computed.

Same prefix rules and multipliers as the Claude API, except: no top-level automatic caching,
organization isolation, each checkpoint must lie a minimum after the previous one (UNCERTAIN,
documented by AWS), Fable 5 / Mythos 5 need 1,024, 1h TTL only on Claude 4.5+, and tool runs
are not collapsed in the lookback (UNCERTAIN). Dates: 2026-10-20. Split = (read, 1h write,
5m write, uncached).
"""

from __future__ import annotations

from decimal import Decimal

from replay.cache import Breakpoint
from replay.cache.testing import CacheLab

SONNET = "global.anthropic.claude-sonnet-4-5-20250929-v1:0"  # $3 / $0.30 / $3.75 / $6


def usd(micro: str) -> Decimal:
    return Decimal(micro) / 1_000_000


def test_each_checkpoint_needs_the_minimum_after_the_previous_one():
    lab = CacheLab("aws", SONNET)
    system, u1 = lab.block("system", 1500), lab.block("user", 200)
    # Breakpoints at 1,500 (kept: ≥ 1,024) and 1,700 (only 200 after the first: dropped).
    # Write 1,500, uncached 200. Cost 1,500 × 3.75 + 200 × 3 = 5,625 + 600 = $0.006225.
    r1 = lab.send([system, u1], at=0)
    assert r1.split == (0, 0, 1500, 200)
    assert r1.outcome.route == "anthropic/bedrock"
    assert r1.cost == usd("6225")
    # The direct API keeps both: write 1,700. Cost 1,700 × 3.75 = $0.006375.
    direct = CacheLab("anthropic", "claude-sonnet-4-5")
    d1 = direct.send([direct.block("system", 1500), direct.block("user", 200)], at=0)
    assert d1.split == (0, 0, 1700, 0)
    assert d1.cost == usd("6375")


def test_a_checkpoint_dropped_below_the_minimum_is_no_floor_for_the_next():
    """Each checkpoint must lie the minimum (1,024) after the previous *checkpoint*; a marker
    dropped for being short is none (our reading: the rule is UNCERTAIN). Markers at 500
    (dropped) and 1,300 (1,300 from the start: kept): write 1,300. (Counting the dropped marker
    would write nothing: 800 < 1,024.)"""
    lab = CacheLab("aws", SONNET)
    r = lab.send([lab.block("system", 500), lab.block("user", 800)], at=0,
                 breakpoints=[Breakpoint(0), Breakpoint(1)])
    assert r.split == (0, 0, 1300, 0)


def test_no_top_level_automatic_caching():
    lab = CacheLab("aws", SONNET, client="automatic")
    prompt = [lab.block("system", 1500), lab.block("user", 700)]
    lab.send(prompt, at=0)
    r2 = lab.send(prompt, at=5)
    assert r2.split == (0, 0, 0, 2200)
    assert r2.outcome.miss_kind == "no-breakpoint"
    assert "automatic" in r2.outcome.miss_cause


def test_fable_5_minimum_is_1024_on_bedrock_and_512_direct():
    # claude-fable-5: $10 input, $12.50 5m write (both providers).
    prompt_sizes = (600, 100)  # 700 tokens
    direct = CacheLab("anthropic", "claude-fable-5")
    d = direct.send([direct.block("system", prompt_sizes[0]), direct.block("user", 100)], at=0)
    # Direct: min 512 → the 600 and 700 breakpoints both write: 700 × 12.5 = $0.00875.
    assert d.split == (0, 0, 700, 0)
    assert d.cost == usd("8750")
    bedrock = CacheLab("aws", "global.anthropic.claude-fable-5-v1:0")
    b = bedrock.send([bedrock.block("system", 600), bedrock.block("user", 100)], at=0)
    # Bedrock: min 1,024 → nothing cached: 700 × 10 = $0.007.
    assert b.split == (0, 0, 0, 700)
    assert b.cost == usd("7000")


def test_one_hour_ttl_only_on_claude_4_5_and_later():
    # Claude Code 2.1 asks for 1h on the main thread.
    old = CacheLab("aws", "global.anthropic.claude-sonnet-4-20250514-v1:0", client="claude-code",
                   agent_version="2.1.0")
    prompt = [old.block("tool", 500), old.block("system", 1500), old.block("user", 1200)]
    # Sonnet 4 on Bedrock: no 1h → both breakpoints are 5m; 2,000 and 3,200 (1,200 apart ≥
    # 1,024): write 3,200 at 5m. Cost 3,200 × 3.75 = $0.012.
    r = old.send(prompt, at=0)
    assert r.split == (0, 0, 3200, 0)
    assert r.cost == usd("12000")
    new = CacheLab("aws", SONNET, client="claude-code", agent_version="2.1.0")
    prompt = [new.block("tool", 500), new.block("system", 1500), new.block("user", 1200)]
    # Sonnet 4.5: 1h available → 1h write 3,200. Cost 3,200 × 6 = $0.0192.
    r = new.send(prompt, at=0)
    assert r.split == (0, 3200, 0, 0)
    assert r.cost == usd("19200")


def test_regional_endpoint_price_comes_from_the_model_id():
    # Regional ids (us./eu./bare anthropic.) carry the +10% in genai-prices: $3.30 input,
    # $4.125 5m write.
    lab = CacheLab("aws", "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    r = lab.send([lab.block("tool", 500), lab.block("system", 1500), lab.block("user", 200)], at=0)
    # Breakpoints 2,000 (kept) and 2,200 (200 after: dropped). Write 2,000, uncached 200.
    # Cost 2,000 × 4.125 + 200 × 3.3 = 8,250 + 660 = $0.00891.
    assert r.split == (0, 0, 2000, 200)
    assert r.outcome.price_factor == 1
    assert r.cost == usd("8910")


def test_tool_runs_are_not_collapsed_on_bedrock():
    lab = CacheLab("aws", "global.anthropic.claude-sonnet-4-6-v1:0")
    head = [lab.block("tool", 500), lab.block("system", 1500), lab.block("user", 1100)]
    calls = [lab.block("tool_call", 10, joins=i > 0) for i in range(30)]
    results = [lab.block("tool_result", 1100 if i == 29 else 10, joins=i > 0) for i in range(30)]
    lab.send(head, at=0)  # entries at 2,000 and 3,100
    # 60 positions: the last breakpoint cannot reach 3,100; the system one reads 2,000.
    r2 = lab.send([*head, *calls, *results], at=10)
    assert r2.outcome.cache_read == 2000
    assert r2.outcome.miss_kind == "beyond-lookback"
