"""The public verbs (`replay._api`): how they check their arguments, call the engine and what
they return."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from conftest import RUN42

from replay import TRAJECTORY_NOTE, load, replay, whatif
from replay._api import BREAKEVEN_TURN_COLUMNS, breakeven, fidelity, turns_with_breakeven
from replay._errors import LogFormatError, ReplayError
from replay.engine._replay import FITTING
from replay.log import RequestMarker, Session, Usage
from replay.prices import RateOverride


def _with_usage() -> Session:
    """run42 with a usage on every request: a log whose unlogged context is fitted."""
    session = load(RUN42)
    for event in session.events:
        if isinstance(event, RequestMarker):
            event.usage = Usage(input_tokens=3000, output_tokens=20)
    return session


def test_replay_names_the_fit_on_the_progress_bar_before_the_strategies() -> None:
    """The fit replays the whole log once before any strategy (10 s on a 24 MB pi log): the bar
    names it (`FITTING`) instead of counting requests under no name."""
    calls: list[tuple[str, int, int]] = []
    replay(_with_usage(), "baseline,truncate-500", progress=lambda *call: calls.append(call))
    assert calls == [(FITTING, 0, 2), ("baseline", 0, 2), ("truncate-500", 1, 2), ("", 2, 2)]


def test_breakeven_names_the_fit_unless_it_is_given() -> None:
    calls: list[tuple[str, int, int]] = []
    session = _with_usage()
    breakeven(session, "truncate-500", progress=lambda *call: calls.append(call))
    assert calls == [(FITTING, 0, 1), ("truncate-500", 0, 1), ("", 1, 1)]
    calls.clear()  # the context a replay fitted: nothing to fit, nothing to name
    fitted = replay(session, "baseline").unlogged_context
    breakeven(session, "truncate-500", progress=lambda *call: calls.append(call),
              unlogged_context=fitted)
    assert calls == [("truncate-500", 0, 1), ("", 1, 1)]


def test_a_log_without_usage_has_no_fit_to_name() -> None:
    calls: list[tuple[str, int, int]] = []
    replay(RUN42, "baseline", progress=lambda *call: calls.append(call))
    assert calls == [("baseline", 0, 1), ("", 1, 1)]


@pytest.mark.parametrize("workers", [1, 2])
def test_the_fit_is_handed_back_in_the_result(workers: int) -> None:
    """`ReplayResult.unlogged_context`: what the replay fitted (one strategy on two workers is
    replayed here, as the docstring says)."""
    result = replay(_with_usage(), "baseline", workers=workers)
    assert result.unlogged_context


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "3"])
def test_breakeven_refuses_a_horizon_that_is_not_a_count_of_requests(bad) -> None:
    """As `--horizon` (IntRange(min=1)) and the verbs' other counts: a horizon of 0 or -1 gave
    rows whose `horizon` column said 0 or -1 requests."""
    with pytest.raises(ReplayError, match=rf"^horizon must be a number of requests ≥ 1, got "
                                          rf"{re.escape(repr(bad))}$"):
        breakeven(RUN42, "age-truncate-500-keep-3", horizon=bad)


def test_breakeven_follows_each_rewrite_over_the_horizon_given() -> None:
    name = "age-truncate-500-keep-3"
    full = breakeven(RUN42, name)
    capped = breakeven(RUN42, name, horizon=1)
    assert capped.height == full.height > 0
    assert capped["horizon"].to_list() == [1] * capped.height
    assert max(full["horizon"]) > 1


@pytest.mark.parametrize("bad", [True, 1.5, "3"])
def test_whatif_refuses_an_at_that_is_not_a_request_index(bad) -> None:
    """`at=1.5` priced no edit at all, `at=True` an edit named `whatif-compact-at-True`, and
    `at="3"` was a TypeError."""
    with pytest.raises(ReplayError, match=r"^at must be a request index \(a whole number\), "
                                          rf"got {re.escape(repr(bad))}$"):
        whatif(RUN42, at=bad, compact=True)
    # A whole number outside the log is the range error, as --at's (run42 has 14 requests).
    with pytest.raises(ReplayError, match=r"^--compact-at -1 is outside the log's requests "
                                          r"\(0\.\.13\)$"):
        whatif(RUN42, at=-1, compact=True)


def test_breakeven_prices_with_the_rates_given() -> None:
    """`prices`: every rate of the log's model at zero makes every rewrite free."""
    name = "age-truncate-500-keep-3"
    zero = Decimal(0)
    free = {"gemini-2.5-flash": RateOverride(input=zero, output=zero, cache_read=zero,
                                             cache_write=zero)}
    assert breakeven(RUN42, name)["rewrite_cost_usd"].sum() > 0
    assert breakeven(RUN42, name, prices=free)["rewrite_cost_usd"].to_list() == (
        [0] * breakeven(RUN42, name).height)


