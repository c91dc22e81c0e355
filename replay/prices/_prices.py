"""Price one request's token buckets from genai-prices' bundled snapshot, or a user's `--price`.

genai-prices (`calc_price`) is the reference: `Pricer.price` returns exactly what `calc_price`
returns for the same request, as `Decimal`s, except where replay completes genai-prices' prices
(below). `calc_price` costs about 60 µs, so `Pricer` resolves the model's prices once per (model,
provider, price period), turns them into a small rate card (one flat card per long-context tier
level) and does the arithmetic itself. Each rate card is checked against genai-prices' arithmetic
(`ModelPrice.calc_price`, what `calc_price` runs once it has found the prices) on probe requests
when it is built; a card that disagrees falls back to that arithmetic.

genai-prices semantics kept here (read from the genai-prices 0.2.3 wheel, probed with `calc_price`):
- `input_tokens` is the TOTAL input: uncached + cache read + cache writes.
- A model without a cache-read (or cache-write) price bills those tokens at its input price; a model
  without a 1-hour write price bills 1-hour writes at its (5-minute) write price.
- Tiers are cliffs on the total input: above `tier.start` every token of the unit gets the tier
  rate.
- Prices depend on the request's UTC date (and, for DeepSeek, its UTC time of day).

replay's own price data (`pricing/price_patches.json`, `replay.prices._patches`) corrects what
genai-prices' snapshot gets wrong: DeepSeek's peak prices apply Monday to Friday only (UTC), the
off-peak price all day on weekends; dated rows replace some models' rates (long-context tiers
genai-prices lacks); multiplier rows scale every token rate under a price variant genai-prices
does not know (`{"inference_geo": "us"}`: × 1.1 on Claude 4.6+).

Where genai-prices has no 1-hour write price but replay's cache rules (`pricing/cache/`) give the
provider's 1-hour write multiplier (`write_multiplier_1h`, e.g. 2 × input for Claude on Vertex and
OpenRouter, Kimi K3 on OpenRouter), the 1-hour rate is input × that multiplier: genai-prices'
fallback to the 5-minute rate would bill those writes 37.5 % too low.

Nothing here is ever priced at zero for want of a rate: an unknown model or provider, or a model
without an input (or, for a request with output, output) price, raises `ReplayError` asking for
`--price`.
"""

from __future__ import annotations

import difflib
import fnmatch
import operator
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from copy import copy
from dataclasses import dataclass, fields
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any

import genai_prices
from genai_prices import data_snapshot
from genai_prices import types as gp_types

from replay._data import load_json
from replay._errors import ReplayError
from replay.cache._route import builtin_book
from replay.cache._rules import RuleBook, utc_date
from replay.prices._patches import FILE as PATCH_FILE
from replay.prices._patches import (
    WEEKDAYS,
    PeakDays,
    PriceMultiplier,
    PricePatch,
    multiplier_rules,
    multipliers_for,
    patches_for,
    peak_rule,
)

_MAX_RATE = Decimal(1_000_000)
"""No model costs a dollar a token: a larger `--price` rate is a typo (and its sums would leave
the Decimal and float ranges the results use)."""

PRICE_FORMAT = "MODEL=input:IN,output:OUT[,cache_read:R,cache_write:W,cache_write_1h:W1H]"
"""The `--price` syntax; the numbers are USD per million tokens."""

_MTOK = 1_000_000
_ZERO = Decimal(0)


def _lookup_hint(snapshot: Any, model: str, provider: str) -> str:
    """What to do about a model genai-prices does not list under `provider`: name the
    provider that has it (`--model gpt-5` on a Gemini log), or a close model id (a typo), or
    give its prices."""
    try:
        elsewhere, _ = snapshot.find_provider_model(model, None, None, None)
    except LookupError:
        elsewhere = None
    ids = [
        m.id for p in snapshot.providers if p.id == provider for m in p.models
    ]
    # Bedrock's and Vertex's ids hold the model's own, dated and versioned
    # (`global.anthropic.claude-sonnet-4-5-20250929-v1:0`, `claude-sonnet-4-5@20250929`).
    part = re.compile(rf"(^|[./:]){re.escape(model)}([-@]\d{{8}})?(-v\d+(:\d+)?)?$")
    variants = sorted(m for m in ids if m != model and part.search(m))
    moved = elsewhere is not None and elsewhere.id != provider
    if variants:
        return (
            f"genai-prices lists it at {provider!r} as "
            f"{' or '.join(map(repr, variants[:3]))}: pass --model {variants[0]}"
            + (f" (or --provider {elsewhere.id})" if moved else "")
            + f". Else {_price_hint(model)}"
        )
    if moved:
        return f"genai-prices has it from {elsewhere.id!r}: pass --provider {elsewhere.id}"
    listed = ""
    if model in ids:  # its match rule takes another form of the id
        listed = f"genai-prices lists {model!r} but its rule for it does not match that id; "
    close = [m for m in difflib.get_close_matches(model, ids, n=4, cutoff=0.85) if m != model]
    if close:
        guesses = " or ".join(map(repr, close[:3]))
        return f"{listed}did you mean {guesses}? Else {_price_hint(model)}"
    return listed + _price_hint(model)


def _price_hint(model: str) -> str:
    spec = PRICE_FORMAT.removeprefix("MODEL=")
    return f"pass --price {model}={spec} (USD per million tokens)"


