"""The replay engine: disjoint buckets, determinism, summarizer calls, errors, result frames."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal

import gen
import polars as pl
import pytest
from conftest import CORE, RUN42, SUMMARY_CONTRACT, TURN_CONTRACT
from hypothesis import given, settings

from replay import ReplayError, replay
from replay.cache import CacheOutcome
from replay.engine import (
    SUMMARY_COLUMNS,
    TURN_COLUMNS,
    ReplayConfig,
    replay_session,
    summary_frame,
    turns_frame,
)
from replay.engine._results import ResultTables
from replay.log import (
    AssistantMessage,
    Compaction,
    RequestMarker,
    Session,
    SessionHeader,
    TextBlock,
    ThinkingBlock,
    ThreadStart,
    ToolCallBlock,
    ToolDef,
    ToolResult,
    Usage,
    UserMessage,
    read_log,
    write_log,
)
from replay.prefix import PrefixDiff
from replay.strategies import RewriteEvent

SMALL = [
    "baseline",
    "truncate-200",
    "age-truncate-200-keep-2",
    "compact-at-3000-structured",
    "sliding-4-pin-first",
]


def _check_buckets(records):
    assert records
    for r in records:
        o = r.outcome
        assert min(o.uncached, o.cache_read, o.cache_write_5m, o.cache_write_1h) >= 0
        assert o.uncached + o.cache_read + o.cache_write_5m + o.cache_write_1h == r.request.total
        assert r.buckets.prompt == r.request.total
        assert r.cost_usd >= 0 and isinstance(r.cost_usd, Decimal)


def _check_frames(result):
    turns, summary = result.turns, result.summary
    assert (
        turns["cached_tokens"] + turns["cache_write_tokens"] + turns["uncached_tokens"]
        == turns["prompt_tokens"]
    ).all()
    assert (
        summary["cached_tokens"] + summary["cache_write_tokens"] + summary["uncached_tokens"]
        == summary["prompt_tokens"]
    ).all()


@pytest.mark.parametrize(
    ("provider", "model", "provider_seen", "model_seen"),
    [
        (None, None, "google", "gemini-2.5-flash"),  # the log's own provider and model
        ("anthropic", "claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
        ("openai", "gpt-5", "openai", "gpt-5"),
    ],
)
def test_buckets_add_up_on_run42(provider, model, provider_seen, model_seen):
    result = replay(RUN42, CORE, provider=provider, model=model)
    _check_buckets(result.records)
    _check_frames(result)
    assert {r.provider for r in result.records} == {provider_seen}
    assert {r.model for r in result.records} == {model_seen}
    assert result.summary["strategy"].to_list() == CORE
    baseline = result.summary.row(0, named=True)
    assert baseline["prefix_breaks"] == 0
    if provider_seen != "google":  # both simulated providers cache run42's growing prefix
        assert baseline["cached_tokens"] > 0


def test_buckets_add_up_on_run42_for_every_canonical_strategy():
    result = replay(RUN42, "all", provider="anthropic", model="claude-sonnet-4-5")
    _check_buckets(result.records)
    _check_frames(result)


@settings(max_examples=30, deadline=None)
@given(gen.replay_sessions())
def test_buckets_add_up_on_random_sessions(session):
    records = replay_session(session, SMALL, ReplayConfig())
    _check_buckets(records)
    requests = [e for e in session.events if isinstance(e, RequestMarker)]
    for name in SMALL:
        mine = [r for r in records if r.strategy == name and r.kind == "request"]
        assert [r.request_id for r in mine] == [e.request_id for e in requests]


def test_replay_is_deterministic_in_process():
    a = replay(RUN42, CORE, provider="anthropic", model="claude-sonnet-4-5")
    b = replay(RUN42, CORE, provider="anthropic", model="claude-sonnet-4-5")
    assert a.turns.equals(b.turns)
    assert a.summary.equals(b.summary)


def _json_under_two_hash_seeds(run_replay, tmp_path, log, strategies: str) -> list[bytes]:
    """The per-turn JSON of `log` written by two processes under hash seeds 1 and 2."""
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"run{seed}.json"
        code, _, err = run_replay(log, "--strategies", strategies, "--per-turn", "--format",
                                  "json", "-o", out, env={"PYTHONHASHSEED": seed})
        assert code == 0, err
        outputs.append(out.read_bytes())
    return outputs


def test_replay_is_deterministic_across_processes(run_replay, tmp_path):
    """Two separate runs (different hash seeds) write byte-identical JSON."""
    outputs = _json_under_two_hash_seeds(run_replay, tmp_path, RUN42, ",".join(CORE))
    assert outputs[0] == outputs[1]


MIXED = [
    ("anthropic", "claude-sonnet-4-5"),
    ("google", "gemini-2.5-flash"),
    ("anthropic", "claude-opus-4-8"),
    ("openai", "gpt-5"),
    ("openai", "gpt-4o"),
]
"""Five models of three providers and four tokenizer families, three of them estimated."""


def test_replay_of_several_models_is_deterministic_across_processes(run_replay, tmp_path):
    """Sets of models, providers and tokenizer families are written in a fixed order: two runs
    under different hash seeds (seeds under which those sets iterate in different orders) write
    byte-identical JSON for a log whose requests switch between five models of three providers
    (model switches, TTL expiries and edited prefixes among the misses)."""
    session = gen.deterministic_session()
    for i, marker in enumerate(session.requests()):
        marker.provider, marker.model = MIXED[(i // 2) % len(MIXED)]
    log = tmp_path / "mixed.jsonl"
    write_log(session, log)
    outputs = _json_under_two_hash_seeds(run_replay, tmp_path, log, "baseline,sliding-4-pin-first")
    assert outputs[0] == outputs[1]
    document = json.loads(outputs[0])
    assert document["model"] == ",".join(sorted(m for _, m in MIXED))
    assert document["provider"] == "anthropic,google,openai"
    estimated = [n.split()[3] for n in document["notes"] if n.startswith("Token counts for")]
    assert estimated == ["claude", "claude-new-tokenizer", "gemini"]
    causes = document["summary"][0]["miss_causes"]
    assert all(c in causes for c in ("model-switch", "ttl-expired", "below-minimum")), causes


def _same_frames_without_records(log, strategies) -> None:
    kept = replay(log, strategies)
    streamed = replay(log, strategies, keep_records=False)
    assert kept.records and not streamed.records
    assert streamed.summary.equals(kept.summary)
    assert streamed.turns.equals(kept.turns)
    assert streamed.notes == kept.notes


def test_replaying_without_keeping_records_gives_the_same_frames(monkeypatch):
    # The CLI's way: each record counted as soon as it is complete, its arrays released and
    # the summarizer transcripts packed as the replay goes.
    _same_frames_without_records(RUN42, [*CORE, "retrieval-top-5"])
    # OpenAI's automatic cache compares prompts with cached earlier ones, summarizer calls'
    # included: their packed transcripts are read back.
    from replay.bench import synthetic_session
    from replay.render._request import BlockTable

    read_packed = []
    text_of = BlockTable.text_of

    def counting(table, block_id):
        read_packed.append(table.blocks[block_id].text is None)
        return text_of(table, block_id)

    monkeypatch.setattr(BlockTable, "text_of", counting)
    session = synthetic_session(80, 0, provider="openai", model="gpt-5")
    _same_frames_without_records(
        session, ["openhands-llm-summary-120-keep-4", "aider-summarize-auto"]
    )
    assert any(read_packed)


def test_summarizer_calls_are_their_own_records_and_counted_in_totals():
    result = replay(RUN42, ["compact-at-12000-structured"])
    records = result.records
    summarizer = [r for r in records if r.kind == "summarizer"]
    requests = [r for r in records if r.kind == "request"]
    assert summarizer, "run42 passes 12,000 characters: compaction must happen"
    for s in summarizer:
        assert s.thread == "main/summarizer"
        assert s.request_id.endswith(":summarizer")
        owner = next(r for r in requests if r.request_index == s.request_index)
        assert records.index(s) < records.index(owner)
        assert any(e.kind == "compaction" for e in owner.events)
        assert s.output_tokens > 0 and s.cost_usd > 0
    row = result.summary.row(0, named=True)
    assert row["requests"] == len(requests)
    assert row["summarizer_calls"] == len(summarizer)
    assert row["prompt_tokens"] == sum(r.request.total for r in records)
    assert row["output_tokens"] == sum(r.output_tokens for r in records)
    assert row["cost_usd"] == sum((r.cost_usd for r in records), Decimal(0))
    assert row["summarizer_cost_usd"] == sum((r.cost_usd for r in summarizer), Decimal(0))
    turns = result.turns
    assert turns.filter(pl.col("kind") == "summarizer").height == len(summarizer)


def test_summarizer_call_can_read_the_main_threads_cache():
    result = replay(RUN42, ["compact-at-12000-structured"], provider="openai", model="gpt-5")
    summarizer = [r for r in result.records if r.kind == "summarizer"]
    assert any(s.outcome.cache_read > 0 for s in summarizer)


def _aider_summaries(model: str):
    from replay.bench import synthetic_session

    session = synthetic_session(60, 0, provider="anthropic", model=model)
    return [r for r in replay(session, ["aider-summarize-auto"]).records if r.kind == "summarizer"]


def test_aider_summarizes_with_the_weak_model_aider_gives_the_main_one():
    """Aider sends its summaries to the main model's weak model (Sonnet 4.5 → Haiku 4.5 in its
    model settings): priced, and cached, as Haiku. A model Aider lists no weak model for is its
    own summarizer."""
    from replay.prices import Buckets, Pricer

    summaries = _aider_summaries("claude-sonnet-4-5")
    assert summaries and {r.model for r in summaries} == {"claude-haiku-4-5"}
    for r in summaries:
        o = r.outcome
        buckets = Buckets(o.uncached, o.cache_read, o.cache_write_5m, o.cache_write_1h,
                          r.output_tokens)
        haiku = Pricer().price(buckets, model="claude-haiku-4-5", provider="anthropic", ts=r.ts)
        assert r.cost_usd == haiku.total_usd and r.price_warning is None
    assert {r.model for r in _aider_summaries("claude-opus-4-5")} == {"claude-opus-4-5"}


def test_a_weak_model_without_a_price_is_priced_as_the_main_model_with_a_warning(monkeypatch):
    from replay.strategies import aider_summarize

    monkeypatch.setattr(aider_summarize, "weak_model", lambda model: "no-such-weak-model")
    summaries = _aider_summaries("claude-sonnet-4-5")
    assert summaries and {r.model for r in summaries} == {"claude-sonnet-4-5"}
    assert {r.price_warning for r in summaries} == {
        "the summarizer's model no-such-weak-model has no price on anthropic: its requests are "
        "priced as claude-sonnet-4-5"
    }


def test_a_fresh_summarizer_call_is_sent_without_the_main_head():
    """A summarizer that does not reuse the main prefix (pi, opencode, Roo, OpenHands, Goose…)
    sends its own request: no tool definitions, no unlogged head (3,000 tokens here). One that
    forks the main request keeps both, and so can read its cache; Codex's keeps the system
    prompt and unlogged head but sends no tools."""
    from replay.bench import synthetic_session

    session = synthetic_session(40, 7, max_context_tokens=12_000)
    session.header.hidden_prefix_tokens = 3000
    fresh, forked = "goose-tool-pair-summarize", "compact-at-12000-structured"
    codex = "codex-compact-at-90pct[limit=8000]"
    records = replay_session(session, [fresh, forked, codex], ReplayConfig(keep_blocks=True))
    heads = {
        (r.strategy, tuple(k for k in r.request.kinds if k in ("tool", "system")))
        for r in records
        if r.kind == "summarizer"
    }
    tools = len(session.header.tools)
    assert heads == {
        (fresh, ()),
        (forked, ("tool",) * tools + ("system", "system")),
        (codex, ("system", "system")),
    }


def test_a_log_without_requests_says_so(tmp_path):
    path = tmp_path / "no-requests.jsonl"
    path.write_text(
        '{"type":"session","format":"replay-log","version":1,"ts":"2026-03-02T09:00:00Z"}\n'
        '{"type":"user","ts":"2026-03-02T09:00:01Z","text":"hello"}\n'
    )
    with pytest.raises(ReplayError, match="no requests"):
        replay(path, "baseline")


def test_a_request_with_nothing_before_it_is_an_error(tmp_path):
    path = tmp_path / "bare.jsonl"
    path.write_text(
        '{"type":"session","format":"replay-log","version":1,"ts":"2026-03-02T09:00:00Z"}\n'
        '{"type":"request","ts":"2026-03-02T09:00:01Z","request_id":"r1"}\n'
    )
    # Read leniently, its one request is skipped (nothing before it to send): none is left.
    with pytest.raises(ReplayError, match=r"no requests .*1 malformed line\(s\) skipped, first: "
                       r".*bare\.jsonl:2: expected a message of thread 'main' before request r1"):
        replay(path, "baseline")
    with pytest.raises(ReplayError, match=r"bare\.jsonl:2: .* before request r1"):
        replay(path, "baseline", strict=True)


def test_unknown_strategy_error_lists_names():
    with pytest.raises(ReplayError) as info:
        replay(RUN42, "baseline,no-such-strategy-9")
    message = str(info.value)
    assert "no-such-strategy-9" in message
    assert all(name in message for name in CORE)


def test_frames_have_the_contract_columns_in_order():
    result = replay(RUN42, ["baseline", "sliding-10"])
    assert isinstance(result.summary, pl.DataFrame) and isinstance(result.turns, pl.DataFrame)
    assert result.summary.columns[: len(SUMMARY_CONTRACT)] == SUMMARY_CONTRACT
    assert set(TURN_CONTRACT) <= set(result.turns.columns)
    assert result.summary.columns == SUMMARY_COLUMNS
    assert result.turns.columns == TURN_COLUMNS
    assert result.summary.height == 2
    n = len(read_log(RUN42).requests())
    assert result.turns.height == 2 * n
    first = result.turns.row(0, named=True)
    assert first["first_mismatch_token"] == 0 and first["diverged_at"] == "first"
    hit = result.summary["hit_ratio"].to_list()
    expected = [  # unrounded: a display rounds it once (rounded twice, 0.0995 read 10.0 %)
        c / p
        for c, p in zip(
            result.summary["cached_tokens"], result.summary["prompt_tokens"], strict=True
        )
    ]
    assert hit == expected


def test_over_window_counts_requests_past_the_context_window():
    huge = gen.filler(40_000, 3) * 16  # ~150k tokens: past gpt-4o's 128k window
    turns = [
        gen.Turn("reading", [gen.Call("read_file", {"path": "big.log"}, huge)]),
        gen.Turn("done"),
    ]
    session = gen.build_session(turns, provider="openai", model="gpt-4o")
    result = replay(session, ["baseline", "truncate-500"])
    rows = {r["strategy"]: r for r in result.summary.iter_rows(named=True)}
    assert rows["baseline"]["over_window"] == 1
    assert rows["truncate-500"]["over_window"] == 0
    assert rows["baseline"]["peak_prompt_tokens"] > 128_000


def test_over_window_is_judged_on_the_prompt_the_provider_bills():
    """Reasoning of an earlier turn leaves a gpt-5.5 prompt at the new user message: the
    rendered prompt passes the 272k window, the billed one does not."""
    turns = [gen.Turn("thought a lot", followup="now the next step"), gen.Turn("done")]
    session = gen.build_session(turns, provider="openai", model="gpt-5.5")
    first = next(e for e in session.events if isinstance(e, AssistantMessage))
    first.blocks.insert(0, ThinkingBlock(estimated_tokens=300_000))
    records = [r for r in replay_session(session, ["baseline"]) if r.kind == "request"]
    second = records[1]
    assert second.request.total > 272_000 > second.request.total - second.outcome.dropped_tokens
    assert not second.over_window


def test_notes_explain_estimates_and_the_fixed_trajectory():
    result = replay(RUN42, ["baseline"])
    text = " ".join(result.notes)
    assert "trajectory" in text
    assert "gemini" in text and "estimate" in text
    assert "output tokens are counted" in text  # run42 has no provider usage


def _with_hidden_head(session, marks: dict[int, dict]):
    """`session` with a 3,000-token unlogged head and extra fields on some requests."""
    session.header.hidden_prefix_tokens = 3000
    requests = [e for e in session.events if isinstance(e, RequestMarker)]
    for index, fields in marks.items():
        for key, value in fields.items():
            setattr(requests[index], key, value)
    return session


@pytest.mark.parametrize(
    "marks",
    [
        {3: {"system_changed": "new process"}},
        {0: {"thinking_level": "low"}, 3: {"thinking_level": "high"}},
    ],
)
def test_a_changed_head_is_written_again(marks):
    plain = replay_session(gen.deterministic_session(), ["baseline"])
    changed = replay_session(_with_hidden_head(gen.deterministic_session(), marks), ["baseline"])
    hidden = replay_session(_with_hidden_head(gen.deterministic_session(), {}), ["baseline"])
    logged_head = plain[0].request.tokens_before(plain[0].request.kinds.count("tool") + 1)
    assert hidden[3].outcome.cache_read > 3000  # the same head stays cached…
    assert changed[3].outcome.cache_read <= logged_head  # …a changed one is read only up to it
    assert changed[3].outcome.prompt == hidden[3].outcome.prompt  # same size, other content
    assert changed[4].outcome.cache_read >= changed[3].outcome.prompt - 1  # and cached again


def test_a_changed_head_without_an_unlogged_part_changes_the_system_prompt():
    session = gen.deterministic_session()
    requests = [e for e in session.events if isinstance(e, RequestMarker)]
    requests[0].thinking_level, requests[8].thinking_level = "low", "high"
    changed = replay_session(session, ["baseline"])
    plain = replay_session(gen.deterministic_session(), ["baseline"])
    tools = plain[8].request.kinds.count("tool")
    assert changed[8].outcome.prompt == plain[8].outcome.prompt  # same size, other content
    assert changed[8].outcome.cache_read <= plain[8].request.tokens_before(tools)
    assert plain[8].outcome.cache_read > plain[8].request.tokens_before(tools + 1)
    assert changed[9].outcome.cache_read == plain[9].outcome.cache_read  # cached again


def test_a_replay_leaves_the_garbage_collector_as_it_found_it():
    import gc

    before = gc.get_threshold(), gc.get_freeze_count()
    replay_session(gen.deterministic_session(), ["baseline", "truncate-500"])
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_a_strategy_run_makes_no_cyclic_garbage(monkeypatch):
    """While replaying, automatic full collections are made rare (`_long_lived_gc`): that only
    costs no memory if a run's requests leave no reference cycle behind for the collector. Each
    request is followed by a full collection that keeps what it finds (`DEBUG_SAVEALL`); the
    objects alive before the replay are frozen, so it scans only the replay's own."""
    import gc
    from collections import Counter

    from replay.bench import synthetic_session
    from replay.engine import _replay
    from replay.strategies import resolve

    session = synthetic_session(30, 7, max_context_tokens=12_000)  # compactions, summarizers
    resolve("all")  # plug-in entry points are loaded once, before
    found: Counter[str] = Counter()
    request = _replay._Run._request

    def collected_after(self, *args, **kwargs):
        result = request(self, *args, **kwargs)
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            found.update(f"{self.named.name}: {type(o).__qualname__}" for o in gc.garbage)
            gc.garbage.clear()
        finally:
            gc.set_debug(0)
        return result

    monkeypatch.setattr(_replay._Run, "_request", collected_after)
    gc.collect()
    gc.freeze()
    try:
        records = replay_session(session, "all")
    finally:
        gc.unfreeze()
    assert len(records) >= 30 * len(resolve("all"))
    assert not found, found.most_common(10)


