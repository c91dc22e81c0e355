"""The strategy library: each family's rule on small hand-made histories, names and overrides,
plug-ins (file and entry point), and the `strategies` command."""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import re
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import RUN42

from replay._errors import ReplayError
from replay.log import Usage
from replay.strategies import (
    AssistantItem,
    Block,
    StrategyContext,
    StrategySpec,
    SummaryItem,
    ToolResultItem,
    UserItem,
    View,
    _base,
    _plugins,
    canonical_names,
    parse_name,
    register,
    registered,
    resolve,
)
from replay.strategies._base import BUILTIN_FAMILIES, plugin_names
from replay.strategies._common import summary_item
from replay.strategies._prompts import (
    LITERAL_CLEARED,
    LITERAL_CLINE_DUP_READ,
    LITERAL_CODEX_SUMMARY_PREFIX,
    LITERAL_OPENCODE_COMPACTION_MARKER,
    LITERAL_OPENHANDS_MASKED,
)

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


# --- tiny history builder -----------------------------------------------------------------


class History:
    def __init__(self) -> None:
        self.items: list = []
        self.calls = 0

    def _next(self) -> int:
        return len(self.items)

    def user(self, text: str = "please fix the bug") -> History:
        self.items.append(UserItem(text, event_index=self._next()))
        return self

    def step(self, *calls: tuple, text: str = "", thinking: str = "") -> History:
        """`calls`: (tool, arguments, output) triples, answered right after the message."""
        blocks = []
        if thinking:
            blocks.append(Block("thinking", text=thinking))
        if text:
            blocks.append(Block("text", text=text))
        ids = []
        for tool, args, _ in calls:
            self.calls += 1
            ids.append(f"c{self.calls}")
            blocks.append(Block("tool_call", call_id=ids[-1], name=tool, arguments=args))
        self.items.append(AssistantItem(blocks=tuple(blocks), event_index=self._next()))
        for cid, (tool, args, output) in zip(ids, calls, strict=True):
            self.items.append(
                ToolResultItem(cid, tool, output, event_index=self._next(), arguments=args)
            )
        return self


def ctx(
    window: int = 200_000,
    usage: int | None = None,
    ts: datetime = T0,
    previous_ts: datetime | None = None,
    model: str = "gpt-5",
    logged=(),
) -> StrategyContext:
    return StrategyContext(
        request_index=0,
        ts=ts,
        model=model,
        context_window=window,
        count_tokens=lambda s: math.ceil(len(s) / 4),
        previous_usage=Usage(input_tokens=usage) if usage is not None else None,
        previous_ts=previous_ts,
        logged_summaries=logged,
    )


def build(name: str, **overrides):
    named = parse_name(name, {parse_name(name).spec.family: overrides} if overrides else None)
    return named.instantiate()


def view_of(result) -> View:
    return result if isinstance(result, View) else View(items=list(result))


def outputs(view: View) -> list[str]:
    return [i.output for i in view.items if isinstance(i, ToolResultItem)]


def read(path: str, output: str) -> tuple:
    return ("read_file", {"path": path}, output)


# --- registry, names, overrides -------------------------------------------------------------


def test_every_canonical_name_parses_to_exactly_one_family():
    names = canonical_names()
    assert len(names) == len(set(names)) >= 45
    for name in names:
        matches = [s.family for s in registered() if re.fullmatch(s.pattern, name)]
        assert len(matches) == 1, (name, matches)
        assert parse_name(name).name == name


def test_every_family_module_documents_rule_defaults_and_source():
    for module in BUILTIN_FAMILIES:
        doc = importlib.import_module(f"replay.strategies.{module}").__doc__ or ""
        assert len(doc) > 150, module
        if module != "recorded":
            assert "Source" in doc or "source" in doc.lower(), module
        if module.startswith("claudecode"):
            assert "UNVERIFIED" in doc, module
    for spec in registered():
        if not spec.is_plugin:
            assert spec.cache_class in _base.CACHE_CLASSES
            assert spec.rule and spec.source, spec.family
            if spec.family.startswith("claudecode"):
                assert "UNVERIFIED" in spec.source


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("truncate-2k", {"chars": 2000}),
        ("compact-at-12k-structured", {"chars": 12_000, "style": "structured",
                                       "output_chars": 1500, "argument_chars": 200}),
        ("age-truncate-1k-keep-3", {"chars": 1000, "keep": 3}),
        ("prune-at-12k-keep-3", {"chars": 12_000, "keep": 3}),
    ],
)
def test_every_number_in_a_name_takes_a_k_suffix(name, params):
    assert parse_name(name).params == params


def test_parameters_in_the_name():
    assert parse_name("opencode-prune-30k-10k").params["protect"] == 30_000
    assert parse_name("pi-compact-16k-20k").params == {"reserve": 16_384, "keep": 20_000}
    assert parse_name("codex-tool-trunc-20k-tokens").params == {"limit": 20_000, "unit": "tokens"}
    assert parse_name("anthropic-clear-thinking-keep-all").params["keep"] == "all"
    assert parse_name("observation-mask-keep-10").params["window"] == 10
    assert parse_name("observation-mask-keep-5-poll-3").params == {"n": 5, "polling": 3}


def test_overrides_with_set_and_brackets_rename_the_strategy():
    built = parse_name("opencode-prune-40k-20k", {"opencode-prune": {"protect": "30k"}})
    assert built.params["protect"] == 30_000
    assert built.name == "opencode-prune-40k-20k[protect=30000]"
    name = "anthropic-clear-tool-uses-100k-keep-3[exclude_tools=read_file+grep,clear_at_least=5k]"
    built = parse_name(name)
    assert built.params["exclude_tools"] == ("read_file", "grep")
    assert built.params["clear_at_least"] == 5000
    assert built.params["clear_tool_inputs"] is False
    # the canonical form round-trips
    assert parse_name(built.name).params == built.params
    # --set wins over the name
    assert (
        parse_name("pi-compact-16k-20k", {"pi-compact": {"keep": "25000"}}).params["keep"] == 25_000
    )
    # and over the brackets (docs/strategies.md)
    both = parse_name("pi-compact-16k-20k[keep=25k]", {"pi-compact": {"keep": "30k"}})
    assert both.params["keep"] == 30_000 and both.name == "pi-compact-16k-20k[keep=30000]"
    # a value equal to the current one does not rename
    assert (
        parse_name("pi-compact-16k-20k", {"pi-compact": {"keep": "20k"}}).name
        == "pi-compact-16k-20k"
    )
    # typed values
    assert parse_name("cline-dedup-file-reads[saving=45%]").params["saving"] == pytest.approx(0.45)
    flag = parse_name("anthropic-clear-tool-uses-100k-keep-3[clear_tool_inputs=yes]")
    assert flag.params["clear_tool_inputs"] is True
    assert flag.name == "anthropic-clear-tool-uses-100k-keep-3[clear_tool_inputs=true]"


def test_resolve_splits_lists_but_not_brackets_and_applies_set_per_family():
    got = resolve(
        "baseline,anthropic-clear-tool-uses-100k-keep-3[keep=2,clear_at_least=1k],pi-compact-16k-20k",
        {"pi-compact": {"reserve": "8k"}},
    )
    assert [g.name for g in got] == [
        "baseline",
        "anthropic-clear-tool-uses-100k-keep-3[clear_at_least=1000,keep=2]",
        "pi-compact-16k-20k[reserve=8192]",
    ]


@pytest.mark.parametrize(
    ("names", "overrides", "message"),
    [
        ("no-such-strategy", None, "unknown strategy 'no-such-strategy'; known: recorded"),
        ("truncate-\u0665\u0660\u0660", None, "unknown strategy 'truncate-\u0665\u0660\u0660'"),
        ("sliding10", None, "unknown strategy 'sliding10' (did you mean 'sliding-10' or"),
        ("pi-compact-16k-20k[nope=1]", None, "no parameter 'nope'"),
        ("pi-compact-16k-20k", {"pi-compact": {"keep": "lots"}}, "expected an integer"),
        ("baseline", {"no-family": {"x": "1"}}, "no strategy family"),
        # a family no name runs: its parameters and values are still checked
        ("baseline", {"sliding": {"nosuch": "1"}}, "family 'sliding' has no parameter 'nosuch'"),
        ("baseline", {"sliding": {"messages": "abc"}}, "expected an integer"),
        ("cline-dedup-file-reads[saving]", None, "param=value"),
        # one k per number: `2kk` is no number, so no name
        ("anthropic-compact-2kk", None, "unknown strategy 'anthropic-compact-2kk'"),
        # from Python, None for a parameter that needs a value
        ("truncate-500", {"truncate": {"chars": None}}, "chars=None is not accepted"),
    ],
)
def test_bad_names_and_overrides_are_user_errors(names, overrides, message):
    with pytest.raises(ReplayError, match=re.escape(message)):
        resolve(names, overrides)


def test_all_is_the_builtins_with_their_real_defaults():
    names = canonical_names()
    for expected in (
        "codex-compact-at-90pct",
        "opencode-prune-40k-20k",
        "pi-compact-16k-20k",
        "claudecode-autocompact-13k",
        "anthropic-clear-tool-uses-100k-keep-3",
        "gemini-compress-50pct-keep-30pct",
        "openhands-llm-summary-120-keep-4",
        "openclaw-prune-cache-ttl-5m",
        "observation-mask-keep-5-poll-1",
    ):
        assert expected in names
    assert [n.name for n in resolve("all")] == names


# --- family rules on hand-made histories ---------------------------------------------------


def test_codex_middle_truncation_marker_and_budget():
    from replay.strategies.codex_tool_trunc import middle_truncate

    text = "a" * 10_000 + "b" * 10_000 + "c" * 10_000
    cut = middle_truncate(text, 12_000, "bytes")
    assert cut.startswith("a" * 6000) and cut.endswith("c" * 6000)
    assert "…18000 chars truncated…" in cut
    assert middle_truncate("short", 12_000, "bytes") == "short"
    assert "tokens truncated…" in middle_truncate(text, 1000, "tokens")

    h = (
        History()
        .user()
        .step(("bash", {"command": "make"}, "line\n" * 5000), read("a.ts", "x" * 11_000))
    )
    view = view_of(build("codex-tool-trunc-10k")(h.items, ctx()))
    shell, small = outputs(view)
    assert shell.startswith("Total output lines: 5000\n\n")
    assert len(shell.encode()) < 12_000 + 100
    assert small == "x" * 11_000  # under 1.2 x 10,000 bytes: untouched
    # the same object on every request (lossy storage, append-only)
    again = view_of(build("codex-tool-trunc-10k")(h.items, ctx()))
    assert outputs(again) == outputs(view)


def test_codex_tool_trunc_heads_a_cut_test_run_with_its_line_count_too():
    """A test runner's output is exec output as well: cut, it starts with the line count;
    a cut read does not."""
    h = History().user().step(
        ("run_tests", {"command": "pytest"}, "ok\n" * 6000), read("a.ts", "y\n" * 7000)
    )
    tests, file = outputs(view_of(build("codex-tool-trunc-10k")(h.items, ctx())))
    assert tests.startswith("Total output lines: 6000\n\n")
    assert file.startswith("y\n") and "chars truncated" in file


def test_codex_compaction_keeps_recent_user_messages_and_prefixes_the_summary():
    h = History().user("first request " * 10)
    for n in range(3):
        h.step(read(f"f{n}.ts", "code " * 2000), text="reading")
    h.user("second request " + "y" * 100_000)  # ~25k estimated tokens: gets middle-truncated
    h.step(read("g.ts", "code"), text="mid-turn")  # compacted mid-turn: the summary comes last
    strategy = build("codex-compact-at-90pct")
    quiet = view_of(strategy(h.items, ctx(window=272_000, usage=1000)))
    assert quiet.items == h.items and not quiet.summarizer_calls
    view = view_of(strategy(h.items, ctx(window=272_000, usage=250_000)))
    assert view.events and len(view.summarizer_calls) == 1
    *users, summary = view.items
    assert isinstance(summary, SummaryItem)
    assert summary.text.startswith(LITERAL_CODEX_SUMMARY_PREFIX + "\n")
    assert [u.text.startswith("second") for u in users] == [True]
    assert "tokens truncated…" in users[0].text
    assert sum(math.ceil(len(u.text) / 4) for u in users) <= 20_100


@pytest.mark.parametrize("name", ["codex-compact-at-90pct", "codex-remote-compact-at-90pct"])
def test_codex_compaction_before_a_new_prompt_leaves_it_after_the_summary(name):
    h = History()
    for n in range(4):
        h.user(f"old request {n}: " + "o" * 20_000)  # ~5,000 estimated tokens each
        h.step(("bash", {"command": f"c{n}"}, "x" * 1000), text=f"s{n}")
    h.user("NEW REQUEST: " + "n" * 60_000)  # ~15,000 estimated tokens
    view = view_of(build(name)(h.items, ctx(window=272_000, usage=250_000)))
    # Codex compacts before it records the prompt (run_task, pre-turn): the prompt is neither
    # in the summarized history nor in the 20k budget of kept user messages; it follows.
    *users, summary, new = view.items
    assert new is h.items[-1] and isinstance(summary, SummaryItem)
    assert [u.text[:14] for u in users] == [f"old request {n}:" for n in range(4)]
    assert all(i is not h.items[-1] for i in view.summarizer_calls[0].input_items)


@pytest.mark.parametrize("name", ["codex-compact-at-90pct", "codex-remote-compact-at-90pct"])
def test_codex_compaction_re_injects_the_initial_context(name):
    """Codex's compacted history keeps no injected message; it re-injects the initial context
    (permissions, AGENTS.md, environment) — mid-turn right before the last user message, so
    the summary stays last (the a7 sample's recorded compaction), before a new prompt after the
    summary. Without it the simulated Codex sent ~17k tokens fewer than the recorded one on
    every request after its compaction of the a7 sample."""
    perms = UserItem("<permissions instructions>sandboxed</permissions instructions>",
                     event_index=0, injected=True)
    agents = UserItem("# AGENTS.md instructions for /repo\n\nrun the tests", event_index=1,
                      injected=True)
    h = History()
    h.items += [perms, agents]
    h.user("first request").step(("bash", {"command": "a"}, "x" * 4000), text="s")
    h.user("second request").step(("bash", {"command": "b"}, "x" * 4000), text="t")
    mid = view_of(build(name)(list(h.items), ctx(window=272_000, usage=250_000)))
    first, initial_1, initial_2, second, summary = mid.items
    assert (first.text, second.text) == ("first request", "second request")
    assert (initial_1, initial_2) == (perms, agents) and isinstance(summary, SummaryItem)

    h.user("third request")  # a new prompt: compacted before Codex records it
    pre = view_of(build(name)(list(h.items), ctx(window=272_000, usage=250_000)))
    *users, summary, initial_1, initial_2, prompt = pre.items
    assert [u.text for u in users] == ["first request", "second request"]
    assert isinstance(summary, SummaryItem) and (initial_1, initial_2) == (perms, agents)
    assert prompt is h.items[-1]


@pytest.mark.parametrize("name", ["codex-compact-at-90pct", "codex-remote-compact-at-90pct"])
def test_codex_pre_turn_check_does_not_count_the_new_prompt(name):
    h = History().user("first").step(("bash", {"command": "c"}, "x" * 1000), text="s")
    h.user("NEW REQUEST: " + "n" * 80_000)  # ~20,000 estimated tokens, not recorded yet
    # 240,000 reported + the prompt's estimate would pass 244,800 (90% of 272k): Codex's check
    # runs before it records the prompt, on the reported tokens and the items after them.
    quiet = view_of(build(name)(h.items, ctx(window=272_000, usage=240_000)))
    assert quiet.items == h.items and not quiet.summarizer_calls
    # Mid-turn, what the last response has not counted yet does count: its tool's output.
    h.step(("bash", {"command": "d"}, "r" * 80_000), text="more")
    assert view_of(build(name)(h.items, ctx(window=272_000, usage=240_000))).summarizer_calls


def test_codex_compaction_reuses_the_logged_summary():
    class Logged:
        summary = "THE REAL SUMMARY"

    h = History().user().step(read("a.ts", "x" * 400), text="ok")
    view = view_of(build("codex-compact-at-90pct")(h.items, ctx(usage=10**6, logged=[Logged()])))
    assert view.items[-1].text.endswith("THE REAL SUMMARY")
    assert view.items[-1].source == "logged"


def _opencode_turns() -> History:
    h = History()
    for turn in range(4):
        h.user(f"turn {turn}")
        h.step(read(f"old{turn}.ts", "o" * 4000), ("skill", {"name": "x"}, "s" * 4000))
        h.step(text="done")
    return h


def test_opencode_prune_protects_the_last_two_turns_and_needs_a_minimum():
    h = _opencode_turns().user("turn 4")
    # protect 1,000 tokens, clear if more than 500 clearable: turns 0-1 are prunable
    view = view_of(build("opencode-prune-40k-20k", protect="1000", minimum="500")(h.items, ctx()))
    cleared = [i.output == LITERAL_CLEARED for i in view.items if isinstance(i, ToolResultItem)]
    # results in order: old0, skill0, old1, skill1, old2, skill2, old3, skill3
    # newest-first walk outside the last two turns (2, 3): old1 (1,000 tokens, protected), then
    # old0 passes 1,000 → pruned; skills are never pruned
    assert cleared == [True, False, False, False, False, False, False, False]
    assert view.events and view.events[0].kind == "prune"
    # not enough to clear: nothing happens
    quiet = view_of(build("opencode-prune-40k-20k", protect="1000", minimum="5000")(h.items, ctx()))
    assert LITERAL_CLEARED not in outputs(quiet)
    # mid-loop (the last item is a tool result) it never runs
    mid = _opencode_turns()
    mid.step(read("x.ts", "x"))
    midview = view_of(
        build("opencode-prune-40k-20k", protect="1000", minimum="500")(mid.items, ctx())
    )
    assert LITERAL_CLEARED not in outputs(midview)


def test_opencode_prune_leaves_failed_tool_calls_alone():
    """opencode walks `completed` tool parts only (an `error` part has no output): a failed
    result is neither counted towards the protected 40k nor cleared."""
    from dataclasses import replace

    h = _opencode_turns().user("turn 4")
    errors = [replace(i, is_error=True) if isinstance(i, ToolResultItem) and i.tool_name != "skill"
              and i.event_index < 10 else i for i in h.items]
    view = view_of(build("opencode-prune-40k-20k", protect="1000", minimum="500")(errors, ctx()))
    # old0 and old1 failed: nothing outside the last two turns is left to clear
    assert LITERAL_CLEARED not in outputs(view) and not view.events


def test_opencode_tool_caps_apply_at_storage_with_a_pagination_hint():
    h = (
        History()
        .user()
        .step(
            ("bash", {"command": "seq"}, "\n".join(str(n) for n in range(2500))),
            read("big.ts", "z" * 2500 + "\nshort"),
            ("bash", {"command": "yes"}, "w" * 60_000),
        )
    )
    lines, long_line, wide = outputs(
        view_of(build("opencode-tool-trunc-2000l-50kb")(h.items, ctx()))
    )
    assert lines.splitlines()[1999] == "1999" and "...500 lines truncated..." in lines
    assert "Full output saved to: " in lines and "offset" in lines
    assert long_line.startswith("z" * 2000 + "... (line truncated to 2000 chars)")
    assert "bytes truncated" in wide and len(wide) < 52_000


def test_opencode_tool_caps_keep_exactly_2000_lines_and_50_kib():
    """Both limits are inclusive and a KB is 1,024 bytes: 2,000 lines and 51,200 bytes are
    stored whole; one line or one byte more is cut."""
    h = History().user().step(
        ("bash", {"command": "a"}, "\n".join("1" * 2000)),
        ("bash", {"command": "b"}, "\n".join("1" * 2001)),
        ("bash", {"command": "c"}, "w" * 51_200),
        ("bash", {"command": "d"}, "w" * 51_201),
    )
    lines, more_lines, kib, more_bytes = outputs(
        view_of(build("opencode-tool-trunc-2000l-50kb")(h.items, ctx()))
    )
    assert lines == "\n".join("1" * 2000) and kib == "w" * 51_200
    assert "...1 lines truncated..." in more_lines
    assert "...51201 bytes truncated..." in more_bytes


def test_opencode_grep_keeps_exactly_100_matches():
    """grep shows at most 100 matches: 100 stay whole, a 101st is cut with the notice."""
    hits = [f"src/f{n}.ts:1: match" for n in range(101)]
    h = History().user().step(
        ("grep", {"pattern": "match"}, "\n".join(hits[:100])),
        ("grep", {"pattern": "match"}, "\n".join(hits)),
    )
    exact, over = outputs(view_of(build("opencode-tool-trunc-2000l-50kb")(h.items, ctx())))
    assert exact == "\n".join(hits[:100])
    assert over == "\n".join(hits[:100]) + (
        "\n\n(Results truncated. Consider a more specific path or pattern.)"
    )


def test_pi_never_cuts_at_a_tool_result_and_waits_for_a_prompt():
    h = History().user("task")
    for n in range(6):
        h.step(read(f"f{n}.ts", "q" * 400), text=f"step {n}")
    strategy = build("pi-compact-16k-20k", keep="150")
    # mid-run (last item is a tool result): no compaction even when over the limit
    assert not view_of(strategy(h.items, ctx(window=20_000, usage=19_000))).events
    h.user("next prompt")
    view = view_of(strategy(h.items, ctx(window=20_000, usage=19_000)))
    assert view.events and view.summarizer_calls
    summary, first_kept = view.items[0], view.items[1]
    assert summary.text.startswith("The conversation history before this point was compacted")
    assert "<read-files>" in summary.text
    assert not isinstance(first_kept, ToolResultItem)
    # walking back 150 tokens lands on a result; the cut moves forward to the next message
    from replay.strategies.pi_compact import pi_cut

    cut = pi_cut(h.items, 150)
    assert not isinstance(h.items[cut], ToolResultItem)
    assert isinstance(h.items[cut - 1], ToolResultItem)


@pytest.mark.parametrize("window", [17_500, 1_200])  # the second: over the window too
def test_pi_keeps_its_tail_from_the_entries_before_the_new_prompt(window):
    """pi compacts before it adds the new prompt: the prompt is no part of the `keep` tokens
    kept. A prompt as long as `keep` used to have everything before it summarized."""
    from replay.strategies._common import request_tokens

    h = History().user("task")
    for n in range(4):
        h.step(read(f"f{n}.ts", "q" * 800), text=f"step {n}")
    h.step(text="done")
    h.user("Q" * 2000)  # 500 estimated tokens: `keep` on its own
    c = ctx(window=window, usage=window - 500)
    assert (request_tokens(h.items, c) > window) == (window < 10_000)
    view = view_of(build("pi-compact-16k-20k", keep="500")(h.items, c))
    assert view.events
    kept = view.items[1:]
    assert kept[-1] is h.items[-1] and len(kept) > 1  # older entries kept beside the prompt
    assert sum(len(i.output) for i in kept if isinstance(i, ToolResultItem)) >= 800


def test_pi_uses_a_logged_summary_once_and_as_pi_stored_it():
    """pi stores S with the split-turn section and the file lists in it (spec l.118-120): a
    logged summary is not used again for the split turn's prefix, nor given lists twice."""

    class Logged:
        summary = "## Goal\nfix\n\n<read-files>\nsrc/f0.py\n</read-files>"

    h = History().user("task one")
    for n in range(6):
        h.step(read(f"src/f{n}.py", "y" * 8000), text=f"step {n}")
    h.user("task two")
    strategy = build("pi-compact-16k-20k", keep="5000")
    view = view_of(strategy(h.items, ctx(window=50_000, usage=45_000, logged=[Logged()])))
    assert "(split turn)" in view.events[0].detail  # the cut falls inside the first turn
    text = view.items[0].text
    assert text.count(Logged.summary) == 1 and text.count("<read-files>") == 1
    assert "Turn Context" not in text
    assert view.summarizer_calls[-1].summary != Logged.summary  # the prefix call: a stand-in
    # A logged summary without lists (an older pi, another harness) gets pi's lists.
    Logged.summary = "## Goal\nfix"
    view = view_of(
        build("pi-compact-16k-20k", keep="5000")(
            h.items, ctx(window=50_000, usage=45_000, logged=[Logged()])
        )
    )
    assert view.items[0].text.count("<read-files>\nsrc/f0.py\nsrc/f1.py") == 1


def test_fresh_transcripts_follow_each_harness_s_serialization():
    """pi and opencode-prepend serialize as the spec appendix gives (l.314-317, l.322-328):
    their own cut markers, opencode's error label, the <conversation> wrapper. The other styles
    are unchanged."""
    from replay.strategies._common import transcript

    items = [
        UserItem("go"),
        AssistantItem((Block("tool_call", call_id="c1", name="bash", arguments={"cmd": "x"}),)),
        ToolResultItem("c1", "bash", "E" * 2500, is_error=True),
    ]
    call = '[Assistant tool call]: bash({"cmd": "x"})'
    assert transcript(items, "opencode") == (
        f"Here is the conversation so far:\n\n<conversation>\n[User]: go\n\n{call}\n\n"
        f"[Tool error]: {'E' * 2000}\n[truncated]\n</conversation>"
    )
    pi = transcript(items, "pi")
    assert pi.startswith('<conversation>\n[User]: go\n\n[Assistant tool calls]: bash(cmd="x")')
    # pi writes a message's calls on one line: `name(key=json, …); …`.
    two = AssistantItem(
        (
            Block("text", text="both"),
            Block("tool_call", call_id="a", name="read", arguments={"path": "f", "limit": 5}),
            Block("tool_call", call_id="b", name="ls", arguments={}),
        )
    )
    assert transcript([two], "pi") == (
        '<conversation>\n[Assistant]: both\n\n[Assistant tool calls]: read(path="f", limit=5); '
        "ls()\n</conversation>"
    )
    cut = "\n\n[... 500 more characters truncated]"
    assert pi.endswith(f"[Tool result]: {'E' * 2000}{cut}\n</conversation>")
    assert transcript(items) == (
        'User: go\n\nTool call: bash({"cmd": "x"})\n\n'
        f"Tool result: {'E' * 2000}\n[... 500 more characters truncated]"
    )


