"""Generators shared by the test suite: hypothesis strategies and deterministic builders.

- `log_dicts()` / `log_events()`: random `replay-log` lines (as dicts, or parsed) of every event
  type, every field of the event models possible (derived from their `model_fields`), with
  unknown extra fields at event, block, tool-definition and usage level (lossless round trip).
- `histories()` / `edited_pair()`: random view items (what a strategy returns) and an edited
  successor of a history (for the prefix-diff properties).
- `replay_sessions()`: random but well-formed sessions the engine can replay (a request after
  every tool round, every call answered before the next request, unique message texts).
- `build_session()`: the builder behind `replay_sessions()`; `deterministic_session()` is a fixed
  log with fixed timestamps, used for snapshots.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from replay.log import (
    FORMAT_VERSION,
    AssistantMessage,
    RequestMarker,
    Session,
    SessionHeader,
    TextBlock,
    ThreadStart,
    ToolCallBlock,
    ToolDef,
    ToolResult,
    UserMessage,
    parse_event,
)
from replay.log._events import EVENT_TYPES
from replay.strategies import AssistantItem, Block, SummaryItem, ToolResultItem, UserItem

BASE_TS = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)

# ---------------------------------------------------------------------------------------------
# Text


# A small alphabet makes token-boundary coincidences (one text a token-prefix of another,
# repeated pieces) likely; the general one covers any Unicode.
_TRICKY = st.text(alphabet=st.sampled_from(list('ab a\n{}"é字🙂 0')), max_size=24)
texts = st.one_of(_TRICKY, st.text(max_size=40))


def _corpus(n_chars: int) -> str:
    rng = random.Random(42)
    words = ["task", "store", "id", "return", "const", "assert", "JSON", "=>", "null", "{", "}"]
    parts: list[str] = []
    size = 0
    line = 0
    while size < n_chars:
        line += 1
        piece = f"{line:04d}: " + " ".join(rng.choice(words) for _ in range(rng.randint(3, 9)))
        parts.append(piece)
        size += len(piece) + 1
    return "\n".join(parts)


_CORPUS = _corpus(80_000)


def filler(n_chars: int, seed: int) -> str:
    """Deterministic, code-like text of exactly `n_chars` characters (at most 40,000)."""
    start = (seed * 7919) % 40_000
    return _CORPUS[start : start + n_chars]


@st.composite
def tool_outputs(draw: st.DrawFn) -> str:
    """Tool output of a realistic spread of sizes: empty, tiny, medium and huge."""
    kind = draw(st.sampled_from(["empty", "tiny", "medium", "huge"]))
    if kind == "empty":
        return ""
    if kind == "tiny":
        return draw(texts)
    seed = draw(st.integers(0, 10_000))
    n = draw(st.integers(200, 3000)) if kind == "medium" else draw(st.integers(8_000, 24_000))
    return filler(n, seed)


# ---------------------------------------------------------------------------------------------
# Log events with unknown extra fields (round trip)

_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
extra_fields = st.dictionaries(
    st.from_regex(r"x_[a-z0-9_]{1,8}", fullmatch=True), json_values, max_size=2
)
timestamps = st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2099, 12, 31),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), UTC]),
)
_ids = st.from_regex(r"[a-z]{1,4}-[0-9]{1,3}", fullmatch=True)
_opt_str = st.none() | st.text(max_size=16)


def _with_extras(base: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    return st.tuples(base, extra_fields).map(lambda pair: {**pair[0], **pair[1]})


_BY_FIELD: dict[str, st.SearchStrategy] = {
    "thread": st.sampled_from(["main", "sub-1"]),
    "id": _ids,
    "call_id": _ids,
    "request_id": _ids,
    "thread_id": _ids,
    "parent_call_id": st.none() | _ids,
    "replaces": st.lists(_ids, max_size=4),
    "trigger": st.none() | st.sampled_from(["auto", "manual"]),
}
"""Fields drawn from realistic values rather than from their type alone."""
_BY_MODEL_FIELD: dict[tuple[str, str], st.SearchStrategy] = {
    ("SessionHeader", "version"): st.integers(1, FORMAT_VERSION),  # others are refused
    ("SessionHeader", "provider"): st.sampled_from(["anthropic", "openai", "google"]),
    ("SessionHeader", "model"): st.sampled_from(["claude-sonnet-4-5", "gpt-5", "gemini-2.5-flash"]),
    ("Usage", "cost_usd"): st.none() | st.decimals(0, 100, places=6).map(str),
}


def _values(annotation: Any, metadata: Sequence[Any] = ()) -> st.SearchStrategy:
    """Any valid value of a field annotation (JSON-compatible: what a log line can hold)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        more = [*metadata]
        for m in args[1:]:
            more.extend(m.metadata if isinstance(m, FieldInfo) else [m])
        return _values(args[0], more)
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (Union, UnionType):
        return st.one_of([_values(a, metadata) for a in args])
    if annotation is type(None):
        return st.none()
    if origin is list:
        return st.lists(_values(args[0]), max_size=3)
    if origin is dict and args[0] is str:
        return st.dictionaries(st.text(max_size=6), _values(args[1]), max_size=3)
    if annotation is Any:
        return json_values
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        low = max((m.ge for m in metadata if isinstance(m, annotated_types.Ge)), default=-(10**6))
        return st.integers(low, 10**7)
    if annotation is str:
        return texts
    if annotation is datetime:
        return timestamps
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_dicts(annotation)
    raise TypeError(f"no generator for fields of type {annotation!r}: add one to tests/gen.py")


