"""Break-even's counterfactuals derived from the rewritten run's records (`_shift`) equal the
counterfactuals replayed request by request, row for row, wherever the derivation is used."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import gen
import pytest
from gen import Call, Turn, build_session
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.bench import synthetic_session
from replay.breakeven import _shift
from replay.breakeven._breakeven import breakeven_config, strategy_rewrites
from replay.engine import _replay
from replay.engine._replay import ReplayConfig
from replay.log import RequestMarker, Session
from replay.strategies import NamedStrategy, resolve
from replay.strategies._base import StrategySpec
from replay.strategies._view import RewriteEvent, ToolResultItem, View, replace_output

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples"

# The library's strategies that rewrite items in place at many requests (the quadratic part
# of break-even), and two that do so now and then.
IN_PLACE = (
    "age-truncate-500-keep-3",
    "tool-aging-keep-3",
    "observation-mask-keep-5-poll-1",
    "prune-at-12000-keep-3",
    "anthropic-clear-tool-uses-100k-keep-3",
    "gemini-mask-tool-out-50k-30k",
    "opencode-prune-40k-20k",
)


def _rows(session: Session, name: str | NamedStrategy, config: ReplayConfig, derive: bool,
          horizon: int | None = None) -> tuple[list, int]:
    """Break-even rows of one strategy, and how many counterfactual requests were derived."""
    named = resolve([name])[0]
    before = _shift.ENABLED
    _shift.ENABLED = derive
    try:
        with strategy_rewrites(session, named, breakeven_config(session, config), horizon) as rw:
            rows = [row for _, row in rw.analyse()]
            return rows, sum(e.derived for e in rw.events)
    finally:
        _shift.ENABLED = before


def _same(session: Session, name: str | NamedStrategy, config: ReplayConfig | None = None,
          horizon: int | None = None) -> int:
    config = config or ReplayConfig()
    derived_rows, derived = _rows(session, name, config, True, horizon)
    replayed_rows, none = _rows(session, name, config, False, horizon)
    assert none == 0
    assert derived_rows == replayed_rows
    return derived


@pytest.mark.parametrize("name", IN_PLACE[:5])
def test_the_heavy_strategies_derive_most_of_their_counterfactuals(name: str) -> None:
    """On a 150-request session the derivation takes over for most counterfactual requests,
    and every row is the replayed one."""
    session = synthetic_session(150, seed=3)
    named = resolve(name)[0]
    config = breakeven_config(session, ReplayConfig())
    with strategy_rewrites(session, named, config, None) as rw:
        rw.analyse()
        total = sum(rw.steps)
    assert _same(session, name) > total // 3


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    requests=st.integers(12, 70),
    seed=st.integers(0, 10_000),
    scale=st.sampled_from([0.02, 0.1, 0.4, 1.0]),
    model=st.sampled_from(["claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5",
                           "claude-3-7-sonnet-20250219"]),
    client=st.sampled_from([None, "claude-code", "pi", "automatic"]),
    ttl=st.sampled_from([None, "5m", "1h"]),
    name=st.sampled_from(IN_PLACE),
    horizon=st.sampled_from([None, None, 7]),
)
def test_derived_counterfactuals_equal_replayed_ones(
    requests, seed, scale, model, client, ttl, name, horizon
) -> None:
    """Random sessions, models (their minimum cacheable lengths, thinking stripped or not),
    clients (where the breakpoints go), TTLs (expiries after the session's idle gaps) and
    horizons: the rows are those of the full replay."""
    session = synthetic_session(requests, seed=seed, model=model, size_scale=scale)
    _same(session, name, ReplayConfig(client=client, ttl=ttl), horizon)


def test_a_run_on_another_provider_is_replayed() -> None:
    """Only Anthropic's explicit breakpoints are derived: OpenAI's cache rounds lengths."""
    session = synthetic_session(60, seed=1)
    config = ReplayConfig(provider="openai", model="gpt-5.1")
    assert _same(session, "age-truncate-500-keep-3", config) == 0


# Sessions where a guard of the derivation stops it (`_shift.GUARDS` and the two checks before
# them), found by a search over random sessions like those of the property test above.
_SCENARIOS = {
    _shift.EDIT_BEFORE_MINIMUM: ("prune-at-12000-keep-3", 11, 4075, 0.1, "claude-haiku-4-5", "pi"),
    _shift.EXPIRED_PAST_READ: ("prune-at-12000-keep-3", 19, 2654, 1.0, "claude-opus-4-5",
                               "claude-code"),
    _shift.READS_OLDER_ENTRY: ("prune-at-12000-keep-3", 15, 7182, 1.0, "claude-sonnet-4-5", "pi"),
    _shift.WRITES_OVER_UNMATCHED: ("prune-at-12000-keep-3", 27, 3723, 1.0, "claude-sonnet-4-5",
                                   None),
}


def _scenario(guard: str) -> tuple[Session, str, ReplayConfig]:
    name, requests, seed, scale, model, client = _SCENARIOS[guard]
    session = synthetic_session(requests, seed=seed, model=model, size_scale=scale)
    ttl = None if guard in (_shift.EDIT_BEFORE_MINIMUM, _shift.EXPIRED_PAST_READ) else "5m"
    return session, name, ReplayConfig(client=client, ttl=ttl)


def _stops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The reasons every derivation stops for, from now on, in order."""
    seen: list[str] = []
    stop, stops = _shift.Shift._stop, _shift.Shift._stops

    def recording_stop(self: _shift.Shift, why: str) -> None:
        seen.append(why)
        return stop(self, why)

    def recording_stops(self: _shift.Shift, guard: str) -> bool:
        seen.append(guard)
        return stops(self, guard)

    monkeypatch.setattr(_shift.Shift, "_stop", recording_stop)
    monkeypatch.setattr(_shift.Shift, "_stops", recording_stops)
    return seen


@pytest.mark.parametrize("guard", [_shift.EDIT_BEFORE_MINIMUM, _shift.EXPIRED_PAST_READ])
def test_a_guard_that_stops_the_derivation_is_needed(
    guard: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a session where the guard stops a derivation, the rows are the replayed ones; with
    that guard off, the derived requests are priced wrong and some row differs."""
    session, name, config = _scenario(guard)
    seen = _stops(monkeypatch)
    replayed, _ = _rows(session, name, config, False)
    derived, _ = _rows(session, name, config, True)
    assert guard in seen
    assert derived == replayed
    monkeypatch.setattr(_shift, "DISABLED", {guard})
    unguarded, _ = _rows(session, name, config, True)
    assert unguarded != replayed


@pytest.mark.parametrize("guard", [_shift.READS_OLDER_ENTRY, _shift.WRITES_OVER_UNMATCHED])
def test_a_guard_that_fires_keeps_the_replayed_rows(
    guard: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards that stop derivations without any session found so far (hundreds of random ones,
    idle gaps added, and the samples) where the derived rows would differ without them: where
    one fires, the rows are still the replayed ones."""
    session, name, config = _scenario(guard)
    seen = _stops(monkeypatch)
    assert _same(session, name, config) > 0
    assert guard in seen


def test_a_request_on_another_model_stops_the_derivation(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session that moves to another model (another minimum length and price) mid-way: the
    derivation stops at the first request on it, and the rows are the replayed ones."""
    session = synthetic_session(40, seed=2)
    markers = [n for n, e in enumerate(session.events) if isinstance(e, RequestMarker)]
    for n in markers[25:]:
        session.events[n] = session.events[n].model_copy(update={"model": "claude-opus-4-5"})
    seen = _stops(monkeypatch)
    assert _same(session, "tool-aging-keep-3") > 0
    assert "not simulated by blocks alone" in seen


def _sample(folder: str, stem: str) -> Path:
    if not SAMPLES.is_dir():
        pytest.skip(f"{SAMPLES} is absent (real sample logs)")
    found = sorted((SAMPLES / folder).glob(f"*{stem}*"))
    if not found:
        pytest.skip(f"no {folder} sample matching {stem!r} in {SAMPLES}")
    return found[0]


@pytest.mark.parametrize(
    ("folder", "stem", "name", "fires"),
    [
        # Claude Code 2.1, fitted unlogged context (the client's last marker moved by it)
        ("claude_code", "91_03598e5336", "tool-aging-keep-3", None),
        # pi, thinking stripped before the last user turn (which moves the entries' keys)
        ("pi", "large-session", "tool-aging-keep-3", None),
        ("pi", "large-session", "age-truncate-500-keep-3", _shift.EXPIRED_PAST_READ),
        # a later rewrite before the end of an entry the counterfactual did not read (the only
        # session found where that guard fires; the rows are the same without it)
        ("claude_code", "fe5e1c67", "observation-mask-keep-5-poll-1",
         _shift.REWRITTEN_BEFORE_UNMATCHED),
    ],
)
def test_real_logs_give_the_replayed_rows(
    folder: str, stem: str, name: str, fires: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from replay import load

    seen = _stops(monkeypatch)
    _same(load(_sample(folder, stem)), name)
    assert fires is None or fires in seen


def _editing(edits: dict[int, Callable[[str], str]]) -> NamedStrategy:
    """At each request `r` of `edits`, the first tool result of its thread is sent as
    `edits[r]` of its output, in place, and kept so."""

    def build() -> object:
        edited: dict = {}

        def edit(history, ctx):
            items = list(history)
            events = []
            if ctx.request_index in edits or edited:
                n = next(n for n, i in enumerate(items) if isinstance(i, ToolResultItem))
                if ctx.request_index in edits:
                    output = edits[ctx.request_index](history[n].output)
                    edited["item"] = replace_output(items[n], output)
                    events = [RewriteEvent("truncate", "edited")]
                items[n] = edited["item"]
            return View(items, [], events)

        return edit

    spec = StrategySpec(family="edit", pattern="edit", build=build, cache_class="freeze-once",
                        rule="edit")
    return NamedStrategy("edit", spec, {})


def _capping(caps: dict[int, int]) -> NamedStrategy:
    """At each request `r` of `caps`, the first tool result capped to `caps[r]` characters."""
    return _editing({r: (lambda output, n=n: output[:n]) for r, n in caps.items()})


def test_a_rewrite_whose_comparison_another_thread_interleaves_is_replayed() -> None:
    """The counterfactual replays its own thread only; the rewritten run's records also hold
    what another thread did to the cache. Here a subagent, after ten idle minutes, writes the
    entry of the system prompt that main reads at its next request (8); without the subagent's
    request, the replayed counterfactual finds it expired. Derived from the records, that
    request would read it: the rows are the replayed ones."""
    sub = [Turn("Sub 0.", [Call("read_file", {"path": "lib/s.py"}, gen.filler(500, 20))],
                gap_s=600), Turn("Sub done.")]
    turns = [Turn(f"Step {i}.", [Call("read_file", {"path": f"f{i}.py"}, gen.filler(2000, i))],
                  gap_s=600 if i == 3 else 2.0) for i in range(4)]
    turns += [Turn("Step 4.", [Call("task", {"prompt": "look around"}, "found", subagent=sub)]),
              *(Turn(f"Step {i}.", [Call("read_file", {"path": f"f{i}.py"},
                                         gen.filler(2000, i))]) for i in (5, 6)),
              Turn("Done.")]
    session = build_session(turns, provider="anthropic", tools=[], system=gen.filler(6000, 7))
    records = _replay.replay_session(session, "baseline")
    after_sub = next(r for r in records if r.request_index == 7)
    assert after_sub.thread == "main" and after_sub.outcome.cache_read > 0  # the subagent's entry
    _same(session, _capping({2: 40}))


def test_a_result_capped_again_later_is_no_longer_put_back() -> None:
    """A result capped at request 2 and capped shorter at 4: from 4 on both runs send the
    shorter version (the run without the first cap still makes the second), so the first
    cap's counterfactual has nothing left to put back there; the rows are the replayed ones."""
    turns = [Turn(f"Step {i}.", [Call("read_file", {"path": f"f{i}.py"}, gen.filler(2000, i))])
             for i in range(6)]
    session = build_session([*turns, Turn("Done.")], provider="anthropic", tools=[])
    _same(session, _capping({2: 600, 4: 40}))


def test_a_rewrite_that_starts_below_the_minimum_length_is_replayed() -> None:
    """A result that starts below Sonnet's 1,024-token minimum grows at request 2 (a cap's
    note can be longer than what it cut), from ~30 tokens to ~200: the rewritten prompts go
    over the minimum (written, then read), the prompts without the rewrite stay under it
    (nothing cached). Derived from the rewritten run's records, the counterfactual would be
    cached as well; the minimum-length guard looks at where the result starts, not where it
    ends, and the rows are the replayed ones."""
    turns = [Turn("Reading.", [Call("read_file", {"path": "a.py"}, "x = 1\n" * 12)])]
    turns += [Turn(f"Step {i}.", [Call("run", {"n": i}, "ok")]) for i in range(1, 4)]
    session = build_session([*turns, Turn("Done.")], provider="anthropic", tools=[],
                            system=gen.filler(2000, 7))
    grow = _editing({2: lambda output: output + gen.filler(600, 8)})
    records = {r.strategy: r for r in _replay.replay_session(session, ["baseline", grow])
               if r.request_index == 4}
    assert records["baseline"].request.total < 1024 < records["edit"].request.total
    assert records["baseline"].outcome.cache_read == 0 < records["edit"].outcome.cache_read
    _same(session, grow)


def test_a_client_that_marks_nothing_derives_the_whole_prompt_uncached() -> None:
    """With `--client none` nothing is cached on Anthropic: every request is billed uncached in
    both runs, and the derived counterfactual is the rewritten run's prompt moved by what the
    originals add, at the uncached rate, as the replay prices it."""
    session = synthetic_session(40, seed=2)
    assert _same(session, "age-truncate-500-keep-3", ReplayConfig(client="none")) > 0


@pytest.mark.parametrize(
    "config",
    [ReplayConfig(provider="google", model="claude-sonnet-4-5"),  # Claude on Vertex
     ReplayConfig(rule_overrides={"anthropic.min_tokens_per_checkpoint": True})],
    ids=["vertex", "per-checkpoint-minimum"],
)
def test_only_the_plain_anthropic_route_without_per_checkpoint_minimums_is_derived(config):
    """(Module docstring: per-checkpoint minimums, as on Bedrock, are not handled: only the
    plain `anthropic` route is.) Claude served elsewhere, or a rule file that gives the direct
    API per-checkpoint minimums, is replayed request by request."""
    session = synthetic_session(40, seed=2)
    assert _same(session, "tool-aging-keep-3") > 0  # derived on the plain route
    assert _same(session, "tool-aging-keep-3", config) == 0


def test_the_highest_block_id_sent_before_a_rewrite_can_be_one_an_earlier_prompt_held() -> None:
    """`known_ids` is the highest block id any prompt before the rewrite sent: a block with a
    higher id is one no earlier prompt held (no entry can end past it), but the block with that
    very id was sent, and where an earlier prompt held it at that place, an entry can. Where
    that is unknown (an earlier prompt's blocks released), it may have been."""
    from types import SimpleNamespace

    import numpy as np

    earlier = SimpleNamespace(request=SimpleNamespace(block_ids=np.array([0, 3, 5])),
                              outcome=SimpleNamespace(dropped_tokens=0))
    shift = object.__new__(_shift.Shift)
    shift.known_ids, shift.earlier, shift._held, shift.id_memo = 5, [earlier], {}, {}
    assert shift._held_before(2, 5)  # sent at 2 by the earlier prompt
    assert not shift._held_before(1, 5)  # sent, but elsewhere
    assert not shift._held_before(2, 6)  # never sent
    released = SimpleNamespace(request=SimpleNamespace(block_ids=None),
                               outcome=SimpleNamespace(dropped_tokens=0))
    shift.known_ids, shift.earlier, shift._held = -1, [earlier, released], {}
    assert shift._held_before(1, 7)  # an earlier prompt's blocks are gone: it may have


@pytest.mark.parametrize("log", ["synthetic", "claude-code-2.1"])
def test_the_breakpoint_lengths_of_a_request_hold_where_it_wrote(log: str) -> None:
    """`Shift` checks writes (and which reads a write refreshed) against the lengths where a
    request's breakpoints end, a superset of those it wrote: a request that wrote to the cache
    wrote up to one of them. On Anthropic's automatic marker alone (`--client automatic`), and
    on Claude Code 2.1 with its unlogged context fitted (the client's last marker moved by the
    unlogged tail)."""
    from replay import load

    if log == "synthetic":
        session, config = synthetic_session(30, seed=2), ReplayConfig(client="automatic")
    else:
        session, config = load(_sample("claude_code", "91_03598e5336")), ReplayConfig()
    named = resolve("baseline")[0]
    with strategy_rewrites(session, named, breakeven_config(session, config), None) as rw:
        shift = object.__new__(_shift.Shift)
        shift.run, shift._views = rw.run, []
        wrote = [r for r in rw.records if r.kind == "request" and not r.request.released
                 and r.outcome.cache_write_5m + r.outcome.cache_write_1h]
        assert wrote
        moved = 0
        for r in wrote:
            o = r.outcome
            assert o.cache_read + o.cache_write_1h + o.cache_write_5m in (
                shift._breakpoint_lengths(r)), r.request_index
            moved += bool(r.rendered_with is not None and r.rendered_with.unlogged_tail)
        assert moved or log == "synthetic"


def test_the_entries_only_the_counterfactual_holds_reach_past_the_first_edited_result() -> None:
    """`prune-at-12000-keep-3` clears several results at once (up to 16 here). The entries from
    before a rewrite that only its counterfactual can match are those reaching past the first
    result it edited, not only past the last: counting only the latter, a derivation began
    while one of the others was still live, and a row differed (a session the property test
    above found, once in many runs)."""
    _same(synthetic_session(33, seed=150, size_scale=0.1), "prune-at-12000-keep-3")


# --------------------------------------------------------------------------------------------------
# The derivation's parts, one at a time, on small hand-made inputs


def test_a_boundary_moves_by_what_the_substituted_blocks_ending_at_or_before_it_add() -> None:
    """(`_Moves`) Substituted blocks ending at 100 (+10 tokens) and 300 (+20): a boundary before
    100 stays, one at 100 or past it moves by 10, one at 300 or past it by 30."""
    moves = _shift._Moves([2, 5], [10, 20], [100, 300])
    assert [moves(p) for p in (0, 99, 100, 101, 299, 300, 1000)] == [
        0, 99, 110, 111, 309, 330, 1030
    ]
    assert _shift._Moves([], [], [])(500) == 500  # nothing substituted: nothing moves


def test_an_original_of_one_block_is_single() -> None:
    import numpy as np

    one = _shift._Original(ids=np.array([7]), delta=np.array([120]))
    assert (one.single, one.id, one.first_delta) == (True, 7, 120)
    two = _shift._Original(ids=np.array([7, 8]), delta=np.array([120, 5]))
    assert (two.single, two.id, two.first_delta) == (False, 7, 120)


def test_the_blocks_of_an_item_are_those_it_owns() -> None:
    """Owners ascend, -1 for the head: item 1 owns blocks 3 and 4, item 2 none."""
    import numpy as np

    owners = np.array([-1, -1, 0, 1, 1, 3])
    assert [_shift._blocks_of(owners, p) for p in (0, 1, 2, 3)] == [
        (2, 3), (3, 5), (5, 5), (5, 6)
    ]


def test_a_kept_block_starts_where_the_kept_blocks_before_it_end() -> None:
    from types import SimpleNamespace

    import numpy as np

    req = SimpleNamespace(block_tokens=np.array([10, 5, 20, 7, 30]))
    whole = SimpleNamespace(cum=np.cumsum(req.block_tokens), kept=None)
    assert [_shift._start(whole, b, req) for b in (0, 2, 4)] == [0, 15, 42]
    # Blocks 1 and 3 stripped (thinking): block 2 starts at 10, block 4 at 30.
    stripped = SimpleNamespace(cum=np.array([10, 30, 60]), kept=np.array([0, 2, 4]))
    assert [_shift._start(stripped, b, req) for b in (0, 2, 4)] == [0, 10, 30]


def test_the_last_marker_lands_on_the_block_end_nearest_the_tail_in_both_prompts() -> None:
    """(`_same_marker`, as `place_last_marker` moves it: the block end nearest `tail` tokens
    before the end, among the head's last block and the message blocks, ties to the later.)"""
    from types import SimpleNamespace

    import numpy as np

    req = SimpleNamespace(kind_index=SimpleNamespace(head_end=1),
                          cum_tokens=np.array([100, 200, 300, 400, 500, 600]))
    # 450 tokens in: ends 400 and 500 are as near, the later wins; +100 in block 2 moves the
    # target and the ends after it alike (550: 500 and 600, again the later, block 4).
    assert _shift._same_marker(req, [2], [100], 150)
    # +300 in the last block: the target (750) is nearer its end (900) than 500.
    assert not _shift._same_marker(req, [5], [300], 150)
    # A target in the head lands on the head's last block (1) in both.
    short = SimpleNamespace(kind_index=SimpleNamespace(head_end=1),
                            cum_tokens=np.array([100, 200, 300, 400]))
    assert _shift._same_marker(short, [3], [100], 350)


def test_a_prompt_shorter_than_the_place_did_not_hold_a_block_there() -> None:
    from types import SimpleNamespace

    import numpy as np

    earlier = SimpleNamespace(request=SimpleNamespace(block_ids=np.array([0, 3, 5])),
                              outcome=SimpleNamespace(dropped_tokens=0))
    shift = object.__new__(_shift.Shift)
    shift.known_ids, shift.earlier, shift._held, shift.id_memo = 5, [earlier], {}, {}
    assert not shift._held_before(3, 5)
    assert not shift._held_before(4, 5)


def test_an_earlier_prompt_is_looked_at_as_simulated(monkeypatch: pytest.MonkeyPatch) -> None:
    """(`_held_before`) An earlier prompt whose thinking was stripped held its blocks at the
    places of its simulated prompt: block 4 (thinking) gone, block 5 was at 2, not 3."""
    from types import SimpleNamespace

    import numpy as np

    earlier = SimpleNamespace(request=SimpleNamespace(block_ids=np.array([0, 3, 4, 5])),
                              outcome=SimpleNamespace(dropped_tokens=40))
    monkeypatch.setattr(_shift, "simulated_view",
                        lambda run, rec: SimpleNamespace(ids=np.array([0, 3, 5])))
    shift = object.__new__(_shift.Shift)
    shift.run, shift.known_ids, shift.earlier, shift._held, shift.id_memo = (
        None, 5, [earlier], {}, {}
    )
    assert shift._held_before(2, 5)
    assert not shift._held_before(3, 5)


def test_the_previous_view_is_that_of_the_request_before_in_the_sequence() -> None:
    from types import SimpleNamespace

    first, second, other = (SimpleNamespace(view=[n]) for n in range(3))
    shift = object.__new__(_shift.Shift)
    shift.seq, shift._index = [first, second], {id(first): 0, id(second): 1}
    assert shift._previous_view(second) is first.view
    assert shift._previous_view(first) is None  # the first request has none
    assert shift._previous_view(other) is None  # not in the sequence


def test_a_rule_is_looked_up_again_on_another_utc_date() -> None:
    """(`_rule`) Rule rows take effect on UTC dates: a session that runs past midnight into a
    row of another value (a minimum length changed that day) is given the new one; a rule is
    looked up once a model and a day."""
    from datetime import UTC, datetime, timedelta, timezone
    from types import SimpleNamespace

    asked: list = []

    def get(name, model, ts, default):
        asked.append(ts)
        return 2048 if ts.astimezone(UTC).day == 2 else 1024

    route = SimpleNamespace(variant=None, rules_model="m")
    router = SimpleNamespace(route=lambda provider, model: route,
                             book=lambda route, variant: SimpleNamespace(get=get))
    shift = object.__new__(_shift.Shift)
    shift.run, shift._rules = SimpleNamespace(cache=router), {}

    def at(ts: datetime) -> SimpleNamespace:
        return SimpleNamespace(model="m", provider="anthropic", ts=ts)

    east = timezone(timedelta(hours=2))
    days = [datetime(2026, 3, 1, 9, tzinfo=UTC), datetime(2026, 3, 2, 1, tzinfo=east),
            datetime(2026, 3, 2, 0, tzinfo=UTC), datetime(2026, 3, 2, 9, tzinfo=UTC)]
    assert [shift._rule(at(ts), "min_cacheable_tokens", 0) for ts in days] == [
        1024, 1024, 2048, 2048
    ]
    assert len(asked) == 2
    shift.id_memo = {}  # (`_min_length`: the rule's own value, where a prompt starts to cache)
    requests = [at(ts) for ts in days]  # (held: the memo is by request)
    assert [shift._min_length(r) for r in requests] == [1024, 1024, 2048, 2048]


def _entry(tokens: int, expired: bool):
    from types import SimpleNamespace

    return SimpleNamespace(tokens=tokens, expired=lambda t, e=expired: e)


def _ready_shift(entries: dict, prefixes_of_last: list[int]) -> _shift.Shift:
    """A `Shift` whose unmatched entries are `entries` (key → entry; a key's third part is its
    prefix) and whose counterfactual's last request has the prefix keys `prefixes_of_last`."""
    import numpy as np

    shift = object.__new__(_shift.Shift)
    shift.ok, shift.unmatched = True, list(entries)
    shift._prefixes = np.array([key[2] for key in entries], dtype=np.int64)
    shift.store = type("Store", (), {"entries": entries})()
    shift.cf_last = object()
    shift._keys = lambda rec: np.array(prefixes_of_last, dtype=np.int64)
    return shift


def test_ready_waits_for_the_unmatched_prefixes_of_the_last_request_to_expire() -> None:
    """(`ready`) Every unmatched entry that is a prefix of the counterfactual's last request
    must have expired; `longest` is the longest of those, `dormant` the longest of the others
    (expired or not)."""
    from datetime import UTC, datetime

    t = datetime(2026, 1, 1, tzinfo=UTC)
    entries = {
        ("s", "m", 11): _entry(3000, True),
        ("s", "m", 12): _entry(1000, True),
        ("s", "m", 21): _entry(5000, False),
        ("s", "m", 22): _entry(4000, True),
    }
    shift = _ready_shift(entries, [11, 12, 30])
    assert shift.ready(t)
    assert (shift.longest, shift.dormant) == (3000, 5000)
    entries[("s", "m", 12)] = _entry(1000, False)  # a prefix still live
    assert not _ready_shift(entries, [11, 12, 30]).ready(t)
    none = _ready_shift({("s", "m", 21): _entry(5000, False)}, [11])
    assert none.ready(t) and (none.longest, none.dormant) == (-1, 5000)
    expired = _ready_shift(
        {("s", "m", 21): _entry(5000, False), ("s", "m", 22): _entry(6000, True)}, [11]
    )
    assert expired.ready(t) and expired.dormant == 6000  # the longest, expired or not
    none.ok = False
    assert not none.ready(t)


def _costing(plan: list[bool]) -> tuple[_shift.Shift, list, list]:
    """A `Shift` over requests 0..len(plan)-1 whose `_cost` is priced (True) or stops (False)
    at each, recording (request, previous, longest, saw_ttl) of each call."""
    from decimal import Decimal
    from types import SimpleNamespace

    causes = {2: "TTL expired (idle 6m > TTL 5m)", 3: "strategy changed the prefix"}
    seq = [SimpleNamespace(n=n, outcome=SimpleNamespace(miss_cause=causes.get(n)))
           for n in range(len(plan))]
    calls: list = []
    shift = object.__new__(_shift.Shift)
    shift.seq, shift.longest, shift.failures, shift.ok = seq, 7, 0, True
    shift._before, shift._positions = ["x"], [1]

    def cost(cur, previous, longest, saw_ttl):
        calls.append((cur.n, previous.n, longest, saw_ttl))
        return Decimal(cur.n) if plan[cur.n] else None

    shift._cost = cost
    return shift, seq, calls


def test_costs_are_derived_request_after_request_and_know_when_a_ttl_expired() -> None:
    """(`costs`) Each request with the one before it and the `longest` of `ready`; a `TTL
    expired` cause seen at a request holds for every later one."""
    from decimal import Decimal

    shift, _, calls = _costing([True] * 6)
    assert shift.costs(1, 6, False) == ([Decimal(n) for n in range(1, 6)], 6)
    assert calls == [(1, 0, 7, False), (2, 1, 7, False), (3, 2, 7, True), (4, 3, 7, True),
                     (5, 4, 7, True)]
    shift, _, calls = _costing([True] * 6)
    shift.costs(3, 5, True)
    assert [c[3] for c in calls] == [True, True]
    assert shift.ok and shift.failures == 0


def test_a_derivation_that_stops_at_once_six_times_is_given_up() -> None:
    """(`_TRIES`) A stop at a later request returns what was derived before it and is no
    failure; a stop at the first request is one, and the sixth ends the watch."""
    from decimal import Decimal

    shift, _, _ = _costing([True, True, True, False, True])
    assert shift.costs(1, 5, False) == ([Decimal(1), Decimal(2)], 3)
    assert (shift.ok, shift.failures) == (True, 0)
    assert (shift._before, shift._positions) == ([], [])  # found again from scratch next time
    shift, _, _ = _costing([True, False, True])
    for n in range(1, 6):
        assert shift.costs(1, 3, False) == ([], 1)
        assert (shift.ok, shift.failures) == (True, n)
    assert shift.costs(1, 3, False) == ([], 1)
    assert (shift.ok, shift.failures) == (False, 6)


def _derive(**kw):
    """The derived cost of one request of six blocks (1,000, 500, 500, 2,000, 1,000 and 1,000
    tokens) whose fourth block (3, ending at 4,000) is a substituted one 1,000 tokens longer in
    the counterfactual; the rewritten run read 1,500, wrote for an hour to 4,000 and for five
    minutes to 5,000. `kw` sets the derivation's state (`watch`, `dormant`, `change`, `held`,
    `written`, `minimum`, `tail`, `longest`, `saw_ttl`, and `moves`, the substituted blocks):
    (the cost or None, why it stopped)."""
    from datetime import UTC, datetime
    from types import SimpleNamespace

    import numpy as np

    from replay.cache._base import CacheOutcome
    from replay.prices import Pricer

    tokens = np.array([1000, 500, 500, 2000, 1000, 1000])
    cum = np.cumsum(tokens)
    view = SimpleNamespace(cum=cum, kept=None, ids=np.arange(10, 16))
    req = SimpleNamespace(block_tokens=tokens, cum_tokens=cum,
                          kind_index=SimpleNamespace(head_end=1))
    tail = kw.get("tail", 0)
    cur = SimpleNamespace(
        outcome=CacheOutcome(uncached=1000, cache_read=1500, cache_write_5m=1000,
                             cache_write_1h=2500),
        request=req, output_tokens=50, model="claude-sonnet-4-5", provider="anthropic",
        ts=datetime(2026, 3, 1, tzinfo=UTC), price_context=None, request_index=0,
        rendered_with=SimpleNamespace(unlogged_tail=tail) if tail else None,
    )
    shift = object.__new__(_shift.Shift)
    shift.run, shift.stopped, shift.first_start = SimpleNamespace(pricer=Pricer()), "", 2000
    shift.totals = {}
    shift.watch, shift.dormant = kw.get("watch", set()), kw.get("dormant", -1)
    shift._usable = lambda rec: True
    shift._moves = lambda rec: kw.get("moves", _shift._Moves([3], [1000], [4000]))
    shift._view = lambda rec: view
    shift._min_length = lambda rec: kw.get("minimum", 1024)
    shift._change = lambda cur, previous: kw.get("change")
    shift._held_before = lambda at, block: kw.get("held", True)
    shift._written = lambda rec: kw.get("written", set())
    cost = shift._cost(cur, None, kw.get("longest", -1), kw.get("saw_ttl", False))
    return cost, shift.stopped


def test_a_derived_request_is_billed_its_buckets_with_each_boundary_moved() -> None:
    """(Module docstring) The counterfactual's buckets are the request's with each boundary
    moved by what the substituted blocks before it add: the read (1,500) stays, the one-hour
    writes' end (4,000) and the five-minute writes' end (5,000) move by 1,000, as the prompt's
    end; billed as Anthropic splits them (research/caching.md: read = A, 1h write = B − A,
    5m write = C − B, the rest uncached)."""
    from datetime import UTC, datetime

    from replay.prices import Buckets, Pricer

    expected = Pricer().price(
        Buckets(uncached=1000, cache_read=1500, cache_write_5m=1000, cache_write_1h=3500,
                output=50),
        model="claude-sonnet-4-5", provider="anthropic", ts=datetime(2026, 3, 1, tzinfo=UTC),
    ).total_usd
    assert _derive() == (expected, "")


def test_a_derived_request_stops_where_a_guard_says() -> None:
    """Each guard of the module docstring at its bounds (the substituted block starts at 2,000
    and moves what ends at or after 4,000 by 1,000; the read is 1,500)."""
    # The minimum cacheable length: the first substituted block must start at it or past it.
    assert _derive(minimum=2000)[0] is not None
    assert _derive(minimum=2001) == (None, _shift.EDIT_BEFORE_MINIMUM)
    # Where the first of several substituted blocks starts (block 1, at 1,000), not the last.
    two = _shift._Moves([1, 3], [10, 1000], [1500, 4000])
    assert _derive(minimum=1500, moves=two) == (None, _shift.EDIT_BEFORE_MINIMUM)
    assert _derive(minimum=1000, moves=two)[0] is not None
    # A change before an unmatched entry's end (its blocks held before the rewrite): block 4
    # starts at 4,000, at 5,000 in the counterfactual.
    change = (4, 4, False)
    assert _derive(change=change, dormant=5001) == (None, _shift.REWRITTEN_BEFORE_UNMATCHED)
    assert _derive(change=change, dormant=5000)[0] is not None  # the entry ends before it
    assert _derive(change=change, dormant=5001, held=False)[0] is not None
    assert _derive(change=(0, 0, False), dormant=1000) == (
        None, _shift.REWRITTEN_BEFORE_UNMATCHED
    )  # a change at the first block is before every entry's end
    # An entry whose copies differ in age is never the read again; one shorter than the read
    # is a miss the counterfactual alone may name, until a TTL expiry was seen.
    assert _derive(watch={1500}) == (None, _shift.READS_OLDER_ENTRY)
    assert _derive(watch={1500}, saw_ttl=True) == (None, _shift.READS_OLDER_ENTRY)
    assert _derive(watch={1499})[0] is not None
    assert _derive(watch={1501, 900}) == (None, _shift.READS_OLDER_ENTRY)
    assert _derive(watch={1501}, saw_ttl=True)[0] is not None
    # An expired unmatched entry: the read must lie beyond it while no TTL expiry was seen,
    # and no breakpoint may write where one lies (past the first edit, up to the longest).
    assert _derive(longest=1500) == (None, _shift.EXPIRED_PAST_READ)
    assert _derive(longest=1500, saw_ttl=True)[0] is not None
    assert _derive(longest=1499)[0] is not None
    assert _derive(longest=5500, saw_ttl=True, written={4500}) == (
        None, _shift.WRITES_OVER_UNMATCHED
    )
    assert _derive(longest=5499, saw_ttl=True, written={4500})[0] is not None
    assert _derive(longest=5500, saw_ttl=True, written={2000, 6000})[0] is not None
    assert _derive(longest=5500, saw_ttl=True, written={2000, 4500, 6000}) == (
        None, _shift.WRITES_OVER_UNMATCHED
    )  # one of its breakpoints is enough
    # The client's last marker, moved back by the unlogged tail, must land on the same block.
    # 2,600 tokens in: end 2,000 is nearer than 4,000; 3,600 in the counterfactual, where
    # block 3 ends at 5,000, nearer than 2,000.
    assert _derive(tail=1400)[0] is not None  # 4,600 and 5,600: block 4's end in both
    assert _derive(tail=3400) == (None, _shift.MARKER_MOVES)


def test_the_originals_are_the_substituted_items_blocks_in_both_renderings() -> None:
    """(`_originals`) Each substituted item's block ids in the rewritten prompt and what its
    blocks have more in the counterfactual; `first_start` is where the first of them starts.
    No derivation where an item has no blocks or other blocks in the other rendering, where
    a request's blocks were released or the views differ in length."""
    from types import SimpleNamespace

    import numpy as np

    def originals(cf_owners=(-1, 0, 1, 1, 2), owners=(-1, 0, 1, 1, 2), cf_items=3,
                  released=False, subbed=(1, 2)):
        tokens = np.array([100, 50, 20, 30, 40])
        act = SimpleNamespace(released=released, item_index=np.array(owners),
                              block_ids=np.array([10, 11, 12, 13, 14]), block_tokens=tokens)
        cf = SimpleNamespace(released=False, item_index=np.array(cf_owners),
                             block_tokens=tokens + np.array([0, 0, 200, 0, 5]))
        view = [object(), object(), object()]
        rec = SimpleNamespace(request=act, view=view)
        shift = object.__new__(_shift.Shift)
        shift.subs, shift.originals = {id(view[p]): None for p in subbed}, {}
        shift._view = lambda r: SimpleNamespace(cum=np.cumsum(tokens), kept=None)
        ok = shift._originals(rec, [None] * cf_items, SimpleNamespace(request=cf))
        return ok, shift, view

    ok, shift, view = originals()
    assert ok and shift.first_start == 150  # item 1 starts at 100 + 50, item 2 at 200
    one, two = shift.originals[id(view[1])], shift.originals[id(view[2])]
    assert (one.ids.tolist(), one.delta.tolist()) == ([12, 13], [200, 0])
    assert (two.ids.tolist(), two.delta.tolist()) == ([14], [5])
    assert originals(subbed=(2,))[1].first_start == 200
    assert not originals(subbed=())[0]  # nothing substituted at the rewrite
    assert not originals(cf_owners=(-1, 0, 1, 2, 2))[0]  # one block where the other has two
    assert not originals(owners=(-1, 0, 2, 2, 2), cf_owners=(-1, 0, 2, 2, 2), subbed=(1,))[0]
    assert not originals(cf_items=2)[0]
    assert not originals(released=True)[0]


def test_where_a_prompt_first_differs_from_the_previous_one_as_simulated() -> None:
    """(`_change`) Without thinking stripped, the request's own diff; with it stripped from
    either prompt, the first block where their simulated ids differ, given as the request's
    block and its index in the simulated prompt (None when one is a prefix of the other)."""
    from types import SimpleNamespace

    import numpy as np

    def change(dropped: int, previous_dropped: int, ids, previous_ids, kept=None,
               mismatch: int | None = 9):
        views = {
            "cur": SimpleNamespace(ids=np.array(ids), kept=kept),
            "previous": SimpleNamespace(ids=np.array(previous_ids), kept=None),
        }
        cur = SimpleNamespace(name="cur", outcome=SimpleNamespace(dropped_tokens=dropped),
                              diff=SimpleNamespace(first_mismatch_block=mismatch))
        previous = SimpleNamespace(name="previous",
                                   outcome=SimpleNamespace(dropped_tokens=previous_dropped))
        shift = object.__new__(_shift.Shift)
        shift._view = lambda rec: views[rec.name]
        return shift._change(cur, previous)

    assert change(0, 0, [1, 2, 3], [1, 2, 4]) == (9, 9, False)
    assert change(0, 0, [1, 2, 3], [1, 2, 4], mismatch=None) is None
    assert change(5, 0, [1, 2, 3], [1, 2, 4]) == (2, 2, True)
    assert change(0, 5, [1, 2, 3], [1, 7, 3]) == (1, 1, True)
    assert change(5, 5, [1, 2], [1, 2, 4]) is None
    # The request's blocks 1 and 3 stripped: its simulated block 2 is its block 4.
    assert change(5, 0, [1, 2, 3], [1, 2, 4], kept=np.array([0, 2, 4])) == (4, 2, True)


def test_a_read_no_breakpoint_refreshed_is_watched() -> None:
    """(`_watch`, `observe`) A replayed request whose read differs from the counterfactual's
    (its boundaries moved) and that no breakpoint of it wrote is watched; a read of nothing,
    or of a length a breakpoint of it ends at, is not. A counterfactual request whose blocks
    were released, or a request not simulated by blocks alone, ends the derivation."""
    from types import SimpleNamespace

    moved = _shift._Moves([3], [1000], [4000])

    def observing(moves: _shift._Moves | None = moved) -> _shift.Shift:
        shift = object.__new__(_shift.Shift)
        shift.ok, shift.watch = True, set()
        shift._before, shift._positions = ["x"], [1]
        shift._usable = lambda rec: True
        shift._moves = lambda rec: moves
        shift._written = lambda rec: {1000, 6000}
        return shift

    def rec(read: int):
        return SimpleNamespace(outcome=SimpleNamespace(cache_read=read))

    def cf(read: int, released: bool = False):
        return SimpleNamespace(outcome=SimpleNamespace(cache_read=read),
                               request=SimpleNamespace(released=released))

    shift = observing()
    for read, cf_read in ((4000, 5000), (1000, 1000), (0, 0), (1000, 500), (0, 300)):
        shift.observe(rec(read), cf(cf_read))
    assert shift.watch == set() and shift.ok
    shift.observe(rec(4000), cf(4000))
    shift.observe(rec(3000), cf(2000))
    assert shift.watch == {3000, 4000}
    assert shift.cf_last.outcome.cache_read == 2000
    shift = observing(moves=None)  # the items rendered otherwise: found again from scratch
    shift.observe(rec(4000), cf(4000))
    assert (shift.watch, shift._before, shift._positions) == ({4000}, [], [])
    shift = observing()
    shift.observe(rec(4000), cf(5000, released=True))
    assert not shift.ok
    shift = observing()  # a request not simulated by blocks alone (another model…) ends it too
    shift._usable = lambda rec: False
    shift.observe(rec(4000), cf(5000))
    assert not shift.ok


def _moving(originals: dict, kept=None) -> tuple[_shift.Shift, Callable]:
    """A `Shift` whose substituted items are the keys of `originals` (item → (block ids,
    extra tokens) at the rewrite), and a maker of requests: `request(view, blocks)` renders
    `view` (a head block, then each item's blocks, `blocks[item]`, else one block), 100 tokens
    a block, the blocks `kept` as simulated (None: all)."""
    from types import SimpleNamespace

    import numpy as np

    shift = object.__new__(_shift.Shift)
    shift.subs = {id(item): item for item in originals}
    shift.originals = {
        id(item): _shift._Original(ids=np.array(ids), delta=np.array(delta))
        for item, (ids, delta) in originals.items()
    }
    shift._before, shift._positions, shift._index, shift.id_memo = [], [], {}, {}

    def request(view: list, blocks: dict) -> SimpleNamespace:
        owners, ids = [-1], [5]
        for p, item in enumerate(view):
            for block in blocks.get(item, [1000 + p]):
                owners.append(p)
                ids.append(block)
        cum = 100 * np.arange(1, len(ids) + 1)
        simulated = SimpleNamespace(cum=cum, kept=None)
        if kept is not None:
            simulated = SimpleNamespace(cum=100 * np.arange(1, len(kept) + 1), kept=kept)
        return SimpleNamespace(view=view, simulated=simulated, request=SimpleNamespace(
            item_index=np.array(owners), block_ids=np.array(ids)))

    shift._view = lambda rec: rec.simulated
    return shift, request


def _moved(moves: _shift._Moves | None) -> tuple | None:
    return None if moves is None else (moves.blocks, moves.deltas, moves.ends)


def test_the_substituted_blocks_are_found_in_each_later_request() -> None:
    """(`_moves`) Where the substituted items' blocks are in a later request, and where each
    ends, followed from request to request (positions before the first changed item kept,
    the rest found again); None where one is not rendered as at the rewrite (other blocks, or
    another number of them)."""
    a, b, c, d, e = (object() for _ in range(5))
    shift, request = _moving({b: ([21], [100]), d: ([41], [300])})
    rendered = {b: [21], d: [41]}
    # Head block 0; a 1, b 2 (ends at 300), c 3, d 4 (ends at 500).
    assert _moved(shift._moves(request([a, b, c, d], rendered))) == ([2, 4], [100, 300],
                                                                     [300, 500])
    assert _moved(shift._moves(request([a, b, c, d, e], rendered))) == ([2, 4], [100, 300],
                                                                        [300, 500])
    # c dropped: d is now the first changed item (block 3, ending at 400).
    assert _moved(shift._moves(request([a, b, d, e], rendered))) == ([2, 3], [100, 300],
                                                                     [300, 400])
    # c back before d: d moves to position 3 again.
    assert _moved(shift._moves(request([a, b, c, d], rendered))) == ([2, 4], [100, 300],
                                                                     [300, 500])
    assert shift._moves(request([a, b, c, d], {b: [99], d: [41]})) is None  # b rendered otherwise
    shift, request = _moving({b: ([21], [100]), d: ([41], [300])})
    assert shift._moves(request([a, b, c, d], {b: [21, 22], d: [41]})) is None  # in two blocks
    shift, request = _moving({b: ([21], [100]), d: ([41], [300])})
    assert shift._moves(request([a, b, c, d], {b: [], c: [21], d: [41]})) is None  # b has none
    shift, request = _moving({b: ([21], [100]), d: ([41], [300])})
    assert shift._moves(request([a, b, c, d], {d: [41], b: [21], c: []})) is not None
    assert shift._moves(request([a, b, c, d], {b: [21], d: []})) is None  # d last, no blocks
    shift, request = _moving({b: ([21], [100])})
    assert _moved(shift._moves(request([a, c], {}))) == ([], [], [])  # none of them sent


def test_the_substituted_blocks_are_found_however_many_and_however_rendered() -> None:
    """(`_moves`) Items of several blocks, more items than the one-at-a-time path takes, and
    blocks stripped from the simulated prompt: the same answer."""
    import numpy as np

    a, b, c, d = (object() for _ in range(4))
    shift, request = _moving({b: ([21], [100]), d: ([41, 42], [300, 7])})
    assert _moved(shift._moves(request([a, b, c, d], {b: [21], d: [41, 42]}))) == (
        [2, 4, 5], [100, 300, 7], [300, 500, 600])
    shift, request = _moving({b: ([21], [100]), d: ([41, 42], [300, 7])})
    assert shift._moves(request([a, b, c, d], {b: [21], d: [41, 43]})) is None
    shift, request = _moving({b: ([21], [100]), d: ([41, 42], [300, 7])})
    assert shift._moves(request([a, b, c, d], {b: [21], d: [41, 42, 43]})) is None
    # Ten one-block items, every other one substituted.
    items = [object() for _ in range(20)]
    subs = {item: ([500 + n], [n]) for n, item in enumerate(items) if n % 2}
    shift, request = _moving(subs)
    blocks = {item: ids for item, (ids, _) in subs.items()}
    odd = list(range(1, 20, 2))
    assert _moved(shift._moves(request(items, blocks))) == (
        [n + 1 for n in odd], odd, [100 * (n + 2) for n in odd])
    shift, request = _moving(subs)
    assert shift._moves(request(items, {**blocks, items[19]: [519, 520]})) is None
    # a's block (1) stripped from the simulated prompt: block k ends at 100 k, not 100 (k + 1).
    for many in (False, True):
        originals = subs if many else {b: ([21], [100])}
        view, rendered = (items, blocks) if many else ([a, b], {b: [21]})
        shift, request = _moving(originals, kept=np.array([0, *range(2, len(view) + 1)]))
        moves = shift._moves(request(view, rendered))
        assert moves.ends == [100 * block for block in moves.blocks], many


def test_with_the_automatic_marker_alone_a_request_breaks_at_one_length() -> None:
    """(`_breakpoint_lengths`) `--client automatic` sends only Anthropic's top-level marker, on
    the last cacheable block: one length a request, the end of what it wrote where it wrote."""
    session, config = synthetic_session(30, seed=2), ReplayConfig(client="automatic")
    named = resolve("baseline")[0]
    with strategy_rewrites(session, named, breakeven_config(session, config), None) as rw:
        shift = object.__new__(_shift.Shift)
        shift.run, shift._views = rw.run, []
        requests = [r for r in rw.records if r.kind == "request" and not r.request.released]
        wrote = 0
        for r in requests:
            lengths = shift._breakpoint_lengths(r)
            assert len(lengths) == 1, r.request_index
            o = r.outcome
            if o.cache_write_5m + o.cache_write_1h:
                assert lengths == {o.cache_read + o.cache_write_1h + o.cache_write_5m}
                wrote += 1
        assert wrote


def test_the_unmatched_entries_are_those_from_before_the_rewrite_past_its_first_edit() -> None:
    """(`Shift.unmatched`) The entries of the counterfactual's store, in any scope, for the
    request's model, that the store held before the rewrite's request (not written by it, nor
    written again by it once expired) and longer than where the first substituted item starts:
    only the counterfactual can match those. Whenever they were written: an earlier request
    can share the rewrite's time."""
    from datetime import UTC, datetime, timedelta
    from types import SimpleNamespace

    class Found(_shift.Shift):
        def _originals(self, rec, cf_items, cf_record) -> bool:
            self.first_start = 2000
            return True

        def _usable(self, rec) -> bool:
            return True

        def _written(self, rec) -> set[int]:
            return {4000}

    t = datetime(2026, 3, 1, tzinfo=UTC)
    earlier = t - timedelta(seconds=1)
    entries = {
        ("org", "model-id", 1): SimpleNamespace(tokens=2000, created=earlier),  # ends at the edit
        ("org", "model-id", 2): SimpleNamespace(tokens=2001, created=earlier),
        ("org", "model-id", 3): SimpleNamespace(tokens=5000, created=t),  # written at the rewrite
        ("org", "model-id", 4): SimpleNamespace(tokens=5000, created=t),  # before, at its time
        ("org", "model-id", 7): SimpleNamespace(tokens=5000, created=t),  # expired, written again
        ("org", "other-model", 5): SimpleNamespace(tokens=5000, created=earlier),
        ("key", "model-id", 6): SimpleNamespace(tokens=5000, created=earlier),
    }
    before = {key: e for key, e in entries.items() if key[2] != 3}
    before[("org", "model-id", 7)] = SimpleNamespace(tokens=5000, created=earlier)
    rec = SimpleNamespace(model="m", ts=t, request=SimpleNamespace(model="model-id"),
                          outcome=SimpleNamespace(cache_read=0))
    cf = SimpleNamespace(outcome=SimpleNamespace(cache_read=0))
    shift = Found(None, [rec], 0, {}, [], cf, SimpleNamespace(entries=entries), before)
    assert shift.ok
    assert shift.unmatched == [("org", "model-id", 2), ("org", "model-id", 4),
                               ("key", "model-id", 6)]
    assert shift._prefixes.tolist() == [2, 4, 6]
    assert shift.watch == set() and (shift.longest, shift.dormant) == (-1, -1)
    # (`watch`) Where the two runs read otherwise at the rewrite (before its edit), the entry
    # the rewritten run read is watched unless a breakpoint of the request refreshed it; where
    # they read the same, the same entry, nothing is.
    for read, cf_read, watched in ((1500, 3000, {1500}), (4000, 3000, set()),
                                   (1500, 1500, set())):
        rec.outcome.cache_read, cf.outcome.cache_read = read, cf_read
        shift = Found(None, [rec], 0, {}, [], cf, SimpleNamespace(entries=entries), before)
        assert shift.watch == watched, (read, cf_read)


def _coarse(session: Session, seconds: int) -> Session:
    """`session` with every time rounded down to `seconds` (a log of a coarse clock)."""
    from datetime import timedelta

    start = session.events[0].ts
    for n, e in enumerate(session.events):
        if e.ts is not None:
            late = (e.ts - start).total_seconds() // seconds * seconds
            session.events[n] = e.model_copy(update={"ts": start + timedelta(seconds=late)})
    return session


@pytest.mark.parametrize(("seed", "name"), [(1, "age-truncate-500-keep-3"),
                                            (3, "tool-aging-keep-3")])
def test_entries_written_at_the_rewrite_s_own_time_before_it_are_unmatched(
    seed: int, name: str
) -> None:
    """A log whose clock counts minutes: requests share their time, and an entry the request
    before a rewrite wrote is as old as the rewrite. Told from the rewrite's own writes by its
    time, it was left out of the entries only the counterfactual can read, and the derivation
    began while the counterfactual still read it, and rows differed from the replay's (on a
    40-request session, a rewrite paid back in 18 requests where the replay said never)."""
    session = _coarse(synthetic_session(16, seed=seed, size_scale=0.4), 60)
    assert _same(session, name, ReplayConfig(ttl="5m")) > 0


def test_derived_counterfactuals_count_the_requests_over_the_window_as_replayed_ones() -> None:
    """A window the rewritten run fits but its counterfactuals (the results put back) outgrow:
    the derived requests over it are named in the rows as the replayed ones are."""
    session = synthetic_session(150, seed=3)
    name = "age-truncate-500-keep-3"
    records = _replay._Run(session, resolve([name])[0], ReplayConfig()).run()
    window = max(r.request.total - r.outcome.dropped_tokens for r in records)
    config = ReplayConfig(context_window=window)
    assert _same(session, name, config) > 0
    rows, _ = _rows(session, name, config, True)
    assert any(f"{window:,}-token context window" in r.disagreement for r in rows)
