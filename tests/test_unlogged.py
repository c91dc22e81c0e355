"""Unlogged context fitted on recorded usage (`replay/engine/_unlogged.py`).

Each test writes the usage a provider following the cache rules would bill for a known truth
(context the log does not hold, where the client put its marker, what was cached before the
log), then fits from the log alone: the fit must find the truth again, and the simulated reads
must match the billed ones.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_adapters_common import SAMPLES, needs_samples

from replay.cache import Breakpoint
from replay.engine import ReplayConfig, replay_session
from replay.engine._replay import fit_unlogged_context
from replay.engine._unlogged import (
    CONTEXT,
    RequestFit,
    ThreadFit,
    ThreadUnlogged,
    UnloggedContext,
    place_last_marker,
    shrunk,
    still_sent,
    transient,
)
from replay.fidelity import fidelity_rows, fidelity_summary
from replay.log import (
    MAIN_THREAD,
    AssistantMessage,
    Compaction,
    RequestMarker,
    Session,
    SessionHeader,
    TextBlock,
    ThreadStart,
    Usage,
    UserMessage,
)
from replay.render._request import SYSTEM, TEXT, USER, RenderedRequest
from replay.strategies._view import UserItem

T0 = datetime(2026, 10, 20, 12, 0, tzinfo=UTC)
WORDS = "the quick brown fox jumps over the lazy dog while tests run green again "


def _turns(thread: str, start: int, count: int, t0: datetime) -> list:
    events: list = []
    for n in range(start, start + count):
        ts = t0 + timedelta(seconds=20 * (n - start))
        events.append(UserMessage(ts=ts, text=f"{thread} step {n}: " + WORDS * (25 + 3 * n),
                                  thread=thread, id=f"{thread}-u{n}"))
        events.append(RequestMarker(ts=ts, request_id=f"{thread}-r{n}", thread=thread,
                                    duration_ms=4000))
        events.append(AssistantMessage(ts=ts + timedelta(seconds=4), thread=thread,
                                       blocks=[TextBlock(text=f"done {n}")],
                                       request_id=f"{thread}-r{n}", id=f"{thread}-a{n}"))
    return events


def _session(events: list, hidden: int) -> Session:
    header = SessionHeader(ts=T0, agent="test", provider="anthropic", model="claude-sonnet-4-6")
    header.hidden_prefix_tokens = hidden
    return Session(header=header, events=events)


def _bill(session: Session, truth: UnloggedContext, ttl: str | None = None) -> Session:
    """Fill every request's usage with what the rules bill when `truth` holds (`ttl`: the
    client's markers' TTL, when forced)."""
    config = ReplayConfig(unlogged_context=truth, ttl=ttl)
    records = [r for r in replay_session(session, ["recorded"], config) if r.kind == "request"]
    markers = {(e.thread, e.request_id): e for e in session.events if isinstance(e, RequestMarker)}
    for r in records:
        o = r.outcome
        markers[(r.thread, r.request_id)].usage = Usage(
            input_tokens=o.uncached, cache_read_tokens=o.cache_read,
            cache_write_5m_tokens=o.cache_write_5m, cache_write_1h_tokens=o.cache_write_1h,
            output_tokens=5,
        )
    return session


def _index(session: Session, request_id: str) -> int:
    return next(
        n for n, e in enumerate(session.events)
        if isinstance(e, RequestMarker) and e.request_id == request_id
    )


def _sent_once(session: Session, tokens: int) -> tuple[UnloggedContext, int, int]:
    """`tokens` unlogged tokens carried by request 2 and no longer by request 3 (a transient
    message), and the event indexes of those two requests."""
    second, third = _index(session, "main-r2"), _index(session, "main-r3")
    context = UnloggedContext(requests={
        (MAIN_THREAD, second): RequestFit(before=tokens),
        (MAIN_THREAD, third): RequestFit(drop=((second, "before"),)),
    })
    return context, second, third


def _exact(session: Session) -> list:
    rows = fidelity_rows(session)
    assert [r.simulated_cache_read for r in rows] == [r.recorded_cache_read for r in rows]
    assert [r.simulated_cache_write for r in rows] == [r.recorded_cache_write for r in rows]
    assert [r.simulated_prompt for r in rows] == [r.recorded_prompt for r in rows]
    return rows


def test_an_uncached_tail_moves_the_last_marker_back() -> None:
    # The client marked the request before its last message (attachments rendered after the
    # marker): the provider bills that message uncached and the next request reads up to it.
    session = _session(_turns(MAIN_THREAD, 0, 6, T0), hidden=4000)
    third = _index(session, "main-r3")
    from replay.tokens import counter_for

    last = counter_for("claude-sonnet-4-6").count(session.events[third - 1].text) + 3
    truth = UnloggedContext(requests={(MAIN_THREAD, third): RequestFit(tail=last)})
    _bill(session, truth)
    usage = session.events[third].usage
    assert usage.input_tokens > 100  # the last message, uncached
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.requests[(MAIN_THREAD, third)].tail == usage.input_tokens
    _exact(session)
    # Without the fit, the simulator writes the whole prompt and the next read overshoots.
    plain = fidelity_rows(session, ReplayConfig(unlogged_context={}))
    assert not plain[4].read_within_tolerance


def test_head_split_and_warm_start_are_found_from_the_reads() -> None:
    # Hidden prefix = system + tools (5,000, the first 3,000 cached by an earlier session) +
    # first-message context (1,500, re-sent after the compaction, which reads the head only).
    events = _turns(MAIN_THREAD, 0, 4, T0)
    replaced = [e.id for e in events if e.id]
    later = T0 + timedelta(minutes=2)
    events.append(Compaction(ts=later, summary="Summary of the work so far. " + WORDS * 20,
                             replaces=replaced, id="c1"))
    events += _turns(MAIN_THREAD, 4, 3, later)
    session = _session(events, hidden=6500)
    truth = UnloggedContext(threads={MAIN_THREAD: ThreadFit((3000, 2000), 1500, warm=3000)})
    _bill(session, truth)
    reads = [e.usage.cache_read_tokens for e in session.events if isinstance(e, RequestMarker)]
    assert reads[0] == 3000 and reads[4] == 5000
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.threads == truth.threads
    rows = _exact(session)
    assert rows[0].fitted.startswith("warm start")
    assert rows[4].fitted.startswith("head")
    summary = fidelity_summary(rows)
    assert summary["fitted_reads"] == 2 and summary["predicted_reads_within_tolerance"] == 1.0


def test_subagents_of_one_type_share_their_head() -> None:
    # Two subagents with the same system prompt: the second reads the head the first cached.
    events: list = [UserMessage(ts=T0, text="start " + WORDS * 30, id="m0"),
                    RequestMarker(ts=T0, request_id="main-r0", duration_ms=3000),
                    AssistantMessage(ts=T0, blocks=[TextBlock(text="ok")], request_id="main-r0")]
    for k, name in enumerate(("agent-a", "agent-b")):
        t = T0 + timedelta(seconds=30 + 60 * k)
        start = ThreadStart(ts=t, thread_id=name, system="You are a subagent. " + WORDS * 10)
        start.hidden_prefix_tokens = 4700
        events.append(start)
        events += _turns(name, 0, 2, t)
    session = _session(events, hidden=3000)
    truth = UnloggedContext(threads={
        "agent-a": ThreadFit((4000,), 700), "agent-b": ThreadFit((4000,), 700),
    })
    _bill(session, truth)
    first_b = session.events[_index(session, "agent-b-r0")].usage
    assert first_b.cache_read_tokens > 4000  # the logged system prompt + the shared head
    fit = fit_unlogged_context(session, ReplayConfig())
    assert {t: (f.head, f.context, f.warm) for t, f in fit.threads.items()} == {
        t: (f.head, f.context, f.warm) for t, f in truth.threads.items()
    }
    assert fit.threads["agent-b"].logged > 100  # the logged system prompt comes first
    _exact(session)
    plain = fidelity_rows(session, ReplayConfig(unlogged_context={}))
    assert not next(r for r in plain if r.request_id == "agent-b-r0").read_within_tolerance


def test_a_transient_message_is_dropped_when_the_next_read_stops_before_it() -> None:
    # Request 2 carried 900 unlogged tokens that request 3 did not: request 3 reads only what
    # request 2 read, and is billed 900 tokens less than if they had stayed.
    session = _session(_turns(MAIN_THREAD, 0, 6, T0), hidden=4000)
    truth, second, third = _sent_once(session, 900)
    _bill(session, truth)
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.requests[(MAIN_THREAD, second)].before == 900
    assert fit.requests[(MAIN_THREAD, third)].drop == ((second, "before"),)
    rows = _exact(session)
    assert rows[3].fitted.startswith("transient")


def test_a_message_gone_from_an_openai_prompt_is_found_from_the_billed_size() -> None:
    # OpenAI shows no marker positions: request 2 carried 400 unlogged tokens that request 3
    # did not. Only the billed prompt size tells (400 tokens short of the replay).
    session = _session(_turns(MAIN_THREAD, 0, 6, T0), hidden=2000)
    session.header.provider, session.header.model = "openai", "gpt-5"
    truth, second, third = _sent_once(session, 400)
    _bill(session, truth)
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.requests[(MAIN_THREAD, second)].before == 400
    assert fit.requests[(MAIN_THREAD, third)] == RequestFit(drop=((second, "before"),), shrunk=True)
    rows = _exact(session)
    assert rows[3].fitted is None  # found from the size, not the read: still a prediction
    # Without it the replay carries the 400 tokens on: every later prompt is 400 too long.
    plain = fidelity_rows(session, ReplayConfig(unlogged_context={
        (MAIN_THREAD, second): 400,
    }))
    assert [r.simulated_prompt - r.recorded_prompt for r in plain][3:] == [400, 400, 400]


def _openai_session() -> Session:
    session = _session(_turns(MAIN_THREAD, 0, 6, T0), hidden=2000)
    session.header.provider, session.header.model = "openai", "gpt-5"
    return session


def test_a_surplus_of_a_message_s_framing_or_less_is_no_unlogged_message() -> None:
    # gpt-5 frames a message with 3 tokens: a request billed 3 tokens over its replay holds no
    # message the log lacks (there would be nothing in it), one billed 4 over holds one.
    fits = []
    for extra in (3, 4):
        session = _openai_session()
        _bill(session, UnloggedContext())
        second = _index(session, "main-r2")
        session.events[second].usage.input_tokens += extra
        fit = fit_unlogged_context(session, ReplayConfig())
        fits.append(fit.requests.get((MAIN_THREAD, second)))
    assert fits == [None, RequestFit(before=4)]


def test_a_message_gone_is_found_beyond_a_shortfall_that_persists() -> None:
    # Request 1 carried 400 unlogged tokens that request 4 no longer did. From request 2 on, the
    # provider also bills 200 tokens less than the replay (no message of that size: a surplus
    # the fit cannot remove). Request 4's new shortfall is the message's size only: it is found.
    session = _openai_session()
    first, fourth = _index(session, "main-r1"), _index(session, "main-r4")
    truth = {
        (MAIN_THREAD, first): RequestFit(before=400),
        (MAIN_THREAD, fourth): RequestFit(drop=((first, "before"),)),
    }
    _bill(session, UnloggedContext(requests=truth))
    for n in range(2, 6):
        session.events[_index(session, f"main-r{n}")].usage.input_tokens -= 200
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.requests[(MAIN_THREAD, first)].before == 400
    assert fit.requests[(MAIN_THREAD, fourth)] == RequestFit(drop=((first, "before"),), shrunk=True)


def test_a_shortfall_is_matched_to_a_message_of_its_size_only() -> None:
    def item(tokens: int) -> UserItem:
        return UserItem("x", injected=True, estimated_tokens=tokens - 4)

    old, new, small = item(350), item(340), item(80)
    state = ThreadUnlogged(items={(1, "before"): old, (5, "before"): new, (9, "before"): small})
    sent = [old, new, small]
    assert shrunk(state, sent, 320, 4) == (5, "before")  # the newest of the two that fit
    assert shrunk(state, sent, 60, 4) is None  # noise: below SHRINK_MIN
    assert shrunk(state, sent, 500, 4) is None  # no message that long
    assert shrunk(state, sent, 200, 4) is None  # 350 and 340 exceed it by more than the slack
    assert shrunk(state, [old, small], 320, 4) == (1, "before")  # only what the request sent


def test_short_or_misplaced_messages_are_not_taken_for_transient() -> None:
    state = ThreadUnlogged(end=20_000, starts=[(((5, "before"),), 15_000, 200),
                                                ((CONTEXT,), 8_000, 3_000)])
    assert transient(state, 15_000, 20_000) == ()  # 200 tokens: within the read tolerance
    assert transient(state, 11_000, 20_000) == ()  # the read stops at no entry before one
    assert transient(state, 19_900, 20_000) == ()  # it read (nearly) all: nothing was dropped
    assert transient(state, 8_100, 20_000) == (CONTEXT,)


def _request(tokens: list[int], kinds: list[str]) -> RenderedRequest:
    ids = np.arange(len(tokens))
    return RenderedRequest(
        index=0, request_id="r", thread="main", ts=T0, model="m", provider="anthropic",
        block_ids=ids, block_tokens=np.asarray(tokens), cum_tokens=np.cumsum(tokens),
        item_index=ids, kinds=kinds, positions=ids,
    )


def test_last_marker_placement() -> None:
    req = _request([1000, 300, 40, 500, 200], [SYSTEM, USER, TEXT, USER, USER])
    marks = [Breakpoint(0, "1h"), Breakpoint(4, "1h")]
    assert place_last_marker(marks, req, 3) == marks  # framing tokens: the marker ends it
    assert place_last_marker(marks, req, 210)[-1] == Breakpoint(3, "1h")
    assert place_last_marker(marks, req, 690) == [Breakpoint(0, "1h"), Breakpoint(2, "1h")]
    assert place_last_marker(marks, req, 1100) == [Breakpoint(0, "1h")]  # back to the head


def test_a_dropped_message_leaves_the_history_whole_for_strategies_that_index_it() -> None:
    # Strategies keep positions in the history (what a compaction covered); a transient message
    # that stops being sent must not shift them: every logged item stays in the view. (Rules
    # sized in characters: one sized in tokens counts the message, billed, and may compact at
    # another request.)
    from replay.bench import synthetic_session
    from replay.engine._unlogged import RequestFit
    from replay.log import RequestMarker

    session = synthetic_session(60, 0)
    markers = [n for n, e in enumerate(session.events) if isinstance(e, RequestMarker)]
    for name in ("compact-at-6000-structured", "compact-at-4000-freeform", "baseline"):
        config = ReplayConfig(keep_views=True, unlogged_context={})
        plain = [r for r in replay_session(session, [name], config) if r.kind == "request"]
        for k in range(5, 50, 7):
            fits = UnloggedContext(requests={
                ("main", markers[k]): RequestFit(before=500),
                ("main", markers[k + 1]): RequestFit(drop=((markers[k], "before"),)),
            })
            config = ReplayConfig(keep_views=True, unlogged_context=fits)
            runs = [r for r in replay_session(session, [name], config) if r.kind == "request"]
            logged = [[getattr(i, "event_index", None) for i in r.view
                       if not getattr(i, "estimated_tokens", None)] for r in runs]
            expected = [[getattr(i, "event_index", None) for i in r.view] for r in plain]
            assert logged[k + 1:] == expected[k + 1:], (name, k)


def _overcounted(session: Session, request_id: str, share: float) -> tuple[str, int]:
    """The user message sent at `request_id` and a count of `share` of its family count: what a
    provider whose tokenizer gives that text fewer tokens bills for it."""
    from replay.tokens import counter_for

    text = session.events[_index(session, request_id) - 1].text
    return text, round(counter_for("claude-sonnet-4-6").count(text) * share)


def test_a_prompt_billed_short_sizes_down_the_texts_it_sent_first() -> None:
    # The provider counts request 3's message at 70 % of the family factor: the replay
    # over-counts it, which no unlogged context can make up for. The signed fit sizes it down,
    # so the prompts match and nothing is added; the additive fit carries the excess on.
    session = _session(_turns(MAIN_THREAD, 0, 6, T0), hidden=4000)
    text, billed = _overcounted(session, "main-r3", 0.7)
    _bill(session, UnloggedContext(counts={"claude": {text: billed}}))
    fit = fit_unlogged_context(session, ReplayConfig())
    third = _index(session, "main-r3")
    # The response to request 2 ("done 2") is sent first at request 3 too: it takes its share.
    assert abs(fit.counts["claude"][text] - billed) <= 2
    assert fit.requests[(MAIN_THREAD, third)].scaled > 100
    assert fit.residuals() == {}
    rows = _exact(session)
    assert [r.fitted_scaled > 100 for r in rows] == [False, False, False, True, False, False]
    summary = fidelity_summary(rows)
    assert summary["fitted_scaled_tokens"] == fit.requests[(MAIN_THREAD, third)].scaled
    assert summary["fitted_residual_tokens"] == 0
    additive = fit_unlogged_context(session, ReplayConfig(signed_fit=False))
    assert not additive.counts
    rows = fidelity_rows(session, ReplayConfig(unlogged_context=additive))
    assert all(r.simulated_prompt > r.recorded_prompt + 100 for r in rows[3:])


def test_a_fitted_count_leaves_the_prompt_with_its_item() -> None:
    # What a strategy saves by dropping an over-counted message is its fitted count, not the
    # family estimate: the correction travels with the text, for every strategy.
    from replay.engine._replay import _Run
    from replay.strategies import parse_name

    session = _session(_turns(MAIN_THREAD, 0, 6, T0), hidden=4000)
    text, billed = _overcounted(session, "main-r3", 0.6)
    _bill(session, UnloggedContext(counts={"claude": {text: billed}}))
    fit = fit_unlogged_context(session, ReplayConfig())
    run = _Run(session, parse_name("baseline"), ReplayConfig(unlogged_context=fit))
    renderer = run.renderer("claude-sonnet-4-6")
    items = [UserItem(f"before {n}") for n in range(3)]
    kwargs = dict(system="", tools=(), index=0, request_id="r", ts=T0,
                  model="claude-sonnet-4-6", provider="anthropic")
    kept = renderer.render([*items, UserItem(text)], thread="a", **kwargs).total
    dropped = renderer.render(items, thread="b", **kwargs).total
    assert kept - dropped == fit.counts["claude"][text] + 4  # + the message's framing
    assert renderer.table.counter.count(text + " (truncated)") == counter_for_claude(
        text + " (truncated)"
    )  # a text derived from it is counted with the family factor


def counter_for_claude(text: str) -> int:
    from replay.tokens import counter_for

    return counter_for("claude-sonnet-4-6").count(text)


def test_a_tail_after_the_last_logged_block_is_unlogged_context_after_the_marker() -> None:
    # Request 3 carried 150 unlogged tokens after the client's marker (an attachment) and its
    # message is counted at 80 %: the fit finds both, from the billed size and the tail.
    session = _session(_turns(MAIN_THREAD, 0, 6, T0), hidden=4000)
    third = _index(session, "main-r3")
    text, billed = _overcounted(session, "main-r3", 0.8)
    truth = UnloggedContext(
        requests={(MAIN_THREAD, third): RequestFit(after=150, tail=150)},
        counts={"claude": {text: billed}},
    )
    _bill(session, truth)
    assert session.events[third].usage.input_tokens == 150
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.requests[(MAIN_THREAD, third)].after == 150
    assert abs(fit.counts["claude"][text] - billed) <= 2
    _exact(session)


def test_fitted_counts_apply_to_their_texts_only() -> None:
    from replay.tokens import FittedCounter, counter_for, fitted_counter

    base = counter_for("claude-sonnet-4-6")
    counter = fitted_counter(base, {"a long tool output": 3})
    assert isinstance(counter, FittedCounter)
    assert counter.count("a long tool output") == 3
    assert counter.count("a long tool") == base.count("a long tool")  # derived: the factor
    assert counter.family is base.family and counter.factor == base.factor
    assert fitted_counter(base, None) is base


def test_a_log_billed_by_one_provider_replayed_on_another_model_is_counted_in_its_tokens():
    """The unlogged context is fitted as billed (the log's own model), then converted: on a
    model of another tokenizer family the texts are counted in its tokens. Fitted with the
    other model's tokenizer, the gap between the two passed for unlogged context and every
    prompt kept the log's token counts."""
    from replay.bench import synthetic_session
    from replay.log import RequestMarker, Usage

    session = synthetic_session(12, 0, provider="anthropic", model="claude-sonnet-4-5")
    plain = ReplayConfig(unlogged_context={})
    billed = {r.request_id: r.request.total
              for r in replay_session(session, ["recorded"], plain) if r.kind == "request"}
    for event in session.events:  # billed exactly as replay counts Claude, nothing cached
        if isinstance(event, RequestMarker):
            event.usage = Usage(input_tokens=billed[event.request_id], output_tokens=50)

    def prompts(model: str | None, fitted: bool) -> list[int]:
        config = ReplayConfig(model=model, provider="openai" if model else None,
                              unlogged_context=None if fitted else {})
        return [r.request.total for r in replay_session(session, ["baseline"], config)
                if r.kind == "request"]

    assert prompts(None, fitted=True) == list(billed.values())
    assert prompts("gpt-5.5", fitted=True) == prompts("gpt-5.5", fitted=False)
    assert sum(prompts("gpt-5.5", fitted=True)) < 0.9 * sum(billed.values())


def _compacted_session() -> tuple[Session, int, int]:
    """Four turns, a logged compaction replacing them, three more turns; the index of the
    compaction and of the first request after it."""
    events = _turns(MAIN_THREAD, 0, 4, T0)
    replaced = [e.id for e in events if e.id]
    later = T0 + timedelta(minutes=2)
    events.append(Compaction(ts=later, summary="Summary of the work so far. " + WORDS * 20,
                             replaces=replaced, id="c1", trigger="auto"))
    events += _turns(MAIN_THREAD, 4, 3, later)
    session = _session(events, hidden=4000)
    compaction = next(n for n, e in enumerate(session.events) if isinstance(e, Compaction))
    return session, compaction, _index(session, "main-r4")


def _prompts(session: Session, name: str, fit: UnloggedContext | dict) -> list[int]:
    records = replay_session(session, [name], ReplayConfig(unlogged_context=fit))
    return [r.request.total for r in records if r.kind == "request"]


def test_what_the_harness_sent_with_a_logged_compaction_only_goes_with_it() -> None:
    # Claude Code re-attaches recent files after compacting (~25k tokens on the entire-bmad
    # sample), which the log does not hold: the first request after the compaction is billed
    # for them. A strategy that did not make that compaction still holds those files' reads:
    # it must not be sent them again, from that request on.
    session, compaction, after = _compacted_session()
    _bill(session, UnloggedContext(requests={(MAIN_THREAD, after): RequestFit(before=3000)}))
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.requests[(MAIN_THREAD, after)].before == 3000
    assert fit.requests[(MAIN_THREAD, after)].compaction == compaction
    _exact(session)  # `recorded` made the compaction: it carries them
    without = UnloggedContext(requests={k: v for k, v in fit.requests.items()
                                        if k != (MAIN_THREAD, after)}, threads=fit.threads)
    with_them, plain = _prompts(session, "recorded", fit), _prompts(session, "recorded", without)
    assert [a - b for a, b in zip(with_them, plain, strict=True)][4:] == [3000] * 3
    assert _prompts(session, "baseline", fit) == _prompts(session, "baseline", without)
    # The same residual fitted elsewhere is the request's own context: every strategy sends it.
    elsewhere = _index(session, "main-r2")
    moved = UnloggedContext(requests={(MAIN_THREAD, elsewhere): RequestFit(before=3000)})
    grown = [a - b for a, b in zip(_prompts(session, "baseline", moved),
                                   _prompts(session, "baseline", {}), strict=True)]
    assert grown == [0, 0] + [3000] * 5


def test_a_logged_compaction_replaces_the_unlogged_context_among_the_events_it_names() -> None:
    """A compaction that names the events it replaced also replaced the context the log does
    not hold sent among them (fitted per request): `recorded` sends the 3,000 tokens fitted at
    request 2 until the compaction, not after it."""
    session, _, _ = _compacted_session()
    second = _index(session, "main-r2")
    fit = UnloggedContext(requests={(MAIN_THREAD, second): RequestFit(before=3000)})
    with_it, without = _prompts(session, "recorded", fit), _prompts(session, "recorded", {})
    assert [a - b for a, b in zip(with_it, without, strict=True)] == [0, 0, 3000, 3000, 0, 0, 0]


def test_a_forked_summarizer_is_sent_the_view_as_the_request_sends_it() -> None:
    # An unlogged message no longer sent is out of the request's view: a summarizer call that
    # forks the main thread leaves it out too, or it would part from the cached main prefix
    # there (and bill it again).
    session = _session(_turns(MAIN_THREAD, 0, 8, T0), hidden=4000)
    fits, _, _ = _sent_once(session, 300)
    # Compact at request 6: 5's prompt + output passes window - 20k - 13k, 4's does not.
    window = _prompts(session, "baseline", fits)[5] + 33_000
    config = ReplayConfig(unlogged_context=fits, context_window=window)
    records = replay_session(session, ["claudecode-autocompact-13k"], config)
    (call,) = [r for r in records if r.kind == "summarizer"]
    previous = [r for r in records if r.kind == "request"][5]
    assert call.request_index == 6
    assert call.outcome.cache_read == previous.request.total  # the whole main prefix


def test_a_fresh_summarizer_is_sent_the_unlogged_context_at_its_size() -> None:
    # pi serializes the span it summarizes into one transcript. A message known only by its
    # size cannot be written out: its placeholder text would count ~30 tokens for 2,000. It
    # follows the transcript at its size, unless the request no longer sends it.
    session = _session(_turns(MAIN_THREAD, 0, 8, T0), hidden=4000)
    fits, _, _ = _sent_once(session, 300)
    fourth, seventh = _index(session, "main-r4"), _index(session, "main-r7")
    kept = UnloggedContext(requests={**fits.requests,
                                     (MAIN_THREAD, fourth): RequestFit(before=2000)})
    dropped = RequestFit(drop=((fourth, "before"),))
    gone = UnloggedContext(requests={**kept.requests, (MAIN_THREAD, seventh): dropped})
    calls = []
    for fit in (kept, gone):
        # pi compacts at request 7: 6's prompt + output passes window - 1,024 (its tail is
        # taken before request 7's prompt: request 4 is in the summarized span).
        config = ReplayConfig(unlogged_context=fit, context_window=_prompts(session, "baseline",
                                                                            kept)[6] + 800)
        records = replay_session(session, ["pi-compact-1k-1k"], config)
        (call,) = [r for r in records if r.kind == "summarizer"]
        assert call.request_index == 7
        calls.append(call.request.total)
    assert calls[0] - calls[1] == 2000


def test_a_transcript_leaves_out_what_the_log_holds_only_by_size() -> None:
    from replay.strategies._common import fresh_call

    said = UserItem("fix the failing test", event_index=0)
    unlogged = UserItem("[context not in the log: ~900 tokens]", injected=True,
                        estimated_tokens=890)
    call = fresh_call([said, unlogged], "Summarize.", "summary", style="pi")
    (body,) = call.input_items
    assert "fix the failing test" in body.text and "context not in the log" not in body.text
    assert call.unlogged == (unlogged,)


@needs_samples
def test_a_strategy_without_claude_codes_compaction_is_not_sent_its_restored_files() -> None:
    # entire-bmad 91_03598e5336_9: Claude Code compacted before request 99 and re-attached
    # files the log does not hold (the fit: ~25k tokens there). `baseline` goes on from
    # request 98 with the user's next message: its prompt grows by what the log shows.
    from replay import load, replay

    path = SAMPLES / "claude_code" / (
        "ShamsiievDmytro__entire-bmad__entire-checkpoints-v1__91_03598e5336_9_full.jsonl")
    session = load(path)
    result = replay(session, "recorded,baseline")
    first_after = 99
    fit = result.unlogged_context
    (restored,) = [f for f in fit.requests.values() if f.compaction is not None]
    assert restored.before + restored.after > 20_000
    turns = result.turns.filter(result.turns["kind"] == "request")
    base = turns.filter(turns["strategy"] == "baseline")["prompt_tokens"].to_list()
    rec = turns.filter(turns["strategy"] == "recorded")["prompt_tokens"].to_list()
    assert rec[first_after] < rec[first_after - 1] // 2  # the compaction
    assert 0 < base[first_after] - base[first_after - 1] < 2_500


_POOL = [UserItem(f"message {n}", event_index=n) for n in range(24)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["append", "cut", "drop", "change"]),
            st.lists(st.sampled_from(_POOL), min_size=1, max_size=4),
            st.integers(0, 40),
        ),
        max_size=12,
    )
)
def test_still_sent_filters_each_view_as_a_whole_filter_would(steps) -> None:
    """`still_sent` works from where a view parts from the previous one: it gives what
    filtering the whole view gives, whatever the views do (append, cut back, change an item
    in place in the strategy's own list) and whenever a message is dropped."""
    unlogged, view = ThreadUnlogged(), []
    for kind, items, at in steps:
        if kind == "append":
            view = view + items
        elif kind == "cut":
            view = view[: at % (len(view) + 1)] + items
        elif kind == "drop":
            unlogged.dropped.add(items[0])
        elif view:
            view[at % len(view)] = items[0]  # the same list, changed since it was filtered
        assert still_sent(unlogged, view) == [i for i in view if i not in unlogged.dropped]


