"""The figures README.md and docs/*.md quote are what the code prints: each test reads the figure
from the document itself and compares it with a fresh run, so a change of results fails here
until the document says the new figure. Figures of the shared dev samples skip without them."""

from __future__ import annotations

import re
from decimal import Decimal
from functools import cache

import polars as pl
import pytest
from conftest import ROOT, RUN42
from test_adapters_common import SAMPLES, needs_samples

import replay

PI_LARGE = "pi/badlogic__pi-mono__packages_coding-agent_test_fixtures_large-session.jsonl"
CODEX_A7 = ("codex/blackgirlbytes__entire-token-costs-benchmark-tests__entire-checkpoints-v1__a7_"
            "1156299398_0_full.jsonl")
CODEX_PLANETFALL = ("codex/blackgirlbytes__planetfall-seed-signalkit__entire-checkpoints-v1__18_"
                    "e55e8a9e52_9_full.jsonl")


@cache
def _doc(name: str) -> str:
    """The document, its lines joined (a figure may wrap onto the next line)."""
    return " ".join((ROOT / name).read_text(encoding="utf-8").split())


def _number(text: str) -> float:
    """`1,234` → 1234, `−12.7` (a minus sign) → -12.7."""
    return float(text.replace(",", "").replace("−", "-"))


@pytest.fixture(scope="module")
def run42():
    return replay.replay(RUN42, "all", keep_records=False, per_turn=False).summary


def _row(summary, strategy: str) -> dict:
    return next(r for r in summary.iter_rows(named=True) if r["strategy"] == strategy)


# --- README, "Results on the sample run" --------------------------------------------------------


def test_readme_request_count_of_the_sample_run(run42) -> None:
    quoted = re.search(r"recorded by `replay record-fixture`: (\d+) requests", _doc("README.md"))
    assert quoted, "README no longer gives the sample run's request count"
    assert set(run42["requests"]) == {int(quoted.group(1))}


def test_readme_blind_actions_of_the_sample_run(run42) -> None:
    text = _doc("README.md")
    quoted = re.search(r"flags `([a-z0-9-]+)` with a blind action .*? while (.*?) show none",
                       text)
    assert quoted, "README no longer says which strategies the sample run flags"
    flagged, clean = quoted.group(1), re.findall(r"`([a-z0-9-]+)`", quoted.group(2))
    assert _row(run42, flagged)["blind_actions"] == 1  # "a blind action"
    assert {s: _row(run42, s)["blind_actions"] for s in clean} == dict.fromkeys(clean, 0)
    # "`recorded` ... gives the rate of such flags on a log — 0 on `logs/run42.jsonl`"
    rate = re.search(r"gives the rate of such flags on a log — (\d+) on `logs/run42.jsonl`", text)
    assert rate and _row(run42, "recorded")["blind_actions"] == int(rate.group(1))


def test_readme_blind_mentions_of_the_sample_run(run42) -> None:
    quoted = re.search(r"\(on `logs/run42.jsonl`, ((?:`[a-z0-9-]+` \d+,? )+)each in a message",
                       _doc("README.md"))
    assert quoted, "README no longer gives the sample run's hidden mentions"
    counts = {name: int(n) for name, n in re.findall(r"`([a-z0-9-]+)` (\d+)", quoted.group(1))}
    assert len(counts) == 3
    assert {s: _row(run42, s)["blind_mentions"] for s in counts} == counts


def test_readme_strategy_count_of_the_sample_figures() -> None:
    # "On the ten sample logs with `-s all` (48 strategies)": measured with every built-in one;
    # a strategy added or removed since means those totals need measuring again.
    from replay.strategies import canonical_names

    quoted = re.search(r"with `-s all` \((\d+) strategies\)", _doc("README.md"))
    assert quoted and int(quoted.group(1)) == len(canonical_names())


# --- docs/report.md, "Tables on a narrow terminal" ----------------------------------------------


