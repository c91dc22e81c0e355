"""Several logs given at once, each record read once: a file given twice or copied byte for byte
(a backup) is read once, and files the adapter reads as one session (a Claude Code transcript
with its resumed and subagent files, an opencode export with its subtask exports) are read
together, as `replay batch` reads them, so what is measured over the logs is not counted twice."""

from __future__ import annotations

import hashlib
import re
import stat
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replay._errors import LogFormatError
from replay.adapters._groups import GROUPED, folder_files, grouped_adapter, session_folder
from replay.log import Session


@dataclass(frozen=True)
class LeftOut:
    """A log given but not read on its own."""

    path: Path | str
    """As given (`-`: standard input)."""
    why: str
    """What it repeats: `given twice`, `same bytes as FILE`, `the same session as FILE (…)`,
    `read in FOLDER`, `read in the session of FILE`."""


@dataclass
class Logs:
    """What `read_each_once` read."""

    sessions: list[tuple[Path | str, Session]] = field(default_factory=list)
    """Each session read, named by its file (the first file of a session of several), in the
    order given."""
    left_out: list[LeftOut] = field(default_factory=list)
    """The logs not read on their own, and why, in the order given."""


@dataclass
class _Unit:
    """Files read as one session."""

    files: list[Path | str]
    """The first names the session (a session of several: in the adapter's reading order)."""
    fmt: str = ""
    """Format of a session of several files (a `GROUPED` one); empty for a single file."""


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, read a megabyte at a time (`replay batch` names dataset
    parts by it and finds copies with it)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _sha256(path: Path | str) -> str | None:
    """The SHA-256 of a regular file's bytes; None for anything else (a folder, a pipe,
    standard input: read once by its reader, hashed as it is read: `Session.stream_sha256`)."""
    if _is_stdin(path):
        return None
    try:
        return file_sha256(path) if stat.S_ISREG(Path(path).stat().st_mode) else None
    except OSError:
        return None  # its reader says what is wrong with it


def _is_stdin(path: Path | str) -> bool:
    """`-`, standard input (the command line passes it as the string)."""
    return isinstance(path, str) and path == "-"


def _is_folder(path: Path | str) -> bool:
    return not _is_stdin(path) and Path(path).is_dir()


def _folder_sha256(folder: Path) -> str | None:
    """What a folder reads, as one digest of its log files' bytes (a copied folder has the
    same); None for a folder `replay.load` refuses."""
    digests = sorted(filter(None, map(_sha256, folder_files(folder))))
    return "folder:" + hashlib.sha256("".join(digests).encode()).hexdigest() if digests else None


def _distinct(
    paths: Iterable[Path | str], left_out: list[LeftOut], known: dict[str, str]
) -> list[Path | str]:
    """`paths` without a path given twice, a file or folder with the bytes of one before it,
    or a file with the bytes of one a folder given reads (a file beside its copy inside the
    folder: the folder reads it). `known` gets the digest of each file kept or read in a
    folder → why a stream with its bytes is left out (a stream is hashed as it is read)."""
    paths = list(paths)
    read_in: dict[str, Path] = {}
    for folder in filter(_is_folder, paths):
        for file in folder_files(Path(folder)):
            read_in.setdefault(_sha256(file) or "", Path(folder))
    read_in.pop("", None)
    kept: list[Path | str] = []
    seen: set[Path | str] = set()
    first_copy: dict[str, Path | str] = {}
    for path in paths:
        key = path if _is_stdin(path) else Path(path).resolve()
        if key in seen:
            left_out.append(LeftOut(path, "given twice"))
            continue
        seen.add(key)
        sha = _folder_sha256(Path(path)) if _is_folder(path) else _sha256(path)
        if sha in read_in:
            left_out.append(LeftOut(path, f"read in {read_in[sha]}"))
            continue
        if sha in first_copy:
            left_out.append(LeftOut(path, f"same bytes as {first_copy[sha]}"))
            continue
        if sha is not None:
            first_copy[sha] = path
        kept.append(path)
    known.update((sha, f"read in {folder}") for sha, folder in read_in.items())
    known.update((sha, f"same bytes as {path}") for sha, path in first_copy.items())
    return kept


def _format(path: Path | str) -> str:
    """The format of a regular file, or "" (a folder, a pipe, standard input, no known log:
    read alone)."""
    from replay.adapters.detect import detect_file

    try:
        return detect_file(path) if not _is_stdin(path) and Path(path).is_file() else ""
    except LogFormatError:
        return ""  # its reader says what is wrong with it


