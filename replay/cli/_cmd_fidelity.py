"""`replay fidelity`: the recorded strategy's simulation against the recorded usage."""

from __future__ import annotations

from pathlib import Path

import click

from replay.cli._main import (
    LOG_PATH,
    cli,
    emit,
    output_options,
    price_overrides,
    replay_options,
    user_errors,
)


@cli.command("fidelity")
@click.argument("log", type=LOG_PATH)
@replay_options
@output_options()
@user_errors
def fidelity_command(log: Path, provider, model, client, cache_rules, prices, strict, fmt,
                     output, quiet) -> None:
    """Compare, request by request, what the simulator predicts with what was billed.

    Replays `recorded` (the log's own history, compactions and client breakpoints) and puts
    each request's simulated prompt, cache read, cache write and cost next to the usage the
    provider reported. The summary gives the share of requests whose cache read is within
    max(2% of the prompt, 256 tokens) and within 128 tokens (the target for OpenAI-family logs,
    whose cached counts come in 128-token steps) — for the simulator and for the naive rule
    read(n+1) = read(n) + write(n) — and the session cost error.

    \b
    Example:
      replay fidelity ~/.claude/projects/my-project/SESSION.jsonl
      replay fidelity rollout.jsonl --format json -o fidelity.json
    """
    from rich.table import Table

    from replay import report
    from replay._api import fidelity
    from replay.cli._cmd_core import print_notes_beside
    from replay.report._fit import Fitted
    from replay.report._money import usd

    result = fidelity(log, provider=provider, model=model, client=client,
                      cache_rules=cache_rules, prices=price_overrides(prices), strict=strict)
    rows, notes, frame, summary = result.rows, result.notes, result.frame, result.summary
    # The headline is part of the result: printed under the table, on standard output or in -o
    # FILE like the rows, whatever -q says (JSON has it as `summary`).
    table = Table(title=f"{log} · fidelity (recorded vs simulated)", title_justify="left",
                  caption=_headline(summary), caption_justify="left")
    for col in ("#", "request", "prompt rec/sim", "read rec/sim", "write rec/sim",
                "cost rec/sim", "ok", "miss cause · fitted from this read"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            str(r.request_index), r.request_id[:18],
            f"{r.recorded_prompt:,} / {r.simulated_prompt:,}",
            f"{r.recorded_cache_read:,} / {r.simulated_cache_read:,}",
            f"{r.recorded_cache_write:,} / {r.simulated_cache_write:,}",
            f"{usd(r.recorded_cost_usd)} / {usd(r.simulated_cost_usd)}",
            "✓" if r.read_within_tolerance else "✗",
            " · ".join(x for x in (r.miss_cause or r.unexplained, r.fitted) if x),
        )
    document = {"log": str(log), "notes": notes, "summary": summary,
                "requests": report.lazy_rows(frame)}
    # A narrow terminal keeps #, the cache read and the cost, ok and the miss cause.
    fitted = Fitted(table, hide=("request", "write rec/sim", "prompt rec/sim"),
                    fold={"request": 10}, wrap={"miss cause · fitted from this read": 16})
    emit(frame, document, fmt, output, lambda: fitted)
    print_notes_beside(notes, fmt, quiet)


def _headline(s: dict) -> str:
    """One line: the share of reads within tolerance (simulator and naive rule) and the cost
    error, the unexplained misses and how many reads the fit was sized from."""
    from replay.report._money import usd

    return (
        f"cache reads within tolerance: {_share(s['cache_read_within_tolerance'])} "
        f"(naive rule: {_share(s['naive_rule_within_tolerance'])}), within 128 tokens: "
        f"{_share(s['cache_read_within_128'])} "
        f"(naive rule: {_share(s['naive_rule_within_128'])}); "
        f"cost recorded {usd(s['recorded_cost_usd'])} vs simulated "
        f"{usd(s['simulated_cost_usd'])} (error {_share(s['cost_error'], '+.2%')}, "
        f"{_share(s['cost_error_explained'], '+.2%')} on the requests the log explains); "
        "more than 128 tokens off, unexplained by the log: "
        + (", ".join(f"{k} {v}" for k, v in s["unexplained"].items()) or "none")
        + (f"; reads the fit was sized from: {s['fitted_reads']} (the others: "
           f"{_share(s['predicted_reads_within_tolerance'])} within tolerance)"
           if s["fitted_reads"] else "")
    )


def _share(value: float | None, spec: str = ".1%") -> str:
    """A share as the JSON's null reads: `n/a` (no pair to judge, no cost to compare with)."""
    return "n/a" if value is None else format(value, spec)