def test_pi_passes_the_stored_summary_as_previous_summary():
    h = History().user("task one")
    for n in range(6):
        h.step(read(f"src/f{n}.py", "y" * 8000), text=f"step {n}")
    strategy = build("pi-compact-16k-20k", keep="5000")
    first = view_of(strategy(h.user("two").items, ctx(window=50_000, usage=45_000)))
    for n in range(6, 12):
        h.step(read(f"src/f{n}.py", "y" * 8000), text=f"step {n}")
    second = view_of(strategy(h.user("three").items, ctx(window=50_000, usage=45_000)))
    assert first.events and second.events and isinstance(second.items[0], SummaryItem)
    stored = first.items[0].text.split("<summary>\n", 1)[1].rsplit("\n</summary>", 1)[0]
    instruction = second.summarizer_calls[0].instruction
    assert instruction.startswith(f"<previous-summary>\n{stored}\n</previous-summary>\n\n")


def test_anthropic_clear_tool_uses_keep_exclude_inputs_and_clear_at_least():
    h = History().user()
    for n in range(6):
        h.step(read(f"f{n}.ts", "r" * 4000), ("grep", {"pattern": "x"}, "g" * 400))
    items = h.items
    below = view_of(build("anthropic-clear-tool-uses-100k-keep-3")(items, ctx()))
    assert below.items == items  # under the 100k trigger: untouched
    strategy = build(
        "anthropic-clear-tool-uses-100k-keep-3",
        trigger="1000",
        exclude_tools="grep",
        clear_tool_inputs="true",
    )
    view = view_of(strategy(items, ctx()))
    outs = outputs(view)
    reads = [
        o
        for o, i in zip(outs, [i for i in items if isinstance(i, ToolResultItem)], strict=True)
        if i.tool_name == "read_file"
    ]
    assert [o == "r" * 4000 for o in reads] == [False, False, False, True, True, True]
    assert all(o == "g" * 400 for o in outs if o.startswith("g"))  # excluded tool kept
    cleared_calls = [
        b
        for i in view.items
        if isinstance(i, AssistantItem)
        for b in i.tool_calls
        if b.name == "read_file" and b.arguments == {}
    ]
    assert len(cleared_calls) == 3
    # clear_at_least: clearing 3 x 1,000 tokens is not worth a 5,000-token minimum → no-op
    lazy = build(
        "anthropic-clear-tool-uses-100k-keep-3",
        trigger="1000",
        clear_at_least="5000",
        exclude_tools="grep",
    )
    assert view_of(lazy(items, ctx())).items == items


def test_anthropic_clear_thinking_keeps_the_newest_user_turn():
    h = History().user()
    for n in range(3):
        h.step(read(f"f{n}", "x"), thinking=f"thought {n}", text="t")
    strategy = build("anthropic-clear-thinking-keep-1")

    def thinking_kept() -> list[bool]:
        view = view_of(strategy(h.items, ctx()))
        return [
            any(b.type == "thinking" for b in i.blocks)
            for i in view.items
            if isinstance(i, AssistantItem)
        ]

    # One user turn: its whole tool loop keeps its thinking (the API needs it).
    assert thinking_kept() == [True, True, True]
    # The next user turn with thinking clears every step of the one before, once.
    h.user("now the docs")
    h.step(read("g", "y"), thinking="thought 3", text="t")
    assert thinking_kept() == [False, False, False, True]
    h.step(read("h", "z"), thinking="thought 4", text="t")
    assert thinking_kept() == [False, False, False, True, True]
    assert view_of(build("anthropic-clear-thinking-keep-all")(h.items, ctx())).items == h.items
    # keep-0: no thinking is sent, the turn in progress included, step by step.
    none = build("anthropic-clear-thinking-keep-0")
    for end in range(2, len(h.items) + 1):
        view = view_of(none(h.items[:end], ctx()))
        assert not any(b.type == "thinking" for i in view.items if isinstance(i, AssistantItem)
                       for b in i.blocks)


def test_tool_aging_per_tool():
    h = History().user()
    for n in range(4):
        h.step(
            read(f"src/f{n}.ts", "R" * 900),
            ("list_files", {"path": "."}, "L" * 900),
            ("write_file", {"path": f"w{n}", "content": "c"}, "W" * 900),
            ("run_tests", {}, "T" * 900),
        )
    view = view_of(build("tool-aging-keep-3")(h.items, ctx()))
    by_tool: dict[str, list[str]] = {}
    for i in view.items:
        if isinstance(i, ToolResultItem):
            by_tool.setdefault(i.tool_name, []).append(i.output)
    assert "src/f0.ts" in by_tool["read_file"][0] and "read it again" in by_tool["read_file"][0]
    assert by_tool["read_file"][1:] == ["R" * 900] * 3
    assert len(by_tool["list_files"][0]) < 250 and by_tool["list_files"][1] == "L" * 900
    assert by_tool["write_file"] == ["W" * 900] * 4 and by_tool["run_tests"] == ["T" * 900] * 4
    assert len(view.events) == 2  # the aged read and the aged listing


def test_tool_aging_leaves_failed_and_short_reads_as_they_are():
    """A failed read is not the file's content and cannot be read again, and a stub longer
    than the output it replaces adds tokens and breaks the cache for nothing: both used to be
    stubbed ("ENOENT" became a 77-character "read it again")."""
    from dataclasses import replace

    h = History().user()
    h.step(read("src/missing.ts", "ENOENT: no such file"))
    h.step(read("src/a.ts", "ok"))
    h.step(read("src/b.ts", "B" * 900))
    for n in range(3):
        h.step(read(f"src/new{n}.ts", "N" * 900))
    items = [replace(i, is_error=True) if isinstance(i, ToolResultItem) and "ENOENT" in i.output
             else i for i in h.items]
    view = view_of(build("tool-aging-keep-3")(items, ctx()))
    assert outputs(view)[:2] == ["ENOENT: no such file", "ok"]
    assert "src/b.ts" in outputs(view)[2] and "read it again" in outputs(view)[2]
    assert len(view.events) == 1  # only the read that got shorter


def test_append_supersede_appends_notes_and_never_rewrites():
    h = History().user().step(read("a.ts", "v1")).step(read("a.ts", "v1"))
    strategy = build("append-supersede")
    first = view_of(strategy(h.items, ctx()))
    h.step(read("a.ts", "v2")).step(("write_file", {"path": "a.ts", "content": "v3"}, "ok"))
    h.step(read("a.ts", "v3"))
    second = view_of(strategy(h.items, ctx()))
    assert second.items[: len(first.items)] == first.items  # same objects: nothing rewritten
    assert outputs(second) == [
        "v1",
        "[a.ts: unchanged since version 1 above]",
        "[a.ts version 2; supersedes version 1 above]\nv2",
        "ok",
        "[a.ts: unchanged since version 3 above]",
    ]


def test_append_supersede_takes_no_version_from_a_write_that_failed():
    """A write refused (EACCES) wrote nothing: the next read, equal to version 1, is the short
    note, not "version 3; supersedes version 2" with the whole text again."""
    from dataclasses import replace

    h = History().user().step(read("f", "v1 content"))
    h.step(("write_file", {"path": "f", "content": "v2 content"}, "EACCES permission denied"))
    h.step(read("f", "v1 content"))
    items = [replace(i, is_error=True) if isinstance(i, ToolResultItem) and "EACCES" in i.output
             else i for i in h.items]
    view = view_of(build("append-supersede")(items, ctx()))
    assert outputs(view)[-1] == "[f: unchanged since version 1 above]"


def test_append_supersede_keeps_a_read_of_some_lines_as_it_is():
    h = History().user().step(read("a.ts", "v1\nv1b"))
    h.step(("read_file", {"path": "a.ts", "offset": 2, "limit": 1}, "v1b"))
    h.step(read("a.ts", "v1\nv1b"))
    view = view_of(build("append-supersede")(h.items, ctx()))
    # a range is not a version: neither a "version 2" nor what later reads compare with
    assert outputs(view) == ["v1\nv1b", "v1b", "[a.ts: unchanged since version 1 above]"]

def test_claudecode_microcompact_only_after_a_long_gap():
    h = History().user()
    for n in range(8):
        h.step(read(f"f{n}", "x" * 100))
    strategy = build("claudecode-microcompact-time-60m-keep-5")
    warm = view_of(strategy(h.items, ctx(ts=T0, previous_ts=T0 - timedelta(minutes=59))))
    assert LITERAL_CLEARED not in outputs(warm)
    cold = view_of(strategy(h.items, ctx(ts=T0, previous_ts=T0 - timedelta(minutes=61))))
    assert outputs(cold).count(LITERAL_CLEARED) == 3 and cold.events


def test_claudecode_microcompact_clears_the_oldest_and_keeps_the_5_newest():
    h = History().user()
    for n in range(7):
        h.step(read(f"f{n}", f"content {n} " + "x" * 100))
    cold = view_of(build("claudecode-microcompact-time-60m-keep-5")(
        h.items, ctx(ts=T0, previous_ts=T0 - timedelta(minutes=61))
    ))
    assert outputs(cold) == [LITERAL_CLEARED] * 2 + [
        f"content {n} " + "x" * 100 for n in range(2, 7)
    ]


def test_claudecode_microcompact_fires_at_exactly_the_gap():
    """The rule is `>= gap`: exactly 60 minutes since the last response clears."""
    h = History().user()
    for n in range(6):
        h.step(read(f"f{n}", "x" * 100))
    strategy = build("claudecode-microcompact-time-60m-keep-5")
    cold = view_of(strategy(h.items, ctx(ts=T0, previous_ts=T0 - timedelta(minutes=60))))
    assert outputs(cold).count(LITERAL_CLEARED) == 1 and cold.events


def test_claudecode_microcompact_measures_the_gap_from_the_newest_answer():
    """The gap runs from the later of the previous request and its answer: a request sent
    90 minutes ago whose answer was logged 30 minutes ago leaves a warm cache, nothing cleared."""
    from dataclasses import replace

    h = History().user()
    for n in range(6):
        h.step(read(f"f{n}", "x" * 100))
    strategy = build("claudecode-microcompact-time-60m-keep-5")
    at = replace(
        ctx(ts=T0, previous_ts=T0 - timedelta(minutes=90)),
        last_answer_ts=T0 - timedelta(minutes=30),
    )
    view = view_of(strategy(h.items, at))
    assert LITERAL_CLEARED not in outputs(view) and not view.events


def test_claudecode_autocompact_fires_at_window_less_20k_output_less_13k():
    """200,000 − min(32,000 max output, 20,000) − 13,000 = 167,000 (the module's rule):
    compacted from that reported usage on, not one token below."""
    h = History().user()
    for n in range(6):
        h.step(read(f"f{n}", "x" * 100))
    h.user("next")
    strategy = build("claudecode-autocompact-13k")
    fired = {
        usage: len(view_of(strategy(h.items, ctx(usage=usage, model="claude-sonnet-4-5")))
                   .summarizer_calls)
        for usage in (166_999, 167_000)
    }
    assert fired == {166_999: 0, 167_000: 1}


def test_claudecode_microcompact_clears_claude_code_s_list_by_name():
    """Claude Code's own tools: its list decides (TodoWrite is a write by its name, but its
    results are kept; Write's are cleared); another harness's tools go by kind."""
    h = History().user()
    for n, tool in enumerate(["TodoWrite", "Write", "MultiEdit", "read_file", "Read", "Bash"] * 2):
        h.step((tool, {"path": f"f{n}"}, f"out {n} " + "x" * 100))
    cold = view_of(build("claudecode-microcompact-time-60m-keep-1")(
        h.items, ctx(ts=T0, previous_ts=T0 - timedelta(minutes=61))
    ))
    cleared = {i.tool_name for i in cold.items
               if isinstance(i, ToolResultItem) and i.output == LITERAL_CLEARED}
    assert cleared == {"Write", "read_file", "Read", "Bash"}


def test_cline_thresholds_and_duplicate_reads():
    from replay.strategies.cline_truncate import max_allowed

    assert (max_allowed(200_000), max_allowed(128_000), max_allowed(64_000)) == (
        160_000,
        98_000,
        37_000,
    )
    assert max_allowed(1_000_000) == 960_000
    h = History().user()
    for n in range(6):
        h.step(read("same.ts", "S" * 2000), text=f"s{n}")
    view = view_of(build("cline-dedup-file-reads")(h.items, ctx(window=200_000, usage=170_000)))
    assert outputs(view).count(LITERAL_CLINE_DUP_READ) == 5 and outputs(view)[-1] == "S" * 2000
    cut = view_of(build("cline-truncate-keep-first-pair-half")(h.items, ctx(usage=170_000)))
    assert cut.items[0] is h.items[0]
    assert "[NOTE] Some previous conversation history" in cut.items[1].blocks[0].text
    assert len(cut.items) < len(h.items)


def test_an_editor_tool_s_view_is_a_read_and_its_edits_are_writes():
    """Anthropic's text editor and `str_replace_editor` are named like writes; their `command`
    says what a call does: `view` reads (Cline's dedup stubs the older views of a file)."""
    from replay.strategies._common import tool_kind

    editor = "str_replace_based_edit_tool"
    assert [tool_kind(editor, {"command": c, "path": "a.ts"}) for c in
            ("view", "str_replace", "create", "insert", "undo_edit")] == ["read"] + ["write"] * 4
    assert tool_kind(editor) == "write" and tool_kind("bash", {"command": "view"}) == "shell"
    # A name that says nothing: the command still does.
    assert tool_kind("editor") == "other"
    assert [tool_kind("editor", {"command": c}) for c in ("view", "create")] == ["read", "write"]
    h = History().user()
    for n in range(6):
        h.step((editor, {"command": "view", "path": "same.ts"}, "S" * 2000), text=f"s{n}")
    view = view_of(build("cline-dedup-file-reads")(h.items, ctx(window=200_000, usage=170_000)))
    assert outputs(view).count(LITERAL_CLINE_DUP_READ) == 5


@pytest.mark.parametrize("name", ["cline-truncate-keep-first-pair-half", "cline-dedup-file-reads"])
def test_cline_triggers_on_the_previous_request_s_tokens_only(name):
    h = History().user()
    for n in range(12):
        h.step(read(f"f{n}.ts", "x" * 400), text=f"s{n}")
    # A 60,000-char result (~15k estimated tokens) no response has counted yet: Cline reads
    # only the previous request's usage (150k < maxAllowed 160k), so nothing is deleted.
    h.step(("bash", {"command": "cat big.log"}, "y" * 60_000), text="reading the log")
    view = view_of(build(name)(h.items, ctx(window=200_000, usage=150_000)))
    assert view.items == h.items and not view.events
    assert view_of(build(name)(h.items, ctx(window=200_000, usage=160_000))).events


def test_cline_deletes_three_quarters_only_when_half_the_usage_is_over_the_limit():
    """keep = "quarter" if total / 2 > maxAllowed else "half": at 170,000 tokens (200k window,
    maxAllowed 160,000) Cline deletes half of the 23 messages after the first pair, rounded to
    an even count (10: messages 2..11, ending on an assistant message, whose result goes with
    it); only past 320,000 does it delete three quarters (16: messages 2..17, and a result)."""
    h = History().user()
    for n in range(12):
        h.step(read(f"f{n}.ts", "x" * 400), text=f"s{n}")  # 25 API messages, one item each

    def left(usage: int) -> int:
        view = view_of(build("cline-truncate-keep-first-pair-half")(h.items, ctx(usage=usage)))
        assert view.events
        return len(view.items)

    assert (left(170_000), left(320_000), left(320_001)) == (14, 14, 8)


def test_aider_clips_the_summarizer_input_to_the_window_minus_512():
    h = History().user("task").step(text="A" * 150_000)  # one early answer of 37,500 tokens
    for n in range(6):
        h.user(f"question {n}").step(text=f"answer {n}")
    h.step(("bash", {"command": "cat log"}, "z" * 8_000), text="tool")  # keeps the tail small
    h.user("next question")
    view = view_of(build("aider-summarize-auto")(h.items, ctx(window=32_000)))
    first = view.summarizer_calls[0].input_items[0].text
    # Aider keeps the newest head messages within max_input_tokens - 512 (history.py): the
    # 37,500-token answer and what precedes it are left out of the summarizer's input.
    assert math.ceil(len(first) / 4) <= 32_000 - 512
    assert "answer 5" in first and "question 0" in first
    assert "AAAA" not in first and "task" not in first


def test_aider_auto_max_is_capped_at_8192_tokens():
    """max_chat_history_tokens = min(max(window / 16, 1,024), 8,192): on a 200k window (12,500
    / 16) the cap holds, so a 6,000-token done history is left whole and a 10,000-token one is
    summarized."""

    def summarized(answer_chars: int) -> bool:
        h = History().user("task").step(text="a" * answer_chars).user("next question")
        view = view_of(build("aider-summarize-auto")(h.items, ctx(window=200_000)))
        return bool(view.summarizer_calls)

    assert not summarized(24_000) and summarized(40_000)


def _aider_summarizes(done_tokens: int, window: int) -> bool:
    """Whether aider-summarize-auto summarizes a done history of exactly `done_tokens` (the
    task and one answer) before the next question, on `window`."""
    from replay.strategies._common import items_tokens

    c = ctx(window=window)
    pad = 0
    while True:
        done = History().user("task").step(text="a" * pad).items
        if items_tokens(done, c) >= done_tokens:
            break
        pad += 1
    assert items_tokens(done, c) == done_tokens
    h = History().user("task").step(text="a" * pad).user("next question")
    view = view_of(build("aider-summarize-auto")(h.items, c))
    return bool(view.summarizer_calls or view.events)


@pytest.mark.parametrize(
    "window, limit",
    [(32_000, 2_000), (16_000, 1_024), (8_000, 1_024), (200_000, 8_192)],
    ids=["window/16", "floor", "floor-below", "cap"],
)
def test_aider_auto_max_is_window_over_16_within_1024_and_8192(window, limit):
    """max_chat_history_tokens = min(max(window / 16, 1,024), 8,192): a done history of that
    many tokens stays whole, one token more is summarized."""
    assert not _aider_summarizes(limit, window)
    assert _aider_summarizes(limit + 1, window)


@pytest.mark.parametrize("last_tokens, kept", [(999, True), (1_000, False)])
def test_aider_keeps_a_tail_strictly_under_half_the_max(last_tokens, kept):
    """The tail Aider keeps is the largest suffix of *fewer* than max / 2 tokens (1,000 at a
    32k window's max of 2,000): a last answer of 999 tokens stays verbatim with its question,
    one of exactly 1,000 is summarized with the rest."""
    from replay.strategies._common import item_tokens

    c = ctx(window=32_000)
    pad = 0
    while item_tokens(AssistantItem(blocks=(Block("text", text="b" * pad),)), c) < last_tokens:
        pad += 1
    h = History().user("task").step(text="A" * 12_000)
    for n in range(2):
        h.user(f"question {n}").step(text=f"answer {n}")
    h.user("last question").step(text="b" * pad)
    assert item_tokens(h.items[-1], c) == last_tokens
    h.user("next question")
    view = view_of(build("aider-summarize-auto")(h.items, c))
    assert view.summarizer_calls
    assert (h.items[-2] in view.items) is kept


def test_aider_summarizes_everything_when_the_split_falls_at_message_4():
    """A split at or before message 4 (Aider's min_split) summarizes the whole done history:
    the small last exchange after a large answer is not kept as a tail."""
    h = History().user("task").step(text="A" * 6_000)
    h.user("question").step(text="B" * 6_000)
    h.user("short").step(text="ok")  # the tail would start here, at message 4
    h.user("next question")
    view = view_of(build("aider-summarize-auto")(h.items, ctx(window=32_000)))
    assert len(view.summarizer_calls) == 1
    assert h.items[4] not in view.items and view.items[-1] is h.items[-1]


def test_aider_clip_keeps_messages_up_to_exactly_the_window_minus_512():
    """The clip keeps the newest messages while they add up to at most the summarizer's
    window − 512 tokens: a head of exactly that size is sent whole, one token more drops its
    oldest message."""
    from replay.strategies._common import items_tokens
    from replay.strategies.aider_summarize import clip_to_input

    c = ctx(window=4_000, model="claude-opus-4-5")  # no weak model: it summarizes itself
    tail = History().user("question").step(text="answer").items
    for budget, whole in ((3_488, True), (3_489, False)):
        pad = 0
        while items_tokens([UserItem("t" * pad), *tail], c) < budget:
            pad += 1
        items = [UserItem("t" * pad), *tail]
        assert items_tokens(items, c) == budget
        assert clip_to_input(items, c, c.model) == (items if whole else tail)


def test_aider_moves_the_split_back_so_the_head_ends_with_an_answer():
    """The tail under max / 2 starts at the last answer (its question alone passes it); Aider
    moves the split back until the head ends with an assistant message, so the question stays
    with its answer in the tail."""
    h = History().user("task").step(text="A" * 12_000)
    for n in range(2):
        h.user(f"question {n}").step(text=f"answer {n}")
    h.user("long question " + "q" * 3_600).step(text="a" * 2_000)
    h.user("next question")
    view = view_of(build("aider-summarize-auto")(h.items, ctx(window=32_000)))
    assert view.summarizer_calls
    assert view.items[-3:] == h.items[-3:]


def test_aider_done_history_becomes_its_prefixed_summary_and_ok():
    """Aider replaces the summarized messages with a user message "I spoke to you previously
    about a number of things.\\n" + the summary, then an assistant "Ok."."""
    h = History().user("task").step(text="A" * 40_000).user("next question")
    view = view_of(build("aider-summarize-auto")(h.items, ctx(window=32_000)))
    summary, ok, last = view.items
    assert summary.role == "user" and summary.text.startswith(
        "I spoke to you previously about a number of things.\n"
    )
    assert summary.text.endswith(view.summarizer_calls[0].summary)
    assert isinstance(ok, AssistantItem) and [b.text for b in ok.blocks] == ["Ok."]
    assert last is h.items[-1]


def test_aider_summarizes_only_when_a_new_prompt_arrives():
    """Aider summarizes after an exchange, before the next prompt: a request inside the tool
    loop of a prompt leaves the done history as it is, however big."""
    h = History().user("task").step(text="A" * 40_000).user("next question")
    h.step(read("f.py", "x"))
    view = view_of(build("aider-summarize-auto")(h.items, ctx(window=32_000)))
    assert view.items == h.items and not view.summarizer_calls


@pytest.mark.parametrize(
    "model, weak",
    [
        ("claude-sonnet-4-5-20250929", "claude-haiku-4-5"),
        ("claude-3-7-sonnet-20250219", "claude-3-5-haiku-20241022"),
        ("openai/gpt-5", "gpt-5-nano"),  # matched without its provider prefix
        ("o3", "gpt-4.1-mini"),
        ("claude-opus-4-5", None),  # Aider lists no weak model: the main model summarizes
        ("gpt-5-nano", None),  # its own weak model
    ],
)
def test_aider_sends_its_summaries_to_aiders_weak_model(model, weak):
    h = History().user("task").step(text="A" * 40_000)
    h.user("next question")
    view = view_of(build("aider-summarize-auto")(h.items, ctx(window=32_000, model=model)))
    assert [c.model for c in view.summarizer_calls] == [weak]


def test_aider_clips_the_summarizer_input_to_the_weak_model_s_smaller_window():
    """o1's weak model is gpt-4o-mini (a 128,000-token window; o1's is 200,000): a 140,000-token
    early answer is left out of what it is sent. o3's, gpt-4.1-mini, takes more than the window
    strategies are given: that window bounds it, and the answer fits."""
    h = History().user("task").step(text="A" * 560_000)
    for n in range(6):
        h.user(f"question {n}").step(text=f"answer {n} " + "b" * 4000)
    h.user("next question")

    def sent(model: str) -> str:
        view = view_of(build("aider-summarize-auto")(h.items, ctx(window=200_000, model=model)))
        return view.summarizer_calls[0].input_items[0].text

    assert "question 0" in sent("o1") and "AAAA" not in sent("o1")
    assert "question 0" in sent("o3") and "AAAA" in sent("o3")


def _sent(view: View) -> str:
    """Everything the view's summarizer calls were sent (before their instructions)."""
    from replay.strategies._common import item_text

    return "\n".join(item_text(i) for c in view.summarizer_calls for i in c.input_items)


