"""opencode session exports (`opencode export`, Entire's opencode `full.jsonl`) → `replay-log`.

An export is ONE JSON document: `{info{id, parentID?, version, directory, time}, messages: [{info,
parts}]}`. User messages hold text / file / subtask parts; assistant messages hold steps: each
`step-start` … `step-finish` run is one model request, and `step-finish.tokens` is its usage.

Rules (each names the quirk it handles; see shared research `formats.md` §4):

- one request per `step-finish` (older exports without steps: one per assistant message with
  `tokens`); assistant messages without any (quirk: the `task` tool message opencode writes for a
  `/command` subtask has zero tokens) are history, not requests; a step-finish (or an older
  export's message) that lacks its `tokens`, or garbles them, is still a request, without usage,
  and reported; so is, unreported, a step-finish with all-zero tokens whose step answered;
- `tokens.input` EXCLUDES cache reads, and `tokens.output` INCLUDES `tokens.reasoning` (quirk,
  measured on the nimbus sample: `opencode_usage`): billed output = output, of which reasoning;
- the provider is the model's maker when opencode routes through an aggregator (quirk:
  `providerID: "opencode"` for opencode zen), the original id is kept as `source_provider`;
- reasoning parts on OpenAI routes carry a summary and an encrypted payload (quirk: REDACTED by
  Entire): the thinking block is sized from `tokens.reasoning`; on Anthropic routes the text is
  the thinking sent back (with its signature), and `tokens.reasoning` (always 0: the AI SDK
  reports none for Anthropic) is not a size;
- tool parts → a tool call in the step's response and its result right after it; a pruned
  result (`state.time.compacted`) keeps its output and gets `cleared_at`: the requests sent
  from then on saw opencode's "[Old tool result content cleared]" instead;
- a `summary: true` assistant message is a compaction: its request is kept, its text becomes the
  `Compaction` summary replacing the earlier history;
- subtask sessions: a directory of exports is read as one session, each child session (its
  `info.parentID` is the parent's id) a thread started by the `task` call naming it; child
  sessions missing from the input are listed in the header's `missing_subsessions`; two exports
  of one session (exported again later) are one thread, messages already read dropped;
- REDACTED / repeated message, part and call ids (quirk: Entire redaction) get generated ids.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from replay._errors import LogFormatError
from replay.adapters._common import (
    MAIN_THREAD,
    AssistantMessage,
    Bad,
    Compaction,
    Issues,
    Linked,
    RequestMarker,
    SessionBuilder,
    SessionHeader,
    TextBlock,
    ThinkingBlock,
    ThreadStart,
    ToolCallBlock,
    ToolResult,
    Usage,
    UserMessage,
    clean,
    cost_problem,
    dumps,
    estimate_hidden_prefix,
    estimate_thinking,
    failures_as_log_errors,
    get_dict,
    get_list,
    get_str,
    guarded,
    listed,
    most_common,
    opencode_usage,
    opt_str,
    parse_arguments,
    parse_ts,
    provider_for,
    read_bytes,
    several_sessions,
    usage_is_empty,
)
from replay.log import Session
from replay.log._io import BLANK_BYTES, JSON_DECODER, first_clause, json_error

AGENT = "opencode"
IGNORED_PARTS = {"patch", "snapshot", "agent", "retry", "step-start", "subtask", "compaction"}
"""Part types that are not model context (opencode `message-v2.ts`; formats.md §4)."""
_TOOL_STATUSES = ("pending", "running", "completed", "error")
"""A tool part's `state.status` (opencode `message-v2.ts` ToolState)."""


