"""Counts in words, for every message and label: `1 result`, `3 results` (no `result(s)`)."""

from __future__ import annotations


def counted(n: int, word: str, plural: str | None = None) -> str:
    """`1 file`, `2 files`, `1 strategy`, `3 strategies` (`plural`: when not `word` + s)."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"