@pytest.mark.parametrize(
    "name, overrides, window, usage",
    [
        ("goose-compact-80pct", {}, 40_000, 35_000),
        ("goose-tool-pair-summarize", {"cutoff": "1", "batch": "1"}, 200_000, None),
        ("aider-summarize-auto", {}, 32_000, None),
        ("gemini-compress-50pct-keep-30pct", {}, 200_000, 150_000),
    ],
)
def test_summarizers_that_get_tool_results_whole(name, overrides, window, usage):
    h = History().user("task")
    h.step(read("a.py", "r" * 40_000), text="read a")
    h.step(("bash", {"command": "make"}, "m" * 20_000), text="build")
    for n in range(3):
        h.user(f"question {n}").step(text=f"answer {n}")
    h.step(("bash", {"command": "ls"}, "l" * 4_000), text="list")
    h.user("next")
    view = view_of(build(name, **overrides)(h.items, ctx(window=window, usage=usage)))
    # Only opencode's and pi's serializers cut a tool result to 2,000 characters; Goose, Aider
    # and Gemini CLI send the summarizer each result whole.
    assert view.summarizer_calls
    assert "r" * 40_000 in _sent(view) and "more characters truncated" not in _sent(view)


def test_opencode_v1_overflow_leaves_cache_writes_out():
    """opencode 1.x `isOverflow` adds input + cache.read + output (spec l.94): a cold-cache turn
    that wrote its whole prompt to the cache is not an overflow."""
    h = History().user("fix it").step(read("a.py", "x" * 400), text="reading").user("next")
    written = Usage(input_tokens=1_000, cache_write_5m_tokens=170_000, output_tokens=500)
    read_back = Usage(input_tokens=1_000, cache_read_tokens=170_000, output_tokens=500)
    for usage, compacts in ((written, False), (read_back, True)):
        context = ctx()  # usable: 200,000 - 32,000 = 168,000
        context.previous_usage = usage
        view = view_of(build("opencode-compact-v1")(h.items, context))
        assert bool(view.summarizer_calls) is compacts


def test_opencode_v1_caps_the_output_reserve_at_32k():
    """usable = window − min(max output, 32,000): a model with a 64,000-token output limit
    still reserves only 32,000 of a 200k window, so 168,000 tokens do not overflow and
    168,001 do."""
    h = History().user("fix it").step(read("a.py", "x" * 400), text="reading").user("next")
    for usage, compacts in ((150_000, False), (168_000, False), (168_001, True)):
        view = view_of(build("opencode-compact-v1", output_max="64000")(h.items, ctx(usage=usage)))
        assert bool(view.summarizer_calls) is compacts, usage


def test_roo_truncate_keeps_the_first_message_and_drops_an_even_count():
    h = History().user()
    for n in range(8):
        h.step(read(f"f{n}", "x"), text=f"s{n}")
    view = view_of(build("roo-truncate-keep-first-half")(h.items, ctx(window=10_000, usage=9_000)))
    assert view.items[0] is h.items[0] and view.events
    assert isinstance(view.items[1], AssistantItem)  # API messages 1..k (k even) deleted


def test_roo_truncate_fires_above_90pct_less_max_tokens_and_deletes_an_even_count():
    """prev = usage + tokens of the new message; truncated only when prev > 0.9·window −
    8,192 (100,000 → 81,808). Then k = floor((15 − 1) · 0.5) = 7 API messages, made even
    (6): messages 1..6 go, message 0 and the rest stay."""
    h = History().user()
    for n in range(7):
        h.step(read(f"f{n}", "x"), text=f"s{n}")  # 15 API messages; the new one: 1 token

    def run(usage: int) -> View:
        return view_of(build("roo-truncate-keep-first-half")(h.items, ctx(100_000, usage)))

    assert run(81_807).items == h.items and not run(81_807).events  # prev = 81,808: not over
    truncated = run(81_808)
    assert truncated.items == [h.items[0], *h.items[7:]] and truncated.events


def test_opencode_tail_caps_only_the_default_reserve():
    """reserved = cfg.reserved or min(20000, maxOut) (spec l.99): a set value is not capped at
    the output limit; the default is."""
    h = History().user("task")
    for n in range(12):
        h.step(read(f"f{n}.py", "x" * 12_000), text=f"s{n}")  # more than the 15k-token tail

    def compacts(usage: int, **params: str) -> bool:
        strategy = build("opencode-compact-tail-prepend", **params)
        return bool(view_of(strategy(h.items, ctx(usage=usage))).events)

    # usable = 200,000 - 32,000 - 40,000 = 128,000 (not 200,000 - 32,000 - 32,000)
    assert compacts(130_000, reserved="40000")
    # default with an 8,000 output limit: reserved = 8,000, usable = 184,000
    assert not compacts(183_000, output_max="8000") and compacts(184_000, output_max="8000")


def test_opencode_tail_budget_is_a_quarter_of_the_usable_context():
    """B = clamp(25 % of usable, 2,000, 15,000): on a 64k window usable = 64,000 − 32,000 −
    20,000 = 12,000, so B = 3,000 tokens: four ~705-token turns are kept whole (a fifth, or
    its answer alone, would pass B)."""
    h = History()
    for n in range(8):
        h.user(f"question {n}").step(text=f"answer {n} " + "a" * 2800)
    view = view_of(build("opencode-compact-tail-prepend")(h.items, ctx(window=64_000,
                                                                        usage=12_000)))
    assert view.events
    kept = view.items[2:-1]  # [marker, summary] + tail + "Continue…"
    assert kept == h.items[-8:]


@pytest.mark.parametrize("name", ["roo-truncate-keep-first-half", "roo-condense-keep-first-last-3"])
def test_roo_counts_the_new_message_instead_of_estimating_it(name):
    """Roo's prev = totalTokens + tok(last message), a token count (spec l.181): with a
    tokenizer denser than chars/4, the 40k-char result pushes prev over the limit."""
    h = History().user("task")
    for n in range(6):
        h.step(read(f"f{n}.py", "q" * 400), text=f"s{n}")
    h.step(read("big.py", "b" * 40_000), text="big read")
    context = ctx(usage=160_000)  # allowed: 180,000 - 8,192 = 171,808
    context.count_tokens = lambda s: math.ceil(len(s) / 3)  # 13,334 counted vs 10,000 estimated
    assert view_of(build(name)(h.items, context)).events


def test_roo_condense_fires_at_exactly_its_threshold():
    """Roo condenses when 100 · prev / window ≥ the threshold: at 50 % of a 100k window (far
    under the truncation limit, 81,808) 50,000 tokens condense, 49,999 do not."""
    h = History().user()
    for n in range(12):
        h.step(read(f"f{n}", "x" * 300), text=f"s{n}")
    h.step(text="done")  # no message since the last response: prev = its usage

    def condensed(usage: int) -> bool:
        strategy = build("roo-condense-keep-first-last-3-at-50pct")
        return bool(view_of(strategy(h.items, ctx(window=100_000, usage=usage))).events)

    assert (condensed(49_999), condensed(50_000)) == (False, True)


def test_roo_condense_has_nothing_to_fold_with_keep_plus_one_messages():
    """Roo refuses to condense `keep` + 1 API messages: messages.slice(0, −3) is the first
    message alone, which it keeps. Here that message holds a tool result too (an orphan a
    lenient read keeps): it is not summarized away."""
    h = History().user()
    h.items.append(ToolResultItem("lost", "read_file", "z" * 400, event_index=1,
                                  arguments={"path": "lost.py"}))
    h.step(read("a.py", "x" * 400), text="read a").step(text="done")  # 4 API messages
    view = view_of(build("roo-condense-keep-first-last-3")(h.items, ctx(window=10_000,
                                                                        usage=9_900)))
    assert view.items == h.items and not view.events


def test_roo_condense_falls_back_to_truncation_when_there_is_nothing_to_fold():
    """With keep = 5, six API messages leave nothing between the first and the last five:
    condensing fails, and over the truncation limit (10,000 · 0.9 − 8,192 = 808) Roo deletes
    the oldest half of the rest instead, an even count: floor(5 · 0.5) = 2 → 2, messages 1-2
    (a call and its result). Under the limit (the 5 % threshold alone) nothing changes."""
    h = History().user()
    h.step(read("a.py", "x" * 400), text="read a").step(read("b.py", "y" * 400), text="read b")
    h.step(text="done")  # [user], [a + call], [result], [b + call], [result], [done]

    def run(usage: int) -> View:
        strategy = build("roo-condense-keep-first-last-5-at-5pct")
        return view_of(strategy(h.items, ctx(window=10_000, usage=usage)))

    under = run(700)  # 700 ≥ 5 % of 10,000, ≤ 808
    assert under.items == h.items and not under.events
    over = run(900)
    assert over.items == [h.items[0], *h.items[3:]] and not over.summarizer_calls
    assert [e.kind for e in over.events] == ["drop"]


def test_roo_condense_summarizes_the_messages_since_its_last_summary_in_a_fresh_request():
    """A second condensation sends the summarizer the messages from the previous summary on
    (not the first message before it, nor the last 3 kept), in a fresh request of its own."""
    h = _text_exchange("task " + "t" * 400, *[f"m{n} " + "x" * 400 for n in range(1, 9)])
    strategy = build("roo-condense-keep-first-last-3-at-5pct")
    first = view_of(strategy(h.items, ctx(window=10_000, usage=1_000)))
    assert first.summarizer_calls and isinstance(first.items[1], SummaryItem)
    more = _text_exchange(*["x"] * 9, *[f"n{n} " + "y" * 400 for n in range(4)])
    grown = [*h.items, *more.items[9:]]
    second = view_of(strategy(grown, ctx(window=10_000, usage=1_000)))
    [call] = second.summarizer_calls
    assert not call.reuse_main_prefix
    assert call.input_items[0] == first.items[1]
    assert h.items[0] not in call.input_items
    assert all(i not in call.input_items for i in grown[-3:])


def test_roo_condense_keeps_the_whole_first_message():
    """The first message is kept whole before the summary, context the harness put with the
    task included; what follows it up to the last 3 messages is folded."""
    h = History()
    h.items.append(UserItem("<environment_details>" + "e" * 400, injected=True, event_index=0))
    h.user("task")
    for n in range(6):
        h.step(text=f"a{n} " + "x" * 400).user(f"u{n}")
    view = view_of(build("roo-condense-keep-first-last-3-at-5pct")(
        h.items, ctx(window=10_000, usage=1_000)))
    assert view.items[:2] == h.items[:2] and isinstance(view.items[2], SummaryItem)
    assert view.items[3:] == h.items[-3:]


def test_roo_condense_fallback_deletes_the_oldest_half_of_the_messages_after_the_first():
    """Six text messages with keep 5: nothing to fold; over the truncation limit the
    fallback deletes floor(5 · 0.5) = 2, made even: messages 1 and 2."""
    h = _text_exchange("task", "a1", "u2", "a3", "u4", "a5")
    view = view_of(build("roo-condense-keep-first-last-5-at-5pct")(
        h.items, ctx(window=10_000, usage=900)))
    assert view.items == [h.items[0], *h.items[3:]]


@pytest.mark.parametrize(
    "name, head",
    [
        ("roo-condense-keep-first-last-3", 1),  # [first message, summary] + last 3 messages
        ("opencode-compact-v1", 0),  # the history restarts at the summary
    ],
)
def test_roo_and_opencode_send_the_summary_as_the_assistant_s(name, head):
    h = History().user()
    for n in range(12):
        h.step(read(f"f{n}", "x" * 3000), text=f"s{n}")
    result = build(name)(h.items, ctx(window=10_000, usage=9_900))
    view = view_of(result)
    assert view.events and view.events[0].kind == "compaction"
    assert view.items[:head] == h.items[:head]
    summary = view.items[head]
    assert isinstance(summary, SummaryItem) and summary.role == "assistant"
    # Every other summary stays the user's (Claude Code, Codex, pi, Goose, Aider, Gemini…).
    assert summary_item("s", ()).role == "user"


def test_roo_condense_summarizes_what_it_folds_not_the_messages_it_keeps():
    """Roo summarizes getMessagesSinceLastSummary(messages.slice(0, -N_MESSAGES_TO_KEEP)): the
    last `keep` API messages stay as they are and are not sent to the summarizer. The first of
    them holds a tool result: its tool_use block is re-attached after the summary, without the
    text of the message that made it (which is summarized: it was kept whole, and not sent)."""
    h = History().user()
    for n in range(12):
        h.step(read(f"f{n}", "x" * 3000), text=f"s{n}")
    view = view_of(build("roo-condense-keep-first-last-3")(h.items, ctx(window=10_000,
                                                                         usage=9_900)))
    calling = h.items[-4]  # [..., Assistant s10 + call, Result, Assistant s11 + call, Result]
    assert view.items[0] == h.items[0] and isinstance(view.items[1], SummaryItem)
    assert view.items[2].blocks == calling.tool_calls and view.items[3:] == h.items[-3:]
    assert view.summarizer_calls[0].input_items == tuple(h.items[:-3])


def test_anthropic_compaction_block_is_the_assistant_s():
    h = History().user("task")
    for n in range(4):
        h.step(("bash", {"command": f"c{n}"}, "o" * 4_000), text=f"s{n}")
    view = view_of(build("anthropic-compact-3000")(h.items, ctx()))
    # The server returns the block in its response; the client appends response.content.
    assert view.events and isinstance(view.items[0], SummaryItem)
    assert view.items[0].role == "assistant"


@pytest.mark.parametrize("family", ["anthropic-compact", "openai-responses-compact"])
def test_server_compaction_is_a_server_summary_that_reads_the_main_cache(family):
    """The provider writes the compaction (a server summary, not the extractive stand-in of a
    harness) in a pass over the request itself, which reads the main thread's cached prefix."""
    from replay.strategies._common import request_tokens

    h = History().user("task")
    for n in range(4):
        h.step(("bash", {"command": f"c{n}"}, "o" * 4_000), text=f"s{n}")
    size = request_tokens(h.items, ctx())
    view = view_of(build(f"{family}-{size - 1}")(h.items, ctx()))
    assert view.items[0].source == "server"
    [call] = view.summarizer_calls
    assert call.reuse_main_prefix


def test_openai_responses_compaction_runs_at_exactly_the_threshold():
    """OpenAI compacts when the rendered tokens reach compact_threshold (>=); Anthropic only
    past its trigger."""
    from replay.strategies._common import request_tokens

    h = History().user("task")
    for n in range(4):
        h.step(("bash", {"command": f"c{n}"}, "o" * 4_000), text=f"s{n}")
    size = request_tokens(h.items, ctx())
    assert view_of(build(f"openai-responses-compact-{size}")(h.items, ctx())).events
    assert not view_of(build(f"openai-responses-compact-{size + 1}")(h.items, ctx())).events
    assert not view_of(build(f"anthropic-compact-{size}")(h.items, ctx())).events


def test_openai_responses_compaction_threshold_in_thousands_is_tokens():
    """`openai-responses-compact-Nk` (and `threshold=Nk`) compacts at N,000 tokens: the name's
    `k` is read as the parameter is parsed, before the strategy sees it."""
    from replay.strategies._common import request_tokens

    h = History().user("task")
    for n in range(4):
        h.step(("bash", {"command": f"c{n}"}, "o" * 4_000), text=f"s{n}")
    k = request_tokens(h.items, ctx()) // 1000
    for at, compacts in ((k, True), (k + 1, False)):
        for name in (f"openai-responses-compact-{at}k",
                     f"openai-responses-compact-90pct[threshold={at}k]"):
            assert parse_name(name).params == {"threshold": at * 1000}
            assert bool(view_of(build(name)(h.items, ctx())).events) == compacts, name


