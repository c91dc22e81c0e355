"""replay.prices: exact Decimal prices equal to genai-prices' calc_price, overrides, windows."""

from __future__ import annotations

import re
import socket
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import genai_prices
import pytest
from genai_prices import Usage, calc_price, data_snapshot
from genai_prices import types as gp_types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay._errors import ReplayError
from replay.prices import (
    PRICE_FORMAT,
    Buckets,
    Price,
    Pricer,
    RateOverride,
    context_window,
    parse_price_override,
    provider_for_model,
)
from replay.prices._patches import price_patches

OCT_20 = datetime(2026, 10, 20, 12, 0, tzinfo=UTC)
D = Decimal


def usage_of(b: Buckets) -> Usage:
    return Usage(
        input_tokens=b.uncached + b.cache_read + b.cache_write_5m + b.cache_write_1h,
        cache_read_tokens=b.cache_read,
        cache_write_tokens=b.cache_write_5m + b.cache_write_1h,
        cache_write_1h_tokens=b.cache_write_1h,
        output_tokens=b.output,
    )


def reference(b: Buckets, model: str, provider: str, ts: datetime):
    """genai-prices' own answer for the same request (caching.md E)."""
    r = calc_price(usage_of(b), model, provider_id=provider, genai_request_timestamp=ts)
    return r.input_price, r.output_price, r.total_price


def completed_reference(pricer: Pricer, b: Buckets, model: str, provider: str, ts: datetime):
    """genai-prices' arithmetic on the prices `pricer` uses: `reference` where replay adds no
    rate of its own, else the same arithmetic on the completed prices."""
    prices = pricer.model_price(model=model, provider=provider, ts=ts)
    own = calc_price(usage_of(b), model, provider_id=provider, genai_request_timestamp=ts)
    if prices == own.model_price:
        return reference(b, model, provider, ts)
    r = prices.calc_price(usage_of(b))
    return r["input_price"], r["output_price"], r["total_price"]


def amounts(p: Price):
    return p.input_usd, p.output_usd, p.total_usd


def assert_decimals(p: Price):
    for value in amounts(p):
        assert type(value) is Decimal


# -- Buckets --------------------------------------------------------------------------------------


def test_buckets_prompt_and_add():
    a = Buckets(uncached=1, cache_read=2, cache_write_5m=3, cache_write_1h=4, output=5)
    b = Buckets(uncached=10, output=1)
    assert a.prompt == 10
    assert a.cache_write == 7
    assert a + b == Buckets(11, 2, 3, 4, 6)
    assert a + a == Buckets(2, 4, 6, 8, 10)  # each bucket to its own: the writes not swapped
    assert Buckets() + Buckets() == Buckets()


def test_buckets_store_numpy_ints_as_python_ints():
    """Numpy ints (token counts from arrays) are accepted and kept as plain ints: the Decimal
    arithmetic and the frames take Python ints."""
    import numpy as np

    b = Buckets(uncached=np.int64(5), cache_read=np.int32(7), output=np.uint16(3))
    assert (b.uncached, b.cache_read, b.output) == (5, 7, 3)
    assert {type(b.uncached), type(b.cache_read), type(b.output)} == {int}