def _claude_code_session():
    """A Claude Code 2.1 session on Claude with a subagent: the main thread's cache entries
    are written with the 1-hour TTL, the subagent's with the 5-minute one."""

    def read(path: str, size: int, seed: int) -> gen.Call:
        return gen.Call("read_file", {"path": path}, gen.filler(size, seed))

    explore = [
        gen.Turn("Listing.", [read("src/a.js", 5000, 1)]),
        gen.Turn("One more.", [read("src/b.js", 3000, 5)]),
        gen.Turn("Explored."),
    ]
    turns = [
        gen.Turn("Reading.", [read("src/api.js", 6000, 2)]),
        gen.Turn("Delegating.", [gen.Call("task", {"prompt": "go"}, "found", subagent=explore)]),
        gen.Turn("Reading more.", [read("src/store.js", 3000, 3)]),
        gen.Turn("Done."),
    ]
    session = gen.build_session(turns, provider="anthropic", agent="claude-code")
    session.header.agent_version = "2.1.9"
    return session


@pytest.mark.parametrize("keep_records", [True, False])
def test_one_hour_cache_writes_count_as_cache_writes(keep_records):
    """`cache_write_tokens` is both TTLs' writes, per request and in the summary: with Claude
    Code's 1-hour entries on the main thread, 5m + 1h, and the buckets still add up."""
    session = _claude_code_session()
    records = [r for r in replay_session(session, ["baseline"]) if r.strategy == "baseline"]
    result = replay(session, ["baseline"], client="claude-code", keep_records=keep_records)
    _check_frames(result)
    assert sum(r.outcome.cache_write_1h for r in records) > 0  # the main thread's
    assert sum(r.outcome.cache_write_5m for r in records) > 0  # the subagent's
    turns = result.turns
    assert turns["cache_write_1h_tokens"].sum() > 0 and turns["cache_write_5m_tokens"].sum() > 0
    assert turns["cache_write_tokens"].to_list() == [
        r.outcome.cache_write_5m + r.outcome.cache_write_1h for r in records
    ]
    assert (
        turns["cache_write_tokens"]
        == turns["cache_write_5m_tokens"] + turns["cache_write_1h_tokens"]
    ).all()
    row = result.summary.row(0, named=True)
    assert row["cache_write_tokens"] == sum(
        r.outcome.cache_write_5m + r.outcome.cache_write_1h for r in records
    )
    assert row["cache_write_tokens"] == turns["cache_write_tokens"].sum()


