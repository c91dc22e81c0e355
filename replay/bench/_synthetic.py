"""A seeded synthetic agent run: a long, realistic `replay-log` session for benchmarks.

`synthetic_session(requests, seed)` plays a scripted coding agent working on a made-up Python
project: a session header (system prompt, five tool definitions), the user's task, then per
request a `request` marker, an assistant message (a sentence or two of text and 1–3 tool calls,
sometimes in parallel) and the tool results. Sizes follow what real runs show:

- `read_file`: the file's content, ~2.3k characters median with a long tail to 50k; files are read
  again later (a new version after a `write_file`; a file unchanged since the agent last saw it
  is mostly read again as a range of lines, `offset`/`limit`, so that only a few percent of the
  output characters repeat an earlier output word for word, as in real logs);
- `grep`: a few matching lines (~0.5k), occasionally hundreds (tens of thousands of characters);
- `run_tests`: a pytest report (~1.3k), occasionally a verbose failure dump (20–40k);
- `list_files`: a directory listing (~0.5k);
- `write_file`: the whole new file in the call's arguments, a one-line acknowledgement back;
- now and then the user follows up; timestamps advance with model and tool latencies and
  occasional idle gaps longer than five minutes (the user walked away: the cache expires).

Everything is drawn from one `random.Random(seed)` in request order and nothing depends on the
requested length, so the first N requests of a longer session are the N-request session.

With `max_context_tokens`, the recorded agent compacts like Claude Code does: when its own
context (estimated at 3.5 characters per token plus message framing) would pass the limit, a
`compaction` event with a summary replaces everything before it, and the estimate restarts from
the summary. Strategies that reuse logged summaries (`compact-at-*`) then use it; the baseline
still replays the full history, as it always does.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from replay.log import (
    AssistantMessage,
    Compaction,
    RequestMarker,
    Session,
    SessionHeader,
    TextBlock,
    ToolCallBlock,
    ToolDef,
    ToolResult,
    UserMessage,
    write_log,
)

START = datetime(2026, 11, 2, 9, 0, 0, tzinfo=UTC)
CHARS_PER_TOKEN = 3.5
"""Used only for the recorded agent's own context estimate (compaction trigger)."""

SYSTEM_PROMPT = """You are a software engineering agent working in a checked-out Python repository.
You can read files, search the code, list directories, write files and run the test suite with the
tools provided. You cannot run arbitrary shell commands or reach the network.

How to work:
- Get your bearings first: list the project and read the code relevant to the task before you
  change anything. Search with `grep` rather than reading whole directories.
- When tests fail, read the failure output carefully and find the root cause. Do not change a test
  to make it pass unless the test itself is wrong, and say so when you do.
- Prefer the smallest change that fixes the cause, where the wrong value enters the system. Keep
  the existing style, naming and structure of the code; do not reformat unrelated lines.
- `write_file` replaces the whole file: always write the complete new content, based on the latest
  version you have read. Never leave placeholders such as "rest of file unchanged".
- After each change, run the relevant tests, then the whole suite before you finish.
- Paths are relative to the repository root. Keep answers short: the user reads the diff.

When you are done, reply with a short summary of the cause, the change you made and the final
state of the test suite."""

TOOLS = [
    ToolDef(
        name="read_file",
        description=(
            "Read a file of the repository and return its content: the whole file, or `limit` "
            "lines from line `offset`."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the repository root."},
                "offset": {"type": "integer", "description": "First line to read (1-based)."},
                "limit": {"type": "integer", "description": "Number of lines to read."},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    ),
    ToolDef(
        name="grep",
        description=(
            "Search the repository for a regular expression. Returns matching lines as "
            "`path:line: text`, at most 500 matches."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Python regular expression."},
                "path": {
                    "type": "string",
                    "description": "Directory or file to search (default: the whole repository).",
                },
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
    ),
    ToolDef(
        name="list_files",
        description="List the files and directories under a path (not recursive).",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Directory to list."}},
            "required": ["path"],
            "additionalProperties": False,
        },
    ),
    ToolDef(
        name="write_file",
        description="Create or replace a file with the given content (the whole file).",
        input_schema={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the repository root."},
                "content": {"type": "string", "description": "The complete new file content."},
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        },
    ),
    ToolDef(
        name="run_tests",
        description=(
            "Run the test suite with pytest and return its report. Optionally restrict it to a "
            "file or a test id."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "target": {"type": "string", "description": "Test file or node id (optional)."}
            },
            "additionalProperties": False,
        },
    ),
]

