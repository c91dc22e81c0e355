"""`replay bench`'s options reach the benchmark and the written log as `--help` says."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import replay.bench
from replay.bench import synthetic_session
from replay.cli._main import cli, load_commands
from replay.log import dumps_log

load_commands()


def test_every_option_of_the_benchmark_reaches_it(monkeypatch):
    seen = {}

    def run_bench(requests, strategies, **kwargs):
        seen.update(requests=requests, strategies=strategies, **kwargs)
        return {"ran": True}

    monkeypatch.setattr(replay.bench, "run_bench", run_bench)
    result = CliRunner().invoke(cli, [
        "bench", "-n", "33", "-s", "baseline", "--seed", "4", "--naive-requests", "7",
        "--no-doubling", "--no-memory", "--max-context", "9000", "--size-scale", "0.5",
        "--workers", "2", "--provider", "openai", "--model", "gpt-4o", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"ran": True}
    seen.pop("progress")
    assert seen == dict(requests=33, strategies="baseline", seed=4, naive_requests=7,
                        doubling=False, memory=False, max_context_tokens=9000, size_scale=0.5,
                        provider="openai", model="gpt-4o", workers=2)
    seen.clear()
    assert CliRunner().invoke(cli, ["bench", "--format", "json"]).exit_code == 0
    seen.pop("progress")
    assert seen == dict(requests=1000, strategies="all", seed=0, naive_requests=200,
                        doubling=True, memory=True, max_context_tokens=None, size_scale=1.0,
                        provider="anthropic", model="claude-sonnet-4-5", workers=None)


def test_the_written_log_has_the_session_s_settings(tmp_path):
    path = tmp_path / "s.jsonl"
    args = ["bench", "-n", "40", "--seed", "2", "--max-context", "8000", "--size-scale", "0.5",
            "--write-log", str(path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    want = synthetic_session(40, 2, max_context_tokens=8000, size_scale=0.5)
    assert any(e.type == "compaction" for e in want.events)
    assert path.read_text() == dumps_log(want.header, want.events)


@pytest.mark.parametrize(
    ("option", "named"),
    [(["--naive-requests", "5"], "--naive-requests"), (["--no-doubling"], "--doubling"),
     (["--no-memory"], "--memory")],
)
def test_write_log_refuses_the_measures_options(tmp_path, option, named):
    """`--write-log` writes the log and stops: a measure's option would do nothing."""
    path = tmp_path / "s.jsonl"
    result = CliRunner().invoke(cli, ["bench", "-n", "5", "--write-log", str(path), *option])
    assert result.exit_code == 2
    assert "--write-log only writes the synthetic log: " in result.stderr
    assert named in result.stderr
    assert not path.exists()


def test_a_session_needs_at_least_one_request():
    result = CliRunner().invoke(cli, ["bench", "-n", "0", "--write-log", "x.jsonl"])
    assert result.exit_code == 2 and "-n" in result.stderr


def test_the_table_goes_to_the_output_file(tmp_path):
    out = tmp_path / "bench.txt"
    result = CliRunner().invoke(cli, ["bench", "-n", "12", "-s", "baseline", "--naive-requests",
                                      "0", "--no-doubling", "--no-memory", "-q", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "naive / fast (all)" in out.read_text()
