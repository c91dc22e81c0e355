"""A rendered request: the prompt as an ordered list of content blocks with token counts.

Order is the provider's prefix order: tool definitions, then the system prompt, then the messages.
Each distinct block content is interned once in a `BlockTable` (one id per content digest) and
tokenized once; a request is just arrays of block ids and token counts, so comparing two prompts
is comparing two integer arrays.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice
from typing import Any, TypeVar, overload

import numpy as np

from replay.tokens import TokenCounter, text_digest, utf8_parts

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

KIND_NAMES = (TOOL, SYSTEM, USER, SUMMARY, TEXT, THINKING, TOOL_CALL, TOOL_RESULT)
SUMMARY_KIND = {"user": SUMMARY, "assistant": TEXT}
"""A summary's block kind by the role of its message: one sent as the assistant's is that
turn's text (no user turn for a breakpoint or a cache check to end at)."""
KIND_CODES = {kind: code for code, kind in enumerate(KIND_NAMES)}
"""Block kind → small integer code (a request's kinds as a numpy array: `kind_codes`)."""
HEAD_CODES = (KIND_CODES[TOOL], KIND_CODES[SYSTEM])
TURN_CODES = (KIND_CODES[USER], KIND_CODES[SUMMARY])
USER_ROLE_CODES = (KIND_CODES[USER], KIND_CODES[TOOL_RESULT], KIND_CODES[SUMMARY])
RUN_CODES = (KIND_CODES[TOOL_CALL], KIND_CODES[TOOL_RESULT])
"""Kinds whose consecutive blocks share one lookback position."""
THINKING_CODE = KIND_CODES[THINKING]
_KIND_NAME_ARRAY = np.array(KIND_NAMES, dtype=object)


def kind_code_set(codes: Iterable[int]) -> np.ndarray:
    """Membership of each block kind code in `codes`, read with one gather (`table[codes]`):
    `np.isin` took 12 µs a call on 1,000 codes (1.4 µs so), and views are built per request."""
    table = np.zeros(len(KIND_NAMES), dtype=bool)
    table[list(codes)] = True
    return table


IS_RUN = kind_code_set(RUN_CODES)
STARTS_POSITION = ~(np.eye(len(KIND_NAMES), dtype=bool) & IS_RUN)
"""`[a, b]`: whether a block of kind code b after one of a starts a lookback position (a run of
tool calls, or of tool results, is one position): one gather for a few blocks, where deriving
it with comparisons costs ~8 µs in numpy calls however few they are."""


def positions_of(codes: np.ndarray) -> np.ndarray:
    """Lookback position of each block of kind codes `codes`, the first at 0."""
    continues = np.zeros(len(codes), dtype=bool)
    continues[1:] = (codes[1:] == codes[:-1]) & IS_RUN[codes[1:]]
    return np.cumsum(~continues, dtype=np.int64) - 1


def positions_after(codes: np.ndarray, previous: int, out: np.ndarray) -> None:
    """Lookback positions of the blocks of kind codes `codes[1:]` into `out`, the block of
    `codes[0]` being at position `previous`: a run may go on across it."""
    STARTS_POSITION[codes[:-1], codes[1:]].cumsum(out=out)
    out += previous

_T = TypeVar("_T")


class ListPrefix(Sequence[_T]):
    """A read-only view of the first `n` elements of a list that only ever grows by appending
    (the renderer's per-thread columns): consecutive requests of a thread share one list
    instead of each holding a copy. Compares equal to a list with the same elements."""

    __slots__ = ("_items", "_n")

    def __init__(self, items: list[_T], n: int) -> None:
        self._items = items
        self._n = n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> _T: ...
    @overload
    def __getitem__(self, index: slice) -> list[_T]: ...
    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return self._items[: self._n][index]
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError("ListPrefix index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[_T]:
        return islice(self._items, self._n)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ListPrefix):
            other = other._items[: other._n]
        if isinstance(other, list | tuple):
            return len(other) == self._n and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compares like a list

    def __repr__(self) -> str:
        return repr(self._items[: self._n])

    def __reduce__(self) -> tuple:
        # Pickle only the visible elements, as a plain list.
        return list, (self._items[: self._n],)


