"""Prompts held by the automatic-prefix and DeepSeek caches: a thread's older prompts are held as
where they part from its latest one (`CachedPrompt.rebase`), which changes no result and keeps
the memory of a strategy that rewrites the end of the prompt at every request to its edits."""

from __future__ import annotations

import pytest

from replay.bench import synthetic_session
from replay.cache._store import CachedPrompt
from replay.engine._replay import ReplayConfig, _Run, replay_session
from replay.prices import Pricer
from replay.strategies import resolve

CACHES = [("openai", "gpt-5.5"), ("deepseek", "deepseek-chat")]
STRATEGIES = ["recorded", "age-truncate-500-keep-3", "observation-mask-keep-5-poll-1",
              "sliding-10", "compact-at-12000-structured"]


def _results(session) -> list[tuple]:
    records = replay_session(session, STRATEGIES, ReplayConfig(pricer=Pricer()))
    return [(r.strategy, r.request_id, r.thread, r.request.total, r.outcome, r.diff, r.cost_usd)
            for r in records]


@pytest.mark.parametrize(("provider", "model"), CACHES)
def test_holding_older_prompts_as_where_they_part_changes_no_result(monkeypatch, provider, model):
    session = synthetic_session(150, seed=2, provider=provider, model=model)
    rebased = _results(session)
    monkeypatch.setattr(CachedPrompt, "rebase", lambda self, anchor, shared: None)
    assert _results(session) == rebased


def test_a_strategy_that_rewrites_the_end_holds_little_more_than_one_prompt():
    """age-truncate shortens one tool result a few from the end at each request: held whole,
    its 64 prompts would weigh 64 prompts; held as where they part from the latest, little
    more than the latest one. (DeepSeek's common-prefix units, which belong to no thread, are
    still held whole.)"""
    session = synthetic_session(150, seed=2, provider="openai", model="gpt-5.5")
    run = _Run(session, resolve(["age-truncate-500-keep-3"])[0], ReplayConfig(pricer=Pricer()))
    run.run()
    held = [p for prompts in run.store.prompts.values() for p in prompts]
    assert len(held) >= 32
    latest = max(p.size for p in held)
    own = sum(len(p.block_ids) for p in held)
    assert sum(p.size for p in held) > 20 * latest  # what they stand for
    assert own < 3 * latest, (own, latest)  # what they hold
    assert sum(p.anchor is not None for p in held) >= len(held) - 2
