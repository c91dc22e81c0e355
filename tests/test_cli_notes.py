"""Every command that reads a log says the same things about it: the lines it skipped, that the
trajectory is held fixed, and that a log without requests has nothing to replay (exit 2)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import genai_prices
import pytest
from conftest import RUN42

from replay._api import TRAJECTORY_NOTE

SKIPPED = "malformed line(s) skipped"


@pytest.fixture
def cut_log(tmp_path: Path) -> Path:
    """run42 cut in the middle of a line (a capture that stopped): one malformed last line."""
    path = tmp_path / "cut.jsonl"
    path.write_bytes(RUN42.read_bytes()[:20000])
    return path


@pytest.fixture
def header_only(tmp_path: Path) -> Path:
    path = tmp_path / "header-only.jsonl"
    path.write_text(RUN42.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    return path


COMMANDS = {
    "run": ["run", "-s", "baseline"],
    "breakeven": ["breakeven", "-s", "baseline,truncate-500"],
    "whatif": ["whatif", "--at", "3", "--prune", "older-than:1"],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_json_has_the_skipped_line_and_trajectory_notes(invoke, cut_log, name) -> None:
    command, *args = COMMANDS[name]
    result = invoke(command, cut_log, *args, "--format", "json")
    assert result.exit_code == 0, result.output
    notes = json.loads(result.stdout)["notes"]
    assert notes[0] == TRAJECTORY_NOTE
    assert any(SKIPPED in n and f"{cut_log}:" in n for n in notes)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_table_prints_the_notes_on_stderr(invoke, cut_log, name) -> None:
    command, *args = COMMANDS[name]
    result = invoke(command, cut_log, *args)
    assert result.exit_code == 0, result.output
    assert SKIPPED in result.stderr and "recorded trajectory fixed" in result.stderr
    quiet = invoke(command, cut_log, *args, "-q")
    assert SKIPPED not in quiet.stderr


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("name", ["run", "breakeven"])
def test_csv_and_parquet_print_the_notes_on_stderr_not_in_the_file(
    invoke, cut_log, tmp_path, name, fmt
) -> None:
    """A user piping CSV still learns that lines were skipped; the file holds only rows."""
    command, *args = COMMANDS[name]
    out = tmp_path / f"out.{fmt}"
    targets = [["-o", out]] + ([[]] if fmt == "csv" else [])  # (parquet needs -o)
    for target in targets:
        result = invoke(command, cut_log, *args, "--format", fmt, *target)
        assert result.exit_code == 0, result.output
        assert SKIPPED in result.stderr and "recorded trajectory fixed" in result.stderr
        assert SKIPPED not in result.stdout and SKIPPED.encode() not in out.read_bytes()
        quiet = invoke(command, cut_log, *args, "--format", fmt, *target, "-q")
        assert SKIPPED not in quiet.stderr


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_only_the_table_has_the_recommendation_and_json_alone_its_notes(invoke, cut_log,
                                                                         fmt) -> None:
    """The recommendation is the line under the table; JSON holds it and the notes: its
    standard error is empty, a CSV's holds the notes alone."""
    result = invoke("run", cut_log, "-s", "baseline,truncate-500", "--format", fmt)
    assert result.exit_code == 0, result.output
    table = invoke("run", cut_log, "-s", "baseline,truncate-500")
    assert "Cheapest strategy" in table.stderr
    if fmt == "json":
        assert result.stderr == ""
    else:
        assert SKIPPED in result.stderr and "Cheapest strategy" not in result.stderr


def test_fidelity_csv_prints_the_notes_on_stderr(invoke, tmp_path) -> None:
    from test_fidelity import _billed_session

    from replay.log import write_log

    log = tmp_path / "billed.jsonl"
    write_log(_billed_session(), log)
    with log.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "user", "broken\n')
    result = invoke("fidelity", log, "--format", "csv")
    assert result.exit_code == 0, result.output
    assert SKIPPED in result.stderr and SKIPPED not in result.stdout


