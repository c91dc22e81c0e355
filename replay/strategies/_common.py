"""Helpers the strategy families share (sizes, triggers, pairing, tool kinds, transcripts).

Not a family: nothing here registers a strategy.
"""

from __future__ import annotations

import json
import math
import re
import weakref
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field

from replay.strategies._base import Strategy, StrategyContext
from replay.strategies._summary import _path_of, freeform_summary, structured_summary
from replay.strategies._view import (
    _NONE,
    AssistantItem,
    Block,
    Item,
    SummarizerCall,
    SummaryItem,
    ToolResultItem,
    UserItem,
    View,
    derived,
    item_chars,
    remember,
)

# ---------------------------------------------------------------------------------------------
# Sizes


def est(text: str) -> int:
    """The harnesses' own cheap estimate: ceil(characters / 4)."""
    return math.ceil(len(text) / 4)


def item_text(item: Item) -> str:
    """The text an item shows the model (tool calls as name + JSON arguments), memoized."""
    if isinstance(item, AssistantItem):
        return item.shown_text()
    if isinstance(item, ToolResultItem):
        return item.output
    return item.text


def sized_only(item: Item) -> int:
    """Tokens of what an item holds only as a size: thinking whose text the log does not hold,
    or a whole message of context the log does not hold (the renderer bills both)."""
    if isinstance(item, AssistantItem):
        return sum(b.size_only or 0 for b in item.blocks)
    if isinstance(item, UserItem):
        return item.estimated_tokens or 0
    return 0


def item_est(item: Item) -> int:
    """chars/4 estimate of an item (what it holds only as a size counts that size)."""
    if isinstance(item, AssistantItem):
        return math.ceil(item.text_length() / 4) + sized_only(item)
    if isinstance(item, UserItem) and item.estimated_tokens is not None:
        return item.estimated_tokens
    return est(item_text(item))


def items_est(items: Iterable[Item]) -> int:
    return sum(item_est(i) for i in items)


def count_item(item: Item, count: Callable[[str], int]) -> int:
    """Tokens of an item: `count(item_text(item))`, plus what it holds only as a size
    (`sized_only`: a message known by its size is that size, not its placeholder's)."""
    if isinstance(item, UserItem) and item.estimated_tokens is not None:
        return item.estimated_tokens
    n = _count_text(item, count)
    return n + sized_only(item) if isinstance(item, AssistantItem) else n


def _count_text(item: Item, count: Callable[[str], int]) -> int:
    """`count` of the text an item shows. An assistant item is counted block by block, as the
    renderer counts it (its blocks joined counted a token more or less at each seam), its count
    kept on the item; thinking known only by its size is `sized_only`'s."""
    if not isinstance(item, AssistantItem):
        return count(item_text(item))
    owner = getattr(count, "__self__", count)  # the counter of a bound `count` method
    memo = item._count
    if memo is not None and memo[0] is owner:
        return memo[1]
    n = sum(count(b.rendered()) for b in item.blocks if b.type != "thinking" or b.text)
    object.__setattr__(item, "_count", (owner, n))
    return n


def item_tokens(item: Item, ctx: StrategyContext) -> int:
    """Token count of an item for the request's model."""
    return count_item(item, ctx.count_tokens)


def items_tokens(items: Iterable[Item], ctx: StrategyContext) -> int:
    return sum(item_tokens(i, ctx) for i in items)


def item_framing(item: Item, after_result: bool, ctx: StrategyContext) -> int:
    """Framing tokens the renderer adds around `item`: a message's, except for a tool result
    right after another (sent in the same message), and one per tool call."""
    if isinstance(item, ToolResultItem):
        return 0 if after_result else ctx.message_overhead
    if isinstance(item, AssistantItem):
        return ctx.message_overhead + ctx.tool_call_overhead * len(item.tool_calls)
    return ctx.message_overhead


def items_framing(items: Iterable[Item], ctx: StrategyContext, after_result: bool = False
                  ) -> int:
    """`item_framing` of each of `items` in a row (`after_result`: the item before the first
    is a tool result)."""
    total = 0
    for item in items:
        total += item_framing(item, after_result, ctx)
        after_result = isinstance(item, ToolResultItem)
    return total


def framed_tokens(items: Sequence[Item], ctx: StrategyContext) -> int:
    """Tokens of `items` as the request sends them: their content and the framing the chat
    template adds (per message and per tool call). Token-sized triggers compare this with a
    window: without the framing, 300 short tool steps counted 5,735 tokens where 9,941 were
    billed, and compactions fired late or never."""
    return items_tokens(items, ctx) + items_framing(items, ctx)


def head_tokens(ctx: StrategyContext, tools: bool = True) -> int:
    """Tokens of a request before its first item: the hidden prefix, the system prompt (a
    message of its own) and the tool definitions (`tools=False`: a call sent without them)."""
    head = ctx.hidden_tokens
    if ctx.system:
        head += ctx.count_tokens(ctx.system) + ctx.message_overhead
    if ctx.tools and tools:  # one block per definition, as the renderer counts them
        head += sum(
            ctx.count_tokens(json.dumps(t.model_dump(mode="json"), sort_keys=True))
            for t in ctx.tools
        )
    return head


