"""Provider cache rules as dated data (`pricing/cache/<provider>.json`).

A rule file describes one provider: the genai-prices provider ids it serves (`provider`,
`aliases`), its variants (Bedrock and Vertex for Anthropic's models, an explicit mode for Qwen
and Gemini), passthrough routes (OpenRouter) and a list of dated rule rows. Each row has a name
(one of `RULE_TYPES`), an optional model pattern and variant, a value, the date it took effect
and its source; rows the research marked UNCERTAIN carry `uncertain: true`.

`RuleBook.get(name, model, ts)` returns the value in force for that model at that time. Among
the rows whose name, pattern and variant match and whose `since` is not after the request's
UTC date:

1. a row of the active variant beats a row for every variant;
2. then the latest `since` wins;
3. ties go to the first row in the file (so specific patterns go first).

Several files can be layered (a user's `--cache-rules FILE` over the built-in file): the first
layer that has a matching row decides. Single values can be forced with overrides
(`ReplayConfig.rule_overrides`), keyed `name`, `provider.name` or `provider.variant.name`.
Docs: docs/cache-rules.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from replay._data import data_dir
from replay._errors import ReplayError

MECHANISMS = (
    "explicit-breakpoints",
    "automatic-prefix",
    "openai-breakpoints",
    "prefix-units",
    "explicit-context",
    "none",
)
"""Simulation algorithms a `mechanism` rule can name (docs/cache-rules.md, "Mechanisms")."""

_INT, _POS, _NUM, _BOOL, _DEC = "integer", "positive integer", "number", "boolean", "decimal"

RULE_TYPES: dict[str, tuple[str | tuple[str, ...], str]] = {
    # name: (type or allowed strings, meaning)
    "mechanism": (MECHANISMS, "which simulation algorithm applies"),
    "max_breakpoints": (_INT, "cache breakpoints a request may carry (automatic one included)"),
    "automatic_breakpoint": (
        _BOOL,
        "a top-level automatic breakpoint (on the last cacheable block) is accepted",
    ),
    "lookback_positions": (_POS, "positions a read walks back from each breakpoint (itself incl.)"),
    "collapse_tool_runs": (
        _BOOL,
        "a run of consecutive tool_use (or tool_result) blocks counts as one lookback position",
    ),
    "min_cacheable_tokens": (_INT, "shortest prefix that is cached (shorter: silently not cached)"),
    "min_tokens_per_checkpoint": (
        _BOOL,
        "each breakpoint must lie at least the minimum after the previous kept one",
    ),
    "ttl_seconds": (_NUM, "lifetime of an entry since its last use (automatic mechanisms)"),
    "ttl_seconds_5m": (_NUM, "lifetime of a default ('5m') entry since its last use"),
    "ttl_seconds_1h": (_NUM, "lifetime of a '1h' entry since its last use"),
    "ttl_1h_available": (_BOOL, "the 1-hour TTL exists (else 1h breakpoints are written as 5m)"),
    "retention": (("in_memory", "24h"), "OpenAI retention policy in force for the model"),
    "ttl_seconds_in_memory": (_NUM, "idle lifetime under in-memory retention"),
    "ttl_seconds_24h": (_NUM, "typical idle lifetime under 24h retention"),
    "max_lifetime_seconds_in_memory": (_NUM, "hard cap since creation under in-memory retention"),
    "max_lifetime_seconds_24h": (_NUM, "hard cap since creation under 24h retention"),
    "refresh_on_read": (_BOOL, "a read restarts the entry's lifetime"),
    "ready_at": (
        ("response-start", "response-end"),
        "when an entry written by a request becomes readable by other requests",
    ),
    "ready_after_seconds": (
        _NUM,
        "delay after the request start until its entries are readable (time to first token, or "
        "the response duration when unknown)",
    ),
    "granularity_tokens": (_POS, "cached length is rounded down to a multiple of this"),
    "granularity_offset_tokens": (
        _INT,
        "hidden tokens before the first visible one: breakpoints every `granularity_tokens` "
        "counted from there",
    ),
    "bills_writes": (_BOOL, "automatic caching that bills a cache write for the new tail"),
    "caches_response": (
        _BOOL,
        "automatic caching that also keeps the generated response after the prompt (readable "
        "once the next prompt repeats it)",
    ),
    "cache_key_isolates": (
        _BOOL,
        "requests with different prompt_cache_key / conversation ids do not share entries",
    ),
    "strips_thinking": (
        _BOOL,
        "a non-tool_result user turn strips every earlier thinking block from the prompt",
    ),
    "lookup_first_explicit": (_INT, "earliest explicit breakpoints always looked up"),
    "lookup_latest_explicit": (_INT, "latest explicit breakpoints looked up"),
    "lookup_earlier_message_ends": (_INT, "earlier eligible message ends looked up"),
    "max_writes": (_INT, "boundaries written per request (implicit one included)"),
    "unit_interval_tokens": (_POS, "interval of the fixed-size prefix units inside long prompts"),
    "explicit_ttl_seconds": (_NUM, "lifetime of an explicit cachedContents resource"),
    "storage_usd_per_mtok_hour": (_DEC, "storage fee of explicit caches, USD per MTok per hour"),
    "endpoint": (("global", "regional", "multi-region"), "endpoint the requests go to"),
    "regional_price_multiplier": (
        _DEC,
        "price multiplier on regional / multi-region endpoints that genai-prices lacks",
    ),
    "read_multiplier": (_DEC, "cache read price × base input (informational; genai-prices prices)"),
    "write_multiplier": (_DEC, "cache write price × base input (informational)"),
    "write_multiplier_5m": (
        _DEC,
        "5-minute write price × base input (informational; prices 5-minute writes only where "
        "genai-prices has no write price at all and the 1-hour rate comes from these rules)",
    ),
    "write_multiplier_1h": (
        _DEC,
        "1-hour write price × base input (prices 1-hour writes where genai-prices has no 1-hour "
        "rate; built-in files only)",
    ),
    "isolation": (
        ("workspace", "organization", "project", "api-key", "conversation"),
        "unit of cache isolation",
    ),
}


def _check_value(name: str, value: Any) -> str | None:
    """Why `value` is not valid for rule `name` (None when it is)."""
    kind = RULE_TYPES[name][0]
    if isinstance(kind, tuple):
        return None if value in kind else f"must be one of {', '.join(kind)}"
    if kind == _BOOL:
        return None if isinstance(value, bool) else "must be true or false"
    if kind == _INT:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        return None if ok else "must be a non-negative integer"
    if kind == _POS:
        # a step or a walk of zero has no meaning: the simulators would divide by it or read nothing
        ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
        return None if ok else "must be a positive integer"
    if kind == _NUM:
        ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
        return None if ok else "must be a non-negative number"
    if kind == _DEC:
        if not isinstance(value, str):
            return "must be a decimal string such as \"0.1\""
        try:
            ok = Decimal(value).is_finite() and Decimal(value) >= 0
        except InvalidOperation:
            ok = False
        return None if ok else "must be a non-negative decimal string"
    return None


class Rule(BaseModel):
    """One dated rule of a provider's cache mechanics."""

    model_config = ConfigDict(extra="forbid")

    rule: str
    """Rule name, one of `RULE_TYPES` (e.g. `min_cacheable_tokens`, `ttl_seconds_5m`)."""
    value: Any
    """Its value (numbers as JSON numbers; prices and multipliers as decimal strings)."""
    since: date
    """Date the rule took effect (UTC); when only a month or a first sighting is known, the
    first day seen, with `uncertain: true`."""
    source: str
    """URL (and section or archived copy) the rule comes from."""
    models: str | None = None
    """Python regex searched in the normalized model id; absent = every model of the provider."""
    variant: str | None = None
    """Name of the variant (declared in `variants`) the row applies to; absent = all."""
    uncertain: bool = False
    """True where the research marked the rule UNCERTAIN: a documented, overridable guess."""
    note: str | None = None
    """Why, or what is assumed."""


