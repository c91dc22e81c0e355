"""Shared machinery of the adapters: reading foreign logs leniently, building native events,
mapping provider usage into disjoint buckets, and labelling what had to be estimated.

Every adapter turns a foreign log into a `Session` of the native `replay-log` format. The rules:

- A line that cannot be read (bad UTF-8, invalid JSON, a record of the wrong shape, an unknown
  record type) is a `LogFormatError` naming file:line. Lenient (default): it is skipped and
  counted in `Session.skipped`. Strict: the first one stops the read.
- A structural repair (a tool call whose result is missing before the next request, an ambiguous
  REDACTED id) is reported the same way, so `--strict` refuses a log that needed it.
- Nothing else may escape: every other exception raised while reading one record is turned into a
  `LogFormatError` for that record (the fuzz test holds every reader to this).
- What the log does not hold is estimated and labelled: `SessionHeader.estimated` names the
  estimated header fields, `hidden_prefix_tokens` (extra header field) is the estimated size of
  the unlogged prompt prefix, thinking blocks without text carry `estimated_tokens` and
  `estimated_from`, and a message whose text holds a placeholder for a base64 payload (an image,
  a PDF: `binary_placeholder`) carries `estimated_text`.
"""

from __future__ import annotations

import heapq
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from replay._errors import LogFormatError, ReplayError
from replay.log import (
    MAIN_THREAD,
    AssistantMessage,
    Compaction,
    RequestMarker,
    Session,
    SessionHeader,
    TextBlock,
    ThinkingBlock,
    ThreadStart,
    ToolCallBlock,
    ToolResult,
    Usage,
    UserMessage,
)
from replay.log._events import SharedFieldsSet, share_fields_sets
from replay.log._io import (
    BLANK_BYTES,
    describe_invalid,
    first_clause,
    json_error,
    loads_json,
    without_bom,
)
from replay.log._pairs import sent_message

MAX_LINE_BYTES = 64 * 1024 * 1024
"""A single line longer than this is refused (a guard against reading a binary file as JSONL)."""


class Bad(Exception):
    """A record of the wrong shape; the reader turns it into a `LogFormatError` at its line."""


class Issues:
    """Collects problems: raises the first one in strict mode, keeps them all otherwise."""

    def __init__(self, path: str | Path, strict: bool) -> None:
        self.path = str(path)
        self.strict = strict
        self.items: list[LogFormatError] = []

    def add(
        self, line: int | None, expected: str, path: str | Path | None = None, *,
        remedy: str | None = None,
    ) -> None:
        """`remedy`: what a lenient read did about it, appended to the message (a strict read
        stops here: nothing is done)."""
        if remedy and not self.strict:
            expected = f"{expected}; {remedy}"
        err = LogFormatError(path if path is not None else self.path, line, expected)
        if self.strict:
            raise err
        self.items.append(err)

    def fatal(self, line: int | None, expected: str, path: str | Path | None = None) -> None:
        """Stop the read. Lines a lenient read skipped before are named: they are often why
        nothing was left (an export cut inside its first message said only "found none")."""
        if self.items:
            count = len(self.items)
            lines = "line" if count == 1 else "lines"
            expected = f"{expected} ({count} {lines} skipped before, the first: {self.items[0]})"
        raise LogFormatError(path if path is not None else self.path, line, expected)


# --------------------------------------------------------------------------------------------------
# Reading


class WaitingCalls:
    """Tool calls not answered yet, by the id the log wrote, oldest first. Quirk: some models
    number their calls per response (`call_0` every turn); the ids are made unique
    (`call_0#2`), and a result names the log's id: it answers the oldest call still waiting."""

    def __init__(self) -> None:
        self._by_source: dict[str, list[str]] = {}

    def add(self, source: str, cid: str) -> None:
        self._by_source.setdefault(source, []).append(cid)

    def take(self, source: str | None) -> str | None:
        """The call a result naming `source` answers (None: no call of that id waits)."""
        queue = self._by_source.get(source or "")
        return queue.pop(0) if queue else None

    def drop(self, cid: str) -> None:
        """`cid` was answered by a result paired another way (an unknown or redacted id)."""
        for queue in self._by_source.values():
            if cid in queue:
                queue.remove(cid)


def waiting_calls(events: Iterable[Any]) -> list[str]:
    """The calls of one thread's `events` (in order) still waiting for a result, oldest first:
    made in a response the model saw back, not answered, and not passed by a request (a
    request that went without a call's result sent a placeholder for it, its result from then
    on: `SessionBuilder.repair_tool_results`). What a result paired by order answers."""
    waiting: dict[str, None] = {}
    for event in events:
        if isinstance(event, AssistantMessage) and event.in_context:
            for block in event.blocks:
                if isinstance(block, ToolCallBlock) and not block.server_side:
                    waiting[block.id] = None
        elif isinstance(event, ToolResult):
            waiting.pop(event.call_id, None)
        elif isinstance(event, RequestMarker):
            waiting.clear()
    return list(waiting)


def regular_files(paths: Iterable[Path]) -> list[Path]:
    """The regular files among `paths` (a folder's glob): a FIFO or a device found in a log
    folder is no log file, and opening one would wait for a writer."""
    return [p for p in paths if p.is_file()]


def listed(folder: Path, pattern: str) -> list[Path]:
    """The regular files of `folder` that match `pattern`, sorted; none when there is no such
    folder. A folder that exists but may not be listed is an error naming it: `Path.glob` skips
    it without a word, which would read a session without its subagent files."""
    if not folder.is_dir():
        return []
    try:
        os.scandir(folder).close()
    except OSError as err:
        raise LogFormatError(folder, None, f"cannot read the folder ({err.strerror})") from None
    return sorted(regular_files(folder.glob(pattern)))


def _log_file(path: str | Path) -> Path:
    p = Path(path)
    if not p.exists():
        raise LogFormatError(p, None, "no such file")
    if p.is_dir():
        raise LogFormatError(p, None, "expected a log file, got a directory")
    return p


def read_bytes(path: str | Path) -> bytes:
    p = _log_file(path)
    try:
        return without_bom(p.read_bytes())
    except OSError as err:
        raise LogFormatError(p, None, f"cannot read the file ({err.strerror})") from None