def test_breakeven_fits_the_strategies_into_the_context_window_given() -> None:
    """A strategy that compacts near the window compacts (a rewrite, a row) only in a window
    run42's prompts come near."""
    name = "codex-compact-at-90pct"
    assert breakeven(RUN42, name).is_empty()
    peak = max(replay(RUN42, "baseline").turns["prompt_tokens"])
    assert not breakeven(RUN42, name, context_window=peak).is_empty()


@pytest.fixture
def malformed(tmp_path: Path) -> Path:
    """run42 with one line that is no JSON after its header."""
    lines = RUN42.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "malformed.jsonl"
    path.write_text("".join([lines[0], "{not json\n", *lines[1:]]), encoding="utf-8")
    return path


@pytest.mark.parametrize("verb", [
    lambda log, **kw: replay(log, "baseline", **kw),
    lambda log, **kw: breakeven(log, "baseline", **kw),
    lambda log, **kw: whatif(log, at=3, compact=True, **kw),
], ids=["replay", "breakeven", "whatif"])
def test_every_verb_reads_strictly_when_asked(verb, malformed: Path) -> None:
    """Lenient by default (the line skipped), `strict=True` stops at it (`load`'s docstring)."""
    verb(malformed)
    with pytest.raises(LogFormatError):
        verb(malformed, strict=True)


def test_fidelity_reads_strictly_when_asked(malformed: Path) -> None:
    """(run42 carries no usage: read leniently, fidelity has nothing to compare.)"""
    with pytest.raises(ReplayError, match="no request in this log carries recorded usage"):
        fidelity(malformed)
    with pytest.raises(LogFormatError):
        fidelity(malformed, strict=True)


def test_breakeven_appends_the_notes_of_the_run_to_the_list_given() -> None:
    """`notes`: the run's notes (as `ReplayResult.notes`) appended after what the list held."""
    names = "baseline,age-truncate-500-keep-3"
    notes = ["mine"]
    breakeven(RUN42, names, notes=notes, context_window=3000)
    expected = replay(RUN42, names, context_window=3000).notes
    assert TRAJECTORY_NOTE in expected and len(expected) > 2  # the window's note, at least
    assert notes == ["mine", *expected]


def test_breakeven_on_workers_hands_the_strategies_to_them(monkeypatch) -> None:
    """`workers=2`: the analysis goes to `breakeven_parts` with two processes (its rows are one
    process's: tests/test_workers.py)."""
    from replay.engine import _parallel

    asked: list[int] = []

    def parts(session, strategies, config, workers, horizon):
        asked.append(workers)
        return iter(())

    monkeypatch.setattr(_parallel, "breakeven_parts", parts)
    assert breakeven(RUN42, "baseline,age-truncate-500-keep-3", workers=2).is_empty()
    assert asked == [2]


@pytest.mark.parametrize("verb", [
    lambda log: breakeven(log, "baseline"),
    lambda log: whatif(log, at=0, compact=True),
    lambda log: fidelity(log),
], ids=["breakeven", "whatif", "fidelity"])
def test_a_log_without_requests_is_the_same_error_for_every_verb(verb, tmp_path: Path) -> None:
    """As `replay`'s (`require_requests`): not an empty frame, an `--at 0` outside `0..-1` or
    'no request carries recorded usage'."""
    lines = RUN42.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "no-requests.jsonl"
    path.write_text("".join(lines[:2]), encoding="utf-8")  # the header and the user's message
    with pytest.raises(ReplayError, match=r"the log has no requests \(no `request` events\)"):
        replay(path, "baseline")
    with pytest.raises(ReplayError, match=r"the log has no requests \(no `request` events\)"):
        verb(path)


