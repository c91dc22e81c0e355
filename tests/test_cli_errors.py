"""User mistakes and environment failures on the command line: one line on stderr, an exit code,
never a traceback. Broken plug-ins, bad tokenizer files, unreadable inputs, unwritable outputs,
a full disk on standard output and Ctrl-C."""

from __future__ import annotations

import builtins
import io
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, RUN42


@pytest.fixture(autouse=True)
def ctrl_c_not_ignored():
    """Ctrl-C as a terminal delivers it, even when the suite runs as a background job of a
    script (the shell starts those with SIGINT ignored, which Python and every child it starts
    then keep: no KeyboardInterrupt at all)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _one_line(result, needles: tuple[str, ...], code: int = 2) -> str:
    assert result.exit_code == code, (result.exit_code, result.stderr)
    return _check_line(result.stderr, needles)


def _check_line(err: str, needles: tuple[str, ...]) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# --- broken --strategy-file plug-ins -------------------------------------------------------------

RAISES_IN_BUILD = """\
class Strategy:
    def __init__(self):
        raise ValueError("bad init")

    def __call__(self, history, ctx):
        return list(history)


strategy = Strategy
"""

RAISES_IN_SELECT = """\
def strategy(history, ctx):
    helper = {}
    return helper["oops"]
"""


def _plugin(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    return path


def _run_plugin(invoke, path: Path, *args: str):
    name = path.stem.replace("_", "-")
    return invoke("run", RUN42, "-s", name, "--strategy-file", path, "-q", *args)


def test_a_plugin_that_raises_at_import_names_its_file_and_line(invoke, tmp_path, clean_registry):
    path = _plugin(tmp_path, "imports_badly", "X = 1\nraise RuntimeError('boom at import')\n")
    _one_line(_run_plugin(invoke, path), (f"{path}:2", "RuntimeError: boom at import"))


def test_a_plugin_whose_build_raises_names_it(invoke, tmp_path, clean_registry):
    path = _plugin(tmp_path, "builds_badly", RAISES_IN_BUILD)
    line = _one_line(_run_plugin(invoke, path), (f"{path}:3", "'builds-badly'", "bad init"))
    assert "ValueError" in line


def test_a_plugin_that_raises_while_choosing_a_view_names_it(invoke, tmp_path, clean_registry):
    path = _plugin(tmp_path, "selects_badly", RAISES_IN_SELECT)
    line = _one_line(_run_plugin(invoke, path), (f"{path}:3", "'selects-badly'", "KeyError"))
    assert "request 0" in line


def test_a_plugin_error_names_the_line_that_raised_and_the_file_once(invoke, tmp_path,
                                                                     clean_registry):
    """The line is where the plug-in's code raised (in a helper), not where its strategy called
    the helper; an exception without a message is named alone."""
    source = (
        "def helper():\n    raise ValueError\n\n\ndef strategy(history, ctx):\n"
        "    return helper()\n"
    )
    path = _plugin(tmp_path, "raises_deep", source)
    line = _one_line(_run_plugin(invoke, path), ())
    assert line == f"error: {path}:2: plug-in strategy 'raises-deep' raised ValueError on request 0"


def test_a_replay_error_raised_in_a_plugin_names_it(invoke, tmp_path, clean_registry):
    """docs/strategies.md: a strategy that raises on a request is reported as the plug-in's
    mistake, naming its file, line and the request; a `ReplayError` (raised by the plug-in, or
    by replay's own helpers it called wrongly) passed through without naming either."""
    source = (
        "from replay import ReplayError\n\n\ndef strategy(history, ctx):\n"
        "    raise ReplayError('keep must be positive')\n"
    )
    path = _plugin(tmp_path, "refuses", source)
    line = _one_line(_run_plugin(invoke, path), ())
    assert line == (f"error: {path}:5: plug-in strategy 'refuses' raised ReplayError: keep must "
                    "be positive on request 0")


@pytest.mark.parametrize("name", ["5", "'a,b'", "'x.y'", "''", "'-x'"])
def test_a_plugin_name_that_no_option_could_take_is_refused(invoke, tmp_path, clean_registry,
                                                            name):
    # NAME = 5 was taken as "5"; a comma or a dot breaks `-s a,b` and `--set NAME.param`; a
    # leading dash reads as an option.
    path = _plugin(tmp_path, "named_badly", f"NAME = {name}\ndef strategy(history, ctx):\n"
                   "    return history\n")
    result = invoke("run", RUN42, "-s", "plugins", "--strategy-file", path, "-q")
    _one_line(result, (str(path), f": NAME {name} must be a strategy name"))


def test_a_file_name_that_is_no_strategy_name_is_refused_as_the_default_name(invoke, tmp_path,
                                                                            clean_registry):
    path = _plugin(tmp_path, "_hidden", "def strategy(history, ctx):\n    return history\n")
    result = invoke("run", RUN42, "-s", "plugins", "--strategy-file", path, "-q")
    _one_line(result, (str(path), ": the file's name '-hidden' (the default NAME) must be a "
                       "strategy name", "set NAME"))


@pytest.mark.parametrize(
    ("source", "needles"),
    [
        # at import: replay ended with that exit code and printed nothing
        ("import sys\nsys.exit(3)\n", (":2", "SystemExit: 3")),
        # while choosing a view: only the message, exit code 1
        ("import sys\ndef strategy(history, ctx):\n    sys.exit('bailed')\n",
         (":3", "'exits-early'", "SystemExit: bailed", "request 0")),
    ],
    ids=["import", "request"],
)
def test_a_plugin_that_calls_sys_exit_is_a_plugin_error(invoke, tmp_path, clean_registry,
                                                        source, needles):
    path = _plugin(tmp_path, "exits_early", source)
    _one_line(_run_plugin(invoke, path), (str(path), *needles))


@pytest.mark.parametrize(
    ("returned", "what"),
    [("None", "None"), ("42", "int"), ("[1, 2]", "a list holding int"), ("'text'", "str")],
)
def test_a_plugin_that_returns_no_view_says_what_is_expected(invoke, tmp_path, clean_registry,
                                                             returned, what):
    source = f"X = 1\n\ndef strategy(history, ctx):\n    return {returned}\n"
    path = _plugin(tmp_path, "returns_badly", source)
    line = _one_line(_run_plugin(invoke, path), ("'returns-badly'", f"returned {what}"))
    assert "expected a View or a list of history items" in line
    assert line.startswith(f"error: {path}:3: ")  # the function's file and line (was file:PATH)


def test_a_class_plugin_that_returns_no_view_names_its_call_line(invoke, tmp_path,
                                                                 clean_registry):
    source = "class Strategy:\n    def __call__(self, history, ctx):\n        return None\n"
    path = _plugin(tmp_path, "class_returns_badly", source)
    line = _one_line(_run_plugin(invoke, path), ("'class-returns-badly'", "returned None"))
    assert line.startswith(f"error: {path}:2: ")  # its __call__, not the file alone


@pytest.mark.parametrize(
    ("source", "line", "takes"),
    [
        ("def strategy(history):\n    return history\n", 1, "(history)"),
        ("X = 1\n\ndef strategy():\n    return []\n", 3, "()"),
        ("class Strategy:\n    pass\n\nstrategy = Strategy\n", 1, "instances cannot be called"),
        ("class Strategy:\n    def __call__(self, history):\n        return history\n", 2,
         "`Strategy.__call__` takes (self, history)"),
    ],
)
def test_a_plugin_with_the_wrong_signature_is_refused_when_loaded(invoke, tmp_path,
                                                                  clean_registry, source,
                                                                  line, takes):
    path = _plugin(tmp_path, "wrong_signature", source)
    for result in (_run_plugin(invoke, path), invoke("strategies", "--strategy-file", path)):
        message = _one_line(result, (f"{path}:{line}", takes))
        assert "history, ctx)" in message


def test_a_view_holding_no_items_is_a_plugin_error(invoke, tmp_path, clean_registry):
    source = (
        "from replay.strategies import View\n\ndef strategy(history, ctx):\n"
        "    return View(items=['a'])\n"
    )
    path = _plugin(tmp_path, "view_badly", source)
    _one_line(_run_plugin(invoke, path), ("'view-badly'", "a View holding str"))


@pytest.mark.parametrize(
    ("returned", "what"),
    [
        ("View(items=list(history), summarizer_calls=['oops'])",
         "a View whose summarizer_calls hold str"),
        ("View(items=list(history), summarizer_calls=[SummarizerCall(input_items=('s',), "
         "instruction='i', summary='s')])", "a SummarizerCall whose input_items hold str"),
        ("View(items=list(history), summarizer_calls=[SummarizerCall(input_items=tuple(history), "
         "instruction=None, summary=None)])", "a SummarizerCall whose instruction is NoneType"),
        ("View(items=list(history), summarizer_calls=[SummarizerCall(input_items=tuple(history), "
         "instruction='i', summary=None)])", "a SummarizerCall whose summary is NoneType"),
        ("View(items=list(history), events=['oops'])", "a View whose events hold str"),
        ("View(items=list(history), events=None)", "a View whose events are NoneType"),
        ("View(items=None)", "a View of NoneType"),
        ("View(items=list(history), summarizer_calls=None)",
         "a View whose summarizer_calls are NoneType"),
        ("View(items=list(history), summarizer_calls=[SummarizerCall(input_items=None, "
         "instruction='i', summary='s')])", "a SummarizerCall whose input_items are NoneType"),
        ("[*history[:-1], AssistantItem(blocks=None)]", "a list holding an AssistantItem whose "
         "blocks are NoneType"),
        ("[*history[:-1], ToolResultItem(call_id='c', tool_name=None, output='x')]",
         "a list holding a ToolResultItem whose tool_name is NoneType"),
        ("[UserItem(text='hi', estimated_tokens=True), *history[1:]]", "a list holding a UserItem "
         "whose estimated_tokens is True"),
        ("[*history[:-1], UserItem(text=None)]", "a list holding a UserItem whose text is "
         "NoneType"),
        ("[*history[:-1], AssistantItem(blocks=('x',))]", "a list holding an AssistantItem whose "
         "blocks hold str"),
        ("[SummaryItem(text='hi', role='system'), *history[1:]]", "a list holding a SummaryItem "
         "whose role is 'system'"),
        ("[UserItem(text='hi', estimated_tokens='9'), *history[1:]]", "a list holding a UserItem "
         "whose estimated_tokens is '9'"),
        ("[*history[:-1], AssistantItem(blocks=(Block('thinking', estimated_tokens='9'),))]",
         "a list holding an AssistantItem whose blocks hold a Block whose estimated_tokens is "
         "'9'"),
        ("[*history[:-1], AssistantItem(blocks=(Block('tool_call', name='x', call_id='c', "
         "arguments=object()),))]", "a list holding an AssistantItem whose blocks hold a tool "
         "call whose arguments cannot be shown as JSON"),
    ],
)
def test_a_view_with_broken_parts_is_a_plugin_error(invoke, tmp_path, clean_registry,
                                                    returned, what):
    """A View's summarizer calls and events, and new items, are checked as its items are: each
    of these was a traceback from the renderer or the cache simulation."""
    source = (
        f"from replay.strategies import *\n\ndef strategy(history, ctx):\n    return {returned}\n"
    )
    path = _plugin(tmp_path, "breaks_parts", source)
    line = _one_line(_run_plugin(invoke, path), ("'breaks-parts'", f"returned {what}",
                                                 " on request 0: expected "))
    assert line.startswith(f"error: {path}:3: ")


def test_what_a_plugin_prints_goes_to_stderr_not_into_the_output(invoke, tmp_path,
                                                                 clean_registry):
    """A debugging `print` in a plug-in (at import, when built, on a request) went to standard
    output, ahead of the JSON: `replay … --format json | jq` could not read it."""
    source = (
        "print('loading')\n\nclass Strategy:\n    def __init__(self):\n        print('built')\n\n"
        "    def __call__(self, history, ctx):\n        print('request', ctx.request_index)\n"
        "        return list(history)\n"
    )
    path = _plugin(tmp_path, "prints_a_lot", source)
    result = _run_plugin(invoke, path, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["summary"][0]["strategy"] == "prints-a-lot"
    assert result.stderr.splitlines()[:3] == ["loading", "built", "request 0"]


@pytest.mark.parametrize(("returned", "what"), [("[]", "a list"), ("View(items=[])", "a View")])
def test_a_plugin_that_sends_nothing_names_its_file(invoke, tmp_path, clean_registry, returned,
                                                    what):
    # Was `error: strategy 'sends-nothing' sent an empty request at req-001`: no file, no line.
    source = (
        "from replay.strategies import View\n\ndef strategy(history, ctx):\n"
        f"    return {returned}\n"
    )
    path = _plugin(tmp_path, "sends_nothing", source)
    line = _one_line(_run_plugin(invoke, path), ("'sends-nothing'", f"returned {what} holding "
                                                 "no item on request 0"))
    assert line.startswith(f"error: {path}:3: ")


# --- bad REPLAY_TOKENIZERS files -----------------------------------------------------------------

ROW = {"family": "gemini", "pattern": "^gemini-", "encoding": "o200k_base", "factor": 1.2,
       "message_overhead": 4, "tool_call_overhead": 12}


@pytest.fixture
def tokenizer_file(tmp_path, monkeypatch):
    from replay.tokens import use_tokenizers

    path = tmp_path / "tokenizers.json"
    monkeypatch.setenv("REPLAY_TOKENIZERS", str(path))
    use_tokenizers(None)  # forget what was looked up with the table before
    yield path
    monkeypatch.delenv("REPLAY_TOKENIZERS")
    use_tokenizers(None)


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ({"message_overhead": -5}, ("families[0].message_overhead", "0 to 1000", "-5")),
        ({"tool_call_overhead": 10**30}, ("families[0].tool_call_overhead", "0 to 1000")),
        ({"tool_call_overhead": 4.5}, ("families[0].tool_call_overhead", "whole number")),
        ({"message_overhead": "x"}, ("families[0].message_overhead", '"x"')),
        ({"message_overhead": True}, ("families[0].message_overhead", "true")),
        ({"factor": 1e300}, ("families[0].factor", "0.1 to 10", "1e+300")),
        ({"factor": float("nan")}, ("families[0].factor", "0.1 to 10", "NaN")),
        ({"factor": float("inf")}, ("families[0].factor", "0.1 to 10", "Infinity")),
        ({"factor": 0}, ("families[0].factor", "0.1 to 10")),
        ({"factor": "abc"}, ("families[0].factor", '"abc"')),
        ({"factor": [1]}, ("families[0].factor", "[1]")),
        ({"factor": None}, ("families[0].factor", "null")),
        ({"factor": False}, ("families[0].factor", "false")),
        ({"family": ["x"]}, ("families[0].family", "a non-empty string")),
        ({"pattern": 5}, ("families[0].pattern", "a regular expression")),
        ({"pattern": "("}, ("families[0].pattern", "a regular expression")),
        ({"encoding": "nope"}, ("families[0].encoding", "o200k_base, cl100k_base", '"nope"')),
        ({"estimated": "yes"}, ("families[0].estimated", "true or false")),
        ({"factor": None, "drop": "factor"}, ("families[0]", "lacks factor")),
    ],
)
def test_a_bad_tokenizer_file_names_the_file_and_the_key(invoke, tokenizer_file, change, needles):
    row = {**ROW, **change}
    if "drop" in row:
        del row[row.pop("drop")]
    tokenizer_file.write_text(json.dumps({"families": [row]}), encoding="utf-8")
    _one_line(invoke(RUN42, "-s", "baseline", "-q"), (str(tokenizer_file), *needles))


