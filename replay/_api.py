"""The public verbs: `load`, `replay`, `whatif`, `schema` (re-exported by `replay`), and
`breakeven` and `fidelity` (by `replay.breakeven` and `replay.fidelity`)."""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import TypeAdapter

from replay._errors import ReplayError
from replay.cache import CacheRouter, ProviderRules, load_rules_file
from replay.engine import ReplayConfig, RequestRecord, summary_frame
from replay.engine._replay import iter_replay, with_unlogged_context
from replay.engine._results import ResultTables
from replay.engine._unlogged import UnloggedContext
from replay.log import Compaction, Event, RequestMarker, Session
from replay.prices import Pricer, RateOverride
from replay.strategies import StrategySpec, resolve

TRAJECTORY_NOTE = (
    "Offline replay keeps the recorded trajectory fixed: every response and tool call is what "
    "the log holds; a strategy only changes what the model would have seen. It cannot tell how "
    "the model would have behaved with that view."
)


@dataclass
class ReplayResult:
    """Replay of one log through one or more strategies."""

    session: Session
    """The log that was replayed."""
    records: list[RequestRecord]
    """One record per simulated request (summarizer calls included); empty when replayed with
    `keep_records=False` or on several workers."""
    notes: list[str] = field(default_factory=list)
    """What a reader must know to trust the numbers (estimates, skipped lines…)."""
    tables: ResultTables | None = field(default=None, repr=False)
    """The frames, accumulated while replaying (None: computed from `records`)."""
    unlogged_context: UnloggedContext | None = field(default=None, repr=False)
    """What the replay fitted as context the log does not hold (pass it on to `breakeven` so
    the same log is not fitted twice)."""

    def __post_init__(self) -> None:
        if self.tables is None:
            self.tables = ResultTables.of(self.records)

    @cached_property
    def summary(self) -> pl.DataFrame:
        """One row per strategy (columns: README "Output columns")."""
        assert self.tables is not None
        return self.tables.summary()

    @cached_property
    def turns(self) -> pl.DataFrame:
        """One row per request per strategy."""
        assert self.tables is not None
        return self.tables.turns()

    @cached_property
    def evidence(self) -> pl.DataFrame:
        """One row per blind action or hidden mention: what it relied on (columns:
        `replay.engine.EVIDENCE_COLUMNS`). From the records, or, when they were not kept, from
        the rows a replay with `evidence=True` kept."""
        from replay.engine._results import records_evidence

        if self.records:
            return records_evidence(self.records)
        assert self.tables is not None
        return self.tables.evidence()

    @property
    def recommendation(self) -> dict[str, Any] | None:
        """The cheapest strategy without evidence-loss flags or prompts over the window, and
        its saving against `recorded` (else `baseline`): `recommendation(self.summary)`."""
        return recommendation(self.summary)

    @property
    def recommendation_line(self) -> str:
        """That recommendation as `replay run` prints it under its table."""
        return recommendation_line(self.recommendation, self.summary)

    @property
    def models(self) -> list[str]:
        """Every model a simulated request used, sorted."""
        assert self.tables is not None
        return sorted(self.tables.models)

    @property
    def providers(self) -> list[str]:
        """Every provider a simulated request used, sorted."""
        assert self.tables is not None
        return sorted(self.tables.providers)


def load(path: str | Path, *, strict: bool = False) -> Session:
    """Read a log in any supported format, recognised by its content: the native `replay-log`,
    a Claude Code transcript (file or session directory), a Codex rollout, a pi session or an
    opencode export (see docs/adapters.md). `path` may be a pipe or a FIFO, or `-` for standard
    input: read once, through a temporary copy. Lenient by default: malformed lines are skipped
    and counted in `Session.skipped`; `strict=True` stops at the first one with a
    `LogFormatError`."""
    from replay.adapters import read_any

    return read_any(path, strict=strict)


def replay(
    log: str | Path | Session,
    strategies: str | Sequence[str] = "all",
    *,
    provider: str | None = None,
    model: str | None = None,
    client: str | None = None,
    cache_rules: str | Path | None = None,
    rule_overrides: Mapping[str, Any] | None = None,
    prices: Mapping[str, RateOverride] | None = None,
    ttl: str | None = None,
    context_window: int | None = None,
    strict: bool = False,
    keep_views: bool = False,
    keep_records: bool = True,
    per_turn: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
    evidence: bool = False,
    workers: int = 1,
) -> ReplayResult:
    """Replay a log through strategies and price every request under the provider's cache.

    `keep_records=False` keeps only the result frames, built one strategy at a time (memory:
    the log plus one strategy's records); `per_turn=False` also skips the per-request rows, and
    `evidence=True` keeps the evidence rows (`ReplayResult.evidence`) all the same.
    `progress(strategy, done, total)` is called before each strategy (progress bars).
    `context_window`: the window (tokens) strategies fit prompts into and `over_window` counts
    against, on every model; None: each model's own (`pricing/context_windows.json`).

    `workers=N` (N > 1) replays the strategies on N processes, each holding the log: the same
    frames and notes, sooner, but no records (they stay in the workers, as with
    `keep_records=False`; the evidence rows are kept) and `progress` is called as strategies
    complete. A plug-in reaches the workers from its file (`load_strategy_file`) or package, or,
    registered by the calling program, pickled: its build function must then be defined at the
    top level of a module (a closure or a lambda is refused, naming the strategy). One strategy
    is replayed in this process (nothing would run beside it), with the same result."""
    several = _several(workers)
    session = log if isinstance(log, Session) else load(log, strict=strict)
    count = len(resolve(strategies))
    if several and count == 1:
        # Nothing to run side by side: one process, with what workers would give back.
        several, keep_records, evidence = False, False, evidence or keep_records
    config = _config(provider, model, client, cache_rules, rule_overrides, prices, ttl,
                     context_window)
    config.keep_views = keep_views
    config.keep_blocks = keep_records  # nothing reads the block arrays of dropped records
    config.progress = progress
    config.pricer = config.pricer or Pricer()
    # Fitted here, named on the progress bar, and handed back in the result.
    config = with_unlogged_context(session, config, count)
    if several:
        return _replay_on_workers(session, strategies, config, workers, per_turn,
                                  evidence or keep_records)
    tables = ResultTables(per_turn=per_turn, evidence_rows=evidence and not keep_records)
    records: list[RequestRecord] = []
    if not keep_records:  # each record counted as soon as it is complete, never kept
        config.on_record = tables.add_record
    for _named, run_records in iter_replay(session, strategies, config):
        tables.add(run_records)
        if keep_records:
            records.extend(run_records)
        del run_records  # not held while the next strategy runs
    return ReplayResult(
        session=session,
        records=records,
        notes=_notes(session, tables, config),
        tables=tables,
        unlogged_context=config.unlogged_context,
    )


