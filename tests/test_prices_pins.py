"""Price edges that no other test pinned: the first and last day of dated price rows, the
price contexts multipliers need, the precedence of `--price` names, per-request fees, the rule
multipliers a rate card is keyed on, the warnings of the calc_price fallback. Each test here
failed on a deliberate one-line bug (a `<=` for a `<`, a key or a guard dropped) that the rest
of the suite let through (mutation audit of replay.prices)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from genai_prices import types as gp_types

from replay._errors import ReplayError
from replay.prices import Buckets, Pricer, _prices, parse_price_override
from replay.prices._patches import PriceMultiplier, PricePatch

D = Decimal


def _patch(**kw) -> PricePatch:
    return PricePatch.model_validate({
        "provider": "acme", "models": ["acme-1"], "prices": {"input_mtok": "1"},
        "what": "test row", "source": "https://x", **kw,
    })


def _multiplier(**kw) -> PriceMultiplier:
    return PriceMultiplier.model_validate({
        "provider": "acme", "models": ["acme-1"], "when": {"inference_geo": "us"},
        "factor": "1.1", "what": "test row", "source": "https://x", **kw,
    })


@pytest.mark.parametrize("row", [_patch, _multiplier])
def test_dated_price_rows_apply_from_since_up_to_the_day_before_until(row):
    """`since`: first UTC date the row applies; `until`: first UTC date it no longer does."""
    r = row(since="2026-03-01", until="2026-04-01")
    assert not r.in_force(date(2026, 2, 28))
    assert r.in_force(date(2026, 3, 1))
    assert r.in_force(date(2026, 3, 31))
    assert not r.in_force(date(2026, 4, 1))


def test_a_multiplier_needs_every_entry_of_its_price_context():
    r = _multiplier(when={"inference_geo": "us", "speed": "fast"})
    assert r.selected_by({"inference_geo": "us", "speed": "fast", "processing": "batch"})
    assert not r.selected_by({"inference_geo": "us"})
    assert not r.selected_by({"speed": "fast"})


def test_a_multiplier_for_a_variant_genai_prices_prices_is_not_applied_twice():
    row = _multiplier()
    context = (("inference_geo", "us"),)
    priced = gp_types.PriceVariant(
        when={"inference_geo": "us"}, prices=gp_types.ModelPrice(input_mtok=D(1))
    )
    day = date(2026, 10, 20)
    assert _prices._multipliers_in_force((row,), day, context, ()) == (row,)
    assert _prices._multipliers_in_force((row,), day, context, (priced,)) == ()


def test_an_exact_price_override_wins_over_a_wildcard():
    wildcard = parse_price_override("claude-sonnet-4-6*=input:1,output:1")[1]
    exact = parse_price_override("claude-sonnet-4-6-fast=input:9,output:9")[1]
    pricer = Pricer({"claude-sonnet-4-6*": wildcard, "claude-sonnet-4-6-fast": exact})
    assert pricer.override_for("claude-sonnet-4-6-fast") is exact
    assert pricer.override_for("claude-sonnet-4-6-slow") is wildcard


def test_a_per_request_fee_is_its_price_per_thousand_requests_on_the_fast_path():
    """genai-prices' `requests_kcount` is USD per 1,000 requests: the card adds a thousandth of
    it to each request's total, as calc_price does, without the calc_price fallback."""
    prices = gp_types.ModelPrice(input_mtok=D(1), output_mtok=D(2), requests_kcount=D(3))
    card = _prices._card_from_model_price(prices, source="test", model_ref="acme-1",
                                          label="'acme-1'")
    _prices._self_check(card, prices)
    assert card.slow is None
    b = Buckets(uncached=1_000_000, output=1_000_000)
    assert card.amounts(b)[:3] == (D(1), D(2), D("3.003"))
    expected = prices.calc_price(_prices._usage(b))
    assert card.amounts(b)[2] == expected["total_price"]


