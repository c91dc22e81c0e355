"""`replay report` and `replay plot`: the report's document, the page, the charts and the CLI.

The document must round-trip: decoding the compact views (shared prefix + id ranges) and
histories gives back exactly the items each strategy sent. The page must be self-contained and
safe to open (log text can never close the data's <script> element). The browser-side behaviour
is tested in test_browser.py.
"""

from __future__ import annotations

import io
import json
import re
from decimal import Decimal
from pathlib import Path

import gen
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from test_adapters_common import SAMPLES, needs_samples

pytest.importorskip("altair")
pytest.importorskip("vl_convert")

from replay import replay  # noqa: E402
from replay.cli import cli  # noqa: E402
from replay.cli._main import load_commands  # noqa: E402
from replay.report._html import _item_text, render_html, report_document  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "logs" / "run42.jsonl"
FIVE = "baseline,truncate-500,age-truncate-500-keep-3,compact-at-12000-structured,sliding-10"
PNG = b"\x89PNG\r\n\x1a\n"

load_commands()


@pytest.fixture(scope="module")
def result():
    return replay(SAMPLE, FIVE, keep_views=True)


@pytest.fixture(scope="module")
def document(result):
    from replay.breakeven import breakeven_session
    from replay.breakeven._frame import breakeven_frame

    rows, _ = breakeven_session(result.session, FIVE)
    return report_document(result, breakeven_frame(rows), log=str(SAMPLE))


def _expand(ranges: list[int], out: list[int]) -> list[int]:
    for start, count in zip(ranges[::2], ranges[1::2], strict=True):
        out.extend(range(start, start + count))
    return out


def _decoded_views(document: dict, strategy: str) -> dict[int, list[int]]:
    """The page's decoder, in Python: request index → item ids of the view."""
    fields = {name: n for n, name in enumerate(document["recordFields"])}
    rq = {name: n for n, name in enumerate(document["requestFields"])}
    requests = {r[rq["i"]]: r for r in document["requests"]}
    last: dict[int, list[int]] = {}
    views = {}
    for rec in document["records"][document["strategies"].index(strategy)]:
        thread = requests[rec[fields["i"]]][rq["thread"]]
        encoded = rec[fields["view"]]
        view = _expand(encoded[1:], list(last.get(thread, [])[: encoded[0]]))
        last[thread] = view
        views[rec[fields["i"]]] = view
    return views


def test_views_round_trip(result, document) -> None:
    texts, items = document["texts"], document["items"]
    for strategy in document["strategies"]:
        views = _decoded_views(document, strategy)
        for record in result.records:
            if record.strategy != strategy or record.kind != "request":
                continue
            decoded = [texts[items[n][1]] for n in views[record.request_index]]
            assert decoded == [_item_text(item) for item in record.view], (
                strategy,
                record.request_index,
            )


def test_histories_are_the_full_views_of_baseline(result, document) -> None:
    texts, items = document["texts"], document["items"]
    rq = {name: n for n, name in enumerate(document["requestFields"])}
    history = _expand(document["histories"][0], [])
    baseline = _decoded_views(document, "baseline")
    for request in document["requests"]:
        before = history[: request[rq["h"]]]
        assert before == baseline[request[rq["i"]]]
    assert all(texts[items[n][1]] for n in history)


def test_each_text_is_stored_once(document) -> None:
    texts = document["texts"]
    assert len(texts) == len(set(texts))
    keys = [tuple(item[:4]) + tuple(item[5:]) for item in document["items"]]
    assert len(keys) == len(set(keys))


def test_first_mismatch_points_at_the_first_new_item(result, document) -> None:
    fields = {name: n for n, name in enumerate(document["recordFields"])}
    baseline = document["records"][document["strategies"].index("baseline")]
    views = _decoded_views(document, "baseline")
    assert baseline[0][fields["where"]] == "first" and baseline[0][fields["mm"]] is None
    for prev, rec in zip(baseline, baseline[1:], strict=False):
        # Append-only: the prompt only grows, the first new token is in the first new item.
        assert rec[fields["where"]] == "tail"
        assert rec[fields["mm"]] == len(views[prev[fields["i"]]])
    aging = document["records"][document["strategies"].index("age-truncate-500-keep-3")]
    broken = [r for r in aging if r[fields["where"]].startswith("message")]
    assert broken and all(r[fields["mm"]] >= 0 for r in broken)


def test_series_and_markers_agree_with_the_summary(result, document) -> None:
    series = document["series"]
    summary = {row["strategy"]: row for row in result.summary.iter_rows(named=True)}
    for n, strategy in enumerate(document["strategies"]):
        costs = [c for s, c in zip(series["s"], series["cost"], strict=True) if s == n]
        assert costs == sorted(costs)  # cumulative
        assert costs[-1] == pytest.approx(float(summary[strategy]["cost_usd"]), rel=1e-6)
        marks = [
            document["markKinds"][m]
            for s, m in zip(document["marks"]["s"], document["marks"]["m"], strict=True)
            if s == n
        ]
        assert marks.count("miss") == summary[strategy]["misses"]
        rewrites = [r for r in result.records if r.strategy == strategy and r.events]
        assert len(marks) - marks.count("miss") == len(rewrites)


def test_summary_has_breakeven_and_blind_columns(result, document) -> None:
    columns = [c[0] for c in document["summary"]["columns"]]
    for name in ("cost_usd", "hit_ratio", "rewrites", "paid_back", "median_breakeven",
                 "rewrite_net_usd", "blind_actions", "hidden-edit-target", "stubbed-read"):
        assert name in columns
    rows = {row[0]: dict(zip(columns, row, strict=True)) for row in document["summary"]["rows"]}
    assert rows["truncate-500"]["blind_actions"] == 1  # the fix (its stub read is a detail)
    assert rows["truncate-500"]["stubbed-read"] == 1
    assert rows["baseline"]["rewrites"] == 0
    assert rows["sliding-10"]["rewrites"] > 0
    # Money stays exact: decimal strings, as in the JSON export.
    assert Decimal(rows["baseline"]["cost_usd"]) == result.summary.filter(
        result.summary["strategy"] == "baseline"
    )["cost_usd"][0]
    assert document["breakeven"]["rows"]


def test_the_summary_s_break_even_columns_count_and_sum_each_strategy_s_rewrites() -> None:
    """docs/report.md: rewrites, how many paid back (a simulated break-even), their median
    break-even in requests and the sum of their simulated nets; a strategy without rewrites has
    none that paid back and no median or net."""
    import polars as pl

    from replay.report._html import _summary_rows

    breakeven = pl.DataFrame(
        {"strategy": ["s"] * 4, "breakeven_simulated": [1, None, 2, 9],
         "simulated_net_usd": [Decimal("0.01"), Decimal("-0.02"), Decimal("0.005"),
                               Decimal("0.001")]},
        schema={"strategy": pl.Utf8, "breakeven_simulated": pl.Int64,
                "simulated_net_usd": pl.Decimal(20, 6)},
    )
    columns, rows = _summary_rows(pl.DataFrame({"strategy": ["s", "none"]}), breakeven, {})
    keys = ["rewrites", "paid_back", "median_breakeven", "rewrite_net_usd"]
    at = [[c[0] for c in columns].index(key) for key in keys]
    assert [[row[n] for n in at] for row in rows] == [[4, 3, 2, "-0.004"], [0, 0, None, None]]


def test_the_tinted_row_is_the_recommended_one_not_the_cheapest(document) -> None:
    # truncate-500 is the cheapest of FIVE on run42 ($0.0072 against baseline's
    # $0.0074) but hides the text of its blind action: the page tinted it as the best row.
    assert document["recommended"] is None  # no unflagged strategy beats baseline here
    # append-supersede costs less than baseline with no flag ($0.0068 against $0.0074).
    three = replay(SAMPLE, "baseline,truncate-500,append-supersede", keep_views=True)
    assert report_document(three)["recommended"] == "append-supersede"


def test_blind_actions_carry_fragments_found_in_hidden_text(result, document) -> None:
    fields = {name: n for n, name in enumerate(document["recordFields"])}
    texts = document["texts"]
    truncate = document["records"][document["strategies"].index("truncate-500")]
    flagged = [r for r in truncate if r[fields["blind"]]]
    assert flagged
    history = "\n".join(
        texts[document["items"][n][1]] for n in _expand(document["histories"][0], [])
    )
    fragments = [texts[f] for r in flagged for b in r[fields["blind"]] for f in b[4]]
    assert fragments and all(f in history for f in fragments)


