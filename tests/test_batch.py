"""`replay batch`: discovery, per-file errors, the Parquet dataset, process pool and Ray engines,
the incremental cache, and provider caches shared across sessions."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import shutil
import socket
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import genai_prices
import polars as pl
import pytest

import replay._api as replay_api
from replay import replay
from replay._errors import ReplayError
from replay.batch import SESSION_META, SESSION_PRICING, BatchOptions, plan_groups, run_batch, scan
from replay.batch._engines import check_ray_address
from replay.batch._work import FileInfo, ScanResult
from replay.engine import SUMMARY_COLUMNS, TURN_COLUMNS
from replay.log import RequestMarker, Session, read_log, write_log

ROOT = Path(__file__).resolve().parents[1]
RUN42 = ROOT / "logs" / "run42.jsonl"
SAMPLES = ROOT.parent / "shared" / "samples"
STRATEGIES = "baseline,truncate-500"
ANTHROPIC = {"provider": "anthropic", "model": "claude-sonnet-4-5"}
DAY = timedelta(days=1)
# A system prompt long enough to be cached on its own (Anthropic: 1,024 tokens; Gemini: 2,048).
LONG_SYSTEM = "\n".join(
    f"Rule {n}: keep module {n} small, tested and documented; never break its public API."
    for n in range(200)
)


def variant(
    path: Path, session_id: str, shift: timedelta, stretch: float = 1.0, **header: str
) -> Path:
    """A copy of the sample run with another session id, shifted in time, its pace slowed
    `stretch` times (the recorded run takes a third of a second), and optionally another
    provider / model in its header."""
    base = read_log(RUN42)
    t0 = base.header.ts
    head = base.header.model_copy(
        update={"session_id": session_id, "ts": t0 + shift, **header}
    )
    events = []
    for e in base.events:
        update = {"ts": t0 + shift + (e.ts - t0) * stretch}
        if isinstance(e, RequestMarker):
            update |= {k: v for k, v in header.items() if getattr(e, k, None) is not None}
        events.append(e.model_copy(update=update))
    write_log(Session(header=head, events=events), path)
    return path


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    """Four logs (two overlapping in time, one a day later, one in a subfolder), a log that is
    broken beyond use, and a file that is no log at all. Sessions are moved into the past (a
    file is always written after its session)."""
    root = tmp_path / "logs"
    variant(root / "a.jsonl", "a", -DAY * 3)
    variant(root / "b.jsonl", "b", -DAY * 3 + timedelta(seconds=90))
    variant(root / "c.jsonl", "c", -DAY * 2)
    variant(root / "deep" / "d.jsonl", "d", -DAY)
    header = RUN42.read_text(encoding="utf-8").splitlines()[0]
    (root / "broken.jsonl").write_text(header + "\n{not json\n", encoding="utf-8")
    (root / "notes.md").write_text("# not a log\n\nJust notes.\n", encoding="utf-8")
    return root


def sessions(dataset: Path) -> pl.DataFrame:
    return (
        pl.scan_parquet(dataset / "sessions" / "**" / "*.parquet")
        .collect()
        .sort(["file", "strategy"])
    )


def requests(dataset: Path) -> pl.DataFrame:
    return scan(dataset, "requests").collect().sort(["file", "strategy", "request_index", "kind"])


def status_of(report) -> dict[str, str]:
    return {Path(f.path).name: f.status for f in report.files}


def test_batch_replays_logs_counts_errors_and_writes_a_dataset(logdir: Path, tmp_path: Path):
    out = tmp_path / "ds"
    opts = BatchOptions(strategies=STRATEGIES, per_request=True)
    report = run_batch([logdir], opts, output=out, workers=1)

    assert status_of(report) == {
        "a.jsonl": "replayed",
        "b.jsonl": "replayed",
        "c.jsonl": "replayed",
        "d.jsonl": "replayed",
        "broken.jsonl": "failed",
        "notes.md": "skipped",
    }
    counts = report.counts
    assert (counts["ok"], counts["skipped"], counts["failed"]) == (4, 1, 1)
    broken = next(f for f in report.files if f.path.endswith("broken.jsonl"))
    assert "no requests" in broken.message

    rows = sessions(out)
    assert rows.columns == SESSION_META + SUMMARY_COLUMNS + SESSION_PRICING
    assert rows["price_fallback_requests"].to_list() == [0] * 8
    assert rows["price_fallback"].null_count() == 8
    assert rows.height == 4 * 2
    assert sorted(set(rows["session_id"])) == ["a", "b", "c", "d"]
    assert set(rows["strategy"]) == {"baseline", "truncate-500"}
    assert rows["requests"].to_list() == [14] * 8
    assert rows["agent"].unique().to_list() == ["replay-recorder"]
    assert rows.schema["started_at"] == pl.Datetime("us", "UTC")

    per_request = requests(out)
    assert per_request.columns[-len(TURN_COLUMNS) :] == TURN_COLUMNS
    assert per_request.filter(pl.col("kind") == "request").height == 4 * 2 * 14
    # totals per strategy cover every ok session
    totals = {r["strategy"]: r for r in report.totals.iter_rows(named=True)}
    assert list(totals) == ["baseline", "truncate-500"]
    assert totals["baseline"]["sessions"] == 4
    assert totals["baseline"]["cost_usd"] == rows.filter(strategy="baseline")["cost_usd"].sum()
    base = totals["baseline"]  # unrounded: the table rounds it once
    assert base["hit_ratio"] == base["cached_tokens"] / base["prompt_tokens"]
    assert report.requests == 4 * 14
    # one part per replayed file, none for the failed or skipped ones
    assert len(list((out / "sessions").glob("*.parquet"))) == 4


def test_process_pool_writes_the_same_dataset_as_serial(logdir: Path, tmp_path: Path):
    opts = BatchOptions(strategies=STRATEGIES, per_request=True)
    serial = run_batch([logdir], opts, output=tmp_path / "serial", workers=1)
    pooled = run_batch([logdir], opts, output=tmp_path / "pool", engine="pool", workers=2)
    assert pooled.engine == "pool" and pooled.workers == 2
    assert status_of(pooled) == status_of(serial)
    assert sessions(tmp_path / "pool").equals(sessions(tmp_path / "serial"))
    assert requests(tmp_path / "pool").equals(requests(tmp_path / "serial"))
    assert pooled.totals.equals(serial.totals)
    names = {p.name for p in (tmp_path / "serial" / "sessions").iterdir()}
    assert names == {p.name for p in (tmp_path / "pool" / "sessions").iterdir()}


def test_rerun_skips_unchanged_files_and_replays_a_touched_one(logdir: Path, tmp_path: Path):
    out = tmp_path / "ds"
    opts = BatchOptions(strategies=STRATEGIES)
    first = run_batch([logdir], opts, output=out, workers=1)
    before = sessions(out)
    parts = sorted(p.name for p in (out / "sessions").iterdir())

    again = run_batch([logdir], opts, output=out, workers=1)
    assert [f.status for f in again.files if f.status in ("replayed", "unchanged")] == [
        "unchanged"
    ] * 4
    assert again.counts["failed"] == 1 and again.counts["skipped"] == 1
    assert again.totals.equals(first.totals)
    assert sessions(out).equals(before)

    later = datetime.now().timestamp() + 10
    os.utime(logdir / "c.jsonl", (later, later))
    touched = run_batch([logdir], opts, output=out, workers=1)
    changed = {n: s for n, s in status_of(touched).items() if s in ("replayed", "unchanged")}
    assert changed == {
        "a.jsonl": "unchanged",
        "b.jsonl": "unchanged",
        "c.jsonl": "replayed",
        "d.jsonl": "unchanged",
    }
    assert sorted(p.name for p in (out / "sessions").iterdir()) == parts  # no duplicate part
    assert sessions(out).equals(before)

    # an edited file: new content, new part, and the old part is gone
    variant(logdir / "deep" / "d.jsonl", "d2", -DAY)
    edited = run_batch([logdir], opts, output=out, workers=1)
    assert status_of(edited)["d.jsonl"] == "replayed"
    rows = sessions(out)
    assert rows.height == 4 * 2
    assert sorted(set(rows["session_id"])) == ["a", "b", "c", "d2"]

    forced = run_batch([logdir], opts, output=out, workers=1, force=True)
    assert forced.counts["replayed"] == 4


def test_a_rerun_with_other_replay_code_reads_and_replays_every_file_again(
    logdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A source checkout changes the code without a new version number: results cached by
    other code are not reused."""
    from replay.batch import _options

    out = tmp_path / "ds"
    opts = BatchOptions(strategies=STRATEGIES)
    run_batch([logdir], opts, output=out, workers=1)
    assert run_batch([logdir], opts, output=out, workers=1).counts["replayed"] == 0
    monkeypatch.setattr(_options, "_code_digest", lambda: "other code")
    assert run_batch([logdir], opts, output=out, workers=1).counts["replayed"] == 4


KEEP_LAST = """\
\"\"\"Keep the first message and the last N items.\"\"\"
NAME = "batch-keep-last"

def strategy(history, ctx, n=20):
    return list(history) if len(history) <= n + 1 else [history[0], *history[-n:]]
"""


def test_workers_load_the_plugin_files_loaded_here_and_reruns_follow_their_code(
    logdir: Path, tmp_path: Path, clean_registry
):
    """A plug-in file loaded with `load_strategy_file` runs in the batch as in `replay.replay`:
    spawned workers used to lack it (every file failed: unknown strategy), and an edited
    plug-in left its old rows in the dataset (the options digest ignored its code)."""
    from replay.strategies import load_strategy_file

    plugin = tmp_path / "keep_last.py"
    plugin.write_text(KEEP_LAST, encoding="utf-8")
    load_strategy_file(plugin)
    opts = BatchOptions(strategies="baseline,batch-keep-last")
    serial = run_batch([logdir], opts, workers=1)
    out = tmp_path / "ds"
    pooled = run_batch([logdir], opts, output=out, engine="pool", workers=2)
    assert pooled.counts["failed"] == serial.counts["failed"] == 1  # broken.jsonl alone
    assert pooled.totals.equals(serial.totals)

    assert run_batch([logdir], opts, output=out, workers=1).counts["replayed"] == 0
    plugin.write_text(KEEP_LAST.replace("n=20", "n=3"), encoding="utf-8")  # other code
    edited = run_batch([logdir], opts, output=out, workers=1)
    assert edited.counts["replayed"] == 4
    # replayed with the edited code here too (this process had loaded the file before)
    assert edited.totals.equals(run_batch([logdir], opts, engine="pool", workers=2).totals)
    assert not edited.totals.equals(serial.totals)


def _build_keep_last_three():
    return _keep_last_three


def _keep_last_three(history, ctx):
    return [history[0], *history[1:][-3:]]


def test_a_pool_runs_the_strategies_the_calling_program_registered(logdir: Path, clean_registry):
    """`register(spec)` from the calling program reaches a pool's workers, as with
    `replay.replay(workers=N)` (docs/strategies.md, "From code"): they never ran the call, and
    every file failed with "unknown strategy"."""
    from replay.strategies import StrategySpec, register

    register(StrategySpec(family="code-keep-three", pattern="code-keep-three",
                          build=_build_keep_last_three, cache_class="churn", rule="last three"))
    opts = BatchOptions(strategies="baseline,code-keep-three")
    serial = run_batch([logdir], opts, workers=1)
    pooled = run_batch([logdir], opts, engine="pool", workers=2)
    assert pooled.counts["failed"] == serial.counts["failed"] == 1  # broken.jsonl alone
    assert pooled.totals.equals(serial.totals)


