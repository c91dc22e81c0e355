"""`replay bench`: the fast path against a naive reference and against the floor, as ratios.

Measured in one run on one machine (absolute seconds mean little elsewhere; ratios travel):

- fast: `replay_session` per strategy on the synthetic session, each with a cold token memo
  (so every row pays its own tokenization), and once for `--strategies all` from the log file
  (reading it included) the way the CLI runs it (`replay(..., keep_records=False,
  per_turn=False)`: the summary built strategy by strategy);
- naive: the same replay (strategies, evidence checks, cache simulation, pricing), where every
  prompt is also re-rendered into one text, re-tokenized in full with tiktoken and compared with
  the previous one token by token (the quadratic approach the block memo avoids). It runs on the
  first `naive_requests` requests; when that is fewer than the session, the rest is
  extrapolated as the fast path's own time for it plus the naive-only work (re-render,
  re-tokenize, diff) fitted per request as `a + b·prompt_tokens` (the prompt size of every
  request is known from the fast run);
- floor: reading the log once plus tokenizing each distinct content block of the log once;
  beside it (no target), the floor of what the strategies send: the same read plus tokenizing
  once each distinct text any strategy's replay tokenized in full (the log's blocks and what
  strategies derive from them: summaries, their summarizer transcripts, shortened outputs),
  recorded during the per-strategy runs;
- doubling: the `--strategies all` time on a session twice as long (same seed: the first N
  requests are the same) over the time on N requests. The ratio is of CPU time, each size
  replayed in a fresh child process `DOUBLING_RUNS` times, alternating, the fastest run of each
  kept: this process has already run every other measure (its heap and memos are not those of
  a new `replay` command), and on a shared machine wall-clock pairs moved by ±0.3 between runs.
  The in-process wall-clock ratio is reported beside it, and so is the ratio of the prompt
  tokens the replay simulated: strategies that never compact re-send a history that doubles,
  so the work priced grows faster than the session;
- memory: the peak resident-set growth of a child process that reads the log and replays every
  strategy, against the log file's size: once the way `replay LOG --strategies all` runs (the
  summary built strategy by strategy, each record counted and dropped as soon as it is
  complete), once the way `replay_session` returns (every record kept, with its block arrays).
  The baseline is taken after imports and the fixed tables are loaded: the tokenizer, the
  price snapshot and the cache-rule files, which do not grow with the log (only the log's
  header is read for that).
"""

from __future__ import annotations

import gc
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from replay.engine import ReplayConfig, replay_session
from replay.engine._replay import _Run
from replay.log import (
    AssistantMessage,
    Compaction,
    RequestMarker,
    Session,
    SessionHeader,
    ToolResult,
    UserMessage,
    parse_event,
    read_log,
)
from replay.prices import Pricer
from replay.render._request import (
    SUMMARY,
    SUMMARY_KIND,
    SYSTEM,
    TEXT,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
)
from replay.strategies import resolve
from replay.strategies._view import AssistantItem, SummaryItem, ToolResultItem, UserItem
from replay.tokens import counter_for, family_for, get_encoding
from replay.tokens._counter import TokenCounter

NAIVE_METHOD = (
    "naive = the same replay (strategies, evidence checks, cache simulation, pricing) where "
    "every prompt is also re-rendered into one text, every block of it re-tokenized with "
    "tiktoken (no memo) and the first mismatch found by comparing the whole token sequences"
)

# ---------------------------------------------------------------------------------------------
# The naive reference

_KINDS = (TOOL, SYSTEM, USER, SUMMARY, TEXT, THINKING, TOOL_CALL, TOOL_RESULT)
_TOOL_CALL_FRAMING = -100
_FIXED_BODY = -200
_EMPTY = np.zeros(0, dtype=np.int64)


@dataclass
class NaiveRecord:
    """One request of the naive reference (the fields the fast path's records also have)."""

    strategy: str
    kind: str
    request_index: int
    prompt_tokens: int
    first_mismatch_token: int
    tokens: np.ndarray = field(repr=False)
    """The whole prompt as token ids (framing tokens as negative sentinels)."""
    ts: Any = None
    model: str = ""


