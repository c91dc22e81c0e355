"""Break-even of rewrites (issue 6): the closed form against hand-computed numbers, the
simulated break-even of a prune at the head vs at the tail, the summarizer's own cost, and the
JSON contract of `replay breakeven`."""

from __future__ import annotations

import contextlib
import copy
import json
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import timedelta
from decimal import Decimal

import gen
import pytest
from conftest import RUN42
from gen import Call, Turn, build_session
from hypothesis import given
from hypothesis import strategies as st

from replay.breakeven import _breakeven, breakeven_session
from replay.breakeven._whatif import PLACEHOLDER, Selector, whatif_strategy
from replay.cache._store import CachedPrompt, CacheStore
from replay.engine import _replay
from replay.engine._replay import ReplayConfig, _Run, with_unlogged_context
from replay.log import RequestMarker, Session, read_log
from replay.prefix import _diff
from replay.prices import Buckets, Pricer
from replay.strategies import resolve
from replay.strategies._base import NamedStrategy, StrategySpec
from replay.strategies._view import (
    RewriteEvent,
    SummaryItem,
    ToolResultItem,
    UserItem,
    View,
    replace_output,
)
from replay.tokens import TokenCounter, family_for

BREAKEVEN_KEYS = {
    "strategy",
    "request_index",
    "event",
    "first_edit_token",
    "removed_tokens",
    "surviving_tokens",
    "rewrite_cost_usd",
    "saving_per_request_usd",
    "breakeven_closed_form",
    "breakeven_simulated",
}


def _per_token(model: str, provider: str, bucket: str, tokens: int = 1000) -> Decimal:
    """USD per token of one bucket, looked up for a small request (below any long-context
    tier)."""
    price = Pricer().price(Buckets(**{bucket: tokens}), model=model, provider=provider,
                           ts=gen.BASE_TS)
    return price.input_usd / tokens


def _only(rows):
    assert len(rows) == 1, rows
    return rows[0]


# --- closed form, by hand -------------------------------------------------------------------


def _plugin(name: str, build: Callable[[], object], cache_class: str = "freeze-once"
            ) -> NamedStrategy:
    """A strategy of the test's own, `name` also its family, pattern and rule."""
    spec = StrategySpec(family=name, pattern=name, build=build, cache_class=cache_class, rule=name)
    return NamedStrategy(name, spec, {})


def _reading_session(steps: int, output: str = "x" * 900) -> Session:
    """An Anthropic session of `steps` requests that each read a file (`output`), then one more."""
    turns = [Turn(f"step {i}", [Call("read_file", {"path": f"f{i}.py"}, output)])
             for i in range(steps)]
    return build_session(turns + [Turn("done")], provider="anthropic")


def _folding_strategy(at: int) -> NamedStrategy:
    """Keeps the task, and at request `at` folds everything after it, the step the history
    just gained included, into one summary; appends after it from then on."""

    def build() -> object:
        kept: list = []
        covered = 0

        def fold(history, ctx):
            nonlocal kept, covered
            if ctx.request_index == at:
                summary = SummaryItem(text="Summary: " + "read the files. " * 20)
                kept, covered = [history[0], summary], len(history)
                return View(kept, [], [RewriteEvent("compaction", "everything after the task")])
            if not kept:
                return View(list(history))
            return View([*kept, *history[covered:]])

        return fold

    return _plugin("fold", build)


def test_a_compaction_that_folds_the_new_step_re_bills_its_summary() -> None:
    """Surviving tokens leave out what the history gained since the previous request only
    where the rewritten prompt still sends it: a compaction that folded that step into its
    summary re-bills the summary (it read 0: the prompt after the first edit, less the whole
    step, went below zero)."""
    turns = [
        Turn(f"step {i}", [Call("read_file", {"path": f"f{i}.py"}, gen.filler(600, i))])
        for i in range(4)
    ] + [Turn("done")]
    session = build_session(turns, provider="anthropic")
    rows, records = breakeven_session(session, [_folding_strategy(3)])
    row = _only(rows)
    rec = next(r for r in records if r.request_index == 3)
    assert row.request_index == 3 and row.event == "compaction"
    assert 0 < row.surviving_tokens == rec.request.total - row.first_edit_token
    assert row.rewrite_cost_usd > 0



def _net_from(session, fit, start: int) -> Decimal:
    """What `baseline` cost minus what `_folding_strategy(start)` cost, from request `start` on,
    each replayed in full: the counterfactual net a break-even row must equal."""
    def costs(strategy) -> list[Decimal]:
        records = _replay.replay_session(session, strategy, ReplayConfig(unlogged_context=fit))
        return [r.cost_usd for r in records if r.kind == "request"]

    base, folded = costs("baseline"), costs([_folding_strategy(start)])
    return sum((b - f for b, f in zip(base[start:], folded[start:], strict=True)), Decimal(0))

def test_a_compaction_s_counterfactual_leaves_out_an_unlogged_message_no_longer_sent() -> None:
    """The run without the strategy's only rewrite is `baseline` (both send the whole history),
    so the row's simulated net is Σ (baseline − strategy) over its horizon (requests 2–7). A
    message the log does not hold, 3,000 tokens carried by requests 4–5 and dropped at 6 (a
    transient one), stays in the history: the counterfactual sent it again at 6 and 7 (on
    entire-bmad, Claude Code's ~23k re-attached files: +$0.24 of net, 1.2514 for 1.0091)."""
    from test_unlogged import MAIN_THREAD, _index, _session, _turns

    from replay.engine._unlogged import RequestFit, UnloggedContext

    session = _session(_turns(MAIN_THREAD, 0, 8, gen.BASE_TS), hidden=4000)
    fourth, sixth = _index(session, "main-r4"), _index(session, "main-r6")
    fit = UnloggedContext(requests={
        (MAIN_THREAD, fourth): RequestFit(before=3000),
        (MAIN_THREAD, sixth): RequestFit(drop=((fourth, "before"),)),
    })
    config = ReplayConfig(unlogged_context=fit)
    row = _only(breakeven_session(session, [_folding_strategy(2)], config)[0])
    assert (row.request_index, row.horizon) == (2, 6)
    assert row.simulated_net_usd == _net_from(session, fit, 2)


def test_a_compaction_s_counterfactual_leaves_out_a_first_message_context_no_longer_sent(
) -> None:
    """The same with the thread's first-message context (2,000 tokens of a 5,000-token hidden
    prefix), no longer sent from request 3 on (a transient one): the counterfactual starts from
    request 1's view, which still held it, and sent it to the end."""
    from test_unlogged import MAIN_THREAD, _index, _session, _turns

    from replay.engine._unlogged import CONTEXT, RequestFit, ThreadFit, UnloggedContext

    session = _session(_turns(MAIN_THREAD, 0, 8, gen.BASE_TS), hidden=5000)
    fit = UnloggedContext(
        threads={MAIN_THREAD: ThreadFit((3000,), 2000)},
        requests={(MAIN_THREAD, _index(session, "main-r3")): RequestFit(drop=(CONTEXT,))},
    )
    row = _only(breakeven_session(session, [_folding_strategy(2)],
                                  ReplayConfig(unlogged_context=fit))[0])
    assert (row.request_index, row.horizon) == (2, 6)
    assert row.simulated_net_usd == _net_from(session, fit, 2)


def test_the_run_without_a_logged_compaction_is_not_sent_what_the_harness_re_attached() -> None:
    """Claude Code re-attaches files after it compacts (3,000 tokens the log does not hold, at
    request 4, the first after the compaction): only a view that made that compaction sends
    them. The run without `recorded`'s one rewrite is `baseline` (the whole history, which never
    sends them): removed = baseline's prompt − recorded's at 4 (at least 0), net = Σ (baseline
    − recorded) from 4. The counterfactual sent them too (on entire-bmad: 148,005 removed for
    124,928, a net of $0.6994 for $0.4571, paid back at 0 for 3)."""
    from test_unlogged import MAIN_THREAD, _compacted_session

    from replay.engine._unlogged import RequestFit, UnloggedContext

    session, compaction, after = _compacted_session()
    fit = UnloggedContext(
        requests={(MAIN_THREAD, after): RequestFit(before=3000, compaction=compaction)}
    )
    row = _only(breakeven_session(session, ["recorded"], ReplayConfig(unlogged_context=fit))[0])
    assert (row.event, row.request_index) == ("compaction", 4)

    def requests(strategy) -> list:
        records = _replay.replay_session(session, strategy, ReplayConfig(unlogged_context=fit))
        return [r for r in records if r.kind == "request"]

    base, rec = requests("baseline"), requests("recorded")
    # Here the summary and the re-attached files outweigh the four turns: nothing removed.
    assert row.removed_tokens == max(0, base[4].request.total - rec[4].request.total) == 0
    assert row.simulated_net_usd == sum(b.cost_usd - r.cost_usd
                                        for b, r in zip(base[4:], rec[4:], strict=True))


def test_what_the_harness_re_attached_stays_in_the_run_without_a_later_compaction() -> None:
    """The files Claude Code re-attached with a logged compaction go with that compaction: a
    view that no longer holds an event it replaced (here every view after it, the run without
    a *second* compaction included) still sends them. The run without `recorded`'s second
    compaction is `recorded` on the log without that compaction: removed = its prompt −
    recorded's at the request after it."""
    from datetime import timedelta

    from test_unlogged import MAIN_THREAD, T0, WORDS, _index, _session, _turns

    from replay.engine._unlogged import RequestFit, UnloggedContext
    from replay.log import Compaction

    def session_of(second: bool):
        events = _turns(MAIN_THREAD, 0, 4, T0)
        first_ids = [e.id for e in events if e.id]
        later = T0 + timedelta(minutes=2)
        events.append(Compaction(ts=later, summary="Summary one. " + WORDS * 20,
                                 replaces=first_ids, id="c1", trigger="auto"))
        middle = _turns(MAIN_THREAD, 4, 2, later)
        events += middle
        last = later + timedelta(minutes=2)
        if second:
            events.append(Compaction(ts=last, summary="Summary two. " + WORDS * 5,
                                     replaces=["c1", *[e.id for e in middle if e.id]],
                                     id="c2", trigger="auto"))
        events += _turns(MAIN_THREAD, 6, 2, last)
        session = _session(events, hidden=4000)
        compaction = next(n for n, e in enumerate(session.events) if isinstance(e, Compaction))
        after = _index(session, "main-r4")
        fit = UnloggedContext(
            requests={(MAIN_THREAD, after): RequestFit(before=3000, compaction=compaction)}
        )
        return session, ReplayConfig(unlogged_context=fit)

    session, config = session_of(True)
    rows, _ = breakeven_session(session, ["recorded"], config)
    row = next(r for r in rows if r.request_index == 6)
    plain, plain_config = session_of(False)
    without = [r for r in _replay.replay_session(plain, "recorded", plain_config)
               if r.kind == "request"]
    made = [r for r in _replay.replay_session(session, "recorded", config)
            if r.kind == "request"]
    assert without[5].request.total == made[5].request.total  # alike before it
    assert row.removed_tokens == without[6].request.total - made[6].request.total > 3000