class Variant(BaseModel):
    """A variant of a provider's rules: another provider serving its models (Bedrock, Vertex),
    or a mode a request opts into (Qwen explicit markers, Gemini cachedContents)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """Name used by rule rows (`variant`) and in overrides."""
    when: Literal["provider", "breakpoints", "profile"]
    """`provider`: requests to `provider` for a model matching `models`; `breakpoints`: requests
    whose client sends cache markers; `profile`: client profiles that ask for it by name."""
    provider: str | None = None
    """genai-prices provider id served by this variant (`when: provider`)."""
    models: str | None = None
    """Python regex on the model id (`when: provider`)."""
    description: str = ""
    source: str = ""
    since: date | None = None


class Passthrough(BaseModel):
    """A route of a passthrough provider: models matching `models` follow `to`'s rules."""

    model_config = ConfigDict(extra="forbid")

    models: str
    """Python regex on the model id as sent (e.g. `^anthropic/`)."""
    to: str
    """Provider id whose rules apply (the model id loses its `vendor/` prefix)."""
    source: str = ""
    since: date | None = None


class ProviderRules(BaseModel):
    """A provider's rule file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_ref: str | None = Field(default=None, alias="$schema")
    """Optional path of the JSON Schema, for editors."""
    provider: str
    """Provider id (genai-prices naming where it has one)."""
    aliases: list[str] = Field(default_factory=list)
    """Other provider ids that mean this provider (e.g. `dashscope` for `qwen`)."""
    description: str = ""
    """What the file covers."""
    reviewed: date
    """When a person last checked the file against its sources."""
    replace: bool = False
    """User files only: true = use this file alone; false (default) = its rows win over the
    built-in file's, which still answers every rule this file does not set."""
    models: list[str] = Field(default_factory=list)
    """Model families the file covers (regexes), for `replay providers`."""
    variants: list[Variant] = Field(default_factory=list)
    passthrough: list[Passthrough] = Field(default_factory=list)
    rules: list[Rule] = Field(default_factory=list)
    """The rules, specific model patterns before general ones."""

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> ProviderRules:
        # A user file layered over a built-in one may name the variants that file declares.
        names = {v.name for v in self.variants} | set((info.context or {}).get("variants", ()))
        patterns = [*self.models, *(v.models for v in self.variants if v.models)]
        patterns += [p.models for p in self.passthrough]
        for n, r in enumerate(self.rules):
            where = f"rules[{n}] ({r.rule})"
            if r.rule not in RULE_TYPES:
                known = ", ".join(sorted(RULE_TYPES))
                raise ValueError(f"{where}: unknown rule name; known: {known}")
            why = _check_value(r.rule, r.value)
            if why:
                raise ValueError(f"{where}: value {r.value!r} {why}")
            if r.variant is not None and r.variant not in names:
                raise ValueError(f"{where}: variant {r.variant!r} is not declared in `variants`")
            if r.models:
                patterns.append(r.models)
        for v in self.variants:
            if v.when == "provider" and not v.provider:
                raise ValueError(f"variant {v.name!r}: `when: provider` needs `provider`")
        for p in patterns:
            try:
                re.compile(p)
            except re.error as err:
                raise ValueError(f"bad model pattern {p!r}: {err}") from None
        return self

    def variant(self, name: str | None) -> Variant | None:
        return next((v for v in self.variants if v.name == name), None)

    def serves(self, provider: str) -> bool:
        return provider == self.provider or provider in self.aliases


