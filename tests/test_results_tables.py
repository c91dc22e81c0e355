"""The result tables built from hand-made records (`replay.engine._results`): which strategies
billed every request as `baseline` did, the notes' request sets, and the miss causes' order
(README "Output columns")."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import polars as pl
import pytest
from test_engine import _hand_made

from replay._errors import ReplayError
from replay.cache import CacheOutcome
from replay.engine import summary_frame, turns_frame
from replay.engine._results import TURN_COLUMNS, ResultTables
from replay.evidence import BlindAction
from replay.prefix import PrefixDiff
from replay.strategies import RewriteEvent


def _as(records: list, strategy: str, **changes) -> list:
    return [replace(r, strategy=strategy, events=[], blind_actions=[], **changes)
            for r in records]


def test_only_a_strategy_billed_as_baseline_at_every_request_is_listed_beside_it():
    """README: the note lists the built-in strategies that billed every request exactly as
    `baseline` did (each bucket, the cost); `recorded` is the log's own, never listed."""
    base = _as(_hand_made(2), "baseline")
    split = CacheOutcome(uncached=10, cache_read=20, cache_write_5m=3, cache_write_1h=7)
    other = replace(split, cache_write_5m=7, cache_write_1h=3)  # same prompt, same writes
    base = [replace(r, outcome=split, cost_usd=Decimal("0.25")) for r in base]
    tables = ResultTables(per_turn=False)
    tables.add(base)
    tables.add(_as(base, "same"))
    tables.add(_as(base, "recorded"))
    tables.add(_as(base[:1], "dearer") + _as(base[1:], "dearer", cost_usd=Decimal("0.26")))
    tables.add(_as(base, "other-ttl", outcome=other))
    tables.add(_as(base, "no-1h-write", outcome=replace(split, cache_write_1h=0)))
    # Billed alike, but it rewrote: named (an event), or an earlier message unnamed.
    tables.add(_as(base[:1], "named") + [replace(base[1], strategy="named",
                                                 events=[RewriteEvent("prune")])])
    tables.add(_as(base[:1], "unnamed") + _as(base[1:], "unnamed", diff=PrefixDiff(
        first_mismatch_token=5, first_mismatch_block=1, message_index=1, where="message 1",
        is_break=True)))
    assert tables.same_as_baseline == ["same"]


def test_the_notes_count_the_agent_s_requests_not_a_summarizer_s_call():
    """The notes on TTL choice, missing breakpoints and uncached models name recorded requests
    (`request_index`): a summarizer call added at a request is not one of them."""
    r0, r1 = _hand_made(2)
    bare = CacheOutcome(uncached=40, cache_read=0, cache_write_5m=0, cache_write_1h=0,
                        route="anthropic", mechanism="none", miss_kind="no-breakpoint",
                        ttl_choice=False)
    chosen = replace(bare, ttl_choice=True, mechanism="explicit", miss_kind=None)
    tables = ResultTables(per_turn=False)
    tables.add([replace(r0, outcome=chosen), replace(r1, kind="summarizer", outcome=bare),
                replace(r1, outcome=chosen)])
    assert (tables.no_ttl_choice, tables.no_breakpoint, tables.no_cache) == ({}, {}, {})
    tables.add([replace(r1, strategy="other", outcome=bare)])
    assert tables.no_ttl_choice == {"anthropic": {1}}
    assert tables.no_breakpoint == {"anthropic": {1}}
    assert tables.no_cache == {f"{r1.provider} / {r1.model}": {1}}


def test_miss_causes_are_most_frequent_first_then_by_name():
    records = _as(_hand_made(5), "baseline")
    kinds = ["ttl-expired", "prefix-edited", "model-switch", "prefix-edited", "model-switch"]
    records = [replace(r, outcome=CacheOutcome(10, 0, 0, 0, miss_cause=k, miss_kind=k))
               for r, k in zip(records, kinds, strict=True)]
    assert summary_frame(records)["miss_causes"].to_list() == [
        "model-switch=2, prefix-edited=2, ttl-expired=1"
    ]