def _stdout_on_a_terminal(args: list[str], columns: int) -> str:
    from click.testing import CliRunner

    from replay.cli import cli
    from replay.cli._main import load_commands

    load_commands()
    env = {"NO_COLOR": "1", "TTY_COMPATIBLE": "1", "COLUMNS": str(columns)}
    result = CliRunner(env=env).invoke(cli, [str(a) for a in args], prog_name="replay",
                                       catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)


def test_report_doc_widths_below_which_tables_become_records() -> None:
    quoted = re.search(r"below (\d+) columns for `breakeven` on the sample log, (\d+) for "
                       r"`replay run`'s summary", _doc("docs/report.md"))
    assert quoted, "docs/report.md no longer gives the widths"
    for command, width in (("breakeven", int(quoted.group(1))), ("run", int(quoted.group(2)))):
        args = [command, RUN42, "-q"]  # (every strategy: the default)

        def records(columns: int) -> bool:
            lines = _stdout_on_a_terminal(args, columns).splitlines()  # noqa: B023
            return any(line.startswith("strategy  ") for line in lines)

        assert records(width - 1), f"{command}: side by side at {width - 1} columns"
        assert not records(width), f"{command}: records at {width} columns"


# --- the shared dev samples ---------------------------------------------------------------------


@needs_samples
def test_baseline_prefix_breaks_on_the_pi_large_session() -> None:
    summary = replay.replay(SAMPLES / PI_LARGE, ["baseline"], keep_records=False,
                            per_turn=False).summary
    breaks = _row(summary, "baseline")["prefix_breaks"]
    for doc, pattern in (("README.md", r"\((\d+) on the pi large-session sample\)"),
                         ("docs/strategies.md", r"\((\d+) on the pi large-session sample\)")):
        quoted = re.search(pattern, _doc(doc))
        assert quoted, f"{doc} no longer gives baseline's prefix breaks on pi large-session"
        assert int(quoted.group(1)) == breaks, doc


@needs_samples
def test_strategies_doc_rewrite_counts_on_codex_a7() -> None:
    text = _doc("docs/strategies.md")
    quoted = re.search(r"`compact-chained-at-12000` and `prune-at-12000-keep-3` \(freeze-once\) "
                       r"rewrite at (\d+) and (\d+) of the Codex a7 sample's (\d+) requests", text)
    large = re.search(r"`prune-at-400k-keep-3`: (\d+) rewrites of the chained one on a7", text)
    assert quoted and large, "docs/strategies.md no longer gives the rewrite counts on a7"
    names = ["compact-chained-at-12000", "prune-at-12000-keep-3", "compact-chained-at-400k"]
    turns = replay.replay(SAMPLES / CODEX_A7, names).turns
    requests = turns.filter(turns["kind"] == "request")
    rewriting = {name: requests.filter((requests["strategy"] == name)
                                       & requests["rewrites"].is_not_null()).height
                 for name in names}
    assert rewriting == {names[0]: int(quoted.group(1)), names[1]: int(quoted.group(2)),
                         names[2]: int(large.group(1))}
    assert requests.filter(requests["strategy"] == names[0]).height == int(quoted.group(3))


def _cells(doc: str, row_start: str) -> list[str]:
    """The cells after the first of the table row of `doc` that starts with `row_start`."""
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    line = next(line for line in lines if line.lstrip().startswith(f"| {row_start}"))
    return [c.strip() for c in line.strip().strip("|").split("|")][1:]


def _figures(cell: str) -> list[float]:
    """The figures of a cell, leaving out those of a `(was …)` aside."""
    cell = re.sub(r"\(was [^)]*\)", "", cell)
    return [_number(n) for n in re.findall(r"[−+-]?\d[\d,]*(?:\.\d+)?", cell)]