def test_the_1h_write_rate_follows_the_rule_date_within_one_genai_prices_period():
    """Claude on Vertex has no genai-prices 1h rate; the rule files give 2 × input from
    2025-05-22 (the 1h TTL). One Pricer asked about a day after, then a day before, answers
    each day with its own rate (a rate card is keyed on the rule multipliers too)."""
    pricer = Pricer()
    b = Buckets(cache_write_1h=100_000)
    after = pricer.price(b, model="claude-opus-4-1", provider="google",
                         ts=datetime(2025, 5, 23, tzinfo=UTC))
    assert after.input_usd == D("3.0")  # 100k × $15 × 2
    before = pricer.price(b, model="claude-opus-4-1", provider="google",
                          ts=datetime(2025, 5, 1, tzinfo=UTC))
    assert before.input_usd == D("1.875")  # 100k × $18.75, genai-prices' 5m rate
    assert before.warning is not None and "1h" in before.warning


def test_the_calc_price_fallback_keeps_the_fallback_warnings(monkeypatch):
    """A card whose arithmetic disagreed with genai-prices' prices with calc_price: its requests
    still say which bucket had no rate of its own."""

    def always_slow(card, model_price):
        card.slow = _prices._slow_path(model_price)

    monkeypatch.setattr(_prices, "_self_check", always_slow)
    b = Buckets(uncached=1000, cache_write_5m=1000)
    p = Pricer().price(b, model="gpt-5", provider="openai",
                       ts=datetime(2026, 10, 20, tzinfo=UTC))
    assert p.warning is not None and "no cache-write price" in p.warning


def test_of_two_price_patch_rows_in_force_the_later_one_wins():
    first = _patch(prices={"input_mtok": "1", "output_mtok": "5"}, what="first")
    later = _patch(prices={"input_mtok": "2"}, what="later")
    patched, source = _prices._patched(gp_types.ModelPrice(input_mtok=D(9)), (first, later))
    assert (patched.input_mtok, patched.output_mtok) == (D(2), D(5))
    assert "first; later" in source


def test_every_multiplier_row_in_force_scales_the_rates():
    geo = _multiplier(factor="1.1", what="geo")
    other = _multiplier(when={"speed": "fast"}, factor="2", what="fast")
    prices = gp_types.ModelPrice(input_mtok=D(10), output_mtok=D(20))
    scaled, source = _prices._multiplied(prices, (geo, other))
    assert (scaled.input_mtok, scaled.output_mtok) == (D(22), D(44))
    assert "geo; fast" in source


def test_a_genai_prices_variant_not_yet_in_force_prices_nothing():
    """A genai-prices price variant with a start date later than the request is not one of the
    variants in force (so a replay multiplier on its keys still applies before that date)."""
    variant = gp_types.PriceVariant(
        when={"inference_geo": "us"},
        prices=gp_types.ModelPrice(input_mtok=D(2)),
        constraint=gp_types.StartDateConstraint(start_date=date(2026, 6, 1)),
    )
    info = gp_types.ModelInfo(id="acme-1", match=gp_types.ClauseEquals(equals="acme-1"),
                              prices=gp_types.ModelPrice(input_mtok=D(1)),
                              price_variants=[variant])
    context = (("inference_geo", "us"),)
    assert _prices._variants_in_force(info, datetime(2026, 5, 31, tzinfo=UTC), context) == ()
    assert _prices._variants_in_force(info, datetime(2026, 6, 1, tzinfo=UTC), context) == (
        variant,
    )


def test_a_multiplier_row_applies_only_on_the_dates_it_is_in_force():
    """`_multipliers_in_force` keeps a row the context selects on `day` only if the row is in
    force that day (`since` included, `until` excluded)."""
    row = _multiplier(since="2026-03-01", until="2026-04-01")
    context = (("inference_geo", "us"),)
    assert _prices._multipliers_in_force((row,), date(2026, 2, 28), context, ()) == ()
    assert _prices._multipliers_in_force((row,), date(2026, 3, 1), context, ()) == (row,)
    assert _prices._multipliers_in_force((row,), date(2026, 4, 1), context, ()) == ()


_RATES = {"input_mtok": D(1), "cache_read_mtok": D("0.1"), "cache_write_mtok": D("1.25"),
          "cache_write_1h_mtok": D(2), "output_mtok": D(5)}
