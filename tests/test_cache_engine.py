"""Cache simulation through the engine on small logs: profiles chosen from the header, miss
causes in `--per-turn` rows and counted in the summary, storage costs, rule overrides."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from replay._errors import ReplayError
from replay.engine import ReplayConfig, replay_session, summary_frame, turns_frame
from replay.log import (
    AssistantMessage,
    RequestMarker,
    Session,
    SessionHeader,
    TextBlock,
    ThreadStart,
    UserMessage,
)
from replay.prices import Buckets, Pricer

T0 = datetime(2026, 10, 20, 12, tzinfo=UTC)
SYSTEM = "\n".join(f"Rule {i}: keep the build green and the diff small." for i in range(300))


def _session(agent="claude-code", version="2.1.3", provider="anthropic",
             model="claude-sonnet-4-5", gaps=(0, 40 * 60), subagent=False) -> Session:
    header = SessionHeader(ts=T0, session_id="s1", agent=agent, agent_version=version,
                           provider=provider, model=model, system=SYSTEM)
    events: list = []
    t = T0
    for n, gap in enumerate(gaps):
        t = t + timedelta(seconds=gap)
        events.append(UserMessage(ts=t, text=f"Step {n}: please continue with part {n}."))
        events.append(RequestMarker(ts=t, request_id=f"r{n}"))
        events.append(AssistantMessage(ts=t + timedelta(seconds=5), request_id=f"r{n}",
                                       blocks=[TextBlock(text=f"Done with part {n}.")]))
    if subagent:
        t = t + timedelta(seconds=30)
        events.append(ThreadStart(ts=t, thread_id="agent-1"))
        events.append(UserMessage(ts=t, thread="agent-1", text="Look into the failing test."))
        events.append(RequestMarker(ts=t, thread="agent-1", request_id="s0"))
        events.append(AssistantMessage(ts=t + timedelta(seconds=2), thread="agent-1",
                                       request_id="s0", blocks=[TextBlock(text="Found it.")]))
    return Session(header=header, events=events)


def _run(session: Session, **config):
    records = replay_session(session, "baseline", ReplayConfig(**config))
    return records, turns_frame(records), summary_frame(records)


def test_claude_code_2_1_main_thread_1h_and_subagent_5m():
    records, turns, summary = _run(_session(subagent=True))
    main = [r for r in records if r.thread == "main"]
    sub = [r for r in records if r.thread == "agent-1"]
    # Main thread: 1h writes; 40 minutes later the whole previous prompt is read.
    assert main[0].outcome.cache_write_1h == main[0].request.total
    assert main[1].outcome.cache_read == main[0].request.total
    # The subagent writes 5m entries and reads the system prompt the main thread cached.
    assert sub[0].outcome.cache_write_1h == 0 and sub[0].outcome.cache_write_5m > 0
    assert sub[0].outcome.cache_read > 0
    row = summary.row(0, named=True)
    assert row["misses"] == 0 and row["miss_causes"] == ""
    for r in turns.iter_rows(named=True):
        assert r["prompt_tokens"] == (r["cached_tokens"] + r["cache_write_tokens"]
                                      + r["uncached_tokens"])


def test_claude_code_before_2_1_misses_after_40_minutes_and_the_summary_counts_it():
    records, turns, summary = _run(_session(version="2.0.50"))
    assert records[1].outcome.cache_read == 0
    assert turns["miss_cause"][1].startswith("TTL expired (idle 40m")
    row = summary.row(0, named=True)
    assert row["misses"] == 1
    assert row["miss_causes"] == "ttl-expired=1"


def test_rule_override_through_the_config():
    records, _, _ = _run(_session(version="2.0.50"),
                         rule_overrides={"anthropic.ttl_seconds_5m": 3600})
    assert records[1].outcome.cache_read == records[0].request.total


def test_client_override_none_caches_nothing_on_anthropic():
    _, turns, summary = _run(_session(), client="none")
    assert turns["cached_tokens"].sum() == 0
    assert summary["miss_causes"][0] == "no-breakpoint=1"


def test_codex_subagent_has_its_own_prompt_cache_key():
    records, _, summary = _run(_session(agent="codex", version="0.50", provider="openai",
                                        model="gpt-5", gaps=(0, 60), subagent=True))
    sub = [r for r in records if r.thread == "agent-1"][0]
    assert sub.outcome.cache_read == 0
    assert sub.outcome.miss_kind == "other-scope"
    assert "other-scope=1" in summary["miss_causes"][0]


def test_gemini_explicit_creation_and_storage_show_in_the_cost():
    records, turns, summary = _run(_session(agent="replay-recorder", provider="google",
                                            model="gemini-2.5-flash", gaps=(0, 600)),
                                   client="gemini-explicit")
    first, second = records
    created = first.outcome.created_tokens
    assert created > 0 and second.outcome.created_tokens == 0
    assert first.outcome.storage_usd > 0 and second.outcome.storage_usd == 0
    assert first.outcome.cache_read == second.outcome.cache_read == created
    pricer = Pricer()
    price = pricer.price(first.buckets, model=first.model, provider=first.provider, ts=first.ts)
    creation = pricer.price(
        Buckets(uncached=created), model=first.model, provider=first.provider, ts=first.ts
    )
    assert first.cost_usd == price.total_usd + creation.total_usd + first.outcome.storage_usd
    assert first.input_cost_usd == price.input_usd + creation.input_usd
    assert turns["storage_cost_usd"][0] == first.outcome.storage_usd
    assert turns["cache_created_tokens"].to_list() == [created, 0]
    assert summary["storage_cost_usd"][0] == first.outcome.storage_usd
    assert summary["cache_created_tokens"][0] == created
    assert summary["cost_usd"][0] == first.cost_usd + second.cost_usd


def test_vertex_regional_factor_applies_to_the_record_cost():
    session = _session(agent="pi", provider="google", model="claude-sonnet-4-5", gaps=(0,))
    (plain,), _, _ = _run(session)
    (regional,), _, _ = _run(session, rule_overrides={"anthropic.vertex.endpoint": "regional"})
    assert plain.outcome.route == "anthropic/vertex"
    assert regional.cost_usd == plain.cost_usd * Decimal("1.1")
    assert regional.input_cost_usd == plain.input_cost_usd * Decimal("1.1")


def test_unknown_provider_is_an_error_with_the_way_out():
    with pytest.raises(ReplayError, match="--cache-rules"):
        _run(_session(provider="acme", model="acme-1"))


def test_buckets_reach_the_pricer():
    records, _, _ = _run(_session(gaps=(0, 60)))
    for r in records:
        b = r.buckets
        assert isinstance(b, Buckets) and b.prompt == r.outcome.prompt
        assert r.cost_usd == Pricer().price(b, model=r.model, provider=r.provider,
                                            ts=r.ts).total_usd
