"""Calibrate the tiktoken approximation of a private tokenizer (Claude, Gemini) on billed usage.

`pricing/tokenizers.json` scales tiktoken's count by a `factor` per model family whose tokenizer
is not public. This module measures that factor from logs that carry the provider's usage, using
only what the log itself holds:

- a **pair** is two consecutive requests of one thread, same model, both with usage, where the
  later prompt is the earlier one plus the items the log appended in between (the response, the
  tool results, a user message). Its billed growth `delta = prompt(n+1) - prompt(n)` (for Claude:
  input + cache read + cache writes, additive) is set against the tiktoken count of those items;
- pairs where the growth is not all logged text are left out, each for a named reason: a
  compaction, harness-injected or reconstructed text, a thinking block (its text, or its size as
  the provider counts it, is not logged), thinking a model strips at a new user turn, a model
  switch, a prompt that did not grow;
- the documented framing (`message_overhead` per message, `tool_call_overhead` per tool call) is
  subtracted, and the factor is the ratio of sums over the pairs kept after trimming outliers
  (per-pair ratios further than `trim_mads` robust deviations from their median: mostly context
  the harness injected without logging it, or logged text it did not send), with a seeded
  bootstrap 95% interval. This is the factor that, with the table's framing, reproduces the
  billed growth in total;
- the framing is also fitted instead of assumed: `delta = f*tokens + a*messages + b*tool_calls`
  by least squares through the origin, weighted by 1/tokens (a count's error grows with its
  size), `b` only when the pairs vary enough in shape to tell it from `a`. On exact tokenizers
  (OpenAI) `f` comes out at 1 and `a` at the documented 3 tokens per message: a check of the
  method. The fit is reported next to the factor; the table's framing is left as it is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from replay._errors import ReplayError, shown_path
from replay.log import (
    AssistantMessage,
    Compaction,
    RequestMarker,
    Session,
    ThreadStart,
    ToolResult,
    UserMessage,
)
from replay.tokens._counter import (
    TokenCounter,
    family_for,
    family_named,
    row_problem,
    tokenizer_rows,
)

# Reasons a pair is left out (keys of `CalibrationPairs.excluded`).
NO_USAGE = "no usage on one of the two requests"
MODEL_SWITCH = "model switch"
COMPACTION = "compaction"
INJECTED = "injected or reconstructed context"
THINKING = "thinking block (size not in the log)"
STRIPPED = "thinking stripped at a new user turn"
NO_RESPONSE = "response not logged"
NOT_GROWN = "prompt did not grow"
NOTHING = "nothing appended"
COPIED = "request copied from a parent log given too"

MIN_TOKENS = 1
"""A pair must append at least this many tiktoken tokens (else framing is all it measures)."""


@dataclass(frozen=True)
class CalibrationPair:
    """Two consecutive requests of one thread whose prompt grew only by logged items."""

    log: str
    """Label of the log (file name) the pair comes from."""
    thread: str
    request_id: str
    """Id of the later request of the pair."""
    model: str
    family: str
    """Tokenizer family of the model (`pricing/tokenizers.json`)."""
    delta: int
    """Billed prompt growth: prompt tokens of the later request minus those of the earlier one."""
    tokens: int
    """tiktoken count (factor 1) of the appended items' text."""
    messages: int
    """Messages the appended items open (consecutive tool results share one message)."""
    tool_calls: int
    """Tool calls among the appended items."""
    framing: int
    """Documented framing of those messages and calls (the family's overheads)."""

    @property
    def ratio(self) -> float:
        """Provider tokens per tiktoken token for this pair, documented framing removed."""
        return (self.delta - self.framing) / self.tokens