def _raw_lines(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes without the newline) of the file, read line by line: a log of
    hundreds of MB is never held whole (nor split into a list) beside its parsed lines."""
    p = _log_file(path)
    try:
        with p.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if number == 1:
                    raw = without_bom(raw)
                yield number, raw.removesuffix(b"\n")
    except OSError as err:
        raise LogFormatError(p, None, f"cannot read the file ({err.strerror})") from None


def json_lines_holding(path: str | Path, needles: tuple[bytes, ...]) -> Iterator[dict[str, Any]]:
    """The JSON objects of the lines that hold one of `needles`, read line by line, for a first
    pass over a log: lines it cannot read are skipped silently (the full pass, with
    `iter_json_lines`, reports them)."""
    for _, raw in _raw_lines(path):
        if any(needle in raw for needle in needles):
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):  # (JSONDecodeError, UnicodeDecodeError too)
                continue
            if isinstance(obj, dict):
                yield obj


def iter_json_lines(path: str | Path, issues: Issues) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, JSON object) for every readable line that is not blank (`BLANK_BYTES`:
    JSON's whitespace only), the file read line by line; bad lines go to `issues`."""
    blank = True
    for number, raw in _raw_lines(path):
        if not raw.strip(BLANK_BYTES):
            continue
        blank = False
        if len(raw) > MAX_LINE_BYTES:
            issues.add(number, f"line longer than {MAX_LINE_BYTES} bytes", path)
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            issues.add(number, f"expected UTF-8 text ({err.reason} at byte {err.start})", path)
            continue
        try:
            obj = loads_json(text)
        except json.JSONDecodeError as err:
            msg = f"expected a JSON object (invalid or truncated JSON: {json_error(err)})"
            issues.add(number, msg, path)
            continue
        except ValueError as err:  # an integer of more digits than Python converts, NaN
            issues.add(number, f"expected a JSON object ({first_clause(err)})", path)
            continue
        except RecursionError:
            issues.add(number, "expected a JSON object (nested too deeply)", path)
            continue
        if not isinstance(obj, dict):
            issues.add(number, f"expected a JSON object, got {type(obj).__name__}", path)
            continue
        yield number, obj
    if blank:
        issues.fatal(None, "empty file: expected at least one JSON line", path)


MALFORMED_STRUCTURE: tuple[type[Exception], ...] = (
    KeyError,
    TypeError,
    ValueError,
    AttributeError,
    IndexError,
    OverflowError,
    RecursionError,
    UnicodeError,
)
"""What code reading a record of unexpected shape raises (a missing key, a string where a list
was expected, a number too large, …): reported as a malformed record, never a traceback."""


@contextmanager
def failures_as_log_errors(path: str | Path) -> Iterator[None]:
    """Safety net around a whole read: whatever a malformed file still manages to break outside
    the per-record guards is reported as a `LogFormatError` for the file, never a traceback."""
    try:
        yield
    except (LogFormatError, ReplayError):
        raise
    except Bad as err:
        raise LogFormatError(path, None, str(err)) from None
    except ValidationError as err:
        raise LogFormatError(path, None, f"invalid log: {describe_invalid(err)}") from None
    except MALFORMED_STRUCTURE as err:
        raise LogFormatError(
            path, None, f"unexpected log structure ({type(err).__name__}: {err})"
        ) from None


def guarded(
    issues: Issues,
    line: int | None,
    fn: Callable[[], Any],
    what: str = "record",
    path: str | Path | None = None,
) -> Any:
    """Run `fn` for one record; any failure becomes a `LogFormatError` at `line` (or re-raises)."""
    try:
        return fn()
    except (LogFormatError, ReplayError):
        raise
    except Bad as err:
        issues.add(line, str(err), path)
    except ValidationError as err:
        issues.add(line, f"invalid {what}: {describe_invalid(err)}", path)
    except MALFORMED_STRUCTURE as err:
        issues.add(line, f"unexpected {what} structure ({type(err).__name__}: {err})", path)
    return None


# --------------------------------------------------------------------------------------------------
# Typed field access: a wrong type is a `Bad` record, never a TypeError deep inside an adapter.


def get_dict(obj: Any, key: str, *, required: bool = False) -> dict[str, Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    if value is None:
        if required:
            raise Bad(f"expected `{key}` (an object)")
        return {}
    if not isinstance(value, dict):
        raise Bad(f"expected `{key}` to be an object, got {type(value).__name__}")
    return value


def get_list(obj: Any, key: str, *, required: bool = False) -> list[Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    if value is None:
        if required:
            raise Bad(f"expected `{key}` (a list)")
        return []
    if not isinstance(value, list):
        raise Bad(f"expected `{key}` to be a list, got {type(value).__name__}")
    return value


def get_str(obj: Any, key: str, default: str | None = None, *, required: bool = False) -> Any:
    value = obj.get(key) if isinstance(obj, dict) else None
    if value is None:
        if required:
            raise Bad(f"expected `{key}` (a string)")
        return default
    if not isinstance(value, str):
        raise Bad(f"expected `{key}` to be a string, got {type(value).__name__}")
    return clean(value)


def get_int(obj: Any, key: str, default: int = 0) -> int:
    """A token count: a non-negative integer (floats with an integral value are accepted)."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Bad(f"expected `{key}` to be a number, got {type(value).__name__}")
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or value != int(value):
            raise Bad(f"expected `{key}` to be a whole number, got {value!r}")
        value = int(value)
    if value < 0:
        raise Bad(f"expected `{key}` to be >= 0, got {value}")
    return value


def counts_problem(obj: Any, keys: Iterable[str], where: str) -> str | None:
    """What makes the token counts `keys` of `obj` (at `where`) unreadable (`get_int`), or
    None when each is absent or a whole number >= 0."""
    try:
        for key in keys:
            get_int(obj, key)
    except Bad as bad:
        return f"{bad} in `{where}`"
    return None


def opt_str(obj: Any, key: str) -> str | None:
    """A string field for labels (ids, versions, paths): anything else reads as absent."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return clean(value) if isinstance(value, str) else None


def opt_ts(value: Any) -> datetime | None:
    """A time for labels: a malformed one reads as absent."""
    try:
        return parse_ts(value)
    except Bad:
        return None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def clean(text: str) -> str:
    """The text with lone surrogates (valid JSON escapes, invalid UTF-8) replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # (not `encode(..., "replace")`: that writes "?", text a log could hold)
        return _LONE_SURROGATE.sub("\ufffd", text)
    return text


def clean_json(value: Any) -> Any:
    """A JSON value with every string cleaned (so writing it as UTF-8 cannot fail)."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(str(k)): clean_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_json(v) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    return value


def dumps(value: Any) -> str:
    return json.dumps(clean_json(value), ensure_ascii=False, sort_keys=True)


_DATA_URL = re.compile(r"data:([^;,]*)(?:;[^,]*)?;base64,", re.IGNORECASE)


def binary_placeholder(block: Any) -> str | None:
    """The text standing in for a content block that carries a base64 payload (an image, a PDF
    `document`, a file), or None when `block` carries none.

    Quirk: logs keep such payloads as base64 text, but the model never reads that text (an image
    is billed by its pixels, a PDF by its pages): counted as text, a 30 KB PDF came to 32,774
    tokens. The payload is not decoded, so its real cost is not known here: a short placeholder
    names the block type, the media type and the payload's size, the adapter labels the event
    `estimated_text`, and the request's residual absorbs the difference. Shapes recognised:
    Anthropic `{type, source: {type: "base64", media_type, data}}` (Claude Code), pi-ai
    `{type, data, mimeType}`, OpenAI data URLs `{type, image_url | file_data: "data:…;base64,…"}`
    (Codex)."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    kind = clean(kind) if isinstance(kind, str) and kind else "block"
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        media, data = source.get("media_type"), source.get("data")
    elif isinstance(block.get("data"), str) and isinstance(block.get("mimeType"), str):
        media, data = block["mimeType"], block["data"]
    else:
        for key in ("image_url", "file_data"):
            url = block.get(key)
            match = _DATA_URL.match(url) if isinstance(url, str) else None
            if match:
                media, data = match.group(1), url[match.end() :]
                break
        else:
            return None
    media = clean(media) if isinstance(media, str) else ""
    size = len(data) if isinstance(data, str) else 0
    return f"[{kind} {media} {size} base64 chars]"


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""Header time of a log with no timestamp at all."""
_EPOCH_MIN = datetime(1990, 1, 1, tzinfo=UTC)
_EPOCH_MAX = datetime(2200, 1, 1, tzinfo=UTC)


def parse_ts(value: Any, what: str = "timestamp") -> datetime:
    """An ISO-8601 string or epoch milliseconds as an aware UTC datetime."""
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            ts = datetime.fromisoformat(text)
        except ValueError:
            raise Bad(f"expected `{what}` to be an ISO-8601 time, got {value[:40]!r}") from None
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=UTC)
        ts = ts.astimezone(UTC)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            ts = datetime.fromtimestamp(float(value) / 1000.0, tz=UTC)
        except (OverflowError, ValueError, OSError):
            raise Bad(f"expected `{what}` to be epoch milliseconds, got {value!r}") from None
    else:
        raise Bad(f"expected `{what}` (an ISO-8601 time or epoch milliseconds)")
    if not (_EPOCH_MIN <= ts <= _EPOCH_MAX):
        raise Bad(f"expected `{what}` between 1990 and 2200, got {value!r}")
    return ts


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict: JSON strings are decoded, anything else is wrapped."""
    if isinstance(raw, dict):
        return clean_json(raw)
    if isinstance(raw, str):
        try:
            value = loads_json(raw)
        except (ValueError, RecursionError):  # not JSON, or a number Python does not convert
            return {"_raw": clean(raw)}
        return clean_json(value) if isinstance(value, dict) else {"_raw": clean_json(value)}
    if raw is None:
        return {}
    return {"_raw": clean_json(raw)}


# --------------------------------------------------------------------------------------------------
# Usage: every provider's figures mapped explicitly into the disjoint native buckets.


def _cost(value: Any) -> str | None:
    """An agent's logged cost as a decimal string; None when absent or no cost (see
    `cost_problem`)."""
    return None if value is None or cost_problem(value, "cost") else str(value)


def cost_problem(value: Any, where: str) -> str | None:
    """What makes an agent's logged cost (`where`: its field) no cost: None when it is a finite
    number >= 0 (or a string of one). The token counts beside it stay readable."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return f"expected `{where}` to be a number, got {type(value).__name__}"
    try:
        number = float(value)
    except ValueError:
        return f"expected `{where}` to be a number, got {str(value)[:40]!r}"
    if not math.isfinite(number) or number < 0:
        return f"expected `{where}` to be a number >= 0, got {value!r}"
    return None