def test_buckets_reject_negative_and_non_integers():
    with pytest.raises(ValueError, match="cache_read"):
        Buckets(cache_read=-1)
    with pytest.raises(TypeError):
        Buckets(uncached=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Buckets(output=True)


# -- hand-computed prices -------------------------------------------------------------------------


def test_caching_md_example_claude_sonnet_4_6():
    # caching.md E: 50*3 + 100000*0.3 + 2000*3.75 per MTok in, 500*15 per MTok out.
    b = Buckets(uncached=50, cache_read=100_000, cache_write_5m=2_000, output=500)
    p = Pricer().price(b, model="claude-sonnet-4-6", provider="anthropic", ts=OCT_20)
    assert p.input_usd == D("0.03765")
    assert p.output_usd == D("0.0075")
    assert p.total_usd == D("0.04515")
    assert p.source == f"genai-prices {genai_prices.__version__} snapshot"
    assert p.model_ref == "claude-sonnet-4-6"
    assert p.warning is None
    assert_decimals(p)
    assert amounts(p) == reference(b, "claude-sonnet-4-6", "anthropic", OCT_20)


def test_a_used_pricer_pickles_with_its_overrides_and_prices_the_same():
    """`--workers` sends the run's pricer to each worker process: its memo holds closures,
    which do not pickle, so it goes without it; the overrides go along."""
    import pickle

    b = Buckets(uncached=50, cache_read=100_000, cache_write_5m=2_000, output=500)
    pricer = Pricer({"my-model": RateOverride(input=D("1"), output=D("2"))})
    before = pricer.price(b, model="claude-sonnet-4-6", provider="anthropic", ts=OCT_20)
    copy = pickle.loads(pickle.dumps(pricer))
    assert copy.price(b, model="claude-sonnet-4-6", provider="anthropic", ts=OCT_20) == before
    mine = copy.price(b, model="my-model", provider="anthropic", ts=OCT_20)
    assert mine == pricer.price(b, model="my-model", provider="anthropic", ts=OCT_20)


def test_anthropic_1h_write_is_twice_input_and_5m_write_1_25x():
    pricer = Pricer()
    one_h = pricer.price(
        Buckets(cache_write_1h=1_000_000),
        model="claude-sonnet-4-6",
        provider="anthropic",
        ts=OCT_20,
    )
    five_m = pricer.price(
        Buckets(cache_write_5m=1_000_000),
        model="claude-sonnet-4-6",
        provider="anthropic",
        ts=OCT_20,
    )
    plain = pricer.price(
        Buckets(uncached=1_000_000), model="claude-sonnet-4-6", provider="anthropic", ts=OCT_20
    )
    assert plain.input_usd == D(3)
    assert one_h.input_usd == 2 * plain.input_usd == D(6)
    assert five_m.input_usd == D("1.25") * plain.input_usd == D("3.75")
    mixed = Buckets(uncached=7, cache_read=11, cache_write_5m=13, cache_write_1h=17, output=19)
    p = pricer.price(mixed, model="claude-opus-4-7", provider="anthropic", ts=OCT_20)
    # Opus 4.7: $5 in, $0.5 read, $6.25 5m, $10 1h, $25 out per MTok
    assert p.input_usd == (7 * D(5) + 11 * D("0.5") + 13 * D("6.25") + 17 * D(10)) / 1_000_000
    assert p.output_usd == 19 * D(25) / 1_000_000
    assert amounts(p) == reference(mixed, "claude-opus-4-7", "anthropic", OCT_20)


def test_openai_gpt5_cached_is_part_of_input():
    # OpenAI reports prompt_tokens=100k incl. cached_tokens=90k: our buckets are disjoint.
    b = Buckets(uncached=10_000, cache_read=90_000, output=1_000)
    p = Pricer().price(b, model="gpt-5", provider="openai", ts=OCT_20)
    assert p.input_usd == D("0.0125") + D("0.01125")  # 10k*$1.25 + 90k*$0.125 per MTok
    assert p.output_usd == D("0.01")
    assert p.total_usd == D("0.03375")
    direct = calc_price(
        Usage(input_tokens=100_000, cache_read_tokens=90_000, output_tokens=1_000),
        "gpt-5",
        provider_id="openai",
        genai_request_timestamp=OCT_20,
    )
    assert (p.input_usd, p.output_usd, p.total_usd) == (
        direct.input_price,
        direct.output_price,
        direct.total_price,
    )


def test_openai_pre_5_6_writes_are_plain_input_with_a_warning():
    pricer = Pricer()
    b = Buckets(uncached=1_000, cache_write_5m=4_000)
    p = pricer.price(b, model="gpt-5", provider="openai", ts=OCT_20)
    assert p.input_usd == 5_000 * D("1.25") / 1_000_000
    assert p.warning is not None and "cache-write" in p.warning
    assert amounts(p) == reference(b, "gpt-5", "openai", OCT_20)
    assert pricer.price(Buckets(1_000), model="gpt-5", provider="openai", ts=OCT_20).warning is None


def test_1h_writes_on_a_model_without_any_write_price_are_plain_input_and_say_only_that():
    """gpt-5 has no cache-write price: 1h writes, like 5m ones, are billed as plain input
    ($1.25/MTok), and the warning names that gap only (they are not at a 5m write rate)."""
    pricer = Pricer()
    p = pricer.price(Buckets(cache_write_1h=1_000_000), model="gpt-5", provider="openai",
                     ts=OCT_20)
    assert p.input_usd == D("1.25")
    assert p.warning == (
        f"'gpt-5' (openai) (genai-prices {genai_prices.__version__} snapshot): no cache-write "
        "price, cache writes billed as plain input"
    )
    # Under a price variant genai-prices does not price, the variant's note comes first and the
    # missing rate is still named after it.
    fast = pricer.price(Buckets(cache_write_1h=1_000_000), model="gpt-5", provider="openai",
                        ts=OCT_20, context={"speed": "fast"})
    assert fast.input_usd == D("1.25")
    assert fast.warning == (
        "no speed=fast price for 'gpt-5' (openai), billed at its standard prices; " + p.warning
    )


def test_gpt_5_6_has_write_price():
    b = Buckets(uncached=1_000, cache_read=50_000, cache_write_5m=4_000, output=100)
    p = Pricer().price(b, model="gpt-5.6-terra", provider="openai", ts=OCT_20)
    assert p.warning is None
    assert amounts(p) == reference(b, "gpt-5.6-terra", "openai", OCT_20)


@pytest.mark.parametrize(
    ("model", "provider", "ts", "input_rate", "write_5m", "write_1h"),
    [
        # caching.md l.19 (1h write 2.0), l.62 (Vertex: same as direct, 1h included)
        ("claude-3-7-sonnet", "google", OCT_20, D(3), D("3.75"), D(6)),
        ("claude-opus-4-1", "google", OCT_20, D(15), D("18.75"), D(30)),
        ("claude-opus-4-6", "google", datetime(2026, 3, 1, tzinfo=UTC), D(5), D("6.25"), D(10)),
        # l.63 (OpenRouter: billed at upstream rates)
        ("anthropic/claude-sonnet-4.5", "openrouter", OCT_20, D(3), D("3.75"), D(6)),
        # l.59 (Kimi K3: write 1× (5m) / 2× (1h)); genai-prices has no write rate here at all
        ("moonshotai/kimi-k3", "openrouter", datetime(2026, 11, 10, tzinfo=UTC), D(3), D(3), D(6)),
    ],
)
def test_1h_write_rate_genai_prices_lacks_comes_from_the_rule_files(
    model, provider, ts, input_rate, write_5m, write_1h
):
    pricer = Pricer()
    per_mtok = {}
    for bucket in ("uncached", "cache_write_5m", "cache_write_1h"):
        # 100k tokens: below every long-context tier
        p = pricer.price(Buckets(**{bucket: 100_000}), model=model, provider=provider, ts=ts)
        assert p.warning is None, p.warning
        per_mtok[bucket] = p.input_usd * 10
    expected = {"uncached": input_rate, "cache_write_5m": write_5m, "cache_write_1h": write_1h}
    assert per_mtok == expected
    assert "1h" in p.source and "pricing/cache/" in p.source
    b = Buckets(uncached=7, cache_read=11, cache_write_5m=13, cache_write_1h=17, output=19)
    assert amounts(pricer.price(b, model=model, provider=provider, ts=ts)) == completed_reference(
        pricer, b, model, provider, ts
    )


def test_a_model_genai_prices_gives_no_cache_rate_gets_no_1h_write_rate_from_the_rules():
    """Claude 2 on the Claude API is never cached: genai-prices has no cache rate for it, and
    the 1h write multiplier of pricing/cache/anthropic.json must not price it as if it were.
    Its writes are plain input ($8/MTok), as genai-prices bills them."""
    b = Buckets(uncached=1_000, cache_write_1h=1_000_000)
    p = Pricer().price(b, model="claude-2", provider="anthropic", ts=OCT_20)
    assert p.input_usd == 1_001_000 * D(8) / 1_000_000
    assert p.source == f"genai-prices {genai_prices.__version__} snapshot"
    assert p.warning is not None and "no cache-write price" in p.warning
    assert amounts(p) == reference(b, "claude-2", "anthropic", OCT_20)


def test_1h_write_rate_unknown_to_the_rules_keeps_the_5m_rate_with_a_warning():
    # Before the 1h TTL (2025-05-22) the rule files have no 1h multiplier: genai-prices' fallback.
    ts = datetime(2025, 5, 1, tzinfo=UTC)
    b = Buckets(cache_write_1h=100_000)
    p = Pricer().price(b, model="claude-opus-4-1", provider="google", ts=ts)
    assert p.input_usd == D("1.875")  # 100k × $18.75
    assert p.warning is not None and "1h" in p.warning
    assert amounts(p) == reference(b, "claude-opus-4-1", "google", ts)


# -- tier cliffs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "provider", "ts", "start"),
    [
        ("claude-sonnet-4-5", "anthropic", OCT_20, 200_000),
        ("claude-sonnet-4-6", "anthropic", datetime(2026, 3, 12, 23, 59, tzinfo=UTC), 200_000),
        ("gpt-5.5", "openai", OCT_20, 272_000),
        ("gpt-5.6-terra", "openai", OCT_20, 272_000),
        ("claude-haiku-5-5", "anthropic", OCT_20, 100_000),
        ("gemini-2.5-pro", "google", OCT_20, 200_000),
        ("grok-4.3", "x-ai", OCT_20, 199_999),
    ],
)
def test_tier_cliff_on_total_input_equals_calc_price(model, provider, ts, start):
    pricer = Pricer()
    below = [
        Buckets(uncached=start, output=10),
        Buckets(uncached=start - 60_000, cache_read=50_000, cache_write_5m=10_000, output=10),
    ]
    above = [
        Buckets(uncached=start + 1, output=10),
        Buckets(uncached=start - 59_999, cache_read=50_000, cache_write_5m=10_000, output=10),
        Buckets(uncached=1, cache_read=start, output=10),
    ]
    for b in below + above:
        assert amounts(pricer.price(b, model=model, provider=provider, ts=ts)) == reference(
            b, model, provider, ts
        )
    at = pricer.price(below[0], model=model, provider=provider, ts=ts)
    over = pricer.price(above[0], model=model, provider=provider, ts=ts)
    # a cliff: one more token changes the rate of every token
    assert over.input_usd / (start + 1) > at.input_usd / start
    assert over.output_usd > at.output_usd


def test_two_tier_cliffs_are_priced_on_the_fast_path_at_each_tier_s_rate():
    """genai-prices' qwen/qwen3-coder-flash on OpenRouter (from 2026-10-19) has two input tiers:
    $0.195 up to 32k total input, $0.325 above 32k, $0.52 above 128k (output $0.975 / $1.625 /
    $2.6). Each cliff applies above its own start; the card needs no calc_price fallback."""
    pricer = Pricer()
    model, provider = "qwen/qwen3-coder-flash", "openrouter"
    for tokens, rate in ((32_000, "0.195"), (32_001, "0.325"), (128_000, "0.325"),
                         (128_001, "0.52"), (300_000, "0.52")):
        b = Buckets(uncached=tokens)
        p = pricer.price(b, model=model, provider=provider, ts=OCT_20)
        assert p.input_usd == tokens * D(rate) / 1_000_000, tokens
        assert amounts(p) == reference(b, model, provider, OCT_20)
    b = Buckets(uncached=100_000, cache_read=28_001, output=1_000_000)
    assert pricer.price(b, model=model, provider=provider, ts=OCT_20).output_usd == D("2.6")
    assert pricer._routes[(model, provider, ())].card_at(OCT_20).slow is None


def test_sonnet_4_5_cliff_exact_values():
    pricer = Pricer()
    at = pricer.price(
        Buckets(uncached=200_000), model="claude-sonnet-4-5", provider="anthropic", ts=OCT_20
    )
    over = pricer.price(
        Buckets(uncached=200_001), model="claude-sonnet-4-5", provider="anthropic", ts=OCT_20
    )
    assert at.input_usd == D("0.6")
    assert over.input_usd == D("1.200006")


CLIFF_200K = [
    Buckets(uncached=200_000, output=10),
    Buckets(uncached=140_000, cache_read=50_000, cache_write_5m=6_000, cache_write_1h=4_000),
    Buckets(uncached=200_001, output=10),
    Buckets(uncached=140_001, cache_read=50_000, cache_write_5m=6_000, cache_write_1h=4_000),
    Buckets(uncached=1, cache_read=250_000, cache_write_1h=3, output=1_000),
]


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("claude-sonnet-4-20250514", "anthropic"),
        ("claude-sonnet-4-0", "anthropic"),
        ("claude-sonnet-4@20250514", "google"),
        ("anthropic/claude-sonnet-4", "openrouter"),
        ("global.anthropic.claude-sonnet-4-20250514-v1:0", "aws"),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", "aws"),
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", "aws"),
    ],
)
def test_sonnet_4_bills_its_1m_context_tier_like_sonnet_4_5(model, provider):
    # caching.md l.25: Sonnet 4/4.5 with the 1M beta, total input incl. cache > 200k: the whole
    # request at input ×2, output ×1.5, cache $7.50 / $12 / $0.60 (l.62 Vertex, l.63 OpenRouter:
    # the same). genai-prices has the tier for Sonnet 4.5 only.
    pricer = Pricer()
    ts = datetime(2026, 1, 5, tzinfo=UTC)
    for b in CLIFF_200K:
        p = pricer.price(b, model=model, provider=provider, ts=ts)
        assert amounts(p) == reference(b, "claude-sonnet-4-5", "anthropic", ts), b
    over = pricer.price(Buckets(uncached=250_000, output=10_000), model=model, provider=provider,
                        ts=ts)
    assert (over.input_usd, over.output_usd) == (D("1.5"), D("0.225"))  # 250k × $6, 10k × $22.5
    assert "1M-context tier" in over.source and "price_patches.json" in over.source


