"""replay: what each context strategy would have cost on a real coding-agent run.

Public API (everything else is internal):

- `load(path)` reads a log into a `Session`;
- `replay(log, strategies)` replays it and returns a `ReplayResult` with polars frames
  (`.summary`, `.turns`);
- `schema()` is the JSON Schema of the native log format;
- `strategies.resolve(names)` / `strategies.register(spec)` for strategy names and plug-ins.
"""

from replay._api import TRAJECTORY_NOTE, ReplayResult, load, replay, schema
from replay._errors import LogFormatError, ReplayError
from replay.log import Session, read_log, write_log

__all__ = [
    "TRAJECTORY_NOTE",
    "LogFormatError",
    "ReplayError",
    "ReplayResult",
    "Session",
    "load",
    "read_log",
    "replay",
    "schema",
    "write_log",
]