def anthropic_usage(u: dict[str, Any]) -> Usage:
    """Anthropic Messages API usage: the four prompt fields are already additive.

    Quirk (Claude Code >= ~1.0.8x): `cache_creation{ephemeral_5m_input_tokens,
    ephemeral_1h_input_tokens}` splits the write by TTL; older logs only have the total, which the
    API bills at the default (5-minute) rate. A split that does not add up leaves the remainder in
    the 5-minute bucket, so the prompt total is always `input + cache_read + cache_creation`
    (the 1h count capped at the total; `anthropic_split_problem` says what to report). One
    count logged alone is read as the split says: the other is the rest of the write.
    """
    created = get_int(u, "cache_creation_input_tokens")
    split = get_dict(u, "cache_creation")
    if (split.get("ephemeral_5m_input_tokens") is not None
            and split.get("ephemeral_1h_input_tokens") is None):
        w5m = min(get_int(split, "ephemeral_5m_input_tokens"), created)  # 1h: the rest
        w1h = created - w5m
    else:
        w1h = min(get_int(split, "ephemeral_1h_input_tokens"), created)
        w5m = created - w1h
    details = get_dict(u, "output_tokens_details")
    thinking = details.get("thinking_tokens")
    return Usage(
        input_tokens=get_int(u, "input_tokens"),
        cache_read_tokens=get_int(u, "cache_read_input_tokens"),
        cache_write_5m_tokens=w5m,
        cache_write_1h_tokens=w1h,
        output_tokens=get_int(u, "output_tokens"),
        reasoning_tokens=get_int(details, "thinking_tokens") if thinking is not None else None,
        raw=clean_json(u),
    )


_TTL_KEYS = ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")


def anthropic_split_problem(u: dict[str, Any]) -> str | None:
    """What is inconsistent in a usage's TTL split of its cache write (None: no split, or one
    that adds up). The API's `cache_creation_input_tokens` is the sum of the two
    `cache_creation.ephemeral_*` counts; one of them alone may be logged (the other is the
    rest), but not above the total. `anthropic_usage` keeps the total and reads the 1h count
    capped at it (the 5m count, when it is logged alone)."""
    split = get_dict(u, "cache_creation")
    logged = {k: get_int(split, k) for k in _TTL_KEYS if split.get(k) is not None}
    created = get_int(u, "cache_creation_input_tokens")
    parts = sum(logged.values())
    if parts > created or (len(logged) == 2 and parts != created):
        shown = " + ".join(f"`{k}` {v}" for k, v in logged.items())
        return (f"expected the write split {shown} to add up to `cache_creation_input_tokens` "
                f"{created}")
    return None


_ITERATION_COUNTS = (
    "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens"
)


def anthropic_iterations_problem(u: dict[str, Any]) -> str | None:
    """What makes a usage's `iterations` (one entry per sampling iteration: the response, and
    server-side compaction's, billed apart: caching.md A4) unreadable; None when it is absent
    or a list of objects with a `type` and token counts >= 0."""
    iterations = u.get("iterations")
    if iterations is None:
        return None
    if not isinstance(iterations, list):
        return f"expected `iterations` to be a list, got {type(iterations).__name__}"
    for n, item in enumerate(iterations):
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            return f"expected `iterations[{n}]` to be an object with a `type`"
        problem = counts_problem(item, _ITERATION_COUNTS, f"iterations[{n}]")
        if problem is not None:
            return problem
    return None


_NO_GEO = ("", "not_available", "global")
"""`usage.inference_geo` values that are no price variant: Claude Code logs "" or
"not_available", and "global" is the default routing."""