def _is_count(value: object, least: int) -> bool:
    """Whether `value` is a whole number (an int, not a bool) ≥ `least`."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _several(workers: int) -> bool:
    """Whether `workers` asks for worker processes (refused unless a whole number ≥ 1)."""
    if not _is_count(workers, 1):
        raise ReplayError(f"workers must be a whole number of processes ≥ 1, got {workers!r}")
    return workers > 1


def _replay_on_workers(
    session: Session,
    strategies: str | Sequence[str],
    config: ReplayConfig,
    workers: int,
    per_turn: bool,
    evidence: bool,
) -> ReplayResult:
    """`replay` with `workers` processes: their rows merged in the strategies' order."""
    from replay.engine._parallel import replay_parts

    config.keep_views = config.keep_blocks = False  # no record comes back
    tables = ResultTables(per_turn=per_turn, evidence_rows=evidence)
    for part in replay_parts(session, strategies, config, workers, per_turn, evidence):
        tables.merge(part.tables)
    return ReplayResult(
        session=session,
        records=[],
        notes=_notes(session, tables, config),
        tables=tables,
        unlogged_context=config.unlogged_context,
    )


def _config(
    provider: str | None,
    model: str | None,
    client: str | None,
    cache_rules: str | Path | None,
    rule_overrides: Mapping[str, Any] | None,
    prices: Mapping[str, RateOverride] | None,
    ttl: str | None = None,
    context_window: int | None = None,
) -> ReplayConfig:
    if context_window is not None and not _is_count(context_window, 1):
        raise ReplayError(f"context_window must be a number of tokens ≥ 1, got {context_window!r}")
    return ReplayConfig(
        provider=provider,
        model=model,
        context_window=context_window,
        client=client,
        cache_rules=load_rules_file(cache_rules) if cache_rules else None,
        rule_overrides=dict(rule_overrides or {}),
        pricer=Pricer(dict(prices or {})),
        ttl=ttl,
    )


def recommendation(summary: pl.DataFrame) -> dict[str, Any] | None:
    """The cheapest strategy with no evidence-loss flag and no prompt over the model's context
    window (such a request would have failed), and what it saves against what the agent did
    (`recorded` when replayed, else `baseline`). A strategy that only ties with the reference
    saves nothing: the reference wins ties, then names in order."""
    if summary.is_empty():
        return None
    names = summary["strategy"].to_list()
    reference = next((n for n in ("recorded", "baseline") if n in names), None)
    if reference is None:
        return None
    safe = summary.filter(pl.col("blind_actions") == 0)
    if "over_window" in summary.columns:
        safe = safe.filter(pl.col("over_window") == 0)
    if safe.is_empty():
        return None
    safe = safe.with_columns(_other=pl.col("strategy") != reference).sort(
        ["cost_usd", "_other", "strategy"]
    )
    best = safe.row(0, named=True)
    ref_cost = summary.filter(pl.col("strategy") == reference)["cost_usd"][0]
    saving = ref_cost - best["cost_usd"]
    return {
        "strategy": best["strategy"],
        "cost_usd": best["cost_usd"],
        "reference": reference,
        "reference_cost_usd": ref_cost,
        "saving_usd": saving,
        "saving_ratio": round(float(saving / ref_cost), 4) if ref_cost else 0.0,
        # False: no unflagged strategy costs less than the reference (the reference may be
        # flagged itself); `strategy` is then only the cheapest unflagged one, not advice.
        "beats_reference": saving > 0,
    }


def recommendation_line(rec: dict[str, Any] | None, summary: pl.DataFrame | None = None) -> str:
    if rec is None:
        names = [] if summary is None else summary["strategy"].to_list()
        if summary is not None and not {"recorded", "baseline"} & set(names):
            return "No recommendation: add `recorded` or `baseline` to compare against."
        line = "No strategy without evidence-loss flags or prompts over the window to recommend."
        reference = next((n for n in ("recorded", "baseline") if n in names), None)
        flagged = 0 if summary is None or reference is None else int(
            summary.filter(pl.col("strategy") == reference)["blind_actions"][0]
        )
        if flagged:  # the agent's own compactions hid text it used: zero is no fair bar
            line += (
                f" `{reference}` itself has {flagged:,} blind action(s): compare each "
                "strategy's `blind_actions` with that count."
            )
        return line
    from replay.report._money import usd

    if not rec["beats_reference"]:
        return (
            f"Cheapest strategy without evidence-loss flags: {rec['strategy']} "
            f"({usd(rec['cost_usd'])}); no strategy without flags beats {rec['reference']} "
            f"({usd(rec['reference_cost_usd'])}) on this log."
        )
    return (
        f"Cheapest strategy without evidence-loss flags: {rec['strategy']} at "
        f"{usd(rec['cost_usd'])}, saving {usd(rec['saving_usd'])} "
        f"({rec['saving_ratio']:.1%}) vs {rec['reference']} ({usd(rec['reference_cost_usd'])})."
    )


