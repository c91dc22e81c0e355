"""Machine-readable output: JSON, CSV and Parquet, deterministic and written atomically."""

from __future__ import annotations

import io
import json
import re
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
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def to_json(document: dict[str, Any]) -> str:
    text = json.dumps(_plain(document), indent=2, ensure_ascii=False)
    return _DECIMAL_TOKEN.sub(r"\1", text) + "\n"


def frame_rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    return frame.to_dicts()


def to_csv(frame: pl.DataFrame) -> str:
    return _stringify_times(_stringify_money(frame)).write_csv()


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


def write_output(text_or_bytes: str | bytes, path: str | Path | None) -> None:
    """Write to `path` atomically, or to standard output when no path is given or it is the
    string `-` (a `Path("-")`, as `-o ./-` gives, is a file named `-`)."""
    if path is None or path == "-":
        import sys

        if isinstance(text_or_bytes, bytes):
            sys.stdout.buffer.write(text_or_bytes)
            sys.stdout.buffer.flush()
        else:
            sys.stdout.write(text_or_bytes)
        return
    write_atomic(path, text_or_bytes)