def anthropic_price_context(usage: Usage) -> dict[str, str] | None:
    """The price variant of a Claude response: `usage.speed: "fast"` (fast mode, Claude Code
    2.1+) is billed at the fast rates, `usage.inference_geo: "us"` (US-only inference) at ×1.1
    on Claude 4.6+ (`pricing/price_patches.json`); any other region is carried too, and the
    pricer notes that nothing prices it. `service_tier` is kept in `usage.raw` and not priced."""
    raw = usage.raw if isinstance(usage.raw, dict) else {}
    context = {}
    if raw.get("speed") == "fast":
        context["speed"] = "fast"
    geo = raw.get("inference_geo")
    if isinstance(geo, str) and geo not in _NO_GEO:
        context["inference_geo"] = geo
    return context or None


def openai_usage(u: dict[str, Any]) -> Usage:
    """OpenAI / Codex usage. Quirk: `input_tokens` INCLUDES `cached_input_tokens`, so the uncached
    bucket is input − cached. OpenAI has no cache-write field or fee (writes are free and
    implicit). `reasoning_output_tokens` is part of `output_tokens`."""
    total_in = get_int(u, "input_tokens")
    cached = get_int(u, "cached_input_tokens")
    if cached > total_in:
        raise Bad(f"cached_input_tokens {cached} > input_tokens {total_in}")
    reasoning = u.get("reasoning_output_tokens")
    get_int(u, "total_tokens")  # not used, but a negative count is malformed all the same
    return Usage(
        input_tokens=total_in - cached,
        cache_read_tokens=cached,
        output_tokens=get_int(u, "output_tokens"),
        reasoning_tokens=get_int(u, "reasoning_output_tokens") if reasoning is not None else None,
        raw=clean_json(u),
    )


def pi_usage(u: dict[str, Any]) -> Usage:
    """pi-ai `Usage{input, output, cacheRead, cacheWrite, cost{total}}`: pi already subtracts
    cached tokens for OpenAI (`input = input_tokens - cached_tokens`), so all four are disjoint.
    Assumed: every write is a 5-minute write. pi-ai marks its breakpoints without a TTL (the
    default, 5 minutes), and nothing in a pi log says a write's TTL: `cacheWrite` has no split,
    and pi's own `cost.cacheWrite` is priced from its table whatever the TTL."""
    get_int(u, "totalTokens")  # not used, but a negative count is malformed all the same
    return Usage(
        input_tokens=get_int(u, "input"),
        cache_read_tokens=get_int(u, "cacheRead"),
        cache_write_5m_tokens=get_int(u, "cacheWrite"),
        output_tokens=get_int(u, "output"),
        cost_usd=_cost(get_dict(u, "cost").get("total")),
        raw=clean_json(u),
    )


def opencode_usage(tokens: dict[str, Any], cost: Any) -> Usage:
    """opencode `tokens{input, output, reasoning, cache{read, write}}`.

    Quirks: `input` excludes cache reads (already the uncached bucket). `output` INCLUDES
    `reasoning`: opencode stores the AI SDK's `outputTokens` (OpenAI's `output_tokens`, reasoning
    included) and its `reasoningTokens` beside it. Measured on the nimbus sample (opencode
    1.2.26, gpt-5.3-codex, 63 steps): output − reasoning − the step's visible text and calls is
    6…46 tokens (11 on steps without reasoning), output − visible alone grows with reasoning
    (20…1,242, correlation 0.999), and reasoning never exceeds output (at most 97 % of it). So
    the output bucket is `output` and `reasoning` is the part of it spent on reasoning.
    opencode's own `cost` adds `reasoning` at the output rate on top of `output` (on all 63
    steps), so it charges reasoning twice; `cost_usd` keeps that figure as logged.

    Anthropic routes: the AI SDK reports no reasoning tokens for Anthropic (`reasoning` = 0) and
    its `outputTokens` is Anthropic's `output_tokens`, thinking included: the same reading. A
    reasoning count larger than the output can only come from an output that leaves reasoning
    out: then (no such export seen) the output bucket is their sum.
    """
    cache = get_dict(tokens, "cache")
    get_int(tokens, "total")  # not used, but a negative count is malformed all the same
    output = get_int(tokens, "output")
    reasoning = get_int(tokens, "reasoning")
    return Usage(
        input_tokens=get_int(tokens, "input"),
        cache_read_tokens=get_int(cache, "read"),
        cache_write_5m_tokens=get_int(cache, "write"),
        output_tokens=output if reasoning <= output else output + reasoning,
        reasoning_tokens=reasoning,
        cost_usd=_cost(cost),
        raw=clean_json(tokens),
    )


def usage_is_empty(u: Usage | None) -> bool:
    return u is None or (u.prompt_tokens == 0 and u.output_tokens == 0)


_PROVIDER_ALIASES = {
    "anthropic": "anthropic",
    "claude": "anthropic",
    "openai": "openai",
    "openai-codex": "openai",
    "azure": "azure",
    "azure-openai": "azure",
    "google": "google",
    "google-gemini-cli": "google",
    "google-vertex": "google",
    "gemini": "google",
    "deepseek": "deepseek",
    "mistral": "mistral",
    "xai": "x-ai",
    "groq": "groq",
    "openrouter": "openrouter",
}


class Linked:
    """Indexes the data ties together, transitively (union-find): which files of a directory are
    one session (Claude Code's transcripts and subagent files, opencode's exports)."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, index: int) -> int:
        root = self.parent.setdefault(index, index)
        while root != self.parent[root]:
            root = self.parent[root]
        self.parent[index] = root
        return root

    def join(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)

    def groups(self, items: list[Any]) -> list[list[Any]]:
        """`items` (the one at index i for index i) grouped: groups in the order of their first
        item, each in index order."""
        out: dict[int, list[Any]] = {}
        for index, item in enumerate(items):
            out.setdefault(self.find(index), []).append(item)
        return list(out.values())


def several_sessions(
    path: Path, groups: list[list[Path]], expected: str, related: str, one: str
) -> LogFormatError:
    """The error for a directory of `groups` unrelated sessions (each its files, the one that
    names it first): merging them would price them as one conversation. `expected`: what one
    session is; `related`: what its other files are; `one`: the file to give instead."""
    shown = [g[0].name + (f" (+{len(g) - 1} {related})" if len(g) > 1 else "") for g in groups]
    listing = ", ".join(shown[:5]) + (f", … ({len(shown) - 5} more)" if len(shown) > 5 else "")
    return LogFormatError(
        path,
        None,
        f"expected {expected}; this directory holds {len(groups)} unrelated sessions: "
        f"{listing}. Replay each one with `replay batch {path}`, or give {one}",
    )


def provider_for(provider: str | None, model: str | None) -> str:
    """A provider id genai-prices knows. Aggregators (opencode zen, github-copilot…) are mapped to
    the model's maker, because that is whose prices the request was billed at upstream."""
    name = (provider or "").lower()
    if name in _PROVIDER_ALIASES and name != "openrouter":
        return _PROVIDER_ALIASES[name]
    m = (model or "").lower()
    if m.startswith("claude"):
        return "anthropic"
    if re.match(r"^(gpt|o[134]|codex|chatgpt)", m):
        return "openai"
    if m.startswith("gemini"):
        return "google"
    if m.startswith("deepseek"):
        return "deepseek"
    return _PROVIDER_ALIASES.get(name, name or "anthropic")