def test_a_prompt_of_exactly_the_context_window_is_not_over_it(monkeypatch):
    """`over_window` means past the window: a billed prompt of exactly the model's context
    window fits; one token more does not."""
    from replay.engine import _replay

    session = gen.deterministic_session()
    last = replay_session(session, ["baseline"])[-1]
    billed = last.request.total - last.outcome.dropped_tokens
    for window, over in ((billed, False), (billed - 1, True)):
        monkeypatch.setattr(_replay, "context_window", lambda model, window=window: window)
        record = replay_session(gen.deterministic_session(), ["baseline"])[-1]
        assert record.request.total - record.outcome.dropped_tokens == billed
        assert record.over_window is over, window


def test_a_result_cleared_at_a_request_s_time_is_cleared_in_that_request():
    """docs/log-format.md: the requests sent *at or after* a result's `cleared_at` saw it
    cleared; `recorded` shows it whole before that instant and cleared from it on."""
    from replay.strategies import ToolResultItem
    from replay.strategies._prompts import LITERAL_CLEARED

    turns = [
        gen.Turn(f"step {n}", [gen.Call("read_file", {"path": f"f{n}"}, f"content {n}")])
        for n in range(4)
    ]
    session = gen.build_session(turns, provider="anthropic")
    marker = {e.request_id: e for e in session.events if isinstance(e, RequestMarker)}
    first = next(e for e in session.events if isinstance(e, ToolResult))
    first.cleared_at = marker["req-003"].ts
    records = [
        r
        for r in replay_session(session, ["recorded"], ReplayConfig(keep_views=True))
        if r.kind == "request"
    ]
    shown = {
        r.request_id: [i.output for i in r.view if isinstance(i, ToolResultItem)][0]
        for r in records[1:]
    }
    assert shown == {"req-002": "content 0", "req-003": LITERAL_CLEARED, "req-004": LITERAL_CLEARED}


def test_microcompact_time_measures_the_gap_from_the_last_answer():
    """Claude Code measures its 60 minutes from the last assistant message: a request 63
    minutes after the previous one but 58 after its (long, streamed) answer clears nothing.
    The gap used to be taken from the previous request's start."""
    turns = [gen.Turn(f"step {n}", [gen.Call("read_file", {"path": f"f{n}"}, "x" * 400)])
             for n in range(8)]
    turns.append(gen.Turn("done", gap_s=58 * 60))
    session = gen.build_session(turns, provider="anthropic")
    answers = [n for n, e in enumerate(session.events) if isinstance(e, AssistantMessage)]
    for event in session.events[answers[7]:]:  # the 8th answer was logged 5 minutes late
        event.ts += timedelta(minutes=5)

    def cleared(strategy: str) -> list[str]:
        turns = replay(session, strategy, per_turn=True).turns
        return turns.filter(pl.col("rewrites") != "")["request_id"].to_list()

    assert cleared("claudecode-microcompact-time-60m-keep-5") == []
    assert cleared("claudecode-microcompact-time-57m-keep-5") == ["req-009"]


def test_thinking_logged_only_by_its_size_is_counted_in_the_output_too():
    """A log without usage: a thinking block known by its size (signature only) was counted in
    later prompts but not in the output of the response that wrote it."""
    turns = [gen.Turn(f"step {n}", [gen.Call("read_file", {"path": f"f{n}"}, "x" * 40)])
             for n in range(2)]

    def outputs(session) -> list[int]:
        turns = replay(session, "baseline", per_turn=True).turns
        return turns["output_tokens"].to_list()

    plain = gen.build_session(turns, provider="anthropic")
    thinking = gen.build_session(turns, provider="anthropic")
    first = next(e for e in thinking.events if isinstance(e, AssistantMessage))
    first.blocks.insert(0, ThinkingBlock(signature="sig", estimated_tokens=5000))
    before, after = outputs(plain), outputs(thinking)
    assert after[0] == before[0] + 5000 and after[1:] == before[1:]


@pytest.mark.parametrize("ttl", [None, "1h"])
def test_a_strategy_reads_the_previous_request_s_simulated_usage_bucket_by_bucket(ttl):
    """`ctx.previous_usage` (what a harness reads off the last response to decide whether to
    compact: opencode adds reads and writes) is the previous request's simulated usage, each
    bucket where the simulation put it, and the output of the response that answered it (a
    harness's reported total is prompt + output). With 1h markers, the writes are 1h ones."""
    from replay.strategies import NamedStrategy, StrategySpec

    seen: dict[int, object] = {}

    def build() -> object:
        def rule(history, ctx):
            seen[ctx.request_index] = ctx.previous_usage
            return list(history)

        return rule

    spec = StrategySpec(family="probe", pattern="probe", build=build, cache_class="append-only",
                        rule="sends everything, records what it was told")
    turns = [gen.Turn(f"step {n} " + "word " * 300,
                      [gen.Call("read_file", {"path": f"f{n}"}, "line\n" * 400)])
             for n in range(5)]
    session = gen.build_session(turns, provider="anthropic")
    records = [r for r in replay_session(session, [NamedStrategy("probe", spec, {})],
                                         ReplayConfig(ttl=ttl)) if r.kind == "request"]
    assert seen[0] is None
    for prev, cur in zip(records, records[1:], strict=False):
        usage, o = seen[cur.request_index], prev.outcome
        assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_5m_tokens,
                usage.cache_write_1h_tokens) == (o.uncached, o.cache_read, o.cache_write_5m,
                                                 o.cache_write_1h)
        assert usage.output_tokens == prev.output_tokens > 0
    written = [r.outcome.cache_write_1h if ttl else r.outcome.cache_write_5m for r in records]
    assert any(r.outcome.cache_read for r in records) and any(written)  # buckets exercised


def _turn_of(thread: str, n: int) -> list:
    """One short turn of `thread` at 10·n seconds: a task, its request `rN` and an "ok" answer."""
    ts = gen.BASE_TS + timedelta(seconds=10 * n)
    return [UserMessage(ts=ts, thread=thread, text=f"task {n}"),
            RequestMarker(ts=ts, thread=thread, request_id=f"r{n}"),
            AssistantMessage(ts=ts, thread=thread, request_id=f"r{n}",
                             blocks=[TextBlock(text="ok")])]


@pytest.mark.parametrize(
    ("thread_fields", "hidden"),
    [({}, 5000), ({"hidden_prefix_tokens": 700}, 700), ({"system": "You review code."}, 0)],
)
def test_a_subagent_thread_is_sent_the_session_s_hidden_prefix_unless_it_has_its_own(
    thread_fields, hidden
):
    """docs/log-format.md: a `thread` event's `system` and `hidden_prefix_tokens` are given
    where they differ from the header's. A thread that gave neither was sent no hidden prefix:
    its requests were billed ~5,000 tokens short."""
    t0 = gen.BASE_TS
    header = SessionHeader(ts=t0, provider="anthropic", model="claude-sonnet-4-5",
                           system="You are an agent.", hidden_prefix_tokens=5000)

    start = ThreadStart(ts=t0 + timedelta(seconds=5), thread_id="sub", **thread_fields)
    session = Session(header=header, events=[*_turn_of("main", 0), start, *_turn_of("sub", 1)])
    records = [r for r in replay_session(session, ["baseline"], ReplayConfig())
               if r.kind == "request"]
    main, sub = records
    own_system = "system" in thread_fields
    # the same two short messages and answers: the prompts differ by the head only
    assert sub.request.total - main.request.total == pytest.approx(hidden - 5000, abs=12 if
                                                                    own_system else 2)


def test_progress_tells_how_far_a_strategy_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """One strategy on a long log runs for minutes: a bar's `detail` hears its requests."""
    from replay.engine import _replay

    monkeypatch.setattr(_replay, "_TELL_EVERY", 0.0)
    calls: list[tuple[str, int, int]] = []
    details: list[str] = []

    class Bar:
        def __call__(self, name: str, done: int, total: int) -> None:
            calls.append((name, done, total))

        def detail(self, text: str) -> None:
            details.append(text)

    session = read_log(RUN42)  # no usage: nothing to fit
    total = len(session.requests())
    replay_session(session, "baseline,truncate-500", ReplayConfig(progress=Bar()))
    assert calls == [("baseline", 0, 2), ("truncate-500", 1, 2), ("", 2, 2)]
    expected = [f"request {n:,} / {total:,}" for n in range(total)]
    assert details == expected * 2
    # A log with usage: its unlogged context is fitted first, by a replay of its own.
    calls.clear(), details.clear()
    for event in session.events:
        if isinstance(event, RequestMarker):
            event.usage = Usage(input_tokens=3000, output_tokens=20)
    replay_session(session, "baseline", ReplayConfig(progress=Bar()))
    assert calls == [(_replay.FITTING, 0, 1), ("baseline", 0, 1), ("", 1, 1)]
    assert details == expected * 2


def _hand_made(n: int = 4) -> list:
    """`n` baseline records of a small log, to be rewritten by hand (`dataclasses.replace`)
    into the buckets, diffs, kinds and costs a results test needs."""
    session = gen.build_session([gen.Turn(f"step {i}") for i in range(n)],
                                provider="anthropic", model="claude-sonnet-4-5")
    records = replay_session(session, "baseline", ReplayConfig())
    assert len(records) == n and all(r.kind == "request" for r in records)
    return records


def test_a_per_request_row_carries_each_bucket_the_diff_and_the_named_rewrites():
    r = _hand_made(1)[0]
    r = replace(
        r,
        over_window=False,
        outcome=CacheOutcome(uncached=10, cache_read=20, cache_write_5m=3, cache_write_1h=7),
        diff=PrefixDiff(first_mismatch_token=25, first_mismatch_block=4, message_index=2,
                        where="message 2", is_break=True),
        events=[RewriteEvent("prune", "3 tool results"), RewriteEvent("compaction")],
    )
    row = turns_frame([r]).row(0, named=True)
    assert (row["prompt_tokens"], row["cached_tokens"], row["uncached_tokens"]) == (40, 20, 10)
    assert (row["cache_write_tokens"], row["cache_write_5m_tokens"],
            row["cache_write_1h_tokens"]) == (10, 3, 7)
    assert (row["first_mismatch_token"], row["first_mismatch_message"],
            row["diverged_at"]) == (25, 2, "message 2")
    assert row["rewrites"] == "prune: 3 tool results; compaction"
    assert row["over_window"] is False  # a flag per request, a count in the summary
    assert turns_frame([replace(r, events=[])])["rewrites"].to_list() == [None]


