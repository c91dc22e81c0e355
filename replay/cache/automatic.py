"""Automatic prefix caching (mechanism `automatic-prefix`): OpenAI before GPT-5.6, Gemini
implicit caching, xAI, Kimi, Qwen implicit, DeepSeek's legacy 64-token rule.

No breakpoints: every request leaves its prompt in the cache; a later request in the same scope
and model reads the longest prefix it shares with a live cached prompt, if that prefix and the
prompt are at least `min_cacheable_tokens` long, rounded down to `granularity_tokens`. Prompts
live `ttl_seconds` after their last use (OpenAI: per `retention`, with a hard cap since the
first write). With `bills_writes` (Kimi K3) the rest of the prompt is billed as a cache write,
5m or 1h as the client asks; otherwise nothing is billed for writing.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import numpy as np

from replay.cache._base import (
    BELOW_MINIMUM,
    OTHER_SCOPE,
    CacheOutcome,
    CacheSimulator,
    Lost,
    SimRequest,
    entry_state,
    explain,
    lane_state,
    prompt_view,
    scope_label,
)
from replay.cache._rules import RuleBook
from replay.cache._store import CachedPrompt, CacheStore
from replay.prefix import common_block_tokens
from replay.render import BlockTable, RenderedRequest, first_difference
from replay.render._request import TEXT, THINKING, TOOL_CALL

MAX_PROMPTS = 64
"""Prompts kept per scope and model (the oldest go first), besides each thread's latest one
while it has not expired (`capped`)."""


def common_prefix_tokens(
    table: BlockTable, ids_a: np.ndarray, cum_a: np.ndarray, ids_b: np.ndarray, cum_b: np.ndarray
) -> int:
    """Tokens two prompts share from the start: block ids first, tokens only in the first
    differing block."""
    block = first_difference(ids_a, ids_b)
    if block is None:
        n = min(len(ids_a), len(ids_b))
        return int(cum_a[n - 1]) if n else 0
    before = int(cum_a[block - 1]) if block else 0
    return before + common_block_tokens(table, int(ids_a[block]), int(ids_b[block]))


def shared_with(p: CachedPrompt, req: RenderedRequest, table: BlockTable) -> int:
    shared = common_prefix_tokens(table, p.ids(), p.cums(), req.block_ids, req.cum_tokens)
    return min(shared, p.total)


PAIRS_MAX = 1 << 14
"""Block pairs a `PrefixMatcher` remembers (then it starts over: an answer is only recomputed).
The pairs a request needs are those of the prompts held (`MAX_PROMPTS` per scope) with it: a
few hundred, however long the session; 2^16 pairs weighed ~0.3× of a 2,000-request log."""


class PrefixMatcher:
    """`shared_with` for a stream of requests, each compared with the prompts a cache holds.

    An automatic cache compares every request with each prompt it holds (up to `MAX_PROMPTS`
    per scope), most of them the same prompts as for the request before. Two memos spare most
    of that work (on the Codex a7 sample, `--strategies all`: 5 in 6 of the block comparisons
    and 9 in 10 of the token comparisons repeated one made before):

    - blocks: the number of leading blocks a prompt shares with the previous request, `old`,
      and the number that request shares with this one, `step`, give the prompt's share of
      this one whenever they differ: `min(old, step)`. Only when they are equal are the blocks
      from there on compared.
    - tokens: the tokens each pair of differing blocks shares (a prompt held since a strategy
      rewrote it parts from each later request at the same pair of blocks; tokenizing both
      again would be needed, their ids being long gone from the counter's small cache). Block
      ids name fixed contents of one table, so the answers hold as long as the table does."""

    def __init__(self) -> None:
        self._table: BlockTable | None = None
        self._pairs: dict[int, int] = {}
        """`a << 32 | b` for the pair of block ids (a, b) → the tokens they share (one int key:
        a tuple and two int objects per pair weighed ~0.7× of a 2,000-request log)."""
        self._current: np.ndarray | None = None
        """Block ids of the request being matched."""
        self._step = 0
        """Leading blocks it shares with the request matched before it."""
        self._before: dict[int, tuple[CachedPrompt, int]] = {}
        self._now: dict[int, tuple[CachedPrompt, int]] = {}
        """`id(prompt)` → (prompt, leading blocks it shares with the previous request
        (`_before`) or with the current one (`_now`)). A held prompt's blocks never change
        (`CachedPrompt.rebase` changes only how they are held)."""

    def blocks(self, p: CachedPrompt, ids: np.ndarray) -> int:
        """Leading blocks the cached prompt `p` shares with the request of block ids `ids`."""
        if ids is not self._current:
            last, self._current = self._current, ids
            self._step = -1 if last is None else _common_blocks(last, ids, 0)
            self._before, self._now = self._now, {}
        hit = self._now.get(id(p))
        if hit is not None and hit[0] is p:
            return hit[1]
        hit = self._before.get(id(p))
        old = hit[1] if hit is not None and hit[0] is p else -1
        if old >= 0 and old != self._step:
            shared = min(old, self._step)
        else:  # each shares as many blocks with the previous request: at least those together
            shared = self._compared(p, ids, max(old, 0))
        self._now[id(p)] = (p, shared)
        return shared

    def _compared(self, p: CachedPrompt, ids: np.ndarray, start: int) -> int:
        """Leading blocks `p` shares with `ids`, knowing it shares the first `start`."""
        head = p.head
        if start < head:  # what it shares of its anchor's blocks, the anchor tells
            within = self.blocks(p.anchor, ids)  # type: ignore[arg-type]
            if within < head:
                return within
            start = head
        return head + _common_blocks(p.block_ids, ids[head:], start - head)

    def shared(self, p: CachedPrompt, req: RenderedRequest, table: BlockTable) -> int:
        """Tokens `req` shares with the cached prompt `p` from the start (`shared_with`)."""
        block = self.blocks(p, req.block_ids)
        if block == min(p.size, len(req.block_ids)):  # one is a prefix of the other
            shared = p.cum_at(block - 1) if block else 0
        else:
            before = p.cum_at(block - 1) if block else 0
            tokens = self._block_tokens(table, p.block_at(block), int(req.block_ids[block]))
            shared = before + tokens
        return min(shared, p.total)

    def _block_tokens(self, table: BlockTable, a: int, b: int) -> int:
        if table is not self._table or len(self._pairs) >= PAIRS_MAX:
            self._table, self._pairs = table, {}
        key = a << 32 | b
        hit = self._pairs.get(key)
        if hit is None:
            hit = self._pairs[key] = common_block_tokens(table, a, b)
        return hit


def rebase_thread(
    prompts: list[CachedPrompt], latest: CachedPrompt, matcher: PrefixMatcher
) -> None:
    """The other prompts `latest`'s thread holds keep only where they part from it (it holds
    the request's own arrays): what each shares with it, `matcher` has just measured. Other
    threads' prompts stay as they are: rebased on each thread's writes in turn, they would be
    copied whole at every request."""
    for p in prompts:
        if p is not latest and p.writer == latest.writer:
            p.rebase(latest, matcher.blocks(p, latest.block_ids))


def _common_blocks(a: np.ndarray, b: np.ndarray, start: int) -> int:
    """Leading blocks two id arrays share, knowing they share the first `start`."""
    block = first_difference(a[start:], b[start:])
    return min(len(a), len(b)) if block is None else start + block


def capped(prompts: list[CachedPrompt], t: datetime) -> list[CachedPrompt]:
    """The newest `MAX_PROMPTS` prompts, and each thread's latest one until it expires: a bound
    on the simulator's memory must not be what makes a thread's next request miss (64 parallel
    sessions of a batch in one scope pushed a quiet thread's prompt out, an unnamed miss). The
    store holds that prompt anyway, as the thread's last one."""
    if len(prompts) <= MAX_PROMPTS:
        return prompts
    start = len(prompts) - MAX_PROMPTS
    latest = {p.writer: i for i, p in enumerate(prompts) if p.writer and p.length is None}
    kept = {i for i in latest.values() if i < start and not prompts[i].expired(t)}
    return [p for i, p in enumerate(prompts) if i >= start or i in kept]


def readable(shared: int, total: int, min_len: int, step: int, offset: int) -> int:
    """Tokens read from a live prompt sharing `shared` tokens with a prompt of `total`: none
    unless both reach `min_len`; breakpoints sit every `step` tokens counted from a hidden prefix
    of `offset`, and the last one below the shared prefix may fall under the minimum, which no
    read is."""
    if total < min_len or shared < min_len:
        return 0
    cached = max(0, ((shared + offset) // step) * step - offset)
    return cached if cached >= min_len else 0


def requested_ttl(sim: SimRequest) -> str:
    """The TTL the client asks for: its last breakpoint's, else the one the user forced, else
    its profile's for the thread."""
    if sim.breakpoints:
        return sim.breakpoints[-1].ttl
    if sim.forced_ttl is not None:
        return sim.forced_ttl
    if sim.profile is not None:
        return sim.profile.ttl(sim.request.thread)
    return "5m"


_ASSISTANT = (TEXT, THINKING, TOOL_CALL)


def response_end(previous_ids: np.ndarray, req: RenderedRequest) -> int | None:
    """Last block of the response that follows the previous prompt `previous_ids` in `req`
    (None when `req` does not start with that prompt followed by an assistant message)."""
    n = len(previous_ids)
    if len(req.block_ids) <= n or req.kinds[n] not in _ASSISTANT:
        return None
    if first_difference(previous_ids, req.block_ids[:n]) is not None:
        return None
    end, owner = n, req.item_index[n]
    while (
        end + 1 < len(req.block_ids)
        and req.item_index[end + 1] == owner
        and req.kinds[end + 1] in _ASSISTANT
    ):
        end += 1
    return end


def _stripped(
    req: RenderedRequest, table: BlockTable
) -> tuple[RenderedRequest, np.ndarray | None]:
    """The request as billed when earlier turns' reasoning leaves the input, and the original
    index of each block it kept (None: nothing left)."""
    view = prompt_view(req, True, table)
    if view.kept is None:
        return req, None
    return replace(
        req,
        block_ids=view.ids,
        block_tokens=np.diff(view.cum, prepend=0),
        cum_tokens=view.cum,
        item_index=req.item_index[view.kept],
        kinds=view.kinds,
        positions=view.positions,
        prefix_keys=view.keys,
    ), view.kept


class AutomaticPrefixSimulator(CacheSimulator):
    """Longest-common-prefix caching with a minimum, a step and an idle TTL."""

    provider = "openai"
    mechanism = "automatic-prefix"

    def __init__(self, rules: RuleBook, store: CacheStore | None = None) -> None:
        super().__init__(rules, store)
        self.matcher = PrefixMatcher()

    def ttl_choice(self, sim: SimRequest) -> bool:
        """Only where writes are billed as the client asks, 5m or 1h (Kimi K3)."""
        return (
            self.rule(sim, "retention", None) is None
            and bool(self.rule(sim, "bills_writes", False))
            and bool(self.rule(sim, "ttl_1h_available", False))
        )

    def lifetime(self, sim: SimRequest) -> tuple[float, float | None, str]:
        """(idle TTL, hard cap or None, write bucket "5m"/"1h")."""
        retention = self.rule(sim, "retention", None)
        if retention is not None:
            ttl = float(self.rule(sim, f"ttl_seconds_{retention}"))
            cap = self.rule(sim, f"max_lifetime_seconds_{retention}", None)
            return ttl, None if cap is None else float(cap), "5m"
        if self.rule(sim, "bills_writes", False):
            if requested_ttl(sim) == "1h" and self.ttl_choice(sim):
                return float(self.rule(sim, "ttl_seconds_1h")), None, "1h"
            return float(self.rule(sim, "ttl_seconds_5m")), None, "5m"
        return float(self.rule(sim, "ttl_seconds")), None, "5m"

    def simulate(self, sim: SimRequest) -> CacheOutcome:
        req, store = sim.request, self.store
        kept = None
        if self.rule(sim, "strips_thinking", False):
            req, kept = _stripped(req, sim.table)
        dropped = sim.request.total - req.total
        t, model, total = req.ts, req.model, req.total
        min_len = int(self.rule(sim, "min_cacheable_tokens"))
        step = max(1, int(self.rule(sim, "granularity_tokens", 1)))
        offset = int(self.rule(sim, "granularity_offset_tokens", 0))
        bills_writes = bool(self.rule(sim, "bills_writes", False))
        ttl, cap, bucket = self.lifetime(sim)
        prompts = store.prompt_list(sim.scope, model)
        last_key = ("automatic-last", sim.scope, model, sim.lane)
        if self.rule(sim, "caches_response", False):
            self._cache_response(store.extra.get(last_key), req, kept, prompts)

        live_best, live_match = 0, None
        # The first of the longest prefixes no live prompt offers (expired, not ready, another
        # scope's): its cause is worded once it is known to be the one reported.
        dead: tuple[int, CachedPrompt, str | None] | None = None
        for p in prompts:
            shared = self.matcher.shared(p, req, sim.table)
            if shared <= 0:
                continue
            if p.live(t, sim.lane):
                if shared > live_best:
                    live_best, live_match = shared, p
            elif dead is None or shared > dead[0]:
                dead = (shared, p, None)
        # The thread's own last prompt, once no longer held (expired a day ago and dropped at
        # another thread's request), still names the miss of the thread's next request.
        mine = store.extra.get(last_key)
        if mine is not None and all(p is not mine for p in prompts) and mine.expired(t):
            shared = self.matcher.shared(mine, req, sim.table)
            if shared > 0 and (dead is None or shared > dead[0]):
                dead = (shared, mine, None)
        for other in store.other_scopes(sim.scope, model):
            for p in store.prompts.get((other, model), ()):
                if not p.expired(t):
                    shared = self.matcher.shared(p, req, sim.table)
                    if shared > 0 and (dead is None or shared > dead[0]):
                        dead = (shared, p, other)

        cached = readable(live_best, total, min_len, step, offset)
        lost = None
        # A prefix no live prompt offers is lost only if it would have been read (a prompt too
        # short to be cached never was: expired or in another scope, it is no miss).
        if dead is not None and readable(dead[0], total, min_len, step, offset) > cached:
            shared, p, other = dead
            if other is not None:
                lost = Lost(shared, OTHER_SCOPE, f"different cache scope ({scope_label(other)})")
            else:
                state = entry_state(p, t, sim.lane)  # (never None: the prompt is not live)
                lost = Lost(shared, *state) if state is not None else None
        # A prefix shared only with prompts too short to be cached was never cached: not a
        # miss unless this prompt is too short itself (README `misses`; Anthropic's reading).
        if lost is None and 0 < live_best < min_len and total < min_len:
            lost = Lost(
                live_best,
                BELOW_MINIMUM,
                f"below minimum cacheable length ({live_best:,} < {min_len:,} tokens)",
            )
        # Thinking that left the prompt at this user turn, when the previous request billed it:
        # the cached prefix ends where the first of it stood.
        lane = lane_state(store, sim, "automatic")
        stripped = None
        if dropped > lane.dropped and sim.previous is not None and cached + step <= lane.total:
            stripped = f"earlier reasoning stripped at the new user turn ({dropped:,} tokens)"
        lane.total, lane.dropped = total, dropped
        kind, text = explain(
            sim, cached, lost, total=total, min_len=min_len, slack=step - 1, stripped=stripped
        )

        write = total - cached if bills_writes and total >= min_len else 0
        outcome = CacheOutcome(
            uncached=total - cached - write,
            cache_read=cached,
            cache_write_5m=write if bucket == "5m" else 0,
            cache_write_1h=write if bucket == "1h" else 0,
            miss_cause=text,
            miss_kind=kind,
            dropped_tokens=dropped,
        )

        created = t
        if live_match is not None and cached:
            if self.rule(sim, "refresh_on_read", True):
                live_match.last_use = max(live_match.last_use, t)
            created = live_match.created or t
        # The new prompt covers every cached prompt of its own thread that is a prefix of it.
        # Another thread's stays: it may be ready for others, and is for its writer, before
        # the new one is (a parallel session's copy must not take a thread's own prompt away).
        kept = [
            p
            for p in prompts
            if not (
                p.length is None
                and p.writer == sim.lane
                and p.size <= len(req.block_ids)
                and self.matcher.blocks(p, req.block_ids) == p.size
            )
            and p.remembered(t)
        ]
        written = CachedPrompt(
            req.block_ids,
            req.cum_tokens,
            last_use=t,
            ready_at=self.ready_at(sim),
            ttl=ttl,
            writer=sim.lane,
            created=created,
            max_lifetime=cap,
        )
        kept.append(written)
        prompts[:] = capped(kept, t)
        rebase_thread(prompts, written, self.matcher)
        store.extra[last_key] = written
        return outcome

    @staticmethod
    def _cache_response(
        last: CachedPrompt | None,
        req: RenderedRequest,
        kept: np.ndarray | None,
        prompts: list[CachedPrompt],
    ) -> None:
        """`caches_response`: the provider also kept the tokens it generated after the thread's
        previous prompt. Once this request shows that response right after that prompt, the
        prompt extended by it is a cached prompt like the others (same lifetime). Where the
        billed prompt (`req`, original block indexes `kept`) dropped the response's reasoning,
        what was cached parts from it at the first dropped block."""
        end = response_end(last.ids(), req) if last is not None else None
        if last is None or end is None:
            return
        n = last.size
        if kept is not None:
            gaps = np.flatnonzero(np.diff(kept[n - 1 : end + 1]) != 1)
            if len(gaps):
                end = n - 1 + int(gaps[0])
            if end < n:
                return
        prompts.append(
            replace(last, block_ids=req.block_ids[: end + 1], cum_tokens=req.cum_tokens[: end + 1],
                    anchor=None, head=0)
        )
