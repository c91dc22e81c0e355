"""`replay bench`: time the fast path against the naive reference and the floor, as ratios."""

from __future__ import annotations

from pathlib import Path

import click

from replay._errors import shown_path
from replay.cli._main import (
    NoDashPath,
    check_output_folder,
    cli,
    output_options,
    refuse_data_suffix,
    say,
    user_errors,
)

_BENCH_ONLY = ("strategies", "naive_requests", "doubling", "memory", "workers", "fmt", "output")
"""Options of the benchmark run that `--write-log` (which writes the log and stops) ignores."""


def _refuse_bench_options_with_write_log() -> None:
    """`--write-log` writes the synthetic log and stops: an option of the benchmark given with
    it would do nothing (`-s bogus` was not even checked, `-o` was dropped)."""
    ctx = click.get_current_context()
    given = [
        "/".join(p.opts) for p in ctx.command.params
        if p.name in _BENCH_ONLY
        and ctx.get_parameter_source(p.name) is not click.core.ParameterSource.DEFAULT
    ]
    if given:
        raise click.UsageError(
            f"--write-log only writes the synthetic log: {', '.join(given)} would do nothing "
            "(run the benchmark without --write-log)"
        )


def _finite(param: click.Parameter, value: float) -> float:
    if value != value:  # nan compares false with every bound of a range
        raise click.BadParameter("nan is not a number", param=param)
    return value


@cli.command("bench")
@click.option(
    "--requests",
    "-n",
    type=click.IntRange(1, 1_000_000),
    default=1000,
    show_default=True,
    help="Requests in the synthetic session.",
)
@click.option(
    "--strategies",
    "-s",
    default="all",
    show_default=True,
    help="`all` or comma-separated names (see `replay strategies`).",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of the synthetic session."
)
@click.option(
    "--naive-requests",
    type=click.IntRange(0),
    default=200,
    show_default=True,
    help="Requests the naive reference really runs (0 = all); beyond them its time is "
    "extrapolated from its measured per-request cost.",
)
@click.option(
    "--doubling/--no-doubling",
    default=True,
    show_default=True,
    help="Also replay a session twice as long (the doubling ratio).",
)
@click.option(
    "--memory/--no-memory",
    default=True,
    show_default=True,
    help="Measure peak memory in a child process.",
)
@click.option(
    "--max-context",
    "max_context",
    type=click.IntRange(1),
    default=None,
    help="Let the recorded agent compact (a `compaction` event) past this many tokens.",
)
@click.option(
    "--size-scale",
    type=click.FloatRange(min=0.001, max=1000),
    callback=lambda ctx, param, value: _finite(param, value),
    default=1.0,
    show_default=True,
    help="Multiply the sizes of the files the synthetic agent reads and writes (grep's matches "
    "by twice that, up to 1; test reports and listings keep their size).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    metavar="N",
    help="Also time `all` on N worker processes, as `replay LOG --workers N` runs it.",
)
@click.option("--provider", default="anthropic", show_default=True, help="Provider of the session.")
@click.option(
    "--model", default="claude-sonnet-4-5", show_default=True, help="Model of the session."
)
@click.option(
    "--write-log",
    type=NoDashPath(dir_okay=False, path_type=Path),
    callback=check_output_folder,
    help="Only write the synthetic session to this replay-log file, and stop.",
)
@output_options(("table", "json"))
@user_errors
def bench_command(
    requests: int,
    strategies: str,
    seed: int,
    naive_requests: int,
    doubling: bool,
    memory: bool,
    max_context: int | None,
    size_scale: float,
    workers: int | None,
    provider: str,
    model: str,
    write_log: Path | None,
    fmt: str,
    output: Path | None,
    quiet: bool,
) -> None:
    """Benchmark every strategy on a seeded synthetic session and print the ratios:
    naive / fast, fast / floor, doubling (time at 2N / time at N), peak memory / log size.

    The naive reference re-renders and re-tokenizes every prompt; it runs on the first
    --naive-requests requests and the output says when the rest is extrapolated. The floor
    reads the log and tokenizes each of its distinct blocks once; beside it, the floor of
    what was sent also tokenizes once each text the strategies derived (summaries, shortened
    outputs).

    \b
    Example:
      replay bench --requests 1000 --strategies all
      replay bench -n 60 -s baseline,sliding-10 --naive-requests 0 --format json
      replay bench -n 2000 --write-log /tmp/synthetic-2000.jsonl
      replay bench -n 1000 --workers 2
    """
    from replay import report
    from replay.bench import bench_table, run_bench, write_synthetic_log

    if write_log is not None:
        _refuse_bench_options_with_write_log()
        refuse_data_suffix(write_log, "replay-log JSONL", flag="--write-log")
        session = write_synthetic_log(
            write_log,
            requests,
            seed,
            max_context_tokens=max_context,
            provider=provider,
            model=model,
            size_scale=size_scale,
        )
        if not quiet:
            say(f"wrote {shown_path(write_log)}: {len(session.requests())} requests")
        _warn_if_unreplayable(session, write_log)
        return
    from rich.text import Text

    err = report.console(stderr=True, quiet=quiet or fmt == "json")
    result = run_bench(
        requests,
        strategies,
        seed=seed,
        naive_requests=naive_requests or None,
        doubling=doubling,
        memory=memory,
        max_context_tokens=max_context,
        size_scale=size_scale,
        provider=provider,
        model=model,
        workers=workers,
        progress=lambda message: err.print(Text.assemble(("bench:", "dim"), f" {message}")),
    )
    if fmt == "json":
        report.write_output(report.to_json(result), output)
        return
    report.print_table(bench_table(result), output, width=200)


def _warn_if_unreplayable(session, path: Path) -> None:
    """A log whose provider has no cache rules, or whose model no price, replays only with
    `--cache-rules` or `--price`: say so now rather than at its first replay."""
    from replay._api import replay
    from replay._errors import ReplayError
    from replay.bench import prefix_session

    try:
        replay(prefix_session(session, 2), "baseline", per_turn=False, keep_records=False)
    except ReplayError as err:
        say(f"warning: {shown_path(path)}: replaying it as it is fails: {err}")
