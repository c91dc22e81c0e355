"""The public verbs (`replay._api`): how they check their arguments, call the engine and what
they return."""

from __future__ import annotations

import re

import pytest
from conftest import RUN42

from replay import load, replay, whatif
from replay._api import breakeven
from replay._errors import ReplayError
from replay.engine._replay import FITTING
from replay.log import RequestMarker, Session, Usage


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
