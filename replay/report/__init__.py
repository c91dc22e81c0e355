"""What `replay` prints and writes: terminal tables, JSON / CSV / Parquet exports, charts and
the self-contained HTML report (charts and HTML need the optional `report` extra)."""

from replay.report._export import (
    csv_pieces,
    frame_rows,
    json_pieces,
    lazy_rows,
    to_csv,
    to_json,
    to_parquet_bytes,
    write_output,
)
from replay.report._table import console, print_table, summary_table, turns_table


def html_report(log, strategies="all", **options) -> str:
    """The self-contained HTML report of `log` (see `replay.report._html.build_report`)."""
    from replay.report._html import html_report as build

    return build(log, strategies, **options)


def metric_chart(source, metric: str, **options):
    """An Altair chart of `prompt`, `cost` or `hit-ratio` per request, one line per strategy."""
    from replay.report._charts import metric_chart as build

    return build(source, metric, **options)


def render_chart(source, metric: str, fmt: str = "png", *, scale: float = 2.0) -> bytes | str:
    """`metric_chart` rendered offline, as `replay plot` writes it: PNG bytes or SVG text."""
    from replay.report._charts import render_chart as render

    return render(source, metric, fmt, scale=scale)


__all__ = [
    "console",
    "csv_pieces",
    "frame_rows",
    "html_report",
    "json_pieces",
    "lazy_rows",
    "metric_chart",
    "print_table",
    "render_chart",
    "summary_table",
    "to_csv",
    "to_json",
    "to_parquet_bytes",
    "turns_table",
    "write_output",
]
