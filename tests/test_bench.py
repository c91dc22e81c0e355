"""`replay bench`, the synthetic session generator and the naive reference (small sizes, no
timing assertions: only the shape of the output and the equalities that must hold)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from replay.bench import (
    naive_replay,
    prefix_session,
    repeated_output_bytes,
    run_bench,
    synthetic_session,
    write_synthetic_log,
)
from replay.cli._main import cli, load_commands
from replay.engine import ReplayConfig, replay_session
from replay.log import (
    AssistantMessage,
    Compaction,
    RequestMarker,
    ToolCallBlock,
    ToolResult,
    UserMessage,
    dumps_log,
    read_log,
)
from replay.prices import Pricer

load_commands()

ROW_KEYS = {
    "strategy",
    "requests",
    "fast_seconds",
    "requests_per_second",
    "naive_seconds",
    "naive_extrapolated",
    "naive_ratio",
    "naive_requests",
    "naive_seconds_measured",
    "fast_seconds_at_naive_requests",
    "naive_ratio_measured",
    "naive_scaling_exponent",
}
TOP_KEYS = {
    "requests",
    "seed",
    "size_scale",
    "max_context_tokens",
    "provider",
    "model",
    "strategies",
    "log_bytes",
    "log_events",
    "peak_prompt_tokens",
    "rows",
    "all",
    "floor",
    "fast_floor_ratio",
    "fast_floor_per_strategy",
    "sent_floor",
    "fast_sent_floor_ratio",
    "doubling",
    "memory",
    "targets",
    "naive_method",
    "naive_extrapolated",
    "machine",
}


def _check_document(doc: dict, strategies: list[str], requests: int) -> None:
    assert set(doc) >= TOP_KEYS
    assert doc["strategies"] == strategies
    assert [r["strategy"] for r in doc["rows"]] == strategies
    for row in doc["rows"]:
        assert set(row) >= ROW_KEYS
        assert row["requests"] == requests
        for key in (
            "fast_seconds",
            "requests_per_second",
            "naive_seconds",
            "naive_ratio",
            "naive_ratio_measured",
        ):
            assert row[key] > 0, key
    assert doc["all"]["seconds"] > 0 and doc["all"]["naive_ratio"] > 0
    assert {
        "seconds",
        "read_seconds",
        "tokenize_seconds",
        "distinct_blocks",
        "distinct_tokens",
    } <= set(doc["floor"])
    assert doc["floor"]["seconds"] > 0 and doc["fast_floor_ratio"] > 0
    assert 0 <= doc["log_repeated_output_bytes"] < doc["log_bytes"]
    sent = doc["sent_floor"]
    assert sent["read_seconds"] == doc["floor"]["read_seconds"]
    assert sent["distinct_blocks"] > 0 and sent["distinct_tokens"] > 0
    assert doc["fast_sent_floor_ratio"] == doc["all"]["seconds"] / sent["seconds"]
    per = doc["fast_floor_per_strategy"]
    assert 0 < per["min"] <= per["median"] <= per["max"]
    doubling = doc["doubling"]
    assert doubling["requests"] == 2 * requests and doubling["ratio"] > 0
    # the target reads the fresh-process CPU ratio; wall-clock and in-process ones stand beside
    assert doubling["ratio"] == doubling["cpu_seconds"][1] / doubling["cpu_seconds"][0]
    assert doubling["wall_ratio"] > 0 and doubling["in_process_ratio"] > 0
    assert doubling["runs"] >= 1
    # the simulated work beside it: a longer session holds more prompt tokens
    tokens = doubling["prompt_tokens"]
    assert 0 < tokens[0] < tokens[1]
    assert doubling["prompt_tokens_ratio"] == tokens[1] / tokens[0]
    assert doc["memory"]["ratio"] >= 0 and doc["memory"]["log_bytes"] == doc["log_bytes"]
    assert set(doc["targets"]) == {
        "naive_ratio",
        "fast_floor_ratio",
        "doubling_ratio",
        "memory_ratio",
    }
    assert doc["peak_prompt_tokens"] > 0


def test_bench_cli_json_smoke(tmp_path):
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(
        cli,
        [
            "bench",
            "-n",
            "60",
            "-s",
            "baseline,sliding-10",
            "--naive-requests",
            "30",
            "--format",
            "json",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    _check_document(doc, ["baseline", "sliding-10"], 60)
    assert doc["naive_extrapolated"] is True
    assert all(r["naive_requests"] == 30 for r in doc["rows"])


def test_bench_cli_table_says_when_naive_is_extrapolated():
    result = CliRunner().invoke(
        cli,
        [
            "bench",
            "-n",
            "40",
            "-s",
            "truncate-500",
            "--naive-requests",
            "20",
            "--no-doubling",
            "--no-memory",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "extrapolated" in result.output
    assert "fast / floor" in result.output and "naive / fast" in result.output


def test_bench_cli_naive_requests_zero_runs_the_naive_reference_on_all():
    """`--naive-requests 0` means all (its help says so), not a run of one request
    extrapolated."""
    result = CliRunner().invoke(cli, ["bench", "-n", "12", "-s", "baseline", "--naive-requests",
                                      "0", "--no-doubling", "--no-memory", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["naive_extrapolated"] is False
    assert [r["naive_requests"] for r in doc["rows"]] == [12]
    assert result.stderr == ""  # no `bench:` phase lines beside JSON


def test_repeated_output_bytes_counts_each_repeat_of_an_earlier_output():
    session = synthetic_session(40, 0)
    outputs = [e.output for e in session.events if isinstance(e, ToolResult)]
    want = sum(len(o.encode()) for i, o in enumerate(outputs) if o in outputs[:i])
    assert repeated_output_bytes(session) == want
    # a log whose every output is new repeats nothing; one output sent again counts once more
    first = next(e for e in session.events if isinstance(e, ToolResult))
    distinct = [
        e.model_copy(update={"output": f"{e.output}\n#{n}"}) if isinstance(e, ToolResult) else e
        for n, e in enumerate(session.events)
    ]
    again = first.model_copy(update={"output": f"{first.output}\n#{session.events.index(first)}"})
    assert repeated_output_bytes(type(session)(session.header, distinct, None)) == 0
    assert repeated_output_bytes(type(session)(session.header, [*distinct, again], None)) == len(
        again.output.encode()
    )


def test_bench_help_has_an_example():
    result = CliRunner().invoke(cli, ["bench", "--help"])
    assert result.exit_code == 0
    assert "Example:" in result.output and "replay bench --requests 1000" in result.output


def test_run_bench_api_full_naive(tmp_path):
    doc = run_bench(
        60, "baseline,compact-at-12000-structured", naive_requests=None, workdir=tmp_path
    )
    _check_document(doc, ["baseline", "compact-at-12000-structured"], 60)
    assert doc["naive_extrapolated"] is False
    for row in doc["rows"]:
        assert row["naive_seconds"] == row["naive_seconds_measured"]
    # the compacting strategy sends summaries no log block holds
    assert doc["sent_floor"]["distinct_tokens"] > doc["floor"]["distinct_tokens"]


def test_the_floor_of_what_was_sent_records_every_text_tokenized_in_full():
    from replay.bench._bench import _recording_full_encodes, reset_token_memo
    from replay.tokens._counter import TokenCounter

    session = synthetic_session(40, seed=3)
    sent: dict[str, None] = {}
    original = TokenCounter.raw_tokens
    reset_token_memo()
    with _recording_full_encodes(sent):
        replay_session(session, ["baseline"], ReplayConfig(pricer=Pricer()))
    assert TokenCounter.raw_tokens is original  # put back
    last = max(n for n, e in enumerate(session.events) if isinstance(e, RequestMarker))
    sent_events = session.events[:last]  # what comes after the last request is never sent
    outputs = {e.output for e in sent_events if isinstance(e, ToolResult)}
    users = {e.text for e in sent_events if isinstance(e, UserMessage)}
    assert outputs and users
    assert outputs | users | {session.header.system} <= set(sent)
    before = len(sent)
    reset_token_memo()
    replay_session(session, ["baseline"], ReplayConfig(pricer=Pricer()))
    assert len(sent) == before  # nothing recorded outside


def test_write_log_only(tmp_path):
    path = tmp_path / "s.jsonl"
    result = CliRunner().invoke(cli, ["bench", "-n", "25", "--seed", "3", "--write-log", str(path)])
    assert result.exit_code == 0, result.output
    session = read_log(path, strict=True)
    assert len(session.requests()) == 25
    assert dumps_log(session.header, session.events) == path.read_text()
    assert path.read_text() == dumps_log(*_parts(synthetic_session(25, 3)))
    assert result.stderr == f"wrote {path}: 25 requests\n"  # (no warning: it replays)
    quiet = CliRunner().invoke(cli, ["bench", "-n", "5", "--write-log", str(path), "-q"])
    assert (quiet.exit_code, quiet.stderr) == (0, "")


@pytest.mark.parametrize(
    ("option", "why"),
    [(["--provider", "nosuch"], "no cache rules for provider 'nosuch'"),
     (["--model", "nosuch-model"], "no price for model 'nosuch-model'")],
)
def test_a_written_log_that_will_not_replay_as_it_is_says_so(tmp_path, option, why):
    path = tmp_path / "s.jsonl"
    result = CliRunner().invoke(cli, ["bench", "-n", "5", "--write-log", str(path), *option])
    assert result.exit_code == 0, result.output
    assert path.exists()  # (it replays with --cache-rules or --price)
    assert f"warning: {path}: replaying it as it is fails: {why}" in result.stderr


@pytest.mark.parametrize(
    ("option", "named"),
    [(["-s", "bogus"], "--strategies/-s"), (["-o", "OUT"], "-o/--output"),
     (["--workers", "2"], "--workers"), (["--format", "json"], "--format")],
)
def test_write_log_refuses_the_benchmark_s_options(tmp_path, option, named):
    """`--write-log` writes the log and stops: `-s bogus` passed unchecked, `-o` was dropped."""
    path = tmp_path / "s.jsonl"
    option = [str(tmp_path / "out") if o == "OUT" else o for o in option]
    result = CliRunner().invoke(cli, ["bench", "-n", "5", "--write-log", str(path), *option])
    assert result.exit_code == 2
    assert f"--write-log only writes the synthetic log: {named}" in result.stderr
    assert not path.exists()


def _parts(session):
    return session.header, session.events


def test_generator_is_deterministic_and_prefix_stable():
    a, b = synthetic_session(50, 7), synthetic_session(50, 7)
    assert dumps_log(*_parts(a)) == dumps_log(*_parts(b))
    assert dumps_log(*_parts(a)) != dumps_log(*_parts(synthetic_session(50, 8)))
    longer = synthetic_session(80, 7)
    assert dumps_log(*_parts(prefix_session(longer, 50))) == dumps_log(*_parts(a))


def test_generator_shape():
    session = synthetic_session(300, 1)
    events = session.events
    header = session.header
    assert header.system and {t.name for t in header.tools} == {
        "read_file",
        "grep",
        "list_files",
        "write_file",
        "run_tests",
    }
    assert isinstance(events[0], UserMessage)
    assert len(session.requests()) == 300
    results = [e for e in events if isinstance(e, ToolResult)]
    calls = [
        b
        for e in events
        if isinstance(e, AssistantMessage)
        for b in e.blocks
        if isinstance(b, ToolCallBlock)
    ]
    assert {r.call_id for r in results} == {c.id for c in calls}
    per_message = [
        sum(isinstance(b, ToolCallBlock) for b in e.blocks)
        for e in events
        if isinstance(e, AssistantMessage)
    ]
    assert set(per_message) <= {1, 2, 3} and max(per_message) > 1
    reads = [r.output for r in results if r.tool_name == "read_file"]
    assert len(reads) != len(set(reads))  # files are read again
    sizes = sorted(len(r) for r in reads)
    assert 1000 < sizes[len(sizes) // 2] < 4000 and sizes[-1] > 10_000
    stamps = [e.ts for e in events]
    assert stamps == sorted(stamps)
    markers = [e for e in events if isinstance(e, RequestMarker)]
    gaps = [(b.ts - a.ts).total_seconds() for a, b in zip(markers, markers[1:], strict=False)]
    assert max(gaps) > 300  # idle gaps past the 5-minute TTL
    assert sum(isinstance(e, UserMessage) for e in events) > 1  # follow-ups
    ids = [e.id for e in events]
    assert len(set(ids)) == len(ids)


def test_generator_reads_again_mostly_in_ranges_like_real_agents():
    session = synthetic_session(400, 5)
    calls = {
        b.id: b
        for e in session.events
        if isinstance(e, AssistantMessage)
        for b in e.blocks
        if isinstance(b, ToolCallBlock)
    }
    full: dict[str, str] = {}  # the last whole content each path showed or was written with
    ranged = 0
    for e in session.events:
        if isinstance(e, AssistantMessage):
            for b in e.blocks:
                if isinstance(b, ToolCallBlock) and b.name == "write_file":
                    full[b.arguments["path"]] = b.arguments["content"]
        if not (isinstance(e, ToolResult) and e.tool_name == "read_file"):
            continue
        args = calls[e.call_id].arguments
        if "offset" not in args:
            full[args["path"]] = e.output
            continue
        ranged += 1
        # a range of lines of the version last seen whole, never that whole version again
        lines = full[args["path"]].splitlines(keepends=True)
        start = args["offset"] - 1
        assert e.output == "".join(lines[start : start + args["limit"]]) != full[args["path"]]
    assert ranged > 50
    # real logs repeat 0.1-14% of their output characters word for word (docs/performance.md)
    outputs = sum(len(e.output.encode()) for e in session.events if isinstance(e, ToolResult))
    assert 0 < repeated_output_bytes(session) < 0.15 * outputs


def test_generator_compacts_past_the_limit():
    session = synthetic_session(120, 2, max_context_tokens=30_000)
    compactions = [e for e in session.events if isinstance(e, Compaction)]
    assert compactions
    ids = {e.id for e in session.events}
    assert all(set(c.replaces) <= ids and c.replaces for c in compactions)


def test_generator_needs_at_least_one_request():
    with pytest.raises(ValueError, match="at least 1"):
        synthetic_session(0)


@pytest.fixture(scope="module")
def long_run():
    """Long enough for the rare events of the documented mix (a 2-3% chance per call) to show."""
    return synthetic_session(3000, 0)


def _calls(session):
    return {
        b.id: b
        for e in session.events
        if isinstance(e, AssistantMessage)
        for b in e.blocks
        if isinstance(b, ToolCallBlock)
    }


def test_generator_parallel_calls_are_lookups(long_run):
    """1-3 calls per message, parallel lookups ~40% of the time; writes and test runs go alone."""
    per_message = [
        [b.name for b in e.blocks if isinstance(b, ToolCallBlock)]
        for e in long_run.events
        if isinstance(e, AssistantMessage)
    ]
    assert {len(names) for names in per_message} == {1, 2, 3}
    parallel = [names for names in per_message if len(names) > 1]
    assert 0.3 < len(parallel) / len(per_message) < 0.5
    assert {n for names in parallel for n in names} == {"read_file", "grep", "list_files"}


def test_generator_markers_time_the_model_call_and_name_the_response(long_run):
    """A request's `duration_ms` is the time its response took; the response carries its id."""
    marker = None
    for e in long_run.events:
        if isinstance(e, RequestMarker):
            marker = e
        elif isinstance(e, AssistantMessage):
            assert e.request_id == marker.request_id
            took = (e.ts - marker.ts).total_seconds() * 1000
            assert marker.duration_ms <= took < marker.duration_ms + 1
            assert 1000 <= marker.duration_ms <= 120_000


