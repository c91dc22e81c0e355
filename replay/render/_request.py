"""A rendered request: the prompt as an ordered list of content blocks with token counts.

Order is the provider's prefix order: tool definitions, then the system prompt, then the messages.
Each distinct block content is interned once in a `BlockTable` (one id per content digest) and
tokenized once; a request is just arrays of block ids and token counts, so comparing two prompts
is comparing two integer arrays.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from replay.tokens import TokenCounter

# Block kinds, in the order they can appear.
TOOL, SYSTEM, USER, SUMMARY, TEXT, THINKING, TOOL_CALL, TOOL_RESULT = (
    "tool",
    "system",
    "user",
    "summary",
    "text",
    "thinking",
    "tool_call",
    "tool_result",
)


@dataclass(frozen=True, slots=True)
class BlockInfo:
    """One distinct block content."""

    kind: str
    text: str
    starts_message: bool
    tokens: int
    """Provider-scale token count, framing included."""
    overhead: int
    """Framing tokens (role markers, tool-call syntax) counted before the text."""
    sized_only: bool = False
    """Known only by its size (`fixed_tokens`): unlogged thinking, or context the log does not
    hold that the engine fitted on recorded usage. A user block of this kind is not a user turn."""


class BlockTable:
    """Interns block contents: digest → small integer id, with its token count computed once."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._ids: dict[bytes, int] = {}
        self.blocks: list[BlockInfo] = []

    def intern(
        self, kind: str, text: str, starts_message: bool, fixed_tokens: int | None = None
    ) -> int:
        # A block of fixed size (a thinking block whose text was not logged) is only known by
        # its size: two of different sizes are different blocks.
        digest = hashlib.blake2b(
            f"{kind}\x00{int(starts_message)}\x00{fixed_tokens or ''}\x00".encode()
            + text.encode("utf-8", "surrogatepass"),
            digest_size=16,
        ).digest()
        block_id = self._ids.get(digest)
        if block_id is None:
            family = self.counter.family
            overhead = family.message_overhead if starts_message else 0
            if kind == TOOL_CALL:
                overhead += family.tool_call_overhead
            body = fixed_tokens if fixed_tokens is not None else self.counter.count(text)
            block_id = len(self.blocks)
            self.blocks.append(
                BlockInfo(
                    kind, text, starts_message, body + overhead, overhead, fixed_tokens is not None
                )
            )
            self._ids[digest] = block_id
        return block_id

    def __len__(self) -> int:
        return len(self.blocks)


@dataclass
class RenderedRequest:
    """One request as the provider would receive it, reduced to what caching needs."""

    index: int
    """Position of this request in the replayed thread (0-based)."""
    request_id: str
    thread: str
    ts: datetime
    model: str
    provider: str
    block_ids: np.ndarray
    """Interned block ids in prefix order."""
    block_tokens: np.ndarray
    """Token count of each block."""
    cum_tokens: np.ndarray
    """`cum_tokens[i]` = tokens through block i (inclusive)."""
    item_index: np.ndarray
    """View item each block came from (-1 for tool definitions and the system prompt)."""
    kinds: list[str]
    positions: np.ndarray
    """Lookback position of each block: runs of tool_call (or tool_result) blocks share one."""
    prefix_keys: list[int] = field(default_factory=list)
    """Chained hash of blocks 0..i: equal keys mean equal prefixes."""
    output_tokens: int = 0
    """Tokens the recorded response generated (the trajectory is fixed)."""
    estimated_output: bool = True
    """True when `output_tokens` is a token count of the logged response, not provider usage."""
    released: bool = False
    """True once `release_blocks()` dropped the per-block arrays (only `total` is left)."""
    _total: int = field(default=0, repr=False)

    @property
    def total(self) -> int:
        if self.released:
            return self._total
        return int(self.cum_tokens[-1]) if len(self.cum_tokens) else 0

    def release_blocks(self) -> None:
        """Drop the per-block arrays, keeping `total`: a finished request's summary numbers need
        only that, and the arrays of every request of a long replay add up to O(requests ×
        blocks) memory (`ReplayConfig.keep_blocks=False` releases them as the replay goes)."""
        if not self.released:
            self._total = self.total
            self.released = True
            # None, not empty arrays: code that still needed them fails loudly.
            self.block_ids = self.block_tokens = self.cum_tokens = None  # type: ignore[assignment]
            self.item_index = self.positions = None  # type: ignore[assignment]
            self.kinds = self.prefix_keys = None  # type: ignore[assignment]

    def tokens_before(self, block: int) -> int:
        return int(self.cum_tokens[block - 1]) if block > 0 else 0

    def message_ends(self) -> list[int]:
        """Index of the last block of each message-level item, in order."""
        ends = []
        for i in range(len(self.block_ids)):
            nxt = i + 1
            if nxt == len(self.block_ids) or self.item_index[nxt] != self.item_index[i]:
                ends.append(i)
        return ends
