"""Break-even of an in-place rewrite without replaying all of its counterfactual, where exact.

A rewrite that replaced items in place (a capped, stubbed or cleared tool result) at request i
has a counterfactual whose every later view is the strategy's own view with the originals put
back (`_breakeven._substituted`). On Anthropic's explicit-breakpoint cache the simulator
decides by blocks: where the client put its breakpoints (by block kind), which prefix keys the
store holds and when each entry was written or read; token counts only measure what was
decided. Both runs render the same blocks in the same order but for the substituted ones, and
from the rewrite on they write at the same blocks at the same times. What the counterfactual
has that the rewritten run has no counterpart for are the entries written before the rewrite
whose prefixes hold the originals (`Shift.unmatched`): the counterfactual may read them (an
aging strategy's counterfactual reads, request after request, the prefix up to the next item
the strategy ages), the rewritten run cannot.

So the counterfactual is replayed (`_breakeven._analyse`) until all of those entries have
expired; from then on, each of its requests reads and writes at the blocks the rewritten run's
request did, and its buckets are that request's with each boundary moved by what the
substituted blocks before it add; its cost is the price of those buckets. That holds while
nothing else touches the cache (one thread over the whole comparison, no summarizer call:
`_Rewrite.lone`), and is checked at every request; any doubt returns the request where it
stopped, and the caller goes on replaying:

- no breakpoint writes where an expired unmatched entry lies (a write would revive it), and
  while no `TTL expired` cause was seen yet, the read lies beyond all of them (an expired one
  longer than the read names that cause in the counterfactual alone);
- the entry the rewritten run read at the rewrite (before the edit), when no breakpoint of that
  request refreshed it in both runs, is never the read again (its two copies differ in age);
- the minimum cacheable length: every breakpoint after the first substituted block is past it
  in both runs when that block starts past it (per-checkpoint minimums, as on Bedrock, are not
  handled: only the plain `anthropic` route is);
- where the client's last marker lands when the unlogged tail moved it (`place_last_marker`):
  found again on the shifted prompt;
- the substituted items rendered as at the rewrite (the same block ids: a changed neighbour can
  change an item's framing), no thinking stripped (its view would be another), one model.

`tests/test_breakeven_shift.py` compares break-even rows with and without this on random
sessions, and each guard on a session where it fires. Two are shown needed there: without the
one on the minimum length, or the one on an expired entry past the read, some derived row is
wrong. For the guards on older reads, on writes over unmatched entries and on rewrites before
a dormant one, no session found so far (hundreds of random ones, with idle gaps added, and the
samples) has a row that differs without them; the one on the last marker fired on none. They
stay: the argument above needs them, and a needless stop only costs replay time.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from itertools import accumulate
from typing import Any

import numpy as np

from replay.cache._base import PromptView, prompt_view
from replay.cache._rules import utc_date
from replay.cache.anthropic import last_cacheable
from replay.engine._unlogged import nearest_end, place_last_marker
from replay.prices import Buckets, charge
from replay.render import first_difference
from replay.render._request import IntsView
from replay.strategies._view import Item, shared_prefix

ENABLED = True
"""Use the shortcut where it is exact (tests turn it off to compare with the full replay)."""

# The guards a derived request must pass (module docstring), by the reason each gives.
EDIT_BEFORE_MINIMUM = "the edit before the minimum length"
REWRITTEN_BEFORE_UNMATCHED = "rewritten where an unmatched entry could match"
READS_OLDER_ENTRY = "reads an entry older in the counterfactual"
EXPIRED_PAST_READ = "an expired unmatched entry past the read"
WRITES_OVER_UNMATCHED = "writes where an unmatched entry lies"
MARKER_MOVES = "the client's last marker moves"
GUARDS = (EDIT_BEFORE_MINIMUM, REWRITTEN_BEFORE_UNMATCHED, READS_OLDER_ENTRY, EXPIRED_PAST_READ,
          WRITES_OVER_UNMATCHED, MARKER_MOVES)

DISABLED: set[str] = set()
"""Guards switched off: only for tests that show a guard is needed (the rows then differ from
the replayed ones on a session where it fires)."""

_TRIES = 6
"""Derivations that may stop at their first request for one counterfactual before it is replayed
to its end."""

_NONE = object()

_FEW = 8
"""Substituted items up to which `_moves` goes an item at a time."""

_ROUTE = "anthropic"
_MECHANISM = "explicit-breakpoints"


@dataclass
class _Original:
    """A substituted item as both runs rendered it at the rewrite."""

    ids: np.ndarray
    """Block ids of the rewritten item (its blocks must be these at every later request)."""
    delta: np.ndarray
    """Tokens the original's blocks have more than the rewritten item's, block by block."""

    def __post_init__(self) -> None:
        self.single = len(self.ids) == 1
        """One block (the usual case: a tool result's output)."""
        self.id = int(self.ids[0])
        self.first_delta = int(self.delta[0])


class _Moves:
    """Where a request's block ends lie in the counterfactual: each moved by what the
    substituted blocks ending at or before it add."""

    __slots__ = ("blocks", "deltas", "ends", "shifted")

    def __init__(self, blocks: list[int], deltas: list[int], ends: list[int]) -> None:
        self.blocks, self.deltas, self.ends = blocks, deltas, ends
        self.shifted = list(accumulate(deltas))

    def __call__(self, position: int) -> int:
        if not self.ends:
            return position
        n = bisect_right(self.ends, position)
        return position + (self.shifted[n - 1] if n else 0)


def simulated_view(run: Any, rec: Any) -> PromptView:
    """The prompt of a record as its simulator saw it (thinking stripped where it was): the
    lengths its outcome and entries are in."""
    req = rec.request
    if rec.outcome.dropped_tokens:
        return prompt_view(req, True, run.renderer(rec.model).table)
    return PromptView(req.block_ids, req.cum_tokens, req.kinds, req.positions, req.prefix_keys)


class Shift:
    """The counterfactual of one in-place rewrite at request i, derived from the rewritten
    run's records once the entries only it could read have expired (module docstring). Fed
    the requests in order: `observe` each one the caller replayed after i, then `costs`."""

    def __init__(
        self,
        run: Any,
        seq: Sequence[Any],
        i: int,
        subs: dict[int, Item],
        cf_items: list[Item],
        cf_record: Any,
        cf_store: Any,
        before: dict[Any, Any],
        known_ids: int = -1,
        earlier: Sequence[Any] = (),
        id_memo: dict[Any, Any] | None = None,
    ) -> None:
        self.run, self.seq, self.i, self.subs = run, seq, i, subs
        self.known_ids = known_ids
        """The highest block id of the prompts sent before the rewrite (-1: unknown)."""
        self.earlier = earlier
        """The records of the requests simulated before the rewrite: what wrote its store."""
        self._held: dict[tuple[int, int], bool] = {}
        self.id_memo = {} if id_memo is None else id_memo
        self._index = self._shared("index", seq, lambda s: {id(r): n for n, r in enumerate(s)})
        self._views: list[tuple[Any, PromptView]] = []
        self.store = cf_store
        self._rules: dict[tuple[str, str, Any], Any] = {}
        rec = seq[i]
        self.model = rec.model
        self.originals: dict[int, _Original] = {}
        self.failures = 0
        self.stopped = ""
        """Why the last derivation stopped short (for the curious: tests, profiling)."""
        self.first_start = 0
        self.totals: dict[int, int] = {}
        """The billed prompt size of each request `costs` derived, by request index (the
        caller counts the ones over the context window)."""
        self._before: list[Item] = []
        self._positions: list[int] = []
        self.ok = self._originals(rec, cf_items, cf_record) and self._usable(rec)
        if not self.ok:
            return
        self.unmatched = [
            key
            for key, e in cf_store.entries.items()
            if key[1] == rec.request.model and e.tokens > self.first_start
            and before.get(key) is e
        ]
        """Keys of the entries from before the rewrite that reach past the edit (any scope):
        only the counterfactual can match those (an entry that replaced one has its key). From
        before: in the store the rewrite's request found (`before`, its entries by key), not
        written by that request (an expired one it wrote again is another entry); not told by
        their write times, which an earlier request of a log with a coarse clock shares."""
        self._prefixes = np.array([key[2] for key in self.unmatched], dtype=np.int64)
        self.cf_last = cf_record
        """The counterfactual's last replayed request (its prefix keys tell which unmatched
        entries it could read)."""
        self.longest = self.dormant = -1
        """(`ready`) The longest of the unmatched entries that are a prefix of that request, and
        of the others (-1: none)."""
        self.watch: set[int] = set()
        """The lengths of the entries replayed requests of the rewritten run read where the
        counterfactual read another, that no breakpoint of those requests refreshed in both:
        their copies in the counterfactual are older, so the rewritten run must not read one
        again (a miss that one of them names could be named otherwise, too)."""
        if cf_record.outcome.cache_read != rec.outcome.cache_read:  # (both before the edit)
            self._watch(rec)

    # -- setup --------------------------------------------------------------------------------

    def _originals(self, rec: Any, cf_items: list[Item], cf_record: Any) -> bool:
        """Each substituted item's blocks in both renderings of request i."""
        act, cf = rec.request, cf_record.request
        if act.released or cf.released or len(cf_items) != len(rec.view):
            return False
        starts = []
        for p, item in enumerate(rec.view):
            if id(item) not in self.subs:
                continue
            a0, a1 = _blocks_of(act.item_index, p)
            c0, c1 = _blocks_of(cf.item_index, p)
            if a1 - a0 != c1 - c0 or a1 == a0:
                return False
            self.originals[id(item)] = _Original(
                ids=act.block_ids[a0:a1].copy(),
                delta=cf.block_tokens[c0:c1] - act.block_tokens[a0:a1],
            )
            starts.append(_start(self._view(rec), a0, act))
        if not starts:
            return False
        self.first_start = min(starts)
        return True

    def _rule(self, rec: Any, name: str, default: Any) -> Any:
        router = self.run.cache
        key = (name, rec.model, utc_date(rec.ts))  # rule rows are chosen by UTC date
        if key not in self._rules:
            route = router.route(rec.provider, rec.model)
            book = router.book(route, route.variant)
            self._rules[key] = book.get(name, route.rules_model, rec.ts, default)
        return self._rules[key]

    def _shared(self, what: str, rec: Any, compute: Any) -> Any:
        """`compute(rec)`, once per request of the run for every rewrite (`id_memo`)."""
        key = (what, id(rec))
        hit = self.id_memo.get(key, _NONE)
        if hit is _NONE:
            hit = self.id_memo[key] = compute(rec)
        return hit

    def _usable(self, rec: Any) -> bool:
        """The request is simulated by blocks alone, as the module's docstring requires."""
        return rec.model == self.model and self._shared("usable", rec, self._by_blocks)

    def _by_blocks(self, rec: Any) -> bool:
        o = rec.outcome
        return (
            o.route == _ROUTE and o.mechanism == _MECHANISM
            and rec.kind == "request" and not rec.request.released
            and not self._rule(rec, "min_tokens_per_checkpoint", False)
        )

    def _min_length(self, rec: Any) -> int:
        return self._shared(
            "minimum", rec, lambda r: int(self._rule(r, "min_cacheable_tokens", 0))
        )

    def _view(self, rec: Any) -> PromptView:
        """The prompt of a request of the rewritten run as its simulator saw it (thinking
        stripped where it was), the lengths its outcome and entries are in."""
        req = rec.request
        views = self._views
        for known, view in views:
            if known is req:
                return view
        view = simulated_view(self.run, rec)
        views.append((req, view))
        if len(views) > 3:  # a request and the one before it are asked about together
            del views[0]
        return view

    def _keys(self, rec: Any) -> np.ndarray:
        """The prefix keys of a request as its simulator saw it (thinking stripped where it
        was): those of its entries."""
        keys = self._view(rec).keys
        return keys.array if isinstance(keys, IntsView) else np.asarray(list(keys), np.int64)

    def _change(self, cur: Any, previous: Any) -> tuple[int, int, bool] | None:
        """Where a request of the rewritten run first differs from the previous one, as
        simulated: (block of the request, that block's index in its simulated prompt, whether
        thinking was stripped from either), None when one prompt is a prefix of the other."""
        stripped = bool(cur.outcome.dropped_tokens or previous.outcome.dropped_tokens)
        if not stripped:
            block = cur.diff.first_mismatch_block
            return None if block is None else (block, block, False)
        before, now = self._view(previous), self._view(cur)
        at = first_difference(before.ids, now.ids)
        if at is None:
            return None
        block = at if now.kept is None else int(now.kept[at])
        return block, at, True

    def _written(self, rec: Any) -> set[int]:
        return self._shared("written", rec, self._breakpoint_lengths)

    def _breakpoint_lengths(self, rec: Any) -> set[int]:
        """Token lengths (in the rewritten run) of the prefixes a request's breakpoints end
        at, a superset of those it wrote: the client's markers (the last one moved where the
        unlogged tail put it), each on the last cacheable block at or before it, and the
        automatic one."""
        req, run = rec.request, self.run
        marks = run.profile.breakpoints(req, rec.thread)
        tail = rec.rendered_with.unlogged_tail if rec.rendered_with is not None else 0
        if tail:
            marks = place_last_marker(marks, req, tail)
        view = self._view(rec)
        table = run.renderer(rec.model).table
        blocks = {last_cacheable(view, table, view.map_block(b.block)) for b in marks}
        if run.profile.automatic:
            blocks.add(last_cacheable(view, table, len(view) - 1))
        return {view.tokens(b) for b in blocks if b is not None}

    def _watch(self, rec: Any) -> None:
        read = rec.outcome.cache_read
        if read and read not in self._written(rec):
            self.watch.add(read)

    def _held_before(self, at: int, block_id: int) -> bool:
        """Whether some prompt sent before the rewrite held `block_id` as the block at `at` of
        its prompt as simulated (True where unknown), so that an entry it left could be a
        prefix of a prompt that has that block there."""
        if 0 <= self.known_ids < block_id:
            return False  # a block no prompt before held at all
        key = (at, block_id)
        held = self._held.get(key)
        if held is None:
            held = False
            for r in self.earlier:
                ids = self._simulated_ids(r)
                if ids is None or (len(ids) > at and ids[at] == block_id):
                    held = True
                    break
            self._held[key] = held
        return held

    def _simulated_ids(self, rec: Any) -> np.ndarray | None:
        """The block ids of an earlier request's prompt as its simulator saw it (None: its
        blocks were released). Shared by the rewrites of one run (`id_memo`)."""
        req = rec.request
        if req.block_ids is None:
            return None
        if not rec.outcome.dropped_tokens:
            return req.block_ids
        hit = self.id_memo.get(("ids", id(req)))
        if hit is None:
            hit = self.id_memo[("ids", id(req))] = simulated_view(self.run, rec).ids
        return hit

    def _previous_view(self, rec: Any) -> list[Item] | None:
        """The view of the request before `rec` in its thread, if `rec` is in `seq`."""
        at = self._index.get(id(rec))
        return self.seq[at - 1].view if at else None

    def _moves(self, rec: Any) -> _Moves | None:
        """Where the substituted blocks are in a later request of the rewritten run (None: not
        rendered as at the rewrite)."""
        view, subs = rec.view, self.subs
        before = self._before
        if before and before is self._shared("previous", rec, self._previous_view):
            same = self._shared("same", rec, lambda r: shared_prefix(before, r.view))
        else:
            same = shared_prefix(before, view)
        positions = [p for p in self._positions if p < same]
        positions.extend(p for p in range(same, len(view)) if id(view[p]) in subs)
        self._before, self._positions = view, positions
        if not positions:
            return _Moves([], [], [])
        req = rec.request
        originals = [self.originals[id(view[p])] for p in positions]
        if len(positions) <= _FEW and all(o.single for o in originals):
            return self._few_moves(rec, positions, originals)
        at = np.array(positions, dtype=np.int64)
        first = req.item_index.searchsorted(at, side="left")
        end = req.item_index.searchsorted(at + 1, side="left")
        if all(len(o.ids) == 1 for o in originals):  # one block an item: no loop
            ids = np.concatenate([o.ids for o in originals])
            if not ((end - first == 1).all() and np.array_equal(req.block_ids[first], ids)):
                return None
            blocks = first
        else:
            spans = []
            for o, b0, b1 in zip(originals, first.tolist(), end.tolist(), strict=True):
                if b1 - b0 != len(o.ids) or not np.array_equal(req.block_ids[b0:b1], o.ids):
                    return None
                spans.append(np.arange(b0, b1))
            blocks = np.concatenate(spans)
        deltas = np.concatenate([o.delta for o in originals])
        view = self._view(rec)
        ends = view.cum[blocks if view.kept is None else view.kept.searchsorted(blocks)]
        return _Moves(blocks.tolist(), deltas.tolist(), ends.tolist())

    def _few_moves(self, rec: Any, positions: list[int], originals: list[_Original]
                   ) -> _Moves | None:
        """`_moves` for a few one-block items, an item at a time (numpy's per-call cost is
        most of the work on arrays of a few elements)."""
        req = rec.request
        owners, ids, n = req.item_index, req.block_ids, len(req.block_ids)
        view = self._view(rec)
        kept = view.kept
        blocks, ends = [], []
        for p, o in zip(positions, originals, strict=True):
            b = int(owners.searchsorted(p))
            if b >= n or owners[b] != p or (b + 1 < n and owners[b + 1] == p) or ids[b] != o.id:
                return None
            blocks.append(b)
            ends.append(int(view.cum[b if kept is None else int(kept.searchsorted(b))]))
        return _Moves(blocks, [o.first_delta for o in originals], ends)

    # -- the counterfactual -------------------------------------------------------------------

    def observe(self, rec: Any, cf_record: Any) -> None:
        """A request after i that the caller replayed (`rec`, the rewritten run's; `cf_record`,
        the counterfactual's)."""
        if not self.ok:
            return
        if not self._usable(rec) or cf_record.request.released:
            self.ok = False
            return
        self.cf_last = cf_record
        moves = self._moves(rec)
        if moves is None or cf_record.outcome.cache_read != moves(rec.outcome.cache_read):
            self._watch(rec)
        if moves is None:
            self._before, self._positions = [], []  # found again from scratch next time

    def ready(self, t: datetime) -> bool:
        """Whether every unmatched entry that is a prefix of the counterfactual's last replayed
        request has expired at `t` (the others cannot become one while no request rewrites the
        prompt before their end: `_cost` checks it)."""
        if not self.ok:
            return False
        held = np.isin(self._prefixes, self._keys(self.cf_last))
        entries = self.store.entries
        longest = dormant = -1
        for key, prefix in zip(self.unmatched, held.tolist(), strict=True):
            e = entries[key]
            if not prefix:
                dormant = max(dormant, e.tokens)
            elif e.expired(t):
                longest = max(longest, e.tokens)
            else:
                return False
        self.longest, self.dormant = longest, dormant
        return True

    def costs(self, start: int, stop: int, saw_ttl: bool) -> tuple[list[Decimal], int]:
        """The counterfactual's cost at each request of [start, stop) for as long as the
        derivation is certain to be the replay's (`start` ≥ i + 1, after `observe` of every
        request before it and with `ready` at its time), and the request where it stopped
        (`stop` when it went to the end)."""
        longest = self.longest
        costs: list[Decimal] = []
        for k in range(start, stop):
            cur = self.seq[k]
            cost = self._cost(cur, self.seq[k - 1], longest, saw_ttl)
            if cost is None:
                self._before, self._positions = [], []
                if k == start:
                    # What stops it at once, try after try, persists (a strategy that rewrites
                    # before the unmatched entries' ends at every request): stop watching.
                    self.failures += 1
                    self.ok = self.failures < _TRIES
                return costs, k
            costs.append(cost)
            saw_ttl = saw_ttl or (cur.outcome.miss_cause or "").startswith("TTL")
        return costs, stop

    def _cost(self, cur: Any, previous: Any, longest: int, saw_ttl: bool) -> Decimal | None:
        if not self._usable(cur):
            return self._stop("not simulated by blocks alone")
        moves = self._moves(cur)
        if moves is None:
            return self._stop("an item rendered otherwise")
        o, req = cur.outcome, cur.request
        if moves.blocks:
            first = moves.blocks[0]
            start = _start(self._view(cur), first, req)
            if start < self._min_length(cur) and self._stops(EDIT_BEFORE_MINIMUM):
                return None
        # Where this prompt first differs from the previous one: an unmatched entry that was no
        # prefix of that one can only become a prefix of this one if that is before its end,
        # and the block there one that some prompt before the rewrite held.
        change = self._change(cur, previous) if self.dormant >= 0 else None
        if change is not None:
            _, at, _ = change
            view = self._view(cur)
            new = int(view.ids[at])
            if moves(int(view.cum[at - 1]) if at else 0) < self.dormant and self._held_before(
                at, new
            ) and self._stops(REWRITTEN_BEFORE_UNMATCHED):
                return None
        read = o.cache_read
        if self.watch and (read in self.watch or (not saw_ttl and read < max(self.watch))) and (
            self._stops(READS_OLDER_ENTRY)
        ):
            return None
        one_hour = read + o.cache_write_1h
        written = one_hour + o.cache_write_5m
        total = written + o.uncached
        cf_read, cf_one_hour, cf_written, cf_total = (
            moves(read), moves(one_hour), moves(written), moves(total)
        )
        if longest >= 0:
            if not saw_ttl and cf_read <= longest and self._stops(EXPIRED_PAST_READ):
                return None
            # A write where an expired unmatched entry lies would revive it.
            written_at = self._written(cur)
            if any(self.first_start < moves(p) <= longest for p in written_at) and self._stops(
                WRITES_OVER_UNMATCHED
            ):
                return None
        tail = cur.rendered_with.unlogged_tail if cur.rendered_with is not None else 0
        if tail and moves.blocks and not _same_marker(req, moves.blocks, moves.deltas, tail) and (
            self._stops(MARKER_MOVES)
        ):
            return None
        self.totals[cur.request_index] = cf_total
        return charge(
            self.run.pricer,
            o,
            cur.output_tokens,
            model=cur.model,
            provider=cur.provider,
            ts=cur.ts,
            context=cur.price_context,
            buckets=Buckets(
                uncached=cf_total - cf_written,
                cache_read=cf_read,
                cache_write_5m=cf_written - cf_one_hour,
                cache_write_1h=cf_one_hour - cf_read,
                output=cur.output_tokens,
            ),
        ).cost_usd

    def _stop(self, why: str) -> None:
        self.stopped = why
        return None

    def _stops(self, guard: str) -> bool:
        """Whether `guard` stops the derivation here (False only for one a test turned off)."""
        if guard in DISABLED:
            return False
        self.stopped = guard
        return True


def _same_marker(req: Any, blocks: list[int], deltas: list[int], tail: int) -> bool:
    """Whether the client's last marker, moved `tail` tokens back from the end, lands on the
    same block of the shifted prompt (`place_last_marker`)."""
    head = req.kind_index.head_end + 1
    cum = req.cum_tokens
    step = np.zeros(len(cum), dtype=np.int64)
    np.add.at(step, blocks, deltas)
    shifted = cum + np.cumsum(step)
    return nearest_end(cum, head, int(cum[-1]) - tail) == nearest_end(
        shifted, head, int(shifted[-1]) - tail
    )


def _start(view: PromptView, block: int, req: Any) -> int:
    """Where a kept block starts in `view` (the request `req`'s prompt as simulated)."""
    j = block if view.kept is None else int(view.kept.searchsorted(block))
    return int(view.cum[j]) - int(req.block_tokens[block])


def _blocks_of(item_index: np.ndarray, position: int) -> tuple[int, int]:
    """The blocks `[first, end)` of view item `position` (owners ascend; -1 for the head)."""
    first, end = item_index.searchsorted((position, position + 1), side="left").tolist()
    return int(first), int(end)
