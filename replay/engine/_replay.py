"""The replay loop: log events → strategy views → rendered requests → prefix diff → cache → price.

The recorded trajectory is fixed: every assistant response and tool call is what the log says.
A strategy only changes what the model would have *seen* at each request. For each request of
each thread, in file order:

1. the thread's history so far (full, lossless) goes to the strategy, which returns a view
   (and possibly summarizer calls it would have made first);
2. each summarizer call is rendered, simulated and priced as its own request (shown separately);
3. the view is rendered to token-counted blocks, diffed against the thread's previous request,
   passed through the provider's cache simulator and priced at the request's date.
"""

from __future__ import annotations

import copy
import gc
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from functools import cached_property
from typing import Any

from replay._errors import ReplayError
from replay.cache import Breakpoint, CacheRouter, CacheStore, SimRequest, profile_for
from replay.cache._base import CacheOutcome
from replay.cache._rules import ProviderRules
from replay.engine._chain import ChainTable
from replay.engine._unlogged import (
    ThreadUnlogged,
    Unlogged,
    UnloggedContext,
    fit_heads,
    hidden_prefix_of,
    thread_hidden_prefix,
)
from replay.evidence import BlindAction, EvidenceChecker, client_vocabulary, share_answers_for
from replay.log import (
    MAIN_THREAD,
    AssistantMessage,
    Compaction,
    RequestMarker,
    Session,
    ThreadStart,
    ToolResult,
    Usage,
    UserMessage,
)
from replay.prefix import PrefixDiff, prefix_diff
from replay.prices import Buckets, Pricer, buckets_of, charge, context_window
from replay.render import RenderedRequest, Renderer
from replay.strategies import NamedStrategy, StrategyContext, parse_name, resolve
from replay.strategies._base import View, as_view
from replay.strategies._view import (
    AssistantItem,
    Block,
    Item,
    RewriteEvent,
    SummarizerCall,
    ToolResultItem,
    UserItem,
    tool_call_block,
)
from replay.strategies.recorded import LoggedCompaction
from replay.tokens import FittedCounter, TokenCounter, family_for
from replay.tokens._counter import forget_counts


@dataclass(frozen=True)
class RenderedWith:
    """What a request's prompt took from its thread besides the view: the head (system prompt,
    the hidden prefix the log does not hold, its version) and where the client's last cache
    marker went (the unlogged tail the usage put after it)."""

    system: str
    hidden_tokens: int | tuple[int, ...]
    head_version: int
    unlogged_tail: int
    dropped: frozenset[Item] = frozenset()
    """The thread's unlogged messages no longer sent at this request (`ThreadUnlogged.dropped`
    then): a break-even counterfactual built from the history leaves them out too."""


@dataclass
class RequestRecord:
    """Everything `replay` computed for one simulated request."""

    strategy: str
    kind: str
    """`request` (a recorded model call) or `summarizer` (a call the strategy added)."""
    request_index: int
    """Index of the recorded request this belongs to (file order, all threads)."""
    request_id: str
    thread: str
    ts: datetime
    model: str
    provider: str
    request: RenderedRequest
    diff: PrefixDiff
    outcome: CacheOutcome
    output_tokens: int
    cost_usd: Decimal
    input_cost_usd: Decimal
    over_window: bool
    view_items: int
    events: list[RewriteEvent] = field(default_factory=list)
    blind_actions: list[BlindAction] = field(default_factory=list)
    """Actions of the recorded response that relied on text this view hid (evidence loss)."""
    view: list[Item] = field(default_factory=list, repr=False)
    history_len: int = 0
    """Items in the thread's history when this request was sent."""
    store_before: Any = field(default=None, repr=False)
    """Copy of the cache store before this request (only for rewrite events, on request)."""
    price_warning: str | None = None
    """How its price fell back where the price table lacks a rate (cache reads billed at the
    input rate…), when it did."""
    price_context: dict[str, str] | None = None
    """The price variant it was billed under (the logged call's `price_context`)."""
    rendered_with: RenderedWith | None = field(default=None, repr=False)
    """The thread's state its prompt was rendered and marked with (with `snapshot_stores`:
    a counterfactual of this request must send the same head)."""

    @property
    def buckets(self) -> Buckets:
        return buckets_of(self.outcome, self.output_tokens)


