"""A log given as a stream: a pipe, a FIFO, `<(cat LOG)`, or standard input as `-`.

Reading a log takes more than one pass (the format is detected from the first lines, then the
reader starts again; some readers go over a file twice), and a stream can be read only once: the
second open of a FIFO waits for a writer that never comes. So a stream is copied once into a
temporary folder (never beside the input, which is not written), read from there, and the copy
removed; every message and `Session.path` name the stream as given, never the copy.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from replay._atomic import written_through
from replay._errors import LogFormatError, ReplayError
from replay.adapters.detect import SAMPLE_BYTES
from replay.log import Session

_CHUNK = 1 << 20

STDIN = "-"
"""The log name that means standard input: the string `-` itself. A `Path("-")` (what `./-`
becomes) is a file of that name."""


def is_stdin(path: str | Path) -> bool:
    """Whether `path` means standard input (the string `-`, not a path to a file named `-`)."""
    return isinstance(path, str) and path == STDIN


def is_stream(path: str | Path) -> bool:
    """`-`, or a path that is neither a regular file nor a folder (a pipe, a FIFO, a device)."""
    # (`written_through` is that test: outputs are written through such files.)
    return is_stdin(path) or written_through(Path(path))


def label(path: str | Path) -> str:
    """How messages name the stream: its path, `<stdin>` for `-`."""
    return "<stdin>" if is_stdin(path) else str(path)


@contextmanager
def _spooled(
    path: str | Path, head_check: Callable[[Path], object] | None
) -> Iterator[tuple[Path, str]]:
    """A temporary copy of the stream, read once, and the SHA-256 of its bytes; removed on
    leaving. The copy keeps the stream's file name: some readers take a session name from it.
    `head_check` is called on the copy of the stream's first `SAMPLE_BYTES` (all that format
    detection reads) before the rest is copied: a stream that is no log (`/dev/zero`, `yes |`)
    fails there, not after filling the disk."""
    name = "stdin" if is_stdin(path) else Path(path).name
    digest = hashlib.sha256()
    with _temporary_folder(path) as folder:
        copy = folder / name
        try:
            with copy.open("wb") as target, _opened(path) as source:
                head = _read(source, SAMPLE_BYTES, path)
                target.write(head)
                digest.update(head)
                if head_check is not None:
                    target.flush()
                    try:
                        head_check(copy)
                    except LogFormatError as err:
                        raise _renamed(err, copy, label(path)) from None
                while chunk := _read(source, _CHUNK, path):
                    target.write(chunk)
                    digest.update(chunk)
        except OSError as err:  # reading the stream is guarded apart: this is the copy's write
            raise _unwritable(path, folder.parent, err) from None
        yield copy, digest.hexdigest()


@contextmanager
def _temporary_folder(path: str | Path) -> Iterator[Path]:
    """A new temporary folder for the copy of the stream `path`, removed on leaving."""
    try:
        made = tempfile.TemporaryDirectory(prefix="replay-stream-")
    except OSError as err:  # (no writable temporary folder at all)
        raise _unwritable(path, Path(tempfile.gettempdir()), err) from None
    with made as folder:
        yield Path(folder)


def _unwritable(path: str | Path, where: Path, err: OSError) -> ReplayError:
    """The error for a copy of the stream `path` that could not be written in `where` (a full
    disk): what was not written, and where, not the stream's fault."""
    return ReplayError(
        f"cannot write the temporary copy of {label(path)} in {where}: "
        f"{err.strerror or err} (a stream is read through a copy; TMPDIR picks its folder)"
    )


def _read(source: BinaryIO, size: int, path: str | Path) -> bytes:
    """Up to `size` bytes of the stream `path`; a failure is the stream's (its read)."""
    try:
        return source.read(size)
    except OSError as err:
        raise _unreadable(path, err) from None


def _unreadable(path: str | Path, err: OSError) -> LogFormatError:
    return LogFormatError(label(path), None, f"cannot read the file ({err.strerror})")


@contextmanager
def _opened(path: str | Path) -> Iterator[BinaryIO]:
    """The stream's bytes: standard input's (left open), or the named stream's."""
    if is_stdin(path):
        if sys.stdin is None:  # `replay - <&-`: Python has no stream to read
            raise LogFormatError(label(path), None, "standard input is closed: expected a log")
        yield sys.stdin.buffer
    else:
        try:
            source = open(path, "rb")  # noqa: SIM115 (closed below; failing, a read)
        except OSError as err:
            raise _unreadable(path, err) from None
        with source:
            yield source


def _renamed(err: LogFormatError, copy: Path, name: str) -> LogFormatError:
    """`err` naming `name` where it named the temporary copy."""
    path = name if err.path == str(copy) else err.path
    return LogFormatError(path, err.line, err.expected.replace(str(copy), name))


def read_stream(
    path: str | Path,
    read: Callable[[Path], Session],
    head_check: Callable[[Path], object] | None = None,
) -> Session:
    """`read` of a copy of the stream `path`, read once, its messages naming `path`
    (`head_check`: see `_spooled`)."""
    name = label(path)
    with _spooled(path, head_check) as (copy, sha256):
        try:
            session = read(copy)
        except LogFormatError as err:
            raise _renamed(err, copy, name) from None
        except ReplayError as err:
            raise ReplayError(str(err).replace(str(copy), name)) from None
    session.path = name
    session.skipped = [_renamed(e, copy, name) for e in session.skipped]
    session.stream_sha256 = sha256
    return session
