"""A log that is a stream (a pipe, a FIFO, `<(cat log)`, standard input as `-`) is read exactly
once by every command that takes a log; a FIFO inside a log folder is never waited on."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, RUN42
from test_calibrate import synthetic_session
from test_fidelity import _billed_session

from replay.log import write_log

# A log read twice waits for a second writer that never comes: a hang, failed by this timeout.
TIMEOUT = 60


def _replay(*args: object, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """`python -m replay ARGS` of this checkout, in a subprocess (a hang is a timeout)."""
    return subprocess.run(
        [sys.executable, "-m", "replay", *map(str, args)],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        timeout=TIMEOUT,
        env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)},
    )


@pytest.fixture
def fifo_of(tmp_path: Path) -> Iterator[Callable[[Path], Path]]:
    """A FIFO that one writer fills once with a file's bytes, as `<(cat FILE)` does."""
    writers: list[subprocess.Popen] = []

    def make(source: Path) -> Path:
        fifo = tmp_path / f"fifo-{len(writers)}" / source.name
        fifo.parent.mkdir()
        os.mkfifo(fifo)
        script = "import sys; open(sys.argv[2], 'wb').write(open(sys.argv[1], 'rb').read())"
        writers.append(subprocess.Popen([sys.executable, "-c", script, str(source), str(fifo)]))
        return fifo

    yield make
    for writer in writers:
        writer.kill()
        writer.wait()


