"""Provider cache rules as dated data (`pricing/cache/<provider>.json`).

Each rule row has a name, an optional model pattern, a value, the date it took effect and its
source. `RuleBook.get(name, model, ts)` returns the value in force for that model at that time:
among the rows whose pattern matches and whose `since` is not after `ts`, the latest `since` wins
(ties: the first row in the file, so specific patterns go first).
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from replay._data import data_dir
from replay._errors import ReplayError


class Rule(BaseModel):
    """One dated rule of a provider's cache mechanics."""

    model_config = ConfigDict(extra="forbid")

    rule: str
    """Rule name, e.g. `min_cacheable_tokens`, `ttl_seconds`."""
    value: Any
    """Its value (numbers as JSON numbers; multipliers as decimal strings)."""
    since: date
    """Date the rule took effect (UTC)."""
    source: str
    """URL (and section) the rule comes from."""
    models: str | None = None
    """Python regex on the model id; absent = every model of the provider."""
    uncertain: bool = False
    """True where the research marked the rule UNCERTAIN: a documented, overridable guess."""
    note: str | None = None
    """Why, or what is assumed."""


class ProviderRules(BaseModel):
    """A provider's rule file."""

    model_config = ConfigDict(extra="forbid")

    provider: str
    """Provider id (genai-prices naming)."""
    description: str = ""
    """What the file covers."""
    reviewed: date
    """When a person last checked the file against its sources."""
    rules: list[Rule] = Field(default_factory=list)
    """The rules, specific model patterns before general ones."""


class RuleBook:
    """Rules of one provider, queried by name, model and time."""

    def __init__(self, rules: ProviderRules, overrides: dict[str, Any] | None = None) -> None:
        self.provider = rules.provider
        self.file = rules
        self.overrides = dict(overrides or {})

    def row(self, name: str, model: str, ts: datetime) -> Rule | None:
        day = ts.date()
        best: Rule | None = None
        for r in self.file.rules:
            if r.rule != name or r.since > day:
                continue
            if r.models is not None and not re.search(r.models, model):
                continue
            if best is None or r.since > best.since:
                best = r
        return best

    def get(self, name: str, model: str, ts: datetime, default: Any = None) -> Any:
        if name in self.overrides:
            return self.overrides[name]
        r = self.row(name, model, ts)
        if r is None:
            if default is not None:
                return default
            raise ReplayError(f"no `{name}` cache rule for {self.provider}/{model} at {ts:%Y-%m-%d}")
        return r.value


def load_rules_file(path: str | Path) -> ProviderRules:
    path = Path(path)
    try:
        return ProviderRules.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError) as err:
        raise ReplayError(f"{path}: cannot read cache rules ({err})") from err
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ReplayError(f"{path}: invalid cache rules at `{loc}`: {first['msg']}") from err


@cache
def builtin_rules(provider: str) -> ProviderRules:
    path = data_dir() / "cache" / f"{provider}.json"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in (data_dir() / "cache").glob("*.json")))
        raise ReplayError(f"no cache rules for provider {provider!r}; known: {known}")
    return load_rules_file(path)


def all_builtin_rules() -> list[ProviderRules]:
    return [builtin_rules(p.stem) for p in sorted((data_dir() / "cache").glob("*.json"))]
