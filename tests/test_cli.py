"""The `replay` command line: shorthand, formats, the JSON contract, errors, snapshots."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import gen
import polars as pl
import pytest
from conftest import CORE, RUN42, SUMMARY_CONTRACT, TURN_CONTRACT
from rich.console import Console

from replay import replay
from replay.report import summary_table
from replay.strategies import canonical_names

HEADER = '{"type":"session","format":"replay-log","version":1,"ts":"2026-03-02T09:00:00Z"}'


def _json(result) -> dict:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------------
# Commands and formats


def test_log_is_shorthand_for_run(invoke):
    short = invoke(RUN42, "--strategies", "baseline,sliding-10", "--format", "json")
    long = invoke("run", RUN42, "--strategies", "baseline,sliding-10", "--format", "json")
    assert short.exit_code == long.exit_code == 0
    assert short.stdout == long.stdout
    table_short = invoke(RUN42, "-s", "baseline", "-q")
    table_long = invoke("run", RUN42, "-s", "baseline", "-q")
    assert table_short.stdout == table_long.stdout and "baseline" in table_short.stdout
    # run's options may come before the log, as after it.
    first = invoke("-s", "baseline", "-q", RUN42)
    assert first.exit_code == 0 and first.stdout == table_long.stdout
    assert invoke("--version").stdout.startswith("replay, version")
    # -h is replay's own help (its commands), not run's.
    assert invoke("-h").stdout == invoke("--help").stdout and "Commands:" in invoke("-h").stdout


def test_strategies_all_prints_one_row_per_canonical_strategy(invoke):
    doc = _json(invoke(RUN42, "--strategies", "all", "--format", "json"))
    assert [row["strategy"] for row in doc["summary"]] == canonical_names()
    table = invoke(RUN42, "--strategies", "all")
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    for name in canonical_names():
        assert any(line.split("│")[1:2] and line.split("│")[1].strip() == name for line in lines), (
            name
        )


def test_json_contract_keys(invoke):
    doc = _json(invoke(RUN42, "--strategies", ",".join(CORE), "--per-turn", "--format", "json"))
    assert {"log", "agent", "provider", "model", "notes", "summary", "requests"} <= set(doc)
    for row in doc["summary"]:
        assert list(row)[: len(SUMMARY_CONTRACT)] == SUMMARY_CONTRACT
        assert (
            row["cached_tokens"] + row["cache_write_tokens"] + row["uncached_tokens"]
            == (row["prompt_tokens"])
        )
        assert isinstance(row["cost_usd"], int | float)
    assert len(doc["requests"]) >= 7 * 14
    for row in doc["requests"]:
        assert set(TURN_CONTRACT) <= set(row)
    # Money is written with every digit (no float rounding through the JSON encoder).
    text = invoke(RUN42, "--strategies", "baseline", "--format", "json").stdout
    cost = next(line for line in text.splitlines() if '"cost_usd"' in line)
    assert "e-" not in cost.lower()


def test_per_turn_table_has_a_row_per_request(invoke):
    result = invoke(RUN42, "--strategies", "baseline,compact-at-12000-structured", "--per-turn")
    assert result.exit_code == 0
    rows = [line for line in result.stdout.splitlines() if line.startswith("│")]
    n = 14 * 2 + 2  # run42's requests for both strategies, plus the two summarizer calls
    assert len(rows) == n
    assert sum("summarizer" in line for line in rows) == 2


@pytest.mark.parametrize("per_turn", [False, True])
def test_json_csv_parquet_files_agree(invoke, tmp_path, per_turn):
    flags = ["--per-turn"] if per_turn else []
    keys = TURN_CONTRACT if per_turn else SUMMARY_CONTRACT
    out = {fmt: tmp_path / f"out.{fmt}" for fmt in ("json", "csv", "parquet")}
    for fmt, path in out.items():
        result = invoke(RUN42, "-s", ",".join(CORE), *flags, "--format", fmt, "-o", path)
        assert result.exit_code == 0, result.stderr
        assert result.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "out.json", "out.parquet"]
    doc = json.loads(out["json"].read_text())
    rows = doc["requests" if per_turn else "summary"]
    frame = pl.read_parquet(out["parquet"])
    assert set(keys) <= set(frame.columns)
    assert frame.height == len(rows)
    assert frame["strategy"].to_list() == [r["strategy"] for r in rows]
    assert frame["prompt_tokens"].to_list() == [r["prompt_tokens"] for r in rows]
    with out["csv"].open(newline="") as handle:
        csv_rows = list(csv.DictReader(handle))
    assert set(keys) <= set(csv_rows[0])
    assert [int(r["prompt_tokens"]) for r in csv_rows] == [r["prompt_tokens"] for r in rows]
    # The exact decimal cost is the same in every format.
    assert [str(r["cost_usd"]) for r in csv_rows] == [
        format(v.normalize(), "f") if v else "0" for v in frame["cost_usd"].to_list()
    ]
    if per_turn:  # and times are written the same way (…Z, not polars' +0000)
        assert [r["ts"] for r in csv_rows] == [r["ts"] for r in rows]


def test_parquet_needs_an_output_file(invoke):
    result = invoke(RUN42, "-s", "baseline", "--format", "parquet")
    assert result.exit_code == 2
    assert "-o" in result.stderr


def test_csv_to_stdout(invoke):
    result = invoke(RUN42, "-s", "baseline,sliding-10", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["strategy"] for r in rows] == ["baseline", "sliding-10"]


def test_schema_prints_a_json_schema_of_every_event(invoke):
    result = invoke("schema")
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert set(schema["discriminator"]["mapping"]) == {
        "session",
        "user",
        "assistant",
        "tool_result",
        "request",
        "compaction",
        "thread",
    }
    defs = schema["$defs"]

    def refs(node):
        if isinstance(node, dict):
            if "$ref" in node:
                yield node["$ref"]
            for value in node.values():
                yield from refs(value)
        elif isinstance(node, list):
            for value in node:
                yield from refs(value)

    for ref in refs(schema):
        assert ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in defs
    for name, definition in defs.items():
        assert definition["type"] == "object", name
        undocumented = [
            p
            for p, d in definition["properties"].items()
            if p != "type" and not d.get("description")
        ]
        assert not undocumented, f"{name}: fields without a description: {undocumented}"
    assert "ts" in defs["ToolResult"]["required"] and "output" in defs["ToolResult"]["required"]
    try:
        import jsonschema
    except ImportError:
        return
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for line in RUN42.read_text().splitlines():
        validator.validate(json.loads(line))


# ---------------------------------------------------------------------------------------------
# Errors and the input file


def _one_line_error(code: int, err: str, needle: str) -> None:
    assert code == 2
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert needle in lines[0]


def test_bad_input_is_one_line_exit_2_no_traceback(run_replay, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        HEADER + "\n" + '{"type":"user","ts":"2026-03-02T09:00:01Z","text":"hi"}\n' + "{oops\n"
    )
    code, out, err = run_replay(bad, "--strict")
    _one_line_error(code, err, f"{bad}:3:")
    assert "expected a JSON object" in err and out == ""


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("", "empty"),
        ('{"type":"user","ts":"2026-03-02T09:00:01Z","text":"no header"}\n', ":1:"),
        (
            HEADER + "\n" + '{"type":"user","ts":"2026-03-02T09:00:01Z","text":"hi"}\n',
            "no requests",
        ),
        (
            '{"type":"session","format":"replay-log","version":7,"ts":"2026-03-02T09:00:00Z"}\n',
            "version",
        ),
        ('{"type":"session","ts":"yesterday"}\n', ":1:"),
    ],
)
def test_bad_logs_in_process(invoke, tmp_path, content, needle):
    path = tmp_path / "log.jsonl"
    path.write_text(content)
    result = invoke(path)
    _one_line_error(result.exit_code, result.stderr, needle)
    assert str(path) in result.stderr


def test_missing_file_directory_and_unknown_strategy(invoke, tmp_path):
    missing = invoke(tmp_path / "nope.jsonl")
    _one_line_error(missing.exit_code, missing.stderr, "no such file")
    folder = invoke(tmp_path)
    _one_line_error(folder.exit_code, folder.stderr, "directory")
    unknown = invoke(RUN42, "-s", "baseline,truncate-lots")
    _one_line_error(unknown.exit_code, unknown.stderr, "truncate-lots")
    for name in CORE:
        assert name in unknown.stderr


def test_lenient_by_default_and_says_what_it_skipped(invoke, tmp_path):
    lines = RUN42.read_text().splitlines()
    lines.insert(5, "{this is not json")
    path = tmp_path / "damaged.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = invoke(path, "-s", "baseline")
    assert result.exit_code == 0
    assert f"{path}:6" in result.stderr and "skipped" in result.stderr
    strict = invoke(path, "-s", "baseline", "--strict")
    _one_line_error(strict.exit_code, strict.stderr, f"{path}:6:")


def test_the_input_file_is_never_modified(invoke, tmp_path):
    before = _sha(RUN42)
    for args in (
        ["-s", "all", "--per-turn", "--format", "json"],
        ["-s", "baseline", "--format", "csv", "-o", tmp_path / "o.csv"],
    ):
        assert invoke(RUN42, *args).exit_code == 0
    assert _sha(RUN42) == before


def test_output_file_is_replaced_atomically(invoke, tmp_path):
    out = tmp_path / "result.json"
    out.write_text("stale")
    assert invoke(RUN42, "-s", "baseline", "--format", "json", "-o", out).exit_code == 0
    assert json.loads(out.read_text())["summary"][0]["strategy"] == "baseline"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


# ---------------------------------------------------------------------------------------------
# Snapshots on a deterministic log (fixed timestamps and contents)


def test_snapshot_summary_json_all_strategies(invoke, det_log, snapshot):
    result = invoke(det_log, "--strategies", "all", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == snapshot


def test_snapshot_per_turn_json_baseline(invoke, det_log, snapshot):
    result = invoke(det_log, "--strategies", "baseline", "--per-turn", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == snapshot


def test_snapshot_summary_table_text(det_log, snapshot):
    result = replay(det_log, CORE)
    console = Console(
        width=200,
        file=io.StringIO(),
        record=True,
        color_system=None,
        force_terminal=False,
        legacy_windows=False,
    )
    console.print(summary_table(result.summary, "det.jsonl · test-harness · anthropic"))
    assert console.export_text() == snapshot


def test_deterministic_log_exercises_every_core_strategy(det_log):
    rows = {
        r["strategy"]: r for r in replay(det_log, CORE).summary.iter_rows(named=True)
    }
    base = rows["baseline"]
    assert base["prefix_breaks"] == 0 and base["cached_tokens"] > 0
    assert rows["truncate-500"]["prompt_tokens"] < base["prompt_tokens"]
    assert rows["age-truncate-500-keep-3"]["prefix_breaks"] > 0
    assert rows["compact-at-12000-structured"]["summarizer_calls"] > 0
    assert rows["sliding-10"]["prefix_breaks"] > 0


@pytest.mark.parametrize(
    ("word", "command"), [("stratgies", "strategies"), ("whatfi", "whatif"), ("rport", "report")]
)
def test_a_mistyped_command_is_not_read_as_a_log_path(invoke, tmp_path, monkeypatch, word, command):
    monkeypatch.chdir(tmp_path)
    result = invoke(word)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: no such file or command {word!r}; did you mean {command!r}?\n"
    )
    # a file of that name is still a log: the shorthand `replay LOG` wins
    (tmp_path / word).write_text(RUN42.read_text())
    result = invoke(word, "-s", "baseline", "--quiet")
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize("word", ["logs/nope.jsonl", "nope.jsonl"])
def test_a_missing_log_that_is_no_command_says_no_such_file(invoke, word):
    result = invoke(word)
    assert result.exit_code == 2
    assert result.stderr == f"error: {word}: no such file\n"


def test_a_bare_word_that_is_no_file_nor_command_says_both(invoke, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("nosuchthing")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: nosuchthing: no such file, nor a command (`replay --help` lists them)\n"
    )


@pytest.mark.parametrize("fmt", ["json", "csv", "table"])
def test_output_into_a_missing_folder_is_an_error_not_a_new_folder(invoke, tmp_path, fmt):
    target = tmp_path / "no-such-dir" / "x.out"
    result = invoke("run", RUN42, "-s", "baseline", "--format", fmt, "-o", target)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: cannot write {target}: directory {target.parent} does not exist\n"
    )
    assert not target.parent.exists()
    result = invoke("run", RUN42, "-s", "baseline", "--format", fmt, "-o", tmp_path / "x.out")
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["breakeven", RUN42, "-s", "baseline", "--format", "json", "-o"],
        ["whatif", RUN42, "--at", "8", "--prune", "older-than:3", "--format", "json", "-o"],
        ["strategies", "--format", "json", "-o"],
        ["schema", "-o"],
        ["convert", RUN42, "-o"],
        ["record-fixture", "-o"],
        ["report", RUN42, "-s", "baseline", "-o"],
        ["calibrate", RUN42, "--write-tokenizers"],
        ["bench", "-n", "10", "--write-log"],
    ],
)
def test_no_command_creates_a_missing_output_folder(invoke, tmp_path, args):
    target = tmp_path / "no-such-dir" / "out.file"
    result = invoke(*args, target)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: cannot write {target}: directory {target.parent} does not exist\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [
        ["run", "-s", "baseline", "--format", "json", "-o"],
        ["breakeven", "-s", "baseline", "--format", "json", "-o"],
        ["whatif", "--at", "8", "--prune", "older-than:3", "--format", "json", "-o"],
        ["fidelity", "--format", "json", "-o"],
        ["convert", "-o"],
        ["report", "-s", "baseline", "-o"],
        ["calibrate", "--write-tokenizers"],
    ],
)
@pytest.mark.parametrize("through_a_link", [False, True])
def test_no_command_writes_over_the_log_it_reads(invoke, tmp_path, args, through_a_link):
    log = tmp_path / "run.jsonl"
    log.write_bytes(RUN42.read_bytes())
    target = log
    if through_a_link:
        target = tmp_path / "link.jsonl"
        target.symlink_to(log.name)
    result = invoke(args[0], log, *args[1:], target, "-q")
    assert result.exit_code == 2
    flag = args[-1]
    assert result.stderr == (
        f"error: {flag} {target} is a file being read ({log}): write the result elsewhere\n"
    )
    assert log.read_bytes() == RUN42.read_bytes()


def test_a_log_named_dash_is_named_dot_slash_dash(invoke, tmp_path, monkeypatch):
    """A file named `-` is `./-` in the message: `-` alone is standard output."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_bytes(RUN42.read_bytes())
    result = invoke("./-", "-s", "baseline", "-o", "./-")
    assert result.exit_code == 2
    assert result.stderr == "error: -o ./- is a file being read (./-): write the result elsewhere\n"


