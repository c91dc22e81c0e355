"""`--workers N`: the strategies of one log replayed on N processes give what one process gives,
byte for byte (tables, JSON, CSV, notes, errors)."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT, RUN42
from test_adapters_common import SAMPLES, needs_samples
from test_cli_errors import RAISES_IN_SELECT, _check_line, _plugin, _workers
from test_cli_input import _replay

SAMPLE = SAMPLES / "claude_code" / (
    "d-kimuson__claude-code-viewer__mock-global-claude-dir_projects_sample-project_5c0375b4.jsonl"
)

FORMATS = [[], ["--format", "json"], ["--format", "csv", "--per-turn"]]

PARAMETRISED_PLUGIN = """\
\"\"\"Keep the last n items.\"\"\"


def strategy(history, ctx, n=4):
    return list(history[-n:])
"""


def _same(invoke, *args: object) -> None:
    """`--workers 2` prints what `--workers 1` prints (output and notes), with the same exit."""
    one = invoke(*args, "--workers", "1")
    two = invoke(*args, "--workers", "2")
    assert one.exit_code == 0, one.stderr
    assert (two.exit_code, two.stdout, two.stderr) == (one.exit_code, one.stdout, one.stderr)


@pytest.mark.parametrize("fmt", FORMATS, ids=["table", "json", "csv-per-turn"])
def test_two_workers_print_what_one_prints(invoke, fmt):
    _same(invoke, "run", RUN42, "-s", "all", *fmt)


@needs_samples
@pytest.mark.parametrize("fmt", FORMATS[:2], ids=["table", "json"])
def test_two_workers_on_a_real_log(invoke, fmt):
    _same(invoke, SAMPLE, "-s", "all", *fmt)


def test_two_workers_run_plugins_with_set_overrides(invoke, tmp_path, clean_registry):
    path = _plugin(tmp_path, "last_items", PARAMETRISED_PLUGIN)
    _same(invoke, "run", RUN42, "-s", "baseline,last-items,pi-compact-16k-20k", "--strategy-file",
          path, "--set", "last-items.n=2", "--set", "pi-compact.keep=3k", "--format", "json",
          "--per-turn")


def test_the_library_verb_with_two_workers_gives_the_same_frames():
    from replay import replay

    names = "recorded,baseline,truncate-500,age-truncate-500-keep-3"
    one = replay(RUN42, names)
    calls: list[tuple[str, int, int]] = []
    two = replay(RUN42, names, workers=2, progress=lambda *call: calls.append(call))
    assert two.summary.equals(one.summary)
    assert two.turns.equals(one.turns)
    assert two.evidence.equals(one.evidence)
    assert two.notes == one.notes
    assert two.unlogged_context == one.unlogged_context
    # The bar advances as strategies complete, and ends full.
    assert [done for _, done, _ in calls] == [0, 1, 2, 3, 4, 4]
    assert calls[-1] == ("", 4, 4)


def _last_two(history, ctx):
    return list(history[-2:])


def _build_last_two():
    return _last_two


LAST_TWO = {"family": "code-last-two", "pattern": "code-last-two", "cache_class": "churn",
            "rule": "The last two items.", "canonical": ("code-last-two",)}


def test_a_strategy_registered_in_code_runs_on_two_workers(clean_registry):
    """A worker never ran the calling program's `register`: the strategy is sent itself (its
    build function pickled by reference), and gives what one process gives."""
    from replay import replay
    from replay.strategies import StrategySpec, register

    register(StrategySpec(build=_build_last_two, **LAST_TWO))
    names = "baseline,code-last-two"
    one = replay(RUN42, names)
    two = replay(RUN42, names, workers=2)
    assert two.summary.equals(one.summary)
    assert two.turns.equals(one.turns)
    assert one.summary["cost_usd"][1] != one.summary["cost_usd"][0]  # it did run


def test_a_strategy_a_worker_cannot_import_is_refused_before_any_work(clean_registry):
    from replay import replay
    from replay._errors import ReplayError
    from replay.strategies import StrategySpec, register

    def build():  # local: nothing another process could import
        return _last_two

    register(StrategySpec(build=build, **LAST_TWO))
    with pytest.raises(ReplayError, match=r"'code-last-two' cannot be sent to a worker process "
                                          r"\(.*\): define its build function .* --workers 1"):
        replay(RUN42, "baseline,code-last-two", workers=2)


GUARDED_BUILD = """\
import replay
from replay.strategies import StrategySpec, register

