"""OpenAI Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) → `replay-log`.

Each line is `{"timestamp", "type", "payload"}`. `response_item`s are the model-visible history
(replayed from them); `event_msg`s are UI/telemetry, except `token_count`, which carries each
sampling request's usage; `session_meta` holds the system prompt; `turn_context` the model;
`compacted` a compaction.

Rules (each names the quirk it handles; see shared research `formats.md` §2):

- a request = one run of model output items (reasoning, assistant message, tool calls) after
  input items; its usage is the `last_token_usage` of the `token_count` that follows it (quirk:
  the event arrives after the tool outputs of that response, so tool outputs do not close a
  response that has no usage yet);
- `token_count` events repeating the previous `total_token_usage` are dropped (quirk: rate-limit
  refreshes re-send the last usage; the next request is marked `unlogged_attempt`, since one
  that comes mid-turn is an attempt the provider processed and the log lost: its retry reads
  the whole prompt from the cache), and a zero-input, zero-output one is not a request (quirk:
  the context estimate written right after a compaction);
- `input_tokens` INCLUDES `cached_input_tokens` (quirk): uncached = input − cached;
- `session_meta` is deduplicated (quirk: Codex Desktop re-writes it every turn);
  `base_instructions` is the system prompt; `dynamic_tools` are the only logged tool schemas;
  a re-write that changes a setting (not `git`) marks the next request `unlogged_change`
  (quirk: Codex rebuilds a prompt prefix the log does not hold, and the cache breaks there);
- `compacted.replacement_history` becomes the post-compaction history, in its own order: its
  leading messages that repeat earlier ones (in the same order) are kept in place, the rest are
  listed in the `Compaction`'s `replaces`; from the first message it adds on, every message is
  appended after the compaction, repeats included (quirk: Codex puts the initial context it
  re-injects first, or mid-turn before the last user message, not after what it kept); an
  older `compacted` with only `message` gets the history Codex rebuilt (`_rebuilt_history`);
- `event_msg` `user_message` / `agent_message` / `agent_reasoning` duplicate response items and
  are not added again (they only tell which user-role items a human typed);
- a response with no `token_count` before a new prompt or the end (quirk: the capture stopped
  mid-response, or the turn was aborted) keeps its items as history but is not a request (no
  usage to compare or price);
- a response whose `token_count` holds no usage (`info` null, without `last_token_usage`, or
  with a garbled one), or that has none before the model answers its tool outputs, is still a
  request: its usage is the running `total_token_usage`'s difference when that shows it
  exactly (labelled `derived_from`), else unknown; the read reports it (strict refuses).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replay.adapters._common import (
    EPOCH,
    MAIN_THREAD,
    AssistantMessage,
    Bad,
    Compaction,
    Issues,
    RequestMarker,
    SessionBuilder,
    SessionHeader,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResult,
    Usage,
    UserMessage,
    WaitingCalls,
    binary_placeholder,
    clean,
    clean_json,
    counts_problem,
    dumps,
    estimate_hidden_prefix,
    estimate_thinking,
    failures_as_log_errors,
    get_dict,
    get_int,
    get_list,
    get_str,
    guarded,
    iter_json_lines,
    json_lines_holding,
    most_common,
    openai_usage,
    opt_str,
    opt_ts,
    parse_arguments,
    parse_ts,
    provider_for,
    usage_is_empty,
    waiting_calls,
)
from replay.adapters._record_types import CODEX_LINE_TYPES
from replay.log import Session, ToolDef
from replay.strategies.codex_compact import KEEP_USER_TOKENS, newest_within

AGENT = "codex"

OUTPUT_ITEMS = {
    "reasoning",
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "web_search_call",
    "tool_search_call",
    "image_generation_call",
}
RESULT_ITEMS = {
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "tool_search_output",
}
IGNORED_ITEMS = {
    "ghost_snapshot",  # a git snapshot for undo: never sent to the model
    "compaction",  # opaque encrypted remote summary (absent from Entire captures)
    "compaction_summary",
}
_META_OUTSIDE_PROMPT = {"git", "timestamp", "id"}
"""session_meta fields that do not reach the prompt (the git state changes between turns and
the next request still reads the whole prefix)."""

_INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<turn_aborted>",
    "<user_shell_command>",
    "<collaboration_mode>",
)


def _rebuilt_history(context: list[Any], summary: str) -> list[dict[str, Any]]:
    """The history an older Codex built when its `compacted` line held only `message` (quirk:
    no `replacement_history` was logged; resuming rebuilt it the same way): the initial context
    (the injected messages before the first prompt), the newest real user messages within
    20,000 estimated (chars/4) tokens, the one that does not fit middle-truncated to what is
    left, then the summary as a user message. What the compaction kept in place stays there;
    `_replacement` sorts it out as it does a logged history."""
    replaced = {i for e in context if isinstance(e, Compaction) for i in e.replaces}
    live = [e for e in context if isinstance(e, UserMessage) and e.id not in replaced]
    opening: list[UserMessage] = []
    for e in context:
        if not isinstance(e, UserMessage) or not e.injected:
            break
        opening.append(e)
    prompts = [e.text for e in live if not e.injected and getattr(e, "role", "user") == "user"]
    messages = [(getattr(e, "role", "user"), e.text) for e in opening]
    messages += [("user", text) for _, text in newest_within(prompts, KEEP_USER_TOKENS)]
    messages += [("user", summary)]
    return [
        {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}
        for role, text in messages
    ]


def _content_text(content: Any) -> tuple[str, bool]:
    """A message's content blocks as text, and whether a placeholder stands in for part of it
    (images, base64 files: `binary_placeholder`)."""
    if isinstance(content, str):
        return clean(content), False
    if not isinstance(content, list):
        raise Bad("expected message `content` to be a list of blocks")
    parts = []
    estimated = False
    for c in content:
        if not isinstance(c, dict):
            raise Bad("expected message content blocks to be objects")
        kind = get_str(c, "type")
        placeholder = binary_placeholder(c)
        if placeholder is not None:
            parts.append(placeholder)
            estimated = True
        elif kind in ("input_text", "output_text", "text"):
            parts.append(get_str(c, "text", ""))
        elif kind == "input_image":
            url = c.get("image_url")
            size = len(url) if isinstance(url, str) else 0
            # Quirk: an image by URL; its token cost depends on its pixels, not known here.
            parts.append(f"[image {size} chars]")
            estimated = True
        else:
            parts.append(dumps(c))
    return "\n".join(parts), estimated


def _typed_texts(content: Any) -> list[str]:
    """What of a message's content a human may have typed: its text blocks, alone and joined
    (an image or a file sent with a prompt is a block of its own, which the `user_message`
    event that logs the typed text leaves out)."""
    if not isinstance(content, list):
        return []
    texts = [
        get_str(c, "text", "")
        for c in content
        if isinstance(c, dict)
        and get_str(c, "type") in ("input_text", "text")
        and binary_placeholder(c) is None
    ]
    return [*texts, "\n".join(texts)] if len(texts) > 1 else texts


def _output_text(output: Any) -> tuple[str, bool, bool]:
    """A tool output as text, whether it reports failure, and whether a placeholder stands in
    for part of it."""
    if isinstance(output, str):
        return clean(output), False, False
    if isinstance(output, dict):
        # Older rollouts: {"content": str | blocks, "success": bool}
        content = output.get("content")
        failed = output.get("success") is False
        if isinstance(content, str):
            return clean(content), failed, False
        if isinstance(content, list):
            text, estimated = _content_text(content)
            return text, failed, estimated
        return dumps(output), failed, False
    if isinstance(output, list):
        text, estimated = _content_text(output)
        return text, False, estimated
    if output is None:
        return "", False, False
    return dumps(output), False, False


class _Reader:
    def __init__(self, path: Path, strict: bool) -> None:
        self.path = path
        self.issues = Issues(path, strict)
        self.builder = SessionBuilder(path, self.issues)
        self.meta: dict[str, Any] = {}
        self.last_meta: dict[str, Any] = {}
        self.pending_change: str | None = None
        """session_meta fields changed since the last request (context outside the log)."""
        self.pending_attempt = False
        """A repeated token_count came since the last request (an attempt without usage)."""
        self.model: str | None = None
        self.models: list[str] = []
        self.ignored: Counter[str] = Counter()
        self.human_texts: set[str] = set()
        # current response
        self.marker: RequestMarker | None = None
        self.message: AssistantMessage | None = None
        self.closed = True
        self.answered = False
        """A tool output came since the current response's last item: more output is a new
        response (the model read that output)."""
        self.last_total: str | None = None
        self.last_count: str | None = None
        """The previous token_count's `last_token_usage` (JSON), for a repeat whose total is
        garbled."""
        self.totals: dict[str, Any] | None = None
        """The last `total_token_usage` logged (running sums: each request's usage is the
        difference)."""
        self.lost: list[_LostUsage] = []
        """Responses whose token_count held no usage, since the last total."""
        self.usage_lost: set[str] = set()
        """Request ids of those responses: requests even without usage."""
        self.calls: dict[str, str] = {}
        self.source_calls: dict[str, str] = {}
        self.waiting = WaitingCalls()
        self.events: list[Any] = []
        self.token_events = 0
        self.items_seen: dict[bytes, int] = {}

    # ------------------------------------------------------------------------------------
    def read(self) -> Session:
        # First pass: which user-role texts a human typed, and the first model (for the header).
        # Only the lines that can say so are parsed, and none is kept: holding every parsed
        # line for the second pass took ~3x the file's size.
        for obj in json_lines_holding(self.path, (b'"user_message"', b'"turn_context"')):
            payload = obj.get("payload")
            if not isinstance(payload, dict):
                continue
            if (
                obj.get("type") == "event_msg"
                and payload.get("type") == "user_message"
                and isinstance(payload.get("message"), str)
            ):
                self.human_texts.add(payload["message"].strip())
            if obj.get("type") == "turn_context" and isinstance(payload.get("model"), str):
                self.models.append(payload["model"])
        for number, obj in iter_json_lines(self.path, self.issues):
            guarded(self.issues, number, lambda n=number, o=obj: self._line(n, o))
        if not self.meta and not self.events:
            self.issues.fatal(None, "expected Codex rollout records (session_meta, response_item)")
        return self._finish()

    def _add(self, event: Any, number: int) -> Any:
        event.thread = MAIN_THREAD
        event.id = self.builder.new_id()
        event.line = number
        if isinstance(event, RequestMarker):
            if self.pending_change:
                event.unlogged_change = f"{self.pending_change} changed before this request"
            if self.pending_attempt:
                event.unlogged_attempt = True
            self.pending_change, self.pending_attempt = None, False
        self.events.append(event)
        return event

    def _line(self, number: int, obj: dict[str, Any]) -> None:
        kind = get_str(obj, "type")
        if kind not in CODEX_LINE_TYPES:
            raise Bad(f"unknown Codex rollout line type {kind!r}")
        payload = get_dict(obj, "payload", required=True)
        ts = parse_ts(obj.get("timestamp"))
        if kind == "session_meta":
            self._session_meta(payload)
        elif kind == "turn_context":
            model = get_str(payload, "model")
            if model:
                self.model = model
        elif kind == "event_msg":
            if get_str(payload, "type") == "token_count":
                # Quirk (duplicated records): a count repeated with its timestamp is the same
                # line written twice; a rate-limit repeat comes at another time.
                self._once(obj, number, "token_count")
            self._event(number, ts, payload)
        elif kind == "compacted":
            self._compacted(number, ts, payload)
        else:
            # Quirk (duplicated records): a response item identical to an earlier one, timestamp
            # included, is the same item written twice, not a second item.
            self._once(obj, number, "response_item")
            self._item(number, ts, payload)

    def _once(self, obj: dict[str, Any], number: int, what: str) -> None:
        """Refuse a line identical to an earlier one, timestamp included."""
        key = hashlib.blake2b(dumps(obj).encode("utf-8"), digest_size=16).digest()
        if key in self.items_seen:
            raise Bad(f"duplicate record: same {what} as line {self.items_seen[key]}")
        self.items_seen[key] = number

    def _session_meta(self, payload: dict[str, Any]) -> None:
        sid = get_str(payload, "id")
        if not self.meta:
            self.meta = self.last_meta = payload
            return
        # Quirk (Codex Desktop): the same session_meta is re-written on every turn.
        if sid != self.meta.get("id"):
            self.ignored["session_meta/other-id"] += 1
            return
        self.ignored["session_meta/repeat"] += 1
        changed = sorted(
            key
            for key in set(payload) | set(self.last_meta)
            if key not in _META_OUTSIDE_PROMPT and payload.get(key) != self.last_meta.get(key)
        )
        if changed:
            # Quirk: a re-written session_meta with another setting (a7: `memory_mode` appears
            # at the second turn) comes with a prompt prefix the log does not hold changing:
            # the next request reads only the first ~2.4k tokens from the cache.
            self.pending_change = ", ".join(f"session_meta.{key}" for key in changed)
        self.last_meta = payload

    def _event(self, number: int, ts: Any, payload: dict[str, Any]) -> None:
        kind = get_str(payload, "type")
        if kind != "token_count":
            self.ignored[f"event_msg/{kind}"] += 1
            return
        info = payload.get("info")
        if info is not None and not isinstance(info, dict):
            raise Bad("expected token_count `info` to be an object")
        if info is None or info.get("last_token_usage") is None:
            self._without_usage(number, info)
            return
        self.token_events += 1
        last = get_dict(info, "last_token_usage", required=True)
        totals: dict[str, Any] | None
        garbled = _total_problem(info, beside_count=True)
        if garbled is None:
            totals = get_dict(info, "total_token_usage")
            total = dumps(totals)
        else:
            # A garbled running total does not lose the count beside it: the request keeps its
            # `last`, and the responses whose usage was lost are not settled from the total.
            self.issues.add(number, garbled,
                            remedy="its `last_token_usage` is used, the total is not")
            totals, total = None, f"unknown total, line {number}"
        count, previous_count = dumps(last), self.last_count
        self.last_count = count
        if (totals is None or self.totals is None) and count == previous_count and (
            self._awaiting() is None
        ):
            # A total garbled on one side: a repeat shows as the same `last`, no response since.
            total = self.last_total
        try:
            usage = openai_usage(last)
        except Bad as bad:
            # A garbled count is a lost one: the response was billed all the same (skipping
            # the line dropped its request), its usage settled by the next total.
            rest = {k: v for k, v in info.items() if k != "last_token_usage"}
            if totals is None:  # reported above
                rest.pop("total_token_usage", None)
            problem = (
                f"{bad} in `info.last_token_usage` in the token_count of request "
                f"{self.marker.request_id if self.marker else '?'} "
                "(the model answered: a billed request)"
            )
            self._without_usage(number, rest, problem)
            return
        if total != self.last_total:
            self._new_total(totals, last, usage)
        if usage_is_empty(usage):
            # Quirk: the post-compaction context estimate is not an API call (it can repeat
            # the previous total: not a lost attempt either).
            self.last_total = total
            return
        if total == self.last_total:
            # Quirk: a repeated token_count (rate limits from a new response's headers) is not
            # a request with usage; when the next logged request reads its whole prompt from
            # the cache, that attempt was processed and lost (a retry: a7, planetfall).
            self.pending_attempt = True
            return
        self.last_total = total
        awaiting = self._awaiting()
        if awaiting is not None:
            awaiting.usage = usage
            if self.message is not None:
                estimate_thinking(self.message, usage, awaiting.model or "gpt-5")
            self.closed = True
            return
        # Usage for a request whose output items were not logged (e.g. an aborted response).
        marker = RequestMarker(
            ts=self.events[-1].ts if self.events else ts,
            request_id=self.builder.request_id(None),
            model=self.model,
            usage=usage,
        )
        self._add(marker, number)
        self.marker, self.message, self.closed = marker, None, True

    def _awaiting(self) -> RequestMarker | None:
        """The current response's request while it waits for its token_count."""
        marker = self.marker
        if marker is None or marker.usage is not None or marker.request_id in self.usage_lost:
            return None
        return marker

    def _without_usage(
        self, number: int, info: dict[str, Any] | None, problem: str | None = None
    ) -> None:
        """A token_count without `last_token_usage`: `info` null, or lacking it (`problem`:
        what was wrong with the one it had)."""
        marker = self._awaiting()
        if marker is None or self.closed:
            if info is not None:
                raise Bad(problem or "expected `last_token_usage` (an object)")
            # Quirk: rate limits from a response's headers, before any usage of the session.
            self.ignored["event_msg/token_count-without-info"] += 1
            return
        garbled = _total_problem(info) if info is not None else None
        if garbled is not None:
            self.issues.add(number, garbled, remedy="the total is not used")
        totals = {} if garbled is not None else get_dict(info, "total_token_usage")
        # Quirk: the model answered (its output items are logged) but the usage of that billed
        # request is not: it stays a request, its usage settled by the next total.
        self.lost.append(_LostUsage(marker, self.message, number, len(self.issues.items), problem))
        self.usage_lost.add(marker.request_id)
        self.closed = True
        if info is not None:
            self.token_events += 1
            if totals and dumps(totals) != self.last_total:
                self._new_total(totals, {}, None)  # this count's own total: no `last` in it
                self.last_total = dumps(totals)

    def _uncounted(self) -> None:
        """The current response got no token_count, and the model answered its tool outputs
        (quirk: a count the capture lost). It was billed: a lost count, settled by the next
        total like one whose `info` is null (it was merged into the next response, its tool
        results after both)."""
        marker = self.marker
        if marker is None or marker.usage is not None or marker.request_id in self.usage_lost:
            return
        problem = (
            f"expected a token_count for request {marker.request_id} before the next response "
            "(the model answered its tool outputs: a billed request)"
        )
        line = self.message.line if self.message is not None else marker.line
        self.lost.append(_LostUsage(marker, self.message, line, len(self.issues.items), problem))
        self.usage_lost.add(marker.request_id)
        self.closed = True

    def _new_total(
        self, totals: dict[str, Any] | None, last: dict[str, Any], usage: Usage | None
    ) -> None:
        """Settle the responses whose usage was lost since the previous total: the new total
        minus the previous one minus this count's `last` (`usage`, None: the count is theirs) is
        their usage, when it is one request's."""
        lost, self.lost = self.lost, []
        previous, self.totals = self.totals, totals
        if not lost:
            return
        if totals is None:  # garbled: it shows nobody's usage
            for one in lost:
                self._settle(one, None)
            return
        share = _difference(totals, previous or {}, last) if len(lost) == 1 else None
        if previous is None and len(lost) == 1 and usage is not None and not usage_is_empty(usage):
            # The file's first total counts what came before the file too: it cannot confirm
            # that this count alone made it; that no response came since the count without
            # usage has to do (it was a rate-limit update before its response's count).
            share = {} if self.marker is lost[0].marker else None
        if share == {} and usage is not None:
            if usage_is_empty(usage):
                self.lost = lost  # a context estimate: the total did not move, nothing to settle
                return
            if self.marker is lost[0].marker:
                # The total grew by this count alone and no response came since: the count
                # without usage was not this response's (a rate-limit update), this one is.
                self.usage_lost.discard(lost[0].marker.request_id)
                self.ignored["event_msg/token_count-without-info"] += 1
                return
        if previous is None or lost[0].issues != len(self.issues.items):
            # The file's first total (what it counted before the file is unknown), or a line
            # skipped since, which may have held a count: the difference is not theirs alone.
            share = None
        for one in lost:
            self._settle(one, share)

    def _settle(self, lost: _LostUsage, share: dict[str, int] | None) -> None:
        """Report a response whose token_count held no usage; give it the usage the totals show
        (`share`) when that is one request's."""
        usage = _derived_usage(share) if share else None
        marker = lost.marker
        if usage is not None:
            marker.usage = usage
            if lost.message is not None:
                estimate_thinking(lost.message, usage, marker.model or "gpt-5")
            remedy = "kept as a request, its usage derived from total_token_usage"
        else:
            marker.usage_missing = True
            remedy = "kept as a request without usage (total_token_usage does not show it)"
        problem = lost.problem or (
            f"expected `info.last_token_usage` in the token_count of request {marker.request_id} "
            "(the model answered: a billed request)"
        )
        self.issues.add(lost.line, problem, remedy=remedy)

    def _open_response(self, number: int, ts: Any, kind: str) -> AssistantMessage:
        if self.message is not None and not self.closed:
            # Quirk (streamed tool execution): a call can follow an earlier call's output in
            # the same response; reasoning or text after an output is the model reading it.
            if not (self.answered and kind in ("reasoning", "message")):
                return self.message
            self._uncounted()
        self.answered = False
        sent = self.events[-1].ts if self.events else ts
        marker = RequestMarker(
            ts=sent if sent <= ts else ts,
            request_id=self.builder.request_id(None),
            model=self.model,
        )
        self._add(marker, number)
        message = AssistantMessage(ts=ts, blocks=[], request_id=marker.request_id)
        self._add(message, number)
        self.marker, self.message, self.closed = marker, message, False
        return message

    def _item(self, number: int, ts: Any, p: dict[str, Any]) -> None:
        kind = get_str(p, "type")
        if kind in IGNORED_ITEMS:
            self.ignored[f"response_item/{kind}"] += 1
            return
        if kind == "message":
            role = get_str(p, "role", "")
            text, estimated = _content_text(p.get("content"))
            if role == "assistant":
                message = self._open_response(number, ts, kind)
                block = TextBlock(text=text)
                if p.get("phase") is not None:
                    block.phase = clean_json(p.get("phase"))
                message.blocks.append(block)
                message.ts = ts
                return
            if role not in ("user", "developer", "system"):
                raise Bad(f"unknown message role {role!r}")
            self.closed = True  # a new input message always starts a new response after it
            injected = self._injected(role, text, p.get("content"))
            event = UserMessage(ts=ts, text=text, injected=injected)
            if role != "user":
                event.role = role
            if estimated:
                event.estimated_text = True
            self._add(event, number)
            return
        if kind in OUTPUT_ITEMS:
            message = self._open_response(number, ts, kind)
            message.blocks.append(self._output_block(number, p))
            message.ts = ts
            return
        if kind in RESULT_ITEMS:
            self._result(number, ts, p)
            return
        raise Bad(f"unknown Codex response_item type {kind!r}")

    def _injected(self, role: str, text: str, content: Any = None) -> bool:
        if role != "user":
            return True
        typed = self.human_texts
        if text.strip() in typed or any(t.strip() in typed for t in _typed_texts(content)):
            return False  # (a prompt sent with an image matches by its text blocks)
        return text.lstrip().startswith(_INJECTED_PREFIXES) or bool(typed)

    def _output_block(self, number: int, p: dict[str, Any]) -> Any:
        kind = p["type"]
        if kind == "reasoning":
            summary = "\n".join(
                get_str(s, "text", "") for s in get_list(p, "summary") if isinstance(s, dict)
            )
            content = p.get("content")
            raw = ""
            if isinstance(content, list):
                raw = "\n".join(get_str(c, "text", "") for c in content if isinstance(c, dict))
            # Quirk: reasoning is encrypted (or absent) in rollouts; the summary is not what the
            # model reads back. Its size comes from reasoning_output_tokens (estimate_thinking).
            block = ThinkingBlock(thinking=raw, signature=get_str(p, "encrypted_content"))
            if summary:
                block.summary = summary
            return block
        source = get_str(p, "call_id") or get_str(p, "id")
        cid = self.builder.call_id(source, f"{number}")
        if kind == "function_call":
            name = get_str(p, "name", "") or "unknown"
            block = ToolCallBlock(id=cid, name=name, arguments=parse_arguments(p.get("arguments")))
            # Quirk: the model sees the arguments string it wrote (compact JSON in its own key
            # order), not a re-encoding with sorted keys and spaces (+6 tokens a call).
            block.arguments_format = "compact"
            if p.get("namespace") is not None:
                block.namespace = clean_json(p.get("namespace"))
        elif kind == "custom_tool_call":
            name = get_str(p, "name", "") or "unknown"
            block = ToolCallBlock(id=cid, name=name, arguments={"input": get_str(p, "input", "")})
            block.custom = True  # freeform tool (apply_patch): the input is raw text
            # Quirk: JSON-escaping a patch (newlines, quotes) costs ~14 % more tokens than the
            # raw text the model wrote and reads back.
            block.arguments_format = "raw"
        elif kind == "local_shell_call":
            block = ToolCallBlock(
                id=cid, name="local_shell", arguments=parse_arguments(p.get("action"))
            )
        elif kind == "tool_search_call":
            block = ToolCallBlock(
                id=cid, name="tool_search", arguments=parse_arguments(p.get("arguments"))
            )
        else:  # web_search_call, image_generation_call: run by OpenAI, no output item follows
            block = ToolCallBlock(
                id=cid, name=kind.removesuffix("_call"), arguments=parse_arguments(p.get("action"))
            )
            block.server_side = True
            return block
        if source and source != cid:
            block.source_id = source
        self.calls[cid] = block.name
        if source:
            self.source_calls.setdefault(source, cid)
            self.waiting.add(source, cid)
        return block

    def _result(self, number: int, ts: Any, p: dict[str, Any]) -> None:
        source = get_str(p, "call_id")
        cid = self.waiting.take(source)  # a REDACTED id too: the oldest redacted call waiting
        if cid is None and source != "REDACTED":  # (the first REDACTED call is answered)
            cid = self.source_calls.get(source or "")
        if cid is None:
            pending = waiting_calls(self.events)
            if not pending:
                raise Bad(f"expected a tool call before the output for call {source!r}")
            cid = pending[0]  # quirk (redacted / unknown ids): the oldest unanswered call
            self.waiting.drop(cid)
            if source != "REDACTED":
                self.issues.add(number, f"expected a tool call {source!r}; paired with {cid!r}")
        if p.get("type") == "tool_search_output":
            output, failed, estimated = dumps(p.get("tools")), False, False
        else:
            output, failed, estimated = _output_text(p.get("output"))
        event = ToolResult(
            ts=ts,
            call_id=cid,
            tool_name=self.calls.get(cid, "unknown"),
            output=output,
            is_error=failed,
        )
        if estimated:
            event.estimated_text = True
        self._add(event, number)
        self.answered = True

    def _compacted(self, number: int, ts: Any, p: dict[str, Any]) -> None:
        self.closed = True
        history = p.get("replacement_history")
        context = [
            e
            for e in self.events
            if isinstance(e, UserMessage | AssistantMessage | ToolResult | Compaction)
        ]
        summary = get_str(p, "message", "") or ""
        if history is not None and not isinstance(history, list):
            raise Bad("expected `replacement_history` to be a list of items")
        rebuilt = history is None
        if rebuilt:
            history = _rebuilt_history(context, summary)
        kept, fresh = self._replacement(history, context, ts, number)
        compaction = Compaction(
            ts=ts,
            summary=summary,
            replaces=[e.id for e in context if e.id not in kept],
        )
        if rebuilt:
            # The summary is the last message of the rebuilt history, appended after it.
            compaction.message = ""
            compaction.history_rebuilt = True
        else:
            compaction.replacement_history_items = len(history)
            # The message that stands for the summary is in the new history (appended after
            # the compaction), or is its opaque item: none of the compaction's own.
            compaction.message = ""
            # Quirk (Entire captures): the opaque `compaction` item holding the real summary is
            # not in the file, so the summary's size is unknown here (the next request's usage
            # shows it as a residual).
            compaction.summary_missing = not compaction.summary
        self._add(compaction, number)
        for event in fresh:
            self._add(event, number)

    def _replacement(
        self, history: list[Any], context: list[Any], ts: Any, number: int
    ) -> tuple[set[str], list[UserMessage]]:
        """The ids of earlier messages `replacement_history` keeps in place, and the messages to
        append after the compaction, so that the two in a row are the new history in its order.

        Quirk (Codex rebuilds the history when compacting): it repeats earlier user/developer
        messages, which stay where they were while they come in the same order, but puts the
        initial context it re-injects (permissions, AGENTS.md, environment) first, or mid-turn
        right before the last user message. A repeat after the first message it adds is
        appended too: kept in place, it would come before that context (a7: the last user
        message came before the ~15k tokens of re-injected context it followed in the prompt)."""
        positions: dict[tuple[str, str], list[int]] = {}
        for n, e in enumerate(context):
            if isinstance(e, UserMessage):
                positions.setdefault((getattr(e, "role", "user"), e.text), []).append(n)
        kept: set[str] = set()
        fresh: list[UserMessage] = []
        after = -1  # where the last message kept in place stands
        for item in history:
            if not isinstance(item, dict):
                raise Bad("expected replacement_history items to be objects")
            kind = item.get("type")
            if isinstance(kind, str) and kind in IGNORED_ITEMS:  # not context by design
                self.ignored[f"replacement_history/{kind}"] += 1
                continue
            if kind != "message":
                # Unknown (or context this reading does not rebuild): said, not dropped silently.
                self.issues.add(
                    number, f"expected replacement_history items to be messages, got {kind!r}",
                    remedy="left out of the history after the compaction",
                )
                continue
            role = get_str(item, "role", "user")
            text, estimated = _content_text(item.get("content"))
            spot = next((n for n in positions.get((role, text), []) if n > after), None)
            if spot is not None and not fresh:
                kept.add(context[spot].id)
                after = spot
                continue
            injected = self._injected(role, text, item.get("content"))
            event = UserMessage(ts=ts, text=text, injected=injected)
            if role != "user":
                event.role = role
            event.compacted_history = True
            if estimated:
                event.estimated_text = True
            fresh.append(event)
        return kept, fresh

    # ------------------------------------------------------------------------------------
    def _billed(self, marker: RequestMarker) -> bool:
        """A request: usage logged (or derived), or a token_count that lost it says so."""
        return marker.usage is not None or marker.request_id in self.usage_lost

    def _finish(self) -> Session:
        for lost in self.lost:  # no total came after them
            self._settle(lost, None)
        markers: dict[str, RequestMarker] = {}
        for m in self.events:  # the first marker of each id, as a search from the start finds
            if isinstance(m, RequestMarker):
                markers.setdefault(m.request_id, m)
        for e in self.events:
            if isinstance(e, AssistantMessage) and e.request_id is not None:
                marker = markers.get(e.request_id)
                if marker is not None and not self._billed(marker):
                    e.request_id = None
                    e.usage_missing = True
        self.events = [
            e for e in self.events if not (isinstance(e, RequestMarker) and not self._billed(e))
        ]
        for e in self.events:
            if isinstance(e, AssistantMessage) and not e.blocks:
                e.blocks = [TextBlock(text="")]
        self.builder.thread(MAIN_THREAD).events = self.events
        self.builder.repair_tool_results()
        meta = self.meta
        base = meta.get("base_instructions")
        if isinstance(base, dict):
            system = opt_str(base, "text") or ""
        elif isinstance(base, str):
            system = clean(base)
        else:
            system = ""
        tools = _tool_defs(meta.get("dynamic_tools"))
        model = most_common(
            [m.model for m in self.events if isinstance(m, RequestMarker)] or self.models,
            "gpt-5",
        )
        estimated = ["tools"]  # quirk: built-in tool schemas (exec_command, apply_patch…) absent
        if not system:
            estimated.insert(0, "system")
        header = SessionHeader(
            ts=self.events[0].ts if self.events else opt_ts(meta.get("timestamp")) or EPOCH,
            session_id=opt_str(meta, "id") or self.path.stem,
            agent=AGENT,
            agent_version=opt_str(meta, "cli_version"),
            provider=provider_for(opt_str(meta, "model_provider"), model),
            model=model,
            system=system,
            tools=tools,
            cwd=opt_str(meta, "cwd"),
            estimated=estimated,
        )
        header.source_format = "codex-rollout"
        for key in ("originator", "source", "forked_from_id"):
            if isinstance(meta.get(key), str):
                setattr(header, key, clean(meta[key]))
        header.token_count_events = self.token_events
        if self.ignored:
            header.ignored_records = dict(sorted(self.ignored.items()))
        session = self.builder.session(header)
        estimate_hidden_prefix(session)
        return session


