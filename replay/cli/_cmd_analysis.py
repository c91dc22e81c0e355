"""`replay breakeven` and `replay whatif`: when does an edit pay back, what would one edit do."""

from __future__ import annotations

from pathlib import Path

import click

from replay.cli._cmd_core import print_notes_beside
from replay.cli._cmd_strategies import resolve_strategies, strategy_options
from replay.cli._main import (
    LOG_PATH,
    cli,
    context_window_option,
    emit,
    horizon_option,
    output_options,
    price_overrides,
    replay_options,
    ttl_option,
    user_errors,
    workers_option,
)


def _breakeven_table(frame, title: str):
    from rich.table import Table

    from replay.report._fit import Fitted
    from replay.report._money import usd
    from replay.report._table import STRATEGY, closed_form_text

    table = Table(title=title, title_justify="left")
    for col in ("strategy", "#", "event", "first edit", "removed", "surviving", "rewrite cost",
                "saving/req", "closed form", "simulated", "net (horizon)", "disagreement"):
        table.add_column(col, justify="left" if col in ("strategy", "event", "disagreement")
                         else "right")
    for r in frame.iter_rows(named=True):
        closed = closed_form_text(r["breakeven_closed_form"])
        sim = "never" if r["breakeven_simulated"] is None else str(r["breakeven_simulated"])
        table.add_row(
            r["strategy"], str(r["request_index"]), r["event"], f"{r['first_edit_token']:,}",
            f"{r['removed_tokens']:,}", f"{r['surviving_tokens']:,}",
            usd(r["rewrite_cost_usd"], 6), usd(r["saving_per_request_usd"], 6), closed, sim,
            f"{usd(r['simulated_net_usd'], 6)} ({r['horizon']})", r["disagreement"] or "",
        )
    if not frame.height:
        table.caption = "no rewrite: no strategy named a rewrite of earlier context on this log"
    # A narrow terminal keeps strategy, #, event, both break-evens and the net.
    hide = ("first edit", "surviving", "removed", "saving/req", "rewrite cost", "disagreement")
    return Fitted(table, hide=hide, fold=STRATEGY, wrap={"disagreement": 16})



@cli.command("breakeven")
@click.argument("log", type=LOG_PATH)
@click.option("--strategies", "-s", default="all", show_default=True,
              help="`all`, `plugins`, or comma-separated names (see `replay strategies`).")
@strategy_options
@ttl_option
@context_window_option
@horizon_option
@workers_option
@replay_options
@output_options()
@user_errors
def breakeven_command(log: Path, strategies: str, sets: tuple[str, ...],
                      strategy_files: tuple[Path, ...], ttl: str | None,
                      context_window: int | None, horizon: int | None,
                      workers: int, provider, model, client, cache_rules, prices, strict, fmt,
                      output, quiet) -> None:
    """Break-even of every prune, clearing, aging step and compaction, two ways.

    Closed form (rewrite cost / saving per request) next to the simulated truth (the same run
    without that one edit, through the cache simulator, to the end of the horizon: the
    strategy's next rewrite of the view's structure, or the end of its thread): the requests
    until the cumulative saving turns positive for good, `never` where it is negative at the
    end, and that net over the horizon (requests compared in brackets).

    \b
    Example:
      replay breakeven logs/run42.jsonl -s compact-at-12000-structured,age-truncate-500-keep-3
      replay breakeven logs/run42.jsonl --horizon 50
      replay breakeven logs/run42.jsonl --workers 4
    """
    from replay import report
    from replay._api import breakeven
    from replay.cli._progress import progress_bar

    notes: list[str] = []
    with progress_bar("break-even", quiet) as progress:
        chosen = resolve_strategies(strategies, sets, strategy_files)
        frame = breakeven(log, chosen, provider=provider, model=model, client=client,
                          cache_rules=cache_rules, prices=price_overrides(prices), ttl=ttl,
                          context_window=context_window, strict=strict, progress=progress,
                          notes=notes, horizon=horizon, workers=workers)
    document = {"log": str(log), "notes": notes, "breakeven": report.lazy_rows(frame)}
    emit(frame, document, fmt, output, lambda: _breakeven_table(frame, f"{log} · break-even"))
    print_notes_beside(notes, fmt, quiet)