_MISSING: Any = object()


def utc_date(ts: datetime | date) -> date:
    """The UTC date of a timestamp (naive = UTC, as in genai-prices); a date as it is. Rules
    and prices take effect on UTC dates: 2026-02-19 03:00+05:30 is still 2026-02-18."""
    global _last_day
    if not isinstance(ts, datetime):
        return ts
    # The rules and prices of one request ask for the date of the same timestamp object a few
    # times each (`astimezone` is most of the cost): the last answer is kept.
    if ts is _last_day[0]:
        return _last_day[1]
    day = ts.date() if ts.tzinfo is None else ts.astimezone(UTC).date()
    _last_day = (ts, day)
    return day


_last_day: tuple[datetime | None, date | None] = (None, None)
"""The timestamp `utc_date` was last asked about, and its date."""


def _rank(r: Rule, variant: str | None, order: int) -> tuple:
    return (r.variant is not None and r.variant == variant, r.since, -order)


class RuleBook:
    """Rules of one provider (optionally layered and for one variant), queried by name, model
    and time."""

    def __init__(
        self,
        rules: ProviderRules | Sequence[ProviderRules],
        overrides: Mapping[str, Any] | None = None,
        variant: str | None = None,
    ) -> None:
        layers = [rules] if isinstance(rules, ProviderRules) else list(rules)
        if not layers:
            raise ReplayError("a RuleBook needs at least one rule file")
        self.layers = layers
        self.file = layers[-1]
        """The base (built-in) file."""
        self.provider = self.file.provider
        self.variant = variant
        self.overrides = dict(overrides or {})
        self._memo: dict[tuple[str, str, date], Rule | None] = {}
        self._forced: dict[str, Any] = {}
        """`override` per rule name (simulators ask for a dozen rules per request)."""

    def with_variant(self, variant: str | None) -> RuleBook:
        return RuleBook(self.layers, self.overrides, variant)

    def row(self, name: str, model: str, ts: datetime | date) -> Rule | None:
        day = utc_date(ts)
        key = (name, model, day)
        if key in self._memo:
            return self._memo[key]
        found: Rule | None = None
        for layer in self.layers:
            best, best_rank = None, None
            for order, r in enumerate(layer.rules):
                if r.rule != name or r.since > day:
                    continue
                if r.variant is not None and r.variant != self.variant:
                    continue
                if r.models is not None and not re.search(r.models, model):
                    continue
                rank = _rank(r, self.variant, order)
                if best_rank is None or rank > best_rank:
                    best, best_rank = r, rank
            if best is not None:
                found = best
                break
        self._memo[key] = found
        return found

    def override(self, name: str) -> Any:
        try:
            return self._forced[name]
        except KeyError:
            pass
        forced = _MISSING
        for key in (f"{self.provider}.{self.variant}.{name}", f"{self.provider}.{name}", name):
            if key in self.overrides:
                forced = self.overrides[key]
                if name in RULE_TYPES and (why := _check_value(name, forced)) is not None:
                    raise ReplayError(f"rule_overrides[{key!r}] = {forced!r}: {why}")
                break
        self._forced[name] = forced
        return forced

    def get(self, name: str, model: str, ts: datetime | date, default: Any = _MISSING) -> Any:
        forced = self.override(name)
        if forced is not _MISSING:
            return forced
        r = self.row(name, model, ts)
        if r is None:
            if default is not _MISSING:
                return default
            day = utc_date(ts)
            where = f"{self.provider}{'/' + self.variant if self.variant else ''}"
            raise ReplayError(
                f"no `{name}` cache rule for {where} model {model!r} on {day:%Y-%m-%d}; add it "
                f"with --cache-rules FILE (or, from Python, "
                f"rule_overrides={{'{self.provider}.{name}': VALUE}})"
            )
        return r.value

    def uncertain(self, name: str, model: str, ts: datetime | date) -> bool:
        if self.override(name) is not _MISSING:
            return False
        r = self.row(name, model, ts)
        return bool(r and r.uncertain)