def _doc(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def _billed(tmp_path: Path) -> Path:
    path = tmp_path / "billed.jsonl"
    write_log(_billed_session(), path)
    return path


def _calibration_log(tmp_path: Path) -> Path:
    path = tmp_path / "calibration.jsonl"
    write_log(synthetic_session(1.42), path)
    return path


# command arguments (LOG where the log goes), the log, and the part of the JSON to compare
JSON_COMMANDS = {
    "run": (["run", "LOG", "-s", "baseline,truncate-500"], lambda _: RUN42, "summary"),
    "breakeven": (["breakeven", "LOG", "-s", "age-truncate-500-keep-3"], lambda _: RUN42,
                  "breakeven"),
    "whatif": (["whatif", "LOG", "--at", "3", "--prune", "older-than:1"], lambda _: RUN42,
               "summary"),
    "fidelity": (["fidelity", "LOG"], _billed, "requests"),
    "calibrate": (["calibrate", "LOG", "--date", "2026-11-29"], _calibration_log, "families"),
}


@pytest.mark.parametrize("name", sorted(JSON_COMMANDS))
def test_every_command_reads_a_fifo_once(name, fifo_of, tmp_path) -> None:
    args, log_of, key = JSON_COMMANDS[name]
    log = log_of(tmp_path)
    fifo = fifo_of(log)
    piped = _doc(_replay(*[fifo if a == "LOG" else a for a in args], "--format", "json"))
    direct = _doc(_replay(*[log if a == "LOG" else a for a in args], "--format", "json"))
    assert piped[key] and piped[key] == direct[key]


def test_convert_report_and_plot_read_a_fifo_once(fifo_of, tmp_path) -> None:
    converted = _replay("convert", fifo_of(RUN42), "-o", "-", "-q")
    assert converted.returncode == 0, converted.stderr.decode()
    assert converted.stdout == _replay("convert", RUN42, "-o", "-", "-q").stdout
    page = tmp_path / "r.html"
    done = _replay("report", fifo_of(RUN42), "-s", "baseline", "--no-breakeven", "-q", "-o", page)
    assert done.returncode == 0, done.stderr.decode()
    assert page.read_text(encoding="utf-8").startswith("<!")
    chart = tmp_path / "c.svg"
    done = _replay("plot", fifo_of(RUN42), "-s", "baseline", "-q", "-o", chart)
    assert done.returncode == 0, done.stderr.decode()
    assert chart.read_text(encoding="utf-8").lstrip().startswith("<")


def test_dash_is_standard_input() -> None:
    piped = _doc(_replay("-", "-s", "baseline", "--format", "json", stdin=RUN42.read_bytes()))
    direct = _doc(_replay(RUN42, "-s", "baseline", "--format", "json"))
    assert piped["log"] == "-" and piped["summary"] == direct["summary"]
    converted = _replay("convert", "-", "-o", "-", "-q", stdin=RUN42.read_bytes())
    assert converted.stdout == RUN42.read_bytes()


def test_dot_slash_dash_is_a_file_named_dash(invoke, tmp_path, monkeypatch) -> None:
    # click.Path makes `./-` the same Path("-") as `-`: it was read as standard input (empty).
    (tmp_path / "-").write_bytes(RUN42.read_bytes())
    monkeypatch.chdir(tmp_path)
    direct = _doc(_replay(RUN42, "-s", "baseline", "--format", "json"))
    for args in (("./-",), ("run", "./-"), ("breakeven", "./-")):
        done = invoke(*args, "-s", "baseline", "--format", "json", "-q")
        assert done.exit_code == 0, done.stderr
        assert json.loads(done.stdout)["log"] == "-"
    assert json.loads(invoke("./-", "-s", "baseline", "--format", "json").stdout)["summary"] == (
        direct["summary"]
    )
    converted = invoke("convert", "./-", "-o", "-", "-q")
    assert converted.exit_code == 0, converted.stderr
    assert converted.stdout_bytes == RUN42.read_bytes()


def test_a_file_named_dash_is_dot_slash_dash_in_errors(invoke, tmp_path, monkeypatch) -> None:
    """`replay ./-` of a missing or unreadable file named `-`: the message named `-`, which
    means standard input."""
    monkeypatch.chdir(tmp_path)
    for args in (("./-",), ("breakeven", "./-")):
        done = invoke(*args)
        assert done.exit_code == 2 and done.stderr == "error: ./-: no such file\n"
    (tmp_path / "-").write_text("{}\n")
    done = invoke("./-")
    assert done.exit_code == 2 and done.stderr.startswith("error: ./-:1: expected a "), done.stderr


def test_output_dot_slash_dash_is_a_file_named_dash(invoke, tmp_path, monkeypatch) -> None:
    # `-o ./-` was the same Path("-") as `-o -`: the result went to standard output, no file.
    monkeypatch.chdir(tmp_path)
    dash = tmp_path / "-"
    to_stdout = invoke(str(RUN42), "-s", "baseline", "--format", "json", "-q", "-o", "-")
    for args in (
        (str(RUN42), "-s", "baseline", "--format", "json", "-q"),
        ("schema",),
        ("convert", str(RUN42), "-q"),
    ):
        done = invoke(*args, "-o", "./-")
        assert done.exit_code == 0, done.stderr
        assert done.stdout == ""
        assert dash.read_bytes()
        if args[0] == str(RUN42):
            assert dash.read_text(encoding="utf-8") == to_stdout.stdout
        dash.unlink()
    told = invoke("convert", str(RUN42), "-o", "./-")
    assert "wrote ./-:" in told.stderr
    dash.unlink()



@pytest.mark.parametrize(
    "args, said",
    [
        (["report", RUN42, "-s", "baseline", "--no-breakeven", "-o", "./-"],
         "error: -o ./-: the report is an HTML page: name it .html\n"),
        (["bench", "-n", "3", "--write-log", "./-"], "wrote ./-: 3 requests\n"),
        (["calibrate", RUN42, "-q", "-o", "./-", "--write-tokenizers", "./-"],
         "error: -o and --write-tokenizers both name ./-: one would replace the other\n"),
        (["run", ".", "-s", "baseline", "-q", "-o", "./-"],
         "error: -o ./- is in the log folder being read: write the result elsewhere\n"),
    ],
)
def test_every_message_names_a_file_named_dash_dot_slash_dash(
    invoke, tmp_path, monkeypatch, args, said
) -> None:
    """`-o ./-` writes a file named `-`: a refusal or a `wrote` line that names it `-` reads as
    standard output."""
    monkeypatch.chdir(tmp_path)
    if "." in args:
        (tmp_path / "run.jsonl").write_bytes(RUN42.read_bytes())
    done = invoke(*args)
    assert done.stderr == said


def test_a_report_written_through_a_link_named_dash_is_named_dot_slash_dash(
    invoke, tmp_path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").symlink_to("page.html")
    done = invoke("report", RUN42, "-s", "baseline", "--no-breakeven", "-o", "./-")
    assert done.exit_code == 0, done.stderr
    assert done.stderr.startswith("wrote ./- (") and (tmp_path / "page.html").read_bytes()


def test_the_log_on_standard_input_is_told_from_a_file_named_dash(tmp_path) -> None:
    """The log `-` is standard input, not the file named `-`: `replay - -o ./- < ./-` named the
    output a file being read (`-`), and `replay - -o ./- < other.jsonl` was refused the same
    though the file `-` is not read."""

    def replay_dash(stdin: Path) -> subprocess.CompletedProcess:
        with stdin.open("rb") as log:
            return subprocess.run(
                [sys.executable, "-m", "replay", "-", "-s", "baseline", "-q", "-o", "./-"],
                cwd=tmp_path, stdin=log, capture_output=True, timeout=TIMEOUT,
                env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)},
            )

    dash = tmp_path / "-"
    dash.write_bytes(RUN42.read_bytes())
    done = replay_dash(dash)
    assert done.returncode == 2
    assert done.stderr.decode() == (
        "error: -o ./- is the log being read on standard input: write the result elsewhere\n"
    )
    assert dash.read_bytes() == RUN42.read_bytes()
    dash.write_text("an earlier result\n")
    done = replay_dash(RUN42)
    assert done.returncode == 0, done.stderr.decode()
    assert dash.read_text().startswith("- · replay-recorder")