def naive_prompt_blocks(items, *, system: str, tools) -> list[tuple[str, bool, str, int | None]]:
    """Re-render a view from scratch: (kind, starts a message, text, fixed token count) per
    block, in the provider's prefix order — what `Renderer` produces, without any memo."""
    blocks: list[tuple[str, bool, str, int | None]] = []
    for tool in tools:
        text = json.dumps(tool.model_dump(mode="json", exclude_unset=False), sort_keys=True)
        blocks.append((TOOL, False, text, None))
    if system:
        blocks.append((SYSTEM, True, system, None))
    prev_is_result = False
    for item in items:
        is_result = isinstance(item, ToolResultItem)
        if is_result:
            blocks.append((TOOL_RESULT, not prev_is_result, item.output, None))
        elif isinstance(item, AssistantItem):
            if not item.blocks:
                blocks.append((TEXT, True, "", None))
            for n, b in enumerate(item.blocks):
                kind = {"text": TEXT, "thinking": THINKING, "tool_call": TOOL_CALL}[b.type]
                blocks.append((kind, n == 0, b.rendered(), b.size_only))
        elif isinstance(item, SummaryItem):
            blocks.append((SUMMARY_KIND[item.role], True, item.text, None))
        elif isinstance(item, UserItem):
            blocks.append((USER, True, item.text, None))
        else:
            raise TypeError(f"a strategy returned {type(item).__name__}, not a view item")
        prev_is_result = is_result
    return blocks


def naive_tokens(blocks, model: str) -> tuple[np.ndarray, int]:
    """The prompt text and its tokens, re-tokenized block by block with no memo.

    Returns (token ids, provider-scale prompt tokens). Framing tokens are negative sentinels that
    encode the block kind, so two prompts compare exactly as the fast prefix diff compares them.
    Blocks are tokenized one by one (not the joined text) because the fast path counts them that
    way: a BPE merge across a block boundary would change the count.
    """
    family = family_for(model)
    counter = counter_for(model)
    encoding = get_encoding(family.encoding)
    full_text = "".join(text for _, _, text, _ in blocks)  # the rendered prompt, as sent
    parts: list[np.ndarray] = []
    scaled = 0
    for kind, starts, text, fixed in blocks:
        framing = []
        if starts:
            framing += [-1 - _KINDS.index(kind)] * family.message_overhead
        if kind == TOOL_CALL:
            framing += [_TOOL_CALL_FRAMING] * family.tool_call_overhead
        body = [_FIXED_BODY] * fixed if fixed is not None else encoding.encode_ordinary(text)
        parts.append(np.asarray(framing + body, dtype=np.int64))
        scaled += len(framing) + (fixed if fixed is not None else counter.scale(len(body)))
    del full_text
    tokens = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return tokens, scaled


def naive_first_mismatch(previous: np.ndarray, current: np.ndarray) -> int:
    """First position where two whole token sequences differ (the shorter length if none)."""
    n = min(len(previous), len(current))
    diff = np.flatnonzero(previous[:n] != current[:n])
    return int(diff[0]) if len(diff) else n


class _NaiveRun(_Run):
    """The engine's own loop (same histories, strategy calls, evidence checks, summarizer calls,
    cache simulation and pricing), where every prompt is additionally re-rendered, re-tokenized
    in full and diffed token by token: what `replay` would cost without its block memo. The
    naive numbers go to `naive_records`; the engine's own records are kept as usual."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.request_seconds: list[float] = []
        self.extra_seconds: dict[int, float] = {}
        """Request index → seconds spent in the naive-only work (render, tokenize, diff)."""
        self.naive_records: list[NaiveRecord] = []
        self._previous_tokens: dict[int, NaiveRecord] = {}

    def _request(self, marker, event_index, request_index, state) -> None:
        start = time.perf_counter()
        super()._request(marker, event_index, request_index, state)
        self.request_seconds.append(time.perf_counter() - start)

    def _simulate(
        self,
        *,
        kind,
        items,
        marker,
        request_index,
        thread,
        state,
        model,
        provider,
        renderer,
        output_tokens,
        estimated_output,
        events,
        system=None,
        fresh=False,
        tools=True,
        hand_over=False,
        fork=None,
    ):
        start = time.perf_counter()
        previous = self._previous_tokens.get(id(state))
        blocks = naive_prompt_blocks(
            items,
            system=state.system if system is None else system,
            tools=self.session.header.tools if tools else (),
        )
        tokens, total = naive_tokens(blocks, model)
        if previous is None or family_for(previous.model).family != family_for(model).family:
            first = 0
        else:
            first = naive_first_mismatch(previous.tokens, tokens)
        naive = NaiveRecord(
            self.named.name, kind, request_index, total, first, _EMPTY, marker.ts, model
        )
        self.naive_records.append(naive)
        if kind == "request":
            naive.tokens = tokens
            if previous is not None:
                previous.tokens = _EMPTY  # compared for the last time: free it
            self._previous_tokens[id(state)] = naive
        self.extra_seconds[request_index] = (
            self.extra_seconds.get(request_index, 0.0) + time.perf_counter() - start
        )
        return super()._simulate(
            kind=kind,
            items=items,
            marker=marker,
            request_index=request_index,
            thread=thread,
            state=state,
            model=model,
            provider=provider,
            renderer=renderer,
            output_tokens=output_tokens,
            estimated_output=estimated_output,
            events=events,
            system=system,
            fresh=fresh,
            tools=tools,
            hand_over=hand_over,
            fork=fork,
        )


def naive_replay(
    session: Session, strategies: str | Sequence[str] = "all", config: ReplayConfig | None = None
) -> list[NaiveRecord]:
    """The naive reference over `session`: one record per simulated request (summarizer calls
    included), with prompt tokens and first mismatch computed the quadratic way. Its first
    mismatch equals the fast path's for model families whose calibration factor is 1.0."""
    return _naive_runs(session, strategies, config)[0]


