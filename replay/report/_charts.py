"""Per-request charts (Vega-Lite via Altair): prompt size, cumulative cost, cache-hit ratio.

One line per strategy, with markers where a strategy rewrote earlier context (compaction, prune,
truncation, aging, clearing, dropping) and where the cache missed, their cause in the tooltip.

The same chart builder serves three uses:

- `metric_chart(result, metric)` returns an Altair chart with the data inline (notebooks);
- `render_chart(result, metric, "png" | "svg")` renders it offline with vl-convert (`replay plot`);
- the HTML report compiles the same specs to Vega with *named* data sources and feeds them the
  report's compact data, so the page ships each number once and can hide strategies by setting
  the `hidden` signal.

Altair and vl-convert are the optional `report` extra: nothing here imports them before a chart
is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Any

from replay._errors import ReplayError
from replay.report._money import usd

METRICS = ("prompt", "cost", "hit-ratio")
"""Chart names accepted by `replay plot --metric`."""

TITLES = {
    "prompt": "Prompt size per request (solid: whole prompt, dashed: read from cache)",
    "cost": "Cumulative cost (USD, summarizer calls included)",
    "hit-ratio": "Cache-hit ratio per request (cached / prompt tokens)",
}

# Tableau 10 then the paired tones of Category 20: distinct colours for 24 strategies.
PALETTE = (
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#79706e", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
    "#17becf", "#bcbd22", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
)
MARKER_SHAPES = {"miss": "cross", "compaction": "diamond", "rewrite": "triangle-down"}
NOT_A_MISS = (None, "cold start")


def _needs(module: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ReplayError(
            f"charts need the optional `report` extra ({module} is missing): "
            "pip install '.[report]' in the replay checkout"
        ) from None


def _extra_color(n: int) -> str:
    """The n-th colour past the palette: hues a golden angle apart, light and dark in turn
    (`-s all` runs twice as many strategies as the palette has colours)."""
    import colorsys

    hue = (0.13 + n * 0.381966) % 1.0
    red, green, blue = colorsys.hls_to_rgb(hue, 0.38 if n % 2 else 0.58, 0.62)
    return "#" + "".join(f"{round(c * 255):02x}" for c in (red, green, blue))


def colors(strategies: Sequence[str]) -> dict[str, str]:
    """A distinct colour per strategy, in order."""
    return {
        s: PALETTE[n] if n < len(PALETTE) else _extra_color(n - len(PALETTE))
        for n, s in enumerate(strategies)
    }


def strategy_order(records: Sequence[Any]) -> list[str]:
    return list(dict.fromkeys(r.strategy for r in records))


def series_rows(records: Sequence[Any]) -> list[dict[str, Any]]:
    """One row per recorded request per strategy: the numbers every chart plots.

    `cost` is cumulative (each strategy's summarizer calls counted at the request that made
    them); `hit` is cached / prompt tokens of that request.
    """
    rows: list[dict[str, Any]] = []
    cumulative: dict[str, float] = {}
    pending: dict[str, float] = {}
    for r in sorted(records, key=lambda r: (r.strategy, r.request_index, r.kind != "summarizer")):
        cost = float(r.cost_usd)
        if r.kind != "request":
            pending[r.strategy] = pending.get(r.strategy, 0.0) + cost
            continue
        total = cumulative.get(r.strategy, 0.0) + pending.pop(r.strategy, 0.0) + cost
        cumulative[r.strategy] = total
        o = r.outcome
        prompt = o.prompt  # as billed (a provider may strip earlier reasoning), as `run` says
        rows.append(
            {
                "s": r.strategy,
                "i": r.request_index,
                "t": r.thread,
                "prompt": prompt,
                "cached": o.cache_read,
                "written": o.cache_write_5m + o.cache_write_1h,
                "uncached": o.uncached,
                "cost": round(total, 8),
                "hit": round(o.cache_read / prompt, 4) if prompt else 0.0,
            }
        )
    order = {s: n for n, s in enumerate(strategy_order(records))}
    rows.sort(key=lambda row: (order[row["s"]], row["i"]))
    return rows


def marker_rows(records: Sequence[Any], series: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Markers: rewrites (compaction, prune, truncate, aging, clear, drop) and cache misses."""
    misses, rewrites = marker_parts(records, series)
    return misses + rewrites  # rewrites drawn last, on top of a miss at the same request