def test_a_streamed_log_is_named_in_notes_and_errors(fifo_of, tmp_path) -> None:
    """Skipped lines and errors name the stream as given, never a temporary copy."""
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(RUN42.read_bytes()[:20000])
    fifo = fifo_of(cut)
    notes = _doc(_replay(fifo, "-s", "baseline", "--format", "json"))["notes"]
    assert any(f"skipped or repaired (first: {fifo}:" in n for n in notes), notes
    strict = _replay("-", "-s", "baseline", "--strict", stdin=cut.read_bytes())
    assert strict.returncode == 2
    assert strict.stderr.decode().startswith("error: <stdin>:")
    empty = _replay("-", "-s", "baseline", stdin=b"")
    assert empty.returncode == 2
    assert empty.stderr.decode() == "error: <stdin>: empty file: expected a coding-agent log\n"


def test_an_endless_stream_that_is_no_log_fails_once_its_head_is_read(tmp_path) -> None:
    """A stream is copied before it is read, but its head is checked first: `/dev/zero` or
    `yes |` fail once detection has its bytes, not after filling the disk."""
    for source in (["cat", "/dev/zero"], ["yes"]):
        with subprocess.Popen(source, stdout=subprocess.PIPE) as endless:
            done = subprocess.run(
                [sys.executable, "-m", "replay", "-", "-s", "baseline"],
                cwd=ROOT, stdin=endless.stdout, capture_output=True, timeout=TIMEOUT,
                env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT),
                     "TMPDIR": str(tmp_path)},
            )
            endless.kill()
        assert done.returncode == 2, source
        assert done.stderr.decode() == (
            "error: <stdin>:1: expected a coding-agent log (replay-log, Claude Code JSONL, "
            "Codex rollout, pi session or opencode export); the content matches none of them\n"
        )
        assert not list(tmp_path.iterdir())  # the copy is gone


def test_batch_skips_a_fifo_in_a_folder(tmp_path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(RUN42.read_bytes())
    os.mkfifo(folder / "pipe.jsonl")  # nobody writes: opening it would wait forever
    done = _replay("batch", folder, "-s", "baseline", "-w", "1", "-o", tmp_path / "ds")
    assert done.returncode == 0, done.stderr.decode()
    row = next(line for line in done.stdout.decode().splitlines() if "pipe.jsonl" in line)
    assert "skipped" in row and "not a regular file" in row


def test_batch_refuses_a_fifo_given_as_a_target(tmp_path) -> None:
    from replay._errors import ReplayError
    from replay.batch._discover import discover

    os.mkfifo(tmp_path / "pipe.jsonl")
    with pytest.raises(ReplayError, match=r"pipe\.jsonl: not a regular file .*replay run"):
        discover([tmp_path / "pipe.jsonl"])


def test_a_fifo_in_a_session_folder_is_not_waited_on(tmp_path) -> None:
    """A Claude Code or opencode folder, and the `agent-*` files beside a transcript, are
    globbed: only their regular files are read."""
    from test_adapters_claude_code import _assistant, _usage, _user, _write
    from test_adapters_common import opencode_doc

    from replay import load

    claude, opencode = tmp_path / "claude", tmp_path / "opencode"
    claude.mkdir()
    opencode.mkdir()
    _write(claude, [_user("u1", None, "00.000", "Hi."),
                    _assistant("a1", "u1", "01.000", "msg_1", "req_1",
                               {"type": "text", "text": "Hello."}, _usage(3, 500, 0, 20))])
    (opencode / "export.json").write_text(json.dumps(opencode_doc()), encoding="utf-8")
    fifos = [claude / "agent-x.jsonl", claude / "other.jsonl", opencode / "pipe.json"]
    for fifo in fifos:
        os.mkfifo(fifo)
    got: list[int] = []
    sources = (claude, claude / "s-1.jsonl", opencode)
    reader = threading.Thread(
        target=lambda: got.extend(len(load(p).requests()) for p in sources), daemon=True
    )
    reader.start()
    reader.join(timeout=TIMEOUT)
    hung = reader.is_alive()
    for fifo in fifos:  # release an open() that waits for a writer
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert not hung and got == [1, 1, 2]


@pytest.mark.parametrize("args", [["convert", "-"], ["-", "-s", "baseline", "--format", "json"]])
def test_the_log_on_standard_input_is_not_written_over(tmp_path: Path, args: list[str]) -> None:
    """`replay convert - -o LOG < LOG` would replace the log with the result."""
    log = tmp_path / "run.jsonl"
    log.write_bytes(RUN42.read_bytes())
    with log.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "replay", *args, "-o", str(log), "-q"], cwd=ROOT, stdin=stdin,
            capture_output=True, timeout=TIMEOUT,
            env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)},
        )
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"error: -o {log} is the log being read on standard input: write the result elsewhere\n"
    )
    assert log.read_bytes() == RUN42.read_bytes()


