"""pi-coding-agent sessions (`~/.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl`) → `replay-log`.

Line 1 is a `session` header; every later line is an entry. Since format v2 entries form a tree
through `id` / `parentId`; the context at the leaf is the path root → leaf, cut by the latest
compaction on it (its summary, then the entries from `firstKeptEntryId`, then the later ones).

Rules (each names the quirk it handles; see shared research `formats.md` §3):

- v1 files have no ids (quirk): they are migrated as pi's own `migrateV1ToV2` does — sequential
  ids, each entry the child of the previous one, `firstKeptEntryIndex` (an index into the file's
  entries, header included) → `firstKeptEntryId`;
- each assistant message is one request with its own usage and cost; aborted / error messages with
  zero usage were never billed (quirk): not requests, and not context (pi drops them); one whose
  line lost or garbled its `usage` is reported and kept as a request without usage (unless it
  failed); one that answered with zero usage (a provider that reports none) is one too,
  counted, unreported;
- a damaged header is reported and read without its damaged fields, a lost one (the first line
  unreadable) without it: the version then comes from the entries (ids: v2+), so a line written
  twice is still told by its id;
- tool calls cut off by a compaction get no result; pi fills them itself when it sends the next
  prompt ("No result provided"), so the placeholder result added here is expected, not
  reported (an aborted/error response is not sent back at all: its calls need none);
- entries off the final path (quirk: `/tree` / `/branch` navigation) hold billed requests: each
  abandoned branch is replayed as its own thread, starting with a copy of the shared prefix;
- `branch_summary` and `custom_message` entries are context (injected user text);
  `model_change`, `thinking_level_change`, `label`, `custom`, `session_info` are not;
- `bashExecution` messages (the user's `!cmd`) become user text the way pi renders them, unless
  `excludeFromContext`;
- the thinking level in force (v1 header `thinkingLevel`, then `thinking_level_change` entries) is
  a request parameter, not context: each request carries it as `thinking_level` (Anthropic drops
  its message cache when the thinking budget changes);
- pi writes nothing when it is restarted on a session (`pi -c`), yet its system prompt ends with
  the time the process started (`buildSystemPrompt`: "Current date and time: …" to the second),
  so a restart re-writes the whole prompt. Where the usage shows exactly that (see
  `_mark_restarts`) the request carries `system_changed` with the reason, marked as inferred.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
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
    ThreadStart,
    ToolCallBlock,
    ToolResult,
    UserMessage,
    WaitingCalls,
    binary_placeholder,
    clean,
    cost_problem,
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
    linearise,
    most_common,
    opt_str,
    opt_ts,
    parse_arguments,
    parse_ts,
    pi_usage,
    provider_for,
    usage_is_empty,
    waiting_calls,
)
from replay.adapters._record_types import PI_ENTRY_TYPES
from replay.log import Session, Usage
from replay.strategies._prompts import LITERAL_PI_SUMMARY

AGENT = "pi"

NOT_CONTEXT = {"model_change", "thinking_level_change", "custom", "label", "session_info"}

RESTART_WINDOW_S = 300
"""pi-ai marks its cache breakpoints `{type: "ephemeral"}` without a TTL: Anthropic's default
5 minutes. Inside it a live prefix can only be lost by a changed prompt head (or the provider)."""

HEADER_FIELDS = {"id": "a string", "timestamp": "an ISO-8601 time", "cwd": "a string"}
"""Written by every pi version into its `session` header."""
HEADER_LABELS = ("provider", "modelId", "thinkingLevel", "branchedFrom", "parentSession")
"""Optional string fields of the header (written by some versions, or for a fork)."""

FAILED = ("aborted", "error")
"""Stop reasons of a response that failed: billed only when its usage says so."""

BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"
"""strategies.md (pi messages.ts): no newline before the closing tag, unlike the compaction
summary's (`LITERAL_PI_SUMMARY`)."""