if __name__ == "__main__":
    def build():  # at the top level of the script, but the workers never run this block
        return lambda history, ctx: list(history)

    register(StrategySpec(family="guarded", pattern="guarded", build=build,
                          cache_class="churn", rule="everything"))
    try:
        replay.replay({log!r}, "baseline,guarded", workers=2)
    except replay.ReplayError as err:
        print(err)
"""


def test_a_build_function_a_worker_cannot_find_is_the_strategy_s_error(tmp_path):
    """A build function defined under a script's main guard is pickled by reference, but the
    workers, which import the script without running that block, do not have it: the strategy
    is named with the advice, without a traceback from each worker (they used to print one, and
    the error blamed a worker that died, or a call outside the main guard)."""
    script = tmp_path / "guarded.py"
    script.write_text(GUARDED_BUILD.format(log=str(RUN42)), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith("strategy 'guarded' cannot be loaded in a worker process "
                                  "(AttributeError: "), done.stdout
    assert "outside `if __name__ == \"__main__\":`" in done.stdout


def test_a_piped_log_is_replayed_by_two_workers():
    args = ["-", "-s", "baseline,truncate-500,recorded", "--format", "json"]
    one = _replay(*args, "--workers", "1", stdin=RUN42.read_bytes())
    two = _replay(*args, "--workers", "2", stdin=RUN42.read_bytes())
    assert one.returncode == 0, one.stderr
    assert (two.returncode, two.stdout, two.stderr) == (0, one.stdout, one.stderr)


def test_a_plugin_that_raises_in_a_worker_is_the_same_one_line_error(invoke, tmp_path,
                                                                      clean_registry):
    path = _plugin(tmp_path, "selects_badly", RAISES_IN_SELECT)
    args = ["run", RUN42, "-s", "baseline,selects-badly,truncate-500", "--strategy-file", path,
            "-q"]
    one, two = invoke(*args, "--workers", "1"), invoke(*args, "--workers", "2")
    line = _check_line(two.stderr, (f"{path}:3", "'selects-badly'", "KeyError", "request 0"))
    assert (two.exit_code, line + "\n") == (one.exit_code, one.stderr)
    assert two.exit_code == 2


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_worker_count_is_a_usage_error(invoke, value):
    result = invoke("run", RUN42, "-s", "baseline", "--workers", value)
    assert result.exit_code == 2
    assert "Invalid value for '--workers'" in result.stderr
    assert "Traceback" not in result.stderr


def test_more_workers_than_strategies(invoke):
    _same(invoke, "run", RUN42, "-s", "baseline", "--format", "json")


@pytest.mark.parametrize("fmt", FORMATS[:2], ids=["table", "json"])
def test_two_workers_analyse_break_even_as_one(invoke, fmt):
    _same(invoke, "breakeven", RUN42, "-s", "all", *fmt)


def test_two_workers_add_the_break_even_columns_as_one(invoke):
    names = "recorded,age-truncate-500-keep-3,compact-at-12000-structured"
    _same(invoke, "run", RUN42, "-s", names, "--per-turn", "--breakeven", "--format", "csv")


def test_a_plugin_that_raises_in_a_break_even_worker_is_the_same_error(invoke, tmp_path,
                                                                       clean_registry):
    path = _plugin(tmp_path, "selects_badly", RAISES_IN_SELECT)
    args = ["breakeven", RUN42, "-s", "baseline,selects-badly", "--strategy-file", path, "-q"]
    one, two = invoke(*args, "--workers", "1"), invoke(*args, "--workers", "2")
    assert (two.exit_code, two.stderr) == (one.exit_code, one.stderr)
    _check_line(two.stderr, ("'selects-badly'", "KeyError"))


def test_two_workers_write_the_same_report(invoke, tmp_path):
    pytest.importorskip("altair")
    names = "recorded,age-truncate-500-keep-3,compact-at-12000-structured"
    pages = []
    for workers in ("1", "2"):
        out = tmp_path / f"report-{workers}.html"
        result = invoke("report", RUN42, "-s", names, "-q", "--workers", workers, "-o", out)
        assert result.exit_code == 0, result.stderr
        pages.append(out.read_bytes())
    assert pages[0] == pages[1]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_ctrl_c_stops_the_workers_of_a_replay(tmp_path):
    """Ctrl-C (SIGINT to the whole process group) while the workers replay: `interrupted`, exit
    130, no traceback from any worker, and no worker left behind."""
    from replay.bench._synthetic import synthetic_session
    from replay.log import write_log

    log = tmp_path / "long.jsonl"
    # `all` on it takes ~30 s on two workers here: a machine several times faster cannot end
    # it before the signal.
    write_log(synthetic_session(1200, seed=1), log)
    process = subprocess.Popen(
        [sys.executable, "-m", "replay", str(log), "-s", "all", "--workers", "2", "-q"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while len(_workers(process.pid)) < 2 and process.poll() is None:
        assert time.monotonic() < deadline, "no worker process started"
        time.sleep(0.005)
    started = _workers(process.pid)
    time.sleep(1.5)  # importing replay or replaying by now
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert (process.returncode, stderr, stdout) == (130, "interrupted\n", "")

    def alive(pid: int) -> bool:
        return Path(f"/proc/{pid}").exists() and b"zombie" not in _state(pid)

    # A worker whose parent is gone exits within about a second; on a loaded machine later.
    deadline = time.monotonic() + 15
    while any(alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in started if alive(pid)]


def _state(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/status").read_bytes().lower()
    except OSError:
        return b"zombie"


@pytest.mark.parametrize("workers", [0, -2, 1.5, "2", True])
def test_the_library_verb_refuses_a_bad_worker_count(workers):
    from replay import replay
    from replay._errors import ReplayError

    with pytest.raises(ReplayError, match="workers must be a whole number"):
        replay(RUN42, "baseline", workers=workers)


def test_a_worker_that_dies_is_a_one_line_error_naming_its_strategy(invoke, tmp_path,
                                                                    clean_registry):
    """(Killed, out of memory: tried once more alone, as `replay batch` does, then reported.)"""
    source = "import os, signal\n\ndef strategy(history, ctx):\n    os.kill(os.getpid(), 9)\n"
    path = _plugin(tmp_path, "dies", source)
    result = invoke("run", RUN42, "-s", "baseline,dies", "--strategy-file", path, "-q",
                    "--workers", "2")
    assert result.exit_code == 2
    _check_line(result.stderr, ("error: strategy 'dies' failed in a worker process",
                                "the worker process died on this task"))


def test_tables_merged_strategy_by_strategy_equal_one_table_of_them_all():
    """What a worker sends back (one strategy's `ResultTables`) merged in order counts what one
    table counting every record counts: the rows, and the sets the notes count requests in
    (a fallback price, an ignored --ttl) whichever strategy priced them."""
    from decimal import Decimal

    from replay import load
    from replay.engine import ReplayConfig, replay_session
    from replay.engine._results import ResultTables
    from replay.prices import Pricer, RateOverride

    pricer = Pricer({"gemini-*": RateOverride(input=Decimal(1), output=Decimal(2))})
    config = ReplayConfig(pricer=pricer, ttl="1h")
    records = replay_session(load(RUN42), ["baseline", "truncate-500", "sliding-10"], config)
    whole = ResultTables(evidence_rows=True)
    merged = ResultTables(evidence_rows=True)
    for name in ("baseline", "truncate-500", "sliding-10"):
        own = [r for r in records if r.strategy == name]
        whole.add(own)
        part = ResultTables(evidence_rows=True)
        part.add(own)
        merged.merge(part)
    assert whole.price_warnings and whole.no_ttl_choice  # (the case is exercised)
    assert merged.summary().equals(whole.summary())
    assert merged.turns().equals(whole.turns())
    assert merged.evidence().equals(whole.evidence())
    for attr in ("models", "providers", "estimated_output", "price_warnings", "no_ttl_choice",
                 "mentions"):
        assert getattr(merged, attr) == getattr(whole, attr), attr


def test_a_merge_keeps_the_rows_counted_record_by_record_before_it():
    """Rows counted one record at a time (`add_record`, a strategy not yet closed) come first
    in `turns`, then the merged table's: as if the worker's records had been added after."""
    from replay import load
    from replay.engine import replay_session
    from replay.engine._results import ResultTables

    records = replay_session(load(RUN42), ["baseline", "truncate-500"])
    tables = ResultTables()
    for r in records:
        if r.strategy == "baseline":
            tables.add_record(r)
    part = ResultTables()
    part.add([r for r in records if r.strategy == "truncate-500"])
    tables.merge(part)
    assert tables.turns()["strategy"].to_list() == [r.strategy for r in records]


def test_a_merged_table_estimates_output_only_where_both_tables_did():
    """`estimated_output` holds while every recorded request's output size is a count of the
    logged response: a worker's table with provider usage makes the merged table say no, in
    either order."""
    from replay import load
    from replay.engine import replay_session
    from replay.engine._results import ResultTables

    records = replay_session(load(RUN42), ["baseline", "truncate-500"])

    def table(name: str, estimated: bool) -> ResultTables:
        part = ResultTables(per_turn=False)
        part.add([dataclasses.replace(r, request=dataclasses.replace(
            r.request, estimated_output=estimated)) for r in records if r.strategy == name])
        return part

    for first, second in ((True, False), (False, True), (True, True)):
        merged = table("baseline", first)
        merged.merge(table("truncate-500", second))
        assert merged.estimated_output is (first and second), (first, second)


def _synthetic(tmp_path: Path, requests: int) -> Path:
    from replay.bench._synthetic import synthetic_session
    from replay.log import write_log

    log = tmp_path / f"synthetic-{requests}.jsonl"
    write_log(synthetic_session(requests, seed=1), log)
    return log


SHARED_OUT = "observation-mask-keep-5-poll-1"
"""A strategy that rewrites in place at most requests: each rewrite followed to the end of the
log, its break-even is ~30 times the work of its run on 60 requests."""


def test_a_break_even_of_a_strategy_that_rewrites_at_most_requests_is_the_same_on_workers(
        invoke, tmp_path):
    _same(invoke, "breakeven", _synthetic(tmp_path, 60), "-s", f"baseline,{SHARED_OUT}",
          "--format", "json")


def test_break_even_shared_out_among_workers_gives_the_rows_of_one_process():
    """Every strategy with two rewrites or more split into shares on two spawned workers (the
    thresholds set to 0): the rows, in the order one process gives them."""
    from replay.breakeven import breakeven_session
    from replay.engine._parallel import breakeven_parts
    from replay.log import read_log

    session = read_log(RUN42)
    rows, _ = breakeven_session(session, "all")
    parts = breakeven_parts(session, "all", None, 2, share_steps=0, share_min_steps=0)
    assert [row for part in parts for row in part.breakeven] == rows


def test_a_worker_shares_out_a_long_break_even_and_the_shares_make_its_rows():
    """The first task of a strategy replays it and says into how many shares its rewrites go
    (at most the workers); each share replays it and analyses its part. Below that, the first
    task analyses them all."""
    from replay.bench._synthetic import synthetic_session
    from replay.breakeven._breakeven import breakeven_config, breakeven_strategy
    from replay.engine._parallel import _Shared, _task, _Worker
    from replay.strategies import resolve

    session = synthetic_session(60, seed=1)
    config = breakeven_config(session, None)
    [named] = resolve(SHARED_OUT)
    expected, _ = breakeven_strategy(session, named, config, None)
    shared = _Shared(session, config, None, [], per_turn=False, evidence_rows=False,
                     breakeven=True, workers=2, share_min_steps=0)
    worker = _Worker(shared)
    first = worker.run(_task(0, named))
    assert (first.shares, first.breakeven) == (2, []) and first.tables.models
    parts = [worker.run(dataclasses.replace(_task(0, named), share=k, shares=2)) for k in (0, 1)]
    assert all(p.breakeven and not p.tables.models for p in parts)
    rows = sorted(parts[0].breakeven + parts[1].breakeven, key=lambda placed: placed[0])
    assert [row for _, row in rows] == expected
    alone = _Worker(dataclasses.replace(shared, workers=1)).run(_task(0, named))
    assert alone.shares == 1 and [row for _, row in alone.breakeven] == expected


@pytest.mark.parametrize("split", [False, True], ids=["whole", "shared-out"])
def test_the_break_even_of_one_strategy_starts_a_pool_only_for_its_shares(monkeypatch, split):
    """Whether one strategy's rewrites are shared out is known after its run: that run is made
    here, and a pool is started only when there are shares to give it (the same rows)."""
    from replay.batch import _engines
    from replay.breakeven import breakeven_session
    from replay.engine._parallel import breakeven_parts
    from replay.log import read_log

    pools: list[int] = []
    real = _engines.PoolEngine

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, workers, *args, **kwargs):
            pools.append(workers)
            super().__init__(workers, *args, **kwargs)

    monkeypatch.setattr(_engines, "PoolEngine", Counted)
    session = read_log(RUN42)
    name = "age-truncate-500-keep-3"
    rows, _ = breakeven_session(session, name)
    assert len(rows) >= 2
    thresholds = {"share_steps": 0, "share_min_steps": 0} if split else {}
    parts = list(breakeven_parts(session, name, None, 2, **thresholds))
    assert [row for part in parts for row in part.breakeven] == rows
    assert len(parts) == 1 and parts[0].tables.models
    assert pools == ([2] if split else [])


def test_one_strategy_with_two_workers_is_replayed_here(monkeypatch):
    """No worker process to start for one strategy: the same frames, and no records (as with
    workers), from this process."""
    from replay import replay
    from replay.engine import _parallel

    def no_workers(*args, **kwargs):
        raise AssertionError("a worker pool was started for one strategy")

    one = replay(RUN42, "age-truncate-500-keep-3")
    monkeypatch.setattr(_parallel, "replay_parts", no_workers)
    two = replay(RUN42, "age-truncate-500-keep-3", workers=2)
    assert two.records == [] and one.records
    assert two.summary.equals(one.summary) and two.turns.equals(one.turns)
    assert two.evidence.equals(one.evidence) and two.notes == one.notes


@pytest.mark.parametrize(("steps", "requests", "workers", "expected"), [
    (11_000, 150, 2, 1),    # a short log: a share would not pay for its process
    (88_315, 439, 2, 2),    # pi large-session's observation-mask-keep-5-poll-1
    (88_315, 439, 8, 8),
    (30_873, 439, 8, 3),    # its anthropic-clear-tool-uses-100k-keep-3: ≥ 10,000 per share
    (2_751, 439, 8, 1),     # observation-mask-keep-100: little more than its run
    (20_000, 100, 2, 2),    # exactly 10,000 per share: at least the minimum (SHARE_MIN_STEPS)
    (19_999, 100, 2, 1),
    (24_000, 1_500, 2, 2),  # exactly 8 per request of the run per share (SHARE_STEPS)
    (23_999, 1_500, 2, 1),
])
def test_a_strategy_is_split_when_its_counterfactuals_pay_for_the_shares(steps, requests,
                                                                         workers, expected):
    from replay.engine._parallel import _Shared, _shares

    shared = _Shared(None, None, None, [], per_turn=False, evidence_rows=False, breakeven=True,
                     workers=workers)
    assert _shares(steps, requests, shared) == expected


@pytest.fixture
def in_process_pool(monkeypatch):
    """`PoolEngine` as `_merged` uses it, made in this process: each pool's parts given back
    last first, `2 × workers` tasks at a time (the tasks `PoolEngine.imap` keeps in flight), as
    workers that finish in any order would. Says the worker counts of the pools started
    (`.started`) and the tasks they were given (`.drawn`)."""
    import itertools

    from replay.batch import _engines
    from replay.engine import _parallel

    pools = SimpleNamespace(started=[], drawn=[])

    class InProcess:
        def __init__(self, workers, initializer, initargs):
            pools.started.append(workers)
            self.workers = workers
            initializer(*initargs)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            for worker in _parallel._WORKER:
                worker.gc.close()  # its frozen log, unfrozen
            _parallel._WORKER.clear()

        def imap(self, fn, tasks, opts, failure):
            tasks = iter(tasks)
            while batch := list(itertools.islice(tasks, 2 * self.workers)):
                pools.drawn += batch
                yield from reversed([(task, fn(task, opts)) for task in batch])

    monkeypatch.setattr(_engines, "PoolEngine", InProcess)
    monkeypatch.setattr(_parallel, "_WORKER", [])
    return pools


def test_parts_that_finish_last_first_come_in_the_strategies_order(in_process_pool):
    """`replay_parts` is `iter_replay` on workers: each strategy's rows in the resolved order
    whichever finished first, a process per strategy at most, the progress bar told each
    strategy's name as it completes (`ReplayConfig.progress`), and the per-request rows sent
    back only when they are kept."""
    from replay.engine import ReplayConfig, replay_session
    from replay.engine._parallel import replay_parts
    from replay.engine._results import ResultTables
    from replay.log import read_log

    session = read_log(RUN42)
    names = ["baseline", "truncate-500", "sliding-10"]
    calls: list[tuple[str, int, int]] = []
    config = ReplayConfig(progress=lambda *call: calls.append(call))
    merged = ResultTables(evidence_rows=True)
    for part in replay_parts(session, names, config, 4, evidence_rows=True):
        merged.merge(part.tables)
    whole = ResultTables(evidence_rows=True)
    whole.add(replay_session(session, names))
    assert merged.summary()["strategy"].to_list() == names
    assert merged.summary().equals(whole.summary())
    assert merged.turns().equals(whole.turns())
    assert merged.evidence().equals(whole.evidence())
    assert in_process_pool.started == [3]  # not 4: "a replay has one per task"
    assert [done for _, done, _ in calls] == [0, 1, 2, 3, 3]
    assert sorted(name for name, _, _ in calls[1:-1]) == sorted(names)
    # Per-request rows are kept only when asked for (`_Shared.per_turn`): none are sent back.
    parts = list(replay_parts(session, names, ReplayConfig(), 2, per_turn=False))
    assert [part.tables.per_turn for part in parts] == [False] * 3


def test_break_even_shares_that_finish_last_first_make_the_rows_of_one_process(
        in_process_pool):
    """Each strategy's first task runs on a worker (only a lone strategy's runs here), every
    process may take a share of one strategy's break-even (the pool is not cut to the number of
    strategies), and shares that finish in any order are put back in the strategy's order."""
    from replay.breakeven import breakeven_session
    from replay.engine._parallel import breakeven_parts
    from replay.log import read_log

    session = read_log(RUN42)
    names = "recorded,age-truncate-500-keep-3"
    rows, _ = breakeven_session(session, names)
    parts = list(breakeven_parts(session, names, None, 3, share_steps=0, share_min_steps=0))
    assert [row for part in parts for row in part.breakeven] == rows
    assert in_process_pool.started == [3]
    assert [t.index for t in in_process_pool.drawn if not t.shares] == [0, 1]
    assert sorted(t.share for t in in_process_pool.drawn if t.shares) == [0, 1, 2]


