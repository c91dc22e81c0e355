"""Every command explains itself: `--help` with an example, and a mention in the README or docs/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from replay.cli import cli
from replay.cli._main import load_commands

ROOT = Path(__file__).resolve().parent.parent
load_commands()
COMMANDS = sorted(cli.commands)


def test_every_command_module_registered_something() -> None:
    assert {"run", "report", "plot", "breakeven", "whatif", "schema", "strategies"} <= set(
        COMMANDS
    )


@pytest.mark.parametrize("name", ["", *COMMANDS])
def test_help_has_an_example(name: str) -> None:
    args = [name, "--help"] if name else ["--help"]
    result = CliRunner().invoke(cli, args, prog_name="replay")
    assert result.exit_code == 0, result.output
    assert "Example" in result.output, f"`replay {name} --help` shows no example"
    # The example runs this very command.
    if name:
        example = result.output.split("Example", 1)[1]
        assert re.search(rf"replay {re.escape(name)}\b", example) or (
            name == "run" and "replay logs/" in example
        ), f"`replay {name} --help`: the example does not use `replay {name}`"


def _documentation() -> str:
    texts = [(ROOT / "README.md").read_text(encoding="utf-8")]
    texts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("**/*.md"))]
    return "\n".join(texts)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_is_documented(name: str) -> None:
    found = re.search(rf"replay {re.escape(name)}\b", _documentation()) is not None
    assert found, f"`replay {name}` is mentioned neither in README.md nor in docs/"


def test_quiet_is_offered_by_every_command_that_shows_progress() -> None:
    for name in ("run", "breakeven", "whatif", "report", "plot"):
        params = {p.name for p in cli.commands[name].params}
        assert "quiet" in params, name


def test_python_dash_m_runs_the_same_command_line() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "replay", "strategies", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: replay strategies")


def test_install_lines_name_the_checkout_not_a_pypi_package() -> None:
    """`replay` on PyPI is an unrelated project: an extra is installed from the checkout, as the
    README does (`pip install '.[report]'`), never by that name."""
    pattern = re.compile(r"pip install ['\"]?replay\[")
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
    for folder, glob in (("replay", "**/*.py"), ("notebooks", "**/*.ipynb"), ("tests", "*.py")):
        files += sorted((ROOT / folder).glob(glob))
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if pattern.search(line)
    ]
    assert not offenders


def test_help_loads_neither_polars_nor_the_replay_engine() -> None:
    # `replay --help` answers at once, and Ctrl-C while a command starts is caught by the CLI's
    # handler (`interrupted`), not raised from an import the package made before it ran.
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from replay.cli._main import load_commands, cli\n"
        "load_commands()\n"
        "try:\n"
        "    cli(['--help'], prog_name='replay')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted(m for m in ('polars', 'pydantic', 'tiktoken', 'replay._api') "
        "if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("HEAVY []"), done.stdout[-300:]


def test_the_public_names_resolve_on_first_use() -> None:
    import replay

    for name in replay.__all__:
        assert getattr(replay, name) is not None
    assert set(replay.__all__) <= set(dir(replay))
    with pytest.raises(AttributeError):
        replay.no_such_name  # noqa: B018


def test_each_command_has_its_verb_in_python() -> None:
    """`replay whatif`, `breakeven` and `fidelity` are verbs from Python too: `whatif` at the
    top; the other two in their rooms, whose names they share (`replay.breakeven` is the
    package, so `replay.breakeven(log)` cannot be the verb)."""
    import replay
    import replay._api as api
    from replay.breakeven import breakeven
    from replay.fidelity import FidelityResult, fidelity

    assert replay.whatif is api.whatif and breakeven is api.breakeven
    assert fidelity is api.fidelity and FidelityResult is api.FidelityResult
    with pytest.raises(AttributeError):
        replay.breakeven.no_such_name  # noqa: B018
    with pytest.raises(AttributeError):
        replay.fidelity.no_such_name  # noqa: B018


def test_option_values_are_named_as_the_errors_and_the_docs_name_them() -> None:
    """`whatif --at` takes a request, as `--compact-at` and the error `give either --at REQUEST
    --prune SELECTOR` say (it showed INTEGER); `calibrate --date` a YYYY-MM-DD date, as its
    error says, with the default in words (it showed `[default: (today (UTC))]`)."""

    def help_of(name: str) -> str:
        result = CliRunner().invoke(cli, [name, "--help"], prog_name="replay",
                                    terminal_width=200)
        return " ".join(result.output.split())

    whatif = help_of("whatif")
    assert "--at REQUEST " in whatif and "--compact-at REQUEST " in whatif
    calibrate = help_of("calibrate")
    assert "--date YYYY-MM-DD " in calibrate and "[default: (today, UTC)]" in calibrate