@dataclass
class ReplayConfig:
    """Options of one replay (all optional: the log decides by default)."""

    provider: str | None = None
    """Override the provider of every request."""
    model: str | None = None
    """Override the model of every request."""
    context_window: int | None = None
    """The context window (tokens) strategies fit prompts into and `over_window` is checked
    against, for every model: the one the agent ran with, where it is not the model's
    (`pricing/context_windows.json`; e.g. a Claude 4.6 model, 1M there, run by a harness set
    to 200k). None: the model's."""
    client: str | None = None
    """Client profile (breakpoint placement), default from the log's agent."""
    cache_rules: ProviderRules | None = None
    """A user-supplied rule file for the provider."""
    rule_overrides: dict[str, Any] = field(default_factory=dict)
    """Single rule values to force (e.g. `ttl_seconds`)."""
    pricer: Pricer | None = None
    """Price source (genai-prices snapshot plus `--price` overrides)."""
    ttl: str | None = None
    """Force every cache breakpoint's TTL (`5m` or `1h`): "what if we had used 1h caching"."""
    keep_views: bool = False
    """Keep each request's view items on its record (for diff viewers and break-even)."""
    keep_blocks: bool = True
    """Keep each record's per-block arrays (`record.request.block_ids`, `kinds`, ...). False
    releases them once the thread's next request no longer needs them, so memory stays
    O(distinct content) instead of O(requests × blocks); totals are kept either way."""
    snapshot_stores: bool = False
    """Copy the cache store before each request where the strategy rewrote context, so the same
    run without that rewrite can be simulated (break-even)."""
    unlogged_context: UnloggedContext | dict[tuple[str, int], int] | None = None
    """Context the log does not hold, fitted on the provider's recorded usage
    (`fit_unlogged_context`, `replay/engine/_unlogged.py`): per request, injected reminders,
    attachments and the tokenizer's estimation error (a plain dict gives just these, in tokens
    per (thread, request event index)); per thread, where the hidden prefix's head ends. None =
    fit automatically when the log has usage; {} = none."""
    fit_unlogged: bool = False
    """Internal: the run that measures `unlogged_context` (the `recorded` strategy)."""
    signed_fit: bool = True
    """Let that fit also subtract: a request billed short of its replay sizes down the texts it
    sends first (`UnloggedContext.counts`). False: it only adds context, and a shortfall waits
    for later requests to fill it."""
    shared_cache: SharedCache | None = None
    """Provider-cache state kept across sessions (`replay batch`): None = a fresh cache."""
    progress: Any = None
    """Called as `progress(strategy_name, done, total)` before each strategy is replayed (and
    once with `done == total` at the end): progress bars. Its `detail(text)` method, when it
    has one, is told how far the strategy's run is (`request 1,234 / 5,678`, a few times a
    second), and by break-even how far its counterfactual replays are (`1,234 / 5,678
    counterfactual requests`): a strategy that rewrites in place at most requests is most of
    the work on a long log."""
    on_record: Callable[[RequestRecord], None] | None = None
    """Given each record, in order, as soon as its request is complete, instead of keeping it
    in the run's records (`run()` then returns none): a caller that only aggregates records
    (the CLI's summary) holds none of them."""


@dataclass
class SharedCache:
    """Provider-cache state that outlives one session, for sessions of one account.

    `replay batch` replays sessions with the same cache scope through one `SharedCache`, their
    requests interleaved in time order (`_Run.steps`), so a session reads the system-prompt and
    tool prefix that another one left in the cache. Stores and block tables are created on
    first use; give each session its own `SharedCache` sharing the same dicts and its own `lane`.

    Each session renders as when it is replayed alone (its own renderers, its own unlogged
    context and fitted counts): only the cache and the block ids are shared. A `_Run` does not
    fit the unlogged context itself: give it a config from `with_unlogged_context` (fitted on
    a cache of its own) before setting `shared_cache`, as `replay batch` does.
    """

    scope: str
    """Cache scope of every request (replaces the per-session `provider:session_id`)."""
    stores: dict[str, CacheStore] = field(default_factory=dict)
    """Strategy name → its cache store (a strategy only ever reads its own entries)."""
    tables: dict[str, ChainTable] = field(default_factory=dict)
    """Model family → the chain's block table: one id space for all sessions, so equal blocks
    get equal ids and prefix keys agree across sessions (each session's renderer sees it
    through its own counter: `ChainTable.view`)."""
    lane: str = ""
    """Label of the session (read when its runs are created): prefixed to its thread names in
    cache lanes, so another session's `main` entries are not taken for this session's own
    (readiness still applies across sessions)."""


@dataclass
class _Thread:
    strategy: Any
    history: list[Item] = field(default_factory=list)
    previous: RenderedRequest | None = None
    previous_usage: Usage | None = None
    system: str = ""
    model: str | None = None
    compactions: list[LoggedCompaction] = field(default_factory=list)
    clears: list[tuple[datetime, int]] = field(default_factory=list)
    """(`cleared_at`, event index) of the thread's tool results the harness cleared."""
    calls: dict[str, Block] = field(default_factory=dict)
    hidden_tokens: int | tuple[int, ...] = 0
    """Estimated size of the prompt prefix the log does not hold (system prompt, tool schemas,
    injected context), set by adapters as `hidden_prefix_tokens`; sent as one opaque block
    (only its head, in parts, when the fit split it: `ThreadFit.head`)."""
    unlogged: ThreadUnlogged = field(default_factory=ThreadUnlogged)
    """Its unlogged context in play (first-message context, fitted messages)."""
    head_version: int = 0
    """Bumped where the adapter saw the unlogged head change (`system_changed` on a request,
    e.g. a restarted pi process) or the thinking level change: the head is re-sent."""
    thinking_level: str | None = None
    """Thinking level of the thread's last request, when the adapter logs one."""
    last_answer_ts: datetime | None = None
    """`ts` of the thread's newest assistant message so far."""
    estimated: list[int] = field(default_factory=list)
    """Event indexes of the history's messages known only by their size (context the log does
    not hold, added by the unlogged-context fit), in history order."""
    estimated_seen: int = 0
    """How many leading history items `estimated` covers (the history only grows)."""
    branch_of: str | None = None
    """An abandoned branch's parent thread, whose history up to the fork it re-sends."""
    inherited: int = 0
    """A branch: how many leading items of its parent's history it has gone past."""

    def estimated_indexes(self) -> list[int]:
        """`estimated`, brought up to date with the history's new items."""
        history = self.history
        for i in history[self.estimated_seen :]:
            if isinstance(i, UserItem) and i.estimated_tokens:
                self.estimated.append(i.event_index)
        self.estimated_seen = len(history)
        return self.estimated