def test_a_merge_counts_the_rows_the_other_table_has_not_closed_yet():
    """`merge`: as if the other table's records had been added here, the per-request rows it
    counted one by one (`add_record`, no `end_strategy` yet) included."""
    records = _as(_hand_made(2), "baseline")
    other = ResultTables()
    for r in records:
        other.add_record(r)
    merged = ResultTables()
    merged.merge(other)
    assert merged.turns()["request_index"].to_list() == [r.request_index for r in records]


def test_a_strategy_that_called_a_summarizer_acted_and_one_not_replayed_has_no_cost():
    """`acted`: named a rewrite or called a summarizer; `cost`: None when not replayed."""
    r0, r1 = _as(_hand_made(2), "compact")
    tables = ResultTables(per_turn=False)
    tables.add([r0, replace(r1, kind="summarizer"), r1])
    tables.add(_as([r0, r1], "baseline"))
    assert tables.acted == ["compact"]
    assert tables.cost("recorded") is None and tables.cost("baseline") == r0.cost_usd + r1.cost_usd


def _blind(r, kind: str, tool: str = "", path: str | None = None) -> BlindAction:
    return BlindAction(r.request_index, r.request_id, tool, kind, path, f"hidden {kind}")


def test_blind_actions_mentions_and_their_evidence_rows():
    """README "Output columns": `blind_actions` counts the calls that relied on hidden text, a
    `stubbed-read` beside its edit and a `hidden-mention` are no more actions, the mentions are
    counted apart; `evidence` has one row per blind action or hidden mention (`strategy,
    request_index, request_id, thread, kind, tool, path, excerpt`), kept on request or built
    from the records."""
    r0, r1 = _as(_hand_made(2), "truncate")
    r1 = replace(r1, thread="sub-1", blind_actions=[
        _blind(r1, "hidden-edit-target", "Edit", "src/a.py"), _blind(r1, "stubbed-read"),
        _blind(r1, "hidden-quote", "Bash"), _blind(r1, "hidden-mention"),
        _blind(r1, "hidden-mention")])
    records = [r0, r1]
    rows = turns_frame(records)
    assert rows["blind_actions"].to_list() == [0, 2]
    assert rows["blind_mentions"].to_list() == [0, 2]
    summary = summary_frame(records).row(0, named=True)
    assert (summary["blind_actions"], summary["blind_mentions"]) == (2, 2)
    kept = ResultTables(evidence_rows=True)
    kept.add(records)
    evidence = kept.evidence()
    assert evidence.schema["request_index"] == pl.Int64
    assert evidence.rows(named=True) == [
        {"strategy": "truncate", "request_index": r1.request_index,
         "request_id": r1.request_id, "thread": "sub-1", "kind": a.kind, "tool": a.tool or None,
         "path": a.path, "excerpt": a.excerpt}
        for a in r1.blind_actions
    ]
    assert evidence["tool"].to_list() == ["Edit", None, "Bash", None, None]
    assert ResultTables.of(records).evidence().equals(evidence)
    assert kept.mentions == {"truncate": 2}
    with pytest.raises(ReplayError, match="evidence rows were not kept"):
        ResultTables().evidence()


