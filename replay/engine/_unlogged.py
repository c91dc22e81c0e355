"""Context the log does not hold, fitted on the provider's recorded usage (every part estimated).

No agent logs its whole prompt. Adapters estimate one hidden prefix per thread (system prompt,
tool schemas, context injected before the first request: `hidden_prefix_tokens`). The rest is
fitted here, once per session, by replaying `recorded` (what the agent really sent) against the
usage the provider recorded. A log without usage gets nothing fitted. Parts:

- **residual** — per request, prompt tokens billed beyond what the log shows (reminders the
  harness attached, re-read files, tokenizer error): estimated messages appended to the history,
  carried by every later request (a logged compaction replaces them with the events around them).
  At a thread's first request after a logged compaction they are what the harness sent with it
  (Claude Code re-attaches recent files): only a view that made that compaction carries them
  (`RequestFit.compaction`).
- **scaled counts** (the signed fit; `ReplayConfig.signed_fit`) — a request billed short of its
  replay (beyond the previous request's own shortfall) over-counts the texts it sends first: text
  below the tokenizer family's average ratio, or logged text the harness did not send. Those
  texts are sized down to the bill, in proportion to their counts, and keep that count for every
  strategy (`UnloggedContext.counts`, read through `replay.tokens.FittedCounter`): the
  correction travels with its item and leaves the prompt when a strategy drops it, where a
  residual could never go (a text derived from one, e.g. truncated, is counted with the family
  factor). With explicit markers the split follows the marker: the texts before it give up what
  they over-count there, those after it the rest (a marker that falls inside the last logged
  block means the uncached tail is unlogged context after it: Claude Code 2.1 attachments). On a
  thread's first request, whose hidden prefix the adapter sized as the bill minus the log, the
  texts after the marker are sized down to the billed tail and the hidden prefix grows by as
  much (`UnloggedContext.grown`). Only families with an estimated tokenizer are scaled
  (OpenAI's is exact). Without it, an over-count stays in every later prompt until later
  under-counts fill it, and a factor at or above the true ratio cannot be applied.
- **uncached tail** — Anthropic reports the tokens after the client's last cache marker
  (`input_tokens`). Clients mark the end of the prompt (1–4 framing tokens follow it); a longer
  tail means the marker sat earlier (Claude Code 2.1 renders attachments after it; parallel tool
  results reach the API in call order while the marker follows their arrival), so the last marker
  is moved back by that many tokens, and the residual's share that lies after it becomes a message
  of its own (uncached on this request, read by the next).
- **head** — a thread's hidden prefix is [system prompt + tools | first-message context]: the
  client's system marker ends the first part, the second (CLAUDE.md, environment, listings) opens
  the messages and is re-sent with every request, compactions included. Reads that stop inside the
  hidden prefix show where the head ends (after a compaction, a subagent reading a sibling's head,
  a first request reading what an earlier session cached); threads with the same system prompt and
  model and a hidden prefix of the same size (subagents of one type) share one head.
- **warm start** — when the first request of a head's threads reads part of it, a request before
  the log left that much in the cache (another session of the account): the cache is seeded with
  it, the head split where that read stops (also when it stops within the read tolerance of the
  whole hidden prefix but at least `TAIL_MIN` short of it: the rest is first-message context,
  whose size depends on the logged text's count, the read's does not). That read is fitted, not
  predicted.
- **transient context** — a read stops at the last cache entry before the first change. When a
  request reads exactly up to the entry before an unlogged message of the previous request (its
  first-message context, or its own residual) that is longer than the read tolerance, and short
  of where the previous request wrote, that message was not sent again as it was: it is dropped
  from then on (the residual fit adds whatever the new request carries instead, at its end).
  Not across a logged compaction: it explains the shorter read by itself.
- **shrunk prompt** — elsewhere (caches without marker positions: OpenAI, …) the billed prompt
  size shows it: when a request is billed D > `SHRINK_MIN` tokens fewer than its replay (beyond
  the previous request's own shortfall), and an estimated message of its view is D to
  D + `SHRINK_SLACK` tokens long (the slack: what the new request itself adds beyond the log),
  that message was not sent again: the newest such one is dropped from then on. The read is not
  used, so it stays a prediction. (a7: a ~340-token message Codex sends at some requests only,
  not in the rollout.)

Only explicit-breakpoint caches (Anthropic and its variants) show marker positions in their
usage; elsewhere only the residual, scaled counts (from the billed size) and shrunk prompts are
fitted.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import accumulate, compress
from operator import not_
from typing import TYPE_CHECKING, Any

import numpy as np

from replay.cache import Breakpoint, SimRequest
from replay.cache._base import prompt_view
from replay.log import MAIN_THREAD, RequestMarker, Session, ThreadStart
from replay.prefix import prefix_diff
from replay.render import Renderer
from replay.render._request import SYSTEM, THINKING, TOOL, BlockTable, RenderedRequest
from replay.strategies._view import Item, SummarizerCall, UserItem, View, shared_prefix
from replay.tokens import FittedCounter, TokenCounter, counter_for, fitted_counter

if TYPE_CHECKING:
    from replay.engine._replay import RequestRecord, _Run, _Thread

TAIL_MIN = 32
"""Uncached tokens after the client's last marker below which the marker is taken to end the
prompt (the provider bills a few framing tokens after it)."""

SHRINK_MIN = 64
"""Tokens a billed prompt must fall short of its replay by before an estimated message is taken
to be gone (below: tokenizer noise, which the residual fit never removes either)."""

SHRINK_SLACK = 128
"""Tokens an estimated message may exceed the shortfall by and still be the one not sent again:
the request's own unlogged additions (framing the renderer does not count: 7–60 tokens a
request on the Codex samples) offset part of it."""

CONTEXT: tuple[int, str] = (-1, "context")
"""Key of a thread's first-message context among its unlogged messages."""