@dataclass
class CalibrationPairs:
    """The pairs a set of logs yields, and how many candidates were left out and why."""

    pairs: list[CalibrationPair] = field(default_factory=list)
    excluded: Counter = field(default_factory=Counter)
    """Reason → candidate pairs left out for it (per family: `excluded_by_family`)."""
    excluded_by_family: dict[str, Counter] = field(default_factory=dict)
    models: dict[str, set[str]] = field(default_factory=dict)
    """Family → model ids seen in requests with usage."""
    logs: dict[str, set[str]] = field(default_factory=dict)
    """Family → labels of the logs that gave it at least one pair."""

    def exclude(self, family: str, reason: str) -> None:
        self.excluded[reason] += 1
        self.excluded_by_family.setdefault(family, Counter())[reason] += 1

    def extend(self, other: CalibrationPairs) -> None:
        self.pairs.extend(other.pairs)
        self.excluded.update(other.excluded)
        for fam, counts in other.excluded_by_family.items():
            self.excluded_by_family.setdefault(fam, Counter()).update(counts)
        for target, source in ((self.models, other.models), (self.logs, other.logs)):
            for fam, names in source.items():
                target.setdefault(fam, set()).update(names)


@dataclass
class _Gap:
    """What a thread appended since its last request."""

    marker: RequestMarker
    model: str
    events: list[Any] = field(default_factory=list)
    compaction: bool = False


class _Thinking:
    """Whether a model drops earlier thinking at a new user turn (`strips_thinking`), from the
    cache rules in force at the request's date."""

    def __init__(self) -> None:
        from replay.cache import CacheRouter  # lazily: the cache package imports this one's
        from replay.cache._rules import utc_date

        self._router = CacheRouter()
        self._day = utc_date  # the rule book picks its rows by the UTC date
        self._memo: dict[tuple[str, str, Any], bool] = {}

    def strips(self, provider: str, model: str, ts: Any) -> bool:
        key = (provider, model, self._day(ts))
        hit = self._memo.get(key)
        if hit is None:
            try:
                route = self._router.route(provider, model)
                book = self._router.book(route, route.variant)
                hit = bool(book.get("strips_thinking", route.rules_model, ts, False))
            except ReplayError:  # a provider with no cache rules keeps what it is sent
                hit = False
            self._memo[key] = hit
        return hit


def _reconstructed(event: Any) -> bool:
    extra = event.model_extra or {}
    return bool(extra.get("estimated_text") or extra.get("estimated"))


def calibration_pairs(
    session: Session, label: str | None = None, *, copied_elsewhere: bool = False
) -> CalibrationPairs:
    """Every usable pair of consecutive requests in `session` (see the module docstring).
    `copied_elsewhere`: `session` is a fork whose parent is calibrated too; a pair ending at a
    request the fork copied from it (`copied_from_parent`) is the parent's, left out here."""
    header = session.header
    label = label or (Path(session.path).name if session.path else header.session_id or "log")
    out = CalibrationPairs()
    counters: dict[str, TokenCounter] = {}
    thinking = _Thinking()
    gaps: dict[str, _Gap] = {}
    ran = {id(marker): (provider, model) for marker, provider, model in session.requests_ran()}
    had_thinking: set[str] = set()
    for event in session.events:
        if isinstance(event, ThreadStart):
            continue
        gap = gaps.get(event.thread)
        if isinstance(event, RequestMarker):
            provider, model = ran[id(event)]
            family = family_for(model).family
            if event.usage is not None and event.usage.prompt_tokens > 0:
                out.models.setdefault(family, set()).add(model)
            if gap is not None:
                if family not in counters:  # raw tiktoken counts: the factor is what is measured
                    counters[family] = TokenCounter(model, factor=1.0)
                counter = counters[family]
                strips = thinking.strips(provider, model, event.ts)
                if copied_elsewhere and getattr(event, "copied_from_parent", False):
                    out.exclude(family, COPIED)
                    pair = None
                else:
                    pair = _pair(gap, event, model, counter,
                                 strips and event.thread in had_thinking, label, out)
                if pair is not None:
                    out.pairs.append(pair)
                    out.logs.setdefault(family, set()).add(label)
            gaps[event.thread] = _Gap(event, model)
        elif gap is not None:
            if isinstance(event, Compaction):
                gap.compaction = True
            else:
                gap.events.append(event)
        if isinstance(event, AssistantMessage) and event.in_context and any(
            b.type == "thinking" for b in event.blocks
        ):
            had_thinking.add(event.thread)
    return out