def load_rules_file(path: str | Path, *, builtin: bool = False) -> ProviderRules:
    """A rule file; a user's (`builtin` false) is layered over the built-in file of its
    provider unless it says `replace`, so its rows may name that file's variants."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        context = None if builtin else {"variants": _layered_variants(data)}
        return ProviderRules.model_validate(data, context=context)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        msg = first["msg"].removeprefix("Value error, ")
        raise ReplayError(
            f"{path}: invalid cache rules{f' at `{loc}`' if loc else ''}: {msg}"
        ) from err
    except UnicodeDecodeError as err:
        raise ReplayError(
            f"{path}: cannot read cache rules (expected UTF-8 JSON: {err.reason} at byte "
            f"{err.start})"
        ) from err
    except (OSError, ValueError, RecursionError) as err:  # (JSON errors are ValueErrors)
        raise ReplayError(f"{path}: cannot read cache rules ({err})") from err


def _layered_variants(data: Any) -> set[str]:
    """The variants of the built-in file a user file is layered over."""
    provider = data.get("provider") if isinstance(data, dict) else None
    if not isinstance(provider, str) or data.get("replace"):
        return set()
    try:
        return {v.name for v in builtin_rules(provider).variants}
    except ReplayError:
        return set()


def builtin_rule_files() -> list[Path]:
    """The built-in rule files (`pricing/cache/*.json`, the schema aside), by name."""
    return sorted(p for p in (data_dir() / "cache").glob("*.json") if not p.name.startswith("_"))


@cache
def builtin_rules(provider: str) -> ProviderRules:
    """The built-in file of `provider` (by file name, provider id or alias)."""
    path = data_dir() / "cache" / f"{provider}.json"
    if path.exists() and not path.name.startswith("_"):
        return load_rules_file(path, builtin=True)
    for rules in all_builtin_rules():
        if rules.serves(provider):
            return rules
    known = ", ".join(r.provider for r in all_builtin_rules())
    raise ReplayError(f"no cache rules for provider {provider!r}; known: {known}")


@cache
def _all() -> tuple[ProviderRules, ...]:
    return tuple(load_rules_file(p, builtin=True) for p in builtin_rule_files())


def all_builtin_rules() -> list[ProviderRules]:
    return list(_all())


def json_schema() -> dict[str, Any]:
    """JSON Schema of a rule file (`pricing/cache/_schema.json` is this, written out)."""
    schema = ProviderRules.model_json_schema(by_alias=True)
    rule = schema["$defs"]["Rule"]["properties"]["rule"]
    rule["enum"] = sorted(RULE_TYPES)
    schema["title"] = "replay cache rules"
    schema["description"] = (
        "One provider's prompt-cache mechanics as dated rows (docs/cache-rules.md). Values are "
        "checked per rule name: " + "; ".join(
            f"{k}: {'|'.join(v[0]) if isinstance(v[0], tuple) else v[0]}"
            for k, v in sorted(RULE_TYPES.items())
        )
    )
    return schema


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def rows_in_force(rules: ProviderRules, at: date) -> list[Rule]:
    """The rows in force on `at`: for each (rule, models, variant) series, its latest row whose
    `since` is not after `at`, in file order."""
    latest: dict[tuple, Rule] = {}
    for r in rules.rules:
        if r.since > at:
            continue
        key = (r.rule, r.models, r.variant)
        if key not in latest or r.since > latest[key].since:
            latest[key] = r
    chosen = {id(r) for r in latest.values()}
    return [r for r in rules.rules if id(r) in chosen]
