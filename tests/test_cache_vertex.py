"""Claude on Vertex AI (variant `vertex` of pricing/cache/anthropic.json), hand-computed.

As the Claude API (automatic caching and 1h included), organization isolation, prices from
genai-prices' `google` provider (the global list price). Regional and multi-region endpoints
cost +10%, which genai-prices lacks: the rule override `anthropic.vertex.endpoint=regional`
applies it as a price factor. Dates: 2026-10-20.
"""

from __future__ import annotations

from decimal import Decimal

from replay.cache.testing import CacheLab


def usd(micro: str) -> Decimal:
    return Decimal(micro) / 1_000_000


def _two_requests(lab: CacheLab):
    head = [lab.block("tool", 500), lab.block("system", 1500), lab.block("user", 200)]
    r1 = lab.send(head, at=0)
    r2 = lab.send([*head, lab.block("text", 100), lab.block("user", 300)], at=60)
    return r1, r2


def test_global_endpoint_is_the_list_price():
    r1, r2 = _two_requests(CacheLab("google", "claude-sonnet-4-5"))
    assert r1.outcome.route == "anthropic/vertex"
    # As the direct API: r1 write 2,200 ($0.00825); r2 read 2,200 + write 400 ($0.00216).
    assert (r1.split, r2.split) == ((0, 0, 2200, 0), (2200, 0, 400, 0))
    assert (r1.cost, r2.cost) == (usd("8250"), usd("2160"))


def test_regional_endpoint_adds_ten_percent():
    regional = {"anthropic.vertex.endpoint": "regional"}
    lab = CacheLab("google", "claude-sonnet-4-5", overrides=regional)
    r1, r2 = _two_requests(lab)
    assert r1.outcome.price_factor == Decimal("1.1")
    # $0.00825 × 1.1 = $0.009075; $0.00216 × 1.1 = $0.002376.
    assert (r1.cost, r2.cost) == (usd("9075"), usd("2376"))


def test_automatic_caching_works_on_vertex():
    lab = CacheLab("google", "claude-sonnet-4-5", client="automatic")
    prompt = [lab.block("system", 1500), lab.block("user", 700)]
    lab.send(prompt, at=0)
    assert lab.send(prompt, at=5).split == (2200, 0, 0, 0)


def test_gemini_models_on_google_are_not_routed_to_vertex_claude():
    lab = CacheLab("google", "gemini-2.5-flash")
    r = lab.send([lab.block("system", 3000)], at=0)
    assert r.outcome.route == "google"