def _diff(where: str = "tail", message: int | None = None, shared: int = 0) -> PrefixDiff:
    return PrefixDiff(first_mismatch_token=shared, first_mismatch_block=None,
                      message_index=message, where=where, is_break=message is not None)


def test_the_summary_sums_every_call_but_counts_only_requests_as_requests():
    """Totals take the summarizer call in; `requests`, the peak, the prefix breaks and the
    misses are the agent's requests only (README "Output columns"); a thread's cold start is
    no miss, a cause without a kind counts as `other`; money stays exact to 1e-18."""
    r0, r1, r2, r3, r4, r5 = _hand_made(6)
    tiny = Decimal("0.000000000000000001")
    records = [
        replace(r0, diff=_diff("first"), output_tokens=1, cost_usd=Decimal(1),
                outcome=CacheOutcome(100, 0, 0, 0, miss_cause="cold start",
                                     miss_kind="cold-start")),
        replace(r1, output_tokens=2, cost_usd=Decimal(2),
                outcome=CacheOutcome(10, 180, 10, 0, miss_cause="TTL expired",
                                     miss_kind="ttl-expired", storage_usd=Decimal("0.5"),
                                     created_tokens=30)),
        replace(r2, kind="summarizer", diff=_diff("message 1", 1), over_window=True,
                output_tokens=40, cost_usd=Decimal(4),
                outcome=CacheOutcome(500, 0, 0, 0, storage_usd=Decimal("0.125"))),
        replace(r3, diff=_diff("message 3", 3), events=[], output_tokens=8,
                cost_usd=Decimal(8),
                outcome=CacheOutcome(20, 60, 0, 20, miss_cause="an unnamed cause",
                                     storage_usd=Decimal("0.25"))),
        replace(r4, diff=_diff("message 2", 2), events=[RewriteEvent("prune")],
                output_tokens=16, cost_usd=Decimal(16),
                outcome=CacheOutcome(50, 0, 0, 0, miss_cause="TTL expired",
                                     miss_kind="ttl-expired")),
        replace(r5, output_tokens=32, cost_usd=tiny,
                outcome=CacheOutcome(40, 0, 0, 0, miss_cause="another model",
                                     miss_kind="model-switch")),
    ]
    records = [replace(r, blind_actions=[]) for r in records]
    assert summary_frame(records).row(0, named=True) == {
        "strategy": "baseline",
        "requests": 5,
        "prompt_tokens": 990,
        "cached_tokens": 240,
        "cache_write_tokens": 30,
        "uncached_tokens": 720,
        "output_tokens": 99,
        "cost_usd": Decimal(31) + tiny,
        "peak_prompt_tokens": 200,  # r1's, not the summarizer's 500 nor the last one's 40
        "hit_ratio": 240 / 990,  # created tokens are in no bucket of the prompt
        "prefix_breaks": 2,
        "over_window": 1,
        "summarizer_calls": 1,
        "summarizer_cost_usd": Decimal(4),
        "misses": 4,
        "blind_actions": 0,
        "blind_mentions": 0,
        "miss_causes": "ttl-expired=2, model-switch=1, other=1",
        "storage_cost_usd": Decimal("0.875"),
        "cache_created_tokens": 30,
    }
    assert turns_frame(records)["cost_usd"].to_list()[-1] == tiny
    assert ResultTables.of(records).unnamed_rewrites == {"baseline": 1}  # r3, not r4 (named)


def test_a_changed_system_prompt_is_a_prefix_break_but_no_unnamed_rewrite():
    """A request whose tools or system prompt changed breaks the prefix (`prefix_breaks`), but
    rewrote no earlier message: only a break at a message with no rewrite event is unnamed."""
    r0, r1, r2 = _hand_made(3)
    system = PrefixDiff(first_mismatch_token=12, first_mismatch_block=1, message_index=None,
                        where="system", is_break=True)
    records = [r0, replace(r1, diff=system, events=[]),
               replace(r2, diff=_diff("message 1", 1), events=[]),
               replace(r2, strategy="tidy", diff=_diff(), events=[])]
    assert summary_frame(records)["prefix_breaks"].to_list() == [2, 0]
    tables = ResultTables.of(records)
    assert tables.unnamed_rewrites == {"baseline": 1}  # "tidy" has none: not listed
    assert tables.mentions == {}  # no hidden mention anywhere: nothing listed


# --- what the engine hands strategies and records (engine mutation pass) --------------------


def _four_reads(provider: str = "anthropic"):
    turns = [gen.Turn(f"step {n}", [gen.Call("read_file", {"path": f"f{n}"}, f"content {n}")])
             for n in range(4)]
    return gen.build_session(turns, provider=provider)


def test_a_logged_compaction_replaces_only_the_events_it_names():
    """docs/log-format.md: a `compaction`'s `replaces` names the events it replaced (Claude
    Code's preserved messages are kept out of it, docs/adapters.md): the task it does not name
    stays in `recorded`'s view, before the summary."""
    from replay.strategies import SummaryItem, UserItem

    session = _four_reads()
    at = next(n for n, e in enumerate(session.events)
              if isinstance(e, RequestMarker) and e.request_id == "req-004")
    named = [e.id for e in session.events[1:at] if not isinstance(e, RequestMarker)]
    session.events.insert(at, Compaction(ts=session.events[at].ts, summary="SUMMARY",
                                         replaces=named))
    record = next(r for r in replay_session(session, ["recorded"], ReplayConfig(keep_views=True))
                  if r.request_id == "req-004")
    assert [(type(i), getattr(i, "event_index", None)) for i in record.view] == [
        (UserItem, 0), (SummaryItem, None)]
    assert record.view[0].text == "Fix the failing test." and record.view[1].text == "SUMMARY"


def test_a_branch_takes_its_parents_estimated_messages_before_the_copied_event():
    """`inherit_unlogged`: before the copy of the parent's event `original`, an abandoned branch
    takes the estimated messages (context the log does not hold) the parent had before that
    event, the very items, but none the parent stopped sending; each once."""
    from replay.engine._replay import _Thread, inherit_unlogged
    from replay.strategies import UserItem

    def estimated(index: int) -> UserItem:
        return UserItem(f"[context {index}]", event_index=index, injected=True,
                        estimated_tokens=100)

    parent, branch = _Thread(strategy=None), _Thread(strategy=None)
    early, dropped, late = estimated(3), estimated(6), estimated(9)
    parent.history = [UserItem("task", event_index=0), early, UserItem("more", event_index=4),
                      dropped, UserItem("again", event_index=7), late]
    parent.unlogged.dropped.add(dropped)
    inherit_unlogged(branch, parent, None)  # a copy of an event the log does not hold
    inherit_unlogged(branch, None, 4)  # no parent thread
    assert branch.history == [] and branch.inherited == 0
    inherit_unlogged(branch, parent, 4)
    assert branch.history == [early] and branch.history[0] is early
    assert branch.inherited == 2  # up to the parent's event 4
    inherit_unlogged(branch, parent, 4)  # the next copy of the same stretch takes nothing again
    assert branch.history == [early]
    inherit_unlogged(branch, parent, 7)
    assert branch.history == [early] and branch.inherited == 4  # the dropped one is not sent
    inherit_unlogged(branch, parent, 10)
    assert branch.history == [early, late] and branch.inherited == 6


def _probe(seen: list):
    """A strategy that sends everything and keeps what the engine told it at each request."""
    from replay.strategies import NamedStrategy, StrategySpec

    def build() -> object:
        def rule(history, ctx):
            seen.append((list(history), ctx))
            return list(history)

        return rule

    spec = StrategySpec(family="probe", pattern="probe", build=build, cache_class="append-only",
                        rule="sends everything, records what it was told")
    return NamedStrategy("probe", spec, {})


def test_a_strategy_is_told_its_thread_s_model_head_and_times():
    """`StrategyContext` (replay/strategies/_base.py), per request: the model (the request's
    own, else its thread's, else the session's), the context window (`ReplayConfig`'s when
    set), its thread's system prompt and hidden prefix (docs/log-format.md: a `thread` event's
    own where given), the start of the thread's previous request and the time of its newest
    answer, an answer the harness never sent back (`in_context: false`) included, though the
    history holds no such answer."""
    from replay.strategies import AssistantItem
    from replay.tokens import family_for

    t0 = gen.BASE_TS

    def at(seconds: int):
        return t0 + timedelta(seconds=seconds)

    def answer(thread: str, rid: str, seconds: int, **fields) -> AssistantMessage:
        return AssistantMessage(ts=at(seconds), thread=thread, request_id=rid,
                                blocks=[TextBlock(text=f"answer {rid}")], **fields)

    header = SessionHeader(ts=t0, provider="anthropic", model="claude-sonnet-4-5",
                           system="You are an agent.", hidden_prefix_tokens=5000)
    events = [
        UserMessage(ts=at(0), text="task"),
        RequestMarker(ts=at(1), request_id="r0"),
        answer("main", "r0", 3),
        ThreadStart(ts=at(5), thread_id="sub", system="You review code.",
                    hidden_prefix_tokens=700, model="claude-haiku-4-5"),
        UserMessage(ts=at(6), thread="sub", text="review"),
        RequestMarker(ts=at(7), thread="sub", request_id="r1"),
        answer("sub", "r1", 9),
        UserMessage(ts=at(20), text="more"),
        RequestMarker(ts=at(21), request_id="r2"),
        answer("main", "r2", 23, in_context=False),
        UserMessage(ts=at(30), text="again"),
        RequestMarker(ts=at(31), request_id="r3"),
        answer("main", "r3", 33),
        UserMessage(ts=at(40), thread="sub", text="review again"),
        RequestMarker(ts=at(41), thread="sub", request_id="r4", model="claude-opus-4-5"),
        answer("sub", "r4", 43),
    ]
    seen: list = []
    records = replay_session(Session(header=header, events=events), [_probe(seen)],
                             ReplayConfig(context_window=100_000))
    told = [(c.request_index, c.ts, c.model, c.context_window, c.system, c.hidden_tokens,
             c.previous_ts, c.last_answer_ts) for _, c in seen]
    main, sub = "You are an agent.", "You review code."
    assert told == [
        (0, at(1), "claude-sonnet-4-5", 100_000, main, 5000, None, None),
        (1, at(7), "claude-haiku-4-5", 100_000, sub, 700, None, None),
        (2, at(21), "claude-sonnet-4-5", 100_000, main, 5000, at(1), at(3)),
        (3, at(31), "claude-sonnet-4-5", 100_000, main, 5000, at(21), at(23)),
        (4, at(41), "claude-opus-4-5", 100_000, sub, 700, at(7), at(9)),
    ]
    assert [r.model for r in records] == [c[2] for c in told]
    answers = [sum(isinstance(i, AssistantItem) for i in history) for history, _ in seen]
    assert answers == [0, 0, 1, 1, 1]  # r2's answer was never sent back
    overhead = family_for("claude-sonnet-4-5")
    assert {(c.message_overhead, c.tool_call_overhead) for _, c in seen} == {
        (overhead.message_overhead, overhead.tool_call_overhead)}


