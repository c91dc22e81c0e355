"""Request prices (genai-prices' bundled snapshot or `--price` overrides), context windows and
provider guesses."""

from replay.prices._charges import Charges, buckets_of, charge
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
    window_assumed,
)

__all__ = [
    "PRICE_FORMAT",
    "Buckets",
    "Charges",
    "Price",
    "Pricer",
    "RateOverride",
    "buckets_of",
    "charge",
    "context_window",
    "parse_price_override",
    "parse_price_overrides",
    "provider_for_model",
    "window_assumed",
]