class _ArrayView(Sequence[Any]):
    """A 1-d array seen as a read-only sequence (it compares equal to a list of the same
    elements; slices are lists): what a subclass's elements are is `_list`'s and `_one`'s."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def _list(self, part: np.ndarray) -> list[Any]:
        raise NotImplementedError

    def _one(self, value: Any) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return self._list(self.array[index])
        return self._one(self.array[index])

    def __iter__(self) -> Iterator[Any]:
        return iter(self._list(self.array))

    def __eq__(self, other: object) -> bool:
        if type(other) is type(self):
            return bool(np.array_equal(self.array, other.array))  # type: ignore[attr-defined]
        if isinstance(other, list | tuple):
            return self._list(self.array) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compares like a list

    def __repr__(self) -> str:
        return repr(self._list(self.array))

    def __reduce__(self) -> tuple:
        return list, (self._list(self.array),)


class KindNames(_ArrayView):
    """Block kind codes seen as their kind names: a stripped prompt view names its kinds
    without making a list of them per request, when its simulator only looks at a few."""

    __slots__ = ()

    def _list(self, part: np.ndarray) -> list[str]:
        return _KIND_NAME_ARRAY[part].tolist()

    def _one(self, value: Any) -> str:
        return KIND_NAMES[value]


class IntsView(_ArrayView):
    """An integer array seen as Python ints. The renderer's prefix keys: a view of a column
    shared by a thread's requests, copied as one block of memory when a thread diverges."""

    __slots__ = ()

    def _list(self, part: np.ndarray) -> list[int]:
        return part.tolist()

    def _one(self, value: Any) -> int:
        return int(value)


@dataclass(frozen=True, slots=True)
class KindIndex:
    """Where a request's blocks of some kinds are, found without walking its blocks (the
    renderer keeps these incrementally; `of` computes them for a request built elsewhere)."""

    codes: np.ndarray
    """`KIND_CODES` of each block."""
    head_end: int
    """Last block of the leading run of tool definitions and system prompt (-1: none)."""
    last_turn: int
    """Last user or summary block: the last non-tool_result user turn (-1: none)."""
    last_user_role: int
    """Last block of a user-role message: user, tool_result or summary (-1: none)."""
    last_non_thinking: int
    """Last block that is not a thinking block (-1: none)."""
    first_thinking: int
    """First thinking block (-1: none)."""

    @classmethod
    def of(cls, kinds: Sequence[str]) -> KindIndex:
        codes = np.fromiter((KIND_CODES[k] for k in kinds), dtype=np.int8, count=len(kinds))

        def last(mask: np.ndarray) -> int:
            hits = np.flatnonzero(mask)
            return int(hits[-1]) if len(hits) else -1

        not_head = np.flatnonzero(~np.isin(codes, HEAD_CODES))
        thinking = np.flatnonzero(codes == THINKING_CODE)
        return cls(
            codes=codes,
            head_end=int(not_head[0]) - 1 if len(not_head) else len(codes) - 1,
            last_turn=last(np.isin(codes, TURN_CODES)),
            last_user_role=last(np.isin(codes, USER_ROLE_CODES)),
            last_non_thinking=last(codes != THINKING_CODE),
            first_thinking=int(thinking[0]) if len(thinking) else -1,
        )


@dataclass(frozen=True, slots=True)
class BlockInfo:
    """One distinct block content."""

    kind: str
    text: str | None
    """The content; None once packed (`BlockTable.pack`): read it with `BlockTable.text_of`."""
    starts_message: bool
    tokens: int
    """Provider-scale token count, framing included."""
    overhead: int
    """Framing tokens (role markers, tool-call syntax) counted before the text."""
    sized_only: bool = False
    """Known only by its size (`fixed_tokens`): unlogged thinking, or context the log does not
    hold that the engine fitted on recorded usage. A user block of this kind is not a user turn."""


def chain_keys(model: str, key: int | None, ids: list[int]) -> list[int]:
    """Chained prefix keys of the blocks `ids` (a key is the hash of the previous key and the
    block id), after the block whose key is `key` (None: they open the prompt)."""
    if key is None:
        key = zlib.crc32(model.encode())
    keys = []
    for block_id in ids:
        key = hash((key, block_id))
        keys.append(key)
    return keys


PACK_MIN_CHARS = 512
"""Shorter contents are not worth compressing (`BlockTable.pack`). Small transcripts add up:
`goose-tool-pair-summarize` makes one summarizer call per tool pair, each sending one tool
output cut to 2,000 characters, ~3,000 calls at 2,000 requests (0.26× the log's size held as
text until the strategy ends, ~2× smaller packed; ~40 µs each)."""

PACK_LEVEL = 6
"""zlib level of `BlockTable.pack`: a summarizer transcript (~110k characters of tool results
and messages) packs ~7× smaller in ~1.4 ms, against ~5.3× in ~0.5 ms at level 1; a strategy
that summarizes every request holds dozens of them (`openhands-llm-attention-100`: 48, 0.22×
the log's size at level 1)."""


PACK_DICT_BYTES = 1 << 15
"""Bytes of the first contents a table packs that it keeps as the zlib dictionary of the next
ones (zlib's window): the small transcripts of `goose-tool-pair-summarize` (one tool output
each) pack ~2× smaller again with the vocabulary of those before them (~130 µs a pack instead
of ~40 µs)."""


STARTS_MESSAGE, SIZED_ONLY = 1, 2
"""Bits of `BlockTable.flags`."""


