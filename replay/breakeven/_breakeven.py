"""Break-even of every rewrite: when does a prune, clearing, aging step or compaction pay back?

Two answers side by side for each request where a strategy rewrote earlier context:

- **closed form** (the cost article's model):
  rewrite cost ≈ surviving tokens after the first edit × (uncached rate − cache-read rate);
  saving per later request ≈ removed tokens × cache-read rate (where the prompt without the
  rewrite is priced at a higher long-context tier, what that tier adds to reading it as well);
  break-even ≈ rewrite cost / saving (requests after the edit).
- **simulated**: the same run without that one rewrite, through the same cache simulator and
  prices, from a copy of the cache as it stood before the edit; the cumulative cost difference is
  followed request by request to the end of the horizon (below): break-even = requests after
  the edit until it turns positive for good, `None` when it is not positive at the end.

"Without that rewrite" is built from the views themselves. When the rewrite replaced items in
place (a capped, stubbed or cleared tool result), the counterfactual puts the originals back in
every later view. When it restructured the view (a summary, dropped messages), the counterfactual
keeps the pre-rewrite view and appends what the history gained, as the thread sends it (the
unlogged messages it no longer sends left out, and what a harness re-attached with a logged
compaction while it holds an event that compaction replaced), until the strategy's next
structural rewrite (which would have folded that text anyway) — the horizon; the strategy's
rewrites in place meanwhile (a result it clears later) are made in the counterfactual too, or
the compaction would be credited with their saving as well as their own rows.

An in-place rewrite's horizon runs to the end of the log, and aging strategies rewrite at most
requests: replaying every counterfactual made break-even grow with rewrites × requests at the
cost of a full simulation per step. On Anthropic's explicit breakpoints the counterfactual is
replayed only until the cache entries only it could read have expired; from then on each of its
requests follows from the rewritten run's record, where that is exact (`_shift`), and the rows
are the same.

The closed form ignores output, summary cost, cache-write premiums, breakpoints, TTLs and later
events; `disagreement` names which of those the simulation saw. It also names the compared
requests whose counterfactual is over the context window where the rewritten run's is not: no
harness could have sent them (a compaction is made for that), so what they credit the rewrite
with is no saving it could make.
"""

from __future__ import annotations

import copy
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import numpy as np

from replay.breakeven import _shift
from replay.breakeven._shift import Shift, simulated_view
from replay.engine._replay import (
    ReplayConfig,
    RequestRecord,
    _Run,
    _Thread,
    with_unlogged_context,
)
from replay.engine._results import RecordSink
from replay.log import RequestMarker, Session
from replay.prefix import prefix_diff, remembered_block_pairs
from replay.prices import Buckets, Pricer
from replay.render import RenderedRequest
from replay.strategies import NamedStrategy, resolve
from replay.strategies._view import Item, SummaryItem, ToolResultItem, shared_prefix


@dataclass(frozen=True)
class BreakEven:
    """Break-even of one rewrite event."""

    strategy: str
    request_index: int
    thread: str
    event: str
    """What the strategy did (`compaction`, `aging`, `prune`, `clear`, `drop`, `truncate`)."""
    first_edit_token: int
    """First token position of the prompt that changed (in the rendered prompt, as the
    per-request `first_mismatch_token`; for an edit at a thread's first request, which has no
    previous request, where it parts from the request it edits)."""
    removed_tokens: int
    """How much smaller the billed prompt is than the same request's without the rewrite
    (thinking the provider strips is billed in neither)."""
    surviving_tokens: int
    """Billed tokens after the first edit in the rewritten prompt (re-billed uncached or as
    writes instead of read from the cache, a summary included), less what the history gained
    since the previous request where the rewritten prompt still sends it: that is billed alike
    with or without the rewrite (what a compaction folded into its summary is not)."""
    rewrite_cost_usd: Decimal
    """Closed form: surviving × (uncached rate − cache-read rate)."""
    saving_per_request_usd: Decimal
    """Closed form: removed × cache-read rate; plus, where the prompt without the rewrite
    falls in a higher long-context price tier (over 200k tokens), that prompt × the difference
    of read rates between the tiers (a prune below the line makes every token cheaper)."""
    breakeven_closed_form: float | None
    """Requests after the edit until it pays back, by the closed form (None: never)."""
    breakeven_simulated: int | None
    """Requests after the edit until the simulated cumulative saving turns positive and stays
    so to the end of the horizon (None: it is not positive at the end: nothing saved counts
    as no payback)."""
    simulated_net_usd: Decimal
    """Simulated cumulative saving over the horizon (negative: the rewrite cost more)."""
    horizon: int
    """Requests compared (from the edit on): up to the strategy's next rewrite of the view's
    structure, which would have folded the text anyway, or to the end of its thread."""
    summarizer_cost_usd: Decimal
    """Cost of the summarizer call the rewrite needed (0 when none)."""
    summarizer_cache_read: int
    """Tokens the summarizer call read from the cache."""
    disagreement: str
    """Why the two answers may differ, as seen in the simulation."""


