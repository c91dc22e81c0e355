"""Read and write `replay-log` JSONL files.

Reading streams the file line by line; a bad line either stops the read with a
`LogFormatError` naming file:line (strict) or is skipped and counted (lenient, the default).
Writing is atomic and deterministic: the same events give the same bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from replay._atomic import write_atomic
from replay._errors import LogFormatError
from replay.log._events import (
    EVENT_TYPES,
    FORMAT_NAME,
    FORMAT_VERSION,
    Event,
    SessionHeader,
    SharedFieldsSet,
    share_fields_sets,
)
from replay.log._pairs import ToolPairs

_EVENT = TypeAdapter(Event)

UTF8_BOM = b"\xef\xbb\xbf"
"""The byte order mark some editors (Notepad and others on Windows) put at the start of a UTF-8
file. It is not part of the first record: every reader drops it."""


BLANK = " \t\r\n"
"""What a blank line is made of: JSON's whitespace (space, tab, carriage return, newline). A
line of other characters that `str.strip` would also take for whitespace (a form feed, \\x1c,
a no-break space) is no JSON value: a malformed line, not a blank one."""

BLANK_BYTES = BLANK.encode()
"""`BLANK` for the readers that split lines as bytes."""


def without_bom(data: bytes) -> bytes:
    """`data` without a leading UTF-8 byte order mark."""
    return data[len(UTF8_BOM) :] if data.startswith(UTF8_BOM) else data


@dataclass
class Session:
    """A whole log in memory: its header, its events in file order, and what was skipped."""

    header: SessionHeader
    """The session header (first line)."""

    events: list[Any] = field(default_factory=list)
    """Every event after the header, in file order."""

    path: str | None = None
    """File it was read from, for messages."""

    skipped: list[LogFormatError] = field(default_factory=list)
    """Lines skipped (or kept but breaking an ordering rule, repaired) in lenient mode, each with
    its reason."""

    stream_sha256: str | None = None
    """SHA-256 of the bytes read, where the log came from a stream (standard input, a pipe):
    they cannot be read again, so this is how a copy of it given beside is told."""

    def requests(self) -> list[Any]:
        from replay.log._events import RequestMarker

        return [e for e in self.events if isinstance(e, RequestMarker)]

    def requests_ran(self) -> Iterator[tuple[Any, str, str]]:
        """Each request marker with the provider and model it ran on, as the engine resolves
        them: the call's own, else (the model) its thread's, else the header's."""
        from replay.log._events import RequestMarker, ThreadStart

        thread_models: dict[str, str | None] = {}
        for event in self.events:
            if isinstance(event, ThreadStart):
                thread_models[event.thread_id] = event.model
            elif isinstance(event, RequestMarker):
                model = event.model or thread_models.get(event.thread) or self.header.model
                yield event, event.provider or self.header.provider, model


