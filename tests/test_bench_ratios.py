"""`replay bench`'s ratios against what docs/performance.md ("How to measure") says each one is.

The timings are made exact: the bench's clock only moves when a faked piece of work says so
(reading the log, a fast replay, the CLI-like `all` run, tokenizing a floor text, the naive-only
work of one prompt), so every ratio has one value the docs' definition gives.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from replay.bench import _bench, prefix_session, synthetic_session
from replay.engine import ReplayConfig, replay_session
from replay.log import dumps_log, read_log
from replay.prices import Pricer

READ = 0.5  # reading the log
TOKENIZE = 1e-4  # tokenizing one floor text
FAST = {"baseline": 3e-3, "sliding-10": 1e-3}  # one fast replay, per request
ALL = 2e-3  # the CLI-like `all` run, per request and strategy
NAIVE_A, NAIVE_B = 2e-3, 1e-6  # naive-only work of one prompt: a + b·prompt_tokens
CONFIG = dict(provider="openai", model="gpt-4o")  # a family counted at factor 1.0


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.frozen = 0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        if not self.frozen:
            self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    """The bench's clock, moved only by the faked work below."""
    clock = _Clock()
    monkeypatch.setattr(_bench, "time", SimpleNamespace(perf_counter=clock, process_time=clock))
    real_read, real_replay = _bench.read_log, _bench.replay_session
    real_encoding, real_naive = _bench.get_encoding, _bench.naive_tokens

    def read_log(path, *args, **kwargs):
        clock.advance(READ)
        return real_read(path, *args, **kwargs)

    def fast(session, strategies, config):
        clock.advance(sum(FAST[s] for s in strategies) * len(session.requests()))
        return real_replay(session, strategies, config)

    def like_the_cli(session, strategies, workers=1):
        clock.advance(ALL * len(session.requests()) * len(strategies) / workers)

    class Encoding:
        def __init__(self, encoding) -> None:
            self.encoding = encoding

        def encode_ordinary(self, text):
            clock.advance(TOKENIZE)
            return self.encoding.encode_ordinary(text)

    def naive_tokens(blocks, model):
        clock.frozen += 1
        try:
            tokens, total = real_naive(blocks, model)
        finally:
            clock.frozen -= 1
        clock.advance(NAIVE_A + NAIVE_B * total)
        return tokens, total

    monkeypatch.setattr(_bench, "read_log", read_log)
    monkeypatch.setattr(_bench, "replay_session", fast)
    monkeypatch.setattr(_bench, "_replay_like_the_cli", like_the_cli)
    monkeypatch.setattr(_bench, "get_encoding", lambda name: Encoding(real_encoding(name)))
    monkeypatch.setattr(_bench, "naive_tokens", naive_tokens)
    return clock


def _prompts(session, name: str) -> list[int]:
    records = replay_session(session, [name], ReplayConfig(pricer=Pricer(), **CONFIG))
    return [int(r.request.total) for r in records]


