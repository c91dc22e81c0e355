"""Machine-readable output: JSON, CSV and Parquet, deterministic and written atomically."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl

from replay._atomic import write_atomic

_DECIMAL_MARK = "\u0000decimal:"
_DECIMAL_TOKEN = re.compile(r'"\\u0000decimal:(-?[0-9.]+)"')


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        # Money stays exact: written as a JSON number with every digit, never through float.
        return _DECIMAL_MARK + format(value.normalize() if value else Decimal(0), "f")
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | FrameRows):
        return [_plain(v) for v in value]
    return value


def to_json(document: dict[str, Any]) -> str:
    """`document` as indented JSON (money as exact numbers, times in UTC with `Z`)."""
    return "".join(json_pieces(document))


def json_pieces(document: dict[str, Any]) -> Iterator[str]:
    """`to_json`'s text, in pieces to write as they come: the rows of a `FrameRows` value are
    made and encoded a batch at a time, so a long table (a `--per-turn` one) is never held as
    Python objects or as one string. The same bytes as one `json.dumps` of the whole."""
    if not isinstance(document, dict) or not any(
        isinstance(v, FrameRows) for v in document.values()
    ):
        yield _encoded(document) + "\n"  # (a list or a number, as `to_json` always took)
        return
    for n, (key, value) in enumerate(document.items()):
        yield ("{\n  " if n == 0 else ",\n  ") + json.dumps(key, ensure_ascii=False) + ": "
        if isinstance(value, FrameRows):
            yield from _row_pieces(value)
        else:
            yield _indented(_encoded(value), 1)
    yield "\n}\n"


def _row_pieces(rows: FrameRows) -> Iterator[str]:
    """A list at the document's first level, as `json.dumps(..., indent=2)` writes it there."""
    empty = True
    for row in rows:
        yield ("[\n    " if empty else ",\n    ") + _indented(_encoded(row), 2)
        empty = False
    yield "[]" if empty else "\n  ]"


def _encoded(value: Any) -> str:
    text = json.dumps(_plain(value), indent=2, ensure_ascii=False)
    return _DECIMAL_TOKEN.sub(r"\1", text)


def _indented(text: str, level: int) -> str:
    """`text` (JSON made at level 0) as it reads `level` levels deeper: a JSON text has a raw
    line break only between its tokens (one in a string is escaped), so each line moves."""
    return text.replace("\n", "\n" + "  " * level)


class FrameRows:
    """A frame's rows as JSON objects (`frame_rows`), made a batch at a time when iterated:
    `json_pieces` writes them without holding them all."""

    BATCH = 2048

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __len__(self) -> int:
        return self.frame.height

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for start in range(0, self.frame.height, self.BATCH):
            yield from self.frame.slice(start, self.BATCH).to_dicts()


def frame_rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    return frame.to_dicts()


def lazy_rows(frame: pl.DataFrame) -> FrameRows:
    """`frame_rows` for a table that can be long: made as the JSON is written."""
    return FrameRows(frame)


def to_csv(frame: pl.DataFrame) -> str:
    """`frame` as CSV (money with every digit, times in UTC with `Z`, as the JSON has them)."""
    return "".join(csv_pieces(frame))


def csv_pieces(frame: pl.DataFrame) -> Iterator[str]:
    """`to_csv`'s text in pieces to write as they come, `FrameRows.BATCH` rows at a time: a
    long table (a `--per-turn` one) is never held converted or as one string. Each value is
    written on its own, so the pieces join to the whole's bytes."""
    step = FrameRows.BATCH
    for start in range(0, max(frame.height, 1), step):  # (an empty frame: its header)
        part = _stringify_times(_stringify_money(frame.slice(start, step)))
        yield part.write_csv(include_header=start == 0)


def to_parquet_bytes(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer, statistics=False)
    return buffer.getvalue()


def _stringify_money(frame: pl.DataFrame) -> pl.DataFrame:
    casts = [
        pl.col(name).map_elements(
            lambda v: format(v.normalize() if v else Decimal(0), "f"), return_dtype=pl.Utf8
        )
        for name, dtype in frame.schema.items()
        if isinstance(dtype, pl.Decimal)
    ]
    return frame.with_columns(casts) if casts else frame


def _stringify_times(frame: pl.DataFrame) -> pl.DataFrame:
    """Times as the JSON writes them (`2026-11-01T10:00:00Z`), not polars' `+0000` form."""
    casts = [
        pl.col(name).map_elements(_plain, return_dtype=pl.Utf8)
        for name, dtype in frame.schema.items()
        if isinstance(dtype, pl.Datetime)
    ]
    return frame.with_columns(casts) if casts else frame


def write_output(text_or_bytes: str | bytes | Iterable[str], path: str | Path | None) -> None:
    """Write to `path` atomically, or to standard output when no path is given or it is the
    string `-` (a `Path("-")`, as `-o ./-` gives, is a file named `-`). Text may come in
    pieces (`json_pieces`, `csv_pieces`), written as they come."""
    if path is None or path == "-":
        import sys

        if isinstance(text_or_bytes, bytes):
            sys.stdout.buffer.write(text_or_bytes)
            sys.stdout.buffer.flush()
        elif isinstance(text_or_bytes, str):
            sys.stdout.write(text_or_bytes)
        else:
            for piece in text_or_bytes:
                sys.stdout.write(piece)
        return
    write_atomic(path, text_or_bytes)