# -- the head split and the warm start (`fit_heads`) --


def _billed(request_id: str, read: int, write: int = 0, uncached: int = 600,
            thread: str = MAIN_THREAD, n: int = 0) -> RequestMarker:
    return RequestMarker(ts=T0 + timedelta(seconds=20 * n), request_id=request_id, thread=thread,
                         usage=Usage(input_tokens=uncached, cache_read_tokens=read,
                                     cache_write_5m_tokens=write, output_tokens=5))


def _heads(events: list, hidden: int = 5000, logged: int = 0, explicit: bool = True) -> dict:
    from replay.engine._unlogged import fit_heads

    return fit_heads(
        _session(events, hidden), lambda m, model: explicit, lambda system, model: logged
    )


def _sub(name: str, hidden: int | None = None, system: str | None = None) -> ThreadStart:
    start = ThreadStart(ts=T0, thread_id=name, system=system)
    if hidden is not None:
        start.hidden_prefix_tokens = hidden
    return start


def test_a_subagent_s_hidden_prefix_is_its_own_or_the_session_s_when_it_shares_its_head() -> None:
    """`thread_hidden_prefix`: the thread event's own (0 included), else the session's when the
    thread is sent the session's system prompt, else 0."""
    from replay.engine._unlogged import thread_hidden_prefix

    header = _session([], hidden=4000).header
    assert thread_hidden_prefix(_sub("a"), header) == 4000
    assert thread_hidden_prefix(_sub("a", hidden=700), header) == 700
    assert thread_hidden_prefix(_sub("a", hidden=0), header) == 0  # said: none
    assert thread_hidden_prefix(_sub("a", system="You are a subagent."), header) == 0