Key = tuple[int, str]
"""An unlogged message: (event index of the request it was fitted on, `before`/`after`)."""


def read_tolerance(prompt: int) -> int:
    """How far a cache read may be from another and still count as the same: max(2 % of the
    prompt, 256 tokens) (the fidelity tolerance)."""
    return max(round(prompt * 0.02), 256)


@dataclass(frozen=True)
class ThreadFit:
    """A thread's hidden prefix, split where the recorded reads show the head ends."""

    head: tuple[int, ...]
    """Tokens of the system prompt + tool schemas: opaque hidden blocks, the client's system
    marker after the last (two when a warm start read stops inside the head)."""
    context: int = 0
    """Tokens of the first-message context sent right after the head on every request."""
    warm: int = 0
    """Tokens of the head cached before the log (a prefix of `head`; 0 = cold start)."""
    logged: int = 0
    """Tokens of the logged tool schemas and system prompt, sent before the hidden head."""

    @property
    def warm_parts(self) -> tuple[int, ...]:
        """The head parts cached before the log."""
        parts, total = [], 0
        for part in self.head:
            if total >= self.warm:
                break
            parts.append(part)
            total += part
        return tuple(parts)


@dataclass(frozen=True)
class RequestFit:
    """What one request carried that the log does not show."""

    before: int = 0
    """Unlogged tokens appended before the request's last cache marker."""
    after: int = 0
    """Unlogged tokens appended after it (uncached on this request)."""
    tail: int = 0
    """Recorded tokens after the client's last marker (0: the marker ends the prompt)."""
    drop: tuple[Key, ...] = ()
    """Unlogged messages of earlier requests this one no longer carried."""
    shrunk: bool = False
    """`drop` was found from the billed prompt size (shrunk prompt), not from the read."""
    scaled: int = 0
    """Tokens the fit took off the texts first sent at this request (billed short of its
    replay): their fitted counts (`UnloggedContext.counts`)."""
    compaction: int | None = None
    """Event index of the logged compaction this request is its thread's first after, when the
    fit gave it unlogged tokens (None: none, or no residual to attribute). Those tokens are what
    the harness sent with that compaction (Claude Code re-attaches recent files, ~25k tokens on
    the entire-bmad sample): only a view that applied it carries them, one that still holds an
    event it replaced drops them for good."""


@dataclass
class UnloggedContext:
    """Everything fitted for one session (`fit_unlogged_context`)."""

    threads: dict[str, ThreadFit] = field(default_factory=dict)
    """Thread → its split hidden prefix (threads whose head no read revealed are absent)."""
    requests: dict[tuple[str, int], RequestFit] = field(default_factory=dict)
    """(thread, request event index) → what that request carried beyond the log."""
    grown: dict[str, int] = field(default_factory=dict)
    """Thread → tokens its hidden prefix grew by at its first request (what the logged texts
    after the client's marker gave up there: the prefix is the bill minus the rendered log)."""
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    """Tokenizer family → text → its fitted provider-scale count: the texts first sent at a
    request billed short of its replay, sized down to the bill (scaled counts). Every run
    counts them so (`replay.tokens.FittedCounter`)."""

    @classmethod
    def of(cls, value: UnloggedContext | Mapping[tuple[str, int], int] | None) -> UnloggedContext:
        """A fitted context, or a plain {(thread, event index): tokens} of residuals."""
        if isinstance(value, UnloggedContext):
            return value
        return cls(requests={k: RequestFit(before=int(v)) for k, v in (value or {}).items() if v})

    def __bool__(self) -> bool:
        return bool(self.threads or self.requests or self.grown or any(self.counts.values()))

    def residuals(self) -> dict[tuple[str, int], int]:
        """(thread, request event index) → unlogged tokens added at that request."""
        return {k: f.before + f.after for k, f in self.requests.items() if f.before + f.after}

    def scaled(self) -> dict[tuple[str, int], int]:
        """(thread, request event index) → tokens taken off the texts first sent then."""
        return {k: f.scaled for k, f in self.requests.items() if f.scaled}

    def resized(self, ratio: float) -> UnloggedContext:
        """The same context in another tokenizer's tokens (`ratio` = its tokens per token of
        the one the log was billed in): what the log does not hold has no text to count
        again, so its sizes are converted (an estimate, like them). The fitted text counts
        are per family and stay where they are."""
        if ratio == 1.0:
            return self

        def size(tokens: int) -> int:
            return round(tokens * ratio)

        return UnloggedContext(
            threads={
                name: replace(
                    fit, head=tuple(size(part) for part in fit.head), context=size(fit.context),
                    warm=size(fit.warm), logged=size(fit.logged),
                )
                for name, fit in self.threads.items()
            },
            requests={
                key: replace(fit, before=size(fit.before), after=size(fit.after),
                             tail=size(fit.tail))
                for key, fit in self.requests.items()
            },
            grown={name: size(tokens) for name, tokens in self.grown.items()},
            counts=self.counts,
        )


