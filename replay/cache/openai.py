"""OpenAI prompt caching.

Before GPT-5.6 it is automatic prefix caching (`AutomaticPrefixSimulator`, mechanism
`automatic-prefix`: ≥ 1024 tokens, 128-token steps, in-memory or 24h retention by model and
date). GPT-5.6 and later (mechanism `openai-breakpoints`, `OpenAIBreakpointSimulator`):

- Boundaries sit at message ends. The implicit breakpoint is the end of the latest eligible
  message (a user message, the last tool output of a consecutive group, or the initial
  developer block — here the tools and system prompt); explicit breakpoints come from the client
  (never on assistant blocks).
- Lookups: the first 2 and latest 50 explicit breakpoints, the implicit one, up to 20 earlier
  eligible message ends and the end of the initial developer block. The match is exact at a
  boundary (no 128 rounding, no fallback to an unmarked shorter prefix); cached = the longest
  looked-up boundary with a live entry, if ≥ 1024 tokens.
- Writes: entries at the implicit boundary and the latest 3 other explicit ones (≤ 4), each ≥ 1024;
  write = furthest written − cached, billed at the write rate (1.25×); uncached = the rest.
  Each input token is billed at one rate. Entries live 30 minutes after their last write or
  reuse; reuse refreshes them for free.
"""

from __future__ import annotations

from replay.cache._base import (
    CacheOutcome,
    CacheSimulator,
    SimRequest,
    entry_state,
    explain,
    prompt_view,
    walk_entries,
)
from replay.cache.automatic import AutomaticPrefixSimulator, common_prefix_tokens
from replay.render._request import (
    SUMMARY,
    SYSTEM,
    TEXT,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
)

_ASSISTANT = (TEXT, THINKING, TOOL_CALL)


def eligible_ends(kinds: list[str]) -> tuple[int | None, list[int]]:
    """(end of the initial developer block or None, eligible message ends in order)."""
    head = None
    for i, kind in enumerate(kinds):
        if kind in (TOOL, SYSTEM):
            head = i
        else:
            break
    ends = [] if head is None else [head]
    n = len(kinds)
    for i, kind in enumerate(kinds):
        last_result = kind == TOOL_RESULT and (i == n - 1 or kinds[i + 1] != TOOL_RESULT)
        if kind in (USER, SUMMARY) or last_result:
            ends.append(i)
    return head, ends


class OpenAIBreakpointSimulator(CacheSimulator):
    provider = "openai"
    mechanism = "openai-breakpoints"

    def simulate(self, sim: SimRequest) -> CacheOutcome:
        req, store = sim.request, self.store
        t, model = req.ts, req.model
        # Reasoning of earlier turns leaves the prompt at a new user turn (`strips_thinking`).
        view = prompt_view(req, bool(self.rule(sim, "strips_thinking", False)), sim.table)
        total = view.total
        min_len = int(self.rule(sim, "min_cacheable_tokens"))
        first_n = int(self.rule(sim, "lookup_first_explicit"))
        latest_n = int(self.rule(sim, "lookup_latest_explicit"))
        earlier_n = int(self.rule(sim, "lookup_earlier_message_ends"))
        max_writes = int(self.rule(sim, "max_writes"))
        ttl = float(self.rule(sim, "ttl_seconds"))

        head, ends = eligible_ends(view.kinds)
        implicit = ends[-1] if ends else None
        # Markers name blocks of the request as rendered; the view may have dropped thinking.
        marked = (view.map_block(b.block) for b in sim.breakpoints if not b.automatic)
        explicit = sorted(
            {m for m in marked if 0 <= m < len(view) and view.kinds[m] not in _ASSISTANT}
        )
        lookups = set(explicit[:first_n]) | set(explicit[-latest_n:] if latest_n else [])
        if implicit is not None:
            lookups.add(implicit)
            earlier = [e for e in ends if e < implicit]
            lookups.update(earlier[-earlier_n:] if earlier_n else [])
        if head is not None:
            lookups.add(head)

        cached, read_entry = 0, None
        for q in sorted(lookups, reverse=True):
            tokens = view.tokens(q)
            if tokens < min_len or tokens <= cached:
                continue
            entry = store.get(sim.scope, model, view.keys[q])
            if entry is not None and entry_state(entry, t, sim.lane) is None:
                cached, read_entry = tokens, entry

        writes = [implicit] if implicit is not None else []
        room = max_writes - len(writes)
        # A marker on the implicit boundary is that one write, not a second slot.
        writes += [b for b in explicit if b not in writes][-room:] if room > 0 else []
        writes = [w for w in writes if view.tokens(w) >= min_len]
        furthest = max((view.tokens(w) for w in writes), default=0)
        top = max(cached, furthest)

        lost = walk_entries(
            store, sim, view, cached, unreached="not among the looked-up boundaries"
        )
        kind, text = explain(sim, cached, lost, total=total, min_len=min_len)
        outcome = CacheOutcome(
            uncached=total - top,
            cache_read=cached,
            cache_write_5m=top - cached,
            cache_write_1h=0,
            miss_cause=text,
            miss_kind=kind,
            dropped_tokens=view.dropped_tokens,
        )
        ready = self.ready_at(sim)
        for w in writes:
            entry = self.new_entry(sim, view.tokens(w), ttl, ready)
            store.put(sim.scope, model, view.keys[w], entry)
        if read_entry is not None:
            read_entry.last_use = max(read_entry.last_use, t)
        return outcome


__all__ = ["AutomaticPrefixSimulator", "OpenAIBreakpointSimulator", "common_prefix_tokens"]