def test_page_is_self_contained(document) -> None:
    page = render_html(document)
    assert page.startswith("<!doctype html>")
    # Nothing is loaded from anywhere: no external script, stylesheet, image or frame in the
    # markup (the browser test also watches the network while the page runs).
    markup = re.sub(r"(<script[^>]*>).*?(</script>)", r"\1\2", page, flags=re.S)
    assert markup.count("<script") == 4
    assert not re.search(r"<(script|link|img|iframe|source)\b[^>]*\b(src|href)\s*=", markup,
                         re.I)
    assert "@import" not in page and "url(" not in re.search(r"<style>(.*?)</style>", page,
                                                               re.S).group(1)
    for marker in ("{{data}}", "{{specs}}", "{{vega}}", "{{app}}", "{{style}}", "{{title}}"):
        assert marker not in page
    assert "vegaEmbed" in page
    data = re.search(r'<script type="application/json" id="replay-data">(.*?)</script>', page,
                     re.S)
    assert data is not None
    assert json.loads(data.group(1))["strategies"] == document["strategies"]


def test_log_text_cannot_break_out_of_the_page(tmp_path) -> None:
    from replay.log import read_log, write_log

    session = read_log(SAMPLE)
    # ...and the template's own placeholders in log text stay text (each was filled where it
    # first appeared, which could be inside the data: the runtime then went there).
    evil = ("</script><script>alert(1)</script><!-- \u2028 & <b>bold</b> "
            "{{vega}} {{app}} {{specs}} {{style}} {{title}} {{data}}")
    first = session.events[0]
    session.events[0] = first.model_copy(update={"text": evil + first.text})
    path = tmp_path / "evil.jsonl"
    write_log(session, path)
    from replay.report import html_report

    page = html_report(path, "baseline", breakeven=False)
    assert page.count("<script") == 4  # data, specs, vega bundle, app: nothing injected
    assert len(page) < 2 * len(html_report(SAMPLE, "baseline", breakeven=False))
    assert "alert(1)</script>" not in page
    data = re.search(r'id="replay-data">(.*?)</script>', page, re.S).group(1)
    assert any(evil in t for t in json.loads(data)["texts"])


def test_long_session_stays_compact(tmp_path) -> None:
    synthetic = pytest.importorskip("replay.bench._synthetic")
    from replay.log import write_log
    from replay.report._html import build_report

    session = synthetic.synthetic_session(150, seed=3)
    path = tmp_path / "long.jsonl"
    write_log(session, path)
    strategies = "baseline,truncate-500,sliding-10"
    document = build_report(path, strategies, breakeven=False)
    page = render_html(document)
    log_bytes = path.stat().st_size
    texts = sum(len(t.encode()) for t in document["texts"])
    assert texts < 1.2 * log_bytes  # every text once (plus stubs), not once per request
    records = len(json.dumps(document["records"]))
    assert records < 250 * 150 * 3  # a few hundred bytes per request and strategy
    assert len(page.encode()) < 1_200_000 + 1.5 * log_bytes


@pytest.mark.parametrize("options", [{"breakeven": True}, {"breakeven": False}],
                         ids=["breakeven", "replay"])
def test_report_holds_one_strategy_at_a_time(options) -> None:
    """The document takes each strategy's records as they come: when a strategy starts, no
    record of an earlier one is alive (a long log's views, times 48 strategies, would not fit)."""
    import gc

    from replay.engine._replay import RequestRecord
    from replay.report._html import build_report

    def records() -> list[RequestRecord]:
        gc.collect()
        return [o for o in gc.get_objects() if isinstance(o, RequestRecord)]

    held_elsewhere = records()  # other tests' results (kept alive here: their ids stay theirs)
    others = {id(r) for r in held_elsewhere}
    alive_earlier: dict[str, int] = {}
    started: list[str] = []

    def progress(name: str, done: int, total: int) -> None:
        if name:
            alive = [r for r in records() if id(r) not in others]
            alive_earlier[name] = sum(1 for r in alive if r.strategy in started)
            started.append(name)

    strategies = "baseline,age-truncate-500-keep-3,sliding-10"
    document = build_report(SAMPLE, strategies, progress=progress, **options)
    assert started == strategies.split(",")
    assert alive_earlier == dict.fromkeys(started, 0)
    assert document["strategies"] == started
    assert all(document["records"])  # every strategy's rows were taken before its records went


def test_each_item_is_described_once_per_strategy_not_once_per_request(tmp_path, monkeypatch):
    """A view shares most of its items with the thread's previous one: they are described
    (their text made and interned) once, not at every request they are sent again, which made
    the report's own work grow with the square of the log."""
    synthetic = pytest.importorskip("replay.bench._synthetic")
    from replay.log import write_log
    from replay.report import _html

    session = synthetic.synthetic_session(150, seed=3)
    path = tmp_path / "long.jsonl"
    write_log(session, path)
    calls = []
    real = _html._describe

    def counted(item, interner):
        calls.append(item)
        return real(item, interner)

    monkeypatch.setattr(_html, "_describe", counted)
    strategies = ["baseline", "sliding-10", "age-truncate-500-keep-3"]
    document = _html.build_report(path, strategies, breakeven=False)
    sent = sum(len(_expand(rec[1][1:], [])) + rec[1][0]
               for records in document["records"] for rec in records)
    events = len(session.events)
    assert sent > 50 * events  # every view, item by item
    assert len(calls) <= len(strategies) * 2 * events  # each item about once per strategy


@settings(max_examples=30)
@given(gen.replay_sessions(max_turns=6))
def test_parts_merged_in_order_make_the_document_the_records_make(session) -> None:
    """`--workers`: each worker sends the page's part of a strategy (its own text and item
    numbers, pickled) instead of the records; merged in order, the parts make the document the
    records make, subagent threads included."""
    import pickle

    from replay.engine._replay import ReplayConfig, iter_replay
    from replay.engine._results import ResultTables
    from replay.report._html import _Document, document_part

    config = ReplayConfig(keep_views=True, keep_blocks=True)
    names = ["recorded", "baseline", "age-truncate-500-keep-3", "sliding-10",
             "compact-at-12000-structured"]
    whole, merged = _Document(session), _Document(session)
    for _named, records in iter_replay(session, names, config):
        whole.add(records)
        tables = ResultTables(per_turn=False)
        tables.add(records)
        merged.merge(pickle.loads(pickle.dumps(document_part(session, records))), tables)
    summary = whole.tables.summary()
    assert merged.tables.summary().equals(summary)
    assert merged.build(summary, ["n"]) == whole.build(summary, ["n"])


@needs_samples
def test_a_report_on_workers_is_the_report_of_one_process() -> None:
    """Every strategy on two spawned workers (one split into shares as well), on a log with
    subagent threads: the same document as one process makes."""
    from replay.report._html import build_report

    log = SAMPLES / "claude_code" / (
        "d-kimuson__claude-code-viewer__mock-global-claude-dir_projects_sample-project_"
        "fe5e1c67.jsonl")
    names = "recorded,baseline,tool-aging-keep-3,sliding-10,observation-mask-keep-5-poll-1"
    one = build_report(log, names)
    assert len(one["threads"]) > 1
    assert build_report(log, names, workers=2) == one


def test_parts_of_strategies_shared_out_among_workers_make_the_same_document() -> None:
    """Strategies split into shares (the thresholds set to 0) on two spawned workers: the part
    of the page rides on each strategy's first task, and the merged document is the one the
    break-even of one process gives its records to."""
    from replay.breakeven import breakeven_session
    from replay.engine._parallel import breakeven_parts
    from replay.engine._replay import ReplayConfig
    from replay.log import read_log
    from replay.report._html import _Document, document_part

    session = read_log(SAMPLE)
    config = ReplayConfig(keep_views=True, keep_blocks=True)
    whole = _Document(session)
    rows, _ = breakeven_session(session, FIVE, config, tables=whole)
    merged = _Document(session)
    parts = breakeven_parts(session, FIVE, config, 2, share_steps=0, share_min_steps=0,
                            with_records=document_part)
    shared_rows = []
    for part in parts:
        shared_rows += part.breakeven
        merged.merge(part.made, part.tables)
    assert shared_rows == rows
    summary = whole.tables.summary()
    assert merged.build(summary, []) == whole.build(summary, [])


# ---------- charts ----------