def test_no_head_is_fitted_without_a_hidden_prefix_or_marker_positions() -> None:
    """Only threads with a hidden prefix, on caches that show marker positions, are split."""
    events = [_billed("r0", 0, 3000, 2600), _billed("r1", 5600, n=1)]
    assert _heads(events) == {MAIN_THREAD: ThreadFit((3000,), 2000)}
    assert _heads(events, hidden=0) == {}
    assert _heads([_billed("r0", 100)], hidden=0) == {}  # a cached logged head is no warm start
    assert _heads(events, explicit=False) == {}


def test_a_write_that_stops_inside_the_hidden_prefix_shows_where_the_head_ends() -> None:
    """A first request's write (not only a read) that stops inside the hidden prefix is a
    marker of the head."""
    events = [_billed("r0", 0, 3000, 2600), _billed("r1", 5600, n=1)]
    assert _heads(events) == {MAIN_THREAD: ThreadFit((3000,), 2000)}


def test_reads_within_the_tolerance_of_the_hidden_prefix_s_end_show_no_head() -> None:
    """A read or write inside the hidden prefix counts as the head's end only up to the
    smallest hidden prefix of the group minus the read tolerance (beyond: the whole prefix,
    give or take the logged text's count)."""
    def head(reveal: int) -> tuple[int, ...]:
        events = [_billed("r0", 0, 3000, 2600), _billed("r1", reveal, 0, 1200, n=1)]
        return _heads(events)[MAIN_THREAD].head

    assert head(5000 - 256) == (4744,)  # at the limit: a head
    assert head(5000 - 255) == (3000,)
    assert head(4900) == (3000,)