def test_a_record_keeps_its_view_history_size_rewrites_and_the_store_before_a_rewrite():
    """`RequestRecord`: `view_items` and `view` (with `keep_views`) are what the strategy sent,
    `history_len` the thread's messages so far, `events` its rewrites; with `snapshot_stores`,
    `store_before` only where it rewrote, and `rendered_with` the head it was sent with (its
    version bumped where the adapter saw the head change: `system_changed`). Per-block arrays
    stay with `keep_blocks` (the default)."""
    session = _with_hidden_head(gen.deterministic_session(), {3: {"system_changed": "restart"}})
    messages, before = 0, []
    for e in session.events:
        if isinstance(e, UserMessage | AssistantMessage | ToolResult):
            messages += 1
        elif isinstance(e, RequestMarker):
            before.append(messages)
    config = ReplayConfig(keep_views=True, snapshot_stores=True)
    records = replay_session(session, ["sliding-10", "age-truncate-500-keep-3"], config)
    assert [r.kind for r in records] == ["request"] * 24
    for name in ("sliding-10", "age-truncate-500-keep-3"):
        mine = [r for r in records if r.strategy == name]
        assert [r.history_len for r in mine] == before
        assert any(r.events for r in mine) and not all(r.events for r in mine)
        for r in mine:
            assert r.view and r.view_items == len(r.view) <= r.history_len
            assert (r.store_before is not None) == bool(r.events)
            assert r.request.block_ids is not None and len(r.request.block_ids) > 0
        assert [(w.system, w.hidden_tokens, w.head_version)
                for w in (r.rendered_with for r in mine)] == [
            (gen.SYSTEM, 3000, 0)] * 3 + [(gen.SYSTEM, 3000, 1)] * 9
    sliding = [r for r in records if r.strategy == "sliding-10"]
    assert sliding[-1].view_items < sliding[-1].history_len  # it let the oldest go
    assert {e.kind for r in sliding for e in r.events} == {"drop"}


def _billed(session, input_tokens: int = 20_000):
    """`session` with the provider's usage on every request (what the unlogged fit needs)."""
    for event in session.events:
        if isinstance(event, RequestMarker):
            event.usage = Usage(input_tokens=input_tokens, output_tokens=20)
    return session


def test_the_unlogged_context_is_fitted_as_billed_on_a_cache_of_its_own():
    """`fit_unlogged_context`: fitted on the log's own provider and model whatever the run
    simulates, on a cache of its own (`SharedCache`: a batch's shared cache is left alone),
    and its run is no record of the replay (`on_record` hears the strategy's requests only).
    `unlogged_context={}` means none: nothing is fitted."""
    from replay.engine._replay import SharedCache, fit_unlogged_context, with_unlogged_context

    session = _billed(gen.deterministic_session())
    fitted = fit_unlogged_context(session, ReplayConfig())
    assert fitted and fitted.residuals()  # 20,000 billed tokens: more than the log shows
    assert fit_unlogged_context(session, ReplayConfig(provider="openai", model="gpt-5")) == fitted
    shared = SharedCache(scope="account")
    assert fit_unlogged_context(session, ReplayConfig(shared_cache=shared)) == fitted
    assert shared.stores == {} and shared.tables == {}
    none = ReplayConfig(unlogged_context={})
    assert with_unlogged_context(session, none) is none
    left = ReplayConfig()
    assert with_unlogged_context(session, left).unlogged_context == fitted
    assert left.unlogged_context is None  # the caller's config is not changed
    heard = []
    assert replay_session(session, ["baseline"], ReplayConfig(on_record=heard.append)) == []
    assert [(r.strategy, r.kind) for r in heard] == [("baseline", "request")] * 12


def test_output_tokens_are_the_usage_s_else_counted_from_the_recorded_answer():
    """A request's output is the provider's `output_tokens` when its usage gives some; else the
    recorded answer counted (an estimate, as the notes say), and 0 for a request no answer
    followed (still an estimate)."""
    def session():
        s = gen.build_session([gen.Turn(f"step {n} " + "word " * 40) for n in range(3)],
                              provider="anthropic")
        assert isinstance(s.events[-1], AssistantMessage)
        del s.events[-1]  # the last request was never answered
        return s

    counted = [(r.output_tokens, r.request.estimated_output)
               for r in replay_session(session(), ["baseline"])]
    assert counted[0][0] > 40 and counted[1][0] > 40 and counted[2] == (0, True)
    billed = session()
    markers = [e for e in billed.events if isinstance(e, RequestMarker)]
    markers[0].usage = Usage(input_tokens=100, output_tokens=7)
    markers[1].usage = Usage(input_tokens=100, output_tokens=0)  # none reported: counted
    records = replay_session(billed, ["baseline"], ReplayConfig(unlogged_context={}))
    assert [(r.output_tokens, r.request.estimated_output) for r in records] == [
        (7, False), counted[1], (0, True)]


def test_the_answer_to_a_request_follows_docs_log_format_ordering_rules():
    """docs/log-format.md "Ordering rules": the assistant's `request_id` names the request it
    answers; without one, the next assistant event of the same thread answers its thread's
    request; one naming no request answers its thread's last request; a repeated id names the
    latest request with it; a request's answer is the first that answers it."""
    from replay.engine._replay import _responses

    t = gen.BASE_TS

    def request(rid: str, thread: str = "main") -> RequestMarker:
        return RequestMarker(ts=t, request_id=rid, thread=thread)

    def answer(rid: str | None, thread: str = "main") -> AssistantMessage:
        return AssistantMessage(ts=t, request_id=rid, thread=thread,
                                blocks=[TextBlock(text="ok")])

    events = [
        UserMessage(ts=t, text="task"),  # 0
        request("a"),  # 1
        request("b"),  # 2
        answer("a"),  # 3: names a, though b is its thread's latest
        request("c"),  # 4
        request("s", thread="sub"),  # 5
        answer(None),  # 6: main's next answer: c's
        answer(None, thread="sub"),  # 7: s's
        request("d"),  # 8
        answer("no-such-request"),  # 9: falls back to its thread's last request, d
        request("e"),  # 10
        request("e"),  # 11
        answer("e"),  # 12: the latest request named e
        answer("e"),  # 13: a second answer to e: the first (12) stays its answer
    ]
    session = Session(header=SessionHeader(ts=t), events=events)
    assert {request: at for request, (at, _) in _responses(session).items()} == {
        1: 3, 4: 6, 5: 7, 8: 9, 11: 12}


def test_a_log_whose_header_names_no_model_replays_on_the_model_asked_for():
    """`tokenizer_ratio` converts sizes from the log's model (its header's) to the run's: 1.0
    without a run model (docstring), and nothing to convert from when the header names none
    (the requests name their models): such a log replays on `--model`."""
    from replay.engine._replay import tokenizer_ratio

    session = gen.build_session([gen.Turn("step 0"), gen.Turn("done")], provider="openai")
    assert tokenizer_ratio(session, None) == 1.0
    session.header.model = None
    for event in session.events:
        if isinstance(event, RequestMarker):
            event.model = "gpt-5"
    assert tokenizer_ratio(session, "claude-sonnet-4-5") == 1.0
    config = ReplayConfig(provider="anthropic", model="claude-sonnet-4-5")
    records = replay_session(session, ["baseline"], config)
    assert [r.model for r in records] == ["claude-sonnet-4-5"] * 2


def test_the_head_is_versioned_where_a_logged_thinking_level_changes():
    """`_head_changes`: a thinking level that differs from the thread's last logged one re-sends
    the head as other content; the first level logged, a request that logs none, and the same
    level again change nothing (`rendered_with.head_version`)."""
    marks = {2: {"thinking_level": "low"}, 5: {"thinking_level": "high"},
             8: {"thinking_level": "high"}, 9: {"thinking_level": "low"}}
    session = _with_hidden_head(gen.deterministic_session(), marks)
    records = replay_session(session, ["baseline"], ReplayConfig(snapshot_stores=True))
    assert [r.rendered_with.head_version for r in records] == [0] * 5 + [1] * 4 + [2] * 3


def test_a_fresh_summarizer_call_sends_its_transcript_its_unlogged_messages_and_instruction():
    """A strategy's `SummarizerCall` is a record of its own before its request's: thread
    `<thread>/summarizer`, id `<request id>:summarizer`; a fresh one sends its input, then the
    messages known only by their size (`unlogged`, each at its estimated size), then the
    instruction, without the main head (no system prompt, tools or 3,000-token unlogged head);
    its output is the summary counted in the model's tokens, an estimate."""
    from replay.strategies import NamedStrategy, StrategySpec, UserItem
    from replay.strategies._view import SummarizerCall, View
    from replay.tokens import counter_for

    summary = "The agent read two files and found the bug in the parser. " * 3
    unlogged = UserItem("[context not in the log]", injected=True, estimated_tokens=500)

    def build() -> object:
        def rule(history, ctx):
            if ctx.request_index != 1:
                return list(history)
            call = SummarizerCall(input_items=(UserItem("transcript " * 20),),
                                  instruction="Summarize.", summary=summary,
                                  reuse_main_prefix=False, unlogged=(unlogged,))
            return View(list(history), summarizer_calls=[call])

        return rule

    spec = StrategySpec(family="probe", pattern="probe", build=build, cache_class="append-only",
                        rule="sends everything, one summarizer call at the second request")
    session = gen.build_session([gen.Turn(f"step {n}") for n in range(3)], provider="anthropic")
    session.header.hidden_prefix_tokens = 3000
    records = replay_session(session, [NamedStrategy("probe", spec, {})], ReplayConfig())
    assert [(r.kind, r.request_index) for r in records] == [
        ("request", 0), ("summarizer", 1), ("request", 1), ("request", 2)]
    call = records[1]
    assert (call.thread, call.request_id) == ("main/summarizer", "req-002:summarizer")
    assert call.view_items == 3
    assert not {"tool", "system"} & set(call.request.kinds)
    assert 500 < call.request.total < 1000  # the estimated message, but no 3,000-token head
    assert call.output_tokens == counter_for(call.model).count(summary)
    assert call.request.estimated_output


