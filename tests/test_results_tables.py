"""The result tables built from hand-made records (`replay.engine._results`): which strategies
billed every request as `baseline` did, the notes' request sets, and the miss causes' order
(README "Output columns")."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from test_engine import _hand_made

from replay.cache import CacheOutcome
from replay.engine import summary_frame
from replay.engine._results import ResultTables
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
