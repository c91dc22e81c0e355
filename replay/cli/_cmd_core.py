"""Core subcommands (run, schema, record-fixture; `strategies` is in `_cmd_strategies`).

Each one parses its flags, calls the API, and prints or writes the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from replay._errors import shown_path
from replay.cli._cmd_strategies import resolve_strategies, strategy_options
from replay.cli._main import (
    LOG_PATH,
    OUTPUT_PATH,
    FilePath,
    NoDashPath,
    check_output_folder,
    cli,
    context_window_option,
    emit,
    output_options,
    price_overrides,
    refuse_data_suffix,
    replay_options,
    say,
    ttl_option,
    user_errors,
    workers_option,
)


@cli.command("run")
@click.argument("log", type=LOG_PATH)
@click.option(
    "--strategies",
    "-s",
    default="all",
    show_default=True,
    help="`all`, `plugins`, or comma-separated names (see `replay strategies`).",
)
@strategy_options
@click.option("--per-turn", is_flag=True, help="One row per request per strategy.")
@click.option(
    "--breakeven",
    "with_breakeven",
    is_flag=True,
    help="With --per-turn: add break-even columns (closed form and simulated) to the requests "
    "where a strategy rewrote earlier context.",
)
@ttl_option
@context_window_option
@workers_option
@replay_options
@output_options()
@user_errors
def run_command(
    log: Path,
    strategies: str,
    sets: tuple[str, ...],
    strategy_files: tuple[Path, ...],
    per_turn: bool,
    with_breakeven: bool,
    ttl: str | None,
    context_window: int | None,
    workers: int,
    provider: str | None,
    model: str | None,
    client: str | None,
    cache_rules: Path | None,
    prices: tuple[str, ...],
    strict: bool,
    fmt: str,
    output: Path | None,
    quiet: bool,
) -> None:
    """Replay LOG through strategies and print what each would have cost.

    \b
    Example:
      replay run logs/run42.jsonl --strategies all
      replay logs/run42.jsonl -s baseline,truncate-500 --per-turn --format json -o out.json
      replay logs/run42.jsonl -s age-truncate-500-keep-3 --per-turn --breakeven
      replay logs/run42.jsonl -s baseline --provider anthropic --model claude-sonnet-4-5 --ttl 1h
      replay logs/run42.jsonl -s pi-compact-16k-20k --set pi-compact.keep=30k
      replay logs/run42.jsonl -s all,plugins --strategy-file my_strategy.py
      replay logs/run42.jsonl -s all --workers 4
    """
    from replay import report
    from replay._api import recommendation, recommendation_line, replay
    from replay.cli._progress import progress_bar

    if with_breakeven and not per_turn:
        raise click.UsageError("--breakeven adds columns to --per-turn rows: give both")
    chosen = resolve_strategies(strategies, sets, strategy_files)
    with progress_bar("replaying", quiet) as progress:
        result = replay(
            log,
            chosen,
            provider=provider,
            model=model,
            client=client,
            cache_rules=cache_rules,
            prices=price_overrides(prices),
            ttl=ttl,
            context_window=context_window,
            strict=strict,
            keep_records=False,
            per_turn=per_turn,
            evidence=fmt == "json",
            progress=progress,
            workers=workers,
        )
    header = result.session.header
    models, providers = result.models, result.providers
    document = {
        "log": str(log),
        "agent": header.agent,
        "provider": ",".join(providers),
        "model": ",".join(models),
        "notes": result.notes,
        "summary": report.frame_rows(result.summary),
    }
    if fmt == "json":
        document["evidence"] = report.lazy_rows(result.evidence)
    recommended = recommendation(result.summary)
    document["recommendation"] = recommended
    turns = result.turns if per_turn else None
    if with_breakeven and turns is not None:
        from replay._api import breakeven, turns_with_breakeven

        with progress_bar("break-even", quiet) as progress:
            frame_be = breakeven(
                result.session,
                chosen,
                provider=provider,
                model=model,
                client=client,
                cache_rules=cache_rules,
                prices=price_overrides(prices),
                ttl=ttl,
                context_window=context_window,
                progress=progress,
                unlogged_context=result.unlogged_context,
                workers=workers,
            )
        turns = turns_with_breakeven(turns, frame_be)
    if turns is not None:
        document["requests"] = report.lazy_rows(turns)
    frame = result.summary if turns is None else turns
    title = f"{log} · {header.agent} · {', '.join(providers)} / {', '.join(models)}"
    def table() -> Any:
        if turns is None:
            return report.summary_table(result.summary, title)
        return report.turns_table(turns, title)

    emit(frame, document, fmt, output, table)
    if fmt == "table" and not quiet:
        err = report.console(stderr=True)
        err.print(recommendation_line(recommended, result.summary))
    print_notes_beside(result.notes, fmt, quiet)


def print_notes(notes: list[str]) -> None:
    """The notes of a run (`ReplayResult.notes`: the trajectory held fixed, skipped lines,
    estimates) on standard error, one `note:` line each; every command that reads a log prints
    them beside its output (their JSON has them as `notes`)."""
    from rich.text import Text

    from replay import report
    from replay._printable import printable

    err = report.console(stderr=True)  # (no markup: a note may quote the log)
    for note in notes:
        err.print(Text.assemble(("note:", "dim"), f" {printable(note)}"))


def print_notes_beside(notes: list[str], fmt: str, quiet: bool) -> None:
    """`print_notes` under every output format but JSON, which carries them as `notes`: a CSV or
    Parquet result holds only its rows, and a user piping it still learns of skipped lines."""
    if fmt != "json" and not quiet:
        print_notes(notes)


@cli.command("schema")
@click.option(
    "-o", "--output", type=OUTPUT_PATH, help="Write to FILE.",
    callback=check_output_folder,
)
@user_errors
def schema_command(output: Path | None) -> None:
    """Print the JSON Schema of one line of a replay-log file.

    \b
    Example:
      replay schema > replay-log.schema.json
    """
    from replay._api import schema_text
    from replay.report import write_output

    refuse_data_suffix(output, "json", ("json",))
    write_output(schema_text(), output)


@cli.command("record-fixture")
@click.option(
    "-o",
    "--output",
    type=NoDashPath(dir_okay=False, path_type=Path),
    default=Path("logs/run42.jsonl"),
    callback=check_output_folder,
    show_default=True,
    help="Where to write the recorded log.",
)
@click.option(
    "--fixture",
    type=FilePath(exists=True, file_okay=False, path_type=Path),
    help="Fixture folder (default: logs/fixtures/tasklist, shipped with replay).",
)
@user_errors
def record_fixture_command(output: Path, fixture: Path | None) -> None:
    """Re-record the sample run: drive the scripted agent on the seed fixture, tools for real.

    \b
    Example:
      replay record-fixture -o logs/run42.jsonl
    """
    from replay.fixture import record_fixture

    refuse_data_suffix(output, "replay-log JSONL")
    session = record_fixture(output, fixture)
    say(f"wrote {shown_path(output)}: {len(session.requests())} requests")