def test_a_request_is_priced_under_the_variant_the_log_says_it_was_billed_under():
    """docs/log-format.md: a `request`'s `price_context` is the price variant it was billed
    under (Claude's fast mode: `{"speed": "fast"}`): the record is priced, and says it was,
    under that variant, at the request's date."""
    from replay.prices import Pricer

    fast = {"speed": "fast"}
    session = gen.build_session([gen.Turn(f"step {n}") for n in range(2)], provider="anthropic",
                                model="claude-opus-4-8")
    session.requests()[1].price_context = fast
    records = replay_session(session, ["baseline"])
    assert [r.price_context for r in records] == [None, fast]
    pricer = Pricer()
    for r in records:
        args = {"model": r.model, "provider": r.provider, "ts": r.ts}
        price = pricer.price(r.buckets, **args, context=r.price_context)
        assert (r.cost_usd, r.input_cost_usd) == (price.total_usd, price.input_usd)
    standard = pricer.price(records[1].buckets, model="claude-opus-4-8", provider="anthropic",
                          ts=records[1].ts)
    assert records[1].cost_usd > standard.total_usd  # fast mode costs more


def test_hidden_prefixes_are_converted_to_the_replayed_model_s_tokens():
    """Sizes the log holds only as numbers are in its own model's tokens (`tokenizer_ratio`:
    a gpt-5 log replayed as Claude counts 1.199 Claude tokens per token, docs/calibration.md):
    the session's hidden prefix and a thread's own alike. A thread whose `thread` event gives
    an empty system prompt is sent that one, with no hidden prefix (docs/log-format.md)."""
    t0 = gen.BASE_TS

    header = SessionHeader(ts=t0, provider="openai", model="gpt-5", system="You are an agent.",
                           hidden_prefix_tokens=2000)
    events = [*_turn_of("main", 0),
              ThreadStart(ts=t0, thread_id="own", hidden_prefix_tokens=1000), *_turn_of("own", 1),
              ThreadStart(ts=t0, thread_id="bare", system=""), *_turn_of("bare", 2)]
    session = Session(header=header, events=events)
    for model, ratio in (("gpt-5", 1.0), ("claude-sonnet-4-5", 1.199)):
        seen: list = []
        config = ReplayConfig(model=model, provider="anthropic" if ratio != 1 else None)
        replay_session(session, [_probe(seen)], config)
        told = [(c.system, c.hidden_tokens) for _, c in seen]
        assert told == [("You are an agent.", round(2000 * ratio)),
                        ("You are an agent.", round(1000 * ratio)), ("", 0)], model


def test_a_strategy_s_history_holds_the_log_s_messages_as_they_are():
    """The history a strategy is given: every message of the thread so far, in order, with its
    event index; a user message keeps its `injected` flag, a tool result its error flag and
    the arguments of the call it answers (what a strategy names a pruned result by)."""
    from replay.strategies import AssistantItem, ToolResultItem, UserItem

    turns = [gen.Turn("Running.", [gen.Call("run_tests", {"n": "all"}, "1 failed", True)],
                      followup="<system-reminder>tests are red</system-reminder>"),
             gen.Turn("Done.")]
    session = gen.build_session(turns, provider="anthropic")
    reminder = next(e for e in session.events
                    if isinstance(e, UserMessage) and e.text.startswith("<system"))
    reminder.injected = True
    seen: list = []
    replay_session(session, [_probe(seen)])
    history = seen[-1][0]
    assert [(type(i), i.event_index) for i in history] == [
        (UserItem, 0), (AssistantItem, 2), (ToolResultItem, 3), (UserItem, 4)]
    task, _, result, followup = history
    assert (task.injected, followup.injected) == (False, True)
    assert (result.call_id, result.tool_name, result.output, result.is_error,
            result.arguments) == ("call-001", "run_tests", "1 failed", True, {"n": "all"})


@pytest.mark.parametrize("client", ["default", "automatic"])
def test_a_forced_ttl_writes_every_cache_entry_with_that_ttl(client):
    """`ReplayConfig.ttl` ("what if we had used 1h caching") forces every breakpoint's TTL,
    the top-level automatic one included: on Claude, every write is then a 1-hour write."""
    session = gen.deterministic_session()
    plain = replay_session(session, ["baseline"], ReplayConfig(client=client))
    hour = replay_session(session, ["baseline"], ReplayConfig(client=client, ttl="1h"))
    written = sum(r.outcome.cache_write_5m for r in plain)
    assert written > 0 and sum(r.outcome.cache_write_1h for r in plain) == 0
    assert sum(r.outcome.cache_write_5m for r in hour) == 0
    assert sum(r.outcome.cache_write_1h for r in hour) > 0
    assert all(r.cost_usd > 0 for r in hour)


def test_a_forced_ttl_leaves_the_automatic_marker_automatic():
    """pricing/cache/anthropic.json: before 2026-02-19 Anthropic had no top-level automatic
    caching, only explicit markers: a client that sends only the automatic one caches nothing
    then, `--ttl 1h` or not (forcing the TTL does not make it an explicit marker)."""
    from datetime import UTC, datetime

    turns = [gen.Turn(f"step {n} " + "word " * 600) for n in range(3)]
    session = gen.build_session(turns, provider="anthropic",
                                start=datetime(2025, 6, 2, 9, 0, tzinfo=UTC))
    for ttl in (None, "1h"):
        records = replay_session(session, ["baseline"], ReplayConfig(client="automatic", ttl=ttl))
        assert all(r.outcome.cache_read == r.outcome.cache_write_5m == r.outcome.cache_write_1h
                   == 0 for r in records), ttl


def test_another_thread_reads_an_entry_only_once_the_logged_response_ended():
    """docs/cache-rules.md "Readiness": on DeepSeek (`ready_at: response-end`) an entry becomes
    readable by other threads after the request's logged duration (`duration_ms`): a subagent
    sent 20 s into a 60 s request reads nothing of it; 90 s in, it reads the shared head."""
    from datetime import UTC, datetime, timedelta

    from replay.log import UserMessage as User

    t0 = datetime(2026, 10, 20, 12, 0, tzinfo=UTC)

    def sub_read(after_s: int) -> int:
        at = t0 + timedelta(seconds=after_s)
        header = SessionHeader(ts=t0, provider="deepseek", model="deepseek-v4-flash",
                               system=gen.filler(6000, 1), tools=gen.TOOLS)
        events = [
            User(ts=t0, text="main task"),
            RequestMarker(ts=t0, request_id="r0", duration_ms=60_000),
            AssistantMessage(ts=t0 + timedelta(seconds=60), request_id="r0",
                             blocks=[TextBlock(text="ok")]),
            ThreadStart(ts=at, thread_id="sub"),
            User(ts=at, thread="sub", text="sub task"),
            RequestMarker(ts=at, thread="sub", request_id="r1"),
            AssistantMessage(ts=at, thread="sub", request_id="r1",
                             blocks=[TextBlock(text="ok")]),
        ]
        records = replay_session(Session(header=header, events=events), ["baseline"])
        return records[1].outcome.cache_read

    assert sub_read(20) == 0
    assert sub_read(90) > 1000


def _quotes_a_dropped_path() -> list:
    """Turns whose 8th request reads a path only an early tool result (which `sliding-4-pin-first`
    no longer sends there) named: a hidden quote."""
    turns = [gen.Turn("Reading notes.", [gen.Call("read_file", {"path": "notes.txt"},
                                                  "the config lives in src/settings_loader.py")])]
    turns += [gen.Turn(f"step {n}", [gen.Call("read_file", {"path": f"f{n}.txt"}, f"content {n}")])
              for n in range(6)]
    return [*turns, gen.Turn("Now the config.", [gen.Call("read_file", {
        "path": "src/settings_loader.py"}, "x = 1")]), gen.Turn("done")]


def test_text_the_head_sends_is_never_hidden_evidence():
    """The evidence check counts what a request sends besides its messages as always shown:
    the tool definitions, and its own thread's system prompt (a subagent's, not the session's):
    a path they name is no hidden quote even where the message that named it was dropped."""
    def blind(session) -> list[tuple[str, int, str]]:
        return [(r.thread, r.request_index, b.kind)
                for r in replay_session(session, ["sliding-4-pin-first"]) for b in r.blind_actions]

    plain = gen.build_session(_quotes_a_dropped_path(), provider="anthropic")
    assert blind(plain) == [("main", 7, "hidden-quote")]
    tool = ToolDef(name="load_settings", description="Loads src/settings_loader.py.",
                   input_schema={"type": "object"})
    with_tool = gen.build_session(_quotes_a_dropped_path(), provider="anthropic",
                                  tools=[*gen.TOOLS, tool])
    assert blind(with_tool) == []
    delegated = [gen.Turn("Delegating.", [gen.Call("task", {"prompt": "go"}, "found",
                                                   subagent=_quotes_a_dropped_path())]),
                 gen.Turn("done")]
    sub = gen.build_session(delegated, provider="anthropic")
    thread = "sub-call-001"
    assert blind(sub) == [(thread, 8, "hidden-quote")]
    start = next(e for e in sub.events if isinstance(e, ThreadStart))
    start.system = gen.SYSTEM + " The settings are in src/settings_loader.py."
    assert blind(sub) == []


def test_an_abandoned_branch_re_sends_its_parents_unlogged_context_up_to_the_fork():
    """docs/adapters.md: an abandoned branch starts with copies (`copied_from`) of its parent's
    history up to the fork; it re-sent what the parent sent there, the context the log does
    not hold included (`inherit_unlogged`): its prompt is the parent's cached one up to the
    fork, the parent's estimated message in its place."""
    from replay.log import UserMessage as User

    t0, branch = gen.BASE_TS, "main/branch-1"

    def at(seconds: int):
        return t0 + timedelta(seconds=seconds)

    def answer(text: str, seconds: int, thread: str = "main", **fields) -> AssistantMessage:
        return AssistantMessage(ts=at(seconds), thread=thread, blocks=[TextBlock(text=text)],
                                **fields)

    task = "task " + gen.filler(3000, 1)
    events = [
        User(ts=at(0), text=task, id="u0"),
        RequestMarker(ts=at(1), request_id="r0"),  # event 1: 800 unlogged tokens sent here
        answer("first answer", 2, request_id="r0", id="a0"),
        User(ts=at(3), text="next", id="u1"),
        RequestMarker(ts=at(4), request_id="r1"),
        answer("second answer", 5, request_id="r1"),
        ThreadStart(ts=at(6), thread_id=branch, branch_of="main"),
        User(ts=at(6), thread=branch, text=task, copied_from="u0"),
        answer("first answer", 6, thread=branch, copied_from="a0"),
        User(ts=at(6), thread=branch, text="next", copied_from="u1"),
        User(ts=at(7), thread=branch, text="another way"),
        RequestMarker(ts=at(8), thread=branch, request_id="r2"),
        answer("ok", 9, thread=branch, request_id="r2"),
    ]
    header = SessionHeader(ts=t0, provider="anthropic", model="claude-sonnet-4-5",
                           system=gen.SYSTEM)
    config = ReplayConfig(unlogged_context={("main", 1): 800}, keep_views=True)
    _, parent, fork = replay_session(Session(header=header, events=events), ["baseline"], config)
    estimated = parent.view[1]
    assert estimated.estimated_tokens and estimated.event_index == 1
    assert [getattr(i, "event_index", None) for i in fork.view] == [7, 1, 8, 9, 10]
    assert fork.view[1] is estimated
    assert fork.outcome.cache_read == parent.request.total


