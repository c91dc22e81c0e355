"""Hand-built requests with exact token counts, for cache tests and worked examples.

    lab = CacheLab("anthropic", "claude-sonnet-4-5", client="default")
    tools, system = lab.block("tool", 500), lab.block("system", 1500)
    u1 = lab.block("user", 200)
    r = lab.send([tools, system, u1], at=0)          # seconds after lab.t0
    r.outcome.cache_write_5m, r.cost                   # buckets, exact Decimal cost

Blocks are interned with exactly the given token count (no framing, empty text, so two
different blocks share no token); reusing a block id means equal content. A block of kind
`tool` or `system` belongs to the head; any other block opens a new message unless created with
`joins=True` (then it continues the previous block's message, like parallel tool calls or
several tool results in one user turn). Requests go through the real router, profiles, store
and genai-prices pricer, exactly as the engine sends them.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import numpy as np

from replay.cache._base import Breakpoint, CacheOutcome, SimRequest, collapsed_positions
from replay.cache._clients import profile_for
from replay.cache._route import CacheRouter
from replay.cache._rules import ProviderRules
from replay.cache._store import CacheStore
from replay.prefix import PrefixDiff, prefix_diff
from replay.prices import Price, Pricer, charge
from replay.render import BlockInfo, BlockTable, RenderedRequest
from replay.render._render import Renderer
from replay.render._request import SYSTEM, TOOL
from replay.tokens import counter_for, family_for

T0 = datetime(2026, 10, 20, 12, 0, tzinfo=UTC)


@dataclass
class Sent:
    """One simulated request."""

    request: RenderedRequest
    outcome: CacheOutcome
    price: Price
    cost: Decimal
    """Total USD, as the engine bills it (`replay.prices.charge`)."""

    @property
    def split(self) -> tuple[int, int, int, int]:
        """(cache_read, cache_write_1h, cache_write_5m, uncached)."""
        o = self.outcome
        return o.cache_read, o.cache_write_1h, o.cache_write_5m, o.uncached


class CacheLab:
    """A provider, a model and a client, with one cache store."""

    def __init__(
        self,
        provider: str,
        model: str,
        client: str = "default",
        *,
        agent_version: str | None = None,
        rules: ProviderRules | list[ProviderRules] | None = None,
        overrides: dict[str, Any] | None = None,
        session_id: str = "session",
        t0: datetime = T0,
    ) -> None:
        self.provider = provider
        self.model = model
        self.table = BlockTable(counter_for(model))
        self.router = CacheRouter(rules, overrides)
        self.store = CacheStore()
        self.profile = profile_for("", client, agent_version)
        self.pricer = Pricer()
        self.session_id = session_id
        self.t0 = t0
        self.previous: dict[str, RenderedRequest] = {}
        self._starts: dict[int, bool] = {}

    def block(self, kind: str, tokens: int, joins: bool = False) -> int:
        """A new distinct block of exactly `tokens` tokens."""
        block_id = len(self.table.blocks)
        starts = kind not in (TOOL, SYSTEM) and not joins
        self.table.blocks.append(BlockInfo(kind, "", starts, int(tokens), 0))
        self._starts[block_id] = starts
        return block_id

    def blocks(self, kind: str, *sizes: int) -> list[int]:
        return [self.block(kind, n) for n in sizes]

    def request(
        self, ids: list[int], at: float | datetime, thread: str = "main", model: str | None = None,
        provider: str | None = None,
    ) -> RenderedRequest:
        model = model or self.model
        ts = at if isinstance(at, datetime) else self.t0 + timedelta(seconds=at)
        kinds = [self.table.blocks[i].kind for i in ids]
        tokens = np.asarray([self.table.blocks[i].tokens for i in ids], dtype=np.int64)
        owners, item = [], -1
        for i, kind in zip(ids, kinds, strict=True):
            if kind in (TOOL, SYSTEM):
                owners.append(-1)
                continue
            if self._starts.get(i, True) or item < 0:
                item += 1
            owners.append(item)
        req = RenderedRequest(
            index=0,
            request_id=f"r{len(self.previous)}",
            thread=thread,
            ts=ts,
            model=model,
            provider=provider or self.provider,
            block_ids=np.asarray(ids, dtype=np.int64),
            block_tokens=tokens,
            cum_tokens=np.cumsum(tokens),
            item_index=np.asarray(owners, dtype=np.int64),
            kinds=kinds,
            positions=collapsed_positions(kinds),
        )
        prev = self.previous.get(thread)
        req.prefix_keys = Renderer._prefix_keys(req, prev)
        if not req.prefix_keys and len(ids):  # pragma: no cover - defensive
            req.prefix_keys = [zlib.crc32(model.encode())]
        return req

    def send(
        self,
        ids: list[int],
        at: float | datetime,
        thread: str = "main",
        *,
        model: str | None = None,
        provider: str | None = None,
        breakpoints: list[Breakpoint] | None = None,
        output: int = 0,
        duration_s: float | None = None,
    ) -> Sent:
        req = self.request(ids, at, thread, model, provider)
        prev = self.previous.get(thread)
        if prev is not None and family_for(prev.model).family != family_for(req.model).family:
            diff = PrefixDiff(0, 0, None, "model switch", True)  # as the engine does
        else:
            diff = prefix_diff(prev, req, self.table)
        if breakpoints is None:
            breakpoints = self.profile.breakpoints(req, thread)
        sim = SimRequest(
            req,
            breakpoints,
            f"{req.provider}:{self.session_id}",
            diff,
            prev,
            self.table,
            cache_key=self.profile.key_for(thread, self.session_id),
            profile=self.profile,
            duration_s=duration_s,
        )
        outcome = self.router.simulate(sim, self.store)
        self.previous[thread] = req
        charges = charge(
            self.pricer, outcome, output, model=req.model, provider=req.provider, ts=req.ts
        )
        return Sent(req, outcome, charges.price, charges.cost_usd)


__all__ = ["T0", "CacheLab", "Sent"]