def test_generator_tool_output_sizes_follow_the_documented_mix(long_run):
    """docs/performance.md: grep median ~0.5k with hundreds of matches (up to ~40k) now and
    then, a pytest report of median ~1.3k with verbose failure dumps of 20-40k, a ~0.5k
    listing, and re-reads as ranges of 20-150 lines."""
    calls = _calls(long_run)
    results = [e for e in long_run.events if isinstance(e, ToolResult)]

    def sizes(tool):
        return sorted(len(r.output) for r in results if r.tool_name == tool)

    grep, tests, listing = sizes("grep"), sizes("run_tests"), sizes("list_files")
    assert 300 < grep[len(grep) // 2] < 800 and 10_000 < grep[-1] < 50_000
    assert 800 < tests[len(tests) // 2] < 2000 and 20_000 < tests[-1] < 45_000
    assert 300 < listing[len(listing) // 2] < 800
    limits = [
        calls[r.call_id].arguments.get("limit") for r in results if r.tool_name == "read_file"
    ]
    ranged = [n for n in limits if n is not None]
    assert ranged and all(20 <= n <= 150 for n in ranged)


def test_generator_size_scale_scales_the_files():
    """`size_scale` multiplies every tool-output size: a tenth of the ~2.3k median read."""
    session = synthetic_session(200, 0, size_scale=0.1)
    reads = sorted(
        len(e.output)
        for e in session.events
        if isinstance(e, ToolResult) and e.tool_name == "read_file"
    )
    assert reads[len(reads) // 2] < 500 and reads[-1] <= 5_000


def test_generator_test_runs_end_with_a_pytest_summary(long_run):
    """Each `run_tests` output is a pytest report: its summary counts what it collected."""
    import re

    runs = [e.output for e in long_run.events if isinstance(e, ToolResult)
            and e.tool_name == "run_tests"]
    failing = 0
    for out in runs:
        lines = out.splitlines()
        collected = int(re.fullmatch(r"collected (\d+) items", lines[4]).group(1))
        m = re.fullmatch(r"=+ (?:(\d+) failed, )?(\d+) passed in \d+\.\d\ds =+", lines[-1])
        assert m, lines[-1]
        failed = int(m.group(1) or 0)
        assert failed + int(m.group(2)) == collected
        assert sum(x.startswith("FAILED ") for x in lines) == failed
        failing += failed > 0
    assert 0 < failing < len(runs)


def test_generator_user_follows_up_now_and_then(long_run):
    """docs/performance.md: user follow-ups on ~1.7% of requests (51 of 3,000)."""
    follow_ups = [e for e in long_run.events[1:] if isinstance(e, UserMessage)]
    assert 35 <= len(follow_ups) <= 70


def test_generator_reads_a_file_it_just_wrote_mostly_as_a_range(long_run):
    """A file unchanged since the agent last *wrote* it is read again as a range 9 times in 10,
    like one it last read."""
    calls = _calls(long_run)
    last: dict[str, str] = {}
    after_write = ranged = 0
    for e in long_run.events:
        if isinstance(e, AssistantMessage):
            for b in e.blocks:
                if isinstance(b, ToolCallBlock) and b.name == "write_file":
                    last[b.arguments["path"]] = "write"
        elif isinstance(e, ToolResult) and e.tool_name == "read_file":
            args = calls[e.call_id].arguments
            if last.get(args["path"]) == "write":
                after_write += 1
                ranged += "offset" in args
            last[args["path"]] = "read"
    assert after_write > 20 and ranged > 0.8 * after_write


def test_generator_compaction_replaces_everything_before_it_and_restarts_the_estimate():
    """The module docstring: when the agent's own context, estimated at 3.5 characters per token
    plus message framing, would pass the limit, an automatic compaction replaces everything
    before it and the estimate restarts from the summary."""
    limit = 20_000
    session = synthetic_session(200, 2, max_context_tokens=limit)
    header = session.header
    fixed = len(header.system) + sum(len(t.model_dump_json()) for t in header.tools)
    framing = 50  # tokens per message or tool definition, generous

    def lowest(e):
        if isinstance(e, UserMessage):
            return len(e.text)
        if isinstance(e, ToolResult):
            return len(e.output)
        return sum(len(b.model_dump_json()) for b in e.blocks)

    def highest(events):
        return sum(len(e.model_dump_json()) for e in events) / 3.5 + framing * len(events)

    summary, segment, compactions = "", [], 0
    for e in session.events:
        if not isinstance(e, Compaction):
            segment.append(e)
            continue
        compactions += 1
        held = [x for x in segment if not isinstance(x, RequestMarker)]
        assert e.replaces == [x.id for x in held] and e.trigger == "auto"
        low = (fixed + len(summary) + sum(lowest(x) for x in held)) / 3.5
        high = (fixed + len(summary)) / 3.5 + framing * (len(header.tools) + 1) + highest(held)
        assert limit < e.tokens_before and low <= e.tokens_before <= high
        # the check before the last request still found the context within the limit
        last = max(n for n, x in enumerate(segment) if isinstance(x, RequestMarker))
        assert e.tokens_before - highest(segment[last + 1 :]) <= limit
        summary, segment = e.summary, []
    assert compactions >= 3


@pytest.fixture
def exact_claude(tmp_path):
    """Claude counted at factor 1.0: the naive reference materializes tiktoken ids, so it holds
    for unscaled counts only (`materialize_tokens`)."""
    from replay.tokens import tokenizer_rows, use_tokenizers

    rows = [{**row, "factor": 1.0} for row in tokenizer_rows() if row["family"] == "claude"]
    path = tmp_path / "tokenizers.json"
    path.write_text(json.dumps({"families": rows}), encoding="utf-8")
    use_tokenizers(path)
    yield
    use_tokenizers(None)


@pytest.mark.parametrize(
    ("provider", "model"), [("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-4o")]
)
def test_naive_reference_equals_fast_path(provider, model, exact_claude):
    session = synthetic_session(45, 4, max_context_tokens=15_000)
    config = dict(provider=provider, model=model)
    # Every strategy of the library for one model; the core families for the other.
    names = (
        "all"
        if provider == "anthropic"
        else (
            "baseline,truncate-500,age-truncate-500-keep-3,compact-at-12000-structured,sliding-10"
        )
    )
    fast = replay_session(session, names, ReplayConfig(pricer=Pricer(), **config))
    naive = naive_replay(session, names, ReplayConfig(pricer=Pricer(), **config))
    got = [
        (r.strategy, r.kind, r.request_index, r.prompt_tokens, r.first_mismatch_token)
        for r in naive
    ]
    want = [
        (r.strategy, r.kind, r.request_index, r.request.total, r.diff.first_mismatch_token)
        for r in fast
    ]
    assert got == want
    assert any(r.kind == "summarizer" for r in fast)  # summarizer calls compared too
    assert any(r.diff.is_break for r in fast)  # and prompts that rewrote their prefix


def test_written_log_replays_like_the_session(tmp_path):
    path = tmp_path / "s.jsonl"
    session = write_synthetic_log(path, 30, 0)
    assert session.path == str(path)
    a = replay_session(session, "baseline,sliding-10", ReplayConfig(pricer=Pricer()))
    b = replay_session(read_log(path), "baseline,sliding-10", ReplayConfig(pricer=Pricer()))
    assert [(r.request.total, r.cost_usd) for r in a] == [(r.request.total, r.cost_usd) for r in b]


def test_released_blocks_keep_the_numbers():
    session = synthetic_session(40, 6, max_context_tokens=15_000)
    names = "baseline,age-truncate-500-keep-3,compact-at-12000-structured"
    kept = replay_session(session, names, ReplayConfig(pricer=Pricer()))
    light = replay_session(session, names, ReplayConfig(pricer=Pricer(), keep_blocks=False))
    assert [(r.request.total, r.diff, r.outcome, r.cost_usd) for r in kept] == [
        (r.request.total, r.diff, r.outcome, r.cost_usd) for r in light
    ]
    assert sum(r.request.released for r in light) >= len(light) - 3  # the last of each lane stays
    assert not any(r.request.released for r in kept)


def test_incremental_render_equals_a_fresh_render():
    """The renderer reuses the previous view's block arrays: same arrays as a cold render."""
    from replay.render import Renderer
    from replay.tokens import counter_for

    session = synthetic_session(40, 8, max_context_tokens=15_000)
    records = replay_session(
        session,
        "age-truncate-500-keep-3,sliding-10-pin-first,compact-at-12000-freeform",
        ReplayConfig(pricer=Pricer(), keep_views=True),
    )
    header = session.header
    assert any(r.diff.is_break for r in records) and any(not r.diff.is_break for r in records)
    for r in records:
        got = r.request
        want = Renderer(counter_for(r.model)).render(
            r.view,
            system=header.system,
            tools=header.tools,
            index=r.request_index,
            request_id=r.request_id,
            thread=r.thread,
            ts=r.ts,
            model=r.model,
            provider=r.provider,
        )
        assert got.kinds == want.kinds
        for name in ("block_tokens", "cum_tokens", "item_index", "positions"):
            assert np.array_equal(getattr(got, name), getattr(want, name)), name


def test_bench_times_all_on_workers_when_asked():
    args = ["bench", "-n", "40", "-s", "baseline,sliding-10", "--naive-requests", "20",
            "--no-doubling", "--no-memory"]
    result = CliRunner().invoke(cli, [*args, "--workers", "2", "--format", "json"])
    assert result.exit_code == 0, result.output
    parallel = json.loads(result.stdout)["all"]["workers"]
    assert parallel["workers"] == 2 and parallel["seconds"] > 0
    table = CliRunner().invoke(cli, [*args, "--workers", "2"])
    assert table.exit_code == 0, table.output
    assert "all, 2 workers" in table.output
    assert json.loads(CliRunner().invoke(cli, [*args, "--format", "json"]).stdout)["all"][
        "workers"] is None