def request_tokens(items: Sequence[Item], ctx: StrategyContext) -> int:
    """Counted prompt size of a request made of `items`, as the renderer counts it: framing,
    system prompt, tool definitions and the prefix the log does not hold included."""
    return framed_tokens(items, ctx) + head_tokens(ctx)


def chars(items: Iterable[Item]) -> int:
    return sum(item_chars(i) for i in items)


def last_assistant(history: Sequence[Item]) -> int:
    """Index of the last assistant message (-1: none); searched from the end, since it is
    usually among the last few items."""
    for n in range(len(history) - 1, -1, -1):
        if isinstance(history[n], AssistantItem):
            return n
    return -1


def since_last_assistant(history: Sequence[Item]) -> list[Item]:
    """Items added after the last assistant message (what the last response's usage lacks)."""
    return list(history[last_assistant(history) + 1 :])


def reported_tokens(
    ctx: StrategyContext,
    view: Sequence[Item],
    *,
    output: bool = True,
    pending: Sequence[Item] = (),
    estimate: bool = True,
    cache_writes: bool = True,
) -> int:
    """Context size as a harness reads it from the provider's last response.

    The simulated usage of the previous request (prompt, plus output when `output`), plus the
    estimate of `pending` items added since (their token count when not `estimate`). Without
    `cache_writes`, the prompt is its uncached input and cache reads only (opencode 1.x adds up
    those two buckets and leaves out what the request wrote to the cache). On the first request
    (no usage yet): the counted size of `view`."""
    usage = ctx.previous_usage
    if usage is None:
        return request_tokens(view, ctx)
    prompt = usage.prompt_tokens if cache_writes else usage.input_tokens + usage.cache_read_tokens
    total = prompt + (usage.output_tokens if output else 0)
    if pending:
        total += items_est(pending) if estimate else items_tokens(pending, ctx)
    return total


# ---------------------------------------------------------------------------------------------
# Pairing: a tool call and its result travel together


def answered_ids(history: Sequence[Item]) -> set[str]:
    return {i.call_id for i in history if isinstance(i, ToolResultItem)}


def strip_calls(item: AssistantItem, drop: Container[str]) -> AssistantItem | None:
    """`item` without the tool-call blocks in `drop` (None when nothing is left); memoized."""
    # Keyed by the dropped ids in the item's own order: the same drop gives the same key, and
    # a tuple of a few ids weighs a third of a frozenset (one per item a strategy strips).
    key = tuple(b.call_id for b in item.tool_calls if b.call_id in drop)
    if not key:
        return item
    hit = derived(item, key)
    if hit is _NONE:
        blocks = tuple(b for b in item.blocks if not (b.type == "tool_call" and b.call_id in key))
        kept = AssistantItem(blocks=blocks, event_index=item.event_index) if blocks else None
        hit = remember(item, key, kept)
    return hit  # type: ignore[return-value]


def replace_blocks(item: AssistantItem, blocks: tuple[Block, ...]) -> AssistantItem:
    """`item` showing `blocks` instead (memoized, so the same edit gives the same object)."""
    key = tuple(
        (b.type, b.text, b.call_id, b.name, _arguments_key(b), b.estimated_tokens) for b in blocks
    )
    hit = derived(item, key)
    if hit is _NONE:
        same = len(blocks) == len(item.blocks) and all(
            a is b or a == b for a, b in zip(blocks, item.blocks, strict=True)
        )
        hit = remember(
            item, key, item if same else AssistantItem(blocks=blocks, event_index=item.event_index)
        )
    return hit  # type: ignore[return-value]


def _arguments_key(block: Block) -> object:
    """A tool call's arguments in a memo key: the text it renders (made once per block and
    shared) where that tells all of them apart; a JSON dump of its own per key was the peak of
    Goose's run, one per pair summarized."""
    if block.type != "tool_call":
        return None
    if block.arguments_format == "raw":  # renders `input` alone
        return json.dumps(block.arguments, sort_keys=True, default=str)
    return (block.arguments_format, block.rendered())


def repair_pairs(
    items: Sequence[Item], history: Sequence[Item], answered: set[str] | None = None
) -> list[Item]:
    """Drop results whose call is not in `items`, and calls whose (existing) result is not.
    `answered`: `answered_ids(history)` when the caller keeps it (see `AnsweredIds`)."""
    calls = {b.call_id for i in items if isinstance(i, AssistantItem) for b in i.tool_calls}
    results = {i.call_id for i in items if isinstance(i, ToolResultItem)}
    if answered is None:
        answered = answered_ids(history)
    out: list[Item] = []
    for item in items:
        if isinstance(item, ToolResultItem):
            if item.call_id in calls:
                out.append(item)
        elif isinstance(item, AssistantItem):
            drop = {
                b.call_id
                for b in item.tool_calls
                if b.call_id not in results and b.call_id in answered
            }
            kept = strip_calls(item, drop)  # type: ignore[arg-type]
            if kept is not None:
                out.append(kept)
        else:
            out.append(item)
    return out


def nonempty(items: list[Item], history: Sequence[Item]) -> list[Item]:
    """`items`, or the smallest valid request when a rule left nothing (the last user message,
    else the last step)."""
    if items:
        return items
    user = next((i for i in reversed(history) if isinstance(i, UserItem)), None)
    if user is not None:
        return [user]
    return last_step(history) or [history[-1]]


def last_step(history: Sequence[Item]) -> list[Item]:
    """The last assistant message and everything after it (its results)."""
    last = last_assistant(history)
    return list(history[last:]) if last >= 0 else list(history)


