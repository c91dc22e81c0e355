"""Turn a strategy's view into a `RenderedRequest`.

Each view item becomes one or more blocks (an assistant message: one per content block; a tool
result: one block, merged into the same user message as the results right before it). Rendering
is memoized per item object, so the history items a strategy passes through untouched are
rendered once for the whole replay, and a view that starts with the same item objects as the
thread's previous view reuses that view's block arrays up to the first item that differs: per
request the Python work is O(new items), plus array copies, never re-tokenization. Chained
prefix keys are reused from the previous request up to the first block that differs.
"""

from __future__ import annotations

import json
import operator
import weakref
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from replay.log import ToolDef
from replay.render._request import (
    SUMMARY,
    SYSTEM,
    TEXT,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    BlockTable,
    RenderedRequest,
)
from replay.strategies._view import AssistantItem, Item, SummaryItem, ToolResultItem, UserItem
from replay.tokens import TokenCounter

_RUN_KINDS = (TOOL_CALL, TOOL_RESULT)

HIDDEN_PREFIX_TEXT = "[hidden prompt prefix: not in the log, size estimated by the adapter]"
"""Text of the fixed-size block standing for an adapter's `hidden_prefix_tokens` estimate."""


def first_difference(a: np.ndarray, b: np.ndarray) -> int | None:
    """Index of the first differing element of two id arrays (None when one is a prefix)."""
    n = min(len(a), len(b))
    if n == 0:
        return None
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if len(diff) else None


@dataclass(slots=True)
class _Layout:
    """A rendered view's block arrays, kept to render the thread's next view incrementally."""

    items: list[Item]
    item_end: list[int]
    """`item_end[n]` = index just past the last block of item n."""
    ids: np.ndarray
    tokens: np.ndarray
    cum: np.ndarray
    owners: np.ndarray
    kinds: list[str]
    positions: np.ndarray


