"""Claude Code session logs (`~/.claude/projects/<cwd>/<sessionId>.jsonl`) → `replay-log`.

One line per record. The records that matter: `user` (prompts, tool results, injected meta text,
the compaction summary), `assistant` (ONE content block per line; the lines of one API response
share `message.id` + `requestId`), `system/compact_boundary`, `attachment` (structured data the
CLI renders into `<system-reminder>` text). Everything else is UI or bookkeeping.

Rules (each names the quirk it handles; see shared research `formats.md` §1):

- one API call = the lines sharing `requestId` + `message.id`; their blocks are concatenated in
  file order, and the line with the largest usage wins (quirk: 1.0.x writes partial
  `output_tokens` on the first lines of a response); a response whose lines lost or garbled
  their `usage` is reported and stays a request, without usage when none kept one;
- the order of a thread is its file order; `parentUuid` decides which lines are on the active
  path and which belong to an abandoned branch (quirk: streamed tool calls and parallel tool
  results hang off siblings, so a strict parent walk would drop some of them);
- `compact_boundary` + the `isCompactSummary` user message → a native `Compaction`;
- `microcompact_boundary` (Claude Code cleared old tool results): which ones is not documented
  and no sample shows one, so nothing is cleared; the thread's next request is marked
  `after_microcompact` and the output notes it;
- `isSidechain` lines (1.0.x / 2.0.x inline subagents) and `<sessionId>/subagents/agent-*.jsonl`
  files (2.1.x) → their own threads, linked to the parent's Task/Agent call; the older
  `<project>/agent-*.jsonl` files beside a given transcript are read when they are of its
  session (`_Reader.read_agents_beside`); an inline sidechain line whose parent is missing (a
  gap) continues its own sidechain, reported (`_Reader._bridge_sidechain_gaps`); a main-chain
  line after a gap hangs off the line before it, reported (`_Reader._report_chain_gaps`);
- `progress` lines are not context (quirk: `agent_progress` embeds subagent messages with usage
  that the main transcript does not bill; counting them would double count);
- `model: "<synthetic>"` and `isApiErrorMessage` assistant lines are not requests and not context;
- resumed sessions copy earlier lines into the new file: lines and responses already read from an
  earlier file (same uuid / message id, or the same record at the same place: `_drop_copies`)
  are dropped;
- a response line repeating the `message.id` of an earlier request under another `requestId`,
  with no block that request lacks, is a copy (quirk, ccusage #913: sidechains replay a parent's
  response, its usage included): context of its thread, not a request (`_Reader._replayed`);
- a directory must hold one session (quirk: `~/.claude/projects/<cwd>/` holds every session run
  there): files the data does not tie together (`_FileLinks`) are refused, not merged.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
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
    anthropic_iterations_problem,
    anthropic_price_context,
    anthropic_split_problem,
    anthropic_usage,
    binary_placeholder,
    clean,
    dumps,
    estimate_hidden_prefix,
    estimate_thinking,
    failures_as_log_errors,
    get_dict,
    get_list,
    get_str,
    guarded,
    iter_json_lines,
    linearise,
    listed,
    most_common,
    parse_arguments,
    parse_ts,
    reparent_missing,
    several_sessions,
    usage_is_empty,
    waiting_calls,
)
from replay.adapters._record_types import CLAUDE_CODE_CONVERSATION, CLAUDE_CODE_METADATA
from replay.log import Session
from replay.log._events import MAX_TOKENS
from replay.log._io import without_bom

AGENT = "claude-code"

SYNTHETIC_MODEL = "<synthetic>"

# Attachment types whose structured data is rendered into model-visible text by the CLI. Only the
# data is logged, so the text below is a reconstruction (events carry `estimated_text: true`).
_ATTACHMENT_TEXT = {
    "queued_command": lambda a: a.get("prompt"),
    "skill_listing": lambda a: a.get("content"),
    # A wrong-typed field is reported (docs/adapters.md, Bad input): a string `addedLines` was
    # rendered one character a line, a non-object `content.file` stopped on an AttributeError.
    "agent_listing_delta": lambda a: "\n".join(str(x) for x in get_list(a, "addedLines")),
    "deferred_tools_delta": lambda a: "\n".join(str(x) for x in get_list(a, "addedNames")),
    "file": lambda a: (
        get_dict(get_dict(a, "content"), "file").get("content")
        if isinstance(a.get("content"), dict)
        else a.get("content")
    ),
    "compact_file_reference": lambda a: a.get("filename"),
    "hook_additional_context": lambda a: (
        "\n".join(str(x) for x in a.get("content") or [])
        if isinstance(a.get("content"), list)
        else a.get("content")
    ),
    "todo": lambda a: dumps(a.get("content")) if a.get("content") else None,
    "plan_mode": lambda a: a.get("planFilePath"),
}


_STREAM_LOOKBACK = 64
"""Lines back the search for a redacted response's earlier block looks (its tool results and
progress lines sit between them)."""


def _is_tool_result(obj: dict[str, Any]) -> bool:
    """A user line holding tool results only."""
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return obj.get("type") == "user" and isinstance(content, list) and bool(content) and all(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _prompt_usage(obj: dict[str, Any]) -> tuple[Any, ...] | None:
    """The prompt side of an assistant line's usage (None when it has none)."""
    message = obj.get("message")
    usage = message.get("usage") if isinstance(message, dict) else None
    if not isinstance(usage, dict):
        return None
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return tuple(usage.get(k) for k in keys)


@dataclass
class _Line:
    """One record of the chain, with what the adapter needs from it."""

    number: int
    path: str
    obj: dict[str, Any]
    kind: str
    uuid: str
    parent: str | None
    thread_key: str
    ts: Any
    message_id: str | None = None
    request_id: str | None = None
    synthetic: bool = False
    file_index: int = 0
    copy_of: tuple[str | None, str | None] | None = None
    """The earlier response this line repeats (`_Reader._replayed`), if it is a copy."""
    resumed: bool = False
    """A line of a response already read from an earlier file (dropped by `_drop_copies`)."""
    sidechain: bool = False
    """An inline sidechain line (`isSidechain` in a transcript, not a subagent file)."""

    @property
    def response(self) -> tuple[str | None, str | None]:
        """The API call an assistant line belongs to: (`requestId`, `message.id`). Two calls
        can share a `message.id` under different `requestId`s (formats.md §1: one call = the
        lines sharing both)."""
        return (self.request_id, self.message_id)


@dataclass
class _ThreadState:
    name: str
    events: list[Any] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)
    """Generated call id → tool name."""
    pending: list[str] = field(default_factory=list)
    """Call ids without a result yet, in call order."""
    by_source_call: dict[str, list[str]] = field(default_factory=dict)
    """Logged tool_use id → generated call ids (several when the log repeats or redacts ids)."""
    mark: dict[str, int] = field(default_factory=dict)
    """Line uuid → number of events emitted once that line was processed."""
    origin: dict[str, str] = field(default_factory=dict)
    """Event id → uuid of the line it came from."""
    microcompacted: bool = False
    """A `microcompact_boundary` was read since the thread's last request."""


# --------------------------------------------------------------------------------------------------