@pytest.mark.parametrize("content", [b"\xff\xfe{", b"[" * 100_000])
def test_an_unreadable_tokenizer_file_is_a_user_error(invoke, tokenizer_file, content):
    tokenizer_file.write_bytes(content)
    _one_line(invoke(RUN42, "-s", "baseline", "-q"), (str(tokenizer_file), "cannot read"))


def test_batch_checks_the_tokenizer_file_before_any_work(invoke, tokenizer_file):
    tokenizer_file.write_text(json.dumps({"families": [{**ROW, "factor": 1e300}]}))
    result = invoke("batch", RUN42, "-s", "baseline", "--workers", "1", "-q")
    _one_line(result, (str(tokenizer_file), "families[0].factor"))


# --- unreadable inputs, unwritable outputs -------------------------------------------------------


def _deny(monkeypatch, denied: Path) -> None:
    """Opening or listing anything under `denied` fails as if it were another user's (the tests
    run as root, for whom permissions never fail)."""

    def refused(path) -> bool:
        try:
            return Path(os.fsdecode(path)).absolute().is_relative_to(denied)
        except TypeError:  # a file descriptor
            return False

    def guard(real):
        def call(path, *args, **kwargs):
            if refused(path):
                raise PermissionError(13, "Permission denied", os.fsdecode(path))
            return real(path, *args, **kwargs)

        return call

    monkeypatch.setattr(builtins, "open", guard(builtins.open))
    monkeypatch.setattr(io, "open", guard(io.open))
    monkeypatch.setattr(os, "open", guard(os.open))
    monkeypatch.setattr(os, "scandir", guard(os.scandir))