def test_reads_are_placed_after_the_logged_head() -> None:
    """Positions in the usage count the logged tools + system prompt first: the head and the
    warm start are what lies beyond them."""
    events = [_billed("r0", 3500, 0, 2200), _billed("r1", 5800, n=1)]
    assert _heads(events, logged=500) == {MAIN_THREAD: ThreadFit((3000,), 2000, 3000, 500)}


def test_a_warm_start_near_the_whole_hidden_prefix() -> None:
    """No read inside the hidden prefix: a first read within the tolerance of the whole of it
    warms it whole, or, when at least `TAIL_MIN` short of it, up to where it stops (the rest is
    first-message context)."""
    def fit(read: int) -> ThreadFit:
        return _heads([_billed("r0", read, 0, 900), _billed("r1", 5600, n=1)])[MAIN_THREAD]

    assert fit(4990) == ThreadFit((5000,), warm=5000)
    assert fit(4968) == ThreadFit((4968,), 32, 4968)  # TAIL_MIN (32) short: split there
    assert fit(4800) == ThreadFit((4800,), 200, 4800)


def test_a_warm_read_near_the_head_warms_the_whole_head() -> None:
    """A first read within the tolerance of the head found by later reads warms all of it."""
    events = [_billed("r0", 2900, 0, 2700), _billed("r1", 3000, 0, 3000, n=1)]
    assert _heads(events) == {MAIN_THREAD: ThreadFit((3000,), 2000, 3000)}


def test_only_the_first_thread_of_a_head_starts_warm() -> None:
    """Threads sharing a head share its split; what was cached before the log is found by the
    first of them to send a request."""
    events = [_billed("r0", 3000, 0, 2600), _sub("agent-a"),
              _billed("a0", 3000, 0, 2600, thread="agent-a", n=1)]
    assert _heads(events) == {MAIN_THREAD: ThreadFit((3000,), 2000, 3000),
                              "agent-a": ThreadFit((3000,), 2000, 0)}


def test_threads_share_a_head_only_with_the_same_system_prompt_and_a_size_within_tolerance():
    """Threads are grouped by (system prompt, model) and a hidden prefix within the read
    tolerance of the larger (inclusive); the group's head is revealed by any of them, up to
    its smallest hidden prefix less the tolerance."""
    def fits(sub: ThreadStart, sub_read: int = 5800) -> dict:
        events = [_billed("r0", 0, 3000, 2600), sub,
                  _billed("a0", sub_read, 0, 600, thread="agent-a", n=1)]
        return _heads(events)

    assert fits(_sub("agent-a", hidden=5256)) == {MAIN_THREAD: ThreadFit((3000,), 2000),
                                                  "agent-a": ThreadFit((3000,), 2256)}
    assert "agent-a" not in fits(_sub("agent-a", hidden=5257))
    assert "agent-a" not in fits(_sub("agent-a", hidden=5000, system="You are a subagent."))
    # 4,800 is inside agent-a's 5,200 by more than the tolerance, not inside main's 5,000.
    assert fits(_sub("agent-a", hidden=5200), sub_read=4800)[MAIN_THREAD].head == (3000,)


def test_a_thread_no_event_opened_is_sent_the_session_s_hidden_prefix() -> None:
    """A thread whose requests no `thread` event opened is sent the session's head, as the
    engine does: its reads inside the session's hidden prefix split it."""
    events = [_billed("x0", 0, 3000, 2600, thread="agent-x"),
              _billed("x1", 5600, thread="agent-x", n=1)]
    assert _heads(events) == {"agent-x": ThreadFit((3000,), 2000)}


def test_a_thread_with_an_empty_system_prompt_of_its_own_does_not_share_the_session_s_head():
    """An empty `system` is the thread's own system prompt (the engine sends it as such): the
    thread shares no head with the session's, even with a hidden prefix of the same size."""
    def fits(system: str | None) -> dict:
        from replay.engine._unlogged import fit_heads

        events = [_billed("r0", 0, 3000, 2600), _sub("agent-a", hidden=5000, system=system),
                  _billed("a0", 5800, 0, 600, thread="agent-a", n=1)]
        session = _session(events, 5000)
        session.header.system = "You are a coding agent."
        return fit_heads(session, lambda m, model: True, lambda system, model: 0)

    assert fits(None)["agent-a"] == ThreadFit((3000,), 2000)
    assert "agent-a" not in fits("")


def test_threads_of_large_hidden_prefixes_share_a_head_within_the_tolerance_of_the_larger():
    """Grouping uses the read tolerance of the larger hidden prefix: 20,000 and 20,405 tokens
    are within 2 % of 20,405 (408), not of 20,000 (400)."""
    events = [_billed("r0", 0, 15_000, 5600), _sub("agent-a", hidden=20_405),
              _billed("a0", 21_000, 0, 600, thread="agent-a", n=1)]
    assert _heads(events, hidden=20_000)["agent-a"] == ThreadFit((15_000,), 5405)


def test_a_warm_read_is_matched_within_the_tolerance_of_its_own_prompt() -> None:
    """The first read is compared with the head within the read tolerance of its request's
    prompt: a read 500 tokens short of a 3,000-token head, on a 30,000-token prompt (tolerance
    600), warmed the whole head; 256 tokens short on a small prompt too (inclusive), 257 not."""
    def fit(read: int, uncached: int) -> ThreadFit:
        events = [_billed("r0", read, 0, uncached), _billed("r1", 3000, 0, 3000, n=1)]
        return _heads(events)[MAIN_THREAD]

    assert fit(2500, 27_500) == ThreadFit((3000,), 2000, 3000)
    assert fit(2744, 600) == ThreadFit((3000,), 2000, 3000)
    assert fit(2743, 600) == ThreadFit((2743, 257), 2000, 2743)


def test_a_cold_first_request_is_no_warm_start_however_small_the_hidden_prefix() -> None:
    """A first request that read nothing found nothing cached, even when its hidden prefix is
    within the read tolerance of zero."""
    for hidden in (200, 20):
        assert _heads([_billed("r0", 0, hidden, 600)], hidden=hidden) == {}, hidden


def test_a_one_hour_write_inside_the_hidden_prefix_shows_where_the_head_ends() -> None:
    """A first request's write end counts both TTLs' writes."""
    first = RequestMarker(ts=T0, request_id="r0", usage=Usage(
        input_tokens=2600, cache_write_1h_tokens=3000, output_tokens=5))
    assert _heads([first, _billed("r1", 5600, n=1)]) == {MAIN_THREAD: ThreadFit((3000,), 2000)}


def test_threads_of_another_model_share_no_head() -> None:
    """A subagent sent the session's system prompt and hidden prefix size on another model
    has a head of its own (a head is per system prompt and model)."""
    start = ThreadStart(ts=T0, thread_id="agent-a", model="claude-opus-4-6")
    events = [_billed("r0", 0, 3000, 2600), start,
              _billed("a0", 5800, 0, 600, thread="agent-a", n=1)]
    assert "agent-a" not in _heads(events)
    start.model = None
    assert _heads(events)["agent-a"] == ThreadFit((3000,), 2000)


# -- marker placement, transient and shrunk messages --


def test_read_tolerance_is_two_percent_of_the_prompt_at_least_256_tokens() -> None:
    """The fidelity tolerance: max(2 % of the prompt, 256 tokens)."""
    from replay.engine._unlogged import read_tolerance

    assert [read_tolerance(p) for p in (0, 1_000, 12_800, 20_000)] == [256, 256, 256, 400]


def test_a_marker_is_moved_among_the_message_blocks_only() -> None:
    """`place_last_marker`: a last marker on the first message block moved back into the head
    is dropped (the head marker stays); one moved onto an earlier marker's block is dropped
    (no duplicate); with no earlier marker, one moved into the head is dropped too."""
    req = _request([1000, 300, 40, 500, 200], [SYSTEM, USER, TEXT, USER, USER])
    assert place_last_marker([Breakpoint(0, "1h"), Breakpoint(1, "1h")], req, 1040) == [
        Breakpoint(0, "1h")
    ]
    assert place_last_marker([Breakpoint(4, "1h")], req, 1100) == []
    assert place_last_marker([Breakpoint(2, "1h"), Breakpoint(4, "1h")], req, 700) == [
        Breakpoint(2, "1h")
    ]


def test_the_nearest_block_end_takes_the_later_on_a_tie() -> None:
    """`nearest_end`: halfway between two block ends, the marker lands on the later."""
    from replay.engine._unlogged import nearest_end

    cum = np.cumsum([1000, 300, 40, 500, 200])
    assert nearest_end(cum, 1, 1150.0) == 1
    assert nearest_end(cum, 1, 1149.0) == 0


def test_a_read_close_to_where_the_previous_request_wrote_dropped_nothing() -> None:
    """`transient`: a read within the tolerance of the previous request's end read (nearly) all
    of it; among several entries within tolerance of the read, the nearest is the one."""
    near = ThreadUnlogged(end=15_100, starts=[(((5, "before"),), 15_000, 3_000)])
    assert transient(near, 15_000, 20_000) == ()
    two = ThreadUnlogged(end=30_000, starts=[(((5, "before"),), 15_000, 3_000),
                                              ((CONTEXT,), 15_300, 3_000)])
    assert transient(two, 15_250, 20_000) == (CONTEXT,)
    assert transient(two, 15_050, 20_000) == ((5, "before"),)