def breakeven(
    log: str | Path | Session,
    strategies: str | Sequence[str] = "all",
    *,
    provider: str | None = None,
    model: str | None = None,
    client: str | None = None,
    cache_rules: str | Path | None = None,
    rule_overrides: Mapping[str, Any] | None = None,
    prices: Mapping[str, RateOverride] | None = None,
    ttl: str | None = None,
    context_window: int | None = None,
    strict: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    unlogged_context: UnloggedContext | None = None,
    notes: list[str] | None = None,
    horizon: int | None = None,
    workers: int = 1,
) -> pl.DataFrame:
    """One row per rewrite event of each strategy: closed-form and simulated break-even.

    `unlogged_context`: what a `replay` of the same log with the same options fitted
    (`ReplayResult.unlogged_context`), to skip fitting it again. `notes`: a list to which the
    notes of the run are appended (as `ReplayResult.notes`). `horizon`: follow each rewrite
    over at most that many requests, a whole number ≥ 1 (None: to the end of its horizon).
    `workers`: analyse the strategies on that many processes (the same rows; see `replay`); a
    strategy whose rewrites are far more work than its run (rewrites at most requests, each
    followed to the end of the log) has them shared out among the processes."""
    from replay.breakeven import breakeven_session
    from replay.breakeven._frame import breakeven_frame

    several = _several(workers)
    if horizon is not None and not _is_count(horizon, 1):  # (the CLI's --horizon: IntRange(1))
        raise ReplayError(f"horizon must be a number of requests ≥ 1, got {horizon!r}")
    session = _session_with_requests(log, strict)
    config = _config(provider, model, client, cache_rules, rule_overrides, prices, ttl,
                     context_window)
    config.progress = progress
    config.unlogged_context = unlogged_context
    # Fitted here (unless given) to be named on the progress bar before the strategies.
    config = with_unlogged_context(session, config, len(resolve(strategies)))
    if several:
        rows, tables = _breakeven_on_workers(session, strategies, config, workers, horizon)
    else:
        tables = ResultTables(per_turn=False)
        rows, _ = breakeven_session(session, strategies, config, horizon=horizon, tables=tables)
    if notes is not None:
        notes.extend(_notes(session, tables, config))
    return breakeven_frame(rows)


def _breakeven_on_workers(
    session: Session,
    strategies: str | Sequence[str],
    config: ReplayConfig,
    workers: int,
    horizon: int | None,
) -> tuple[list[Any], ResultTables]:
    """`breakeven_session`'s rows on `workers` processes, and what the notes count."""
    from replay.engine._parallel import breakeven_parts

    rows: list[Any] = []
    tables = ResultTables(per_turn=False)
    for part in breakeven_parts(session, strategies, config, workers, horizon):
        rows.extend(part.breakeven)
        tables.merge(part.tables)
    return rows, tables


def _session_with_requests(log: str | Path | Session, strict: bool) -> Session:
    from replay.engine._replay import require_requests

    session = log if isinstance(log, Session) else load(log, strict=strict)
    require_requests(session)
    return session


BREAKEVEN_TURN_COLUMNS = [
    "event",
    "first_edit_token",
    "removed_tokens",
    "surviving_tokens",
    "rewrite_cost_usd",
    "saving_per_request_usd",
    "breakeven_closed_form",
    "breakeven_simulated",
]


def turns_with_breakeven(turns: pl.DataFrame, breakeven_frame: pl.DataFrame) -> pl.DataFrame:
    """Per-request rows with the break-even columns filled where a strategy rewrote context."""
    keys = ["strategy", "request_index", "thread"]
    extra = breakeven_frame.select([*keys, *BREAKEVEN_TURN_COLUMNS])
    return turns.join(extra, on=keys, how="left", maintain_order="left")