def _logs_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "run42.jsonl").write_bytes(RUN42.read_bytes())
    return folder


def test_an_unreadable_log_file_is_a_user_error(invoke, tmp_path, monkeypatch):
    log = _logs_folder(tmp_path) / "run42.jsonl"
    _deny(monkeypatch, log)
    _one_line(invoke(log, "-q"), (str(log), "cannot read the file (Permission denied)"))


def test_a_log_folder_that_cannot_be_listed_says_so(invoke, tmp_path, monkeypatch):
    folder = _logs_folder(tmp_path)
    _deny(monkeypatch, folder)
    _one_line(invoke(folder, "-q"), (str(folder), "cannot read the folder (Permission denied)"))


def test_batch_over_a_folder_that_cannot_be_listed_says_so(invoke, tmp_path, monkeypatch):
    folder = _logs_folder(tmp_path)
    _deny(monkeypatch, folder)
    result = invoke("batch", folder, "-s", "baseline", "--workers", "1", "-q")
    _one_line(result, (str(folder), "cannot read the folder (Permission denied)"))


def _tree_with_a_private_folder(tmp_path: Path) -> tuple[Path, Path]:
    """logs/run42.jsonl, logs/more/run42.jsonl (another copy, so not a duplicate) and
    logs/private/, which holds a log but cannot be listed."""
    folder = _logs_folder(tmp_path)
    for sub in ("more", "private"):
        (folder / sub).mkdir()
        (folder / sub / "run42.jsonl").write_bytes(RUN42.read_bytes() + b"\n")
    return folder, folder / "private"


