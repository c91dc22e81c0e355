"""`run_batch`: find logs, scan them, group them by cache scope, replay the groups on an engine,
and append the rows to a Parquet dataset.

Three passes over the files, each spread over the engine's workers:

1. scan — read each file once with `replay.load` (format detected by content) for what grouping
   needs: session id, start and end, and the cache scope; hash its bytes. Unchanged files (same
   size and mtime) take this from the incremental cache instead.
2. group — in each folder of Claude Code (or opencode) files, the files the adapter reads as one
   session (a transcript with its subagent and resumed files) become one unit, named by its
   first file and scanned whole; the other files of the unit are `part of` it. Folders whose
   files are unchanged take this from the incremental cache.
3. replay — sessions of one scope whose times overlap or follow within the longest cache TTL form
   a chain, replayed in start order by one worker through one shared provider cache; other
   sessions are replayed alone. Chains and lone files are spread over the workers, largest first.

Only the main process writes the dataset; workers send back each session's rows as Parquet
bytes.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from replay._api import LOG_COUNTS, listed
from replay._errors import ReplayError
from replay.adapters._groups import GROUPED, session_folder
from replay.adapters._once import forks_with_parent
from replay.batch._dataset import Dataset, any_dataset_owns, owns
from replay.batch._discover import discover, target_roots
from replay.batch._engines import Engine, make_engine
from replay.batch._options import BatchOptions, horizon_seconds, replay_key, scan_key
from replay.batch._work import (
    CODE_PLUGINS_INSTEAD,
    FAILED,
    OK,
    FileOutcome,
    FolderTask,
    GroupTask,
    Member,
    ScanResult,
    group_folder,
    printable_path,
    register_code_plugins,
    replay_group,
    scan_files,
)
from replay.cache._base import NO_BREAKPOINT

Progress = Callable[[str, int, int], None]
"""Called as (phase, done, total) while a phase (`scan`, `replay`) advances."""

STATUSES = (
    "replayed", "unchanged", "part of", "skipped", "duplicate", "out of range", "failed"
)
"""What can happen to a file: replayed now, or earlier and unchanged since (both count as ok);
read as part of the session another file names (a Claude Code subagent or resumed file, an
opencode subtask export: the message names that file); not a log `replay` recognises; a
byte-identical copy of another file; outside --since/--until; failed (the message says why)."""

QUIET_STATUSES = ("replayed", "unchanged", "part of")
"""Statuses that are no problem (not listed among the files not replayed)."""

TOTAL_COLUMNS = [
    "strategy",
    "sessions",
    "requests",
    "prompt_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "uncached_tokens",
    "output_tokens",
    "cost_usd",
    "hit_ratio",
    "blind_actions",
]


@dataclass
class FileStatus:
    path: str
    status: str
    """One of `STATUSES`."""
    message: str | None = None

    def __post_init__(self) -> None:
        # Messages of errors about this file start with its path: say `line N:` instead.
        msg = self.message
        if msg and msg.startswith(self.path + ":"):
            rest = msg[len(self.path) + 1 :]
            line, sep, tail = rest.partition(":")
            msg = f"line {line}:{tail}" if sep and line.isdigit() else rest.lstrip()
            self.message = msg


@dataclass
class BatchReport:
    """What a batch did: per-file outcomes, totals per strategy, and how long it took."""

    files: list[FileStatus]
    """Every file found, with what happened to it."""
    totals: pl.DataFrame
    """One row per strategy over every ok session (replayed now or unchanged)."""
    dataset: Path | None
    shared_groups: int = 0
    """Chains of two or more sessions replayed through one shared provider cache."""
    shared_sessions: int = 0
    requests: int = 0
    """Recorded requests of the sessions replayed in this run."""
    engine: str = "serial"
    workers: int = 1
    scan_seconds: float = 0.0
    replay_seconds: float = 0.0
    elapsed: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for f in self.files:
            counts[f.status] += 1
        counts["ok"] = counts["replayed"] + counts["unchanged"]
        counts["total"] = len(self.files)
        return counts

    @property
    def problems(self) -> list[FileStatus]:
        return [f for f in self.files if f.status not in QUIET_STATUSES]

    def document(self, timings: bool = False) -> dict[str, Any]:
        """The report as JSON-ready data; with `timings`, how long it took too (then no two
        runs give the same bytes)."""
        from replay import report

        doc: dict[str, Any] = {
            "dataset": printable_path(str(self.dataset)) if self.dataset else None,
            "engine": self.engine,
            "workers": self.workers,
            "files": self.counts,
            "shared_cache": {"groups": self.shared_groups, "sessions": self.shared_sessions},
            "requests": self.requests,
        }
        if timings:
            doc |= self.timings()
        return doc | {
            "totals": report.frame_rows(self.totals),
            "problems": [
                {"file": f.path, "status": f.status, "message": f.message} for f in self.problems
            ],
            "notes": self.notes,
        }

    def timings(self) -> dict[str, Any]:
        """Seconds per pass, and files and requests replayed per second."""
        per_second = (lambda n: round(n / self.elapsed, 3)) if self.elapsed else (lambda n: None)
        return {
            "seconds": {
                "scan": round(self.scan_seconds, 3),
                "replay": round(self.replay_seconds, 3),
                "total": round(self.elapsed, 3),
            },
            "files_per_second": per_second(self.counts["replayed"]),
            "requests_per_second": per_second(self.requests),
        }


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def _when(info_ts: str) -> datetime:
    return datetime.fromisoformat(info_ts)


def plan_groups(
    scans: Sequence[ScanResult],
    opts: BatchOptions,
    horizon: float,
    rkey: str,
    drop_copied: Collection[str] = (),
) -> list[GroupTask]:
    """Chains of sessions that share a cache scope and follow each other within `horizon`
    seconds (cut at `opts.chain_bytes`), each in start order; every other session alone.
    Forked sessions named in `drop_copied` leave the requests copied from their parent out of
    their rows (`Member.drop_copied`)."""
    by_scope: dict[str, list[ScanResult]] = defaultdict(list)
    for s in scans:
        assert s.info is not None and s.sha is not None
        by_scope[s.info.scope if opts.share_cache else s.path].append(s)
    chains: list[list[ScanResult]] = []
    for items in by_scope.values():
        items.sort(key=lambda s: (s.info.started_at, s.path))  # type: ignore[union-attr]
        chain: list[ScanResult] = []
        end, size = None, 0
        for s in items:
            start = _when(s.info.started_at)  # type: ignore[union-attr]
            if chain and (
                (start - end).total_seconds() > horizon or size + s.size > opts.chain_bytes
            ):
                chains.append(chain)
                chain, end, size = [], None, 0
            chain.append(s)
            stop = _when(s.info.ended_at)  # type: ignore[union-attr]
            end = stop if end is None else max(end, stop)
            size += s.size
        chains.append(chain)
    tasks = []
    chains.sort(key=lambda c: -sum(s.size for s in c))  # largest first: better load balance
    for chain in chains:
        shared = len(chain) > 1
        scope = chain[0].info.scope  # type: ignore[union-attr]
        group = _digest(scope, *(s.sha for s in chain))[:12] if shared else None  # type: ignore[misc]
        suffix = f"-{group}" if group else ""
        members = []
        for s in chain:
            sha, info, own = s.sha or "", s.info, s.path in drop_copied
            assert info is not None
            part = f"part-{sha[:24]}-{rkey[:8]}{suffix}" + (_OWN if own else "")
            members.append(Member(s.path, sha, info, part, s.files, drop_copied=own))
        tasks.append(GroupTask(members, shared=shared, group_id=group, scope=scope))
    return tasks


_OWN = "-own"
"""Part name suffix of a fork's rows without the requests copied from its parent."""


