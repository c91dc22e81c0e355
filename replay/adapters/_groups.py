"""Formats whose files may be one session together, and where such files lie: what `replay batch`
and `read_each_once` group files by before reading them (`session_groups`, `read_session`)."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

GROUPED = {
    "claude-code": "replay.adapters.claude_code",
    "opencode": "replay.adapters.opencode",
}
"""Formats whose files may be one session together (in one folder), with the adapter that says
which (`session_groups`) and reads such a group (`read_session`)."""


def grouped_adapter(fmt: str) -> ModuleType:
    """The adapter module of a `GROUPED` format (`session_groups`, `read_session`)."""
    return importlib.import_module(GROUPED[fmt])


def session_folder(fmt: str, path: str | Path) -> str:
    """The folder whose files may be one session with `path`: its own, or for a Claude Code
    `<sessionId>/subagents/agent-*.jsonl` file the project folder holding `<sessionId>.jsonl`."""
    p = Path(path)
    if fmt == "claude-code" and p.parent.name == "subagents":
        session = p.parent.parent
        if (session.parent / f"{session.name}.jsonl").is_file():
            return str(session.parent)
        return str(session)
    return str(p.parent)


def folder_files(folder: Path) -> list[Path]:
    """The files `replay.load(folder)` reads; none for a folder it refuses (its read says why)."""
    from replay._errors import LogFormatError
    from replay.adapters.detect import detect

    try:
        return grouped_adapter(detect(folder)).folder_files(folder)
    except LogFormatError:
        return []