_GRAIN = 128
"""Tokens of a cache read's granularity (OpenAI's prefix steps): a read this close below the
edit is the closed form's assumption."""

_HUNDREDTH = Decimal("0.01")


def _rate(run: _Run, record: RequestRecord, bucket: str, size: int | None = None) -> Decimal:
    """USD per token of `bucket`, at the long-context tier of the prompt this request is billed
    for (the thinking a provider strips is not in it), or of a prompt of `size` tokens (a
    1M-token probe would price every request at the >200k tier of tiered models)."""
    size = max(1, _billed(record) if size is None else size)
    price = run.pricer.price(
        Buckets(**{bucket: size}),
        model=record.model,
        provider=record.provider,
        ts=record.ts,
        context=record.price_context,
    )
    return price.input_usd / size


def _billed(record: RequestRecord) -> int:
    """Tokens of the prompt the provider bills: the rendered one, less what it strips."""
    return record.request.total - record.outcome.dropped_tokens


def _substitutions(before: Sequence[Item], after: Sequence[Item]) -> dict[int, Item] | None:
    """Map each item rewritten in place to its previous version, or None when the rewrite
    changed the view's structure (summaries, dropped items)."""
    old_by_event = {getattr(i, "event_index", None): i for i in before}
    after_ids = {id(i) for i in after}
    subs: dict[int, Item] = {}
    for item in after:
        if isinstance(item, SummaryItem) and not any(item is b for b in before):
            return None
        if isinstance(item, ToolResultItem):
            old = old_by_event.get(item.event_index)
            if old is not None and old is not item:
                subs[id(item)] = old
    dropped = [i for i in before if id(i) not in after_ids and id(i) not in
               {id(v) for v in subs.values()}]
    return None if dropped else subs


def _substituted(
    subs: dict[int, Item], view: list[Item], before: list[Item] | None, done: list[Item]
) -> list[Item]:
    """`view` with the items of `subs` put back, as a new list; `done` is the same for the
    previous view `before`: the items both views start with keep their substitutes, only the
    rest is walked (in Python, once per request of every rewrite's horizon)."""
    shared = shared_prefix(before, view) if before is not None else 0
    return done[:shared] + [subs.get(id(x), x) for x in view[shared:]]


def _same_prompt(a: RequestRecord, b: RequestRecord) -> bool:
    """Whether two records rendered the same prompt (one renderer's chained block keys)."""
    ka, kb = a.request.prefix_keys, b.request.prefix_keys
    return len(ka) == len(kb) > 0 and ka[-1] == kb[-1]


def _restored_context(run: _Run, thread: str) -> dict[Item, frozenset[int]]:
    """The unlogged messages `thread`'s run still sends that a harness re-attached with a
    logged compaction (`RequestFit.compaction`), each with the events that compaction replaced."""
    state = run.threads[thread]
    replaced = {c.event_index: c.replaced for c in state.compactions}
    out: dict[Item, frozenset[int]] = {}
    for (owner, event_index), fit in run.unlogged.fit.requests.items():
        if owner != thread or fit.compaction not in replaced:
            continue
        for part in ("before", "after"):
            item = state.unlogged.items.get((event_index, part))
            if item is not None:
                out[item] = replaced[fit.compaction]
    return out


def _event_of(item: Item) -> int | None:
    """The log event a tool result stands for (None for any other item)."""
    return item.event_index if isinstance(item, ToolResultItem) else None


def _rewritten_in_place(before: Sequence[Item], after: Sequence[Item]) -> dict[int, Item]:
    """Tool results `after` holds in another version than `before` did (capped, stubbed or
    cleared in place), by event: only the items after the views' shared prefix are walked."""
    start = shared_prefix(before, after)
    old = {_event_of(i): i for i in before[start:]}
    old.pop(None, None)
    return {
        ev: item
        for item in after[start:]
        if (ev := _event_of(item)) in old and old[ev] is not item
    }


def _structural(prev: RequestRecord, rec: RequestRecord) -> bool:
    return _substitutions(prev.view, rec.view) is None