def _blocks_text(content: Any) -> tuple[str, bool]:
    """Content blocks as text, and whether a placeholder stands in for part of it (images:
    `binary_placeholder`)."""
    if isinstance(content, str):
        return clean(content), False
    if not isinstance(content, list):
        raise Bad("expected `content` to be a string or a list of blocks")
    parts = []
    estimated = False
    for b in content:
        if not isinstance(b, dict):
            raise Bad("expected content blocks to be objects")
        placeholder = binary_placeholder(b)
        if placeholder is not None:
            parts.append(placeholder)
            estimated = True
        elif (kind := get_str(b, "type")) == "text":
            parts.append(get_str(b, "text", ""))
        elif kind == "image":
            # An image without its base64 data: its pixels are not in the log either.
            parts.append(f"[image {get_str(b, 'mimeType', '')} 0 base64 chars]")
            estimated = True
        else:
            parts.append(dumps(b))
    return "\n".join(parts), estimated


def _bash_text(m: dict[str, Any]) -> str:
    """pi's `bashExecutionToText`: how a user `!command` reaches the model."""
    text = f"Ran `{get_str(m, 'command', '')}`\n"
    output = get_str(m, "output", "")
    text += f"```\n{output}\n```" if output else "(no output)"
    if m.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif m.get("exitCode") not in (None, 0):
        text += f"\n\nCommand exited with code {m.get('exitCode')}"
    if m.get("truncated") and isinstance(m.get("fullOutputPath"), str):
        text += f"\n\n[Output truncated. Full output: {m['fullOutputPath']}]"
    return text


def _header_damage(h: dict[str, Any]) -> list[str]:
    """What the `session` header lacks or holds with the wrong type, as "`field` (a type)"."""
    damaged = [
        f"`{k}` ({kind})"
        for k, kind in HEADER_FIELDS.items()
        if not (opt_ts(h.get(k)) if k == "timestamp" else opt_str(h, k))
    ]
    version = h.get("version")
    if version is not None and not (type(version) is int and version > 0):
        damaged.append("`version` (a positive integer)")
    return damaged + [
        f"`{k}` (a string)"
        for k in HEADER_LABELS
        if h.get(k) is not None and not isinstance(h[k], str)
    ]


class _Entry:
    __slots__ = ("number", "obj", "id", "parent", "index")

    def __init__(self, number: int, obj: dict[str, Any], index: int) -> None:
        self.number = number
        self.obj = obj
        self.index = index
        self.id: str = ""
        self.parent: str | None = None


