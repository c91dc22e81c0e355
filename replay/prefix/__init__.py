"""First-mismatch position of each prompt against the previous one."""

from replay.prefix._diff import (
    PrefixDiff,
    common_block_tokens,
    materialize_tokens,
    naive_first_mismatch,
    prefix_diff,
    remembered_block_pairs,
)

__all__ = [
    "PrefixDiff",
    "common_block_tokens",
    "materialize_tokens",
    "naive_first_mismatch",
    "prefix_diff",
    "remembered_block_pairs",
]