class _LineCounter:
    """Line numbers of positions in `text`, counted on from the previous position asked about
    (positions come in order: counting each from the start made reading quadratic)."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1

    def __call__(self, pos: int) -> int:
        if pos < self.pos:
            self.pos, self.line = 0, 1
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


def _load_document(path: Path, issues: Issues) -> tuple[dict[str, Any], list[tuple[int, Any]]]:
    """The export's `info` and its messages with their line numbers.

    Quirk (truncated / damaged exports): when the document does not parse as a whole, the
    messages are decoded one by one; the ones before the damage are kept (lenient) and the
    damage is reported at its line.
    """
    data = read_bytes(path)
    if not data.strip(BLANK_BYTES):
        issues.fatal(None, "empty file: expected an opencode export (one JSON document)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        issues.add(line, f"expected UTF-8 text ({err.reason})")
        text = data.decode("utf-8", "replace")
    decoder = JSON_DECODER
    try:
        doc = decoder.decode(text)
    except (ValueError, RecursionError) as err:  # (JSONDecodeError, NaN, a huge integer)
        line = err.lineno if isinstance(err, json.JSONDecodeError) else None
        msg = (
            json_error(err) if isinstance(err, json.JSONDecodeError)
            else "nested too deeply" if isinstance(err, RecursionError)
            else first_clause(err)
        )
        issues.add(line, f"expected a complete opencode export JSON document ({msg})")
        return _salvage(text, decoder, issues)
    if not isinstance(doc, dict):
        issues.fatal(1, "expected an opencode export: a JSON object with `info` and `messages`")
    info = doc.get("info")
    messages = doc.get("messages")
    if not isinstance(info, dict) or not isinstance(messages, list):
        issues.fatal(1, "expected an opencode export: `info` (object) and `messages` (list)")
    lines = _message_lines(text, len(messages), decoder)
    return info, list(zip(lines, messages, strict=False))


_BLANK = re.compile(r"[ \t\r\n]*")


def _past_blank(text: str, pos: int) -> int:
    """The first position from `pos` on that is not JSON whitespace."""
    return _BLANK.match(text, pos).end()  # type: ignore[union-attr]


def _message_start(text: str, pos: int) -> int:
    """Where the message at `pos` starts its text: its first key, `"info"`, the line an export
    gives a message (its `{` ends the line before)."""
    return _past_blank(text, pos + 1) if text[pos] == "{" else pos


def _message_lines(text: str, count: int, decoder: json.JSONDecoder) -> list[int]:
    """The line where each message of a well-formed export starts: the top-level object walked
    key by key (a value decoded only to be skipped, one more decoding of the document) and
    `messages` element by element, as `_salvage` reads a damaged one. Searching the text for
    each `"info"` key took one inside a part (a tool's metadata) for the next message."""
    line_of = _LineCounter(text)
    lines: list[int] = []
    pos = _past_blank(text, 0) + 1  # past the top-level `{`
    while (pos := _past_blank(text, pos)) < len(text) and text[pos] != "}":
        key, pos = decoder.raw_decode(text, pos)
        pos = _past_blank(text, _past_blank(text, pos) + 1)  # past the `:`
        if key != "messages":
            _, pos = decoder.raw_decode(text, pos)
        else:
            lines = []  # (json keeps the last of two `messages` keys)
            pos += 1  # past the `[`
            while (pos := _past_blank(text, pos)) < len(text) and text[pos] != "]":
                lines.append(line_of(_message_start(text, pos)))
                _, pos = decoder.raw_decode(text, pos)
                pos = _past_blank(text, pos)
                pos += text.startswith(",", pos)
            pos += 1
        pos = _past_blank(text, pos)
        pos += text.startswith(",", pos)
    return (lines + [0] * count)[:count]


def _salvage(
    text: str, decoder: json.JSONDecoder, issues: Issues
) -> tuple[dict[str, Any], list[tuple[int, Any]]]:
    info: dict[str, Any] = {}
    at = text.find('"info"')
    if at != -1:
        colon = text.find(":", at)
        try:
            value, _ = decoder.raw_decode(
                text, colon + 1 + (len(text[colon + 1 :]) - len(text[colon + 1 :].lstrip()))
            )
            if isinstance(value, dict):
                info = value
        except (json.JSONDecodeError, RecursionError, ValueError):
            pass
    messages: list[tuple[int, Any]] = []
    line_of = _LineCounter(text)
    at = text.find('"messages"')
    if at == -1:
        issues.fatal(None, "expected an opencode export with a `messages` list")
    pos = text.find("[", at)
    if pos == -1:
        issues.fatal(line_of(at), "expected `messages` to be a list")
    pos += 1
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            break
        try:
            value, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            issues.add(line_of(pos), "expected a complete message object (damaged or cut)")
            break
        messages.append((line_of(_message_start(text, pos)), value))
        pos = end
    if not info and not messages:
        issues.fatal(None, "expected an opencode export: nothing readable")
    return info, messages


def _is_export(path: Path) -> bool:
    from replay.adapters.detect import detect_file

    try:
        return detect_file(path) == "opencode"
    except LogFormatError:
        return False


class _Session:
    """One export (a session or a subtask session)."""

    def __init__(self, path: Path, issues: Issues) -> None:
        self.path = path
        self.info, self.messages = _load_document(path, issues)
        self.id = opt_str(self.info, "id") or ""
        parent = self.info.get("parentID") if isinstance(self.info, dict) else None
        self.parent = parent if isinstance(parent, str) else None


def _related(sessions: list[_Session]) -> list[list[_Session]]:
    """Exports grouped into sessions: a subtask session belongs to the session its `parentID`
    names (transitively), and two exports of one session id are one session."""
    links = Linked()
    by_id: dict[str, int] = {}
    for i, s in enumerate(sessions):
        if s.id:
            links.join(i, by_id.setdefault(s.id, i))
    for i, s in enumerate(sessions):
        if s.parent and s.parent in by_id:
            links.join(i, by_id[s.parent])
    # Each group's top session (no parent among the exports) first: the one to name.
    return [
        sorted(g, key=lambda s: bool(s.parent and s.parent in by_id))
        for g in links.groups(sessions)
    ]


class _Reader:
    def __init__(self, path: Path, strict: bool) -> None:
        self.path = path
        self.issues = Issues(path, strict)
        self.builder = SessionBuilder(path, self.issues)
        self.ignored: Counter[str] = Counter()
        self.task_calls: dict[str, tuple[str, str]] = {}
        """Child session id → (thread, tool call id) of the `task` call that started it."""
        self.models: list[str] = []
        self.seen_messages: dict[str, Path] = {}
        """Message id → the export it was read from."""

    def read(self, files: list[Path] | None = None) -> Session:
        """Read `self.path` (an export, or a directory of exports), or the given `files`."""
        if files is None:
            files = [self.path]
        if self.path.is_dir():
            # A directory may hold other JSON files (e.g. Entire's metadata.json): only the ones
            # that look like exports are read (and then strictly reported like any export).
            files = folder_files(self.path)
        sessions: list[_Session] = []
        for f in files:
            issues = self.issues if f == self.path else Issues(f, self.issues.strict)
            sessions.append(_Session(f, issues))
            if issues is not self.issues:
                self.issues.items.extend(issues.items)
        if not sessions:
            raise LogFormatError(self.path, None, "expected opencode export JSON files")
        groups = _related(sessions)
        if len(groups) > 1:
            # Quirk: a folder of exports may hold several sessions.
            raise several_sessions(
                self.path,
                [[s.path for s in g] for g in groups],
                "one opencode session (an export and its subtask sessions' exports)",
                "subtask",
                "one export file",
            )
        ids = {s.id for s in sessions}
        roots = [s for s in sessions if not s.parent or s.parent not in ids]
        main = roots[0]
        order = [main] + [s for s in sessions if s is not main]
        threads: dict[str, str] = {main.id: MAIN_THREAD}
        for s in order:
            if s is not main and not (s.id and s.id in threads):
                threads[s.id] = f"session-{s.id}" if s.id else f"session-{len(threads)}"
        for s in order:
            self._session(s, threads[s.id])
        # Link child sessions to the task calls that started them.
        linked: set[str] = set()
        for s in order:
            if s is main or threads[s.id] in linked or threads[s.id] == MAIN_THREAD:
                continue
            linked.add(threads[s.id])
            name = threads[s.id]
            events = self.builder.thread(name).events
            parent_thread, call = self.task_calls.get(s.id, (threads.get(s.parent or ""), None))
            if not events:
                continue
            start = ThreadStart(
                ts=events[0].ts,
                thread=parent_thread or MAIN_THREAD,
                thread_id=name,
                parent_thread=parent_thread or MAIN_THREAD,
                parent_call_id=call,
            )
            start.id = self.builder.new_id()
            start.estimated = ["system"]
            events.insert(0, start)
        self.builder.repair_tool_results()
        markers = [
            e
            for t in self.builder.threads.values()
            for e in t.events
            if isinstance(e, RequestMarker)
        ]
        model = most_common([m.model for m in markers] or self.models, "gpt-5")
        provider = most_common([m.provider for m in markers], "") or provider_for(None, model)
        info = main.info
        created = get_dict(info, "time").get("created")
        header = SessionHeader(
            ts=parse_ts(created, "info.time.created")
            if created is not None
            else self.builder.threads[MAIN_THREAD].events[0].ts,
            session_id=main.id or self.path.stem,
            agent=AGENT,
            agent_version=opt_str(info, "version"),
            provider=provider,
            model=model,
            cwd=opt_str(info, "directory"),
            # Quirk: an export holds neither the system prompt nor the tool schemas.
            estimated=["system", "tools"],
        )
        header.source_format = "opencode-export"
        if isinstance(info.get("title"), str):
            header.title = clean(info["title"])
        missing = sorted(k for k in self.task_calls if k not in ids)
        if missing:
            # Quirk: `opencode export` holds one session; its subtask sessions are separate.
            header.missing_subsessions = missing
        if self.ignored:
            header.ignored_records = dict(sorted(self.ignored.items()))
        if MAIN_THREAD not in self.builder.threads or not self.builder.threads[MAIN_THREAD].events:
            self.issues.fatal(None, "expected opencode messages with content, found none")
        session = self.builder.session(header)
        estimate_hidden_prefix(session)
        return session

    # ------------------------------------------------------------------------------------
    def _session(self, s: _Session, thread: str) -> None:
        state = _Thread(self, thread, s.path)
        for line, message in s.messages:
            guarded(
                self.issues,
                line or None,
                lambda m=message, n=line: state.message(n, m),
                path=s.path,
            )
        # Another export of the same session adds its new messages to the same thread.
        self.builder.thread(thread).events.extend(state.events)


def _reasoning_block(p: dict[str, Any], provider: str) -> ThinkingBlock:
    """A reasoning part as the thinking opencode sends back with the response.

    Quirk (two routes): on Anthropic routes (a Claude model, or the AI SDK's `anthropic`
    metadata) the part's text is the thinking block's text, sent back with its
    `metadata.anthropic.signature` (`redactedData`: redacted thinking, sized from the output);
    elsewhere (OpenAI) the text is a reasoning summary and the reasoning itself an encrypted
    item, sized from `tokens.reasoning`."""
    text = get_str(p, "text", "")
    metadata = get_dict(p, "metadata")
    anthropic = get_dict(metadata, "anthropic")
    if provider == "anthropic" or "anthropic" in metadata:
        redacted = get_str(anthropic, "redactedData")
        if redacted:
            block = ThinkingBlock(thinking="", signature=redacted)
            block.redacted = True
            return block
        return ThinkingBlock(thinking=text, signature=get_str(anthropic, "signature"))
    block = ThinkingBlock(thinking="")
    if text:
        block.summary = text  # quirk: a summary; the real reasoning is encrypted
    return block


def _message_billed(info: dict[str, Any], steps: list[dict[str, Any]], parts: list[Any]) -> bool:
    """Whether an assistant message whose parts hold no step-finish is a request of its own.

    Older exports (no step parts): yes when it has usage, or lacks its `tokens` altogether (a
    damaged record, reported when read); not the zero-token `task` message opencode writes for a
    `/command` subtask (quirk: history, not a request). A step left unfinished (a `step-start`
    with no step-finish: an interrupted response) only when the message's tokens say so."""
    tokens = info.get("tokens")
    if tokens is not None:
        return bool(tokens) or not isinstance(tokens, dict)  # wrong-typed: reported when read
    task_only = all(
        isinstance(p, dict) and p.get("type") == "tool" and p.get("tool") == "task" for p in parts
    )
    return not steps[0]["started"] and not task_only


class _Thread:
    def __init__(self, reader: _Reader, name: str, path: Path) -> None:
        self.reader = reader
        self.name = name
        self.path = path
        self.events: list[Any] = []
        self.calls: dict[str, str] = {}
        self.ids: set[str] = set()
        """Message ids read from this export."""

    def add(self, event: Any, line: int) -> Any:
        event.thread = self.name
        event.id = self.reader.builder.new_id()
        if line:
            event.line = line
        self.reader.builder.read_from(event, self.path)
        self.events.append(event)
        return event

    def message(self, line: int, m: Any) -> None:
        if not isinstance(m, dict):
            raise Bad("expected a message object {info, parts}")
        info = get_dict(m, "info", required=True)
        parts = get_list(m, "parts")
        mid = get_str(info, "id")
        if mid and mid != "REDACTED":
            first = self.reader.seen_messages.setdefault(mid, self.path)
            if first != self.path:
                return  # quirk: a session exported twice; the later export repeats messages
            if mid in self.ids:
                raise Bad(f"duplicate record: message {mid} appears twice")
            self.ids.add(mid)
        role = get_str(info, "role", required=True)
        if role not in ("user", "assistant"):
            raise Bad(f"unknown opencode message role {role!r}")
        created = get_dict(info, "time").get("created")
        ts = (
            parse_ts(created, "info.time.created")
            if created is not None
            else (self.events[-1].ts if self.events else None)
        )
        if ts is None:
            raise Bad("expected `info.time.created`")
        if created is None:  # opencode writes it on every message: the record is damaged
            self.reader.issues.add(line or None, "expected `info.time.created`", self.path,
                                   remedy="the previous message's time was taken")
        if role == "user":
            self._user(line, ts, parts)
        elif role == "assistant":
            self._assistant(line, ts, info, parts)
        else:
            raise Bad(f"unknown opencode message role {role!r}")

    def _user(self, line: int, ts: Any, parts: list[Any]) -> None:
        texts: list[str] = []
        injected = True
        estimated = False
        for p in parts:
            if not isinstance(p, dict):
                raise Bad("expected parts to be objects")
            kind = get_str(p, "type")
            if kind == "text":
                if p.get("ignored"):
                    continue
                texts.append(get_str(p, "text", ""))
                if not p.get("synthetic"):
                    injected = False
            elif kind == "file":
                # Quirk: attached files are sent as their content, which an export does not
                # hold (only the URL / path): a short placeholder stands in.
                texts.append(f"[file {get_str(p, 'filename', '') or get_str(p, 'url', '')}]")
                injected = False
                estimated = True  # `replay calibrate` must not size text by the placeholder
            elif kind in IGNORED_PARTS:
                self.reader.ignored[f"user-part/{kind}"] += 1
            else:
                self._unknown_part(line, kind)
        if texts:
            event = UserMessage(ts=ts, text="\n".join(texts), injected=injected)
            if estimated:
                event.estimated_text = True
            self.add(event, line)

    def _unknown_part(self, line: int, kind: str) -> None:
        """A part type opencode did not write when this reader was made (docs/adapters.md, Bad
        input: an unknown record type is reported, so `--strict` refuses it). A newer opencode
        may send it to the model: counting it as not context would hide that."""
        self.reader.issues.add(
            line or None,
            f"unknown opencode part type {kind!r}",
            self.path,
            remedy="the part was skipped",
        )

    def _assistant(self, line: int, ts: Any, info: dict[str, Any], parts: list[Any]) -> None:
        model = get_str(info, "modelID") or None
        if model:
            self.reader.models.append(model)
        source_provider = get_str(info, "providerID")
        provider = provider_for(source_provider, model)
        steps: list[dict[str, Any]] = []
        current: dict[str, Any] | None = None
        for p in parts:
            if not isinstance(p, dict):
                raise Bad("expected parts to be objects")
            kind = get_str(p, "type")
            if kind == "step-start" or current is None:
                started = kind == "step-start"
                current = {"blocks": [], "results": [], "finish": None, "started": started}
                steps.append(current)
                if kind == "step-start":
                    continue
            if kind == "step-finish":
                current["finish"] = p
                current = None
            elif kind == "text":
                current["blocks"].append(TextBlock(text=get_str(p, "text", "")))
            elif kind == "reasoning":
                current["blocks"].append(_reasoning_block(p, provider))
            elif kind == "tool":
                self._tool(line, p, current)
            elif kind in IGNORED_PARTS:
                self.reader.ignored[f"part/{kind}"] += 1
            else:
                self._unknown_part(line, kind)
        summary_message = bool(info.get("summary"))
        if len(steps) == 1 and steps[0]["finish"] is None and _message_billed(info, steps, parts):
            # Older exports: no step parts; the message's own tokens are the request's.
            steps[0]["finish"] = {"tokens": info.get("tokens"), "cost": info.get("cost")}
            steps[0]["usage_of"] = "an assistant message without step parts"
        end_time = get_dict(info, "time").get("completed")
        end = parse_ts(end_time, "info.time.completed") if end_time is not None else ts
        for n, step in enumerate(steps):
            finish = step["finish"]
            billed, usage = self._step_usage(line, step, provider)
            sent = ts if n == 0 else (self.events[-1].ts if self.events else ts)
            if billed:
                marker = RequestMarker(
                    ts=sent,
                    request_id=self.reader.builder.request_id(get_str(finish, "id")),
                    model=model,
                    provider=provider,
                    usage=usage,
                )
                if source_provider and source_provider != provider:
                    marker.source_provider = source_provider
                self.add(marker, line)
            else:
                marker = None
            if summary_message:
                text = "\n".join(b.text for b in step["blocks"] if isinstance(b, TextBlock))
                if marker is not None:
                    marker.compaction_call = True  # the request that wrote the summary
                context = [
                    e.id
                    for e in self.events
                    if isinstance(e, UserMessage | AssistantMessage | ToolResult | Compaction)
                ]
                # The summary message is the assistant's: later requests see it as such.
                compaction = Compaction(
                    ts=end, summary=text, replaces=context, message_role="assistant"
                )
                self.add(compaction, line)
                continue
            if not step["blocks"] and marker is None:
                continue
            message = AssistantMessage(
                ts=end if n == len(steps) - 1 else sent,
                blocks=step["blocks"] or [TextBlock(text="")],
            )
            if marker is not None:
                message.request_id = marker.request_id
                estimate_thinking(message, usage, model or "gpt-5")
            if marker is None or usage is None:
                message.usage_missing = True
            finish_reason = get_str(info, "finish")
            if finish_reason:
                message.stop_reason = finish_reason
            self.add(message, line)
            for result in step["results"]:
                self.add(result, line)

    def _step_usage(
        self, line: int, step: dict[str, Any], provider: str
    ) -> tuple[bool, Usage | None]:
        """(whether the step was a billed request, its usage: None when the log lacks it)."""
        finish = step["finish"]
        if finish is None:
            return False, None
        tokens = finish.get("tokens")
        # Quirk (a damaged record): a step that finished was billed even when its usage was
        # lost or garbled. Kept as a request without usage (its output is counted from the
        # response), and reported: strict mode refuses the export.
        part = finish.get("id") if isinstance(finish.get("id"), str) else ""
        where = step.get("usage_of") or f"the message's step-finish part {part}".rstrip()
        problem = "expected `tokens` (an object: the request's usage)"
        usage = None
        if isinstance(tokens, dict):
            try:
                usage = opencode_usage(tokens, finish.get("cost"))
            except Bad as bad:
                problem = f"{bad} in `tokens`"
            garbled = cost_problem(finish.get("cost"), "cost")
            if usage is not None and garbled is not None:  # the counts stand
                self.reader.issues.add(line or None, f"{garbled} on {where}", self.path,
                                       remedy="opencode's cost is not kept")
        if usage is None:
            self.reader.issues.add(
                line or None,
                f"{problem} on {where}",
                self.path,
                remedy="the request was kept without usage",
            )
            return True, None
        if usage_is_empty(usage):
            if not step["blocks"] or step.get("usage_of"):
                # Nothing answered, or a message's own zero tokens (the `task` message quirk).
                return False, None
            # Quirk: a provider that reports no usage (some OpenAI-compatible servers) leaves
            # all-zero tokens on a step-finish whose step did answer: a request whose usage is
            # unknown, not a free one. Counted in the header, not an error: nothing is damaged.
            self.reader.ignored["step-finish/zero-tokens (a request without usage)"] += 1
            return True, None
        if provider == "anthropic" and not usage.reasoning_tokens:
            # Quirk: the AI SDK reports no reasoning tokens for Anthropic (always 0):
            # not reported, so thinking without text is sized from the output.
            usage.reasoning_tokens = None
        return True, usage

    def _tool(self, line: int, p: dict[str, Any], step: dict[str, Any]) -> None:
        state = get_dict(p, "state")
        source = get_str(p, "callID")
        cid = self.reader.builder.call_id(source, f"{line}-{len(self.calls)}")
        name = get_str(p, "tool", "") or "unknown"
        call = ToolCallBlock(id=cid, name=name, arguments=parse_arguments(state.get("input")))
        if source and source != cid:
            call.source_id = source
        step["blocks"].append(call)
        self.calls[cid] = name
        status = get_str(state, "status", "")
        if status not in _TOOL_STATUSES:
            # A missing or unknown status (docs/adapters.md, Bad input: reported): the result
            # is read as a finished one, as opencode would have sent it.
            self.reader.issues.add(
                line or None,
                f"expected tool part `state.status` to be one of {', '.join(_TOOL_STATUSES)}, "
                f"got {repr(status) if status else 'none'}",
                self.path,
                remedy="read as completed",
            )
        if status in ("pending", "running"):
            return  # never finished: no result was sent (repair_tool_results reports it)
        output = state.get("output") if status != "error" else state.get("error")
        text = output if isinstance(output, str) else dumps(output) if output is not None else ""
        times = get_dict(state, "time")
        end = times.get("end")
        result = ToolResult(
            ts=parse_ts(end, "state.time.end")
            if end is not None
            else (self.events[-1].ts if self.events else parse_ts(times.get("start"))),
            call_id=cid,
            tool_name=name,
            output=clean(text),
            is_error=status == "error",
        )
        compacted = times.get("compacted")
        if compacted is not None:
            # Quirk (opencode's pruning): from this time on opencode sends "[Old tool result
            # content cleared]" instead of the output (message-v2.ts toModelMessages).
            result.cleared_at = parse_ts(compacted, "state.time.compacted")
        step["results"].append(result)
        metadata = get_dict(state, "metadata")
        child = metadata.get("sessionId")
        if name == "task" and isinstance(child, str):
            self.reader.task_calls[child] = (self.name, cid)


def read(path: str | Path, *, strict: bool = False) -> Session:
    """Read an opencode export (or a directory of exports: a session and its subtasks)."""
    p = Path(path)
    if not p.exists():
        raise LogFormatError(p, None, "no such file")
    with failures_as_log_errors(p):
        return _Reader(p, strict).read()


def folder_files(folder: Path) -> list[Path]:
    """The exports `read` reads in a folder: its `*.json` files that look like exports."""
    return [f for f in listed(folder, "*.json") if _is_export(f)]


def session_groups(files: list[Path]) -> list[list[Path]]:
    """Export files grouped into sessions by the rule `read` applies to a directory (a subtask
    session's `parentID` names its parent; two exports of one session id are one session),
    each group led by its top session's export (the one `read_session` names the session by).
    A file that cannot be read stays alone."""
    sessions: list[_Session] = []
    alone: list[list[Path]] = []
    for f in sorted(files):
        try:
            s = _Session(f, Issues(f, False))
        except LogFormatError:
            alone.append([f])
            continue
        s.messages = []  # only the ids tie files
        sessions.append(s)
    return [[s.path for s in g] for g in _related(sessions)] + alone


def read_session(files: list[Path], *, strict: bool = False) -> Session:
    """Read the exports of one group of `session_groups` as one session (read as a directory
    holding just them would be)."""
    main = Path(files[0])
    with failures_as_log_errors(main):
        return _Reader(main, strict).read([Path(f) for f in files])


__all__ = ["folder_files", "read", "read_session", "session_groups"]