def inherit_unlogged(branch: _Thread, parent: _Thread | None, original: int | None) -> None:
    """Quirk (an abandoned branch of a rewound tree): the branch's history starts with copies of
    its parent's events up to the fork, and it re-sent what the parent sent there, the context
    the log does not hold included. Before the copy of the parent's event `original`, the branch
    takes the parent's estimated messages that came before that event (the very items: they are
    the same text), so that its prompt is the parent's cached one up to the fork rather than
    parting from it at the first unlogged message."""
    if parent is None or original is None:
        return
    history, at = parent.history, branch.inherited
    while at < len(history) and getattr(history[at], "event_index", -1) < original:
        item = history[at]
        if isinstance(item, UserItem) and item.estimated_tokens and (
            item not in parent.unlogged.dropped
        ):
            branch.history.append(item)
        at += 1
    branch.inherited = at


def tokenizer_ratio(session: Session, model: str | None) -> float:
    """Tokens of `model` per token of the model the log ran on (its header's), by their
    tokenizer families' calibration factors: 1.0 when `model` is None or of the same family.
    Sizes the log holds only as numbers (its hidden prefix, the fitted unlogged context) are
    in the log's provider's tokens; the texts themselves are counted again."""
    if not model or not session.header.model:
        return 1.0
    source, target = family_for(session.header.model), family_for(model)
    return 1.0 if source.family == target.family else target.factor / source.factor


def has_usage(session: Session) -> bool:
    """True when some request of the log carries the provider's usage (what a fit needs)."""
    return any(isinstance(e, RequestMarker) and e.usage for e in session.events)


def fit_unlogged_context(session: Session, config: ReplayConfig) -> UnloggedContext:
    """What the provider billed beyond what the log shows, fitted by replaying what the agent
    really sent against the recorded usage (`replay/engine/_unlogged.py`); empty when the log
    carries no usage. Fitted as billed: on the log's own provider and model, whatever the run
    simulates (a run on another model converts the sizes: `UnloggedContext.resized`); measured
    in another model's tokenizer, the gap between the two would pass for context. (`--client`
    and `--ttl` still apply: they may describe the client the log itself ran.)"""
    if not has_usage(session):
        return UnloggedContext()
    fit_config = copy.copy(config)
    fit_config.provider = fit_config.model = None
    fit_config.fit_unlogged = True
    fit_config.unlogged_context = {}
    fit_config.shared_cache = None
    fit_config.keep_views = False
    fit_config.snapshot_stores = False
    fit_config.on_record = None
    run = _Run(session, parse_name("recorded"), fit_config)
    fit = run.unlogged.fit
    fit.threads = fit_heads(session, run.unlogged.explicit_marker, run.unlogged.logged_head)
    run.run(getattr(config.progress, "detail", None))
    return fit


def with_unlogged_context(
    session: Session, config: ReplayConfig, strategies: int | None = None
) -> ReplayConfig:
    """`config` with `unlogged_context` fitted on the session when it was left to be.
    `strategies`: how many the caller will run, for `config.progress` to name the fit before
    them (`FITTING`, 0, `strategies`) when there is one to make (the log carries usage)."""
    if config.unlogged_context is not None:
        return config
    if strategies is not None and config.progress is not None and has_usage(session):
        config.progress(FITTING, 0, strategies)
    fitted = copy.copy(config)
    fitted.unlogged_context = fit_unlogged_context(session, config)
    return fitted


def _assistant_item(event: AssistantMessage, index: int) -> AssistantItem:
    blocks = []
    for b in event.blocks:
        if b.type == "text":
            blocks.append(Block("text", text=b.text))
        elif b.type == "thinking":
            blocks.append(Block("thinking", text=b.thinking, estimated_tokens=b.estimated_tokens))
        else:
            blocks.append(tool_call_block(b))
    return AssistantItem(blocks=tuple(blocks), event_index=index)


def _history_blocks(session: Session) -> dict[int, tuple[Block, ...]]:
    """The blocks of every assistant message the history holds, by event index, with their
    tool calls rendered: made before any run, so that these long-lived texts are not
    scattered among the first run's short-lived memory."""
    blocks: dict[int, tuple[Block, ...]] = {}
    for n, event in enumerate(session.events):
        if isinstance(event, AssistantMessage) and event.in_context:
            blocks[n] = _assistant_item(event, n).blocks
            for b in blocks[n]:
                b.rendered()
    return blocks


def _responses(session: Session) -> dict[int, tuple[int, AssistantMessage]]:
    """Request event index → the assistant message that answered it."""
    answer: dict[int, tuple[int, AssistantMessage]] = {}
    pending: dict[str, int] = {}
    by_id: dict[str, int] = {}
    for n, e in enumerate(session.events):
        if isinstance(e, RequestMarker):
            pending[e.thread] = n
            by_id[e.request_id] = n
        elif isinstance(e, AssistantMessage):
            # An id naming no request (the reader reported it) falls back like a missing one.
            target = by_id.get(e.request_id) if e.request_id in by_id else pending.get(e.thread)
            if target is not None and target not in answer:
                answer[target] = (n, e)
            pending.pop(e.thread, None)
    return answer