def test_a_residual_split_around_the_marker_is_transient_as_a_whole() -> None:
    """Request 2 carried 200 unlogged tokens before its marker and 700 after it, request 3
    neither: their size together (not the share before the marker, within the tolerance) makes
    them transient."""
    session = _session(_turns(MAIN_THREAD, 0, 6, T0), hidden=4000)
    second, third = _index(session, "main-r2"), _index(session, "main-r3")
    both = ((second, "before"), (second, "after"))
    truth = UnloggedContext(requests={
        (MAIN_THREAD, second): RequestFit(before=200, after=700, tail=700),
        (MAIN_THREAD, third): RequestFit(drop=both),
    })
    _bill(session, truth)
    fit = fit_unlogged_context(session, ReplayConfig())
    carried = fit.requests[(MAIN_THREAD, second)]
    assert carried.before + carried.after == 900
    assert fit.requests[(MAIN_THREAD, third)].drop == both


def test_a_shortfall_of_shrink_min_tokens_is_noise() -> None:
    """`shrunk`: a prompt billed `SHRINK_MIN` (64) tokens short is noise; 65 short is not."""
    message = UserItem("x", injected=True, estimated_tokens=64)
    state = ThreadUnlogged(items={(3, "before"): message})
    assert shrunk(state, [message], 64, 4) is None
    assert shrunk(state, [message], 65, 4) == (3, "before")


def test_a_moved_marker_lands_on_the_nearest_block_end_and_keeps_its_kind() -> None:
    """`place_last_marker`: 721 tokens before the end (2,040) is 1,319, 19 tokens after block
    1's end (1,300) and 21 before block 2's (1,340): the marker lands after block 1. The moved
    marker keeps its TTL and whether it is the automatic one."""
    req = _request([1000, 300, 40, 500, 200], [SYSTEM, USER, TEXT, USER, USER])
    marks = [Breakpoint(0, "1h"), Breakpoint(4, "5m", automatic=True)]
    assert place_last_marker(marks, req, 721) == [Breakpoint(0, "1h"),
                                                  Breakpoint(1, "5m", automatic=True)]


def test_a_transient_message_is_found_within_the_read_tolerance_inclusive() -> None:
    """`transient` (tolerance 256 on a 10,000-token prompt): a read 256 tokens from the entry
    before a message counts as stopping there, 257 does not; a message of exactly the
    tolerance is noise; a read within the tolerance of where the previous request wrote read
    all of it; a read of nothing (the cache missed) shows no message gone."""
    entry = (((5, "before"),), 15_000, 3_000)
    state = ThreadUnlogged(end=20_000, starts=[entry])
    assert transient(state, 15_256, 10_000) == ((5, "before"),)
    assert transient(state, 15_257, 10_000) == ()
    noise = ThreadUnlogged(end=20_000, starts=[(((5, "before"),), 15_000, 256)])
    assert transient(noise, 15_000, 10_000) == ()
    assert transient(ThreadUnlogged(end=15_256, starts=[entry]), 15_000, 10_000) == ()
    assert transient(ThreadUnlogged(end=15_257, starts=[entry]), 15_000, 10_000) == (
        (5, "before"),)
    head = ThreadUnlogged(end=20_000, starts=[((CONTEXT,), 200, 3_000)])
    assert transient(head, 0, 10_000) == ()
    assert transient(head, 100, 10_000) == (CONTEXT,)


def test_a_shortfall_matches_a_message_up_to_shrink_slack_tokens_longer() -> None:
    """`shrunk`: a message `SHRINK_SLACK` (128) tokens longer than the shortfall, framing
    included, is the one gone; 129 longer is not."""
    fits = UserItem("x", injected=True, estimated_tokens=224)
    longer = UserItem("x", injected=True, estimated_tokens=225)
    assert shrunk(ThreadUnlogged(items={(3, "before"): fits}), [fits], 100, 4) == (3, "before")
    assert shrunk(ThreadUnlogged(items={(3, "before"): longer}), [longer], 100, 4) is None


# -- the residual and the signed fit (`_measure`, `_scale`, `_first_tail`) --


def _table_request(table, blocks: list[tuple]) -> RenderedRequest:
    """A request of the blocks `(kind, text, starts_message[, fixed tokens])` interned in
    `table`."""
    ids = np.array([table.intern(*b) for b in blocks])
    tokens = np.array([table.tokens[i] for i in ids])
    kinds = [table.kinds[i] for i in ids]
    return RenderedRequest(
        index=0, request_id="r", thread="main", ts=T0, model="claude-sonnet-4-6",
        provider="anthropic", block_ids=ids, block_tokens=tokens, cum_tokens=np.cumsum(tokens),
        item_index=np.arange(len(ids)), kinds=kinds, positions=np.arange(len(ids)),
    )


def test_only_new_logged_texts_may_be_sized_down() -> None:
    """`new_texts`: the blocks a request sends first (from `since` on), with their body (the
    count without framing); not the head, thinking, blocks known only by their size, nor texts
    fitted already."""
    from replay.engine._unlogged import new_texts
    from replay.render import BlockTable
    from replay.render._request import THINKING, TOOL_RESULT
    from replay.tokens import counter_for

    table = BlockTable(counter_for("claude-sonnet-4-6"))
    old = (USER, "an older message " + WORDS, True)
    table.intern(*old)
    since = len(table)
    new = (USER, "a new message " + WORDS * 2, True)
    result = (TOOL_RESULT, "a tool output " + WORDS * 3, True)
    request = _table_request(table, [
        (SYSTEM, "You are an agent. " + WORDS, True), old, new,
        (THINKING, "thinking it over " + WORDS, True),
        (USER, "[context not in the log: ~500 tokens]", True, 500),
        (TEXT, "a text fitted already " + WORDS, True), result,
    ])
    positions, bodies = new_texts(table, request, since, {"a text fitted already " + WORDS: 9})
    assert positions.tolist() == [2, 6]
    assert bodies.tolist() == [int(request.block_tokens[n]) - 4 for n in (2, 6)]


def test_a_text_sent_twice_is_sized_once_and_taken_off_twice() -> None:
    """`scale_new_texts`: a block at two places of the request keeps the share of its first;
    the request gives up its correction at each place."""
    from replay.engine._unlogged import scale_new_texts
    from replay.render import BlockTable
    from replay.tokens import counter_for

    table = BlockTable(counter_for("claude-sonnet-4-6"))
    text = "the same tool output " + WORDS * 4
    request = _table_request(table, [(SYSTEM, "You are an agent.", True), (USER, text, True),
                                     (USER, "between", True), (USER, text, True)])
    block = int(request.block_ids[1])
    body = table.tokens[block] - table.overheads[block]
    counts: dict[str, int] = {}
    taken = scale_new_texts(table, request, np.array([1, 3]), np.array([0.5, 0.9]), counts)
    assert counts == {text: round(body * 0.5)}
    assert table.tokens[block] == table.overheads[block] + round(body * 0.5)
    assert taken == 2 * (body - round(body * 0.5))


def test_texts_sized_down_shift_the_block_ends_in_proportion() -> None:
    """`scaled_ends`: a deficit taken off new bodies in proportion to their size moves every
    later block end by what the bodies before it gave up."""
    from replay.engine._unlogged import scaled_ends

    req = _request([1000, 300, 40, 500, 200], [SYSTEM, USER, TEXT, USER, USER])
    ends = scaled_ends(req, np.array([1, 3]), np.array([300, 500]), 80)
    assert ends.tolist() == [1000, 1270, 1310, 1760, 1960]


def test_a_residual_that_covers_the_tail_places_no_marker() -> None:
    """`marker_split`: when the residual after the marker is at least the billed tail, the
    tail is that residual: no split (None); a tail one token longer is split."""
    from replay.engine._unlogged import marker_split

    req = _request([1000, 300, 40, 500, 200], [SYSTEM, USER, TEXT, USER, USER])
    pos, bodies = np.array([3, 4]), np.array([496, 196])
    assert marker_split(req, pos, bodies, 0, 200, 200, 4) is None
    assert marker_split(req, pos, bodies, 0, 200, 201, 4) is not None


def test_the_residual_is_placed_after_the_marker() -> None:
    """`marker_split`: the residual (300 billed beyond the replay) follows the logged text,
    so a 500-token tail puts the marker 200 tokens before the logged end, at block 3's end
    (where the bill puts it: no excess)."""
    from replay.engine._unlogged import MarkerSplit, marker_split

    req = _request([1000, 300, 40, 500, 200], [SYSTEM, USER, TEXT, USER, USER])
    pos, bodies = np.array([3, 4]), np.array([496, 196])
    assert marker_split(req, pos, bodies, 0, 300, 500, 4) == MarkerSplit(3, 0)


def test_kept_shares_follow_the_marker_split_within_bounds() -> None:
    """`kept_shares`: an excess within the message framing says nothing (the deficit goes in
    proportion, none: all kept); the texts after the marker give up at most all they have; a
    share is never below zero."""
    from replay.engine._unlogged import MarkerSplit, kept_shares

    pos, bodies = np.array([1, 3]), np.array([300, 500])
    assert kept_shares(pos, bodies, 0, MarkerSplit(2, 4), 4) is None
    shares = kept_shares(pos, bodies, 800, MarkerSplit(2, 100), 4)
    assert shares.tolist() == pytest.approx([2 / 3, 0.0])
    assert kept_shares(np.array([1]), np.array([100]), 150, None, 4).tolist() == [0.0]


def test_the_first_block_a_request_sends_may_be_sized_down_unless_it_has_no_body() -> None:
    """`new_texts`: the block interned at `since` is sent first too; a tool schema is head, and
    a message with no body (framing only) has nothing to size down."""
    from replay.engine._unlogged import new_texts
    from replay.render import BlockTable
    from replay.render._request import TOOL
    from replay.tokens import counter_for

    table = BlockTable(counter_for("claude-sonnet-4-6"))
    since = len(table)
    request = _table_request(table, [
        (USER, "the first message " + WORDS, True), (TOOL, "a tool schema " + WORDS, True),
        (USER, "", True), (USER, "the second message " + WORDS, True),
    ])
    positions, _ = new_texts(table, request, since, {})
    assert positions.tolist() == [0, 3]


def test_a_marker_moved_before_every_message_lands_on_the_head_s_last_block() -> None:
    """`nearest_end`: a target before the head's last block end lands on that block, never
    inside the head."""
    from replay.engine._unlogged import nearest_end

    cum = np.cumsum([1000, 300, 40, 500, 200])
    assert nearest_end(cum, 2, 10.0) == 1


