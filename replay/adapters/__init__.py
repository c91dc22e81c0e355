"""Adapters: read other agents' logs as native `replay-log` sessions.

One module per source (`claude_code`, `codex`, `pi`, `opencode`), each with
`read(path, *, strict=False) -> Session`; `detect` recognises a log by its content. `read_any`
is what `replay.load` calls. See docs/adapters.md for every mapping rule and estimate.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from replay._errors import LogFormatError
from replay.adapters._once import LeftOut, Logs, forks_among, read_each_once
from replay.adapters.detect import FORMATS, detect
from replay.log import Session, read_log

_MODULES = {
    "claude-code": "replay.adapters.claude_code",
    "codex": "replay.adapters.codex",
    "pi": "replay.adapters.pi",
    "opencode": "replay.adapters.opencode",
}


def _read_native(path: str | Path, *, strict: bool = False) -> Session:
    """`read_log` with the ordering rules on tool calls and results checked (as the adapters
    do), any stray exception on a malformed file reported as a LogFormatError."""
    from replay.adapters._common import failures_as_log_errors

    with failures_as_log_errors(path):
        return read_log(path, strict=strict, check_pairs=True)


def reader_for(fmt: str):
    """The `read(path, *, strict)` function of a format name (see `FORMATS`)."""
    if fmt == "replay-log":
        return _read_native
    if fmt not in _MODULES:
        raise LogFormatError("-", None, f"unknown log format {fmt!r}; known: {', '.join(FORMATS)}")
    return importlib.import_module(_MODULES[fmt]).read


def read_any(path: str | Path, *, strict: bool = False, fmt: str | None = None) -> Session:
    """Read any supported log (format detected from the content unless `fmt` is given). A
    stream (a pipe, a FIFO; `-` for standard input) is read once, through a temporary copy."""
    from replay.adapters._stream import is_stream, read_stream
    from replay.adapters.detect import detect_file

    if is_stream(path):
        head_check = detect_file if fmt is None else None  # `--from` reads what it is told
        return read_stream(path, lambda copy: _read_file(copy, strict, fmt), head_check)
    return _read_file(path, strict, fmt)


def _read_file(path: str | Path, strict: bool, fmt: str | None) -> Session:
    name = fmt or detect(path)
    session = reader_for(name)(path, strict=strict)
    if fmt is not None and not session.events and session.skipped:
        # Every line was skipped: read as `--from FMT`, a file of another format.
        detected = _detected(path)
        if detected != fmt:
            raise LogFormatError(
                path,
                None,
                f"expected a {fmt} log: none of its lines is one ({len(session.skipped)} "
                f"skipped, first: {session.skipped[0]}); its content reads as {detected}",
            )
    return session


def _detected(path: str | Path) -> str:
    try:
        return detect(path)
    except LogFormatError:
        return "no supported format"


__all__ = [
    "FORMATS",
    "LeftOut",
    "Logs",
    "detect",
    "forks_among",
    "read_any",
    "read_each_once",
    "reader_for",
]
