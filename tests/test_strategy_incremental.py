"""Strategies keep what they derive from the history across requests (the engine's history only
grows by appending), so that a request costs its new items rather than the whole history.

These check that keeping it changes nothing: an instance fed the growing history sends what a
fresh instance sends for the same history, a history that is not the one seen before grown
(another list) starts over, append-only strategies send the very same objects again, and
`retrieval` ranks steps as its rule says (shared words / sqrt(step words)).
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
from datetime import UTC, datetime

import gen
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.log import ToolDef
from replay.strategies import (
    AssistantItem,
    Block,
    StrategyContext,
    SummaryItem,
    ToolResultItem,
    UserItem,
    View,
    parse_name,
)
from replay.strategies._common import (
    AgingView,
    AnsweredIds,
    CharSums,
    Forgetting,
    Frozen,
    GrownView,
    HeadTokens,
    PairedView,
    ResultPositions,
    Seen,
    TokenSums,
    chars,
    framed_tokens,
    head_tokens,
    item_text,
    item_tokens,
    repair_pairs,
    request_tokens,
)

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
PATHS = ["src/app.py", "src/store.py", "tests/test_app.py", "README.md"]
WORDS = ["task", "store", "complete", "payload", "assert", "equal", "error", "return", "json"]

# Strategies whose view is a function of the history alone (no state that depends on which
# requests were made), with thresholds small enough to act on the histories below.
PURE = [
    "baseline",
    "truncate-200",
    "age-truncate-200-keep-2",
    "tool-aging-keep-2",
    "codex-tool-trunc-1k",
    "opencode-tool-trunc-20l-1kb",
    "observation-mask-keep-6",
    "observation-mask-keep-3-poll-2",
    "anthropic-clear-tool-uses-2k-keep-2",
    "anthropic-clear-thinking-keep-1",
    "openhands-browser-mask-1",
    "openhands-recent-keep-first-1-max-12",
    "retrieval-top-3",
    "sliding-6-pin-first",
]
APPEND_ONLY = ["baseline", "truncate-200", "codex-tool-trunc-1k", "opencode-tool-trunc-20l-1kb"]


def text(rng: random.Random, size: int) -> str:
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 10)))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)[:size]


def make_history(steps: int, seed: int) -> list:
    """A user prompt, then steps of an assistant message (thinking and text sometimes, 1-3 tool
    calls) and their results; more prompts now and then; re-reads of the same files."""
    rng = random.Random(seed)
    items: list = [UserItem("fix complete() in the store; run the tests", event_index=0)]
    calls = 0
    for step in range(steps):
        if step and rng.random() < 0.15:
            items.append(UserItem(f"also check {rng.choice(PATHS)}", event_index=len(items)))
        blocks = []
        if rng.random() < 0.5:
            blocks.append(Block("thinking", text=text(rng, 200)))
        if rng.random() < 0.7:
            blocks.append(Block("text", text=f"step {step}: {text(rng, 60)}"))
        results = []
        for _ in range(rng.randint(1, 3)):
            calls += 1
            tool = rng.choice(["read_file", "grep", "run_tests", "browse", "write_file"])
            path = rng.choice(PATHS)
            args = {"path": path} if tool != "browse" else {"url": f"https://x.test/{step}"}
            if tool == "write_file":
                args["content"] = text(rng, 300)
            size = rng.choice([40, 400, 1500, 5000])
            output = text(random.Random(path), size) if tool == "read_file" else text(rng, size)
            cid = f"call_{calls}"
            blocks.append(Block("tool_call", call_id=cid, name=tool, arguments=args))
            results.append((cid, tool, output, args))
        items.append(AssistantItem(blocks=tuple(blocks), event_index=len(items)))
        for cid, tool, output, args in results:
            items.append(ToolResultItem(cid, tool, output, event_index=len(items), arguments=args))
    return items


def ctx(index: int = 0) -> StrategyContext:
    return StrategyContext(
        request_index=index,
        ts=T0,
        model="claude-sonnet-4-5",  # a Claude model: openclaw-prune acts only on those
        context_window=200_000,
        count_tokens=lambda s: math.ceil(len(s) / 4),
        system="You are a coding agent.",
    )


def view_of(result) -> View:
    return result if isinstance(result, View) else View(items=list(result))


def signature(item) -> tuple:
    if isinstance(item, ToolResultItem):
        return ("result", item.call_id, item.output, item.event_index, item.original_chars)
    if isinstance(item, AssistantItem):
        return ("assistant", item.event_index, tuple((b.type, b.rendered()) for b in item.blocks))
    if isinstance(item, SummaryItem):
        return ("summary", item.text, item.replaces)
    return ("user", item.text, item.event_index, item.injected)


def build(name: str):
    return parse_name(name).instantiate()


@pytest.mark.parametrize("first_prompt", [True, False])
@pytest.mark.parametrize("name", PURE)
def test_a_growing_history_gives_what_a_fresh_instance_gives(name: str, first_prompt: bool) -> None:
    items = make_history(40, seed=1 if first_prompt else 4)
    if not first_prompt:  # the first real user message comes later (a subagent's thread)
        items = items[1:]
    grown = build(name)
    history: list = []
    changed = 0
    for n, item in enumerate(items):
        history.append(item)  # one list growing, as the engine passes it
        kept = view_of(grown(history, ctx(n)))
        fresh = view_of(build(name)(list(history), ctx(n)))
        assert [signature(i) for i in kept.items] == [signature(i) for i in fresh.items], n
        changed += [signature(i) for i in kept.items] != [signature(i) for i in history]
    if name != "baseline":
        assert changed, f"{name} never changed the history here: the test would prove nothing"


@pytest.mark.parametrize("name", PURE)
def test_another_history_starts_over(name: str) -> None:
    first, other = make_history(30, seed=2), make_history(12, seed=3)
    instance = build(name)
    for n in range(1, len(first) + 1):
        instance(first[:n], ctx(n))
    for history in (other, other[:-3], first[:5]):  # another list, a shorter one, a prefix
        kept = view_of(instance(history, ctx()))
        fresh = view_of(build(name)(history, ctx()))
        assert [signature(i) for i in kept.items] == [signature(i) for i in fresh.items]


# One name per built-in family, its thresholds small enough to act on the histories below
# (their window: WINDOW tokens).
EVERY_FAMILY = [
    "recorded", "baseline", "truncate-200", "age-truncate-200-keep-2",
    "compact-at-3000-structured", "sliding-6-pin-first", "compact-rotating-at-3000",
    "compact-chained-at-3000", "tool-aging-keep-2", "append-supersede", "prune-at-3000-keep-2",
    "retrieval-top-3", "codex-compact-at-50pct", "codex-remote-compact-at-50pct",
    "codex-compact-drop-oldest-at-50pct", "codex-tool-trunc-1k", "opencode-prune-2k-1k",
    "opencode-compact-v1", "opencode-compact-tail-prepend", "opencode-tool-trunc-20l-1kb",
    "pi-compact-1k-2k", "claudecode-autocompact-1k", "claudecode-microcompact-time-1m-keep-2",
    "anthropic-clear-tool-uses-2k-keep-2", "anthropic-clear-thinking-keep-1",
    "anthropic-compact-5k", "openai-responses-compact-5k", "aider-summarize-2k",
    "cline-truncate-keep-first-pair-half", "cline-dedup-file-reads",
    "roo-truncate-keep-first-half", "roo-condense-keep-first-last-3-at-50pct",
    "gemini-compress-50pct-keep-30pct", "gemini-mask-tool-out-2k-1k", "goose-compact-50pct",
    "goose-tool-pair-summarize-5", "observation-mask-keep-6", "observation-mask-keep-3-poll-2",
    "openhands-recent-keep-first-1-max-12", "openhands-amortized-12",
    "openhands-llm-summary-12-keep-2", "openhands-llm-attention-12",
    "openhands-window-on-overflow", "openhands-browser-mask-1", "openclaw-prune-cache-ttl-5m",
]
WINDOW = 12_000
# The log's own history, every message, or a rule on idle gaps the histories below never have.
NEVER_CHANGES_HERE = {"recorded", "baseline", "claudecode-microcompact-time-1m-keep-2"}


def test_every_built_in_family_has_a_name_in_every_family() -> None:
    from replay.strategies import registered

    families = {s.family for s in registered() if not s.is_plugin}
    assert {parse_name(name).spec.family for name in EVERY_FAMILY} == families


def sent(view: View) -> tuple:
    """What a view sends, comparable across instances (items of a summarizer's input are
    compared by identity, so by their signature here)."""
    calls = tuple(
        (tuple(signature(i) for i in c.input_items), c.instruction, c.summary, c.model)
        for c in view.summarizer_calls
    )
    return tuple(signature(i) for i in view.items), tuple(view.events), calls


@pytest.mark.parametrize("name", EVERY_FAMILY)
def test_every_family_given_another_history_sends_what_a_new_instance_sends(name: str) -> None:
    """Whatever state a family keeps (a summary, results already reported as aged, a frozen
    head), an instance called on another list than the one it saw grown answers as a new one."""
    window = dataclasses.replace(ctx(), context_window=WINDOW)
    first, other = make_history(60, seed=2), make_history(30, seed=3)
    instance = build(name)
    changed = 0
    for n in range(1, len(first) + 1):
        view = view_of(instance(first[:n], dataclasses.replace(window, request_index=n)))
        changed += [signature(i) for i in view.items] != [signature(i) for i in first[:n]]
    assert changed or name in NEVER_CHANGES_HERE, f"{name} never acted: the test proves nothing"
    for history in (other, other[:-3], first[:5]):  # another list, a shorter one, a prefix
        fresh = build(name)
        assert sent(view_of(instance(history, window))) == sent(view_of(fresh(history, window)))


@pytest.mark.parametrize("name", APPEND_ONLY)
def test_append_only_strategies_send_the_same_objects_again(name: str) -> None:
    items = make_history(30, seed=4)
    instance = build(name)
    previous: list = []
    for n in range(1, len(items) + 1):
        sent = view_of(instance(items[:n], ctx(n))).items
        assert all(a is b for a, b in zip(previous, sent, strict=False))
        assert len(sent) >= len(previous)
        previous = sent


def test_the_view_is_a_new_list_every_time() -> None:
    """The engine may append to a request's items (fitted unlogged context): a strategy must
    not hand out the list it keeps."""
    items = make_history(10, seed=5)
    for name in ("truncate-200", "observation-mask-keep-6", "openhands-amortized-8"):
        instance = build(name)
        result = instance(items, ctx())
        first = result.items if isinstance(result, View) else result  # as the engine gets it
        first.append(UserItem("appended by the engine"))
        again = view_of(instance(items, ctx())).items
        assert [signature(i) for i in again] == [signature(i) for i in first[:-1]], name


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def reference_retrieval(history: list, top: int) -> list:
    """The retrieval rule written out directly: steps, word sets, scores, top K."""

    def words(items: list) -> set[str]:
        return {w.lower() for i in items for w in _WORD.findall(item_text(i)[:20000])}

    def real_user(i) -> bool:
        return isinstance(i, UserItem) and not i.injected

    steps: list[list[int]] = []
    for n, item in enumerate(history):
        if isinstance(item, AssistantItem):
            steps.append([n])
        elif not real_user(item) and steps:
            steps[-1].append(n)
    if len(steps) <= top + 1:
        return list(history)
    last_user = max((n for n, i in enumerate(history) if real_user(i)), default=-1)
    current = [history[n] for n in steps[-1]]
    query = words(current + ([history[last_user]] if last_user >= 0 else []))

    def score(s: int) -> float:
        w = words([history[n] for n in steps[s]])
        return len(w & query) / math.sqrt(len(w) or 1)

    ranked = sorted(range(len(steps) - 1), key=lambda s: (-score(s), -s))[:top]
    keep = {n for s in ranked for n in steps[s]} | set(steps[-1])
    keep |= {n for n, i in enumerate(history) if real_user(i) or n < steps[0][0]}
    return [i for n, i in enumerate(history) if n in keep]


@pytest.mark.parametrize("seed", [6, 7])
def test_retrieval_ranks_steps_by_its_rule(seed: int) -> None:
    items = make_history(60, seed=seed)
    instance = build("retrieval-top-4")
    for n in range(1, len(items) + 1):
        sent = view_of(instance(items[:n], ctx(n))).items
        assert sent == reference_retrieval(items[:n], 4), n  # the very same items, in order


def test_seen_tells_new_items_and_starts_over_on_another_list() -> None:
    items = make_history(8, seed=8)
    seen = Seen()
    assert seen.sync(items[:3]) == 0
    assert seen.sync(items[:7]) == 3
    assert seen.sync(items[:7]) == 7  # nothing new
    assert seen.sync(items[:5]) == 0  # shorter: not the same history grown
    assert seen.sync(items[:6]) == 5
    other = [UserItem("another thread"), *items[1:9]]
    assert seen.sync(other) == 0  # another first item


def test_grown_view_leaves_out_none_and_token_sums_follow_the_history() -> None:
    items = make_history(6, seed=9)
    view = GrownView()
    for item in items[view.sync(items) :]:
        view.append(None if isinstance(item, ToolResultItem) else item)
    assert view.items() == [i for i in items if not isinstance(i, ToolResultItem)]
    view.set(2, items[2])
    assert items[2] in view.items()
    sums = TokenSums()
    for n in range(len(items) + 1):
        assert sums.sync(items[:n], ctx())[-1] == sum(item_tokens(i, ctx()) for i in items[:n])


@given(
    st.lists(st.integers(0, 4), max_size=40),
    st.lists(st.integers(1, 4), min_size=40, max_size=40),
    st.integers(1, 7),
)
def test_retrieval_best_steps_equal_a_full_sort(shared, sizes, top) -> None:
    """`retrieval` sorts only the scores that can be among the best: the same steps, in the
    same order (ties: the newer step first), as sorting every score."""
    import numpy as np

    from replay.strategies.retrieval import _best

    scores = np.array(shared, dtype=float) / np.sqrt(np.array(sizes[: len(shared)], dtype=float))
    expected = np.lexsort((-np.arange(len(scores)), -scores))[:top].tolist()
    assert _best(scores, top) == expected


@given(
    st.integers(0, 3000),
    st.integers(0, 3000),
    st.integers(0, 3000),
    st.lists(st.integers(0, 3000), max_size=4),
)
def test_shared_prefix_counts_the_same_leading_objects_and_leaves_both_lists(
    old_len, new_len, first_change, later_changes
) -> None:
    """`shared_prefix` equals a walk item by item, for views that grew, shrank or changed
    anywhere, near the end or far from it (items compare by identity: an equal item that is
    another object differs), and both lists are as they were after it (it cuts them while
    comparing)."""
    from operator import is_

    from replay.strategies._view import shared_prefix

    pool = make_history(12, seed=3)
    twins = make_history(12, seed=3)  # equal items, other objects
    old = [pool[n % len(pool)] for n in range(old_len)]
    new = [pool[n % len(pool)] for n in range(new_len)]
    for n in (first_change, *later_changes):
        if n < new_len:
            new[n] = twins[n % len(twins)]
    old_before, new_before = list(old), list(new)
    expected = next(
        (n for n, same in enumerate(map(is_, old, new)) if not same), min(old_len, new_len)
    )
    assert shared_prefix(old, new) == expected
    assert list(map(id, old)) == list(map(id, old_before))
    assert list(map(id, new)) == list(map(id, new_before))
    assert shared_prefix(old, old) == old_len


# Strategies whose rule changes what earlier positions keep (a deleted range that grows,
# forgotten events, duplicate reads) and that then re-map only the positions concerned
# (`PairedView.update`), with a window small enough for the histories below.
REMAPPING = [
    "roo-truncate-keep-first-half",
    "cline-truncate-keep-first-pair-half",
    "cline-dedup-file-reads",
    "openhands-amortized-8",
    "openhands-llm-attention-8",
]


@pytest.mark.parametrize("name", REMAPPING)
def test_remapping_the_changed_positions_gives_what_remapping_all_gives(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = make_history(60, seed=8)
    small = [dataclasses.replace(ctx(n), context_window=20_000) for n in range(len(items))]
    grown = build(name)
    sent, events = [], 0
    for n in range(1, len(items) + 1):
        result = view_of(grown(items[:n], small[n - 1]))
        sent.append([signature(i) for i in result.items])
        events += len(result.events)
    assert events, f"{name} never rewrote the history here: the test would prove nothing"
    # The reference re-maps every position whenever the rule changed any.
    monkeypatch.setattr(PairedView, "update", lambda self, history, _: self.refresh(history))
    reference = build(name)
    for n in range(1, len(items) + 1):
        result = view_of(reference(items[:n], small[n - 1]))
        assert sent[n - 1] == [signature(i) for i in result.items], (name, n)


@given(st.lists(st.tuples(st.integers(0, 60), st.lists(st.integers(0, 60), max_size=12)),
                max_size=20))
def test_forgetting_lists_what_a_walk_over_the_history_lists(steps) -> None:
    """At each step a history of some length (growing, or another shorter one) and positions
    forgotten for good: the positions remembered are those of the whole walk."""
    memory = Forgetting()
    forgotten: set[int] = set()
    for length, positions in steps:
        assert memory.remembered(length) == [n for n in range(length) if n not in forgotten]
        memory.forget(positions)
        forgotten.update(positions)
        assert memory.forgotten == forgotten


@given(turns=gen.turn_lists(max_turns=6), provider=st.sampled_from(["openai", "anthropic"]),
       cut=st.integers(0, 12), head_size=st.integers(0, 3))
@settings(max_examples=40, deadline=None)
def test_token_sized_rules_count_the_request_as_the_renderer_does(turns, provider, cut,
                                                                  head_size) -> None:
    """`request_tokens`, `TokenSums.request` and `Frozen.request_tokens` (what compaction and
    clearing triggers compare with their threshold) equal the prompt the request is billed
    for: framing per message and per tool call, the system prompt's, tool definitions. They
    left the framing out, and on 300 short tool steps counted 5,735 tokens of 9,941 billed."""
    from replay.engine import ReplayConfig, replay_session
    from replay.strategies import NamedStrategy, StrategySpec
    from replay.strategies._common import Frozen, TokenSums, request_tokens
    from replay.strategies._view import SummaryItem, View

    counted: dict[int, set[int]] = {}

    def build() -> object:
        sums, frozen = TokenSums(), Frozen()

        def rule(history, c):
            if len(history) > cut and not frozen.covered:  # a head of a summary + kept items
                kept = list(history[len(history) - min(head_size, len(history) - 1):])
                frozen.reset([SummaryItem("summary of the start"), *kept], history)
            view = frozen.view(history) if frozen.covered else list(history)
            counted[c.request_index] = {
                request_tokens(view, c),
                frozen.request_tokens(history, c) if frozen.covered else sums.request(history, c),
            }
            return View(items=view)

        return rule

    spec = StrategySpec(family="probe", pattern="probe", build=build, cache_class="churn",
                        rule="sizes itself")
    session = gen.build_session(turns, provider=provider)
    records = replay_session(session, [NamedStrategy("probe", spec, {})], ReplayConfig())
    billed = {r.request_index: {r.outcome.prompt} for r in records if r.kind == "request"}
    assert counted == billed


MANY_TOOLS = [
    ToolDef(name=name, description=name, input_schema={"type": "object"})
    for name in ("read_file", "list_files", "run_tests", "write_file", "bash", "skill", "Read",
                 "Bash")
]
"""Eight definitions: counted joined by newlines (as the triggers did until 2026-12-05), they
made 2 tokens fewer on Claude (224 against 226: each block's count is scaled and rounded) than
the renderer's one block per definition."""


@pytest.mark.parametrize("tools", [gen.TOOLS, MANY_TOOLS], ids=["2-tools", "8-tools"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(
    "family", ["anthropic-compact-{t}", "anthropic-clear-tool-uses-{t}-keep-1"]
)
def test_a_token_trigger_fires_at_the_first_request_billed_above_it(provider, family,
                                                                    tools) -> None:
    """On many short tool steps the framing is a large share of the prompt: a trigger set
    just under request 40's billed prompt fires at request 40, not later."""
    from replay.engine import ReplayConfig, replay_session

    turns = [gen.Turn(f"step {i}", [gen.Call("run", {"n": i}, f"ok {i}")]) for i in range(60)]
    session = gen.build_session([*turns, gen.Turn("done")], provider=provider, tools=tools)
    baseline = [r.outcome.prompt for r in replay_session(session, ["baseline"], ReplayConfig())
                if r.kind == "request"]
    name = family.format(t=baseline[40] - 1)
    records = replay_session(session, [name], ReplayConfig())
    fired = [r.request_index for r in records if r.kind == "request" and r.events]
    assert fired[0] == 40, (fired, baseline[38:42])


@pytest.mark.parametrize(
    "family", ["anthropic-compact-{t}", "anthropic-clear-tool-uses-{t}-keep-1"]
)
def test_a_token_trigger_equal_to_a_billed_prompt_does_not_fire_at_it(family) -> None:
    """Anthropic's server-side triggers fire when the input *exceeds* the trigger: set to
    exactly request 40's billed prompt, they first fire at request 41."""
    from replay.engine import ReplayConfig, replay_session

    turns = [gen.Turn(f"step {i}", [gen.Call("run", {"n": i}, f"ok {i}")]) for i in range(60)]
    session = gen.build_session([*turns, gen.Turn("done")], provider="anthropic")
    baseline = [r.outcome.prompt for r in replay_session(session, ["baseline"], ReplayConfig())
                if r.kind == "request"]
    assert baseline[41] > baseline[40]
    records = replay_session(session, [family.format(t=baseline[40])], ReplayConfig())
    fired = [r.request_index for r in records if r.kind == "request" and r.events]
    assert fired[0] == 41, (fired, baseline[38:42])


# --- the incremental building blocks, directly ---------------------------------------------


def test_seen_starts_over_when_the_last_item_seen_is_another_object() -> None:
    """Same first item, as long or longer, but another object where the last item seen was:
    not the history seen before grown by appending."""
    first, second, third = UserItem("a"), UserItem("b"), UserItem("c")
    seen = Seen()
    assert seen.sync([first, second]) == 0
    assert seen.sync([first, UserItem("b"), third]) == 0
    items = [first, second, third]
    seen.sync(items[:2])
    assert seen.sync(items) == 2


def _quarter(text: str) -> int:
    return math.ceil(len(text) / 4)


def _ctx(count=_quarter, message_overhead: int = 3, tool_call_overhead: int = 2, **kw):
    return StrategyContext(
        request_index=0, ts=T0, model="gpt-5",
        context_window=200_000, count_tokens=count,
        message_overhead=message_overhead, tool_call_overhead=tool_call_overhead, **kw,
    )


def _pairs(*ids: str) -> list:
    """A user message, then per id an assistant message calling it and its result."""
    items: list = [UserItem("go", event_index=0)]
    for cid in ids:
        call = Block("tool_call", call_id=cid, name="ls", arguments={"d": cid})
        items.append(AssistantItem(blocks=(call,), event_index=len(items)))
        items.append(ToolResultItem(cid, "ls", f"out {cid}", event_index=len(items)))
    return items


def test_grown_view_set_counts_what_it_leaves_out() -> None:
    items = _pairs("c1")
    view = GrownView()
    view.sync(items)
    for item in items:
        view.append(item)
    view.set(1, None)
    assert view.items() == [items[0], items[2]] and view.left_out == 1
    view.set(1, items[1])
    assert view.items() == items and view.left_out == 0


def test_result_positions_and_answered_ids_start_over_on_another_history() -> None:
    one, other = _pairs("c1", "c2"), _pairs("c9")
    positions, answered = ResultPositions(), AnsweredIds()
    positions.sync(one)
    assert positions.of([2, 4]) == [2, 4] and answered.sync(one) == {"c1", "c2"}
    positions.sync(other)
    assert positions.of([2, 4]) == [2] and answered.sync(other) == {"c9"}


def test_aging_view_ages_each_item_once_and_only_past_keep() -> None:
    """Fewer matching items than `keep`: none is old. Items only age: raising `keep` later
    ages nothing again, and lowering it back ages only the ones not aged yet."""
    aging = AgingView(lambda item: isinstance(item, ToolResultItem))
    items = _pairs("c1", "c2", "c3", "c4")  # results at 2, 4, 6, 8
    assert aging.sync(items[:7], keep=5) == ([], 0)
    assert aging.sync(items, keep=2) == ([2, 4], 2)
    assert aging.sync(items, keep=3) == ([], 1)
    assert aging.sync(items, keep=2) == ([], 2)
    assert aging.sync(items, keep=1) == ([6], 3)


def test_paired_view_repairs_pairs_as_the_rule_changes_what_it_keeps() -> None:
    """Dropping a result hides its call (a message left without a call is left out);
    keeping it again shows both; a call not answered yet stays; the token count follows."""
    dropped: set[int] = set()
    view = PairedView(lambda n, item: None if n in dropped else item)
    items = _pairs("c1", "c2")
    pending = AssistantItem(
        blocks=(Block("tool_call", call_id="c3", name="ls", arguments={}),), event_index=5
    )
    history = [*items, pending]
    c = _ctx()
    view.sync(history)
    assert view.items() == history and view.tokens(c) == framed_tokens(history, c)
    dropped.add(2)
    view.update(history, [2])
    expected = [items[0], items[3], items[4], pending]
    assert view.items() == expected
    assert expected == repair_pairs([i for n, i in enumerate(history) if n != 2], history)
    assert view.tokens(c) == framed_tokens(expected, c)
    other = _ctx(count=len)
    assert view.tokens(other) == framed_tokens(expected, other)
    dropped.clear()
    view.update(history, [2])
    assert view.items() == history and view.tokens(other) == framed_tokens(history, other)


def test_memoized_sizes_follow_a_change_of_counter_framing_or_tools() -> None:
    items = _pairs("c1", "c2")
    tools = (ToolDef(name="t", description="d"),)
    contexts = [
        _ctx(system="sys", tools=tools),
        _ctx(system="sys", tools=tools, message_overhead=7),
        _ctx(system="sys", tools=tools, message_overhead=7, tool_call_overhead=9),
        _ctx(count=len, system="sys", tools=tools, message_overhead=7, tool_call_overhead=9),
        _ctx(count=len, system="sys", tools=(*tools, ToolDef(name="u")), message_overhead=7,
             tool_call_overhead=9),
    ]
    head, sums = HeadTokens(), TokenSums()
    for c in contexts:
        assert head(c) == head_tokens(c)
        assert sums.sync(items, c)[-1] == framed_tokens(items, c)


def _parallel() -> list:
    """user, one message calling c1 and c2, their two results, a message calling c3, its
    result."""
    calls = tuple(Block("tool_call", call_id=c, name="ls", arguments={"d": c}) for c in "ab")
    c3 = Block("tool_call", call_id="c", name="ls", arguments={"d": "c"})
    return [
        UserItem("go", event_index=0),
        AssistantItem(blocks=calls, event_index=1),
        ToolResultItem("a", "ls", "out a", event_index=2),
        ToolResultItem("b", "ls", "out b", event_index=3),
        AssistantItem(blocks=(c3,), event_index=4),
        ToolResultItem("c", "ls", "out c", event_index=5),
    ]


def test_prefix_sums_resumed_after_a_result_frame_the_next_result_with_it() -> None:
    """A result right after another is sent in the same message (no framing of its own),
    also when the sums resume between the two; the character sums past the end are 0."""
    items, c = _parallel(), _ctx()
    sums = TokenSums()
    sums.sync(items[:3], c)
    assert sums.sync(items, c)[-1] == framed_tokens(items, c)
    char_sums = CharSums()
    assert char_sums.since(items, 2) == chars(items[2:])
    assert char_sums.since(items, len(items) + 2) == 0


def test_a_frozen_head_sizes_its_view_as_the_view_is_sent() -> None:
    """`tokens` / `request_tokens` / `chars` of the frozen view: a result after the head is
    framed after the head's last item, not the history's; a head grown from the last one
    measured (chained summaries) is sized as a whole."""
    history, c = _parallel(), _ctx(system="sys", hidden_tokens=11)
    frozen = Frozen()
    frozen.reset([SummaryItem("summary of the start")], history[:3])
    view = frozen.view(history)
    assert view[1] is history[3]
    assert frozen.tokens(history, c) == framed_tokens(view, c)
    assert frozen.request_tokens(history, c) == request_tokens(view, c)
    assert frozen.chars(history) == chars(view)
    # A head ending in a result: the result after it is sent in the same message.
    summary = SummaryItem("summary")
    frozen.reset([summary, history[2]], history[:3])
    assert frozen.tokens(history, c) == framed_tokens(frozen.view(history), c)
    frozen.reset([summary, history[2], history[3], UserItem("more")], history[:4])
    assert frozen.tokens(history, c) == framed_tokens(frozen.view(history), c)
    assert frozen.chars(history) == chars(frozen.view(history))