# --------------------------------------------------------------------------------------------------
# Building a session


@dataclass
class ThreadEvents:
    """The events of one thread in order (the thread's own order, not yet merged)."""

    name: str
    events: list[Any] = field(default_factory=list)


@dataclass
class _ToolPairing:
    """One thread's calls and results as `SessionBuilder.repair_tool_results` walks them."""

    pending: dict[str, tuple[ToolCallBlock, Any]] = field(default_factory=dict)
    """Calls waiting for their result (→ the call and its message), in call order."""
    answered: dict[str, str] = field(default_factory=dict)
    """Call id → where its result was, as a report says it (" on line N", " by a
    placeholder before request R", "" for a result without a line)."""
    logged_ids: dict[str, str] = field(default_factory=dict)
    """Call id → the id the log wrote for it (`source_id`: a reused or REDACTED id)."""
    placeheld: set[str] = field(default_factory=set)
    """Calls a placeholder answered."""

    def calls(self, message: AssistantMessage) -> None:
        """The client-side calls of a response the model saw back now wait for a result."""
        for block in message.blocks:
            if isinstance(block, ToolCallBlock) and not block.server_side:
                self.pending[block.id] = (block, message)
                self.logged_ids[block.id] = getattr(block, "source_id", None) or block.id

    def repaired(self, result: ToolResult) -> ToolResult:
        """Quirk (ids reused per response, `call_0` every turn, or REDACTED: the adapters pair
        a result with the oldest call of its logged id): a call a request passed without its
        result got a placeholder and waits no more, so a result paired with it answers the
        oldest call of the same logged id still waiting, if one is."""
        if result.call_id in self.placeheld and result.call_id not in self.pending:
            logged = self.logged_ids.get(result.call_id)
            waiting = next((c for c in self.pending if self.logged_ids[c] == logged), None)
            if waiting is not None:
                result.call_id, result.tool_name = waiting, self.pending[waiting][0].name
        return result

    def answered_before(self, result: ToolResult) -> str | None:
        """Where the call of `result` was already answered (the result is a second one), else
        None: the result answers its call."""
        if result.call_id in self.answered and result.call_id not in self.pending:
            return self.answered[result.call_id]
        self.pending.pop(result.call_id, None)
        line = getattr(result, "line", None)
        self.answered[result.call_id] = f" on line {line}" if line else ""
        return None

    def fill(self, request: RequestMarker) -> None:
        """Every pending call was answered by a placeholder before `request`."""
        for call_id in self.pending:
            self.answered[call_id] = f" by a placeholder before request {request.request_id}"
            self.placeheld.add(call_id)
        self.pending.clear()


def _unique(base: str, taken: set[str]) -> str:
    """`base`, or the first of `base#2`, `base#3`, … not in `taken`; added to `taken`."""
    unique, n = base, 1
    while unique in taken:
        n += 1
        unique = f"{base}#{n}"
    taken.add(unique)
    return unique