class _SessionFacts:
    """What every strategy's run derives from the log alike, derived once per session: the
    strategies of `--strategies all` replay the same recorded requests and responses."""

    def __init__(self, session: Session, history_blocks: bool = True) -> None:
        """`history_blocks=False` for facts one run uses alone (the unlogged-context fit,
        break-even's runs): its blocks are then made as the run reaches them, not all first."""
        self._session = session
        self.answers = _responses(session)
        """Request event index → the assistant message that answered it, and its index."""
        self._responses: dict[int, AssistantItem | None] = {}
        self._outputs: dict[tuple[int, str], int] = {}
        self._head: dict[int, tuple[Any, Any]] = {}
        self._blocks = _history_blocks(session) if history_blocks else {}

    @cached_property
    def request_count(self) -> int:
        """Requests of the log, every thread's (break-even's wording asks; a replay does not)."""
        return sum(isinstance(e, RequestMarker) for e in self._session.events)

    @cached_property
    def copies(self) -> dict[int, str]:
        """Event index → the id of the event it copies (`copied_from`, an extra field some
        adapters set), for the events that have one: looking up a missing extra field on a
        pydantic event is slow, and every run walks every event."""
        return {
            n: copied
            for n, event in enumerate(self._session.events)
            if (copied := getattr(event, "copied_from", None)) is not None
        }

    def blocks(self, event: AssistantMessage, index: int) -> tuple[Block, ...]:
        """The blocks of the assistant message at event `index`: those of the history, shared
        by the runs (each makes its own items of them) and by the recorded responses, so a tool
        call's rendered text (its JSON) is made once per replay, not once per strategy; new
        ones for a message the history does not hold."""
        blocks = self._blocks.get(index)
        if blocks is None:
            blocks = _assistant_item(event, index).blocks
        return blocks

    def response(self, index: int) -> AssistantItem | None:
        """The recorded response to the request at event `index` as an item (None: none).
        Shared by the runs: nothing changes it (its memos are of its own content)."""
        try:
            return self._responses[index]
        except KeyError:
            answer = self.answers.get(index)
            item = self._responses[index] = (
                AssistantItem(blocks=self.blocks(answer[1], answer[0]), event_index=-1)
                if answer is not None
                else None
            )
            return item

    def output_tokens(self, index: int, model: str, counter: TokenCounter | FittedCounter) -> int:
        """Token count of the recorded response to the request at event `index` (when the log
        has no usage for it)."""
        key = (index, model)
        count = self._outputs.get(key)
        if count is None:
            at, answer = self.answers[index]
            blocks = self.blocks(answer, at)
            # Thinking logged only by its size counts that size, as in later prompts.
            count = self._outputs[key] = sum(
                counter.count(b.rendered()) if b.size_only is None else b.size_only
                for b in blocks
            )
        return count

    def head_fields(self, index: int, marker: RequestMarker) -> tuple[Any, Any]:
        """(thinking_level, system_changed) of a request, None where the adapter logged none
        (extra fields: looking up a missing one on a pydantic event is slow)."""
        hit = self._head.get(index)
        if hit is None:
            hit = self._head[index] = (
                getattr(marker, "thinking_level", None),
                getattr(marker, "system_changed", None),
            )
        return hit