def test_a_rerun_follows_the_code_of_a_plugin_package(
    logdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_registry
):
    """A plug-in from a package (or registered by the calling program) that was upgraded or
    edited since gives other rows: its files are replayed again (they were left as they were,
    priced by the old code)."""
    import importlib

    from replay.strategies import StrategySpec, register

    package = tmp_path / "site" / "batch_plugin_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    rule = package / "rule.py"
    rule.write_text("KEEP = 20\n", encoding="utf-8")
    (package / "spec.py").write_text(
        "from batch_plugin_pkg import rule\n\n"
        "def build():\n"
        "    return lambda history, ctx: [history[0], *history[1:][-rule.KEEP:]]\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    spec = importlib.import_module("batch_plugin_pkg.spec")
    register(StrategySpec(family="batch-pkg-keep", pattern="batch-pkg-keep", build=spec.build,
                          cache_class="churn", rule="keep the last items"))
    opts = BatchOptions(strategies="baseline,batch-pkg-keep")
    out = tmp_path / "ds"
    assert run_batch([logdir], opts, output=out, workers=1).counts["replayed"] == 4
    assert run_batch([logdir], opts, output=out, workers=1).counts["replayed"] == 0
    rule.write_text("KEEP = 3\n", encoding="utf-8")  # a module of the package, not the spec's
    assert run_batch([logdir], opts, output=out, workers=1).counts["replayed"] == 4
    for name in ("batch_plugin_pkg.spec", "batch_plugin_pkg.rule", "batch_plugin_pkg"):
        sys.modules.pop(name, None)


@pytest.fixture
def doubled_gemini(tmp_path: Path):
    """A user tokenizer file that counts Gemini tokens (run42's model) twice; the built-in table
    is back in force afterwards."""
    from replay.tokens import tokenizer_rows, use_tokenizers

    row = next(r for r in tokenizer_rows() if r["family"] == "gemini")
    path = tmp_path / "tokenizers.json"
    path.write_text(json.dumps({"families": [{**row, "factor": 2.0}]}), encoding="utf-8")
    yield path
    use_tokenizers(None)


def test_workers_count_with_the_tokenizer_file_in_force_and_reruns_when_it_changes(
    logdir: Path, tmp_path: Path, doubled_gemini: Path
):
    from replay.tokens import use_tokenizers

    opts = BatchOptions(strategies="baseline")
    built_in = run_batch([logdir], opts, workers=1).totals
    use_tokenizers(doubled_gemini)
    out = tmp_path / "ds"
    pooled = run_batch([logdir], opts, output=out, engine="pool", workers=2)
    serial = run_batch([logdir], opts, workers=1)
    # spawned workers do not inherit `use_tokenizers`: the batch hands them the file
    assert pooled.totals.equals(serial.totals)
    assert pooled.totals["prompt_tokens"][0] > 1.9 * built_in["prompt_tokens"][0]

    assert run_batch([logdir], opts, output=out, workers=1).counts["replayed"] == 0
    # the same path with other content is another table: every file is replayed again
    table = json.loads(doubled_gemini.read_text(encoding="utf-8"))
    table["families"][0]["factor"] = 3.0
    doubled_gemini.write_text(json.dumps(table), encoding="utf-8")
    use_tokenizers(doubled_gemini)
    assert run_batch([logdir], opts, output=out, workers=1).counts["replayed"] == 4


def test_other_options_replace_a_files_rows(logdir: Path, tmp_path: Path):
    out = tmp_path / "ds"
    run_batch([logdir], BatchOptions(strategies="baseline"), output=out, workers=1)
    report = run_batch([logdir], BatchOptions(strategies=STRATEGIES), output=out, workers=1)
    assert report.counts["replayed"] == 4
    # a file has the rows of its latest replay only: nothing is counted twice
    rows = sessions(out)
    assert rows.height == 4 * 2
    assert rows.group_by("file").len()["len"].to_list() == [2] * 4
    assert len(list((out / "sessions").iterdir())) == 4

    # files of another folder are appended next to them
    other = tmp_path / "other"
    variant(other / "e.jsonl", "e", -DAY * 5)
    run_batch([other], BatchOptions(strategies=STRATEGIES), output=out, workers=1)
    assert sorted(set(sessions(out)["session_id"])) == ["a", "b", "c", "d", "e"]


def test_ttl_reaches_every_files_replay_as_in_run(logdir: Path):
    """`--ttl` prices a batch as it prices `replay run`, and is part of a row's options."""
    import replay

    log = logdir / "a.jsonl"
    costs = {}
    for ttl in ("5m", "1h"):
        opts = BatchOptions(strategies="baseline", provider="anthropic",
                            model="claude-sonnet-4-5", ttl=ttl, share_cache=False)
        report = run_batch([log], opts, workers=1)
        alone = replay.replay(log, "baseline", provider="anthropic", model="claude-sonnet-4-5",
                              ttl=ttl)
        costs[ttl] = report.totals["cost_usd"].to_list()
        assert costs[ttl] == alone.summary["cost_usd"].to_list()
    assert costs["5m"] != costs["1h"]


def _first_request(frame: pl.DataFrame, session_id: str) -> dict:
    return (
        frame.filter(
            (pl.col("session_id") == session_id)
            & (pl.col("strategy") == "baseline")
            & (pl.col("kind") == "request")
        )
        .sort("request_index")
        .row(0, named=True)
    )


@pytest.mark.parametrize("header", [ANTHROPIC, {}], ids=["anthropic", "gemini-as-logged"])
def test_overlapping_sessions_share_the_provider_cache(tmp_path: Path, header: dict):
    header = {**header, "system": LONG_SYSTEM}
    logs = tmp_path / "logs"
    # `a` runs for about 3 minutes; `b` starts a minute after it
    variant(logs / "a.jsonl", "a", timedelta(0), stretch=600, **header)
    b = variant(logs / "b.jsonl", "b", timedelta(seconds=60), stretch=600, **header)
    out = tmp_path / "ds"
    report = run_batch(
        [logs], BatchOptions(strategies="baseline", per_request=True), output=out, workers=1
    )
    assert report.shared_groups == 1 and report.shared_sessions == 2
    assert any("shared provider cache" in n for n in report.notes)

    rows = sessions(out)
    assert rows["shared_cache"].to_list() == [True, True]
    assert rows["cache_group"].n_unique() == 1
    assert rows.sort("started_at")["group_position"].to_list() == [0, 1]

    shared_first = _first_request(requests(out), "b")
    assert shared_first["cached_tokens"] > 0  # the system prompt and tools that `a` cached

    alone = replay(b, "baseline").turns.row(0, named=True)
    assert alone["cached_tokens"] == 0
    assert alone["miss_cause"] == "cold start"

    isolated = run_batch(
        [logs],
        BatchOptions(strategies="baseline", per_request=True, share_cache=False),
        output=tmp_path / "isolated",
        workers=1,
    )
    assert isolated.shared_groups == 0
    assert _first_request(requests(tmp_path / "isolated"), "b")["cached_tokens"] == 0
    assert not any(sessions(tmp_path / "isolated")["shared_cache"])


def test_sessions_share_only_within_scope_and_ttl():
    def scanned(name: str, start: datetime, minutes: int, scope: str = "s1") -> ScanResult:
        info = FileInfo(
            session_id=name,
            agent="claude-code",
            provider="anthropic",
            model="claude-sonnet-4-5",
            started_at=start.isoformat(),
            ended_at=(start + timedelta(minutes=minutes)).isoformat(),
            requests=1,
            scope=scope,
        )
        return ScanResult(f"/logs/{name}", 100, 0, "ok", sha=name * 8, info=info)

    t0 = datetime(2026, 5, 1, 9, tzinfo=UTC)
    scans = [
        scanned("late", t0 + timedelta(hours=5), 10),  # more than an hour after `mid` ended
        scanned("first", t0, 30),
        scanned("mid", t0 + timedelta(minutes=80), 20),  # 50 min after `first` ended
        scanned("other", t0 + timedelta(minutes=5), 30, scope="s2"),  # another scope
    ]
    tasks = plan_groups(scans, BatchOptions(), horizon=3600, rkey="k" * 16)
    groups = sorted([m.info.session_id for m in t.members] for t in tasks)
    assert groups == [["first", "mid"], ["late"], ["other"]]
    shared = next(t for t in tasks if len(t.members) == 2)
    assert shared.shared and shared.group_id
    assert all(m.part.endswith(shared.group_id) for m in shared.members)
    alone = plan_groups(scans, BatchOptions(share_cache=False), horizon=3600, rkey="k" * 16)
    assert all(len(t.members) == 1 and not t.shared for t in alone)


def _rule_file(path: Path, provider: str, rule: str, value: int) -> Path:
    """The built-in cache rule file of `provider` with every row of `rule` set to `value`,
    written to `path`."""
    rules = json.loads((ROOT / "pricing" / "cache" / f"{provider}.json").read_text())
    for row in rules["rules"]:
        if row["rule"] == rule:
            row["value"] = value
    path.write_text(json.dumps(rules))
    return path


def test_the_chain_horizon_is_the_longest_ttl_of_the_rule_files(tmp_path: Path):
    """Sessions further apart than every TTL in force cannot share an entry: the built-in
    files' longest is DeepSeek's 2 hours (`pricing/cache/deepseek.json`); a user's file with a
    longer one extends it."""
    from replay.batch._options import horizon_seconds

    assert horizon_seconds(BatchOptions()) == 7200
    mine = _rule_file(tmp_path / "mine.json", "deepseek", "ttl_seconds", 10_800)
    assert horizon_seconds(BatchOptions(cache_rules=str(mine))) == 10_800
    # Gemini's explicit cache lives what the client asks (its rule file's explicit TTL).
    gemini = _rule_file(tmp_path / "gemini.json", "google", "explicit_ttl_seconds", 14_400)
    assert horizon_seconds(BatchOptions(cache_rules=str(gemini))) == 14_400


def test_unexpected_errors_are_reported_with_their_type(logdir: Path, monkeypatch):
    from replay.batch import _work

    real = _work._replay_alone

    def flaky(member, *args):
        if member.path.endswith("c.jsonl"):
            raise KeyError("boom")
        return real(member, *args)

    monkeypatch.setattr(_work, "_replay_alone", flaky)
    report = run_batch([logdir], BatchOptions(strategies="baseline"), workers=1)
    failed = {Path(f.path).name: f.message for f in report.files if f.status == "failed"}
    assert failed["c.jsonl"] == "KeyError: 'boom'"
    assert report.counts["replayed"] == 3


def test_a_failure_the_same_bytes_would_repeat_is_kept_and_its_chain_not_replayed(
    tmp_path: Path,
):
    # zz has no price: it fails at every replay. Its chain partners' rows do not change, so a
    # re-run replays none of them; a --price for it (other options) replays the chain.
    logs = tmp_path / "logs"
    for n in range(3):
        variant(logs / f"c{n}.jsonl", f"c{n}", timedelta(seconds=60 * n), stretch=600)
    variant(logs / "zz.jsonl", "zz", timedelta(seconds=200), stretch=600, model="nosuch-x")
    out, opts = tmp_path / "ds", BatchOptions(strategies="baseline")
    first = run_batch([logs], opts, output=out, workers=1)
    assert first.counts["replayed"] == 3 and first.counts["failed"] == 1
    why = next(f.message for f in first.files if f.status == "failed")
    again = run_batch([logs], opts, output=out, workers=1)
    assert status_of(again) == {"c0.jsonl": "unchanged", "c1.jsonl": "unchanged",
                                "c2.jsonl": "unchanged", "zz.jsonl": "failed"}
    assert next(f.message for f in again.files if f.status == "failed") == why
    assert again.totals.equals(first.totals)
    priced = dataclasses.replace(opts, prices=("nosuch-x=input:3,output:15",))
    assert run_batch([logs], priced, output=out, workers=1).counts["replayed"] == 4


def test_a_file_that_could_not_be_read_is_read_again_next_time(
    logdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # Permissions fixed later leave the size and mtime as they were: the failure is no
    # property of the file, and is not kept.
    from replay.batch import _work

    real = _work.file_sha256

    def denied(path):
        if path.endswith("c.jsonl"):
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(_work, "file_sha256", denied)
    out, opts = tmp_path / "ds", BatchOptions(strategies="baseline")
    first = run_batch([logdir], opts, output=out, workers=1)
    c = next(f for f in first.files if f.path.endswith("c.jsonl"))
    assert (c.status, c.message) == ("failed", "cannot read the file (Permission denied)")
    monkeypatch.setattr(_work, "file_sha256", real)
    assert status_of(run_batch([logdir], opts, output=out, workers=1))["c.jsonl"] == "replayed"

    def unreadable(member, *args):
        raise PermissionError(13, "Permission denied", member.path)

    monkeypatch.setattr(_work, "_replay_alone", unreadable)  # read at the scan, not after
    later = datetime.now().timestamp() + 10
    os.utime(logdir / "c.jsonl", (later, later))
    assert status_of(run_batch([logdir], opts, output=out, workers=1))["c.jsonl"] == "failed"
    monkeypatch.undo()
    assert status_of(run_batch([logdir], opts, output=out, workers=1))["c.jsonl"] == "replayed"


def test_a_folder_and_its_glob_find_the_same_logs_through_links(tmp_path: Path):
    top, elsewhere = tmp_path / "top", tmp_path / "elsewhere"
    variant(top / "y.jsonl", "y", timedelta(0))
    variant(elsewhere / "x.jsonl", "x", timedelta(0))
    try:
        (top / "linked").symlink_to(elsewhere, target_is_directory=True)
        (elsewhere / "loop").symlink_to(tmp_path, target_is_directory=True)
    except OSError:
        pytest.skip("no symbolic links here")
    opts = BatchOptions(strategies="baseline")
    folder = run_batch([top], opts, workers=1)
    glob = run_batch([str(top / "**" / "*.jsonl")], opts, workers=1)
    assert sorted(f.path for f in folder.files) == sorted(f.path for f in glob.files) == [
        str((elsewhere / "x.jsonl").resolve()), str((top / "y.jsonl").resolve())
    ]  # (paths resolved: a file reached through a link is named by its own path)


def test_forget_missing_drops_the_rows_of_deleted_files_only(logdir: Path, tmp_path: Path):
    out, opts = tmp_path / "ds", BatchOptions(strategies="baseline")
    other = variant(tmp_path / "elsewhere" / "e.jsonl", "e", -DAY)
    run_batch([logdir, other.parent], opts, output=out, workers=1)
    assert sorted(sessions(out)["session_id"]) == ["a", "b", "c", "d", "e"]
    (logdir / "c.jsonl").unlink()
    other.unlink()
    kept = run_batch([logdir], opts, output=out, workers=1)  # by default, rows stay
    assert sorted(sessions(out)["session_id"]) == ["a", "b", "c", "d", "e"]
    assert not any("no longer found" in n for n in kept.notes)
    dropped = run_batch([str(logdir / "**" / "*.jsonl")], opts, output=out, workers=1,
                        forget_missing=True)
    # only under the targets: e's folder was not one of them this time
    assert sorted(sessions(out)["session_id"]) == ["a", "b", "d", "e"]
    assert any(n.startswith("1 file no longer found under the targets") for n in dropped.notes)
    again = run_batch([logdir], opts, output=out, workers=1)  # the manifest forgot it too
    assert again.counts["unchanged"] == 3
    assert sorted(sessions(out)["session_id"]) == ["a", "b", "d", "e"]
    with pytest.raises(ReplayError, match="needs -o DATASET"):
        run_batch([logdir], opts, workers=1, forget_missing=True)


def test_a_forgotten_file_stays_forgotten_after_an_interrupted_run(logdir: Path, tmp_path: Path):
    from replay.batch._dataset import Dataset

    out = tmp_path / "ds"
    run_batch([logdir], BatchOptions(strategies="baseline"), output=out, workers=1)
    dataset = Dataset(out).open()
    path = str((logdir / "c.jsonl").resolve())
    assert path in dataset.entries
    dataset.forget(path)
    dataset._journal.close()  # stopped before the manifest is rewritten: only the journal
    dataset._lock.close()
    assert path not in Dataset(out).open().entries


def test_a_log_whose_name_is_no_utf8_is_replayed(tmp_path: Path):
    logs = tmp_path / "logs"
    logs.mkdir()
    name = os.fsdecode(b"bad\xffname.jsonl")
    try:
        shutil.copy(RUN42, logs / name)
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system takes only UTF-8 names")
    report = run_batch([logs], BatchOptions(strategies="baseline"), output=tmp_path / "ds",
                       workers=1)
    assert [f.status for f in report.files] == ["replayed"], report.files
    assert sessions(tmp_path / "ds")["file"].to_list() == [str(logs / "bad\\xffname.jsonl")]


def test_duplicates_dates_and_globs(logdir: Path, tmp_path: Path):
    shutil.copy(logdir / "a.jsonl", logdir / "deep" / "copy-of-a.jsonl")
    report = run_batch([logdir], BatchOptions(strategies="baseline"), workers=1)
    copy = next(f for f in report.files if f.path.endswith("copy-of-a.jsonl"))
    assert copy.status == "duplicate" and copy.message.endswith("a.jsonl")

    c_day = (read_log(RUN42).header.ts - DAY * 2).date()
    day = datetime.combine(c_day, datetime.min.time(), tzinfo=UTC)
    ranged = run_batch(
        [str(logdir / "**" / "*.jsonl")],
        BatchOptions(strategies="baseline"),
        workers=1,
        since=day,
        until=day + timedelta(hours=23, minutes=59),
    )
    got = status_of(ranged)
    assert "notes.md" not in got  # the glob only matches .jsonl files
    assert got["c.jsonl"] == "replayed"
    assert {got["a.jsonl"], got["b.jsonl"], got["d.jsonl"]} == {"out of range"}


@pytest.mark.parametrize(
    "pattern",
    ["*", "**", "**/*.jsonl", "*/*.jsonl", ".*/**/*", "a/**/*.json*", "*/b/*", "**/c/*",
     "d/*", "a/[0-9].jsonl", "?/*", "**/.*", "a/.*", "a/1.jsonl/*", "**/", "nope/*",
     "*/1.jsonl", "**/3.json", "*/**", "d/*/**", "*/*/2.jsonl", "*/1.jsonl/**", "a/1.jsonl/**",
     "*/*.JSONL"],
)
def test_a_glob_target_matches_the_files_glob_matches(tmp_path: Path, pattern: str):
    """Batch lists the folders a glob goes through itself (to report one it cannot list):
    the files found are those of `glob.glob(recursive=True)`, hidden names and links too."""
    import glob

    from replay.batch._discover import _glob

    for folder in ("a/b/c", ".h/x", "a/.hid", "d"):
        (tmp_path / folder).mkdir(parents=True)
    for name in ("a/1.jsonl", "a/b/2.jsonl", "a/b/c/3.json", ".h/x/4.jsonl", "a/.hid/5.jsonl",
                 ".top.jsonl", "a/.dot.jsonl", "d/6.jsonl", "d/[x].jsonl"):
        (tmp_path / name).touch()
    (tmp_path / "d" / "link").symlink_to(tmp_path / "a" / "b")
    (tmp_path / "a" / "b" / "c" / "loop").symlink_to(tmp_path / "a")  # glob: until too long
    text = f"{tmp_path}/{pattern}"  # (not `tmp_path / pattern`: it drops a final /)
    # (a file glob names as a folder, `a/1.jsonl/`, is not one: `Path` would drop the /)
    want = {Path(m).resolve() for m in glob.glob(text, recursive=True) if os.path.isfile(m)}
    assert {m.resolve() for m in _glob(text, {})} == want


def test_an_output_inside_the_input_leaves_out_only_the_datasets_own_files(logdir: Path):
    """The dataset's parts and cache are never read as logs; a user's log under the output
    folder is read like any other (it used to be left out without a word)."""
    out = logdir / "ds"
    variant(out / "mine" / "e.jsonl", "e", -DAY)
    opts = BatchOptions(strategies="baseline")
    first = run_batch([logdir], opts, output=out, workers=1)
    assert status_of(first)["e.jsonl"] == "replayed"

    for targets in ([logdir], [str(logdir / "**" / "*")]):
        again = run_batch(targets, opts, output=out, workers=1)
        assert not [f.path for f in again.files if "/ds/" in f.path and "/mine/" not in f.path]
        assert status_of(again)["e.jsonl"] == "unchanged"
    inner = run_batch([out / "mine"], opts, output=out, workers=1)  # a target inside it
    assert list(status_of(inner)) == ["e.jsonl"] and inner.counts["ok"] == 1


def test_a_target_holding_only_the_datasets_own_files_says_so(logdir: Path):
    """A target or glob into the output dataset's tables names its Parquet parts: no log, and
    no typo either (it used to say the pattern matched no file)."""
    out = logdir / "ds"
    opts = BatchOptions(strategies="baseline")
    run_batch([logdir / "a.jsonl"], opts, output=out, workers=1)
    (part,) = (out / "sessions").glob("*.parquet")
    for target in (str(out / "sessions" / "*.parquet"), part, out / "sessions", out):
        with pytest.raises(ReplayError) as err:
            run_batch([target], opts, output=out, workers=1)
        assert str(err.value) == (
            f"{target}: matches only a batch dataset's own files (its Parquet parts and "
            "cache), which are not logs; `replay.batch.scan(DATASET)` reads a dataset"
        )
    # Given as input without -o (or beside another output), a dataset is no log either; a
    # folder holding one and logs reads the logs only.
    for target in (out, out / "sessions"):
        for output in (None, logdir / "other"):
            with pytest.raises(ReplayError, match="matches only a batch dataset's own files"):
                run_batch([target], opts, output=output, workers=1)
    both = run_batch([logdir], opts, output=None, workers=1)
    assert not any("ds" in Path(f.path).parts for f in both.files)


def test_a_date_range_that_is_empty_is_a_user_error(logdir: Path, tmp_path: Path, invoke):
    result = invoke("batch", logdir, "--since", "2030-01-01", "--until", "2020-01-01",
                    "-o", tmp_path / "ds", "-q")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: --since 2030-01-01 00:00 UTC is after --until 2020-01-01 23:59 UTC: no session "
        "can start in between"
    )
    assert not (tmp_path / "ds").exists()


def test_cli_batch_json_report_and_strict_exit_code(logdir: Path, tmp_path: Path, invoke):
    out = tmp_path / "ds"
    result = invoke(
        "batch", logdir, "-s", "baseline", "-o", out, "--workers", "1", "--format", "json", "-q"
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["files"]["ok"] == 4 and doc["files"]["failed"] == 1
    assert doc["files"]["skipped"] == 1
    assert [t["strategy"] for t in doc["totals"]] == ["baseline"]
    assert {p["status"] for p in doc["problems"]} == {"failed", "skipped"}
    assert doc["dataset"] == str(out)

    table = invoke("batch", logdir, "-s", "baseline", "-o", out, "--workers", "1")
    assert table.exit_code == 0
    assert "unchanged" in table.stdout and "totals per strategy" in table.stdout
    again = invoke("batch", logdir, "-s", "baseline", "-o", out, "--workers", "1",
                   "--format", "json", "-q")
    counts = json.loads(again.stdout)["files"]
    row = next(line for line in table.stdout.splitlines() if line.startswith("│"))
    found, *others = (cell.strip() for cell in row.strip("│").split("│"))
    assert found == str(counts["total"]) == "6"  # the files table's first row is the JSON's
    assert others == [str(counts[k]) for k in ("ok", "replayed", "unchanged", "part of",
                                               "skipped", "duplicate", "out of range", "failed")]
    # nothing replayed: the closing line says why, without a rate of zero files per second
    assert "0 files replayed (0 requests), 4 unchanged since the last run" in table.stderr
    assert "files/s" not in table.stderr

    strict = invoke("batch", logdir, "-s", "baseline", "--workers", "1", "--strict", "-q")
    assert strict.exit_code == 1

    missing = invoke("batch", tmp_path / "nowhere", "-s", "baseline")
    assert missing.exit_code == 2 and "no such file" in missing.stderr

    help_text = invoke("batch", "--help").stdout
    assert "Example:" in help_text and "--engine" in help_text


def crash_on_two(task: int, opts: BatchOptions) -> int:
    """A task function whose worker process dies on task 2 (for the pool's recovery)."""
    if task == 2:
        os._exit(3)
    return task * 10


def test_pool_survives_a_worker_that_dies():
    from replay.batch._engines import PoolEngine

    with PoolEngine(2) as pool:
        results = dict(
            pool.imap(crash_on_two, [1, 2, 3, 4], BatchOptions(), lambda t, m: f"failed: {m}")
        )
    assert results.pop(2).startswith("failed: the worker process died on this task")
    assert results == {1: 10, 3: 30, 4: 40}


def die_once(task: list[str], opts: BatchOptions) -> str:
    """A task function whose worker process dies the first time it runs a task named `die-…`
    (a marker file in the task's folder says it did); other tasks succeed."""
    name, folder = task
    marker = Path(folder) / name
    if name.startswith("die") and not marker.exists():
        marker.touch()
        os._exit(3)
    return name


def test_a_task_in_flight_when_the_pool_breaks_again_is_retried_too(tmp_path: Path):
    # Each task in flight when a worker dies runs again, alone, and fails only if it kills
    # that one too (docs/batch.md). Tasks made one at a time (the scan's bundles of files) are
    # freed when done: the next one may have the same `id()`, and the pool took it for one
    # already retried, failing it at the second break without trying it again.
    from replay.batch._engines import PoolEngine

    names = ["die-1", "ok-2", "ok-3", "die-4", "ok-5", "ok-6", "die-7", "ok-8"]
    tasks = ([name, str(tmp_path)] for name in names)  # made as they are taken, as `_chunks`
    with PoolEngine(1) as pool:
        results = {
            task[0]: result
            for task, result in pool.imap(die_once, tasks, BatchOptions(), lambda t, m: m)
        }
    assert results == {name: name for name in names}


def test_a_task_whose_worker_died_says_why_it_likely_did(monkeypatch):
    """The pool's failure message is `died()`'s, which names a script's missing main guard."""
    from replay.batch import _engines

    monkeypatch.setattr(_engines, "died", lambda: "the worker process died (a script?)")
    with _engines.PoolEngine(2) as pool:
        results = dict(
            pool.imap(crash_on_two, [1, 2, 3], BatchOptions(), lambda t, m: f"failed: {m}")
        )
    assert results[2] == "failed: the worker process died (a script?)"


def test_a_dead_worker_under_a_script_names_the_main_guard(monkeypatch):
    """A script that calls replay with workers outside `if __name__ == "__main__":` kills every
    worker it spawns (each imports the script and starts the replay again): the message says
    so; run from the command line, it does not."""
    import types

    from replay.batch._engines import died
    from replay.cli import main

    script = types.ModuleType("__main__")
    script.__file__, script.__spec__ = "/home/me/compare.py", None
    monkeypatch.setitem(sys.modules, "__main__", script)
    assert 'not under `if __name__ == "__main__":`' in died()
    script.main = main  # the `replay` console script
    assert died() == "the worker process died on this task"


def test_ray_engine_writes_the_same_dataset_as_the_pool(logdir: Path, tmp_path: Path):
    pytest.importorskip("ray", reason="the `ray` extra is not installed (pip install '.[ray]')")
    opts = BatchOptions(strategies=STRATEGIES, per_request=True)
    pooled = run_batch([logdir], opts, output=tmp_path / "pool", engine="pool", workers=2)
    rayed = run_batch([logdir], opts, output=tmp_path / "ray", engine="ray", workers=2)
    assert rayed.engine == "ray"
    assert status_of(rayed) == status_of(pooled)
    assert sessions(tmp_path / "ray").equals(sessions(tmp_path / "pool"))
    assert requests(tmp_path / "ray").equals(requests(tmp_path / "pool"))
    assert rayed.totals.equals(pooled.totals)


@pytest.mark.skipif(not SAMPLES.is_dir(), reason=f"no real samples at {SAMPLES}")
def test_batch_over_the_real_samples_does_not_crash(tmp_path: Path):
    report = run_batch([SAMPLES], BatchOptions(strategies="baseline"), output=tmp_path / "ds")
    assert report.counts["total"] == sum(1 for p in SAMPLES.rglob("*") if p.is_file())
    for f in report.files:
        assert f.status != "failed" or f.message, f.path
    if report.counts["ok"]:
        assert sessions(tmp_path / "ds").height == report.counts["ok"]


# --- a chain's sessions are replayed as when alone, plus what they read from each other ------

WORDS = "the quick brown fox jumps over the lazy dog while tests run green again "


def billed_session(
    path: Path, session_id: str, shift: timedelta, provider: str, model: str
) -> Path:
    """A session whose recorded usage bills context the log does not hold (a hidden prefix of
    4,000 tokens, 600 tokens injected at one request) and one text at 60 % of its count: the
    unlogged-context fit finds context and a fitted count, as on real Claude Code logs."""
    from replay.engine import ReplayConfig, replay_session
    from replay.engine._unlogged import RequestFit, UnloggedContext
    from replay.log import AssistantMessage, SessionHeader, TextBlock, Usage, UserMessage
    from replay.tokens import counter_for

    t0 = datetime(2026, 10, 20, 12, 0, tzinfo=UTC) + shift
    events: list = []
    for n in range(8):
        ts = t0 + timedelta(seconds=20 * n)
        text = f"{session_id} step {n}: " + WORDS * (25 + 3 * n)
        events.append(UserMessage(ts=ts, text=text, id=f"u{n}"))
        events.append(RequestMarker(ts=ts, request_id=f"r{n}", duration_ms=4000))
        events.append(AssistantMessage(ts=ts + timedelta(seconds=4), blocks=[
            TextBlock(text=f"done {n}")], request_id=f"r{n}", id=f"a{n}"))
    header = SessionHeader(
        ts=t0, session_id=session_id, agent="test", provider=provider, model=model,
        system=LONG_SYSTEM,
    )
    header.hidden_prefix_tokens = 4000
    session = Session(header=header, events=events)
    counter = counter_for(model)
    short = events[3 * 5].text  # the 6th message: billed at 60 % of its count
    truth = UnloggedContext(
        requests={("main", 3 * 3 + 1): RequestFit(before=600)},
        counts={counter.family.family: {short: int(counter.count(short) * 0.6)}},
    )
    records = replay_session(session, ["recorded"], ReplayConfig(unlogged_context=truth))
    markers = {e.request_id: e for e in events if isinstance(e, RequestMarker)}
    for r in records:
        o = r.outcome
        markers[r.request_id].usage = Usage(
            input_tokens=o.uncached, cache_read_tokens=o.cache_read,
            cache_write_5m_tokens=o.cache_write_5m, cache_write_1h_tokens=o.cache_write_1h,
            output_tokens=5,
        )
    write_log(session, path)
    return path


def _rows(dataset: Path, name: str) -> pl.DataFrame:
    frame = requests(dataset).filter(pl.col("file").str.ends_with(name))
    return frame.select(TURN_COLUMNS).sort(["strategy", "request_index", "kind", "thread"])


def _chain_and_alone(logs: Path, tmp_path: Path, strategies: str) -> tuple[Path, Path]:
    shared, alone = tmp_path / "shared", tmp_path / "alone"
    opts = BatchOptions(strategies=strategies, per_request=True)
    report = run_batch([logs], opts, output=shared, workers=1)
    assert report.shared_groups == 1, report.notes
    run_batch([logs], dataclasses.replace(opts, share_cache=False), output=alone, workers=1)
    return shared, alone


@pytest.mark.parametrize("shift", [0, 30], ids=["same-times", "30s-later"])
def test_a_chains_first_session_is_its_lone_replay_and_the_next_only_gains(
    tmp_path: Path, shift: int
):
    from replay.engine._replay import ReplayConfig, fit_unlogged_context

    logs = tmp_path / "logs"
    a = billed_session(logs / "a.jsonl", "a", timedelta(0), "anthropic", "claude-sonnet-4-5")
    billed_session(logs / "b.jsonl", "a-b", timedelta(seconds=shift), "anthropic",
                   "claude-sonnet-4-5")
    fit = fit_unlogged_context(read_log(a), ReplayConfig())
    assert fit.residuals() and any(fit.counts.values())  # the fit has something to apply
    shared, alone = _chain_and_alone(logs, tmp_path, "recorded,baseline")
    assert sessions(shared).sort("group_position")["file"].str.ends_with("a.jsonl")[0]

    # (a) position 0 reads nothing another session wrote: exactly its lone replay, row by row
    assert _rows(shared, "a.jsonl").equals(_rows(alone, "a.jsonl"))
    # (b) position 1 sends the same prompts and loses none of its own reads
    first, lone = _rows(shared, "b.jsonl"), _rows(alone, "b.jsonl")
    assert first["prompt_tokens"].to_list() == lone["prompt_tokens"].to_list()
    gained = (first["cached_tokens"] - lone["cached_tokens"]).to_list()
    assert min(gained) >= 0


@pytest.mark.parametrize("header", [{}, ANTHROPIC, {"provider": "openai", "model": "gpt-5"}],
                         ids=["gemini-as-logged", "anthropic", "openai"])
@pytest.mark.parametrize("shift", [0, 1, 60], ids=["same-times", "1s-later", "60s-later"])
def test_overlapping_copies_never_read_less_than_alone(tmp_path: Path, header: dict, shift: int):
    # run42 on an automatic-prefix cache (Gemini, OpenAI): a copy writing the same prompts
    # must not take a thread's own cached prompt away from it
    logs = tmp_path / "logs"
    header = {**header, "system": LONG_SYSTEM}
    variant(logs / "a.jsonl", "a", timedelta(0), stretch=600, **header)
    variant(logs / "b.jsonl", "b", timedelta(seconds=shift), stretch=600, **header)
    shared, alone = _chain_and_alone(logs, tmp_path, "baseline,truncate-500")
    assert _rows(shared, "a.jsonl").equals(_rows(alone, "a.jsonl"))
    first, lone = _rows(shared, "b.jsonl"), _rows(alone, "b.jsonl")
    assert first["prompt_tokens"].to_list() == lone["prompt_tokens"].to_list()
    assert min((first["cached_tokens"] - lone["cached_tokens"]).to_list()) >= 0


@pytest.mark.parametrize("header", [{}, {"provider": "openai", "model": "gpt-4o"}],
                         ids=["gemini-as-logged", "openai"])
def test_prompts_that_expired_before_a_session_are_no_miss_of_it(tmp_path: Path, header: dict):
    # run42, then the same run 10 minutes later, past the 5-min (Gemini) / 10-min idle TTL:
    # the first session's prompts expired before the second starts. Left in the store, each
    # was the longest match of the second's identical prompt: 14 "TTL expired" misses where
    # the second, replayed alone, has the first's 5 "below minimum" ones.
    logs = tmp_path / "logs"
    variant(logs / "a.jsonl", "a", timedelta(0), **header)
    variant(logs / "b.jsonl", "b", timedelta(minutes=10, seconds=30), **header)
    shared, alone = _chain_and_alone(logs, tmp_path, "baseline")
    assert _rows(shared, "b.jsonl").equals(_rows(alone, "b.jsonl"))


@pytest.mark.parametrize("change", ["a copy added", "renamed", "renamed back"])
def test_a_session_keeps_one_set_of_rows_whatever_its_files_became(tmp_path: Path, change: str):
    """Parts are named by the log's bytes: a copy or a renamed file writes the part another
    entry named. That entry kept it, so after a change of options both the old part and the
    new one were read: every row of the session twice."""
    import shutil

    logs, out = tmp_path / "logs", tmp_path / "ds"
    logs.mkdir()
    shutil.copy(RUN42, logs / "b.jsonl")
    run_batch([logs], BatchOptions(strategies="baseline"), output=out, workers=1)
    if change == "a copy added":
        shutil.copy(logs / "b.jsonl", logs / "a.jsonl")  # read first: b is its duplicate
    else:
        (logs / "b.jsonl").rename(logs / "a.jsonl")
    run_batch([logs], BatchOptions(strategies="baseline"), output=out, workers=1)
    if change == "renamed back":
        (logs / "a.jsonl").rename(logs / "b.jsonl")
        run_batch([logs], BatchOptions(strategies="baseline"), output=out, workers=1)
    run_batch([logs], BatchOptions(strategies="baseline,truncate-500"), output=out, workers=1)
    rows = sessions(out)
    assert sorted(rows["strategy"].to_list()) == ["baseline", "truncate-500"]
    assert rows["file"].n_unique() == 1


def test_a_bad_price_is_a_user_error_before_any_work(logdir: Path, tmp_path: Path, invoke):
    from replay._errors import ReplayError

    with pytest.raises(ReplayError, match="--price 'garbage'"):
        run_batch([logdir], BatchOptions(strategies="baseline", prices=("garbage",)), workers=1)
    out = tmp_path / "ds"
    result = invoke("batch", logdir, "-s", "baseline", "-o", out, "-w", "1", "--price", "garbage")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --price 'garbage'")
    assert not out.exists()  # nothing was replayed or written
    good = invoke("batch", logdir, "-s", "baseline", "-w", "1", "-q",
                  "--price", "gemini-2.5-flash=input:0.3,output:2.5")
    assert good.exit_code == 0, good.output


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--client", "nosuch", "error: unknown client profile 'nosuch'"),
        ("--provider", "nosuch", "error: --provider 'nosuch': no cache rules for it"),
    ],
)
def test_a_mistyped_provider_or_client_is_a_user_error_before_any_work(
    logdir: Path, tmp_path: Path, invoke, flag: str, value: str, said: str
):
    # Every file failed alike, the failures went into the manifest, and the batch exited 0.
    out = tmp_path / "ds"
    result = invoke("batch", logdir, "-s", "baseline", "-o", out, "-w", "1", flag, value)
    assert result.exit_code == 2 and result.stderr.startswith(said), result.stderr
    assert not out.exists()


