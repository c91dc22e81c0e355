"""Routing a request to its rules and simulator.

(provider, model) → a rule file (built-in, or a user's file layered over it), a provider variant
(Bedrock and Vertex serve Anthropic's models under Anthropic's file), or a passthrough route
(OpenRouter: the underlying model's provider). The request's date then picks the `mechanism`
rule in force, which names the simulator. Mode variants are chosen per request: `profile`
variants when the client profile asks for them (Gemini cachedContents), `breakpoints` variants
when the client sends cache markers (Qwen explicit).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime
from decimal import Decimal
from functools import cache
from typing import Any

from replay._errors import ReplayError
from replay._model_ids import normalize_model
from replay.cache._base import CacheOutcome, CacheSimulator, SimRequest
from replay.cache._rules import ProviderRules, RuleBook, all_builtin_rules
from replay.cache._store import CacheStore
from replay.cache.anthropic import AnthropicSimulator, endpoint_price_factor
from replay.cache.automatic import AutomaticPrefixSimulator
from replay.cache.deepseek import DeepSeekUnitSimulator
from replay.cache.gemini import GeminiExplicitSimulator
from replay.cache.openai import OpenAIBreakpointSimulator


class NoCacheSimulator(CacheSimulator):
    """A provider (or period) without prompt caching: every token uncached, no miss cause."""

    mechanism = "none"

    def simulate(self, sim: SimRequest) -> CacheOutcome:
        return CacheOutcome(sim.request.total, 0, 0, 0)


MECHANISM_SIMULATORS: dict[str, type[CacheSimulator]] = {
    "explicit-breakpoints": AnthropicSimulator,
    "automatic-prefix": AutomaticPrefixSimulator,
    "openai-breakpoints": OpenAIBreakpointSimulator,
    "prefix-units": DeepSeekUnitSimulator,
    "explicit-context": GeminiExplicitSimulator,
    "none": NoCacheSimulator,
}

@dataclass(frozen=True)
class Route:
    """Where a (provider, model) pair takes its rules from."""

    label: str
    """`anthropic`, `anthropic/bedrock`, `openrouter>openai`…"""
    layers: tuple[ProviderRules, ...]
    """Rule files, user file first."""
    variant: str | None
    """Provider variant (Bedrock, Vertex), if any."""
    rules_model: str
    """Model id normalized for rule patterns."""


class CacheRouter:
    """Routes each request to its provider rules and simulator; one instance per replay run."""

    def __init__(
        self,
        user_rules: ProviderRules | Sequence[ProviderRules] | None = None,
        overrides: Mapping[str, Any] | None = None,
        store: CacheStore | None = None,
    ) -> None:
        if isinstance(user_rules, ProviderRules):
            user_rules = [user_rules]
        self.user_rules = list(user_rules or [])
        self.overrides = dict(overrides or {})
        self.store = store if store is not None else CacheStore()
        builtin = all_builtin_rules()
        self._files: list[tuple[ProviderRules, ...]] = []
        used: set[int] = set()
        for base in builtin:
            mine = [u for u in self.user_rules if base.serves(u.provider)]
            used.update(id(u) for u in mine)
            layers = tuple(mine) if any(u.replace for u in mine) else (*mine, base)
            self._files.append(layers)
        for u in self.user_rules:
            if id(u) not in used:
                self._files.append((u,))
        self._routes: dict[tuple[str, str], Route] = {}
        self._books: dict[tuple[str, str | None], RuleBook] = {}
        self._sims: dict[tuple[str, str | None, str], CacheSimulator] = {}

    # -- routing -----------------------------------------------------------------------------

    def providers(self) -> list[str]:
        return [layers[-1].provider for layers in self._files]

    @property
    def rule_files(self) -> list[tuple[ProviderRules, ...]]:
        """Each provider's rule files, a user's before the built-in one they layer over."""
        return list(self._files)

    def serves(self, provider: str) -> bool:
        """Whether a rule file serves `provider` (id, alias, or a variant's provider). A
        provider with a file of its own routes every model; one served only by a variant
        (`aws`: anthropic's bedrock) routes the models of that variant's file."""
        provider = provider.strip().lower()
        return self.layers_for(provider) is not None or any(
            v.when == "provider" and v.provider == provider
            for layers in self._files
            for f in layers
            for v in f.variants
        )

    def layers_for(self, provider: str) -> tuple[ProviderRules, ...] | None:
        """The rule files of the provider that serves `provider` (id or alias), if any."""
        for layers in self._files:
            if any(f.serves(provider) for f in layers):
                return layers
        return None

    def route(self, provider: str, model: str) -> Route:
        key = (provider, model)
        hit = self._routes.get(key)
        if hit is None:
            hit = self._routes[key] = self._route(provider.strip().lower(), model, 0)
        return hit

    def _route(self, provider: str, model: str, depth: int) -> Route:
        layers = self.layers_for(provider)
        if layers is not None and depth < 3:
            # A user's routes first, then the built-in file's: a layer adds routes, it does
            # not take the others away.
            routes = [p for f in layers for p in f.passthrough]
            for p in routes:
                if re.search(p.models, model, re.IGNORECASE):
                    inner = model.split("/", 1)[1] if "/" in model else model
                    r = self._route(p.to, inner, depth + 1)
                    return replace(r, label=f"{layers[-1].provider}>{r.label}")
            if routes:
                raise ReplayError(
                    f"{provider}: no passthrough route for model {model!r}; routes: "
                    + ", ".join(f"{p.models} → {p.to}" for p in routes)
                )
        normalized = normalize_model(model)
        for cand in self._files:
            for f in cand:
                for v in f.variants:
                    if (
                        v.when == "provider"
                        and v.provider == provider
                        and (v.models is None or re.search(v.models, normalized))
                    ):
                        return Route(f"{cand[-1].provider}/{v.name}", cand, v.name, normalized)
        if layers is not None:
            return Route(layers[-1].provider, layers, None, normalized)
        raise ReplayError(
            f"no cache rules for provider {provider!r} (model {model!r}); known: "
            f"{', '.join(self.providers())}; describe it with --cache-rules FILE "
            "(docs/cache-rules.md)"
        )

    def book(self, route: Route, variant: str | None) -> RuleBook:
        key = (route.label, variant)
        book = self._books.get(key)
        if book is None:
            book = self._books[key] = RuleBook(route.layers, self.overrides, variant)
        return book

    def _mode_variant(self, route: Route, sim: SimRequest) -> str | None:
        variants = [v for f in route.layers for v in f.variants]
        wanted = getattr(sim.profile, "variants", ()) or ()
        for v in variants:
            if v.when == "profile" and v.name in wanted:
                return v.name
        if sim.breakpoints:
            for v in variants:
                if v.when == "breakpoints":
                    return v.name
        return None

    def price_factor(self, provider: str, model: str, ts: datetime) -> Decimal:
        """What the endpoint the rules name adds to every price of a request on `provider` and
        `model` at `ts`, as the simulation applies it (Vertex regional: +10%): the log's own
        usage is billed at the same endpoint."""
        route = self.route(provider, model)
        return endpoint_price_factor(self.book(route, route.variant), route.rules_model, ts)

    # -- simulation --------------------------------------------------------------------------

    def simulate(self, sim: SimRequest, store: CacheStore | None = None) -> CacheOutcome:
        """Simulate `sim` in `store` (default: the router's own store)."""
        store = self.store if store is None else store
        req = sim.request
        route = self.route(req.provider, req.model)
        variant = route.variant or self._mode_variant(route, sim)
        book = self.book(route, variant)
        model, ts = route.rules_model, req.ts
        mechanism = book.get("mechanism", model, ts)
        cls = MECHANISM_SIMULATORS.get(mechanism)
        if cls is None:
            raise ReplayError(f"{route.label}: unknown cache mechanism {mechanism!r}")
        skey = (route.label, variant, mechanism)
        simulator = self._sims.get(skey)
        if simulator is None:
            simulator = self._sims[skey] = cls(book, store)
        simulator.store = store
        label = route.label if variant in (None, route.variant) else f"{route.label}/{variant}"
        scope = f"{label}|{sim.scope}"
        if sim.cache_key and book.get("cache_key_isolates", model, ts, False):
            scope += f"|key={sim.cache_key}"
        scope = sys.intern(scope)  # one string for the keys of every entry the scope holds
        sim = _copy_with(sim, scope=scope, rules_model=model)
        outcome = simulator.simulate(sim)
        return _copy_with(outcome, route=label, mechanism=mechanism,
                          ttl_choice=simulator.ttl_choice(sim))


def _copy_with(obj: Any, **changes: Any) -> Any:
    """`dataclasses.replace(obj, **changes)`, ~1/3 faster (twice per simulated request) for an
    instance whose attributes are its dataclass fields, all set by `__init__`: made through
    `__init__` too, so it shares its keys with the other instances (a copy of the attribute
    dict would not; item 10 of docs/performance.md measured that in memory)."""
    cls, values = type(obj), vars(obj)
    count = _INIT_FIELDS.get(cls)
    if count is None:
        count = _INIT_FIELDS[cls] = sum(f.init for f in fields(cls))
    if len(values) != count:  # an attribute of its own, a field not set by `__init__`
        return replace(obj, **changes)
    return cls(**{**values, **changes})


_INIT_FIELDS: dict[type, int] = {}
"""How many fields `__init__` sets, per dataclass `_copy_with` copied."""


class _BoundRouter:
    """`simulator_for`'s result: a router bound to one store (the pre-router interface)."""

    def __init__(self, router: CacheRouter, store: CacheStore) -> None:
        self.router = router
        self.store = store

    def simulate(self, sim: SimRequest) -> CacheOutcome:
        return self.router.simulate(sim, self.store)


def simulator_for(
    provider: str,
    store: CacheStore,
    rules: ProviderRules | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> _BoundRouter:
    """A simulator for requests in `store` (routing by each request's provider and model).
    `rules` replaces `provider`'s built-in file. A provider that neither a rule file nor a
    provider variant serves is an error at once."""
    user = None
    if rules is not None:
        user = rules.model_copy(update={"replace": True})
    router = CacheRouter(user, overrides, store)
    if not router.serves(provider):  # (a provider variant's, aws, is served for its models)
        router.route(provider, "")  # raises: the providers known, and the way out
    return _BoundRouter(router, store)


@cache
def _builtin_router() -> CacheRouter:
    return CacheRouter()


def builtin_book(provider: str, model: str) -> tuple[RuleBook, str] | None:
    """The built-in rules of (provider, model), routed as its requests are (provider variant,
    passthrough), with the model id normalized for their patterns; None when no rule file serves
    the pair. `replay.prices` reads from them the prices genai-prices lacks."""
    router = _builtin_router()
    try:
        route = router.route(provider, model)
    except ReplayError:
        return None
    return router.book(route, route.variant), route.rules_model
