"""The notebooks in notebooks/ run top to bottom on the shipped sample, and are committed clean.

Each notebook is executed in a fresh Python kernel (nbclient) from the notebooks/ folder; the
"bring your own log" notebook runs once with whatever samples are there (`../shared/samples`,
when present) and once with none, where it falls back to `logs/run42.jsonl`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks() -> None:
    names = {p.name for p in NOTEBOOKS}
    assert {"tour.ipynb", "bring_your_own_log.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebooks_have_no_outputs(path: Path) -> None:
    import json

    book = json.loads(path.read_text(encoding="utf-8"))
    for n, cell in enumerate(book["cells"]):
        if cell["cell_type"] != "code":
            continue
        assert cell.get("outputs") == [], f"{path.name} cell {n} has outputs: clear them"
        assert cell.get("execution_count") is None, f"{path.name} cell {n} has a count"


def _execute(path: Path, cwd: Path | None = None) -> object:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("altair")
    pytest.importorskip("vl_convert")
    book = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        book, timeout=600, kernel_name="python3",
        resources={"metadata": {"path": str(cwd or path.parent)}},
    )
    client.execute()
    return book


def _text(book) -> str:
    out = []
    for cell in book.cells:
        for output in cell.get("outputs", []):
            out.append(output.get("text", ""))
            out.extend(str(v) for v in output.get("data", {}).values())
    return "\n".join(out)


def test_tour_runs() -> None:
    book = _execute(ROOT / "notebooks" / "tour.ipynb")
    text = _text(book)
    assert "truncate-500" in text and "breakeven_simulated" in text
    assert "replay-tour-report.html" in text


def test_bring_your_own_log_runs_with_the_samples_there_are() -> None:
    book = _execute(ROOT / "notebooks" / "bring_your_own_log.ipynb")
    assert "using " in _text(book)


def test_bring_your_own_log_falls_back_to_the_shipped_sample(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("REPLAY_LOG", raising=False)
    monkeypatch.setenv("REPLAY_SAMPLES", str(tmp_path / "no-samples-here"))
    book = _execute(ROOT / "notebooks" / "bring_your_own_log.ipynb")
    assert "run42.jsonl" in _text(book)


def _cell_output(book, marker: str) -> str:
    """The text of the output of the code cell whose source holds `marker`."""
    cell = next(c for c in book.cells if c.cell_type == "code" and marker in c.source)
    return "\n".join(str(o.get("data", {}).get("text/plain", o.get("text", "")))
                     for o in cell.outputs)


def _table_rows(text: str) -> list[list[str]]:
    """The cells of a printed polars table's data rows (one line per row)."""
    rows = [[c.strip() for c in line.strip("│ ").split("┆")]
            for line in text.splitlines() if "┆" in line]
    return rows[3:]  # names, `---`, types


def test_the_tour_compares_baseline_with_itself_as_zero() -> None:
    """`vs_baseline` is the cost relative to baseline: baseline's own is 0.0 (cost / base - 1
    printed -0.0, a float rounding)."""
    book = _execute(ROOT / "notebooks" / "tour.ipynb")
    rows = _table_rows(_cell_output(book, "vs_baseline="))
    assert [r[2] for r in rows if r[0] == "baseline"] == ["0.0"]


def _shown_table(path: Path, marker: str, tmp_path: Path) -> list[dict]:
    """The rows of the table shown by the cell of `path` whose source holds `marker`, whole
    (a printed table may be cut short with `…`): a cell added after it prints `_`, the
    value it showed."""
    import json

    import nbformat

    book = nbformat.read(path, as_version=4)
    at = next(n for n, c in enumerate(book.cells) if marker in c.source)
    book.cells.insert(at + 1, nbformat.v4.new_code_cell(
        'import json\nprint("SHOWN", json.dumps(_.to_dicts(), default=str))'))
    copy = tmp_path / path.name
    nbformat.write(book, copy)
    # Run from the notebooks folder, where it finds the repository root.
    ran = _execute(copy, cwd=path.parent)
    line = next(line for line in _text(ran).splitlines() if line.startswith("SHOWN "))
    return json.loads(line.removeprefix("SHOWN "))


def test_the_miss_causes_count_the_requests_the_summary_counts(monkeypatch, tmp_path) -> None:
    """The notebook's table of miss causes counts requests, as the summary's `misses` column
    does: a summarizer call's miss is not one (on run42 the table gave
    compact-at-12000-structured 9 misses, its 7 requests' and its 2 summarizer calls')."""
    import replay

    monkeypatch.delenv("REPLAY_LOG", raising=False)
    monkeypatch.setenv("REPLAY_SAMPLES", str(tmp_path / "no-samples-here"))
    rows = _shown_table(ROOT / "notebooks" / "bring_your_own_log.ipynb", "miss_cause", tmp_path)
    counted: dict[str, int] = {}
    for row in rows:
        counted[row["strategy"]] = counted.get(row["strategy"], 0) + row["requests"]
    summary = replay.replay(ROOT / "logs" / "run42.jsonl", list(counted)).summary
    assert counted == dict(summary.select("strategy", "misses").iter_rows())
    assert "compact-at-12000-structured" in counted


def test_the_tour_shows_where_each_rewriting_strategy_broke_the_prefix(tmp_path) -> None:
    """The cell "where did each strategy break the cached prefix" shows requests that broke
    it, of each strategy that did: on run42 the three that rewrite earlier context (the
    summary's prefix_breaks), none of the two that only append. It showed the first ten cache
    misses instead, all baseline's and truncate-500's, none a prefix break."""
    rows = _shown_table(ROOT / "notebooks" / "tour.ipynb", "break the cached prefix", tmp_path)
    assert rows and all(r["diverged_at"].startswith("message ") for r in rows)
    assert {r["strategy"] for r in rows} == {
        "age-truncate-500-keep-3", "compact-at-12000-structured", "sliding-10"}
    assert all(r["rewrites"] for r in rows)  # requests, each with the strategy's rewrite