def test_a_merge_takes_every_set_and_row_the_other_table_kept():
    """`merge`: as if the other table's records had been added here: its models, providers,
    cache routes, notes' request sets and evidence rows."""
    r0, r1 = _hand_made(2)
    bare = CacheOutcome(uncached=40, cache_read=0, cache_write_5m=0, cache_write_1h=0,
                        route="anthropic/vertex", mechanism="none", miss_kind="no-breakpoint",
                        ttl_choice=True)
    other_rec = replace(r1, strategy="other", provider="google", model="claude-x",
                        outcome=bare, blind_actions=[_blind(r1, "hidden-quote", "Bash")])
    whole = ResultTables(evidence_rows=True)
    whole.add([r0])
    whole.add([other_rec])
    merged = ResultTables(evidence_rows=True)
    merged.add([r0])
    other = ResultTables(evidence_rows=True)
    other.add([other_rec])
    merged.merge(other)
    assert merged.no_breakpoint == {"anthropic/vertex": {1}}  # by cache route, not provider
    assert merged.no_cache == {"google / claude-x": {1}}
    for attr in ("models", "providers", "routes", "no_breakpoint", "no_cache", "no_ttl_choice"):
        assert getattr(merged, attr) == getattr(whole, attr), attr
    assert "anthropic/vertex" in merged.routes and "google" in merged.providers
    assert merged.evidence().equals(whole.evidence()) and merged.evidence().height == 1
    assert merged.turns().equals(whole.turns())


def test_per_request_rows_are_kept_only_when_asked_and_an_empty_table_has_its_columns():
    r0, r1 = _hand_made(2)
    with pytest.raises(ReplayError, match="per-request rows were not kept"):
        ResultTables(per_turn=False).turns()
    assert ResultTables().turns().columns == TURN_COLUMNS
    assert ResultTables.of([r0, r1]).turns()["request_index"].to_list() == [0, 1]
    assert ResultTables.of([r0]).same_as_baseline == []  # (`_hand_made` names it baseline)
    assert ResultTables.of([replace(r0, strategy="other")]).same_as_baseline == []


def test_a_per_request_row_names_its_request_and_its_cause():
    """README: `strategy, request_index, request_id, kind, thread, ts, model`, … `miss_cause`
    (words), `storage_cost_usd, cache_created_tokens` of the request they were billed with."""
    (r,) = _hand_made(1)
    r = replace(r, kind="summarizer", thread="sub-1", outcome=CacheOutcome(
        10, 0, 0, 0, miss_cause="TTL expired after 6 min idle", miss_kind="ttl-expired",
        storage_usd=Decimal("0.5"), created_tokens=30))
    row = turns_frame([r]).row(0, named=True)
    assert {k: row[k] for k in ("request_id", "kind", "thread", "ts", "model", "miss_cause",
                                "storage_cost_usd", "cache_created_tokens")} == {
        "request_id": r.request_id, "kind": "summarizer", "thread": "sub-1", "ts": r.ts,
        "model": r.model, "miss_cause": "TTL expired after 6 min idle",
        "storage_cost_usd": Decimal("0.5"), "cache_created_tokens": 30}


def test_the_summary_lists_the_strategies_asked_for_first_even_without_a_record():
    """`summary_frame(records, strategies)`: each of `strategies` has a row, zeros where no
    record is its (a hit ratio of 0 where nothing was sent), in that order, first."""
    records = _as(_hand_made(2), "baseline")
    summary = summary_frame(records, ["forked", "baseline"])
    assert summary["strategy"].to_list() == ["forked", "baseline"]
    forked = summary.row(0, named=True)
    assert (forked["requests"], forked["prompt_tokens"], forked["hit_ratio"]) == (0, 0, 0.0)


def test_the_tables_note_the_models_providers_routes_and_fallback_prices_of_requests():
    r0, r1 = _hand_made(2)
    call = replace(r1, kind="summarizer", model="claude-haiku-4-5",
                   request=replace(r1.request, estimated_output=False),
                   outcome=replace(r1.outcome, route="anthropic/vertex"),
                   price_warning="1h writes at the 5m rate")
    tables = ResultTables(per_turn=False)
    tables.add([r0, call])
    assert tables.models == {r0.model, "claude-haiku-4-5"}
    assert tables.providers == {r0.provider}
    assert tables.routes == {r0.outcome.route, "anthropic/vertex"}
    assert tables.price_warnings == {"1h writes at the 5m rate": {call.request_index}}
    assert tables.estimated_output is r0.request.estimated_output  # a summarizer's is not asked
