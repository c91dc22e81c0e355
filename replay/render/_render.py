"""Turn a strategy's view into a `RenderedRequest`.

Each view item becomes one or more blocks (an assistant message: one per content block; a tool
result: one block, merged into the same user message as the results right before it). Rendering
is memoized per item object, so the history items a strategy passes through untouched are
rendered once for the whole replay, and a view that starts with the same item objects as the
thread's previous view reuses that view's blocks up to the first item that differs. The items
after it that the previous view also held, in the same order (a strategy rewrote a tool result in
the middle of the view, or the head changed), take their blocks from that view's columns too,
those that depend on the blocks before them (cumulative tokens, lookback positions) offset: per
request the Python work is O(new items), never re-tokenization (but for the prefix keys,
chained in Python from the first change on).

The block columns (ids, tokens, cumulative tokens, owners, lookback positions, kinds, chained
prefix keys) live in buffers shared by a thread's consecutive requests: a request that extends
the previous one appends to them in place and holds views of its length, one that diverges
copies the blocks it keeps (`_Columns`). The renderer also tracks, per request, the few block
positions the cache simulators look up (`KindIndex`), so they need not walk the blocks.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import count, islice

import numpy as np

from replay.log import ToolDef
from replay.render._request import (
    KIND_CODES,
    KIND_NAMES,
    RUN_CODES,
    SUMMARY_KIND,
    SYSTEM,
    TEXT,
    THINKING,
    THINKING_CODE,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_CODES,
    USER,
    USER_ROLE_CODES,
    BlockTable,
    IntsView,
    KindIndex,
    ListPrefix,
    RenderedRequest,
    chain_keys,
    kind_code_set,
    positions_after,
    positions_of,
)
from replay.strategies._view import (
    AssistantItem,
    Item,
    SummaryItem,
    ToolResultItem,
    UserItem,
    shared_prefix,
)
from replay.tokens import TokenCounter

_SERIALS = count(1)
"""Renderer serial numbers: an item's memo (`_blocks`) names the renderer it holds blocks of
(an `id` could be reused by a later renderer, whose table has other ids)."""

_ONE = {kind: (kind,) for kind in KIND_NAMES}
_KINDS: dict[tuple[str, ...], tuple[str, ...]] = {}
"""The kinds of an item's blocks, one tuple per distinct sequence of kinds (a handful), not one
per item memoized (`_item_blocks`)."""

HIDDEN_PREFIX_TEXT = "[hidden prompt prefix: not in the log, size estimated by the adapter]"
"""Text of the fixed-size block standing for an adapter's `hidden_prefix_tokens` estimate."""


def first_difference(a: np.ndarray, b: np.ndarray) -> int | None:
    """Index of the first differing element of two id arrays (None when one is a prefix)."""
    n = min(len(a), len(b))
    if n == 0:
        return None
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if len(diff) else None


_ARRAYS = (
    ("ids", np.int64),
    ("tokens", np.int64),
    ("cum", np.int64),
    ("owners", np.int64),
    ("positions", np.int64),
    ("codes", np.int8),
    ("keys", np.int64),
)