def test_no_command_writes_over_another_file_it_reads(invoke, tmp_path, monkeypatch):
    """Not the log, but a cache-rule, plug-in or tokenizer file, or a file of a log folder."""
    rules = tmp_path / "rules.json"
    rules.write_text('{"provider": "google", "rules": []}', encoding="utf-8")
    plugin = tmp_path / "mine.py"
    plugin.write_text("def strategy(history, ctx):\n    return history\n", encoding="utf-8")
    tokenizers = tmp_path / "tokenizers.json"
    tokenizers.write_text('{"families": []}', encoding="utf-8")
    folder = tmp_path / "logs"
    folder.mkdir()
    inside = folder / "run.jsonl"
    inside.write_bytes(RUN42.read_bytes())
    cases = [
        (["run", RUN42, "--cache-rules", rules, "--format", "json", "-o", rules], rules),
        (["strategies", "--strategy-file", plugin, "--format", "json", "-o", plugin], plugin),
        (["run", RUN42, "--format", "json", "-o", tokenizers], tokenizers),
        (["convert", folder, "-o", inside], inside),
    ]
    monkeypatch.setenv("REPLAY_TOKENIZERS", str(tokenizers))
    for args, target in cases:
        before = target.read_bytes()
        result = invoke(*args, "-q")
        assert result.exit_code == 2, (args, result.stderr)
        assert f"{target} is" in result.stderr and "write the result elsewhere" in result.stderr
        assert target.read_bytes() == before
    # Renewing the tokenizer file in force is what `calibrate --write-tokenizers` is for.
    renew = invoke("calibrate", RUN42, "--write-tokenizers", tokenizers, "-q")
    assert "write the result elsewhere" not in renew.stderr


