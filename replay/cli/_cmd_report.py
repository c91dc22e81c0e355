"""`replay report` (one self-contained HTML file) and `replay plot` (one chart as PNG or SVG)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from replay._errors import shown_path
from replay.cli._cmd_strategies import resolve_strategies, strategy_options
from replay.cli._main import (
    LOG_PATH,
    OUTPUT_PATH,
    check_output_folder,
    cli,
    context_window_option,
    horizon_option,
    price_overrides,
    replay_options,
    say,
    ttl_option,
    user_errors,
    workers_option,
)

METRICS = ("prompt", "cost", "hit-ratio")



def _size(n: int) -> str:
    # From 999.5 kB on, kB would round to "1000 kB": the size is shown in MB from there.
    return f"{n / 1_000_000:.1f} MB" if n >= 999_500 else f"{n / 1000:.0f} kB"


@cli.command("report")
@click.argument("log", type=LOG_PATH)
@click.option(
    "-o",
    "--output",
    type=OUTPUT_PATH,
    default=Path("report.html"),
    callback=check_output_folder,
    show_default=True,
    help="HTML file to write (atomically), or `-` for standard output.",
)
@click.option("--strategies", "-s", default="all", show_default=True,
              help="`all`, `plugins`, or comma-separated names (see `replay strategies`).")
@strategy_options
@ttl_option
@context_window_option
@click.option("--breakeven/--no-breakeven", default=True, show_default=True,
              help="Simulate the break-even of every rewrite (the slow part on long logs).")
@horizon_option
@workers_option
@replay_options
@click.option("--quiet", "-q", is_flag=True, help="No progress bar, no closing line.")
@user_errors
def report_command(log: Path, output: Path, strategies: str, sets: tuple[str, ...],
                   strategy_files: tuple[Path, ...], ttl: str | None,
                   context_window: int | None, breakeven: bool,
                   horizon: int | None, workers: int, provider, model, client, cache_rules,
                   prices, strict, quiet: bool) -> None:
    """Write one self-contained HTML report of LOG: open it in any browser, offline.

    Charts per request (prompt size cached vs uncached, cumulative cost, cache-hit ratio; one
    line per strategy, switchable; markers at compactions, prunes and cache misses with their
    cause), the summary table with break-even and blind-action columns (sortable), every
    rewrite's break-even, and a turn navigator: for any strategy and request, the history
    before the strategy against the view after it, the first mismatch with the previous
    request, and hidden text the agent went on to use. Link to a turn with
    `report.html#strategy=NAME&request=N`.

    \b
    Example:
      replay report logs/run42.jsonl -o report.html
      replay report logs/run42.jsonl -s baseline,truncate-500 --no-breakeven -o small.html
      replay report logs/run42.jsonl --workers 4 -o report.html
    """
    from replay._errors import ReplayError
    from replay.cli._progress import progress_bar, status
    from replay.report import write_output
    from replay.report._html import build_report, render_html

    if not _html_target(output):
        # The page is HTML whatever the name says: `-o chart.png` would lie about it.
        raise ReplayError(f"-o {shown_path(output)}: the report is an HTML page: name it .html")
    if output == "-" and sys.stdout.isatty():
        raise ReplayError("-o -: the report is an HTML page, not for the terminal: give -o "
                          "FILE.html, or pipe it")
    if horizon is not None and not breakeven:
        raise ReplayError("--horizon limits break-even, which --no-breakeven leaves out")

    label = "replaying + break-even" if breakeven else "replaying"
    with progress_bar(label, quiet) as progress:
        document = build_report(
            log, resolve_strategies(strategies, sets, strategy_files), provider=provider,
            model=model, client=client,
            cache_rules=cache_rules, prices=price_overrides(prices), ttl=ttl,
            context_window=context_window, strict=strict, breakeven=breakeven,
            progress=progress, horizon=horizon, workers=workers,
        )
    with status("writing the page", quiet):
        # A lone surrogate a log held is written as its escape (`write_atomic` does the same).
        page = render_html(document).encode("utf-8", "backslashreplace")
    write_output(page, output)
    if not quiet:
        where = "standard output" if output == "-" else shown_path(output)
        from replay._words import counted

        strategies = counted(len(document["strategies"]), "strategy", "strategies")
        requests = counted(len(document["requests"]), "request")
        say(f"wrote {where} ({_size(len(page))}: {strategies} × {requests})")


def _html_target(output: Path | str) -> bool:
    """Standard output, a device or a pipe, or a file named .html — also through a link
    (`-o /dev/stdout > page.html` names page.html)."""
    from replay._atomic import written_through

    if output == "-" or written_through(Path(output)):
        return True
    return any(Path(p).suffix.lower() in (".html", ".htm")
               for p in (output, os.path.realpath(output)))


# Image formats `plot` cannot draw: a file named like one of them would lie about its content.
_OTHER_IMAGES = ("gif", "jpg", "jpeg", "webp", "bmp", "tif", "tiff", "pdf", "eps", "ps", "ico")


def _image_format(fmt: str | None, output: Path | str | None) -> str:
    """The format to draw: --format, else -o's suffix, else png. A suffix that names another
    image format (`-o chart.gif`, `--format svg -o chart.png`) is refused, and so is a suffix
    that names no format without --format (`-o chart.img`). `-o -` is standard output."""
    from replay._errors import ReplayError

    suffix = output.suffix.lower().lstrip(".") if isinstance(output, Path) else ""
    if suffix in _OTHER_IMAGES:
        raise ReplayError(f"-o {output}: cannot draw .{suffix} images; use a .png or .svg file")
    if suffix in ("png", "svg"):
        if fmt is not None and fmt != suffix:
            raise ReplayError(f"--format {fmt} but -o {output} names a .{suffix} file")
        return suffix
    if suffix and fmt is None:
        raise ReplayError(
            f"-o {output}: .{suffix} names no image format; use a .png or .svg file, or --format"
        )
    return fmt or "png"


@cli.command("plot")
@click.argument("log", type=LOG_PATH)
@click.option("--metric", type=click.Choice(METRICS), default="cost", show_default=True,
              help="prompt: tokens per request (whole / cached); cost: cumulative USD; "
              "hit-ratio: cached / prompt tokens per request.")
@click.option("--format", "fmt", type=click.Choice(["png", "svg"]),
              help="Image format (default: from -o's suffix, else png).")
@click.option("-o", "--output", type=OUTPUT_PATH, callback=check_output_folder,
              help="Image file to write, .png or .svg, or `-` for standard output (the default, "
              "when it is not a terminal).")
@click.option("--strategies", "-s", default="all", show_default=True,
              help="`all`, `plugins`, or comma-separated names.")
@strategy_options
@ttl_option
@context_window_option
@replay_options
@click.option("--quiet", "-q", is_flag=True, help="No progress bar, no notes.")
@user_errors
def plot_command(log: Path, metric: str, fmt: str | None, output: Path | str | None,
                 strategies: str, sets: tuple[str, ...], strategy_files: tuple[Path, ...],
                 ttl: str | None, context_window: int | None,
                 provider, model, client, cache_rules, prices, strict,
                 quiet: bool) -> None:
    """Draw one chart of LOG per request, one line per strategy, as PNG or SVG (offline).

    Markers show where a strategy compacted or pruned and where the cache missed.

    \b
    Example:
      replay plot logs/run42.jsonl --metric cost -o cost.png
      replay plot logs/run42.jsonl --metric hit-ratio --format svg -o hits.svg
    """
    from replay import report
    from replay._api import replay
    from replay.cli._progress import progress_bar, status
    from replay.report._charts import render_chart

    fmt = _image_format(fmt, output)
    if output in (None, "-") and sys.stdout.isatty():
        raise click.UsageError("give -o FILE (an image is not for the terminal)")
    with progress_bar("replaying", quiet) as progress:
        result = replay(log, resolve_strategies(strategies, sets, strategy_files),
                        provider=provider, model=model, client=client,
                        cache_rules=cache_rules, prices=price_overrides(prices), ttl=ttl,
                        context_window=context_window, strict=strict, progress=progress)
    with status(f"drawing {metric}", quiet):
        image = render_chart(result, metric, fmt)
    report.write_output(image, output)
    if not quiet:
        from replay.cli._cmd_core import print_notes

        print_notes(result.notes)