def _in_range(tasks: list[GroupTask], outside: Collection[str]) -> list[GroupTask]:
    """The tasks with a session inside --since/--until; in a chain, the sessions `outside` it
    are kept as context only (`Member.context_only`): replayed, for what they leave in the
    shared cache, without rows of their own."""
    out = []
    for task in tasks:
        if all(m.path in outside for m in task.members):
            continue
        if task.shared:
            task.members = [
                replace(m, context_only=True) if m.path in outside else m for m in task.members
            ]
        out.append(task)
    return out


def _kept(dataset: Dataset, task: GroupTask, rkey: str) -> dict[str, list[str] | str] | None:
    """What an earlier batch left of a task that need not be replayed again: per session, its
    parts, or why it failed (it would fail alike, and replaying its chain for it would give
    the others the same rows); None when a session of it must be replayed."""
    kept: dict[str, list[str] | str] = {}
    for m in task.members:
        if m.context_only:
            continue
        group = _replay_group(task, m)
        found = dataset.unchanged(m.path, rkey, group, m.sha)
        if found is None:
            found = dataset.failed(m.path, rkey, group, m.sha)
        if found is None:
            return None
        kept[m.path] = found
    return kept


def _replay_group(task: GroupTask, member: Member) -> str:
    """What a session's rows depend on besides its bytes and the options, as the manifest keeps
    it: its chain, and whether its copied requests were left out (rows of another kind)."""
    return (task.group_id or "") + (_OWN if member.drop_copied else "")


def _forks_with_parent(
    scans: Sequence[ScanResult], copies: dict[str, str], unread: Collection[str] = ()
) -> set[str]:
    """Paths of the forked sessions among `scans` whose parent session file is one of them (or
    a byte-identical copy of one: `copies`, copy → first file; `adapters._once`), or one of the
    files not read for --since (`unread`)."""
    files = {f for s in scans for f in s.files or (s.path,)} | set(unread)
    files |= {copy for copy, first in copies.items() if first in files}
    forks = ((s.path, s.info.parent) for s in scans if s.info and s.info.copied_requests)
    return forks_with_parent(forks, files)


def _skipped_lines_notes(scans: Sequence[ScanResult]) -> list[str]:
    """Malformed lines a lenient read skipped: counted in `skipped_lines`, and said, as `replay
    run` says it (a batch printed nothing of them, and kept no count without a dataset)."""
    skipped = [(s.path, s.info.skipped_lines) for s in scans
               if s.info is not None and s.info.skipped_lines]
    if not skipped:
        return []
    shown = listed((f"{path} {n:,}" for path, n in skipped), in_order=True)
    return [
        f"{sum(n for _, n in skipped):,} malformed line(s) skipped in {len(skipped):,} file(s) "
        f"(column `skipped_lines`; `replay run FILE` names each line, --strict stops at the "
        f"first): {shown}."
    ]


def _fork_notes(scans: Sequence[ScanResult], forks: set[str]) -> list[str]:
    """What the rows of forked sessions hold of the requests they copied from their parent."""
    copied = [s for s in scans if s.info and s.info.copied_requests]
    dropped = [s for s in copied if s.path in forks]
    kept = [s for s in copied if s.path not in forks]
    notes = []
    if dropped:
        n = sum(s.info.copied_requests for s in dropped)  # type: ignore[union-attr]
        notes.append(
            f"{n:,} request(s) of {len(dropped)} forked session(s) were copied from a parent "
            "session found in this batch, replayed or out of --since/--until "
            "(`copied_from_parent`): they are counted in the parent's rows only, and left out "
            "of the fork's (column `copied_requests_dropped`)."
        )
    if kept:
        n = sum(s.info.copied_requests for s in kept)  # type: ignore[union-attr]
        notes.append(
            f"{n:,} request(s) of {len(kept)} forked session(s) were copied from a parent "
            "session not found in this batch (`copied_from_parent`): billed in that earlier "
            "session, they are counted here, the only record of them in this batch."
        )
    return notes


BUNDLE_FILES, BUNDLE_BYTES = 16, 4 * 1024 * 1024
"""Small lone sessions travel to a worker together (up to this many files and bytes): one task
per tiny file would cost more in process round trips than in replay."""