@pytest.mark.parametrize(
    ("model", "provider", "direct"),
    [
        ("claude-sonnet-4-6", "google", "claude-sonnet-4-6"),
        ("anthropic/claude-sonnet-4.6", "openrouter", "claude-sonnet-4-6"),
        ("global.anthropic.claude-sonnet-4-6-v1:0", "aws", "claude-sonnet-4-6"),
        ("anthropic/claude-opus-4.6", "openrouter", "claude-opus-4-6"),
        ("global.anthropic.claude-opus-4-6-v1:0", "aws", "claude-opus-4-6"),
    ],
)
def test_4_6_models_elsewhere_are_tiered_like_the_direct_api_until_2026_03_13(
    model, provider, direct
):
    # caching.md l.25 (1M flat since 2026-03-13), l.91 (direct API tiered before), l.62/l.63.
    pricer = Pricer()
    for ts in (
        datetime(2026, 3, 12, 23, 59, tzinfo=UTC),
        datetime(2026, 3, 13, 0, 1, tzinfo=UTC),
        datetime(2026, 3, 13, 1, tzinfo=timezone(timedelta(hours=5))),  # 03-12 20:00 UTC
    ):
        for b in CLIFF_200K:
            p = pricer.price(b, model=model, provider=provider, ts=ts)
            assert amounts(p) == reference(b, direct, "anthropic", ts), (ts, b)
    before = pricer.price(
        Buckets(uncached=300_000), model=model, provider=provider, ts=datetime(2026, 3, 1)
    )
    # 300k × $6 (Sonnet) or $10 (Opus); genai-prices alone: $0.9 or $1.5
    assert before.input_usd == (D("1.8") if "sonnet" in model else D(3))


@pytest.mark.parametrize(
    ("regional", "global_", "ts"),
    [
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0",
         "global.anthropic.claude-sonnet-4-5-20250929-v1:0", datetime(2026, 1, 5, tzinfo=UTC)),
        ("eu.anthropic.claude-sonnet-4-6", "global.anthropic.claude-sonnet-4-6-v1:0",
         datetime(2026, 3, 1, tzinfo=UTC)),
        ("us.anthropic.claude-opus-4-6-v1:0", "global.anthropic.claude-opus-4-6-v1:0",
         datetime(2026, 3, 1, tzinfo=UTC)),
    ],
)
def test_bedrock_regional_endpoints_keep_their_premium_on_the_long_context_tier(
    regional, global_, ts
):
    # genai-prices prices these regional ids at 1.1 × the global ones; the tier keeps it.
    pricer = Pricer()
    for b in CLIFF_200K:
        here = pricer.price(b, model=regional, provider="aws", ts=ts)
        there = pricer.price(b, model=global_, provider="aws", ts=ts)
        assert here.total_usd == there.total_usd * D("1.1"), b


@pytest.mark.parametrize(
    ("model", "before_ts", "over", "input_usd", "output_usd"),
    [
        # 300k × $2.50; genai-prices alone: $0.375
        ("google/gemini-2.5-pro", datetime(2026, 2, 1, tzinfo=UTC),
         Buckets(uncached=300_000), "0.75", "0"),
        # 150k × $4 + 100k × $0.40 and 1k × $18 (Google's > 200k rates); genai-prices alone:
        # $0.32 and $0.012
        ("google/gemini-3.1-pro-preview", datetime(2026, 9, 1, tzinfo=UTC),
         Buckets(uncached=150_000, cache_read=100_000, output=1_000), "0.64", "0.018"),
    ],
)
def test_gemini_pro_on_openrouter_is_tiered_before_2026_10_19_too(
    model, before_ts, over, input_usd, output_usd
):
    # caching.md §C (l.52): 2.5 Pro and 3.1 Pro Preview bill the whole request at the higher
    # rates above 200k, cached tokens included; §D OpenRouter (R1): billed at upstream rates.
    # genai-prices' OpenRouter rows are flat before 2026-10-19, Google's tiers from then on.
    pricer = Pricer()
    for b in CLIFF_200K:
        b = Buckets(uncached=b.uncached, cache_read=b.cache_read, output=b.output)
        before = pricer.price(b, model=model, provider="openrouter", ts=before_ts)
        assert amounts(before) == reference(b, model, "openrouter", OCT_20), b
    price = pricer.price(over, model=model, provider="openrouter", ts=before_ts)
    assert (price.input_usd, price.output_usd) == (D(input_usd), D(output_usd))


def test_o3_cache_reads_cost_a_quarter_of_input_before_the_2025_06_10_price_cut_too():
    # caching.md l.39: o3 reads 75% off. genai-prices: $0.50 on $10 input before 2025-06-10.
    pricer = Pricer()
    b = Buckets(uncached=100_000, cache_read=1_000_000)
    before = pricer.price(b, model="o3-2025-04-16", provider="openai", ts=datetime(2025, 6, 9, 23))
    after = pricer.price(b, model="o3-2025-04-16", provider="openai", ts=datetime(2025, 6, 10, 1))
    assert before.input_usd == D(1) + D("2.5")  # 100k × $10 + 1M × $2.50
    assert after.input_usd == D("0.2") + D("0.5")  # 100k × $2 + 1M × $0.50 (genai-prices')
    assert "o3 cached input" in before.source and "o3 cached input" not in after.source
    assert amounts(after) == reference(b, "o3", "openai", datetime(2025, 6, 10, 1))


def test_sonnet_4_6_long_context_turns_flat_on_2026_03_13():
    pricer = Pricer()
    b = Buckets(uncached=300_000)
    before = pricer.price(
        b,
        model="claude-sonnet-4-6",
        provider="anthropic",
        ts=datetime(2026, 3, 12, 23, 59, 59, tzinfo=UTC),
    )
    after = pricer.price(
        b,
        model="claude-sonnet-4-6",
        provider="anthropic",
        ts=datetime(2026, 3, 13, 0, 0, 1, tzinfo=UTC),
    )
    assert before.input_usd == D("1.8")  # 300k * $6 (tier)
    assert after.input_usd == D("0.9")  # 300k * $3 (flat 1M)
    # UTC date decides: 2026-03-12 20:00 in New York is already 03-13 in UTC
    ny = timezone(timedelta(hours=-4))
    late = pricer.price(
        b,
        model="claude-sonnet-4-6",
        provider="anthropic",
        ts=datetime(2026, 3, 12, 20, 30, tzinfo=ny),
    )
    assert late.input_usd == D("0.9")


def test_deepseek_time_of_day_prices():
    pricer = Pricer()
    b = Buckets(uncached=1_000_000, cache_read=1_000_000, output=1_000_000)
    peak = datetime(2026, 10, 20, 2, 0, tzinfo=UTC)
    off = datetime(2026, 10, 20, 12, 0, tzinfo=UTC)
    p_peak = pricer.price(b, model="deepseek-v4-pro", provider="deepseek", ts=peak)
    p_off = pricer.price(b, model="deepseek-v4-pro", provider="deepseek", ts=off)
    assert p_peak.total_usd == 2 * p_off.total_usd
    assert amounts(p_peak) == reference(b, "deepseek-v4-pro", "deepseek", peak)
    assert amounts(p_off) == reference(b, "deepseek-v4-pro", "deepseek", off)
    # and back again after the peak window, from the memo
    later = pricer.price(b, model="deepseek-v4-pro", provider="deepseek", ts=peak + timedelta(1))
    assert later.total_usd == p_peak.total_usd


@pytest.mark.parametrize("model", ["deepseek-v4-pro", "deepseek-flash", "deepseek-v4-flash"])
def test_deepseek_peak_prices_apply_monday_to_friday_only(model):
    # caching.md l.57: peak hours 01-04 and 06-10 UTC Mon-Fri = 2x off-peak.
    pricer = Pricer()
    b = Buckets(uncached=1_000_000, cache_read=1_000_000, output=1_000_000)
    friday_peak = pricer.price(b, model=model, provider="deepseek", ts=datetime(2026, 10, 23, 2))
    off = pricer.price(b, model=model, provider="deepseek", ts=datetime(2026, 10, 23, 12))
    assert friday_peak.total_usd == 2 * off.total_usd
    for weekend_peak in (
        datetime(2026, 10, 24, 2, tzinfo=UTC),  # Saturday 02:00 UTC
        datetime(2026, 10, 25, 7, tzinfo=UTC),  # Sunday 07:00 UTC
        datetime(2026, 10, 23, 19, tzinfo=timezone(timedelta(hours=-7))),  # Fri here, Sat UTC
    ):
        p = pricer.price(b, model=model, provider="deepseek", ts=weekend_peak)
        assert amounts(p) == amounts(off), weekend_peak
        assert " + off-peak price all day on Sat/Sun (pricing/price_patches.json)" in p.source
    # Monday 01:30 UTC (Sunday evening in California) is a peak hour again
    monday = datetime(2026, 10, 25, 18, 30, tzinfo=timezone(timedelta(hours=-7)))
    assert pricer.price(b, model=model, provider="deepseek", ts=monday).total_usd == (
        friday_peak.total_usd
    )


