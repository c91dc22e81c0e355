"""Break-even's counterfactuals derived from the rewritten run's records (`_shift`) equal the
counterfactuals replayed request by request, row for row, wherever the derivation is used."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.bench import synthetic_session
from replay.breakeven import _shift
from replay.breakeven._breakeven import breakeven_config, strategy_rewrites
from replay.engine._replay import ReplayConfig
from replay.log import Session
from replay.strategies import resolve

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples"

# The library's strategies that rewrite items in place at many requests (the quadratic part
# of break-even), and two that do so now and then.
IN_PLACE = (
    "age-truncate-500-keep-3",
    "tool-aging-keep-3",
    "observation-mask-keep-5-poll-1",
    "prune-at-12000-keep-3",
    "anthropic-clear-tool-uses-100k-keep-3",
    "gemini-mask-tool-out-50k-30k",
    "opencode-prune-40k-20k",
)


def _rows(session: Session, name: str, config: ReplayConfig, derive: bool,
          horizon: int | None = None) -> tuple[list, int]:
    """Break-even rows of one strategy, and how many counterfactual requests were derived."""
    named = resolve(name)[0]
    before = _shift.ENABLED
    _shift.ENABLED = derive
    try:
        with strategy_rewrites(session, named, breakeven_config(session, config), horizon) as rw:
            rows = [row for _, row in rw.analyse()]
            return rows, sum(e.derived for e in rw.events)
    finally:
        _shift.ENABLED = before


def _same(session: Session, name: str, config: ReplayConfig | None = None,
          horizon: int | None = None) -> int:
    config = config or ReplayConfig()
    derived_rows, derived = _rows(session, name, config, True, horizon)
    replayed_rows, none = _rows(session, name, config, False, horizon)
    assert none == 0
    assert derived_rows == replayed_rows
    return derived


@pytest.mark.parametrize("name", IN_PLACE[:5])
def test_the_heavy_strategies_derive_most_of_their_counterfactuals(name: str) -> None:
    """On a 150-request session the derivation takes over for most counterfactual requests,
    and every row is the replayed one."""
    session = synthetic_session(150, seed=3)
    named = resolve(name)[0]
    config = breakeven_config(session, ReplayConfig())
    with strategy_rewrites(session, named, config, None) as rw:
        rw.analyse()
        total = sum(rw.steps)
    assert _same(session, name) > total // 3


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    requests=st.integers(12, 70),
    seed=st.integers(0, 10_000),
    scale=st.sampled_from([0.02, 0.1, 0.4, 1.0]),
    model=st.sampled_from(["claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5",
                           "claude-3-7-sonnet-20250219"]),
    client=st.sampled_from([None, "claude-code", "pi", "automatic"]),
    ttl=st.sampled_from([None, "5m", "1h"]),
    name=st.sampled_from(IN_PLACE),
    horizon=st.sampled_from([None, None, 7]),
)
def test_derived_counterfactuals_equal_replayed_ones(
    requests, seed, scale, model, client, ttl, name, horizon
) -> None:
    """Random sessions, models (their minimum cacheable lengths, thinking stripped or not),
    clients (where the breakpoints go), TTLs (expiries after the session's idle gaps) and
    horizons: the rows are those of the full replay."""
    session = synthetic_session(requests, seed=seed, model=model, size_scale=scale)
    _same(session, name, ReplayConfig(client=client, ttl=ttl), horizon)


def test_a_run_on_another_provider_is_replayed() -> None:
    """Only Anthropic's explicit breakpoints are derived: OpenAI's cache rounds lengths."""
    session = synthetic_session(60, seed=1)
    config = ReplayConfig(provider="openai", model="gpt-5.1")
    assert _same(session, "age-truncate-500-keep-3", config) == 0


def _sample(folder: str, stem: str) -> Path:
    if not SAMPLES.is_dir():
        pytest.skip(f"{SAMPLES} is absent (real sample logs)")
    found = sorted((SAMPLES / folder).glob(f"*{stem}*"))
    if not found:
        pytest.skip(f"no {folder} sample matching {stem!r} in {SAMPLES}")
    return found[0]


@pytest.mark.parametrize(
    ("folder", "stem", "name"),
    [
        # Claude Code 2.1, fitted unlogged context (the client's last marker moved by it)
        ("claude_code", "91_03598e5336", "tool-aging-keep-3"),
        # pi, thinking stripped before the last user turn (which moves the entries' keys)
        ("pi", "large-session", "tool-aging-keep-3"),
        ("pi", "large-session", "age-truncate-500-keep-3"),
    ],
)
def test_real_logs_give_the_replayed_rows(folder: str, stem: str, name: str) -> None:
    from replay import load

    _same(load(_sample(folder, stem)), name)