def _pair(gap: _Gap, marker: RequestMarker, model: str, counter: TokenCounter,
          may_strip: bool, label: str, out: CalibrationPairs) -> CalibrationPair | None:
    """The pair (gap's request, `marker`), or None after counting why it is left out."""
    family = counter.family
    before, after = gap.marker.usage, marker.usage
    reason = None
    if before is None or after is None or before.prompt_tokens <= 0 or after.prompt_tokens <= 0:
        reason = NO_USAGE
    elif gap.model != model:
        reason = MODEL_SWITCH
    elif gap.compaction:
        reason = COMPACTION
    if reason is not None:
        out.exclude(family.family, reason)
        return None
    tokens = messages = calls = 0
    responded = previous_result = False
    for e in gap.events:
        if isinstance(e, UserMessage):
            if e.injected or _reconstructed(e):
                reason = INJECTED
                break
            if may_strip:
                reason = STRIPPED
                break
            tokens += len(counter.raw_tokens(e.text))
            messages += 1
        elif isinstance(e, AssistantMessage):
            responded = True
            if not e.in_context:
                continue  # billed, never sent back: not part of the next prompt
            if any(b.type == "thinking" for b in e.blocks):
                reason = THINKING
                break
            tokens += sum(len(counter.raw_tokens(_block_text(b))) for b in e.blocks)
            calls += sum(b.type == "tool_call" for b in e.blocks)
            messages += 1
        elif isinstance(e, ToolResult):
            if _reconstructed(e):
                reason = INJECTED
                break
            tokens += len(counter.raw_tokens(e.output))
            messages += not previous_result  # the renderer merges a run of results
        previous_result = isinstance(e, ToolResult)
    if reason is None and not responded:
        reason = NO_RESPONSE
    delta = after.prompt_tokens - before.prompt_tokens
    if reason is None and tokens < MIN_TOKENS:
        reason = NOTHING
    if reason is None and delta <= 0:
        reason = NOT_GROWN
    if reason is not None:
        out.exclude(family.family, reason)
        return None
    return CalibrationPair(
        log=label,
        thread=marker.thread,
        request_id=marker.request_id,
        model=model,
        family=family.family,
        delta=delta,
        tokens=tokens,
        messages=messages,
        tool_calls=calls,
        framing=messages * family.message_overhead + calls * family.tool_call_overhead,
    )


def _block_text(block: Any) -> str:
    """The text the engine counts for an assistant block (tool calls: name + JSON arguments)."""
    from replay.strategies._view import Block  # lazily: strategies import the renderer

    if block.type == "tool_call":
        return Block("tool_call", name=block.name, arguments=block.arguments).rendered()
    return block.text


@dataclass(frozen=True)
class Estimate:
    """A fitted value with its bootstrap 95% interval."""

    value: float
    low: float
    high: float

    def text(self, digits: int) -> str:
        return f"{self.value:.{digits}f} ({_span(self.low, self.high, digits)})"


def _span(low: float, high: float, digits: int) -> str:
    """`low-high`, or `low to high` when low is negative ("-27.4-55.4" reads as two
    negatives)."""
    sep = " to " if low < 0 else "-"
    return f"{low:.{digits}f}{sep}{high:.{digits}f}"


@dataclass(frozen=True)
class FramingFit:
    """Framing fitted instead of assumed: delta = f·tokens + a·messages (+ b·tool calls), by least
    squares weighted by 1/tokens (a count's error grows with its size), through the origin."""

    factor: Estimate
    """`f`: provider tokens per tiktoken token of content."""
    per_message: Estimate
    """`a`: framing tokens per appended message (per tool round too, when `per_tool_call` is
    None: with every pair one response and one result, the two cannot be told apart)."""
    per_tool_call: Estimate | None
    """`b`: framing tokens per tool call (its `tool_use` block and its result's wrapper)."""


