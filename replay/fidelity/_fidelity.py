"""Fidelity: does the simulator reproduce what the provider actually billed?

Replays the strategy the agent really used (`recorded`: the log's own history, its own
compactions, its client's breakpoints) and compares every request that carries recorded usage
with its simulation: prompt size, cache read, cache write and cost. A what-if is only as
trustworthy as this comparison.

Tolerance for a cache read: within max(2 % of the prompt, 256 tokens), and the strict one of
OpenAI-family logs, 128 tokens (their cached counts come in 128-token steps, so anything looser
hides a wrong breakpoint). The naive rule "read(n+1) = read(n) + write(n)" (one breakpoint moved
to the newest message each call) is scored on the same requests as a baseline the simulator
must match or beat. A read outside its family's tolerance that the simulator gives no cause for
is labelled with what the log cannot explain.

Context the log does not hold is fitted on the same usage first (`replay/engine/_unlogged.py`):
a read that the fit sized from itself (a warm start: the cache held the head before the log) is
flagged `fitted`, not counted as a prediction that came true. Each row also says how many
tokens the fit added at that request (`fitted_residual`: context no strategy can drop) and took
off the texts it sent first (`fitted_scaled`: counted below the tokenizer factor); the summary
sums both, a measure of how much of the bill the log's own texts, at the family factor, leave
to estimates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

import polars as pl

from replay._errors import ReplayError
from replay.cache._base import TTL_EXPIRED
from replay.cache._route import CacheRouter
from replay.engine import ReplayConfig, replay_session
from replay.engine._replay import with_unlogged_context
from replay.engine._results import MONEY
from replay.engine._unlogged import UnloggedContext, read_tolerance
from replay.log import RequestMarker, Session, Usage
from replay.prices import Buckets, Pricer
from replay.tokens import family_for


@dataclass(frozen=True)
class FidelityRow:
    """One recorded request next to its simulation."""

    request_id: str
    request_index: int
    thread: str
    model: str
    recorded_prompt: int
    simulated_prompt: int
    recorded_cache_read: int
    simulated_cache_read: int
    recorded_cache_write: int
    simulated_cache_write: int
    recorded_cost_usd: Decimal
    simulated_cost_usd: Decimal
    miss_cause: str | None
    read_within_tolerance: bool
    read_within_128: bool
    """The cache read is within 128 tokens of the billed one (the OpenAI-family target)."""
    unexplained: str | None
    """For a cache read outside its family's tolerance (128 tokens for OpenAI-family models,
    max(2 %, 256) otherwise) that the simulator gives no cause for: what the log cannot explain
    (a prompt prefix changed outside the log, a retried request, a billed prompt of another
    size than the log shows, retention when the provider read a prefix the rules had expired, a
    stale entry when the provider read what an earlier request cached
    instead of the previous request's write, routing/eviction when it read less than the rules
    allow, a prefix cached before this log when it read more on a thread's first request)."""
    naive_read: int | None
    """Cache read predicted by read(n-1) + write(n-1) of the previous recorded request."""
    price_warning: str | None = None
    """The pricing fallback that priced this request's recorded or simulated cost (a rate the
    price table lacks, billed at another one), if any: for the notes, not a column."""
    fitted: str | None = None
    """Set when the simulated read is not a prediction: an estimate of the unlogged-context fit
    was sized from this very read (a warm start, a transient message, the head's size)."""
    fitted_residual: int = 0
    """Tokens of context the log does not hold that the fit added at this request (estimated
    messages carried by the later requests: no strategy can drop them)."""
    fitted_scaled: int = 0
    """Tokens the fit took off the texts this request sent first (billed below the tokenizer
    factor: their fitted counts go with them wherever a strategy keeps or drops them)."""


_tolerance = read_tolerance

STALE_SLACK = 16
"""Tokens within which a read "is" an earlier request's cache entry (framing jitter)."""

STRICT_TOLERANCE = 128
"""Tokens: OpenAI reports cached tokens in 128-token steps (one step of slack)."""


def _strict_family(model: str) -> bool:
    """Models whose cached counts come in 128-token steps (OpenAI's tokenizer families)."""
    return family_for(model).family.startswith("gpt")


def fidelity_rows(session: Session, config: ReplayConfig | None = None) -> list[FidelityRow]:
    config = config or ReplayConfig()
    pricer = config.pricer or Pricer()
    config.pricer = pricer
    config = with_unlogged_context(session, config)
    fit = UnloggedContext.of(config.unlogged_context)
    residuals, scaled = fit.residuals(), fit.scaled()
    # By position, as the records count them: a lenient read may keep a repeated request_id.
    markers = [(n, m) for n, m in enumerate(session.events) if isinstance(m, RequestMarker)]
    records = [r for r in replay_session(session, ["recorded"], config) if r.kind == "request"]
    rows: list[FidelityRow] = []
    past: dict[str, list[tuple[int, int]]] = {}  # thread → (read, read + write) of each request
    for r in records:
        event_index, marker = markers[r.request_index]
        usage = marker.usage
        if usage is None:
            continue
        rec_write = usage.cache_write_5m_tokens + usage.cache_write_1h_tokens
        o = r.outcome
        recorded_price = pricer.price(
            recorded_buckets(usage),
            model=r.model,
            provider=r.provider,
            ts=r.ts,
            context=marker.price_context,
        )
        recorded_cost = recorded_price.total_usd * o.price_factor  # at the simulated endpoint
        earlier = past.setdefault(r.thread, [])
        off = abs(o.cache_read - usage.cache_read_tokens)
        within = off <= _tolerance(usage.prompt_tokens)
        strict = off <= STRICT_TOLERANCE
        explained = strict if _strict_family(r.model) else within
        sim_prompt = o.uncached + o.cache_read + o.cache_write_5m + o.cache_write_1h
        fitted = _inferred(marker) or _fitted(fit, r.thread, event_index, usage, first=not earlier)
        rows.append(
            FidelityRow(
                request_id=r.request_id,
                request_index=r.request_index,
                thread=r.thread,
                model=r.model,
                recorded_prompt=usage.prompt_tokens,
                simulated_prompt=sim_prompt,
                recorded_cache_read=usage.cache_read_tokens,
                simulated_cache_read=o.cache_read,
                recorded_cache_write=rec_write,
                simulated_cache_write=o.cache_write_5m + o.cache_write_1h,
                recorded_cost_usd=recorded_cost,
                simulated_cost_usd=r.cost_usd,
                miss_cause=o.miss_cause,
                read_within_tolerance=within,
                read_within_128=strict,
                unexplained=None
                if explained
                else _unexplained(
                    o.cache_read, usage, earlier, sim_prompt,
                    getattr(marker, "unlogged_change", None),
                    bool(getattr(marker, "unlogged_attempt", False)),
                    o.miss_kind,
                ),
                naive_read=earlier[-1][1] if earlier else None,
                price_warning=r.price_warning or recorded_price.warning,
                fitted=fitted,
                fitted_residual=residuals.get((r.thread, event_index), 0),
                fitted_scaled=scaled.get((r.thread, event_index), 0),
            )
        )
        earlier.append((usage.cache_read_tokens, usage.cache_read_tokens + rec_write))
    return rows


def recorded_buckets(usage: Usage) -> Buckets:
    """The buckets the provider billed one request in (its usage, already disjoint)."""
    return Buckets(
        uncached=usage.input_tokens,
        cache_read=usage.cache_read_tokens,
        cache_write_5m=usage.cache_write_5m_tokens,
        cache_write_1h=usage.cache_write_1h_tokens,
        output=usage.output_tokens,
    )


@dataclass(frozen=True)
class Bill:
    """What the log's own usage costs: the provider's token counts at replay's prices."""

    requests: int
    """Requests of the log."""
    priced: int
    """Requests among them that carry usage (only those are in `cost_usd`)."""
    cost_usd: Decimal
    """Their usage priced like a simulated request (model, provider, date, price variant)."""
    models: tuple[str, ...]
    """The models the log billed, sorted."""


def bill(session: Session, pricer: Pricer, router: CacheRouter | None = None) -> Bill | None:
    """Price the usage the log recorded, each request at the model and provider the log names
    for it (whatever model a replay forces), or None when no request carries usage. `router`:
    the cache rules of the replay, whose endpoint (Vertex regional: +10%) the bill is priced
    at too."""
    requests = priced = 0
    cost = Decimal(0)
    models: set[str] = set()
    for event, provider, model in session.requests_ran():
        requests += 1
        usage = event.usage
        if usage is None:
            continue
        priced += 1
        models.add(model)
        cost += pricer.price(
            recorded_buckets(usage),
            model=model,
            provider=provider,
            ts=event.ts,
            context=event.price_context,
        ).total_usd * _endpoint_factor(router, provider, model, event.ts)
    if not priced:
        return None
    return Bill(requests, priced, cost, tuple(sorted(models)))


def moved_options(
    session: Session, provider: str | None, model: str | None, pricer: Pricer | None = None
) -> list[str]:
    """`--provider NAME` / `--model NAME` where they name another provider or model than the
    log's requests ran on: an alias of the same (`gemini` for `google`, `claude-sonnet-4.6`)
    moves nothing, so the log's usage is still what the simulation is compared with."""
    header = session.header
    # The requests' own (the header's where they name none): a model the header names and no
    # request ran on is not where the usage was billed.
    ran = {(provider, model) for _, provider, model in session.requests_ran()}
    moved = []
    router = CacheRouter()
    if provider and any(
        _provider_id(router, provider) != _provider_id(router, p) for p, _ in ran
    ):
        moved.append(f"--provider {provider}")
    pricer = pricer or Pricer()
    if model and any(
        _model_id(pricer, model, provider or p, header.ts) != _model_id(pricer, m, p, header.ts)
        for p, m in ran
    ):
        moved.append(f"--model {model}")
    return moved


def _provider_id(router: CacheRouter, provider: str) -> str:
    """A provider as its rule file names it (`gemini` → `google`)."""
    layers = router.layers_for(provider.strip().lower())
    return layers[-1].provider if layers else provider.strip().lower()


def _model_id(pricer: Pricer, model: str, provider: str, ts: datetime) -> str:
    """A model as genai-prices names it (`claude-sonnet-4` → `claude-sonnet-4-20250514`)."""
    try:
        return pricer.price(Buckets(uncached=1), model=model, provider=provider, ts=ts).model_ref
    except ReplayError:
        return model.strip().lower()


def _endpoint_factor(
    router: CacheRouter | None, provider: str, model: str, ts: datetime
) -> Decimal:
    if router is None:
        return Decimal(1)
    try:
        return router.price_factor(provider, model, ts)
    except ReplayError:  # no rules for it: the replay says so where it matters
        return Decimal(1)


def _inferred(marker: RequestMarker | None) -> str | None:
    """An adapter's inference sized from this request's own usage (pi: a restarted process is
    only seen as a re-written head), so its read matches by construction."""
    if getattr(marker, "system_change_inferred", False) is True:
        return f"head re-sent: {getattr(marker, 'system_changed', None)}"
    return None


def _fitted(fit: UnloggedContext, thread: str, event_index: int, usage, first: bool) -> str | None:
    """Which estimate of the unlogged-context fit was sized from this request's own read (its
    simulated read then matches by construction, it is not a prediction)."""
    thread_fit = fit.threads.get(thread)
    read = usage.cache_read_tokens
    if first and thread_fit is not None and thread_fit.warm:
        return (
            f"warm start: {thread_fit.warm:,} tokens of the head were cached before this log "
            "(sized from this read)"
        )
    request_fit = fit.requests.get((thread, event_index))
    if request_fit is not None and request_fit.drop and not request_fit.shrunk:
        return (
            "transient context: an unlogged message of the previous request was not sent again "
            "(found from where this read stops)"
        )
    if thread_fit is not None:
        head = thread_fit.logged + sum(thread_fit.head)
        if read > 0 and abs(read - head) <= _tolerance(usage.prompt_tokens):
            return (
                f"head: the system prompt + tools ({head:,} tokens) end where reads like this "
                "one stop"
            )
    return None


def _unexplained(
    simulated_read: int,
    usage,
    earlier: list[tuple[int, int]],
    simulated_prompt: int,
    change: str | None = None,
    attempt: bool = False,
    miss_kind: str | None = None,
) -> str:
    read = usage.cache_read_tokens
    gap = usage.prompt_tokens - simulated_prompt
    # What the adapter saw happen outside the log (Codex: settings, a lost attempt).
    if change and read < simulated_read:
        return f"prompt prefix changed outside the log: {change}"
    if attempt and read > simulated_read:
        return "retried request: an attempt the log lost had cached this prompt"
    off = abs(read - simulated_read)
    if abs(gap) > STRICT_TOLERANCE and off <= 2 * abs(gap) + STRICT_TOLERANCE:
        # The breakpoints fall elsewhere in a prompt of another size (a read further off than
        # that is a routing/eviction or sharing question, below).
        more = "more" if gap > 0 else "fewer"
        return f"prompt size: the provider billed {abs(gap):,} tokens {more} than the log shows"
    if read > simulated_read and miss_kind == TTL_EXPIRED:
        return (
            "retention: the provider kept the prefix longer than the rule's TTL (idle gap in "
            "the miss cause)"
        )
    if read < simulated_read:
        if earlier and read < earlier[-1][1] - _tolerance(usage.prompt_tokens):
            entries = {earlier[-1][0], *(end for _, end in earlier[:-1])}
            if any(abs(read - x) <= STALE_SLACK for x in entries):
                return (
                    "stale entry: the provider read what an earlier request cached, not the "
                    "previous request's write (not yet visible where this request was served)"
                )
        return "routing/eviction: the provider read less than its rules allow"
    if not earlier:
        return "prefix cached before this log (another session on the same account)"
    return "the provider read more than simulated: prefix shared with a request not in the log"


def _cost_error(rows: Sequence[FidelityRow]) -> float | None:
    """Cost error over `rows` (the requests whose read the log explains: what is left of the
    session's error once routing/eviction and sharing the log cannot see are set aside)."""
    recorded = sum((r.recorded_cost_usd for r in rows), Decimal(0))
    simulated = sum((r.simulated_cost_usd for r in rows), Decimal(0))
    return round(float((simulated - recorded) / recorded), 4) if recorded else None


FIDELITY_SCHEMA = {
    "request_id": pl.Utf8,
    "request_index": pl.Int64,
    "thread": pl.Utf8,
    "model": pl.Utf8,
    "recorded_prompt": pl.Int64,
    "simulated_prompt": pl.Int64,
    "recorded_cache_read": pl.Int64,
    "simulated_cache_read": pl.Int64,
    "recorded_cache_write": pl.Int64,
    "simulated_cache_write": pl.Int64,
    "recorded_cost_usd": MONEY,
    "simulated_cost_usd": MONEY,
    "miss_cause": pl.Utf8,
    "read_within_tolerance": pl.Boolean,
    "read_within_128": pl.Boolean,
    "unexplained": pl.Utf8,
    "naive_read": pl.Int64,
    "fitted": pl.Utf8,
    "fitted_residual": pl.Int64,
    "fitted_scaled": pl.Int64,
}


def fidelity_frame(rows: Sequence[FidelityRow]) -> pl.DataFrame:
    from dataclasses import asdict

    return pl.DataFrame([{k: v for k, v in asdict(r).items() if k in FIDELITY_SCHEMA}
                         for r in rows], schema=FIDELITY_SCHEMA, orient="row")


def fidelity_summary(rows: Sequence[FidelityRow]) -> dict:
    """Headline numbers: read accuracy (simulator vs naive rule) and session cost error."""
    n = len(rows)
    recorded = sum((r.recorded_cost_usd for r in rows), Decimal(0))
    simulated = sum((r.simulated_cost_usd for r in rows), Decimal(0))
    naive_rows = [r for r in rows if r.naive_read is not None]
    naive_ok = sum(
        abs(r.naive_read - r.recorded_cache_read) <= _tolerance(r.recorded_prompt)  # type: ignore[operator]
        for r in naive_rows
    )
    naive_strict = sum(
        abs(r.naive_read - r.recorded_cache_read) <= STRICT_TOLERANCE  # type: ignore[operator]
        for r in naive_rows
    )
    sim_ok_on_naive = sum(r.read_within_tolerance for r in naive_rows)
    predicted = [r for r in rows if r.fitted is None]
    prompt_error = sum(abs(r.simulated_prompt - r.recorded_prompt) for r in rows)
    return {
        "requests": n,
        "cache_read_within_tolerance": round(sum(r.read_within_tolerance for r in rows) / n, 4)
        if n
        else None,
        "naive_rule_within_tolerance": round(naive_ok / len(naive_rows), 4) if naive_rows else None,
        "cache_read_within_128": round(sum(r.read_within_128 for r in rows) / n, 4) if n else None,
        "naive_rule_within_128": round(naive_strict / len(naive_rows), 4) if naive_rows else None,
        "simulator_on_naive_requests": round(sim_ok_on_naive / len(naive_rows), 4)
        if naive_rows
        else None,
        "recorded_cost_usd": recorded,
        "simulated_cost_usd": simulated,
        "cost_error": round(float((simulated - recorded) / recorded), 4) if recorded else None,
        "cost_error_explained": _cost_error([r for r in rows if r.unexplained is None]),
        "mean_abs_prompt_error_tokens": round(prompt_error / n, 1) if n else None,
        "fitted_reads": n - len(predicted),
        "fitted_residual_tokens": sum(r.fitted_residual for r in rows),
        "fitted_scaled_tokens": sum(r.fitted_scaled for r in rows),
        "predicted_reads_within_tolerance": round(
            sum(r.read_within_tolerance for r in predicted) / len(predicted), 4
        )
        if predicted
        else None,
        "unexplained": dict(
            sorted(Counter(r.unexplained.split(":")[0] for r in rows if r.unexplained).items())
        ),
    }