_WORDS = [
    "account",
    "address",
    "amount",
    "archive",
    "batch",
    "buffer",
    "cache",
    "cart",
    "catalog",
    "channel",
    "client",
    "config",
    "connection",
    "context",
    "counter",
    "cursor",
    "customer",
    "data",
    "date",
    "delivery",
    "device",
    "discount",
    "document",
    "draft",
    "entry",
    "event",
    "export",
    "feature",
    "field",
    "filter",
    "format",
    "gateway",
    "handler",
    "header",
    "history",
    "identity",
    "index",
    "inventory",
    "invoice",
    "item",
    "job",
    "key",
    "ledger",
    "limit",
    "line",
    "listing",
    "locale",
    "lock",
    "log",
    "manager",
    "message",
    "metric",
    "model",
    "node",
    "notice",
    "offset",
    "order",
    "owner",
    "package",
    "page",
    "parser",
    "payload",
    "payment",
    "period",
    "plan",
    "policy",
    "pool",
    "price",
    "product",
    "profile",
    "queue",
    "quota",
    "rate",
    "record",
    "region",
    "registry",
    "report",
    "request",
    "resource",
    "response",
    "result",
    "retry",
    "revision",
    "role",
    "route",
    "rule",
    "schedule",
    "schema",
    "scope",
    "session",
    "setting",
    "shipment",
    "signal",
    "snapshot",
    "source",
    "state",
    "status",
    "stock",
    "store",
    "stream",
    "subscription",
    "summary",
    "supplier",
    "table",
    "task",
    "tax",
    "tenant",
    "ticket",
    "token",
    "total",
    "trace",
    "transaction",
    "transfer",
    "unit",
    "user",
    "value",
    "vendor",
    "version",
    "warehouse",
    "window",
    "worker",
]
_VERBS = [
    "apply",
    "build",
    "check",
    "collect",
    "compute",
    "convert",
    "create",
    "decode",
    "delete",
    "dispatch",
    "encode",
    "ensure",
    "fetch",
    "find",
    "flush",
    "format",
    "get",
    "handle",
    "load",
    "lookup",
    "merge",
    "normalize",
    "parse",
    "process",
    "publish",
    "read",
    "refresh",
    "register",
    "remove",
    "render",
    "reset",
    "resolve",
    "save",
    "schedule",
    "serialize",
    "split",
    "store",
    "sync",
    "update",
    "validate",
    "write",
]
_TYPES = ("int", "str", "bool", "float", "dict[str, Any]", "list[str]", "Decimal", "datetime")
_EXC = ("ValueError", "KeyError", "TypeError", "LookupError", "RuntimeError")
_PROSE = (
    "the value is normalized before it is stored",
    "callers rely on the order of the returned records",
    "this keeps the cache consistent with the database",
    "an empty result means nothing matched the filter",
    "the timestamp is always stored in UTC",
    "amounts are kept in minor units to avoid rounding",
    "retries are bounded so a dead backend cannot block the queue",
    "the lock is released even when the callback raises",
    "ids arrive as strings from the HTTP layer",
    "the parser accepts both the legacy and the current format",
)


def _snake(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(_WORDS) for _ in range(parts))


def _camel(rng: random.Random) -> str:
    return rng.choice(_WORDS).capitalize() + rng.choice(_WORDS).capitalize()


