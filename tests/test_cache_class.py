"""Every registered strategy keeps the cache class it declares, judged from its emitted views.

Hypothesis generates varied sessions (several prompts, many tools, parallel calls, tiny to huge
outputs, thinking blocks, long idle gaps, logged compactions). Each one is replayed through the
engine under every canonical strategy name, with a small context window and scaled-down
thresholds so that every trigger can fire on a history of a few dozen requests. From the
records alone:

- every request is non-empty and keeps each tool call with its result (or drops both);
- `append-only`: no request ever rewrites a position an earlier request sent;
- `freeze-once`: a request rewrites earlier positions only when it carries rewrite events,
  and is append-only otherwise; on a long session, a rewrite at or before the previous one
  (outside a compaction) is rare, not on most requests as a sliding window's;
- `churn` / `churn-tail`: on a long tool-heavy session they do rewrite, on a large share of
  requests; `churn-tail` rewrites in the second half of the previous prompt.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.engine import ReplayConfig, replay_session
from replay.log import (
    AssistantMessage,
    Compaction,
    RequestMarker,
    SessionHeader,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolDef,
    ToolResult,
    UserMessage,
)
from replay.log._io import Session
from replay.strategies import canonical_names, parse_name
from replay.strategies._view import AssistantItem, SummaryItem, ToolResultItem

WINDOW = 16_000
"""Context window every strategy sees here (patched into the engine)."""

SCALED = {
    # absolute thresholds, scaled to a 16k window so they fire on small histories
    "opencode-prune": {"protect": 2000, "minimum": 1000},
    "opencode-compact-v1": {"output_max": 2000},
    "opencode-compact-tail": {"output_max": 2000, "reserved": 2000},
    "pi-compact": {"reserve": 4096, "keep": 3000},
    "claudecode-autocompact": {"buffer": 1000, "max_output": 2000},
    "anthropic-clear-tool-uses": {"trigger": 3000},
    "anthropic-compact": {"trigger": 8000},
    "aider-summarize": {"max_tokens": 2000},
    "roo-truncate": {"max_tokens": 2000},
    "roo-condense": {"max_tokens": 2000},
    "gemini-compress": {"tool_budget": 2000},
    "gemini-mask-tool-out": {"protect": 2000, "minimum": 1000},
    "goose-tool-pair-summarize": {"cutoff": 4, "batch": 2},
    # OpenHands counts events: a step of two calls is four (`_openhands.py`).
    "observation-mask": {"window": 6},
    "openhands-recent": {"max_events": 10},
    "openhands-amortized": {"max_size": 20},
    "openhands-llm-summary": {"max_size": 20, "keep_first": 2},
    "openhands-llm-attention": {"max_size": 20},
    "openclaw-prune-cache-ttl": {"min_prunable": 5000},
    "prune": {"chars": 8000},
}

NAMES = [n for n in canonical_names()]

MODEL = {"openclaw-prune-cache-ttl": ("anthropic", "claude-sonnet-4-5")}
"""(provider, model) of a family that only acts on some models; the rest replay on gpt-5."""

PATHS = ["src/api.ts", "src/storage.ts", "src/serializer.ts", "test/tasklist.test.ts", "README.md"]
TOOLS = ["read_file", "write_file", "list_files", "run_tests", "bash", "grep", "browse", "skill"]
SIZES = [20, 300, 2500, 12_000, 40_000]
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@functools.lru_cache(maxsize=512)
def text_of(kind: str, size: int, seed: int) -> str:
    """Deterministic, code-like text of about `size` characters."""
    rng = random.Random(f"{kind}:{size}:{seed}")
    words = [
        "task",
        "store",
        "complete",
        "payload",
        "id",
        "Number",
        "assert",
        "equal",
        "error",
        "expected",
        "received",
        "function",
        "return",
        "const",
        "await",
        "json",
    ]
    lines, total = [], 0
    while total < size:
        line = f"{kind}:{len(lines)}: " + " ".join(
            rng.choice(words) for _ in range(rng.randint(3, 12))
        )
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)[:size]


def _call(tool: str, n: int, seed: int, size: int) -> tuple[ToolCallBlock, str]:
    path = PATHS[seed % len(PATHS)]
    args: dict = {
        "read_file": {"path": path},
        "write_file": {"path": path, "content": text_of("write", min(size, 3000), seed)},
        "list_files": {"path": "."},
        "run_tests": {},
        "bash": {"command": f"cat {path} | wc -l"},
        "grep": {"pattern": "complete", "path": "src"},
        "browse": {"url": f"https://example.test/page/{seed}"},
        "skill": {"name": "debugging"},
    }[tool]
    output = {
        "read_file": text_of(path, size, seed % 3),  # few versions: re-reads often repeat
        "write_file": f"wrote {path}",
    }.get(tool) or text_of(tool, size, seed)
    return ToolCallBlock(id=f"call_{n}", name=tool, arguments=args), output


@st.composite
def sessions(draw, max_steps: int = 8) -> Session:
    events: list = []
    ts = T0
    n_call = n_req = 0
    for turn in range(draw(st.integers(1, 4))):
        events.append(
            UserMessage(ts=ts, text=f"Turn {turn}: fix the bug in complete(); run the full suite.")
        )
        steps = draw(st.integers(1, max_steps))
        for step in range(steps):
            n_req += 1
            rid = f"req_{n_req}"
            events.append(RequestMarker(ts=ts, request_id=rid))
            blocks: list = []
            if draw(st.booleans()):
                blocks.append(
                    ThinkingBlock(
                        thinking=text_of("thought", draw(st.sampled_from([40, 400])), n_req)
                    )
                )
            last = step == steps - 1
            if last or draw(st.booleans()):
                blocks.append(TextBlock(text=f"Step {step}: looking at the code."))
            results = []
            if not last:
                for tool in draw(st.lists(st.sampled_from(TOOLS), min_size=1, max_size=3)):
                    n_call += 1
                    size = draw(st.sampled_from(SIZES))
                    call, output = _call(tool, n_call, draw(st.integers(0, 50)), size)
                    blocks.append(call)
                    results.append(
                        ToolResult(
                            ts=ts,
                            call_id=call.id,
                            tool_name=tool,
                            output=output,
                            is_error=draw(st.integers(0, 9)) == 0,
                        )
                    )
            events.append(AssistantMessage(ts=ts, blocks=blocks, request_id=rid))
            events.extend(results)
            if draw(st.integers(0, 12)) == 0:
                events.append(Compaction(ts=ts, summary=text_of("summary", 1200, n_req)))
            ts += timedelta(seconds=draw(st.sampled_from([3, 20, 90, 400, 4000])))
    return _session("gen", events, [ToolDef(name=t, description=f"{t} tool") for t in TOOLS])


def _session(session_id: str, events: list, tools: list[ToolDef] | None = None) -> Session:
    header = SessionHeader(
        ts=T0,
        session_id=session_id,
        agent="test",
        provider="openai",
        model="gpt-5",
        system="You are a coding agent.",
        tools=tools if tools is not None else [ToolDef(name=t) for t in TOOLS],
    )
    return Session(header=header, events=events)


def _respond(events: list, ts: datetime, rid: str, blocks: list, tools: list[str], *,
             number: int, seed: int, size: int) -> None:
    """Append a response of `blocks` and one call of each of `tools` (the k-th numbered
    `number + k`, its output of `size` characters drawn from `seed + k`), then the results."""
    results = []
    for k, tool in enumerate(tools):
        call, output = _call(tool, number + k, seed + k, size)
        blocks.append(call)
        results.append(ToolResult(ts=ts, call_id=call.id, tool_name=tool, output=output))
    events.append(AssistantMessage(ts=ts, blocks=blocks, request_id=rid))
    events.extend(results)


def long_session() -> Session:
    """One prompt, then a long tool loop: browsing, thinking and results on every step."""
    events: list = [UserMessage(ts=T0, text="Find why complete() fails and fix it.")]
    ts = T0
    for step in range(40):
        rid = f"req_{step}"
        events.append(RequestMarker(ts=ts, request_id=rid))
        tools = ["browse", "read_file"] if step % 2 else ["run_tests", "grep"]
        blocks: list = [ThinkingBlock(thinking=text_of("thought", 300, step))]
        _respond(events, ts, rid, blocks, tools, number=step * 10, seed=step, size=2500)
        ts += timedelta(seconds=30)
    events.append(RequestMarker(ts=ts, request_id="req_last"))
    return _session("long", events)


def many_turns_session() -> Session:
    """Six prompts of a few steps each (thinking on the first), with idle gaps (10 minutes,
    then two hours)."""
    events: list = []
    ts = T0
    n = 0
    for turn in range(6):
        events.append(UserMessage(ts=ts, text=f"Prompt {turn}: continue, and run the full suite."))
        for step, tools in enumerate(
            [["read_file", "list_files"], ["write_file", "run_tests"], ["bash"], []]
        ):
            n += 1
            rid = f"req_{n}"
            events.append(RequestMarker(ts=ts, request_id=rid))
            blocks: list = [TextBlock(text=f"turn {turn} step {step}")]
            if step == 0:  # thinking that clearing it at the next prompt rewrites
                blocks.insert(0, ThinkingBlock(thinking=text_of("plan", 200, n)))
            _respond(events, ts, rid, blocks, tools, number=n * 10, seed=turn, size=3000)
            ts += timedelta(seconds=20)
        ts += timedelta(hours=2) if turn == 3 else timedelta(minutes=10)
    return _session("turns", events)


@contextmanager
def small_window() -> Iterator[None]:
    with mock.patch("replay.engine._replay.context_window", lambda model: WINDOW):
        yield


def scaled(name: str):
    spec = parse_name(name).spec
    return parse_name(name, {spec.family: SCALED.get(spec.family, {})})


def run(session: Session, name: str) -> tuple[str, list]:
    built = scaled(name)
    provider, model = MODEL.get(built.spec.family, ("openai", "gpt-5"))
    with small_window():
        records = replay_session(
            session, [built], ReplayConfig(provider=provider, model=model, keep_views=True)
        )
    return built.spec.cache_class, [r for r in records if r.kind == "request"]


def check_pairs(view: list, where: str) -> None:
    assert view, f"{where}: empty request"
    calls = [b.call_id for i in view if isinstance(i, AssistantItem) for b in i.tool_calls]
    results = [i.call_id for i in view if isinstance(i, ToolResultItem)]
    assert len(set(results)) == len(results), f"{where}: a result sent twice"
    assert set(results) <= set(calls), (
        f"{where}: result without its call {set(results) - set(calls)}"
    )
    assert set(calls) <= set(results), (
        f"{where}: call without its result {set(calls) - set(results)}"
    )


def check_declared_class(name: str, cache_class: str, records: list) -> None:
    for r in records:
        where = f"{name} @ {r.request_id}"
        check_pairs(r.view, where)
        if cache_class == "append-only":
            assert not r.diff.is_break, f"{where}: append-only strategy rewrote {r.diff.where}"
        elif cache_class == "freeze-once":
            assert not r.diff.is_break or r.events, (
                f"{where}: freeze-once strategy rewrote {r.diff.where} without a rewrite event"
            )


@pytest.mark.parametrize("name", NAMES)
@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(session=sessions())
def test_declared_cache_class_holds_on_generated_sessions(name: str, session: Session) -> None:
    cache_class, records = run(session, name)
    check_declared_class(name, cache_class, records)


@pytest.fixture(scope="module")
def long_runs() -> dict[str, tuple[str, list]]:
    session = long_session()
    return {name: run(session, name) for name in NAMES}


@pytest.fixture(scope="module")
def turn_runs() -> dict[str, tuple[str, list]]:
    session = many_turns_session()
    return {name: run(session, name) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_long_session_keeps_the_declared_class(name: str, long_runs) -> None:
    cache_class, records = long_runs[name]
    check_declared_class(name, cache_class, records)
    breaks = [r for r in records if r.diff.is_break]
    if cache_class in ("churn", "churn-tail"):
        assert len(breaks) >= len(records) // 4, (
            f"{name}: declared {cache_class} but rewrote only {len(breaks)} of "
            f"{len(records)} requests"
        )
    if cache_class == "freeze-once":
        # What a rewrite leaves stays: a break at or before the previous break (outside a
        # compaction, which starts a new frozen head) is an overflow's drop now and then, not
        # on most requests (a sliding window does it on nearly every one: churn).
        back = 0
        last = None
        for r in breaks:
            at = r.diff.first_mismatch_token
            if last is not None and at <= last and all(e.kind != "compaction" for e in r.events):
                back += 1
            last = at
        assert back < len(records) // 2, (
            f"{name}: declared freeze-once but rewrote at or before its previous rewrite on "
            f"{back} of {len(records)} requests"
        )
    if cache_class == "churn-tail":
        previous = {r.request_index: r for r in records}
        shares = sorted(
            r.diff.first_mismatch_token / previous[r.request_index - 1].request.total
            for r in breaks
            if r.request_index - 1 in previous
        )
        assert shares[len(shares) // 2] >= 0.5, f"{name}: rewrites are not near the tail: {shares}"


@pytest.mark.parametrize("name", NAMES)
def test_multi_prompt_session_keeps_the_declared_class(name: str, turn_runs) -> None:
    cache_class, records = turn_runs[name]
    check_declared_class(name, cache_class, records)


def test_every_rewriting_family_fires_on_the_fixed_sessions(long_runs, turn_runs) -> None:
    """Each family that may rewrite does rewrite on one of the two fixed sessions, so the class
    checks above are not vacuous."""
    classes = {cls for cls, _ in long_runs.values()}
    assert classes == {"append-only", "freeze-once", "churn", "churn-tail"}
    silent = [
        name
        for name in NAMES
        if long_runs[name][0] != "append-only"
        and not any(r.diff.is_break for runs in (long_runs, turn_runs) for r in runs[name][1])
    ]
    assert silent == ["recorded"]  # the sessions log no compaction to replay


def test_every_summary_names_the_log_events_it_stands_for(long_runs, turn_runs) -> None:
    """A summary's `replaces` names log events (what break-even and whatif key summaries on,
    what the report counts): each once, never -1 for an earlier summary it folded (that one's
    events instead)."""
    checked = 0
    for runs in (long_runs, turn_runs):
        for name, (_, records) in runs.items():
            for r in records:
                for s in (i for i in r.view if isinstance(i, SummaryItem)):
                    where = f"{name} @ {r.request_id}: {s.replaces}"
                    assert min(s.replaces, default=0) >= 0, where
                    assert len(set(s.replaces)) == len(s.replaces), where
                    checked += 1
    assert checked