_RETRY_MAX = 16
"""Most requests replayed between two tries of `_shift` on one counterfactual (a failed try
costs a little work per request it checked)."""


def _account(
    net: Decimal, paid_back: int | None, saving: Decimal, after: int
) -> tuple[Decimal, int | None]:
    """The cumulative saving with one more request's, and from when it has stayed positive:
    a later loss (a TTL expiry the rewrite's prompt alone paid for…) takes the payback back."""
    net += saving
    if net <= 0:  # paid back once the saving is positive, not when nothing was saved
        return net, None
    return net, after if paid_back is None else paid_back


def _analyse(run: _Run, e: _Rewrite, longest: int | None, extent: _Extent) -> BreakEven:
    """The break-even of rewrite `e`, compared over the requests of its `extent`."""
    seq, i, extra, markers, subs = e.seq, e.i, e.extra, e.markers, e.subs
    stop, cut_by_event, capped = extent
    prev, rec = (seq[i - 1] if i > 0 else None), seq[i]
    history = run.threads[rec.thread].history
    # Each counterfactual record is compared and let go: kept (with its view and block
    # columns) for a whole horizon, they held ~140 MB per rewrite on a 470-request log.
    cf_config = copy.copy(run.config)
    cf_config.keep_views = False
    cf = _Run(run.session, run.named, cf_config, run.facts)
    # Each snapshot serves one counterfactual: it is taken over, not copied again.
    cf.store, rec.store_before = rec.store_before, None
    derive = bool(subs) and _shift.ENABLED and e.lone
    before = dict(cf.store.entries) if derive else {}  # (`Shift.unmatched`)
    cf.renderers = run.renderers
    state = _Thread(strategy=None)
    state.previous = prev.request if prev is not None else None

    net = Decimal(0)
    paid_back: int | None = None
    saw_ttl = False
    cf_first_billed = _billed(rec)
    cf_first_read = 0
    first_edit = rec.diff.first_mismatch_token
    items: list[Item] = []
    restored = _restored_context(run, rec.thread) if subs is None and e.reference is None else {}
    later: dict[int, Item] = {}  # event → the version a later in-place rewrite put in its stead
    shift: Shift | None = None
    shifted: list[Decimal] = []
    derived_from = retry_at = stop
    # Requests the counterfactual sends over the context window where the rewritten run fits:
    # no harness could have sent them, so the saving credited there is not one it could make.
    over_window = 0
    same_from: int | None = None  # (`whatif`) the first later request both runs send alike
    wait = 1  # requests before the next try, doubled at each failed one
    for k in range(i, stop):
        if shift is not None and k >= retry_at:
            # Where exact, the rest of the counterfactual follows from the records (`_shift`).
            at = k
            if shift.ready(seq[k].ts):
                shifted, at = shift.costs(k, stop, saw_ttl)
                if at == stop:
                    derived_from = k
                    break
                shifted = []
            retry_at, wait = max(at, k) + wait, min(2 * wait, _RETRY_MAX)
        cur = seq[k]
        if e.reference is not None:  # the run the edit was made to: its own view, exactly
            items = list(e.reference[cur.request_index])
        elif subs is not None:
            items = _substituted(subs, cur.view, seq[k - 1].view if k > i else None, items)
        else:
            assert prev is not None  # (`_rewrite_events`: a thread's first request has none)
            if k > i:  # the strategy's later rewrites in place are made without this one too
                later.update(_rewritten_in_place(seq[k - 1].view, cur.view))
            items = list(prev.view) + history[prev.history_len : cur.history_len]
            if later:
                items = [later.get(_event_of(x), x) for x in items]
        marker = markers[k]
        # The same head as the recorded request (a real log's hidden prefix, its version) and
        # its last marker where the usage put it: only the rewrite differs.
        head = cur.rendered_with
        assert head is not None  # (`snapshot_stores`)
        if subs is None and e.reference is None and head.dropped:
            # The history still holds the unlogged messages no longer sent (a transient one,
            # what Claude Code re-attached with a compaction no view here made): the request
            # left them out, so does the run without the rewrite.
            items = [x for x in items if x not in head.dropped]
        if restored:
            # What the harness re-attached with a logged compaction goes with that compaction:
            # a view that still holds an event it replaced never sends it (`_keep_restored`).
            held = {getattr(x, "event_index", -1) for x in items}
            items = [x for x in items if x not in restored or not restored[x] & held]
        state.system, state.hidden_tokens = head.system, head.hidden_tokens
        state.head_version, state.unlogged.tail = head.head_version, head.unlogged_tail
        cf_rec = cf._simulate(
            kind="request",
            items=items,
            marker=marker,
            request_index=cur.request_index,
            thread=cur.thread,
            state=state,
            model=cur.model,
            provider=cur.provider,
            renderer=run.renderer(cur.model),
            output_tokens=cur.output_tokens,
            estimated_output=cur.request.estimated_output,
            events=[],
            hand_over=True,
        )
        state.previous = cf_rec.request
        cf.records.clear()
        if e.reference is not None and same_from is None and k > i and _same_prompt(cf_rec, cur):
            same_from = k
        if k == i:
            cf_first_billed = _billed(cf_rec)
            cf_first_read = cf_rec.outcome.cache_read
            if prev is None:  # (`whatif` at a thread's first request: no request to part from)
                # Where the edited prompt parts from the one it edits, not token 0.
                table = run.renderer(cur.model).table
                first_edit = prefix_diff(cf_rec.request, rec.request, table).first_mismatch_token
        strategy_cost = cur.cost_usd + sum(
            (s.cost_usd for s in extra.get(cur.request_index, []) if k == i), Decimal(0)
        )
        saw_ttl |= any(
            (r.outcome.miss_cause or "").startswith("TTL") for r in (cur, cf_rec)
        )
        net, paid_back = _account(net, paid_back, cf_rec.cost_usd - strategy_cost, k - i)
        over_window += cf_rec.over_window and not cur.over_window
        if k == i and derive:
            shift = Shift(
                run, seq, i, subs, items, cf_rec, cf.store, before, e.known_ids, e.earlier,
                e.id_memo,
            )
            retry_at = i + 1
        elif shift is not None:
            shift.observe(cur, cf_rec)
    for k, cf_cost in enumerate(shifted, start=derived_from):
        cur = seq[k]
        saw_ttl |= (cur.outcome.miss_cause or "").startswith("TTL")  # the same in both
        net, paid_back = _account(net, paid_back, cf_cost - cur.cost_usd, k - i)
        assert shift is not None  # (only a derivation fills `shifted`)
        cf_total = shift.totals.get(cur.request_index, 0)
        over_window += cf_total > run.window(cur.model) and not cur.over_window
    e.derived = stop - derived_from

    in_rate = _rate(run, rec, "uncached")
    read_rate = _rate(run, rec, "cache_read")
    # Reads, rates and the sizes the closed form bills are those of the prompt the provider
    # bills: thinking it strips (older Claude models) is in none of them.
    stripped = _stripped_blocks(run, rec)
    billed_edit = _billed_before(rec.request, stripped, first_edit)
    # The suffix the previous request sent: the closed form's "surviving tokens" are those the
    # cache would have read; what the history gained since, where the rewritten prompt still
    # sends it, is billed uncached either way (a compaction may fold part of it in a summary).
    surviving = 0  # a thread's first request: no request of its own cached anything before
    if prev is not None:
        gained = _gained_tokens(history, prev, rec, stripped)
        surviving = max(0, _billed(rec) - billed_edit - gained)
    removed = max(0, cf_first_billed - _billed(rec))
    rewrite_cost = surviving * (in_rate - read_rate)
    # Without the rewrite the prompt may sit in a higher long-context tier: each of its tokens
    # costs more there, not only the removed ones.
    tier_gap = _rate(run, rec, "cache_read", cf_first_billed) - read_rate if removed else 0
    saving = removed * read_rate + cf_first_billed * tier_gap
    closed = closed_form(rewrite_cost, saving)

    summarizers = extra.get(rec.request_index, [])
    reasons = []
    if tier_gap:
        reasons.append(
            f"long-context tier: {cf_first_billed:,} tokens without the rewrite are priced at a "
            f"higher rate than the {_billed(rec):,} sent (counted in the saving)"
        )
    if rec.outcome.cache_write_5m or rec.outcome.cache_write_1h:
        reasons.append("cache-write premium")
    if summarizers:
        reasons.append("summary cost")
    elif any(ev.detail == "logged compaction" for ev in rec.events):
        # The agent's own compaction (`recorded`): its summarizing call is no call of this row.
        wrote = i > 0 and getattr(markers[i - 1], "compaction_call", False)
        reasons.append(
            "summary cost not counted: the logged request before it wrote the summary"
            if wrote
            else "summary cost unknown: the log holds no call for its compaction"
        )
    if cf_first_read < _billed(rec) and cf_first_read <= billed_edit:
        # The closed form assumes the surviving tokens would have been read from the cache.
        reasons.append(f"not cached past the edit even without it ({cf_first_read:,} read)")
    unread = billed_edit - rec.outcome.cache_read
    if unread > _GRAIN and unread * 10 >= surviving:
        # The closed form counts the prefix before the edit read from the cache: a lookback
        # that did not reach an entry, or a minimum length, left part of it to be billed.
        reasons.append(
            f"read {rec.outcome.cache_read:,} of the {billed_edit:,} tokens billed before the "
            "edit from the cache"
        )
    past = rec.outcome.cache_read - billed_edit
    if past > _GRAIN:
        # The closed form bills the whole rewritten suffix uncached: an entry an earlier
        # request of the strategy wrote held part of it (a view that went back to it).
        reasons.append(
            f"read {rec.outcome.cache_read:,} tokens from the cache, {past:,} past the edit: "
            "an earlier entry held part of the rewritten tail"
        )
    if e.later:
        reasons.append(
            f"{e.later:,} later rewrite{'s' if e.later > 1 else ''} of the strategy in the "
            "horizon, made in both runs"
        )
    if saw_ttl:
        reasons.append("TTL expiry")
    if over_window:
        reasons.append(
            f"without it, {over_window:,} of the {stop - i:,} requests compared are over the "
            f"{run.window(rec.model):,}-token context window (no harness could send them)"
        )
    if cut_by_event and paid_back is None:
        reasons.append("a later rewrite ended the comparison")
    if capped:
        reasons.append(
            f"compared over {longest:,} request{'s' if longest != 1 else ''} only (horizon limit)"
        )
    elif paid_back is None and same_from is not None:
        # The log's own compaction replaced what the edit touched: nothing left to save.
        compacted = any(ev.kind == "compaction" for ev in seq[same_from].events)
        reasons.append(
            f"both runs send the same view from request {seq[same_from].request_index:,} on"
            + (" (the log's compaction there replaced what the edit touched)" if compacted
               else "")
        )
    elif paid_back is None and not cut_by_event:
        # A subagent's thread often ends long before the log does.
        thread_ended = stop == len(seq) and seq[-1].request_index < run.facts.request_count - 1
        reasons.append(f"{'its thread' if thread_ended else 'log'} ended before payback")
    return BreakEven(
        strategy=rec.strategy,
        request_index=rec.request_index,
        thread=rec.thread,
        event=",".join(dict.fromkeys(e.kind for e in rec.events)),
        first_edit_token=first_edit,
        removed_tokens=removed,
        surviving_tokens=surviving,
        rewrite_cost_usd=rewrite_cost,
        saving_per_request_usd=saving,
        breakeven_closed_form=closed,
        breakeven_simulated=paid_back,
        simulated_net_usd=net,
        horizon=stop - i,
        summarizer_cost_usd=sum((s.cost_usd for s in summarizers), Decimal(0)),
        summarizer_cache_read=sum(s.outcome.cache_read for s in summarizers),
        disagreement="; ".join(reasons),
    )