def test_plot_prints_the_notes_on_stderr(invoke, cut_log, tmp_path) -> None:
    out = tmp_path / "cost.svg"
    result = invoke("plot", cut_log, "-s", "baseline", "-o", out)
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8").lstrip().startswith("<")
    assert SKIPPED in result.stderr and "recorded trajectory fixed" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["run", "-s", "baseline"],
        ["breakeven", "-s", "baseline"],
        ["whatif", "--at", "3", "--prune", "older-than:1"],
        ["plot", "-s", "baseline", "-o", "{tmp}/x.png"],
    ],
)
def test_a_log_without_requests_is_the_same_error_everywhere(
    invoke, header_only, tmp_path, args
) -> None:
    command, *rest = args
    rest = [a.replace("{tmp}", str(tmp_path)) for a in rest]
    result = invoke(command, header_only, *rest)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {header_only}: the log has no requests (no `request` events) to replay\n"
    )


def test_fidelity_notes_skipped_lines_and_refuses_a_log_without_requests(
    invoke, tmp_path, header_only
) -> None:
    from test_fidelity import _billed_session

    from replay.log import write_log

    log = tmp_path / "billed.jsonl"
    write_log(_billed_session(), log)
    with log.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "user", "broken\n')
    doc = json.loads(invoke("fidelity", log, "--format", "json").stdout)
    assert len(doc["notes"]) == 1 and SKIPPED in doc["notes"][0]
    result = invoke("fidelity", log)
    assert SKIPPED in result.stderr
    result = invoke("fidelity", header_only)
    assert result.exit_code == 2 and "the log has no requests" in result.stderr


def test_a_summarizer_call_without_a_ttl_choice_adds_no_request_to_the_ttl_note() -> None:
    """`no_ttl_choice` lists the recorded requests whose cache offered no TTL choice: a call
    the strategy added (a summarizer's) at a request that had the choice adds nothing."""
    from dataclasses import replace

    import replay
    from replay.engine._results import ResultTables

    records = replay.replay(RUN42, "baseline").records
    chose = [replace(r, outcome=replace(r.outcome, ttl_choice=True)) for r in records]
    call = replace(chose[3], kind="summarizer",
                   outcome=replace(chose[3].outcome, ttl_choice=False))
    assert ResultTables.of([*chose[:3], call, *chose[3:]]).no_ttl_choice == {}
    chose[3] = replace(chose[3], outcome=call.outcome)  # the request itself had none: noted
    route, index = chose[3].outcome.route, chose[3].request_index
    assert ResultTables.of(chose).no_ttl_choice == {route: {index}}


def test_a_summarizer_call_adds_no_request_to_the_notes_on_recorded_requests() -> None:
    """The notes on recorded requests (no breakpoint, no prompt cache, output sizes counted
    from the log) take the agent's requests only: a summarizer call at a request, sent
    without a breakpoint, without a cache, with a measured output, changes none of them."""
    from dataclasses import replace

    import replay
    from replay.engine._results import ResultTables

    records = replay.replay(RUN42, "baseline").records
    assert all(r.outcome.miss_kind != "no-breakpoint" and r.outcome.mechanism != "none"
               for r in records)
    estimated = [replace(r, request=replace(r.request, estimated_output=True))
                 for r in records]
    call = replace(estimated[3], kind="summarizer",
                   request=replace(estimated[3].request, estimated_output=False),
                   outcome=replace(estimated[3].outcome, miss_kind="no-breakpoint",
                                   mechanism="none"))
    tables = ResultTables.of([*estimated[:3], call, *estimated[3:]])
    assert (tables.no_breakpoint, tables.no_cache, tables.estimated_output) == ({}, {}, True)
    request = replace(call, kind="request")  # the same, as a recorded request: noted
    tables = ResultTables.of([*estimated[:3], request, *estimated[4:]])
    assert tables.no_breakpoint == {request.outcome.route: {request.request_index}}
    assert tables.no_cache == {f"{request.provider} / {request.model}": {request.request_index}}
    assert tables.estimated_output is False


