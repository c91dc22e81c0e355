"""What a worker does: scan one file, or replay one group of files. Module-level functions of
plain, picklable values, so the same code runs in-process, in a spawned process pool and as a
Ray task. A worker holds one session at a time; per-file errors are returned, never raised.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import io
import json
import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from replay._api import LOG_COUNTS, log_counts
from replay._errors import LogFormatError, ReplayError
from replay.adapters._groups import grouped_adapter
from replay.adapters._once import file_sha256, parent_file
from replay.batch._options import BatchOptions

OK, SKIPPED, FAILED = "ok", "skipped", "failed"

SESSION_META = [
    "file",
    "session_id",
    "agent",
    "provider",
    "model",
    "started_at",
    "ended_at",
    "shared_cache",
    "cache_group",
    "group_position",
    "skipped_lines",
    "copied_requests_dropped",
    "no_cache_requests",
    *LOG_COUNTS,
]
"""Columns in front of the summary columns on every session row."""

SESSION_PRICING = ["price_fallback_requests", "price_fallback"]
"""Columns after the summary columns on every session row: how many of the strategy's requests
were priced with a fallback (a rate the price table lacks), and the distinct reasons."""

REQUEST_META = ["file", "session_id", "agent", "provider", "shared_cache", "cache_group"]
"""Columns in front of the per-request columns."""


@dataclass
class FileInfo:
    """What the scan learnt about one log (enough to group and order sessions)."""

    session_id: str
    agent: str
    provider: str
    model: str
    started_at: str
    """ISO-8601, UTC."""
    ended_at: str
    requests: int
    scope: str
    """Digest of what decides the cache scope: provider, agent, system prompt and tools."""
    skipped_lines: int = 0
    fmt: str = ""
    """Log format detected from the content (`replay.adapters.FORMATS`): which adapter reads
    the file, and whether its files may form one session with other files (`GROUPED`)."""
    parent: str = ""
    """The session file a forked session was forked from, as its header names it (pi's
    `parentSession` / `branchedFrom`: a path where the log was written); empty otherwise."""
    copied_requests: int = 0
    """Requests a forked session's file copied from its parent (`copied_from_parent`)."""


@dataclass
class ScanResult:
    """One file after the scan: recognised (with its info), skipped or failed."""

    path: str
    size: int
    mtime_ns: int
    status: str
    sha: str | None = None
    """SHA-256 of the file's bytes (names its dataset parts, finds duplicate copies)."""
    message: str | None = None
    info: FileInfo | None = None
    transient: bool = False
    """The worker died, or the file could not be read (permissions): not a property of its
    bytes, so not cached."""
    fmt: str = ""
    """Log format detected from the content, even when the file could not be replayed on its
    own (a Claude Code subagent file with no request is still part of its session)."""
    files: tuple[str, ...] = ()
    """A session of several files (a Claude Code transcript with its subagent and resumed
    files, an opencode export with its subtask exports): all of them in reading order, `path`
    first; `sha`, `size` and `info` are then the whole session's. Empty for a one-file session."""


@dataclass
class Member:
    """One session of a replay task."""

    path: str
    """Its file, or the first file of a session of several (which names the session)."""
    sha: str
    info: FileInfo
    part: str
    """Base name of its dataset parts."""
    files: tuple[str, ...] = ()
    """Every file of a session of several, in reading order (see `ScanResult.files`)."""
    drop_copied: bool = False
    """A forked session whose parent is replayed in the same batch: the requests it copied
    from the parent (`copied_from_parent`) are in the parent's rows, and left out of its own."""
    context_only: bool = False
    """Outside --since/--until, in a chain with a session inside: replayed for what it leaves in
    the chain's shared cache (the other sessions' rows are those of a batch without the
    filter), but gives no rows of its own."""


@dataclass
class GroupTask:
    """Files replayed in order by one worker; `shared` = through one provider cache."""

    members: list[Member]
    shared: bool = False
    group_id: str | None = None
    scope: str | None = None


