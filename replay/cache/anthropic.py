"""Anthropic prompt caching: explicit breakpoints, 20-position lookback, 5m/1h TTL.

Per request (rules from `pricing/cache/anthropic.json` at the request's date):
1. Breakpoints shorter than the model's minimum cacheable length are dropped.
2. Read: from each breakpoint, walk back at most `lookback_positions` positions (the breakpoint
   counts as one; runs of tool_use / tool_result blocks count as one position) and stop at the
   first live entry. A = the longest hit.
3. Bill (the mixed-TTL rule): read = A; 1h write = up to the last 1h breakpoint after A;
   5m write = from there to the last breakpoint; uncached = the rest.
4. Every breakpoint writes (or refreshes) its entry; the entry read is refreshed for free.
"""

from __future__ import annotations

from datetime import timedelta

from replay.cache._base import CacheOutcome, CacheSimulator, SimRequest, edit_cause
from replay.cache._store import Entry


class AnthropicSimulator(CacheSimulator):
    provider = "anthropic"

    def _ttl_seconds(self, ttl: str, model: str, ts) -> float:
        return float(self.rules.get("ttl_seconds_1h" if ttl == "1h" else "ttl_seconds_5m", model, ts))

    def simulate(self, sim: SimRequest) -> CacheOutcome:
        req = sim.request
        model, t, total = req.model, req.ts, req.total
        min_len = int(self.rules.get("min_cacheable_tokens", model, t))
        lookback = int(self.rules.get("lookback_positions", model, t))
        collapse = bool(self.rules.get("collapse_tool_runs", model, t, default=False))
        max_bps = int(self.rules.get("max_breakpoints", model, t))
        ready_after = timedelta(seconds=float(self.rules.get("ready_after_seconds", model, t)))

        bps = sorted(sim.breakpoints, key=lambda b: b.block)[-max_bps:]
        eligible = [b for b in bps if int(req.cum_tokens[b.block]) >= min_len]
        if not eligible:
            cause = "below minimum cacheable length" if bps and total else None
            return CacheOutcome(total, 0, 0, 0, cause)

        # Boundaries a lookback can stop at: the last block of each position.
        if collapse:
            pos = req.positions
        else:
            pos = range(len(req.block_ids))
        ends: dict[int, int] = {}
        for block, p in enumerate(pos):
            ends[int(p)] = block

        keys = req.prefix_keys
        read_tokens, read_key = 0, None
        blocked = {"expired": None, "not_ready": False, "beyond": False}
        for bp in sorted(eligible, key=lambda b: -b.block):
            top = int(req.positions[bp.block]) if collapse else bp.block
            for p in range(top, max(-1, top - lookback), -1):
                block = ends.get(p)
                if block is None or block > bp.block:
                    continue
                entry = self.store.get(sim.scope, model, keys[block])
                if entry is None:
                    continue
                if entry.live(t, sim.lane):
                    if entry.tokens > read_tokens:
                        read_tokens, read_key = entry.tokens, keys[block]
                    break
                if not entry.ready(t, sim.lane) and not entry.expired(t):
                    blocked["not_ready"] = True
                else:
                    gap = (t - entry.last_use).total_seconds()
                    blocked["expired"] = max(blocked["expired"] or 0, gap)

        last = eligible[-1]
        c_tokens = max(int(req.cum_tokens[last.block]), read_tokens)
        one_hour = [b for b in eligible if b.ttl == "1h" and int(req.cum_tokens[b.block]) > read_tokens]
        b_tokens = int(req.cum_tokens[one_hour[-1].block]) if one_hour else read_tokens
        b_tokens = min(max(b_tokens, read_tokens), c_tokens)
        outcome = CacheOutcome(
            uncached=total - c_tokens,
            cache_read=read_tokens,
            cache_write_5m=c_tokens - b_tokens,
            cache_write_1h=b_tokens - read_tokens,
            miss_cause=self._cause(sim, read_tokens, blocked, eligible, lookback),
        )

        for bp in eligible:
            self.store.put(
                sim.scope,
                model,
                keys[bp.block],
                Entry(
                    tokens=int(req.cum_tokens[bp.block]),
                    ttl=self._ttl_seconds(bp.ttl, model, t),
                    last_use=t,
                    ready_at=t + ready_after,
                    writer=sim.lane,
                ),
            )
        if read_key is not None:
            entry = self.store.get(sim.scope, model, read_key)
            if entry is not None:
                entry.last_use = t
        return outcome

    def _cause(self, sim: SimRequest, read: int, blocked: dict, eligible, lookback: int) -> str | None:
        """Explain a read shorter than the longest prefix an earlier request wrote for it."""
        req = sim.request
        best_written = 0
        for block in range(min(len(req.prefix_keys), eligible[-1].block + 1) - 1, -1, -1):
            entry = self.store.get(sim.scope, req.model, req.prefix_keys[block])
            if entry is not None:
                best_written = entry.tokens
                break
        if best_written > read:
            if blocked["not_ready"]:
                return "written by a parallel request not yet ready"
            if blocked["expired"] is not None:
                return f"TTL expired (idle {blocked['expired']:.0f}s)"
            return f"beyond lookback ({lookback} positions)"
        if sim.previous is None:
            return "cold start" if read == 0 else None
        if sim.previous.model != req.model or sim.diff.is_break:
            return edit_cause(sim)
        return None