def _files(path: Path) -> tuple[list[Path], list[Path]]:
    """(main transcript files, subagent files) for a file or a directory."""
    if path.is_dir():
        mains = [
            p for p in listed(path, "*.jsonl") if not p.name.startswith("agent-") and _is_claude(p)
        ]
        subs = listed(path, "agent-*.jsonl") + listed(path / "subagents", "agent-*.jsonl")
        for m in mains:
            subs += listed(path / m.stem / "subagents", "agent-*.jsonl")
        beside = path.parent / f"{path.name}.jsonl"
        if not mains and beside.is_file():
            # The `<sessionId>/` folder (subagents/ inside) was given: its transcript is beside it.
            mains = [beside]
        if not mains and not subs:
            raise LogFormatError(path, None, "expected Claude Code *.jsonl files in this directory")
        return _order(mains + subs)
    subs = listed(path.parent / path.stem / "subagents", "agent-*.jsonl")
    return [path], subs


def folder_files(folder: Path) -> list[Path]:
    """The files `read` reads for a folder: transcripts, then subagent files."""
    mains, subs = _files(folder)
    return mains + subs


def _order(files: list[Path]) -> tuple[list[Path], list[Path]]:
    """Files of one folder → (transcripts, subagent files) in reading order: transcripts oldest
    first (quirk, resume / --continue: a later file repeats earlier lines), then `agent-*` files
    beside them, in `subagents/`, and in each transcript's `<sessionId>/subagents/`. With no
    transcript, the first subagent file stands in for it."""
    mains = [f for f in files if not f.name.startswith("agent-")]
    names = {(m.parent, m.stem) for m in mains}

    def place(sub: Path) -> tuple[int, str, str]:
        folder = sub.parent
        if folder.name != "subagents":
            return (0, "", sub.name)
        if (folder.parent.parent, folder.parent.name) in names:
            return (2, folder.parent.name + ".jsonl", sub.name)
        return (1, "", sub.name)

    subs = sorted((f for f in files if f.name.startswith("agent-")), key=place)
    mains.sort(key=lambda p: (_first_timestamp(p), p.name))
    if not mains and subs:
        mains, subs = subs[:1], subs[1:]
    return mains, subs


def _is_claude(path: Path) -> bool:
    from replay.adapters.detect import detect_file

    try:
        return detect_file(path) == "claude-code"
    except LogFormatError:
        return False


