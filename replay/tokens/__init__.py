"""Offline tiktoken counting per model family."""

from replay.tokens._counter import (
    TOKENIZERS_ENV,
    TokenCounter,
    TokenizerFamily,
    counter_for,
    family_for,
    family_named,
    tokenizer_rows,
    use_tokenizers,
)
from replay.tokens._encodings import get_encoding

__all__ = [
    "TOKENIZERS_ENV",
    "TokenCounter",
    "TokenizerFamily",
    "counter_for",
    "family_for",
    "family_named",
    "get_encoding",
    "tokenizer_rows",
    "use_tokenizers",
]