def test_an_invalid_cache_rule_file_is_a_user_error_before_any_work(
    logdir: Path, tmp_path: Path, invoke
):
    """A --cache-rules file that exists but is no rule file: refused before the scan, no
    dataset folder left behind (it was parsed first when the replay began)."""
    rules = tmp_path / "rules.json"
    rules.write_text('{"provider": "x"}\n', encoding="utf-8")
    out = tmp_path / "ds"
    result = invoke("batch", logdir, "-s", "baseline", "-o", out, "-w", "1",
                    "--cache-rules", rules)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {rules}: invalid cache rules"), result.stderr
    assert not out.exists()


def test_the_chain_note_counts_the_sessions_that_were_replayed(tmp_path: Path):
    # b fails (no price for its model): a shared the cache with nobody. The note counted both.
    logs = tmp_path / "logs"
    variant(logs / "a.jsonl", "a", timedelta(0), stretch=600)
    variant(logs / "b.jsonl", "b", timedelta(seconds=60), stretch=600, model="nosuch-model-x")
    report = run_batch([logs], BatchOptions(strategies="baseline"), workers=1)
    assert status_of(report) == {"a.jsonl": "replayed", "b.jsonl": "failed"}
    assert (report.shared_groups, report.shared_sessions) == (0, 0)
    assert not any("chain" in n for n in report.notes)
    variant(logs / "c.jsonl", "c", timedelta(seconds=120), stretch=600)
    report = run_batch([logs], BatchOptions(strategies="baseline"), workers=1)
    assert (report.shared_groups, report.shared_sessions) == (1, 2)
    assert any(n.startswith("2 sessions in 1 chain were replayed") for n in report.notes)


def test_a_broken_link_is_reported_under_its_own_name(tmp_path: Path):
    import shutil

    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(RUN42, logs / "a.jsonl")
    (logs / "broken.jsonl").symlink_to(tmp_path / "nonexistent")
    report = run_batch([logs], BatchOptions(strategies="baseline"), workers=1)
    failed = [f for f in report.files if f.status == "failed"]
    # It was named by its missing target (`/…/nonexistent`), not the file in the user's tree.
    assert [Path(f.path).name for f in failed] == ["broken.jsonl"]


def test_the_closing_lines_of_a_batch_read_right(tmp_path: Path, invoke):
    import shutil

    empty, logs = tmp_path / "empty", tmp_path / "logs"
    empty.mkdir()
    logs.mkdir()
    shutil.copy(RUN42, logs / "a.jsonl")
    # no rows: no `pl.scan_parquet` hint (polars fails on a glob that matches no file)
    result = invoke("batch", empty, "-o", tmp_path / "ds0", "-w", "1")
    assert result.exit_code == 0 and "(no session rows yet)" in result.stderr
    assert "scan_parquet" not in result.stderr
    one = invoke("batch", logs, "-s", "baseline", "-o", tmp_path / "ds1", "-w", "1")
    assert "1 file replayed (14 requests)" in one.stderr  # not "1 files"
    assert "unchanged" not in one.stderr  # (no earlier run: nothing to keep)
    assert f"read it with replay.batch.scan('{tmp_path / 'ds1'}'), or pl.scan_parquet(" in (
        one.stderr
    )
    # the calls are copied from that line: a folder named with a ' is quoted as Python does
    quoted = invoke("batch", logs, "-s", "baseline", "-o", tmp_path / "it's", "-w", "1")
    line = next(x for x in quoted.stderr.splitlines() if x.startswith("dataset:"))
    calls = line.partition("(read it with ")[2].removesuffix(")").split(", or ")
    assert [ast.literal_eval(c.partition("(")[2].removesuffix(")")) for c in calls] == [
        str(tmp_path / "it's"), str(tmp_path / "it's" / "sessions" / "*.parquet")
    ]


def test_the_table_of_files_not_replayed_shows_twenty_and_counts_the_others() -> None:
    """(`--format json` lists them all.)"""
    from types import SimpleNamespace

    from replay.cli._cmd_batch import _problem_table

    def table(n: int):
        problems = [SimpleNamespace(status="failed", path=f"f{i}.jsonl", message="broken")
                    for i in range(n)]
        return _problem_table(SimpleNamespace(problems=problems)).table

    assert table(20).row_count == 20  # all of them: no "0 more"
    last = table(21)
    assert last.row_count == 21
    assert [c._cells[-1] for c in last.columns] == ["…", "1 more", "see --format json"]


def test_a_dataset_in_a_missing_folder_is_a_user_error_that_creates_nothing(
    logdir: Path, tmp_path: Path, invoke
):
    """The dataset folder is created, not its parents: a mistyped `-o` leaves no tree."""
    out = tmp_path / "typo" / "sub" / "ds"
    result = invoke("batch", logdir, "-s", "baseline", "-o", out, "-w", "1")
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert result.stderr == (
        f"error: cannot write the dataset {out}: directory {out.parent} does not exist\n"
    )
    assert not (tmp_path / "typo").exists()
    made = invoke("batch", logdir, "-s", "baseline", "-o", tmp_path / "ds", "-w", "1", "-q")
    assert made.exit_code == 0, made.output
    assert (tmp_path / "ds" / "sessions").is_dir()


def test_the_report_and_every_part_say_the_trajectory_is_held_fixed(
    logdir: Path, tmp_path: Path, invoke
):
    from replay import TRAJECTORY_NOTE
    from replay.batch._work import PART_METADATA_NOTE

    out = tmp_path / "ds"
    human = invoke("batch", logdir, "-s", "baseline", "-o", out, "-w", "1", "--per-request")
    assert human.exit_code == 0, human.output
    assert human.stderr.count(TRAJECTORY_NOTE) == 1
    doc = json.loads(invoke("batch", logdir, "-s", "baseline", "-w", "1", "-q", "--format",
                            "json").stdout)
    assert doc["notes"][0] == TRAJECTORY_NOTE
    parts = list((out / "sessions").glob("*.parquet")) + list((out / "requests").glob("*.parquet"))
    assert len(parts) == 8
    for part in parts:
        assert pl.read_parquet_metadata(part)[PART_METADATA_NOTE] == TRAJECTORY_NOTE


def test_no_progress_bar_on_a_stderr_that_is_no_terminal(logdir: Path, tmp_path: Path, invoke):
    import io

    from rich.console import Console

    from replay.cli._progress import phase_bars

    result = invoke("batch", logdir, "-s", "baseline", "-o", tmp_path / "ds", "-w", "1")
    assert result.exit_code == 0, result.output
    assert "━" not in result.stderr and "\x1b" not in result.stderr and "\r" not in result.stderr
    assert "files replayed" in result.stderr  # the closing line and notes are still there
    with phase_bars("files", console=Console(file=io.StringIO())) as tick:
        assert tick is None
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, color_system=None)
    with phase_bars("files", console=terminal) as tick:
        tick("scan", 1, 2)
        tick("replay", 2, 2)
    assert "scan" in screen.getvalue() and "2/2 files" in screen.getvalue()


def test_the_bars_of_the_group_and_replay_passes_count_folders_and_sessions(
    tmp_path: Path, invoke, monkeypatch
):
    # The group pass runs once per folder of two or more Claude Code files, the replay once
    # per session (docs/batch.md, "Engines"): both bars said "1/1 files" for the 3 files of
    # one resumed session in one folder.
    import io

    from rich.console import Console

    import replay.cli._progress as progress

    _resumed_session(tmp_path / "logs" / "p-a", runs=3)
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, color_system=None, width=200)
    monkeypatch.setattr(progress, "_terminal", lambda quiet, console: terminal)
    result = invoke("batch", tmp_path / "logs", "-s", "baseline", "-w", "1")
    assert result.exit_code == 0, result.output
    bars = screen.getvalue()
    assert "3/3 files" in bars and "1/1 folders" in bars and "1/1 sessions" in bars
    assert "1/1 files" not in bars


# --------------------------------------------------------------------------------------------------
# Sessions of several files (Claude Code subagent and resumed files, opencode subtask exports)


def _subagent_session(project: Path) -> Path:
    """`s-1.jsonl` (2 requests) calling a subagent whose file `s-1/subagents/agent-abc.jsonl`
    holds 1 request (the adapter test's layout)."""
    from test_adapters_claude_code import _assistant, _usage, _user

    call = {"type": "tool_use", "id": "toolu_ag", "name": "Agent", "input": {"prompt": "Count."}}
    result = [{"type": "tool_result", "tool_use_id": "toolu_ag", "content": "2"}]
    main = [
        _user("u1", None, "00.000", "Delegate."),
        _assistant("a1", "u1", "01.000", "msg_1", "req_1", call, _usage(3, 500, 0, 20)),
        _user("u2", "a1", "03.000", result, toolUseResult={"agentId": "abc"}),
        _assistant("a2", "u2", "04.000", "msg_2", "req_2", {"type": "text", "text": "2."},
                   _usage(3, 30, 500, 4)),
    ]
    sub = [
        _user("x1", None, "01.500", "Count.", isSidechain=True, agentId="abc"),
        _assistant("x2", "x1", "02.000", "msg_x", "req_x", {"type": "text", "text": "2"},
                   _usage(3, 400, 0, 5), isSidechain=True, agentId="abc"),
    ]
    folder = project / "s-1" / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent-abc.jsonl").write_text(jsonl(sub), encoding="utf-8")
    path = project / "s-1.jsonl"
    path.write_text(jsonl(main), encoding="utf-8")
    return path


def _resumed_lines(n: int) -> list[dict]:
    """Session `r` as written to `r-n.jsonl` by its n-th run: the first run's 2 requests, then
    one more request per later run; a resumed file copies every earlier line."""
    from test_adapters_claude_code import _assistant, _other_session, _usage, _user

    lines = _other_session("r-1", "r")
    parent = "a3r"
    for k in range(2, n + 1):
        lines += [
            _user(f"u{k}x", parent, f"{10 + k}.000", f"And step {k}?"),
            _assistant(f"a{k}x", f"u{k}x", f"{20 + k}.000", f"msg_{k}x", f"req_{k}x",
                       {"type": "text", "text": "Done."}, _usage(3, 20, 3040, 3)),
        ]
        parent = f"a{k}x"
    for line in lines:
        if "sessionId" in line:
            line["sessionId"] = f"r-{n}"
    return lines


def _resumed_session(project: Path, runs: int = 2) -> list[Path]:
    """`r-1.jsonl` … `r-<runs>.jsonl`: one session resumed `runs - 1` times."""
    project.mkdir(parents=True, exist_ok=True)
    paths = [project / f"r-{n}.jsonl" for n in range(1, runs + 1)]
    for n, path in enumerate(paths, start=1):
        path.write_text(jsonl(_resumed_lines(n)), encoding="utf-8")
    return paths


def jsonl(lines: list[dict]) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


def _lone_rows(target: Path) -> pl.DataFrame:
    """`replay run TARGET`'s summary (what a batch's rows of that session must hold)."""
    return replay(target, STRATEGIES).summary.sort("strategy")


@pytest.mark.parametrize("share", [False, True], ids=["alone", "shared-cache"])
@pytest.mark.parametrize("layout", ["one project folder", "two project folders"])
def test_claude_code_subagent_and_resumed_files_are_one_session(
    tmp_path: Path, layout: str, share: bool
):
    logs = tmp_path / "projects"
    apart = layout == "two project folders"
    transcript = _subagent_session(logs / "p-a")
    first, resumed = _resumed_session(logs / ("p-b" if apart else "p-a"))
    # `replay run` on the same files: the transcript (its subagent file found beside it), and
    # a folder holding just the resumed session's files
    _subagent_session(tmp_path / "ref-a")
    _resumed_session(tmp_path / "ref-b")
    expected = {"s-1.jsonl": _lone_rows(tmp_path / "ref-a" / "s-1.jsonl"),
                "r-1.jsonl": _lone_rows(tmp_path / "ref-b")}
    assert [len(expected[k].filter(pl.col("strategy") == "baseline")) for k in expected] == [1, 1]
    assert [expected[k]["requests"][0] for k in expected] == [3, 3]

    out = tmp_path / "ds"
    opts = BatchOptions(strategies=STRATEGIES, share_cache=share)
    report = run_batch([logs], opts, output=out, workers=1)
    # each request once, not 9: the subagent's request twice (with its transcript and alone),
    # the first file's 2 requests twice (on their own and copied into the resumed file)
    assert report.requests == 6
    assert status_of(report) == {"s-1.jsonl": "replayed", "agent-abc.jsonl": "part of",
                                 "r-1.jsonl": "replayed", "r-2.jsonl": "part of"}
    messages = {Path(f.path).name: f.message for f in report.files}
    assert messages["agent-abc.jsonl"] == f"read in the session of {transcript}"
    assert messages["r-2.jsonl"] == f"read in the session of {first}"
    assert report.counts["part of"] == 2 and report.counts["ok"] == 2 and not report.problems
    assert report.totals.filter(pl.col("strategy") == "baseline")["requests"][0] == 6
    assert report.totals["sessions"].to_list() == [2, 2]

    rows = sessions(out)
    assert sorted(rows["file"].unique().to_list()) == sorted([str(first), str(transcript)])
    assert set(rows["session_id"]) == {"s-1", "r-1"}
    for name, lone in expected.items():
        mine = rows.filter(pl.col("file").str.ends_with("/" + name)).sort("strategy")
        assert mine["requests"].to_list() == lone["requests"].to_list()
        if not share:  # each session on its own cache: exactly `replay run`'s rows
            assert mine.select(lone.columns).equals(lone)
    assert report.shared_groups == (1 if share else 0)

    # the same dataset on a process pool
    pooled = run_batch([logs], opts, output=tmp_path / "pooled", workers=2, force=True)
    assert status_of(pooled) == status_of(report)
    assert sessions(tmp_path / "pooled").equals(rows)


