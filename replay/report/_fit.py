"""Tables that keep every number whole on a terminal narrower than them.

rich squeezes every column of a table wider than the console, numbers included (`41,…`). A
`Fitted` table is printed as rich would print it when it fits; otherwise no column is narrower
than its longest word (a header or a cell wraps between words, so a number is never cut), the
columns named in `fold` may fold their words down to a given width (strategy names, paths), and
while that is still too wide the columns named in `hide` are left out, least important first,
with one note under the table naming them (the orders are listed in docs/report.md). On a
terminal too narrow even for the columns always shown at their narrowest, each row is printed as
a record, a line per column (`header  value`), so that a number is still never cut.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from copy import copy
from typing import NamedTuple

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Column, Table
from rich.text import Text

from replay._printable import printable

NARROWEST_NAME = 10
"""What a name (a `fold` column) may fold down to when the columns always shown do not fit
otherwise."""

HINT = "a wider terminal or --format json shows them"
"""Where the hidden columns are: every command that prints a table has `--format json`."""


class Fitted:
    """`table`, fitted to the console's width when printed (see the module). `hide`: the columns
    that may be left out, least important first; `fold`: columns whose words may fold down to
    the given width (names); `wrap`: text columns kept at least that wide (or their widest cell)
    before a column is left out, so that a sentence is not squeezed to a word per line.
    Tables printed together may share `noted`, the notes printed so far: each is printed once."""

    def __init__(
        self,
        table: Table,
        hide: Sequence[str] = (),
        fold: Mapping[str, int] | None = None,
        wrap: Mapping[str, int] | None = None,
        hint: str = HINT,
        noted: set[str] | None = None,
    ) -> None:
        self.table = _printable_cells(table)
        self.hide = hide
        self.fold = dict(fold or {})
        self.wrap = dict(wrap or {})
        self.hint = hint
        self.noted = set() if noted is None else noted

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        shown, hidden = fit(self.table, console, options, self)
        yield shown
        note = (
            f"note: hidden to fit {options.max_width} columns: {', '.join(hidden)} ({self.hint})"
        )
        if hidden and note not in self.noted:
            self.noted.add(note)
            yield Text(note, style="dim")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.table)


def _printable_cells(table: Table) -> Table:
    """`table` with its title, caption and text cells `printable`: they hold file names and log
    text (model ids, tool names), which must not reach the terminal as control sequences."""
    if isinstance(table.title, str):
        table.title = printable(table.title)
    if isinstance(table.caption, str):
        table.caption = printable(table.caption)
    for column in table.columns:
        column._cells = [printable(c) if isinstance(c, str) else c for c in column._cells]
    return table


def fit(
    table: Table, console: Console, options: ConsoleOptions, spec: Fitted
) -> tuple[RenderableType, list[str]]:
    """The table to print within `options.max_width` columns (or its rows as records), and the
    headers it left out."""
    columns = table.columns
    pad = _padding(table)
    # Measured without the console's limit: a measurement is capped at the width it is given.
    wide = options.update_width(max(options.max_width, 10_000))
    spans = [_span(console, wide, c) for c in columns]
    headers = [str(c.header) for c in columns]
    if _whole(table, console, options, spans, headers, spec):
        return table, []
    floors = [_floor(h, s, spec) for h, s in zip(headers, spans, strict=True)]
    kept = list(range(len(columns)))
    hidden: list[str] = []
    for name in spec.hide:
        if sum(floors[i] + pad for i in kept) + _rules(table, len(kept)) <= options.max_width:
            break
        if name in headers and headers.index(name) in kept:
            kept.remove(headers.index(name))
            hidden.append(name)
    room = options.max_width - _rules(table, len(kept)) - pad * len(kept)
    if sum(floors[i] for i in kept) > room:
        # Names fold further before the table gives way to records.
        floors = [min(f, NARROWEST_NAME) if h in spec.fold else f
                  for f, h in zip(floors, headers, strict=True)]
    if sum(floors[i] for i in kept) > room:
        # A record has a line per column: none needs hiding there.
        return _records(table, list(range(len(columns)))), []
    widths = [spans[i].widest for i in kept]
    # A wrapped header costs one line; narrower cells cost lines on every row, and a folded
    # name is the hardest to read: headers first, then text, then names.
    words = [i for i in range(len(kept)) if headers[kept[i]] not in spec.fold]
    widths = _shrink(widths, [max(floors[i], spans[i].cells) for i in kept], room, words)
    widths = _shrink(widths, [floors[i] for i in kept], room, words)
    widths = _shrink(widths, [floors[i] for i in kept], room, range(len(kept)))
    fitted = copy(table)
    fitted.columns = [
        dataclasses.replace(columns[i], width=w, no_wrap=False, overflow="fold", _index=n)
        for n, (i, w) in enumerate(zip(kept, widths, strict=True))
    ]
    return fitted, hidden


def _records(table: Table, kept: list[int]) -> Group:
    """The table's rows as records, a line per kept column (`header  value`), a blank line
    between them: a value has the width of the terminal but its header's, and so stays whole
    on a terminal too narrow for the columns side by side (a value wider than that still
    folds rather than being cut to `…`)."""
    columns = [table.columns[i] for i in kept]
    cells = [list(c.cells) for c in columns]
    parts: list[RenderableType] = []
    if table.title:
        parts.append(Text(str(table.title), style=table.title_style or "table.title"))
    for row in range(table.row_count):
        record = Table.grid(padding=(0, 2))
        record.add_column(style="bold", overflow="fold")
        record.add_column(overflow="fold")
        for column, values in zip(columns, cells, strict=True):
            record.add_row(column.header, values[row], style=table.rows[row].style)
        parts += [Text(""), record] if parts else [record]
    if table.caption:
        parts += [Text(""), Text(str(table.caption), style=table.caption_style or "table.caption")]
    return Group(*parts)


def _whole(
    table: Table, console: Console, options: ConsoleOptions, spans: list[_Span],
    headers: list[str], spec: Fitted,
) -> bool:
    """Whether rich's own layout cuts no word: the table fits, or the columns rich narrows
    (those that wrap) keep their longest word. Such a table is printed as it always was."""
    pad, rules = _padding(table), _rules(table, len(table.columns))
    if sum(s.widest + pad for s in spans) + rules <= options.max_width:
        return True
    # rich's own layout (a private method of its Table); the widths include the padding.
    # Should a rich release drop it, every table too wide takes the fitted layout instead.
    layout = getattr(table, "_calculate_column_widths", None)
    if layout is None:
        return False
    widths = layout(console, options.update_width(options.max_width - rules))
    return all(
        w - pad >= s.word or (h in spec.fold and c.overflow == "fold")
        for w, s, h, c in zip(widths, spans, headers, table.columns, strict=True)
    )


class _Span(NamedTuple):
    """A column's widths, without padding."""

    word: int
    """Its longest word, header included."""
    widest: int
    """Its widest cell, header included."""
    cells: int
    """Its widest cell but the header."""