def test_standard_input_is_read_only_as_the_log_dash() -> None:
    """A script's `< /dev/null` with `-o /dev/null` (a timing run): no log is read on standard
    input, so nothing written is one."""
    done = subprocess.run(
        [sys.executable, "-m", "replay", str(RUN42), "-s", "baseline", "-o", "/dev/null", "-q"],
        cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT,
        env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)},
    )
    assert (done.returncode, done.stderr) == (0, b"")


def test_an_output_in_replay_s_own_data_folder_is_refused(tmp_path: Path) -> None:
    # The data folder of the checkout `_replay` runs (this process may import an installed
    # copy, whose folder is another), under a new name: nothing to lose if it were written.
    target = ROOT / "pricing" / f"not-replay-s-{os.getpid()}.json"
    try:
        done = _replay(RUN42, "-s", "baseline", "-o", target, "-q")
        assert done.returncode == 2 and b"in replay's own data folder" in done.stderr
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)


def test_a_loop_of_links_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    for args in (["-s", "baseline", "-o", tmp_path / "a"], ["--strategy-file", tmp_path / "a"]):
        done = _replay(RUN42, *args, "-q")
        assert done.returncode == 2, done.stderr
        assert done.stderr.decode().startswith("error: ") and b"Traceback" not in done.stderr


