"""Renderer: a view becomes ordered, token-counted blocks (tools, system, messages)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import gen
import pytest
from hypothesis import given, settings

from replay.cache import profile_for
from replay.log import ToolDef
from replay.render import Renderer
from replay.strategies import AssistantItem, Block, SummaryItem, ToolResultItem, UserItem
from replay.tokens import TokenCounter, counter_for

TS = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TOOLS = [
    ToolDef(name="read_file", description="Read a file.", input_schema={"type": "object"}),
    ToolDef(name="run_tests", description="Run the tests."),
]
SYSTEM = "You are a coding agent."


def _render(renderer, items, *, system=SYSTEM, tools=TOOLS, model="gpt-5", previous=None):
    return renderer.render(
        items,
        system=system,
        tools=tools,
        index=0,
        request_id="r",
        thread="main",
        ts=TS,
        model=model,
        provider="openai",
        previous=previous,
    )


def _conversation():
    call = Block("tool_call", call_id="c1", name="read_file", arguments={"path": "src/api.js"})
    return [
        UserItem("Fix the failing test."),
        AssistantItem(
            (Block("thinking", text="Look first."), Block("text", text="Reading."), call)
        ),
        ToolResultItem("c1", "read_file", "export function handle() {}\n" * 40),
        UserItem("Also keep the style."),
    ]


def test_blocks_are_tools_then_system_then_messages_with_exact_counts():
    counter = TokenCounter("gpt-5")
    fam = counter.family
    r = Renderer(counter)
    req = _render(r, _conversation())
    assert req.kinds == [
        "tool",
        "tool",
        "system",
        "user",
        "thinking",
        "text",
        "tool_call",
        "tool_result",
        "user",
    ]
    assert req.item_index.tolist() == [-1, -1, -1, 0, 1, 1, 1, 2, 3]
    infos = [r.table.blocks[i] for i in req.block_ids.tolist()]
    for info, tokens in zip(infos, req.block_tokens.tolist(), strict=True):
        assert tokens == info.tokens == info.overhead + counter.count(info.text)
    # Tool definitions carry no message framing; every message pays it once; tool calls pay more.
    assert [i.overhead for i in infos] == [
        0,
        0,
        fam.message_overhead,
        fam.message_overhead,
        fam.message_overhead,
        0,
        fam.tool_call_overhead,
        fam.message_overhead,
        fam.message_overhead,
    ]
    assert infos[6].text == 'read_file({"path": "src/api.js"})'
    assert req.total == int(req.block_tokens.sum()) == int(req.cum_tokens[-1])
    assert req.tokens_before(0) == 0 and req.tokens_before(3) == int(req.cum_tokens[2])
    assert req.message_ends() == [2, 3, 6, 7, 8]  # the head (tools + system) counts as one


def test_rendering_again_reuses_blocks_and_tokenizes_nothing():
    counter = TokenCounter("gpt-5")
    r = Renderer(counter)
    items = _conversation()
    first = _render(r, items)
    calls, blocks = counter.encode_calls, len(r.table)
    again = _render(r, items + [AssistantItem((Block("text", text="Done."),))], previous=first)
    assert len(r.table) == blocks + 1
    assert counter.encode_calls == calls + 1
    assert again.block_ids[: len(first.block_ids)].tolist() == first.block_ids.tolist()
    # Equal contents intern to the same block, even from different item objects.
    copy = [UserItem(items[0].text)]
    assert _render(r, copy).block_ids[3] == first.block_ids[3]


def test_redacted_thinking_blocks_count_their_own_size():
    """Regression: blocks known only by size (thinking whose text the log does not hold) were
    interned by text alone, so every later one took the first one's size."""
    r = Renderer(TokenCounter("gpt-5"))
    small = AssistantItem((Block("thinking", estimated_tokens=100), Block("text", text="a")))
    large = AssistantItem((Block("thinking", estimated_tokens=2000), Block("text", text="b")))
    req = _render(r, [UserItem("task"), small, UserItem("go on"), large], system="", tools=[])
    overhead = r.table.counter.family.message_overhead
    thinking = [int(t) for t, k in zip(req.block_tokens, req.kinds, strict=True) if k == "thinking"]
    assert thinking == [100 + overhead, 2000 + overhead]


def test_calibration_factor_scales_every_block():
    text = "const task = store.get(Number(id)); // the id arrives as a string\n" * 9
    exact = Renderer(TokenCounter("gpt-5"))
    scaled = Renderer(TokenCounter("claude-opus-4-7"))
    a = _render(exact, [UserItem(text)], system="", tools=[])
    b = _render(scaled, [UserItem(text)], system="", tools=[], model="claude-opus-4-7")
    raw = len(exact.table.counter.raw_tokens(text))
    fam = scaled.table.counter.family
    assert b.total == math.ceil(raw * 1.35) + fam.message_overhead
    assert a.total == raw + exact.table.counter.family.message_overhead


def test_parallel_results_share_one_message():
    r = Renderer(counter_for("gpt-5"))
    calls = AssistantItem(
        tuple(
            Block("tool_call", call_id=f"c{i}", name="read_file", arguments={"path": f"f{i}"})
            for i in range(3)
        )
    )
    items = [UserItem("go"), calls] + [
        ToolResultItem(f"c{i}", "read_file", f"out {i}") for i in range(3)
    ]
    req = _render(r, items, system="", tools=[])
    starts = [r.table.blocks[i].starts_message for i in req.block_ids.tolist()]
    assert req.kinds == [
        "user",
        "tool_call",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "tool_result",
    ]
    assert starts == [True, True, False, False, True, False, False]
    assert req.positions.tolist() == [0, 1, 1, 1, 2, 2, 2]


def test_a_non_item_is_rejected():
    r = Renderer(counter_for("gpt-5"))
    with pytest.raises(TypeError, match="not a view item"):
        _render(r, [UserItem("ok"), "a bare string"])


def test_default_anthropic_breakpoints_are_on_system_and_last_message():
    r = Renderer(counter_for("claude-sonnet-4-5"))
    req = _render(r, _conversation(), model="claude-sonnet-4-5")
    marks = [b.block for b in profile_for("claude-code").breakpoints(req, "main")]
    assert marks == [req.kinds.index("system"), len(req.kinds) - 1]


@settings(max_examples=60, deadline=None)
@given(gen.histories())
def test_block_tokens_add_up_on_random_histories(items):
    r = Renderer(counter_for("gpt-5"))
    req = _render(r, items)
    assert len(req.block_ids) == len(req.kinds) == len(req.item_index) == len(req.positions)
    assert req.total == int(req.block_tokens.sum())
    assert all(t >= 0 for t in req.block_tokens.tolist())
    assert set(req.item_index.tolist()) - {-1} == set(range(len(items)))
    assert req.kinds[:3] == ["tool", "tool", "system"]
    summaries = [i for i, it in enumerate(items) if isinstance(it, SummaryItem)]
    for n in summaries:
        assert [req.kinds[b] for b in range(len(req.kinds)) if req.item_index[b] == n] == [
            "summary"
        ]