def is_real_user(item: Item) -> bool:
    return isinstance(item, UserItem) and not item.injected


def valid_start(items: Sequence[Item], n: int) -> bool:
    """May a kept suffix start at `items[n]`? Not where it would hold a tool result whose call
    it cut: at a result, nor at a message between a call and its results (a user's steering
    text). Results come before the next assistant message, so only the items up to it are
    looked at."""
    for m in range(n, len(items)):
        item = items[m]
        if isinstance(item, AssistantItem):
            return True
        if isinstance(item, ToolResultItem):
            return False
    return True


def message_groups(items: Sequence[Item]) -> list[list[int]]:
    """Item indexes grouped into API messages: one per assistant item; a run of user-role items
    (user text, tool results, summaries) is one user message."""
    groups: list[list[int]] = []
    for n, item in enumerate(items):
        if (
            isinstance(item, AssistantItem)
            or not groups
            or isinstance(items[groups[-1][-1]], AssistantItem)
        ):
            groups.append([n])
        else:
            groups[-1].append(n)
    return groups


# ---------------------------------------------------------------------------------------------
# Tool kinds (tool names differ across harnesses: read_file / Read / view / cat ...)

_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")

_KINDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("browser", frozenset({"browse", "browser", "browsing", "navigate", "click", "goto"})),
    ("test", frozenset({"test", "tests", "pytest", "jest", "check"})),
    (
        "write",
        frozenset(
            {
                "write",
                "edit",
                "patch",
                "create",
                "replace",
                "apply",
                "insert",
                "str",
                "multiedit",
                "save",
                "delete",
                "move",
                "rename",
            }
        ),
    ),
    ("list", frozenset({"list", "ls", "glob", "tree", "dir", "find"})),
    ("search", frozenset({"grep", "search", "rg", "ripgrep", "codesearch", "semantic"})),
    ("read", frozenset({"read", "view", "cat", "open", "show", "file", "get"})),
    (
        "shell",
        frozenset(
            {
                "bash",
                "shell",
                "exec",
                "command",
                "terminal",
                "run",
                "sh",
                "powershell",
                "cmd",
                "execute",
            }
        ),
    ),
    ("web", frozenset({"fetch", "web", "url", "http", "download", "websearch", "webfetch"})),
)


_EDITOR_COMMANDS = {"view": "read", "create": "write", "str_replace": "write", "insert": "write",
                    "undo_edit": "write"}
"""What an editor tool's `command` does (Anthropic's text editor, OpenHands' and SWE-agent's
`str_replace_editor`): the tool's name is a write's, but `view` reads."""


def editor_kind(arguments: object) -> str | None:
    """`read` or `write` for an editor tool's call by its `command`; None for another call."""
    if not isinstance(arguments, dict):
        return None
    return _EDITOR_COMMANDS.get(str(arguments.get("command")))


def tool_kind(name: str | None, arguments: object = None) -> str:
    """`read`, `write`, `list`, `search`, `shell`, `test`, `web`, `browser` or `other`; with the
    call's `arguments`, an editor tool's `command` decides (`view` is a read)."""
    words = {w.lower() for w in _WORDS.findall(name or "")}
    kind = next((kind for kind, keys in _KINDS if words & keys), "other")
    if kind in ("write", "other"):
        return editor_kind(arguments) or kind
    return kind


def result_kind(item: ToolResultItem) -> str:
    """`tool_kind` of the call a tool result answers."""
    return tool_kind(item.tool_name, item.arguments)


def path_of(arguments: object) -> str | None:
    """The file path a tool call names, if any."""
    return _path_of(arguments)


# The arguments with which read tools ask for part of a file: `offset`/`limit` (Claude Code,
# pi, opencode, Gemini CLI), `view_range` (OpenHands, Goose), `start_line`/`end_line` and
# `line_range` (Roo).
_RANGE_KEYS = ("offset", "limit", "view_range", "start_line", "end_line", "line_range")


def reads_part_of_file(arguments: object) -> bool:
    """True when a read call's arguments ask for a range of lines rather than the whole file:
    its output is then not the file's content."""
    return isinstance(arguments, dict) and any(
        arguments.get(key) is not None for key in _RANGE_KEYS
    )


# ---------------------------------------------------------------------------------------------
# Summaries and transcripts


@dataclass
class SummarySource:
    """Where a compaction's text comes from: the summary the log recorded (each one used once,
    newest first), else a deterministic extractive stand-in of realistic size."""

    used: int = 0

    def text(
        self, ctx: StrategyContext, items: Sequence[Item], structured: bool = True
    ) -> tuple[str, str]:
        if len(ctx.logged_summaries) > self.used:
            self.used = len(ctx.logged_summaries)
            return ctx.logged_summaries[-1].summary, "logged"
        body = structured_summary(items) if structured else freeform_summary(items)
        return body, "extractive"


@dataclass(frozen=True)
class TranscriptStyle:
    """How a harness serializes a conversation for a fresh summarizer request."""

    user: str
    assistant: str
    thinking: str
    call: str
    result: str
    error: str | None = None
    """Label of a failed tool's result (None: `result`'s)."""
    cut: str = "\n[... {n} more characters truncated]"
    """Appended to a tool result cut short (`{n}`: the characters cut)."""
    before: str = ""
    after: str = ""
    """Around the whole transcript."""
    joined_calls: bool = False
    """A message's tool calls on one line, each `name(key=json, …)`, joined by "; " (pi);
    otherwise one line per call, `name(json)`."""