def _naive_runs(
    session, strategies, config=None
) -> tuple[list[NaiveRecord], dict[str, list[float]]]:
    config = config or ReplayConfig(pricer=Pricer())
    records: list[NaiveRecord] = []
    seconds: dict[str, list[float]] = {}
    for named in resolve(strategies):
        run = _NaiveRun(session, named, config)
        run.run()
        records.extend(run.naive_records)
        seconds[named.name] = [
            run.extra_seconds.get(i, 0.0) for i in range(len(run.request_seconds))
        ]
    for r in records:
        r.tokens = _EMPTY  # done comparing: free the big arrays
    return records, seconds


# ---------------------------------------------------------------------------------------------
# Measurements


def reset_token_memo() -> None:
    """Forget every memoized token count (the next replay tokenizes from scratch), and what
    evidence checkers share between replays (the next replay searches from scratch)."""
    from replay.evidence import forget_shared_answers
    from replay.tokens import _counter

    _counter._COUNTERS.clear()
    forget_shared_answers()


def prefix_session(session: Session, requests: int) -> Session:
    """The first `requests` requests of `session` (with what answers the last one): a user's
    follow-up or a compaction that comes before the next request belongs to that request, so
    the N-request prefix of a longer synthetic session is the N-request session."""
    seen = 0
    for n, event in enumerate(session.events):
        if isinstance(event, RequestMarker):
            seen += 1
            if seen > requests:
                while isinstance(session.events[n - 1], UserMessage | Compaction):
                    n -= 1
                return Session(session.header, session.events[:n], session.path)
    return session


def _distinct_texts(session: Session) -> list[str]:
    header = session.header
    texts: dict[str, None] = {header.system: None}
    for tool in header.tools:
        texts[json.dumps(tool.model_dump(mode="json", exclude_unset=False), sort_keys=True)] = None
    from replay.engine._replay import _assistant_item

    for e in session.events:
        if isinstance(e, UserMessage):
            texts[e.text] = None
        elif isinstance(e, ToolResult):
            texts[e.output] = None
        elif isinstance(e, AssistantMessage):
            for b in _assistant_item(e, -1).blocks:
                texts[b.rendered()] = None
        elif isinstance(e, Compaction):
            texts[e.summary] = None
    return list(texts)


def repeated_output_bytes(session: Session) -> int:
    """UTF-8 bytes of the tool outputs that repeat an earlier output word for word. `read_log`
    holds each distinct text once, so the memory ratio depends on this share of the log: the
    synthetic session re-reads unchanged files far more often than the real logs measured
    (docs/performance.md, "What is left" 4)."""
    seen: set[str] = set()
    repeated = 0
    for e in session.events:
        if isinstance(e, ToolResult):
            if e.output in seen:
                repeated += len(e.output.encode("utf-8", "surrogatepass"))
            seen.add(e.output)
    return repeated


def measure_floor(path: str | Path) -> dict[str, Any]:
    """Reading the log once plus tokenizing each distinct content block of it once."""
    start = time.perf_counter()
    session = read_log(path)
    read_seconds = time.perf_counter() - start
    return _tokenized_once(_distinct_texts(session), session.header.model, read_seconds)


@contextmanager
def _recording_full_encodes(into: dict[str, None]) -> Iterator[None]:
    """Every text a token counter encodes in full while inside goes into `into` (the windows
    a prefix diff encodes around where two blocks part do not: they are the replay's own way
    of comparing, not a block it sends)."""
    original = TokenCounter.raw_tokens

    def raw_tokens(self: TokenCounter, text: str) -> np.ndarray:
        into[text] = None
        return original(self, text)

    TokenCounter.raw_tokens = raw_tokens  # type: ignore[method-assign]
    try:
        yield
    finally:
        TokenCounter.raw_tokens = original  # type: ignore[method-assign]


