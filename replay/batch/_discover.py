"""Find the files a batch should look at: directories (recursively), globs and single files.

Only paths are collected (never contents). Hidden files and folders (`.git`, the dataset's own
`.replay-batch` cache…) are left out, and so are the files `exclude` names (the output dataset's
own parts, when it lies inside an input folder). Whether a file is a log is decided later, by
`replay.load`, from its content.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, date, datetime, time
from pathlib import Path

from replay._errors import ReplayError

_GLOB_CHARS = set("*?[")


def _walk(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root, onerror=_unreadable):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield here / name


def _unreadable(err: OSError) -> None:
    """A folder the batch may not list is an error, not a folder without logs."""
    raise ReplayError(f"{err.filename}: cannot read the folder ({err.strerror})")


def discover(
    targets: Iterable[str | Path], exclude: Callable[[Path], bool] | None = None
) -> list[Path]:
    """Every regular file under `targets` (folders, glob patterns or files), resolved, sorted,
    without duplicates, but those `exclude` is true for (given the resolved path). A target
    that matches nothing is an error (a typo, not an empty run)."""
    found: dict[Path, None] = {}
    for target in targets:
        text = str(target)
        path = Path(os.path.expanduser(text))
        if path.is_dir():
            matches: Iterable[Path] = _walk(path)
        elif path.is_file():
            matches = [path]
        elif path.exists() and not _GLOB_CHARS & set(text):
            raise ReplayError(
                f"{text}: not a regular file (a pipe or a device): batch reads files and "
                "folders; `replay run` reads a log from a pipe"
            )
        elif _GLOB_CHARS & set(text):
            matches = (
                Path(m)
                for m in sorted(glob.glob(os.path.expanduser(text), recursive=True))
                if Path(m).is_file()
            )
        else:
            raise ReplayError(f"{text}: no such file, folder or glob match")
        count = 0
        for m in matches:
            resolved = m.resolve()
            if exclude is not None and exclude(resolved):
                continue
            found.setdefault(resolved, None)
            count += 1
        if not count and not path.is_dir():
            raise ReplayError(f"{text}: the pattern matches no file")
    return sorted(found)


def parse_when(text: str | None, *, end: bool = False) -> datetime | None:
    """`YYYY-MM-DD` (a whole day: its start, or its end with `end=True`) or an ISO date-time
    (UTC when it has no offset) → an aware datetime."""
    if text is None:
        return None
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return datetime.combine(day, time.max if end else time.min, tzinfo=UTC)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ReplayError(
            f"{text!r} is not a date: use YYYY-MM-DD or an ISO date-time (2026-05-01T09:30)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