class Renderer:
    """Renders views for one model family; owns the block table shared by all strategies."""

    def __init__(self, counter: TokenCounter) -> None:
        self.table = BlockTable(counter)
        self._memo: weakref.WeakKeyDictionary[Item, tuple] = weakref.WeakKeyDictionary()
        self._head: dict[tuple, tuple[list[int], list[str]]] = {}
        self._head_layouts: dict[tuple, _Layout] = {}
        self._last: dict[tuple, _Layout] = {}
        """Per thread and head: the last view rendered and its block arrays (the next view of
        the thread usually starts with the same item objects: only its tail is rendered)."""

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
            ids, kinds = [], []
            for tool in tools:
                text = json.dumps(
                    tool.model_dump(mode="json", exclude_unset=False), sort_keys=True
                )
                ids.append(self.table.intern(TOOL, text, False))
                kinds.append(TOOL)
            if system:
                ids.append(self.table.intern(SYSTEM, system, True))
                kinds.append(SYSTEM)
            parts = hidden_tokens if isinstance(hidden_tokens, tuple) else (hidden_tokens,)
            # A new version of the unlogged head (e.g. a restarted harness stamping its start
            # time into the system prompt): same size, other content.
            version = f" (version {head_version})" if head_version else ""
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
        cached = self._memo.get(item)
        if cached is not None and cached[0] == merged:
            return cached[1], cached[2]
        t = self.table
        if isinstance(item, ToolResultItem):
            ids, kinds = (t.intern(TOOL_RESULT, item.output, not merged),), (TOOL_RESULT,)
        elif isinstance(item, AssistantItem):
            id_list, kind_list = [], []
            for block in item.blocks:
                kind = {"text": TEXT, "thinking": THINKING, "tool_call": TOOL_CALL}[block.type]
                # Thinking logged only by its size (signature, redacted) counts that size.
                unlogged = block.type == "thinking" and not block.text
                fixed = block.estimated_tokens if unlogged else None
                id_list.append(t.intern(kind, block.rendered(), not id_list, fixed))
                kind_list.append(kind)
            if not id_list:  # an empty assistant turn still frames a message
                id_list.append(t.intern(TEXT, "", True))
                kind_list.append(TEXT)
            ids, kinds = tuple(id_list), tuple(kind_list)
        elif isinstance(item, SummaryItem):
            ids, kinds = (t.intern(SUMMARY, item.text, True),), (SUMMARY,)
        elif isinstance(item, UserItem):
            ids, kinds = (t.intern(USER, item.text, True, item.estimated_tokens),), (USER,)
        else:
            raise TypeError(f"a strategy returned {type(item).__name__}, not a view item")
        self._memo[item] = (merged, ids, kinds)
        return ids, kinds

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
        previous: RenderedRequest | None = None,
        hidden_tokens: int | tuple[int, ...] = 0,
        head_version: int = 0,
    ) -> RenderedRequest:
        layout = self._layout(items, system, tools, thread, hidden_tokens, head_version)
        request = RenderedRequest(
            index=index,
            request_id=request_id,
            thread=thread,
            ts=ts,
            model=model,
            provider=provider,
            block_ids=layout.ids,
            block_tokens=layout.tokens,
            cum_tokens=layout.cum,
            item_index=layout.owners,
            kinds=layout.kinds,
            positions=layout.positions,
            output_tokens=output_tokens,
            estimated_output=estimated_output,
        )
        request.prefix_keys = self._prefix_keys(request, previous)
        return request

    def _layout(
        self,
        items: Sequence[Item],
        system: str,
        tools: Sequence[ToolDef],
        thread: str,
        hidden_tokens: int | tuple[int, ...] = 0,
        head_version: int = 0,
    ) -> _Layout:
        """Block arrays of a view. The leading items that are the very objects of the thread's
        previous view keep their blocks (an array slice); only the rest is walked in Python, so
        an append-only strategy costs O(new items) here, not O(history)."""
        head_ids, head_kinds = self._head_blocks(system, tools, hidden_tokens, head_version)
        key = (thread, system, tuple(id(t) for t in tools), hidden_tokens, head_version)
        last = self._last.get(key)
        items = list(items)
        shared = 0
        if last is not None:
            n = min(len(last.items), len(items))
            # List equality tests identity first (items compare by identity): C speed.
            if last.items[:n] == items[:n]:
                shared = n
            else:
                shared = list(map(operator.is_, last.items[:n], items[:n])).index(False)
        if shared:
            base, keep = last, last.item_end[shared - 1]
        else:
            base, keep = self._head_layout(key[1:], head_ids, head_kinds), len(head_ids)
        new_ids: list[int] = []
        new_kinds: list[str] = []
        new_owners: list[int] = []
        item_end = base.item_end[:shared]
        prev_is_result = shared > 0 and isinstance(items[shared - 1], ToolResultItem)
        for n in range(shared, len(items)):
            item = items[n]
            is_result = isinstance(item, ToolResultItem)
            b_ids, b_kinds = self._item_blocks(item, merged=is_result and prev_is_result)
            new_ids.extend(b_ids)
            new_kinds.extend(b_kinds)
            new_owners.extend([n] * len(b_ids))
            item_end.append(keep + len(new_ids))
            prev_is_result = is_result
        infos = self.table.blocks
        tokens = np.fromiter((infos[i].tokens for i in new_ids), dtype=np.int64, count=len(new_ids))
        kinds = base.kinds[:keep] + new_kinds
        positions = np.empty(len(new_ids), dtype=np.int64)
        pos = int(base.positions[keep - 1]) if keep else -1
        for i, kind in enumerate(new_kinds, start=keep):
            if not (i and kind in _RUN_KINDS and kinds[i - 1] == kind):
                pos += 1
            positions[i - keep] = pos
        offset = int(base.cum[keep - 1]) if keep else 0
        layout = _Layout(
            items=items,
            item_end=item_end,
            ids=np.concatenate((base.ids[:keep], np.asarray(new_ids, dtype=np.int64))),
            tokens=np.concatenate((base.tokens[:keep], tokens)),
            cum=np.concatenate((base.cum[:keep], np.cumsum(tokens) + offset)),
            owners=np.concatenate((base.owners[:keep], np.asarray(new_owners, dtype=np.int64))),
            kinds=kinds,
            positions=np.concatenate((base.positions[:keep], positions)),
        )
        self._last[key] = layout
        return layout

    def _head_layout(self, key: tuple, head_ids: list[int], head_kinds: list[str]) -> _Layout:
        hit = self._head_layouts.get(key)
        if hit is not None:
            return hit
        ids = np.asarray(head_ids, dtype=np.int64)
        infos = self.table.blocks
        tokens = np.fromiter((infos[i].tokens for i in head_ids), dtype=np.int64, count=len(ids))
        positions = np.empty(len(ids), dtype=np.int64)
        pos = -1
        for i, kind in enumerate(head_kinds):
            if not (i and kind in _RUN_KINDS and head_kinds[i - 1] == kind):
                pos += 1
            positions[i] = pos
        hit = self._head_layouts[key] = _Layout(
            items=[], item_end=[], ids=ids, tokens=tokens, cum=np.cumsum(tokens),
            owners=np.full(len(ids), -1, dtype=np.int64), kinds=list(head_kinds),
            positions=positions,
        )
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
        keys = previous.prefix_keys[:keep] if keep else []
        key = keys[-1] if keys else zlib.crc32(request.model.encode())
        for block_id in ids[keep:].tolist():
            key = hash((key, block_id))
            keys.append(key)
        return keys
