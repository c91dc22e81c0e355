"""`openhands-llm-attention-100`: OpenHands' LLM-attention condenser (model-free stand-in).

Rule: when the view holds more than `max_size` events, a model call ranks the events by
importance; the first `keep_first` events stay and so do the `max_size / 2 − keep_first`
best-ranked others (padded with the newest), in their original order; the rest are forgotten
for good, and the view grows append-only until the next condensation.

Replay: the ranking model is replaced by a deterministic score — user messages, writes and
edits, errors and test runs rank high, then recency — applied to whole steps (an assistant
message with its tool results) so a call never loses its result. The ranking call is costed
(input: the events; output: the list of ids).

Defaults: max_size = 100, keep_first = 1. Events are OpenHands' (`_openhands.py`): the system
prompt is the first (all `keep_first` = 1 keeps), each tool call and each result one. Cache
class: freeze-once.

Source: All-Hands-AI/OpenHands openhands/memory/condenser/impl/llm_attention_condenser.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_0, Bounds, StrategyContext, StrategySpec, register
from replay.strategies._common import (
    Forgetting,
    PairedView,
    fresh_call,
    is_real_user,
    item_text,
    nonempty,
    result_kind,
)
from replay.strategies._openhands import events_of, head_length, view_events
from replay.strategies._prompts import OPENHANDS_ATTENTION_INSTRUCTION
from replay.strategies._view import AssistantItem, Item, RewriteEvent, ToolResultItem, View

_ERROR = re.compile(r"error|fail|exception|traceback|assert", re.IGNORECASE)


def units(indexes: Sequence[int], items: Sequence[Item]) -> list[list[int]]:
    """Steps: an assistant item with the results that follow it; anything else alone."""
    out: list[list[int]] = []
    for n in indexes:
        if (
            isinstance(items[n], ToolResultItem)
            and out
            and isinstance(items[out[-1][0]], AssistantItem)
        ):
            out[-1].append(n)
        else:
            out.append([n])
    return out


def importance(unit: list[int], items: Sequence[Item], position: float) -> float:
    score = position  # 0 (oldest) .. 1 (newest)
    for n in unit:
        item = items[n]
        if is_real_user(item):
            score += 3
        elif isinstance(item, ToolResultItem):
            kind = result_kind(item)
            score += {"write": 2.0, "test": 1.5}.get(kind, 0.0)
            if item.is_error or _ERROR.search(item_text(item)[:4000]):
                score += 1.0
    return score


def openhands_llm_attention(max_size: int = 100, keep_first: int = 1) -> object:
    memory = Forgetting()
    forgotten = memory.forgotten  # history positions forgotten for good
    live = PairedView(lambda n, item: None if n in forgotten else item)

    def keep_ranked(history: Sequence[Item], ctx: StrategyContext) -> View:
        live.sync(history)
        view = nonempty(live.items(), history)
        if view_events(view) <= max_size:
            return View(items=view)
        positions = memory.remembered(len(history))
        head = head_length([history[n] for n in positions], keep_first)
        rest = units(positions[head:], history)
        weight = [sum(events_of(history[n]) for n in unit) for unit in rest]
        budget = max(1, max_size // 2 - keep_first)
        order = sorted(
            range(len(rest)),
            key=lambda u: -importance(rest[u], history, u / max(1, len(rest) - 1)),
        )
        chosen: set[int] = set()
        kept = 0  # events
        for u in order:
            if kept + weight[u] > budget and chosen:
                continue
            chosen.update(rest[u])
            kept += weight[u]
        newly = [n for unit in rest for n in unit if n not in chosen]
        memory.forget(newly)
        live.update(history, newly)
        ranking = json.dumps(
            [getattr(history[unit[0]], "event_index", -1) for unit in (rest[u] for u in order)]
        )
        call = fresh_call(view, OPENHANDS_ATTENTION_INSTRUCTION, ranking)
        return View(
            items=nonempty(live.items(), history),
            summarizer_calls=[call],
            events=[RewriteEvent("drop", f"kept {counted(kept, 'ranked event')}")],
        )

    return keep_ranked


register(
    StrategySpec(
        family="openhands-llm-attention",
        pattern=r"openhands-llm-attention-(?P<max_size>\d+)",
        build=openhands_llm_attention,
        cache_class="freeze-once",
        rule="view > max events → a model ranks events; keep the first k + the top max/2 - k "
        "(deterministic stand-in ranking)",
        defaults={"max_size": 100, "keep_first": 1},
        bounds={"max_size": Bounds(low=2), "keep_first": AT_LEAST_0},
        canonical=("openhands-llm-attention-100",),
        source="All-Hands-AI/OpenHands llm_attention_condenser.py",
    )
)
