"""The interface every provider simulator implements, and what it returns."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Literal

from replay.cache._rules import RuleBook
from replay.cache._store import CacheStore
from replay.prefix import PrefixDiff
from replay.render import BlockTable, RenderedRequest

Ttl = Literal["5m", "1h"]


@dataclass(frozen=True)
class Breakpoint:
    """A cache breakpoint: an entry is written for the prefix ending at `block`."""

    block: int
    ttl: Ttl = "5m"


@dataclass(frozen=True)
class CacheOutcome:
    """How one request's prompt splits into disjoint buckets under the provider's cache.

    uncached + cache_read + cache_write_5m + cache_write_1h = the prompt's tokens, always.
    """

    uncached: int
    """Tokens billed at the full input rate."""
    cache_read: int
    """Tokens read from a live cache entry."""
    cache_write_5m: int
    """Tokens written with a 5-minute (or the provider's default) lifetime."""
    cache_write_1h: int
    """Tokens written with a 1-hour lifetime."""
    miss_cause: str | None = None
    """Why the request read less than an earlier request had cached for it (None = no miss)."""


@dataclass
class SimRequest:
    """What a simulator gets for one request."""

    request: RenderedRequest
    breakpoints: list[Breakpoint]
    scope: str
    """Cache isolation scope (workspace, organization, prompt_cache_key)."""
    diff: PrefixDiff
    """Prefix diff against the previous request of the same thread."""
    previous: RenderedRequest | None
    """Previous request of the same thread."""
    table: BlockTable
    """Block contents, for token-level comparison inside a differing block."""

    @property
    def lane(self) -> str:
        """The sequential lane of this request: its thread, with a strategy's summarizer calls
        counted in the thread that made them (they run before its next request)."""
        return self.request.thread.split("/")[0]


class CacheSimulator(ABC):
    """One provider's caching rules applied to a stream of requests."""

    provider: str

    def __init__(self, rules: RuleBook, store: CacheStore) -> None:
        self.rules = rules
        self.store = store

    @abstractmethod
    def simulate(self, sim: SimRequest) -> CacheOutcome: ...


def edit_cause(sim: SimRequest) -> str:
    """Name what changed between the previous prompt and this one."""
    prev = sim.previous
    if prev is None:
        return "cold start"
    if prev.model != sim.request.model:
        return f"model switch ({prev.model} → {sim.request.model})"
    where = sim.diff.where
    if where == "tools":
        return "tool definitions changed"
    if where == "system":
        return "system prompt changed"
    if where.startswith("message"):
        return f"prefix edited at {where}"
    if sim.diff.is_break:
        return "prompt shortened"
    return "prefix not cached"
