"""Model-free summaries for compaction strategies.

When the log holds the summary the agent really wrote, strategies reuse it. Otherwise this module
builds a deterministic, extractive stand-in of realistic size from the items being replaced:
the task (first user message), files read and written with their paths, the last test output,
error lines seen, the latest assistant reasoning. The summarizer call that would have produced it
is still costed by the engine, as its own request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from replay.strategies._view import AssistantItem, Item, SummaryItem, ToolResultItem, UserItem

STRUCTURED_INSTRUCTION = (
    "Your context is about to be replaced by a summary. Write a continuation summary for the "
    "agent that will take over, inside <summary></summary> tags, using exactly these five "
    "level-2 markdown sections in this order:\n"
    "## Task Overview: the user's request in one or two sentences.\n"
    "## Current State: every file created, changed or inspected, by full path; the state of "
    "the test suite; unfinished work.\n"
    "## Important Discoveries: facts learned, including attempts that failed and why.\n"
    "## Next Steps: the very next action to take.\n"
    "## Context to Preserve: user preferences, commitments and constraints.\n"
    "Cite exact file names and error messages. No filler, no conversational framing."
)

FREEFORM_INSTRUCTION = (
    "Your context is about to be replaced by a summary. Summarize the conversation so far so "
    "that you can continue the task from it alone: what was asked, what was done, what was "
    "learned, and what comes next. Be concise and specific."
)

_PATH_KEYS = ("path", "file_path", "filePath", "filename", "file", "target_file", "notebook_path")
_ERROR_LINE = re.compile(r"(error|fail|assert|expected|exception|not ok|✖)", re.IGNORECASE)


_OTHER_BREAKS = re.compile("[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
"""What `str.splitlines` cuts at besides a newline."""

_ASCII_ERROR_WORDS = ("error", "fail", "assert", "expected", "exception", "not ok")
"""`_ERROR_LINE`'s words that an ASCII text can hold (all but ✖)."""


def _error_finder(text: str) -> Callable[[int], int]:
    """`find(pos)`: where `_ERROR_LINE`'s first match at or after `pos` starts (-1: none).

    On an ASCII text (most tool outputs) the words are found in its lowercase copy with
    `str.find`, ~50× faster than the case-insensitive pattern; there, matching ignoring case
    is lowering ASCII letters (the pattern's other case twins, such as the Kelvin sign for
    `k`, are not ASCII)."""
    if not text.isascii():

        def search(pos: int) -> int:
            match = _ERROR_LINE.search(text, pos)
            return -1 if match is None else match.start()

        return search
    lower = text.lower()
    ahead = {word: lower.find(word) for word in _ASCII_ERROR_WORDS}  # next of each, -1: none

    def find(pos: int) -> int:
        first = -1
        for word, at in ahead.items():
            if 0 <= at < pos:
                at = ahead[word] = lower.find(word, pos)
            if at >= 0 and (first < 0 or at < first):
                first = at
        return first

    return find


def _error_lines(text: str, room: int) -> list[str]:
    """The first `room` lines of `text.splitlines()` that `_ERROR_LINE` matches, in order.

    Found from the pattern's matches rather than by searching every line: splitting a long
    output into lines and searching each was most of the time of the extractive summaries.
    The pattern never spans a line break (literal words), so each match lies within one line;
    the line is what lies between the newlines around it, cut again where that stretch holds
    another break `splitlines` knows (`\r` before a newline among them)."""
    found: list[str] = []
    find = _error_finder(text)
    pos = 0
    while len(found) < room:
        start = find(pos)
        if start < 0:
            break
        low = text.rfind("\n", 0, start) + 1
        high = text.find("\n", start)
        if high < 0:
            high = len(text)
        if _OTHER_BREAKS.search(text, low, high) is None:
            found.append(text[low:high])
            pos = high
            continue
        for piece in text[low:high].splitlines(keepends=True):  # (none holds a newline)
            if start < low + len(piece):
                found.append(piece.splitlines()[0])
                pos = low + len(piece)
                break
            low += len(piece)
    return found


def _path_of(arguments: object) -> str | None:
    if isinstance(arguments, dict):
        for key in _PATH_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                return value
    return None


_PATCH_FILE = re.compile(
    r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (.+?)[ \t]*$", re.MULTILINE
)
"""A file header of Codex's patch format (`*** Update File: src/app.py`, …)."""


def _patched_paths(arguments: object) -> list[str]:
    """The files a Codex patch changes: `apply_patch` takes no path argument, its paths are
    headers inside the patch text (the freeform tool's `input`, or the argv / command line of
    a shell call running `apply_patch`)."""
    if not isinstance(arguments, dict):
        return []
    text = arguments["input"] if "input" in arguments else _shell_command(arguments, "\n")
    if not isinstance(text, str) or "*** Begin Patch" not in text:
        return []
    return _PATCH_FILE.findall(text)


_TEST_COMMAND = re.compile(
    r"\b(py\.?test|unittest|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest"
    r"|(npm|pnpm|yarn|bun)( run)? test|(go|cargo|dotnet|mvn|gradle|make|deno|mix|swift) test)\b"
)
"""A shell command that runs a test suite (a test runner, or a build tool's `test` task)."""


