"""The batch engines themselves (`replay.batch._engines`): which engine a command gets, what a
pool keeps in flight and retries, and the Ray engine against a stand-in for Ray (the real one is
an extra these tests do not need)."""

from __future__ import annotations

import logging
import os
import socket
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

from replay._errors import PluginWarning, ReplayError
from replay.batch import BatchOptions, _engines
from replay.batch._engines import (
    Engine,
    PoolEngine,
    RayEngine,
    check_ray_address,
    make_engine,
)

_SET_IN_THE_PARENT: dict[str, bool] = {}


def times_ten(task: int, opts: BatchOptions) -> int:
    return task * 10


def set_in_the_parent(task: int, opts: BatchOptions) -> bool:
    return bool(_SET_IN_THE_PARENT)


def warns_of_a_plugin(task: int, opts: BatchOptions) -> int:
    """How many PluginWarnings would show from the worker (a broken plug-in package loaded)."""
    with warnings.catch_warnings(record=True) as shown:
        warnings.warn("strategy plug-in 'x' not loaded", PluginWarning, stacklevel=1)
    return len(shown)


def die_always(task: list[str], opts: BatchOptions) -> str:
    """Kills its worker each time it runs, leaving one file per run in the task's folder."""
    name, folder = task
    runs = len(list(Path(folder).glob(f"{name}.run*")))
    (Path(folder) / f"{name}.run{runs}").touch()
    if name.startswith("die"):
        os._exit(3)
    return name


# --- which engine ------------------------------------------------------------------------------


def test_make_engine_picks_the_engine_the_options_name(monkeypatch):
    monkeypatch.setattr(_engines.os, "cpu_count", lambda: 7)
    assert type(make_engine("pool", 1)) is Engine  # `--workers 1` runs in this process
    assert type(make_engine("serial", 4)) is Engine
    pool = make_engine("pool", 3)
    assert isinstance(pool, PoolEngine) and pool.workers == 3
    assert make_engine("pool", None).workers == 7  # one per CPU
    monkeypatch.setattr(_engines.os, "cpu_count", lambda: None)  # unknown: one
    assert type(make_engine("pool", None)) is Engine


@pytest.mark.parametrize(
    ("name", "workers", "address", "message"),
    [
        ("pool", 0, None, "--workers must be at least 1, got 0"),
        ("serial", 0, None, "--workers must be at least 1, got 0"),
        ("pool", 2, "127.0.0.1:6379", "--ray-address needs --engine ray"),
        ("serial", 1, "auto", "--ray-address needs --engine ray"),
        ("dask", 2, None, "unknown engine 'dask'; known: pool, ray"),
    ],
)
def test_make_engine_refuses_options_that_do_not_go_together(name, workers, address, message):
    with pytest.raises(ReplayError) as raised:
        make_engine(name, workers, address)
    assert str(raised.value) == message


# --- the pool ----------------------------------------------------------------------------------


def test_a_pool_keeps_at_most_two_tasks_per_worker_in_flight():
    """docs/batch.md: at most two tasks per worker in flight, so inputs do not pile up."""
    taken = 0

    def tasks():
        nonlocal taken
        for task in range(20):
            taken += 1
            yield task

    with PoolEngine(2) as pool:
        results = pool.imap(times_ten, tasks(), BatchOptions(), lambda t, m: m)
        next(results)
        assert taken <= 4
        rest = list(results)
    assert taken == 20 and len(rest) == 19


def test_a_task_that_kills_its_worker_every_time_runs_twice_then_fails(tmp_path: Path):
    """docs/batch.md: retried once, alone, and failed with "the worker process died on this
    task" if it kills the pool again; the other tasks are not lost."""
    tasks = [["die-1", str(tmp_path)], ["ok-2", str(tmp_path)], ["ok-3", str(tmp_path)]]
    with PoolEngine(1) as pool:
        results = {task[0]: result
                   for task, result in pool.imap(die_always, tasks, BatchOptions(),
                                                 lambda t, m: f"failed: {m}")}
    assert results.pop("die-1").startswith("failed: the worker process died on this task")
    assert results == {"ok-2": "ok-2", "ok-3": "ok-3"}
    assert len(list(tmp_path.glob("die-1.run*"))) == 2


def test_a_task_that_cannot_be_sent_to_a_worker_fails_alone():
    """Per-task errors never stop the pool: the one task fails, named by its exception type."""
    tasks = [1, lambda: None, 3]  # a lambda cannot be pickled
    with PoolEngine(1) as pool:
        results = [result for _, result in pool.imap(times_ten, tasks, BatchOptions(),
                                                       lambda t, m: f"failed: {m}")]
    failed = [r for r in results if isinstance(r, str)]
    assert sorted(r for r in results if not isinstance(r, str)) == [10, 30]
    assert len(failed) == 1 and "pickle" in failed[0]
    assert failed[0].split(":")[1].strip().endswith("Error")  # "failed: PicklingError: …"


def test_pool_workers_are_spawned_not_forked(monkeypatch):
    """docs/batch.md: spawned (safe with polars' threads, the same on every OS): a worker
    starts from a fresh interpreter, with nothing this process set at run time."""
    monkeypatch.setitem(_SET_IN_THE_PARENT, "set", True)
    with PoolEngine(1) as pool:
        assert list(pool.imap(set_in_the_parent, [1], BatchOptions(), lambda t, m: m)) == [
            (1, False)
        ]


