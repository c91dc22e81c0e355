"""The simulated provider cache: entries keyed by scope, model and prefix, with TTL and readiness.

One store is shared by every request replayed under one strategy (main thread, subagents and
summarizer calls alike), so entries written by one are visible to the others when the scope
matches — as on the provider.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class Entry:
    """A cache entry: a prefix the provider holds."""

    tokens: int
    """Length of the cached prefix."""
    ttl: float
    """Lifetime in seconds, counted from the last request that wrote or read it."""
    last_use: datetime
    """Start of the last request that wrote or read it."""
    ready_at: datetime
    """When it becomes readable (the writing response has begun)."""
    writer: str = ""
    """Thread that wrote it. A thread's requests are sequential (each starts after the previous
    response ended), so its own entries are always ready for it: readiness only matters for
    requests running in parallel in other threads."""

    def ready(self, t: datetime, reader: str = "") -> bool:
        return self.ready_at <= t or (bool(reader) and reader == self.writer)

    def live(self, t: datetime, reader: str = "") -> bool:
        return self.ready(t, reader) and (t - self.last_use).total_seconds() <= self.ttl

    def expired(self, t: datetime) -> bool:
        return (t - self.last_use).total_seconds() > self.ttl


@dataclass
class CacheStore:
    """Entries per (scope, model, prefix key); simulators may keep extra per-scope state."""

    entries: dict[tuple[str, str, int], Entry] = field(default_factory=dict)
    extra: dict[tuple[str, str], object] = field(default_factory=dict)

    def get(self, scope: str, model: str, key: int) -> Entry | None:
        return self.entries.get((scope, model, key))

    def put(self, scope: str, model: str, key: int, entry: Entry) -> None:
        old = self.entries.get((scope, model, key))
        if old is not None and old.live(entry.last_use):
            # A re-write of a live entry refreshes it and keeps the longer lifetime.
            old.last_use = entry.last_use
            old.ttl = max(old.ttl, entry.ttl)
            return
        self.entries[(scope, model, key)] = entry