def _span(console: Console, options: ConsoleOptions, column: Column) -> _Span:
    header, *cells = [Measurement.get(console, options, c) for c in (column.header, *column.cells)]
    return _Span(
        max(m.minimum for m in (header, *cells)),
        max(m.maximum for m in (header, *cells)),
        max((m.maximum for m in cells), default=0),
    )


def _floor(header: str, span: _Span, spec: Fitted) -> int:
    """The narrowest the column may be: its longest word, so that no number is cut."""
    if header in spec.fold:
        return min(span.widest, spec.fold[header])
    if header in spec.wrap:
        return max(span.word, min(span.widest, spec.wrap[header]))
    return span.word


def _padding(table: Table) -> int:
    _, right, _, left = Padding.unpack(table.padding)
    return left + right


def _rules(table: Table, columns: int) -> int:
    """Width of the box: the two edges and a rule between columns."""
    if not table.box:
        return 0
    return (2 if table.show_edge else 0) + columns - 1


def _shrink(widths: list[int], floors: list[int], room: int, among: Iterable[int]) -> list[int]:
    """Narrow the widest column `among` these first, never below its floor, until the widths
    fit in `room`."""
    widths, among = list(widths), list(among)
    while sum(widths) > room:
        shrinkable = [i for i in among if widths[i] > floors[i]]
        if not shrinkable:
            break
        widths[max(shrinkable, key=lambda i: (widths[i], i))] -= 1
    return widths
