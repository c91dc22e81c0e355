"""OpenAI automatic prompt caching (models before GPT-5.6).

No breakpoints and no write fee: every request leaves its prompt in the cache; a later request
in the same scope reads the longest prefix it shares with a live cached prompt, if that prefix and
the prompt are at least `min_cacheable_tokens` long, rounded down to `granularity_tokens` (128).
Prompts live `ttl_seconds` after their last use (retention depends on the model and date).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from replay.cache._base import CacheOutcome, CacheSimulator, SimRequest, edit_cause
from replay.render import BlockTable, RenderedRequest, first_difference

_MAX_PROMPTS = 64


@dataclass
class CachedPrompt:
    block_ids: np.ndarray
    cum_tokens: np.ndarray
    last_use: datetime
    ready_at: datetime
    ttl: float
    writer: str = ""

    def ready(self, t: datetime, reader: str) -> bool:
        return self.ready_at <= t or reader == self.writer

    @property
    def total(self) -> int:
        return int(self.cum_tokens[-1]) if len(self.cum_tokens) else 0


def common_prefix_tokens(
    table: BlockTable, ids_a: np.ndarray, cum_a: np.ndarray, ids_b: np.ndarray, cum_b: np.ndarray
) -> int:
    """Tokens two prompts share from the start: block ids first, tokens only in the first
    differing block."""
    from replay.prefix._diff import _common_tokens

    block = first_difference(ids_a, ids_b)
    if block is None:
        n = min(len(ids_a), len(ids_b))
        return int(cum_a[n - 1]) if n else 0
    before = int(cum_a[block - 1]) if block else 0
    return before + _common_tokens(table, int(ids_a[block]), int(ids_b[block]))


class AutomaticPrefixSimulator(CacheSimulator):
    """Automatic prefix caching: OpenAI before GPT-5.6, and providers that work like it (Gemini
    implicit caching, with its own minimums and granularity from its rule file)."""

    provider = "openai"

    def simulate(self, sim: SimRequest) -> CacheOutcome:
        req: RenderedRequest = sim.request
        t, model, total = req.ts, req.model, req.total
        min_len = int(self.rules.get("min_cacheable_tokens", model, t))
        step = int(self.rules.get("granularity_tokens", model, t))
        ttl = float(self.rules.get("ttl_seconds", model, t))
        ready_after = timedelta(seconds=float(self.rules.get("ready_after_seconds", model, t)))
        prompts: list[CachedPrompt] = self.store.extra.setdefault((sim.scope, model), [])  # type: ignore[assignment]

        live_best, live_match = 0, None
        dead_best, dead_reason = 0, None
        for p in prompts:
            shared = common_prefix_tokens(
                sim.table, p.block_ids, p.cum_tokens, req.block_ids, req.cum_tokens
            )
            if p.ready(t, sim.lane) and (t - p.last_use).total_seconds() <= p.ttl:
                if shared > live_best:
                    live_best, live_match = shared, p
            elif shared > dead_best:
                dead_best = shared
                if not p.ready(t, sim.lane) and (t - p.last_use).total_seconds() <= p.ttl:
                    dead_reason = "written by a parallel request not yet ready"
                else:
                    gap = (t - p.last_use).total_seconds()
                    dead_reason = f"TTL expired (idle {gap:.0f}s)"

        cached = 0
        if total >= min_len and live_best >= min_len:
            cached = (live_best // step) * step
        cause = None
        if dead_best > live_best and dead_best >= min_len:
            cause = dead_reason
        elif sim.previous is None:
            cause = "cold start" if cached == 0 else None
        elif sim.previous.model != model or sim.diff.is_break:
            cause = edit_cause(sim)
        elif cached == 0 and total >= min_len and live_best < min_len:
            cause = "below minimum cacheable length"
        elif total < min_len:
            cause = "below minimum cacheable length"

        if live_match is not None:
            live_match.last_use = t
        # The new prompt covers every cached prompt that is a prefix of it.
        kept = [
            p
            for p in prompts
            if not (
                len(p.block_ids) <= len(req.block_ids)
                and first_difference(p.block_ids, req.block_ids) is None
            )
            and (t - p.last_use).total_seconds() <= max(p.ttl * 4, 86400)
        ]
        kept.append(CachedPrompt(req.block_ids, req.cum_tokens, t, t + ready_after, ttl, sim.lane))
        prompts[:] = kept[-_MAX_PROMPTS:]
        return CacheOutcome(total - cached, cached, 0, 0, cause)
