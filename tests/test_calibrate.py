"""`replay calibrate`: the tokenizer factor measured from recorded usage.

Synthetic logs are billed by a known rule (factor × tiktoken count of the appended items, plus
framing per message and per tool call), so the calibration must give that rule back."""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from replay._data import data_dir
from replay.cli._main import cli, load_commands
from replay.log import (
    AssistantMessage,
    Compaction,
    RequestMarker,
    Session,
    SessionHeader,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResult,
    Usage,
    UserMessage,
    write_log,
)
from replay.strategies import Block
from replay.tokens import (
    TokenCounter,
    calibrate,
    calibration_pairs,
    family_for,
    fit_family,
    tokenizer_file,
    use_tokenizers,
)

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT.parent / "shared" / "samples"
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
WORDS = " ".join([
    "cache prefix token request thread model const function return value import json path",
    "the of and to is in for on with as by at from error test run build src lib index 0 1 42",
    "{ } ( ) [ ] ; : => -> == != <= >= += // # ' \" \\n café naïve 東京 😀",
]).split()
"""Words of the synthetic texts: prose, code, numbers, punctuation and non-ASCII."""


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


class _Biller:
    """Bills a synthetic log by a known rule: prompt(n+1) = prompt(n) + round(factor × tiktoken
    tokens appended) + per_message × messages + per_call × tool calls (+ noise, + outliers)."""

    def __init__(self, model: str, factor: float, per_message: int, per_call: int,
                 noise: float, rng: random.Random) -> None:
        self.counter = TokenCounter(model, factor=1.0)
        self.factor, self.per_message, self.per_call = factor, per_message, per_call
        self.noise, self.rng = noise, rng
        self.prompt = 30_000  # the hidden head: system prompt and tools, never logged

    def grow(self, texts: list[str], messages: int, calls: int, extra: int = 0) -> Usage:
        tokens = sum(len(self.counter.raw_tokens(t)) for t in texts)
        content = self.factor * tokens * (1 + self.rng.uniform(-self.noise, self.noise))
        self.prompt += round(content) + self.per_message * messages + self.per_call * calls + extra
        return Usage(cache_read_tokens=self.prompt - 50, input_tokens=50, output_tokens=10)


def synthetic_session(
    factor: float,
    *,
    per_message: int = 4,
    per_call: int = 12,
    rounds: int = 40,
    noise: float = 0.0,
    outliers: int = 0,
    exclusions: bool = False,
    model: str = "claude-sonnet-4-6",
    seed: int = 0,
) -> Session:
    """A Claude log of `rounds` tool rounds (some with two calls, some followed by a user turn),
    billed by `_Biller`. `outliers` rounds carry 600 tokens the log does not hold; with
    `exclusions`, one pair each has a compaction, an injected message, a thinking block and a
    missing usage (they must be left out, not fitted)."""
    rng = random.Random(seed)
    bill = _Biller(model, factor, per_message, per_call, noise, rng)
    header = SessionHeader(ts=T0, agent="test", provider="anthropic", model=model)
    ts = T0
    events: list = [UserMessage(ts=ts, text=_text(rng, 20, 60))]
    events.append(RequestMarker(ts=ts, request_id="r0", usage=bill.grow([], 0, 0)))
    # Even rounds only: no two odd pairs are adjacent (each is left out for its own reason).
    odd = rng.sample(range(2, rounds, 2), outliers + (4 if exclusions else 0))
    broken = dict(zip(odd[outliers:], ("compaction", "injected", "thinking", "no-usage"),
                      strict=False))
    for n in range(1, rounds + 1):
        ts += timedelta(seconds=20)
        calls = [ToolCallBlock(id=f"c{n}.{k}", name="Read", arguments={"path": _text(rng, 1, 4)})
                 for k in range(1 if n % 3 else 2)]
        blocks = [TextBlock(text=_text(rng, 5, 40)), *calls]
        if broken.get(n) == "thinking":
            blocks.insert(0, ThinkingBlock(thinking="", signature="sig", estimated_tokens=80))
        events.append(AssistantMessage(ts=ts, blocks=blocks, request_id=f"r{n - 1}"))
        texts = [blocks[-len(calls) - 1].text] + [
            Block("tool_call", name=c.name, arguments=c.arguments).rendered() for c in calls
        ]
        for c in calls:
            output = _text(rng, 30, 900)
            events.append(ToolResult(ts=ts, call_id=c.id, tool_name="Read", output=output))
            texts.append(output)
        messages = 2  # the response, and the user message holding the results
        if n % 5 == 0 or broken.get(n) == "injected":
            user = UserMessage(ts=ts, text=_text(rng, 10, 80), injected=broken.get(n) == "injected")
            events.append(user)
            texts.append(user.text)
            messages += 1
        if broken.get(n) == "compaction":
            events.append(Compaction(ts=ts, summary="summary"))
        extra = 600 if n in odd[:outliers] else 0
        usage = bill.grow(texts, messages, len(calls), extra)
        events.append(RequestMarker(ts=ts, request_id=f"r{n}",
                                    usage=None if broken.get(n) == "no-usage" else usage))
    return Session(header=header, events=events)


@settings(max_examples=12)
@given(factor=st.floats(0.8, 2.0))
def test_a_known_factor_is_recovered(factor: float) -> None:
    (c,) = calibrate([synthetic_session(factor)], resamples=200)
    assert c.family == "claude" and c.pairs == 40 and c.trimmed == 0
    assert c.factor is not None
    assert c.factor.value == pytest.approx(factor, abs=0.005)
    assert c.factor.low <= c.factor.value <= c.factor.high
    assert c.framing is not None
    assert c.framing.factor.value == pytest.approx(factor, abs=0.01)


@pytest.mark.parametrize(("factor", "per_message", "per_call"), [(1.1, 11, 58), (1.7, 3, 30)])
def test_framing_is_told_apart_from_the_factor(factor, per_message, per_call) -> None:
    (c,) = calibrate([synthetic_session(factor, per_message=per_message, per_call=per_call,
                                        rounds=80)], resamples=200)
    fit = c.framing
    assert fit is not None and fit.per_tool_call is not None
    assert fit.factor.value == pytest.approx(factor, abs=0.01)
    assert fit.per_message.value == pytest.approx(per_message, abs=2)
    assert fit.per_tool_call.value == pytest.approx(per_call, abs=3)
    assert fit.per_tool_call.low <= per_call <= fit.per_tool_call.high
    # With the documented framing (4 + 12) assumed, the extra framing inflates the factor.
    assert c.factor.value > factor + 0.005


def test_noise_and_unlogged_context_are_trimmed_not_fitted() -> None:
    session = synthetic_session(1.3, rounds=120, noise=0.03, outliers=6, seed=3)
    (c,) = calibrate([session], resamples=300)
    assert c.trimmed >= 6
    assert c.factor.low <= 1.3 <= c.factor.high
    assert c.factor.value == pytest.approx(1.3, abs=0.02)
    q1, q2, q3 = c.quartiles
    assert q1 < q2 < q3 and q3 - q1 < 0.2


def test_pairs_that_are_not_only_logged_text_are_left_out() -> None:
    found = calibration_pairs(synthetic_session(1.2, exclusions=True))
    assert found.excluded == {
        "compaction": 1,
        "injected or reconstructed context": 1,
        "thinking block (size not in the log)": 1,
        "no usage on one of the two requests": 2,  # the pair before it and the pair after it
    }
    assert len(found.pairs) == 40 - 5
    (c,) = calibrate([synthetic_session(1.2, exclusions=True)], resamples=100)
    assert c.candidates == 40 and c.pairs == 35
    assert c.factor.value == pytest.approx(1.2, abs=0.005)


def test_a_prompt_that_did_not_grow_is_left_out() -> None:
    """A pair whose later prompt is billed the same as the earlier one (delta 0) measures no
    growth: it is left out as "prompt did not grow", not fitted as a ratio of 0."""
    session = synthetic_session(1.2, rounds=10)
    markers = [e for e in session.events if isinstance(e, RequestMarker)]
    markers[4].usage = markers[3].usage.model_copy()
    found = calibration_pairs(session)
    assert found.excluded == {"prompt did not grow": 1}
    assert len(found.pairs) == 9 and all(p.delta > 0 for p in found.pairs)


def test_a_response_the_harness_never_sent_back_is_not_counted() -> None:
    """An aborted response (`in_context: false`) was billed but is no part of the next prompt:
    its text adds nothing to the pair's appended tokens or messages, and its thinking does not
    exclude the pair."""
    session = synthetic_session(1.2, rounds=10)
    plain = calibration_pairs(session).pairs
    at = next(
        n
        for n, e in enumerate(session.events)
        if isinstance(e, RequestMarker) and e.request_id == "r3"
    )
    aborted = AssistantMessage(
        ts=session.events[at].ts,
        blocks=[
            ThinkingBlock(thinking="", signature="sig", estimated_tokens=80),
            TextBlock(text="an answer cut short " * 20),
        ],
        request_id="r3",
        in_context=False,
    )
    session.events.insert(at + 1, aborted)
    assert calibration_pairs(session).pairs == plain


def test_model_switch_and_families_are_kept_apart() -> None:
    a = synthetic_session(1.2, model="claude-sonnet-4-6", rounds=20)
    b = synthetic_session(1.6, model="claude-opus-4-8", rounds=20, seed=1)
    by_family = {c.family: c for c in calibrate([a, b], resamples=100)}
    assert by_family["claude"].factor.value == pytest.approx(1.2, abs=0.005)
    assert by_family["claude-new-tokenizer"].factor.value == pytest.approx(1.6, abs=0.005)
    assert by_family["claude-new-tokenizer"].models == ("claude-opus-4-8",)
    markers = [e for e in a.events if isinstance(e, RequestMarker)]
    markers[7].model = "claude-haiku-4-5"  # same family, another model: not comparable
    found = calibration_pairs(a)
    assert found.excluded["model switch"] == 2