def describe_invalid(err: ValidationError) -> str:
    """What a record's first validation error says, and where (`at `field``)."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"] if not str(p).startswith("function-"))
    msg = first["msg"].lower()
    if first["type"] == "value_error":  # a model's own check, worded as it should read
        msg = first["msg"].removeprefix("Value error, ")
    return f"{msg} at `{loc}`" if loc else msg


_NUMBER = re.compile(r"\s*[-+]?\d+(\.\d*)?([eE][-+]?\d+)?\s*")
"""A number written as a string: Unix seconds, which only a lenient read takes as a time."""


def parse_event(obj: Any, path: str | Path, line: int, *, strict_text: str | None = None) -> Any:
    """Validate one decoded JSON value as an event, or raise a `LogFormatError`.

    `strict_text`, the line `obj` was decoded from, validates it as `--strict` reads: no value
    of another JSON type converted (`"version": "1"`, a token count written `"12"`), and a
    session header that says its `format`."""
    if not isinstance(obj, dict):
        raise LogFormatError(path, line, f"expected a JSON object, got {type(obj).__name__}")
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in EVENT_TYPES:
        known = ", ".join(sorted(EVENT_TYPES))
        raise LogFormatError(path, line, f"expected `type` to be one of {known}, got {kind!r}")
    if strict_text is not None and kind == "session" and "format" not in obj:
        raise LogFormatError(path, line, f"expected `format: {FORMAT_NAME}` in the session header")
    for name in ("ts", "cleared_at") if kind == "tool_result" else ("ts",):
        moment = obj.get(name)
        if strict_text is not None and isinstance(moment, str) and _NUMBER.fullmatch(moment):
            # pydantic's strict JSON mode still reads a number in a string as Unix seconds.
            raise LogFormatError(
                path, line, f"expected `{name}` as an ISO-8601 date-time, got {moment!r}"
            )
    try:
        event = _EVENT.validate_python(obj)
        if strict_text is not None:
            _check_types(strict_text)
    except ValidationError as err:
        time = next((e for e in err.errors() if e["loc"][-1:] in (("ts",), ("cleared_at",))
                     and "datetime" in e["type"]), None)
        if time is not None:  # pydantic's own words name its parser's internals
            field, value = time["loc"][-1], time["input"]
            expected = (f"expected `{field}` as an ISO-8601 date-time (like "
                        f"2026-03-02T09:00:01Z), got {value!r}")
        else:
            expected = f"invalid `{kind}` event: {describe_invalid(err)}"
        raise LogFormatError(path, line, expected) from None
    return event


def _check_types(text: str) -> None:
    """Raise the `ValidationError` of a value of another JSON type than its field's. The event
    itself is the lenient validation's, whatever the mode, so that both read the same events;
    a line pydantic's JSON parser refuses but Python's reads (the escape of a lone surrogate,
    which replay writes) is checked as the lenient read checks it."""
    try:
        _EVENT.validate_json(text, strict=True)
    except ValidationError as err:
        if err.errors()[0]["type"] != "json_invalid":
            raise


def iter_lines(path: str | Path) -> Iterator[tuple[int, str | LogFormatError]]:
    """Yield (line number, text without its newline) for every line that is not blank
    (`BLANK`), streaming. A line that is not UTF-8 yields a `LogFormatError` naming it instead
    of its text (the reader skips or raises it). A leading UTF-8 byte order mark is dropped."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1:
                raw = without_bom(raw)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                yield number, LogFormatError(path, number, f"expected UTF-8 text ({err.reason})")
                continue
            if text.strip(BLANK):
                # Without it a line cut short inside a string is "Invalid control character".
                yield number, text.removesuffix("\n")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


JSON_DECODER = json.JSONDecoder(parse_constant=_no_constant)
"""Python's JSON decoder without its NaN and ±Infinity, which are not JSON (a ValueError): read
as floats, they were written back as `null`."""


