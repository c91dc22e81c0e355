"""`replay calibrate`: measure the token-count factor of private tokenizers on recorded usage."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import click

from replay._errors import shown_path
from replay.cli._main import (
    LOG_PATH,
    NoDashPath,
    check_output_folder,
    cli,
    output_options,
    refuse_data_suffix,
    say,
    user_errors,
)

FEW_PAIRS = 10
"""Below this many pairs a family's factor is measured with a warning: a percentile bootstrap
of a handful of ratios has about no coverage (of one ratio, zero width)."""


def _table(calibrations, title: str):
    from rich.table import Table

    from replay.report._fit import Fitted

    table = Table(title=title, title_justify="left")
    for col in ("family", "models", "pairs used / candidates", "factor (95% CI)",
                "per-pair quartiles", "table now",
                "framing fitted: factor · /message · /tool call"):
        table.add_column(col)
    for c in calibrations:
        fr = c.framing
        framing = "—" if fr is None else " · ".join(
            [fr.factor.text(3), fr.per_message.text(1),
             fr.per_tool_call.text(1) if fr.per_tool_call else "(in /message)"]
        )
        table.add_row(
            c.family,
            ", ".join(c.models),
            f"{c.pairs} / {c.candidates}" + (f" ({c.trimmed} trimmed)" if c.trimmed else ""),
            c.factor.text(3) if c.factor else "no usable pair",
            "/".join(f"{q:.2f}" for q in c.quartiles) if c.quartiles else "—",
            f"{c.documented.factor:g}" + ("" if c.documented.estimated else " (exact)"),
            framing,
        )
    # A narrow terminal keeps the family, its pairs, the factor measured and the one in force.
    hide = ("per-pair quartiles", "framing fitted: factor · /message · /tool call", "models")
    return Fitted(table, hide=hide, fold={"family": 12})


def _check_date(text: str) -> None:
    """The `--date` must be a calendar date: it is written into pricing/tokenizers.json rows,
    where a typo would pass for a measurement date."""
    from datetime import date

    from replay._errors import ReplayError

    try:
        date.fromisoformat(text)
    except ValueError:
        raise ReplayError(f"--date {text!r}: expected a date as YYYY-MM-DD (2026-11-29)") from None


@cli.command("calibrate")
@click.argument("logs", nargs=-1, required=True, type=LOG_PATH)
@click.option(
    "--date",
    default=lambda: datetime.now(UTC).date().isoformat(),
    metavar="YYYY-MM-DD",
    show_default="today, UTC",
    help="Date written in the `measured` text of the snippet.",
)
@click.option(
    "--write-tokenizers",
    type=NoDashPath(dir_okay=False, path_type=Path),
    callback=check_output_folder,
    help="Also write a tokenizer file with the measured rows (an earlier tokenizer file there "
    "keeps its rows of the families not measured); apply it to any command with "
    "REPLAY_TOKENIZERS=FILE.",
)
@click.option("--strict", is_flag=True, help="Fail on the first malformed log line.")
@output_options(("table", "json"))
@user_errors
def calibrate_command(logs: tuple[Path, ...], date: str, write_tokenizers: Path | None,
                      strict: bool, fmt: str, output: Path | None, quiet: bool) -> None:
    """Measure, per tokenizer family, provider tokens per tiktoken token from recorded usage.

    For each pair of consecutive requests of a thread, the growth of the billed prompt is set
    against the tiktoken count of the logged items appended in between (response, tool
    results, user message), minus the documented framing. Pairs with compactions, injected or
    reconstructed context, thinking or a model switch are left out. Prints per family the
    pairs used, the factor (ratio of sums, bootstrap 95% interval), the spread of per-pair
    ratios, the framing fitted instead of assumed, and the rows to put in
    pricing/tokenizers.json (see docs/calibration.md). A log given twice, or with the same
    bytes as another (a backup), is read once; the files of one session (a Claude Code
    transcript with its resumed and subagent files) are read together, as one; a forked pi
    session given with its parent leaves the requests it copied to the parent.

    \b
    Example:
      replay calibrate ~/.claude/projects/my-project/*.jsonl
      replay calibrate a.jsonl b.jsonl --format json -o calibration.json
      replay calibrate ~/.claude/projects/app/*.jsonl --write-tokenizers mine.json
      REPLAY_TOKENIZERS=mine.json replay fidelity SESSION.jsonl
    """
    from replay import report
    from replay._api import _skipped_note
    from replay._errors import ReplayError
    from replay._printable import printable_json
    from replay.adapters import forks_among, read_each_once
    from replay.adapters._stream import label
    from replay.tokens import calibrate, calibration_dict, logs_label, write_tokenizer_file

    _check_date(date)
    refuse_data_suffix(write_tokenizers, "json", ("json",), flag="--write-tokenizers")

    def warn(message: str) -> None:  # `-q`: nothing but the result
        if not quiet:
            say(f"warning: {message}")

    sessions = []
    # A log given twice, copied (a backup) or copied into a resumed file would count its pairs
    # twice: each record is read once.
    read = read_each_once(logs, strict=strict)
    for left in read.left_out:
        warn(f"{label(left.path)}: {left.why}; read once")
    for log, session in read.sessions:
        if session.skipped:
            warn(f"{label(log)}: {_skipped_note(session)}")
        if not session.requests():
            warn(f"{label(log)}: no request in this log; skipped")
            continue
        if not any(r.usage for r in session.requests()):
            warn(f"{label(log)}: no recorded usage in this log; skipped")
            continue
        sessions.append(session)
    # A forked session given with its parent: the pairs it copied are counted once (as batch).
    forks = forks_among(sessions)
    for session in sessions:
        if session.path in forks:
            copied = getattr(session.header, "copied_requests", 0)
            warn(
                f"{session.path}: {copied} request(s) copied from "
                f"{forks[session.path]}, given too (`copied_from_parent`): their "
                "pairs are counted in that log only"
            )
    calibrations = calibrate(sessions, forks=forks)
    if not any(c.pairs for c in calibrations):
        raise ReplayError(
            "no pair of consecutive requests with recorded usage grew by logged items only "
            "(logs without usage, or every pair had compactions, thinking or injected context)"
        )
    for c in calibrations:
        if 0 < c.pairs < FEW_PAIRS:
            warn(
                f"{c.family}: measured on {c.pairs} pair(s) only: a bootstrap interval of so few "
                "says little (one pair: none at all); give more logs"
            )
    # Public tokenizers are counted exactly: their factor is 1 by definition, and what they
    # measure is the method's own bias (shown in the table, never suggested as a row).
    snippet = [c.tokenizer_row(date, logs_label(c)) for c in calibrations if c.documented.estimated]
    if write_tokenizers is not None:
        written = write_tokenizer_file(calibrations, date, write_tokenizers)
        if not written["families"]:
            warn(f"{shown_path(write_tokenizers)}: no family with a private tokenizer was "
                 "measured (public ones count exactly); the file holds no row")
    if fmt == "json":
        document = {
            "date": date,
            "logs": [str(p) for p in logs],
            "read_once": [{"log": str(x.path), "why": x.why} for x in read.left_out],
            "families": [calibration_dict(c) for c in calibrations],
            "tokenizers": snippet,
        }
        report.write_output(report.to_json(document), output)
        return
    import io

    from rich.console import Console

    # The table is rendered to text first, so that the JSON rows after it are printed as they
    # are (a console would wrap their long strings, and they could not be pasted); on a
    # terminal, as wide as the terminal.
    width = report.console().width if output is None else 240
    buffer = Console(record=True, width=width, file=io.StringIO(), highlight=False, markup=False)
    buffer.print(_table(calibrations, f"tokenizer calibration · {len(sessions)} log(s)"))
    for c in calibrations:
        if c.excluded and not quiet:
            left = ", ".join(f"{k} {v}" for k, v in c.excluded.items())
            buffer.print(f"{c.family}: pairs left out: {left}", markup=False)
    text = buffer.export_text()
    if snippet:
        text += "rows for pricing/tokenizers.json (factor, measured, estimated):\n"
        text += printable_json(json.dumps(snippet, indent=2, ensure_ascii=False)) + "\n"
    else:
        text += "no row for pricing/tokenizers.json: the families measured count exactly\n"
    report.write_output(text, output)
