"""JSON and CSV output written in pieces (`json_pieces`, `csv_pieces`): the same bytes as the
whole document encoded at once, with the rows of a long table made a batch at a time as they are
written."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from conftest import RUN42
from hypothesis import given
from hypothesis import strategies as st

from replay.report._export import (
    _DECIMAL_TOKEN,
    FrameRows,
    _plain,
    _stringify_money,
    _stringify_times,
    csv_pieces,
    frame_rows,
    json_pieces,
    lazy_rows,
    to_csv,
    to_json,
    to_parquet_bytes,
    write_output,
)


def _whole(document: dict) -> str:
    """The reference: the document with plain lists, encoded at once."""
    text = json.dumps(_plain(document), indent=2, ensure_ascii=False)
    return _DECIMAL_TOKEN.sub(r"\1", text) + "\n"


texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
cells = {
    "n": st.integers(-(2**40), 2**40) | st.none(),
    "s": texts | st.none(),
    "usd": st.decimals(min_value=-10**6, max_value=10**6, places=6, allow_nan=False) | st.none(),
    "ts": st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1))
    .map(lambda t: t.replace(tzinfo=UTC)) | st.none(),
    "x": st.floats(allow_nan=False, allow_infinity=False, width=32),
    "tags": st.lists(texts, max_size=3),
}


@st.composite
def frames(draw, columns: tuple[str, ...] = tuple(sorted(cells))) -> pl.DataFrame:
    names = draw(st.lists(st.sampled_from(columns), min_size=1, max_size=4, unique=True))
    height = draw(st.integers(0, 9))
    columns = {name: [draw(cells[name]) for _ in range(height)] for name in names}
    schema = {"n": pl.Int64, "s": pl.Utf8, "usd": pl.Decimal(20, 6),
              "ts": pl.Datetime("us", "UTC"), "x": pl.Float64, "tags": pl.List(pl.Utf8)}
    return pl.DataFrame(columns, schema={n: schema[n] for n in names})


plain_values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts
    | st.decimals(places=4, allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


@given(
    st.lists(st.tuples(st.text(max_size=6), st.booleans()), min_size=1, max_size=5,
             unique_by=lambda kv: kv[0]),
    st.data(),
    st.integers(1, 4),
)
def test_pieces_are_the_whole_document(keys, data, batch) -> None:
    """Any document whose first-level values are tables (some empty) or anything else: the
    pieces join to the text of the whole, whatever the batch size."""
    lazy, eager = {}, {}
    for key, is_table in keys:
        if is_table:
            frame = data.draw(frames())
            lazy[key], eager[key] = lazy_rows(frame), frame.to_dicts()
        else:
            lazy[key] = eager[key] = data.draw(plain_values)
    FrameRows.BATCH, before = batch, FrameRows.BATCH
    try:
        assert "".join(json_pieces(lazy)) == _whole(eager) == to_json(lazy)
        assert json.loads(to_json(lazy)) == json.loads(_whole(eager))
    finally:
        FrameRows.BATCH = before


def test_rows_are_made_as_they_are_written(monkeypatch) -> None:
    """A long table is turned into Python rows a batch at a time, each written before the next
    is made: never all of them at once."""
    start = datetime(2026, 12, 1, tzinfo=UTC)
    frame = pl.DataFrame({"i": list(range(10)), "usd": [Decimal("0.1")] * 10,
                          "ts": [start + timedelta(seconds=n) for n in range(10)]})
    made: list[int] = []
    real = pl.DataFrame.to_dicts

    def counted(self):
        made.append(self.height)
        return real(self)

    monkeypatch.setattr(pl.DataFrame, "to_dicts", counted)
    monkeypatch.setattr(FrameRows, "BATCH", 3)
    pieces = json_pieces({"log": "x", "requests": lazy_rows(frame)})
    seen = ""
    while '"i": 0' not in seen:
        seen += next(pieces)
    assert made == [3]  # the first batch only
    rest = "".join(pieces)
    assert made == [3, 3, 3, 1]
    assert json.loads(seen + rest)["requests"][9] == {"i": 9, "usd": 0.1,
                                                       "ts": "2026-12-01T00:00:09Z"}


def test_a_document_that_is_not_an_object_is_written_whole() -> None:
    rows = [{"usd": Decimal("0.10"), "n": 1}]
    assert to_json(rows) == _whole(rows) == '[\n  {\n    "usd": 0.1,\n    "n": 1\n  }\n]\n'
    assert to_json(3) == "3\n"


@given(frames(columns=("n", "s", "usd", "ts", "x")), st.integers(1, 4))
def test_csv_pieces_are_the_whole_table(frame, batch) -> None:
    """CSV in pieces: the bytes of the whole frame converted and written at once (the reference
    is how `to_csv` wrote it before it came in pieces), for any batch size, empty frames too."""
    whole = _stringify_times(_stringify_money(frame)).write_csv()
    FrameRows.BATCH, before = batch, FrameRows.BATCH
    try:
        assert "".join(csv_pieces(frame)) == whole
    finally:
        FrameRows.BATCH = before


def test_csv_rows_are_converted_as_they_are_written(monkeypatch) -> None:
    """A long table is converted and written a batch at a time: the first piece comes before
    the later rows are made into text."""
    frame = pl.DataFrame({"i": list(range(10)), "usd": [Decimal("0.10")] * 10})
    written: list[int] = []
    real = pl.DataFrame.write_csv

    def counted(self, *args, **kwargs):
        written.append(self.height)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pl.DataFrame, "write_csv", counted)
    monkeypatch.setattr(FrameRows, "BATCH", 4)
    pieces = csv_pieces(frame)
    assert next(pieces) == "i,usd\n0,0.1\n1,0.1\n2,0.1\n3,0.1\n"
    assert written == [4]
    assert "".join(pieces).splitlines()[-1] == "9,0.1"
    assert written == [4, 4, 2]


def test_the_terminal_table_is_made_only_for_the_terminal(invoke, monkeypatch, tmp_path) -> None:
    """JSON, CSV and Parquet write the frame: the table's cells (a string per value of every
    request and strategy) are not made for them (`-s all --per-turn` on `replay bench -n 1000`'s
    log: 273 → 230 MB peak as CSV, 266 → 221 MB as JSON)."""
    from replay import report

    def refused(*args, **kwargs):
        raise AssertionError("a table was made for a file output")

    for name in ("turns_table", "summary_table"):
        monkeypatch.setattr(report, name, refused)
    for fmt in ("json", "csv", "parquet"):
        for per_turn in ([], ["--per-turn"]):
            out = tmp_path / f"out.{fmt}"
            result = invoke("run", RUN42, "-s", "baseline", *per_turn, "--format", fmt, "-o", out)
            assert result.exit_code == 0, result.output
    with pytest.raises(AssertionError, match="a table was made"):
        invoke("run", RUN42, "-s", "baseline", "--per-turn")


def test_negative_money_is_a_json_number_with_every_digit() -> None:
    """Money is written as an exact JSON number, a saving below zero included (`-0.0012`, not
    a string and not through float)."""
    assert to_json({"usd": Decimal("-0.00120")}) == '{\n  "usd": -0.0012\n}\n'
    assert to_json({"usd": Decimal("100.00")}) == '{\n  "usd": 100\n}\n'  # not 1E+2
    # A zero is 0 whatever its sign (a saving of nothing is not written `-0`).
    assert to_json({"usd": Decimal("-0.000")}) == '{\n  "usd": 0\n}\n'


def test_tuples_and_nested_tables_are_json_lists() -> None:
    """A tuple is a list, with its money exact; a table below the first level is a list of its
    rows too (only first-level tables are written a batch at a time)."""
    frame = pl.DataFrame({"i": [1, 2]})
    assert json.loads(to_json({"pair": (Decimal("1.50"), 2)})) == {"pair": [1.5, 2]}
    assert json.loads(to_json({"run": {"rows": lazy_rows(frame)}})) == {
        "run": {"rows": [{"i": 1}, {"i": 2}]}
    }
    assert json.loads(to_json([lazy_rows(frame)])) == [[{"i": 1}, {"i": 2}]]
    assert frame_rows(frame) == [{"i": 1}, {"i": 2}]


def test_csv_times_are_written_as_the_json_writes_them() -> None:
    """Times in CSV as in the JSON, UTC with `Z` (`2026-11-01T10:00:00Z`), money with every
    digit."""
    frame = pl.DataFrame(
        {"at": [datetime(2026, 11, 1, 10, tzinfo=UTC)], "usd": [Decimal("0.0120")]},
        schema={"at": pl.Datetime("us", "UTC"), "usd": pl.Decimal(20, 6)},
    )
    assert to_csv(frame) == "at,usd\n2026-11-01T10:00:00Z,0.012\n"


def test_csv_is_converted_2048_rows_at_a_time() -> None:
    # docs/performance.md: "2,048 rows converted and written at a time".
    assert FrameRows.BATCH == 2048
    assert len(lazy_rows(pl.DataFrame({"i": list(range(5))}))) == 5


def test_parquet_bytes_read_back_as_the_frame() -> None:
    frame = pl.DataFrame({"i": [1, 2], "usd": [Decimal("0.10"), Decimal("-2.5")]},
                         schema={"i": pl.Int64, "usd": pl.Decimal(20, 6)})
    assert pl.read_parquet(io.BytesIO(to_parquet_bytes(frame))).equals(frame)


def test_a_dash_is_standard_output_but_a_path_named_dash_is_a_file(
    tmp_path, monkeypatch, capsys
) -> None:
    """`write_output`: no path or the string `-` is standard output (text, bytes or pieces); a
    `Path("-")` (`-o ./-`) is a file named `-`."""
    monkeypatch.chdir(tmp_path)
    write_output("text\n", "-")
    write_output("none\n", None)
    write_output(iter(["a", "b\n"]), "-")
    assert capsys.readouterr().out == "text\nnone\nab\n"
    assert not (tmp_path / "-").exists()
    write_output(iter(["x", "y"]), Path("-"))
    assert (tmp_path / "-").read_text() == "xy"
    assert capsys.readouterr().out == ""


def test_bytes_go_to_standard_output_as_they_are(capsysbinary) -> None:
    write_output(b"PAR1\x00\xff", None)
    assert capsysbinary.readouterr().out == b"PAR1\x00\xff"