def test_a_residual_of_framing_or_less_explains_no_tail() -> None:
    """`marker_split`: a request billed 4 tokens (gpt/Claude message framing) beyond its replay
    holds no residual after the marker: a 4-token tail is still split (at the last block,
    nothing over-counted)."""
    from replay.engine._unlogged import MarkerSplit, marker_split

    req = _request([1000, 300, 40, 500, 200], [SYSTEM, USER, TEXT, USER, USER])
    pos, bodies = np.array([3, 4]), np.array([496, 196])
    assert marker_split(req, pos, bodies, 0, 4, 4, 4) == MarkerSplit(4, 0)
    assert marker_split(req, pos, bodies, 0, 5, 5, 4) is None


def test_a_marker_s_excess_is_measured_in_the_request_s_own_counts() -> None:
    """`marker_split`: the new texts sized down by an 80-token deficit (block ends 1,000, 1,270,
    1,310, 1,760, 1,960) place a 500-token tail's marker after block 2; what the blocks up to
    it render (1,340) is compared with where the bill puts the marker in the request's own
    positions (2,040 - 80 - 500 = 1,460)."""
    from replay.engine._unlogged import MarkerSplit, marker_split

    req = _request([1000, 300, 40, 500, 200], [SYSTEM, USER, TEXT, USER, USER])
    split = marker_split(req, np.array([1, 3]), np.array([300, 500]), 80, -80, 500, 4)
    assert split == MarkerSplit(2, -120)


def test_kept_shares_give_the_texts_after_the_marker_the_rest_of_the_deficit() -> None:
    """`kept_shares`: with a 300-token deficit and 100 over-counted before the marker, the text
    before it gives up 100 of 300, those after it the other 200 of 500; an excess of all the
    text before the marker takes all of it (and the deficit it covers leaves nothing after)."""
    from replay.engine._unlogged import MarkerSplit, kept_shares

    pos, bodies = np.array([1, 3]), np.array([300, 500])
    assert kept_shares(pos, bodies, 300, MarkerSplit(2, 100), 4).tolist() == pytest.approx(
        [2 / 3, 0.6])
    assert kept_shares(pos, bodies, 300, MarkerSplit(2, 300), 4).tolist() == [0.0, 1.0]


def _moved_to_input(session: Session, request_id: str, tokens: int, extra: int = 0) -> int:
    """Bill `tokens` of a request's cache write uncached instead (`extra`: billed on top, as
    cache writes), returning its event index."""
    n = _index(session, request_id)
    usage = session.events[n].usage
    usage.cache_write_5m_tokens += extra - tokens
    usage.input_tokens += tokens
    return n


def test_an_exact_tokenizer_s_shortfall_is_not_scaled() -> None:
    """OpenAI's tokenizer is exact: a request billed short of its replay (no message of that
    size to drop) sizes no text down; it is carried as a shortfall."""
    session = _openai_session()
    _bill(session, UnloggedContext())
    session.events[_index(session, "main-r3")].usage.input_tokens -= 300
    fit = fit_unlogged_context(session, ReplayConfig())
    assert not any(fit.counts.values()) and fit.scaled() == {}


def test_an_uncached_tail_of_tail_min_tokens_is_a_tail() -> None:
    """A request billed `TAIL_MIN` (32) tokens after the client's last marker has an uncached
    tail; 31 are framing."""
    tails = []
    for tokens in (31, 32):
        session = _session(_turns(MAIN_THREAD, 0, 5, T0), hidden=4000)
        _bill(session, UnloggedContext())
        third = _moved_to_input(session, "main-r3", tokens)
        fit = fit_unlogged_context(session, ReplayConfig())
        tails.append(fit.requests.get((MAIN_THREAD, third), RequestFit()).tail)
    assert tails == [0, 32]


@pytest.mark.parametrize("extra", [304, 306])
def test_a_residual_share_before_the_marker_of_framing_or_less_goes_after_it(extra: int) -> None:
    """A residual a few tokens longer than the uncached tail, up to 4 more (Claude's message
    framing), is one message after the marker: the share before it would be framing only."""
    session = _session(_turns(MAIN_THREAD, 0, 5, T0), hidden=4000)
    _bill(session, UnloggedContext())
    third = _moved_to_input(session, "main-r3", 302, extra=extra)
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.requests[(MAIN_THREAD, third)] == RequestFit(after=extra, tail=302)


def test_only_a_residual_after_a_compaction_is_the_compaction_s_context() -> None:
    """`RequestFit.compaction` marks what the harness sent with a logged compaction: the first
    request after one billed with its last message uncached (the marker before it) but no
    residual carries none."""
    from replay.tokens import counter_for

    session, _, after = _compacted_session()
    _bill(session, UnloggedContext())
    last = counter_for("claude-sonnet-4-6").count(session.events[after - 1].text) + 4
    _moved_to_input(session, "main-r4", last)
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.requests[(MAIN_THREAD, after)] == RequestFit(tail=last)


def test_a_shortfall_the_texts_could_not_absorb_does_not_size_later_texts_down() -> None:
    """A request billed shorter than all its new texts leaves a shortfall that persists
    (a surplus of the replay): later requests billed short by as much size nothing down."""
    session = _session(_turns(MAIN_THREAD, 0, 6, T0), hidden=4000)
    _bill(session, UnloggedContext())
    for n in range(2, 6):
        session.events[_index(session, f"main-r{n}")].usage.cache_read_tokens -= 2000
    fit = fit_unlogged_context(session, ReplayConfig())
    assert list(fit.scaled()) == [(MAIN_THREAD, _index(session, "main-r2"))]


def test_a_later_request_s_tail_inside_its_last_message_sizes_nothing_down() -> None:
    """Only a thread's first request, whose hidden prefix was sized as the bill minus the log,
    gives the texts after the marker's excess to the hidden prefix."""
    session = _session(_turns(MAIN_THREAD, 0, 5, T0), hidden=4000)
    _bill(session, UnloggedContext())
    third = _moved_to_input(session, "main-r3", 300)
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.grown == {} and not any(fit.counts.values())
    assert fit.requests[(MAIN_THREAD, third)] == RequestFit(tail=300)


def _first_request_sends(texts: list[str]) -> list:
    """A first request that sends `texts` as user messages of their own, then two turns."""
    events = [UserMessage(ts=T0, text=t, id=f"u{k}") for k, t in enumerate(texts)]
    events += [RequestMarker(ts=T0, request_id="main-r0", duration_ms=4000),
               AssistantMessage(ts=T0, blocks=[TextBlock(text="done")], request_id="main-r0")]
    return events + _turns(MAIN_THREAD, 1, 2, T0 + timedelta(seconds=20))


def test_a_first_request_s_texts_after_the_marker_give_up_its_excess() -> None:
    """On a thread's first request, when the texts after the client's marker render more
    than the billed tail, those texts (not the one the marker follows) are sized down to it
    and the hidden prefix grows by as much."""
    texts = ["first " + WORDS * 30, "second " + WORDS * 30]
    events = _first_request_sends(texts)
    session = _session(events, hidden=4000)
    _bill(session, UnloggedContext())
    _moved_to_input(session, "main-r0", 300)
    fit = fit_unlogged_context(session, ReplayConfig())
    assert list(fit.counts["claude"]) == [texts[1]]
    assert fit.counts["claude"][texts[1]] == pytest.approx(300 - 4, abs=2)
    assert fit.grown[MAIN_THREAD] > 100
    assert fit.residuals() == {}  # what they gave up stays in the prompt, in the hidden prefix


def test_a_first_message_context_the_next_request_did_not_send_again_is_dropped() -> None:
    """The first request sent 500 tokens of first-message context after a 3,000-token head
    that request 1 did not send as it was (it read the head only, and was billed as much less):
    the context is dropped from request 1 on."""
    session = _session(_turns(MAIN_THREAD, 0, 5, T0), hidden=3500)
    second = _index(session, "main-r1")
    truth = UnloggedContext(threads={MAIN_THREAD: ThreadFit((3000,), 500)},
                            requests={(MAIN_THREAD, second): RequestFit(drop=(CONTEXT,))})
    _bill(session, truth)
    assert session.events[second].usage.cache_read_tokens == 3000
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.threads == truth.threads
    assert fit.requests[(MAIN_THREAD, second)].drop == (CONTEXT,)
    rows = _exact(session)
    assert rows[1].fitted.startswith("transient")


def test_a_transient_message_is_found_after_a_one_hour_write() -> None:
    """Where the previous request's marker wrote counts its 1-hour writes: a client that marks
    with a 1-hour TTL still shows a transient message."""
    session = _session(_turns(MAIN_THREAD, 0, 6, T0), hidden=4000)
    truth, second, third = _sent_once(session, 900)
    _bill(session, truth, ttl="1h")
    assert session.events[second].usage.cache_write_1h_tokens > 0
    fit = fit_unlogged_context(session, ReplayConfig(ttl="1h"))
    assert fit.requests[(MAIN_THREAD, third)].drop == ((second, "before"),)


def test_a_request_without_usage_is_not_fitted() -> None:
    """A request the log gives no usage for is replayed as it is: nothing is measured or
    dropped there."""
    session = _session(_turns(MAIN_THREAD, 0, 6, T0), hidden=4000)
    truth, second, third = _sent_once(session, 900)
    _bill(session, truth)
    session.events[third].usage = None
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.requests[(MAIN_THREAD, second)].before == 900
    assert (MAIN_THREAD, third) not in fit.requests


def test_a_prompt_with_marker_positions_is_not_searched_for_a_message_gone_by_its_size() -> None:
    """Anthropic shows marker positions: a 200-token message that request 3 no longer sent
    (within the read tolerance, so the read does not show it) is not found from the billed size
    (shrunk prompts are for caches without marker positions)."""
    session = _session(_turns(MAIN_THREAD, 0, 6, T0), hidden=4000)
    truth, second, third = _sent_once(session, 200)
    _bill(session, truth)
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.requests[(MAIN_THREAD, second)].before == 200
    assert fit.requests.get((MAIN_THREAD, third), RequestFit()).drop == ()


def test_a_message_gone_leaves_what_the_request_added_instead_as_its_residual() -> None:
    """Request 3 no longer sent request 2's 400 unlogged tokens but 100 new ones: billed 300
    short, within `SHRINK_SLACK` of the message, which is dropped; the 100 tokens it carried
    instead are its residual."""
    session = _openai_session()
    truth, second, third = _sent_once(session, 400)
    truth.requests[(MAIN_THREAD, third)] = RequestFit(before=100, drop=((second, "before"),))
    _bill(session, truth)
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.requests[(MAIN_THREAD, third)] == RequestFit(
        before=100, drop=((second, "before"),), shrunk=True)
    _exact(session)


