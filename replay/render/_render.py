"""Turn a strategy's view into a `RenderedRequest`.

Each view item becomes one or more blocks (an assistant message: one per content block; a tool
result: one block, merged into the same user message as the results right before it). Rendering
is memoized per item object, so the history items a strategy passes through untouched are
rendered once for the whole replay; per request the cost is O(items) list work, never
re-tokenization. Chained prefix keys are reused from the previous request up to the first block
that differs.
"""

from __future__ import annotations

import json
import zlib
import weakref
from collections.abc import Sequence
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


def first_difference(a: np.ndarray, b: np.ndarray) -> int | None:
    """Index of the first differing element of two id arrays (None when one is a prefix)."""
    n = min(len(a), len(b))
    if n == 0:
        return None
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if len(diff) else None


class Renderer:
    """Renders views for one model family; owns the block table shared by all strategies."""

    def __init__(self, counter: TokenCounter) -> None:
        self.table = BlockTable(counter)
        self._memo: weakref.WeakKeyDictionary[Item, tuple] = weakref.WeakKeyDictionary()
        self._head: dict[tuple, tuple[list[int], list[str]]] = {}

    def _head_blocks(self, system: str, tools: Sequence[ToolDef]) -> tuple[list[int], list[str]]:
        key = (system, tuple(id(t) for t in tools))
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
            hit = (ids, kinds)
            self._head[key] = hit
        return hit

    def _item_blocks(self, item: Item, merged: bool) -> tuple[tuple[int, ...], tuple[str, ...]]:
        cached = self._memo.get(item)
        if cached is not None and cached[0] == merged:
            return cached[1], cached[2]
        t = self.table
        if isinstance(item, ToolResultItem):
            ids, kinds = (t.intern(TOOL_RESULT, item.output, not merged),), (TOOL_RESULT,)
        elif isinstance(item, AssistantItem):
            id_list, kind_list = [], []
            for n, block in enumerate(item.blocks):
                kind = {"text": TEXT, "thinking": THINKING, "tool_call": TOOL_CALL}[block.type]
                fixed = block.estimated_tokens if block.type == "thinking" and not block.text else None
                id_list.append(t.intern(kind, block.rendered(), n == 0, fixed))
                kind_list.append(kind)
            if not id_list:  # an empty assistant turn still frames a message
                id_list.append(t.intern(TEXT, "", True))
                kind_list.append(TEXT)
            ids, kinds = tuple(id_list), tuple(kind_list)
        elif isinstance(item, SummaryItem):
            ids, kinds = (t.intern(SUMMARY, item.text, True),), (SUMMARY,)
        elif isinstance(item, UserItem):
            ids, kinds = (t.intern(USER, item.text, True),), (USER,)
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
    ) -> RenderedRequest:
        head_ids, head_kinds = self._head_blocks(system, tools)
        ids: list[int] = list(head_ids)
        kinds: list[str] = list(head_kinds)
        owners: list[int] = [-1] * len(ids)
        prev_is_result = False
        for n, item in enumerate(items):
            is_result = isinstance(item, ToolResultItem)
            b_ids, b_kinds = self._item_blocks(item, merged=is_result and prev_is_result)
            ids.extend(b_ids)
            kinds.extend(b_kinds)
            owners.extend([n] * len(b_ids))
            prev_is_result = is_result
        block_ids = np.asarray(ids, dtype=np.int64)
        infos = self.table.blocks
        block_tokens = np.fromiter((infos[i].tokens for i in ids), dtype=np.int64, count=len(ids))
        positions = np.empty(len(ids), dtype=np.int64)
        pos = -1
        for i, kind in enumerate(kinds):
            if not (i and kind in _RUN_KINDS and kinds[i - 1] == kind):
                pos += 1
            positions[i] = pos
        request = RenderedRequest(
            index=index,
            request_id=request_id,
            thread=thread,
            ts=ts,
            model=model,
            provider=provider,
            block_ids=block_ids,
            block_tokens=block_tokens,
            cum_tokens=np.cumsum(block_tokens),
            item_index=np.asarray(owners, dtype=np.int64),
            kinds=kinds,
            positions=positions,
            output_tokens=output_tokens,
            estimated_output=estimated_output,
        )
        request.prefix_keys = self._prefix_keys(request, previous)
        return request

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