# --------------------------------------------------------------------------------------------------
# Buckets and Price


@dataclass(frozen=True, slots=True)
class Buckets:
    """The disjoint token buckets of ONE request (every prompt token is in exactly one bucket)."""

    uncached: int = 0
    """Prompt tokens neither read from nor written to the cache: billed at the full input rate."""
    cache_read: int = 0
    """Prompt tokens read from the cache (a cache hit)."""
    cache_write_5m: int = 0
    """Prompt tokens written to the cache with the 5-minute (default) lifetime."""
    cache_write_1h: int = 0
    """Prompt tokens written to the cache with the 1-hour lifetime."""
    output: int = 0
    """Generated tokens, reasoning/thinking included."""

    def __post_init__(self) -> None:
        for name in ("uncached", "cache_read", "cache_write_5m", "cache_write_1h", "output"):
            value = getattr(self, name)
            if type(value) is not int:
                if isinstance(value, bool):
                    raise TypeError(f"Buckets.{name} must be an int, not bool")
                value = operator.index(value)  # numpy ints and the like; floats raise TypeError
                object.__setattr__(self, name, value)
            if value < 0:
                raise ValueError(f"Buckets.{name} must be >= 0, got {value}")

    @property
    def prompt(self) -> int:
        """Total input tokens: uncached + cache read + both cache writes."""
        return self.uncached + self.cache_read + self.cache_write_5m + self.cache_write_1h

    @property
    def cache_write(self) -> int:
        """All cache-write tokens (5-minute + 1-hour)."""
        return self.cache_write_5m + self.cache_write_1h

    def __add__(self, other: object) -> Buckets:
        if not isinstance(other, Buckets):
            return NotImplemented
        return Buckets(
            self.uncached + other.uncached,
            self.cache_read + other.cache_read,
            self.cache_write_5m + other.cache_write_5m,
            self.cache_write_1h + other.cache_write_1h,
            self.output + other.output,
        )


@dataclass(frozen=True, slots=True)
class Price:
    """What one request costs, in USD (exact `Decimal`s, never floats)."""

    input_usd: Decimal
    """Every prompt bucket: uncached + cache read + cache writes."""
    output_usd: Decimal
    """Output tokens."""
    total_usd: Decimal
    """input + output (+ a per-request fee on the rare model that has one)."""
    source: str
    """Where the rates came from: e.g. "genai-prices 0.2.5 snapshot" or "override", followed by
    the rates replay added from its own data (e.g. "+ 1h cache-write rate = input × 2.0
    (pricing/cache/anthropic.json)")."""
    model_ref: str
    """The model the rates belong to: genai-prices' model id, or the `--price` model name."""
    warning: str | None = None
    """Set when a non-zero bucket had no rate of its own and was billed at another rate."""


# --------------------------------------------------------------------------------------------------
# --price overrides