def test_a_first_request_without_a_hidden_prefix_gives_its_tail_to_nothing() -> None:
    """Only a hidden prefix sized as the bill minus the log takes what the texts after the
    marker give up: without one, a first request's marker before its last text sizes nothing
    down."""
    texts = ["first " + WORDS * 80, "second " + WORDS * 30]  # cacheable without a head
    events = _first_request_sends(texts)
    session = _session(events, hidden=0)
    _bill(session, UnloggedContext())
    assert session.events[2].usage.cache_write_5m_tokens > 1024
    first = _moved_to_input(session, "main-r0", 400)  # the marker after the first text
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.grown == {} and not any(fit.counts.values())
    assert fit.requests[(MAIN_THREAD, first)] == RequestFit(tail=400)


def test_a_residual_after_the_second_logged_compaction_is_that_compaction_s_context() -> None:
    """`RequestFit.compaction` names the compaction the request is its thread's first after:
    the latest one."""
    events = _turns(MAIN_THREAD, 0, 3, T0)
    later = T0 + timedelta(minutes=2)
    events.append(Compaction(ts=later, summary="First summary. " + WORDS * 20,
                             replaces=[e.id for e in events if e.id], id="c1", trigger="auto"))
    events += _turns(MAIN_THREAD, 3, 2, later)
    latest = T0 + timedelta(minutes=4)
    events.append(Compaction(ts=latest, summary="Second summary. " + WORDS * 20,
                             replaces=[e.id for e in events if e.id], id="c2", trigger="auto"))
    events += _turns(MAIN_THREAD, 5, 2, latest)
    session = _session(events, hidden=4000)
    second = [n for n, e in enumerate(session.events) if isinstance(e, Compaction)][1]
    after = _index(session, "main-r5")
    _bill(session, UnloggedContext(requests={(MAIN_THREAD, after): RequestFit(before=3000)}))
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.requests[(MAIN_THREAD, after)] == RequestFit(before=3000, compaction=second)


def test_a_cache_without_a_thinking_rule_bills_earlier_thinking() -> None:
    """Gemini's rules say nothing of stripping earlier thinking: a prompt billed with it holds
    no unlogged context (the billed size keeps every thinking block)."""
    session = _session(_thinking_turns(3), hidden=2000)
    session.header.provider, session.header.model = "google", "gemini-2.5-pro"
    _bill(session, UnloggedContext())
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.residuals() == {} and not any(fit.counts.values())


def _thinking_turns(count: int) -> list:
    """`count` turns whose answers carry reasoning (what OpenAI strips from later prompts)."""
    from replay.log import ThinkingBlock

    events: list = []
    for n in range(count):
        ts = T0 + timedelta(seconds=20 * n)
        events += [
            UserMessage(ts=ts, text=f"step {n}: " + WORDS * 20, id=f"u{n}"),
            RequestMarker(ts=ts, request_id=f"main-r{n}", duration_ms=4000),
            AssistantMessage(ts=ts, request_id=f"main-r{n}", id=f"a{n}", blocks=[
                ThinkingBlock(thinking=f"thinking {n}: " + WORDS * 30),
                TextBlock(text=f"done {n}")]),
        ]
    return events


def test_a_prompt_is_compared_with_its_replay_as_the_provider_bills_it() -> None:
    """gpt-5 drops earlier turns' reasoning from the prompt it bills: the residual is measured
    against the replay without it (400 unlogged tokens at request 2, nothing else)."""
    session = _session(_thinking_turns(5), hidden=2000)
    session.header.provider, session.header.model = "openai", "gpt-5"
    second = _index(session, "main-r2")
    _bill(session, UnloggedContext(requests={(MAIN_THREAD, second): RequestFit(before=400)}))
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.residuals() == {(MAIN_THREAD, second): 400}



# -- a fitted context applied: its sizes, the cache seeded, a compaction's context --


def test_a_plain_dict_of_residuals_keeps_only_the_nonzero_ones() -> None:
    """`UnloggedContext.of` a {(thread, event): tokens} dict: a zero is no fitted message (an
    all-zero dict is an empty, falsy context)."""
    key = (MAIN_THREAD, 4)
    assert not UnloggedContext.of({key: 0})
    assert UnloggedContext.of({key: 0, (MAIN_THREAD, 7): 300}).requests == {
        (MAIN_THREAD, 7): RequestFit(before=300)
    }


def test_a_context_is_fitted_when_it_holds_any_part_but_an_empty_count_table() -> None:
    """A fitted context is truthy when anything was fitted: a grown hidden prefix alone is
    one; a tokenizer family with no fitted count is not."""
    assert UnloggedContext(grown={MAIN_THREAD: 300})
    assert not UnloggedContext(counts={"claude": {}})
    assert UnloggedContext(counts={"claude": {"text": 7}})


def test_residuals_count_the_share_after_the_marker_too() -> None:
    """`residuals()` (what the fidelity rows report as fitted residual) is before + after."""
    fit = UnloggedContext(requests={(MAIN_THREAD, 3): RequestFit(after=150, tail=150),
                                    (MAIN_THREAD, 5): RequestFit(before=40, after=10),
                                    (MAIN_THREAD, 6): RequestFit(tail=90)})
    assert fit.residuals() == {(MAIN_THREAD, 3): 150, (MAIN_THREAD, 5): 50}


def test_a_fitted_context_resized_converts_every_size_but_the_counts() -> None:
    """On another tokenizer every fitted size is converted (head, context, warm, logged; before,
    after, tail; grown); the fitted text counts are per family and stay."""
    counts = {"claude": {"text": 7}}
    fit = UnloggedContext(
        threads={MAIN_THREAD: ThreadFit((3000, 1000), 600, 3000, 200)},
        requests={(MAIN_THREAD, 3): RequestFit(before=100, after=50, tail=80, scaled=30)},
        grown={MAIN_THREAD: 40}, counts=counts,
    )
    half = fit.resized(0.5)
    assert half.threads == {MAIN_THREAD: ThreadFit((1500, 500), 300, 1500, 100)}
    assert half.requests == {(MAIN_THREAD, 3): RequestFit(before=50, after=25, tail=40,
                                                          scaled=30)}
    assert half.grown == {MAIN_THREAD: 20} and half.counts is counts


def test_fitted_messages_are_sized_framing_included() -> None:
    """An unlogged message, and a first-message context, fitted at N tokens render N tokens:
    the family's message framing is part of the size."""
    from replay.engine._unlogged import context_item, unlogged_item
    from replay.tokens import counter_for

    counter = counter_for("claude-sonnet-4-6")
    overhead = counter.family.message_overhead
    assert overhead > 0
    assert unlogged_item(500, 3, counter).estimated_tokens == 500 - overhead
    assert context_item(1500, counter).estimated_tokens == 1500 - overhead


def test_a_forked_summarizer_call_opens_with_the_first_message_context() -> None:
    """A call that reuses the main prefix is sent the view as the request sends it: after the
    thread's first-message context. A fresh call is sent without it."""
    from replay.engine._unlogged import call_as_sent
    from replay.strategies._view import SummarizerCall

    context = UserItem("[first-message context]", injected=True, estimated_tokens=1500)
    said = (UserItem("fix it", event_index=0), UserItem("done", event_index=2))
    u = ThreadUnlogged(context=context)
    forked = SummarizerCall(input_items=said, instruction="Summarize.", summary="s")
    assert call_as_sent(u, forked).input_items == (context, *said)
    fresh = SummarizerCall(input_items=said, instruction="Summarize.", summary="s",
                           reuse_main_prefix=False)
    assert call_as_sent(u, fresh).input_items == said


def test_a_fresh_summarizer_call_is_sent_without_the_messages_no_longer_sent() -> None:
    """A call that does not reuse the main prefix leaves out the unlogged messages the thread
    no longer sends, from its input and from what follows its transcript at its size."""
    from replay.engine._unlogged import call_as_sent
    from replay.strategies._view import SummarizerCall

    said = UserItem("fix it", event_index=0)
    gone = UserItem("[context not in the log]", event_index=1, injected=True, estimated_tokens=900)
    kept = UserItem("[context not in the log]", event_index=3, injected=True, estimated_tokens=500)
    u = ThreadUnlogged(dropped={gone})
    fresh = SummarizerCall(input_items=(said, gone), instruction="Summarize.", summary="s",
                           reuse_main_prefix=False, unlogged=(gone, kept))
    sent = call_as_sent(u, fresh)
    assert sent.input_items == (said,) and sent.unlogged == (kept,)


def test_an_uncached_tail_moves_only_its_own_request_s_marker() -> None:
    """A tail fitted at request 3 moves that request's marker only: request 4 (no fit of its
    own) is marked at its end again, and bills nothing uncached."""
    session = _session(_turns(MAIN_THREAD, 0, 6, T0), hidden=4000)
    third = _index(session, "main-r3")

    def uncached(fit: UnloggedContext | dict) -> list[int]:
        records = replay_session(session, ["recorded"], ReplayConfig(unlogged_context=fit))
        return [r.outcome.uncached for r in records if r.kind == "request"]

    moved = uncached(UnloggedContext(requests={(MAIN_THREAD, third): RequestFit(tail=600)}))
    plain = uncached({})
    assert moved[3] > plain[3] + 500  # its last message, uncached
    assert moved[4:] == plain[4:]


def test_a_head_without_first_message_context_sends_none() -> None:
    """A hidden prefix fitted as all head (no first-message context) adds no message."""
    session = _session(_turns(MAIN_THREAD, 0, 4, T0), hidden=4000)
    whole = UnloggedContext(threads={MAIN_THREAD: ThreadFit((4000,))})
    assert _prompts(session, "baseline", whole) == _prompts(session, "baseline", {})


def test_a_grown_hidden_prefix_grows_its_first_message_context_or_its_head() -> None:
    """`UnloggedContext.grown` adds its tokens to every request of the thread: to the
    first-message context when the head is split, else to the hidden prefix."""
    session = _session(_turns(MAIN_THREAD, 0, 4, T0), hidden=4000)
    split = {MAIN_THREAD: ThreadFit((3000,), 1000)}
    for threads in (split, {}):
        plain = _prompts(session, "baseline", UnloggedContext(threads=threads))
        grown = _prompts(session, "baseline",
                         UnloggedContext(threads=threads, grown={MAIN_THREAD: 300}))
        assert [a - b for a, b in zip(grown, plain, strict=True)] == [300] * 4, threads


