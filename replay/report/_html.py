"""`replay report`: one self-contained HTML file with charts, tables and a turn navigator.

The page works offline: the Vega runtime is inlined (bundled by vl-convert), the charts are
Vega-Lite specs compiled to Vega at build time, and the data is one JSON document in the page.
Nothing is fetched.

The document is compact so that hundreds of requests × many strategies stay small:

- every distinct text (a message, a tool output, a stub, a summary) is stored once in `texts`;
- every distinct view item is stored once in `items` as `[kind, text id, label id, event index,
  tokens, original chars, flags]`;
- a thread's history is a list of item ids (as ranges); each request's view is stored as the
  length of the prefix it shares with the previous view of the same strategy and thread, then the
  remaining item ids as ranges (`[start, count, start, count, ...]`), so append-only strategies
  cost a few numbers per request;
- chart series are columns (one list per field), not one object per point.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from replay._printable import printable
from replay.report._charts import MARKER_SHAPES as MARKER_KINDS
from replay.report._charts import METRICS, colors, marker_parts, series_rows, strategy_order
from replay.strategies._view import shared_prefix

_KIND = {"user": "u", "assistant": "a", "tool_result": "t", "summary": "s"}
_FLAG_STUBBED, _FLAG_INJECTED, _FLAG_ERROR = 1, 2, 4
_FLAG_ESTIMATED = 8
"""A stand-in for context the log lacks (known by its size from the provider's usage): sent in
views, in no history, and not something the strategy added."""
_FLAG_REBUILT = 16
"""A message the log's own compaction re-sent (Codex's `replacement_history`, repeated after
the compaction: `UserMessage.compacted_history`): in `recorded`'s views only, in no history,
and added by the agent's compaction, not by the strategy."""

RECORD_FIELDS = [
    "i",  # request index (file order, all threads): a key of `requests`
    "view",  # [shared prefix with previous view, start, count, start, count, ...]
    "mm",  # view item of the first mismatch (-1: tools/system; null: none)
    "where",  # tools / system / message N / tail / first
    "fm",  # first mismatch token (tokens shared with the previous request)
    "miss",  # text id of the miss cause, or null
    "events",  # text ids of "kind: detail"
    "blind",  # [[kind, tool, path, excerpt text id, [fragment text ids]], ...]
    "summ",  # [summarizer calls, their cost]
    "out",  # output tokens
    "req_cost",  # this request's cost (USD, summarizer calls excluded)
    "sys",  # tokens of tool definitions + system prompt
    "over",  # over the model's context window
]
REQUEST_FIELDS = [
    "i",  # request index
    "id",  # request id
    "thread",  # thread index in `threads`
    "h",  # items in the thread's history at this request
    "model",  # index in `models`
    "ts",
]


@dataclass
class _Interner:
    texts: list[str] = field(default_factory=list)
    text_ids: dict[str, int] = field(default_factory=dict)
    items: list[list[Any]] = field(default_factory=list)
    item_ids: dict[tuple, int] = field(default_factory=dict)
    rebuilt: frozenset[int] = frozenset()
    """Event indexes of the messages a logged compaction re-sent (`_FLAG_REBUILT`)."""

    def text(self, value: str) -> int:
        n = self.text_ids.get(value)
        if n is None:
            n = self.text_ids[value] = len(self.texts)
            self.texts.append(value)
        return n

    def item(self, item: Any) -> int:
        key, row = _describe(item, self)
        n = self.item_ids.get(key)
        if n is None:
            n = self.item_ids[key] = len(self.items)
            self.items.append(row)
        return n


def _item_text(item: Any) -> str:
    blocks = getattr(item, "blocks", None)
    if blocks is not None:
        parts = []
        for b in blocks:
            if b.type == "thinking" and b.size_only is not None:
                parts.append(f"[thinking: {b.size_only:,} tokens, not in the log]")
            elif b.type == "thinking":
                parts.append(f"[thinking] {b.text}")
            elif b.type == "tool_call":
                parts.append(f"→ {b.rendered()}")
            else:
                parts.append(b.text)
        return "\n\n".join(parts)
    for name in ("output", "text"):
        value = getattr(item, name, None)
        if isinstance(value, str):
            return value
    return repr(item)