_STYLES = {
    # pi-mono @83378aad utils.ts:108-165; compaction.ts puts it in <conversation> tags.
    "pi": TranscriptStyle(
        "[User]: ",
        "[Assistant]: ",
        "[Assistant thinking]: ",
        "[Assistant tool calls]: ",
        "[Tool result]: ",
        cut="\n\n[... {n} more characters truncated]",
        before="<conversation>\n",
        after="\n</conversation>",
        joined_calls=True,
    ),
    # sst/opencode @31e22f65 packages/core/src/session: the prepend-mode prompt opens with it.
    "opencode": TranscriptStyle(
        "[User]: ",
        "[Assistant]: ",
        "[Assistant reasoning]: ",
        "[Assistant tool call]: ",
        "[Tool result]: ",
        error="[Tool error]: ",
        cut="\n[truncated]",
        before="Here is the conversation so far:\n\n<conversation>\n",
        after="\n</conversation>",
    ),
    "aider": TranscriptStyle(
        "# USER\n", "# ASSISTANT\n", "# ASSISTANT\n", "# ASSISTANT\n", "# USER\n"
    ),
    "goose": TranscriptStyle(
        "[user]: ", "[assistant]: ", "[assistant]: ", "[assistant]: ", "[tool]: "
    ),
    "plain": TranscriptStyle(
        "User: ", "Assistant: ", "Assistant (thinking): ", "Tool call: ", "Tool result: "
    ),
}


def _keyword_call(call: Block) -> str:
    """`name(key=json, …)`: a tool call as pi's serializer writes it."""
    args = call.arguments if isinstance(call.arguments, dict) else {"input": call.arguments}
    pairs = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return f"{call.name}({pairs})"


def transcript(items: Sequence[Item], style: str = "plain", result_chars: int | None = 2000) -> str:
    """`items` serialized as one text, the way harnesses feed a fresh summarizer request.
    Tool results longer than `result_chars` are cut, as pi's and opencode's serializers do
    (None: sent whole, as Goose and Aider send them). Messages known only by their size are
    left out: their text is a placeholder (`fresh_call` sends them by size)."""
    form = _STYLES[style]
    # Labels and texts as separate parts of one join: a `label + text` per line would copy the
    # whole transcript once more before the join (up to ~1 MB of a summarizer call's peak).
    parts: list[str] = []
    for item in items:
        if isinstance(item, AssistantItem):
            for b in item.blocks:
                if b.type == "text" and b.text:
                    parts += ("\n\n", form.assistant, b.text)
                elif b.type == "thinking" and b.text:
                    parts += ("\n\n", form.thinking, b.text)
                elif b.type == "tool_call" and not form.joined_calls:
                    parts += ("\n\n", form.call, b.rendered())
            calls = item.tool_calls if form.joined_calls else ()
            if calls:
                parts += ("\n\n", form.call, "; ".join(map(_keyword_call, calls)))
        elif isinstance(item, ToolResultItem):
            out = item.output
            if result_chars is not None and len(out) > result_chars:
                out = out[:result_chars] + form.cut.format(n=len(out) - result_chars)
            label = form.error if item.is_error and form.error else form.result
            parts += ("\n\n", label, out)
        elif not (isinstance(item, UserItem) and item.estimated_tokens):
            parts += ("\n\n", form.user, item.text)
    parts[:1] = [form.before]  # the first separator
    parts.append(form.after)
    return "".join(parts)


def fresh_call(
    items: Sequence[Item],
    instruction: str,
    summary: str,
    style: str = "plain",
    result_chars: int | None = 2000,
    model: str | None = None,
) -> SummarizerCall:
    """A summarizer request that does not share the main prefix (no main system prompt, tool
    definitions or unlogged head): the transcript serialized into one user message, then the
    summarizer's prompt. The context the log holds only by size follows the transcript at its
    estimated size (a placeholder in the text would count a few tokens for thousands)."""
    body = UserItem(transcript(items, style, result_chars), injected=True)
    unlogged = tuple(i for i in items if isinstance(i, UserItem) and i.estimated_tokens)
    return SummarizerCall(
        input_items=(body,),
        instruction=instruction,
        summary=summary,
        reuse_main_prefix=False,
        unlogged=unlogged,
        model=model,
    )


def forked_call(
    view: Sequence[Item], instruction: str, summary: str, with_tools: bool = True
) -> SummarizerCall:
    """A summarizer request that re-sends the main thread's view (same system + tools) with the
    summary prompt appended: it reads the main thread's cache (`with_tools=False`: sent without
    the tool definitions, it cannot)."""
    return SummarizerCall(
        input_items=tuple(view),
        instruction=instruction,
        summary=summary,
        reuse_main_prefix=True,
        with_tools=with_tools,
    )


def event_indexes(item: Item) -> tuple[int, ...]:
    """The log events an item of the view stands for: a summary, the ones it replaced (it is
    no event itself); an item the log does not hold (event index -1), none."""
    if isinstance(item, SummaryItem):
        return item.replaces
    index = getattr(item, "event_index", -1)
    return (index,) if index >= 0 else ()