def test_the_cache_is_seeded_once_and_only_with_what_was_cached_before_the_log() -> None:
    """A warm start seeds the cache with the warm part of the head before the thread's first
    request only (an hour later the entry has expired: nothing seeds it again); a cold head
    seeds nothing, not even the logged system prompt."""
    events = _turns(MAIN_THREAD, 0, 2, T0)
    events[3:] = _turns(MAIN_THREAD, 1, 1, T0 + timedelta(hours=1))
    session = _session(events, hidden=4000)
    session.header.system = "You are a coding agent. " + WORDS * 150

    def reads(fit: ThreadFit) -> list[int]:
        config = ReplayConfig(unlogged_context=UnloggedContext(threads={MAIN_THREAD: fit}))
        return [r.outcome.cache_read for r in replay_session(session, ["recorded"], config)
                if r.kind == "request"]

    warm = reads(ThreadFit((3000,), 1000, 3000))
    assert warm[0] > 3000 and warm[1] == 0
    assert reads(ThreadFit((3000,), 1000)) == [0, 0]


def test_a_view_without_the_compaction_drops_its_uncached_share_from_the_tail_too() -> None:
    """The share of a compaction's restored context after the marker leaves the uncached tail
    with it: a strategy that did not make the compaction places its markers as without it."""
    session, compaction, after = _compacted_session()
    fit = UnloggedContext(requests={(MAIN_THREAD, after): RequestFit(
        before=3000, after=500, tail=500, compaction=compaction)})

    def outcomes(context: UnloggedContext | dict) -> list:
        records = replay_session(session, ["baseline"], ReplayConfig(unlogged_context=context))
        return [(r.outcome.cache_read, r.outcome.cache_write_5m, r.outcome.uncached)
                for r in records if r.kind == "request"]

    assert outcomes(fit) == outcomes({})


def test_marker_positions_are_read_from_the_request_s_own_provider() -> None:
    """Whether a request's usage shows marker positions follows its own provider (a request
    routed to Anthropic in a log whose header says OpenAI), else the session's."""
    from replay.engine._replay import _Run
    from replay.strategies import parse_name

    session = _openai_session()
    run = _Run(session, parse_name("recorded"), ReplayConfig(unlogged_context={}))
    claude = RequestMarker(ts=T0, request_id="r", provider="anthropic", model="claude-sonnet-4-6")
    assert run.unlogged.explicit_marker(claude)
    assert not run.unlogged.explicit_marker(RequestMarker(ts=T0, request_id="r"))


def test_marker_positions_are_read_on_the_thread_s_model_when_the_call_names_none() -> None:
    """A call without its own model runs on its thread's (then the header's), as the engine
    renders it: on OpenRouter a subagent thread on a Claude model shows marker positions in a
    session whose header names an OpenAI model, which shows none."""
    from replay.engine._replay import _Run
    from replay.engine._unlogged import fit_heads
    from replay.strategies import parse_name

    session = _openai_session()
    session.header.provider, session.header.model = "openrouter", "openai/gpt-5"
    claude = "anthropic/claude-sonnet-4.5"
    start = ThreadStart(ts=T0, thread_id="agent-a", model=claude)
    marker = _billed("agent-r1", read=1000, thread="agent-a")
    session.events += [start, marker]
    run = _Run(session, parse_name("recorded"), ReplayConfig(unlogged_context={}))
    assert run.unlogged.explicit_marker(marker, claude)
    assert not run.unlogged.explicit_marker(marker)
    seen: list[str] = []
    fit_heads(session, lambda m, model: seen.append(model) or False, lambda system, model: 0)
    assert seen[-1] == claude


def test_a_grown_head_without_first_message_context_grows_its_last_part() -> None:
    """Grown tokens go to the last part of a head split in two: the part cached before the log
    is still read whole on the first request."""
    events = _turns(MAIN_THREAD, 0, 2, T0)
    session = _session(events, hidden=5000)
    session.header.system = "You are a coding agent. " + WORDS * 150
    warm = ThreadFit((3000, 2000), 0, 3000)

    def first_read(grown: dict) -> int:
        fit = UnloggedContext(threads={MAIN_THREAD: warm}, grown=grown)
        records = replay_session(session, ["recorded"], ReplayConfig(unlogged_context=fit))
        return next(r.outcome.cache_read for r in records if r.kind == "request")

    assert first_read({MAIN_THREAD: 300}) == first_read({}) > 3000


def test_a_hidden_prefix_cached_whole_before_the_log_is_seeded() -> None:
    """A warm start that read the whole hidden prefix (no first-message context split off)
    seeds the cache with all of it: the first request reads it."""
    session = _session(_turns(MAIN_THREAD, 0, 2, T0), hidden=4000)
    session.header.system = "You are a coding agent. " + WORDS * 150
    fit = UnloggedContext(threads={MAIN_THREAD: ThreadFit((4000,), warm=4000)})
    records = replay_session(session, ["recorded"], ReplayConfig(unlogged_context=fit))
    assert next(r.outcome.cache_read for r in records if r.kind == "request") > 4000


def test_a_fitted_context_resized_rounds_each_size_to_the_nearest_token() -> None:
    """Converted sizes are rounded to the nearest token, not truncated: truncation would shrink
    every fitted size on another tokenizer (7 × 1.1 = 7.7 → 8, not 7)."""
    fit = UnloggedContext(
        threads={MAIN_THREAD: ThreadFit((7,), 7, 7, 7)},
        requests={(MAIN_THREAD, 3): RequestFit(before=7, after=7, tail=7)},
        grown={MAIN_THREAD: 7},
    )
    grown = fit.resized(1.1)
    assert grown.threads == {MAIN_THREAD: ThreadFit((8,), 8, 8, 8)}
    assert grown.requests == {(MAIN_THREAD, 3): RequestFit(before=8, after=8, tail=8)}
    assert grown.grown == {MAIN_THREAD: 8}


def test_dropped_now_follows_every_message_dropped_since_it_was_last_asked() -> None:
    """The frozen copy a break-even counterfactual reads (`RenderedWith.dropped`) is renewed
    whenever a message was dropped since: a stale copy would have the counterfactual re-send a
    message the thread no longer sends."""
    u = ThreadUnlogged()
    first, second = UserItem("a", estimated_tokens=300), UserItem("b", estimated_tokens=400)
    assert u.dropped_now() == frozenset()
    u.dropped.add(first)
    assert u.dropped_now() == {first}
    u.dropped.add(second)
    assert u.dropped_now() == {first, second}


def test_an_empty_view_stays_empty_with_a_first_message_context() -> None:
    """The first-message context opens a view, it is no view by itself: a strategy that sent
    nothing must still be caught by the engine's empty-request check."""
    from replay.engine._unlogged import as_sent

    context = UserItem("[first-message context]", injected=True, estimated_tokens=1500)
    assert as_sent(ThreadUnlogged(context=context), []) == []


def test_a_grown_head_in_parts_grows_its_last_part() -> None:
    """A head split in parts with no first-message context (a warm read stopped inside it)
    grows by its last part: the first part, where the warm read stopped, stays as the reads
    showed it."""
    session = _session(_turns(MAIN_THREAD, 0, 3, T0), hidden=4000)
    threads = {MAIN_THREAD: ThreadFit((3000, 1000))}
    config = ReplayConfig(unlogged_context=UnloggedContext(threads=threads,
                                                           grown={MAIN_THREAD: 300}))
    for r in replay_session(session, ["baseline"], config):
        kinds, tokens = r.request.kinds, r.request.block_tokens
        hidden = [int(t) for t, k in zip(tokens, kinds, strict=True) if k == SYSTEM][-2:]
        assert hidden == [3000, 1300], hidden


def test_a_thread_without_a_hidden_prefix_has_none_to_split_or_grow() -> None:
    """A head fit (or growth) names a hidden prefix to split: a thread the log gives none (a
    fit made for another log, or a subagent with a system prompt of its own) is sent none."""
    session = _session(_turns(MAIN_THREAD, 0, 3, T0), hidden=0)
    fit = UnloggedContext(threads={MAIN_THREAD: ThreadFit((3000,), 1000)},
                          grown={MAIN_THREAD: 300})
    assert _prompts(session, "baseline", fit) == _prompts(session, "baseline", {})


@pytest.mark.parametrize("before", [0, 3000])
def test_a_compaction_s_share_after_the_marker_leaves_the_tail_framing_included(
    before: int,
) -> None:
    """A view that kept an event the compaction replaced drops its restored context: the share
    after the marker (an N-token message, framing included: `unlogged_item`) takes N tokens off
    the uncached tail, and the share before the marker none (recorded tail 800 = 500 of that
    message + 300 logged tokens after the marker: 300 are left)."""
    from replay.engine._replay import _Thread
    from replay.engine._unlogged import Unlogged, unlogged_item
    from replay.strategies._base import View
    from replay.strategies.recorded import LoggedCompaction
    from replay.tokens import counter_for

    counter = counter_for("claude-sonnet-4-6")
    state = _Thread(strategy=None)
    state.compactions = [LoggedCompaction("summary", frozenset({1}), event_index=4)]
    u = state.unlogged
    keys = [(7, "after")] + ([(7, "before")] if before else [])
    u.items[(7, "after")] = unlogged_item(500, 7, counter, "after")
    if before:
        u.items[(7, "before")] = unlogged_item(before, 7, counter)
    u.restored, u.tail = (4, tuple(keys)), 800
    kept = View(items=[UserItem("an event the compaction replaced", event_index=1)])
    Unlogged(None, UnloggedContext(), fitting=False)._keep_restored(  # type: ignore[arg-type]
        state, kept, counter.family.message_overhead)
    assert u.tail == 300
    assert set(u.dropped) == {u.items[k] for k in keys}


def test_a_transient_message_s_read_tolerance_is_two_percent_of_the_whole_prompt() -> None:
    """The read that shows a message was not sent again may stop up to the read tolerance away
    from the entry before it: 2 % of the billed prompt (~24k tokens here: 480), not of its
    uncached part. A read 300 tokens short of that entry still drops the message."""
    session = _session(_turns(MAIN_THREAD, 0, 6, T0), hidden=20000)
    truth, second, third = _sent_once(session, 900)
    _bill(session, truth)
    usage = session.events[third].usage
    assert usage.prompt_tokens * 0.02 > 300 + 50 and usage.input_tokens * 0.02 < 256
    usage.cache_read_tokens -= 300
    usage.input_tokens += 300
    fit = fit_unlogged_context(session, ReplayConfig())
    assert fit.requests[(MAIN_THREAD, third)].drop == ((second, "before"),)