@needs_samples
def test_cache_rules_doc_codex_fidelity_table() -> None:
    from replay.fidelity import fidelity

    doc = "docs/cache-rules.md"
    rows = {
        "reads within 128 tokens": ("cache_read_within_128", "naive_rule_within_128", 100, 1),
        "reads within max(2 %, 256)": ("cache_read_within_tolerance",
                                       "naive_rule_within_tolerance", 100, 1),
        "mean prompt error": ("mean_abs_prompt_error_tokens", None, 1, 1),
        "session cost error": ("cost_error", "cost_error_explained", 100, None),
    }
    for column, sample in enumerate((CODEX_A7, CODEX_PLANETFALL)):
        summary = fidelity(SAMPLES / sample).summary
        for start, (first, second, scale, digits) in rows.items():
            quoted = _figures(_cells(doc, start)[column])
            measured = [summary[first] * scale] + ([summary[second] * scale] if second else [])
            # (the cost errors, -12.7 % / +0.02 %, with as many decimals as the table gives)
            digits_each = [1, 2] if digits is None else [digits] * len(measured)
            assert quoted == [round(m, d) for m, d in zip(measured, digits_each, strict=True)], (
                f"{doc}, {start}, {sample.split('/')[0]} column {column}")


@needs_samples
def test_readme_codex_reads_and_cost_error() -> None:
    from replay.fidelity import fidelity

    quoted = re.search(r"\(Codex samples: (\d+)–(\d+) % of reads within 128 tokens; .*? about "
                       r"(−\d+) % of the session cost\)", _doc("README.md"))
    assert quoted, "README no longer gives the Codex samples' reads and cost error"
    low, high, cost = int(quoted.group(1)), int(quoted.group(2)), _number(quoted.group(3))
    summaries = [fidelity(SAMPLES / s).summary for s in (CODEX_A7, CODEX_PLANETFALL)]
    assert sorted(round(100 * s["cache_read_within_128"]) for s in summaries) == [low, high]
    assert all(abs(100 * s["cost_error"] - cost) < 1 for s in summaries)


# docs/adapters.md, "Dev samples": the first cell's words → the sample's file (a unique part).
DEV_SAMPLES = {
    "claude fe5e1c67": "fe5e1c67", "claude 5c0375b4": "5c0375b4",
    "claude bmad 91_03598e5336": "91_03598e5336", "claude cb_190e483db3": "cb_190e483db3",
    "claude planetfall 39": "39_648afe5b7f", "codex a7": "a7_1156299398",
    "codex planetfall 18": "18_e55e8a9e52", "pi before-compaction": "before-compaction",
    "pi large-session": "large-session", "opencode nimbus": "nimbus",
}


@needs_samples
@pytest.mark.parametrize("label", sorted(DEV_SAMPLES))
def test_adapters_doc_dev_sample_totals(label: str) -> None:
    """docs/adapters.md's "Dev samples" table: requests, threads, and the billed totals
    (uncached / read / write / output) the adapters read from each sample."""
    [path] = [p for p in SAMPLES.glob("*/*full.json*") if DEV_SAMPLES[label] in p.name] or [
        p for p in SAMPLES.glob("*/*.jsonl") if DEV_SAMPLES[label] in p.name]
    requests_cell, totals_cell = _cells("docs/adapters.md", label)
    session = replay.load(path)
    markers = [e for e in session.events if e.type == "request"]
    usages = [m.usage for m in markers if m.usage is not None]
    assert len(markers) == int(re.match(r"\d+", requests_cell).group(0))
    threads = re.search(r"main (\d+) \+ (\d+) sidechains", requests_cell)
    if threads:
        assert sum(m.thread == "main" for m in markers) == int(threads.group(1))
        assert len({m.thread for m in markers}) - 1 == int(threads.group(2))
    totals = [sum(getattr(u, field) or 0 for u in usages) for field in (
        "input_tokens", "cache_read_tokens", "cache_write_5m_tokens", "output_tokens")]
    totals[2] += sum(u.cache_write_1h_tokens or 0 for u in usages)
    quoted = [int(_number(n)) for n in re.findall(r"\d[\d,]*", totals_cell)[:4]]
    assert quoted == totals
    cost = re.search(r"pi cost \$([\d.]+)", totals_cell)
    if cost:
        logged = sum(float(u.cost_usd) for u in usages if u.cost_usd is not None)
        assert f"{logged:.4f}" == cost.group(1)


BMAD = ("claude_code/ShamsiievDmytro__entire-bmad__entire-checkpoints-v1__91_03598e5336_9_full"
        ".jsonl")