@dataclass(frozen=True, slots=True)
class RateOverride:
    """User-given rates, USD per million tokens. Missing cache rates fall back like genai-prices."""

    input: Decimal
    """Uncached input tokens."""
    output: Decimal
    """Output tokens."""
    cache_read: Decimal | None = None
    """Cache reads; None = billed at `input` (with a warning when reads occur)."""
    cache_write: Decimal | None = None
    """5-minute cache writes; None = billed at `input` (with a warning when writes occur)."""
    cache_write_1h: Decimal | None = None
    """1-hour cache writes; None = billed at `cache_write` (with a warning when they occur)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name not in ("input", "output"):
                continue
            if not isinstance(value, Decimal) or not value.is_finite() or value < 0:
                raise ReplayError(
                    f"price override: {f.name} must be a finite non-negative Decimal, got {value!r}"
                )
        if self.cache_write_1h is not None and self.cache_write is None:
            raise ReplayError(
                "price override: cache_write_1h needs cache_write (the 5-minute rate)"
            )


_OVERRIDE_KEYS = ("input", "output", "cache_read", "cache_write", "cache_write_1h")


def parse_price_overrides(texts: Iterable[str]) -> dict[str, RateOverride]:
    """Several `--price` values → overrides by model; a model given twice is refused (which of
    two prices would be meant?), also spelled in another case: names match case-insensitively."""
    out: dict[str, RateOverride] = {}
    given: dict[str, str] = {}  # lowercased name → as given
    for text in texts:
        model, rates = parse_price_override(text)
        first = given.get(model.lower())
        if first is not None:
            same = "" if first == model else f" (as {first!r})"
            raise ReplayError(f"--price {text!r}: model {model!r} is given a price twice{same}")
        given[model.lower()] = model
        out[model] = rates
    return out


def parse_price_override(text: str) -> tuple[str, RateOverride]:
    """Parse `MODEL=input:IN,output:OUT[,cache_read:R,cache_write:W,cache_write_1h:W1H]`.

    Numbers are USD per million tokens (a leading `$` is allowed). MODEL may use shell wildcards
    (`claude-sonnet-4-6*`). Raises `ReplayError` naming what is wrong.
    """

    def bad(why: str) -> ReplayError:
        return ReplayError(
            f"--price {text!r}: {why}; expected {PRICE_FORMAT} (USD per million tokens)"
        )

    model, sep, spec = text.partition("=")
    model = model.strip()
    if not sep:
        raise bad("missing '=' between the model and its rates")
    if not model:
        raise bad("missing model name before '='")
    if not spec.strip():
        raise bad("missing rates after '='")
    rates: dict[str, Decimal] = {}
    for part in spec.split(","):
        key, colon, raw = part.partition(":")
        key = key.strip().lower()
        raw = raw.strip().removeprefix("$")
        if not colon:
            raise bad(f"rate {part.strip()!r} is not KEY:NUMBER")
        if key not in _OVERRIDE_KEYS:
            raise bad(f"unknown rate {key!r} (known: {', '.join(_OVERRIDE_KEYS)})")
        if key in rates:
            raise bad(f"rate {key!r} given twice")
        try:
            value = Decimal(raw)
        except InvalidOperation:
            raise bad(f"{key} {raw!r} is not a number") from None
        if not value.is_finite() or not 0 <= value <= _MAX_RATE:
            raise bad(f"{key} {raw!r} must be a number from 0 to {_MAX_RATE:,} (USD per MTok)")
        rates[key] = value
    missing = [key for key in ("input", "output") if key not in rates]
    if missing:
        raise bad(f"missing {' and '.join(missing)} rate")
    if "cache_write_1h" in rates and "cache_write" not in rates:
        raise bad("cache_write_1h needs cache_write (the 5-minute rate) too")
    return model, RateOverride(**rates)


# --------------------------------------------------------------------------------------------------
# Rate cards


@dataclass(frozen=True, slots=True)
class _Flat:
    """Per-MTok rates at one tier level; None = the unit has no price of its own."""

    input: Decimal
    cache_read: Decimal | None
    cache_write: Decimal | None
    cache_write_1h: Decimal | None
    output: Decimal | None
    request_fee: Decimal  # USD per request, added to the total only (genai-prices `requests`)


class _Card:
    """Rates of one model at one price period: a flat card per long-context tier level."""

    __slots__ = ("thresholds", "levels", "source", "model_ref", "label", "prices", "note", "slow")

    def __init__(
        self,
        thresholds: tuple[int, ...],
        levels: tuple[_Flat, ...],
        *,
        source: str,
        model_ref: str,
        label: str,
        prices: gp_types.ModelPrice | None = None,
    ) -> None:
        # Sorted tier starts: levels[k] applies when the total input > thresholds[k-1].
        self.thresholds = thresholds
        self.levels = levels
        self.source = source
        self.model_ref = model_ref
        self.label = label  # e.g. "'claude-sonnet-4-6' (anthropic)", for messages
        self.prices = prices  # the genai-prices prices it was built from (None: an override)
        self.note: str | None = None  # a warning for every request it prices
        # Set when the card's arithmetic disagreed with genai-prices' on `prices`: price with
        # genai-prices' arithmetic instead.
        self.slow: Callable[[Buckets], tuple[Decimal, ...]] | None = None

    def amounts(self, b: Buckets) -> tuple[Decimal, Decimal, Decimal, str | None]:
        """(input, output, total, warning) by the card's own arithmetic."""
        uncached, read, w5m, w1h, out = (
            b.uncached,
            b.cache_read,
            b.cache_write_5m,
            b.cache_write_1h,
            b.output,
        )
        if self.thresholds:
            flat = self.levels[bisect_left(self.thresholds, uncached + read + w5m + w1h)]
        else:
            flat = self.levels[0]
        warning = None
        if (
            (read and flat.cache_read is None)
            or ((w5m or w1h) and flat.cache_write is None)
            or (w1h and flat.cache_write_1h is None)
        ):
            warning = self._warning(flat, read, w5m, w1h)
        if flat.cache_read is None:
            uncached += read
            read = 0
        if flat.cache_write_1h is None:
            w5m += w1h
            w1h = 0
        if flat.cache_write is None:
            uncached += w5m
            w5m = 0
        # Same operations, in the same Decimal context, as genai-prices' calc_unit_price.
        input_usd = _ZERO
        if uncached:
            input_usd += flat.input * uncached / _MTOK
        if read:
            input_usd += flat.cache_read * read / _MTOK  # type: ignore[operator]
        if w5m:
            input_usd += flat.cache_write * w5m / _MTOK  # type: ignore[operator]
        if w1h:
            input_usd += flat.cache_write_1h * w1h / _MTOK  # type: ignore[operator]
        if out:
            if flat.output is None:
                raise ReplayError(
                    f"no price for model {self.label}: genai-prices has no output-token price; "
                    f"{_price_hint(self.model_ref)}"
                )
            output_usd = flat.output * out / _MTOK
        else:
            output_usd = _ZERO
        total_usd = input_usd + output_usd
        if flat.request_fee:
            total_usd += flat.request_fee
        if self.note:
            warning = self.note if warning is None else f"{self.note}; {warning}"
        return input_usd, output_usd, total_usd, warning

    def _warning(self, flat: _Flat, read: int, w5m: int, w1h: int) -> str:
        """Same text for every request with the same gaps, so callers can count and dedupe."""
        notes = []
        if read and flat.cache_read is None:
            notes.append("no cache-read price, cache reads billed at the input rate")
        if (w5m or w1h) and flat.cache_write is None:
            notes.append("no cache-write price, cache writes billed as plain input")
        elif w1h and flat.cache_write_1h is None:
            notes.append("no 1h cache-write price, 1h writes billed at the 5m write rate")
        return f"{self.label} ({self.source}): " + "; ".join(notes)


