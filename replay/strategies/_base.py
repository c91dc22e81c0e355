"""The strategy interface and the registry that turns names into strategies.

A strategy is anything called once per request as `strategy(history, ctx) -> View | list[Item]`:
`history` is every model-visible item of the thread so far (full, lossless), `ctx` says where in
the run we are. It may keep state between calls (a class instance, a closure); the engine makes a
fresh instance for every replayed thread.

Names follow `<family>-<param>[-<modifier>]`, e.g. `truncate-500`, `age-truncate-500-keep-3`,
`compact-at-12000-structured`. Each family registers a `StrategySpec` with a regular expression;
the registry parses a name into parameters and builds the strategy.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from replay._errors import ReplayError
from replay.log import ToolDef, Usage
from replay.strategies._view import CacheClass, Item, View


@dataclass
class StrategyContext:
    """What a strategy may know at a request besides the history."""

    request_index: int
    """0-based index of this request in its thread."""
    ts: datetime
    """When the request was sent."""
    model: str
    """Model of the request."""
    context_window: int
    """The model's context window in tokens."""
    count_tokens: Callable[[str], int]
    """Token count of a text for this model (memoized)."""
    system: str = ""
    """System prompt."""
    tools: Sequence[ToolDef] = ()
    """Tool definitions."""
    previous_usage: Usage | None = None
    """Usage of the previous request of this thread as simulated under this strategy (what a
    harness reads from the provider's last response to decide whether to compact)."""
    previous_ts: datetime | None = None
    """Start of the previous request of this thread."""
    logged_summaries: Sequence[Any] = ()
    """Compactions recorded in the log up to now (their summaries can be reused)."""


class Strategy(Protocol):
    def __call__(self, history: Sequence[Item], ctx: StrategyContext) -> View | list[Item]: ...


@dataclass(frozen=True)
class StrategySpec:
    """One family of strategies: how to parse its names and build an instance."""

    family: str
    pattern: str
    """Regex for the full name; named groups are the parameters."""
    build: Callable[..., Strategy]
    """Called with the parsed parameters (ints where they look like ints)."""
    cache_class: CacheClass
    rule: str
    """One-line rule."""
    defaults: dict[str, Any] = field(default_factory=dict)
    canonical: tuple[str, ...] = ()
    """Names this family contributes to `--strategies all`."""
    source: str = ""
    """Where the rule comes from (article, repo, docs)."""


@dataclass
class NamedStrategy:
    """A built strategy with its name and declared cache class."""

    name: str
    spec: StrategySpec
    params: dict[str, Any]

    def instantiate(self) -> Strategy:
        return self.spec.build(**self.params)


_REGISTRY: dict[str, StrategySpec] = {}


def register(spec: StrategySpec) -> StrategySpec:
    _REGISTRY[spec.family] = spec
    return spec


def registered() -> list[StrategySpec]:
    _load_builtin()
    return list(_REGISTRY.values())


def _coerce(value: str | None) -> Any:
    if value is None:
        return None
    return int(value) if re.fullmatch(r"\d+", value) else value


def parse_name(name: str) -> NamedStrategy:
    """Build the strategy a name describes, or raise with the list of known names."""
    _load_builtin()
    for spec in _REGISTRY.values():
        match = re.fullmatch(spec.pattern, name)
        if match:
            params = dict(spec.defaults)
            params.update({k: _coerce(v) for k, v in match.groupdict().items() if v is not None})
            return NamedStrategy(name=name, spec=spec, params=params)
    known = ", ".join(canonical_names())
    raise ReplayError(f"unknown strategy {name!r}; known: {known}")


def canonical_names() -> list[str]:
    """The names `--strategies all` runs, in registry order."""
    return [n for spec in registered() for n in spec.canonical]


def resolve(names: str | Sequence[str | NamedStrategy]) -> list[NamedStrategy]:
    """`all`, a comma-separated string, or a list of names (or built strategies) → built
    strategies, duplicates dropped, order kept."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    expanded: list[str | NamedStrategy] = []
    for n in names:
        expanded.extend(canonical_names() if n == "all" else [n])
    seen: dict[str, NamedStrategy] = {}
    for n in expanded:
        built = n if isinstance(n, NamedStrategy) else parse_name(n)
        seen.setdefault(built.name, built)
    if not seen:
        raise ReplayError("no strategy given; try --strategies all")
    return list(seen.values())


def as_view(result: View | list[Item]) -> View:
    return result if isinstance(result, View) else View(items=list(result))


# Family modules, in the order `all` runs them (importing a module registers its family).
BUILTIN_FAMILIES = ("baseline", "truncate", "age_truncate", "compaction", "sliding")


def _load_builtin() -> None:
    for module in BUILTIN_FAMILIES:
        importlib.import_module(f"replay.strategies.{module}")
