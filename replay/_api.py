"""The public verbs: `load`, `replay`, `schema`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import TypeAdapter

from replay.cache import load_rules_file
from replay.engine import ReplayConfig, RequestRecord, replay_session, summary_frame, turns_frame
from replay.log import Event, Session, read_log
from replay.prices import Pricer, RateOverride

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
    """One record per simulated request (summarizer calls included)."""
    notes: list[str] = field(default_factory=list)
    """What a reader must know to trust the numbers (estimates, skipped lines…)."""

    @cached_property
    def summary(self) -> pl.DataFrame:
        """One row per strategy (columns: README "Output columns")."""
        return summary_frame(self.records)

    @cached_property
    def turns(self) -> pl.DataFrame:
        """One row per request per strategy."""
        return turns_frame(self.records)


def load(path: str | Path, *, strict: bool = False) -> Session:
    """Read a log. Lenient by default: malformed lines are skipped and counted."""
    return read_log(path, strict=strict)


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
    strict: bool = False,
    keep_views: bool = False,
) -> ReplayResult:
    """Replay a log through strategies and price every request under the provider's cache."""
    session = log if isinstance(log, Session) else load(log, strict=strict)
    config = ReplayConfig(
        provider=provider,
        model=model,
        client=client,
        cache_rules=load_rules_file(cache_rules) if cache_rules else None,
        rule_overrides=dict(rule_overrides or {}),
        pricer=Pricer(dict(prices or {})),
        keep_views=keep_views,
    )
    records = replay_session(session, strategies, config)
    return ReplayResult(session=session, records=records, notes=_notes(session, records))


def _notes(session: Session, records: list[RequestRecord]) -> list[str]:
    notes = [TRAJECTORY_NOTE]
    if session.skipped:
        first = session.skipped[0]
        notes.append(
            f"{len(session.skipped)} malformed line(s) skipped (first: {first}); "
            "use --strict to stop at the first one"
        )
    if records and all(r.request.estimated_output for r in records if r.kind == "request"):
        notes.append(
            "No provider usage in the log: output tokens are counted from the logged responses."
        )
    from replay.tokens import family_for

    families = {family_for(r.model) for r in records}
    for fam in sorted(families, key=lambda f: f.family):
        if fam.estimated:
            notes.append(
                f"Token counts for {fam.family} models are estimates: {fam.encoding} "
                f"× {fam.factor} ({fam.source})."
            )
    return notes


def schema() -> dict[str, Any]:
    """JSON Schema of one line of a `replay-log` file."""
    return TypeAdapter(Event).json_schema()


def schema_text() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"