def _tokenized_once(texts: Sequence[str], model: str, read_seconds: float) -> dict[str, Any]:
    """A floor: `read_seconds` plus tokenizing each of `texts` (distinct) once."""
    encoding = get_encoding(family_for(model).encoding)
    start = time.perf_counter()
    tokens = sum(len(encoding.encode_ordinary(t)) for t in texts)
    tokenize_seconds = time.perf_counter() - start
    return {
        "seconds": read_seconds + tokenize_seconds,
        "read_seconds": read_seconds,
        "tokenize_seconds": tokenize_seconds,
        "distinct_blocks": len(texts),
        "distinct_tokens": tokens,
    }


def _time_fast(session: Session, strategies: Sequence[str]) -> tuple[float, list]:
    reset_token_memo()
    start = time.perf_counter()
    records = replay_session(session, list(strategies), ReplayConfig(pricer=Pricer()))
    return time.perf_counter() - start, records


def _replay_like_the_cli(session: Session, strategies: Sequence[str], workers: int = 1) -> Any:
    """`replay LOG --strategies ... --workers N` without printing: the summary built strategy by
    strategy, each strategy's records dropped once counted."""
    from replay._api import replay

    result = replay(session, list(strategies), keep_records=False, per_turn=False,
                    workers=workers)
    result.summary  # noqa: B018 - built like the CLI builds it
    return result


def _time_all_from_file(path: Path, strategies: Sequence[str], workers: int = 1) -> float:
    """Reading the log and replaying `strategies` the way `replay LOG --workers N` does (the
    workers' start-up included), cold token memo."""
    reset_token_memo()
    start = time.perf_counter()
    _replay_like_the_cli(read_log(path), strategies, workers)
    return time.perf_counter() - start


DOUBLING_RUNS = 2
"""Fresh-process runs of each session size for the doubling ratio (the fastest one counts)."""


def time_probe(path: str | Path, strategies: Sequence[str]) -> dict[str, float]:
    """Wall-clock and CPU seconds of reading `path` and replaying `strategies` the way
    `replay LOG` does, in this process, after imports and the fixed tables (tokenizer, prices,
    cache rules) are loaded; and the prompt tokens the replay simulated (every strategy's
    requests: the work it priced)."""
    _load_fixed_tables(path)
    reset_token_memo()
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    result = _replay_like_the_cli(read_log(path), strategies)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "prompt_tokens": int(result.summary["prompt_tokens"].sum()),
    }


def _probe_in_child(probe: str, path: Path, strategies: Sequence[str], *args: str) -> dict:
    """`probe(path, strategies, *args)` of this module (`time_probe`, `memory_probe`) run in a
    fresh Python process: its JSON result."""
    code = (
        "import json, sys; from replay.bench import _bench; "
        f"print(json.dumps(_bench.{probe}(sys.argv[1], sys.argv[2].split(','), *sys.argv[3:])))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path), ",".join(strategies), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _doubling(
    path: Path,
    path2: Path,
    strategies: Sequence[str],
    in_process: tuple[float, float],
    requests: int,
) -> dict[str, Any]:
    """The doubling figures: fresh-process CPU ratio (the one the target reads) and the
    in-process wall-clock one (`in_process`: seconds on N and on 2N requests)."""
    runs: dict[Path, list[dict[str, float]]] = {path: [], path2: []}
    for _ in range(DOUBLING_RUNS):
        for p in (path, path2):
            runs[p].append(_probe_in_child("time_probe", p, strategies))
    cpu = [min(r["cpu_seconds"] for r in runs[p]) for p in (path, path2)]
    wall = [min(r["wall_seconds"] for r in runs[p]) for p in (path, path2)]
    tokens = [runs[p][0]["prompt_tokens"] for p in (path, path2)]
    return {
        "requests": 2 * requests,
        "seconds": in_process[1],
        "ratio": cpu[1] / cpu[0],
        "cpu_seconds": cpu,
        "wall_seconds": wall,
        "wall_ratio": wall[1] / wall[0],
        "in_process_ratio": in_process[1] / in_process[0],
        "runs": DOUBLING_RUNS,
        "prompt_tokens": tokens,
        "prompt_tokens_ratio": tokens[1] / max(tokens[0], 1),
    }


