"""Moonshot Kimi caching, hand-computed.

K2.x: automatic, no write fee (exact prefix assumed; a 256-token alignment seen by a third
party on the coding endpoint is an override). K3 / K3.1 (2026-07+, UNCERTAIN): automatic, and
the new tail of every prompt is billed as a cache write — 1× input for the default 5m TTL, 2×
for 1h (`prompt_cache_options`), reads 0.1× — the Anthropic billing split with the breakpoint
at the end of the prompt. kimi-k3: $3 input / $0.30 read / $3 5m write / $6 1h write;
kimi-k2.6: $0.95 / $0.16. Split = (read, 1h write, 5m write, uncached).
"""

from __future__ import annotations

from decimal import Decimal

from replay.cache.testing import CacheLab


def usd(micro: str) -> Decimal:
    return Decimal(micro) / 1_000_000


def _two(lab: CacheLab, gap: float):
    head = [lab.block("system", 2000), lab.block("user", 100)]
    r1 = lab.send(head, at=0)
    r2 = lab.send([*head, lab.block("text", 100), lab.block("user", 100)], at=gap)
    return r1, r2


def test_k3_bills_5m_writes():
    r1, r2 = _two(CacheLab("moonshotai", "kimi-k3", client="none"), 60)
    # r1: write 2,100 (5m). Cost 2,100 × 3 = $0.0063.
    assert r1.split == (0, 0, 2100, 0)
    assert r1.cost == usd("6300")
    # r2: read 2,100, write 200. Cost 2,100 × 0.3 + 200 × 3 = 630 + 600 = $0.00123.
    assert r2.split == (2100, 0, 200, 0)
    assert r2.cost == usd("1230")


def test_k3_one_hour_writes_read_after_40_minutes():
    lab = CacheLab("moonshotai", "kimi-k3", client="claude-code", agent_version="2.1.0")
    r1, r2 = _two(lab, 40 * 60)
    # r1: 1h write 2,100 × 6 = $0.0126. r2: read 2,100 + 1h write 200: 630 + 1,200 = $0.00183.
    assert r1.split == (0, 2100, 0, 0)
    assert r1.cost == usd("12600")
    assert r2.split == (2100, 200, 0, 0)
    assert r2.cost == usd("1830")


def test_k3_five_minute_entry_gone_after_40_minutes():
    _, r2 = _two(CacheLab("moonshotai", "kimi-k3", client="none"), 40 * 60)
    # Everything written again: 2,300 × 3 = $0.0069.
    assert r2.split == (0, 0, 2300, 0)
    assert r2.outcome.miss_kind == "ttl-expired"
    assert r2.cost == usd("6900")


def test_k2_has_no_write_fee():
    _, r2 = _two(CacheLab("moonshotai", "kimi-k2.6", client="none"), 60)
    # Read 2,100 exactly, 200 uncached: 2,100 × 0.16 + 200 × 0.95 = 336 + 190 = $0.000526.
    assert r2.split == (2100, 0, 0, 200)
    assert r2.cost == usd("526")


def test_256_token_alignment_as_an_override():
    lab = CacheLab("moonshotai", "kimi-k2.6", client="none",
                   overrides={"moonshotai.granularity_tokens": 256})
    _, r2 = _two(lab, 60)
    assert r2.split == (2048, 0, 0, 252)


def test_k3_idle_gap_under_and_over_5_minutes_and_parallel():
    _, under = _two(CacheLab("moonshotai", "kimi-k3", client="none"), 299)
    assert under.split == (2100, 0, 200, 0)
    _, over = _two(CacheLab("moonshotai", "kimi-k3", client="none"), 301)
    assert over.split == (0, 0, 2300, 0)
    lab = CacheLab("moonshotai", "kimi-k3", client="none")
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 100)], at=0)
    parallel = lab.send([system, lab.block("user", 100)], at=0.5, thread="agent-1")
    # Nothing readable yet: the whole prompt is written again (2,100 × 3 = $0.0063).
    assert parallel.split == (0, 0, 2100, 0)
    assert parallel.outcome.miss_kind == "not-ready"
    assert parallel.cost == usd("6300")