def _code_line(rng: random.Random) -> str:
    r = rng.random()
    var, other = _snake(rng, 1), _snake(rng, 2)
    if r < 0.2:
        return f"        {var} = self.{rng.choice(_VERBS)}_{other}({_snake(rng, 1)}, {var})"
    if r < 0.32:
        return f"        if {var} is None or not {var}.{other}:"
    if r < 0.42:
        return f'            raise {rng.choice(_EXC)}(f"invalid {var}: {{{var}!r}}")'
    if r < 0.52:
        return f'        return {{"{var}": {var}, "{other}": self.{other}}}'
    if r < 0.62:
        return f"        # {rng.choice(_PROSE)}"
    if r < 0.72:
        return f"        for {var} in self.{other}.values():"
    if r < 0.8:
        return f"            {var}.{other} = {rng.choice(_VERBS)}_{_snake(rng, 1)}({var})"
    if r < 0.88:
        return f"        total += {var}.{other} * {rng.randint(2, 1000)}"
    if r < 0.94:
        return f'        logger.debug("{rng.choice(_VERBS)} %s", {var})'
    return ""


def _def_line(rng: random.Random) -> list[str]:
    name = f"{rng.choice(_VERBS)}_{_snake(rng, 1)}"
    args = ", ".join(f"{_snake(rng, 1)}: {rng.choice(_TYPES)}" for _ in range(rng.randint(0, 3)))
    sig = f"    def {name}(self{', ' if args else ''}{args}) -> {rng.choice(_TYPES)}:"
    return ["", sig, f'        """{rng.choice(_PROSE).capitalize()}."""']


def _python_file(rng: random.Random, module: str, chars: int) -> str:
    lines = [
        f'"""{module}: {rng.choice(_PROSE)}."""',
        "",
        "from __future__ import annotations",
        "",
        "import logging",
        "from decimal import Decimal",
        "from typing import Any",
        "",
        f"from app.{_snake(rng, 1)} import {_camel(rng)}, {_camel(rng)}",
        "",
        "logger = logging.getLogger(__name__)",
        "",
        "",
        f"class {_camel(rng)}:",
        f'    """{rng.choice(_PROSE).capitalize()}."""',
    ]
    size = sum(len(x) + 1 for x in lines)
    while size < chars:
        block = _def_line(rng) if rng.random() < 0.12 else [_code_line(rng)]
        if rng.random() < 0.01:
            block = ["", "", f"class {_camel(rng)}:", f'    """{rng.choice(_PROSE)}."""']
        lines.extend(block)
        size += sum(len(x) + 1 for x in block)
    return "\n".join(lines) + "\n"


def _lognormal(rng: random.Random, median: float, sigma: float, lo: float, hi: float) -> int:
    return int(min(hi, max(lo, median * math.exp(rng.gauss(0.0, sigma)))))


@dataclass
class _File:
    path: str
    chars: int
    content: str | None = None
    version: int = 0
    seen_version: int | None = None
    """The version the agent last read or wrote (None: never seen)."""


@dataclass
class _Project:
    rng: random.Random
    scale: float
    files: list[_File] = field(default_factory=list)
    dirs: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def make(cls, rng: random.Random, scale: float) -> _Project:
        project = cls(rng, scale)
        packages = rng.sample(_WORDS, 6)
        for pkg in packages:
            for _ in range(rng.randint(6, 14)):
                mod = _snake(rng, 1 + (rng.random() < 0.4))
                project._add(f"app/{pkg}/{mod}.py")
                if rng.random() < 0.7:
                    project._add(f"tests/{pkg}/test_{mod}.py")
        for extra in ("README.md", "pyproject.toml", "app/__init__.py", "tests/conftest.py"):
            project._add(extra)
        return project

    def _add(self, path: str) -> None:
        if any(f.path == path for f in self.files):
            return
        # Median ~2.4k characters (the real samples' first reads: medians 0.4k-8.6k, mostly
        # 1.5k-6k), long tail to 50k (a few generated or vendored modules).
        chars = _lognormal(self.rng, 2400 * self.scale, 0.8, 60, 50_000 * self.scale)
        if self.rng.random() < 0.01:
            chars = int(self.rng.uniform(20_000, 50_000) * self.scale)
        self.files.append(_File(path, max(60, chars)))
        parent, _, name = path.rpartition("/")
        self.dirs.setdefault(parent or ".", []).append(name)

    def content(self, f: _File) -> str:
        if f.content is None:
            f.content = _python_file(self.rng, f.path, f.chars)
        return f.content

    def edit(self, f: _File) -> str:
        """A new version of the file: a few lines changed, some added (what write_file sends)."""
        lines = self.content(f).split("\n")
        for _ in range(self.rng.randint(1, 6)):
            at = self.rng.randrange(len(lines))
            if self.rng.random() < 0.5:
                lines[at] = _code_line(self.rng)
            else:
                lines[at:at] = [_code_line(self.rng) for _ in range(self.rng.randint(1, 8))]
        f.content = "\n".join(lines)
        f.version += 1
        return f.content