_TIERED = gp_types.TieredPrices(base=D(1), tiers=[gp_types.Tier(start=1000, price=D(2))])


@pytest.mark.parametrize(
    ("unit", "rate"),
    [
        # above the cliff only
        ("input_mtok", gp_types.TieredPrices(base=D(1), tiers=[gp_types.Tier(start=1000,
                                                                          price=D(3))])),
        ("output_mtok", D(6)),
        ("cache_read_mtok", D("0.2")),
        ("cache_write_mtok", D("1.5")),
        ("cache_write_1h_mtok", D(3)),
    ],
)
def test_a_card_that_disagrees_with_genai_prices_falls_back_to_its_arithmetic(unit, rate):
    """Module docstring: each card is checked against genai-prices' arithmetic on probe
    requests (both sides of every cliff, every bucket and the output non-zero) and a card that
    disagrees falls back to that arithmetic. A card built from other rates than the prices it
    is checked against, differing in one unit only, is caught whichever the unit."""
    built = gp_types.ModelPrice(**{**_RATES, "input_mtok": _TIERED})
    card = _prices._card_from_model_price(built, source="test", model_ref="acme-1",
                                          label="'acme-1'")
    _prices._self_check(card, built)
    assert card.slow is None
    truth = gp_types.ModelPrice(**{**_RATES, "input_mtok": _TIERED, unit: rate})
    _prices._self_check(card, truth)
    assert card.slow is not None
    b = Buckets(uncached=1_500, cache_read=100, cache_write_5m=100, cache_write_1h=100,
                output=100)
    expected = truth.calc_price(_prices._usage(b))
    assert card.slow(b) == (expected["input_price"], expected["output_price"],
                            expected["total_price"])


_TIER = {"base": "3", "tiers": [{"start": 200000, "price": "6"}]}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"prices": {"input_mtok": 0.6}}, "decimal string"),  # a JSON number may lose digits
        ({"prices": {"input_mtok": "-1"}}, "greater than or equal to 0"),
        ({"prices": {"input_mtok": "NaN"}}, "finite"),
        ({"prices": {"input_mtok": "Infinity"}}, "finite"),
        ({"prices": {}}, "at least 1"),
        ({"prices": {"input_mtoks": "1"}}, "input_mtok"),  # not one of genai-prices' keys
        ({"prices": {"input_mtok": {"base": "3", "tiers": []}}}, "at least 1"),
        ({"prices": {"input_mtok": {**_TIER, "tiers": [{"start": 0, "price": "6"}]}}},
         "greater than 0"),
        ({"prices": {"input_mtok": {**_TIER, "tiers": [{"start": 9, "price": "6"},
                                                       {"start": 9, "price": "7"}]}}},
         "tier starts must increase"),
        ({"prices": {"input_mtok": {**_TIER, "tiers": [{"start": 9, "price": "6"},
                                                       {"start": 8, "price": "7"}]}}},
         "tier starts must increase"),
        ({"untill": "2026-03-13"}, "Extra inputs"),  # a typo would leave the row undated
    ],
)
def test_a_price_patch_row_refuses_what_would_misprice(change, why):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=why):
        _patch(**change)


def test_a_price_patch_rate_may_be_zero_and_keeps_its_decimal_digits():
    row = _patch(prices={"cache_read_mtok": "0", "input_mtok": "0.30000000000000004",
                         "output_mtok": _TIER})
    rates = row.genai_prices()
    assert rates["cache_read_mtok"] == D(0)
    assert rates["input_mtok"] == D("0.30000000000000004")
    tiered = rates["output_mtok"]
    assert isinstance(tiered, gp_types.TieredPrices)
    assert (tiered.base, [(t.start, t.price) for t in tiered.tiers]) == (D(3), [(200_000, D(6))])


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"when": {}}, "at least 1"),  # all() of no entries: it would select every request
        ({"factor": "0"}, "greater than 0"),
        ({"factor": 1.1}, "decimal string"),
        ({"factor": "Infinity"}, "finite"),
    ],
)
def test_a_multiplier_row_refuses_what_would_misprice(change, why):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=why):
        _multiplier(**change)


