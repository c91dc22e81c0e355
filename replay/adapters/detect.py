"""Recognise a log's format from its content (never from its file name).

Each known format leaves a fingerprint in its records:

- `replay-log`: a `{"type": "session", "format": "replay-log"}` header line;
- Claude Code: records with `uuid` / `parentUuid` / `sessionId` and a `type` among user,
  assistant, system, progress, attachment, summary, file-history-snapshot…;
- Codex rollout: `{"timestamp", "type": session_meta|response_item|event_msg|turn_context|
  compacted, "payload": {...}}`;
- pi session: a `{"type": "session", "id", "cwd"}` header without `format`, then `message`,
  `model_change`, `thinking_level_change`, `compaction`… entries;
- opencode export: one JSON document `{"info": {...}, "messages": [{"info", "parts"}]}`.

Only the first lines are looked at (a vote over up to 50 readable lines), so a damaged line or two
does not change the verdict. A directory is recognised by the files in it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replay._errors import LogFormatError
from replay.adapters._common import MAX_LINE_BYTES, listed
from replay.adapters._record_types import (
    CLAUDE_CODE_CONVERSATION,
    CLAUDE_CODE_METADATA,
    CODEX_LINE_TYPES,
    PI_ENTRY_TYPES,
)
from replay.log._io import BLANK_BYTES, without_bom

FORMATS = ("replay-log", "claude-code", "codex", "pi", "opencode")
"""Format names, as accepted by `load(..., format=)` and `replay convert --from`."""

_SAMPLE_LINES = 50
SAMPLE_BYTES = 4 * 1024 * 1024
"""Bytes of a file's head that detection reads (a stream is checked once it has them)."""

_CLAUDE_TYPES = CLAUDE_CODE_CONVERSATION | CLAUDE_CODE_METADATA
_PI_TYPES = PI_ENTRY_TYPES | {"session"}


def _score(obj: dict[str, Any]) -> dict[str, int]:
    kind = obj.get("type")
    if not isinstance(kind, str):
        kind = None
    scores = dict.fromkeys(FORMATS, 0)
    if kind == "session" and obj.get("format") == "replay-log":
        scores["replay-log"] += 100
    if kind in CODEX_LINE_TYPES and isinstance(obj.get("payload"), dict):
        scores["codex"] += 10
    if kind in _CLAUDE_TYPES and ("uuid" in obj or "sessionId" in obj or "leafUuid" in obj):
        scores["claude-code"] += 10
    if kind in ("file-history-snapshot", "queue-operation", "last-prompt") and (
        "messageId" in obj or "sessionId" in obj or "operation" in obj or "leafUuid" in obj
    ):
        scores["claude-code"] += 5
    if kind == "session" and "format" not in obj:
        if "cwd" in obj or "timestamp" in obj or ("version" in obj and "ts" not in obj):
            scores["pi"] += 20  # pi's header: id, timestamp, cwd (and version from v2)
        elif "ts" in obj:
            scores["replay-log"] += 20  # a replay-log header without `format` (lenient reads)
    if kind in _PI_TYPES and "payload" not in obj and "uuid" not in obj:
        if kind == "message" and isinstance(obj.get("message"), dict):
            scores["pi"] += 10
        elif kind != "message" and kind not in ("session",):
            scores["pi"] += 5
    if kind in ("user", "assistant", "request", "tool_result", "compaction", "thread") and (
        "ts" in obj and "uuid" not in obj and "payload" not in obj
    ):
        scores["replay-log"] += 3
    return scores


def _looks_like_opencode(head: bytes) -> bool:
    text = head.lstrip()
    if not text.startswith(b"{"):
        return False
    # An export is one JSON document whose first key is usually `info`; JSONL formats put a
    # complete object on line 1 instead.
    first_line = text.split(b"\n", 1)[0].strip()
    if first_line in (b"{",):
        return b'"messages"' in head or b'"info"' in head
    try:
        obj = json.loads(first_line)
    except (ValueError, RecursionError):
        return b'"info"' in head[:2048] and b'"messages"' in head
    return isinstance(obj, dict) and "info" in obj and "messages" in obj


_COMPRESSED = (
    (b"\x1f\x8b", "gzip"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"PK\x03\x04", "zip"),
)
"""Magic numbers of the archives logs are kept in (a log is text; these never start one)."""