@needs_samples
def test_adapters_doc_what_claude_code_sent_with_its_compaction_on_bmad() -> None:
    """docs/adapters.md, the fit's `residual` row: on entire-bmad, the context the harness sent
    with its compaction (fitted at the first request after it), and `baseline`, which drops it."""
    from replay.fidelity import fidelity

    cell = _cells("docs/adapters.md", "residual")[1]
    quoted = re.search(r"re-attaches recent files: ~(\d+)k tokens on entire-bmad", cell)
    costs = re.search(r"`baseline` cost \$[\d.]+, now \$([\d.]+), its peak prompt [\d,]+ → "
                      r"([\d,]+)", cell)
    assert quoted and costs, "docs/adapters.md no longer gives the bmad figures"
    session = replay.load(SAMPLES / BMAD)
    [compaction] = [i for i, e in enumerate(session.events) if e.type == "compaction"]
    after = next(e.request_id for e in session.events[compaction:] if e.type == "request")
    row = fidelity(session).frame.filter(pl.col("request_id") == after).row(0, named=True)
    assert round(row["fitted_residual"] / 1000) == int(quoted.group(1))
    baseline = _row(replay.replay(session, ["baseline"], keep_records=False,
                                  per_turn=False).summary, "baseline")
    assert f"{baseline['cost_usd']:.3f}" == costs.group(1)
    assert baseline["peak_prompt_tokens"] == int(_number(costs.group(2)))


def test_readme_tokenizer_factors_are_the_tables() -> None:
    from replay.tokens import tokenizer_rows

    quoted = re.search(r"Claude ([\d.]+) and Opus 4\.7\+ ([\d.]+), measured by `replay calibrate`",
                       _doc("README.md"))
    assert quoted, "README no longer gives the Claude factors"
    factors = {r["family"]: r["factor"] for r in tokenizer_rows()}
    assert (factors["claude"], factors["claude-new-tokenizer"]) == (
        float(quoted.group(1)), float(quoted.group(2)))


def test_batch_doc_constants() -> None:
    from replay.batch import BatchOptions
    from replay.batch._options import DEFAULT_CHAIN_BYTES, horizon_seconds
    from replay.batch._run import BUNDLE_BYTES, BUNDLE_FILES

    text = _doc("docs/batch.md")
    ttl = re.search(r"`--cache-rules`; (\d+) hours today, DeepSeek's\)", text)
    chain = re.search(r"A chain is also cut after (\d+) MiB of logs", text)
    bundle = re.search(r"up to (\d+) files or (\d+) MiB per task", text)
    assert ttl and chain and bundle, "docs/batch.md no longer gives these figures"
    assert horizon_seconds(BatchOptions()) == int(ttl.group(1)) * 3600
    documented = (int(chain.group(1)) * 2**20, int(bundle.group(1)), int(bundle.group(2)) * 2**20)
    assert documented == (DEFAULT_CHAIN_BYTES, BUNDLE_FILES, BUNDLE_BYTES)


@needs_samples
def test_report_doc_progress_bar_total_on_pi_before_compaction() -> None:
    """docs/report.md's progress-bar example, in its sentence on the pi sample before-compaction:
    the total is the counterfactual requests that strategy's break-even replays there."""
    from replay.breakeven._breakeven import breakeven_config, strategy_rewrites
    from replay.engine import ReplayConfig
    from replay.strategies import resolve

    quoted = re.search(r"\(`([a-z0-9-]+) · [\d,]+ / ([\d,]+) counterfactual requests`\)",
                       _doc("docs/report.md"))
    assert quoted, "docs/report.md no longer shows the progress bar"
    session = replay.load(SAMPLES / "pi" / ("badlogic__pi-mono__packages_coding-agent_test_"
                                            "fixtures_before-compaction.jsonl"))
    [named] = resolve(quoted.group(1))
    with strategy_rewrites(session, named, breakeven_config(session, ReplayConfig()),
                           None) as rewrites:
        assert sum(rewrites.steps) == int(_number(quoted.group(2)))


