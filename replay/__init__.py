"""replay: what each context strategy would have cost on a real coding-agent run.

Public API (everything else is internal):

- `load(path)` reads a log into a `Session`;
- `replay(log, strategies)` replays it and returns a `ReplayResult` with polars frames
  (`.summary`, `.turns`);
- `whatif(log, at=N, prune=... | compact=True)` prices one edit against the run as recorded;
- `schema()` is the JSON Schema of the native log format;
- `strategies.resolve(names)` / `strategies.register(spec)` for strategy names and plug-ins.

The other commands' verbs live in their rooms (whose names they share):
`replay.breakeven.breakeven(log, strategies)`, `replay.fidelity.fidelity(log)`,
`replay.report.html_report(log)`, `replay.batch.run_batch(targets, BatchOptions(...))`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from replay._api import TRAJECTORY_NOTE, ReplayResult, load, replay, schema, whatif
    from replay._errors import LogFormatError, PluginWarning, ReplayError
    from replay.log import Session, read_log, write_log

_EXPORTS = {
    "TRAJECTORY_NOTE": "replay._api",
    "ReplayResult": "replay._api",
    "load": "replay._api",
    "replay": "replay._api",
    "schema": "replay._api",
    "whatif": "replay._api",
    "LogFormatError": "replay._errors",
    "PluginWarning": "replay._errors",
    "ReplayError": "replay._errors",
    "Session": "replay.log",
    "read_log": "replay.log",
    "write_log": "replay.log",
}
"""Where each public name lives: imported on first use, so that `replay --help` (and Ctrl-C
while it starts) does not wait for polars, pydantic and the tokenizer to load."""


_ROOMS = frozenset({"batch", "breakeven", "fidelity", "report", "strategies"})
"""The packages whose verbs the docs call as `replay.batch.run_batch(…)`,
`replay.report.html_report(…)`, `replay.strategies.register(…)`: imported on first use too, so
that `import replay` is all such a call needs."""


def __getattr__(name: str) -> Any:
    if name in _ROOMS:
        return importlib.import_module(f"replay.{name}")  # (the import sets the attribute)
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'replay' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_ROOMS})


__all__ = [
    "TRAJECTORY_NOTE",
    "LogFormatError",
    "PluginWarning",
    "ReplayError",
    "ReplayResult",
    "Session",
    "load",
    "read_log",
    "replay",
    "schema",
    "whatif",
    "write_log",
]
