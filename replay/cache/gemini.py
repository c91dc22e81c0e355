"""Gemini explicit context caching (mechanism `explicit-context`, variant `explicit` of
`pricing/cache/google.json`, chosen by the `gemini-explicit` client profile).

The client creates a `cachedContents` resource holding the prompt up to its first breakpoint
(the profile puts it after the tools and system prompt) and references it from every request:

- creation (no live cache for that prefix, or it expired): a call of its own before the request
  bills the cached tokens once at the plain input rate (`CacheOutcome.created_tokens`, the
  `cache_created_tokens` column, outside the request's buckets), plus **storage = tokens × TTL
  hours × rate** (`storage_usd_per_mtok_hour`), charged up front on that request as
  `CacheOutcome.storage_usd` (the `storage_cost_usd` column); the request then references the
  new cache like any later one;
- every request that references it, the first included: the cached tokens at the cached rate
  ("cached = cachedContent tokens on every referencing request"); the rest uncached.

The TTL (`explicit_ttl_seconds`, default 1 h) runs from creation; reads do not extend it (a
client that updates the TTL is not modelled). Below the model's minimum the cache cannot be
created and every token is uncached. Implicit caching is not simulated on these requests.
"""

from __future__ import annotations

from decimal import Decimal

from replay._errors import ReplayError
from replay.cache._base import (
    CacheOutcome,
    CacheSimulator,
    SimRequest,
    entry_state,
    explain,
    prompt_view,
    walk_entries,
)

_MTOK = Decimal(1_000_000)


class GeminiExplicitSimulator(CacheSimulator):
    provider = "google"
    mechanism = "explicit-context"

    def storage_rate(self, sim: SimRequest) -> Decimal:
        rate = self.rule(sim, "storage_usd_per_mtok_hour", None)
        if rate is None:
            raise ReplayError(
                f"no explicit-cache storage rate for {sim.request.model!r} on "
                f"{sim.request.ts:%Y-%m-%d}; pass a rule override "
                "google.explicit.storage_usd_per_mtok_hour=USD (per million tokens per hour) or "
                "a --cache-rules file"
            )
        return Decimal(str(rate))

    def simulate(self, sim: SimRequest) -> CacheOutcome:
        req, store = sim.request, self.store
        t = req.ts
        view = prompt_view(req)
        total = view.total
        min_len = int(self.rule(sim, "min_cacheable_tokens"))
        marks = sorted(b.block for b in sim.breakpoints if 0 <= b.block < len(view))
        if not marks:
            kind, text = explain(
                sim, 0, None, total=total, no_breakpoint="no cachedContents boundary"
            )
            return CacheOutcome(total, 0, 0, 0, text, kind)
        block = marks[0]
        size = view.tokens(block)
        if size < min_len:
            kind, text = explain(sim, 0, None, total=size, min_len=min_len)
            return CacheOutcome(total, 0, 0, 0, text, kind)

        key = view.keys[block]
        entry = store.get(sim.scope, req.model, key)
        if entry is not None and entry_state(entry, t, sim.lane) is None:
            lost = walk_entries(store, sim, view, size)
            kind, text = explain(sim, size, lost, total=total, min_len=min_len)
            return CacheOutcome(total - size, size, 0, 0, text, kind)

        lost = walk_entries(store, sim, view, 0)
        kind, text = explain(sim, 0, lost, total=total, min_len=min_len)
        ttl = float(self.rule(sim, "explicit_ttl_seconds"))
        storage = Decimal(size) * Decimal(str(ttl)) / Decimal(3600) * self.storage_rate(sim) / _MTOK
        fresh = self.new_entry(sim, size, ttl, self.ready_at(sim))
        fresh.max_lifetime = ttl  # fixed lifetime from creation; reads do not extend it
        if entry is not None:
            del store.entries[(sim.scope, req.model, key)]
        store.put(sim.scope, req.model, key, fresh)
        return CacheOutcome(
            uncached=total - size,
            cache_read=size,
            cache_write_5m=0,
            cache_write_1h=0,
            miss_cause=text,
            miss_kind=kind,
            storage_usd=storage,
            created_tokens=size,
        )
