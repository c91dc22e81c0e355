"""`replay convert`: read any supported agent log and write it in the native replay-log format."""

from __future__ import annotations

from pathlib import Path

import click

from replay._errors import shown_path
from replay.cli._main import (
    LOG_PATH,
    OUTPUT_PATH,
    check_output_folder,
    cli,
    refuse_data_suffix,
    say,
    user_errors,
)

_FORMATS = ("replay-log", "claude-code", "codex", "pi", "opencode")


@cli.command("convert")
@click.argument("log", type=LOG_PATH)
@click.option(
    "-o",
    "--output",
    type=OUTPUT_PATH,
    callback=check_output_folder,
    required=True,
    help="Where to write the replay-log JSONL (atomically); `-` for standard output.",
)
@click.option(
    "--from",
    "source_format",
    type=click.Choice(_FORMATS),
    help="Read LOG as this format instead of recognising it from its content.",
)
@click.option("--strict", is_flag=True, help="Fail on the first malformed or repaired line.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
@user_errors
def convert_command(
    log: Path, output: Path, source_format: str | None, strict: bool, quiet: bool
) -> None:
    """Convert a Claude Code, Codex, pi or opencode log to the native replay-log format.

    The format is recognised from the content (not the file name). LOG may also be a Claude Code
    session directory (main transcript, resumed files and subagents/) or a directory of opencode
    exports (a session and its subtask sessions). Lenient by default: unreadable lines are
    skipped and counted; --strict stops at the first one. Replaying the converted file gives the
    same results as replaying LOG itself.

    \b
    Example:
      replay convert ~/.claude/projects/-home-me-app/4f1c….jsonl -o session.jsonl
      replay convert rollout-2026-06-17T22-44-39-019ed7c2.jsonl -o codex.jsonl --strict
      replay session.jsonl --strategies all
    """
    from replay._words import counted
    from replay.adapters import read_any
    from replay.log import RequestMarker, ThreadStart, dumps_log, write_log

    refuse_data_suffix(output, "replay-log JSONL")
    session = read_any(log, strict=strict, fmt=source_format)
    if output == "-":
        click.echo(dumps_log(session.header, session.events), nl=False)
    else:
        write_log(session, output)
    if quiet:
        return
    requests = sum(isinstance(e, RequestMarker) for e in session.events)
    threads = 1 + sum(isinstance(e, ThreadStart) for e in session.events)
    where = "standard output" if output == "-" else shown_path(output)
    message = (
        f"wrote {where}: {session.header.agent} log, {counted(requests, 'request')} in "
        f"{counted(threads, 'thread')}, {counted(len(session.events), 'event')}"
    )
    if session.skipped:
        message += f"; {counted(len(session.skipped), 'line')} skipped or repaired (first: "
        message += f"{session.skipped[0]}); use --strict to stop at the first one"
    hidden = getattr(session.header, "hidden_prefix_tokens", None)
    if hidden is not None:
        message += f"; estimated hidden prefix {hidden:,} tokens"
    say(message)