def _describe(item: Any, interner: _Interner) -> tuple[tuple, list[Any]]:
    kind = _KIND.get(getattr(item, "kind", ""), "?")
    text = _item_text(item)
    event = int(getattr(item, "event_index", -1))
    label = ""
    flags = 0
    original = getattr(item, "original_chars", None) or 0
    if kind == "t":
        label = item.tool_name or ""
        flags |= _FLAG_ERROR if item.is_error else 0
        flags |= _FLAG_STUBBED if item.original_chars is not None else 0  # 0: emptied out
    elif kind == "s":
        label = f"summary ({item.source})"
        replaces = getattr(item, "replaces", ())
        if replaces:
            label += f", replaces {len(replaces)} item(s)"
    elif kind == "u" and getattr(item, "injected", False):
        flags |= _FLAG_INJECTED
        flags |= _FLAG_ESTIMATED if getattr(item, "estimated_tokens", None) is not None else 0
    elif kind == "?":
        label = type(item).__name__
    if kind == "u" and event in interner.rebuilt:
        flags |= _FLAG_REBUILT
    key = (kind, event, text, label, flags, original)
    return key, [kind, interner.text(text), interner.text(label), event, -1, original, flags]


def _ranges(ids: Sequence[int]) -> list[int]:
    """[start, count, start, count, ...] runs of consecutive ids."""
    out: list[int] = []
    for n in ids:
        if out and out[-2] + out[-1] == n:
            out[-1] += 1
        else:
            out.extend((n, 1))
    return out


def _histories(
    session: Any, interner: _Interner
) -> tuple[list[str], list[list[int]], list[int]]:
    """Each thread's full history (the engine's items, rebuilt from the log) as item ids, and
    for each request (file order) how many items of its thread's history the log holds before
    it.

    That count is the log's, not the engine's `history_len`: the engine's history also holds
    the estimated context the log lacks (in no history here), so its count reached past the
    request into the items logged after it, which the navigator then showed as removed. The
    messages no strategy sends as history (an answer the harness never sent back, the summary
    of a logged compaction, which `recorded` adds where the agent compacted) are left out, as
    the engine leaves them out."""
    from replay.engine._replay import _assistant_item
    from replay.log import AssistantMessage, RequestMarker, ToolResult, UserMessage
    from replay.strategies import ToolResultItem, UserItem

    names: list[str] = []
    histories: dict[str, list[int]] = {}
    before: list[int] = []
    for n, event in enumerate(session.events):
        item: Any = None
        if isinstance(event, RequestMarker):
            before.append(len(histories.get(event.thread, ())))
        elif isinstance(event, UserMessage) and not event.compacted_history:
            item = UserItem(event.text, event_index=n, injected=event.injected)
        elif isinstance(event, AssistantMessage) and event.in_context:
            item = _assistant_item(event, n)
        elif isinstance(event, ToolResult):
            item = ToolResultItem(
                call_id=event.call_id,
                tool_name=event.tool_name,
                output=event.output,
                is_error=event.is_error,
                event_index=n,
            )
        if item is None:
            continue
        if event.thread not in histories:
            names.append(event.thread)
            histories[event.thread] = []
        histories[event.thread].append(interner.item(item))
    return names, [histories[name] for name in names], before


def _mismatch_item(record: Any) -> int | None:
    """View item where the prompt first differs from the previous one (-1: tools/system)."""
    diff, request = record.diff, record.request
    if diff.where == "first":
        return None
    if diff.where in ("tools", "system"):
        return -1
    block = diff.first_mismatch_block
    if block is None:
        block = int(np.searchsorted(request.cum_tokens, diff.first_mismatch_token, side="right"))
        if block >= len(request.block_ids):
            return None
    return int(request.item_index[block])


def _fragments(action: Any) -> list[str]:
    """Pieces of a blind action's excerpt to highlight in the hidden text."""
    if action.kind == "stubbed-read":
        return []
    text = action.excerpt.rstrip("…")
    quotes = action.kind in ("hidden-quote", "hidden-mention")
    parts = text.split(", ") if quotes else text.splitlines()
    return [p.strip() for p in parts if len(p.strip()) >= 3][:40]


def _money(value: Any) -> str:
    if value is None:
        return ""
    d = Decimal(value)
    return format(d.normalize() if d else Decimal(0), "f")


