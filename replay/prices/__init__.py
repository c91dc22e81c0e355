"""Request prices (genai-prices' bundled snapshot or `--price` overrides), context windows and
provider guesses."""

from replay.prices._bill import Bill, bill
from replay.prices._prices import (
    PRICE_FORMAT,
    Buckets,
    Price,
    Pricer,
    RateOverride,
    context_window,
    parse_price_override,
    parse_price_overrides,
    provider_for_model,
)

__all__ = [
    "PRICE_FORMAT",
    "Bill",
    "Buckets",
    "Price",
    "Pricer",
    "RateOverride",
    "bill",
    "context_window",
    "parse_price_override",
    "parse_price_overrides",
    "provider_for_model",
]