def test_k3_writes_nothing_below_the_minimum():
    """K3 bills the prompt as a cache write only where it is cached at all: a prompt shorter
    than `min_cacheable_tokens` is neither read nor written, all of it is billed uncached
    (docs/cache-rules.md, `automatic-prefix`). Moonshot documents no minimum (0, uncertain,
    pricing/cache/moonshotai.json), so one is set as a rule override."""
    overrides = {"moonshotai.min_cacheable_tokens": 1024}
    lab = CacheLab("moonshotai", "kimi-k3", client="none", overrides=overrides)
    prompt = [lab.block("system", 1000), lab.block("user", 23)]  # 1,023 < 1,024
    # Both times: no write, 1,023 uncached. Cost 1,023 × 3 = $0.003069.
    r1 = lab.send(prompt, at=0)
    r2 = lab.send(prompt, at=10)
    assert r1.split == r2.split == (0, 0, 0, 1023)
    assert r2.outcome.miss_kind == "below-minimum"
    assert r1.cost == r2.cost == usd("3069")
    # At the minimum the prompt is written, then read: 1,024 × 3 = $0.003072, 1,024 × 0.3.
    lab = CacheLab("moonshotai", "kimi-k3", client="none", overrides=overrides)
    prompt = [lab.block("system", 1000), lab.block("user", 24)]
    r1 = lab.send(prompt, at=0)
    r2 = lab.send(prompt, at=10)
    assert (r1.split, r2.split) == ((0, 0, 1024, 0), (1024, 0, 0, 0))
    assert (r1.cost, r2.cost) == (usd("3072"), usd("307.2"))


def test_k3_takes_a_forced_ttl_from_a_client_without_breakpoints(tmp_path):
    """`--ttl 1h` on a Codex log replayed on Kimi K3: the codex profile marks nothing, and the
    TTL the cache asks the client for came from the profile (5m), silently."""
    import json

    from replay import replay

    lines = [
        {"type": "session", "format": "replay-log", "version": 1, "ts": "2026-10-20T10:00:00Z",
         "session_id": "k", "agent": "codex", "provider": "moonshotai", "model": "kimi-k3",
         "system": "You are a coding agent. " * 120, "tools": []},
        {"type": "user", "ts": "2026-10-20T10:00:00Z", "text": "Summarise the design."},
        {"type": "request", "ts": "2026-10-20T10:00:01Z", "request_id": "r0"},
        {"type": "assistant", "ts": "2026-10-20T10:00:02Z", "request_id": "r0",
         "blocks": [{"type": "text", "text": "A store of prefixes with lifetimes."}]},
        {"type": "user", "ts": "2026-10-20T10:20:00Z", "text": "Go on."},
        {"type": "request", "ts": "2026-10-20T10:20:01Z", "request_id": "r1"},
        {"type": "assistant", "ts": "2026-10-20T10:20:02Z", "request_id": "r1",
         "blocks": [{"type": "text", "text": "Done."}]},
    ]
    log = tmp_path / "k3.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    for ttl, read in ((None, False), ("5m", False), ("1h", True)):
        turns = replay(log, "baseline", ttl=ttl).turns
        writes_1h = turns["cache_write_1h_tokens"].to_list()
        assert (writes_1h[0] > 0) == (ttl == "1h")
        assert (turns["cached_tokens"][1] > 0) == read  # 20 minutes idle: only 1h survives


def test_k3_without_markers_writes_with_the_client_profile_s_ttl():
    # requested_ttl: the last breakpoint's, else a forced one, else the profile's for the
    # thread. Claude Code 2.1 asks 1h on its main thread, 5m elsewhere: with no marker sent,
    # the 1,100-token prompt is written 1h on main, 5m on a subagent.
    lab = CacheLab("moonshotai", "kimi-k3", client="claude-code", agent_version="2.1.0")
    prompt = [lab.block("system", 1000), lab.block("user", 100)]
    assert lab.send(prompt, at=0, breakpoints=[]).split == (0, 1100, 0, 0)
    other = [lab.block("system", 1000), lab.block("user", 100)]
    assert lab.send(other, at=1, thread="agent-1", breakpoints=[]).split == (0, 0, 1100, 0)
