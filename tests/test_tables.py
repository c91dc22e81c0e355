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
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console, Group
from rich.measure import Measurement
from rich.table import Table
from test_calibrate import synthetic_session
from test_fidelity import _billed_session

from replay._words import counted
from replay.cli import cli
from replay.cli._main import load_commands
from replay.log import write_log
from replay.report._fit import Fitted, fit
from replay.report._money import usd
from replay.report._table import (
    SUMMARY_HIDDEN_FIRST,
    TURNS_HIDDEN_FIRST,
    closed_form_text,
    console,
    print_table,
    summary_table,
    turns_table,
)

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
        assert usd(row["cost_usd"]) in table
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
    assert all(usd(cost) in text for cost in result.summary["cost_usd"])
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
    assert all(usd(c) in text for c in result.summary["cost_usd"])


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
        # Two digits that round up to a power of ten: written as that value is (they were
        # $0.000100 and $0.0000100, three digits, not how 0.0001 and 0.00001 are written).
        ("0.0000999", 4, "$0.0001"),
        ("0.0000995", 4, "$0.0001"),
        ("0.0000994", 4, "$0.000099"),
        ("-0.0000999", 4, "-$0.0001"),
        ("0.00000999", 4, "$0.000010"),
        ("0.0000009999", 6, "$0.000001"),
    ],
)
def test_money_below_the_last_place_is_a_plain_decimal(value, places, shown):
    """Money in a table is never in scientific notation (a break-even table showed $6.00E-7)."""
    assert usd(Decimal(value), places) == shown


@settings(max_examples=300, deadline=None)
@given(
    value=st.decimals(-2, 2, places=12, allow_nan=False, allow_infinity=False),
    places=st.sampled_from([4, 6]),
)
def test_money_is_written_as_the_figure_it_shows_is(value: Decimal, places: int) -> None:
    """A figure read back is written the same: the text never shows a value in a form its own
    value would not take (0.0000999 as $0.000100, where 0.0001 is $0.0001), and it is the value
    rounded at the places it shows, halves up."""
    shown = usd(value, places)
    figure = Decimal(shown.replace("$", "").replace(",", ""))
    assert usd(figure, places) == shown
    half = Decimal(5).scaleb(-len(shown.partition(".")[2]) - 1)
    assert abs(figure - value) <= half


def _summary_row(strategy: str, cost: str, **fields) -> dict:
    return {"strategy": strategy, "requests": 3, "prompt_tokens": 41_123, "cached_tokens": 30_000,
            "cache_write_tokens": 1_000, "uncached_tokens": 10_123, "output_tokens": 900,
            "cost_usd": Decimal(cost), "peak_prompt_tokens": 20_000, "hit_ratio": 0.69,
            "prefix_breaks": 0, "over_window": 0, "blind_actions": 0, "summarizer_calls": 0,
            "summarizer_cost_usd": Decimal(0)} | fields


def _cells(fitted, header: str) -> list:
    """The cells of the column `header` as they were added (str or rich Text)."""
    [column] = [c for c in fitted.table.columns if c.header == header]
    return list(column.cells)


def test_summary_cells_mark_the_cheapest_and_the_summarizer_share() -> None:
    """The cheapest cost is bold green; over window and blind actions are red when not zero;
    a strategy that made summarizer calls gets a line with their count (grouped by thousands,
    as the table's other counts) and their share of the cost (calls that cost nothing
    included), one that made none does not."""
    import polars as pl

    summary = pl.DataFrame([
        _summary_row("compact", "0.0125", summarizer_calls=1,
                     summarizer_cost_usd=Decimal("0.0034"), over_window=2, blind_actions=1),
        _summary_row("baseline", "0.0100"),
        _summary_row("window", "0.0200", summarizer_calls=1_200,
                     summarizer_cost_usd=Decimal("0.001")),
        _summary_row("free", "0.0300", summarizer_calls=2, summarizer_cost_usd=Decimal(0)),
    ])
    fitted = summary_table(summary, "t")
    names = [c.plain if hasattr(c, "plain") else c for c in _cells(fitted, "strategy")]
    assert names == ["compact", "  └ summarizer (1 call)", "baseline", "window",
                     "  └ summarizer (1,200 calls)", "free", "  └ summarizer (2 calls)"]
    costs = _cells(fitted, "cost (USD)")
    assert [c.plain for c in costs] == ["$0.0125", "incl. $0.0034", "$0.0100", "$0.0200",
                                        "incl. $0.0010", "$0.0300", "incl. $0.0000"]
    cheapest = [c.plain for c in costs if [str(s.style) for s in c.spans] == ["bold green"]]
    assert cheapest == ["$0.0100"]
    assert _cells(fitted, "hit ratio")[0] == "69.0%"
    assert _cells(fitted, "requests")[:2] == ["3", ""]
    for header in ("over window", "blind actions"):
        cells = _cells(fitted, header)
        assert [str(cells[i].style) for i in (0, 2, 3)] == ["red", "", ""]
    assert fitted.hide == SUMMARY_HIDDEN_FIRST and fitted.fold == {"strategy": 20}
    # Only names fold: rich's own layout never wraps a strategy name.
    assert [c.header for c in fitted.table.columns if c.no_wrap] == ["strategy"]


