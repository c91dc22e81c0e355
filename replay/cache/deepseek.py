"""DeepSeek's disk cache since V4 (mechanism `prefix-units`).

A hit needs the full match of a persisted "cache prefix unit". Units are persisted:

1. at the end of each request's input and at the end of its output (the output unit is seen
   when the thread's next prompt repeats that response right after the previous prompt);
2. at a common prefix detected across requests: when a prompt shares L tokens with a cached
   unit but does not contain it, a unit at L is added, usable from a later request (building
   takes seconds: `ready_after_seconds`);
3. every `unit_interval_tokens` inside long inputs (interval undocumented; 64 assumed).

hit = the longest live unit that is a prefix of the prompt (at least `min_cacheable_tokens`);
the rest is a miss. No write or storage fee; unused units are cleared after hours (assumed
`ttl_seconds`). Before V4, the legacy 64-token rule is plain automatic prefix caching with a
64-token step (`automatic-prefix` in `pricing/cache/deepseek.json`).
"""

from __future__ import annotations

from datetime import timedelta

from replay.cache._base import (
    BELOW_MINIMUM,
    OTHER_SCOPE,
    CacheOutcome,
    CacheSimulator,
    Lost,
    SimRequest,
    entry_state,
    explain,
    scope_label,
)
from replay.cache._rules import RuleBook
from replay.cache._store import CachedPrompt, CacheStore
from replay.cache.automatic import PrefixMatcher, capped, rebase_thread, response_end

_ONE_SECOND = timedelta(seconds=1)
"""The soonest a common-prefix unit can be used (by a later request)."""


class DeepSeekUnitSimulator(CacheSimulator):
    provider = "deepseek"
    mechanism = "prefix-units"

    def __init__(self, rules: RuleBook, store: CacheStore | None = None) -> None:
        super().__init__(rules, store)
        self.matcher = PrefixMatcher()

    def simulate(self, sim: SimRequest) -> CacheOutcome:
        req, store = sim.request, self.store
        t, model, total = req.ts, req.model, req.total
        min_len = int(self.rule(sim, "min_cacheable_tokens"))
        interval = max(1, int(self.rule(sim, "unit_interval_tokens")))
        ttl = float(self.rule(sim, "ttl_seconds"))
        units = store.prompt_list(sim.scope, model)
        previous_key = ("deepseek-last", sim.scope, model, sim.lane)

        # 1b. The output unit of the thread's previous request, now that its response shows.
        last: CachedPrompt | None = store.extra.get(previous_key)  # type: ignore[assignment]
        if last is not None and not last.expired(t):
            end = response_end(last.ids(), req)
            if end is not None:
                units.append(
                    CachedPrompt(
                        req.block_ids[: end + 1],
                        req.cum_tokens[: end + 1],
                        last_use=last.last_use,
                        ready_at=last.last_use,
                        ttl=ttl,
                        writer=sim.lane,
                    )
                )

        best, best_unit = 0, None
        dead: list[Lost] = []
        common = 0
        for u in units:
            shared = self.matcher.shared(u, req, sim.table)
            if shared <= 0:
                continue
            whole = shared >= u.total
            usable = u.total if whole else (shared // interval) * interval
            state = entry_state(u, t, sim.lane)
            if state is not None:
                dead.append(Lost(usable, *state))
                continue
            if usable > best:
                best, best_unit = usable, u
            if not whole and shared < total:
                common = max(common, shared)
        for other in store.other_scopes(sim.scope, model):
            for u in store.prompts.get((other, model), ()):
                if not u.expired(t):
                    shared = self.matcher.shared(u, req, sim.table)
                    if shared > 0:
                        why = f"different cache scope ({scope_label(other)})"
                        dead.append(Lost(shared, OTHER_SCOPE, why))

        hit = best if best >= min_len and total >= min_len else 0
        lost = max((d for d in dead if d.tokens > best), key=lambda d: d.tokens, default=None)
        if lost is None and 0 < best < min_len:
            lost = Lost(best, BELOW_MINIMUM,
                        f"below minimum cacheable length ({best:,} < {min_len:,} tokens)")
        kind, text = explain(sim, hit, lost, total=total, min_len=min_len, slack=interval - 1)
        outcome = CacheOutcome(total - hit, hit, 0, 0, miss_cause=text, miss_kind=kind)

        if best_unit is not None and hit:
            best_unit.last_use = max(best_unit.last_use, t)
        ready = self.ready_at(sim)
        # Units persist independently of each other (a longer one does not replace a shorter);
        # expired ones are remembered a while, only to name a later miss.
        kept = [u for u in units if u.remembered(t)]
        # 2. A common-prefix unit, usable by later requests only.
        if common > hit:
            kept.append(
                CachedPrompt(
                    req.block_ids, req.cum_tokens, last_use=t,
                    ready_at=t + _ONE_SECOND if ready - t < _ONE_SECOND else ready,
                    ttl=ttl, writer="", length=common,
                )
            )
        # 1a. The unit at the end of this request's input.
        mine = CachedPrompt(req.block_ids, req.cum_tokens, last_use=t, ready_at=ready, ttl=ttl,
                            writer=sim.lane)
        kept.append(mine)
        units[:] = capped(kept, t)
        rebase_thread(units, mine, self.matcher)
        store.extra[previous_key] = mine
        return outcome