def test_the_queue_draws_the_tasks_in_order_and_a_strategy_s_shares_first():
    """(`_Queue`: the tasks as `imap` draws them; a strategy's further shares put first as soon
    as its first task says how many.)"""
    from replay.engine._parallel import _Queue, _Task

    tasks = [_Task(n, f"s{n}", "f") for n in range(3)]
    queue = _Queue(tasks)
    assert next(queue) is tasks[0] and queue.left()
    shares = [dataclasses.replace(tasks[0], share=k, shares=2) for k in range(2)]
    queue.first(shares)
    drawn = list(queue)
    assert sorted(drawn[:2], key=lambda t: t.share) == shares
    assert drawn[2:] == tasks[1:]
    assert not queue.left()


def test_a_strategy_that_failed_in_a_share_has_no_further_part():
    """`_whole`: a share of a strategy that failed already is not wanted, failed or not (the
    strategy's error is its one part)."""
    from replay.engine._parallel import Part, _Queue, _Strategy, _Task, _whole

    first = _Task(0, "s", "f")
    queue = _Queue([])
    strategies: dict[int, _Strategy] = {}
    assert _whole(first, Part(0, shares=3), strategies, queue) is None
    shares = list(queue)
    assert sorted((t.share, t.shares) for t in shares) == [(0, 3), (1, 3), (2, 3)]
    failed = Part(0, error="boom")
    assert _whole(shares[0], failed, strategies, queue) is failed
    assert _whole(shares[1], Part(0, error="again"), strategies, queue) is None
    assert _whole(shares[2], Part(0, breakeven=[(0, "row")], shares=3), strategies,
                  queue) is None


