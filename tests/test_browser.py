"""The HTML report in a real browser: headless Chromium, driven over the DevTools protocol.

Chromium is started with `--remote-debugging-pipe` (commands on fd 3, replies on fd 4, one JSON
message per NUL byte), so the test needs nothing but the standard library. It checks that the
page loads with no script error and no network request, that the three charts rendered as SVG,
that the tables and the turn navigator are filled, that the navigator follows the URL hash and
its own controls, and saves screenshots under the test's tmp dir.

Skips (with the reason) where no Chromium is installed; `.ci/run` installs Debian's.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("altair")
pytest.importorskip("vl_convert")

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "logs" / "run42.jsonl"
STRATEGIES = "baseline,truncate-500,age-truncate-500-keep-3,compact-at-12000-structured,sliding-10"


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "headless_shell"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


BROWSER = _browser()
pytestmark = pytest.mark.skipif(
    BROWSER is None, reason="no Chromium on this machine (`apt-get install chromium`)"
)

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--mute-audio",
    "--hide-scrollbars",
    "--window-size=1280,1000",
    "--remote-debugging-pipe",
]


class DevTools:
    """A tiny DevTools-protocol client over Chromium's pipe transport."""

    def __init__(self, tmp: Path) -> None:
        cmd_r, self._cmd_w = os.pipe()
        self._res_r, res_w = os.pipe()
        os.set_inheritable(cmd_r, True)
        os.set_inheritable(res_w, True)
        args = [BROWSER, *FLAGS, f"--user-data-dir={tmp / 'profile'}", "about:blank"]

        def fds() -> None:  # the pipe transport wants fd 3 (commands) and fd 4 (replies)
            high_r = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(res_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        with open(tmp / "chromium.log", "wb") as log:
            self.proc = subprocess.Popen(
                args, preexec_fn=fds, pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=log
            )
        os.close(cmd_r)
        os.close(res_w)
        self._buffer = b""
        self._id = 0
        self.events: list[dict] = []
        self.session: str | None = None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.send("Browser.close", session=False, timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._res_r)

    def _read(self, deadline: float) -> dict:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from Chromium")
            ready, _, _ = select.select([self._res_r], [], [], left)
            if ready:
                chunk = os.read(self._res_r, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method: str, params: dict | None = None, *, session: bool = True,
             timeout: float = 30) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def open_page(self) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True},
            session=False,
        )
        self.session = attached["sessionId"]
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.send(f"{domain}.enable")

    def evaluate(self, expression: str):
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                 "awaitPromise": True}
        )
        if "exceptionDetails" in result:
            raise AssertionError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {expression}")

    def screenshot(self, path: Path, *, full_page: bool = False) -> None:
        params: dict = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params |= {"captureBeyondViewport": True, "clip": {
                "x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 8000),
                "scale": 1}}
        shot = self.send("Page.captureScreenshot", params)
        path.write_bytes(base64.b64decode(shot["data"]))

    def requested_urls(self) -> list[str]:
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]

    def errors(self) -> list[str]:
        out = []
        for e in self.events:
            if e.get("method") == "Runtime.exceptionThrown":
                out.append(json.dumps(e["params"]["exceptionDetails"])[:500])
            elif e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error":
                out.append(json.dumps(e["params"]["args"])[:500])
        return out


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> Path:
    from replay.report import html_report

    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(html_report(SAMPLE, STRATEGIES), encoding="utf-8")
    return path


@pytest.fixture
def browser(tmp_path):
    devtools = DevTools(tmp_path)
    try:
        devtools.open_page()
        yield devtools
    finally:
        devtools.close()


def _load(browser: DevTools, url: str) -> None:
    browser.send("Page.navigate", {"url": url})
    browser.wait_for("document.body && document.body.dataset.ready")
    assert browser.evaluate("document.body.dataset.ready") == "1", browser.evaluate(
        "document.body.dataset.error"
    )