def test_a_price_that_fell_back_is_a_note() -> None:
    """genai-prices has no cache-read price for kimi-k2: its reads are billed at the input
    rate, and the notes say so (with how many requests) rather than pricing silently."""
    import gen

    import replay

    turns = [
        gen.Turn(f"step {i}", [gen.Call("read_file", {"path": f"f{i}"}, gen.filler(3000, i))])
        for i in range(3)
    ] + [gen.Turn("done")]
    session = gen.build_session(turns, provider="moonshotai", model="kimi-k2")
    result = replay.replay(session, "baseline")
    assert result.summary["cached_tokens"][0] > 0
    fallback = [n for n in result.notes if n.startswith("Priced with a fallback")]
    assert fallback == [
        "Priced with a fallback on 3 request(s): 'kimi-k2' (moonshotai) (genai-prices "
        f"{genai_prices.__version__} snapshot): no cache-read price, cache reads billed at the "
        "input rate."
    ]
    # Each strategy prices its own copy of a recorded request: the note counts the recorded
    # requests (it said "9 request(s)" for 3 with three strategies).
    several = replay.replay(session, "baseline,truncate-500,age-truncate-500-keep-3")
    assert len(several.records) == 3 * len(result.records)
    assert [n for n in several.notes if n.startswith("Priced with a fallback")] == fallback


def test_a_client_that_sends_no_breakpoint_where_they_are_needed_is_a_note() -> None:
    """A log replayed on Anthropic with a client that marks nothing (Codex's) caches nothing:
    the notes say how many requests, once whatever the strategies, and how to pick a client."""
    from conftest import RUN42

    import replay

    def notes(**options) -> list[str]:
        result = replay.replay(RUN42, "baseline,truncate-500", provider="anthropic",
                               model="claude-sonnet-4-5", **options)
        return [n for n in result.notes if "cached nothing" in n]

    assert notes(client="codex") == [
        "13 request(s) (anthropic) cached nothing: the client profile put no cache breakpoint "
        "where the provider needs one (column `miss_causes`: no-breakpoint). If the harness you "
        "mean to run would mark the prompt, say which with --client (e.g. --client claude-code)."
    ]
    assert notes() == notes(client="claude-code") == []


def test_a_model_simulated_without_a_prompt_cache_is_a_note() -> None:
    """A model no cache rule covers (Google's default: mechanism none) reads 0 % cached: the
    notes say why, once, whatever the strategies, and nothing when a cache was simulated."""
    from conftest import RUN42

    import replay
    from replay.prices import parse_price_overrides

    result = replay.replay(RUN42, "baseline,truncate-500", model="mymodel",
                           prices=parse_price_overrides(["mymodel=input:1,output:2"]))
    assert [n for n in result.notes if "without a prompt cache" in n] == [
        "14 request(s) were simulated without a prompt cache (google / mymodel): the cache rules "
        "in force say `mechanism: none` (no prompt caching for that model, or not yet at that "
        "date), so every prompt token is billed uncached. `replay providers --provider P --model "
        "M` shows the rules; --cache-rules FILE gives your own."
    ]
    assert not [n for n in replay.replay(RUN42, "baseline").notes if "prompt cache" in n]
    # Replayed on workers, each part's requests are merged into the note.
    on_workers = replay.replay(RUN42, "baseline,truncate-500", model="mymodel", workers=2,
                               prices=parse_price_overrides(["mymodel=input:1,output:2"]))
    assert [n for n in on_workers.notes if "without a prompt cache" in n] == [
        n for n in result.notes if "without a prompt cache" in n
    ]