def test_openai_responses_compaction_threshold_in_percent_is_of_the_window():
    """`90pct` is 90 % of the window: a request of exactly 90 % of it compacts; on a window
    10 tokens larger (90 % of it is 9 tokens more than the request), it does not."""
    from replay.strategies._common import request_tokens

    pad = 0
    while True:
        h = History().user("task" + "t" * pad)
        for n in range(4):
            h.step(("bash", {"command": f"c{n}"}, "o" * 4_000), text=f"s{n}")
        size = request_tokens(h.items, ctx())
        if size % 9 == 0:
            break
        pad += 4
    strategy = "openai-responses-compact-90pct"
    assert view_of(build(strategy)(h.items, ctx(window=size * 10 // 9))).events
    assert not view_of(build(strategy)(h.items, ctx(window=size * 10 // 9 + 10))).events


@pytest.mark.parametrize("mode", ["prepend", "suffix"])
def test_opencode_tail_sends_the_compaction_marker_before_the_summary(mode):
    """M' = [user(compaction marker), assistant(S)] + tail + [user("Continue…")] (spec l.105),
    also after a second compaction (the previous [marker, summary] is folded into the new S)."""
    h = History().user()
    for n in range(12):
        h.step(read(f"f{n}", "x" * 3000), text=f"s{n}")
    strategy = build(f"opencode-compact-tail-{mode}")
    for again in (False, True):
        view = view_of(strategy(h.items, ctx(window=10_000, usage=9_900)))
        assert view.events and view.events[0].kind == "compaction"
        marker, summary = view.items[:2]
        assert isinstance(marker, UserItem) and marker.text == LITERAL_OPENCODE_COMPACTION_MARKER
        assert isinstance(summary, SummaryItem) and summary.role == "assistant"
        assert [i for i in view.items if isinstance(i, SummaryItem)] == [summary]
        if mode == "prepend":  # the previous summary is passed as such
            assert ("<prior-summary>" in view.summarizer_calls[0].instruction) is again
        for n in range(12, 18):
            h.step(read(f"f{n}", "x" * 3000), text=f"s{n}")


def test_observation_masking_and_swe_polling():
    h = History().user()
    for n in range(10):
        h.step(read(f"f{n}", f"out {n}\nline"))
    view = view_of(build("observation-mask-keep-6")(h.items, ctx()))
    masked = [
        i for i in view.items if isinstance(i, UserItem) and i.text == LITERAL_OPENHANDS_MASKED
    ]
    calls = [b for i in view.items if isinstance(i, AssistantItem) for b in i.tool_calls]
    results = [i for i in view.items if isinstance(i, ToolResultItem)]
    assert len(masked) == 7 and len(calls) == len(results) == 3

    def elided(polling: int, steps: int) -> int:
        g = History().user()
        for n in range(steps):
            g.step(read(f"f{n}", "a\nb\nc"))
        out = outputs(view_of(build(f"observation-mask-keep-5-poll-{polling}")(g.items, ctx())))
        elided = [o for o in out if o.startswith("Old environment output")]
        assert set(elided) <= {"Old environment output: (3 lines omitted)"}
        return len(elided)

    # obs = task + results; last = floor(len/P)*P - 5; obs[1:last] elided
    assert [elided(1, s) for s in (8, 9, 10)] == [3, 4, 5]
    assert [elided(3, s) for s in (8, 9, 10)] == [3, 3, 3]  # advances only every 3 steps


def test_gemini_mask_protects_the_newest_outputs():
    h = History().user()
    for n in range(5):
        h.step(("bash", {"command": str(n)}, f"{n}" * 4000))
    h.step(("bash", {"command": "now"}, "N" * 4000))
    view = view_of(
        build("gemini-mask-tool-out-50k-30k", protect="2000", minimum="1500")(h.items, ctx())
    )
    outs = outputs(view)
    assert outs[-1] == "N" * 4000  # current step never masked
    assert [o.startswith("<tool_output_masked>") for o in outs] == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]
    assert "Output too large. Full output available at:" in outs[0]


@pytest.mark.parametrize("minimum, masked", [("3000", True), ("3001", False)])
def test_gemini_mask_needs_at_least_the_minimum_and_never_masks_a_skill(minimum, masked):
    """Past the protected 2,000 tokens, three 1,000-token outputs are prunable: they are masked
    when they reach `minimum` (>=), not below it. A skill's output is exempt either way."""
    h = History().user().step(("skill", {"name": "s"}, "S" * 4000))
    for n in range(5):
        h.step(("bash", {"command": str(n)}, f"{n}" * 4000))
    h.step(("bash", {"command": "now"}, "N" * 4000))
    strategy = build("gemini-mask-tool-out-50k-30k", protect="2000", minimum=minimum)
    outs = outputs(view_of(strategy(h.items, ctx())))
    assert [o.startswith("<tool_output_masked>") for o in outs] == [
        False, masked, masked, masked, False, False, False
    ]
    assert outs[0] == "S" * 4000


def test_openhands_browser_mask_hides_all_but_the_newest_browser_pages():
    """Browser observations except the newest N show only "Visited URL {url}\\nContent omitted";
    other tools' results (a web fetch included) are left alone."""
    h = History().user()
    h.step(("browser", {"url": "https://a.example"}, "page a " * 50))
    h.step(("web_fetch", {"url": "https://w.example"}, "fetched " * 50))
    h.step(("browser", {"url": "https://b.example"}, "page b " * 50))
    h.step(("browser", {"url": "https://c.example"}, "page c " * 50))
    view = view_of(build("openhands-browser-mask-1")(h.items, ctx()))
    assert outputs(view) == [
        "Visited URL https://a.example\nContent omitted",
        "fetched " * 50,
        "Visited URL https://b.example\nContent omitted",
        "page c " * 50,
    ]
    assert view.events
    two = view_of(build("openhands-browser-mask-2")(h.items, ctx()))
    assert outputs(two)[1:] == ["fetched " * 50, "page b " * 50, "page c " * 50]


def test_gemini_compress_budgets_the_whole_history_then_splits_it():
    def dump(lines: int) -> str:
        return "\n".join(f"line {n} " + "x" * 90 for n in range(lines))  # ~100 chars a line

    h = History().user("task")
    for n in range(6):  # ~50k tokens each: all beyond the newest 50k tokens of tool output
        h.step(("bash", {"command": f"dump{n}"}, dump(2000)), text=f"d{n}")
    for n in range(12):  # 12 small turns (~1k tokens of output each)
        h.user(f"request {n}").step(("bash", {"command": f"t{n}"}, dump(40)), text=f"t{n}")
    h.user("now")
    view = view_of(build("gemini-compress-50pct-keep-30pct")(h.items, ctx(1_000_000, 600_000)))
    # The dumps shrink to previews first, so 70 % of the characters falls among the small
    # turns: the split is at "request 7" (on the untouched history it was at "request 0").
    assert isinstance(view.items[0], SummaryItem) and view.items[2:] == h.items[34:]
    compress, verify = view.summarizer_calls
    head = compress.input_items
    assert len(head) == 34 and head[0] is h.items[0] and head[-1] is h.items[33]
    dumps = [i.output for i in head if isinstance(i, ToolResultItem) and i.tool_name == "bash"]
    assert all(len(o) < 5_000 for o in dumps[:6])  # sent as the previews, not as a transcript
    # The verification re-sends the snapshot as the model's answer.
    *again, prompt, answer = verify.input_items
    assert tuple(again) == head and isinstance(prompt, UserItem)
    assert isinstance(answer, AssistantItem) and answer.blocks[0].text == view.items[0].text


def _two_tasks() -> History:
    h = History().user("task one " + "a" * 400).step(read("a.py", "x" * 800), text="done a")
    return h.user("task two " + "b" * 200).step(read("b.py", "y" * 200), text="done b")


def test_gemini_compress_fires_at_half_the_limit_exactly():
    """lastPromptTokens < 0.5 · limit is a no-op: 500 < 500.5 on a 1,001-token window (the
    limit rounded down to 500 compressed), 501 is not."""
    compress = build("gemini-compress-50pct-keep-30pct")
    assert not view_of(compress(_two_tasks().items, ctx(window=1001, usage=500))).events
    assert view_of(compress(_two_tasks().items, ctx(window=1001, usage=501))).events
    # At the threshold itself it compresses: 500 of a 1,000-token window is not below half.
    for usage, fires in ((499, False), (500, True)):
        fresh = build("gemini-compress-50pct-keep-30pct")
        assert bool(view_of(fresh(_two_tasks().items, ctx(1000, usage))).events) is fires, usage


def test_gemini_compress_keeps_a_snapshot_as_large_as_what_it_replaces():
    """Gemini CLI refuses a compression whose token count grew; one that did not shrink is kept
    (a snapshot of exactly the replaced size was refused, and compression stopped for good)."""
    from types import SimpleNamespace

    from replay.strategies._common import items_tokens
    from replay.strategies._prompts import LITERAL_GEMINI_ACK
    from replay.strategies.gemini_compress import budget_tail, split_point

    h = _two_tasks()
    base = ctx(window=1000, usage=600)
    tail = h.items[split_point(budget_tail(h.items, base, 50_000, 30), 0.3):]
    before = items_tokens(h.items, base)

    def tokens_with(chars: int) -> int:
        snapshot = SummaryItem(f"<state_snapshot>\n{'s' * chars}\n</state_snapshot>")
        ack = AssistantItem(blocks=(Block("text", text=LITERAL_GEMINI_ACK),))
        return items_tokens([snapshot, ack, *tail], base)

    same = next(n for n in range(4_000) if tokens_with(n) == before)
    for chars, compressed in ((same, True), (same + 4, False)):
        logged = [SimpleNamespace(summary="s" * chars)]  # the log's summary, reused as is
        view = view_of(build("gemini-compress-50pct-keep-30pct")(
            h.items, ctx(window=1000, usage=600, logged=logged)))
        assert isinstance(view.items[0], SummaryItem) is compressed, chars


def test_gemini_compress_splits_on_json_characters():
    """Gemini CLI weighs each message by its JSON (chatCompressionService.ts): a quote or a
    newline counts two characters, so an escape-heavy output weighs twice its text."""
    from replay.strategies.gemini_compress import json_chars, split_point

    h = History().user("task").step(("bash", {"command": "dump"}, '"\n' * 3000))
    for n in range(4):
        h.user(f"request {n}").step(("bash", {"command": f"t{n}"}, "x" * 3000))
    users = [n for n, i in enumerate(h.items) if isinstance(i, UserItem)][1:]
    # By text alone (18k characters, the dump 6k) the split was at the fourth request; as JSON
    # the dump weighs 12k of 25k characters, and the split is at the third.
    assert split_point(h.items, 0.3) == users[2]
    dump = next(i for i in h.items if isinstance(i, ToolResultItem) and i.output.startswith('"'))
    assert json_chars(dump) > 2 * len(dump.output)
    assert json_chars(UserItem("\U0001f600")) == len('{"role":"user","parts":[{"text":""}]}') + 2


def test_goose_sends_each_pair_s_call_and_result_to_its_summarizer():
    h = History().user()
    for n in range(4):  # two parallel calls per message
        h.step(read(f"f{n}.py", f"out {n}"), ("grep", {"pattern": f"p{n}"}, f"hit {n}"), text="t")
    view = view_of(build("goose-tool-pair-summarize", cutoff="2", batch="2")(h.items, ctx()))
    first, second = (_sent(View(items=[], summarizer_calls=[c])) for c in view.summarizer_calls)
    # The pair (Goose summarizes a tool call with its response), without the message's other
    # call or its text.
    assert first == 'Tool call: read_file({"path": "f0.py"})\n\nTool result: out 0'
    assert second == 'Tool call: grep({"pattern": "p0"})\n\nTool result: hit 0'


def test_goose_pairs_and_openclaw_warm_cache():
    h = History().user()
    for n in range(8):
        h.step(read(f"f{n}", "x" * 50))
    view = view_of(build("goose-tool-pair-summarize", cutoff="4", batch="2")(h.items, ctx()))
    notes = [i.text for i in view.items if isinstance(i, UserItem) and i.injected]
    assert len(notes) == 2 and all(t.startswith("[Historical tool call summary]") for t in notes)
    assert len(view.summarizer_calls) == 2

    big = History().user()
    for n in range(10):
        big.step(read(f"f{n}", "y" * 20_000))
    claude = "claude-sonnet-4-5"
    warm = build("openclaw-prune-cache-ttl-5m")(
        big.items, ctx(window=20_000, previous_ts=T0 - timedelta(minutes=1), model=claude)
    )
    assert not view_of(warm).events
    cold = view_of(
        build("openclaw-prune-cache-ttl-5m")(
            big.items, ctx(window=20_000, previous_ts=T0 - timedelta(minutes=6), model=claude)
        )
    )
    assert cold.events and any(
        o == LITERAL_CLEARED or "[Tool result trimmed" in o for o in outputs(cold)
    )
    for other in ("gpt-5", "gemini-2.5-pro"):  # the mode is for Anthropic's cache only
        idle = ctx(window=20_000, previous_ts=T0 - timedelta(minutes=6), model=other)
        assert not view_of(build("openclaw-prune-cache-ttl-5m")(big.items, idle)).events

    def touched(keep: int) -> int:
        cold = view_of(build("openclaw-prune-cache-ttl-5m", keep_assistants=str(keep))(
            big.items, ctx(window=20_000, previous_ts=T0 - timedelta(minutes=6), model=claude)
        ))
        return sum(o == LITERAL_CLEARED or "[Tool result trimmed" in o for o in outputs(cold))

    # keep_assistants=0 protects none (it protected everything: `assistants[-0]`)
    assert touched(0) >= touched(1) >= touched(3) > 0


def _goose_summarized(steps: int, window: int) -> int:
    """Summarizer calls of `goose-tool-pair-summarize` on `steps` one-read steps under
    `window`."""
    h = History().user()
    for n in range(steps):
        h.step(read(f"f{n}", "x"))
    strategy = build("goose-tool-pair-summarize")
    return len(view_of(strategy(h.items, ctx(window=window))).summarizer_calls)


def test_goose_auto_cutoff_and_batch_follow_the_window():
    """Auto cutoff = clamp(window x 0.8 / 10,000, 10, 500) visible calls (200k: 16; 1M: 80) and
    auto batch = max(cutoff / 5, 3) (3; 16): nothing is summarized up to the cutoff, then the
    oldest min(excess, batch) pairs. The last step's call is the current turn's: not counted."""

    assert _goose_summarized(17, 200_000) == 0  # 16 visible calls: at the cutoff
    assert _goose_summarized(18, 200_000) == 1  # 17: one over
    assert _goose_summarized(40, 200_000) == 3  # 39: 23 over, a batch of 3
    assert _goose_summarized(121, 1_000_000) == 16  # 120: 40 over, a batch of 16


def _big_reads(steps: int) -> History:
    h = History().user()
    for n in range(steps):
        h.step(read(f"f{n}", "y" * 20_000))
    return h


def test_openclaw_cache_is_cold_at_exactly_the_ttl():
    """OpenClaw skips pruning only while the last call is *less* than `ttl` ago (`now −
    last_anthropic_call < ttl: no-op`): at exactly 5 minutes the cache counts as cold."""
    h = _big_reads(10)

    def pruned(idle: timedelta) -> bool:
        context = ctx(window=20_000, previous_ts=T0 - idle, model="claude-sonnet-4-5")
        return bool(view_of(build("openclaw-prune-cache-ttl-5m")(h.items, context)).events)

    assert not pruned(timedelta(minutes=5) - timedelta(seconds=1))
    assert pruned(timedelta(minutes=5))


def test_openclaw_prunes_before_the_oldest_of_exactly_keep_assistants_messages():
    """The cutoff is the `keep_assistants`-th newest assistant message: with exactly three, the
    results between the first user message and the oldest of them are prunable — here an
    orphan result (one a lenient read keeps), soft-trimmed; the three answered ones are not."""
    h = History().user()
    h.items.append(ToolResultItem("lost", "read_file", "z" * 20_000, event_index=1,
                                  arguments={"path": "lost.py"}))
    for n in range(3):
        h.step(read(f"f{n}", "y" * 20_000))
    context = ctx(window=20_000, previous_ts=T0 - timedelta(minutes=6), model="claude-sonnet-4-5")
    view = view_of(build("openclaw-prune-cache-ttl-5m")(h.items, context))
    assert view.events
    trimmed, *answered = outputs(view)
    assert "[Tool result trimmed" in trimmed and answered == ["y" * 20_000] * 3


def _cold(minutes: int = 6) -> StrategyContext:
    return ctx(window=20_000, previous_ts=T0 - timedelta(minutes=minutes),
               model="claude-sonnet-4-5")


def test_openclaw_soft_trim_with_no_tail_keeps_the_head_only():
    """`tail=0` kept the whole output after the head (`out[-0:]` is all of it): the "trim"
    grew the result it was to shorten."""
    h = History().user()
    h.step(read("f0", "a" * 10_000 + "b" * 10_000))
    for n in range(1, 4):
        h.step(read(f"f{n}", "y" * 20_000))
    view = view_of(build("openclaw-prune-cache-ttl-5m", tail="0")(h.items, _cold()))
    assert outputs(view)[0] == "a" * 1500 + "\n...\n" + (
        "\n\n[Tool result trimmed: kept first 1500 chars and last 0 chars of 20000 chars.]"
    )


def test_openclaw_trims_a_result_once():
    """With `soft_chars` under the size of a trim (~3,080 characters), every cold request
    trimmed the trim again: a rewrite of the same result each time, its note counting the
    trim's characters instead of the output's."""
    h = History().user()
    h.step(read("f0", "a" * 10_000 + "b" * 10_000))
    for n in range(1, 4):
        h.step(read(f"f{n}", "y" * 20_000))
    strategy = build("openclaw-prune-cache-ttl-5m", soft_chars="1000")
    first = view_of(strategy(list(h.items), _cold()))
    h.step(read("f4", "y" * 20_000))
    second = view_of(strategy(list(h.items), _cold()))
    trim = "a" * 1500 + "\n...\n" + "b" * 1500 + (
        "\n\n[Tool result trimmed: kept first 1500 chars and last 1500 chars of 20000 chars.]"
    )
    assert outputs(first)[0] == outputs(second)[0] == trim
    assert outputs(second)[1].startswith("y" * 1500 + "\n...\n")  # the newly prunable one


def _openclaw_session(sizes: list[int], kept: int = 3) -> History:
    """A task, one read per size (prunable), then `kept` small reads (the last three
    assistant messages, protected)."""
    h = History().user("task")
    for n, size in enumerate(sizes):
        h.step(read(f"p{n}", "p" * size))
    for n in range(kept):
        h.step(read(f"k{n}", "k"))
    return h


@pytest.mark.parametrize("size, trimmed", [(4_000, False), (4_001, True)])
def test_openclaw_soft_trims_only_results_over_4000_chars(size, trimmed):
    """Between 30 % and 50 % of the window's characters (window 3,000 tokens: 12,000 chars),
    a prunable result is soft-trimmed only when it holds *more* than 4,000 characters."""
    h = _openclaw_session([size])
    context = ctx(window=3_000, previous_ts=T0 - timedelta(minutes=6), model="claude-sonnet-4-5")
    view = view_of(build("openclaw-prune-cache-ttl-5m")(h.items, context))
    assert outputs(view)[0].startswith("p" * 1500 + "\n...\n") is trimmed
    assert bool(view.events) is trimmed


def test_openclaw_prunes_from_30_percent_of_the_window_s_chars():
    """Nothing is pruned under 30 % of the window's characters (window × 4); at exactly 30 %
    the soft trim runs."""
    from replay.strategies._view import item_chars

    pad = 5_000
    while sum(item_chars(i) for i in _openclaw_session([pad]).items) % 6:
        pad += 1
    h = _openclaw_session([pad])
    total = sum(item_chars(i) for i in h.items)
    window = total * 10 // 12  # 30 % of window × 4 characters is the total

    def pruned(window: int) -> bool:
        context = ctx(window=window, previous_ts=T0 - timedelta(minutes=6),
                      model="claude-sonnet-4-5")
        return bool(view_of(build("openclaw-prune-cache-ttl-5m")(h.items, context)).events)

    assert pruned(window) and not pruned(window + 1)


def test_openclaw_hard_clears_the_oldest_results_until_under_half_the_window():
    """Twenty prunable results of 4,000 characters (not soft-trimmed; 80,000 ≥ 50,000) in a
    window of 30,000 tokens (120,000 chars): over 50 % of it, the oldest are cleared one by one
    until the context is under 60,000 characters, and no more."""
    from replay.strategies._view import item_chars

    h = _openclaw_session([4_000] * 20)
    context = ctx(window=30_000, previous_ts=T0 - timedelta(minutes=6), model="claude-sonnet-4-5")
    view = view_of(build("openclaw-prune-cache-ttl-5m")(h.items, context))
    shown = outputs(view)[:20]
    cleared = shown.count(LITERAL_CLEARED)
    assert cleared and shown == [LITERAL_CLEARED] * cleared + ["p" * 4_000] * (20 - cleared)
    after = sum(item_chars(i) for i in view.items)
    assert after < 60_000 <= after + 4_000 - len(LITERAL_CLEARED)


@pytest.mark.parametrize("prunable, cleared", [(49_999, False), (50_000, True)])
def test_openclaw_hard_clears_only_when_the_prunable_results_hold_50000_chars(prunable, cleared):
    """The hard clear needs at least 50,000 prunable characters (`min_prunable`), even far
    over 50 % of the window."""
    h = _openclaw_session([2_000] * 24 + [prunable - 48_000])
    context = ctx(window=10_000, previous_ts=T0 - timedelta(minutes=6), model="claude-sonnet-4-5")
    view = view_of(build("openclaw-prune-cache-ttl-5m")(h.items, context))
    assert (LITERAL_CLEARED in outputs(view)) is cleared


def test_openclaw_hard_clears_from_exactly_half_the_window_s_chars():
    """The hard clear runs while the context holds 50 % of the window's characters or more:
    at exactly 50 % the oldest result is cleared."""
    from replay.strategies._view import item_chars

    pad = 4_000
    while sum(item_chars(i) for i in _openclaw_session([4_000] * 12 + [pad]).items) % 2:
        pad -= 1
    h = _openclaw_session([4_000] * 12 + [pad])
    window = sum(item_chars(i) for i in h.items) // 2  # half of window × 4 characters

    def cleared(window: int) -> bool:
        context = ctx(window=window, previous_ts=T0 - timedelta(minutes=6),
                      model="claude-sonnet-4-5")
        view = view_of(build("openclaw-prune-cache-ttl-5m")(h.items, context))
        return LITERAL_CLEARED in outputs(view)

    assert cleared(window) and not cleared(window + 1)


def test_openclaw_prunes_at_the_first_request_with_no_call_before():
    """With no earlier call there is no warm cache to keep: the first request of a resumed
    session over the thresholds is pruned."""
    h = _openclaw_session([20_000] * 3)
    context = ctx(window=20_000, model="claude-sonnet-4-5")
    assert context.previous_ts is None
    assert view_of(build("openclaw-prune-cache-ttl-5m")(h.items, context)).events


def test_recorded_announces_each_logged_compaction_and_each_clear_once():
    """Two compactions the log recorded since the last request are two rewrites; a request
    that sees them again, or the same cleared results again, reports none."""
    from replay.strategies.recorded import LoggedCompaction

    h = _text_exchange("task", "a1", "u2", "a3", "u4", "a5", "u6")
    first = LoggedCompaction("s1", frozenset({0, 1}), event_index=2, message="summary one")
    second = LoggedCompaction("s2", frozenset({3}), event_index=4, message="summary two")
    strategy = build("recorded")
    context = dataclasses.replace(ctx(logged=(first, second)), logged_clears=frozenset({5}))
    view = view_of(strategy(h.items, context))
    assert [e.kind for e in view.events] == ["compaction", "compaction", "prune"]
    again = view_of(strategy([*h.items, UserItem("u7", event_index=7)], context))
    assert again.events == []


# --- plug-ins ---------------------------------------------------------------------------------


PLUGIN = '''
"""Keep only the last N items (a toy plug-in)."""
from replay.strategies import UserItem

NAME = "my-last-n"
CACHE_CLASS = "churn"

def strategy(history, ctx, n=4):
    tail = list(history[-n:])
    while tail and tail[0].kind == "tool_result":
        tail = tail[1:]
    return tail or [UserItem("nothing")]
'''

STATEFUL = '''
from replay.strategies import View

CACHE_CLASS = "append-only"

class Strategy:
    """Counts its calls (state per thread)."""
    def __init__(self, label="x"):
        self.calls = 0
        self.label = label
    def __call__(self, history, ctx):
        self.calls += 1
        return View(items=list(history))
'''


def test_strategy_file_function_and_class(tmp_path, clean_registry):
    path = tmp_path / "last_n.py"
    path.write_text(textwrap.dedent(PLUGIN))
    (spec,) = _plugins.load_strategy_file(path)
    assert spec.family == "my-last-n" and spec.cache_class == "churn" and spec.is_plugin
    assert spec.defaults == {"n": 4}
    assert "my-last-n" in plugin_names() and "my-last-n" not in canonical_names()
    (built,) = resolve("plugins", {"my-last-n": {"n": "2"}})
    assert built.name == "my-last-n[n=2]"
    h = History().user().step(read("a", "1")).step(read("b", "2"))
    assert len(view_of(built.instantiate()(h.items, ctx())).items) == 2
    assert [n.name for n in resolve("all,plugins")][-1] == "my-last-n"

    other = tmp_path / "counting_strategy.py"
    other.write_text(textwrap.dedent(STATEFUL))
    (spec2,) = _plugins.load_strategy_file(other)
    assert spec2.family == "counting-strategy" and spec2.cache_class == "append-only"
    instance = parse_name("counting-strategy").instantiate()
    instance(h.items, ctx())
    instance(h.items, ctx())
    assert instance.calls == 2
    assert parse_name("counting-strategy").instantiate().calls == 0  # fresh per thread


@pytest.mark.parametrize(
    ("source", "defaults"),
    [
        # a __call__ that is no plain function: nothing to check before it runs
        ("class Strategy:\n    __call__ = staticmethod(lambda history, ctx: list(history))\n", {}),
        # a parameter without a default takes None (the registry's default)
        ("def strategy(history, ctx, *, keep):\n    return list(history)[-keep:] if keep else "
         "list(history)\n", {"keep": None}),
    ],
    ids=["static-call", "required-parameter"],
)
def test_a_strategy_python_can_call_as_history_ctx_loads_and_runs(tmp_path, clean_registry,
                                                                  source, defaults):
    path = tmp_path / "callable_strategy.py"
    path.write_text(source)
    (spec,) = _plugins.load_strategy_file(path)
    assert spec.defaults == defaults
    h = History().user().step(read("a", "1"))
    assert view_of(parse_name("callable-strategy").instantiate()(h.items, ctx())).items == h.items


def test_a_plugin_file_s_defaults(tmp_path, clean_registry):
    """Without CACHE_CLASS a file's strategy is `churn` (the safe assumption); PARAMS overrides
    the function's own defaults; a StrategySpec the file holds both by name and in a list is
    one plug-in."""
    path = tmp_path / "defaults_file.py"
    path.write_text("PARAMS = {'n': 2}\n\ndef strategy(history, ctx, n=4, m=1):\n"
                    "    return list(history)\n")
    (spec,) = _plugins.load_strategy_file(path)
    assert (spec.cache_class, spec.defaults) == ("churn", {"n": 2, "m": 1})
    specs = tmp_path / "spec_twice.py"
    specs.write_text(
        "from replay.strategies import StrategySpec\n\n"
        "def build():\n    return lambda history, ctx: list(history)\n\n"
        "SPEC = StrategySpec(family='spec-twice', pattern='spec-twice', build=build, "
        "cache_class='churn', rule='r')\nSPECS = [SPEC]\n"
    )
    loaded = _plugins.load_strategy_file(specs)
    assert [(s.family, s.origin) for s in loaded] == [("spec-twice", f"file:{specs}")]


def test_a_new_item_may_be_sized_zero_tokens():
    """An estimated size is None or any count from 0 (an empty text's is 0)."""
    items = [UserItem("", estimated_tokens=0),
             AssistantItem(blocks=(Block("thinking", estimated_tokens=0),))]
    assert _plugins._not_a_view(items, []) is None


EMPTIES_ITS_INPUT = '''
def strategy(history, ctx):
    view = list(history)
    history.clear()  # the plug-in's own business: it must not reach the next request
    return view
'''


def test_a_plugin_that_empties_its_input_does_not_change_the_history(tmp_path, clean_registry):
    """`history` is the thread's full history at every request (docs/strategies.md): a plug-in
    that empties the list it was given, then sends what it held, sends every message, as
    `baseline` does. It used to get the engine's own list: each request then saw only the
    messages logged since the previous one."""
    import replay

    path = tmp_path / "empties_input.py"
    path.write_text(EMPTIES_ITS_INPUT)
    _plugins.load_strategy_file(path)
    summary = replay.replay(RUN42, "baseline,empties-input", keep_records=False).summary
    rows = {r["strategy"]: r for r in summary.iter_rows(named=True)}
    for column in ("prompt_tokens", "cached_tokens", "cost_usd", "prefix_breaks"):
        assert rows["empties-input"][column] == rows["baseline"][column], column


def test_a_plugin_file_loaded_again_after_an_edit_runs_its_new_code(
    tmp_path, clean_registry, monkeypatch
):
    """A notebook working on a plug-in loads its file again after each edit: the old code kept
    running (loading was a no-op per path). Unchanged, loading again changes nothing. With
    Python's bytecode cache on, the edit below (same size, same second) ran the old code, and
    a `__pycache__` folder was written beside the user's file."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "last_n.py"
    path.write_text(textwrap.dedent(PLUGIN))
    first = _plugins.load_strategy_file(path)
    assert _plugins.load_strategy_file(path) is first
    h = History().user().step(read("a", "1")).step(read("b", "2"))
    assert len(view_of(parse_name("my-last-n").instantiate()(h.items, ctx())).items) == 4
    path.write_text(textwrap.dedent(PLUGIN).replace("n=4", "n=2"))
    (spec,) = _plugins.load_strategy_file(path)
    assert spec.defaults == {"n": 2}
    assert len(view_of(parse_name("my-last-n").instantiate()(h.items, ctx())).items) == 2
    # a new version that cannot load leaves the loaded one in place
    path.write_text("NAME = 'baseline'\ndef strategy(history, ctx):\n    return history\n")
    with pytest.raises(ReplayError, match="built-in"):
        _plugins.load_strategy_file(path)
    assert parse_name("my-last-n").spec is spec
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last_n.py"]  # nothing written


def test_a_plugin_file_renamed_by_an_edit_leaves_no_old_name(tmp_path, clean_registry):
    path = tmp_path / "renamed.py"
    for name in ("old-name", "new-name"):
        path.write_text(f"NAME = {name!r}\ndef strategy(history, ctx):\n    return list(history)\n")
        _plugins.load_strategy_file(path)
    assert "new-name" in plugin_names() and "old-name" not in plugin_names()


def test_a_plugin_file_s_rule_source_and_path_as_given(tmp_path, clean_registry):
    """RULE and SOURCE default to the docstring's first line and the file; the loaded files are
    listed as they were given (a worker loads them under the same origins)."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "documented.py").write_text(
        '"""Keep everything.\n\nWhy, at length."""\n\ndef strategy(history, ctx):\n'
        "    return list(history)\n"
    )
    given = tmp_path / "sub" / ".." / "documented.py"
    (spec,) = _plugins.load_strategy_file(given)
    assert (spec.rule, spec.source, spec.origin) == ("Keep everything.", f"file:{given}",
                                                     f"file:{given}")
    assert _plugins.loaded_files()[-1] == given


def test_a_plugin_file_runs_under_its_own_future_imports_not_replay_s(tmp_path, clean_registry):
    """replay's modules postpone annotations (`from __future__ import annotations`); a plug-in
    file that does not evaluates them, as Python would run it."""
    path = tmp_path / "annotated.py"
    path.write_text("def strategy(history: list, ctx) -> list:\n    return list(history)\n\n\n"
                    "RULE = type(strategy.__annotations__['history']).__name__\n")
    (spec,) = _plugins.load_strategy_file(path)
    assert spec.rule == "type"  # a class, not the string 'list'


def test_bad_strategy_files_are_user_errors(tmp_path, clean_registry):
    with pytest.raises(ReplayError, match="no such file"):
        _plugins.load_strategy_file(tmp_path / "missing.py")
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ReplayError, match="boom"):
        _plugins.load_strategy_file(broken)
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n")
    with pytest.raises(ReplayError, match=f"^--strategy-file {empty}: defines neither"):
        _plugins.load_strategy_file(empty)
    with pytest.raises(ReplayError, match="^--strategy-file /dev/null: not a regular file"):
        _plugins.load_strategy_file("/dev/null")
    with pytest.raises(ReplayError, match=f"^--strategy-file {tmp_path}: is a folder"):
        _plugins.load_strategy_file(tmp_path)
    wrong = tmp_path / "wrong.py"
    wrong.write_text("CACHE_CLASS = 'sometimes'\ndef strategy(history, ctx):\n    return history\n")
    with pytest.raises(ReplayError, match="CACHE_CLASS"):
        _plugins.load_strategy_file(wrong)
    clash = tmp_path / "clash.py"
    clash.write_text("NAME = 'baseline'\ndef strategy(history, ctx):\n    return history\n")
    with pytest.raises(ReplayError, match="built-in"):
        _plugins.load_strategy_file(clash)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        # a canonical name of a built-in: the built-in would run under the plug-in's name
        ("NAME = 'truncate-500'\ndef strategy(history, ctx):\n    return history\n",
         "name 'truncate-500' is taken by the built-in family 'truncate'"),
        # any name a built-in pattern accepts
        ("NAME = 'sliding-7-pin-first'\ndef strategy(history, ctx):\n    return history\n",
         "name 'sliding-7-pin-first' is taken by the built-in family 'sliding'"),
        # a word of strategy lists: `-s all` ran the built-ins, never the plug-in named so
        ("NAME = 'all'\ndef strategy(history, ctx):\n    return history\n",
         "name 'all' is a word of strategy lists (`all`: the built-ins)"),
        ("NAME = 'plugins'\ndef strategy(history, ctx):\n    return history\n",
         "name 'plugins' is a word of strategy lists (`plugins`: every loaded plug-in)"),
        # names `plugins` would run that its own pattern refuses: "unknown strategy 'mine'"
        ("from replay.strategies import StrategySpec\n"
         "SPEC = StrategySpec(family='mine', pattern=r'mine-(?P<n>\\d+)', cache_class='churn',\n"
         "                    rule='x', build=lambda n=3: (lambda history, ctx: list(history)))\n",
         "its family name (it has no canonical) 'mine' does not match its own pattern"),
        ("from replay.strategies import StrategySpec\n"
         "SPEC = StrategySpec(family='mine', pattern=r'mine-(?P<n>\\d+)', cache_class='churn',\n"
         "                    rule='x', build=lambda n=3: (lambda history, ctx: list(history)),\n"
         "                    canonical=('mine-3', 'mine-x'))\n",
         "its canonical name 'mine-x' does not match its own pattern"),
        # a pattern that swallows a built-in's canonical name
        ("from replay.strategies import StrategySpec\n"
         "SPEC = StrategySpec(family='mine', pattern=r'sliding-\\d+', cache_class='churn',\n"
         "                    rule='x', build=lambda: (lambda history, ctx: list(history)))\n",
         "pattern 'sliding-\\\\d+' matches the built-in name 'sliding-10'"),
    ],
)
def test_a_plugin_cannot_shadow_a_builtin_name_or_pattern(tmp_path, clean_registry, invoke,
                                                          source, message):
    clash = tmp_path / "clash.py"
    clash.write_text(source)
    with pytest.raises(ReplayError, match=re.escape(message)):
        _plugins.load_strategy_file(clash)
    assert all(not s.is_plugin for s in registered())  # nothing of the file stays registered
    result = invoke("run", RUN42, "-s", "plugins", "--strategy-file", clash, "--quiet")
    assert result.exit_code == 2 and message in result.stderr


def test_two_plugins_of_one_name_are_an_error(tmp_path, clean_registry, invoke):
    # The second used to replace the first: its code ran under the name meant for the first.
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text("NAME = 'keep-edges'\ndef strategy(history, ctx):\n    return history[-3:]\n")
    second.write_text("NAME = 'keep-edges'\ndef strategy(history, ctx):\n    return history\n")
    _plugins.load_strategy_file(first)
    _plugins.load_strategy_file(first)  # the same file again is the same plug-in
    message = (f"plug-in file:{second}: strategy family 'keep-edges' is already taken by "
               f"plug-in file:{first}")
    with pytest.raises(ReplayError, match=re.escape(message)):
        _plugins.load_strategy_file(second)
    result = invoke("run", RUN42, "-s", "plugins", "--strategy-file", first,
                    "--strategy-file", second, "--quiet")
    assert result.exit_code == 2 and message in result.stderr


def test_a_file_is_registered_whole_or_not_at_all(tmp_path, clean_registry):
    mixed = tmp_path / "mixed.py"
    mixed.write_text(
        "from replay.strategies import StrategySpec\n"
        "def build():\n    return lambda history, ctx: list(history)\n"
        "SPECS = [StrategySpec(family='fine-one', pattern='fine-one', build=build,\n"
        "                      cache_class='churn', rule='x'),\n"
        "         StrategySpec(family='bad-one', pattern='baseline', build=build,\n"
        "                      cache_class='churn', rule='x')]\n"
    )
    with pytest.raises(ReplayError, match="matches the built-in name 'baseline'"):
        _plugins.load_strategy_file(mixed)
    assert "fine-one" not in {s.family for s in registered()}


def test_entry_point_plugins(tmp_path, monkeypatch, clean_registry):
    pkg = tmp_path / "fake_replay_plugin"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        textwrap.dedent("""
        from replay.strategies import StrategySpec

        def _build(keep=1):
            def strategy(history, ctx):
                return list(history)
            return strategy

        SPECS = [StrategySpec(family="ep-demo", pattern=r"ep-demo-(?P<keep>\\d+)", build=_build,
                              cache_class="append-only", rule="demo", defaults={"keep": 1},
                              canonical=("ep-demo-1",), source="fake package")]

        def broken():
            raise RuntimeError("nope")
    """)
    )
    dist = tmp_path / "fake_replay_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fake-replay-plugin\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        "[replay.strategies]\ndemo = fake_replay_plugin:SPECS\nbad = fake_replay_plugin:broken\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(UserWarning, match="'bad'"):
        loaded = _plugins.load_entry_points(force=True)
    assert [s.family for s in loaded] == ["ep-demo"]
    assert loaded[0].origin == "entry-point:demo"
    assert "ep-demo-1" in plugin_names() and "ep-demo-1" not in canonical_names()
    assert parse_name("ep-demo-3").params == {"keep": 3}
    assert _plugins.load_entry_points() == []  # loaded once (force: again)
    sys.modules.pop("fake_replay_plugin", None)