def detect_file(path: Path) -> str:
    """The format of one file, or a `LogFormatError` saying what was expected."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(SAMPLE_BYTES)
            if len(head) == SAMPLE_BYTES and b"\n" not in head:
                # A first line longer than the sample (a pasted image): read to its end, as
                # the readers take lines up to MAX_LINE_BYTES.
                head += handle.readline(MAX_LINE_BYTES - len(head) + 1)
            head = without_bom(head)
    except OSError as err:
        raise LogFormatError(path, None, f"cannot read the file ({err.strerror})") from None
    if not head.strip(BLANK_BYTES):
        raise LogFormatError(path, None, "empty file: expected a coding-agent log")
    packed = next((name for magic, name in _COMPRESSED if head.startswith(magic)), None)
    if packed is not None:
        tool = {"gzip": "zcat", "zstd": "zstdcat", "bzip2": "bzcat", "xz": "xzcat"}.get(packed)
        how = f" (`{tool} {path} | replay -`)" if tool else ""
        raise LogFormatError(
            path, None, f"a {packed}-compressed file: expected a coding-agent log; decompress it "
            f"first{how}"
        )
    if _looks_like_opencode(head):
        return "opencode"
    totals = dict.fromkeys(FORMATS, 0)
    readable = 0
    lines = head.split(b"\n")
    if len(head) == SAMPLE_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the last sampled line may be cut
    for raw in lines:
        if readable >= _SAMPLE_LINES:
            break
        if not raw.lstrip().startswith(b"{"):  # no JSON object (blank, or text: `yes |`)
            continue  # (each failed `json.loads` costs microseconds: 4 MB of lines took 10 s)
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(obj, dict):
            continue
        readable += 1
        for name, value in _score(obj).items():
            totals[name] += value
    best = max(totals, key=lambda k: totals[k])
    if totals[best] <= 0:
        raise LogFormatError(
            path,
            1,
            "expected a coding-agent log (replay-log, Claude Code JSONL, Codex rollout, "
            "pi session or opencode export); the content matches none of them",
        )
    return best


def detect(path: str | Path) -> str:
    """The format of a log file or directory: one of `FORMATS`."""
    p = Path(path)
    if not p.exists():
        raise LogFormatError(p, None, "no such file")
    if not p.is_dir():
        return detect_file(p)
    candidates = listed(p, "*.jsonl") + listed(p, "*.json") + listed(p / "subagents", "*.jsonl")
    verdicts: dict[Path, str] = {}
    unreadable: list[LogFormatError] = []
    for c in candidates:
        try:
            verdicts[c] = detect_file(c)
        except LogFormatError as err:
            if err.expected.startswith("cannot read"):
                unreadable.append(err)
    for fmt in ("claude-code", "opencode"):
        if fmt in verdicts.values():
            _refuse_other_formats(p, fmt, verdicts)
            return fmt
    why = ""
    if verdicts:  # one session per file: a folder of them is a batch's work
        found = sorted(_by_format(verdicts).items())
        listing = "; ".join(f"{name}: {files}" for name, files in found)
        why = (f"; this directory holds logs read one file at a time ({listing}): give one "
               f"file, or replay each with `replay batch {p}`")
    if unreadable:
        why += f"; {len(unreadable)} file(s) could not be read, first: {unreadable[0]}"
    raise LogFormatError(
        p,
        None,
        "expected a file, or a directory of Claude Code transcripts or opencode exports" + why,
    )


def _refuse_other_formats(folder: Path, fmt: str, verdicts: dict[Path, str]) -> None:
    """A folder read as one `fmt` session reads only its `fmt` files: a log of another format
    beside them (a Codex rollout in a Claude Code project folder) would be left out without a
    word, so the folder is refused, naming the files of each format."""
    files = _by_format(verdicts)
    if len(files) == 1:
        return
    order = [fmt] + sorted(name for name in files if name != fmt)
    listing = "; ".join(f"{name}: {files[name]}" for name in order)
    raise LogFormatError(
        folder,
        None,
        f"expected the logs of one session, in one format; this directory holds logs of "
        f"{len(files)} formats ({listing}). Replay each one with `replay batch {folder}`, "
        "or give one file",
    )


def _by_format(verdicts: dict[Path, str]) -> dict[str, str]:
    """Format → the names of its files (the first three), for a message."""
    names: dict[str, list[str]] = {}
    for path, name in verdicts.items():
        names.setdefault(name, []).append(path.name)
    return {
        name: ", ".join(files[:3]) + (f", … ({len(files) - 3} more)" if len(files) > 3 else "")
        for name, files in names.items()
    }
