"""The interface every provider simulator implements, what it returns, and the shared pieces:
the prompt as the provider sees it (after server-side stripping), and miss causes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from itertools import chain
from typing import Any, Literal

import numpy as np

from replay.cache._rules import _MISSING, RuleBook, utc_date
from replay.cache._store import CacheStore, Entry
from replay.prefix import PrefixDiff
from replay.render import BlockTable, RenderedRequest, first_difference
from replay.render._request import (
    KIND_CODES,
    SIZED_ONLY,
    THINKING_CODE,
    TURN_CODES,
    IntsView,
    KindNames,
    chain_keys,
    kind_code_set,
    positions_after,
    positions_of,
)

Ttl = Literal["5m", "1h"]

# Miss-cause kinds (the stable part of `CacheOutcome.miss_kind`; docs/cache-rules.md "Causes").
COLD_START = "cold-start"
TTL_EXPIRED = "ttl-expired"
PREFIX_EDITED = "prefix-edited"
MODEL_SWITCH = "model-switch"
TOOLS_CHANGED = "tools-changed"
SYSTEM_CHANGED = "system-changed"
BELOW_MINIMUM = "below-minimum"
BEYOND_LOOKBACK = "beyond-lookback"
NOT_READY = "not-ready"
OTHER_SCOPE = "other-scope"
THINKING_STRIPPED = "thinking-stripped"
NO_BREAKPOINT = "no-breakpoint"

MISS_KINDS: dict[str, str] = {
    COLD_START: "first request of a thread with nothing cached for it (not counted as a miss)",
    TTL_EXPIRED: "the entry holding the prefix outlived its TTL (the idle gap is given)",
    PREFIX_EDITED: "the strategy rewrote the prompt at message N (or shortened it)",
    MODEL_SWITCH: "the request went to another model than the thread's previous one",
    TOOLS_CHANGED: "the tool definitions differ from the previous request's",
    SYSTEM_CHANGED: "the system prompt differs from the previous request's",
    BELOW_MINIMUM: "the prefix is shorter than the model's minimum cacheable length",
    BEYOND_LOOKBACK: "a live entry exists but no breakpoint's lookback (or lookup set) reaches it",
    NOT_READY: "written by a parallel request whose response had not begun yet",
    OTHER_SCOPE: "the prefix is cached under another scope (workspace, prompt_cache_key)",
    THINKING_STRIPPED: "the provider stripped earlier thinking blocks at a new user turn",
    NO_BREAKPOINT: "the client sent no cache breakpoint on a provider that needs one",
}


@dataclass(frozen=True)
class Breakpoint:
    """A cache breakpoint: an entry is written for the prefix ending at `block`."""

    block: int
    ttl: Ttl = "5m"
    automatic: bool = False
    """The top-level automatic `cache_control` (Anthropic): placed on the last cacheable block."""


@dataclass(frozen=True)
class CacheOutcome:
    """How one request's prompt splits into disjoint buckets under the provider's cache.

    uncached + cache_read + cache_write_5m + cache_write_1h = the prompt's billed tokens, always
    (the rendered prompt minus `dropped_tokens`).
    """

    uncached: int
    """Tokens billed at the full input rate."""
    cache_read: int
    """Tokens read from a live cache entry."""
    cache_write_5m: int
    """Tokens written with a 5-minute (or the provider's default) lifetime."""
    cache_write_1h: int
    """Tokens written with a 1-hour lifetime."""
    miss_cause: str | None = None
    """Why the request read less than it could have (None = no miss), in words."""
    miss_kind: str | None = None
    """The cause's kind, one of `MISS_KINDS` (stable, for counting)."""
    storage_usd: Decimal = Decimal(0)
    """A provider storage fee charged with this request (Gemini explicit cachedContents:
    tokens × hours × rate), on top of the token price."""
    created_tokens: int = 0
    """Tokens of an explicit cache a separate call created for this request (Gemini
    `cachedContents.create`), billed once at the input rate; in no bucket: the request itself
    then reads them (`cache_read`)."""
    price_factor: Decimal = Decimal(1)
    """Multiplier on the genai-prices price (Vertex regional endpoints: 1.1)."""
    dropped_tokens: int = 0
    """Rendered tokens the provider removed before caching and billing (thinking blocks that
    older Claude models strip); in no bucket."""
    route: str = ""
    """Rule file and variant used, e.g. `anthropic`, `anthropic/bedrock`, `openrouter>openai`."""
    mechanism: str = ""
    """Mechanism in force (`RULE_TYPES["mechanism"]`)."""
    ttl_choice: bool = False
    """The client picked the TTL of what it wrote (`CacheSimulator.ttl_choice`)."""

    @property
    def prompt(self) -> int:
        return self.uncached + self.cache_read + self.cache_write_5m + self.cache_write_1h


@dataclass
class SimRequest:
    """What a simulator gets for one request."""

    request: RenderedRequest
    breakpoints: list[Breakpoint]
    scope: str
    """Cache isolation scope (the router prefixes the provider route and, where the provider
    isolates by it, the client's cache key)."""
    diff: PrefixDiff
    """Prefix diff against the previous request of the same thread."""
    previous: RenderedRequest | None
    """Previous request of the same thread."""
    table: BlockTable
    """Block contents, for token-level comparison inside a differing block."""
    cache_key: str | None = None
    """The client's `prompt_cache_key` / conversation id, if it sends one."""
    profile: Any = None
    """The client profile (`ClientProfile`), when known."""
    duration_s: float | None = None
    """Logged request duration (start to end of response), when known."""
    rules_model: str = ""
    """Model id normalized for rule patterns (set by the router)."""
    forced_ttl: str | None = None
    """The TTL the user forced (`--ttl`): every breakpoint carries it already; a cache that
    asks the client for a TTL without breakpoints (Kimi K3's automatic prefix) takes it too."""

    @property
    def lane(self) -> str:
        """The sequential lane of this request: its thread, with a strategy's summarizer calls
        counted in the thread that made them (they run before its next request)."""
        return conversation_lane(self.request.thread)

    @property
    def model(self) -> str:
        return self.rules_model or self.request.model


def conversation_lane(thread: str) -> str:
    """The conversation a request's cache thread belongs to: `main/summarizer` is `main`'s. In
    batch replays the thread follows its lane (`s0|STRATEGY|main`), whose strategy name may
    hold a slash of its own (`[protected=mcp/fs]`): only the thread's part is cut there."""
    head, bar, thread_name = thread.rpartition("|")
    return head + bar + thread_name.split("/")[0]


# --------------------------------------------------------------------------------------------
# The prompt as the provider sees it


@dataclass
class PromptView:
    """The prompt after server-side rewriting (thinking stripping): arrays over kept blocks."""

    ids: np.ndarray
    cum: np.ndarray
    block_kinds: Sequence[str]
    """Kind of each block: the request's own (shared, list-like) sequence when nothing was
    dropped, else the kept blocks' codes read as names (`KindNames`); `kinds` is the same as a
    list."""
    positions: np.ndarray
    """Lookback positions with runs of tool_use (or tool_result) blocks collapsed."""
    keys: Sequence[int]
    """Chained prefix keys (equal to the request's up to the first dropped block; an
    `IntsView` when some were dropped)."""
    kept: np.ndarray | None = None
    """Original block index of each kept block (None: nothing dropped)."""
    dropped_tokens: int = 0
    _kinds: list[str] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def kinds(self) -> list[str]:
        """`block_kinds` as a list, made on first use: a simulator that loops over every block
        indexes a list fastest, one that looks at a few blocks uses `block_kinds`."""
        if self._kinds is None:
            kinds = self.block_kinds
            self._kinds = kinds if isinstance(kinds, list) else list(kinds)
        return self._kinds

    @property
    def total(self) -> int:
        return int(self.cum[-1]) if len(self.cum) else 0

    def __len__(self) -> int:
        return len(self.ids)

    def tokens(self, block: int) -> int:
        return int(self.cum[block]) if block >= 0 else 0

    def map_block(self, original: int) -> int:
        """Index in the view of original block `original` (or of the nearest kept block before
        it; -1 if none)."""
        if self.kept is None:
            return original
        return int(np.searchsorted(self.kept, original, side="right")) - 1


def collapsed_positions(kinds: Sequence[str]) -> np.ndarray:
    """Lookback position of each block: a run of tool_call (or tool_result) blocks is one."""
    codes = np.fromiter((KIND_CODES[k] for k in kinds), dtype=np.int8, count=len(kinds))
    return positions_of(codes)


_IS_TURN = kind_code_set(TURN_CODES)


def prompt_view(
    req: RenderedRequest, strip_thinking: bool = False, table: BlockTable | None = None
) -> PromptView:
    """`req` as the provider caches and bills it. With `strip_thinking`, every thinking block
    before the last non-tool_result user turn is removed (older Claude models, all Haiku, OpenAI
    reasoning models). With `table`, a user block known only by its size (context the log does
    not hold, fitted on recorded usage) is not a user turn: nobody sent a message there."""
    index = req.kind_index if strip_thinking else None
    last_turn = -1 if index is None else _last_turn(req, index.last_turn, table)
    if index is None or not 0 <= index.first_thinking < last_turn:
        return PromptView(
            req.block_ids, req.cum_tokens, req.kinds, req.positions, req.prefix_keys
        )
    keep = index.codes != THINKING_CODE
    keep[last_turn:] = True
    kept = keep.nonzero()[0]
    ids = req.block_ids[kept]
    cum = req.block_tokens[kept].cumsum()
    codes = index.codes[kept]
    keys, positions = _stripped_columns(req, ids, codes, index.first_thinking)
    # Views are built per request: names, positions and keys as arrays, no per-block Python.
    return PromptView(
        ids, cum, KindNames(codes), positions, keys, kept, int(req.cum_tokens[-1]) - int(cum[-1])
    )


def _last_turn(req: RenderedRequest, last_turn: int, table: BlockTable | None) -> int:
    """The last user turn, skipping user blocks known only by their size (fitted context)."""
    if table is None or last_turn < 0:
        return last_turn
    flags = table.flags
    if not flags[int(req.block_ids[last_turn])] & SIZED_ONLY:
        return last_turn  # the usual case: no search
    # The turn sent is usually a few dozen blocks back (pi fits context after it): search
    # growing windows back from there, not every block of the prompt.
    codes, end, width = req.kind_index.codes, last_turn, 64
    while end > 0:
        start = max(0, end - width)
        turns = _IS_TURN[codes[start:end]].nonzero()[0]
        ids = req.block_ids[start:end][turns].tolist()
        for j in range(len(ids) - 1, -1, -1):
            if not flags[ids[j]] & SIZED_ONLY:
                return start + int(turns[j])
        end, width = start, width * 4
    return -1


def _stripped_columns(
    req: RenderedRequest, ids: np.ndarray, codes: np.ndarray, first: int
) -> tuple[IntsView, np.ndarray]:
    """Chained prefix keys and lookback positions of the kept blocks `ids` (kinds `codes`;
    block `first` is the first one dropped: the request's own columns hold before it). Both are
    functions of the model and the ids, so those of the thread's previous stripped view are
    reused up to where its ids differ: the same thinking blocks are stripped request after
    request until the next user turn."""
    known_keys, known_positions, same = req.prefix_keys, req.positions, first
    memo = req._lineage.memo if req._lineage is not None else None
    if memo is not None:
        hit = memo.get(("stripped", req.model))
        if hit is not None:
            old_ids, old_keys, old_positions = hit
            differ = first_difference(old_ids, ids)
            reused = min(len(old_ids), len(ids)) if differ is None else differ
            if reused > first:
                known_keys, known_positions, same = old_keys, old_positions, reused
    keys = np.empty(len(ids), dtype=np.int64)
    keys[:same] = known_keys.array[:same] if isinstance(known_keys, IntsView) else known_keys[:same]
    last = int(keys[same - 1]) if same else None
    keys[same:] = chain_keys(req.model, last, ids[same:].tolist())
    positions = np.empty(len(ids), dtype=np.int64)
    positions[:same] = known_positions[:same]
    if same:  # a run may go on across `same`: derive from the block before it
        positions_after(codes[same - 1 :], int(positions[same - 1]), positions[same:])
    else:
        positions[:] = positions_of(codes)
    view = IntsView(keys)
    if memo is not None:
        memo[("stripped", req.model)] = (ids, view, positions)
    return view, positions


# --------------------------------------------------------------------------------------------
# Causes


@dataclass(frozen=True)
class Lost:
    """The longest prefix of this prompt an earlier request left in the cache that this request
    could not read, and why."""

    tokens: int
    kind: str
    detail: str


def duration_text(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h}h{m:02d}m{s:02d}s" if s else f"{h}h{m:02d}m"
    return f"{m}m{s:02d}s" if s else f"{m}m"


def expired_text(entry: Any, t: datetime) -> str:
    if entry.max_lifetime is not None and entry.created is not None:
        age = (t - entry.created).total_seconds()
        if age > entry.max_lifetime and entry.idle(t) <= entry.ttl:
            return (
                f"TTL expired (age {duration_text(age)} > max lifetime "
                f"{duration_text(entry.max_lifetime)})"
            )
    return f"TTL expired (idle {duration_text(entry.idle(t))} > TTL {duration_text(entry.ttl)})"


def entry_state(entry: Any, t: datetime, reader: str) -> tuple[str, str] | None:
    """None for a live entry, else (kind, detail)."""
    if entry.expired(t):
        return TTL_EXPIRED, expired_text(entry, t)
    if not entry.ready(t, reader):
        return NOT_READY, "written by a parallel request not yet ready"
    return None


def scope_label(scope: str) -> str:
    parts = scope.split("|")
    return parts[-1] if len(parts) > 2 else scope


_PROVIDER_SIDE = (TTL_EXPIRED, NOT_READY, OTHER_SCOPE)


def edit_cause(sim: SimRequest, read: int | None = None, slack: int = 0) -> tuple[str, str] | None:
    """The strategy-side reason this prompt cannot extend the thread's previous one, if it
    read less than that previous prompt (None when `read` covers it)."""
    prev, req = sim.previous, sim.request
    if prev is None:
        return None
    if prev.model != req.model:
        shared = max(sim.diff.first_mismatch_token, 1)
        if read is None or read < shared:
            return MODEL_SWITCH, f"model switch ({prev.model} → {req.model})"
        return None
    diff = sim.diff
    if not diff.is_break:
        return None
    if read is not None and read + slack >= prev.total:
        return None
    where = diff.where
    if where == "tools":
        return TOOLS_CHANGED, "tool definitions changed"
    if where == "system":
        return SYSTEM_CHANGED, "system prompt changed"
    if where == "model switch":
        return MODEL_SWITCH, f"model switch ({prev.model} → {req.model})"
    if where.startswith("message"):
        return PREFIX_EDITED, f"prefix edited at {where}"
    index = diff.message_index  # (None: cut back to the head, which is no message)
    at = f" at message {index}" if index is not None else ""
    return PREFIX_EDITED, f"prompt shortened{at}"


def explain(
    sim: SimRequest,
    read: int,
    lost: Lost | None,
    *,
    total: int,
    min_len: int | None = None,
    slack: int = 0,
    no_breakpoint: str | None = None,
    stripped: str | None = None,
) -> tuple[str | None, str | None]:
    """(kind, text) of why this request read less than it could, or (None, None).

    Order: the cache was unavailable (expired, not ready, other scope) → the strategy changed
    the prompt (edit, tools, system, model) → the mechanism could not reach a live entry
    (lookback, minimum) → first request (cold start) → the provider stripped thinking → no
    breakpoint → too short.
    """
    lost = lost if lost is not None and lost.tokens > read + slack else None
    if lost is not None and lost.kind in _PROVIDER_SIDE:
        return lost.kind, lost.detail
    edit = edit_cause(sim, read, slack)
    if edit is not None:
        kind, text = edit
        if lost is not None:
            text = f"{text}; {lost.detail}"
        return kind, text
    if lost is not None:
        return lost.kind, lost.detail
    if sim.previous is None:
        return (COLD_START, "cold start") if read == 0 else (None, None)
    if stripped:
        return THINKING_STRIPPED, stripped
    if read == 0 and no_breakpoint:
        return NO_BREAKPOINT, no_breakpoint
    if read == 0 and min_len is not None and total and total < min_len:
        return BELOW_MINIMUM, f"below minimum cacheable length ({total:,} < {min_len:,} tokens)"
    return None, None


def walk_entries(
    store: CacheStore,
    sim: SimRequest,
    view: PromptView,
    read: int,
    upto: int | None = None,
    unreached: str = "beyond lookback",
) -> Lost | None:
    """The longest prefix of `view` with an entry (in any state, any scope) longer than `read`,
    walking back from block `upto` (default: the last); stops as soon as it is at `read`."""
    model, t, lane = sim.request.model, sim.request.ts, sim.lane
    if not store.has_model(model) or not len(view):
        return None
    others = store.other_scopes(sim.scope, model)
    top = len(view) - 1 if upto is None else min(upto, len(view) - 1)
    # Cumulative tokens never decrease: the blocks longer than `read` are a suffix, so only the
    # part of the prompt beyond what was read is walked; and past its last few blocks, only the
    # blocks at whose length the store holds an entry (a long walk that finds nothing is then
    # not O(prompt) in Python).
    low = int(np.searchsorted(view.cum, read, side="right"))
    near = max(low, top - _NEAR_BLOCKS + 1)
    blocks: Iterable[int] = range(top, near - 1, -1)
    if near > low:
        held = np.flatnonzero(store.may_hold(model, view.cum[low:near]))
        blocks = chain(blocks, (held[::-1] + low).tolist())
    keys, entries = view.keys, store.entries
    near_keys = keys[near : top + 1]  # one list (a key at a time from an array is slow)
    for i in blocks:
        key = near_keys[i - near] if i >= near else keys[i]
        entry = entries.get((sim.scope, model, key))
        if entry is not None:
            tokens = int(view.cum[i])
            state = entry_state(entry, t, lane)
            if state is None:
                return Lost(tokens, BEYOND_LOOKBACK, unreached)
            return Lost(tokens, *state)
        for other in others:
            entry = entries.get((other, model, key))
            if entry is not None and not entry.expired(t):
                tokens = int(view.cum[i])
                return Lost(tokens, OTHER_SCOPE, f"different cache scope ({scope_label(other)})")
    return None


_NEAR_BLOCKS = 32
"""Blocks `walk_entries` checks one by one before it searches the rest of the prompt at once
(what it looks for is usually among the last blocks)."""


class CacheSimulator(ABC):
    """One provider mechanism applied to a stream of requests."""

    provider: str = ""
    mechanism: str = ""

    def __init__(self, rules: RuleBook, store: CacheStore | None = None) -> None:
        self.rules = rules
        self.store = store if store is not None else CacheStore()
        self._at: tuple[str, Any, Any] = ("", None, None)
        """(model, time, day) of the last request a rule was looked up for."""
        self._values: dict[tuple[str, Any, type], Any] = {}
        """Rules looked up for that model and day (rows are chosen by day): a simulator asks a
        dozen per request, each a chain of lookups in the rule book otherwise."""

    def rule(self, sim: SimRequest, name: str, default: Any = _MISSING) -> Any:
        model, ts = sim.model, sim.request.ts
        at = self._at
        if ts is not at[1] or model != at[0]:
            day = utc_date(ts)  # rows are chosen by UTC date
            if day != at[2] or model != at[0]:
                self._values = {}
            self._at = (model, ts, day)
        key = (name, default, type(default))  # a default of 1 is not one of True
        try:
            return self._values[key]
        except KeyError:
            value = self._values[key] = self.rules.get(name, model, ts, default)
            return value

    def ready_at(self, sim: SimRequest) -> datetime:
        t = sim.request.ts
        if self.rule(sim, "ready_at", "response-start") == "response-end" and sim.duration_s:
            delay = sim.duration_s
        else:
            delay = float(self.rule(sim, "ready_after_seconds", 1.0))
        try:
            return t + timedelta(seconds=delay)
        except OverflowError:  # past the calendar (year 9999), or a delay of ages: never ready
            return datetime.max.replace(tzinfo=t.tzinfo)

    def ttl_choice(self, sim: SimRequest) -> bool:
        """Whether the client picks the TTL of what this request writes (5m or 1h, per
        breakpoint): what `--ttl` forces. False by default: the provider's rules set it."""
        return False

    def new_entry(self, sim: SimRequest, tokens: int, ttl: float, ready_at: datetime) -> Entry:
        return Entry(
            tokens=tokens, ttl=ttl, last_use=sim.request.ts, ready_at=ready_at, writer=sim.lane
        )

    @abstractmethod
    def simulate(self, sim: SimRequest) -> CacheOutcome: ...


@dataclass
class LaneState:
    """What a simulator remembers of a lane's previous request (per scope and model)."""

    total: int = 0
    dropped: int = 0
    extra: dict = field(default_factory=dict)


def lane_state(store: CacheStore, sim: SimRequest, name: str) -> LaneState:
    key = ("lane", name, sim.scope, sim.request.model, sim.lane)
    state = store.extra.get(key)
    if state is None:
        state = store.extra[key] = LaneState()
    return state  # type: ignore[return-value]