def _compacted_then_cleared(tmp_path, compaction: bool):
    """Two file reads and two test runs, a logged compaction, then a third read that the
    harness clears (`cleared_at`) three requests later, and more test runs."""
    from replay.log import read_log

    t0 = gen.BASE_TS
    lines: list[dict] = [{
        "type": "session", "format": "replay-log", "version": 1, "ts": t0.isoformat(),
        "session_id": "s", "agent": "test", "provider": "anthropic",
        "model": "claude-sonnet-4-5", "system": "You are a coding agent.",
    }]
    clock = iter(range(1, 10_000))

    def add(**event):
        lines.append({"ts": (t0 + timedelta(seconds=10 * next(clock))).isoformat(), **event})
        return lines[-1]

    def step(n: int, name: str, output: str | None):
        add(type="request", request_id=f"r{n}")
        blocks = [{"type": "text", "text": f"step {n}"}]
        if output is not None:
            blocks.append({"type": "tool_call", "id": f"c{n}", "name": name, "arguments": {}})
        add(type="assistant", blocks=blocks, request_id=f"r{n}")
        return add(type="tool_result", call_id=f"c{n}", tool_name=name, output=output) \
            if output is not None else None

    add(type="user", text="Fix the bug.")
    step(0, "read_file", gen.filler(12_000, 1))
    step(1, "read_file", gen.filler(12_000, 2))
    step(2, "run_tests", "FAILED test_0")
    step(3, "run_tests", "FAILED test_1")
    if compaction:
        add(type="compaction", summary="Read a.py and b.py; tests fail. " + gen.filler(1500, 3))
    else:
        next(clock)  # the same times either way
    third = step(4, "read_file", gen.filler(12_000, 4))
    step(5, "read_file", gen.filler(2_000, 5))
    step(6, "run_tests", "FAILED again")
    third["cleared_at"] = (t0 + timedelta(seconds=10 * next(clock))).isoformat()
    for n in range(7, 11):
        step(n, "run_tests", f"FAILED {n}")
    step(11, "", None)
    path = tmp_path / ("compacted.jsonl" if compaction else "never-compacted.jsonl")
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return read_log(path)


def test_a_compaction_is_weighed_against_the_run_that_still_clears_later(tmp_path) -> None:
    """"Without that rewrite" is the same run without the compaction: the harness's later
    clearing happens in it too. Counting it in the compaction's saving (as well as in its own
    row) credited the compaction with both."""
    session = _compacted_then_cleared(tmp_path, compaction=True)
    rows, _ = breakeven_session(session, "recorded")
    compaction = next(r for r in rows if r.event == "compaction")
    assert any(r.event == "prune" and r.request_index > compaction.request_index for r in rows)
    assert compaction.horizon == 8  # to the end of the log
    without = _compacted_then_cleared(tmp_path, compaction=False)

    def cost_from(s, start):
        records = _replay.replay_session(s, "recorded")
        return sum((r.cost_usd for r in records if r.request_index >= start), Decimal(0))

    expected = cost_from(without, 4) - cost_from(session, 4)
    assert expected > 0
    assert compaction.simulated_net_usd == expected


def test_closed_form_by_hand_prune_on_claude() -> None:
    """One what-if prune (`older-than:1` at request 2) on a three-request Claude session."""
    a_out = "def total(items):\n" + gen.filler(1200, 3)
    b_out = "def other():\n    return 42\n"
    session = build_session(
        [
            Turn("Reading.", [Call("read_file", {"path": "a.py"}, a_out)]),
            Turn("More.", [Call("read_file", {"path": "b.py"}, b_out)]),
            Turn("Done."),
        ],
        provider="anthropic",
        system="Be terse.",
        tools=[],
        task="Fix the bug.",
    )
    # The pieces, counted once (claude: o200k × 1.199 rounded up, 4 framing tokens per message,
    # 12 more for a tool call; the o200k counts are 3, 4, 2, 9, 357, 7, 2, 9, 8).
    counter = TokenCounter("claude-sonnet-4-5")
    fam = family_for("claude-sonnet-4-5")
    assert (fam.factor, fam.message_overhead, fam.tool_call_overhead) == (1.199, 4, 12)
    pieces = {
        "Be terse.": 4,
        "Fix the bug.": 5,
        "Reading.": 3,
        'read_file({"path": "a.py"})': 11,
        a_out: 429,
        PLACEHOLDER: 9,
        "More.": 3,
        'read_file({"path": "b.py"})': 11,
        b_out: 10,
    }
    for text, tokens in pieces.items():
        assert counter.count(text) == tokens, text[:20]
    # Prices looked up for a small request: $3 / M uncached, $0.30 / M cache read.
    in_rate = _per_token("claude-sonnet-4-5", "anthropic", "uncached")
    read_rate = _per_token("claude-sonnet-4-5", "anthropic", "cache_read")
    assert (in_rate, read_rate) == (Decimal("0.000003"), Decimal("0.0000003"))

    row = _only(breakeven_session(session, [whatif_strategy(2, Selector.parse("older-than:1"),
                                                            False)])[0])
    # first edit = system (4+4) + task (5+4) + "Reading." (3+4) + call (11+12)
    #            + framing of a.py's result (4; the placeholder shares no token with it)
    #            = 8 + 9 + 7 + 23 + 4 = 51
    # removed    = a.py's result (429+4) − placeholder (9+4) = 433 − 13 = 420
    # prompt     = 8 + 9 + 7 + 23 + 13 + "More." (3+4) + call (11+12) + b.py (10+4) = 104
    # gained     = what the history gained since request 1: "More." + call + b.py = 7 + 23 + 14
    #            = 44 (billed uncached with or without the edit)
    # surviving  = 104 − 51 − 44 = 9 (the placeholder, where the cache held a.py's result)
    # rewrite    = 9 × (0.000003 − 0.0000003) = 9 × 0.0000027 = 0.0000243
    # saving     = 420 × 0.0000003 = 0.000126
    # closed     = 0.0000243 / 0.000126 = 0.1928… → 0.19
    assert (row.strategy, row.request_index, row.event) == ("whatif-prune-at-2", 2, "prune")
    assert row.first_edit_token == 51
    assert row.removed_tokens == 420
    assert row.surviving_tokens == 9
    assert row.rewrite_cost_usd == Decimal("0.0000243")
    assert row.saving_per_request_usd == Decimal("0.000126")
    assert row.breakeven_closed_form == 0.19
    # Simulated: every prompt is below Claude's 1,024-token minimum, so nothing was cached and
    # nothing is lost: the edit saves removed × uncached rate at once (420 × 0.000003).
    assert row.breakeven_simulated == 0
    assert row.simulated_net_usd == Decimal("0.00126")
    assert row.horizon == 1
    assert row.summarizer_cost_usd == 0 and row.summarizer_cache_read == 0


def test_closed_form_by_hand_age_truncate_on_gpt5() -> None:
    """`age-truncate-34-keep-1` ages one test log at request 2 of a gpt-5 session."""
    a_out = "Traceback (most recent call last):\n" + gen.filler(900, 5)
    session = build_session(
        [
            Turn("Running.", [Call("run_tests", {}, a_out)]),
            Turn("Again.", [Call("run_tests", {"only": "a"}, "ok")]),
            Turn("Done."),
        ],
        provider="openai",
        system="Be terse.",
        tools=[],
        task="Fix the bug.",
    )
    counter = TokenCounter("gpt-5")
    fam = family_for("gpt-5")
    assert (fam.factor, fam.message_overhead, fam.tool_call_overhead) == (1.0, 3, 8)
    capped = a_out[:34] + f"\n…[truncated {len(a_out) - 34} chars]"
    assert a_out[:34] == "Traceback (most recent call last):"
    pieces = {
        "Be terse.": 3,
        "Fix the bug.": 4,
        "Running.": 2,
        "run_tests({})": 4,
        a_out: 273,
        a_out[:34]: 8,
        capped: 16,
        "Again.": 2,
        'run_tests({"only": "a"})': 8,
        "ok": 1,
    }
    for text, tokens in pieces.items():
        assert counter.count(text) == tokens, text[:20]
    # The capped result keeps the 8 tokens of its first line, then diverges at the newline.
    full, cut = counter.raw_tokens(a_out), counter.raw_tokens(capped)
    assert list(full[:8]) == list(cut[:8]) and full[8] != cut[8]
    in_rate = _per_token("gpt-5", "openai", "uncached")
    read_rate = _per_token("gpt-5", "openai", "cache_read")
    assert (in_rate, read_rate) == (Decimal("0.00000125"), Decimal("0.000000125"))

    rows, _ = breakeven_session(session, ["age-truncate-34-keep-1"])
    row = _only(rows)
    # first edit = system (3+3) + task (4+3) + "Running." (2+3) + call (4+8)
    #            + framing (3) + the 8 shared tokens of the first line
    #            = 6 + 7 + 5 + 12 + 3 + 8 = 41
    # removed    = full log (273+3) − capped (16+3) = 276 − 19 = 257
    # prompt     = 6 + 7 + 5 + 12 + 19 + "Again." (2+3) + call (8+8) + "ok" (1+3) = 74
    # gained     = "Again." (2+3) + call (8+8) + "ok" (1+3) = 25 (uncached with or without it)
    # surviving  = 74 − 41 − 25 = 8 (the capped result's tokens after the shared 8)
    # rewrite    = 8 × (0.00000125 − 0.000000125) = 8 × 0.000001125 = 0.000009
    # saving     = 257 × 0.000000125 = 0.000032125
    # closed     = 0.000009 / 0.000032125 = 0.2801… → 0.28
    assert (row.strategy, row.request_index, row.event) == ("age-truncate-34-keep-1", 2, "aging")
    assert row.first_edit_token == 41
    assert row.removed_tokens == 257
    assert row.surviving_tokens == 8
    assert row.rewrite_cost_usd == Decimal("0.000009")
    assert row.saving_per_request_usd == Decimal("0.000032125")
    assert row.breakeven_closed_form == 0.28
    # Below OpenAI's 1,024-token minimum nothing is cached: the simulation saves
    # 257 × 0.00000125 = 0.00032125 on the request itself.
    assert row.breakeven_simulated == 0
    assert row.simulated_net_usd == Decimal("0.00032125")


def test_closed_form_uses_the_rate_of_the_request_size_not_a_long_context_tier() -> None:
    """Claude Sonnet 4.5 doubles its rates above 200k input tokens; a 92-token request is
    priced at $3 / $0.30 per M, not at the >200k tier (a 1M-token rate probe would say $6)."""
    big = Pricer().price(Buckets(uncached=1_000_000), model="claude-sonnet-4-5",
                         provider="anthropic", ts=gen.BASE_TS)
    assert big.input_usd == Decimal(6)  # the tier exists: the test below would catch it
    session = build_session(
        [
            Turn("Reading.", [Call("read_file", {"path": "a.py"}, gen.filler(1200, 3))]),
            Turn("More.", [Call("read_file", {"path": "b.py"}, "x = 1\n")]),
            Turn("Done."),
        ],
        provider="anthropic",
        tools=[],
    )
    row = _only(breakeven_session(session, [whatif_strategy(2, Selector.parse("older-than:1"),
                                                            False)])[0])
    assert row.rewrite_cost_usd == row.surviving_tokens * Decimal("0.0000027")
    assert row.saving_per_request_usd == row.removed_tokens * Decimal("0.0000003")


def test_a_prune_below_the_long_context_line_saves_the_tier_on_every_token() -> None:
    """Sonnet 4.5 bills every token of a prompt over 200k at the higher tier. A prune that
    brings the prompt under the line saves that on the whole prompt, not only the read rate
    of what it removed: the closed form counts it, and the disagreement names it."""
    reads = [Turn(f"Read {n}.", [Call("read_file", {"path": f"m{n}.py"},
                                      gen.filler(40_000, n))]) for n in range(15)]
    turns = [*reads, *(Turn(f"Test {n}.", [Call("run_tests", {}, "FAILED")]) for n in range(14))]
    session = build_session([*turns, Turn("Done.")], provider="anthropic", tools=[])
    at = 16  # the second test run: the 15 reads are in its prompt
    strategy = whatif_strategy(at, Selector.parse("older-than:15"), False)  # the first 2 reads
    rows, records = breakeven_session(session, [strategy])
    row = _only(rows)
    sent = next(r for r in records if r.request_index == at).request.total
    without = sent + row.removed_tokens
    assert sent < 200_000 < without  # the prune crosses the line
    read = _per_token("claude-sonnet-4-5", "anthropic", "cache_read")
    assert read == Decimal("0.0000003")
    # 0.60/M read above 200k against 0.30/M below
    assert row.saving_per_request_usd == row.removed_tokens * read + without * read
    assert "long-context tier" in row.disagreement
    # ~8 requests (removed × read rate alone said ~125); the simulation, with the write
    # premium, 10
    assert row.breakeven_closed_form is not None and row.breakeven_closed_form < 10
    assert row.breakeven_simulated is not None and row.breakeven_simulated <= 12