@dataclass(frozen=True)
class LogFactor:
    """The factor measured on one log alone (how much logs disagree)."""

    log: str
    pairs: int
    factor: float


@dataclass(frozen=True)
class FamilyCalibration:
    """The measured factor of one tokenizer family."""

    family: str
    models: tuple[str, ...]
    """Model ids of the family seen with usage in the logs."""
    candidates: int
    """Consecutive request pairs of the family, before any exclusion."""
    excluded: dict[str, int]
    """Reason → pairs left out before fitting."""
    pairs: int
    """Pairs used (after trimming)."""
    trimmed: int
    """Pairs dropped as outliers of the per-pair ratio."""
    documented: Any
    """The family's row in the table in force (`TokenizerFamily`): factor and framing."""
    factor: Estimate | None
    """Σ(delta − documented framing) / Σ tokens over the pairs used, with its bootstrap
    interval (resampling pairs); None without pairs."""
    quartiles: tuple[float, float, float] | None
    """25th, 50th and 75th percentiles of the per-pair ratios (their spread)."""
    by_log: tuple[LogFactor, ...] = ()
    framing: FramingFit | None = None

    @property
    def logs(self) -> tuple[str, ...]:
        return tuple(f.log for f in self.by_log)

    def tokenizer_row(self, date: str, measured_on: str | None = None) -> dict[str, Any]:
        """This family's fields for `pricing/tokenizers.json`: `factor`, `measured`,
        `estimated` (the other fields of the row stay as they are)."""
        on = measured_on or logs_label(self)
        if self.factor is None:
            return {
                "family": self.family,
                "factor": self.documented.factor,
                "measured": f"not measured ({date}): no usable request pair in the logs given; "
                + "documented value kept",
                "estimated": True,
            }
        return {
            "family": self.family,
            "factor": round(self.factor.value, 3),
            "measured": self.measured_text(date, on),
            "estimated": True,
        }

    def measured_text(self, date: str, measured_on: str) -> str:
        """How, on what and how precisely the factor was measured (one paragraph)."""
        assert self.factor is not None and self.quartiles is not None
        q1, q2, q3 = self.quartiles
        doc = self.documented
        text = (
            f"replay calibrate, {date}, on {measured_on} (models {', '.join(self.models)}): "
            f"billed prompt growth between consecutive requests of a thread against the tiktoken "
            f"count of the logged items appended between them, minus the documented framing "
            f"({doc.message_overhead}/message, {doc.tool_call_overhead}/tool call); pairs with "
            f"compactions, injected or reconstructed context, thinking, model switches left out. "
            f"Ratio of sums over {self.pairs} pairs ({self.trimmed} outliers trimmed): "
            f"{self.factor.value:.3f}, bootstrap 95% CI "
            f"{_span(self.factor.low, self.factor.high, 3)}; per-pair ratio quartiles "
            f"{q1:.2f}/{q2:.2f}/{q3:.2f}"
        )
        if len(self.by_log) > 1:
            low = min(f.factor for f in self.by_log)
            high = max(f.factor for f in self.by_log)
            text += f"; per-log factors {_span(low, high, 2)}"
        if self.framing is not None:
            fr = self.framing
            text += (
                f". Framing fitted instead (weighted least squares): factor "
                f"{fr.factor.text(3)}, {fr.per_message.text(1)} tokens per message"
            )
            if fr.per_tool_call is not None:
                text += f", {fr.per_tool_call.text(1)} per tool call"
        return text


TRIM_FLOOR = 0.01
"""Smallest robust deviation the trimming uses, as a share of the median ratio: when nearly
every pair agrees (integer billing, no noise), a pair 0.2% off is rounding, not an outlier."""


def _trim(ratios: np.ndarray, trim_mads: float) -> np.ndarray:
    """Mask of the ratios within `trim_mads` robust deviations (1.4826·MAD) of their median."""
    median = float(np.median(ratios))
    scale = max(1.4826 * float(np.median(np.abs(ratios - median))), TRIM_FLOOR * abs(median))
    if scale == 0:
        return np.ones(len(ratios), dtype=bool)
    return np.abs(ratios - median) <= trim_mads * scale


