"""Text from a file name or a log shown on a terminal or in the page's title: control characters
and bidirectional marks written as escapes (an escape sequence in a file name retitled the
terminal), everything else kept."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

from conftest import RUN42
from hypothesis import given
from hypothesis import strategies as st

from replay._printable import printable

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069"
                    "\ud800-\udfff]")
NAME = "a\x1b]0;pwned\x07b\u202e.jsonl"


def test_escapes() -> None:
    assert printable("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert printable("bell\x07 cr\r del\x7f c1\x9b") == "bell\\x07 cr\\x0d del\\x7f c1\\x9b"
    assert printable("abc\u202edef\u2066") == "abc\\u202edef\\u2066"
    # A file name's byte that is no UTF-8 (surrogateescape) is shown as that byte.
    assert printable(b"caf\xe9.jsonl".decode("utf-8", "surrogateescape")) == "caf\\xe9.jsonl"
    assert printable("tab\there\nnext · é 日本") == "tab\there\nnext · é 日本"


@given(st.text())
def test_nothing_unsafe_is_left_and_safe_text_is_kept(text: str) -> None:
    shown = printable(text)
    assert not UNSAFE.search(shown)
    if not UNSAFE.search(text):
        assert shown == text


def _named_log(tmp_path: Path) -> Path:
    path = tmp_path / NAME
    shutil.copyfile(RUN42, path)
    return path


def test_table_title_and_errors_escape_the_file_name(invoke, tmp_path: Path) -> None:
    log = _named_log(tmp_path)
    done = invoke(log, "-s", "baseline")
    assert done.exit_code == 0, done.stderr
    assert "\\x1b]0;pwned\\x07b\\u202e.jsonl" in done.stdout
    assert not UNSAFE.search(done.stdout + done.stderr)
    missing = invoke(str(log) + "x", "-s", "baseline")
    assert missing.exit_code == 2
    assert "\\x1b]0;pwned" in missing.stderr and not UNSAFE.search(missing.stderr)


def test_notes_escape_the_file_name(invoke, tmp_path: Path) -> None:
    """A note may quote the log's name (its skipped lines)."""
    log = _named_log(tmp_path)
    log.write_bytes(RUN42.read_bytes()[:20000])  # cut in the middle of a line
    done = invoke(log, "-s", "baseline", "--format", "csv")
    assert done.exit_code == 0, done.stderr
    assert "note:" in done.stderr and "\\x1b]0;pwned\\x07b\\u202e.jsonl" in done.stderr
    assert not UNSAFE.search(done.stderr)


def test_page_title_escapes_the_file_name(invoke, tmp_path: Path) -> None:
    log = _named_log(tmp_path)
    page = tmp_path / "page.html"
    done = invoke("report", log, "-s", "baseline", "-o", page)
    assert done.exit_code == 0, done.stderr
    title = re.search(r"<title>(.*?)</title>", page.read_text(encoding="utf-8"), re.S).group(1)
    assert "\\x1b]0;pwned\\x07b\\u202e.jsonl" in title and not UNSAFE.search(title)


def test_progress_bar_shows_a_strategy_name_with_brackets() -> None:
    """The bar's text is no markup: `[messages=4]` was read as a style tag and dropped."""
    from rich.console import Console

    from replay.cli._progress import progress_bar

    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    with progress_bar("replaying", console=console) as progress:
        assert progress is not None
        progress("sliding-10[messages=4]", 1, 2)
        progress.detail("[/x] request 3\x1b[2J")
    shown = console.file.getvalue()
    assert "sliding-10[messages=4]" in shown
    assert "[/x] request 3\\x1b[2J" in shown