class _Columns:
    """Per-block columns shared by the consecutive layouts of a thread.

    Elements [0, used) are written once and never change afterwards. A layout is a `_Columns`
    and its length n <= used; its `RenderedRequest` holds numpy views [:n] and `ListPrefix`es of
    length n. The thread's next layout appends in place when the blocks it keeps are exactly
    [0, used) (nothing wrote past them since); otherwise it copies the blocks it keeps into new
    columns (copy on divergence), so the arrays of earlier requests stay as they were. Buffers
    grow by doubling into new arrays: the views of earlier requests keep the old ones alive.
    """

    __slots__ = ("ids", "tokens", "cum", "owners", "positions", "codes", "keys", "kinds",
                 "model", "used", "memo")

    def __init__(self, model: str, capacity: int) -> None:
        for name, dtype in _ARRAYS:
            setattr(self, name, np.empty(capacity, dtype=dtype))
        self.kinds: list[str] = []
        self.model = model
        """The model the prefix keys (`keys`) are chained for: they are a function of it and
        of the block ids."""
        self.used = 0
        self.memo: dict = {}
        """Memos of code that derives data from this lineage's requests (`prompt_view`),
        valid for any request (what they hold says what it was derived from): copied along
        with the blocks on divergence."""

    def capacity(self) -> int:
        return len(self.ids)

    def reserve(self, size: int) -> None:
        if size <= self.capacity():
            return
        capacity = max(size, 2 * self.capacity(), 64)
        for name, dtype in _ARRAYS:
            grown = np.empty(capacity, dtype=dtype)
            grown[: self.used] = getattr(self, name)[: self.used]
            setattr(self, name, grown)

    def copy_prefix(self, keep: int, model: str, capacity: int) -> _Columns:
        """New columns holding blocks [0, keep) of these (keys re-chained for another model)."""
        new = _Columns(model, max(capacity, keep))
        for name, _ in _ARRAYS:
            getattr(new, name)[:keep] = getattr(self, name)[:keep]
        new.kinds = self.kinds[:keep]
        # What the memos hold is a function of the blocks it was derived from, which they
        # check (`_stripped_keys`): a view rewritten in the middle reuses them up to the change.
        new.memo = dict(self.memo)
        if model != self.model:
            new.keys[:keep] = chain_keys(model, None, self.ids[:keep].tolist())
        new.used = keep
        return new


_TURN = kind_code_set(TURN_CODES)
_USER_ROLE = kind_code_set(USER_ROLE_CODES)
_NON_THINKING = kind_code_set(c for c in range(len(KIND_NAMES)) if c != THINKING_CODE)


def _last_of(
    codes: np.ndarray, upto: int, wanted: np.ndarray, known: int, start: int = 0,
    default: int = -1,
) -> int:
    """Last block in [start, upto) whose kind code is `wanted`, else `default`; `known` is the
    last one in a longer range starting at `start` (so it is the answer when it lies before
    `upto`; `upto` when not known). Searches back in growing windows: what is looked for is
    usually close."""
    if known < upto:
        return known
    high, width = upto, 16
    while high > start:
        low = max(start, high - width)
        hits = wanted[codes[low:high]].nonzero()[0]
        if len(hits):
            return low + int(hits[-1])
        high, width = low, width * 4
    return default


_LOOP_MAX = 32
"""Walked blocks up to this many derive their columns in a Python loop (a turn or a few
appended, a rewritten item: ~13 µs for 32 blocks, numpy's ~15 calls ~21 µs; even at 64), more
with numpy. Blocks copied from an earlier view take its columns, offset."""

_MIN_RUN = 4
"""Shorter runs of items an earlier view also held are walked: copying a run's blocks costs
a few numpy calls, walking an item through its memo about a microsecond."""

_SCANS = 8
"""Items of a view looked for in the previous one by a scan before it is mapped by id."""


_LAST_MARKS = (
    ("last_turn", _TURN), ("last_user_role", _USER_ROLE), ("last_non_thinking", _NON_THINKING)
)
"""The marks that are the last block of some kinds, and those kinds."""

_UNSET = -2
"""A mark the new blocks do not hold (yet): it lies in the blocks kept, if anywhere."""


@dataclass(slots=True)
class _Marks:
    """The `KindIndex` positions of a layout being extended (`_Layout`'s fields)."""

    last_turn: int
    last_user_role: int
    last_non_thinking: int
    first_thinking: int