def _first_timestamp(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            for raw in handle:
                try:
                    obj = json.loads(without_bom(raw))
                except (ValueError, RecursionError):
                    continue
                if isinstance(obj, dict) and isinstance(obj.get("timestamp"), str):
                    return obj["timestamp"]
    except OSError:
        pass
    return ""


def _agent_file_ids(path: Path) -> tuple[str | None, str]:
    """(`sessionId`, agent id) of a subagent file `agent-<id>.jsonl`, from its first record that
    has a `sessionId` (the agent id: that record's `agentId`, else the file name's); no session
    id when none of its first lines has one or the file cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return None, path.stem.removeprefix("agent-")
    return _agent_ids_cached(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=4096)
def _agent_ids_cached(name: str, _mtime: int, _size: int) -> tuple[str | None, str]:
    """`_agent_file_ids` of an unchanged file: `replay batch` reads every transcript of a
    project folder, each looking at every `agent-*` file beside it."""
    path = Path(name)
    agent = path.stem.removeprefix("agent-")
    try:
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle):
                if number >= 50:
                    break
                try:
                    obj = json.loads(without_bom(raw))
                except (ValueError, RecursionError):
                    continue
                if isinstance(obj, dict) and isinstance(obj.get("sessionId"), str):
                    own = obj.get("agentId")
                    return obj["sessionId"], own if isinstance(own, str) and own else agent
    except OSError:
        pass
    return None, agent


_COPIED_KEYS = ("type", "subtype", "message", "attachment", "content", "isMeta",
                "isCompactSummary", "toolUseID", "parentToolUseID")
"""Record fields a resumed or forked session's copy of a line keeps (not its ids, nor the uuids
a `compactMetadata` names; a `progress` line's `data` is no longer held when copies are
looked for)."""


def _digest(obj: dict[str, Any]) -> int:
    """What a copy of the record has in common with it (`_Reader._drop_copies`)."""
    return hash(json.dumps([obj.get(k) for k in _COPIED_KEYS], sort_keys=True))


def _text_of_blocks(blocks: list[Any]) -> tuple[str, bool]:
    """Tool-result / user content blocks as the text the model reads, and whether a placeholder
    stands in for part of it (a base64 image or PDF `document`: `binary_placeholder`)."""
    parts: list[str] = []
    estimated = False
    for b in blocks:
        if isinstance(b, str):
            parts.append(b)
            continue
        if not isinstance(b, dict):
            raise Bad("expected content blocks to be objects")
        kind = get_str(b, "type")
        placeholder = binary_placeholder(b)
        if placeholder is not None:
            parts.append(placeholder)
            estimated = True
        elif kind == "text":
            parts.append(get_str(b, "text", ""))
        elif kind == "image":
            # Another image source (URL, file id): its pixels are not in the log either.
            src = get_dict(b, "source")
            size = len(src.get("data") or "") if isinstance(src.get("data"), str) else 0
            parts.append(f"[image {src.get('media_type', '')} {size} base64 chars]")
            estimated = True
        elif kind == "tool_reference":
            parts.append(f"[tool_reference {get_str(b, 'tool_name', '')}]")
        else:
            parts.append(dumps(b))
    return "\n".join(parts), estimated


class _FileLinks(Linked):
    """Which files of a directory belong to one session (by file index).

    Two files are one session when the data says so: a record uuid or a response
    (`requestId` + `message.id`) in both (a resumed or forked session replays the earlier
    messages), a `parentUuid` / `logicalParentUuid` naming a record of the other file (a
    continuation), the same `sessionId` (subagent files carry their session's id), or a
    `toolUseResult.agentId` naming the other file's agent (`agent-<id>.jsonl`). A `summary`
    record's `leafUuid` is no link: Claude Code writes titles of other sessions into a file."""

    def __init__(self) -> None:
        super().__init__()
        self.by_session: dict[str, int] = {}
        self.agent_calls: dict[str, int] = {}
        self.agents: dict[str, int] = {}

    def _note(self, table: dict[str, int], index: int, key: Any) -> None:
        if isinstance(key, str) and key and key != "REDACTED":
            self.join(index, table.setdefault(key, index))

    def note_session(self, index: int, session_id: Any) -> None:
        self._note(self.by_session, index, session_id)

    def note_agent_call(self, index: int, agent_id: Any) -> None:
        self._note(self.agent_calls, index, agent_id)
        if isinstance(agent_id, str) and agent_id in self.agents:
            self.join(index, self.agents[agent_id])

    def note_agent(self, index: int, agent_id: Any) -> None:
        self._note(self.agents, index, agent_id)
        if isinstance(agent_id, str) and agent_id in self.agent_calls:
            self.join(index, self.agent_calls[agent_id])


def _attached(mains: list[Path], subs: list[Path]) -> dict[int, int]:
    """Subagent file index (after the mains) → index of the transcript whose
    `<sessionId>/subagents/` folder holds it: such a file belongs to it by Claude Code's layout."""
    by_folder = {(m.parent, m.stem): i for i, m in enumerate(mains)}
    out: dict[int, int] = {}
    for n, sub in enumerate(subs, start=len(mains)):
        session_folder = sub.parent.parent
        if sub.parent.name == "subagents":
            main = by_folder.get((session_folder.parent, session_folder.name))
            if main is not None:
                out[n] = main
    return out


class _Reader:
    def __init__(self, path: Path, strict: bool) -> None:
        self.path = path
        self.issues = Issues(path, strict)
        self.builder = SessionBuilder(path, self.issues)
        self.lines: list[_Line] = []
        self.seen_uuid: dict[str, tuple[int, int]] = {}
        self.seen_response: dict[tuple[str | None, str], int] = {}
        """Response key → index of the file it was first read from."""
        self.by_message: dict[str, tuple[str | None, str | None]] = {}
        """Logged `message.id` → the first response read with it."""
        self.blocks: dict[tuple[str | None, str | None], list[Any]] = {}
        """Response key → its lines' `message.content` (what a copy of it may hold; compared
        only when a line repeats its id, which is rare)."""
        self.response_message: dict[tuple[str | None, str | None], AssistantMessage] = {}
        """Response key → the message emitted for it (first emitted, if on several threads)."""
        self.copies: list[tuple[AssistantMessage, tuple[str | None, str | None]]] = []
        """Messages emitted for copied responses, with the response each repeats."""
        self.alias: dict[str, str] = {}
        """Uuid of a copy dropped by `_drop_copies` → uuid of the line it copies."""
        self.links = _FileLinks()
        self.ignored: Counter[str] = Counter()
        self.meta: dict[str, Any] = {}
        self.by_uuid: dict[str, _Line] = {}

    # reading ------------------------------------------------------------------------------
    def read_file(self, file: Path, index: int, subagent: bool) -> None:
        response_in_file: set[tuple[str | None, str]] = set()
        for number, obj in iter_json_lines(file, self.issues):
            guarded(
                self.issues,
                number,
                lambda number=number, obj=obj: self._record(
                    file, index, number, obj, subagent, response_in_file
                ),
                path=file,
            )

    def read_agents_beside(self, candidates: list[Path], index: int) -> int:
        """Quirk (2.0.x layout): subagent files `<project>/agent-<id>.jsonl` lie beside the
        transcripts of every session of the project. Given one transcript, the files of its
        session are read, each as a thread, as a directory read ties them: the same
        `sessionId` (subagent files carry their session's id), or the agent id a record already
        read names in its `toolUseResult.agentId` (so a subagent's own subagents follow). Their
        first file index is `index`; returns the next one."""
        left = {c: _agent_file_ids(c) for c in candidates}
        sessions: set[str] = set()
        calls: set[str] = set()
        scanned = 0
        while left:
            for ln in self.lines[scanned:]:
                sid = ln.obj.get("sessionId")
                if isinstance(sid, str) and sid and sid != "REDACTED":
                    sessions.add(sid)
                result = ln.obj.get("toolUseResult")
                if isinstance(result, dict) and isinstance(result.get("agentId"), str):
                    calls.add(result["agentId"])
            scanned = len(self.lines)
            found = [c for c, (sid, agent) in left.items() if sid in sessions or agent in calls]
            if not found:
                break
            for file in found:
                del left[file]
                self.read_file(file, index, subagent=True)
                index += 1
        return index

    def _record(
        self,
        file: Path,
        index: int,
        number: int,
        obj: dict[str, Any],
        subagent: bool,
        response_in_file: set[tuple[str | None, str]],
    ) -> None:
        kind = obj.get("type")
        if not isinstance(kind, str):
            raise Bad("expected a `type` string (Claude Code record)")
        if kind in CLAUDE_CODE_METADATA:
            self.ignored[kind] += 1
            return
        if kind not in CLAUDE_CODE_CONVERSATION:
            raise Bad(f"unknown Claude Code record type {kind!r}")
        uuid = get_str(obj, "uuid")
        if not uuid:
            raise Bad(f"expected `uuid` on a `{kind}` record")
        if uuid == "REDACTED":
            # Quirk (Entire redaction): a redacted uuid; the record hangs off the previous one.
            uuid = f"redacted-{index}-{number}"
        self.links.note_session(index, obj.get("sessionId"))
        if uuid in self.seen_uuid:
            first_file, first_line = self.seen_uuid[uuid]
            if first_file == index:
                raise Bad(f"duplicate record: uuid {uuid} already on line {first_line}")
            self.links.join(index, first_file)
            return  # quirk: a resumed session copies earlier lines into the new file
        parent = get_str(obj, "parentUuid")
        if parent is None and kind == "system" and obj.get("subtype") == "compact_boundary":
            # Quirk: the boundary cuts `parentUuid`; `logicalParentUuid` keeps the chain.
            parent = get_str(obj, "logicalParentUuid")
        if parent == "REDACTED":
            parent = self.lines[-1].uuid if self.lines else None
        ts = parse_ts(obj.get("timestamp"))
        line = _Line(number, str(file), obj, kind, uuid, parent, "", ts, file_index=index)
        if kind in ("progress",):
            self.ignored[f"progress/{get_dict(obj, 'data').get('type')}"] += 1
            obj.pop("data", None)  # not context: only the line's place in the chain is read
        elif kind == "system" and obj.get("subtype") != "compact_boundary":
            # Not sent to the model (turn_duration, stop_hook_summary, api_error, local_command…,
            # formats.md §1): only the line's place in the chain is read.
            self.ignored[f"system/{obj.get('subtype')}"] += 1
        result = obj.get("toolUseResult")
        if result is not None:
            # The tool's output is the message's `tool_result` block: of this copy (a third of
            # a transcript's bytes) only the subagent it names is read again.
            if isinstance(result, dict) and "agentId" in result:
                obj["toolUseResult"] = {"agentId": result["agentId"]}
            elif isinstance(result, dict):
                obj["toolUseResult"] = {}
            else:
                del obj["toolUseResult"]
        if kind == "assistant":
            message = get_dict(obj, "message", required=True)
            get_list(message, "content", required=True)
            line.request_id = get_str(obj, "requestId")
            line.message_id = get_str(message, "id")
            if not line.message_id or line.message_id == "REDACTED":
                # Quirk (Entire redaction / missing ids): the response is then told apart by its
                # requestId, or else by being the next streamed block of the previous line.
                line.message_id = self._fallback_message_id(line, index, number)
            model = get_str(message, "model", "")
            line.synthetic = model == SYNTHETIC_MODEL or bool(obj.get("isApiErrorMessage"))
            key = line.response
            if key in self.seen_response and key not in response_in_file:
                # Quirk: resumed sessions repeat responses under new uuids.
                self.links.join(index, self.seen_response[key])
                line.resumed = True
            else:
                response_in_file.add(key)
                self.seen_response.setdefault(key, index)
                line.copy_of = self._replayed(line, message, index)
        elif kind == "user":
            message = get_dict(obj, "message", required=True)
            content = message.get("content")
            if not isinstance(content, str | list):
                raise Bad("expected `message.content` to be a string or a list of blocks")
        if subagent:
            # 2.1.x subagent file `agent-<agentId>.jsonl`: one thread per file.
            line.thread_key = file.stem
        elif obj.get("isSidechain"):
            agent = get_str(obj, "agentId")
            line.thread_key = f"agent-{agent}" if agent else "sidechain"
            line.sidechain = True
        else:
            line.thread_key = MAIN_THREAD
        self.seen_uuid[uuid] = (index, number)
        # Main-thread lines only: a subagent file read alone keeps an unknown version, so its
        # requests (thread `main` then) keep the 5m TTL of a subagent, not 2.1's main 1h.
        for key in ("sessionId", "version", "cwd", "gitBranch"):
            value = obj.get(key)
            if isinstance(value, str) and key not in self.meta and line.thread_key == MAIN_THREAD:
                self.meta[key] = clean(value)
        self.lines.append(line)

    def sessions(self, files: list[Path], attached: dict[int, int]) -> list[list[Path]]:
        """The files read, grouped into sessions (see `_FileLinks`); `attached`: subagent file
        index → index of the transcript whose `<sessionId>/subagents/` folder holds it."""
        for ln in self.lines:
            for key in ("parentUuid", "logicalParentUuid"):
                parent = ln.obj.get(key)
                if isinstance(parent, str) and parent in self.seen_uuid:
                    self.links.join(ln.file_index, self.seen_uuid[parent][0])
            result = ln.obj.get("toolUseResult")
            if ln.kind == "user" and isinstance(result, dict):
                self.links.note_agent_call(ln.file_index, result.get("agentId"))
            if ln.kind != "progress":
                self.links.note_agent(ln.file_index, ln.obj.get("agentId"))
        for sub, main in attached.items():
            self.links.join(sub, main)
        return self.links.groups(files)

    def _replayed(
        self, line: _Line, message: dict[str, Any], index: int
    ) -> tuple[str | None, str | None] | None:
        """Quirk (ccusage #913; formats.md §1): a sidechain may repeat a parent's response, its
        `message.id` and usage, under another `requestId`. The API gives each response its own
        id, so a line repeating an earlier request's id is a copy, unless it holds a block that
        request's lines do not (evidence of another call: kept as a request). Returns the
        response copied, if any. Only logged ids count (not the redaction fallbacks)."""
        logged = get_str(message, "id")
        if not logged or logged == "REDACTED" or line.message_id is None:
            return None
        content = message.get("content")
        first = self.by_message.setdefault(line.message_id, line.response)
        if first == line.response:
            self.blocks.setdefault(first, []).append(content)
            return None
        if content not in self.blocks.get(first, []):
            return None
        self.links.join(index, self.seen_response[(first[0], line.message_id)])
        return first

    def _fallback_message_id(self, line: _Line, index: int, number: int) -> str:
        if line.request_id and line.request_id != "REDACTED":
            return f"request:{line.request_id}"
        previous = self._streamed_before(line)
        if previous is not None and previous.message_id and (
            previous.message_id.startswith("redacted:")
        ):
            return previous.message_id
        return f"redacted:{index}-{number}"

    def _streamed_before(self, line: _Line) -> _Line | None:
        """The assistant line `line` is the next streamed block of, when its ids are redacted:
        its parent, or (a tool run while the response streamed) the assistant line above the
        tool results and progress lines it hangs off, billed the same prompt (the lines of one
        response all carry its usage; a new request after a tool result reads more, and one
        that continues a paused response straight under it is billed its own prompt)."""
        recent = {ln.uuid: ln for ln in self.lines[-_STREAM_LOOKBACK:]}
        parent = recent.get(line.parent) if line.parent else None
        crossed = False
        while parent is not None and parent.kind != "assistant":
            if not (parent.kind == "progress" or _is_tool_result(parent.obj)):
                return None
            crossed = True
            parent = recent.get(parent.parent) if parent.parent else None
        if parent is None:
            return None
        usage, parent_usage = _prompt_usage(line.obj), _prompt_usage(parent.obj)
        # Straight under its parent, a line without usage is still its next block; two usages
        # that differ are two requests (a continuation after `pause_turn`, server tools).
        if usage != parent_usage and (crossed or None not in (usage, parent_usage)):
            return None
        return parent

    # threads ------------------------------------------------------------------------------
    def assign_threads(self) -> dict[str, list[_Line]]:
        by_uuid = self.by_uuid = {ln.uuid: ln for ln in self.lines}
        self._bridge_sidechain_gaps(by_uuid)
        # Quirk (1.0.x/2.0.x inline sidechains): sidechain lines without `agentId` are grouped by
        # the root of their parent chain (each Task subagent starts a new root).
        for ln in self.lines:
            if ln.thread_key != "sidechain":
                continue
            node, seen = ln, set()
            while node.parent and node.parent in by_uuid and node.uuid not in seen:
                seen.add(node.uuid)
                node = by_uuid[node.parent]
            ln.thread_key = f"sidechain-{node.uuid[:8]}"
        threads: dict[str, list[_Line]] = {}
        for ln in self.lines:
            threads.setdefault(ln.thread_key, []).append(ln)
        return threads

    def _bridge_sidechain_gaps(self, by_uuid: dict[str, _Line]) -> None:
        """Quirk (a capture gap, a line skipped as unreadable, inside an inline sidechain): the
        line after the gap names a `parentUuid` that is not in the file. Grouped by its own
        root, it would start a sidechain of its own: the subagent's thread split in two, and
        the request after the gap dropped (no message before it in the new thread). Like a
        main-chain line (`reparent_missing`), it hangs off the line it continues, here the
        line of its own sidechain (`_gap_host`); the gap is reported (strict mode refuses it)."""
        before: dict[str, _Line] = {}  # file → its latest line
        last: dict[str, _Line] = {}  # sidechain thread key → its latest line
        holders: dict[str, _Line] = {}  # response / tool_use id → the sidechain line holding it
        for ln in self.lines:
            previous = before.get(ln.path)
            before[ln.path] = ln
            if not ln.sidechain:
                continue
            held, continued = _sidechain_ties(ln)
            if ln.parent and ln.parent not in by_uuid:
                host = _gap_host(ln, previous, last, [holders.get(k) for k in continued])
                self._report_gap(ln, host)
                if host is not None:
                    ln.parent = host.uuid
            last[ln.thread_key] = ln
            holders.update((k, ln) for k in held)

    def _report_gap(self, ln: _Line, host: _Line | None) -> None:
        if ln.parent in self.seen_uuid:
            return  # a copy `_drop_copies` dropped, not a line missing from the log
        remedy = (
            f"attached to its sidechain after line {host.number}"
            if host is not None
            else "a sidechain whose first lines are missing starts there"
        )
        self.issues.add(
            ln.number,
            f"expected the line parentUuid {ln.parent!r} names: not in the file (a missing line)",
            ln.path,
            remedy=remedy,
        )

    def _drop_copies(self) -> None:
        """Quirk (resume / fork): a later transcript starts with a copy of earlier lines, under
        their uuids (dropped as they are read) or under new ones. A line of a later file is
        such a copy when an earlier file has the same record (`_digest`) in the same thread,
        under the same parent (a copy's parent mapped to the line it copies; not for roots: two
        files may start with the same prompt), at the same `timestamp`, or anywhere for a
        response line (its `message.id` is in the digest); a line of a response read from an
        earlier file (`resumed`) is one too. Copies are dropped; the lines that hang off them
        hang off the lines they copy."""
        if len({ln.file_index for ln in self.lines}) < 2:
            return
        first: dict[tuple[Any, ...], _Line] = {}
        last_of: dict[tuple[str | None, str | None], str] = {}
        kept: list[_Line] = []
        for ln in self.lines:
            ln.parent = self._original(ln.parent)
            digest = _digest(ln.obj)
            keys = [("at", ln.thread_key, ln.parent, digest)] if ln.parent else []
            if isinstance(ln.obj.get("timestamp"), str):
                keys.append(("ts", ln.thread_key, ln.obj["timestamp"], digest))
            if ln.kind == "assistant":
                keys.append(("response", ln.thread_key, digest))  # its message.id is unique
            original = next(
                (first[k].uuid for k in keys if k in first and first[k].file_index < ln.file_index),
                last_of.get(ln.response) if ln.resumed else None,
            )
            if original is not None or ln.resumed:
                if original is not None:
                    self.alias[ln.uuid] = original
                continue
            for k in keys:
                first.setdefault(k, ln)
            if ln.kind == "assistant":
                last_of[ln.response] = ln.uuid
            kept.append(ln)
        self.lines = kept

    def _original(self, uuid: str | None) -> str | None:
        """The line a uuid names: the original when it names a copy `_drop_copies` dropped."""
        return self.alias.get(uuid, uuid) if uuid else uuid

    def convert(self) -> Session:
        self._drop_copies()
        threads = self.assign_threads()
        if MAIN_THREAD not in threads:
            if not threads:
                self.issues.fatal(None, "expected Claude Code user/assistant records, found none")
            # A lone subagent transcript: its thread is the main one.
            first = next(iter(threads))
            threads = {MAIN_THREAD: threads.pop(first), **threads}
            for ln in threads[MAIN_THREAD]:
                ln.thread_key = MAIN_THREAD
        states: dict[str, _ThreadState] = {}
        main_calls: dict[str, tuple[str, dict[str, Any]]] = {}
        for name, lines in threads.items():
            state = self.convert_thread(name, lines)
            states[name] = state
        self._link_copies()
        # Main-thread Task/Agent calls, to link subagent threads to the call that started them.
        for ln in threads[MAIN_THREAD]:
            if ln.kind != "assistant":
                continue
            for b in ln.obj["message"]["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    args = b.get("input") if isinstance(b.get("input"), dict) else {}
                    main_calls[str(b.get("id"))] = (str(b.get("name")), args)
        agent_call = self._agent_calls(threads[MAIN_THREAD])
        header_model = most_common(
            (e.model for e in states[MAIN_THREAD].events if isinstance(e, RequestMarker)),
            "claude-sonnet-4-5",
        )
        # A call starts one sub-agent: two Task calls with the same prompt start two, in order.
        taken = set(agent_call.values())
        for name, state in states.items():
            self.builder.thread(name).events = state.events
            if name == MAIN_THREAD:
                continue
            first_user = next((e for e in state.events if isinstance(e, UserMessage)), None)
            parent_call = agent_call.get(name.removeprefix("agent-"))
            if parent_call is None and first_user is not None:
                for cid, (tool, args) in main_calls.items():
                    if (
                        tool in ("Task", "Agent")
                        and cid not in taken
                        and args.get("prompt") == first_user.text
                    ):
                        parent_call = cid
                        taken.add(cid)
                        break
            models = {e.model for e in state.events if isinstance(e, RequestMarker)}
            model = next(iter(models)) if len(models) == 1 else None
            if not state.events:
                continue
            start = ThreadStart(
                ts=state.events[0].ts,
                thread=MAIN_THREAD,
                thread_id=name,
                parent_thread=MAIN_THREAD,
                parent_call_id=parent_call,
                model=model if model and model != header_model else None,
            )
            # The sub-agent's own system prompt is not logged either.
            start.estimated = ["system"]
            state.events.insert(0, start)
        header = SessionHeader(
            ts=self.lines[0].ts,
            session_id=self.meta.get("sessionId", self.path.stem),
            agent=AGENT,
            agent_version=self.meta.get("version"),
            provider="anthropic",
            model=header_model,
            system="",
            tools=[],
            cwd=self.meta.get("cwd"),
            # Quirk: Claude Code logs neither its system prompt nor its tool schemas.
            estimated=["system", "tools"],
        )
        header.source_format = "claude-code-jsonl"
        if self.ignored:
            header.ignored_records = dict(sorted(self.ignored.items()))
        self.builder.repair_tool_results()
        session = self.builder.session(header)
        estimate_hidden_prefix(session)
        return session

    def _link_copies(self) -> None:
        """Copied responses (`_replayed`) point at the message they copy (`copied_from`) and
        take its thinking sizes: they have no usage of their own to size them from."""
        for message, key in self.copies:
            original = self.response_message.get(key)
            if original is None:
                continue
            message.copied_from = original.id
            sized = {
                b.signature: b
                for b in original.blocks
                if isinstance(b, ThinkingBlock) and b.estimated_tokens is not None
            }
            for b in message.blocks:
                if isinstance(b, ThinkingBlock) and b.signature in sized and not b.thinking:
                    source = sized[b.signature]
                    b.estimated_tokens = source.estimated_tokens
                    b.estimated_from = getattr(source, "estimated_from", None)

    @staticmethod
    def _agent_calls(lines: list[_Line]) -> dict[str, str]:
        """agentId → Task/Agent tool_use id, from `toolUseResult.agentId` (2.1.x subagent files)."""
        out: dict[str, str] = {}
        for ln in lines:
            if ln.kind != "user":
                continue
            result = ln.obj.get("toolUseResult")
            content = ln.obj["message"].get("content")
            if not (isinstance(result, dict) and isinstance(content, list)):
                continue
            agent = result.get("agentId")
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_result" and agent:
                    out[str(agent)] = str(b.get("tool_use_id"))
        return out

    # one thread ---------------------------------------------------------------------------
    def _report_chain_gaps(self, lines: list[_Line]) -> None:
        """Quirk (a capture gap, a line skipped as unreadable): a line whose `parentUuid` names
        no line read. `reparent_missing` hangs it off the line before it, and the gap is
        reported (strict mode refuses it). Not the thread's first line in each file: a resumed
        transcript given alone starts with a parent that is in the previous file (after sidechain
        lines or not, so it is the thread's first line there, not the file's)."""
        known = {ln.uuid for ln in lines}
        first_skipped: dict[str, int] = {}  # file → its first line skipped as unreadable
        for e in self.issues.items:
            if e.line is not None:
                first_skipped[e.path] = min(e.line, first_skipped.get(e.path, e.line))
        opened: set[str] = set()
        for ln in lines:
            opens_file = ln.path not in opened
            opened.add(ln.path)
            if ln.sidechain or opens_file or not ln.parent or ln.parent in known:
                continue  # inline sidechains: `_bridge_sidechain_gaps`
            if ln.parent in self.seen_uuid:
                continue  # a copy `_drop_copies` dropped, not a line missing from the log
            if first_skipped.get(ln.path, ln.number) < ln.number:
                continue  # it may name a line read and skipped: that one is reported
            self.issues.add(
                ln.number,
                f"expected the line parentUuid {ln.parent!r} names: not in the file "
                "(a missing line)",
                ln.path,
                remedy="attached after the line before it",
            )

    def convert_thread(self, name: str, lines: list[_Line]) -> _ThreadState:
        self._report_chain_gaps(lines)
        by_uuid = {ln.uuid: ln for ln in lines}
        parent = reparent_missing([ln.uuid for ln in lines], {ln.uuid: ln.parent for ln in lines})
        leaf = next(
            (
                ln.uuid
                for ln in reversed(lines)
                if ln.kind in ("user", "assistant") and not ln.synthetic
            ),
            lines[-1].uuid,
        )
        ancestors: set[str] = set()
        node: str | None = leaf
        while node is not None and node in by_uuid and node not in ancestors:
            ancestors.add(node)
            node = parent.get(node)
        path_responses = {by_uuid[u].response for u in ancestors if by_uuid[u].message_id}

        def attached(uuid: str, _parent: str | None) -> bool:
            ln = by_uuid[uuid]
            if ln.kind in ("progress", "system", "attachment"):
                return True
            if ln.kind == "assistant":
                return ln.response in path_responses or ln.synthetic
            content = ln.obj["message"].get("content")
            return (
                isinstance(content, list)
                and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
                or bool(ln.obj.get("isMeta"))
            )

        path, branches = linearise([ln.uuid for ln in lines], parent, attached, leaf)
        state = _ThreadState(name)
        self.emit(state, [by_uuid[u] for u in path])
        for k, branch in enumerate(branches, start=1):
            nodes = [by_uuid[u] for u in branch.nodes]
            if not any(n.kind == "assistant" and not n.synthetic for n in nodes):
                continue  # nothing billed on that branch (e.g. an edited prompt never sent)
            self._branch(name, k, state, branch.fork, nodes)
        return state

    def _branch(
        self, name: str, k: int, main: _ThreadState, fork: str | None, nodes: list[_Line]
    ) -> None:
        """Quirk (rewind / edit in Claude Code): requests on an abandoned branch were billed. They
        are replayed as thread `<thread>/branch-<k>`, which starts with a copy of the active path
        up to the fork (copies carry `copied_from`, and no request markers)."""
        bname = f"{name}/branch-{k}"
        state = _ThreadState(bname)
        upto = main.mark.get(fork, 0) if fork else 0
        mapping: dict[str, str] = {}
        for event in main.events[:upto]:
            if isinstance(event, RequestMarker | ThreadStart):
                continue
            dup = copy.deepcopy(event)
            dup.thread = bname
            dup.copied_from = event.id
            dup.id = self.builder.new_id()
            self.builder.read_from(dup, self.builder.files.get(event.id, self.path))
            mapping[event.id] = dup.id
            if isinstance(dup, AssistantMessage):
                dup.request_id = None
                for b in dup.blocks:
                    if isinstance(b, ToolCallBlock):
                        state.calls[b.id] = b.name
            if isinstance(dup, Compaction):
                dup.replaces = [mapping[r] for r in dup.replaces if r in mapping]
            state.origin[dup.id] = main.origin.get(event.id, "")
            state.events.append(dup)
        answered = {e.call_id for e in state.events if isinstance(e, ToolResult)}
        state.pending = [c for c in state.calls if c not in answered]
        for cid in state.calls:
            state.by_source_call.setdefault(cid, []).append(cid)
        self.emit(state, nodes)
        if not state.events:
            return
        start = ThreadStart(
            ts=state.events[0].ts,
            thread=name,
            thread_id=bname,
            parent_thread=name,
        )
        start.branch_of = name
        state.events.insert(0, start)
        self.builder.thread(bname).events = state.events

    def emit(self, state: _ThreadState, lines: list[_Line]) -> None:
        responses: dict[tuple[str | None, str | None], list[_Line]] = {}
        for ln in lines:
            if ln.kind == "assistant" and ln.message_id:
                responses.setdefault(ln.response, []).append(ln)
        done: set[tuple[str | None, str | None]] = set()
        summaries = {
            ln.parent: ln for ln in lines if ln.kind == "user" and ln.obj.get("isCompactSummary")
        }
        for ln in lines:
            guarded(
                self.issues,
                ln.number,
                lambda ln=ln: self._line(state, ln, responses, done, summaries),
                path=ln.path,
            )
            state.mark[ln.uuid] = len(state.events)

    def _add(self, state: _ThreadState, event: Any, ln: _Line) -> Any:
        event.thread = state.name
        if event.id is None:
            event.id = self.builder.new_id()
        event.line = ln.number
        self.builder.read_from(event, ln.path)
        state.origin[event.id] = ln.uuid
        state.events.append(event)
        return event

    def _line(
        self,
        state: _ThreadState,
        ln: _Line,
        responses: dict[tuple[str | None, str | None], list[_Line]],
        done: set[tuple[str | None, str | None]],
        summaries: dict[str | None, _Line],
    ) -> None:
        obj = ln.obj
        if ln.kind == "assistant":
            if ln.response in done or ln.synthetic:
                return
            done.add(ln.response)
            self._response(state, responses.get(ln.response, [ln]))
        elif ln.kind == "user":
            if obj.get("isCompactSummary"):
                if summaries.get(ln.parent) is ln and self._is_boundary(ln.parent):
                    return  # carried by the Compaction of its boundary
                # Quirk (older versions): a summary message without a boundary record.
                self._compaction(state, ln, ln)
                return
            self._user(state, ln)
        elif ln.kind == "system" and obj.get("subtype") == "compact_boundary":
            self._compaction(state, ln, summaries.get(ln.uuid))
        elif ln.kind == "system" and obj.get("subtype") == "microcompact_boundary":
            state.microcompacted = True
        elif ln.kind == "attachment":
            self._attachment(state, ln)

    def _is_boundary(self, uuid: str | None) -> bool:
        ln = self.by_uuid.get(uuid) if uuid else None
        return (
            ln is not None and ln.kind == "system" and ln.obj.get("subtype") == "compact_boundary"
        )

    def _response(self, state: _ThreadState, group: list[_Line]) -> None:
        blocks: list[Any] = []
        seen: dict[str, int] = {}  # each line's content → the first line that held it
        for ln in group:
            message = ln.obj["message"]
            content = get_list(message, "content")
            # Quirk (a line written twice under a new uuid): a response's lines each stream
            # their own blocks; one that repeats another line's content is the same record.
            key = json.dumps(content, sort_keys=True) if content else None
            if key is not None and key in seen:
                self.issues.add(
                    ln.number,
                    f"duplicate record: the content of line {seen[key]} of the same response "
                    f"(message.id {ln.message_id})",
                    ln.path,
                    remedy="read once",
                )
                continue
            if key is not None:
                seen[key] = ln.number
            for n, b in enumerate(content):
                block = self._block(state, b, f"{ln.number}-{n}")
                if block is not None:
                    blocks.append(block)
        # Quirk (1.0.x partial usage): keep the largest usage of the response's lines.
        best = None
        damaged: list[tuple[_Line, str]] = []
        for ln in group:
            u = ln.obj["message"].get("usage")
            if not isinstance(u, dict):
                damaged.append((ln, "expected `usage` (an object) on an assistant message"))
                continue
            try:
                usage = anthropic_usage(u)
            except Bad as bad:
                damaged.append((ln, f"{bad} in `usage`"))
                continue
            key = (usage.output_tokens, usage.prompt_tokens)
            if best is None or key >= best[0]:
                best = (key, usage, ln)
        usage = best[1] if best else None
        # Every real response line carries its usage (quirk: damage when it lost or garbled
        # it): the response was billed all the same, so it stays a request, without usage when
        # no line of it kept one, and the damage is reported (strict mode refuses the file).
        lost = usage is None and bool(damaged)
        for ln, problem in damaged:
            remedy = "the request was kept without usage" if lost else "read from its other lines"
            self.issues.add(ln.number, problem, ln.path, remedy=remedy)
        first, last = group[0], group[-1]
        model = get_str(first.obj["message"], "model") or None
        previous = state.events[-1].ts if state.events else first.ts
        sent = previous if previous <= first.ts else first.ts
        message = AssistantMessage(ts=last.ts, blocks=blocks)
        logged = get_str(first.obj["message"], "id")
        if logged:
            # The log's own id (docs/adapters.md, Traceability), not the fallback standing in
            # for a redacted or missing one.
            message.source_id = logged
        copy_of = first.copy_of if all(ln.copy_of for ln in group) else None
        if copy_of is not None:
            # A copy (`_replayed`): its usage is the copied request's, billed once there.
            self.copies.append((message, copy_of))
        elif lost or (usage is not None and not usage_is_empty(usage)):
            marker = RequestMarker(
                ts=sent,
                request_id=self.builder.request_id(first.request_id or first.message_id),
                model=model,
                usage=usage,
                duration_ms=max(0, int((last.ts - sent).total_seconds() * 1000)),
                price_context=anthropic_price_context(usage) if usage else None,
            )
            if state.microcompacted:
                marker.after_microcompact = True
                state.microcompacted = False
            if best is not None:
                self._check_usage(best[2], usage)
            self._add(state, marker, first)
            message.request_id = marker.request_id
            estimate_thinking(message, usage, model or "claude-sonnet-4-5")
        else:
            message.usage_missing = True
        self._add(state, message, first)
        self.response_message.setdefault(first.response, message)

    def _check_usage(self, ln: _Line, usage: Usage) -> None:
        """Report what is wrong beside the counts the request keeps: a TTL split of the cache
        write that does not add up to its total (inconsistent usage, like more cached than sent
        in Codex: which share was 1h is not known), garbled `iterations` (read for a note)."""
        raw = ln.obj["message"]["usage"]
        problem = anthropic_split_problem(raw)
        if problem is not None:
            remedy = (f"read as {usage.cache_write_1h_tokens} 1h + {usage.cache_write_5m_tokens}"
                      " 5m written tokens (the total kept)")
            self.issues.add(ln.number, problem, ln.path, remedy=remedy)
        problem = anthropic_iterations_problem(raw)
        if problem is not None:
            self.issues.add(ln.number, f"{problem} in `usage`", ln.path,
                            remedy="the iterations are not read (the usage is)")

    def _block(self, state: _ThreadState, b: Any, where: str) -> Any:
        if not isinstance(b, dict):
            raise Bad("expected assistant content blocks to be objects")
        kind = get_str(b, "type")
        if kind == "text":
            return TextBlock(text=get_str(b, "text", ""))
        if kind == "thinking":
            return ThinkingBlock(
                thinking=get_str(b, "thinking", ""), signature=get_str(b, "signature")
            )
        if kind == "redacted_thinking":
            # Quirk: encrypted thinking; only its size can be estimated.
            block = ThinkingBlock(thinking="", signature=get_str(b, "data"))
            block.redacted = True
            return block
        if kind in ("tool_use", "server_tool_use"):
            source = get_str(b, "id")
            cid = self.builder.call_id(source, where)
            block = ToolCallBlock(
                id=cid,
                name=get_str(b, "name", "") or "unknown",
                arguments=parse_arguments(b.get("input")),
            )
            if source and source != cid:
                block.source_id = source
            _drop_backfilled(block)
            if kind == "server_tool_use":
                block.server_side = True  # runs at Anthropic: no tool_result line follows
            else:
                state.calls[cid] = block.name
                state.pending.append(cid)
                state.by_source_call.setdefault(source or "REDACTED", []).append(cid)
            return block
        # Server tool results (web_search_tool_result…) and future block types: kept as text so
        # their tokens count; the original block is kept on the event.
        block = TextBlock(text=dumps(b))
        block.source_type = str(kind)
        return block

    def _user(self, state: _ThreadState, ln: _Line) -> None:
        obj = ln.obj
        content = obj["message"].get("content")
        injected = bool(obj.get("isMeta"))
        if isinstance(content, str):
            self._add(state, UserMessage(ts=ln.ts, text=clean(content), injected=injected), ln)
            return
        texts: list[Any] = []
        for b in content:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                self._tool_result(state, ln, b)
            else:
                texts.append(b)
        if texts:
            text, estimated = _text_of_blocks(texts)
            event = UserMessage(ts=ln.ts, text=text, injected=injected)
            if estimated:
                event.estimated_text = True
            self._add(state, event, ln)

    def _tool_result(self, state: _ThreadState, ln: _Line, b: dict[str, Any]) -> None:
        source = get_str(b, "tool_use_id")
        content = b.get("content")
        estimated = False
        if isinstance(content, list):
            output, estimated = _text_of_blocks(content)
        elif content is None:
            output = ""
        elif isinstance(content, str):
            output = clean(content)
        else:
            raise Bad("expected tool_result `content` to be a string or a list of blocks")
        candidates = [c for c in state.by_source_call.get(source or "", []) if c in state.pending]
        if source and candidates:  # a REDACTED id too: the oldest redacted call waiting
            cid = candidates[0]
        elif state.pending:
            # Quirk (Entire redaction / repeated ids): pair with the oldest call still waiting
            # (one a request went without has its placeholder: this would be a second result).
            cid = ([c for c in waiting_calls(state.events) if c in state.pending]
                   or state.pending)[0]
            if source and source != "REDACTED":
                self.issues.add(
                    ln.number,
                    f"expected a tool call with id {source!r} before its result; "
                    f"paired with the oldest unanswered call {cid!r}",
                    ln.path,
                )
        else:
            self.issues.add(
                ln.number, f"expected a tool call for result {source!r}; kept unpaired", ln.path
            )
            cid = self.builder.call_id(source, f"orphan-{ln.number}")
        if cid in state.pending:
            state.pending.remove(cid)
        event = ToolResult(
            ts=ln.ts,
            call_id=cid,
            tool_name=state.calls.get(cid, "unknown"),
            output=output,
            is_error=bool(b.get("is_error")),
        )
        if estimated:
            event.estimated_text = True
        self._add(state, event, ln)

    def _compaction(self, state: _ThreadState, ln: _Line, summary_line: _Line | None) -> None:
        meta = get_dict(ln.obj, "compactMetadata")
        summary = ""
        if summary_line is not None:
            content = summary_line.obj["message"].get("content")
            summary = clean(content) if isinstance(content, str) else _text_of_blocks(content)[0]
        preserved: set[str] = set()
        kept = get_dict(meta, "preservedMessages")
        preserved.update(str(self._original(str(u))) for u in get_list(kept, "uuids"))
        segment = get_dict(meta, "preservedSegment")
        if segment:
            # Quirk (partial compaction, 2.1.x): a segment head..tail survives the compaction.
            by_uuid = {x.uuid: x for x in self.lines}
            node, head = (self._original(get_str(segment, k)) for k in ("tailUuid", "headUuid"))
            while node and node in by_uuid and node not in preserved:
                preserved.add(node)
                if node == head:
                    break
                node = by_uuid[node].parent
        replaces = [
            e.id
            for e in state.events
            if isinstance(e, UserMessage | AssistantMessage | ToolResult | Compaction)
            and state.origin.get(e.id) not in preserved
        ]
        trigger = get_str(meta, "trigger")
        pre = meta.get("preTokens")
        event = Compaction(
            ts=ln.ts,
            summary=summary,
            replaces=replaces,
            trigger=trigger,
            # informational (notes only): a count out of range is dropped, not the compaction
            tokens_before=pre
            if isinstance(pre, int) and not isinstance(pre, bool) and 0 <= pre <= MAX_TOKENS
            else None,
        )
        if summary_line is None:
            event.summary_missing = True
        self._add(state, event, ln)

    def _attachment(self, state: _ThreadState, ln: _Line) -> None:
        att = get_dict(ln.obj, "attachment")
        kind = att.get("type")
        render = _ATTACHMENT_TEXT.get(kind) if isinstance(kind, str) else None
        text = render(att) if render else None
        if not isinstance(text, str) or not text.strip():
            self.ignored[f"attachment/{kind}"] += 1
            return
        human = kind == "queued_command" and att.get("commandMode") == "prompt"
        event = UserMessage(ts=ln.ts, text=clean(text), injected=not human)
        event.attachment = kind
        # The CLI renders attachments into <system-reminder> text that is not logged.
        event.estimated_text = True
        self._add(state, event, ln)


def _sidechain_ties(ln: _Line) -> tuple[list[str], list[str]]:
    """(keys the line holds, keys of earlier lines it continues): a response (its streamed
    blocks are lines of one sidechain) and `tool_use` ids (a `tool_result` answers a call of
    its own sidechain)."""
    message = ln.obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    if ln.kind == "assistant":
        calls = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        response = [f"response:{ln.request_id}:{ln.message_id}"]
        return response + [f"call:{c}" for c in calls if _logged_id(c)], response
    if ln.kind == "user":
        answered = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        return [], [f"call:{c}" for c in answered if _logged_id(c)]
    return [], []


def _logged_id(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and value != "REDACTED"


def _gap_host(
    ln: _Line, previous: _Line | None, last: dict[str, _Line], tied: list[_Line | None]
) -> _Line | None:
    """The line an inline sidechain line whose parent is missing continues: an earlier line of
    its response or of the call its tool_result answers; else the latest line of its agent
    (`agentId`); else, without an `agentId`, the line right before it when that is a sidechain
    line. Right after a main-chain line (none lies inside a sidechain on the samples: the main
    chain waits for its Task) it is the first line left of a sidechain whose first lines are
    missing: None, it stays the root of its own."""
    for host in tied:
        if host is not None and host.thread_key == ln.thread_key:
            return host
    host = last.get(ln.thread_key)
    if ln.thread_key == "sidechain" and host is not previous:
        return None
    return host


_BACKFILLED = {"ExitPlanMode": ("planFilePath", ("plan", "planFilePath"))}
"""Tool → (field whose presence marks the CLI's backfill, fields the CLI added to the logged
input). The logged `tool_use.input` is not always what the model sent."""


def _drop_backfilled(block: ToolCallBlock) -> None:
    """Quirk (2.x plan mode): the CLI adds `plan` (the plan file's text) and `planFilePath` to
    the ExitPlanMode input it logs; the model sent neither (the call's output_tokens are a few
    dozen while the plan runs to thousands) and the API never sees them on later requests. The
    1.0.x tool took the plan as its input (no `planFilePath`): kept. The logged values stay on
    the block as `backfilled`."""
    rule = _BACKFILLED.get(block.name)
    if rule is None or rule[0] not in block.arguments:
        return
    block.backfilled = {k: block.arguments.pop(k) for k in rule[1] if k in block.arguments}


def read(path: str | Path, *, strict: bool = False) -> Session:
    """Read a Claude Code transcript (file or session directory) as a native `Session`."""
    path = Path(path)
    if not path.exists():
        raise LogFormatError(path, None, "no such file")
    mains, subs = _files(path)
    beside: list[Path] = []
    if not path.is_dir() and not path.name.startswith("agent-"):
        # 2.0.x layout: the subagent files of every session of the project lie beside it.
        agents = listed(path.parent, "agent-*.jsonl")
        beside = sorted(p for p in agents if p not in subs)
    return _read(path, mains, subs, strict, beside)


def _read(
    path: Path, mains: list[Path], subs: list[Path], strict: bool, beside: list[Path] | None = None
) -> Session:
    """Read `mains` then `subs` as one session; `path` (a directory) must then hold one.
    `beside`: `agent-*.jsonl` files beside the transcript `path`, of which only those of its
    session are read (`_Reader.read_agents_beside`), before `subs`."""
    reader = _Reader(mains[0] if not path.is_dir() else path, strict)
    if path.is_dir():
        reader.path = mains[0]
        reader.issues.path = str(mains[0])
        reader.builder.path = str(path)
    # Quirk (resume / --continue): later files repeat earlier lines; read oldest first.
    with failures_as_log_errors(path):
        for index, file in enumerate(mains):
            reader.read_file(file, index, subagent=False)
        start = reader.read_agents_beside(beside, len(mains)) if beside else len(mains)
        for index, file in enumerate(subs, start=start):
            reader.read_file(file, index, subagent=True)
        if path.is_dir():
            # A project folder (`~/.claude/projects/<cwd>/`) holds every session run there:
            # merging unrelated ones would price them as one conversation.
            groups = reader.sessions(mains + subs, _attached(mains, subs))
            if len(groups) > 1:
                raise several_sessions(
                    path,
                    groups,
                    "one Claude Code session (a transcript, its resumed files and subagent files)",
                    "related",
                    "one transcript file",
                )
        if not reader.lines:
            reader.issues.fatal(None, "expected Claude Code user/assistant records, found none")
        return reader.convert()


_LINK_KEYS = ("parentUuid", "logicalParentUuid", "agentId")
"""Record fields `_Reader.sessions` ties files by (besides `toolUseResult.agentId`)."""


def session_groups(files: list[Path]) -> list[list[Path]]:
    """Claude Code files of one project folder (transcripts, `agent-*` files, the
    `<sessionId>/subagents/` files), grouped into sessions by the rule `read` applies to a
    directory (`_FileLinks`, plus the layout). Each group is in reading order (transcripts oldest
    first, then subagent files): `read_session(group)` reads it as `read` reads a folder holding
    just those files. Groups come in the order of their first file. Records are read leniently;
    only what ties files is kept in memory. A file that cannot be read at all stays alone."""
    mains, subs = _order(list(files))
    reader = _Reader(mains[0], strict=False)
    for index, file in enumerate(mains + subs):
        start = len(reader.lines)
        try:
            reader.read_file(file, index, subagent=index >= len(mains))
        except LogFormatError:
            continue
        for ln in reader.lines[start:]:
            # Only the fields that tie files are looked at again: drop the record bodies.
            obj = {k: ln.obj[k] for k in _LINK_KEYS if k in ln.obj}
            result = ln.obj.get("toolUseResult")
            if isinstance(result, dict) and "agentId" in result:
                obj["toolUseResult"] = {"agentId": result["agentId"]}
            ln.obj = obj
    return reader.sessions(mains + subs, _attached(mains, subs))


def read_session(files: list[Path], *, strict: bool = False) -> Session:
    """Read the files of one group of `session_groups` (in its order) as one session, named by
    its first transcript."""
    mains = [f for f in files if not f.name.startswith("agent-")] or list(files[:1])
    subs = [f for f in files if f not in mains]
    return _read(mains[0], mains, subs, strict)
