"""Token counts per model family, memoized per distinct piece of text.

Every size `replay` reports is a token count from tiktoken. Each distinct text is tokenized once
(keyed by its content digest); prompts are never re-tokenized as a whole. For providers whose
tokenizer is private (Claude, Gemini) the tiktoken count is scaled by a documented calibration
factor from `pricing/tokenizers.json`.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from dataclasses import dataclass
from functools import cache

import numpy as np

from replay._data import load_json
from replay.tokens._encodings import get_encoding


@dataclass(frozen=True)
class TokenizerFamily:
    """How one family of models is counted."""

    family: str
    encoding: str
    factor: float
    message_overhead: int
    tool_call_overhead: int
    estimated: bool
    source: str


@cache
def family_for(model: str) -> TokenizerFamily:
    """The tokenizer family of a model id (first matching pattern of `pricing/tokenizers.json`)."""
    for row in load_json("tokenizers.json")["families"]:
        if re.search(row["pattern"], model):
            return TokenizerFamily(
                family=row["family"],
                encoding=row["encoding"],
                factor=float(row["factor"]),
                message_overhead=int(row["message_overhead"]),
                tool_call_overhead=int(row["tool_call_overhead"]),
                estimated=bool(row["estimated"]),
                source=row["source"],
            )
    raise LookupError(model)  # unreachable: the data ends with a catch-all row


class TokenCounter:
    """Counts tokens for one model family; each distinct text is encoded at most once."""

    def __init__(self, model: str, *, factor: float | None = None, token_cache: int = 4096):
        self.family = family_for(model)
        self.factor = self.family.factor if factor is None else factor
        self._encoding = get_encoding(self.family.encoding)
        self._counts: dict[str, int] = {}
        self._tokens: OrderedDict[str, np.ndarray] = OrderedDict()
        self._token_cache = token_cache
        self.encode_calls = 0

    def raw_tokens(self, text: str) -> np.ndarray:
        """tiktoken ids of `text` (kept in a small LRU: only prefix diffs need ids)."""
        hit = self._tokens.get(text)
        if hit is not None:
            self._tokens.move_to_end(text)
            return hit
        self.encode_calls += 1
        ids = np.asarray(self._encoding.encode_ordinary(text), dtype=np.int64)
        self._tokens[text] = ids
        if len(self._tokens) > self._token_cache:
            self._tokens.popitem(last=False)
        return ids

    def count(self, text: str) -> int:
        """Provider-scale token count of `text` (tiktoken count × calibration factor)."""
        hit = self._counts.get(text)
        if hit is None:
            hit = self.scale(len(self.raw_tokens(text)))
            self._counts[text] = hit
        return hit

    def scale(self, raw: int) -> int:
        return raw if self.factor == 1.0 else math.ceil(raw * self.factor)

    def scale_position(self, raw: int) -> int:
        """A token offset inside a text, on the provider's scale."""
        return raw if self.factor == 1.0 else math.floor(raw * self.factor)


_COUNTERS: dict[str, TokenCounter] = {}


def counter_for(model: str) -> TokenCounter:
    """One shared counter per model family, so the memo is shared across strategies."""
    family = family_for(model).family
    if family not in _COUNTERS:
        _COUNTERS[family] = TokenCounter(model)
    return _COUNTERS[family]