@dataclass
class FileOutcome:
    """One replayed file: its rows as Parquet bytes, or why it failed."""

    path: str
    status: str
    message: str | None = None
    sessions: bytes | None = None
    requests: bytes | None = None
    rows: int = 0
    transient: bool = False
    """The worker died, or the file or memory failed it: not a property of its bytes and the
    options, so not cached (a failure that is one is kept, not retried: `Dataset.failed`)."""


def _utc(ts: datetime) -> datetime:
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def failure(path: str, err: BaseException) -> FileOutcome:
    """The outcome of a replay that raised `err`: one that the same bytes and options would
    raise again is cached; a file that could not be read, or memory that ran out, is not."""
    if isinstance(err, OSError):
        return FileOutcome(path, FAILED, message=unreadable(err), transient=True)
    return FileOutcome(path, FAILED, message=describe(err), transient=isinstance(err, MemoryError))


def printable_path(path: str) -> str:
    """`path` as text: a file name's bytes that are no UTF-8 (kept by Python as lone
    surrogates, which no Parquet text column takes) written as `\\xNN`."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def describe(err: BaseException) -> str:
    """A one-line message: user-fixable errors as they are, anything else with its type."""
    if isinstance(err, ReplayError):
        return str(err)
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


_UNRECOGNISED_HINTS = (
    "matches none of them",
    "expected a coding-agent log",
    "session` header line",
    "empty log",
    "empty file",
    "expected utf-8",
    "-compressed file",
)


def _unrecognised(path: str, err: LogFormatError) -> bool:
    """True when the file is no log that `replay.load` knows (skip it), False when it is a
    known kind of log that could not be read (it failed). Detection is the adapters'."""
    try:
        from replay.adapters import detect
    except ImportError:  # no content detection: judge by the reader's message
        first = err.line in (None, 1)
        return first and any(h in err.expected.lower() for h in _UNRECOGNISED_HINTS)
    try:
        detect(path)
    except LogFormatError:
        return True
    except Exception:  # noqa: BLE001 - a detector crash: report the reader's error instead
        return False
    return False