def test_request_times_going_backwards_are_a_note(invoke, tmp_path) -> None:
    """Times the cache simulation judges TTLs and readiness on: a clock set back is said."""
    lines = RUN42.read_text(encoding="utf-8").splitlines()
    requests = [n for n, line in enumerate(lines) if json.loads(line)["type"] == "request"]
    fifth = json.loads(lines[requests[4]])
    fifth["ts"] = "2026-11-29T11:46:00Z"  # before the session began
    lines[requests[4]] = json.dumps(fifth)
    log = tmp_path / "clock.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = invoke("run", log, "-s", "baseline", "--format", "json")
    assert result.exit_code == 0, result.output
    notes = [n for n in json.loads(result.stdout)["notes"] if "go backwards" in n]
    assert len(notes) == 1
    assert notes[0].startswith(
        f"Request times go backwards 1 time(s) within a thread (first: request #4 "
        f"({fifth['request_id']}), "
    )
    plain = invoke("run", RUN42, "-s", "baseline", "--format", "json")
    assert not any("go backwards" in n for n in json.loads(plain.stdout)["notes"])


def test_only_a_time_before_the_threads_previous_request_goes_backwards() -> None:
    """Requests sent at the same time (parallel calls) are no clock set back; of several
    going backwards, the note counts them all and names the first."""
    from datetime import timedelta

    import gen

    from replay._api import clock_notes

    session = gen.build_session([gen.Turn(f"step {i}") for i in range(6)])
    requests = session.requests()
    requests[2].ts = requests[1].ts
    assert clock_notes(session) == []
    requests[3].ts = requests[2].ts - timedelta(seconds=1.5)
    requests[5].ts = requests[4].ts - timedelta(seconds=40)
    (note,) = clock_notes(session)
    assert note.startswith(
        f"Request times go backwards 2 time(s) within a thread (first: request #3 "
        f"({requests[3].request_id}), 1.5 s before its thread's previous request)"
    )


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_price_override_that_prices_nothing_is_a_note(invoke, name) -> None:
    """A `--price` for a model the log does not use (an alias, a typo) left list prices in
    force without a word."""
    command, *args = COMMANDS[name]
    typo = invoke(command, RUN42, *args, "--price", "gemini-2.5-flsh=input:1,output:1")
    assert typo.exit_code == 0, typo.output
    assert "--price gemini-2.5-flsh matched no model of this replay (gemini-2.5-flash)" in (
        typo.stderr
    )
    for used in ("gemini-2.5-flash", "gemini-2.5-*"):
        ok = invoke(command, RUN42, *args, "--price", f"{used}=input:1,output:1")
        assert ok.exit_code == 0, ok.output
        assert "matched no model" not in ok.stderr


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_price_override_another_one_shadows_is_a_note(invoke, name) -> None:
    """A wildcard `--price` whose every model an exact name prices instead (or an earlier
    wildcard) priced nothing, and nothing said so: it does match the model."""
    command, *args = COMMANDS[name]
    shadowed = invoke(command, RUN42, *args, "--price", "gemini-*=input:1,output:1",
                      "--price", "gemini-2.5-flash=input:2,output:2")
    assert shadowed.exit_code == 0, shadowed.output
    assert (
        "--price gemini-* priced nothing: --price gemini-2.5-flash applies to every model it "
        "matches (gemini-2.5-flash)"
    ) in " ".join(shadowed.stderr.split())


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_cache_rules_that_serve_no_request_are_a_note(invoke, name, tmp_path) -> None:
    """Anthropic rules on a Gemini log changed nothing without a word."""
    from conftest import ROOT

    command, *args = COMMANDS[name]
    anthropic = tmp_path / "anthropic.json"
    anthropic.write_bytes((ROOT / "pricing" / "cache" / "anthropic.json").read_bytes())
    wrong = invoke(command, RUN42, *args, "--cache-rules", str(anthropic))
    assert wrong.exit_code == 0, wrong.output
    assert ("--cache-rules: the anthropic rules served no request of this replay (its requests "
            "went to the google rules)") in wrong.stderr
    google = tmp_path / "google.json"
    google.write_bytes((ROOT / "pricing" / "cache" / "google.json").read_bytes())
    for rules, more in ((google, []), (anthropic, ["--provider", "anthropic", "--model",
                                                   "claude-sonnet-4-5"])):
        ok = invoke(command, RUN42, *args, "--cache-rules", str(rules), *more)
        assert ok.exit_code == 0, ok.output
        assert "served no request" not in ok.stderr