@pytest.mark.parametrize("command", [["convert"], ["run", "-s", "baseline", "--format", "json"]])
def test_no_command_writes_a_new_file_into_a_log_folder_it_reads(invoke, tmp_path, command):
    """`convert DIR -o DIR/new.jsonl` wrote a second log into the folder it read: `replay run
    DIR` then refused it (logs of two formats). Inputs, folders included, are never written."""
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "run.jsonl").write_bytes(RUN42.read_bytes())
    new = folder / "new.jsonl"
    result = invoke(command[0], folder, *command[1:], "-o", new, "-q")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: -o {new} is in the log folder being read: write the result elsewhere\n"
    )
    assert sorted(p.name for p in folder.iterdir()) == ["run.jsonl"]


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "--size-scale", "inf"],
        ["bench", "--size-scale", "nan"],
        ["bench", "-n", "9" * 20],
        ["batch", "logs", "--workers", "9" * 20],
        ["breakeven", RUN42, "--horizon", "0"],
    ],
)
def test_out_of_range_numbers_are_usage_errors(invoke, args):
    result = invoke(*args)
    assert result.exit_code == 2
    assert "Invalid value" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args",
    [["run", RUN42, "-s", "baseline", "--format", "json"], ["convert", RUN42],
     ["plot", RUN42, "-s", "baseline"], ["report", RUN42, "-s", "baseline"], ["schema"]],
)
def test_an_empty_output_path_is_an_error(invoke, tmp_path, monkeypatch, args):
    """`-o "$UNSET"` was refused as `cannot write '.'`, a name nobody gave: the name is empty."""
    monkeypatch.chdir(tmp_path)
    result = invoke(*args, "-o", "")
    assert result.exit_code == 2
    assert result.stderr == "error: cannot write '': the file name is empty\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [["record-fixture", "-o"], ["bench", "-n", "10", "--write-log"],
     ["calibrate", RUN42, "--write-tokenizers"]],
)
def test_an_empty_name_for_a_file_option_is_an_error(invoke, tmp_path, monkeypatch, args):
    """As `-o ""`: the option writes a file, and the error says its name is empty (not that a
    folder name is expected, as for batch's `-o`)."""
    monkeypatch.chdir(tmp_path)
    result = invoke(*args, "")
    assert result.exit_code == 2
    assert result.stderr == "error: cannot write '': the file name is empty\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [["run", ""], [""], ["calibrate", ""], ["convert", "", "-o", "-"]])