@cli.command("whatif")
@click.argument("log", type=LOG_PATH)
@click.option("--at", "at", type=int, metavar="REQUEST",
              help="Request index (0-based, file order, counting every thread's requests) "
              "where --prune applies, in that request's thread.")
@click.option("--prune", metavar="SELECTOR",
              help="older-than:K | tool:NAME (those tool results become a placeholder; "
              "results already cleared in the log are neither selected again nor counted) | "
              "messages:A-B (those history items are dropped, a call with its result).")
@click.option("--compact-at", "compact_at", type=int, metavar="REQUEST",
              help="Compact everything before the current step at this request (numbered "
              "as --at) instead; the summarizer call is costed as compact-at's (tool outputs "
              "cut to 1,500 characters, call arguments to 200). A later compaction of the "
              "log's that replaced only part of what this one did is not sent.")
@click.option("--ttl", type=click.Choice(["5m", "1h"]), help="Force every breakpoint's TTL, in "
              "both runs (with --prune or --compact-at), where the client picks one "
              "(Anthropic-style caches); ignored, with a note, elsewhere (OpenAI, Gemini).")
@context_window_option
@replay_options
@output_options(("table", "json"))
@user_errors
def whatif_command(log: Path, at: int | None, prune: str | None, compact_at: int | None,
                   ttl: str | None, context_window: int | None,
                   provider, model, client, cache_rules, prices, strict, fmt, output,
                   quiet) -> None:
    """Cost of the run with one edit at one request vs as recorded, and its break-even.

    \b
    Example:
      replay whatif logs/run42.jsonl --at 8 --prune older-than:3
      replay whatif logs/run42.jsonl --compact-at 9 --provider anthropic \\
        --model claude-sonnet-4-5 --ttl 1h
    """
    from rich.console import Group
    from rich.text import Text

    from replay import report
    from replay._api import whatif
    from replay.cli._progress import progress_bar
    from replay.report._money import usd

    if (prune is None) == (compact_at is None):
        raise click.UsageError("give either --at REQUEST --prune SELECTOR or --compact-at REQUEST")
    if prune is not None and at is None:
        raise click.UsageError("--prune needs --at REQUEST")
    if compact_at is not None and at is not None:
        raise click.UsageError("--compact-at names its own request: --at goes with --prune")
    edit_at = compact_at if compact_at is not None else at
    with progress_bar("what if", quiet) as progress:
        result = whatif(log, at=edit_at, prune=prune, compact=compact_at is not None,
                        provider=provider, model=model, client=client, cache_rules=cache_rules,
                        prices=price_overrides(prices), ttl=ttl,
                        context_window=context_window, strict=strict, progress=progress)
    summary, be = result["summary"], result["breakeven"]
    costs = dict(zip(summary["strategy"], summary["cost_usd"], strict=True))
    delta = costs[result["edit"]] - costs[result["reference"]]
    document = {
        "log": str(log),
        "edit": result["edit"],
        "reference": result["reference"],
        "cost_usd": costs[result["edit"]],
        "reference_cost_usd": costs[result["reference"]],
        "delta_usd": delta,
        "notes": result["notes"],
        "summary": report.frame_rows(summary),
        "breakeven": report.frame_rows(be),
    }
    if fmt == "json":
        report.write_output(report.to_json(document), output)
        return
    verdict = "saves" if delta < 0 else "costs"
    report.print_table(Group(
        report.summary_table(summary, f"{log} · what if: {result['edit']}"),
        _breakeven_table(be, "break-even of the edit"),
        Text(f"The edit {verdict} {usd(abs(delta), 6)} vs {result['reference']} over this log."),
    ), output)
    print_notes_beside(result["notes"], fmt, quiet)