def _flat_from_override(rate: RateOverride) -> _Flat:
    return _Flat(
        input=rate.input,
        cache_read=rate.cache_read,
        cache_write=rate.cache_write,
        cache_write_1h=rate.cache_write_1h,
        output=rate.output,
        request_fee=_ZERO,
    )


_PRICE_KEYS = (
    "input_mtok",
    "cache_read_mtok",
    "cache_write_mtok",
    "cache_write_1h_mtok",
    "output_mtok",
)


def _tier_rate(price: Decimal | gp_types.TieredPrices | None, total_input: int) -> Decimal | None:
    """The rate genai-prices' calc_unit_price applies at this total input."""
    if price is None or isinstance(price, Decimal):
        return price
    for tier in reversed(price.tiers):
        if total_input > tier.start:
            return tier.price
    return price.base


def _card_from_model_price(
    model_price: gp_types.ModelPrice, *, source: str, model_ref: str, label: str
) -> _Card:
    values = {key: getattr(model_price, key, None) for key in (*_PRICE_KEYS, "requests_kcount")}
    if values["input_mtok"] is None:
        raise ReplayError(
            f"no price for model {label}: genai-prices has no input-token price for it; "
            f"{_price_hint(model_ref)}"
        )
    thresholds = tuple(
        sorted(
            {
                tier.start
                for value in values.values()
                if isinstance(value, gp_types.TieredPrices)
                for tier in value.tiers
            }
        )
    )
    levels = []
    for total in (0, *(start + 1 for start in thresholds)):
        fee = _tier_rate(values["requests_kcount"], total)
        levels.append(
            _Flat(
                input=_tier_rate(values["input_mtok"], total),  # type: ignore[arg-type]
                cache_read=_tier_rate(values["cache_read_mtok"], total),
                cache_write=_tier_rate(values["cache_write_mtok"], total),
                cache_write_1h=_tier_rate(values["cache_write_1h_mtok"], total),
                output=_tier_rate(values["output_mtok"], total),
                request_fee=_ZERO if fee is None else fee * 1 / 1000,
            )
        )
    return _Card(
        thresholds,
        tuple(levels),
        source=source,
        model_ref=model_ref,
        label=label,
        prices=model_price,
    )


def _scaled(
    price: Decimal | gp_types.TieredPrices, factor: Decimal
) -> Decimal | gp_types.TieredPrices:
    """`price` × `factor`, tier by tier."""
    if isinstance(price, Decimal):
        return price * factor
    tiers = [gp_types.Tier(start=t.start, price=t.price * factor) for t in price.tiers]
    return gp_types.TieredPrices(base=price.base * factor, tiers=tiers)


_WriteMultipliers = tuple[Decimal | None, Decimal | None]
"""The rule files' (5-minute, 1-hour) cache-write multipliers of a model at a date."""


def _write_multipliers(rules: tuple[RuleBook, str] | None, ts: datetime) -> _WriteMultipliers:
    if rules is None:
        return None, None
    book, rules_model = rules
    w5m = book.get("write_multiplier_5m", rules_model, ts, None)
    w1h = book.get("write_multiplier_1h", rules_model, ts, None)
    return (None if w5m is None else Decimal(w5m)), (None if w1h is None else Decimal(w1h))


def _with_1h_write_rate(
    model_price: gp_types.ModelPrice, multipliers: _WriteMultipliers, rule_file: str
) -> tuple[gp_types.ModelPrice, str]:
    """`model_price` with the 1-hour write rate genai-prices lacks = input × the rule file's
    `write_multiplier_1h`, and what was added (for `Price.source`); unchanged, with "", when
    genai-prices has the rate, the rules do not know it, or genai-prices has no cache rate at
    all for the model (Claude 2 on the Claude API: never cached, not priced as if it were)."""
    w5m, w1h = multipliers
    cached = model_price.cache_write_mtok is not None or model_price.cache_read_mtok is not None
    if model_price.cache_write_1h_mtok is not None or w1h is None or not cached:
        return model_price, ""
    if model_price.input_mtok is None:
        return model_price, ""  # the card refuses it
    added = {"cache_write_1h_mtok": _scaled(model_price.input_mtok, w1h)}
    note = f"1h cache-write rate = input × {w1h}"
    if model_price.cache_write_mtok is None:
        # genai-prices prices 1h writes as a part of all writes: they need a write rate too.
        if w5m is None:
            return model_price, ""
        added["cache_write_mtok"] = _scaled(model_price.input_mtok, w5m)
        note = f"cache-write rates = input × {w5m} (5m), × {w1h} (1h)"
    completed = copy(model_price)
    completed.__dict__.update(added)  # as genai-prices resolves its own price variants
    return completed, f" + {note} ({rule_file})"


def _usage(b: Buckets) -> genai_prices.Usage:
    return genai_prices.Usage(
        input_tokens=b.prompt,
        cache_read_tokens=b.cache_read,
        cache_write_tokens=b.cache_write_5m + b.cache_write_1h,
        cache_write_1h_tokens=b.cache_write_1h,
        output_tokens=b.output,
    )