def marker_parts(
    records: Sequence[Any], series: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`marker_rows`' misses and rewrites apart, so that markers built strategy by strategy can
    still be drawn every miss first."""
    at = {(row["s"], row["i"]): row for row in series}
    summarizer: dict[tuple[str, int], tuple[int, Decimal]] = {}
    for r in records:
        if r.kind == "summarizer":
            key = (r.strategy, r.request_index)
            calls, cost = summarizer.get(key, (0, Decimal(0)))
            summarizer[key] = (calls + 1, cost + Decimal(r.cost_usd))
    misses: list[dict[str, Any]] = []
    rewrites: list[dict[str, Any]] = []
    for r in records:
        if r.kind != "request":
            continue
        row = at[(r.strategy, r.request_index)]
        base = {"s": r.strategy, "i": r.request_index, "prompt": row["prompt"],
                "cost": row["cost"], "hit": row["hit"]}
        if r.outcome.miss_cause not in NOT_A_MISS:
            misses.append(base | {"m": "miss", "what": "cache miss", "cause": r.outcome.miss_cause})
        if r.events:
            kinds = list(dict.fromkeys(e.kind for e in r.events))
            cause = "; ".join(f"{e.kind}: {e.detail}" if e.detail else e.kind for e in r.events)
            calls, cost = summarizer.get((r.strategy, r.request_index), (0, Decimal(0)))
            if calls:
                cause += (f" (summarizer call {usd(cost)})" if calls == 1
                          else f" ({calls} summarizer calls {usd(cost)})")
            kind = "compaction" if "compaction" in kinds else "rewrite"
            rewrites.append(base | {"m": kind, "what": ", ".join(kinds), "cause": cause})
    return misses, rewrites


_Y = {
    "prompt": ("prompt", "tokens", ",d"),
    "cost": ("cost", "USD", "$.4f"),
    "hit-ratio": ("hit", "hit ratio", ".0%"),
}


def metric_chart(
    source: Any,
    metric: str,
    *,
    named: bool = False,
    strategies: Sequence[str] | None = None,
    width: int = 860,
    height: int = 260,
    requests: int | None = None,
):
    """An Altair chart of one metric, one line per strategy, with rewrite and miss markers.

    `source` is a `ReplayResult` (or its records). With `named=True` the chart reads the named
    data sources `rows` and `marks` (filled by the HTML report) instead of inline values, and
    honours a `hidden` parameter (strategies to leave out) set by the page.
    """
    alt = _needs("altair")
    if metric not in METRICS:
        raise ReplayError(f"unknown metric {metric!r}: expected one of {', '.join(METRICS)}")
    records = getattr(source, "records", source)
    order = list(strategies) if strategies is not None else strategy_order(records)
    palette = colors(order)
    n_requests = requests or len({r.request_index for r in records}) or 1
    if named:
        rows_data: Any = alt.NamedData(name="rows")
        marks_data: Any = alt.NamedData(name="marks")
    else:
        series = series_rows(records)
        rows_data = alt.InlineData(values=series)
        marks_data = alt.InlineData(values=marker_rows(records, series) or [{}])
    field, title, fmt = _Y[metric]
    color = alt.Color(
        "s:N",
        title="strategy",
        scale=alt.Scale(domain=order, range=[palette[s] for s in order]),
        # The report has its own strategy switches (with these colours) instead of a legend.
        legend=None if named else alt.Legend(
            orient="bottom", columns=3, symbolType="stroke", labelLimit=300, symbolLimit=0
        ),
    )
    # The axis ends at the last request (a "nice" round end drew 0–40 for 37 requests).
    x = alt.X("i:Q", title="request", axis=alt.Axis(format="d", tickMinStep=1),
              scale=alt.Scale(nice=False))
    y_axis = alt.Axis(format=fmt, title=title)
    hidden = alt.param(name="hidden", value=[])
    keep = "indexof(hidden, datum.s) < 0"
    base = alt.Chart(rows_data).transform_filter(keep)
    if metric == "prompt":
        lines = (
            base.transform_fold(["prompt", "cached"], as_=["part", "tokens"])
            .mark_line(strokeWidth=1.6)
            .encode(
                x=x,
                y=alt.Y("tokens:Q", axis=y_axis),
                color=color,
                strokeDash=alt.StrokeDash(
                    "part:N",
                    title="tokens",
                    scale=alt.Scale(domain=["prompt", "cached"], range=[[1, 0], [4, 3]]),
                    legend=alt.Legend(orient="bottom"),
                ),
                # One line per thread: a subagent's prompts are not the main thread's.
                detail=[alt.Detail("s:N"), alt.Detail("t:N")],
            )
        )
    else:
        # The cost is the strategy's, summed over its threads; a prompt's hit ratio is its
        # thread's (one line each).
        split = {} if metric == "cost" else {"detail": "t:N"}
        lines = base.mark_line(strokeWidth=1.6).encode(
            x=x, y=alt.Y(f"{field}:Q", axis=y_axis), color=color, **split
        )
    # A series of one request (a log of one request, a subagent thread that made one call) is
    # a line of no length, which draws nothing: its point gets a dot.
    lone = base.transform_joinaggregate(
        points="count()", groupby=["s"] if metric == "cost" else ["s", "t"]
    ).transform_filter("datum.points === 1")
    if metric == "prompt":
        lone = lone.transform_fold(["prompt", "cached"], as_=["part", "tokens"])
    dots = lone.mark_circle(size=40, opacity=1).encode(
        x=x, y=alt.Y("tokens:Q" if metric == "prompt" else f"{field}:Q", axis=y_axis),
        color=color,
    )
    # One invisible rule per request, as wide as a request, carries a tooltip with the value of
    # every strategy shown there (one mark per request keeps long logs fast to draw).
    hover = (
        base.transform_pivot("s", value=field, groupby=["i"])
        .mark_rule(strokeWidth=max(2.0, width / max(1, n_requests)), opacity=0)
        .encode(
            x=x,
            tooltip=[alt.Tooltip("i:Q", title="request")]
            + [alt.Tooltip(f"{_field_name(s)}:Q", title=s, format=fmt) for s in order],
        )
    )
    markers = (
        alt.Chart(marks_data)
        .transform_filter(f"isValid(datum.s) && {keep}")
        .mark_point(filled=True, opacity=0.9, stroke="#222", strokeWidth=0.6)
        .encode(
            x=x,
            y=alt.Y(f"{field}:Q"),
            color=color,
            # Smaller markers on long logs, where a rewrite can happen at every request.
            size=alt.condition(
                "datum.m === 'miss'",
                alt.value(45 if n_requests <= 60 else 25 if n_requests <= 200 else 14),
                alt.value(110 if n_requests <= 60 else 60 if n_requests <= 200 else 32),
            ),
            shape=alt.Shape(
                "m:N",
                title="marker",
                scale=alt.Scale(
                    domain=list(MARKER_SHAPES), range=list(MARKER_SHAPES.values())
                ),
                legend=alt.Legend(orient="bottom"),
            ),
            tooltip=[
                alt.Tooltip("what:N", title="event"),
                alt.Tooltip("s:N", title="strategy"),
                alt.Tooltip("i:Q", title="request"),
                alt.Tooltip("cause:N", title="cause"),
            ],
        )
    )
    return (
        alt.layer(lines, dots, hover, markers)
        .add_params(hidden)
        .properties(title=TITLES[metric], width=width, height=height)
        .resolve_scale(color="shared")
    )


def _field_name(name: str) -> str:
    """A strategy name as a Vega-Lite field reference (dots and brackets are paths there)."""
    return "".join("\\" + c if c in ".[]\\" else c for c in name)


def vega_spec(
    metric: str, strategies: Sequence[str], requests: int, width: int = 860
) -> dict[str, Any]:
    """The report's chart `metric` compiled to a Vega spec with named `rows`/`marks` data."""
    vlc = _needs("vl_convert")
    chart = metric_chart(
        [], metric, named=True, strategies=strategies, width=width, requests=requests
    )
    return vlc.vegalite_to_vega(chart.to_dict())


def render_chart(source: Any, metric: str, fmt: str = "png", *, scale: float = 2.0) -> bytes | str:
    """One chart rendered offline: PNG bytes or SVG text."""
    vlc = _needs("vl_convert")
    spec = metric_chart(source, metric).to_dict()
    if fmt == "svg":
        return vlc.vegalite_to_svg(spec)
    if fmt == "png":
        return vlc.vegalite_to_png(spec, scale=scale)
    raise ReplayError(f"unknown format {fmt!r}: expected png or svg")


@lru_cache(maxsize=1)
def vega_runtime() -> str:
    """Vega, Vega-Lite and Vega-Embed as one script defining `window.vegaEmbed` (bundled by
    vl-convert: no network, no CDN)."""
    vlc = _needs("vl_convert")
    return vlc.javascript_bundle()
