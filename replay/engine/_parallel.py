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
import pickle
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replay._errors import ReplayError
from replay.engine._replay import (
    ReplayConfig,
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
    built: NamedStrategy | None = None
    """The strategy itself, when its spec is not the registry's (made by the caller)."""

    def strategy(self) -> NamedStrategy:
        if self.built is not None:
            return self.built
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
    """Its `BreakEven` rows (break-even runs only)."""
    error: str | None = None
    """The `ReplayError` its strategy stopped at (or how its worker failed)."""


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
                return self.breakeven(task.index, named)
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

    def breakeven(self, index: int, named: NamedStrategy) -> Part:
        from replay.breakeven._breakeven import breakeven_strategy

        shared = self.shared
        rows, records = breakeven_strategy(shared.session, named, shared.config, shared.horizon)
        tables = ResultTables(per_turn=False)  # what the notes count
        tables.add(records)
        return Part(index, tables=tables, breakeven=rows)


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
    from replay.strategies._base import registered

    family = named.spec.family
    if any(s is named.spec for s in registered()):
        return _Task(index, named.name, family, dict(named.params))
    return _Task(index, named.name, family, built=named)


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
) -> Iterator[Part]:
    """`breakeven_session` on `workers` processes: each strategy's break-even rows
    (`Part.breakeven`) and what its notes count (`Part.tables`), in the resolved order."""
    from replay.breakeven._breakeven import breakeven_config

    config = breakeven_config(session, config)
    return _parts(session, strategies, config, workers,
                  dict(per_turn=False, evidence_rows=False, breakeven=True, horizon=horizon))


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
    payload = _payload(_Shared(session, config, tokenizer_file_in_force(), loaded_files(), **job))
    tasks = [_task(n, named) for n, named in enumerate(resolved)]
    return _merged(tasks, workers, payload, progress)


def _merged(
    tasks: list[_Task],
    workers: int,
    payload: bytes,
    progress: Callable[[str, int, int], None] | None,
) -> Iterator[Part]:
    """The tasks' parts in their order: a part that comes early waits for those before it."""
    from replay.batch._engines import PoolEngine

    total = len(tasks)
    if progress is not None:
        progress("", 0, total)
    finished: dict[int, Part] = {}
    ready = 0
    with PoolEngine(min(workers, total), _start_worker, (payload,)) as pool:
        for count, (task, part) in enumerate(pool.imap(_replay_task, tasks, None, _failed), 1):
            finished[part.index] = part
            if progress is not None:
                progress(task.name, count, total)
            while ready in finished:
                part = finished.pop(ready)
                if part.error is not None:
                    raise ReplayError(part.error)
                yield part
                ready += 1
    if progress is not None:
        progress("", total, total)