@dataclass
class ThreadUnlogged:
    """A thread's unlogged context while it is replayed."""

    context: UserItem | None = None
    """The first-message context (None: not split off, or dropped)."""
    items: dict[Key, UserItem] = field(default_factory=dict)
    """Unlogged messages in the thread's history."""
    dropped: set[UserItem] = field(default_factory=set)
    """Unlogged messages no longer sent (transient): they stay in the history, which strategies
    may index by position and which only ever grows, and are taken out of each view."""
    tail: int = 0
    """Uncached tail of the request being simulated (moves its last marker)."""
    restored: tuple[int, tuple[Key, ...]] | None = None
    """The logged compaction (event index) whose restored context the request being simulated
    added, and its keys: the view decides whether they stay (`RequestFit.compaction`)."""
    end: int = 0
    """Fitting only: where the previous request's last marker wrote (simulated)."""
    compactions: int = 0
    """Fitting only: logged compactions of the thread before the previous request (a new one
    explains a shorter read by itself)."""
    short: int = 0
    """Fitting only: tokens the previous request was billed short of its replay (a surplus of
    the replay the residual fit cannot remove)."""
    starts: list[tuple[tuple[Key, ...], int, int]] = field(default_factory=list)
    """Fitting only: the unlogged messages of the previous request that may have been transient
    (its first-message context; its own residual): (keys, where the cache entry before them
    ends, tokens)."""
    sent: _Sent | None = None
    """The last view filtered by `still_sent` (its work for the next view)."""
    _frozen: frozenset[UserItem] = frozenset()

    def dropped_now(self) -> frozenset[UserItem]:
        """`dropped` as it stands, one copy shared until it grows (it never shrinks)."""
        if len(self._frozen) != len(self.dropped):
            self._frozen = frozenset(self.dropped)
        return self._frozen


def as_sent(u: ThreadUnlogged, items: Sequence[Item]) -> list[Item]:
    """A strategy's items as the request sends them: without the unlogged messages no longer
    sent, after the thread's first-message context (re-sent on every request)."""
    items = still_sent(u, items)
    if u.context is not None and items:
        return [u.context, *items]
    return items


def still_sent(u: ThreadUnlogged, items: Sequence[Item]) -> list[Item]:
    """`items` without the unlogged messages the thread no longer sends. A view (a list) is
    filtered from where it parts from the previous one (`u.sent`): filtering each whole view
    made the replay quadratic in the history once a message was dropped."""
    if not (u.dropped and items):
        return items if isinstance(items, list) else list(items)
    if not isinstance(items, list):  # a summarizer call's transcript, filtered once
        return list(compress(items, map(not_, map(u.dropped.__contains__, items))))
    memo = u.sent
    if memo is None or memo.dropped != len(u.dropped):
        start, sent, kept = 0, [], array("q", [0])
    else:
        start = shared_prefix(memo.source, items)
        sent, kept = memo.items[: memo.kept[start]], memo.kept[: start + 1]
    flags = list(map(not_, map(u.dropped.__contains__, items[start:])))
    sent.extend(compress(items[start:], flags))
    kept.extend(accumulate(flags, initial=kept[-1]))
    kept.pop(start + 1)  # (`accumulate` repeats its initial value first)
    u.sent = _Sent(list(items), sent, kept, len(u.dropped))
    return list(sent)


@dataclass
class _Sent:
    """The last view `still_sent` filtered, for the next one (which mostly shares its start)."""

    source: list[Item]
    """A copy of that view (the strategy may change its own list later)."""
    items: list[Item]
    """Its items still sent."""
    kept: array
    """`kept[i]`: how many of `source[:i]` are still sent."""
    dropped: int
    """How many messages were dropped then (a new one filters the next view whole)."""


def call_as_sent(u: ThreadUnlogged, call: SummarizerCall) -> SummarizerCall:
    """A summarizer call as the request sends it. A forked call re-sends the view: as the
    request sends it, or it would part from the cached main prefix where the view drops an
    unlogged message. A fresh call is sent without the thread's head (its first-message context
    included) and without the unlogged messages no longer sent."""
    if call.reuse_main_prefix:
        return replace(call, input_items=tuple(as_sent(u, call.input_items)))
    if not u.dropped:
        return call
    return replace(call, input_items=tuple(still_sent(u, call.input_items)),
                   unlogged=tuple(still_sent(u, call.unlogged)))


def unlogged_item(tokens: int, event_index: int, counter: Any, part: str = "before") -> UserItem:
    """An estimated message of `tokens` tokens (framing included)."""
    where = " after the cache marker" if part == "after" else ""
    return UserItem(
        f"[context not in the log{where}: ~{tokens} tokens, estimated from the provider's usage]",
        event_index=event_index,
        injected=True,
        estimated_tokens=max(1, tokens - counter.family.message_overhead),
    )


def context_item(tokens: int, counter: Any) -> UserItem:
    """The first-message context of a thread whose hidden prefix was split."""
    return UserItem(
        f"[first-message context not in the log: ~{tokens} tokens, estimated from the "
        "provider's usage]",
        injected=True,
        estimated_tokens=max(1, tokens - counter.family.message_overhead),
    )


def hidden_prefix_of(owner: Any) -> int:
    """An adapter's estimate of the prefix the log does not hold (`hidden_prefix_tokens` on the
    header or a thread start; 0 if none)."""
    value = getattr(owner, "hidden_prefix_tokens", 0)
    return int(value) if isinstance(value, int | float) and value > 0 else 0


def thread_hidden_prefix(start: Any, header: Any) -> int:
    """The hidden prefix of a subagent thread: its `thread` event's own, else the session's
    when the thread is sent the session's system prompt (its event gives none of its own: the
    same head, as docs/log-format.md reads it), else 0 (its own system prompt is all its head
    the log shows)."""
    if getattr(start, "hidden_prefix_tokens", None) is not None:
        return hidden_prefix_of(start)
    return hidden_prefix_of(header) if getattr(start, "system", None) is None else 0