def test_a_deleted_first_file_of_a_session_leaves_it_counted_once(tmp_path: Path):
    """Claude Code's clean-up deletes the older file of a resumed session: the rest, replayed
    alone, holds the session; the rows kept for the deleted file counted it twice. Rows of a
    deleted file whose session no other file holds stay (docs/batch.md)."""
    logs = tmp_path / "project"
    out = tmp_path / "ds"
    opts = BatchOptions(strategies="baseline")
    first, second = _resumed_session(logs, runs=2)
    run_batch([logs], opts, output=out, workers=1)
    assert sessions(out)["requests"].to_list() == [3]
    first.unlink()
    report = run_batch([logs], opts, output=out, workers=1)
    assert status_of(report) == {"r-2.jsonl": "replayed"}
    rows = sessions(out)
    assert rows["file"].to_list() == [str(second)] and rows["requests"].to_list() == [3]
    assert any(
        f"{first} (now in {second})" in n and "counted once" in n for n in report.notes
    ), report.notes
    # A transcript deleted beside its subagent file: the subagent file holds its own thread
    # only, not the transcript's requests; the transcript's rows stay.
    transcript = _subagent_session(tmp_path / "sub")
    run_batch([tmp_path / "sub"], opts, output=out, workers=1)
    held = sessions(out).filter(pl.col("file") == str(transcript))["requests"].to_list()
    assert held == [3]
    transcript.unlink()
    report = run_batch([tmp_path / "sub"], opts, output=out, workers=1)
    assert sessions(out).filter(pl.col("file") == str(transcript))["requests"].to_list() == held
    assert not any("counted once" in n for n in report.notes)
    # ... and the subagent file is not replayed alone: its thread is in those rows already.
    assert status_of(report) == {"agent-abc.jsonl": "part of"}
    assert not sessions(out).filter(pl.col("file").str.contains("agent-abc")).height
    # A lone file deleted keeps its rows.
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "run42.jsonl").write_bytes(RUN42.read_bytes())
    run_batch([lone, logs], opts, output=out, workers=1)
    (lone / "run42.jsonl").unlink()
    report = run_batch([lone, logs], opts, output=out, workers=1)
    assert {str(second), str(lone / "run42.jsonl")} <= set(sessions(out)["file"].to_list())
    assert not any("counted once" in n for n in report.notes)


def test_a_file_renamed_while_its_cache_chain_changed_is_counted_once(tmp_path: Path):
    """run42 and a shorter copy of it share a provider cache (a chain). run42 renamed while the
    copy grew: the chain's digest, in the parts' names, changed, so the renamed file's part
    was not the old one; the old name's rows stayed beside the new name's."""
    logs, out = tmp_path / "in", tmp_path / "ds"
    logs.mkdir()
    lines = RUN42.read_text(encoding="utf-8").splitlines(keepends=True)
    (logs / "run42.jsonl").write_text("".join(lines), encoding="utf-8")
    half = len(lines) // 2
    (logs / "trunc.jsonl").write_text("".join(lines[:half]), encoding="utf-8")
    opts = BatchOptions(strategies="baseline")
    run_batch([logs], opts, output=out, workers=1)
    (logs / "run42.jsonl").rename(logs / "renamed42.jsonl")
    with open(logs / "trunc.jsonl", "a", encoding="utf-8") as handle:
        handle.write("".join(lines[half:half + 3]))
    report = run_batch([logs], opts, output=out, workers=1)
    rows = sessions(out)
    assert rows["shared_cache"].all()
    assert sorted(rows["file"].to_list()) == sorted(
        [str(logs / "renamed42.jsonl"), str(logs / "trunc.jsonl")]
    )
    assert any(f"{logs / 'run42.jsonl'} (now in {logs / 'renamed42.jsonl'})" in n
               for n in report.notes), report.notes


def test_a_resumed_file_that_grows_or_appears_replays_its_session(tmp_path: Path):
    logs = tmp_path / "project"
    out = tmp_path / "ds"
    opts = BatchOptions(strategies="baseline")
    first, second = _resumed_session(logs, runs=2)
    second.unlink()
    # the first run only had one file: a session alone
    report = run_batch([logs], opts, output=out, workers=1)
    assert status_of(report) == {"r-1.jsonl": "replayed"} and report.requests == 2

    # the session is resumed in a second file: the first file's session is replayed again
    second.write_text(jsonl(_resumed_lines(2)), encoding="utf-8")
    report = run_batch([logs], opts, output=out, workers=1)
    assert report.requests == 3  # not 2 + 3
    assert status_of(report) == {"r-1.jsonl": "replayed", "r-2.jsonl": "part of"}
    assert sessions(out)["requests"].to_list() == [3]

    # nothing changed: nothing is replayed, the session's rows stay
    report = run_batch([logs], opts, output=out, workers=1)
    assert status_of(report) == {"r-1.jsonl": "unchanged", "r-2.jsonl": "part of"}
    assert report.totals["requests"].to_list() == [3]

    # the resumed file grows (the session went on): its session is replayed, one row stays
    with open(second, "a", encoding="utf-8") as handle:
        handle.write(jsonl(_resumed_lines(3)[len(_resumed_lines(2)):]))
    report = run_batch([logs], opts, output=out, workers=1)
    assert status_of(report) == {"r-1.jsonl": "replayed", "r-2.jsonl": "part of"}
    assert report.requests == 4
    assert sessions(out)["requests"].to_list() == [4]
    assert len(list((out / "sessions").glob("*.parquet"))) == 1
    assert replay(logs, "baseline").summary["requests"].to_list() == [4]

    # a third file resumes it again, and appears with an older first line: still one session
    # (named by the file read first), still each request once
    third = logs / "r-0.jsonl"
    third.write_text(jsonl(_resumed_lines(4)), encoding="utf-8")
    report = run_batch([logs], opts, output=out, workers=1)
    assert report.counts["part of"] == 2 and report.requests == 5
    assert sessions(out)["requests"].to_list() == [5]


@pytest.mark.parametrize("backup", ["a-backup", "z-backup"])
def test_a_copy_of_a_resumed_sessions_first_file_elsewhere_is_a_duplicate(
    tmp_path: Path, backup: str
):
    # A backup of the first file of a resumed session, in another folder: a byte-identical
    # copy, counted once (docs/batch.md, `duplicate`), the session read whole in its own
    # folder. Named first (`a-backup`), the copy was the one kept: replayed alone, while the
    # resumed file, grouped without it, held its requests again.
    logs = tmp_path / "logs"
    first, resumed = _resumed_session(logs / "p-a")
    (logs / backup).mkdir()
    copy = logs / backup / "r-1.jsonl"
    shutil.copy(first, copy)
    alone = run_batch([logs / "p-a"], BatchOptions(strategies="baseline"), workers=1)
    report = run_batch([logs], BatchOptions(strategies="baseline"), workers=1)
    statuses = {Path(f.path).relative_to(logs).as_posix(): (f.status, f.message)
                for f in report.files}
    assert statuses == {
        f"{backup}/r-1.jsonl": ("duplicate", f"same bytes as {first}"),
        "p-a/r-1.jsonl": ("replayed", None),
        "p-a/r-2.jsonl": ("part of", f"read in the session of {first}"),
    }
    assert report.requests == alone.requests == 3
    assert report.totals.equals(alone.totals)


def test_a_backup_of_a_session_that_was_resumed_since_is_a_duplicate(tmp_path: Path):
    # A backup folder (named first) of a session's two files, taken before it was resumed a
    # second time: each file a copy of one of the live session's, which holds them all. Kept
    # first by name, the backup's files made a session and the live folder's third file, read
    # without them, held their requests again.
    logs = tmp_path / "logs"
    live = _resumed_session(logs / "p-a", runs=3)
    (logs / "a-backup").mkdir()
    for path in live[:2]:
        shutil.copy(path, logs / "a-backup" / path.name)
    alone = run_batch([logs / "p-a"], BatchOptions(strategies="baseline"), workers=1)
    report = run_batch([logs], BatchOptions(strategies="baseline"), workers=1)
    got = {Path(f.path).relative_to(logs).as_posix(): f.status for f in report.files}
    assert got == {"a-backup/r-1.jsonl": "duplicate", "a-backup/r-2.jsonl": "duplicate",
                   "p-a/r-1.jsonl": "replayed", "p-a/r-2.jsonl": "part of",
                   "p-a/r-3.jsonl": "part of"}
    assert report.requests == alone.requests
    assert report.totals.equals(alone.totals)


def test_opencode_subtask_exports_are_one_session(tmp_path: Path):
    from test_adapters_common import opencode_doc, opencode_subtask

    logs = tmp_path / "exports"
    logs.mkdir()
    parent = opencode_doc()
    child = opencode_subtask(parent)
    (logs / "b-parent.json").write_text(json.dumps(parent), encoding="utf-8")
    (logs / "a-child.json").write_text(json.dumps(child), encoding="utf-8")
    alone = replay(logs, STRATEGIES).summary.sort("strategy")  # one session, a thread each
    out = tmp_path / "ds"
    report = run_batch([logs], BatchOptions(strategies=STRATEGIES, share_cache=False),
                       output=out, workers=1)
    assert report.counts["ok"] == 1  # one session, not two
    assert status_of(report) == {"b-parent.json": "replayed", "a-child.json": "part of"}
    rows = sessions(out).sort("strategy")
    assert rows["file"].unique().to_list() == [str(logs / "b-parent.json")]
    assert rows["session_id"].unique().to_list() == [parent["info"]["id"]]
    assert rows.select(alone.columns).equals(alone)
    assert report.requests == alone["requests"][0]


def test_a_subagent_file_without_requests_is_part_of_its_session(tmp_path: Path):
    from test_adapters_claude_code import _user

    logs = tmp_path / "project"
    transcript = _subagent_session(logs)
    # a subagent stopped before its first response: no request of its own to replay
    (logs / "s-1" / "subagents" / "agent-def.jsonl").write_text(
        jsonl([_user("y1", None, "02.500", "Count again.", isSidechain=True, agentId="def")]),
        encoding="utf-8",
    )
    report = run_batch([logs], BatchOptions(strategies="baseline"), workers=1)
    assert status_of(report) == {
        "s-1.jsonl": "replayed", "agent-abc.jsonl": "part of", "agent-def.jsonl": "part of"
    }
    assert report.requests == 3 == len(replay(transcript, "baseline").turns.filter(
        pl.col("kind") == "request"))


def test_two_exports_of_one_opencode_session_are_read_once(tmp_path: Path):
    from test_adapters_common import opencode_doc

    logs = tmp_path / "exports"
    logs.mkdir()
    earlier = opencode_doc()
    later = {**earlier, "info": {**earlier["info"], "title": "exported again"}}
    (logs / "a.json").write_text(json.dumps(earlier), encoding="utf-8")
    (logs / "b.json").write_text(json.dumps(later), encoding="utf-8")
    once = replay(logs / "a.json", "baseline").summary["requests"][0]
    assert replay(logs, "baseline").summary["requests"][0] == once  # `replay run DIR`
    report = run_batch([logs], BatchOptions(strategies="baseline"), workers=1)
    assert report.requests == once  # not twice
    assert status_of(report) == {"a.json": "replayed", "b.json": "part of"}


def test_a_price_shadowed_on_every_model_is_a_note_as_in_run(tmp_path: Path):
    # An exact name wins over a wildcard (README): a wildcard meant for a session's model
    # priced nothing and `replay run` said so; a batch did not.
    logs = tmp_path / "logs"
    variant(logs / "a.jsonl", "a", -DAY)  # gemini-2.5-flash
    prices = ("gemini-*=input:1,output:2", "gemini-2.5-flash=input:3,output:4")
    report = run_batch([logs], BatchOptions(strategies="baseline", prices=prices), workers=1)
    assert [n for n in report.notes if "--price" in n] == [
        "--price gemini-* priced nothing: --price gemini-2.5-flash applies to every model it "
        "matches (gemini-2.5-flash) first (an exact name wins over a wildcard, an earlier "
        "wildcard over a later one)."
    ]


def test_cache_rules_that_served_no_session_are_a_note_as_in_run(tmp_path: Path):
    # Anthropic rules on Gemini sessions changed nothing; `replay run` said so, a batch not.
    logs = tmp_path / "logs"
    variant(logs / "a.jsonl", "a", -DAY)  # gemini-2.5-flash, on google
    rules = {}
    for provider in ("anthropic", "google"):
        rules[provider] = tmp_path / f"{provider}.json"
        rules[provider].write_bytes((ROOT / "pricing" / "cache" / f"{provider}.json").read_bytes())

    def notes(rules_of: str, **more: str) -> list[str]:
        opts = BatchOptions(strategies="baseline", cache_rules=str(rules[rules_of]), **more)
        return [n for n in run_batch([logs], opts, workers=1).notes if "--cache-rules" in n]

    assert notes("anthropic") == [
        "--cache-rules: the anthropic rules served no request of the batch's sessions (its "
        "requests went to the google rules): they changed nothing. Give the rules of the "
        "provider the log ran on, or --provider to replay it on theirs."
    ]
    assert notes("google") == []
    assert notes("anthropic", provider="anthropic", model="claude-sonnet-4-5") == []


def test_sessions_simulated_without_a_prompt_cache_are_a_note_as_in_run(tmp_path: Path):
    # A model no cache rule covers (Google's default: mechanism none) reads 0 % cached in every
    # row: `replay run` says why, a batch said nothing. Each of the sample's 14 request lines is
    # counted once per session, whatever the strategies; a column says it per row.
    logs = tmp_path / "logs"
    for name, shift in (("a", -DAY), ("b", -DAY * 2)):
        variant(logs / f"{name}.jsonl", name, shift, model="mymodel")
    prices = ("mymodel=input:1,output:2",)
    opts = BatchOptions(strategies=STRATEGIES, prices=prices)
    out = tmp_path / "ds"
    for status in ("replayed", "unchanged"):  # rows kept count too
        report = run_batch([logs], opts, output=out, workers=1)
        assert set(status_of(report).values()) == {status}
        assert [n for n in report.notes if "without a prompt cache" in n] == [
            "28 request(s) of 2 session(s) were simulated without a prompt cache (google / "
            "mymodel): the cache rules in force say `mechanism: none` (no prompt caching for "
            "that model, or not yet at that date), so every prompt token is billed uncached. "
            "`replay providers --provider P --model M` shows the rules; --cache-rules FILE gives "
            "your own."
        ]
    assert sessions(out)["no_cache_requests"].to_list() == [14] * 4
    cached = run_batch([logs], BatchOptions(strategies=STRATEGIES, model="gemini-2.5-flash"),
                       workers=1)
    assert not [n for n in cached.notes if "prompt cache" in n]


def test_blind_mentions_are_a_note_as_in_run(tmp_path: Path):
    # The sample's agent names what truncate-500 and the aged cut hid (3 and 2 mentions, as
    # `replay run` counts them, tests/test_evidence.py): `replay run` has a note, a batch had
    # only the dataset's column.
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(RUN42, logs / "run42.jsonl")
    names = "baseline,truncate-500,age-truncate-500-keep-3"
    ran = replay(RUN42, names)
    note = [n for n in ran.notes if "`blind_mentions`" in n]
    assert note == [
        "The agent's text named something that only hidden text held (column `blind_mentions`; "
        "not counted as blind actions, since an agent often names a thing it then reads "
        "again): truncate-500 3, age-truncate-500-keep-3 2."
    ]
    out = tmp_path / "ds"
    for status in ("replayed", "unchanged"):  # rows kept count too
        report = run_batch([logs], BatchOptions(strategies=names), output=out, workers=1)
        assert set(status_of(report).values()) == {status}
        assert [n for n in report.notes if "`blind_mentions`" in n] == note
    quiet = run_batch([logs], BatchOptions(strategies="baseline"), workers=1)
    assert not [n for n in quiet.notes if "`blind_mentions`" in n]


def test_a_price_that_matched_no_model_is_a_note_as_in_run(tmp_path: Path, invoke):
    # README: "a note names an override that matched no model of the run". A batch said
    # nothing: a mistyped model name left genai-prices' rates in every row, silently.
    logs = tmp_path / "logs"
    variant(logs / "a.jsonl", "a", -DAY)  # gemini-2.5-flash
    variant(logs / "b.jsonl", "b", -DAY * 2, **ANTHROPIC)
    typo = "claude-sonet-4*=input:1,output:2"
    used = "gemini-2.5-flash=input:1,output:2"
    note = (
        "--price claude-sonet-4* matched no model of the batch's sessions (claude-sonnet-4-5, "
        "gemini-2.5-flash): those rates priced nothing. Name the model as the log does, or with "
        "a wildcard (e.g. 'claude-sonnet-4*')."
    )
    opts = BatchOptions(strategies="baseline", prices=(typo, used))
    out = tmp_path / "ds"
    for run in ("replayed", "unchanged"):  # the models of rows kept count too
        report = run_batch([logs], opts, output=out, workers=1)
        assert set(status_of(report).values()) == {run}
        assert [n for n in report.notes if "--price" in n] == [note]
    right = BatchOptions(strategies="baseline", prices=(used,))
    assert not [n for n in run_batch([logs], right, workers=1).notes if "--price" in n]
    shown = invoke("batch", str(logs), "-s", "baseline", "--price", typo, "-w", "1")
    assert "note: --price claude-sonet-4* matched no model" in shown.stderr


def test_requests_without_a_cache_breakpoint_are_a_note_as_in_run(tmp_path: Path, invoke):
    # README: `--client` "a note says when it marks nothing where the provider needs marks: a
    # Codex log on Anthropic". A batch said nothing: every request of those rows was billed
    # without a cache read, silently.
    logs = tmp_path / "logs"
    variant(logs / "a.jsonl", "a", -DAY)
    variant(logs / "b.jsonl", "b", -DAY * 2)
    codex = {"provider": "anthropic", "model": "claude-sonnet-4-5", "client": "codex"}
    lone = replay(logs / "a.jsonl", "baseline", **codex)
    (said,) = [n for n in lone.notes if "no cache breakpoint" in n]
    assert said.startswith("13 request(s) (anthropic) cached nothing")
    note = (
        "26 request(s) of 2 session(s) cached nothing: the client profile put no cache "
        "breakpoint where the provider needs one (column `miss_causes`: no-breakpoint). If the "
        "harness you mean to run would mark the prompt, say which with --client (e.g. --client "
        "claude-code)."
    )
    opts = BatchOptions(strategies=STRATEGIES, **codex)
    out = tmp_path / "ds"
    for run in ("replayed", "unchanged"):  # rows kept count too
        report = run_batch([logs], opts, output=out, workers=1)
        assert set(status_of(report).values()) == {run}
        assert [n for n in report.notes if "no cache breakpoint" in n] == [note]
    marked = BatchOptions(strategies=STRATEGIES, provider="anthropic", model="claude-sonnet-4-5")
    assert not [n for n in run_batch([logs], marked, workers=1).notes if "breakpoint" in n]
    shown = invoke("batch", str(logs), "-s", "baseline", "--provider", "anthropic", "--model",
                   "claude-sonnet-4-5", "--client", "codex", "-w", "1")
    assert "note: 26 request(s) of 2 session(s) cached nothing" in shown.stderr


def test_a_price_that_fell_back_is_a_column_and_a_note(tmp_path: Path, invoke):
    """genai-prices has no cache-read price for kimi-k2: `replay run` says so in a note; a
    batch says it in the session rows and in its report, also when the file is unchanged."""
    import gen

    turns = [
        gen.Turn(f"step {i}", [gen.Call("read_file", {"path": f"f{i}"}, gen.filler(3000, i))])
        for i in range(3)
    ] + [gen.Turn("done")]
    logs = tmp_path / "logs"
    logs.mkdir()
    write_log(gen.build_session(turns, provider="moonshotai", model="kimi-k2"), logs / "k.jsonl")
    variant(logs / "a.jsonl", "a", -DAY)  # priced without a fallback
    out = tmp_path / "ds"
    opts = BatchOptions(strategies=STRATEGIES)
    reason = (
        f"'kimi-k2' (moonshotai) (genai-prices {genai_prices.__version__} snapshot): no "
        "cache-read price, cache reads billed at the input rate"
    )
    note = (
        "Priced with a fallback on 6 request(s) over every strategy (columns "
        f"`price_fallback_requests`, `price_fallback`): {reason}."
    )
    for rerun in (False, True):
        report = run_batch([logs], opts, output=out, workers=1)
        assert set(status_of(report).values()) == {"unchanged" if rerun else "replayed"}
        assert note in report.notes
        rows = sessions(out).filter(pl.col("session_id") != "a")
        assert rows["price_fallback_requests"].to_list() == [3, 3]
        assert rows["price_fallback"].to_list() == [reason, reason]
    alone = run_batch([logs / "a.jsonl"], opts)
    assert not [n for n in alone.notes if "fallback" in n]
    shown = invoke("batch", str(logs), "-s", STRATEGIES, "--workers", "1")
    assert f"note: {note}" in shown.stderr


# --------------------------------------------------------------------------------------------------
# A forked pi session and its parent