def test_an_empty_log_name_is_an_error(invoke, tmp_path, monkeypatch, args):
    """`replay "$UNSET"`: click made `""` the current folder, read as a session folder (a
    Claude Code project's, where one runs it from there)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.jsonl").write_bytes(RUN42.read_bytes())  # a folder that reads as a log
    result = invoke(*args, "-q")
    assert result.exit_code == 2
    assert result.stderr == "error: '': an empty name is no file or folder\n"


def test_an_empty_dataset_name_is_an_error(invoke, tmp_path, monkeypatch):
    """`batch -o "$UNSET"` wrote its dataset (sessions/, requests/, .replay-batch/) into the
    current folder, exit 0."""
    monkeypatch.chdir(tmp_path)
    result = invoke("batch", RUN42, "-s", "baseline", "-w", "1", "-q", "-o", "")
    assert result.exit_code == 2
    assert result.stderr == "error: cannot write '': the folder name is empty\n"
    assert list(tmp_path.iterdir()) == []


def test_a_cache_rule_file_that_is_not_utf8_is_a_user_error(invoke, tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_bytes(b"\xff\xfe\x00garbage")
    result = invoke("run", RUN42, "-s", "baseline", "--cache-rules", rules)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {rules}: cannot read cache rules (expected UTF-8")


def test_output_to_dev_stdout_through_a_pipe(run_replay):
    """`/dev/stdout` resolves to no path when standard output is a pipe: it is written
    through, as any device or pipe."""
    code, out, err = run_replay("run", RUN42, "-s", "baseline", "--format", "json",
                                "-o", "/dev/stdout", "-q")
    assert code == 0, err
    assert json.loads(out)["summary"][0]["strategy"] == "baseline"


def test_tables_print_square_brackets_as_they_are(invoke):
    """Strategy names with overrides and rule texts hold `[...]`, which rich would read as
    style tags and drop: every row says exactly what ran."""
    result = invoke("run", RUN42, "-s", "sliding-10", "--set", "sliding.messages=4")
    assert result.exit_code == 0, result.stderr
    assert "sliding-10[messages=4]" in result.stdout
    listing = invoke("strategies")
    assert "[first message, summary, last 3" in listing.stdout


@pytest.mark.parametrize(
    ("sets", "said"),
    [
        # a family no strategy of the run belongs to: it changed nothing, silently
        (["pi-compact.keep=30k"], "--set pi-compact.keep=30k: no strategy of family "
         "'pi-compact' is run (--strategies names sliding-10)"),
        # one parameter twice: the last one won, silently (a repeated --price is an error)
        (["sliding.messages=4", "sliding.messages=6"],
         "--set sliding.messages is given twice ('4' and '6'); give it once"),
        # no value at all: not the parameter's own complaint about an empty value
        (["sliding.messages"],
         "error: --set 'sliding.messages': expected FAMILY.PARAM=VALUE, e.g. pi-compact.keep=30k"),
    ],
)
def test_a_set_that_would_change_nothing_or_is_ambiguous_is_an_error(invoke, sets, said):
    args = [a for s in sets for a in ("--set", s)]
    result = invoke("run", RUN42, "-s", "sliding-10", *args, "-q")
    assert result.exit_code == 2 and said in result.stderr, result.stderr
    again = invoke("run", RUN42, "-s", "sliding-10", "--set", "sliding.messages=4",
                   "--set", "sliding.messages=4", "-q")
    assert again.exit_code == 0, again.stderr  # the same value twice is one setting


def test_run_takes_ttl_as_the_other_commands_do(invoke) -> None:
    """`--ttl 1h` forces one-hour breakpoints, as in breakeven, whatif, report and plot."""
    args = [RUN42, "-s", "baseline", "--provider", "anthropic", "--model", "claude-sonnet-4-5",
            "--per-turn", "--format", "json"]
    default = json.loads(invoke(*args).stdout)
    hour = json.loads(invoke(*args, "--ttl", "1h").stdout)
    assert sum(r["cache_write_1h_tokens"] for r in default["requests"]) == 0
    assert sum(r["cache_write_1h_tokens"] for r in hour["requests"]) > 0
    assert hour["summary"][0]["cost_usd"] > default["summary"][0]["cost_usd"]


def _ttl_note(ttl: str, requests: int, routes: str) -> str:
    return (f"--ttl {ttl} was ignored on {requests:,} request(s) ({routes}): their simulated "
            "cache has no 5m/1h TTL choice; --ttl applies only where the client picks one per "
            "breakpoint (Anthropic-style).")


@pytest.mark.parametrize(("provider", "model"), [("openai", "gpt-5"),
                                                 ("google", "gemini-2.5-flash")])
def test_ttl_where_the_cache_has_no_ttl_choice_is_noted(invoke, provider, model) -> None:
    """OpenAI's and Gemini's caches have no TTL the client picks: `--ttl` changes nothing there
    (it did so without a word)."""
    args = [RUN42, "-s", "baseline", "--provider", provider, "--model", model, "--format", "json"]
    default = json.loads(invoke("run", *args).stdout)
    hour = json.loads(invoke("run", *args, "--ttl", "1h").stdout)
    assert hour["summary"] == default["summary"]
    assert _ttl_note("1h", 14, provider) in hour["notes"]
    assert not any("--ttl" in n for n in default["notes"])


def test_ttl_is_not_noted_where_it_applies(invoke) -> None:
    args = [RUN42, "-s", "baseline", "--provider", "anthropic", "--model", "claude-sonnet-4-5",
            "--ttl", "1h", "--format", "json"]
    assert not any("--ttl" in n for n in json.loads(invoke("run", *args).stdout)["notes"])


def test_ttl_1h_before_anthropic_offered_it_is_noted() -> None:
    """Anthropic's 1-hour TTL exists from 2025-05-22: before, a 1h breakpoint is written as 5m."""
    turns = [gen.Turn(f"step {i}", [gen.Call("read", {"path": f"f{i}"}, gen.filler(6000, i))])
             for i in range(3)] + [gen.Turn("done")]
    session = gen.build_session(turns, provider="anthropic",
                                start=datetime(2025, 1, 6, 9, tzinfo=UTC))
    assert _ttl_note("1h", 4, "anthropic") in replay(session, "baseline", ttl="1h").notes