def fit_heads(
    session: Session,
    explicit: Callable[[RequestMarker, str], bool],
    logged: Callable[[str, str], int],
) -> dict[str, ThreadFit]:
    """Split each thread's hidden prefix where the recorded reads show its head ends, and find
    the heads cached before the log.

    Reads (and first-request writes) strictly inside a hidden prefix can only stop at a marker
    of the head: the largest one over the threads sharing the head is its end. The first of
    those threads to send a request found what its read shows in the cache already. `explicit`
    tells whether a request's cache shows marker positions (explicit breakpoints), given the
    request and its thread's model; `logged`
    counts the logged tools + system prompt sent before the hidden prefix (system, model)."""
    header = session.header
    hidden = {MAIN_THREAD: hidden_prefix_of(header)}
    kinds: dict[str, tuple[str, str]] = {MAIN_THREAD: (header.system, header.model)}
    for e in session.events:
        if isinstance(e, ThreadStart):
            hidden[e.thread_id] = thread_hidden_prefix(e, header)
            system = e.system if e.system is not None else header.system
            kinds[e.thread_id] = (system, e.model or header.model)
    requests: dict[str, list[tuple[int, RequestMarker]]] = {}
    for n, e in enumerate(session.events):
        if isinstance(e, RequestMarker) and e.thread not in hidden:  # opened by no event:
            hidden[e.thread] = hidden[MAIN_THREAD]  # sent the session's head, as the engine does
            kinds[e.thread] = kinds[MAIN_THREAD]
        if (
            isinstance(e, RequestMarker)
            and e.usage is not None
            and hidden.get(e.thread, 0) > 0
            and explicit(e, kinds[e.thread][1])
        ):
            requests.setdefault(e.thread, []).append((n, e))
    groups: list[list[str]] = []  # threads sharing a head, in order of their first request
    for thread in sorted(requests, key=lambda t: requests[t][0][0]):
        size = hidden[thread]
        for group in groups:
            other = hidden[group[0]]
            if kinds[group[0]] == kinds[thread] and abs(other - size) <= read_tolerance(
                max(other, size)
            ):
                group.append(thread)
                break
        else:
            groups.append([thread])
    fits: dict[str, ThreadFit] = {}
    for group in groups:
        before = logged(*kinds[group[0]])  # positions below are within the hidden prefix
        limit = min(hidden[t] for t in group)
        limit -= read_tolerance(limit)
        reveals = [
            x - before
            for t in group
            for _, m in requests[t]
            for x in (m.usage.cache_read_tokens, m.usage.cache_read_tokens + _written(m))
            if 0 < x - before <= limit
        ]
        _, first = min((requests[t][0] for t in group), key=lambda r: r[0])
        read = first.usage.cache_read_tokens - before
        tol = read_tolerance(first.usage.prompt_tokens)
        if not reveals:
            whole = hidden[first.thread]
            if read > 0 and abs(read - whole) <= tol and whole - read >= TAIL_MIN:
                # Warm up to where the read stops, short of the whole hidden prefix: the head
                # ends there, the rest is first-message context (sized from the logged text's
                # count, which the read does not depend on).
                fits[first.thread] = ThreadFit((read,), whole - read, read, before)
            elif read > 0 and abs(read - whole) <= tol:  # the whole hidden prefix, warm
                fits[first.thread] = ThreadFit((whole,), warm=whole, logged=before)
            continue
        head = max(reveals)
        parts, warm = (head,), 0
        if read > 0 and abs(read - head) <= tol:
            warm = head
        elif 0 < read < head - tol:
            parts, warm = (read, head - read), read
        for t in group:
            fits[t] = ThreadFit(parts, hidden[t] - head, warm if t == first.thread else 0, before)
    return fits


def _written(marker: RequestMarker) -> int:
    u = marker.usage
    return u.cache_write_5m_tokens + u.cache_write_1h_tokens if u else 0


def place_last_marker(
    breakpoints: list[Breakpoint], request: RenderedRequest, tail: int
) -> list[Breakpoint]:
    """Move the last message marker to the block end nearest `tail` tokens before the end of
    the prompt (before the first message: no message marker; the head marker stays)."""
    head = request.kind_index.head_end + 1  # blocks of tools + system prompt
    if not breakpoints or breakpoints[-1].block < head:
        return breakpoints
    cum = request.cum_tokens
    block = nearest_end(cum, head, int(cum[-1]) - tail)
    last = breakpoints[-1]
    if block == last.block:
        return breakpoints
    kept = breakpoints[:-1]
    if block < head or any(b.block >= block for b in kept):
        return kept
    return [*kept, Breakpoint(block, last.ttl, last.automatic)]


def transient(state: ThreadUnlogged, read: int, prompt: int) -> tuple[Key, ...]:
    """The unlogged messages of the previous request that this request's read shows were not
    sent again as they were: the read stops at the cache entry before them, short of where the
    previous request wrote, and they are too long to be the tolerance's noise."""
    tol = read_tolerance(prompt)
    if not state.starts or read <= 0 or read >= state.end - tol:
        return ()
    hits = [
        (abs(start - read), keys)
        for keys, start, tokens in state.starts
        if tokens > tol and abs(start - read) <= tol
    ]
    return min(hits)[1] if hits else ()