@pytest.mark.parametrize(("share_steps", "shares"), [(1, 2), (2, 1)])
def test_a_strategy_is_split_by_its_counterfactuals_per_request_of_its_run(share_steps, shares):
    """Its rewrites go into two shares when all their counterfactuals replay at least
    `share_steps` requests per request of the strategy's run (every request it replays, not
    only those it rewrote) for each share: run42's `tool-aging-keep-3` replays 14 requests and
    its 6 rewrites' counterfactuals 34, enough for two shares at 1 per request (≥ 2 × 14), not
    at 2 (< 2 × 28)."""
    from replay.breakeven._breakeven import breakeven_config, strategy_rewrites
    from replay.engine._parallel import _Shared, _task, _Worker
    from replay.log import read_log
    from replay.strategies import resolve

    session = read_log(RUN42)
    config = breakeven_config(session, None)
    [named] = resolve("tool-aging-keep-3")
    with strategy_rewrites(session, named, config, None) as rewrites:
        assert (len(rewrites.records), len(rewrites.steps), sum(rewrites.steps)) == (14, 6, 34)
    shared = _Shared(session, config, None, [], per_turn=False, evidence_rows=False,
                     breakeven=True, workers=2, share_steps=share_steps, share_min_steps=0)
    assert _Worker(shared).run(_task(0, named)).shares == shares