@functools.cache
def model_dicts(model: type[BaseModel]) -> st.SearchStrategy[dict]:
    """JSON dicts of a log model derived from its `model_fields`, so a field added to the
    format is generated (and round-tripped) without touching this file: required fields and
    the `type` discriminator always, every other field sometimes; plus unknown extra fields."""
    required: dict[str, st.SearchStrategy] = {}
    optional: dict[str, st.SearchStrategy] = {}
    for name, info in model.model_fields.items():
        if (model.__name__, name) in _BY_MODEL_FIELD:
            strategy = _BY_MODEL_FIELD[model.__name__, name]
        elif name in _BY_FIELD:
            strategy = _BY_FIELD[name]
        else:
            strategy = _values(info.annotation, info.metadata)
        (required if info.is_required() or name == "type" else optional)[name] = strategy
    return _with_extras(st.fixed_dictionaries(required, optional=optional))


header_dicts = model_dicts(SessionHeader)
event_dicts = st.one_of(
    [model_dicts(model) for model in EVENT_TYPES.values() if model is not SessionHeader]
)


@st.composite
def log_dicts(draw: st.DrawFn, max_events: int = 12) -> tuple[dict, list[dict]]:
    """A header and events as the JSON dicts of their lines (with the random set of fields
    given, every field of the models possible, and unknown extra fields at every level)."""
    return draw(header_dicts), draw(st.lists(event_dicts, max_size=max_events))


@st.composite
def log_events(draw: st.DrawFn, max_events: int = 12) -> tuple[SessionHeader, list[Any]]:
    """A header and events parsed from `log_dicts`."""
    header, events = draw(log_dicts(max_events))
    return parse_event(header, "<gen>", 1), [
        parse_event(d, "<gen>", n + 2) for n, d in enumerate(events)
    ]


# ---------------------------------------------------------------------------------------------
# View items (render / prefix-diff properties)


@st.composite
def assistant_items(draw: st.DrawFn, call_ids: list[str]) -> AssistantItem:
    blocks_: list[Block] = []
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["text", "thinking", "redacted"]))
        if kind == "redacted":  # thinking whose text the log does not hold, only its size
            blocks_.append(Block("thinking", estimated_tokens=draw(st.integers(0, 300))))
        else:
            blocks_.append(Block(kind, text=draw(texts)))
    for _ in range(draw(st.integers(0, 3))):
        call_id = f"c{len(call_ids)}"
        call_ids.append(call_id)
        name = draw(st.sampled_from(["read_file", "run_tests", "write_file"]))
        args = draw(st.dictionaries(st.sampled_from(["path", "n", "content"]), texts, max_size=2))
        blocks_.append(Block("tool_call", call_id=call_id, name=name, arguments=args))
    return AssistantItem(blocks=tuple(blocks_))


@st.composite
def histories(draw: st.DrawFn, max_items: int = 10) -> list:
    """Random view items: users, assistants (text / thinking / tool calls), tool results of any
    size (parallel results are merged into one user message by the renderer), summaries."""
    items: list = []
    call_ids: list[str] = []
    for _ in range(draw(st.integers(1, max_items))):
        kind = draw(st.sampled_from(["user", "assistant", "result", "result", "summary"]))
        if kind == "user":
            items.append(UserItem(draw(texts)))
        elif kind == "assistant":
            items.append(draw(assistant_items(call_ids)))
        elif kind == "result":
            call_id = f"r{len(items)}"
            items.append(ToolResultItem(call_id, "read_file", draw(tool_outputs())))
        else:
            role = draw(st.sampled_from(["user", "assistant"]))
            items.append(SummaryItem(draw(texts), role=role))
    return items