class BlockInfos:
    """`BlockTable.blocks`: the table's columns read (and written) as one `BlockInfo` per
    block id, made on demand. Code on hot paths reads the columns instead."""

    __slots__ = ("_table",)

    def __init__(self, table: BlockTable) -> None:
        self._table = table

    def __len__(self) -> int:
        return len(self._table.kinds)

    def __getitem__(self, block_id: int) -> BlockInfo:
        t = self._table
        flags = t.flags[block_id]
        return BlockInfo(
            t.kinds[block_id],
            t.texts[block_id],
            bool(flags & STARTS_MESSAGE),
            t.tokens[block_id],
            t.overheads[block_id],
            bool(flags & SIZED_ONLY),
        )

    def __setitem__(self, block_id: int, info: BlockInfo) -> None:
        t = self._table
        t.kinds[block_id], t.texts[block_id] = info.kind, info.text
        t.tokens[block_id], t.overheads[block_id] = info.tokens, info.overhead
        t.flags[block_id] = _flags(info.starts_message, info.sized_only)

    def __iter__(self) -> Iterator[BlockInfo]:
        return map(self.__getitem__, range(len(self)))

    def append(self, info: BlockInfo) -> None:
        t = self._table
        t.kinds.append(info.kind)
        t.texts.append(info.text)
        t.tokens.append(info.tokens)
        t.overheads.append(info.overhead)
        t.flags.append(_flags(info.starts_message, info.sized_only))


def _flags(starts_message: bool, sized_only: bool) -> int:
    return STARTS_MESSAGE * bool(starts_message) | SIZED_ONLY * bool(sized_only)


_HEADERS: dict[tuple[str, int, object, type], bytes] = {}
"""What `_block_prefix` made, by what it is made of: made once, not once per block."""


def _block_prefix(kind: str, starts_message: bool, fixed_tokens: int | None) -> bytes:
    """What tells a block's content apart besides its text: its kind, whether it starts a
    message, and the size of a block known only by its size (two of different sizes are
    different blocks, and one known to be of size 0 is not the same text counted: that one
    counts its text's tokens)."""
    size = "" if fixed_tokens is None else fixed_tokens
    header = (kind, int(starts_message), size, type(size))  # (5.0 == 5, but not as text)
    prefix = _HEADERS.get(header)
    if prefix is None:
        if len(_HEADERS) >= 4096:  # bounded, whatever the logs
            _HEADERS.clear()
        prefix = _HEADERS[header] = f"{kind}\x00{header[1]}\x00{size}\x00".encode()
    return prefix


class _BlockIds:
    """A table's block ids by content: by prefix (`_block_prefix`) and text, and by digest
    (`text_digest` of prefix and text) for packed blocks, whose text the table no longer holds.

    Keyed by the text itself rather than by its digest: a string hashes once in its life (the
    log's texts are the same objects in every strategy's table), where a digest of it was
    computed again in each table (~2.5% of `--strategies all`); and the key is a reference to
    the text the table holds anyway, not a digest object of its own."""

    __slots__ = ("by_text", "packed")

    def __init__(self) -> None:
        self.by_text: dict[bytes, dict[str, int]] = {}
        self.packed: dict[bytes, int] = {}