def test_an_entry_point_may_load_a_factory_but_not_a_string():
    spec = StrategySpec(family="ep-factory", pattern="ep-factory", build=_keep_everything,
                        cache_class="churn", rule="r")
    made = _plugins._specs_from_object(lambda: [spec], "entry-point:f")
    assert [(s.family, s.origin) for s in made] == [("ep-factory", "entry-point:f")]
    with pytest.raises(ReplayError, match="^entry-point:s: loads a str, not a StrategySpec$"):
        _plugins._specs_from_object("ep-factory", "entry-point:s")


def test_an_entry_point_not_loaded_leaves_none_of_its_strategies(monkeypatch, clean_registry):
    """A package whose second spec takes a built-in's family is skipped whole: its first one
    stayed registered (and ran with `plugins`) although the warning said "not loaded"."""
    good, clash = (
        StrategySpec(family=family, pattern=pattern, build=_keep_everything, cache_class="churn",
                     rule="r")
        for family, pattern in (("half-good", "half-good"), ("baseline", "half-clash"))
    )

    class EntryPoint:
        name, value = "half", "half_pkg:SPECS"

        def load(self):
            return [good, clash]

    monkeypatch.setattr(_plugins.metadata, "entry_points", lambda group: [EntryPoint()])
    with pytest.warns(UserWarning, match="^strategy plug-in 'half' .* not loaded: .*built-in"):
        assert _plugins.load_entry_points(force=True) == []
    assert "half-good" not in plugin_names()


def test_a_broken_package_is_named_by_its_innermost_line_outside_the_standard_library(
    tmp_path, monkeypatch
):
    """The line of the package's own code that failed: not the import that reached it, nor the
    standard library's code it called."""
    module = tmp_path / "half_broken_pkg.py"
    module.write_text("import json\n\n\ndef load():\n    return json.loads('{')\n\n\n"
                      "SPECS = load()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError) as err:
        importlib.import_module("half_broken_pkg")
    assert _plugins._package_line(err.value) == f"{module}:5"


def test_a_broken_plugin_package_is_one_warning_line_naming_its_code(tmp_path):
    """`replay` says once, in one line, which installed plug-in it skipped and where its code
    failed. It printed Python's warning form, naming the line of replay that loads plug-ins,
    once more per worker process, and without the error's type."""
    import os
    import subprocess

    from conftest import ROOT

    pkg = tmp_path / "broken_replay_plugin"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("X = 1\nraise RuntimeError('nope')\n")
    dist = tmp_path / "broken_replay_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-replay-plugin\n"
                                   "Version: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[replay.strategies]\nbad = broken_replay_plugin:SPECS\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "replay", str(RUN42), "-s", "baseline,truncate-500", "-q",
         "--workers", "2"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "warning: strategy plug-in 'bad' (broken_replay_plugin:SPECS) not loaded: "
        f"{pkg / '__init__.py'}:2: RuntimeError: nope"
    ]


def _keep_everything(**params):
    return lambda history, ctx: list(history)


def test_plugins_without_a_plugin_says_none_is_loaded(clean_registry):
    from replay.strategies import _base

    for spec in [s for s in registered() if s.is_plugin]:  # another test's, if any
        del _base._REGISTRY[spec.family]
    # `replay batch` has no --strategy-file: the message says which commands have it
    with pytest.raises(ReplayError, match=r"^`plugins` names no strategy: no plug-in is loaded "
                       r"\(load one with --strategy-file FILE in replay run, breakeven, report "
                       r"or plot, or install"):
        resolve("plugins")
    with pytest.raises(ReplayError, match="^no strategy given"):
        resolve("")


def test_a_spec_registered_by_the_calling_program_is_a_plugin(clean_registry):
    """Registered from code without an origin, a family is still not a built-in: `all` (the
    same set whatever else is loaded) leaves it out, `plugins` has it, and it may not take a
    built-in's name."""
    spec = register(StrategySpec(family="code-demo", pattern="code-demo", build=_keep_everything,
                                 cache_class="append-only", rule="demo", canonical=("code-demo",)))
    assert spec.origin == f"code:{__name__}" and spec.is_plugin
    assert "code-demo" not in canonical_names() and "code-demo" in plugin_names()
    assert [n.name for n in resolve("plugins")] == ["code-demo"]
    assert len(resolve("all")) == len(canonical_names())
    with pytest.raises(ReplayError, match="taken by the built-in family 'sliding'"):
        register(StrategySpec(family="code-sliding", pattern=r"sliding-\d+", build=_keep_everything,
                              cache_class="churn", rule="demo", canonical=("sliding-3",)))
    builtin = next(s for s in registered() if s.family == "baseline")
    assert register(builtin).origin == "builtin"  # replay's own families stay built-in


def test_a_program_registers_its_family_again_not_a_cache_class_of_its_own(clean_registry):
    """The same code registering its family again (a notebook cell run twice) replaces it; a
    family without canonical names runs as its family under `plugins`; a cache class that is
    not one of the four is refused."""
    spec = StrategySpec(family="code-again", pattern="code-again", build=_keep_everything,
                        cache_class="append-only", rule="demo")
    register(spec)
    again = register(dataclasses.replace(spec, rule="demo, edited"))
    assert parse_name("code-again").spec is again
    assert "code-again" in plugin_names()
    with pytest.raises(ReplayError, match=r"cache_class 'sometimes' is not one of append-only"):
        register(dataclasses.replace(spec, family="code-odd", cache_class="sometimes"))
    # a built-in's family, even with names of its own, would replace the built-in
    with pytest.raises(ReplayError, match="'truncate' is a built-in strategy family"):
        register(dataclasses.replace(spec, family="truncate", canonical=("code-again",)))
    assert parse_name("truncate-500").spec.origin == "builtin"


def test_a_family_taking_any_parameter_names_each_one_given(clean_registry):
    """A `build(**params)` accepts parameters it does not list, and the row names each one,
    also one set to None."""
    register(StrategySpec(family="code-open", pattern="code-open", build=_keep_everything,
                          cache_class="append-only", rule="demo"))
    built = parse_name("code-open[depth=3,label=none]")
    assert built.params == {"depth": 3, "label": None}
    assert built.name == "code-open[depth=3,label=None]"


def test_builtins_keep_their_order_whatever_registered_first(clean_registry):
    """`all` runs the built-ins in module order, even when a family module registered early."""
    before = canonical_names()
    assert before[0] == "recorded"
    reordered = list(_base._REGISTRY.items())[::-1]
    _base._REGISTRY.clear()
    _base._REGISTRY.update(reordered)
    assert canonical_names() == before


def test_a_list_a_strategy_returns_is_copied_into_its_view():
    """The engine hands a returned list's view over to the renderer as never changing again: a
    strategy that keeps and edits the list it returned must not change a request sent."""
    kept = [UserItem("a")]
    view = _base.as_view(kept)
    kept.append(UserItem("b"))
    assert len(view.items) == 1


def _builds_a_number(**params):
    return 42


def _raises_on_a_request(**params):
    def strategy(history, ctx):
        raise ValueError("boom")

    return strategy


def test_a_code_plugin_s_mistakes_name_its_line_then_its_origin(clean_registry):
    """A family registered from code is guarded as a file's is: built as anything but a
    callable, it is refused when built; what it raises names the line that raised, then its
    origin (a file plug-in's path is the line's own)."""
    for family, build in (("code-number", _builds_a_number), ("code-raises", _raises_on_a_request)):
        register(StrategySpec(family=family, pattern=family, build=build, cache_class="churn",
                              rule="demo", canonical=(family,)))
    with pytest.raises(ReplayError) as built:
        parse_name("code-number").instantiate()
    assert str(built.value) == (f"code:{__name__}: plug-in strategy 'code-number' was built as "
                                "int: expected a callable taking (history, ctx)")
    with pytest.raises(ReplayError) as raised:
        parse_name("code-raises").instantiate()(History().user().items, ctx())
    line = _raises_on_a_request.__code__.co_firstlineno + 2
    assert str(raised.value) == (f"{__file__}:{line}: plug-in strategy 'code-raises' raised "
                                 f"ValueError: boom on request 0 (code:{__name__})")


# --- the command line --------------------------------------------------------------------------


def _cli():
    from replay.cli._main import cli, load_commands

    load_commands()
    return cli


