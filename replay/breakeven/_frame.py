"""Break-even rows as a polars DataFrame (column names are the JSON contract)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import polars as pl

from replay.breakeven._breakeven import BreakEven
from replay.engine._results import MONEY

BREAKEVEN_SCHEMA = {
    "strategy": pl.Utf8,
    "request_index": pl.Int64,
    "thread": pl.Utf8,
    "event": pl.Utf8,
    "first_edit_token": pl.Int64,
    "removed_tokens": pl.Int64,
    "surviving_tokens": pl.Int64,
    "rewrite_cost_usd": MONEY,
    "saving_per_request_usd": MONEY,
    "breakeven_closed_form": pl.Float64,
    "breakeven_simulated": pl.Int64,
    "simulated_net_usd": MONEY,
    "horizon": pl.Int64,
    "summarizer_cost_usd": MONEY,
    "summarizer_cache_read": pl.Int64,
    "disagreement": pl.Utf8,
}


def breakeven_frame(rows: Sequence[BreakEven]) -> pl.DataFrame:
    return pl.DataFrame([asdict(r) for r in rows], schema=BREAKEVEN_SCHEMA, orient="row")