class BlockTable:
    """Interns block contents: content → small integer id, with its token count computed once.

    What it knows of each block is kept in columns indexed by block id (`blocks` reads them as
    `BlockInfo`s): a strategy's table holds every distinct block it sent, ~11k at 2,000
    requests, and an object per block weighed ~0.09× the log's size."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._ids = _BlockIds()
        self.kinds: list[str] = []
        """`BlockInfo.kind` of each block (one of the kind constants, shared)."""
        self.texts: list[str | None] = []
        """`BlockInfo.text` of each block (None once packed)."""
        self.tokens = array("q")
        """`BlockInfo.tokens` of each block."""
        self.overheads = array("q")
        """`BlockInfo.overhead` of each block."""
        self.flags = bytearray()
        """`BlockInfo.starts_message` (bit 0) and `sized_only` (bit 1) of each block."""
        self.blocks = BlockInfos(self)
        self._packed: dict[int, bytes] = {}
        """Compressed contents of packed blocks (`pack`): two bytes telling how much of
        `_dictionary` compressed it, then the zlib stream."""
        self._dictionary = bytearray()
        """The start of the first contents packed (UTF-8, up to `PACK_DICT_BYTES`). It only
        grows, by appending in place, so the dictionary a block was packed with is a prefix of
        it (and the views of a chain's table, which share it, see it grow)."""

    def intern(
        self, kind: str, text: str, starts_message: bool, fixed_tokens: int | None = None
    ) -> int:
        # A block of fixed size (a thinking block whose text was not logged) is only known by
        # its size: two of different sizes are different blocks.
        prefix = _block_prefix(kind, starts_message, fixed_tokens)
        ids = self._ids
        same_prefix = ids.by_text.get(prefix)
        if same_prefix is None:
            same_prefix = ids.by_text[prefix] = {}
        block_id = same_prefix.get(text)
        if block_id is None and ids.packed and len(text) >= PACK_MIN_CHARS:
            block_id = ids.packed.get(text_digest(text, prefix))
        if block_id is None:
            family = self.counter.family
            overhead = family.message_overhead if starts_message else 0
            if kind == TOOL_CALL:
                overhead += family.tool_call_overhead
            body = fixed_tokens if fixed_tokens is not None else self.counter.count(text)
            block_id = len(self.kinds)
            self.kinds.append(kind)
            self.texts.append(text)
            self.tokens.append(body + overhead)
            self.overheads.append(overhead)
            self.flags.append(_flags(starts_message, fixed_tokens is not None))
            same_prefix[text] = block_id
        return block_id

    def _id_maps(self) -> Iterable[_BlockIds]:
        """Every map of block ids the table interns in."""
        return (self._ids,)

    def _key_by_digest(self, block_id: int, text: str) -> None:
        """Find a block about to be packed by its digest from now on: a key of its text would
        keep the text alive."""
        flags = self.flags[block_id]
        body = self.tokens[block_id] - self.overheads[block_id]
        prefix = _block_prefix(
            self.kinds[block_id], bool(flags & STARTS_MESSAGE), body if flags & SIZED_ONLY else None
        )
        for ids in self._id_maps():
            same_prefix = ids.by_text.get(prefix)
            if same_prefix is not None and same_prefix.get(text) == block_id:
                del same_prefix[text]
                ids.packed[text_digest(text, prefix)] = block_id
                return

    def pack(self, block_id: int) -> str | None:
        """Keep a long block's content compressed (zlib, `PACK_LEVEL`), for
        a block unlikely to be read again: a summarizer call's transcript, which only a prefix
        diff against a cached copy of that call would read (`text_of`). Returns the text it
        stopped holding (None: short, or packed already)."""
        text = self.texts[block_id]
        if text is None or len(text) < PACK_MIN_CHARS:
            return None
        dictionary = self._dictionary
        if dictionary:
            packer = zlib.compressobj(PACK_LEVEL, zdict=bytes(dictionary))
        else:
            packer = zlib.compressobj(PACK_LEVEL)
        out = [len(dictionary).to_bytes(2, "big")]
        for data in utf8_parts(text):
            out.append(packer.compress(data))
            if len(dictionary) < PACK_DICT_BYTES:
                dictionary += data[: PACK_DICT_BYTES - len(dictionary)]
        out.append(packer.flush())
        self._packed[block_id] = b"".join(out)
        self._key_by_digest(block_id, text)
        self.texts[block_id] = None
        return text

    def text_of(self, block_id: int) -> str:
        """A block's content, unpacked if need be."""
        text = self.texts[block_id]
        if text is None:
            packed = self._packed[block_id]
            used = int.from_bytes(packed[:2], "big")
            if used:
                unpacker = zlib.decompressobj(zdict=bytes(self._dictionary[:used]))
                data = unpacker.decompress(packed[2:]) + unpacker.flush()
            else:
                data = zlib.decompress(packed[2:])
            return data.decode("utf-8", "surrogatepass")
        return text

    def __len__(self) -> int:
        return len(self.kinds)


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
    kinds: Sequence[str]
    """Kind of each block (a list, or a `ListPrefix` shared with the thread's other requests)."""
    positions: np.ndarray
    """Lookback position of each block: runs of tool_call (or tool_result) blocks share one."""
    prefix_keys: Sequence[int] = field(default_factory=list)
    """Chained hash of blocks 0..i: equal keys mean equal prefixes."""
    output_tokens: int = 0
    """Tokens the recorded response generated (the trajectory is fixed)."""
    estimated_output: bool = True
    """True when `output_tokens` is a token count of the logged response, not provider usage."""
    released: bool = False
    """True once `release_blocks()` dropped the per-block arrays (only `total` is left)."""
    _total: int = field(default=0, repr=False)
    _kind_index: KindIndex | None = field(default=None, init=False, repr=False, compare=False)
    """Set by the renderer; computed from `kinds` on first use otherwise (not an init field, so
    `dataclasses.replace` with other kinds never carries a stale one)."""
    _lineage: Any = field(default=None, init=False, repr=False, compare=False)
    """The renderer's shared columns these arrays are views of (memos keyed on a thread's
    requests, e.g. `prompt_view`'s stripped keys, hang on it); None elsewhere."""

    @property
    def kind_index(self) -> KindIndex:
        if self._kind_index is None:
            self._kind_index = KindIndex.of(self.kinds)
        return self._kind_index

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
            self._kind_index = self._lineage = None

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