@st.composite
def edited_pair(draw: st.DrawFn) -> tuple[list, list, str, str]:
    """(previous history, current history, previous system, current system).

    The current history is the previous one with zero or more random edits at random positions
    (drop, replace, insert, shorten or rewrite a tool result, rewrite a text), then an optional
    append-only extension.
    """
    prev = draw(histories())
    cur = list(prev)
    call_ids: list[str] = ["x"]
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(["drop", "replace", "insert", "output", "prefix", "text"]))
        at = draw(st.integers(0, max(0, len(cur) - 1)))
        if op == "drop" and len(cur) > 1:
            del cur[at]
        elif op == "replace" and cur:
            cur[at] = draw(histories(max_items=1))[0]
        elif op == "insert":
            cur.insert(at, draw(histories(max_items=1))[0])
        elif op in ("output", "prefix") and cur and isinstance(cur[at], ToolResultItem):
            old = cur[at]
            cut = draw(st.integers(0, len(old.output)))
            new = old.output[:cut] + ("" if op == "prefix" else draw(texts))
            cur[at] = ToolResultItem(old.call_id, old.tool_name, new)
        elif op == "text" and cur and isinstance(cur[at], UserItem | SummaryItem):
            old = cur[at]
            cut = draw(st.integers(0, len(old.text)))
            cur[at] = type(old)(old.text[:cut] + draw(texts))
        elif op == "text" and cur and isinstance(cur[at], AssistantItem):
            cur[at] = draw(assistant_items(call_ids))
    cur.extend(draw(st.lists(histories(max_items=3), max_size=2).map(lambda xs: sum(xs, []))))
    if not cur:
        cur = [UserItem("")]
    system = draw(st.sampled_from(["You are a coding agent.", ""]))
    new_system = draw(st.sampled_from([system, system, system + " Be brief."]))
    return prev, cur, system, new_system


# ---------------------------------------------------------------------------------------------
# Replayable sessions (engine / strategy properties)

TOOLS = [
    ToolDef(
        name="read_file",
        description="Read a file.",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
    ),
    ToolDef(
        name="run_tests",
        description="Run the tests.",
        input_schema={"type": "object", "properties": {}},
    ),
]
SYSTEM = "You are a careful software engineering agent. Read before you write; run the tests."
PROVIDER_MODELS = {
    "openai": "gpt-5",
    "anthropic": "claude-sonnet-4-5",
    "google": "gemini-2.5-flash",
}


@dataclass
class Call:
    name: str
    arguments: dict
    output: str
    is_error: bool = False
    subagent: list[Turn] | None = None
    """When set, the call spawns a subagent thread whose turns run before the call's result."""


@dataclass
class Turn:
    """One request and the assistant response that answered it (plus what followed)."""

    text: str | None
    calls: list[Call] = field(default_factory=list)
    gap_s: float = 2.0
    """Seconds between the previous event and this request."""
    followup: str | None = None
    """A user message after the tool results (the human, or a harness reminder)."""
    steer: str | None = None
    """A user message sent while the tools ran: between the calls and their results (pi)."""


class _Writer:
    def __init__(self, start: datetime) -> None:
        self.clock = start
        self.events: list[Any] = []
        self.n_requests = 0
        self.n_calls = 0

    def at(self, seconds: float) -> datetime:
        self.clock += timedelta(seconds=seconds)
        return self.clock

    def add(self, event: Any) -> None:
        event.id = f"e{len(self.events) + 2:04d}"
        self.events.append(event)

    def turns(self, turns: Sequence[Turn], thread: str) -> None:
        for turn in turns:
            self.n_requests += 1
            rid = f"req-{self.n_requests:03d}"
            self.add(RequestMarker(ts=self.at(turn.gap_s), request_id=rid, thread=thread))
            blocks: list[Any] = [TextBlock(text=turn.text)] if turn.text is not None else []
            ids = []
            for call in turn.calls:
                self.n_calls += 1
                ids.append(f"call-{self.n_calls:03d}")
                blocks.append(ToolCallBlock(id=ids[-1], name=call.name, arguments=call.arguments))
            self.add(
                AssistantMessage(ts=self.at(1.5), blocks=blocks, request_id=rid, thread=thread)
            )
            if turn.steer is not None:
                self.add(UserMessage(ts=self.at(0.1), text=turn.steer, thread=thread))
            for call_id, call in zip(ids, turn.calls, strict=True):
                if call.subagent:
                    sub = f"sub-{call_id}"
                    self.add(
                        ThreadStart(
                            ts=self.at(0.1),
                            thread_id=sub,
                            parent_thread=thread,
                            parent_call_id=call_id,
                        )
                    )
                    self.add(
                        UserMessage(ts=self.at(0.1), text=call.arguments["prompt"], thread=sub)
                    )
                    self.turns(call.subagent, sub)
                self.add(
                    ToolResult(
                        ts=self.at(0.3),
                        call_id=call_id,
                        tool_name=call.name,
                        output=call.output,
                        is_error=call.is_error,
                        thread=thread,
                    )
                )
            if turn.followup is not None:
                self.add(UserMessage(ts=self.at(0.5), text=turn.followup, thread=thread))


