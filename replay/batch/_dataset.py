"""The Parquet dataset a batch appends to, and its incremental cache.

Layout of `DATASET/`:

    sessions/part-<sha>-<options>[-<group>].parquet   one row per session × strategy
    requests/part-….parquet                           one row per simulated request (--per-request)
    .replay-batch/manifest.jsonl                      the incremental cache (one line per file)
    .replay-batch/lock                                held while a batch writes

A part is named by the SHA-256 of the log's bytes, a digest of the replay options (and replay's
version) and, for sessions replayed through a shared cache, a digest of their cache group: the
same input replayed the same way always lands in the same part, so a re-run replaces rather than
duplicates. Parts are written atomically (temporary file + rename), so a reader never sees half a
part. Scan lazily with `scan(DATASET)` (parts of an older replay may lack newer columns: it
fills them with nulls), or `pl.scan_parquet(DATASET / "sessions" / "*.parquet")`.

The manifest maps each file (absolute path) to its size, mtime, scan result and replayed parts.
It is a journal: a line is appended when a file is done (an interrupted batch keeps what it
finished) and the file is rewritten compactly at the end. Parts that no entry references (replaced
by a newer part of the same file, or left by an interrupted run) are deleted at the end of each
run, so while a batch runs a re-processed file may briefly have both its old and its new part.
"""

from __future__ import annotations

import functools
import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any, TypeVar

from replay._atomic import write_atomic
from replay._errors import ReplayError
from replay.batch._options import BATCH_FORMAT
from replay.batch._work import FAILED, FileInfo, ScanResult

TABLES = ("sessions", "requests")
CACHE_DIR = ".replay-batch"
_FOLDER = "folder:"
"""Manifest key prefix of a folder's sessions of several files (entries of files are paths)."""


def _scan_from(data: dict[str, Any]) -> ScanResult:
    """A stored scan (a manifest entry of a file, or a session of several files) as a result;
    fields an entry does not store take their defaults."""
    return ScanResult(
        data["path"],
        data["size"],
        data["mtime_ns"],
        data["status"],
        data.get("sha"),
        data.get("message"),
        FileInfo(**data["info"]) if data.get("info") else None,
        transient=data.get("transient", False),
        fmt=data.get("fmt") or "",
        files=tuple(data.get("files") or ()),
    )


def scan(dataset: str | Path, table: str = "sessions"):
    """The dataset's `sessions` (or `requests`) rows as a polars LazyFrame; a column that
    parts an older replay wrote lack is null in their rows."""
    import polars as pl

    if table not in TABLES:
        raise ReplayError(f"unknown table {table!r}; known: {', '.join(TABLES)}")
    folder = Path(dataset) / table
    parts = sorted(folder.glob("*.parquet"))
    if not parts:
        hint = " (replay batch ... --per-request writes them)" if table == "requests" else ""
        raise ReplayError(f"{dataset}: no `{table}` rows yet{hint}")
    # Parts an older replay wrote may lack a column a newer one added (a file not replayed
    # since: deleted, or outside the last run's targets); one glob over both fails. Each
    # schema is scanned apart and the columns a part lacks are null.
    by_schema: dict[tuple, list[Path]] = {}
    for part in parts:
        by_schema.setdefault(tuple(pl.read_parquet_schema(part).items()), []).append(part)
    frames = [pl.scan_parquet(group) for group in by_schema.values()]
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")


def owns(root: Path, path: Path) -> bool:
    """True for a file of the dataset at `root` (both resolved): its cache folder, or a Parquet
    file of one of its tables (what `scan` reads). Any other file under `root` may be a log."""
    if path.is_relative_to(root / CACHE_DIR):
        return True
    return path.suffix == ".parquet" and any(path.parent == root / t for t in TABLES)