def closed_form(rewrite_cost: Decimal, saving: Decimal) -> float | None:
    """Requests until the rewrite pays back by the closed form, to two decimals (None: no
    saving). Rounded half up on the exact quotient of the two figures the row shows: a float
    quotient of 0.0302454 / 0.000072 = 420.075 is 420.07499…, and rounded to 420.07."""
    if saving <= 0:
        return None
    return float((rewrite_cost / saving).quantize(_HUNDREDTH, ROUND_HALF_UP))


def _gained_tokens(
    history: Sequence[Item],
    prev: RequestRecord,
    rec: RequestRecord,
    stripped: np.ndarray | None = None,
) -> int:
    """Billed tokens of `rec`'s prompt that stand for what the history gained since `prev`
    (the items, or a strategy's variant of them: the same event), the blocks `stripped` left
    out. Break-even keeps every record's blocks and view (`breakeven_config`)."""
    added = history[prev.history_len : rec.history_len]
    gained = {getattr(item, "event_index", -1) for item in added} - {-1}
    request, view = rec.request, rec.view
    return sum(
        int(t)
        for j, (t, n) in enumerate(zip(request.block_tokens, request.item_index, strict=True))
        if 0 <= n < len(view) and getattr(view[n], "event_index", -1) in gained
        and (stripped is None or not stripped[j])
    )


