"""Gemini context caching, hand-computed.

Implicit caching (default for Gemini 2.5+): longest common prefix with a live cached prompt,
exact (granularity undocumented: 1 assumed), minimum per model and per date (2.5 Flash: 1,024
until the 2026-07 doc, 2,048 after), lifetime undocumented (5 min idle assumed); the discount
comes from genai-prices. Explicit caching (client profile `gemini-explicit`): a cachedContents
resource with the tools and system prompt, created at the input rate, read at the cached rate,
storage billed up front for its TTL (default 1 h) per token-hour.

Rates per MTok (genai-prices): gemini-2.5-flash $0.30 input / $0.03 cached; gemini-2.5-pro
$1.25 / $0.125 up to 200k, $2.50 / $0.25 above; gemini-3.8-flash $0.75 / $0.075 in 2026.
Storage: 2.5 Flash $1.00, 3.8 Flash $0.50 (until 2026-12-31, then $1.00) per MTok per hour.
Split = (read, 1h write, 5m write, uncached).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from replay._errors import ReplayError
from replay.cache import Breakpoint
from replay.cache.testing import CacheLab

FLASH = "gemini-2.5-flash"


def usd(micro: str) -> Decimal:
    return Decimal(micro) / 1_000_000


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, 12, tzinfo=UTC)


def _second(model: str, head_sizes: tuple[int, int], t0: datetime, gap: float = 10):
    lab = CacheLab("google", model, t0=t0)
    head = [lab.block("system", head_sizes[0]), lab.block("user", head_sizes[1])]
    lab.send(head, at=0)
    return lab.send([*head, lab.block("text", 100), lab.block("user", 100)], at=gap)


# -- implicit -------------------------------------------------------------------------------------


def test_implicit_minimum_depends_on_the_date():
    # Shared prefix 1,600 tokens (system 1,500 + user 100); the prompt is 1,800.
    # 2025-06-01 (launch blog: 2.5 Flash 1,024): cached 1,600 exactly, uncached 200.
    # Cost 1,600 × 0.03 + 200 × 0.3 = 48 + 60 = $0.000108.
    june_2025 = _second(FLASH, (1500, 100), day(2025, 6, 1))
    assert june_2025.split == (1600, 0, 0, 200)
    assert june_2025.cost == usd("108")
    # 2026-01-15 (late-2025 doc: still 1,024): cached.
    assert _second(FLASH, (1500, 100), day(2026, 1, 15)).split == (1600, 0, 0, 200)
    # 2026-10-20 (2026-07 doc: 2,048): not cached. Cost 1,800 × 0.3 = $0.00054.
    oct_2026 = _second(FLASH, (1500, 100), day(2026, 10, 20))
    assert oct_2026.split == (0, 0, 0, 1800)
    assert oct_2026.outcome.miss_cause == "below minimum cacheable length (1,600 < 2,048 tokens)"
    assert oct_2026.cost == usd("540")


def test_implicit_prefix_just_below_and_at_the_minimum():
    below = _second(FLASH, (2000, 47), day(2026, 10, 20))  # shares 2,047
    assert below.split == (0, 0, 0, 2247)
    at = _second(FLASH, (2000, 48), day(2026, 10, 20))  # shares 2,048
    # Cost 2,048 × 0.03 + 200 × 0.3 = 61.44 + 60 = $0.00012144.
    assert at.split == (2048, 0, 0, 200)
    assert at.cost == usd("121.44")


def test_gemini_2_5_pro_minimum_history():
    # Shares 3,000: 2,048 at launch, 4,096 in the late-2025 doc, 2,048 again from 2026-07.
    assert _second("gemini-2.5-pro", (2900, 100), day(2025, 6, 1)).outcome.cache_read == 3000
    assert _second("gemini-2.5-pro", (2900, 100), day(2026, 1, 15)).outcome.cache_read == 0
    assert _second("gemini-2.5-pro", (2900, 100), day(2026, 10, 20)).outcome.cache_read == 3000


def test_implicit_idle_gap_under_and_over_the_assumed_5_minutes():
    under = _second(FLASH, (3000, 100), day(2026, 10, 20), gap=299)
    assert under.split == (3100, 0, 0, 200)
    over = _second(FLASH, (3000, 100), day(2026, 10, 20), gap=301)
    assert over.split == (0, 0, 0, 3300)
    assert over.outcome.miss_cause == "TTL expired (idle 5m01s > TTL 5m)"


def test_long_context_tier_on_total_input_including_cached_tokens():
    lab = CacheLab("google", "gemini-2.5-pro")
    head = [lab.block("system", 150_000), lab.block("user", 1_000)]
    lab.send(head, at=0)
    # Total 212,000 > 200,000: every token at the higher rates, cached ones included.
    # Cost 151,000 × 0.25 + 61,000 × 2.5 = 37,750 + 152,500 = $0.19025.
    r2 = lab.send([*head, lab.block("text", 1_000), lab.block("user", 60_000)], at=10)
    assert r2.split == (151_000, 0, 0, 61_000)
    assert r2.cost == usd("190250")


def test_gemini_2_0_has_no_implicit_caching():
    lab = CacheLab("google", "gemini-2.0-flash")
    prompt = [lab.block("system", 5000), lab.block("user", 100)]
    lab.send(prompt, at=0)
    r2 = lab.send(prompt, at=10)
    assert r2.split == (0, 0, 0, 5100)
    assert r2.outcome.mechanism == "none"
    assert r2.outcome.miss_cause is None


# -- explicit cachedContents ----------------------------------------------------------------------


def test_explicit_cache_creation_reads_and_storage():
    lab = CacheLab("google", FLASH, client="gemini-explicit")
    system, u1 = lab.block("system", 3000), lab.block("user", 200)
    # r1 creates the cache (system, 3,000 ≥ 2,048) by a call of its own: the 3,000 are billed
    # once at the input rate (3,000 × 0.3 = $0.0009), outside the request's buckets. The request
    # then references it like any later one ("cached = cachedContent tokens on every referencing
    # request"): 3,000 × 0.03 + 200 × 0.3 = $0.00015. Storage 3,000 tokens × 1 h × $1.00/MTok/h
    # = $0.003. Total $0.00405.
    r1 = lab.send([system, u1], at=0)
    assert r1.split == (3000, 0, 0, 200)
    assert r1.outcome.created_tokens == 3000
    assert r1.outcome.route == "google/explicit"
    assert r1.outcome.storage_usd == usd("3000")
    assert r1.price.warning is None
    assert r1.cost == usd("4050")
    # r2 after 30 min: read 3,000 + 400 uncached: 3,000 × 0.03 + 400 × 0.3 = 90 + 120 = $0.00021.
    a1, u2 = lab.block("text", 100), lab.block("user", 100)
    r2 = lab.send([system, u1, a1, u2], at=1800)
    assert r2.split == (3000, 0, 0, 400)
    assert r2.outcome.storage_usd == 0 and r2.outcome.created_tokens == 0
    assert r2.cost == usd("210")
    # r3 after 61 min: the cache lived 1 h from creation (reads do not extend it): created again.
    # 3,000 × 0.3 (creation) + 3,000 × 0.03 + 600 × 0.3 + storage $0.003 = $0.00417.
    r3 = lab.send([system, u1, a1, u2, lab.block("text", 100), lab.block("user", 100)], at=3660)
    assert r3.split == (3000, 0, 0, 600)
    assert r3.outcome.created_tokens == 3000
    assert r3.outcome.miss_kind == "ttl-expired"
    assert r3.cost == usd("4170")


def test_explicit_cache_is_read_exactly_one_hour_after_its_creation():
    """The cachedContents lifetime (`explicit_ttl_seconds` 3600, a hard cap from creation) is
    inclusive like every TTL (caching.md: live while `t − last_use ≤ ttl`): at 3,600 s the
    cache is still read, not created again. 3,000 × 0.03 + 400 × 0.3 = $0.00021."""
    lab = CacheLab("google", FLASH, client="gemini-explicit")
    system, u1 = lab.block("system", 3000), lab.block("user", 200)
    lab.send([system, u1], at=0)
    r2 = lab.send([system, u1, lab.block("text", 100), lab.block("user", 100)], at=3600)
    assert r2.split == (3000, 0, 0, 400)
    assert r2.outcome.created_tokens == 0
    assert r2.cost == usd("210")


def test_explicit_cache_creation_is_a_call_of_its_own_with_its_own_tier():
    """gemini-2.5-pro bills prompts over 200k tokens at its higher tier. A 250k request that
    creates a 150k cache: the request's buckets at the >200k rates (150k read × $0.25 + 100k ×
    $2.50 = $0.2875), the creation as a 150k prompt at the ≤200k input rate (× $1.25 =
    $0.1875), storage 150k × 1 h × $4.50 = $0.675."""
    lab = CacheLab("google", "gemini-2.5-pro", client="gemini-explicit")
    sent = lab.send([lab.block("system", 150_000), lab.block("user", 100_000)], at=0)
    assert sent.split == (150_000, 0, 0, 100_000)
    assert sent.outcome.created_tokens == 150_000
    assert sent.price.total_usd == Decimal("0.2875")
    assert sent.outcome.storage_usd == Decimal("0.675")
    assert sent.cost == Decimal("1.15")


def test_explicit_storage_rate_changes_on_2027_01_01():
    def storage(t0: datetime) -> Decimal:
        lab = CacheLab("google", "gemini-3.8-flash", client="gemini-explicit", t0=t0)
        sent = lab.send([lab.block("system", 5000), lab.block("user", 100)], at=0)
        return sent.outcome.storage_usd

    # 5,000 tokens × 1 h × $0.50 = $0.0025; from 2027: × $1.00 = $0.005.
    assert storage(day(2026, 12, 31)) == usd("2500")
    assert storage(day(2027, 1, 2)) == usd("5000")


def test_explicit_ttl_override_scales_storage():
    lab = CacheLab("google", FLASH, client="gemini-explicit",
                   overrides={"google.explicit.explicit_ttl_seconds": 7200})
    r = lab.send([lab.block("system", 3000), lab.block("user", 10)], at=0)
    assert r.outcome.storage_usd == usd("6000")  # 3,000 × 2 h × $1.00


def test_explicit_storage_rate_missing_is_an_error_not_a_zero():
    lab = CacheLab("google", "gemini-3.5-flash", client="gemini-explicit")
    with pytest.raises(ReplayError, match="storage_usd_per_mtok_hour"):
        lab.send([lab.block("system", 5000), lab.block("user", 10)], at=0)


def test_explicit_cache_below_the_minimum_is_not_created():
    lab = CacheLab("google", FLASH, client="gemini-explicit")
    prompt = [lab.block("system", 2000), lab.block("user", 500)]
    lab.send(prompt, at=0)
    r2 = lab.send(prompt, at=10)
    assert r2.split == (0, 0, 0, 2500)
    assert r2.outcome.storage_usd == 0
    assert r2.outcome.miss_kind == "below-minimum"


def test_implicit_parallel_and_model_switch():
    lab = CacheLab("google", FLASH)
    system = lab.block("system", 3000)
    lab.send([system, lab.block("user", 100)], at=0)
    early = lab.send([system, lab.block("user", 100)], at=0.5, thread="agent-1")
    assert early.outcome.cache_read == 0 and early.outcome.miss_kind == "not-ready"
    late = lab.send([system, lab.block("user", 100)], at=2, thread="agent-2")
    assert late.split == (3000, 0, 0, 100)
    # gemini-2.5-pro ($1.25 input): its own cache. 3,100 × 1.25 = $0.003875.
    switched = lab.send([system, lab.block("user", 100)], at=5, model="gemini-2.5-pro")
    assert switched.split == (0, 0, 0, 3100)
    assert switched.outcome.miss_kind == "model-switch"
    assert switched.cost == usd("3875")


def test_a_prompt_under_the_minimum_is_no_not_ready_miss():
    # A parallel thread's identical prompt not ready yet could not have been read anyway: 530
    # tokens are under gemini-2.5-flash's minimum (google.json), ready or not. It is a cold
    # start, then below the minimum, as without the other thread (the miss counted on a batch
    # of a log and its copy replayed side by side was `not-ready` on all 14 requests).
    lab = CacheLab("google", FLASH)
    system, u1, u2 = lab.block("system", 500), lab.block("user", 10), lab.block("user", 20)
    lab.send([system, u1], at=0)
    first = lab.send([system, u1], at=0.2, thread="agent-1")
    lab.send([system, u1, u2], at=10)
    second = lab.send([system, u1, u2], at=10.5, thread="agent-1")
    assert first.outcome.miss_kind == "cold-start"
    assert second.split == (0, 0, 0, 530)
    assert second.outcome.miss_kind == "below-minimum"


def test_explicit_cache_holds_the_prompt_up_to_the_first_breakpoint():
    # "the prompt up to its first breakpoint", whatever order the markers come in: 2,048.
    lab = CacheLab("google", FLASH, client="gemini-explicit")
    ids = [lab.block("system", 2048), lab.block("user", 3000), lab.block("user", 10)]
    r = lab.send(ids, at=0, breakpoints=[Breakpoint(1), Breakpoint(0)])
    assert r.split == (2048, 0, 0, 3010)
    assert r.outcome.created_tokens == 2048


def test_explicit_requests_keep_earlier_reasoning():
    # google.json has no strips_thinking rule: the earlier turn's 100 reasoning tokens stay in
    # the prompt and are billed uncached after the 2,048 cached.
    lab = CacheLab("google", FLASH, client="gemini-explicit")
    ids = [lab.block("system", 2048), lab.block("user", 10), lab.block("thinking", 100),
           lab.block("text", 10), lab.block("user", 10)]
    r = lab.send(ids, at=0)
    assert r.split == (2048, 0, 0, 130)
    assert r.outcome.dropped_tokens == 0


def test_explicit_request_without_a_boundary_names_it():
    lab = CacheLab("google", FLASH, client="gemini-explicit")
    ids = [lab.block("system", 2048), lab.block("user", 10)]
    lab.send(ids, at=0, breakpoints=[])
    r = lab.send(ids, at=10, breakpoints=[])
    assert r.split == (0, 0, 0, 2058)
    assert r.outcome.miss_kind == "no-breakpoint"
    assert r.outcome.miss_cause == "no cachedContents boundary"


def test_explicit_cache_is_not_referenced_before_it_is_ready():
    # ready_after_seconds (1.0 in google.json, every mode): another thread 0.5 s after the
    # creation cannot reference it yet and creates its own; 1.5 s after, it reads.
    lab = CacheLab("google", FLASH, client="gemini-explicit")
    ids = [lab.block("system", 2048), lab.block("user", 10)]
    lab.send(ids, at=0)
    early = lab.send(ids, at=0.5, thread="agent-1")
    assert early.outcome.created_tokens == 2048
    assert early.outcome.miss_kind == "not-ready"
    late = lab.send(ids, at=1.5, thread="agent-2")
    assert late.split == (2048, 0, 0, 10)
    assert late.outcome.created_tokens == 0
    # The cache agent-1 created at 0.5 s replaced the first: it lives 1 h from its creation.
    last = lab.send(ids, at=3600.3, thread="agent-3")
    assert last.split == (2048, 0, 0, 10)
    assert last.outcome.created_tokens == 0


def test_explicit_cache_read_names_a_longer_cache_that_expired():
    # README `misses`: a request that read less than an earlier request had cached for it.
    # r1 cached 2,058 (marker on user 1), r2 2,048 (marker on the system prompt); at 3,700 s
    # r3 reads the live 2,048 while the 2,058-token cache, created at 0, is past its 1 h.
    lab = CacheLab("google", FLASH, client="gemini-explicit")
    ids = [lab.block("system", 2048), lab.block("user", 10), lab.block("user", 10)]
    lab.send(ids, at=0, breakpoints=[Breakpoint(1)])
    lab.send(ids, at=3000, breakpoints=[Breakpoint(0)])
    r = lab.send(ids, at=3700, breakpoints=[Breakpoint(0)])
    assert r.split == (2048, 0, 0, 20)
    assert r.outcome.created_tokens == 0
    assert r.outcome.miss_kind == "ttl-expired"