def loads_json(text: str | bytes) -> Any:
    """`json.loads` with `JSON_DECODER`."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return JSON_DECODER.decode(text)


def json_error(err: json.JSONDecodeError) -> str:
    """`Unterminated string starting at column 9`: Python's message without the place it gives
    after a colon (`at: line 1 column 9 (char 8)`) reads `… starting at`."""
    place = f"column {err.colno}"
    return f"{err.msg} {place}" if err.msg.endswith(" at") else f"{err.msg} at {place}"


def first_clause(err: Exception) -> str:
    """`Exceeds the limit (4300 digits) for integer string conversion` (not the advice after
    it, which is for programmers)."""
    return str(err).split(":")[0]


def read_log(path: str | Path, *, strict: bool = False, check_pairs: bool = False) -> Session:
    """Read a `replay-log` file. Lenient by default: bad lines are skipped and counted.

    `check_pairs=True` (what `replay.load` and the CLI use) also applies the ordering rules on
    tool calls and results: an orphan result or a call unanswered at the thread's next request
    stops a strict read; a lenient one keeps the line, counts it in `skipped` and inserts an
    empty error result for the unanswered call. Without it the file is read as written (any
    events, in any order: the lossless round trip)."""
    path = Path(path)
    if not path.exists():
        raise LogFormatError(path, None, "no such file")
    if path.is_dir():
        raise LogFormatError(path, None, "expected a log file, got a directory")
    header: SessionHeader | None = None
    events: list[Any] = []
    skipped: list[LogFormatError] = []
    fields_sets: dict[frozenset[str], SharedFieldsSet] = {}
    names: dict[str, str] = {}
    pairs = ToolPairs(path, strict) if check_pairs else None
    for number, text in iter_lines(path):
        try:
            if isinstance(text, LogFormatError):
                raise text
            try:
                obj = loads_json(text)
            except json.JSONDecodeError as err:
                raise LogFormatError(
                    path, number, f"expected a JSON object ({json_error(err)})"
                ) from None
            except ValueError as err:  # an integer of more digits than Python converts, NaN
                raise LogFormatError(
                    path, number, f"expected a JSON object ({first_clause(err)})"
                ) from None
            except RecursionError:
                raise LogFormatError(
                    path, number, "expected a JSON object (nested too deeply)"
                ) from None
            if header is None:
                if not (isinstance(obj, dict) and obj.get("type") == "session"):
                    raise LogFormatError(
                        path, number, f"expected a `session` header line of a {FORMAT_NAME} file"
                    )
                event = parse_event(obj, path, number, strict_text=text if strict else None)
                if event.version > FORMAT_VERSION:
                    raise LogFormatError(
                        path,
                        number,
                        f"expected {FORMAT_NAME} version <= {FORMAT_VERSION}, "
                        f"got {event.version} (upgrade replay)",
                    )
                if event.version < 1:  # no such version: the header itself is wrong
                    raise LogFormatError(
                        path, number, f"expected {FORMAT_NAME} version >= 1, got {event.version}"
                    )
                header = event
                if pairs is not None and event.id is not None:
                    pairs.ids[event.id] = number  # the header's id is one of the file's ids
                continue
            event = parse_event(obj, path, number, strict_text=text if strict else None)
            if isinstance(event, SessionHeader):
                raise LogFormatError(path, number, "expected one `session` header, got a second")
            problems: list[LogFormatError] = []
            if pairs is not None:
                rejected = pairs.rejected(event, number)
                if rejected is not None:
                    raise rejected
                problems, placeholders = pairs.see(event, number)
                if problems and strict:
                    raise problems[0]
                for placeholder in placeholders:
                    share_fields_sets(placeholder, fields_sets, names)
                    events.append(placeholder)
            share_fields_sets(event, fields_sets, names)
            events.append(event)
            skipped.extend(problems)  # the line is kept: counted, not skipped
        except LogFormatError as err:
            if strict or header is None:
                raise
            skipped.append(err)
    if header is None:
        raise LogFormatError(path, None, "empty log: expected a `session` header line")
    return Session(header=header, events=events, path=str(path), skipped=skipped)


def dump_event(event: Any) -> str:
    """One event as a canonical JSON line (sorted by field order, unset defaults omitted)."""
    data = event.model_dump(mode="json", exclude_unset=True, by_alias=True)
    # Fields that identify the line are always written, even when left at their default.
    head = {"type": event.type}
    if isinstance(event, SessionHeader):
        head |= {"format": event.format, "version": event.version}
    data = head | data  # (`ts` is required: always set, so always in `data`)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def dumps_log(header: SessionHeader, events: Iterable[Any]) -> str:
    """The whole log as text."""
    lines = [dump_event(header)] + [dump_event(e) for e in events]
    return "\n".join(lines) + "\n"


def write_log(session: Session, path: str | Path) -> None:
    """Write a session atomically as `replay-log` JSONL, line by line (the same bytes as
    `dumps_log`, never held whole)."""
    lines = (dump_event(e) + "\n" for e in (session.header, *session.events))
    write_atomic(path, lines)