def _scope(provider: str, session: Any) -> str:
    header = session.header
    tools = [t.model_dump(mode="json") for t in header.tools]
    blob = json.dumps([provider, header.agent, header.system, tools], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _load(path: str, opts: BatchOptions, files: tuple[str, ...] = (), fmt: str = ""):
    """One file, or the files of one session (`files`, of format `fmt`), as a `Session`; a
    known `fmt` is not detected again."""
    if files:
        from pathlib import Path

        return grouped_adapter(fmt).read_session([Path(f) for f in files], strict=opts.strict)
    from replay.adapters import read_any

    return read_any(path, strict=opts.strict, fmt=fmt or None)


def unit_sha(shas: list[str]) -> str:
    """The SHA-256 naming a session of several files: a digest of its files' hashes in reading
    order (changes when any of them does)."""
    if len(shas) == 1:
        return shas[0]
    return hashlib.sha256("\x00".join(shas).encode()).hexdigest()


def scan_file(path: str, opts: BatchOptions) -> ScanResult:
    """Stat, hash and read one file; never raises."""
    try:
        st = os.stat(path)
    except OSError as err:
        return ScanResult(path, 0, 0, FAILED, message=unreadable(err), transient=True)
    result = ScanResult(path, st.st_size, st.st_mtime_ns, FAILED)
    if not stat.S_ISREG(st.st_mode):  # a FIFO would wait for a writer: never opened
        result.status, result.message = SKIPPED, "not a regular file (a pipe or a device)"
        return result
    try:
        result.sha = file_sha256(path)
        result.fmt = _format(path)
        result.info = _info(path, _load(path, opts, fmt=result.fmt), opts, result.fmt)
        result.status = OK
    except LogFormatError as err:
        result.status = SKIPPED if _unrecognised(path, err) else FAILED
        result.message = describe(err)
    except OSError as err:  # fixed without touching the file (permissions): not cached
        result.message, result.transient = unreadable(err), True
    except Exception as err:  # noqa: BLE001 - one bad file must not stop the batch
        result.message = describe(err)
    return result


def unreadable(err: OSError) -> str:
    return f"cannot read the file ({err.strerror or type(err).__name__})"


def _format(path: str) -> str:
    from replay.adapters import detect

    try:
        return detect(path)
    except LogFormatError:
        return ""


def _info(path: str, session: Any, opts: BatchOptions, fmt: str) -> FileInfo:
    """What grouping needs of a read session (raises when it has no requests)."""
    requests = session.requests()
    if not requests:
        raise ReplayError(f"{path}: the log has no requests to replay")
    header = session.header
    times = [_utc(header.ts)] + [_utc(e.ts) for e in session.events]
    # A forked session started when its header says, after the history it copied.
    started = _utc(header.ts) if parent_file(header) else min(times)
    models = sorted({model for _, _, model in session.requests_ran()}) if not opts.model else [
        opts.model
    ]
    provider = opts.provider or header.provider
    return FileInfo(
        session_id=header.session_id,
        agent=header.agent,
        provider=provider,
        model=",".join(models),
        started_at=started.isoformat(),
        ended_at=max(times).isoformat(),
        requests=len(requests),
        scope=_scope(provider, session),
        skipped_lines=len(session.skipped),
        fmt=fmt,
        parent=parent_file(header),
        copied_requests=getattr(header, "copied_requests", 0),
    )


def scan_files(paths: list[str], opts: BatchOptions) -> list[ScanResult]:
    """`scan_file` for each path (one task for several small files)."""
    return [scan_file(p, opts) for p in paths]


@dataclass
class FolderTask:
    """Files of one format in one folder that may form sessions of several files."""

    fmt: str
    files: list[ScanResult]
    """Their scans (in path order): ok, or failed on their own (read with their session, a
    file without requests may be fine)."""


def group_folder(task: FolderTask, opts: BatchOptions) -> list[ScanResult]:
    """The sessions of several files among `task.files`, by the adapter's rule
    (`session_groups`), each scanned as a whole: one `ScanResult` per such session (its `files`
    in reading order). Files of no such session are sessions alone (not returned). Never
    raises: a failure to group is returned as one failed result naming the first file."""
    from pathlib import Path

    scans = {s.path: s for s in task.files}
    try:
        groups = grouped_adapter(task.fmt).session_groups([Path(p) for p in scans])
    except Exception as err:  # noqa: BLE001 - reported, not raised
        first = task.files[0]
        files = tuple(scans)
        transient = isinstance(err, OSError)  # (a file made unreadable: not cached)
        message = unreadable(err) if transient else describe(err)
        return [ScanResult(first.path, 0, 0, FAILED, message=message, files=files,
                           transient=transient)]
    out = []
    for group in groups:
        if len(group) < 2:
            continue
        files = tuple(str(p) for p in group)
        members = [scans[f] for f in files]
        result = ScanResult(
            files[0],
            sum(m.size for m in members),
            members[0].mtime_ns,
            FAILED,
            sha=unit_sha([m.sha for m in members]),  # type: ignore[misc]
            fmt=task.fmt,
            files=files,
        )
        try:
            session = _load(files[0], opts, files, task.fmt)
            result.info = _info(files[0], session, opts, task.fmt)
            result.status = OK
        except OSError as err:  # fixed without touching the file (permissions): not cached
            result.message, result.transient = unreadable(err), True
        except Exception as err:  # noqa: BLE001 - one bad session must not stop the batch
            result.message = describe(err)
        out.append(result)
    return out


# --- replay -------------------------------------------------------------------------------

_CODE_PLUGIN_ERROR: list[str] = []
"""Why this worker could not register the calling program's plug-ins (`register_code_plugins`):
every file it replays fails with it."""


CODE_PLUGINS_INSTEAD = "or load it with load_strategy_file, or use workers=1"
"""What to do instead of registering in code a strategy the pool's workers cannot import."""


def register_code_plugins(payload: bytes) -> None:
    """A pool worker's initializer: register the plug-ins the calling program registered
    (`_code_plugins`). A build function the worker cannot import (defined under a script's
    `if __name__ == "__main__":`) is kept as the error of the files it would replay."""
    from replay.strategies import register, registered
    from replay.strategies._plugins import unpickled_in_worker

    try:
        specs = unpickled_in_worker(
            payload, "a strategy registered in code", CODE_PLUGINS_INSTEAD
        )
        have = {spec.family for spec in registered()}
        for spec in specs:
            if spec.family not in have:  # (a script that registers it at its top level did)
                register(spec)
    except ReplayError as err:
        _CODE_PLUGIN_ERROR.append(str(err))


_CONFIGS: dict[tuple[BatchOptions, tuple[int, ...]], tuple[Any, list[Any]]] = {}
"""By the options and the plug-ins registered (a plug-in file edited and loaded again by the
calling program, whose process replays the files of a serial batch)."""


def _setup(opts: BatchOptions) -> tuple[Any, list[Any]]:
    """The replay config and resolved strategies, built once per worker process."""
    from replay.strategies import load_strategy_file, registered

    if _CODE_PLUGIN_ERROR:
        raise ReplayError(_CODE_PLUGIN_ERROR[0])
    for path in opts.plugin_files:  # (a no-op once loaded, while the file is unchanged)
        load_strategy_file(path)
    key = (opts, tuple(id(spec) for spec in registered() if spec.is_plugin))
    hit = _CONFIGS.get(key)
    if hit is None:
        from replay._api import _config
        from replay.tokens import tokenizer_file_in_force, use_tokenizers

        if opts.tokenizers != tokenizer_file_in_force():
            use_tokenizers(opts.tokenizers)
        from replay.prices import parse_price_overrides
        from replay.strategies import resolve

        prices = parse_price_overrides(opts.prices)
        config = _config(
            provider=opts.provider,
            model=opts.model,
            client=opts.client,
            cache_rules=opts.cache_rules,
            rule_overrides=None,
            prices=prices,
            ttl=opts.ttl,
            context_window=opts.context_window,
        )
        hit = _CONFIGS[key] = (config, resolve(opts.strategies))
    return hit


PART_METADATA_NOTE = "replay.note"
"""Key of the Parquet key-value metadata of every part that holds `TRAJECTORY_NOTE` (read it
with `pl.read_parquet_metadata(part)`): what the rows measure travels with them."""


def _parquet(frame: Any) -> bytes:
    from replay._api import TRAJECTORY_NOTE

    buffer = io.BytesIO()
    frame.write_parquet(buffer, statistics=True, metadata={PART_METADATA_NOTE: TRAJECTORY_NOTE})
    return buffer.getvalue()


def _prune(shared: Any, t: datetime) -> None:
    """Drop cache entries, and the prompts an automatic-prefix cache holds, that expired before
    `t`: no later session of the chain (they start at `t` or later) can read them, and the store
    stays as small as the live cache. (An expired prompt left in place was the longest match of
    a later session's identical prompt: every one of its requests a "TTL expired" miss.)"""
    for store in shared.stores.values():
        dead = [k for k, e in store.entries.items() if e.expired(t)]
        for k in dead:
            del store.entries[k]
        for prompts in store.prompts.values():
            prompts[:] = [p for p in prompts if not p.expired(t)]


def _outcome(
    member: Member, task: GroupTask, position: int, session: Any, records: list[Any],
    opts: BatchOptions,
) -> FileOutcome:
    """A file's rows (session × strategy, and per request on request) as Parquet bytes."""
    import polars as pl

    from replay.engine import summary_frame, turns_frame

    info = member.info
    strategies = list(dict.fromkeys(r.strategy for r in records))
    every = records
    copied = _copied(session) if member.drop_copied else set()
    if copied:  # the parent's rows hold them
        records = [r for r in records if r.request_index not in copied]
    used = records or every  # a fork with no request of its own: the models it ran
    meta = {
        "file": printable_path(member.path),
        "session_id": info.session_id,
        "agent": info.agent,
        "provider": ",".join(sorted({r.provider for r in used})),
        "model": ",".join(sorted({r.model for r in used})),
        "started_at": datetime.fromisoformat(info.started_at),
        "ended_at": datetime.fromisoformat(info.ended_at),
        "shared_cache": task.shared,
        "cache_group": task.group_id,
        "group_position": position if task.shared else None,
        "skipped_lines": len(session.skipped),
        "copied_requests_dropped": len(copied),
        # The rules' doing, not the strategies': the same requests under every strategy.
        "no_cache_requests": len({r.request_index for r in records
                                  if r.kind == "request" and r.outcome.mechanism == "none"}),
        # What `replay run` says of the log itself in its notes, counted (a note sums them).
        **log_counts(session, copied),
    }
    types = dict.fromkeys(("file", "session_id", "agent", "provider", "model"), pl.Utf8) | {
        "started_at": pl.Datetime("us", "UTC"),
        "ended_at": pl.Datetime("us", "UTC"),
        "shared_cache": pl.Boolean,
        "cache_group": pl.Utf8,
        "group_position": pl.Int64,
        "skipped_lines": pl.Int64,
        "copied_requests_dropped": pl.Int64,
        "no_cache_requests": pl.Int64,
    } | dict.fromkeys(LOG_COUNTS, pl.Int64)

    def with_meta(frame: Any, columns: list[str]) -> Any:
        head = [pl.Series(c, [meta[c]] * frame.height, dtype=types[c]) for c in columns]
        return pl.concat([pl.DataFrame(head), frame], how="horizontal")

    # Every strategy has its row, even one a fork's copies left with no request (zeros).
    summary = with_fallbacks(
        with_meta(summary_frame(records, strategies), SESSION_META), records
    )
    outcome = FileOutcome(member.path, OK, sessions=_parquet(summary), rows=summary.height)
    if opts.per_request:
        outcome.requests = _parquet(with_meta(turns_frame(records), REQUEST_META))
    return outcome


def _copied(session: Any) -> set[int]:
    """Indexes (`RequestRecord.request_index`) of the requests a forked session copied from its
    parent."""
    return {
        n for n, r in enumerate(session.requests()) if getattr(r, "copied_from_parent", False)
    }


def with_fallbacks(summary: Any, records: list[Any]) -> Any:
    """`summary` (one row per strategy) with the requests each strategy's pricing fell back on
    (`RequestRecord.price_warning`): their count and the distinct reasons, so a batch says what
    `replay run` says in its notes."""
    import polars as pl

    counts: dict[str, int] = {}
    reasons: dict[str, set[str]] = {}
    for r in records:
        if r.price_warning:
            counts[r.strategy] = counts.get(r.strategy, 0) + 1
            reasons.setdefault(r.strategy, set()).add(r.price_warning)
    names = summary["strategy"].to_list()
    return summary.with_columns(
        pl.Series(SESSION_PRICING[0], [counts.get(n, 0) for n in names], pl.Int64),
        pl.Series(
            SESSION_PRICING[1],
            ["; ".join(sorted(reasons[n])) if n in reasons else None for n in names],
            pl.Utf8,
        ),
    )


def _replay_alone(member: Member, task: GroupTask, opts: BatchOptions) -> FileOutcome:
    """One session on its own cache: every strategy in one replay, as `replay run` does (the
    unlogged context fitted once, not once per strategy: 48 fits made `-s all` 2.4× slower),
    each record kept without its block arrays until the rows are built (they held 53× the
    log's size on a 26 MB transcript)."""
    from replay.engine._replay import iter_replay

    base, strategies = _setup(opts)
    session = _load(member.path, opts, member.files, member.info.fmt)
    config = copy.copy(base)
    config.keep_blocks = False  # the rows read no block arrays
    records: list[Any] = []
    for _named, run_records in iter_replay(session, strategies, config):
        records.extend(run_records)
    return _outcome(member, task, 0, session, records, opts)


def _replay_chain(task: GroupTask, opts: BatchOptions) -> list[FileOutcome]:
    """The sessions of a chain on one shared provider cache per strategy, their requests
    interleaved in time order (as the provider saw them). A session is read when its start
    comes and dropped when its last request is done, so only the sessions running at the same
    time are in memory together."""
    import heapq

    from replay.engine._replay import SharedCache, _Run, _SessionFacts, with_unlogged_context

    base, strategies = _setup(opts)
    group = SharedCache(scope=f"batch:{task.group_id}")
    outcomes: dict[int, FileOutcome] = {}
    live: dict[int, dict[str, Any]] = {}
    heap: list[tuple[datetime, int, int, int, Any]] = []
    order = 0

    def push(ts: datetime, position: int, strategy: int, steps: Any) -> None:
        nonlocal order
        order += 1
        heapq.heappush(heap, (_utc(ts), order, position, strategy, steps))

    for position, member in enumerate(task.members):
        push(datetime.fromisoformat(member.info.started_at), position, -1, None)

    def fail(position: int, err: BaseException) -> None:
        live.pop(position, None)
        outcomes[position] = failure(task.members[position].path, err)

    def advance(position: int, strategy: int, steps: Any) -> None:
        state = live[position]
        ts = next(steps, None)
        if ts is not None:
            push(ts, position, strategy, steps)
            return
        state["pending"] -= 1
        if state["pending"] == 0:
            del live[position]
            if task.members[position].context_only:
                outcomes[position] = FileOutcome(task.members[position].path, OK)
                return
            records = [r for run in state["runs"] for r in run.records]
            outcomes[position] = _outcome(
                task.members[position], task, position, state["session"], records, opts
            )

    while heap:
        ts, _, position, strategy, steps = heapq.heappop(heap)
        if position in outcomes:
            continue  # the session failed: its other strategies are dropped
        try:
            if strategy < 0:  # the session starts: read it and open one run per strategy
                _prune(group, ts)
                member = task.members[position]
                session = _load(member.path, opts, member.files, member.info.fmt)
                if not session.requests():
                    raise ReplayError(f"{task.members[position].path}: the log has no requests")
                view = SharedCache(group.scope, group.stores, group.tables, lane=f"s{position}")
                # Fitted on the session's own bill, as when it is replayed alone (the fit runs
                # on a cache of its own): the chain changes what is cached, not the prompts.
                fitted = with_unlogged_context(session, base)
                config = dataclasses.replace(fitted, shared_cache=view)
                facts = _SessionFacts(session)  # what the runs derive alike from the log
                runs = [_Run(session, named, config, facts) for named in strategies]
                live[position] = {"session": session, "runs": runs, "pending": len(runs)}
                for n, run in enumerate(runs):
                    advance(position, n, run.steps())
            else:
                advance(position, strategy, steps)
        except Exception as err:  # noqa: BLE001 - one bad file must not stop the batch
            fail(position, err)
    return [outcomes[p] for p in range(len(task.members))]


def replay_group(task: GroupTask, opts: BatchOptions) -> list[FileOutcome]:
    """Replay the files of `task` (through one shared provider cache when `task.shared`); one
    outcome per file, failures included; never raises."""
    if task.shared:
        try:
            return _replay_chain(task, opts)
        except Exception as err:  # noqa: BLE001 - e.g. a bad --price: every file fails alike
            return [failure(m.path, err) for m in task.members]
    outcomes = []
    for member in task.members:
        try:
            outcomes.append(_replay_alone(member, task, opts))
        except Exception as err:  # noqa: BLE001 - one bad file must not stop the batch
            outcomes.append(failure(member.path, err))
    return outcomes