def test_the_counterfactual_is_priced_under_the_recorded_call_s_price_variant() -> None:
    """A call billed under a price variant (here US-only inference, × 1.1 on every rate of
    Sonnet 4.6) prices its counterfactual under it too: every money field is × 1.1. The
    counterfactual's markers used to carry only the time and ids: billed at standard rates
    against the strategy's × 1.1, the rewrite looked 10 % cheaper than it was."""

    def session(context: dict[str, str] | None):
        built = build_session(
            [
                Turn("Reading.", [Call("read_file", {"path": "a.py"}, gen.filler(3000, 3))]),
                Turn("More.", [Call("read_file", {"path": "b.py"}, gen.filler(900, 4))]),
                Turn("Again.", [Call("read_file", {"path": "c.py"}, "x = 1\n")]),
                Turn("Done."),
            ],
            provider="anthropic",
            model="claude-sonnet-4-6",
            tools=[],
        )
        for marker in built.requests():
            marker.price_context = context
        return built

    def row(context: dict[str, str] | None):
        edit = whatif_strategy(2, Selector.parse("older-than:1"), False)
        return _only(breakeven_session(session(context), [edit])[0])

    standard, us = row(None), row({"inference_geo": "us"})
    assert standard.simulated_net_usd != 0
    for field in ("simulated_net_usd", "rewrite_cost_usd", "saving_per_request_usd"):
        assert getattr(us, field) == getattr(standard, field) * Decimal("1.1"), field
    assert us.breakeven_simulated == standard.breakeven_simulated


# --- head vs tail ---------------------------------------------------------------------------


def _head_tail_session(provider: str):
    """A big result early (fetch_a), four reads, the same-sized big result late (fetch_b),
    then six short turns: 13 requests."""
    body = gen.filler(6000, 11)
    turns = [Turn("Fetching.", [Call("fetch_a", {"id": "1"}, "trace A\n" + body)])]
    turns += [
        Turn(f"Step {i}.", [Call("read_file", {"path": f"src/m{i}.js"}, gen.filler(1200, 20 + i))])
        for i in range(4)
    ]
    turns.append(Turn("Fetching.", [Call("fetch_b", {"id": "1"}, "trace B\n" + body)]))
    turns += [
        Turn(f"Later {i}.", [Call("read_file", {"path": f"src/n{i}.js"}, gen.filler(300, 40 + i))])
        for i in range(6)
    ]
    turns.append(Turn("Done."))
    return build_session(turns, provider=provider, tools=[])


AT = 7  # fetch_b's result was sent once (request 6): it is cached, and edited at request 7


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize(
    ("head", "tail"),
    [("tool:fetch_a", "tool:fetch_b"), ("messages:1-2", "messages:11-12")],
    ids=["tool", "messages"],
)
def test_prune_at_the_head_costs_more_than_at_the_tail(provider, head, tail) -> None:
    session = _head_tail_session(provider)
    found = {}
    for side, selector in (("head", head), ("tail", tail)):
        rows, records = breakeven_session(session, [whatif_strategy(AT, Selector.parse(selector),
                                                                    False)])
        row = _only(rows)
        total = sum((r.cost_usd for r in records), Decimal(0))
        found[side] = (row, total)
    (h, head_total), (t, tail_total) = found["head"], found["tail"]
    assert h.request_index == t.request_index == AT
    # Same tokens removed, so the same closed-form saving per request...
    assert h.removed_tokens == t.removed_tokens > 1000
    assert h.saving_per_request_usd == t.saving_per_request_usd
    # ...but the head edit re-sends everything after it.
    assert h.first_edit_token < t.first_edit_token
    assert h.surviving_tokens > 10 * t.surviving_tokens
    assert h.rewrite_cost_usd > 10 * t.rewrite_cost_usd
    assert h.breakeven_closed_form > t.breakeven_closed_form
    # Simulated: the tail edit pays back on its own request, the head one later or never.
    assert t.breakeven_simulated == 0 and t.simulated_net_usd > 0
    assert h.breakeven_simulated is None or h.breakeven_simulated > t.breakeven_simulated
    assert h.simulated_net_usd < 0 < t.simulated_net_usd
    # Over the same horizon (the whole log), the head edit costs more.
    assert head_total > tail_total


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_counterfactual_sends_the_same_hidden_prefix_as_the_recorded_request(provider) -> None:
    """A real log's adapter estimates a prefix the log does not hold (`hidden_prefix_tokens`).
    The run without the rewrite must send it too: without it, that run's prompt parted from
    the cache at its first token, read nothing, and every rewrite paid back at once."""
    def rows(hidden: int):
        session = _head_tail_session(provider)
        if hidden:
            session.header.hidden_prefix_tokens = hidden
        return [
            _only(breakeven_session(session, [whatif_strategy(AT, Selector.parse(sel), False)])[0])
            for sel in ("tool:fetch_a", "tool:fetch_b")
        ]

    plain, hidden = rows(0), rows(3000)
    for without, with_hidden in zip(plain, hidden, strict=True):
        assert with_hidden.first_edit_token == without.first_edit_token + 3000
        assert with_hidden.breakeven_simulated == without.breakeven_simulated
        assert with_hidden.disagreement == without.disagreement
        assert "not cached past the edit" not in with_hidden.disagreement
    assert hidden[0].breakeven_simulated is None and hidden[0].simulated_net_usd < 0  # the head
    # The tail: the same saving, up to where OpenAI's 128-token steps fall once the prefix
    # moved them (on each request of the horizon, now followed to its end).
    tail, plain_tail = hidden[1], plain[1]
    assert tail.simulated_net_usd > 0 and tail.horizon == plain_tail.horizon
    per_token = tail.rewrite_cost_usd / tail.surviving_tokens  # uncached − cache-read rate
    steps = 0 if provider == "anthropic" else 128 * tail.horizon
    assert abs(tail.simulated_net_usd - plain_tail.simulated_net_usd) <= steps * per_token


def test_tail_prune_of_a_result_never_sent_is_no_rewrite() -> None:
    """Clearing the newest result at the request that first shows it rewrites nothing the
    cache held: no break-even row."""
    session = _head_tail_session("anthropic")
    rows, _ = breakeven_session(session, [whatif_strategy(6, Selector.parse("tool:fetch_b"),
                                                          False)])
    assert rows == []


# --- compactions: the summarizer's own cost --------------------------------------------------


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_compaction_includes_summarizer_cost(provider) -> None:
    session = gen.deterministic_session(provider)
    edit = whatif_strategy(6, None, True)
    rows, records = breakeven_session(session, ["baseline", edit])
    row = _only(rows)
    assert (row.strategy, row.request_index, row.event) == (edit.name, 6, "compaction")
    summarizers = [r for r in records if r.kind == "summarizer"]
    assert [(r.strategy, r.request_index) for r in summarizers] == [(edit.name, 6)]
    assert row.summarizer_cost_usd > 0
    assert row.summarizer_cost_usd == summarizers[0].cost_usd
    # The summarizer is sent the cut transcript (compact-at's): it parts from the main thread's
    # prompts at the first item cut (message 4), before anything they cached.
    assert row.summarizer_cache_read == summarizers[0].outcome.cache_read == 0
    assert summarizers[0].outcome.miss_cause == "prefix edited at message 4"
    assert "summary cost" in row.disagreement
    # The simulation counts the summary: with no payback before the log ends, its net is the
    # whole-run difference (summarizer call included).
    assert row.breakeven_simulated is None
    assert row.horizon == 12 - 6

    def total(name):
        return sum((r.cost_usd for r in records if r.strategy == name), Decimal(0))

    assert row.simulated_net_usd == total("baseline") - total(edit.name)


def test_strategy_compaction_reports_summary_cost_and_prunes_do_not() -> None:
    """(The summarizer is sent the whole transcript here, so that it shares the main prefix
    and reads it from the cache; by default it is sent the seed study's cut transcript.)"""
    session = gen.deterministic_session("anthropic")
    rows, _ = breakeven_session(session, [
        "compact-at-12000-structured[output_chars=0,argument_chars=0]", "age-truncate-500-keep-3"
    ])
    compactions = [r for r in rows if r.event == "compaction"]
    agings = [r for r in rows if r.event == "aging"]
    assert compactions and agings
    for r in compactions:
        assert r.summarizer_cost_usd > 0 and r.summarizer_cache_read > 0
        assert "summary cost" in r.disagreement
    for r in agings:
        assert r.summarizer_cost_usd == 0 and r.summarizer_cache_read == 0
        assert "summary cost" not in r.disagreement


# --- `replay breakeven`: the JSON contract ---------------------------------------------------

STRATEGIES = "age-truncate-500-keep-3,compact-at-12000-structured,sliding-10,truncate-500"


@pytest.fixture(scope="module")
def run42_json(invoke):
    result = invoke("breakeven", RUN42, "-s", STRATEGIES, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout, parse_float=Decimal)


def test_breakeven_json_rows(run42_json) -> None:
    rows = run42_json["breakeven"]
    assert run42_json["log"] == str(RUN42)
    assert rows
    assert {r["strategy"] for r in rows} == {
        "age-truncate-500-keep-3", "compact-at-12000-structured", "sliding-10"
    }  # truncate-500 is append-only: it never rewrites
    for r in rows:
        assert set(r) >= BREAKEVEN_KEYS, BREAKEVEN_KEYS - set(r)
        for key in ("request_index", "first_edit_token", "removed_tokens", "surviving_tokens"):
            assert isinstance(r[key], int) and r[key] >= 0, key
        assert r["request_index"] > 0
        assert r["event"] in {"aging", "compaction", "drop"}
        assert isinstance(r["rewrite_cost_usd"], Decimal | int)
        assert isinstance(r["saving_per_request_usd"], Decimal | int)
        closed = r["breakeven_closed_form"]
        assert closed is None or isinstance(closed, Decimal | int)
        assert r["breakeven_simulated"] is None or isinstance(r["breakeven_simulated"], int)
    never = [r for r in rows if r["breakeven_simulated"] is None]
    paid = [r for r in rows if r["breakeven_simulated"] is not None]
    assert never and paid  # both cases appear on the sample run
    for r in never:
        assert r["simulated_net_usd"] < 0
    for r in paid:
        assert r["simulated_net_usd"] >= 0
        assert 0 <= r["breakeven_simulated"] < r["horizon"]


def test_breakeven_json_rows_follow_the_closed_form(run42_json) -> None:
    """rewrite = surviving × (uncached − read), saving = removed × read, closed = their ratio,
    at gemini-2.5-flash's rates (the sample run's model)."""
    in_rate = _per_token("gemini-2.5-flash", "google", "uncached")
    read_rate = _per_token("gemini-2.5-flash", "google", "cache_read")
    assert (in_rate, read_rate) == (Decimal("0.0000003"), Decimal("0.00000003"))
    for r in run42_json["breakeven"]:
        rewrite = r["surviving_tokens"] * (in_rate - read_rate)
        saving = r["removed_tokens"] * read_rate
        assert r["rewrite_cost_usd"] == rewrite
        assert r["saving_per_request_usd"] == saving
        if saving:
            assert abs(r["breakeven_closed_form"] - rewrite / saving) <= Decimal("0.005")
        else:
            assert r["breakeven_closed_form"] is None


def test_breakeven_table_says_never(invoke) -> None:
    result = invoke("breakeven", RUN42, "-s", "compact-at-12000-structured", "-q")
    assert result.exit_code == 0, result.stderr
    assert "break-even" in result.stdout
    assert "never" in result.stdout and "summary cost" in result.stdout
    assert "no rewrite" not in result.stdout
    # A strategy that never rewrites: the table says why it is empty.
    result = invoke("breakeven", RUN42, "-s", "baseline", "-q")
    assert result.exit_code == 0 and "no rewrite: no strategy named a rewrite" in result.stdout