@dataclass
class _LostUsage:
    """A response whose token_count held no usage."""

    marker: RequestMarker
    message: AssistantMessage | None
    line: int
    """The token_count's line."""
    issues: int
    """Problems reported before it: more by the next total means a line was skipped."""
    problem: str | None = None
    """What the report says, when not that the token_count held no usage."""


_COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")


def _total_problem(info: dict[str, Any], beside_count: bool = False) -> str | None:
    """What makes `info.total_token_usage` no running total (None: an object of token counts
    >= 0, or absent where no `last_token_usage` is: `beside_count` False). A negative count is
    malformed input, not a count that shrank."""
    totals = info.get("total_token_usage")
    if totals is None:
        # Quirk (a damaged record): Codex writes the running total beside every count. Read
        # as "{}", it made each later count a repeat of this one (no request).
        return (
            "expected `info.total_token_usage` (an object) beside `last_token_usage`"
            if beside_count else None
        )
    if not isinstance(totals, dict):
        return "expected `info.total_token_usage` to be an object"
    return counts_problem(totals, (*_COUNTS, "total_tokens"), "info.total_token_usage")


def _difference(
    totals: dict[str, Any], previous: dict[str, Any], last: dict[str, Any]
) -> dict[str, int] | None:
    """`totals` − `previous` − `last`, count by count: what the running total grew by besides
    `last` ({} when by nothing), or None when that is no usage (a count that shrank, malformed
    counts)."""
    try:
        share = {k: get_int(totals, k) - get_int(previous, k) - get_int(last, k) for k in _COUNTS}
    except Bad:
        return None
    if any(v < 0 for v in share.values()):
        return None
    return share if any(share.values()) else {}