@pytest.mark.parametrize(("provider", "model", "route"), [
    ("qwen", "qwen-plus", "qwen/explicit"),
    ("openrouter", "qwen/qwen-plus", "openrouter>qwen/explicit"),
])
def test_ttl_1h_on_qwen_explicit_cache_is_ignored_and_noted(provider, model, route) -> None:
    """caching.md: Qwen's explicit cache (cache_control markers) has a 5-minute TTL only; a
    client asking for 1h writes 5m entries, and `--ttl 1h` changes nothing, with the note."""
    from replay.prices import parse_price_override

    turns = [gen.Turn(f"step {i}", [gen.Call("read", {"path": f"f{i}"}, gen.filler(6000, i))])
             for i in range(3)] + [gen.Turn("done")]
    session = gen.build_session(turns, provider=provider, model=model, agent="pi")
    prices = dict([parse_price_override(
        "qwen-plus=input:0.40,output:1.20,cache_read:0.08,cache_write:0.50")])
    for client in ("pi", "claude-code"):  # claude-code's profile asks for 1h itself
        default = replay(session, "baseline", client=client, prices=prices)
        hour = replay(session, "baseline", client=client, prices=prices, ttl="1h")
        assert {r.outcome.route for r in hour.records} == {route}
        assert [r.buckets for r in hour.records] == [r.buckets for r in default.records]
        assert sum(r.outcome.cache_write_5m for r in hour.records) > 0
        assert hour.summary.equals(default.summary)
        assert _ttl_note("1h", 4, route) in hour.notes