@pytest.mark.parametrize(
    ("model", "day"),
    [("deepseek-v4-pro", datetime(2026, 5, 4)), ("deepseek-v4-flash", datetime(2026, 5, 4)),
     ("deepseek-v4-flash", datetime(2026, 8, 20)), ("deepseek-v4-pro", datetime(2026, 10, 20))],
)
def test_a_deepseek_peak_hour_costs_twice_that_day_s_off_peak_price(model, day):
    # caching.md l.57: peak = 2x off-peak. genai-prices' peak rows have no start date: they are
    # 2x the latest off-peak price, so 2026-05-04 02:00 UTC on v4-pro cost 3.03x the off-peak
    # input of that day ($1.32 against $0.435).
    pricer = Pricer()
    b = Buckets(uncached=1_000_000, cache_read=1_000_000, output=1_000_000)
    peak = pricer.price(b, model=model, provider="deepseek", ts=day.replace(hour=2, tzinfo=UTC))
    off = pricer.price(b, model=model, provider="deepseek", ts=day.replace(hour=12, tzinfo=UTC))
    assert (peak.input_usd, peak.output_usd) == (2 * off.input_usd, 2 * off.output_usd)
    again = pricer.price(b, model=model, provider="deepseek", ts=day.replace(hour=7, tzinfo=UTC))
    assert amounts(again) == amounts(peak)  # the second peak window, from the memo


_SNAPSHOT = f"genai-prices {genai_prices.__version__} snapshot"


@pytest.mark.parametrize(
    ("ts", "input_usd", "source"),
    [
        (datetime(2026, 10, 20, 2, tzinfo=UTC), D("1.32"), _SNAPSHOT),
        (datetime(2026, 5, 4, 2, tzinfo=UTC), D("0.87"),
         f"{_SNAPSHOT} + peak price = 2 × that day's off-peak (pricing/price_patches.json)"),
        (datetime(2026, 10, 24, 12, tzinfo=UTC), D("0.66"), _SNAPSHOT),
        (datetime(2026, 10, 24, 2, tzinfo=UTC), D("0.66"),
         f"{_SNAPSHOT} + off-peak price all day on Sat/Sun (pricing/price_patches.json)"),
    ],
    ids=["latest-weekday-peak", "earlier-weekday-peak", "saturday-noon", "saturday-peak-hour"],
)
def test_a_deepseek_v4_pro_price_says_replay_changed_it_only_where_it_did(
    ts, input_usd, source
):
    """pricing/price_patches.json: genai-prices' v4-pro peak rows are 2x its latest off-peak
    price ($1.32 = 2 x $0.66 input, from 2026-08-17): there replay changes nothing and says
    nothing; on 2026-05-04 the peak is 2x that day's $0.435 = $0.87, which replay sets. On a
    Saturday (UTC) replay changes only the peak hours (to the off-peak price); at an off-peak
    hour genai-prices' price is the off-peak one already: nothing to name."""
    price = Pricer().price(Buckets(uncached=1_000_000), model="deepseek-v4-pro",
                           provider="deepseek", ts=ts)
    assert (price.input_usd, price.source) == (input_usd, source)


def test_a_deepseek_off_peak_hour_under_a_price_context_stays_off_peak():
    """A request billed under a price context (here one DeepSeek does not price) gets
    genai-prices' variant copy, not its off-peak row object: the peak factor was applied at an
    off-peak hour of a weekday (2.64 became 5.28)."""
    pricer = Pricer()
    b = Buckets(uncached=1_000_000, output=1_000_000)
    for hour in (2, 12):
        ts = datetime(2026, 10, 20, hour, tzinfo=UTC)
        plain = pricer.price(b, model="deepseek-v4-pro", provider="deepseek", ts=ts)
        fast = pricer.price(b, model="deepseek-v4-pro", provider="deepseek", ts=ts,
                            context={"speed": "fast"})
        assert fast.total_usd == plain.total_usd, hour


@pytest.mark.parametrize(
    ("ts", "input_usd", "says"),
    [
        # replay's peak rule: 2 × that day's off-peak ($0.435), not genai-prices' $1.32
        (datetime(2026, 5, 4, 2, tzinfo=UTC), D("0.87"), "peak price = 2 × that day's"),
        # a Saturday's off-peak hour: genai-prices' own price, nothing replay changed to name
        (datetime(2026, 10, 24, 12, tzinfo=UTC), D("0.66"), None),
        (datetime(2026, 10, 24, 2, tzinfo=UTC), D("0.66"), "off-peak price all day on Sat/Sun"),
    ],
)
def test_a_price_context_deepseek_does_not_price_keeps_the_peak_rule(ts, input_usd, says):
    """Under a price context no DeepSeek variant prices, genai-prices returns a copy of the
    standard row, which the peak rule (telling rows by identity) did not know: a weekday peak
    hour was billed at genai-prices' $1.32, and a weekend off-peak hour named a change."""
    pricer = Pricer()
    b = Buckets(uncached=1_000_000)
    plain = pricer.price(b, model="deepseek-v4-pro", provider="deepseek", ts=ts)
    fast = pricer.price(b, model="deepseek-v4-pro", provider="deepseek", ts=ts,
                        context={"speed": "fast"})
    assert fast.input_usd == plain.input_usd == input_usd
    assert fast.source == plain.source
    assert (says in fast.source) if says else fast.source.endswith(" snapshot")


def test_deepseek_chat_2025_off_peak_window_is_not_restricted_to_weekdays():
    # Its window is genai-prices' 2025 data; the Mon-Fri rule is for the late-2026 models.
    b = Buckets(uncached=1_000_000)
    saturday = datetime(2025, 6, 7, 10, tzinfo=UTC)
    p = Pricer().price(b, model="deepseek-chat", provider="deepseek", ts=saturday)
    assert amounts(p) == reference(b, "deepseek-chat", "deepseek", saturday)
    assert p.input_usd == D("0.27")


def _genai_models(provider: str) -> dict[str, gp_types.ModelInfo]:
    (entry,) = [p for p in data_snapshot.get_snapshot().providers if p.id == provider]
    return {m.id: m for m in entry.models}


def test_price_patch_rows_name_their_source_and_real_genai_prices_models():
    patches = price_patches()
    assert patches.reviewed <= date.today()
    for row in patches.peak_days:
        assert re.search(r"https?://", row.source), row
        models = _genai_models(row.provider)
        for model in row.models:
            prices = models[model].prices  # a typo would silently patch nothing
            assert any(
                isinstance(cp.constraint, gp_types.TimeOfDateConstraint) for cp in prices
            ), model


def test_price_rows_name_their_source_and_patch_real_genai_prices_models():
    rows = price_patches().prices
    assert rows
    for row in rows:
        assert re.search(r"https?://", row.source), row
        assert row.what.strip()
        models = _genai_models(row.provider)
        assert set(row.models) <= set(models), row.models  # a typo would patch nothing
        if row.since and row.until:
            assert row.since < row.until


def test_a_price_variant_is_priced_like_calc_price_with_its_price_context():
    b = Buckets(uncached=1000, cache_read=50_000, cache_write_5m=2000, output=800)
    pricer = Pricer()
    fast = {"speed": "fast"}
    got = pricer.price(b, model="claude-opus-4-8", provider="anthropic", ts=OCT_20, context=fast)
    r = calc_price(
        usage_of(b),
        "claude-opus-4-8",
        provider_id="anthropic",
        genai_request_timestamp=OCT_20,
        price_context=fast,
    )
    assert (got.input_usd, got.output_usd, got.total_usd) == (
        r.input_price,
        r.output_price,
        r.total_price,
    )
    standard = pricer.price(b, model="claude-opus-4-8", provider="anthropic", ts=OCT_20)
    assert got.total_usd > standard.total_usd and "speed=fast" in got.source
    assert got.warning is None
    # A variant genai-prices has no prices for: the standard ones, and a warning that says so.
    sonnet = {"model": "claude-sonnet-4-5", "provider": "anthropic", "ts": OCT_20}
    other, plain = pricer.price(b, **sonnet, context=fast), pricer.price(b, **sonnet)
    assert other.total_usd == plain.total_usd
    assert other.warning is not None and "no speed=fast price" in other.warning