def test_strategies_that_never_changed_the_context_are_a_note(tmp_path, clean_registry) -> None:
    """On run42 (41k tokens) the Codex compaction at 90 % of the window never fires: it bills
    every request as `baseline`, and the note says so; truncate-500 and the compaction at
    12,000 tokens change what is sent. The same on workers. A strategy that named a rewrite is
    never listed, even where its requests billed alike; nor a plug-in, which may rewrite text
    into as many tokens (the bill cannot tell)."""
    from dataclasses import replace

    import replay
    from replay.engine._results import ResultTables
    from replay.strategies import load_strategy_file
    from replay.strategies._view import RewriteEvent

    plugin = tmp_path / "mask_digits.py"
    plugin.write_text(
        "import re\n"
        "from replay.strategies import ToolResultItem, replace_output\n"
        "NAME = 'mask-digits'\n"
        "def strategy(history, ctx):\n"
        "    return [replace_output(i, re.sub('[0-9]', '7', i.output))\n"
        "            if isinstance(i, ToolResultItem) else i for i in history]\n",
        encoding="utf-8",
    )
    load_strategy_file(plugin)
    names = ("baseline,recorded,truncate-500,codex-compact-at-90pct,compact-at-12000-structured,"
             "mask-digits")
    result = replay.replay(RUN42, names)
    said = [n for n in result.notes if "exactly as `baseline` did" in n]
    assert said == [
        "1 strategy billed every request exactly as `baseline` did and named no rewrite: on "
        "this log their rules did not fire (a threshold not reached, nothing to clear): "
        "codex-compact-at-90pct."
    ]
    assert "mask-digits" in result.tables.same_as_baseline  # (the bill alone cannot tell)
    on_workers = replay.replay(RUN42, names, workers=2)
    assert [n for n in on_workers.notes if "exactly as `baseline` did" in n] == said
    assert not [n for n in replay.replay(RUN42, "truncate-500,codex-compact-at-90pct").notes
                if "exactly as" in n]

    by_strategy: dict[str, list] = {}
    for r in result.records:
        by_strategy.setdefault(r.strategy, []).append(r)
    named = [replace(r, strategy="named") for r in by_strategy["baseline"]]
    named[5] = replace(named[5], events=[RewriteEvent("prune", "nothing to prune")])
    dearer = [replace(r, strategy="dearer") for r in by_strategy["baseline"]]
    dearer[-1] = replace(dearer[-1], cost_usd=dearer[-1].cost_usd + Decimal("0.000001"))
    tables = ResultTables(per_turn=False)
    for records in (by_strategy["baseline"], by_strategy["codex-compact-at-90pct"], named,
                    dearer):
        tables.add(records)
    assert tables.same_as_baseline == ["codex-compact-at-90pct"]


