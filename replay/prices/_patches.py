"""replay's corrections to genai-prices' bundled prices (`pricing/price_patches.json`).

genai-prices is the price reference, but its snapshot misses a few facts the research
(caching.md) states with a source. Each correction is a reviewed row of the data file with its
source, applied by `replay.prices.Pricer` on top of the prices genai-prices resolves for a
request:

- `peak_days`: the UTC weekdays on which a model's time-of-day (peak) prices apply, and the
  factor on the day's off-peak price they are; on the other days its off-peak price holds all
  day (genai-prices' time-of-day prices have no weekday, and are the latest period's).
- `prices`: rates that replace genai-prices' for some models over a range of UTC dates (e.g. a
  long-context tier genai-prices lacks), in genai-prices' units (USD per million tokens).
- `multipliers`: a factor on every token price of some models when a request was billed under
  a price variant genai-prices does not know (e.g. `inference_geo: "us"`, ×1.1 on Claude 4.6+).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from functools import cache
from typing import Annotated, Literal

from genai_prices import types as gp_types
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from replay._data import data_dir, load_json
from replay._errors import ReplayError

FILE = "price_patches.json"
"""The data file, in `pricing/`."""

Weekday = Literal["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
WEEKDAYS: tuple[Weekday, ...] = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
"""In `date.weekday()` order."""


def _decimal_text(value: object) -> object:
    if not isinstance(value, str):
        raise ValueError('a rate is a decimal string such as "0.6" (a JSON number may lose digits)')
    return value


Rate = Annotated[Decimal, BeforeValidator(_decimal_text), Field(ge=0, allow_inf_nan=False)]
"""USD per million tokens, written as a decimal string."""


class TierRate(BaseModel):
    """One long-context tier: above `start` total input tokens, every token of the unit costs
    `price` (genai-prices' cliff)."""

    model_config = ConfigDict(extra="forbid")

    start: int = Field(gt=0)
    """Total input tokens (cache reads and writes included) the request must exceed."""
    price: Rate


class TieredRate(BaseModel):
    """A rate with long-context tiers (genai-prices' `TieredPrices`)."""

    model_config = ConfigDict(extra="forbid")

    base: Rate
    """Rate up to the first tier."""
    tiers: list[TierRate] = Field(min_length=1)
    """By increasing `start`."""

    @model_validator(mode="after")
    def _increasing(self) -> TieredRate:
        starts = [t.start for t in self.tiers]
        if starts != sorted(set(starts)):
            raise ValueError(f"tier starts must increase, got {starts}")
        return self


Unit = Literal[
    "input_mtok", "cache_read_mtok", "cache_write_mtok", "cache_write_1h_mtok", "output_mtok"
]
"""The genai-prices price keys a row may set (`cache_write_mtok` is the 5-minute write)."""


class PricePatch(BaseModel):
    """Rates that replace genai-prices' for some models of a provider over a range of dates."""

    model_config = ConfigDict(extra="forbid")

    provider: str
    """genai-prices provider id."""
    models: list[str]
    """genai-prices model ids (exact, as `Price.model_ref` shows them)."""
    since: date | None = None
    """First UTC date the rates apply; absent = as far back as genai-prices prices the model."""
    until: date | None = None
    """First UTC date they no longer apply; absent = still in force."""
    prices: dict[Unit, Rate | TieredRate] = Field(min_length=1)
    """The replaced rates; the model's other rates stay genai-prices'."""
    what: str
    """A few words for `Price.source`, e.g. "Sonnet 4 1M-context tier above 200k"."""
    source: str
    """URL (and archived copy) the rates come from."""
    note: str | None = None
    """Why, or what is assumed."""

    def in_force(self, day: date) -> bool:
        """Whether the rates apply on this UTC date."""
        started = self.since is None or self.since <= day
        return started and (self.until is None or day < self.until)

    def genai_prices(self) -> dict[str, Decimal | gp_types.TieredPrices]:
        """The rates as genai-prices' `ModelPrice` attributes."""
        return {unit: _genai_rate(rate) for unit, rate in self.prices.items()}


def _genai_rate(rate: Decimal | TieredRate) -> Decimal | gp_types.TieredPrices:
    if isinstance(rate, Decimal):
        return rate
    tiers = [gp_types.Tier(start=t.start, price=t.price) for t in rate.tiers]
    return gp_types.TieredPrices(base=rate.base, tiers=tiers)


Factor = Annotated[Decimal, BeforeValidator(_decimal_text), Field(gt=0, allow_inf_nan=False)]
"""A price multiplier, written as a decimal string."""


class PeakDays(BaseModel):
    """The weekdays on which some models' time-of-day (peak) prices apply."""

    model_config = ConfigDict(extra="forbid")

    provider: str
    """genai-prices provider id."""
    models: list[str]
    """genai-prices model ids (exact, as `Price.model_ref` shows them)."""
    days: list[Weekday]
    """UTC weekdays on which the peak prices apply; every other day is off-peak all day."""
    factor: Factor
    """A peak price is the off-peak price in force that day × `factor` (genai-prices' own
    time-of-day prices have no start date: they are the latest period's)."""
    source: str
    """URL (and archived copy) the rule comes from."""
    note: str | None = None
    """Why, or what is assumed."""


class PriceMultiplier(BaseModel):
    """A factor on every token price of some models under a price variant (a request's
    `price_context`, e.g. `{"inference_geo": "us"}`), on top of the prices in force (fast mode's
    included)."""

    model_config = ConfigDict(extra="forbid")

    provider: str
    """genai-prices provider id."""
    models: list[str]
    """genai-prices model ids (exact, as `Price.model_ref` shows them)."""
    when: dict[str, str] = Field(min_length=1)
    """The price context entries that select it (all of them must be in the request's)."""
    factor: Factor
    """Applied to the input, cache-read, cache-write and output rates, tier by tier."""
    since: date | None = None
    """First UTC date it applies; absent = whenever a log says the variant was used."""
    until: date | None = None
    """First UTC date it no longer applies; absent = still in force."""
    what: str
    """A few words for `Price.source` and the note of a model it does not apply to, e.g.
    "US-only inference (inference_geo us) × 1.1 on Claude 4.6+"."""
    source: str
    """URL (and archived copy) the rule comes from."""
    note: str | None = None
    """Why, or what is assumed."""

    def in_force(self, day: date) -> bool:
        """Whether the factor applies on this UTC date."""
        started = self.since is None or self.since <= day
        return started and (self.until is None or day < self.until)

    def selected_by(self, context: dict[str, str]) -> bool:
        """Whether a request billed under `context` gets the factor."""
        return all(context.get(key) == value for key, value in self.when.items())


class PricePatches(BaseModel):
    """The data file."""

    model_config = ConfigDict(extra="forbid")

    description: str
    """What the file is for."""
    reviewed: date
    """When a person last checked the file against its sources."""
    peak_days: list[PeakDays]
    prices: list[PricePatch]
    multipliers: list[PriceMultiplier]


@cache
def price_patches() -> PricePatches:
    try:
        return PricePatches.model_validate(load_json(FILE))
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ReplayError(f"{data_dir() / FILE}: invalid at `{loc}`: {first['msg']}") from err


def patches_for(provider: str, model_id: str) -> tuple[PricePatch, ...]:
    """The `prices` rows of a genai-prices model, in file order (a later row wins)."""
    return tuple(
        row for row in price_patches().prices if row.provider == provider and model_id in row.models
    )


def peak_rule(provider: str, model_id: str) -> PeakDays | None:
    """The model's peak-price row; None when the data file does not restrict its peak prices
    (genai-prices' own, every day)."""
    for row in price_patches().peak_days:
        if row.provider == provider and model_id in row.models:
            return row
    return None


def multipliers_for(provider: str, model_id: str) -> tuple[PriceMultiplier, ...]:
    """The `multipliers` rows of a genai-prices model, in file order."""
    return tuple(
        row
        for row in price_patches().multipliers
        if row.provider == provider and model_id in row.models
    )


def multiplier_rules(keys: frozenset[str]) -> tuple[PriceMultiplier, ...]:
    """Every `multipliers` row selected by one of these price context keys (whatever the model):
    what a note says to a model they do not apply to."""
    return tuple(row for row in price_patches().multipliers if keys & row.when.keys())