@pytest.mark.parametrize("metric", ["prompt", "cost", "hit-ratio"])
def test_chart_specs(result, metric) -> None:
    from replay.report import metric_chart

    spec = metric_chart(result, metric).to_dict()
    assert len(spec["layer"]) == 4  # lines, dots of one-request series, hover rules, markers
    assert spec["params"][0]["name"] == "hidden"
    # `replay plot`'s chart names its strategies in a legend; the page has its own switches.
    assert spec["layer"][0]["encoding"]["color"]["legend"]["orient"] == "bottom"
    page = metric_chart([], metric, named=True, strategies=["baseline"], requests=14).to_dict()
    assert page["layer"][0]["encoding"]["color"]["legend"] is None
    from replay.report._charts import series_rows, vega_spec

    compiled = vega_spec(metric, ["baseline", "a.b[0]"], requests=14)
    names = [d["name"] for d in compiled["data"]]
    assert "rows" in names and "marks" in names
    # Prompts and hit ratios are per thread (a subagent's line is not joined to the main
    # thread's); the cost is the strategy's, over all its threads.
    lines = json.dumps(spec["layer"][0]["encoding"].get("detail"))
    assert ('"t"' in lines) == (metric != "cost")
    # So is a lone point's dot: a subagent's one call is no lone point of the cost's line.
    (lone,) = [t for t in spec["layer"][1]["transform"] if "joinaggregate" in t]
    assert lone["groupby"] == (["s"] if metric == "cost" else ["s", "t"])
    assert all(row["t"] == "main" for row in series_rows(result.records))
    # The request axis ends at the last request, not at a round number past it.
    assert spec["layer"][0]["encoding"]["x"]["scale"] == {"nice": False}
    scale = next(s for s in compiled["scales"] if s["name"] == "x")
    assert scale.get("nice") is False


@pytest.mark.parametrize(("requests", "miss", "rewrite", "hover"),
                         [(60, 45, 110, 860 / 60), (61, 25, 60, 860 / 61),
                          (200, 25, 60, 4.3), (201, 14, 32, 860 / 201), (1000, 14, 32, 2.0)])
def test_the_page_s_markers_and_hover_rules_fit_its_number_of_requests(requests, miss, rewrite,
                                                                      hover) -> None:
    """The page's charts read no records (named data): they size their markers (smaller on
    long logs, where a rewrite can happen at every request) and each request's hover rule (as
    wide as a request, 2 pixels at least) from the number of requests they are given."""
    from replay.report._charts import metric_chart

    spec = metric_chart([], "cost", named=True, strategies=["a"], requests=requests).to_dict()
    _lines, _dots, rules, markers = spec["layer"]
    assert rules["mark"]["strokeWidth"] == pytest.approx(hover)
    size = markers["encoding"]["size"]
    assert (size["condition"]["value"], size["value"]) == (miss, rewrite)


def test_strategy_names_with_dots_are_fields_not_paths() -> None:
    from replay.report._charts import _field_name

    assert _field_name("truncate-0.5") == "truncate-0\\.5"
    assert _field_name("a[1]") == "a\\[1\\]"


def test_render_chart_png_and_svg(result) -> None:
    from replay.report import render_chart  # public, as docs/report.md calls it

    assert render_chart(result, "cost", "png", scale=1).startswith(PNG)
    assert render_chart(result, "hit-ratio", "svg").lstrip().startswith("<svg")
    from replay import ReplayError

    with pytest.raises(ReplayError, match="unknown format 'jpg': expected png or svg"):
        render_chart(result, "cost", "jpg")  # not PNG bytes under another name


@pytest.mark.parametrize("metric", ["prompt", "cost", "hit-ratio"])
def test_a_series_of_one_request_is_drawn(tmp_path, metric) -> None:
    """A log of one request (or a thread that made one call) still shows its point: a line
    through one point has no length and draws nothing, so each strategy's lone point is a dot
    (the chart of `replay plot` and of the page: both are `metric_chart`)."""
    from replay.report._charts import render_chart

    lines = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    answer = next(n for n, line in enumerate(lines) if '"type":"assistant"' in line)
    one = tmp_path / "one.jsonl"
    one.write_text("".join(lines[: answer + 1]), encoding="utf-8")
    svg = render_chart(replay(one, "baseline,truncate-500"), metric, "svg")
    dots = re.findall(r'aria-label="request: 0; [^"]*strategy: ([\w-]+)"[^>]*'
                      r'aria-roledescription="circle"', svg)
    assert set(dots) == {"baseline", "truncate-500"}
    # A line of two requests needs no dot.
    second = next(n for n, line in enumerate(lines)
                  if n > answer and '"type":"assistant"' in line)
    two = tmp_path / "two.jsonl"
    two.write_text("".join(lines[: second + 1]), encoding="utf-8")
    assert len(replay(two, "baseline").records) == 2
    svg = render_chart(replay(two, "baseline,truncate-500"), metric, "svg")
    assert 'aria-roledescription="circle"' not in svg


def test_missing_extra_is_a_clear_error(monkeypatch, result) -> None:
    import sys

    from replay import ReplayError
    from replay.report._charts import metric_chart

    monkeypatch.setitem(sys.modules, "altair", None)
    with pytest.raises(ReplayError, match=r"pip install '\.\[report\]' in the replay checkout"):
        metric_chart(result, "cost")


# ---------- CLI ----------


def test_report_command(tmp_path) -> None:
    out = tmp_path / "r.html"
    run = CliRunner().invoke(
        cli, ["report", str(SAMPLE), "-s", "baseline,sliding-10", "--no-breakeven", "-o",
              str(out)], prog_name="replay",
    )
    assert run.exit_code == 0, run.output
    assert "wrote" in run.stderr and "2 strategies × 14 requests" in run.stderr
    page = out.read_text(encoding="utf-8")
    assert "sliding-10" in page and "Not computed for this report" in page
    one = CliRunner().invoke(
        cli, ["report", str(SAMPLE), "-s", "baseline", "--no-breakeven", "-o", str(out)],
        prog_name="replay",
    )
    assert "1 strategy × 14 requests" in one.stderr  # not "1 strategies"


def test_report_of_the_same_log_is_the_same_file(tmp_path) -> None:
    """No time of writing in the page: the header shows the log's own span."""
    pages = []
    for name in ("a.html", "b.html"):
        run = CliRunner().invoke(cli, ["report", str(SAMPLE), "-s", "baseline", "--no-breakeven",
                                       "-q", "-o", str(tmp_path / name)], prog_name="replay")
        assert run.exit_code == 0, run.output
        pages.append((tmp_path / name).read_bytes())
    assert pages[0] == pages[1]
    assert b'"span": ["2026-' in pages[0] or b'"span":["2026-' in pages[0]


def test_report_command_says_what_it_wrote_and_its_size(tmp_path) -> None:
    from replay.cli._cmd_report import _size

    out = tmp_path / "r.html"
    run = CliRunner().invoke(cli, ["report", str(SAMPLE), "-s", "baseline", "--no-breakeven",
                                   "-o", str(out)], prog_name="replay")
    assert run.exit_code == 0, run.output
    requests = len(replay(SAMPLE, "baseline").turns)
    assert run.stderr.splitlines()[-1] == (
        f"wrote {out} ({_size(out.stat().st_size)}: 1 strategy × {requests} requests)"
    )
    # kB below a megabyte (decimal units), MB with one decimal from it
    assert [_size(n) for n in (999_000, 999_499, 999_500, 1_000_000, 1_460_000)] == [
        "999 kB", "999 kB", "1.0 MB", "1.0 MB", "1.5 MB"]  # never "1000 kB"


def test_a_report_may_be_named_htm_in_any_case(tmp_path) -> None:
    from replay.cli._cmd_report import _html_target

    assert all(_html_target(tmp_path / name) for name in ("r.html", "r.htm", "R.HTM", "r.Html"))
    assert not any(_html_target(tmp_path / name) for name in ("r.png", "r", "html"))


def test_report_command_quiet_prints_nothing(tmp_path) -> None:
    out = tmp_path / "r.html"
    run = CliRunner().invoke(
        cli, ["report", str(SAMPLE), "-s", "baseline", "-q", "-o", str(out)], prog_name="replay"
    )
    assert run.exit_code == 0, run.output
    assert run.stdout == "" and run.stderr == ""
    assert out.stat().st_size > 500_000