def _stripped_blocks(run: _Run, rec: RequestRecord) -> np.ndarray | None:
    """Which blocks of `rec`'s prompt the provider stripped before billing it (earlier
    thinking, on models that strip it), as its simulator saw it; None when it stripped none
    (or the blocks are gone)."""
    request = rec.request
    if not rec.outcome.dropped_tokens or request.released:
        return None
    view = simulated_view(run, rec)
    if view.kept is None:
        return None
    stripped = np.ones(len(request.block_ids), dtype=bool)
    stripped[view.kept] = False
    return stripped


def _billed_before(request: RenderedRequest, stripped: np.ndarray | None, position: int) -> int:
    """Tokens of the billed prompt before token `position` of the rendered one."""
    if stripped is None:
        return position
    tokens = request.block_tokens
    before = np.clip(position - (request.cum_tokens - tokens), 0, tokens)
    return int(before[~stripped].sum())


@dataclass
class _Rewrite:
    """One rewrite event to analyse: request `i` of its thread's requests `seq`."""

    seq: list[RequestRecord]
    i: int
    extra: dict[int, list[RequestRecord]]
    """The summarizer calls of its thread, by request index."""
    markers: list[RequestMarker]
    """The recorded requests of `seq` (the same list for every rewrite of the thread)."""
    subs: dict[int, Item] | None
    """`_substitutions` of the rewrite (None: a structural one)."""
    lone: bool = False
    """Its thread's requests are all the run simulated over its extent (no other thread's,
    no summarizer call): nothing else wrote to the cache its counterfactual starts from."""
    known_ids: int = -1
    """The highest block id of any prompt the run sent before it (-1: unknown)."""
    earlier: list[RequestRecord] = field(default_factory=list)
    """The records of the requests the run simulated before it (any thread, any kind)."""
    id_memo: dict[Any, Any] | None = None
    """Shared by the rewrites of one run: what `_shift` finds once per request."""
    derived: int = 0
    """Requests of its counterfactual derived from the run's records instead of replayed
    (`_shift`)."""
    later: int = 0
    """The strategy's rewrites of the same thread within its extent, after it: made in both
    runs, they change what each later request saves (the closed form leaves them out)."""
    reference: dict[int, list[Item]] | None = None
    """The views of the run the rewrite was made to, by request index (`whatif`: `recorded`'s):
    the counterfactual sends them as they are, to the end of the thread."""