def test_too_few_pairs_give_no_framing_fit_and_no_row_without_pairs() -> None:
    (c,) = calibrate([synthetic_session(1.2, rounds=5)], resamples=50)
    assert c.pairs == 5 and c.factor is not None and c.framing is None
    session = synthetic_session(1.2, rounds=3)
    for e in session.events:
        if isinstance(e, RequestMarker):
            e.usage = None
    assert calibrate([session]) == []  # no request with usage: no family to report


def test_tokenizer_rows_and_user_file(tmp_path: Path) -> None:
    (c,) = calibrate([synthetic_session(1.234)], resamples=100)
    row = c.tokenizer_row("2026-11-29", "synthetic")
    assert row["family"] == "claude" and row["estimated"] is True
    assert row["factor"] == round(c.factor.value, 3)
    assert "2026-11-29" in row["measured"] and "40 pairs" in row["measured"]
    document = tokenizer_file([c], "2026-11-29")
    (full,) = document["families"]
    assert full["pattern"] == "^claude-" and full["factor"] == row["factor"]
    # Nothing of the built-in measure is left beside the new one.
    assert full["measured_factor"] == row["factor"] and "1.199" not in full["source"]
    assert full["source"].startswith("Claude tokenizer is private")
    assert f"o200k_base x {row['factor']} measured by replay calibrate on 2026-11-29" in (
        full["source"])
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(document))
    try:
        use_tokenizers(path)
        assert family_for("claude-sonnet-4-6").factor == row["factor"]
        assert family_for("claude-opus-4-8").family == "claude-new-tokenizer"  # built-in rows
        assert family_for("gpt-5").factor == 1.0
    finally:
        use_tokenizers(None)
    assert family_for("claude-sonnet-4-6").factor != row["factor"]


def test_cli_json_table_and_tokenizer_file(tmp_path: Path) -> None:
    load_commands()
    log = tmp_path / "billed.jsonl"
    write_log(synthetic_session(1.42), log)
    runner = CliRunner()
    result = runner.invoke(cli, ["calibrate", str(log), "--format", "json", "--date", "2026-11-29"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    (family,) = document["families"]
    assert family["family"] == "claude" and family["pairs"] == 40
    assert family["factor"]["value"] == pytest.approx(1.42, abs=0.005)
    assert document["tokenizers"][0]["factor"] == pytest.approx(1.42, abs=0.005)

    mine = tmp_path / "mine.json"
    result = runner.invoke(cli, ["calibrate", str(log), "--date", "2026-11-29",
                                 "--write-tokenizers", str(mine)])
    assert result.exit_code == 0, result.output
    assert "claude" in result.output and "40 / 40" in result.output
    rows = json.loads(result.output.split("rows for pricing/tokenizers.json")[1].split("\n", 1)[1])
    assert rows[0]["family"] == "claude" and rows[0]["factor"] == pytest.approx(1.42, abs=0.005)
    assert json.loads(mine.read_text())["families"][0]["factor"] == rows[0]["factor"]

    # The same log twice is read once, and a log without usage is named, not counted.
    run42 = ROOT / "logs" / "run42.jsonl"
    result = runner.invoke(cli, ["calibrate", str(log), str(log), str(run42), "--format",
                                 "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["families"][0]["pairs"] == 40
    assert f"{log}: given twice; read once" in result.stderr
    assert f"{run42}: no recorded usage in this log; skipped" in result.stderr
    # -q: nothing but the result (the warnings were printed)
    quiet = runner.invoke(cli, ["calibrate", str(log), str(log), str(run42), "--format",
                                "json", "-q"])
    assert quiet.exit_code == 0 and quiet.stderr == "" and quiet.stdout == result.stdout


def test_writing_tokenizers_onto_an_earlier_file_keeps_the_families_not_measured(
    tmp_path: Path,
) -> None:
    """Calibrating Claude logs into the file that holds a Gemini calibration (the file in force,
    `REPLAY_TOKENIZERS=mine.json`) replaced the whole file: the Gemini row was lost. The rows
    of families measured now replace theirs; the others stay, in their order."""
    from replay.tokens._calibrate import tokenizer_rows

    load_commands()
    log = tmp_path / "billed.jsonl"
    write_log(synthetic_session(1.42), log)
    gemini = next(dict(r) for r in tokenizer_rows() if r["family"] == "gemini") | {"factor": 1.1}
    claude = next(dict(r) for r in tokenizer_rows() if r["family"] == "claude") | {"factor": 3.0}
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"families": [gemini, claude]}), encoding="utf-8")
    result = CliRunner().invoke(cli, ["calibrate", str(log), "--date", "2026-11-29",
                                      "--write-tokenizers", str(mine)],
                                env={"REPLAY_TOKENIZERS": str(mine)})
    assert result.exit_code == 0, result.output
    rows = json.loads(mine.read_text())["families"]
    assert [r["family"] for r in rows] == ["claude", "gemini"]
    assert rows[0]["factor"] == pytest.approx(1.42, abs=0.005)
    assert rows[1] == gemini
    # Anything else there is replaced, as before.
    mine.write_text("not json", encoding="utf-8")
    again = CliRunner().invoke(cli, ["calibrate", str(log), "--write-tokenizers", str(mine)])
    assert again.exit_code == 0, again.output
    assert [r["family"] for r in json.loads(mine.read_text())["families"]] == ["claude"]


def test_a_tokenizer_file_with_a_row_that_does_not_load_is_not_written_over(
    tmp_path: Path,
) -> None:
    """A tokenizer file whose hand-written Gemini row lacks its overheads (REPLAY_TOKENIZERS
    refuses it) was taken for no tokenizer file and replaced: the Gemini row was lost without a
    word. It is refused, the file left as it is, exit 2, one line naming the row."""
    load_commands()
    log = tmp_path / "billed.jsonl"
    write_log(synthetic_session(1.42), log)
    mine = tmp_path / "mine.json"
    text = json.dumps({"families": [{"family": "gemini", "pattern": "^gemini-",
                                     "encoding": "o200k_base", "factor": 1.1}]})
    mine.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["calibrate", str(log), "--write-tokenizers", str(mine)])
    assert result.exit_code == 2, result.output
    assert mine.read_text(encoding="utf-8") == text
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {mine}: families[0] lacks message_overhead, "
                           "tool_call_overhead: not written over")


@pytest.mark.parametrize(("factor", "shown"), [(12.0, "12.0"), (0.05, "0.05")])
def test_cli_refuses_to_write_a_tokenizer_file_that_would_not_load(
    tmp_path: Path, factor: float, shown: str
) -> None:
    """A factor measured outside what a tokenizer file may hold (0.1-10) is refused by
    REPLAY_TOKENIZERS: the writer refuses it too, and writes nothing (it wrote a file no
    command could then load)."""
    load_commands()
    log = tmp_path / "billed.jsonl"
    write_log(synthetic_session(factor), log)
    mine = tmp_path / "mine.json"
    result = CliRunner().invoke(cli, ["calibrate", str(log), "--date", "2026-11-29",
                                      "--write-tokenizers", str(mine)])
    assert result.exit_code != 0
    assert not mine.exists()
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {mine}: not written: families[0].factor must be a number "
                           f"from 0.1 to 10, got {shown}")
    assert "claude" in line and "Traceback" not in result.output
    # Without the file, the measure is still shown.
    shown_only = CliRunner().invoke(cli, ["calibrate", str(log), "--format", "json"])
    assert shown_only.exit_code == 0, shown_only.output
    assert json.loads(shown_only.stdout)["families"][0]["factor"]["value"] == pytest.approx(
        factor, rel=0.01)