def _fit_naive(seconds: list[float], prompts: list[int]) -> tuple[float, float]:
    """`t = a + b·prompt_tokens` by least squares; where that fit has a negative a or b, or
    cannot be made (under 3 samples, one prompt size), the line through the origin that keeps
    the measured total (b = Σt / Σprompt), or the mean time when no prompt has a token. (Not
    the least-squares fit constrained to a, b >= 0: the total is what the extrapolation adds
    to.)"""
    t = np.asarray(seconds, dtype=float)
    p = np.asarray(prompts, dtype=float)
    if len(t) >= 3 and p.std() > 0:
        a, b = np.linalg.lstsq(np.column_stack([np.ones_like(p), p]), t, rcond=None)[0]
        if a >= 0 and b >= 0:
            return float(a), float(b)
    if p.sum() > 0:
        return 0.0, float(t.sum() / p.sum())
    return float(t.mean()) if len(t) else 0.0, 0.0


def _prompts_per_request(records, name: str, requests: int) -> list[int]:
    """Prompt tokens each recorded request of strategy `name` simulated (summarizer calls
    added to the request that triggered them)."""
    out = [0] * requests
    for r in records:
        if r.strategy == name and r.request_index < requests:
            out[r.request_index] += int(r.request.total)
    return out


def _proc_status(field_name: str) -> int | None:
    """A `kB` field of /proc/self/status, in bytes (None where there is no /proc)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _max_rss_bytes() -> int:
    """This process's peak resident set so far, in bytes: `ru_maxrss` counts kilobytes on
    Linux but bytes on macOS (where there is no /proc to read VmHWM from)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _load_fixed_tables(path: str | Path) -> None:
    """What any replay loads whatever the log, like an import: the log's tokenizer, the price
    snapshot genai-prices bundles and the built-in cache-rule files (loaded on first use, they
    weighed ~0.4× of the 9.5 MB log of the issue's setting in the probes, for a table that does
    not grow with the log). Only the log's header is read for it."""
    from genai_prices import data_snapshot

    from replay.cache._rules import all_builtin_rules

    get_encoding(family_for(_header_model(path)).encoding)
    data_snapshot.get_snapshot()
    all_builtin_rules()


def _header_model(path: str | Path) -> str:
    """The model of a log's header (its first line), without reading the rest."""
    with open(path, encoding="utf-8") as handle:
        header = parse_event(json.loads(handle.readline()), path, 1)
    if not isinstance(header, SessionHeader):
        raise ValueError(f"{path}: the first line is not a session header")
    return header.model


MEMORY_MODES = ("cli", "records")
"""`cli`: what `replay LOG --strategies all` holds (`replay(..., keep_records=False,
per_turn=False)`); `records`: `replay_session`, which returns every record with its arrays."""


def memory_probe(path: str | Path, strategies: Sequence[str], mode: str = "cli") -> dict[str, int]:
    """Peak resident-memory growth (bytes) of reading `path` and replaying `strategies`, in this
    process, after imports and the fixed tables (tokenizer, prices, cache rules) are loaded
    (`mode`: one of `MEMORY_MODES`).

    On Linux the peak (VmHWM) is reset first through /proc/self/clear_refs: `ru_maxrss` would
    carry the peak of the parent process across fork and exec."""

    if mode not in MEMORY_MODES:
        raise ValueError(f"memory mode {mode!r}: expected one of {MEMORY_MODES}")
    # The fixed tables are loaded before the baseline; only the header is read for them: a
    # whole log read and freed here would leave its memory to the process, and the replay
    # would reuse it unmeasured (the ratio read ~1.5 lower so).
    _load_fixed_tables(path)
    reset_token_memo()
    gc.collect()
    reset = False
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        reset = True
    except OSError:
        pass
    before = _proc_status("VmRSS") if reset else None
    if before is None:
        before = _max_rss_bytes()
    session = read_log(path)
    if mode == "cli":
        result: Any = _replay_like_the_cli(session, strategies)
    else:
        result = replay_session(session, list(strategies), ReplayConfig(pricer=Pricer()))
    peak = _proc_status("VmHWM") if reset else None
    if peak is None:
        peak = _max_rss_bytes()
    del result, session
    return {"peak_bytes": max(0, peak - before), "baseline_bytes": before}