@dataclass(slots=True)
class _Walked:
    """Blocks of items walked through the item memo."""

    ids: list[int]
    kinds: list[str]
    owners: list[int]

    def __len__(self) -> int:
        return len(self.ids)

    def write(self, cols: _Columns, at: int, marks: _Marks, block_tokens: list[int]) -> int:
        """Write the blocks at `at` with their derived columns, continuing from the block
        before (written), and update `marks`; returns where they end."""
        end = at + len(self.ids)
        if end - at <= _LOOP_MAX:
            self._loop(cols, at, marks, block_tokens)
            return end
        cols.ids[at:end] = self.ids
        cols.tokens[at:end] = [block_tokens[b] for b in self.ids]
        cols.codes[at:end] = [KIND_CODES[k] for k in self.kinds]
        cols.owners[at:end] = self.owners
        cols.kinds.extend(self.kinds)
        _derive(cols, at, end, marks)
        return end

    def _loop(self, cols: _Columns, at: int, marks: _Marks, block_tokens: list[int]) -> None:
        pos = int(cols.positions[at - 1]) if at else -1
        total = int(cols.cum[at - 1]) if at else 0
        prev_code = int(cols.codes[at - 1]) if at else -1
        tokens: list[int] = []
        cums: list[int] = []
        positions: list[int] = []
        new_codes: list[int] = []
        for i, (block_id, kind) in enumerate(zip(self.ids, self.kinds, strict=True), at):
            code = KIND_CODES[kind]
            if not (code == prev_code and code in RUN_CODES):
                pos += 1
            prev_code = code
            size = block_tokens[block_id]
            total += size
            tokens.append(size)
            cums.append(total)
            positions.append(pos)
            new_codes.append(code)
            if code in TURN_CODES:
                marks.last_turn = i
            if code in USER_ROLE_CODES:
                marks.last_user_role = i
            if code != THINKING_CODE:
                marks.last_non_thinking = i
            elif marks.first_thinking < 0:
                marks.first_thinking = i
        end = at + len(self.ids)
        cols.ids[at:end] = self.ids
        cols.tokens[at:end] = tokens
        cols.cum[at:end] = cums
        cols.owners[at:end] = self.owners
        cols.positions[at:end] = positions
        cols.codes[at:end] = new_codes
        cols.kinds.extend(self.kinds)


@dataclass(slots=True)
class _Copied:
    """Blocks [first, end) of an earlier layout, for items that now sit `shift` places
    further on."""

    source: _Layout
    first: int
    end: int
    shift: int

    def __len__(self) -> int:
        return self.end - self.first

    def write(self, cols: _Columns, at: int, marks: _Marks, block_tokens: list[int]) -> int:
        """As `_Walked.write`: the earlier layout's columns, those that depend on the blocks
        before offset by what precedes the blocks here and there (a block's tokens are those
        the earlier layout read)."""
        layout, first, end = self.source, self.first, self.end
        src = layout.cols
        stop = at + end - first
        cols.ids[at:stop] = src.ids[first:end]
        cols.tokens[at:stop] = src.tokens[first:end]
        cols.codes[at:stop] = src.codes[first:end]
        np.add(src.owners[first:end], self.shift, out=cols.owners[at:stop])
        cols.kinds.extend(src.kinds[first:end])
        total = int(cols.cum[at - 1]) if at else 0
        np.add(src.cum[first:end], total - (int(src.cum[first - 1]) if first else 0),
               out=cols.cum[at:stop])
        # Positions within the blocks are as there; the first one starts a position unless it
        # continues a run of tool calls (or results) here.
        code, prev_code = int(src.codes[first]), int(cols.codes[at - 1]) if at else -1
        pos = (int(cols.positions[at - 1]) if at else -1) + (
            0 if code == prev_code and code in RUN_CODES else 1
        )
        np.add(src.positions[first:end], pos - int(src.positions[first]),
               out=cols.positions[at:stop])
        for name, wanted in _LAST_MARKS:
            found = self._last(getattr(layout, name), wanted)
            if found >= 0:
                setattr(marks, name, at + found - first)
        if marks.first_thinking < 0:
            found = self._first_thinking()
            if found >= 0:
                marks.first_thinking = at + found - first
        return stop

    def _last(self, known: int, wanted: np.ndarray) -> int:
        """The last block in [first, end) of the source whose code is `wanted` (-1: none),
        from `known`, the source's last."""
        if known < self.first:
            return -1
        if known < self.end:
            return known
        return _last_of(self.source.cols.codes, self.end, wanted, self.end, self.first)

    def _first_thinking(self) -> int:
        """The first thinking block in [first, end) of the source (-1: none)."""
        known = self.source.first_thinking
        if known < 0 or known >= self.end:
            return -1
        if known >= self.first:
            return known
        hits = (self.source.cols.codes[self.first : self.end] == THINKING_CODE).nonzero()[0]
        return self.first + int(hits[0]) if len(hits) else -1