@pytest.mark.parametrize("target", ["{folder}", "{folder}/*/*.jsonl", "{folder}/**/*.jsonl"])
def test_batch_over_a_tree_with_a_folder_it_cannot_list_fails_that_folder_alone(
    invoke, tmp_path, monkeypatch, target
):
    folder, private = _tree_with_a_private_folder(tmp_path)
    _deny(monkeypatch, private)
    args = ("batch", target.format(folder=folder), "-s", "baseline", "--workers", "1")
    result = invoke(*args, "--format", "json", "-q")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    (problem,) = doc["problems"]
    assert problem == {
        "file": str(private), "status": "failed",
        "message": "cannot read the folder (Permission denied)",
    }
    assert doc["files"]["failed"] == 1 and doc["files"]["ok"] >= 1
    assert invoke(*args, "--strict", "-q").exit_code == 1  # as for a file that failed


def test_batch_over_a_glob_below_a_folder_it_cannot_list_says_so(invoke, tmp_path, monkeypatch):
    folder = _logs_folder(tmp_path)
    _deny(monkeypatch, folder)
    result = invoke("batch", f"{folder}/*.jsonl", "-s", "baseline", "--workers", "1", "-q")
    _one_line(result, (str(folder), "cannot read the folder (Permission denied)"))


def test_batch_over_an_unreadable_log_fails_that_file_alone(invoke, tmp_path, monkeypatch):
    folder = _logs_folder(tmp_path)
    _deny(monkeypatch, folder / "run42.jsonl")
    result = invoke("batch", folder, "-s", "baseline", "--workers", "1", "--format", "json", "-q")
    assert result.exit_code == 0, result.stderr
    (problem,) = json.loads(result.stdout)["problems"]
    assert problem["status"] == "failed" and "Permission denied" in problem["message"]


def test_batch_into_a_folder_it_may_not_write_is_a_user_error(invoke, tmp_path, monkeypatch):
    out = tmp_path / "out"
    real_mkdir = os.mkdir

    def mkdir(path, *args, **kwargs):
        if Path(os.fsdecode(path)).is_relative_to(out):
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    result = invoke("batch", RUN42, "-s", "baseline", "--workers", "1", "-o", out, "-q")
    _one_line(result, (f"cannot write the dataset {out}", "Permission denied"))


def test_batch_into_a_dataset_whose_files_it_may_not_write(invoke, tmp_path, monkeypatch):
    out = tmp_path / "out"
    for table in ("sessions", "requests", ".replay-batch"):
        (out / table).mkdir(parents=True)
    _deny(monkeypatch, out)
    result = invoke("batch", RUN42, "-s", "baseline", "--workers", "1", "-o", out, "-q")
    _one_line(result, (f"cannot write the dataset {out}", "Permission denied"))


# --- standard output: a full disk, a closed pipe -------------------------------------------------


def _replay(*args: str, stdout=subprocess.PIPE, **kwargs) -> subprocess.CompletedProcess:
    """`python -m replay` on this checkout (not the installed one) in a subprocess."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "replay", *args], cwd=ROOT, env=env,
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300,
                          **kwargs)


needs_dev_full = pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")


@needs_dev_full
@pytest.mark.parametrize(
    "args",
    [
        [str(RUN42), "-s", "baseline"],  # a rich table, larger than the stream's buffer
        [str(RUN42), "-s", "baseline", "--format", "json", "-q"],
        [str(RUN42), "-s", "baseline", "--format", "csv", "-q"],
        ["strategies", "--format", "json"],
        ["--help"],
        ["--version"],  # small: fails only when the stream is flushed at exit
    ],
)
def test_a_full_disk_on_standard_output_is_one_line_exit_1(args):
    with open("/dev/full", "w") as full:
        done = _replay(*args, stdout=full)
    assert done.returncode == 1, done.stderr
    _check_line(done.stderr, ("error: cannot write output: No space left on device",))


@needs_dev_full
def test_a_full_disk_under_an_output_file_names_it_exit_2(invoke):
    """An `-o FILE` replay cannot write is an error naming it, as README.md says: exit 2, unlike
    standard output (exit 1)."""
    result = invoke(RUN42, "-s", "baseline", "--format", "json", "-o", "/dev/full", "-q")
    _one_line(result, ("error: cannot write /dev/full: No space left on device",))


@pytest.mark.parametrize(
    "args",
    [[str(RUN42), "-s", "baseline", "-q"], [str(RUN42), "-s", "baseline", "--format", "json",
                                            "-q"], ["strategies"], ["--help"],
     [str(RUN42), "-s", "baseline", "--format", "json", "-q", "-o", "/dev/stdout"]],
)
def test_a_closed_pipe_on_standard_output_is_silent(args):
    """(Already so before the audit, by click: a regression test of the central handler; and
    `-o /dev/stdout` into a pipe, which was `error: cannot write /dev/stdout: Broken pipe`.)"""
    read, write = os.pipe()
    os.close(read)  # nobody reads: the first write fails with EPIPE
    try:
        done = _replay(*args, stdout=write)
    finally:
        os.close(write)
    assert done.stderr == "" and done.returncode == 1


# --- Ctrl-C --------------------------------------------------------------------------------------


def test_ctrl_c_in_a_command_is_interrupted_exit_130(invoke, tmp_path, monkeypatch):
    """(Already so before the audit: a regression test.) Interrupted while the output is being
    written, it leaves neither the file nor its temporary file behind."""
    from replay import report

    def interrupted(document):
        yield "{"
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "json_pieces", interrupted)
    out = tmp_path / "out.json"
    result = invoke(RUN42, "-s", "baseline", "--format", "json", "-o", out, "-q")
    _one_line(result, ("interrupted",), code=130)
    assert not list(tmp_path.iterdir())


def test_ctrl_c_while_parsing_options_is_interrupted_exit_130(invoke, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("click.Context.exit", interrupted)  # as `--help` ends the parsing
    result = invoke("--help")
    _one_line(result, ("interrupted",), code=130)


def _workers(pid: int) -> list[int]:
    """The pool's worker processes of `pid` (not multiprocessing's resource tracker)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                command = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:
                continue
            if b"spawn_main" in command:
                found.append(int(child))
    return found