def summary_item(
    text: str, replaced: Iterable[Item], source: str = "extractive", role: str = "user"
) -> SummaryItem:
    """A summary of `replaced`, naming the log events they stand for, each once: a summary that
    folds an earlier one replaces what that one replaced (Codex's also a user message the
    earlier compaction kept beside it)."""
    indexes = tuple(dict.fromkeys(i for item in replaced for i in event_indexes(item)))
    return SummaryItem(text=text, replaces=indexes, source=source, role=role)  # type: ignore[arg-type]


class Seen:
    """How much of a thread's history a strategy instance has already processed.

    The engine passes a thread's history as one list that only grows by appending, so a
    strategy can keep what it derived from the items it saw and process only the new ones. A
    history that is not the one seen before grown by appending (shorter, or its first item or
    the last item seen is another object: a test or plug-in calling the instance on another
    list) starts over from 0, so what the strategy derives stays a function of the history it
    was given."""

    def __init__(self) -> None:
        self.count = 0
        self._first: Item | None = None
        self._last: Item | None = None

    def sync(self, history: Sequence[Item]) -> int:
        """Index of the first item of `history` not seen yet (0: start over); then marks every
        item of `history` seen."""
        seen = self.count
        if seen and (
            len(history) < seen
            or history[0] is not self._first
            or history[seen - 1] is not self._last
        ):
            seen = 0
        self.count = len(history)
        if history:
            self._first, self._last = history[0], history[-1]
        return seen


class OneHistory:
    """A strategy instance that answers for one history at a time: given another history than
    the one it saw grown (see `Seen`), it is rebuilt before it answers.

    The engine never does that (one instance per thread, one list that only grows), but a
    library user or a test may call an instance on a second list. Each family resetting every
    piece of its state on `sync() == 0` missed some (a summary, the results already reported as
    aged); here what an instance sends is by construction what a new one sends."""

    __slots__ = ("_build", "_seen", "_strategy")

    def __init__(self, build: Callable[[], Strategy]) -> None:
        self._build = build
        self._strategy = build()
        self._seen: Seen | None = None  # None: not called yet

    def __call__(self, history: Sequence[Item], ctx: StrategyContext) -> View | list[Item]:
        if self._seen is None:
            self._seen = Seen()
            self._seen.sync(history)
        elif self._seen.sync(history) == 0:
            self._strategy = self._build()
        return self._strategy(history, ctx)


class GrownView:
    """A view kept across requests by a strategy that maps each history item to what it shows:
    `shown[n]` is what `history[n]` shows now (None: left out of the request).

    Only the new items need mapping (see `Seen`), plus the few earlier positions a rule
    changes; the request is then copied at C speed instead of rebuilt item by item. Strategies
    keep their indexes (positions by event index, by call id…) next to it and clear them when
    `sync` returns 0."""

    def __init__(self) -> None:
        self.shown: list[Item | None] = []
        self.left_out = 0
        """How many entries of `shown` are None."""
        self._seen = Seen()

    def sync(self, history: Sequence[Item]) -> int:
        """Index of the first item of `history` not mapped yet (0: the view was reset). The
        caller then appends one entry per new item, in order."""
        start = self._seen.sync(history)
        if start == 0:
            self.shown, self.left_out = [], 0
        return start

    def reset(self) -> None:
        """Forget every mapped item: the next `sync` returns 0."""
        self.shown, self.left_out, self._seen = [], 0, Seen()

    def append(self, item: Item | None) -> None:
        self.shown.append(item)
        if item is None:
            self.left_out += 1

    def set(self, n: int, item: Item | None) -> None:
        """Show `item` at position `n` from now on."""
        self.left_out += (item is None) - (self.shown[n] is None)
        self.shown[n] = item

    def items(self) -> list[Item]:
        """The request's items (a new list: the engine may append to it)."""
        if self.left_out:
            return list(filter(None, self.shown))  # items are always truthy
        return list(self.shown)  # type: ignore[arg-type]


class ResultPositions:
    """Event index → the history positions of the tool results carrying it, kept as the history
    grows (`Seen`)."""

    def __init__(self) -> None:
        self._seen = Seen()
        self._at: dict[int, list[int]] = {}

    def sync(self, history: Sequence[Item]) -> None:
        """Map the tool results added to `history` since the last call."""
        start = self._seen.sync(history)
        if start == 0:
            self._at.clear()
        at = self._at
        for n in range(start, len(history)):
            item = history[n]
            if isinstance(item, ToolResultItem):
                at.setdefault(item.event_index, []).append(n)

    def of(self, event_indexes: Iterable[int]) -> list[int]:
        """The positions of the results of these events (as of the last `sync`)."""
        return [n for e in event_indexes for n in self._at.get(e, ())]


class ReplacedResults:
    """A `GrownView` of a rule that replaces chosen tool results for good (cleared, pruned,
    masked…): every result whose event index is in `marked` shows `replace(result)`. After
    adding event indexes to `marked`, the strategy calls `update` with them."""

    def __init__(self, marked: Container[int], replace: Callable[[ToolResultItem], Item]) -> None:
        self.marked = marked
        self._replace = replace
        self._view = GrownView()
        self._positions = ResultPositions()

    def sync(self, history: Sequence[Item]) -> None:
        """Map the items added to `history` since the last call."""
        view, marked = self._view, self.marked
        start = view.sync(history)
        self._positions.sync(history)
        for n in range(start, len(history)):
            item = history[n]
            if isinstance(item, ToolResultItem) and item.event_index in marked:
                item = self._replace(item)
            view.append(item)

    def update(self, history: Sequence[Item], event_indexes: Iterable[int]) -> None:
        """Show the results carrying these (newly marked) event indexes replaced."""
        for n in self._positions.of(event_indexes):
            self._view.set(n, self._replace(history[n]))  # type: ignore[arg-type]

    def items(self) -> list[Item]:
        return self._view.items()