def test_an_override_under_a_price_variant_says_its_rates_are_used_as_given():
    """`--price` on a fast-mode request: the override's rates, with a warning (the variant's
    multiplier was dropped without a word, and the bill note then showed no gap)."""
    b = Buckets(uncached=1000, cache_read=50_000, cache_write_5m=2000, output=800)
    rate = RateOverride(input=D(5), output=D(25), cache_read=D("0.5"), cache_write=D("6.25"))
    pricer = Pricer({"claude-opus-4-8": rate})
    args = {"model": "claude-opus-4-8", "provider": "anthropic", "ts": OCT_20}
    fast, plain = pricer.price(b, **args, context={"speed": "fast"}), pricer.price(b, **args)
    assert fast.total_usd == plain.total_usd and plain.warning is None
    assert fast.warning == (
        "no speed=fast price in --price claude-opus-4-8, billed at its rates as given (the log "
        "says the request was billed under speed=fast: give the rates of that variant to price "
        "it so)"
    )


ALL_BUCKETS = Buckets(
    uncached=1000, cache_read=50_000, cache_write_5m=2000, cache_write_1h=3000, output=800
)


@pytest.mark.parametrize(
    ("model", "ts", "buckets"),
    [
        ("claude-sonnet-4-6", OCT_20, ALL_BUCKETS),
        # Before 2026-03-13 Sonnet 4.6 was tiered above 200k: the tier rates are ×1.1 too.
        ("claude-sonnet-4-6", datetime(2026, 3, 1, tzinfo=UTC), ALL_BUCKETS + Buckets(250_000)),
        ("claude-opus-4-6", OCT_20, ALL_BUCKETS),
        ("claude-haiku-5-5", OCT_20, ALL_BUCKETS),
    ],
)
def test_inference_geo_us_costs_exactly_1_1_times_on_claude_4_6_and_later(model, ts, buckets):
    """caching.md l.19: `inference_geo: "us"` multiplies every price by 1.1 on Claude 4.6+
    (pricing/price_patches.json `multipliers`); it was billed at the standard prices."""
    pricer = Pricer()
    standard = pricer.price(buckets, model=model, provider="anthropic", ts=ts)
    us = pricer.price(
        buckets, model=model, provider="anthropic", ts=ts, context={"inference_geo": "us"}
    )
    assert_decimals(us)
    assert us.input_usd == standard.input_usd * D("1.1")
    assert us.output_usd == standard.output_usd * D("1.1")
    assert us.total_usd == standard.total_usd * D("1.1")
    assert us.warning is None
    assert "US-only inference" in us.source and "price_patches.json" in us.source
    assert "US-only" not in standard.source


def test_inference_geo_us_on_an_older_claude_is_standard_with_a_note():
    pricer = Pricer()
    sonnet = {"model": "claude-sonnet-4-5", "provider": "anthropic", "ts": OCT_20}
    plain = pricer.price(ALL_BUCKETS, **sonnet)
    us = pricer.price(ALL_BUCKETS, **sonnet, context={"inference_geo": "us"})
    assert amounts(us) == amounts(plain)
    assert us.warning is not None
    assert us.warning.startswith(
        "no inference_geo=us price for 'claude-sonnet-4-5' (anthropic), billed at its standard "
        "prices"
    )
    assert "Claude 4.6+" in us.warning  # why: the rule's own words
    # A region no rule knows is billed at the standard prices too, and says so.
    eu = pricer.price(
        ALL_BUCKETS, model="claude-sonnet-4-6", provider="anthropic", ts=OCT_20,
        context={"inference_geo": "eu"},
    )
    standard = pricer.price(ALL_BUCKETS, model="claude-sonnet-4-6", provider="anthropic", ts=OCT_20)
    assert amounts(eu) == amounts(standard)
    assert eu.warning is not None and "no inference_geo=eu price" in eu.warning


def test_a_price_context_prices_and_notes_the_same_whatever_the_order_of_its_entries():
    """A price context is a set of entries (sorted pairs, `PriceContext`): the order a log
    happens to give them in changes neither the price nor its note."""
    pricer = Pricer()
    sonnet = {"model": "claude-sonnet-4-6", "provider": "anthropic", "ts": OCT_20}
    one = pricer.price(ALL_BUCKETS, **sonnet, context={"speed": "fast", "inference_geo": "eu"})
    two = pricer.price(ALL_BUCKETS, **sonnet, context={"inference_geo": "eu", "speed": "fast"})
    assert one == two
    assert one.warning == (
        "no inference_geo=eu, speed=fast price for 'claude-sonnet-4-6' (anthropic), billed at "
        "its standard prices (US-only inference (inference_geo us) × 1.1 on Claude 4.6+, "
        "pricing/price_patches.json)"
    )


def test_price_rows_apply_to_the_models_of_their_own_provider_only():
    """A row of pricing/price_patches.json names a provider: the Vertex Sonnet 4.6 tier before
    2026-03-13 is not another provider's price for its own `claude-sonnet-4-6` (genai-prices:
    quicksilverpro $2.40 flat), and US-only inference × 1.1 is the Claude API's, not Vertex's
    (the multiplier row's note: "Direct API only")."""
    pricer = Pricer()
    b = Buckets(uncached=300_000)
    march = datetime(2026, 3, 1, tzinfo=UTC)
    other = pricer.price(b, model="claude-sonnet-4-6", provider="quicksilverpro", ts=march)
    assert other.input_usd == D("0.72")  # 300k × $2.40
    assert amounts(other) == reference(b, "claude-sonnet-4-6", "quicksilverpro", march)
    vertex = {"model": "claude-sonnet-4-6", "provider": "google", "ts": OCT_20}
    us = pricer.price(ALL_BUCKETS, **vertex, context={"inference_geo": "us"})
    assert amounts(us) == amounts(pricer.price(ALL_BUCKETS, **vertex))
    assert us.warning is not None and us.warning.startswith(
        "no inference_geo=us price for 'claude-sonnet-4-6' (google), billed at its standard"
    )


def test_fast_mode_and_inference_geo_us_stack():
    """Fast mode has its own base (genai-prices' `speed: fast` variant); US-only inference
    multiplies it by 1.1."""
    pricer = Pricer()
    opus = {"model": "claude-opus-4-8", "provider": "anthropic", "ts": OCT_20}
    fast = pricer.price(ALL_BUCKETS, **opus, context={"speed": "fast"})
    both = pricer.price(ALL_BUCKETS, **opus, context={"speed": "fast", "inference_geo": "us"})
    assert fast.total_usd > pricer.price(ALL_BUCKETS, **opus).total_usd
    assert both.input_usd == fast.input_usd * D("1.1")
    assert both.output_usd == fast.output_usd * D("1.1")
    assert both.total_usd == fast.total_usd * D("1.1")
    assert both.warning is None
    # genai-prices priced the fast part, replay's multiplier row the US part: each says so.
    assert both.source == (
        f"genai-prices {genai_prices.__version__} snapshot (speed=fast prices) + US-only "
        "inference (inference_geo us) × 1.1 on Claude 4.6+ (pricing/price_patches.json)"
    )
    # A model without fast prices: the fast part noted, the US part still applied.
    sonnet = {"model": "claude-sonnet-4-6", "provider": "anthropic", "ts": OCT_20}
    us = pricer.price(ALL_BUCKETS, **sonnet, context={"inference_geo": "us"})
    fast_us = pricer.price(ALL_BUCKETS, **sonnet, context={"speed": "fast", "inference_geo": "us"})
    assert amounts(fast_us) == amounts(us)
    assert fast_us.warning == (
        "no speed=fast price for 'claude-sonnet-4-6' (anthropic), billed at its "
        "inference_geo=us prices"
    )


def test_price_multiplier_rows_name_their_source_and_real_genai_prices_models():
    rows = price_patches().multipliers
    assert rows
    for row in rows:
        assert re.search(r"https?://", row.source), row
        assert row.what.strip() and row.when
        models = _genai_models(row.provider)
        assert set(row.models) <= set(models), row.models  # a typo would multiply nothing


def test_naive_timestamp_is_utc():
    b = Buckets(uncached=300_000)
    pricer = Pricer()
    naive = pricer.price(
        b, model="claude-sonnet-4-6", provider="anthropic", ts=datetime(2026, 3, 12, 23, 0)
    )
    assert naive.input_usd == D("1.8")


# -- errors: never a silent zero ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("no-such-model-9", "anthropic"),
        ("gemma-3", "google"),  # known to genai-prices but without any price: it would say $0
        # a name only loosely like genai-prices' ids (0.69 like 'claude-opus-5'): no guess
        ("claude-custom", "anthropic"),
    ],
)
def test_unknown_or_unpriced_model_raises_with_price_hint(model, provider):
    with pytest.raises(ReplayError, match="--price") as info:
        Pricer().price(Buckets(uncached=10, output=1), model=model, provider=provider, ts=OCT_20)
    message = str(info.value)
    assert "\n" not in message
    assert model in message
    assert "USD per million tokens" in message
    assert "did you mean" not in message