class _Reader:
    def __init__(self, path: Path, strict: bool) -> None:
        self.path = path
        self.issues = Issues(path, strict)
        self.builder = SessionBuilder(path, self.issues)
        self.header_obj: dict[str, Any] = {}
        self.entries: list[_Entry] = []
        self.ignored: Counter[str] = Counter()
        self.version = 1
        self.models: list[str | None] = []
        self.expected_gaps: set[str] = set()
        """Assistant events whose unanswered tool calls pi itself fills (see `_compaction`)."""
        self.initial_level: str | None = None
        """Thinking level the session started with (v1 header `thinkingLevel`; later versions
        only log changes)."""
        self.parent: dict[str, str | None] = {}
        self.by_id: dict[str, _Entry] = {}
        self.forked_at: datetime | None = None
        """When a forked session (`branchedFrom`, `parentSession`) was created: the responses
        it copied from its parent are older, and were billed there (`copied_from_parent`)."""
        self.copied_requests = 0

    def read(self) -> Session:
        index = 0
        for number, obj in iter_json_lines(self.path, self.issues):
            if obj.get("type") == "session" and not self.header_obj:
                if self.entries:
                    self.issues.add(number, "expected the `session` header on the first line")
                self._header(number, obj)
                index += 1
                continue
            if index == 0 and self.issues.items:
                # The unreadable line before stood for the header: v1's `firstKeptEntryIndex`
                # still counts it (index 0).
                index = 1
            entry = _Entry(number, obj, index)
            index += 1
            guarded(self.issues, number, lambda e=entry: self._check(e))
        if not self.header_obj:
            self._headerless()
        self._ids()
        return self._convert()

    def _header(self, number: int, obj: dict[str, Any]) -> None:
        """The `session` header. A damaged field is reported and read as absent (the version
        then comes from the entries, the start time from the first one: see `_convert`)."""
        self.header_obj = obj
        version = obj.get("version")
        self.version = version if type(version) is int and version > 0 else 1
        self.initial_level = opt_str(obj, "thinkingLevel")
        if any(isinstance(obj.get(k), str) for k in ("branchedFrom", "parentSession")):
            self.forked_at = opt_ts(obj.get("timestamp"))
        damaged = _header_damage(obj)
        if damaged:
            self.issues.add(
                number,
                f"expected the pi `session` header to have {', '.join(damaged)}",
                remedy="read without them" if len(damaged) > 1 else "read without it",
            )

    def _headerless(self) -> None:
        """Quirk (a damaged first line): no readable `session` header. With entries to read, a
        lenient read goes on without it; the damaged line, already reported, is its report."""
        if not self.entries:
            self.issues.fatal(1, "expected a pi `session` header line")
        first = self.entries[0].number
        if not any(err.line is not None and err.line < first for err in self.issues.items):
            self.issues.add(
                first,
                "expected a pi `session` header line before the first entry",
                remedy="read without it",
            )

    def _check(self, entry: _Entry) -> None:
        obj = entry.obj
        kind = get_str(obj, "type")
        if kind == "session":
            raise Bad("expected one `session` header, got a second")
        if kind not in PI_ENTRY_TYPES:
            raise Bad(f"unknown pi entry type {kind!r}")
        parse_ts(obj.get("timestamp"))
        if kind == "message":
            message = get_dict(obj, "message", required=True)
            role = get_str(message, "role", required=True)
            if role == "assistant":
                # (A wrong-typed `usage` is not checked here: it is a garbled usage, reported
                # by `_Thread._usage` and kept as a request without usage, its line read.)
                get_list(message, "content")
        self.entries.append(entry)

    def _ids(self) -> None:
        if not any("id" in e.obj for e in self.entries):
            # Quirk (v1 files have no ids): pi's migrateV1ToV2 — sequential ids, a linear chain,
            # and `firstKeptEntryIndex` (index among the file's entries, header = 0) → an id.
            self._drop_repeated_lines()
            by_index: dict[int, _Entry] = {}
            previous: str | None = None
            for n, e in enumerate(self.entries, start=1):
                e.id = f"{n:08x}"
                e.parent = previous
                previous = e.id
                by_index[e.index] = e
            for e in self.entries:
                if e.obj.get("type") == "compaction" and "firstKeptEntryId" not in e.obj:
                    idx = e.obj.get("firstKeptEntryIndex")
                    target = by_index.get(idx) if isinstance(idx, int) else None
                    e.obj["firstKeptEntryId"] = target.id if target else None
            return
        if self.version < 2:
            # Ids, yet no v2+ header (a damaged or lost one): the entries show v2 at least, and
            # their ids tell a line written twice from a second entry.
            self.version = 2
        seen: dict[str, int] = {}
        kept = []
        for e in self.entries:
            eid = e.obj.get("id")
            parent = e.obj.get("parentId")
            if not isinstance(eid, str) or not eid:
                self.issues.add(e.number, "expected an entry `id` (pi session v2+)")
                continue
            if eid in seen:
                self.issues.add(e.number, f"duplicate record: id {eid} already on line {seen[eid]}")
                continue
            if parent is not None and not isinstance(parent, str):
                self.issues.add(e.number, "expected `parentId` to be a string or null")
                continue
            seen[eid] = e.number
            e.id, e.parent = eid, parent
            kept.append(e)
        self.entries = kept

    def _drop_repeated_lines(self) -> None:
        """Quirk (v1 entries have no ids): a line written twice is told by its content; every
        entry has a timestamp to the millisecond, so two equal ones are one record."""
        seen: dict[bytes, int] = {}
        kept = []
        for e in self.entries:
            digest = hashlib.blake2b(
                json.dumps(e.obj, sort_keys=True, ensure_ascii=False).encode(), digest_size=16
            ).digest()
            first = seen.setdefault(digest, e.number)
            if first != e.number:
                self.issues.add(
                    e.number, f"duplicate record: the same entry as line {first} (a v1 file)"
                )
                continue
            kept.append(e)
        self.entries = kept

    # ------------------------------------------------------------------------------------
    def level_at(self, entry_id: str | None) -> str | None:
        """Thinking level in force just after entry `entry_id` (the latest change on its path)."""
        while entry_id is not None:
            entry = self.by_id.get(entry_id)
            if entry is None:
                break
            if entry.obj.get("type") == "thinking_level_change":
                level = opt_str(entry.obj, "thinkingLevel")
                if level:
                    return level
            entry_id = self.parent.get(entry_id)
        return self.initial_level

    def _convert(self) -> Session:
        by_id = self.by_id = {e.id: e for e in self.entries}
        parent = self.parent = {e.id: e.parent for e in self.entries}
        leaf = self.entries[-1].id if self.entries else None
        path, branches = linearise([e.id for e in self.entries], parent, lambda _n, _p: False, leaf)
        main = _Thread(self, MAIN_THREAD)
        main.emit([by_id[i] for i in path])
        self.builder.thread(MAIN_THREAD).events = main.events
        for k, branch in enumerate(branches, start=1):
            nodes = [by_id[i] for i in branch.nodes]
            if not any(_is_request(n.obj) for n in nodes):
                continue
            name = f"branch-{k}"
            t = _Thread(self, name)
            if branch.fork is not None:
                t.copy_prefix(main, branch.fork)
                t.level = t.turn_level = self.level_at(branch.fork)
            t.emit(nodes)
            start = ThreadStart(
                ts=(t.events[0].ts if t.events else main.events[0].ts),
                thread=MAIN_THREAD,
                thread_id=name,
                parent_thread=MAIN_THREAD,
            )
            start.id = self.builder.new_id()
            start.branch_of = MAIN_THREAD
            t.events.insert(0, start)
            self.builder.thread(name).events = t.events

        def expected(owner: Any) -> bool:
            # A failed response is out of context (`in_context`): its calls are never pending.
            return owner.id in self.expected_gaps

        self.builder.repair_tool_results(expected)
        h = self.header_obj
        markers = [
            e
            for t in self.builder.threads.values()
            for e in t.events
            if isinstance(e, RequestMarker)
        ]
        model = most_common(
            [m.model for m in markers] or [opt_str(h, "modelId")], "claude-sonnet-4-5"
        )
        provider = most_common([m.provider for m in markers], "") or provider_for(
            opt_str(h, "provider"), model
        )
        header = SessionHeader(
            ts=opt_ts(h.get("timestamp")) or main.first_ts() or EPOCH,
            session_id=opt_str(h, "id") or self.path.stem,
            agent=AGENT,
            provider=provider,
            model=model,
            cwd=opt_str(h, "cwd"),
            # Quirk: pi logs neither its system prompt nor its tool schemas.
            estimated=["system", "tools"],
        )
        header.source_format = f"pi-session-v{self.version}"
        if self.version < 2:
            header.migrated_from_version = self.version
        for key in ("parentSession", "branchedFrom"):
            if isinstance(h.get(key), str):
                setattr(header, key, clean(h[key]))
        if self.copied_requests:
            header.copied_requests = self.copied_requests
        if self.ignored:
            header.ignored_records = dict(sorted(self.ignored.items()))
        session = self.builder.session(header)
        if self.forked_at is not None:
            # The fork started when its header says: the events it copied are older.
            header.ts = self.forked_at
        estimate_hidden_prefix(session)
        restarts = _mark_restarts(session)
        if restarts:
            header.inferred_restarts = restarts
        return session