def test_report_to_standard_output(tmp_path) -> None:
    """`-o -` writes the page to standard output; so does `-o /dev/stdout` redirected to a file
    named .html (it was refused: /dev/stdout is not named .html, and the shell made it a file)."""
    import subprocess
    import sys

    args = ["report", str(SAMPLE), "-s", "baseline", "--no-breakeven", "-q"]
    run = CliRunner().invoke(cli, [*args, "-o", "-"], prog_name="replay")
    assert run.exit_code == 0, run.output
    assert run.stdout.startswith("<!") and run.stdout.rstrip().endswith("</html>")
    page = tmp_path / "page.html"
    with page.open("wb") as stdout:
        done = subprocess.run([sys.executable, "-m", "replay", *args, "-o", "/dev/stdout"],
                              stdout=stdout, stderr=subprocess.PIPE, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    assert page.read_text(encoding="utf-8") == run.stdout
    with (tmp_path / "page.txt").open("wb") as stdout:
        done = subprocess.run([sys.executable, "-m", "replay", *args, "-o", "/dev/stdout"],
                              stdout=stdout, stderr=subprocess.PIPE, cwd=ROOT, check=False)
    assert done.returncode == 2 and b"name it .html" in done.stderr


def test_report_command_user_errors(tmp_path) -> None:
    run = CliRunner().invoke(cli, ["report", str(tmp_path / "missing.jsonl"), "-o",
                                   str(tmp_path / "r.html")], prog_name="replay")
    assert run.exit_code == 2 and "error:" in run.stderr
    assert not (tmp_path / "r.html").exists()
    run = CliRunner().invoke(cli, ["report", str(SAMPLE), "-s", "no-such-strategy", "-o",
                                   str(tmp_path / "r.html")], prog_name="replay")
    assert run.exit_code == 2 and "error:" in run.stderr
    # The page is HTML: a name that says otherwise is refused (plot refuses the same way).
    run = CliRunner().invoke(cli, ["report", str(SAMPLE), "-o", str(tmp_path / "r.png")],
                             prog_name="replay")
    assert run.exit_code == 2 and "name it .html" in run.stderr
    assert not (tmp_path / "r.png").exists()
    # A log without requests is refused, with or without break-even (it wrote a broken page).
    empty = tmp_path / "no-requests.jsonl"
    empty.write_text("".join(SAMPLE.read_text(encoding="utf-8").splitlines(True)[:2]),
                     encoding="utf-8")
    for extra in ([], ["--no-breakeven"]):
        run = CliRunner().invoke(cli, ["report", str(empty), "-o", str(tmp_path / "r.html"),
                                       *extra], prog_name="replay")
        assert run.exit_code == 2 and "the log has no requests" in run.stderr, run.output
        assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    ("args", "name", "magic"),
    [
        (["--metric", "cost"], "c.png", PNG),
        (["--metric", "prompt"], "p.svg", b"<svg"),
        (["--metric", "hit-ratio", "--format", "svg"], "h.img", b"<svg"),
    ],
)
def test_plot_command(tmp_path, args, name, magic) -> None:
    out = tmp_path / name
    run = CliRunner().invoke(
        cli, ["plot", str(SAMPLE), "-s", "baseline,truncate-500", *args, "-o", str(out)],
        prog_name="replay",
    )
    assert run.exit_code == 0, run.output
    assert out.read_bytes().lstrip().startswith(magic)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "x.gif"], "-o x.gif: cannot draw .gif images; use a .png or .svg file"),
        (["-o", "x.pdf", "--format", "png"], "cannot draw .pdf images"),
        (["-o", "x.png", "--format", "svg"], "--format svg but -o x.png names a .png file"),
        (["-o", "x.img"], ".img names no image format"),
        (["-o", "missing/x.png"], "cannot write missing/x.png: directory missing does not exist"),
    ],
)
def test_plot_refuses_a_file_name_that_is_not_what_it_draws(tmp_path, monkeypatch, args,
                                                            message) -> None:
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke(cli, ["plot", str(SAMPLE), "-s", "baseline", "-q", *args],
                             prog_name="replay")
    assert run.exit_code == 2, run.output
    assert run.stderr.startswith("error: ") and message in run.stderr
    assert run.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []  # nothing written, no folder made


@pytest.mark.parametrize(
    ("args", "magic"),
    [([], PNG), (["-o", "-"], PNG), (["-o", "-", "--format", "svg"], b"<svg")],
)
def test_plot_to_standard_output(args, magic) -> None:
    run = CliRunner().invoke(cli, ["plot", str(SAMPLE), "-s", "baseline", "-q", *args],
                             prog_name="replay")
    assert run.exit_code == 0, run.output
    assert run.stdout_bytes.lstrip().startswith(magic)


# ---------- progress ----------


def test_progress_bar_only_on_a_terminal() -> None:
    from rich.console import Console

    from replay.cli._progress import progress_bar

    with progress_bar("replaying", console=Console(file=io.StringIO())) as progress:
        assert progress is None  # not a terminal: no bar, no escape codes
    terminal = Console(file=io.StringIO(), force_terminal=True, width=100)
    with progress_bar("replaying", quiet=True, console=terminal) as progress:
        assert progress is None
    with progress_bar("replaying", console=terminal) as progress:
        assert progress is not None
        progress("baseline", 0, 2)
        progress.detail("1,234 / 5,678 counterfactual requests")
        assert "baseline · 1,234 / 5,678" in _drawn(terminal)
        progress("sliding-10", 1, 2)
        assert "sliding-10" in _drawn(terminal)
        progress("", 2, 2)
    assert "replaying" in terminal.file.getvalue()


def _drawn(console) -> str:
    """What a live progress bar shows now (drawn at once, not at its next refresh)."""
    for live in [getattr(console, "_live", None), *getattr(console, "_live_stack", [])]:
        if live is not None:
            live.refresh()
    return console.file.getvalue()


def test_engine_reports_progress_per_strategy() -> None:
    calls = []
    replay(SAMPLE, "baseline,sliding-10", progress=lambda *a: calls.append(a))
    assert calls == [("baseline", 0, 2), ("sliding-10", 1, 2), ("", 2, 2)]


def test_breakeven_tells_how_far_a_strategy_is() -> None:
    """A strategy's break-even replays a counterfactual per rewrite: a progress callback with a
    `detail` method hears, after each rewrite, how many of the strategy's counterfactual
    requests are done (the work, which rewrites do not measure); a plain one is untouched."""
    from replay import load
    from replay._api import breakeven
    from replay.breakeven._breakeven import breakeven_config, strategy_rewrites
    from replay.strategies import resolve

    class Progress:
        def __init__(self) -> None:
            self.calls: list[tuple] = []
            self.details: list[tuple[str, int, int]] = []

        def __call__(self, name: str, done: int, total: int) -> None:
            self.calls.append((name, done, total))

        def detail(self, text: str) -> None:
            m = re.fullmatch(r"([\d,]+) / ([\d,]+) counterfactual requests", text)
            assert m, text
            done, total = (int(g.replace(",", "")) for g in m.groups())
            self.details.append((self.calls[-1][0], done, total))

    names = ["baseline", "age-truncate-500-keep-3", "sliding-10"]
    progress = Progress()
    breakeven(SAMPLE, names, progress=progress)
    assert progress.calls == [(n, k, 3) for k, n in enumerate(names)] + [("", 3, 3)]
    session = load(SAMPLE)
    config = breakeven_config(session, None)
    for named in resolve(names):
        with strategy_rewrites(session, named, config, None) as rewrites:
            steps = rewrites.steps
        told = [(done, total) for name, done, total in progress.details if name == named.name]
        # One call per rewrite, counting up to every counterfactual request of the strategy.
        assert len(told) == len(steps)
        assert [done for done, _ in told] == sorted(done for done, _ in told)
        assert all(total == sum(steps) for _, total in told)
        assert not told or told[-1][0] == sum(steps)
    assert {name for name, *_ in progress.details} == {"age-truncate-500-keep-3", "sliding-10"}
    calls: list[tuple] = []
    breakeven(SAMPLE, names, progress=lambda *a: calls.append(a))  # no `detail`: as before
    assert calls == progress.calls


def test_charts_draw_the_prompt_as_billed() -> None:
    """An OpenAI reasoning model drops earlier turns' reasoning from the billed prompt at a new
    user turn: the charts (and their hit ratio) show the billed size, as `replay run` does, not
    the rendered one (7,349 tokens more on the opencode sample's request 48)."""
    from datetime import UTC, datetime, timedelta

    from replay.log import (
        AssistantMessage,
        RequestMarker,
        Session,
        SessionHeader,
        TextBlock,
        ThinkingBlock,
        UserMessage,
    )
    from replay.report._charts import series_rows

    t0 = datetime(2026, 10, 1, tzinfo=UTC)
    reasoning = "Weighing each option against the tests in turn. " * 300
    events: list = []
    for n in range(3):
        events += [
            UserMessage(ts=t0 + timedelta(minutes=n), text=f"Task {n}: " + "context " * 400),
            RequestMarker(ts=t0 + timedelta(minutes=n, seconds=1), request_id=f"r{n}"),
            AssistantMessage(ts=t0 + timedelta(minutes=n, seconds=9), request_id=f"r{n}",
                             blocks=[ThinkingBlock(thinking=reasoning), TextBlock(text="Done.")]),
        ]
    header = SessionHeader(ts=t0, session_id="s", agent="test", provider="openai",
                           model="gpt-5", system="Be brief.")
    result = replay(Session(header=header, events=events), "baseline", per_turn=True)
    billed = result.turns["prompt_tokens"].to_list()
    rendered = [r.request.total for r in result.records]
    assert rendered[2] > billed[2]  # the earlier reasoning left the billed prompt
    rows = series_rows(result.records)
    assert [row["prompt"] for row in rows] == billed
    assert [row["hit"] for row in rows] == [
        round(c / p, 4) for c, p in zip(result.turns["cached_tokens"], billed, strict=True)
    ]


