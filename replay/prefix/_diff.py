"""Prefix diff: where does a prompt first differ from the previous prompt of its thread?

Compare block ids (one integer per block) to find the first differing block, then compare tokens
only inside that pair of blocks. The result is the first mismatching token position, the view
message it belongs to, and what kind of block it is (tools / system / message N / tail).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from replay.render import BlockTable, RenderedRequest, first_difference


@dataclass(frozen=True)
class PrefixDiff:
    """How a request's prompt relates to the previous one of its thread."""

    first_mismatch_token: int
    """Tokens the two prompts share from the start (= the old prompt's length when the new one
    extends it: the first mismatch is never inside the old prompt then)."""
    first_mismatch_block: int | None
    """Index of the first differing block, None when one prompt is a prefix of the other."""
    message_index: int | None
    """View item of the first differing block (None for tools/system, or no difference)."""
    where: str
    """`tools`, `system`, `message N`, `tail` (appended only) or `first` (no previous request)."""
    is_break: bool
    """True when the new prompt rewrote part of the old one (the old prompt is not its prefix).
    Judged in blocks: a provider's template closes each block, so a block that grew rewrote the
    old one even where its old tokens are a prefix of the new (`first_mismatch_token` may then
    reach the old prompt's length)."""


_PAIRS: ContextVar[dict[int, tuple[BlockTable, dict[int, int]]] | None] = ContextVar(
    "block_pairs", default=None
)
"""While `remembered_block_pairs` runs: per table (by id, the table kept alive with its memo so
the id is not reused), `a << 32 | b` for a pair of block ids → the tokens they share."""


@contextmanager
def remembered_block_pairs() -> Iterator[None]:
    """Within it, `common_block_tokens` tokenizes each pair of blocks once, not at every
    comparison: break-even replays the rest of the log once per rewrite, and each replay
    compares the same pairs (an output and its truncated version) again. Block ids name fixed
    contents of one table, so an answer holds as long as the table does. Scoped, not global:
    the memo grows with the pairs compared, and the tables it keeps alive are let go after."""
    token = _PAIRS.set({})
    try:
        yield
    finally:
        _PAIRS.reset(token)


def common_block_tokens(table: BlockTable, a: int, b: int) -> int:
    """Tokens two differing blocks share from their start (framing included)."""
    memos = _PAIRS.get()
    if memos is None:
        return _common_block_tokens(table, a, b)
    memo = memos.get(id(table))
    if memo is None:
        memo = memos[id(table)] = (table, {})
    key = a << 32 | b
    hit = memo[1].get(key)
    if hit is None:
        hit = memo[1][key] = _common_block_tokens(table, a, b)
    return hit


def _common_block_tokens(table: BlockTable, a: int, b: int) -> int:
    overhead = table.overheads[a]
    # Framing tokens encode the block kind: blocks with different framing differ at once.
    if overhead != table.overheads[b] or (overhead and table.kinds[a] != table.kinds[b]):
        return 0
    raw = table.counter.shared_tokens(table.text_of(a), table.text_of(b))
    return overhead + table.counter.scale_position(raw)


def prefix_diff(
    previous: RenderedRequest | None, current: RenderedRequest, table: BlockTable
) -> PrefixDiff:
    if previous is None:
        return PrefixDiff(0, None, None, "first", False)
    if previous._lineage is not None and previous._lineage is current._lineage:
        # Both are views of one thread's write-once block columns: one extends the other.
        block = None
    else:
        block = first_difference(previous.block_ids, current.block_ids)
    if block is None:
        shared = min(previous.total, current.total)
        truncated = len(current.block_ids) < len(previous.block_ids)
        where = "tail"
        msg = None
        if truncated and len(current.item_index):
            last = int(current.item_index[-1])
            msg = last if last >= 0 else None  # cut back to the head: it kept no message
        return PrefixDiff(shared, None, msg, where, truncated)
    shared = current.tokens_before(block) + common_block_tokens(
        table, int(previous.block_ids[block]), int(current.block_ids[block])
    )
    kind = current.kinds[block]
    owner = int(current.item_index[block])
    where = kind if kind in ("tool", "system") else f"message {owner}"
    if where == "tool":
        where = "tools"
    return PrefixDiff(shared, block, owner if owner >= 0 else None, where, True)


def naive_first_mismatch(previous_tokens: np.ndarray, current_tokens: np.ndarray) -> int:
    """Reference: compare two fully materialized token sequences token by token."""
    n = min(len(previous_tokens), len(current_tokens))
    for i in range(n):
        if previous_tokens[i] != current_tokens[i]:
            return i
    return n


_KINDS = ("tool", "system", "user", "summary", "text", "thinking", "tool_call", "tool_result")
_OPAQUE = -(1 << 20)
"""Below this: tokens of a block whose text the log does not hold (one id per block content)."""
_BOUNDARY = -(1 << 40)
"""Below this: the first element of a block, tagged with every block before it."""


def materialize_tokens(request: RenderedRequest, table: BlockTable) -> np.ndarray:
    """The whole prompt as one sequence with one element per token, re-tokenizing every block
    with no memo: what a naive implementation would do per request. Only valid for families with
    calibration factor 1.0.

    Framing tokens are sentinels naming the block's kind and whether it opens a message; a block
    of fixed size whose text was not logged contributes opaque ids of its content. A real request
    has delimiters between content blocks even where `replay` counts no framing tokens, so the
    first element of each block is tagged with the contents of all blocks before it: two prompts
    never match across the boundary of blocks that differ (an empty block is not "no block").
    """
    encoding = table.counter._encoding
    parts = []
    before = 0  # identity of the blocks so far
    for block_id in request.block_ids.tolist():
        info = table.blocks[block_id]
        code = -1 - (2 * _KINDS.index(info.kind) + int(info.starts_message))
        text = table.text_of(block_id)
        body = encoding.encode_ordinary(text)
        hidden = max(0, info.tokens - info.overhead - len(body))
        content = hash((info.kind, info.starts_message, info.tokens, text))
        elements = np.asarray(
            [code] * info.overhead + body + [_OPAQUE - (content & ((1 << 39) - 1))] * hidden,
            dtype=np.int64,
        )
        if len(elements):
            elements[0] = _BOUNDARY - (hash((before, int(elements[0]))) & ((1 << 61) - 1))
        before = hash((before, content))
        parts.append(elements)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