class SessionBuilder:
    """Collects events per thread, pairs tool calls with results, then merges and numbers them."""

    def __init__(self, path: str | Path, issues: Issues) -> None:
        self.path = str(path)
        self.issues = issues
        self.threads: dict[str, ThreadEvents] = {}
        self._counter = 0
        self._request_ids: set[str] = set()
        self._call_ids: set[str] = set()
        self.thread_starts: dict[str, ThreadStart] = {}
        self.files: dict[str, str] = {}
        """Event id → the file its line is in, for a session read from several files (a problem
        found once they are merged names that file, not `path`)."""

    # ids ----------------------------------------------------------------------------------
    def new_id(self) -> str:
        self._counter += 1
        return f"t{self._counter}"

    def request_id(self, wanted: str | None) -> str:
        """A unique request id (REDACTED or repeated ids get a suffix)."""
        base = wanted if wanted and wanted != "REDACTED" else f"req-{len(self._request_ids) + 1}"
        return _unique(base, self._request_ids)

    def call_id(self, wanted: str | None, fallback: str) -> str:
        """A unique tool-call id. Quirk (Entire redaction): ids may be `REDACTED`; they are
        replaced by a generated id and the result is paired by order instead."""
        base = wanted if wanted and wanted != "REDACTED" else f"call-{fallback}"
        return _unique(base, self._call_ids)

    def read_from(self, event: Any, path: str | Path) -> None:
        """Note the file `event` was read from (see `files`)."""
        self.files[event.id] = str(path)

    def _report(self, event: Any, expected: str, remedy: str) -> None:
        """Report a problem at the line (and file) `event` was read from."""
        line = getattr(event, "line", None)
        self.issues.add(line, expected, self.files.get(event.id), remedy=remedy)

    # events -------------------------------------------------------------------------------
    def thread(self, name: str) -> ThreadEvents:
        if name not in self.threads:
            self.threads[name] = ThreadEvents(name)
        return self.threads[name]

    def add(self, event: Any) -> Any:
        if event.id is None:
            event.id = self.new_id()
        self.thread(event.thread).events.append(event)
        return event

    # tool pairing -------------------------------------------------------------------------
    def repair_tool_results(self, expected: Callable[[Any], bool] | None = None) -> None:
        """Quirk (interrupted turns, truncated captures, bad input): a tool call whose result never
        came before the thread's next request. Providers refuse such a prompt, so the harness must
        have sent something: a placeholder error result is inserted right before that request.
        The repair is reported (strict mode refuses the log) unless `expected(owner message)` says
        the harness itself fills the gap (pi does so for aborted responses).

        The placeholder is the call's result from then on. A provider takes one result per call
        (Anthropic's only in the message right after the call's), and the requests sent before
        the real result came cached the prompt that held the placeholder; whether a harness later
        swapped in the real one (breaking that prefix) no log says. So a result logged after the
        placeholder is a second result for the call: dropped and reported, as a result written
        twice is. (A result the adapter paired by its logged id with such a call answers the
        oldest call of that id still waiting instead, if one is: `_ToolPairing.repaired`.)"""
        for thread in self.threads.values():
            pairing = _ToolPairing()
            out: list[Any] = []
            for event in thread.events:
                if isinstance(event, AssistantMessage) and event.in_context:
                    pairing.calls(event)
                elif isinstance(event, ToolResult):
                    first = pairing.answered_before(pairing.repaired(event))
                    if first is not None:
                        # Quirk (a record written twice, a result logged after the request
                        # that went without it): a provider takes one result per call.
                        self._report(
                            event,
                            f"expected one tool result per call: call id {event.call_id!r} was "
                            f"already answered{first}",
                            "this one was dropped",
                        )
                        continue
                elif isinstance(event, RequestMarker) and pairing.pending:
                    out += self._placeholders(event, pairing, expected)
                out.append(event)
            thread.events = out

    def _placeholders(
        self, request: RequestMarker, pairing: _ToolPairing, expected: Callable[[Any], bool] | None
    ) -> list[ToolResult]:
        """The placeholder error results for the calls still pending at `request` (each reported
        unless `expected`); they answer those calls."""
        out = []
        for call_id, (block, owner) in pairing.pending.items():
            if expected is None or not expected(owner):
                self._report(
                    owner,
                    f"expected a tool result for call {call_id!r} ({block.name}) "
                    f"before request {request.request_id}",
                    "a placeholder error result was added",
                )
            placeholder = ToolResult(
                ts=request.ts,
                thread=request.thread,
                id=self.new_id(),
                call_id=call_id,
                tool_name=block.name,
                output="",
                is_error=True,
            )
            placeholder.synthetic = "missing tool result"
            out.append(placeholder)
        pairing.fill(request)
        return out

    def drop_requests_before_any_message(self) -> None:
        """Quirk (a capture gap, a first line lost or unreadable: a sidechain whose first
        prompt is missing starts with its response): a request of a thread that holds no
        message before it. No prompt can be rebuilt for it, so it is dropped and reported (a
        strict read refuses the log); the thread's later requests are replayed."""
        for thread in self.threads.values():
            seen, kept = False, []
            for event in thread.events:
                if sent_message(event):
                    seen = True
                elif isinstance(event, RequestMarker) and not seen:
                    self._report(
                        event,
                        f"expected a message of thread {thread.name!r} before request "
                        f"{event.request_id} (the log holds none: a capture gap?)",
                        "the request was dropped",
                    )
                    continue
                kept.append(event)
            thread.events = kept

    # finishing ----------------------------------------------------------------------------
    def merged(self) -> list[Any]:
        """All threads merged by time, each thread's own order kept; ids renumbered `e1…`."""
        streams = []
        for order, thread in enumerate(self.threads.values()):
            streams.append([((e.ts, order, n), e) for n, e in enumerate(thread.events)])
        events = [e for _, e in heapq.merge(*streams, key=lambda pair: pair[0])]
        # heapq.merge keeps each stream's order even where a stream's timestamps go backwards.
        mapping: dict[str, str] = {}
        for n, event in enumerate(events, start=2):
            new = f"e{n}"
            if event.id is not None:
                mapping[event.id] = new
            event.id = new
        for event in events:
            if isinstance(event, Compaction):
                event.replaces = [mapping[r] for r in event.replaces if r in mapping]
            copied = getattr(event, "copied_from", None)
            if isinstance(copied, str) and copied in mapping:
                event.copied_from = mapping[copied]
        return events

    def session(self, header: SessionHeader) -> Session:
        self.drop_requests_before_any_message()
        events = self.merged()
        # As `read_log` does: one fields set per shape of event, one string per recurring
        # value (names, ids, texts that come back word for word).
        fields_sets: dict[frozenset[str], SharedFieldsSet] = {}
        values: dict[str, str] = {}
        for event in events:
            share_fields_sets(event, fields_sets, values)
        header.id = "e1"
        if events and header.ts > events[0].ts:
            header.ts = events[0].ts
        return Session(header=header, events=events, path=self.path, skipped=self.issues.items)


# --------------------------------------------------------------------------------------------------
# Estimates


def visible_output_tokens(blocks: Iterable[Any], model: str) -> int:
    from replay.strategies._view import tool_call_block
    from replay.tokens import counter_for

    counter = counter_for(model)
    total = 0
    for b in blocks:
        if isinstance(b, TextBlock):
            total += counter.count(b.text)
        elif isinstance(b, ToolCallBlock):
            total += counter.count(tool_call_block(b).rendered())
        elif isinstance(b, ThinkingBlock) and b.thinking:
            total += counter.count(b.thinking)
    return total


def estimate_thinking(message: AssistantMessage, usage: Usage | None, model: str) -> None:
    """Quirk (Claude Code 2.1.x logs thinking as `""` + signature; Codex/opencode on OpenAI keep
    reasoning encrypted or summarised): size each thinking block without text from the request's
    output.

    With `reasoning_tokens` reported (OpenAI, opencode on OpenAI routes, Claude's
    `output_tokens_details.thinking_tokens`), that count is the response's whole reasoning: the
    thinking blocks whose text is logged are counted by that text, and only the rest of the
    count, never below zero, is split evenly over the blocks without text (so those blocks add
    up to max(0, reasoning − logged thinking), and the response's reasoning to the larger of
    the two). A summary (`summary`) is not thinking text: it is not what the model reads back.
    Otherwise (Anthropic) the size is output_tokens − tokens of the visible blocks."""
    empty = [b for b in message.blocks if isinstance(b, ThinkingBlock) and not b.thinking]
    if not empty or usage is None:
        return
    if usage.reasoning_tokens is not None:
        budget, source = usage.reasoning_tokens, "reasoning_tokens"
        said = [b for b in message.blocks if isinstance(b, ThinkingBlock) and b.thinking]
        if said:
            budget = max(0, budget - visible_output_tokens(said, model))
            source = "reasoning_tokens - thinking text"
    else:
        visible = visible_output_tokens(message.blocks, model)
        budget, source = max(0, usage.output_tokens - visible), "output_tokens - visible blocks"
    share, rest = divmod(budget, len(empty))
    for n, block in enumerate(empty):
        block.estimated_tokens = share + (1 if n < rest else 0)
        block.estimated_from = source


def _view_item(e: Any, n: int) -> Any:
    """One logged event as the engine's view item (None for events that are not messages)."""
    from replay.strategies._view import (
        AssistantItem,
        Block,
        ToolResultItem,
        UserItem,
        tool_call_block,
    )

    if isinstance(e, UserMessage):
        return UserItem(e.text, event_index=n, injected=e.injected)
    if isinstance(e, AssistantMessage):
        blocks = []
        for b in e.blocks:
            if isinstance(b, TextBlock):
                blocks.append(Block("text", text=b.text))
            elif isinstance(b, ThinkingBlock):
                blocks.append(
                    Block("thinking", text=b.thinking, estimated_tokens=b.estimated_tokens)
                )
            else:
                blocks.append(tool_call_block(b))
        return AssistantItem(blocks=tuple(blocks), event_index=n)
    if isinstance(e, ToolResult):
        return ToolResultItem(e.call_id, e.tool_name, e.output, e.is_error, event_index=n)
    return None