CLAUDE_FIDELITY = {"bmad 91": "91_03598e5336", "cb_190": "cb_190e483db3",
                   "planetfall 39": "39_648afe5b7f", "5c0375b4": "5c0375b4",
                   "fe5e1c67": "fe5e1c67"}


@needs_samples
@pytest.mark.parametrize("label", sorted(CLAUDE_FIDELITY))
def test_adapters_doc_claude_code_fidelity_table(label: str) -> None:
    """docs/adapters.md's table of `replay fidelity` on the Claude Code samples."""
    from replay.fidelity import fidelity

    [path] = [p for p in (SAMPLES / "claude_code").glob("*.jsonl")
              if CLAUDE_FIDELITY[label] in p.name]
    requests, within, within_128, fitted, cost, outside = _cells("docs/adapters.md", label)
    checked = fidelity(path)
    summary = checked.summary
    assert summary["requests"] == int(requests)
    assert _figures(within) == [round(100 * summary["cache_read_within_tolerance"], 1),
                                round(100 * summary["naive_rule_within_tolerance"], 1)]
    assert _figures(within_128) == [round(100 * summary["cache_read_within_128"], 1)]
    assert summary["fitted_reads"] == int(fitted)
    assert _figures(cost) == [round(100 * summary["cost_error"], 2)]
    off = [r for r in checked.frame.iter_rows(named=True) if not r["read_within_tolerance"]]
    if outside == "—":
        assert off == []
    else:
        indexes, cause = outside.split(": ")
        assert [r["request_index"] for r in off] == [int(i) for i in indexes.split(", ")]
        assert all(r["unexplained"].startswith(cause) for r in off)


@needs_samples
def test_adapters_doc_opencode_nimbus_bill() -> None:
    """docs/adapters.md, opencode: the nimbus sample's bill at genai-prices against opencode's
    own cost, and what `replay fidelity` gives once reasoning is counted once."""
    from replay.fidelity import fidelity

    text = _doc("docs/adapters.md")
    logged = re.search(r"\$([\d.]+) logged for \$([\d.]+) at genai-prices", text)
    checked = re.search(r"recorded \$([\d.]+), simulated \$([\d.]+), cost ([+−]\d+\.\d+) % "
                        r"\(([+−]\d+\.\d+) % on the requests the log explains\)", text)
    assert logged and checked, "docs/adapters.md no longer gives the nimbus figures"
    session = replay.load(SAMPLES / "opencode" / ("dayhaysoos__nimbus__entire-checkpoints-v1__07_"
                                                  "fe4e0ea90c_1_full.json"))
    own = sum(Decimal(e.usage.cost_usd) for e in session.events
              if e.type == "request" and e.usage and e.usage.cost_usd is not None)
    summary = fidelity(session).summary
    assert f"{own:.4f}" == logged.group(1)
    assert f"{summary['recorded_cost_usd']:.4f}" == logged.group(2) == checked.group(1)
    assert f"{summary['simulated_cost_usd']:.4f}" == checked.group(2)
    assert round(100 * summary["cost_error"], 2) == _number(checked.group(3))
    assert round(100 * summary["cost_error_explained"], 2) == _number(checked.group(4))


@needs_samples
@pytest.mark.parametrize("sample", ["before-compaction", "large-session"])
def test_adapters_doc_pi_restarts_and_level_changes(sample: str) -> None:
    """docs/adapters.md, pi fidelity table: the restarts the adapter infers and the logged
    thinking-level changes of each sample."""
    row = _cells("docs/adapters.md", f"{sample} (")[1]
    quoted = re.search(r"\((\d+) inferred restarts, (\d+) level changes?\)", row)
    assert quoted, f"docs/adapters.md no longer gives {sample}'s restarts"
    session = replay.load(SAMPLES / "pi" / f"badlogic__pi-mono__packages_coding-agent_test_"
                                           f"fixtures_{sample}.jsonl")
    levels = [e.thinking_level for e in session.events if e.type == "request"]
    changes = sum(a != b for a, b in zip(levels, levels[1:], strict=False))
    assert (session.header.inferred_restarts, changes) == (int(quoted.group(1)),
                                                          int(quoted.group(2)))


