"""Find the files a batch should look at: directories (recursively), globs and single files.

Only paths are collected (never contents). Hidden files and folders (`.git`, the dataset's own
`.replay-batch` cache…) are left out, and so are the files `exclude` names (the output dataset's
own parts, when it lies inside an input folder). Whether a file is a log is decided later, by
`replay.load`, from its content.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, date, datetime, time
from pathlib import Path

from replay._errors import ReplayError

_GLOB_CHARS = set("*?[")


def _walk(root: Path, unlisted: dict[Path, str] | None) -> Iterator[Path]:
    """The files under the folder `root`, a target: `root` it cannot list is an error; a
    folder below it, one noted in `unlisted` (`_cannot_list`). Links to folders are followed,
    as a glob's `**` follows them, each folder listed once (a loop of links ends)."""

    def failed(err: OSError) -> None:
        folder = Path(err.filename)
        _cannot_list(folder, err, None if folder == root else unlisted)

    seen: set[tuple[int, int]] = set()

    def first_visit(folder: str) -> bool:
        try:
            st = os.stat(folder)
        except OSError:
            return True  # os.walk reports it (`failed`)
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return False
        seen.add(key)
        return True

    first_visit(str(root))
    for folder, dirs, files in os.walk(root, onerror=failed, followlinks=True):
        here = Path(folder)
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and first_visit(os.path.join(folder, d))
        )
        for name in sorted(files):
            if not name.startswith("."):
                yield here / name


def _cannot_list(folder: Path, err: OSError, unlisted: dict[Path, str] | None) -> None:
    """A folder the batch may not list is no folder without logs: an error when it was named
    (`unlisted` None), else noted there (the batch reports it as failed, and goes on)."""
    why = f"cannot read the folder ({err.strerror})"
    if unlisted is None:
        raise ReplayError(f"{folder}: {why}")
    unlisted[folder] = why


def _glob(pattern: str, unlisted: dict[Path, str] | None) -> Iterator[Path]:
    """The regular files `glob.glob(pattern, recursive=True)` matches, found the way it finds
    them, but a folder it cannot list is not skipped silently: the pattern's own folder (the
    part before the first wildcard, named by the user) is an error, a folder a wildcard led to
    is noted in `unlisted` (`_cannot_list`)."""
    if pattern.endswith(("/", os.sep)):
        return  # matches folders only
    parts = Path(pattern).parts
    fixed = next((n for n, part in enumerate(parts) if _GLOB_CHARS & set(part)), len(parts))
    base = Path(*parts[:fixed])
    folders = [base]
    rest = parts[fixed:]
    for n, part in enumerate(rest):
        last = n == len(rest) - 1
        found: list[Path] = []
        for folder in folders:
            missed = None if folder == base else unlisted
            if part == "**":
                found += _below(folder, missed, unlisted, files=last)
            elif _GLOB_CHARS & set(part):
                found += (
                    folder / e.name
                    for e in _entries(folder, missed)
                    if _matches(e.name, part) and (last or _is_dir(e))
                )
            elif last or (folder / part).is_dir():
                found.append(folder / part)
        folders = found
    yield from (p for p in folders if p.is_file())


def _entries(folder: Path, unlisted: dict[Path, str] | None) -> list[os.DirEntry[str]]:
    """What `folder` holds; nothing when it is no folder (the pattern matches nothing there)."""
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError as err:
        if folder.is_dir():
            _cannot_list(folder, err, unlisted)
        return []


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # a link to a folder is one, as for glob
    except OSError:
        return False


def _matches(name: str, part: str) -> bool:
    """As glob: a wildcard matches no hidden name, unless the pattern's part starts with a dot."""
    if name.startswith(".") and not part.startswith("."):
        return False
    return fnmatch.fnmatchcase(name, part)