@pytest.mark.parametrize(
    ("model", "provider", "hint"),
    [
        # `--model gpt-5` on a Gemini log: --price was suggested, not --provider
        ("gpt-5", "google", "genai-prices has it from 'openai': pass --provider openai"),
        ("claude-sonnet-4-6", "no-such-provider", "pass --provider anthropic"),
        ("claude-sonet-4-5", "anthropic", "did you mean 'claude-sonnet-4-5'"),
        # Bedrock lists Claude by its own ids: the one at the provider asked for comes first
        ("claude-sonnet-4-5", "aws", "genai-prices lists it at 'aws' as "
         "'global.anthropic.claude-sonnet-4-5-20250929-v1:0' or "
         "'regional.anthropic.claude-sonnet-4-5-20250929-v1:0': pass --model "
         "global.anthropic.claude-sonnet-4-5-20250929-v1:0 (or --provider anthropic)"),
    ],
)
def test_a_model_of_another_provider_or_a_typo_gets_the_hint_that_fixes_it(model, provider,
                                                                           hint):
    with pytest.raises(ReplayError) as info:
        Pricer().price(Buckets(uncached=10, output=1), model=model, provider=provider, ts=OCT_20)
    assert hint in str(info.value) and "\n" not in str(info.value)


def test_output_without_output_price_raises_but_input_only_is_fine():
    pricer = Pricer()
    ok = pricer.price(
        Buckets(uncached=1_000_000), model="text-embedding-3-small", provider="openai", ts=OCT_20
    )
    assert ok.total_usd == D("0.02")
    with pytest.raises(ReplayError, match="output-token price.*--price"):
        pricer.price(
            Buckets(uncached=10, output=5),
            model="text-embedding-3-small",
            provider="openai",
            ts=OCT_20,
        )


# -- overrides ------------------------------------------------------------------------------------


def test_parse_price_override_full_and_minimal():
    model, rate = parse_price_override(
        "my-model=input:3,output:15,cache_read:0.3,cache_write:3.75,cache_write_1h:6"
    )
    assert model == "my-model"
    assert rate == RateOverride(D(3), D(15), D("0.3"), D("3.75"), D(6))
    for value in (rate.input, rate.output, rate.cache_read, rate.cache_write, rate.cache_write_1h):
        assert type(value) is Decimal
    model, rate = parse_price_override(" vendor/x-1 = output: $2 , input:0.5 ")
    assert model == "vendor/x-1"
    assert rate == RateOverride(input=D("0.5"), output=D(2))
    assert rate.cache_read is rate.cache_write is rate.cache_write_1h is None


def test_a_model_priced_twice_is_refused(invoke):
    from replay.prices import parse_price_overrides

    one, two = "m=input:1,output:2", "m=input:3,output:4"
    assert parse_price_overrides([one, "n=input:1,output:2"]).keys() == {"m", "n"}
    with pytest.raises(ReplayError, match=re.escape(f"--price {two!r}: model 'm' is given a "
                                                    "price twice")):
        parse_price_overrides([one, two])
    from conftest import RUN42

    result = invoke("run", RUN42, "-s", "baseline", "--price", one,
                    "--price", two)
    assert result.exit_code == 2 and result.stderr.startswith("error: --price ")


def test_a_model_priced_twice_in_another_case_is_refused():
    """Overrides match model names case-insensitively, so `Claude-X` and `claude-x` are one
    model: two prices for it are refused, from the CLI's texts and from the API's mapping
    (until 2026-12-06 the later one won silently)."""
    from replay.prices import parse_price_overrides

    one, two = "Claude-X=input:1,output:1", "claude-x=input:9,output:9"
    with pytest.raises(ReplayError, match=re.escape(f"--price {two!r}: model 'claude-x' is "
                                                    "given a price twice (as 'Claude-X')")):
        parse_price_overrides([one, two])
    with pytest.raises(ReplayError, match=re.escape(f"--price {one!r}: model 'Claude-X' is "
                                                    "given a price twice (as 'claude-x')")):
        parse_price_overrides([two, one])
    rate = RateOverride(input=D(1), output=D(1))
    for names in (("Claude-X", "claude-x"), ("claude-*", " Claude-* ")):
        with pytest.raises(ReplayError, match="has a price already"):
            Pricer(dict.fromkeys(names, rate))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "model-only",
        "=input:1,output:2",
        "m=",
        "m=input:1",
        "m=output:1",
        "m=input:1,output:two",
        "m=input:1,output:-2",
        "m=input:1,output:nan",
        "m=input:1,output:inf",
        "m=input:1e400,output:2",  # past any price, and past Decimal's range in sums
        "m=input:1,output:" + "9" * 35,
        "m=input:1,output:2,input:3",
        "m=input:1,output:2,cache:3",
        "m=input 1,output:2",
        "m=input:1,output:2,cache_write_1h:6",
        "m=input:1,,output:2",
    ],
)
def test_parse_price_override_malformed(text):
    with pytest.raises(ReplayError, match="--price") as info:
        parse_price_override(text)
    assert PRICE_FORMAT in str(info.value)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("model-only", "missing '=' between the model and its rates"),
        ("=input:1,output:2", "missing model name before '='"),
        ("m= ", "missing rates after '='"),
        ("m=input 1,output:2", "rate 'input 1' is not KEY:NUMBER"),
        ("m=input:1,cache:3",
         "unknown rate 'cache' (known: input, output, cache_read, cache_write, cache_write_1h)"),
    ],
)
def test_a_malformed_price_override_says_what_is_wrong(text, why):
    with pytest.raises(ReplayError, match=re.escape(f"--price {text!r}: {why}; expected")):
        parse_price_override(text)


def test_parse_price_override_takes_rates_from_0_to_a_million_and_keys_in_any_case():
    """A rate is "a number from 0 to 1,000,000 (USD per MTok)", both ends included: a local model
    is free, and a rate key is a word of PRICE_FORMAT whatever its case."""
    _, free = parse_price_override("local-llm=input:0,output:0,cache_read:0")
    assert free == RateOverride(D(0), D(0), cache_read=D(0))
    p = Pricer({"local-llm": free}).price(
        Buckets(uncached=1_000, cache_read=1_000, output=1_000), model="local-llm",
        provider="unknown", ts=OCT_20,
    )
    assert amounts(p) == (D(0), D(0), D(0)) and p.warning is None
    _, top = parse_price_override("m=input:1000000,output:$1000000")
    assert (top.input, top.output) == (D(1_000_000), D(1_000_000))
    for text in ("m=input:1000000.01,output:1", "m=input:1,output:1000001"):
        with pytest.raises(ReplayError, match="must be a number from 0 to 1,000,000"):
            parse_price_override(text)
    _, rate = parse_price_override("m=Input:1,OUTPUT:2,Cache_Read:0.5")
    assert rate == RateOverride(D(1), D(2), cache_read=D("0.5"))


def test_override_wins_over_genai_prices_and_ignores_provider():
    _, rate = parse_price_override("claude-sonnet-4-6=input:1,output:2,cache_read:0.5")
    pricer = Pricer({"Claude-Sonnet-4-6": rate})
    b = Buckets(uncached=1_000_000, cache_read=2_000_000, output=1_000_000)
    p = pricer.price(b, model="claude-sonnet-4-6", provider="anthropic", ts=OCT_20)
    assert (p.input_usd, p.output_usd, p.total_usd) == (D(2), D(2), D(4))
    assert p.source == "override"
    assert p.model_ref == "claude-sonnet-4-6"
    assert p.warning is None
    q = pricer.price(b, model="claude-sonnet-4-6", provider="whatever", ts=OCT_20)
    assert amounts(q) == amounts(p)


def test_override_for_unknown_model_missing_cache_rates_fall_back_with_warning():
    pricer = Pricer(dict([parse_price_override("local-llm*=input:1,output:2,cache_write:1.5")]))
    assert pricer.has_override("LOCAL-LLM-7b")
    assert not pricer.has_override("other")
    b = Buckets(uncached=1_000_000, cache_read=1_000_000, cache_write_1h=1_000_000)
    p = pricer.price(b, model="local-llm-7b", provider="unknown", ts=OCT_20)
    # reads at input ($1), 1h writes at the 5m write rate ($1.5)
    assert p.input_usd == D("3.5")
    assert p.warning is not None and "cache-read" in p.warning and "1h" in p.warning