def test_a_plugin_warning_is_not_shown_again_by_each_worker():
    """The process that started the pool has shown it already (`_worker_start`)."""
    with PoolEngine(1) as pool:
        assert list(pool.imap(warns_of_a_plugin, [1], BatchOptions(), lambda t, m: m)) == [(1, 0)]


# --- Ray, against a stand-in ---------------------------------------------------------------------


class _Ref:
    def __init__(self, fn: Any, task: Any, opts: Any) -> None:
        self.fn, self.task, self.opts = fn, task, opts


class _FakeRay(types.ModuleType):
    """What `RayEngine` calls of Ray, run in this process. As Ray does, `get` raises the error
    of a task (or of the worker or node it lost)."""

    def __init__(self, initialized: bool = False, fails: Exception | None = None) -> None:
        super().__init__("ray")
        self.initialized = initialized
        self.fails = fails
        self.init_kwargs: dict[str, Any] | None = None
        self.remote_options: dict[str, Any] | None = None
        self.shut_down = False
        self.most_in_flight = 0

    def is_initialized(self) -> bool:
        return self.initialized

    def init(self, **kwargs: Any) -> None:
        if self.fails is not None:
            raise self.fails
        self.init_kwargs, self.initialized = kwargs, True

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 3.0}

    def shutdown(self) -> None:
        self.shut_down, self.initialized = True, False

    def put(self, value: Any) -> tuple[str, Any]:
        return ("ref", value)

    def remote(self, **options: Any):
        self.remote_options = options

        def wrap(fn):
            return types.SimpleNamespace(
                remote=lambda task, opts_ref: _Ref(fn, task, opts_ref[1])
            )

        return wrap

    def wait(self, refs: list[_Ref], num_returns: int) -> tuple[list[_Ref], list[_Ref]]:
        self.most_in_flight = max(self.most_in_flight, len(refs))
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref: _Ref) -> Any:
        return ref.fn(ref.task, ref.opts)


def fails_on_two(task: int, opts: BatchOptions) -> int:
    if task == 2:
        raise OSError("node lost")
    return task * 10


@pytest.fixture
def fake_ray(monkeypatch):
    ray = _FakeRay()
    monkeypatch.setitem(sys.modules, "ray", ray)
    return ray


def test_ray_tasks_give_their_results_and_a_failed_task_fails_alone(fake_ray):
    """docs/batch.md: a task whose worker is lost is retried by Ray (twice), then reported as
    failed; the others go on."""
    engine = make_engine("ray", None)
    assert isinstance(engine, RayEngine) and engine.workers == 3  # the cluster's CPUs
    with engine:
        results = dict(engine.imap(fails_on_two, [1, 2, 3, 4, 5, 6, 7, 8], BatchOptions(),
                                   lambda t, m: f"failed: {m}"))
    assert results == {1: 10, 2: "failed: Ray task failed (OSError: node lost)", 3: 30, 4: 40,
                       5: 50, 6: 60, 7: 70, 8: 80}
    assert fake_ray.remote_options == {"num_cpus": 1, "max_retries": 2}
    assert fake_ray.most_in_flight == 6  # two per CPU, as the pool


def test_a_local_ray_starts_with_the_workers_given_quietly_and_is_shut_down(fake_ray):
    with make_engine("ray", 4):
        assert fake_ray.init_kwargs == {"include_dashboard": False, "log_to_driver": False,
                                        "logging_level": logging.WARNING, "num_cpus": 4}
        assert not fake_ray.shut_down
    assert fake_ray.shut_down


def test_a_ray_address_is_probed_then_joined(fake_ray):
    with socket.socket() as head:
        head.bind(("127.0.0.1", 0))
        head.listen()
        address = f"ray://127.0.0.1:{head.getsockname()[1]}"
        with make_engine("ray", 4, address):
            pass
    assert fake_ray.init_kwargs is not None
    assert fake_ray.init_kwargs["address"] == address and "num_cpus" not in fake_ray.init_kwargs
    with pytest.raises(ReplayError, match="cannot join Ray at"):
        make_engine("ray", 4, address)  # nothing listens there any more


def test_an_ipv6_ray_address_is_probed_without_its_brackets():
    try:
        head = socket.socket(socket.AF_INET6)
        head.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with head:
        head.listen()
        check_ray_address(f"[::1]:{head.getsockname()[1]}")


@pytest.mark.parametrize("address", ["auto", "ray://[::1]", "head:dashboard", "local"])
def test_a_ray_address_that_is_not_host_and_port_is_left_to_ray(address):
    check_ray_address(address)  # no probe, no error: Ray reads it


def test_a_ray_already_running_is_joined_as_it_is_and_left_running(fake_ray):
    fake_ray.initialized = True
    with make_engine("ray", 4):
        pass
    assert fake_ray.init_kwargs is None and not fake_ray.shut_down


def test_a_ray_that_cannot_start_is_a_replay_error(fake_ray):
    fake_ray.fails = RuntimeError("no room for the object store")
    with pytest.raises(ReplayError) as raised:
        make_engine("ray", 2)
    assert str(raised.value) == (
        "cannot start or join Ray (RuntimeError: no room for the object store)"
    )


def test_the_ray_engine_without_ray_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    with pytest.raises(ReplayError, match=r"--engine ray needs Ray: pip install '\.\[ray\]'"):
        make_engine("ray", 2)