def _probes(card: _Card) -> list[Buckets]:
    """Requests on both sides of every tier cliff, with every bucket non-zero."""
    has_output = all(flat.output is not None for flat in card.levels)
    out = 7 if has_output else 0
    totals = [50]
    for start in card.thresholds:
        totals += [start, start + 1]
    return [
        Buckets(uncached=t - 6, cache_read=3, cache_write_5m=2, cache_write_1h=1, output=out)
        for t in totals
    ]


# --------------------------------------------------------------------------------------------------
# Routes: how to find the card for a (model, provider) at a timestamp


def _off_peak_prices(model_info: gp_types.ModelInfo, ts: datetime) -> gp_types.ModelPrice:
    """What genai-prices' `get_prices` picks at `ts` with its time-of-day prices left out."""
    conditional = model_info.prices
    if isinstance(conditional, gp_types.ModelPrice):
        return conditional
    for cp in reversed(conditional):  # the last active price wins, as in get_prices
        constraint = cp.constraint
        if constraint is None or (
            not isinstance(constraint, gp_types.TimeOfDateConstraint) and constraint.active(ts)
        ):
            return cp.prices
    return conditional[0].prices


def _prices_at(
    model_info: gp_types.ModelInfo,
    ts: datetime,
    peak: PeakDays | None,
    context: PriceContext = (),
) -> tuple[gp_types.ModelPrice, gp_types.ModelPrice, str]:
    """genai-prices' prices of the model at `ts` (in the price variant `context`), with the
    model's peak rule (`peak`): off-peak all day on a UTC weekday its peak prices do not apply,
    and at a peak hour the off-peak price in force that day × the rule's factor (a rule for the
    standard rows: a variant genai-prices prices at other rates is billed as it has it). Also
    returns genai-prices' own object they come from (a stable key) and what replay changed (for
    `Price.source`, "" if nothing)."""
    prices = model_info.get_prices(ts, dict(context) or None)
    # A variant's prices are a new copy at each call: they come from the standard object.
    own = model_info.get_prices(ts) if context else prices
    if peak is None or prices != own:  # no rule, or a variant genai-prices prices: as it has it
        return prices, own, ""
    prices = own  # the rule below tells genai-prices' rows by identity, not a copy of one
    off_peak = _off_peak_prices(model_info, ts)
    if off_peak is prices:
        return prices, prices, ""
    if WEEKDAYS[utc_date(ts).weekday()] not in peak.days:
        days = "/".join(day for day in WEEKDAYS if day not in peak.days)
        return off_peak, off_peak, f" + off-peak price all day on {days} (pricing/{PATCH_FILE})"
    if not _time_of_day(model_info, prices):  # a dated row, not a peak one
        return prices, own, ""
    scaled = _times(off_peak, peak.factor)
    if all(getattr(scaled, unit) == getattr(prices, unit) for unit in _PRICE_KEYS):
        return prices, prices, ""
    return scaled, off_peak, (
        f" + peak price = {peak.factor} × that day's off-peak (pricing/{PATCH_FILE})"
    )


def _time_of_day(model_info: gp_types.ModelInfo, prices: gp_types.ModelPrice) -> bool:
    """Whether `prices` are one of the model's time-of-day (peak) rows."""
    conditional = model_info.prices
    return not isinstance(conditional, gp_types.ModelPrice) and any(
        cp.prices is prices and isinstance(cp.constraint, gp_types.TimeOfDateConstraint)
        for cp in conditional
    )


def _patched(
    model_price: gp_types.ModelPrice, rows: tuple[PricePatch, ...]
) -> tuple[gp_types.ModelPrice, str]:
    """`model_price` with the rates of replay's price patch rows in force (a later row wins), and
    what they are (for `Price.source`, "" if none)."""
    if not rows:
        return model_price, ""
    patched = copy(model_price)
    for row in rows:
        patched.__dict__.update(row.genai_prices())  # as genai-prices applies its price variants
    return patched, f" + {'; '.join(row.what for row in rows)} (pricing/{PATCH_FILE})"


def _multiplied(
    model_price: gp_types.ModelPrice, rows: tuple[PriceMultiplier, ...]
) -> tuple[gp_types.ModelPrice, str]:
    """`model_price` with every token rate × the factors of replay's multiplier rows in force,
    and what they are (for `Price.source`, "" if none)."""
    if not rows:
        return model_price, ""
    scaled = model_price
    for row in rows:
        scaled = _times(scaled, row.factor)
    return scaled, f" + {'; '.join(row.what for row in rows)} (pricing/{PATCH_FILE})"


def _times(model_price: gp_types.ModelPrice, factor: Decimal) -> gp_types.ModelPrice:
    """A copy of `model_price` with every token rate × `factor`, tier by tier."""
    scaled = copy(model_price)
    for unit in _PRICE_KEYS:
        rate = getattr(scaled, unit)
        if rate is not None:
            setattr(scaled, unit, _scaled(rate, factor))
    return scaled


def _multipliers_in_force(
    rows: tuple[PriceMultiplier, ...],
    day: date,
    context: PriceContext,
    variants: tuple[gp_types.PriceVariant, ...],
) -> tuple[PriceMultiplier, ...]:
    """The multiplier rows the request's price context selects on `day`, but for a variant
    genai-prices prices itself (it would be counted twice)."""
    wanted = dict(context)
    priced = {key for v in variants for key in v.when}
    return tuple(
        row
        for row in rows
        if row.in_force(day) and row.selected_by(wanted) and not row.when.keys() <= priced
    )


