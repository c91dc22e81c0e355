"""Break-even of prunes and compactions, by the closed form and by simulation.

`breakeven(log, strategies)` is the verb of `replay breakeven` (one row per rewrite, a polars
DataFrame); `breakeven_session` the same on a read `Session` with an engine config."""

from typing import Any

from replay.breakeven._breakeven import BreakEven, breakeven_session

__all__ = ["BreakEven", "breakeven", "breakeven_session"]


def __getattr__(name: str) -> Any:
    if name == "breakeven":  # from the API module, which imports this package
        from replay._api import breakeven

        return breakeven
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