@dataclass
class DocumentPart:
    """What the page shows of one strategy (`_Document.part`), with its own text and item
    numbers beyond the histories' (which every document of the log numbers alike)."""

    strategy: str
    base: tuple[int, int]
    """Texts and items of the histories."""
    texts: list[str]
    """The texts after them, in the order the strategy's rows met them."""
    items: list[list[Any]]
    """The items after them, as `_Interner.items` rows (text numbers of this part)."""
    history_tokens: dict[int, int]
    """History items → their tokens, where this strategy sent them."""
    requests: list[list[Any]]
    """`REQUEST_FIELDS` rows, with the thread and the model by name."""
    rows: list[list[Any]]
    """The navigator's rows (`RECORD_FIELDS`), numbered as this part."""
    series: list[dict[str, Any]]
    misses: list[dict[str, Any]]
    rewrites: list[dict[str, Any]]
    blind: dict[str, int]


def document_part(session: Any, records: Sequence[Any]) -> DocumentPart:
    """The report's part for one strategy's records (views and block counts kept): what a
    worker process sends back instead of the records."""
    document = _Document(session)
    document.add(records)
    return document.part()


def _renumbered(row: list[Any], items: list[int], texts: list[int]) -> list[Any]:
    """A navigator row of a part, with the merged document's item and text numbers."""
    keep, ranges = row[1][0], row[1][1:]
    view = [items[n] for n in _expand_ranges(ranges)]
    out = list(row)
    out[1] = [keep, *_ranges(view)]
    out[5] = None if row[5] is None else texts[row[5]]
    out[6] = [texts[n] for n in row[6]]
    out[7] = [[kind, tool, path, texts[excerpt], [texts[f] for f in fragments]]
              for kind, tool, path, excerpt, fragments in row[7]]
    return out


def _expand_ranges(ranges: Sequence[int]) -> Iterator[int]:
    for start, count in zip(ranges[::2], ranges[1::2], strict=True):
        yield from range(start, start + count)