def _busy_batch(tmp_path: Path, workers: int = 2) -> subprocess.Popen:
    """`replay batch -w 2` over enough distinct logs to keep it busy for seconds (~8 s here:
    the test must not hang on timing on a fast machine), once `workers` of its workers run."""
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = RUN42.read_text(encoding="utf-8").splitlines(keepends=True)
    for n in range(24):
        (logs / f"run{n}.jsonl").write_text("".join(lines[: len(lines) - n]), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "replay", "batch", str(logs), "-s", "all", "--workers", "2",
         "-o", str(tmp_path / "out"), "-q"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while len(_workers(process.pid)) < workers and process.poll() is None:
        assert time.monotonic() < deadline, "no worker process started"
        time.sleep(0.01)
    return process


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_ctrl_c_while_batch_starts_its_workers(tmp_path):
    """The terminal sends SIGINT to the whole process group: workers still importing replay
    must not print tracebacks; the batch says `interrupted`, exits 130 and leaves no temporary
    file in the dataset."""
    process = _busy_batch(tmp_path, workers=1)
    out = tmp_path / "out"
    time.sleep(0.3)  # the workers are importing replay (a second or so)
    os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C does: every process of the group
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert stderr == "interrupted\n"
    assert stdout == ""
    assert not [p for p in out.rglob("*.tmp")]


def _gone(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                alive.append(pid)
        if not alive:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_sigterm_stops_a_batch_and_its_workers(tmp_path):
    """`kill PID` (SIGTERM to the batch alone, not its group) stops it as Ctrl-C does: its
    workers are stopped too (they ran on, orphaned, for minutes) and it exits 143."""
    process = _busy_batch(tmp_path)
    workers = _workers(process.pid)
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr
    assert stderr == "terminated\n"
    assert _gone(workers, 30)
    assert not list((tmp_path / "out").rglob("*.tmp"))


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_workers_of_a_killed_batch_exit(tmp_path):
    """SIGKILL leaves the batch no chance to stop its workers: they notice and exit."""
    process = _busy_batch(tmp_path)
    workers = _workers(process.pid)
    process.kill()
    process.communicate(timeout=60)
    assert _gone(workers, 30)


def _sleep(seconds: float, opts: object) -> float:
    time.sleep(seconds)
    return seconds


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX threads' signals")
def test_ctrl_c_stops_a_pool_at_once_without_waiting_for_its_tasks():
    """Ctrl-C handed by the kernel to a thread other than the main one (polars' threads, here a
    timer's) still interrupts a pool waiting on a long task, and the task is not waited for."""
    from replay.batch._engines import PoolEngine

    def ctrl_c_on_this_thread() -> None:
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    started = time.monotonic()
    timer = threading.Timer(3.0, ctrl_c_on_this_thread)
    with pytest.raises(KeyboardInterrupt), PoolEngine(1) as engine:
        timer.start()
        for _ in engine.imap(_sleep, [120.0], None, lambda task, message: None):
            pass
    timer.join()
    assert time.monotonic() - started < 60


def test_an_aborted_pool_has_no_thread_left_for_the_exit_hook_to_race():
    """Closing a pool on Ctrl-C ends its manager thread before returning: CPython's exit hook
    wakes that thread without its lock, and raced it closing its pipe ("Exception ignored …
    Bad file descriptor" printed after `interrupted`)."""
    from replay.batch._engines import PoolEngine

    engine = PoolEngine(1)
    future = engine._submit(_sleep, 120.0, None)
    manager = engine._pool._executor_manager_thread
    deadline = time.monotonic() + 60
    while not future.running():  # the worker took the task
        assert time.monotonic() < deadline, "the worker never started the task"
        time.sleep(0.01)
    started = time.monotonic()
    engine.close(abort=True)
    assert not manager.is_alive()
    assert time.monotonic() - started < 30  # the task was not waited for


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_while_the_pool_starts_a_worker_is_raised_once_it_is_started(signum):
    """Raised in the middle of a worker's start, KeyboardInterrupt left a worker the pool did
    not know of, never stopped: the command hung at exit (1 run in 12 of a Ctrl-C at a random
    time in `replay LOG --workers 2`). The same for SIGTERM, where the CLI raises `Terminated`
    from it."""
    from replay.batch._engines import _sigint_deferred
    from replay.cli._main import Terminated, _terminate

    handler, raised = (
        (signal.default_int_handler, KeyboardInterrupt)
        if signum == signal.SIGINT
        else (_terminate, Terminated)
    )
    previous = signal.signal(signum, handler)
    try:
        reached = False
        with pytest.raises(raised), _sigint_deferred():
            signal.raise_signal(signum)
            time.sleep(0.05)  # the handler has run by now
            reached = True
        assert reached
        assert signal.getsignal(signum) is handler
    finally:
        signal.signal(signum, previous)


# --- what is not a user error --------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [RuntimeError("a bug"), FileNotFoundError(2, "No such file or directory", "pricing/x.json")],
)
def test_a_bug_in_replay_keeps_its_traceback(invoke, monkeypatch, error):
    """The central handler is no catch-all: an exception replay did not expect is a bug, and its
    traceback is the bug report (here it reaches the test instead of a one-line message)."""
    from replay import report

    def broken(document):
        raise error

    monkeypatch.setattr(report, "json_pieces", broken)
    with pytest.raises(type(error)):
        invoke(RUN42, "-s", "baseline", "--format", "json", "-q")


@pytest.mark.parametrize("target", ["{folder}/*.jsonl", "{folder}/**/*.jsonl",
                                    "{folder}/run42.jsonl"])
def test_batch_over_a_path_in_a_folder_it_cannot_look_into_says_so(
    invoke, tmp_path, monkeypatch, target
):
    """A folder without search permission: even a stat of a path in it fails (EACCES), which
    `Path.is_dir` raises rather than answers (a traceback before)."""
    folder = _logs_folder(tmp_path)
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        where = Path(os.fsdecode(path)).absolute()
        if where != folder and where.is_relative_to(folder):
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    text = target.format(folder=folder)
    result = invoke("batch", text, "-s", "baseline", "--workers", "1", "-q")
    _one_line(result, (text, "cannot look into its folder (permission denied)"))


@pytest.mark.parametrize("where", ["log", "output"])
def test_a_file_name_too_long_for_the_system_is_one_line(invoke, tmp_path, where):
    long = tmp_path / ("a" * 300 + ".jsonl")
    args = (long, "-q") if where == "log" else (RUN42, "-q", "-o", long)
    result = invoke(*args)
    line = _one_line(result, ("file name too long (", " characters)"))
    if where == "log":  # (the output's may be its temporary file's): shortened, not whole
        name = str(long)
        shown = f"{name[:60]}…{name[-10:]}"
        assert line == f"error: {shown}: file name too long ({len(name):,} characters)"


def test_an_output_through_a_dangling_link_needs_the_folder_it_points_into(invoke, tmp_path):
    """`-o` naming a link to a file in a missing folder: refused like a missing folder (the
    write followed the link and created the folders, even at the filesystem's root)."""
    link = tmp_path / "out.json"
    link.symlink_to(tmp_path / "nofolder" / "deeper" / "target.json")
    _one_line(invoke(RUN42, "-q", "--format", "json", "-o", link),
              ("cannot write", "nofolder/deeper does not exist"))
    assert not (tmp_path / "nofolder").exists()
    fine = tmp_path / "fine.json"
    fine.symlink_to(tmp_path / "target.json")
    assert invoke(RUN42, "-q", "--format", "json", "-o", fine).exit_code == 0
    assert json.loads((tmp_path / "target.json").read_text())["summary"]


def test_an_output_that_ends_in_a_slash_names_a_folder(invoke, tmp_path, monkeypatch):
    """`-o newdir/` wrote a file named `newdir`: a trailing slash names a folder."""
    monkeypatch.chdir(tmp_path)
    _one_line(invoke(RUN42, "-q", "-o", "newdir/"), ("'newdir/'", "expected a file name"))
    assert not (tmp_path / "newdir").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "-n", "5", "--write-log", "-"],
        ["record-fixture", "-o", "-"],
        ["calibrate", str(RUN42), "--write-tokenizers", "-"],
        ["batch", str(RUN42), "-o", "-"],
    ],
)
def test_a_dash_is_refused_where_it_would_name_a_file(invoke, tmp_path, monkeypatch, args):
    """`-` is standard output only for the options that say so: these wrote a file named `-`
    in the current folder (a dataset folder for `batch`)."""
    monkeypatch.chdir(tmp_path)
    result = invoke(*args)
    assert result.exit_code == 2
    assert "needs a path: `-` (standard output) is not one here" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["providers", "--at", ""], "error: --at '': expected a date as YYYY-MM-DD"),
        (["run", str(RUN42), "-s", "baseline", "--client", ""], "unknown client profile ''"),
        (["batch", str(RUN42), "-s", "baseline", "--client", ""], "unknown client profile ''"),
        (["providers", "--schema", "--provider", "nosuch"],
         "--schema prints the rule files' JSON schema: --provider would change nothing"),
        (["providers", "--schema", "--format", "table"],
         "--schema prints the rule files' JSON schema: --format table would change nothing"),
        (["providers", "--schema", "--cache-rules", str(RUN42)],
         "--schema prints the rule files' JSON schema: --cache-rules would change nothing"),
    ],
)
def test_an_empty_or_ignored_value_is_an_error(invoke, args, error):
    """An empty `--at` was today, an empty `--client` the log's own profile, and `--schema`
    ignored the options that choose rules: each without a word."""
    result = invoke(*args)
    assert result.exit_code == 2 and error in result.stderr