def _bundle(tasks: list[GroupTask]) -> list[GroupTask]:
    """Chains as they are; lone sessions packed into bundles (largest-first order kept)."""
    out: list[GroupTask] = []
    bundle: list[Member] = []
    size = 0
    for task in tasks:
        if task.shared:
            out.append(task)
            continue
        member = task.members[0]
        weight = sum(_size(f) for f in member.files or (member.path,))
        if bundle and (len(bundle) >= BUNDLE_FILES or size + weight > BUNDLE_BYTES):
            out.append(GroupTask(bundle))
            bundle, size = [], 0
        bundle.append(member)
        size += weight
    if bundle:
        out.append(GroupTask(bundle))
    return out


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _chunks(paths: list[str]) -> Iterator[list[str]]:
    """Paths in tasks of up to `BUNDLE_FILES` files and `BUNDLE_BYTES` bytes (or one file)."""
    chunk: list[str] = []
    size = 0
    for path in paths:
        weight = _size(path)
        if chunk and (len(chunk) >= BUNDLE_FILES or size + weight > BUNDLE_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(path)
        size += weight
    if chunk:
        yield chunk


def _scan_failure(paths: list[str], message: str) -> list[ScanResult]:
    return [ScanResult(p, 0, 0, FAILED, message=message, transient=True) for p in paths]


def _folder_failure(task: FolderTask, message: str) -> list[ScanResult]:
    files = tuple(s.path for s in task.files)
    return [ScanResult(files[0], 0, 0, FAILED, message=message, transient=True, files=files)]


def _group_failure(task: GroupTask, message: str) -> list[FileOutcome]:
    return [FileOutcome(m.path, FAILED, message=message, transient=True) for m in task.members]


_SUMS = [
    "requests",
    "prompt_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "uncached_tokens",
    "output_tokens",
    "cost_usd",
    "blind_actions",
    "blind_mentions",
    "price_fallback_requests",
]


def _partial(rows: pl.LazyFrame, apis: dict[str, str]) -> pl.DataFrame:
    """Session rows → one row per strategy of sums (what the totals are built from), and the
    sessions on which a strategy simulated a server-side mechanism their models do not have
    (`apis`: strategy → the API offering it, `StrategySpec.api`)."""
    from replay._api import API_SERVES  # who has each API, as `replay run` tells them

    api = pl.col("strategy").replace_strict(apis, default="", return_dtype=pl.Utf8)
    foreign = pl.any_horizontal(
        False,
        *((api == name) & ~pl.col(field_).str.contains(pattern)
          for name, (field_, pattern) in API_SERVES.items()),
    )
    return (
        rows.with_columns(_foreign=foreign)
        .group_by("strategy")
        .agg(
            pl.len().cast(pl.Int64).alias("sessions"),
            *(pl.col(c).sum() for c in _SUMS),
            pl.col("price_fallback").drop_nulls().unique().alias("price_fallback"),
            pl.col("_foreign").sum().cast(pl.Int64).alias("foreign_api_sessions"),
            pl.col("model").filter(pl.col("_foreign")).unique().alias("foreign_api_models"),
        )
        .collect()
    )


def _combine(partials: list[pl.DataFrame]) -> pl.DataFrame:
    return (
        pl.concat(partials)
        .group_by("strategy")
        .agg(
            pl.col("sessions").sum(),
            *(pl.col(c).sum() for c in _SUMS),
            pl.col("price_fallback").explode().drop_nulls().unique(),
            pl.col("foreign_api_sessions").sum(),
            pl.col("foreign_api_models").explode().drop_nulls().unique(),
        )
    )


def _totals(combined: pl.DataFrame | None, order: list[str]) -> pl.DataFrame:
    """The report's totals per strategy from the `_combine`d partials (None: no ok session)."""
    if combined is None:
        return pl.DataFrame(
            schema={c: pl.Utf8 if c == "strategy" else pl.Int64 for c in TOTAL_COLUMNS}
        )
    total = combined.with_columns(
        hit_ratio=pl.when(pl.col("prompt_tokens") > 0)
        .then(pl.col("cached_tokens") / pl.col("prompt_tokens"))
        .otherwise(0.0)
    )
    rank = {name: n for n, name in enumerate(order)}
    return (
        total.with_columns(
            pl.col("strategy")
            .replace_strict(rank, default=len(rank), return_dtype=pl.Int64)
            .alias("_rank")
        )
        .sort(["_rank", "strategy"])
        .select(TOTAL_COLUMNS)
    )


def _fallback_note(combined: pl.DataFrame | None) -> str | None:
    """The batch's requests priced with a fallback (every strategy's, as `replay run` counts
    them) and why, from the `_combine`d partials, or None."""
    if combined is None:
        return None
    requests = int(combined["price_fallback_requests"].sum())
    if not requests:
        return None
    reasons = sorted({r for rs in combined["price_fallback"].to_list() for r in rs})
    return (
        f"Priced with a fallback on {requests:,} request(s) over every strategy (columns "
        f"`price_fallback_requests`, `price_fallback`): {'; '.join(reasons)}."
    )


def _mentions_note(combined: pl.DataFrame | None, order: list[str]) -> list[str]:
    """The strategies whose sessions' agents named something only hidden text held, as `replay
    run` says (in the strategies' order)."""
    from replay._api import blind_mentions_note

    if combined is None:
        return []
    found = dict(zip(combined["strategy"].to_list(), combined["blind_mentions"].to_list(),
                     strict=True))
    mentions = {name: found[name] for name in order if found.get(name)}
    return [blind_mentions_note(mentions)] if mentions else []


def _foreign_api_notes(combined: pl.DataFrame | None, apis: dict[str, str]) -> list[str]:
    """Strategies simulating a provider's server-side mechanism on sessions whose models do not
    have it, from the `_combine`d partials: what their rows bill is a harness running the same
    rule itself (`replay run` says so of a rule that fired; here, of every such session)."""
    from replay._api import foreign_api_note

    if combined is None:
        return []
    notes = []
    for api in sorted(set(apis.values())):
        rows = combined.filter(
            pl.col("strategy").is_in([n for n, a in apis.items() if a == api])
            & (pl.col("foreign_api_sessions") > 0)
        ).sort("strategy")
        if rows.is_empty():
            continue
        names = rows["strategy"].to_list()
        sessions = int(rows["foreign_api_sessions"].max())  # type: ignore[arg-type]
        models = sorted({m for ms in rows["foreign_api_models"].to_list() for j in ms
                         for m in j.split(",")})
        notes.append(foreign_api_note(api, names, models, sessions))
    return notes


def _utc_minute(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def run_batch(
    targets: Sequence[str | Path],
    opts: BatchOptions | None = None,
    *,
    output: str | Path | None = None,
    engine: str = "pool",
    workers: int | None = None,
    ray_address: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    force: bool = False,
    forget_missing: bool = False,
    progress: Progress | None = None,
) -> BatchReport:
    """Replay every log under `targets` (folders, globs, files) and append the rows to the
    Parquet dataset at `output` (none: only the report).

    Per-file problems never stop the batch: they are in `BatchReport.files`. With `output`,
    files unchanged since an earlier batch with the same options are not replayed again (unless
    `force`). `forget_missing`: drop the rows of files the dataset holds under the targets'
    folders that no longer exist (kept by default: a log deleted after 30 days still counts).
    `engine`: `pool` (`workers` processes; 1 = in this process) or `ray`."""
    from replay._api import TRAJECTORY_NOTE, assumed_window_notes, tokenizer_estimate_notes
    from replay._words import counted
    from replay.prices import parse_price_overrides
    from replay.strategies import resolve

    opts = _with_plugin_files(_with_tokenizers(opts or BatchOptions()))
    started = time.perf_counter()
    named = resolve(opts.strategies)  # unknown names fail here, before work
    order = [n.name for n in named]
    apis = {n.name: n.spec.api for n in named if n.spec.api}
    parse_price_overrides(opts.prices)  # so does a bad --price (every file would fail alike)
    if opts.cache_rules and not Path(opts.cache_rules).is_file():
        raise ReplayError(f"{opts.cache_rules}: no such cache-rule file")
    if opts.cache_rules:  # an invalid file too: every file would fail alike, after the scan
        from replay.cache._rules import load_rules_file

        load_rules_file(opts.cache_rules)
    _check_routes(opts)  # a mistyped --provider or --client would fail every file alike
    if since is not None and until is not None and since > until:
        raise ReplayError(
            f"--since {_utc_minute(since)} is after --until {_utc_minute(until)}: no session "
            "can start in between"
        )
    if forget_missing and output is None:
        raise ReplayError("--forget-missing drops rows of a dataset: it needs -o DATASET")
    dataset = Dataset(output) if output is not None else None
    exclude = any_dataset_owns  # a dataset's parts are no logs; a user's file under it may be
    if output is not None:
        root = Path(output).resolve()
        exclude = functools.partial(_owned, root)
    unlisted: dict[Path, str] = {}  # folders found below a target that cannot be listed
    paths = [str(p) for p in discover(targets, exclude, unlisted)]
    skey, rkey = scan_key(opts), replay_key(opts)
    statuses: dict[str, FileStatus] = {}
    report = BatchReport(files=[], totals=_totals(None, order), dataset=None)
    report.notes.append(TRAJECTORY_NOTE)  # what every row measures, as `replay run` says
    if opts.context_window is not None:
        report.notes.append(f"Strategies were given a {opts.context_window:,}-token context "
                            "window (--context-window) on every model.")
    tick = progress or (lambda phase, done, total: None)

    code_plugins = _code_plugins(named)
    with make_engine(engine, workers, ray_address, register_code_plugins,
                     (code_plugins,)) as runner:
        report.engine, report.workers = runner.name, runner.workers
        if dataset is not None:
            dataset.open()
            report.dataset = dataset.root
            if forget_missing:
                report.notes.extend(_forget_missing(dataset, targets))
        phases = _Phases(opts, skey, rkey, dataset, runner, force, statuses, tick, apis)
        try:
            scans = _scan_phase(phases, paths, since)
            report.notes.extend(_skipped_lines_notes(scans))
            report.scan_seconds = time.perf_counter() - started
            replay_started = time.perf_counter()
            scans = _session_phase(phases, scans)
            partials = _replay_phase(phases, scans, since, until, report)
            report.replay_seconds = time.perf_counter() - replay_started
            combined = _combine(partials) if partials else None
            report.totals = _totals(combined, order)
            fallback = _fallback_note(combined)
            if fallback:
                report.notes.append(fallback)
            report.notes.extend(_foreign_api_notes(combined, apis))
            report.notes.extend(_mentions_note(combined, order))
            report.notes.extend(_unused_override_notes(opts, phases.ran_on))
            report.notes.extend(tokenizer_estimate_notes(phases.models))
            report.notes.extend(assumed_window_notes(phases.models, opts.context_window))
            report.notes.extend(_no_breakpoint_note(phases.no_breakpoint))
            report.notes.extend(_no_cache_note(phases.no_cache))
            report.notes.extend(_log_notes(phases.log_counts))
            if dataset is not None:
                report.notes.extend(_forget_superseded(dataset))
        finally:
            if dataset is not None:
                dataset.close()
    for folder, why in unlisted.items():
        statuses[str(folder)] = FileStatus(str(folder), "failed", why)
    # As text, like the dataset's `file` column: a name's bytes that are no UTF-8 as `\xNN`
    # (kept raw, they made the JSON report invalid).
    report.files = [
        _printable(statuses.get(p) or FileStatus(p, "failed", "not processed (the batch "
                                                  "stopped early)"))
        for p in map(str, sorted([*map(Path, paths), *unlisted]))
    ]
    report.notes = [printable_path(n) for n in report.notes]
    report.elapsed = time.perf_counter() - started
    if report.shared_groups:
        report.notes.append(
            f"{report.shared_sessions} sessions in {counted(report.shared_groups, 'chain')} "
            "were replayed through a shared provider cache (same provider, agent, system prompt "
            "and tools; overlapping or within the longest cache TTL): column `shared_cache`."
        )
    return report


def _forget_missing(dataset: Dataset, targets: Sequence[str | Path]) -> list[str]:
    """Forget the files under the targets' folders that are gone; a note naming them."""
    from replay._words import counted

    gone = dataset.missing_under(target_roots(targets))
    for path in gone:
        dataset.forget(path)
    if not gone:
        return []
    return [f"{counted(len(gone), 'file')} no longer found under the targets: their rows were "
            f"dropped from the dataset (--forget-missing): {listed(gone, most=3)}."]


def _printable(status: FileStatus) -> FileStatus:
    message = printable_path(status.message) if status.message else status.message
    return FileStatus(printable_path(status.path), status.status, message)


def _forget_superseded(dataset: Dataset) -> list[str]:
    """Forget the files no longer found whose session another file holds now; a note naming
    them."""
    from replay._words import counted

    gone = dataset.superseded()
    for path, _ in gone:
        dataset.forget(path)
    if not gone:
        return []
    shown = listed((f"{path} (now in {holder})" for path, holder in gone), 3, in_order=True)
    return [f"{counted(len(gone), 'file')} no longer found held a session another file holds "
            f"now: their rows were dropped, so that it is counted once: {shown}."]


@dataclass
class _Phases:
    """What the phases of one batch share (scan, session grouping, replay)."""

    opts: BatchOptions
    skey: str
    """Cache key of the scan options (`scan_key`)."""
    rkey: str
    """Cache key of the replay options (`replay_key`)."""
    dataset: Dataset | None
    """The output dataset, None when nothing is written."""
    runner: Engine
    force: bool
    """Replay every file, even one unchanged since an earlier batch."""
    statuses: dict[str, FileStatus]
    """What happened to each file so far, by path."""
    tick: Progress
    apis: dict[str, str] = field(default_factory=dict)
    """Strategy → the provider API whose server-side mechanism it simulates."""
    copies: dict[str, str] = field(default_factory=dict)
    """Byte-identical copies left out (status `duplicate`) → the file read instead."""
    unread: set[str] = field(default_factory=set)
    """Files not even read, last modified long before --since (still a fork's parent)."""
    ran_on: set[tuple[str, str]] = field(default_factory=set)
    """The `provider` and `model` columns of the ok sessions' rows (replayed now or unchanged;
    each comma-separated): what a `--price` or `--cache-rules` had to match."""

    @property
    def models(self) -> set[str]:
        """The models the ok sessions ran on."""
        return _models(self.ran_on)
    no_breakpoint: dict[str, int] = field(default_factory=dict)
    """Session file → its requests that cached nothing for want of a cache breakpoint (the
    most of any strategy's), for the ok sessions that had any."""
    no_cache: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    """Session file → its requests the cache rules give no prompt cache (`mechanism: none`),
    with the session's provider and model, for the ok sessions that had any."""
    log_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    """`LOG_COUNTS` column → session file → its count, for the ok sessions that had any."""


def _code_plugins(named: list[Any]) -> bytes:
    """The plug-ins among the strategies that the calling program registered (`register`),
    pickled for the pool's workers, which never ran that call."""
    from replay.strategies._plugins import pickled_for_workers

    specs = [n.spec for n in named if n.spec.origin.startswith("code:")]
    what = f"strategy family {', '.join(s.family for s in specs)}"
    return pickled_for_workers(specs, what, CODE_PLUGINS_INSTEAD)


def _with_plugin_files(opts: BatchOptions) -> BatchOptions:
    """`opts` naming the plug-in files every worker loads: those it names, else those loaded
    here (`load_strategy_file`). Each is loaded here (again, if edited since), so that a bad
    one fails before any work and this process runs the code the options digest names."""
    from replay.strategies import load_strategy_file
    from replay.strategies._plugins import loaded_files

    if not opts.plugin_files:
        opts = replace(opts, plugin_files=tuple(str(p) for p in loaded_files()))
    for path in opts.plugin_files:
        load_strategy_file(path)
    return opts


def _with_tokenizers(opts: BatchOptions) -> BatchOptions:
    """`opts` naming the tokenizer file every worker counts with: the one it names (put in force
    here too), else the one in force here. Either is checked before any work: a bad file would
    fail every log alike."""
    from replay.tokens import tokenizer_file_in_force, tokenizer_rows, use_tokenizers

    if opts.tokenizers is None:
        tokenizer_rows()
        return replace(opts, tokenizers=tokenizer_file_in_force())
    if opts.tokenizers != tokenizer_file_in_force():
        use_tokenizers(opts.tokenizers)
    return opts


def _owned(root: Path, path: Path) -> bool:
    """A file of the output dataset at `root` (its cache too) or a part of another dataset."""
    return owns(root, path) or any_dataset_owns(path)


def _check_routes(opts: BatchOptions) -> None:
    """The `--provider` and `--client` of the options exist (under the user's cache rules)."""
    from replay.cache._clients import profile_for
    from replay.cache._route import CacheRouter
    from replay.cache._rules import load_rules_file

    if opts.client is not None:
        profile_for("", opts.client)
    if opts.provider:
        router = CacheRouter(load_rules_file(opts.cache_rules) if opts.cache_rules else None)
        if not router.serves(opts.provider):
            raise ReplayError(
                f"--provider {opts.provider!r}: no cache rules for it; known: "
                f"{', '.join(router.providers())}; describe it with --cache-rules FILE "
                "(docs/cache-rules.md)"
            )


def _scan_phase(phases: _Phases, paths: list[str], since: datetime | None) -> list[ScanResult]:
    opts, skey, dataset, runner = phases.opts, phases.skey, phases.dataset, phases.runner
    force, statuses, tick = phases.force, phases.statuses, phases.tick
    scans: dict[str, ScanResult] = {}
    todo: list[str] = []
    # Files last written before --since, and longer before it than a cache entry lives: their
    # sessions cannot have started after it, nor left anything a later one reads.
    unread_before = None if since is None else since.timestamp() - horizon_seconds(opts)
    for path in paths:
        try:
            st = os.stat(path)
        except OSError as err:
            statuses[path] = FileStatus(path, "failed", f"cannot read the file ({err.strerror})")
            continue
        if unread_before is not None and st.st_mtime < unread_before:
            statuses[path] = FileStatus(path, "out of range", "last modified before --since")
            phases.unread.add(path)
            continue
        cached = None
        if dataset is not None and not force:
            cached = dataset.cached_scan(path, st.st_size, st.st_mtime_ns, skey)
        if cached is not None:
            scans[path] = cached
        else:
            todo.append(path)
    done = len(paths) - len(todo)
    tick("scan", done, len(paths))
    for _, chunk in runner.imap(scan_files, _chunks(todo), opts, _scan_failure):
        for result in chunk:
            scans[result.path] = result
            if dataset is not None and not result.transient:
                dataset.record_scan(result, skey)
            done += 1
        tick("scan", done, len(paths))
    ok = []
    first_copy: dict[tuple[str, str], str] = {}
    for path in paths:
        s = scans.get(path)
        if s is None:
            continue
        # A copy of a file that may be read with others (`GROUPED`) is told apart only within
        # its folder here; one in another folder is grouped there too, and told apart by the
        # sessions it is in (`_copied_sessions`): kept first by its name alone, a backup of a
        # resumed session's first file replayed it apart, and the session counted it twice.
        where = session_folder(s.fmt, path) if s.fmt in GROUPED else ""
        if s.status == FAILED and s.fmt in GROUPED and s.sha and not s.transient:
            ok.append(s)  # it may be read with its session: `_session_phase` decides
        elif s.status != OK:
            statuses[path] = FileStatus(path, s.status, s.message)
        elif (s.sha, where) in first_copy:
            _duplicate(phases, path, first_copy[(s.sha, where)])  # type: ignore[index]
        else:
            first_copy[(s.sha, where)] = path  # type: ignore[index]
            ok.append(s)
    return ok


def _duplicate(phases: _Phases, path: str, first: str) -> None:
    """`path` is a byte-identical copy of `first`: counted once, there."""
    phases.statuses[path] = FileStatus(path, "duplicate", f"same bytes as {first}")
    phases.copies[path] = first
    dataset = phases.dataset
    if dataset is not None and path in dataset.entries:  # rows of an earlier replay of its
        # own go
        dataset.record_replay(path, phases.rkey, "", "duplicate", first, [])


def _copied_sessions(units: list[ScanResult], sha_of: dict[str, str]) -> dict[str, str]:
    """Files of `units` (sessions of `GROUPED` formats, in path order) that are copies of files
    of another session holding all of theirs → the file they copy. A session is such a copy
    when every file of it has a byte-identical copy in one other session that holds more files
    (a backup of a resumed session's first file, its transcript without the files that resume
    it), or the same files and is named first. The copies are counted once, in that one."""
    files = {u.path: u.files or (u.path,) for u in units}
    shas = {u.path: frozenset(sha_of[f] for f in files[u.path]) for u in units}
    having: dict[str, set[str]] = defaultdict(set)
    for u in units:
        for sha in shas[u.path]:
            having[sha].add(u.path)
    copies: dict[str, str] = {}
    for u in units:
        mine = shas[u.path]
        others = set.intersection(*(having[sha] for sha in mine)) - {u.path}
        holders = [v for v in others if shas[v] > mine or (shas[v] == mine and v < u.path)]
        if not holders:
            continue
        # the largest, first named: no other session holds it, so it is replayed
        holder = min(holders, key=lambda v: (-len(shas[v]), v))
        theirs = {sha_of[f]: f for f in files[holder]}
        copies.update((f, theirs[sha_of[f]]) for f in files[u.path])
    return copies


def _folder_key(task: FolderTask, skey: str) -> tuple[str, str]:
    """(manifest name, cache key) of a folder's grouping: it holds while the scan options and
    every file's path and bytes do."""
    name = f"{task.fmt}:{session_folder(task.fmt, task.files[0].path)}"
    return name, _digest(skey, name, *(f"{s.path}\x00{s.sha}" for s in task.files))


def _session_phase(phases: _Phases, scans: list[ScanResult]) -> list[ScanResult]:
    """Scans → one per session: the files the adapter reads as one session (a Claude Code
    transcript with its subagent and resumed files, an opencode export with its subtask
    exports: `session_groups`) become one unit named by its first file; the others get the
    status `part of`. A file that failed on its own but is read with a session is part of it;
    alone, it fails. Folders whose files and options are unchanged take their grouping from
    the manifest."""
    opts, skey, rkey, dataset = phases.opts, phases.skey, phases.rkey, phases.dataset
    runner, force, statuses, tick = phases.runner, phases.force, phases.statuses, phases.tick
    buckets: dict[tuple[str, str], list[ScanResult]] = defaultdict(list)
    for s in scans:
        if s.fmt in GROUPED:
            buckets[(s.fmt, session_folder(s.fmt, s.path))].append(s)
    units: list[ScanResult] = []
    todo: list[FolderTask] = []
    for (fmt, _), items in sorted(buckets.items()):
        if len(items) < 2:
            continue
        task = FolderTask(fmt, sorted(items, key=lambda s: s.path))
        cached = None
        if dataset is not None and not force:
            cached = dataset.cached_sessions(*_folder_key(task, skey))
        if cached is None:
            todo.append(task)
        else:
            units.extend(cached)
    for n, (task, results) in enumerate(runner.imap(group_folder, todo, opts, _folder_failure)):
        tick("group", n + 1, len(todo))
        if dataset is not None and not any(r.transient for r in results):
            name, key = _folder_key(task, skey)
            dataset.record_sessions(name, key, results)
        units.extend(results)
    # A folder that could not be grouped (no hash: `group_folder` failed) fails every file.
    unsorted = {f: u for u in units if u.sha is None for f in u.files}
    part_of = {f: u.path for u in units if u.sha is not None for f in u.files[1:]}
    by_first = {u.path: u for u in units if u.sha is not None}
    out = []
    for s in scans:
        unit = unsorted.get(s.path) or by_first.get(s.path, s)
        if s.path in part_of:
            first = part_of[s.path]
            statuses[s.path] = FileStatus(s.path, "part of", f"read in the session of {first}")
            if dataset is not None:  # rows of an earlier replay of its own go
                dataset.record_replay(s.path, rkey, "", "part of", first, [])
        elif dataset is not None and unit is s and (gone := dataset.read_in_missing(s.path)):
            statuses[s.path] = FileStatus(
                s.path, "part of", f"read in the session of {gone} (no longer found: its rows "
                "stay, and hold this file's)"
            )
        elif unit.status != OK:
            statuses[s.path] = FileStatus(s.path, FAILED, unit.message)
            if dataset is not None and unit is not s and not unit.transient:
                dataset.record_replay(s.path, rkey, "", FAILED, unit.message, [], unit.sha)
        else:
            out.append(unit)
    sha_of = {s.path: s.sha for s in scans if s.sha is not None}
    copies = _copied_sessions([u for u in out if u.fmt in GROUPED], sha_of)
    for path, first in copies.items():
        _duplicate(phases, path, first)
    return [u for u in out if u.path not in copies]


def _replay_phase(
    phases: _Phases,
    scans: list[ScanResult],
    since: datetime | None,
    until: datetime | None,
    report: BatchReport,
) -> list[pl.DataFrame]:
    opts, rkey, dataset, runner = phases.opts, phases.rkey, phases.dataset, phases.runner
    force, statuses, tick = phases.force, phases.statuses, phases.tick
    # Chains and forks are found among every session read, in range or not: a session's rows
    # do not depend on the dates asked (`_in_range`).
    outside: set[str] = set()
    for s in scans:
        start = _when(s.info.started_at)  # type: ignore[union-attr]
        if (since and start < since) or (until and start > until):
            outside.add(s.path)
            for path in s.files or (s.path,):
                statuses[path] = FileStatus(path, "out of range", f"started {start.isoformat()}")
    forks = _forks_with_parent(scans, phases.copies, phases.unread)
    report.notes.extend(_fork_notes([s for s in scans if s.path not in outside], forks))
    tasks = _in_range(plan_groups(scans, opts, horizon_seconds(opts), rkey, forks), outside)
    partials: list[pl.DataFrame] = []
    unchanged_parts: list[str] = []
    todo: list[GroupTask] = []
    for task in tasks:
        kept = _kept(dataset, task, rkey) if dataset is not None and not force else None
        if kept is None:
            todo.append(task)
            continue
        for m in task.members:
            if m.context_only:
                continue
            found = kept[m.path]
            if isinstance(found, str):
                statuses[m.path] = FileStatus(m.path, "failed", found)
            else:
                statuses[m.path] = FileStatus(m.path, "unchanged")
                unchanged_parts.extend(p for p in found if p.startswith("sessions/"))
    todo = _bundle(todo)
    total = len(scans) - len(outside)
    done = total - sum(not m.context_only for t in todo for m in t.members)
    tick("replay", done, total)
    requests = {
        m.path: m.info.requests - (m.info.copied_requests if m.drop_copied else 0)
        for t in todo
        for m in t.members
    }
    context_ok: set[str] = set()  # sessions out of range replayed for their chain
    for task, outcomes in runner.imap(replay_group, todo, opts, _group_failure):
        members = {m.path: m for m in task.members}
        for outcome in outcomes:
            path = outcome.path
            if members[path].context_only:
                if outcome.status == OK:
                    context_ok.add(path)
                continue
            if outcome.status == OK:
                statuses[path] = FileStatus(path, "replayed")
                report.requests += requests.get(path, 0)
                if outcome.sessions is not None:
                    rows = pl.read_parquet(io.BytesIO(outcome.sessions))
                    _collect(phases, rows.lazy())
                    partials.append(_partial(rows.lazy(), phases.apis))
                    if len(partials) > 256:  # keep the running totals small
                        partials = [_combine(partials)]
            else:
                statuses[path] = FileStatus(path, "failed", outcome.message)
            if dataset is not None and not outcome.transient:
                written = []
                if outcome.status == OK:
                    written = dataset.write_parts(
                        path,
                        members[path].part,
                        {"sessions": outcome.sessions, "requests": outcome.requests},
                    )
                member = members[path]
                dataset.record_replay(
                    path, rkey, _replay_group(task, member), outcome.status, outcome.message,
                    written, member.sha, member.files,
                )
            done += 1
            tick("replay", done, total)
    # The chains as replayed: a session that failed shared nothing, and one left alone in its
    # chain shared it with no other.
    for task in tasks:
        done_ = [statuses.get(m.path) for m in task.members if not m.context_only]
        ok = [st for st in done_ if st is not None and st.status in ("replayed", "unchanged")]
        context = [m for m in task.members if m.path in context_ok]
        if task.shared and ok and len(ok) + len(context) > 1:
            report.shared_groups += 1
            report.shared_sessions += len(ok)
    if unchanged_parts and dataset is not None:
        kept = pl.scan_parquet([dataset.root / p for p in unchanged_parts])
        partials.append(_partial(kept, phases.apis))
        _collect(phases, kept)
    return partials


def _collect(phases: _Phases, rows: pl.LazyFrame) -> None:
    """What the notes need of ok sessions' rows, replayed now or unchanged."""
    phases.ran_on |= _ran_on(rows)
    phases.no_breakpoint |= _no_breakpoint(rows)
    phases.no_cache |= _no_cache(rows)
    for column, files in _log_counts(rows).items():
        phases.log_counts.setdefault(column, {}).update(files)


def _log_counts(rows: pl.LazyFrame) -> dict[str, dict[str, int]]:
    """`LOG_COUNTS` column → session file → its count, for the sessions that had any (a part
    written before the column: none)."""
    names = rows.collect_schema().names()
    columns = [c for c in LOG_COUNTS if c in names]
    if not columns:
        return {}
    found = rows.group_by("file").agg(pl.col(c).max() for c in columns).collect()
    return {
        c: {f: n for f, n in zip(found["file"].to_list(), found[c].to_list(), strict=True) if n}
        for c in columns
    }


_LOG_NOTES = {
    "microcompact_requests": (
        "came after a Claude Code microcompact, which cleared tool results the log does not "
        "name",
        "the replay still sends them, so those sessions' prompts from there on are larger than "
        "the logged ones",
    ),
    "unpriced_iteration_requests": (
        "list iterations besides the response in `usage.iterations` (server-side compaction), "
        "billed apart from the requests' usage",
        "they are not priced, neither in the log's own bill nor in any strategy's cost",
    ),
    "clock_backwards_requests": (
        "are timed before their thread's previous request (a clock set back, spliced logs)",
        "the cache simulation takes the times as logged, so TTL expiry and entries not yet "
        "written are judged on them there",
    ),
    "unread_cache_write_requests": (
        "report cache writes under a usage field replay does not read",
        "they are billed as uncached input in the log's own bill (at the input rate, not the "
        "write rate), and the cache simulation does not compare its writes with them",
    ),
}
"""Per `LOG_COUNTS` column, what its requests did and what follows (`replay run` says it of
each log in its notes)."""


def _log_notes(counts: dict[str, dict[str, int]]) -> list[str]:
    """What `replay run` says from each log itself (a microcompact, unpriced iterations, times
    going backwards, unread cache writes), summed over the batch's ok sessions, with the first
    few sessions' files."""
    notes = []
    for column, (what, then) in _LOG_NOTES.items():
        files = sorted(counts.get(column, {}).items())
        if not files:
            continue
        shown = listed([f"{path} {n:,}" for path, n in files], most=3)
        notes.append(
            f"{sum(n for _, n in files):,} request(s) of {len(files):,} session(s) {what} "
            f"(column `{column}`; `replay run FILE` says which: {shown}): {then}."
        )
    return notes


def _no_breakpoint(rows: pl.LazyFrame) -> dict[str, int]:
    """Session file → its requests that cached nothing because the client put no breakpoint
    where the provider needs one (`miss_causes`: `no-breakpoint=N`, the most of any strategy),
    for the sessions that had any."""
    count = (
        pl.col("miss_causes").str.extract(rf"(?:^|, ){NO_BREAKPOINT}=(\d+)", 1).cast(pl.Int64)
    )
    found = rows.group_by("file").agg(count.max().alias("n")).filter(pl.col("n") > 0).collect()
    return dict(zip(found["file"].to_list(), found["n"].to_list(), strict=True))


def _no_cache(rows: pl.LazyFrame) -> dict[str, tuple[int, str, str]]:
    """Session file → its requests simulated without a prompt cache (`no_cache_requests`),
    provider and model, for the sessions that had any (a part written before the column: none).
    """
    if "no_cache_requests" not in rows.collect_schema().names():
        return {}
    found = (
        rows.filter(pl.col("no_cache_requests") > 0)
        .group_by("file")
        .agg(pl.col("no_cache_requests").max(), pl.col("provider").first(),
             pl.col("model").first())
        .collect()
    )
    return {row["file"]: (row["no_cache_requests"], row["provider"], row["model"])
            for row in found.iter_rows(named=True)}


def _no_cache_note(no_cache: dict[str, tuple[int, str, str]]) -> list[str]:
    """Requests simulated without any prompt cache: said, since a 0 % hit ratio would otherwise
    read as the strategies' doing (`replay run` says it too)."""
    from replay._api import NO_CACHE_WHY

    if not no_cache:
        return []
    requests = sum(n for n, _, _ in no_cache.values())
    models = sorted({f"{p} / {m}" for _, p, m in no_cache.values()})
    return [
        f"{requests:,} request(s) of {len(no_cache):,} session(s) were simulated without a "
        f"prompt cache ({', '.join(models)}): {NO_CACHE_WHY}"
    ]


def _no_breakpoint_note(no_breakpoint: dict[str, int]) -> list[str]:
    """Requests the client profile sent without a cache breakpoint to a cache that needs one
    (a Codex log on Anthropic): they cached nothing, which makes them dear, silently; `replay
    run` says it too."""
    from replay._api import NO_BREAKPOINT_WHY

    if not no_breakpoint:
        return []
    return [
        f"{sum(no_breakpoint.values()):,} request(s) of {len(no_breakpoint):,} session(s) "
        f"{NO_BREAKPOINT_WHY}"
    ]


def _ran_on(rows: pl.LazyFrame) -> set[tuple[str, str]]:
    """The distinct (`provider`, `model`) values of session rows (each comma-separated)."""
    pairs = rows.select("provider", "model").unique().drop_nulls().collect()
    return set(zip(pairs["provider"].to_list(), pairs["model"].to_list(), strict=True))


def _models(ran_on: set[tuple[str, str]]) -> set[str]:
    """The models `_ran_on` pairs name."""
    return {m for _, names in ran_on for m in names.split(",") if m}


def _unused_override_notes(opts: BatchOptions, ran_on: set[tuple[str, str]]) -> list[str]:
    """A `--price` or `--cache-rules` that changed no figure of the batch's sessions: the user
    believes their rates or rules are in the figures (`replay run` says it too)."""
    from replay._api import unused_price_notes, unused_rules_notes
    from replay.cache import CacheRouter, load_rules_file
    from replay.prices import Pricer, parse_price_overrides

    where = "the batch's sessions"
    notes = []
    if opts.prices:
        pricer = Pricer(parse_price_overrides(opts.prices))
        notes += unused_price_notes(pricer, _models(ran_on), where)
    if opts.cache_rules:
        rules = load_rules_file(opts.cache_rules)
        router = CacheRouter(rules)
        routes = {  # a row naming several providers and models: any pair may have run
            router.route(p, m).label
            for providers, names in ran_on
            for p in providers.split(",") if p
            for m in names.split(",") if m
        }
        notes += unused_rules_notes(rules, routes, where)
    return notes