def test_whatif_notes_an_ignored_ttl(invoke) -> None:
    result = invoke("whatif", RUN42, "--at", "8", "--prune", "older-than:3", "--ttl", "1h")
    assert result.exit_code == 0, result.stderr
    assert "--ttl 1h was ignored on 14 request(s) (google)" in " ".join(result.stderr.split())


def test_the_report_notes_an_ignored_ttl_and_a_window_given() -> None:
    """The HTML report's notes are `replay run`'s (it left out --ttl's and had no window)."""
    from replay.report._html import build_report

    document = build_report(RUN42, "baseline", ttl="1h", context_window=4000, breakeven=False)
    assert _ttl_note("1h", 14, "google") in document["notes"]
    assert ("Strategies were given a 4,000-token context window (--context-window), not the "
            "model's own (gemini-2.5-flash 1,048,576).") in document["notes"]


def test_money_keeps_the_digits_of_a_tiny_price(invoke):
    # 12 decimal places cut $0.00000000188836 to 0.000000001888.
    price = "gemini-2.5-flash=input:0.0000001,output:0.0000003,cache_read:0.00000001"
    out = invoke("run", RUN42, "-s", "baseline", "--format", "csv", "-q", "--price", price)
    assert out.exit_code == 0, out.output
    assert out.stdout.splitlines()[1].split(",")[7] == "0.00000000188836"


