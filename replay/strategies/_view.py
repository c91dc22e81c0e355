"""What a strategy reads and returns: the conversation as a list of items.

`history` holds one item per model-visible log event of the thread (user message, assistant
message, tool result), full and in order. A strategy returns a `View`: the items to send, where
each item is either one of the history items untouched (the same object — that is how the
renderer knows it is unchanged) or a new item made with `dataclasses.replace` or the helpers here.
Items are frozen: a strategy can never edit the history in place. They compare by identity
(`eq=False`): "unchanged" means "the same object", which lets the renderer reuse its work.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from operator import is_
from typing import Any, Literal

CacheClass = Literal["append-only", "freeze-once", "churn", "churn-tail"]


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class UserItem:
    """A user-role message."""

    text: str
    event_index: int = -1
    injected: bool = False
    estimated_tokens: int | None = None
    """Size of a message known only by its size (context the log does not hold)."""
    kind: Literal["user"] = "user"
    _blocks: tuple | None = field(default=None, init=False, repr=False, compare=False)
    """The renderer's blocks for this item (`Renderer._item_blocks`), kept on the item rather
    than in a weak dictionary of the renderer's (a weak reference and an entry per item)."""


@dataclass(frozen=True, slots=True)
class Block:
    """One assistant content block: `text`, `thinking` or `tool_call`."""

    type: Literal["text", "thinking", "tool_call"]
    text: str = ""
    call_id: str | None = None
    name: str | None = None
    arguments: Any = None
    estimated_tokens: int | None = None
    arguments_format: Literal["json", "compact", "raw"] = "json"
    """How the provider shows a tool call's arguments to the model: `json` (sorted keys, the
    default), `compact` (the model's own key order, no spaces: OpenAI function calls) or `raw`
    (a freeform tool's `arguments["input"]` as written: Codex `apply_patch`). Adapters set it
    from the log block's `arguments_format` when the log says how the call was sent."""
    _rendered: str | None = field(default=None, init=False, repr=False, compare=False)
    """`rendered()` of a tool call, computed once: strategies and evidence checks ask for it on
    every request, and JSON-encoding the arguments each time dominated long replays."""

    @property
    def size_only(self) -> int | None:
        """The size of thinking the log holds only by its size (a signature, redacted): what
        the block bills; None for a block whose text is logged."""
        return self.estimated_tokens if self.type == "thinking" and not self.text else None

    def rendered(self) -> str:
        """The text the model sees for this block (tool calls as name + JSON arguments)."""
        if self.type == "tool_call":
            text = self._rendered
            if text is None:
                args = _arguments_text(self.arguments, self.arguments_format)
                text = f"{self.name}({args})"
                object.__setattr__(self, "_rendered", text)
            return text
        return self.text


def _arguments_text(arguments: Any, form: str) -> str:
    if form == "raw" and isinstance(arguments, dict) and isinstance(arguments.get("input"), str):
        return arguments["input"]
    if form == "compact":
        return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)