def _runs_tests(arguments: object) -> bool:
    """Whether a shell tool's call runs tests: real harnesses run them through their shell
    (Claude Code's `Bash`, pi's `bash`: `command`; Codex's `exec_command`: `cmd`; its older
    `shell`: `command` as an argv list), not through a tool named for them."""
    if not isinstance(arguments, dict):
        return False
    command = _shell_command(arguments)
    return isinstance(command, str) and _TEST_COMMAND.search(command) is not None


def _shell_command(arguments: dict[str, object], sep: str = " ") -> object:
    """What a shell call runs: its `command` (an argv list joined by `sep`), else Codex's
    `cmd`."""
    command = arguments.get("command", arguments.get("cmd"))
    return sep.join(str(part) for part in command) if isinstance(command, list) else command


def _first_sentences(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _facts(items: Sequence[Item]) -> dict[str, list[str]]:
    task = next((i.text for i in items if isinstance(i, UserItem) and not i.injected), "")
    previous = [i.text for i in items if isinstance(i, SummaryItem)]
    read, written, errors, tests, reasoning, constraints = [], [], [], [], [], []
    calls: dict[str, tuple[str, object]] = {}
    for item in items:
        if isinstance(item, AssistantItem):
            for block in item.blocks:
                if block.type == "tool_call" and block.call_id:
                    calls[block.call_id] = (block.name or "", block.arguments)
                elif block.type == "text" and block.text.strip():
                    reasoning.append(_first_sentences(block.text, 300))
        elif isinstance(item, ToolResultItem):
            name, args = calls.get(item.call_id, (item.tool_name, item.arguments))
            name = name.lower()  # Claude Code's `Edit`, `Write` as pi's `edit`, `write`
            path = _path_of(args)
            viewed = isinstance(args, dict) and args.get("command") == "view"  # an editor's
            if path and ("write" in name or "edit" in name or "patch" in name) and not viewed:
                written.append(path)
            elif path:
                read.append(path)
            written.extend(_patched_paths(args))
            if "test" in name or _runs_tests(args):
                tests = [ln for ln in item.output.splitlines() if ln.strip()][-12:]
            if len(errors) < 12:
                lines = _error_lines(item.output, 12 - len(errors))
                errors.extend(_first_sentences(line, 200) for line in lines)
        elif isinstance(item, UserItem) and item.text != task and not item.injected:
            constraints.append(_first_sentences(item.text, 300))
    dedup = lambda xs: list(dict.fromkeys(xs))  # noqa: E731
    return {
        "task": [_first_sentences(task, 600)] if task else [],
        "previous": [_first_sentences(p, 1500) for p in previous[-1:]],
        "read": dedup(read),
        "written": dedup(written),
        "errors": dedup(errors),
        "tests": tests,
        "reasoning": reasoning[-3:],
        "constraints": constraints[-5:],
    }


def structured_summary(items: Sequence[Item]) -> str:
    """A five-section summary (Task Overview … Context to Preserve) extracted from `items`."""
    f = _facts(items)
    bullets = lambda xs, none: "\n".join(f"- {x}" for x in xs) if xs else f"- {none}"  # noqa: E731
    state = [f"read: {p}" for p in f["read"]] + [f"modified: {p}" for p in f["written"]]
    if f["tests"]:
        state.append("last test run:\n```\n" + "\n".join(f["tests"]) + "\n```")
    discoveries = f["previous"] + f["errors"]
    parts = [
        "<summary>",
        "## Task Overview",
        f["task"][0] if f["task"] else "(no user request in the summarized part)",
        "## Current State",
        bullets(state, "no files touched yet"),
        "## Important Discoveries",
        bullets(discoveries, "nothing notable yet"),
        "## Next Steps",
        f["reasoning"][-1] if f["reasoning"] else "Continue the task.",
        "## Context to Preserve",
        bullets(f["constraints"], "no extra constraints stated"),
        "</summary>",
    ]
    return "\n".join(parts)


def freeform_summary(items: Sequence[Item]) -> str:
    """A prose summary with the same facts as `structured_summary`, without the sections."""
    f = _facts(items)
    sentences = []
    if f["task"]:
        sentences.append(f"The user asked: {f['task'][0]}")
    if f["previous"]:
        sentences.append(f"Earlier summary: {f['previous'][0]}")
    if f["read"]:
        sentences.append("Files read: " + ", ".join(f["read"]) + ".")
    if f["written"]:
        sentences.append("Files modified: " + ", ".join(f["written"]) + ".")
    if f["errors"]:
        sentences.append("Errors seen: " + " | ".join(f["errors"][:6]))
    if f["tests"]:
        sentences.append("Last test output: " + " / ".join(f["tests"][-4:]))
    if f["reasoning"]:
        sentences.append("Latest reasoning: " + " ".join(f["reasoning"]))
    return "\n".join(sentences) or "(nothing to summarize)"


def summary_message(summary: str) -> str:
    """How a summary is shown to the model in place of the history it replaced."""
    return (
        "The conversation so far was compacted to save context. Summary of everything "
        "before this point:\n\n" + summary
    )


def describe_arguments(arguments: object) -> str:
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)[:200]