def test_a_horizon_without_break_even_is_an_error(invoke, tmp_path):
    result = invoke("report", RUN42, "-s", "baseline", "--no-breakeven", "--horizon", "5",
                    "-o", tmp_path / "r.html")
    assert result.exit_code == 2
    assert "--horizon limits break-even, which --no-breakeven leaves out" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "name, starts", [("out.json", b"{"), ("out.csv", b"strategy,"), ("out.parquet", b"PAR1")]
)
def test_without_format_the_output_suffix_picks_it(invoke, tmp_path, name, starts):
    """`-o out.json` writes JSON (a table written into out.json would be read as JSON)."""
    out = tmp_path / name
    result = invoke("run", RUN42, "-s", "baseline", "-o", out, "-q")
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(starts)


@pytest.mark.parametrize(
    "args, name, writes",
    [
        (["whatif", RUN42, "--at", "8", "--prune", "tool:read_file"], "x.parquet", "table or json"),
        (["whatif", RUN42, "--at", "8", "--prune", "tool:read_file"], "x.csv", "table or json"),
        (["strategies"], "s.csv", "table, json or markdown"),
        (["calibrate", RUN42], "c.parquet", "table or json"),
        (["providers"], "p.csv", "table or json"),
        (["convert", RUN42], "c.parquet", "replay-log JSONL"),
        (["convert", RUN42], "c.csv", "replay-log JSONL"),
        (["schema"], "s.csv", "json"),
        (["record-fixture"], "f.parquet", "replay-log JSONL"),
    ],
)
def test_a_data_file_a_command_does_not_write_is_refused(invoke, tmp_path, args, name, writes):
    """`-o x.parquet` on a command without Parquet wrote a text table (or JSONL) into it, for a
    program to fail on; refused before any work, nothing written."""
    out = tmp_path / name
    result = invoke(*args, "-o", out)
    assert result.exit_code == 2
    either = "one" if " or " in writes else "it"
    assert result.stderr == (
        f"error: -o {out} names a {out.suffix[1:]} file, which this command does not write (it "
        f"writes {writes}): give a file name that agrees with {either}\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "name", "writes"),
    [
        (["bench", "-n", "5", "--write-log"], "s.csv", "replay-log JSONL"),
        (["bench", "-n", "5", "--write-log"], "s.json", "replay-log JSONL"),
        (["calibrate", str(RUN42), "--write-tokenizers"], "t.parquet", "json"),
    ],
)
def test_a_data_file_an_option_does_not_write_is_refused(invoke, tmp_path, args, name, writes):
    """As `-o`: `bench --write-log x.csv` wrote the replay-log JSONL into it (`record-fixture
    -o x.csv`, the same kind of log, was refused), `--write-tokenizers x.parquet` JSON rows."""
    out = tmp_path / name
    result = invoke(*args, out)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {args[-1]} {out} names a {out.suffix[1:]} file, which this command does not "
        f"write (it writes {writes}): give a file name that agrees with it\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_parquet_without_a_file_is_refused_before_the_replay(invoke):
    """Refused at once, not after a breakeven of minutes: before the strategies are resolved,
    before the log is read (run42 has no usage: `fidelity` would refuse it for that)."""
    for args in (["breakeven", RUN42, "-s", "no-such-strategy"], ["fidelity", RUN42],
                 ["run", RUN42, "-s", "no-such-strategy"]):
        result = invoke(*args, "--format", "parquet")
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr == (
            "error: --format parquet needs -o FILE (Parquet is not for the terminal)\n"
        )


