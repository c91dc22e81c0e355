"""Where batch tasks run: in-process, a spawned process pool, or a Ray cluster.

Every engine has one verb, `imap(fn, tasks)`: run `fn(task, opts)` for each task and yield
`(task, result)` as results come in (any order). At most a few tasks per worker are in flight,
so neither the tasks' inputs nor their results pile up in memory. Task functions never raise
for a bad file (they return the error); an engine only has to deal with a worker that dies.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from replay._errors import PluginWarning, ReplayError
from replay.batch._options import BatchOptions

TaskFn = Callable[[Any, BatchOptions], Any]
Failure = Callable[[Any, str], Any]
"""Builds the result of a task whose worker died: (task, message) → result."""


def died() -> str:
    """Why a task failed when its worker process died; run from a script, the likely cause
    (each spawned worker imports the script, which starts the replay again) is named."""
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None) and getattr(main, "__spec__", None) is None
    if script and getattr(main, "main", None) is not _cli_main():
        return (
            "the worker process died on this task (killed, out of memory, or a script whose "
            "call with workers is not under `if __name__ == \"__main__\":`: each worker "
            "process imports the script)"
        )
    return "the worker process died on this task"


def _cli_main() -> Any:
    from replay.cli import main

    return main


class Engine:
    """Runs tasks in this process, one after the other."""

    name = "serial"
    workers = 1

    def imap(
        self, fn: TaskFn, tasks: Iterable[Any], opts: BatchOptions, failure: Failure
    ) -> Iterator[tuple[Any, Any]]:
        for task in tasks:
            yield task, fn(task, opts)

    def close(self, abort: bool = False) -> None:
        """Release the engine; `abort` (an error or Ctrl-C): without waiting for tasks."""

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self.close(abort=kind is not None)


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """SIGINT blocked in this thread while worker processes are started: they inherit the mask,
    so Ctrl-C at the terminal (sent to every process of the group) is the batch's alone to
    handle, never a traceback from each worker. Held, not ignored: one pressed meanwhile is
    raised in the batch once the block is done (`_sigint_deferred`), not in its middle."""
    with _sigint_deferred():
        if not hasattr(signal, "pthread_sigmask"):  # (Windows: no process groups to signal)
            yield
            return
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Ctrl-C pressed (or SIGTERM received) inside the block raises KeyboardInterrupt (or
    `Terminated`) once the block is done, not in the middle of it. Blocking SIGINT in this
    thread (`_sigint_held`) does not stop Python from raising it here: the kernel hands the
    signal to another thread, and the interpreter then runs its handler in the main thread
    wherever it is. Raised while the pool starts a worker, it left that worker started and
    unknown to the pool: never stopped, the command then hung at exit. (Only the main thread
    can set a handler; elsewhere the block runs as it is.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[int] = []
    # SIGTERM too, where Python handles it (the CLI raises `Terminated` from it).
    deferred = [signal.SIGINT]
    if callable(signal.getsignal(signal.SIGTERM)):
        deferred.append(signal.SIGTERM)
    previous = {
        signum: signal.signal(signum, lambda signum, frame: pressed.append(signum))
        for signum in deferred
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            # (None: a handler not set from Python)
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
    for signum in dict.fromkeys(pressed):
        handler = previous[signum]
        if callable(handler):
            handler(signum, None)  # the default SIGINT handler raises KeyboardInterrupt


def _first_done(futures: Iterable[Future]) -> set[Future]:
    """`wait(FIRST_COMPLETED)`, waking now and then: Ctrl-C is handled by the main thread, which
    a signal the kernel hands to another thread (polars' workers) does not wake, and the workers
    themselves never see it (`_sigint_held`)."""
    while True:
        done, _ = wait(futures, timeout=0.2, return_when=FIRST_COMPLETED)
        if done:
            return done


_PARENT_POLL_SECONDS = 1.0
"""How often a worker checks that the process that started it is still there."""


def _orphaned(parent: int) -> None:
    """Exit once `parent` is gone (killed, or stopped before it could stop its pool): a worker
    left alone would finish its tasks for nobody, holding its memory."""
    while True:
        time.sleep(_PARENT_POLL_SECONDS)
        if os.getppid() != parent:
            os._exit(1)


def _worker_start(
    parent: int, initializer: Callable[..., None] | None, initargs: tuple[Any, ...]
) -> None:
    threading.Thread(target=_orphaned, args=(parent,), daemon=True, name="parent-watch").start()
    # The process that started the pool has said so already: not once more per worker.
    warnings.filterwarnings("ignore", category=PluginWarning)
    if initializer is not None:
        initializer(*initargs)


_MANAGER_JOIN_SECONDS = 5.0
"""How long an aborted pool's manager thread may take to notice its workers are gone."""


class PoolEngine(Engine):
    """A pool of spawned worker processes (spawn: safe with polars' threads, same on every OS).

    A worker that dies (killed, out of memory) breaks the pool: the pool is rebuilt and the tasks
    that were in flight are tried once more, alone; a task that breaks it twice fails.
    """

    name = "pool"

    def __init__(
        self,
        workers: int,
        initializer: Callable[..., None] | None = None,
        initargs: tuple[Any, ...] = (),
    ) -> None:
        self.workers = workers
        # Run in each worker before its first task: what every task reads (`replay --workers`:
        # the log) is sent once per worker, not with each task.
        self._start = initializer, initargs
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            initializer, initargs = self._start
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_worker_start,
                initargs=(os.getpid(), initializer, initargs),
            )
        return self._pool

    def _submit(self, fn: TaskFn, task: Any, opts: BatchOptions) -> Future:
        # Made first: making the pool starts multiprocessing's resource tracker, which unblocks
        # SIGINT when it is done.
        pool = self._executor()
        with _sigint_held():  # a worker process may be started here
            return pool.submit(fn, task, opts)

    def imap(
        self, fn: TaskFn, tasks: Iterable[Any], opts: BatchOptions, failure: Failure
    ) -> Iterator[tuple[Any, Any]]:
        # Tasks are told apart by their rank, not `id()`: a task done and freed leaves its id
        # to the next one, which a later broken pool then failed without its retry.
        pending = enumerate(tasks)
        suspects: list[tuple[int, Any]] = []
        tried: set[int] = set()
        running: dict[Future, tuple[int, Any]] = {}
        limit = 2 * self.workers
        while True:
            if suspects:
                if not running:  # a task that was in flight when the pool broke runs alone
                    rank, task = suspects.pop(0)
                    running[self._submit(fn, task, opts)] = rank, task
            else:
                while len(running) < limit and (item := next(pending, None)) is not None:
                    running[self._submit(fn, item[1], opts)] = item
            if not running:
                return
            done = _first_done(running)
            broken = False
            for future in done:
                rank, task = running.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool:
                    broken = True
                    if rank in tried:
                        yield task, failure(task, died())
                    else:
                        tried.add(rank)
                        suspects.append((rank, task))
                    continue
                except Exception as err:  # noqa: BLE001 - e.g. a task that cannot be pickled
                    yield task, failure(task, f"{type(err).__name__}: {err}")
                    continue
                yield task, result
            if broken:
                for rank, task in running.values():
                    tried.add(rank)
                    suspects.append((rank, task))
                running.clear()
                self._pool.shutdown(wait=False, cancel_futures=True)  # type: ignore[union-attr]
                self._pool = None

    def close(self, abort: bool = False) -> None:
        if self._pool is None:
            return
        if abort:  # the results in flight are not wanted: stop the workers, do not wait
            workers = list((getattr(self._pool, "_processes", None) or {}).values())
            manager = getattr(self._pool, "_executor_manager_thread", None)
            self._pool.shutdown(wait=False, cancel_futures=True)
            for process in workers:
                with contextlib.suppress(Exception):
                    process.terminate()
            # The pool's exit hook (CPython 3.11) wakes this thread without its lock, and can
            # write to the pipe the thread is closing: a traceback after `interrupted`. With
            # its workers gone, the thread ends at once; let it end before the interpreter does.
            if manager is not None:
                manager.join(timeout=_MANAGER_JOIN_SECONDS)
        else:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None