def test_the_defaults_the_docs_give_are_the_options() -> None:
    from replay.cli import cli
    from replay.cli._main import load_commands

    load_commands()

    def default(command: str, name: str):
        return next(p for p in cli.commands[command].params if p.name == name).default

    naive = re.search(r"Run on the first `--naive-requests` requests \(default (\d+)\)",
                      _doc("docs/performance.md"))
    assert naive and default("bench", "naive_requests") == int(naive.group(1))
    assert "`--workers 1` (the default, one process, as before)" in _doc("docs/performance.md")
    assert {default(c, "workers") for c in ("run", "breakeven", "report")} == {1}
    assert "`--breakeven / --no-breakeven` (default on)" in _doc("docs/report.md")
    assert default("report", "breakeven") is True
    assert "`--engine pool` (default)" in _doc("docs/batch.md")
    assert default("batch", "engine") == "pool"


PROBE = '''"""What a token-sized rule counts of the full history, and of it the size-only parts."""
from replay.strategies import AssistantItem, UserItem
from replay.strategies._common import request_tokens, sized_only

NAME = "probe-counted-size"


def strategy(history, ctx):
    if ctx.request_index == AT:
        sizes = (request_tokens(history, ctx),
                 sum(sized_only(i) for i in history if isinstance(i, AssistantItem)),
                 sum(sized_only(i) for i in history if isinstance(i, UserItem)))
        with open(OUT, "w") as f:
            f.write(" ".join(map(str, sizes)))
    return history
'''


@needs_samples
def test_strategies_doc_thinking_a_rule_counts_on_codex_a7(tmp_path, clean_registry) -> None:
    """docs/strategies.md: at a7's largest request a token-sized rule counts the earlier turns'
    reasoning OpenAI strips (the figure is its size and the rule's count), and the unlogged
    context it used to miss."""
    from replay.strategies import load_strategy_file

    quoted = re.search(r"\(~(\d+)k of the (\d+)k tokens a rule counts at request (\d+), the Codex "
                       r"a7 sample's largest\); before, the rules missed all of it and the "
                       r"unlogged context \(~(\d+)k there\)", _doc("docs/strategies.md"))
    assert quoted, "docs/strategies.md no longer gives the a7 sizes"
    thinking, counted, at, unlogged = (int(g) for g in quoted.groups())
    out, path = tmp_path / "sizes.txt", tmp_path / "probe_counted_size.py"
    path.write_text(f"AT = {at}\nOUT = {str(out)!r}\n{PROBE}", encoding="utf-8")
    load_strategy_file(path)
    result = replay.replay(SAMPLES / CODEX_A7, ["recorded", "probe-counted-size"])
    recorded = result.turns.filter((pl.col("strategy") == "recorded")
                                   & (pl.col("kind") == "request"))
    assert recorded.sort("prompt_tokens")["request_index"][-1] == at  # the largest request
    sizes = [int(n) for n in out.read_text().split()]
    assert [round(n / 1000) for n in sizes] == [counted, thinking, unlogged]


CALIBRATION_ROWS = {
    "entire-bmad 91": "claude_code/*91_03598e5336*full.jsonl",
    "cb_190": "claude_code/*cb_190e483db3*full.jsonl",
    "planetfall 39": "claude_code/*39_648afe5b7f*full.jsonl",
    "d-kimuson 5c0375b4": "claude_code/*5c0375b4.jsonl",
    "d-kimuson fe5e1c67": "claude_code/*fe5e1c67.jsonl",
    "pi before-compaction": "pi/*before-compaction.jsonl",
    "pi large-session": "pi/*large-session.jsonl",
}