def test_strategies_command_json_rows(tmp_path, clean_registry):
    path = tmp_path / "last_n.py"
    path.write_text(textwrap.dedent(PLUGIN))
    result = CliRunner().invoke(
        _cli(), ["strategies", "--format", "json", "--strategy-file", str(path)]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert all(
        set(r) == {"name", "family", "cache_class", "defaults", "rule", "source", "api"}
        for r in rows
    )
    names = [r["name"] for r in rows]
    assert names[: len(canonical_names())] == canonical_names() and names[-1] == "my-last-n"
    pi = next(r for r in rows if r["name"] == "pi-compact-16k-20k")
    assert (
        pi["defaults"] == {"reserve": 16384, "keep": 20000} and pi["cache_class"] == "freeze-once"
    )
    # The five server-side families name their API (docs/strategies.md); harness rules none.
    apis = {r["name"]: r["api"] for r in rows if r["api"]}
    assert apis == {
        "anthropic-clear-tool-uses-100k-keep-3": "anthropic",
        "anthropic-clear-thinking-keep-1": "anthropic",
        "anthropic-compact-150k": "anthropic",
        "openai-responses-compact-90pct": "openai",
        "codex-remote-compact-at-90pct": "openai",
    }
    assert pi["api"] is None
    # Written as UTF-8, as every other command's JSON is (rules quote arrows and dashes).
    assert "→" in result.output and "\\u2192" not in result.output


def test_cli_parse_sets():
    from replay.cli._cmd_strategies import parse_sets

    assert parse_sets(["pi-compact.keep=30k", "pi-compact.reserve=8k", "prune.chars=9"]) == {
        "pi-compact": {"keep": "30k", "reserve": "8k"},
        "prune": {"chars": "9"},
    }
    with pytest.raises(ReplayError, match="FAMILY.PARAM=VALUE"):
        parse_sets(["keep=3"])


def test_a_plugin_that_rewrites_without_events_is_named_in_a_note(tmp_path, clean_registry):
    """A plug-in returning a list names no rewrite: break-even had no row for it and said it
    "never changed earlier context", silently. A note now says where it rewrote unnamed."""
    from replay._api import breakeven

    path = tmp_path / "last_n.py"
    path.write_text(textwrap.dedent(PLUGIN))
    _plugins.load_strategy_file(path)
    notes: list[str] = []
    rows = breakeven(ROOT / "logs" / "run42.jsonl", "my-last-n,baseline", notes=notes)
    assert rows.is_empty()
    (note,) = [n for n in notes if "did not name" in n]
    unnamed = re.search(r"my-last-n at (\d+) request", note)
    assert unnamed and int(unnamed.group(1)) > 0
    assert "baseline" not in note


def test_run_with_set_and_strategy_file(tmp_path, clean_registry):
    path = tmp_path / "last_n.py"
    path.write_text(textwrap.dedent(PLUGIN))
    result = CliRunner().invoke(
        _cli(),
        [
            "run",
            str(ROOT / "logs" / "run42.jsonl"),
            "-s",
            "plugins,pi-compact-16k-20k",
            "--strategy-file",
            str(path),
            "--set",
            "my-last-n.n=3",
            "--set",
            "pi-compact.keep=10k",
            "--format",
            "json",
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    names = [row["strategy"] for row in json.loads(result.output)["summary"]]
    assert names == ["my-last-n[n=3]", "pi-compact-16k-20k[keep=10000]"]
    bad = CliRunner().invoke(
        _cli(), ["run", str(ROOT / "logs" / "run42.jsonl"), "-s", "baseline", "--set", "nope"]
    )
    assert bad.exit_code == 2 and "FAMILY.PARAM=VALUE" in bad.output


def test_openhands_window_halves_again_until_the_request_fits():
    """Each refused call raises the overflow again and OpenHands condenses again: one halving
    that still did not fit used to be sent over the window."""
    from replay.strategies._common import request_tokens

    h = History().user()
    for n in range(6):
        h.step(read(f"f{n}", "x" * 400))
    h.step(read("big", "y " * 1000))
    c = ctx(window=700)
    assert request_tokens(h.items, c) > 700
    view = view_of(build("openhands-window-on-overflow")(h.items, c))
    assert request_tokens(view.items, c) <= 700
    assert view.items[0] is h.items[0] and view.items[-1] is h.items[-1]
    assert [e.detail for e in view.events] == ["window halved 2 times on overflow"]


def test_openhands_window_with_nothing_left_to_drop_reports_no_rewrite():
    """One task message larger than the window: nothing can be dropped, so nothing was
    rewritten (an event "window halved 0 times" counted a rewrite that changed nothing)."""
    from replay.strategies._common import request_tokens

    h = History().user("z " * 2000)
    c = ctx(window=700)
    assert request_tokens(h.items, c) > 700
    view = view_of(build("openhands-window-on-overflow")(h.items, c))
    assert view.items == h.items
    assert view.events == []


# --- what the log holds only as a size --------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "openhands-window-on-overflow",
        "anthropic-compact-150k",
        "pi-compact-16k-20k",
        "openai-responses-compact-90pct",
    ],
)
def test_triggers_count_what_the_log_holds_only_as_a_size(name):
    """Thinking known only by its size (Codex, Claude Code with redacted thinking) and
    context the log does not hold are billed: a rule sizing the view in tokens sees them, so
    250k tokens of such thinking overflow a 200k window as 250k tokens of text would."""
    h = History().user().step(read("a.py", "x = 1\n" * 50)).user("go on")
    h.items.append(
        AssistantItem(
            blocks=(Block("thinking", estimated_tokens=250_000), Block("text", text="done")),
            event_index=len(h.items),
        )
    )
    h.user("next")
    view = view_of(build(name)(h.items, ctx(window=200_000)))
    assert view.events, f"{name} did not see a 250k-token history in a 200k window"


def test_sizes_of_items_known_only_by_their_size():
    from replay.strategies._common import item_est, item_tokens, request_tokens

    thinking = AssistantItem(
        blocks=(Block("thinking", estimated_tokens=900), Block("text", text="ok"))
    )
    unlogged = UserItem("[context not in the log: ~700 tokens]", estimated_tokens=700)
    c = ctx()
    assert item_tokens(thinking, c) == 900 + c.count_tokens("ok")
    assert item_tokens(unlogged, c) == 700 and item_est(unlogged) == 700
    hidden = StrategyContext(**{**c.__dict__, "hidden_tokens": 5000})
    assert request_tokens([], hidden) == request_tokens([], c) + 5000


@pytest.mark.parametrize("name", ["truncate-500", "age-truncate-500-keep-1"])
def test_a_character_cap_hides_everything_past_its_limit(name):
    """A cap hides what is past its limit even where its marker makes the result longer: a
    515-character output used to be sent whole, so a name at character 505 (the seed study's
    bug sat just past character 500) was shown."""
    h = History().user()
    for n, size in enumerate([501, 505, 2000, 10]):
        h.step(read(f"f{n}", "x" * size + ("payload.id" if n == 1 else "")), text="t")
    view = view_of(build(name)(h.items, ctx()))
    outputs = [i.output for i in view.items if isinstance(i, ToolResultItem)]
    assert outputs[0] == "x" * 500 + "\n…[truncated 1 chars]"
    assert outputs[1] == "x" * 500 + "\n…[truncated 15 chars]" and "payload" not in outputs[1]
    assert outputs[2].startswith("x" * 500) and len(outputs[2]) < 2000
    assert outputs[3] == "x" * 10


def test_reported_usage_is_the_previous_prompt_plus_its_output():
    """What a harness reads from the last response: prompt (every bucket, or uncached + read
    for opencode 1.x) plus output unless asked without it."""
    import dataclasses

    from replay.strategies._common import reported_tokens

    usage = Usage(input_tokens=100, cache_read_tokens=20, cache_write_5m_tokens=7,
                  output_tokens=50)
    c = dataclasses.replace(ctx(), previous_usage=usage)
    assert reported_tokens(c, []) == 177
    assert reported_tokens(c, [], output=False) == 127
    assert reported_tokens(c, [], cache_writes=False) == 170


def test_sizes_a_log_holds_as_numbers_scale_to_the_replayed_model_s_tokens():
    """A gpt-5 log (o200k tokens) replayed as Claude: its hidden prefix counts 1.199 Claude
    tokens per token (docs/calibration.md), not 1 / 1.199."""
    from replay.engine._replay import tokenizer_ratio
    from replay.log import Session, SessionHeader

    header = SessionHeader(ts=T0, session_id="s", agent="a", provider="openai", model="gpt-5")
    session = Session(header=header, events=[])
    assert tokenizer_ratio(session, "claude-sonnet-4-5") == pytest.approx(1.199)
    assert tokenizer_ratio(session, "gpt-5.5") == 1.0


# --- OpenHands counts events ----------------------------------------------------------------


def _parallel_steps(steps: int, calls: int) -> History:
    h = History().user("task")
    for s in range(steps):
        h.step(*[("read_file", {"path": f"f{s}_{c}.py"}, f"body {s} {c}") for c in range(calls)])
    return h


def test_openhands_counts_each_parallel_call_and_the_system_prompt_as_events():
    """Two answers of three parallel calls are 12 events (one per call, one per result), the
    task one more, the system prompt (OpenHands' event 0) one more: 14 > 10. keep_first=1 keeps
    only the system prompt; the newest 9 events cut into the first answer, kept whole. (Nine
    items: counted as items, nothing was dropped.)"""
    h = _parallel_steps(2, 3)
    view = view_of(build("openhands-recent-keep-first-1-max-100", max_events=10)(h.items, ctx()))
    assert view.items == h.items[1:]
    assert [e.detail for e in view.events] == ["1 event forgotten"]
    # Eleven events or more are within 14: nothing to drop.
    view = view_of(build("openhands-recent-keep-first-1-max-100", max_events=14)(h.items, ctx()))
    assert view.items == h.items and not view.events


def test_openhands_amortized_forgets_by_events():
    """Three answers of two calls: 1 + 1 + 12 = 14 events > 12. The newest 12 // 2 - 1 = 5 events
    cut into the second answer (4 events each): kept whole, with the third; the task and the first
    answer are forgotten."""
    h = _parallel_steps(3, 2)
    view = view_of(build("openhands-amortized-100", max_size=12)(h.items, ctx()))
    assert view.items == h.items[4:]
    assert [e.kind for e in view.events] == ["drop"]


def test_event_index_counts_the_events_older_than_a_window_as_a_walk_does():
    from replay.strategies._openhands import EventIndex, events_in

    h = _parallel_steps(3, 3).user("more").step(text="done")
    index = EventIndex()
    for end in range(1, len(h.items) + 1):
        history = h.items[:end]
        index.sync(history)
        assert index.total() == 1 + events_in(history)
        for window in range(0, 25):
            walked = sum(1 for n in range(end) if events_in(history[n:]) > window)
            assert index.older_than(window) == walked, (end, window)

def test_event_index_counts_another_history_afresh():
    """A history that is not the one indexed grown (same length or longer, other items) is
    counted from its start, not on top of the old counts."""
    from replay.strategies._openhands import EventIndex, events_in

    index = EventIndex()
    index.sync(_parallel_steps(1, 3).items[:2])  # the task and an answer of three calls
    other = History().user("a").step(text="b").user("c").items
    index.sync(other)
    assert index.total() == 1 + events_in(other) == 4


def test_observation_mask_hides_the_results_older_than_the_window_in_events():
    """Two answers of two calls: the task (1), the first answer's calls (2) and results (1, 1),
    the second's (2, 1, 1): 9 events. A window of 5 leaves more than 5 events after the first
    result only: it alone is masked (its call goes with it); a window of 4 masks both."""
    h = _parallel_steps(2, 2)

    def masked(window: int) -> list[bool]:
        view = view_of(build(f"observation-mask-keep-{window}")(h.items, ctx()))
        return [i.text == LITERAL_OPENHANDS_MASKED for i in view.items if isinstance(i, UserItem)]

    assert masked(6) == [False]
    assert masked(5) == [False, True]
    assert masked(4) == [False, True, True]


def test_openhands_recent_reports_the_events_it_forgot_not_the_items():
    """Three answers of two calls (1 + 12 events, 14 with the system prompt), max 9: the newest
    8 events are the last two answers; the task and the first answer (4 items, 5 events) go."""
    h = _parallel_steps(3, 2)
    view = view_of(build("openhands-recent-keep-first-1-max-100", max_events=9)(h.items, ctx()))
    assert view.items == h.items[4:]
    assert [e.detail for e in view.events] == ["5 events forgotten"]


def test_openhands_llm_summary_counts_events_for_its_trigger_head_and_tail():
    """Three answers of two calls: 14 events with the system prompt. max_size 14 is not passed;
    at 13 (keep_first 1: the system prompt alone) the newest 13 // 2 - 1 - 1 = 4 events are the
    last answer (its call events and results), and everything before it is summarized."""
    h = _parallel_steps(3, 2)
    name = "openhands-llm-summary-120-keep-4"
    kept = view_of(build(name, max_size=14, keep_first=1)(h.items, ctx()))
    assert kept.items == h.items and not kept.events
    view = view_of(build(name, max_size=13, keep_first=1)(h.items, ctx()))
    assert isinstance(view.items[0], SummaryItem) and view.items[1:] == h.items[7:]
    assert len(view.summarizer_calls) == 1


def test_openhands_llm_attention_ranks_whole_steps_within_an_event_budget():
    """Three answers of two calls, max_size 13, keep_first 1 (the system prompt): a budget of
    13 // 2 - 1 = 5 events. The task ranks first (1 event), then the newest answer (4 events:
    exactly the budget left); the others would pass it."""
    h = _parallel_steps(3, 2)
    view = view_of(build("openhands-llm-attention-100", max_size=13)(h.items, ctx()))
    assert view.items == [h.items[0], *h.items[7:]]
    assert [e.detail for e in view.events] == ["kept 5 ranked events"]


def test_openhands_window_halves_the_events_not_the_items():
    """Three answers of two calls after the task: 9 items but 12 events. Half is 6 events: the
    last answer (4) and a result of the second, so the second answer is kept whole with it."""
    from replay.strategies._common import request_tokens

    h = History().user("task")
    for s in range(3):
        h.step(*[read(f"f{s}_{c}.py", "x" * 400) for c in range(2)])
    halved = [h.items[0], *h.items[4:]]
    c = ctx(window=request_tokens(halved, ctx()))
    assert request_tokens(h.items, c) > c.context_window
    view = view_of(build("openhands-window-on-overflow")(h.items, c))
    assert view.items == halved
    assert [e.detail for e in view.events] == ["window halved on overflow"]

# --- trigger boundaries and selection, to the token -------------------------------------------


def _prompt_after_exchange() -> History:
    """A finished exchange and a new prompt: the harness's pre-turn check sees only the usage
    it was given (the new prompt is not counted, nothing else is pending)."""
    return History().user("first").step(text="answer").user("next")


@pytest.mark.parametrize("name", ["codex-compact-at-90pct", "codex-remote-compact-at-90pct"])
def test_codex_compacts_when_usage_reaches_the_limit_exactly(name):
    """Codex compacts once the tokens *reach* min(limit, 90% of the window): 244,800 of 272k."""
    h = _prompt_after_exchange()
    fired = {
        usage: bool(view_of(build(name)(h.items, ctx(window=272_000, usage=usage))).events)
        for usage in (244_799, 244_800)
    }
    assert fired == {244_799: False, 244_800: True}


def test_codex_configured_limit_below_the_window_s_90pct_wins():
    """limit = min(configured, 90% of the window): a 100k configuration compacts at 100,000 on
    a 272k window (not at 244,800), and one above 90% of it is capped at 244,800."""
    h = _prompt_after_exchange()

    def fires(usage: int, limit: str) -> bool:
        strategy = build("codex-compact-at-90pct", limit=limit)
        return bool(view_of(strategy(h.items, ctx(window=272_000, usage=usage))).events)

    assert not fires(99_999, "100000") and fires(100_000, "100000")
    assert fires(244_800, "300000")


def test_opencode_prune_needs_strictly_more_than_the_minimum():
    """opencode prunes when the candidates add up to *more than* `minimum`: old0's 1,000 tokens
    (4,000 chars) are not enough for a minimum of 1,000, and are for 999."""
    h = _opencode_turns().user("turn 4")

    def cleared(minimum: str) -> int:
        strategy = build("opencode-prune-40k-20k", protect="1000", minimum=minimum)
        return outputs(view_of(strategy(h.items, ctx()))).count(LITERAL_CLEARED)

    assert (cleared("1000"), cleared("999")) == (0, 1)


def test_pi_cut_stops_walking_back_once_keep_is_reached():
    """pi walks back until the estimated sizes *reach* `keep`: the last entry alone (10 tokens)
    reaches keep=10, so the cut is there; keep=11 takes the entry before it too."""
    from replay.strategies.pi_compact import pi_cut

    h = History().user("u" * 40).step(text="a" * 40).user("b" * 40)  # 10 tokens each
    assert (pi_cut(h.items, 10), pi_cut(h.items, 11)) == (2, 1)


def test_pi_cut_at_context_sent_with_a_prompt_splits_no_turn():
    """Context the log does not hold sits before the prompt it came with (a fitted
    `[context not in the log …]`, pi's expanded @file): a cut there is a cut between turns,
    as at the prompt. It was taken for a cut inside the previous turn, whose whole text went
    to a second summarizer call ("split turn"), as on the pi before-compaction sample."""
    h = History().user("task")
    for n in range(4):
        h.step(read(f"f{n}.ts", "q" * 400), text=f"step {n}")
    attached = UserItem("i" * 200, event_index=len(h.items), injected=True)  # 50 tokens
    h.items.append(attached)
    h.user("second prompt").step(read("g.ts", "z" * 400))  # ~112 tokens with the prompt
    h.user("third prompt")  # new: compacted before it, no part of `keep`
    view = view_of(
        build("pi-compact-16k-20k", keep="150")(h.items, ctx(window=20_000, usage=19_000))
    )
    assert view.items[1] is attached  # 162 tokens back reach 150 at the attached context
    assert len(view.summarizer_calls) == 1
    assert [e.detail for e in view.events] == [f"{h.items.index(attached)} entries → summary"]
    assert "Turn Context (split turn)" not in view.items[0].text


def test_pi_compacts_only_above_window_minus_reserve():
    """pi compacts when the usage *exceeds* window - reserve: 19,000 of 20,000 with a 1,000
    reserve does not, 19,001 does."""
    h = History().user("task")
    for n in range(6):
        h.step(read(f"f{n}.ts", "q" * 400), text=f"step {n}")
    h.user("next prompt")
    fired = {
        usage: bool(
            view_of(
                build("pi-compact-16k-20k", reserve="1000", keep="150")(
                    h.items, ctx(window=20_000, usage=usage)
                )
            ).events
        )
        for usage in (19_000, 19_001)
    }
    assert fired == {19_000: False, 19_001: True}


def _four_bash_steps() -> History:
    """10 + 4 x (2 + 1,000) = 4,018 tokens at chars/4, without framing."""
    h = History().user("u" * 40)
    for _ in range(4):
        h.step(("bash", {}, "r" * 4000))  # the call `bash({})`: 2 tokens
    return h


def test_anthropic_clear_tool_uses_fires_only_above_the_trigger():
    """Context editing clears when the input *exceeds* `trigger`: a 4,018-token request does
    not at trigger 4,018, does at 4,017 (the oldest of 4 results; keep 3)."""
    from replay.strategies._common import request_tokens

    h = _four_bash_steps()
    assert request_tokens(h.items, ctx()) == 4018

    def cleared(trigger: str) -> int:
        strategy = build("anthropic-clear-tool-uses-100k-keep-3", trigger=trigger)
        return outputs(view_of(strategy(h.items, ctx()))).count("[tool result cleared]")

    assert (cleared("4018"), cleared("4017")) == (0, 1)


def test_anthropic_clear_tool_uses_counted_trigger_fires_only_above_the_count():
    """With `trigger_tool_uses` set, context editing clears when the prompt holds *more* tool
    uses than it (the docs' `tool_uses` trigger): 4 results do not trigger at 4, do at 3 (the
    oldest cleared; keep 3), whatever the token size."""
    h = _four_bash_steps()

    def cleared(uses: str) -> int:
        strategy = build("anthropic-clear-tool-uses-100k-keep-3", trigger_tool_uses=uses)
        return outputs(view_of(strategy(h.items, ctx()))).count("[tool result cleared]")

    assert (cleared("4"), cleared("3")) == (0, 1)


def test_anthropic_clear_at_least_is_met_by_exactly_that_many_tokens():
    """Nothing is cleared only when the clearable results add up to *fewer* tokens than
    `clear_at_least`: one clearable 1,000-token result meets 1,000, not 1,001."""
    h = _four_bash_steps()

    def cleared(at_least: str) -> int:
        strategy = build(
            "anthropic-clear-tool-uses-100k-keep-3", trigger="100", clear_at_least=at_least
        )
        return outputs(view_of(strategy(h.items, ctx()))).count("[tool result cleared]")

    assert (cleared("1000"), cleared("1001")) == (1, 0)


def test_goose_compaction_re_sends_the_last_user_prompt():
    """After a compaction Goose re-sends the text of the *last* real user message, not the
    first: [summary, continuation, last user text]."""
    h = History().user("first task").step(text="done").user("second task").step(text="ok")
    view = view_of(build("goose-compact-80pct")(h.items, ctx(window=40_000, usage=35_000)))
    assert view.events and len(view.items) == 3
    resent = view.items[2]
    assert isinstance(resent, UserItem) and resent.text == "second task"


def test_goose_compacts_only_above_its_threshold():
    """Goose compacts when usage / window *exceeds* 80 % (`total_tokens / ctx > 0.8`): 32,000
    tokens of a 40,000 window are not a compaction yet, 32,001 are."""
    h = History().user("first task").step(text="done").user("second task")
    for usage, compacts in ((32_000, False), (32_001, True)):
        view = view_of(build("goose-compact-80pct")(h.items, ctx(window=40_000, usage=usage)))
        assert bool(view.events) is compacts, usage


def test_goose_compaction_counts_the_last_output_in_the_session_s_tokens():
    """Goose reads the session's total tokens, the last prompt and its output: 30,000 prompt
    tokens of a 40,000 window (75 %) with 3,000 of output (82.5 %) pass 80 %."""
    h = History().user("first task").step(text="done").user("second task")
    usage = Usage(input_tokens=30_000, output_tokens=3_000)
    c = dataclasses.replace(ctx(window=40_000), previous_usage=usage)
    assert view_of(build("goose-compact-80pct")(h.items, c)).events


def test_goose_auto_cutoff_and_batch_are_clamped():
    """The auto cutoff is clamped to [10, 500] visible calls and the batch to at least 3: a
    100k window gives 8, so 10, with a batch of max(10 / 5, 3) = 3; a 10M window gives 800,
    so 500."""

    assert _goose_summarized(11, 100_000) == 0  # 10 visible calls: at the cutoff
    assert _goose_summarized(12, 100_000) == 1
    assert _goose_summarized(16, 100_000) == 3  # 15: 5 over, a batch of 3
    assert _goose_summarized(501, 10_000_000) == 0
    assert _goose_summarized(502, 10_000_000) == 1


def _text_turns(n: int) -> History:
    """`n` items alternating user / text-only assistant (no pairs to repair): u0 a1 u2 …"""
    h = History()
    for k in range(n):
        if k % 2 == 0:
            h.user(f"u{k}")
        else:
            h.step(text=f"a{k}")
    return h


def test_openhands_recent_keeps_first_k_and_the_last_max_minus_k():
    """keep_first=2, max_events=4 on the system prompt and 6 messages (7 events): the first two
    events (the system prompt, message 0) and the last 4 - 2 = 2."""
    h = _text_turns(6)
    view = view_of(build("openhands-recent-keep-first-2-max-4")(h.items, ctx()))
    assert view.items == [h.items[0], *h.items[4:]]


def test_openhands_amortized_keeps_first_k_and_the_newest_half_max_minus_k():
    """max_size=6, keep_first=2: the system prompt and 7 messages (8 events) are cut to the
    first two events (the system prompt, message 0) and the newest 6 // 2 - 2 = 1; the 5
    between are forgotten."""
    h = _text_turns(7)
    view = view_of(build("openhands-amortized-6-keep-first-2")(h.items, ctx()))
    assert view.items == [h.items[0], h.items[6]]


def test_openhands_amortized_forgets_only_above_max_size():
    """Forgetting runs when the view holds *more* than max_size events: 6 events (the system
    prompt and 5 messages) stay whole at max 6, 7 are cut."""
    strategy = build("openhands-amortized-6-keep-first-2")
    six = _text_turns(5)
    assert view_of(strategy(six.items, ctx())).items == six.items
    seven = _text_turns(6)
    cut = view_of(build("openhands-amortized-6-keep-first-2")(seven.items, ctx()))
    assert len(cut.items) < len(seven.items) and cut.events


def _first_answer_fills_the_window():
    """The task and a first answer of four parallel reads: 1 + 1 + 4 + 4 = 10 events with the
    system prompt."""
    return History().user("task").step(
        *[("read_file", {"path": f"f{c}.py"}, f"body {c}") for c in range(4)]
    )


def test_openhands_recent_sends_each_item_once_when_its_head_answer_fills_the_tail():
    """keep_first 3 holds the system prompt, the task and the first answer (whose results
    follow it); the newest 9 - 3 = 6 events reach back to that answer, which the head holds
    already: every item is sent once, and nothing was forgotten, so no rewrite is reported."""
    h = _first_answer_fills_the_window()
    view = view_of(build("openhands-recent-keep-first-3-max-9")(h.items, ctx()))
    assert view.items == h.items
    assert not view.events


def test_openhands_amortized_reports_no_rewrite_when_nothing_can_be_forgotten():
    """Ten events pass max_size 9, but the head (keep_first 3: the task and the first answer)
    and the newest 9 // 2 - 3 = 1 event (the last result, kept with its call's answer) leave
    nothing between them: the view is unchanged and no rewrite is reported, request after
    request."""
    h = _first_answer_fills_the_window()
    strategy = build("openhands-amortized-100", max_size=9, keep_first=3)
    for _ in range(2):
        view = view_of(strategy(h.items, ctx()))
        assert view.items == h.items and not view.events


def _attention_over_two_prompts() -> tuple[History, View]:
    """The task, a read, a second user message, two reads (9 events with the system prompt),
    and the view `openhands-llm-attention-100` at max_size 8 sends of them."""
    h = History().user("task").step(("read_file", {"path": "a.py"}, "a"))
    h.user("also fix b").step(("read_file", {"path": "b.py"}, "b"))
    h.step(("read_file", {"path": "c.py"}, "c"))
    return h, view_of(build("openhands-llm-attention-100", max_size=8)(h.items, ctx()))


def test_openhands_llm_attention_ranks_user_messages_first_then_recency():
    """Events: the system prompt, the task, a read (2), a second user message, two reads (2
    each): 9 > max_size 8, a budget of 8 // 2 - 1 = 3 events. The two user messages rank above
    every step whatever their age (1 event each); the newest read (2) no longer fits."""
    h, view = _attention_over_two_prompts()
    assert view.items == [h.items[0], h.items[3]]
    assert [e.detail for e in view.events] == ["kept 2 ranked events"]


@pytest.mark.parametrize(
    "tool, is_error",
    [("write_file", False), ("run_tests", False), ("read_file", True)],
    ids=["write", "test-run", "error"],
)
def test_openhands_llm_attention_ranks_writes_tests_and_errors_above_newer_reads(tool, is_error):
    """Events: the system prompt, the task, then four steps of one call (2 each): 10 > 9, a
    budget of 9 // 2 - 1 = 3 events: the task (1) and one step (2). A write, a test run or an
    error ranks above the newer reads, so the oldest step is the one kept."""
    h = History().user("task").step((tool, {"path": "a.py"}, "ok"))
    for name in ("b", "c", "d"):
        h.step(("read_file", {"path": f"{name}.py"}, name))
    if is_error:
        h.items[2] = dataclasses.replace(h.items[2], is_error=True)
    view = view_of(build("openhands-llm-attention-100", max_size=9)(h.items, ctx()))
    assert view.items == h.items[:3]


def test_openhands_llm_attention_forgets_nothing_while_the_view_is_within_max_size():
    """Condensation runs when the view holds *more* than max_size events: 7 events at max 7
    are sent whole, with no ranking call."""
    h = History().user("task").step(("read_file", {"path": "a.py"}, "a"))
    h.user("also fix b").step(("read_file", {"path": "b.py"}, "b"))
    view = view_of(build("openhands-llm-attention-100", max_size=7)(h.items, ctx()))
    assert view.items == h.items and not view.summarizer_calls and not view.events


def test_openhands_browser_mask_reports_nothing_until_a_page_is_masked():
    """One browser page with keep 1: nothing is masked, no rewrite; a second page masks the
    first, and the rewrite counts the pages it masks at that request; a request that masks
    no new page names no rewrite."""
    h = History().user("look")
    h.step(("browser_navigate", {"url": "https://a.example"}, "page a " * 50))
    strategy = build("openhands-browser-mask-1")
    first = view_of(strategy(h.items, ctx()))
    assert first.items == h.items and not first.events
    h.step(("browser_navigate", {"url": "https://b.example"}, "page b " * 50))
    second = view_of(strategy(h.items, ctx()))
    assert outputs(second)[0] == "Visited URL https://a.example\nContent omitted"
    assert [e.detail for e in second.events] == ["1 browser output masked"]
    h.step(("browser_navigate", {"url": "https://c.example"}, "page c " * 50))
    third = view_of(strategy(h.items, ctx()))
    assert [e.detail for e in third.events] == ["1 browser output masked"]
    h.step(read("a.py", "code"))
    fourth = view_of(strategy(h.items, ctx()))
    assert fourth.items == [*third.items, *h.items[-2:]] and not fourth.events


def test_openhands_llm_attention_sends_one_fresh_ranking_call_listing_the_event_ids():
    """The ranking is a model call of its own, a fresh request (OpenHands' condensers do not
    share the main prefix), answered with the event ids most important first: the two user
    messages (3, 0), then the steps newest first (6, 4, 1)."""
    from replay.strategies._prompts import OPENHANDS_ATTENTION_INSTRUCTION

    h, view = _attention_over_two_prompts()
    [call] = view.summarizer_calls
    assert not call.reuse_main_prefix
    assert call.instruction == OPENHANDS_ATTENTION_INSTRUCTION
    assert json.loads(call.summary) == [3, 0, 6, 4, 1]


def test_openhands_llm_attention_keeps_the_first_events_whatever_their_rank():
    """keep_first 2 holds the system prompt and the task, outside the ranking: a budget of
    10 // 2 - 2 = 3 events for the rest, where the second user message (1) and the newest
    step (2) rank first."""
    h = History().user("task").step(("read_file", {"path": "a.py"}, "a"))
    h.user("also fix b").step(("read_file", {"path": "b.py"}, "b"))
    h.step(("read_file", {"path": "c.py"}, "c"))
    h.step(("read_file", {"path": "d.py"}, "d"))
    view = view_of(
        build("openhands-llm-attention-100", max_size=10, keep_first=2)(h.items, ctx())
    )
    assert view.items == [h.items[0], h.items[3], *h.items[8:]]
    assert json.loads(view.summarizer_calls[0].summary)[:2] == [3, 8]


def test_openhands_llm_summary_sends_a_fresh_request_of_the_events_cut_to_10000_chars():
    """The summarizer is a fresh request (not the main prefix): one message holding the
    previous summary block and one `<EVENT id=…>` per forgotten event, each event's text cut to
    10,000 characters."""
    h = History().user("task").step(("read_file", {"path": "big.py"}, "x" * 12_000))
    h.user("next").step(text="done").user("go on")
    view = view_of(build("openhands-llm-summary-120-keep-4", max_size=5, keep_first=1)(
        h.items, ctx()))
    [call] = view.summarizer_calls
    assert not call.reuse_main_prefix
    [sent] = call.input_items
    assert sent.text.startswith("<PREVIOUS SUMMARY>\n\n</PREVIOUS SUMMARY>")
    assert f"<EVENT id=2>\n{'x' * 10_000}\n</EVENT>" in sent.text
    assert "x" * 10_001 not in sent.text


def _text_exchange(*texts: str) -> History:
    """Alternating user and assistant text messages, a user message first."""
    h = History()
    for n, text in enumerate(texts):
        if n % 2 == 0:
            h.user(text)
        else:
            h.step(text=text)
    return h


def test_openhands_llm_summary_inserts_the_summary_after_the_first_events():
    """keep_first 2 is the system prompt and the task: the summary sits at that offset, after
    the task, and the newest 7 // 2 - 2 - 1 = 0 (at least one) event follows it."""
    h = _text_exchange("task", "a1", "u2", "a2", "u3", "a3", "u4")
    view = view_of(build("openhands-llm-summary-120-keep-4", max_size=7, keep_first=2)(
        h.items, ctx()))
    assert view.items[0] is h.items[0] and view.items[2:] == [h.items[-1]]
    assert isinstance(view.items[1], SummaryItem)


def test_openhands_llm_summary_sends_its_previous_summary_as_such_not_as_an_event():
    """A second condensation sends the first summary in the `<PREVIOUS SUMMARY>` block and one
    `<EVENT>` per other forgotten event only."""
    h = _text_exchange("task", "a1", "u2", "a2", "u3", "a3", "u4")
    strategy = build("openhands-llm-summary-120-keep-4", max_size=5, keep_first=1)
    first = view_of(strategy(h.items, ctx()))
    [summary] = [i for i in first.items if isinstance(i, SummaryItem)]
    more = _text_exchange("task", "a1", "u2", "a2", "u3", "a3", "u4", "a4", "u5", "a5", "u6")
    second = view_of(strategy([*h.items, *more.items[7:]], ctx()))
    [call] = second.summarizer_calls
    [sent] = call.input_items
    assert sent.text.startswith(f"<PREVIOUS SUMMARY>\n{summary.text}\n</PREVIOUS SUMMARY>")
    assert sent.text.count("<EVENT id=") == 4  # u4, a4, u5, a5


def test_openhands_llm_attention_keeps_the_best_ranked_step_whole_even_past_the_budget():
    """keep_first 2 (the system prompt, the task), max_size 12: a budget of 12 // 2 - 2 = 4
    events, and each answer of three parallel calls is 6. The best-ranked (newest) one is kept
    whole, over the budget, as the docs say a cut may keep a few events more than its limit;
    the others are forgotten."""
    h = _parallel_steps(3, 3)
    view = view_of(
        build("openhands-llm-attention-100", max_size=12, keep_first=2)(h.items, ctx())
    )
    assert view.items == [h.items[0], *h.items[9:]]


def test_openhands_window_keeps_the_first_real_user_message_not_injected_context():
    """The essential event is the first user message: context the harness injected before it
    is one of the others, halved away like them."""
    from replay.strategies._common import request_tokens

    h = History()
    h.items.append(UserItem("<environment_context>" + "e " * 300, injected=True, event_index=0))
    h.user("task")
    for n in range(6):
        h.step(read(f"f{n}", "x" * 400))
    c = ctx(window=request_tokens(h.items, ctx()) // 2)
    view = view_of(build("openhands-window-on-overflow")(h.items, c))
    assert h.items[1] in view.items and h.items[0] not in view.items
    assert view.events


def test_openhands_window_counts_the_system_prompt_in_the_request_size():
    """The overflow is the whole request's: messages that fit the window alone overflow it
    with the system prompt, and are halved."""
    from replay.strategies._common import request_tokens

    h = History().user("task")
    for n in range(4):
        h.step(read(f"f{n}", "x" * 400))
    c = dataclasses.replace(ctx(), system="s " * 400)
    c = dataclasses.replace(c, context_window=request_tokens(h.items, c) - 1)
    assert request_tokens(h.items, ctx()) <= c.context_window
    view = view_of(build("openhands-window-on-overflow")(h.items, c))
    assert len(view.items) < len(h.items) and view.events


def _pairs_whole(items) -> bool:
    """Every tool call sent has its result sent, and every result its call."""
    calls = {b.call_id for i in items if isinstance(i, AssistantItem) for b in i.tool_calls}
    results = {i.call_id for i in items if isinstance(i, ToolResultItem)}
    return calls == results


def test_openhands_recent_never_sends_a_head_call_without_its_result():
    """keep_first 3 ends inside the first answer (the system prompt, the task, its first call);
    its results are older than the newest events kept: the call and its results leave or stay
    together."""
    h = _parallel_steps(4, 2)
    view = view_of(build("openhands-recent-keep-first-3-max-6")(h.items, ctx()))
    assert view.items[0] is h.items[0] and view.items[-1] is h.items[-1]
    assert _pairs_whole(view.items)


def test_openhands_amortized_keeps_the_newest_message_when_the_head_takes_the_half():
    """keep_first 2 is max_size 4 // 2: no event is left for the tail, yet the newest message
    is still sent (the tail keeps at least one)."""
    h = _text_turns(6)
    view = view_of(build("openhands-amortized-4-keep-first-2")(h.items, ctx()))
    assert view.items == [h.items[0], h.items[-1]]


def test_prune_fires_only_when_the_view_passes_its_chars():
    """prune-at-N prunes when the view has *more than* N characters: a 2,116-character view is
    left alone at N = 2,116 and its oldest result stubbed at 2,115 (keep 1)."""
    from replay.strategies._common import chars

    h = History().user("u" * 100)
    h.step(("bash", {}, "x" * 1000)).step(("bash", {}, "y" * 1000))  # `bash({})`: 8 chars each
    assert chars(h.items) == 100 + 2 * (8 + 1000)

    def stubbed(n: int) -> list[bool]:
        view = view_of(build(f"prune-at-{n}-keep-1")(h.items, ctx()))
        return [o.startswith("[pruned: bash result") for o in outputs(view)]

    assert stubbed(2116) == [False, False] and stubbed(2115) == [True, False]


@pytest.mark.parametrize("mode", ["rotating", "chained"])
def test_compact_chain_fires_only_when_the_view_passes_its_chars(mode):
    """compact-rotating/chained-at-N fold when the view has *more than* N characters: a view of
    exactly N is left alone, at N − 1 it is folded."""
    from replay.strategies._common import chars

    h = History().user("u" * 100).step(("bash", {}, "x" * 1000), text="t")
    h.step(("bash", {}, "y" * 1000), text="t")
    size = chars(h.items)

    def folded(n: int) -> bool:
        return bool(view_of(build(f"compact-{mode}-at-{n}")(h.items, ctx())).events)

    assert (folded(size), folded(size - 1)) == (False, True)


def test_the_harness_estimate_rounds_characters_up():
    """est = ceil(chars / 4): 5 characters are 2 tokens, 1 is 1, none is 0."""
    from replay.strategies._common import est, item_est

    assert [est("x" * n) for n in (0, 1, 4, 5)] == [0, 1, 1, 2]
    assert item_est(ToolResultItem("c1", "bash", "x" * 4001)) == 1001


def test_codex_remote_compact_trims_only_what_codex_wrote_before_posting():
    """compact_remote.rs pops the last item while the history overflows *and* it is
    Codex-generated (a tool output): the model's last answer stops the trim (it was popped,
    with the tool output before it)."""
    h = History().user("task")
    h.step(("bash", {"command": "ls"}, "o" * 2000), text="running")
    h.step(text="Final answer: " + "z" * 6000)

    def posted(items: list, window: int) -> tuple:
        compact = build("codex-remote-compact-at-90pct")
        view = view_of(compact([*items, UserItem("next prompt")], ctx(window=window, usage=1400)))
        return view.summarizer_calls[0].input_items

    assert posted(h.items, 1500) == tuple(h.items)
    # A trailing tool output is Codex's own: popped with its call (a function_call item of its
    # own in Codex) while the history overflows; the text beside the call is the model's.
    first, text = posted(h.items[:3], 400)
    assert first is h.items[0] and [b.text for b in text.blocks] == ["running"]


def test_codex_remote_compact_never_trims_the_user_s_own_message():
    """A real user message ends the trim (Codex pops only what it wrote: tool outputs, harness
    messages); a harness message at the end is popped."""
    h = History().user("task").step(text="answer").user("also " + "q" * 6000)

    def posted(items: list) -> tuple:
        compact = build("codex-remote-compact-at-90pct")
        view = view_of(compact([*items, UserItem("next prompt")], ctx(window=400, usage=1400)))
        return view.summarizer_calls[0].input_items

    assert posted(h.items) == tuple(h.items)
    harness = UserItem("<environment_context>" + "e" * 6000 + "</environment_context>",
                       injected=True)
    assert posted([*h.items[:2], harness]) == tuple(h.items[:2])


def test_codex_remote_compact_trims_against_gpt_oss_s_own_96k_window():
    """The trim before posting counts against the window Codex gives the model (gpt-oss:
    96,000), not the model's 131,072: a 110,000-token tool output is popped with its call."""
    h = History().user("task").step(("bash", {"command": "ls"}, "o" * 440_000), text="running")
    c = ctx(window=131_072, usage=120_000, model="gpt-oss-120b")
    compact = build("codex-remote-compact-at-90pct")
    view = view_of(compact([*h.items, UserItem("next prompt")], c))
    first, text = view.summarizer_calls[0].input_items
    assert first is h.items[0] and [b.text for b in text.blocks] == ["running"]


@pytest.mark.parametrize("name", ["codex-compact-at-90pct", "codex-remote-compact-at-90pct"])
def test_codex_limits_gpt_oss_by_its_own_96k_window(name):
    """Codex's model info gives gpt-oss a 96,000-token window (the model has 131,072): its
    auto-compact limit is 86,400, which 90,000 reported tokens pass; 90 % of 131,072 they do
    not. A smaller window given to strategies still wins (95,000: a limit of 85,500)."""
    h = History().user("task").step(read("a.py", "x" * 400), text="reading").user("next")

    def compacts(model: str, usage: int, window: int = 131_072) -> bool:
        context = ctx(window=window, usage=usage, model=model)
        return bool(view_of(build(name)(h.items, context)).events)

    assert compacts("gpt-oss-120b", 90_000) and not compacts("gpt-5", 90_000)
    assert not compacts("gpt-oss-120b", 86_000) and compacts("gpt-oss-120b", 86_000, 95_000)


def test_openhands_llm_summary_counts_the_events_it_summarizes():
    """Its rewrite says how many OpenHands events the summary replaced, not history items."""
    from replay.strategies._openhands import events_in

    h = _parallel_steps(3, 2)
    view = view_of(build("openhands-llm-summary-120-keep-4", max_size=13, keep_first=1)(
        h.items, ctx()))
    middle = view.summarizer_calls[0].input_items  # one <EVENT> message per summarized item
    summarized = [i for i in h.items if i not in view.items]
    assert middle and [e.detail for e in view.events] == [
        f"{events_in(summarized)} events → summary"
    ]
    assert events_in(summarized) > len(summarized)  # parallel calls: more events than items


# --- shared building blocks (_common.py) ----------------------------------------------------


def test_sized_only_is_the_size_of_what_the_log_holds_only_by_its_size():
    """Thinking whose text the log lacks and a whole message known by its size count that
    size; logged text counts nothing here."""
    from replay.strategies._common import sized_only

    thinking = AssistantItem(
        blocks=(Block("thinking", estimated_tokens=900), Block("thinking", text="t",
                                                                estimated_tokens=50))
    )
    assert sized_only(thinking) == 900
    assert sized_only(UserItem("[context not in the log]", estimated_tokens=700)) == 700
    assert sized_only(UserItem("hello")) == 0
    assert sized_only(ToolResultItem("c1", "bash", "out")) == 0


def test_an_assistant_item_is_counted_block_by_block_with_each_counter():
    """Block by block (no seam between blocks), thinking with its text counted, thinking known
    only by its size left to `sized_only`; the count kept on the item is the counter's own, so
    another counter counts afresh."""
    from replay.strategies._common import count_item

    item = AssistantItem(
        blocks=(
            Block("thinking", text="hmm"),
            Block("thinking", estimated_tokens=40),
            Block("text", text="ok!"),
            Block("tool_call", call_id="c1", name="ls", arguments={}),
        )
    )
    assert count_item(item, len) == 3 + 3 + len("ls({})") + 40
    assert count_item(item, lambda s: 1) == 3 + 40


def test_the_head_is_hidden_prefix_system_message_and_sorted_tool_definitions():
    """Hidden prefix + system prompt (a message: its framing) + one block per tool definition,
    its JSON with sorted keys as the renderer counts it; `tools=False` leaves the tools out."""
    from replay.log import ToolDef
    from replay.strategies._common import head_tokens

    seen: list[str] = []

    def count(text: str) -> int:
        seen.append(text)
        return len(text)

    tool = ToolDef(name="t", description="d", input_schema={"type": "object"})
    c = StrategyContext(request_index=0, ts=T0, model="gpt-5", context_window=200_000,
                        count_tokens=count, system="sys prompt", tools=(tool,),
                        hidden_tokens=5, message_overhead=3)
    text = '{"description": "d", "input_schema": {"type": "object"}, "name": "t"}'
    assert head_tokens(c) == 5 + 10 + 3 + len(text)
    assert text in seen
    assert head_tokens(c, tools=False) == 5 + 10 + 3


def test_before_any_usage_the_reported_size_is_the_whole_counted_request():
    """No usage yet: the counted size of the view, as `request_tokens` counts it (its framing,
    the system prompt and the hidden prefix included)."""
    from replay.strategies._common import reported_tokens

    c = dataclasses.replace(ctx(), system="sys prompt", hidden_tokens=1000,
                            message_overhead=3)
    view = [UserItem("x" * 40)]
    # hidden + system ("sys prompt": 3 tokens at chars/4) and its framing + the message's
    assert reported_tokens(c, view) == 1000 + (3 + 3) + (10 + 3)


def test_a_history_that_opens_with_the_assistant_s_message_has_its_last_step_at_0():
    """`last_assistant` searches down to index 0 (-1 only when there is none)."""
    from replay.strategies._common import last_assistant, last_step, since_last_assistant

    answer = AssistantItem(blocks=(Block("tool_call", call_id="c1", name="ls", arguments={}),))
    result = ToolResultItem("c1", "ls", "a.py")
    assert last_assistant([answer, result]) == 0
    assert since_last_assistant([answer, result]) == [result]
    assert last_step([answer, result]) == [answer, result]
    assert last_assistant([UserItem("go"), result]) == -1


def test_stripping_calls_keeps_the_rest_of_the_item_and_its_event_index():
    """`strip_calls`: the item without the dropped calls (its event index kept), the item
    itself when none of its calls is dropped, None when nothing is left; the same drop gives
    the same object."""
    from replay.strategies._common import strip_calls

    calls = tuple(
        Block("tool_call", call_id=c, name="ls", arguments={"d": c}) for c in ("c1", "c2")
    )
    item = AssistantItem(blocks=(Block("text", text="two calls"), *calls), event_index=7)
    kept = strip_calls(item, {"c2", "other"})
    assert kept.blocks == item.blocks[:2] and kept.event_index == 7
    assert strip_calls(item, {"c2"}) is kept
    assert strip_calls(item, {"other"}) is item and strip_calls(item, set()) is item
    bare = AssistantItem(blocks=calls, event_index=8)
    assert strip_calls(bare, {"c1", "c2"}) is None


def test_replacing_blocks_with_equal_ones_gives_the_item_itself():
    """Equal blocks: the item itself (unchanged is the same object); other blocks: a new
    item with the event index kept, the same object for the same edit, another for another
    edit, raw arguments told apart beyond the text they render."""
    from replay.strategies._common import replace_blocks

    item = AssistantItem(blocks=(Block("text", text="a"), Block("text", text="b")), event_index=4)
    assert replace_blocks(item, (Block("text", text="a"), Block("text", text="b"))) is item
    edited = replace_blocks(item, (Block("text", text="a"),))
    assert edited is not item and edited.blocks == (Block("text", text="a"),)
    assert edited.event_index == 4
    assert replace_blocks(item, (Block("text", text="a"),)) is edited

    def patch(extra: int) -> Block:
        return Block("tool_call", call_id="p", name="apply_patch",
                     arguments={"input": "*** patch", "extra": extra}, arguments_format="raw")

    one, two = replace_blocks(item, (patch(1),)), replace_blocks(item, (patch(2),))
    assert one.blocks[0].rendered() == two.blocks[0].rendered() == "apply_patch(*** patch)"
    assert (one.blocks[0].arguments["extra"], two.blocks[0].arguments["extra"]) == (1, 2)


def test_repairing_pairs_drops_orphan_results_and_calls_whose_result_was_left_out():
    """A result whose call is not kept goes; a call whose logged result is not kept goes; a
    call not answered in the history yet stays (its result is still to come)."""
    from replay.strategies._common import AnsweredIds, repair_pairs

    def call(cid: str) -> Block:
        return Block("tool_call", call_id=cid, name="ls", arguments={"d": cid})

    first = AssistantItem(blocks=(call("c1"), call("c2")), event_index=1)
    old = AssistantItem(blocks=(call("c0"),), event_index=0)
    r0, r1, r2 = (ToolResultItem(c, "ls", c) for c in ("c0", "c1", "c2"))
    pending = AssistantItem(blocks=(call("c3"),), event_index=5)
    user = UserItem("go")
    history = [user, old, r0, first, r1, r2, pending]
    kept = [user, r0, first, r2, pending]
    out = repair_pairs(kept, history)
    assert len(out) == 4 and out[0] is user and out[2] is r2 and out[3] is pending
    assert [b.call_id for b in out[1].tool_calls] == ["c2"] and out[1].event_index == 1
    ids = AnsweredIds()
    assert repair_pairs(kept, history, ids.sync(history)) == out


def _step(cid: str, event_index: int = -1) -> tuple[AssistantItem, ToolResultItem]:
    call = Block("tool_call", call_id=cid, name="ls", arguments={"d": cid})
    return AssistantItem(blocks=(call,), event_index=event_index), ToolResultItem(cid, "ls", cid)


def test_an_empty_rule_result_falls_back_to_the_last_user_message_else_the_last_step():
    from replay.strategies._common import nonempty

    (a1, r1), (a2, r2) = _step("c1"), _step("c2")
    first, last = UserItem("first"), UserItem("last", injected=True)
    kept = [r2]
    assert nonempty(kept, [first, a1, r1]) is kept
    assert nonempty([], [first, a1, r1, last, a2, r2]) == [last]
    assert nonempty([], [a1, r1, a2, r2]) == [a2, r2]


def test_a_kept_suffix_never_starts_inside_a_call_s_results():
    """Not at a result, nor at a message between a call and its results; anywhere else
    (before the next assistant message, or with no result after it) it may."""
    from replay.strategies._common import valid_start

    (a1, r1), (a2, r2) = _step("c1"), _step("c2")
    steer = UserItem("also check b.py")
    items = [UserItem("go"), a1, steer, r1, UserItem("next"), a2, r2]
    assert [valid_start(items, n) for n in range(len(items) + 1)] == [
        True, True, False, False, True, True, False, True
    ]
    assert valid_start([UserItem("only")], 0)


def test_message_groups_join_a_run_of_user_role_items_only():
    from replay.strategies._common import MessageGroups, message_groups

    (a1, r1), (a2, r2) = _step("c1"), _step("c2")
    items = [UserItem("go"), a1, r1, UserItem("steer"), a2, a2, r2]
    expected = [[0], [1], [2, 3], [4], [5], [6]]
    assert message_groups(items) == expected
    groups = MessageGroups()
    groups.sync(items[:3])
    assert groups.sync(items) == expected and groups.group_of == [0, 1, 2, 2, 3, 4, 5]


def test_the_between_prompts_trigger_needs_a_real_prompt_after_an_exchange():
    from replay.strategies._common import is_real_user, trigger_at_user_turn

    a1, r1 = _step("c1")
    injected = UserItem("<system-reminder>", injected=True)
    assert is_real_user(UserItem("go")) and not is_real_user(injected)
    assert not is_real_user(r1)
    assert trigger_at_user_turn([UserItem("go"), a1, r1, UserItem("next")])
    assert not trigger_at_user_turn([UserItem("go")])
    assert not trigger_at_user_turn([UserItem("go"), a1, r1, injected])
    assert not trigger_at_user_turn([UserItem("go"), a1, r1])
    assert not trigger_at_user_turn([])


@pytest.mark.parametrize(
    "key, value",
    [("offset", 10), ("limit", 5), ("view_range", [1, 20]), ("start_line", 3), ("end_line", 9),
     ("line_range", "1-5")],
)
def test_each_harness_s_range_argument_makes_a_read_partial(key, value):
    """offset/limit (Claude Code, pi, opencode, Gemini CLI), view_range (OpenHands, Goose),
    start_line/end_line and line_range (Roo)."""
    from replay.strategies._common import reads_part_of_file

    assert reads_part_of_file({"path": "a.py", key: value})
    assert not reads_part_of_file({"path": "a.py", key: None})
    assert not reads_part_of_file({"path": "a.py"}) and not reads_part_of_file("a.py")


def test_a_result_s_kind_is_its_call_s_with_the_editor_command():
    from replay.strategies._common import result_kind

    view = ToolResultItem("c1", "str_replace_editor", "1\tx", arguments={"command": "view"})
    edit = ToolResultItem("c2", "str_replace_editor", "ok", arguments={"command": "create"})
    assert (result_kind(view), result_kind(edit)) == ("read", "write")


@pytest.mark.parametrize(
    "command, kind",
    [("view", "read"), ("create", "write"), ("str_replace", "write"), ("insert", "write"),
     ("undo_edit", "write"), ("list", None)],
)
def test_an_editor_s_command_says_what_it_does(command, kind):
    """Every command of Anthropic's text editor and `str_replace_editor`; another command
    (or no arguments) says nothing, and a tool named like no kind stays `other`."""
    from replay.strategies._common import editor_kind, tool_kind

    assert editor_kind({"command": command, "path": "a.py"}) == kind
    assert tool_kind("editor", {"command": command}) == (kind or "other")
    assert editor_kind(None) is None and editor_kind(["view"]) is None


@pytest.mark.parametrize(
    "name, kind",
    [
        ("Read", "read"), ("MultiEdit", "write"), ("Bash", "shell"), ("Glob", "list"),
        ("LS", "list"), ("Grep", "search"), ("WebFetch", "web"), ("URLFetch", "web"),
        ("read_file", "read"), ("run_shell_command", "shell"), ("execute_bash", "shell"),
        ("apply_patch", "write"), ("pytest", "test"), ("browser_navigate", "browser"),
        ("todo", "other"), (None, "other"),
    ],
)
def test_tool_names_are_split_into_words_at_underscores_and_case_changes(name, kind):
    """CamelCase words and capitalized acronyms are words of their own (`URLFetch` is `URL`
    and `Fetch`), so one keyword list covers every harness's naming."""
    from replay.strategies._common import tool_kind

    assert tool_kind(name) == kind


def test_transcripts_cut_only_longer_results_label_errors_only_and_skip_sized_messages():
    """A result of exactly `result_chars` is sent whole; opencode's error label is for a failed
    tool's result only; a message known only by its size is left out (its text is a
    placeholder); pi writes arguments as JSON.stringify does (non-ASCII as is)."""
    from replay.strategies._common import transcript

    a1, r1 = _step("c1")
    exact = ToolResultItem("c1", "ls", "R" * 2000)
    unlogged = UserItem("[context not in the log: ~700 tokens]", estimated_tokens=700)
    assert transcript([UserItem("go"), a1, exact, unlogged], "opencode") == (
        "Here is the conversation so far:\n\n<conversation>\n[User]: go\n\n"
        '[Assistant tool call]: ls({"d": "c1"})\n\n'
        f"[Tool result]: {'R' * 2000}\n</conversation>"
    )
    call = Block("tool_call", call_id="c2", name="read", arguments={"path": "café.py"})
    assert transcript([AssistantItem(blocks=(call,))], "pi") == (
        '<conversation>\n[Assistant tool calls]: read(path="café.py")\n</conversation>'
    )


def test_a_logged_summary_is_used_once_then_the_stand_in_takes_over():
    """Each logged summary is used once, newest first: two logged by the same request give
    one compaction the newest, and the next one an extractive stand-in."""
    from types import SimpleNamespace

    from replay.strategies._common import SummarySource

    logged = [SimpleNamespace(summary="older"), SimpleNamespace(summary="newer")]
    c, items = ctx(logged=logged), [UserItem("fix the parser in src/app.py")]
    source = SummarySource()
    assert source.text(c, items) == ("newer", "logged")
    assert source.text(c, items)[1] == "extractive"
    # the stand-in: five sections (Task Overview … Context to Preserve), or prose without them
    assert "Task Overview" in SummarySource().text(ctx(), items)[0]
    assert "Task Overview" not in SummarySource().text(ctx(), items, structured=False)[0]


def test_summarizer_calls_say_what_they_share_with_the_main_request():
    """A fresh call sends the transcript as one injected user message and its sized-only
    messages as themselves; a forked call re-sends the view, with or without the tools; a
    summary item records the event indexes it replaces (an item the log does not hold names
    none; an earlier summary it folds, what that one replaced) and the role it is sent as."""
    from replay.strategies._common import forked_call, fresh_call, summary_item, transcript

    unlogged = UserItem("[context not in the log]", estimated_tokens=700)
    a1, r1 = _step("c1", event_index=2)
    items = [UserItem("go", event_index=0), unlogged, a1, r1]
    fresh = fresh_call(items, "Summarize.", "S", style="goose", model="weak")
    (body,) = fresh.input_items
    assert body.injected and body.text == transcript(items, "goose")
    assert fresh.unlogged == (unlogged,) and not fresh.reuse_main_prefix
    assert fresh.model == "weak" and fresh.instruction == "Summarize." and fresh.summary == "S"
    forked = forked_call(items, "Summarize.", "S", with_tools=False)
    assert forked.input_items == tuple(items) and forked.reuse_main_prefix
    assert not forked.with_tools and forked_call(items, "i", "s").with_tools
    summary = summary_item("S", [items[0], a1, r1], source="logged", role="assistant")
    assert (summary.replaces, summary.source, summary.role) == ((0, 2), "logged", "assistant")
    a2, r2 = _step("c2", event_index=5)
    assert summary_item("T", [summary, unlogged, items[0], a2, r2]).replaces == (0, 2, 5)


# --- hand mutation pass on the shipped harness strategies (rules pinned from the research) ---


def test_claudecode_files_fill_the_total_budget_exactly_and_no_further():
    """Re-attached files add up to at most `files_total` tokens: two 5,000-token files fill a
    10,000 budget exactly (both re-attached), the third gets only its path."""
    from replay.strategies.claudecode_autocompact import restored_files

    h = History().user().step(
        ("Read", {"file_path": "a.py"}, "a" * 20_000),
        ("Read", {"file_path": "b.py"}, "b" * 20_000),
        ("Read", {"file_path": "c.py"}, "c" * 20_000),
    )
    c, b, a = (i.text for i in restored_files(h.items, ctx(), 5, 5000, 10_000))
    assert c.endswith("c" * 20_000) and b.endswith("b" * 20_000)
    assert a.startswith("The file a.py was read before compaction (too large")


def test_claudecode_re_attaches_at_most_files_files_the_newest():
    """At most `files` files come back, the most recently read first."""
    from replay.strategies.claudecode_autocompact import restored_files

    h = History().user().step(*[("Read", {"file_path": f"{n}.py"}, f"v{n}") for n in range(7)])
    texts = [i.text for i in restored_files(h.items, ctx(), 5, 5000, 50_000)]
    assert [t[-2:] for t in texts] == ["v6", "v5", "v4", "v3", "v2"]


def test_claudecode_microcompact_clears_another_harness_s_writes_by_kind():
    """Claude Code clears Edit and Write results; for another harness's tools the kind decides,
    so its file writes and edits are cleared as well (all but the newest result)."""
    h = History().user()
    for n, tool in enumerate(["write_file", "edit", "apply_patch", "read_file"]):
        h.step((tool, {"path": f"f{n}"}, f"out {n} " + "x" * 100))
    cold = view_of(build("claudecode-microcompact-time-60m-keep-1")(
        h.items, ctx(ts=T0, previous_ts=T0 - timedelta(minutes=60))
    ))
    assert outputs(cold)[:3] == [LITERAL_CLEARED] * 3


def test_codex_keeps_user_messages_newest_first_until_the_budget_is_spent():
    """Codex walks the user messages newest first: one that fits is kept whole, the first that
    does not is middle-truncated to what is left, and once nothing is left it stops (no
    marker-only message for an older one)."""
    from replay.strategies.codex_compact import newest_within

    assert newest_within(["a" * 8, "b" * 40], 10) == [(1, "b" * 40)]
    assert newest_within(["a" * 40, "b" * 20], 10) == [
        (0, "a" * 10 + "…5 tokens truncated…" + "a" * 10),
        (1, "b" * 20),
    ]


def test_codex_compaction_request_drops_oldest_items_until_it_fits():
    """Codex drops the oldest item while the compaction request overflows: one that fills the
    window exactly is sent as it is, and the last item is never dropped."""
    from replay.strategies.codex_compact import drop_oldest_until_fits

    items = [UserItem("u" * 40, event_index=n) for n in range(3)]  # 10 tokens each
    assert drop_oldest_until_fits(items, ctx(window=20), "") == items[1:]
    assert drop_oldest_until_fits(items, ctx(window=5), "") == items[2:]


def test_codex_an_empty_summary_becomes_codex_s_placeholder():
    """An empty summarizer answer is sent as "(no summary available)" after the prefix."""
    from replay.strategies._prompts import LITERAL_CODEX_SUMMARY_PREFIX

    class Logged:
        summary = "  "

    h = History().user().step(read("a.ts", "x" * 400), text="ok")
    view = view_of(build("codex-compact-at-90pct")(h.items, ctx(usage=10**6, logged=[Logged()])))
    assert view.items[-1].text == LITERAL_CODEX_SUMMARY_PREFIX + "\n(no summary available)"


def test_codex_sends_its_compaction_request_without_tools():
    """Codex's compaction request re-sends the instructions and the history with `tools=[]`."""
    h = History().user().step(read("a.ts", "x" * 400), text="ok")
    (call,) = view_of(build("codex-compact-at-90pct")(h.items, ctx(usage=10**6))).summarizer_calls
    assert call.reuse_main_prefix and not call.with_tools
    assert call.input_items == tuple(h.items)


def test_codex_remote_compact_counts_the_instructions_in_the_overflow():
    """compact_remote.rs trims while est(history) + est(base instructions) exceeds the window: a
    history that fits alone is trimmed when the instructions push it over."""
    import dataclasses

    h = History().user("task")
    h.step(("bash", {"command": "ls"}, "o" * 2000), text="running")  # ~512 tokens in all

    def posted(system: str) -> tuple:
        compact = build("codex-remote-compact-at-90pct")
        at = dataclasses.replace(ctx(window=600, usage=1400), system=system)
        return view_of(compact([*h.items, UserItem("next prompt")], at)).summarizer_calls[
            0
        ].input_items

    assert posted("") == tuple(h.items)
    # 200 more tokens: the tool output is popped, with its call
    first, text = posted("s" * 800)
    assert first is h.items[0] and [b.type for b in text.blocks] == ["text"]


def test_codex_tool_trunc_keeps_an_output_of_exactly_1_2_times_the_policy():
    """Bytes policy (non-codex model): 10,000 → budget 12,000 bytes. 12,000 bytes stay whole;
    12,001 keep 6,000 + 6,000 bytes around a marker counting the characters cut."""
    h = History().user().step(("read_file", {"path": "a"}, "x" * 12_000))
    h.step(("read_file", {"path": "b"}, "y" * 12_001))
    h.step(("read_file", {"path": "c"}, "é" * 6_001))  # 12,002 bytes
    exact, over, wide = outputs(view_of(build("codex-tool-trunc-10k")(h.items, ctx())))
    assert exact == "x" * 12_000
    assert over == "y" * 6_000 + "…1 chars truncated…" + "y" * 6_000
    assert wide == "é" * 3_000 + "…1 chars truncated…" + "é" * 3_000


def test_codex_tool_trunc_token_policy_rounds_the_estimate_up():
    """Token policy: tokens = ceil(bytes / 4). Limit 10 → budget 12 tokens (48 bytes): 48 bytes
    stay whole, 49 bytes are 13 tokens and keep 24 + 24 bytes around "…1 tokens truncated…"."""
    h = History().user().step(("read_file", {"path": "a"}, "a" * 48))
    h.step(("read_file", {"path": "b"}, "b" * 49))
    exact, over = outputs(view_of(build("codex-tool-trunc-10-tokens")(h.items, ctx())))
    assert exact == "a" * 48
    assert over == "b" * 24 + "…1 tokens truncated…" + "b" * 24


def test_codex_tool_trunc_counts_tokens_for_codex_models_and_bytes_otherwise():
    """Default policy: Tokens(10,000) for *-codex models (budget 12,000 tokens ≈ 48,000
    bytes), Bytes(10,000) for the others (budget 12,000 bytes)."""
    h = History().user().step(("read_file", {"path": "a"}, "a" * 20_000))
    trunc = build("codex-tool-trunc-10k")
    assert outputs(view_of(trunc(h.items, ctx(model="gpt-5-codex")))) == ["a" * 20_000]
    (cut,) = outputs(view_of(build("codex-tool-trunc-10k")(h.items, ctx(model="gpt-5"))))
    assert cut == "a" * 6_000 + "…8000 chars truncated…" + "a" * 6_000


def test_codex_drop_oldest_compacts_only_when_the_window_is_full():
    """codex-compact-drop-oldest: the limit is the whole window (pct 100), not 90 %."""
    h = History().user("task").step(text="ok").user("next")
    for usage, compacts in ((180_000, False), (199_999, False), (200_000, True)):
        view = view_of(build("codex-compact-drop-oldest")(h.items, ctx(usage=usage)))
        assert bool(view.summarizer_calls) is compacts


def test_codex_drop_oldest_passes_its_user_message_budget_on():
    h = History().user("a" * 40).step(text="ok").user("b" * 40).step(text="ok")  # 10 tokens each
    strategy = build("codex-compact-drop-oldest", keep_user_tokens=10)
    view = view_of(strategy(h.items, ctx(usage=10**6)))
    users = [i for i in view.items if isinstance(i, UserItem) and not isinstance(i, SummaryItem)]
    assert [i.text for i in users] == ["b" * 40]


def test_opencode_prune_stops_at_the_previous_summary():
    """The walk stops at the previous compaction's summary: what lies before it is not sent
    any more and is never pruned (without the summary, old0 would be: see the test above)."""
    h = _opencode_turns()
    at = next(n for n, i in enumerate(h.items) if isinstance(i, UserItem) and i.text == "turn 1")
    items = [*h.items[:at], SummaryItem("earlier work", source="logged"), *h.items[at:],
             UserItem("turn 4")]
    view = view_of(build("opencode-prune-40k-20k", protect="1000", minimum="500")(items, ctx()))
    assert LITERAL_CLEARED not in outputs(view) and not view.events


def test_opencode_tool_trunc_counts_bytes_with_their_newlines():
    """The 50 KB cap is on UTF-8 bytes, each kept line costing its bytes + 1 for its newline.
    Cap 1 KB (1,024): three lines of 200 "é" (400 bytes) are 1,202 bytes but 602 characters;
    two lines fit (802 bytes), 400 are cut."""
    from replay.strategies.opencode_tool_trunc import HINT

    line = "é" * 200
    h = History().user().step(("bash", {"command": "cat"}, "\n".join([line] * 3)))
    (out,) = outputs(view_of(build("opencode-tool-trunc-2000l-1kb")(h.items, ctx())))
    path = "~/.local/share/opencode/tool-output/c1.txt"
    assert out == f"{line}\n{line}\n\n...400 bytes truncated...\n\n" + HINT.format(path=path)


def test_opencode_read_cuts_only_lines_longer_than_2000_chars():
    h = History().user().step(read("a.ts", "x" * 2000 + "\n" + "y" * 2001))
    (out,) = outputs(view_of(build("opencode-tool-trunc-2000l-50kb")(h.items, ctx())))
    assert out == "x" * 2000 + "\n" + "y" * 2000 + "... (line truncated to 2000 chars)"


def test_opencode_tool_trunc_names_bytes_when_the_byte_cap_stops_it_first():
    """Over both caps, the marker counts what stopped the head: here the 1 KB cap after two
    401-byte lines, before the 3-line cap; 2,004 - 802 = 1,202 bytes are cut."""
    h = History().user().step(("bash", {"command": "cat"}, "\n".join(["a" * 400] * 5)))
    (out,) = outputs(view_of(build("opencode-tool-trunc-3l-1kb")(h.items, ctx())))
    assert out.startswith("a" * 400 + "\n" + "a" * 400 + "\n\n...1202 bytes truncated...\n\n")


def test_opencode_v1_restarts_at_the_summary_and_a_continue_prompt():
    """After an automatic compaction opencode sends the summary (as the assistant's) and its
    synthetic "Continue if you have next steps…" user message; nothing older."""
    from replay.strategies._prompts import LITERAL_OPENCODE_CONTINUE

    h = History().user().step(read("a.ts", "x" * 400)).step(text="done")
    view = view_of(build("opencode-compact-v1")(h.items, ctx(usage=168_001)))
    summary, cont = view.items
    assert isinstance(summary, SummaryItem) and summary.role == "assistant"
    assert isinstance(cont, UserItem) and cont.text == LITERAL_OPENCODE_CONTINUE


def test_opencode_tail_keeps_at_least_2000_tokens():
    """tail = clamp(usable / 4, 2,000, 15,000): window 58,000 - 32,000 output - 20,000 reserve
    = 6,000 usable, a quarter is 1,500 → 2,000: the two newest 1,000-token turns are kept."""
    h = History()
    for n in range(4):
        h.user(f"t{n}").step(text="x" * 3996)  # 1 + 999 estimated tokens
    strategy = build("opencode-compact-tail-prepend")
    view = view_of(strategy(h.items, ctx(window=58_000, usage=10_000)))
    assert [i.text for i in view.items[2:-1] if isinstance(i, UserItem)] == ["t2", "t3"]


def test_opencode_tail_keeps_the_longest_valid_suffix_of_the_turn_that_does_not_fit():
    """Budget 2,000: the newest turn (1,000) fits whole; the one before (1,001) does not, so
    its longest suffix that fits is kept — from its first assistant message (100 + 900) — but
    never one that starts at a tool result."""
    from replay.strategies.opencode_compact_tail import tail_start

    newest = History().user("t3").step(text="x" * 3996).items  # 1 + 999
    h = History().user("t2").step(text="z" * 400).step(text="w" * 3600)  # 1 + 100 + 900
    assert tail_start([*h.items, *newest], 2000) == 1
    h = History().user("t2").step(read("a.ts", "r" * 3600), text="c" * 400).step(text="f" * 40)
    # user 1, call 100 + its arguments, result 900, answer 10: from the call it is over 1,000,
    # from the result it would fit but cut the call: the suffix starts at the answer
    assert tail_start([*h.items, *newest], 2000) == 3


def test_opencode_suffix_names_the_first_retained_item_in_400_chars():
    h = History()
    for n in range(4):
        h.user(f"t{n}" + "q" * 598).step(text="x" * 3400)  # 150 + 850 estimated tokens
    strategy = build("opencode-compact-tail-suffix")
    (call,) = view_of(strategy(h.items, ctx(window=58_000, usage=10_000))).summarizer_calls
    first = ("t2" + "q" * 598)[:400]
    assert call.instruction.endswith(f"<first-retained-item>{first}</first-retained-item>")


def test_opencode_tail_on_a_window_smaller_than_output_and_reserve_leaves_out_the_output():
    """Window 40,000 - 32,000 - 20,000 is negative: usable falls back to window - reserve
    (20,000), so 10,000 reported tokens do not compact and 20,000 do."""
    h = History()
    for n in range(4):
        h.user(f"t{n}").step(text="x" * 11_996)  # 3,000 tokens a turn: over the 5,000 tail
    strategy = build("opencode-compact-tail-prepend")
    assert not view_of(strategy(h.items, ctx(window=40_000, usage=10_000))).events
    assert view_of(strategy(h.items, ctx(window=40_000, usage=20_000))).events


def test_pi_file_lists_leave_modified_files_out_of_the_read_files():
    from replay.strategies.pi_compact import file_lists

    h = History().user().step(read("a.py", "1"), read("b.py", "2"))
    h.step(("write", {"path": "a.py", "content": "3"}, "ok"))
    assert file_lists(h.items) == (
        "\n\n<read-files>\nb.py\n</read-files>\n\n<modified-files>\na.py\n</modified-files>"
    )


def test_anthropic_clear_tool_uses_over_the_trigger_with_nothing_to_clear_changes_nothing():
    """Over the trigger with no more results than `keep`: no result is cleared, no event."""
    h = History().user().step(read("a", "1"), read("b", "2"), read("c", "3"))
    view = view_of(build("anthropic-clear-tool-uses-0-keep-3")(h.items, ctx()))
    assert view.items == h.items and not view.events


def test_pi_split_turn_appends_the_turn_prefix_summary_after_a_rule():
    """A cut inside a turn: the turn's prefix is summarized on its own and appended after
    "---" under "**Turn Context (split turn):**"."""
    h = History().user("task")
    for n in range(4):
        h.step(read(f"f{n}.py", "x" * 4000))  # 1,000 tokens each
    h.step(text="done").user("next")
    view = view_of(build("pi-compact-16k-1k")(h.items, ctx(window=20_000, usage=19_000)))
    assert len(view.summarizer_calls) == 1  # nothing before the turn: the prefix call only
    assert "\n\n---\n\n**Turn Context (split turn):**\n\n" in view.items[0].text


def test_pi_compacts_mid_run_when_the_request_overflows_the_window():
    """An overflow compacts whenever it happens (pi retries the request), not only between
    prompts: mid-run, a request over the window is compacted."""
    h = History().user("task")
    for n in range(4):
        h.step(read(f"f{n}.py", "x" * 4000), text="step")
    h.step(text="checking the results")  # a valid cut after the last 1,000-token result
    strategy = build("pi-compact-16k-1k")
    assert not view_of(strategy(h.items, ctx(window=100_000, usage=1_000))).events
    assert view_of(strategy(h.items, ctx(window=3_000, usage=1_000))).events


def test_anthropic_clear_thinking_keeps_the_newest_turn_that_has_thinking():
    """keep 1 counts turns with thinking: a newer turn without any does not displace it."""
    h = History().user().step(read("f", "x"), thinking="thought", text="t")
    h.user("thanks").step(text="you're welcome")
    view = view_of(build("anthropic-clear-thinking-keep-1")(h.items, ctx()))
    assert view.items == h.items and not view.events


def test_anthropic_clear_thinking_empties_an_answer_that_was_only_thinking():
    h = History().user().step(thinking="only a thought")
    h.user("next").step(thinking="new thought", text="t")
    view = view_of(build("anthropic-clear-thinking-keep-1")(h.items, ctx()))
    assert [(b.type, b.text) for b in view.items[1].blocks] == [("text", "")]


def test_cline_max_allowed_for_other_windows_is_the_larger_of_minus_40k_and_80pct():
    from replay.strategies.cline_truncate import max_allowed

    assert (max_allowed(100_000), max_allowed(32_000), max_allowed(400_000)) == (
        80_000, 25_600, 360_000
    )


def test_cline_first_truncation_counts_the_messages_after_the_first_pair():
    """27 API messages: n = floor((27 - 2) / 4) * 2 = 12, messages 2..13 deleted (13 is an
    assistant message; its result, message 14, goes with it): the first kept step is s7."""
    h = History().user()
    for n in range(13):
        h.step(read(f"f{n}.ts", "x" * 400), text=f"s{n}")
    view = view_of(build("cline-truncate-keep-first-pair-half")(h.items, ctx(usage=170_000)))
    assert len(view.items) == 14 and view.items[2].blocks[0].text == "s7"
    # the notice replaces the first assistant message's text (s0), once
    from replay.strategies._prompts import LITERAL_CLINE_NOTICE

    assert [b.text for b in view.items[1].blocks if b.type == "text"] == [LITERAL_CLINE_NOTICE]


def test_cline_moves_the_end_of_the_deleted_range_back_to_an_assistant_message():
    """Two answers in a row shift the user/assistant alternation: with 25 API messages
    (n = 10, end = 11) message 11 is the user's "q3", so the range ends at 10 and q3 stays."""
    h = History().user("task").step(read("a.ts", "x" * 400), text="s0")
    h.step(text="a").step(text="b")  # API messages 3 and 4: both the assistant's
    for n in range(10):
        h.user(f"q{n}").step(text=f"answer {n}")  # messages 5, 7, ...: the user's
    view = view_of(build("cline-truncate-keep-first-pair-half")(h.items, ctx(usage=170_000)))
    assert view.items[2].text == "q3"


def test_opencode_tool_trunc_keeps_lines_that_fill_the_byte_cap_exactly():
    """Two 511-char lines cost 512 bytes each with their newline: 1,024, the 1 KB cap exactly,
    so both are kept; the third is cut (1,535 - 1,024 = 511 bytes)."""
    h = History().user().step(("bash", {"command": "cat"}, "\n".join(["a" * 511] * 3)))
    (out,) = outputs(view_of(build("opencode-tool-trunc-2000l-1kb")(h.items, ctx())))
    assert out.startswith("a" * 511 + "\n" + "a" * 511 + "\n\n...511 bytes truncated...\n\n")


def test_cline_dedup_replaces_only_file_reads():
    """Only reads are de-duplicated: two writes of one path keep their results."""
    from replay.strategies._prompts import LITERAL_CLINE_DUP_READ

    h = History().user()
    for n in range(6):
        h.step(("write_file", {"path": "same.ts", "content": "c"}, "W" * 2000), text=f"s{n}")
    view = view_of(build("cline-dedup-file-reads")(h.items, ctx(usage=170_000)))
    assert LITERAL_CLINE_DUP_READ not in outputs(view)


def test_cline_dedup_saving_of_exactly_the_fraction_skips_the_truncation():
    """Cline stops after the duplicate-read pass when it saved at least the fraction (>=)."""
    from replay.strategies._prompts import LITERAL_CLINE_DUP_READ
    from replay.strategies._view import item_chars

    h = History().user()
    for n in range(6):
        h.step(read("same.ts", "S" * 2000), text=f"s{n}")
    before = sum(item_chars(i) for i in h.items)
    saved = 5 * (2000 - len(LITERAL_CLINE_DUP_READ))
    at = view_of(build("cline-dedup-file-reads", saving=str(saved / before))(
        h.items, ctx(usage=170_000)))
    assert len(at.items) == len(h.items)  # deduplicated, nothing deleted


def test_cline_dedup_saving_40pct_is_enough_at_the_default_30pct():
    """Default fraction 0.3: a duplicate read saving about 40 % of the characters stops Cline
    before the truncation."""
    from replay.strategies._prompts import LITERAL_CLINE_DUP_READ

    h = History().user().step(read("a.ts", "S" * 2000)).step(read("a.ts", "S" * 2000))
    h.step(("bash", {"command": "ls"}, "B" * 500)).step(text="done")
    view = view_of(build("cline-dedup-file-reads")(h.items, ctx(usage=170_000)))
    assert len(view.items) == len(h.items) and LITERAL_CLINE_DUP_READ in outputs(view)


def test_cline_dedup_saving_is_the_fraction_it_is_given():
    """The same ~40 % saving is not enough at `saving=0.5`: Cline truncates as well."""
    h = History().user().step(read("a.ts", "S" * 2000)).step(read("a.ts", "S" * 2000))
    h.step(("bash", {"command": "ls"}, "B" * 500)).step(text="done")
    view = view_of(build("cline-dedup-file-reads", saving="0.5")(h.items, ctx(usage=170_000)))
    assert [e.kind for e in view.events] == ["prune", "drop"]


def test_gemini_mask_shows_250_chars_each_side_and_leaves_short_outputs_alone():
    """A masked output keeps its first and last 250 characters; an output the mask would not
    shorten ("ok") stays as it is."""
    from replay.strategies._prompts import LITERAL_GEMINI_MASK

    h = History().user().step(("bash", {"command": "true"}, "ok"))
    for n in range(5):
        h.step(("bash", {"command": str(n)}, "a" * 10 + f"{n}" * 3980 + "z" * 10))
    h.step(("bash", {"command": "now"}, "N" * 4000))
    strategy = build("gemini-mask-tool-out-50k-30k", protect="2000", minimum="3000")
    outs = outputs(view_of(strategy(h.items, ctx())))
    assert outs[0] == "ok"
    assert outs[1] == LITERAL_GEMINI_MASK.format(
        head="a" * 10 + "0" * 240, tail="0" * 240 + "z" * 10, path=".gemini/tmp/tool-outputs/c2.txt"
    )


def test_gemini_compress_splits_at_the_user_message_exactly_at_the_fraction():
    """The split is the first user message at or after (1 - keep) of the characters: with
    four equal exchanges and keep 50 %, the third prompt starts exactly at half."""
    from replay.strategies.gemini_compress import split_point

    h = History()
    for n in range(4):
        h.user(f"q{n}").step(text=f"r{n}")
    assert split_point(h.items, 0.5) == 4


def test_gemini_compress_splits_only_at_a_real_user_prompt():
    """Injected context is no split point: with the third prompt injected, the split moves on
    to the fourth (at three quarters of the characters)."""
    from replay.strategies.gemini_compress import split_point

    h = History()
    for n in range(4):
        h.user(f"q{n}").step(text=f"r{n}")
    h.items[4] = UserItem("q2", event_index=4, injected=True)
    assert split_point(h.items, 0.5) == 6


def test_gemini_compress_shortens_outputs_only_beyond_the_tool_budget():
    """Walking newest first, outputs within `budget` cumulative tokens stay whole (80 of 80
    here); one that passes it keeps its last 30 of 40 lines (one of 30 lines is left as is)."""
    from replay.strategies.gemini_compress import budget_tail

    out = "\n".join(["abc"] * 40)  # 159 characters: 40 tokens
    short = "\n".join(["abc"] * 30)  # beyond the budget too, but no longer than the preview
    h = History().user().step(read("s", short))
    h.step(read("a", out)).step(read("b", out)).step(read("c", out))
    s, a, b, c = outputs(View(items=budget_tail(h.items, ctx(), 80, 30)))
    assert (s, b, c) == (short, out, out)
    note = "[output shortened: last 30 of 40 lines; full output saved to a file]\n"
    assert a == note + "\n".join(["abc"] * 30)


def test_gemini_compress_is_not_tried_again_after_a_refused_compression():
    """A compression whose result grew is refused (its summarizer calls still cost), and Gemini
    CLI does not try again: the next request makes no summarizer call."""
    from types import SimpleNamespace

    h = _two_tasks()
    logged = [SimpleNamespace(summary="s" * 100_000)]  # a snapshot far larger than the history
    strategy = build("gemini-compress-50pct-keep-30pct")
    first = view_of(strategy(h.items, ctx(window=1000, usage=600, logged=logged)))
    assert first.items == h.items and len(first.summarizer_calls) == 2
    h.user("one more thing")
    again = view_of(strategy(h.items, ctx(window=1000, usage=600, logged=logged)))
    assert again.items == h.items and not again.summarizer_calls


def test_summarizer_requests_share_the_main_prefix_where_the_harness_does():
    """Claude Code forks the main request (same system and tools: it reads the main cache);
    opencode 1.x's compaction agent sends the messages on its own prompt, without the tools."""
    h = History().user().step(read("a.ts", "x" * 400)).step(text="done")
    (claude,) = view_of(build("claudecode-autocompact-13k")(h.items, ctx(usage=10**6))
                        ).summarizer_calls
    assert claude.reuse_main_prefix and claude.with_tools
    (opencode,) = view_of(build("opencode-compact-v1")(h.items, ctx(usage=10**6))).summarizer_calls
    assert not opencode.reuse_main_prefix and opencode.input_items == tuple(h.items)


def test_claudecode_microcompact_does_not_count_results_the_log_shows_cleared():
    """Results the harness had cleared already (the log holds the placeholder) are no new
    clearing: after the gap with nothing else to clear, no event."""
    h = History().user()
    for n in range(3):
        h.step(("Read", {"file_path": f"f{n}"}, LITERAL_CLEARED))
    h.step(("Read", {"file_path": "new"}, "fresh"))
    cold = view_of(build("claudecode-microcompact-time-60m-keep-1")(
        h.items, ctx(ts=T0, previous_ts=T0 - timedelta(minutes=61))
    ))
    assert cold.items == h.items and not cold.events


def test_opencode_tail_with_everything_in_the_tail_does_not_compact():
    """Over the usable context but the whole history fits in the 2,000-token tail: there is no
    head to summarize, so nothing happens."""
    h = History().user("t0").step(text="x" * 400)
    strategy = build("opencode-compact-tail-prepend")
    view = view_of(strategy(h.items, ctx(window=58_000, usage=10_000)))
    assert view.items == h.items and not view.summarizer_calls and not view.events


def test_opencode_suffix_with_no_tail_falls_back_to_a_fresh_summary():
    """Suffix mode names the first retained item; with nothing retained (the newest turn is
    over the 2,000-token tail and has no suffix that fits) it summarizes as prepend does."""
    h = History().user("t0").step(text="x" * 400).user("t1").step(text="y" * 20_000)
    strategy = build("opencode-compact-tail-suffix")
    (call,) = view_of(strategy(h.items, ctx(window=58_000, usage=10_000))).summarizer_calls
    assert not call.reuse_main_prefix


def test_pi_split_turn_summarizes_the_earlier_turns_and_the_turn_prefix_apart():
    """A cut inside the second turn: the first turn goes to the history summary call, the
    second turn's prefix to a call of its own."""
    h = History().user("t0").step(text="a" * 400).user("task")
    for n in range(4):
        h.step(read(f"f{n}.py", "x" * 4000))  # 1,000 tokens each
    h.step(text="done").user("next")
    view = view_of(build("pi-compact-16k-1k")(h.items, ctx(window=20_000, usage=19_000)))
    history_call, prefix_call = view.summarizer_calls
    serialized = history_call.input_items[0].text
    assert "t0" in serialized and "task" not in serialized
    assert "task" in prefix_call.input_items[0].text


def test_anthropic_clear_tool_uses_does_not_count_results_already_cleared():
    """A result that already shows the placeholder is nothing to clear: no event."""
    from replay.strategies.anthropic_clear_tool_uses import PLACEHOLDER

    h = History().user().step(read("a", PLACEHOLDER), read("b", "2"), read("c", "3"),
                              read("d", "4"))
    view = view_of(build("anthropic-clear-tool-uses-0-keep-3")(h.items, ctx()))
    assert view.items == h.items and not view.events


def test_roo_with_nothing_to_delete_changes_nothing():
    """Over the limit with only the first message and one more, floor(1 · 0.5) = 0 messages
    are deleted: no event."""
    h = History().user().step(text="answer")
    view = view_of(build("roo-truncate-keep-first-half")(h.items, ctx(usage=199_000)))
    assert view.items == h.items and not view.events


def test_gemini_mask_never_masks_ask_user():
    h = History().user().step(("ask_user", {"question": "?"}, "A" * 4000))
    for n in range(5):
        h.step(("bash", {"command": str(n)}, f"{n}" * 4000))
    h.step(("bash", {"command": "now"}, "N" * 4000))
    strategy = build("gemini-mask-tool-out-50k-30k", protect="2000", minimum="3000")
    assert outputs(view_of(strategy(h.items, ctx())))[0] == "A" * 4000


def test_gemini_compress_with_no_prompt_to_split_at_does_nothing():
    """One prompt and its tool loop: no later user message to split at, no compression."""
    h = History().user("task")
    for n in range(3):
        h.step(read(f"f{n}", "x" * 400))
    view = view_of(build("gemini-compress-50pct-keep-30pct")(h.items, ctx(window=1000, usage=900)))
    assert view.items == h.items and not view.summarizer_calls


def test_codex_remote_compaction_item_is_the_server_s():
    h = History().user().step(read("a.ts", "x" * 400), text="ok")
    view = view_of(build("codex-remote-compact-at-90pct")(h.items, ctx(usage=10**6)))
    assert [i.source for i in view.items if isinstance(i, SummaryItem)] == ["server"]


def test_cline_dedup_reports_only_reads_it_newly_replaces():
    """Reads replaced at an earlier request are not replaced again: the next request at the
    threshold, with no new duplicate, goes straight to the truncation."""
    h = History().user()
    for n in range(6):
        h.step(read("same.ts", "S" * 2000), text=f"s{n}")
    strategy = build("cline-dedup-file-reads")
    assert [e.kind for e in view_of(strategy(h.items, ctx(usage=170_000))).events] == ["prune"]
    h.step(("bash", {"command": "ls"}, "B" * 100), text="next")
    assert [e.kind for e in view_of(strategy(h.items, ctx(usage=170_000))).events] == ["drop"]


def test_a_builder_s_own_defaults_are_the_spec_s():
    """`StrategySpec.defaults` wins over the builder's signature (`parameters`), so a default
    written in both places could drift unnoticed (cline-dedup, roo-truncate, codex-drop-oldest
    have both): where both give one, they agree."""
    import inspect

    from replay.strategies._base import _load_builtin, registered

    _load_builtin()
    drift = []
    for spec in registered():
        signature = inspect.signature(spec.build)
        for name, value in spec.defaults.items():
            own = signature.parameters.get(name)
            if own is not None and own.default is not own.empty and own.default != value:
                drift.append((spec.family, name, own.default, value))
    assert drift == []
    assert any(
        inspect.signature(s.build).parameters.get(n) is not None for s in registered()
        for n in s.defaults
    )  # (the check has something to compare)