def _priced_part(context: PriceContext, variants: tuple[gp_types.PriceVariant, ...]) -> str:
    """The entries of the price context genai-prices' variants price, e.g. `speed=fast`."""
    priced = {key for v in variants for key in v.when}
    return ", ".join(f"{k}={v}" for k, v in context if k in priced)


def _variant_note(
    context: PriceContext,
    variants: tuple[gp_types.PriceVariant, ...],
    factors: tuple[PriceMultiplier, ...],
    label: str,
) -> str | None:
    """The note of a price context with entries nothing prices (neither genai-prices' variants
    nor replay's multipliers), with the rules that would have, or None."""
    priced = {key for v in variants for key in v.when} | {k for r in factors for k in r.when}
    missing = [(k, v) for k, v in context if k not in priced]
    if not missing:
        return None
    variant = ", ".join(f"{k}={v}" for k, v in missing)
    used = ", ".join(f"{k}={v}" for k, v in context if k in priced)
    note = f"no {variant} price for {label}, billed at its {used or 'standard'} prices"
    rules = multiplier_rules(frozenset(k for k, _ in missing))
    if rules:
        note += f" ({'; '.join(r.what for r in rules)}, pricing/{PATCH_FILE})"
    return note


_CardKey = tuple[int, int, str, tuple[int, ...], _WriteMultipliers]
"""What a card is built from: id(genai-prices' ModelPrice) of the standard price and of the one
its rates come from (the day's off-peak price at a peak hour), its peak or weekday change, the
ids of the price patch rows, price variants and multiplier rows in force, the rule
multipliers."""


PriceContext = tuple[tuple[str, str], ...]
"""A genai-prices price variant as sorted (key, value) pairs, e.g. (("speed", "fast"),); ()
for the standard prices."""


def _context_key(context: Mapping[str, str] | None) -> PriceContext:
    return tuple(sorted(context.items())) if context else ()


def _variants_in_force(
    model_info: gp_types.ModelInfo, ts: datetime, context: PriceContext
) -> tuple[gp_types.PriceVariant, ...]:
    """genai-prices' price variants of the model that apply to `context` at `ts` (none: the
    variant is billed at the standard prices)."""
    if not context:
        return ()
    wanted = dict(context)
    return tuple(
        v
        for v in model_info.price_variants or ()
        if (v.constraint is None or v.constraint.active(ts))
        and v.when
        and all(wanted.get(key) == value for key, value in v.when.items())
    )


class _Route:
    __slots__ = ("card_at",)

    def __init__(self, card_at: Callable[[datetime], _Card]) -> None:
        self.card_at = card_at


