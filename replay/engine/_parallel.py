"""The strategies of one log replayed on several processes (`replay LOG --workers N`).

Each strategy's run is independent of the others, so each runs in one of N spawned worker
processes (`replay.batch`'s `PoolEngine`). A worker gets the parsed log, the replay options
with the unlogged context the parent fitted, the tokenizer file and the plug-in files in force
once, when it starts; a task names one strategy and brings back only its result rows
(`ResultTables`, and its break-even rows for `replay breakeven`), which the parent merges in
the resolved order: the output is what one process gives, byte for byte.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import pickle
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replay._errors import ReplayError
from replay.engine._replay import (
    ReplayConfig,
    RequestRecord,
    _log_texts,
    _long_lived_gc,
    _Run,
    _SessionFacts,
    require_requests,
    strategy_done,
    with_unlogged_context,
)
from replay.engine._results import ResultTables
from replay.log import Session
from replay.prices import Pricer
from replay.strategies import NamedStrategy, resolve
from replay.strategies._plugins import pickled_for_workers, unpickled_in_worker

SHARE_STEPS = 8
"""Break-even work per share, in counterfactual requests per request of the strategy's run:
each share replays the strategy once more (a request of the run, with its evidence checks and
store copy, costs about two counterfactual ones), so a share is worth starting when its
analysis is several times that."""

SHARE_MIN_STEPS = 10_000
"""…and at least this many counterfactual requests (a few seconds): a process started for a
share imports replay and reads the log first (~1–2 s), which a short log's analysis would not
pay back (one strategy on 150 requests took 5.3 s on two workers, 3.4 s on one, when split)."""


@dataclass
class _Shared:
    """What every task of a run reads: sent to each worker once, as it starts."""

    session: Session
    """The parsed log (a piped one too: the workers never read the log themselves)."""
    config: ReplayConfig
    """The options, with the unlogged context the parent fitted (no callbacks)."""
    tokenizers: str | None
    """The user's tokenizer file in force (`tokenizer_file_in_force`)."""
    plugin_files: list[str | Path]
    """The plug-in files loaded, as given (`loaded_files`): loaded again, in order."""
    per_turn: bool
    """Keep the per-request rows (`ResultTables.per_turn`)."""
    evidence_rows: bool
    """Keep the evidence rows (`ResultTables.evidence_rows`)."""
    breakeven: bool = False
    """Analyse each strategy's rewrites (`breakeven_strategy`) instead of only replaying it."""
    horizon: int | None = None
    """Break-even's horizon."""
    workers: int = 1
    """The processes of the run: at most that many shares of one strategy's break-even."""
    share_steps: int = SHARE_STEPS
    """Break-even: a strategy's rewrites are shared out among processes when their
    counterfactuals replay at least this many requests per request of its run, per share…"""
    share_min_steps: int = SHARE_MIN_STEPS
    """…and at least this many requests per share."""
    with_records: Callable[[Session, list[RequestRecord]], Any] | None = None
    """Break-even: what else to make of a strategy's records (the report's part of the page,
    `replay.report._html.document_part`), in the process that has them; sent back with the
    strategy's rows (`Part.made`). A top-level function: it is pickled by name."""


@dataclass
class _Task:
    """One strategy to replay: by family, name and parameters when the worker's registry has
    its family (plug-in specs hold closures, which do not pickle), else built."""

    index: int
    """Its place among the resolved strategies (the merge's order)."""
    name: str
    """Its name as resolved (with `--set` overrides in brackets)."""
    family: str
    """Its family in the registry."""
    params: dict[str, Any] = field(default_factory=dict)
    """Its parameters as resolved."""
    built: bytes | None = None
    """The strategy itself, pickled, when its spec is not the registry's (made by the caller):
    unpickled in the worker's `run`, so that a build function the worker cannot import (one
    defined under a script's `if __name__ == "__main__":`) is this strategy's error, not a
    worker that dies with a traceback."""
    share: int = 0
    """Break-even: which share of the strategy's rewrites to analyse."""
    shares: int = 0
    """Break-even: how many shares its rewrites are split into; 0 for the strategy's first
    task, which replays it and decides that number (analysing them all when it is 1)."""

    def strategy(self) -> NamedStrategy:
        if self.built is not None:
            return _unpickled(self.name, self.built)
        from replay.strategies._base import registered

        spec = next((s for s in registered() if s.family == self.family), None)
        if spec is None:
            raise ReplayError(
                f"strategy {self.name!r}: its family {self.family!r} is not registered in a "
                "worker process; --workers runs built-ins and plug-ins from files or packages"
            )
        return NamedStrategy(name=self.name, spec=spec, params=self.params)


