"""The simulated provider cache: entries keyed by scope, model and prefix, with TTL and readiness.

One store is shared by every request replayed under one strategy (main thread, subagents and
summarizer calls alike), so entries written by one are visible to the others when the scope
matches — as on the provider. Breakpoint mechanisms keep `Entry`s keyed by the chained prefix
key of the block the prefix ends at; automatic mechanisms keep whole prompts (`CachedPrompt`) and
match by longest common prefix. Everything lives in the store, so a deep copy of it is a full
snapshot of the cache (break-even counterfactuals rely on that).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from datetime import datetime
from operator import attrgetter
from typing import Any

import numpy as np


class _Lifetime:
    """How long a cached prefix lives: `ttl` from its last use, capped at `max_lifetime` from
    its first write; live when also `ready` for the reader."""

    __slots__ = ()  # Entry stays slotted
    last_use: datetime
    ttl: float
    created: datetime | None
    max_lifetime: float | None

    def ready(self, t: datetime, reader: str = "") -> bool:
        raise NotImplementedError

    def expired(self, t: datetime) -> bool:
        if (t - self.last_use).total_seconds() > self.ttl:
            return True
        if self.max_lifetime is not None and self.created is not None:
            return (t - self.created).total_seconds() > self.max_lifetime
        return False

    def live(self, t: datetime, reader: str = "") -> bool:
        return self.ready(t, reader) and not self.expired(t)

    def idle(self, t: datetime) -> float:
        return (t - self.last_use).total_seconds()


@dataclass(slots=True)
class Entry(_Lifetime):
    """A cache entry: a prefix the provider holds. Slotted: a strategy's store keeps every
    entry it ever wrote (expired ones name `ttl-expired` misses), thousands on long logs."""

    tokens: int
    """Length of the cached prefix."""
    ttl: float
    """Lifetime in seconds, counted from the last request that wrote or read it."""
    last_use: datetime
    """Start of the last request that wrote or read it."""
    ready_at: datetime
    """When it becomes readable by other threads (the writing response has begun)."""
    writer: str = ""
    """Thread that wrote it. A thread's requests are sequential (each starts after the previous
    response ended), so its own entries are always ready for it: readiness only matters for
    requests running in parallel in other threads."""
    rewriters: tuple[str, ...] = ()
    """The other threads that wrote it since (a re-write by another thread makes it ready for
    that one); a tuple, empty for nearly every entry, rather than a set per entry."""
    created: datetime | None = None
    """First write (for hard lifetime caps)."""
    max_lifetime: float | None = None
    """Hard cap in seconds since `created`, if any."""

    def ready(self, t: datetime, reader: str = "") -> bool:
        if self.ready_at <= t:
            return True
        return bool(reader) and (reader == self.writer or reader in self.rewriters)


@dataclass
class CachedPrompt(_Lifetime):
    """A whole prompt held by an automatic-prefix cache (matched by longest common prefix).

    A thread's older prompts are held as where they part from its latest one (`rebase`): a
    strategy that rewrites the prompt near its end at every request leaves up to `MAX_PROMPTS`
    nearly equal prompts, which held whole weighed ~0.9× of the log (OpenAI, 1,000 requests).
    Read the blocks through `size`, `block_at`, `cum_at`, `ids` and `cums`, which see both
    forms."""

    block_ids: np.ndarray
    """Block ids: all of them, or with an `anchor` those after its first `head`."""
    cum_tokens: np.ndarray
    """Tokens from the prompt's start through each block of `block_ids`."""
    last_use: datetime
    ready_at: datetime
    ttl: float
    writer: str = ""
    created: datetime | None = None
    max_lifetime: float | None = None
    length: int | None = None
    """Usable length when this is a partial unit (DeepSeek units); None = the whole prompt."""
    anchor: CachedPrompt | None = None
    """The prompt whose first `head` blocks are this one's (None: `block_ids` holds them all).
    Only the blocks are shared: timings and lifetime stay this prompt's own."""
    head: int = 0
    """Leading blocks taken from `anchor`."""

    @property
    def size(self) -> int:
        """Number of blocks."""
        return self.head + len(self.block_ids)

    def block_at(self, i: int) -> int:
        if i < self.head:
            return self.anchor.block_at(i)  # type: ignore[union-attr]
        return int(self.block_ids[i - self.head])

    def cum_at(self, i: int) -> int:
        """Tokens through block `i`."""
        if i < self.head:
            return self.anchor.cum_at(i)  # type: ignore[union-attr]
        return int(self.cum_tokens[i - self.head])

    def ids(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Block ids `[start, stop)`: a view of the prompt's own array when they are all its
        own, a new array when some are borrowed from its anchor."""
        return self._slice("block_ids", start, stop)

    def cums(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """`cum_tokens` of blocks `[start, stop)`, as `ids` gives their ids."""
        return self._slice("cum_tokens", start, stop)

    def _slice(self, name: str, start: int, stop: int | None) -> np.ndarray:
        stop = self.size if stop is None else min(stop, self.size)
        own: np.ndarray = getattr(self, name)
        if start >= self.head:
            return own[start - self.head : stop - self.head]
        borrowed = self.anchor._slice(name, start, min(stop, self.head))  # type: ignore[union-attr]
        return np.concatenate((borrowed, own[: max(0, stop - self.head)]))

    def rebase(self, anchor: CachedPrompt, shared: int) -> None:
        """Hold only the blocks after the first `shared`, which this prompt has in common with
        `anchor` (a newer prompt of its thread); the blocks it stands for do not change."""
        if self.anchor is not None and shared == self.head:
            self.anchor = anchor  # the same blocks borrowed, from the newer prompt
            return
        if shared <= 0 and self.anchor is None:
            return  # nothing in common: kept as it is (its arrays may be its lineage's)
        ids, cum = self.ids(shared), self.cums(shared)
        if shared >= self.head:  # views of the arrays held now, which a view would keep alive
            ids, cum = ids.copy(), cum.copy()
        self.block_ids, self.cum_tokens = ids, cum
        self.anchor, self.head = (anchor, shared) if shared > 0 else (None, 0)

    @property
    def total(self) -> int:
        if self.length is not None:
            return self.length
        if len(self.cum_tokens):  # (its own blocks end it)
            return int(self.cum_tokens[-1])
        return self.anchor.cum_at(self.head - 1) if self.head else 0  # type: ignore[union-attr]

    def ready(self, t: datetime, reader: str = "") -> bool:
        return self.ready_at <= t or (bool(reader) and reader == self.writer)

    def remembered(self, t: datetime) -> bool:
        """Still held at `t`, live or not: an expired prompt is kept a while (four TTLs, at
        least a day, since its last use) to name the miss of a request that would have read it,
        whatever other requests came in between."""
        return self.idle(t) <= max(self.ttl * 4, 86400)


_BIT = np.array([1 << k for k in range(8)], dtype=np.uint8)
"""The bit of a length within its byte of `LengthIndex.bits`, by `length % 8`."""


@dataclass
class LengthIndex:
    """The prefix lengths (tokens) of the entries one model has in any scope, searchable for a
    whole prompt at once. An entry can only be the prefix of a prompt ending at a block whose
    cumulative length it has (equal keys mean equal blocks, hence equal lengths), so a walk
    over a prompt's blocks need only visit those blocks, not every block of the prompt.

    A bit per length up to the longest one seen (an eighth of a byte per token: 125 kB for a
    million-token prompt), so that a search costs two gathers per block, whatever the number
    of entries (a binary search per block grew with both, and was the walk's main cost on
    strategies that rewrite the prompt's middle at every request)."""

    bits: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))
    """Bit `length % 8` of byte `length // 8` is set when some entry has that length."""

    def _cover(self, length: int) -> None:
        """Grow `bits` (at least doubling, so growing costs O(1) per length) to hold `length`."""
        need = (length >> 3) + 1
        if need > len(self.bits):
            grown = np.zeros(max(need, 2 * len(self.bits)), dtype=np.uint8)
            grown[: len(self.bits)] = self.bits
            self.bits = grown

    def add(self, tokens: int) -> None:
        self._cover(tokens)
        self.bits[tokens >> 3] |= _BIT[tokens & 7]

    def contains(self, cum: np.ndarray) -> np.ndarray:
        """Mask of the (ascending, non-negative) lengths `cum` that some entry has."""
        if not len(cum):
            return np.zeros(0, dtype=bool)
        self._cover(int(cum[-1]))  # a length past every entry's: a zero bit, not an error
        return (self.bits[cum >> 3] & _BIT[cum & 7]) != 0


