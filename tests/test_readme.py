"""The README's main command works: run its `replay ...` part with the installed console script."""

from __future__ import annotations

import re
import shlex
import subprocess

from conftest import ROOT

from replay.strategies import canonical_names


def _first_fenced_command() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^```[a-z]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    assert match, "README.md has no fenced command"
    return match.group(1).strip()


def _replay_part(command: str) -> list[str]:
    """The `replay ...` step of a `a && b && .venv/bin/replay ...` line, as argv."""
    steps = [s.strip() for s in command.split("&&")]
    runs = [s for s in steps if re.match(r"^(\S*/)?replay(\s|$)", s)]
    assert len(runs) == 1, f"expected one `replay` step in {command!r}"
    return shlex.split(runs[0])[1:]


def test_readme_main_command_is_install_then_replay_all():
    command = _first_fenced_command()
    assert "pip install" in command.split("&&")[0] + command.split("&&")[1]
    assert _replay_part(command) == ["logs/run42.jsonl", "--strategies", "all"]


def test_readme_main_command_prints_every_canonical_strategy(replay_exe):
    args = _replay_part(_first_fenced_command())
    done = subprocess.run(
        [str(replay_exe), *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    rows = {
        cells[1].strip()
        for line in done.stdout.splitlines()
        if (cells := line.split("│")) and len(cells) > 2
    }
    missing = [name for name in canonical_names() if name not in rows]
    assert not missing, f"no table row for {missing}"


def test_the_verbs_readme_names_are_reached_from_import_replay_alone():
    """README "From Python" and `replay`'s docstring call `replay.report.html_report(LOG)`,
    `replay.batch.run_batch(…)`, `replay.batch.scan(…)`, `strategies.register(spec)`: after a
    bare `import replay` these were AttributeErrors (the packages were not imported)."""
    import os
    import sys

    calls = (
        "replay.report.html_report", "replay.batch.run_batch", "replay.batch.scan",
        "replay.batch.BatchOptions", "replay.strategies.register", "replay.strategies.resolve",
        "replay.breakeven.breakeven", "replay.fidelity.fidelity",
    )
    code = f"import replay\nfor f in ({', '.join(calls)},):\n    assert callable(f), f\n"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