_Extent = tuple[int, bool, bool]
"""The requests `[i, stop)` a rewrite's counterfactual compares, whether a later rewrite ended
them there, and whether the horizon limit did (`_extent`)."""


class Rewrites:
    """The rewrite events of one strategy's run, in the order break-even reports them, each
    with the number of requests its counterfactual replays (`steps`): known before any is
    analysed, so that `--workers` can share a strategy's analysis out among processes."""

    def __init__(
        self,
        run: _Run,
        records: list[RequestRecord],
        horizon: int | None,
        edit: tuple[int, dict[int, list[Item]]] | None = None,
    ) -> None:
        """`edit`: (request index, the views of the run it edits): only that request's rewrite,
        compared with that run (`breakeven_edit`)."""
        self.run = run
        self.records = records
        self.horizon = horizon
        if edit is None:
            self.events = _rewrite_events(run, records)
        else:
            self.events = _edit_event(run, records, *edit)
        self.extents = [_extent(e, horizon) for e in self.events]
        if run.shared is None:
            at = {id(r): n for n, r in enumerate(records)}
            seen = _ids_before(records)
            id_memo: dict[Any, Any] = {}  # what `_shift` finds once per request of the run
            for e, (stop, _, _) in zip(self.events, self.extents, strict=True):
                first = at[id(e.seq[e.i])]
                e.lone = at[id(e.seq[stop - 1])] - first == stop - 1 - e.i
                e.known_ids = seen[first]
                e.earlier, e.id_memo = records[:first], id_memo
        self.steps = [stop - e.i for e, (stop, _, _) in zip(self.events, self.extents, strict=True)]
        starts: dict[int, list[int]] = {}  # each thread's rewrites (ascending, as found)
        for e in self.events:
            starts.setdefault(id(e.seq), []).append(e.i)
        for e, (stop, _, _) in zip(self.events, self.extents, strict=True):
            mine = starts[id(e.seq)]
            e.later = bisect_left(mine, stop) - bisect_right(mine, e.i)

    def analyse(
        self, share: int = 0, shares: int = 1, told: Callable[[int, int], None] | None = None
    ) -> list[tuple[int, BreakEven]]:
        """Break-even of the rewrites of `share` (of `shares`, from `split`), each with its
        place among all the strategy's rewrites (what the rows of the shares merge by).
        `told(done, total)`: after each rewrite, how many of the share's counterfactual
        requests are replayed (its work grows with them, not with the rewrites)."""
        mine = split(self.steps, shares)[share]
        total = sum(self.steps[n] for n in mine)
        rows, done = [], 0
        for n in mine:
            rows.append((n, _analyse(self.run, self.events[n], self.horizon, self.extents[n])))
            done += self.steps[n]
            if told is not None:
                told(done, total)
        return rows