def _wls(delta: np.ndarray, design: np.ndarray, tokens: np.ndarray) -> np.ndarray | None:
    """Least squares through the origin weighted by 1/tokens; None when not identifiable."""
    if len(delta) <= design.shape[1] or np.linalg.matrix_rank(design) < design.shape[1]:
        return None
    w = 1 / np.sqrt(tokens)
    coef, *_ = np.linalg.lstsq(design * w[:, None], delta * w, rcond=None)
    return coef


def _interval(point: float, draws: np.ndarray) -> Estimate:
    return Estimate(point, float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5)))


MIN_FRAMING_PAIRS = 10
"""Pairs needed to fit the framing; to tell framing per message from framing per tool call, as
many pairs must also differ from the commonest (messages, tool calls) shape (e.g. a user turn,
or a response with two calls, among one-call tool rounds)."""


def _framing_fit(delta: np.ndarray, tokens: np.ndarray, messages: np.ndarray,
                 calls: np.ndarray, draws: np.ndarray) -> FramingFit | None:
    """Framing per message and per tool call when the pairs can tell them apart, else per
    message only, else None (see `FramingFit`)."""
    if len(delta) < MIN_FRAMING_PAIRS:
        return None
    shapes = Counter(zip(messages.tolist(), calls.tolist(), strict=True))
    varied = len(delta) - shapes.most_common(1)[0][1] >= MIN_FRAMING_PAIRS
    for columns in ((tokens, messages, calls), (tokens, messages))[0 if varied else 1:]:
        design = np.column_stack(columns)
        point = _wls(delta, design, tokens)
        if point is None:
            continue
        fits = [_wls(delta[d], design[d], tokens[d]) for d in draws]
        boot = np.array([f for f in fits if f is not None])
        if len(boot) < len(draws) // 2:  # identifiable only thanks to a few pairs: not reported
            continue
        est = [_interval(float(point[i]), boot[:, i]) for i in range(len(point))]
        return FramingFit(est[0], est[1], est[2] if len(est) > 2 else None)
    return None


def fit_family(
    family: str,
    pairs: Sequence[CalibrationPair],
    *,
    excluded: dict[str, int] | None = None,
    models: Iterable[str] = (),
    trim_mads: float = 4.0,
    resamples: int = 1000,
    seed: int = 0,
) -> FamilyCalibration:
    """The factor of one family from its pairs (see the module docstring for the method)."""
    excluded = dict(sorted((excluded or {}).items()))
    base: dict[str, Any] = dict(
        family=family,
        models=tuple(sorted(set(models) | {p.model for p in pairs})),
        candidates=len(pairs) + sum(excluded.values()),
        excluded=excluded,
        documented=family_named(family),
    )
    if not pairs:
        return FamilyCalibration(**base, pairs=0, trimmed=0, factor=None, quartiles=None)
    delta = np.array([p.delta for p in pairs], dtype=float)
    tokens = np.array([p.tokens for p in pairs], dtype=float)
    framing = np.array([p.framing for p in pairs], dtype=float)
    keep = _trim((delta - framing) / tokens, trim_mads)
    kept = [p for p, k in zip(pairs, keep.tolist(), strict=True) if k]
    delta, tokens, framing = delta[keep], tokens[keep], framing[keep]
    messages = np.array([p.messages for p in kept], dtype=float)
    calls = np.array([p.tool_calls for p in kept], dtype=float)
    content = delta - framing
    ratios = content / tokens
    draws = np.random.default_rng(seed).integers(0, len(kept), size=(resamples, len(kept)))
    boot = content[draws].sum(axis=1) / tokens[draws].sum(axis=1)
    by_log = []
    for log in sorted({p.log for p in kept}):
        mask = np.array([p.log == log for p in kept])
        by_log.append(LogFactor(log, int(mask.sum()),
                                float(content[mask].sum() / tokens[mask].sum())))
    return FamilyCalibration(
        **base,
        pairs=len(kept),
        trimmed=len(pairs) - len(kept),
        factor=_interval(float(content.sum() / tokens.sum()), boot),
        quartiles=tuple(float(q) for q in np.percentile(ratios, [25, 50, 75])),
        by_log=tuple(by_log),
        framing=_framing_fit(delta, tokens, messages, calls, draws),
    )