def test_every_strategy_of_the_library_gets_its_own_colour() -> None:
    """`-s all` runs twice as many strategies as the palette holds: none shares a colour."""
    from replay.report._charts import PALETTE, colors
    from replay.strategies import canonical_names

    names = canonical_names()
    assert len(names) > len(PALETTE)
    chosen = colors(names)
    assert len(set(chosen.values())) == len(names)
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in chosen.values())
    assert list(chosen.values())[: len(PALETTE)] == list(PALETTE)


MONEY = [
    "0.01845", "-0.01845", "0.0000006", "0.00001234", "-0.000000999", "0.00009999", "0.0001",
    "0", "1234.56785", "0.99995", "12345678.9", "0.000072", "0.0302454", "5.85e-5",
    "0.0000999", "-0.0000995", "0.0000994", "0.00000999", "0.0000009999",
]


@pytest.mark.parametrize("places", [4, 6])
def test_the_page_writes_money_as_the_tables_do(places: int) -> None:
    """report.js's fmtUsd, run by node on exact decimal strings and on floats, gives the
    terminal's `usd` text: halves up, grouped, no scientific notation."""
    import shutil
    import subprocess

    from replay.report._money import usd

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (it runs the page's script)")
    script = (ROOT / "replay" / "report" / "assets" / "report.js").read_text()
    money = re.search(r"  function plainDigits.*?\n  function fmtUsd.*?\n  }\n", script, re.S)
    assert money, "report.js lost its money functions"
    program = money.group(0) + (
        f"const values = {json.dumps(MONEY)};\n"
        f"console.log(JSON.stringify(values.map((v) => [fmtUsd(v, {places}), "
        f"fmtUsd(Number(v), {places})])));\n"
    )
    done = subprocess.run([node, "-e", program], capture_output=True, text=True, check=True)
    for value, (exact, from_float) in zip(MONEY, json.loads(done.stdout), strict=True):
        expected = usd(Decimal(value), places)
        assert (exact, from_float) == (expected, expected), value


def test_the_page_writes_break_even_money_to_six_places() -> None:
    """The break-even table's money columns (`usd6`) are written as `replay breakeven` writes
    them: six places, the summary's (`usd`) four."""
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (it runs the page's script)")
    script = (ROOT / "replay" / "report" / "assets" / "report.js").read_text()
    parts = [
        re.search(r"  const fmtInt = .*?\n", script),
        re.search(r"  function plainDigits.*?\n  function fmtUsd.*?\n  }\n", script, re.S),
        re.search(r"  const fmtPct = .*?\n", script),
        re.search(r"  function fmtCell.*?\n  }\n", script, re.S),
    ]
    assert all(parts), "report.js lost its cell formatting"
    program = "".join(p.group(0) for p in parts) + (
        'console.log(JSON.stringify([fmtCell("0.01234567", "usd6"), '
        'fmtCell("0.01234567", "usd")]));\n'
    )
    done = subprocess.run([node, "-e", program], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == ["$0.012346", "$0.0123"]


def test_the_page_has_every_column_of_run_and_breakeven(result, document) -> None:
    """docs/report.md: the summary has the columns of `replay run`, the break-even table the
    rows of `replay breakeven` (storage cost only where something was stored)."""
    from replay.breakeven._frame import BREAKEVEN_SCHEMA

    shown = {c[0] for c in document["summary"]["columns"]}
    missing = set(result.summary.columns) - shown
    assert missing == {"storage_cost_usd", "cache_created_tokens"}
    assert not result.summary["storage_cost_usd"].sum()
    assert not result.summary["cache_created_tokens"].sum()
    assert {c[0] for c in document["breakeven"]["columns"]} == set(BREAKEVEN_SCHEMA)


def test_the_page_shows_an_explicit_cache_s_creation_and_storage() -> None:
    """Sent to Gemini with an explicit cachedContents, the summary shows what creating and
    storing it cost."""
    gemini = replay(SAMPLE, ["baseline"], provider="google", model="gemini-2.5-flash",
                    client="gemini-explicit",
                    rule_overrides={"google.explicit.min_cacheable_tokens": 256})
    page = report_document(gemini, None, log=str(SAMPLE))
    keys = [c[0] for c in page["summary"]["columns"]]
    assert set(gemini.summary.columns) <= set(keys)
    (row,) = page["summary"]["rows"]
    created = row[keys.index("cache_created_tokens")]
    assert created == gemini.summary["cache_created_tokens"][0] > 0


@pytest.mark.parametrize(
    "args, said",
    [
        (["report", "-s", "baseline"], "error: -o -: the report is an HTML page, not for the "
         "terminal: give -o FILE.html, or pipe it"),
        (["plot"], "give -o FILE (an image is not for the terminal)"),
    ],
)
def test_a_page_or_an_image_is_not_written_to_a_terminal(args, said) -> None:
    """`-o -` (or no -o) with a terminal on standard output: refused, nothing written to it."""
    import os
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "replay", args[0], str(ROOT / "logs" / "run42.jsonl"),
             *args[1:], "-o", "-"],
            stdout=follower, stderr=subprocess.PIPE, text=True, timeout=120,
            env={**os.environ, "NO_COLOR": "1"},
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 2
    assert said in done.stderr


def _chart_record(strategy: str, index: int, *, kind: str = "request", cost: str = "0.01",
                  prompt: int = 1_000, read: int = 0, write_5m: int = 0, write_1h: int = 0,
                  miss: str | None = None, events: tuple = ()):
    """What the chart builders read of a `RequestRecord`, and nothing else."""
    from types import SimpleNamespace

    outcome = SimpleNamespace(prompt=prompt, cache_read=read, cache_write_5m=write_5m,
                              cache_write_1h=write_1h,
                              uncached=prompt - read - write_5m - write_1h, miss_cause=miss)
    return SimpleNamespace(strategy=strategy, request_index=index, kind=kind, thread="main",
                           cost_usd=Decimal(cost), outcome=outcome, events=list(events))


def test_chart_rows_follow_the_strategies_order_and_count_a_summary_at_its_request() -> None:
    """Rows come strategy by strategy in the order they were replayed (not by name), request
    by request; a summarizer call's cost joins the cumulative cost at the request that made
    it; written counts both TTLs; the hit ratio is cached / prompt to four places."""
    from replay.report._charts import series_rows, strategy_order

    records = [
        _chart_record("zeta", 1, read=300, write_1h=200),
        _chart_record("zeta", 0, read=0, write_5m=700),
        _chart_record("alpha", 0),
        _chart_record("alpha", 1, cost="0.02", read=333, prompt=999),
        _chart_record("alpha", 1, kind="summarizer", cost="0.5"),
    ]
    assert strategy_order(records) == ["zeta", "alpha"]
    rows = series_rows(records)
    assert [(row["s"], row["i"]) for row in rows] == [
        ("zeta", 0), ("zeta", 1), ("alpha", 0), ("alpha", 1)
    ]
    assert [row["cost"] for row in rows] == [0.01, 0.02, 0.01, 0.53]
    assert [row["written"] for row in rows] == [700, 200, 0, 0]
    assert rows[-1]["hit"] == 0.3333


def test_chart_markers_name_each_rewrite_once_and_draw_misses_first() -> None:
    """Misses (not a cold start) first, rewrites after them (drawn on top at the same request);
    a compaction among the rewrites is the compaction marker; each kind is named once, each
    event's detail after its kind (none: the kind alone), then the cost of the summarizer calls
    the rewrite needed; a marker carries its row's numbers."""
    from replay.report._charts import MARKER_SHAPES, marker_rows, series_rows
    from replay.strategies._view import RewriteEvent

    records = [
        _chart_record("s", 0, miss="cold start"),
        _chart_record("s", 1, read=250, miss="prefix changed",
                      events=(RewriteEvent("prune", "2 results"), RewriteEvent("prune"))),
        _chart_record("s", 2, read=100, miss="ttl expired",
                      events=(RewriteEvent("clear"), RewriteEvent("compaction", "summary"))),
        _chart_record("s", 2, kind="summarizer", cost="0.0123"),
    ]
    marks = marker_rows(records, series_rows(records))
    assert [(m["m"], m["i"]) for m in marks] == [
        ("miss", 1), ("miss", 2), ("rewrite", 1), ("compaction", 2)
    ]
    assert {m["m"] for m in marks} <= set(MARKER_SHAPES)
    assert (marks[2]["what"], marks[2]["cause"]) == ("prune", "prune: 2 results; prune")
    assert (marks[3]["what"], marks[3]["cause"]) == (
        "clear, compaction", "clear; compaction: summary (summarizer call $0.0123)")
    # Several calls at one request: counted, their cost summed, money written as elsewhere.
    records.append(_chart_record("s", 2, kind="summarizer", cost="0.00012"))
    (marker,) = [m for m in marker_rows(records, series_rows(records)) if m["i"] == 2
                 and m["m"] == "compaction"]
    assert marker["cause"].endswith("(2 summarizer calls $0.0124)")
    assert [m["hit"] for m in marks] == [0.25, 0.1, 0.25, 0.1]


def test_markers_and_tables_write_money_with_one_formatter() -> None:
    """The markers' money is the tables' (`_money.usd`), not a copy of it nor the tables'
    private helper; a cost below the last place reads as it does in a table cell."""
    from replay.report import _charts, _money, _table
    from replay.report._charts import marker_rows, series_rows
    from replay.strategies._view import RewriteEvent

    assert _charts.usd is _money.usd and _table.usd is _money.usd
    records = [
        _chart_record("s", 0, miss="cold start", events=(RewriteEvent("compaction"),)),
        _chart_record("s", 0, kind="summarizer", cost="0.0000999"),
    ]
    (marker,) = [m for m in marker_rows(records, series_rows(records)) if m["m"] != "miss"]
    assert marker["cause"] == f"compaction (summarizer call {_money.usd(Decimal('0.0000999'))})"
    assert marker["cause"] == "compaction (summarizer call $0.0001)"

def test_colours_past_the_palette_alternate_light_and_dark() -> None:
    import colorsys

    from replay.report._charts import PALETTE, colors

    extra = list(colors([f"s{n}" for n in range(len(PALETTE) + 4)]).values())[len(PALETTE):]
    lightness = [
        colorsys.rgb_to_hls(*(int(c[i:i + 2], 16) / 255 for i in (1, 3, 5)))[1] for c in extra
    ]
    assert all(abs(a - b) > 0.1 for a, b in zip(lightness, lightness[1:], strict=False))


def test_items_carry_the_flags_and_labels_the_page_reads() -> None:
    """report.js titles an item from its row `[kind, text, label, event, tokens, original,
    flags]`: flag 1 "(shortened from N chars)", 2 "(injected)", 4 "(error)", 8 "(not in the
    log)": context the log lacks, known by its size only, which the diff does not call added by
    the strategy; a tool result is labelled with its tool, a summary with its source and how
    many items it replaces."""
    from replay.report._html import _Interner
    from replay.strategies import SummaryItem, ToolResultItem, UserItem

    interner = _Interner()

    def row(item) -> list:
        kind, text, label, event, _tokens, original, flags = interner.items[interner.item(item)]
        return [kind, interner.texts[text], interner.texts[label], event, original, flags]

    assert row(ToolResultItem(call_id="c", tool_name="bash", output="[stub]", is_error=True,
                              event_index=3, original_chars=120)) == [
        "t", "[stub]", "bash", 3, 120, 1 | 4]
    assert row(ToolResultItem(call_id="c", tool_name="read", output="ok", event_index=4)) == [
        "t", "ok", "read", 4, 0, 0]
    assert row(UserItem("go on", event_index=5, injected=True)) == ["u", "go on", "", 5, 0, 2]
    assert row(UserItem("go on", event_index=6)) == ["u", "go on", "", 6, 0, 0]
    assert row(UserItem("[context not in the log]", injected=True, estimated_tokens=60)) == [
        "u", "[context not in the log]", "", -1, 0, 2 | 8]
    assert row(SummaryItem("so far", replaces=(3, 4, 5), source="logged")) == [
        "s", "so far", "summary (logged), replaces 3 item(s)", -1, 0, 0]
    assert row(SummaryItem("so far")) == ["s", "so far", "summary (extractive)", -1, 0, 0]


def test_an_assistant_item_is_shown_block_by_block() -> None:
    """The cards show an answer's blocks apart (a blank line between them), its reasoning
    marked as such and its tool calls as the model saw them (name and JSON arguments)."""
    from replay.strategies import AssistantItem, Block

    item = AssistantItem(blocks=(
        Block("thinking", text="the test is flaky"),
        Block("text", text="Looking at it.\nFirst the log."),
        Block("tool_call", call_id="c1", name="bash", arguments={"cmd": "cat log"}),
    ))
    assert _item_text(item) == (
        '[thinking] the test is flaky\n\nLooking at it.\nFirst the log.\n\n'
        '→ bash({"cmd": "cat log"})'
    )
    # Reasoning the log holds only by its size (a signature, redacted) says so, not nothing.
    sized = AssistantItem(blocks=(Block("thinking", estimated_tokens=1234),))
    assert _item_text(sized) == "[thinking: 1,234 tokens, not in the log]"


def test_views_are_runs_of_ids_and_cost_append_only_strategies_a_few_numbers(document) -> None:
    """Module docstring: a view is the shared prefix's length, then `[start, count, ...]` runs
    of consecutive item ids, "so append-only strategies cost a few numbers per request"."""
    from replay.report._html import _ranges

    assert _ranges([3, 4, 5, 9, 10, 2, 7]) == [3, 3, 9, 2, 2, 1, 7, 1]
    assert _ranges([]) == []
    baseline = document["records"][document["strategies"].index("baseline")]
    assert all(len(rec[1]) == 3 for rec in baseline)  # [shared, start, count]


@pytest.mark.parametrize(
    ("where", "block", "token", "expected"),
    [
        ("first", None, 0, None),  # nothing before it to differ from
        ("tools", None, 0, -1),
        ("system", None, 3, -1),
        ("message 1", 1, 0, 7),  # the block the diff names
        ("tail", None, 10, 7),  # token 10 is the first of the second block (ends 10, 20)
        ("tail", None, 9, 5),
        ("tail", None, 20, None),  # past the last block: no item differs
    ],
)
def test_the_first_mismatch_names_the_view_item_of_its_block(where, block, token,
                                                             expected) -> None:
    """`mm`: the view item of the first mismatch (-1: tools/system; null: none)."""
    from types import SimpleNamespace

    from replay.report._html import _mismatch_item

    record = SimpleNamespace(
        diff=SimpleNamespace(where=where, first_mismatch_block=block,
                             first_mismatch_token=token),
        request=SimpleNamespace(cum_tokens=[10, 20], block_ids=["a", "b"], item_index=[5, 7]),
    )
    assert _mismatch_item(record) == expected


def test_requests_carry_their_id_thread_and_utc_time(result, document) -> None:
    """`requests` rows (`REQUEST_FIELDS`): the request's id, thread, model (by its number in
    `requestModels`, which names each model once) and time, written in UTC with a `Z` as the
    JSON export writes times."""
    from datetime import datetime

    models = {r.model for r in result.records if r.kind == "request"}
    assert sorted(document["requestModels"]) == sorted(models)
    rq = {name: n for n, name in enumerate(document["requestFields"])}
    rows = {row[rq["i"]]: row for row in document["requests"]}
    sent = {r.request_index: r for r in result.records if r.kind == "request"}
    assert set(rows) == set(sent)
    for i, row in rows.items():
        assert row[rq["id"]] == sent[i].request_id
        assert document["threads"][row[rq["thread"]]] == sent[i].thread
        assert document["requestModels"][row[rq["model"]]] == sent[i].model
        assert row[rq["ts"]].endswith("Z")
        assert datetime.fromisoformat(row[rq["ts"]]) == sent[i].ts
    # The log's span, not the time of writing: the same log gives the same page.
    events = result.session.events
    assert [datetime.fromisoformat(t) for t in document["span"]] == [
        events[0].ts.replace(microsecond=0), events[-1].ts.replace(microsecond=0)]


def test_an_item_s_tokens_are_its_count_where_it_first_appeared(result, document) -> None:
    """docs/report.md: the cards show "an item's count where it first appeared" (baseline,
    the first strategy, sends every item of the history first)."""
    views = _decoded_views(document, "baseline")
    expected: dict[int, int] = {}
    for record in sorted((r for r in result.records
                          if r.strategy == "baseline" and r.kind == "request"),
                         key=lambda r: r.request_index):
        view = views[record.request_index]
        counts = [0] * len(view)
        for position, tokens in zip(record.request.item_index, record.request.block_tokens,
                                    strict=True):
            if position >= 0:
                counts[position] += int(tokens)
        for n, tokens in zip(view, counts, strict=True):
            expected.setdefault(n, tokens)
    assert expected and {n: document["items"][n][4] for n in expected} == expected


def _view_record(index: int, view: list, tokens: list[int], **fields):
    """What `_Document._rows` reads of a request record of strategy `s` on thread `main`
    (`fields`: others than the defaults)."""
    from datetime import UTC, datetime
    from types import SimpleNamespace

    return SimpleNamespace(**{
        "kind": "request", "strategy": "s", "request_index": index, "request_id": f"r{index}",
        "thread": "main", "model": "m", "ts": datetime(2026, 11, 1, tzinfo=UTC), "view": view,
        "request": SimpleNamespace(item_index=list(range(len(view))), block_tokens=tokens),
        "diff": SimpleNamespace(where="first", first_mismatch_token=0),
        "outcome": SimpleNamespace(miss_cause=None), "events": [], "blind_actions": [],
        "output_tokens": 1, "cost_usd": Decimal("0.01"), "over_window": False,
    } | fields)


def test_an_item_keeps_its_count_from_the_view_that_first_sent_it() -> None:
    """An item sent again after other items (past the shared prefix) keeps the count of the
    view that first sent it: a later view's framing does not overwrite it."""
    from replay.report._html import _Document
    from replay.strategies import UserItem

    first, second = UserItem("first", event_index=0), UserItem("second", event_index=1)
    document = _Document(gen.deterministic_session())
    document._rows([_view_record(0, [first, second], [5, 7]), _view_record(1, [second], [9])])
    tokens = {document.interner.texts[row[1]]: row[4] for row in document.interner.items}
    assert (tokens["first"], tokens["second"]) == (5, 7)


def test_rows_name_each_event_and_count_every_summarizer_call() -> None:
    """`events`: "kind: detail", the kind alone where there is no detail; `summ`: how many
    summarizer calls the request needed (a number, not whether there were any) and their
    cost."""
    from replay.report._html import RECORD_FIELDS, _Document
    from replay.strategies import UserItem
    from replay.strategies._view import RewriteEvent

    document = _Document(gen.deterministic_session())
    events = [RewriteEvent("prune", "2 results"), RewriteEvent("clear")]
    summarizers = [_view_record(0, [], [], kind="summarizer", cost_usd=Decimal(cost))
                   for cost in ("0.02", "0.03")]
    (row,) = document._rows([_view_record(0, [UserItem("a")], [1], events=events),
                             *summarizers])
    field = {name: n for n, name in enumerate(RECORD_FIELDS)}
    assert [document.interner.texts[n] for n in row[field["events"]]] == [
        "prune: 2 results", "clear"]
    calls, cost = row[field["summ"]]
    assert (type(calls), calls, cost) == (int, 2, pytest.approx(0.05))


def test_a_view_of_equal_items_rebuilt_shares_its_prefix_with_the_previous_one() -> None:
    """A strategy that builds its items again (equal, not the same objects) still costs a few
    numbers per request: the shared prefix runs on as long as the item ids are the same."""
    from replay.report._html import _Document
    from replay.strategies import UserItem

    def items(*texts: str) -> list:
        return [UserItem(text, event_index=n) for n, text in enumerate(texts)]

    document = _Document(gen.deterministic_session())
    rows = document._rows([_view_record(0, items("a", "b"), [1, 1]),
                           _view_record(1, items("a", "b", "c"), [1, 1, 1])])
    c = document.interner.texts.index("c")
    (added,) = [n for n, row in enumerate(document.interner.items) if row[1] == c]
    assert rows[1][1] == [2, added, 1]


def test_rows_count_summarizer_calls_and_requests_over_the_window(result, document) -> None:
    """`summ`: [summarizer calls, their cost] at the request that needed them; `over`: the
    request was over the model's context window."""
    fields = {name: n for n, name in enumerate(document["recordFields"])}
    strategy = "compact-at-12000-structured"
    rows = document["records"][document["strategies"].index(strategy)]
    calls: dict[int, list] = {}
    for r in result.records:
        if r.strategy == strategy and r.kind == "summarizer":
            calls.setdefault(r.request_index, []).append(r.cost_usd)
    assert calls
    for row in rows:
        costs = calls.get(row[fields["i"]], [])
        assert row[fields["summ"]][0] == len(costs)
        assert row[fields["summ"]][1] == pytest.approx(float(sum(costs, Decimal(0))))
    small = replay(SAMPLE, "baseline", keep_views=True, context_window=3000)
    over = [row[fields["over"]] for row in report_document(small)["records"][0]]
    assert over == [bool(r.over_window) for r in small.records if r.kind == "request"]
    assert any(over) and not all(over)


@pytest.mark.parametrize(
    ("kind", "excerpt", "expected"),
    [
        # Quotes and mentions are pieces joined by ", " (`_short` of `", ".join(hidden)`),
        # shortened with "…"; pieces under 3 characters would light up anywhere.
        ("hidden-quote", "ERR_42, src/api.js, ab, abc…", ["ERR_42", "src/api.js", "abc"]),
        ("hidden-mention", "Preview theme, x, renderPage", ["Preview theme", "renderPage"]),
        # An edit's hidden old text, line by line.
        ("hidden-edit-target", "def f(x):\n    return x, 1\n\n}\n", ["def f(x):",
                                                                  "return x, 1"]),
        # At most the first 40 pieces (a long hidden text is not lit up line after line).
        ("hidden-edit-target", "\n".join(f"line {n}" for n in range(50)),
         [f"line {n}" for n in range(40)]),
        # A stubbed read's excerpt is the stub the view showed, not hidden text.
        ("stubbed-read", "[output truncated: 4000 chars]", []),
    ],
)
def test_blind_fragments_are_the_hidden_pieces_to_highlight(kind, excerpt, expected) -> None:
    from replay.evidence._blind import BlindAction
    from replay.report._html import _fragments

    action = BlindAction(1, "r1", "edit", kind, None, excerpt)
    assert _fragments(action) == expected


def test_the_title_names_the_log_as_given(result) -> None:
    """The page is titled with the log's name as the caller gave it (the command line's), the
    loaded session's path only when none is given."""
    named = report_document(result, log="run42 as typed.jsonl")
    assert (named["title"], named["log"]) == ("replay report · run42 as typed.jsonl",
                                              "run42 as typed.jsonl")
    assert report_document(result)["title"] == f"replay report · {result.session.path}"
    assert report_document(result, title="mine")["title"] == "mine"


def test_the_page_title_is_escaped_and_printable(document) -> None:
    """docs/report.md: the page's `<title>` writes a log's bidirectional marks as `\\u202e`;
    markup in a log name is text."""
    page = render_html({**document, "title": 'a & b "<i>" \u202e'})
    assert '<title>a &amp; b &quot;&lt;i&gt;&quot; \\u202e</title>' in page


def test_a_template_without_a_placeholder_is_refused(document, monkeypatch) -> None:
    from replay.report import _html

    real = _html._asset
    monkeypatch.setattr(_html, "_asset", lambda name: real(name).replace("{{app}}", "")
                        if name == "report.html" else real(name))
    with pytest.raises(RuntimeError, match="lacks {{app}}"):
        render_html(document)


def test_data_keeps_line_separators_out_of_the_script(document) -> None:
    """The data's JSON escapes `<` (no `</script>`, no `<!--`) and U+2028/U+2029, and decodes
    back to the same text."""
    from replay.report._html import _json_for_script

    value = {"t": "</script><!-- \u2028\u2029 & >"}
    text = _json_for_script(value)
    assert "<" not in text and "\u2028" not in text and "\u2029" not in text
    assert json.loads(text) == value


def test_a_runtime_holding_a_closing_script_tag_stays_in_its_element(document,
                                                                     monkeypatch) -> None:
    from replay.report import _charts

    monkeypatch.setattr(_charts, "vega_runtime", lambda: "var s = '</script><b>';")
    page = render_html(document)
    assert "</script><b>" not in page and page.count("</script>") == 4


@pytest.mark.parametrize(
    ("value", "expected"),
    [("0.0100", "0.01"), ("0E-8", "0"), ("1.5E+2", "150"), ("-0.00", "0"), ("12.3400", "12.34")],
)
def test_money_cells_are_the_json_export_s_decimal_strings(value, expected) -> None:
    """Money stays exact in the page: the JSON export's plain decimal string (no exponent, no
    trailing zeros), whatever the column."""
    from replay.report._html import _cell

    assert _cell(Decimal(value), "usd") == expected
    assert _cell(Decimal(value), "int") == expected


def test_cells_are_json_the_page_can_read() -> None:
    """A money column is a decimal string even when the frame held a float; a NaN (which JSON
    cannot carry: the data is written with `allow_nan=False`) is an empty cell."""
    from replay.report._html import _cell

    assert _cell(0.5, "usd") == "0.5"
    assert _cell(2.0, "usd6") == "2"
    assert _cell(float("nan"), "ratio") is None
    assert _cell(None, "usd") is None
    assert _cell(0.25, "ratio") == 0.25


def test_without_break_even_the_summary_has_no_break_even_columns(result, document) -> None:
    """`--no-breakeven`: no break-even table and none of its summary columns; the blind
    actions by kind are counted either way, 0 where a strategy hid nothing (baseline)."""
    page = report_document(result, None, log=str(SAMPLE))
    assert page["breakeven"] is None
    columns = [c[0] for c in page["summary"]["columns"]]
    assert not {"rewrites", "paid_back", "median_breakeven", "rewrite_net_usd"} & set(columns)
    for doc in (page, document):
        keys = [c[0] for c in doc["summary"]["columns"]]
        rows = {row[0]: dict(zip(keys, row, strict=True)) for row in doc["summary"]["rows"]}
        for kind in ("hidden-edit-target", "hidden-quote", "stubbed-read"):
            assert rows["baseline"][kind] == 0


def test_the_span_is_the_log_s_earliest_and_latest_time_in_utc() -> None:
    """The page's `span`: the log's earliest and latest timestamp (its header's when it has no
    event), in UTC to the second, so the same log gives the same page wherever it is made."""
    from datetime import UTC, datetime, timedelta, timezone
    from types import SimpleNamespace

    from replay.report._html import _span

    paris = timezone(timedelta(hours=2))
    events = [SimpleNamespace(ts=datetime(2026, 5, 1, 12, 0, 1, 900_000, tzinfo=paris)),
              SimpleNamespace(ts=datetime(2026, 5, 1, 12, 30, tzinfo=paris)),
              SimpleNamespace(ts=datetime(2026, 5, 2, 1, 15, 7, tzinfo=paris))]
    header = SimpleNamespace(ts=datetime(2026, 4, 30, 23, 0, tzinfo=UTC))
    assert _span(SimpleNamespace(events=events, header=header)) == [
        "2026-05-01T10:00:01Z", "2026-05-01T23:15:07Z"]
    assert _span(SimpleNamespace(events=[], header=header)) == [
        "2026-04-30T23:00:00Z", "2026-04-30T23:00:00Z"]


def test_the_span_of_a_log_whose_clock_went_back_runs_from_its_earliest_time(tmp_path) -> None:
    """A log whose events are out of time order (a clock set back mid-session): the header's
    span was its first and last event in file order, which ended before it started."""
    from datetime import datetime, timedelta

    from replay.log import write_log
    from replay.report._html import build_report

    session = gen.deterministic_session()
    first, last = session.events[0].ts, session.events[-1].ts
    # The last line an hour before the first, the second a day after the last.
    session.events[-1].ts = first - timedelta(hours=1)
    session.events[1].ts = last + timedelta(days=1)
    path = tmp_path / "clock.jsonl"
    write_log(session, path)
    document = build_report(path, ["baseline"], breakeven=False)
    assert [datetime.fromisoformat(t) for t in document["span"]] == [
        (first - timedelta(hours=1)).replace(microsecond=0),
        (last + timedelta(days=1)).replace(microsecond=0),
    ]

def test_the_page_lists_models_and_providers_in_a_fixed_order(result) -> None:
    """The same log gives the same page: the models and providers (held as sets) are written
    sorted, not in a set's order."""
    from replay.report._html import _Document

    made = _Document(result.session)
    made.add(result.records)
    made.tables.models = {f"m-{c}" for c in "hcfadgbe"}
    made.tables.providers = {"p-z", "p-a"}
    page = made.build(result.summary, [])
    assert page["models"] == [f"m-{c}" for c in "abcdefgh"]
    assert page["providers"] == ["p-a", "p-z"]


def test_rows_carry_the_shared_prefix_system_tokens_and_output(result, document) -> None:
    """`view` starts with the length of the prefix shared with the thread's previous view;
    `sys`: the tokens of the tool definitions and system prompt (blocks of no view item);
    `out`: the output tokens."""
    fields = {name: n for n, name in enumerate(document["recordFields"])}
    rows = document["records"][document["strategies"].index("baseline")]
    views = _decoded_views(document, "baseline")
    sent = {r.request_index: r for r in result.records
            if r.strategy == "baseline" and r.kind == "request"}
    for prev, row in zip(rows, rows[1:], strict=False):
        assert row[fields["view"]][0] == len(views[prev[fields["i"]]])  # append-only
    for row in rows:
        request = sent[row[fields["i"]]].request
        assert row[fields["sys"]] == sum(int(t) for n, t in zip(
            request.item_index, request.block_tokens, strict=True) if n < 0) > 0
        assert row[fields["out"]] == sent[row[fields["i"]]].output_tokens


def test_misses_are_marked_before_rewrites(document) -> None:
    """`marks`: every miss first, then the rewrites, drawn on top of a miss at the same
    request."""
    kinds = [document["markKinds"][m] for m in document["marks"]["m"]]
    misses = kinds.count("miss")
    assert 0 < misses < len(kinds)
    assert kinds[:misses] == ["miss"] * misses


def test_blind_actions_are_counted_by_strategy_and_kind() -> None:
    from types import SimpleNamespace

    from replay.report._html import _blind_kinds

    def record(strategy: str, *kinds: str) -> SimpleNamespace:
        return SimpleNamespace(strategy=strategy,
                               blind_actions=[SimpleNamespace(kind=k) for k in kinds])

    records = [record("a", "hidden-quote", "stubbed-read"), record("a", "hidden-quote"),
               record("b"), record("c", "hidden-edit-target")]
    assert _blind_kinds(records) == {"a": {"hidden-quote": 2, "stubbed-read": 1},
                                     "c": {"hidden-edit-target": 1}}


def test_a_part_numbered_for_another_log_is_refused(result) -> None:
    """`merge`: a part whose histories are numbered otherwise is a bug, not merged."""
    import dataclasses

    from replay.engine._results import ResultTables
    from replay.report._html import _Document, document_part

    records = [r for r in result.records if r.strategy == "baseline"]
    part = document_part(result.session, records)
    texts, items = part.base
    with pytest.raises(RuntimeError, match="numbered"):
        _Document(result.session).merge(dataclasses.replace(part, base=(texts + 1, items)),
                                        ResultTables(per_turn=False))


@pytest.mark.parametrize("used", ["storage_cost_usd", "cache_created_tokens"])
def test_either_sign_of_an_explicit_cache_shows_both_of_its_columns(used) -> None:
    """docs/report.md: the summary has the explicit cache's storage cost and created tokens
    where one was used (either is a sign of it), and neither otherwise."""
    import polars as pl

    from replay.report._html import EXPLICIT_CACHE_COLUMNS, _summary_rows

    def shown(**values) -> set[str]:
        summary = pl.DataFrame({"strategy": ["s"], "storage_cost_usd": [Decimal(0)],
                                "cache_created_tokens": [0]} | values)
        columns, _rows = _summary_rows(summary, None, {})
        return {c[0] for c in columns} & set(EXPLICIT_CACHE_COLUMNS)

    assert shown() == set()
    value = Decimal("0.01") if used == "storage_cost_usd" else 512
    assert shown(**{used: [value]}) == set(EXPLICIT_CACHE_COLUMNS)


def _history_and_views(session, strategy: str) -> list[tuple[list[int], list[int], list[int]]]:
    """Per request: its thread's history before it as the page cuts it, the strategy's view,
    and the view's items the page flags as context the log lacks (flag 8)."""
    from replay.report._html import build_report

    document = build_report(session, strategy, breakeven=False)
    rq = {name: n for n, name in enumerate(document["requestFields"])}
    views = _decoded_views(document, strategy)
    out = []
    for request in document["requests"]:
        history = _expand(document["histories"][request[rq["thread"]]], [])
        view = views[request[rq["i"]]]
        estimated = [n for n in view if document["items"][n][6] & 8]
        out.append((history[: request[rq["h"]]], view, estimated))
    return out


def test_the_history_before_a_request_is_what_baseline_sends_of_the_log(tmp_path) -> None:
    """The navigator diffs a request's view against its thread's history before it. `baseline`
    sends all of that history and removes nothing, so its view, less the context the log lacks
    (estimated from the provider's usage, flagged 8 and titled *not in the log*, in no history),
    is that history item for item. The count was the engine's, whose history also holds that
    estimated context: on a Codex log with usage it reached one item past the request, and the
    page showed the request's own answer as removed by baseline."""
    from test_adapters_common import VALID

    import replay as api

    path = tmp_path / "rollout.jsonl"
    path.write_text(VALID["codex"](), encoding="utf-8")
    rows = _history_and_views(api.load(path), "baseline")
    assert len(rows) == 2 and any(estimated for _, _, estimated in rows)
    for history, view, estimated in rows:
        assert [n for n in view if n not in estimated] == history


def test_messages_no_strategy_sends_as_history_are_not_in_the_page_s_history() -> None:
    """An answer the harness never sent back (`in_context: false`) and a message only a logged
    compaction rebuilt (`compacted_history`) are in no strategy's history (docs/log-format.md):
    the page's history leaves them out too, so that the items after them line up with what
    baseline sent."""
    from replay.log import AssistantMessage, RequestMarker, TextBlock, UserMessage

    session = gen.deterministic_session()
    markers = [n for n, e in enumerate(session.events) if isinstance(e, RequestMarker)]
    at = markers[4]
    ts = session.events[at].ts
    session.events[at:at] = [
        AssistantMessage(ts=ts, blocks=[TextBlock(text="an aborted answer")], in_context=False),
        UserMessage(ts=ts, text="the task again", compacted_history=True),
    ]
    for history, view, estimated in _history_and_views(session, "baseline"):
        assert not estimated
        assert view == history