@dataclass
class Part:
    """A task's result: its strategy's rows, or the one-line error it stopped at."""

    index: int
    """Its strategy's place among the resolved ones."""
    tables: ResultTables = field(default_factory=ResultTables)
    """Its summary, per-request and evidence rows and what the notes count."""
    breakeven: list[Any] = field(default_factory=list)
    """Its `BreakEven` rows (break-even runs only): from a worker, each with its place among
    the strategy's rewrites; merged, in that order."""
    shares: int = 1
    """Break-even: how many shares its strategy's rewrites were split into (the first task's
    part says; the others' parts bring only rows)."""
    error: str | None = None
    """The `ReplayError` its strategy stopped at (or how its worker failed)."""
    made: Any = None
    """What `_Shared.with_records` made of the strategy's records (its first task's part)."""


class _Worker:
    """A worker process's copy of the run, made once (`_start_worker`)."""

    def __init__(self, shared: _Shared) -> None:
        from replay.evidence import share_answers_for
        from replay.strategies._plugins import load_strategy_file
        from replay.tokens import tokenizer_file_in_force, use_tokenizers

        if shared.tokenizers != tokenizer_file_in_force():
            use_tokenizers(shared.tokenizers)
        for path in shared.plugin_files:
            load_strategy_file(path)
        self.shared = shared
        self.gc = contextlib.ExitStack()
        if shared.breakeven:  # its runs share none of what follows (`breakeven_session`)
            return
        self.log_texts = _log_texts(shared.session)
        self.facts = _SessionFacts(shared.session)
        share_answers_for(shared.session)
        self.gc.enter_context(_long_lived_gc())  # the log, frozen as in `iter_replay`

    def run(self, task: _Task) -> Part:
        try:
            named = task.strategy()
            if self.shared.breakeven:
                return self.breakeven(task, named)
            return self.replay(task.index, named)
        except ReplayError as err:
            return Part(task.index, error=str(err))

    def replay(self, index: int, named: NamedStrategy) -> Part:
        shared = self.shared
        tables = ResultTables(per_turn=shared.per_turn, evidence_rows=shared.evidence_rows)
        config = copy.copy(shared.config)
        config.on_record = tables.add_record  # counted as they come, never kept
        try:
            run = _Run(shared.session, named, config, self.facts)
            try:
                run.run()
            finally:
                run.close()
        finally:
            strategy_done(self.log_texts)
        tables.end_strategy()
        return Part(index, tables=tables)

    def breakeven(self, task: _Task, named: NamedStrategy) -> Part:
        """The strategy's first task replays it and analyses its rewrites, or, when they are
        much more work than its run (`_shares`), only says into how many shares they go: each
        share replays the strategy again and analyses its part, on whichever process is free."""
        from replay.breakeven._breakeven import strategy_rewrites

        shared = self.shared
        with strategy_rewrites(shared.session, named, shared.config, shared.horizon) as rewrites:
            if task.shares:
                return Part(task.index, breakeven=rewrites.analyse(task.share, task.shares),
                            shares=task.shares)
            tables = ResultTables(per_turn=False)  # what the notes count: once per strategy
            tables.add(rewrites.records)
            made = None
            if shared.with_records is not None:
                made = shared.with_records(shared.session, rewrites.records)
            shares = _shares(sum(rewrites.steps), len(rewrites.records), shared)
            rows = rewrites.analyse() if shares == 1 else []
            return Part(task.index, tables=tables, breakeven=rows, shares=shares, made=made)