def tool_call_block(call: Any) -> Block:
    """A logged `ToolCallBlock` as a view block (its `arguments_format`, if any, kept)."""
    form = getattr(call, "arguments_format", None)
    return Block(
        "tool_call",
        call_id=call.id,
        name=call.name,
        arguments=call.arguments,
        arguments_format=form if form in ("compact", "raw") else "json",
    )


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class AssistantItem:
    """One assistant response (several blocks, e.g. text then parallel tool calls)."""

    blocks: tuple[Block, ...]
    event_index: int = -1
    kind: Literal["assistant"] = "assistant"
    _text: str | None = field(default=None, init=False, repr=False, compare=False)
    """`shown_text()`, computed once (strategies and evidence checks read it on every request)."""
    _chars: int | None = field(default=None, init=False, repr=False, compare=False)
    """`item_chars` of this item, computed once."""
    _calls: tuple[Block, ...] | None = field(default=None, init=False, repr=False, compare=False)
    """`tool_calls`, computed once."""
    _count: tuple[object, int] | None = field(default=None, init=False, repr=False, compare=False)
    """(counter, token count of the blocks' texts, block by block), once counted
    (`replay.strategies._common.count_item`)."""
    _variants: tuple | dict | None = field(default=None, init=False, repr=False, compare=False)
    """Items derived from this one (`strip_calls`, `replace_blocks`), so the same edit gives
    the same object: one `(key, item)` pair, a dict once there are several (most items have at
    most one; a weak dictionary keyed by the item cost a weak reference and a dict each)."""
    _blocks: tuple | None = field(default=None, init=False, repr=False, compare=False)
    """The renderer's blocks for this item (`Renderer._item_blocks`), kept on the item rather
    than in a weak dictionary of the renderer's (a weak reference and an entry per item)."""

    @property
    def tool_calls(self) -> tuple[Block, ...]:
        calls = self._calls
        if calls is None:
            calls = tuple(b for b in self.blocks if b.type == "tool_call")
            object.__setattr__(self, "_calls", calls)
        return calls

    def shown_text(self) -> str:
        """The blocks' texts as the model sees them, one per line (tool calls as name + JSON)."""
        text = self._text
        if text is None:
            text = "\n".join(b.rendered() for b in self.blocks)
            object.__setattr__(self, "_text", text)
        return text

    def text_length(self) -> int:
        """`len(shown_text())`, without joining the blocks."""
        return self.chars() + max(len(self.blocks) - 1, 0)

    def chars(self) -> int:
        """Characters the blocks show the model (`item_chars`)."""
        chars = self._chars
        if chars is None:
            chars = sum(len(b.rendered()) for b in self.blocks)
            object.__setattr__(self, "_chars", chars)
        return chars


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class ToolResultItem:
    """What a tool returned, as the model sees it (a strategy may shorten `output`)."""

    call_id: str
    tool_name: str
    output: str
    is_error: bool = False
    event_index: int = -1
    original_chars: int | None = None
    """Length of the full output when a strategy shortened it (None = untouched)."""
    arguments: Any = None
    """Arguments of the call that produced it (read-only convenience for strategies)."""
    kind: Literal["tool_result"] = "tool_result"
    _variants: tuple | dict | None = field(default=None, init=False, repr=False, compare=False)
    """Items derived from this one by `replace_output` (keyed by their output) and
    `truncate_chars` (keyed by `(limit, marker)`), so the same edit gives the same object
    (`derived`/`remember`: one pair, a dict once there are several)."""
    _blocks: tuple | None = field(default=None, init=False, repr=False, compare=False)
    """The renderer's blocks for this item (`Renderer._item_blocks`), kept on the item rather
    than in a weak dictionary of the renderer's (a weak reference and an entry per item)."""

    @property
    def full_chars(self) -> int:
        """Length of the full output: `original_chars` once shortened (0: an empty output a
        strategy stubbed), else the output's own."""
        return len(self.output) if self.original_chars is None else self.original_chars


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class SummaryItem:
    """A summary standing in for earlier items (rendered as a message of its `role`)."""

    text: str
    replaces: tuple[int, ...] = ()
    """Event indexes of the history items this summary replaced."""
    source: Literal["logged", "extractive", "server"] = "extractive"
    """Where the text comes from: the log's own summary, a deterministic stand-in built from
    what it replaced, or a provider's server-side compaction."""
    role: Literal["user", "assistant"] = "user"
    """The role of the message the harness sends it in: most send the summary as the user's,
    Roo Code and opencode as the assistant's (a text block of an assistant turn)."""
    kind: Literal["summary"] = "summary"
    _blocks: tuple | None = field(default=None, init=False, repr=False, compare=False)
    """The renderer's blocks for this item (`Renderer._item_blocks`), kept on the item rather
    than in a weak dictionary of the renderer's (a weak reference and an entry per item)."""


Item = UserItem | AssistantItem | ToolResultItem | SummaryItem


@dataclass(frozen=True)
class SummarizerCall:
    """A model call a strategy would have made to write a summary; costed as its own request."""

    input_items: tuple[Item, ...]
    """What the summarizer was sent (before the instruction)."""
    instruction: str
    """The summary prompt appended after the input."""
    summary: str
    """The summary it produced (logged, or a deterministic stand-in)."""
    reuse_main_prefix: bool = True
    """True when the call shares the main thread's prefix (same system + tools), so it can hit
    the cache; False for a fresh request, sent without the main thread's system prompt, tool
    definitions and unlogged head."""
    with_tools: bool = True
    """For a call that reuses the main prefix: whether it also sends the main thread's tool
    definitions (Codex sends its compaction request with `tools=[]`: the same instructions and
    history behind no tools, so it shares no cached prefix with the main thread)."""
    unlogged: tuple[UserItem, ...] = ()
    """A fresh call's messages known only by their size (context the log does not hold) among
    what its transcript serializes: a transcript cannot write them out, so they follow it as
    themselves, each at its estimated size (those the request no longer sends are left out)."""
    model: str | None = None
    """The model the harness sends this call to when it is not the request's own (Aider's weak
    model); None: the request's model. The call is priced, and cached, as that model's."""


@dataclass(frozen=True)
class RewriteEvent:
    """A strategy rewrote earlier context at this request (prune, clear, compaction, aging)."""

    kind: Literal["compaction", "prune", "truncate", "aging", "clear", "drop"]
    detail: str = ""