def test_an_invalid_price_patch_file_names_the_file_and_the_place(monkeypatch):
    from replay._errors import ReplayError
    from replay.prices import _patches

    data = {"description": "d", "reviewed": "2026-12-05", "peak_days": [], "multipliers": [],
            "prices": [{"provider": "acme", "models": ["acme-1"], "what": "w", "source": "s",
                        "prices": {"input_mtok": 0.6}}]}
    monkeypatch.setattr(_patches, "load_json", lambda name: data)
    _patches.price_patches.cache_clear()
    try:
        with pytest.raises(ReplayError) as info:
            _patches.price_patches()
        message = str(info.value)
        assert message.startswith(f"{_patches.data_dir() / 'price_patches.json'}: invalid at ")
        assert "`prices.0.prices.input_mtok" in message and "decimal string" in message
        data["surplus"] = True
        data["prices"][0]["prices"]["input_mtok"] = "0.6"
        _patches.price_patches.cache_clear()
        with pytest.raises(ReplayError, match="invalid at `surplus`"):
            _patches.price_patches()
    finally:
        _patches.price_patches.cache_clear()


def test_a_peak_days_row_takes_its_factor_as_a_decimal_string():
    from pydantic import ValidationError

    from replay.prices._patches import PeakDays

    row = {"provider": "acme", "models": ["acme-1"], "days": ["Mon"], "factor": "2",
           "source": "https://x"}
    assert PeakDays.model_validate(row).factor == D(2)
    for factor, why in ((2, "decimal string"), ("0", "greater than 0")):
        with pytest.raises(ValidationError, match=why):
            PeakDays.model_validate({**row, "factor": factor})
    with pytest.raises(ValidationError, match="Mon"):
        PeakDays.model_validate({**row, "days": ["Monday"]})


def test_a_genai_prices_variant_applies_only_when_every_entry_of_it_matches():
    """As genai-prices' own `get_prices`: a variant's `when` entries must all be in the
    request's price context."""
    variant = gp_types.PriceVariant(
        when={"speed": "fast", "inference_geo": "us"},
        prices=gp_types.ModelPrice(input_mtok=D(2)),
    )
    info = gp_types.ModelInfo(id="acme-1", match=gp_types.ClauseEquals(equals="acme-1"),
                              prices=gp_types.ModelPrice(input_mtok=D(1)),
                              price_variants=[variant])
    ts = datetime(2026, 10, 20, tzinfo=UTC)
    assert _prices._variants_in_force(info, ts, (("speed", "fast"),)) == ()
    both = (("inference_geo", "us"), ("speed", "fast"))
    assert _prices._variants_in_force(info, ts, both) == (variant,)
    assert info.get_prices(ts, {"speed": "fast"}).input_mtok == D(1)  # genai-prices agrees
    assert info.get_prices(ts, dict(both)).input_mtok == D(2)


def test_a_model_without_any_write_rate_gets_both_from_the_rule_multipliers():
    """A model with cache reads but no genai-prices write rate at all (Kimi K3 on OpenRouter)
    gets its 5m write rate = input × `write_multiplier_5m` and its 1h one = input ×
    `write_multiplier_1h`; with no 5m multiplier it gets neither (genai-prices bills 1h writes
    as a part of all writes: a 1h rate alone would not be priced)."""
    prices = gp_types.ModelPrice(input_mtok=D(4), cache_read_mtok=D("0.4"), output_mtok=D(20))
    done, note = _prices._with_1h_write_rate(prices, (D("1.25"), D(2)), "pricing/cache/x.json")
    assert (done.cache_write_mtok, done.cache_write_1h_mtok) == (D(5), D(8))  # 4×1.25, 4×2
    assert note == " + cache-write rates = input × 1.25 (5m), × 2 (1h) (pricing/cache/x.json)"
    assert prices.cache_write_mtok is None  # genai-prices' own object is left as it was
    same, note = _prices._with_1h_write_rate(prices, (None, D(2)), "pricing/cache/x.json")
    assert (same, note) == (prices, "")
    # no input rate to multiply: left as it is, for the card to refuse (not a TypeError here)
    unpriced = gp_types.ModelPrice(cache_read_mtok=D("0.4"))
    same, note = _prices._with_1h_write_rate(unpriced, (D("1.25"), D(2)), "pricing/cache/x.json")
    assert (same, note) == (unpriced, "")
    with pytest.raises(ReplayError, match="no input-token price"):
        _prices._card_from_model_price(same, source="test", model_ref="acme-1", label="'acme-1'")