def split(steps: Sequence[int], shares: int) -> list[list[int]]:
    """The rewrites (indices into `steps`) of each of `shares` shares of about the same work:
    the longest first, each to the share with the least so far (ties: the lowest share), each
    share's in ascending order. Deterministic: every process computes the same shares."""
    loads = [0] * shares
    owned: list[list[int]] = [[] for _ in range(shares)]
    for n in sorted(range(len(steps)), key=lambda n: (-steps[n], n)):
        least = loads.index(min(loads))
        loads[least] += max(1, steps[n])
        owned[least].append(n)
    return [sorted(o) for o in owned]


def _ids_before(records: list[RequestRecord]) -> list[int]:
    """For each record, the highest block id the records before it sent (block ids grow as
    blocks are first seen: a higher one is a block no earlier prompt held); -1 from a record
    whose blocks were released on (unknown)."""
    out, highest = [], 0
    for r in records:
        out.append(highest)
        if highest >= 0:
            ids = r.request.block_ids
            highest = -1 if ids is None else max(highest, int(ids.max()) if len(ids) else 0)
    return out


_Lane = tuple[list[RequestRecord], dict[int, list[RequestRecord]], list[RequestMarker]]
"""A thread's requests, its summarizer calls by request index, and the recorded calls of its
requests (`_Rewrite.seq`, `.extra`, `.markers`)."""


def _lanes(run: _Run, records: list[RequestRecord]) -> dict[str, _Lane]:
    """Each thread's `_Lane`."""
    summarizers: dict[str, dict[int, list[RequestRecord]]] = {}
    threads: dict[str, list[RequestRecord]] = {}
    for r in records:
        if r.kind == "summarizer":
            # `<thread>/summarizer` (`_Run`): the thread may hold a slash of its own (a
            # Claude Code branch, `main/branch-1`), so only the suffix goes.
            lane = r.thread.removesuffix("/summarizer")
            summarizers.setdefault(lane, {}).setdefault(r.request_index, []).append(r)
        else:
            threads.setdefault(r.thread, []).append(r)
    recorded = run.session.requests()  # `request_index` numbers them in file order
    # The recorded calls themselves: their price variant (fast mode, US-only inference) and
    # duration (when the response, hence the cache entry, was ready) hold for the
    # counterfactual too; only the rewrite differs.
    return {
        thread: (seq, summarizers.get(thread, {}), [recorded[r.request_index] for r in seq])
        for thread, seq in threads.items()
    }


def _rewrite_events(run: _Run, records: list[RequestRecord]) -> list[_Rewrite]:
    events = []
    for seq, extra, markers in _lanes(run, records).values():
        for i in range(1, len(seq)):
            if seq[i].events and seq[i].diff.is_break:
                subs = _substitutions(seq[i - 1].view, seq[i].view)
                if subs == {}:
                    # The view only grew: the strategy named its state again (a clearing
                    # repeated), and the log's own change broke the prefix, not a rewrite.
                    continue
                events.append(_Rewrite(seq, i, extra, markers, subs))
    return events


def _edit_event(
    run: _Run, records: list[RequestRecord], at: int, reference: dict[int, list[Item]]
) -> list[_Rewrite]:
    """The rewrite of a one-off edit at request `at`, to be compared with `reference`, the
    views of the run it edits: even where it broke no prefix (an edit of what request `at`
    adds), or at a thread's first request."""
    for seq, extra, markers in _lanes(run, records).values():
        i = next((n for n, r in enumerate(seq) if r.request_index == at), None)
        if i is not None:
            return [_Rewrite(seq, i, extra, markers, None, reference=reference)]
    return []


def _extent(e: _Rewrite, longest: int | None) -> _Extent:
    """The requests `_analyse` compares for `e`: to the strategy's next structural rewrite
    after a structural one, else to the end of the thread; at most `longest`."""
    seq, i = e.seq, e.i
    end = len(seq)
    if e.subs is None and e.reference is None:
        later = range(i + 1, len(seq))
        end = next((k for k in later if seq[k].events and _structural(seq[k - 1], seq[k])), end)
    if longest is not None and end - i > longest:
        return i + longest, False, True
    return end, end < len(seq), False