def test_a_logged_compaction_replaces_the_unlogged_context_sent_among_its_events():
    """Context the log does not hold, sent at a request (an estimated message), goes with the
    logged events around it: a compaction whose `replaces` names the events on both sides of
    it replaces it too, at the second compaction as at the first (`recorded`)."""
    from replay.log import UserMessage as User
    from replay.strategies import SummaryItem, UserItem

    t0 = gen.BASE_TS

    def at(seconds: int):
        return t0 + timedelta(seconds=seconds)

    def answer(rid: str, seconds: int, id: str) -> AssistantMessage:
        return AssistantMessage(ts=at(seconds), request_id=rid, id=id,
                                blocks=[TextBlock(text=f"answer {rid}")])

    events = [
        User(ts=at(0), text="task", id="u0"),
        RequestMarker(ts=at(1), request_id="r0"),
        answer("r0", 2, "a0"),
        User(ts=at(3), text="next", id="u1"),
        RequestMarker(ts=at(4), request_id="r1"),
        answer("r1", 5, "a1"),
        Compaction(ts=at(6), summary="S1", replaces=["u0", "a0", "u1", "a1"], id="c1"),
        RequestMarker(ts=at(7), request_id="r2"),  # right after it: its message comes first
        answer("r2", 8, "a2"),
        User(ts=at(9), text="more", id="u3"),
        RequestMarker(ts=at(10), request_id="r3"),
        answer("r3", 11, "a3"),
        Compaction(ts=at(12), summary="S2", replaces=["c1", "a2", "u3", "a3"], id="c2"),
        User(ts=at(13), text="last", id="u4"),
        RequestMarker(ts=at(14), request_id="r4"),
        answer("r4", 15, "a4"),
    ]
    header = SessionHeader(ts=t0, provider="anthropic", model="claude-sonnet-4-5",
                           system=gen.SYSTEM)
    unlogged = {("main", n): 300 for n, e in enumerate(events) if isinstance(e, RequestMarker)}
    records = replay_session(Session(header=header, events=events), ["recorded"],
                             ReplayConfig(unlogged_context=unlogged, keep_views=True))
    views = {r.request_id: [(type(i), getattr(i, "event_index", None)) for i in r.view]
             for r in records}
    estimated = [i for r in records for i in r.view if isinstance(i, UserItem)
                 and i.estimated_tokens]
    assert {i.event_index for i in estimated} == {1, 4, 7, 10, 14}
    assert views["r2"] == [(SummaryItem, None), (UserItem, 7)]
    assert views["r4"] == [(SummaryItem, None), (UserItem, 13), (UserItem, 14)]


def test_a_hidden_prefix_in_parts_is_as_big_as_its_parts_together():
    """A thread's hidden prefix is one size, or the parts the unlogged-context fit split its
    head into (`ThreadFit.head`): a strategy is told their sum (`_total`)."""
    from replay.engine._replay import _total

    assert _total(700) == 700
    assert _total((1200, 300, 5)) == 1505


def test_a_replay_leaves_a_caller_s_own_gc_freeze_alone():
    """`_long_lived_gc` freezes the log's objects only when nothing is frozen yet: a caller
    that froze its own keeps them frozen through and after the replay."""
    import gc

    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        replay_session(gen.deterministic_session(), ["baseline"])
        # still frozen (some of those objects may have been freed meanwhile, never unfrozen)
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def test_the_provider_and_model_asked_for_override_every_request_s_own():
    """`ReplayConfig.provider` / `.model` override the provider and model of every request,
    those its log line names included; without them, the line's own win over the header's."""
    session = gen.build_session([gen.Turn("step 0"), gen.Turn("done")], provider="openai")
    first = session.requests()[0]
    first.provider, first.model = "anthropic", "claude-sonnet-4-5"
    records = replay_session(session, ["baseline"])
    assert [(r.provider, r.model) for r in records] == [
        ("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5")]
    config = ReplayConfig(provider="openai", model="gpt-5.5")
    records = replay_session(session, ["baseline"], config)
    assert [(r.provider, r.model) for r in records] == [("openai", "gpt-5.5")] * 2


def test_a_thread_no_thread_event_opened_is_sent_the_session_s_head():
    """docs/log-format.md: a thread no `thread` event opened is replayed as one of its own, with
    the session's system prompt, and so with its hidden prefix too."""
    t = gen.BASE_TS
    header = SessionHeader(ts=t, provider="anthropic", model="claude-sonnet-4-5",
                           system="You are an agent.", hidden_prefix_tokens=5000)
    events = [
        UserMessage(ts=t, thread="stray", text="task"),
        RequestMarker(ts=t, thread="stray", request_id="r0"),
        AssistantMessage(ts=t, thread="stray", request_id="r0", blocks=[TextBlock(text="ok")]),
    ]
    seen: list = []
    records = replay_session(Session(header=header, events=events), [_probe(seen)])
    assert [(c.system, c.hidden_tokens) for _, c in seen] == [("You are an agent.", 5000)]
    assert records[0].thread == "stray" and records[0].request.total > 5000


def test_the_uncached_tail_moves_only_the_recorded_request_s_last_marker():
    """A recorded request whose usage shows an uncached tail has its last cache marker moved
    back by it (`Unlogged.markers`: the client's markers "for a recorded request"); a
    summarizer call made at that request is none: its markers stay where the client puts
    them."""
    from replay.engine._unlogged import RequestFit, UnloggedContext
    from replay.strategies import NamedStrategy, StrategySpec
    from replay.strategies._view import SummarizerCall, View

    def build() -> object:
        def rule(history, ctx):
            if ctx.request_index != 1:
                return list(history)
            call = SummarizerCall(input_items=tuple(history), instruction="Summarize.",
                                  summary="A summary.")
            return View(list(history), summarizer_calls=[call])

        return rule

    spec = StrategySpec(family="probe", pattern="probe", build=build, cache_class="append-only",
                        rule="sends everything, one forked summarizer call at the second request")
    probe = NamedStrategy("probe", spec, {})
    session = gen.build_session([gen.Turn(f"step {n} " + "word " * 800) for n in range(3)],
                                provider="anthropic")
    second = session.events.index(session.requests()[1])

    def outcomes(tail: int) -> list[tuple[str, int]]:
        fit = UnloggedContext(requests={("main", second): RequestFit(tail=tail)})
        records = replay_session(session, [probe], ReplayConfig(unlogged_context=fit))
        return [(r.kind, r.outcome.uncached) for r in records]

    plain, tailed = outcomes(0), outcomes(800)
    assert [kind for kind, _ in plain] == ["request", "summarizer", "request", "request"]
    assert plain[1] == tailed[1]  # the summarizer call: unchanged
    assert tailed[2][1] > plain[2][1]  # the recorded request: its tail uncached


def test_a_request_with_nothing_to_send_is_an_error_naming_it():
    """A request built in memory with no message of its thread before it, or one a strategy
    left empty, has no prompt: the replay stops with an error naming the request (and the
    strategy), not a zero-token request."""
    from replay.strategies import NamedStrategy, StrategySpec

    t = gen.BASE_TS
    header = SessionHeader(ts=t, provider="anthropic", model="claude-sonnet-4-5")
    bare = Session(header=header, path="bare.jsonl", events=[
        RequestMarker(ts=t, request_id="r1"),
        AssistantMessage(ts=t, request_id="r1", blocks=[TextBlock(text="ok")]),
    ])
    with pytest.raises(ReplayError, match=r"^bare\.jsonl: request r1 has no message before it$"):
        replay_session(bare, ["baseline"])
    spec = StrategySpec(family="empty", pattern="empty", build=lambda: lambda history, ctx: [],
                        cache_class="append-only", rule="sends nothing")
    session = Session(header=header, events=[UserMessage(ts=t, text="task"), *bare.events])
    with pytest.raises(ReplayError, match=r"^strategy 'empty' sent an empty request at r1$"):
        replay_session(session, [NamedStrategy("empty", spec, {})])


def test_a_logged_compaction_naming_no_events_replaces_everything_before_it():
    """docs/log-format.md: a `compaction` whose `replaces` is absent or empty replaced
    everything before it in its thread: `recorded` sends the summary, then what came after."""
    from replay.strategies import SummaryItem, UserItem

    session = _four_reads()
    at = next(n for n, e in enumerate(session.events)
              if isinstance(e, RequestMarker) and e.request_id == "req-004")
    ts = session.events[at].ts
    session.events[at:at] = [Compaction(ts=ts, summary="SUMMARY"),
                             UserMessage(ts=ts, text="go on")]
    record = next(r for r in replay_session(session, ["recorded"], ReplayConfig(keep_views=True))
                  if r.request_id == "req-004")
    assert [(type(i), getattr(i, "text", None)) for i in record.view] == [
        (SummaryItem, "SUMMARY"), (UserItem, "go on")]


def test_messages_only_a_logged_compaction_rebuilt_are_sent_by_recorded_alone():
    """docs/log-format.md: a `user` message marked `compacted_history` exists only in the
    history a logged compaction rebuilt (Codex re-injects its initial context and repeats the
    last prompt after compacting): `recorded` sends it, a strategy that does not apply the log's
    compaction never sees it (on the Codex a7 sample `baseline` sent ~17k tokens of such repeats
    on every request after the compaction). An older file's `from_replacement_history` marks it
    too."""
    from replay.log import parse_event
    from replay.strategies import UserItem

    session = _four_reads()
    at = next(n for n, e in enumerate(session.events)
              if isinstance(e, RequestMarker) and e.request_id == "req-004")
    ts = session.events[at].ts
    first = next(e for e in session.events if isinstance(e, UserMessage))
    again = UserMessage(ts=ts, text=first.text, compacted_history=True)
    old = parse_event({"type": "user", "ts": ts.isoformat(), "text": "REPEATED CONTEXT",
                       "from_replacement_history": True}, "old.jsonl", 1)
    assert old.compacted_history
    session.events[at:at] = [Compaction(ts=ts, summary="", message=""), old, again]
    texts = {}
    for r in replay_session(session, ["recorded", "baseline"], ReplayConfig(keep_views=True)):
        if r.request_id == "req-004":
            texts[r.strategy] = [i.text for i in r.view if isinstance(i, UserItem)]
    assert texts["recorded"] == ["REPEATED CONTEXT", first.text]
    assert texts["baseline"] == [first.text]


