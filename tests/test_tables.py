"""Terminal tables on a narrow terminal: no number is cut, hidden columns are named.

rich squeezes every column of a table wider than the terminal, numbers included (`41,…`). The
commands are run here as on a terminal (`TTY_COMPATIBLE=1`, `COLUMNS=N`), and their output is
checked against the same command's piped output, which has the whole table.
"""

from __future__ import annotations

import io
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from test_calibrate import synthetic_session
from test_fidelity import _billed_session

from replay.cli import cli
from replay.cli._main import load_commands
from replay.log import write_log
from replay.report._table import _usd, summary_table, turns_table

ROOT = Path(__file__).resolve().parent.parent
RUN42 = str(ROOT / "logs" / "run42.jsonl")
THREE = "baseline,truncate-500,compact-at-12000-structured"
WIDTHS = (40, 60, 80, 100, 120)
# A number as the tables print it: 41,123 · $0.0074 · -$0.0012 · 69.0% · $0.000012 · 4× · 0.063
NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?(?:E[-+]\d+)?[%×]?")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

load_commands()


def _run(args: list[str], columns: int | None = None) -> str:
    """stdout of the command, on a terminal `columns` wide (None: piped)."""
    env = {"NO_COLOR": "1"}
    if columns is not None:
        env |= {"TTY_COMPATIBLE": "1", "COLUMNS": str(columns)}
    else:
        env |= {"TTY_COMPATIBLE": "0", "COLUMNS": None}
    result = CliRunner(env=env).invoke(cli, args, prog_name="replay", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return ANSI.sub("", result.stdout)


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("tables")
    paths = {"billed": folder / "billed.jsonl", "calibrate": folder / "calib.jsonl"}
    write_log(_billed_session(), paths["billed"])
    write_log(synthetic_session(1.2, rounds=12), paths["calibrate"])
    batch = folder / "batch"
    batch.mkdir()
    (batch / "run42.jsonl").write_bytes(Path(RUN42).read_bytes())
    return {name: str(p) for name, p in paths.items()} | {"batch": str(batch)}


COMMANDS = {
    "run": ["run", RUN42, "-s", "all", "-q"],
    "run-three": ["run", RUN42, "-s", THREE, "-q"],
    "per-turn": ["run", RUN42, "-s", THREE, "--per-turn", "--breakeven", "-q"],
    "breakeven": ["breakeven", RUN42, "-s", "all", "-q"],
    "whatif": ["whatif", RUN42, "--at", "8", "--prune", "older-than:3", "-q"],
    "batch": ["batch", "{batch}", "-s", "all", "-w", "1", "-q"],
    "providers": ["providers"],
    "bench": ["bench", "-n", "30", "-s", "baseline,sliding-10", "--naive-requests", "5",
              "--no-doubling", "--no-memory", "-q"],
    "calibrate": ["calibrate", "{calibrate}", "-q"],
    "fidelity": ["fidelity", "{billed}", "-q"],
    "strategies": ["strategies"],
}


def _args(name: str, logs: dict[str, str]) -> list[str]:
    return [a.format(**logs) for a in COMMANDS[name]]


def _numbers(text: str) -> set[str]:
    return set(NUMBER.findall(text))


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_number_is_cut_on_a_narrow_terminal(name: str, columns: int, logs) -> None:
    args = _args(name, logs)
    narrow, whole = _run(args, columns), _run(args)
    if name == "calibrate":  # the JSON rows under the table are printed whole, to be pasted
        narrow, whole = (text.split("rows for pricing")[0] for text in (narrow, whole))
    if name == "bench":  # timings differ from run to run: compare shapes only
        whole = NUMBER.sub("0", whole)
        narrow = NUMBER.sub("0", narrow)
    assert narrow.count("…") <= whole.count("…"), narrow  # (a rule may quote a `…` marker)
    assert all(cell_len(line) <= columns for line in narrow.splitlines()), narrow
    # A cut or folded number ("41,12" + "3" on the next line) is not a number of the whole table
    # (but a folded name's piece can look like one: `openhands-amortized-1` + `00`).
    table = "\n".join(line for line in narrow.splitlines() if not line.startswith("note: hidden"))
    names = [word for word in whole.split() if re.search("[a-z]", word)]
    cut = {n for n in _numbers(table) - _numbers(whole) if not any(n in w for w in names)}
    assert not cut, cut


def test_the_summary_hides_the_least_important_columns_and_says_so() -> None:
    narrow = _run(COMMANDS["run"], 80)
    table, note = narrow.split("note: hidden to fit 80 columns: ")
    note = " ".join(note.split())
    assert note.startswith("requests, written, ") and "--format json" in note, note
    for kept in ("cost", "hit", "blind", "over"):  # the essential columns stay
        assert kept not in note
    # Every strategy's cost and hit ratio are there, whole.
    document = json.loads(_run([*COMMANDS["run"], "--format", "json"]), parse_float=Decimal)
    for row in document["summary"]:
        assert _usd(row["cost_usd"]) in table
        assert f"{row['hit_ratio']:.1%}" in table


def test_a_table_that_fits_is_printed_as_before() -> None:
    # 240 columns hold the whole summary: the same bytes as the piped output, and no note.
    wide = _run(COMMANDS["run"], 240)
    assert wide == _run(COMMANDS["run"])
    assert "hidden" not in wide


@pytest.fixture(scope="module")
def run42():
    from replay import replay
    from replay._api import breakeven, turns_with_breakeven

    result = replay(RUN42, "all")
    return result, turns_with_breakeven(result.turns, breakeven(RUN42, "all"))


def _render(renderable, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None,
                      highlight=False, markup=False)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize("width", [50, *WIDTHS])
def test_the_summary_at_a_fixed_width(run42, width: int) -> None:
    result, _ = run42
    text = _render(summary_table(result.summary, "run42"), width)
    assert "…" not in text
    assert all(cell_len(line) <= width for line in text.splitlines())
    assert all(_usd(cost) in text for cost in result.summary["cost_usd"])
    as_records = any(line.startswith("strategy  ") for line in text.splitlines())
    # Side by side, columns are hidden to fit (and named); as records, none is.
    assert ("note: hidden to fit" in text) != as_records


def test_a_terminal_too_narrow_for_the_columns_always_shown_gets_records() -> None:
    """At 60 columns the break-even table's six essential columns do not fit side by side even
    at their narrowest: each row is printed as a record, a line per column (all of them: a
    record has room for every one), nothing cut."""
    narrow = _run(COMMANDS["breakeven"], 60)
    rows = json.loads(_run([*COMMANDS["breakeven"], "--format", "json"]))["breakeven"]
    assert "note: hidden" not in narrow
    records = [r for r in narrow.split("\n\n")[1:] if r.startswith("strategy")]
    assert len(records) == len(rows)
    for record, row in zip(records, rows, strict=True):
        lines = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1)
                     for line in record.splitlines() if not line.startswith(" "))
        assert list(lines)[:3] == ["strategy", "#", "event"]
        assert {"first edit", "surviving", "disagreement"} <= set(lines)
        assert lines["strategy"] == row["strategy"] and lines["#"] == str(row["request_index"])
        assert lines["surviving"] == f"{row['surviving_tokens']:,}"