class _Run:
    """One strategy replayed over one session."""

    def __init__(
        self,
        session: Session,
        named: NamedStrategy,
        config: ReplayConfig,
        facts: _SessionFacts | None = None,
    ) -> None:
        self.session = session
        self.facts = facts if facts is not None else _SessionFacts(session, history_blocks=False)
        """Shared by the runs of one `iter_replay` (made per run otherwise)."""
        self.named = named
        self.config = config
        header = session.header
        self.provider = config.provider or header.provider
        self.profile = profile_for(header.agent, config.client, header.agent_version)
        shared = config.shared_cache
        self.store = shared.stores.setdefault(named.name, CacheStore()) if shared else CacheStore()
        self.cache = CacheRouter(config.cache_rules, config.rule_overrides)
        self.renderers: dict[str, Renderer] = {}
        self.shared = shared
        # The session's label and the strategy's name keep the lanes of a shared store apart.
        self.lane = f"{shared.lane}|{named.name}|" if shared else ""
        self.pricer = config.pricer or Pricer()
        self.applies_logged_compactions = named.spec.family == "recorded"
        """Sends the messages only a logged compaction's rebuilt history holds
        (`UserMessage.compacted_history`): no other strategy applies the log's compactions."""
        self.records: list[RequestRecord] = []
        self.evidence = EvidenceChecker()
        self._heads: dict[str, str] = {}
        self.threads: dict[str, _Thread] = {}
        self.resize = tokenizer_ratio(session, config.model)
        """Tokens of the run's model per token of the log's, for what the log holds only as a
        size (1.0 unless `--model` names another tokenizer family)."""
        self.unlogged = Unlogged(
            self, UnloggedContext.of(config.unlogged_context).resized(self.resize),
            config.fit_unlogged, config.signed_fit,
        )
        self.scope = shared.scope if shared else f"{self.provider}:{header.session_id or 'session'}"

    def renderer(self, model: str) -> Renderer:
        family = family_for(model).family
        r = self.renderers.get(family)
        if r is None:
            counter = self.unlogged.counter(model)
            r = self.renderers[family] = Renderer(counter)
            if self.shared is not None:  # the chain's block ids, this session's counts
                chain = self.shared.tables.get(family)
                if chain is None:
                    base = getattr(counter, "base", counter)  # a FittedCounter's family counter
                    chain = self.shared.tables[family] = ChainTable(base)
                r.table = chain.view(counter)
        return r

    def window(self, model: str) -> int:
        """The context window strategies fit into and `over_window` is checked against."""
        return self.config.context_window or context_window(model)

    def run(self, detail: Callable[[str], None] | None = None) -> list[RequestRecord]:
        """Replay every request. `detail`: a progress bar's detail line, told how many requests
        are done a few times a second (one strategy on a long log takes minutes)."""
        if detail is None:
            for _ in self.steps():
                pass
            return self.records
        total, told = self.facts.request_count, time.monotonic()
        for done, _ in enumerate(self.steps()):
            now = time.monotonic()
            if now - told >= _TELL_EVERY:
                detail(f"request {done:,} / {total:,}")
                told = now
        return self.records

    def close(self) -> list[RequestRecord]:
        """Drop everything this finished run holds and return its records. Its state is full of
        reference cycles (the unlogged context and the renderers point back at the run, the
        strategies at their items), which reference counting alone never frees: dropped here,
        most of it is freed at once instead of being traced by the full collection after the
        run (`_release_run`; 2,000 requests × 48 strategies: 1.5M unreachable objects → 11k)."""
        records = self.records
        vars(self).clear()
        return records

    def steps(self) -> Iterator[datetime]:
        """`run`, one request at a time: yields each request's time just before simulating it,
        so a caller can interleave the requests of several sessions in time order on a shared
        cache (`replay batch`). The records are in `self.records`."""
        session, header = self.session, self.session.header
        threads = self.threads
        request_index = 0

        def thread_state(name: str) -> _Thread:
            if name not in threads:
                threads[name] = _Thread(
                    strategy=self.named.instantiate(),
                    system=header.system,
                    # (a thread no `thread` event opened is sent the session's head)
                    hidden_tokens=round(hidden_prefix_of(header) * self.resize),
                )
                self.unlogged.split_head(name, threads[name])
            return threads[name]

        event_ids: dict[str, int] = {}
        originals: dict[str, int] | None = None  # every event's index, for a branch's copies
        copies = self.facts.copies
        for n, event in enumerate(session.events):
            if event.id is not None:
                event_ids[event.id] = n
            state = thread_state(event.thread)
            copied = copies.get(n) if copies else None
            if copied is not None and state.branch_of is not None:
                if originals is None:
                    originals = {e.id: i for i, e in enumerate(session.events) if e.id}
                inherit_unlogged(state, threads.get(state.branch_of), originals.get(copied))
            if isinstance(event, UserMessage):
                if event.compacted_history and not self.applies_logged_compactions:
                    continue
                state.history.append(UserItem(event.text, event_index=n, injected=event.injected))
            elif isinstance(event, AssistantMessage):
                state.last_answer_ts = event.ts
                if not event.in_context:
                    continue  # billed, but the harness never sent it back
                item = AssistantItem(blocks=self.facts.blocks(event, n), event_index=n)
                for b in item.tool_calls:
                    if b.call_id:
                        state.calls[b.call_id] = b
                state.history.append(item)
            elif isinstance(event, ToolResult):
                if event.cleared_at is not None:
                    state.clears.append((event.cleared_at, n))
                call = state.calls.get(event.call_id)
                state.history.append(
                    ToolResultItem(
                        call_id=event.call_id,
                        tool_name=event.tool_name,
                        output=event.output,
                        is_error=event.is_error,
                        event_index=n,
                        arguments=call.arguments if call else None,
                    )
                )
            elif isinstance(event, Compaction):
                state.compactions.append(self._logged_compaction(event, n, state, event_ids))
            elif isinstance(event, ThreadStart):
                child = thread_state(event.thread_id)
                child.system = event.system if event.system is not None else header.system
                child.model = event.model
                child.hidden_tokens = round(thread_hidden_prefix(event, header) * self.resize)
                child.branch_of = getattr(event, "branch_of", None)
                self.unlogged.split_head(event.thread_id, child)
            elif isinstance(event, RequestMarker):
                yield event.ts
                self._request(event, n, request_index, state)
                request_index += 1

    @staticmethod
    def _logged_compaction(
        event: Compaction, index: int, state: _Thread, event_ids: dict[str, int]
    ) -> LoggedCompaction:
        if event.replaces:
            # (its own id, already registered, names no earlier event: ignored, as reported)
            named = {event_ids[i] for i in event.replaces if event_ids.get(i, index) < index}
            # Context the log does not hold (fitted per request) went with the events around it.
            last = max(named, default=-1)
            unlogged = {i for i in state.estimated_indexes() if i < last}
            replaced = frozenset(named | unlogged)
        else:  # the log does not say: everything before it in the thread
            replaced = frozenset(getattr(i, "event_index", -1) for i in state.history)
        return LoggedCompaction(
            summary=event.summary,
            replaced=replaced,
            event_index=index,
            message=event.summary if event.message is None else event.message,
            role=event.message_role,
        )

    def _head_changes(self, marker: RequestMarker, event_index: int, state: _Thread) -> None:
        """Request parameters the adapter logged that change what the provider caches: a new
        version of the unlogged head (`system_changed`), a new thinking level. Both re-send the
        head as other content (on the pi samples every thinking-level change read 0)."""
        level, system_changed = self.facts.head_fields(event_index, marker)
        changed_level = level is not None and state.thinking_level not in (None, level)
        if system_changed or changed_level:
            state.head_version += 1
        if level is not None:
            state.thinking_level = level

    def _request(
        self,
        marker: RequestMarker,
        event_index: int,
        request_index: int,
        state: _Thread,
    ) -> None:
        header = self.session.header
        model = self.config.model or marker.model or state.model or header.model
        provider = self.config.provider or marker.provider or header.provider
        renderer = self.renderer(model)
        counter = renderer.table.counter
        if not state.history:
            raise ReplayError(
                f"{self.session.path}: request {marker.request_id} has no message before it"
            )
        self._head_changes(marker, event_index, state)
        self.unlogged.before_view(marker, event_index, state, counter, provider, model)
        ctx = StrategyContext(
            request_index=request_index,
            ts=marker.ts,
            model=model,
            context_window=self.window(model),
            count_tokens=counter.count,
            system=state.system,
            tools=header.tools,
            previous_usage=state.previous_usage,
            previous_ts=state.previous.ts if state.previous else None,
            last_answer_ts=state.last_answer_ts,
            logged_summaries=tuple(state.compactions),
            logged_clears=frozenset(i for at, i in state.clears if at <= marker.ts)
            if state.clears
            else frozenset(),
            hidden_tokens=_total(state.hidden_tokens),
            message_overhead=counter.family.message_overhead,
            tool_call_overhead=counter.family.tool_call_overhead,
        )
        result = state.strategy(state.history, ctx)
        view = as_view(result)
        # A list the strategy returned was copied: the engine's own, never changed once rendered.
        owned = not isinstance(result, View)
        self.unlogged.after_view(marker, event_index, request_index, state, view, model, provider,
                                 renderer)
        if not view.items:
            raise ReplayError(
                f"strategy {self.named.name!r} sent an empty request at {marker.request_id}"
            )
        store_before = rendered_with = None
        if self.config.snapshot_stores:
            rendered_with = RenderedWith(
                state.system, state.hidden_tokens, state.head_version, state.unlogged.tail,
                state.unlogged.dropped_now(),
            )
            if view.events:
                store_before = copy.deepcopy(self.store)
        calls = view.summarizer_calls
        if calls:
            # Simulated first, then let go: a fresh call's transcript (up to ~1 MB, with its
            # UTF-8 form) is not kept through the request's render and evidence check.
            view = replace(view, summarizer_calls=[])
            for call in calls:
                self._summarizer(call, marker, request_index, state, model, provider, renderer)
            del call
        del calls

        response = self.facts.response(event_index)
        if marker.usage is not None and marker.usage.output_tokens:
            output, estimated = marker.usage.output_tokens, False
        elif response is not None:
            output = self.facts.output_tokens(event_index, model, counter)
            estimated = True
        else:
            output, estimated = 0, True
        blind = self.evidence.check(
            state.history, view.items, response, request_index, marker.request_id, grown=True,
            head=self._head_text(state.system), cwd=self.session.header.cwd or "",
        )
        record = self._simulate(
            kind="request",
            items=view.items,
            marker=marker,
            request_index=request_index,
            thread=marker.thread,
            state=state,
            model=model,
            provider=provider,
            renderer=renderer,
            output_tokens=output,
            estimated_output=estimated,
            events=view.events,
            hand_over=owned,
        )
        record.blind_actions = blind
        record.history_len = len(state.history)
        self.unlogged.after_request(record, state, event_index)
        record.store_before = store_before
        record.rendered_with = rendered_with
        if not self.config.keep_blocks and state.previous is not None:
            state.previous.release_blocks()  # diffed against for the last time
        if self.config.on_record is not None:  # its summarizer calls, then the request
            for done in self.records:
                self.config.on_record(done)
            self.records.clear()
        state.previous = record.request
        state.previous_usage = Usage(
            input_tokens=record.outcome.uncached,
            cache_read_tokens=record.outcome.cache_read,
            cache_write_5m_tokens=record.outcome.cache_write_5m,
            cache_write_1h_tokens=record.outcome.cache_write_1h,
            output_tokens=output,
        )

    def _head_text(self, system: str) -> str:
        """The text a request of a thread with `system` sends besides its messages: what the
        evidence check counts as always shown."""
        text = self._heads.get(system)
        if text is None:
            header = self.session.header
            tools = (t.model_dump_json() for t in header.tools)
            # Every harness tells the model its working directory (Claude Code's environment
            # block, Codex's <environment_context>, pi's and opencode's system prompts), and
            # sends its built-in tool definitions, which its logs do not hold.
            text = self._heads[system] = "\n".join(
                [system, *tools, header.cwd or "", client_vocabulary(header.agent)]
            )
        return text

    def _summarizer(
        self,
        call: SummarizerCall,
        marker: RequestMarker,
        request_index: int,
        state: _Thread,
        model: str,
        provider: str,
        renderer: Renderer,
    ) -> None:
        items = [*call.input_items, *call.unlogged, UserItem(call.instruction)]
        model, warning = self._summarizer_model(call, model, provider, marker.ts)
        since = len(renderer.table)
        counter = renderer.table.counter
        output_tokens = counter.count(call.summary)
        # Only counted here: the memo keeps its count by digest, not the text (each of a
        # strategy's summaries, held until the strategy ends otherwise). A view that shows it
        # as it is counts it again from the digest, without encoding it again.
        counter.release(call.summary)
        record = self._simulate(
            kind="summarizer",
            items=items,
            marker=marker,
            request_index=request_index,
            thread=f"{marker.thread}/summarizer",
            state=state,
            model=model,
            provider=provider,
            renderer=renderer,
            output_tokens=output_tokens,
            estimated_output=True,
            events=[],
            system=state.system if call.reuse_main_prefix else "",
            fresh=not call.reuse_main_prefix,
            tools=call.reuse_main_prefix and call.with_tools,
            hand_over=True,
            fork=self.lane + marker.thread,
        )
        record.price_warning = warning or record.price_warning
        if not self.config.keep_blocks:
            record.request.release_blocks()
            # What only this call showed is packed: read again only if a later prompt is
            # compared with a cached copy of this one (the items it shares with the main
            # thread's view were rendered before, and stay as they are).
            renderer.pack_items(items, since, renderer.walked_from)
            renderer.forget_thread(self.lane + f"{marker.thread}/summarizer")

    def _summarizer_model(
        self, call: SummarizerCall, model: str, provider: str, ts: datetime
    ) -> tuple[str, str | None]:
        """The model a summarizer call is sent to: the one the strategy names (Aider's weak
        model) when the provider prices it, else the request's, with a warning saying so."""
        if call.model is None or call.model == model:
            return model, None
        try:
            self.pricer.model_price(model=call.model, provider=provider, ts=ts)
        except ReplayError:
            return model, (
                f"the summarizer's model {call.model} has no price on {provider}: its requests "
                f"are priced as {model}"
            )
        return call.model, None

    def _simulate(
        self,
        *,
        kind: str,
        items: Sequence[Item],
        marker: RequestMarker,
        request_index: int,
        thread: str,
        state: _Thread,
        model: str,
        provider: str,
        renderer: Renderer,
        output_tokens: int,
        estimated_output: bool,
        events: list[RewriteEvent],
        system: str | None = None,
        fresh: bool = False,
        tools: bool = True,
        hand_over: bool = False,
        fork: str | None = None,
    ) -> RequestRecord:
        """`fresh`: a request of its own (a summarizer's), sent without the main thread's
        unlogged head; `tools=False`: without its tool definitions. `hand_over`: `items` is a
        list nothing changes any more (the renderer keeps it). `fork`: the cache lane of a
        thread whose last view `items` may extend (`render`)."""
        header = self.session.header
        previous = state.previous
        same_family = previous is not None and (
            family_for(previous.model).family == family_for(model).family
        )
        request = renderer.render(
            items,
            system=state.system if system is None else system,
            tools=header.tools if tools else (),
            index=request_index,
            request_id=marker.request_id + (":summarizer" if kind == "summarizer" else ""),
            thread=self.lane + thread,  # the cache lane; records keep the plain thread name
            ts=marker.ts,
            model=model,
            provider=provider,
            output_tokens=output_tokens,
            estimated_output=estimated_output,
            hidden_tokens=0 if fresh else state.hidden_tokens,
            head_version=state.head_version,
            hand_over=hand_over,
            fork=fork,
        )
        if previous is not None and not same_family:
            diff = PrefixDiff(0, 0, None, "model switch", True)
        else:
            diff = prefix_diff(previous, request, renderer.table)
        breakpoints = self.profile.breakpoints(request, thread)
        if kind == "request":
            breakpoints = self.unlogged.markers(breakpoints, request, state)
        if self.config.ttl is not None:
            breakpoints = [Breakpoint(b.block, self.config.ttl, b.automatic) for b in breakpoints]
        outcome = self.cache.simulate(
            SimRequest(
                request,
                breakpoints,
                self.scope,
                diff,
                previous,
                renderer.table,
                cache_key=self.profile.key_for(thread, header.session_id),
                profile=self.profile,
                duration_s=marker.duration_ms / 1000 if marker.duration_ms else None,
                forced_ttl=self.config.ttl,
            ),
            self.store,
        )
        charges = charge(
            self.pricer,
            outcome,
            output_tokens,
            model=model,
            provider=provider,
            ts=marker.ts,
            context=marker.price_context,
        )
        record = RequestRecord(
            strategy=self.named.name,
            kind=kind,
            request_index=request_index,
            request_id=request.request_id,
            thread=thread,
            ts=marker.ts,
            model=model,
            provider=provider,
            request=request,
            diff=diff,
            outcome=outcome,
            output_tokens=output_tokens,
            cost_usd=charges.cost_usd,
            input_cost_usd=charges.input_cost_usd,
            # The prompt the provider bills: thinking it strips is not in the window either.
            over_window=request.total - outcome.dropped_tokens > self.window(model),
            view_items=len(items),
            events=list(events),
            view=list(items) if self.config.keep_views else [],
            price_warning=charges.price.warning,
            price_context=marker.price_context,
        )
        self.records.append(record)
        return record


