"""Atomic file output: a reader never sees a half-written result."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from replay._errors import ReplayError, shown_path


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


def written_through(target: Path) -> bool:
    """A device or a pipe (`-o /dev/null`, a FIFO): written through, never replaced by a file."""
    try:
        mode = target.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _chunks(data: bytes | str | Iterable[str]) -> Iterator[bytes]:
    if isinstance(data, bytes):
        yield data
    elif isinstance(data, str):
        yield data.encode("utf-8", "backslashreplace")
    else:  # written as they come: a large log is never held whole as text and as bytes
        for piece in data:
            yield piece.encode("utf-8", "backslashreplace")


def write_atomic(path: str | Path, data: bytes | str | Iterable[str]) -> None:
    """Write `data` (bytes, text, or pieces of text written as they come) to `path` through a
    temporary file in the same folder, then rename.

    A symbolic link stays a link: the file it points to is replaced. A device or a pipe is
    written to as it is. Text is UTF-8; a lone surrogate the log held (some logs do) is written
    as its `\\uXXXX` escape, which is how JSON spells it. An error of the file system (a folder
    one may not write in) is a `ReplayError` naming the file; a pipe whose reader left raises
    `BrokenPipeError`.

    Missing parent folders are created (library callers such as `write_log` rely on it); the
    command line refuses an output file in a missing folder before doing any work
    (`replay.cli._main.check_output_folder`), so a mistyped `-o` never leaves a tree behind."""
    payload = _chunks(data)
    try:
        if written_through(Path(path)):  # (by the path given: `/dev/stdout` resolves to no path)
            with open(path, "wb") as handle:
                for chunk in payload:
                    handle.write(chunk)
            return
        _replace(Path(os.path.realpath(path)), payload)
    except BrokenPipeError:
        # A pipe's reader stopped reading (`-o /dev/stdout | head`): no mistake of the user's;
        # the command line ends silently, as it does when standard output is that pipe.
        raise
    except OSError as err:
        raise ReplayError(f"cannot write {shown_path(path)}: {err.strerror or err}") from None


def _replace(target: Path, payload: Iterable[bytes]) -> None:
    if target.exists() and not os.access(target, os.W_OK):
        # A rename into a writable folder would replace a file its owner made read-only, which
        # `open()` refuses: refused the same.
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, _mode_for(target))
        with os.fdopen(fd, "wb") as handle:
            for chunk in payload:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
