"""OpenRouter passthrough, hand-computed: requests follow the underlying model's provider
rules (routed by the `vendor/` prefix), prices are OpenRouter's (genai-prices). Dates:
2026-10-20. Split = (read, 1h write, 5m write, uncached).
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from replay._errors import ReplayError
from replay.cache.testing import CacheLab


def usd(micro: str) -> Decimal:
    return Decimal(micro) / 1_000_000


def test_anthropic_models_use_cache_control():
    # openrouter anthropic/claude-sonnet-4.5: $3 / $0.30 read / $3.75 write (genai-prices has
    # no 1h price: 2 × input = $6 from pricing/cache/anthropic.json).
    lab = CacheLab("openrouter", "anthropic/claude-sonnet-4.5")
    head = [lab.block("tool", 500), lab.block("system", 1500), lab.block("user", 200)]
    r1 = lab.send(head, at=0)
    assert r1.outcome.route == "openrouter>anthropic"
    assert r1.split == (0, 0, 2200, 0)
    assert r1.cost == usd("8250")
    r2 = lab.send([*head, lab.block("text", 100), lab.block("user", 300)], at=60)
    assert r2.split == (2200, 0, 400, 0)
    assert r2.cost == usd("2160")


def test_one_hour_writes_without_a_genai_prices_1h_price_are_billed_at_the_rule_multiplier():
    # caching.md l.63: billed at upstream rates, so 1h writes at 2 × input (l.19), not at the
    # 5m rate genai-prices would fall back to ($8,250).
    lab = CacheLab("openrouter", "anthropic/claude-sonnet-4.5", client="claude-code",
                   agent_version="2.1.0")
    r1 = lab.send([lab.block("tool", 500), lab.block("system", 1500), lab.block("user", 200)],
                  at=0)
    assert r1.split == (0, 2200, 0, 0)
    assert r1.price.warning is None
    assert r1.cost == usd("13200")  # 2,200 × $6


def test_openai_models_are_automatic():
    lab = CacheLab("openrouter", "openai/gpt-5", client="none")
    system, u1 = lab.block("system", 1000), lab.block("user", 100)
    lab.send([system, u1, lab.block("user", 51)], at=0)
    r2 = lab.send([system, u1, lab.block("user", 51)], at=10)
    assert r2.outcome.route == "openrouter>openai"
    # 1,024 × 0.125 + 127 × 1.25 = $0.00028675.
    assert r2.split == (1024, 0, 0, 127)
    assert r2.cost == usd("286.75")


def test_gemini_models_are_implicit():
    lab = CacheLab("openrouter", "google/gemini-2.5-flash", client="none")
    r = lab.send([lab.block("system", 3000)], at=0)
    assert r.outcome.route == "openrouter>google"
    assert r.outcome.mechanism == "automatic-prefix"


def test_unknown_vendor_is_an_error():
    lab = CacheLab("openrouter", "mistralai/mistral-large", client="none")
    with pytest.raises(ReplayError, match="no passthrough route"):
        lab.send([lab.block("system", 3000)], at=0)