def test_breakeven_columns_without_per_turn_rows_are_a_usage_error(invoke) -> None:
    """`--breakeven` adds columns to `--per-turn` rows: alone, it would be dropped silently."""
    result = invoke("run", RUN42, "-s", "baseline", "--breakeven", "--format", "json")
    assert result.exit_code == 2 and result.stdout == ""
    assert "Error: --breakeven adds columns to --per-turn rows: give both" in result.stderr


def test_convert_says_what_it_wrote_unless_quiet(invoke, tmp_path) -> None:
    out = tmp_path / "out.jsonl"
    told = invoke("convert", RUN42, "-o", out)
    assert told.exit_code == 0, told.stderr
    assert told.stderr == (
        f"wrote {out}: replay-recorder log, 14 requests in 1 thread, 42 events\n"
    )
    quiet = invoke("convert", RUN42, "-o", out, "-q")
    assert (quiet.exit_code, quiet.stderr) == (0, "")


def test_the_markdown_listing_joins_lists_with_plus_and_escapes_bars() -> None:
    """As names and `--set` write a list (`protected=skill+read`); a `|` in a cell would end
    it (a plug-in's rule text may hold one)."""
    from replay.cli._cmd_strategies import format_params, markdown_table

    assert format_params({"protected": ["skill", "read"], "keep": 3}) == (
        "protected=skill+read, keep=3"
    )
    row = {"name": "mine", "cache_class": "churn", "defaults": {}, "rule": "a | b",
           "source": "x|y"}
    assert markdown_table([row]).splitlines()[2] == "| `mine` | churn | — | a \\| b | x\\|y |"