def test_turns_with_breakeven_fills_the_rewritten_requests_and_keeps_every_row_in_order() -> None:
    """`run --per-turn --breakeven`: every per-request row, in its order, with the break-even
    columns on the request where a rewrite happened and nowhere else (not on the summarizer
    call made at that request, which has the same index in another thread)."""
    names, window = "age-truncate-500-keep-3,codex-compact-at-90pct", _peak_prompt()
    turns = replay(RUN42, names, context_window=window).turns
    frame = breakeven(RUN42, names, context_window=window)
    assert "summarizer" in turns["kind"].to_list() and frame.height > 1
    joined = turns_with_breakeven(turns, frame)
    assert joined.select(turns.columns).equals(turns)
    columns = ["strategy", "request_index", "thread", *BREAKEVEN_TURN_COLUMNS]
    filled = joined.filter(pl.col("event").is_not_null()).select(columns)
    assert filled.sort(columns[:3]).equals(frame.select(columns).sort(columns[:3]))


def _peak_prompt() -> int:
    """run42's largest prompt: a window codex-compact-at-90pct compacts in."""
    return max(replay(RUN42, "baseline").turns["prompt_tokens"])


def test_whatif_names_its_two_runs_and_the_fit_before_them() -> None:
    calls: list[tuple[str, int, int]] = []
    whatif(RUN42, at=8, prune="older-than:3", progress=lambda *call: calls.append(call))
    runs = [("recorded", 0, 2), ("whatif-prune-at-8", 1, 2), ("", 2, 2)]
    assert calls == runs
    calls.clear()
    whatif(_with_usage(), at=8, prune="older-than:3", progress=lambda *call: calls.append(call))
    assert calls == [(FITTING, 0, 2), *runs]


def test_fidelity_prices_both_sides_with_the_rates_given() -> None:
    zero = Decimal(0)
    free = {"gemini-2.5-flash": RateOverride(input=zero, output=zero, cache_read=zero,
                                             cache_write=zero)}
    session = _with_usage()
    assert fidelity(session).frame["recorded_cost_usd"].sum() > 0
    frame = fidelity(session, prices=free).frame
    assert frame["recorded_cost_usd"].to_list() == frame["simulated_cost_usd"].to_list() == (
        [0] * frame.height)


def test_fidelity_names_the_log_without_usage() -> None:
    """The path given, else the session's, else 'the log' (a session made in memory)."""
    for log in (str(RUN42), load(RUN42)):
        with pytest.raises(ReplayError, match=rf"^{re.escape(str(RUN42))}: no request in this "
                                              "log carries recorded usage$"):
            fidelity(log)
    made = load(RUN42)
    made.path = None
    with pytest.raises(ReplayError, match="^the log: no request in this log carries"):
        fidelity(made)


def test_fidelity_notes_what_the_log_alone_tells() -> None:
    """The notes `replay run` draws from the log alone that concern what the agent sent and was
    billed: lines skipped, a microcompact, usage iterations not priced, cache writes under an
    unread name."""
    from replay._api import _skipped_note, iteration_notes, microcompact_notes, unread_write_notes

    session = _with_usage()
    session.skipped.append("line 9: not JSON")
    marked = session.requests()[5]
    marked.after_microcompact = True
    marked.usage.raw = {"input_tokens_details": {"cache_write_tokens": 700},
                        "iterations": [{"type": "compaction", "input_tokens": 900,
                                        "output_tokens": 40}]}
    expected = [_skipped_note(session), *microcompact_notes(session), *iteration_notes(session),
                *unread_write_notes(session)]
    assert len(expected) == 4
    assert fidelity(session).notes == expected


