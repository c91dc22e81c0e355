"""OpenAI prompt caching, hand-computed.

Before GPT-5.6 (`automatic-prefix`): every prompt is cached; a later prompt reads the longest
common prefix with a live cached prompt, if both it and the prompt are ≥ 1,024 tokens, rounded
down to 128; no write fee. Retention: gpt-5, 5.1, 5.2, 5.4, 5.5 and 4.1 (not their -mini / -nano
variants) default to 24h retention from 2026-05-29 (~30 min idle assumed); gpt-4o only has
in-memory retention (10 min idle assumed, 1 h cap).
GPT-5.6+ (`openai-breakpoints`): exact boundaries at message ends, writes at 1.25×, 30 min TTL.

Rates per MTok (genai-prices, 2026-10-20): gpt-5 $1.25 input / $0.125 cached; gpt-4o $2.50 /
$1.25; gpt-5.6-terra $2 input / $0.20 cached / $2.50 write. Split = (read, 1h write, 5m write,
uncached); "5m write" holds the provider's default-lifetime writes (30 min on GPT-5.6).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from replay.cache.testing import CacheLab


def usd(micro: str) -> Decimal:
    return Decimal(micro) / 1_000_000


# -- before GPT-5.6 -------------------------------------------------------------------------------


def test_1151_token_prompt_with_a_1100_token_match_caches_1024():
    lab = CacheLab("openai", "gpt-5", client="none")
    system, u1 = lab.block("system", 1000), lab.block("user", 100)
    # r1: 1,000 + 100 + 51 = 1,151 tokens, cold. Cost 1,151 × 1.25 = $0.00143875.
    r1 = lab.send([system, u1, lab.block("user", 51)], at=0)
    assert r1.split == (0, 0, 0, 1151)
    assert r1.cost == usd("1438.75")
    # r2: same 1,100-token prefix, a different last message of 51 → 1,151 tokens.
    # Longest common prefix 1,100 → 128 × ⌊1100 / 128⌋ = 1,024 cached, 127 uncached.
    # Cost 1,024 × 0.125 + 127 × 1.25 = 128 + 158.75 = $0.00028675.
    r2 = lab.send([system, u1, lab.block("user", 51)], at=10)
    assert r2.split == (1024, 0, 0, 127)
    assert r2.outcome.miss_cause is None  # the 76 tokens lost to rounding are not a miss
    assert r2.cost == usd("286.75")


def test_common_prefix_just_below_1024_is_not_cached():
    lab = CacheLab("openai", "gpt-5", client="none")
    head = [lab.block("system", 1000), lab.block("user", 23)]  # 1,023
    lab.send(head, at=0)
    r2 = lab.send([*head, lab.block("text", 1), lab.block("user", 100)], at=10)
    # Shared 1,023 < 1,024: nothing cached. Cost 1,124 × 1.25 = $0.001405. Not a miss: no
    # earlier request cached anything for it, and it is not below the minimum itself (it was
    # counted one, where Anthropic's cache did not count the same request).
    assert r2.split == (0, 0, 0, 1124)
    assert r2.outcome.miss_kind is None
    assert r2.cost == usd("1405")


def test_common_prefix_of_exactly_1024_is_cached():
    lab = CacheLab("openai", "gpt-5", client="none")
    head = [lab.block("system", 1000), lab.block("user", 24)]  # 1,024 = 8 × 128
    lab.send(head, at=0)
    r2 = lab.send([*head, lab.block("text", 1), lab.block("user", 100)], at=10)
    # Cost 1,024 × 0.125 + 101 × 1.25 = 128 + 126.25 = $0.00025425.
    assert r2.split == (1024, 0, 0, 101)
    assert r2.cost == usd("254.25")


def test_prompt_below_1024_is_never_cached():
    lab = CacheLab("openai", "gpt-5", client="none")
    prompt = [lab.block("system", 900), lab.block("user", 100)]
    lab.send(prompt, at=0)
    assert lab.send(prompt, at=10).split == (0, 0, 0, 1000)


def _gap(model: str, gap: float, day: datetime | None = None):
    lab = CacheLab("openai", model, client="none", **({"t0": day} if day else {}))
    head = [lab.block("system", 2000), lab.block("user", 100)]
    lab.send(head, at=0)
    return lab.send([*head, lab.block("text", 100), lab.block("user", 100)], at=gap)


def test_24h_retention_idle_gap_under_and_over_30_minutes():
    # gpt-5 on 2026-10-20: 24h retention (the default since 2026-05-29), ~30 min idle assumed.
    under = _gap("gpt-5", 1799)
    # Shared 2,100 → 2,048 cached; 252 uncached. Cost 2,048 × 0.125 + 252 × 1.25 = $0.000571.
    assert under.split == (2048, 0, 0, 252)
    assert under.cost == usd("571")
    over = _gap("gpt-5", 1801)
    assert over.split == (0, 0, 0, 2300)
    assert over.outcome.miss_cause == "TTL expired (idle 30m01s > TTL 30m)"


def test_in_memory_retention_before_the_24h_default():
    # gpt-5 on 2026-05-01: in-memory retention (10 min idle assumed): a 15-minute gap misses.
    before = _gap("gpt-5", 900, datetime(2026, 5, 1, 12, tzinfo=UTC))
    assert before.split == (0, 0, 0, 2300)
    assert before.outcome.miss_kind == "ttl-expired"
    after = _gap("gpt-5", 900)
    assert after.split == (2048, 0, 0, 252)


def test_24h_retention_only_on_the_models_the_changelog_names():
    # The 2026-05-29 default covers gpt-5.5, 5.4, 5.2, every 5.1 variant, 5, 5-codex and 4.1;
    # the -mini / -nano variants of the others keep in-memory retention: a 15-minute gap misses.
    for model in ("gpt-5", "gpt-5-codex", "gpt-5.1-codex-mini", "gpt-4.1-2025-04-14", "gpt-5.5"):
        assert _gap(model, 900).outcome.miss_kind is None, model
    for model in ("gpt-5-mini", "gpt-5-nano", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-5.4-mini"):
        assert _gap(model, 900).outcome.miss_kind == "ttl-expired", model


def test_in_memory_idle_gap_under_and_over_10_minutes():
    # gpt-4o: in-memory only. Shared 2,100 → 2,048 cached.
    # Cost 2,048 × 1.25 + 252 × 2.5 = 2,560 + 630 = $0.00319.
    under = _gap("gpt-4o", 599)
    assert under.split == (2048, 0, 0, 252)
    assert under.cost == usd("3190")
    assert _gap("gpt-4o", 601).outcome.miss_cause == "TTL expired (idle 10m01s > TTL 10m)"


def test_in_memory_idle_gap_of_exactly_10_minutes_is_live():
    """A prompt is live while `t − last_use ≤ ttl` (caching.md, simulation rules): read exactly
    10 minutes (600 s, `ttl_seconds_in_memory`) after it was written. Same split and cost as
    599 s: 2,048 cached, 252 uncached, $0.00319."""
    at = _gap("gpt-4o", 600)
    assert at.split == (2048, 0, 0, 252)
    assert at.outcome.miss_cause is None
    assert at.cost == usd("3190")


def test_in_memory_hard_cap_of_one_hour():
    lab = CacheLab("openai", "gpt-4o", client="none")
    prompt = [lab.block("system", 2000), lab.block("user", 100)]
    for at in range(0, 3600, 500):  # a request every 500 s keeps it warm...
        lab.send(prompt, at=at)
    r = lab.send(prompt, at=3605)  # ...but not past one hour since it was first written
    assert r.split == (0, 0, 0, 2100)
    assert r.outcome.miss_cause == "TTL expired (age 1h00m05s > max lifetime 1h00m)"


def test_24h_retention_is_capped_at_24_hours_not_one():
    # gpt-5 on 2026-10-20: 24h retention, "up to 24 h" (research O1/O2); the in-memory 1-hour
    # cap must not apply. Kept warm every 20 min (< 30 min idle), 2,100 → 2,048 cached.
    lab = CacheLab("openai", "gpt-5", client="none")
    prompt = [lab.block("system", 2000), lab.block("user", 100)]
    for at in range(0, 86400, 1200):
        r = lab.send(prompt, at=at)
        if at:
            assert r.split == (2048, 0, 0, 52), at
    r = lab.send(prompt, at=86405)  # past 24 h since the first write: gone
    assert r.split == (0, 0, 0, 2100)
    assert r.outcome.miss_kind == "ttl-expired"


def test_codex_prompt_cache_key_separates_conversations():
    lab = CacheLab("openai", "gpt-5", client="codex")
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 100)], at=0)
    # A subagent (its own conversation id → its own prompt_cache_key) with the same system
    # prompt: routed elsewhere, nothing cached. Cost 2,100 × 1.25 = $0.002625.
    sub = lab.send([system, lab.block("user", 100)], at=10, thread="agent-1")
    assert sub.split == (0, 0, 0, 2100)
    assert sub.outcome.miss_kind == "other-scope"
    assert sub.outcome.miss_cause == "different cache scope (key=session:main)"
    assert sub.cost == usd("2625")
    # Without a key (client none), the same request reads the shared 2,000 → 1,920 cached.
    plain = CacheLab("openai", "gpt-5", client="none")
    system = plain.block("system", 2000)
    plain.send([system, plain.block("user", 100)], at=0)
    assert plain.send([system, plain.block("user", 100)], at=10, thread="agent-1").split == (
        1920, 0, 0, 180
    )


def test_parallel_request_does_not_see_a_prompt_not_yet_ready():
    lab = CacheLab("openai", "gpt-5", client="none")
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 100)], at=0)
    early = lab.send([system, lab.block("user", 100)], at=0.5, thread="agent-1")
    assert early.split == (0, 0, 0, 2100)
    assert early.outcome.miss_kind == "not-ready"
    late = lab.send([system, lab.block("user", 100)], at=1.5, thread="agent-2")
    assert late.split == (1920, 0, 0, 180)


def test_parallel_request_reads_a_prompt_once_its_response_began():
    """Readable by other threads once `ready_at ≤ t` (caching.md: `ready_at` = the writer's
    start + 1 s by default, `ready_after_seconds`): a subagent starting exactly 1 s after the
    writer reads the shared 2,000 → 1,920 cached."""
    lab = CacheLab("openai", "gpt-5", client="none")
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 100)], at=0)
    edge = lab.send([system, lab.block("user", 100)], at=1.0, thread="agent-1")
    assert edge.split == (1920, 0, 0, 180)
    assert edge.outcome.miss_kind is None


def test_model_switch_is_a_separate_cache():
    lab = CacheLab("openai", "gpt-5", client="none")
    head = [lab.block("system", 2000), lab.block("user", 100)]
    lab.send(head, at=0)
    # gpt-5-mini: $0.25 input. Cost 2,300 × 0.25 = $0.000575.
    r2 = lab.send([*head, lab.block("text", 100), lab.block("user", 100)], at=10,
                  model="gpt-5-mini")
    assert r2.split == (0, 0, 0, 2300)
    assert r2.outcome.miss_cause == "model switch (gpt-5 → gpt-5-mini)"
    assert r2.cost == usd("575")


def test_gpt_5_5_uses_512_token_steps_after_a_hidden_128():
    lab = CacheLab("openai", "gpt-5.5", client="none")
    head = [lab.block("system", 4000), lab.block("user", 100)]
    lab.send(head, at=0)
    r2 = lab.send([*head, lab.block("text", 1), lab.block("user", 1)], at=10)
    # Shared 4,100 visible tokens; breakpoints every 512 counted from a hidden 128-token prefix:
    # 512 × ⌊(4100 + 128) / 512⌋ − 128 = 512 × 8 − 128 = 3,968 (≡ 384 mod 512, as measured on
    # real gpt-5.5 rollouts).
    assert r2.outcome.cache_read == 3968
    assert r2.outcome.cache_read % 512 == 384


def test_reasoning_leaves_at_a_user_turn_not_at_context_fitted_from_usage():
    from dataclasses import replace

    lab = CacheLab("openai", "gpt-5.5", client="none")
    system, user = lab.block("system", 4000), lab.block("user", 100)
    think, call, result = lab.block("thinking", 300), lab.block("tool_call", 50), lab.block(
        "tool_result", 200
    )
    # Context the log does not hold, fitted on the recorded usage: known only by its size.
    fitted = lab.block("user", 40)
    lab.table.blocks[fitted] = replace(lab.table.blocks[fitted], sized_only=True)
    r1 = lab.send([system, user, think, call, result, fitted], at=0)
    # Nobody sent a message there: the turn goes on and its reasoning is billed (4,690).
    assert r1.outcome.dropped_tokens == 0
    assert r1.outcome.uncached == 4690
    # A user message starts a new turn: the 300 reasoning tokens leave the prompt, which now
    # shares only system + user (4,100) with the cached one: 512 × ⌊4228 / 512⌋ − 128 = 3,968.
    r2 = lab.send(
        [system, user, think, call, result, fitted, lab.block("text", 10), lab.block("user", 20)],
        at=10,
    )
    assert r2.outcome.dropped_tokens == 300
    assert r2.outcome.cache_read == 3968
    assert r2.outcome.miss_kind == "thinking-stripped"


def test_a_request_that_is_a_prefix_of_a_cached_prompt_reads_it():
    # A retry from an earlier point: the request is all prefix of the cached prompt, so the
    # longest common prefix is the whole request, 2,100 → 128 × ⌊2,100 / 128⌋ = 2,048 cached.
    lab = CacheLab("openai", "gpt-5", client="none")
    system, u1 = lab.block("system", 2000), lab.block("user", 100)
    lab.send([system, u1, lab.block("text", 100), lab.block("user", 100)], at=0)
    assert lab.send([system, u1], at=10).split == (2048, 0, 0, 52)


def test_an_expired_prompt_of_another_scope_is_no_miss_cause():
    # Codex keys isolate conversations. The main thread's prompt is 30m01s idle (> 30 min TTL):
    # gone in any scope, so the subagent's first request is a plain cold start.
    lab = CacheLab("openai", "gpt-5", client="codex")
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 100)], at=0)
    sub = lab.send([system, lab.block("user", 100)], at=1801, thread="agent-1")
    assert sub.split == (0, 0, 0, 2100)
    assert sub.outcome.miss_kind == "cold-start"


def test_an_expired_prompt_offering_no_more_than_a_live_one_is_no_miss_cause():
    lab = CacheLab("openai", "gpt-5", client="none")
    system = lab.block("system", 1000)
    lab.send([system, lab.block("user", 100)], at=0)  # P1
    lab.send([system, lab.block("user", 100)], at=1000)  # P2: shares 1,000 < 1,024, reads 0
    # At 2,000 s P1 is expired (idle 2,000 s > 30 min) and P2 live; each shares the same 1,000
    # tokens: expiry lost nothing, the miss is the edit of message 1.
    r = lab.send([system, lab.block("user", 100)], at=2000)
    assert r.split == (0, 0, 0, 1100)
    assert r.outcome.miss_kind == "prefix-edited"


def test_reasoning_stripped_within_the_rounding_step_is_no_miss():
    # gpt-5 strips earlier reasoning at a new user turn. r1 = 2,000 + 48 + 30 (reasoning of the
    # turn, kept) = 2,078. r2 drops those 30 and reads 128 × ⌊2,048 / 128⌋ = 2,048: the previous
    # prompt ended within one 128-token step of that, so stripping cost no read.
    lab = CacheLab("openai", "gpt-5", client="none")
    system, u1, think = lab.block("system", 2000), lab.block("user", 48), lab.block("thinking", 30)
    lab.send([system, u1, think], at=0)
    r2 = lab.send([system, u1, think, lab.block("text", 10), lab.block("user", 50)], at=10)
    assert r2.outcome.dropped_tokens == 30
    assert r2.split == (2048, 0, 0, 60)
    assert r2.outcome.miss_kind is None


def test_retention_rules_leave_the_client_no_ttl_choice():
    # `ttl_choice`: only where writes are billed as the client asks (no `retention`). Even with
    # billed writes and a 1h TTL declared, gpt-5's 24h retention decides the lifetime: the
    # 2,100-token write is in the default bucket and the client chose nothing.
    lab = CacheLab("openai", "gpt-5", client="none",
                   overrides={"openai.bills_writes": True, "openai.ttl_1h_available": True})
    r = lab.send([lab.block("system", 2000), lab.block("user", 100)], at=0)
    assert r.split == (0, 0, 2100, 0)
    assert r.outcome.ttl_choice is False


def test_a_response_is_cached_after_its_own_thread_s_previous_prompt():
    # gpt-5.3-codex caches the response after the thread's previous prompt, per thread: another
    # thread's request in between does not hide it. 128 × ⌊(2,100 + 760) / 128⌋ = 2,816.
    lab = CacheLab("openai", "gpt-5.3-codex", client="none")
    prompt = [lab.block("system", 2000), lab.block("user", 100)]
    lab.send(prompt, at=0)
    lab.send([lab.block("system", 1500), lab.block("user", 100)], at=5, thread="agent-1")
    answer = [lab.block("text", 700), lab.block("tool_call", 60, joins=True)]
    nxt = lab.send([*prompt, *answer, lab.block("tool_result", 300)], at=20)
    assert nxt.outcome.cache_read == 2816


# -- GPT-5.6 and later ----------------------------------------------------------------------------

TERRA = "gpt-5.6-terra"


def test_gpt_5_6_implicit_breakpoint_and_billed_writes():
    lab = CacheLab("openai", TERRA, client="codex")
    system, u1 = lab.block("system", 2000), lab.block("user", 500)
    # r1: implicit breakpoint at the end of user 1 (2,500 ≥ 1,024): written.
    # Cost 2,500 × 2.5 = $0.00625 (each token at one rate: here the write rate).
    r1 = lab.send([system, u1], at=0)
    assert r1.split == (0, 0, 2500, 0)
    assert r1.outcome.mechanism == "openai-breakpoints"
    assert r1.cost == usd("6250")
    # r2: + assistant 200 + user 300. Lookups: the implicit boundary (3,000), earlier message
    # ends (user 1 at 2,500 → live entry), the developer block (2,000). Read 2,500 exactly (no
    # 128 rounding), write 500. Cost 2,500 × 0.2 + 500 × 2.5 = 500 + 1,250 = $0.00175.
    r2 = lab.send([system, u1, lab.block("text", 200), lab.block("user", 300)], at=60)
    assert r2.split == (2500, 0, 500, 0)
    assert r2.cost == usd("1750")


def test_gpt_5_6_a_lone_user_message_is_the_implicit_boundary():
    # No tools or system prompt: the only eligible message end, the first user message, is
    # the implicit breakpoint all the same (research: end of the latest eligible message).
    lab = CacheLab("openai", TERRA, client="codex")
    u1 = lab.block("user", 1500)
    assert lab.send([u1], at=0).split == (0, 0, 1500, 0)
    # r2: read user 1 (1,500, an earlier message end), write up to user 2 (1,700).
    r2 = lab.send([u1, lab.block("text", 100), lab.block("user", 100)], at=60)
    assert r2.split == (1500, 0, 200, 0)


def test_gpt_5_6_tool_outputs_group_end_is_the_boundary():
    lab = CacheLab("openai", TERRA, client="codex")
    system, u1 = lab.block("system", 2000), lab.block("user", 500)
    lab.send([system, u1], at=0)
    calls = [lab.block("tool_call", 50, joins=i > 0) for i in range(2)]
    outputs = [lab.block("tool_result", 100, joins=i > 0) for i in range(2)]
    # Implicit boundary at the last tool output (2,800). Read 2,500, write 300.
    r2 = lab.send([system, u1, *calls, *outputs], at=30)
    assert r2.split == (2500, 0, 300, 0)


def test_gpt_5_6_exact_match_without_fallback():
    lab = CacheLab("openai", TERRA, client="codex")
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 500)], at=0)
    # User 1 rewritten: no entry at the system end (nothing was written there) and no fallback
    # to the 2,000 shared tokens. Write 2,500 again: $0.00625.
    r2 = lab.send([system, lab.block("user", 500)], at=30)
    assert r2.split == (0, 0, 2500, 0)
    assert r2.outcome.miss_cause == "prefix edited at message 0"
    assert r2.cost == usd("6250")
    # Before GPT-5.6 the same edit still reads 1,920 (128 × 15) of the shared 2,000.
    old = CacheLab("openai", "gpt-5", client="codex")
    system = old.block("system", 2000)
    old.send([system, old.block("user", 500)], at=0)
    assert old.send([system, old.block("user", 500)], at=30).outcome.cache_read == 1920


def test_gpt_5_6_thirty_minute_ttl():
    def second(gap: float):
        lab = CacheLab("openai", TERRA, client="codex")
        system, u1 = lab.block("system", 2000), lab.block("user", 500)
        lab.send([system, u1], at=0)
        return lab.send([system, u1, lab.block("text", 200), lab.block("user", 300)], at=gap)

    assert second(1799).split == (2500, 0, 500, 0)
    over = second(1801)
    assert over.split == (0, 0, 3000, 0)
    assert over.outcome.miss_cause == "TTL expired (idle 30m01s > TTL 30m)"


def test_gpt_5_6_lookup_set_reaches_20_earlier_message_ends():
    def second(appended: int):
        lab = CacheLab("openai", TERRA, client="codex")
        system, u1 = lab.block("system", 2000), lab.block("user", 100)
        lab.send([system, u1], at=0)  # entry at 2,100 (user 1)
        more = [lab.block("user", 10) for _ in range(appended)]
        return lab.send([system, u1, *more], at=10)

    # 19 new user messages: user 1 is among the 20 message ends before the implicit one.
    # Read 2,100, write 190. Cost 2,100 × 0.2 + 190 × 2.5 = 420 + 475 = $0.000895.
    near = second(19)
    assert near.split == (2100, 0, 190, 0)
    assert near.cost == usd("895")
    # 22 new user messages: user 1 is out of the lookup set. Write 2,320: $0.0058.
    far = second(22)
    assert far.split == (0, 0, 2320, 0)
    assert far.outcome.miss_kind == "beyond-lookback"
    assert far.cost == usd("5800")


def test_gpt_5_6_prompt_cache_key_does_not_isolate():
    lab = CacheLab("openai", TERRA, client="codex")
    system, u1 = lab.block("system", 2000), lab.block("user", 500)
    lab.send([system, u1], at=0)
    # Another conversation key reads the same boundary (the key only separates accounting).
    assert lab.send([system, u1], at=10, thread="agent-1").outcome.cache_read == 2500


def test_a_model_that_caches_its_response_is_read_past_the_previous_prompt():
    # gpt-5.3-codex (measured on an opencode export): the previous prompt *and* the response
    # generated after it are readable once the next prompt repeats them; gpt-5 only the prompt.
    reads = {}
    for model in ("gpt-5.3-codex", "gpt-5"):
        lab = CacheLab("openai", model, client="none")
        prompt = [lab.block("system", 2000), lab.block("user", 100)]
        lab.send(prompt, at=0)
        answer = [lab.block("text", 700), lab.block("tool_call", 60, joins=True)]
        nxt = lab.send([*prompt, *answer, lab.block("tool_result", 300)], at=20)
        reads[model] = nxt.outcome.cache_read
    assert reads["gpt-5"] == 2048  # 128 × ⌊2,100 / 128⌋: the prompt only
    assert reads["gpt-5.3-codex"] == 2816  # 128 × ⌊(2,100 + 760) / 128⌋: prompt + response


def test_a_model_that_caches_its_response_loses_it_where_the_reasoning_is_stripped():
    # The provider cached prompt + reasoning + text; at a new user turn the reasoning leaves the
    # billed prompt, so only the prompt before it can be read.
    reads = {}
    for think in (False, True):
        lab = CacheLab("openai", "gpt-5.3-codex", client="none")
        prompt = [lab.block("system", 2000), lab.block("user", 1500)]
        lab.send(prompt, at=0)
        answer = [lab.block("text", 1000, joins=True)]
        if think:
            answer.insert(0, lab.block("thinking", 3000))
        nxt = lab.send([*prompt, *answer, lab.block("user", 200)], at=10)
        reads[think] = nxt.outcome.cache_read
    assert reads[False] == 4480  # 128 × ⌊(3,500 + 1,000) / 128⌋: prompt + response
    assert reads[True] == 3456  # 128 × ⌊3,500 / 128⌋: the prompt only


def test_gpt_5_6_markers_find_their_block_after_thinking_is_stripped():
    from replay.cache import Breakpoint

    lab = CacheLab("openai", "gpt-5.6", client="none")
    system, u1, u2 = lab.block("system", 2000), lab.block("user", 1500), lab.block("user", 1500)
    thinking, text = lab.block("thinking", 3000), lab.block("text", 100)
    later = [lab.block("thinking", 3000), lab.block("text", 100), lab.block("user", 1500)]
    # The marker on u2 (block 4 as rendered; block 3 once the earlier thinking is stripped).
    lab.send([system, u1, thinking, text, u2, *later], at=0, breakpoints=[Breakpoint(4, "5m")])
    nxt = lab.send([system, u1, thinking, text, u2, lab.block("user", 1500)], at=10)
    assert nxt.outcome.cache_read == 2000 + 1500 + 100 + 1500  # read up to the marked u2


@pytest.mark.parametrize(("shared", "read"), [(1000, 0), (1100, 0), (1407, 0), (1408, 1408)])
def test_gpt_5_5_reads_no_step_below_the_minimum(shared: int, read: int) -> None:
    """gpt-5.5's steps of 512 tokens after a hidden 128 put a step at 896 visible tokens: a
    shared prefix of 1,100 read 896, under the 1,024 tokens no read is below."""
    lab = CacheLab("openai", "gpt-5.5", client="none")
    system = lab.block("system", shared)
    lab.send([system, lab.block("user", 50)], at=0)
    assert lab.send([system, lab.block("user", 50)], at=10).outcome.cache_read == read


def test_gpt_5_6_developer_block_is_only_the_initial_one():
    # "the initial developer block": a system block after the first message does not extend it
    # (nor is it a message end); the head stays block 0, then user 1 and user 2 are ends.
    from replay.cache.openai import eligible_ends

    assert eligible_ends(["system", "user", "system", "user"]) == (0, [0, 1, 3])


def test_gpt_5_6_parallel_request_does_not_see_an_entry_not_yet_ready():
    # An entry is readable once the writing request's response begins (ready_after_seconds 1.0
    # in pricing/cache/openai.json); another thread 0.5 s later writes again, 1.5 s later reads.
    lab = CacheLab("openai", TERRA, client="codex")
    system, u1 = lab.block("system", 2000), lab.block("user", 500)
    lab.send([system, u1], at=0)
    early = lab.send([system, u1], at=0.5, thread="agent-1")
    assert early.split == (0, 0, 2500, 0)
    assert early.outcome.miss_kind == "not-ready"
    late = lab.send([system, u1], at=1.5, thread="agent-2")
    assert late.split == (2500, 0, 0, 0)


def test_gpt_5_6_reports_the_reasoning_stripped_at_a_user_turn():
    # strips_thinking (gpt-5*): the reasoning of an earlier turn leaves the prompt at a new user
    # turn. 2,000 + 1,500 + 100 + 200 = 3,800 billed, all written at the implicit boundary (u2);
    # the 300 reasoning tokens are reported as dropped.
    lab = CacheLab("openai", TERRA, client="codex")
    ids = [lab.block("system", 2000), lab.block("user", 1500), lab.block("thinking", 300),
           lab.block("text", 100), lab.block("user", 200)]
    r = lab.send(ids, at=0)
    assert r.split == (0, 0, 3800, 0)
    assert r.outcome.dropped_tokens == 300


def test_gpt_5_6_prompt_below_1024_is_never_written():
    # Writes need ≥ 1,024 tokens: a 1,000-token prompt is all uncached, twice; the second time
    # it is below the minimum.
    lab = CacheLab("openai", TERRA, client="codex")
    prompt = [lab.block("system", 900), lab.block("user", 100)]
    assert lab.send(prompt, at=0).split == (0, 0, 0, 1000)
    again = lab.send(prompt, at=10)
    assert again.split == (0, 0, 0, 1000)
    assert again.outcome.miss_kind == "below-minimum"


def test_gpt_5_6_a_top_level_automatic_marker_is_no_explicit_breakpoint():
    # Breakpoint.automatic is Anthropic's top-level cache_control; only the implicit boundary
    # (user 1, 2,100) is written, nothing at the system prompt for r2 to read.
    from replay.cache import Breakpoint

    lab = CacheLab("openai", TERRA, client="none")
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 100)], at=0, breakpoints=[Breakpoint(0, automatic=True)])
    assert lab.send([system, lab.block("user", 100)], at=10, breakpoints=[]).split == (
        0, 0, 2100, 0
    )


def test_gpt_5_6_reasoning_stays_before_context_fitted_from_usage():
    # A user block known only by its size is not a user turn: the turn's 300 reasoning tokens
    # stay billed (2,000 + 100 + 300 + 50 + 200 + 40 = 2,690, all written).
    from dataclasses import replace

    lab = CacheLab("openai", TERRA, client="codex")
    fitted = lab.block("user", 40)
    lab.table.blocks[fitted] = replace(lab.table.blocks[fitted], sized_only=True)
    ids = [lab.block("system", 2000), lab.block("user", 100), lab.block("thinking", 300),
           lab.block("tool_call", 50), lab.block("tool_result", 200), fitted]
    r = lab.send(ids, at=0)
    assert r.outcome.dropped_tokens == 0
    assert r.split == (0, 0, 2690, 0)