class _Document:
    """The report's document, built one strategy's records at a time (`add`): what the page
    needs of each record is taken and the record can be dropped, so a report holds one
    strategy's records (with their views) at once instead of every strategy's."""

    def __init__(self, session: Any) -> None:
        from replay.engine._results import ResultTables

        self.session = session
        self.interner = _Interner(rebuilt=frozenset(
            n for n, e in enumerate(session.events) if getattr(e, "compacted_history", False)
        ))
        self.thread_names, self.histories, self.history_at = _histories(session, self.interner)
        """`history_at[i]`: items of request i's thread history before it."""
        self.thread_index = {name: n for n, name in enumerate(self.thread_names)}
        self.order: list[str] = []
        self.tables = ResultTables(per_turn=False)
        """What the summary and the notes need, counted as the records go."""
        self.records: dict[str, list[list[Any]]] = {}
        """Strategy → the navigator's rows (`RECORD_FIELDS`)."""
        self.requests: dict[int, list[Any]] = {}
        self.request_models: list[str] = []
        self.series: dict[str, list[dict[str, Any]]] = {}
        self.misses: list[dict[str, Any]] = []
        self.rewrites: list[dict[str, Any]] = []
        self.blind: dict[str, dict[str, int]] = {}
        self.base = (len(self.interner.texts), len(self.interner.items))
        """Texts and items of the histories: numbered alike wherever the log is read."""

    def add(self, records: Sequence[Any]) -> None:
        """Take in the records of one strategy (or of several, each whole)."""
        if not records:
            return
        for name in strategy_order(records):
            of_strategy = [r for r in records if r.strategy == name]
            self.tables.add(of_strategy)
            self.order.append(name)
            self.records[name] = self._rows(of_strategy)
            series = series_rows(of_strategy)
            self.series[name] = series
            misses, rewrites = marker_parts(of_strategy, series)
            self.misses += misses
            self.rewrites += rewrites
            self.blind.update(_blind_kinds(of_strategy))

    def _rows(self, records: Sequence[Any]) -> list[list[Any]]:
        interner = self.interner
        text = interner.text
        summarizers: dict[int, list[Any]] = {}
        for r in records:
            if r.kind == "summarizer":
                summarizers.setdefault(r.request_index, []).append(r)
        rows: list[list[Any]] = []
        # Thread → its previous view: the items themselves and their ids. Consecutive views
        # share most of their items (the same objects), whose ids are taken from the last one:
        # describing every item of every view again made the report quadratic in the log.
        previous: dict[str, tuple[list[Any], list[int]]] = {}
        held: dict[int, tuple[Any, int]] = {}
        """id(item) → (item, its id): the items described so far (held, so their ids stay
        theirs), for those a strategy sends again outside the shared prefix."""

        def item_id(item: Any) -> int:
            got = held.get(id(item))
            if got is None:
                got = held[id(item)] = (item, interner.item(item))
            return got[1]

        for r in sorted((r for r in records if r.kind == "request"),
                        key=lambda r: r.request_index):
            items = r.view
            before_items, before = previous.get(r.thread, ([], []))
            same = shared_prefix(before_items, items)
            view = before[:same] + [item_id(item) for item in items[same:]]
            request = r.request
            positions = np.asarray(request.item_index)
            tokens = np.asarray(request.block_tokens)
            inside = positions >= 0
            per_item = np.bincount(positions[inside], weights=tokens[inside], minlength=len(view))
            # Each item's tokens as first sent (those of the shared prefix were set before).
            for pos in range(same, len(view)):
                if interner.items[view[pos]][4] < 0:
                    interner.items[view[pos]][4] = int(per_item[pos])
            system_tokens = int(tokens[~inside].sum())
            keep = same
            for a, b in zip(before[same:], view[same:], strict=False):
                if a != b:
                    break
                keep += 1
            previous[r.thread] = (items, view)
            calls = summarizers.get(r.request_index, [])
            self._request(r.request_index, r.request_id, r.thread,
                          self.history_at[r.request_index], r.model,
                          r.ts.isoformat().replace("+00:00", "Z"))
            miss = r.outcome.miss_cause
            rows.append(
                [
                    r.request_index,
                    [keep, *_ranges(view[keep:])],
                    _mismatch_item(r),
                    r.diff.where,
                    r.diff.first_mismatch_token,
                    None if miss is None else text(miss),
                    [text(f"{e.kind}: {e.detail}" if e.detail else e.kind) for e in r.events],
                    [
                        [a.kind, a.tool, a.path, text(a.excerpt), [text(f) for f in _fragments(a)]]
                        for a in r.blind_actions
                    ],
                    [len(calls), float(sum((c.cost_usd for c in calls), Decimal(0)))],
                    r.output_tokens,
                    float(r.cost_usd),
                    system_tokens,
                    bool(r.over_window),
                ]
            )
        return rows

    def part(self) -> DocumentPart:
        """What this document took of its one strategy, to merge into another document of
        the same log (`merge`): made where the strategy's records are (a worker process)."""
        (name,) = self.order
        texts, items = self.base
        return DocumentPart(
            strategy=name,
            base=self.base,
            texts=self.interner.texts[texts:],
            items=self.interner.items[items:],
            history_tokens={n: row[4] for n, row in enumerate(self.interner.items[:items])
                            if row[4] >= 0},
            requests=[[i, rid, self.thread_names[t], h, self.request_models[m], ts]
                      for i, rid, t, h, m, ts in (self.requests[k] for k in sorted(self.requests))],
            rows=self.records[name],
            series=self.series[name],
            misses=self.misses,
            rewrites=self.rewrites,
            blind=self.blind.get(name, {}),
        )

    def merge(self, part: DocumentPart, tables: Any) -> None:
        """Take in a strategy's `part` (and its counted `tables`) as `add` would have taken its
        records: the same document, byte for byte, once every strategy is in."""
        if part.base != self.base:  # a bug, not the user's: the traceback is the report
            raise RuntimeError(f"a report part numbered {part.base}, this document {self.base}")
        interner = self.interner
        base_texts, base_items = self.base
        texts = list(range(base_texts)) + [interner.text(t) for t in part.texts]

        def text_of(n: int) -> str:
            return interner.texts[n] if n < base_texts else part.texts[n - base_texts]

        items = list(range(base_items))
        for kind, text, label, event, tokens, original, flags in part.items:
            key = (kind, event, text_of(text), text_of(label), flags, original)
            n = interner.item_ids.get(key)
            if n is None:
                n = interner.item_ids[key] = len(interner.items)
                interner.items.append([kind, texts[text], texts[label], event, tokens, original,
                                       flags])
            elif interner.items[n][4] < 0:
                interner.items[n][4] = tokens
            items.append(n)
        for n, tokens in part.history_tokens.items():
            if interner.items[n][4] < 0:
                interner.items[n][4] = tokens
        for request in part.requests:
            self._request(*request)
        self.tables.merge(tables)
        self.order.append(part.strategy)
        self.records[part.strategy] = [_renumbered(row, items, texts) for row in part.rows]
        self.series[part.strategy] = part.series
        self.misses += part.misses
        self.rewrites += part.rewrites
        if part.blind:
            self.blind[part.strategy] = part.blind

    def _request(self, i: int, request_id: str, thread: str, history_len: int, model: str,
                 ts: str) -> None:
        """The `REQUEST_FIELDS` row of request `i`, from the first strategy that sent it. A
        thread with no message of its own gets its number where a request first names it."""
        if i in self.requests:
            return
        if thread not in self.thread_index:
            self.thread_index[thread] = len(self.thread_names)
            self.thread_names.append(thread)
            self.histories.append([])
        if model not in self.request_models:
            self.request_models.append(model)
        self.requests[i] = [i, request_id, self.thread_index[thread], history_len,
                            self.request_models.index(model), ts]

    def navigator(self) -> dict[str, Any]:
        return {
            "threads": self.thread_names,
            "histories": [_ranges(h) for h in self.histories],
            "requestFields": REQUEST_FIELDS,
            "requests": [self.requests[k] for k in sorted(self.requests)],
            "requestModels": self.request_models,
            "recordFields": RECORD_FIELDS,
            "records": [self.records[s] for s in self.order],
        }

    def marks(self) -> dict[str, list[Any]]:
        """Markers as columns (texts by id); the page takes their y values from the series.
        Every miss first, then the rewrites, drawn on top of a miss at the same request."""
        index = {s: n for n, s in enumerate(self.order)}
        kinds = list(MARKER_KINDS)
        cols: dict[str, list[Any]] = {"s": [], "i": [], "m": [], "what": [], "cause": []}
        for mark in self.misses + self.rewrites:
            cols["s"].append(index[mark["s"]])
            cols["i"].append(mark["i"])
            cols["m"].append(kinds.index(mark["m"]))
            cols["what"].append(self.interner.text(mark["what"]))
            cols["cause"].append(self.interner.text(mark["cause"] or ""))
        return cols

    def build(
        self,
        summary: pl.DataFrame,
        notes: Sequence[str],
        breakeven: pl.DataFrame | None = None,
        *,
        title: str | None = None,
        log: str | None = None,
        recommendation: str | None = None,
    ) -> dict[str, Any]:
        """The document, once every strategy was added; `summary` and `notes` are the run's."""
        session = self.session
        header = session.header
        navigator = self.navigator()
        series = [row for name in self.order for row in self.series[name]]
        summary_cols, summary_rows = _summary_rows(summary, breakeven, self.blind)
        document: dict[str, Any] = {
            "format": "replay-report/1",
            "title": title or f"replay report · {log or session.path or 'log'}",
            "log": log or session.path,
            # The log's time span, not the time of writing: the same log gives the same page.
            "span": _span(session),
            "agent": header.agent,
            "models": sorted(self.tables.models),
            "providers": sorted(self.tables.providers),
            "notes": list(notes),
            "recommendation": recommendation,
            "recommended": _recommended(summary),
            "strategies": self.order,
            "colors": [colors(self.order)[s] for s in self.order],
            "series": _columns(series, self.order, navigator["threads"]),
            "markKinds": list(MARKER_KINDS),
            "marks": self.marks(),
            "summary": {"columns": summary_cols, "rows": summary_rows},
            "breakeven": None,
            **navigator,
            "items": self.interner.items,
            "texts": self.interner.texts,
            "system": {"text": self.interner.text(header.system or ""),
                       "tools": [t.name for t in header.tools]},
        }
        if breakeven is not None:
            cols, rows = _table(breakeven, BREAKEVEN_COLUMNS)
            document["breakeven"] = {"columns": cols, "rows": rows}
        return document


