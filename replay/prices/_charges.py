"""What one simulated request is billed: its buckets at the model's rates, and what its cache
outcome bills beside them (a regional multiplier, an explicit cache's creation and storage)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from replay.cache._base import CacheOutcome
from replay.prices._prices import Buckets, Price, Pricer


@dataclass(frozen=True, slots=True)
class Charges:
    """One request's charges, in USD (exact `Decimal`s)."""

    price: Price
    """The prompt's buckets and the output at the model's rates, before `price_factor`."""
    cost_usd: Decimal
    """Everything the request is billed: `price` × the outcome's `price_factor`, plus the
    explicit cache it created (its tokens at the input rate, × `price_factor`) and that cache's
    storage."""
    input_cost_usd: Decimal
    """The input tokens' share of `cost_usd`: the prompt's buckets and the created cache's
    tokens, × `price_factor` (storage is not a token charge)."""


def buckets_of(outcome: CacheOutcome, output: int) -> Buckets:
    """The buckets of a request whose prompt the cache split as `outcome`."""
    return Buckets(
        uncached=outcome.uncached,
        cache_read=outcome.cache_read,
        cache_write_5m=outcome.cache_write_5m,
        cache_write_1h=outcome.cache_write_1h,
        output=output,
    )


def charge(
    pricer: Pricer,
    outcome: CacheOutcome,
    output: int,
    *,
    model: str,
    provider: str,
    ts: datetime,
    context: Mapping[str, str] | None = None,
    buckets: Buckets | None = None,
) -> Charges:
    """The charges of a request whose prompt the cache split as `outcome`, with `output`
    generated tokens, at the rates in force at `ts`. `buckets`: another split of the same
    request's prompt (a counterfactual), billed with the outcome's fees."""
    if buckets is None:
        buckets = buckets_of(outcome, output)
    price = pricer.price(buckets, model=model, provider=provider, ts=ts, context=context)
    cost, input_cost = price.total_usd, price.input_usd
    if outcome.created_tokens:
        # The creation is a call of its own (Gemini `cachedContents.create`), priced as a prompt
        # of that many tokens: its own tier on tiered models. Its price's warning is not kept:
        # plain input has a rate on every card, so it could only repeat the card's own note,
        # which the request's price already carries.
        created = pricer.price(
            Buckets(uncached=outcome.created_tokens),
            model=model,
            provider=provider,
            ts=ts,
            context=context,
        ).input_usd
        cost, input_cost = cost + created, input_cost + created
    if outcome.price_factor != 1:  # e.g. Vertex regional endpoints (+10%)
        cost, input_cost = cost * outcome.price_factor, input_cost * outcome.price_factor
    return Charges(price, cost + outcome.storage_usd, input_cost)