@dataclass
class View:
    """What a strategy decided to send for one request."""

    items: list[Item]
    summarizer_calls: list[SummarizerCall] = field(default_factory=list)
    events: list[RewriteEvent] = field(default_factory=list)


# Derived items are memoized on the original item (its hidden `_variants`), so a strategy that
# shortens the same result on every request returns the same object every time (the renderer
# then reuses its blocks), without a weak-dictionary lookup per call.


_NONE = object()
"""`derived`: no item derived under that key yet."""


def derived(item: AssistantItem | ToolResultItem, key: object) -> object:
    """The item derived from `item` under `key` (`remember`), else `_NONE`."""
    memo = item._variants
    if memo is None:
        return _NONE
    if type(memo) is tuple:
        return memo[1] if memo[0] == key else _NONE
    return memo.get(key, _NONE)


def remember(item: AssistantItem | ToolResultItem, key: object, value: object) -> object:
    """Keep `value` as the item derived from `item` under `key`; returns it."""
    memo = item._variants
    if memo is None:
        object.__setattr__(item, "_variants", (key, value))
    elif type(memo) is tuple:
        object.__setattr__(item, "_variants", {memo[0]: memo[1], key: value})
    else:
        memo[key] = value
    return value


def replace_output(item: ToolResultItem, output: str) -> ToolResultItem:
    """`item` showing `output` instead (a stub, a placeholder, a head+tail cut…)."""
    if output == item.output:
        return item
    hit = derived(item, output)
    if hit is _NONE:
        hit = remember(
            item,
            output,
            ToolResultItem(
                call_id=item.call_id,
                tool_name=item.tool_name,
                output=output,
                is_error=item.is_error,
                event_index=item.event_index,
                original_chars=item.full_chars,
                arguments=item.arguments,
            ),
        )
    return hit  # type: ignore[return-value]


def cut_output(output: str, limit: int, marker: str | None = None) -> str | None:
    """`output` cut to `limit` characters with a marker, or None when it fits. An output only
    a little longer than `limit` is cut too, though its marker makes it longer: what a cap
    hides is everything past the limit (the seed study's bug sat just past character 500)."""
    if len(output) <= limit:
        return None
    tail = marker if marker is not None else f"\n…[truncated {len(output) - limit} chars]"
    return output[:limit] + tail


def truncate_chars(item: ToolResultItem, limit: int, marker: str | None = None) -> ToolResultItem:
    """`item` with its output cut to `limit` characters and a marker (same object when it
    already fits)."""
    if len(item.output) <= limit:
        return item
    key = (limit, marker)
    hit = derived(item, key)
    if hit is _NONE:
        cut = cut_output(item.output, limit, marker)
        if cut is None:
            return item
        hit = replace_output(item, cut)
        if hit is not item:  # (a marker equal to the cut text changes nothing)
            remember(item, key, hit)
    return hit  # type: ignore[return-value]


def item_chars(item: Item) -> int:
    """Characters an item shows the model (the unit of strategies whose rule is in characters)."""
    if isinstance(item, AssistantItem):
        return item.chars()
    if isinstance(item, ToolResultItem):
        return len(item.output)
    return len(item.text)


def shared_prefix(old: list[Item], new: list[Item]) -> int:
    """How many leading items of `new` are the very objects of `old`. Both lists are changed
    during the call and restored before it returns (`_same_prefix`)."""
    n = min(len(old), len(new))
    if old is new or _same_prefix(old, new, n):
        return n
    # A strategy appends, or rewrites a few recent items (a compaction or a sliding window
    # starts over): the first difference is most often near the end. Gallop back from there to
    # a prefix both share, then halve the window that holds the difference.
    width = 64
    while True:
        low = max(0, n - width)
        if low == 0 or _same_prefix(old, new, low):
            break
        width *= 2
    high = n if width == 64 else n - width // 2  # the last prefix found not shared
    while high - low > 64:
        middle = (low + high) // 2
        if old[low:middle] == new[low:middle]:
            low = middle
        else:
            high = middle
    return low + list(map(is_, old[low:high], new[low:high])).index(False)


def _same_prefix(old: list[Item], new: list[Item], length: int) -> bool:
    """True when the first `length` items of both lists are the same objects. Lists of equal
    length compare their item pointers (items compare by identity) without touching the items;
    slices of `length` items would add and drop a reference to each (a read and two writes per
    object, scattered in memory: most of the cost on long views). So both lists are cut to
    `length` for the comparison, and their tails (what lies beyond it) put back."""
    old_tail, new_tail = old[length:], new[length:]
    del old[length:], new[length:]
    try:
        return old == new
    finally:
        old.extend(old_tail)
        new.extend(new_tail)