def log_labels(sessions: Sequence[Session]) -> list[str]:
    """A label per session: its file name, or, where another session has that name (Entire
    stores every session as `<id>/<n>/full.jsonl`), the end of its path that tells it apart.
    Each log keeps its own `by_log` factor; one label for two logs would merge them."""
    parts = [Path(s.path).parts if s.path else () for s in sessions]
    fallback = [s.header.session_id or "log" for s in sessions]
    depth = [1] * len(sessions)

    def label(n: int) -> str:
        return "/".join(parts[n][-depth[n]:]) if parts[n] else fallback[n]

    while True:
        seen: dict[str, list[int]] = {}
        for n in range(len(sessions)):
            seen.setdefault(label(n), []).append(n)
        longer = [n for same in seen.values() if len(same) > 1 for n in same
                  if depth[n] < len(parts[n])]
        if not longer:
            break
        for n in longer:
            depth[n] += 1
    return [label(n) for n in range(len(sessions))]


def calibrate(
    sessions: Iterable[Session],
    *,
    trim_mads: float = 4.0,
    resamples: int = 1000,
    seed: int = 0,
    forks: Collection[str] | None = None,
) -> list[FamilyCalibration]:
    """One calibration per tokenizer family seen in `sessions`, in family order. Families whose
    tokenizer is public come out too: a factor near 1 for them checks the method. `forks`: the
    `Session.path` of the forked sessions whose parent is among `sessions`, whose pairs ending
    at a request copied from it are the parent's (`copied_elsewhere`; by default found with
    `replay.adapters.forks_among`, as `replay batch` finds them)."""
    from replay.adapters._once import forks_among

    sessions = list(sessions)
    if forks is None:
        forks = forks_among(sessions)
    found = CalibrationPairs()
    # In the order of their labels: the seeded bootstrap draws pairs by position, and the same
    # logs must give the same interval in any order (a shell's glob order follows the locale).
    labelled = sorted(zip(log_labels(sessions), sessions, strict=True), key=lambda x: x[0])
    for label, session in labelled:
        found.extend(calibration_pairs(session, label, copied_elsewhere=session.path in forks))
    families = sorted(set(found.models) | {p.family for p in found.pairs})
    return [
        fit_family(
            fam,
            [p for p in found.pairs if p.family == fam],
            excluded=dict(found.excluded_by_family.get(fam, {})),
            models=found.models.get(fam, ()),
            trim_mads=trim_mads,
            resamples=resamples,
            seed=seed,
        )
        for fam in families
    ]


def _estimate_dict(e: Estimate | None) -> dict[str, float] | None:
    return None if e is None else {"value": e.value, "low": e.low, "high": e.high}


def calibration_dict(c: FamilyCalibration) -> dict[str, Any]:
    """One family's calibration as plain JSON-ready data."""
    fr = c.framing
    return {
        "family": c.family,
        "models": list(c.models),
        "candidates": c.candidates,
        "excluded": c.excluded,
        "pairs": c.pairs,
        "trimmed": c.trimmed,
        "documented": {
            "factor": c.documented.factor,
            "message_overhead": c.documented.message_overhead,
            "tool_call_overhead": c.documented.tool_call_overhead,
        },
        "factor": _estimate_dict(c.factor),
        "ratio_quartiles": list(c.quartiles) if c.quartiles else None,
        "by_log": [{"log": f.log, "pairs": f.pairs, "factor": f.factor} for f in c.by_log],
        "framing_fit": None if fr is None else {
            "factor": _estimate_dict(fr.factor),
            "per_message": _estimate_dict(fr.per_message),
            "per_tool_call": _estimate_dict(fr.per_tool_call),
        },
    }


