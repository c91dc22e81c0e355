"""Several logs given at once, each record read once: a file given twice or copied byte for byte
(a backup) is read once, so what is measured over the logs is not counted twice."""

from __future__ import annotations

import hashlib
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from replay.log import Session


@dataclass(frozen=True)
class LeftOut:
    """A log given but not read on its own."""

    path: Path
    """As given."""
    why: str
    """What it repeats: `given twice`, `same bytes as FILE`."""


@dataclass
class Logs:
    """What `read_each_once` read."""

    sessions: list[tuple[Path, Session]] = field(default_factory=list)
    """Each log read, as given, with its session, in the order given."""
    left_out: list[LeftOut] = field(default_factory=list)
    """The logs not read, and why."""


def _sha256(path: Path) -> str | None:
    """The SHA-256 of a regular file's bytes; None for anything else (a folder, a pipe: read
    once by its reader, never hashed beforehand)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except OSError:
        return None  # its reader says what is wrong with it
    return digest.hexdigest()


def read_each_once(paths: Iterable[Path], *, strict: bool = False) -> Logs:
    """Read `paths` (files or folders, as `replay.load` reads each), leaving out a path given
    twice and a file with the same bytes as one read before it."""
    from replay._api import load

    logs = Logs()
    seen: set[Path] = set()
    first_copy: dict[str, Path] = {}
    for path in paths:
        if path.resolve() in seen:
            logs.left_out.append(LeftOut(path, "given twice"))
            continue
        seen.add(path.resolve())
        sha = _sha256(path)
        if sha in first_copy:
            logs.left_out.append(LeftOut(path, f"same bytes as {first_copy[sha]}"))
            continue
        if sha is not None:
            first_copy[sha] = path
        logs.sessions.append((path, load(path, strict=strict)))
    return logs