def test_a_strategy_goes_to_a_worker_by_family_only_when_its_registry_has_that_spec():
    """(`_task`: by family when a worker's registry will have it, else the strategy itself.)"""
    from replay.engine._parallel import _task
    from replay.strategies import NamedStrategy, StrategySpec, resolve

    [builtin] = resolve("truncate-500")
    task = _task(0, builtin)
    assert (task.built, task.family, task.params) == (None, builtin.spec.family, builtin.params)
    one_off = NamedStrategy("code-last-two", StrategySpec(build=_build_last_two, **LAST_TWO), {})
    task = _task(1, one_off)
    assert isinstance(task.built, bytes)  # pickled: unpickled in the worker, by its build's name
    sent = task.strategy()
    assert (sent.name, sent.spec.family, sent.spec.build, sent.params) == (
        "code-last-two", "code-last-two", _build_last_two, {}
    )


def test_a_with_records_a_worker_cannot_import_is_a_replay_error():
    """`_Shared.with_records` is pickled by name: a local function cannot go to a worker, which
    is said as the one-line error, before any work."""
    from replay._errors import ReplayError
    from replay.engine._parallel import breakeven_parts
    from replay.log import read_log

    def local(session, records):
        return len(records)

    with pytest.raises(ReplayError, match=r"^--workers: the log or the options cannot be sent "
                                          r"to a worker process \(.*\); use --workers 1$"):
        breakeven_parts(read_log(RUN42), "recorded,baseline", None, 2, with_records=local)