def test_a_progress_bar_says_its_label_alone_when_done_and_nothing_when_quiet() -> None:
    """(Names with brackets and escaped details: test_printable.)"""
    from replay.cli._progress import progress_bar

    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, color_system=None, width=200)
    with progress_bar("replaying", console=terminal) as bar:
        bar("baseline", 1, 2)
        bar.detail("request 3 / 14")
    assert "replaying: baseline · request 3 / 14" in screen.getvalue()
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, color_system=None, width=200)
    with progress_bar("replaying", console=terminal) as bar:
        bar("", 2, 2)  # every strategy done
    assert "replaying" in screen.getvalue() and "replaying:" not in screen.getvalue()
    with progress_bar("replaying", quiet=True, console=terminal) as bar:
        assert bar is None


@pytest.mark.parametrize(
    "args, label",
    [
        (["run", RUN42, "-s", "baseline"], "replaying"),
        (["breakeven", RUN42, "-s", "baseline,truncate-500"], "break-even"),
        (["whatif", RUN42, "--at", "8", "--prune", "older-than:3"], "what if"),
    ],
)
def test_json_on_standard_output_keeps_the_progress_bar_on_a_terminal(args, label) -> None:
    """The bar is on standard error: `--format json` leaves it there for every command, and
    only `--quiet` or a standard error that is no terminal takes it away (`whatif` alone hid
    it under `--format json`)."""
    from click.testing import CliRunner

    from replay.cli import cli
    from replay.cli._main import load_commands

    load_commands()
    on_terminal = CliRunner(env={"TTY_COMPATIBLE": "1", "NO_COLOR": "1"})
    for quiet, drawn in (([], True), (["-q"], False)):
        done = on_terminal.invoke(cli, [*map(str, args), "--format", "json", *quiet],
                                  catch_exceptions=False)
        assert done.exit_code == 0, done.stderr
        assert json.loads(done.stdout)["log"] == str(RUN42)  # (the JSON alone on standard output)
        assert (label in done.stderr) is drawn, (quiet, done.stderr)

def test_a_status_spinner_shows_on_a_terminal_and_not_when_quiet() -> None:
    from replay.cli._progress import status

    for quiet, shown in ((False, True), (True, False)):
        screen = io.StringIO()
        terminal = Console(file=screen, force_terminal=True, color_system=None, width=200)
        with status("drawing cost", quiet, terminal):
            pass
        assert ("drawing cost" in screen.getvalue()) is shown


def test_a_family_without_canonical_names_is_listed_by_its_family(clean_registry) -> None:
    """A family registered from code with no name of its own for `all` (`canonical=()`) is
    still listed: one row, named by the family, with its build's defaults."""
    from replay.cli._cmd_strategies import strategy_rows
    from replay.strategies._base import StrategySpec, register

    def build(keep: int = 3):
        return lambda history, ctx: list(history)[-keep:]

    register(StrategySpec(family="keep-last", pattern=r"keep-last(-(?P<keep>\d+))?",
                          build=build, cache_class="churn", rule="keep the last N items"))
    (row,) = [r for r in strategy_rows() if r["family"] == "keep-last"]
    assert (row["name"], row["defaults"], row["rule"]) == ("keep-last", {"keep": 3},
                                                           "keep the last N items")
