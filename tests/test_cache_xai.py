"""xAI Grok automatic caching, hand-computed.

Treated like OpenAI before GPT-5.6 (automatic, no write fee) with xAI's read rates: minimum
1,024 and 128-token steps (both UNCERTAIN: not documented / third-party measured), 5 min idle
assumed (xAI documents no TTL), one cache per server routed by the conversation id
(`x-grok-conv-id` / `prompt_cache_key`). grok-4.6: $2 input / $0.50 cached per MTok.
Split = (read, 1h write, 5m write, uncached).
"""

from __future__ import annotations

from decimal import Decimal

from replay.cache.testing import CacheLab


def usd(micro: str) -> Decimal:
    return Decimal(micro) / 1_000_000


def test_1151_tokens_with_a_1100_match_caches_1024():
    lab = CacheLab("x-ai", "grok-4.6", client="none")
    system, u1 = lab.block("system", 1000), lab.block("user", 100)
    lab.send([system, u1, lab.block("user", 51)], at=0)
    # 128 × ⌊1100 / 128⌋ = 1,024 cached, 127 uncached.
    # Cost 1,024 × 0.5 + 127 × 2 = 512 + 254 = $0.000766.
    r2 = lab.send([system, u1, lab.block("user", 51)], at=10)
    assert r2.split == (1024, 0, 0, 127)
    assert r2.cost == usd("766")


def test_below_the_assumed_minimum():
    lab = CacheLab("x-ai", "grok-4.6", client="none")
    head = [lab.block("system", 1000), lab.block("user", 23)]
    lab.send(head, at=0)
    r2 = lab.send([*head, lab.block("user", 100)], at=10)
    assert r2.split == (0, 0, 0, 1123)
    assert r2.outcome.miss_kind is None  # nothing was cached for it: not a miss


def test_idle_gap_under_and_over_the_assumed_5_minutes():
    def second(gap: float):
        lab = CacheLab("x-ai", "grok-4.6", client="none")
        head = [lab.block("system", 2000), lab.block("user", 100)]
        lab.send(head, at=0)
        return lab.send(head, at=gap)

    assert second(299).split == (2048, 0, 0, 52)
    assert second(301).outcome.miss_kind == "ttl-expired"


def test_conversation_id_routes_to_one_server():
    lab = CacheLab("x-ai", "grok-4.6", client="codex")
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 100)], at=0)
    sub = lab.send([system, lab.block("user", 100)], at=10, thread="agent-1")
    assert sub.split == (0, 0, 0, 2100)
    assert sub.outcome.miss_kind == "other-scope"


def test_parallel_and_model_switch():
    lab = CacheLab("x-ai", "grok-4.6", client="none")
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 100)], at=0)
    assert lab.send([system, lab.block("user", 100)], at=0.5, thread="b").outcome.miss_kind == (
        "not-ready"
    )
    r = lab.send([system, lab.block("user", 100)], at=5, model="grok-4.7")
    assert r.outcome.cache_read == 0
    assert r.outcome.miss_kind == "model-switch"