def _pi_fork_and_parent(folder: Path) -> tuple[Path, Path]:
    """A pi session (2 requests) and a session forked from it at 10:00:10: the fork's file
    copies the parent's 2 requests (billed in the parent), then makes 1 of its own. Its header
    names the parent by the path it had where pi wrote it."""
    from test_adapters_common import jsonl, pi_lines

    folder.mkdir(parents=True, exist_ok=True)
    parent = folder / "2026-01-02T09-59-59-000Z_pi-1.jsonl"
    parent.write_text(jsonl(pi_lines(3)), encoding="utf-8")
    lines = pi_lines(3)
    lines[0] |= {"id": "pi-2", "timestamp": "2026-01-02T10:00:10.000Z",
                 "parentSession": f"/home/u/.pi/agent/sessions/--w--/{parent.name}"}
    last = lines[-1]
    user = {"type": "message", "id": "00000006", "parentId": last["id"],
            "timestamp": "2026-01-02T10:00:20.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "And now?"}],
                        "timestamp": 1767348020000}}
    reply = json.loads(json.dumps(last))
    reply |= {"id": "00000007", "parentId": "00000006", "timestamp": "2026-01-02T10:00:22.000Z"}
    reply["message"]["timestamp"] = 1767348021000
    fork = folder / "2026-01-02T10-00-10-000Z_pi-2.jsonl"
    fork.write_text(jsonl([*lines, user, reply]), encoding="utf-8")
    return parent, fork


@pytest.mark.parametrize("share", [False, True], ids=["alone", "shared-cache"])
def test_a_forks_copied_requests_count_once_when_its_parent_is_in_the_batch(
    tmp_path: Path, share: bool
):
    parent, fork = _pi_fork_and_parent(tmp_path / "sessions")
    opts = BatchOptions(strategies="baseline", share_cache=share, per_request=True)
    out = tmp_path / "ds"
    both = run_batch([tmp_path / "sessions"], opts, output=out, workers=1)
    assert status_of(both) == {parent.name: "replayed", fork.name: "replayed"}
    rows = sessions(out)
    by_file = {Path(r["file"]).name: r for r in rows.iter_rows(named=True)}
    assert by_file[parent.name]["requests"] == 2 and by_file[fork.name]["requests"] == 1
    assert by_file[parent.name]["copied_requests_dropped"] == 0
    assert by_file[fork.name]["copied_requests_dropped"] == 2
    assert both.totals["requests"].to_list() == [3] and both.requests == 3
    assert requests(out).filter(pl.col("kind") == "request").height == 3
    assert any("2 request(s) of 1 forked session(s)" in n and "parent" in n for n in both.notes)

    # The fork without its parent: its copies are the only record of those calls; its rows
    # are `replay run`'s (replayed again, not taken from the run with its parent).
    alone = run_batch([fork], opts, output=out, workers=1)
    assert status_of(alone) == {fork.name: "replayed"}
    mine = sessions(out).filter(pl.col("file") == str(fork))
    lone = replay(fork, "baseline").summary
    assert mine.select(lone.columns).equals(lone)
    assert mine["copied_requests_dropped"].to_list() == [0]
    assert any("counted here" in n for n in alone.notes)


@pytest.mark.parametrize("share", [False, True], ids=["alone", "shared-cache"])
def test_a_fork_with_no_request_of_its_own_keeps_its_rows(tmp_path: Path, share: bool):
    # A fork that made no request after its copied history (branched, then left): its copies
    # are in the parent's rows, and its own rows, one per session × strategy (docs/batch.md),
    # say it left them out. Without them the session vanished from the dataset, "replayed".
    from test_adapters_common import jsonl

    parent, fork = _pi_fork_and_parent(tmp_path / "sessions")
    lines = fork.read_text(encoding="utf-8").splitlines()[:-2]  # its own user turn and reply
    fork.write_text(jsonl([json.loads(line) for line in lines]), encoding="utf-8")
    opts = BatchOptions(strategies=STRATEGIES, share_cache=share)
    report = run_batch([tmp_path / "sessions"], opts, output=tmp_path / "ds", workers=1)
    assert status_of(report) == {parent.name: "replayed", fork.name: "replayed"}
    mine = sessions(tmp_path / "ds").filter(pl.col("file") == str(fork))
    assert mine["strategy"].sort().to_list() == sorted(STRATEGIES.split(","))
    assert mine["requests"].to_list() == [0, 0]
    assert mine["copied_requests_dropped"].to_list() == [2, 2]
    assert mine["cost_usd"].sum() == 0
    assert report.totals["sessions"].to_list() == [2, 2]
    assert report.totals["requests"].to_list() == [2, 2]


def test_a_fork_starts_when_its_header_says_not_at_the_history_it_copied(tmp_path: Path):
    parent, fork = _pi_fork_and_parent(tmp_path / "sessions")
    opts = BatchOptions(strategies="baseline")
    since = datetime(2026, 1, 2, 10, 0, 5, tzinfo=UTC)  # after the parent, before the fork
    report = run_batch([tmp_path / "sessions"], opts, output=tmp_path / "ds", since=since,
                       workers=1)
    assert status_of(report) == {parent.name: "out of range", fork.name: "replayed"}
    (started,) = sessions(tmp_path / "ds")["started_at"].to_list()
    assert started == datetime(2026, 1, 2, 10, 0, 10, tzinfo=UTC)


def test_dates_asked_leave_the_rows_of_a_chain_as_they_are(tmp_path: Path):
    # b follows a within the cache TTL: they share one cache. With --since between their
    # starts, a gives no rows but is still replayed for what it left b to read; b's rows were
    # those of b replayed alone (its copy of a's prompts read nothing a wrote).
    logs = tmp_path / "logs"
    a = variant(logs / "a.jsonl", "a", timedelta(0), stretch=600, system=LONG_SYSTEM)
    variant(logs / "b.jsonl", "b", timedelta(seconds=120), stretch=600, system=LONG_SYSTEM)
    opts = BatchOptions(strategies="baseline")
    whole = run_batch([logs], opts, output=tmp_path / "whole", workers=1)
    assert whole.shared_groups == 1
    since = read_log(a).header.ts + timedelta(seconds=60)
    ranged = run_batch([logs], opts, output=tmp_path / "ranged", workers=1, since=since)
    assert status_of(ranged) == {"a.jsonl": "out of range", "b.jsonl": "replayed"}
    assert (ranged.shared_groups, ranged.shared_sessions) == (1, 1)
    b_whole = sessions(tmp_path / "whole").filter(pl.col("file").str.ends_with("b.jsonl"))
    (b_ranged,) = sessions(tmp_path / "ranged").iter_rows(named=True)
    assert b_ranged == b_whole.row(0, named=True)
    assert b_ranged["shared_cache"] and b_ranged["cached_tokens"] > 0
    # the same dates over the whole dataset: b is unchanged, a's rows stay
    again = run_batch([logs], opts, output=tmp_path / "whole", workers=1, since=since)
    assert status_of(again) == {"a.jsonl": "out of range", "b.jsonl": "unchanged"}
    assert sessions(tmp_path / "whole").height == 2


def test_a_fork_leaves_its_copies_out_when_its_parent_is_out_of_range(tmp_path: Path):
    # The copied requests were billed in the parent, before --since: counted by neither the
    # ranged batch nor twice in a dataset that holds the parent's rows from an earlier run.
    parent, fork = _pi_fork_and_parent(tmp_path / "sessions")
    opts = BatchOptions(strategies="baseline")
    out = tmp_path / "ds"
    run_batch([tmp_path / "sessions"], opts, output=out, workers=1)
    since = datetime(2026, 1, 2, 10, 0, 5, tzinfo=UTC)
    ranged = run_batch([tmp_path / "sessions"], opts, output=out, since=since, workers=1)
    assert status_of(ranged) == {parent.name: "out of range", fork.name: "unchanged"}
    assert sessions(out)["requests"].sum() == 3
    fresh = run_batch([tmp_path / "sessions"], opts, output=tmp_path / "fresh", since=since,
                      workers=1)
    assert fresh.requests == 1 and fresh.totals["requests"].to_list() == [1]
    assert sessions(tmp_path / "fresh")["copied_requests_dropped"].to_list() == [2]
    # a parent last written long before --since is not read, and still found
    old = datetime(2020, 1, 1, tzinfo=UTC).timestamp()
    os.utime(parent, (old, old))
    late = run_batch([tmp_path / "sessions"], opts, since=datetime(2021, 1, 1, tzinfo=UTC),
                     workers=1)
    assert late.files[0].message == "last modified before --since"
    assert late.requests == 1


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_ray_address_nothing_listens_at_fails_at_once_naming_it():
    address = f"127.0.0.1:{_closed_port()}"
    for form in (address, f"ray://{address}"):
        with pytest.raises(ReplayError, match=f"cannot join Ray at '{form}'"):
            check_ray_address(form)


def test_a_ray_address_that_accepts_connections_or_is_not_host_port_passes_the_probe():
    with socket.socket() as head:
        head.bind(("127.0.0.1", 0))
        head.listen()
        check_ray_address(f"127.0.0.1:{head.getsockname()[1]}")
    check_ray_address("auto")


def test_ray_batch_with_an_unreachable_address_is_a_replay_error(logdir: Path, tmp_path: Path):
    pytest.importorskip("ray", reason="the `ray` extra is not installed (pip install '.[ray]')")
    opts = BatchOptions(strategies=["baseline"])
    with pytest.raises(ReplayError, match="cannot join Ray"):
        run_batch(
            [logdir], opts, output=tmp_path / "ray", engine="ray",
            ray_address=f"127.0.0.1:{_closed_port()}",
        )
    assert not (tmp_path / "ray").exists()


def test_malformed_lines_a_lenient_batch_skipped_are_a_note(tmp_path: Path) -> None:
    """As `replay run` says them: a batch printed nothing, and without a dataset the count
    was lost."""
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = RUN42.read_text(encoding="utf-8").splitlines()
    (logs / "bad.jsonl").write_text("\n".join([*lines[:4], "{not json", *lines[4:]]) + "\n",
                                    encoding="utf-8")
    (logs / "good.jsonl").write_text(RUN42.read_text(encoding="utf-8"), encoding="utf-8")
    report = run_batch([logs], BatchOptions(strategies=STRATEGIES), workers=1)
    (note,) = [n for n in report.notes if "malformed" in n]
    assert note.startswith("1 malformed line(s) skipped in 1 file(s)")
    assert str(logs / "bad.jsonl") in note and "good.jsonl" not in note
    clean = run_batch([logs / "good.jsonl"], BatchOptions(strategies=STRATEGIES), workers=1)
    assert not [n for n in clean.notes if "malformed" in n]


def test_a_session_s_unlogged_context_is_fitted_once_for_every_strategy(tmp_path: Path,
                                                                        monkeypatch):
    """As `replay run` does: batch replayed each strategy on its own, and fitted the unlogged
    context again each time (48 fits made `-s all` 2.4× slower than `replay run`)."""
    from replay.engine import _replay

    log = tmp_path / "logs" / "billed.jsonl"
    log.parent.mkdir()
    billed_session(log, "s1", timedelta(0), "anthropic", "claude-sonnet-4-5")
    fits = []
    real = _replay.fit_unlogged_context

    def counted(session, config):
        fits.append(session.path)
        return real(session, config)

    monkeypatch.setattr(_replay, "fit_unlogged_context", counted)
    report = run_batch([log.parent], BatchOptions(strategies="baseline,truncate-500,sliding-10"),
                       workers=1)
    assert report.counts["replayed"] == 1
    assert len(fits) == 1


def test_a_compressed_log_in_a_folder_is_skipped_with_its_hint(tmp_path: Path) -> None:
    import gzip

    (tmp_path / "run.jsonl").write_bytes(Path(RUN42).read_bytes())
    (tmp_path / "old.jsonl.gz").write_bytes(gzip.compress(Path(RUN42).read_bytes()))
    report = run_batch([tmp_path], BatchOptions(strategies="baseline"), workers=1)
    assert status_of(report) == {"run.jsonl": "replayed", "old.jsonl.gz": "skipped"}
    packed = next(f for f in report.files if f.path.endswith(".gz"))
    assert "a gzip-compressed file" in packed.message and "zcat" in packed.message


@pytest.mark.parametrize(
    "target, said",
    [
        ("-", "-: batch reads files and folders, not standard input; `replay run -` reads a log "
         "from a pipe"),
        ("nosuch-folder", "nosuch-folder: no such file, folder or glob match"),
    ],
)
def test_a_target_batch_cannot_read_says_why(target: str, said: str) -> None:
    with pytest.raises(ReplayError) as err:
        run_batch([target], BatchOptions(strategies="baseline"), workers=1)
    assert str(err.value) == said


def test_the_json_report_is_the_same_bytes_on_a_rerun_unless_timings_are_asked(
    logdir: Path, invoke
) -> None:
    """The same files give the same report: the seconds a run took are in it only with
    --timings."""
    args = ("batch", logdir, "-s", "baseline", "--workers", "1", "--format", "json", "-q")
    first, again = invoke(*args), invoke(*args)
    assert first.exit_code == again.exit_code == 0
    assert first.stdout == again.stdout and "seconds" not in json.loads(first.stdout)
    timed = json.loads(invoke(*args, "--timings").stdout)
    assert set(timed["seconds"]) == {"scan", "replay", "total"} and timed["requests_per_second"]
    assert timed["requests"] != timed["files"]["replayed"]
    assert timed["requests_per_second"] / timed["files_per_second"] == pytest.approx(
        timed["requests"] / timed["files"]["replayed"], rel=0.02
    )
    assert {k: v for k, v in timed.items() if k not in ("seconds", "files_per_second",
                                                          "requests_per_second")} == json.loads(
        first.stdout
    )
    # The table has them on stderr already: --timings there changed nothing, silently.
    table = invoke("batch", logdir, "-s", "baseline", "--timings", "-q")
    assert table.exit_code == 2 and "--timings adds the seconds to the JSON report" in table.stderr


def test_scan_reads_parts_an_older_replay_wrote_with_fewer_columns(tmp_path: Path):
    """A newer replay adds a column (`cache_created_tokens`); the rows of a file it has not
    replayed since keep the older columns. One glob over both fails; `scan` leaves the missing
    column null in those rows."""
    old_dir, new_dir, out = tmp_path / "old", tmp_path / "new", tmp_path / "ds"
    for folder in (old_dir, new_dir):
        folder.mkdir()
        (folder / "run42.jsonl").write_bytes(RUN42.read_bytes())
    (new_dir / "run42.jsonl").write_text(
        RUN42.read_text(encoding="utf-8").replace('"session_id":"', '"session_id":"new-', 1),
        encoding="utf-8",
    )
    opts = BatchOptions(strategies="baseline")
    run_batch([old_dir], opts, output=out, workers=1)
    (older,) = (out / "sessions").glob("*.parquet")
    pl.read_parquet(older).drop("cache_created_tokens").write_parquet(older)  # as written before
    run_batch([new_dir], opts, output=out, workers=1)
    with pytest.raises(pl.exceptions.PolarsError):
        pl.scan_parquet(out / "sessions" / "*.parquet").collect()
    rows = scan(out).collect().sort("file")
    assert rows["file"].to_list() == [str(new_dir / "run42.jsonl"), str(old_dir / "run42.jsonl")]
    assert rows["cache_created_tokens"].to_list() == [0, None]
    assert rows["cost_usd"].null_count() == 0


def test_a_file_name_that_is_no_utf8_is_written_as_in_the_dataset(tmp_path: Path, invoke):
    """`tr\\xe9.jsonl` (Latin-1 bytes): the JSON report held the raw byte and was no JSON;
    the report names it as the dataset's `file` column does."""
    import os

    logs = tmp_path / "in"
    logs.mkdir()
    raw = os.fsencode(logs) + b"/cut\xe9.jsonl"
    with open(raw, "wb") as handle:
        handle.write(RUN42.read_bytes()[:20000])  # a malformed last line: a note names it
    with open(os.fsencode(logs) + b"/empty\xe9.jsonl", "wb"):
        pass  # skipped: a problem row names it
    out = tmp_path / "ds"
    result = invoke("batch", logs, "-s", "baseline", "-w", "1", "-o", out, "--format", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout_bytes.decode("utf-8"))
    assert [p["file"] for p in document["problems"]] == [f"{logs}/empty\\xe9.jsonl"]
    assert any(f"{logs}/cut\\xe9.jsonl 1." in n for n in document["notes"]), document["notes"]
    assert sessions(out)["file"].to_list() == [f"{logs}/cut\\xe9.jsonl"]


def test_an_empty_target_and_a_link_to_a_device(tmp_path: Path, invoke, monkeypatch):
    """`replay batch "$DIR"` with DIR unset read the current folder (Path("") is "."); a link
    to a device was reported under the device's name, where the user cannot find it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run42.jsonl").write_bytes(RUN42.read_bytes())
    result = invoke("batch", "", "-s", "baseline", "-w", "1")
    assert result.exit_code == 2
    assert result.stderr == "error: '': an empty name is no file, folder or glob\n"
    (tmp_path / "devnull").symlink_to("/dev/null")
    report = run_batch([tmp_path], BatchOptions(strategies="baseline"), workers=1)
    assert [(p.path, p.status) for p in report.problems] == [
        (str(tmp_path / "devnull"), "skipped")
    ]


def test_a_file_of_another_size_is_read_again_even_with_its_old_mtime(tmp_path: Path):
    """A file rewritten and given back its mtime (a copy tool keeping times, a restore) is
    another file: its size says so, and its cached scan (the old hash) is not reused."""
    logs, out = tmp_path / "logs", tmp_path / "ds"
    log = variant(logs / "a.jsonl", "a", -DAY)
    opts = BatchOptions(strategies="baseline")
    run_batch([logs], opts, output=out, workers=1)
    before = log.stat()
    variant(log, "a-rewritten", -DAY)
    os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert log.stat().st_size != before.st_size
    assert log.stat().st_mtime_ns == before.st_mtime_ns
    report = run_batch([logs], opts, output=out, workers=1)
    assert status_of(report) == {"a.jsonl": "replayed"}
    assert sessions(out)["session_id"].to_list() == ["a-rewritten"]


def test_a_scan_made_under_strict_is_not_reused_by_a_lenient_batch(tmp_path: Path):
    """`--strict` fails a file at the scan; a lenient batch over the same dataset reads it
    again (the scan key holds `strict`) and replays it, its bad line skipped."""
    logs, out = tmp_path / "logs", tmp_path / "ds"
    log = variant(logs / "a.jsonl", "a", -DAY)
    head, *rest = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text(head + "{not json\n" + "".join(rest), encoding="utf-8")
    strict = run_batch([logs], BatchOptions(strategies="baseline", strict=True), output=out,
                       workers=1)
    assert status_of(strict) == {"a.jsonl": "failed"}
    lenient = run_batch([logs], BatchOptions(strategies="baseline"), output=out, workers=1)
    assert status_of(lenient) == {"a.jsonl": "replayed"}
    assert sessions(out)["skipped_lines"].to_list() == [1]


def test_a_provider_given_later_regroups_the_sessions_it_puts_in_one_scope(tmp_path: Path):
    """The cache scope holds the provider (after `--provider`): cached scans of another
    provider are not reused, or two overlapping sessions `--provider` puts in one scope were
    kept apart."""
    logs, out = tmp_path / "logs", tmp_path / "ds"
    variant(logs / "a.jsonl", "a", timedelta(0), stretch=600, system=LONG_SYSTEM, **ANTHROPIC)
    variant(logs / "b.jsonl", "b", timedelta(seconds=60), stretch=600, system=LONG_SYSTEM,
            provider="openai", model="gpt-4o")
    apart = run_batch([logs], BatchOptions(strategies="baseline"), output=out, workers=1)
    assert apart.shared_groups == 0
    one = BatchOptions(strategies="baseline", **ANTHROPIC)
    together = run_batch([logs], one, output=out, workers=1)
    assert together.shared_groups == 1 and together.shared_sessions == 2
    assert sessions(out)["shared_cache"].to_list() == [True, True]


def test_forget_missing_covers_the_folders_of_every_target(logdir: Path, tmp_path: Path):
    out, opts = tmp_path / "ds", BatchOptions(strategies="baseline")
    other = variant(tmp_path / "elsewhere" / "e.jsonl", "e", -DAY)
    run_batch([logdir, other.parent], opts, output=out, workers=1)
    (logdir / "c.jsonl").unlink()
    other.unlink()
    report = run_batch([logdir, other.parent], opts, output=out, workers=1,
                       forget_missing=True)
    assert sorted(sessions(out)["session_id"]) == ["a", "b", "d"]
    assert any(n.startswith("2 files no longer found under the targets") for n in report.notes)


def test_request_rows_follow_their_files_latest_replay(logdir: Path, tmp_path: Path):
    """`requests` parts are the file's too: a re-run leaves them out of the totals (session
    rows only), and a replay under other options drops them with the sessions' parts."""
    out = tmp_path / "ds"
    opts = BatchOptions(strategies="baseline", per_request=True)
    first = run_batch([logdir], opts, output=out, workers=1)
    again = run_batch([logdir], opts, output=out, workers=1)
    assert again.counts["unchanged"] == 4
    assert again.totals.equals(first.totals)
    both = BatchOptions(strategies=STRATEGIES, per_request=True)
    run_batch([logdir], both, output=out, workers=1)
    assert len(list((out / "requests").glob("*.parquet"))) == 4
    assert requests(out).filter(kind="request").height == 4 * 2 * 14
    run_batch([logdir], BatchOptions(strategies="baseline"), output=out, workers=1)
    assert not list((out / "requests").glob("*.parquet"))


