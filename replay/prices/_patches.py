"""replay's corrections to genai-prices' bundled prices (`pricing/price_patches.json`).

genai-prices is the price reference, but its snapshot misses a few facts the research
(caching.md) states with a source. Each correction is a reviewed row of the data file with its
source, applied by `replay.prices.Pricer` on top of the prices genai-prices resolves for a
request:

- `peak_days`: the UTC weekdays on which a model's time-of-day (peak) prices apply; on the other
  days its off-peak price holds all day (genai-prices' time-of-day prices have no weekday).
"""

from __future__ import annotations

from datetime import date
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from replay._data import data_dir, load_json
from replay._errors import ReplayError

FILE = "price_patches.json"
"""The data file, in `pricing/`."""

Weekday = Literal["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
WEEKDAYS: tuple[Weekday, ...] = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
"""In `date.weekday()` order."""


class PeakDays(BaseModel):
    """The weekdays on which some models' time-of-day (peak) prices apply."""

    model_config = ConfigDict(extra="forbid")

    provider: str
    """genai-prices provider id."""
    models: list[str]
    """genai-prices model ids (exact, as `Price.model_ref` shows them)."""
    days: list[Weekday]
    """UTC weekdays on which the peak prices apply; every other day is off-peak all day."""
    source: str
    """URL (and archived copy) the rule comes from."""
    note: str | None = None
    """Why, or what is assumed."""


class PricePatches(BaseModel):
    """The data file."""

    model_config = ConfigDict(extra="forbid")

    description: str
    """What the file is for."""
    reviewed: date
    """When a person last checked the file against its sources."""
    peak_days: list[PeakDays]


@cache
def price_patches() -> PricePatches:
    try:
        return PricePatches.model_validate(load_json(FILE))
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ReplayError(f"{data_dir() / FILE}: invalid at `{loc}`: {first['msg']}") from err


def peak_weekdays(provider: str, model_id: str) -> frozenset[int] | None:
    """The weekdays (`date.weekday()` numbers) on which the model's peak prices apply; None
    when the data file does not restrict them (every day, as genai-prices does)."""
    for row in price_patches().peak_days:
        if row.provider == provider and model_id in row.models:
            return frozenset(WEEKDAYS.index(day) for day in row.days)
    return None
