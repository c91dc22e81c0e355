"""Atomic file output: a reader never sees a half-written result."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def _umask() -> int:
    """The process's file-creation mask, read without changing it where Linux shows it (setting
    and restoring it would briefly affect files other threads create)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(target: Path) -> int:
    """The permissions `open()` would have given the file: those of the file it replaces, else
    0666 less the umask (a temporary file is created 0600, which would leave reports and
    datasets unreadable to the group and others)."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        return 0o666 & ~_umask()


def write_atomic(path: str | Path, data: bytes | str) -> None:
    """Write `data` to `path` through a temporary file in the same folder, then rename.

    Missing parent folders are created (library callers such as `write_log` rely on it); the
    command line refuses an output file in a missing folder before doing any work
    (`replay.cli._main.check_output_folder`), so a mistyped `-o` never leaves a tree behind."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, _mode_for(target))
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