def test_cli_reads_a_byte_identical_copy_once(tmp_path: Path) -> None:
    """A copied log (a backup, a resumed session's file) would count its pairs twice and
    narrow the interval for nothing."""
    load_commands()
    log = tmp_path / "billed.jsonl"
    write_log(synthetic_session(1.42), log)
    copy = tmp_path / "backup" / "billed.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(log.read_bytes())
    result = CliRunner().invoke(cli, ["calibrate", str(log), str(copy), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["families"][0]["pairs"] == 40
    assert f"{copy}: same bytes as {log}; read once" in result.stderr
    assert json.loads(result.stdout)["read_once"] == [
        {"log": str(copy), "why": f"same bytes as {log}"}
    ]


def test_files_of_one_session_given_apart_are_read_as_one(tmp_path: Path) -> None:
    """`replay calibrate project/*.jsonl`: a resumed file copies the earlier file's records,
    and a transcript reads its subagent files; each file read alone counted them again."""
    from test_batch import _resumed_session, _subagent_session

    from replay.adapters import LeftOut, read_each_once

    first, second, third = _resumed_session(tmp_path / "p", runs=3)
    transcript = _subagent_session(tmp_path / "q")
    agent = tmp_path / "q" / "s-1" / "subagents" / "agent-abc.jsonl"
    logs = read_each_once([third, first, second, agent, transcript])
    assert [(p, len(s.requests())) for p, s in logs.sessions] == [(first, 4), (transcript, 3)]
    assert logs.left_out == [
        LeftOut(third, f"read in the session of {first}"),
        LeftOut(second, f"read in the session of {first}"),
        LeftOut(agent, f"read in the session of {transcript}"),
    ]
    # Paths given as strings (the signature takes them) group alike, and stay strings.
    logs = read_each_once([str(agent), str(transcript)])
    assert [(p, len(s.requests())) for p, s in logs.sessions] == [(str(transcript), 3)]
    assert logs.left_out == [LeftOut(str(agent), f"read in the session of {transcript}")]


def test_a_file_a_folder_given_reads_too_is_read_once(tmp_path: Path) -> None:
    """`replay calibrate LOG DIR` with a copy of LOG in DIR, `DIR DIR/LOG`, or a copied
    folder: the folder reads the file (or the same files) already."""
    from test_batch import _subagent_session

    from replay.adapters import LeftOut, read_each_once

    transcript = _subagent_session(tmp_path / "p")
    folder = transcript.parent
    copy = tmp_path / "backup.jsonl"
    copy.write_bytes(transcript.read_bytes())
    copied_folder = tmp_path / "q"
    shutil.copytree(folder, copied_folder)
    logs = read_each_once([copy, folder, transcript, copied_folder])
    assert [(p, len(s.requests())) for p, s in logs.sessions] == [(folder, 3)]
    assert logs.left_out == [
        LeftOut(copy, f"read in {folder}"),
        LeftOut(transcript, f"read in {folder}"),
        LeftOut(copied_folder, f"same bytes as {folder}"),
    ]
    load_commands()
    result = CliRunner().invoke(cli, ["calibrate", str(copy), str(folder), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert f"warning: {copy}: read in {folder}; read once" in result.stderr
    read_once = json.loads(result.stdout)["read_once"]
    assert read_once == [{"log": str(copy), "why": f"read in {folder}"}]


def test_skipped_lines_and_a_factor_of_few_pairs_are_warned(tmp_path: Path) -> None:
    """A cut log (a capture that stopped) is read leniently, as every command reads it, and
    says so; a factor measured on a handful of pairs has an interval that says little."""
    load_commands()
    log = tmp_path / "billed.jsonl"
    write_log(synthetic_session(1.42, rounds=6), log)
    text = log.read_text(encoding="utf-8")
    log.write_text(text + text.splitlines()[-1][:30] + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["calibrate", str(log), "--format", "json"])
    assert result.exit_code == 0, result.output
    pairs = json.loads(result.stdout)["families"][0]["pairs"]
    assert 0 < pairs < 10
    assert f"warning: {log}: 1 malformed line(s) skipped" in result.stderr
    assert f"claude: measured on {pairs} pair(s) only" in result.stderr
    many = tmp_path / "many.jsonl"
    write_log(synthetic_session(1.42), many)
    result = CliRunner().invoke(cli, ["calibrate", str(many), "--format", "json"])
    assert result.exit_code == 0 and "warning" not in result.stderr, result.stderr


def test_ten_pairs_are_enough_to_measure_without_a_warning(tmp_path: Path) -> None:
    """Below FEW_PAIRS (10) pairs, and not at it."""
    load_commands()
    for rounds, warned in ((9, True), (10, False)):
        log = tmp_path / f"rounds-{rounds}.jsonl"
        write_log(synthetic_session(1.42, rounds=rounds), log)
        result = CliRunner().invoke(cli, ["calibrate", str(log), "--format", "json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["families"][0]["pairs"] == rounds
        assert ("pair(s) only" in result.stderr) is warned, result.stderr


def test_a_public_tokenizer_measured_suggests_no_row(tmp_path: Path) -> None:
    """Its factor is 1 by definition (counted exactly): what it measures is the method's own
    bias, shown in the table, never a row to paste into pricing/tokenizers.json."""
    load_commands()
    log = tmp_path / "openai.jsonl"
    write_log(synthetic_session(1.0, model="gpt-5"), log)
    result = CliRunner().invoke(cli, ["calibrate", str(log), "--format", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [f["pairs"] for f in document["families"]] == [40] and document["tokenizers"] == []
    table = CliRunner().invoke(cli, ["calibrate", str(log)])
    assert table.stdout.endswith(
        "no row for pricing/tokenizers.json: the families measured count exactly\n"
    )
    mine = tmp_path / "mine.json"
    written = CliRunner().invoke(cli, ["calibrate", str(log), "--write-tokenizers", str(mine)])
    assert written.exit_code == 0, written.output
    assert f"warning: {mine}: no family with a private tokenizer was measured" in written.stderr


def test_the_table_says_which_pairs_were_left_out_unless_quiet(tmp_path: Path) -> None:
    load_commands()
    log = tmp_path / "billed.jsonl"
    write_log(synthetic_session(1.2, exclusions=True), log)
    shown = CliRunner().invoke(cli, ["calibrate", str(log)])
    assert shown.exit_code == 0, shown.output
    assert "claude: pairs left out: " in shown.stdout
    quiet = CliRunner().invoke(cli, ["calibrate", str(log), "-q"])
    assert quiet.exit_code == 0, quiet.output
    assert "pairs left out" not in quiet.stdout and "rows for pricing" in quiet.stdout


def test_the_table_is_as_wide_as_the_terminal(tmp_path: Path, monkeypatch) -> None:
    """(A file or a pipe gets 240 columns.)"""
    import io

    from rich.console import Console

    from replay import report

    load_commands()
    log = tmp_path / "billed.jsonl"
    write_log(synthetic_session(1.42), log)
    monkeypatch.setattr(report, "console", lambda **_: Console(width=100, file=io.StringIO()))
    result = CliRunner().invoke(cli, ["calibrate", str(log)])
    assert result.exit_code == 0, result.output
    table = [line for line in result.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and max(len(line) for line in table) <= 100


def test_a_log_without_requests_is_named_and_skipped(tmp_path: Path) -> None:
    load_commands()
    empty, billed = tmp_path / "empty.jsonl", tmp_path / "billed.jsonl"
    empty.write_text(
        (ROOT / "logs" / "run42.jsonl").read_text(encoding="utf-8").splitlines()[0] + "\n",
        encoding="utf-8",
    )
    write_log(synthetic_session(1.42), billed)
    result = CliRunner().invoke(cli, ["calibrate", str(empty), str(billed), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert result.stderr == f"warning: {empty}: no request in this log; skipped\n"


def test_calibrate_reads_standard_input(tmp_path: Path) -> None:
    load_commands()
    log = tmp_path / "billed.jsonl"
    write_log(synthetic_session(1.42), log)
    from_file = CliRunner().invoke(cli, ["calibrate", str(log), "--format", "json"])
    result = CliRunner().invoke(cli, ["calibrate", "-", "-", "--format", "json"],
                                input=log.read_bytes())
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["read_once"] == [{"log": "-", "why": "given twice"}]
    families = json.loads(from_file.stdout)["families"]
    assert [f["by_log"][0]["log"] for f in document["families"]] == ["<stdin>"]
    for family in (*families, *document["families"]):
        del family["by_log"][0]["log"]
    assert document["families"] == families


def test_a_stream_with_the_bytes_of_a_log_given_beside_is_read_once(tmp_path: Path) -> None:
    """`cat LOG | replay calibrate - LOG`, `replay calibrate <(cat LOG) LOG`: a stream is hashed
    as it is read (it cannot be read twice), and left out when a file given, or a stream read
    before it, had its bytes; it counted every pair twice."""
    import os

    from replay.adapters import LeftOut, read_each_once

    load_commands()
    log = tmp_path / "billed.jsonl"
    write_log(synthetic_session(1.42), log)
    result = CliRunner().invoke(cli, ["calibrate", "-", str(log), "--format", "json"],
                                input=log.read_bytes())
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["families"][0]["pairs"] == 40
    assert document["read_once"] == [{"log": "-", "why": f"same bytes as {log}"}]
    assert f"warning: <stdin>: same bytes as {log}; read once" in result.stderr

    def fifo(name: str) -> Path:
        path = tmp_path / name
        os.mkfifo(path)
        return path

    def feed(path: Path) -> None:
        import threading

        threading.Thread(target=path.write_bytes, args=(log.read_bytes(),), daemon=True).start()

    # A file's bytes are known before anything is read: the streams are the ones left out.
    first, second = fifo("first"), fifo("second")
    feed(first)
    feed(second)
    logs = read_each_once([first, second, log])
    assert [p for p, _ in logs.sessions] == [log]
    assert logs.left_out == [
        LeftOut(first, f"same bytes as {log}"), LeftOut(second, f"same bytes as {log}")
    ]
    third, fourth = fifo("third"), fifo("fourth")
    feed(third)
    feed(fourth)
    logs = read_each_once([third, fourth])
    assert [p for p, _ in logs.sessions] == [third]
    assert logs.left_out == [LeftOut(fourth, f"same bytes as {third}")]


def _pi_chain(turns: int, *, start: int = 0, header_ts: str = "2026-01-02T09:59:59.000Z",
              **header: str) -> list[dict]:
    """A pi session of `turns` prompts, each answered in text, the prompt growing by 60 tokens
    a turn (`start`: the first turn's number, for a fork's own turns)."""
    lines: list[dict] = [{"type": "session", "version": 3, "id": "pi", "timestamp": header_ts,
                          "cwd": "/w", **header}]
    parent = None
    for n in range(turns):
        k, ts = start + n, 1767348000000 + (start + n) * 10_000
        for role, content, extra in (
            ("user", f"Question {k}: " + "tell me more " * 8, {}),
            ("assistant", f"Answer {k}: " + "here is more " * 8,
             {"provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop",
              "usage": {"input": 10, "output": 30, "cacheRead": 100 + 60 * k, "cacheWrite": 0,
                        "cost": {"total": 0.001}}}),
        ):
            eid = f"{k:04d}{role[0]}"
            stamp = ts + (2000 if role == "assistant" else 0)
            lines.append({
                "type": "message", "id": eid, "parentId": parent,
                "timestamp": datetime.fromtimestamp(stamp / 1000, UTC).isoformat(),
                "message": {"role": role, "content": [{"type": "text", "text": content}],
                            "timestamp": stamp, **extra},
            })
            parent = eid
    return lines


def _pi_fork(tmp_path: Path) -> tuple[Path, Path]:
    """A pi session of 4 turns and a fork of it that copies its first 3 turns, then one turn of
    its own: (parent, fork)."""
    parent = tmp_path / "2026-01-02T09-59-59-000Z_pi-1.jsonl"
    parent.write_text("".join(json.dumps(x) + "\n" for x in _pi_chain(4)), encoding="utf-8")
    # Forked at 10:00:25, after 3 turns: copies them, then one turn of its own.
    copied = _pi_chain(3, header_ts="2026-01-02T10:00:25.000Z",
                       parentSession=f"/elsewhere/{parent.name}")
    own = _pi_chain(1, start=3)[1:]
    own[0]["parentId"] = copied[-1]["id"]
    for line in own:
        line["id"] = "f" + line["id"]
    own[1]["parentId"] = own[0]["id"]
    fork = tmp_path / "2026-01-02T10-00-25-000Z_pi-2.jsonl"
    fork.write_text("".join(json.dumps(x) + "\n" for x in copied + own), encoding="utf-8")
    return parent, fork


def test_a_forks_copied_pairs_count_once_when_its_parent_is_given_too(tmp_path: Path) -> None:
    """A forked pi session copies its parent's history: the pairs that end at a request it
    copied (`copied_from_parent`) are the parent's, counted there only (as batch counts the
    copied requests in the parent's rows only)."""
    load_commands()
    parent, fork = _pi_fork(tmp_path)

    def pairs(*logs: Path) -> tuple[dict, str]:
        result = CliRunner().invoke(cli, ["calibrate", *map(str, logs), "--format", "json"])
        assert result.exit_code == 0, result.output
        (family,) = json.loads(result.stdout)["families"]
        return family, result.stderr

    assert pairs(parent)[0]["pairs"] == 3
    assert pairs(fork)[0]["pairs"] == 3  # alone, its copies are the only record of those calls
    both, warned = pairs(parent, fork)
    assert both["pairs"] == 4
    assert both["excluded"]["request copied from a parent log given too"] == 2
    assert f"{fork}: 3 request(s) copied from {parent.name}, given too" in warned


def test_cli_says_when_nothing_can_be_measured(tmp_path: Path) -> None:
    load_commands()
    run42 = ROOT / "logs" / "run42.jsonl"  # recorded fixture: no usage
    result = CliRunner().invoke(cli, ["calibrate", str(run42)])
    assert result.exit_code != 0
    assert "no pair of consecutive requests with recorded usage" in result.output
    assert "no recorded usage in this log; skipped" in result.output
    result = CliRunner().invoke(cli, ["calibrate", str(tmp_path / "missing.jsonl")])
    assert result.exit_code != 0


@pytest.mark.parametrize("date", ["notadate", "2026-13-01", "29/11/2026"])
def test_cli_refuses_a_date_that_is_not_a_date(date: str) -> None:
    load_commands()
    run42 = ROOT / "logs" / "run42.jsonl"
    result = CliRunner().invoke(cli, ["calibrate", str(run42), "--date", date])
    assert result.exit_code == 2
    assert f"--date {date!r}: expected a date as YYYY-MM-DD" in result.output


CLAUDE_CODE = [
    "ShamsiievDmytro__entire-bmad__entire-checkpoints-v1__91_03598e5336_9_full.jsonl",
    "blackgirlbytes__entire-token-costs-benchmark-tests__entire-checkpoints-v1__cb_190e483db3_0"
    "_full.jsonl",
    "blackgirlbytes__planetfall-seed-signalkit__entire-checkpoints-v1__39_648afe5b7f_4_full.jsonl",
    "d-kimuson__claude-code-viewer__mock-global-claude-dir_projects_sample-project_5c0375b4.jsonl",
    "d-kimuson__claude-code-viewer__mock-global-claude-dir_projects_sample-project_fe5e1c67.jsonl",
]


needs_samples = pytest.mark.skipif(not SAMPLES.is_dir(),
                                   reason=f"real agent logs not found at {SAMPLES}")


@pytest.fixture(scope="module")
def claude_code() -> dict:
    """The calibration of the Claude Code samples, by family."""
    from replay import load

    sessions = [load(SAMPLES / "claude_code" / name) for name in CLAUDE_CODE]
    return {c.family: c for c in calibrate(sessions)}


@needs_samples
def test_claude_code_samples(claude_code) -> None:
    old, new = claude_code["claude"], claude_code["claude-new-tokenizer"]
    assert old.models == ("claude-sonnet-4-20250514", "claude-sonnet-4-6")
    assert new.models == ("claude-opus-4-8",)
    assert old.pairs >= 150 and new.pairs >= 20
    assert 1.05 < old.factor.value < 1.4
    # The Opus 4.7+ tokenizer yields more tokens than the earlier one (Anthropic: up to ~1.35x).
    assert new.factor.low > old.factor.high
    # Claude Code 2.1 logs thinking without its text: those pairs cannot be measured.
    assert new.excluded["thinking block (size not in the log)"] > new.pairs


@needs_samples
def test_the_table_holds_what_the_samples_measure(claude_code) -> None:
    from replay.tokens import tokenizer_rows

    rows = {r["family"]: r for r in tokenizer_rows()}
    for c in (claude_code["claude"], claude_code["claude-new-tokenizer"]):
        row = rows[c.family]
        assert row["measured_factor"] == round(c.factor.value, 3)
        text = row["measured"]
        assert "2026-11-29" in text and f"{c.pairs} pairs" in text
        assert f"{c.factor.low:.3f}-{c.factor.high:.3f}" in text  # the interval
        assert "/".join(f"{q:.2f}" for q in c.quartiles) in text  # the spread
        assert row["estimated"] is True
    assert "no Gemini log" in rows["gemini"]["measured"]


@needs_samples
def test_the_method_finds_an_exact_tokenizer_exact() -> None:
    """On Codex logs (OpenAI: tiktoken is the provider's tokenizer) the fitted factor is 1 and
    the fitted framing per message the documented 3 tokens."""
    from replay import load

    logs = sorted((SAMPLES / "codex").glob("*_full.jsonl"))
    (c,) = [c for c in calibrate([load(p) for p in logs]) if c.family == "gpt-4o-and-later"]
    assert c.framing is not None
    assert c.framing.factor.value == pytest.approx(1.0, abs=0.01)
    assert c.framing.factor.low <= 1.0 <= c.framing.factor.high + 0.005
    assert c.framing.per_message.value == pytest.approx(3, abs=1.5)


def test_cli_nothing_to_measure_is_a_user_error() -> None:
    load_commands()
    result = CliRunner().invoke(cli, ["calibrate", str(ROOT / "logs" / "run42.jsonl")])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].startswith("error: no pair of consecutive requests")


def test_thinking_rule_is_memoized_by_the_utc_date():
    from replay.tokens._calibrate import _Thinking

    # strips_thinking starts 2025-02-24 (UTC): two requests on the same local date in India,
    # on either side of UTC midnight, get different answers.
    ist = timezone(timedelta(hours=5, minutes=30))
    strips = _Thinking().strips
    assert not strips("anthropic", "claude-haiku-4-5", datetime(2025, 2, 24, 3, tzinfo=ist))
    assert strips("anthropic", "claude-haiku-4-5", datetime(2025, 2, 24, 7, tzinfo=ist))


def test_cli_refuses_one_path_for_the_report_and_the_tokenizer_file(tmp_path: Path) -> None:
    """`-o` and `--write-tokenizers` on one file: the report replaced the tokenizer rows,
    exit 0."""
    load_commands()
    log = tmp_path / "billed.jsonl"
    write_log(synthetic_session(1.42), log)
    both = tmp_path / "both.json"
    result = CliRunner().invoke(cli, ["calibrate", str(log), "--write-tokenizers", str(both),
                                      "-o", str(tmp_path / "." / "both.json")])
    assert result.exit_code == 2
    assert "both name" in result.stderr and not both.exists()
    (tmp_path / "sub").mkdir()  # the same file by another spelling of its path
    result = CliRunner().invoke(cli, ["calibrate", str(log), "--write-tokenizers", str(both),
                                      "-o", str(tmp_path / "sub" / ".." / "both.json")])
    assert result.exit_code == 2
    assert "both name" in result.stderr and not both.exists()


def test_cli_refuses_a_tokenizer_file_in_replay_s_own_data_folder(tmp_path: Path) -> None:
    """`--write-tokenizers pricing/tokenizers.json` replaced the built-in table with the
    measured families alone (every other family gone), exit 0; `-o` there was refused."""
    load_commands()
    log = tmp_path / "billed.jsonl"
    write_log(synthetic_session(1.42), log)
    # A new name in the data folder: nothing shipped is lost if the refusal regresses.
    target = data_dir() / f"not-replay-s-{os.getpid()}.json"
    try:
        result = CliRunner().invoke(cli, ["calibrate", str(log), "--write-tokenizers",
                                          str(target), "-q"])
        assert result.exit_code == 2
        assert result.stderr == (
            f"error: --write-tokenizers {target} is in replay's own data folder ({data_dir()}): "
            "write the result elsewhere\n"
        )
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)


# -- the pairs measured (calibrate mutation pass) --


def _billed_at(prompt: int) -> Usage:
    return Usage(cache_read_tokens=max(prompt - 50, 0), input_tokens=min(prompt, 50),
                 output_tokens=10)


def _log(*gaps: list, model: str = "claude-sonnet-4-6", prompts: list[int] | None = None,
         head: list | None = None) -> Session:
    """A log whose requests are separated by `gaps` (lists of events), the n-th request billed
    `prompts[n]` (default: growing by 100)."""
    prompts = prompts or [1000 + 100 * n for n in range(len(gaps) + 1)]
    events: list = [*(head or []), UserMessage(ts=T0, text="start " + WORDS[0])]
    for n, prompt in enumerate(prompts):
        if n:
            events += gaps[n - 1]
        events.append(RequestMarker(ts=T0 + timedelta(seconds=n), request_id=f"r{n}",
                                    usage=None if prompt is None else _billed_at(prompt)))
    return Session(header=SessionHeader(ts=T0, agent="test", provider="anthropic", model=model),
                   events=events)


def _reply(text: str = "the answer is here", **kwargs) -> AssistantMessage:
    return AssistantMessage(ts=T0, blocks=[TextBlock(text=text)], **kwargs)


def test_a_request_billed_no_prompt_has_no_usage() -> None:
    """A request whose usage bills a prompt of 0 tokens is no measure: both pairs it ends or
    opens are left out as without usage, and its model is not counted as seen."""
    session = _log([_reply()], [_reply()], [_reply()], prompts=[1000, 0, 1200, 1300])
    session.requests()[1].model = "claude-opus-4-5"  # r1: billed nothing
    found = calibration_pairs(session)
    assert found.excluded == {"no usage on one of the two requests": 2}
    assert len(found.pairs) == 1
    assert found.models == {"claude": {"claude-sonnet-4-6"}}


def test_a_response_never_sent_back_still_answers_the_request() -> None:
    """A gap holding an aborted response (`in_context: false`) and the user's next message is
    a pair: the response was logged, and only the message was appended."""
    message = UserMessage(ts=T0, text="no, do it the other way")
    found = calibration_pairs(_log([_reply(in_context=False), message]))
    (pair,) = found.pairs
    assert (pair.messages, pair.tool_calls) == (1, 0)
    assert pair.tokens == len(TokenCounter("claude-sonnet-4-6", factor=1.0).raw_tokens(
        message.text))


def test_a_request_without_a_logged_response_is_left_out() -> None:
    """Two requests with only a user message between them (the response was not logged)."""
    found = calibration_pairs(_log([UserMessage(ts=T0, text="try again")]))
    assert found.excluded == {"response not logged": 1} and found.pairs == []


def test_a_pair_must_append_one_token_at_least() -> None:
    """A pair whose appended items count no token measures only framing: left out as
    "nothing appended"; one token is enough."""
    empty = calibration_pairs(_log([_reply("")]))
    assert empty.excluded == {"nothing appended": 1}
    one = calibration_pairs(_log([_reply("ok")]))
    assert [p.tokens for p in one.pairs] == [1]


def test_reconstructed_messages_and_results_are_left_out() -> None:
    """A user message or tool result the adapter reconstructed (`estimated`, `estimated_text`)
    is not logged text: its pair is left out as injected or reconstructed."""
    call = ToolCallBlock(id="c1", name="Read", arguments={"path": "a.py"})
    gaps = [
        [_reply(), UserMessage(ts=T0, text="[image]", estimated=True)],
        [_reply(), UserMessage(ts=T0, text="[pdf]", estimated_text=True)],
        [AssistantMessage(ts=T0, blocks=[call]),
         ToolResult(ts=T0, call_id="c1", tool_name="Read", output="[image]", estimated=True)],
        [AssistantMessage(ts=T0, blocks=[call]),
         ToolResult(ts=T0, call_id="c1", tool_name="Read", output="[pdf]",
                    estimated_text=True)],
    ]
    found = calibration_pairs(_log(*gaps))
    assert found.excluded == {"injected or reconstructed context": 4} and found.pairs == []


def test_thinking_in_a_response_never_sent_back_strips_nothing() -> None:
    """On a model that drops earlier thinking at a new user turn, only thinking the harness
    sent back makes a later user turn's pair unmeasurable."""
    aborted = AssistantMessage(ts=T0, in_context=False, blocks=[
        ThinkingBlock(thinking="", signature="sig", estimated_tokens=80)])
    turn = UserMessage(ts=T0, text="and now the tests")
    session = _log([aborted, _reply()], [_reply(), turn], model="claude-haiku-4-5")
    found = calibration_pairs(session)
    assert found.excluded == {} and len(found.pairs) == 2


def test_a_thread_s_requests_are_counted_with_its_model() -> None:
    """Requests of a subagent that name no model run on the model its `thread` event names
    (their tokenizer family too)."""
    from replay.log import ThreadStart

    sub = "agent-1"
    events = [ThreadStart(ts=T0, thread_id=sub, model="claude-opus-4-8")]
    for n in range(3):
        events += [UserMessage(ts=T0, thread=sub, text=f"look at file {n}"),
                   RequestMarker(ts=T0, thread=sub, request_id=f"s{n}",
                                 usage=_billed_at(1000 + 100 * n)),
                   _reply(thread=sub)]
    session = Session(header=SessionHeader(ts=T0, agent="test", provider="anthropic",
                                           model="claude-sonnet-4-6"), events=events)
    found = calibration_pairs(session)
    assert {(p.model, p.family) for p in found.pairs} == {("claude-opus-4-8",
                                                           "claude-new-tokenizer")}


def test_a_provider_without_cache_rules_strips_no_thinking() -> None:
    """`_Thinking`: a provider the cache rules do not know keeps what it is sent."""
    from replay.tokens._calibrate import _Thinking

    assert _Thinking().strips("no-such-provider", "some-model", T0) is False


def test_the_logs_that_gave_a_family_pairs_are_named() -> None:
    """`CalibrationPairs.logs`: family → labels of the logs with at least one pair."""
    assert calibration_pairs(_log([_reply()]), "a.jsonl").logs == {"claude": {"a.jsonl"}}
    assert calibration_pairs(_log([UserMessage(ts=T0, text="x")]), "b.jsonl").logs == {}


def test_a_pair_s_ratio_leaves_the_documented_framing_out() -> None:
    from replay.tokens._calibrate import CalibrationPair

    pair = CalibrationPair(log="a", thread="main", request_id="r1", model="m", family="claude",
                           delta=136, tokens=100, messages=2, tool_calls=1, framing=20)
    assert pair.ratio == pytest.approx(1.16)


def test_pairs_of_several_logs_add_up_with_their_exclusions() -> None:
    """`CalibrationPairs.extend` adds the other's pairs, exclusions (in all and per family),
    models and logs."""
    first = calibration_pairs(synthetic_session(1.2, rounds=10, exclusions=False), "a")
    second = calibration_pairs(_log([UserMessage(ts=T0, text="x")]), "b")
    first.extend(second)
    assert first.excluded == {"response not logged": 1}
    assert first.excluded_by_family == {"claude": {"response not logged": 1}}
    assert len(first.pairs) == 10 and first.logs == {"claude": {"a"}}
    assert first.models == {"claude": {"claude-sonnet-4-6"}}


def test_a_family_s_exclusions_are_listed_by_reason_in_name_order() -> None:
    """`fit_family`: the reasons come in one order, whatever order the logs met them in (the
    table and the JSON list them so)."""
    c = fit_family("claude", [], excluded={"thinking": 2, "compaction": 1, "model switch": 3})
    assert list(c.excluded) == ["compaction", "model switch", "thinking"]
    assert c.candidates == 6


def test_a_family_s_exclusions_are_its_own() -> None:
    """`calibrate`: each family counts the pairs left out of its own logs only."""
    a = synthetic_session(1.2, rounds=20, exclusions=True)
    b = synthetic_session(1.6, model="claude-opus-4-8", rounds=20, seed=1)
    by_family = {c.family: c for c in calibrate([a, b], resamples=20)}
    assert by_family["claude-new-tokenizer"].excluded == {}
    assert by_family["claude-new-tokenizer"].candidates == 20
    assert sum(by_family["claude"].excluded.values()) == 5


# -- the fit: trimming, framing, per-log factors, the rows written --


def _pairs_at(ratios: list[float], shapes: list[tuple[int, int]] | None = None) -> list:
    """Pairs of 1,000 tokens, no framing, at the given per-pair ratios."""
    from replay.tokens._calibrate import CalibrationPair

    shapes = shapes or [(2, 1)] * len(ratios)
    return [CalibrationPair(log="a", thread="main", request_id=f"r{n}", model="claude-sonnet-4-6",
                            family="claude", delta=round(1000 * r), tokens=1000, messages=m,
                            tool_calls=c, framing=0)
            for n, (r, (m, c)) in enumerate(zip(ratios, shapes, strict=True))]


def test_trimming_keeps_what_is_within_its_bound_and_rounding() -> None:
    """`_trim`: when nearly every pair agrees, the robust deviation is at least 1 % of the
    median (a pair 2 % off at 4 deviations is kept, 5 % off is not); a ratio exactly at the
    bound is kept; ratios that all agree on 0 are all kept."""
    from replay.tokens._calibrate import _trim

    assert _trim(np.array([1.0] * 9 + [1.02]), 4.0).all()
    assert _trim(np.array([1.0] * 9 + [1.05]), 4.0).tolist() == [True] * 9 + [False]
    assert _trim(np.array([1.0] * 9 + [2.0]), 100.0).all()  # |2 - 1| = 100 x 1 %
    assert _trim(np.zeros(5), 4.0).all()


def test_outliers_are_trimmed_at_four_robust_deviations_by_default() -> None:
    """`fit_family` trims per-pair ratios more than 4 robust deviations from the median."""
    c = fit_family("claude", _pairs_at([1.0] * 20 + [1.035]), resamples=20)
    assert c.trimmed == 0
    c = fit_family("claude", _pairs_at([1.0] * 20 + [1.045]), resamples=20)
    assert c.trimmed == 1


def test_the_spread_and_the_logs_are_those_of_the_pairs_kept() -> None:
    """The quartiles and `by_log` are of the pairs the factor is measured on: an outlier
    trimmed moves neither, and a log whose only pair was trimmed gives no factor of its own."""
    pairs = _pairs_at([1.0, 1.1, 1.2, 1.3, 1.4] * 2 + [9.0])
    pairs[-1] = replace(pairs[-1], log="b")
    c = fit_family("claude", pairs, resamples=20)
    assert c.trimmed == 1
    assert c.quartiles == pytest.approx((1.1, 1.2, 1.3))  # 1.35 with the outlier
    assert [(f.log, f.pairs) for f in c.by_log] == [("a", 10)]


def test_framing_per_call_needs_ten_pairs_off_the_commonest_shape_and_ten_pairs_fit() -> None:
    """`_framing_fit`: the framing is fitted from 10 pairs on; per tool call apart from per
    message when at least 10 pairs differ from the commonest (messages, tool calls) shape, and
    the two are not in the same proportion in every pair (else per message only)."""
    from replay.tokens._calibrate import _framing_fit

    def fit(shapes: list[tuple[int, int]]):
        messages = np.array([m for m, _ in shapes], dtype=float)
        calls = np.array([c for _, c in shapes], dtype=float)
        tokens = np.arange(300, 300 + 61 * len(shapes), 61, dtype=float)
        delta = np.round(1.2 * tokens) + 5 * messages + 40 * calls
        draws = np.random.default_rng(0).integers(0, len(shapes), size=(50, len(shapes)))
        return _framing_fit(delta, tokens, messages, calls, draws)

    varied = fit([(2, 1)] * 20 + [(3, 1)] * 5 + [(2, 2)] * 5)
    assert varied is not None and varied.per_tool_call is not None
    assert varied.per_tool_call.value == pytest.approx(40, abs=0.5)
    assert fit([(2, 1)] * 20 + [(3, 1)] * 4 + [(2, 2)] * 5).per_tool_call is None
    collinear = fit([(2, 1)] * 20 + [(4, 2)] * 10)
    assert collinear is not None and collinear.per_tool_call is None
    assert fit([(2, 1)] * 10) is not None
    assert fit([(2, 1)] * 9) is None


def test_a_framing_split_most_resamples_cannot_tell_is_not_reported() -> None:
    """Framing per tool call apart from per message is reported only when at least half the
    bootstrap resamples can fit it: here only two pairs together tell the three unknowns
    apart (every other pair is a multiple of the same row), so it is per message only."""
    from replay.tokens._calibrate import _framing_fit

    rows = [(2000, 2, 1)] * 20 + [(4000, 4, 2)] * 10 + [(3000, 2, 1), (3000, 3, 1)]
    tokens, messages, calls = (np.array(col, dtype=float) for col in zip(*rows, strict=True))
    delta = np.round(1.2 * tokens) + 5 * messages + 40 * calls
    draws = np.random.default_rng(0).integers(0, len(rows), size=(200, len(rows)))
    both = sum({30, 31} <= set(d.tolist()) for d in draws)
    assert both < len(draws) // 2  # the resamples holding both pairs
    fit = _framing_fit(delta, tokens, messages, calls, draws)
    assert fit is not None and fit.per_tool_call is None


def test_a_family_fitted_from_its_pairs_alone_names_their_models() -> None:
    """`fit_family` without `models`: the models of its pairs."""
    assert fit_family("claude", _pairs_at([1.0] * 3), resamples=10).models == (
        "claude-sonnet-4-6",)


def test_each_log_s_factor_is_its_ratio_of_sums() -> None:
    """`by_log`: the factor of each log alone is Σ content / Σ tokens over its pairs, like the
    family's (a mean of per-pair ratios weighs a small pair as much as a large one)."""
    from replay.tokens._calibrate import CalibrationPair

    pairs = [CalibrationPair(log=log, thread="main", request_id=f"r{n}",
                             model="claude-sonnet-4-6", family="claude", delta=delta,
                             tokens=tokens, messages=1, tool_calls=0, framing=0)
             for n, (log, delta, tokens) in enumerate([("a", 1200, 1000), ("a", 5200, 4000),
                                                       ("b", 1250, 1000)])]
    c = fit_family("claude", pairs, resamples=10)
    assert c.trimmed == 0
    assert [(f.log, f.pairs) for f in c.by_log] == [("a", 2), ("b", 1)]
    assert [f.factor for f in c.by_log] == pytest.approx([1.28, 1.25])  # a: 6,400 / 5,000
    assert "per-log factors 1.25-1.28" in c.measured_text("2026-11-29", "a, b")
    alone = fit_family("claude", pairs[:2], resamples=10)
    assert "per-log" not in alone.measured_text("2026-11-29", "a")


def test_an_unmeasured_family_keeps_the_documented_factor() -> None:
    """A family with no usable pair gives the row of the table in force, marked not measured."""
    from replay.tokens._counter import family_named

    row = fit_family("claude", []).tokenizer_row("2026-11-29")
    assert row["factor"] == family_named("claude").factor != 1.0
    assert row["measured"].startswith("not measured (2026-11-29)")


def test_up_to_six_logs_are_named() -> None:
    """`logs_label`: the logs a family was measured on, by name up to six, else their count."""
    from replay.tokens._calibrate import logs_label

    def label(logs: int) -> str:
        pairs = [replace(p, log=f"log{n % logs}") for n, p in enumerate(_pairs_at([1.0] * 7))]
        return logs_label(fit_family("claude", pairs, resamples=10))

    assert label(6) == "log0, log1, log2, log3, log4, log5"
    assert label(7) == "7 logs"


def test_a_public_tokenizer_s_family_gets_no_tokenizer_row() -> None:
    """Families whose tokenizer is public (OpenAI) are measured as a check of the method and
    left out of the tokenizer file."""
    pairs = [replace(p, family="gpt-4o-and-later", model="gpt-5") for p in _pairs_at([1.0] * 5)]
    c = fit_family("gpt-4o-and-later", pairs, resamples=10)
    assert c.factor is not None
    assert tokenizer_file([c], "2026-11-29")["families"] == []


def test_an_interval_reaching_below_zero_is_written_with_to() -> None:
    """`Estimate.text`: "low-high" unless low is negative ("-27.4-55.4" reads as two
    negatives); a low of exactly 0 keeps the dash."""
    from replay.tokens._calibrate import Estimate

    assert Estimate(1.0, 0.0, 2.0).text(1) == "1.0 (0.0-2.0)"
    assert Estimate(1.0, -0.5, 2.0).text(1) == "1.0 (-0.5 to 2.0)"


def test_the_measured_text_writes_a_range_reaching_below_zero_with_to() -> None:
    """The `measured` text of a tokenizer row writes its interval and its per-log range as
    `Estimate.text` does: "CI -0.100-1.200" read as two negatives."""
    from replay.tokens._calibrate import Estimate, LogFactor

    c = fit_family("claude", _pairs_at([1.0, 1.1, 1.2]), resamples=10)
    c = replace(c, factor=Estimate(0.5, -0.1, 1.2),
                by_log=(LogFactor("a", 2, -0.25), LogFactor("b", 1, 1.5)))
    text = c.measured_text("2026-11-29", "a, b")
    assert "0.500, bootstrap 95% CI -0.100 to 1.200;" in text
    assert "; per-log factors -0.25 to 1.50" in text
    assert "CI 1.000-" in replace(c, factor=Estimate(1.1, 1.0, 1.2)).measured_text("d", "a")


def test_pairs_of_logs_of_one_family_add_up() -> None:
    """`CalibrationPairs.extend` adds the exclusions of a family both hold (in all and per
    family) and unites their models and logs, keeping the first's."""
    def one(model: str, label: str):
        return calibration_pairs(_log([_reply()], [UserMessage(ts=T0, text="x")], model=model),
                                 label)

    found = one("claude-sonnet-4-6", "a")
    found.extend(one("claude-haiku-4-5", "b"))
    assert found.excluded == {"response not logged": 2}
    assert found.excluded_by_family == {"claude": {"response not logged": 2}}
    assert found.models == {"claude": {"claude-sonnet-4-6", "claude-haiku-4-5"}}
    assert found.logs == {"claude": {"a", "b"}}
    assert [p.log for p in found.pairs] == ["a", "b"]


def test_a_pair_is_labelled_with_its_log_s_file_name_and_its_later_request() -> None:
    """`CalibrationPair.log` is the log's file name (its label by default) and `request_id` the
    id of the later request of the pair."""
    session = _log([_reply()], [_reply()])
    session.path = "/somewhere/logs/a.jsonl"
    found = calibration_pairs(session)
    assert [(p.log, p.request_id) for p in found.pairs] == [("a.jsonl", "r1"), ("a.jsonl", "r2")]


def test_a_request_that_names_its_model_runs_on_it() -> None:
    """The model a request names is its own, whatever its thread's `thread` event names (only
    requests that name none run on the thread's)."""
    from replay.log import ThreadStart

    session = _log([_reply()], head=[ThreadStart(ts=T0, thread_id="main",
                                                 model="claude-opus-4-8")])
    for marker in session.requests():
        marker.model = "claude-sonnet-4-6"
    (pair,) = calibration_pairs(session).pairs
    assert (pair.model, pair.family) == ("claude-sonnet-4-6", "claude")


def _stripping_log(**kwargs) -> Session:
    """r0; a response with thinking (r1, left out for it); a response and a new user turn (r2)
    on a model that strips earlier thinking at a new user turn (Haiku, pricing/cache)."""
    thinking = AssistantMessage(ts=T0, blocks=[
        ThinkingBlock(thinking="", signature="sig", estimated_tokens=80), TextBlock(text="hm")])
    turn = UserMessage(ts=T0, text="and now the tests")
    return _log([thinking], [_reply(), turn], model="claude-haiku-4-5", **kwargs)


def test_thinking_stripped_at_a_new_user_turn_leaves_the_pair_out() -> None:
    """A new user turn on a model that strips earlier thinking shrinks the prompt by a size the
    log does not hold: left out; the provider that served the request decides (a provider
    without cache rules strips nothing)."""
    found = calibration_pairs(_stripping_log())
    assert found.excluded == {"thinking block (size not in the log)": 1,
                              "thinking stripped at a new user turn": 1}
    session = _stripping_log()
    session.header.provider = "no-such-provider"
    for marker in session.requests():
        marker.provider = "anthropic"
    assert calibration_pairs(session).excluded == found.excluded
    for marker in session.requests():
        marker.provider = "no-such-provider"
    assert calibration_pairs(session).excluded == {"thinking block (size not in the log)": 1}


def test_only_a_thread_s_own_thinking_is_stripped_from_it() -> None:
    """Thinking a subagent thread sent back is not in the main thread's prompt: the main
    thread's new user turn strips nothing."""
    sub = AssistantMessage(ts=T0, thread="agent-1", blocks=[
        ThinkingBlock(thinking="", signature="sig", estimated_tokens=80), TextBlock(text="hm")])
    turn = UserMessage(ts=T0, text="and now the tests")
    found = calibration_pairs(_log([sub, _reply()], [_reply(), turn], model="claude-haiku-4-5"))
    assert found.excluded == {} and len(found.pairs) == 2


def test_tool_results_share_a_message_only_when_consecutive() -> None:
    """`CalibrationPair.messages`: a run of tool results is one message; results parted by a
    response are two."""
    def call(n: int) -> AssistantMessage:
        return AssistantMessage(ts=T0, blocks=[ToolCallBlock(id=f"c{n}", name="Read",
                                                             arguments={"path": f"{n}.py"})])

    def result(n: int) -> ToolResult:
        return ToolResult(ts=T0, call_id=f"c{n}", tool_name="Read", output=f"contents of {n}")

    (pair,) = calibration_pairs(_log([call(1), result(1), call(2), result(2)])).pairs
    assert (pair.messages, pair.tool_calls) == (4, 2)
    (pair,) = calibration_pairs(_log([call(1), call(2), result(1), result(2)])).pairs
    assert (pair.messages, pair.tool_calls) == (3, 2)


def test_calibrate_lists_the_models_seen_with_usage_in_families_order() -> None:
    """`calibrate`: a family's models are those seen with usage, in a pair or not (here a
    switch to another model of the family), and the families come in name order (as the table
    of docs/calibration.md lists them)."""
    session = _log([_reply()], [_reply()], [_reply()])
    session.requests()[3].model = "claude-haiku-4-5"
    (c,) = calibrate([session], resamples=10)
    assert c.models == ("claude-haiku-4-5", "claude-sonnet-4-6")
    assert c.pairs == 2 and c.excluded == {"model switch": 1}
    opus = _log([_reply()], model="claude-opus-4-8")
    assert [c.family for c in calibrate([opus, session], resamples=10)] == [
        "claude", "claude-new-tokenizer"]


def test_a_family_seen_without_a_usable_pair_is_listed_unmeasured() -> None:
    """`calibrate`: a family whose requests gave no pair it can measure is still one of its
    calibrations (its models, why its pairs were left out), with no factor: "not measured"."""
    session = _log([_reply()], [_reply()], model="claude-opus-4-8", prompts=[1000, 1000, 900])
    (c,) = calibrate([session], resamples=10)
    assert (c.family, c.models, c.pairs, c.factor) == (
        "claude-new-tokenizer", ("claude-opus-4-8",), 0, None)
    assert c.excluded == {"prompt did not grow": 2}


def test_calibrate_fits_each_family_with_the_options_given() -> None:
    """`calibrate(trim_mads=, resamples=, seed=)` is `fit_family` with those options on the
    pairs `calibration_pairs` finds."""
    session = synthetic_session(1.3, rounds=20, outliers=1)
    found = calibration_pairs(session)
    for options in ({"trim_mads": 1e9, "resamples": 30, "seed": 5}, {"resamples": 40, "seed": 7}):
        (c,) = calibrate([session], **options)
        assert c == fit_family("claude", found.pairs, excluded=found.excluded,
                               models=found.models["claude"], **options)
        assert c.trimmed == (0 if "trim_mads" in options else 1)


def test_the_bootstrap_is_seeded() -> None:
    """The interval is a seeded bootstrap: the same seed gives it again, another seed another
    interval around the same factor."""
    pairs = _pairs_at([1.0 + n / 100 for n in range(30)])
    first, again, other = (fit_family("claude", pairs, resamples=50, seed=s).factor
                           for s in (0, 0, 1))
    assert first == again
    assert other.value == first.value and (other.low, other.high) != (first.low, first.high)


def test_the_interval_is_a_95_percent_bootstrap_of_the_ratio_of_sums() -> None:
    """`factor`: Σ content / Σ tokens with a 95% interval from resampling pairs. On 40 pairs of
    equal size with ratios 1.00 to 1.39 the resampled factor is about normal, its standard error
    the ratios' standard deviation over √40; pairs of unequal size weigh by their size, and the
    interval is around that ratio of sums, not around the mean ratio."""
    ratios = np.array([1.0 + n / 100 for n in range(40)])
    c = fit_family("claude", _pairs_at(ratios.tolist()), trim_mads=1e9, resamples=4000)
    se = ratios.std() / np.sqrt(40)
    assert c.factor.value == pytest.approx(ratios.mean())
    assert c.factor.low == pytest.approx(ratios.mean() - 1.96 * se, abs=0.003)
    assert c.factor.high == pytest.approx(ratios.mean() + 1.96 * se, abs=0.003)
    big = [replace(p, tokens=10_000, delta=10_000) for p in _pairs_at([1.0] * 20)]
    small = [replace(p, tokens=100, delta=200) for p in _pairs_at([2.0] * 20)]
    c = fit_family("claude", big + small, resamples=200)
    assert c.trimmed == 0
    assert c.factor.value == pytest.approx(204_000 / 202_000)
    assert c.factor.low <= c.factor.value <= c.factor.high < 1.5


def test_a_single_term_fit_weighted_by_one_over_tokens_is_the_ratio_of_sums() -> None:
    """`_wls` weighs each pair by 1/tokens: fitting `delta = f·tokens` alone minimises
    Σ (delta − f·tokens)² / tokens, whose solution is f = Σ delta / Σ tokens (by 1/tokens² it
    would be the mean ratio, unweighted Σ tokens·delta / Σ tokens²)."""
    from replay.tokens._calibrate import _wls

    tokens = np.array([1000.0, 4000.0])
    (f,) = _wls(np.array([1200.0, 5200.0]), tokens[:, None], tokens)
    assert f == pytest.approx(6400 / 5000)


def test_a_framing_split_half_the_resamples_can_fit_is_reported() -> None:
    """Framing per tool call is reported when at least half the bootstrap resamples can fit
    it: with two resamples, all pairs (identifiable) and one pair drawn 30 times (not), it is."""
    from replay.tokens._calibrate import _framing_fit

    shapes = [(2, 1)] * 20 + [(3, 1)] * 5 + [(2, 2)] * 5
    messages = np.array([m for m, _ in shapes], dtype=float)
    calls = np.array([c for _, c in shapes], dtype=float)
    tokens = np.arange(300, 300 + 61 * len(shapes), 61, dtype=float)
    delta = 1.2 * tokens + 5 * messages + 40 * calls
    draws = np.array([list(range(len(shapes))), [0] * len(shapes)])
    fit = _framing_fit(delta, tokens, messages, calls, draws)
    assert fit is not None and fit.per_tool_call is not None
    assert fit.per_tool_call.value == pytest.approx(40)


def test_trimming_scales_with_the_size_of_a_negative_median_too() -> None:
    """`_trim`: the floor of the robust deviation is 1 % of the median's size, whatever its
    sign (a median below 0: most pairs grew by less than the documented framing)."""
    from replay.tokens._calibrate import _trim

    assert _trim(np.array([-1.0] * 9 + [-1.05]), 4.0).tolist() == [True] * 9 + [False]


def test_the_robust_deviation_is_1_4826_mads() -> None:
    """`_trim`: 4 robust deviations of 1.4826·MAD. Ratios 1 ± 0.1 (MAD 0.1) keep a ratio 0.59
    off the median (≤ 4 × 0.14826) and trim one 0.6 off."""
    from replay.tokens._calibrate import _trim

    base = [0.9] * 5 + [1.0] * 5 + [1.1] * 5
    assert _trim(np.array([*base, 1.59]), 4.0).all()
    assert not _trim(np.array([*base, 1.6]), 4.0)[-1]


def test_the_measured_text_says_framing_pairs_trimmed_spread_and_fit() -> None:
    """`measured_text` (the `measured` of pricing/tokenizers.json): the documented framing
    (4/message, 12/tool call for `claude`), the logs and every model it names, pairs used and
    outliers trimmed, the quartiles in order, and the fitted framing with its term per tool
    call."""
    from replay.tokens._calibrate import Estimate, FramingFit

    c = fit_family("claude", _pairs_at([1.0, 1.1, 1.2, 1.3, 1.4]),
                   models=["claude-haiku-4-5"], resamples=10)
    fitted = FramingFit(Estimate(1.1, 1.0, 1.2), Estimate(9.8, 3.2, 17.9),
                        Estimate(57.2, 43.2, 65.3))
    c = replace(c, trimmed=2, framing=fitted)
    text = c.tokenizer_row("2026-11-29", "b.jsonl")["measured"]
    assert text.startswith("replay calibrate, 2026-11-29, on b.jsonl (models claude-haiku-4-5, "
                           "claude-sonnet-4-6)")
    assert "minus the documented framing (4/message, 12/tool call)" in text
    assert "over 5 pairs (2 outliers trimmed)" in text
    assert "per-pair ratio quartiles 1.10/1.20/1.30" in text
    assert text.endswith(
        "factor 1.100 (1.000-1.200), 9.8 (3.2-17.9) tokens per message, 57.2 (43.2-65.3) per "
        "tool call")
    # framing per message only (calls not separable): fitted still, without a term per call
    alone = replace(c, framing=replace(fitted, per_tool_call=None))
    assert alone.tokenizer_row("2026-11-29", "b.jsonl")["measured"].endswith(
        "factor 1.100 (1.000-1.200), 9.8 (3.2-17.9) tokens per message")


def test_an_unmeasured_family_is_estimated_and_left_out_of_a_tokenizer_file() -> None:
    """A family without a usable pair: its row keeps `estimated: true`, and the tokenizer file
    leaves it out (it has nothing measured to replace the built-in row with)."""
    c = fit_family("claude", [])
    assert c.tokenizer_row("2026-11-29")["estimated"] is True
    assert tokenizer_file([c], "2026-11-29")["families"] == []


def test_a_tokenizer_file_not_written_names_the_row_refused(tmp_path: Path) -> None:
    """`write_tokenizer_file` names the row it refuses by its index, as the reader does
    (docs/calibration.md: `families[0].factor must be ...`), and writes nothing."""
    from replay._errors import ReplayError
    from replay.tokens._calibrate import write_tokenizer_file

    good = fit_family("claude", _pairs_at([1.2] * 3), resamples=10)
    bad = fit_family("claude-new-tokenizer", [
        replace(p, family="claude-new-tokenizer", model="claude-opus-4-8")
        for p in _pairs_at([12.0] * 3)], resamples=10)
    path = tmp_path / "mine.json"
    with pytest.raises(ReplayError, match=r"not written: families\[1\]\.factor must be a number "
                       r"from 0\.1 to 10, got 12\.0 \(family 'claude-new-tokenizer'"):
        write_tokenizer_file([good, bad], "2026-11-29", path)
    assert not path.exists()


def test_calibrate_finds_the_forks_among_its_sessions(tmp_path: Path) -> None:
    """`calibrate` without `forks` finds the forks whose parent is given too as `replay batch`
    finds them (`forks_among`): their copied pairs count in the parent only."""
    from replay import load

    parent, fork = _pi_fork(tmp_path)
    (c,) = calibrate([load(parent), load(fork)], resamples=10)
    assert c.pairs == 4 and c.excluded["request copied from a parent log given too"] == 2


def test_the_thinking_rule_is_the_one_in_force_at_the_later_request() -> None:
    """`strips_thinking` starts 2025-02-24 for Haiku (pricing/cache/anthropic.json): a new user
    turn billed that day strips earlier thinking even when the request before it was billed the
    day before."""
    session = _stripping_log()
    eve = datetime(2025, 2, 23, 23, 59, 40, tzinfo=UTC)  # r2 at midnight
    for n, marker in enumerate(session.requests()):
        marker.ts = eve + timedelta(seconds=10 * n)
    assert calibration_pairs(session).excluded == {"thinking block (size not in the log)": 1,
                                                   "thinking stripped at a new user turn": 1}


def test_the_json_of_a_family_holds_every_number() -> None:
    """`calibration_dict` (`replay calibrate --format json`, docs/calibration.md): every number
    of a family's calibration, the documented row of the table in force, and each interval as
    value, low and high."""
    from replay.tokens._calibrate import Estimate, FramingFit, calibration_dict
    from replay.tokens._counter import family_named

    pairs = _pairs_at([1.0, 1.0, 1.0, 1.2, 1.2, 5.0])  # 5.0: trimmed
    pairs[4] = replace(pairs[4], log="b")
    c = fit_family("claude", pairs, excluded={"model switch": 2}, resamples=50)
    fitted = FramingFit(Estimate(1.1, 1.0, 1.2), Estimate(9.8, 3.2, 17.9),
                        Estimate(57.2, 43.2, 65.3))
    d = calibration_dict(replace(c, framing=fitted))
    doc = family_named("claude")
    assert (d["family"], d["models"], d["excluded"]) == (
        "claude", ["claude-sonnet-4-6"], {"model switch": 2})
    assert (d["candidates"], d["pairs"], d["trimmed"]) == (8, 5, 1)
    assert d["documented"] == {"factor": doc.factor, "message_overhead": 4,
                               "tool_call_overhead": 12}
    assert c.factor.low < c.factor.high
    assert d["factor"] == {"value": c.factor.value, "low": c.factor.low, "high": c.factor.high}
    assert d["factor"]["value"] == pytest.approx(5.4 / 5)
    assert d["ratio_quartiles"] == pytest.approx([1.0, 1.0, 1.2])
    assert [(f["log"], f["pairs"]) for f in d["by_log"]] == [("a", 4), ("b", 1)]
    assert [f["factor"] for f in d["by_log"]] == pytest.approx([4.2 / 4, 1.2])
    assert d["framing_fit"] == {
        "factor": {"value": 1.1, "low": 1.0, "high": 1.2},
        "per_message": {"value": 9.8, "low": 3.2, "high": 17.9},
        "per_tool_call": {"value": 57.2, "low": 43.2, "high": 65.3},
    }
    empty = calibration_dict(fit_family("claude", []))
    assert (empty["factor"], empty["ratio_quartiles"], empty["framing_fit"]) == (None, None, None)


def test_logs_of_one_file_name_in_other_folders_are_measured_apart() -> None:
    """Entire stores every session as `<id>/<n>/full.jsonl`: logs given with the same file name
    are still "each log alone" in `by_log` (docs/calibration.md), named by the end of their
    path that tells them apart, and the `measured` text names each."""
    from replay.tokens._calibrate import logs_label

    cheap = _log([_reply()], [_reply()], prompts=[1000, 1010, 1020])
    dear = _log([_reply()], [_reply()], prompts=[1000, 1030, 1060])
    cheap.path, dear.path = "entire/91/full.jsonl", "entire/cb/full.jsonl"
    other = _log([_reply()], [_reply()])
    other.path = "elsewhere/other.jsonl"
    (c,) = calibrate([cheap, dear, other], resamples=10)
    assert [(f.log, f.pairs) for f in c.by_log] == [
        ("91/full.jsonl", 2), ("cb/full.jsonl", 2), ("other.jsonl", 2)]
    factors = {f.log: f.factor for f in c.by_log}
    assert factors["91/full.jsonl"] < factors["cb/full.jsonl"]
    assert logs_label(c) == "91/full.jsonl, cb/full.jsonl, other.jsonl"


def test_the_interval_does_not_depend_on_the_order_the_logs_are_given_in() -> None:
    """The same logs give the same calibration in any order (a shell's glob order follows the
    locale): the seeded bootstrap draws from their pairs in the order of the logs' labels."""
    sessions = [synthetic_session(1.2 + k / 20, noise=0.2, rounds=12, seed=k) for k in range(3)]
    for k, session in enumerate(sessions):
        session.path = f"logs/{'cab'[k]}.jsonl"
    (given,) = calibrate(sessions, resamples=200)
    (back,) = calibrate(sessions[::-1], resamples=200)
    assert given.factor == back.factor and given.framing == back.framing
    assert given.by_log == back.by_log


def test_a_log_name_s_bidirectional_marks_are_escaped_in_the_rows_printed(tmp_path) -> None:
    """docs/report.md: text from a file name is shown with its bidirectional marks and control
    characters escaped (a U+202E would show the rest of the line reversed). The rows printed
    under the table are JSON to paste: escaped the JSON way, they hold the same text;
    `--format json` keeps the text as it is."""
    load_commands()
    runner = CliRunner()
    name = "evil\u202egol\x85.jsonl"
    write_log(synthetic_session(1.42), tmp_path / name)
    log = str(tmp_path / name)
    shown = runner.invoke(cli, ["calibrate", log, "--date", "2026-11-29", "-q"])
    assert shown.exit_code == 0, shown.output
    assert "\u202e" not in shown.stdout and "\x85" not in shown.stdout
    rows = json.loads(shown.stdout.split("rows for pricing/tokenizers.json")[1].split("\n", 1)[1])
    assert f"on {name} (models" in rows[0]["measured"]
    kept = runner.invoke(cli, ["calibrate", log, "--format", "json", "--date", "2026-11-29"])
    assert f"on {name} (models" in json.loads(kept.stdout)["tokenizers"][0]["measured"]


def test_a_converted_copy_of_a_log_is_read_once(tmp_path: Path) -> None:
    """`replay calibrate LOG converted.jsonl`: the `replay convert` copy holds the same session
    (its id and requests) in other bytes; read twice, every pair counted twice and narrowed
    the interval."""
    from test_batch import _subagent_session

    from replay.adapters import LeftOut, read_each_once

    transcript = _subagent_session(tmp_path / "p")
    converted = tmp_path / "converted.jsonl"
    load_commands()
    done = CliRunner().invoke(cli, ["convert", str(transcript), "-o", str(converted)])
    assert done.exit_code == 0, done.output
    logs = read_each_once([transcript, converted])
    assert [p for p, _ in logs.sessions] == [transcript]
    assert logs.left_out == [
        LeftOut(converted, f"the same session as {transcript} (its id and requests)")
    ]
    # Another session of the same requests' ids (a copy whose id was changed) is not the same.
    other = read_each_once([transcript]).sessions[0][1]
    other.header.session_id = "another"
    changed = tmp_path / "other.jsonl"
    write_log(other, changed)
    assert [p for p, _ in read_each_once([transcript, changed]).sessions] == [
        transcript, changed
    ]