def test_a_server_side_mechanism_of_another_providers_api_is_a_note() -> None:
    """Anthropic's context editing is a feature of its Messages API for Claude models, OpenAI's
    Responses compaction of OpenAI's API (research strategies.md: "Anthropic API (server)",
    "OpenAI Responses API"; Codex's remote compaction: "Codex CLI, OpenAI provider"). Replayed
    on another provider's model, such a strategy bills its rule as a harness would apply it
    itself, and the notes say so; a strategy whose rule never fired is not named."""
    import gen

    import replay

    turns = [
        gen.Turn(f"step {i}", [gen.Call("read_file", {"path": f"f{i}"}, gen.filler(8000, i))])
        for i in range(10)
    ] + [gen.Turn("done")]
    names = ("baseline,anthropic-clear-tool-uses-10k-keep-1,openai-responses-compact-10k,"
             "codex-remote-compact-at-90pct,truncate-500")

    def notes(provider: str, model: str) -> list[str]:
        result = replay.replay(gen.build_session(turns, provider=provider, model=model), names)
        return [n for n in result.notes if "mechanism" in n]

    assert notes("openai", "gpt-4o") == [
        "anthropic-clear-tool-uses-10k-keep-1 simulates a mechanism of Anthropic's Messages API "
        "(Claude models), which this run's models (gpt-4o) do not have: the bill is that of a "
        "harness applying the same rule to its requests itself."
    ]
    from replay._api import _offers
    from replay.engine._results import ResultTables

    mixed = ResultTables(per_turn=False)
    mixed.models |= {"gpt-4o", "claude-haiku-4-5"}  # a Claude model runs some requests
    assert _offers("anthropic", mixed) and not _offers("openai", mixed)
    names += ",anthropic-clear-tool-uses-10k-keep-2"
    assert notes("openai", "gpt-4o") == [
        "anthropic-clear-tool-uses-10k-keep-1, anthropic-clear-tool-uses-10k-keep-2 simulate "
        "mechanisms of Anthropic's Messages API (Claude models), which this run's models "
        "(gpt-4o) do not have: the bill is that of a harness applying the same rule to its "
        "requests itself."
    ]
    assert notes("anthropic", "claude-sonnet-4-5") == [
        "openai-responses-compact-10k simulates a mechanism of OpenAI's Responses API, which "
        "this run's models (claude-sonnet-4-5) do not have: the bill is that of a harness "
        "applying the same rule to its requests itself."
    ]
    # Claude under another route's spelling is still a Claude model (Bedrock, OpenRouter,
    # Vertex ids): it was taken for a model without Anthropic's API.
    for provider, model in [
        ("aws", "global.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("openrouter", "anthropic/claude-sonnet-4.5"),
        ("google", "claude-sonnet-4-5@20250929"),
    ]:
        (note,) = notes(provider, model)
        assert note.startswith("openai-responses-compact-10k simulates a mechanism of OpenAI")
    mixed = ResultTables(per_turn=False)
    mixed.models |= {"my-claude-finetune", "gpt-4o"}
    assert not _offers("anthropic", mixed)


def _delegating_session():
    """A main-thread request, the subagent it started (one request), the main thread's next."""
    import gen

    sub = [gen.Turn("counted", [])]
    turns = [
        gen.Turn("delegating", [gen.Call("Task", {"prompt": "Count."}, "2", subagent=sub)]),
        gen.Turn("done"),
    ]
    return gen.build_session(turns, provider="anthropic")


def test_a_microcompact_is_sized_against_its_own_thread_s_previous_request() -> None:
    """How far the prompt fell is measured from the same thread's previous request: a
    subagent's request in between (a small prompt) is no measure of what the main thread's
    microcompact cleared."""
    from replay._api import microcompact_notes
    from replay.log import Usage

    session = _delegating_session()
    first, inner, last = session.requests()
    assert (first.thread, inner.thread, last.thread) == ("main", "sub-call-001", "main")
    first.usage = Usage(input_tokens=5000, output_tokens=100)
    inner.usage = Usage(input_tokens=300, output_tokens=10)
    last.usage = Usage(input_tokens=3000, output_tokens=20)
    last.after_microcompact = True  # type: ignore[attr-defined]
    (note,) = microcompact_notes(session)
    assert note.startswith("Microcompact at request #2 (req-003): Claude Code cleared ~2,100 "
                           "tokens of tool results")


def test_notes_built_from_dicts_list_their_keys_sorted() -> None:
    # The same replay gives byte-identical output: a note never follows the order in which a
    # replay happened to meet its fallbacks or routes.
    from replay._api import _ignored_ttl_note, _no_breakpoint_note, price_warning_notes

    warnings = {"z-model: no 1h write rate": {1, 2}, "a-model: no read rate": {3}}
    assert price_warning_notes(warnings) == [
        "Priced with a fallback on 1 request(s): a-model: no read rate.",
        "Priced with a fallback on 2 request(s): z-model: no 1h write rate.",
    ]
    routes = {"openai": {1, 2}, "google": {2, 3}}
    assert "on 3 request(s) (google, openai): " in _ignored_ttl_note("1h", routes)
    assert _no_breakpoint_note(routes).startswith("3 request(s) (google, openai) cached nothing")


def test_the_iteration_and_unread_write_notes_name_the_first_request_and_count_no_flag() -> None:
    import gen

    from replay._api import iteration_notes, unread_write_notes
    from replay.log import Usage

    session = gen.build_session([gen.Turn(f"step {i}") for i in range(4)], provider="anthropic")
    requests = session.requests()
    iteration = {"type": "compaction", "input_tokens": 10, "output_tokens": 5}
    for n in (1, 3):
        requests[n].usage = Usage(input_tokens=100, output_tokens=10,
                                  raw={"iterations": [iteration]})  # type: ignore[call-arg]
    (note,) = iteration_notes(session)
    assert "(compaction; first: request #1 (req-002)): 20 prompt and 10 output tokens" in note
    # A flag named like a write count (`cache_write: true`) is no count of tokens.
    requests[0].usage = Usage(input_tokens=100, output_tokens=10,
                              raw={"cache_write": True})  # type: ignore[call-arg]
    assert unread_write_notes(session) == []
    # Writes read as 1h writes alone (Claude Code 2.1's main thread) were read.
    requests[1].usage = Usage(
        input_tokens=100, cache_write_1h_tokens=500, output_tokens=10,
        raw={"cache_creation_input_tokens": 500,
             "cache_creation": {"ephemeral_1h_input_tokens": 500}},
    )  # type: ignore[call-arg]
    assert unread_write_notes(session) == []
    requests[2].usage = Usage(input_tokens=100, output_tokens=10,
                              raw={"cacheWrite": 7})  # type: ignore[call-arg]
    (note,) = unread_write_notes(session)
    assert note.startswith("1 request(s) report cache writes under a name replay does not "
                           "read: `cacheWrite` (7 tokens).")


def test_request_times_go_backwards_only_within_a_thread() -> None:
    """A subagent's request logged before the main thread's latest one is parallel work, not a
    clock set back: times are compared within each thread."""
    from datetime import timedelta

    from replay._api import clock_notes

    session = _delegating_session()
    first, inner, last = session.requests()
    inner.ts = first.ts - timedelta(seconds=1)
    assert clock_notes(session) == []
    last.ts = first.ts - timedelta(seconds=2)
    (note,) = clock_notes(session)
    assert "(first: request #2 (req-003), 2.0 s before its thread's previous request)" in note


def test_only_private_tokenizers_are_said_to_be_estimates_and_the_first_bad_line_is_named() -> None:
    from replay._api import _skipped_note, tokenizer_estimate_notes
    from replay._errors import LogFormatError
    from replay.log import Session

    assert tokenizer_estimate_notes(["gpt-4o", "gpt-5"]) == []
    (note,) = tokenizer_estimate_notes(["gpt-4o", "claude-sonnet-4-5"])
    assert note.startswith("Token counts for claude models are estimates: ")
    session = Session(header=None, skipped=[  # type: ignore[arg-type]
        LogFormatError("a.jsonl", 3, "expected JSON"),
        LogFormatError("a.jsonl", 9, "expected an object"),
    ])
    assert _skipped_note(session).startswith(
        "2 malformed line(s) skipped or repaired (first: a.jsonl:3: expected JSON)")