def _is_request(obj: dict[str, Any]) -> bool:
    """Whether an entry is a request, as `_Thread._assistant` reads it: an assistant message
    with usage; one whose usage is lost or garbled unless it failed (see `_Thread._usage`); one
    with zero usage when it answered and did not fail (a provider that reports none)."""
    m = obj.get("message")
    if obj.get("type") != "message" or not isinstance(m, dict) or m.get("role") != "assistant":
        return False
    raw = m.get("usage")
    usage = None
    if isinstance(raw, dict) and raw:
        try:
            usage = pi_usage(raw)
        except Bad:
            usage = None  # garbled: as good as lost
    if not usage_is_empty(usage):
        return True
    if m.get("stopReason") in FAILED:
        return False  # never billed
    if usage is None:
        return True  # lost or garbled: a request without usage
    content = m.get("content")
    return isinstance(content, list) and bool(content)  # zero usage: a request if it answered


RESTART_REASON = (
    "new pi process (inferred): pi's system prompt carries the time its process started, and "
    "the provider re-wrote the whole prompt inside the cache lifetime after the user acted"
)


@dataclass
class _Turn:
    """Per thread, what happened since its last request (for `_mark_restarts`)."""

    request: RequestMarker | None = None
    typed: bool = False
    """A human message (typed text or `!cmd`) came after it."""
    rewritten: bool = False
    """A compaction came after it (the prompt changed in the log itself)."""


