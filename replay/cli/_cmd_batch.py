"""`replay batch`: every log under folders or globs, on a process pool or Ray, into a dataset."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from replay.cli._main import (
    SUFFIX_FORMATS,
    NoDashPath,
    cli,
    context_window_option,
    missing_folder,
    price_overrides,
    replay_options,
    say,
    user_errors,
)


def _tables(report):
    from rich.table import Table

    from replay.report._fit import Fitted
    from replay.report._money import usd
    from replay.report._table import STRATEGY, _int

    counts = report.counts
    files = Table(title="files", title_justify="left")
    columns = ("found", "ok", "replayed", "unchanged", "part of", "skipped", "duplicate",
               "out of range", "failed")
    for col in columns:
        files.add_column(col, justify="right")
    files.add_row(*(_int(counts["total" if k == "found" else k]) for k in columns))
    totals = Table(title="totals per strategy (ok sessions)", title_justify="left")
    for col in ("strategy", "sessions", "requests", "prompt", "cached", "written", "output",
                "cost (USD)", "hit ratio", "blind actions"):
        totals.add_column(col, justify="left" if col == "strategy" else "right")
    for row in report.totals.iter_rows(named=True):
        totals.add_row(
            row["strategy"],
            _int(row["sessions"]),
            _int(row["requests"]),
            _int(row["prompt_tokens"]),
            _int(row["cached_tokens"]),
            _int(row["cache_write_tokens"]),
            _int(row["output_tokens"]),
            usd(row["cost_usd"]),
            f"{row['hit_ratio']:.1%}",
            _int(row["blind_actions"]),
        )
    # A narrow terminal keeps found, ok and failed; strategy, cost, hit ratio and blind actions.
    files_hide = ("part of", "duplicate", "out of range", "unchanged", "replayed", "skipped")
    totals_hide = ("requests", "written", "output", "sessions", "cached", "prompt")
    return Fitted(files, hide=files_hide), Fitted(totals, hide=totals_hide, fold=STRATEGY)


def _problem_table(report, limit: int = 20):
    from rich.table import Table

    from replay.report._fit import Fitted

    problems = report.problems
    table = Table(title="files not replayed", title_justify="left")
    table.add_column("status")
    table.add_column("file", overflow="fold")
    table.add_column("why", overflow="fold")
    for p in problems[:limit]:
        table.add_row(p.status, p.path, p.message or "")
    if len(problems) > limit:
        table.add_row("…", f"{len(problems) - limit} more", "see --format json")
    return Fitted(table, fold={"file": 20, "why": 20})


def _check_dataset_parent(
    ctx: click.Context, param: click.Parameter, value: Path | None
) -> Path | None:
    """The dataset folder is created if missing, but not its parents: a mistyped `-o` leaves
    no tree behind (as `check_output_folder` does for files)."""
    why = None if value is None else missing_folder(value)
    if why is not None:
        say(f"error: cannot write the dataset {value}: {why}")
        ctx.exit(2)
    named = None if value is None else SUFFIX_FORMATS.get(value.suffix.lower())
    if named is not None and not value.is_dir():
        # `-o totals.csv` expected a file; it got a folder of that name.
        say(f"error: -o {value} names a {named} file, but batch writes a dataset folder "
            "(Parquet parts): give a folder name (the report is --format json on standard "
            "output)")
        ctx.exit(2)
    return value


@cli.command("batch")
@click.argument("targets", nargs=-1, required=True, metavar="DIR|GLOB|FILE...")
@click.option(
    "--strategies",
    "-s",
    default="all",
    show_default=True,
    help="`all` or comma-separated names (see `replay strategies`).",
)
@click.option(
    "-o",
    "--output",
    type=NoDashPath(file_okay=False, path_type=Path),
    callback=_check_dataset_parent,
    help="Parquet dataset folder to append to (and to keep the incremental cache in); "
    "created if missing, in a folder that must exist.",
)
@click.option("--per-request", is_flag=True, help="Also write one row per simulated request.")
@click.option(
    "--workers",
    "-w",
    type=click.IntRange(min=1, max=1024),
    help="Worker processes (default: one per CPU; 1 = no pool).",
)
@click.option(
    "--engine",
    type=click.Choice(["pool", "ray"]),
    default="pool",
    show_default=True,
    help="Where files are replayed: a local process pool, or Ray (`pip install '.[ray]'` in the "
    "replay checkout).",
)
@click.option(
    "--ray-address",
    metavar="ADDR",
    help="Ray cluster to join (default: start a local Ray instance).",
)
@click.option("--since", metavar="DATE", help="Only sessions that started on or after DATE.")
@click.option("--until", metavar="DATE", help="Only sessions that started on or before DATE.")
@click.option("--force", is_flag=True, help="Replay every file, ignoring the incremental cache.")
@click.option(
    "--forget-missing",
    is_flag=True,
    help="Drop the dataset's rows of files under the targets' folders that no longer exist "
    "(by default they stay: a log the agent deleted still counts).",
)
@click.option(
    "--share-cache/--no-share-cache",
    default=True,
    show_default=True,
    help="Replay sessions of one scope (provider, agent, system prompt, tools) that overlap in "
    "time through one shared provider cache.",
)
@context_window_option
@click.option(
    "--ttl",
    type=click.Choice(["5m", "1h"]),
    help="Force every breakpoint's TTL, where the client picks one (Anthropic-style caches; "
    "other caches ignore it).",
)
@replay_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="Format of the final report (standard output).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no notes.")
@click.option(
    "--timings",
    is_flag=True,
    help="With --format json (only): add the seconds each pass took and the files and requests "
    "replayed per second (the report is then no longer the same byte for byte on a re-run).",
)
@user_errors
def batch_command(
    targets: tuple[str, ...],
    strategies: str,
    output: Path | None,
    per_request: bool,
    workers: int | None,
    engine: str,
    ray_address: str | None,
    since: str | None,
    until: str | None,
    force: bool,
    forget_missing: bool,
    share_cache: bool,
    context_window: int | None,
    ttl: str | None,
    provider: str | None,
    model: str | None,
    client: str | None,
    cache_rules: Path | None,
    prices: tuple[str, ...],
    strict: bool,
    fmt: str,
    quiet: bool,
    timings: bool,
) -> None:
    """Replay every log under folders or globs (any supported format, mixed) and append one row
    per session × strategy to a Parquet dataset.

    Files that are not logs are reported and counted, and a broken log (or a folder below a
    target that cannot be listed) fails alone: the batch goes on. A session written in several
    files (a Claude Code transcript with its subagent and resumed files, an opencode export with
    its subtask exports) is replayed once, named by its first file; the others are counted as
    `part of` it. Sessions of one account that overlap in
    time share the provider cache (column `shared_cache`). With -o, a re-run only replays files
    changed since (by path, size, mtime).
    With --strict, the exit code is 1 when any file failed. Read the dataset with
    `replay.batch.scan("DATASET")`, or `pl.scan_parquet("DATASET/sessions/*.parquet")`;
    docs/batch.md has the details.

    \b
    Example:
      replay batch ~/.claude/projects -s baseline,truncate-500 -o usage
      replay batch 'logs/**/*.jsonl' --per-request --workers 4 -o ds --since 2026-05-01
      replay batch /shared/logs --engine ray --ray-address ray://head:10001 -o /shared/ds
    """
    from replay import report as out
    from replay.batch import BatchOptions, parse_when, run_batch

    price_overrides(prices)  # a bad --price is a user error, before any work (as in `run`)
    if timings and fmt != "json":
        from replay._errors import ReplayError

        raise ReplayError(
            "--timings adds the seconds to the JSON report (--format json); the table's summary "
            "line on standard error always has them"
        )
    opts = BatchOptions(
        strategies=strategies,
        provider=provider,
        model=model,
        context_window=context_window,
        client=client,
        cache_rules=str(cache_rules) if cache_rules else None,
        prices=tuple(prices),
        ttl=ttl,
        strict=strict,
        per_request=per_request,
        share_cache=share_cache,
    )
    from replay.cli._progress import phase_bars

    # One bar per pass (scan, group, replay), on a terminal only: a pipe or a file gets no
    # fragments. The scan reads files; the group pass, folders of Claude Code (or opencode)
    # files; the replay, sessions (one of several files counts once).
    units = {"group": "folders", "replay": "sessions"}
    with phase_bars("files", quiet, out.console(stderr=True), units) as tick:
        result = run_batch(
            targets,
            opts,
            output=output,
            engine=engine,
            workers=workers,
            ray_address=ray_address,
            since=parse_when(since),
            until=parse_when(until, end=True),
            force=force,
            forget_missing=forget_missing,
            progress=tick,
        )
    if fmt == "json":
        out.write_output(out.to_json(result.document(timings=timings)), None)
    else:
        console = out.console()
        files, totals = _tables(result)
        console.print(files)
        if result.problems:
            console.print(_problem_table(result))
        console.print(totals)
    if not quiet:
        from replay._words import counted
        from replay.cli._cmd_core import print_notes

        err = out.console(stderr=True)
        files, rates = result.counts, result.timings()
        err.print(
            f"{counted(files['replayed'], 'file')} replayed ({counted(result.requests, 'request')})"
            + (
                f", {files['unchanged']} unchanged since the last run (their rows kept)"
                if files["unchanged"]
                else ""
            )
            + f" in {result.elapsed:.1f} s on {result.engine} × {result.workers}"
            + (
                f": {rates['files_per_second']} files/s, {rates['requests_per_second']} requests/s"
                if result.elapsed and files["replayed"]
                else ""
            )
        )
        print_notes(result.notes)
        if result.dataset:
            from pathlib import Path

            from replay._printable import printable

            if any((Path(result.dataset) / "sessions").glob("*.parquet")):
                # (`scan` also reads parts an older replay wrote, with fewer columns)
                # Quoted as Python quotes them: a name with a ' (`it's`) is still a call.
                scan = f"replay.batch.scan({str(result.dataset)!r})"
                glob = f"pl.scan_parquet({f'{result.dataset}/sessions/*.parquet'!r})"
                # One line, not wrapped: the call is copied from it.
                err.print(printable(f"dataset: {result.dataset} (read it with {scan}, or {glob})"),
                          soft_wrap=True)
            else:  # polars cannot scan a glob of no file: no hint that fails
                err.print(printable(f"dataset: {result.dataset} (no session rows yet)"))
    if strict and result.counts["failed"]:
        sys.exit(1)