def test_a_session_starting_on_a_bound_of_the_range_is_in_it(tmp_path: Path):
    from replay.batch._work import scan_file

    logs = tmp_path / "logs"
    log = variant(logs / "a.jsonl", "a", -DAY)
    start = datetime.fromisoformat(scan_file(str(log), BatchOptions()).info.started_at)
    opts = BatchOptions(strategies="baseline")
    for since, until in ((start, None), (None, start), (start, start)):
        report = run_batch([logs], opts, workers=1, since=since, until=until)
        assert status_of(report) == {"a.jsonl": "replayed"}, (since, until)
    later = run_batch([logs], opts, workers=1, since=start + timedelta(microseconds=1))
    assert status_of(later) == {"a.jsonl": "out of range"}


def test_every_file_of_a_session_out_of_range_is_out_of_range(tmp_path: Path):
    logs = tmp_path / "project"
    _resumed_session(logs)
    report = run_batch([logs], BatchOptions(strategies="baseline"), workers=1,
                       until=datetime(2000, 1, 1, tzinfo=UTC))
    assert status_of(report) == {"r-1.jsonl": "out of range", "r-2.jsonl": "out of range"}


def test_a_part_deleted_from_the_dataset_is_written_again(logdir: Path, tmp_path: Path):
    out, opts = tmp_path / "ds", BatchOptions(strategies="baseline")
    run_batch([logdir], opts, output=out, workers=1)
    before = sessions(out)
    part = next(p for p in (out / "sessions").iterdir()
                if pl.read_parquet(p)["session_id"][0] == "c")
    part.unlink()
    report = run_batch([logdir], opts, output=out, workers=1)
    assert status_of(report)["c.jsonl"] == "replayed" and report.counts["unchanged"] == 3
    assert sessions(out).equals(before)


@pytest.mark.parametrize("version", ["_data_digest", "_prices_version", "replay_version"])
def test_other_pricing_data_or_versions_replay_every_file_again(
    logdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
):
    from replay.batch import _options

    out, opts = tmp_path / "ds", BatchOptions(strategies="baseline")
    run_batch([logdir], opts, output=out, workers=1)
    monkeypatch.setattr(_options, version, lambda: "another")
    assert run_batch([logdir], opts, output=out, workers=1).counts["replayed"] == 4


def test_a_cache_rule_file_edited_in_place_replays_every_file_again(
    logdir: Path, tmp_path: Path
):
    """The options hold the content of `--cache-rules`, not its path."""
    out, mine = tmp_path / "ds", tmp_path / "mine.json"
    rules = json.loads((ROOT / "pricing" / "cache" / "deepseek.json").read_text())
    mine.write_text(json.dumps(rules))
    opts = BatchOptions(strategies="baseline", cache_rules=str(mine))
    run_batch([logdir], opts, output=out, workers=1)
    assert run_batch([logdir], opts, output=out, workers=1).counts["replayed"] == 0
    mine.write_text(json.dumps(rules, indent=1))
    assert run_batch([logdir], opts, output=out, workers=1).counts["replayed"] == 4


def test_a_lone_failure_kept_is_replayed_under_other_options(tmp_path: Path):
    """A failure is kept for the options it failed under only: a --price for its model
    replays the session alone (no chain partner to bring it along)."""
    logs, out = tmp_path / "logs", tmp_path / "ds"
    variant(logs / "zz.jsonl", "zz", -DAY, model="nosuch-x")
    opts = BatchOptions(strategies="baseline")
    assert status_of(run_batch([logs], opts, output=out, workers=1)) == {"zz.jsonl": "failed"}
    assert status_of(run_batch([logs], opts, output=out, workers=1)) == {"zz.jsonl": "failed"}
    priced = dataclasses.replace(opts, prices=("nosuch-x=input:3,output:15",))
    report = run_batch([logs], priced, output=out, workers=1)
    assert status_of(report) == {"zz.jsonl": "replayed"}
    assert sessions(out)["session_id"].to_list() == ["zz"]


def test_a_failed_session_of_several_files_is_replayed_when_one_of_them_changes(
    tmp_path: Path,
):
    """The failure kept for a session of several files holds for the bytes of all of them:
    its first file unchanged, a resumed file edited replays it."""
    logs, out = tmp_path / "project", tmp_path / "ds"
    opts = BatchOptions(strategies="baseline")
    _, second = _resumed_session(logs)
    lines = _resumed_lines(2)
    next(line for line in reversed(lines) if line.get("type") == "assistant")["message"][
        "model"] = "nosuch-x"
    second.write_text(jsonl(lines), encoding="utf-8")
    failed = run_batch([logs], opts, output=out, workers=1)
    assert status_of(failed) == {"r-1.jsonl": "failed", "r-2.jsonl": "part of"}
    assert "nosuch-x" in next(f.message for f in failed.files if f.status == "failed")
    second.write_text(jsonl(_resumed_lines(2)), encoding="utf-8")
    report = run_batch([logs], opts, output=out, workers=1)
    assert status_of(report) == {"r-1.jsonl": "replayed", "r-2.jsonl": "part of"}
    assert sessions(out)["requests"].to_list() == [3]


def test_a_copy_replayed_by_a_later_batch_takes_the_part_over(tmp_path: Path):
    """A copy of a log in another folder, replayed by a later batch, rewrites the part the
    original's entry names (same bytes, same options): that part holds the copy's rows now,
    and the original's entry lets it go, or it outlived the copy's replay under other
    options and the session was counted twice."""
    first, second, out = tmp_path / "one", tmp_path / "two", tmp_path / "ds"
    first.mkdir()
    second.mkdir()
    shutil.copy(RUN42, first / "b.jsonl")
    shutil.copy(RUN42, second / "a.jsonl")
    run_batch([first], BatchOptions(strategies="baseline"), output=out, workers=1)
    run_batch([second], BatchOptions(strategies="baseline"), output=out, workers=1)
    run_batch([second], BatchOptions(strategies=STRATEGIES), output=out, workers=1)
    rows = sessions(out)
    assert rows["file"].to_list() == [str(second / "a.jsonl")] * 2
    assert rows["strategy"].to_list() == ["baseline", "truncate-500"]


def test_hidden_files_and_folders_of_a_target_folder_are_left_out(tmp_path: Path):
    logs = tmp_path / "logs"
    variant(logs / "a.jsonl", "a", -DAY)
    variant(logs / ".git" / "b.jsonl", "b", -DAY)
    variant(logs / ".c.jsonl", "c", -DAY)
    report = run_batch([logs], BatchOptions(strategies="baseline"), workers=1)
    assert status_of(report) == {"a.jsonl": "replayed"}


def _refuse_listing(monkeypatch: pytest.MonkeyPatch, denied: Path) -> None:
    """Listing `denied` fails as if it were another user's folder (the tests may run as root,
    for whom permissions never fail)."""
    real = os.scandir

    def scandir(path=".", *args, **kwargs):
        if Path(os.fsdecode(path)).absolute() == denied:
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)


def test_discover_names_each_file_once_resolved_and_sorted(tmp_path: Path, monkeypatch):
    """Folders, files and globs, `~` and relative names too, give resolved paths, sorted and
    without duplicates, whatever order the targets came in."""
    from replay.batch._discover import discover

    for name in ("b/x.jsonl", "a/y.jsonl", "a/z.jsonl"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).touch()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path / "b")
    found = discover(["~/b", "../a/z.jsonl", "~/a/*.jsonl", tmp_path / "b" / "x.jsonl"])
    root = tmp_path.resolve()
    assert found == [root / "a" / "y.jsonl", root / "a" / "z.jsonl", root / "b" / "x.jsonl"]


def test_a_glob_that_matches_no_file_is_an_error_even_beside_other_targets(tmp_path: Path):
    """`discover`: a target that matches nothing is a typo, not an empty run, even when the
    other targets found logs."""
    from replay.batch._discover import discover

    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").touch()
    for targets in ([f"{tmp_path}/logs/*.jsnol"], [tmp_path / "logs", f"{tmp_path}/logs/*.jsnol"]):
        with pytest.raises(ReplayError, match=r"logs/\*\.jsnol: the pattern matches no file"):
            discover(targets)


def test_discover_asks_exclude_about_the_resolved_path(tmp_path: Path, monkeypatch):
    """As its docstring says: a folder named relatively, or through a link, still leaves out
    the dataset's own files, which are known by their resolved paths."""
    from replay.batch._discover import discover

    (tmp_path / "logs").mkdir()
    for name in ("a.jsonl", "own.jsonl"):
        (tmp_path / "logs" / name).touch()
    (tmp_path / "link").symlink_to(tmp_path / "logs", target_is_directory=True)
    own = (tmp_path / "logs" / "own.jsonl").resolve()
    monkeypatch.chdir(tmp_path)
    for target in ("logs", "link", "link/*.jsonl"):
        assert discover([target], exclude=lambda path: path == own) == [
            (tmp_path / "logs" / "a.jsonl").resolve()
        ]


def test_the_roots_of_targets_are_their_folders_resolved(tmp_path: Path, monkeypatch):
    """What `--forget-missing` looks under: a folder target, a glob's folder before its first
    wildcard (the current folder when it starts with one); a file target covers no folder."""
    from replay.batch._discover import target_roots

    (tmp_path / "logs" / "sub").mkdir(parents=True)
    (tmp_path / "logs" / "a.jsonl").touch()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    targets = ["logs", "~/logs/sub", "logs/a.jsonl", "logs/*/x.jsonl", "*.jsonl", "nope/*"]
    root = tmp_path.resolve()
    assert target_roots(targets) == [root / "logs", root / "logs" / "sub", root / "logs", root]


def test_a_target_folder_discover_cannot_list_is_an_error_even_with_unlisted(
    tmp_path: Path, monkeypatch
):
    """`_walk`: the folder the user named is an error when it cannot be listed, never only a
    note in `unlisted` (which is for the folders found below it)."""
    from replay.batch._discover import discover

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").touch()
    _refuse_listing(monkeypatch, logs.resolve())
    unlisted: dict[Path, str] = {}
    with pytest.raises(ReplayError, match=r"logs: cannot read the folder \(Permission denied\)"):
        discover([logs], unlisted=unlisted)


def test_a_folder_discover_cannot_list_below_a_target(tmp_path: Path, monkeypatch):
    """Noted in `unlisted` (resolved, with why) and the rest walked, however the target was
    named; a target that matched nothing else is no typo then. Without `unlisted`, an error."""
    from replay.batch._discover import discover

    logs = tmp_path / "logs"
    (logs / "private").mkdir(parents=True)
    (logs / "private" / "a.jsonl").touch()
    (logs / "b.jsonl").touch()
    private = (logs / "private").resolve()
    _refuse_listing(monkeypatch, private)
    monkeypatch.chdir(tmp_path)
    why = {private: "cannot read the folder (Permission denied)"}
    found = [logs.resolve() / "b.jsonl"]
    for target, want in (("logs", found), ("logs/*/*.jsonl", []), ("logs/**/*.jsonl", found)):
        unlisted: dict[Path, str] = {}
        assert discover([target], unlisted=unlisted) == want
        assert unlisted == why
        with pytest.raises(ReplayError) as err:
            discover([target])
        assert str(err.value) == f"{Path(target.split('/*')[0]) / 'private'}: " + why[private]
    unlisted = {}
    assert discover(["logs"], exclude=lambda p: p.name == "b.jsonl", unlisted=unlisted) == []
    assert unlisted == why


def test_parse_when_reads_a_day_or_a_moment_in_utc_unless_it_has_an_offset():
    from datetime import time

    from replay.batch import parse_when

    assert parse_when(None) is None and parse_when(None, end=True) is None
    day = datetime(2026, 5, 1, tzinfo=UTC)
    assert parse_when("2026-05-01") == day
    assert parse_when("2026-05-01", end=True) == datetime.combine(day, time.max, tzinfo=UTC)
    assert parse_when("2026-05-01T09:30") == datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
    assert parse_when("2026-05-01T09:30", end=True) == datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
    east = parse_when("2026-05-01T09:30+02:00")
    assert east == datetime(2026, 5, 1, 7, 30, tzinfo=UTC)
    assert east.utcoffset() == timedelta(hours=2)
    with pytest.raises(ReplayError) as err:
        parse_when("May 1")
    assert str(err.value) == (
        "'May 1' is not a date: use YYYY-MM-DD or an ISO date-time (2026-05-01T09:30)"
    )


def _scanned(path: str | Path, size: int = 10, mtime_ns: int = 20) -> ScanResult:
    """A file's scan as a batch stores it (a recognised log of one session)."""
    info = FileInfo("s", "claude-code", "anthropic", "claude-sonnet-4-5",
                    "2026-05-01T09:00:00+00:00", "2026-05-01T09:30:00+00:00", 3, "scope",
                    fmt="claude-code")
    return ScanResult(str(path), size, mtime_ns, "ok", "sha", None, info, fmt="claude-code")


def _scanned_at(folder: Path, name: str, start: str, requests: int) -> ScanResult:
    """`_scanned` of the file `name` in `folder`, started at `start` (HH:MM) with `requests`
    requests; the file exists unless its name starts with `gone`."""
    path = folder / name
    if not name.startswith("gone"):
        path.touch()
    scanned = _scanned(path)
    at = f"2026-05-01T{start}:00+00:00"
    scanned.info = dataclasses.replace(scanned.info, started_at=at, requests=requests)
    return scanned


def test_the_files_a_dataset_owns_are_its_cache_and_its_tables_parquet_files(tmp_path: Path):
    """Its cache folder, or a Parquet file of one of its tables; any other file under the
    dataset may be a log. Any dataset: a Parquet file in a table folder beside a cache folder."""
    from replay.batch._dataset import any_dataset_owns, owns

    root = tmp_path / "ds"
    for folder in (".replay-batch", "sessions/sub", "requests", "other"):
        (root / folder).mkdir(parents=True)
    assert owns(root, root / ".replay-batch" / "manifest.jsonl")
    assert owns(root, root / "sessions" / "part-x.parquet")
    assert owns(root, root / "requests" / "part-x.parquet")
    for mine in ("sessions/run.jsonl", "sessions/sub/x.parquet", "other/x.parquet", "run.jsonl"):
        assert not owns(root, root / mine), mine
    assert any_dataset_owns(root / "sessions" / "part-x.parquet")
    assert any_dataset_owns(root / "requests" / "part-x.parquet")
    for mine in ("sessions/run.jsonl", "other/x.parquet", "sessions/sub/x.parquet"):
        assert not any_dataset_owns(root / mine), mine
    (tmp_path / "plain" / "sessions").mkdir(parents=True)  # no cache folder: no dataset
    assert not any_dataset_owns(tmp_path / "plain" / "sessions" / "part-x.parquet")


def test_scan_knows_two_tables_and_says_when_one_has_no_rows(tmp_path: Path):
    with pytest.raises(ReplayError, match=r"^unknown table 'turns'; known: sessions, requests$"):
        scan(tmp_path, "turns")
    with pytest.raises(ReplayError) as err:
        scan(tmp_path)
    assert str(err.value) == f"{tmp_path}: no `sessions` rows yet"
    with pytest.raises(ReplayError) as err:
        scan(tmp_path, "requests")
    assert str(err.value).endswith("(replay batch ... --per-request writes them)")


def test_a_dataset_is_a_folder_one_batch_at_a_time_writes(tmp_path: Path):
    from replay.batch._dataset import Dataset

    (tmp_path / "file").touch()
    with pytest.raises(ReplayError, match="the dataset must be a folder, got a file"):
        Dataset(tmp_path / "file")
    first = Dataset(tmp_path / "ds").open()
    with pytest.raises(ReplayError, match="another `replay batch` is writing this dataset"):
        Dataset(tmp_path / "ds").open()
    first.close()
    Dataset(tmp_path / "ds").open().close()  # the lock goes with the batch
    under_a_file = tmp_path / "file" / "ds"
    with pytest.raises(ReplayError) as err:  # the system's words and the file, no traceback
        Dataset(under_a_file).open()
    assert str(err.value) == (
        f"cannot write the dataset {under_a_file}: Not a directory ({under_a_file / 'sessions'})"
    )


def test_the_manifest_journal_is_read_back_and_rewritten_one_line_a_file(tmp_path: Path):
    """A line is appended when a file is done; lines cut by an interrupted run, or of another
    batch format, are passed over (not the lines after them); the end of a run rewrites the
    manifest compactly."""
    from replay.batch._dataset import Dataset
    from replay.batch._options import BATCH_FORMAT

    dataset = Dataset(tmp_path / "ds").open()
    for name in ("b", "a", "c"):
        dataset.record_scan(_scanned(f"/logs/{name}.jsonl"), "key")
    dataset.forget("/logs/c.jsonl")
    journal = dataset.manifest_path.read_text(encoding="utf-8").splitlines()
    assert len(journal) == 4
    older = json.loads(journal[0]) | {"format": BATCH_FORMAT - 1, "path": "/logs/old.jsonl"}
    later = json.loads(journal[0]) | {"path": "/logs/d.jsonl"}
    with open(dataset.manifest_path, "a", encoding="utf-8") as handle:
        handle.write(f'{{"format": {BATCH_FORMAT}, "path": "/logs/cut.js\n')
        handle.write(json.dumps(older) + "\n[1, 2]\n" + json.dumps(later) + "\n")
    dataset._journal.close()  # stopped before the manifest is rewritten: only the journal
    dataset._lock.close()
    again = Dataset(tmp_path / "ds").open()
    want = ["/logs/a.jsonl", "/logs/b.jsonl", "/logs/d.jsonl"]
    assert sorted(again.entries) == want
    for name in ("part-old.parquet", "mine.parquet"):  # no entry names either
        (tmp_path / "ds" / "sessions" / name).write_bytes(b"rows")
    again.close()
    assert [p.name for p in (tmp_path / "ds" / "sessions").iterdir()] == ["mine.parquet"]
    lines = again.manifest_path.read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(line)["path"] for line in lines) == want


def test_a_line_cut_by_an_interrupted_run_does_not_swallow_the_next_run_s_first_entry(
        tmp_path: Path):
    """An interrupted run can leave the manifest's last line without its newline: the next
    run's first entry must not be appended onto it (one broken line, that entry lost if this
    run is interrupted too)."""
    from replay.batch._dataset import Dataset

    dataset = Dataset(tmp_path / "ds").open()
    dataset.record_scan(_scanned("/logs/a.jsonl"), "key")
    with open(dataset.manifest_path, "a", encoding="utf-8") as handle:
        handle.write('{"format": 1, "path": "/logs/cut.js')  # no newline: the run stopped
    dataset._journal.close()
    dataset._lock.close()
    again = Dataset(tmp_path / "ds").open()
    again.record_scan(_scanned("/logs/b.jsonl"), "key")
    again._journal.close()  # interrupted again, before the manifest is rewritten
    again._lock.close()
    assert sorted(Dataset(tmp_path / "ds").open().entries) == ["/logs/a.jsonl", "/logs/b.jsonl"]


def test_a_cached_scan_is_reused_for_the_same_size_mtime_and_options_only(tmp_path: Path):
    from replay.batch._dataset import Dataset

    dataset = Dataset(tmp_path / "ds")
    result = _scanned("/logs/a.jsonl", size=10, mtime_ns=20)
    dataset.record_scan(result, "key")
    assert dataset.cached_scan("/logs/a.jsonl", 10, 20, "key") == result
    for size, mtime_ns, key in ((11, 20, "key"), (10, 21, "key"), (10, 20, "other")):
        assert dataset.cached_scan("/logs/a.jsonl", size, mtime_ns, key) is None
    assert dataset.cached_scan("/logs/b.jsonl", 10, 20, "key") is None


def test_a_replay_or_failure_is_reused_for_the_same_options_group_and_bytes_only(
    tmp_path: Path,
):
    from replay.batch._dataset import Dataset

    dataset = Dataset(tmp_path / "ds").open()
    log = "/logs/a.jsonl"
    dataset.record_scan(_scanned(log), "scan")
    for tables in ({"sessions": b"rows", "requests": None}, {"sessions": None, "requests": b"r"}):
        assert dataset.write_parts(log, "part-x", tables) == [
            f"{t}/part-x.parquet" for t, data in tables.items() if data is not None
        ]
    parts = ["sessions/part-x.parquet", "requests/part-x.parquet"]
    same, others = ("opts", "group", "sha"), [("o", "group", "sha"), ("opts", "g", "sha"),
                                              ("opts", "group", "other")]
    dataset.record_replay(log, *same[:2], "ok", None, parts, sha="sha")
    assert dataset.unchanged(log, *same) == parts
    assert dataset.failed(log, *same) is None
    assert all(dataset.unchanged(log, *other) is None for other in others)
    (tmp_path / "ds" / parts[1]).unlink()
    assert dataset.unchanged(log, *same) is None  # written again
    dataset.record_replay(log, *same[:2], "failed", "no price for m", [], sha="sha")
    assert dataset.unchanged(log, *same) is None
    assert dataset.failed(log, *same) == "no price for m"
    assert all(dataset.failed(log, *other) is None for other in others)
    dataset.record_replay(log, *same[:2], "failed", None, [], sha="sha")
    assert dataset.failed(log, *same) == "failed"
    dataset.close()


