"""Offline tiktoken counting per model family."""

from replay.tokens._counter import TokenCounter, TokenizerFamily, counter_for, family_for
from replay.tokens._encodings import get_encoding

__all__ = ["TokenCounter", "TokenizerFamily", "counter_for", "family_for", "get_encoding"]