def _units(paths: list[Path | str], left_out: list[LeftOut]) -> list[_Unit]:
    """`paths` as sessions: the files of a folder the adapter reads as one session become one
    unit, where the first of them was given; the others are left out, naming it."""
    buckets: dict[tuple[str, str], list[Path]] = defaultdict(list)
    for path in paths:
        fmt = _format(path)
        if fmt in GROUPED:
            buckets[(fmt, session_folder(fmt, path))].append(Path(path))
    given = {Path(p).resolve(): p for p in paths if not _is_stdin(p)}  # as given: Path or str
    unit_of: dict[Path, _Unit] = {}
    for (fmt, _), files in buckets.items():
        if len(files) < 2:
            continue
        for group in grouped_adapter(fmt).session_groups(files):
            if len(group) > 1:
                unit = _Unit([given[p.resolve()] for p in group], fmt)
                unit_of.update((p, unit) for p in unit.files)
    units: list[_Unit] = []
    placed: set[int] = set()
    for path in paths:
        unit = unit_of.get(path) or _Unit([path])
        if id(unit) not in placed:
            placed.add(id(unit))
            units.append(unit)
        if path != unit.files[0]:
            left_out.append(LeftOut(path, f"read in the session of {unit.files[0]}"))
    return units


def read_each_once(paths: Iterable[Path | str], *, strict: bool = False) -> Logs:
    """Read `paths` (files or folders, as `replay.load` reads each; `-` standard input),
    leaving out a path given twice, a file or folder with the same bytes as one given before
    it, a log of the same session as one read before it (its id and requests' ids: a
    `replay convert` copy), and a file a folder given reads too, and reading the files of one
    session (`session_groups` of their adapter, within a folder) together as one."""
    from replay._api import load

    logs = Logs()
    known: dict[str, str] = {}
    for unit in _units(_distinct(paths, logs.left_out, known), logs.left_out):
        if unit.fmt:
            files = [Path(f) for f in unit.files]
            session = grouped_adapter(unit.fmt).read_session(files, strict=strict)
        else:
            session = load(unit.files[0], strict=strict)
        sha = session.stream_sha256
        if sha is not None:
            if sha in known:
                logs.left_out.append(LeftOut(unit.files[0], known[sha]))
                continue
            known[sha] = f"same bytes as {session.path}"
        same = _same_session_key(session)
        if same is not None:
            if same in known:
                logs.left_out.append(LeftOut(unit.files[0], known[same]))
                continue
            known[same] = f"the same session as {unit.files[0]} (its id and requests)"
        logs.sessions.append((unit.files[0], session))
    return logs


def _same_session_key(session: Any) -> str | None:
    """What tells one session in another form (`replay convert`'s copy of a log): its id and
    its requests' ids, in order. None without a session id or requests to compare."""
    ids = [r.request_id for r in session.requests()]
    if not session.header.session_id or not ids:
        return None
    digest = hashlib.sha256("\n".join([session.header.session_id, *ids]).encode())
    return "session:" + digest.hexdigest()


def parent_file(header: Any) -> str:
    """The file a forked session names as its parent (pi: `parentSession`, v1 `branchedFrom`);
    empty for a session that is no fork."""
    for key in ("parentSession", "branchedFrom"):
        value = getattr(header, key, None)
        if isinstance(value, str) and value:
            return value
    return ""


def forks_with_parent(forks: Iterable[tuple[str, str]], files: Collection[str]) -> set[str]:
    """The forked sessions among `forks` (its file, the parent file its header names) whose
    parent is one of `files`: by its path, else by its file name when one file alone has it
    (pi names a session file by its start and id; the header keeps the path it had where it
    was written, which a moved or copied log no longer has). The requests such a fork copied
    (`copied_from_parent`) are counted in the parent only."""
    names = Counter(_name(f) for f in files)
    out: set[str] = set()
    for path, parent in forks:
        if not parent or _name(parent) == _name(path):
            continue
        if parent in files or names[_name(parent)] == 1:
            out.add(path)
    return out


def forks_among(sessions: Iterable[Session]) -> dict[str, str]:
    """`Session.path` → the name of its parent's file, for the forked sessions among `sessions`
    that copied requests from a parent that is one of them (`forks_with_parent`)."""
    sessions = [s for s in sessions if s.path]
    files = {str(Path(s.path).resolve()) for s in sessions}  # pi names the parent by its path
    parents = {
        s.path: parent_file(s.header)
        for s in sessions
        if getattr(s.header, "copied_requests", 0)
    }
    resolved = {str(Path(path).resolve()): path for path in parents}
    found = forks_with_parent(((r, parents[p]) for r, p in resolved.items()), files)
    return {resolved[r]: _name(parents[resolved[r]]) for r in found}


def _name(path: str) -> str:
    """A path's last part, whether written with / or \\ (a log written on Windows)."""
    return re.split(r"[\\/]", path)[-1]