def build_session(
    turns: Sequence[Turn],
    *,
    provider: str = "openai",
    model: str | None = None,
    task: str = "Fix the failing test.",
    system: str = SYSTEM,
    tools: Sequence[ToolDef] = TOOLS,
    start: datetime = BASE_TS,
    agent: str = "test-harness",
    session_id: str = "gen",
) -> Session:
    """A well-formed session: task, then one request per turn (each answered by its turn)."""
    header = SessionHeader(
        ts=start,
        id="e0001",
        session_id=session_id,
        agent=agent,
        provider=provider,
        model=model or PROVIDER_MODELS[provider],
        system=system,
        tools=list(tools),
    )
    w = _Writer(start)
    w.add(UserMessage(ts=w.at(0.01), text=task))
    w.turns(turns, "main")
    return Session(header=header, events=w.events, path="<generated>")


@st.composite
def turn_lists(draw: st.DrawFn, max_turns: int = 8, subagents: bool = True) -> list[Turn]:
    """Turns with unique texts (so distinct messages never render to identical blocks)."""
    n = draw(st.integers(1, max_turns))
    turns: list[Turn] = []
    for i in range(n):
        tag = f"[t{i}]"
        last = i == n - 1
        calls: list[Call] = []
        if not last:
            for j in range(draw(st.integers(0, 3))):
                name = draw(st.sampled_from(["read_file", "run_tests", "write_file"]))
                args = {"path": f"src/f{i}_{j}.js"} if name != "run_tests" else {"n": f"{i}-{j}"}
                sub = None
                if subagents and j == 0 and draw(st.integers(0, 9)) == 0:
                    name, args = "task", {"prompt": f"{tag} look around"}
                    sub = draw(turn_lists(max_turns=3, subagents=False))
                calls.append(
                    Call(name, args, draw(tool_outputs()), draw(st.booleans()), subagent=sub)
                )
        text = None if calls and draw(st.booleans()) else f"{tag} " + draw(texts)
        followup = None
        if not last and (not calls or draw(st.integers(0, 4)) == 0):
            followup = f"{tag} user: " + draw(texts)
        steer = None
        if calls and draw(st.integers(0, 5)) == 0:
            steer = f"{tag} steer: " + draw(texts)
        gap = draw(st.sampled_from([0, 1, 3, 30, 200, 299, 301, 600, 3700]))
        turns.append(Turn(text, calls, gap, followup, steer))
    return turns


@st.composite
def replay_sessions(
    draw: st.DrawFn, providers: Sequence[str] = tuple(PROVIDER_MODELS), max_turns: int = 8
) -> Session:
    provider = draw(st.sampled_from(list(providers)))
    task = "Please fix the bug. " + draw(texts)
    return build_session(draw(turn_lists(max_turns=max_turns)), provider=provider, task=task)


# ---------------------------------------------------------------------------------------------
# A fixed log (snapshots)


def deterministic_session(provider: str = "anthropic") -> Session:
    """Twelve requests over a small repo, fixed timestamps and contents; large enough that
    `truncate-500`, `age-truncate-500-keep-3`, `compact-at-12000-*` and `sliding-10` all act."""
    turns = [
        Turn("Let me look at the project.", [Call("list_files", {"path": "."}, filler(180, 1))]),
        Turn("Reading the API.", [Call("read_file", {"path": "src/api.js"}, filler(2600, 2))]),
        Turn("And the store.", [Call("read_file", {"path": "src/store.js"}, filler(1900, 3))]),
        Turn(None, [Call("run_tests", {}, "not ok 3 - round trip\n" + filler(3400, 4), True)]),
        Turn(
            "The id arrives as a string.",
            [Call("read_file", {"path": "test/a.js"}, filler(2200, 5))],
        ),
        Turn(
            "Two files at once.",
            [
                Call("read_file", {"path": "src/ser.js"}, filler(900, 6)),
                Call("read_file", {"path": "src/util.js"}, ""),
            ],
            gap_s=400,
        ),
        Turn("Fixing.", [Call("write_file", {"path": "src/api.js"}, "Wrote 1931 bytes")]),
        Turn("Checking.", [Call("read_file", {"path": "src/api.js"}, filler(2650, 7))]),
        Turn(None, [Call("run_tests", {}, "ok 3 - round trip\n" + filler(3100, 8))]),
        Turn("Green. One more look.", [Call("read_file", {"path": "README.md"}, filler(1500, 9))]),
        Turn("Done reading.", [], followup="Thanks, please summarize."),
        Turn("The id is now converted with Number(); all tests pass."),
    ]
    return build_session(
        turns,
        provider=provider,
        task="The test suite fails. Find the cause and fix it.",
        session_id="det",
        agent="test-harness",
    )