_ENTRY_FIELDS = attrgetter(*(f.name for f in fields(Entry)))
_PROMPT_FIELDS = attrgetter(*(f.name for f in fields(CachedPrompt)))


def _copy_prompt(p: CachedPrompt, memo: dict[int, Any]) -> CachedPrompt:
    """A flat copy of `p`; its anchor is copied too (once, through `memo`), so that a snapshot
    shares no prompt with the store it was taken from."""
    block_ids, cum_tokens, *rest, anchor, head = _PROMPT_FIELDS(p)
    if anchor is not None:
        if id(anchor) not in memo:
            memo[id(anchor)] = _copy_prompt(anchor, memo)
        anchor = memo[id(anchor)]
    return CachedPrompt(block_ids.copy(), cum_tokens.copy(), *rest, anchor, head)


@dataclass
class CacheStore:
    """Entries per (scope, model, prefix key); per-(scope, model) prompt lists for automatic
    mechanisms; `extra` for any other per-scope state a simulator keeps."""

    entries: dict[tuple[str, str, int], Entry] = field(default_factory=dict)
    prompts: dict[tuple[str, str], list[CachedPrompt]] = field(default_factory=dict)
    extra: dict[tuple, object] = field(default_factory=dict)
    scopes: dict[str, set[str]] = field(default_factory=dict)
    """Model → scopes that hold entries or prompts for it (to name "different cache scope")."""
    lengths: dict[str, LengthIndex] = field(default_factory=dict)
    """Model → the prefix lengths of its `entries` (a superset once entries are deleted: only
    `put` adds entries, and deleting one leaves its length here)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> CacheStore:
        """A full snapshot (break-even starts each counterfactual from one). The fields of
        entries and prompts are immutable but for a prompt's arrays: each is copied flat, not
        through a generic deep copy of every key, entry and datetime (~40x slower; a store keeps
        every entry written, and break-even copies it before every rewrite). `memo` learns the
        copies, so what `extra` names (the last prompt of a lane) is the same copy."""
        for old in self.entries.values():
            if id(old) not in memo:
                memo[id(old)] = Entry(*_ENTRY_FIELDS(old))
        for prompts in self.prompts.values():
            for p in prompts:
                if id(p) not in memo:
                    memo[id(p)] = _copy_prompt(p, memo)
        new = CacheStore(
            entries={key: memo[id(e)] for key, e in self.entries.items()},
            prompts={key: [memo[id(p)] for p in ps] for key, ps in self.prompts.items()},
            scopes={model: set(scopes) for model, scopes in self.scopes.items()},
            lengths={model: LengthIndex(i.bits.copy()) for model, i in self.lengths.items()},
        )
        new.extra = copy.deepcopy(self.extra, memo)
        return new

    def get(self, scope: str, model: str, key: int) -> Entry | None:
        return self.entries.get((scope, model, key))

    def put(self, scope: str, model: str, key: int, entry: Entry) -> Entry:
        """Write `entry`; a re-write of an entry that has not expired refreshes it instead
        (longer TTL kept, earliest readiness kept). Returns the stored entry. `entry.tokens`
        must be the length of the prefix `key` stands for (`may_hold` relies on it)."""
        key = int(key)
        self.scopes.setdefault(model, set()).add(scope)
        old = self.entries.get((scope, model, key))
        t = entry.last_use
        if old is not None and not old.expired(t):
            old.last_use = max(old.last_use, t)
            old.ttl = max(old.ttl, entry.ttl)
            old.ready_at = min(old.ready_at, entry.ready_at)
            if entry.writer != old.writer and entry.writer not in old.rewriters:
                old.rewriters += (entry.writer,)
            return old
        if entry.created is None:
            entry.created = t
        self.entries[(scope, model, key)] = entry
        index = self.lengths.get(model)
        if index is None:
            index = self.lengths[model] = LengthIndex()
        index.add(entry.tokens)
        return entry

    def may_hold(self, model: str, cum: np.ndarray) -> np.ndarray:
        """Mask of the blocks (given by their ascending cumulative lengths `cum`) whose prefix
        may have an entry for `model` in some scope (False: certainly none)."""
        index = self.lengths.get(model)
        if index is None:
            return np.zeros(len(cum), dtype=bool)
        return index.contains(cum)

    def other_scopes(self, scope: str, model: str) -> list[str]:
        return sorted(s for s in self.scopes.get(model, ()) if s != scope)

    def has_model(self, model: str) -> bool:
        return bool(self.scopes.get(model))

    def prompt_list(self, scope: str, model: str) -> list[CachedPrompt]:
        self.scopes.setdefault(model, set()).add(scope)
        return self.prompts.setdefault((scope, model), [])