def _cleared(items: list[Any], cleared: set[int]) -> list[Any]:
    """`items` with the tool results at these event indexes shown cleared, as `recorded` shows
    them."""
    from replay.strategies.recorded import shown_cleared

    return shown_cleared(items, cleared) if cleared else items


def _view_items(events: Iterable[Any], at: datetime | None = None) -> list[Any]:
    """The thread's history as the engine's view items (what `baseline` would send; with `at`,
    the tool results the harness had cleared by then shown cleared)."""
    events = list(events)
    items = (_view_item(e, n) for n, e in enumerate(events))
    cleared = {
        n
        for n, e in enumerate(events)
        if at is not None
        and isinstance(e, ToolResult)
        and e.cleared_at is not None
        and e.cleared_at <= at
    }
    return _cleared([i for i in items if i is not None], cleared)


def rendered_prompt_tokens(
    events: Iterable[Any], marker: RequestMarker, header: SessionHeader, system: str
) -> int:
    """Prompt size `replay` renders for `marker` from the logged history (full, uncompacted;
    results the harness had cleared by then shown cleared)."""
    from replay.render import Renderer
    from replay.tokens import counter_for

    model = marker.model or header.model
    renderer = Renderer(counter_for(model))
    request = renderer.render(
        _view_items(events, marker.ts),
        system=system,
        tools=header.tools,
        index=0,
        request_id=marker.request_id,
        thread=marker.thread,
        ts=marker.ts,
        model=model,
        provider=marker.provider or header.provider,
    )
    return request.total


def estimate_hidden_prefix(session: Session) -> None:
    """Quirk (no agent logs its whole prompt): estimate the unlogged prefix of each thread.

    H = recorded prompt of the thread's first request with usage − the prompt `replay` renders
    for it from what the log holds (system prompt and tools if logged, visible messages), counted
    with the engine's renderer and `replay.tokens.counter_for(model)`. H covers the system prompt,
    tool schemas and context injected before the first request (CLAUDE.md, environment, rendered
    reminders). Stored as `hidden_prefix_tokens` on the header (main thread) or on the
    `ThreadStart` (other threads), with `hidden_prefix_from` = the request it was measured on;
    an abandoned branch takes its parent's (`_inherits_prefix`). Per-turn injected context
    after that is NOT folded in (see docs/adapters.md: residual).
    """
    header = session.header
    starts = {e.thread_id: e for e in session.events if isinstance(e, ThreadStart)}
    seen: set[str] = set()
    history: dict[str, list[Any]] = {}
    branches: list[tuple[ThreadStart, RequestMarker, list[Any]]] = []
    for e in session.events:
        history.setdefault(e.thread, []).append(e)
        if not isinstance(e, RequestMarker) or e.thread in seen or usage_is_empty(e.usage):
            continue
        seen.add(e.thread)
        target = header if e.thread == MAIN_THREAD else starts.get(e.thread)
        if target is None:
            continue
        if _inherits_prefix(target):  # once the parents are measured
            branches.append((target, e, list(history[e.thread])))
            continue
        _measure_hidden_prefix(target, e, history[e.thread], header)
    for start, marker, events in branches:
        parent = header if start.branch_of == MAIN_THREAD else starts.get(start.branch_of)
        if parent is not None and parent.hidden_prefix_tokens is not None:
            start.hidden_prefix_tokens = parent.hidden_prefix_tokens
            start.hidden_prefix_from = getattr(parent, "hidden_prefix_from", None)
        else:
            _measure_hidden_prefix(start, marker, events, header)


def _measure_hidden_prefix(target: Any, marker: RequestMarker, events: list[Any],
                           header: SessionHeader) -> None:
    """H of one thread: measured on its first request with usage (`marker`), `events` being
    the thread's events up to it."""
    system = header.system
    if isinstance(target, ThreadStart) and target.system is not None:
        system = target.system
    visible = rendered_prompt_tokens(events, marker, header, system)
    target.hidden_prefix_tokens = max(0, marker.usage.prompt_tokens - visible)
    target.hidden_prefix_from = marker.request_id
    if target is header and "hidden_prefix" not in header.estimated:
        header.estimated.append("hidden_prefix")


def _inherits_prefix(start: Any) -> bool:
    """Quirk (an abandoned branch of a rewound tree): the branch re-sends its parent's history
    up to the fork, head included, so it has its parent's hidden prefix. Measured on its own
    first request it also took in the context injected unlogged before the fork, and the
    first-message context split from it (`fit_heads`) came out another size than the parent's:
    the branch's prompt parted from the parent's cached one right after the head, and its first
    request was simulated as a cold write of the whole history."""
    return isinstance(start, ThreadStart) and getattr(start, "branch_of", None) is not None and (
        start.system is None
    )


@dataclass(frozen=True)
class Residual:
    """What the log does not explain about one request's prompt."""

    request_id: str
    thread: str
    recorded: int
    """Prompt tokens the provider reported."""
    simulated: int
    """Prompt tokens `replay` renders for the logged context as the agent sent it (its own
    compactions and cleared tool results applied), plus the thread's estimated hidden prefix."""

    @property
    def residual(self) -> int:
        """recorded − simulated: context injected without being logged (> 0), or tokenizer
        over-count (< 0). Zero on the request the hidden prefix was measured on."""
        return self.recorded - self.simulated