def breakeven_config(session: Session, config: ReplayConfig | None) -> ReplayConfig:
    """`config` as break-even runs it: with the unlogged context fitted, views and block arrays
    kept and the cache store copied before each rewrite (for its counterfactual)."""
    config = copy.copy(config) if config is not None else ReplayConfig()
    if config.pricer is None:
        config.pricer = Pricer()
    config = copy.copy(with_unlogged_context(session, config))
    config.keep_views = True
    # Each counterfactual is diffed against the run's own prompts, block by block: released,
    # they held no blocks to compare (a TypeError at the first rewrite).
    config.keep_blocks = True
    config.snapshot_stores = True
    return config


def breakeven_strategy(
    session: Session,
    named: NamedStrategy,
    config: ReplayConfig,
    horizon: int | None,
    told: Callable[[int, int], None] | None = None,
) -> tuple[list[BreakEven], list[RequestRecord]]:
    """Break-even of every rewrite event of one strategy, and the records of its run (`config`
    from `breakeven_config`; `told`: see `Rewrites.analyse`)."""
    with strategy_rewrites(session, named, config, horizon) as rewrites:
        return [row for _, row in rewrites.analyse(told=told)], rewrites.records


def breakeven_edit(
    session: Session,
    reference: NamedStrategy,
    edit: NamedStrategy,
    at: int,
    config: ReplayConfig | None = None,
) -> tuple[list[BreakEven], list[RequestRecord]]:
    """Break-even of the one edit `edit` makes at request `at` to the run of `reference`
    (`whatif`), and the records of both runs. Its counterfactual is `reference`'s own run: the
    views it sent, to the end of the thread (the edit's later requests are `reference`'s with
    the edit made again, so the difference is that edit alone, what it touched first at `at`
    included)."""
    config = breakeven_config(session, config)
    if config.progress is not None:
        config.progress(reference.name, 0, 2)
    with remembered_block_pairs():
        base = _Run(session, reference, config).run()
        views = {r.request_index: r.view for r in base if r.kind == "request"}
        if config.progress is not None:
            config.progress(edit.name, 1, 2)
        run = _Run(session, edit, config)
        records = run.run()
        rows = [row for _, row in Rewrites(run, records, None, (at, views)).analyse()]
    for r in (*base, *records):
        r.store_before = None
    if config.progress is not None:
        config.progress("", 2, 2)
    return rows, [*base, *records]


@contextmanager
def strategy_rewrites(
    session: Session, named: NamedStrategy, config: ReplayConfig, horizon: int | None
) -> Iterator[Rewrites]:
    """One strategy's run and its rewrite events, to analyse inside the block (`config` from
    `breakeven_config`)."""
    with remembered_block_pairs():
        run = _Run(session, named, config)
        yield Rewrites(run, run.run(getattr(config.progress, "detail", None)), horizon)


def _replayed(detail: Callable[[str], None]) -> Callable[[int, int], None]:
    """`Rewrites.analyse`'s `told`, as a progress bar's detail line."""

    def told(done: int, total: int) -> None:
        detail(f"{done:,} / {total:,} counterfactual requests")

    return told


def breakeven_session(
    session: Session,
    strategies: str | Sequence[str | NamedStrategy] = "all",
    config: ReplayConfig | None = None,
    *,
    horizon: int | None = None,
    tables: RecordSink | None = None,
) -> tuple[list[BreakEven], list[RequestRecord]]:
    """Break-even of every rewrite event of every strategy (and the records of the runs).

    `horizon`: follow each rewrite over at most that many requests (None: to the strategy's
    next structural rewrite or the end of its thread). Each rewrite replays the rest of the log
    without it, so the work grows with rewrites × requests; a limit makes it linear.
    `tables`: hand each strategy's records to it (`ResultTables`, to count what the notes
    need) and return none: one strategy's records, with their views, are held at a time
    instead of every one's."""
    config = breakeven_config(session, config)
    rows: list[BreakEven] = []
    all_records: list[RequestRecord] = []
    resolved = resolve(strategies)
    detail = getattr(config.progress, "detail", None)
    for done, named in enumerate(resolved):
        if config.progress is not None:
            config.progress(named.name, done, len(resolved))
        strategy_rows, records = breakeven_strategy(
            session, named, config, horizon, _replayed(detail) if detail else None
        )
        if tables is not None:
            tables.add(records)
        else:
            all_records.extend(records)
        del records  # (counted: not held while the next strategy runs)
        rows.extend(strategy_rows)
    for r in all_records:
        r.store_before = None  # the copies were only needed for the counterfactuals
    if config.progress is not None:
        config.progress("", len(resolved), len(resolved))
    return rows, all_records
