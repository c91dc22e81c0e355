"""Terminal tables (rich): the strategy summary and the per-request view."""

from __future__ import annotations

import io

import polars as pl
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from replay._words import counted
from replay.report._fit import Fitted
from replay.report._money import usd

STRATEGY = {"strategy": 20}
"""A strategy name may fold onto lines of 20 characters on a narrow terminal."""
SUMMARY_HIDDEN_FIRST = (
    "requests", "written", "uncached", "output", "peak prompt", "prefix breaks", "cached",
    "prompt",
)
"""The summary's columns a narrow terminal drops, in this order; strategy, cost, hit ratio, over
window and blind actions always stay (`requests` is the same for every strategy)."""
TURNS_HIDDEN_FIRST = (
    "first mismatch", "written", "uncached", "output", "diverged at", "thread", "kind",
    "miss cause", "break-even (closed / simulated)",
)
"""The per-request columns a narrow terminal drops, in this order; strategy, #, prompt, cached
and cost always stay."""
TURNS_TEXT = {"miss cause": 16, "break-even (closed / simulated)": 16}
"""Text columns kept 16 wide before a column is dropped (not squeezed to a word per line)."""


def _int(v: int | None) -> str:
    return "" if v is None else f"{v:,}"


def summary_table(summary: pl.DataFrame, title: str) -> Fitted:
    """One row per strategy, cheapest first is NOT imposed: the order is the one asked for.
    Each strategy that made summarizer calls gets an extra line with their share."""
    table = Table(title=title, title_justify="left", show_lines=False)
    for header, justify in [
        ("strategy", "left"),
        ("requests", "right"),
        ("prompt", "right"),
        ("cached", "right"),
        ("written", "right"),
        ("uncached", "right"),
        ("output", "right"),
        ("cost (USD)", "right"),
        ("peak prompt", "right"),
        ("hit ratio", "right"),
        ("prefix breaks", "right"),
        ("over window", "right"),
        ("blind actions", "right"),
    ]:
        table.add_column(header, justify=justify, no_wrap=header == "strategy")
    cheapest = summary["cost_usd"].min() if summary.height else None
    for row in summary.iter_rows(named=True):
        cost = Text(usd(row["cost_usd"]))
        if row["cost_usd"] == cheapest:
            cost.stylize("bold green")
        table.add_row(
            row["strategy"],
            _int(row["requests"]),
            _int(row["prompt_tokens"]),
            _int(row["cached_tokens"]),
            _int(row["cache_write_tokens"]),
            _int(row["uncached_tokens"]),
            _int(row["output_tokens"]),
            cost,
            _int(row["peak_prompt_tokens"]),
            f"{row['hit_ratio']:.1%}",
            _int(row["prefix_breaks"]),
            Text(_int(row["over_window"]), style="red" if row["over_window"] else ""),
            Text(_int(row["blind_actions"]), style="red" if row["blind_actions"] else ""),
        )
        if row["summarizer_calls"]:
            table.add_row(
                Text(f"  └ summarizer ({counted(row['summarizer_calls'], 'call')})", style="dim"),
                "",
                "",
                "",
                "",
                "",
                "",
                Text(f"incl. {usd(row['summarizer_cost_usd'])}", style="dim"),
                "",
                "",
                "",
                "",
                "",
            )
    return Fitted(table, hide=SUMMARY_HIDDEN_FIRST, fold=STRATEGY)


def closed_form_text(closed: float | None) -> str:
    """A closed-form break-even as the JSON has it (two decimals at most, every digit: `:g`
    printed 10604.25 as 10604.2 and a million as 1e+06)."""
    if closed is None:
        return "never"
    text = f"{closed:,.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _breakeven_cell(row: dict) -> str:
    if not row.get("event"):
        return ""
    closed, simulated = row["breakeven_closed_form"], row["breakeven_simulated"]
    closed_text = closed_form_text(closed)
    simulated_text = "never" if simulated is None else str(simulated)
    return f"{row['event']}: {closed_text} / {simulated_text}"


def turns_table(turns: pl.DataFrame, title: str) -> Fitted:
    """One row per simulated request; a `thread` column where the rows span several threads
    (a subagent's rows interleave with the main thread's, and first mismatch and miss cause
    compare with the previous request of the row's own thread)."""
    table = Table(title=title, title_justify="left")
    with_breakeven = "breakeven_closed_form" in turns.columns
    with_threads = "thread" in turns.columns and _agent_threads(turns) > 1
    for header in [
        "strategy",
        "#",
        *(["thread"] if with_threads else []),
        "kind",
        "prompt",
        "cached",
        "written",
        "uncached",
        "output",
        "first mismatch",
        "diverged at",
        "miss cause",
        "cost (USD)",
    ]:
        table.add_column(header, justify="left" if header in ("strategy", "thread", "kind",
                                                              "diverged at", "miss cause")
                         else "right")
    if with_breakeven:
        table.add_column("break-even (closed / simulated)")
    for row in turns.iter_rows(named=True):
        extra = [_breakeven_cell(row)] if with_breakeven else []
        table.add_row(
            row["strategy"],
            str(row["request_index"]),
            *([row["thread"]] if with_threads else []),
            row["kind"],
            _int(row["prompt_tokens"]),
            _int(row["cached_tokens"]),
            _int(row["cache_write_tokens"]),
            _int(row["uncached_tokens"]),
            _int(row["output_tokens"]),
            _int(row["first_mismatch_token"]),
            row["diverged_at"] or "",
            row["miss_cause"] or "",
            usd(row["cost_usd"]),
            *extra,
        )
    return Fitted(table, hide=TURNS_HIDDEN_FIRST, fold=STRATEGY, wrap=TURNS_TEXT)


def _agent_threads(turns: pl.DataFrame) -> int:
    """How many of the agent's threads the rows hold (a strategy's summarizer calls, kind
    `summarizer`, are in a thread of their own that the `kind` column names already)."""
    if "kind" not in turns.columns:
        return turns["thread"].n_unique()
    return turns.filter(pl.col("kind") != "summarizer")["thread"].n_unique()


def console(stderr: bool = False, quiet: bool = False) -> Console:
    """A console that drops colour when not writing to a terminal (and then does not squeeze
    tables to 80 columns: a file or a pipe gets the whole table)."""
    probe = Console(stderr=stderr)
    width = None if probe.is_terminal else 240
    # No markup: table cells and notes hold data (`sliding-10[messages=4]`, rule patterns such
    # as `opus-4-[5-9]`) that rich would read as style tags and drop.
    return Console(
        stderr=stderr, quiet=quiet, highlight=False, soft_wrap=False, width=width, markup=False
    )


def print_table(table: RenderableType, output: object | None = None, width: int = 240) -> None:
    """Print a table (or any renderable) to the terminal, or write its plain text, `width`
    columns wide, to a file."""
    if output is None:
        console().print(table)
        return
    from replay.report._export import write_output

    buffer = Console(record=True, width=width, file=io.StringIO(), highlight=False, markup=False)
    buffer.print(table)
    write_output(buffer.export_text(), output)  # type: ignore[arg-type]