class _Agent:
    """The scripted agent: picks tools, produces their outputs, keeps the clock."""

    def __init__(self, seed: int, scale: float) -> None:
        self.rng = random.Random(seed)
        self.scale = scale
        self.project = _Project.make(self.rng, scale)
        self.read: list[_File] = []
        self.failing = self.rng.sample(self.project.files, 3)
        self.run_count = 0

    # -- tool outputs -------------------------------------------------------------------------

    def pick_file(self) -> _File:
        rng = self.rng
        if self.read and rng.random() < 0.35:
            # Re-read something already seen, most often a recent one.
            return self.read[-1 - min(len(self.read) - 1, int(rng.expovariate(0.3)))]
        return rng.choice(self.project.files)

    def read_output(self, f: _File) -> tuple[dict, str]:
        """Arguments and output of a read of `f`. An agent that already saw the file's current
        version mostly reads only the part it needs again: real logs repeat an earlier output
        word for word for 0.1-14% of their output characters (docs/performance.md), and how
        much a log repeats itself changes what the replay holds in memory (`read_log` keeps
        equal texts once)."""
        rng = self.rng
        content = self.project.content(f)
        seen = f.seen_version == f.version
        f.seen_version = f.version
        lines = content.splitlines(keepends=True)
        if not seen or len(lines) < 12 or rng.random() < 0.1:
            return {"path": f.path}, content
        limit = rng.randint(20, 150)
        if limit < len(lines):
            offset = rng.randint(1, len(lines) - limit + 1)
        else:  # a short file: from some line to its end
            offset = rng.randint(2, len(lines) // 2)
        return {"path": f.path, "offset": offset, "limit": limit}, "".join(
            lines[offset - 1 : offset - 1 + limit]
        )

    def grep_output(self) -> tuple[dict, str]:
        rng = self.rng
        pattern = rng.choice([_snake(rng, 1), f"def {rng.choice(_VERBS)}_", _camel(rng)])
        matches = min(500, int(rng.expovariate(1 / 8)) + 1)
        if rng.random() < 0.02:
            matches = rng.randint(150, 500)  # a too-broad pattern
        matches = max(1, int(matches * min(1.0, self.scale * 2)))
        lines = []
        for _ in range(matches):
            f = rng.choice(self.project.files)
            lines.append(f"{f.path}:{rng.randint(1, 400)}:{_code_line(rng)}")
        args = {"pattern": pattern}
        if rng.random() < 0.4:
            args["path"] = rng.choice(list(self.project.dirs))
        return args, "\n".join(lines) if lines else "(no matches)"

    def ls_output(self) -> tuple[dict, str]:
        d = self.rng.choice(list(self.project.dirs))
        names = sorted(self.project.dirs[d])
        sub = sorted(
            {
                p.split("/")[len(d.split("/"))]
                for p in self.project.dirs
                if p.startswith(d + "/") and p != d
            }
        )
        rng = self.rng
        entries = [
            f"drwxr-xr-x  {rng.randint(2, 9)} dev dev     4096 Nov  2 08:{rng.randint(10, 59)} {n}/"
            for n in sub
        ]
        entries += [
            f"-rw-r--r--  1 dev dev {rng.randint(200, 60000):8d} "
            f"Nov  2 08:{rng.randint(10, 59)} {n}"
            for n in names
        ]
        return {"path": d}, f"total {len(entries) * 8}\n" + "\n".join(entries)

    def test_output(self) -> tuple[dict, str]:
        rng = self.rng
        self.run_count += 1
        args: dict = {}
        if rng.random() < 0.4:
            args["target"] = rng.choice(
                [f for f in self.project.files if f.path.startswith("tests/")] or self.project.files
            ).path
        collected = rng.randint(180, 260)
        failed = 0 if rng.random() < 0.35 else rng.randint(1, 4)
        out = [
            "============================= test session starts ==============================",
            "platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0",
            "rootdir: /workspace/repo",
            "configfile: pyproject.toml",
            f"collected {collected} items",
            "",
        ]
        for d in sorted(self.project.dirs)[:12]:
            if d.startswith("tests/"):
                dots = "".join(
                    "F" if rng.random() < 0.02 * failed else "." for _ in range(rng.randint(20, 60))
                )
                out.append(f"{d}/test_{_snake(rng, 1)}.py {dots} [{rng.randint(5, 99):3d}%]")
        verbose = rng.random() < 0.03
        if failed:
            out += [
                "",
                "=================================== FAILURES ===================================",
            ]
            for _ in range(failed):
                f = rng.choice(self.failing)
                name = f"test_{rng.choice(_VERBS)}_{_snake(rng, 1)}"
                out.append(f"______________________________ {name} ______________________________")
                frames = rng.randint(20, 40) if verbose else rng.randint(1, 3)
                for _ in range(frames):
                    out.append(
                        f"{f.path}:{rng.randint(10, 400)}: in {rng.choice(_VERBS)}_{_snake(rng, 1)}"
                    )
                    out.append(_code_line(rng))
                    if verbose:
                        out += [
                            f"    {_snake(rng, 1)} = {rng.randint(0, 99999)!r}"
                            for _ in range(rng.randint(5, 15))
                        ]
                out.append(
                    f"E       AssertionError: assert {rng.randint(0, 99)} == '{rng.randint(0, 99)}'"
                )
            out.append(
                "=========================== short test summary info ============================"
            )
            out += [
                f"FAILED {rng.choice(self.failing).path}::test_{_snake(rng, 1)}"
                for _ in range(failed)
            ]
        passed = collected - failed
        secs = rng.uniform(1.5, 30.0)
        summary = f"{failed} failed, {passed} passed" if failed else f"{passed} passed"
        out.append(f"======================== {summary} in {secs:.2f}s ========================")
        return args, "\n".join(out)

    def call(self, name: str) -> tuple[dict, str, float]:
        """(arguments, output, seconds the tool ran) for a call of `name`."""
        rng = self.rng
        if name == "read_file":
            f = self.pick_file()
            args, output = self.read_output(f)
            self.read.append(f)
            return args, output, rng.uniform(0.01, 0.1)
        if name == "write_file":
            f = (
                self.read[-1]
                if self.read and rng.random() < 0.8
                else rng.choice(self.project.files)
            )
            content = self.project.edit(f)
            f.seen_version = f.version
            self.read.append(f)
            return (
                {"path": f.path, "content": content},
                f"Wrote {len(content.encode())} bytes to {f.path}",
                rng.uniform(0.01, 0.05),
            )
        if name == "grep":
            args, out = self.grep_output()
            return args, out, rng.uniform(0.05, 0.8)
        if name == "list_files":
            args, out = self.ls_output()
            return args, out, rng.uniform(0.01, 0.05)
        args, out = self.test_output()
        return args, out, rng.uniform(2.0, 35.0)

    # -- text ---------------------------------------------------------------------------------

    def thought(self, calls: list[tuple[str, dict]]) -> str:
        rng = self.rng
        name, args = calls[0]
        target = args.get("path") or args.get("target") or args.get("pattern") or "the suite"
        openers = {
            "read_file": [
                f"Let me look at `{target}`.",
                f"I'll read `{target}` to see how it works.",
                f"Reading `{target}` again to check the current version.",
            ],
            "grep": [
                f"Searching for `{target}` to find where it is used.",
                f"Let me find the other call sites of `{target}`.",
            ],
            "list_files": [
                f"Let me list `{target}` to get my bearings.",
                f"Checking what else lives in `{target}`.",
            ],
            "write_file": [
                f"The cause is in `{target}`: {rng.choice(_PROSE)}. Writing the fix.",
                f"Updating `{target}` so that {rng.choice(_PROSE)}.",
            ],
            "run_tests": [
                "Running the tests to check the change.",
                f"Let me run `{target}` to confirm.",
                "Running the whole suite before going further.",
            ],
        }
        text = rng.choice(openers[name])
        if rng.random() < 0.4:
            text = f"The output shows that {rng.choice(_PROSE)}. " + text
        if len(calls) > 1:
            text += f" I'll also run {len(calls) - 1} more lookup(s) in parallel."
        return text


_TOOL_WEIGHTS = (
    ("read_file", 35),
    ("grep", 20),
    ("run_tests", 15),
    ("list_files", 10),
    ("write_file", 20),
)


def _choose_tools(rng: random.Random) -> list[str]:
    n = rng.choices((1, 2, 3), weights=(60, 25, 15))[0]
    names, weights = zip(*_TOOL_WEIGHTS, strict=True)
    picked = rng.choices(names, weights=weights, k=n)
    if n > 1:  # parallel calls are lookups; writes and test runs go alone
        picked = [p if p not in ("write_file", "run_tests") else "read_file" for p in picked]
    return picked


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


_FOLLOW_UPS = (
    "Also make sure the fix handles amounts that arrive as strings from the API.",
    "Please don't change the public function signatures, other services import them.",
    "While you're there, the `{}` module has the same pattern; check it too.",
    "Keep the change small, we want to backport it to the 2.x branch.",
    "The CI run on main is failing on `{}` as well, can you look at that after this?",
    "Can you add a regression test for this case?",
)


def synthetic_session(
    requests: int,
    seed: int = 0,
    *,
    max_context_tokens: int | None = None,
    provider: str = "anthropic",
    model: str = "claude-sonnet-4-5",
    size_scale: float = 1.0,
) -> Session:
    """A deterministic synthetic agent run of `requests` model calls (see the module docstring).

    `size_scale` multiplies the sizes of the files the agent reads and writes, and grep's
    matches by twice that factor up to 1 (1.0 = the realistic distributions above); test reports
    and directory listings keep their size.
    """
    if requests < 1:
        raise ValueError("requests must be at least 1")
    agent = _Agent(seed, size_scale)
    rng = agent.rng
    counter = 0

    def next_id() -> str:
        nonlocal counter
        counter += 1
        return f"e{counter:07d}"

    header = SessionHeader(
        ts=START,
        id=next_id(),
        session_id=f"synthetic-{seed}",
        agent="replay-synthetic",
        provider=provider,
        model=model,
        system=SYSTEM_PROMPT,
        tools=TOOLS,
        cwd="/workspace/repo",
    )
    failing = agent.failing[0].path
    task = (
        f"The nightly build fails: `{failing}` raises `AssertionError: assert 3 == '3'` when an "
        "order is replayed from the export queue. Find the cause and fix it without changing the "
        "tests, then make sure the whole suite passes. The service runs on Python 3.11; keep "
        "the existing style and don't add dependencies."
    )
    t = START + timedelta(seconds=2)
    events: list = [UserMessage(ts=t, id=next_id(), text=task)]
    visible: list[str] = [events[0].id]  # events the recorded agent's context holds
    context = _estimate(SYSTEM_PROMPT) + sum(_estimate(x.model_dump_json()) for x in TOOLS)
    base_context = context
    context += _estimate(task) + 4

    for n in range(requests):
        # What happens between the previous response's tool results and this request.
        if n and rng.random() < 0.015:
            t += timedelta(seconds=rng.uniform(330, 2400))  # the user stepped away
            if rng.random() < 0.6:
                text = rng.choice(_FOLLOW_UPS).format(rng.choice(agent.project.files).path)
                events.append(UserMessage(ts=t, id=next_id(), text=text))
                visible.append(events[-1].id)
                context += _estimate(text) + 4
        elif n and rng.random() < 0.008:
            text = rng.choice(_FOLLOW_UPS).format(rng.choice(agent.project.files).path)
            t += timedelta(seconds=rng.uniform(5, 60))
            events.append(UserMessage(ts=t, id=next_id(), text=text))
            visible.append(events[-1].id)
            context += _estimate(text) + 4
        if max_context_tokens is not None and context > max_context_tokens:
            summary = _compaction_summary(rng, agent, task)
            t += timedelta(seconds=rng.uniform(20, 60))  # the summarizer call
            events.append(
                Compaction(
                    ts=t,
                    id=next_id(),
                    summary=summary,
                    replaces=list(visible),
                    trigger="auto",
                    tokens_before=context,
                )
            )
            visible = []
            context = base_context + _estimate(summary) + 4

        request_id = f"req_{_hex(rng, 24)}"
        duration = _lognormal(rng, 6.0, 0.6, 1.0, 120.0)
        events.append(
            RequestMarker(
                ts=t, id=next_id(), request_id=request_id, duration_ms=int(duration * 1000)
            )
        )
        names = _choose_tools(rng)
        calls = [(name, *agent.call(name)) for name in names]
        blocks: list = [TextBlock(text=agent.thought([(c[0], c[1]) for c in calls]))]
        ids = [f"toolu_{_hex(rng, 20)}" for _ in calls]
        blocks += [
            ToolCallBlock(id=i, name=c[0], arguments=c[1]) for i, c in zip(ids, calls, strict=True)
        ]
        t += timedelta(seconds=duration)
        events.append(AssistantMessage(ts=t, id=next_id(), blocks=blocks, request_id=request_id))
        visible.append(events[-1].id)
        context += sum(_estimate(b.model_dump_json()) for b in blocks) + 4 + 12 * len(calls)
        # Parallel calls run together: results arrive after the slowest one.
        t += timedelta(seconds=max(c[3] for c in calls))
        for call_id, (name, _args, output, _secs) in zip(ids, calls, strict=True):
            events.append(
                ToolResult(
                    ts=t,
                    id=next_id(),
                    call_id=call_id,
                    tool_name=name,
                    output=output,
                    is_error=name == "run_tests" and " failed" in output[-80:],
                )
            )
            visible.append(events[-1].id)
            context += _estimate(output) + 4
        t += timedelta(seconds=rng.uniform(0.05, 0.4))
    return Session(header=header, events=events, path=None)


def _estimate(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1


def _compaction_summary(rng: random.Random, agent: _Agent, task: str) -> str:
    seen = list(dict.fromkeys(f.path for f in agent.read[-40:]))
    written = [f.path for f in agent.project.files if f.version][-15:]
    parts = [
        "<summary>",
        "## Task Overview",
        task,
        "## Current State",
        *[f"- read: {p}" for p in seen],
        *[f"- modified: {p}" for p in written],
        f"- test runs so far: {agent.run_count}",
        "## Important Discoveries",
        *[f"- {rng.choice(_PROSE)}" for _ in range(rng.randint(4, 9))],
        "## Next Steps",
        f"Re-run the suite and check `{rng.choice(agent.failing).path}`.",
        "## Context to Preserve",
        "- keep public signatures; no new dependencies",
        "</summary>",
    ]
    return "\n".join(parts)


def write_synthetic_log(
    path: str | Path,
    requests: int,
    seed: int = 0,
    *,
    max_context_tokens: int | None = None,
    provider: str = "anthropic",
    model: str = "claude-sonnet-4-5",
    size_scale: float = 1.0,
) -> Session:
    """Generate a synthetic session and write it as a `replay-log` JSONL file."""
    session = synthetic_session(
        requests,
        seed,
        max_context_tokens=max_context_tokens,
        provider=provider,
        model=model,
        size_scale=size_scale,
    )
    write_log(session, path)
    session.path = str(path)
    return session