def test_a_horizon_is_followed_on_workers_as_in_one_process(invoke):
    _same(invoke, "breakeven", RUN42, "-s", "recorded,age-truncate-500-keep-3", "--horizon", "2",
          "--format", "json")


def test_workers_count_with_the_tokenizer_file_the_program_set(tmp_path):
    """`use_tokenizers` in the calling program is not inherited by a spawned process (the
    environment variable is): a worker is handed the file in force and counts with it."""
    import json

    from replay import replay
    from replay.tokens import tokenizer_rows, use_tokenizers

    names = "baseline,truncate-500"
    built_in = replay(RUN42, names)
    row = next(r for r in tokenizer_rows() if r["family"] == "gemini")  # run42's model
    path = tmp_path / "tokenizers.json"
    path.write_text(json.dumps({"families": [{**row, "factor": 2.0}]}), encoding="utf-8")
    use_tokenizers(path)
    try:
        one = replay(RUN42, names)
        two = replay(RUN42, names, workers=2)
    finally:
        use_tokenizers(None)
    assert one.summary["prompt_tokens"][0] > 1.9 * built_in.summary["prompt_tokens"][0]
    assert two.summary.equals(one.summary)


@needs_samples
def test_replay_parts_replay_with_the_unlogged_context_iter_replay_fits(in_process_pool):
    """On a log with usage (an unlogged system prompt and tools to fit): the workers replay
    with the context the parent fitted once, as `iter_replay` does in one process."""
    from replay import load
    from replay.engine import ReplayConfig, replay_session
    from replay.engine._parallel import replay_parts
    from replay.engine._replay import fit_unlogged_context
    from replay.engine._results import ResultTables

    session = load(SAMPLE)
    assert fit_unlogged_context(session, ReplayConfig()).requests  # (the case is exercised)
    names = ["recorded", "baseline"]
    merged = ResultTables()
    for part in replay_parts(session, names, ReplayConfig(), 2):
        merged.merge(part.tables)
    whole = ResultTables()
    whole.add(replay_session(session, names))
    assert merged.summary().equals(whole.summary())
    assert merged.turns().equals(whole.turns())