class AgingView:
    """A `GrownView` of a rule that rewrites, for good, the items `matches` picks once they are
    older than the `keep` most recent of them (items only age, oldest first)."""

    def __init__(self, matches: Callable[[Item], bool]) -> None:
        self._matches = matches
        self._view = GrownView()
        self._positions: list[int] = []  # positions of the matching items
        self._aged = 0  # _positions[:_aged] are rewritten already

    def sync(self, history: Sequence[Item], keep: int) -> tuple[list[int], int]:
        """Map the items added to `history` since the last call; returns the positions that
        aged since (for the caller to `set`) and how many matching items are old now."""
        view, positions = self._view, self._positions
        start = view.sync(history)
        if start == 0:
            positions.clear()
            self._aged = 0
        for n in range(start, len(history)):
            item = history[n]
            if self._matches(item):
                positions.append(n)
            view.append(item)
        old = max(0, len(positions) - keep)
        newly = positions[self._aged : old]
        self._aged = max(self._aged, old)
        return newly, old

    def set(self, n: int, item: Item) -> None:
        self._view.set(n, item)

    def items(self) -> list[Item]:
        return self._view.items()


class AnsweredIds:
    """`answered_ids(history)` kept as the history grows (see `Seen`)."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self._seen = Seen()

    def sync(self, history: Sequence[Item]) -> set[str]:
        start = self._seen.sync(history)
        if start == 0:
            self.ids = set()
        self.ids.update(i.call_id for i in history[start:] if isinstance(i, ToolResultItem))
        return self.ids


class MessageGroups:
    """`message_groups(history)` kept as the history grows (earlier groups never change: a new
    item only extends the last group or starts one)."""

    def __init__(self) -> None:
        self.groups: list[list[int]] = []
        self.group_of: list[int] = []
        """Group index of each history position."""
        self._seen = Seen()

    def sync(self, history: Sequence[Item]) -> list[list[int]]:
        start = self._seen.sync(history)
        if start == 0:
            self.groups, self.group_of = [], []
        groups = self.groups
        for n in range(start, len(history)):
            if (
                isinstance(history[n], AssistantItem)
                or not groups
                or isinstance(history[groups[-1][-1]], AssistantItem)
            ):
                groups.append([n])
            else:
                groups[-1].append(n)
            self.group_of.append(len(groups) - 1)
        return groups


class PairedView:
    """`repair_pairs(kept, history)` kept across requests, for rules that leave out some items
    (deleted messages, forgotten events): `keep(n, item)` says what history position `n` shows
    before the pairs are repaired (None: left out). Per call id it counts the kept calls, the
    kept results and the results in the history, and re-checks a position only when one of
    its counts crosses zero, so a request costs its new items. After the rule changed what it
    keeps, `update` re-maps the positions concerned (`refresh`: all of them)."""

    def __init__(self, keep: Callable[[int, Item], Item | None]) -> None:
        self._keep = keep
        self._seen = Seen()
        self._clear()

    def _clear(self) -> None:
        self.kept: list[Item | None] = []
        self.shown: list[Item | None] = []
        self.left_out = 0
        self._calls: dict[str | None, int] = {}  # call id → kept calls of it
        self._results: dict[str, int] = {}  # call id → kept results of it
        self._answered: dict[str, int] = {}  # call id → results of it in the history
        # call id → positions that call it / answer it (may also list positions that no longer
        # do: re-checking them changes nothing)
        self._callers: dict[str | None, list[int]] = {}
        self._answers: dict[str, list[int]] = {}
        self._dirty: set[int] = set()
        self._tokens: tuple[object, int] | None = None  # (counter, tokens of the shown items)

    def sync(self, history: Sequence[Item]) -> None:
        """Map the items added to `history` since the last call."""
        start = self._seen.sync(history)
        if start == 0:
            self._clear()
        self._add(history, start)

    def refresh(self, history: Sequence[Item]) -> None:
        """Map every position again (the rule's state changed)."""
        self._seen.sync(history)
        self._clear()
        self._add(history, 0)

    def update(self, history: Sequence[Item], positions: Iterable[int]) -> None:
        """Map these positions again (the rule changed what they keep)."""
        self.sync(history)
        for n in positions:
            old, new = self.kept[n], self._keep(n, history[n])
            if new is not old:
                self._count(n, old, -1)
                self._count(n, new, 1)
                self.kept[n] = new
                self._dirty.add(n)
        self._settle()

    def _count(self, n: int, kept: Item | None, delta: int) -> None:
        """Add (or remove) what position `n` keeping `kept` contributes to the counts."""
        if isinstance(kept, AssistantItem):
            for b in kept.tool_calls:
                if delta > 0:
                    self._callers.setdefault(b.call_id, []).append(n)
                self._bump(self._calls, b.call_id, delta, self._answers)
        elif isinstance(kept, ToolResultItem):
            if delta > 0:
                self._answers.setdefault(kept.call_id, []).append(n)
            self._bump(self._results, kept.call_id, delta, self._callers)

    def _bump(self, counts: dict, call_id: object, delta: int, affected: dict) -> None:
        before = counts.get(call_id, 0)
        counts[call_id] = before + delta
        if (before > 0) != (before + delta > 0):
            self._dirty.update(affected.get(call_id, ()))

    def _add(self, history: Sequence[Item], start: int) -> None:
        for n in range(start, len(history)):
            item = history[n]
            if isinstance(item, ToolResultItem):
                self._bump(self._answered, item.call_id, 1, self._callers)
            kept = self._keep(n, item)
            self.kept.append(kept)
            self.shown.append(None)
            self.left_out += 1
            self._count(n, kept, 1)
            self._dirty.add(n)
        self._settle()

    def _settle(self) -> None:
        tokens = self._tokens
        for n in self._dirty:
            item = self.kept[n]
            if isinstance(item, ToolResultItem):
                if not self._calls.get(item.call_id):
                    item = None
            elif isinstance(item, AssistantItem):
                drop = {
                    b.call_id
                    for b in item.tool_calls
                    if not self._results.get(b.call_id) and self._answered.get(b.call_id)  # type: ignore[arg-type]
                }
                item = strip_calls(item, drop)  # type: ignore[arg-type]
            old = self.shown[n]
            if item is not old:
                self.left_out += (item is None) - (old is None)
                self.shown[n] = item
                if tokens is not None:
                    count = tokens[0]
                    size = (count_item(item, count) if item else 0) - (  # type: ignore[arg-type]
                        count_item(old, count) if old else 0  # type: ignore[arg-type]
                    )
                    tokens = (count, tokens[1] + size)
        self._tokens = tokens
        self._dirty.clear()

    def items(self) -> list[Item]:
        """The request's items (a new list: the engine may append to it)."""
        if self.left_out:
            return list(filter(None, self.shown))  # items are always truthy
        return list(self.shown)  # type: ignore[arg-type]

    def tokens(self, ctx: StrategyContext) -> int:
        """`framed_tokens(self.items(), ctx)`: the content's count kept up to date as
        positions change, the framing walked (it depends on each item's neighbour)."""
        if self._tokens is None or self._tokens[0] != ctx.count_tokens:
            self._tokens = (ctx.count_tokens, items_tokens(filter(None, self.shown), ctx))
        return self._tokens[1] + items_framing(filter(None, self.shown), ctx)


class Forgetting:
    """History positions forgotten for good (OpenHands' condensers), and the others in order,
    kept as the history grows: listing the positions not forgotten at each forgetting then
    costs what is remembered, not a walk over the whole history."""

    def __init__(self) -> None:
        self.forgotten: set[int] = set()
        self._remembered: list[int] = []
        self._upto = 0
        """`_remembered` lists the positions below this one that are not forgotten."""

    def remembered(self, length: int) -> list[int]:
        """The positions of a history of `length` items that are not forgotten, ascending."""
        if length < self._upto:  # another, shorter history: positions are only numbers
            self._remembered = [n for n in range(length) if n not in self.forgotten]
        else:
            forgotten = self.forgotten
            self._remembered.extend(n for n in range(self._upto, length) if n not in forgotten)
        self._upto = length
        return list(self._remembered)

    def forget(self, positions: Iterable[int]) -> None:
        gone = set(positions)
        self.forgotten.update(gone)  # the same set: rules hold it
        self._remembered = [n for n in self._remembered if n not in gone]


class HeadTokens:
    """`head_tokens(ctx)` (the system prompt, tool definitions and hidden prefix), memoized
    while the system prompt, the tool list object, the counter, the framing and the hidden
    size stay the same."""

    def __init__(self) -> None:
        self._memo: tuple[str, object, object, int, int, int] | None = None

    def __call__(self, ctx: StrategyContext) -> int:
        memo = self._memo
        if memo is None or not (
            memo[0] == ctx.system and memo[1] is ctx.tools and memo[2] == ctx.count_tokens
            and memo[3] == ctx.hidden_tokens and memo[4] == ctx.message_overhead
        ):
            memo = self._memo = (
                ctx.system, ctx.tools, ctx.count_tokens, ctx.hidden_tokens,
                ctx.message_overhead, head_tokens(ctx),
            )
        return memo[5]


class TokenSums:
    """Prefix sums of `framed_tokens` over a thread's growing history (see `Seen`), recomputed
    only when the request's token counter or framing changes (another model)."""

    def __init__(self) -> None:
        self.sums: list[int] = [0]
        """`sums[n]`: `framed_tokens(history[:n])`."""
        self._seen = Seen()
        self._count: tuple[object, int, int] | None = None
        self.head = HeadTokens()
        """`request_tokens` of no items."""

    def sync(self, history: Sequence[Item], ctx: StrategyContext) -> list[int]:
        """The prefix sums for `history` (one more entry than items)."""
        start = self._seen.sync(history)
        key = (ctx.count_tokens, ctx.message_overhead, ctx.tool_call_overhead)
        if start == 0 or key != self._count:
            self._count, self.sums, start = key, [0], 0
        sums, count = self.sums, ctx.count_tokens
        total = sums[-1]
        after_result = start > 0 and isinstance(history[start - 1], ToolResultItem)
        for item in history[start:]:
            total += count_item(item, count) + item_framing(item, after_result, ctx)
            after_result = isinstance(item, ToolResultItem)
            sums.append(total)
        return sums

    def request(self, history: Sequence[Item], ctx: StrategyContext) -> int:
        """`request_tokens(history, ctx)`."""
        return self.sync(history, ctx)[-1] + self.head(ctx)


class CharSums:
    """Prefix sums of `item_chars` over a thread's growing history (see `Seen`)."""

    def __init__(self) -> None:
        self.sums: list[int] = [0]
        """`sums[n]`: characters of `history[:n]`."""
        self._seen = Seen()

    def sync(self, history: Sequence[Item]) -> list[int]:
        """The prefix sums for `history` (one more entry than items)."""
        start = self._seen.sync(history)
        if start == 0:
            self.sums = [0]
        sums = self.sums
        total = sums[-1]
        for item in history[start:]:
            total += item_chars(item)
            sums.append(total)
        return sums

    def since(self, history: Sequence[Item], start: int) -> int:
        """`chars(history[start:])`."""
        sums = self.sync(history)
        return sums[-1] - sums[min(start, len(history))]


@dataclass
class Frozen:
    """State of a rewrite-at-events strategy: `head` stands for `history[:covered]`; everything
    after is sent verbatim (append-only between events).

    `tokens` / `request_tokens` / `chars` size the view from prefix sums over the history, so a
    strategy that checks its trigger on every request does not re-add every item of it."""

    head: list[Item] = field(default_factory=list)
    covered: int = 0
    _tokens: TokenSums = field(default_factory=TokenSums, repr=False, compare=False)
    _chars: CharSums = field(default_factory=CharSums, repr=False, compare=False)
    _head_sizes: dict[str, tuple[list[Item], object, int]] = field(
        default_factory=dict, repr=False, compare=False
    )
    """Size of `head` per unit: (the head it was measured on, the counter, the size)."""

    def view(self, history: Sequence[Item]) -> list[Item]:
        return [*self.head, *history[self.covered :]]

    def reset(self, head: Sequence[Item], history: Sequence[Item]) -> None:
        self.head = list(head)
        self.covered = len(history)

    def _head_size(
        self, unit: str, counter: object, measure: Callable[[Sequence[Item], bool], int]
    ) -> int:
        """`measure(self.head, False)`, memoized. `measure(items, after_result)` adds up over
        items (`after_result`: the item before them is a tool result), so a head that extends
        the one measured last (chained summaries piling up) measures only its new items:
        otherwise each compaction would re-measure every earlier summary."""
        memo = self._head_sizes.get(unit)
        head = self.head
        if memo is not None and memo[1] == counter and memo[0] != head:
            done = len(memo[0])
            if done <= len(head) and head[:done] == memo[0]:  # identity, at C speed
                after = done > 0 and isinstance(head[done - 1], ToolResultItem)
                memo = (list(head), counter, memo[2] + measure(head[done:], after))
                self._head_sizes[unit] = memo
        if memo is None or memo[1] != counter or memo[0] != head:
            memo = self._head_sizes[unit] = (list(head), counter, measure(head, False))
        return memo[2]

    def tokens(self, history: Sequence[Item], ctx: StrategyContext) -> int:
        """`framed_tokens(self.view(history), ctx)`."""
        sums = self._tokens.sync(history, ctx)
        head = self._head_size(
            "tokens",
            (ctx.count_tokens, ctx.message_overhead, ctx.tool_call_overhead),
            lambda items, after: items_tokens(items, ctx) + items_framing(items, ctx, after),
        )
        covered = min(self.covered, len(history))
        tail = sums[-1] - sums[covered]
        if 0 < covered < len(history) and isinstance(history[covered], ToolResultItem):
            # The first item after the head was framed after the history's item before it;
            # in the view it follows the head's last.
            first = history[covered]
            was = isinstance(history[covered - 1], ToolResultItem)
            now = bool(self.head) and isinstance(self.head[-1], ToolResultItem)
            tail += item_framing(first, now, ctx) - item_framing(first, was, ctx)
        return head + tail

    def request_tokens(self, history: Sequence[Item], ctx: StrategyContext) -> int:
        """`request_tokens(self.view(history), ctx)`."""
        return self.tokens(history, ctx) + self._tokens.head(ctx)

    def chars(self, history: Sequence[Item]) -> int:
        """`chars(self.view(history))`."""
        head = self._head_size("chars", None, lambda items, _: chars(items))
        return head + self._chars.since(history, self.covered)


class ItemMemo:
    """Per-strategy-instance memo of a pure function of one history item (by identity)."""

    def __init__(self) -> None:
        self._memo: weakref.WeakKeyDictionary[Item, Item] = weakref.WeakKeyDictionary()

    def get(self, item: Item, fn) -> Item:  # type: ignore[no-untyped-def]
        hit = self._memo.get(item)
        if hit is None:
            hit = self._memo[item] = fn(item)
        return hit


def trigger_at_user_turn(history: Sequence[Item]) -> bool:
    """True when the request starts a new prompt (the last item is a real user message after
    some earlier exchange): where harnesses that check between prompts run."""
    return (
        bool(history)
        and is_real_user(history[-1])
        and any(isinstance(i, AssistantItem) for i in history)
    )