def _mark_restarts(session: Session) -> int:
    """Quirk (restarts are not logged): mark the requests sent by a freshly started pi process.

    pi builds its system prompt once per process, ending with the start time to the second, and
    `pi -c` appends nothing to the session file. A new process shows in the usage as a request
    that reads nothing beyond the hidden head (tools + system, `hidden_prefix_tokens`) and
    re-writes the rest, although the previous request (same model, same thinking level, no
    compaction between) cached that prefix less than `RESTART_WINDOW_S` earlier. A process only
    starts when the user acts, so the log must also show one of: a message the user typed (or a
    `!cmd`) since the previous request — pi was quit, or crashed mid-turn, and resumed — or a
    request that started before the previous one (two pi processes appending to one v1 file,
    whose linear order hides it). Such requests get `system_changed` = `RESTART_REASON` and
    `system_change_inferred` = True (sized from their own usage: fidelity does not score their
    read as a prediction); the count goes to the header (`inferred_restarts`). Returns that
    count.
    """
    hidden = {MAIN_THREAD: getattr(session.header, "hidden_prefix_tokens", 0) or 0}
    for e in session.events:
        if isinstance(e, ThreadStart):
            hidden[e.thread_id] = getattr(e, "hidden_prefix_tokens", 0) or hidden[MAIN_THREAD]
    turns: dict[str, _Turn] = {}
    count = 0
    for e in session.events:
        turn = turns.setdefault(e.thread, _Turn())
        if isinstance(e, RequestMarker):
            if _restarted(turn, e, hidden.get(e.thread, hidden[MAIN_THREAD])):
                e.system_changed = RESTART_REASON
                e.system_change_inferred = True
                count += 1
            turns[e.thread] = _Turn(request=e)
        elif isinstance(e, UserMessage) and not e.injected:
            turn.typed = True
        elif isinstance(e, Compaction):
            turn.rewritten = True
    return count


def _restarted(turn: _Turn, request: RequestMarker, hidden: int) -> bool:
    previous = turn.request
    concurrent = previous is not None and request.ts < previous.ts
    if previous is None or not (turn.typed or concurrent) or turn.rewritten:
        return False
    if usage_is_empty(previous.usage) or usage_is_empty(request.usage):
        return False
    if (request.provider, request.model) != (previous.provider, previous.model):
        return False  # a model switch explains the miss
    if getattr(request, "thinking_level", None) != getattr(previous, "thinking_level", None):
        return False  # a logged parameter change explains it
    if request.provider != "anthropic" or (request.ts - previous.ts).total_seconds() >= (
        RESTART_WINDOW_S
    ):
        return False  # only Anthropic's explicit cache makes such a miss certain
    before, now = previous.usage, request.usage
    cached_before = before.cache_read_tokens + before.cache_write_5m_tokens
    written = now.cache_write_5m_tokens + now.cache_write_1h_tokens
    return cached_before > hidden and now.cache_read_tokens <= hidden and written > 0


