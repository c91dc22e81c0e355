"""Atomic file output: a reader never sees a half-written result."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


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
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