_Piece = _Walked | _Copied


def _derive(cols: _Columns, keep: int, end: int, marks: _Marks) -> None:
    """Cumulative tokens, lookback positions and kind marks of blocks [keep, end), whose ids,
    tokens and codes are written, continuing from the blocks before `keep`."""
    if end == keep:
        return
    cum = cols.cum[keep:end]
    cols.tokens[keep:end].cumsum(out=cum)
    if keep:
        cum += cols.cum[keep - 1]
        positions_after(cols.codes[keep - 1 : end], int(cols.positions[keep - 1]),
                        cols.positions[keep:end])
    else:
        cols.positions[:end] = positions_of(cols.codes[:end])
    codes = cols.codes
    marks.last_turn = _last_of(codes, end, _TURN, end, keep, marks.last_turn)
    marks.last_user_role = _last_of(codes, end, _USER_ROLE, end, keep, marks.last_user_role)
    marks.last_non_thinking = _last_of(
        codes, end, _NON_THINKING, end, keep, marks.last_non_thinking
    )
    if marks.first_thinking < 0:
        hits = (cols.codes[keep:end] == THINKING_CODE).nonzero()[0]
        marks.first_thinking = keep + int(hits[0]) if len(hits) else -1


def _reused_runs(last: _Layout, new: list[Item], start: int) -> list[tuple[int, int, int]]:
    """Runs (n, j, length) of `new[start:]`: `new[n:n+length]` are the very objects
    `last.items[j:j+length]`, each item after a tool result in both views or in neither (a
    tool result's blocks depend on it), at least `_MIN_RUN` long. After a rewrite in the middle
    of a view, the rest of it is one run."""
    old = last.items
    if start >= len(old) or start >= len(new):
        return []
    runs: list[tuple[int, int, int]] = []
    where: dict[int, int] | None = None
    misses = 0
    n = start
    # Asked `in` before `index`: a miss of `list.index` formats the item's repr (a whole tool
    # output) into its error message.
    searched = old[start:]
    while n < len(new):
        if where is not None:
            j = where.get(id(new[n]))
        elif new[n] in searched:
            # A few items are looked for in the old view by a scan in C (items compare by
            # identity); a view with more new items gets a map of the old one.
            j = start + searched.index(new[n])
        else:
            j, misses = None, misses + 1
            if misses == _SCANS:
                where = dict(zip(map(id, searched), range(start, len(old)), strict=True))
        if j is None:
            n += 1
            continue
        length = shared_prefix(old[j : j + len(new) - n], new[n : n + len(old) - j])
        after, tail = n + length, j + length == len(old)
        if isinstance(new[n], ToolResultItem) and _after_result(new, n) != _after_result(old, j):
            n, j, length = n + 1, j + 1, length - 1
        if length >= _MIN_RUN:
            runs.append((n, j, length))
        if tail:  # what follows the old view's last item is new (but for a repeated item)
            break
        n = max(after, n + 1)
    return runs


def _after_result(items: list[Item], n: int) -> bool:
    return n > 0 and isinstance(items[n - 1], ToolResultItem)


@dataclass(slots=True)
class _Layout:
    """A rendered view: its blocks are [0, n) of `cols`. Kept to render the thread's next view
    incrementally."""

    items: list[Item]
    cols: _Columns
    n: int
    head_end: int
    last_turn: int
    last_user_role: int
    last_non_thinking: int
    first_thinking: int

    def kind_index(self) -> KindIndex:
        return KindIndex(
            codes=self.cols.codes[: self.n],
            head_end=self.head_end,
            last_turn=self.last_turn,
            last_user_role=self.last_user_role,
            last_non_thinking=self.last_non_thinking,
            first_thinking=self.first_thinking,
        )