def test_breakeven_takes_the_strategy_options_of_run(invoke) -> None:
    """`--set` (checked, and naming the strategy it changed) as `replay run` takes it."""
    result = invoke("breakeven", RUN42, "-s", "sliding-10", "--set", "sliding.messages=6",
                    "--format", "json", "-q")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["breakeven"]
    assert rows and {r["strategy"] for r in rows} == {"sliding-10[messages=6]"}
    bad = invoke("breakeven", RUN42, "-s", "sliding-10", "--set", "sliding.nosuch=6", "-q")
    assert bad.exit_code == 2 and "no parameter 'nosuch'" in bad.stderr


def test_every_disagreement_is_explained(run42_json) -> None:
    """Where the closed form says the rewrite takes requests to pay back but the simulation says
    it paid back at once, the row says why (here: the request without the rewrite would not
    have read the edited part from the cache either)."""
    rows = run42_json["breakeven"]
    at_once = [r for r in rows if r["breakeven_simulated"] == 0
               and (r["breakeven_closed_form"] or 0) > 1]
    assert at_once  # age-truncate #6, sliding-10 #5-6 on the sample run
    for r in at_once:
        assert "not cached past the edit" in r["disagreement"], r


def test_breakeven_table_signs_money_before_the_dollar(invoke) -> None:
    result = invoke("breakeven", RUN42, "-s", "sliding-10", "-q")
    assert result.exit_code == 0, result.stderr
    assert "-$0.000" in result.stdout and "$-" not in result.stdout


def test_an_idle_gap_past_the_ttl_is_named_in_the_disagreement() -> None:
    """The closed form ignores TTLs: a rewrite followed by an idle gap longer than the cache's
    5-minute TTL says so in `disagreement`; the same log without the gap does not."""
    def row(gap_s: float):
        session = _head_tail_session("anthropic")
        events, marker = session.events, 0
        shift = timedelta(seconds=gap_s)
        for n, e in enumerate(events):
            if isinstance(e, RequestMarker):
                marker += 1
            if marker > AT + 1:  # from the request after the edit on, `gap_s` later
                events[n] = e.model_copy(update={"ts": e.ts + shift})
        return _only(breakeven_session(
            session, [whatif_strategy(AT, Selector.parse("tool:fetch_a"), False)]
        )[0])

    assert "TTL expiry" not in row(0).disagreement
    assert "TTL expiry" in row(600).disagreement


def test_a_horizon_limit_bounds_each_comparison_and_says_so() -> None:
    """`horizon=N` follows each rewrite over at most N requests (the work of every rewrite
    replaying the rest of the log is rewrites × requests); a limit past every horizon changes
    nothing."""
    session = read_log(RUN42)
    name = ["age-truncate-500-keep-3"]
    full, _ = breakeven_session(session, name)
    capped, _ = breakeven_session(session, name, horizon=2)
    assert [r.request_index for r in capped] == [r.request_index for r in full]
    for whole, short in zip(full, capped, strict=True):
        assert short.horizon == min(2, whole.horizon)
        limited = "compared over 2 requests only (horizon limit)" in short.disagreement
        assert limited == (whole.horizon > 2)
        if whole.horizon <= 2:
            assert short == whole
    assert breakeven_session(session, name, horizon=len(session.requests()))[0] == full


def test_each_pair_of_differing_blocks_is_tokenized_once_per_strategy(monkeypatch) -> None:
    """Each rewrite replays the rest of the log without it, and those replays part at the same
    pairs of blocks (an output and its truncated version) again and again: the tokens a pair
    shares are counted once per strategy (`remembered_block_pairs`), and the memo is gone
    after."""
    seen: Counter[tuple[str, str]] = Counter()
    real = TokenCounter.shared_tokens

    def spy(self, a: str, b: str) -> int:
        seen[a, b] += 1
        return real(self, a, b)

    monkeypatch.setattr(TokenCounter, "shared_tokens", spy)
    rows, _ = breakeven_session(read_log(RUN42), ["age-truncate-500-keep-3"])
    assert len(rows) > 3 and seen
    assert max(seen.values()) == 1
    assert _diff._PAIRS.get() is None


@pytest.mark.parametrize(
    "strategy", ["age-truncate-500-keep-3", "compact-at-12000-structured", "tool-aging-keep-3"]
)
def test_the_block_pair_memo_changes_no_row(monkeypatch, strategy) -> None:
    """Break-even with the memo of block pairs gives the rows it gives without it."""
    session = read_log(RUN42)
    remembered, _ = breakeven_session(session, [strategy])
    monkeypatch.setattr(_breakeven, "remembered_block_pairs", contextlib.nullcontext)
    plain, _ = breakeven_session(session, [strategy])
    assert remembered and remembered == plain



def test_each_store_snapshot_is_copied_once(monkeypatch) -> None:
    """The run copies the cache store before each rewrite; the counterfactual of that rewrite
    takes the copy over instead of copying it again (the second copy was ~5% of the time)."""
    copies = Counter()
    real = copy.deepcopy

    def spy(x, memo=None, _nil=[]):  # noqa: B006 (deepcopy's own signature)
        if isinstance(x, CacheStore):
            copies["store"] += 1
        return real(x, memo, _nil)

    monkeypatch.setattr(copy, "deepcopy", spy)
    rows, records = breakeven_session(read_log(RUN42), ["age-truncate-500-keep-3"])
    assert rows and copies["store"] == sum(1 for r in records if r.events)
    assert all(r.store_before is None for r in records)


class _CountingSubs(dict):
    walked = 0

    def get(self, key, default=None):
        self.walked += 1
        return super().get(key, default)


def test_a_counterfactual_view_walks_only_what_the_previous_view_did_not_start_with() -> None:
    """Each request of a rewrite's horizon puts the originals back in its view: the items the
    view starts with as the previous one did keep the substitutes found then (the walk over
    every item of every view of every horizon was ~8% of the time); the result is the view
    substituted in full."""
    items = [UserItem(f"u{n}") for n in range(6)]
    short, original = UserItem("short"), UserItem("original")
    subs = _CountingSubs({id(short): original})
    first = [items[0], short, items[1], items[2]]
    done = _breakeven._substituted(subs, first, None, [])
    assert done == [items[0], original, items[1], items[2]] and subs.walked == 4
    subs.walked = 0
    second = [items[0], short, items[1], items[3], items[4]]  # parts at item 3
    again = _breakeven._substituted(subs, second, first, done)
    assert again == [subs.get(id(x), x) for x in second] and again is not done
    assert subs.walked == 2 + len(second)  # (the check above walked the whole view)
    assert done == [items[0], original, items[1], items[2]]  # the previous list is unchanged
    assert first == [items[0], short, items[1], items[2]]


def _store_of(provider: str, model: str) -> CacheStore:
    """The cache store a replay of run42 leaves, on `provider`."""
    config = ReplayConfig(provider=provider, model=model, pricer=Pricer())
    run = _Run(read_log(RUN42), resolve(["age-truncate-500-keep-3"])[0], config)
    run.run()
    return run.store


def _contents(store: CacheStore) -> tuple:
    prompt = lambda p: (p.ids().tolist(), p.cums().tolist(), p.last_use, p.ready_at,  # noqa: E731
                        p.ttl, p.writer, p.created, p.max_lifetime, p.length, p.head)
    extra = {k: prompt(v) if isinstance(v, CachedPrompt) else v for k, v in store.extra.items()}
    prompts = {k: [prompt(p) for p in v] for k, v in store.prompts.items()}
    lengths = {k: v.bits.tolist() for k, v in store.lengths.items()}
    return store.entries, prompts, extra, store.scopes, lengths