class Pricer:
    """Prices requests; memoizes rate cards per (model, provider, price period).

    `overrides` maps a model name (exact, case-insensitive, or a shell wildcard pattern such as
    `claude-sonnet-4-6*`) to rates; an override wins over genai-prices and ignores the provider.
    """

    def __init__(self, overrides: Mapping[str, RateOverride] | None = None) -> None:
        self._exact: dict[str, RateOverride] = {}
        self._patterns: list[tuple[str, RateOverride]] = []
        for name, rate in (overrides or {}).items():
            if not isinstance(rate, RateOverride):
                raise TypeError(f"override for {name!r} must be a RateOverride, got {rate!r}")
            key = name.strip().lower()
            if key in self._exact or any(key == p for p, _ in self._patterns):
                raise ReplayError(f"price override {name!r}: that model has a price already")
            if any(ch in key for ch in "*?["):
                self._patterns.append((key, rate))
            else:
                self._exact[key] = rate
        self._routes: dict[tuple[str, str, PriceContext], _Route] = {}
        self._snapshot: data_snapshot.DataSnapshot | None = None

    def __getstate__(self) -> dict[str, Any]:
        # The memo holds closures, which do not pickle: a worker process (`--workers`) makes
        # its own from the same overrides.
        return {**self.__dict__, "_routes": {}, "_snapshot": None}

    # -- public ----------------------------------------------------------------------------------

    def price(
        self,
        buckets: Buckets,
        *,
        model: str,
        provider: str,
        ts: datetime,
        context: Mapping[str, str] | None = None,
    ) -> Price:
        """Price one request. Equals genai-prices' `calc_price` for the same usage, model, provider,
        timestamp and price variant (`context`, its `price_context`: e.g. {"speed": "fast"}),
        unless an override applies or replay completes the model's prices (`model_price`) or
        multiplies them (`pricing/price_patches.json` `multipliers`, e.g. {"inference_geo":
        "us"}). A variant neither prices is billed at the standard ones, with a warning.
        Raises `ReplayError` when no rate is known."""
        card = self._card(model, provider, ts, _context_key(context))
        if card.slow is not None:
            input_usd, output_usd, total_usd = card.slow(buckets)
            warning = card.amounts(buckets)[3]  # same missing-rate rules and output check
        else:
            input_usd, output_usd, total_usd, warning = card.amounts(buckets)
        return Price(input_usd, output_usd, total_usd, card.source, card.model_ref, warning)

    def model_price(self, *, model: str, provider: str, ts: datetime) -> gp_types.ModelPrice | None:
        """The genai-prices prices `price` uses for this model, provider and timestamp, with the
        rates replay adds (see `Price.source`); None when an override applies."""
        return self._card(model, provider, ts).prices

    def _card(self, model: str, provider: str, ts: datetime, context: PriceContext = ()) -> _Card:
        snapshot = data_snapshot.get_snapshot()
        if snapshot is not self._snapshot:
            self._routes.clear()
            self._snapshot = snapshot
        key = (model, provider, context)
        route = self._routes.get(key)
        if route is None:
            route = self._routes[key] = self._route(model, provider, snapshot, context)
        return route.card_at(ts)

    def override_for(self, model: str) -> RateOverride | None:
        """The override that applies to `model`, if any."""
        name = self._override_name(model)
        if name is None:
            return None
        return self._exact[name] if name in self._exact else dict(self._patterns)[name]

    def _override_name(self, model: str) -> str | None:
        """The override (as given, lowercased) that applies to `model`: its exact name first,
        else the first wildcard that matches it."""
        key = model.strip().lower()
        if key in self._exact:
            return key
        return next((p for p, _ in self._patterns if fnmatch.fnmatchcase(key, p)), None)

    def has_override(self, model: str) -> bool:
        return self.override_for(model) is not None

    def unused_overrides(self, models: Iterable[str]) -> list[str]:
        """The overrides (as given, lowercased) that match none of `models`: a name the log
        does not use (an alias, a typo) leaves genai-prices' rates in force."""
        keys = {m.strip().lower() for m in models}
        unused = [name for name in self._exact if name not in keys]
        unused += [p for p, _ in self._patterns if not any(fnmatch.fnmatchcase(k, p) for k in keys)]
        return unused

    def shadowed_overrides(self, models: Iterable[str]) -> dict[str, list[str]]:
        """The wildcard overrides that match some of `models` but apply to none of them, each
        with the overrides that price those models instead (an exact name wins over a wildcard,
        an earlier wildcard over a later one): their rates priced nothing either."""
        keys = {m.strip().lower() for m in models}
        applied = {key: self._override_name(key) for key in keys}
        shadowed: dict[str, list[str]] = {}
        for pattern, _ in self._patterns:
            matched = sorted(k for k in keys if fnmatch.fnmatchcase(k, pattern))
            if matched and all(applied[k] != pattern for k in matched):
                shadowed[pattern] = sorted({str(applied[k]) for k in matched})
        return shadowed

    # -- building routes -------------------------------------------------------------------------

    def _route(
        self,
        model: str,
        provider: str,
        snapshot: data_snapshot.DataSnapshot,
        context: PriceContext = (),
    ) -> _Route:
        rate = self.override_for(model)
        if rate is not None:
            card = _Card(
                (),
                (_flat_from_override(rate),),
                source="override",
                model_ref=model,
                label=f"{model!r}",
            )
            if context:  # an override has one set of rates: a variant's are not derived
                variant = ", ".join(f"{k}={v}" for k, v in context)
                card.note = (
                    f"no {variant} price in --price {model}, billed at its rates as given "
                    f"(the log says the request was billed under {variant}: give the rates of "
                    "that variant to price it so)"
                )
            return _Route(lambda ts: card)

        try:
            provider_info, model_info = snapshot.find_provider_model(model, None, provider, None)
        except LookupError as err:
            reason = f"genai-prices {genai_prices.__version__} has no such model ({err})"
            raise ReplayError(
                f"no price for model {model!r} from provider {provider!r}: {reason}; "
                f"{_lookup_hint(snapshot, model, provider)}"
            ) from None
        version = genai_prices.__version__
        source = (
            f"genai-prices {version} snapshot"
            if not snapshot.from_auto_update
            else f"genai-prices {version} auto-update of {snapshot.timestamp:%Y-%m-%d}"
        )
        label = f"{model_info.id!r} ({provider_info.id})"
        rules = builtin_book(provider, model)
        rule_file = f"pricing/cache/{rules[0].provider}.json" if rules else ""
        peak = peak_rule(provider_info.id, model_info.id)
        patches = patches_for(provider_info.id, model_info.id)
        factor_rows = multipliers_for(provider_info.id, model_info.id) if context else ()
        # _CardKey -> (the ModelPrices keyed on, kept alive so their ids stay unique; the card)
        by_prices: dict[_CardKey, tuple[tuple[gp_types.ModelPrice, ...], _Card]] = {}


        def card_for(ts: datetime) -> _Card:
            model_price, origin, changed = _prices_at(model_info, ts, peak, context)
            in_force = _variants_in_force(model_info, ts, context)
            day = utc_date(ts)
            rows = tuple(row for row in patches if row.in_force(day))
            factors = _multipliers_in_force(factor_rows, day, context, in_force)
            multipliers = _write_multipliers(rules, ts)
            # Keyed by genai-prices' own object for the period (a variant's prices are a new
            # copy at each call; the route's variant is fixed).
            standard = model_info.get_prices(ts) if context else origin
            ids = tuple(map(id, (*rows, *in_force, *factors)))
            key = (id(standard), id(origin), changed, ids, multipliers)
            hit = by_prices.get(key)
            if hit is not None:
                return hit[1]
            patched, replaced = _patched(model_price, rows)
            completed, added = _with_1h_write_rate(patched, multipliers, rule_file)
            scaled, multiplied = _multiplied(completed, factors)
            card = _card_from_model_price(
                scaled,
                source=source + (f" ({_priced_part(context, in_force)} prices)" if in_force else "")
                + changed + replaced + added + multiplied,
                model_ref=model_info.id,
                label=label,
            )
            card.note = _variant_note(context, in_force, factors, label)
            _self_check(card, scaled)
            by_prices[key] = ((standard, origin), card)
            return card

        prices = model_info.prices
        # The rule multipliers are dated too: even a model with one price gets a card per day.
        if isinstance(prices, gp_types.ModelPrice) or all(
            cp.constraint is None or isinstance(cp.constraint, gp_types.StartDateConstraint)
            for cp in prices
        ):
            by_date: dict[date, _Card] = {}

            def card_by_date(ts: datetime) -> _Card:
                day = utc_date(ts)
                card = by_date.get(day)
                if card is None:
                    card = by_date[day] = card_for(ts)
                return card

            return _Route(card_by_date)

        return _Route(card_for)  # time-of-day prices (DeepSeek peak/off-peak): resolve each call