def prompt_residuals(session: Session) -> list[Residual]:
    """Per-turn injected context, as a residual (docs/adapters.md, "Estimates").

    For every request with usage: recorded prompt − (hidden prefix + the logged context as the
    agent sent it: its own compactions applied, each summary where the first event it replaced
    stood, and the tool results it had cleared by then shown cleared). Growth of the residual
    between consecutive requests of a thread is context the agent injected that turn without
    logging it (rendered reminders, CLAUDE.md re-reads, a remote compaction's opaque
    summary…). Fidelity reports use it to tell "hidden" from cache misses.
    """
    from replay.render import Renderer
    from replay.strategies._view import SummaryItem
    from replay.tokens import counter_for, family_for

    header = session.header
    starts = {e.thread_id: e for e in session.events if isinstance(e, ThreadStart)}
    renderers: dict[str, Renderer] = {}
    items: dict[str, list[Any]] = {}
    positions: dict[str, dict[str, int]] = {}
    compactions: dict[str, list[tuple[int, Compaction]]] = {}
    clears: dict[str, list[tuple[datetime, int]]] = {}
    summaries: dict[str, SummaryItem] = {}
    out: list[Residual] = []
    for e in session.events:
        thread_items = items.setdefault(e.thread, [])
        where = positions.setdefault(e.thread, {})
        if isinstance(e, Compaction):
            compactions.setdefault(e.thread, []).append((len(where), e))
        if isinstance(e, ToolResult) and e.cleared_at is not None:
            clears.setdefault(e.thread, []).append((e.cleared_at, len(where)))
        if not isinstance(e, RequestMarker):
            item = _view_item(e, len(where))
            if e.id is not None:
                where[e.id] = len(where)
            if item is not None:
                thread_items.append(item)
            continue
        if usage_is_empty(e.usage):
            continue
        start = starts.get(e.thread)
        owner = header if e.thread == MAIN_THREAD else start
        hidden = getattr(owner, "hidden_prefix_tokens", 0) or 0
        system = header.system
        if start is not None and start.system is not None:
            system = start.system
        view: list[Any] = thread_items
        logged = compactions.get(e.thread, [])
        if logged:
            replaced: set[int] = set()
            anchors: list[tuple[int, str]] = []
            for n, c in logged:
                spots = {where[r] for r in c.replaces if r in where}
                replaced |= spots
                anchors.append((min(spots, default=n), c.id or str(n)))
            # A later compaction that replaced an earlier summary's place supersedes it.
            live = [a for a in anchors if a[0] not in replaced or a == anchors[-1]]
            texts = {c.id or str(n): c.summary for n, c in logged}
            view = []
            pending = sorted(live)
            for item in thread_items:
                while pending and item.event_index >= pending[0][0]:
                    view.append(_summary(summaries, pending.pop(0)[1], texts))
                if item.event_index not in replaced:
                    view.append(item)
            view += [_summary(summaries, key, texts) for _, key in pending]
        view = _cleared(view, {n for at, n in clears.get(e.thread, []) if at <= e.ts})
        model = e.model or header.model
        family = family_for(model).family
        renderer = renderers.get(family)
        if renderer is None:
            renderer = renderers[family] = Renderer(counter_for(model))
        rendered = renderer.render(
            view,
            system=system,
            tools=header.tools,
            index=len(out),
            request_id=e.request_id,
            thread=e.thread,
            ts=e.ts,
            model=model,
            provider=e.provider or header.provider,
        )
        out.append(Residual(e.request_id, e.thread, e.usage.prompt_tokens, rendered.total + hidden))
    return out


def _summary(cache: dict[str, Any], key: str, texts: dict[str, str]) -> Any:
    from replay.strategies._view import SummaryItem

    if key not in cache:
        cache[key] = SummaryItem(text=texts[key], source="logged")
    return cache[key]


def most_common(values: Iterable[str | None], default: str) -> str:
    counts: dict[str, int] = {}
    for v in values:
        if v:
            counts[v] = counts.get(v, 0) + 1
    return max(counts, key=lambda k: counts[k]) if counts else default


# --------------------------------------------------------------------------------------------------
# Tree linearisation (Claude Code parentUuid chains, pi id/parentId trees)


@dataclass
class Branch:
    """An abandoned branch: its lines, and the node on the active path it forked from."""

    fork: str | None
    nodes: list[str]


def reparent_missing(order: list[str], parent: dict[str, str | None]) -> dict[str, str | None]:
    """Quirk (records missing from a capture, or skipped as unreadable): a node whose parent is
    not in the log hangs off the node before it in file order, instead of starting a new tree."""
    known = set(order)
    out = dict(parent)
    previous: str | None = None
    for n in order:
        p = out.get(n)
        if p is not None and p not in known:
            out[n] = previous
        previous = n
    return out


def linearise(
    order: list[str],
    parent: dict[str, str | None],
    is_attached: Callable[[str, str | None], bool],
    leaf: str | None,
) -> tuple[list[str], list[Branch]]:
    """Split a tree of nodes (given in file order) into the active path and abandoned branches.

    The active path is the ancestors of `leaf`, plus every node whose chain reaches the path
    through `is_attached` nodes only (parallel tool results, streamed blocks of one response,
    progress records: artifacts of how the log was written, not a new branch). Everything else is
    a branch (a rewind / edit / fork): its requests were billed, so adapters replay it as its own
    thread starting with a copy of the active path up to the fork.
    """
    known = set(order)
    parent = reparent_missing(order, parent)
    on_path: set[str] = set()
    node = leaf
    guard = 0
    while node is not None and node in known and node not in on_path and guard <= len(order):
        on_path.add(node)
        node = parent.get(node)
        guard += 1
    active = set(on_path)
    branch_of: dict[str, str] = {}
    branches: dict[str, Branch] = {}
    for n in order:
        if n in active or n in branch_of:
            continue
        # Walk up to the first active node or known branch member.
        chain = [n]
        p = parent.get(n)
        seen = {n}
        while p is not None and p in known and p not in active and p not in branch_of:
            if p in seen:
                break
            seen.add(p)
            chain.append(p)
            p = parent.get(p)
        if p is not None and p in branch_of:
            root = branch_of[p]
            for c in chain:
                branch_of[c] = root
            continue
        # chain[-1] is the node right below the fork point `p` (or a root when p is None).
        top = chain[-1]
        if all(is_attached(c, parent.get(c)) for c in chain):
            active.update(chain)
            continue
        # The first non-attached node from the top down starts the branch; attached ones above
        # it are artifacts of the active path.
        start = len(chain) - 1
        while start >= 0 and is_attached(chain[start], parent.get(chain[start])):
            active.add(chain[start])
            start -= 1
        root = chain[start]
        fork = parent.get(root) if root != top else p
        branches.setdefault(root, Branch(fork=fork if fork in active else None, nodes=[]))
        for c in chain[: start + 1]:
            branch_of[c] = root
    for n in order:
        if n in branch_of:
            branches[branch_of[n]].nodes.append(n)
    path = [n for n in order if n in active]
    return path, list(branches.values())


__all__ = [
    "MAIN_THREAD",
    "AssistantMessage",
    "Bad",
    "Branch",
    "Compaction",
    "Issues",
    "RequestMarker",
    "SessionBuilder",
    "SessionHeader",
    "TextBlock",
    "ThinkingBlock",
    "ThreadStart",
    "ToolCallBlock",
    "ToolResult",
    "Usage",
    "UserMessage",
    "anthropic_iterations_problem",
    "anthropic_split_problem",
    "anthropic_usage",
    "binary_placeholder",
    "clean",
    "clean_json",
    "cost_problem",
    "counts_problem",
    "dumps",
    "estimate_hidden_prefix",
    "failures_as_log_errors",
    "opt_str",
    "opt_ts",
    "rendered_prompt_tokens",
    "estimate_thinking",
    "waiting_calls",
    "get_dict",
    "get_int",
    "get_list",
    "get_str",
    "guarded",
    "iter_json_lines",
    "json_lines_holding",
    "linearise",
    "reparent_missing",
    "Residual",
    "prompt_residuals",
    "openai_usage",
    "opencode_usage",
    "parse_arguments",
    "parse_ts",
    "pi_usage",
    "provider_for",
    "read_bytes",
    "regular_files",
    "usage_is_empty",
]