@contextmanager
def _long_lived_gc() -> Iterator[None]:
    """Python's cyclic collector re-scans every long-lived object at each full collection, and
    the log's events live for the whole replay: they are frozen (never scanned) while replaying,
    and unfrozen afterwards. Garbage is collected first: frozen, it would never be freed (the
    unlogged-context fit's run is garbage by now).

    A strategy's run makes no cyclic garbage of its own (a test checks it), and its state is
    collected in full after it (`_release_run`), so the automatic full collections in the middle
    of a run only re-scan that growing state: they are made rare (`_FULL_PASS_AFTER`) while
    replaying. Young collections still run as usual and free short-lived cycles (a plug-in's).
    (4,000 requests × 48 strategies: 20 automatic full collections, 5.4 s of 114 s CPU; none
    at 2,000 requests, where a strategy's run stays under the threshold.)"""
    freeze = gc.get_freeze_count() == 0  # leave a caller's own freeze alone
    if freeze:
        gc.collect()
        gc.freeze()
    threshold = gc.get_threshold()
    gc.set_threshold(threshold[0], threshold[1], max(threshold[2], _FULL_PASS_AFTER))
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        if freeze:
            gc.unfreeze()


_FULL_PASS_AFTER = 1000
"""Young-generation (gen-1) collections between two automatic full collections while replaying
(CPython's default: 10). CPython also waits until the long-lived objects grew by a quarter."""