def test_an_override_without_cache_rates_warns_only_for_the_buckets_it_bills_otherwise():
    """A missing cache rate is a warning when its bucket is non-zero (`Price.warning`: "a
    non-zero bucket had no rate of its own"); a request that reads nothing has no gap."""
    pricer = Pricer({"local-llm": RateOverride(input=D(1), output=D(2))})
    args = {"model": "local-llm", "provider": "unknown", "ts": OCT_20}
    plain = pricer.price(Buckets(uncached=1_000_000, output=1_000_000), **args)
    assert amounts(plain) == (D(1), D(2), D(3)) and plain.warning is None
    read = pricer.price(Buckets(uncached=1_000_000, cache_read=1_000_000), **args)
    assert read.input_usd == D(2)
    assert read.warning == (
        "'local-llm' (override): no cache-read price, cache reads billed at the input rate"
    )
    written = pricer.price(Buckets(uncached=1_000_000, cache_write_5m=1_000_000), **args)
    assert written.warning == (  # no word of the reads it has no rate for but made none
        "'local-llm' (override): no cache-write price, cache writes billed as plain input"
    )


def test_overrides_match_names_as_shell_wildcards_and_report_those_that_priced_nothing():
    """`--price` names are matched case-insensitively, as exact names or shell wildcards (`*`,
    `?`, `[...]`); `unused_overrides` names every one, exact or wildcard, that no model of the
    replay uses."""
    rate = RateOverride(input=D(1), output=D(2))
    pricer = Pricer({"Exact-Model": rate, "claude-[ab]": rate, "gpt-?": rate, "vendor/*": rate,
                     "unused-exact": rate, "unused-*": rate})
    for model in ("exact-model", " EXACT-MODEL ", "claude-a", "Claude-B", "gpt-5", "vendor/x"):
        assert pricer.override_for(model) is rate, model
    for model in ("claude-c", "claude-ab", "gpt-55", "exact-model-2"):
        assert pricer.override_for(model) is None, model
    models = ["Exact-Model", "claude-a", "gpt-5", "vendor/x"]
    assert sorted(pricer.unused_overrides(models)) == ["unused-*", "unused-exact"]


def test_an_override_another_one_shadows_for_every_model_priced_nothing():
    """An exact name wins over a wildcard, and the first of two matching wildcards wins: the
    other one matches a model but applies to none (`shadowed_overrides`), so its rates priced
    nothing, which the user is told as for a name that matches nothing."""
    cheap, dear = RateOverride(input=D(1), output=D(2)), RateOverride(input=D(3), output=D(4))
    pricer = Pricer({"claude*": cheap, "claude-sonnet-4-6": dear})
    assert pricer.override_for("claude-sonnet-4-6") is dear
    assert pricer.unused_overrides(["claude-sonnet-4-6"]) == []
    assert pricer.shadowed_overrides(["claude-sonnet-4-6"]) == {"claude*": ["claude-sonnet-4-6"]}
    assert pricer.shadowed_overrides(["claude-sonnet-4-6", "claude-opus-4-5"]) == {}
    pricer = Pricer({"claude-*": cheap, "claude-sonnet-*": dear})
    assert pricer.override_for("claude-sonnet-4-6") is cheap
    assert pricer.shadowed_overrides(["claude-sonnet-4-6"]) == {"claude-sonnet-*": ["claude-*"]}
    # named once, however many models it priced instead
    assert pricer.shadowed_overrides(["claude-sonnet-4-6", "claude-sonnet-4-5"]) == {
        "claude-sonnet-*": ["claude-*"]
    }
    assert pricer.shadowed_overrides(["gpt-5"]) == {}


def test_rate_override_validates():
    with pytest.raises(ReplayError):
        RateOverride(D(-1), D(1))
    with pytest.raises(ReplayError):
        RateOverride(D(1), D(1), cache_write_1h=D(2))
    with pytest.raises(ReplayError):
        RateOverride(1, D(1))  # type: ignore[arg-type]
    for rates in ((None, D(1)), (D(1), None)):  # input and output are required
        with pytest.raises(ReplayError, match="must be a finite non-negative Decimal, got None"):
            RateOverride(*rates)  # type: ignore[arg-type]
    for rate in (D("Infinity"), D("NaN"), D("-0.01")):  # "a finite non-negative Decimal"
        with pytest.raises(ReplayError, match="finite non-negative"):
            RateOverride(D(1), D(1), cache_read=rate)


# -- the property: Pricer.price == calc_price -----------------------------------------------------

MODELS = [
    ("claude-sonnet-4-5", "anthropic"),
    ("claude-sonnet-4-6", "anthropic"),
    ("claude-opus-4-6", "anthropic"),
    ("claude-haiku-5-5", "anthropic"),
    ("claude-sonnet-4-6", "aws"),
    ("claude-sonnet-4-5", "google"),
    ("gpt-5", "openai"),
    ("gpt-5.5", "openai"),
    ("gpt-5.6-luna", "openai"),
    ("o3", "openai"),
    ("gemini-2.5-pro", "google"),
    ("gemini-3-pro-preview", "google"),
    ("deepseek-v4-flash", "deepseek"),
    ("deepseek-chat", "deepseek"),
    ("kimi-k3", "moonshotai"),
    ("grok-4.20", "x-ai"),
]
EDGES = [
    0,
    1,
    99_999,
    100_000,
    100_001,
    199_998,
    199_999,
    200_000,
    200_001,
    271_999,
    272_000,
    272_001,
]
SHARED = Pricer()

tokens = st.one_of(st.integers(0, 400_000), st.sampled_from(EDGES))
small = st.one_of(st.just(0), st.integers(0, 60_000))
buckets = st.builds(Buckets, tokens, tokens, small, small, small)
moments = st.datetimes(
    min_value=datetime(2025, 1, 1),
    max_value=datetime(2027, 6, 30),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=9)), timezone(timedelta(hours=-7))]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(b=buckets, model=st.sampled_from(MODELS), ts=moments)
def test_property_price_equals_calc_price(b, model, ts):
    name, provider = model
    p = SHARED.price(b, model=name, provider=provider, ts=ts)
    assert_decimals(p)
    assert amounts(p) == completed_reference(SHARED, b, name, provider, ts)


def _sweep_models():
    keep = {"anthropic", "openai", "google", "deepseek", "x-ai", "moonshotai"}
    for provider in data_snapshot.get_snapshot().providers:
        if provider.id in keep:
            for model in provider.models:
                yield model.id, provider.id


def test_every_model_of_the_main_providers_prices_like_calc_price_on_the_fast_path():
    """Each card is built once per price period and self-checked against calc_price; none of the
    main providers' models needs the calc_price fallback, and every result equals calc_price
    (genai-prices' arithmetic on the completed prices where replay adds a rate)."""
    pricer = Pricer()
    checked = completed = 0
    days = [datetime(2025, 6, 1, 3, tzinfo=UTC), OCT_20, datetime(2027, 2, 1, 8, tzinfo=UTC)]
    b = Buckets(
        uncached=150_000, cache_read=60_000, cache_write_5m=1_000, cache_write_1h=500, output=0
    )
    for model, provider in _sweep_models():
        for ts in days:
            try:
                p = pricer.price(b, model=model, provider=provider, ts=ts)
            except ReplayError as err:
                assert "--price" in str(err)
                continue
            expected = completed_reference(pricer, b, model, provider, ts)
            assert amounts(p) == expected, (model, provider, ts)
            if expected != reference(b, model, provider, ts):
                assert " + " in p.source, (model, provider, ts, p.source)
                completed += 1
            route = pricer._routes[(model, provider, ())]
            assert route.card_at(ts).slow is None, (model, provider)
            checked += 1
    assert checked > 300
    assert completed  # Claude on Vertex without a 1h price, at least


