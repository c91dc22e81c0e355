"""Replay results as polars DataFrames: one row per request, one row per strategy.

Column names are the JSON contract (README "Output columns"). Money columns are exact decimals
(polars `Decimal`), rendered as decimal strings in JSON and CSV.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from hashlib import blake2b
from typing import Protocol

import polars as pl

from replay._errors import ReplayError
from replay.cache._base import NO_BREAKPOINT
from replay.engine._replay import RequestRecord
from replay.evidence import HIDDEN_MENTION, STUBBED_READ

MONEY = pl.Decimal(precision=38, scale=18)
"""USD, exact to 1e-18 (a price per million tokens of a few significant digits, per token, is
exact at 12 places; a tiny `--price` or a storage fee by the second needs more)."""

TURN_COLUMNS = [
    "strategy",
    "request_index",
    "request_id",
    "kind",
    "thread",
    "ts",
    "model",
    "prompt_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
    "uncached_tokens",
    "output_tokens",
    "first_mismatch_token",
    "first_mismatch_message",
    "diverged_at",
    "miss_cause",
    "rewrites",
    "over_window",
    "blind_actions",
    "blind_mentions",
    "cost_usd",
    "storage_cost_usd",
    "cache_created_tokens",
]

SUMMARY_COLUMNS = [
    "strategy",
    "requests",
    "prompt_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "uncached_tokens",
    "output_tokens",
    "cost_usd",
    "peak_prompt_tokens",
    "hit_ratio",
    "prefix_breaks",
    "over_window",
    "summarizer_calls",
    "summarizer_cost_usd",
    "misses",
    "blind_actions",
    "blind_mentions",
    "miss_causes",
    "storage_cost_usd",
    "cache_created_tokens",
]


EVIDENCE_COLUMNS = [
    "strategy",
    "request_index",
    "request_id",
    "thread",
    "kind",
    "tool",
    "path",
    "excerpt",
]
"""Columns of the evidence rows: one per blind action or hidden mention (`evidence_frame`)."""


def _evidence_rows(r: RequestRecord) -> list[dict]:
    return [
        {
            "strategy": r.strategy,
            "request_index": a.request_index,
            "request_id": a.request_id,
            "thread": r.thread,
            "kind": a.kind,
            "tool": a.tool or None,
            "path": a.path,
            "excerpt": a.excerpt,
        }
        for a in r.blind_actions
    ]


def evidence_frame(rows: list[dict]) -> pl.DataFrame:
    """What each blind action and hidden mention relied on, one row each (`EVIDENCE_COLUMNS`:
    its kind, the tool called, the file, an excerpt of the hidden text)."""
    schema = {c: pl.Int64 if c == "request_index" else pl.Utf8 for c in EVIDENCE_COLUMNS}
    return pl.DataFrame(rows, schema=schema, orient="row")


def records_evidence(records: Sequence[RequestRecord]) -> pl.DataFrame:
    """`evidence_frame` of kept records."""
    return evidence_frame([row for r in records if r.blind_actions for row in _evidence_rows(r)])


def actions(r: RequestRecord) -> int:
    """The record's blind actions: the calls of its response that relied on hidden text (an
    edit's `stubbed-read` detail and the response's `hidden-mention`s are not more actions)."""
    if not r.blind_actions:
        return 0
    return sum(a.kind not in (HIDDEN_MENTION, STUBBED_READ) for a in r.blind_actions)


def mentions(r: RequestRecord) -> int:
    """The record's `hidden-mention`s: its response's own text naming something only hidden
    text held (not an action: counted apart from `blind_actions`)."""
    return sum(a.kind == HIDDEN_MENTION for a in r.blind_actions) if r.blind_actions else 0


def _turn_row(r: RequestRecord) -> dict:
    o = r.outcome
    return {
        "strategy": r.strategy,
        "request_index": r.request_index,
        "request_id": r.request_id,
        "kind": r.kind,
        "thread": r.thread,
        "ts": r.ts,
        "model": r.model,
        "prompt_tokens": o.prompt,
        "cached_tokens": o.cache_read,
        "cache_write_tokens": o.cache_write_5m + o.cache_write_1h,
        "cache_write_5m_tokens": o.cache_write_5m,
        "cache_write_1h_tokens": o.cache_write_1h,
        "uncached_tokens": o.uncached,
        "output_tokens": r.output_tokens,
        "first_mismatch_token": r.diff.first_mismatch_token,
        "first_mismatch_message": r.diff.message_index,
        "diverged_at": r.diff.where,
        "miss_cause": o.miss_cause,
        "rewrites": "; ".join(f"{e.kind}: {e.detail}" if e.detail else e.kind for e in r.events)
        or None,
        "over_window": r.over_window,
        "blind_actions": actions(r),
        "blind_mentions": mentions(r),
        "cost_usd": r.cost_usd,
        "storage_cost_usd": o.storage_usd,
        "cache_created_tokens": o.created_tokens,
    }


def turns_frame(records: Sequence[RequestRecord]) -> pl.DataFrame:
    """One row per simulated request (summarizer calls included, `kind` tells them apart)."""
    return _turns_from_rows([_turn_row(r) for r in records])


def _turns_from_rows(rows: list[dict]) -> pl.DataFrame:
    schema = {
        "strategy": pl.Utf8,
        "request_index": pl.Int64,
        "request_id": pl.Utf8,
        "kind": pl.Utf8,
        "thread": pl.Utf8,
        "ts": pl.Datetime("us", "UTC"),
        "model": pl.Utf8,
        "prompt_tokens": pl.Int64,
        "cached_tokens": pl.Int64,
        "cache_write_tokens": pl.Int64,
        "cache_write_5m_tokens": pl.Int64,
        "cache_write_1h_tokens": pl.Int64,
        "uncached_tokens": pl.Int64,
        "output_tokens": pl.Int64,
        "first_mismatch_token": pl.Int64,
        "first_mismatch_message": pl.Int64,
        "diverged_at": pl.Utf8,
        "miss_cause": pl.Utf8,
        "rewrites": pl.Utf8,
        "over_window": pl.Boolean,
        "blind_actions": pl.Int64,
        "blind_mentions": pl.Int64,
        "cost_usd": MONEY,
        "storage_cost_usd": MONEY,
        "cache_created_tokens": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


@dataclass
class _Acc:
    requests: int = 0
    prompt: int = 0
    cached: int = 0
    written: int = 0
    uncached: int = 0
    output: int = 0
    cost: Decimal = Decimal(0)
    peak: int = 0
    breaks: int = 0
    over: int = 0
    summarizer_calls: int = 0
    summarizer_cost: Decimal = Decimal(0)
    misses: int = 0
    blind: int = 0
    mentions: int = 0
    causes: dict[str, int] = field(default_factory=dict)
    storage: Decimal = Decimal(0)
    created: int = 0
    unnamed: int = 0
    """Requests that rewrote earlier messages without a rewrite event (a plug-in that returns
    a list): break-even analyses only the rewrites a strategy names."""
    acted: bool = False
    """A request named a rewrite, or the strategy called a summarizer."""
    trace: bytes = b""
    """Digest of every request's thread, index, buckets and cost, in order: two strategies
    with equal traces billed alike at every request (bytes, not `hash`: a worker's table
    is compared with the parent's)."""


def _add(accs: dict[str, _Acc], r: RequestRecord) -> None:
    a = accs.setdefault(r.strategy, _Acc())
    o = r.outcome
    billed = (
        r.kind, r.thread, r.request_index, o.uncached, o.cache_read, o.cache_write_5m,
        o.cache_write_1h, o.created_tokens, r.output_tokens, str(r.cost_usd),
    )
    a.trace = blake2b(a.trace + repr(billed).encode(), digest_size=16).digest()
    a.acted = a.acted or bool(r.events)
    a.prompt += o.prompt
    a.storage += o.storage_usd
    a.created += o.created_tokens
    a.cached += o.cache_read
    a.written += o.cache_write_5m + o.cache_write_1h
    a.uncached += o.uncached
    a.output += r.output_tokens
    a.cost += r.cost_usd
    if r.kind == "summarizer":
        a.acted = True
        a.summarizer_calls += 1
        a.summarizer_cost += r.cost_usd
        # A summary the window could not hold fails in a real harness: counted. Its transcript
        # is left out of the peak, the size of what the agent's requests sent (seed study).
        a.over += int(r.over_window)
        return
    a.requests += 1
    a.peak = max(a.peak, o.prompt)
    a.breaks += int(r.diff.is_break)
    a.unnamed += r.diff.is_break and r.diff.message_index is not None and not r.events
    a.over += int(r.over_window)
    kind = o.miss_kind or (None if o.miss_cause is None else "other")
    if kind not in (None, "cold-start"):
        a.misses += 1
        a.causes[kind] = a.causes.get(kind, 0) + 1
    a.blind += actions(r)
    a.mentions += mentions(r)


def summary_frame(
    records: Sequence[RequestRecord], strategies: Sequence[str] = ()
) -> pl.DataFrame:
    """One row per strategy. Totals include summarizer calls; their share is broken out.
    `strategies` get a row even when no record is theirs (zeros, in that order first): a
    forked session's rows in a batch without the requests it copied may have none left."""
    accs: dict[str, _Acc] = {name: _Acc() for name in strategies}
    for r in records:
        _add(accs, r)
    return _summary_from(accs)


def _summary_from(accs: dict[str, _Acc]) -> pl.DataFrame:
    rows = [
        {
            "strategy": name,
            "requests": a.requests,
            "prompt_tokens": a.prompt,
            "cached_tokens": a.cached,
            "cache_write_tokens": a.written,
            "uncached_tokens": a.uncached,
            "output_tokens": a.output,
            "cost_usd": a.cost,
            "peak_prompt_tokens": a.peak,
            "hit_ratio": a.cached / a.prompt if a.prompt else 0.0,  # rounded where shown, once
            "prefix_breaks": a.breaks,
            "over_window": a.over,
            "summarizer_calls": a.summarizer_calls,
            "summarizer_cost_usd": a.summarizer_cost,
            "misses": a.misses,
            "blind_actions": a.blind,
            "blind_mentions": a.mentions,
            "miss_causes": _causes(a.causes),
            "storage_cost_usd": a.storage,
            "cache_created_tokens": a.created,
        }
        for name, a in accs.items()
    ]
    schema = {
        "strategy": pl.Utf8,
        "requests": pl.Int64,
        "prompt_tokens": pl.Int64,
        "cached_tokens": pl.Int64,
        "cache_write_tokens": pl.Int64,
        "uncached_tokens": pl.Int64,
        "output_tokens": pl.Int64,
        "cost_usd": MONEY,
        "peak_prompt_tokens": pl.Int64,
        "hit_ratio": pl.Float64,
        "prefix_breaks": pl.Int64,
        "over_window": pl.Int64,
        "summarizer_calls": pl.Int64,
        "summarizer_cost_usd": MONEY,
        "misses": pl.Int64,
        "blind_actions": pl.Int64,
        "blind_mentions": pl.Int64,
        "miss_causes": pl.Utf8,
        "storage_cost_usd": MONEY,
        "cache_created_tokens": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def _causes(counts: dict[str, int]) -> str:
    """`kind=count` pairs, most frequent first (kinds: replay.cache.MISS_KINDS)."""
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{kind}={n}" for kind, n in ordered)


class RecordSink(Protocol):
    """Takes a replay's records one strategy at a time, so that they can be dropped after
    (`ResultTables`, the report's document)."""

    def add(self, records: Sequence[RequestRecord]) -> None: ...


@dataclass
class ResultTables:
    """The result frames, built strategy by strategy while a replay streams (`iter_replay`), so
    the records of one strategy can be dropped before the next one runs."""

    per_turn: bool = True
    """Also keep the per-request rows (`turns`)."""
    models: set[str] = field(default_factory=set)
    """Models of every simulated request."""
    providers: set[str] = field(default_factory=set)
    """Providers of every simulated request."""
    routes: set[str] = field(default_factory=set)
    """Cache routes of every simulated request (`CacheOutcome.route`: `anthropic/vertex`…)."""
    estimated_output: bool = True
    """True while every recorded request's output size is a count of the logged response (no
    provider usage)."""
    price_warnings: dict[str, set[int]] = field(default_factory=dict)
    """Each distinct pricing fallback (a rate the price table lacks, billed at another one) →
    the recorded requests (`request_index`) it priced, whichever strategy's copy (or call
    added at it) it priced."""
    no_ttl_choice: dict[str, set[int]] = field(default_factory=dict)
    """Cache route → the recorded requests (`request_index`) whose cache offered the client no
    TTL choice: a forced TTL (`--ttl`) changed nothing there."""
    no_breakpoint: dict[str, set[int]] = field(default_factory=dict)
    """Cache route → the recorded requests (`request_index`) that cached nothing because the
    client profile put no breakpoint on a provider that needs one (`NO_BREAKPOINT`)."""
    no_cache: dict[str, set[int]] = field(default_factory=dict)
    """`provider / model` → the recorded requests simulated without a prompt cache: the cache
    rules in force say `mechanism: none` (a model or a date without prompt caching)."""
    evidence_rows: bool = False
    """Also keep one row per blind action or hidden mention as records are counted
    (`evidence`): an excerpt each, thousands on a long log with `all`, so only on request."""
    _accs: dict[str, _Acc] = field(default_factory=dict, repr=False)
    _evidence: list[dict] = field(default_factory=list, repr=False)
    _turns: list[pl.DataFrame] = field(default_factory=list, repr=False)
    _rows: list[dict] = field(default_factory=list, repr=False)
    """Per-request rows of the strategy being counted (`add_record`)."""

    _records: Sequence[RequestRecord] | None = field(default=None, repr=False)
    """Records kept by the caller (`of`): the per-request rows are built from them on demand."""

    @property
    def unnamed_rewrites(self) -> dict[str, int]:
        """Strategy → requests where it rewrote earlier messages without naming the rewrite
        (no `RewriteEvent`), where there are any."""
        return {name: a.unnamed for name, a in self._accs.items() if a.unnamed}

    @property
    def same_as_baseline(self) -> list[str]:
        """The strategies besides `baseline` (and `recorded`) that billed every request as
        `baseline` did (each bucket, the cost), without naming a rewrite, rewriting earlier
        messages unnamed or calling a summarizer. Empty when `baseline` was not replayed. (The
        trace holds the bill, not the text: a plug-in that rewrites text into as many tokens
        would be listed too; `_api` names built-in strategies only.)"""
        base = self._accs.get("baseline")
        if base is None:
            return []
        return [
            name for name, a in self._accs.items()
            if name not in ("baseline", "recorded")
            and not a.acted and not a.unnamed and a.trace == base.trace
        ]

    @property
    def acted(self) -> list[str]:
        """The strategies that named a rewrite or called a summarizer at some request."""
        return [name for name, a in self._accs.items() if a.acted]

    @property
    def mentions(self) -> dict[str, int]:
        """Strategy → `hidden-mention`s of its responses, where there are any."""
        return {name: a.mentions for name, a in self._accs.items() if a.mentions}

    @classmethod
    def of(cls, records: Sequence[RequestRecord]) -> ResultTables:
        tables = cls(per_turn=False)
        tables.add(records)
        tables.per_turn, tables._records = True, records
        return tables

    def cost(self, strategy: str) -> Decimal | None:
        """What the requests counted for `strategy` cost in all (None: it was not replayed)."""
        acc = self._accs.get(strategy)
        return None if acc is None else acc.cost

    def add(self, records: Sequence[RequestRecord]) -> None:
        """Count one strategy's records."""
        for r in records:
            self.add_record(r)
        self.end_strategy()

    def add_record(self, r: RequestRecord) -> None:
        """Count one record as soon as it is complete (`ReplayConfig.on_record`), so it need not
        be kept; `end_strategy` closes the strategy's per-request rows."""
        _add(self._accs, r)
        self.models.add(r.model)
        self.providers.add(r.provider)
        self.routes.add(r.outcome.route)
        if r.kind == "request" and not r.request.estimated_output:
            self.estimated_output = False
        if r.price_warning:
            self.price_warnings.setdefault(r.price_warning, set()).add(r.request_index)
        if r.kind == "request" and not r.outcome.ttl_choice:
            self.no_ttl_choice.setdefault(r.outcome.route, set()).add(r.request_index)
        if r.kind == "request" and r.outcome.miss_kind == NO_BREAKPOINT:
            self.no_breakpoint.setdefault(r.outcome.route, set()).add(r.request_index)
        if r.kind == "request" and r.outcome.mechanism == "none":
            self.no_cache.setdefault(f"{r.provider} / {r.model}", set()).add(r.request_index)
        if self.evidence_rows and r.blind_actions:
            self._evidence.extend(_evidence_rows(r))
        if self.per_turn:
            self._rows.append(_turn_row(r))

    def merge(self, other: ResultTables) -> None:
        """Count the strategies another table counted (a worker's, `--workers`), after this one's:
        as if their records had been added here. Call it in the order the strategies were
        resolved, since rows keep the order they were counted in; the sets of requests make a
        note count a request once, whichever strategies priced it."""
        self.end_strategy()
        self._accs.update(other._accs)
        self.models |= other.models
        self.providers |= other.providers
        self.routes |= other.routes
        self.estimated_output = self.estimated_output and other.estimated_output
        for into, new in ((self.price_warnings, other.price_warnings),
                          (self.no_ttl_choice, other.no_ttl_choice),
                          (self.no_breakpoint, other.no_breakpoint),
                          (self.no_cache, other.no_cache)):
            for key, requests in new.items():
                into.setdefault(key, set()).update(requests)
        self._evidence.extend(other._evidence)
        other.end_strategy()
        self._turns.extend(other._turns)

    def end_strategy(self) -> None:
        """The rows counted since the last call become one frame of `turns`."""
        if self._rows:
            self._turns.append(_turns_from_rows(self._rows))
            self._rows = []

    def summary(self) -> pl.DataFrame:
        return _summary_from(self._accs)

    def evidence(self) -> pl.DataFrame:
        if self._records is not None:
            return records_evidence(self._records)
        if not self.evidence_rows:
            raise ReplayError("evidence rows were not kept (replay with evidence=True)")
        return evidence_frame(self._evidence)

    def turns(self) -> pl.DataFrame:
        if not self.per_turn:
            raise ReplayError("per-request rows were not kept (replayed with per_turn=False)")
        if self._records is not None:
            return turns_frame(self._records)
        if not self._turns:
            return turns_frame([])
        return pl.concat(self._turns, how="vertical")