def test_report_renders_offline_with_charts_and_tables(browser, report_file, tmp_path):
    _load(browser, report_file.as_uri())
    charts = browser.evaluate(
        "['prompt','cost','hit-ratio'].map(m => {"
        " const svg = document.querySelector('#chart-' + m + ' svg');"
        " return svg ? svg.querySelectorAll('path').length : 0; })"
    )
    assert all(n > 10 for n in charts), charts  # lines, axes, markers drawn as SVG paths
    lines = browser.evaluate(
        "document.querySelectorAll('#chart-cost svg .mark-line path').length"
    )
    strategies = browser.evaluate("document.querySelectorAll('#switches .switch').length")
    assert strategies == 5 and lines == strategies
    assert browser.evaluate("document.querySelectorAll('#summary-table tbody tr').length") == (
        strategies
    )
    assert browser.evaluate("document.querySelectorAll('#breakeven-table tbody tr').length") > 0
    # Hiding a strategy removes its line.
    browser.evaluate("document.querySelector('#switches .switch').click()")
    browser.wait_for(
        f"document.querySelectorAll('#chart-cost svg .mark-line path').length == {lines - 1}"
    )
    # Sorting the summary by cost puts the cheapest first.
    browser.evaluate(
        "[...document.querySelectorAll('#summary-table th')].find(t => t.textContent.startsWith("
        "'cost')).click()"
    )
    costs = browser.evaluate(
        "[...document.querySelectorAll('#summary-table tbody tr')].map(r => "
        "Number(r.cells[7].dataset.v))"
    )
    assert costs == sorted(costs)
    # The notes are open: the first says the trajectory is fixed, which no number shows.
    assert browser.evaluate(
        "document.getElementById('notes-box').open && "
        "document.querySelector('#notes li').offsetHeight > 0 && "
        "document.querySelector('#notes li').textContent.includes('trajectory fixed')"
    )
    # No row is tinted as advice (no unflagged strategy beats baseline on run42): the lowest
    # cost, truncate-500's, which hid text its agent used, is only in bold.
    assert browser.evaluate("document.querySelectorAll('#summary-table tr.best').length") == 0
    assert browser.evaluate(
        "[...document.querySelectorAll('#summary-table td.cheapest')].map(c => "
        "c.parentElement.cells[0].textContent)"
    ) == ["truncate-500"]
    browser.evaluate("window.scrollTo(0, 0)")
    browser.screenshot(tmp_path / "report.png", full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 10_000
    urls = browser.requested_urls()
    assert not [u for u in urls if u.startswith(("http:", "https:", "ws:", "wss:"))], urls
    assert not browser.errors()


def test_navigator_follows_the_url_and_its_controls(browser, report_file, tmp_path):
    url = report_file.as_uri() + "#strategy=truncate-500&request=5"
    _load(browser, url)
    current = browser.evaluate(
        "(() => { const c = document.getElementById('nav-current');"
        " return [c.dataset.strategy, c.dataset.request, c.textContent]; })()"
    )
    assert current[:2] == ["truncate-500", "5"], current
    assert "request 5" in current[2]
    # The diff shows the strategy's rewrites: truncate-500 cut earlier tool results.
    ops = browser.evaluate(
        "[...document.querySelectorAll('#nav-body .entry')].map(e => e.dataset.op)"
    )
    assert "changed" in ops and "same" in ops, ops
    assert browser.evaluate("!!document.getElementById('first-mismatch')")
    browser.screenshot(tmp_path / "navigator-diff.png")

    # Navigating by hash, by the next button and by the strategy picker.
    browser.evaluate("location.hash = '#strategy=baseline&request=9'")
    browser.wait_for("document.getElementById('nav-current').dataset.request === '9'")
    assert browser.evaluate("document.getElementById('nav-current').dataset.strategy") == (
        "baseline"
    )
    browser.evaluate("document.getElementById('nav-next').click()")
    assert browser.evaluate("document.getElementById('nav-current').dataset.request") == "10"
    assert browser.evaluate("location.hash") == "#strategy=baseline&request=10"
    browser.evaluate(
        "(() => { const s = document.getElementById('nav-strategy'); s.value = 'sliding-10';"
        " s.dispatchEvent(new Event('change')); })()"
    )
    assert browser.evaluate("document.getElementById('nav-current').dataset.strategy") == (
        "sliding-10"
    )
    removed = browser.evaluate(
        "document.querySelectorAll('#nav-body .entry.removed, #nav-body .fold.removed').length"
    )
    assert removed > 0  # a sliding window drops old messages

    # Message cards of the view.
    browser.evaluate("document.querySelector('.tab[data-tab=cards]').click()")
    cards = browser.evaluate("document.querySelectorAll('#nav-body .card').length")
    assert cards > 1
    browser.screenshot(tmp_path / "navigator-cards.png")
    assert not browser.errors()


def test_blind_actions_are_highlighted(browser, report_file, tmp_path):
    from replay import replay

    result = replay(SAMPLE, "truncate-500")
    flagged = [r.request_index for r in result.records if r.blind_actions]
    assert flagged, "the sample run has blind actions under truncate-500"
    _load(browser, report_file.as_uri() + f"#strategy=truncate-500&request={flagged[0]}")
    assert browser.evaluate("document.querySelectorAll('#nav-blind .blind').length") > 0
    assert browser.evaluate("document.querySelectorAll('#nav-body mark').length") > 0
    browser.screenshot(tmp_path / "blind.png")


def test_a_subagents_prompts_are_a_line_of_their_own(browser, tmp_path):
    """Prompt sizes are drawn per thread: a subagent's requests, between the main thread's,
    are not joined to them (a zigzag between two prompts that never changed that way)."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    import gen

    from replay.report import html_report

    sub = [gen.Turn(f"look {i}", [gen.Call("grep", {"pattern": f"p{i}"}, "hit\n" * 40)])
           for i in range(3)] + [gen.Turn("found it")]
    turns = [
        gen.Turn("start", [gen.Call("read_file", {"path": "a.py"}, gen.filler(3000, 1))]),
        gen.Turn("delegate", [gen.Call("task", {"prompt": "find"}, "done", subagent=sub)]),
        gen.Turn("finish"),
    ]
    path = tmp_path / "threads.html"
    path.write_text(html_report(gen.build_session(turns, provider="anthropic"),
                                "baseline,sliding-10", breakeven=False), encoding="utf-8")
    _load(browser, path.as_uri())
    lines = browser.evaluate("document.querySelectorAll('#chart-cost svg .mark-line path')"
                             ".length")
    prompt_lines = browser.evaluate(
        "document.querySelectorAll('#chart-prompt svg .mark-line path').length")
    assert lines == 2  # one cumulative cost per strategy
    assert prompt_lines == 2 * 2 * 2  # strategies × threads × (prompt, cached)
    assert not browser.errors()


def test_bidirectional_marks_in_log_text_are_shown_not_obeyed(browser, tmp_path):
    """A U+202E in a message would show the text after it reversed (`txt.exe` as `exe.txt`):
    the page writes such marks as `\\u202e`, as the terminal output does."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    import gen

    from replay.report import html_report

    sneaky = "open invoice_\u202etxt.exe please"
    turns = [
        gen.Turn(sneaky, [gen.Call("read_file", {"path": "a\u2066.py"}, "x = 1\u202c\n")]),
        gen.Turn("done"),
    ]
    path = tmp_path / "bidi.html"
    path.write_text(html_report(gen.build_session(turns, provider="anthropic"), "baseline",
                                breakeven=False), encoding="utf-8")
    _load(browser, path.as_uri() + "#strategy=baseline&request=2")
    # Unchanged items are collapsed: their text is in the page, hidden until clicked.
    shown = browser.evaluate("document.getElementById('nav-body').textContent")
    assert "open invoice_\\u202etxt.exe please" in shown
    assert "x = 1\\u202c" in shown
    assert not {"\u202e", "\u2066", "\u202c"} & set(shown)
    # The data behind the page keeps the text as logged.
    assert browser.evaluate("JSON.parse(document.getElementById('replay-data').textContent)"
                            ".texts.some(t => t.includes('\u202e'))")
    assert not browser.errors()


def test_context_the_log_lacks_is_not_shown_as_added_by_the_strategy(browser, tmp_path):
    """An estimated stand-in for context the log does not hold is in the view and in no
    history: the diff titles it *not in the log* and says the strategy did not add it, and
    `baseline`, which sends everything, shows nothing removed."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from test_adapters_common import VALID

    from replay.report import html_report

    log = tmp_path / "rollout.jsonl"
    log.write_text(VALID["codex"](), encoding="utf-8")
    path = tmp_path / "estimated.html"
    path.write_text(html_report(log, "baseline", breakeven=False), encoding="utf-8")
    _load(browser, path.as_uri() + "#strategy=baseline&request=1")
    entries = browser.evaluate(
        "[...document.querySelectorAll('#nav-body .entry')].map(e => [e.className,"
        " e.querySelector('.head').textContent])"
    )
    estimated = [head for cls, head in entries if cls == "entry estimated"]
    assert len(estimated) == 1 and "(not in the log)" in estimated[0], entries
    assert "not added by the strategy" in estimated[0]
    assert not [cls for cls, _ in entries if cls in ("entry removed", "entry added")], entries
    assert not browser.errors()


def test_messages_a_logged_compaction_re_sent_are_not_shown_as_added_by_recorded(
    browser, tmp_path
):
    """Codex's compaction re-sends the initial context after its summary
    (`compacted_history`): `recorded`, which applies the log's compaction, sends it, though no
    history holds it. The diff titles it as the compaction's, not as the strategy's addition."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from test_adapters_codex import _item, _message, _tokens, _write, codex_lines

    from replay.report import html_report

    lines = codex_lines() + [
        _message("03.000", "user", "Now count them."),
        _item("03.001", {"type": "user_message", "message": "Now count them."}, "event_msg"),
        _message("03.500", "assistant", "Counting."),
        _tokens("03.600", 1400, 1024, 5, 3900),
        _item("04.000", {"message": "", "replacement_history": [
            {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}
            for role, text in (("user", "List the files."),
                               ("developer", "<permissions instructions>new"),
                               ("user", "Now count them."))
        ]}, "compacted"),
        _tokens("04.100", 0, 0, 0, 3900),  # the context estimate
        _message("05.000", "assistant", "Two."),
        _tokens("05.100", 600, 0, 2, 4500),
    ]
    log = _write(tmp_path, lines)
    path = tmp_path / "rebuilt.html"
    path.write_text(html_report(log, "recorded", breakeven=False), encoding="utf-8")
    _load(browser, path.as_uri() + "#strategy=recorded&request=3")
    entries = browser.evaluate(
        "[...document.querySelectorAll('#nav-body .entry')].map(e => [e.className,"
        " e.querySelector('.head').textContent, e.textContent])"
    )
    rebuilt = [head for cls, head, text in entries if "<permissions instructions>new" in text]
    assert rebuilt and all("re-sent by the log's own compaction" in h for h in rebuilt), entries
    assert not [h for _, h, _ in entries if "added by the strategy" in h
                and "not added" not in h], entries
    assert not browser.errors()