def test_every_ratio_is_the_one_the_docs_define(clock, tmp_path):
    n, m, names = 30, 10, ["baseline", "sliding-10"]
    doc = _bench.run_bench(n, ",".join(names), naive_requests=m, doubling=False, memory=False,
                           workdir=tmp_path, **CONFIG)
    session = synthetic_session(n, 0, **CONFIG)
    floor = doc["floor"]
    # floor: reading the log once plus tokenizing each distinct block once
    assert floor["read_seconds"] == pytest.approx(READ)
    assert floor["tokenize_seconds"] == pytest.approx(TOKENIZE * floor["distinct_blocks"])
    assert floor["seconds"] == pytest.approx(READ + TOKENIZE * floor["distinct_blocks"])
    # fast `all`: reading the log plus replaying every strategy the way the CLI does
    all_seconds = READ + ALL * n * len(names)
    assert doc["all"]["seconds"] == pytest.approx(all_seconds)
    assert doc["all"]["requests_per_second"] == pytest.approx(n * len(names) / all_seconds)
    assert doc["fast_floor_ratio"] == pytest.approx(all_seconds / floor["seconds"])
    sent = doc["sent_floor"]
    assert sent["seconds"] == pytest.approx(READ + TOKENIZE * sent["distinct_blocks"])
    assert doc["fast_sent_floor_ratio"] == pytest.approx(all_seconds / sent["seconds"])
    naive_total = 0.0
    alone = []
    for row, name in zip(doc["rows"], names, strict=True):
        prompts = _prompts(session, name)
        assert len(prompts) == n  # (no summarizer call: one prompt per request)
        work = [NAIVE_A + NAIVE_B * p for p in prompts]
        fast = FAST[name] * n
        assert row["fast_seconds"] == pytest.approx(fast)
        assert row["requests_per_second"] == pytest.approx(n / fast)
        # naive: measured on the first m requests...
        assert row["naive_requests"] == m and row["naive_extrapolated"] is True
        assert row["naive_seconds_measured"] == pytest.approx(sum(work[:m]))
        assert row["fast_seconds_at_naive_requests"] == pytest.approx(FAST[name] * m)
        assert row["naive_ratio_measured"] == pytest.approx(sum(work[:m]) / (FAST[name] * m))
        # ...the rest: the fast path's own time for it plus a + b·prompt_tokens per request
        want = sum(work[:m]) + FAST[name] * (n - m) + sum(work[m:])
        assert row["naive_seconds"] == pytest.approx(want)
        assert row["naive_ratio"] == pytest.approx(want / fast)
        assert row["naive_scaling_exponent"] == pytest.approx(
            math.log2(sum(work[:m]) / sum(work[: m // 2]))
        )
        naive_total += want
        alone.append((READ + fast) / floor["seconds"])
    assert doc["all"]["naive_seconds"] == pytest.approx(naive_total)
    assert doc["all"]["naive_ratio"] == pytest.approx(naive_total / all_seconds)
    # one strategy: reading the log plus its replay, over the floor (median and range)
    assert doc["fast_floor_per_strategy"] == pytest.approx(
        {"median": sum(alone) / 2, "min": min(alone), "max": max(alone)}
    )
    assert doc["peak_prompt_tokens"] == max(max(_prompts(session, x)) for x in names)
    assert doc["log_events"] == len(session.events) + 1  # the header is a line of the log
    assert doc["targets"]["naive_ratio"]["value"] == doc["all"]["naive_ratio"]
    assert doc["targets"]["fast_floor_ratio"]["value"] == doc["fast_floor_ratio"]


def test_the_naive_reference_runs_on_exactly_the_requests_asked(clock, tmp_path):
    doc = _bench.run_bench(12, "baseline", naive_requests=5, doubling=False, memory=False,
                           workdir=tmp_path, **CONFIG)
    work = [NAIVE_A + NAIVE_B * p for p in _prompts(synthetic_session(12, 0, **CONFIG),
                                                      "baseline")]
    row = doc["rows"][0]
    assert row["naive_requests"] == 5
    assert row["naive_seconds_measured"] == pytest.approx(sum(work[:5]))
    everything = _bench.run_bench(12, "baseline", naive_requests=None, doubling=False,
                                  memory=False, workdir=tmp_path, **CONFIG)["rows"][0]
    assert everything["naive_extrapolated"] is False
    assert everything["naive_seconds"] == everything["naive_seconds_measured"] == pytest.approx(
        sum(work)
    )


def test_doubling_and_memory_measure_what_the_docs_say(clock, tmp_path, monkeypatch):
    """Doubling: CPU time in fresh processes on a session twice as long (same seed and
    settings: its first N requests are the N-request session), alternating N, 2N, N, 2N, the
    fastest run of each kept. Memory: the peak of the CLI-like run over the log's size, and
    beside it the peak keeping every record."""
    n, gen = 20, dict(max_context_tokens=8_000, size_scale=0.5)
    calls = []
    cpu = {n: [3.0, 2.0], 2 * n: [5.0, 7.0]}
    wall = {n: [4.0, 6.0], 2 * n: [9.0, 8.0]}

    def probe(name, path, strategies, *args):
        session = read_log(path)
        size = len(session.requests())
        calls.append((name, size, *args))
        if name == "memory_probe":
            return {"peak_bytes": {"cli": 1000, "records": 3000}[args[0]]}
        # the 2N log: same seed and settings, so its first N requests are the N-request log
        want = synthetic_session(size, 0, **gen, **CONFIG)
        assert dumps_log(session.header, session.events) == dumps_log(want.header, want.events)
        k = sum(1 for c in calls if c[:2] == (name, size)) - 1
        return {"cpu_seconds": cpu[size][k], "wall_seconds": wall[size][k],
                "prompt_tokens": 100 * size + k}

    monkeypatch.setattr(_bench, "_probe_in_child", probe)
    doc = _bench.run_bench(n, "baseline", naive_requests=5, workdir=tmp_path, **gen, **CONFIG)
    assert [c[1] for c in calls if c[0] == "time_probe"] == [n, 2 * n, n, 2 * n]
    d = doc["doubling"]
    assert d["requests"] == 2 * n and d["runs"] == 2
    assert d["cpu_seconds"] == [2.0, 5.0] and d["ratio"] == 5.0 / 2.0
    assert d["wall_seconds"] == [4.0, 8.0] and d["wall_ratio"] == 8.0 / 4.0
    assert d["prompt_tokens"] == [100 * n, 200 * n] and d["prompt_tokens_ratio"] == 2.0
    in_process = (READ + ALL * n, READ + ALL * 2 * n)  # the bench's own `all` runs
    assert d["seconds"] == pytest.approx(in_process[1])
    assert d["in_process_ratio"] == pytest.approx(in_process[1] / in_process[0])
    assert [c[2] for c in calls if c[0] == "memory_probe"] == ["cli", "records"]
    assert all(c[1] == n for c in calls if c[0] == "memory_probe")
    mem, log_bytes = doc["memory"], Path(tmp_path, f"synthetic-{n}-0.jsonl").stat().st_size
    assert mem["log_bytes"] == doc["log_bytes"] == log_bytes
    assert (mem["peak_bytes"], mem["peak_bytes_records"]) == (1000, 3000)
    assert mem["ratio"] == 1000 / log_bytes and mem["ratio_records"] == 3000 / log_bytes
    assert doc["targets"]["doubling_ratio"]["value"] == 2.5
    assert doc["targets"]["memory_ratio"]["value"] == 1000 / log_bytes
    # the N-request log the bench wrote is the session with those settings
    log = read_log(tmp_path / f"synthetic-{n}-0.jsonl")
    want = synthetic_session(n, 0, **gen, **CONFIG)
    assert dumps_log(log.header, log.events) == dumps_log(want.header, want.events)
    assert dumps_log(*_parts(prefix_session(synthetic_session(2 * n, 0, **gen, **CONFIG), n))) \
        == dumps_log(*_parts(want))


def _parts(session):
    return session.header, session.events


@pytest.mark.parametrize(
    ("key", "at", "past"),
    [("naive_ratio", 100.0, 99.99), ("fast_floor_ratio", 3.0, 3.01),
     ("doubling_ratio", 2.2, 2.21), ("memory_ratio", 4.0, 4.01)],
)
def test_a_target_is_met_at_its_bound_and_missed_past_it(key, at, past):
    """Issue 8's targets: naive/fast ≥ 100, fast/floor ≤ 3, doubling ≤ 2.2, memory ≤ 4."""

    def result(value):
        values = {"naive_ratio": 200.0, "fast_floor_ratio": 1.0, "doubling_ratio": 2.0,
                  "memory_ratio": 1.0, key: value}
        return {"all": {"naive_ratio": values["naive_ratio"]},
                "fast_floor_ratio": values["fast_floor_ratio"],
                "doubling": {"ratio": values["doubling_ratio"]},
                "memory": {"ratio": values["memory_ratio"]}}

    assert _bench._targets(result(at))[key]["met"] is True
    assert _bench._targets(result(past))[key]["met"] is False
    none = {**result(at), "doubling": None, "memory": None}
    assert {k: v["met"] for k, v in _bench._targets(none).items()} == {
        "naive_ratio": True, "fast_floor_ratio": True,
        "doubling_ratio": None, "memory_ratio": None}


def test_the_floor_tokenizes_each_distinct_block_of_the_log_once(tmp_path):
    """docs/performance.md: the floor is reading the log once plus tokenizing each distinct
    content block once: system prompt, tool definitions, messages, tool-call renderings, tool
    outputs, summaries."""
    from replay.bench import write_synthetic_log
    from replay.log import AssistantMessage, Compaction, ToolResult, UserMessage
    from replay.tokens import family_for, get_encoding

    path = tmp_path / "s.jsonl"
    session = write_synthetic_log(path, 60, 2, max_context_tokens=8_000)
    texts = _bench._distinct_texts(session)
    assert len(texts) == len(set(texts))
    held = set(texts)
    events = session.events
    summaries = {e.summary for e in events if isinstance(e, Compaction)}
    users = {e.text for e in events if isinstance(e, UserMessage)}
    outputs = {e.output for e in events if isinstance(e, ToolResult)}
    said = {b.text for e in events if isinstance(e, AssistantMessage) for b in e.blocks
            if b.type == "text"}
    assert summaries and len(users) > 1 and outputs and said
    assert {session.header.system} | summaries | users | outputs | said <= held
    for tool in session.header.tools:  # each definition once, as its JSON
        assert sum(tool.description in t and t.startswith("{") for t in texts) == 1
    calls = [b for e in events if isinstance(e, AssistantMessage) for b in e.blocks
             if b.type == "tool_call"]
    rendered = {t for t in texts if t.startswith(tuple(f"{c.name}(" for c in calls))}
    assert len(rendered) == len({(c.name, str(sorted(c.arguments.items()))) for c in calls})
    want = 1 + len(session.header.tools) + len(summaries | users | outputs | said | rendered)
    assert len(texts) == want
    floor = _bench.measure_floor(path)
    encoding = get_encoding(family_for(session.header.model).encoding)
    assert floor["distinct_blocks"] == want
    assert floor["distinct_tokens"] == sum(len(encoding.encode_ordinary(t)) for t in texts)


def test_the_probes_start_after_the_fixed_tables_and_replay_as_documented(tmp_path, monkeypatch):
    """Both probes load the fixed tables (tokenizer, prices, cache rules) from the log's header
    before their baseline; the memory probe's `cli` mode runs as `replay LOG` does and
    `records` as `replay_session` does; the time probe reports the prompt tokens simulated
    over every strategy."""
    from replay.bench import write_synthetic_log

    path = tmp_path / "s.jsonl"
    session = write_synthetic_log(path, 12, 1, max_context_tokens=6_000)
    names = ["baseline", "compact-at-4000-structured"]
    records = replay_session(session, names, ReplayConfig(pricer=Pricer()))
    assert any(r.kind == "summarizer" for r in records)
    probe = _bench.time_probe(path, names)
    assert probe["prompt_tokens"] == sum(int(r.request.total) for r in records)
    assert probe["cpu_seconds"] > 0 and probe["wall_seconds"] > 0

    seen = []
    real_tables, real_status, real_read = (_bench._load_fixed_tables, _bench._proc_status,
                                           _bench.read_log)
    monkeypatch.setattr(_bench, "_load_fixed_tables",
                        lambda p: seen.append("tables") or real_tables(p))
    monkeypatch.setattr(_bench, "_proc_status",
                        lambda name: seen.append(name) or real_status(name))
    monkeypatch.setattr(_bench, "read_log", lambda p: seen.append("read") or real_read(p))
    real_cli, real_session = _bench._replay_like_the_cli, _bench.replay_session
    monkeypatch.setattr(_bench, "_replay_like_the_cli",
                        lambda *a: seen.append("cli") or real_cli(*a))
    monkeypatch.setattr(_bench, "replay_session",
                        lambda *a: seen.append("replay_session") or real_session(*a))
    for mode, runs in (("cli", "cli"), ("records", "replay_session")):
        seen.clear()
        got = _bench.memory_probe(path, names, mode)
        if seen[1:2] == ["VmRSS"]:  # Linux: the peak reset, the baseline read from /proc
            assert seen == ["tables", "VmRSS", "read", runs, "VmHWM"]
            # the growth over the baseline, not the process's whole resident set
            assert 0 <= got["peak_bytes"] < got["baseline_bytes"]
        else:
            assert seen[0] == "tables" and runs in seen
    with pytest.raises(ValueError, match="memory mode 'all'"):
        _bench.memory_probe(path, names, "all")


def test_proc_status_reads_kilobytes_as_bytes():
    """/proc/self/status gives VmRSS and VmHWM in kB (1024 bytes)."""
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("no /proc on this system")
    got = _bench._proc_status("VmHWM")
    line = next(x for x in status.read_text().splitlines() if x.startswith("VmHWM:"))
    assert line.split()[2] == "kB"
    peak = int(line.split()[1]) * 1024  # a peak: it can only have grown since `got`
    assert 0.99 * peak < got <= peak
    assert _bench._proc_status("NoSuchField") is None


@pytest.mark.parametrize(("platform", "unit"), [("darwin", 1), ("linux", 1024)])
def test_without_proc_the_peak_reads_ru_maxrss_in_the_platform_s_unit(
    tmp_path, monkeypatch, platform, unit
):
    """Where /proc gives no VmHWM (macOS), the probe falls back on `ru_maxrss`: kilobytes on
    Linux, bytes on macOS (it multiplied macOS's bytes by 1024 too)."""
    from replay.bench import write_synthetic_log

    path = tmp_path / "s.jsonl"
    write_synthetic_log(path, 3, 0)
    peaks = iter([1_000_000, 5_000_000])  # before the replay, after it
    monkeypatch.setattr(_bench, "_proc_status", lambda name: None)
    monkeypatch.setattr(_bench.resource, "getrusage",
                        lambda who: SimpleNamespace(ru_maxrss=next(peaks)))
    monkeypatch.setattr(_bench.sys, "platform", platform)
    got = _bench.memory_probe(path, ["baseline"], "cli")
    assert got == {"peak_bytes": 4_000_000 * unit, "baseline_bytes": 1_000_000 * unit}


def test_a_prefix_ends_with_what_answers_its_last_request():
    """A follow-up (or a compaction) before request N+1 belongs to request N+1: the first N
    requests of a longer session are the N-request session (seed 0 follows up before its
    219th request)."""
    longer = synthetic_session(230, 0)
    head = prefix_session(longer, 218)
    assert dumps_log(*_parts(head)) == dumps_log(*_parts(synthetic_session(218, 0)))
    assert len(head.requests()) == 218
    assert prefix_session(longer, 230) is longer


def test_the_time_probe_times_the_replay_only(clock, tmp_path, monkeypatch):
    """The fixed tables are loaded before the clock starts: their load is not the replay's."""
    from replay.bench import write_synthetic_log

    path = tmp_path / "s.jsonl"
    write_synthetic_log(path, 6, 0, **CONFIG)
    loaded = []
    monkeypatch.setattr(_bench, "_load_fixed_tables",
                        lambda p: loaded.append(p) or clock.advance(100.0))
    fake_cli = _bench._replay_like_the_cli

    def like_the_cli(session, strategies, workers=1):
        fake_cli(session, strategies, workers)
        return SimpleNamespace(summary={"prompt_tokens": np.array([5, 7])})

    monkeypatch.setattr(_bench, "_replay_like_the_cli", like_the_cli)
    probe = _bench.time_probe(path, ["baseline", "sliding-10"])
    want = READ + ALL * 6 * 2
    assert probe["wall_seconds"] == pytest.approx(want)
    assert probe["cpu_seconds"] == pytest.approx(want)
    assert probe["prompt_tokens"] == 12
    assert loaded == [path]


def test_both_timed_fast_runs_of_a_strategy_record_what_they_encode(clock, tmp_path,
                                                                    monkeypatch):
    """The full run records each full encode (for the floor of what was sent); the run on the
    naive reference's requests must pay the same, or `seconds - fast_at_m`, the rest's own
    time in the extrapolation, would hold the recording's cost alone."""
    from replay.tokens import TokenCounter

    plain = TokenCounter.raw_tokens
    recording = []
    real = _bench._time_fast

    def time_fast(session, strategies):
        recording.append((len(session.requests()), TokenCounter.raw_tokens is not plain))
        return real(session, strategies)

    monkeypatch.setattr(_bench, "_time_fast", time_fast)
    _bench.run_bench(12, "baseline", naive_requests=5, doubling=False, memory=False,
                     workdir=tmp_path, **CONFIG)
    assert recording == [(12, True), (5, True)]


def test_the_naive_fit_passes_through_the_measured_mean_with_coefficients_at_least_zero():
    """`t = a + b·prompt_tokens` with a, b >= 0: where least squares would want a negative
    intercept, or the prompts tell nothing, the fit still predicts the measured mean time at
    the measured mean prompt (the extrapolation starts from what was measured)."""
    exact = _bench._fit_naive([3.0, 5.0, 7.0], [10, 20, 30])
    assert exact == pytest.approx((1.0, 0.2))
    for seconds, prompts in (([0.5, 2.0, 3.5], [10, 20, 30]),  # least squares: a = -1
                             ([1.0, 3.0], [10, 20]),  # too few requests to fit a line
                             ([1.0, 2.0, 3.0], [0, 0, 0])):  # no prompt tokens
        a, b = _bench._fit_naive(seconds, prompts)
        assert a >= 0 and b >= 0
        mean_prompt = sum(prompts) / len(prompts)
        assert a + b * mean_prompt == pytest.approx(sum(seconds) / len(seconds))


def test_a_request_s_prompt_tokens_include_its_summarizer_calls():
    def record(strategy, index, total):
        return SimpleNamespace(strategy=strategy, request_index=index,
                               request=SimpleNamespace(total=total))

    records = [record("a", 0, 100), record("a", 1, 40), record("a", 1, 150), record("a", 2, 90)]
    assert _bench._prompts_per_request(records, "a", 2) == [100, 190]


def test_fast_runs_start_from_a_cold_token_memo_outside_their_time(clock, tmp_path, monkeypatch):
    """docs/performance.md: every fast run (each strategy alone, `all` from the log file) pays
    its own tokenization: the memo is emptied first, and emptying it is not timed."""
    from replay.bench import write_synthetic_log

    path = tmp_path / "s.jsonl"
    session = write_synthetic_log(path, 6, 0, **CONFIG)
    resets = []
    monkeypatch.setattr(_bench, "reset_token_memo",
                        lambda: resets.append(clock.now) or clock.advance(100.0))
    start = clock.now
    assert _bench._time_all_from_file(path, ["baseline"]) == pytest.approx(READ + ALL * 6)
    assert resets == [start]
    seconds, records = _bench._time_fast(session, ["baseline"])
    assert seconds == pytest.approx(FAST["baseline"] * 6) and len(records) == 6
    assert resets[1:] == [start + 100.0 + READ + ALL * 6]


def test_the_cli_like_run_drops_each_record_once_counted(monkeypatch):
    """`all` and the memory probe's `cli` mode run as `replay LOG` does: `replay(...,
    keep_records=False, per_turn=False)`, on the workers asked."""
    import replay._api

    calls = []

    def fake_replay(session, strategies, **kwargs):
        calls.append((session, strategies, kwargs))
        return SimpleNamespace(summary=None)

    monkeypatch.setattr(replay._api, "replay", fake_replay)
    _bench._replay_like_the_cli("SESSION", ("baseline", "sliding-10"), 3)
    assert calls == [("SESSION", ["baseline", "sliding-10"],
                      {"keep_records": False, "per_turn": False, "workers": 3})]


def test_all_on_workers_runs_on_the_workers_asked(clock, tmp_path):
    doc = _bench.run_bench(12, "baseline,sliding-10", naive_requests=None, doubling=False,
                           memory=False, workdir=tmp_path, workers=2, **CONFIG)
    assert doc["all"]["seconds"] == pytest.approx(READ + ALL * 12 * 2)
    assert doc["all"]["workers"] == {"workers": 2, "seconds": pytest.approx(READ + ALL * 12)}