def test_a_format_the_output_suffix_contradicts_is_one_line_exit_2(invoke, tmp_path):
    result = invoke("run", RUN42, "-s", "baseline", "--format", "csv", "-o", tmp_path / "x.json")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: --format csv but -o {tmp_path / 'x.json'} names a json file: drop --format, or "
        "give a file name that agrees with it\n"
    )
    assert not (tmp_path / "x.json").exists()
    # A suffix that names no format leaves the default, and agreeing ones are fine.
    assert invoke("run", RUN42, "-s", "baseline", "-o", tmp_path / "t.txt", "-q").exit_code == 0
    assert (tmp_path / "t.txt").read_text().lstrip().startswith(str(RUN42))
    ok = invoke("run", RUN42, "-s", "baseline", "--format", "json", "-o", tmp_path / "y.JSON")
    assert ok.exit_code == 0 and (tmp_path / "y.JSON").read_text().startswith("{")
    # A suffix picks its format in any case; one naming a format the command has not (`.md`:
    # markdown, not one of run's) picks none.
    assert invoke("run", RUN42, "-s", "baseline", "-o", tmp_path / "z.JSON", "-q").exit_code == 0
    assert (tmp_path / "z.JSON").read_text().startswith("{")
    assert invoke("run", RUN42, "-s", "baseline", "-o", tmp_path / "t.md", "-q").exit_code == 0
    assert (tmp_path / "t.md").read_text().lstrip().startswith(str(RUN42))
    md = invoke("run", RUN42, "-s", "baseline", "--format", "json", "-o", tmp_path / "j.md")
    assert md.exit_code == 0 and (tmp_path / "j.md").read_text().startswith("{")


@pytest.mark.parametrize(
    "args, line",
    [
        (["run", RUN42, "-o", "{tmp}"], "-o {tmp}: is a folder, not a file"),
        (["schema", "-o", "{tmp}"], "-o {tmp}: is a folder, not a file"),
        (["run", RUN42, "--cache-rules", "{tmp}/x.json"], "--cache-rules {tmp}/x.json: no such "
         "file"),
        (["providers", "--cache-rules", "{tmp}"], "--cache-rules {tmp}: is a folder, not a file"),
        (["record-fixture", "--fixture", "{tmp}/none"], "--fixture {tmp}/none: no such folder"),
        (["record-fixture", "-o", "-"], "-o -: needs a path: `-` (standard output) is not one "
         "here"),
    ],
)
def test_a_path_an_option_cannot_use_is_one_line_exit_2(invoke, tmp_path, args, line):
    """Not click's usage lines: the option was typed right, the file is what is wrong."""
    result = invoke(*(str(a).replace("{tmp}", str(tmp_path)) for a in args))
    assert result.exit_code == 2
    assert result.stderr == "error: " + line.replace("{tmp}", str(tmp_path)) + "\n"


@pytest.mark.parametrize("name", ["totals.csv", "report.JSON", "rows.parquet"])
def test_batch_refuses_a_file_name_for_its_dataset_folder(invoke, tmp_path, monkeypatch, name):
    """`batch -o totals.csv` made a dataset folder named totals.csv."""
    monkeypatch.chdir(tmp_path)
    result = invoke("batch", RUN42, "-s", "baseline", "-o", name)
    assert result.exit_code == 2
    _check_line(result.stderr, (f"-o {name} names a", "batch writes a dataset folder"))
    assert list(tmp_path.iterdir()) == []