@pytest.mark.parametrize("args", [["-", "-s", "baseline"], ["convert", "-", "-o", "-"]])
def test_a_closed_standard_input_is_a_user_error(args: list[str]) -> None:
    """`replay - <&-`: Python makes standard input None; reading the log from it was an
    AttributeError traceback."""
    line = " ".join([sys.executable, "-m", "replay", *args, "-q"]) + " <&-"
    done = subprocess.run(["sh", "-c", line], cwd=ROOT, capture_output=True, timeout=TIMEOUT,
                          env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2
    assert done.stderr.decode() == "error: <stdin>: standard input is closed: expected a log\n"


class _FullDisk:
    """A file opened for writing on a full disk: every write fails with ENOSPC."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def write(self, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()


class _BrokenStream(io.BytesIO):
    """A stream whose read fails (a device error) once its head is read."""

    def read(self, size: int | None = -1) -> bytes:
        if self.tell():
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return super().read(size)


def _stdin_of(monkeypatch: pytest.MonkeyPatch, stream: io.BytesIO) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stream))


def _check_the_copy_is_told_unwritable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`replay -` with TMPDIR at `tmp_path`, where the copy cannot be written (the caller made
    it so): a `ReplayError` naming the copy and its folder, not a read of the stream."""
    from replay import load
    from replay._errors import LogFormatError, ReplayError

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR is read again
    _stdin_of(monkeypatch, io.BytesIO(RUN42.read_bytes()))
    with pytest.raises(ReplayError) as told:
        load("-")
    assert not isinstance(told.value, LogFormatError)
    assert str(told.value) == (
        f"cannot write the temporary copy of <stdin> in {tmp_path}: No space left on device "
        "(a stream is read through a copy; TMPDIR picks its folder)"
    )


def test_a_full_disk_while_copying_a_stream_names_the_copy_not_a_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The copy of a stream cannot be written (a full disk): it was told as "cannot read the
    file (No space left on device)", blaming the stream."""
    opened = Path.open

    def full(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = opened(self, mode, *args, **kwargs)
        return _FullDisk(handle) if "w" in mode else handle

    monkeypatch.setattr(Path, "open", full)
    _check_the_copy_is_told_unwritable(monkeypatch, tmp_path)
    assert not list(tmp_path.iterdir())  # the copy is gone


def test_a_stream_that_fails_to_be_read_is_told_as_a_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from replay import load
    from replay._errors import LogFormatError

    _stdin_of(monkeypatch, _BrokenStream(RUN42.read_bytes() * 200))  # more than its head
    with pytest.raises(LogFormatError) as told:
        load("-")
    assert str(told.value) == "<stdin>: cannot read the file (Input/output error)"


def test_a_stream_longer_than_its_head_is_copied_and_hashed_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The copy holds every byte of the stream, past the head checked first, and
    `Session.stream_sha256` is the SHA-256 of them all (docs/calibration.md: a stream is hashed
    as it is read); `Session.path` names the stream, not the removed copy."""
    import hashlib

    from replay import load
    from replay.adapters._stream import read_stream
    from replay.adapters.detect import SAMPLE_BYTES

    data = b"0123456789" * (SAMPLE_BYTES // 10 + 7)  # the head, then more than one more read
    copied: list[bytes] = []

    def read(copy: Path) -> Any:
        copied.append(copy.read_bytes())
        return load(RUN42)

    _stdin_of(monkeypatch, io.BytesIO(data))
    session = read_stream("-", read)
    assert copied == [data]
    assert session.stream_sha256 == hashlib.sha256(data).hexdigest()
    assert session.path == "<stdin>"


def test_no_temporary_folder_for_the_copy_is_told_where_it_was_looked_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Even the copy's folder cannot be made (a full disk): the message names the temporary
    folder and TMPDIR, not a failure of the stream."""

    def full(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tempfile, "TemporaryDirectory", full)
    _check_the_copy_is_told_unwritable(monkeypatch, tmp_path)


def test_a_named_stream_that_cannot_be_opened_is_told_as_a_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from replay import load
    from replay._errors import LogFormatError
    from replay.adapters import _stream

    fifo = tmp_path / "log.jsonl"
    os.mkfifo(fifo)

    def gone(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENXIO, os.strerror(errno.ENXIO))

    monkeypatch.setattr(_stream, "open", gone, raising=False)
    with pytest.raises(LogFormatError) as told:
        load(fifo)
    assert str(told.value) == f"{fifo}: cannot read the file (No such device or address)"


def test_a_stream_read_as_another_format_is_named_in_the_error_not_its_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`--from FMT` on a stream of another format: the error quotes a skipped line, whose place
    names the stream as given, never the temporary copy."""
    from replay._errors import LogFormatError
    from replay.adapters import read_any

    _stdin_of(monkeypatch, io.BytesIO(RUN42.read_bytes()))
    with pytest.raises(LogFormatError) as told:
        read_any("-", fmt="codex")
    message = str(told.value)
    assert message.startswith("<stdin>: expected ") and "first: <stdin>:1: " in message
    assert tempfile.gettempdir() not in message


def test_a_named_stream_s_copy_keeps_its_file_name(tmp_path: Path) -> None:
    """The copy of a FIFO is named as the FIFO: a Claude Code log whose lines name no session
    takes its session id from the file name, as it does read from the file itself."""
    from replay import load

    line = {"type": "user", "uuid": "u1", "parentUuid": None, "isSidechain": False,
            "timestamp": "2026-01-02T10:00:00Z", "message": {"role": "user", "content": "hi"}}
    text = json.dumps(line) + "\n"
    plain = tmp_path / "plain" / "abc-123.jsonl"
    plain.parent.mkdir()
    plain.write_text(text)
    fifo = tmp_path / "abc-123.jsonl"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_text, args=(text,), daemon=True)
    writer.start()
    try:
        session = load(fifo)
    finally:
        writer.join(TIMEOUT)
    assert session.header.session_id == load(plain).header.session_id == "abc-123"