def _ray():
    try:
        import ray
    except ImportError:
        raise ReplayError(
            "--engine ray needs Ray: pip install '.[ray]' in the replay checkout "
            "(or pip install ray)"
        ) from None
    return ray


_RAY_PROBE_SECONDS = 5.0
"""How long to wait for a Ray head to accept a connection: `ray.init` itself retries an
unreachable address for minutes, printing only its own warnings."""


def check_ray_address(address: str) -> None:
    """Fail at once, with the address in the message, when nothing listens at a `host:port` (or
    `ray://host:port`) Ray address. `auto` and other forms are left to Ray."""
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=_RAY_PROBE_SECONDS):
            pass
    except OSError as err:
        raise ReplayError(
            f"cannot join Ray at {address!r}: nothing accepts connections there "
            f"({type(err).__name__}: {err}); start the head with `ray start --head` "
            "or leave out --ray-address to start a local instance"
        ) from None


class RayEngine(Engine):
    """Ray tasks: `ray.init()` starts a local instance when no address is given; with one,
    `ray.init(address=...)` joins that cluster. The logs must be readable at the same paths on
    every node (a shared filesystem); results come back to this process, which alone writes the
    dataset. Each task retries on a lost worker (Ray's `max_retries`)."""

    name = "ray"

    def __init__(self, address: str | None, workers: int | None) -> None:
        ray = _ray()
        self._started = not ray.is_initialized()
        if self._started:
            # Ray's INFO lines ("Started a local Ray instance.") would show on stderr through `-q`.
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": logging.WARNING,
            }
            if address:
                check_ray_address(address)
                kwargs["address"] = address
            elif workers:
                kwargs["num_cpus"] = workers
            try:
                ray.init(**kwargs)
            except Exception as err:  # noqa: BLE001 - connection problems are user errors
                message = f"cannot start or join Ray ({type(err).__name__}: {err})"
                raise ReplayError(message) from None
        resources = ray.cluster_resources()
        self.workers = max(1, int(resources.get("CPU", 1)))
        self._remote: dict[TaskFn, Any] = {}

    def imap(
        self, fn: TaskFn, tasks: Iterable[Any], opts: BatchOptions, failure: Failure
    ) -> Iterator[tuple[Any, Any]]:
        ray = _ray()
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._remote[fn] = ray.remote(num_cpus=1, max_retries=2)(fn)
        opts_ref = ray.put(opts)
        pending = iter(tasks)
        running: dict[Any, Any] = {}
        limit = 2 * self.workers
        while True:
            while len(running) < limit:
                task = next(pending, None)
                if task is None:
                    break
                running[remote.remote(task, opts_ref)] = task
            if not running:
                return
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                task = running.pop(ref)
                try:
                    yield task, ray.get(ref)
                except Exception as err:  # noqa: BLE001 - a lost worker or node
                    yield task, failure(task, f"Ray task failed ({type(err).__name__}: {err})")

    def close(self, abort: bool = False) -> None:
        if self._started:
            _ray().shutdown()
            self._started = False


def make_engine(
    name: str,
    workers: int | None,
    address: str | None = None,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
) -> Engine:
    """`serial`, `pool` (with `workers` processes; 1 = in this process) or `ray`. A pool runs
    `initializer(*initargs)` in each worker before its first task."""
    if name == "ray":
        return RayEngine(address, workers)
    if address:
        raise ReplayError("--ray-address needs --engine ray")
    count = workers if workers is not None else (os.cpu_count() or 1)
    if count < 1:
        raise ReplayError(f"--workers must be at least 1, got {count}")
    if name == "serial" or count == 1:
        return Engine()
    if name == "pool":
        return PoolEngine(count, initializer, initargs)
    raise ReplayError(f"unknown engine {name!r}; known: pool, ray")