def _release_run() -> None:
    """Free what is left of a finished strategy's state (`_Run.close`) before the next strategy
    runs: the cycles inside it (items and their memos, ...) wait otherwise for a full collection,
    which the collector schedules rarely while replaying (`_long_lived_gc`), and several
    strategies' leftovers would pile up."""
    gc.collect()


def strategy_done(log_texts: set[str]) -> None:
    """Free what a finished strategy's run left (`_release_run`), the token counts of texts
    the log does not hold, and the heap pages they used, before the next strategy runs."""
    _release_run()
    # After the run is freed, so the digests it allocates do not pin the run's arenas.
    forget_counts(log_texts.__contains__)
    _trim_heap()


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None elsewhere (musl, macOS, Windows, no ctypes)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        trim = libc.malloc_trim
    except (ImportError, OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_MALLOC_TRIM = _malloc_trim()


def _trim_heap() -> None:
    """Return the free pages of the C heap to the system. Texts longer than 512 bytes (tool
    outputs, rendered tool calls, summaries) live there, not in Python's own arenas, and glibc
    keeps what a finished strategy freed in the middle of its heap: without this, the resident
    size of `--strategies all` only ever grows, to the largest sum of strategies' footprints
    (no effect on other C libraries)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _log_texts(session: Session) -> set[str]:
    """Every text the log holds: their token counts are worth keeping in memory from one
    strategy to the next, unlike what a strategy derived from them."""
    texts: set[str] = {session.header.system}
    for e in session.events:
        if isinstance(e, UserMessage):
            texts.add(e.text)
        elif isinstance(e, ToolResult):
            texts.add(e.output)
        elif isinstance(e, AssistantMessage):
            for b in e.blocks:
                texts.add(getattr(b, "text", None) or getattr(b, "thinking", ""))
        elif isinstance(e, Compaction):
            texts.add(e.summary)
        elif isinstance(e, ThreadStart) and e.system is not None:
            texts.add(e.system)
    return texts


def replay_session(
    session: Session,
    strategies: str | Sequence[str] = "all",
    config: ReplayConfig | None = None,
) -> list[RequestRecord]:
    """Replay `session` through each strategy; one record per simulated request."""
    records: list[RequestRecord] = []
    for _named, run_records in iter_replay(session, strategies, config):
        records.extend(run_records)
    return records


def _total(tokens: int | tuple[int, ...]) -> int:
    """A hidden prefix's size, whole or in parts."""
    return tokens if isinstance(tokens, int) else sum(tokens)


def require_requests(session: Session) -> None:
    """A log without any request has nothing to replay: the same error for every command."""
    if not session.requests():
        where = session.path or "the log"
        skipped = session.skipped
        why = (
            f"; {len(skipped)} malformed line(s) skipped, first: {skipped[0]}" if skipped else ""
        )
        raise ReplayError(
            f"{where}: the log has no requests (no `request` events) to replay{why}"
        )


FITTING = "fitting the context the log does not hold"
"""What a progress bar is told while `fit_unlogged_context` replays the log."""
_TELL_EVERY = 0.25
"""Seconds between two progress reports of a strategy's requests."""


def iter_replay(
    session: Session,
    strategies: str | Sequence[str] = "all",
    config: ReplayConfig | None = None,
) -> Iterator[tuple[NamedStrategy, list[RequestRecord]]]:
    """`replay_session`, one strategy at a time: yields each strategy with its records, so a
    caller that only aggregates them (the CLI's summary) holds one strategy's records at once
    instead of every strategy's."""
    config = config or ReplayConfig()
    require_requests(session)
    if config.pricer is None:
        config.pricer = Pricer()
    resolved = resolve(strategies)
    config = with_unlogged_context(session, config, len(resolved))
    log_texts = _log_texts(session)
    facts = _SessionFacts(session)
    share_answers_for(session)
    with _long_lived_gc():
        detail = getattr(config.progress, "detail", None)
        for done, named in enumerate(resolved):
            if config.progress is not None:
                config.progress(named.name, done, len(resolved))
            run = _Run(session, named, config, facts)
            run.run(detail)
            yield named, run.close()
            strategy_done(log_texts)
    if config.progress is not None:
        config.progress("", len(resolved), len(resolved))


__all__ = [
    "MAIN_THREAD",
    "ReplayConfig",
    "RequestRecord",
    "SharedCache",
    "fit_unlogged_context",
    "iter_replay",
    "replay_session",
    "with_unlogged_context",
]
