"""Break-even of prunes and compactions, by the closed form and by simulation."""

from replay.breakeven._breakeven import BreakEven, breakeven_session

__all__ = ["BreakEven", "breakeven_session"]
