"""Errors a user can cause and fix: the CLI prints them in one line, with no traceback."""

from __future__ import annotations

from pathlib import Path


def shown_path(path: str | Path) -> str:
    """A path as a message names it: a `Path` named `-` (what `./-` gives) is `./-`, since `-`
    alone reads as standard input or output; the string `-`, that stream, is `-`."""
    return "./-" if isinstance(path, Path) and str(path) == "-" else str(path)


class ReplayError(Exception):
    """A problem with the user's input or options; the message says what to change."""


class PluginWarning(UserWarning):
    """An installed strategy plug-in that could not be loaded (skipped, so that it does not
    break every command): `replay` prints it as one `warning: …` line."""


class LogFormatError(ReplayError):
    """A log line that cannot be read: names the file, the line and what was expected."""

    def __init__(self, path: str | Path, line: int | None, expected: str) -> None:
        self.path = shown_path(path)
        self.line = line
        self.expected = expected
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {expected}")