@pytest.mark.parametrize(
    ("provider", "model"),
    [("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5"), ("deepseek", "deepseek-chat")],
)
def test_a_store_snapshot_is_a_deep_copy_made_flat(monkeypatch, provider, model) -> None:
    """Break-even snapshots the cache store before every rewrite, and the store keeps every
    entry written: copied the generic way (a `deepcopy` call per key, entry and field), the
    snapshots took ~8% of the time. A snapshot copies each entry flat (its fields are
    immutable), yet is the deep copy it was: equal, sharing nothing mutable, a prompt that
    `extra` names still the one in `prompts`."""
    store = _store_of(provider, model)
    generic = copy.deepcopy(_contents(store))
    calls = Counter()
    real = copy._reconstruct  # what a generic deep copy builds each copied object with

    def spy(*args, **kwargs):
        calls["built"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(copy, "_reconstruct", spy)
    snapshot = copy.deepcopy(store)
    monkeypatch.undo()
    prompts = sum(map(len, store.prompts.values()))
    assert len(store.entries) + prompts >= 9
    assert calls["built"] <= len(store.extra), calls
    assert _contents(snapshot) == _contents(store) == generic
    for key, entry in store.entries.items():
        assert snapshot.entries[key] is not entry
    originals = {id(p) for ps in store.prompts.values() for p in ps}
    copies = {id(p) for ps in snapshot.prompts.values() for p in ps}
    assert not originals & copies
    # A prompt held as where it parts from a newer one (`CachedPrompt.rebase`) names that one's
    # copy (an anchor outside the lists is copied once, as the prompts naming it are).
    pairs = [(p, c) for k, ps in store.prompts.items()
             for p, c in zip(ps, snapshot.prompts[k], strict=True)]
    anchors = [(p, c) for p, c in pairs if p.anchor is not None]
    assert bool(anchors) == (provider != "anthropic")
    for p, c in anchors:
        assert c.anchor is not p.anchor and c.anchor.ids().tolist() == p.anchor.ids().tolist()
        if id(p.anchor) in originals:
            assert id(c.anchor) in copies
    named = [key for key, value in store.extra.items() if id(value) in originals]
    assert all(id(snapshot.extra[key]) in copies for key in named)
    assert named or provider == "anthropic"
    for model_name, index in store.lengths.items():
        assert snapshot.lengths[model_name].bits is not index.bits
        assert snapshot.scopes[model_name] is not store.scopes[model_name]
    assert not set(map(id, store.extra.values())) & set(map(id, snapshot.extra.values()))


def test_counterfactuals_reuse_the_run_s_session_facts_and_markers(monkeypatch) -> None:
    """A rewrite's counterfactual needs none of the session's facts (outputs, head fields)
    the run gathered: it shares the run's instead of gathering its own, and it sends the
    recorded calls' own markers (no marker is made per rewrite and request of its horizon)."""
    built: Counter[str] = Counter()
    real_facts, real_marker = _replay._SessionFacts.__init__, _breakeven.RequestMarker

    def facts(self, *args, **kwargs) -> None:
        built["facts"] += 1
        real_facts(self, *args, **kwargs)

    def marker(*args, **fields):
        built["markers"] += 1
        return real_marker(*args, **fields)

    monkeypatch.setattr(_replay._SessionFacts, "__init__", facts)
    monkeypatch.setattr(_breakeven, "RequestMarker", marker)
    session = read_log(RUN42)
    with_unlogged_context(session, ReplayConfig())  # (the fit's run, made once, gathers its own)
    built.clear()
    rows, records = breakeven_session(session, ["age-truncate-500-keep-3"])
    assert len(rows) > 3
    assert built == {"facts": 1}


# --- shares of one strategy's rewrites (`--workers`) -----------------------------------------


@given(st.lists(st.integers(0, 500), max_size=60), st.integers(1, 6))
def test_split_gives_each_rewrite_to_one_share_of_about_the_same_work(steps, shares):
    parts = _breakeven.split(steps, shares)
    assert len(parts) == shares
    assert sorted(n for part in parts for n in part) == list(range(len(steps)))
    assert all(part == sorted(part) for part in parts)
    loads = [sum(max(1, steps[n]) for n in part) for part in parts]
    # Longest first, each to the least loaded: no share exceeds another by more than the
    # longest rewrite.
    assert max(loads) - min(loads) <= max([1, *steps])
    assert _breakeven.split(steps, shares) == parts


def test_the_highest_block_id_before_each_record_counts_the_first_record_s_blocks() -> None:
    """`_ids_before`: the highest block id the records before each one sent, the first
    record's included (ids start at 0); unknown (-1) from a record whose blocks were released."""
    from types import SimpleNamespace

    import numpy as np

    def record(ids):
        block_ids = None if ids is None else np.array(ids, dtype=np.int64)
        return SimpleNamespace(request=SimpleNamespace(block_ids=block_ids))

    records = [record([0, 2]), record([0, 1, 4]), record([]), record(None), record([9])]
    assert _breakeven._ids_before(records) == [0, 2, 4, 4, -1]

def test_a_config_that_releases_block_arrays_gives_the_same_rows() -> None:
    """`keep_blocks=False` (what `replay run` sets where no record comes back) would release the
    prompts every counterfactual is diffed against: break-even keeps them, and its rows are the
    default config's (it raised a TypeError at the first rewrite)."""
    session = _reading_session(7, gen.filler(3000, 1))
    rows, _ = breakeven_session(session, ["age-truncate-500-keep-3"])
    released, _ = breakeven_session(session, ["age-truncate-500-keep-3"],
                                    ReplayConfig(keep_blocks=False))
    assert rows and released == rows

def test_split_hands_out_the_longest_rewrite_first() -> None:
    """By hand: rewrites of 1, 1, 1 and 5 requests on two shares. Longest first, each to the
    share with the least so far: 5 → share 0; then 1, 1, 1 → share 1 (loads 5 and 3). Shortest
    first would end with loads 2 and 6: the 5-request rewrite last, on a loaded share."""
    assert _breakeven.split([1, 1, 1, 5], 2) == [[3], [0, 1, 2]]


def test_each_rewrite_s_steps_are_the_horizon_its_analysis_compares():
    """(What shares are balanced by, known before any rewrite is analysed.)"""
    session = read_log(RUN42)
    config = _breakeven.breakeven_config(session, None)
    for named in resolve("all"):
        for horizon in (None, 2):
            with _breakeven.strategy_rewrites(session, named, config, horizon) as rewrites:
                rows = rewrites.analyse()
                assert [rewrites.steps[n] for n, _ in rows] == [r.horizon for _, r in rows]


def test_the_shares_of_a_strategy_s_rewrites_are_its_rows():
    session = read_log(RUN42)
    config = _breakeven.breakeven_config(session, None)
    [named] = resolve("age-truncate-500-keep-3")
    with _breakeven.strategy_rewrites(session, named, config, None) as rewrites:
        whole = rewrites.analyse()
    assert len(whole) > 3
    for shares in (2, 3, len(whole) + 1):
        got = []
        for share in range(shares):
            with _breakeven.strategy_rewrites(session, named, config, None) as rewrites:
                got += rewrites.analyse(share, shares)
        assert sorted(got, key=lambda placed: placed[0]) == whole


def test_break_even_counting_records_into_tables_keeps_none_and_the_same_rows():
    """(`replay breakeven` needs the records only for its notes: counted strategy by strategy,
    one strategy's records are held at a time.)"""
    from replay.engine._results import ResultTables

    session = read_log(RUN42)
    names = "recorded,age-truncate-500-keep-3,compact-at-12000-structured"
    rows, records = breakeven_session(session, names)
    tables = ResultTables(per_turn=False)
    counted_rows, kept = breakeven_session(session, names, tables=tables)
    assert (counted_rows, kept) == (rows, [])
    whole = ResultTables.of(records)
    assert tables.summary().equals(whole.summary())
    assert (tables.models, tables.price_warnings, tables.no_ttl_choice) == (
        whole.models, whole.price_warnings, whole.no_ttl_choice)


@pytest.mark.parametrize(("provider", "named"), [("anthropic", True), ("openai", False)])
def test_disagreement_names_a_prefix_the_rewritten_request_could_not_read(provider,
                                                                          named) -> None:
    """The closed form counts everything before the edit read from the cache. A result edited
    more than 20 blocks before the end is out of Anthropic's lookback: the rewritten request
    reads none of it, and the row says so (it was silent). OpenAI reads up to the edit, to
    its 128-token step: nothing to name."""
    turns = [Turn("Reading.", [Call("read_file", {"path": "big.py"}, gen.filler(3000, 1))]),
             Turn("Tracing.", [Call("fetch", {"id": "1"}, gen.filler(2000, 2))])]
    turns += [Turn(f"Step {i}.", [Call("run", {"n": i}, f"ok {i}")]) for i in range(12)]
    turns.append(Turn("Done."))
    at = len(turns) - 1
    rows, records = breakeven_session(build_session(turns, provider=provider),
                                      [whatif_strategy(at, Selector.parse("tool:fetch"), False)])
    row = _only(rows)
    read = next(r.outcome.cache_read for r in records if r.request_index == at)
    assert row.first_edit_token > 1024
    said = (
        f"read {read:,} of the {row.first_edit_token:,} tokens billed before the edit from the "
        "cache"
    )
    assert (said in row.disagreement) == named, row.disagreement
    assert (read == 0) == named


def test_a_rewrite_that_saved_nothing_has_not_paid_back() -> None:
    # "Until the simulated saving turns positive": a net of exactly $0 is no payback.
    zero = Decimal(0)
    assert _breakeven._account(zero, None, zero, 0) == (zero, None)
    assert _breakeven._account(zero, None, Decimal("0.01"), 2) == (Decimal("0.01"), 2)
    assert _breakeven._account(Decimal("0.01"), 2, Decimal("-0.01"), 3) == (zero, None)


def test_a_repeated_rewrite_label_on_a_view_that_only_grew_is_no_rewrite() -> None:
    """A strategy that names its state at every request (a clearing it keeps), on a request
    whose prefix the log itself broke (a model switch here), rewrote nothing: no row (on the pi
    large-session sample, 26 rows of "pays back at once, net $0")."""

    def build() -> object:
        def labelled(history, ctx):
            return View(list(history), [], [RewriteEvent("clear", "3 results cleared")])

        return labelled

    strategy = _plugin("label", build, "append-only")
    session = _reading_session(3, "x")
    markers = [e for e in session.events if isinstance(e, RequestMarker)]
    markers[2].model, markers[2].provider = "gpt-5", "openai"  # the log switches model
    rows, records = breakeven_session(session, [strategy])
    assert [r.diff.is_break for r in records] == [False, False, True, True]
    assert rows == []


def test_a_placeholder_made_again_in_the_same_words_is_no_rewrite() -> None:
    """A strategy that builds its cleared results anew at every request (new objects, the same
    placeholder text) changes no prompt after the first clearing: one row, at the request that
    cleared, not one per request that re-made the placeholder (a row is a request where the
    strategy rewrote earlier context; these send it as the request before did)."""
    import dataclasses

    def build() -> object:
        def clear_first(history, ctx):
            if ctx.request_index < 2:
                return View(list(history))
            first = next(n for n, x in enumerate(history) if isinstance(x, ToolResultItem))
            fresh = dataclasses.replace(history[first], output=PLACEHOLDER, original_chars=1)
            items = [*history[:first], fresh, *history[first + 1:]]
            return View(items, [], [RewriteEvent("clear", "first result cleared")])

        return clear_first

    strategy = _plugin("remake", build)
    session = _reading_session(4)
    rows, records = breakeven_session(session, [strategy])
    assert [r.diff.is_break for r in records] == [False, False, True, False, False]
    assert [row.request_index for row in rows] == [2]


def test_a_rewrite_names_each_kind_of_event_once() -> None:
    """`event` says what the strategy did (`clear`, `compaction,clear`…): two clearings at one
    request are one `clear`, not `clear,clear`."""

    def build() -> object:
        def clear_two(history, ctx):
            if ctx.request_index < 2:
                return View(list(history))
            results = [n for n, x in enumerate(history) if isinstance(x, ToolResultItem)][:2]
            items = [replace_output(x, PLACEHOLDER) if n in results else x
                     for n, x in enumerate(history)]
            events = [RewriteEvent("clear", "first result"), RewriteEvent("clear", "second")]
            return View(items, [], events if ctx.request_index == 2 else [])

        return clear_two

    strategy = _plugin("two", build)
    session = _reading_session(3)
    rows, _ = breakeven_session(session, [strategy])
    assert [(r.request_index, r.event) for r in rows] == [(2, "clear")]


def test_a_summary_inserted_before_earlier_items_is_a_rewrite() -> None:
    """A strategy that inserts a summary before items the previous request sent, without
    dropping any, changes that request's prefix: a (structural) rewrite with its row, not a
    view that only grew."""

    def build() -> object:
        def insert(history, ctx):
            if ctx.request_index < 2:
                return View(list(history))
            note = SummaryItem(text="Summary: the task so far.")
            events = [RewriteEvent("compaction", "a note")] if ctx.request_index == 2 else []
            return View([history[0], note, *history[1:]], [], events)

        return insert

    strategy = _plugin("note", build)
    session = _reading_session(3)
    rows, records = breakeven_session(session, [strategy])
    assert records[2].diff.is_break
    assert [(r.request_index, r.event) for r in rows] == [(2, "compaction")]


def test_a_compaction_that_also_stubs_a_result_it_keeps_is_compared_without_both() -> None:
    """The rewrite at a request is all it changed there: a compaction that also stubs a result
    it keeps (in place) is compared with the run without either, so its counterfactual at
    that request is the view before it plus what the history gained — here `baseline`'s
    (only the strategy's *later* rewrites in place are made in the counterfactual too)."""
    at = 3

    def build() -> object:
        kept: list = []
        covered = 0

        def fold_and_stub(history, ctx):
            nonlocal kept, covered
            if ctx.request_index < at:
                return View(list(history))
            if ctx.request_index == at:
                results = [n for n, x in enumerate(history) if isinstance(x, ToolResultItem)]
                p = results[-2]  # a result the request before sent too
                tail = [replace_output(x, "[stub]") if n == p else x
                        for n, x in enumerate(history) if n >= p - 1]
                kept = [history[0], SummaryItem(text="Summary: read the files."), *tail]
                covered = len(history)
                return View(kept, [], [RewriteEvent("compaction", "fold and stub")])
            return View([*kept, *history[covered:]])

        return fold_and_stub

    strategy = _plugin("foldstub", build)
    turns = [Turn(f"step {i}", [Call("read_file", {"path": f"f{i}.py"}, gen.filler(2_000, i))])
             for i in range(6)]
    session = build_session(turns + [Turn("done")], provider="anthropic")
    billed = [r.request.total - r.outcome.dropped_tokens
              for r in _Run(session, resolve(["baseline"])[0], ReplayConfig()).run()]
    rows, records = breakeven_session(session, [strategy])
    row = _only(rows)
    assert row.request_index == at
    sent = records[at].request.total - records[at].outcome.dropped_tokens
    assert row.removed_tokens == billed[at] - sent


def test_the_table_prints_the_closed_form_as_the_json_has_it() -> None:
    from replay.report._table import closed_form_text

    # `:g` kept 6 significant digits: 10604.25 read 10604.2, a million 1e+06.
    assert closed_form_text(10604.25) == "10,604.25"
    assert closed_form_text(1_000_000.0) == "1,000,000"
    assert [closed_form_text(x) for x in (0.0, 0.45, 2.5, None)] == ["0", "0.45", "2.5", "never"]


@pytest.mark.parametrize("logged_call", [False, True])
def test_the_agent_s_own_compaction_says_where_its_summary_cost_is(logged_call) -> None:
    """`recorded`'s row of a logged compaction has no summarizer call of its own (summary cost
    0): the disagreement says why, not an unexplained $0 (opencode logs the summarizing call
    as a request before it; Claude Code, pi and Codex do not log it)."""
    from replay.log import AssistantMessage, Compaction, ToolResult, UserMessage

    session = _reading_session(4)
    markers = [e for e in session.events if isinstance(e, RequestMarker)]
    at = session.events.index(markers[3])
    context = [e.id for e in session.events[:at]
               if isinstance(e, UserMessage | AssistantMessage | ToolResult)]
    compaction = Compaction(ts=markers[3].ts, summary="We read four files.", replaces=context)
    compaction.id, compaction.thread = "e9999", markers[3].thread
    session.events.insert(at, compaction)
    if logged_call:
        markers[2].compaction_call = True
    rows, _ = breakeven_session(session, ["recorded"])
    row = _only(rows)
    assert (row.request_index, row.event, row.summarizer_cost_usd) == (3, "compaction", 0)
    said = ("the logged request before it wrote the summary" if logged_call
            else "the log holds no call for its compaction")
    assert said in row.disagreement


VIEWER = ("claude_code/d-kimuson__claude-code-viewer__mock-global-claude-dir_projects_sample-"
          "project_5c0375b4.jsonl")


def test_a_rewrite_in_a_subagent_thread_that_ended_says_its_thread_ended() -> None:
    """A subagent's thread ends long before the log: its rows said "log ended before payback"
    while the log went on for six more requests."""
    from conftest import ROOT

    from replay import load

    path = ROOT.parent / "shared" / "samples" / VIEWER
    if not path.is_file():
        pytest.skip(f"real agent logs not found at {path.parent}")
    rows, _ = breakeven_session(load(path), ["age-truncate-500-keep-3"])
    why = {(r.thread == "main", r.disagreement.rsplit("; ", 1)[-1]) for r in rows
           if r.breakeven_simulated is None}
    assert why == {(True, "log ended before payback"),
                   (False, "its thread ended before payback")}


CODEX_PLANETFALL = ("codex/blackgirlbytes__planetfall-seed-signalkit__entire-checkpoints-v1__18_"
                    "e55e8a9e52_9_full.jsonl")


def test_a_read_past_the_edit_is_named_where_the_two_answers_differ() -> None:
    """retrieval-top-5 #21 on the Codex sample: closed form 5.75, simulated 0, and no reason
    given. The request read 4,010 tokens past its edit from an entry an earlier request of
    the strategy wrote, which the closed form bills uncached."""
    from conftest import ROOT

    from replay import load

    path = ROOT.parent / "shared" / "samples" / CODEX_PLANETFALL
    if not path.is_file():
        pytest.skip(f"real agent logs not found at {path.parent}")
    rows, _ = breakeven_session(load(path), ["retrieval-top-5"])
    (row,) = [r for r in rows if r.request_index == 21]
    assert (row.breakeven_closed_form, row.breakeven_simulated) == (5.75, 0)
    assert "4,010 past the edit: an earlier entry held part of the rewritten tail" in (
        row.disagreement)


def test_closed_form_rates_are_those_of_the_prompt_the_provider_bills(invoke) -> None:
    """Claude Code's client strips earlier thinking from the billed prompt: a request rendered
    at 198k+ tokens is billed for 171,324, under Sonnet 4.5's 200k line. Its closed-form
    rates were the >200k ones (2× too high)."""
    from test_adapters_common import SAMPLES

    logs = sorted((SAMPLES / "codex").glob("*a7_1156299398_0_full.jsonl"))
    if not logs:
        pytest.skip(f"real agent logs not found at {SAMPLES} (not checked in)")
    result = invoke("breakeven", str(logs[0]), "-s", "age-truncate-500-keep-3", "--provider",
                    "anthropic", "--model", "claude-sonnet-4-5", "--client", "claude-code",
                    "--horizon", "10", "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output, parse_float=Decimal)["breakeven"]
    row = next(r for r in rows if r["request_index"] == 194)
    surviving, removed = row["surviving_tokens"], row["removed_tokens"]
    assert row["rewrite_cost_usd"] == surviving * Decimal("0.0000027")
    assert row["saving_per_request_usd"] == removed * Decimal("0.0000003")


def test_the_closed_form_is_the_rounded_exact_quotient_of_the_figures_it_shows():
    """0.0302454 / 0.000072 = 420.075 exactly: 420.08 (as a float quotient, 420.07499…, it was
    rounded to 420.07). Every row: the quotient of its rewrite cost and saving, half up."""
    from decimal import ROUND_HALF_UP

    from test_breakeven_shift import _sample

    from replay import load

    path = _sample("pi", "large-session")
    rows, _ = breakeven_session(load(path), ["observation-mask-keep-100"], horizon=5)
    assert rows
    for r in rows:
        if r.saving_per_request_usd > 0:
            exact = r.rewrite_cost_usd / r.saving_per_request_usd
            assert r.breakeven_closed_form == float(exact.quantize(Decimal("0.01"), ROUND_HALF_UP))
    tie = next(r for r in rows if r.request_index == 84)
    assert (tie.rewrite_cost_usd, tie.saving_per_request_usd) == (
        Decimal("0.0302454"), Decimal("0.000072")
    )
    assert tie.breakeven_closed_form == 420.08


def _thinking_session(tmp_path, model: str):
    """A file read (12,000 characters) after a response without thinking, a test run after one
    that thinks, a new user turn (before which the provider may strip earlier thinking), and
    four more steps: `age-truncate-500-keep-3` truncates the read's output at the fourth."""
    from replay.log import read_log

    t0 = gen.BASE_TS
    lines: list[dict] = [{
        "type": "session", "format": "replay-log", "version": 1, "ts": t0.isoformat(),
        "session_id": "s", "agent": "test", "provider": "anthropic", "model": model,
        "system": "You are a coding agent. " + gen.filler(6_000, 99),
    }]
    clock = iter(range(1, 10_000))

    def add(**event):
        lines.append({"ts": (t0 + timedelta(seconds=10 * next(clock))).isoformat(), **event})

    def step(n: int, thinking: str | None, name: str, output: str) -> None:
        add(type="request", request_id=f"r{n}")
        blocks: list[dict] = [{"type": "thinking", "thinking": thinking, "signature": "s"}] \
            if thinking else []
        blocks.append({"type": "tool_call", "id": f"c{n}", "name": name, "arguments": {}})
        add(type="assistant", blocks=blocks, request_id=f"r{n}")
        add(type="tool_result", call_id=f"c{n}", tool_name=name, output=output)

    add(type="user", text="Fix the bug.")
    step(0, None, "read_file", gen.filler(12_000, 1))
    step(1, gen.filler(6_000, 2), "run_tests", "FAILED test_0")
    add(type="user", text="Look at the other file too.")
    for n in range(2, 7):
        step(n, None, "run_tests", f"FAILED test_{n} " + gen.filler(3_000, 10 + n))
    add(type="request", request_id="r7")
    add(type="assistant", blocks=[{"type": "text", "text": "Done."}], request_id="r7")
    path = tmp_path / f"{model}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return read_log(path)


def test_the_closed_form_counts_the_tokens_the_provider_bills(tmp_path) -> None:
    """Sonnet 4.5 strips earlier thinking at a new user turn; Sonnet 4.6 (same tokenizer, same
    prices) keeps it. The same rewrites on both. Where the stripped thinking lies after the edit
    (request 4), it is re-billed on 4.6 only: 4.5's surviving tokens are fewer by exactly what
    it stripped (counted in the rendered prompt they were equal, and the rewrite cost counted
    tokens nobody bills). Where it lies before the edit (request 6), the tokens billed before
    the edit, which the cache reads are compared with, are fewer by it."""
    rows, dropped = {}, {}
    for model in ("claude-sonnet-4-5", "claude-sonnet-4-6"):
        found, records = breakeven_session(_thinking_session(tmp_path, model),
                                           ["age-truncate-500-keep-3"])
        assert [r.request_index for r in found] == [4, 6, 7]
        rows[model] = {r.request_index: r for r in found}
        dropped[model] = next(r for r in records if r.request_index == 4).outcome.dropped_tokens
    stripping, keeping = rows["claude-sonnet-4-5"], rows["claude-sonnet-4-6"]
    stripped = dropped["claude-sonnet-4-5"]
    assert stripped > 0 == dropped["claude-sonnet-4-6"]
    assert stripping[4].first_edit_token == keeping[4].first_edit_token
    assert keeping[4].surviving_tokens - stripping[4].surviving_tokens == stripped
    assert stripping[4].removed_tokens == keeping[4].removed_tokens > 0
    assert stripping[4].rewrite_cost_usd < keeping[4].rewrite_cost_usd
    edit = stripping[6].first_edit_token
    assert f"of the {edit - stripped:,} tokens billed before the edit" in stripping[6].disagreement
    assert f"of the {edit:,} tokens billed before the edit" in keeping[6].disagreement


@pytest.mark.parametrize(
    "cost, saving, closed",
    [
        ("0.0302454", "0.000072", 420.08),  # 420.075 exactly: half up (a float read 420.07)
        ("0.0000125", "0.00001", 1.25),
        ("0.00000125", "0.00001", 0.13),  # 0.125: half up, not to even
        ("0.01", "0.03", 0.33),
        ("0.5", "0", None),
        ("0.5", "-0.1", None),
        ("0", "0.1", 0.0),
    ],
)
def test_the_closed_form_rounds_the_exact_quotient_half_up(cost, saving, closed) -> None:
    from replay.breakeven._breakeven import closed_form

    assert closed_form(Decimal(cost), Decimal(saving)) == closed


# --- the closed form's surviving tokens and saving (pinned by a mutation pass) ---------------


def _growing(at: int, extra: str) -> NamedStrategy:
    """From request `at` on, the first tool result is sent with `extra` appended (in place)."""
    from replay.strategies._view import ToolResultItem, replace_output

    def build() -> object:
        grown: dict = {}

        def grow(history, ctx):
            items = list(history)
            if ctx.request_index == at or grown:
                first = next(n for n, i in enumerate(items) if isinstance(i, ToolResultItem))
                grown.setdefault("item", replace_output(items[first], items[first].output + extra))
                items[first] = grown["item"]
            events = [RewriteEvent("truncate", "grown")] if ctx.request_index == at else []
            return View(items, [], events)

        return grow

    return _plugin("grow", build)


def test_a_rewrite_that_grows_the_prompt_over_the_tier_line_saves_nothing_by_the_closed_form():
    """The closed form's saving is removed tokens × read rate, plus the long-context tier the
    prompt without the rewrite is in where that tier is higher. A rewrite that makes the prompt
    larger removed nothing (0), and the prompt without it is in the lower tier: the saving is
    0, never, and no note says the prompt without it is "priced at a higher rate"."""
    reads = [Turn(f"Read {n}.", [Call("read_file", {"path": f"m{n}.py"}, gen.filler(40_000, n))])
             for n in range(14)]
    session = build_session([*reads, Turn("Done.")], provider="anthropic", tools=[])
    rows, records = breakeven_session(session, ["baseline", _growing(14, gen.filler(20_000, 99))])
    row = _only(rows)
    sent, without = (next(r.request.total for r in records
                          if r.request_index == 14 and r.strategy == name)
                     for name in ("grow", "baseline"))
    assert without < 200_000 < sent  # the rewrite crosses the line
    assert row.removed_tokens == 0
    assert row.saving_per_request_usd == 0 and row.breakeven_closed_form is None
    assert "long-context tier" not in row.disagreement


def test_an_edit_that_keeps_only_what_the_history_gained_re_bills_nothing() -> None:
    """`messages:0-4` at request 3 drops everything but the step the history gained since
    request 2 (the answer and its result, now items 0 and 1 of the view): every token after
    the edit is billed uncached with or without it, so nothing survives to be re-billed."""
    turns = [Turn(f"Step {i}.", [Call("read_file", {"path": f"f{i}.py"}, gen.filler(900, i))])
             for i in range(3)]
    for provider in ("anthropic", "openai"):
        session = build_session([*turns, Turn("Done.")], provider=provider, tools=[])
        edit = whatif_strategy(3, Selector.parse("messages:0-4"), False)
        rows, records = breakeven_session(session, [edit])
        row = _only(rows)
        sent = next(r for r in records if r.request_index == 3)
        assert [type(i).__name__ for i in sent.view] == ["AssistantItem", "ToolResultItem"]
        assert row.removed_tokens > 0
        assert row.surviving_tokens == 0, provider
        assert row.rewrite_cost_usd == 0 and row.breakeven_closed_form == 0.0


def test_thinking_stripped_from_what_the_history_gained_leaves_the_surviving_tokens(tmp_path):
    """At request 2 of the thinking session the history gained an answer that thinks, then a
    user turn: Sonnet 4.5 strips that thinking from the billed prompt, 4.6 keeps it. Pruning
    the read's result there re-bills the placeholder alone on both (9 tokens, the framing
    shared): the stripped thinking is in neither the billed prompt nor what it gained, and is
    not taken off twice."""
    surviving = {}
    for model in ("claude-sonnet-4-5", "claude-sonnet-4-6"):
        edit = whatif_strategy(2, Selector.parse("tool:read_file"), False)
        rows, records = breakeven_session(_thinking_session(tmp_path, model), [edit])
        stripped = next(r for r in records if r.request_index == 2).outcome.dropped_tokens
        assert (stripped > 0) == (model == "claude-sonnet-4-5")
        surviving[model] = _only(rows).surviving_tokens
    assert TokenCounter("claude-sonnet-4-5").count(PLACEHOLDER) == 9
    assert surviving == {"claude-sonnet-4-5": 9, "claude-sonnet-4-6": 9}


# --- the run without a rewrite still makes the strategy's later ones -------------------------


def _summarizing(at: dict[int, int]) -> NamedStrategy:
    """At each request `r` of `at`, history item `at[r]` (a tool result) is replaced in place,
    from then on, by the summary a summarizer call wrote of it."""
    from replay.strategies._view import SummarizerCall, replace_output

    name = "summarize-at-" + "-".join(map(str, at))

    def build() -> object:
        done: dict = {}

        def summarize(history, ctx):
            calls, events = [], []
            if ctx.request_index in at:
                n = at[ctx.request_index]
                done[n] = replace_output(history[n], f"summary of item {n}")
                calls = [SummarizerCall((history[n],), "Summarize this output.", done[n].output)]
                events = [RewriteEvent("truncate", f"summarized item {n}")]
            return View([done.get(n, i) for n, i in enumerate(history)], calls, events)

        return summarize

    spec = StrategySpec(family="summarize", pattern=name, build=build, cache_class="churn",
                        rule="summarize")
    return NamedStrategy(name, spec, {})


def test_a_later_rewrite_s_summarizer_call_is_in_both_runs() -> None:
    """The run without a rewrite still makes the strategy's later rewrites, their summarizer
    calls included: only the rewrite's own call is charged to it. Prompts stay below OpenAI's
    1,024-token minimum (nothing cached), so the run without the rewrite at 2 is exactly the
    strategy that makes only the one at 4, and the row's net is the difference of the two runs'
    costs from request 2 on, summarizer calls included."""
    turns = [Turn(f"Step {i}.", [Call("read_file", {"path": f"f{i}.py"}, gen.filler(300, i))])
             for i in range(5)]
    session = build_session([*turns, Turn("Done.")], provider="openai", tools=[])
    both, later = _summarizing({2: 2, 4: 4}), _summarizing({4: 4})
    rows, records = breakeven_session(session, [both, later])
    assert max(r.request.total for r in records) < 1024
    row = next(r for r in rows if r.strategy == both.name and r.request_index == 2)
    assert row.horizon == 4  # requests 2..5, to the end of the log

    def cost(name: str) -> Decimal:
        return sum((r.cost_usd for r in records if r.strategy == name and r.request_index >= 2),
                   Decimal(0))

    assert [r.request_index for r in records if r.kind == "summarizer"] == [2, 4, 4]
    assert row.simulated_net_usd == cost(later.name) - cost(both.name)


def _compacted_keeping_the_last_step(compaction: bool):
    """Seven read steps; the harness clears step 3's result from request 5 on; with
    `compaction`, the log compacts before request 4 everything but step 3 (its call and
    result stay after the summary), so the clearing is a rewrite in place right after it."""
    from replay.log import Compaction, ToolResult

    turns = [Turn(f"Step {i}.", [Call("read_file", {"path": f"src/f{i}.js"},
                                      gen.filler(3000, i))]) for i in range(7)]
    session = build_session([*turns, Turn("Done.")], provider="anthropic")
    markers = {e.request_id: n for n, e in enumerate(session.events)
               if isinstance(e, RequestMarker)}
    results = [n for n, e in enumerate(session.events) if isinstance(e, ToolResult)]
    third = session.events[results[3]]
    session.events[results[3]] = third.model_copy(
        update={"cleared_at": session.events[markers["req-006"]].ts})
    if compaction:
        at, kept = markers["req-005"], markers["req-004"]
        replaced = [e.id for e in session.events[:kept] if not isinstance(e, RequestMarker)]
        session.events.insert(at, Compaction(ts=session.events[at].ts, replaces=replaced,
                                             summary="SUMMARY " + gen.filler(800, 9)))
    return session


def test_a_compaction_is_weighed_against_the_run_that_clears_at_its_next_request() -> None:
    """As above, with the harness's clearing at the very request after the compaction: the
    run without the compaction clears there too, and the compaction's net is the difference
    of the two runs from request 4 on (it counted the clearing's saving as its own)."""
    session = _compacted_keeping_the_last_step(compaction=True)
    rows, _ = breakeven_session(session, "recorded")
    assert [(r.request_index, r.event) for r in rows] == [(4, "compaction"), (5, "prune")]
    compaction = rows[0]

    def cost_from(s, start):
        records = _replay.replay_session(s, "recorded")
        return sum((r.cost_usd for r in records if r.request_index >= start), Decimal(0))

    expected = cost_from(_compacted_keeping_the_last_step(compaction=False), 4) - cost_from(
        session, 4)
    assert compaction.horizon == 4 and expected > 0
    assert compaction.simulated_net_usd == expected


# --- what disagreement names, at its thresholds ----------------------------------------------


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_an_edit_of_what_the_request_adds_was_not_cached_past_it_either(provider) -> None:
    """A what-if that clears fetch_b's result at request 6, the request that first sends it:
    the run without the edit read exactly up to the edit (the previous request's prompt), so
    the closed form's "read from the cache" assumption fails, and the row says so."""
    from replay.breakeven._breakeven import breakeven_edit

    session = _head_tail_session(provider)
    edit = whatif_strategy(6, Selector.parse("tool:fetch_b"), False)
    rows, records = breakeven_edit(session, resolve("recorded")[0], edit, 6)
    row = _only(rows)
    recorded_read = next(r.outcome.cache_read for r in records
                         if r.strategy == "recorded" and r.request_index == 6)
    assert recorded_read == row.first_edit_token > 0  # read up to the edit, not past it
    assert f"not cached past the edit even without it ({recorded_read:,} read)" in (
        row.disagreement)


def _read_before_the_edit_session(middle_chars: int):
    """A 256-token prefix (below Anthropic's minimum: never cached) before fetch_a's result,
    then a read of `middle_chars`: what-if `tool:fetch_a` at request 3."""
    turns = [Turn("Fetching.", [Call("fetch_a", {"id": "1"}, gen.filler(2000, 11))]),
             Turn("Reading.", [Call("read_file", {"path": "m.py"}, gen.filler(middle_chars, 3))]),
             Turn("Again.", [Call("read_file", {"path": "n.py"}, "x = 1\n")]),
             Turn("Done.")]
    return build_session(turns, provider="anthropic", tools=[], system=gen.filler(600, 7))


@pytest.mark.parametrize(
    ("middle_chars", "tenths", "named"),
    [(2000, ">", True), (7250, "=", True), (7252, "<", False)],
)
def test_an_unread_prefix_is_named_from_a_tenth_of_the_surviving_tokens(middle_chars, tenths,
                                                                        named) -> None:
    """The rewritten request read none of the 256 tokens before the edit: named where they are
    at least a tenth of the surviving tokens (the closed form's error is then that large), not
    where the surviving suffix dwarfs them."""
    edit = whatif_strategy(3, Selector.parse("tool:fetch_a"), False)
    rows, records = breakeven_session(_read_before_the_edit_session(middle_chars), [edit])
    row = _only(rows)
    assert next(r.outcome.cache_read for r in records if r.request_index == 3) == 0
    unread = row.first_edit_token
    assert unread == 256
    sign = (unread * 10 > row.surviving_tokens) - (unread * 10 < row.surviving_tokens)
    assert sign == {">": 1, "=": 0, "<": -1}[tenths], (unread, row.surviving_tokens)
    said = "read 0 of the 256 tokens billed before the edit from the cache"
    assert (said in row.disagreement) == named, row.disagreement


def _toggling() -> NamedStrategy:
    """Caps the first tool result to its first line at request 2 only: request 3 sends it whole
    again (a rewrite in place back to what request 1 sent and cached)."""
    from replay.strategies._view import ToolResultItem, replace_output

    def build() -> object:
        capped: dict = {}

        def toggle(history, ctx):
            items = list(history)
            if ctx.request_index == 2:
                n = next(n for n, i in enumerate(items) if isinstance(i, ToolResultItem))
                line = items[n].output.split("\n")[0]
                items[n] = capped.setdefault("item", replace_output(items[n], line + "\n[cut]"))
            events = [RewriteEvent("truncate", "toggled")] if ctx.request_index in (2, 3) else []
            return View(items, [], events)

        return toggle

    return _plugin("toggle", build, "churn")


def _past_the_edit_session(chars: int) -> Session:
    """Three reads, the first of `chars` characters: `_toggling` caps it at request 2 only."""
    turns = [Turn("Reading.", [Call("read_file", {"path": "a.py"},
                                    "def a():\n" + gen.filler(chars, 3))]),
             Turn("More.", [Call("read_file", {"path": "b.py"}, gen.filler(600, 4))]),
             Turn("Again.", [Call("read_file", {"path": "c.py"}, gen.filler(600, 5))]),
             Turn("Done.")]
    return build_session(turns, provider="anthropic", tools=[], system=gen.filler(6000, 7))


@pytest.mark.parametrize(("chars", "named"), [(200, False), (1500, True)])
def test_a_read_past_the_edit_is_named_beyond_128_tokens(chars, named) -> None:
    """Request 3 reads request 1's entry, which holds the result it restores: past its edit.
    The closed form bills that uncached; the row names it where it is more than 128 tokens
    (OpenAI's step: less is within what the closed form can be read to)."""
    rows, records = breakeven_session(_past_the_edit_session(chars), [_toggling()])
    row = next(r for r in rows if r.request_index == 3)
    read = next(r.outcome.cache_read for r in records if r.request_index == 3)
    past = read - row.first_edit_token
    assert past > 0 and (past > 128) == named, past
    assert ("past the edit: an earlier entry held part of the rewritten tail" in
            row.disagreement) == named


def test_a_read_past_the_edit_is_named_only_beyond_the_grain(monkeypatch) -> None:
    """"Past the edit" is named from one token more than `_GRAIN`, not at exactly that many."""
    session = _past_the_edit_session(1500)
    rows, records = breakeven_session(session, [_toggling()])
    row = next(r for r in rows if r.request_index == 3)
    past = next(r.outcome.cache_read for r in records if r.request_index == 3) - (
        row.first_edit_token)
    for grain, named in ((past, False), (past - 1, True)):
        monkeypatch.setattr(_breakeven, "_GRAIN", grain)
        rows, _ = breakeven_session(session, [_toggling()])
        row = next(r for r in rows if r.request_index == 3)
        assert ("past the edit: an earlier entry" in row.disagreement) == named, grain


def test_an_unread_prefix_is_named_only_beyond_the_grain(monkeypatch) -> None:
    """The 256 tokens before the edit that nothing read are named where `_GRAIN` is below
    them, not where it equals them."""
    session = _read_before_the_edit_session(2000)
    said = "read 0 of the 256 tokens billed before the edit from the cache"
    for grain, named in ((256, False), (255, True)):
        monkeypatch.setattr(_breakeven, "_GRAIN", grain)
        edit = whatif_strategy(3, Selector.parse("tool:fetch_a"), False)
        row = _only(breakeven_session(session, [edit])[0])
        assert (said in row.disagreement) == named, grain


def test_a_rewrite_is_said_cut_by_a_later_one_only_where_it_did_not_pay_back(run42_json) -> None:
    """"A later rewrite ended the comparison" and "log ended before payback" explain a row
    that never paid back: sliding-10's drops at 5 and 6 pay back at once, before the next drop
    ends their comparison, and say neither."""
    rows = run42_json["breakeven"]
    end = len(read_log(RUN42).requests())
    cut = [r for r in rows if r["request_index"] + r["horizon"] < end]
    assert any(r["breakeven_simulated"] is not None for r in cut)
    for r in rows:
        said_cut = "a later rewrite ended the comparison" in r["disagreement"]
        said_end = "ended before payback" in r["disagreement"]
        never = r["breakeven_simulated"] is None
        assert said_cut == (never and r in cut), r
        assert said_end == (never and r not in cut), r


def test_a_one_hour_cache_write_is_a_cache_write_premium() -> None:
    """With `--ttl 1h` the edited request writes at the 1-hour rate only (2× the input rate,
    against 1.25× for 5 minutes): the closed form ignores that premium as well, and says so."""
    edit = whatif_strategy(AT, Selector.parse("tool:fetch_b"), False)
    for ttl in ("5m", "1h"):
        rows, records = breakeven_session(_head_tail_session("anthropic"), [edit],
                                          ReplayConfig(ttl=ttl))
        sent = next(r for r in records if r.request_index == AT).outcome
        assert (sent.cache_write_1h > 0, sent.cache_write_5m > 0) == (ttl == "1h", ttl == "5m")
        assert "cache-write premium" in _only(rows).disagreement, ttl


def test_the_break_even_frame_keeps_each_row_s_values_exactly() -> None:
    """The DataFrame of the rows (`replay.breakeven(...)`, the report): its columns are the
    row's fields in their order (the JSON's), every money column stays decimal, the closed
    form is the float the row holds (420.08, not a 32-bit float's 420.0799…), and counts are
    64-bit integers like every count column of the library."""
    from dataclasses import fields

    import polars as pl

    from replay.breakeven._frame import breakeven_frame
    from replay.engine._results import MONEY

    row = _breakeven.BreakEven(
        strategy="s", request_index=84, thread="main", event="aging", first_edit_token=51,
        removed_tokens=420, surviving_tokens=9, rewrite_cost_usd=Decimal("0.0302454"),
        saving_per_request_usd=Decimal("0.000072"), breakeven_closed_form=420.08,
        breakeven_simulated=3, simulated_net_usd=Decimal("-0.00042750"), horizon=7,
        summarizer_cost_usd=Decimal(0), summarizer_cache_read=0, disagreement="",
    )
    frame = breakeven_frame([row])
    assert frame.row(0, named=True)["breakeven_closed_form"] == 420.08
    assert frame.row(0, named=True)["rewrite_cost_usd"] == Decimal("0.0302454")
    ints = ["request_index", "first_edit_token", "removed_tokens", "surviving_tokens",
            "breakeven_simulated", "horizon", "summarizer_cache_read"]
    assert all(frame.schema[name] == pl.Int64 for name in ints)
    assert frame.columns == [f.name for f in fields(_breakeven.BreakEven)]
    money = [name for name in frame.columns if name.endswith("_usd")]
    assert len(money) == 4 and all(frame.schema[name] == MONEY for name in money)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_counterfactual_over_the_context_window_is_named(provider) -> None:
    """Without a compaction the prompt may outgrow the context window (the reason a harness
    compacts): those requests could not have been sent, so the saving credited there is not one
    the rewrite could make, and the row says how many (pi before-compaction: 117 of the 123
    requests after its first compaction were over Opus 4.5's 200k window, $10.77 credited, no
    word of it)."""
    turns = [
        Turn(f"step {i}", [Call("read_file", {"path": f"f{i}.py"}, gen.filler(2_000, i))])
        for i in range(8)
    ] + [Turn("done")]
    session = build_session(turns, provider=provider)
    baseline = _Run(session, resolve(["baseline"])[0], ReplayConfig()).run()
    billed = [r.request.total - r.outcome.dropped_tokens for r in baseline]
    # A window the run without the compaction at request 3 outgrows from request 6 on
    # (`over_window`: the billed prompt is larger than the window).
    window = billed[6] - 1
    rows, records = breakeven_session(
        session, [_folding_strategy(3)], ReplayConfig(context_window=window)
    )
    row = _only(rows)
    assert not any(r.over_window for r in records)  # the folded run fits throughout
    assert row.horizon == len(billed) - 3
    over = sum(b > window for b in billed[3:])
    assert over == len(billed) - 6
    assert (f"without it, {over:,} of the {row.horizon:,} requests compared are over the "
            f"{window:,}-token context window") in row.disagreement
    unlimited, _ = breakeven_session(session, [_folding_strategy(3)])
    assert "context window" not in _only(unlimited).disagreement


def test_a_request_over_the_window_in_both_runs_is_not_counted_against_the_rewrite() -> None:
    """Only the requests the counterfactual sends over the window *where the rewritten run
    fits* are named (the module's docstring): where both are over, no harness could send
    either, and the rewrite is not what made the difference."""
    turns = [
        Turn(f"step {i}", [Call("read_file", {"path": f"f{i}.py"}, gen.filler(2_000, i))])
        for i in range(8)
    ] + [Turn("done")]
    session = build_session(turns, provider="anthropic")
    billed = [r.request.total - r.outcome.dropped_tokens
              for r in _Run(session, resolve(["baseline"])[0], ReplayConfig()).run()]
    folded = [r.request.total - r.outcome.dropped_tokens
              for r in _Run(session, _folding_strategy(3), ReplayConfig()).run()]
    # A window the folded run outgrows at its last request only; the run without the fold
    # outgrows it earlier (from request 6 on, as above, or sooner).
    window = folded[-1] - 1
    assert folded[-2] <= window < billed[6]
    rows, records = breakeven_session(
        session, [_folding_strategy(3)], ReplayConfig(context_window=window)
    )
    row = _only(rows)
    assert [r.over_window for r in records][-1] and not any(r.over_window for r in records[:-1])
    over = sum(b > window for b in billed[3:-1])  # the last: over in both runs
    assert (f"without it, {over:,} of the {row.horizon:,} requests compared are over the "
            f"{window:,}-token context window") in row.disagreement


def test_a_compaction_in_a_branch_thread_counts_its_summarizer_call() -> None:
    """A Claude Code branch is thread `main/branch-1` (docs/adapters.md), its summarizer calls
    `main/branch-1/summarizer`: a compaction there costs its summarizer call like one in `main`
    (the call was looked up under `main`, and the row said $0 and no summary cost)."""
    from replay.log import AssistantMessage, SessionHeader, TextBlock, ThreadStart
    from replay.log import Session as LogSession
    from replay.log import UserMessage as User

    t0, branch = gen.BASE_TS, "main/branch-1"

    def at(seconds: int):
        return t0 + timedelta(seconds=seconds)

    def answer(rid: str, seconds: int, thread: str = "main", **fields) -> AssistantMessage:
        return AssistantMessage(ts=at(seconds), thread=thread, request_id=rid,
                                blocks=[TextBlock(text=f"answer {rid}")], **fields)

    events = [
        User(ts=at(0), text="task", id="u0"),
        RequestMarker(ts=at(1), request_id="r0"),
        answer("r0", 2, id="a0"),
        ThreadStart(ts=at(3), thread_id=branch, branch_of="main"),
        User(ts=at(3), thread=branch, text="task", copied_from="u0"),
        AssistantMessage(ts=at(3), thread=branch, blocks=[TextBlock(text="answer r0")],
                         copied_from="a0"),
    ]
    for n in range(1, 7):
        events += [
            User(ts=at(10 * n), thread=branch, text=gen.filler(4_000, n)),
            RequestMarker(ts=at(10 * n + 1), thread=branch, request_id=f"r{n}"),
            answer(f"r{n}", 10 * n + 2, thread=branch),
        ]
    header = SessionHeader(ts=t0, provider="anthropic", model="claude-sonnet-4-5",
                           system=gen.SYSTEM)
    session = LogSession(header=header, events=events)
    rows, records = breakeven_session(session, ["compact-at-12000-structured"])
    summarizers = [r for r in records if r.kind == "summarizer"]
    assert summarizers and {r.thread for r in summarizers} == {f"{branch}/summarizer"}
    compactions = [r for r in rows if r.event == "compaction"]
    assert compactions and {r.thread for r in compactions} == {branch}
    for row in compactions:
        calls = [s for s in summarizers if s.request_index == row.request_index]
        assert calls
        assert row.summarizer_cost_usd == sum(s.cost_usd for s in calls) > 0
        assert "summary cost" in row.disagreement


def _clearing_strategy(at: Sequence[int]) -> NamedStrategy:
    """At each request of `at`, clears the oldest tool result not cleared yet (in place)."""

    def build() -> object:
        cleared: dict[int, object] = {}

        def clear(history, ctx):
            events = []
            if ctx.request_index in at:
                old = next(i for i in history if isinstance(i, ToolResultItem)
                           and i.event_index not in cleared)
                cleared[old.event_index] = replace_output(old, "[cleared]")
                events = [RewriteEvent("clear", "one result")]
            return View([cleared.get(getattr(i, "event_index", None), i) for i in history],
                        [], events)

        return clear

    return _plugin("clear-some", build)


def test_the_strategy_s_later_rewrites_within_the_horizon_are_named() -> None:
    """The closed form leaves later events out (module docstring) and `disagreement` names
    those the simulation saw: the strategy's own later rewrites within a row's horizon, made in
    both runs, change what each later request saves (a prune-at-12000-keep-3 rewrite on the
    entire-bmad sample removed 389 tokens, $0.0125 at most by the closed form over its 107
    requests, and netted $0.083: its 72 later prunes each re-wrote those tokens in the run
    without it, unnamed)."""
    turns = [
        Turn(f"step {i}", [Call("read_file", {"path": f"f{i}.py"}, gen.filler(2_000, i))])
        for i in range(8)
    ] + [Turn("done")]
    session = build_session(turns, provider="anthropic")
    rows, _ = breakeven_session(session, [_clearing_strategy((3, 5, 6))])
    said = {r.request_index: r.disagreement for r in rows}
    assert set(said) == {3, 5, 6}
    assert "2 later rewrites of the strategy in the horizon" in said[3]
    assert "1 later rewrite of the strategy in the horizon" in said[5]
    assert "later rewrite of" not in said[6]
    capped, _ = breakeven_session(session, [_clearing_strategy((3, 5, 6))], horizon=2)
    assert "later rewrite of" not in _only([r for r in capped if r.request_index == 3]).disagreement


def test_a_horizon_of_one_request_is_said_in_the_singular() -> None:
    """`--horizon 1` (at least 1): the row said "compared over 1 requests only"."""
    rows, _ = breakeven_session(read_log(RUN42), ["age-truncate-500-keep-3"], horizon=1)
    assert rows
    for row in rows:
        assert row.horizon == 1
        if "horizon limit" in row.disagreement:
            assert "compared over 1 request only (horizon limit)" in row.disagreement
    assert any("horizon limit" in r.disagreement for r in rows)