def test_every_text_the_log_holds_is_kept_counted_between_strategies():
    """`_log_texts`: every text the log holds (the system prompts, messages, tool outputs,
    answers' text and thinking, logged summaries): their token counts are kept from one
    strategy to the next, unlike what a strategy derived from them."""
    from replay.engine._replay import _log_texts

    t = gen.BASE_TS
    events = [
        UserMessage(ts=t, text="task"),
        AssistantMessage(ts=t, blocks=[ThinkingBlock(thinking="let me see"),
                                       TextBlock(text="reading"),
                                       ToolCallBlock(id="c1", name="read_file", arguments={})]),
        ToolResult(ts=t, call_id="c1", tool_name="read_file", output="file body"),
        Compaction(ts=t, summary="the summary"),
        ThreadStart(ts=t, thread_id="sub", system="You review code."),
        ThreadStart(ts=t, thread_id="sub2"),
    ]
    session = Session(header=SessionHeader(ts=t, system="You are an agent."), events=events)
    assert _log_texts(session) - {""} == {"You are an agent.", "task", "let me see", "reading",
                                          "file body", "the summary", "You review code."}


def test_an_answer_without_an_id_answers_only_a_request_no_assistant_event_followed_yet():
    """docs/log-format.md "Ordering rules": without a `request_id`, the *next* assistant event
    of the thread answers its request. Once another assistant event followed the request
    (here one naming an earlier, answered request), a later one without an id answers none."""
    from replay.engine._replay import _responses

    t = gen.BASE_TS

    def answer(rid: str | None) -> AssistantMessage:
        return AssistantMessage(ts=t, request_id=rid, blocks=[TextBlock(text="ok")])

    events = [
        UserMessage(ts=t, text="task"),  # 0
        RequestMarker(ts=t, request_id="g"),  # 1
        answer("g"),  # 2
        RequestMarker(ts=t, request_id="h"),  # 3
        answer("g"),  # 4: names g (answered already): h's next assistant event, not its answer
        answer(None),  # 5: not the next assistant event after h
    ]
    session = Session(header=SessionHeader(ts=t), events=events)
    assert {request: at for request, (at, _) in _responses(session).items()} == {1: 2}


def _two_requests(provider: str, model: str, t: datetime, repeats: int,
                  second_model: str | None = None) -> Session:
    """A task of `repeats` phrases, its answer, a follow-up 20 s later and its request (on
    `second_model` when given)."""
    later = t + timedelta(seconds=20)
    header = SessionHeader(ts=t, agent="test", provider=provider, model=model)
    return Session(header=header, events=[
        UserMessage(ts=t, text="fix the bug " * repeats),
        RequestMarker(ts=t, request_id="r0"),
        AssistantMessage(ts=t, blocks=[TextBlock(text="done " * 50)], request_id="r0"),
        UserMessage(ts=later, text="now test it " * 50),
        RequestMarker(ts=later, request_id="r1", model=second_model),
    ])


def test_a_switch_to_a_model_of_the_same_tokenizer_family_is_diffed_as_the_same_prompt():
    """Two models of one tokenizer family render a view to the same blocks: the diff says how
    much the prompts share (`PrefixDiff.first_mismatch_token`: all of the previous one, which
    the new one extends), not a model switch that shares nothing (that is for families whose
    blocks cannot be compared); the cache still tells the model switch apart."""
    session = _two_requests("anthropic", "claude-sonnet-4-5", gen.BASE_TS, 200,
                            second_model="claude-opus-4-5")
    first, second = (r for r in replay_session(session, ["recorded"], ReplayConfig())
                     if r.kind == "request")
    assert second.model == "claude-opus-4-5"
    assert second.diff == PrefixDiff(first.request.total, None, None, "tail", False)
    assert second.outcome.cache_read == 0


def test_a_forced_ttl_reaches_a_cache_that_bills_writes_without_markers():
    """`--ttl 1h` ("what if we had used 1h caching") also applies where the client places no
    marker and the cache bills its automatic writes at the TTL asked for (Kimi K3: 5m or 1h,
    docs/cache-rules.md): every write is a 1h one."""
    t = gen.BASE_TS.replace(year=2026, month=10)  # Kimi K3 bills writes from 2026-07
    session = _two_requests("moonshotai", "kimi-k3", t, 600)
    for ttl, bucket in ((None, "cache_write_5m"), ("1h", "cache_write_1h")):
        records = replay_session(session, ["recorded"], ReplayConfig(client="none", ttl=ttl))
        writes = [(r.outcome.cache_write_5m, r.outcome.cache_write_1h) for r in records]
        assert all(w > 0 for w in (getattr(r.outcome, bucket) for r in records)), writes
        other = "cache_write_1h" if bucket == "cache_write_5m" else "cache_write_5m"
        assert not any(getattr(r.outcome, other) for r in records), writes


def test_a_view_whose_list_its_strategy_refills_later_is_rendered_as_sent():
    """A `View`'s list stays the strategy's: one that refills the same list at every request
    must still have each request rendered as it sends it (the renderer may keep only a list
    the engine owns as the thread's last view), so its prompts are those of `baseline`."""
    from replay.strategies import NamedStrategy, StrategySpec
    from replay.strategies._view import View

    def build() -> object:
        sent: list = []

        def rule(history, ctx):
            sent[:] = history
            return View(sent)

        return rule

    spec = StrategySpec(family="probe", pattern="probe", build=build, cache_class="append-only",
                        rule="sends everything, in one list it refills")
    session = gen.build_session([gen.Turn(f"step {n} " + "word " * 50) for n in range(4)])
    totals = {
        name: [r.request.total for r in replay_session(session, [strategy], ReplayConfig())]
        for name, strategy in (("probe", NamedStrategy("probe", spec, {})),
                               ("baseline", "baseline"))
    }
    assert totals["probe"] == totals["baseline"]


def test_a_logged_compaction_naming_its_own_id_replaces_only_what_it_names_before_it():
    """docs/log-format.md: a compaction's own id in its `replaces` names no earlier event, and
    is ignored: the unlogged context it replaces ends at the last earlier event it names, not at
    the compaction itself (the message sent at `r1`, after `a0`, stays in `recorded`'s view)."""
    from replay.log import UserMessage as User
    from replay.strategies import UserItem

    t0 = gen.BASE_TS

    def at(seconds: int):
        return t0 + timedelta(seconds=seconds)

    events = [
        User(ts=at(0), text="task", id="u0"),
        RequestMarker(ts=at(1), request_id="r0"),
        AssistantMessage(ts=at(2), request_id="r0", id="a0", blocks=[TextBlock(text="a r0")]),
        User(ts=at(3), text="next", id="u1"),
        RequestMarker(ts=at(4), request_id="r1"),
        AssistantMessage(ts=at(5), request_id="r1", id="a1", blocks=[TextBlock(text="a r1")]),
        Compaction(ts=at(6), summary="S1", replaces=["u0", "a0", "c1"], id="c1"),
        RequestMarker(ts=at(7), request_id="r2"),
        AssistantMessage(ts=at(8), request_id="r2", id="a2", blocks=[TextBlock(text="a r2")]),
    ]
    header = SessionHeader(ts=t0, provider="anthropic", model="claude-sonnet-4-5",
                           system=gen.SYSTEM)
    unlogged = {("main", n): 300 for n, e in enumerate(events) if isinstance(e, RequestMarker)}
    records = replay_session(Session(header=header, events=events), ["recorded"],
                             ReplayConfig(unlogged_context=unlogged, keep_views=True))
    view = next(r.view for r in records if r.request_id == "r2")
    kept = sorted(i.event_index for i in view if hasattr(i, "event_index"))
    assert kept == [3, 4, 5, 7]
    assert [i.event_index for i in view if isinstance(i, UserItem) and i.estimated_tokens] == [4, 7]


def test_a_logged_compaction_s_message_is_sent_in_place_of_its_summary():
    """docs/log-format.md: later requests saw a compaction's `summary` in a `message_role`
    message, or its `message` when set (the harness's wrapper around it, pi)."""
    from replay.strategies import SummaryItem

    session = _four_reads()
    at = next(n for n, e in enumerate(session.events)
              if isinstance(e, RequestMarker) and e.request_id == "req-004")
    session.events.insert(at, Compaction(ts=session.events[at].ts, summary="SUMMARY",
                                         message="<summary>SUMMARY</summary>",
                                         message_role="assistant"))
    record = next(r for r in replay_session(session, ["recorded"], ReplayConfig(keep_views=True))
                  if r.request_id == "req-004")
    [summary] = [i for i in record.view if isinstance(i, SummaryItem)]
    assert (summary.text, summary.role) == ("<summary>SUMMARY</summary>", "assistant")


def test_the_working_directory_the_head_tells_is_never_hidden_evidence():
    """Every harness tells the model its working directory (`_head_text`): a call naming it is
    no hidden quote even where the only message that named it was dropped."""
    turns = [gen.Turn("Reading notes.", [gen.Call("read_file", {"path": "notes.txt"},
                                                  "the project lives in /srv/app-x")])]
    turns += [gen.Turn(f"step {n}", [gen.Call("read_file", {"path": f"f{n}.txt"}, f"content {n}")])
              for n in range(6)]
    turns += [gen.Turn("Listing it.", [gen.Call("list_dir", {"path": "/srv/app-x"}, "a b")]),
              gen.Turn("done")]

    def blind(cwd: str | None) -> list[tuple[int, str]]:
        session = gen.build_session(turns, provider="anthropic")
        session.header.cwd = cwd
        return [(r.request_index, b.kind)
                for r in replay_session(session, ["sliding-4-pin-first"]) for b in r.blind_actions]

    assert blind(None) == [(7, "hidden-quote")]
    assert blind("/srv/app-x") == []


def test_a_switch_to_a_model_of_another_tokenizer_family_shares_no_prefix():
    """Two tokenizer families render a view to blocks that cannot be compared: a request on
    another family's model is a model switch that shares nothing with the thread's previous
    one (`PrefixDiff(0, 0, None, "model switch", True)`), and reads nothing from the cache."""
    session = _two_requests("anthropic", "claude-sonnet-4-5", gen.BASE_TS, 200,
                            second_model="gpt-5")
    session.requests()[1].provider = "openai"
    first, second = (r for r in replay_session(session, ["recorded"], ReplayConfig())
                     if r.kind == "request")
    assert (first.model, second.model) == ("claude-sonnet-4-5", "gpt-5")
    assert second.diff == PrefixDiff(0, 0, None, "model switch", True)
    assert second.outcome.cache_read == 0