def run_bench(
    requests: int = 1000,
    strategies: str | Sequence[str] = "all",
    *,
    seed: int = 0,
    naive_requests: int | None = 200,
    doubling: bool = True,
    memory: bool = True,
    max_context_tokens: int | None = None,
    size_scale: float = 1.0,
    provider: str = "anthropic",
    model: str = "claude-sonnet-4-5",
    workdir: str | Path | None = None,
    progress=None,
    workers: int | None = None,
) -> dict[str, Any]:
    """Run the benchmark; returns the document `replay bench --format json` prints.

    `naive_requests` = how many requests the naive reference really runs (None or ≥ requests:
    all of them, no extrapolation). `progress(message)` is called before each phase.
    `workers`: also time `all` on that many worker processes (`all.workers`; None: not).
    """
    from replay.bench._synthetic import write_synthetic_log

    say = progress or (lambda message: None)
    names = [n.name for n in resolve(strategies)]
    gen = dict(
        max_context_tokens=max_context_tokens, provider=provider, model=model, size_scale=size_scale
    )
    tmp = tempfile.TemporaryDirectory(prefix="replay-bench-") if workdir is None else None
    folder = Path(workdir or tmp.name)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        say(f"generating a {requests}-request session (seed {seed})")
        path = folder / f"synthetic-{requests}-{seed}.jsonl"
        session = write_synthetic_log(path, requests, seed, **gen)
        get_encoding(family_for(model).encoding)  # load the tokenizer before any timing
        log_bytes = path.stat().st_size

        say("floor: reading the log once and tokenizing each distinct block once")
        floor = measure_floor(path)

        rows = []
        peak_prompt = 0
        m = requests if naive_requests is None else max(1, min(naive_requests, requests))
        head = prefix_session(session, m) if m < requests else session
        sent: dict[str, None] = {}
        for name in names:
            say(f"fast: {name}")
            with _recording_full_encodes(sent):
                seconds, records = _time_fast(session, [name])
            prompts = _prompts_per_request(records, name, requests)
            peak_prompt = max([peak_prompt] + [int(r.request.total) for r in records])
            del records
            say(f"naive: {name} on {m} requests")
            reset_token_memo()
            start = time.perf_counter()
            naive_records, per_request = _naive_runs(head, [name])
            naive_measured = time.perf_counter() - start
            del naive_records
            if m == requests:
                fast_at_m = seconds
                naive_total, extrapolated = naive_measured, False
            else:
                # Recording as the full run did: `seconds - fast_at_m` is the rest's own time.
                with _recording_full_encodes(sent):
                    fast_at_m = _time_fast(head, [name])[0]
                # The rest costs what the fast path costs there, plus the naive-only work
                # (re-render, re-tokenize, diff) fitted per request as a + b·prompt_tokens.
                a, b = _fit_naive(per_request[name], prompts[:m])
                naive_total = (
                    naive_measured
                    + max(0.0, seconds - fast_at_m)
                    + sum(a + b * p for p in prompts[m:])
                )
                extrapolated = True
            half = per_request[name][: m // 2]
            exponent = (
                math.log2(sum(per_request[name]) / sum(half)) if m >= 4 and sum(half) > 0 else None
            )
            rows.append(
                {
                    "strategy": name,
                    "requests": requests,
                    "fast_seconds": seconds,
                    "requests_per_second": requests / seconds if seconds else None,
                    "naive_seconds": naive_total,
                    "naive_extrapolated": extrapolated,
                    "naive_ratio": naive_total / seconds if seconds else None,
                    "naive_requests": m,
                    "naive_seconds_measured": naive_measured,
                    "fast_seconds_at_naive_requests": fast_at_m,
                    "naive_ratio_measured": naive_measured / fast_at_m if fast_at_m else None,
                    "naive_scaling_exponent": exponent,
                }
            )

        say("floor of what the strategies sent: tokenizing each distinct text once")
        # every distinct text the strategies sent, with the log's read time
        sent_floor = _tokenized_once(list(sent), model, floor["read_seconds"])
        del sent
        say(f"fast: --strategies {','.join(names)} from the log file")
        all_seconds = _time_all_from_file(path, names)
        on_workers = None
        if workers is not None:
            say(f"fast: the same on {workers} worker processes")
            on_workers = {"workers": workers,
                          "seconds": _time_all_from_file(path, names, workers)}
        result: dict[str, Any] = {
            "requests": requests,
            "seed": seed,
            "size_scale": size_scale,
            "max_context_tokens": max_context_tokens,
            "provider": provider,
            "model": model,
            "strategies": names,
            "log_bytes": log_bytes,
            "log_events": len(session.events) + 1,
            "log_repeated_output_bytes": repeated_output_bytes(session),
            "peak_prompt_tokens": peak_prompt,
            "rows": rows,
            "all": {
                "seconds": all_seconds,
                "requests_per_second": requests * len(names) / all_seconds,
                "naive_seconds": sum(r["naive_seconds"] for r in rows),
                "naive_ratio": sum(r["naive_seconds"] for r in rows) / all_seconds,
                "workers": on_workers,
            },
            "floor": floor,
            "fast_floor_ratio": all_seconds / floor["seconds"],
            "sent_floor": sent_floor,
            "fast_sent_floor_ratio": all_seconds / sent_floor["seconds"],
            "fast_floor_per_strategy": _per_strategy_floor(rows, floor),
            "naive_method": NAIVE_METHOD,
            "naive_extrapolated": any(r["naive_extrapolated"] for r in rows),
            "machine": {
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "platform": platform.platform(),
                "load_average_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            },
        }
        del session
        if doubling:
            say(f"doubling: generating and replaying {2 * requests} requests")
            path2 = folder / f"synthetic-{2 * requests}-{seed}.jsonl"
            write_synthetic_log(path2, 2 * requests, seed, **gen)
            seconds2 = _time_all_from_file(path2, names)
            say(f"doubling: both sizes again in fresh processes ({DOUBLING_RUNS} runs each)")
            result["doubling"] = _doubling(path, path2, names, (all_seconds, seconds2), requests)
        else:
            result["doubling"] = None
        if memory:
            say("memory: replaying every strategy in a child process, as the CLI does")
            mem = _probe_in_child("memory_probe", path, names, "cli")
            say("memory: again keeping every record (replay_session)")
            kept = _probe_in_child("memory_probe", path, names, "records")
            result["memory"] = {
                "peak_bytes": mem["peak_bytes"],
                "log_bytes": log_bytes,
                "ratio": mem["peak_bytes"] / log_bytes,
                "peak_bytes_records": kept["peak_bytes"],
                "ratio_records": kept["peak_bytes"] / log_bytes,
                "method": "peak resident-set growth (VmHWM after a reset, Linux) of a child "
                "process reading the log and replaying every strategy, after imports and the "
                "fixed tables (tokenizer, price snapshot, cache rules) are loaded: `ratio` as "
                "`replay LOG --strategies all` runs (summary built strategy by strategy), "
                "`ratio_records` keeping every record (`replay_session`)",
            }
        else:
            result["memory"] = None
        result["targets"] = _targets(result)
        return result
    finally:
        if tmp is not None:
            tmp.cleanup()


def _per_strategy_floor(rows: list[dict[str, Any]], floor: dict[str, Any]) -> dict[str, float]:
    """Each strategy alone against the floor: reading the log plus its replay with a cold token
    memo, over reading and tokenizing the log once (`all` replays every strategy against one
    floor)."""
    ratios = sorted((floor["read_seconds"] + r["fast_seconds"]) / floor["seconds"] for r in rows)
    middle = len(ratios) // 2
    median = ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2
    return {"median": median, "min": ratios[0], "max": ratios[-1]}


TARGETS = {
    "naive_ratio": (">=", 100.0),
    "fast_floor_ratio": ("<=", 3.0),
    "doubling_ratio": ("<=", 2.2),
    "memory_ratio": ("<=", 4.0),
}
"""Issue 8's targets, as ratios."""


def _targets(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    values = {
        "naive_ratio": result["all"]["naive_ratio"],
        "fast_floor_ratio": result["fast_floor_ratio"],
        "doubling_ratio": result["doubling"]["ratio"] if result["doubling"] else None,
        "memory_ratio": result["memory"]["ratio"] if result["memory"] else None,
    }
    out = {}
    for key, (op, limit) in TARGETS.items():
        v = values[key]
        ok = None if v is None else (v >= limit if op == ">=" else v <= limit)
        out[key] = {"value": v, "target": f"{op} {limit:g}", "met": ok}
    return out


def bench_table(result: dict[str, Any]):
    """The benchmark as rich renderables: per-strategy table and the ratio table."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from replay.report._fit import Fitted
    from replay.report._table import STRATEGY

    n = result["requests"]
    title = (
        f"replay bench · {n} requests (seed {result['seed']}, size ×{result['size_scale']:g}) · "
        f"peak prompt {result['peak_prompt_tokens']:,} tokens · "
        f"log {result['log_bytes'] / 1e6:.1f} MB"
    )
    per = Table(title=title, title_justify="left")
    for col in (
        "strategy",
        "fast (s)",
        "requests/s",
        "naive (s)",
        "naive/fast",
        "naive measured",
        "naive/fast measured",
    ):
        per.add_column(col, justify="left" if col == "strategy" else "right")
    for r in result["rows"]:
        star = "*" if r["naive_extrapolated"] else ""
        per.add_row(
            r["strategy"],
            f"{r['fast_seconds']:.3f}",
            f"{r['requests_per_second']:,.0f}",
            f"{r['naive_seconds']:,.1f}{star}",
            f"{r['naive_ratio']:,.0f}×{star}",
            f"{r['naive_seconds_measured']:.2f} s @ {r['naive_requests']}",
            f"{r['naive_ratio_measured']:,.1f}×",
        )
    a = result["all"]
    star = "*" if result["naive_extrapolated"] else ""
    per.add_row(
        f"all ({len(result['rows'])}, one run, log read included)",
        f"{a['seconds']:.3f}",
        f"{a['requests_per_second']:,.0f}",
        f"{a['naive_seconds']:,.1f}{star}",
        f"{a['naive_ratio']:,.0f}×{star}",
        "",
        "",
        style="bold",
    )
    parallel = a.get("workers")
    if parallel:
        per.add_row(
            f"all, {parallel['workers']} workers (log read and their start included)",
            f"{parallel['seconds']:.3f}",
            f"{n * len(result['rows']) / parallel['seconds']:,.0f}",
            "", "", "", "",
        )
    fl = result["floor"]
    ratios = Table(title="ratios (issue 8 targets)", title_justify="left")
    for col in ("measure", "value", "target", "met", "detail"):
        ratios.add_column(col, justify="left" if col in ("measure", "detail") else "right")
    t = result["targets"]

    def mark(key: str) -> Text:
        met = t[key]["met"]
        if met is None:
            return Text("")
        return Text("yes", style="green") if met else Text("no", style="red")

    ratios.add_row(
        "naive / fast (all)",
        f"{a['naive_ratio']:,.0f}×",
        t["naive_ratio"]["target"],
        mark("naive_ratio"),
        f"{a['naive_seconds']:,.1f} s vs {a['seconds']:.2f} s",
    )
    ratios.add_row(
        "fast / floor",
        f"{result['fast_floor_ratio']:.2f}×",
        t["fast_floor_ratio"]["target"],
        mark("fast_floor_ratio"),
        f"floor {fl['seconds']:.2f} s = read {fl['read_seconds']:.2f} s + tokenize "
        f"{fl['distinct_blocks']:,} distinct blocks ({fl['distinct_tokens']:,} tokens) "
        f"{fl['tokenize_seconds']:.2f} s",
    )
    sent = result["sent_floor"]
    ratios.add_row(
        "fast / floor of what was sent",
        f"{result['fast_sent_floor_ratio']:.2f}×",
        "",
        "",
        f"read + tokenize the {sent['distinct_blocks']:,} distinct texts the strategies sent "
        f"({sent['distinct_tokens']:,} tokens) {sent['tokenize_seconds']:.2f} s",
    )
    alone = result["fast_floor_per_strategy"]
    ratios.add_row(
        "fast / floor, one strategy",
        f"{alone['median']:.2f}× (median)",
        "",
        "",
        f"{alone['min']:.2f}× to {alone['max']:.2f}× (read + that strategy alone, cold memo)",
    )
    if result["doubling"]:
        d = result["doubling"]
        ratios.add_row(
            "doubling (2N / N)",
            f"{d['ratio']:.2f}×",
            t["doubling_ratio"]["target"],
            mark("doubling_ratio"),
            f"CPU {d['cpu_seconds'][0]:.1f} → {d['cpu_seconds'][1]:.1f} s, fresh processes "
            f"(best of {d['runs']}); wall {d['wall_ratio']:.2f}×; in this process "
            f"{d['in_process_ratio']:.2f}× ({d['seconds']:.1f} s at {d['requests']} requests); "
            f"simulated prompt tokens ×{d['prompt_tokens_ratio']:.2f}",
        )
    if result["memory"]:
        m = result["memory"]
        ratios.add_row(
            "peak memory / log size",
            f"{m['ratio']:.2f}×",
            t["memory_ratio"]["target"],
            mark("memory_ratio"),
            f"{m['peak_bytes'] / 1e6:,.0f} MB vs {m['log_bytes'] / 1e6:.1f} MB (RSS); "
            f"{m['ratio_records']:.1f}× ({m['peak_bytes_records'] / 1e6:,.0f} MB) "
            "keeping every record; tool outputs repeated word for word (held once): "
            f"{result['log_repeated_output_bytes'] / m['log_bytes']:.2f}× the log",
        )
    notes = []
    if result["naive_extrapolated"]:
        notes.append(
            f"* naive run on the first {result['rows'][0]['naive_requests']} requests, "
            f"extrapolated to {n}: the fast path's time for the rest plus the naive-only work "
            "(re-render, re-tokenize, diff) fitted per request as a + b·prompt_tokens."
        )
    notes.append(NAIVE_METHOD + ".")
    # A narrow terminal keeps the strategy, its time and speed and the naive/fast ratio.
    hide = ("naive measured", "naive/fast measured", "naive (s)")
    return Group(
        Fitted(per, hide=hide, fold=STRATEGY),
        Fitted(ratios, wrap={"measure": 12, "detail": 20}),
        *[Text(x, style="dim") for x in notes],
    )