@needs_samples
@pytest.mark.parametrize("label", sorted(CALIBRATION_ROWS))
def test_calibration_doc_column_d_is_what_fidelity_gives(label: str) -> None:
    """docs/calibration.md's table of `replay fidelity` before and after the signed fit: its
    column D (measured factors, signed fit) is what the code gives now."""
    from replay.fidelity import fidelity

    [path] = SAMPLES.glob(CALIBRATION_ROWS[label])
    within, within_128, cost, residual = (_figures(c)[-1]
                                          for c in _cells("docs/calibration.md", label))
    summary = fidelity(path).summary
    assert within == round(100 * summary["cache_read_within_tolerance"], 1)
    assert within_128 == round(100 * summary["cache_read_within_128"], 1)
    assert cost == round(100 * summary["cost_error"], 2)
    assert residual == summary["fitted_residual_tokens"]


@needs_samples
def test_calibration_doc_table_is_what_calibrate_measures() -> None:
    """docs/calibration.md, "Measured on the sample logs": pairs, factor with its interval,
    quartiles and fitted framing of each family, as `replay calibrate` gives them now."""
    from replay.tokens import calibrate

    logs = sorted((SAMPLES / "claude_code").glob("*.jsonl"))
    families = {c.family: c for c in calibrate([replay.load(p) for p in logs])}
    for family in ("claude", "claude-new-tokenizer"):
        _, pairs, factor, quartiles, framing = _cells("docs/calibration.md", f"`{family}`")
        c = families[family]
        assert _figures(pairs) == [c.pairs, c.candidates], family
        assert _figures(factor.replace("–", " ")) == [
            round(x, 3) for x in (c.factor.value, c.factor.low, c.factor.high)], family
        assert _figures(quartiles) == [round(q, 2) for q in c.quartiles], family
        fitted = [round(c.framing.factor.value, 3), round(c.framing.per_message.value, 1)]
        if "calls not separable" not in framing:
            fitted.append(round(c.framing.per_tool_call.value, 1))
        assert _figures(framing) == fitted, family


@needs_samples
def test_cache_rules_doc_what_the_codex_logs_cannot_explain() -> None:
    """docs/cache-rules.md, "What the log cannot explain": the reads `replay fidelity` labels
    on the two Codex rollouts, by label (and request, where the doc names them)."""
    from replay.fidelity import fidelity

    text = _doc("docs/cache-rules.md")
    routing = re.search(r"`routing/eviction` and `stale entry` \(a7 (\d+) \+ (\d+), planetfall "
                        r"(\d+) \+ (\d+)\)", text)
    size = re.search(r"`prompt size` \(a7 (\d+), was \d+\)", text)
    retention = re.search(r"`retention` \(a7 (\d+): requests ([\d, ]+)\)", text)
    prefix = re.search(r"`prompt prefix changed outside the log` \(a7 request (\d+)\)", text)
    assert routing and size and retention and prefix and "`retried request` (one in each)" in text
    labelled = {}
    for name, sample in (("a7", CODEX_A7), ("planetfall", CODEX_PLANETFALL)):
        frame = fidelity(SAMPLES / sample).frame
        labelled[name] = {}
        for row in frame.filter(pl.col("unexplained").is_not_null()).iter_rows(named=True):
            label = row["unexplained"].split(":")[0]
            labelled[name].setdefault(label, []).append(row["request_index"])
    a7, planetfall = labelled["a7"], labelled["planetfall"]
    counts = [len(log[label]) for log in (a7, planetfall)
              for label in ("routing/eviction", "stale entry")]
    assert counts == [int(g) for g in routing.groups()]
    assert len(a7["prompt size"]) == int(size.group(1))
    assert a7["retention"] == [int(n) for n in retention.group(2).split(", ")]
    assert len(a7["retention"]) == int(retention.group(1))
    assert a7["prompt prefix changed outside the log"] == [int(prefix.group(1))]
    assert len(a7["retried request"]) == len(planetfall["retried request"]) == 1


def test_performance_doc_share_thresholds() -> None:
    from replay.engine._parallel import SHARE_MIN_STEPS, SHARE_STEPS

    quoted = re.search(r"when that is at least (\d+) per request of its run and ([\d,]+) per "
                       r"share", _doc("docs/performance.md"))
    assert quoted, "docs/performance.md no longer gives the break-even share thresholds"
    assert (int(quoted.group(1)), int(_number(quoted.group(2)))) == (SHARE_STEPS, SHARE_MIN_STEPS)