def new_texts(
    table: BlockTable, request: RenderedRequest, since: int, counts: Mapping[str, int]
) -> tuple[np.ndarray, np.ndarray]:
    """The blocks of `request` whose counts the fit may size down: those it sends for the first
    time (interned from `since` on), as (positions in the request, body tokens). Blocks known
    only by their size (fitted context, unlogged thinking), the head (tools, system prompt),
    thinking (billed or stripped by rules of its own) and texts fitted already are left out."""
    ids = request.block_ids
    positions = np.flatnonzero(ids >= since)
    blocks = table.blocks
    kept, bodies = [], []
    for n, b in zip(positions.tolist(), ids[positions].tolist(), strict=True):
        info = blocks[b]
        body = info.tokens - info.overhead
        if (
            body > 0
            and not info.sized_only
            and info.kind not in (TOOL, SYSTEM, THINKING)
            and info.text is not None
            and info.text not in counts
        ):
            kept.append(n)
            bodies.append(body)
    return np.asarray(kept, dtype=np.int64), np.asarray(bodies, dtype=np.int64)


def nearest_end(cum: np.ndarray, head: int, target: float) -> int:
    """The block whose end is nearest `target` tokens into the prompt, among the head's last
    block and the message blocks (ties: the later): where a client marker moved back to
    `target` lands."""
    lo = max(head - 1, 0)
    at = int(np.searchsorted(cum, target))
    candidates = [j for j in (at - 1, at) if lo <= j < len(cum)] or [lo]
    return min(candidates, key=lambda j: (abs(float(cum[j]) - target), -j))


def scaled_ends(request: RenderedRequest, positions: np.ndarray, bodies: np.ndarray,
                deficit: int) -> np.ndarray:
    """`request.cum_tokens` once the bodies at `positions` are sized down by `deficit` tokens in
    all, in proportion to their size."""
    if not deficit:
        return request.cum_tokens
    shift = np.zeros(len(request.cum_tokens), dtype=np.float64)
    shift[positions] = bodies * (deficit / bodies.sum())
    return request.cum_tokens - np.cumsum(shift)


@dataclass(frozen=True)
class MarkerSplit:
    """Where the client's last marker sits among a request's blocks, and how far the logged
    text before it is over-counted."""

    block: int
    """The block the marker follows (as `place_last_marker` puts it)."""
    excess: int
    """Tokens the blocks up to `block` render beyond where the bill puts the marker (negative:
    short of it)."""


def marker_split(request: RenderedRequest, positions: np.ndarray, bodies: np.ndarray,
                 deficit: int, gap: int, tail: int, overhead: int) -> MarkerSplit | None:
    """Where the marker `tail` tokens before the end of the billed prompt sits once the new
    texts (`positions`, `bodies`) are sized down by `deficit` tokens in proportion and the
    residual is added after them, and how much the blocks before it over-count the billed
    prefix (`gap`: billed minus replayed tokens). None when the residual after the marker
    explains the tail. The billed marker lies `tail` tokens before the billed end, whatever
    the split: at `total + gap - tail` in the request's own positions."""
    residual = gap + deficit if gap + deficit > overhead else 0
    if residual >= tail or not len(request.cum_tokens):
        return None
    cum = scaled_ends(request, positions, bodies, deficit)
    head = request.kind_index.head_end + 1
    block = nearest_end(cum, head, float(cum[-1]) + residual - tail)
    total = int(request.cum_tokens[-1])
    return MarkerSplit(block, int(request.cum_tokens[block]) - (total + gap - tail))


def kept_shares(positions: np.ndarray, bodies: np.ndarray, deficit: int,
                split: MarkerSplit | None, overhead: int) -> np.ndarray | None:
    """Share of each new body (`positions`, `bodies`) the fit keeps, or None to keep them all.
    `deficit` tokens (the request billed short) go in proportion, unless the marker's position
    says how they split: the texts before it give up what they over-count there (`split`),
    those after it the rest of the deficit (none below zero)."""
    shares = np.ones(len(positions), dtype=np.float64)
    if split is not None and split.excess > overhead:
        before = positions <= split.block
        room_before, room_after = int(bodies[before].sum()), int(bodies[~before].sum())
        if split.excess <= room_before:
            after = max(0, min(room_after, deficit - split.excess))
            shares[before] = 1 - split.excess / room_before
            if after:
                shares[~before] = 1 - after / room_after
            return shares
    if deficit <= 0:
        return None
    return shares * max(0.0, 1 - deficit / int(bodies.sum()))


def scale_new_texts(
    table: BlockTable, request: RenderedRequest, positions: np.ndarray, shares: np.ndarray,
    counts: dict[str, int],
) -> int:
    """Size the bodies at `positions` of `request` (`new_texts`) down to `shares` of their
    count, record their new counts in `counts`; returns the tokens taken off the request. The
    blocks are rewritten in place in `table`, the fitting run's own: rendered requests that
    hold the old counts must not be extended again."""
    blocks = table.blocks
    ids = request.block_ids[positions].tolist()
    taken: dict[int, int] = {}
    for b, share in zip(ids, shares.tolist(), strict=True):
        if b not in taken:  # a block sent twice keeps the share of its first place
            info = blocks[b]
            body = info.tokens - info.overhead
            fitted = round(body * share)
            taken[b] = body - fitted
            blocks[b] = replace(info, tokens=info.overhead + fitted)
            counts[info.text] = fitted  # type: ignore[index]  # new_texts keeps blocks with text
    return sum(taken[b] for b in ids)  # and is taken off twice


def shrunk(
    state: ThreadUnlogged, sent: list[Any], deficit: int, overhead: int
) -> Key | None:
    """The estimated message among `sent` (the request's view) that a prompt billed `deficit`
    tokens short of its replay no longer carried: the newest whose size (`overhead` framing
    included) is `deficit` to `deficit + SHRINK_SLACK` tokens (None when the shortfall is noise
    or no message fits it)."""
    if deficit <= SHRINK_MIN or not state.items:
        return None
    in_view = set(sent)  # items hash by identity
    for key in reversed(state.items):
        item = state.items[key]
        tokens = (item.estimated_tokens or 0) + overhead
        if item in in_view and deficit <= tokens <= deficit + SHRINK_SLACK:
            return key
    return None