def _documented_order(table: str) -> list[str]:
    """docs/report.md's "left out first → last" for `table`."""
    for line in (ROOT / "docs" / "report.md").read_text().splitlines():
        if line.startswith(f"| {table} "):
            return line.split("|")[2].strip().split(", ")
    raise AssertionError(table)


def test_the_columns_are_hidden_in_the_documented_order() -> None:
    assert list(SUMMARY_HIDDEN_FIRST) == _documented_order("summary (`replay run`, `whatif`)")
    documented = _documented_order("per request (`--per-turn`)")
    assert [h.split(" (")[0] for h in TURNS_HIDDEN_FIRST] == [d.split(" (")[0] for d in documented]


def _turn_row(**fields) -> dict:
    return {"strategy": "baseline", "request_index": 7, "kind": "request", "prompt_tokens": 1_234,
            "cached_tokens": 1_000, "cache_write_tokens": 0, "uncached_tokens": 234,
            "output_tokens": 50, "first_mismatch_token": None, "diverged_at": None,
            "miss_cause": None, "cost_usd": Decimal("0.00001234")} | fields


def test_per_request_cells() -> None:
    """`#` is the row's request index; a missing value is an empty cell; the break-even column
    (`event: closed form / simulated`, `never` for none) only with break-even rows."""
    import polars as pl

    plain = turns_table(pl.DataFrame([_turn_row()]), "t")
    assert [c.header for c in plain.table.columns][-1] == "cost (USD)"
    assert _cells(plain, "#") == ["7"]
    assert _cells(plain, "first mismatch") == _cells(plain, "miss cause") == [""]
    assert _cells(plain, "cost (USD)") == ["$0.000012"]
    assert {c.header: c.justify for c in plain.table.columns
            if c.justify == "left"}.keys() == {"strategy", "kind", "diverged at", "miss cause"}
    assert plain.wrap == {"miss cause": 16, "break-even (closed / simulated)": 16}
    rows = [
        _turn_row(event=None, breakeven_closed_form=None, breakeven_simulated=None),
        _turn_row(event="", breakeven_closed_form=None, breakeven_simulated=None),
        _turn_row(event="truncate", breakeven_closed_form=1_000_000.0, breakeven_simulated=None),
        _turn_row(event="compact", breakeven_closed_form=None, breakeven_simulated=3,
                  cost_usd=Decimal("0.01234567")),
    ]
    with_breakeven = turns_table(pl.DataFrame(rows), "t")
    assert _cells(with_breakeven, "cost (USD)")[2:] == ["$0.000012", "$0.0123"]
    assert _cells(with_breakeven, "break-even (closed / simulated)") == [
        "", "", "truncate: 1,000,000 / never", "compact: never / 3"]


def test_a_thread_column_only_where_the_rows_span_several_threads() -> None:
    """A subagent's requests interleave with the main thread's, and their first mismatch and
    miss cause compare with their own thread's previous request: the rows say which thread."""
    import polars as pl

    summarized = [_turn_row(thread="main"), _turn_row(thread="main/summarizer", kind="summarizer")]
    one = turns_table(pl.DataFrame(summarized), "t")  # `kind` says it
    assert "thread" not in [c.header for c in one.table.columns]
    rows = [_turn_row(thread="main"), _turn_row(thread="agent-a1", request_index=8)]
    two = turns_table(pl.DataFrame(rows), "t")
    assert [c.header for c in two.table.columns][:4] == ["strategy", "#", "thread", "kind"]
    assert _cells(two, "thread") == ["main", "agent-a1"]