def test_batch_appends_to_a_dataset_folder_named_like_a_file(invoke, tmp_path, monkeypatch):
    """A folder that exists already is a dataset, whatever its name says."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs.parquet").mkdir()
    result = invoke("batch", RUN42, "-s", "baseline", "-o", "runs.parquet", "-q")
    assert result.exit_code == 0, result.stderr
    assert list((tmp_path / "runs.parquet" / "sessions").glob("*.parquet"))


# --- the locale: standard output is UTF-8 in any --------------------------------------------------


@pytest.mark.parametrize("args", [["strategies"], [str(RUN42), "-s", "baseline", "-q"]])
def test_standard_output_is_utf8_whatever_the_locale(args: list[str]) -> None:
    """The tables hold box lines and text such as `·` or `×`: with `PYTHONIOENCODING=ascii`
    (or `LC_ALL=C` with Python's UTF-8 mode off) they were a UnicodeEncodeError traceback,
    exit 1, and with latin-1 other bytes than in a UTF-8 locale (or than `-o FILE` holds)."""
    outputs = []
    for encoding in ("utf-8", "ascii", "latin-1"):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "200",
               "PYTHONIOENCODING": encoding}
        done = subprocess.run([sys.executable, "-m", "replay", *args], cwd=ROOT, env=env,
                              capture_output=True, timeout=300)
        assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    assert "┃".encode() in outputs[0]  # the table's lines, not an ASCII stand-in


@pytest.mark.parametrize("encoding", ["utf-8", ""])
def test_a_log_named_in_no_utf8_writes_standard_output_as_its_file(tmp_path: Path,
                                                                   encoding: str) -> None:
    """A file name that is no UTF-8 reaches the JSON's `log` as a lone surrogate: standard
    output was a traceback in a UTF-8 locale, raw bytes (no JSON text) in the C one, where
    `-o FILE` writes its `\\udcff` escape."""
    log = tmp_path / os.fsdecode(b"run\xff.jsonl")
    log.write_bytes(RUN42.read_bytes())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "LC_ALL": "C.UTF-8",
           "PYTHONIOENCODING": encoding}
    args = [sys.executable, "-m", "replay", str(log), "-s", "baseline", "--format", "json", "-q"]
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, timeout=300)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    written = subprocess.run([*args, "-o", str(tmp_path / "out.json")], cwd=ROOT, env=env,
                             capture_output=True, timeout=300)
    assert written.returncode == 0, written.stderr
    assert done.stdout == (tmp_path / "out.json").read_bytes()
    assert b'run\\udcff.jsonl"' in done.stdout


def test_a_closed_standard_output_is_no_traceback(tmp_path: Path) -> None:
    """`replay … >&-` (a cron line, a daemon): Python makes standard output None, and the first
    write or flush of it was an AttributeError traceback — even with `-o FILE`, which needs
    no standard output and wrote its file."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}

    def closed(*args: str) -> subprocess.CompletedProcess:
        line = " ".join([sys.executable, "-m", "replay", *args]) + " >&-"
        return subprocess.run(["sh", "-c", line], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)

    out = tmp_path / "out.json"
    written = closed(str(RUN42), "-s", "baseline", "-q", "-o", str(out))
    assert (written.returncode, written.stderr) == (0, "")
    assert json.loads(out.read_text())["summary"][0]["strategy"] == "baseline"
    printed = closed("schema")
    assert printed.returncode == 1
    assert printed.stderr == "error: cannot write output: Bad file descriptor\n"


def test_a_closed_standard_error_sends_no_warning_into_the_output() -> None:
    """`replay … 2>&-`: Python makes standard error None, and `print(file=None)` writes to
    standard output: a broken plug-in's one-line warning went into the JSON or table."""
    script = (
        "import warnings\n"
        "from replay._errors import PluginWarning\n"
        "from replay.cli._main import _show_warning, _utf8_streams\n"
        "_utf8_streams()\n"
        "warnings.showwarning = _show_warning\n"
        "warnings.warn('broken plug-in', PluginWarning, stacklevel=1)\n"
        "print('the output')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    line = f"{shlex.quote(sys.executable)} -c {shlex.quote(script)} 2>&-"
    done = subprocess.run(["sh", "-c", line], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stdout) == (0, "the output\n")


@pytest.mark.parametrize("command", [(), ("run",), ("fidelity",), ("breakeven",), ("convert",)])
def test_a_glob_that_matched_several_logs_is_one_line_naming_what_reads_several(
    invoke, tmp_path, command
):
    """`replay logs/*.jsonl` (the shell expands the glob): the extra logs are named for what
    they are, and `run` points at `replay batch`; nothing is read."""
    other = tmp_path / "other.jsonl"
    other.write_text(Path(RUN42).read_text())
    options = ("-o", tmp_path / "out.jsonl") if command == ("convert",) else ()
    result = invoke(*command, RUN42, other, other, *options)
    name = "run" if not command else command[0]
    instead = ("`replay batch` replays several" if name == "run" else "give it one at a time")
    line = _one_line(result, (f"`replay {name}` reads one log, and was given 3", instead))
    assert "Usage:" not in result.stderr and result.stdout == ""
    assert line.startswith("error: ") and not (tmp_path / "out.jsonl").exists()


def test_a_strategy_given_without_dash_s_is_named_with_the_option_to_use(invoke):
    result = invoke(RUN42, "truncate-500")
    _one_line(result, ("unexpected argument 'truncate-500' after the log",
                       "`replay run LOG -s truncate-500`"))


@pytest.mark.parametrize("extra", [("nosuch",), ("truncate-500", "baseline"), ("-",)])
def test_any_other_word_after_the_log_is_click_s_usage_error(invoke, extra):
    result = invoke(RUN42, *extra)
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    plural = "s" if len(extra) > 1 else ""
    assert f"Error: Got unexpected extra argument{plural} ({' '.join(extra)})" in result.stderr
    assert "Usage: replay run [OPTIONS] LOG" in result.stderr


def test_a_command_of_several_logs_still_takes_them(invoke, tmp_path):
    result = invoke("batch", RUN42, RUN42, "-s", "baseline", "--workers", "1")
    assert result.exit_code == 0, result.stderr