class Unlogged:
    """The unlogged context of one replay run: applies a fitted `UnloggedContext` to its
    threads and requests or, in the run that fits it (`recorded`, `fitting`), measures it.
    The run calls it at five points: a thread's creation, before and after the strategy's
    view, when placing cache markers, after the request."""

    def __init__(self, run: _Run, fit: UnloggedContext, fitting: bool, signed: bool = True
                 ) -> None:
        self.run = run
        self.fit = fit
        """What is applied (being filled while `fitting`)."""
        self.fitting = fitting
        self.signed = signed
        """Fitting: a request billed short of its replay sizes down the texts it sent first
        (scaled counts); else the shortfall is only carried until later requests fill it."""

    def counter(self, model: str) -> TokenCounter | FittedCounter:
        """The counter the run renders `model` with: the family's shared one, seen through the
        counts fitted for this session (in a `replay batch` chain too: its sessions share
        block ids, not counts, `replay/engine/_chain.py`)."""
        base = counter_for(model)
        if not base.family.estimated:
            return base
        if self.fitting and self.signed:
            return fitted_counter(base, self.fit.counts.setdefault(base.family.family, {}))
        return fitted_counter(base, self.fit.counts.get(base.family.family) or None)

    # -- what the provider shows --------------------------------------------------------------

    def explicit(self, provider: str, model: str, ts: datetime) -> bool:
        """Whether the cache of (provider, model) shows marker positions in its usage."""
        cache = self.run.cache
        route = cache.route(provider, model)
        book = cache.book(route, route.variant)
        return book.get("mechanism", route.rules_model, ts) == "explicit-breakpoints"

    def explicit_marker(self, marker: RequestMarker, thread_model: str | None = None) -> bool:
        """Whether `marker`'s cache shows marker positions, on the model the engine runs it on:
        the call's own, else its thread's (`thread_model`), else the header's."""
        config, header = self.run.config, self.run.session.header
        model = config.model or marker.model or thread_model or header.model
        provider = config.provider or marker.provider or header.provider
        return self.explicit(provider, model, marker.ts)

    def logged_head(self, system: str, model: str) -> int:
        """Tokens of the logged tool schemas and system prompt (what precedes hidden blocks)."""
        run = self.run
        header = run.session.header
        model = run.config.model or model
        return run.renderer(model).render(
            [], system=system, tools=header.tools, index=0, request_id="head", thread="/head",
            ts=header.ts, model=model, provider=run.provider,
        ).total

    def billed_size(self, request: RenderedRequest, provider: str, model: str) -> int:
        """Prompt size as the provider bills it (older Claude models and OpenAI reasoning models
        drop earlier thinking; context fitted earlier is not a user turn)."""
        cache = self.run.cache
        route = cache.route(provider, model)
        book = cache.book(route, route.variant)
        strips = bool(book.get("strips_thinking", route.rules_model, request.ts, False))
        return prompt_view(request, strips, self.run.renderer(model).table).total

    # -- hooks --------------------------------------------------------------------------------

    def split_head(self, name: str, state: _Thread) -> None:
        """A new thread: send its hidden prefix as head + first-message context, when fitted
        (grown by what the texts after the marker of its first request gave up)."""
        fit = self.fit.threads.get(name)
        grown = self.fit.grown.get(name, 0)
        if (fit is None and not grown) or not state.hidden_tokens:
            return
        counter = self.run.renderer(state.model or self.run.session.header.model).table.counter
        if fit is not None:
            state.hidden_tokens = fit.head
            if fit.context > 0:
                state.unlogged.context = context_item(fit.context, counter)
        if grown:
            self._grow(state, grown, counter)

    @staticmethod
    def _grow(state: _Thread, tokens: int, counter: Any) -> None:
        """Add `tokens` to the thread's hidden prefix: to its first-message context when split
        off (the head's marker stays where the reads showed it), else to its last part."""
        u = state.unlogged
        if u.context is not None:
            size = (u.context.estimated_tokens or 0) + counter.family.message_overhead
            u.context = context_item(size + tokens, counter)
        elif isinstance(state.hidden_tokens, tuple):
            *parts, last = state.hidden_tokens
            state.hidden_tokens = (*parts, last + tokens)
        else:
            state.hidden_tokens += tokens

    def before_view(self, marker: RequestMarker, event_index: int, state: _Thread,
                    counter: Any, provider: str, model: str) -> None:
        """Before the strategy sees the history: what was fitted for this request (while
        fitting: only whether a message of the previous request was transient)."""
        u = state.unlogged
        u.tail = 0
        key = (marker.thread, event_index)
        if self.fitting:
            usage = marker.usage
            gone: tuple[Key, ...] = ()
            compacted = len(state.compactions) != u.compactions
            if usage is not None and not compacted and self.explicit(provider, model, marker.ts):
                gone = transient(u, usage.cache_read_tokens, usage.prompt_tokens)
            u.starts = []
            for item in gone:
                self._drop(state, item)
            if gone:
                self.fit.requests[key] = RequestFit(drop=gone)
            return
        fit = self.fit.requests.get(key)
        if fit is None:
            return
        for gone in fit.drop:
            self._drop(state, gone)
        added = []
        for part, tokens in (("before", fit.before), ("after", fit.after)):
            if tokens > 0:
                self._add(state, tokens, event_index, part, counter)
                added.append((event_index, part))
        u.tail = fit.tail
        u.restored = (fit.compaction, tuple(added)) if fit.compaction is not None and added \
            else None

    def after_view(self, marker: RequestMarker, event_index: int, request_index: int,
                   state: _Thread, view: View, model: str, provider: str,
                   renderer: Renderer) -> None:
        """The strategy's view: the first-message context goes first (re-sent on every
        request); the fitting run measures the residual; a warm start seeds the cache."""
        if state.unlogged.restored is not None:
            self._keep_restored(state, view, renderer.table.counter.family.message_overhead)
        view.items = as_sent(state.unlogged, view.items)
        if view.summarizer_calls:
            view.summarizer_calls = [call_as_sent(state.unlogged, c) for c in view.summarizer_calls]
        if self.fitting and marker.usage is not None and view.items:
            self._measure(marker, event_index, request_index, state, view, model, provider,
                          renderer)
        if state.previous is None:
            fit = self.fit.threads.get(marker.thread)
            if fit is not None and fit.warm:
                self._seed(marker, request_index, state, model, provider, renderer,
                           fit.warm_parts)

    def markers(self, breakpoints: list[Breakpoint], request: RenderedRequest,
                state: _Thread) -> list[Breakpoint]:
        """The client's markers for a recorded request, the last one where the usage put it."""
        tail = state.unlogged.tail
        return place_last_marker(breakpoints, request, tail) if tail else breakpoints

    def after_request(self, record: RequestRecord, state: _Thread, event_index: int) -> None:
        """Fitting: where this request's marker wrote, and the cache entries before its possibly
        transient unlogged messages: the head's (before the first-message context), the one
        this request read (before its own residual, which follows all it read)."""
        if not self.fitting:
            return
        u = state.unlogged
        o = record.outcome
        u.end = o.cache_read + o.cache_write_5m + o.cache_write_1h
        u.starts = []
        u.compactions = len(state.compactions)
        if not self.explicit(record.provider, record.model, record.ts):
            return
        fit = self.fit.requests.get((record.thread, event_index))
        if fit is not None and fit.before + fit.after:
            parts = (("before", fit.before), ("after", fit.after))
            keys = tuple((event_index, p) for p, tokens in parts if tokens)
            u.starts.append((keys, o.cache_read, fit.before + fit.after))
        thread_fit = self.fit.threads.get(record.thread)
        if u.context is not None and thread_fit is not None:
            request = record.request
            head = request.kind_index.head_end + 1
            start = int(request.cum_tokens[head - 1]) if head else 0
            u.starts.append(((CONTEXT,), start, thread_fit.context))

    # -- internals ----------------------------------------------------------------------------

    def _keep_restored(self, state: _Thread, view: View, overhead: int) -> None:
        """The context the harness sent with a logged compaction stays only in a view that
        applied it: one that still holds an event it replaced (no compaction there, or another
        one) drops it for good, and the marker no longer sits before its uncached share (which
        leaves the uncached tail with its framing, `overhead` tokens: `unlogged_item`)."""
        u = state.unlogged
        (compaction, keys), u.restored = u.restored, None
        replaced = next((c.replaced for c in state.compactions if c.event_index == compaction),
                        None)
        if replaced is None or not any(getattr(i, "event_index", -1) in replaced
                                       for i in view.items):
            return
        for key in keys:
            item = u.items.get(key)
            if item is not None:
                u.dropped.add(item)
                if key[1] == "after":
                    u.tail = max(0, u.tail - (item.estimated_tokens or 0) - overhead)

    def _drop(self, state: _Thread, key: Key) -> None:
        u = state.unlogged
        if key == CONTEXT:
            if u.context is not None:  # (a break-even counterfactual built from an earlier
                u.dropped.add(u.context)  # view, which still holds it, leaves it out too)
            u.context = None
            return
        item = u.items.pop(key, None)
        if item is not None:
            u.dropped.add(item)

    def _add(self, state: _Thread, tokens: int, event_index: int, part: str,
             counter: Any) -> UserItem:
        item = unlogged_item(tokens, event_index, counter, part)
        state.history.append(item)
        state.unlogged.items[(event_index, part)] = item
        return item

    def _measure(self, marker: RequestMarker, event_index: int, request_index: int,
                 state: _Thread, view: View, model: str, provider: str,
                 renderer: Renderer) -> None:
        """What the provider counted that the log does not show, added to the history as
        estimated messages (every later request carries them too): the share after the
        client's last marker (the recorded uncached tail) as a message of its own."""
        run = self.run
        since = len(renderer.table)  # blocks interned from here on are sent for the first time
        preview = renderer.render(
            view.items,
            system=state.system,
            tools=run.session.header.tools,
            index=request_index,
            request_id=marker.request_id,
            thread=run.lane + marker.thread + "/fit",
            ts=marker.ts,
            model=model,
            provider=provider,
            hidden_tokens=state.hidden_tokens,
            head_version=state.head_version,
        )
        usage = marker.usage
        counter = renderer.table.counter
        overhead = counter.family.message_overhead
        explicit = self.explicit(provider, model, marker.ts)
        tail = usage.input_tokens if explicit and usage.input_tokens >= TAIL_MIN else 0
        gap = usage.prompt_tokens - self.billed_size(preview, provider, model)
        key = (marker.thread, event_index)
        u = state.unlogged
        # Only a shortfall that appears at this request: one the previous request showed already
        # (a surplus the residual fit cannot remove) shrinks as later requests add unlogged
        # tokens, and is no message going away.
        gone = None if explicit else shrunk(u, view.items, -gap - u.short, overhead)
        if gone is not None:
            # The billed prompt is short of an estimated message: it was not sent again.
            item = state.unlogged.items[gone]
            gap += (item.estimated_tokens or 0) + overhead
            self._drop(state, gone)
            view.items = [i for i in view.items if i is not item]
            self.fit.requests[key] = RequestFit(drop=(gone,), shrunk=True)
        scaled = 0
        if isinstance(counter, FittedCounter):
            scaled = self._scale(preview, renderer, since, gap, u.short, tail, overhead)
            if not scaled and tail and state.previous is None and state.hidden_tokens:
                self._first_tail(marker, state, view, preview, renderer, since, gap, tail)
            if scaled:
                gap += scaled
                # The preview's blocks hold the old counts: its lane is rendered afresh.
                renderer.forget_thread(run.lane + marker.thread + "/fit")
        before = after = 0
        if gap > overhead:
            after = min(gap, tail) if min(gap, tail) > overhead else 0
            before = gap - after
            if before <= overhead:
                before, after = 0, gap
        for part, tokens in (("before", before), ("after", after)):
            if tokens > 0:
                item = self._add(state, tokens, event_index, part, counter)
                if view.items is not state.history:
                    view.items.append(item)
        u.short = max(0, -gap)
        done = self.fit.requests.get(key, RequestFit())
        if before or after or tail or done.drop or scaled:
            # The thread's first request after a logged compaction (`after_request` counts them).
            compacted = bool(before or after) and len(state.compactions) != u.compactions
            compaction = state.compactions[-1].event_index if compacted else None
            self.fit.requests[key] = RequestFit(before, after, tail, done.drop, done.shrunk,
                                                scaled, compaction)
        state.unlogged.tail = tail

    def _scale(self, preview: RenderedRequest, renderer: Renderer, since: int, gap: int,
               short: int, tail: int, overhead: int) -> int:
        """Signed fit: the tokens to take off the texts `preview` sends first (0: none). A
        request billed short of its replay beyond the previous request's own shortfall
        (`short`) over-counts them (text below the family's average ratio, or not all of it
        sent), and so do the texts before the client's last marker when it lies further back
        than the bill shows (`marker_split`: Claude Code 2.1 renders attachments after its
        marker, which the log does not hold). They carry their own correction, and leave the
        prompt with their items."""
        table = renderer.table
        counts = self.fit.counts[table.counter.family.family]
        positions, bodies = new_texts(table, preview, since, counts)
        if not len(positions):
            return 0
        deficit = -gap - short
        deficit = min(deficit, int(bodies.sum())) if deficit > overhead else 0
        split = (
            marker_split(preview, positions, bodies, deficit, gap, tail, overhead)
            if tail else None
        )
        shares = kept_shares(positions, bodies, deficit, split, overhead)
        if shares is None:
            return 0
        return scale_new_texts(table, preview, positions, shares, counts)

    def _first_tail(self, marker: RequestMarker, state: _Thread, view: View,
                    preview: RenderedRequest, renderer: Renderer, since: int, gap: int,
                    tail: int) -> None:
        """A thread's first request, whose hidden prefix the adapter sized as the bill minus the
        rendered log, so its total matches by construction: when the logged texts after the
        client's marker render more than the billed tail, they are sized down to it, and the
        hidden prefix, before the marker, takes the tokens they give up."""
        table = renderer.table
        counter = table.counter
        overhead = counter.family.message_overhead
        counts = self.fit.counts[counter.family.family]
        positions, bodies = new_texts(table, preview, since, counts)
        split = marker_split(preview, positions, bodies, 0, gap, tail, overhead)
        if split is None or -split.excess <= overhead:
            return
        after = positions > split.block
        positions, bodies = positions[after], bodies[after]
        room = int(bodies.sum())
        if room < -split.excess:
            return
        shares = np.full(len(positions), 1 + split.excess / room)
        taken = scale_new_texts(table, preview, positions, shares, counts)
        context = state.unlogged.context
        self._grow(state, taken, counter)
        if context is not None and view.items and view.items[0] is context:
            view.items[0] = state.unlogged.context  # type: ignore[assignment]
        self.fit.grown[marker.thread] = taken
        renderer.forget_thread(self.run.lane + marker.thread + "/fit")

    def _seed(self, marker: RequestMarker, request_index: int, state: _Thread, model: str,
              provider: str, renderer: Renderer, parts: tuple[int, ...]) -> None:
        """Warm start: a request before the log left (part of) the thread's head cached."""
        run = self.run
        header = run.session.header
        request = renderer.render(
            [],
            system=state.system,
            tools=header.tools,
            index=request_index,
            request_id=marker.request_id + ":before-the-log",
            thread=run.lane + marker.thread + "/before-the-log",
            ts=marker.ts,
            model=model,
            provider=provider,
            hidden_tokens=parts,
        )
        sim = SimRequest(
            request,
            run.profile.breakpoints(request, marker.thread),
            run.scope,
            prefix_diff(None, request, renderer.table),
            None,
            renderer.table,
            cache_key=run.profile.key_for(marker.thread, header.session_id),
            profile=run.profile,
        )
        run.cache.simulate(sim, run.store)


__all__ = [
    "CONTEXT",
    "SHRINK_MIN",
    "SHRINK_SLACK",
    "TAIL_MIN",
    "RequestFit",
    "ThreadFit",
    "ThreadUnlogged",
    "Unlogged",
    "UnloggedContext",
    "context_item",
    "fit_heads",
    "place_last_marker",
    "read_tolerance",
    "MarkerSplit",
    "kept_shares",
    "marker_split",
    "nearest_end",
    "new_texts",
    "scale_new_texts",
    "scaled_ends",
    "shrunk",
    "transient",
    "unlogged_item",
]