def test_the_models_and_providers_of_a_replay_are_sorted() -> None:
    """`ReplayResult.models` / `.providers`: every one a simulated request used, sorted (the
    JSON's `model` and `provider` join them: the same bytes in every process)."""
    routes = [("openai", "gpt-4o"), ("anthropic", "claude-haiku-4-5"), ("google",
              "gemini-2.5-flash"), ("openai", "gpt-4o-mini"), ("anthropic", "claude-sonnet-4-5"),
              ("deepseek", "deepseek-chat"), ("x-ai", "grok-4")]
    session = load(RUN42)
    for n, request in enumerate(session.requests()):
        request.provider, request.model = routes[n % len(routes)]
    result = replay(session, "baseline")
    assert result.models == sorted(model for _, model in routes)
    assert result.providers == sorted({provider for provider, _ in routes})


def test_the_recommended_saving_is_a_ratio_precise_enough_for_the_line_s_percent() -> None:
    """The line writes the saving as a percentage with one decimal: a third saved is 33.3 %,
    not the 33.0 % of a ratio rounded to hundredths."""
    from replay._api import recommendation, recommendation_line

    summary = pl.DataFrame(
        [{"strategy": "baseline", "cost_usd": Decimal("3.00"), "blind_actions": 0},
         {"strategy": "thrifty", "cost_usd": Decimal("2.00"), "blind_actions": 0}],
        schema={"strategy": pl.Utf8, "cost_usd": pl.Decimal(38, 12), "blind_actions": pl.Int64},
    )
    rec = recommendation(summary)
    assert rec is not None and abs(rec["saving_ratio"] - 1 / 3) < 0.0005
    assert "(33.3%) vs baseline" in recommendation_line(rec, summary)


def test_the_schema_text_is_the_schema_with_its_keys_sorted_and_a_final_newline() -> None:
    """`replay schema`: the same bytes whatever order the models declare their fields in, one
    line end after the closing brace (a file that `cat` and diffs read whole)."""
    import json

    from replay._api import schema, schema_text

    text = schema_text()
    assert text.endswith("}\n") and not text.endswith("\n\n")
    orders: list[list[str]] = []
    parsed = json.loads(text, object_pairs_hook=lambda pairs: orders.append(
        [k for k, _ in pairs]) or dict(pairs))
    assert parsed == schema()
    assert len(orders) > 10 and all(keys == sorted(keys) for keys in orders)


def test_a_result_made_from_records_alone_computes_its_frames_from_them() -> None:
    """`ReplayResult.tables` None: the frames are computed from `records` (its docstring)."""
    from replay import ReplayResult

    result = replay(RUN42, "baseline,age-truncate-500-keep-3")
    made = ReplayResult(session=result.session, records=result.records)
    assert made.summary.equals(result.summary) and made.turns.equals(result.turns)
    assert (made.models, made.providers) == (result.models, result.providers)


def test_breakeven_and_whatif_take_the_cache_rule_overrides_replay_takes() -> None:
    """A library caller who replays under rule overrides gets break-even and the what-if under
    the same rules: here no cache at all (`mechanism: none`), so nothing is read from it."""
    nothing = {"mechanism": "none"}
    cached = replay(RUN42, "recorded", rule_overrides=nothing).summary["cached_tokens"]
    assert cached.to_list() == [0]
    strategy = "age-truncate-500-keep-3"
    rows = breakeven(RUN42, strategy, rule_overrides=nothing)
    assert len(rows) and rows["simulated_net_usd"].to_list() != breakeven(
        RUN42, strategy)["simulated_net_usd"].to_list()
    assert all(why.startswith("not cached past the edit") for why in rows["disagreement"])
    edit = whatif(RUN42, at=8, prune="older-than:3", rule_overrides=nothing)
    assert edit["summary"]["cached_tokens"].to_list() == [0, 0]
    plain = whatif(RUN42, at=8, prune="older-than:3")["summary"]["cached_tokens"].to_list()
    assert plain != [0, 0]


def test_fidelity_takes_the_cache_rule_overrides_replay_takes() -> None:
    """Does the simulator match the bill better under other rules? `rule_overrides` answers it
    for the replay of `recorded` too: with no cache, nothing is simulated as read."""
    session = _with_usage()
    plain = fidelity(session).frame["simulated_cache_read"].to_list()
    assert any(plain)
    read = fidelity(session, rule_overrides={"mechanism": "none"}).frame["simulated_cache_read"]
    assert read.to_list() == [0] * len(plain)