@pytest.mark.parametrize(
    "closed, shown",
    [(None, "never"), (10604.25, "10,604.25"), (1e6, "1,000,000"), (2.5, "2.5"), (3.0, "3"),
     (0.004, "0"), (-0.004, "0"), (-1.25, "-1.25")],
)
def test_a_closed_form_break_even_has_two_decimals_at_most(closed, shown) -> None:
    assert closed_form_text(closed) == shown


def test_counted_words() -> None:
    assert [counted(1, "file"), counted(0, "file"), counted(1_234, "request")] == [
        "1 file", "0 files", "1,234 requests"]
    assert [counted(1, "strategy", "strategies"), counted(3, "strategy", "strategies")] == [
        "1 strategy", "3 strategies"]


def test_a_piped_table_is_240_columns_and_its_brackets_are_data(tmp_path, monkeypatch) -> None:
    """Piped or written to a file, a table is 240 columns wide (docs/report.md), and a cell such
    as `sliding-10[messages=4]` is printed as it is, not read as a style tag."""
    monkeypatch.setenv("TTY_COMPATIBLE", "0")
    monkeypatch.delenv("COLUMNS", raising=False)
    assert console().width == 240
    out = io.StringIO()
    piped = console()
    piped.file = out
    piped.print("sliding-10[messages=4] [bold]x[/bold]")
    assert out.getvalue() == "sliding-10[messages=4] [bold]x[/bold]\n"
    path = tmp_path / "t.txt"
    print_table("[dim]" + "x" * 230, path)
    assert path.read_text() == "[dim]" + "x" * 230 + "\n"


def _names(title: str | None = None, caption: str | None = None, hide=(), noted=None) -> Fitted:
    """A name that folds (26 letters, no space) and a cost that must stay whole."""
    table = Table(title=title, caption=caption)
    table.add_column("name")
    table.add_column("cost", justify="right")
    table.add_row("abcdefghijklmnopqrstuvwxyz", "$1,234.5678")
    table.add_row("short", "$0.0100", style="red")
    return Fitted(table, hide=hide, fold={"name": 20}, noted=noted)


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def test_names_fold_down_to_ten_characters_then_rows_become_records() -> None:
    """Names fold down to 10 characters when the columns do not fit otherwise (28 columns: 10 +
    11 + padding and rules); one column narrower, each row is a record, `header  value`, the
    value as wide as the terminal but its header's, a blank line between rows."""
    assert _lines(_render(_names(), 28))[3:6] == [
        "│ abcdefghij │ $1,234.5678 │", "│ klmnopqrst │             │",
        "│ uvwxyz     │             │"]
    assert _lines(_render(_names(), 27)) == [
        "name  abcdefghijklmnopqrstu", "      vwxyz", "cost  $1,234.5678", "",
        "name  short", "cost  $0.0100"]


def test_records_show_every_column_under_the_title_and_above_the_caption() -> None:
    """As records, no column is hidden (and no note): a record has room for every one; the
    title comes first, the caption last, and each record keeps its row's style."""
    fitted = _names("T", "C", hide=("cost",))
    assert _lines(_render(fitted, 13)) == [
        "T", "", "name  abcdefg", "      hijklmn", "      opqrstu", "      vwxyz",
        "cost  $1,234.", "      5678", "", "name  short", "cost  $0.0100", "", "C"]
    console = Console(width=13, file=io.StringIO())
    shown, hidden = fit(fitted.table, console, console.options, fitted)
    assert hidden == []
    records = [r for r in shown.renderables if isinstance(r, Table)]
    assert [str(r.rows[0].style) for r in records] == ["None", "red"]


def test_a_note_is_printed_once_for_the_tables_that_share_it() -> None:
    """At 20 columns `cost` is hidden, with a note; tables sharing `noted` print it once, and
    so does one table printed twice."""
    noted: set[str] = set()
    text = _render(Group(_names(hide=("cost",), noted=noted),
                         _names(hide=("cost",), noted=noted)), 20)
    assert " ".join(text.split()).count("note: hidden to fit 20 columns: cost (a wider") == 1
    once = _names(hide=("cost",))
    assert _render(Group(once, once), 20).count("note: hidden") == 1
    assert _render(Group(_names(hide=("cost",)), _names(hide=("cost",))), 20).count(
        "note: hidden") == 2