def logs_label(calibration: FamilyCalibration, limit: int = 6) -> str:
    """The logs a family was measured on, by name (or their count, when there are many)."""
    logs = calibration.logs
    if not logs:
        return "the logs given"
    return ", ".join(logs) if len(logs) <= limit else f"{len(logs)} logs"


def tokenizer_file(calibrations: Iterable[FamilyCalibration], date: str) -> dict[str, Any]:
    """A tokenizer file (schema of `pricing/tokenizers.json`) holding the table's row of each
    measured family with its measured `factor` and `measured` text, for `REPLAY_TOKENIZERS` or
    `use_tokenizers` (its rows replace the built-in rows of the same family). Families without a
    usable pair, and those whose tokenizer is public (their factor is 1 by definition; what they
    measure is the method's bias), are left out."""
    rows = []
    table = {}
    for row in tokenizer_rows():
        table.setdefault(row["family"], row)
    for c in calibrations:
        if c.factor is None or c.family not in table or not c.documented.estimated:
            continue
        row = dict(table[c.family])
        row.update(c.tokenizer_row(date, logs_label(c)))
        # The built-in row's own measure would contradict the new one: its source keeps only
        # what the tokenizer is, and its measured factor becomes this one.
        why = str(row.get("source", "")).split("; ")[0]
        row["source"] = (f"{why}; " if why else "") + (
            f"{row['encoding']} x {row['factor']} measured by replay calibrate on {date} (see "
            "`measured`)"
        )
        if "measured_factor" in row:
            row["measured_factor"] = row["factor"]
        rows.append(row)
    return {
        "description": "Tokenizer calibration measured by `replay calibrate` on recorded usage. "
        "Named by REPLAY_TOKENIZERS, its rows replace replay's built-in rows of the same family.",
        "families": rows,
    }


def _earlier_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of the tokenizer file at `path`, if one loads there: a calibration of other
    logs (Gemini's, after Claude's) updates the file, it does not drop what was measured before.
    Anything else there (no file, not a tokenizer file) is replaced, as before. A tokenizer file
    with a row `REPLAY_TOKENIZERS` refuses is refused, the file left as it is: replacing it
    dropped every row of the families not measured now without a word (a hand-written row
    lacking a field, say)."""
    from replay.tokens._counter import NotATokenizerFile, checked_tokenizer_rows

    try:
        return checked_tokenizer_rows(path)
    except NotATokenizerFile:
        return []
    except ReplayError as err:
        raise ReplayError(
            f"{err}: not written over (its rows of the families not measured now would be "
            "lost); fix that row, or write the measure to another file"
        ) from None


def write_tokenizer_file(
    calibrations: Iterable[FamilyCalibration], date: str, path: str | Path
) -> dict[str, Any]:
    """Write `tokenizer_file` to `path` (atomically), with the rows an earlier tokenizer file
    there held for the families not measured now, and return it; refuse, writing nothing, a
    row `REPLAY_TOKENIZERS` would refuse (a factor measured outside 0.1-10 is no tokenizer's:
    the logs' usage is not what the method reads, and clamping it would write a factor nobody
    measured)."""
    import json

    from replay._atomic import write_atomic

    document = tokenizer_file(calibrations, date)
    earlier = _earlier_rows(path)  # (each already checked as it was read)
    for n, row in enumerate(document["families"]):
        problem = row_problem(row, n)
        if problem:
            raise ReplayError(
                f"{shown_path(path)}: not written: {problem} (family {row.get('family')!r} as "
                "measured on these logs; REPLAY_TOKENIZERS would refuse the file)"
            )
    measured = {row["family"] for row in document["families"]}
    document["families"] += [row for row in earlier if row["family"] not in measured]
    write_atomic(path, json.dumps(document, indent=2) + "\n")
    return document