def _self_check(card: _Card, model_price: gp_types.ModelPrice) -> None:
    """Compare the card with genai-prices' arithmetic on the prices it was built from (what
    `calc_price` does once it has found them) on probe requests; on any mismatch use that
    arithmetic instead."""
    for probe in _probes(card):
        expected = model_price.calc_price(_usage(probe))
        got = card.amounts(probe)
        if got[:3] != (
            expected["input_price"],
            expected["output_price"],
            expected["total_price"],
        ):
            card.slow = _slow_path(model_price)
            return


def _slow_path(model_price: gp_types.ModelPrice) -> Callable[[Buckets], tuple[Decimal, ...]]:
    def slow(b: Buckets) -> tuple[Decimal, Decimal, Decimal]:
        r = model_price.calc_price(_usage(b))
        return r["input_price"], r["output_price"], r["total_price"]

    return slow


# --------------------------------------------------------------------------------------------------
# Context windows and providers


@cache
def _window_rows() -> tuple[tuple[re.Pattern[str], int], ...]:
    data = load_json("context_windows.json")
    rows = data.get("windows") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        raise ReplayError("pricing/context_windows.json: expected an object with a 'windows' list")
    out = []
    for i, row in enumerate(rows):
        try:
            pattern = re.compile(row["pattern"], re.IGNORECASE)
            tokens = row["tokens"]
            if type(tokens) is not int or tokens <= 0 or not isinstance(row["source"], str):
                raise TypeError("tokens must be a positive int and source a string")
        except (KeyError, TypeError, re.error) as err:
            raise ReplayError(f"pricing/context_windows.json: row {i} is invalid ({err})") from None
        out.append((pattern, tokens))
    return tuple(out)


@cache
def context_window(model: str) -> int:
    """The model's input context window in tokens (first matching row of context_windows.json)."""
    return _window_row(model)[1]


def window_assumed(model: str) -> bool:
    """Whether no row of context_windows.json names `model`'s family: its window is the last
    row's default, an assumption the output says it made."""
    return _window_row(model)[0] == len(_window_rows()) - 1


@cache
def _window_row(model: str) -> tuple[int, int]:
    """(index, tokens) of the first row of context_windows.json matching `model`."""
    for index, (pattern, tokens) in enumerate(_window_rows()):
        if pattern.search(model):
            return index, tokens
    raise ReplayError(
        f"pricing/context_windows.json has no row matching model {model!r} (its last row should "
        "match everything)"
    )


_PROVIDER_GUESSES = (
    (r"claude", "anthropic"),
    (r"^(gpt-|o[1-9]\b|o[1-9]-|codex|chatgpt)", "openai"),
    (r"gemini|gemma", "google"),
    (r"deepseek", "deepseek"),
    (r"grok", "x-ai"),
    (r"kimi|moonshot", "moonshotai"),
    (r"(mi|code|dev|magi)stral|mixtral", "mistral"),
    (r"glm", "zhipuai"),
    (r"minimax", "minimax"),
)


@cache
def provider_for_model(model: str) -> str:
    """Guess the genai-prices provider id serving `model` (anthropic, openai, google, ...).

    genai-prices' own lookup first (a provider whose models match the id, else OpenRouter for
    `vendor/model` ids or AWS for Bedrock ids, else the provider whose name pattern matches the
    id), then a few name rules. Raises `ReplayError` when nothing matches.
    """
    snapshot = data_snapshot.get_snapshot()
    ref = model.strip().lower()
    try:
        return snapshot.find_provider_model(ref, None, None, None)[0].id
    except LookupError:
        pass
    hosts = []
    if "/" in ref:
        hosts.append("openrouter")  # vendor/model ids
    if "anthropic." in ref or "amazon." in ref or "meta." in ref:
        hosts.append("aws")  # Bedrock ids: [us.|eu.|global.]anthropic.claude-...-v1:0
    for host in hosts:
        try:
            return snapshot.find_provider_model(ref, None, host, None)[0].id
        except LookupError:
            pass
    try:
        return snapshot.find_provider(ref, None, None).id
    except LookupError:
        pass
    for pattern, provider in _PROVIDER_GUESSES:
        if re.search(pattern, ref):
            return provider
    raise ReplayError(
        f"cannot tell which provider serves model {model!r}; name the provider, or "
        f"{_price_hint(model)}"
    )