def test_what_fails_for_every_strategy_fails_before_any_worker_starts(in_process_pool,
                                                                     tmp_path, monkeypatch):
    """A log without requests ("the same error for every command") and a bad tokenizer file
    ("fails here, not in every worker"): the one error, and no pool started."""
    import json

    from replay._errors import ReplayError
    from replay.engine import ReplayConfig
    from replay.engine._parallel import replay_parts
    from replay.log import RequestMarker, read_log
    from replay.tokens import use_tokenizers

    session = read_log(RUN42)
    names = "baseline,truncate-500"
    silent = dataclasses.replace(
        session, events=[e for e in session.events if not isinstance(e, RequestMarker)])
    with pytest.raises(ReplayError, match="the log has no requests"):
        list(replay_parts(silent, names, ReplayConfig(), 2))
    path = tmp_path / "tokenizers.json"
    row = {"family": "gemini", "pattern": "^gemini-", "encoding": "nope", "factor": 1.2,
           "message_overhead": 4, "tool_call_overhead": 12}
    path.write_text(json.dumps({"families": [row]}), encoding="utf-8")
    monkeypatch.setenv("REPLAY_TOKENIZERS", str(path))
    use_tokenizers(None)  # forget the rows looked up before
    try:
        with pytest.raises(ReplayError, match=r"families\[0\]\.encoding"):
            list(replay_parts(session, names, ReplayConfig(), 2))
    finally:
        monkeypatch.delenv("REPLAY_TOKENIZERS")
        use_tokenizers(None)
    assert in_process_pool.started == []


def test_the_progress_bar_counts_the_strategies_done_however_they_come_in(in_process_pool):
    """`_merged` tells the progress bar how many strategies are complete: those waiting for
    an earlier one and those already given back alike (one worker, whose parts come in two at
    a time, last first: the third completes after the first two were given back)."""
    from replay.engine import ReplayConfig
    from replay.engine._parallel import replay_parts
    from replay.log import read_log

    names = ["baseline", "truncate-500", "sliding-10"]
    calls: list[tuple[str, int, int]] = []
    config = ReplayConfig(progress=lambda *call: calls.append(call))
    parts = list(replay_parts(read_log(RUN42), names, config, 1, per_turn=False))
    assert [part.index for part in parts] == [0, 1, 2]
    assert in_process_pool.started == [1]
    assert [(name, done) for name, done, _ in calls] == [
        ("", 0), ("truncate-500", 1), ("baseline", 2), ("sliding-10", 3), ("", 3)]
