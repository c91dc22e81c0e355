"""Where the reviewed data files (`pricing/` at the repository root) are found at run time."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from replay._errors import ReplayError

_PACKAGE = Path(__file__).resolve().parent


@cache
def data_dir() -> Path:
    """`pricing/` of a source checkout, or the copy a wheel carries inside the package."""
    for candidate in (_PACKAGE / "_pricing_data", _PACKAGE.parent / "pricing"):
        if candidate.is_dir():
            return candidate
    raise ReplayError("replay's data folder `pricing/` is missing from this installation")


@cache
def load_json(name: str) -> Any:
    path = data_dir() / name
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ReplayError(f"{path}: cannot read replay's data file ({err})") from err