def test_a_part_another_files_replay_wrote_again_is_that_files_alone(tmp_path: Path):
    """Parts are named by content: the file whose replay wrote one last holds it; the other
    entry keeps its other parts."""
    from replay.batch._dataset import Dataset

    dataset = Dataset(tmp_path / "ds")
    for log in ("/logs/a.jsonl", "/logs/b.jsonl"):
        dataset.record_scan(_scanned(log), "scan")
    both = ["sessions/part-x.parquet", "requests/part-x.parquet"]
    dataset.record_replay("/logs/a.jsonl", "opts", "g", "ok", None, both, sha="sha")
    dataset.record_replay("/logs/b.jsonl", "opts", "g", "ok", None, both[:1], sha="sha")
    assert dataset.entries["/logs/a.jsonl"]["replay"]["parts"] == both[1:]
    assert dataset.entries["/logs/b.jsonl"]["replay"]["parts"] == both[:1]
    (tmp_path / "ds" / "sessions").mkdir(parents=True)
    dataset.write_parts("/logs/b.jsonl", "part-x", {"sessions": b"rows"})
    assert dataset.unchanged("/logs/b.jsonl", "opts", "g", "sha") == both[:1]
    dataset.record_replay("/logs/a.jsonl", "opts", "g", "ok", None, both[:1], sha="sha")
    assert dataset.entries["/logs/b.jsonl"]["replay"]["parts"] == []
    assert dataset.unchanged("/logs/b.jsonl", "opts", "g", "sha") is None  # its rows: a's now


def test_missing_under_names_files_gone_from_under_any_root(tmp_path: Path):
    """A broken link is still there (reported as failed under its own name), a session of
    several files is no file, and a file outside the roots is not looked for."""
    from replay.batch._dataset import Dataset

    logs, other = tmp_path / "logs", tmp_path / "other"
    logs.mkdir()
    (logs / "here.jsonl").touch()
    (logs / "link.jsonl").symlink_to(tmp_path / "nowhere")
    dataset = Dataset(tmp_path / "ds")
    for path in ("logs/here.jsonl", "logs/gone.jsonl", "logs/link.jsonl", "other/gone.jsonl",
                 "gone.jsonl"):
        dataset.record_scan(_scanned(tmp_path / path), "scan")
    sessions = [_scanned(logs / "here.jsonl")]
    dataset.record_sessions(str(logs), "key", sessions)
    assert dataset.missing_under([logs, other]) == [
        str(logs / "gone.jsonl"), str(other / "gone.jsonl")
    ]
    assert dataset.cached_sessions(str(logs), "key") == sessions
    assert dataset.cached_sessions(str(logs), "other") is None
    assert dataset.cached_sessions(str(other), "key") is None


def test_a_gone_file_is_superseded_by_a_file_that_copies_its_session_or_bytes(tmp_path: Path):
    """A resumed file copies the gone file's lines (starts when it did, with at least as many
    requests) and holds rows: it holds the session now; a file that starts later, has fewer
    requests, no scan or no rows does not. Else a file of the same bytes does."""
    from replay.batch._dataset import Dataset

    dataset = Dataset(tmp_path / "ds")

    def put(name: str, *, start: str = "09:00", requests: int = 3, parts: bool = True,
            sha: str | None = None, files: tuple[str, ...] = (), info: bool = True,
            of: str | None = None) -> str:
        scanned = _scanned_at(tmp_path, name, start, requests)
        path = scanned.path
        dataset.record_scan(scanned if info else dataclasses.replace(scanned, info=None), "k")
        status = "part of" if of else "ok" if parts else "failed"
        dataset.record_replay(path, "opts", "g", status, of,
                              [f"sessions/{name}.parquet"] if parts and not of else [],
                              sha=name if sha is None else sha, files=files)
        return path

    resumed = put("resumed")  # as many requests as the gone file, from its start
    later, fewer = put("later", start="09:10", requests=9), put("fewer", requests=2)
    unscanned, rowless = put("unscanned", info=False), put("rowless", parts=False)
    put("no-sha", sha="")
    # read with another file: held by that file's rows, while they stay
    via = put("via", of=resumed)
    via_gone, via_rowless = put("via-gone", of=put("gone-first")), put("via-rowless", of=rowless)
    gone = {
        other: put(f"gone-{n}", files=(str(tmp_path / f"gone-{n}"), other))
        for n, other in enumerate((resumed, later, fewer, unscanned, rowless, via, via_gone,
                                   via_rowless, str(tmp_path / "gone-copy")))
    }
    put("gone-copy")
    twin = put("gone-twin", sha="resumed")
    put("gone-no-sha", sha="")
    assert dataset.superseded() == [(gone[resumed], resumed), (gone[via], via),
                                    (twin, resumed)]


def test_a_file_read_in_a_gone_files_session_is_held_by_that_files_rows(tmp_path: Path):
    """A subagent file whose transcript is gone: the transcript's rows hold its thread while
    they stay, name it among their files and the file does not copy the transcript."""
    from replay.batch._dataset import Dataset

    dataset = Dataset(tmp_path / "ds")

    def put(name: str, status: str, first: str | None = None, files: tuple[str, ...] = (),
            start: str = "09:10", requests: int = 1) -> str:
        scanned = _scanned_at(tmp_path, name, start, requests)
        path = scanned.path
        dataset.record_scan(scanned, "k")
        parts = [f"sessions/{name}.parquet"] if status == "ok" else []
        dataset.record_replay(path, "opts", "g", status, first, parts, sha=name, files=files)
        return path

    names = ("sub", "resumed", "unlisted")
    gone = put("gone", "ok", files=tuple(str(tmp_path / n) for n in ("gone", *names[:2])),
               start="09:00", requests=3)
    here = put("here", "ok", files=(str(tmp_path / "here"), str(tmp_path / "sub-of-here")),
               start="09:00", requests=3)
    rowless = put("gone-rowless", "failed", files=(str(tmp_path / "gone-rowless"),
                                                   str(tmp_path / "sub-of-rowless")),
                  start="09:00", requests=3)
    sub, resumed = put("sub", "part of", gone), put("resumed", "part of", gone, start="09:00",
                                                    requests=3)
    unlisted = put("unlisted", "part of", gone)
    assert dataset.read_in_missing(sub) == gone
    assert dataset.read_in_missing(resumed) is None  # it holds the session now
    assert dataset.read_in_missing(unlisted) is None
    assert dataset.read_in_missing(put("sub-of-here", "part of", here)) is None
    assert dataset.read_in_missing(put("sub-of-rowless", "part of", rowless)) is None
    assert dataset.read_in_missing(here) is None


def test_the_scan_lists_the_models_a_session_s_threads_ran_on(tmp_path: Path):
    """A thread opened on its own model (a subagent on Haiku) whose requests do not repeat it
    ran on that model, as `replay run` bills it: the scan lists it beside the header's."""
    from replay.batch._work import scan_file
    from replay.log import ThreadStart, UserMessage

    base = read_log(RUN42)
    base.header.provider, base.header.model = "anthropic", "claude-sonnet-4-5"
    t = base.events[-1].ts
    base.events += [
        ThreadStart(ts=t, thread_id="sub", model="claude-haiku-4-5"),
        UserMessage(ts=t, thread="sub", text="Count the files."),
        RequestMarker(ts=t, thread="sub", request_id="sub-1"),
    ]
    for e in base.requests():
        e.model = e.provider = None
    log = tmp_path / "sub.jsonl"
    write_log(base, log)
    info = scan_file(str(log), BatchOptions()).info
    assert info is not None and info.model == "claude-haiku-4-5,claude-sonnet-4-5"


def test_a_server_side_mechanism_on_sessions_without_it_is_said(tmp_path: Path):
    """As `replay run` says of a rule that fired (docs/strategies.md), a batch names the
    server-side mechanisms it simulated on sessions whose models their API does not serve
    (Claude models for Anthropic's, provider openai for OpenAI's), counted over every file,
    replayed or unchanged."""
    logs = tmp_path / "logs"
    variant(logs / "gpt.jsonl", "gpt", -DAY * 2, provider="openai", model="gpt-5")
    variant(logs / "gpt2.jsonl", "gpt2", -DAY, provider="openai", model="gpt-5-mini")
    variant(logs / "claude.jsonl", "claude", -DAY * 3, **ANTHROPIC)
    strategies = "baseline,anthropic-compact-150k,anthropic-clear-thinking-keep-1," \
        "openai-responses-compact-90pct"
    opts = BatchOptions(strategies=strategies)
    out = tmp_path / "ds"
    for _ in range(2):  # the second batch replays nothing: the note comes from the dataset
        report = run_batch([logs], opts, output=out, workers=1)
        foreign = [n for n in report.notes if "do not have" in n]
        assert foreign == [
            "anthropic-clear-thinking-keep-1, anthropic-compact-150k simulate mechanisms of "
            "Anthropic's Messages API (Claude models), which the models of 2 sessions of this "
            "batch (gpt-5, gpt-5-mini) do not have: their rows are the bill of a harness "
            "applying the same rule to its requests itself.",
            "openai-responses-compact-90pct simulates a mechanism of OpenAI's Responses API, "
            "which the models of 1 session of this batch (claude-sonnet-4-5) do not have: their "
            "rows are the bill of a harness applying the same rule to its requests itself.",
        ]
    assert status_of(report) == dict.fromkeys(["claude.jsonl", "gpt.jsonl", "gpt2.jsonl"],
                                              "unchanged")
    only_claude = run_batch([logs / "claude.jsonl"], BatchOptions(
        strategies="baseline,anthropic-compact-150k"), workers=1)
    assert not [n for n in only_claude.notes if "do not have" in n]
    # Claude on Bedrock, spelt as Bedrock spells it, is a Claude model too.
    variant(tmp_path / "aws" / "bedrock.jsonl", "bedrock", -DAY, provider="aws",
            model="global.anthropic.claude-sonnet-4-5-20250929-v1:0")
    on_bedrock = run_batch([tmp_path / "aws"], BatchOptions(
        strategies="baseline,anthropic-compact-150k"), workers=1)
    assert status_of(on_bedrock) == {"bedrock.jsonl": "replayed"}
    assert not [n for n in on_bedrock.notes if "do not have" in n]


def test_token_counts_of_a_private_tokenizer_are_said_to_be_estimates(tmp_path: Path):
    """As `replay run` says: the sessions' models whose tokenizer is private (Gemini, Claude:
    pricing/tokenizers.json) are counted with an estimate, named once per family."""
    logs = tmp_path / "logs"
    variant(logs / "gemini.jsonl", "g", -DAY * 2)  # run42 ran on Gemini
    variant(logs / "claude.jsonl", "c", -DAY, **ANTHROPIC)
    variant(logs / "gpt.jsonl", "o", -DAY * 3, provider="openai", model="gpt-5")
    report = run_batch([logs], BatchOptions(strategies="baseline"), workers=1)
    said = [n.split(":")[0] for n in report.notes if " are estimates: " in n]
    assert said == ["Token counts for claude models are estimates",
                    "Token counts for gemini models are estimates"]


def test_half_written_parts_of_a_killed_batch_are_cleaned_up(tmp_path: Path):
    """A batch killed while it wrote a part or the manifest leaves `write_atomic`'s temporary
    file behind; the next batch, which holds the dataset's lock, removes them (and nothing
    else)."""
    from replay.batch._dataset import CACHE_DIR

    logs, out = tmp_path / "logs", tmp_path / "ds"
    variant(logs / "a.jsonl", "a", -DAY)
    opts = BatchOptions(strategies="baseline")
    run_batch([logs], opts, output=out, workers=1)
    stale = [out / "sessions" / ".part-0a1b2c.parquet.k3j9x_.tmp",
             out / "requests" / ".part-0a1b2c.parquet.u81mq2.tmp",
             out / CACHE_DIR / ".manifest.jsonl.p0o9i8.tmp"]
    kept = [out / "sessions" / "my-notes.tmp", out / CACHE_DIR / "notes.txt"]
    for path in stale + kept:
        path.write_bytes(b"PAR1 half")
    report = run_batch([logs], opts, output=out, workers=1)
    assert status_of(report) == {"a.jsonl": "unchanged"}
    assert [p.exists() for p in stale] == [False] * 3
    assert all(p.exists() for p in kept)
    assert sessions(out).height == 1


def _with_log_quirks(path: Path, session_id: str, shift: timedelta) -> Path:
    """The sample run with what `replay run` notes from a log itself: a request after a Claude
    Code microcompact (#2), usage iterations billed apart (#4), a time before the previous
    request's (#7), and cache writes under a usage field replay does not read (#9 and #10)."""
    variant(path, session_id, shift)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    markers = [line for line in lines if line.get("type") == "request"]
    markers[2]["after_microcompact"] = True
    iteration = {"type": "compaction", "input_tokens": 10, "output_tokens": 5}
    markers[4]["usage"] = {"input_tokens": 100, "output_tokens": 10,
                           "raw": {"iterations": [iteration]}}
    markers[7]["ts"] = markers[6]["ts"]  # the same time is no clock set back...
    markers[8]["ts"] = (datetime.fromisoformat(markers[7]["ts"]) - timedelta(seconds=2)).isoformat()
    for n in (9, 10):
        markers[n]["usage"] = {"input_tokens": 100, "output_tokens": 10,
                               "raw": {"input_tokens_details": {"cache_write_tokens": 40}}}
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_what_run_notes_from_the_log_itself_is_a_column_and_a_note(tmp_path: Path) -> None:
    # `replay run` notes a microcompact, unpriced usage iterations, times going backwards and
    # unread cache writes from the log itself; a batch said none of them (its notes are built
    # from the dataset's columns): a column per note, the same on every strategy's row, and a
    # note summing them over the sessions, replayed now or kept unchanged.
    logs = tmp_path / "logs"
    quirky = _with_log_quirks(logs / "quirky.jsonl", "q", -DAY * 2)
    variant(logs / "plain.jsonl", "p", -DAY)
    counts = {"microcompact_requests": 1, "unpriced_iteration_requests": 1,
              "clock_backwards_requests": 1, "unread_cache_write_requests": 2}
    assert replay_api.log_counts(read_log(quirky)) == counts
    # A fork's requests copied from its parent (left out of its rows) are left out here too.
    assert replay_api.log_counts(read_log(quirky), skip={2, 9})["microcompact_requests"] == 0
    assert replay_api.log_counts(read_log(quirky), skip={2, 9})["unread_cache_write_requests"] == 1
    out = tmp_path / "ds"
    for status in ("replayed", "unchanged"):
        report = run_batch([logs], BatchOptions(strategies=STRATEGIES), output=out, workers=1)
        assert set(status_of(report).values()) == {status}
        rows = sessions(out)
        for column, n in counts.items():
            assert rows[column].to_list() == [0, 0, n, n], column  # plain, then quirky
        said = [n for n in report.notes if "`replay run FILE` says which" in n]
        assert [n.split(" (column")[0] for n in said] == [
            "1 request(s) of 1 session(s) came after a Claude Code microcompact, which cleared "
            "tool results the log does not name",
            "1 request(s) of 1 session(s) list iterations besides the response in "
            "`usage.iterations` (server-side compaction), billed apart from the requests' usage",
            "1 request(s) of 1 session(s) are timed before their thread's previous request (a "
            "clock set back, spliced logs)",
            "2 request(s) of 1 session(s) report cache writes under a usage field replay does "
            "not read",
        ]
        assert all(f"{quirky} " in n for n in said)
    # What `replay run` says of the same log: the same four notes.
    notes = replay(read_log(quirky), ["recorded"]).notes
    assert [n for n in notes if n.startswith(("Microcompact", "Request times go backwards"))]
    assert sum("usage.iterations" in n or "does not read" in n for n in notes) == 2


def test_a_parallel_session_does_not_read_another_s_entry_before_it_is_ready(tmp_path: Path):
    # Two sessions of one chain both have a thread `main`: each keeps its own cache lane (its
    # label and the strategy's name before the thread), or the second, started half a second
    # after the first, took the first's entry for its own and read it at once, where Anthropic
    # serves another request's entry only once its response begins (`ready_at`, 1 s assumed).
    header = {**ANTHROPIC, "system": LONG_SYSTEM}
    logs = tmp_path / "logs"
    variant(logs / "a.jsonl", "a", timedelta(0), stretch=600, **header)
    variant(logs / "b.jsonl", "b", timedelta(seconds=0.5), stretch=600, **header)
    out = tmp_path / "ds"
    run_batch([logs], BatchOptions(strategies="baseline", per_request=True), output=out,
              workers=1)
    assert sessions(out)["shared_cache"].to_list() == [True, True]
    first = _first_request(requests(out), "b")
    assert first["cached_tokens"] == 0
    assert first["miss_cause"] == "written by a parallel request not yet ready"


def _chain_scan(name: str, start: datetime, end: datetime, size: int = 100) -> ScanResult:
    info = FileInfo(session_id=name, agent="claude-code", provider="anthropic",
                    model="claude-sonnet-4-5", started_at=start.isoformat(),
                    ended_at=end.isoformat(), requests=1, scope="s1")
    return ScanResult(f"/logs/{name}", size, 0, "ok", sha=name * 8, info=info)


def test_a_chain_goes_by_the_latest_end_of_every_earlier_session_and_its_byte_cap():
    # docs/batch.md: a session joins the chain when it starts no later than the horizon after
    # *every* earlier one has ended (so after the latest end, not the previous session's), a
    # gap of exactly the horizon included; and a chain is cut *after* `chain_bytes` of logs.
    t0 = datetime(2026, 5, 1, 9, tzinfo=UTC)
    hour = timedelta(hours=1)
    scans = [
        _chain_scan("long", t0, t0 + 30 * timedelta(minutes=1)),
        _chain_scan("inner", t0 + timedelta(minutes=5), t0 + timedelta(minutes=10)),  # inside it
        _chain_scan("next", t0 + timedelta(minutes=30) + hour, t0 + timedelta(minutes=40) + hour),
    ]
    tasks = plan_groups(scans, BatchOptions(), horizon=3600, rkey="k" * 16)
    assert [[m.info.session_id for m in t.members] for t in tasks] == [["long", "inner", "next"]]
    # 300 bytes in all: a cap of 300 keeps one chain, 299 cuts it before the third.
    capped = plan_groups(scans, BatchOptions(chain_bytes=300), horizon=3600, rkey="k" * 16)
    assert len(capped) == 1
    cut = plan_groups(scans, BatchOptions(chain_bytes=299), horizon=3600, rkey="k" * 16)
    assert sorted(len(t.members) for t in cut) == [1, 2]


def test_the_log_notes_sum_each_count_and_name_the_first_three_files_in_order() -> None:
    # Four sessions: the note sums their requests (2 + 1 + 3 + 4), counts the sessions, and
    # names the first three files by path, the fourth as "and 1 more".
    from replay.batch._run import _log_notes

    files = {"/l/d": 4, "/l/b": 1, "/l/a": 2, "/l/c": 3}
    (note,) = _log_notes({"clock_backwards_requests": files})
    assert note.startswith("10 request(s) of 4 session(s) are timed before")
    assert "says which: /l/a 2, /l/b 1, /l/c 3, and 1 more):" in note
    (three,) = _log_notes({"clock_backwards_requests": {"/l/b": 1, "/l/a": 2, "/l/c": 3}})
    assert "says which: /l/a 2, /l/b 1, /l/c 3):" in three


def test_a_forks_copied_requests_are_left_out_of_its_log_counts(tmp_path: Path) -> None:
    # The fork's second copied request is timed before the first (its clock went backwards in
    # the parent's history): billed in the parent, it is no request of the fork's rows, so its
    # `clock_backwards_requests` is 0 with the parent in the batch, 1 without it.
    from test_adapters_common import jsonl

    from replay.adapters import read_any

    parent, fork = _pi_fork_and_parent(tmp_path / "sessions")
    lines = [json.loads(line) for line in fork.read_text(encoding="utf-8").splitlines()]
    lines[5]["message"]["timestamp"] = 1767348000500  # 10:00:00.5, before the first at 10:00:01
    fork.write_text(jsonl(lines), encoding="utf-8")
    assert replay_api.log_counts(read_any(str(fork)))["clock_backwards_requests"] == 1
    opts = BatchOptions(strategies="baseline")
    both = run_batch([tmp_path / "sessions"], opts, output=tmp_path / "both", workers=1)
    assert status_of(both) == {parent.name: "replayed", fork.name: "replayed"}
    assert sessions(tmp_path / "both")["clock_backwards_requests"].to_list() == [0, 0]
    assert not [n for n in both.notes if "clock_backwards_requests" in n]
    alone = run_batch([fork], opts, output=tmp_path / "alone", workers=1)
    assert sessions(tmp_path / "alone")["clock_backwards_requests"].to_list() == [1]
    assert [n for n in alone.notes if "clock_backwards_requests" in n]