class Renderer:
    """Renders views for one model family; owns the block table shared by all strategies."""

    def __init__(self, counter: TokenCounter) -> None:
        self.table = BlockTable(counter)
        self._serial = next(_SERIALS)
        self._memo: weakref.WeakKeyDictionary[Item, tuple] = weakref.WeakKeyDictionary()
        """Blocks of items whose own memo (`_blocks`) another renderer holds: each item keeps
        the blocks of the first renderer that rendered it (one per strategy's run, mostly) on
        itself, which costs no weak reference and dictionary entry per item."""
        self._head: dict[tuple, tuple[list[int], list[str]]] = {}
        self._head_layouts: dict[tuple, _Layout] = {}
        self._last: dict[str, tuple[tuple, _Layout]] = {}
        """Per thread: its head's key and the last view rendered with its block arrays (the next
        view of the thread usually starts with the same item objects: only its tail is
        rendered). A new head (after a compaction, a changed system prompt) replaces the
        thread's entry, whose columns held the whole view (kept per head, they grew memory by
        a view per compaction: 4 GB on a 160 MB pi session)."""
        self._tools: dict[tuple[int, ...], tuple[ToolDef, ...]] = {}
        """The tool definitions whose ids key the memos above, kept alive: a freed session's
        tools could otherwise lend their ids to another session's, should a renderer serve
        more than one (`replay batch`'s chains now give each session its own)."""
        self.walked = 0
        """How many items of the last view rendered went through the item memo (the others
        kept or copied the blocks of an earlier view)."""
        self.walked_from = 0
        """How many leading items of the last view rendered kept blocks of an earlier view
        (the others were walked, and interned what the table did not hold yet)."""
        self._last_tools: tuple[Sequence[ToolDef] | None, tuple[int, ...]] = (None, ())
        """The last `tools` sequence rendered with and its ids (the same object request after
        request: its ids are not gathered again)."""

    def _head_blocks(
        self,
        system: str,
        tools: Sequence[ToolDef],
        hidden_tokens: int | tuple[int, ...] = 0,
        head_version: int = 0,
    ) -> tuple[list[int], list[str]]:
        key = (system, tuple(id(t) for t in tools), hidden_tokens, head_version)
        hit = self._head.get(key)
        if hit is None:
            self._tools.setdefault(key[1], tuple(tools))
            ids, kinds = [], []
            for tool in tools:
                text = json.dumps(
                    tool.model_dump(mode="json", exclude_unset=False), sort_keys=True
                )
                ids.append(self.table.intern(TOOL, text, False))
                kinds.append(TOOL)
            parts = hidden_tokens if isinstance(hidden_tokens, tuple) else (hidden_tokens,)
            # A new version of the head (e.g. a restarted harness stamping its start time into
            # the system prompt): same size, other content — the unlogged part's, else the
            # logged system prompt's.
            version = f" (version {head_version})" if head_version else ""
            if system and version and not any(p > 0 for p in parts):
                size = self.table.counter.count(system)
                ids.append(self.table.intern(SYSTEM, system + version, True, size))
                kinds.append(SYSTEM)
            elif system:
                ids.append(self.table.intern(SYSTEM, system, True))
                kinds.append(SYSTEM)
            hidden_text = HIDDEN_PREFIX_TEXT + version
            for part in parts:
                if part <= 0:
                    continue
                # Adapter hook: the part of the prompt prefix the log does not hold (system
                # prompt, tool schemas, injected context), estimated by the adapter from the
                # first request's usage (`hidden_prefix_tokens`). Known only by its size: a
                # fixed-token block right after the system prompt, part of the cacheable head
                # (several when the engine's fit shows a cache entry ending inside it).
                ids.append(self.table.intern(SYSTEM, hidden_text, False, part))
                kinds.append(SYSTEM)
            hit = (ids, kinds)
            self._head[key] = hit
        return hit

    def _item_blocks(self, item: Item, merged: bool) -> tuple[tuple[int, ...], tuple[str, ...]]:
        if not isinstance(item, ToolResultItem | AssistantItem | SummaryItem | UserItem):
            raise TypeError(f"a strategy returned {type(item).__name__}, not a view item")
        cached = self._cached(item)
        if cached is not None and cached[1] == merged:
            return cached[2], cached[3]
        t = self.table
        if isinstance(item, ToolResultItem):
            ids, kinds = (t.intern(TOOL_RESULT, item.output, not merged),), _ONE[TOOL_RESULT]
        elif isinstance(item, AssistantItem):
            id_list, kind_list = [], []
            for block in item.blocks:
                kind = {"text": TEXT, "thinking": THINKING, "tool_call": TOOL_CALL}[block.type]
                # Thinking logged only by its size (signature, redacted) counts that size.
                id_list.append(t.intern(kind, block.rendered(), not id_list, block.size_only))
                kind_list.append(kind)
            if not id_list:  # an empty assistant turn still frames a message
                id_list.append(t.intern(TEXT, "", True))
                kind_list.append(TEXT)
            kinds = tuple(kind_list)
            if len(_KINDS) >= 4096:  # bounded, whatever the logs
                _KINDS.clear()
            ids, kinds = tuple(id_list), _KINDS.setdefault(kinds, kinds)
        elif isinstance(item, SummaryItem):
            kind = SUMMARY_KIND[item.role]
            ids, kinds = (t.intern(kind, item.text, True),), _ONE[kind]
        elif isinstance(item, UserItem):
            ids, kinds = (t.intern(USER, item.text, True, item.estimated_tokens),), _ONE[USER]
        else:
            raise TypeError(f"a strategy returned {type(item).__name__}, not a view item")
        memo = (self._serial, merged, ids, kinds)
        own = item._blocks
        if own is None or own[0] == self._serial:
            object.__setattr__(item, "_blocks", memo)
        else:
            self._memo[item] = memo
        return ids, kinds

    def _cached(self, item: Item) -> tuple | None:
        """(serial, merged, ids, kinds) this renderer memoized for `item`, or None."""
        own = item._blocks
        if own is not None and own[0] == self._serial:
            return own
        return self._memo.get(item) if self._memo else None

    def pack_items(self, items: Sequence[Item], since: int, start: int = 0) -> None:
        """Compress the long contents of the blocks that `items[start:]` added to the table
        (ids from `since` on), for items unlikely to be shown again: a summarizer call's
        transcript (up to ~1 MB each), which the table and the token memo would otherwise hold
        as text until the strategy ends. Only a prefix diff against a cached copy of that call
        reads it. (`start`: the items before it were rendered before `since`, e.g. those of
        the view the call was forked from: `walked_from` after rendering them.)"""
        for item in islice(items, start, None):
            cached = self._cached(item)
            if cached is None:
                continue
            for block_id in cached[2]:
                if block_id >= since:
                    text = self.table.pack(block_id)
                    if text is not None:
                        self.table.counter.release(text)

    def forget_thread(self, thread: str) -> None:
        """Stop keeping `thread`'s last view for incremental rendering (its next view is walked
        in full, through the item memo): for a lane whose views are not worth keeping, such as
        a summarizer call's, whose last view holds its whole transcript."""
        self._last.pop(thread, None)

    def render(
        self,
        items: Sequence[Item],
        *,
        system: str,
        tools: Sequence[ToolDef],
        index: int,
        request_id: str,
        thread: str,
        ts: datetime,
        model: str,
        provider: str,
        output_tokens: int = 0,
        estimated_output: bool = True,
        hidden_tokens: int | tuple[int, ...] = 0,
        head_version: int = 0,
        hand_over: bool = False,
        fork: str | None = None,
    ) -> RenderedRequest:
        """`hand_over`: `items` is a list the caller will never change again, which the
        renderer may keep as the thread's last view instead of a copy of it. `fork`: another
        thread (same head) whose last view `items` may extend, such as the main thread's for a
        summarizer call that re-sends its view: its blocks are copied, not walked again."""
        if not (hand_over and type(items) is list):
            items = list(items)
        layout = self._layout(
            items, system, tools, thread, model, hidden_tokens, head_version, fork
        )
        cols, n = layout.cols, layout.n
        request = RenderedRequest(
            index=index,
            request_id=request_id,
            thread=thread,
            ts=ts,
            model=model,
            provider=provider,
            block_ids=cols.ids[:n],
            block_tokens=cols.tokens[:n],
            cum_tokens=cols.cum[:n],
            item_index=cols.owners[:n],
            kinds=ListPrefix(cols.kinds, n),
            positions=cols.positions[:n],
            prefix_keys=IntsView(cols.keys[:n]),
            output_tokens=output_tokens,
            estimated_output=estimated_output,
        )
        request._kind_index = layout.kind_index()
        request._lineage = cols
        return request

    def _layout(
        self,
        items: list[Item],
        system: str,
        tools: Sequence[ToolDef],
        thread: str,
        model: str,
        hidden_tokens: int | tuple[int, ...] = 0,
        head_version: int = 0,
        fork: str | None = None,
    ) -> _Layout:
        """Block columns of a view. The leading items that are the very objects of the thread's
        previous view (or of `fork`'s, when that shares more) keep their blocks; the rest is
        appended (in place when nothing else wrote past the kept blocks), walking in Python
        only the items that view did not hold (`_pieces`), so a strategy that appends, or
        rewrites a few items anywhere, costs O(new items) here, not O(history). `items` is kept
        (the caller's copy)."""
        last_tools, tool_ids = self._last_tools
        if tools is not last_tools:
            tool_ids = tuple(id(t) for t in tools)
            self._last_tools = (tools, tool_ids)
        key = (thread, system, tool_ids, hidden_tokens, head_version)
        entry = self._last.get(thread)
        last = entry[1] if entry is not None and entry[0] == key else None
        shared = shared_prefix(last.items, items) if last is not None else 0
        forked = False
        if fork is not None:
            other = self._last_of(fork, (fork, *key[1:]))
            if other is not None and len(other.items) > shared:
                other_shared = shared_prefix(other.items, items)
                if other_shared > shared:
                    last, shared, forked = other, other_shared, True
        self.walked_from = shared
        if shared:
            base = last
            # Owners are ascending (-1 for the head): the first block of item `shared`.
            keep = int(base.cols.owners[: base.n].searchsorted(shared, side="left"))
        else:
            head_ids, head_kinds = self._head_blocks(system, tools, hidden_tokens, head_version)
            base = self._head_layout(key[1:], head_ids, head_kinds, model)
            keep = len(head_ids)
        # An item's blocks do not depend on the head: after a new one (a restarted harness's
        # system prompt) the items of the thread's last view are copied, not walked.
        source = last if last is not None else entry[1] if entry is not None else None
        pieces = self._pieces(items, shared, source)
        layout = self._extend(base, keep, pieces, model, forked)
        layout.items = items
        self._last[thread] = (key, layout)
        return layout

    def _pieces(self, items: list[Item], start: int, last: _Layout | None) -> list[_Piece]:
        """The blocks of `items[start:]`: runs of items that `last` also holds, in the same
        order, take theirs from its columns (a strategy that rewrote an item in the middle
        leaves the rest of the view as it was); the others are walked."""
        runs = _reused_runs(last, items, start) if last is not None else []
        pieces: list[_Piece] = []
        walked = 0
        for n, j, length in [*runs, (len(items), 0, 0)]:
            if start < n:
                pieces.append(self._walk(items, start, n))
                walked += n - start
            if length:
                owners = last.cols.owners[: last.n]  # type: ignore[union-attr]
                first, end = owners.searchsorted((j, j + length), side="left").tolist()
                pieces.append(_Copied(last, first, end, n - j))  # type: ignore[arg-type]
            start = n + length
        self.walked = walked
        return pieces

    def _walk(self, items: list[Item], start: int, stop: int) -> _Walked:
        """The blocks of `items[start:stop]`, through the item memo."""
        ids: list[int] = []
        kinds: list[str] = []
        owners: list[int] = []
        prev_is_result = start > 0 and isinstance(items[start - 1], ToolResultItem)
        for n in range(start, stop):
            item = items[n]
            is_result = isinstance(item, ToolResultItem)
            b_ids, b_kinds = self._item_blocks(item, merged=is_result and prev_is_result)
            ids.extend(b_ids)
            kinds.extend(b_kinds)
            owners.extend([n] * len(b_ids))
            prev_is_result = is_result
        return _Walked(ids, kinds, owners)

    def _last_of(self, thread: str, key: tuple) -> _Layout | None:
        """`thread`'s last layout, if it was rendered with the head `key`."""
        entry = self._last.get(thread)
        return entry[1] if entry is not None and entry[0] == key else None

    def _extend(
        self,
        base: _Layout,
        keep: int,
        pieces: list[_Piece],
        model: str,
        copy: bool = False,
    ) -> _Layout:
        """Blocks [0, keep) of `base` followed by those of `pieces` (`copy`: in new columns
        even when `base`'s could be extended in place, e.g. another thread's)."""
        cols = base.cols
        end = keep + sum(len(p) for p in pieces)
        # The marks of the new blocks, if any (the blocks before them are searched after).
        marks = _Marks(_UNSET, _UNSET, _UNSET, base.first_thinking)
        if marks.first_thinking >= keep:
            marks.first_thinking = -1
        if copy or cols.used != keep or cols.model != model:
            # Diverging from blocks a later layout (or another thread) already extended, or
            # chained for another model: copy the kept blocks, leave the old columns as they are.
            cols = cols.copy_prefix(keep, model, end + max(64, end // 8))
        else:
            cols.reserve(end)
        at = keep
        for piece in pieces:
            at = piece.write(cols, at, marks, self.table.tokens)
        for name, wanted in _LAST_MARKS:
            if getattr(marks, name) == _UNSET:
                setattr(marks, name, _last_of(cols.codes, keep, wanted, getattr(base, name)))
        cols.keys[keep:end] = chain_keys(
            model, int(cols.keys[keep - 1]) if keep else None, cols.ids[keep:end].tolist()
        )
        cols.used = end
        return _Layout(
            items=[],
            cols=cols,
            n=end,
            head_end=base.head_end,
            last_turn=marks.last_turn,
            last_user_role=marks.last_user_role,
            last_non_thinking=marks.last_non_thinking,
            first_thinking=marks.first_thinking,
        )

    def _head_layout(
        self, key: tuple, head_ids: list[int], head_kinds: list[str], model: str
    ) -> _Layout:
        hit = self._head_layouts.get(key)
        if hit is not None:
            return hit
        if len(self._head_layouts) >= 16:
            # The thread that extends a head's columns in place grows them to a whole view:
            # a head seen long ago is rendered again rather than kept with that view.
            del self._head_layouts[next(iter(self._head_layouts))]
        empty = _Layout(
            items=[], cols=_Columns(model, 64), n=0, head_end=-1, last_turn=-1,
            last_user_role=-1, last_non_thinking=-1, first_thinking=-1,
        )
        head = _Walked(list(head_ids), list(head_kinds), [-1] * len(head_ids))
        hit = self._extend(empty, 0, [head], model)
        # Only tool definitions and the system prompt: the head is all of it.
        hit.head_end = hit.n - 1
        self._head_layouts[key] = hit
        return hit

    @staticmethod
    def _prefix_keys(request: RenderedRequest, previous: RenderedRequest | None) -> list[int]:
        # Keys are chained hashes of (previous key, block id): only blocks after the first
        # difference with the previous request are hashed again.
        ids = request.block_ids
        keep = 0
        if previous is not None and previous.model == request.model:
            first = first_difference(previous.block_ids, ids)
            keep = min(len(previous.block_ids), len(ids)) if first is None else first
        keys = list(previous.prefix_keys[:keep]) if keep else []
        return keys + chain_keys(request.model, keys[-1] if keys else None, ids[keep:].tolist())
