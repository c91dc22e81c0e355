"""Explicit-breakpoint caching (mechanism `explicit-breakpoints`): Anthropic's Messages API, its
Bedrock and Vertex variants, and Qwen's explicit mode.

Per request, with the rules in force at its date (`pricing/cache/anthropic.json`, `qwen.json`):

0. Models that strip thinking (`strips_thinking`): every thinking block before the last
   non-tool_result user turn is removed from the prompt first; it is neither cached nor billed.
1. Breakpoints: the client's explicit ones (moved off thinking and empty blocks) plus the
   top-level automatic one on the last cacheable block when the client sends it and
   `automatic_breakpoint` holds; at most `max_breakpoints`. Breakpoints shorter than the
   model's minimum are dropped (on Bedrock, each one must lie a minimum after the previous).
2. Read: from each breakpoint, walk back at most `lookback_positions` positions (the breakpoint
   counts as one; with `collapse_tool_runs`, a run of tool_use or tool_result blocks is one
   position) and stop at the first live entry. A = the longest hit.
3. Bill (the mixed-TTL rule): read = A; 1h write = up to the last 1h breakpoint after A (B);
   5m write = from B to the last breakpoint (C); uncached = the rest.
4. Every breakpoint writes (or refreshes) its entry with its TTL, from the request's start;
   the entry read is refreshed for free. Entries are readable by other threads once the
   writing response began (`ready_at`), by the writing thread at once.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import numpy as np

from replay.cache._base import (
    Breakpoint,
    CacheOutcome,
    CacheSimulator,
    Lost,
    PromptView,
    SimRequest,
    entry_state,
    explain,
    lane_state,
    prompt_view,
    walk_entries,
)
from replay.cache._rules import RuleBook
from replay.render._request import TEXT, THINKING


def cacheable(view: PromptView, table, block: int) -> bool:
    """Blocks that may carry `cache_control`: not thinking, not empty text."""
    kind = view.block_kinds[block]
    if kind == THINKING:
        return False
    block_id = int(view.ids[block])
    return not (kind == TEXT and table.tokens[block_id] <= table.overheads[block_id])


def last_cacheable(view: PromptView, table, upto: int) -> int | None:
    for i in range(upto, -1, -1):
        if cacheable(view, table, i):
            return i
    return None


def lookback_blocks(view: PromptView, block: int, lookback: int, collapse: bool) -> range:
    """The blocks the lookback from a breakpoint on `block` checks, in order: `lookback`
    positions back from the breakpoint (it counts as one), each position's blocks last first,
    skipping blocks after the breakpoint. That is every block from the breakpoint down to the
    first block of the last position reached: positions never decrease along the prompt, so one
    binary search finds it (no walk over the prompt)."""
    if collapse:
        top = int(view.positions[block])
        low = int(np.searchsorted(view.positions, top - lookback + 1, side="left"))
    else:
        low = max(0, block - lookback + 1)
    return range(block, low - 1, -1)


class AnthropicSimulator(CacheSimulator):
    provider = "anthropic"
    mechanism = "explicit-breakpoints"

    def _ttl_seconds(self, sim: SimRequest, ttl: str) -> float:
        return float(self.rule(sim, "ttl_seconds_1h" if ttl == "1h" else "ttl_seconds_5m"))

    def ttl_choice(self, sim: SimRequest) -> bool:
        """5m or 1h per breakpoint, once the 1-hour TTL exists (else 1h is written as 5m)."""
        return bool(self.rule(sim, "ttl_1h_available", True))

    def breakpoints(self, sim: SimRequest, view: PromptView) -> tuple[list[Breakpoint], str]:
        """The breakpoints the provider honours, and a note when some were ignored."""
        note = ""
        has_1h = self.ttl_choice(sim)
        max_bps = int(self.rule(sim, "max_breakpoints"))
        marks: dict[int, Breakpoint] = {}
        automatic = [b for b in sim.breakpoints if b.automatic]
        for bp in sim.breakpoints:
            if bp.automatic:
                continue
            block = last_cacheable(view, sim.table, view.map_block(bp.block))
            if block is None:
                continue
            ttl = bp.ttl if has_1h else "5m"
            old = marks.get(block)
            if old is None or (old.ttl == "5m" and ttl == "1h"):
                marks[block] = Breakpoint(block, ttl)
        if automatic:
            if not self.rule(sim, "automatic_breakpoint", False):
                note = "the provider has no top-level automatic caching"
            elif len(marks) < max_bps:
                block = last_cacheable(view, sim.table, len(view) - 1)
                if block is not None and block not in marks:
                    ttl = automatic[-1].ttl if has_1h else "5m"
                    marks[block] = Breakpoint(block, ttl, automatic=True)
        bps = sorted(marks.values(), key=lambda b: b.block)
        if len(bps) > max_bps:  # the API would refuse the request; keep the latest ones
            bps = bps[len(bps) - max_bps :]  # (not `bps[-max_bps:]`: all of them for 0)
        return bps, note

    def simulate(self, sim: SimRequest) -> CacheOutcome:
        req, store = sim.request, self.store
        t = req.ts
        view = prompt_view(req, bool(self.rule(sim, "strips_thinking", False)), sim.table)
        total = view.total
        min_len = int(self.rule(sim, "min_cacheable_tokens"))
        lookback = int(self.rule(sim, "lookback_positions"))
        collapse = bool(self.rule(sim, "collapse_tool_runs", False))
        per_checkpoint = bool(self.rule(sim, "min_tokens_per_checkpoint", False))

        bps, note = self.breakpoints(sim, view)
        eligible: list[Breakpoint] = []
        floor = 0
        for bp in bps:
            tokens = view.tokens(bp.block)
            if tokens - floor >= min_len:
                eligible.append(bp)
                if per_checkpoint:
                    floor = tokens

        lane = lane_state(store, sim, "explicit")
        stripped = None
        if view.dropped_tokens > lane.dropped and sim.previous is not None:
            stripped = (
                f"thinking blocks stripped at the new user turn ({view.dropped_tokens:,} tokens)"
            )

        def done(
            read: int, w1h: int, w5m: int, uncached: int, lost: Lost | None, size: int = total
        ) -> CacheOutcome:
            no_bp = None
            if not bps:
                no_bp = note or "the client sent no cache breakpoint"
            kind, text = explain(
                sim, read, lost, total=size, min_len=min_len, no_breakpoint=no_bp,
                stripped=stripped if read < lane.total else None,
            )
            lane.total, lane.dropped = total, view.dropped_tokens
            return CacheOutcome(
                uncached=uncached,
                cache_read=read,
                cache_write_5m=w5m,
                cache_write_1h=w1h,
                miss_cause=text,
                miss_kind=kind,
                dropped_tokens=view.dropped_tokens,
                price_factor=self.price_factor(sim),
            )

        if not eligible:
            lost = walk_entries(
                store, sim, view, 0, unreached="no breakpoint reaches it (all below the minimum)"
            )
            size = view.tokens(bps[-1].block) if bps else total
            return done(0, 0, 0, total, lost, size)

        read, read_entry = 0, None
        for bp in sorted(eligible, key=lambda b: -b.block):
            hit = None
            blocks = lookback_blocks(view, bp.block, lookback, collapse)
            low = blocks.stop + 1
            keys = view.keys[low : bp.block + 1]  # one list (a key at a time is slow)
            for block in blocks:
                entry = store.get(sim.scope, req.model, keys[block - low])
                if entry is not None and entry_state(entry, t, sim.lane) is None:
                    hit = (view.tokens(block), entry)
                    break
            if hit is not None and hit[0] > read:
                read, read_entry = hit

        c_tokens = max(view.tokens(eligible[-1].block), read)
        one_hour = [b for b in eligible if b.ttl == "1h" and view.tokens(b.block) > read]
        b_tokens = view.tokens(one_hour[-1].block) if one_hour else read
        b_tokens = min(max(b_tokens, read), c_tokens)

        lost = walk_entries(store, sim, view, read, unreached=f"beyond lookback ({lookback} "
                            f"positions{', tool runs collapsed' if collapse else ''})")
        outcome = done(read, b_tokens - read, c_tokens - b_tokens, total - c_tokens, lost)

        ready = self.ready_at(sim)
        for bp in eligible:
            store.put(
                sim.scope,
                req.model,
                view.keys[bp.block],
                self.new_entry(sim, view.tokens(bp.block), self._ttl_seconds(sim, bp.ttl), ready),
            )
        if read_entry is not None and self.rule(sim, "refresh_on_read", True):
            read_entry.last_use = max(read_entry.last_use, t)
        return outcome

    def price_factor(self, sim: SimRequest) -> Decimal:
        """`endpoint_price_factor` from the rules the simulator keeps for the request's model
        and day (`rule`): asked once per simulated request."""
        if self.rule(sim, "endpoint", "global") == "global":
            return _ONE
        return Decimal(str(self.rule(sim, "regional_price_multiplier", "1")))


_ONE = Decimal(1)


def endpoint_price_factor(book: RuleBook, model: str, ts: datetime) -> Decimal:
    """What the endpoint the rules name adds to every price of a request (Vertex's regional
    and multi-region endpoints: +10%); 1 on the global endpoint."""
    if book.get("endpoint", model, ts, "global") == "global":
        return Decimal(1)
    return Decimal(str(book.get("regional_price_multiplier", model, ts, "1")))