def test_a_chain_with_a_session_out_of_range_is_unchanged_on_a_rerun(tmp_path: Path) -> None:
    # a is out of --since, kept in b's chain for what it leaves in the cache, with no rows and
    # so no entry of its own in the manifest: a re-run with the same dates must still find b
    # unchanged (docs/batch.md, "Incremental runs"), not replay the chain for a.
    logs = tmp_path / "logs"
    a = variant(logs / "a.jsonl", "a", timedelta(0), stretch=600, system=LONG_SYSTEM)
    variant(logs / "b.jsonl", "b", timedelta(seconds=120), stretch=600, system=LONG_SYSTEM)
    since = read_log(a).header.ts + timedelta(seconds=60)
    opts = BatchOptions(strategies="baseline")
    first = run_batch([logs], opts, output=tmp_path / "ds", workers=1, since=since)
    assert status_of(first) == {"a.jsonl": "out of range", "b.jsonl": "replayed"}
    again = run_batch([logs], opts, output=tmp_path / "ds", workers=1, since=since)
    assert status_of(again) == {"a.jsonl": "out of range", "b.jsonl": "unchanged"}
    assert again.requests == 0


def test_a_fork_whose_parent_is_out_of_range_gets_no_note_about_its_rows(tmp_path: Path):
    # --until between the parent's start and the fork's: the fork gives no rows, so the note on
    # what a fork's rows hold of its copies (docs/batch.md: "A note gives both counts") has
    # nothing to say of it.
    parent, fork = _pi_fork_and_parent(tmp_path / "sessions")
    until = datetime(2026, 1, 2, 10, 0, 5, tzinfo=UTC)  # after the parent, before the fork
    report = run_batch([tmp_path / "sessions"], BatchOptions(strategies="baseline"),
                       until=until, workers=1)
    assert status_of(report) == {parent.name: "replayed", fork.name: "out of range"}
    assert not [n for n in report.notes if "forked session" in n]


def test_a_forks_parent_found_under_its_name_as_a_duplicate_still_holds_the_copies(
    tmp_path: Path,
) -> None:
    # The file named like the fork's parent is a byte-identical copy of a backup that sorts
    # first: it is the `duplicate`, the backup is replayed. The parent is still in the batch
    # (counted once, in the backup's rows), so the fork leaves its 2 copies out: 2 + 1 requests.
    import shutil

    parent, fork = _pi_fork_and_parent(tmp_path / "sessions")
    shutil.copy(parent, tmp_path / "sessions" / "0-backup.jsonl")
    report = run_batch([tmp_path / "sessions"], BatchOptions(strategies="baseline"), workers=1)
    assert status_of(report) == {"0-backup.jsonl": "replayed", parent.name: "duplicate",
                                 fork.name: "replayed"}
    assert report.requests == 3 and report.totals["requests"].to_list() == [3]


def test_a_forks_part_without_its_copies_is_named_own(tmp_path: Path) -> None:
    # docs/batch.md: `sessions/part-<sha>-<options>[-<group>][-own].parquet`, `-own` for a fork
    # whose copied requests are left out: its rows are of another kind than the fork's rows
    # alone, and a part of either kind is the same file only when its rows are.
    from replay.adapters._once import file_sha256

    parent, fork = _pi_fork_and_parent(tmp_path / "sessions")
    opts = BatchOptions(strategies="baseline", share_cache=False)
    out = tmp_path / "ds"
    run_batch([tmp_path / "sessions"], opts, output=out, workers=1)
    parts = sorted(p.name for p in (out / "sessions").glob("*.parquet"))
    assert [p.endswith("-own.parquet") for p in parts] == [False, True]
    own = next(p for p in parts if p.endswith("-own.parquet"))
    assert own.split("-")[1] == file_sha256(fork)[:24]
    run_batch([fork], opts, output=out, workers=1)  # without its parent: all its requests
    mine = [p.name for p in (out / "sessions").glob(f"part-{file_sha256(fork)[:24]}-*")]
    assert len(mine) == 1 and not mine[0].endswith("-own.parquet")


def test_unchanged_files_count_as_ok_in_the_report(logdir: Path, tmp_path: Path) -> None:
    # `ok` is replayed now or unchanged (`STATUSES`; the totals are over every ok session): a
    # re-run that replays nothing still has every log ok.
    opts = BatchOptions(strategies="baseline")
    first = run_batch([logdir], opts, output=tmp_path / "ds", workers=1)
    again = run_batch([logdir], opts, output=tmp_path / "ds", workers=1)
    assert again.counts["replayed"] == 0 and again.counts["unchanged"] > 0
    assert again.counts["ok"] == again.counts["unchanged"] == first.counts["ok"]


def test_a_file_written_within_the_ttl_before_since_is_read_for_its_chain(tmp_path: Path):
    # docs/batch.md: only a file last modified before --since *by more than the longest cache
    # TTL* (2 h) is not read. a ended, and was last written, 30 min before b started: it is
    # read, out of range, and still b's chain partner.
    logs = tmp_path / "logs"
    a = variant(logs / "a.jsonl", "a", timedelta(0), stretch=600, system=LONG_SYSTEM)
    end = max(e.ts for e in read_log(a).events)
    b_start = end + timedelta(minutes=30)
    variant(logs / "b.jsonl", "b", b_start - read_log(a).header.ts, stretch=600,
            system=LONG_SYSTEM)
    os.utime(a, (end.timestamp(), end.timestamp()))
    since = b_start - timedelta(minutes=1)
    report = run_batch([logs], BatchOptions(strategies="baseline"), workers=1, since=since)
    assert status_of(report) == {"a.jsonl": "out of range", "b.jsonl": "replayed"}
    assert report.files[0].message.startswith("started ")
    assert (report.shared_groups, report.shared_sessions) == (1, 1)


def test_the_session_columns_of_lone_sessions_and_skipped_lines(tmp_path: Path) -> None:
    # docs/batch.md: sessions replayed alone have `shared_cache` false and nulls in
    # `cache_group` and `group_position`; `skipped_lines` counts the malformed lines a lenient
    # read skipped (1 in bad.jsonl, on each strategy's row). good.jsonl is the same run a day
    # later: no chain.
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = RUN42.read_text(encoding="utf-8").splitlines()
    (logs / "bad.jsonl").write_text("\n".join([*lines[:4], "{not json", *lines[4:]]) + "\n",
                                    encoding="utf-8")
    variant(logs / "good.jsonl", "g", DAY)
    out = tmp_path / "ds"
    run_batch([logs], BatchOptions(strategies=STRATEGIES), output=out, workers=1)
    rows = sessions(out)  # bad, bad, good, good
    assert rows["shared_cache"].to_list() == [False] * 4
    assert rows["cache_group"].to_list() == [None] * 4
    assert rows["group_position"].to_list() == [None] * 4
    assert rows["skipped_lines"].to_list() == [1, 1, 0, 0]


@pytest.mark.parametrize("share", [False, True], ids=["alone", "shared-cache"])
def test_a_fork_with_no_request_of_its_own_names_the_model_it_ran(tmp_path: Path, share: bool):
    # Its rows hold no request, but the session ran on anthropic / claude-sonnet-4-5 (its
    # copied history): `provider` and `model` name them, not an empty string.
    from test_adapters_common import jsonl

    parent, fork = _pi_fork_and_parent(tmp_path / "sessions")
    lines = fork.read_text(encoding="utf-8").splitlines()[:-2]  # its own user turn and reply
    fork.write_text(jsonl([json.loads(line) for line in lines]), encoding="utf-8")
    opts = BatchOptions(strategies="baseline", share_cache=share)
    run_batch([tmp_path / "sessions"], opts, output=tmp_path / "ds", workers=1)
    mine = sessions(tmp_path / "ds").filter(pl.col("file") == str(fork))
    assert mine["requests"].to_list() == [0]
    assert mine["provider"].to_list() == ["anthropic"]
    assert mine["model"].to_list() == ["claude-sonnet-4-5"]


def test_a_replay_that_ran_out_of_memory_is_not_kept_as_a_failure() -> None:
    # docs/batch.md: a file whose worker ran out of memory is not cached (read and replayed
    # again); an error the same bytes would raise again is.
    from replay.batch._work import failure

    assert failure("/l/a.jsonl", MemoryError()).transient
    assert not failure("/l/a.jsonl", KeyError("usage")).transient


def test_a_session_ends_at_its_latest_event_even_when_the_last_is_timed_earlier(
    tmp_path: Path,
) -> None:
    # A clock set back: the log's last event is timed before an earlier one. The session ran
    # until the latest time it holds (what chains go by), not the last line's.
    from replay.batch._work import scan_file

    base = read_log(RUN42)
    events = list(base.events)
    events[-1] = events[-1].model_copy(update={"ts": base.header.ts})
    write_log(Session(header=base.header, events=events), tmp_path / "a.jsonl")
    latest = max(e.ts for e in events[:-1])
    assert latest > events[-1].ts
    info = scan_file(str(tmp_path / "a.jsonl"), BatchOptions()).info
    assert datetime.fromisoformat(info.ended_at) == latest.astimezone(UTC)


def test_a_rerun_with_per_request_rows_totals_the_unchanged_sessions_alike(
    logdir: Path, tmp_path: Path
) -> None:
    # The totals of unchanged sessions come from their session parts only: the request parts
    # beside them (--per-request) are rows of another table.
    opts = BatchOptions(strategies=STRATEGIES, per_request=True)
    first = run_batch([logdir], opts, output=tmp_path / "ds", workers=1)
    again = run_batch([logdir], opts, output=tmp_path / "ds", workers=1)
    assert again.counts["replayed"] == 0
    assert again.totals.equals(first.totals)


def test_the_fork_notes_count_each_kind_of_fork_apart() -> None:
    # docs/batch.md: "A note gives both counts": the forks whose parent is in the batch (2
    # copied requests of 1 fork) and those without it (3 of 1), each counted on its own.
    from replay.batch._run import _fork_notes

    def fork(name: str, copied: int) -> ScanResult:
        info = FileInfo(session_id=name, agent="pi", provider="anthropic", model="m",
                        started_at="2026-01-02T10:00:00+00:00",
                        ended_at="2026-01-02T10:01:00+00:00", requests=copied + 1, scope="s",
                        parent=f"/p/{name}-parent.jsonl", copied_requests=copied)
        return ScanResult(f"/l/{name}", 1, 0, "ok", sha=name, info=info)

    found, lost = _fork_notes([fork("a", 2), fork("b", 3)], {"/l/a"})
    assert found.startswith("2 request(s) of 1 forked session(s) were copied from a parent "
                            "session found in this batch")
    assert lost.startswith("3 request(s) of 1 forked session(s) were copied from a parent "
                           "session not found in this batch")


def test_the_folder_a_glob_starts_in_that_discover_cannot_list_is_an_error(
    tmp_path: Path, monkeypatch
):
    """`_glob`: the pattern's folder before its first wildcard was named by the user, as a
    target folder is: an error when it cannot be listed, never only a note in `unlisted`
    (docs/batch.md: `logs` for `logs/**/*.jsonl`)."""
    from replay.batch._discover import discover

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").touch()
    _refuse_listing(monkeypatch, logs.resolve())
    monkeypatch.chdir(tmp_path)
    for pattern in ("logs/*.jsonl", "logs/**/*.jsonl"):
        unlisted: dict[Path, str] = {}
        with pytest.raises(ReplayError, match=r"^logs: cannot read the folder \(Permission"):
            discover([pattern], unlisted=unlisted)
        assert unlisted == {}


def test_a_rerun_follows_the_code_of_a_plugin_module_of_one_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_registry
):
    """A plug-in registered from a module that is one file, not a package (the calling
    program's own module): an edit of that file outside the build function (a constant it
    reads) gives other rows too, so the options digest changes."""
    import importlib

    from replay.batch._options import replay_key
    from replay.strategies import StrategySpec, register

    site = tmp_path / "site"
    site.mkdir()
    module = site / "batch_plugin_mod.py"
    code = "\n\ndef build():\n    return lambda history, ctx: [history[0], *history[1:][-KEEP:]]\n"
    module.write_text("KEEP = 20\n" + code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    try:
        spec = importlib.import_module("batch_plugin_mod")
        register(StrategySpec(family="batch-mod-keep", pattern="batch-mod-keep",
                              build=spec.build, cache_class="churn", rule="keep the last items"))
        opts = BatchOptions(strategies="baseline,batch-mod-keep")
        key = replay_key(opts)
        assert replay_key(opts) == key
        module.write_text("KEEP = 3\n" + code, encoding="utf-8")  # the build function as it was
        assert replay_key(opts) != key
    finally:
        sys.modules.pop("batch_plugin_mod", None)


@pytest.mark.parametrize(
    "digest, edited", [("_code_digest", "batch/_run.py"), ("_data_digest", "tokenizers.json")]
)
def test_an_edit_of_any_of_replays_modules_or_data_files_changes_their_digest(
    monkeypatch: pytest.MonkeyPatch, digest: str, edited: str
):
    """What the options digest reads of replay itself (a source checkout edited without a new
    version number): every module, every built-in data file, by content."""
    from replay.batch import _options

    cached = getattr(_options, digest)
    real = _options._file_digest
    try:
        cached.cache_clear()
        before = cached()
        cached.cache_clear()
        assert cached() == before
        monkeypatch.setattr(
            _options, "_file_digest", lambda p: "edited" if p.endswith(edited) else real(p)
        )
        cached.cache_clear()
        assert cached() != before
    finally:
        cached.cache_clear()


def test_force_reads_again_a_file_edited_under_the_same_size_and_mtime(tmp_path: Path):
    """`--force` ignores the manifest, its scans too: a file whose bytes changed while its size
    and mtime stayed (an edit in place, its time set back) is read again, and its rows say
    what the file says now."""
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "run42.jsonl"
    text = RUN42.read_text(encoding="utf-8")
    log.write_text(text, encoding="utf-8")
    before = os.stat(log)
    opts = BatchOptions(strategies="baseline")
    out = tmp_path / "ds"
    run_batch([logs], opts, output=out, workers=1)
    first = sessions(out)["started_at"].to_list()
    edited = text.replace('"ts":"2026-11-29T11:', '"ts":"2026-11-29T10:')  # an hour earlier
    assert edited != text and len(edited) == len(text)
    log.write_text(edited, encoding="utf-8")
    os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))
    forced = run_batch([logs], opts, output=out, workers=1, force=True)
    assert status_of(forced) == {"run42.jsonl": "replayed"}
    assert [t - timedelta(hours=1) for t in first] == sessions(out)["started_at"].to_list()


def test_a_whole_copy_of_a_sessions_folder_is_a_duplicate_of_the_first_named(tmp_path: Path):
    """A session of several files copied whole into another folder: the two hold the same
    files, so the one named first is read (docs/batch.md, `duplicate`) and the copy's files
    are its duplicates: the session is counted once, not twice, nor dropped."""
    logs = tmp_path / "logs"
    first, resumed = _resumed_session(logs / "p-a")
    shutil.copytree(logs / "p-a", logs / "p-b")
    alone = run_batch([logs / "p-a"], BatchOptions(strategies="baseline"), workers=1)
    report = run_batch([logs], BatchOptions(strategies="baseline"), workers=1)
    got = {Path(f.path).relative_to(logs).as_posix(): (f.status, f.message) for f in report.files}
    assert got == {
        "p-a/r-1.jsonl": ("replayed", None),
        "p-a/r-2.jsonl": ("part of", f"read in the session of {first}"),
        "p-b/r-1.jsonl": ("duplicate", f"same bytes as {first}"),
        "p-b/r-2.jsonl": ("duplicate", f"same bytes as {resumed}"),
    }
    assert report.requests == alone.requests
    assert report.totals.equals(alone.totals)


def test_a_file_that_became_a_duplicate_keeps_no_rows_of_its_own(tmp_path: Path):
    """A file replayed alone, then found beside a byte-identical copy named before it: it is
    the `duplicate` now, which keeps no rows of its own (docs/batch.md), even where the copy's
    rows land in another part (other options): the session is counted once."""
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(RUN42, logs / "b.jsonl")
    out = tmp_path / "ds"
    run_batch([logs], BatchOptions(strategies="baseline"), output=out, workers=1)
    shutil.copy(RUN42, logs / "a.jsonl")
    opts = BatchOptions(strategies="baseline", ttl="1h")
    report = run_batch([logs], opts, output=out, workers=1)
    assert status_of(report) == {"a.jsonl": "replayed", "b.jsonl": "duplicate"}
    assert sessions(out)["file"].to_list() == [str((logs / "a.jsonl").resolve())]


def test_a_copy_held_by_several_sessions_names_the_one_replayed(tmp_path: Path):
    """Backups of a session taken as it was resumed (its first file; then its first two): each
    copy says it duplicates the live session's file, the one replayed, not another backup's."""
    logs = tmp_path / "logs"
    live = _resumed_session(logs / "p-a", runs=3)
    for backup, files in (("a-one", live[:1]), ("a-two", live[:2])):
        (logs / backup).mkdir()
        for path in files:
            shutil.copy(path, logs / backup / path.name)
    report = run_batch([logs], BatchOptions(strategies="baseline"), workers=1)
    got = {Path(f.path).relative_to(logs).as_posix(): (f.status, f.message) for f in report.files}
    assert {name: said for name, said in got.items() if not name.startswith("p-a/")} == {
        "a-one/r-1.jsonl": ("duplicate", f"same bytes as {live[0]}"),
        "a-two/r-1.jsonl": ("duplicate", f"same bytes as {live[0]}"),
        "a-two/r-2.jsonl": ("duplicate", f"same bytes as {live[1]}"),
    }
    assert got["p-a/r-1.jsonl"] == ("replayed", None)


def test_a_folder_that_could_not_be_grouped_for_a_file_it_could_not_read_is_grouped_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Grouping a folder's files into sessions failed on a file it could not read (permissions,
    fixed later without a new mtime): no property of the files, so not kept; the next batch
    groups the folder again."""
    from replay.batch import _work

    logs = tmp_path / "logs"
    first, resumed = _resumed_session(logs / "p-a")
    real = _work.grouped_adapter

    class Denied:
        def session_groups(self, paths):
            raise PermissionError(13, "Permission denied", str(resumed))

    monkeypatch.setattr(_work, "grouped_adapter", lambda fmt: Denied())
    out, opts = tmp_path / "ds", BatchOptions(strategies="baseline")
    failed = run_batch([logs], opts, output=out, workers=1)
    assert {(f.status, f.message) for f in failed.files} == {
        ("failed", "cannot read the file (Permission denied)")
    }
    monkeypatch.setattr(_work, "grouped_adapter", real)
    report = run_batch([logs], opts, output=out, workers=1)
    assert status_of(report) == {"r-1.jsonl": "replayed", "r-2.jsonl": "part of"}


def test_the_cache_scope_is_the_provider_agent_system_prompt_and_tools():
    """Sessions share a cache scope when their provider, agent, system prompt and tools are the
    same (docs/batch.md); any one of them that differs puts them apart."""
    from types import SimpleNamespace

    from replay.batch._work import _scope

    base = read_log(RUN42)
    header = base.header
    assert header.system and header.tools
    scope = _scope(header.provider, base)
    assert _scope(header.provider, SimpleNamespace(header=header.model_copy())) == scope
    others = [
        {"system": header.system + " Be brief."},
        {"tools": header.tools[:-1]},
        {"agent": header.agent + "-other"},
    ]
    for update in others:
        session = SimpleNamespace(header=header.model_copy(update=update))
        assert _scope(header.provider, session) != scope, update
    assert _scope("anthropic", base) != scope


def test_a_session_of_several_files_it_could_not_read_whole_is_read_again_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Reading a session of several files whole failed on a file it could not read (permissions,
    fixed later without a new mtime): no property of the files, so not kept; the next batch
    reads and replays the session."""
    from replay.batch import _work

    logs = tmp_path / "logs"
    _resumed_session(logs / "p-a")
    real = _work._load

    def denied(path, opts, files=(), fmt=""):
        if files:
            raise PermissionError(13, "Permission denied", str(files[-1]))
        return real(path, opts, files, fmt)

    monkeypatch.setattr(_work, "_load", denied)
    out, opts = tmp_path / "ds", BatchOptions(strategies="baseline")
    failed = run_batch([logs], opts, output=out, workers=1)
    assert status_of(failed) == {"r-1.jsonl": "failed", "r-2.jsonl": "part of"}
    messages = {Path(f.path).name: f.message for f in failed.files}
    assert messages["r-1.jsonl"] == "cannot read the file (Permission denied)"
    monkeypatch.setattr(_work, "_load", real)
    report = run_batch([logs], opts, output=out, workers=1)
    assert status_of(report) == {"r-1.jsonl": "replayed", "r-2.jsonl": "part of"}