@pytest.mark.parametrize("width", [40, 50])
def test_records_keep_the_tables_caption(logs, width: int) -> None:
    """A table printed as records still says what its caption says: break-even's "no rewrite",
    fidelity's whole headline."""
    empty = _run(["breakeven", RUN42, "-s", "baseline", "-q"], width)
    assert "no rewrite" in " ".join(empty.split())
    fidelity = " ".join(_run(_args("fidelity", logs), width).split())
    assert "cache reads within tolerance" in fidelity and "cost recorded" in fidelity


def test_a_table_wider_than_the_pipe_keeps_rich_layout_when_no_word_is_cut(run42) -> None:
    """Piped, a table wider than 240 columns whose wrapped text columns keep every word is
    printed as before (rich's own layout), byte for byte."""
    _, turns = run42
    fitted = turns_table(turns, "run42")
    assert Measurement.get(Console(width=1000), Console(width=1000).options,
                           fitted.table).maximum > 240
    assert _render(fitted, 240) == _render(fitted.table, 240)


def test_a_rich_without_its_private_layout_method_still_cuts_no_number(run42, monkeypatch) -> None:
    # `_whole` asks rich's private Table._calculate_column_widths; should a rich release not
    # have it (rich itself needs it, so it is hidden from `_fit` alone), the fitted layout is used.
    import builtins

    from replay.report import _fit

    def no_layout(obj: object, name: str, *default: object) -> object:
        if name == "_calculate_column_widths":
            return None
        return builtins.getattr(obj, name, *default)

    monkeypatch.setattr(_fit, "getattr", no_layout, raising=False)
    result, _ = run42
    text = _render(summary_table(result.summary, "run42"), 100)
    assert "…" not in text
    assert all(_usd(c) in text for c in result.summary["cost_usd"])


@pytest.mark.parametrize(
    "value, places, shown",
    [
        ("1234.56789", 4, "$1,234.5679"),
        ("-0.0012", 4, "-$0.0012"),
        ("0.0000006", 6, "$0.00000060"),  # below the last place: two significant digits
        ("0.00001234", 4, "$0.000012"),
        ("-0.00000123", 4, "-$0.0000012"),
        ("0", 6, "$0.000000"),
        ("0.0001", 4, "$0.0001"),  # the last place itself is not below it
        ("0.01845", 4, "$0.0185"),  # halves up, as the page's fmtUsd
        ("0.000012345", 4, "$0.000012"),
        ("0.0000125", 4, "$0.000013"),
    ],
)
def test_money_below_the_last_place_is_a_plain_decimal(value, places, shown):
    """Money in a table is never in scientific notation (a break-even table showed $6.00E-7)."""
    assert _usd(Decimal(value), places) == shown
