"""Shared fixtures: paths, the CLI (in process and as the installed console script), and a
deterministic log written to a temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gen
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings

from replay.log import write_log

ROOT = Path(__file__).resolve().parents[1]
RUN42 = ROOT / "logs" / "run42.jsonl"

# The contract of the result tables (README): the summary's first columns in this order, and
# columns every per-request row holds. Written out here, not read from replay, so that a
# change to the contract fails the tests of the frames, the CLI's JSON and its files.
SUMMARY_CONTRACT = [
    "strategy",
    "requests",
    "prompt_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "uncached_tokens",
    "output_tokens",
    "cost_usd",
    "peak_prompt_tokens",
    "hit_ratio",
    "prefix_breaks",
    "over_window",
]
TURN_CONTRACT = [
    "strategy",
    "request_index",
    "prompt_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "uncached_tokens",
    "first_mismatch_token",
    "first_mismatch_message",
    "cost_usd",
]
# The seven core strategies at their default parameters.
CORE = [
    "baseline",
    "truncate-500",
    "age-truncate-500-keep-3",
    "compact-at-12000-structured",
    "compact-at-12000-freeform",
    "sliding-10",
    "sliding-10-pin-first",
]

settings.register_profile(
    "replay",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.load_profile("replay")


def replay_executable() -> Path | None:
    """The `replay` console script installed next to this interpreter, if any."""
    bindir = Path(sys.executable).parent
    for name in ("replay", "replay.exe"):
        candidate = bindir / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="session")
def replay_exe() -> Path:
    exe = replay_executable()
    if exe is None:
        pytest.skip(f"no `replay` console script next to {sys.executable} (package not installed)")
    return exe


@pytest.fixture(scope="session")
def run_replay(replay_exe):
    """Run the installed `replay` in a subprocess: (returncode, stdout, stderr)."""

    def run(*args: str, cwd: Path | None = None, env: dict | None = None):
        done = subprocess.run(
            [str(replay_exe), *map(str, args)],
            cwd=cwd or ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "NO_COLOR": "1", **(env or {})},
        )
        return done.returncode, done.stdout, done.stderr

    return run


@pytest.fixture(scope="session")
def invoke():
    """Run the click CLI in process: returns click's Result (stdout and stderr kept apart)."""
    from replay.cli import cli
    from replay.cli._main import load_commands

    load_commands()
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(
            cli, [str(a) for a in args], prog_name="replay", catch_exceptions=False
        )

    return run


@pytest.fixture
def det_log(tmp_path: Path, monkeypatch) -> Path:
    """The deterministic log at `tmp_path/det.jsonl`, with the working directory set to tmp_path
    (so outputs that echo the log's path are the same on every machine)."""
    path = tmp_path / "det.jsonl"
    write_log(gen.deterministic_session(), path)
    monkeypatch.chdir(tmp_path)
    return Path("det.jsonl")


@pytest.fixture
def clean_registry():
    """The strategy registry and the plug-in files as they were before the test (plug-in tests
    register strategies of their own)."""
    from replay.strategies import _base, _plugins

    _base.registered()  # the built-ins, loaded lazily, are part of what is restored
    before, files = dict(_base._REGISTRY), dict(_plugins._files)
    yield
    _base._REGISTRY.clear()
    _base._REGISTRY.update(before)
    _plugins._files.clear()
    _plugins._files.update(files)