def _shares(steps: int, requests: int, shared: _Shared) -> int:
    """Into how many shares to split a strategy's break-even of `steps` counterfactual
    requests (`_Shared.share_steps`, `_Shared.share_min_steps`)."""
    least = max(1, shared.share_steps * requests, shared.share_min_steps)
    return max(1, min(shared.workers, steps // least))


_WORKER: list[_Worker] = []


def _start_worker(payload: bytes) -> None:
    """The pool's initializer: this process's copy of the run, from the pickled `_Shared`."""
    _WORKER.append(_Worker(pickle.loads(payload)))


def _replay_task(task: _Task, _opts: object) -> Part:
    """The pool's task function (`PoolEngine.imap`'s `opts` unused: `_Shared` has them)."""
    return _WORKER[0].run(task)


def _failed(task: _Task, message: str) -> Part:
    return Part(task.index, error=f"strategy {task.name!r} failed in a worker process: {message}")


def _task(index: int, named: NamedStrategy) -> _Task:
    """By family when a worker's registry will have it (built-ins, plug-in files and
    packages, which every worker loads), else the strategy itself, pickled."""
    from replay.strategies._base import registered

    family = named.spec.family
    in_code = named.spec.origin.startswith("code:")  # registered by the calling program
    if not in_code and any(s is named.spec for s in registered()):
        return _Task(index, named.name, family, dict(named.params))
    built = pickled_for_workers(named, f"strategy {named.name!r}", _INSTEAD)
    return _Task(index, named.name, family, built=built)


_INSTEAD = "or load it with --strategy-file, or use --workers 1"
"""What to do instead of sending a strategy the workers cannot import."""


def _unpickled(name: str, built: bytes) -> NamedStrategy:
    """A strategy sent pickled (`_task`)."""
    return unpickled_in_worker(built, f"strategy {name!r}", _INSTEAD)


def _payload(shared: _Shared) -> bytes:
    try:
        return pickle.dumps(shared, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError) as err:
        raise ReplayError(f"--workers: the log or the options cannot be sent to a worker process "
                          f"({type(err).__name__}: {err}); use --workers 1") from None


def replay_parts(
    session: Session,
    strategies: str | Sequence[str | NamedStrategy],
    config: ReplayConfig,
    workers: int,
    per_turn: bool = True,
    evidence_rows: bool = False,
) -> Iterator[Part]:
    """`iter_replay` on `workers` processes: each strategy's rows (`Part.tables`, for
    `ResultTables.merge`) in the resolved order, whichever finished first."""
    config = copy.copy(config)
    config.pricer = config.pricer or Pricer()
    config = with_unlogged_context(session, config)
    return _parts(session, strategies, config, workers,
                  dict(per_turn=per_turn, evidence_rows=evidence_rows))


def breakeven_parts(
    session: Session,
    strategies: str | Sequence[str | NamedStrategy],
    config: ReplayConfig | None,
    workers: int,
    horizon: int | None = None,
    share_steps: int = SHARE_STEPS,
    share_min_steps: int = SHARE_MIN_STEPS,
    with_records: Callable[[Session, list[RequestRecord]], Any] | None = None,
) -> Iterator[Part]:
    """`breakeven_session` on `workers` processes: each strategy's break-even rows
    (`Part.breakeven`) and what its notes count (`Part.tables`), in the resolved order. A
    strategy whose counterfactuals are much more work than its run (rewrites at most requests,
    each followed to the end of the log) has its rewrites shared out among the processes
    (`share_steps`, `share_min_steps`: see `_Shared`; `with_records`: `Part.made`)."""
    from replay.breakeven._breakeven import breakeven_config

    config = breakeven_config(session, config)
    job = dict(per_turn=False, evidence_rows=False, breakeven=True, horizon=horizon,
               workers=workers, share_steps=share_steps, share_min_steps=share_min_steps,
               with_records=with_records)
    return _parts(session, strategies, config, workers, job)


def _parts(
    session: Session,
    strategies: str | Sequence[str | NamedStrategy],
    config: ReplayConfig,
    workers: int,
    job: dict[str, Any],
) -> Iterator[Part]:
    """Each strategy's `Part`, made by `workers` processes, in the resolved order. A strategy's
    error is raised where a one-process run would raise it: after the parts of the strategies
    before it. `config.progress` is told as strategies complete."""
    from replay.strategies._plugins import loaded_files
    from replay.tokens import tokenizer_file_in_force, tokenizer_rows

    require_requests(session)
    resolved = resolve(strategies)
    progress = config.progress
    config = copy.copy(config)
    config.progress = config.on_record = None
    tokenizer_rows()  # a bad tokenizer file fails here, not in every worker
    shared = _Shared(session, config, tokenizer_file_in_force(), loaded_files(), **job)
    tasks = [_task(n, named) for n, named in enumerate(resolved)]
    if shared.breakeven and len(tasks) == 1:
        # Whether its rewrites are shared out is known after its run: made here, the log is
        # pickled and a pool started only for the shares.
        return _merged(tasks, workers, lambda: _payload(shared), progress, here=_Worker(shared))
    payload = _payload(shared)
    # Break-even may share one strategy out among every process; a replay has one per task.
    pool = workers if shared.breakeven else min(workers, len(tasks))
    return _merged(tasks, pool, lambda: payload, progress)


class _Queue:
    """The tasks still to start, as `PoolEngine.imap` draws them: a strategy's further shares
    are put first as soon as its first task says how many (they are the long ones)."""

    def __init__(self, tasks: list[_Task]) -> None:
        self._tasks = list(reversed(tasks))

    def __iter__(self) -> _Queue:
        return self

    def __next__(self) -> _Task:
        # Not exhausted for good: `imap` asks again after each result, and shares added
        # meanwhile are started then.
        if not self._tasks:
            raise StopIteration
        return self._tasks.pop()

    def first(self, tasks: list[_Task]) -> None:
        self._tasks.extend(reversed(tasks))

    def left(self) -> bool:
        return bool(self._tasks)


@dataclass
class _Strategy:
    """The parts of one strategy come in so far."""

    first: Part | None = None
    """The part of its first task: its run's tables, and how many shares it has."""
    rows: list[tuple[int, Any]] = field(default_factory=list)
    """Its break-even rows so far, each with its place among its rewrites."""
    waiting: int = 0
    """Shares still to come."""
    done: bool = False
    """Its whole part was made (a share that comes after a failed one is not wanted)."""


def _whole(task: _Task, part: Part, strategies: dict[int, _Strategy], queue: _Queue
           ) -> Part | None:
    """`part` as its strategy's whole part, or None while shares of it are still to come or
    when it failed already. A first task's part that splits the strategy queues its shares
    (so they come after it); their rows are put back in the strategy's order."""
    got = strategies.setdefault(part.index, _Strategy())
    if got.done:
        return None
    if part.error is not None:
        got.done = True
        return part
    got.rows += part.breakeven
    if task.shares:
        got.waiting -= 1
    else:
        got.first = part
        if part.shares > 1:
            got.waiting = part.shares
            queue.first([dataclasses.replace(task, share=k, shares=part.shares)
                         for k in range(part.shares)])
    if got.waiting:  # (a share is queued only once its strategy's first part is in)
        return None
    assert got.first is not None
    got.done = True
    rows = [row for _, row in sorted(got.rows, key=lambda placed: placed[0])]
    return Part(part.index, tables=got.first.tables, breakeven=rows, made=got.first.made)


def _merged(
    tasks: list[_Task],
    workers: int,
    payload: Callable[[], bytes],
    progress: Callable[[str, int, int], None] | None,
    here: _Worker | None = None,
) -> Iterator[Part]:
    """The strategies' parts in their order: a part that comes early waits for those before
    it, and a strategy split into shares waits for all of them. `here`: the first task is
    made in this process by it, and a pool is started only for the tasks left after."""
    total = len(tasks)
    if progress is not None:
        progress("", 0, total)
    queue = _Queue(tasks)
    strategies: dict[int, _Strategy] = {}
    finished: dict[int, Part] = {}
    ready = 0
    made = []
    if here is not None:
        task = next(queue)
        made.append((task, here.run(task)))
    with contextlib.closing(_made_then_pool(made, queue, workers, payload)) as parts:
        for task, part in parts:
            whole = _whole(task, part, strategies, queue)
            if whole is None:
                continue
            finished[whole.index] = whole
            if progress is not None:
                progress(task.name, len(finished) + ready, total)
            while ready in finished:
                whole = finished.pop(ready)
                if whole.error is not None:
                    raise ReplayError(whole.error)
                yield whole
                ready += 1
    if progress is not None:
        progress("", total, total)


def _made_then_pool(
    made: list[tuple[_Task, Part]], queue: _Queue, workers: int, payload: Callable[[], bytes]
) -> Iterator[tuple[_Task, Part]]:
    """The parts made already, then those of a pool of `workers`, started only if tasks are
    left once the caller has taken those (a first part that splits its strategy queues the
    shares)."""
    yield from made
    if not queue.left():
        return
    from replay.batch._engines import PoolEngine

    with PoolEngine(workers, _start_worker, (payload(),)) as pool:
        yield from pool.imap(_replay_task, queue, None, _failed)