@pytest.mark.parametrize("context", [None, {"speed": "fast"}])
def test_memoized_pricing_does_not_call_calc_price(monkeypatch, context):
    """One card per price period, under a price variant too (genai-prices resolves a variant's
    prices as a new copy at each call: the card is keyed on the standard price's object), on
    every day of the period."""
    pricer = Pricer()
    b = Buckets(uncached=10, cache_read=300_000, output=5)
    model = "claude-opus-4-8" if context else "gpt-5.5"
    provider = "anthropic" if context else "openai"
    # builds + self-checks the card
    pricer.price(b, model=model, provider=provider, ts=OCT_20, context=context)
    calls = []
    real = genai_prices.calc_price
    monkeypatch.setattr(
        genai_prices, "calc_price", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    arithmetic = gp_types.ModelPrice.calc_price  # what the self-check and slow path call
    monkeypatch.setattr(
        gp_types.ModelPrice,
        "calc_price",
        lambda *a, **k: calls.append(1) or arithmetic(*a, **k),
    )
    for i in range(100):
        pricer.price(
            Buckets(uncached=i),
            model=model,
            provider=provider,
            ts=OCT_20 + timedelta(seconds=i),
            context=context,
        )
    for days in range(1, 4):  # the period goes on: another day, the same card
        pricer.price(b, model=model, provider=provider, ts=OCT_20 + timedelta(days=days),
                     context=context)
    assert calls == []


def test_pricing_opens_no_socket(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("replay.prices tried to open a socket")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    pricer = Pricer()  # fresh: builds cards and self-checks them with calc_price
    b = Buckets(uncached=100, cache_read=200_000, cache_write_5m=300, cache_write_1h=40, output=50)
    for model, provider in MODELS:
        assert pricer.price(b, model=model, provider=provider, ts=OCT_20).total_usd > 0
    assert provider_for_model("gpt-5") == "openai"
    assert data_snapshot.get_snapshot().from_auto_update is False


def test_bundled_snapshot_only():
    snapshot = data_snapshot.get_snapshot()
    assert snapshot is data_snapshot._bundled_snapshot()
    assert isinstance(snapshot.providers[0], gp_types.Provider)


# -- context windows and providers ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "tokens"),
    [
        ("claude-sonnet-4-6", 1_000_000),
        ("claude-opus-4-7", 1_000_000),
        ("claude-opus-5-5", 1_000_000),
        ("claude-sonnet-4-5-20250929", 200_000),
        ("claude-haiku-4-5", 200_000),
        ("claude-3-5-sonnet-20241022", 200_000),
        ("gpt-4o", 128_000),
        ("gpt-4o-mini", 128_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 272_000),
        ("gpt-5.1-codex", 272_000),
        ("gpt-5.5", 272_000),
        ("o3", 200_000),
        ("gemini-2.5-pro", 1_048_576),
        ("gemini-3-flash-preview", 1_048_576),
        ("deepseek-chat", 128_000),
        ("some-new-model", 128_000),
    ],
)
def test_context_window(model, tokens):
    assert context_window(model) == tokens


@pytest.mark.parametrize(
    ("model", "tokens"),
    [
        # context_windows.json: patterns are searched case-insensitively anywhere in the id,
        # "so `anthropic/claude-...` and Bedrock ids match too"
        ("anthropic/claude-sonnet-4.6", 1_000_000),
        ("us.anthropic.claude-sonnet-4-6-v1:0", 1_000_000),
        ("Claude-Opus-4-7", 1_000_000),
        ("openai/GPT-4o", 128_000),
    ],
)
def test_context_window_patterns_are_searched_case_insensitively(model, tokens):
    assert context_window(model) == tokens


@pytest.mark.parametrize(
    "row",
    [
        {"tokens": 1000, "source": None},
        *({"tokens": tokens, "source": "test"} for tokens in (0, -1, 1.5, "200000")),
    ],
    ids=["no-source", "zero-tokens", "negative-tokens", "fractional-tokens", "text-tokens"],
)
def test_a_context_window_row_must_name_its_source_and_a_positive_count_of_tokens(
    monkeypatch, row
):
    from replay.prices import _prices

    def windows(name):
        assert name == "context_windows.json"
        return {"windows": [{"pattern": ".", **row}]}

    monkeypatch.setattr(_prices, "load_json", windows)
    _prices._window_rows.cache_clear()
    context_window.cache_clear()
    try:
        with pytest.raises(ReplayError, match="row 0 is invalid"):
            context_window("some-model")
    finally:
        _prices._window_rows.cache_clear()
        context_window.cache_clear()


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("claude-sonnet-4-6", "anthropic"),
        ("gpt-5.1-codex", "openai"),
        ("o4-mini", "openai"),
        ("gemini-2.5-flash", "google"),
        ("deepseek-v4-pro", "deepseek"),
        ("grok-code-fast-1", "x-ai"),
        ("kimi-k3", "moonshotai"),
        ("anthropic/claude-sonnet-4.6", "openrouter"),
        ("us.anthropic.claude-sonnet-4-6-v1:0", "aws"),
        ("gemini-9-ultra", "google"),
        # ids in any case: the Bedrock host rule and the name rules read them lower-cased
        ("US.Anthropic.Claude-Sonnet-4-6-v1:0", "aws"),
        ("O3-Mini-Z", "openai"),
        ("o9", "openai"),  # an o-series id genai-prices does not know yet, without a suffix
    ],
)
def test_provider_for_model(model, provider):
    assert provider_for_model(model) == provider


def test_provider_for_unknown_model_raises():
    with pytest.raises(ReplayError, match="provider"):
        provider_for_model("llama-4-maverick")


def test_an_id_genai_prices_lists_but_cannot_match_is_not_suggested_back():
    """genai-prices lists Bedrock's `regional.` ids, but its match rules take another form:
    the hint said "did you mean" the very id it refused."""
    model = "regional.anthropic.claude-sonnet-4-6-v1:0"
    with pytest.raises(ReplayError) as info:
        Pricer().price(Buckets(uncached=10, output=1), model=model, provider="aws", ts=OCT_20)
    message = str(info.value)
    assert "lists" in message and "does not match that id" in message
    assert f"did you mean {model!r}" not in message and f"or {model!r}" not in message


# -- charges: a request's price with its cache outcome's fees --------------------------------------


def test_charges_add_the_created_cache_at_its_own_tier_the_regional_factor_and_storage():
    """`Charges.cost_usd` = (the request's price + the created explicit cache's tokens at the
    input rate, priced as a prompt of their own) × `price_factor`, + storage, which no factor
    scales; `input_cost_usd` is the token part of it. Gemini 2.5 Pro (genai-prices): input
    $1.25 / read $0.125 / output $10, above 200k total input $2.50 / $0.25 / $15."""
    from replay.cache import CacheOutcome
    from replay.prices import charge

    outcome = CacheOutcome(uncached=60_000, cache_read=150_000, cache_write_5m=0,
                           cache_write_1h=0, created_tokens=150_000, storage_usd=D("0.5"),
                           price_factor=D("1.1"))
    c = charge(Pricer(), outcome, 10_000, model="gemini-2.5-pro", provider="google", ts=OCT_20)
    # the request, 210k tokens, above the cliff: 60k × $2.50 + 150k × $0.25, 10k × $15
    assert amounts(c.price) == (D("0.1875"), D("0.15"), D("0.3375"))
    # the creation, 150k tokens, below it: 150k × $1.25 = $0.1875
    assert c.input_cost_usd == (D("0.1875") + D("0.1875")) * D("1.1") == D("0.4125")
    assert c.cost_usd == (D("0.3375") + D("0.1875")) * D("1.1") + D("0.5") == D("1.0775")


def test_charges_bill_a_counterfactual_split_with_the_outcome_s_fees_at_the_input_rate():
    """`buckets`: another split of the same prompt, billed with the outcome's fees (its created
    cache at the plain input rate, not a write rate; its factor, whatever it is)."""
    from replay.cache import CacheOutcome
    from replay.prices import buckets_of, charge

    rate = RateOverride(input=D(1), output=D(2), cache_read=D("0.1"), cache_write=D("1.25"),
                        cache_write_1h=D(2))
    pricer = Pricer({"m": rate})
    outcome = CacheOutcome(uncached=1_000_000, cache_read=2_000_000, cache_write_5m=3_000_000,
                           cache_write_1h=4_000_000, created_tokens=1_000_000,
                           storage_usd=D("0.25"), price_factor=D("0.5"))
    assert buckets_of(outcome, 5) == Buckets(1_000_000, 2_000_000, 3_000_000, 4_000_000, 5)
    args = {"model": "m", "provider": "any", "ts": OCT_20}
    own = charge(pricer, outcome, 1_000_000, **args)
    # $1 + $0.2 + $3.75 + $8 in, $2 out; the creation $1 (input rate)
    assert amounts(own.price) == (D("12.95"), D(2), D("14.95"))
    assert own.input_cost_usd == (D("12.95") + 1) * D("0.5")
    assert own.cost_usd == (D("14.95") + 1) * D("0.5") + D("0.25")
    other = Buckets(uncached=10_000_000, output=1_000_000)
    cf = charge(pricer, outcome, 1_000_000, buckets=other, **args)
    assert amounts(cf.price) == (D(10), D(2), D(12))
    assert cf.cost_usd == (D(12) + 1) * D("0.5") + D("0.25")


def test_charges_price_the_request_and_its_created_cache_under_its_price_context():
    """A request billed under `inference_geo: us` on Claude 4.6+ (× 1.1, price_patches.json):
    its tokens and the cache created for it alike."""
    from replay.cache import CacheOutcome
    from replay.prices import charge

    outcome = CacheOutcome(uncached=1_000_000, cache_read=0, cache_write_5m=0, cache_write_1h=0,
                           created_tokens=1_000_000)
    args = {"model": "claude-sonnet-4-6", "provider": "anthropic", "ts": OCT_20}
    us = charge(Pricer(), outcome, 0, context={"inference_geo": "us"}, **args)
    assert us.price.input_usd == D(3) * D("1.1")  # 1M × $3 × 1.1
    assert us.input_cost_usd == us.cost_usd == 2 * D(3) * D("1.1")