def any_dataset_owns(path: Path) -> bool:
    """True for a Parquet part of any batch dataset (a table folder beside a dataset's cache
    folder): a dataset found among the targets, or given as one, holds no log."""
    return (
        path.suffix == ".parquet"
        and path.parent.name in TABLES
        and (path.parent.parent / CACHE_DIR).is_dir()
    )


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _writes(method: _Method) -> _Method:
    """A method of `Dataset` that writes it: a failure of the file system (a folder one may not
    write in, a full disk) is a `ReplayError` naming the dataset, not a traceback."""

    @functools.wraps(method)
    def wrapper(self: Dataset, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except OSError as err:
            where = f" ({err.filename})" if err.filename else ""
            raise ReplayError(
                f"cannot write the dataset {self.root}: {err.strerror or err}{where}"
            ) from None

    return wrapper  # type: ignore[return-value]


class Dataset:
    """Parts and manifest of one dataset folder; only the batch's main process touches it."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise ReplayError(f"{self.root}: the dataset must be a folder, got a file")
        self.meta = self.root / CACHE_DIR
        self.manifest_path = self.meta / "manifest.jsonl"
        self.entries: dict[str, dict[str, Any]] = {}
        self._journal: IO[str] | None = None
        self._lock: IO[str] | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    @_writes
    def open(self) -> Dataset:
        for table in TABLES:
            (self.root / table).mkdir(parents=True, exist_ok=True)
        self.meta.mkdir(parents=True, exist_ok=True)
        self._take_lock()
        self.entries = self._read_manifest()
        if self._last_line_cut():  # appended onto, the next entry would break with it
            self._compact()
        self._journal = open(self.manifest_path, "a", encoding="utf-8")  # noqa: SIM115
        return self

    @_writes
    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
            self._compact()
            self._collect_garbage()
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _take_lock(self) -> None:
        handle = open(self.meta / "lock", "w", encoding="utf-8")  # noqa: SIM115
        try:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # pragma: no cover - no flock (Windows): no protection
            pass
        except OSError:
            handle.close()
            message = f"{self.root}: another `replay batch` is writing this dataset"
            raise ReplayError(message) from None
        self._lock = handle

    def _read_manifest(self) -> dict[str, dict[str, Any]]:
        entries: dict[str, dict[str, Any]] = {}
        if not self.manifest_path.exists():
            return entries
        with open(self.manifest_path, encoding="utf-8") as handle:
            for line in handle:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by an interrupted run
                if isinstance(entry, dict) and entry.get("format") == BATCH_FORMAT:
                    if entry.get("forgotten"):
                        entries.pop(entry["path"], None)
                    else:
                        entries[entry["path"]] = entry
        return entries

    def _last_line_cut(self) -> bool:
        """True when the manifest's last line lacks its newline: an interrupted run was
        writing it."""
        try:
            with open(self.manifest_path, "rb") as handle:
                handle.seek(-1, os.SEEK_END)
                return handle.read(1) != b"\n"
        except OSError:  # no manifest, or an empty one
            return False

    def _compact(self) -> None:
        lines = [json.dumps(e, sort_keys=True) for _, e in sorted(self.entries.items())]
        write_atomic(self.manifest_path, "".join(line + "\n" for line in lines))

    def _referenced(self) -> Counter[str]:
        refs: Counter[str] = Counter()
        for entry in self.entries.values():
            refs.update((entry.get("replay") or {}).get("parts", []))
        return refs

    def _collect_garbage(self) -> None:
        refs = self._referenced()
        for table in TABLES:
            for part in (self.root / table).glob("part-*.parquet"):
                if f"{table}/{part.name}" not in refs:
                    part.unlink(missing_ok=True)
            # Half-written parts of a batch killed while writing (`write_atomic`'s temporary
            # files): under the lock no other batch is writing one.
            for tmp in (self.root / table).glob(".part-*.parquet.*.tmp"):
                tmp.unlink(missing_ok=True)
        for tmp in self.meta.glob(".manifest.jsonl.*.tmp"):
            tmp.unlink(missing_ok=True)

    # --- scan cache --------------------------------------------------------------------------

    def cached_scan(self, path: str, size: int, mtime_ns: int, key: str) -> ScanResult | None:
        """The stored scan of `path` if the file and the scan options are unchanged."""
        e = self.entries.get(path)
        if not e or e["size"] != size or e["mtime_ns"] != mtime_ns or e["scan_key"] != key:
            return None
        return _scan_from(e)

    def record_scan(self, result: ScanResult, key: str) -> None:
        """Store a new scan of a file. Its earlier parts (an older version of the file) are no
        longer referenced: they stay readable until the end of the run, then go."""
        self._put(
            {
                "format": BATCH_FORMAT,
                "path": result.path,
                "size": result.size,
                "mtime_ns": result.mtime_ns,
                "scan_key": key,
                "status": result.status,
                "sha": result.sha,
                "fmt": result.fmt,
                "message": result.message,
                "info": asdict(result.info) if result.info else None,
                "replay": None,
            }
        )

    # --- replay cache ------------------------------------------------------------------------

    def unchanged(self, path: str, key: str, group: str, sha: str) -> list[str] | None:
        """The parts of the session named by `path` if it was replayed with the same options in
        the same cache group, from the same bytes (`sha`: of every file of a session of
        several), and they are all on disk."""
        e = self.entries.get(path)
        replay = (e or {}).get("replay")
        if not replay or replay["status"] != "ok" or replay["key"] != key:
            return None
        if replay["group"] != group or replay.get("sha") != sha:
            return None
        parts = replay["parts"]
        if not parts or not all((self.root / p).exists() for p in parts):
            return None  # (none: another file's replay took them over, `_disown`)
        return parts

    def failed(self, path: str, key: str, group: str, sha: str) -> str | None:
        """Why the session named by `path` failed when it was replayed with the same options in
        the same cache group, from the same bytes: it would fail alike (its failures that would
        not, a file that could not be read, were never stored)."""
        replay = (self.entries.get(path) or {}).get("replay")
        if not replay or replay["status"] != FAILED or replay["key"] != key:
            return None
        if replay["group"] != group or replay.get("sha") != sha:
            return None
        return replay["message"] or "failed"

    def write_parts(self, path: str, part: str, tables: dict[str, bytes | None]) -> list[str]:
        """Write a file's parts atomically; returns their names relative to the dataset."""
        names = []
        for table, data in tables.items():
            if data is None:
                continue
            name = f"{table}/{part}.parquet"
            write_atomic(self.root / name, data)
            names.append(name)
        return names

    def record_replay(
        self,
        path: str,
        key: str,
        group: str,
        status: str,
        message: str | None,
        parts: list[str],
        sha: str | None = None,
        files: tuple[str, ...] = (),
    ) -> None:
        """Store a file's replay (parts it no longer references go at the end of the run);
        `sha`: of the bytes replayed (every file of a session of several, `files`). A file read
        as part of another file's session is stored with no parts: rows of its own replay go."""
        entry = dict(self.entries[path])
        entry["replay"] = {
            "key": key,
            "group": group,
            "status": status,
            "message": message,
            "parts": parts,
            "sha": sha,
        }
        if files:
            entry["replay"]["files"] = list(files)
        self._put(entry)
        self._disown(path, parts)

    def _disown(self, path: str, parts: list[str]) -> None:
        """Parts are named by content: `path`'s replay rewrote any of them another entry names
        (a renamed file's old path, a copy of the same bytes), which holds `path`'s rows now.
        That entry no longer owns it: kept referenced, it outlived `path`'s next replay under
        other options, and the same session's rows were counted twice."""
        taken = set(parts)
        for other, entry in list(self.entries.items()):
            replay = entry.get("replay") or {}
            if other == path or not taken & set(replay.get("parts") or ()):
                continue
            replay = {**replay, "parts": [p for p in replay["parts"] if p not in taken]}
            self._put({**entry, "replay": replay})

    # --- sessions of several files -------------------------------------------------------

    def cached_sessions(self, folder: str, key: str) -> list[ScanResult] | None:
        """The sessions of several files found in `folder` (a `FolderTask`) by an earlier run,
        if `key` (the scan options and every file's path and hash) is unchanged."""
        e = self.entries.get(_FOLDER + folder)
        if not e or e.get("key") != key:
            return None
        return [_scan_from(u) for u in e["sessions"]]

    def record_sessions(self, folder: str, key: str, sessions: list[ScanResult]) -> None:
        self._put(
            {
                "format": BATCH_FORMAT,
                "path": _FOLDER + folder,
                "key": key,
                "sessions": [asdict(u) for u in sessions],
            }
        )

    def missing_under(self, roots: list[Path]) -> list[str]:
        """Files the manifest holds under `roots` that no longer exist."""
        return sorted(
            path
            for path in self.entries
            if not path.startswith(_FOLDER)
            and any(Path(path).is_relative_to(root) for root in roots)
            and not os.path.lexists(path)
        )

    def superseded(self) -> list[tuple[str, str]]:
        """(file, holder) for each file the manifest holds rows of that no longer exists while
        an existing file holds rows of the same session: another file of its session of several
        (the first file of a resumed session deleted, the rest now replayed without it), or a
        file of the same bytes (a file renamed where its part's name changed too: a
        shared-cache chain that changed). Kept, the session counted twice. (A session id alone
        is not taken as proof: two files of one id need not hold the same requests.)"""
        by_sha: dict[str, str] = {}
        missing: list[str] = []
        for path, entry in sorted(self.entries.items()):
            if path.startswith(_FOLDER) or not self._holds_rows(path):
                continue
            if os.path.lexists(path):
                by_sha.setdefault(entry["replay"].get("sha") or "", path)
            else:
                missing.append(path)
        by_sha.pop("", None)
        found = []
        for path in missing:
            replay = self.entries[path]["replay"]
            others = [
                f for f in replay.get("files") or ()
                if f != path and self._copies(f, path) and self._holds_session_of(f, path)
            ]
            holder = others[0] if others else by_sha.get(replay.get("sha") or "")
            if holder is not None:
                found.append((path, holder))
        return found

    def _copies(self, path: str, gone: str) -> bool:
        """Whether `path`, a file of `gone`'s session, holds `gone`'s requests: a resumed
        file copies the earlier file's lines (it starts when that one did, with at least as
        many requests); a subagent file or a subtask export holds its own thread only."""
        mine = (self.entries.get(path) or {}).get("info") or {}
        theirs = (self.entries.get(gone) or {}).get("info") or {}
        if not mine or not theirs:
            return False
        return (
            mine["started_at"] <= theirs["started_at"] and mine["requests"] >= theirs["requests"]
        )

    def read_in_missing(self, path: str) -> str | None:
        """The file no longer found whose session `path` was read in, and whose rows stay (a
        subagent file whose transcript was deleted: the transcript's rows hold its thread
        already; replayed alone, it would be counted twice). None otherwise, and for a file
        that copies that one (a resumed file: it holds the session now, `superseded`)."""
        replay = (self.entries.get(path) or {}).get("replay") or {}
        first = replay.get("message")
        if replay.get("status") != "part of" or not first or os.path.lexists(first):
            return None
        if not self._holds_rows(first) or self._copies(path, first):
            return None
        return first if path in (self.entries[first]["replay"].get("files") or ()) else None

    def _holds_rows(self, path: str) -> bool:
        return bool(((self.entries.get(path) or {}).get("replay") or {}).get("parts"))

    def _holds_session_of(self, path: str, gone: str) -> bool:
        """`path` exists and its rows, or those of the file it was read with, hold a session
        (not `gone`'s own rows)."""
        if not os.path.lexists(path):
            return False
        replay = (self.entries.get(path) or {}).get("replay") or {}
        if replay.get("parts"):
            return True
        first = replay.get("message")
        return (
            replay.get("status") == "part of" and first not in (None, gone)
            and os.path.lexists(first) and self._holds_rows(first)
        )

    @_writes
    def forget(self, path: str) -> None:
        """Drop a file's entry: its parts go at the end of the run."""
        self.entries.pop(path, None)
        if self._journal is not None:
            line = {"format": BATCH_FORMAT, "path": path, "forgotten": True}
            self._journal.write(json.dumps(line, sort_keys=True) + "\n")
            self._journal.flush()

    @_writes
    def _put(self, entry: dict[str, Any]) -> None:
        self.entries[entry["path"]] = entry
        if self._journal is not None:
            self._journal.write(json.dumps(entry, sort_keys=True) + "\n")
            self._journal.flush()

