"""The native log format, `replay-log` version 1: one JSON event per line.

The first line is a `session` header; every later line is one of the events below, told apart
by its `type`. Events are pydantic models with `extra="allow"`: a field this version does not
know is kept on the model and written back unchanged, so reading and writing a log loses nothing.

WARNING: field names and meanings are the file format. Change them only with a new `version`,
a migration in `_io.py`, and the round-trip tests.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AliasChoices, BaseModel, ConfigDict, Field, model_validator

FORMAT_NAME = "replay-log"
FORMAT_VERSION = 1
MAIN_THREAD = "main"


class SharedFieldsSet(set[str]):
    """A model's set of explicitly set fields (`model_fields_set`), shared by every model of a
    log read with the same fields (`share_fields_sets`): pydantic gives each model a set of its
    own, 200–730 bytes, ~0.5× the size of a log file in memory. A model copies it before one
    of its fields is assigned (`_Model.__setattr__`); anything else must not change it."""


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="allow", frozen=False, populate_by_name=True, use_attribute_docstrings=True
    )

    def model_post_init(self, context: Any) -> None:
        # The discriminator must be written even when it was left at its default, or the
        # line could not be read back (`exclude_unset` would drop it).
        cls = type(self)
        typed = _TYPED.get(cls)
        if typed is None:  # (`model_fields` is slow to read on a class: once per class)
            typed = _TYPED[cls] = "type" in cls.model_fields
        if typed:
            self.model_fields_set.add("type")

    def __setattr__(self, name: str, value: Any) -> None:
        # pydantic adds `name` to the fields set, or an unknown name to the extra fields: shared
        # ones are copied first.
        fields = self.__pydantic_fields_set__
        if type(fields) is SharedFieldsSet:
            object.__setattr__(self, "__pydantic_fields_set__", set(fields))
        if self.__pydantic_extra__ is _NO_EXTRA:
            object.__setattr__(self, "__pydantic_extra__", {})
        super().__setattr__(name, value)


_TYPED: dict[type, bool] = {}
"""Whether a model class has a `type` field (`_Model.model_post_init`, at every model made)."""

_NO_EXTRA: dict[str, Any] = {}
"""The extra fields of every model read without any (`share_fields_sets`): pydantic gives each
model an empty dict of its own. Replaced by a dict of its own before an assignment."""

_NAMES = frozenset(
    {
        "thread",
        "tool_name",
        "name",
        "model",
        "provider",
        "request_id",
        "call_id",
        "id",
        "output",
        "text",
        "summary",
    }
)
"""String fields whose values recur in a log, read once per distinct value instead of once per
event: thread and tool names and models (few values); the ids one event names another by (a
request's id in the assistant message answering it, a tool call's id in its result's `call_id`:
each twice; event ids are unique, so only a tool call block's `id` is looked up); and texts
that come back word for word: a file read again unchanged, the same test report or listing, a
reminder the harness injects again (in the synthetic sessions of `replay bench`, equal tool
outputs are ~0.45x the log file's size). The string values of tool-call arguments too."""


def share_fields_sets(
    model: BaseModel,
    shared: dict[frozenset[str], SharedFieldsSet],
    names: dict[str, str] | None = None,
) -> None:
    """Give `model` and the models nested in its fields (assistant blocks, usage, tools) the
    fields set of `shared` equal to theirs (added to `shared` when new), one empty dict of
    extra fields when they have none, and for the fields in `_NAMES` (and the string values of
    a tool call's arguments) the equal string already in `names` (added when new)."""
    if not isinstance(model, _Model):
        return
    fields = model.__pydantic_fields_set__
    key = frozenset(fields)
    common = shared.get(key)
    if common is None:
        common = shared[key] = SharedFieldsSet(fields)
    object.__setattr__(model, "__pydantic_fields_set__", common)
    if model.__pydantic_extra__ == {}:
        object.__setattr__(model, "__pydantic_extra__", _NO_EXTRA)
    values = model.__dict__
    for name in fields:
        value = values.get(name)
        if isinstance(value, str):
            if (
                names is not None
                and name in _NAMES
                and (name != "id" or isinstance(model, ToolCallBlock))
            ):
                values[name] = names.setdefault(value, value)  # the same value, one object
        elif isinstance(value, _Model):
            share_fields_sets(value, shared, names)
        elif isinstance(value, list):
            for element in value:
                if isinstance(element, _Model):
                    share_fields_sets(element, shared, names)
    if names is not None and isinstance(model, ToolCallBlock):
        arguments = model.arguments
        for name, value in arguments.items():
            if isinstance(value, str):
                arguments[name] = names.setdefault(value, value)


class ToolDef(_Model):
    """A tool the agent offered the model, as sent in the request's `tools` list."""

    name: str
    """Tool name the model calls it by."""

    description: str = ""
    """Free-text description sent to the model."""

    input_schema: dict[str, Any] = Field(default_factory=dict)
    """JSON Schema of the tool's arguments."""


MAX_TOKENS = 10**12
"""More tokens than any request holds (a trillion): a larger count in a log is an error, not a
number to price (it would overflow the 64-bit sums of the result tables)."""

Tokens = Annotated[int, Field(ge=0, le=MAX_TOKENS)]
"""A token count: never negative (a log that says otherwise is malformed)."""


class Usage(_Model):
    """Token usage the provider reported for one request, in disjoint buckets.

    Anthropic reports these additively already. OpenAI-style `input_tokens` includes cached
    tokens; adapters subtract before filling `input_tokens` here, so the buckets never overlap:
    prompt = input_tokens + cache_read_tokens + cache_write_5m_tokens + cache_write_1h_tokens.
    """

    input_tokens: Tokens = 0
    """Uncached prompt tokens, billed at the full input rate (never cache reads or writes)."""

    cache_read_tokens: Tokens = 0
    """Prompt tokens served from the provider's prompt cache."""

    cache_write_5m_tokens: Tokens = 0
    """Prompt tokens written to the cache with a 5-minute (or provider-default) lifetime."""

    cache_write_1h_tokens: Tokens = 0
    """Prompt tokens written to the cache with a 1-hour lifetime."""

    output_tokens: Tokens = 0
    """Generated tokens, reasoning included."""

    reasoning_tokens: Tokens | None = None
    """Part of `output_tokens` spent on hidden reasoning, when the provider says so."""

    cost_usd: str | None = None
    """The agent's own cost figure for this request, as a decimal string (kept as a drift check)."""

    @property
    def prompt_tokens(self) -> int:
        return (
            self.input_tokens
            + self.cache_read_tokens
            + self.cache_write_5m_tokens
            + self.cache_write_1h_tokens
        )

    @model_validator(mode="after")
    def _prompt_in_range(self) -> Usage:
        # The prompt is a token count too: buckets each in range can add up past any prompt.
        if self.prompt_tokens > MAX_TOKENS:
            raise ValueError(
                f"expected the prompt's buckets (input, cache read, cache writes) to add up to "
                f"at most {MAX_TOKENS:,} tokens, not {self.prompt_tokens:,}"
            )
        return self


def _aware(moment: datetime) -> datetime:
    """A time without an offset is UTC: the format's times are, and a naive one cannot be
    compared with the others."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class _Event(_Model):
    ts: Annotated[datetime, AfterValidator(_aware)]
    """When the event happened (UTC, ISO-8601; a time without an offset is read as UTC). For a
    request: when it was sent."""

    thread: str = MAIN_THREAD
    """Conversation thread: `main`, or the id of a subagent thread opened by a `thread` event."""

    id: str | None = None
    """Stable event id, unique in the file; compactions refer to replaced events by it."""


class SessionHeader(_Event):
    """First line of every log: what ran, against which model, with which prompt and tools."""

    type: Literal["session"] = "session"
    format: Literal["replay-log"] = FORMAT_NAME
    """Always `replay-log`; lets readers recognise the file by content."""

    version: int = FORMAT_VERSION
    """Format version of this file."""

    session_id: str = ""
    """The agent's id for the session (or any stable label)."""

    agent: str = "unknown"
    """Harness that produced the run: `claude-code`, `codex`, `pi`, `opencode`,
    `replay-recorder`…"""

    agent_version: str | None = None
    """Version of that harness, when known."""

    provider: str = "anthropic"
    """Provider id as genai-prices names it: `anthropic`, `openai`, `google`, `deepseek`…"""

    model: str = "claude-sonnet-4-5"
    """Model of the main thread (each request may override it)."""

    system: str = ""
    """The full system prompt."""

    tools: list[ToolDef] = Field(default_factory=list)
    """Tool definitions with their JSON schemas, in the order they were sent."""

    cwd: str | None = None
    """Working directory of the run, when known."""

    estimated: list[str] = Field(default_factory=list)
    """Names of header fields that an adapter estimated rather than read from the source log."""

    hidden_prefix_tokens: Tokens | None = None
    """Size of the prompt prefix the log does not hold (system prompt, tool schemas, context
    the harness injected), when known or estimated (adapters estimate it from the first
    request's usage): sent as one block of that size after the logged system prompt."""


class TextBlock(_Model):
    """Plain assistant text."""

    type: Literal["text"] = "text"
    text: str
    """The text as generated."""


class ThinkingBlock(_Model):
    """Reasoning the model emitted; some providers send it back in later prompts."""

    type: Literal["thinking"] = "thinking"
    thinking: str = ""
    """Reasoning text ('' when the log only kept a signature)."""

    signature: str | None = None
    """Opaque provider signature or encrypted payload, when logged."""

    estimated_tokens: Tokens | None = None
    """Token size when the text is not logged but the size is known or estimated."""


class ToolCallBlock(_Model):
    """A tool call the model made."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    """Call id; the matching `tool_result` carries it as `call_id`."""

    name: str
    """Tool name."""

    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments as the model produced them (parsed JSON)."""

    server_side: bool = False
    """True when the provider ran the call itself (web search, code execution…): no
    `tool_result` is expected before the thread's next request."""


AssistantBlock = Annotated[TextBlock | ThinkingBlock | ToolCallBlock, Field(discriminator="type")]


class UserMessage(_Event):
    """A message in the user role: the human's prompt or text the harness injected."""

    type: Literal["user"] = "user"
    text: str
    """Full message text."""

    injected: bool = False
    """True when the harness, not the human, wrote it (reminders, environment context…)."""

    compacted_history: bool = Field(
        default=False,
        validation_alias=AliasChoices("compacted_history", "from_replacement_history"),
    )
    """True when the message exists only in the history a logged compaction rebuilt (Codex's
    replacement history: the initial context re-injected, the last prompts repeated, an old
    rollout's summary): `recorded`, which applies the log's compactions, sends it; a strategy
    that does not apply them never sees it, its history holding what it repeats. (Read under
    its first name, `from_replacement_history`, too.)"""


class AssistantMessage(_Event):
    """One model response: text, thinking and tool-call blocks in the order generated."""

    type: Literal["assistant"] = "assistant"
    blocks: list[AssistantBlock] = Field(default_factory=list)
    """Content blocks in order."""

    request_id: str | None = None
    """The `request` event this message answers."""

    in_context: bool = True
    """False when the harness never sent this response back to the model (e.g. pi drops
    aborted or failed responses): it was billed, but later requests do not contain it."""


class ToolResult(_Event):
    """What a tool returned. Always the full output: strategies decide what the model sees."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    """Id of the `tool_call` block this answers."""

    tool_name: str
    """Name of the tool that ran."""

    output: str
    """Complete output, never truncated in the log."""

    is_error: bool = False
    """True when the tool reported failure."""

    synthetic: str | None = None
    """Why this result is not the tool's (`missing tool result`: a placeholder the reader or an
    adapter put in for a call the log never answered); absent on real results."""

    cleared_at: Annotated[datetime, AfterValidator(_aware)] | None = None
    """When the harness cleared this result from its context (opencode's pruning): the
    thread's requests sent at or after it saw `[Old tool result content cleared]` in place of
    `output`, which stays complete here. Absent when it was never cleared."""


class RequestMarker(_Event):
    """A model call: its context is every event of its thread before this line."""

    type: Literal["request"] = "request"
    request_id: str
    """Provider or harness id of the call."""

    model: str | None = None
    """Model of this call (defaults to the header's)."""

    provider: str | None = None
    """Provider of this call (defaults to the header's)."""

    usage: Usage | None = None
    """Usage the provider reported, when the log holds it; empty for recorded fixtures."""

    duration_ms: Annotated[int, Field(ge=0)] | None = None
    """Time from sending the request to the end of the response, when known (never negative:
    a cache whose entries are ready at the response's end would read one before the request)."""

    price_context: dict[str, str] | None = None
    """The price variant the provider billed this call under, as genai-prices names it
    (`{"speed": "fast"}`: Claude's fast mode) or replay's price multipliers do
    (`{"inference_geo": "us"}`: Claude's US-only inference); None: standard. Every strategy's
    request for this call is priced under it (the request's parameters are the recorded ones)."""


class Compaction(_Event):
    """A compaction that really happened in the recorded run."""

    type: Literal["compaction"] = "compaction"
    summary: str
    """Summary text the model wrote (what later requests saw instead of the replaced events)."""

    replaces: list[str] = Field(default_factory=list)
    """Ids of the events the summary replaced."""

    trigger: str | None = None
    """`auto` or `manual`, when known."""

    tokens_before: Tokens | None = None
    """Context size the harness reported before compacting, when known."""

    message: str | None = None
    """The message later requests saw in place of the replaced events, when it is not `summary`
    as it is: the harness's wrapper around it (pi), or empty when the log holds that message as
    an event of its own (Codex's replacement history)."""

    message_role: Literal["user", "assistant"] = "user"
    """Role of that message (opencode sends the summary as the assistant's)."""


class ThreadStart(_Event):
    """Opens a subagent thread; its events carry `thread` = this event's `thread_id`."""

    type: Literal["thread"] = "thread"
    thread_id: str
    """Id that the thread's events use in their `thread` field."""

    parent_thread: str = MAIN_THREAD
    """Thread that spawned it."""

    parent_call_id: str | None = None
    """Tool call in the parent thread that started the subagent, when known."""

    system: str | None = None
    """The subagent's system prompt, when it differs from the session's."""

    model: str | None = None
    """The subagent's model, when it differs from the session's."""

    hidden_prefix_tokens: Tokens | None = None
    """The subagent's `hidden_prefix_tokens`, when it differs from the session's."""


Event = Annotated[
    SessionHeader
    | UserMessage
    | AssistantMessage
    | ToolResult
    | RequestMarker
    | Compaction
    | ThreadStart,
    Field(discriminator="type"),
]

EVENT_TYPES: dict[str, type[_Event]] = {
    "session": SessionHeader,
    "user": UserMessage,
    "assistant": AssistantMessage,
    "tool_result": ToolResult,
    "request": RequestMarker,
    "compaction": Compaction,
    "thread": ThreadStart,
}