def _columns(rows: Sequence[dict[str, Any]], order: list[str],
             threads: list[str]) -> dict[str, list[Any]]:
    """The chart rows as columns; strategies and threads by their index in `order`, `threads`."""
    index = {"s": {s: n for n, s in enumerate(order)}, "t": {t: n for n, t in enumerate(threads)}}
    names = ["s", "i", "t", "prompt", "cached", "written", "uncached", "cost", "hit"]
    cols: dict[str, list[Any]] = {name: [] for name in names}
    for row in rows:
        for name in names:
            cols[name].append(index[name][row[name]] if name in index else row[name])
    return cols


def _blind_kinds(records: Iterable[Any]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for r in records:
        for a in r.blind_actions:
            per = counts.setdefault(r.strategy, {})
            per[a.kind] = per.get(a.kind, 0) + 1
    return counts


SUMMARY_COLUMNS = [
    # key, header, kind (int / usd / ratio / text / float), tooltip
    ("strategy", "strategy", "text", "Strategy name"),
    ("requests", "requests", "int", "Recorded model calls replayed"),
    ("prompt_tokens", "prompt", "int", "Input tokens sent (summarizer calls included)"),
    ("cached_tokens", "cached", "int", "Of which read from the provider's cache"),
    ("cache_write_tokens", "written", "int", "Of which written to the cache"),
    ("uncached_tokens", "uncached", "int", "Of which billed at the full input rate"),
    ("output_tokens", "output", "int", "Generated tokens"),
    ("cost_usd", "cost (USD)", "usd", "Total cost, summarizer calls included"),
    ("peak_prompt_tokens", "peak prompt", "int",
     "Largest single prompt of the agent's requests (summarizer calls left out)"),
    ("hit_ratio", "hit ratio", "ratio", "cached / prompt tokens"),
    ("prefix_breaks", "prefix breaks", "int",
     "Requests that rewrote part of the previous prompt (summarizer calls not counted)"),
    ("over_window", "over window", "int",
     "Requests over the model's context window, summarizer calls included"),
    ("summarizer_calls", "summarizer calls", "int", "Extra model calls for summaries"),
    ("summarizer_cost_usd", "summarizer cost", "usd", "Their cost (included in cost)"),
    ("misses", "misses", "int",
     "Requests that read less of their prompt than they could have (see miss causes;"
     " summarizer calls not counted)"),
    ("rewrites", "rewrites", "int", "Rewrite events analysed for break-even"),
    ("paid_back", "paid back", "int", "Rewrites whose simulated saving turned positive"),
    ("median_breakeven", "median break-even", "float",
     "Median requests until a rewrite paid back (simulated; paid-back rewrites only)"),
    ("rewrite_net_usd", "net of rewrites (USD)", "usd",
     "Sum of each rewrite's simulated net saving over its horizon, each against the same "
     "strategy without that one rewrite (its other rewrites kept): not the strategy's saving "
     "against baseline, which the cost column compares"),
    ("blind_actions", "blind actions", "int", "Recorded actions that relied on hidden text"),
    ("hidden-edit-target", "hidden edit target", "int", "Edits whose old text was hidden"),
    ("hidden-quote", "hidden quote", "int", "Calls quoting a path or name only in hidden text"),
    ("stubbed-read", "stubbed read", "int", "Edited files shown only as a stub or cut down"),
    ("blind_mentions", "hidden mentions", "int",
     "Responses whose own text named something only hidden text held (not actions)"),
    ("miss_causes", "miss causes", "text", "Why requests read less than they could, with counts"),
    ("storage_cost_usd", "storage cost", "usd",
     "Explicit-cache storage billed per hour (Gemini), included in cost"),
    ("cache_created_tokens", "cache created", "int",
     "Tokens of explicit caches created by calls of their own (Gemini), billed at the input"
     " rate and included in cost; the requests then read them (cached)"),
]
EXPLICIT_CACHE_COLUMNS = ("storage_cost_usd", "cache_created_tokens")
"""Columns shown only when an explicit cache was used."""

BREAKEVEN_COLUMNS = [
    ("strategy", "strategy", "text", ""),
    ("request_index", "request", "int", "Request where the strategy rewrote context"),
    ("thread", "thread", "text", "Thread of the request (main, or a sub-agent's)"),
    ("event", "event", "text", ""),
    ("first_edit_token", "first edit", "int", "First token of the prompt that changed"),
    ("removed_tokens", "removed", "int", "Tokens smaller than without the rewrite"),
    ("surviving_tokens", "surviving", "int",
     "Tokens after the first edit the previous request sent too (re-billed instead of read)"),
    ("rewrite_cost_usd", "rewrite cost", "usd6", "Closed form: surviving × (input − read rate)"),
    ("saving_per_request_usd", "saving/req", "usd6",
     "Closed form: removed × read rate (+ the long-context tier the rewrite leaves)"),
    ("breakeven_closed_form", "closed form", "never-float",
     "Requests to pay back (closed form); never: no saving per request"),
    ("breakeven_simulated", "simulated", "never-int",
     "Requests to pay back for good (simulated); never: not positive at the end of the "
     "horizon"),
    ("simulated_net_usd", "net (horizon)", "usd6", "Simulated saving over the horizon"),
    ("horizon", "horizon", "int",
     "Requests compared: to the next structural rewrite or the end of its thread"),
    ("summarizer_cost_usd", "summary cost", "usd6",
     "Cost of the summarizer calls the rewrite needed"),
    ("summarizer_cache_read", "summary cache read", "int",
     "Tokens those calls read from the cache"),
    ("disagreement", "disagreement", "text", "Why the two answers may differ"),
]


def _cell(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if isinstance(value, Decimal) or kind in ("usd", "usd6"):
        return _money(value)
    if isinstance(value, float) and value != value:  # NaN
        return None
    return value


def _summary_rows(summary: pl.DataFrame, breakeven: pl.DataFrame | None,
                  blind: dict[str, dict[str, int]]) -> list:
    by_strategy: dict[str, dict[str, Any]] = {}
    if breakeven is not None and breakeven.height:
        agg = breakeven.group_by("strategy").agg(
            pl.len().alias("rewrites"),
            pl.col("breakeven_simulated").is_not_null().sum().alias("paid_back"),
            pl.col("breakeven_simulated").median().alias("median_breakeven"),
            pl.col("simulated_net_usd").sum().alias("rewrite_net_usd"),
        )
        by_strategy = {row["strategy"]: row for row in agg.iter_rows(named=True)}
    rows = []
    for row in summary.iter_rows(named=True):
        extra = by_strategy.get(row["strategy"])
        if breakeven is not None:
            row["rewrites"] = extra["rewrites"] if extra else 0
            row["paid_back"] = extra["paid_back"] if extra else 0
            row["median_breakeven"] = extra["median_breakeven"] if extra else None
            row["rewrite_net_usd"] = extra["rewrite_net_usd"] if extra else None
        for kind in ("hidden-edit-target", "hidden-quote", "stubbed-read"):
            row[kind] = blind.get(row["strategy"], {}).get(kind, 0)
        rows.append(row)
    explicit = any(
        c in summary.columns and bool(summary[c].sum()) for c in EXPLICIT_CACHE_COLUMNS
    )
    columns = [
        c for c in SUMMARY_COLUMNS
        if (breakeven is not None
            or c[0] not in ("rewrites", "paid_back", "median_breakeven", "rewrite_net_usd"))
        and (explicit or c[0] not in EXPLICIT_CACHE_COLUMNS)
    ]
    return [list(c) for c in columns], [[_cell(r.get(c[0]), c[2]) for c in columns] for r in rows]


def _recommended(summary: pl.DataFrame) -> str | None:
    """The strategy the recommendation line advises, the one row the summary tints: not merely
    the cheapest, which may have hidden text the agent used (None when no unflagged strategy
    beats the reference)."""
    from replay._api import recommendation  # (replay._api imports this module)

    rec = recommendation(summary)
    return rec["strategy"] if rec is not None and rec["beats_reference"] else None


def _table(frame: pl.DataFrame, columns) -> tuple[list, list]:
    return [list(c) for c in columns], [
        [_cell(r.get(c[0]), c[2]) for c in columns] for r in frame.iter_rows(named=True)
    ]


def report_document(
    result: Any,
    breakeven: pl.DataFrame | None = None,
    *,
    title: str | None = None,
    log: str | None = None,
    recommendation: str | None = None,
) -> dict[str, Any]:
    """The JSON document behind the page (see the module docstring for its layout).

    `result` is a `ReplayResult` replayed with `keep_views=True`."""
    document = _Document(result.session)
    document.add(result.records)
    return document.build(result.summary, result.notes, breakeven, title=title, log=log,
                          recommendation=recommendation)


def _json_for_script(value: Any) -> str:
    """JSON safe inside a <script> element (no `</script>`, no `<!--`)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _asset(name: str) -> str:
    return resources.files("replay.report").joinpath("assets", name).read_text(encoding="utf-8")


def render_html(document: dict[str, Any]) -> str:
    """The report page: template + styles + Vega runtime + chart specs + data, all inline."""
    from replay.report._charts import vega_runtime, vega_spec

    n = len(document["requests"])
    specs = {metric: vega_spec(metric, document["strategies"], n) for metric in METRICS}
    page = _asset("report.html")
    escape = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}
    title = "".join(escape.get(c, c) for c in printable(document["title"]))
    parts = {
        "{{title}}": title,
        "{{style}}": _asset("report.css"),
        "{{data}}": _json_for_script(document),
        "{{specs}}": _json_for_script(specs),
        "{{vega}}": vega_runtime().replace("</script", "<\\/script"),
        "{{app}}": _asset("report.js"),
    }
    # One pass over the template: a value (log text in the data, the title) may itself hold a
    # placeholder's name, which must stay text.
    pieces = re.split(r"(\{\{(?:title|style|data|specs|vega|app)\}\})", page)
    missing = set(parts) - set(pieces[1::2])
    if missing:
        raise RuntimeError(f"report template lacks {', '.join(sorted(missing))}")
    return "".join(parts.get(piece, piece) if n % 2 else piece for n, piece in enumerate(pieces))


def build_report(
    log: str | Path | Any,
    strategies: str | Sequence[str] = "all",
    *,
    provider: str | None = None,
    model: str | None = None,
    client: str | None = None,
    cache_rules: str | Path | None = None,
    prices: dict | None = None,
    ttl: str | None = None,
    context_window: int | None = None,
    strict: bool = False,
    breakeven: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
    horizon: int | None = None,
    workers: int = 1,
) -> dict[str, Any]:
    """Replay `log` (views kept; with break-even unless `breakeven=False`) and build the
    report's document. Pass it to `render_html` for the page. The document takes each
    strategy's records as they come and drops them. `workers` (> 1): the strategies' break-even
    is analysed on that many processes, and each makes the page's part of its strategies from
    their records (`document_part`), which the document merges in order."""
    from replay._api import (
        ReplayResult,
        _config,
        _notes,
        _session_with_requests,
        _several,
        recommendation,
        recommendation_line,
    )
    from replay.breakeven import breakeven_session
    from replay.breakeven._frame import breakeven_frame
    from replay.engine._parallel import breakeven_parts
    from replay.engine._replay import iter_replay
    from replay.log import Session

    session = _session_with_requests(log, strict)
    config = _config(provider, model, client, cache_rules, None, prices, ttl, context_window)
    config.keep_views = True
    config.keep_blocks = True  # the navigator reads each request's per-block token counts
    config.progress = progress
    document = _Document(session)
    rows: list[Any] = []
    if breakeven and _several(workers):
        # Each worker makes the page's part of the strategies it runs, from their records.
        for part in breakeven_parts(session, strategies, config, workers, horizon,
                                    with_records=document_part):
            rows.extend(part.breakeven)
            document.merge(part.made, part.tables)
    elif breakeven:
        # Each strategy's records go to the document as its break-even is done, then are dropped.
        rows, _ = breakeven_session(session, strategies, config, horizon=horizon, tables=document)
    else:
        for _named, records in iter_replay(session, strategies, config):
            document.add(records)
            del records  # not held while the next strategy runs
    frame = breakeven_frame(rows) if breakeven else None
    tables = document.tables
    result = ReplayResult(session, [], notes=_notes(session, tables, config),
                          tables=tables)
    line = recommendation_line(recommendation(result.summary), result.summary)
    return document.build(result.summary, result.notes, frame,
                          log=str(log) if not isinstance(log, Session) else None,
                          recommendation=line)


def html_report(log: str | Path | Any, strategies: str | Sequence[str] = "all", **options) -> str:
    """The whole report page for `log` as one HTML string (see `build_report` for options)."""
    return render_html(build_report(log, strategies, **options))


def _utc(ts: datetime) -> str:
    return ts.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _span(session: Any) -> list[str]:
    """Earliest and latest timestamp of the log's events (its header's when it has none): not
    the first and last in file order, which a clock set back (or lines merged out of order)
    made a span that ends before it starts."""
    times = [e.ts for e in session.events] or [session.header.ts]
    return [_utc(min(times)), _utc(max(times))]