def _below(
    folder: Path,
    unlisted: dict[Path, str] | None,
    deeper: dict[Path, str] | None,
    *,
    files: bool,
) -> Iterator[Path]:
    """What `**` matches in `folder`: itself and every folder below it (with `files`, the
    pattern's last part, every file too but not `folder` itself, which glob names `folder/`,
    even when it is a file), hidden ones left out. A folder reached through links is listed
    once (glob would follow a loop of links until the path is too long). `unlisted` is for
    `folder` itself, `deeper` for the folders below it."""
    if not files:
        yield folder
    seen: set[tuple[int, int]] = set()
    todo: list[tuple[Path, dict[Path, str] | None]] = [(folder, unlisted)]
    while todo:
        here, missed = todo.pop()
        for entry in _entries(here, missed):
            if entry.name.startswith("."):
                continue
            path = here / entry.name
            if not _is_dir(entry):
                if files:
                    yield path
                continue
            try:
                st = entry.stat()
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            yield path
            todo.append((path, deeper))


def target_roots(targets: Iterable[str | Path]) -> list[Path]:
    """The folders `targets` cover, resolved: a folder itself, a glob's folder before its first
    wildcard (a file target covers no folder)."""
    roots = []
    for target in targets:
        text = os.path.expanduser(str(target))
        parts = Path(text).parts
        fixed = next((n for n, part in enumerate(parts) if _GLOB_CHARS & set(part)), len(parts))
        base = Path(*parts[:fixed]) if fixed else Path(".")
        if base.is_dir():
            roots.append(base.resolve())
    return roots


def discover(
    targets: Iterable[str | Path],
    exclude: Callable[[Path], bool] | None = None,
    unlisted: dict[Path, str] | None = None,
) -> list[Path]:
    """Every regular file under `targets` (folders, glob patterns or files), resolved, sorted,
    without duplicates, but those `exclude` is true for (given the resolved path). A file or
    glob target that matches nothing, or only files `exclude` leaves out, is an error (a typo,
    not an empty run; an existing folder with no file is not: it may be emptied on purpose), and
    so is a target folder (or a pattern's folder) it cannot list. A folder found below
    one that cannot be listed is noted in `unlisted` (resolved → why), the rest of the tree
    walked; without `unlisted`, it is an error too."""
    found: dict[Path, None] = {}
    for target in targets:
        text = str(target)
        if text == "":  # Path("") is the current folder: an unset "$DIR" would read it
            raise ReplayError(f"{text!r}: an empty name is no file, folder or glob")
        path = Path(os.path.expanduser(text))
        missed: dict[Path, str] | None = {} if unlisted is not None else None
        try:
            path.stat()
        except PermissionError as err:  # a folder on the way may not be looked into
            raise ReplayError(
                f"{text}: cannot look into its folder ({err.strerror.lower()}): batch needs "
                "to list the folders it reads"
            ) from None
        except OSError:
            pass  # not there (a glob pattern, a typo): told apart below
        if path.is_dir():
            matches: Iterable[Path] = _walk(path, missed)
        elif path.is_file():
            matches = [path]
        elif path.exists() and not _GLOB_CHARS & set(text):
            raise ReplayError(
                f"{text}: not a regular file (a pipe or a device): batch reads files and "
                "folders; `replay run` reads a log from a pipe"
            )
        elif _GLOB_CHARS & set(text):
            matches = _glob(os.path.expanduser(text), missed)
        elif text == "-":
            raise ReplayError(
                "-: batch reads files and folders, not standard input; `replay run -` reads a "
                "log from a pipe"
            )
        else:
            raise ReplayError(f"{text}: no such file, folder or glob match")
        count = excluded = 0
        for m in matches:
            # A broken link, or one to a device, is reported under its own name, not its
            # target's (a link to a log or a folder is resolved: read once however named).
            resolved = m.resolve() if m.is_file() or m.is_dir() else m.absolute()
            if exclude is not None and exclude(resolved):
                excluded += 1
                continue
            found.setdefault(resolved, None)
            count += 1
        if missed and unlisted is not None:
            unlisted.update((folder.resolve(), why) for folder, why in missed.items())
        if not count and not missed and excluded:
            raise ReplayError(
                f"{text}: matches only a batch dataset's own files (its Parquet parts and "
                "cache), which are not logs; `replay.batch.scan(DATASET)` reads a dataset"
            )
        if not count and not missed and not path.is_dir():
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