def whatif(
    log: str | Path | Session,
    *,
    at: int,
    prune: str | None = None,
    compact: bool = False,
    provider: str | None = None,
    model: str | None = None,
    client: str | None = None,
    cache_rules: str | Path | None = None,
    rule_overrides: Mapping[str, Any] | None = None,
    prices: Mapping[str, RateOverride] | None = None,
    ttl: str | None = None,
    context_window: int | None = None,
    strict: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Cost of the run with one edit at request `at` (0-based, file order, every thread's
    requests counted) vs as recorded, and its break-even (and the notes of the run, as
    `ReplayResult.notes`)."""
    from replay.breakeven._breakeven import breakeven_edit
    from replay.breakeven._frame import breakeven_frame
    from replay.breakeven._whatif import Selector, whatif_strategy
    from replay.strategies import resolve

    if (prune is None) == (not compact):
        raise ReplayError("give exactly one of --prune SELECTOR or --compact-at REQUEST")
    if isinstance(at, bool) or not isinstance(at, int):  # 1.5 edited nothing, True was 1
        raise ReplayError(f"at must be a request index (a whole number), got {at!r}")
    session = _session_with_requests(log, strict)
    n_requests = len(session.requests())
    if not 0 <= at < n_requests:
        flag = "--compact-at" if compact else "--at"
        raise ReplayError(f"{flag} {at} is outside the log's requests (0..{n_requests - 1})")
    edit = whatif_strategy(at, Selector.parse(prune) if prune is not None else None, compact)
    reference = "recorded"  # the run as the log holds it: the edit is one change to it
    config = _config(provider, model, client, cache_rules, rule_overrides, prices, ttl,
                     context_window)
    config.progress = progress
    config = with_unlogged_context(session, config, 2)  # named on the bar before the two runs
    rows, records = breakeven_edit(session, resolve([reference])[0], edit, at, config)
    summary = summary_frame(records)
    return {
        "summary": summary,
        # The edit's own row, against the run it edits (the log's compactions are rewrites of
        # both runs: not rows of their own).
        "breakeven": breakeven_frame(rows),
        "reference": reference,
        "edit": edit.name,
        "notes": _notes(session, ResultTables.of(records), config),
    }


def _notes(session: Session, tables: ResultTables, config: ReplayConfig) -> list[str]:
    ttl, window = config.ttl, config.context_window
    notes = [TRAJECTORY_NOTE]
    notes += _bill_notes(session, tables, config) + _unused_price_notes(tables, config)
    notes += _unused_rules_notes(tables, config)
    if session.skipped:
        notes.append(_skipped_note(session))
    if tables.models and tables.estimated_output:
        notes.append(
            "No provider usage in the log: output tokens are counted from the logged responses."
        )
    notes += tokenizer_estimate_notes(tables.models)
    copied = getattr(session.header, "copied_requests", 0)
    if copied:
        notes.append(
            f"{copied:,} request(s) are older than this forked session's file (marked "
            "`copied_from_parent`): copied from the session it was forked from, they were billed "
            "in an earlier session, and are counted again here."
        )
    notes += microcompact_notes(session) + iteration_notes(session) + clock_notes(session)
    notes += unread_write_notes(session)
    notes += window_notes(session, tables.models, window)
    notes += price_warning_notes(tables.price_warnings)
    if ttl is not None and tables.no_ttl_choice:
        notes.append(_ignored_ttl_note(ttl, tables.no_ttl_choice))
    if tables.no_breakpoint:
        notes.append(_no_breakpoint_note(tables.no_breakpoint))
    if tables.no_cache:
        notes.append(_no_cache_note(tables.no_cache))
    notes += _unnamed_rewrite_notes(tables) + _foreign_api_notes(tables)
    same = [name for name in tables.same_as_baseline if not _is_plugin(name)]
    if same:
        notes.append(
            f"{len(same):,} {'strategy' if len(same) == 1 else 'strategies'} billed every "
            "request exactly as `baseline` did and named no rewrite: on this log their rules "
            f"did not fire (a threshold not reached, nothing to clear): {', '.join(same)}."
        )
    if tables.mentions:
        notes.append(blind_mentions_note(tables.mentions))
    return notes


def blind_mentions_note(mentions: Mapping[str, int]) -> str:
    """Strategy → its blind mentions (`replay run`'s note and `replay batch`'s)."""
    counts = ", ".join(f"{name} {n:,}" for name, n in mentions.items())
    return (
        "The agent's text named something that only hidden text held (column `blind_mentions`; "
        "not counted as blind actions, since an agent often names a thing it then reads "
        f"again): {counts}."
    )


def tokenizer_estimate_notes(models: Iterable[str]) -> list[str]:
    """One note per tokenizer family of `models` whose counts are estimates (a private
    tokenizer approximated by a tiktoken encoding × a calibrated factor), saying how."""
    from replay.tokens import family_for

    families = {family_for(m) for m in models}
    return [
        f"Token counts for {fam.family} models are estimates: {fam.encoding} × {fam.factor} "
        f"({fam.source})."
        for fam in sorted(families, key=lambda f: f.family)
        if fam.estimated
    ]


def _spec_of(name: str) -> StrategySpec | None:
    """The family of strategy `name`; None for a one-off strategy (whatif), which has none."""
    from replay.strategies import parse_name

    try:
        return parse_name(name).spec
    except ReplayError:
        return None


def _is_plugin(name: str) -> bool:
    """Whether `name` is a plug-in's strategy (its rules are not replay's to vouch for)."""
    spec = _spec_of(name)
    return spec is not None and spec.is_plugin


APIS = {
    "anthropic": "Anthropic's Messages API (Claude models)",
    "openai": "OpenAI's Responses API",
}

API_SERVES = {
    "anthropic": ("model", r"(^|,)([^,]*[./])?claude"),
    "openai": ("provider", r"(^|,)openai(,|$)"),
}
"""Who has each server-side API: (the request's field, a pattern one of its values matches;
values may be comma-joined, as a batch's session rows hold them). Claude models, as any route
spells them (`global.anthropic.claude-…` on Bedrock, `anthropic/claude-…` on OpenRouter: the
research does not say which of Anthropic's server-side features they lack); the provider
openai."""


def _offers(api: str, tables: ResultTables) -> bool:
    """Whether a model of the run is served by `api` (`API_SERVES`)."""
    field_, pattern = API_SERVES[api]
    values = tables.models if field_ == "model" else tables.providers
    return any(re.search(pattern, v) for v in values)


def _foreign_api_notes(tables: ResultTables) -> list[str]:
    """Strategies that acted and simulate a provider's server-side mechanism the run's models
    do not have: what they bill is a harness running the same rule itself."""
    foreign: dict[str, list[str]] = {}
    for name in tables.acted:
        spec = _spec_of(name)
        api = spec.api if spec is not None else ""
        if api and not _offers(api, tables):
            foreign.setdefault(api, []).append(name)
    return [
        foreign_api_note(api, names, sorted(tables.models))
        for api, names in sorted(foreign.items())
    ]


def foreign_api_note(
    api: str, names: Sequence[str], models: Sequence[str], sessions: int | None = None
) -> str:
    """The note on strategies `names` simulating `api`'s server-side mechanism on `models`,
    which lack it: of this run, or (`sessions`) of that many sessions of a batch."""
    from replay._words import counted

    whose, bill = ("this run's models", "the bill is that")
    if sessions is not None:
        whose = f"the models of {counted(sessions, 'session')} of this batch"
        bill = "their rows are the bill"
    return (
        f"{', '.join(names)} "
        f"{'simulates a mechanism' if len(names) == 1 else 'simulate mechanisms'} of "
        f"{APIS[api]}, which {whose} ({', '.join(models)}) do not have: {bill} of a harness "
        "applying the same rule to its requests itself."
    )


def _unnamed_rewrite_notes(tables: ResultTables) -> list[str]:
    """Plug-ins that rewrote earlier messages without a `RewriteEvent`: break-even, which
    analyses the rewrites a strategy names, would say they never changed earlier context."""
    unnamed = {name: n for name, n in tables.unnamed_rewrites.items() if _is_plugin(name)}
    if not unnamed:
        return []
    counts = ", ".join(f"{name} at {n:,} request(s)" for name, n in unnamed.items())
    return [
        f"Rewrites of earlier messages that the strategy did not name: {counts}. Break-even "
        "analyses only the rewrites a strategy names: return View(items, events=[RewriteEvent("
        "kind, detail)]) where it rewrites."
    ]


BILL_TOLERANCE = 0.02
"""Within this share of the log's own bill, the simulated `recorded` counts as reproducing it
(the session cost target of `replay fidelity`)."""


def _bill_notes(session: Session, tables: ResultTables, config: ReplayConfig) -> list[str]:
    """What the log's own usage costs, and how far the simulation of what the agent did
    (`recorded`) lands from it: every other row is simulated under the same rules, so this is
    how much to trust their absolute figures on this log."""
    from replay.fidelity import bill
    from replay.report._money import usd

    billed = bill(session, config.pricer or Pricer(),
                  CacheRouter(config.cache_rules, config.rule_overrides))
    if billed is None:
        return []
    cost = usd(billed.cost_usd)
    partial = (
        f" ({billed.priced:,} of {billed.requests:,} requests carry usage; the others are not "
        "in it)"
        if billed.priced < billed.requests
        else ""
    )
    whatif = _whatif_options(session, tables, config)
    simulated = tables.cost("recorded")
    if whatif or simulated is None or partial or not billed.cost_usd:
        why = (
            f"; with {', '.join(whatif)} this replay prices a what-if, not that bill"
            if whatif
            else "; replay `recorded` to compare the simulation with it"
            if simulated is None
            else ""
        )
        return [
            f"The log's own usage costs {cost} at the prices of the models it ran "
            f"({', '.join(billed.models)}){partial}{why}."
        ]
    error = float((simulated - billed.cost_usd) / billed.cost_usd)
    side = "below" if error < 0 else "above"
    gap = (
        f"The simulated `recorded` ({usd(simulated)}) is {abs(error):.1%} {side} what the "
        f"log's own usage costs ({cost})"
        if round(error, 3)
        else f"The simulated `recorded` ({usd(simulated)}) matches what the log's own usage "
        f"costs ({cost}) to 0.1 %"
    )
    if abs(error) <= BILL_TOLERANCE:
        return [f"{gap}: on this log the cache simulation reproduces the bill."]
    example = (
        "OpenAI, for one, serves some requests from an older prefix than its rules allow"
        if error < 0
        else "a cache kept past its documented TTL, a prefix another session cached"
    )
    return [
        f"{gap}: the provider billed some requests otherwise than its cache rules predict "
        f"({example}), or the log lacks context the agent sent. `replay fidelity LOG` shows "
        "which requests and why. Every strategy is simulated under the same rules: compare them "
        "with each other, and expect a real bill to differ from theirs about as much."
    ]


@dataclass
class FidelityResult:
    """`recorded` simulated against the log's own usage, request by request."""

    rows: list[Any]
    """One `replay.fidelity.FidelityRow` per request with recorded usage."""
    notes: list[str] = field(default_factory=list)
    """What a reader must know to trust the comparison (skipped lines, a forced provider or
    model, pricing fallbacks…)."""

    @cached_property
    def frame(self) -> pl.DataFrame:
        """The rows (columns: README "Fidelity")."""
        from replay.fidelity import fidelity_frame

        return fidelity_frame(self.rows)

    @cached_property
    def summary(self) -> dict[str, Any]:
        """Headline numbers: reads within tolerance and within 128 tokens (simulator and naive
        rule), the session cost error, the misses the log leaves unexplained."""
        from replay.fidelity import fidelity_summary

        return fidelity_summary(self.rows)


def fidelity(
    log: str | Path | Session,
    *,
    provider: str | None = None,
    model: str | None = None,
    client: str | None = None,
    cache_rules: str | Path | None = None,
    rule_overrides: Mapping[str, Any] | None = None,
    prices: Mapping[str, RateOverride] | None = None,
    strict: bool = False,
) -> FidelityResult:
    """Replay `recorded` (the log's own history, compactions and client breakpoints) and put
    each request's simulated prompt, cache read, cache write and cost next to the usage the
    provider reported (`replay fidelity LOG`). Raises `ReplayError` when no request of the log
    carries usage."""
    from replay.adapters._stream import label
    from replay.fidelity import fidelity_rows

    session = _session_with_requests(log, strict)
    # The trajectory note does not apply: fidelity replays only what the agent really sent.
    notes = [_skipped_note(session)] if session.skipped else []
    notes += microcompact_notes(session) + iteration_notes(session)
    notes += unread_write_notes(session)
    config = _config(provider, model, client, cache_rules, rule_overrides, prices)
    notes += _elsewhere_notes(session, provider, model)
    rows = fidelity_rows(session, config)
    if not rows:
        # A path as given (not the file a session folder was read from), named as the engine's
        # errors name it: `-` is `<stdin>`.
        where = (session.path or "the log") if isinstance(log, Session) else label(log)
        raise ReplayError(f"{where}: no request in this log carries recorded usage")
    warnings: dict[str, set[int]] = {}
    for r in rows:
        if r.price_warning:
            warnings.setdefault(r.price_warning, set()).add(r.request_index)
    notes += price_warning_notes(warnings)
    return FidelityResult(rows, notes)


def _elsewhere_notes(session: Session, provider: str | None, model: str | None) -> list[str]:
    """`provider`/`model` other than those the log's requests ran on (an alias of the same is
    the same): the usage it is compared with was billed by another cache (and is priced here
    at the forced model's rates)."""
    from replay.fidelity import moved_options

    moved = moved_options(session, provider, model)
    if not moved:
        return []
    header = session.header
    return [
        f"With {' '.join(moved)} the requests are simulated elsewhere than where the log's usage "
        f"was billed ({header.provider} / {header.model}); that usage is priced here at the "
        "simulated model's rates. This compares a what-if with the log, not the simulator with "
        "what the provider did: run fidelity without them to measure that."
    ]


def price_warning_notes(warnings: dict[str, set[int]]) -> list[str]:
    """One note per pricing fallback: the rate the price table lacks, and on how many
    requests."""
    return [
        f"Priced with a fallback on {len(requests):,} request(s): {warning}."
        for warning, requests in sorted(warnings.items())
    ]


def _unused_price_notes(tables: ResultTables, config: ReplayConfig) -> list[str]:
    """A `--price` that priced nothing: the user believes their rates are in the figures."""
    if config.pricer is None:
        return []
    return unused_price_notes(config.pricer, tables.models, "this replay")


def unused_price_notes(pricer: Pricer, models: Collection[str], where: str) -> list[str]:
    """The `--price` overrides that priced none of `models` (those of `where`: "this replay",
    "the batch's sessions"): matching none, or shadowed on every model they match by another
    override (`replay run`'s notes and `replay batch`'s)."""
    if not models:
        return []
    unused = pricer.unused_overrides(models)
    notes = [
        f"--price {', '.join(unused)} matched no model of {where} ({listed(models)}): those "
        "rates priced nothing. Name the model as the log does, or with a wildcard (e.g. "
        "'claude-sonnet-4*')."
    ] if unused else []
    # A wildcard that matches, but whose every model another override prices first.
    for pattern, winners in pricer.shadowed_overrides(models).items():
        matched = [m for m in sorted(models) if fnmatch.fnmatchcase(m.strip().lower(), pattern)]
        notes.append(
            f"--price {pattern} priced nothing: --price {', '.join(winners)} applies to every "
            f"model it matches ({listed(matched)}) first (an exact name wins over a "
            "wildcard, an earlier wildcard over a later one)."
        )
    return notes


def listed(names: Iterable[str], most: int = 5, *, in_order: bool = False) -> str:
    """Up to `most` of `names`, sorted (`in_order`: as given), then how many more."""
    shown = list(names) if in_order else sorted(names)
    more = f", and {len(shown) - most:,} more" if len(shown) > most else ""
    return ", ".join(shown[:most]) + more


def _unused_rules_notes(tables: ResultTables, config: ReplayConfig) -> list[str]:
    """A `--cache-rules` file for a provider no request went to."""
    if config.cache_rules is None:
        return []
    return unused_rules_notes(config.cache_rules, tables.routes, "this replay")


def unused_rules_notes(rules: ProviderRules, routes: Collection[str], where: str) -> list[str]:
    """A `--cache-rules` file for a provider none of `routes` (`Route.label`s of the requests
    of `where`) went to: the user believes their rules are in the figures (`replay run`'s note
    and `replay batch`'s)."""
    if not routes:
        return []
    layers = CacheRouter(rules).layers_for(rules.provider)
    served = layers[-1].provider if layers else rules.provider
    used = sorted({route.split(">")[-1].split("/")[0] for route in routes})
    if served in used:
        return []
    return [
        f"--cache-rules: the {rules.provider} rules served no request of {where} (its "
        f"requests went to the {', '.join(used)} rules): they changed nothing. Give the rules "
        "of the provider the log ran on, or --provider to replay it on theirs."
    ]


def _whatif_options(session: Session, tables: ResultTables, config: ReplayConfig) -> list[str]:
    """The options that make `recorded` something the agent did not send or was not billed
    (`--provider`/`--model` only where they name another provider or model than the log ran
    on: an alias of the same changes nothing; `--client` only where it names another profile
    than the log's agent gets; `--ttl` only where some request's cache offers a TTL choice)."""
    from replay.cache._clients import AGENT_PROFILES
    from replay.fidelity import moved_options

    moved = {
        flag.split()[0]
        for flag in moved_options(session, config.provider, config.model, config.pricer)
    }
    own_profile = AGENT_PROFILES.get((session.header.agent or "").lower(), "default")
    ignored = set().union(*tables.no_ttl_choice.values())
    chosen = {
        "--provider": "--provider" in moved,
        "--model": "--model" in moved,
        "--client": config.client is not None and config.client != own_profile,
        "--cache-rules": config.cache_rules,
        "--ttl": config.ttl is not None and len(ignored) < len(session.requests()),
        "rule overrides": config.rule_overrides,
    }
    return [flag for flag, value in chosen.items() if value]


def _ignored_ttl_note(ttl: str, routes: Mapping[str, set[int]]) -> str:
    """`--ttl` where the cache has no TTL the client picks (OpenAI, Gemini, Qwen's explicit
    cache, Anthropic before its 1-hour TTL): the run is what it would be without it, which the
    user should know."""
    requests = set().union(*routes.values())
    return (
        f"--ttl {ttl} was ignored on {len(requests):,} request(s) ({', '.join(sorted(routes))}): "
        "their simulated cache has no 5m/1h TTL choice; --ttl applies only where the client "
        "picks one per breakpoint (Anthropic-style)."
    )


def _no_breakpoint_note(routes: Mapping[str, set[int]]) -> str:
    """Requests the client profile sent without a cache breakpoint to a cache that needs one:
    they cached nothing. Replaying a log on another provider keeps the log's client (a Codex
    log on Anthropic: no breakpoint at all), which makes every request dear, silently."""
    requests = set().union(*routes.values())
    return f"{len(requests):,} request(s) ({', '.join(sorted(routes))}) {NO_BREAKPOINT_WHY}"


NO_BREAKPOINT_WHY = (
    "cached nothing: the client profile put no cache breakpoint where the provider needs one "
    "(column `miss_causes`: no-breakpoint). If the harness you mean to run would mark the "
    "prompt, say which with --client (e.g. --client claude-code)."
)
"""Why requests counted as `no-breakpoint` misses cached nothing, and what to do (`replay run`'s
note and `replay batch`'s)."""


def _no_cache_note(models: Mapping[str, set[int]]) -> str:
    """Requests simulated without any prompt cache: said, since a 0 % hit ratio would otherwise
    read as the strategies' doing."""
    requests = set().union(*models.values())
    return (
        f"{len(requests):,} request(s) were simulated without a prompt cache "
        f"({', '.join(sorted(models))}): {NO_CACHE_WHY}"
    )


NO_CACHE_WHY = (
    "the cache rules in force say `mechanism: none` (no prompt caching for that model, or not "
    "yet at that date), so every prompt token is billed uncached. `replay providers --provider P "
    "--model M` shows the rules; --cache-rules FILE gives your own."
)
"""Why requests were simulated without a prompt cache, and where to look (`replay run`'s note
and `replay batch`'s)."""


def _microcompacted(session: Session) -> list[tuple[int, RequestMarker, RequestMarker | None]]:
    """The requests marked `after_microcompact` (index, request, its thread's previous one)."""
    found = []
    previous: dict[str, RequestMarker] = {}
    for n, r in enumerate(session.requests()):
        before = previous.get(r.thread)
        previous[r.thread] = r
        if getattr(r, "after_microcompact", False):
            found.append((n, r, before))
    return found


def microcompact_notes(session: Session) -> list[str]:
    """One note per request marked `after_microcompact`: Claude Code cleared tool results the
    log does not name, so no strategy clears them."""
    return [
        f"Microcompact at request #{n} ({r.request_id}): Claude Code cleared "
        f"{_prompt_fall(before, r)}; the replay still sends them, so its prompts from "
        "there on are larger than the logged ones."
        for n, r, before in _microcompacted(session)
    ]


_ITERATION_PROMPT = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _extra_iterations(usage: Any) -> list[dict[str, Any]]:
    """The iterations of an Anthropic usage other than the response itself (`type` other than
    "message"): server-side compaction's extra sampling iteration, which the top-level usage
    excludes (caching.md A4). The samples' `iterations` hold the message alone, equal to it."""
    from replay.adapters._common import anthropic_iterations_problem

    raw = getattr(usage, "raw", None)
    if not isinstance(raw, dict) or anthropic_iterations_problem(raw) is not None:
        return []  # none, or garbled (the read reported it)
    return [i for i in raw.get("iterations") or [] if i["type"] != "message"]


def _with_iterations(session: Session) -> list[tuple[int, RequestMarker, list[dict[str, Any]]]]:
    """The requests whose usage lists iterations besides the response, and those iterations."""
    found = [(n, r, _extra_iterations(r.usage)) for n, r in enumerate(session.requests())]
    return [f for f in found if f[2]]


def iteration_notes(session: Session) -> list[str]:
    """A note on the requests whose usage lists iterations billed apart from it (Anthropic
    `usage.iterations[]`, server-side compaction): nothing prices them, so the log's own bill
    and every strategy's cost leave them out."""
    found = _with_iterations(session)
    if not found:
        return []
    extra = [i for _, _, iterations in found for i in iterations]
    prompt = sum(i.get(k) or 0 for i in extra for k in _ITERATION_PROMPT)
    output = sum(i.get("output_tokens") or 0 for i in extra)
    kinds = ", ".join(sorted({i["type"] for i in extra}))
    n, first, _ = found[0]
    return [
        f"{len(found):,} request(s) list iterations besides the response in `usage.iterations` "
        f"({kinds}; first: request #{n} ({first.request_id})): {prompt:,} prompt and "
        f"{output:,} output tokens the provider billed apart from the requests' usage. They are "
        "not priced: neither the log's own bill nor any strategy's cost includes them."
    ]


_WRITE_COUNT = re.compile(r"cache[._]?(write|creation)", re.IGNORECASE)
"""A usage count named as cache writes (`cache_write_tokens`, `cacheWrite`, `cache_creation_*`,
nested ones by their dotted path)."""


def _write_counts(raw: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, int]]:
    for key, value in raw.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _write_counts(value, f"{path}.")
        elif (isinstance(value, int) and not isinstance(value, bool) and value > 0
              and _WRITE_COUNT.search(path)):
            yield path, value


def _unread_writes(session: Session) -> list[tuple[int, list[tuple[str, int]]]]:
    """The requests whose usage reports cache writes under a name their adapter does not read
    (none read), with those counts by dotted path."""
    found = []
    for n, r in enumerate(session.requests()):
        u = r.usage
        raw = getattr(u, "raw", None)
        if u is None or u.cache_write_5m_tokens or u.cache_write_1h_tokens:
            continue
        counts = list(_write_counts(raw)) if isinstance(raw, dict) else []
        if counts:
            found.append((n, counts))
    return found


def unread_write_notes(session: Session) -> list[str]:
    """A note when a request's usage reports cache writes under a name its adapter does not read,
    while none were read: a Codex log holds no write count in any version the research saw, but
    OpenAI bills GPT-5.6's writes at 1.25× input (`input_tokens_details.cache_write_tokens`).
    Unread, they stay in the uncached input, at 1×: the log's own bill is low by that much."""
    unread = _unread_writes(session)
    requests = len(unread)
    found: dict[str, int] = {}
    for _, counts in unread:
        for path, value in counts:
            found[path] = found.get(path, 0) + value
    if not found:
        return []
    named = ", ".join(f"`{path}` ({tokens:,} tokens)" for path, tokens in sorted(found.items()))
    return [
        f"{requests:,} request(s) report cache writes under a name replay does not read: "
        f"{named}. They are billed as uncached input in the log's own bill (at the input rate, "
        "not the write rate), and the cache simulation does not compare its writes with them."
    ]


def _backwards(session: Session) -> list[tuple[int, RequestMarker, float]]:
    """The requests timed before their thread's previous request, and by how many seconds."""
    last: dict[str, RequestMarker] = {}
    backwards: list[tuple[int, RequestMarker, float]] = []
    for n, request in enumerate(session.requests()):
        before = last.get(request.thread)
        if before is not None and request.ts < before.ts:
            backwards.append((n, request, (before.ts - request.ts).total_seconds()))
        last[request.thread] = request
    return backwards


def clock_notes(session: Session) -> list[str]:
    """A note when a thread's request times go backwards (a clock set back, logs spliced, a
    request pi started on a message queued while another ran: the pi large-session sample's
    #209, 3.4 s): the cache simulation takes the times as logged, TTLs and readiness included."""
    backwards = _backwards(session)
    if not backwards:
        return []
    n, request, seconds = backwards[0]
    return [
        f"Request times go backwards {len(backwards):,} time(s) within a thread (first: request "
        f"#{n} ({request.request_id}), {seconds:,.1f} s before its thread's previous request): "
        "the cache simulation takes the times as logged, so TTL expiry and entries not yet "
        "written are judged on them there."
    ]


LOG_COUNTS = {
    "microcompact_requests": _microcompacted,
    "unpriced_iteration_requests": _with_iterations,
    "clock_backwards_requests": _backwards,
    "unread_cache_write_requests": _unread_writes,
}
"""What the notes `replay run` draws from the log alone count, by `replay batch`'s column."""


def log_counts(session: Session, skip: Collection[int] = ()) -> dict[str, int]:
    """Per `LOG_COUNTS` column, the session's requests its note is about (`skip`: indexes of
    requests left out, a fork's copies of its parent's): requests after a microcompact, with
    unpriced usage iterations, timed before their thread's previous request, with cache writes
    under a name replay does not read. The same under every strategy."""
    return {
        column: sum(found[0] not in skip for found in finder(session))
        for column, finder in LOG_COUNTS.items()
    }


def window_notes(session: Session, models: Sequence[str], window: int | None) -> list[str]:
    """The context window the strategies were given, where `--context-window` (`window`) set
    one that is not the simulated models' own; and a note when the recorded agent compacted on
    its own far below the window in force (`window`, else the smallest of the models'): it ran
    with a smaller one (a harness set to 200k on a 1M model), and the strategies that trim or
    compact near the window did not act where it did. Harnesses compact at 50-95 % of theirs."""
    from replay.prices import context_window, window_assumed

    own = {m: context_window(m) for m in sorted(models)}
    notes = assumed_window_notes(models, window)
    if window is not None and set(own.values()) - {window}:
        sizes = ", ".join(
            f"{m} unknown ({n:,} assumed)" if window_assumed(m) else f"{m} {n:,}"
            for m, n in own.items()
        )
        notes.append(f"Strategies were given a {window:,}-token context window "
                     f"(--context-window), not the model's own ({sizes}).")
    else:
        window = min(own.values(), default=None)
    auto = [
        e.tokens_before
        for e in session.events
        if isinstance(e, Compaction) and e.trigger == "auto" and e.tokens_before
    ]
    if window is not None and auto and max(auto) < window / 2:
        notes.append(
            f"The recorded agent compacted on its own at {max(auto):,} tokens, under half the "
            f"{window:,}-token context window the strategies were given: it ran with a smaller "
            "window. Strategies that trim or compact as the prompt nears the window were sized "
            f"to {window:,} here; --context-window sets the agent's (e.g. 200k)."
        )
    return notes


def assumed_window_notes(models: Iterable[str], window: int | None) -> list[str]:
    """A note naming the models whose context window no row of pricing/context_windows.json
    gives (a Qwen or Mistral model): the default row's size was assumed, unless `--context-window`
    (`window`) set one."""
    from replay.prices import context_window, window_assumed

    assumed = sorted({m for m in models if window_assumed(m)})
    if window is not None or not assumed:
        return []
    size = context_window(assumed[0])
    return [
        f"No context window is known for {', '.join(assumed)} (pricing/context_windows.json): "
        f"{size:,} tokens were assumed, which the strategies fit prompts into and `over_window` "
        "counts against; --context-window sets the model's."
    ]


def _prompt_fall(before: RequestMarker | None, request: RequestMarker) -> str:
    """The tool results a microcompact cleared, sized by how far the prompt fell from the
    previous request's prompt + output (a floor: new messages came in between)."""
    if before is not None and before.usage is not None and request.usage is not None:
        u, v = before.usage, request.usage
        drop = u.prompt_tokens + u.output_tokens - v.prompt_tokens
        if drop > 0:
            return (
                f"~{drop:,} tokens of tool results the log does not identify (how far the "
                "prompt fell from the previous request's prompt + output)"
            )
    return "tool results the log does not identify (of a size the prompts do not show)"


def _skipped_note(session: Session) -> str:
    """How many lines a lenient read skipped (or repaired), and the first reason."""
    first = session.skipped[0]
    return (
        f"{len(session.skipped)} malformed line(s) skipped or repaired (first: {first}); "
        "use --strict to stop at the first one"
    )


def schema() -> dict[str, Any]:
    """JSON Schema of one line of a `replay-log` file."""
    return TypeAdapter(Event).json_schema()


def schema_text() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"