class _Thread:
    def __init__(self, reader: _Reader, name: str) -> None:
        self.reader = reader
        self.name = name
        self.events: list[Any] = []
        self.first_event: dict[str, int] = {}
        """Entry id → index of its first event in `events` (len(events) if it added none)."""
        self.calls: dict[str, str] = {}
        self.waiting = WaitingCalls()
        self.level: str | None = reader.initial_level
        """Thinking level in force at this point of the thread (file order)."""
        self.turn_level: str | None = reader.initial_level
        """Thinking level the current turn's requests are sent with: pi reads it once per
        prompt (`Agent.prompt` builds the request options when the user's message starts the
        turn), so changes logged while a response streams apply from the next turn on."""

    def first_ts(self) -> Any:
        return self.events[0].ts if self.events else None

    def add(self, event: Any, entry: _Entry) -> Any:
        event.thread = self.name
        event.id = self.reader.builder.new_id()
        event.line = entry.number
        event.entry_id = entry.id
        self.events.append(event)
        return event

    def copy_prefix(self, main: _Thread, fork: str) -> None:
        """The shared history up to and including entry `fork`, as copies (no requests)."""
        import copy

        end = len(main.events)
        entries = list(main.first_event)  # in file order
        if fork in main.first_event:
            # Every event produced by entries up to the fork: up to the next entry's first. (Not
            # the first index past the fork's: an entry that adds no event, a model_change, shares
            # its index with the next entry, whose events are not the branch's.)
            after = entries.index(fork) + 1
            if after < len(entries):
                end = main.first_event[entries[after]]
        mapping: dict[str, str] = {}
        for event in main.events[:end]:
            if isinstance(event, RequestMarker | ThreadStart):
                continue
            dup = copy.deepcopy(event)
            dup.thread = self.name
            dup.copied_from = event.id
            dup.id = self.reader.builder.new_id()
            mapping[event.id] = dup.id
            if isinstance(dup, AssistantMessage):
                dup.request_id = None
                for b in dup.blocks:
                    if isinstance(b, ToolCallBlock):
                        self.calls[b.id] = b.name
            if isinstance(dup, Compaction):
                dup.replaces = [mapping[r] for r in dup.replaces if r in mapping]
            self.events.append(dup)
        answered = {e.call_id for e in self.events if isinstance(e, ToolResult)}
        for event in self.events:
            if isinstance(event, AssistantMessage):
                for b in event.blocks:
                    if isinstance(b, ToolCallBlock) and b.id not in answered:
                        self.waiting.add(getattr(b, "source_id", None) or b.id, b.id)

    def emit(self, entries: list[_Entry]) -> None:
        for e in entries:
            self.first_event.setdefault(e.id, len(self.events))
            guarded(self.reader.issues, e.number, lambda e=e: self._entry(e))

    def _entry(self, entry: _Entry) -> None:
        obj = entry.obj
        kind = obj["type"]
        ts = parse_ts(obj.get("timestamp"))
        if kind in NOT_CONTEXT:
            if kind == "thinking_level_change":
                self.level = opt_str(obj, "thinkingLevel") or self.level
            self.reader.ignored[kind] += 1
            return
        if kind == "compaction":
            self._compaction(entry, ts)
        elif kind == "branch_summary":
            text = BRANCH_SUMMARY_PREFIX + get_str(obj, "summary", "") + BRANCH_SUMMARY_SUFFIX
            event = UserMessage(ts=ts, text=text, injected=True)
            event.kind = "branch_summary"
            self.add(event, entry)
        elif kind == "custom_message":
            text, estimated = _blocks_text(obj.get("content", ""))
            event = UserMessage(ts=ts, text=text, injected=True)
            event.kind = "custom_message"
            if estimated:
                event.estimated_text = True
            self.add(event, entry)
        else:
            self._message(entry, ts, get_dict(obj, "message", required=True))

    def _message(self, entry: _Entry, ts: Any, m: dict[str, Any]) -> None:
        role = get_str(m, "role", required=True)
        if role == "user":
            self.turn_level = self.level
            text, estimated = _blocks_text(m.get("content", ""))
            event = UserMessage(ts=ts, text=text)
            if estimated:
                event.estimated_text = True
            self.add(event, entry)
        elif role == "assistant":
            self._assistant(entry, ts, m)
        elif role == "toolResult":
            source = get_str(m, "toolCallId")
            cid = self.waiting.take(source) or (source if source in self.calls else None)
            if cid is None:
                pending = waiting_calls(self.events)
                if not pending:
                    raise Bad(f"expected a tool call before the result for {source!r}")
                cid = pending[0]  # quirk (REDACTED / unknown ids): oldest unanswered call
                self.waiting.drop(cid)
                if source != "REDACTED":
                    self.reader.issues.add(
                        entry.number, f"expected a tool call {source!r}; paired with {cid!r}"
                    )
            output, estimated = _blocks_text(m.get("content", ""))
            event = ToolResult(
                ts=ts,
                call_id=cid,
                tool_name=get_str(m, "toolName", "") or self.calls.get(cid, "unknown"),
                output=output,
                is_error=bool(m.get("isError")),
            )
            if estimated:
                event.estimated_text = True
            self.add(event, entry)
        elif role == "bashExecution":
            if m.get("excludeFromContext"):
                self.reader.ignored["bashExecution/excluded"] += 1
                return
            event = UserMessage(ts=ts, text=_bash_text(m))
            event.kind = "bashExecution"
            self.add(event, entry)
        elif role in ("branchSummary", "compactionSummary") and "summary" in m:
            # pi's convertToLlm (messages.ts) sends them wrapped, as it does the summary entries.
            summary = get_str(m, "summary", "") or ""
            text = (
                BRANCH_SUMMARY_PREFIX + summary + BRANCH_SUMMARY_SUFFIX
                if role == "branchSummary" else LITERAL_PI_SUMMARY.format(summary=summary)
            )
            event = UserMessage(ts=ts, text=text, injected=True)
            event.kind = role
            self.add(event, entry)
        elif role in ("custom", "branchSummary", "compactionSummary", "hookMessage"):
            text, estimated = _blocks_text(m.get("content", m.get("summary", "")))
            event = UserMessage(ts=ts, text=text, injected=True)
            event.kind = role
            if estimated:
                event.estimated_text = True
            self.add(event, entry)
        else:
            raise Bad(f"unknown pi message role {role!r}")

    def _usage(self, entry: _Entry, m: dict[str, Any], stop: str | None) -> Usage | None:
        """The response's usage; None when the line lacks it or garbles it. pi-ai logs usage on
        every response (zero when nothing was billed), so a missing one is damage: reported,
        and the response read as a request without usage (its cost is not lost: the engine
        counts its output from the logged response) unless it failed, and then as never
        billed."""
        raw = m.get("usage")
        problem = "expected `usage` (an object) on an assistant message"
        if isinstance(raw, dict) and raw:
            try:
                usage = pi_usage(raw)
            except Bad as bad:  # garbled: as good as lost (skipping the line lost the request)
                problem = f"{bad} in `usage`"
            else:
                garbled = cost_problem(get_dict(raw, "cost").get("total"), "cost.total")
                if garbled is not None:  # the counts stand; only pi's own figure is lost
                    self.reader.issues.add(entry.number, f"{garbled} in `usage`",
                                           remedy="pi's cost is not kept")
                return usage
        self.reader.issues.add(
            entry.number,
            problem,
            remedy="read as never billed" if stop in FAILED else "kept as a request without usage",
        )
        return None

    def _assistant(self, entry: _Entry, ts: Any, m: dict[str, Any]) -> None:
        stop = get_str(m, "stopReason")
        usage = self._usage(entry, m, stop)
        if usage_is_empty(usage) and stop in FAILED:
            # Quirk: an aborted/error response with zero usage was never billed, and pi does not
            # send it back (transformMessages drops it).
            self.reader.ignored[f"assistant/{stop}-unbilled"] += 1
            return
        # Quirk: an aborted/error response that WAS billed is a request, but pi never sends it
        # back either (measured on large-session: after a failed 16-call response the next
        # prompt grew by 59 tokens), so it is logged out of context.
        dropped = stop in FAILED
        blocks: list[Any] = []
        for n, b in enumerate(get_list(m, "content")):
            if not isinstance(b, dict):
                raise Bad("expected assistant content blocks to be objects")
            kind = get_str(b, "type")
            if kind == "text":
                blocks.append(TextBlock(text=get_str(b, "text", "")))
            elif kind == "thinking":
                blocks.append(
                    ThinkingBlock(
                        thinking=get_str(b, "thinking", ""),
                        signature=get_str(b, "thinkingSignature"),
                    )
                )
            elif kind == "toolCall":
                source = get_str(b, "id")
                cid = self.reader.builder.call_id(source, f"{entry.number}-{n}")
                call = ToolCallBlock(
                    id=cid,
                    name=get_str(b, "name", "") or "unknown",
                    arguments=parse_arguments(b.get("arguments")),
                )
                if source and source != cid:
                    call.source_id = source
                self.calls[cid] = call.name
                self.waiting.add(source or cid, cid)
                blocks.append(call)
            else:
                block = TextBlock(text=dumps(b))
                block.source_type = str(kind)
                blocks.append(block)
        model = get_str(m, "model")
        provider = provider_for(get_str(m, "provider"), model)
        end = ts
        start_raw = m.get("timestamp")
        start = parse_ts(start_raw, "message.timestamp") if start_raw is not None else None
        previous = self.events[-1].ts if self.events else end
        if start is None or start > end:
            start = previous if previous <= end else end
        message = AssistantMessage(ts=end, blocks=blocks)
        if dropped:
            message.in_context = False
        if stop:
            message.stop_reason = stop
        if usage is not None and usage_is_empty(usage):
            message.usage_missing = True
            if not blocks:
                self.add(message, entry)  # nothing was answered: no request
                return
            # Quirk: a provider that reports no usage (pi-ai then logs zeros) still answered:
            # a request whose usage is unknown, not a free one. Counted, not an error.
            self.reader.ignored["assistant/zero-usage (a request without usage)"] += 1
            usage = None
        marker = RequestMarker(
            ts=start,
            request_id=self.reader.builder.request_id(f"{entry.id}"),
            model=model,
            provider=provider,
            usage=usage,
            duration_ms=max(0, int((end - start).total_seconds() * 1000)),
        )
        if isinstance(m.get("api"), str):
            marker.api = clean(m["api"])
        if self.turn_level:
            # A request parameter (pi sends a thinking budget per level; "off" sends none).
            marker.thinking_level = self.turn_level
        forked_at = self.reader.forked_at
        if forked_at is not None and start_raw is not None and start < forked_at:
            # Quirk: a forked session starts with a copy of its parent's history; a response
            # written before the fork was billed in the parent session. Still replayed (the
            # file's own history, its usage real), but marked and counted in the header.
            marker.copied_from_parent = True
            self.reader.copied_requests += 1
        self.add(marker, entry)
        message.request_id = marker.request_id
        estimate_thinking(message, usage, model or "claude-sonnet-4-5")
        self.add(message, entry)

    def _compaction(self, entry: _Entry, ts: Any) -> None:
        obj = entry.obj
        kept = obj.get("firstKeptEntryId")
        context = [
            e
            for e in self.events
            if isinstance(e, UserMessage | AssistantMessage | ToolResult | Compaction)
        ]
        cut = None
        if isinstance(kept, str):
            cut = self.first_event.get(kept)
        # Quirk: a compaction can land between a tool call and its result (the result is never
        # logged); pi's transformMessages then sends an error result for the orphaned call.
        answered = {e.call_id for e in context if isinstance(e, ToolResult)}
        for e in context:
            if isinstance(e, AssistantMessage) and any(
                isinstance(b, ToolCallBlock) and b.id not in answered for b in e.blocks
            ):
                self.reader.expected_gaps.add(e.id)
        position = {id(e): n for n, e in enumerate(self.events)}
        replaced = context if cut is None else [e for e in context if position[id(e)] < cut]
        summary = get_str(obj, "summary", "") or ""
        event = Compaction(
            ts=ts,
            summary=summary,
            message=LITERAL_PI_SUMMARY.format(summary=summary),
            replaces=[e.id for e in replaced],
            tokens_before=get_int(obj, "tokensBefore")
            if obj.get("tokensBefore") is not None
            else None,
        )
        if cut is None and kept is not None:
            event.first_kept_missing = True
        if obj.get("fromHook") is not None:
            event.from_hook = bool(obj.get("fromHook"))
        self.add(event, entry)


def read(path: str | Path, *, strict: bool = False) -> Session:
    """Read a pi session file as a native `Session`."""
    with failures_as_log_errors(path):
        return _Reader(Path(path), strict).read()


__all__ = ["read"]
