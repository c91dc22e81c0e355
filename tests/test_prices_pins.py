"""Price edges that no other test pinned: the first and last day of dated price rows, the
price contexts multipliers need, the precedence of `--price` names. Each test here failed on a
deliberate one-line bug (a `<=` for a `<`, a key or a guard dropped) that the rest of the suite
let through (mutation audit of replay.prices)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from genai_prices import types as gp_types

from replay.prices import Pricer, _prices, parse_price_override
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