def test_one_pricer_bills_each_peak_hour_at_twice_its_own_day_s_off_peak_price():
    """deepseek-v4-flash's off-peak input (output) is $0.14 ($0.28) before 2026-08-17 and $0.22
    ($0.66) from then (genai-prices), and its peak rows are one object whatever the day. A
    peak hour is 2 × that day's off-peak (caching.md l.57): one Pricer asked about a Monday
    in May, then a Thursday in August, answers each at its own day's price."""
    pricer = Pricer()
    b = Buckets(uncached=1_000_000, output=1_000_000)
    flash = {"model": "deepseek-v4-flash", "provider": "deepseek"}
    may = pricer.price(b, **flash, ts=datetime(2026, 5, 4, 2, tzinfo=UTC))
    august = pricer.price(b, **flash, ts=datetime(2026, 8, 20, 2, tzinfo=UTC))
    assert (may.input_usd, may.output_usd) == (D("0.28"), D("0.56"))
    assert (august.input_usd, august.output_usd) == (D("0.44"), D("1.32"))


def test_a_peak_days_row_restricts_its_own_provider_s_models_only():
    """Quicksilverpro lists deepseek-v4-pro under genai-prices' DeepSeek id too; the peak row
    names `deepseek`: another provider's model of that id has no weekday rule."""
    from replay.prices._patches import peak_rule

    assert peak_rule("deepseek", "deepseek-v4-pro") is not None
    assert peak_rule("quicksilverpro", "deepseek-v4-pro") is None


def test_the_note_of_an_unpriced_variant_names_a_rule_any_of_whose_entries_it_holds(
    monkeypatch,
):
    """A row selected by two price context entries is one that would have priced a request
    holding only one of them: the note of that request names it."""
    from replay.prices import _patches

    both = _multiplier(when={"inference_geo": "us", "speed": "fast"}, what="both")
    patches = _patches.PricePatches(description="d", reviewed=date(2026, 12, 5), peak_days=[],
                                    prices=[], multipliers=[both])
    monkeypatch.setattr(_patches, "price_patches", lambda: patches)
    assert _patches.multiplier_rules(frozenset({"inference_geo"})) == (both,)
    assert _patches.multiplier_rules(frozenset({"processing"})) == ()


def test_a_pricer_prices_with_the_snapshot_genai_prices_has_now(monkeypatch):
    """genai-prices' snapshot can be replaced while replay runs (its auto-update, or
    `set_custom_snapshot`): a Pricer's rate cards of the earlier one are dropped, not reused."""
    from genai_prices import data_snapshot

    def snapshot(rate: str) -> data_snapshot.DataSnapshot:
        model = gp_types.ModelInfo(id="acme-1", match=gp_types.ClauseEquals(equals="acme-1"),
                                   prices=gp_types.ModelPrice(input_mtok=D(rate)))
        provider = gp_types.Provider(id="acme", name="Acme", api_pattern="x", models=[model])
        return data_snapshot.DataSnapshot(providers=[provider], from_auto_update=True,
                                          timestamp=datetime(2026, 12, 1))

    pricer, b = Pricer(), Buckets(uncached=1_000_000)
    ts = datetime(2026, 10, 20, tzinfo=UTC)
    monkeypatch.setattr(data_snapshot, "_custom_snapshot", snapshot("1"))
    assert pricer.price(b, model="acme-1", provider="acme", ts=ts).input_usd == D(1)
    monkeypatch.setattr(data_snapshot, "_custom_snapshot", snapshot("2"))
    later = pricer.price(b, model="acme-1", provider="acme", ts=ts)
    assert later.input_usd == D(2)
    assert later.source.endswith("auto-update of 2026-12-01")
