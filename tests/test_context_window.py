"""`--context-window`: the window strategies fit into and `over_window` counts against, and the
note that says when the log's own compaction shows the agent ran a smaller one."""

from __future__ import annotations

import json
from decimal import Decimal

import gen
import polars as pl
import pytest
from conftest import ROOT, RUN42

from replay import replay
from replay._api import window_notes
from replay._errors import ReplayError
from replay.batch import BatchOptions, run_batch
from replay.batch._options import replay_key
from replay.log import Compaction, RequestMarker
from replay.prices import RateOverride


def _prompts(result) -> list[int]:
    turns = result.turns.filter(result.turns["kind"] == "request")
    return turns["prompt_tokens"].to_list()


def test_over_window_counts_the_prompts_above_the_window_given() -> None:
    default = replay(RUN42, "baseline")
    prompts = _prompts(default)
    assert default.summary["over_window"].to_list() == [0]  # gemini-2.5-flash: 1M
    window = sorted(prompts)[len(prompts) // 2]  # half of the prompts are above it, or so
    result = replay(RUN42, "baseline", context_window=window)
    assert _prompts(result) == prompts  # baseline sends the same prompts whatever the window
    expected = sum(p > window for p in prompts)
    assert 0 < expected < len(prompts)
    assert result.summary["over_window"].to_list() == [expected]


def test_a_strategy_that_compacts_near_the_window_compacts_in_a_smaller_one() -> None:
    name = "codex-compact-at-90pct"
    default = replay(RUN42, name)
    assert default.summary["summarizer_calls"].to_list() == [0]
    peak = max(_prompts(default))
    small = replay(RUN42, name, context_window=peak)  # 90 % of it is crossed before the peak
    assert small.summary["summarizer_calls"].to_list()[0] >= 1
    assert max(_prompts(small)) < peak


@pytest.mark.parametrize("bad", [0, -5, True, 1.5, "200k"])
def test_the_api_refuses_a_window_that_is_not_a_count_of_tokens(bad) -> None:
    with pytest.raises(ReplayError, match="context_window must be a number of tokens"):
        replay(RUN42, "baseline", context_window=bad)


def _with_auto_compaction(tokens_before: int | None, trigger: str = "auto"):
    session = gen.deterministic_session()
    first_request = next(e for e in session.events if isinstance(e, RequestMarker))
    compaction = Compaction(ts=first_request.ts, summary="so far: read the repo",
                            trigger=trigger, tokens_before=tokens_before)
    session.events.insert(session.events.index(first_request) + 1, compaction)
    return session


def _compacted(session, models, window) -> list[str]:
    return [n for n in window_notes(session, models, window) if "compacted on its own" in n]


def test_the_note_names_an_automatic_compaction_far_below_the_window() -> None:
    session = _with_auto_compaction(167_753)
    (note,) = window_notes(session, ["claude-sonnet-4-6"], None)  # 1M in context_windows.json
    assert "167,753 tokens" in note and "1,000,000-token" in note
    assert "--context-window" in note
    # At or above half of the window the agent may well have run it; a manual compaction or
    # one of unknown size says nothing about the window.
    assert window_notes(session, ["claude-sonnet-4-5"], None) == []  # 200k
    assert _compacted(session, ["claude-sonnet-4-6"], 300_000) == []
    assert _compacted(session, ["claude-sonnet-4-6"], 400_000) != []
    assert window_notes(_with_auto_compaction(167_753, "manual"), ["claude-sonnet-4-6"],
                        None) == []
    assert window_notes(_with_auto_compaction(None), ["claude-sonnet-4-6"], None) == []
    assert window_notes(gen.deterministic_session(), ["claude-sonnet-4-6"], None) == []
    # Half the window is not under half; with several models, the smallest window is the
    # one in force; of several compactions, the largest tells the window the agent ran.
    assert _compacted(_with_auto_compaction(100_000), ["claude-sonnet-4-5"], None) == []
    assert _compacted(_with_auto_compaction(99_999), ["claude-sonnet-4-5"], None) != []
    assert _compacted(session, ["claude-sonnet-4-6", "claude-sonnet-4-5"], None) == []
    twice = _with_auto_compaction(150_000)
    first = next(e for e in twice.events if isinstance(e, Compaction))
    earlier = first.model_copy(update={"tokens_before": 50_000})
    twice.events.insert(twice.events.index(first), earlier)
    assert _compacted(twice, ["claude-sonnet-4-5"], None) == []


def test_a_window_given_is_named_where_it_is_not_the_models_own() -> None:
    session = gen.deterministic_session()
    (note,) = window_notes(session, ["claude-sonnet-4-6", "claude-sonnet-4-5"], 200_000)
    assert note == ("Strategies were given a 200,000-token context window (--context-window), "
                    "not the model's own (claude-sonnet-4-5 200,000, claude-sonnet-4-6 "
                    "1,000,000).")
    assert window_notes(session, ["claude-sonnet-4-5"], 200_000) == []


def test_a_run_carries_the_note_until_the_window_is_the_agents() -> None:
    session = _with_auto_compaction(9_000)
    notes = replay(session, "baseline", context_window=20_000).notes
    assert any("compacted on its own at 9,000 tokens" in n for n in notes)
    notes = replay(session, "baseline", context_window=16_000).notes
    assert not any("compacted on its own" in n for n in notes)
    assert any("given a 16,000-token context window" in n for n in notes)


def test_the_command_line_reads_a_window_in_tokens(invoke, tmp_path) -> None:
    out = tmp_path / "out.json"
    done = invoke("run", RUN42, "-s", "baseline", "--context-window", "4k", "--format", "json",
                  "-o", out)
    assert done.exit_code == 0, done.stderr
    (row,) = json.loads(out.read_text())["summary"]
    prompts = _prompts(replay(RUN42, "baseline"))
    assert row["over_window"] == sum(p > 4000 for p in prompts) > 0
    for bad in ("0", "-1", "lots", "2.5"):
        done = invoke("run", RUN42, "-s", "baseline", "--context-window", bad)
        assert done.exit_code == 2
        assert "is not a whole number of tokens" in done.stderr
    assert invoke("run", RUN42, "-s", "baseline", "--context-window", "1", "-q").exit_code == 0


def test_every_command_whose_strategies_act_near_the_window_takes_it(invoke) -> None:
    for command in ("run", "breakeven", "whatif", "report", "plot", "batch"):
        assert "--context-window" in invoke(command, "--help").stdout, command
    assert "--context-window" not in invoke("fidelity", "--help").stdout  # replays `recorded`


def test_a_batch_replayed_at_another_window_is_not_the_cached_one() -> None:
    assert replay_key(BatchOptions()) != replay_key(BatchOptions(context_window=200_000))
    assert replay_key(BatchOptions(context_window=200_000)) == replay_key(
        BatchOptions(context_window=200_000))


def test_a_batch_replays_every_file_at_the_window_given(tmp_path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "run42.jsonl").write_bytes(RUN42.read_bytes())
    opts = BatchOptions(strategies="baseline,codex-compact-at-90pct", context_window=4000,
                        share_cache=False)
    report = run_batch([logs], opts, output=tmp_path / "ds", workers=1)
    assert ("Strategies were given a 4,000-token context window (--context-window) on every "
            "model.") in report.notes
    rows = pl.read_parquet(tmp_path / "ds" / "sessions" / "*.parquet").sort("strategy")
    alone = replay(RUN42, "baseline,codex-compact-at-90pct", context_window=4000).summary
    alone = alone.sort("strategy")
    for column in ("over_window", "summarizer_calls", "cost_usd"):
        assert rows[column].to_list() == alone[column].to_list(), column
    assert rows["over_window"].to_list()[0] > 0


def test_a_summarizer_call_the_window_cannot_hold_counts_over_it() -> None:
    """Compaction keeps every request of the agent under a 3,100-token window, but its second
    summarizer call sends 3,176 tokens: a real harness's compaction fails there. It was not
    counted; the peak stays the agent's requests' (3,036)."""
    from gen import Call, Turn

    turns = [Turn(f"step {i}", [Call("read_file", {"path": f"f{i}"}, gen.filler(3000, i))])
             for i in range(8)] + [Turn("done")]
    name = "compact-at-12000-structured[output_chars=0,argument_chars=0]"
    result = replay(gen.build_session(turns, provider="openai"), name, context_window=3100)
    row = result.summary.row(0, named=True)
    assert (row["over_window"], row["peak_prompt_tokens"], row["summarizer_calls"]) == (1, 3036, 2)


@pytest.mark.parametrize("name", ["codex-compact-drop-oldest", "codex-compact-at-90pct"])
def test_codex_s_summarizer_call_is_trimmed_to_fit_the_window(name) -> None:
    """Codex drops the oldest item of the compaction request until it fits: the fit is counted
    as the provider bills it. A chars/4 estimate without the framing and the hidden prefix let
    summarizer calls of 14,215 tokens through a 12,000-token window."""
    turns = [
        gen.Turn(f"step {i}", [gen.Call("read_file", {"path": f"f{i}.py"}, gen.filler(8000, i))])
        for i in range(12)
    ] + [gen.Turn("done")]
    session = gen.build_session(turns, provider="openai")
    window = 12_000
    turns_ = replay(session, name, context_window=window).turns
    summarizers = turns_.filter(turns_["kind"] == "summarizer")
    assert summarizers.height >= 1
    assert summarizers["prompt_tokens"].max() <= window
    assert not any(summarizers["over_window"].to_list())


def _default_window() -> int:
    """The size pricing/context_windows.json assumes for a model none of its rows names."""
    rows = json.loads((ROOT / "pricing" / "context_windows.json").read_text())["windows"]
    assert rows[-1]["pattern"] == ""
    return rows[-1]["tokens"]


def test_a_model_with_no_window_of_its_own_is_a_note_not_a_silent_default(tmp_path) -> None:
    """README: `over_window` counts against the window of pricing/context_windows.json or
    --context-window. A model none of its rows names (Qwen, Mistral) got the default row's size
    silently, for the strategies' triggers and `over_window` alike."""
    session = gen.deterministic_session()
    size = _default_window()
    (note,) = window_notes(session, ["qwen-plus", "claude-sonnet-4-5"], None)
    assert note == (
        f"No context window is known for qwen-plus (pricing/context_windows.json): {size:,} "
        "tokens were assumed, which the strategies fit prompts into and `over_window` counts "
        "against; --context-window sets the model's."
    )
    assert window_notes(session, ["claude-sonnet-4-5", "gemini-2.5-flash"], None) == []
    (given,) = window_notes(session, ["qwen-plus"], 1_000_000)  # the user's window: no guess
    assert given.endswith(f"not the model's own (qwen-plus unknown ({size:,} assumed)).")

    qwen = {"provider": "qwen", "model": "qwen-plus",
            "prices": {"qwen-plus": RateOverride(input=Decimal(1), output=Decimal(2))}}
    notes = replay(RUN42, "baseline", **qwen).notes
    assert sum("No context window is known for qwen-plus" in n for n in notes) == 1
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "run42.jsonl").write_bytes(RUN42.read_bytes())
    opts = BatchOptions(strategies="baseline", provider="qwen", model="qwen-plus",
                        prices=("qwen-plus=input:1,output:2",))
    batch = run_batch([logs], opts, workers=1).notes
    assert sum("No context window is known for qwen-plus" in n for n in batch) == 1