def _derived_usage(share: dict[str, int]) -> Usage | None:
    """A request's usage from its share of the running total; None unless it is one (a prompt,
    cached within it, reasoning within the output)."""
    inp, cached = share["input_tokens"], share["cached_input_tokens"]
    out, reasoning = share["output_tokens"], share["reasoning_output_tokens"]
    if inp == 0 or cached > inp or reasoning > out:
        return None
    usage = Usage(
        input_tokens=inp - cached,
        cache_read_tokens=cached,
        output_tokens=out,
        reasoning_tokens=reasoning,
    )
    usage.derived_from = "total_token_usage"  # not logged: the running total's difference
    return usage


def _tool_defs(raw: Any) -> list[ToolDef]:
    """`session_meta.dynamic_tools` (flat, or grouped in namespaces) as tool definitions."""
    out: list[ToolDef] = []
    if not isinstance(raw, list):
        return out

    def one(t: dict[str, Any], namespace: str | None) -> None:
        schema = t.get("inputSchema") or t.get("input_schema") or t.get("parameters") or {}
        tool = ToolDef(
            name=str(t.get("name") or "unknown"),
            description=clean(t["description"]) if isinstance(t.get("description"), str) else "",
            input_schema=clean_json(schema) if isinstance(schema, dict) else {},
        )
        ns = namespace or t.get("namespace")
        if isinstance(ns, str):
            tool.namespace = clean(ns)
        out.append(tool)

    for t in raw:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "namespace" and isinstance(t.get("tools"), list):
            for inner in t["tools"]:
                if isinstance(inner, dict):
                    one(inner, t.get("name") if isinstance(t.get("name"), str) else None)
        else:
            one(t, None)
    return out


def read(path: str | Path, *, strict: bool = False) -> Session:
    """Read a Codex rollout as a native `Session`."""
    with failures_as_log_errors(path):
        return _Reader(Path(path), strict).read()


__all__ = ["read"]