def test_titles_captions_and_cells_are_printable() -> None:
    """A log's text cannot reach the terminal as control sequences (docs/report.md)."""
    table = Table(title="a\x1b[2Jb", caption="c\u202ed")
    table.add_column("name")
    table.add_row("e\x1bf")
    fitted = Fitted(table)
    assert (fitted.table.title, fitted.table.caption) == ("a\\x1b[2Jb", "c\\u202ed")
    assert list(fitted.table.columns[0].cells) == ["e\\x1bf"]


def test_the_box_and_padding_widths() -> None:
    """The box: two edges and a rule between columns (none without a box); padding: a space on
    each side by default."""
    from rich import box

    from replay.report._fit import _padding, _rules

    assert [_rules(Table(), 3), _rules(Table(show_edge=False), 3), _rules(Table(box=None), 3)] == [
        4, 2, 0]
    assert [_rules(Table.grid(), 3), _rules(Table(box=box.SIMPLE, show_edge=True), 1)] == [0, 2]
    assert [_padding(Table()), _padding(Table(padding=(0, 2, 0, 1))), _padding(Table.grid())] == [
        2, 3, 0]


def test_shrinking_narrows_the_widest_first_and_never_below_a_floor() -> None:
    from replay.report._fit import _shrink

    assert _shrink([10, 3], [2, 2], 8, [0, 1]) == [5, 3]
    assert _shrink([6, 6], [2, 2], 12, [0, 1]) == [6, 6]  # fits already
    assert _shrink([6, 6], [5, 6], 8, [0, 1]) == [5, 6]  # floors first: may not fit
    assert _shrink([6, 9], [2, 2], 8, [0]) == [2, 9]  # only among those given
    assert _shrink([6, 6, 6], [2, 2, 2], 16, [0, 1, 2]) == [6, 5, 5]  # ties: rightmost first


def test_a_columns_floor_and_span() -> None:
    """The floor: the longest word; a name (`fold`) down to its fold width; a text column
    (`wrap`) at least its wrap width or its widest cell. The span: longest word, widest cell
    (headers included) and widest cell but the header."""
    from rich.table import Column

    from replay.report._fit import _floor, _Span, _span

    spec = Fitted(Table(), fold={"name": 20}, wrap={"cause": 16})
    assert [_floor("name", _Span(5, 30, 30), spec), _floor("name", _Span(5, 12, 12), spec)] == [
        20, 12]
    assert [_floor("cause", _Span(5, 30, 30), spec), _floor("cause", _Span(5, 9, 9), spec),
            _floor("cause", _Span(18, 30, 30), spec), _floor("cost", _Span(7, 30, 9), spec)] == [
        16, 9, 18, 7]
    console = Console(width=20)
    column = Column(header="long header", _cells=["7", "12 345"])
    assert _span(console, console.options, column) == _Span(6, 11, 6)
    assert _span(console, console.options, Column(header="ab")) == _Span(2, 2, 0)


def test_columns_are_hidden_only_until_the_table_fits() -> None:
    """Hiding stops as soon as the table fits: at 46 columns, leaving out `a` makes room (name
    20 + cost 11 + b 5, padding 6, rules 4), so `b` stays; one column less, `b` goes too."""
    table = Table()
    for header in ("name", "cost", "a", "b"):
        table.add_column(header)
    table.add_row("abcdefghijklmnopqrstuvwxyz", "$1,234.5678", "1,111", "2,222")
    fitted = Fitted(table, hide=("a", "b"), fold={"name": 20})
    at_46 = _render(fitted, 46)
    assert "note: hidden to fit 46 columns: a (a wider" in " ".join(at_46.split())
    assert "2,222" in at_46 and "1,111" not in at_46
    fitted.noted.clear()
    assert "note: hidden to fit 45 columns: a, b (" in " ".join(_render(fitted, 45).split())


def test_headers_wrap_first_then_text_then_names() -> None:
    """Narrowing for room: a header wraps down to its cells first (one line), then text cells
    wrap (lines on every row), and a name folds last. 57 columns leave 47 for the three
    (padding 6, rules 4): the name keeps its 26, the header wraps to its word `header` (6), the
    text takes the 15 left."""
    table = Table()
    for header in ("name", "a long header here", "cause"):
        table.add_column(header)
    table.add_row("abcdefghijklmnopqrstuvwxyz", "1,111", "one two three four five")
    fitted = Fitted(table, fold={"name": 20})
    console = Console(width=57)
    shown, hidden = fit(fitted.table, console, console.options, fitted)
    assert ([c.width for c in shown.columns], hidden) == ([26, 6, 15], [])
